"""Inter-process locks: the folder's write lock (with its write count) and other file locks.

Uses `fcntl.flock`, which the kernel releases when the holder dies, so a lock
can never outlive a crashed process.

A lock file can be deleted while it is held (`rm -rf` of the state folder, a
cleanup of "safe to delete" state): the holder keeps its lock on the unlinked
file, and the next process would make a new file and lock that at the same
time. So a lock taken is checked to be on the file at the path (else taken
again), and the write lock also locks the memory folder itself, a directory
no state cleanup removes from under its holder.

A writer waits for the write lock while other writers make progress: "not
free for 10 s" means no write was counted for 10 s, not that the lock was
busy for 10 s. A storm of writers queued behind each other (a dozen agents
and the page at 10,000 memories, each holding the lock for a few hundred
ms) is served in turn instead of refused; a holder that is stuck, stopped
or never writes still refuses every waiter after the timeout, and no
waiter waits more than `PATIENCE` timeouts in all.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from ..errors import StoreLocked
from .safe_io import make_private_dirs

# However long writers keep the lock changing hands, a waiter gives up after this many
# timeouts: an agent's call refused in half a minute rather than left waiting for good.
PATIENCE = 3


def _flock(fd: int, path: Path, deadline: float, timeout: float,
           progress: Callable[[], object] | None = None) -> None:
    """Take an exclusive flock on `fd` by `deadline`; StoreLocked when it stays held.

    `progress` reads what holders change as they work (the write count): each
    change seen while waiting moves the deadline to `timeout` from then, up
    to `PATIENCE` timeouts from the start. Any other OSError (a file system
    without locks) is left to the caller.
    """
    delay = 0.002
    seen = progress() if progress is not None else None
    give_up = time.monotonic() + timeout * PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            now = time.monotonic()
            if progress is not None and (current := progress()) != seen:
                seen = current
                deadline = max(deadline, min(now + timeout, give_up))
            if now >= deadline:
                why = (f"not free for {timeout:.0f} s (other sage-mem processes kept this lock)"
                       if deadline < give_up else
                       f"busy for {timeout * PATIENCE:.0f} s (other sage-mem processes kept"
                       " writing)")
                raise StoreLocked(f"{path}: {why}; try again", path=path) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def _is_at(fd: int, path: Path) -> bool:
    """Whether the file open as `fd` is still the one at `path` (not unlinked or replaced)."""
    try:
        at_path = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (at_path.st_dev, at_path.st_ino)


@contextmanager
def file_lock(path: Path, *, timeout: float = 10.0,
              progress: Callable[[], object] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if needed) for the block (`_flock`'s wait)."""
    deadline = time.monotonic() + timeout
    while True:
        make_private_dirs(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _flock(fd, path, deadline, timeout, progress)
        except OSError as exc:
            os.close(fd)
            # A file system without locks (NFS without lockd, some FUSE or SMB mounts):
            # refused, never done unlocked, and said where.
            raise StoreLocked(
                f"{path}: cannot lock ({exc.strerror or exc}): its file system does not "
                "support file locks; keep the state folder on a local disk "
                "(SAGE_MEM_STATE_DIR)",
                path=path,
            ) from None
        except BaseException:
            os.close(fd)
            raise
        if _is_at(fd, path):
            break
        # Deleted (or replaced) while this process waited for it: a process that came
        # since locked the file now at the path and is not held off by this one.
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def folder_lock(root: Path, *, timeout: float = 10.0, deadline: float | None = None,
                progress: Callable[[], object] | None = None) -> Iterator[None]:
    """Hold an exclusive flock on the memory folder's own directory for the block.

    It writes nothing, and no cleanup of the state folder deletes it from under
    its holder; it is one lock for every process writing to the folder, whatever
    state folder each was given (SAGE_MEM_STATE_DIR) and by whatever path (a
    symlink) it came. A folder that cannot be opened is left to the writer's own
    checks; one on a file system that cannot lock a directory leaves the write
    lock to the state folder's lock file alone, as before.
    """
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        try:
            _flock(fd, root, time.monotonic() + timeout if deadline is None else deadline,
                   timeout, progress)
            locked = True
        except StoreLocked:
            raise
        except OSError:
            locked = False
        try:
            yield
        finally:
            if locked:
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
def write_lock(root: Path, state_dir: Path, *, timeout: float = 10.0) -> Iterator[WriteLock]:
    """Hold the write lock of the memory folder `root`, whose state folder is `state_dir`.

    Two locks, always in this order: the lock file in the state folder, which
    also holds off other folders that share that state folder and its write
    count, then the folder itself (`folder_lock`), which still holds when the
    state folder was deleted under a holder. Deadlock-free: whoever holds the
    folder's lock already holds its file's and waits for nothing.
    """
    deadline = time.monotonic() + timeout
    counted = partial(read_generation, state_dir)  # a writer's progress: the write count
    with file_lock(state_dir / WRITE_LOCK, timeout=timeout, progress=counted):
        # What is left of the timeout, or (the wait having moved with others' writes past
        # it) a second to find the folder free: its holder holds the file's lock too, unless
        # it was given another state folder.
        deadline = max(deadline, time.monotonic() + 1.0)
        with folder_lock(root, timeout=timeout, deadline=deadline, progress=counted):
            yield WriteLock(state_dir)


def read_generation(state_dir: Path) -> int:
    """The folder's write count, as the last writer left it (0 when none is recorded)."""
    try:
        return int((state_dir / _GENERATION).read_bytes() or b"0")
    except (OSError, ValueError):
        return 0
