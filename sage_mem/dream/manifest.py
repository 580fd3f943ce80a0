"""The manifest of a run: every change, refusal and note, as it happens.

    <state>/autodream/runs/<runId>/manifest.json   the run as a whole (rewritten atomically)
    <state>/autodream/runs/<runId>/journal.jsonl   one line per event, appended as it happens

A change is journaled as `pending` before it touches a file and as `applied`
after, so a run killed half-way leaves a journal that says what it may have
done; `Manifest.load` folds the journal into the manifest. Appending a line per
event keeps a 10,000-memory run linear: rewriting the whole manifest after
each change would not be.

A change entry: `ref`, `file`, `id`, `operation` (create | rewrite | archive),
`rule`, `reason`, `unexplained`, `state` (proposed | pending | applied),
`before` / `after` (`file`, `bytes`, `sha256`; None for a file that is absent).
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime
from typing import Any

from ..disk.processes import own_identity
from ..disk.safe_io import atomic_write, text_bytes
from ..errors import RunNotFound
from ..memory.value import iso_datetime
from .paths import RUN_ID, DreamPaths

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
RUNNING_MARK = "running"  # beside the manifest while its process runs (see runner.mark_interrupted)


def stamp(moment: datetime) -> str:
    return iso_datetime(moment.replace(microsecond=0))


class Manifest:
    """One run's record, in memory and on disk."""

    def __init__(self, paths: DreamPaths, run_id: str, data: dict[str, Any]) -> None:
        self.paths = paths
        self.run_id = run_id
        self.data = data
        self.changes: list[dict[str, Any]] = list(data.pop("changes", []) or [])
        self.refused: list[dict[str, Any]] = list(data.pop("refused", []) or [])
        self.notes: list[dict[str, Any]] = list(data.pop("notes", []) or [])

    # creating and loading

    @classmethod
    def start(
        cls, paths: DreamPaths, run_id: str, *, kind: str, mode: str | None, now: datetime,
        **extra: Any,
    ) -> Manifest:
        paths.ensure()
        paths.run_dir(run_id).mkdir(mode=0o700, exist_ok=False)
        # The mark first: a process killed between the two must not leave a manifest
        # that says `running` without the mark by which the next look finds it dead.
        os.close(_open_private(paths.run_dir(run_id) / RUNNING_MARK, os.O_WRONLY))
        data = {
            "runId": run_id,
            "kind": kind,
            "mode": mode,
            "status": "running",
            "started": stamp(now),
            **own_identity(),
            **extra,
        }
        manifest = cls(paths, run_id, data)
        manifest.save()
        return manifest

    @classmethod
    def load(cls, paths: DreamPaths, run_id: str) -> Manifest:
        """A run's manifest with its journal folded in; RunNotFound when there is none."""
        if not RUN_ID.match(run_id or ""):
            raise RunNotFound(f"{run_id!r} is not a run id (they look like 20261129T201500Z-1a2b)")
        path = paths.run_dir(run_id) / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunNotFound(
                f"no dream run or rollback {run_id!r} (see `sage-mem runs`)"
            ) from None
        except (OSError, ValueError) as exc:
            raise RunNotFound(f"run {run_id}: manifest unreadable: {exc}", path=path) from None
        if not isinstance(data, dict):
            raise RunNotFound(f"run {run_id}: manifest is not a JSON object", path=path)
        manifest = cls(paths, run_id, data)
        if not data.get("complete"):
            manifest._fold_journal()
        return manifest

    # recording (each call is one appended journal line)

    def add_change(self, entry: dict[str, Any]) -> dict[str, Any]:
        entry = {"ref": secrets.token_hex(6), **entry}
        self.changes.append(entry)
        self._journal({"event": "change", **entry})
        return entry

    def mark_applied(self, entry: dict[str, Any], after: dict[str, Any] | None) -> None:
        entry["state"] = "applied"
        entry["after"] = after
        self._journal({"event": "applied", "ref": entry["ref"], "after": after})

    def drop_change(self, entry: dict[str, Any], refusal: dict[str, Any] | None = None) -> None:
        """Take back a pending change that did not happen (no-op, or refused by the store)."""
        self.changes = [c for c in self.changes if c["ref"] != entry["ref"]]
        self._journal({"event": "dropped", "ref": entry["ref"]})
        if refusal is not None:
            self.refuse(refusal)

    def refuse(self, entry: dict[str, Any]) -> None:
        self.refused.append(entry)
        self._journal({"event": "refused", **entry})

    def note(self, entry: dict[str, Any]) -> None:
        self.notes.append(entry)
        self._journal({"event": "note", **entry})

    # the whole

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def save(self, *, complete: bool = False) -> None:
        if complete:
            self.data["complete"] = True
        atomic_write(
            self.paths.run_dir(self.run_id) / MANIFEST,
            text_bytes(json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.data,
            "counts": self.counts(),
            "changes": self.changes,
            "refused": self.refused,
            "notes": self.notes,
        }

    def counts(self) -> dict[str, int]:
        states = [c.get("state") for c in self.changes]
        return {
            "applied": states.count("applied"),
            "proposed": states.count("proposed"),
            "pending": states.count("pending"),
            "refused": len(self.refused),
            "notes": len(self.notes),
        }

    @property
    def status(self) -> str:
        return str(self.data.get("status", "running"))

    def reload_journal(self) -> None:
        """Take in what other processes appended to the journal (the model pass's server)."""
        self._fold_journal()

    # internals

    def _journal(self, event: dict[str, Any]) -> None:
        line = text_bytes(json.dumps(event, ensure_ascii=False) + "\n")
        fd = _open_private(self.paths.run_dir(self.run_id) / JOURNAL, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def _fold_journal(self) -> None:
        try:
            raw = (self.paths.run_dir(self.run_id) / JOURNAL).read_bytes()
        except FileNotFoundError:
            return
        changes: dict[str, dict[str, Any]] = {}
        refused: list[dict[str, Any]] = []
        notes: list[dict[str, Any]] = []
        for line in raw.split(b"\n"):
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the last line of a killed run may be cut short
            if not isinstance(event, dict):
                continue
            kind = event.pop("event", None)
            if kind == "change" and "ref" in event:
                changes[event["ref"]] = event
            elif kind == "applied" and event.get("ref") in changes:
                changes[event["ref"]]["state"] = "applied"
                changes[event["ref"]]["after"] = event.get("after")
            elif kind == "dropped":
                ref: Any = event.get("ref")  # JSON: any value, as the keys above
                changes.pop(ref, None)
            elif kind == "refused":
                refused.append(event)
            elif kind == "note":
                notes.append(event)
        self.changes, self.refused, self.notes = list(changes.values()), refused, notes


def _open_private(path: Any, flags: int) -> int:
    """Open a file of the run's folder, created 0600 (a umask can only narrow that)."""
    return os.open(path, flags | os.O_CREAT, 0o600)
