"""Undo a dream run (or a rollback): put the folder back as the run's rollback point has it.

    rollback(store, "20261129T201500Z-1a2b")                  # the files that run touched
    rollback(store, "20261129T201500Z-1a2b", scope="all")     # the whole folder
    rollback(store, "20261129T201500Z-1a2b", dry_run=True)    # say what would happen
    rollback(store, "20261129T201500Z-1a2b", force=True)      # edits made since the run too

First a protective snapshot of the present (never rotated out), so that the
rollback is itself a run that can be rolled back. Then, file by file, under the
folder's write lock (each write counted, so that other processes reconcile
before their next write):

- a file changed since the run is a conflict: skipped, and listed first,
  unless `force`. Changed since the run means its bytes are not what the run
  left there (the manifest's sha256 after; for a file the run did not touch,
  the rollback point's), or it was removed or created since. The present
  version is in the protective snapshot either way;
- a file the rollback point has is written back with its exact bytes, and only
  over the bytes the plan read (`safe_io.commit`): an editor saving meanwhile
  makes it a conflict, never a loss;
- a memory the rollback point does not have is moved into `archive/` (under a
  free name), never deleted; a MEMORY.md that did not exist is set aside in
  the rollback's folder in the state folder;
- a name conflict (the run moved a file away and another file has taken its
  name since) is skipped and counted, even with `force`;
- a memory the run archived that is live again takes its retrieval counts
  back, and its archived copy leaves `archive/` for the rollback's folder in
  the state folder (`runs/<rollbackId>/archived/`), so that it no longer shows
  as archived; it is never deleted;
- a file the folder's checked read refuses (a link out of the folder, a FIFO,
  a device, a file over the size cap) is left as it is and listed: it is
  never followed, read or waited on, and no rollback point holds it.

Each rollback writes a manifest and a report like a run, appends a line to
`rollbacks.json` and marks the run `rolled-back`.

Why one module: a rollback is planned (`_plan`, `_plan_file`) and carried out
(`_Rollback`) from the same per-file states of the run's manifest and snapshot,
and every refusal the plan makes (a file changed since, an archived copy in the
way) must be the one the execution honours; the two halves are read together.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..disk.folder import ARCHIVE_DIR, DREAM_DIR, INDEX_FILE, MemoryFolder
from ..disk.locks import WriteLock, write_lock
from ..disk.safe_io import (
    Seen,
    atomic_write,
    commit,
    create,
    file_mode,
    free_name,
    identity,
    make_dirs,
    make_private_dirs,
    move,
    read_file,
    text_bytes,
)
from ..errors import DreamError, FileChanged, InvalidMemory, StoreLocked
from ..memory.file_format import sha256_bytes
from ..memory.json_view import camel_dict
from ..memory.value import MAX_FILE_BYTES
from ..store import MemoryStore
from .changes import REFUSED, file_state, read_checked
from .config import DreamConfig
from .gates import DreamLock
from .manifest import Manifest, stamp
from .paths import DreamPaths
from .report import render_rollback
from .runinfo import new_run_id
from .runner import RUNNING_MARK, mark_interrupted, note_refused, write_report
from .snapshots import Snapshot, keep_before, load_snapshot, memory_paths, take_snapshot

SCOPES = ("touched", "all")
ARCHIVED_ASIDE = "archived"  # runs/<rollbackId>/archived/: archived copies of memories put back
_UNKNOWN = "unknown"  # a change the run began but may not have finished
_SKIPPED = ("conflict", "unreadable")


@dataclass(frozen=True)
class Action:
    """One step of a rollback: `restore`, `recreate`, `archive`, `set-aside`, `return` (an
    archived copy a rollback set aside goes back into archive/), `conflict` (skipped: changed
    since the run, or a name conflict) or `unreadable` (left as it is)."""

    path: str
    action: str
    detail: str = ""
    forcible: bool = False
    """A conflict because the file changed since the run: `force` puts it back."""
    found: str | None = field(default=None, repr=False, compare=False)
    """The sha256 the plan found there (None: no file); the write needs the file to hold it."""
    live: str | None = field(default=None, repr=False, compare=False)
    """For an archived copy set aside: the memory that must be back as it was first."""
    renames: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    """Retrieval counts to carry over (old id, new id) once done."""
    source: Path | None = field(default=None, repr=False, compare=False)
    """For an archived copy put back into archive/ (`return`): where it was set aside."""
    gone: str | None = field(default=None, repr=False, compare=False)
    """For a `return`: the memory that must have left the folder first."""

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self, "path action detail forcible")


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
    force: bool = False

    def count(self, *kinds: str) -> int:
        return sum(1 for a in self.actions if a.action in kinds)

    @property
    def forcible(self) -> int:
        """Files skipped because they changed since the run (`force` would put them back)."""
        return sum(1 for a in self.actions if a.forcible)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "rollbackId": self.rollback_id,
            "scope": self.scope,
            "dryRun": self.dry_run,
            "force": self.force,
            "restored": self.count("restore", "recreate"),
            "archived": self.count("archive", "set-aside", "return"),
            "conflicts": self.count("conflict"),
            "forcible": self.forcible,
            "unreadable": self.count("unreadable"),
            "unchanged": self.unchanged,
            "damaged": self.damaged,
            "report": self.report,
            "actions": [a.to_dict() for a in self.actions],
        }

    def format_text(self) -> str:
        verb = (
            ("would restore", "would move", "would skip", "would leave")
            if self.dry_run
            else ("restored", "moved", "skipped", "left")
        )
        name = "dry run: rollback" if self.dry_run else f"rollback {self.rollback_id}"
        forced = ", forced" if self.force else ""
        changed, names = self.forcible, self.count("conflict") - self.forcible
        head = (
            f"{name} of {self.run_id} ({self.scope}{forced}): "
            f"{verb[0]} {self.count('restore', 'recreate')} files, "
            f"{verb[1]} {self.count('archive', 'set-aside', 'return')} aside, "
            f"{verb[2]} {changed} changed since the run and {names} name conflicts"
        )
        if self.count("unreadable"):
            head += f", {verb[3]} {self.count('unreadable')} unreadable as they are"
        lines = [head]
        for action in self.actions:
            lines.append(
                f"  {action.action:<10} {action.path}"
                + (f"  ({action.detail})" if action.detail else "")
            )
        if self.damaged:
            lines.append(
                f"  {self.damaged} copies in the rollback point were damaged and not restored"
            )
        if self.report:
            lines.append(f"report: {self.report}")
        if changed and self.dry_run:
            lines.append(
                f"--force would put back the {changed} changed since the run as well "
                "(their present version is kept in the protective snapshot)"
            )
        elif changed:
            lines.append(
                f"to put back the {changed} changed since the run as well: "
                f"sage-mem rollback {self.rollback_id}, then "
                f"sage-mem rollback {self.run_id} --force"
            )
        if not self.dry_run and self.rollback_id:
            lines.append(f"undo: sage-mem rollback {self.rollback_id}")
        return "\n".join(lines) + "\n"


def rollback(
    store: MemoryStore,
    run_id: str,
    *,
    scope: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    now: datetime | None = None,
    config: DreamConfig | None = None,
) -> RollbackResult:
    """Put back what run `run_id` changed (`touched`) or the whole folder (`all`).

    No `scope`: the settings' `rollbackScope` (`touched` unless set). A file
    changed since the run is skipped as a conflict unless `force`. Raises
    RunNotFound for an unknown run, DreamError when there is nothing to roll
    back to, StoreLocked while a run or another rollback is in progress.
    """
    paths = DreamPaths(store.folder)
    if scope is None:
        config = config or DreamConfig.load(paths.config_file)
        scope = config.rollback_scope
    if scope not in SCOPES:
        raise DreamError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
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
        plan, unchanged = _plan(store, target, snapshot, scope, force)
        return RollbackResult(
            run_id, scope, True, actions=plan, unchanged=unchanged, force=force
        )
    settings = config or DreamConfig.load(paths.config_file)
    rollback_id = new_run_id(moment, paths.runs_dir)
    lock = DreamLock(paths, stale_after=timedelta(minutes=settings.stale_lock_minutes))
    if not lock.acquire(rollback_id, moment):
        holder = lock.holder.describe() if lock.holder else "another run"
        raise StoreLocked(
            f"a dream run or rollback is in progress ({holder})", path=paths.lock_file
        )
    try:
        return _Rollback(
            store, paths, target, snapshot, scope, force, rollback_id, moment
        ).execute()
    finally:
        lock.release()


def _check_target(paths: DreamPaths, target: Manifest) -> None:
    run_id = target.run_id
    if target.status == "running":
        raise StoreLocked(f"run {run_id} is still in progress", path=paths.lock_file)
    if target.status == "rolled-back":
        raise DreamError(_rolled_back_already(paths, target))
    if (
        target.data.get("kind") == "dream"
        and target.data.get("mode") == "report"
        and not any(change.get("state") == "applied" for change in target.changes)
    ):
        # A report run changes nothing itself; only an agent's own tools can have (model.OUTSIDE).
        raise DreamError(f"run {run_id} was a report run: it changed nothing but its report")


def _rolled_back_already(paths: DreamPaths, target: Manifest) -> str:
    """What to run instead, for a run rolled back already: its chain of rollbacks followed.

    A rollback of a rollback puts the run's changes back; the last rollback in
    the chain is the one to roll back, whether to undo the run again or to
    bring it back.
    """
    run_id = target.run_id
    chain = [str(target.data.get("rolledBackBy"))]
    while len(chain) < 100:
        try:
            step = Manifest.load(paths, chain[-1])
        except DreamError:
            break
        by = step.data.get("rolledBackBy")
        if step.status != "rolled-back" or not isinstance(by, str) or by in chain:
            break
        chain.append(by)
    first, last = chain[0], chain[-1]
    if len(chain) == 1:
        return f"run {run_id} was rolled back already by {first}; roll back {first} to undo that"
    if len(chain) % 2 == 0:
        return (f"run {run_id} was rolled back already by {first}, and {first} was undone by "
                f"{chain[1]}" + (f" (then {', '.join(chain[2:])})" if len(chain) > 2 else "")
                + f": its changes are in place; roll back {last} to undo the run again")
    return (f"run {run_id} was rolled back already by {first}, then undone and rolled back again "
            f"({', '.join(chain[1:])}); roll back {last} to bring it back")


@dataclass(frozen=True)
class _Touch:
    """What a run left at a path it changed."""

    after: str | None
    """Its sha256 after the run; None: moved away; _UNKNOWN: the change was cut short."""
    moved_to: str | None = None
    """Where in archive/ the run moved it (relative to the memory folder)."""
    moved_sha: str | None = None


def _touched(target: Manifest) -> dict[str, _Touch]:
    """Every file the run changed -> what it left there (the last change of each counts)."""
    touched: dict[str, _Touch] = {}
    for change in target.changes:
        state = change.get("state")
        if state not in ("applied", "pending"):
            continue
        rel = change.get("file")
        if not isinstance(rel, str):
            continue
        after = change.get("after") or {}
        if state == "pending":
            touched[rel] = _Touch(_UNKNOWN)
        elif change.get("operation") == "archive":
            moved = after.get("file")
            if isinstance(moved, str) and moved.startswith(ARCHIVE_DIR + "/"):
                touched[rel] = _Touch(None, moved, after.get("sha256"))
            else:
                touched[rel] = _Touch(None)
        else:
            touched[rel] = _Touch(after.get("sha256"))
    return touched


def _set_aside_copies(target: Manifest) -> dict[str, tuple[str, Path, str | None]]:
    """Memory put back by a rollback -> (its archived copy, where the rollback set it aside, sha).

    Undoing that rollback archives the memory again: the very copy goes back into archive/.
    """
    copies = {}
    for change in target.changes:
        live = change.get("liveAgain")
        if not isinstance(live, str):
            continue
        if change.get("state") == "applied":
            after = change.get("after") or {}
            aside, sha = after.get("file"), after.get("sha256")
        else:  # cut short: the copy may or may not have been moved already
            aside, sha = change.get("aside"), (change.get("before") or {}).get("sha256")
        if isinstance(aside, str):
            copies[live] = (str(change.get("file")), Path(aside), sha)
    return copies


def _plan(
    store: MemoryStore, target: Manifest, snapshot: Snapshot, scope: str, force: bool
) -> tuple[list[Action], int]:
    """Every step, conflicts first; and how many files are as the rollback point has them."""
    folder = store.folder
    touched = _touched(target)
    copies = _set_aside_copies(target)
    rels = set(touched)
    if scope == "all":
        rels |= set(snapshot.files) | set(snapshot.refused)
        rels |= {rel for rel, _ in memory_paths(folder)}
    steps: list[Action] = []
    unchanged = 0
    for rel in sorted(rels):
        if rel.split("/", 1)[0] in (ARCHIVE_DIR, DREAM_DIR):
            continue  # what is archived stays archived; reports are history
        planned = _plan_file(store, rel, touched.get(rel), snapshot, force)
        if planned is None:
            unchanged += 1
            continue
        if rel in copies and [a.action for a in planned] == ["archive"]:
            planned = _return_copy(store, planned[0], *copies[rel])
        steps.extend(planned)
    return sorted(steps, key=_rank), unchanged


def _rank(action: Action) -> int:
    """Conflicts first, then what is left as it is, then the changes, archived copies last."""
    if action.action == "conflict":
        return 0
    if action.action == "unreadable":
        return 1
    return 3 if action.live is not None or action.source is not None else 2


def _plan_file(
    store: MemoryStore, rel: str, touch: _Touch | None, snapshot: Snapshot, force: bool
) -> list[Action] | None:
    """The steps for one file; None when it is as the rollback point has it."""
    folder = store.folder
    if rel in snapshot.refused:
        why = snapshot.refused[rel]
        return [Action(rel, "unreadable", f"not in the rollback point: {why}; left as it is")]
    try:
        seen = read_checked(folder, folder.root / rel)
    except REFUSED as exc:
        return [Action(rel, "unreadable", f"{exc}; left as it is")]
    now = _sha(seen)
    want = snapshot.files.get(rel)
    goal = want.sha256 if want is not None else None
    copy = _archived_copy(store, rel, touch, force)
    if now == goal:
        if goal is None:
            return []
        # Live as it was: a copy a killed rollback left in archive/ still goes.
        return [copy] if isinstance(copy, Action) else None
    # What the run left here: the manifest says, for a file it touched; else the rollback point.
    left = goal if touch is None else touch.after
    if touch is not None and touch.after is None and now is not None and goal is not None:
        return [
            Action(
                rel,
                "conflict",
                "the run moved this file away and another file has this name now; "
                "not overwritten",
                found=now,
            )
        ]
    changed = left != _UNKNOWN and now != left
    if changed and not force:
        return [Action(rel, "conflict", _changed_since(now, left), forcible=True, found=now)]
    forced = (
        "changed since the run; put back as asked, the present version is in the "
        "protective snapshot"
        if changed
        else ""
    )
    if goal is None:
        kind = "set-aside" if rel == INDEX_FILE else "archive"
        return [Action(rel, kind, _join("did not exist at the rollback point", forced), found=now)]
    if now is not None:
        return [Action(rel, "restore", forced, found=now)]
    if isinstance(copy, str):  # its archived copy was changed since the run
        return [Action(rel, "conflict", copy, forcible=True, found=None)]
    renames: tuple[tuple[str, str], ...] = ()
    if touch is not None and touch.moved_to is not None:
        archived_id = folder.archived_id_for(folder.root / touch.moved_to)
        memory_id = folder.id_for(folder.root / rel)
        if archived_id and memory_id:
            renames = ((archived_id, memory_id),)
    if touch is not None and touch.after is None:
        why = "the run archived it" if touch.moved_to else "the run moved it away"
    else:
        why = "missing now"
    recreate = Action(rel, "recreate", _join(why, forced), found=None, renames=renames)
    return [recreate, copy] if isinstance(copy, Action) else [recreate]


def _archived_copy(
    store: MemoryStore, rel: str, touch: _Touch | None, force: bool
) -> Action | str | None:
    """The step that takes the run's archived copy of `rel` out of archive/ once `rel` is live.

    A string says why it cannot go: the copy was changed since the run (a conflict
    for `rel`, unless `force`). None: there is no copy to move.
    """
    if touch is None or touch.moved_to is None:
        return None
    folder = store.folder
    try:
        seen = read_checked(folder, folder.root / touch.moved_to)
    except REFUSED:
        return None  # not a file to move (nor read): left where it is
    found = _sha(seen)
    if found is None:
        return None
    if found != touch.moved_sha and not force:
        return (
            f"its archived copy {touch.moved_to} was changed since the run; not put back: "
            "--force puts back the version before the run and sets that copy aside"
        )
    return Action(
        touch.moved_to,
        "set-aside",
        f"{rel} is live again: its archived copy leaves archive/",
        found=found,
        live=rel,
    )


def _return_copy(
    store: MemoryStore, archive: Action, copy_rel: str, aside: Path, sha: str | None
) -> list[Action]:
    """Archive a memory again by putting back the copy a rollback took out of archive/.

    The memory itself (the rollback point's bytes) is set aside, so that archive/
    holds the very file it held before, not a second copy; when that copy is gone
    or changed, or its name is taken, the memory is archived as any other.
    """
    folder = store.folder
    try:
        seen = read_file(aside, limit=MAX_FILE_BYTES)
    except (OSError, InvalidMemory):
        return [archive]
    if _sha(seen) != sha or os.path.lexists(folder.root / copy_rel):
        return [archive]
    detail = _join(archive.detail, f"its archived copy goes back to {copy_rel}")
    return [
        Action(archive.path, "set-aside", detail, found=archive.found),
        Action(
            copy_rel, "return", f"{archive.path} is archived again", source=aside, gone=archive.path
        ),
    ]


def _changed_since(now: str | None, left: str | None) -> str:
    if now is None:
        return "removed since the run; not put back: --force puts it back"
    if left is None:
        return "created since the run; left as it is: --force moves it aside"
    return "changed since the run; not put back: --force puts back the version before the run"


def _join(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _sha(seen: Seen) -> str | None:
    return None if seen.raw is None else sha256_bytes(seen.raw)


@dataclass
class _Rollback:
    """One rollback of the run `target` to its `snapshot`, under the lock, as `rollback_id`."""

    store: MemoryStore
    paths: DreamPaths
    target: Manifest
    snapshot: Snapshot
    scope: str
    force: bool
    rollback_id: str
    moment: datetime
    protective: Snapshot | None = None
    """The present, taken first; what a step changes is kept in it as the step found it."""

    @property
    def folder(self) -> MemoryFolder:
        return self.store.folder

    def execute(self) -> RollbackResult:
        store, paths = self.store, self.paths
        paths.check_reports_dir()
        manifest = Manifest.start(
            paths,
            self.rollback_id,
            kind="rollback",
            mode=None,
            now=self.moment,
            target=self.target.run_id,
            scope=self.scope,
            force=self.force,
        )
        mark = paths.run_dir(self.rollback_id) / RUNNING_MARK  # made by Manifest.start
        done: list[Action] = []
        damaged = 0
        try:
            protective = self.protective = take_snapshot(
                store.folder, paths, self.rollback_id, protective=True, now=self.moment
            )
            manifest.update(
                rollbackPoint={
                    "snapshot": str(protective.root),
                    "files": len(protective.files),
                    "refused": len(protective.refused),
                }
            )
            # Planned with the dream lock held, so that no run or rollback changes the folder
            # meanwhile; each step checks again, under the write lock, what it is about to change.
            plan, unchanged = _plan(store, self.target, self.snapshot, self.scope, self.force)
            listed = {a.path for a in plan if a.action == "unreadable"}
            note_refused(
                manifest,
                {rel: why for rel, why in protective.refused.items() if rel not in listed},
                "protective snapshot",
            )
            for action in plan:
                outcome = self._apply(manifest, action)
                if outcome == "damaged":
                    damaged += 1
                elif isinstance(outcome, Action):
                    done.append(outcome)
            store.reconcile()  # this process's index; the others learn of it by the write count
            if damaged or any(a.action in _SKIPPED for a in done):
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
        manifest_path = str(paths.run_dir(self.rollback_id) / "manifest.json")
        text = render_rollback(manifest.to_dict(), manifest_path=manifest_path)
        write_report(store, report, text)
        manifest.save(complete=True)
        mark.unlink(missing_ok=True)
        done.sort(key=_rank)
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
            self.force,
        )

    # one step

    def _base(self, action: Action) -> dict[str, Any]:
        return {
            "file": action.path,
            "id": None,
            "rule": "rollback",
            "unexplained": False,
            "source": "rollback",
        }

    def _skip(self, manifest: Manifest, action: Action) -> Action:
        """List a file the rollback leaves as it is, with why."""
        kind = "unreadable" if action.action == "unreadable" else (
            "changed" if action.forcible else "name"
        )
        manifest.refuse(
            {
                **self._base(action),
                "operation": "rewrite",
                "reason": f"put back as before run {self.target.run_id}",
                "refusedBecause": action.detail,
                "conflict": kind,
            }
        )
        return action

    def _apply(self, manifest: Manifest, action: Action) -> Action | str | None:
        """Do one step; returns what was done (a conflict found now, too), None or `damaged`."""
        if action.action in _SKIPPED:
            return self._skip(manifest, action)
        path = self.folder.root / action.path
        with write_lock(self.folder.root, self.folder.state_dir) as lock:
            try:
                seen = read_checked(self.folder, path)
            except REFUSED as exc:
                left = Action(action.path, "unreadable", f"{exc}; left as it is")
                return self._skip(manifest, left)
            if _sha(seen) != action.found:
                return self._skip(manifest, _changed_meanwhile(action))
            if action.live is not None and not self._is_live(action.live):
                return None  # the memory was not put back: its archived copy stays archived
            if action.source is not None:
                return self._return(manifest, action, path, lock)
            if action.live is None and seen.raw is not None:
                self._keep_before(action.path, seen)
            try:
                if action.action in ("archive", "set-aside"):
                    self._move_aside(manifest, action, path, seen, lock)
                elif self._put_back(manifest, action, path, seen, lock) == "damaged":
                    return "damaged"
            except FileChanged:
                return self._skip(manifest, _changed_meanwhile(action))
        for old, new in action.renames:
            self._rename_stats(old, new)
        return action

    def _keep_before(self, rel: str, seen: Seen) -> None:
        """A save made after the protective snapshot was taken (and forced over, or set
        aside) is what that snapshot keeps of `rel`: undoing this rollback brings it back."""
        protective = self.protective
        if protective is None:
            return
        entry = protective.files.get(rel)
        if seen.raw is not None and entry is not None and entry.sha256 != _sha(seen):
            self.protective = keep_before(protective, rel, seen.raw, seen.mode)

    def _put_back(
        self, manifest: Manifest, action: Action, path: Path, seen: Seen, lock: WriteLock
    ) -> str | None:
        want = self.snapshot.files[action.path]
        try:
            data = self.snapshot.read(action.path)
        except DreamError as exc:
            manifest.refuse(
                {
                    **self._base(action),
                    "operation": "rewrite",
                    "reason": "put back",
                    "refusedBecause": str(exc),
                    "conflict": "damaged",
                }
            )
            return "damaged"
        reason = f"put back as it was before run {self.target.run_id}"
        if action.detail:
            reason += f" ({action.detail})"
        entry = manifest.add_change(
            {
                **self._base(action),
                "operation": "create" if seen.raw is None else "rewrite",
                "state": "pending",
                "before": _state(action.path, seen),
                "reason": reason,
            }
        )
        make_dirs(path.parent, root=self.folder.root)
        self.folder.check_contained(path)
        lock.count()  # before the write: a process killed after it has counted it
        try:
            # Only over the bytes just read (a new file only where none is): an editor's
            # save in between is refused here, never overwritten.
            commit(path, data, seen, mode=want.mode, limit=MAX_FILE_BYTES)
        except FileChanged:
            manifest.drop_change(entry)
            raise
        manifest.mark_applied(entry, _state(action.path, Seen(data)))
        return None

    def _move_aside(
        self, manifest: Manifest, action: Action, path: Path, seen: Seen, lock: WriteLock
    ) -> None:
        root = self.folder.root
        archived_copy = action.live is not None
        private = action.action == "set-aside"
        if archived_copy:
            relative = action.path.split("/", 1)[1]
            destination = self.paths.run_dir(self.rollback_id) / ARCHIVED_ASIDE / relative
            reason = action.detail
        elif private:
            destination = self.paths.run_dir(self.rollback_id) / Path(action.path).name
            reason = f"did not exist before run {self.target.run_id}"
        else:
            destination = self.folder.archive_dir / action.path
            reason = f"did not exist before run {self.target.run_id}"
        before = _state(action.path, seen)
        entry = manifest.add_change(
            {
                **self._base(action),
                "operation": "archive",
                "state": "pending",
                "before": before,
                "reason": reason,
                **({"liveAgain": action.live, "aside": str(destination)} if archived_copy else {}),
            }
        )
        lock.count()  # before the move: a process killed after it has counted it
        try:
            moved = self._move(path, destination, seen, private=private)
        except FileChanged:
            manifest.drop_change(entry)
            raise
        shown = str(moved) if private else os.path.relpath(moved, root).replace(os.sep, "/")
        manifest.mark_applied(entry, {**(before or {}), "file": shown})
        if not private:
            old, new = self.folder.id_for(path), self.folder.archived_id_for(moved)
            if old and new:
                self._rename_stats(old, new)

    def _return(
        self, manifest: Manifest, action: Action, path: Path, lock: WriteLock
    ) -> Action | None:
        """Put an archived copy back into archive/, once its memory is no longer live."""
        assert action.source is not None and action.gone is not None
        memory = self.folder.root / action.gone
        if os.path.lexists(memory):
            return None  # the memory was not set aside: its copy stays where it is
        try:
            seen = read_file(action.source, limit=MAX_FILE_BYTES)
        except (OSError, InvalidMemory):
            return None
        entry = manifest.add_change(
            {
                **self._base(action),
                "operation": "create",
                "state": "pending",
                "before": None,
                "reason": action.detail,
            }
        )
        lock.count()  # before the move: a process killed after it has counted it
        try:
            moved = self._move(action.source, path, seen, private=False)
        except FileChanged:
            manifest.drop_change(entry)
            raise
        os.chmod(moved, file_mode(self.folder.root))  # set aside, it was private
        shown = os.path.relpath(moved, self.folder.root).replace(os.sep, "/")
        manifest.mark_applied(entry, _state(shown, seen))
        old, new = self.folder.id_for(memory), self.folder.archived_id_for(moved)
        if old and new:
            self._rename_stats(old, new)
        return action

    def _move(self, path: Path, destination: Path, seen: Seen, *, private: bool) -> Path:
        """Move the file read as `seen` to `destination` or the next free name; never replaces."""
        if private:
            make_private_dirs(destination.parent)
        else:
            make_dirs(destination.parent, root=self.folder.root)
            self.folder.check_contained(destination)  # archive/ may be a link out
        if not _unchanged(path, seen):
            raise FileChanged(f"{path.name}: changed on disk since it was read", path=path)
        try:
            moved = move(path, destination)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # The state folder is on another file system: a copy that replaces nothing,
            # then the original goes, if it is still what was read.
            moved = free_name(destination)
            create(moved, seen.raw or b"", mode=0o600)
            if not _unchanged(path, seen):
                raise FileChanged(
                    f"{path.name}: changed on disk while it was copied", path=path
                ) from None
            os.unlink(path)
        if private:
            os.chmod(moved, 0o600)  # the state folder is private, whatever the file was
        return moved

    def _is_live(self, rel: str) -> bool:
        """Whether the memory at `rel` is as the rollback point has it."""
        want = self.snapshot.files.get(rel)
        try:
            seen = read_checked(self.folder, self.folder.root / rel)
        except REFUSED:
            return False
        return want is not None and _sha(seen) == want.sha256

    def _rename_stats(self, old: str, new: str) -> None:
        try:
            self.store.stats.rename(old, new)
        except OSError:
            pass  # counts are a ranking hint: a rollback does not stop for them

    # the whole

    def _regenerate_index(self, manifest: Manifest) -> None:
        path = self.folder.index_file
        before = file_state(self.folder, INDEX_FILE, path)
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
                "reason": "regenerated: some files were skipped, so the old "
                "MEMORY.md would not match the memories",
            }
        )
        self.store.regenerate_index()
        after = file_state(self.folder, INDEX_FILE, path)
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
                "force": self.force,
                "at": stamp(self.moment),
                "restored": sum(1 for a in done if a.action in ("restore", "recreate")),
                "archived": sum(1 for a in done if a.action in ("archive", "set-aside")),
                "conflicts": sum(1 for a in done if a.action == "conflict"),
                "changedSinceRun": sum(1 for a in done if a.forcible),
                "unreadable": sum(1 for a in done if a.action == "unreadable"),
                "protectiveSnapshot": self.rollback_id,
            }
        )
        atomic_write(
            log, text_bytes(json.dumps(entries, ensure_ascii=False, indent=1) + "\n")
        )


def _changed_meanwhile(action: Action) -> Action:
    return Action(
        action.path, "conflict", "changed on disk during the rollback; not overwritten"
    )


def _unchanged(path: Path, seen: Seen) -> bool:
    try:
        return identity(os.lstat(path)) == seen.identity
    except OSError:
        return False


def _state(rel: str, seen: Seen) -> dict[str, Any] | None:
    if seen.raw is None:
        return None
    return {"file": rel, "bytes": len(seen.raw), "sha256": sha256_bytes(seen.raw)}
