"""A sync killed with SIGKILL at any moment leaves a folder the next sync finishes, nothing lost.

The sync runs as its own process group (so its git children and the merge
driver die with it) and is killed at points spread over the time a whole sync
takes: while committing, fetching, merging (the driver writing a sibling),
regenerating MEMORY.md, pushing. After each kill, plain syncs on both machines
must succeed and end with every version of every memory present.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import write_memory
from sync_support import (
    bare_remote,
    files,
    git,
    index_is_current,
    machine,
    memory,
    no_markers,
    sm,
    sync,
    use_private_git,
)

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.kills,
]

# (the step whose progress line is awaited, seconds to wait after it): before and during each.
KILL_POINTS = [
    ("committing", 0.0), ("committing", 0.05), ("fetching", 0.0), ("fetching", 0.05),
    ("merging", 0.0), ("merging", 0.1), ("merging", 0.3), ("merging", 0.6),
    ("pushing", 0.0), ("pushing", 0.05),
]


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def edits(laptop: Path, desktop: Path, round_: int) -> tuple[str, str]:
    """Both machines rewrite `user_cat` (a conflict) and add a memory of their own."""
    mine, theirs = f"laptop-{round_} 笔记本", f"desktop-{round_} 台式机"
    write_memory(laptop, "user_cat", memory("The cat is Sesame", f"Sesame is orange.\n\n{mine}"))
    write_memory(desktop, "user_cat", memory("The cat is Sesame", f"Sesame is orange.\n\n{theirs}"))
    write_memory(laptop, f"user_l{round_}", memory(f"Laptop note {round_}", mine))
    write_memory(desktop, f"user_d{round_}", memory(f"Desktop note {round_}", theirs))
    return mine, theirs


def start_sync(folder: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "sync"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )


def kill_at(process: subprocess.Popen[bytes], step: str, delay: float) -> bool:
    """SIGKILL the sync and all its children `delay` s after it says it starts `step`;
    False when it ended first."""
    assert process.stderr is not None
    for line in process.stderr:
        if step in line.decode("utf-8", "replace"):
            time.sleep(delay)
            break
    alive = process.poll() is None
    if alive:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    process.stderr.close()
    return alive


def bodies(folder: Path, memory_id: str) -> str:
    """The text of the memory and of every conflict sibling of it."""
    return "\n".join(p.read_text(encoding="utf-8")
                     for p in sorted(folder.glob(f"{memory_id}*.md")))


def test_a_sync_killed_at_any_step_is_finished_by_the_next(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "user_cat", memory("The cat is Sesame", "Sesame is orange."))
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    # The remote's side of a push in a session of its own, as a server's is: killing the
    # sync's process group must not kill the remote mid-update (a local remote's
    # receive-pack is otherwise the push's child, and a kill inside its ref update leaves
    # the remote's branch locked for every machine: git's own behaviour, no sync's).
    git(desktop, "config", "remote.origin.receivepack", "setsid git-receive-pack")
    sync(laptop)

    interrupted, states = 0, []
    for round_, (step, delay) in enumerate(KILL_POINTS, start=1):
        mine, theirs = edits(laptop, desktop, round_)
        sync(laptop)
        interrupted += kill_at(start_sync(desktop), step, delay)
        states.append(left_behind(desktop))

        sync(desktop)  # finishes whatever the killed one left
        sync(laptop)
        sync(desktop)
        for folder in (laptop, desktop):
            assert git(folder, "status", "--porcelain") == ""
            no_markers(folder)
            index_is_current(folder)
            for text in (mine, theirs):
                assert text in bodies(folder, "user_cat"), (round_, folder.name, text)
            assert mine in (folder / f"user_l{round_}.md").read_text(encoding="utf-8")
            assert theirs in (folder / f"user_d{round_}.md").read_text(encoding="utf-8")
        assert files(laptop) == files(desktop)
        git(desktop, "fsck", "--no-progress")
    # A kill at once after a step's progress line lands while the sync still runs; one
    # after a delay may come after a fast machine's sync has ended (it is then a plain
    # sync, still checked above).
    at_once = sum(1 for _, delay in KILL_POINTS if delay == 0.0)
    assert interrupted >= at_once - 1, "the kills came after the syncs had ended"
    assert len(set(states)) >= 2, states  # the kills left the folder in different states
    print(states)


def left_behind(folder: Path) -> str:
    """What a kill left: a merge in progress, uncommitted changes, or a clean folder."""
    if (folder / ".git" / "MERGE_HEAD").exists():
        return "merging"
    if git(folder, "status", "--porcelain"):
        return "uncommitted"
    ahead = git(folder, "rev-list", "--count", "origin/main..HEAD").strip()
    return "unpushed" if ahead != "0" else "clean"


# Every file the merge writes goes through one of these; the child counts their calls.
KILL_AT_WRITE = """
import os, signal, sys
from sage_mem.sync import git as sync_git, steps

kill_at, calls = int(sys.argv[2]), [0]

def counted(real):
    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call

steps.rewrite, steps.remove = counted(steps.rewrite), counted(steps.remove)
sync_git.create = counted(sync_git.create)
from sage_mem.cli import main
sys.exit(main(["--dir", sys.argv[1], "sync"]))
"""


def test_a_sync_killed_at_each_write_of_a_merge_of_a_renamed_memory_keeps_the_edit(
    tmp_path: Path,
) -> None:
    """The laptop renames `user_cat` and changes a line, the desktop changes the same line;
    the desktop's sync, merging, is killed at its first file write, then its second, …
    The merge deletes `user_cat.md` (renamed on the other side) and writes `user_kitty.md`
    with the desktop's line: a kill between the two left the line in no file, and the next
    sync committed the deletion (until 2026-12, when the deletions came first)."""
    mine, theirs = "She is four.", "她三岁。"
    for kill_at in range(1, 20):
        round_ = tmp_path / str(kill_at)
        remote = bare_remote(round_)
        laptop = machine(round_ / "laptop", remote, "laptop", first=True)
        write_memory(laptop, "user_cat", memory("The cat is Sesame",
                                                "Sesame is orange.\n\nShe is three."))
        sync(laptop)
        desktop = machine(round_ / "desktop", remote, "desktop")
        assert sm(laptop, "mv", "user_cat", "user_kitty")[0] == 0
        text = (laptop / "user_kitty.md").read_text(encoding="utf-8")
        (laptop / "user_kitty.md").write_text(text.replace("She is three.", mine),
                                              encoding="utf-8")
        text = (desktop / "user_cat.md").read_text(encoding="utf-8")
        (desktop / "user_cat.md").write_text(text.replace("She is three.", theirs),
                                             encoding="utf-8")
        sync(laptop)
        killed = subprocess.run([sys.executable, "-c", KILL_AT_WRITE, str(desktop),
                                 str(kill_at)], capture_output=True, text=True, timeout=120)
        sync(desktop)  # finishes whatever the killed one left
        sync(laptop)
        sync(desktop)
        for folder in (laptop, desktop):
            kept = "\n".join(p.read_text(encoding="utf-8") for p in folder.glob("user_*.md"))
            assert mine in kept and theirs in kept, (kill_at, folder.name, kept)
            no_markers(folder)
            index_is_current(folder)
        assert files(laptop) == files(desktop)
        if killed.returncode != -signal.SIGKILL:
            assert killed.returncode == 0, killed.stderr
            break  # the sync wrote fewer files than kill_at: every write was a kill point
    assert kill_at > 3, "the merge wrote no files"  # MEMORY.md, the sibling, the memory…
