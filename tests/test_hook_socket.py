"""Hooks answered by a running sage-mem process over its Unix socket (issue 13, item 1).

The hook runs as a real process, as Claude Code runs it; the server is a real
`Listener` on a real socket (in this process, or `sage-mem daemon`). What is
proved: the server's answer is the hook's own path's answer, and the session
they share stays consistent; the hook then imports almost nothing; a dead,
silent, foreign or refused socket costs a fallback, never a lost or doubled
answer; only the socket's own user is answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import TEMPLATE, unix_address, wait_until, write_memory
from test_hook_imports import ENTRY_POINTS, forbidden, imported_by_hook

from sage_mem import MemoryStore
from sage_mem.agents import daemon, hook_socket, hooks
from sage_mem.disk.folder import MemoryFolder, default_folder

PROMPT = "how do I run the tests before a release"
OTHER_USER = 65534  # nobody


def hook(folder: Path, text: str = PROMPT, session: str = "s1", *,
         env: dict[str, str] | None = None,
         event: str = "user-prompt-submit") -> subprocess.CompletedProcess[bytes]:
    payload = {"session_id": session, "prompt": text, "cwd": str(folder), "source": "startup"}
    return subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "hook", event],
        input=json.dumps(payload).encode(), capture_output=True, timeout=60,
        env={**os.environ, **(env or {})},
    )


def context(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return ""
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 1  # one answer, never two
    return json.loads(lines[0])["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
def folder(memory_dir: Path) -> Path:
    MemoryStore(memory_dir, watch=False)  # the cache, so the fallback answers in full
    return memory_dir


@pytest.fixture
def server(folder: Path) -> Iterator[hook_socket.Listener]:
    store = MemoryStore(folder, watch=False)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    yield listener
    listener.stop()


def test_the_server_answers_as_the_hook_would_and_both_keep_one_session(
    folder: Path, server: hook_socket.Listener
) -> None:
    by_server = context(hook(folder, session="s1"))
    assert server.answered == 1
    assert "reference_test_command" in by_server
    server.stop()
    by_itself = context(hook(folder, session="s2"))
    assert by_itself == by_server
    # The server recorded what it injected into s1: the hook's own path does not repeat it.
    assert context(hook(folder, session="s1")) == ""


def test_the_server_answers_while_its_store_walks_the_folder(folder: Path) -> None:
    """The watcher's stat walk (a reconcile) holds the store's refresh lock for its whole length,
    seconds for 100,000 files: a hook then is answered by the server all the same, not after
    the walk (past the socket's wait, so on the hook's own, far slower path)."""
    store = MemoryStore(folder, watch=False)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    walking, done = threading.Event(), threading.Event()

    def walk() -> None:
        with store._refresh_lock:  # what `store.reconcile` holds while it walks
            walking.set()
            done.wait(30)

    walker = threading.Thread(target=walk, daemon=True)
    walker.start()
    try:
        assert walking.wait(10)
        for answered, session in enumerate(("s1", "s2"), 1):  # the first's record held nothing
            result = hook(folder, session=session, env={"SAGE_MEM_HOOK_SOCKET_MS": "2000"})
            assert "reference_test_command" in context(result)
            assert listener.answered == answered
            assert b"did not answer" not in result.stderr
    finally:
        done.set()
        walker.join()
        listener.stop()


def test_the_walk_is_held_off_while_the_server_answers_a_hook(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a hook is answered the watcher's walk waits (`MemoryStore.hold_walks`): a hold is
    on from the connection to the answer sent, and off again after, recording included."""
    store = MemoryStore(folder, watch=False)
    during: list[dict[int, int]] = []
    real = hooks.serve_request

    def serve(store: MemoryStore, request: dict) -> tuple:  # type: ignore[type-arg]
        during.append(dict(store._holds))
        reply, after = real(store, request)

        def recorded() -> None:
            during.append(dict(store._holds))
            if after is not None:
                after()

        return reply, recorded

    monkeypatch.setattr(hooks, "serve_request", serve)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    try:
        assert "reference_test_command" in context(hook(folder, session="s1"))
        assert listener.answered == 1
        wait_until(lambda: len(during) == 2)
        assert len(during[0]) == 1 and during[1] == {}
        assert store._holds == {}
    finally:
        listener.stop()


def test_what_the_hook_injected_the_server_does_not_repeat(folder: Path) -> None:
    first = context(hook(folder, session="s1"))
    assert "reference_test_command" in first
    store = MemoryStore(folder, watch=False)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    try:
        assert context(hook(folder, session="s1")) == ""
        assert listener.answered == 1
    finally:
        listener.stop()


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_the_session_start_answers_match_too(folder: Path, event: str) -> None:
    by_itself = context(hook(folder, session="a", event=event))
    store = MemoryStore(folder, watch=False)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    try:
        assert context(hook(folder, session="b", event=event)) == by_itself
        assert listener.answered == 1
    finally:
        listener.stop()


