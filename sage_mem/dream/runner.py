"""One autodream run, start to finish, and the list of past runs.

    result = run_dream(store, mode="rewrite")          # now
    result = run_dream(store, mode="report", auto=True) # only if the gates open
    for run in list_runs(store): ...

A run: gates (auto only) → lock → manifest (`running`) → audit and health
before → rollback point (rewrite only) → the rules, then the optional model
pass, every change through one `Applier` → MEMORY.md → audit and health after
→ the report in `memory/autodream/` → manifest `finished` → old rollback points
rotated out.

A run that dies half-way leaves its manifest saying `running` and a `running`
marker beside it; the next run (or `list_runs`) finds the marker, sees that the
process is gone, folds the journal into the manifest and marks it
`interrupted`. Its rollback point stays usable.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..checks.credentials import redact
from ..disk.folder import INDEX_FILE
from ..disk.processes import process_alive
from ..disk.safe_io import atomic_write, file_mode, make_dirs, text_bytes
from ..errors import DreamError, FolderError, StoreLocked
from ..memory import catalog
from ..memory.file_format import sha256_bytes
from ..memory.json_view import camel_dict
from ..store import MemoryStore
from .changes import MODES, REFUSED, Applier, file_state, read_checked
from .config import DreamConfig
from .gates import (
    FINISHED,
    INTERRUPTED,
    DreamLock,
    GateCheck,
    check_gates,
    record_end,
    record_start,
)
from .health import audit_summary, health
from .manifest import RUNNING_MARK, Manifest, stamp
from .model import DreamTools, run_model_pass
from .paths import RUN_ID, DreamPaths
from .report import render_run
from .rules import RuleContext, all_rules
from .runinfo import new_run_id
from .snapshots import (
    BeforeKeeper,
    has_snapshot,
    keep_before,
    load_snapshot,
    rotate,
    take_snapshot,
)


@dataclass(frozen=True)
class DreamResult:
    """What a `dream` call did: a finished run, or why an automatic one did not start."""

    status: str
    mode: str
    run_id: str | None = None
    gate: str | None = None
    detail: str = ""
    changes: int = 0
    refused: int = 0
    notes: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)
    report: str | None = None
    manifest: str | None = None
    seconds: float = 0.0
    health: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)
    lock_recovered: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**camel_dict(self), "seconds": round(self.seconds, 3)}

    def format_text(self) -> str:
        if self.status == "skipped":
            return f"dream skipped: the {self.gate} gate is closed ({self.detail})\n"
        verb = "changes" if self.mode == "rewrite" else "proposed changes"
        lines = [
            f"dream {self.run_id} ({self.mode}): {self.changes} {verb}, {self.refused} refused, "
            f"{self.notes} to look at, {self.seconds:.1f} s"
        ]
        if self.by_rule:
            lines.append("  " + ", ".join(f"{rule} {n}" for rule, n in self.by_rule.items()))
        if self.lock_recovered:
            lines.append(f"  {self.lock_recovered}")
        if self.report:
            lines.append(f"report: {self.report}")
        if self.mode == "rewrite" and self.changes:
            lines.append(f"undo: sage-mem rollback {self.run_id}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RunInfo:
    """One past dream run or rollback, as `sage-mem runs` lists it."""

    run_id: str
    kind: str
    mode: str | None
    status: str
    started: str | None
    finished: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    target: str | None = None
    scope: str | None = None
    rolled_back_by: str | None = None
    rollback_point: bool = False
    report: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self)

    def format_text(self) -> str:
        if self.kind == "rollback":
            what = f"rollback of {self.target} ({self.scope})"
            counts = (
                f"{self.counts.get('applied', 0)} files, {self.counts.get('refused', 0)} conflicts"
            )
        else:
            what = f"dream {self.mode}"
            if self.mode == "rewrite":
                counts = f"{self.counts.get('applied', 0)} changes"
            else:
                counts = f"{self.counts.get('proposed', 0)} proposed"
            counts += f", {self.counts.get('refused', 0)} refused"
        extra = f", rolled back by {self.rolled_back_by}" if self.rolled_back_by else ""
        return f"{self.run_id}  {self.status:<11}  {what}: {counts}{extra}"


def format_runs(runs: list[RunInfo]) -> str:
    """`sage-mem runs` as text: newest first, one line each."""
    if not runs:
        return "no dream runs yet\n"
    return "".join(run.format_text() + "\n" for run in reversed(runs))


def run_dream(
    store: MemoryStore,
    *,
    mode: str | None = None,
    auto: bool = False,
    config: DreamConfig | None = None,
    min_hours: float | None = None,
    min_sessions: int | None = None,
    keep_snapshots: int | None = None,
    stale_lock_minutes: float | None = None,
    model_pass: Callable[[DreamTools], object] | None = None,
    now: datetime | None = None,
) -> DreamResult:
    """One autodream run now (or, with `auto`, only when the gates open).

    `mode` left out: `report`, or for an `auto` run the settings' `autoMode`.
    Raises DreamError for a bad mode or settings, StoreLocked when another run
    holds the lock (an `auto` run returns a skipped result instead).
    """
    if mode is not None and mode not in MODES:
        raise DreamError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    paths = DreamPaths(store.folder)
    moment = now or datetime.now(UTC)
    settings = (config or DreamConfig.load(paths.config_file)).with_overrides(
        min_hours=min_hours,
        min_sessions=min_sessions,
        keep_snapshots=keep_snapshots,
        stale_lock_minutes=stale_lock_minutes,
    )
    if mode is None:
        mode = settings.auto_mode if auto else "report"
    try:
        paths.ensure()
    except OSError as exc:
        raise FolderError(
            f"{paths.base}: cannot create the autodream state folder: {exc.strerror}"
        ) from None
    mark_interrupted(paths, moment)
    if auto:
        gate = check_gates(paths, settings, moment)
        if not gate.open:
            return _skipped(mode, gate)
    run_id = new_run_id(moment, paths.runs_dir)
    lock = DreamLock(paths, stale_after=timedelta(minutes=settings.stale_lock_minutes))
    if not lock.acquire(run_id, moment):
        holder = lock.holder.describe() if lock.holder else "another run"
        if auto:
            return _skipped(mode, GateCheck(False, "lock", f"in progress: {holder}"))
        raise StoreLocked(
            f"another dream run or rollback is in progress ({holder})", path=paths.lock_file
        )
    try:
        return _Run(
            store, paths, settings, run_id, mode, moment, auto, lock.recovered, model_pass
        ).execute()
    finally:
        lock.release()


def _skipped(mode: str, gate: GateCheck) -> DreamResult:
    return DreamResult(status="skipped", mode=mode, gate=gate.gate, detail=gate.detail)


@dataclass
class _Run:
    """One dream run under the lock; `recovered` says whose stale lock it took over, if any."""

    store: MemoryStore
    paths: DreamPaths
    settings: DreamConfig
    run_id: str
    mode: str
    moment: datetime
    auto: bool
    recovered: str | None
    model_pass: Callable[[DreamTools], object] | None

    def execute(self) -> DreamResult:
        started = time.monotonic()
        self.paths.check_reports_dir()
        manifest = Manifest.start(
            self.paths,
            self.run_id,
            kind="dream",
            mode=self.mode,
            now=self.moment,
            auto=self.auto,
            **({"lockRecovered": self.recovered} if self.recovered else {}),
        )
        mark = self.paths.run_dir(self.run_id) / RUNNING_MARK  # made by Manifest.start
        record_start(self.paths, self.run_id, stamp(self.moment))
        try:
            result = self._steps(manifest, started)
        except BaseException as exc:
            manifest.update(
                status="interrupted",
                finished=stamp(datetime.now(UTC)),
                error=str(exc) or type(exc).__name__,
            )
            manifest.save(complete=True)
            record_end(self.paths, self.run_id, INTERRUPTED)  # does not close the gates
            mark.unlink(missing_ok=True)
            raise
        mark.unlink(missing_ok=True)
        return result

    def _steps(self, manifest: Manifest, started: float) -> DreamResult:
        store = self.store
        rewrite = self.mode == "rewrite"
        store.reconcile()
        health_before = health(store)
        audit_before = audit_summary(store)
        manifest.update(health={"before": health_before}, audit={"before": audit_before})
        index_before = file_state(store.folder, INDEX_FILE, store.folder.index_file)
        if rewrite:
            snapshot = take_snapshot(
                store.folder, self.paths, self.run_id, protective=False, now=self.moment
            )
            note_refused(manifest, snapshot.refused, "rollback point")
            manifest.update(
                rollbackPoint={
                    "snapshot": str(snapshot.root),
                    "files": len(snapshot.files),
                    "refused": len(snapshot.refused),
                }
            )
        keep = BeforeKeeper(store.folder, self.paths, self.run_id) if rewrite else None
        applier = Applier(store, manifest, mode=self.mode, keep=keep)
        ctx = RuleContext(
            store, applier, self.moment, _retrievals(store), zone=self.settings.zone()
        )
        with _deferred_catalog(store, rewrite):
            for name, rule in all_rules():
                try:
                    rule(ctx)
                except Exception as exc:  # noqa: BLE001 - one failing rule must not stop the others
                    applier.note(None, rule=name, message=f"the rule stopped early: {exc!r}")
            model = run_model_pass(
                store,
                applier,
                model_pass=self.model_pass,
                agent_command=self.settings.agent_command,
                timeout=self.settings.agent_timeout_seconds,
                max_calls=self.settings.agent_max_calls,
            )
            # Journaled inside the block: MemoryStore.batch() may write MEMORY.md as it closes.
            index_entry = self._index_intent(manifest, index_before)
            if rewrite:
                self._keep_index_lines()
        if index_entry is not None:
            self._index(manifest, index_entry)
        changed = manifest.counts()["applied"] > 0
        health_after = health(store) if changed else health_before
        audit_after = audit_summary(store) if changed else audit_before
        finished = datetime.now(UTC)
        seconds = time.monotonic() - started
        manifest.data.update(
            status="finished",
            finished=stamp(finished),
            seconds=round(seconds, 3),
            model=model,
            health={"before": health_before, "after": health_after},
            audit={"before": audit_before, "after": audit_after},
        )
        report_path = self._write_report(manifest)
        manifest.data["report"] = os.path.relpath(report_path, store.folder.root).replace(
            os.sep, "/"
        )
        manifest.save(complete=True)
        record_end(self.paths, self.run_id, FINISHED, stamp(finished))
        if rewrite:
            rotate(self.paths, self.settings.keep_snapshots)
        by_rule: dict[str, int] = {}
        for change in manifest.changes:
            by_rule[change["rule"]] = by_rule.get(change["rule"], 0) + 1
        counts = manifest.counts()
        return DreamResult(
            status="finished",
            mode=self.mode,
            run_id=self.run_id,
            changes=counts["applied"] + counts["proposed"],
            refused=counts["refused"],
            notes=counts["notes"],
            by_rule=by_rule,
            report=str(report_path),
            manifest=str(self.paths.run_dir(self.run_id) / "manifest.json"),
            seconds=seconds,
            health={"before": health_before, "after": health_after},
            audit={"before": _count(audit_before), "after": _count(audit_after)},
            lock_recovered=self.recovered,
        )

    def _index_intent(
        self, manifest: Manifest, before: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """Journal MEMORY.md's regeneration before it happens (rewrite); or propose it (report)."""
        store = self.store
        changed = manifest.counts()["applied"]
        base = {
            "file": INDEX_FILE,
            "id": None,
            "rule": "index",
            "reason": f"regenerated after {changed} change{'s' if changed != 1 else ''}"
            if changed
            else "was out of date with the memories; regenerated",
            "unexplained": False,
            "source": "rules",
            "operation": "rewrite" if before else "create",
            "before": before,
        }
        if self.mode == "rewrite":
            return manifest.add_change({**base, "state": "pending"})
        expected = catalog.render(store.list(), _catalog_retrievals(store)).encode("utf-8")
        if before is None or before.get("sha256") != sha256_bytes(expected):
            reason = "is out of date with the memories; a rewrite run regenerates it"
            manifest.add_change({**base, "state": "proposed", "reason": reason})
        return None

    def _keep_index_lines(self) -> None:
        """Lines a person added to their MEMORY.md since the rollback point was taken (their
        own, not sage-mem's list) go into the rollback point before the run regenerates it:
        a rollback puts them back with the list as it was, never drops them."""
        snapshot = load_snapshot(self.paths, self.run_id)
        folder = self.store.folder
        if snapshot is None or INDEX_FILE not in snapshot.files:
            return  # no MEMORY.md then: the rollback sets this one aside, whole
        try:
            seen = read_checked(folder, folder.index_file)
            then = snapshot.read(INDEX_FILE)
        except (*REFUSED, DreamError):
            return
        if seen.raw is not None and catalog.owner_lines(seen.raw) != catalog.owner_lines(then):
            keep_before(snapshot, INDEX_FILE, seen.raw, seen.mode)

    def _index(self, manifest: Manifest, entry: dict[str, Any]) -> None:
        """Regenerate MEMORY.md once, now that the run's writes are done."""
        self.store.regenerate_index()
        after = file_state(self.store.folder, INDEX_FILE, self.store.folder.index_file)
        if after == entry["before"]:
            manifest.drop_change(entry)
        else:
            manifest.mark_applied(entry, after)

    def _write_report(self, manifest: Manifest) -> Path:
        path = self.paths.report_file(self.run_id)
        manifest_path = str(self.paths.run_dir(self.run_id) / "manifest.json")
        write_report(self.store, path, render_run(manifest.to_dict(), manifest_path=manifest_path))
        return path


