"""The gates of an automatic run, cheapest first, and the lock that keeps runs one at a time.

1. Time gate: at least `min_hours` since the last run that *finished* started
   (one small file read). A run that was killed or failed half-way does not
   close the gate: the next automatic run goes ahead. From the second such run
   in a row, the next one waits (`RETRY_AFTER`, doubled with each further
   failure, never more than `min_hours`), so a run that fails every time is
   not started again by every session.
2. Session gate: at least `min_sessions` sessions with activity since then (one
   directory scan, at most once per `session_scan_minutes`; in between, the
   count from the last scan is reused, since counts only grow).
3. The lock, `<state>/autodream/lock`: an `flock` held for the whole run, with
   the holder's pid and start time written inside. The kernel drops an `flock`
   when its holder dies, so a dead holder never blocks anyone (its stale
   contents are overwritten and reported as recovered), and a held `flock`
   means a live holder: it is never taken over, however long it has held the
   lock, so two runs never overlap. A holder older than `stale_lock_minutes`
   is only named as possibly stuck (with its pid) in the answer.

`state.json`, the gates' memory (every write under `state.lock`, so that a run
and a gate check never lose each other's update):

    {"lastRun":      {"runId": …, "started": …, "status": "running" | "finished" | "interrupted"},
     "lastFinished": {"runId": …, "started": …, "finished": …},
     "sessionScan":  {"at": …, "since": …, "count": …},
     "failedInARow": 2}   # runs that did not finish since the last one that did; absent: 0

`lastRun` is the newest run started and says `finished` only once its manifest
does; `lastFinished` is what the gates count from. (A state file from before
these keys has `lastRunStarted`, read as the last finished run's start.)

Sessions (`<state>/sessions/`, one file per session, its mtime the session's
last activity): `<id>.json`, the log the Claude Code hook keeps for session
`<id>`; `<id>.mcp.json`, an MCP session of a client that names its Claude Code
session (`CLAUDE_CODE_SESSION_ID`, which Claude Code gives the MCP servers it
starts) — the same session as the hook's `<id>.json`, so counted once;
`<hex>.conn.json`, any other MCP session (Codex, Cursor, any client of `sage-mem
serve`): one per connection. The server marks its session (`mcp_server/server.py`,
`SessionActivity`), on its tool calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..disk.processes import own_identity
from ..disk.safe_io import atomic_write, text_bytes
from ..memory.value import iso_datetime, parse_moment
from .config import DreamConfig
from .paths import DreamPaths

RUNNING, FINISHED, INTERRUPTED = "running", "finished", "interrupted"
# After the second run in a row that did not finish, the next automatic one waits
# this long from the last one's start; each further failure doubles it.
RETRY_AFTER = timedelta(minutes=15)
_LEGACY_KEYS = ("lastRunId", "lastRunStarted", "lastRunFinished", "lastRunStatus")


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
    atomic_write(paths.state_file, text_bytes(text))


@contextlib.contextmanager
def _state_lock(paths: DreamPaths) -> Iterator[None]:
    paths.ensure()
    fd = os.open(paths.state_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for one small read and write
        yield
    finally:
        os.close(fd)


def update_state(paths: DreamPaths, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Read state.json, apply `change` to it and write it back, under `state.lock`."""
    with _state_lock(paths):
        state = load_state(paths)
        change(state)
        save_state(paths, state)
    return state


def last_finished_start(state: dict[str, Any]) -> str | None:
    """When the last run that finished started: what the gates count from."""
    finished = state.get("lastFinished")
    if isinstance(finished, dict):
        started = finished.get("started")
        return started if isinstance(started, str) else None
    legacy = state.get("lastRunStarted")
    return legacy if isinstance(legacy, str) else None


def record_start(paths: DreamPaths, run_id: str, started: str) -> None:
    """A run has started: `lastRun` says running (the gates still count from `lastFinished`)."""

    def change(state: dict[str, Any]) -> None:
        _migrate(state)
        state["lastRun"] = {"runId": run_id, "started": started, "status": RUNNING}

    update_state(paths, change)


def record_end(paths: DreamPaths, run_id: str, status: str, finished: str | None = None) -> None:
    """A run has ended as `status` (finished or interrupted); only `finished` closes the gates.

    Idempotent, and a run that is no longer the newest one only ever moves
    `lastFinished` forward, never back.
    """

    def change(state: dict[str, Any]) -> None:
        _migrate(state)
        last = state.get("lastRun")
        started: str | None = None
        if isinstance(last, dict) and last.get("runId") == run_id:
            if status != FINISHED and last.get("status") != status:
                state["failedInARow"] = _failed_in_a_row(state) + 1
            elif status == FINISHED:
                state.pop("failedInARow", None)
            last["status"] = status
            started = last.get("started") if isinstance(last.get("started"), str) else None
        if status != FINISHED:
            return
        if started is None:
            started = _run_id_moment(run_id)
        previous = last_finished_start(state)
        if started is None or (previous is not None and _later(previous, started)):
            return
        state["lastFinished"] = {"runId": run_id, "started": started, "finished": finished}

    update_state(paths, change)


def _migrate(state: dict[str, Any]) -> None:
    legacy = state.get("lastRunStarted")
    if "lastFinished" not in state and isinstance(legacy, str):
        state["lastFinished"] = {
            "runId": state.get("lastRunId"),
            "started": legacy,
            "finished": state.get("lastRunFinished"),
        }
    for key in _LEGACY_KEYS:
        state.pop(key, None)


