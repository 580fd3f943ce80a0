"""Imports from Claude Code memory folders and mnemo databases, and the JSON-lines export."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.agents.export import export_jsonl
from sage_mem.agents.importers import (
    MNEMO_CATEGORIES,
    ImportResult,
    first_sentence,
    import_claude_code,
    import_mnemo,
    parse_tags,
)
from sage_mem.errors import FolderError, SageMemError
from sage_mem.memory import catalog
from sage_mem.store import MemoryStore


def write_memory(folder: Path, memory_id: str, text: str) -> Path:
    path = folder / (memory_id + ".md")
    path.write_text(text, encoding="utf-8")
    return path


# Claude Code


CLAUDE_FILES: dict[str, bytes] = {
    "MEMORY.md": b"- [Role](user_role.md) \xe2\x80\x94 the user is a data scientist\n",
    "user_role.md": (
        b"---\nname: Role\ndescription: The user is a data scientist who likes pandas\n"
        b"type: user\n---\n\nThey work on churn models.\n"
    ),
    "feedback_testing.md": (
        "---\nname: testing\ndescription: 测试要用真实数据库\nmetadata:\n  type: feedback\n"
        "modified: 2026-03-01T10:00:00Z\n---\n\n**Why:** mocks hid a bug.\n"
    ).encode(),
    "project/deploy/steps.md": (
        b"---\ndescription: How the deploy works\ntype: project\n---\nRun make deploy.\n"
    ),
    "plain.md": b"Just a note without any frontmatter.\n",
    "crlf.md": b"---\r\ndescription: Windows note\r\ntype: reference\r\n---\r\n\r\nBody\r\n",
    "broken.md": b"---\ndescription: [unclosed\ntype: user\n---\nbody\n",
    "latin1.md": b"---\ndescription: caf\xe9\n---\n",
    ".hidden.md": b"---\ndescription: hidden\n---\n",
    "notes.txt": b"not markdown",
}
GOOD = ["user_role", "feedback_testing", "project/deploy/steps", "plain", "crlf"]
BAD = ["broken", "latin1"]


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "claude" / "projects" / "-home-me-app" / "memory"
    for name, data in CLAUDE_FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


PARTIAL = 1
"""The exit of an import of `claude_dir`: it holds BAD files, which cannot be imported, so
the import is partial (`test_a_partial_import_names_what_failed_and_exits_1`)."""


@pytest.fixture
def store(empty_dir: Path) -> MemoryStore:
    return MemoryStore(empty_dir)


def by_source(result: ImportResult) -> dict[str, tuple[str, str | None, str]]:
    return {item.source: (item.status, item.memory_id, item.detail) for item in result.items}


def tree(*folders: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for folder in folders:
        for root, _dirs, files in os.walk(folder):
            for name in files:
                path = os.path.join(root, name)
                out[path] = (Path(path).read_bytes(), os.stat(path).st_mtime_ns)
    return out


def test_claude_code_memory_files_are_copied_byte_for_byte_to_the_same_id(
    store: MemoryStore, claude_dir: Path
) -> None:
    result = import_claude_code(store, claude_dir)

    assert sorted(result.imported_ids) == sorted(GOOD)
    for memory_id in GOOD:
        copied = store.root / (memory_id + ".md")
        assert copied.read_bytes() == CLAUDE_FILES[memory_id + ".md"]
        assert store.read(memory_id).id == memory_id
    assert {m.id for m in store.list()} == set(GOOD)


@pytest.mark.parametrize("memory_id, category", [
    pytest.param("user_role", "user", id="type"),
    pytest.param("feedback_testing", "feedback", id="metadata-type"),
    pytest.param("project/deploy/steps", "project", id="subfolder"),
    pytest.param("crlf", "reference", id="crlf"),
    pytest.param("plain", None, id="no-frontmatter"),
])
def test_claude_code_type_keys_keep_working_as_the_category(
    store: MemoryStore, claude_dir: Path, memory_id: str, category: str | None
) -> None:
    import_claude_code(store, claude_dir)
    assert store.read(memory_id).category == category


def test_claude_code_index_file_and_non_memories_are_not_imported(
    store: MemoryStore, claude_dir: Path
) -> None:
    result = import_claude_code(store, claude_dir)

    sources = by_source(result)
    assert "MEMORY.md" not in sources and ".hidden.md" not in sources and "notes.txt" not in sources
    index = (store.root / "MEMORY.md").read_text(encoding="utf-8")
    assert index != CLAUDE_FILES["MEMORY.md"].decode()
    assert "(user_role.md)" in index and "(project/deploy/steps.md)" in index
    assert not (store.root / ".hidden.md").exists() and not (store.root / "notes.txt").exists()


@pytest.mark.parametrize("source, reason", [
    pytest.param("broken.md", "invalid YAML", id="bad-yaml"),
    pytest.param("latin1.md", "not valid UTF-8", id="not-utf8"),
])
def test_claude_code_unparseable_files_are_reported_and_skipped(
    store: MemoryStore, claude_dir: Path, source: str, reason: str
) -> None:
    result = import_claude_code(store, claude_dir)

    status, memory_id, detail = by_source(result)[source]
    assert status == "invalid" and memory_id is None
    assert reason in detail
    assert not (store.root / source).exists()
    assert f"cannot import: {source}" in result.format_text()


def test_claude_code_file_without_frontmatter_is_imported_with_a_note(
    store: MemoryStore, claude_dir: Path
) -> None:
    status, memory_id, detail = by_source(import_claude_code(store, claude_dir))["plain.md"]
    assert (status, memory_id) == ("imported", "plain")
    assert "no frontmatter" in detail


def test_claude_code_reimport_reports_already_present_and_changes_nothing(
    store: MemoryStore, claude_dir: Path
) -> None:
    import_claude_code(store, claude_dir)
    before = tree(store.root)

    again = import_claude_code(store, claude_dir)

    assert again.counts == {"present": len(GOOD), "invalid": len(BAD)}
    assert tree(store.root) == before
    assert "already present: user_role.md -> user_role" in again.format_text()


def test_claude_code_import_never_overwrites_a_different_memory(
    store: MemoryStore, claude_dir: Path
) -> None:
    mine = write_memory(store.root, "user_role", "---\ndescription: mine\n---\n")
    store.reload()

    status, memory_id, detail = by_source(import_claude_code(store, claude_dir))["user_role.md"]

    assert (status, memory_id) == ("skipped", "user_role")
    assert "not overwritten" in detail
    assert mine.read_text() == "---\ndescription: mine\n---\n"


def test_claude_code_import_into_a_store_that_archived_the_memory_is_present(
    store: MemoryStore, claude_dir: Path
) -> None:
    import_claude_code(store, claude_dir)
    store.archive("user_role", reason="stale")

    status, _, detail = by_source(import_claude_code(store, claude_dir))["user_role.md"]
    assert status == "present" and "archive/user_role" in detail
    assert not (store.root / "user_role.md").exists()


def test_claude_code_dry_run_lists_the_plan_and_writes_nothing(
    store: MemoryStore, claude_dir: Path
) -> None:
    before = tree(store.root.parent)

    result = import_claude_code(store, claude_dir, dry_run=True)

    assert tree(store.root.parent) == before
    assert sorted(result.imported_ids) == sorted(GOOD)
    assert {item.status for item in result.items} == {"would-import", "invalid"}
    assert "Dry run: nothing was written." in result.format_text()


def test_claude_code_folder_works_in_place(claude_dir: Path) -> None:
    before = sorted(p.name for p in claude_dir.iterdir())
    with MemoryStore(claude_dir) as in_place:
        assert {m.id for m in in_place.list()} == set(GOOD)
        assert in_place.search("data scientist pandas")[0].id == "user_role"
        assert in_place.search("测试 数据库")[0].id == "feedback_testing"
        assert {Path(p.path).name for p in in_place.problems()} == {"broken.md", "latin1.md"}
        result = import_claude_code(in_place, claude_dir)
    assert result.counts == {"present": len(GOOD), "invalid": len(BAD)}
    # The state lives beside the folder, never in it: nothing is added but MEMORY.md.
    assert sorted(p.name for p in claude_dir.iterdir() if p.name != "MEMORY.md") == [
        name for name in before if name != "MEMORY.md"
    ]
    assert in_place.folder.state_dir.parent == claude_dir.parent


def test_claude_code_import_skips_a_store_nested_inside_the_source(claude_dir: Path) -> None:
    nested = claude_dir / "mirror"
    nested.mkdir()
    with MemoryStore(nested) as inner:
        first = import_claude_code(inner, claude_dir)
        second = import_claude_code(inner, claude_dir)
    assert not any(item.source.startswith("mirror/") for item in first.items + second.items)
    assert second.counts == {"present": len(GOOD), "invalid": len(BAD)}


def test_claude_code_missing_folder_is_a_clear_error(store: MemoryStore, tmp_path: Path) -> None:
    with pytest.raises(FolderError, match="no such folder"):
        import_claude_code(store, tmp_path / "nowhere")


# Claude Code's MEMORY.md: its notes are carried over, never dropped without a word

NOTES_ID = "reference_claude_code_notes"
SOURCE_INDEX = (
    "# Memory Index\n"
    "\n"
    "## User\n"
    "- [Role](user_role.md) — data scientist, churn models\n"
    "\n"
    "## Feedback\n"
    "- [Testing](feedback_testing.md) — real database in integration tests\n"
    "- [Old](feedback_old.md) — a memory file that no longer exists\n"
    "\n"
    "## Notes\n"
    "Prefer pnpm over npm in this repo.\n"
    "\n"
    "The staging server is reset every Monday.\n"
)
# The index lines of the folder's memories, and the heading over nothing else, are
# rebuilt from the memories; every other line is carried over as it was.
CARRIED = (
    "# Memory Index\n"
    "\n"
    "## Feedback\n"
    "- [Old](feedback_old.md) — a memory file that no longer exists\n"
    "\n"
    "## Notes\n"
    "Prefer pnpm over npm in this repo.\n"
    "\n"
    "The staging server is reset every Monday.\n"
)


def sage_mem(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), *argv],
        capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.mark.parametrize("encode", [
    pytest.param(lambda text: text.encode(), id="lf"),
    pytest.param(lambda text: text.replace("\n", "\r\n").encode(), id="crlf"),
    pytest.param(lambda text: b"\xef\xbb\xbf" + text.encode(), id="bom"),
])
def test_import_claude_code_carries_memory_md_notes_into_a_memory(
    empty_dir: Path, claude_dir: Path, encode
) -> None:
    (claude_dir / "MEMORY.md").write_bytes(encode(SOURCE_INDEX))

    result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))

    assert result.returncode == PARTIAL, result.stderr
    assert f"imported: MEMORY.md -> {NOTES_ID}" in result.stdout
    with MemoryStore(empty_dir) as store:
        notes = store.read(NOTES_ID)
    assert notes.body.strip("\n") == CARRIED.strip("\n")
    assert notes.category == "reference"
    assert "-home-me-app" in notes.description and "MEMORY.md" in notes.description
    assert f"({NOTES_ID}.md)" in (empty_dir / "MEMORY.md").read_text(encoding="utf-8")


def test_import_claude_code_reports_the_notes_in_json(empty_dir: Path, claude_dir: Path) -> None:
    (claude_dir / "MEMORY.md").write_text(SOURCE_INDEX, encoding="utf-8")

    result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir), "--json")

    items = {item["source"]: item for item in json.loads(result.stdout)["items"]}
    assert items["MEMORY.md"]["id"] == NOTES_ID
    assert items["MEMORY.md"]["status"] == "imported"
    assert "lines" in items["MEMORY.md"]["detail"]


def test_import_claude_code_notes_twice_are_already_present(
    empty_dir: Path, claude_dir: Path
) -> None:
    (claude_dir / "MEMORY.md").write_text(SOURCE_INDEX, encoding="utf-8")
    assert sage_mem(empty_dir, "import", "claude-code", str(claude_dir)).returncode == PARTIAL
    before = tree(empty_dir)

    again = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))

    assert f"already present: MEMORY.md -> {NOTES_ID}" in again.stdout
    assert tree(empty_dir) == before


def test_import_claude_code_notes_dry_run_writes_nothing(
    empty_dir: Path, claude_dir: Path
) -> None:
    (claude_dir / "MEMORY.md").write_text(SOURCE_INDEX, encoding="utf-8")

    result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir), "--dry-run")

    assert f"would import: MEMORY.md -> {NOTES_ID}" in result.stdout
    assert list(empty_dir.iterdir()) == []


def test_import_claude_code_never_overwrites_notes_edited_since(
    empty_dir: Path, claude_dir: Path
) -> None:
    (claude_dir / "MEMORY.md").write_text(SOURCE_INDEX, encoding="utf-8")
    assert sage_mem(empty_dir, "import", "claude-code", str(claude_dir)).returncode == PARTIAL
    mine = empty_dir / f"{NOTES_ID}.md"
    mine.write_text(mine.read_text(encoding="utf-8") + "My own addition.\n", encoding="utf-8")
    edited = mine.read_bytes()

    again = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))

    assert f"imported: MEMORY.md -> {NOTES_ID}_2" in again.stdout
    assert mine.read_bytes() == edited
    with MemoryStore(empty_dir) as store:
        assert store.read(NOTES_ID + "_2").body.strip("\n") == CARRIED.strip("\n")


def test_import_claude_code_reports_a_memory_md_it_cannot_read(
    empty_dir: Path, claude_dir: Path
) -> None:
    (claude_dir / "MEMORY.md").write_bytes(b"Caf\xe9 notes in latin-1\n")

    result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))

    assert result.returncode == PARTIAL, result.stderr
    assert "MEMORY.md" in result.stdout and "not valid UTF-8" in result.stdout
    assert not (empty_dir / f"{NOTES_ID}.md").exists()


@pytest.mark.parametrize("index", [
    pytest.param(CLAUDE_FILES["MEMORY.md"].decode(), id="only-index-lines"),
    pytest.param("# Memory Index\n\n## User\n- [Role](user_role.md) — role\n\n",
                 id="index-lines-under-headings"),
    pytest.param(catalog.render([]), id="written-by-sage-mem"),
])
def test_import_claude_code_brings_no_notes_memory_when_there_are_no_notes(
    empty_dir: Path, claude_dir: Path, index: str
) -> None:
    # Guards: these pass on the code as found, and must keep passing.
    (claude_dir / "MEMORY.md").write_text(index, encoding="utf-8")
    result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))
    assert result.returncode == PARTIAL and "MEMORY.md" not in result.stdout
    assert not (empty_dir / f"{NOTES_ID}.md").exists()


def test_import_claude_code_in_place_leaves_the_notes_where_they_are(claude_dir: Path) -> None:
    (claude_dir / "MEMORY.md").write_text(SOURCE_INDEX, encoding="utf-8")
    result = sage_mem(claude_dir, "import", "claude-code", str(claude_dir))
    assert result.returncode == PARTIAL and "MEMORY.md" not in result.stdout
    assert not (claude_dir / f"{NOTES_ID}.md").exists()


# Claude Code: every write under the folder's write lock, never replacing a file


def test_import_claude_code_is_counted_so_another_process_keeps_the_imports_in_memory_md(
    empty_dir: Path, claude_dir: Path
) -> None:
    # A second agent's store, its watcher (if any) not caught up with the import yet.
    other = MemoryStore(empty_dir, watch=False)

    result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))
    assert result.returncode == PARTIAL, result.stderr
    other.write("user_later", description="Written after the import", category="user")

    index = (empty_dir / "MEMORY.md").read_text(encoding="utf-8")
    for memory_id in [*GOOD, "user_later"]:
        assert f"({memory_id}.md)" in index, memory_id
    assert {m.id for m in other.list()} == {*GOOD, "user_later"}


def test_import_claude_code_waits_for_the_write_lock(
    empty_dir: Path, claude_dir: Path
) -> None:
    from sage_mem.disk.locks import write_lock

    store = MemoryStore(empty_dir, watch=False)
    with write_lock(store.root, store.folder.state_dir):
        process = subprocess.Popen(
            [sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "import", "claude-code",
             str(claude_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, _ = process.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            stdout = None
        assert stdout is None, "the import wrote while another process held the write lock"
        assert not (empty_dir / "user_role.md").exists()
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == PARTIAL, stderr
    assert (empty_dir / "user_role.md").read_bytes() == CLAUDE_FILES["user_role.md"]


def test_import_claude_code_reads_a_fifo_in_the_source_never_waits_on_it(
    empty_dir: Path, claude_dir: Path
) -> None:
    os.mkfifo(claude_dir / "user_pipe.md")

    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "import", "claude-code",
         str(claude_dir)], capture_output=True, text=True, timeout=20)

    assert result.returncode == PARTIAL, result.stderr
    assert "cannot import: user_pipe.md" in result.stdout
    assert "not a regular file" in result.stdout
    assert not os.path.lexists(empty_dir / "user_pipe.md")


@pytest.mark.parametrize("shared", [
    pytest.param(False, id="private"),
    pytest.param(True, id="shared-with-a-group"),
])
def test_import_claude_code_files_follow_the_folder_permission_policy(
    empty_dir: Path, claude_dir: Path, shared: bool
) -> None:
    import stat

    empty_dir.chmod(0o2770 if shared else 0o700)
    (claude_dir / "MEMORY.md").write_text(SOURCE_INDEX, encoding="utf-8")

    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "import", "claude-code",
         str(claude_dir)], capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: os.umask(0))

    assert result.returncode == PARTIAL, result.stderr
    modes = {p.relative_to(empty_dir).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in empty_dir.rglob("*")}
    files, folders = (0o660, 0o770) if shared else (0o600, 0o700)
    for name in ("user_role.md", "project/deploy/steps.md", f"{NOTES_ID}.md", "MEMORY.md"):
        assert modes[name] == files, (name, oct(modes[name]))
    for name in ("project", "project/deploy"):
        assert modes[name] & 0o777 == folders, (name, oct(modes[name]))


# mnemo


FACTS = [
    # content, category, trust_score, summary, tags, retrieval_count
    ("The user is a backend engineer in Berlin. They moved there in 2021.", "identity", 0.9,
     "backend engineer", '["bio", "job"]', 7),
    ("Prefer early returns over nested ifs! Keep functions short.", "coding_style", 0.8, None,
     "style, python , ,#clean", 0),
    ("Use ripgrep instead of grep?", "tool_pref", 1.7, "", "[]", None),
    ("Always run the tests before committing.\nEven for docs.", "workflow", -0.3, None, None, 2),
    ("sage-mem ships a bilingual index; release planned for Friday.", "project", 0.6, None,
     '"single, json, string"', 1),
    ("Docs live at https://example.com/docs. Ask Sam for access.", "general", "high", None,
     '{"dict": 1, "keys": 2}', "many"),
    ("用户的猫叫芝麻，喜欢晒太阳。它三岁了。", "identity", 0.7, "猫叫芝麻", "宠物，猫、家", 3),
    ("代码审查时先看测试！然后看实现", "coding_style", None, None, '["审查", 5, null, ["x"]]', 0),
    ("部署前要检查数据库迁移吗？是的", "workflow", 0.5, None, "x" * 60, 0),
    ("A fact from a category mnemo added later.", "health", 0.5, None, None, 0),
    ("A fact without any category.", None, None, None, None, None),
    ("   ", "general", 0.5, None, None, 0),
]


def make_mnemo(path: Path, rows: list[tuple] = FACTS, *, columns: str | None = None) -> Path:
    connection = sqlite3.connect(path)
    connection.execute(
        columns or
        "CREATE TABLE facts (id INTEGER PRIMARY KEY, content TEXT NOT NULL, category TEXT,"
        " trust_score REAL, summary TEXT, tags TEXT, retrieval_count INTEGER,"
        " created_at TEXT DEFAULT CURRENT_TIMESTAMP)"
    )
    if columns is None:
        connection.executemany(
            "INSERT INTO facts (content, category, trust_score, summary, tags, retrieval_count)"
            " VALUES (?, ?, ?, ?, ?, ?)", rows,
        )
    connection.commit()
    connection.close()
    return path


@pytest.fixture
def mnemo_db(tmp_path: Path) -> Path:
    return make_mnemo(tmp_path / "mnemo.db")


def imported(store: MemoryStore, result: ImportResult, content: str):
    (item,) = [i for i, row in zip(result.items, FACTS, strict=True) if row[0] == content]
    assert item.status == "imported", item
    return store.read(item.memory_id)


@pytest.mark.parametrize("mnemo_category, category", [
    *[pytest.param(k, v, id=k) for k, v in MNEMO_CATEGORIES.items()],
    pytest.param("health", "reference", id="unknown"),
    pytest.param(None, "reference", id="missing"),
])
def test_mnemo_categories_map_to_sage_mem_categories(
    store: MemoryStore, tmp_path: Path, mnemo_category: str | None, category: str
) -> None:
    db = make_mnemo(tmp_path / "one.db", [("Some fact here.", mnemo_category, 0.5, None, None, 0)])
    (item,) = import_mnemo(store, db).items
    memory = store.read(item.memory_id)
    assert memory.category == category
    assert item.memory_id.startswith(category + "_")
    if mnemo_category == "health":
        assert "health" in memory.tags and "unknown category" in item.detail


def test_mnemo_fact_fields_become_memory_fields(store: MemoryStore, mnemo_db: Path) -> None:
    result = import_mnemo(store, mnemo_db)

    memory = imported(store, result, FACTS[0][0])
    assert memory.id == "user_backend_engineer_berlin"
    assert memory.description == "The user is a backend engineer in Berlin."
    assert memory.body.strip() == FACTS[0][0]
    assert memory.trust == 0.9
    assert memory.summary == "backend engineer"
    assert memory.tags == ("bio", "job")

    cat = imported(store, result, FACTS[6][0])
    assert cat.description == "用户的猫叫芝麻，喜欢晒太阳。"
    assert cat.id == "user_用户的猫叫芝麻_喜欢晒太阳"  # readable in its own script, not a hash
    assert cat.tags == ("宠物", "猫", "家")
    assert store.search("猫叫什么")[0].id == cat.id


@pytest.mark.parametrize("index, trust", [
    pytest.param(2, 1.0, id="above-one"),
    pytest.param(3, 0.0, id="below-zero"),
    pytest.param(5, 0.5, id="not-a-number"),
    pytest.param(7, 0.5, id="null"),
])
def test_mnemo_trust_score_is_clamped_to_0_1(
    store: MemoryStore, mnemo_db: Path, index: int, trust: float
) -> None:
    assert imported(store, import_mnemo(store, mnemo_db), FACTS[index][0]).trust == trust


@pytest.mark.parametrize("raw, tags", [
    pytest.param('["a", "b"]', ["a", "b"], id="json-list"),
    pytest.param("a, b ,, c", ["a", "b", "c"], id="comma-separated"),
    pytest.param("宠物，猫、家", ["宠物", "猫", "家"], id="chinese-commas"),
    pytest.param("a; b\nc", ["a", "b", "c"], id="semicolons-newlines"),
    pytest.param('"x, y"', ["x", "y"], id="json-string"),
    pytest.param('{"k1": 1, "k2": 2}', ["k1", "k2"], id="json-object"),
    pytest.param('["x", 5, null, ["nested"], " spaced  out "]', ["x", "5", "spaced out"],
                 id="json-mixed"),
    pytest.param("#tag, Tag, TAG", ["tag"], id="hash-and-case-duplicates"),
    pytest.param("[broken", ["[broken"], id="broken-json"),
    pytest.param(None, [], id="null"),
    pytest.param("", [], id="empty"),
    pytest.param(b"bytes,tags", ["bytes", "tags"], id="blob"),
])
def test_mnemo_tags_are_read_however_they_were_stored(raw: object, tags: list[str]) -> None:
    assert parse_tags(raw)[0] == tags


def test_mnemo_tags_are_cut_to_the_limits() -> None:
    tags, notes = parse_tags(",".join(f"tag{i}" for i in range(25)) + "," + "y" * 60)
    assert len(tags) == 20 and tags[0] == "tag0"
    assert any("first 20" in note for note in notes)
    long_tags, long_notes = parse_tags("z" * 41)
    assert long_tags == ["z" * 40] and "cut to 40" in long_notes[0]


@pytest.mark.parametrize("text, sentence", [
    pytest.param("One. Two.", "One.", id="period"),
    pytest.param("Really! Yes.", "Really!", id="exclamation"),
    pytest.param("Why not? Because.", "Why not?", id="question"),
    pytest.param("用户叫小明。他喜欢茶", "用户叫小明。", id="chinese-full-stop"),
    pytest.param("真的吗？是的", "真的吗？", id="chinese-question"),
    pytest.param("太好了！走吧", "太好了！", id="chinese-exclamation"),
    pytest.param("Use e.g. ripgrep. Then more.", "Use e.g. ripgrep.", id="abbreviation"),
    pytest.param("Version 3.11 is used. Fine.", "Version 3.11 is used.", id="decimal"),
    pytest.param("\n\n# Heading line\nbody", "Heading line", id="markdown-heading"),
    pytest.param("first line\nsecond line", "first line", id="first-line"),
    pytest.param("no end at all", "no end at all", id="no-sentence-end"),
])
def test_mnemo_description_is_the_first_sentence(text: str, sentence: str) -> None:
    assert first_sentence(text) == sentence


@pytest.mark.parametrize("text", [
    pytest.param("word " * 100, id="latin"),
    pytest.param("汉字" * 100, id="cjk"),
])
def test_mnemo_long_description_is_cut_to_150_characters(text: str) -> None:
    description = first_sentence(text)
    assert len(description) <= 150 and description.endswith("…")
    assert "  " not in description


def test_mnemo_ids_are_unique_stable_and_never_overwrite(
    store: MemoryStore, tmp_path: Path
) -> None:
    write_memory(store.root, "feedback_prefer_tabs", "---\ndescription: Mine, not mnemo's\n---\n")
    store.reload()
    rows = [
        ("Prefer tabs. Version one.", "coding_style", 0.5, None, None, 0),
        ("Prefer tabs. Version two.", "coding_style", 0.5, None, None, 0),
        ("喜欢用制表符。", "coding_style", 0.5, None, None, 0),
    ]
    db = make_mnemo(tmp_path / "ids.db", rows)

    ids = [item.memory_id for item in import_mnemo(store, db).items]

    assert ids[:2] == ["feedback_prefer_tabs_2", "feedback_prefer_tabs_3"]
    assert (store.root / "feedback_prefer_tabs.md").read_text() == (
        "---\ndescription: Mine, not mnemo's\n---\n")
    (tmp_path / "other").mkdir()
    other = MemoryStore(tmp_path / "other")
    again = [item.memory_id for item in import_mnemo(other, db).items]
    assert again[2] == ids[2] and again[:2] == ["feedback_prefer_tabs", "feedback_prefer_tabs_2"]


def test_mnemo_retrieval_counts_go_to_the_state_folder_once(
    store: MemoryStore, mnemo_db: Path
) -> None:
    result = import_mnemo(store, mnemo_db)
    engineer = imported(store, result, FACTS[0][0])
    cat = imported(store, result, FACTS[6][0])
    assert store.stats.retrievals(engineer.id) == 7
    assert store.stats.retrievals(cat.id) == 3
    assert "retrievals" not in (store.root / (engineer.id + ".md")).read_text()

    import_mnemo(store, mnemo_db)
    assert store.stats.retrievals(engineer.id) == 7


def test_mnemo_reimport_is_idempotent(store: MemoryStore, mnemo_db: Path) -> None:
    first = import_mnemo(store, mnemo_db)
    before = tree(store.root.parent)

    again = import_mnemo(store, mnemo_db)

    assert tree(store.root.parent) == before
    assert again.counts == {"present": len(FACTS) - 1, "invalid": 1}
    assert [i.memory_id for i in again.items if i.status == "present"] == first.imported_ids


def test_mnemo_fact_already_in_an_archived_memory_is_present(
    store: MemoryStore, mnemo_db: Path
) -> None:
    first = import_mnemo(store, mnemo_db)
    store.archive(first.imported_ids[0], reason="outdated")

    again = import_mnemo(store, mnemo_db)

    assert again.items[0].status == "present"
    assert again.items[0].memory_id == "archive/" + first.imported_ids[0]


def test_mnemo_empty_content_is_reported(store: MemoryStore, mnemo_db: Path) -> None:
    item = import_mnemo(store, mnemo_db).items[-1]
    assert (item.status, item.detail) == ("invalid", "empty content")


def test_mnemo_fact_too_large_for_the_index_is_reported_and_not_written(
    store: MemoryStore, tmp_path: Path
) -> None:
    huge = "Huge. " + "x" * 600_000
    db = make_mnemo(tmp_path / "big.db", [(huge, "general", 0.5, None, None, 0)])
    (item,) = import_mnemo(store, db).items
    assert (item.status, item.detail) == ("invalid", "over the 512 KB limit")
    assert list(store.root.iterdir()) == []  # nothing imported, so not even MEMORY.md


def test_mnemo_dry_run_lists_the_plan_and_writes_nothing(
    store: MemoryStore, mnemo_db: Path
) -> None:
    before = tree(store.root.parent)

    result = import_mnemo(store, mnemo_db, dry_run=True)

    assert tree(store.root.parent) == before
    assert len(result.imported_ids) == len(FACTS) - 1
    assert "would import: fact 1 -> user_backend_engineer_berlin" in result.format_text()
    real = import_mnemo(store, mnemo_db)
    assert real.imported_ids == result.imported_ids


def test_mnemo_database_is_only_read(store: MemoryStore, tmp_path: Path) -> None:
    folder = tmp_path / "mnemo data"
    folder.mkdir()
    db = make_mnemo(folder / "odd name?#%.db")
    before = tree(folder)

    result = import_mnemo(store, db)

    assert len(result.imported_ids) == len(FACTS) - 1
    assert tree(folder) == before  # same bytes, same mtime, no journal or WAL left beside it


def test_mnemo_optional_columns_may_be_missing(store: MemoryStore, tmp_path: Path) -> None:
    db = make_mnemo(tmp_path / "min.db", columns="CREATE TABLE facts (content TEXT)")
    connection = sqlite3.connect(db)
    connection.execute("INSERT INTO facts VALUES ('Only content here. Nothing else.')")
    connection.commit()
    connection.close()

    (item,) = import_mnemo(store, db).items

    memory = store.read(item.memory_id)
    assert (memory.id, memory.category, memory.trust, memory.tags) == (
        "reference_only_content_here", "reference", 0.5, ())


@pytest.mark.parametrize("setup, message", [
    pytest.param("CREATE TABLE memories (content TEXT)", "no `facts` table", id="no-facts-table"),
    pytest.param("CREATE TABLE facts (text TEXT, category TEXT)", "no `content` column",
                 id="no-content-column"),
    pytest.param(None, "not a readable SQLite database", id="not-a-database"),
    pytest.param("missing", "no such file", id="missing-file"),
])
def test_mnemo_bad_database_is_a_clear_error(
    store: MemoryStore, tmp_path: Path, setup: str | None, message: str
) -> None:
    db = tmp_path / "bad.db"
    if setup is None:
        db.write_text("just some text, not SQLite " * 20)
    elif setup != "missing":
        make_mnemo(db, columns=setup)
    with pytest.raises(SageMemError, match=message) as caught:
        import_mnemo(store, db)
    assert "\n" not in str(caught.value)
    assert [p.name for p in store.root.iterdir()] in ([], ["MEMORY.md"])


def test_mnemo_import_regenerates_the_index_once_and_lists_every_fact(
    store: MemoryStore, mnemo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renders = []
    real_render = catalog.render

    def counting_render(*args, **kwargs):
        renders.append(1)
        return real_render(*args, **kwargs)

    monkeypatch.setattr(catalog, "render", counting_render)

    result = import_mnemo(store, mnemo_db)

    assert len(renders) == 1
    index = (store.root / "MEMORY.md").read_text(encoding="utf-8")
    assert all(f"({memory_id}.md)" in index for memory_id in result.imported_ids)
    store.write("user_after", description="written after the import")
    assert len(renders) == 2  # the store is back to one regeneration per write


def test_mnemo_import_result_as_json(store: MemoryStore, mnemo_db: Path) -> None:
    data = json.loads(json.dumps(import_mnemo(store, mnemo_db).to_dict()))
    assert data["kind"] == "mnemo" and data["dryRun"] is False
    assert data["counts"] == {"imported": len(FACTS) - 1, "invalid": 1}
    assert data["items"][0] == {"source": "fact 1", "id": "user_backend_engineer_berlin",
                                "status": "imported", "detail": ""}


# export


def test_export_writes_one_json_object_per_memory_in_id_order(
    store: MemoryStore, mnemo_db: Path
) -> None:
    import_mnemo(store, mnemo_db)
    out = io.StringIO()

    result = export_jsonl(store, out)

    lines = out.getvalue().splitlines()
    assert result.exported == len(lines) == len(FACTS) - 1 and result.left_out == ()
    rows = [json.loads(line) for line in lines]
    assert [row["id"] for row in rows] == sorted(row["id"] for row in rows)
    assert rows == [
        {**store.read(row["id"]).to_dict(body=True),
         "file": (store.root / (row["id"] + ".md")).read_text(encoding="utf-8")}
        for row in rows
    ]
    assert "芝麻" in out.getvalue()  # non-ASCII as is, not \u escapes
    export_jsonl(store, again := io.StringIO())
    assert again.getvalue() == out.getvalue()


def test_export_includes_archived_memories_only_when_asked(store: MemoryStore) -> None:
    store.write("user_a", description="kept", body="line one\nline two")
    store.write("user_b", description="old one")
    store.archive("user_b", reason="superseded")

    plain, everything = io.StringIO(), io.StringIO()
    assert export_jsonl(store, plain).exported == 1
    assert export_jsonl(store, everything, archived=True).exported == 2

    (row,) = [json.loads(line) for line in plain.getvalue().splitlines()]
    assert row["id"] == "user_a" and row["body"].strip() == "line one\nline two"
    assert [json.loads(line)["id"] for line in everything.getvalue().splitlines()] == [
        "archive/user_b", "user_a"]


def test_export_names_each_memory_file_it_leaves_out(store: MemoryStore) -> None:
    store.write("user_a", description="kept")
    write_memory(store.root, "broken", "---\ndescription: [unclosed\n---\n")
    (store.root / "archive").mkdir()
    write_memory(store.root / "archive", "old", "---\ndescription: [x\n---\n")
    store.reload()

    plain, everything = export_jsonl(store, io.StringIO()), export_jsonl(
        store, io.StringIO(), archived=True)

    assert [(item.path, item.problem[:12]) for item in plain.left_out] == [
        ("broken.md", "invalid YAML")]
    assert [item.path for item in everything.left_out] == ["archive/old.md", "broken.md"]
    assert plain.to_dict()["leftOut"][0]["problem"].startswith("invalid YAML at line 2")


# issue 17, item 5: what an import keeps


def test_mnemo_created_and_updated_times_become_the_memory_dates(
    empty_dir: Path, tmp_path: Path
) -> None:
    db = tmp_path / "dated.db"
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, content TEXT, category TEXT,"
                       " created_at TEXT, updated_at)")
    connection.executemany(
        "INSERT INTO facts (content, category, created_at, updated_at) VALUES (?, ?, ?, ?)", [
            ("The user moved to Lisbon last week.", "identity", "2024-03-01 09:15:00",
             "2024-05-02 18:00:00"),
            ("上周换了新工作。", "identity", "2023-11-20T08:00:00+08:00", None),
            ("Tests run with tox.", "workflow", None, 1714600000),
            ("Undated fact here.", "general", "not a date", None),
        ])
    connection.commit()
    connection.close()
    done = sage_mem(empty_dir, "import", "mnemo", str(db), "--json")
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    shown = [json.loads(sage_mem(empty_dir, "show", item["id"], "--json").stdout)
             for item in items]
    assert [(m["created"], m["updated"]) for m in shown[:3]] == [
        ("2024-03-01", "2024-05-02T18:00:00Z"),
        ("2023-11-20", "2023-11-20T00:00:00Z"),  # only created_at: last changed then, in UTC
        ("2024-05-01", "2024-05-01T21:46:40Z"),  # a Unix time
    ]
    assert shown[3]["created"] == shown[3]["updated"][:10] >= "2026"  # dated at the import
    assert "created_at 'not a date' is not a time" in items[3]["detail"]


@pytest.mark.parametrize("content, expected", [
    pytest.param("The user's favourite colour is teal.", "user_favourite_colour_teal",
                 id="possessive"),
    pytest.param("The user doesn't like meetings before ten.",
                 "user_doesnt_like_meetings_before_ten", id="apostrophe"),
    pytest.param("Café opens at eight.", "user_cafe_opens_eight", id="accents-folded"),
    pytest.param("用户的猫叫芝麻，喜欢晒太阳。", "user_用户的猫叫芝麻_喜欢晒太阳", id="chinese"),
    pytest.param("猫" * 40 + "。", "user_" + "猫" * 16, id="long-chinese"),
    pytest.param("Юзер любит чай.", "user_юзер_любит_чай", id="cyrillic"),
    pytest.param("☕☕☕", None, id="no-letters"),
])
def test_mnemo_ids_are_readable(
    empty_dir: Path, tmp_path: Path, content: str, expected: str | None
) -> None:
    db = make_mnemo(tmp_path / "one.db", [(content, "identity", 0.5, None, None, 0)])
    done = sage_mem(empty_dir, "import", "mnemo", str(db), "--json")
    (item,) = json.loads(done.stdout)["items"]
    if expected is None:
        assert re.fullmatch(r"user_mnemo_[0-9a-f]{8}", item["id"])
    else:
        assert item["id"] == expected
    assert (empty_dir / (item["id"] + ".md")).is_file()


AWS_KEY = "AK" + "IA" + "Q7ZK3M2XW5RT9PLB"  # split so that no scanner takes this file for one


def test_import_refuses_a_secret_unless_allowed(
    empty_dir: Path, tmp_path: Path, claude_dir: Path
) -> None:
    db = make_mnemo(tmp_path / "secret.db", [(f"The deploy key is {AWS_KEY}.", "general", 0.5,
                                              None, None, 0)])
    refused = sage_mem(empty_dir, "import", "mnemo", str(db))
    assert "cannot import" in refused.stdout and "--allow-secret" in refused.stdout
    assert not any(empty_dir.glob("*.md"))
    allowed = sage_mem(empty_dir, "import", "mnemo", str(db), "--allow-secret")
    assert "1 imported" in allowed.stdout

    (claude_dir / "reference_key.md").write_text(
        f"---\nname: key\ndescription: the key\ntype: reference\n---\n\n{AWS_KEY}\n")
    other = tmp_path / "other"
    other.mkdir()
    dry = sage_mem(other, "import", "claude-code", str(claude_dir), "--dry-run", "--json")
    (item,) = [i for i in json.loads(dry.stdout)["items"] if i["source"] == "reference_key.md"]
    assert item["status"] == "invalid" and "--allow-secret" in item["detail"]
    sage_mem(other, "import", "claude-code", str(claude_dir))
    assert not (other / "reference_key.md").exists()
    sage_mem(other, "import", "claude-code", str(claude_dir), "--allow-secret")
    assert (other / "reference_key.md").read_bytes() == (claude_dir / "reference_key.md"
                                                        ).read_bytes()


def test_import_claude_code_notes_holding_a_secret_are_reported_like_a_file(
    empty_dir: Path, claude_dir: Path
) -> None:
    """A token among the notes of the source's MEMORY.md: that item is refused and reported
    (the rest of the import is done and listed), and --allow-secret carries it over."""
    (claude_dir / "MEMORY.md").write_text(
        "- [Role](user_role.md) — the role\n\nDeploy with the key " + AWS_KEY + "\n",
        encoding="utf-8")
    for dry in ("--dry-run", None):
        result = sage_mem(empty_dir, "import", "claude-code", str(claude_dir), "--json",
                          *([dry] if dry else []))
        (notes,) = [i for i in json.loads(result.stdout)["items"] if i["source"] == "MEMORY.md"]
        assert notes["status"] == "invalid" and "--allow-secret" in notes["detail"]
        assert AWS_KEY not in result.stdout + result.stderr
    assert (empty_dir / "user_role.md").exists()
    assert not (empty_dir / "reference_claude_code_notes.md").exists()
    allowed = sage_mem(empty_dir, "import", "claude-code", str(claude_dir), "--allow-secret")
    assert allowed.returncode == PARTIAL, allowed.stderr
    assert AWS_KEY in (empty_dir / "reference_claude_code_notes.md").read_text(encoding="utf-8")


def test_a_partial_import_names_what_failed_and_exits_1(empty_dir: Path, claude_dir: Path
                                                         ) -> None:
    """Every import kind: what could not be imported is named in one line on stderr and the
    exit is 1, while what was imported stays; a dry run says nothing was written."""
    dry = sage_mem(empty_dir, "import", "claude-code", str(claude_dir), "--dry-run")
    assert dry.returncode == 1 and dry.stderr.count("\n") == 1, dry.stderr
    assert "nothing was written (dry run)" in dry.stderr
    done = sage_mem(empty_dir, "import", "claude-code", str(claude_dir))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"sage-mem: error: {len(BAD)} of ")
    assert all(f"{name}.md" in done.stderr for name in BAD) and "is kept" in done.stderr
    assert all((empty_dir / f"{name}.md").exists() for name in GOOD)
