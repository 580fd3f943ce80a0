"""The page's audit after a change on disk (issue 30, item 3): the badge asks for an audit after
every change, and at 50,000 memories a walk of the folder and a stat of every file was seconds of
CPU a change, beside the list that the change had to reach. Now an audit after a change looks at
the files of the memories that changed only (the page's listing of the memories says which), and
finds exactly what a whole audit finds.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import write_memory

from sage_mem.checks import audit as audit_module
from sage_mem.checks.audit import audit
from sage_mem.store import MemoryStore
from sage_mem.ui.audit import AuditState
from sage_mem.ui.listing import Listings

HEAD = "---\ndescription: A note\ncategory: user\n---\n\n"


@pytest.fixture
def store(memory_dir: Path) -> Iterator[MemoryStore]:
    for n in range(12):
        write_memory(memory_dir, f"user_note_{n}", HEAD + f"note {n}, see [[user_note_{n + 1}]]\n")
    write_memory(memory_dir, "user_yaml", "---\ndescription: a: b\n---\n")
    write_memory(memory_dir, "archive/user_old", HEAD + "old\n")
    write_memory(memory_dir, "project/api/auth", HEAD.replace("user", "project") + "See [[x]].")
    with MemoryStore(memory_dir) as opened:
        opened.regenerate_index()
        yield opened


class Page:
    """The audit as an open page asks for it: the same `AuditState` after each change."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.state = AuditState(Listings())
        self.generation = 0

    def audit(self) -> dict[str, Any]:
        self.generation += 1
        data = self.state.get(self.store, self.generation)
        return {**data, "findings": [{k: v for k, v in f.items() if k != "id"}
                                     for f in data["findings"]]}


def looked_at(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose stat the audit takes (or that it reads) from now on, by name."""
    seen: list[str] = []
    original = audit_module.FileResults.check_file

    def counted(self: Any, run: Any, path: Path, *, archived: bool) -> None:
        seen.append(run.rel(path))
        original(self, run, path, archived=archived)

    monkeypatch.setattr(audit_module.FileResults, "check_file", counted)
    return seen


def edit(store: MemoryStore, memory_id: str, text: str) -> None:
    path = write_memory(store.root, memory_id, text)
    store.refresh([path])


def test_an_audit_after_a_change_looks_at_the_changed_file_only(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = Page(store)
    first = page.audit()
    assert first == audit(store).to_dict()
    seen = looked_at(monkeypatch)
    edit(store, "user_note_3", HEAD.replace("\n", "\r\n") + "crlf now\r\n")
    after = page.audit()
    assert sorted(seen) == ["user_note_3.md", "user_yaml.md"]  # and the one the store cannot read
    assert after == audit(store).to_dict()
    assert any(f["check"] == "crlf" and f["path"] == "user_note_3.md" for f in after["findings"])


def test_a_new_memory_and_a_deleted_one_are_seen_without_a_walk(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = Page(store)
    page.audit()
    walks = []
    original = store.folder.iter_files

    def walked(**kwargs: Any) -> Any:
        walks.append(kwargs)
        return original(**kwargs)

    monkeypatch.setattr(store.folder, "iter_files", walked)
    seen = looked_at(monkeypatch)
    edit(store, "user_note_12", HEAD + "the link of user_note_11 now resolves\n")
    gone = store.root / "user_note_5.md"
    gone.unlink()
    store.refresh([gone])
    after = page.audit()
    assert sorted(seen) == ["user_note_12.md", "user_yaml.md"] and walks == []
    assert after == audit(store).to_dict()
    messages = " ".join(f["message"] for f in after["findings"])
    assert "user_note_12" not in messages and "[[user_note_5]]" in messages


def test_check_again_and_a_new_launch_walk_the_whole_folder(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = Page(store)
    page.audit()
    seen = looked_at(monkeypatch)
    page.state.get(store, page.generation, fresh=True)
    assert len(seen) == len(list(store.folder.iter_files())) + 1  # and the archived one


def test_an_audit_after_any_changes_finds_what_a_whole_audit_finds(
    store: MemoryStore,
) -> None:
    """Random edits, new files, broken ones, deletes, archives and restores: after each, the
    audit of what changed equals a whole audit of the folder."""
    rng = random.Random(30)
    page = Page(store)
    page.audit()
    for step in range(40):
        live = sorted(m.id for m in store.list())
        kind = rng.choice(["edit", "new", "broken", "delete", "archive", "restore", "crlf"])
        target = rng.choice(live) if live else "user_note_0"
        if kind == "edit":
            edit(store, target, HEAD + f"edited {step}, see [[{rng.choice(live)}]]\n")
        elif kind == "new":
            edit(store, f"user_new_{step}", HEAD + f"new, see [[user_note_{step % 14}]]\n")
        elif kind == "broken":
            edit(store, target, "---\ndescription: [unclosed\n---\nbody\n")
        elif kind == "crlf":
            edit(store, target, HEAD.replace("\n", "\r\n") + "crlf\r\n")
        elif kind == "delete":
            path = store.root / (target + ".md")
            path.unlink()
            store.refresh([path])
        elif kind == "archive" and target in live:
            store.archive(target, "test")
        elif kind == "restore":
            archived = [m.id for m in store.list(archived=True) if m.archived]
            if archived and rng.choice(archived)[len("archive/"):] not in live:
                store.restore(rng.choice(archived))
        assert page.audit() == audit(store).to_dict(), (step, kind, target)