def write_report(store: MemoryStore, path: Path, text: str) -> None:
    """A report in `memory/autodream/`, with the modes of the memory folder (private or shared).

    What it quotes of the memories (a contradiction's descriptions, a fold, a model's
    reason) is masked where it looks like a credential: the report sits in the memory
    folder, which git, the page and sync see (the manifest, private, keeps it whole).
    """
    root = store.folder.root
    make_dirs(path.parent, root=root)
    store.folder.check_contained(path)  # autodream/ may be a link out of the folder
    atomic_write(path, text_bytes(redact(text)), mode=file_mode(root))


def note_refused(manifest: Manifest, refused: dict[str, str], where: str) -> None:
    """List, for the report, the files a snapshot did not copy (it never reads them)."""
    for rel, why in sorted(refused.items()):
        manifest.note(
            {
                "rule": "snapshot",
                "file": rel,
                "message": f"not copied into the {where} and left as it is ({why})",
                "source": "rules",
            }
        )


def _retrievals(store: MemoryStore) -> dict[str, int]:
    counts = {}
    for memory_id, entry in store.stats.load().items():
        if isinstance(entry, dict):
            try:
                counts[memory_id] = int(entry.get("retrievals", 0))
            except (TypeError, ValueError):
                continue
    return counts


def _catalog_retrievals(store: MemoryStore) -> dict[str, int]:
    # As MemoryStore regenerates MEMORY.md: usage counts matter only once the index overflows.
    return _retrievals(store) if len(store.list()) > catalog.MAX_LINES // 2 else {}


