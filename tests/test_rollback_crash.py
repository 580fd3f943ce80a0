"""A rollback killed (SIGKILL) at any file-system step, or at a random moment, loses nothing.

The rollback of a rewrite run over a few hundred memories runs in a child
process (as `sage-mem rollback` would), and is killed:
- just before its K-th file-system change — os.mkdir, os.open or open() for
  writing, os.replace, os.rename, os.link, os.unlink, and the kernel's atomic
  renames safe_io makes (a swap, a rename that never replaces) — counted by
  wrappers that SIGKILL the process: `SAGE_MEM_SLOW=1` tries every K (some
  1,000 a scope; a mkdir of a folder that exists is skipped, as it is the same
  as the next step), the quick mode six landmarks (half-way through the
  protective snapshot, just after the rollback's manifest is written, just
  before and just after a file put back is swapped into place, just after a
  move aside, the last step);
- after a random delay (quick: one a scope; slow: twenty).
Two ways: `touched` (as asked by default: a file the run rewrote and a person
edited since is a conflict, and keeps the edit) and `all-force` (the whole
folder, edits made since the run included). After each kill:
- nothing partial: every memory file holds bytes it had before the rollback or
  the bytes the rollback point has; a killed write leaves only its temp file;
- nothing lost: the bytes every file had before the rollback are still there
  (in place, in archive/, set aside in the rollback's folder — MEMORY.md, the
  archived copy of a memory put back — or, for a file put back, in the
  protective snapshot, which is complete before the first change);
- a rollback that changed the folder has counted it in the write count, so
  every other process reconciles before its next write;
- `list_runs` marks the killed rollback interrupted (never `running`);
- finishing the job works either way: roll back the run again, and the folder
  is what an uninterrupted rollback leaves (byte for byte the rollback point,
  for `all-force`); or first undo the killed rollback through its protective
  snapshot (the folder is back as before it), then roll back the run. The
  protective snapshots still undo: the finishing rollback's gives back the
  folder as the kill left it, the killed one's the folder before it.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from reliability_support import SLOW
from support import ROOT
from test_dream_support import add, messy_folder

from sage_mem.disk.folder import ARCHIVE_DIR, DREAM_DIR, INDEX_FILE
from sage_mem.disk.locks import read_generation
from sage_mem.dream import DreamError, list_runs, rollback, run_dream
from sage_mem.dream.paths import DreamPaths
from sage_mem.dream.snapshots import Snapshot, load_snapshot
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.kills

SIZE = 300  # memories; a rollback of the run over them takes some 1,400 file-system steps
SCOPES = [pytest.param("touched", id="touched"), pytest.param("all-force", id="all-force")]
TEMP = re.compile(r"^\..+\.\d+\.[0-9a-f]{8}\.tmp$")  # what a killed atomic write leaves
RANDOM_KILLS = 20 if SLOW else 1
WORKERS = max(2, os.cpu_count() or 2)

# The child: one rollback (or, for run id `dream`, a rewrite run), every file-system change
# counted; SIGKILL just before change K.
CHILD = r"""
import builtins, json, os, signal, sys
from sage_mem.dream import rollback, run_dream
from sage_mem.store import MemoryStore

import sage_mem.disk.safe_io as safe_io

folder, run_id, how, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
scope, _, forced = how.partition("-")
store = MemoryStore(folder)
steps = []
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

def step(name, path):
    steps.append([name, str(path)])
    if len(steps) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

def changes(name, real, changed):  # `changed`: the position of the path the call changes
    def call(*args, **kwargs):
        path = args[changed]
        step(name + "-noop" if name == "mkdir" and os.path.isdir(path) else name, path)
        return real(*args, **kwargs)
    return call

real_os_open, real_open = os.open, builtins.open

def os_open(path, flags, *args, **kwargs):
    if flags & WRITING:
        step("open", path)
    return real_os_open(path, flags, *args, **kwargs)

def open_(file, mode="r", *args, **kwargs):
    if any(c in mode for c in "wxa+"):
        step("open", file)
    return real_open(file, mode, *args, **kwargs)

real_rename_call = safe_io._rename_call

def rename_call(source, target, *, linux, mac):  # renameat2 / renamex_np, through ctypes
    step("exchange" if linux == safe_io._RENAME_EXCHANGE else "noreplace", target)
    return real_rename_call(source, target, linux=linux, mac=mac)

