"""The gates of an automatic run, cheapest first, and the lock that keeps runs one at a time.

1. Time gate: at least `min_hours` since the last run started (one small file read).
2. Session gate: at least `min_sessions` session logs touched since then (one
   directory scan, at most once per `session_scan_minutes`; in between, the
   count from the last scan is reused, since counts only grow).
3. The lock, `<state>/autodream/lock`: an `flock` held for the whole run, with
   the holder's pid and start time written inside. The kernel drops an `flock`
   when its holder dies, so a dead holder never blocks anyone; its stale
   contents are simply overwritten and reported as recovered. A holder that
   lives but has held the lock for longer than `stale_lock_minutes` is taken
   over: a fresh lock file, already locked, is renamed over the old one, under
   a second short lock so that two contenders cannot both take over.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..disk.safe_io import atomic_write
from ..memory.value import iso_datetime, parse_moment
from .config import DreamConfig
from .paths import DreamPaths
from .runinfo import own_identity


@dataclass(frozen=True)
class GateCheck:
    """Whether an automatic run may start; when not, which gate stayed closed and why."""

    open: bool
    gate: str | None = None
    detail: str = ""


def load_state(paths: DreamPaths) -> dict[str, Any]:
    try:
        data = json.loads(paths.state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(paths: DreamPaths, state: dict[str, Any]) -> None:
    paths.ensure()
    text = json.dumps(state, ensure_ascii=False, sort_keys=True, indent=1) + "\n"
    atomic_write(paths.state_file, text.encode("utf-8"))


def check_gates(paths: DreamPaths, config: DreamConfig, now: datetime) -> GateCheck:
    """Time gate, then session gate; updates the session-scan cache in state.json."""
    state = load_state(paths)
    timed = time_gate(state, config, now)
    if not timed.open:
        return timed
    last = parse_moment(state.get("lastRunStarted"))
    if config.min_sessions <= 0 or last is None:
        return GateCheck(True)
    since = state.get("lastRunStarted")
    scan = state.get("sessionScan")
    cache = scan if isinstance(scan, dict) else {}
    scanned_at = parse_moment(cache.get("at"))
    fresh = (
        scanned_at is not None
        and cache.get("since") == since
        and now - scanned_at < timedelta(minutes=config.session_scan_minutes)
    )
    if fresh and scanned_at is not None:  # fresh implies a scan time
        count = int(cache.get("count", 0))
        how = f"counted {_minutes((now - scanned_at).total_seconds() / 60)} ago"
    else:
        count = count_sessions_since(paths, last)
        state["sessionScan"] = {"at": iso_datetime(now), "since": since, "count": count}
        save_state(paths, state)
        how = "counted now"
    if count < config.min_sessions:
        return GateCheck(
            False,
            "sessions",
            f"{count} of {config.min_sessions} sessions with activity since the last run ({how})",
        )
    return GateCheck(True)


def time_gate(state: dict[str, Any], config: DreamConfig, now: datetime) -> GateCheck:
    """The cheapest gate alone: at least `min_hours` since the last run started.

    `state` is `load_state(paths)`: one small file read, cheap enough for a hook.
    """
    last = parse_moment(state.get("lastRunStarted"))
    if last is not None:
        hours = (now - last).total_seconds() / 3600
        if hours < config.min_hours:
            return GateCheck(
                False,
                "time",
                f"last run {_hours(hours)} ago; runs at most every {_hours(config.min_hours)}",
            )
    return GateCheck(True)


def count_sessions_since(paths: DreamPaths, since: datetime) -> int:
    """Session logs (`<state>/sessions/*.json`) modified after `since`: one directory scan."""
    cutoff = since.timestamp()
    count = 0
    try:
        with os.scandir(paths.sessions_dir) as entries:
            for entry in entries:
                if not entry.name.endswith(".json") or entry.name.startswith("."):
                    continue
                try:
                    if entry.stat(follow_symlinks=False).st_mtime > cutoff:
                        count += 1
                except OSError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return count


def _hours(hours: float) -> str:
    return f"{hours:.1f} h" if hours < 10 else f"{hours:.0f} h"


def _minutes(minutes: float) -> str:
    return f"{minutes:.0f} min"


# the lock


@dataclass(frozen=True)
class LockHolder:
    """What a lock file says about the run holding it."""

    run_id: str | None
    pid: int | None
    started: str | None

    def describe(self) -> str:
        who = f"run {self.run_id}" if self.run_id else "a run"
        pid = f", pid {self.pid}" if self.pid else ""
        since = f", since {self.started}" if self.started else ""
        return f"{who}{pid}{since}"


class DreamLock:
    """One dream or rollback at a time. `acquire` never waits: a busy lock is an answer."""

    def __init__(self, paths: DreamPaths, *, stale_after: timedelta) -> None:
        self.paths = paths
        self.stale_after = stale_after
        self._fd: int | None = None
        self.recovered: str | None = None
        self.holder: LockHolder | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, run_id: str, now: datetime) -> bool:
        """Take the lock for `run_id`; False (with `holder` set) when a live, fresh run holds it."""
        self.paths.ensure()
        path = self.paths.lock_file
        for _ in range(5):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                self.holder = holder
                if self._is_stale(holder, now):
                    return self._take_over(run_id, now, holder)
                return False
            if not _same_file(fd, path):
                os.close(fd)  # taken over and replaced while we opened it: look again
                continue
            previous = _read_holder(fd)
            if previous.pid and previous.pid != os.getpid():
                self.recovered = (
                    f"recovered a lock left by {previous.describe()}, whose process is gone"
                )
            self._fd = fd
            _write_holder(fd, run_id, now)
            return True
        return False

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None

    def _is_stale(self, holder: LockHolder, now: datetime) -> bool:
        started = parse_moment(holder.started)
        if started is None:
            return False
        return now - started > self.stale_after

    def _take_over(self, run_id: str, now: datetime, stale: LockHolder) -> bool:
        guard_path = self.paths.base / "lock.takeover"
        guard = os.open(guard_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            # Look again under the guard: another contender may have taken over already.
            fd = os.open(self.paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                current = _read_holder(fd)
                os.close(fd)
                if current != stale or not self._is_stale(current, now):
                    self.holder = current
                    return False
            else:
                # Released meanwhile: an ordinary acquisition.
                if not _same_file(fd, self.paths.lock_file):
                    os.close(fd)
                    return False
                self._fd = fd
                _write_holder(fd, run_id, now)
                return True
            tmp = self.paths.base / f".lock.{os.getpid()}.{secrets.token_hex(4)}"
            new = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(new, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_holder(new, run_id, now)
            os.replace(tmp, self.paths.lock_file)
            self._fd = new
            self.recovered = (
                f"took over a lock held for more than "
                f"{self.stale_after.total_seconds() / 60:.0f} min by {stale.describe()}"
            )
            return True
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)
            os.close(guard)


def _same_file(fd: int, path: os.PathLike[str] | str) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _read_holder(fd: int) -> LockHolder:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid")
    return LockHolder(
        run_id=data.get("runId") if isinstance(data.get("runId"), str) else None,
        pid=pid if isinstance(pid, int) else None,
        started=data.get("started") if isinstance(data.get("started"), str) else None,
    )


def _write_holder(fd: int, run_id: str, now: datetime) -> None:
    data = {"runId": run_id, "started": iso_datetime(now.replace(microsecond=0)), **own_identity()}
    raw = (json.dumps(data) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, raw)