def _count(audit: dict[str, Any] | None) -> dict[str, Any]:
    if not audit:
        return {}
    return {key: audit[key] for key in ("count", "checks", "error") if key in audit}


@contextlib.contextmanager
def _deferred_catalog(store: MemoryStore, active: bool) -> Iterator[None]:
    """Regenerate MEMORY.md once at the end of a rewrite run, not after each of its writes."""
    if not active:
        yield
        return
    with store.batch():
        yield


def mark_interrupted(paths: DreamPaths, now: datetime | None = None) -> list[str]:
    """Mark `interrupted` every run whose process is gone; returns their ids."""
    marked = []
    # Whose process is alive is in the manifest as saved: a live run's journal is not read.
    for run_id, saved in _manifests(paths, lambda run_id: _running_mark(paths, run_id).exists(),
                                    journal=False):
        mark = _running_mark(paths, run_id)
        if saved.status == "running" and process_alive(
            saved.data.get("pid"), saved.data.get("pidStart"), saved.data.get("host")
        ):
            continue
        try:
            manifest = Manifest.load(paths, run_id)
        except DreamError:
            continue
        data = manifest.data
        if manifest.status == "running":
            manifest.data.update(
                status="interrupted", interruptedFound=stamp(now or datetime.now(UTC))
            )
            manifest.save(complete=True)
            marked.append(run_id)
        # state.json follows the manifest (a kill may fall between the two), then the mark goes.
        final = FINISHED if manifest.status == FINISHED else INTERRUPTED
        if data.get("kind", "dream") == "dream":
            record_end(paths, run_id, final, data.get("finished"))
        mark.unlink(missing_ok=True)
    return marked


