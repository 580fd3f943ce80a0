"""Autosync (opt-in): a background pull at session start, a debounced push after the server's
writes, a failing remote said once; and it keeps its promise at a session's end and for shared
folders: a write the server's timer has not synced yet is pushed when the server exits or by
the Stop hook (in the background, nothing waits), and a shared folder with `sync --auto on`
syncs."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from support import wait_until, write_memory
from sync_support import bare_remote, git, machine, memory, sm, sync, use_private_git

from sage_mem import MemoryStore
from sage_mem.agents import hooks
from sage_mem.agents.hooks import run_hook
from sage_mem.sync import auto

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


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


# at a session's end, and for shared folders


DOG = {"id": "user_dog", "description": "The dog is Mochi", "category": "user",
       "body": "Mochi. 小狗。"}


async def serve_session(folder: Path, *writes: dict[str, Any]) -> None:
    """A client's session with the real `sage-mem serve`: its writes, then it leaves at once
    (well within the autosync delay, here an hour)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sage_mem", "--dir", str(folder), "serve"],
        cwd=folder.parent, env={**os.environ, auto.DELAY_ENV: "3600"},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        for arguments in writes:
            result = await client.call_tool("memory_write", arguments)
            assert not result.is_error, result


def configure(tmp_path: Path, personal: Path, team: Path) -> None:
    config = tmp_path / "home" / ".config" / "sage-mem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[personal]\npath = "{personal}"\n\n[shared.team]\npath = "{team}"\n',
                      encoding="utf-8")


def stop_hook(folder: Path) -> str:
    err = io.StringIO()
    payload = json.dumps({"hook_event_name": "Stop", "session_id": "s-1",
                          "stop_hook_active": False})
    assert run_hook("stop", io.StringIO(payload), io.StringIO(), err, folder=folder) == 0
    return err.getvalue()


@pytest.mark.anyio
async def test_a_write_just_before_the_server_exits_is_pushed(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, _ = pair
    assert sm(laptop, "sync", "--auto", "on")[0] == 0
    await serve_session(laptop, DOG)
    wait_until(lambda: "user_dog.md" in remote_files(tmp_path), timeout=60)


@pytest.mark.anyio
async def test_a_write_to_a_shared_folder_with_autosync_is_pushed(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    _, desktop = pair
    personal = tmp_path / "personal"
    assert sm(personal, "init")[0] == 0
    configure(tmp_path, personal, desktop)
    assert sm(desktop, "sync", "--auto", "on")[0] == 0
    await serve_session(personal, {**DOG, "folder": "team"})
    wait_until(lambda: "user_dog.md" in remote_files(tmp_path), timeout=60)


def test_the_stop_hook_syncs_a_write_the_server_has_not_synced_yet(
    pair: tuple[Path, Path], tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    laptop, _ = pair
    store = MemoryStore(laptop, watch=False)
    syncer = auto.AutoSync(store, delay=3600, log=lambda line: None)
    try:
        store.write("user_cat", description="The cat is Sesame", category="user", body="猫。")
        assert stop_hook(laptop) == "" and started == []  # autosync off: nothing started
        assert sm(laptop, "sync", "--auto", "on")[0] == 0
        store.write("user_dog", description="The dog is Mochi", category="user", body="小狗。")
        assert stop_hook(laptop) == ""
        assert len(started) == 1 and started[0].args[-2:] == ["sync", "--background"]
        wait_until(lambda: "user_dog.md" in remote_files(tmp_path), timeout=60)
        started[0].wait(timeout=60)
        stop_hook(laptop)  # nothing waits any more: nothing started
        assert len(started) == 1
    finally:
        syncer.stop()


def test_session_start_pulls_a_shared_folder_with_autosync(
    pair: tuple[Path, Path], tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    laptop, desktop = pair
    personal = tmp_path / "personal"
    assert sm(personal, "init")[0] == 0
    configure(tmp_path, personal, desktop)
    assert sm(desktop, "sync", "--auto", "on")[0] == 0
    write_memory(laptop, "user_bird", memory("The bird is 小蓝", "小蓝。"))
    sync(laptop)
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-2",
                          "source": "startup", "cwd": str(personal)})
    assert run_hook("session-start", io.StringIO(payload), io.StringIO(), io.StringIO(),
                    folder=personal) == 0
    assert [p.args[4] for p in started] == [str(desktop)]
    wait_until(lambda: (desktop / "user_bird.md").is_file(), timeout=60)
