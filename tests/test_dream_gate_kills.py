"""The gates against real processes killed (SIGKILL) at a chosen step of a run.

Each test starts a dream run in a child process that stops at one step (it
writes a `ready` file there and sleeps), kills it with SIGKILL, and checks
what the next look finds: an interrupted run does not close the 24 h gate,
`state.json` never says finished for a run that did not finish, and a live
lock holder is never taken over however old its lock (two runs never overlap).
The child runs the real code; the step is only where it is made to wait.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, wait_until, write_memory

from sage_mem.dream import list_runs, run_dream
from sage_mem.dream.config import DreamConfig
from sage_mem.dream.gates import load_state, time_gate
from sage_mem.dream.paths import DreamPaths
from sage_mem.errors import StoreLocked
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.kills

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)

CHILD = """
import sys, time
from datetime import datetime
from pathlib import Path
from sage_mem.store import MemoryStore
from sage_mem.dream import runner

folder, step, ready, moment, mode = sys.argv[1:6]

def stop_here():
    Path(ready).write_text("")
    time.sleep(600)  # until the test kills this process

def stopping(original, when):
    def wrapper(*args, **kwargs):
        if when(*args):
            stop_here()
        return original(*args, **kwargs)
    return wrapper

model_pass = None
if step == "model":  # half-way: the rules are done, the model pass is at work
    model_pass = lambda tools: stop_here()
elif step == "state-start":  # the manifest exists, state.json not told yet
    runner.record_start = stopping(runner.record_start, lambda *a: True)
elif step == "state-finish":  # the manifest says finished, state.json not told yet
    runner.record_end = stopping(runner.record_end, lambda *a: a[2] == "finished")
runner.run_dream(
    MemoryStore(folder), mode=mode, auto=True, now=datetime.fromisoformat(moment),
    model_pass=model_pass,
)
"""


@pytest.fixture
def store(empty_dir: Path) -> MemoryStore:
    for n in range(6):
        write_memory(
            empty_dir,
            f"project_note_{n}",
            f"---\ndescription: note {n}\ncategory: project\n---\nDecided yesterday: step {n}.\n",
        )
    return MemoryStore(empty_dir)


def _sessions(store: MemoryStore, count: int, at: datetime) -> None:
    folder = store.folder.ensure_state_dir("sessions")
    for n in range(count):
        path = folder / f"s-{at.timestamp():.0f}-{n}.json"
        path.write_text("{}", encoding="utf-8")
        os.utime(path, (at.timestamp(), at.timestamp()))


def _state(store: MemoryStore) -> dict[str, Any]:
    return load_state(DreamPaths(store.folder))


def _manifest(store: MemoryStore, run_id: str) -> dict[str, Any]:
    path = DreamPaths(store.folder).run_dir(run_id) / "manifest.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


class Child:
    """A dream run in its own process, stopped at `step` until it is killed."""

    def __init__(self, store: MemoryStore, step: str, moment: datetime, tmp: Path) -> None:
        self.ready = tmp / f"ready-{step}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(store.folder.root), step, str(self.ready),
             moment.isoformat(), "report"],
            cwd=ROOT,
        )
        wait_until(lambda: self.ready.exists() or self.process.poll() is not None, timeout=60)
        assert self.process.poll() is None, f"the run ended before step {step}"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


def _only_new_run(store: MemoryStore, before: set[str]) -> str:
    runs = {run.run_id for run in list_runs(store)} - before
    (run_id,) = runs
    return run_id


def test_a_run_killed_half_way_is_interrupted_and_leaves_the_gate_open(
    store: MemoryStore, tmp_path: Path
) -> None:
    first = run_dream(store, auto=True, now=T0)
    _sessions(store, 5, T0 + timedelta(hours=1))
    child = Child(store, "model", T0 + timedelta(hours=25), tmp_path)
    try:
        state = _state(store)
        assert state["lastRun"]["status"] == "running"
        assert state["lastFinished"]["runId"] == first.run_id
        child.kill()
    finally:
        child.stop()
    killed = _only_new_run(store, {first.run_id})
    assert {run.run_id: run.status for run in list_runs(store)}[killed] == "interrupted"
    state = _state(store)
    assert state["lastRun"] == {
        "runId": killed, "started": "2026-11-30T09:00:00Z", "status": "interrupted"
    }
    assert state["lastFinished"]["runId"] == first.run_id
    assert time_gate(state, DreamConfig(), T0 + timedelta(hours=25, minutes=5)).open
    again = run_dream(store, auto=True, now=T0 + timedelta(hours=25, minutes=5))
    assert again.status == "finished"
    assert _state(store)["lastFinished"]["runId"] == again.run_id


def test_a_run_killed_after_its_manifest_finished_is_finished_in_state_json_too(
    store: MemoryStore, tmp_path: Path
) -> None:
    child = Child(store, "state-finish", T0, tmp_path)
    try:
        run_id = _only_new_run_ids(store)
        assert _manifest(store, run_id)["status"] == "finished"
        assert _state(store)["lastRun"]["status"] == "running"  # never "finished" before it is
        child.kill()
    finally:
        child.stop()
    (run,) = list_runs(store)
    assert run.status == "finished"
    state = _state(store)
    assert state["lastRun"]["status"] == "finished"
    assert state["lastFinished"]["runId"] == run_id
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=1)).gate == "time"


def test_a_run_killed_before_state_json_knew_of_it_leaves_no_trace_there(
    store: MemoryStore, tmp_path: Path
) -> None:
    first = run_dream(store, auto=True, now=T0)
    _sessions(store, 5, T0 + timedelta(hours=1))
    child = Child(store, "state-start", T0 + timedelta(hours=25), tmp_path)
    try:
        child.kill()
    finally:
        child.stop()
    killed = _only_new_run(store, {first.run_id})
    assert {run.run_id: run.status for run in list_runs(store)}[killed] == "interrupted"
    state = _state(store)
    assert state["lastRun"]["runId"] == first.run_id and state["lastRun"]["status"] == "finished"
    assert run_dream(store, auto=True, now=T0 + timedelta(hours=26)).status == "finished"


def test_a_live_run_holding_the_lock_past_an_hour_is_never_taken_over(
    store: MemoryStore, tmp_path: Path
) -> None:
    child = Child(store, "model", T0, tmp_path)
    try:
        holder = _only_new_run_ids(store)
        for later in (timedelta(minutes=61), timedelta(hours=3), timedelta(days=2)):
            with pytest.raises(StoreLocked, match="still runs; if it is stuck, kill"):
                run_dream(store, now=T0 + later)
            skipped = run_dream(store, auto=True, min_sessions=0, now=T0 + later)
            assert (skipped.status, skipped.gate) == ("skipped", "lock")
        assert child.process.poll() is None
        assert [run.run_id for run in list_runs(store)] == [holder]
        assert _manifest(store, holder)["status"] == "running"
        child.kill()
    finally:
        child.stop()
    # Its process gone, the kernel has dropped its flock: the next run takes the lock.
    after = run_dream(store, now=T0 + timedelta(hours=3))
    assert after.status == "finished"
    assert "whose process is gone" in (after.lock_recovered or "")
    statuses = {run.run_id: run.status for run in list_runs(store)}
    assert statuses == {holder: "interrupted", after.run_id: "finished"}


def _only_new_run_ids(store: MemoryStore) -> str:
    runs = DreamPaths(store.folder).runs_dir
    (run_dir,) = wait_until(lambda: list(runs.glob("*/manifest.json")), timeout=30)
    return run_dir.parent.name
