"""`supersedes:` archives what a memory says it replaces; what cannot be done is reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_dream_support import add, read_manifest

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            ("user_old_editor", "The user edits in Vim"),
            ("user_editor", "The user switched from Vim to Helix"),
            id="english",
        ),
        pytest.param(
            ("user_old_editor", "用户用 Vim 写代码"),
            ("user_editor", "用户从 Vim 换成了 Helix"),
            id="chinese",
        ),
    ],
)
def test_a_superseded_memory_is_archived_with_its_successor(empty_dir: Path, old, new) -> None:
    add(empty_dir, old[0], old[1], category="user")
    add(empty_dir, new[0], new[1], category="user", supersedes=[old[0]])
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert not (empty_dir / f"{old[0]}.md").exists()
    archived = store.read(f"archive/{old[0]}")
    assert archived.meta["supersededBy"] == new[0]
    assert "superseded by user_editor" in archived.meta["archiveReason"]


def test_a_locked_memory_is_not_archived_even_when_superseded(empty_dir: Path) -> None:
    path = add(empty_dir, "user_old", "Old fact", category="user", locked=True)
    add(empty_dir, "user_new", "New fact", category="user", supersedes=["user_old"])
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    refused = read_manifest(result)["refused"]
    assert refused[0]["refusedBecause"] == "the memory is locked (locked: true)"


@pytest.mark.parametrize(
    ("old_updated", "new_updated"),
    [
        pytest.param("2026-11-25T10:00:00Z", "2026-11-20T09:00:00Z", id="times"),
        pytest.param("2026-11-25", "2026-11-20", id="dates"),
    ],
)
def test_a_memory_edited_after_the_one_superseding_it_is_not_archived(
    empty_dir: Path, old_updated: str, new_updated: str
) -> None:
    path = add(
        empty_dir,
        "user_old_editor",
        "The user edits in Vim, with the Helix keymap plugin since this week",
        category="user",
        created="2026-11-01",
        updated=old_updated,
    )
    add(
        empty_dir,
        "user_editor",
        "The user switched from Vim to Helix",
        category="user",
        created="2026-11-20",
        updated=new_updated,
        supersedes=["user_old_editor"],
    )
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    refused = read_manifest(result)["refused"]
    assert [r["id"] for r in refused] == ["user_old_editor"]
    assert "after user_editor" in refused[0]["refusedBecause"]


def test_a_memory_edited_the_same_day_as_its_successor_is_archived(empty_dir: Path) -> None:
    add(empty_dir, "user_old", "The user edits in Vim", category="user", updated="2026-11-20")
    add(
        empty_dir,
        "user_new",
        "The user switched from Vim to Helix",
        category="user",
        updated="2026-11-20T09:00:00Z",
        supersedes=["user_old"],
    )
    run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert not (empty_dir / "user_old.md").exists()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param({"user_new": ["user_gone"]}, "does not exist", id="missing-target"),
        pytest.param(
            {"user_a": ["user_b"], "user_b": ["user_a"]}, "each say they supersede", id="mutual"
        ),
        pytest.param({"user_a": ["user_a"]}, "names the memory itself", id="itself"),
    ],
)
def test_supersedes_that_cannot_be_acted_on_are_reported(
    empty_dir: Path, files: dict, message: str
) -> None:
    for memory_id, targets in files.items():
        add(empty_dir, memory_id, f"Fact {memory_id}", category="user", supersedes=targets)
    before = {p.name: p.read_bytes() for p in empty_dir.glob("*.md")}
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert {p.name: p.read_bytes() for p in empty_dir.glob("user_*.md")} == before
    assert [n for n in read_manifest(result)["notes"] if message in n["message"]]


@pytest.mark.parametrize("size", [3, 4])
def test_memories_that_supersede_each_other_round_a_cycle_all_stay(
    empty_dir: Path, size: int
) -> None:
    """A → B → C → A: each says it replaces the next, so none is the newest; archiving each
    one its predecessor names would take every one of them out of service."""
    ids = [f"project_rule_{i}" for i in range(size)]
    for i, memory_id in enumerate(ids):
        add(
            empty_dir,
            memory_id,
            f"Deploy rule number {i}",
            f"Text {i}.",
            category="project",
            supersedes=[ids[(i + 1) % size]],
        )
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert all((empty_dir / f"{memory_id}.md").exists() for memory_id in ids)
    assert any("cycle" in note["message"] for note in read_manifest(result)["notes"])


def test_a_chain_of_supersedes_archives_all_but_the_newest(empty_dir: Path) -> None:
    add(empty_dir, "project_v1", "Deploy rule one", "One.", category="project")
    add(empty_dir, "project_v2", "Deploy rule two", "Two.", category="project",
        supersedes=["project_v1"])
    add(empty_dir, "project_v3", "Deploy rule three", "Three.", category="project",
        supersedes=["project_v2"])
    run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert sorted(p.name for p in empty_dir.glob("project_*.md")) == ["project_v3.md"]


def test_a_cycle_through_a_second_name_is_found_too(empty_dir: Path) -> None:
    add(empty_dir, "project_a", "Deploy rule a", "A.", category="project",
        supersedes=["project_b"])
    add(empty_dir, "project_b", "Deploy rule b", "B.", category="project",
        supersedes=["project_x", "project_c"])
    add(empty_dir, "project_c", "Deploy rule c", "C.", category="project",
        supersedes=["project_a"])
    add(empty_dir, "project_x", "Deploy rule x", "X.", category="project")
    run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert all((empty_dir / f"project_{i}.md").exists() for i in "abc")
