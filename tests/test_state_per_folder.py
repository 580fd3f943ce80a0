"""Each memory folder has its own state folder; old state shared by siblings is taken over safely.

Two memory folders side by side (`a/` and `b/`) never share counts, sessions,
runs or caches (DESIGN §2). State that an older version kept in one
`.sage-mem/` for every folder of a parent goes to the folder it clearly
belongs to, and to no other. See the module docstring of `disk/folder.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_support import cli_process, hook_context, prompt_input
from support import TEMPLATE, write_memory

from sage_mem.disk.folder import MemoryFolder
from sage_mem.store import MemoryStore

PROMPT = "how do I run the tests"
SHOWN = "reference_test_command"  # what PROMPT brings up from memory_template/


def sage_mem(folder: Path, *argv: str, state: Path | None = None) -> str:
    """`python -m sage_mem --dir FOLDER ...` as a process; its stdout (it must succeed)."""
    env = {"SAGE_MEM_STATE_DIR": str(state)} if state is not None else None
    done = cli_process("--dir", str(folder), *argv, env=env)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def prompt_hook(folder: Path, session: str, *, state: Path | None = None) -> str:
    """`python -m sage_mem hook user-prompt-submit` with SAGE_MEM_DIR=folder: what it injects."""
    env = {"SAGE_MEM_DIR": str(folder)}
    if state is not None:
        env["SAGE_MEM_STATE_DIR"] = str(state)
    stdin = prompt_input(PROMPT, session=session, cwd="/tmp").encode()
    done = cli_process("hook", "user-prompt-submit", stdin=stdin, env=env)
    assert done.returncode == 0, done.stderr.decode()
    return hook_context(done.stdout.decode())


def run_ids(folder: Path) -> list[str]:
    return sorted(run["runId"] for run in json.loads(sage_mem(folder, "runs", "--json"))["runs"])


def counts(folder: Path) -> dict[str, int]:
    with MemoryStore(folder) as store:
        return store.stats.retrieval_counts()


def owner_of(state: Path) -> str:
    return json.loads((state / "owner.json").read_text(encoding="utf-8"))["memoryFolder"]


@pytest.fixture
def siblings(tmp_path: Path) -> tuple[Path, Path]:
    """Two memory folders side by side, made from the same template: the same ids in both."""
    parent = tmp_path / "projects"
    parent.mkdir()
    for name in ("a", "b"):
        shutil.copytree(TEMPLATE, parent / name)
    return parent / "a", parent / "b"


def old_state(*folders: Path, dream: bool = True) -> Path:
    """State as an older version left it: one `.sage-mem/` beside them, used by each folder.

    (For folders in a `.sage-mem` folder, as `~/.sage-mem/memory`, that folder.)

    Made by the real commands, pointed at the old place with SAGE_MEM_STATE_DIR
    (which writes the same files as the old default did): an index cache, a
    session, retrieval counts and, with `dream`, a dream run each.
    """
    parent = folders[0].parent
    shared = parent if parent.name == ".sage-mem" else parent / ".sage-mem"
    for folder in folders:
        sage_mem(folder, "list", state=shared)  # a command writes the index cache (a hook never)
        assert prompt_hook(folder, f"old-{folder.name}", state=shared)
        if dream:
            sage_mem(folder, "dream", "--mode", "report", state=shared)
    assert (shared / "stats.json").is_file() and (shared / "sessions").is_dir()
    return shared


# siblings never share


def test_sibling_folders_keep_separate_retrieval_counts(siblings: tuple[Path, Path]) -> None:
    a, b = siblings
    assert SHOWN in prompt_hook(a, "s-a")
    sage_mem(a, "search", PROMPT)
    sage_mem(a, "feedback", SHOWN, "helpful")
    one_prompt = counts(a)
    assert one_prompt[SHOWN] == 1
    assert counts(b) == {}
    assert SHOWN in prompt_hook(b, "s-b")
    sage_mem(b, "search", PROMPT)
    assert counts(a) == one_prompt
    assert counts(b) == one_prompt
    with MemoryStore(b) as store:
        assert "helpful" not in store.stats.load()[SHOWN]


def test_sibling_folders_hooks_do_not_share_session_dedup(siblings: tuple[Path, Path]) -> None:
    a, b = siblings
    assert SHOWN in prompt_hook(a, "s1")
    assert SHOWN in prompt_hook(b, "s1")
    # Each folder's own session record still holds back a repeat within that session.
    assert SHOWN not in prompt_hook(a, "s1")
    assert SHOWN not in prompt_hook(b, "s1")


def test_sibling_folders_list_only_their_own_runs(siblings: tuple[Path, Path]) -> None:
    a, b = siblings
    sage_mem(a, "dream", "--mode", "report")
    assert len(run_ids(a)) == 1
    assert run_ids(b) == []


def test_each_folder_has_a_private_state_folder_named_after_it(
    siblings: tuple[Path, Path],
) -> None:
    a, b = siblings
    prompt_hook(a, "s1")
    prompt_hook(b, "s1")
    assert sorted(p.name for p in a.parent.iterdir()) == [".a.sage-mem", ".b.sage-mem", "a", "b"]
    for folder in (a, b):
        state = folder.parent / f".{folder.name}.sage-mem"
        assert MemoryFolder(folder).state_dir == state
        assert owner_of(state) == str(folder)
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        assert stat.S_IMODE((state / "owner.json").stat().st_mode) == 0o600


# old state shared by the folders of one parent


def test_old_shared_state_of_a_lone_folder_becomes_its_own(siblings: tuple[Path, Path]) -> None:
    a, b = siblings
    shutil.rmtree(b)
    shared = old_state(a)
    runs = sorted(p.name for p in (shared / "autodream" / "runs").iterdir())
    assert run_ids(a) == runs
    assert counts(a)[SHOWN] == 1
    assert SHOWN not in prompt_hook(a, "old-a")  # the session it was shown in is remembered
    assert not shared.exists()
    assert owner_of(a.parent / ".a.sage-mem") == str(a)


def test_old_state_used_by_one_sibling_goes_to_it_and_not_the_other(
    siblings: tuple[Path, Path],
) -> None:
    a, b = siblings
    shared = old_state(a)
    runs = sorted(p.name for p in (shared / "autodream" / "runs").iterdir())
    # b comes first: it must get nothing of a's, and leave a's state where a can find it.
    assert run_ids(b) == []
    assert counts(b) == {}
    assert SHOWN in prompt_hook(b, "old-a")
    assert shared.is_dir()
    assert run_ids(a) == runs
    assert counts(a)[SHOWN] == 1
    assert not shared.exists()


def test_old_state_used_by_both_siblings_is_handed_to_neither(
    siblings: tuple[Path, Path],
) -> None:
    a, b = siblings
    shared = old_state(a, b)
    before = sorted(str(p.relative_to(shared)) for p in shared.rglob("*"))
    assert run_ids(a) == []
    assert run_ids(b) == []
    assert counts(a) == {}
    assert SHOWN in prompt_hook(b, "old-a")
    assert sorted(str(p.relative_to(shared)) for p in shared.rglob("*")) == before


def test_leaving_old_state_alone_says_why(siblings: tuple[Path, Path]) -> None:
    a, b = siblings
    shared = old_state(a, b, dream=False)
    (notes,) = MemoryFolder(a).state_notes
    assert str(shared) in notes and str(b) in notes and "left where it is" in notes


def test_old_state_without_a_cache_goes_to_the_only_memory_folder_beside_it(
    siblings: tuple[Path, Path],
) -> None:
    a, b = siblings
    shutil.rmtree(b)
    (a.parent / "src").mkdir()  # a folder without memories does not count
    shared = old_state(a, dream=False)
    shutil.rmtree(shared / "index")
    assert counts(a)[SHOWN] == 1
    assert not shared.exists()


def test_old_state_without_a_cache_is_not_guessed_between_siblings(
    siblings: tuple[Path, Path],
) -> None:
    a, b = siblings
    shared = old_state(a, dream=False)
    shutil.rmtree(shared / "index")
    folder = MemoryFolder(b)
    assert folder.state_dir == b.parent / ".b.sage-mem"
    assert "names no memory folder" in folder.state_notes[0]
    assert counts(a) == {}
    assert (shared / "stats.json").is_file()


def test_old_state_also_used_by_a_folder_elsewhere_stays_where_it_is(
    siblings: tuple[Path, Path], tmp_path: Path,
) -> None:
    a, b = siblings
    shutil.rmtree(b)
    shared = old_state(a, dream=False)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(TEMPLATE, elsewhere)
    sage_mem(elsewhere, "list", state=shared)  # it named the old place as its state folder
    prompt_hook(elsewhere, "x", state=shared)
    assert counts(a) == {}
    assert shared.is_dir()
    assert prompt_hook(elsewhere, "y", state=shared)
    assert MemoryStore(elsewhere, state_dir=shared).stats.retrieval_counts()[SHOWN] == 3


def test_processes_taking_over_old_state_at_once_agree_and_lose_nothing(
    siblings: tuple[Path, Path],
) -> None:
    a, b = siblings
    shutil.rmtree(b)
    old_state(a, dream=False)
    stdin = prompt_input(PROMPT, session="s-at-once", cwd="/tmp").encode()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "sage_mem", "hook", "user-prompt-submit"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            # Six at once on a loaded machine can pass the 2 s budget; what is checked here
            # is that they agree on the state and lose nothing, not how fast they answer.
            env={**os.environ, "SAGE_MEM_DIR": str(a), "SAGE_MEM_HOOK_BUDGET_MS": "30000"},
        )
        for _ in range(6)
    ]
    for process in processes:
        _, err = process.communicate(stdin, timeout=60)
        assert process.returncode == 0 and err == b"", err
    assert sorted(p.name for p in a.parent.iterdir()) == [".a.sage-mem", "a"]
    # The old count and at least the first of the new ones: the session holds back the rest.
    assert counts(a)[SHOWN] >= 2


def test_old_state_that_cannot_move_is_recorded_in_place(tmp_path: Path) -> None:
    home = tmp_path / "home"
    notes = home / "notes"
    shutil.copytree(TEMPLATE, notes)
    old_state(notes, dream=False)  # ~/notes kept its state in ~/.sage-mem
    (home / ".sage-mem" / "work").mkdir()  # a folder in it: it cannot move as a whole
    assert MemoryFolder(notes).state_dir == home / ".sage-mem"
    assert owner_of(home / ".sage-mem") == str(notes)
    assert counts(notes)[SHOWN] == 1
    default = home / ".sage-mem" / "memory"
    shutil.copytree(TEMPLATE, default)
    assert MemoryFolder(default).state_dir == home / ".sage-mem" / ".memory.sage-mem"
    assert counts(default) == {}


# the default folder and its home, ~/.sage-mem


def test_the_default_folder_keeps_its_home_state(tmp_path: Path) -> None:
    home = tmp_path / "home" / ".sage-mem"
    default = home / "memory"
    shutil.copytree(TEMPLATE, default)
    old_state_home = old_state(default)
    assert old_state_home == home
    assert counts(default)[SHOWN] == 1
    assert MemoryFolder(default).state_dir == home
    assert owner_of(home) == str(default)
    work = home / "work"
    shutil.copytree(TEMPLATE, work)
    assert MemoryFolder(work).state_dir == home / ".work.sage-mem"
    assert counts(work) == {}


def test_a_folder_beside_the_default_folders_home_does_not_take_its_state(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    default = home / ".sage-mem" / "memory"
    notes = home / "notes"
    shutil.copytree(TEMPLATE, default)
    shutil.copytree(TEMPLATE, notes)
    # Older versions kept ~/notes' state in ~/.sage-mem too, mixed with the default folder's.
    old_state(default, dream=False)
    prompt_hook(notes, "n", state=home / ".sage-mem")
    assert counts(notes) == {}
    assert MemoryFolder(notes).state_dir == home / ".notes.sage-mem"
    assert counts(default)[SHOWN] == 2


def test_a_memory_folder_in_the_home_cannot_take_a_state_folders_name(tmp_path: Path) -> None:
    folder = tmp_path / ".sage-mem" / "sessions"
    folder.mkdir(parents=True)
    done = cli_process("--dir", str(folder), "list")
    assert done.returncode == 1
    assert b"cannot be named 'sessions'" in done.stderr


# renamed, moved, copied


def test_a_renamed_folder_keeps_its_state(siblings: tuple[Path, Path]) -> None:
    a, _ = siblings
    prompt_hook(a, "s1")
    sage_mem(a, "dream", "--mode", "report")
    runs = run_ids(a)
    ideas = a.rename(a.parent / "ideas")
    assert run_ids(ideas) == runs
    assert counts(ideas)[SHOWN] == 1
    assert not (a.parent / ".a.sage-mem").exists()
    assert owner_of(a.parent / ".ideas.sage-mem") == str(ideas)


def test_a_new_folder_where_a_renamed_one_stood_does_not_get_its_state(
    siblings: tuple[Path, Path],
) -> None:
    a, _ = siblings
    prompt_hook(a, "s1")
    sage_mem(a, "dream", "--mode", "report")
    runs = run_ids(a)
    ideas = a.rename(a.parent / "ideas")
    shutil.copytree(TEMPLATE, a)  # a new `a`, opened before the renamed one
    assert run_ids(a) == []
    assert counts(a) == {}
    assert run_ids(ideas) == runs
    assert counts(ideas)[SHOWN] == 1


def test_moving_the_parent_keeps_the_state(siblings: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = siblings
    prompt_hook(a, "s1")
    moved = a.parent.rename(tmp_path / "moved") / "a"
    folder = MemoryFolder(moved)
    assert folder.state_notes == ()
    assert counts(moved)[SHOWN] == 1
    assert owner_of(folder.state_dir) == str(moved)


def test_a_copied_tree_takes_over_its_copy_of_the_state_and_says_so(
    siblings: tuple[Path, Path], tmp_path: Path,
) -> None:
    a, _ = siblings
    prompt_hook(a, "s1")
    copy = Path(shutil.copytree(a.parent, tmp_path / "copy", symlinks=True)) / "a"
    folder = MemoryFolder(copy)
    assert folder.state_dir == copy.parent / ".a.sage-mem"
    assert str(a) in folder.state_notes[0]
    assert owner_of(folder.state_dir) == str(copy)
    assert MemoryFolder(copy).state_notes == ()
    assert counts(copy)[SHOWN] == 1
    assert owner_of(a.parent / ".a.sage-mem") == str(a)


# explicit state folders


def test_an_explicit_state_folder_is_used_as_given(
    siblings: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = siblings
    shared = old_state(a, b, dream=False)
    explicit = tmp_path / "state"
    for folder in (a, b):
        prompt_hook(folder, f"s-{folder.name}", state=explicit)
    # As before: one state folder named for both is shared by both, and nothing is moved.
    assert MemoryStore(a, state_dir=explicit).stats.retrieval_counts()[SHOWN] == 2
    monkeypatch.setenv("SAGE_MEM_STATE_DIR", str(shared))
    assert MemoryFolder(a).state_dir == shared
    assert MemoryStore(b).stats.retrieval_counts()[SHOWN] == 2
    assert not (explicit / "owner.json").exists() and not (shared / "owner.json").exists()
    assert sorted(p.name for p in a.parent.iterdir()) == [".sage-mem", "a", "b"]


def test_a_folder_that_does_not_exist_yet_changes_nothing(siblings: tuple[Path, Path]) -> None:
    a, _ = siblings
    shared = old_state(a, dream=False)
    before = sorted(os.listdir(a.parent))
    folder = MemoryFolder(a.parent / "new")
    assert folder.state_dir == a.parent / ".new.sage-mem"
    assert sorted(os.listdir(a.parent)) == before
    assert shared.is_dir()


def test_a_very_long_folder_name_still_gets_a_state_folder(tmp_path: Path) -> None:
    folder = tmp_path / ("记" * 84)  # 252 bytes: `.<name>.sage-mem` would be too long
    folder.mkdir()
    write_memory(folder, "x", "---\ndescription: d\n---\n")
    state = MemoryFolder(folder).state_dir
    assert state.parent == tmp_path and len(os.fsencode(state.name)) <= 255
    assert state.name.endswith(".sage-mem") and state != MemoryFolder(tmp_path / "记").state_dir
    sage_mem(folder, "feedback", "x", "helpful")
    assert state.is_dir()
