"""MemoryStore: search, read, write, archive, feedback, list, problems, and MEMORY.md upkeep.

Every test works on a real folder copied from memory_template/ (or an empty one)
and checks the bytes on disk, not only what the API returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import unicodedata
from pathlib import Path

import pytest
from support import write_memory

from sage_mem import (
    ConflictError,
    FolderError,
    Hit,
    InvalidId,
    InvalidMemory,
    MemoryLocked,
    MemoryNotFound,
    MemoryStore,
)
from sage_mem.memory import catalog as catalog_module
from sage_mem.memory.value import parse_moment
from sage_mem.search.query import Filters

CAT = (
    "---\nname: cat\ndescription: the user's cat is called Sesame\ncategory: user\n---\n"
    "\nOrange.\n"
)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (dot-files too) with its bytes."""
    out = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = Path(base, name)
            out[path.relative_to(folder).as_posix()] = path.read_bytes()
    return out


@pytest.fixture
def store(memory_dir: Path) -> MemoryStore:
    return MemoryStore(memory_dir)


# searching and reading


def test_search_returns_compact_hits(store: MemoryStore) -> None:
    hits = store.search("我的猫叫什么", limit=5)
    assert hits and isinstance(hits[0], Hit)
    top = hits[0]
    assert top.id == "user_cat_zh"
    assert top.description == "用户的猫叫芝麻，喜欢晒太阳"
    assert top.category == "user"
    assert top.trust == 0.5
    assert top.updated == "2026-11-29T00:00:00Z"
    assert top.score > 0
    assert not hasattr(top, "body")


def test_search_finds_english_and_filters_by_category(store: MemoryStore) -> None:
    assert store.search("pytest")[0].id == "reference_test_command"
    hits = store.search("tests", category="feedback")
    assert hits and {h.category for h in hits} == {"feedback"}


def test_read_returns_the_whole_memory_with_the_sha256_of_its_bytes(
    store: MemoryStore, memory_dir: Path
) -> None:
    memory = store.read("user_cat_zh")
    raw = (memory_dir / "user_cat_zh.md").read_bytes()
    assert memory.sha256 == hashlib.sha256(raw).hexdigest()
    assert memory.body.strip().startswith("用户养了一只橘猫")
    assert memory.aliases == ("猫", "cat", "pet", "宠物")
    assert memory.created == "2026-11-29"
    assert store.read("user_cat_zh.md").id == "user_cat_zh"


def test_reading_a_missing_memory_suggests_a_close_id(store: MemoryStore) -> None:
    with pytest.raises(MemoryNotFound, match="user_cat_zh"):
        store.read("user_cat_z")


def test_list_filters_by_category_tag_and_project(store: MemoryStore, memory_dir: Path) -> None:
    for memory_id, project in (("scoped", "other"), ("global", "global")):
        text = f"---\ndescription: s\ncategory: project\nproject: {project}\n---\n"
        write_memory(memory_dir, memory_id, text)
    store.reload()
    assert [m.id for m in store.list(category="user")] == ["user_cat_zh", "user_profile"]
    assert [m.id for m in store.list(tags=["testing"])] == [
        "feedback_tests_first", "reference_test_command"]
    mine = [m.id for m in store.list(category="project", project="sage-mem")]
    assert "global" in mine and "scoped" not in mine
    ids = [m.id for m in store.list()]
    assert ids == sorted(ids) and len(ids) == 10


def test_the_whole_list_is_the_indexs_selection_on_a_warm_start_and_after_changes(
    memory_dir: Path,
) -> None:
    """Guard for the unfiltered `list` (one pass over the index, not `select`'s per-id lookups):
    the same memories, in service or with the archived ones, from a cache and after changes."""
    with MemoryStore(memory_dir) as cold:
        cold.archive("user_profile", "old")
    write_memory(memory_dir, "project/new_one", "---\ndescription: new\n---\n")
    with MemoryStore(memory_dir) as warm:  # from the cache, the changes since read in
        (memory_dir / "feedback_tests_first.md").unlink()
        warm.reconcile()
        warm.write("zeta", description="last", body="b", category="user")
        for archived in (False, True):
            assert warm.list(archived=archived) == warm.index.select(Filters(archived=archived))
        assert [m.id for m in warm.list(archived=True) if m.archived] == [
            "archive/user_profile"]
        assert "project/new_one" in {m.id for m in warm.list()}