os.open, builtins.open = os_open, open_
for name, changed in (("mkdir", 0), ("replace", 1), ("rename", 1), ("link", 1), ("unlink", 0)):
    setattr(os, name, changes(name, getattr(os, name), changed))
safe_io._rename_call = rename_call
print("ready", flush=True)
if run_id == "dream":
    run_dream(store, mode="rewrite")
else:
    rollback(store, run_id, scope=scope, force=forced == "force")
print(json.dumps(steps), flush=True)
"""


def files_in(folder: Path) -> dict[str, bytes]:
    """Every file under the memory folder but the reports (relative path -> bytes)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        if Path(dirpath) == folder and DREAM_DIR in dirnames:
            dirnames.remove(DREAM_DIR)
        for name in filenames:
            path = Path(dirpath) / name
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


def memories(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files that count (a killed write's temp file never does)."""
    return {rel: data for rel, data in files.items() if not rel.rsplit("/", 1)[-1].startswith(".")}


def live(files: dict[str, bytes]) -> dict[str, bytes]:
    """The memories in service: everything but archive/."""
    return {
        rel: data for rel, data in memories(files).items() if not rel.startswith(ARCHIVE_DIR + "/")
    }


@dataclass(frozen=True)
class AfterRun:
    """A folder after a rewrite run (and a few edits since), ready to be copied and rolled back."""

    base: Path  # holds memory/ and .memory.sage-mem/
    run_id: str
    before: dict[str, bytes]  # every memory file before any rollback, archive/ included
    point: dict[str, bytes]  # the run's rollback point
    run_ids: frozenset[str]  # the runs before any rollback
    generation: int  # the folder's write count before any rollback
    edited: str  # a file the run rewrote and a person edited since
    finished: dict[str, dict[str, bytes]]  # scope -> the live memories after a whole rollback
    steps: dict[str, list[list[str]]]  # scope -> the file-system changes of a whole rollback

    def copy(self, target: Path) -> Path:
        shutil.copytree(self.base, target, symlinks=True)
        return target / "memory"


def how(scope: str) -> dict[str, Any]:
    """The rollback's arguments for a scope id: `touched`, or `all-force`."""
    name, _, forced = scope.partition("-")
    return {"scope": name, "force": forced == "force"}


def run_child(
    folder: Path, run_id: str, scope: str, kill_at: int, delay: float | None = None
) -> subprocess.CompletedProcess[str]:
    """The rollback in a child, killed before change `kill_at` (0: never) or after `delay` s."""
    args = [sys.executable, "-c", CHILD, str(folder), run_id, scope, str(kill_at)]
    if delay is None:
        return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ROOT)
    child = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        try:
            child.wait(timeout=delay)  # the random moment: still going, or just done
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return subprocess.CompletedProcess(args, child.returncode, "ready\n" + out, err)


@pytest.fixture(autouse=True)
def no_sync_in_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks' own rollbacks skip fsync (some 2,600 a test): a killed process loses
    nothing from the page cache, so it changes nothing here. The killed children do sync."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    monkeypatch.setattr(os, "sync", lambda: None)


@pytest.fixture(scope="module")
def after_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AfterRun]:
    base = tmp_path_factory.mktemp("after-run")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOME", str(base / "home"))
        env.delenv("SAGE_MEM_STATE_DIR", raising=False)
        env.delenv("SAGE_MEM_AUTODREAM", raising=False)
        folder = base / "memory"
        messy_folder(folder, SIZE, seed=7)
        store = MemoryStore(folder)
        run = run_dream(store, mode="rewrite")
        assert run.run_id is not None and run.changes > 50
        # Since the run: a file it rewrote edited again, one it did not touch edited, a new one.
        paths = DreamPaths(store.folder)
        manifest = json.loads((paths.run_dir(run.run_id) / "manifest.json").read_text())
        rewritten = sorted(
            c["file"]
            for c in manifest["changes"]
            if c["operation"] == "rewrite"
            and c["file"] != INDEX_FILE
            and (folder / c["file"]).is_file()
        )
        edited = folder / rewritten[0]
        edited.write_bytes(edited.read_bytes() + b"Edited by hand after the run.\n")
        untouched = sorted(
            {p.name for p in folder.glob("*.md")} - {c["file"] for c in manifest["changes"]}
        )
        other = folder / untouched[0]
        other.write_bytes(other.read_bytes() + "另一处手改。\n".encode())
        add(folder, "user_after_run", "Written after the run", category="user")
        snapshot = load_snapshot(paths, run.run_id)
        assert snapshot is not None
        point = {rel: snapshot.read(rel) for rel in snapshot.files}
        prepared = AfterRun(
            base=base,
            run_id=run.run_id,
            before=memories(files_in(folder)),
            point=point,
            run_ids=frozenset(os.listdir(paths.runs_dir)),
            generation=read_generation(store.folder.state_dir),
            edited=rewritten[0],
            finished={},
            steps={},
        )
        # A whole rollback of each scope, in a child that is never killed: the yardstick.
        scopes = ("touched", "all-force")
        copies = [prepared.copy(base.parent / f"{base.name}-whole-{s}") for s in scopes]
        with ThreadPoolExecutor(WORKERS) as pool:
            done = list(
                pool.map(lambda c, s: run_child(c, run.run_id, s, 0), copies, scopes)
            )
        for scope, copy, child in zip(scopes, copies, done, strict=True):
            assert child.returncode == 0, child.stderr
            prepared.steps[scope] = json.loads(child.stdout.splitlines()[-1])
            prepared.finished[scope] = live(files_in(copy))
            shutil.rmtree(copy.parent)
        assert prepared.finished["all-force"] == point  # byte for byte the rollback point
        assert prepared.finished["touched"] != point  # the edit of an untouched file stays
        # The file edited since the run is a conflict: it keeps the edit.
        assert prepared.finished["touched"][prepared.edited] == prepared.before[prepared.edited]
        yield prepared