def _later(a: str, b: str) -> bool:
    moment_a, moment_b = parse_moment(a), parse_moment(b)
    return moment_a is not None and moment_b is not None and moment_a > moment_b


def _run_id_moment(run_id: str) -> str | None:
    # A run id starts with its UTC start time: 20261129T201500Z-1a2b.
    try:
        moment = datetime.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%SZ")
    except ValueError:
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def check_gates(paths: DreamPaths, config: DreamConfig, now: datetime) -> GateCheck:
    """Time gate, then session gate; updates the session-scan cache in state.json."""
    state = load_state(paths)
    timed = time_gate(state, config, now)
    if not timed.open:
        return timed
    since = last_finished_start(state)
    last = parse_moment(since)
    if config.min_sessions <= 0 or last is None:
        return GateCheck(True)
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
        scanned = {"at": iso_datetime(now), "since": since, "count": count}
        update_state(paths, lambda state: state.update(sessionScan=scanned))
        how = "counted now"
    if count < config.min_sessions:
        return GateCheck(
            False,
            "sessions",
            f"{count} of {config.min_sessions} sessions with activity since the last run ({how})",
        )
    return GateCheck(True)


def time_gate(state: dict[str, Any], config: DreamConfig, now: datetime) -> GateCheck:
    """The cheapest gate alone: at least `min_hours` since the last finished run started.

    `state` is `load_state(paths)`: one small file read, cheap enough for a hook.
    """
    last = parse_moment(last_finished_start(state))
    if last is not None:
        hours = (now - last).total_seconds() / 3600
        if hours < config.min_hours:
            return GateCheck(
                False,
                "time",
                f"last run {_hours(hours)} ago; runs at most every {_hours(config.min_hours)}",
            )
    return _retry_gate(state, config, now)


def _retry_gate(state: dict[str, Any], config: DreamConfig, now: datetime) -> GateCheck:
    """Closed for a while after two or more runs in a row that did not finish.

    A `lastRun` still marked running counts as one that did not finish: its
    process was killed (a live one holds the lock, which refuses a second run
    anyway) and nobody has marked it interrupted yet.
    """
    last = state.get("lastRun")
    failures = _failed_in_a_row(state)
    if isinstance(last, dict) and last.get("status") == RUNNING:
        failures += 1
    started = parse_moment(last.get("started")) if isinstance(last, dict) else None
    if failures < 2 or started is None:
        return GateCheck(True)
    wait = min(RETRY_AFTER * 2 ** min(failures - 2, 16), timedelta(hours=config.min_hours))
    if now - started >= wait:
        return GateCheck(True)
    left = (wait - (now - started)).total_seconds() / 60
    when = _minutes(left) if left < 120 else _hours(left / 60)
    return GateCheck(False, "time", f"the last {failures} runs did not finish; next try in {when}")


def _failed_in_a_row(state: dict[str, Any]) -> int:
    count = state.get("failedInARow")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def count_sessions_since(paths: DreamPaths, since: datetime) -> int:
    """Sessions with activity after `since`: one directory scan of `<state>/sessions/`.

    A Claude Code session seen both by the hook (`<id>.json`) and by the MCP
    server (`<id>.mcp.json`) is one session.
    """
    cutoff = since.timestamp()
    active: set[str] = set()
    try:
        with os.scandir(paths.sessions_dir) as entries:
            for entry in entries:
                key = session_key(entry.name)
                if key is None:
                    continue
                try:
                    if entry.stat(follow_symlinks=False).st_mtime > cutoff:
                        active.add(key)
                except OSError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return len(active)


MCP_SUFFIX = ".mcp.json"
CONNECTION_SUFFIX = ".conn.json"
SESSION_ID_ENV = "CLAUDE_CODE_SESSION_ID"


def session_key(name: str) -> str | None:
    """The session a file of `<state>/sessions/` stands for; None for what is not a session."""
    if name.startswith(".") or not name.endswith(".json"):
        return None
    if name.endswith(MCP_SUFFIX):
        return name[: -len(MCP_SUFFIX)] or None
    if name.endswith(CONNECTION_SUFFIX):
        return name.removesuffix(".json")  # keeps ".conn": never a hook session's name
    return name.removesuffix(".json")


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
    note: str = ""

    def describe(self) -> str:
        who = f"run {self.run_id}" if self.run_id else "a run"
        pid = f", pid {self.pid}" if self.pid else ""
        since = f", since {self.started}" if self.started else ""
        note = f"; {self.note}" if self.note else ""
        return f"{who}{pid}{since}{note}"


class DreamLock:
    """One dream or rollback at a time. `acquire` never waits: a busy lock is an answer.

    A held lock is never taken over: the `flock` is the proof that its holder
    lives. `stale_after` only decides when a busy answer calls the holder
    possibly stuck.
    """

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
        """Take the lock for `run_id`; False (with `holder` set) while another process holds it."""
        self.paths.ensure()
        path = self.paths.lock_file
        for _ in range(5):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                self.holder = self._with_age(holder, now)
                return False
            if not _same_file(fd, path):
                os.close(fd)  # the file was replaced while we opened it: look again
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

    def _with_age(self, holder: LockHolder, now: datetime) -> LockHolder:
        started = parse_moment(holder.started)
        if started is None or now - started <= self.stale_after:
            return holder
        minutes = (now - started).total_seconds() / 60
        stop = f"kill {holder.pid}" if holder.pid else "stop it"
        note = (
            f"it has held the lock for {minutes:.0f} min and still runs; if it is stuck, "
            f"{stop} (a live run's lock is never taken over)"
        )
        return LockHolder(holder.run_id, holder.pid, holder.started, note)


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