def test_the_store_is_a_context_manager(memory_dir: Path) -> None:
    with MemoryStore(memory_dir) as store:
        assert len(store.list()) == 8
    assert store.search("cat")


def test_a_missing_folder_is_a_folder_error(tmp_path: Path) -> None:
    with pytest.raises(FolderError):
        MemoryStore(tmp_path / "missing")


def test_the_default_folder_is_sage_mem_dir(memory_dir: Path) -> None:
    assert MemoryStore().root == memory_dir


# tolerant loading and problems


@pytest.mark.parametrize(
    ("raw", "description"),
    [
        pytest.param(b"\xef\xbb\xbf" + CAT.encode(), "the user's cat is called Sesame", id="bom"),
        pytest.param(
            CAT.replace("\n", "\r\n").encode(), "the user's cat is called Sesame", id="crlf"
        ),
        pytest.param(b"# Sesame\n\nThe cat.\n", "Sesame", id="no-frontmatter"),
        pytest.param(b"---\ndescription: cat\n\nbody\n", "cat", id="no-closing"),
        pytest.param(b"---\n- a\n---\nThe cat.\n", "The cat.", id="not-a-mapping"),
        pytest.param(b"---\ndescription: cat\ntype: user\n---\n", "cat", id="claude-code-type"),
    ],
)
def test_quirky_files_load_and_are_searchable(
    empty_dir: Path, raw: bytes, description: str
) -> None:
    write_memory(empty_dir, "quirk", raw)
    store = MemoryStore(empty_dir)
    assert store.read("quirk").description == description
    assert [m.id for m in store.list()] == ["quirk"]
    assert store.problems() == []


def test_a_file_that_cannot_be_parsed_is_reported_with_line_and_column(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "broken", "---\nname: x\ndescription: a: b\n---\n")
    write_memory(empty_dir, "fine", CAT)
    store = MemoryStore(empty_dir)
    [problem] = store.problems()
    assert (problem.path, problem.line, problem.column) == (path, 3, 15)
    assert "broken.md:3:15" in problem.message
    assert [m.id for m in store.list()] == ["fine"]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"---\nname: x\ndescription: a: b\n---\nbody\n", id="invalid-yaml"),
        pytest.param(b"---\ndescription: x\n\nbody\n", id="no-closing"),
        pytest.param(b"---\n- a\n---\nbody\n", id="not-a-mapping"),
        pytest.param(b"---\ndescription: caf\xe9\n---\n", id="not-utf8"),
    ],
)
def test_a_file_that_cannot_be_parsed_is_never_rewritten(empty_dir: Path, raw: bytes) -> None:
    path = write_memory(empty_dir, "broken", raw)
    store = MemoryStore(empty_dir)
    for change in (lambda: store.write("broken", trust=0.9),
                   lambda: store.write("broken", body="new"),
                   lambda: store.feedback("broken", helpful=True)):
        with pytest.raises(InvalidMemory):
            change()
        assert path.read_bytes() == raw
    assert not (empty_dir / "MEMORY.md").exists()


def test_a_file_with_broken_yaml_is_not_archived(empty_dir: Path) -> None:
    raw = b"---\ndescription: a: b\nlocked: true\n---\n"
    path = write_memory(empty_dir, "broken", raw)
    with pytest.raises(InvalidMemory):
        MemoryStore(empty_dir).archive("broken", reason="tidy")
    assert path.read_bytes() == raw


def test_a_file_read_with_guesses_is_archived_byte_for_byte(empty_dir: Path) -> None:
    raw = b"---\ndescription: no closing line\n\nbody\n"
    write_memory(empty_dir, "guess", raw)
    memory = MemoryStore(empty_dir).archive("guess", reason="tidy")
    assert memory.path.read_bytes() == raw
    assert not (empty_dir / "guess.md").exists()


TRICKY = '---\n# mine\ndescription: "two\nfake: lines"\n---\nbody\n'


def test_a_layout_the_tool_cannot_edit_safely_is_refused_not_mangled(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "tricky", TRICKY)
    with pytest.raises(InvalidMemory, match="by hand"):
        MemoryStore(empty_dir).write("tricky", description="one line")
    assert path.read_text() == TRICKY


