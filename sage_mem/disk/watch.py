"""The watcher: keeps a MemoryStore's index current while the folder changes on disk.

Owns the watchdog observer, the debounce thread and the periodic reconcile.
Imported only when a store is opened with `watch=True`, so the CLI and the
hook commands never pay for watchdog.

Events are used purely as a "something changed at this path" signal. Their
types are not trusted: editors save by rename (`.x.md.tmp -> x.md`, vim's
`x.md -> x.md~`), `git checkout` rewrites hundreds of files at once, and
inotify drops events silently when its queue overflows. So the watcher only
collects the paths an event names (source and destination, files and folders
alike), waits for a short quiet spell, and hands them to `store.refresh`,
which looks at each path again and decides what is a memory. A full stat walk
(`store.reconcile`: the warm start's walk, compared with the walk before it,
reading only the files that differ; 0.3 s of CPU at 100,000 files, waiting
while a hook is answered) runs every `reconcile_seconds` to repair whatever
the events missed, and re-attaches the observer when the folder itself was
deleted, moved away or replaced.

Nothing here may raise into a watchdog thread: an exception in a handler
silently kills the observer, so every callback catches everything and logs it.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver


class Watched(Protocol):
    """What the watcher keeps current (a MemoryStore): all it knows of the store.

    `refresh` and `reconcile` return how many memories changed; the disk floor
    never imports the store, which hands itself in.
    """

    root: Path

    def refresh(self, paths: Iterable[str]) -> int: ...

    def reconcile(self) -> int: ...

    def regenerate_index(self) -> object: ...

logger = logging.getLogger(__name__)

# watchdog's inotify backend warns when `mkdir -p` or `git clone` creates nested
# folders faster than it adds watches for them; the watch is in place either way.
warnings.filterwarnings(
    "ignore", message="Callback with id .* already exists", category=RuntimeWarning,
    module=r"watchdog\.observers\.",
)

_running: weakref.WeakSet[Watcher] = weakref.WeakSet()


def _watchdog_log(record: logging.LogRecord) -> bool:
    """Reconcile at once when inotify reports an overflow; drop watchdog's stop-race noise."""
    message = str(record.msg)
    if "overflow" in message:
        # The kernel dropped events: only a walk can tell what they were.
        for watcher in list(_running):
            watcher.request_reconcile()
    return "called when the thread is inactive" not in message


for _name in ("watchdog.observers.inotify", "watchdog.observers.inotify_c"):
    logging.getLogger(_name).addFilter(_watchdog_log)

QUIET_SECONDS = 0.05
MAX_DELAY_SECONDS = 0.25
# A stream of this many changed paths is a bulk change (a checkout, a pull, a sync):
# it waits for quiet up to BULK_DELAY_SECONDS, so that it lands as one refresh.
BULK_PATHS = 64
BULK_DELAY_SECONDS = 2.0
POLL_SECONDS = 1.0
RETRY_SECONDS = 1.0
STOP_SECONDS = 0.25
RECONCILE_SPACING = 20.0

# Left out on purpose: DirModifiedEvent comes with every change to a folder's
# entries, and following it would re-walk the parent folder on every save (the
# child's own event already names the file); opened and closed-without-writing
# events are reads, including the store's own reads during a refresh.
EVENT_TYPES: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    DirAttribEvent,
]


