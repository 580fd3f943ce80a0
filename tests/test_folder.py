"""The memory folder: ids <-> paths, reserved names, ids that try to escape, the state folder."""

from __future__ import annotations

import json
import os
import stat
import unicodedata
from pathlib import Path

import pytest
from support import write_memory

from sage_mem.disk.folder import MemoryFolder, default_folder, is_editor_junk, state_dir_name
from sage_mem.errors import FolderError, InvalidId

MEMORY = "---\ndescription: d\n---\n"


@pytest.fixture
def folder(empty_dir: Path) -> MemoryFolder:
    return MemoryFolder(empty_dir)


# ids and paths


@pytest.mark.parametrize(
    "memory_id",
    [
        pytest.param("user_cat", id="root"),
        pytest.param("project/api/auth_flow", id="subfolders"),
        pytest.param("my notes", id="space"),
        pytest.param("用户/猫", id="chinese"),
        pytest.param("100%_done", id="percent"),
        pytest.param("archive", id="file-named-archive-at-root"),
        pytest.param("notes/MEMORY", id="memory-md-in-a-subfolder"),
        pytest.param("café-ñ", id="accents"),
    ],
)
def test_ids_and_paths_map_both_ways(folder: MemoryFolder, memory_id: str) -> None:
    path = folder.path_for(memory_id)
    *parents, leaf = memory_id.split("/")
    assert path == folder.root.joinpath(*parents, leaf + ".md")
    assert folder.id_for(path) == memory_id
    write_memory(folder.root, memory_id, MEMORY)
    assert list(folder.iter_files()) == [path]


def test_an_id_may_end_in_dot_md(folder: MemoryFolder) -> None:
    assert folder.path_for("user_cat.md") == folder.root / "user_cat.md"
    assert folder.normalize_id("user_cat.md") == "user_cat"


def test_an_nfd_file_name_is_found_under_its_nfc_id(folder: MemoryFolder) -> None:
    nfc = "café/résumé"
    nfd = unicodedata.normalize("NFD", nfc)
    path = write_memory(folder.root, nfd, MEMORY)
    assert folder.id_for(path) == nfc
    assert folder.path_for(nfc) == path
    assert folder.path_for(nfd) == path
    assert folder.path_for("café/new") == path.parent / "new.md"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("MEMORY.md", id="index-file"),
        pytest.param("archive/x.md", id="archive"),
        pytest.param("autodream/run.md", id="autodream"),
        pytest.param(".hidden.md", id="dot-file"),
        pytest.param(".git/x.md", id="dot-folder"),
        pytest.param("sub/.obsidian/x.md", id="nested-dot-folder"),
        pytest.param("#x.md", id="emacs-autosave"),
        pytest.param("~x.md", id="tilde-lock"),
        pytest.param("x.md~", id="backup"),
        pytest.param("x.md.swp", id="vim-swap"),
        pytest.param(".x.md.swp", id="vim-dot-swap"),
        pytest.param("4913", id="vim-probe"),
        pytest.param("x.md.tmp", id="temp"),
        pytest.param(".x.md.123.abcd.tmp", id="our-temp"),
        pytest.param("x.txt", id="not-markdown"),
        pytest.param("x.MD", id="upper-case-suffix"),
        pytest.param("x.md.orig", id="merge-orig"),
        # `git mergetool` writes the versions beside the file while the tool is open.
        pytest.param("user_cat_LOCAL_12345.md", id="mergetool-local"),
        pytest.param("user_cat_REMOTE_12345.md", id="mergetool-remote"),
        pytest.param("project/x_BASE_7.md", id="mergetool-base"),
        pytest.param("猫_BACKUP_40211.md", id="mergetool-backup"),
    ],
)
def test_reserved_and_editor_files_are_never_memories(folder: MemoryFolder, name: str) -> None:
    path = folder.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MEMORY)
    assert folder.id_for(path) is None
    assert list(folder.iter_files()) == []


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a.swp", id="swp"),
        pytest.param(".#a.md", id="emacs-lock"),
        pytest.param("a~", id="tilde"),
        pytest.param("4913", id="vim-4913"),
        pytest.param("#a.md#", id="emacs-autosave"),
    ],
)
def test_editor_junk_is_recognized(name: str) -> None:
    assert is_editor_junk(name)


