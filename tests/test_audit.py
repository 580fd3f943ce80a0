"""The audit (DESIGN §7.4): a minimal bad file per check, what is fine, and that it never writes."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest
from support import write_memory

from sage_mem import FolderError, MemoryStore
from sage_mem.checks.audit import CHECKS, AuditReport, Finding, audit

HEAD = "---\ndescription: a memory\ncategory: user\n---\n\n"  # the body starts on line 6
TOKEN = "gh" + "p_" + "Zx8Kq2Lm9Vb4Nw7Tr1Yp5Hs3Jd6Fg0Ac2Ev4Q"[:36]  # assembled: not a literal token
HAND_INDEX = "# Memory index\n\n## user\n"
SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def fm(*lines: str, body: str = "") -> str:
    """A memory file with these frontmatter lines (line 2 onwards) and body."""
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


def run_audit(folder: Path) -> AuditReport:
    with MemoryStore(folder) as store:
        return audit(store)


def found(report: AuditReport) -> list[tuple[str, str, int | None]]:
    return [(f.check, f.path, f.line) for f in report.findings]


def populate(folder: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        if name == "MEMORY.md":
            (folder / name).write_text(str(text), encoding="utf-8")
        else:
            write_memory(folder, name, text)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({"user_a": b"---\ndescription: a\ncategory: user\n---\n\nbad \xff byte\n"},
                     [("unreadable", "user_a.md", 6)], id="unreadable-encoding"),
        pytest.param({"user_a": b"---\ndescription: a\n\x00\n"},
                     [("unreadable", "user_a.md", 3)], id="unreadable-binary"),
        pytest.param({"user_a": HEAD + "x" * (512 * 1024)},
                     [("unreadable", "user_a.md", None)], id="unreadable-over-512-kb"),
        pytest.param({"user_a": "---\ndescription: a: b\ncategory: user\n---\n"},
                     [("invalid-yaml", "user_a.md", 2)], id="invalid-yaml"),
        pytest.param({"user_a": "---\ndescription: [unclosed\ncategory: user\n---\n"},
                     [("invalid-yaml", "user_a.md", 3)], id="invalid-yaml-flow"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: user\n\nBody.\n"},
                     [("unclosed-frontmatter", "user_a.md", 1)], id="unclosed-frontmatter"),
        pytest.param({"user_a": "---\njust a sentence\n---\n\nBody.\n"},
                     [("frontmatter-not-mapping", "user_a.md", 2)], id="frontmatter-not-mapping"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: user\ndescription: b\n---\n"},
                     [("duplicate-key", "user_a.md", 4)], id="duplicate-key"),
        pytest.param({"user_a": "---\ndescription: use C# # not java\ncategory: user\n---\n"},
                     [("yaml-comment-cut", "user_a.md", 2)], id="comment-cut-csharp"),
        pytest.param({"user_a": "---\ncategory: user\ndescription: issue #12 is fixed\n---\n"},
                     [("yaml-comment-cut", "user_a.md", 3)], id="comment-cut-issue-number"),
        pytest.param({"user_a": "---\ndescription: 我们用C# # 不用java\ncategory: user\n---\n"},
                     [("yaml-comment-cut", "user_a.md", 2)], id="comment-cut-chinese"),
        pytest.param({"user_a": "---\ndescription: #12 is fixed\ncategory: user\n---\n"},
                     [("yaml-comment-cut", "user_a.md", 2)], id="comment-cut-whole-value"),
        pytest.param({"user_a": HEAD + "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> main\n"},
                     [("conflict-markers", "user_a.md", 6)], id="conflict-markers"),
        pytest.param({"user_a": fm("<<<<<<< HEAD", "description: a", "=======",
                                   "description: b", ">>>>>>> main", "category: user")},
                     [("conflict-markers", "user_a.md", 2), ("invalid-yaml", "user_a.md", 3)],
                     id="conflict-markers-in-frontmatter"),
        pytest.param({"user_a": HEAD + "Deploys use\n\ntoken: " + TOKEN + "\n"},
                     [("secret", "user_a.md", 8)], id="secret"),
        pytest.param({"user_a": HEAD + "数据库密码：Tr0ub4dor&3\n"},
                     [("secret", "user_a.md", 6)], id="secret-chinese-password"),
        pytest.param({"user_a": "Just a note about the cat.\n"},
                     [("no-frontmatter", "user_a.md", 1)], id="no-frontmatter"),
        pytest.param({"user_a": "---\ncategory: user\n---\n"},
                     [("missing-description", "user_a.md", 1)], id="missing-description"),
        pytest.param({"user_a": "---\ndescription:\ncategory: user\n---\n"},
                     [("missing-description", "user_a.md", 2)], id="empty-description"),
        pytest.param({"user_a": "---\ndescription: a\n---\n"},
                     [("missing-category", "user_a.md", 1)], id="missing-category"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: hobby\n---\n"},
                     [("unknown-category", "user_a.md", 3)], id="unknown-category"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: project\n---\n"},
                     [("category-prefix", "user_a.md", 3)], id="category-prefix-other-category"),
        pytest.param({"notes": "---\ndescription: a\ncategory: user\n---\n"},
                     [("category-prefix", "notes.md", 3)], id="category-prefix-missing"),
        pytest.param({"project/plan": "---\ndescription: a\ncategory: user\n---\n"},
                     [("category-prefix", "project/plan.md", 3)], id="category-prefix-folder"),
        pytest.param({"user_a": "---\nname: a\ndescription: a\ntype: feedback\n---\n"},
                     [("category-prefix", "user_a.md", 4)], id="category-prefix-claude-code-type"),
        pytest.param({"user_a": fm("description: a", "category: user",
                                   "tags: [" + ", ".join(f"t{n}" for n in range(21)) + "]")},
                     [("tags-limit", "user_a.md", 4)], id="tags-over-20"),
        pytest.param({"user_a": fm("description: a", "category: user", f"tags: [{'长' * 41}]")},
                     [("tags-limit", "user_a.md", 4)], id="tag-over-40-characters"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: user\ntrust: high\n---\n"},
                     [("invalid-value", "user_a.md", 4)], id="trust-not-a-number"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: user\ntrust: 7\n---\n"},
                     [("invalid-value", "user_a.md", 4)], id="trust-out-of-range"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: user\ntags: 5\n---\n"},
                     [("invalid-value", "user_a.md", 4)], id="tags-not-a-list"),
        pytest.param({"user_a": fm("description: a", "category: user", "baselinePriority: top")},
                     [("invalid-value", "user_a.md", 4)], id="baseline-priority-not-an-integer"),
        pytest.param({"user_a": "\ufeff" + HEAD},
                     [("bom", "user_a.md", 1)], id="bom"),
        pytest.param({"user_a": HEAD.replace("\n", "\r\n")},
                     [("crlf", "user_a.md", 1)], id="crlf"),
        pytest.param({"user_a": HEAD + "First line.\r\nSecond.\n"},
                     [("crlf", "user_a.md", 6)], id="crlf-mixed"),
        pytest.param({"user_a": HEAD + "See [[user_missing]].\n"},
                     [("broken-link", "user_a.md", 6)], id="broken-wiki-link"),
        pytest.param({"user_a": HEAD + "text\n\nSee [the other](user_missing.md).\n"},
                     [("broken-link", "user_a.md", 8)], id="broken-markdown-link"),
        pytest.param({"user_a": HEAD + "参见 [[用户_不存在]]。\n"},
                     [("broken-link", "user_a.md", 6)], id="broken-link-chinese"),
        pytest.param({"user_a": HEAD + "```\ncode\n``` not a close\n```\nSee [[user_missing]].\n"},
                     [("broken-link", "user_a.md", 10)], id="link-after-a-fence-closed-later"),
        pytest.param({"user_a": HEAD + "A paragraph\n    continued: [[user_missing]]\n"},
                     [("broken-link", "user_a.md", 7)], id="link-in-an-indented-continuation"),
        pytest.param({"user_a": HEAD + "See [the other](user_missing.md 'why').\n"},
                     [("broken-link", "user_a.md", 6)], id="broken-link-with-a-title"),
        pytest.param({"user_a": HEAD + "See [[auth_flow]].\n",
                      "project/api/auth_flow": fm("description: a", "category: project"),
                      "project/web/auth_flow": fm("description: w", "category: project")},
                     [("broken-link", "user_a.md", 6)], id="wiki-link-to-a-shared-name"),
        pytest.param({"user_a": HEAD + "Replaces [[user_old]].\n",
                      "archive/user_old": HEAD},
                     [("broken-link", "user_a.md", 6)], id="link-to-archived-memory"),
        pytest.param({"user_a": HEAD, "MEMORY.md": HAND_INDEX + "- [a](user_a.md) — a\n"
                                                   "- [gone](user_gone.md) — gone\n"},
                     [("dangling-index-entry", "MEMORY.md", 5)], id="dangling-index-entry"),
        pytest.param({"user_a": HEAD, "user_b": HEAD,
                      "MEMORY.md": HAND_INDEX + "- [a](user_a.md) — a\n"},
                     [("missing-from-index", "user_b.md", None)], id="missing-from-index"),
        pytest.param({"MEMORY.md": HAND_INDEX + "- note\n" * 200},
                     [("index-too-large", "MEMORY.md", None)], id="index-too-large"),
        pytest.param({"MEMORY.md": "<<<<<<< HEAD\n# Memory\n=======\n# Index\n>>>>>>> b\n"},
                     [("conflict-markers", "MEMORY.md", 1)], id="index-conflict-markers"),
    ],
)
def test_check_reports_a_minimal_bad_file(
    empty_dir: Path, files: dict[str, str | bytes], expected: list[tuple[str, str, int | None]]
) -> None:
    populate(empty_dir, files)
    report = run_audit(empty_dir)
    assert found(report) == expected
    assert not report.ok
    for finding in report.findings:
        assert finding.check in CHECKS
        assert finding.severity == CHECKS[finding.check][0]
        assert finding.message


@pytest.mark.parametrize(
    "files",
    [
        pytest.param({"user_a": HEAD.replace("category: user", "category: user  # who I am")},
                     id="yaml-comment-after-two-spaces"),
        pytest.param({"user_a": '---\ndescription: "use C# # not java"\ncategory: user\n---\n'},
                     id="quoted-value-with-hash"),
        pytest.param({"user_a": "---\ndescription: issue#12 and C#\ncategory: user\n---\n"},
                     id="hash-without-space"),
        pytest.param({"user_a": fm("description: a", "category: user", "trust: 0.7 # sure")},
                     id="comment-after-number"),
        pytest.param({"user_a": HEAD + "Title\n=======\n\nText.\n"}, id="setext-heading"),
        pytest.param({"user_a": HEAD + "[docs](https://example.com/guide.md), <http://x.md>\n"},
                     id="web-links"),
        pytest.param({"user_a": HEAD + "Use `[[id]]`.\n\n```\n[[user_gone]]\n[x](y.md)\n```\n"},
                     id="links-inside-code"),
        pytest.param({"user_a": HEAD + "Setup:\n\n    [[user_gone]]\n\t[x](y.md)\n"},
                     id="links-inside-indented-code"),
        pytest.param({"user_a": HEAD + "Use <code>[[user_gone]]</code>.\n\n<pre>\n[x](y.md)\n\n"
                                       "[[user_gone]]\n</pre>\n"},
                     id="links-inside-html-code-and-pre"),
        pytest.param({"user_a": HEAD + "~~~~\n~~~\n[[user_gone]]\n~~~~\nUse `` [[a]] ` `` here.\n"},
                     id="links-inside-a-long-fence-and-a-double-backtick-span"),
        pytest.param({"user_a": HEAD + "- step\n  ```\n  [[user_gone]]\n  ```\n"
                                       "> ```\n> [x](y.md)\n"},
                     id="links-inside-fences-in-a-list-and-a-quote"),
        pytest.param({"user_a": HEAD, "MEMORY": "# Memory\n\n- [a](user_a.md) — a\n\n"
                                                   "```\n- [gone](user_gone.md) — gone\n```\n"},
                     id="index-entry-inside-code"),
        pytest.param({"user_a": HEAD + "[[user_b]] [[user_b.md]] [b](user_b.md#why) [[user_b|B]]\n",
                      "user_b": HEAD}, id="links-that-resolve"),
        pytest.param({"user_a": HEAD + "See [[auth_flow]] and [flow](project/api/auth_flow.md).\n",
                      "project/api/auth_flow": fm(
                          "description: a", "category: project",
                          body="[b](b.md) [[user_a]] [up](../../user_a.md)\n",
                      ),
                      "project/api/b": fm("description: b", "category: project")},
                     id="subfolders-and-relative-links"),
        pytest.param({"user_a": HEAD + "Outside: [repo design](../docs/DESIGN.md).\n"},
                     id="link-leaving-the-folder"),
        pytest.param({"user_a": "---\nname: a\ndescription: a\ntype: user\n---\n",
                      "feedback_b": "---\ndescription: b\nmetadata:\n  type: feedback\n---\n"},
                     id="claude-code-type-keys"),
        pytest.param({"user_猫": fm("description: 猫叫芝麻", "category: user",
                                   body="见 [[user_猫]]\n")},
                     id="chinese-file-name"),
        pytest.param({"user_a": HEAD + "Never store a password here; 不要把密码写进记忆。\n"
                                       f"sha256 {SHA256}\n"
                                       "request 123e4567-e89b-12d3-a456-426614174000\n"},
                     id="prose-about-secrets-hashes-uuids"),
        pytest.param({"user_a": "---\ndescription: a\ncategory: user\nmyOwnKey: kept\n---\n"},
                     id="unknown-keys"),
        pytest.param({"archive/user_old": "no frontmatter, [[user_gone]]\r\n",
                      "autodream/run-1": "[[user_gone]] <<<<<<< x\n"}, id="archive-and-reports"),
        pytest.param({"user_a": HEAD, ".user_a.md.swp": b"\x00\xff", "user_b.md~": "junk"},
                     id="editor-junk"),
    ],
)
def test_fine_folder_audits_clean(empty_dir: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        if name.endswith((".swp", "~")):
            (empty_dir / name).write_bytes(text if isinstance(text, bytes) else text.encode())
        else:
            write_memory(empty_dir, name, text)
    report = run_audit(empty_dir)
    assert found(report) == []
    assert report.ok


def test_fresh_folder_from_the_template_audits_clean(memory_dir: Path) -> None:
    assert not (memory_dir / "MEMORY.md").exists()
    report = run_audit(memory_dir)
    assert report.ok, report.format_text()
    assert report.checked == len(list(memory_dir.glob("*.md")))


def test_template_with_its_generated_index_audits_clean(memory_dir: Path) -> None:
    with MemoryStore(memory_dir) as store:
        store.regenerate_index()
        report = audit(store)
    assert report.ok, report.format_text()
    assert report.to_dict() == {"findings": [], "count": 0, "checked": 9}


def test_nfd_file_name_matches_nfc_links_and_index(empty_dir: Path) -> None:
    nfd = unicodedata.normalize("NFD", "user_café")
    write_memory(empty_dir, nfd, fm("description: the café", "category: user"))
    write_memory(empty_dir, "user_a", HEAD + "See [[user_café]] and [it](user_café.md).\n")
    with MemoryStore(empty_dir) as store:
        store.regenerate_index()
        report = audit(store)
    assert report.ok, report.format_text()


def test_index_edited_by_hand_is_stale(memory_dir: Path) -> None:
    with MemoryStore(memory_dir) as store:
        store.regenerate_index()
    path = memory_dir / "user_cat_zh.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("喜欢晒太阳", "喜欢睡觉"), encoding="utf-8")
    report = run_audit(memory_dir)
    lines = (memory_dir / "MEMORY.md").read_text(encoding="utf-8").split("\n")
    stale_line = next(n for n, line in enumerate(lines, start=1) if "喜欢晒太阳" in line)
    assert found(report) == [("index-stale", "MEMORY.md", stale_line)]


def test_truncated_index_stays_clean_as_usage_changes_and_goes_stale_when_an_entry_changes(
    empty_dir: Path,
) -> None:
    for n in range(260):
        write_memory(empty_dir, f"user_m{n:03d}", fm(f"description: memory {n}", "category: user"))
    with MemoryStore(empty_dir) as store:
        store.regenerate_index()
        text = (empty_dir / "MEMORY.md").read_text(encoding="utf-8")
        assert "more memories not listed" in text
        store.note_used(["user_m259"] * 5)
        assert audit(store).ok, audit(store).format_text()
    lines = text.split("\n")
    listed = next(n for n, line in enumerate(lines, start=1) if "(user_m001.md)" in line)
    write_memory(empty_dir, "user_m001", fm("description: changed", "category: user"))
    assert found(run_audit(empty_dir)) == [("index-stale", "MEMORY.md", listed)]


def test_truncated_index_does_not_report_unlisted_memories_as_missing(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_a", HEAD)
    write_memory(empty_dir, "user_b", HEAD)
    (empty_dir / "MEMORY.md").write_text(
        HAND_INDEX + "- [a](user_a.md) — a\n\n…and 1 more memories not listed here.\n",
        encoding="utf-8",
    )
    assert run_audit(empty_dir).ok


def test_archived_memories_are_checked_only_for_secrets_conflicts_and_readability(
    empty_dir: Path,
) -> None:
    write_memory(empty_dir, "archive/user_old", f"no frontmatter\r\ntoken {TOKEN}\n")
    write_memory(empty_dir, "archive/user_merge", "<<<<<<< a\n=======\n>>>>>>> b\n[[gone]]\n")
    write_memory(empty_dir, "archive/user_bad", b"\xff\xfe")
    assert found(run_audit(empty_dir)) == [
        ("unreadable", "archive/user_bad.md", 1),
        ("conflict-markers", "archive/user_merge.md", 1),
        ("secret", "archive/user_old.md", 2),
    ]


def test_findings_never_show_a_secret_in_full(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_a", HEAD + f"token {TOKEN}\npassword=hunter2x\n")
    report = run_audit(empty_dir)
    assert [f.check for f in report.findings] == ["secret", "secret"]
    shown = report.format_text() + json.dumps(report.to_dict(), ensure_ascii=False)
    assert TOKEN not in shown and TOKEN[4:16] not in shown
    assert "hunter2x" not in shown
    assert "ghp_****" in shown


def test_audit_never_changes_a_byte_or_an_mtime(memory_dir: Path, tmp_path: Path) -> None:
    with MemoryStore(memory_dir) as store:
        store.regenerate_index()
        index = memory_dir / "MEMORY.md"
        index.write_text(index.read_text(encoding="utf-8") + "- [x](gone.md)\n", encoding="utf-8")
        write_memory(memory_dir, "user_crlf", HEAD.replace("\n", "\r\n"))
        write_memory(memory_dir, "user_bom", "\ufeff" + HEAD + "[[user_gone]]\n")
        write_memory(memory_dir, "user_yaml", "---\ndescription: a: b\n---\n")
        write_memory(memory_dir, "notes", "no frontmatter, password=hunter2x\n")
        write_memory(memory_dir, "archive/user_old", "<<<<<<< a\n=======\n>>>>>>> b\n")
        before = _snapshot(tmp_path)
        report = audit(store)
        assert not report.ok
        assert _snapshot(tmp_path) == before


def _snapshot(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    out: dict[str, tuple[bytes | None, int, int]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        out[str(path.relative_to(root))] = (data, st.st_mtime_ns, st.st_mode)
    return out


def test_fifo_named_like_a_memory_is_reported_without_being_opened(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_a", HEAD)
    with MemoryStore(empty_dir) as store:
        os.mkfifo(empty_dir / "user_pipe.md")
        assert found(audit(store)) == [("unreadable", "user_pipe.md", None)]


def test_symlinks_out_of_the_folder_or_to_nothing_are_unreadable(
    empty_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(f"token {TOKEN}\n", encoding="utf-8")
    (empty_dir / "user_link.md").symlink_to(outside)
    (empty_dir / "user_dead.md").symlink_to(tmp_path / "missing.md")
    report = run_audit(empty_dir)
    assert found(report) == [
        ("unreadable", "user_dead.md", None),
        ("unreadable", "user_link.md", None),
    ]
    assert "outside the memory folder" in report.findings[1].message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_file_without_read_permission_is_unreadable(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "user_secret", HEAD)
    path.chmod(0)
    try:
        assert found(run_audit(empty_dir)) == [("unreadable", "user_secret.md", None)]
    finally:
        path.chmod(0o600)


def test_report_is_ordered_by_path_then_line_then_check(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_b", "\ufeff" + HEAD.replace("\n", "\r\n") + "[[gone]]\r\n")
    write_memory(empty_dir, "user_a", "---\ndescription: a\n---\n")
    report = run_audit(empty_dir)
    assert found(report) == [
        ("missing-category", "user_a.md", 1),
        ("bom", "user_b.md", 1),
        ("crlf", "user_b.md", 1),
        ("broken-link", "user_b.md", 6),
    ]
    assert report.checked == 2


def test_text_and_json_forms_of_the_report() -> None:
    report = AuditReport(
        (
            Finding("crlf", "user_a.md", "CRLF line endings", 1, "warning"),
            Finding("missing-from-index", "user_b.md", "not listed in MEMORY.md", None, "warning"),
        ),
        checked=3,
    )
    assert report.format_text() == (
        "user_a.md:1: crlf: CRLF line endings\n"
        "user_b.md: missing-from-index: not listed in MEMORY.md\n"
    )
    assert report.to_dict() == {
        "findings": [
            {"check": "crlf", "severity": "warning", "path": "user_a.md", "line": 1,
             "message": "CRLF line endings"},
            {"check": "missing-from-index", "severity": "warning", "path": "user_b.md",
             "line": None, "message": "not listed in MEMORY.md"},
        ],
        "count": 2,
        "checked": 3,
    }
    assert AuditReport().ok and AuditReport().format_text() == ""


def test_missing_folder_raises_folder_error(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir)
    empty_dir.rmdir()
    with pytest.raises(FolderError):
        audit(store)


@pytest.mark.parametrize(("meta", "code", "key"), [
    pytest.param({"description": "d", "trust": "high"}, "invalid-value", "trust", id="trust"),
    pytest.param({"category": "pets", "description": "d"}, "unknown-category", "category",
                 id="category"),
    pytest.param({"type": "pets", "description": "d"}, "unknown-category", "type", id="type"),
    pytest.param({"category": "user"}, "missing-description", "description", id="description"),
    pytest.param({"description": "d", "tags": [f"t{n}" for n in range(30)]}, "tags-limit",
                 "tags", id="tags"),
    pytest.param({"description": "d", "updated": "soon"}, "invalid-value", "updated",
                 id="date"),
])
def test_a_value_problem_carries_its_code_and_key_whatever_its_wording(
    meta: dict[str, object], code: str, key: str
) -> None:
    from sage_mem.memory.value import memory_from_meta

    problems = memory_from_meta("x", Path("x.md"), meta, "").problems
    assert [(p.code, p.key) for p in problems] == [(code, key)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("memory_id", ["user_old", "项目/旧笔记"])
def test_a_file_left_by_an_interrupted_delete_is_reported_with_what_to_do(
    empty_dir: Path, memory_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.disk import safe_io

    store = MemoryStore(empty_dir)
    store.write(memory_id, description="An old note", category="user")
    store.archive(memory_id, reason="old")
    archived = empty_dir / f"archive/{memory_id}.md"
    kept = archived.read_bytes()
    real_unlink = os.unlink

    def crash_before_unlinking(path: object, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".deleting"):  # the process dies once the file is parked
            raise KeyboardInterrupt
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(safe_io.os, "unlink", crash_before_unlinking)
    with pytest.raises(KeyboardInterrupt):
        store.delete(f"archive/{memory_id}")
    monkeypatch.undo()
    store.close()
    (left,) = [p for p in archived.parent.iterdir() if p.name.endswith(".deleting")]
    assert left.read_bytes() == kept  # nothing lost
    report = run_audit(empty_dir)
    (finding,) = [f for f in report.findings if f.check == "interrupted-delete"]
    assert finding.severity == "warning" and not report.errors
    assert finding.path == left.relative_to(empty_dir).as_posix()
    assert f"archive/{memory_id}.md" in finding.message
    assert "rename it back" in finding.message and "remove" in finding.message
