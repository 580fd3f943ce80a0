"""Undo a dream run (or a rollback): put the folder back as the run's rollback point has it.

    rollback(store, "20261129T201500Z-1a2b")                  # the files that run touched
    rollback(store, "20261129T201500Z-1a2b", scope="all")     # the whole folder
    rollback(store, "20261129T201500Z-1a2b", dry_run=True)    # say what would happen

First a protective snapshot of the present (never rotated out), so that the
rollback is itself a run that can be rolled back. Then, file by file:

- a file the rollback point has is written back with its exact bytes (atomic,
  checked against its sha256 before and after);
- a memory the rollback point does not have is moved into `archive/` (under a
  free name), never deleted; a MEMORY.md that did not exist is set aside in
  the rollback's folder in the state folder;
- a name conflict (the run moved a file away and another file has taken its
  name since) is skipped and counted: nothing is ever overwritten that the
  run did not write. Files in `archive/` stay where they are.

Each rollback writes a manifest and a report like a run, appends a line to
`rollbacks.json` and marks the run `rolled-back`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import DreamError, StoreLocked
from ..files import sha256_bytes
from ..folder import ARCHIVE_DIR, DREAM_DIR, INDEX_FILE
from ..locks import file_lock
from ..safe_io import atomic_write
from ..store import MemoryStore
from .config import DreamConfig
from .gates import DreamLock
from .manifest import Manifest, stamp
from .paths import DreamPaths
from .report import render_rollback
from .runinfo import new_run_id
from .runner import RUNNING_MARK, mark_interrupted
from .snapshots import Snapshot, load_snapshot, memory_paths, take_snapshot

SCOPES = ("touched", "all")
_UNKNOWN = "unknown"  # a change the run began but may not have finished
_UNTOUCHED = "untouched"


@dataclass(frozen=True)
class Action:
    """One step of a rollback: `restore`, `recreate`, `archive`, `set-aside` or `conflict`."""

    path: str
    action: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "action": self.action, "detail": self.detail}


@dataclass(frozen=True)
class RollbackResult:
    """What a rollback did (or, for a dry run, would do)."""

    run_id: str
    scope: str
    dry_run: bool
    rollback_id: str | None = None
    actions: list[Action] = field(default_factory=list)
    unchanged: int = 0
    report: str | None = None
    damaged: int = 0

    def count(self, *kinds: str) -> int:
        return sum(1 for a in self.actions if a.action in kinds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "rollbackId": self.rollback_id,
            "scope": self.scope,
            "dryRun": self.dry_run,
            "restored": self.count("restore", "recreate"),
            "archived": self.count("archive", "set-aside"),
            "conflicts": self.count("conflict"),
            "unchanged": self.unchanged,
            "damaged": self.damaged,
            "report": self.report,
            "actions": [a.to_dict() for a in self.actions],
        }

    def format_text(self) -> str:
        verb = (
            ("would restore", "would move", "would skip")
            if self.dry_run
            else ("restored", "moved", "skipped")
        )
        name = "dry run: rollback" if self.dry_run else f"rollback {self.rollback_id}"
        head = (
            f"{name} of {self.run_id} ({self.scope}): "
            f"{verb[0]} {self.count('restore', 'recreate')} files, "
            f"{verb[1]} {self.count('archive', 'set-aside')} into archive/, "
            f"{verb[2]} {self.count('conflict')} name conflicts"
        )
        lines = [head]
        if self.damaged:
            lines.append(
                f"  {self.damaged} copies in the rollback point were damaged and not restored"
            )
        for action in self.actions:
            lines.append(
                f"  {action.action:<9} {action.path}"
                + (f"  ({action.detail})" if action.detail else "")
            )
        if self.report:
            lines.append(f"report: {self.report}")
        if not self.dry_run and self.rollback_id:
            lines.append(f"undo: sage-mem rollback {self.rollback_id}")
        return "\n".join(lines) + "\n"


def rollback(
    store: MemoryStore,
    run_id: str,
    *,
    scope: str = "touched",
    dry_run: bool = False,
    now: datetime | None = None,
    config: DreamConfig | None = None,
) -> RollbackResult:
    """Put back what run `run_id` changed (`touched`) or the whole folder (`all`).

    Raises RunNotFound for an unknown run, DreamError when there is nothing to
    roll back to, StoreLocked while a run or another rollback is in progress.
    """
    if scope not in SCOPES:
        raise DreamError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    paths = DreamPaths(store.folder)
    moment = now or datetime.now(UTC)
    mark_interrupted(paths, moment)
    target = Manifest.load(paths, run_id)
    _check_target(paths, target)
    snapshot = load_snapshot(paths, run_id)
    if snapshot is None and not _touched(target):
        raise DreamError(f"run {run_id} changed nothing: it stopped before its first change")
    if snapshot is None:
        raise DreamError(
            f"run {run_id} has no rollback point any more (older ones are rotated out; "
            "see keepSnapshots)"
        )
    if dry_run:
        plan, unchanged = _plan(store, target, snapshot, scope)
        return RollbackResult(run_id, scope, True, actions=plan, unchanged=unchanged)
    settings = config or DreamConfig.load(paths.config_file)
    rollback_id = new_run_id(moment, paths.runs_dir)
    lock = DreamLock(paths, stale_after=timedelta(minutes=settings.stale_lock_minutes))
    if not lock.acquire(rollback_id, moment):
        holder = lock.holder.describe() if lock.holder else "another run"
        raise StoreLocked(
            f"a dream run or rollback is in progress ({holder})", path=paths.lock_file
        )
    try:
        return _Rollback(store, paths, target, snapshot, scope, rollback_id, moment).execute()
    finally:
        lock.release()


def _check_target(paths: DreamPaths, target: Manifest) -> None:
    run_id = target.run_id
    if target.status == "running":
        raise StoreLocked(f"run {run_id} is still in progress", path=paths.lock_file)
    if target.status == "rolled-back":
        by = target.data.get("rolledBackBy")
        raise DreamError(
            f"run {run_id} was rolled back already by {by}; roll back {by} to undo that"
        )
    if target.data.get("kind") == "dream" and target.data.get("mode") == "report":
        raise DreamError(f"run {run_id} was a report run: it changed nothing but its report")


def _touched(target: Manifest) -> dict[str, str | None]:
    """File the run changed -> its sha256 after (None: moved away; _UNKNOWN: cut short)."""
    touched: dict[str, str | None] = {}
    for change in target.changes:
        state = change.get("state")
        if state not in ("applied", "pending"):
            continue
        rel = change.get("file")
        if not isinstance(rel, str):
            continue
        after = change.get("after") or {}
        if state == "pending":
            touched[rel] = _UNKNOWN
        elif change.get("operation") == "archive":
            touched[rel] = None
        else:
            touched[rel] = after.get("sha256")
    return touched


def _plan(
    store: MemoryStore, target: Manifest, snapshot: Snapshot, scope: str
) -> tuple[list[Action], int]:
    root = store.folder.root
    touched = _touched(target)
    if scope == "touched":
        rels = set(touched)
    else:
        rels = set(snapshot.files) | {rel for rel, _ in memory_paths(store.folder)} | set(touched)
    actions: list[Action] = []
    unchanged = 0
    for rel in sorted(rels):
        if rel.split("/", 1)[0] in (ARCHIVE_DIR, DREAM_DIR):
            continue  # archived files stay archived; reports are history
        current = _sha(root / rel)
        want = snapshot.files.get(rel)
        if want is None:
            if current is None:
                continue
            if rel == INDEX_FILE:
                actions.append(
                    Action(rel, "set-aside", "MEMORY.md did not exist at the rollback point")
                )
            else:
                actions.append(Action(rel, "archive", "did not exist at the rollback point"))
            continue
        if current == want.sha256:
            unchanged += 1
            continue
        if current is None:
            actions.append(Action(rel, "recreate", "missing now"))
            continue
        after = touched.get(rel, _UNTOUCHED)
        if after is None:
            actions.append(
                Action(
                    rel,
                    "conflict",
                    "the run moved this file away and another file "
                    "has this name now; not overwritten",
                )
            )
        elif after in (_UNKNOWN, _UNTOUCHED) or after == current:
            actions.append(Action(rel, "restore"))
        else:
            actions.append(
                Action(
                    rel,
                    "restore",
                    "changed again after the run; that version is in the protective snapshot",
                )
            )
    return actions, unchanged


class _Rollback:
    def __init__(
        self,
        store: MemoryStore,
        paths: DreamPaths,
        target: Manifest,
        snapshot: Snapshot,
        scope: str,
        rollback_id: str,
        moment: datetime,
    ) -> None:
        self.store = store
        self.paths = paths
        self.target = target
        self.snapshot = snapshot
        self.scope = scope
        self.rollback_id = rollback_id
        self.moment = moment

    def execute(self) -> RollbackResult:
        store, paths = self.store, self.paths
        manifest = Manifest.start(
            paths,
            self.rollback_id,
            kind="rollback",
            mode=None,
            now=self.moment,
            target=self.target.run_id,
            scope=self.scope,
        )
        mark = paths.run_dir(self.rollback_id) / RUNNING_MARK  # made by Manifest.start
        done: list[Action] = []
        damaged = 0
        try:
            protective = take_snapshot(
                store.folder, paths, self.rollback_id, protective=True, now=self.moment
            )
            manifest.update(
                rollbackPoint={"snapshot": str(protective.root), "files": len(protective.files)}
            )
            # Planned under the lock, so that no run or rollback changes the folder meanwhile.
            plan, unchanged = _plan(store, self.target, self.snapshot, self.scope)
            for action in plan:
                outcome = self._apply(manifest, action)
                if outcome == "damaged":
                    damaged += 1
                elif outcome:
                    done.append(action)
            store.note_outside_writes()
            if any(a.action == "conflict" for a in done):
                self._regenerate_index(manifest)
        except BaseException as exc:
            manifest.update(status="interrupted", error=str(exc) or type(exc).__name__)
            manifest.save(complete=True)
            mark.unlink(missing_ok=True)
            raise
        report = paths.report_file(self.rollback_id)
        manifest.data.update(
            status="finished",
            finished=stamp(datetime.now(UTC)),
            report=os.path.relpath(report, store.folder.root).replace(os.sep, "/"),
        )
        report.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        manifest_path = str(paths.run_dir(self.rollback_id) / "manifest.json")
        atomic_write(
            report,
            render_rollback(manifest.to_dict(), manifest_path=manifest_path).encode("utf-8"),
            mode=0o644,
        )
        manifest.save(complete=True)
        mark.unlink(missing_ok=True)
        self._log(done)
        self.target.update(status="rolled-back", rolledBackBy=self.rollback_id)
        self.target.save(complete=True)
        return RollbackResult(
            self.target.run_id,
            self.scope,
            False,
            self.rollback_id,
            done,
            unchanged,
            str(report),
            damaged,
        )

    def _apply(self, manifest: Manifest, action: Action) -> bool | str:
        root = self.store.folder.root
        path = root / action.path
        base = {
            "file": action.path,
            "id": None,
            "rule": "rollback",
            "unexplained": False,
            "source": "rollback",
        }
        if action.action == "conflict":
            manifest.refuse(
                {
                    **base,
                    "operation": "rewrite",
                    "reason": f"put back as before run {self.target.run_id}",
                    "refusedBecause": action.detail,
                }
            )
            return True
        with file_lock(self.store.folder.state_path("write.lock")):
            before = _state(action.path, path)
            if action.action in ("archive", "set-aside"):
                if before is None:
                    return False
                destination = self._aside(action)
                entry = manifest.add_change(
                    {
                        **base,
                        "operation": "archive",
                        "state": "pending",
                        "before": before,
                        "reason": f"did not exist before run {self.target.run_id}",
                    }
                )
                _move_no_clobber(path, destination)
                shown = (
                    os.path.relpath(destination, root).replace(os.sep, "/")
                    if action.action == "archive"
                    else str(destination)
                )
                manifest.mark_applied(entry, {**before, "file": shown})
                return True
            want = self.snapshot.files[action.path]
            try:
                data = self.snapshot.read(action.path)
            except DreamError as exc:
                manifest.refuse(
                    {
                        **base,
                        "operation": "rewrite",
                        "reason": "put back",
                        "refusedBecause": str(exc),
                    }
                )
                return "damaged"
            operation = "create" if before is None else "rewrite"
            reason = f"put back as it was before run {self.target.run_id}"
            if action.detail:
                reason += f" ({action.detail})"
            entry = manifest.add_change(
                {
                    **base,
                    "operation": operation,
                    "state": "pending",
                    "before": before,
                    "reason": reason,
                }
            )
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write(path, data, mode=want.mode)
            after = _state(action.path, path)
            if after is None or after["sha256"] != want.sha256:
                raise DreamError(
                    f"{action.path}: the bytes written back do not match the rollback point"
                )
            manifest.mark_applied(entry, after)
            return True

    def _aside(self, action: Action) -> Path:
        if action.action == "set-aside":
            return _free_name(self.paths.run_dir(self.rollback_id) / Path(action.path).name)
        return _free_name(self.store.folder.archive_dir / action.path)

    def _regenerate_index(self, manifest: Manifest) -> None:
        path = self.store.folder.index_file
        before = _state(INDEX_FILE, path)
        entry = manifest.add_change(
            {
                "file": INDEX_FILE,
                "id": None,
                "rule": "rollback",
                "operation": "rewrite" if before else "create",
                "state": "pending",
                "before": before,
                "unexplained": False,
                "source": "rollback",
                "reason": "regenerated: name conflicts were skipped, so the old "
                "MEMORY.md would not match the memories",
            }
        )
        self.store.regenerate_index()
        after = _state(INDEX_FILE, path)
        if after == before:
            manifest.drop_change(entry)
        else:
            manifest.mark_applied(entry, after)

    def _log(self, done: list[Action]) -> None:
        log = self.paths.rollbacks_log
        try:
            entries = json.loads(log.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            entries = []
        if not isinstance(entries, list):
            entries = []
        entries.append(
            {
                "rollbackId": self.rollback_id,
                "runId": self.target.run_id,
                "scope": self.scope,
                "at": stamp(self.moment),
                "restored": sum(1 for a in done if a.action in ("restore", "recreate")),
                "archived": sum(1 for a in done if a.action in ("archive", "set-aside")),
                "conflicts": sum(1 for a in done if a.action == "conflict"),
                "protectiveSnapshot": self.rollback_id,
            }
        )
        atomic_write(
            log, (json.dumps(entries, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        )


def _sha(path: Path) -> str | None:
    try:
        return sha256_bytes(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _state(rel: str, path: Path) -> dict[str, Any] | None:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return {"file": rel, "bytes": len(data), "sha256": sha256_bytes(data)}


def _free_name(target: Path) -> Path:
    if not os.path.lexists(target):
        return target
    stem, suffix = (target.name[:-3], ".md") if target.name.endswith(".md") else (target.name, "")
    n = 2
    while os.path.lexists(candidate := target.with_name(f"{stem}-{n}{suffix}")):
        n += 1
    return candidate


def _move_no_clobber(source: Path, target: Path) -> None:
    """Move a file, never replacing one: a hard link then an unlink (across devices, a copy)."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.link(source, target, follow_symlinks=False)
    except FileExistsError:
        raise DreamError(f"{target}: exists already; not overwritten") from None
    except OSError:
        data = source.read_bytes()  # another device (the state folder elsewhere), or no hard links
        with open(target, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    os.unlink(source)