def test_new_keys_are_appended_even_to_a_layout_the_tool_cannot_edit(empty_dir: Path) -> None:
    write_memory(empty_dir, "tricky", TRICKY)
    memory = MemoryStore(empty_dir).archive("tricky", reason="tidy")
    text = memory.path.read_text()
    head, tail = TRICKY.rsplit("---\n", 1)
    assert text.startswith(head) and text.endswith("archiveReason: tidy\n---\n" + tail)


def test_a_file_whose_archive_marks_cannot_be_written_safely_is_moved_as_it_is(
    empty_dir: Path,
) -> None:
    raw = '---\n# mine\ndescription: d\narchiveReason: "old\nfake: reason"\n---\nbody\n'
    write_memory(empty_dir, "tricky", raw)
    memory = MemoryStore(empty_dir).archive("tricky", reason="tidy")
    assert memory.path.read_text() == raw
    assert not (empty_dir / "tricky.md").exists()


def test_an_oversized_file_is_reported_not_indexed(empty_dir: Path) -> None:
    write_memory(empty_dir, "huge", "---\ndescription: big\n---\n" + "x" * (513 * 1024))
    store = MemoryStore(empty_dir)
    assert store.list() == []
    assert "KB limit" in store.problems()[0].message


# writing: create


def test_write_creates_a_memory_with_the_given_fields(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir)
    memory = store.write(
        "project/api/auth_flow", description="How login works", body="Tokens last an hour.",
        category="project", tags=["api", "auth"], trust=0.6, aliases=["login"],
    )
    path = empty_dir / "project" / "api" / "auth_flow.md"
    text = path.read_text()
    assert text.startswith("---\ndescription: How login works\ncategory: project\ntrust: 0.6\n"
                           "aliases: [login]\ntags: [api, auth]\ncreated: ")
    assert text.endswith("---\n\nTokens last an hour.\n")
    assert memory.id == "project/api/auth_flow" and memory.category == "project"
    assert memory.created == memory.updated[:10]
    assert parse_moment(memory.updated) is not None and memory.updated.endswith("Z")
    assert memory.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert store.search("login")[0].id == "project/api/auth_flow"


def test_new_files_are_private_and_new_folders_too(empty_dir: Path) -> None:
    old = os.umask(0o022)
    try:
        MemoryStore(empty_dir).write("a/b/c", description="deep")
    finally:
        os.umask(old)
    assert stat.S_IMODE((empty_dir / "a" / "b" / "c.md").stat().st_mode) == 0o600
    assert stat.S_IMODE((empty_dir / "MEMORY.md").stat().st_mode) == 0o600
    for folder in (empty_dir / "a", empty_dir / "a" / "b", empty_dir.parent / ".memory.sage-mem"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_new_memory_needs_a_description(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir)
    with pytest.raises(InvalidMemory, match="description"):
        store.write("x", body="no description")
    assert list(empty_dir.iterdir()) == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"category": "pets"}, "category must be one of", id="category"),
        pytest.param({"trust": 1.5}, "trust", id="trust-above-1"),
        pytest.param({"trust": -0.1}, "trust", id="trust-below-0"),
        pytest.param({"trust": "high"}, "trust", id="trust-text"),
        pytest.param({"trust": True}, "trust", id="trust-bool"),
        pytest.param({"trust": float("nan")}, "trust", id="trust-nan"),
        pytest.param({"tags": [f"t{i}" for i in range(21)]}, "at most 20 tags", id="too-many-tags"),
        pytest.param({"tags": ["x" * 41]}, "longer than 40", id="tag-too-long"),
        pytest.param({"tags": "a,b"}, "list of text", id="tags-as-text"),
        pytest.param({"tags": [1, 2]}, "list of text", id="tags-not-text"),
        pytest.param({"aliases": "cat"}, "list of text", id="aliases-as-text"),
        pytest.param({"baseline": "yes"}, "true or false", id="baseline"),
        pytest.param({"locked": 1}, "true or false", id="locked"),
        pytest.param({"baseline_priority": 1.5}, "integer", id="baseline-priority"),
        pytest.param({"description": "   "}, "empty", id="blank-description"),
        pytest.param({"name": 3}, "text", id="name-not-text"),
    ],
)
def test_bad_values_are_refused_before_anything_is_written(
    store: MemoryStore, memory_dir: Path, fields: dict[str, object], message: str
) -> None:
    before = tree(memory_dir)
    for memory_id in ("user_cat_zh", "brand_new"):
        arguments = {"description": "d", **fields}
        with pytest.raises(InvalidMemory, match=message):
            store.write(memory_id, **arguments)  # type: ignore[arg-type]
    assert tree(memory_dir) == before


