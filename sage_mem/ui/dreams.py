"""The dream runs: the list, one run with its report and each change as a diff, rollback, dream now.

`sage_mem.dream` is imported inside each call, so the page still serves the
rest when autodream cannot load. A change's diff needs the file's bytes
before and after the run; the manifest keeps only their sha256, so the bytes
are looked for where they can be: the file as it is now, then the rollback
points (the run's own first; later runs' and rollbacks' snapshots hold what
this run wrote). A version found nowhere is said to be gone, not guessed.
Files of the memory folder (the present version, the report) are read only
through the folder's one checked read: a link out of the folder, a FIFO or a
device is never followed, read or waited on.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..disk.folder import MemoryFolder, read_memory
from ..errors import DreamError, InvalidMemory, SageMemError
from ..memory.file_format import sha256_bytes
from ..store import MemoryStore
from .api import json_body, store_of
from .responses import JSONResponse

if TYPE_CHECKING:
    from .run_lines import RunLines

MAX_DIFF_LINES = 600
MAX_DIFFS = 200
CONTEXT_LINES = 3
CHANGES_PAGE = 50  # changes (with their diffs) per page of a run; the page asks for more


@functools.cache
def _run_lines() -> RunLines:
    """The page's one record of what its list of runs read (imports autodream when asked)."""
    from .run_lines import RunLines

    return RunLines()


def runs_data(store: MemoryStore) -> dict[str, Any]:
    runs = [run.to_dict() for run in reversed(_run_lines().runs(store))]
    return {"runs": runs, "total": len(runs)}


async def runs(request: Request) -> JSONResponse:
    return JSONResponse(await run_in_threadpool(runs_data, store_of(request)))


class _Versions:
    """Finds a file's bytes by sha256: in the folder now, then in the rollback points."""

    def __init__(self, store: MemoryStore, first: str) -> None:
        from ..dream.paths import DreamPaths
        from ..dream.snapshots import load_snapshot

        self.folder = store.folder
        paths = DreamPaths(store.folder)
        try:
            names = sorted(os.listdir(paths.snapshots_dir))
        except OSError:
            names = []
        order = ([first] if first in names else []) + [n for n in names if n != first]
        self._load = lambda name: load_snapshot(paths, name)
        self._order = order
        self._loaded: dict[str, Any] = {}
        self._runs_dir = paths.runs_dir
        self._aside: dict[str, Path] | None = None

    def _set_aside(self) -> dict[str, Path]:
        """sha256 -> a copy a rollback set aside in its own folder (an archived copy, MEMORY.md)."""
        if self._aside is None:
            self._aside = {}
            try:
                runs = sorted(os.listdir(self._runs_dir))
            except OSError:
                runs = []
            for name in runs:
                base = self._runs_dir / name
                candidates = [base / "MEMORY.md"]
                archived = base / "archived"
                if archived.is_dir():
                    candidates += [p for p in archived.rglob("*.md") if p.is_file()]
                for path in candidates:
                    data = _read_private(path)
                    if data is not None:
                        self._aside.setdefault(sha256_bytes(data), path)
        return self._aside

    def find(self, rels: Iterable[str | None], sha: str | None) -> bytes | None:
        if not sha:
            return None
        present = [rel for rel in rels if rel]
        for rel in present:
            data = self._read_current(rel)
            if data is not None and sha256_bytes(data) == sha:
                return data
        for name in self._order:
            if name not in self._loaded:
                self._loaded[name] = self._load(name)
            snapshot = self._loaded[name]
            if snapshot is None:
                continue
            for rel in present:
                entry = snapshot.files.get(rel)
                if entry is not None and entry.sha256 == sha:
                    try:
                        return snapshot.read(rel)
                    except Exception:  # noqa: BLE001 - a damaged copy is just not found
                        continue
        aside = self._set_aside().get(sha)
        if aside is not None:
            data = _read_private(aside)
            if data is not None and sha256_bytes(data) == sha:
                return data
        return None

    def _read_current(self, rel: str) -> bytes | None:
        return _read_checked(self.folder, self.folder.root / rel)


