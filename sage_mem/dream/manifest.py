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
    def load(cls, paths: DreamPaths, run_id: str, *, journal: bool = True) -> Manifest:
        """A run's manifest with its journal folded in (`journal=False`: as last saved, for
        what the whole file says, a running run's process); RunNotFound when there is none."""
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
        if journal and not data.get("complete"):
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
        fold = JournalFold()
        if fold.read(self.paths.run_dir(self.run_id) / JOURNAL, to_end=True):
            self.take(fold)

    def take(self, fold: JournalFold) -> None:
        """The changes, refusals and notes as `fold` has them (its journal read so far)."""
        self.changes, self.refused, self.notes = (
            list(fold.changes.values()), list(fold.refused), list(fold.notes))


class JournalFold:
    """A run's journal folded: its changes by ref, its refusals and notes, read on from where
    the last read stopped (the page looks at a running run's journal every second: read
    whole each time, a run of 50,000 memories made each look cost more than a second)."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self.offset = 0
        self.changes: dict[str, dict[str, Any]] = {}
        self.refused: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []

    def read(self, path: Any, *, to_end: bool = False) -> bool:
        """Take in the lines appended since the last read; False when there is no journal
        (nothing journaled yet: the manifest as saved says it all). A last line without its
        newline is still being written and is left for the next read, unless `to_end` (the
        run is over: a killed run's last line may be cut short, and is skipped if it does
        not parse)."""
        try:
            with open(path, "rb") as file:
                if os.fstat(file.fileno()).st_size < self.offset:
                    self._start()  # not the journal read before: read it from its start
                file.seek(self.offset)
                raw = file.read()
        except FileNotFoundError:
            return False
        end = len(raw) if to_end else raw.rfind(b"\n") + 1
        for line in raw[:end].split(b"\n"):
            self._take(line)
        self.offset += end
        return True

    def _take(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return  # the last line of a killed run may be cut short
        if not isinstance(event, dict):
            return
        kind = event.pop("event", None)
        changes = self.changes
        if kind == "change" and "ref" in event:
            changes[event["ref"]] = event
        elif kind == "applied" and event.get("ref") in changes:
            changes[event["ref"]]["state"] = "applied"
            changes[event["ref"]]["after"] = event.get("after")
        elif kind == "dropped":
            ref: Any = event.get("ref")  # JSON: any value, as the keys above
            changes.pop(ref, None)
        elif kind == "refused":
            self.refused.append(event)
        elif kind == "note":
            self.notes.append(event)


def _open_private(path: Any, flags: int) -> int:
    """Open a file of the run's folder, created 0600 (a umask can only narrow that)."""
    return os.open(path, flags | os.O_CREAT, 0o600)
