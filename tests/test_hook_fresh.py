"""What a hook injects is the file's current text (issue 32, item 4).

A hook's store answers from the index cache (`MemoryStore(build=False)`):
a file edited or deleted after the cache saw it, and not seen changed when
the store was opened, must never reach the agent in its old form. Every
memory about to be injected is read again from its file first.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import write_memory

from sage_mem import MemoryStore
from sage_mem.agents import context


def _note(word: str, extra: str = "") -> str:
    return (f"---\ndescription: the {word} decision\ncategory: project\n---\n\n"
            f"We chose {word} for the deploy.{extra}\n")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    for n in range(6):
        write_memory(root, f"project_other_{n}", _note(f"other{n}"))
    write_memory(root, "project_pick", _note("zanzibarite"))
    an_hour_ago = time.time() - 3600  # out of the cache's racy window
    for path in root.glob("*.md"):
        os.utime(path, (an_hour_ago, an_hour_ago))
    MemoryStore(root, watch=False)  # the index cache
    return root


def _inject(store: MemoryStore, root: Path, prompt: str) -> tuple[str, list]:
    session = context.SessionLog.load(root.parent / "sessions", None)
    return context.prompt_context(store, prompt, project="p", session=session, limit=5,
                                  now=datetime.now(UTC))


def test_a_memory_edited_in_place_is_never_injected_with_its_old_text(folder: Path) -> None:
    store = MemoryStore(folder, watch=False, build=False)
    path = folder / "project_pick.md"
    with open(path, "r+b") as handle:  # in place: no rename, the folder's mtime unchanged
        handle.write(_note("zanzibarite", " Replaced by quartzite.").encode())
        handle.truncate()
    text, chosen = _inject(store, folder, "what about zanzibarite?")
    assert [m.id for m in chosen] == ["project_pick"]
    assert "Replaced by quartzite" in text
    assert "Replaced by quartzite" in chosen[0].body


def test_a_deleted_memory_is_never_injected(folder: Path) -> None:
    store = MemoryStore(folder, watch=False, build=False)
    (folder / "project_pick.md").unlink()
    text, chosen = _inject(store, folder, "what about zanzibarite?")
    assert "project_pick" not in [m.id for m in chosen]
    assert "zanzibarite" not in text


def test_a_memory_that_no_longer_parses_is_never_injected(folder: Path) -> None:
    store = MemoryStore(folder, watch=False, build=False)
    (folder / "project_pick.md").write_bytes(b"\xff\xfe not text zanzibarite \x00")
    text, chosen = _inject(store, folder, "what about zanzibarite?")
    assert "project_pick" not in [m.id for m in chosen]


def test_a_baseline_edited_in_place_is_injected_at_session_start_with_its_new_text(
    folder: Path,
) -> None:
    write_memory(folder, "project_rule", "---\ndescription: the rule\nbaseline: true\n---\n\n"
                 "Always run the linter.\n")
    MemoryStore(folder, watch=False)
    store = MemoryStore(folder, watch=False, build=False)
    write_memory(folder, "project_rule", "---\ndescription: the rule\nbaseline: true\n---\n\n"
                 "Never push on Fridays.\n")
    session = context.SessionLog.load(folder.parent / "sessions", None)
    text, chosen = context.session_start_context(store, project="p", session=session,
                                                 now=datetime.now(UTC))
    assert "Never push on Fridays" in text
    assert "Always run the linter" not in text
