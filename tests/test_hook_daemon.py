"""No build on the prompt's path (issue 13, item 2): the hook answers from what exists.

A hook reads at most `loading.HOOK_READS` files and never writes the index
cache; when it lacks one (none yet, many files changed), it says so in its
log and starts `sage-mem daemon` in the background, of which one builds at a
time however many hooks start one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import wait_until, write_memory

from sage_mem import MemoryStore
from sage_mem import store as store_module
from sage_mem.agents import daemon, daemon_start
from sage_mem.disk.folder import MemoryFolder
from sage_mem.search import cache, loading

FOLDER_SIZE = loading.HOOK_READS + 36  # more than a hook may read


def memory(n: int, extra: str = "") -> str:
    words = ["deploy", "garden", "coffee", "budget", "flight", "database"]
    return (f"---\ndescription: note {n} about {words[n % 6]} {extra}\n---\n\n"
            f"{words[n % 6]} body {n} 部署 测试 {extra}\n")


@pytest.fixture
def big(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    for n in range(FOLDER_SIZE):
        write_memory(folder, f"note_{n}", memory(n))
    write_memory(folder, "kettle", memory(999, "kettle descaling with citric acid"))
    moment = time.time() - 3600  # outside the racy window of a build
    for path in folder.rglob("*.md"):
        os.utime(path, (moment, moment))
    return folder


def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    original = store_module.load_memory

    def counting(folder, path, memory_id, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(path)
        return original(folder, path, memory_id, **kwargs)

    monkeypatch.setattr(store_module, "load_memory", counting)
    return seen


def no_cache_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> bool:
        raise AssertionError("the hook wrote the index cache")

    monkeypatch.setattr(cache, "save", refuse)


def ask(folder: Path, text: str, session: str = "s1") -> tuple[str, str]:
    import io

    from sage_mem.agents.hooks import run_hook

    payload = {"session_id": session, "prompt": text, "cwd": str(folder)}
    out, err = io.StringIO(), io.StringIO()
    assert run_hook("user-prompt-submit", io.StringIO(json.dumps(payload)), out, err,
                    folder=folder) == 0
    return out.getvalue(), err.getvalue()


def test_a_hook_without_a_cache_reads_nothing_writes_no_cache_and_says_a_build_runs(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = reads(monkeypatch)
    no_cache_writes(monkeypatch)
    out, err = ask(big, "how do I descale the kettle")
    assert out == ""  # what needs no memory: nothing, for a prompt
    assert seen == []
    assert f"no index cache yet: answered without the {FOLDER_SIZE + 1} memory files" in err
    assert not cache.cache_path(MemoryFolder(big)).exists()


def test_a_hook_after_many_changes_reads_only_a_few_and_never_a_stale_copy(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore(big, watch=False)  # the cache, as any command or the daemon writes it
    written = cache.cache_path(MemoryFolder(big)).stat()
    for n in range(FOLDER_SIZE):  # a checkout rewrites every note
        write_memory(big, f"note_{n}", memory(n, "rewritten"))
    write_memory(big, "kettle", memory(999, "the kettle note now speaks of tea"))
    seen = reads(monkeypatch)
    no_cache_writes(monkeypatch)
    out, err = ask(big, "how do I descale the kettle with citric acid")
    assert len(seen) == loading.HOOK_READS
    changed = FOLDER_SIZE + 1 - loading.HOOK_READS
    assert f"{changed} memory files changed since the index cache was written" in err
    # The kettle note sorts after the notes read: left out, its old text never answered.
    assert "citric" not in out
    assert cache.cache_path(MemoryFolder(big)).stat().st_mtime_ns == written.st_mtime_ns


def test_a_hook_with_a_current_cache_reads_no_file(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore(big, watch=False)
    seen = reads(monkeypatch)
    no_cache_writes(monkeypatch)
    out, err = ask(big, "how do I descale the kettle")
    assert seen == [] and err == ""
    assert "kettle" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_a_damaged_cache_found_by_a_hook_costs_no_build(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore(big, watch=False)
    path = cache.cache_path(MemoryFolder(big))
    data = bytearray(path.read_bytes())
    data[-len(data) // 4 :] = b"\xff" * (len(data) // 4)  # postings: the header still checks out
    path.write_bytes(bytes(data))
    seen = reads(monkeypatch)
    no_cache_writes(monkeypatch)
    store = MemoryStore(big, watch=False, build=False)
    for word in ("deploy", "garden", "coffee", "budget", "flight", "database", "kettle"):
        store.search(word)
    assert seen == []
    assert store.build_needed


def hook_process(folder: Path, text: str, env: dict[str, str],
                 session: str = "s1") -> subprocess.Popen[bytes]:
    payload = {"session_id": session, "prompt": text, "cwd": str(folder)}
    process = subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "hook", "user-prompt-submit"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload).encode())
    process.stdin.close()
    process.stdin = None  # written and closed: communicate() only reads
    return process


def daemon_log(folder: Path) -> list[str]:
    path = MemoryFolder(folder).state_path(daemon.LOG_FILE)
    return path.read_text().splitlines() if path.exists() else []


# What these hooks are checked for is the build they start, not their time: each gets the
# longest budget, so that on a loaded machine (a Python start and a cache load of seconds)
# the budget does not answer for them before they say a build runs, or serve the cache.
UNHURRIED = {"SAGE_MEM_HOOK_BUDGET_MS": "60000"}


def test_two_hooks_at_once_start_one_build_that_outlives_them(big: Path) -> None:
    folder = MemoryFolder(big)
    hooks = [hook_process(big, "descale the kettle", {"SAGE_MEM_DAEMON": "build", **UNHURRIED})
             for _ in range(2)]
    told = 0
    for process in hooks:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0
        told += b"no index cache yet" in err  # (a hook slow to start may find the cache built)
    assert told >= 1
    # Both hooks have ended; the build goes on without them, and finishes.
    wait_until(lambda: cache.cache_path(folder).exists() and not daemon_start.build_running(folder),
               timeout=60)
    log = daemon_log(big)
    assert sum("built the index" in line for line in log) == 1, log
    # A session of its own: a memory is injected once a session, and one of the two hooks,
    # slow to start, may have found the cache built and injected it already.
    later = hook_process(big, "descale the kettle", {"SAGE_MEM_DAEMON": "0", **UNHURRIED},
                         session="s2")
    out, err = later.communicate(timeout=90)
    assert b"kettle" in out and err == b"", err


def test_a_hook_starts_no_build_while_one_runs(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = MemoryFolder(big)
    lock = daemon_start.take_build_lock(folder)
    assert lock is not None
    started: list[list[str]] = []

    def spawn(argv: list[str], *, lock: int | None = None, state_dir: Path | None = None) -> int:
        assert lock is not None  # started holding the build lock for the daemon
        assert state_dir == folder.state_dir  # and told the state folder that lock lies in
        started.append(argv)
        return 0

    monkeypatch.setattr(daemon_start, "spawn_detached", spawn)
    monkeypatch.setenv("SAGE_MEM_DAEMON", "build")
    try:
        ask(big, "descale the kettle")
        assert started == []
    finally:
        os.close(lock)
    ask(big, "descale the kettle")
    assert started == [[sys.executable, "-m", "sage_mem", "--dir", str(big), "daemon",
                        "--build-only"]]


def test_a_daemon_that_finds_the_lock_held_ends_without_building(big: Path) -> None:
    folder = MemoryFolder(big)
    lock = daemon_start.take_build_lock(folder)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "sage_mem", "--dir", str(big), "daemon", "--build-only"],
            capture_output=True, timeout=60,
        )
    finally:
        os.close(lock)  # type: ignore[arg-type]
    assert result.returncode == 0
    assert not cache.cache_path(folder).exists()
    assert any("another daemon or build runs" in line for line in daemon_log(big))


@pytest.fixture
def broken_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a memory raises what no reading error is: a bug."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the parser")

    monkeypatch.setattr(store_module, "load_memory", broken)


def test_a_file_that_breaks_the_loader_is_a_bug_not_a_problem(
    big: Path, broken_loader: None
) -> None:
    """`_load` catches what reading a file raises (InvalidMemory, OSError, ValueError), no more."""
    with pytest.raises(RuntimeError):
        MemoryStore(big, watch=False)


def test_a_daemon_ended_by_an_error_says_so_in_its_log(big: Path, broken_loader: None) -> None:
    """A daemon has no stderr: an error that ends its build is left in its log, not lost."""
    with pytest.raises(RuntimeError):
        daemon.run_daemon(big, build_only=True)
    assert any("ended by an unexpected error: RuntimeError: a bug in the parser" in line
               for line in daemon_log(big))


def test_a_daemon_stopped_while_its_vectors_start_ends_cleanly_with_its_log(big: Path) -> None:
    """SIGTERM the moment the daemon answers hooks: it ends (exit 0) and logs how many.

    With the semantic extra the start of the background embedding (importing
    the model) takes seconds on a busy machine; a SIGTERM in that time once
    killed the daemon by the default action, without its last log line.
    Here that start is made slow on purpose, so the test fails when the
    signals are handled only after it."""
    slow_start = (
        "import sys, time\n"
        "from sage_mem import store\n"
        "original = store.MemoryStore.keep_vectors\n"
        "def slow(self, *args, **kwargs):\n"
        "    time.sleep(3)\n"
        "    return original(self, *args, **kwargs)\n"
        "store.MemoryStore.keep_vectors = slow\n"
        "from sage_mem.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    process = subprocess.Popen([sys.executable, "-c", slow_start, "--dir", str(big), "daemon",
                                "--idle", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: any("answering hooks" in line for line in daemon_log(big)),
                   timeout=60)
        process.terminate()
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert any(line.endswith("ending: answered 0 hooks") for line in daemon_log(big))