@pytest.mark.parametrize("entry", list(ENTRY_POINTS.values()), ids=list(ENTRY_POINTS))
def test_a_hook_a_server_answers_imports_almost_nothing(
    folder: Path, server: hook_socket.Listener, entry: list[str]
) -> None:
    payload = {"session_id": "s9", "prompt": PROMPT, "cwd": str(folder)}
    imported, result = imported_by_hook(entry, "user-prompt-submit", payload,
                                        "--dir", str(folder))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert server.answered == 1
    assert not forbidden(imported)
    heavy = {"sage_mem.store", "sage_mem.agents.context", "sage_mem.search.index",
             "sage_mem.memory.value", "dataclasses", "yaml", "hashlib"}
    assert not heavy & imported


def test_the_socket_is_0600_and_only_its_owner_is_answered(
    folder: Path, server: hook_socket.Listener
) -> None:
    mode = server.path.stat().st_mode
    assert mode & 0o777 == 0o600
    assert MemoryFolder(folder).state_dir.stat().st_mode & 0o077 == 0
    server.owner_uid = os.getuid() + 1  # as if the hook ran as another user
    result = hook(folder)
    assert "reference_test_command" in context(result)  # answered on its own path
    assert server.refused == 1 and server.answered == 0


def as_other_user(action: Callable[[], int]) -> int:
    """Run `action` in a child process of user `nobody`; its return value is the exit status."""
    pid = os.fork()
    if pid == 0:  # the child: only system calls, then out
        status = 3
        try:
            os.setgid(OTHER_USER)
            os.setuid(OTHER_USER)
            status = action()
        finally:
            os._exit(status)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.fixture
def open_place() -> Iterator[Path]:
    """A folder every user can reach (tmp_path's parents are the test user's alone)."""
    place = Path(tempfile.mkdtemp(prefix="sage-mem-test-", dir="/tmp"))
    os.chmod(place, 0o777)
    yield place
    shutil.rmtree(place, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_is_stopped_by_the_mode_and_then_by_the_peer_check(
    folder: Path, open_place: Path
) -> None:
    """0600 stops another user at connect(); past it (made 0666), the listener refuses them."""
    store = MemoryStore(folder, watch=False)
    listener = hook_socket.Listener(str(store.root), open_place,
                                    lambda request: hooks.serve_request(store, request))
    assert listener.start()

    def connect() -> int:
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.connect(str(listener.path))
        except PermissionError:
            return 0
        try:
            sock.sendall(b'{"v": 1}\n')
            return 1 if sock.recv(10) else 2  # 2: closed unanswered
        except OSError:
            return 2

    try:
        assert as_other_user(connect) == 0
        assert listener.refused == 0
        os.chmod(listener.path, 0o666)
        assert as_other_user(connect) == 2
        assert listener.refused == 1 and listener.answered == 0
    finally:
        listener.stop()


def test_a_dead_socket_falls_back_silently(folder: Path) -> None:
    state = MemoryFolder(folder).state_dir
    dead = socket.socket(socket.AF_UNIX)
    path = state / hook_socket.socket_name(str(folder))
    with unix_address(path) as address:
        dead.bind(address)
    os.chmod(path, 0o600)
    dead.close()  # the file stays, nobody listens: what a killed server leaves
    result = hook(folder)
    assert "reference_test_command" in context(result)
    assert result.stderr == b""


def test_a_server_that_never_answers_costs_the_wait_then_the_hooks_own_answer(
    folder: Path,
) -> None:
    state = MemoryFolder(folder).state_dir
    silent = socket.socket(socket.AF_UNIX)
    path = state / hook_socket.socket_name(str(folder))
    with unix_address(path) as address:
        silent.bind(address)
    os.chmod(path, 0o600)
    silent.listen()
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True)
    thread.start()
    try:
        # Within a budget of 1.5 s: the 200 ms wait, then the hook's own answer, in full.
        result = hook(folder, env={"SAGE_MEM_HOOK_SOCKET_MS": "200",
                                   "SAGE_MEM_HOOK_BUDGET_MS": "1500"})
        assert "reference_test_command" in context(result)
        assert b"did not answer in time" in result.stderr
        assert b"time budget" not in result.stderr
    finally:
        silent.close()
        for conn in accepted:
            conn.close()


