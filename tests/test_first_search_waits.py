"""A command finds another process building the folder's first index: it waits for that
cache instead of building a second index beside it (the first search after a join).

`sync --remote` into a new folder starts the index's build in the background
(`sync_command.index_in_background`); a search started meanwhile used to build its own
index at the same time: a cold start's CPU, twice its wall time on a busy machine.
"""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import wait_until, write_memory
from sync_support import bare_remote, machine, memory, sm, sync, use_private_git

from sage_mem.agents.daemon import run_daemon
from sage_mem.agents.daemon_start import (
    BUILDING,
    READY,
    build_lock_path,
    handed_build_lock,
    say_in_lock,
    start_holding_lock,
    take_build_lock,
    wait_for_running_build,
)
from sage_mem.disk import folder as folder_module
from sage_mem.disk.folder import MemoryFolder
from sage_mem.search import HOOK_READS
from sage_mem.search import cache as cache_module
from sage_mem.search import loading as loading_module
from sage_mem.search.cache import cache_path
from sage_mem.store import MemoryStore

WAITING = "waiting for the search index another sage-mem process is building"


@pytest.fixture
def build_lock(memory_dir: Path) -> Iterator[list[int]]:
    """The folder's build lock, held by this test as a building daemon would hold it."""
    fd = take_build_lock(MemoryFolder(memory_dir))
    assert fd is not None
    say_in_lock(fd, BUILDING)
    held = [fd]
    yield held
    for each in held:
        os.close(each)
    held.clear()


def search(memory_dir: Path, query: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "--dir", str(memory_dir), "search", query],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_a_search_waits_for_the_cache_another_process_is_building_and_loads_it(
        memory_dir: Path, build_lock: list[int]) -> None:
    assert not cache_path(MemoryFolder(memory_dir)).exists()
    proc = search(memory_dir, "tests before changing behaviour")
    time.sleep(1.5)
    assert proc.poll() is None, "the search built its own index instead of waiting"
    assert not cache_path(MemoryFolder(memory_dir)).exists()
    MemoryStore(memory_dir, watch=False).close()  # the other process's build: its cache
    say_in_lock(build_lock[0], READY)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "feedback_tests_first" in out
    assert WAITING in err and err.count("\n") == 1


def test_a_search_goes_on_by_itself_once_the_build_lock_is_let_go_without_a_cache(
        memory_dir: Path, build_lock: list[int]) -> None:
    proc = search(memory_dir, "下一个版本")
    time.sleep(1.0)
    assert proc.poll() is None, "the search built its own index instead of waiting"
    os.close(build_lock.pop())  # the build died: the kernel let its lock go
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "project_release_zh" in out
    assert WAITING in err


@pytest.mark.parametrize("said", [READY, b""], ids=["ready", "an-older-daemon"])
def test_a_folder_is_opened_at_once_while_a_serving_daemon_holds_the_lock(
        memory_dir: Path, said: bytes) -> None:
    MemoryStore(memory_dir, watch=False).close()
    fd = take_build_lock(MemoryFolder(memory_dir))  # a serving daemon holds it for life
    assert fd is not None
    say_in_lock(fd, said)
    try:
        proc = search(memory_dir, "tests before changing behaviour")
        out, err = proc.communicate(timeout=30)
    finally:
        os.close(fd)
    assert "feedback_tests_first" in out
    assert WAITING not in err


def test_the_wait_ends_at_its_limit_when_the_cache_never_comes(
        memory_dir: Path, build_lock: list[int]) -> None:
    said: list[str] = []
    started = time.monotonic()
    wait_for_running_build(MemoryFolder(memory_dir), say=said.append, limit=0.5)
    assert 0.5 <= time.monotonic() - started < 5
    assert len(said) == 1 and said[0].startswith(WAITING)


def test_no_wait_and_nothing_said_when_no_one_builds(memory_dir: Path) -> None:
    said: list[str] = []
    wait_for_running_build(MemoryFolder(memory_dir), say=said.append, limit=30)
    assert said == []


def test_a_started_daemon_is_handed_the_build_lock_before_its_python_starts(
        memory_dir: Path, tmp_path: Path) -> None:
    folder = MemoryFolder(memory_dir)
    said = tmp_path / "said"
    script = (
        "import os, sys, time\n"
        "from sage_mem.agents.daemon_start import handed_build_lock\n"
        "from sage_mem.disk.folder import MemoryFolder\n"
        f"fd = handed_build_lock(MemoryFolder({str(memory_dir)!r}))\n"
        f"open({str(said)!r}, 'w').write(repr(fd is not None))\n"
        "time.sleep(0.5)\n"
    )
    assert start_holding_lock(folder, [sys.executable, "-c", script])
    assert take_build_lock(folder) is None  # held from the moment the start returned
    assert not start_holding_lock(folder, [sys.executable, "-c", "pass"])  # a second starter
    wait_until(lambda: said.exists() and said.read_text() == "True")
    fd = wait_until(lambda: take_build_lock(folder), timeout=30)  # let go as it ended
    assert isinstance(fd, int)
    os.close(fd)


