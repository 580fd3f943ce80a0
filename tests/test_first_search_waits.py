"""A command finds another process building the folder's first index: it waits for that
cache instead of building a second index beside it (the first search after a join).

`sync --remote` into a new folder starts the index's build in the background
(`sync_command.index_in_background`); a search started meanwhile used to build its own
index at the same time: a cold start's CPU, twice its wall time on a busy machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sage_mem.agents.daemon_start import take_build_lock, wait_for_running_build
from sage_mem.disk.folder import MemoryFolder
from sage_mem.search.cache import cache_path
from sage_mem.store import MemoryStore

WAITING = "waiting for the search index another sage-mem process is building"


@pytest.fixture
def build_lock(memory_dir: Path) -> Iterator[list[int]]:
    """The folder's build lock, held by this test as a building daemon would hold it."""
    fd = take_build_lock(MemoryFolder(memory_dir))
    assert fd is not None
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


def test_a_folder_with_a_cache_is_opened_at_once_while_a_daemon_holds_the_lock(
        memory_dir: Path) -> None:
    MemoryStore(memory_dir, watch=False).close()
    fd = take_build_lock(MemoryFolder(memory_dir))  # a serving daemon holds it for life
    assert fd is not None
    try:
        out, err = search(memory_dir, "tests before changing behaviour").communicate(timeout=30)
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