def landmarks(steps: list[list[str]]) -> list[int]:
    """The quick mode's kill points (1-based): one in each phase of a rollback."""

    def first(predicate: Callable[[str, str], bool], after: int = 0) -> int:
        return next(
            (n for n, (name, path) in enumerate(steps, 1) if n > after and predicate(name, path)),
            0,
        )

    snapshot = first(lambda name, path: name == "replace" and path.endswith("/snapshot.json"))
    manifest = first(lambda name, path: name == "replace" and path.endswith("/manifest.json"))
    put_back = first(lambda name, path: name == "exchange" and "/memory/" in path, snapshot)
    moved = first(
        lambda name, path: name == "noreplace" and ("/archive/" in path or "/runs/" in path),
        snapshot,
    )
    points = {
        snapshot // 2,  # copying the folder into the protective snapshot
        manifest + 1,  # the manifest says `running`, nothing else is done
        put_back,  # a file's new bytes are written, not yet in place
        put_back + 1,  # in place (the old bytes in the temp file), not yet journaled as applied
        moved + 1,  # moved into archive/ (or aside), not yet journaled
        len(steps),  # the last step
    }
    assert all(points) and len(points) == 6, points
    return sorted(points)


def kill_points(steps: list[list[str]]) -> list[int]:
    """Every step (but a mkdir of a folder that exists: the same as the step after it)."""
    if not SLOW:
        return landmarks(steps)
    return [n for n, (name, _) in enumerate(steps, 1) if name != "mkdir-noop"]


