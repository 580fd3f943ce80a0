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
from sage_mem.dream.gates import DreamLock, load_state
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
        pytest.param(
            '{"autoMode": "tidy"}', 'autoMode must be "report" or "rewrite", not \'tidy\'',
            id="bad-auto-mode",
        ),
        pytest.param(
            '{"inputSource": "sessions"}',
            'inputSource must be "memory" or "memory\\+sessions", not \'sessions\'',
            id="bad-input-source",
        ),
        pytest.param(
            '{"sessionsDir": "claude/projects"}',
            "sessionsDir must be an absolute path \\(or start with ~\\)", id="relative-dir",
        ),
        pytest.param('{"sessionsDir": 3}', "sessionsDir must be a folder path", id="dir-not-text"),
        pytest.param('{"autoFromHook": "yes"}', "autoFromHook must be true or false",
                     id="bad-bool"),
        pytest.param('{"agentCommand": "claude -p"}', "agentCommand must be a list of strings",
                     id="command-as-text"),
        pytest.param('{"agentCommand": [""]}', "the command .its first string. must not be empty",
                     id="empty-command"),
        pytest.param('{"minSessions": 2.5}', "minSessions must be a whole number of at least 0",
                     id="fraction"),
        pytest.param('{"minHours": null}', "minHours must not be null", id="null"),
        pytest.param('{"agentTimeoutSeconds": -1}', "agentTimeoutSeconds must be a number of "
                     "at least 0, not -1", id="negative"),
        # Each number is a duration: one no timedelta can hold overflowed when the run began.
        pytest.param('{"staleLockMinutes": 1e300}', "staleLockMinutes must be a number of "
                     "at most 1,000,000,000, not 1e\\+300", id="lock-age-past-any-duration"),
        pytest.param('{"minHours": 1e300}', "minHours must be a number of at most "
                     "1,000,000,000, not 1e\\+300", id="hours-past-any-duration"),
    ],
)
def test_a_bad_settings_file_is_one_clear_error(
    store: MemoryStore, content: str, message: str
) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.config_file.write_text(content, encoding="utf-8")
    with pytest.raises(DreamError, match=message) as raised:
        run_dream(store)
    assert "\n" not in str(raised.value)
    if "JSON object" not in message and "cannot read" not in message:
        assert str(paths.config_file) in str(raised.value)  # which file, on the same line


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