@pytest.mark.parametrize("name", ["user_local_12.md", "project_BASE_plan.md", "LOCAL_12.md",
                                  "x_REMOTE_12a.md"])
def test_names_near_a_mergetool_copy_are_memories(folder: MemoryFolder, name: str) -> None:
    path = write_memory(folder.root, name[:-3], MEMORY)
    assert list(folder.iter_files()) == [path]


def test_archived_files_are_walked_only_when_asked(folder: MemoryFolder) -> None:
    write_memory(folder.root, "live", MEMORY)
    archived = write_memory(folder.root, "archive/old/gone", MEMORY)
    write_memory(folder.root, "archive/.x", MEMORY)
    assert [p.name for p in folder.iter_files()] == ["live.md"]
    assert list(folder.iter_files(archived=True)) == [archived]
    assert folder.archived_id_for(archived) == "archive/old/gone"
    assert folder.id_for(archived) is None


def test_iter_files_is_sorted_by_path(folder: MemoryFolder) -> None:
    ids = ["b", "a", "c/z", "c/a", "ab/x", "z", "c/b/y", "猫", "A"]
    for memory_id in ids:
        write_memory(folder.root, memory_id, MEMORY)
    found = [folder.id_for(p) for p in folder.iter_files()]
    assert found == ["A", "a", "ab/x", "b", "c/a", "c/b/y", "c/z", "z", "猫"]
    assert found == [folder.id_for(p) for p in folder.iter_files()]


def test_iter_files_does_not_follow_symlinked_folders(folder: MemoryFolder, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text(MEMORY)
    (folder.root / "linked").symlink_to(outside, target_is_directory=True)
    assert list(folder.iter_files()) == []


WALKED = [
    "live.md",
    "archive.md",
    "autodream.md",
    "sub/deep/x.md",
    "sub/MEMORY.md",
    "sub/autodream/x.md",
    "sub/archive/x.md",
    "notes.md/inner.md",
    "alias.md",
    "dangling.md",
]
WALKED_ARCHIVED = [
    "archive/old.md",
    "archive/MEMORY.md",
    "archive/sub/y.md",
    "archive/autodream/z.md",
    "archive/archive/w.md",
]
NOT_WALKED = [
    "MEMORY.md",
    "autodream/run.md",
    ".git/x.md",
    ".obsidian/x.md",
    "sub/.hidden/x.md",
    "archive/.x/y.md",
    "4913/x.md",
    "x.md~/x.md",
    "#x#/x.md",
    "~lock/x.md",
    "a.bak/x.md",
    "a.swp/x.md",
    "sub/4913/x.md",
    "archive/4913/x.md",
    "archive/x.md~/y.md",
    "x.MD",
    "x.txt",
    ".x.md",
    "#x.md#",
    "x.md.swp",
    "files/x.md~",
    "files/4913",
    "linked/x.md",
    "linked_in/x.md",
    "sub/linked/x.md",
]


def _edge_case_folder(root: Path, outside: Path, *, archive_link: bool) -> None:
    outside.mkdir()
    (outside / "x.md").write_text(MEMORY, encoding="utf-8")
    (outside / "old.md").write_text(MEMORY, encoding="utf-8")
    for rel in WALKED + WALKED_ARCHIVED + NOT_WALKED:
        if rel in ("alias.md", "dangling.md") or rel.startswith(("linked", "sub/linked")):
            continue
        if archive_link and rel.startswith("archive/"):
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MEMORY, encoding="utf-8")
    (root / "alias.md").symlink_to(root / "live.md")
    (root / "dangling.md").symlink_to(root / "gone.md")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "linked_in").symlink_to(root / "sub", target_is_directory=True)
    (root / "sub" / "linked").symlink_to(root / "sub" / "deep", target_is_directory=True)
    if archive_link:
        (root / "archive").symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize(
    "archive_link",
    [pytest.param(False, id="archive-folder"), pytest.param(True, id="archive-symlinked")],
)
def test_the_cache_scan_and_iter_files_find_the_same_memory_files(
    folder: MemoryFolder, tmp_path: Path, archive_link: bool
) -> None:
    from sage_mem.search import cache

    _edge_case_folder(folder.root, tmp_path / "outside", archive_link=archive_link)

    def rel(paths: object) -> set[str]:
        return {p.relative_to(folder.root).as_posix() for p in paths}  # type: ignore[attr-defined]

    live, archived = rel(folder.iter_files()), rel(folder.iter_files(archived=True))
    assert live == set(WALKED)
    # A symlinked archive/ is not followed, like any symlinked folder.
    assert archived == (set() if archive_link else set(WALKED_ARCHIVED))
    assert set(cache.scan(folder)) == live | archived