def check_killed(prepared: AfterRun, folder: Path, scope: str, *, finish_first: bool) -> str:
    """Everything a killed rollback must leave; then finish it. Returns the killed one's status."""
    before, point = prepared.before, prepared.point
    before_live = live(before)
    now_all = files_in(folder)
    leftovers = [rel for rel in now_all if rel not in memories(now_all)]
    assert all(TEMP.match(rel.rsplit("/", 1)[-1]) for rel in leftovers), leftovers
    now = memories(now_all)
    store = MemoryStore(folder)
    paths = DreamPaths(store.folder)
    new_ids = sorted(set(os.listdir(paths.runs_dir)) - prepared.run_ids)
    assert len(new_ids) <= 1
    killed = new_ids[0] if new_ids else None
    protective = load_snapshot(paths, killed) if killed else None

    # Nothing partial: each file holds bytes it had before, or the rollback point's (or, for
    # MEMORY.md, regenerated as the last step of a rollback that skipped a conflict, the bytes
    # a whole rollback leaves).
    known = set(before.values())
    for rel, data in now.items():
        assert data == before.get(rel) or data == point.get(rel) or (
            rel.startswith(ARCHIVE_DIR + "/") and data in known
        ) or (rel == INDEX_FILE and data == prepared.finished[scope].get(rel)), (
            f"{rel}: bytes from nowhere"
        )
    # Nothing lost: what each file held before is in place, moved, set aside or kept.
    archived = {data for rel, data in now.items() if rel.startswith(ARCHIVE_DIR + "/")}
    set_aside = (
        {p.read_bytes() for p in paths.run_dir(killed).glob("*.md")} if killed else set()
    )
    archived_aside = (
        {p.read_bytes() for p in (paths.run_dir(killed) / "archived").glob("**/*.md")}
        if killed
        else set()
    )
    for rel, data in before.items():
        if now.get(rel) == data or (rel in before_live and data in archived):
            continue
        if rel == INDEX_FILE and data in set_aside:
            continue
        if rel.startswith(ARCHIVE_DIR + "/") and data in archived_aside:
            continue  # the archived copy of a memory put back: in the rollback's folder
        assert protective is not None, f"{rel} changed before the protective snapshot was whole"
        assert rel in protective.files and protective.read(rel) == data, f"{rel}: lost"
        assert rel in now or rel.startswith(ARCHIVE_DIR + "/"), f"{rel}: gone"
    # A change is counted before it is made: other processes reconcile before their next write.
    if now != before:
        assert read_generation(paths.folder.state_dir) > prepared.generation

    # The killed rollback is found and marked.
    runs = {run.run_id: run for run in list_runs(store)}
    target = runs[prepared.run_id]
    if killed is None or killed not in runs:  # killed before its manifest was written
        assert now == before
        status = "not started"
    else:
        status = runs[killed].status
        assert runs[killed].kind == "rollback" and runs[killed].target == prepared.run_id
        assert status in ("interrupted", "finished"), status
        if status == "interrupted":
            assert target.status == "finished"
        else:
            assert live(now) == prepared.finished[scope]
        assert not (paths.run_dir(killed) / "running").exists()

    # Finish the job: roll back the run again, then undo both rollbacks; or undo the killed
    # one first, then roll back the run.
    if finish_first:
        left = live(now)
        again = finish(store, prepared, scope)
        if again is not None:  # its protective snapshot gives back the folder as the kill left it
            rollback(store, again, scope="all")
            assert live(files_in(folder)) == left
        undo_killed(store, prepared, killed, protective, "all")
    else:
        undo_killed(store, prepared, killed, protective, scope)
        finish(store, prepared, scope)
    return status


def undo_killed(
    store: MemoryStore,
    prepared: AfterRun,
    killed: str | None,
    protective: Snapshot | None,
    scope: str,
) -> None:
    """Roll back the killed rollback: its protective snapshot gives back the folder before it."""
    if protective is not None:
        assert killed is not None
        rollback(store, killed, scope=how(scope)["scope"])
        assert live(files_in(store.folder.root)) == live(prepared.before)
    elif killed in {run.run_id for run in list_runs(store)}:
        with pytest.raises(DreamError, match="changed nothing"):
            rollback(store, killed, scope=how(scope)["scope"])


def finish(store: MemoryStore, prepared: AfterRun, scope: str) -> str | None:
    """Roll back the run again: the folder is then as one whole rollback leaves it."""
    runs = {run.run_id: run for run in list_runs(store)}
    target = runs[prepared.run_id]
    again: str | None = None
    if target.status == "rolled-back":  # the killed rollback had got to the end
        with pytest.raises(DreamError, match="rolled back already"):
            rollback(store, prepared.run_id, **how(scope))
        by = runs[str(target.rolled_back_by)]
        if by.status == "rolled-back":  # and has been undone since: redo it
            rollback(store, str(by.rolled_back_by), scope="all")
    else:
        again = rollback(store, prepared.run_id, **how(scope)).rollback_id
        runs = {run.run_id: run for run in list_runs(store)}
        assert runs[prepared.run_id].status == "rolled-back"
        assert runs[prepared.run_id].rolled_back_by == again
        assert again is not None and runs[again].status == "finished"
    now = live(files_in(store.folder.root))
    assert now == prepared.finished[scope]
    if how(scope)["scope"] == "all":
        assert now == prepared.point  # byte for byte the rollback point
    return again


