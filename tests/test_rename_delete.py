"""The store operations only a person uses: `rename` (links follow), `delete` (archived only).

Each test checks the bytes on disk: what moved, what was rewritten, and that
nothing else changed (a rename's link rewrites stamp no `updated`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import ROOT, write_memory

from sage_mem import (
    ConflictError,
    InvalidId,
    InvalidMemory,
    MemoryLocked,
    MemoryNotFound,
    MemoryStore,
)
from sage_mem.disk.safe_io import read_file, remove
from sage_mem.errors import FileChanged


def memory(description: str, body: str = "", **extra: str) -> str:
    lines = [f"description: {description}", "category: user",
             *(f"{key}: {value}" for key, value in extra.items())]
    return "---\n" + "\n".join(lines) + "\n---\n" + (f"\n{body}\n" if body else "")


@pytest.fixture
def folder(empty_dir: Path) -> Path:
    write_memory(empty_dir, "user_cat", memory("The cat is called Sesame", "Orange, loud."))
    write_memory(empty_dir, "user_home", memory(
        "Where the user lives",
        "Lives with [[user_cat]], see [[user_cat|the cat]] and [[user_cat#age]].\n"
        "Also [the cat](user_cat.md \"title\") and `[[user_cat]]` in code.\n"
        "```\n[[user_cat]]\n```",
    ))
    write_memory(empty_dir, "project/notes", memory(
        "Project notes", "The mascot is [[user_cat]], also [cat](../user_cat.md#colour).",
    ))
    return empty_dir


# rename


def test_rename_moves_the_file_whole_and_updates_index_and_catalog(folder: Path) -> None:
    before = (folder / "user_cat.md").read_bytes()
    store = MemoryStore(folder, watch=False)
    renamed = store.rename("user_cat", "user_kitty")
    assert renamed.memory.id == "user_kitty" and renamed.old_id == "user_cat"
    assert not (folder / "user_cat.md").exists()
    assert (folder / "user_kitty.md").read_bytes() == before  # its own bytes: no link, no stamp
    assert "user_kitty" in {m.id for m in store.list()}
    assert "user_cat" not in {m.id for m in store.list()}
    catalog = (folder / "MEMORY.md").read_text()
    assert "user_kitty.md" in catalog and "user_cat.md" not in catalog
    assert store.search("Sesame")[0].id == "user_kitty"


def test_rename_points_links_in_other_memories_at_the_new_id(folder: Path) -> None:
    home_before = (folder / "user_home.md").read_text()
    store = MemoryStore(folder, watch=False)
    renamed = store.rename("user_cat", "user_kitty")
    assert sorted(renamed.relinked) == ["project/notes", "user_home"]
    assert renamed.left == ()
    home = (folder / "user_home.md").read_text()
    assert home == (
        home_before.replace("[[user_cat]], see", "[[user_kitty]], see")
        .replace("[[user_cat|the cat]]", "[[user_kitty|the cat]]")
        .replace("[[user_cat#age]]", "[[user_kitty#age]]")
        .replace('(user_cat.md "title")', '(user_kitty.md "title")')
    )
    assert "`[[user_cat]]`" in home and "```\n[[user_cat]]\n```" in home  # code is left alone
    assert "updated" not in home  # a link rewrite stamps nothing
    notes = (folder / "project" / "notes.md").read_text()
    assert "[[user_kitty]]" in notes and "(../user_kitty.md#colour)" in notes


def test_rename_into_another_folder_keeps_relative_links_working(folder: Path) -> None:
    store = MemoryStore(folder, watch=False)
    store.rename("user_cat", "pets/cat")
    notes = (folder / "project" / "notes.md").read_text()
    assert "[[pets/cat]]" in notes and "(../pets/cat.md#colour)" in notes
    home = (folder / "user_home.md").read_text()
    assert "[the cat](pets/cat.md" in home
    # The moved memory's own relative links follow its new folder.
    store.rename("project/notes", "notes")
    moved = (folder / "notes.md").read_text()
    assert "(pets/cat.md#colour)" in moved
    from sage_mem.checks.audit import audit

    assert [f for f in audit(store).findings if f.check == "broken-link"] == []


def test_rename_keeps_each_link_naming_what_it_named(empty_dir: Path) -> None:
    """A bare `[[cat]]` found the one memory named cat; a second cat must not steal it."""
    write_memory(empty_dir, "project/cat", memory("The project mascot"))
    write_memory(empty_dir, "user/dog", memory("The dog"))
    write_memory(empty_dir, "user_walks", memory("Walks", "With [[cat]] and [[dog]]."))
    store = MemoryStore(empty_dir, watch=False)
    renamed = store.rename("user/dog", "user/cat")
    # Both bare names found their memory by file name; `cat` now names two, so both get paths.
    assert (empty_dir / "user_walks.md").read_text().endswith(
        "With [[project/cat]] and [[user/cat]].\n"
    )
    assert renamed.relinked == ("user_walks",)


def test_rename_of_chinese_ids(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_猫", memory("猫叫芝麻"))
    write_memory(empty_dir, "user_家", memory("住处", "和[[user_猫]]住，见[猫](user_猫.md)。"))
    store = MemoryStore(empty_dir, watch=False)
    store.rename("user_猫", "user_小猫")
    assert (empty_dir / "user_家.md").read_text().endswith(
        "和[[user_小猫]]住，见[猫](user_小猫.md)。\n"
    )
    assert store.search("芝麻")[0].id == "user_小猫"


def test_rename_never_replaces_a_file(folder: Path) -> None:
    write_memory(folder, "user_kitty", memory("Another cat"))
    kitty = (folder / "user_kitty.md").read_bytes()
    store = MemoryStore(folder, watch=False)
    with pytest.raises(ConflictError):
        store.rename("user_cat", "user_kitty")
    assert (folder / "user_kitty.md").read_bytes() == kitty
    assert (folder / "user_cat.md").exists()
    assert "[[user_cat]]" in (folder / "user_home.md").read_text()


def test_rename_and_restore_onto_a_taken_id_are_refused_alike_saying_how_to_free_it(
    folder: Path,
) -> None:
    write_memory(folder, "user_kitty", memory("Another cat"))
    store = MemoryStore(folder, watch=False)
    store.archive("user_home", "moved")
    write_memory(folder, "user_home", memory("A new home"))
    refusals = []
    for act in (lambda: store.rename("user_cat", "user_kitty"),
                lambda: store.restore("archive/user_home")):
        with pytest.raises(ConflictError) as refused:
            act()
        refusals.append(str(refused.value))
    assert refusals == [
        f"{taken}: a memory of that id exists now; not overwritten (archive or rename it first)"
        for taken in ("user_kitty", "user_home")
    ]
    assert (folder / "archive/user_home.md").exists() and (folder / "user_cat.md").exists()


def test_rename_refusals_change_nothing(folder: Path) -> None:
    write_memory(folder, "user_locked", memory("Locked one", locked="true"))
    store = MemoryStore(folder, watch=False)
    with pytest.raises(MemoryLocked):
        store.rename("user_locked", "user_free")
    with pytest.raises(MemoryNotFound):
        store.rename("user_nobody", "user_somebody")
    with pytest.raises(InvalidId):
        store.rename("user_cat", "../outside")
    with pytest.raises(InvalidId):
        store.rename("user_cat", "user_cat")
    with pytest.raises(InvalidId):
        store.rename("user_cat", "archive/user_cat")
    assert (folder / "user_locked.md").exists() and (folder / "user_cat.md").exists()


def test_rename_refuses_a_memory_changed_since_it_was_read(folder: Path) -> None:
    store = MemoryStore(folder, watch=False)
    shown = store.read("user_cat").sha256
    path = folder / "user_cat.md"
    path.write_text(path.read_text() + "Edited in vim meanwhile.\n")
    edited = path.read_bytes()
    with pytest.raises(ConflictError, match="changed on disk since it was read"):
        store.rename("user_cat", "user_kitty", expected_sha256=shown)
    assert path.read_bytes() == edited and not (folder / "user_kitty.md").exists()
    assert "[[user_cat]]" in (folder / "user_home.md").read_text()
    now = store.read("user_cat").sha256
    assert store.rename("user_cat", "user_kitty", expected_sha256=now).memory.id == "user_kitty"


def test_rename_leaves_a_locked_linker_as_it_is_and_says_so(folder: Path) -> None:
    write_memory(folder, "user_pinned", memory("Pinned", "See [[user_cat]].", locked="true"))
    pinned = (folder / "user_pinned.md").read_bytes()
    renamed = MemoryStore(folder, watch=False).rename("user_cat", "user_kitty")
    assert (folder / "user_pinned.md").read_bytes() == pinned
    assert any(note.startswith("user_pinned: locked") for note in renamed.left)
    assert "user_pinned" not in renamed.relinked


def test_rename_carries_supersedes_and_superseded_by(folder: Path) -> None:
    write_memory(folder, "user_new_cat", memory("New", supersedes="[user_cat]"))
    write_memory(folder, "archive/user_old_cat", memory(
        "Old", archived="2026-01-01T00:00:00Z", archiveReason="replaced",
        supersededBy="user_cat",
    ))
    store = MemoryStore(folder, watch=False)
    renamed = store.rename("user_cat", "user_kitty")
    assert "supersededBy: user_kitty" in (folder / "archive" / "user_old_cat.md").read_text()
    assert store.read("user_new_cat").supersedes == ("user_kitty",)
    assert {"user_new_cat", "archive/user_old_cat"} <= set(renamed.relinked)


def test_rename_carries_usage_counts(folder: Path) -> None:
    store = MemoryStore(folder, watch=False)
    store.note_used(["user_cat"])
    store.rename("user_cat", "user_kitty")
    assert store.stats.retrievals("user_kitty") == 1 and store.stats.retrievals("user_cat") == 0


# delete


def archived(folder: Path) -> MemoryStore:
    store = MemoryStore(folder, watch=False)
    store.archive("user_cat", reason="the cat moved out")
    return store


def test_delete_removes_an_archived_memory(folder: Path) -> None:
    store = archived(folder)
    gone = store.delete("archive/user_cat")
    assert gone.id == "archive/user_cat" and gone.description == "The cat is called Sesame"
    assert not (folder / "archive" / "user_cat.md").exists()
    assert store.list(archived=True) == [m for m in store.list(archived=True)
                                         if m.id != "archive/user_cat"]
    assert "archive/user_cat" not in {m.id for m in store.list(archived=True)}
    assert [p.name for p in (folder / "archive").iterdir()] == []  # no parked copy left


def test_delete_takes_the_id_without_its_archive_prefix(folder: Path) -> None:
    store = archived(folder)
    assert store.delete("user_cat").id == "archive/user_cat"


def test_delete_refuses_a_memory_in_service(folder: Path) -> None:
    store = MemoryStore(folder, watch=False)
    before = (folder / "user_cat.md").read_bytes()
    with pytest.raises(InvalidMemory, match="archive it first"):
        store.delete("user_cat")
    with pytest.raises(MemoryNotFound):
        store.delete("archive/user_cat")
    assert (folder / "user_cat.md").read_bytes() == before


def test_delete_refuses_bytes_other_than_those_read(folder: Path) -> None:
    store = archived(folder)
    read = store.read("archive/user_cat")
    path = folder / "archive" / "user_cat.md"
    path.write_text(path.read_text() + "\nA late edit.\n")
    with pytest.raises(ConflictError):
        store.delete("archive/user_cat", expected_sha256=read.sha256)
    assert path.read_text().endswith("A late edit.\n")


def test_remove_puts_back_a_file_saved_after_the_read(tmp_path: Path) -> None:
    path = tmp_path / "x.md"
    path.write_bytes(b"first")
    seen = read_file(path, limit=1024)
    path.write_bytes(b"second, saved meanwhile")
    with pytest.raises(FileChanged):
        remove(path, seen, limit=1024)
    assert path.read_bytes() == b"second, saved meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.md"]
    remove(path, read_file(path, limit=1024), limit=1024)
    assert not path.exists()


def test_only_a_person_deletes_no_agent_tool_or_dream_calls_delete() -> None:
    """Agents, MCP tools and the dream have no way to delete: only the CLI and the page call it."""
    callers = []
    for path in sorted((ROOT / "sage_mem").rglob("*.py")):
        if re.search(r"\.delete\(", path.read_text(encoding="utf-8")):
            callers.append(path.relative_to(ROOT / "sage_mem").as_posix())
    allowed = {"commands/memories.py", "ui/api.py"}
    assert set(callers) <= allowed, set(callers) - allowed