def test_a_live_holder_older_than_an_hour_keeps_the_lock(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    hung = DreamLock(paths, stale_after=timedelta(hours=1))
    assert hung.acquire("20261129T080000Z-0001", T0)
    try:
        with pytest.raises(StoreLocked) as refused:
            run_dream(store, now=T0 + timedelta(minutes=61))
        message = str(refused.value)
        assert "held the lock for 61 min and still runs" in message
        assert f"kill {os.getpid()}" in message and "never taken over" in message
        skipped = run_dream(store, auto=True, now=T0 + timedelta(hours=5))
        assert (skipped.status, skipped.gate) == ("skipped", "lock")
        assert skipped.format_text() == (
            "dream skipped: the lock gate is closed (in progress: run 20261129T080000Z-0001, "
            f"pid {os.getpid()}, since 2026-11-29T08:00:00Z; it has held the lock for 300 min "
            f"and still runs; if it is stuck, kill {os.getpid()} (a live run's lock is never "
            "taken over))\n"
        )
    finally:
        hung.release()
    assert run_dream(store, now=T0 + timedelta(hours=5)).status == "finished"


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


def test_no_contender_takes_a_live_lock_however_old(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    hung = DreamLock(paths, stale_after=timedelta(hours=1))
    assert hung.acquire("20261129T080000Z-0001", T0)
    first = DreamLock(paths, stale_after=timedelta(hours=1))
    second = DreamLock(paths, stale_after=timedelta(hours=1))
    try:
        later = T0 + timedelta(days=2)
        assert not first.acquire("20261201T080000Z-0001", later)
        assert not second.acquire("20261201T080000Z-0002", later)
    finally:
        for lock in (first, second, hung):
            lock.release()


def test_settings_flags_are_checked() -> None:
    with pytest.raises(DreamError, match="keepSnapshots must be a whole number of at least 1"):
        DreamConfig().with_overrides(keep_snapshots=0)


# state.json


def test_a_run_that_fails_is_interrupted_and_does_not_close_the_gate(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.dream import runner

    first = run_dream(store, auto=True, now=T0)
    _sessions(store, 5, T0 + timedelta(hours=1))

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("disk full while rendering")

    monkeypatch.setattr(runner, "render_run", broken)
    with pytest.raises(RuntimeError):
        run_dream(store, auto=True, now=T0 + timedelta(hours=25))
    monkeypatch.undo()
    state = load_state(DreamPaths(store.folder))
    assert state["lastRun"]["status"] == "interrupted"
    assert state["lastFinished"]["runId"] == first.run_id
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=25, minutes=1)).status == (
        "finished"
    )


def test_runs_that_keep_failing_are_retried_less_and_less_often(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One failure is retried at once; from the second in a row, an automatic run
    waits 15 min, then 30, 60… (never more than `minHours`), so a run that fails
    every time is not started again at every session; one that finishes resets it."""
    from sage_mem.dream import runner

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("disk full while rendering")

    monkeypatch.setattr(runner, "render_run", broken)
    now = T0
    for _ in range(2):
        with pytest.raises(RuntimeError):
            run_dream(store, auto=True, now=now)
        now += timedelta(minutes=1)
    waiting = run_dream(store, auto=True, now=now)
    assert (waiting.status, waiting.gate) == ("skipped", "time")
    assert "the last 2 runs did not finish" in waiting.detail
    now = T0 + timedelta(minutes=1, seconds=15 * 60 + 1)  # 15 min after the second failure
    with pytest.raises(RuntimeError):
        run_dream(store, auto=True, now=now)
    assert run_dream(store, auto=True, now=now + timedelta(minutes=29)).gate == "time"
    for _ in range(12):
        now += timedelta(hours=30)
        with pytest.raises(RuntimeError):
            run_dream(store, auto=True, now=now)
    capped = run_dream(store, auto=True, now=now + timedelta(hours=23))
    assert capped.gate == "time"
    monkeypatch.undo()
    assert run_dream(store, auto=True, now=now + timedelta(hours=24, seconds=1)).status == (
        "finished"
    )
    assert "failedInARow" not in load_state(DreamPaths(store.folder))


def test_a_killed_run_counts_as_one_that_did_not_finish(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    killed = {"runId": "20261129T080000Z-0001", "started": "2026-11-29T08:00:00Z",
              "status": "running"}
    paths.state_file.write_text(json.dumps({"lastRun": killed, "failedInARow": 1}),
                                encoding="utf-8")
    soon = run_dream(store, auto=True, now=T0 + timedelta(minutes=5))
    assert (soon.gate, "the last 2 runs did not finish" in soon.detail) == ("time", True)


def test_a_state_file_from_before_keeps_its_gate(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    legacy = {"lastRunId": "20261129T080000Z-0001", "lastRunStarted": "2026-11-29T08:00:00Z",
              "lastRunStatus": "finished"}
    paths.state_file.write_text(json.dumps(legacy), encoding="utf-8")
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=2)).gate == "time"
    done = run_dream(store, now=T0 + timedelta(hours=2))
    state = load_state(paths)
    assert "lastRunStarted" not in state and "lastRunStatus" not in state
    assert state["lastFinished"]["runId"] == done.run_id
    assert state["lastRun"] == {
        "runId": done.run_id, "started": "2026-11-29T10:00:00Z", "status": "finished"
    }


# the mode of automatic runs


@pytest.mark.parametrize(
    ("settings", "auto", "mode", "expected"),
    [
        pytest.param({}, True, None, "report", id="auto-reports-by-default"),
        pytest.param({"autoMode": "rewrite"}, True, None, "rewrite", id="auto-mode-rewrite"),
        pytest.param({"autoMode": "rewrite"}, True, "report", "report", id="a-flag-wins"),
        pytest.param({"autoMode": "rewrite"}, False, None, "report", id="manual-stays-report"),
    ],
)
def test_the_settings_choose_the_mode_of_automatic_runs(
    store: MemoryStore, settings: dict[str, str], auto: bool, mode: str | None, expected: str
) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.config_file.write_text(json.dumps(settings), encoding="utf-8")
    result = run_dream(store, auto=auto, mode=mode, now=T0)
    assert (result.status, result.mode) == ("finished", expected)
    manifest = json.loads((paths.run_dir(result.run_id or "") / "manifest.json").read_text())
    assert manifest["mode"] == expected
    assert ("rollbackPoint" in manifest) == (expected == "rewrite")


def test_dream_auto_on_the_command_line_takes_the_mode_from_the_settings(
    store: MemoryStore,
) -> None:
    from support import write_memory

    write_memory(store.folder.root, "project_launch",
                 "---\ndescription: launch\ncategory: project\ncreated: 2026-11-20\n---\n"
                 "We decided yesterday to launch.\n")
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.config_file.write_text(json.dumps({"autoMode": "rewrite"}), encoding="utf-8")

    def dream(*flags: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-m", "sage_mem", "--dir", str(store.folder.root), "dream", *flags,
             "--json"], capture_output=True, text=True, timeout=120, check=True,
        )
        result: dict[str, object] = json.loads(done.stdout)
        return result

    before = (store.folder.root / "project_launch.md").read_bytes()
    auto = dream("--auto")
    assert (auto["mode"], auto["status"]) == ("rewrite", "finished")
    assert (store.folder.root / "project_launch.md").read_bytes() != before  # the date is fixed
    assert dream()["mode"] == "report"


# the settings describe themselves (the page's settings form is derived from them)


def test_every_setting_describes_itself_and_is_documented() -> None:
    from sage_mem.dream.config import key_of

    docs = (Path(__file__).resolve().parent.parent / "docs" / "dream.md").read_text()
    defaults = DreamConfig().to_json()
    assert list(defaults) == [key_of(spec) for spec in DreamConfig.settings()]
    for spec in DreamConfig.settings():
        meta, key = spec.metadata, key_of(spec)
        assert meta["kind"] in ("number", "whole", "bool", "choice", "command", "path", "zone")
        assert meta["doc"].strip() and "\n" not in meta["doc"]
        if meta["kind"] == "choice":
            assert getattr(DreamConfig(), spec.name) in meta["choices"]
        assert f"| `{key}` |" in docs, f"{key} has no row in docs/dream.md"
        # Each setting round-trips through the file's form and the checks.
        assert DreamConfig().with_overrides(**{spec.name: defaults[key]}) == DreamConfig()
    assert json.loads(json.dumps(defaults)) == defaults


def test_a_config_file_with_every_setting_loads(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    chosen = {
        **DreamConfig().to_json(),
        "minHours": 6, "autoMode": "rewrite", "inputSource": "memory+sessions",
        "sessionsDir": "~/.claude/projects/-home-dev-shop", "agentCommand": ["claude", "-p"],
    }
    paths.config_file.write_text(json.dumps(chosen), encoding="utf-8")
    loaded = DreamConfig.load(paths.config_file)
    assert loaded.to_json() == {**chosen, "minHours": 6.0}
    assert (loaded.auto_mode, loaded.input_source) == ("rewrite", "memory+sessions")


def test_the_settings_describe_themselves_as_data_for_a_form() -> None:
    described = DreamConfig.describe()
    assert [entry["key"] for entry in described] == list(DreamConfig().to_json())
    by_key = {entry["key"]: entry for entry in described}
    assert by_key["autoMode"] == {
        "key": "autoMode", "kind": "choice", "default": "report",
        "choices": ["report", "rewrite"], "doc": by_key["autoMode"]["doc"],
    }
    assert by_key["keepSnapshots"]["minimum"] == 1 and by_key["agentCommand"]["default"] == []
    assert "private" in by_key["inputSource"]["doc"]
    assert json.loads(json.dumps(described)) == described


def test_a_setting_past_any_duration_is_one_line_from_the_cli(store: MemoryStore) -> None:
    paths = DreamPaths(store.folder)
    paths.ensure()
    paths.config_file.write_text('{"staleLockMinutes": 1e300}', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(store.root), "dream"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "staleLockMinutes must be a number of at most" in (
        done.stderr)