def killed_copies(
    prepared: AfterRun, tmp_path: Path, scope: str, points: list[int]
) -> Iterator[tuple[int, Path, subprocess.CompletedProcess[str]]]:
    """A copy of the folder with a rollback killed in it at each point, made a few ahead."""

    def kill(kill_at: int) -> tuple[Path, subprocess.CompletedProcess[str]]:
        folder = prepared.copy(tmp_path / f"kill-{kill_at}")
        return folder, run_child(folder, prepared.run_id, scope, kill_at)

    todo = iter(points)
    with ThreadPoolExecutor(WORKERS) as pool:
        ahead = deque((k, pool.submit(kill, k)) for k in itertools.islice(todo, WORKERS + 1))
        while ahead:
            kill_at, future = ahead.popleft()
            for k in itertools.islice(todo, 1):
                ahead.append((k, pool.submit(kill, k)))
            yield kill_at, *future.result()


@pytest.mark.parametrize("scope", SCOPES)
def test_a_rollback_killed_at_any_file_system_step_loses_nothing_and_can_be_finished(
    after_run: AfterRun, tmp_path: Path, scope: str
) -> None:
    steps = after_run.steps[scope]
    assert len(steps) > 500
    points = kill_points(steps)
    statuses: dict[str, int] = {}
    for kill_at, folder, child in killed_copies(after_run, tmp_path, scope, points):
        assert child.returncode == -signal.SIGKILL, (kill_at, child.stderr)
        status = check_killed(after_run, folder, scope, finish_first=kill_at % 2 == 0)
        statuses[status] = statuses.get(status, 0) + 1
        shutil.rmtree(folder.parent)
    assert statuses.get("interrupted", 0) >= len(points) // 2, statuses


@pytest.mark.parametrize("scope", SCOPES)
def test_a_rollback_killed_at_a_random_moment_loses_nothing_and_can_be_finished(
    after_run: AfterRun, tmp_path: Path, scope: str
) -> None:
    chooser = random.Random(f"random-{scope}")
    statuses: dict[str, int] = {}
    for n in range(RANDOM_KILLS):
        folder = after_run.copy(tmp_path / f"kill-{n}")
        child = run_child(folder, after_run.run_id, scope, 0, delay=chooser.uniform(0.0, 0.3))
        assert child.returncode in (0, -signal.SIGKILL), child.stderr
        status = check_killed(after_run, folder, scope, finish_first=n % 2 == 0)
        statuses[status] = statuses.get(status, 0) + 1
        shutil.rmtree(folder.parent)
    assert not SLOW or statuses.get("interrupted", 0) >= RANDOM_KILLS // 4, statuses


def test_a_rollback_killed_just_after_its_manifest_is_written_is_marked_interrupted(
    after_run: AfterRun, tmp_path: Path
) -> None:
    # The `running` mark used to be made after the manifest: killed between the two, the
    # rollback stayed `running` for good, and a second rollback was refused as in progress.
    steps = after_run.steps["touched"]
    written = next(
        n
        for n, (name, path) in enumerate(steps, 1)
        if name == "replace" and path.endswith("/manifest.json")
    )
    folder = after_run.copy(tmp_path / "kill")
    child = run_child(folder, after_run.run_id, "touched", written + 1)
    assert child.returncode == -signal.SIGKILL, child.stderr
    store = MemoryStore(folder)
    (killed,) = [run for run in list_runs(store) if run.run_id not in after_run.run_ids]
    assert killed.status == "interrupted"
    rollback(store, after_run.run_id, scope="touched")  # not refused as "still in progress"
    assert live(files_in(folder)) == after_run.finished["touched"]


def test_a_dream_run_killed_just_after_its_manifest_is_written_is_marked_interrupted(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "memory"
    messy_folder(folder, 20, seed=3)
    before = files_in(folder)
    whole = run_child(folder, "dream", "-", 0)
    assert whole.returncode == 0, whole.stderr
    steps = json.loads(whole.stdout.splitlines()[-1])
    written = next(
        n
        for n, (name, path) in enumerate(steps, 1)
        if name == "replace" and path.endswith("/manifest.json")
    )
    shutil.rmtree(folder.parent / ".memory.sage-mem")
    shutil.rmtree(folder)
    messy_folder(folder, 20, seed=3)
    killed = run_child(folder, "dream", "-", written + 1)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    store = MemoryStore(folder)
    (run,) = list_runs(store)
    assert run.status == "interrupted"
    assert files_in(folder) == before
    assert run_dream(store, mode="rewrite").status == "finished"  # the lock is free