@pytest.mark.parametrize("reply", [b"HTTP/1.1 400 Bad Request\r\n\r\n", b'{"v": 1}\n',
                                   b'{"v": 1, "answer": "text"}\n', b'{"v": 1, "answer": {}',
                                   b"[" * 100_000 + b"]" * 100_000 + b"\n"])
def test_a_socket_that_answers_something_else_falls_back(folder: Path, reply: bytes) -> None:
    state = MemoryFolder(folder).state_dir
    other = socket.socket(socket.AF_UNIX)
    path = state / hook_socket.socket_name(str(folder))
    with unix_address(path) as address:
        other.bind(address)
    os.chmod(path, 0o600)
    other.listen()

    def answer() -> None:
        conn, _ = other.accept()
        conn.recv(1 << 16)
        conn.sendall(reply)
        conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        result = hook(folder)
        assert "reference_test_command" in context(result)
        assert b"unexpected error" not in result.stderr and b"Traceback" not in result.stderr
    finally:
        other.close()


@pytest.mark.parametrize("case", ["open to others", "another owner", "not a socket"])
def test_a_foreign_socket_file_is_never_asked(folder: Path, case: str) -> None:
    state = MemoryFolder(folder).state_dir
    path = state / hook_socket.socket_name(str(folder))
    asked: list[bytes] = []
    if case == "not a socket":
        path.write_text("")
    else:
        trap = socket.socket(socket.AF_UNIX)
        with unix_address(path) as address:
            trap.bind(address)
        trap.listen()
        trap.settimeout(0.1)
        if case == "open to others":
            os.chmod(path, 0o666)
        else:
            if os.getuid() != 0:
                pytest.skip("needs root to give the socket to another user")
            os.chmod(path, 0o600)
            os.chown(path, OTHER_USER, -1)
    result = hook(folder)
    assert "reference_test_command" in context(result)
    assert b"not asked" in result.stderr
    if case != "not a socket":
        try:
            asked.append(trap.accept()[0].recv(10))
        except TimeoutError:
            pass
        trap.close()
        assert asked == []


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to listen as another user")
def test_a_socket_served_by_another_user_is_not_asked(folder: Path, open_place: Path) -> None:
    """A socket file of the hook's own user, mode 0600, but another user's process behind it."""
    elsewhere = open_place
    bound = elsewhere / "s.sock"
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(ready_w)
    if pid == 0:  # the other user's listener: answers anything with a well-formed answer
        try:
            os.setgid(OTHER_USER)
            os.setuid(OTHER_USER)
            trap = socket.socket(socket.AF_UNIX)
            with unix_address(bound) as address:
                trap.bind(address)
            trap.listen()
            os.write(ready_w, b"r")
            trap.settimeout(20)
            conn = trap.accept()[0]
            conn.recv(1 << 16)
            conn.sendall(b'{"v": 1, "answer": null, "log": []}\n')
            time.sleep(1)
        finally:
            os._exit(0)
    try:
        assert os.read(ready_r, 1) == b"r"  # b"": the child failed before listening
        path = MemoryFolder(folder).state_dir / hook_socket.socket_name(str(folder))
        os.rename(bound, path)
        os.chown(path, os.getuid(), -1)
        os.chmod(path, 0o600)
        result = hook(folder)
        assert "reference_test_command" in context(result)
        assert b"runs as another user" in result.stderr
    finally:
        os.close(ready_r)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_one_listener_per_folder(folder: Path, server: hook_socket.Listener) -> None:
    second = daemon.listen_for_hooks(MemoryStore(folder, watch=False))
    assert second is None
    server.stop()
    assert not server.path.exists()
    third = daemon.listen_for_hooks(MemoryStore(folder, watch=False))
    assert third is not None
    third.stop()


