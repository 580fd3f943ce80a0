"""Autosync (opt-in): pull at session start in the background, push after writes, debounced.

Off unless turned on for a folder: `sage-mem sync --auto on` writes
`{"enabled": true}` to `autosync.json` in its state folder (`--auto off`
turns it off); SAGE_MEM_AUTOSYNC=1/0 overrides the file either way.

- **Session start** (`sage-mem hook session-start`): `start_in_background`
  starts `sage-mem sync` as a detached process (its own session, no pipes) and
  the hook answers without waiting. It costs the hook one small file read and,
  when on, one process start; never git, never a network wait.
- **After writes** (the long-lived `sage-mem serve`): `AutoSync` listens to
  the store; the first change starts a timer (`SAGE_MEM_AUTOSYNC_DELAY`
  seconds, default 30) and changes meanwhile push it back, so a burst of writes
  is one sync. It syncs in its own thread, only when git says something
  changed, so what a sync itself brings in does not start another.
- **When the session ends** (the last write less than the delay before): a
  write the timer has not synced yet is marked in `autosync.json`
  (`"pending": true`); the Stop hook, at the end of each of the agent's turns,
  starts the background sync when it finds the mark (`flush_pending`: one
  small file read, never git, never a wait), and a server exiting with its
  timer still running starts it too (`AutoSync.stop(flush=…)`). A sync
  clears the mark as it starts.
- **Shared folders**: each folder whose own state has autosync on
  (`sage-mem --dir ~/team sync --auto on`) is synced like the personal one, at
  session start and after the server's writes to it.
- **Offline, or a failing remote**: said once (the hook's or the server's
  stderr) until a sync succeeds again; the background sync records it in
  `autosync.json` and the next session start says it. Retried at the next
  session start or write, never blocking anything.

This module imports nothing heavy: the hook process loads it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import MemoryStore

AUTOSYNC_ENV = "SAGE_MEM_AUTOSYNC"
DELAY_ENV = "SAGE_MEM_AUTOSYNC_DELAY"
SETTINGS = "autosync.json"
DEFAULT_DELAY = 30.0
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def settings_path(state_dir: Path) -> Path:
    return state_dir / SETTINGS


def read_settings(state_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(settings_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_settings(state_dir: Path, **changes: Any) -> dict[str, Any]:
    from ..disk.safe_io import atomic_write, make_private_dirs

    data = {**read_settings(state_dir), **changes}
    data = {key: value for key, value in data.items() if value is not None}
    make_private_dirs(state_dir)
    atomic_write(settings_path(state_dir),
                 (json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n").encode())
    return data


def enabled(root: Path, state_dir: Path) -> bool:
    """SAGE_MEM_AUTOSYNC when set, else the folder's setting; never without a repository."""
    if not (root / ".git").exists():
        return False
    flag = os.environ.get(AUTOSYNC_ENV, "").strip().lower()
    if flag in _TRUE | _FALSE:
        return flag in _TRUE
    return read_settings(state_dir).get("enabled") is True


def take_offline_note(state_dir: Path) -> str | None:
    """What the last background sync could not reach, once: it is marked as said."""
    data = read_settings(state_dir)
    note = data.get("offline")
    if not isinstance(note, str) or data.get("offlineSaid") is True:
        return None
    try:
        write_settings(state_dir, offlineSaid=True)
    except OSError:
        pass
    return note


def record(state_dir: Path, offline: str | None) -> None:
    """After a sync: remember a failure to reach the remote (said once), or clear it."""
    data = read_settings(state_dir)
    if offline is None and "offline" not in data:
        return
    if offline is not None and data.get("offline") == offline:
        return
    data.pop("offline", None)
    data.pop("offlineSaid", None)
    if offline is not None:
        data["offline"] = offline
    from ..disk.safe_io import atomic_write

    atomic_write(settings_path(state_dir),
                 (json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n").encode())


def start_in_background(root: Path, spawn: Callable[[list[str]], object]) -> None:
    """Start `sage-mem sync --background` detached (`spawn` is the hook's detacher)."""
    spawn([sys.executable, "-m", "sage_mem", "--dir", str(root), "sync", "--background"])


def mark_pending(state_dir: Path, pending: bool) -> None:
    """Say (or unsay) that a write waits for the server's timer to be synced."""
    if (read_settings(state_dir).get("pending") is True) != pending:
        write_settings(state_dir, pending=True if pending else None)


def take_pending(state_dir: Path) -> bool:
    """Whether a write waited to be synced; the mark is cleared (a sync is about to run)."""
    if read_settings(state_dir).get("pending") is not True:
        return False
    try:
        write_settings(state_dir, pending=None)
    except OSError:
        pass
    return True


def flush_pending(root: Path, state_dir: Path, spawn: Callable[[list[str]], object]) -> bool:
    """The Stop hook's: a write not yet synced is synced now, in the background (True)."""
    if not enabled(root, state_dir) or read_settings(state_dir).get("pending") is not True:
        return False
    start_in_background(root, spawn)
    return True


class AutoSync:
    """Sync a store's folder a while after its last write (the long-lived server's)."""

    def __init__(self, store: MemoryStore, *, delay: float | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.root = store.folder.root
        self.state_dir = store.folder.state_dir
        if delay is None:
            try:
                delay = float(os.environ.get(DELAY_ENV, DEFAULT_DELAY))
            except ValueError:
                delay = DEFAULT_DELAY
        self.delay = max(0.0, delay)
        self.log = log or (lambda line: sys.stderr.write(f"sage-mem: {line}\n"))
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._running = threading.Lock()
        self._said: str | None = None
        self._due = False  # a write the timer has not synced yet
        self._remove = store.add_listener(self.changed)

    def changed(self) -> None:
        if not self._due:
            self._due = True
            try:
                mark_pending(self.state_dir, True)
            except OSError:
                pass  # the server's exit still syncs it; a Stop hook will not know
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.delay, self.run)
            self._timer.daemon = True
            self._timer.start()

    def run(self) -> None:
        if not self._running.acquire(blocking=False):
            self.changed()  # a sync is under way: try again after it
            return
        try:
            from .git import Git
            from .steps import sync

            self._due = False  # a write from now on is due again
            take_pending(self.state_dir)
            if not Git(self.root).text("status", "--porcelain", check=False).strip():
                return
            result = sync(self.root)
            offline = result.offline
        except Exception as exc:  # a background job: report, never raise into the server
            offline = str(exc)
        finally:
            self._running.release()
        if offline and offline != self._said:
            self.log(f"autosync: {offline} (retried after the next write)")
        self._said = offline
        try:
            record(self.state_dir, offline)
        except OSError:
            pass

    def stop(self, flush: Callable[[list[str]], object] | None = None) -> None:
        """Stop listening; with `flush` (the server's exit), a write the timer has not synced
        yet is synced by a background `sync` that `flush` starts (detached)."""
        self._remove()
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if flush is not None and self._due:
            try:
                take_pending(self.state_dir)
                start_in_background(self.root, flush)
                self._due = False
            except OSError as exc:
                self.log(f"autosync: not synced at exit: {exc.strerror or exc}")
