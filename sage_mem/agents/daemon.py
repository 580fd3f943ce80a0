"""`sage-mem daemon`: the index built away from the prompt, and hooks answered from it.

A hook never builds (`store.MemoryStore(build=False)`). When it had no
server to ask, it starts this in the background (`daemon_start.start_detached`): its own
session, no stdin/stdout/stderr, so it outlives the hook and finishes what it
started. The daemon:

1. takes the folder's build lock, `<state>/index/<key>.build.lock` (flock,
   never waited for): a second daemon started meanwhile, by a hook at the
   same moment, finds it held and ends at once, so one build runs at a time;
   the lock is the kernel's and goes with the process, whatever ends it; with
   `--build-only`, the cache's racy window is waited out (2 s at most: a file
   written that recently would be read again by the next process, see
   `search/cache.py`): a large folder's first build starts at once and checks
   the files that were within the window once it has passed (`cache.settled`);
   any other waits first;
2. opens the store as any command does: from the cache when it is current,
   else a build that writes it (the cache written, the next hook answers
   from it even if this process is then stopped);
3. unless `--build-only`, answers the folder's hooks on its socket
   (`hook_socket.Listener`) from its live index (a watcher keeps it current)
   until no hook asked for `--idle` seconds (20 minutes by default), or its
   memory folder is gone (deleted or moved away), then ends.

`serve` and `ui` answer hooks the same way while they run (`listen_for_hooks`).

SAGE_MEM_DAEMON says what a hook may start: unset or `1`, a daemon; `build`,
only a build when the cache is missing or out of date (`--build-only`); `0`,
nothing (a folder whose cache is missing then waits for any other sage-mem
command to build it); `off`, nothing, and no server is asked either.

Each daemon writes one line per event to `<state>/daemon.log` (kept short).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..disk.folder import MemoryFolder
from ..disk.safe_io import make_private_dirs
from .daemon_start import BUILDING, READY, handed_build_lock, say_in_lock, take_build_lock

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .hook_socket import Listener

IDLE_SECONDS = 1200.0
LOG_FILE = "daemon.log"
LOG_KEEP_BYTES = 64 << 10


class DaemonLog:
    """One line per event in `<state>/daemon.log`, the older half dropped past LOG_KEEP_BYTES."""

    def __init__(self, folder: MemoryFolder) -> None:
        self.path = folder.state_path(LOG_FILE)

    def __call__(self, message: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"{stamp} pid {os.getpid()}: {message}\n".encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            make_private_dirs(self.path.parent)
            if self.path.exists() and self.path.stat().st_size > LOG_KEEP_BYTES:
                from ..disk.safe_io import atomic_write

                kept = self.path.read_bytes()[-LOG_KEEP_BYTES // 2 :]
                atomic_write(self.path, kept[kept.find(b"\n") + 1 :])
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)


def _settle(folder: MemoryFolder) -> None:
    """Wait (at most `cache.RACY_NS`) until no memory file was written within the racy window.

    A cache built sooner lists those files as racy, and the next process reads
    every one of them again: after a checkout or a sync that brought in the whole
    folder, that is every file. A large folder that will be built whole (no cache,
    or so many files within the window that its cache is rebuilt, as after a join:
    `loading.ADOPT_CACHE_FROM` files or more, built straight into the cache file,
    seconds of build) is not waited for here: its build checks those files once the
    window has passed (`cache.settled`), so that it does not start late (a search
    right after a join waits for it). A cache brought up to date file by file (a few
    pulled) is written as before, and waits.
    """
    from ..search.cache import RACY_NS, cache_path, scan
    from ..search.loading import ADOPT_CACHE_FROM, REBUILD_AFTER, REBUILD_SHARE

    walk = scan(folder)
    if len(walk) >= ADOPT_CACHE_FROM:
        window = time.time_ns() - RACY_NS
        fresh = sum(mtime >= window for mtime in walk.column[1::4])
        if not cache_path(folder).exists() or (
                fresh > REBUILD_AFTER and fresh * REBUILD_SHARE > len(walk)):
            return
    newest = max(walk.column[1::4], default=0)
    wait = (newest + RACY_NS - time.time_ns()) / 1e9
    if wait > 0:
        time.sleep(min(wait, RACY_NS / 1e9))


def _settling_store() -> type[MemoryStore]:
    from ..store import MemoryStore

    class SettlingStore(MemoryStore):
        """`--build-only`'s store: its build sleeps out the racy window (`MemoryStore._settles`)."""

        _settles = True

    return SettlingStore