def test_a_state_folder_path_too_long_for_a_socket_address_still_works(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "memory"
    deep.parent.mkdir(parents=True)
    shutil.copytree(TEMPLATE, deep)
    store = MemoryStore(deep, watch=False)
    assert len(str(store.folder.state_dir / "hook-00000000.sock")) > 108
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    try:
        assert "reference_test_command" in context(hook(deep))
        assert listener.answered == 1
    finally:
        listener.stop()


@pytest.mark.parametrize("where", ["named", "default", "env"])
def test_the_hook_finds_the_state_folder_memory_folder_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "named":
        root = tmp_path / "notes"
    elif where == "default":
        monkeypatch.delenv("SAGE_MEM_DIR")
        root = default_folder()
    else:
        root = tmp_path / "notes"
        monkeypatch.setenv("SAGE_MEM_STATE_DIR", str(tmp_path / "state"))
    root.mkdir(parents=True)
    write_memory(root, "a", "---\ndescription: a\n---\nb\n")
    given = None if where == "default" else root
    found = MemoryFolder(given if given is not None else default_folder())
    assert hooks._folder_root(given) == str(found.root)
    assert hook_socket.state_dirs(str(found.root))[0] == str(found.state_dir)


def test_the_daemon_answers_hooks_until_idle_then_ends(folder: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "daemon", "--idle", "4"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        path = MemoryFolder(folder).state_dir / hook_socket.socket_name(str(folder))
        wait_until(path.exists, timeout=60)
        result = hook(folder)
        assert "reference_test_command" in context(result)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = MemoryFolder(folder).state_path(daemon.LOG_FILE).read_text()
    assert "answered 1 hooks" in log
    assert not path.exists()


def test_the_daemon_ends_when_its_memory_folder_is_gone(folder: Path) -> None:
    """A folder deleted or moved away has no hooks left to answer: its daemon does not
    wait out its idle time (20 minutes) holding the old index."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "daemon", "--idle", "600"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        path = MemoryFolder(folder).state_dir / hook_socket.socket_name(str(folder))
        wait_until(path.exists, timeout=60)
        folder.rename(folder.with_name("moved"))
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = MemoryFolder(folder).state_path(daemon.LOG_FILE).read_text()
    assert "the memory folder is gone" in log


def test_many_hooks_at_once_all_reach_a_server_that_was_busy_a_moment(folder: Path) -> None:
    """Many sessions' hooks connect in the same instant as the server is busy (its accept
    thread not scheduled, stopped here): each waits in the listen queue for its answer
    instead of being turned away (EAGAIN) into a slow answer of its own."""
    hooks_at_once = 48
    process = subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "daemon", "--idle", "60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    root = hooks._folder_root(str(folder))
    connected: list[int] = []
    real_connect = hook_socket._connect

    def counted(sock: socket.socket, state: str, name: str) -> None:
        try:
            real_connect(sock, state, name)
        finally:
            connected.append(1)

    notes: list[str] = []
    answered: list[object] = []

    def one(n: int) -> None:
        request = {"v": hook_socket.PROTOCOL, "event": "UserPromptSubmit", "root": root,
                   "payload": {"session_id": f"s{n}", "prompt": "测试 how do I run the tests"},
                   "cwd": str(folder), "env": {}}
        reply = hook_socket.ask(root, request, 30.0, notes.append)
        if reply is not None:
            answered.append(reply.answer)
            reply.done()

    try:
        path = MemoryFolder(folder).state_dir / hook_socket.socket_name(str(folder))
        wait_until(path.exists, timeout=60)
        hook_socket._connect = counted
        process.send_signal(signal.SIGSTOP)
        threads = [threading.Thread(target=one, args=(n,)) for n in range(hooks_at_once)]
        for thread in threads:
            thread.start()
        wait_until(lambda: len(connected) == hooks_at_once)
        process.send_signal(signal.SIGCONT)
        for thread in threads:
            thread.join(timeout=60)
    finally:
        hook_socket._connect = real_connect
        process.send_signal(signal.SIGCONT)
        process.kill()
        process.wait()
    assert notes == []
    assert len(answered) == hooks_at_once
    assert all("reference_test_command" in json.dumps(answer) for answer in answered)


def test_a_hook_slow_to_acknowledge_never_holds_up_the_next_hooks_answer(
    folder: Path, server: hook_socket.Listener
) -> None:
    """A hook that has its answer but is slow to say it wrote it (descheduled on a loaded
    machine, stopped) must not make the server keep the next session's hook waiting past
    its 300 ms, into an answer of its own."""
    root = hooks._folder_root(str(folder))

    def request(session: str) -> dict[str, object]:
        return {"v": hook_socket.PROTOCOL, "event": "UserPromptSubmit", "root": root,
                "payload": {"session_id": session, "prompt": "测试 how do I run the tests"},
                "cwd": str(folder), "env": {}}

    slow = hook_socket.ask(root, request("slow"), 5.0, pytest.fail)
    assert slow is not None  # answered, and holding back its acknowledgement
    try:
        notes: list[str] = []
        started = time.monotonic()
        # Just under the server's wait for an acknowledgement (a hook's own wait is 300 ms).
        quick = hook_socket.ask(root, request("quick"), hook_socket.ACK_WAIT * 0.9,
                                notes.append)
        waited = time.monotonic() - started
        assert notes == [] and quick is not None, (notes, waited)
        assert "reference_test_command" in json.dumps(quick.answer)
        quick.done()
    finally:
        slow.done()
