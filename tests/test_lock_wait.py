"""How long a writer waits for the folder's write lock: while others write, and when they stop.

A storm of writers at 10,000 memories (agents, the CLI and the page at once,
each holding the lock a few hundred ms) used to have most of them refused
after 10 s though the lock kept changing hands: a waiter now waits while
the write count moves, and still gives up on a holder that writes nothing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from sage_mem.disk import locks
from sage_mem.disk.locks import write_lock
from sage_mem.errors import StoreLocked


def folders(tmp_path: Path) -> tuple[Path, Path]:
    root, state = tmp_path / "memory", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    return root, state


def holding(root: Path, state: Path, *, seconds: float, writes: int) -> threading.Thread:
    """A writer holding the lock `seconds`, counting `writes` writes spread over them."""
    held = threading.Event()

    def run() -> None:
        with write_lock(root, state) as lock:
            held.set()
            for _ in range(writes):
                time.sleep(seconds / writes)
                lock.count()
            time.sleep(seconds if writes == 0 else 0)

    thread = threading.Thread(target=run)
    thread.start()
    assert held.wait(5)
    return thread


def test_a_writer_waits_its_turn_while_the_holder_keeps_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "PATIENCE", 20)  # only the wait's moving deadline is tried here
    root, state = folders(tmp_path)
    holder = holding(root, state, seconds=1.2, writes=12)
    started = time.monotonic()
    try:
        with write_lock(root, state, timeout=0.4) as lock:
            waited = time.monotonic() - started
            assert lock.generation == 12  # after every write of the holder, not beside it
    finally:
        holder.join()
    assert waited > 0.4


def test_a_holder_that_writes_nothing_still_refuses_after_the_timeout(tmp_path: Path) -> None:
    root, state = folders(tmp_path)
    holder = holding(root, state, seconds=1.5, writes=0)
    started = time.monotonic()
    try:
        with pytest.raises(StoreLocked, match="not free for"):
            with write_lock(root, state, timeout=0.3):
                pass
        waited = time.monotonic() - started
    finally:
        holder.join()
    assert 0.25 < waited < 1.2


def test_no_writer_waits_longer_than_its_patience_however_long_others_write(
        tmp_path: Path) -> None:
    root, state = folders(tmp_path)
    holder = holding(root, state, seconds=0.2 * locks.PATIENCE + 1.0, writes=40)
    started = time.monotonic()
    try:
        with pytest.raises(StoreLocked, match="busy for .* kept writing"):
            with write_lock(root, state, timeout=0.2):
                pass
        waited = time.monotonic() - started
    finally:
        holder.join()
    assert 0.2 * locks.PATIENCE - 0.05 < waited < 0.2 * locks.PATIENCE + 0.5