@pytest.mark.parametrize(
    ("under", "archived"),
    [
        pytest.param("linked_in", False, id="symlinked-folder"),
        pytest.param("sub/linked", False, id="nested-symlinked-folder"),
        pytest.param(".obsidian", False, id="dot-folder"),
        pytest.param("4913", False, id="editor-junk-folder"),
        pytest.param("autodream", False, id="reports-folder"),
        pytest.param("archive", False, id="archive-for-live-memories"),
        pytest.param("sub", True, id="live-folder-for-archived-memories"),
    ],
)
def test_a_partial_walk_finds_nothing_the_whole_walk_would_not_enter(
    folder: MemoryFolder, tmp_path: Path, under: str, archived: bool
) -> None:
    _edge_case_folder(folder.root, tmp_path / "outside", archive_link=False)
    assert list(folder.iter_files(archived=archived, under=folder.root / under)) == []


def test_a_partial_walk_finds_what_the_whole_walk_finds_there(
    folder: MemoryFolder, tmp_path: Path
) -> None:
    _edge_case_folder(folder.root, tmp_path / "outside", archive_link=False)
    for under, archived in (("sub", False), ("archive", True), ("archive/sub", True)):
        start = folder.root / under
        whole = [p for p in folder.iter_files(archived=archived) if p.is_relative_to(start)]
        assert list(folder.iter_files(archived=archived, under=folder.root / under)) == whole


# ids that escape


@pytest.mark.parametrize(
    "memory_id",
    [
        pytest.param("..", id="dot-dot"),
        pytest.param("../x", id="parent"),
        pytest.param("a/../../x", id="parent-in-the-middle"),
        pytest.param("a/./b", id="dot-part"),
        pytest.param("a//b", id="empty-part"),
        pytest.param("a/", id="trailing-slash"),
        pytest.param("/etc/passwd", id="absolute"),
        pytest.param("C:/Windows/x", id="drive-letter"),
        pytest.param("%2e%2e%2fx", id="url-encoded-traversal"),
        pytest.param("%2E%2E/x", id="url-encoded-upper-case"),
        pytest.param("..%2fx", id="url-encoded-slash"),
        pytest.param("%252e%252e%252fx", id="double-encoded"),
        pytest.param("%25252e%25252e%25252fx", id="triple-encoded"),
        pytest.param("%2fetc%2fpasswd", id="url-encoded-absolute"),
        pytest.param("..\\x", id="backslash-traversal"),
        pytest.param("a\\b", id="backslash"),
        pytest.param("%5c..%5cx", id="url-encoded-backslash"),
        pytest.param("a\x00b", id="nul"),
        pytest.param("a%00b", id="url-encoded-nul"),
        pytest.param("a\nb", id="newline"),
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param(".md", id="only-suffix"),
        pytest.param(".hidden", id="dot-file"),
        pytest.param("a/.git/config", id="dot-folder"),
        pytest.param("MEMORY", id="index-file"),
        pytest.param("MEMORY.md", id="index-file-with-suffix"),
        pytest.param("autodream/x", id="autodream"),
        pytest.param("archive/x", id="archive-without-leave"),
        pytest.param("x.swp", id="editor-swap"),
        pytest.param("x" * 201, id="too-long"),
        pytest.param("a/" + "x" * 241, id="part-too-long"),
    ],
)
def test_ids_that_escape_or_are_reserved_are_refused(folder: MemoryFolder, memory_id: str) -> None:
    with pytest.raises(InvalidId):
        folder.path_for(memory_id)