@pytest.mark.parametrize("memory_id", [pytest.param("x" * 200, id="ascii"),
                                       pytest.param("猫" * 80, id="chinese-240-bytes")])
def test_the_longest_ids_can_be_written(empty_dir: Path, memory_id: str) -> None:
    store = MemoryStore(empty_dir)
    store.write(memory_id, description="long")
    assert store.read(memory_id).description == "long"
    assert store.archive(memory_id, reason="x").id == "archive/" + memory_id


def test_a_new_id_must_be_portable(empty_dir: Path) -> None:
    with pytest.raises(InvalidId, match="Windows"):
        MemoryStore(empty_dir).write("what?", description="d")


# writing: update


def test_an_update_changes_only_the_given_fields_and_updated(
    store: MemoryStore, memory_dir: Path
) -> None:
    path = memory_dir / "feedback_tests_first.md"
    before = path.read_text().splitlines()
    memory = store.write("feedback_tests_first", trust=0.9, tags=["testing"])
    after = path.read_text().splitlines()
    changed = {b for a, b in zip(before, after, strict=True) if a != b}
    assert changed == {"trust: 0.9", "tags: [testing]", f"updated: {memory.updated}"}
    assert memory.trust == 0.9 and memory.tags == ("testing",)
    assert memory.description == store.read("feedback_tests_first").description


def test_an_update_with_nothing_new_does_not_touch_the_file(
    store: MemoryStore, memory_dir: Path
) -> None:
    path = memory_dir / "feedback_tests_first.md"
    raw = path.read_bytes()
    body = store.read("feedback_tests_first").body
    store.write("feedback_tests_first", trust=0.7, category="feedback", body=body.strip())
    assert path.read_bytes() == raw


@pytest.mark.parametrize(
    ("original", "key"),
    [
        pytest.param("---\ndescription: d\ntype: user\n---\nB\n", "type", id="type"),
        pytest.param(
            "---\ndescription: d\nmetadata:\n  type: user\n---\nB\n", "metadata", id="metadata"
        ),
        pytest.param("---\ndescription: d\ncategory: user\n---\nB\n", "category", id="category"),
        pytest.param("---\ndescription: d\n---\nB\n", "category", id="absent"),
    ],
)
def test_a_category_change_keeps_the_key_the_file_uses(
    empty_dir: Path, original: str, key: str
) -> None:
    path = write_memory(empty_dir, "m", original)
    store = MemoryStore(empty_dir)
    memory = store.write("m", category="project")
    assert memory.category == "project"
    text = path.read_text()
    assert f"\n{key}:" in text
    assert text.count("project") == 1
    if key != "category":
        assert "category:" not in text


def test_a_claude_code_file_keeps_its_modified_key(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "m", "---\nname: n\ndescription: d\ntype: user\n"
                                        "modified: 2026-01-01T00:00:00Z\n---\nB\n")
    memory = MemoryStore(empty_dir).write("m", description="new")
    text = path.read_text()
    assert "updated:" not in text and f"modified: {memory.updated}\n" in text
    assert memory.updated != "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("original", "body", "expected_tail"),
    [
        pytest.param(CAT, "Black now.", "---\n\nBlack now.\n", id="keeps-blank-line"),
        pytest.param(CAT.replace("---\n\n", "---\n"), "Black.\n\n\n", "---\nBlack.\n",
                     id="keeps-no-blank-line"),
        pytest.param(CAT.replace("\n", "\r\n"), "Black\nnow.", "---\r\n\r\nBlack\r\nnow.\r\n",
                     id="crlf-file-stays-crlf"),
        pytest.param(CAT, "Line one\r\nline two\r", "---\n\nLine one\nline two\n",
                     id="crlf-body-into-lf-file"),
        pytest.param(CAT, "", "---\n", id="empty-body"),
        pytest.param("# Notes\nText.\n", "New text.", "---\n\nNew text.\n", id="no-frontmatter"),
        pytest.param("---\ndescription: d\n---", "Text.", "---\n\nText.\n", id="no-body-yet"),
    ],
)
def test_a_new_body_keeps_the_files_line_endings_and_layout(
    empty_dir: Path, original: str, body: str, expected_tail: str
) -> None:
    path = write_memory(empty_dir, "m", original)
    MemoryStore(empty_dir).write("m", body=body)
    assert path.read_bytes().decode().endswith(expected_tail)


