"""A run killed (SIGKILL) at a random point loses nothing, is marked interrupted, rolls back."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, wait_until
from test_dream_support import folder_bytes, live_bytes, messy_folder

from sage_mem.dream import list_runs, rollback, run_dream
from sage_mem.dream.paths import DreamPaths
from sage_mem.memory.file_format import parse_bytes
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.kills

RUN = (
    "import sys\n"
    "from sage_mem.store import MemoryStore\n"
    "from sage_mem.dream.runner import run_dream\n"
    "run_dream(MemoryStore(sys.argv[1]), mode='rewrite')\n"
)
SIZE = 600  # a rewrite of this folder takes about 1.5 s


def _body(data: bytes) -> str:
    return parse_bytes(data).body.strip()


def _start_and_kill(folder: Path, delay: float) -> None:
    process = subprocess.Popen([sys.executable, "-c", RUN, str(folder)], cwd=ROOT)
    runs = folder.parent / ".memory.sage-mem" / "autodream" / "runs"
    try:
        wait_until(
            lambda: any(runs.glob("*/manifest.json")) or process.poll() is not None, timeout=30
        )
        try:
            process.wait(timeout=delay)  # the random point: the run is still going, or just done
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
    finally:
        process.wait()


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"kill-{seed}") for seed in range(5)])
def test_a_run_killed_at_a_random_point_loses_nothing(tmp_path: Path, seed: int) -> None:
    folder = tmp_path / "memory"
    messy_folder(folder, SIZE, seed=seed)
    before = folder_bytes(folder)
    _start_and_kill(folder, random.Random(seed).uniform(0.0, 1.6))

    # Every memory is in service or archived; a change to it is in the manifest.
    now = folder_bytes(folder)
    store = MemoryStore(folder)
    runs = list_runs(store)
    assert len(runs) == 1
    run = runs[0]
    manifest = json.loads(
        (DreamPaths(store.folder).run_dir(run.run_id) / "manifest.json").read_text()
    )
    touched = {c["file"] for c in manifest["changes"]}
    for name, data in before.items():
        if name in now:
            assert now[name] == data or name in touched, f"{name} changed outside the manifest"
        else:
            stem = name.removesuffix(".md")
            moved = [n for n in now if n == f"archive/{name}" or n.startswith(f"archive/{stem}-")]
            assert name in touched and moved, f"{name} lost"
            assert any(bool(_body(now[n])) == bool(_body(data)) for n in moved)

    # The next look at the runs finds it interrupted (unless it finished before the kill).
    assert run.status in ("interrupted", "finished")

    # Its rollback point puts the folder back, byte for byte.
    if run.rollback_point:
        rollback(store, run.run_id, scope="all")
        after = folder_bytes(folder)
        assert {name: after.get(name) for name in before} == before
        assert set(_memories(live_bytes(folder))) == {
            n for n in before if not n.startswith("archive/")
        }
    else:
        assert _memories(live_bytes(folder)) == {
            n: d for n, d in before.items() if not n.startswith("archive/")
        }


def _memories(files: dict[str, bytes]) -> dict[str, bytes]:
    # A kill during an atomic write leaves its temp file (`.name.pid.hex.tmp`): never a memory.
    return {
        name: data for name, data in files.items() if not name.rsplit("/", 1)[-1].startswith(".")
    }


def test_the_next_run_marks_a_killed_run_interrupted(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    messy_folder(folder, SIZE, seed=99)
    _start_and_kill(folder, 0.3)
    store = MemoryStore(folder)
    run_dream(store, mode="report")
    killed, report = sorted(list_runs(store), key=lambda r: r.run_id)
    assert killed.status == "interrupted"
    assert report.status == "finished"