@pytest.mark.parametrize("memory_id", [pytest.param(None, id="none"), pytest.param(3, id="int")])
def test_an_id_must_be_text(folder: MemoryFolder, memory_id: object) -> None:
    with pytest.raises(InvalidId, match="text"):
        folder.normalize_id(memory_id)  # type: ignore[arg-type]


def test_archived_ids_are_allowed_only_for_reading(folder: MemoryFolder) -> None:
    assert folder.path_for("archive/x", allow_archived=True) == folder.root / "archive" / "x.md"
    with pytest.raises(InvalidId):
        folder.path_for("archive/../../x", allow_archived=True)


@pytest.mark.parametrize(
    "memory_id",
    [pytest.param("a:b", id="colon"), pytest.param("what?", id="question-mark"),
     pytest.param('say "hi"', id="quotes"), pytest.param("a|b", id="pipe"),
     pytest.param("trailing ", id="trailing-space"), pytest.param(" leading", id="leading-space"),
     pytest.param("dir./x", id="trailing-dot"), pytest.param("a/b /c", id="space-in-folder"),
     # Windows' device names, whatever the case or extension: git for Windows cannot check
     # out `aux.md` or `con/x.md` ("invalid path").
     pytest.param("con", id="device-con"), pytest.param("project/AUX", id="device-aux"),
     pytest.param("nul.notes", id="device-nul-with-extension"), pytest.param("COM1", id="com1"),
     pytest.param("lpt9/x", id="device-as-folder")],
)
def test_new_ids_must_be_portable_to_windows_but_existing_files_stay_readable(
    folder: MemoryFolder, memory_id: str
) -> None:
    write_memory(folder.root, memory_id, MEMORY)
    assert folder.id_for(folder.path_for(memory_id)) == memory_id
    with pytest.raises(InvalidId, match="Windows"):
        folder.check_new_id(memory_id)


@pytest.mark.parametrize(
    "memory_id",
    [pytest.param("user_\u202eevil", id="bidi-override"),
     pytest.param("user_\u2066x", id="bidi-isolate"),
     pytest.param("user_a\u200bb", id="zero-width-space"),
     pytest.param("user_a\u2028b", id="line-separator"),
     pytest.param("project/\u202edocs", id="bidi-in-folder"),
     pytest.param("user_\U000e0041", id="unicode-tag")],
)
def test_new_ids_hold_no_character_that_hides_or_turns_text(
    folder: MemoryFolder, memory_id: str
) -> None:
    """A new memory (an agent's memory_write, a dream, an import) may not be named with a
    bidi control or an invisible character: `ls`, `git status` and a review's diff would show
    a name other than the file's (the audit's unsafe-name). A file already so named, by a
    person, stays readable."""
    write_memory(folder.root, memory_id, MEMORY)
    assert folder.id_for(folder.path_for(memory_id)) == memory_id
    with pytest.raises(InvalidId, match="U\\+"):
        folder.check_new_id(memory_id)
    folder.check_new_id("user_\u5bb6\u200d\u4eba")  # the joiners stay (emoji, Persian, Indic)


def test_a_symlinked_file_pointing_outside_is_refused(folder: MemoryFolder, tmp_path: Path) -> None:
    target = tmp_path / "secret.md"
    target.write_text(MEMORY)
    (folder.root / "leak.md").symlink_to(target)
    with pytest.raises(InvalidId, match="symlink"):
        folder.path_for("leak")


