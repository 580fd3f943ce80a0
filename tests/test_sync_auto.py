"""Autosync (opt-in): a background pull at session start, a debounced push after the server's
writes, a failing remote said once."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import wait_until, write_memory
from sync_support import bare_remote, git, machine, memory, sm, sync, use_private_git

from sage_mem import MemoryStore
from sage_mem.agents import hooks
from sage_mem.agents.hooks import run_hook
from sage_mem.sync import auto

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)
    monkeypatch.delenv(auto.AUTOSYNC_ENV, raising=False)


@pytest.fixture(autouse=True)
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The hook's detached processes, kept so that the test waits for them at its end."""
    processes: list[subprocess.Popen[bytes]] = []

    def spawn(argv: list[str]) -> None:
        processes.append(subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
        ))

    monkeypatch.setattr(hooks, "_spawn_detached", spawn)
    yield processes
    for process in processes:
        process.wait(timeout=120)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    sync(laptop)
    return laptop, desktop


def session_start(folder: Path) -> str:
    """Run the session-start hook in-process; its stderr."""
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-1",
                          "source": "startup", "cwd": str(folder)})
    err = io.StringIO()
    assert run_hook("session-start", io.StringIO(payload), io.StringIO(), err, folder=folder) == 0
    return err.getvalue()


def remote_files(tmp_path: Path) -> str:
    return git(tmp_path / "remote.git", "ls-tree", "-r", "--name-only", "main")


def test_autosync_is_off_until_turned_on(pair: tuple[Path, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    laptop, _ = pair
    state = laptop.parent / ".laptop.sage-mem"
    assert not auto.enabled(laptop, state)
    status, out, _ = sm(laptop, "sync", "--auto", "on")
    assert status == 0 and "Autosync on" in out
    assert auto.enabled(laptop, state)
    monkeypatch.setenv(auto.AUTOSYNC_ENV, "0")
    assert not auto.enabled(laptop, state)
    monkeypatch.delenv(auto.AUTOSYNC_ENV)
    assert sm(laptop, "sync", "--auto", "off")[0] == 0
    assert not auto.enabled(laptop, state)


def test_session_start_pulls_in_the_background(
    pair: tuple[Path, Path], started: list[subprocess.Popen[bytes]]
) -> None:
    laptop, desktop = pair
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi. 小狗。"))
    sync(laptop)
    assert session_start(desktop) == ""
    assert started == []  # off: nothing started
    assert sm(desktop, "sync", "--auto", "on")[0] == 0
    assert session_start(desktop) == ""
    assert len(started) == 1 and started[0].args[-2:] == ["sync", "--background"]
    wait_until(lambda: (desktop / "user_dog.md").is_file(), timeout=60)


def test_the_server_pushes_a_while_after_a_burst_of_writes(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, _ = pair
    store = MemoryStore(laptop, watch=False)
    syncer = auto.AutoSync(store, delay=2.0, log=lambda line: None)
    try:
        store.write("user_dog", description="The dog is Mochi", category="user", body="Mochi.")
        store.write("user_bird", description="The bird is 小蓝", category="user", body="小蓝。")
        wait_until(lambda: "user_bird.md" in remote_files(tmp_path), timeout=60)
    finally:
        syncer.stop()
    assert "user_dog.md" in remote_files(tmp_path)
    subjects = git(laptop, "log", "--format=%s", "-3").splitlines()
    assert any("user_bird" in s and "user_dog" in s for s in subjects), subjects


def test_a_failing_remote_is_said_once_until_a_sync_succeeds(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, _ = pair
    said: list[str] = []
    store = MemoryStore(laptop, watch=False)
    syncer = auto.AutoSync(store, delay=3600, log=said.append)
    try:
        (tmp_path / "remote.git").rename(tmp_path / "gone.git")
        for number in range(2):
            write_memory(laptop, f"user_n{number}", memory(f"Note {number}", "一条笔记。"))
            syncer.run()
        assert len(said) == 1 and "fetching origin failed" in said[0]
        (tmp_path / "gone.git").rename(tmp_path / "remote.git")
        write_memory(laptop, "user_n2", memory("Note 2", "Back online."))
        syncer.run()
        assert len(said) == 1 and "user_n1.md" in remote_files(tmp_path)
        (tmp_path / "remote.git").rename(tmp_path / "gone.git")
        write_memory(laptop, "user_n3", memory("Note 3", "Offline again."))
        syncer.run()
        assert len(said) == 2
    finally:
        syncer.stop()


def test_the_next_session_start_says_once_what_the_background_sync_could_not_reach(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, _ = pair
    assert sm(laptop, "sync", "--auto", "on")[0] == 0
    (tmp_path / "remote.git").rename(tmp_path / "gone.git")
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    assert sm(laptop, "sync", "--background")[0] == 0  # as the hook starts it
    state = laptop.parent / ".laptop.sage-mem"
    assert "fetching origin failed" in auto.read_settings(state)["offline"]
    assert "could not reach the remote" in session_start(laptop)
    assert session_start(laptop) == ""
