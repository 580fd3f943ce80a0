"""Links to archived or moved memories point to where the memory is now; the rest is reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import write_memory
from test_dream_support import add, read_manifest

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "See [[user_old_editor]] for details.",
            "See [[user_editor]] for details.",
            id="wiki-english",
        ),
        pytest.param(
            "详见[[user_old_editor|旧的编辑器]]。",
            "详见[[user_editor|旧的编辑器]]。",
            id="wiki-chinese",
        ),
        pytest.param(
            "See [the editor](user_old_editor.md#why).",
            "See [the editor](user_editor.md#why).",
            id="markdown-with-fragment",
        ),
        pytest.param(
            "See [the editor](user_old_editor.md 'why') and ![](<user_old_editor.md>).",
            "See [the editor](user_editor.md 'why') and ![](<user_editor.md>).",
            id="markdown-with-title-and-image",
        ),
        pytest.param(
            "See [[user_old_editor#why|the editor]].",
            "See [[user_editor#why|the editor]].",
            id="wiki-anchor-and-text",
        ),
        pytest.param(
            "Run:\n\n    [[user_old_editor]]\n\nthen [[user_old_editor]], not "
            "<code>[[user_old_editor]]</code>",
            "Run:\n\n    [[user_old_editor]]\n\nthen [[user_editor]], not "
            "<code>[[user_old_editor]]</code>",
            id="only-outside-indented-code-and-html-code",
        ),
    ],
)
def test_a_link_to_a_superseded_memory_points_to_its_successor(
    empty_dir: Path, body: str, expected: str
) -> None:
    add(empty_dir, "user_old_editor", "The user edits in Vim", category="user")
    add(
        empty_dir,
        "user_editor",
        "The user switched to Helix",
        category="user",
        supersedes=["user_old_editor"],
    )
    add(empty_dir, "project_notes", "Notes", body, category="project")
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project_notes").body.strip() == expected


def test_a_link_to_a_memory_archived_earlier_follows_supersededBy(empty_dir: Path) -> None:
    write_memory(
        empty_dir, "archive/user_cat", "---\ndescription: cat\nsupersededBy: user_pets\n---\n"
    )
    add(empty_dir, "user_pets", "用户的宠物", category="user")
    add(empty_dir, "project_notes", "Notes", "宠物见 [[user_cat]]", category="project")
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project_notes").body.strip() == "宠物见 [[user_pets]]"


def test_a_markdown_link_to_an_archived_memory_without_successor_points_into_archive(
    empty_dir: Path,
) -> None:
    write_memory(empty_dir, "archive/reference_old", "---\ndescription: old\n---\n")
    add(empty_dir, "project/notes", "Notes", "Old: [old](../reference_old.md)", category="project")
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project/notes").body.strip() == "Old: [old](../archive/reference_old.md)"


def test_a_link_to_a_moved_memory_is_fixed(empty_dir: Path) -> None:
    add(empty_dir, "reference/api/auth_flow", "Auth flow", category="reference")
    add(
        empty_dir,
        "project_login",
        "Login",
        "See [auth](reference/auth_flow.md) and [[api/auth_flow]].",
        category="project",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project_login").body.strip() == (
        "See [auth](reference/api/auth_flow.md) and [[reference/api/auth_flow]]."
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param("See [[nowhere]].", "[[nowhere]]: no memory with that id", id="wiki-missing"),
        pytest.param(
            "见[说明](没有这个.md)。",
            "(没有这个.md): no such memory",
            id="markdown-missing-chinese",
        ),
    ],
)
def test_links_that_cannot_be_fixed_are_reported_and_left(
    empty_dir: Path, body: str, problem: str
) -> None:
    path = add(empty_dir, "project_notes", "Notes", body, category="project")
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    assert any(problem in n["message"] for n in read_manifest(result)["notes"])


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("Use `[[user_old_editor]]` syntax.", id="code-span"),
        pytest.param("```\n[[user_old_editor]]\n```", id="code-block"),
        pytest.param("Setup:\n\n    [[user_old_editor]]\n", id="indented-code-block"),
        pytest.param("<pre>\n[x](user_old_editor.md)\n</pre>", id="html-pre"),
        pytest.param("Web: [site](https://example.com/x.md)", id="web-link"),
        pytest.param("See [[user_editor]] and [editor](user_editor.md).", id="working-links"),
    ],
)
def test_links_that_need_no_fix_are_untouched(empty_dir: Path, body: str) -> None:
    add(empty_dir, "user_editor", "The user switched to Helix", category="user")
    path = add(empty_dir, "project_notes", "Notes", body, category="project")
    before = path.read_bytes()
    run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before


CODE_AND_PROSE = (
    "See [[gone_a]] and [a](gone_b.md).\n\n"
    "```\n[[gone_c]]\n```\n\n"
    "    [[gone_d]]\n\n"
    "Use `[[gone_e]]`, ``[x](gone_f.md) ` `` and <code>[[gone_g]]</code>.\n\n"
    "~~~~\n~~~\n[[gone_h]]\n~~~~\n"
    "A paragraph\n    continued with [[gone_i]].\n"
)


def test_the_audit_and_the_dream_agree_on_which_links_are_code(empty_dir: Path) -> None:
    from sage_mem.checks.audit import audit

    add(empty_dir, "project_notes", "Notes", CODE_AND_PROSE, category="project")
    store = MemoryStore(empty_dir)
    audited = {f.message for f in audit(store).findings if f.check == "broken-link"}
    result = run_dream(store, mode="report")
    noted = {
        n["message"] for n in read_manifest(result)["notes"] if "broken link" in n["message"]
    }
    assert audited == {
        "[[gone_a]]: no memory with that id",
        "link to gone_b.md: no such file",
        "[[gone_i]]: no memory with that id",
    }
    assert noted == {
        "broken link not fixed: [[gone_a]]: no memory with that id",
        "broken link not fixed: (gone_b.md): no such memory",
        "broken link not fixed: [[gone_i]]: no memory with that id",
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "History: [[user_old_editor]] came before it.",
            "History: [[user_old_editor]] came before it.",
            id="wiki-history",
        ),
        pytest.param(
            "Previously the user was on [Vim](user_old_editor.md).",
            "Previously the user was on [Vim](archive/user_old_editor.md).",
            id="markdown-previously-opens-the-archived-file",
        ),
        pytest.param(
            "以前的编辑器见[[user_old_editor]]。",
            "以前的编辑器见[[user_old_editor]]。",
            id="wiki-chinese-history",
        ),
    ],
)
def test_a_link_in_historical_context_is_not_pointed_at_the_successor(
    empty_dir: Path, body: str, expected: str
) -> None:
    add(empty_dir, "user_old_editor", "The user edits in Vim", category="user")
    add(empty_dir, "user_editor", "The user switched to Helix", category="user",
        supersedes=["user_old_editor"])
    add(empty_dir, "project_notes", "Notes", body, category="project")
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project_notes").body.strip() == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("It replaces [[user_old_editor]].", "It replaces [[user_old_editor]].",
                     id="wiki"),
        pytest.param(
            "Helix now; see [the Vim notes](user_old_editor.md).",
            "Helix now; see [the Vim notes](archive/user_old_editor.md).",
            id="markdown",
        ),
    ],
)
def test_a_link_to_the_memory_a_successor_replaced_never_becomes_a_self_link(
    empty_dir: Path, body: str, expected: str
) -> None:
    add(empty_dir, "user_old_editor", "The user edits in Vim", category="user")
    add(empty_dir, "user_editor", "The user switched to Helix", body, category="user",
        supersedes=["user_old_editor"])
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    body_after = store.read("user_editor").body
    assert body_after.strip() == expected
    assert "[[user_editor]]" not in body_after and "(user_editor.md)" not in body_after