def test_a_symlinked_folder_pointing_outside_is_refused(
    folder: MemoryFolder, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text(MEMORY)
    (folder.root / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidId, match="symlink"):
        folder.path_for("linked/x")
    with pytest.raises(InvalidId, match="symlink"):
        folder.path_for("linked/new/deeper")


def test_a_symlink_inside_the_folder_is_allowed(folder: MemoryFolder) -> None:
    write_memory(folder.root, "real", MEMORY)
    (folder.root / "alias.md").symlink_to(folder.root / "real.md")
    assert folder.path_for("alias") == folder.root / "alias.md"


# the state folder


def test_the_state_folder_is_beside_the_memory_folder_and_named_after_it(
    folder: MemoryFolder,
) -> None:
    assert folder.state_dir == folder.root.parent / ".memory.sage-mem"
    assert folder.state_path("stats.json") == folder.state_dir / "stats.json"


def test_the_state_folder_records_its_memory_folder(folder: MemoryFolder) -> None:
    folder.state_path("stats.json")
    owner = json.loads((folder.state_dir / "owner.json").read_text(encoding="utf-8"))
    assert owner == {"memoryFolder": str(folder.root), "inode": folder.root.stat().st_ino}
    assert stat.S_IMODE(folder.state_dir.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("name", "state"),
    [
        pytest.param("memory", ".memory.sage-mem", id="plain"),
        pytest.param("my notes", ".my notes.sage-mem", id="space"),
        pytest.param("笔记", ".笔记.sage-mem", id="chinese"),
        pytest.param(".notes", "..notes.sage-mem", id="hidden"),
    ],
)
def test_state_folder_names(name: str, state: str) -> None:
    assert state_dir_name(name) == state


def test_a_state_folder_name_too_long_for_the_filesystem_is_cut_and_stays_unique() -> None:
    long_a, long_b = "a" * 250, "a" * 249 + "b"
    for name in (long_a, long_b, "猫" * 84):
        assert len(os.fsencode(state_dir_name(name))) <= 255
        assert state_dir_name(name).endswith(".sage-mem")
    assert state_dir_name(long_a) != state_dir_name(long_b)


def test_the_state_folder_may_be_set_by_argument_or_environment(
    empty_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert MemoryFolder(empty_dir, state_dir=tmp_path / "s1").state_dir == tmp_path / "s1"
    monkeypatch.setenv("SAGE_MEM_STATE_DIR", str(tmp_path / "s2"))
    assert MemoryFolder(empty_dir).state_dir == tmp_path / "s2"


@pytest.mark.parametrize("inside", [pytest.param(".", id="same"), pytest.param(".state", id="dot"),
                                    pytest.param("state", id="plain")])
def test_a_state_folder_inside_the_memory_folder_is_refused(empty_dir: Path, inside: str) -> None:
    with pytest.raises(FolderError, match="beside"):
        MemoryFolder(empty_dir, state_dir=empty_dir / inside)


def test_state_folders_are_created_private(folder: MemoryFolder) -> None:
    made = folder.ensure_state_dir("autodream", "runs")
    for path in (folder.state_dir, folder.state_dir / "autodream", made):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_a_missing_memory_folder_is_a_folder_error(tmp_path: Path) -> None:
    with pytest.raises(FolderError, match="init"):
        MemoryFolder(tmp_path / "nope").check_exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(FolderError, match="not a folder"):
        MemoryFolder(tmp_path / "file").check_exists()


def test_the_filesystem_root_is_refused() -> None:
    with pytest.raises(FolderError):
        MemoryFolder(os.sep)


def test_the_default_folder_comes_from_sage_mem_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_folder() == tmp_path / "memory"
    monkeypatch.delenv("SAGE_MEM_DIR")
    assert default_folder() == tmp_path / "home" / ".sage-mem" / "memory"


def test_the_default_folder_keeps_its_state_in_the_sage_mem_folder_around_it(
    tmp_path: Path,
) -> None:
    from sage_mem.disk.folder import MemoryFolder

    default = MemoryFolder(tmp_path / ".sage-mem" / "memory")
    assert default.state_dir == tmp_path / ".sage-mem"
    other = MemoryFolder(tmp_path / "notes" / "memory")
    assert other.state_dir == tmp_path / "notes" / ".memory.sage-mem"
    beside_default = MemoryFolder(tmp_path / ".sage-mem" / "work")
    assert beside_default.state_dir == tmp_path / ".sage-mem" / ".work.sage-mem"


@pytest.mark.parametrize("name", ["index", "sessions", "autodream"])
def test_a_folder_in_a_sage_mem_folder_cannot_take_the_name_of_its_state(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(FolderError, match=f"cannot be named '{name}'"):
        MemoryFolder(tmp_path / ".sage-mem" / name)
    assert MemoryFolder(tmp_path / "elsewhere" / name).state_dir.name == f".{name}.sage-mem"