def _manifests(paths: DreamPaths, wanted: Callable[[str], bool] | None = None, *,
               journal: bool = True) -> Iterator[tuple[str, Manifest]]:
    """Each run's id and manifest, oldest first: the runs `wanted(run_id)` names (default all)
    whose manifest loads (`journal`: as `Manifest.load`)."""
    for run_id in _run_ids(paths):
        if wanted is not None and not wanted(run_id):
            continue
        try:
            manifest = Manifest.load(paths, run_id, journal=journal)
        except DreamError:
            continue
        yield run_id, manifest


def _run_ids(paths: DreamPaths) -> list[str]:
    """The ids of the runs' folders, oldest first."""
    try:
        names = sorted(os.listdir(paths.runs_dir))
    except FileNotFoundError:
        return []
    return [name for name in names if RUN_ID.match(name)]


def _running_mark(paths: DreamPaths, run_id: str) -> Path:
    return paths.run_dir(run_id) / RUNNING_MARK


def list_runs(
    store: MemoryStore, read: Callable[[DreamPaths, str], RunInfo] | None = None
) -> list[RunInfo]:
    """Every dream run and rollback, oldest first; marks crashed runs interrupted first.

    `read` gives one run's line (DreamError for a run it cannot read), by default from its
    manifest read whole: the page passes one that keeps what it read while the run's files
    are unchanged (`ui/run_lines.py`).
    """
    paths = DreamPaths(store.folder)
    mark_interrupted(paths)
    line = read or _read_run
    runs = []
    for run_id in _run_ids(paths):
        try:
            runs.append(line(paths, run_id))
        except DreamError:
            continue
    return runs


def _read_run(paths: DreamPaths, run_id: str) -> RunInfo:
    return run_info(paths, run_id, Manifest.load(paths, run_id))


def run_info(paths: DreamPaths, run_id: str, manifest: Manifest) -> RunInfo:
    """A run's line in the list of runs, from its manifest (with its journal where it has one)."""
    data = manifest.data
    return RunInfo(
        run_id=run_id,
        kind=str(data.get("kind", "dream")),
        mode=data.get("mode"),
        status=manifest.status,
        started=data.get("started"),
        finished=data.get("finished"),
        counts=manifest.counts(),
        target=data.get("target"),
        scope=data.get("scope"),
        rolled_back_by=data.get("rolledBackBy"),
        rollback_point=has_snapshot(paths, run_id),
        report=data.get("report"),
        error=data.get("error"),
    )