class Watcher:
    """Watches a store's folder and feeds changed paths to `store.refresh`.

    `poll=True` uses a polling observer (for network drives, where inotify
    sees nothing of other machines' writes); it falls back to polling by
    itself when events cannot be had (e.g. out of inotify watches or instances).
    `flush_count`, `reconcile_count` and `error_count` count what it did.

    A save is visible after `quiet_seconds` of quiet (at most
    `max_delay_seconds` into a continuous stream; a stream of BULK_PATHS
    paths or more, such as a `git checkout`, waits for quiet up to
    BULK_DELAY_SECONDS, and lands as one refresh). A file moved out of the
    folder takes about half a second more: watchdog holds an unpaired move
    that long, waiting for its other half.
    """

    def __init__(
        self,
        store: Watched,
        *,
        poll: bool = False,
        reconcile_seconds: float = 30.0,
        poll_seconds: float | None = None,
        quiet_seconds: float = QUIET_SECONDS,
        max_delay_seconds: float = MAX_DELAY_SECONDS,
    ) -> None:
        self.store = store
        self.root = Path(store.root)
        self.poll = poll
        # Zero or less turns the periodic reconcile off.
        self.reconcile_seconds = reconcile_seconds if reconcile_seconds > 0 else math.inf
        self.poll_seconds = POLL_SECONDS if poll_seconds is None else poll_seconds
        self.quiet_seconds = quiet_seconds
        self.max_delay_seconds = max(max_delay_seconds, quiet_seconds)
        self.keep_catalog = False  # see `_catch_up`
        self.flush_count = 0
        self.reconcile_count = 0
        self.error_count = 0
        self._cond = threading.Condition()
        self._dirty: set[str] = set()
        self._first_event = 0.0
        self._last_event = 0.0
        self._next_reconcile = math.inf
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._observer_lock = threading.Lock()
        self._observer: BaseObserver | None = None
        self._armed_identity: tuple[int, int] | None = None
        self._armed_real_root = str(self.root)

    # lifecycle

    def start(self) -> None:
        """Attach the observer and start the debounce thread (a daemon)."""
        with self._cond:
            if self._thread is not None:
                return
            self._stopping = False
            self._next_reconcile = time.monotonic() + self.reconcile_seconds
        self._arm()
        self._thread = threading.Thread(target=self._run, name="sage-mem-watch", daemon=True)
        self._thread.start()
        _running.add(self)

    def stop(self) -> None:
        """Stop the observer and the debounce thread promptly; pending changes are dropped."""
        deadline = time.monotonic() + STOP_SECONDS
        _running.discard(self)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._disarm(deadline)
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            # A reconcile walk in progress cannot be interrupted; the thread is a
            # daemon and exits as soon as it finishes.
            thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def running(self) -> bool:
        """True while the debounce thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __repr__(self) -> str:
        mode = "poll" if self.poll else "events"
        return f"Watcher({str(self.root)!r}, {mode}, running={self.running})"

    # the event side (watchdog's thread)

    def notify(self, paths: Iterable[str]) -> None:
        """Mark paths as changed; they reach `store.refresh` after the debounce."""
        now = time.monotonic()
        with self._cond:
            if self._stopping:
                return
            if not self._dirty:
                self._first_event = now
            self._dirty.update(paths)
            self._last_event = now
            self._cond.notify_all()

    def request_reconcile(self) -> None:
        """Run the full stat walk now instead of at the next period (e.g. when events were lost)."""
        with self._cond:
            self._next_reconcile = time.monotonic()
            self._cond.notify_all()

    # the debounce thread

    def _run(self) -> None:
        while True:
            with self._cond:
                paths, reconcile = self._wait_for_work()
                if paths is None:
                    return
            try:
                self._do_work(paths, reconcile)
            except Exception:  # noqa: BLE001 - the thread must outlive any bug below it
                self.error_count += 1
                logger.exception("sage-mem watcher: unexpected error; continuing")

    def _wait_for_work(self) -> tuple[set[str] | None, bool]:
        """Block until dirty paths have settled or a reconcile is due; called holding the lock."""
        while not self._stopping:
            now = time.monotonic()
            flush_at = self._flush_at()
            reconcile = now >= self._next_reconcile
            if reconcile:
                # The changed paths stay: refreshed between the walk's chunks as soon as they
                # settle (`refresh_meanwhile`), or after it. The folder itself is the walk's.
                self._next_reconcile = now + self.reconcile_seconds
                root = str(self.root)
                self._dirty = {p for p in self._dirty if not _holds(p, root)}
                return set(), True
            if now >= flush_at:
                paths, self._dirty = self._dirty, set()
                return paths, False
            wake = min(flush_at, self._next_reconcile)
            self._cond.wait(None if wake == math.inf else wake - now)
        return None, False

    def _flush_at(self) -> float:
        """When the changed paths have settled (called holding the lock)."""
        if not self._dirty:
            return math.inf
        # Quiet for a moment, or a continuous stream would never land.
        longest = self.max_delay_seconds
        if len(self._dirty) >= BULK_PATHS:
            longest = max(longest, BULK_DELAY_SECONDS)
        return min(self._last_event + self.quiet_seconds, self._first_event + longest)

    def refresh_meanwhile(self) -> None:
        """Between two chunks of a reconcile (the store calls it there): the changes heard since
        it began are refreshed now, once settled, rather than after the walk.

        A walk of 20,000 files is a tenth of a second of CPU, a second and more on a busy
        machine, and an editor's save heard meanwhile used to wait for all of it before it
        reached the index (and the open page). Only in the watcher's own thread (a reconcile
        that `store.reconcile()` runs elsewhere leaves them to this thread). The folder itself
        among them (moved, replaced) is left for after the walk, as it always was.
        """
        if threading.current_thread() is not self._thread:
            return
        root = str(self.root)
        with self._cond:
            if self._stopping or not self._dirty or time.monotonic() < self._flush_at():
                return
            paths = {p for p in self._dirty if not _holds(p, root)}
            if not paths:
                return
            self._dirty -= paths
        self._call("refresh", lambda: self._catch_up(self.store.refresh(sorted(paths))))
        self.flush_count += 1

    def _do_work(self, paths: set[str], reconcile: bool) -> None:
        # Re-attach first, so that changes made while the walk below runs are seen.
        if reconcile or str(self.root) in paths or self._observer_dead():
            self._rearm_if_moved()
        if reconcile:
            started = time.monotonic()
            self._call("reconcile", lambda: self._catch_up(self.store.reconcile()))
            self.reconcile_count += 1
            ended = time.monotonic()
            with self._cond:
                # A huge folder takes long to walk: keep the walks to a small share of a core.
                spacing = RECONCILE_SPACING * (ended - started)
                self._next_reconcile = max(self._next_reconcile, ended + spacing)
        elif paths:
            self._call("refresh", lambda: self._catch_up(self.store.refresh(sorted(paths))))
            self.flush_count += 1

    def _catch_up(self, changed: int) -> None:
        """After memories changed on disk (a hand edit, `git pull`), bring MEMORY.md in line.

        As every write through the tool does: a long-lived process (the MCP
        server, the page) would otherwise leave a memory made by hand missing
        from MEMORY.md until the next write or `sage-mem index`. Only when the
        store asked for it (`MemoryStore.follow_hand_edits`, which `serve` and
        `ui` do): a library store that watches only to search leaves the
        folder's files to whoever writes them. Only when memories changed (MEMORY.md's own change
        changes none, so this never feeds itself); a folder that cannot be
        written, or whose lock another process holds too long, is left for
        the next change to try.
        """
        if not changed or not self.keep_catalog:
            return
        from ..errors import SageMemError

        try:
            self.store.regenerate_index()
        except (SageMemError, OSError) as exc:
            logger.info("sage-mem watcher: MEMORY.md of %s not brought up to date: %s",
                        self.root, exc)

    def _call(self, what: str, func: Callable[[], object]) -> None:
        try:
            func()
        except Exception:  # noqa: BLE001 - a failed refresh must not stop the watcher
            self.error_count += 1
            logger.exception(
                "sage-mem watcher: %s of %s failed; a reconcile will retry", what, self.root
            )
            with self._cond:
                self._next_reconcile = min(self._next_reconcile, time.monotonic() + RETRY_SECONDS)

    # the observer

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.root)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if os.path.isdir(self.root) else None

    def _observer_dead(self) -> bool:
        observer = self._observer
        if observer is None:
            return self._identity() is not None
        # The inotify reader is a thread of its own; if anything kills it, events stop silently.
        reader = getattr(observer, "_inotify_fd", None)
        return (
            not observer.is_alive()
            or (isinstance(reader, threading.Thread) and not reader.is_alive())
            or not any(e.is_alive() for e in observer.emitters)
        )

    def _rearm_if_moved(self) -> None:
        before = self._armed_identity
        if self._identity() == before and not self._observer_dead():
            return
        self._disarm()
        self._arm()
        if self._observer is not None or self._armed_identity != before:
            # Whatever happened while nothing was watching is found by a walk.
            self.notify([str(self.root)])

    def _arm(self) -> None:
        with self._observer_lock:
            if self._stopping or self._observer is not None:
                return
            identity = self._identity()
            self._armed_identity = identity
            self._armed_real_root = os.path.realpath(self.root)
            try:
                self._observer = self._start_observer(identity is not None)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. out of inotify watches or instances
                failure = exc
            if not self.poll:
                logger.warning(
                    "sage-mem watcher: cannot watch %s for events (%s); polling instead",
                    self.root, failure,
                )
                self.poll = True
                try:
                    self._observer = self._start_observer(identity is not None)
                    return
                except Exception as exc:  # noqa: BLE001
                    failure = exc
            logger.error(
                "sage-mem watcher: cannot watch %s (%s); only the reconcile keeps it current",
                self.root, failure,
            )

    def _start_observer(self, root_exists: bool) -> BaseObserver | None:
        parent = self.root.parent
        # Only a watch on the parent sees the folder itself moved away or re-created;
        # polling the parent could mean listing a whole home folder, so the periodic
        # reconcile notices a folder that comes back instead.
        watch_parent = not self.poll and parent.is_dir()
        if not root_exists and not watch_parent:
            return None
        if self.poll:
            observer: BaseObserver = PollingObserver(timeout=self.poll_seconds)
        else:
            observer = Observer()
        try:
            if root_exists:
                observer.schedule(
                    _Signal(self, only=None), self._armed_real_root,
                    recursive=True, event_filter=EVENT_TYPES,
                )
            if watch_parent:
                observer.schedule(
                    _Signal(self, only=str(self.root)), str(parent),
                    recursive=False, event_filter=EVENT_TYPES,
                )
            observer.start()
        except BaseException:
            _stop_observer(observer, time.monotonic() + STOP_SECONDS)
            raise
        return observer

    def _disarm(self, deadline: float | None = None) -> None:
        with self._observer_lock:
            observer, self._observer = self._observer, None
        if observer is not None:
            _stop_observer(observer, deadline or time.monotonic() + STOP_SECONDS)

    def _translate(self, path: str) -> str:
        """An event path under the watched (real) folder, spelled under the store's root."""
        real = self._armed_real_root
        root = str(self.root)
        if real != root and (path == real or path.startswith(real + os.sep)):
            return root + path[len(real) :]
        return path