def test_an_update_keeps_bom_crlf_comments_and_unknown_keys(empty_dir: Path) -> None:
    original = ("\ufeff---\r\n# mine\r\nname: n\r\ndescription: d   # note\r\ncustom:\r\n"
                "  deep: [1, 2]\r\n---\r\n\r\n芝麻\r\n")
    path = write_memory(empty_dir, "m", original)
    memory = MemoryStore(empty_dir).write("m", trust=0.8, tags=["猫"])
    assert path.read_bytes().decode() == original.replace(
        "  deep: [1, 2]\r\n",
        f"  deep: [1, 2]\r\ntrust: 0.8\r\ntags: [猫]\r\nupdated: {memory.updated}\r\n")


def test_a_file_without_frontmatter_gets_one_on_its_first_update(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "note", "# Note\n\nPlain text.\n")
    store = MemoryStore(empty_dir)
    store.feedback("note", helpful=True)
    assert path.read_text() == "---\ntrust: 0.6\n---\n\n# Note\n\nPlain text.\n"


def test_a_write_with_a_stale_sha256_is_refused_and_the_file_untouched(
    store: MemoryStore, memory_dir: Path
) -> None:
    memory = store.read("user_cat_zh")
    path = memory_dir / "user_cat_zh.md"
    path.write_bytes(path.read_bytes() + b"editor was here\n")
    edited = path.read_bytes()
    with pytest.raises(ConflictError) as caught:
        store.write("user_cat_zh", trust=0.9, expected_sha256=memory.sha256)
    assert caught.value.actual_sha256 == hashlib.sha256(edited).hexdigest()
    assert path.read_bytes() == edited


def test_a_write_with_the_current_sha256_goes_through(store: MemoryStore) -> None:
    memory = store.read("user_cat_zh")
    updated = store.write("user_cat_zh", trust=0.9, expected_sha256=memory.sha256.upper())
    assert updated.trust == 0.9


def test_a_write_expecting_a_file_that_was_removed_is_refused(
    store: MemoryStore, memory_dir: Path
) -> None:
    memory = store.read("user_cat_zh")
    (memory_dir / "user_cat_zh.md").unlink()
    with pytest.raises(ConflictError, match="removed"):
        store.write("user_cat_zh", description="d", expected_sha256=memory.sha256)
    assert not (memory_dir / "user_cat_zh.md").exists()


def test_an_empty_expected_sha256_means_the_memory_must_be_new(store: MemoryStore) -> None:
    store.write("brand_new", description="d", expected_sha256="")
    with pytest.raises(ConflictError):
        store.write("brand_new", description="e", expected_sha256="")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s: s.write("locked", trust=0.9), id="write"),
        pytest.param(lambda s: s.write("locked", locked=False), id="unlock"),
        pytest.param(lambda s: s.archive("locked", reason="old"), id="archive"),
        pytest.param(lambda s: s.feedback("locked", helpful=False), id="feedback"),
    ],
)
def test_a_locked_memory_refuses_every_change(empty_dir: Path, change) -> None:
    path = write_memory(empty_dir, "locked", "---\ndescription: d\nlocked: true\n---\nB\n")
    store = MemoryStore(empty_dir)
    with pytest.raises(MemoryLocked):
        change(store)
    assert path.read_bytes() == b"---\ndescription: d\nlocked: true\n---\nB\n"
    assert store.list()[0].id == "locked"


# ids that escape, through the store


@pytest.mark.parametrize(
    "memory_id",
    [pytest.param("../escape", id="parent"), pytest.param("%2e%2e%2fescape", id="url-encoded"),
     pytest.param("/tmp/escape", id="absolute"), pytest.param("a\\..\\escape", id="backslash"),
     pytest.param("MEMORY", id="index-file"), pytest.param("autodream/x", id="autodream")],
)
def test_writing_an_escaping_id_is_refused(
    store: MemoryStore, memory_dir: Path, memory_id: str
) -> None:
    before = tree(memory_dir.parent)
    with pytest.raises(InvalidId):
        store.write(memory_id, description="d")
    assert tree(memory_dir.parent) == before