def _read_checked(folder: MemoryFolder, path: Path) -> bytes | None:
    """A file of the memory folder through its one checked read; None when it cannot be had."""
    try:
        return read_memory(folder, path).raw
    except (OSError, SageMemError):
        return None


def _read_private(path: Path) -> bytes | None:
    """A file of the state folder (a rollback's own folder), through the checked read."""
    from ..disk.safe_io import read_file
    from ..memory.value import MAX_FILE_BYTES

    try:
        return read_file(path, limit=MAX_FILE_BYTES).raw
    except (OSError, SageMemError):
        return None


def diff_lines(before: bytes | None, after: bytes | None) -> list[list[str]]:
    """A unified diff as [kind, text] pairs: kind is `@`, ` `, `-` or `+`."""
    old = (before or b"").decode("utf-8", "replace").replace("\r\n", "\n").split("\n")
    new = (after or b"").decode("utf-8", "replace").replace("\r\n", "\n").split("\n")
    if before is None:
        old = []
    if after is None:
        new = []
    out: list[list[str]] = []
    for line in difflib.unified_diff(old, new, n=CONTEXT_LINES, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        kind = "@" if line.startswith("@@") else line[:1] or " "
        out.append([kind, line if kind == "@" else line[1:]])
        if len(out) >= MAX_DIFF_LINES:
            out.append(["@", f"… cut at {MAX_DIFF_LINES} lines"])
            break
    return out


def _with_diff(
    change: Mapping[str, Any], versions: _Versions, count: int, kept: bool = False
) -> dict[str, Any]:
    entry = dict(change)
    before = change.get("before") if isinstance(change.get("before"), Mapping) else None
    after = change.get("after") if isinstance(change.get("after"), Mapping) else None
    state = change.get("state")
    if state == "proposed":
        entry["diffNote"] = "proposed by a report run: nothing was changed"
        entry["diff"] = None
        return entry
    if count >= MAX_DIFFS:
        entry["diffNote"] = f"diffs are shown for the first {MAX_DIFFS} changes"
        entry["diff"] = None
        return entry
    rel = change.get("file")
    old = versions.find([before.get("file") if before else None, rel],
                        before.get("sha256") if before else None)
    new = versions.find([after.get("file") if after else None, rel],
                        after.get("sha256") if after else None)
    missing = []
    if before is not None and old is None:
        missing.append("before")
    if after is not None and new is None:
        missing.append("after")
    if missing:
        # Say why only as far as it is known: a rollback point that is still there was not
        # rotated out; the version was changed since and no copy of it is kept.
        why = ("changed since, and no rollback point holds that version" if kept
               else "changed since, and its rollback point was rotated out")
        entry["diffNote"] = f"the version {' and '.join(missing)} the run is no longer kept ({why})"
        entry["diff"] = None
        return entry
    entry["diff"] = diff_lines(old, new)
    return entry


def change_kind(change: Mapping[str, Any]) -> str:
    """What kind of change it is, as the report groups them: the rule that made it."""
    return str(change.get("rule") or change.get("operation") or "other")


def run_detail(
    store: MemoryStore, run_id: str, *, offset: int = 0, limit: int = CHANGES_PAGE,
    kind: str | None = None,
) -> dict[str, Any]:
    """One run: its manifest, report and rollback, and one page of its changes (of one kind,
    or all) with their diffs; `changesTotal` counts that kind, `kinds` every kind of the run.
    Only the page's diffs are made: a run of thousands of changes costs one page."""
    from ..dream.manifest import Manifest
    from ..dream.paths import DreamPaths
    from ..dream.report import rule_title
    from ..dream.runner import mark_interrupted
    from ..dream.snapshots import has_snapshot

    paths = DreamPaths(store.folder)
    mark_interrupted(paths)
    manifest = Manifest.load(paths, run_id)
    data = manifest.to_dict()
    report_file = paths.report_file(run_id)
    report = _read_checked(store.folder, report_file)
    report_text = None if report is None else report.decode("utf-8", "replace")
    versions = _Versions(store, run_id)
    kept = has_snapshot(paths, run_id)
    every = [c for c in data.get("changes", []) if isinstance(c, Mapping)]
    counts: dict[str, int] = {}
    for change in every:
        counts[change_kind(change)] = counts.get(change_kind(change), 0) + 1
    chosen = [c for c in every if kind is None or change_kind(c) == kind]
    offset = max(0, offset)
    changes: list[dict[str, Any]] = []
    for change in chosen[offset:offset + max(1, limit)]:
        entry = _with_diff(change, versions, len(changes), kept)
        entry["kind"] = change_kind(change)
        changes.append(entry)
    data["changes"] = changes
    reason = _why_no_rollback(data, kept)
    proposed = data.get("kind") == "dream" and data.get("mode") == "report"
    return {
        "run": data,
        "report": report_text,
        "reportPath": str(report_file),
        "rollback": {"possible": reason is None, "why": reason},
        "changesAll": len(every),
        "changesTotal": len(chosen),
        "offset": offset,
        "kind": kind,
        "kinds": [{"kind": name, "count": count,
                   "title": rule_title(name, done=not proposed)}
                  for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))],
    }