def listen_for_hooks(store: MemoryStore) -> Listener | None:
    """Answer the folder's hooks from `store` while this process runs (None: another does)."""
    from . import hooks
    from .hook_socket import Listener

    listener = Listener(str(store.root), store.folder.state_dir,
                        lambda request: hooks.serve_request(store, request),
                        hold=store.hold_walks)
    return listener if listener.start() else None


def run_daemon(root: Path, *, idle: float = IDLE_SECONDS, build_only: bool = False,
               poll: bool = False, say: Callable[[str], None] | None = None) -> int:
    """`sage-mem daemon`: build if needed, then answer hooks until idle (see the docstring).

    `say` is told, in one line, why a daemon ends at once (another one runs for the folder):
    a person who started it sees that; a hook's daemon has no stderr. Exit 0 either way:
    the folder is served, which is what was asked."""
    from ..store import MemoryStore

    folder = MemoryFolder(root)
    folder.check_exists()
    log = DaemonLog(folder)

    def ending(logged: str, said: str) -> int:
        log(logged)
        if say is not None:
            say(said)
        return 0

    lock = handed_build_lock(folder)
    if lock is None:
        lock = take_build_lock(folder)
    if lock is None:
        return ending("another daemon or build runs for this folder; nothing to do",
                      f"a daemon (or an index build) already runs for {folder.root}; nothing "
                      f"to do (its log: {log.path})")
    say_in_lock(lock, BUILDING)  # commands opening the folder wait for this build
    try:
        if build_only:
            _settle(folder)
        started = time.monotonic()
        opened = _settling_store() if build_only else MemoryStore
        store = opened(folder.root, watch=not build_only, poll=poll)
        loaded = store.loaded
        how = loaded.how if loaded is not None else "?"
        done = "built the index" if how == "built" else "loaded the index cache"
        wrote = " (cache written)" if loaded is not None and loaded.wrote_cache else ""
        log(f"{done} of {len(store.index)} memories in "
            f"{time.monotonic() - started:.2f} s{wrote}")
        # Ready once the log says so: a command that waited for this build may read it next.
        say_in_lock(lock, READY)
        if build_only:
            return 0
        # Handled from here on, before the listener and the vectors start (with the semantic
        # extra, seconds of model import): a SIGTERM then ends the loop below, with its log.
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda *_: stop.set())
        listener = listen_for_hooks(store)
        if listener is None:
            ending("another process answers this folder's hooks; ending",
                   f"another sage-mem process (serve, ui or a daemon) already answers the "
                   f"hooks of {folder.root}; index cache brought up to date, ending")
            store.close()
            return 0
        log(f"answering hooks on {listener.path} until idle for {idle:.0f} s")
        store.keep_vectors(log)  # with the semantic extra: vectors made in the background
        while not stop.wait(min(1.0, idle)):
            if time.monotonic() - listener.last_request >= idle:
                break
            if not os.path.isdir(folder.root):
                log(f"the memory folder is gone ({folder.root}); ending")
                break
        listener.stop()
        store.close()
        log(f"ending: answered {listener.answered} hooks")
        return 0
    except Exception as exc:
        # A daemon has no stderr: what ended it is said in its log (docs/speed.md).
        log(f"ended by an unexpected error: {type(exc).__name__}: {exc}")
        raise
    finally:
        os.close(lock)
