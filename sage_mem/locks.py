"""Inter-process locks: a file lock in the state folder around read-modify-write.

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

from .errors import StoreLocked
from .files import make_private_dirs


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
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