def _holds(path: str, root: str) -> bool:
    """Whether `path` is the folder `root` or a folder holding it."""
    return root == path or root.startswith(path.rstrip(os.sep) + os.sep)


class _Signal(FileSystemEventHandler):
    """Turns every watchdog event into dirty paths; never raises into watchdog's thread."""

    def __init__(self, watcher: Watcher, *, only: str | None) -> None:
        super().__init__()
        self._watcher = watcher
        self._only = only

    def dispatch(self, event: FileSystemEvent) -> None:
        try:
            paths = []
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if not raw:
                    continue
                path = self._watcher._translate(os.fsdecode(raw))
                if self._only is None or path == self._only:
                    paths.append(path)
            if paths:
                self._watcher.notify(paths)
        except Exception:  # noqa: BLE001 - an exception here would kill the observer thread
            logger.exception("sage-mem watcher: cannot handle %r", event)


def _stop_observer(observer: BaseObserver, deadline: float) -> None:
    """Stop an observer, waiting for it until `deadline` at most.

    watchdog's stop() joins its own threads, and one of them may be sleeping
    out the half second it waits for the other half of a move: it runs in a
    helper thread, and whatever is left finishes in the background (all
    daemons).
    """

    def stop() -> None:
        try:
            observer.stop()
        except Exception:  # noqa: BLE001 - stopping must never fail the caller
            logger.exception("sage-mem watcher: error while stopping the observer")

    stopper = threading.Thread(target=stop, name="sage-mem-watch-stop", daemon=True)
    stopper.start()
    stopper.join(max(0.0, deadline - time.monotonic()))
    if observer.is_alive() and observer is not threading.current_thread():
        observer.join(max(0.0, deadline - time.monotonic()))


__all__ = ["Watcher", "EVENT_TYPES"]
