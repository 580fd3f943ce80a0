"""The gates of an automatic run (time, sessions, lock) and the settings file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sage_mem.dream import DreamConfig, DreamError, run_dream
from sage_mem.dream.gates import DreamLock
from sage_mem.dream.paths import DreamPaths
from sage_mem.errors import StoreLocked
from sage_mem.store import MemoryStore

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


@pytest.fixture
def store(empty_dir: Path) -> MemoryStore:
    return MemoryStore(empty_dir)


def _sessions(store: MemoryStore, count: int, at: datetime) -> None:
    folder = store.folder.ensure_state_dir("sessions")
    for n in range(count):
        path = folder / f"session-{at.timestamp():.0f}-{n}.json"
        path.write_text("{}", encoding="utf-8")
        os.utime(path, (at.timestamp(), at.timestamp()))


def test_the_first_automatic_run_goes_ahead(store: MemoryStore) -> None:
    assert run_dream(store, auto=True, now=T0).status == "finished"


def test_the_time_gate_holds_until_enough_hours_have_passed(store: MemoryStore) -> None:
    run_dream(store, auto=True, now=T0)
    _sessions(store, 9, T0 + timedelta(hours=1))
    early = run_dream(store, auto=True, now=T0 + timedelta(hours=23))
    assert (early.status, early.gate) == ("skipped", "time")
    assert "every 24 h" in early.format_text()
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=25)).status == "finished"


def test_the_session_gate_counts_sessions_active_since_the_last_run(store: MemoryStore) -> None:
    run_dream(store, auto=True, now=T0)
    _sessions(store, 2, T0 - timedelta(hours=1))  # before the run: do not count
    _sessions(store, 4, T0 + timedelta(hours=2))
    quiet = run_dream(store, auto=True, now=T0 + timedelta(hours=30))
    assert (quiet.gate, quiet.detail.split(" (")[0]) == (
        "sessions",
        "4 of 5 sessions with activity since the last run",
    )
    _sessions(store, 1, T0 + timedelta(hours=3))
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=31)).status == "finished"


def test_the_session_scan_runs_at_most_every_ten_minutes(store: MemoryStore) -> None:
    run_dream(store, auto=True, now=T0)
    _sessions(store, 1, T0 + timedelta(hours=1))
    first = run_dream(store, auto=True, now=T0 + timedelta(hours=30))
    assert "counted now" in first.detail
    _sessions(store, 9, T0 + timedelta(hours=2))  # appear after the scan
    cached = run_dream(store, auto=True, now=T0 + timedelta(hours=30, minutes=9))
    assert cached.gate == "sessions" and "counted 9 min ago" in cached.detail
    assert (
        run_dream(store, auto=True, now=T0 + timedelta(hours=30, minutes=11)).status == "finished"
    )


def test_a_manual_run_ignores_the_gates(store: MemoryStore) -> None:
    run_dream(store, now=T0)
    assert run_dream(store, now=T0 + timedelta(minutes=1)).status == "finished"


def test_settings_come_from_the_state_folder_and_flags_win(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.config_file.write_text(json.dumps({"minHours": 1, "minSessions": 0}), encoding="utf-8")
    run_dream(store, auto=True, now=T0)
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=2)).status == "finished"
    blocked = run_dream(store, auto=True, now=T0 + timedelta(hours=4), min_hours=48)
    assert blocked.gate == "time"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param('{"minHours": "soon"}', "minHours must be a number", id="bad-value"),
        pytest.param(
            '{"sleepHours": 3}', "unknown autodream setting 'sleepHours'", id="unknown-key"
        ),
        pytest.param("[1, 2]", "must be a JSON object", id="not-an-object"),
        pytest.param("{oops", "cannot read the autodream settings", id="not-json"),
    ],
)
def test_a_bad_settings_file_is_one_clear_error(
    store: MemoryStore, content: str, message: str
) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.config_file.write_text(content, encoding="utf-8")
    with pytest.raises(DreamError, match=message):
        run_dream(store)


# the lock


def test_a_live_fresh_holder_keeps_the_lock(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    holder = DreamLock(paths, stale_after=timedelta(hours=1))
    assert holder.acquire("20261129T080000Z-0001", T0)
    try:
        skipped = run_dream(store, auto=True, now=T0 + timedelta(minutes=5))
        assert (skipped.status, skipped.gate) == ("skipped", "lock")
        with pytest.raises(StoreLocked, match="in progress"):
            run_dream(store, now=T0 + timedelta(minutes=5))
    finally:
        holder.release()


def test_a_lock_held_for_over_an_hour_is_taken_over(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    hung = DreamLock(paths, stale_after=timedelta(hours=1))
    assert hung.acquire("20261129T080000Z-0001", T0)
    try:
        result = run_dream(store, now=T0 + timedelta(minutes=61))
        assert result.status == "finished"
        assert "took over a lock held for more than 60 min" in (result.lock_recovered or "")
    finally:
        hung.release()


def test_a_lock_left_by_a_dead_process_is_recovered(store: MemoryStore) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.lock_file.write_text(
        json.dumps(
            {
                "runId": "20261129T070000Z-0001",
                "pid": int(dead.stdout),
                "started": "2026-11-29T07:59:00Z",
            }
        ),
        encoding="utf-8",
    )
    result = run_dream(store, now=T0)
    assert result.status == "finished"
    assert "whose process is gone" in (result.lock_recovered or "")


def test_two_contenders_never_both_take_over(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    hung = DreamLock(paths, stale_after=timedelta(hours=1))
    assert hung.acquire("20261129T080000Z-0001", T0)
    first = DreamLock(paths, stale_after=timedelta(hours=1))
    second = DreamLock(paths, stale_after=timedelta(hours=1))
    try:
        later = T0 + timedelta(hours=2)
        assert first.acquire("20261129T100000Z-0001", later)
        assert not second.acquire("20261129T100000Z-0002", later)
    finally:
        for lock in (first, second, hung):
            lock.release()


def test_settings_flags_are_checked() -> None:
    with pytest.raises(DreamError, match="keepSnapshots must be a whole number of at least 1"):
        DreamConfig().with_overrides(keep_snapshots=0)