@pytest.mark.parametrize("how", [pytest.param("file", id="symlinked-file"),
                                 pytest.param("folder", id="symlinked-folder")])
def test_reading_and_writing_through_a_symlink_never_touch_the_outside_target(
    empty_dir: Path, tmp_path: Path, how: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("---\ndescription: secret\n---\nkeys\n")
    if how == "file":
        (empty_dir / "leak.md").symlink_to(secret)
        memory_id = "leak"
    else:
        (empty_dir / "linked").symlink_to(outside, target_is_directory=True)
        memory_id = "linked/secret"
    store = MemoryStore(empty_dir)
    assert store.search("secret") == []
    before = tree(outside)
    for action in (lambda: store.read(memory_id),
                   lambda: store.write(memory_id, description="pwned", body="pwned"),
                   lambda: store.write(memory_id.replace("secret", "new"), description="x"),
                   lambda: store.feedback(memory_id, helpful=True),
                   lambda: store.archive(memory_id, reason="x")):
        with pytest.raises(InvalidId):
            action()
    assert tree(outside) == before
    if how == "file":
        assert any("symlink" in p.message for p in store.problems())


def test_a_memory_with_an_nfd_file_name_is_read_and_written_by_its_nfc_id(empty_dir: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    path = write_memory(empty_dir, nfd, CAT)
    store = MemoryStore(empty_dir)
    [memory] = store.list()
    assert memory.id == "café"
    assert store.read(memory.id).path == path
    store.write(memory.id, trust=0.9)
    assert set(os.listdir(empty_dir)) == {nfd + ".md", "MEMORY.md"}
    assert store.read("café").trust == 0.9


# archive


def test_archive_moves_the_file_and_never_deletes(store: MemoryStore, memory_dir: Path) -> None:
    original = (memory_dir / "user_cat_zh.md").read_bytes()
    memory = store.archive("user_cat_zh", reason="the cat moved\n away")
    target = memory_dir / "archive" / "user_cat_zh.md"
    assert not (memory_dir / "user_cat_zh.md").exists()
    assert memory.id == "archive/user_cat_zh" and memory.archived
    text = target.read_text()
    assert "archiveReason: the cat moved away\n" in text
    assert text.endswith(original.decode().split("---\n", 2)[2])
    assert "user_cat_zh" not in {h.id for h in store.search("猫")}
    assert "archive/user_cat_zh" in {h.id for h in store.search("猫", archived=True)}
    assert store.read("archive/user_cat_zh").archived
    assert "user_cat_zh" not in (memory_dir / "MEMORY.md").read_text()


def test_archive_needs_a_reason(store: MemoryStore, memory_dir: Path) -> None:
    for reason in ("", "   ", None):
        with pytest.raises(InvalidMemory, match="reason"):
            store.archive("user_cat_zh", reason=reason)  # type: ignore[arg-type]
    assert (memory_dir / "user_cat_zh.md").exists()


def test_archive_never_overwrites_an_archived_file_of_the_same_name(
    store: MemoryStore, memory_dir: Path
) -> None:
    earlier = write_memory(memory_dir, "archive/user_cat_zh", "---\ndescription: earlier\n---\n")
    write_memory(memory_dir, "archive/user_cat_zh-2", "---\ndescription: earlier 2\n---\n")
    memory = store.archive("user_cat_zh", reason="dup")
    assert memory.id == "archive/user_cat_zh-3"
    assert earlier.read_text() == "---\ndescription: earlier\n---\n"
    assert len(list((memory_dir / "archive").iterdir())) == 3


def test_archive_keeps_subfolders_and_moves_stats(store: MemoryStore, memory_dir: Path) -> None:
    store.write("project/api/auth", description="auth flow")
    store.note_used(["project/api/auth"])
    memory = store.archive("project/api/auth", reason="done")
    assert memory.id == "archive/project/api/auth"
    stats = json.loads((memory_dir.parent / ".memory.sage-mem" / "stats.json").read_text())
    assert stats["archive/project/api/auth"]["retrievals"] == 1
    assert "project/api/auth" not in stats


def test_archiving_a_missing_memory_is_not_found(store: MemoryStore) -> None:
    with pytest.raises(MemoryNotFound):
        store.archive("nope", reason="x")


def test_archived_memories_cannot_be_written_or_given_feedback(store: MemoryStore) -> None:
    store.archive("user_cat_zh", reason="x")
    with pytest.raises(InvalidId):
        store.write("archive/user_cat_zh", trust=0.1)
    with pytest.raises(InvalidMemory, match="archived"):
        store.feedback("archive/user_cat_zh", helpful=True)


# feedback


@pytest.mark.parametrize(("helpful", "trust"), [pytest.param(True, 0.6, id="helpful"),
                                                pytest.param(False, 0.4, id="unhelpful")])
def test_feedback_moves_trust(store: MemoryStore, helpful: bool, trust: float) -> None:
    memory = store.feedback("user_cat_zh", helpful=helpful)
    assert memory.trust == trust
    assert store.read("user_cat_zh").trust == trust
    assert store.search("芝麻")[0].trust == trust


def test_feedback_stays_within_0_and_1(store: MemoryStore) -> None:
    for _ in range(30):
        memory = store.feedback("user_cat_zh", helpful=True)
    assert 0.99 < memory.trust <= 1.0
    for _ in range(60):
        memory = store.feedback("user_cat_zh", helpful=False)
    assert 0.0 <= memory.trust < 0.01


def test_feedback_must_be_a_bool(store: MemoryStore) -> None:
    with pytest.raises(InvalidMemory):
        store.feedback("user_cat_zh", helpful="yes")  # type: ignore[arg-type]


def test_feedback_is_counted_in_the_state_folder(store: MemoryStore, memory_dir: Path) -> None:
    store.feedback("user_cat_zh", helpful=True)
    store.feedback("user_cat_zh", helpful=False)
    stats_file = memory_dir.parent / ".memory.sage-mem" / "stats.json"
    stats = json.loads(stats_file.read_text())
    assert stats["user_cat_zh"]["helpful"] == 1 and stats["user_cat_zh"]["unhelpful"] == 1
    assert stat.S_IMODE(stats_file.stat().st_mode) == 0o600


def test_concurrent_feedback_loses_no_step(memory_dir: Path) -> None:
    stores = [MemoryStore(memory_dir) for _ in range(4)]
    errors: list[BaseException] = []

    def give(store: MemoryStore) -> None:
        try:
            for _ in range(3):
                store.feedback("user_cat_zh", helpful=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=give, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = 0.5
    for _ in range(12):
        expected = round(expected + (1 - expected) * 0.2, 3)
    assert MemoryStore(memory_dir).read("user_cat_zh").trust == pytest.approx(expected, abs=0.01)


# MEMORY.md and the state folder


def test_memory_md_is_regenerated_after_every_change(store: MemoryStore, memory_dir: Path) -> None:
    index = memory_dir / "MEMORY.md"
    store.write("user_dog", description="the dog is called Bean", category="user")
    assert "- [user_dog](user_dog.md) — the dog is called Bean" in index.read_text()
    store.write("user_dog", description="dog Bean")
    assert "- [user_dog](user_dog.md) — dog Bean" in index.read_text()
    store.write("user_dog", summary="a summary never hides the description")
    assert "- [user_dog](user_dog.md) — dog Bean" in index.read_text()
    store.archive("user_dog", reason="gone")
    assert "user_dog" not in index.read_text()
    assert index.read_text() == catalog_module.render(store.list())


def test_memory_md_is_deterministic(memory_dir: Path, tmp_path: Path) -> None:
    store = MemoryStore(memory_dir)
    assert store.regenerate_index() is True
    first = (memory_dir / "MEMORY.md").read_bytes()
    assert store.regenerate_index() is False
    assert MemoryStore(memory_dir).regenerate_index() is False
    assert (memory_dir / "MEMORY.md").read_bytes() == first
    lines = first.decode().splitlines()
    assert lines.index("## user") < lines.index("## feedback") < lines.index("## project")


def test_nothing_volatile_is_written_into_the_memory_folder(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir)
    store.regenerate_index()
    before = tree(memory_dir)
    store.search("猫")
    store.search("tests", category="feedback")
    store.note_used(["user_cat_zh", "feedback_tests_first"])
    store.list()
    store.read("user_cat_zh")
    assert tree(memory_dir) == before
    store.feedback("user_cat_zh", helpful=True)
    store.write("feedback_tests_first", description="tests before code")
    after = tree(memory_dir)
    assert set(after) == set(before)
    assert {k for k in after if after[k] != before[k]} == {
        "user_cat_zh.md", "feedback_tests_first.md", "MEMORY.md"}
    assert b"tests before code" in after["MEMORY.md"]
    state = memory_dir.parent / ".memory.sage-mem"
    assert (state / "stats.json").is_file()


def test_a_failed_write_leaves_the_memory_and_no_temp_file(
    store: MemoryStore, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = tree(memory_dir)

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    # Every way the final rename can go: an atomic swap or no-clobber rename, a plain
    # rename, a hard link.
    monkeypatch.setattr("sage_mem.disk.safe_io._rename_call", boom)
    monkeypatch.setattr("sage_mem.disk.safe_io.os.replace", boom)
    monkeypatch.setattr("sage_mem.disk.safe_io.os.link", boom)
    with pytest.raises(OSError):
        store.write("user_cat_zh", trust=0.9)
    with pytest.raises(OSError):
        store.write("brand_new", description="d")
    monkeypatch.undo()
    assert tree(memory_dir) == before
    assert store.read("user_cat_zh").trust == 0.5


@pytest.mark.parametrize(
    "stats",
    [
        pytest.param('{"user_cat_zh": {"retrievals": "many"}, "x": 3}', id="odd-values"),
        pytest.param('{"user_cat_zh": {"retrievals": NaN}}', id="nan"),
        pytest.param("[1, 2]", id="not-a-mapping"),
        pytest.param("{broken", id="not-json"),
    ],
)
def test_a_hand_edited_stats_file_never_breaks_a_write(empty_dir: Path, stats: str) -> None:
    state = empty_dir.parent / ".memory.sage-mem"
    state.mkdir()
    (state / "stats.json").write_text(stats)
    for i in range(catalog_module.MAX_LINES // 2 + 1):
        write_memory(empty_dir, f"m{i:03}", f"---\ndescription: memory {i}\n---\n")
    write_memory(empty_dir, "user_cat_zh", CAT)
    store = MemoryStore(empty_dir)
    store.note_used(["user_cat_zh"])
    store.feedback("user_cat_zh", helpful=True)
    assert store.stats.retrievals("user_cat_zh") == 1
    assert "user_cat_zh" in (empty_dir / "MEMORY.md").read_text()


def test_a_fifo_named_md_is_reported_and_does_not_hang_the_load(memory_dir: Path) -> None:
    import os

    os.mkfifo(memory_dir / "user_pipe.md")
    store = MemoryStore(memory_dir)
    assert "user_pipe" not in {m.id for m in store.list()}
    assert any("not a regular file" in p.message for p in store.problems())


@pytest.mark.parametrize("change", ["feedback", "write"])
def test_a_trust_only_change_keeps_updated(empty_dir: Path, change: str) -> None:
    """`updated` dates what a memory says: feedback (or a write of trust alone) changes the
    trust line and nothing else, so an "unhelpful" never makes a memory look fresher;
    any other change still stamps it."""
    original = ("---\ndescription: 猫叫芝麻\ncategory: user\ncreated: 2025-01-02\n"
                "updated: 2025-01-02T08:00:00Z\n---\n\n橘猫。\n")
    path = write_memory(empty_dir, "user_cat", original)
    store = MemoryStore(empty_dir)
    if change == "feedback":
        memory = store.feedback("user_cat", helpful=False)
    else:
        memory = store.write("user_cat", trust=0.4)
    assert memory.updated == "2025-01-02T08:00:00Z"
    assert path.read_text(encoding="utf-8") == original.replace(
        "---\n\n", f"trust: {memory.trust:g}\n---\n\n")
    assert store.write("user_cat", tags=["pets"]).updated != "2025-01-02T08:00:00Z"


def test_a_memory_just_deleted_is_not_offered_as_its_own_near_miss(empty_dir: Path) -> None:
    """Read before the watcher sees a delete (the MCP server, within ~0.1 s): "no memory 'x'"
    must not go on "(did you mean 'x'?)", the id the index still holds."""
    path = write_memory(empty_dir, "project_launch_plan",
                        "---\ndescription: the launch plan\ncategory: project\n---\n\nDraft.\n")
    store = MemoryStore(empty_dir, watch=False)
    assert store.read("project_launch_plan").description == "the launch plan"
    path.unlink()
    with pytest.raises(MemoryNotFound) as raised:
        store.read("project_launch_plan")
    assert str(raised.value) == "no memory 'project_launch_plan'"
