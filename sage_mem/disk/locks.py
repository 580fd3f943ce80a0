"""Inter-process locks: the folder's write lock (with its write count) and other file locks.

Uses `fcntl.flock`, which the kernel releases when the holder dies, so a lock
can never outlive a crashed process.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreLocked
from .safe_io import make_private_dirs


@contextmanager
def file_lock(path: Path, *, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if needed) for the block."""
    make_private_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLocked(
                        f"{path}: another sage-mem process has held this lock for {timeout:.0f} s",
                        path=path,
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
            except OSError as exc:
                # A file system without locks (NFS without lockd, some FUSE or SMB mounts):
                # refused, never done unlocked, and said where.
                raise StoreLocked(
                    f"{path}: cannot lock ({exc.strerror or exc}): its file system does not "
                    "support file locks; keep the state folder on a local disk "
                    "(SAGE_MEM_STATE_DIR)",
                    path=path,
                ) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


WRITE_LOCK = "write.lock"
_GENERATION = "write.generation"
# Digits in the count file: wider than any count a folder reaches, so each write covers the last.
_WIDTH = 20


class WriteLock:
    """The memory folder's write lock, held: every change to the folder happens inside one.

    `generation` is the folder's write count when the lock was taken. Each
    writer counts its writes (`count`), so a process whose index last saw
    another count knows someone else wrote and reconciles first.
    """

    def __init__(self, state_dir: Path) -> None:
        self._path = state_dir / _GENERATION
        self.generation = read_generation(state_dir)

    def count(self) -> int:
        """Count one more write; returns the new generation (-1 when it could not be stored)."""
        # Not fsynced: a count lost in a crash is followed by a fresh start (a reload) in
        # every process that matters. Written in place at a fixed width and never
        # truncated, so that a writer killed at any instant leaves the old count or the
        # new one, never an empty file that would read as 0 and set the count back.
        generation = read_generation(self._path.parent) + 1
        try:
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.pwrite(fd, f"{generation:0{_WIDTH}d}".encode(), 0)
            finally:
                os.close(fd)
        except OSError:
            return -1
        self.generation = generation
        return generation


@contextmanager
def write_lock(state_dir: Path, *, timeout: float = 10.0) -> Iterator[WriteLock]:
    """Hold the write lock of the memory folder whose state folder is `state_dir`."""
    with file_lock(state_dir / WRITE_LOCK, timeout=timeout):
        yield WriteLock(state_dir)


def read_generation(state_dir: Path) -> int:
    """The folder's write count, as the last writer left it (0 when none is recorded)."""
    try:
        return int((state_dir / _GENERATION).read_bytes() or b"0")
    except (OSError, ValueError):
        return 0
