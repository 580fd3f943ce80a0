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