def _why_no_rollback(data: Mapping[str, Any], snapshot: bool) -> str | None:
    status = data.get("status")
    if status == "running":
        return "the run is still in progress"
    if status == "rolled-back":
        return f"already rolled back by {data.get('rolledBackBy')}"
    if data.get("kind") == "dream" and data.get("mode") == "report":
        return "a report run changes nothing, so there is nothing to undo"
    if not snapshot:
        return "its rollback point is gone (older ones are rotated out)"
    return None


async def run(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]
    params = request.query_params
    try:
        offset = int(params.get("offset", "0"))
        limit = min(500, int(params.get("limit", str(CHANGES_PAGE))))
    except ValueError:
        raise InvalidMemory("offset and limit must be numbers") from None
    kind = params.get("kind") or None
    return JSONResponse(await run_in_threadpool(
        lambda: run_detail(store_of(request), run_id, offset=offset, limit=limit, kind=kind)))


def do_rollback(
    store: MemoryStore, run_id: str, scope: str | None, dry_run: bool, force: bool = False
) -> dict[str, Any]:
    from ..dream import rollback

    return rollback(store, run_id, scope=scope, dry_run=dry_run, force=force).to_dict()


async def rollback(request: Request) -> JSONResponse:
    data = await json_body(request)
    scope = data.get("scope")  # none given: the settings' rollbackScope
    if scope not in (None, "touched", "all"):
        raise InvalidMemory("scope must be touched or all")
    dry_run = data.get("dryRun") is True
    force = data.get("force") is True  # put back files changed since the run too
    result = await run_in_threadpool(
        do_rollback, store_of(request), request.path_params["run_id"], scope, dry_run, force
    )
    if not dry_run:
        request.app.state.feed.bump("runs")
    return JSONResponse(result)


def do_dream(store: MemoryStore, mode: str, rules_only: bool = False) -> dict[str, Any]:
    """A dream run now. An agent command that cannot be started is refused before the run
    (DreamError), unless `rules_only`: then the run has no model pass."""
    from dataclasses import replace

    from ..dream import run_dream
    from ..dream.config import DreamConfig
    from ..dream.paths import DreamPaths
    from .settings import command_status

    config = DreamConfig.load(DreamPaths(store.folder).config_file)
    if rules_only:
        config = replace(config, agent_command=())
    else:
        problem = command_status(config.agent_command)["problem"]
        if problem:
            raise DreamError(f"not started: {problem}")
    return run_dream(store, mode=mode, config=config).to_dict()


async def dream(request: Request) -> JSONResponse:
    data = await json_body(request)
    mode = data.get("mode", "report")
    if mode not in ("report", "rewrite"):
        raise InvalidMemory("mode must be report or rewrite")
    rules_only = data.get("rulesOnly") is True
    result = await run_in_threadpool(do_dream, store_of(request), mode, rules_only)
    request.app.state.feed.bump("runs")
    return JSONResponse(result)