def test_a_started_daemon_works_in_the_state_folder_whose_lock_it_was_handed(
        memory_dir: Path, tmp_path: Path) -> None:
    """The starter's state folder (here named outright, as SAGE_MEM_STATE_DIR or a
    `state_dir=` does) is the daemon's too: one it found by itself could be another, where
    the lock it was handed guards nothing it builds (CI once met a join's build whose log
    was not in the join's state folder)."""
    state = tmp_path / "elsewhere-state"
    folder = MemoryFolder(memory_dir, state_dir=state)
    said = tmp_path / "said"
    script = (
        "import os\n"
        "from sage_mem.agents.daemon_start import handed_build_lock\n"
        "from sage_mem.disk.folder import MemoryFolder\n"
        f"folder = MemoryFolder({str(memory_dir)!r})\n"
        f"open({str(said)!r}, 'w').write(repr((str(folder.state_dir), "
        "handed_build_lock(folder) is not None)))\n"
    )
    assert start_holding_lock(folder, [sys.executable, "-c", script])
    wait_until(lambda: said.exists() and said.read_text().endswith(")"))
    assert said.read_text() == repr((str(state), True))


def test_a_handed_descriptor_that_is_not_the_folders_lock_is_not_taken_up(
        memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = os.open(tmp_path / "other", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        monkeypatch.setenv("SAGE_MEM_BUILD_LOCK_FD", str(other))
        assert handed_build_lock(MemoryFolder(memory_dir)) is None
        monkeypatch.setenv("SAGE_MEM_BUILD_LOCK_FD", "not a number")
        assert handed_build_lock(MemoryFolder(memory_dir)) is None
    finally:
        os.close(other)


def test_the_first_search_right_after_a_join_waits_for_the_joins_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    use_private_git(tmp_path, monkeypatch)
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    for n in range(HOOK_READS + 6):  # more than a search reads by itself: a build follows
        write_memory(laptop, f"project/note_{n:03d}", memory(f"Release note {n}", f"Step {n}."))
    write_memory(laptop, "user_cat", memory("The cat is Sesame", "Sesame 是一只橘猫。"))
    sync(laptop)
    monkeypatch.setenv("SAGE_MEM_DAEMON", "build")  # as a user's sage-mem does by default
    desktop = tmp_path / "desktop"
    sync(desktop, "--remote", str(remote))
    status, out, err = sm(desktop, "search", "Sesame")
    assert status == 0, err
    assert "user_cat" in out
    assert WAITING in err  # not a second build beside the join's
    log = MemoryFolder(desktop).state_path("daemon.log").read_text(encoding="utf-8")
    # The join's build made the index of what came (the folder's empty cache brought up to
    # date), and the search loaded it.
    assert f"of {HOOK_READS + 7} memories" in log and "(cache written)" in log


def test_a_lock_file_that_is_a_fifo_or_a_link_is_not_waited_on(
        memory_dir: Path, tmp_path: Path) -> None:
    folder = MemoryFolder(memory_dir)
    path = build_lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.write_bytes(BUILDING)
    for make in (lambda: os.mkfifo(path), lambda: path.symlink_to(outside)):
        path.unlink(missing_ok=True)
        make()
        said: list[str] = []
        started = time.monotonic()
        wait_for_running_build(folder, say=said.append, limit=30)
        assert said == [] and time.monotonic() - started < 5


def _cache_header(folder: MemoryFolder) -> dict:
    data = cache_path(folder).read_bytes()
    length = int.from_bytes(data[8:16], "little")
    header: dict = marshal.loads(data[16 + 4 : 16 + length])
    return header


def _fresh_folder(root: Path, count: int) -> int:
    """`count` memories written just now (as a checkout writes them); the newest of their
    timestamps."""
    for n in range(count):
        write_memory(root, f"project/note_{n:03d}", memory(f"Release note {n}", f"Step {n}."))
    write_memory(root, "user_cat", memory("The cat is Sesame", "Sesame 是一只橘猫。"))
    stats = [path.stat() for path in root.rglob("*.md") if path.name != "MEMORY.md"]
    return max(max(s.st_mtime_ns, s.st_ctime_ns) for s in stats)


def test_a_large_folders_background_build_starts_at_once_and_leaves_no_file_to_read_again(
        memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`daemon --build-only` on a folder just checked out: the build no longer waits for the
    racy window before it starts (the first search after a join waited for that too); it
    checks the files once the window has passed, so the cache still lists none as racy and
    the next process reads no file again."""
    monkeypatch.setattr(loading_module, "ADOPT_CACHE_FROM", 10)  # built straight to the cache
    monkeypatch.setattr(cache_module, "RACY_NS", 600_000_000)
    newest = _fresh_folder(memory_dir, 30)
    assert run_daemon(memory_dir, build_only=True) == 0
    folder = MemoryFolder(memory_dir)
    assert _cache_header(folder)["started_ns"] < newest + cache_module.RACY_NS
    store = MemoryStore(memory_dir, watch=False)
    found = cache_module.load(folder, scoring=store.index.scoring)
    assert found is not None and not found.racy
    assert not found.compare(cache_module.scan(folder)).differs
    assert [hit.id for hit in store.search("Sesame", limit=3)][:1] == ["user_cat"]


def test_a_few_files_brought_into_a_large_cached_folder_are_still_waited_for_first(
        memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache brought up to date file by file (a sync that pulled a few into a large
    folder) is not a build that checks its files afterwards: the daemon still waits out
    the window before it opens the folder, so the cache lists none of them as racy."""
    monkeypatch.setattr(loading_module, "ADOPT_CACHE_FROM", 10)
    monkeypatch.setattr(cache_module, "RACY_NS", 600_000_000)
    _fresh_folder(memory_dir, 30)
    moment = time.time() - 3600
    for path in memory_dir.rglob("*.md"):
        os.utime(path, (moment, moment))
    MemoryStore(memory_dir, watch=False).close()  # its cache
    time.sleep(0.7)  # every ctime outside the window too
    for n in range(3):
        write_memory(memory_dir, f"project/pulled_{n}", memory(f"Pulled {n}", "Came later."))
    newest = max(path.stat().st_mtime_ns for path in memory_dir.rglob("pulled_*.md"))
    assert run_daemon(memory_dir, build_only=True) == 0
    folder = MemoryFolder(memory_dir)
    assert _cache_header(folder)["started_ns"] >= newest + cache_module.RACY_NS
    found = cache_module.load(folder, scoring=MemoryStore(memory_dir, watch=False).index.scoring)
    assert found is not None and not found.racy


def test_a_file_whose_bytes_differ_from_what_the_build_read_stays_racy(
        memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check after the window reads the files again: bytes other than those indexed
    (changed within one timestamp tick of the build's read, so no signature moved) keep
    every file racy, read again by the next process, as before."""
    monkeypatch.setattr(loading_module, "ADOPT_CACHE_FROM", 10)
    monkeypatch.setattr(cache_module, "RACY_NS", 600_000_000)
    _fresh_folder(memory_dir, 30)
    real = folder_module.read_memory
    checked: list[str] = []

    def changed_meanwhile(folder: MemoryFolder, path: Path):  # type: ignore[no-untyped-def]
        seen = real(folder, path)
        checked.append(path.name)
        if path.name == "user_cat.md":
            return seen._replace(raw=(seen.raw or b"").replace(b"Sesame", b"Sesamo"))
        return seen

    monkeypatch.setattr(folder_module, "read_memory", changed_meanwhile)  # settled's read
    class Settling(MemoryStore):  # as `daemon --build-only`'s store
        _settles = True

    Settling(memory_dir, watch=False).close()
    assert "user_cat.md" in checked
    found = cache_module.load(MemoryFolder(memory_dir),
                              scoring=MemoryStore(memory_dir, watch=False).index.scoring)
    assert found is not None and "user_cat.md" in found.racy


def test_a_joins_build_starts_as_soon_as_the_remotes_files_are_checked_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The join starts the index's build right after its checkout, beside the rest of the
    join (MEMORY.md made of every memory that came, its commit), not once it returned: a
    git wrapper looks at the build lock as each git command of the join starts."""
    real_git = shutil.which("git")
    if real_git is None:
        pytest.skip("git is not installed")
    use_private_git(tmp_path, monkeypatch)
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    for n in range(HOOK_READS + 6):
        write_memory(laptop, f"project/note_{n:03d}", memory(f"Release note {n}", f"Step {n}."))
    sync(laptop)
    desktop = tmp_path / "desktop"
    seen = tmp_path / "seen"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import fcntl, os, sys\n"
        f"lock, seen, git = {str(build_lock_path(MemoryFolder(desktop)))!r}, {str(seen)!r}, "
        f"{real_git!r}\n"
        "state = 'none'\n"
        "try:\n"
        "    fd = os.open(lock, os.O_RDWR)\n"
        "except OSError:\n"
        "    pass\n"
        "else:\n"
        "    try:\n"
        "        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "        state = 'free'\n"
        "    except OSError:\n"
        "        state = 'held'\n"
        "    os.close(fd)\n"
        "words = [a for a in sys.argv[1:] if not a.startswith('-')]\n"
        "with open(seen, 'a') as out:\n"
        "    out.write(state + ' ' + (words[1] if len(words) > 1 else '') + '\\n')\n"
        "os.execv(git, ['git', *sys.argv[1:]])\n", encoding="utf-8")
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}",
           "SAGE_MEM_DAEMON": "build"}
    done = subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(desktop), "sync",
                           "--remote", str(remote)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"pulled {HOOK_READS + 6}" in done.stdout
    lines = seen.read_text(encoding="utf-8").splitlines()
    checkout = next(n for n, line in enumerate(lines) if line.endswith(" checkout"))
    assert all(not line.startswith("held") for line in lines[: checkout + 1])
    after = lines[checkout + 1 :]
    assert after and all(line.startswith("held") for line in after), lines
    status, out, err = sm(desktop, "search", "Release note 7")
    assert status == 0 and "project/note_007" in out, err
