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


# Finding what changed by the folders' stat (a hook answered with no server)


@pytest.fixture
def nested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a subfolder, its index cache written with nothing in the racy window."""
    from sage_mem.search import cache

    # Every file and folder here was changed a moment ago: with the usual 2 s window each
    # would be listed and read again whatever happens, and nothing here would be tested.
    monkeypatch.setattr(cache, "RACY_NS", 0)
    root = tmp_path / "memory"
    for n in range(40):
        write_memory(root, f"project_note_{n}", _note(f"note{n}"))
        write_memory(root, f"people/person_{n}", _note(f"person{n}"))
    write_memory(root, "project_pick", _note("zanzibarite"))
    MemoryStore(root, watch=False)
    return root


def _hook_store(root: Path) -> MemoryStore:
    store = MemoryStore(root, watch=False, build=False, by_folders=True)
    assert store.loaded is not None and store.loaded.how == "cache"
    return store


def test_a_no_server_hook_stats_only_the_folders_when_nothing_changed(
    nested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stated: list[str] = []
    original = os.stat

    def counted(path: object, *args: object, **kwargs: object) -> os.stat_result:
        stated.append(os.fsdecode(path))  # type: ignore[arg-type]
        return original(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counted)
    store = _hook_store(nested)
    assert len(store.index) == 81
    assert not [path for path in stated if path.endswith(".md")]
    assert str(nested / "people") in stated  # each folder's own stat is what is compared


def test_a_new_memory_saved_by_rename_into_a_folder_is_found_by_the_next_hook(
    nested: Path,
) -> None:
    temp = nested / "people" / ".person_new.md.swp"
    temp.write_text(_note("quartzite"), encoding="utf-8")
    an_hour_ago = time.time() - 3600  # as `cp -p` or an editor keeping the old mtime would
    os.utime(temp, (an_hour_ago, an_hour_ago))
    os.replace(temp, nested / "people" / "person_new.md")
    store = _hook_store(nested)
    assert store.index.get("people/person_new") is not None
    _, chosen = _inject(store, nested, "what about quartzite?")
    assert [m.id for m in chosen] == ["people/person_new"]


def test_a_memory_removed_or_renamed_away_is_gone_from_the_next_hook(nested: Path) -> None:
    (nested / "people" / "person_3.md").unlink()
    os.replace(nested / "project_pick.md", nested / "project_moved.md")
    store = _hook_store(nested)
    assert store.index.get("people/person_3") is None
    assert store.index.get("project_pick") is None
    assert store.index.get("project_moved") is not None


def test_a_new_subfolder_and_a_removed_one_are_seen_by_the_next_hook(nested: Path) -> None:
    import shutil

    shutil.rmtree(nested / "people")
    write_memory(nested, "team/alice", _note("alice"))
    store = _hook_store(nested)
    assert store.index.get("people/person_0") is None
    assert store.index.get("team/alice") is not None
    assert len(store.index) == 42


def test_an_in_place_edit_in_an_unchanged_folder_is_injected_with_its_new_text(
    nested: Path,
) -> None:
    path = nested / "project_pick.md"
    with open(path, "r+b") as handle:
        handle.write(_note("zanzibarite", " Replaced by quartzite.").encode())
        handle.truncate()
    store = _hook_store(nested)
    text, chosen = _inject(store, nested, "what about zanzibarite?")
    assert [m.id for m in chosen] == ["project_pick"]
    assert "Replaced by quartzite" in text


def test_the_folders_walk_finds_what_a_full_walk_finds(nested: Path) -> None:
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search import cache

    folder = MemoryFolder(nested)
    (nested / "people" / "person_5.md").unlink()
    write_memory(nested, "people/person_new", _note("new"))
    write_memory(nested, "team/deep/bob", _note("bob"))
    os.replace(nested / "project_note_1.md", nested / "people" / "person_moved.md")
    found = cache.load(folder, scoring=MemoryStore(nested, watch=False, build=False).index.scoring)
    assert found is not None
    quick = cache.scan_changed(folder, found)
    full = cache.scan(folder)
    assert quick is not None
    assert sorted(quick.names) == sorted(full.names)
    assert dict(quick.items()) == dict(full.items())


@pytest.mark.parametrize("seed", range(6))
def test_after_any_adds_removes_and_renames_the_folders_walk_is_the_full_walk(
    nested: Path, seed: int
) -> None:
    import random
    import shutil

    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search import cache

    rng = random.Random(seed)
    write_memory(nested, "people/deep/inner", _note("inner"))
    MemoryStore(nested, watch=False)  # the cache, with a folder two deep
    for step in range(8):
        files = sorted(p for p in nested.rglob("*.md") if ".sage-mem" not in str(p))
        folders = sorted(p for p in nested.rglob("*") if p.is_dir() and not p.is_symlink()
                         and not p.name.startswith("."))
        kind = rng.choice(["add", "remove", "rename", "move", "mkdir", "rmtree", "swap",
                           "symlink"])
        if kind == "add" and folders:
            write_memory(rng.choice([nested, *folders]), f"added_{step}", _note("x"))
        elif kind == "remove" and files:
            rng.choice(files).unlink()
        elif kind == "rename" and files:
            source = rng.choice(files)
            os.replace(source, source.with_name(f"renamed_{step}.md"))
        elif kind == "move" and files and folders:
            os.replace(rng.choice(files), rng.choice(folders) / f"moved_{step}.md")
        elif kind == "mkdir":
            write_memory(nested, f"new_{step}/a/b", _note("b"))
        elif kind == "rmtree" and folders:
            shutil.rmtree(rng.choice(folders))
        elif kind == "swap" and len(folders) > 1:
            one, two = rng.sample(folders, 2)
            if not (one in two.parents or two in one.parents):
                temp = nested / f".swap_{step}"
                os.replace(one, temp)
                os.replace(two, one)
                os.replace(temp, two)
        elif kind == "symlink" and folders:
            chosen = rng.choice(folders)
            shutil.rmtree(chosen)
            chosen.symlink_to(nested / "people" if (nested / "people").is_dir() else nested)
    folder = MemoryFolder(nested)
    found = cache.load(folder, scoring=MemoryStore(nested, watch=False, build=False).index.scoring)
    assert found is not None
    quick = cache.scan_changed(folder, found)
    assert quick is not None
    assert dict(quick.items()) == dict(cache.scan(folder).items())


def test_a_folder_changed_within_the_racy_window_is_listed_again_whatever_its_stat(
    tmp_path: Path,
) -> None:
    """A file renamed in within the same timestamp tick as the folder's stat would leave the
    folder's mtime as recorded: a folder that recent when the cache was built never matches."""
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search import cache

    root = tmp_path / "memory"
    write_memory(root, "project_a", _note("a"))
    MemoryStore(root, watch=False)  # its folder changed a moment ago: within RACY_NS
    found = cache.load(MemoryFolder(root),
                       scoring=MemoryStore(root, watch=False, build=False).index.scoring)
    assert found is not None and found.folders is not None
    assert found.folders == [("", 0, 0, 0)]
