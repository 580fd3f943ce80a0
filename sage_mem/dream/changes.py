"""The one door through which a run changes the memory folder, so that the manifest sees everything.

Rules (and the optional model pass) never call the store's write or archive
themselves: they ask an `Applier`, which

- in `report` mode records the change as `proposed`, touches nothing, and
  hands back the memory as the change would leave it (`proposed`), so that the
  rules after it decide as they would in a rewrite run: a report shows exactly
  what a rewrite does;
- in `rewrite` mode journals it as `pending`, makes it through
  `MemoryStore.write` / `MemoryStore.archive` (atomic, with the sha256 the rule
  read as `expected_sha256`, so an edit made meanwhile is refused, not
  overwritten, and with the memory's own `updated` as the stamp: a run's edit
  keeps the memory's age), then records the bytes and sha256 before and after;
- refuses, and lists in the manifest's `refused` section, a change to a
  `locked: true` memory, an archive without a reason, or anything the store
  refuses. A write without a reason is applied and marked `unexplained`.

There is no delete: archiving moves a file into `archive/`.

Every read of the folder by autodream (here, the snapshots, the rollback, the
runner) goes through `read_checked` / `file_state`: the folder's one checked
read (`disk.folder.read_memory`), which never follows a link out of the folder, never
waits on a FIFO and never reads past the size cap; what it refuses is reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ..disk.folder import MemoryFolder, read_memory
from ..disk.safe_io import Seen
from ..errors import InvalidId, InvalidMemory, SageMemError
from ..memory.fields import FIELDS, new_file_meta, validated
from ..memory.file_format import sha256_bytes
from ..memory.value import Memory, memory_from_meta
from ..store import MemoryStore, new_memory_bytes
from .manifest import Manifest

T = TypeVar("T")
Keep = Callable[[str, str, Callable[[], bool]], None]

MODES = ("report", "rewrite")
REFUSED = (InvalidId, InvalidMemory)
"""What the checked read raises for a file it will not read: outside the folder, no regular
file (a FIFO, a device, a folder), too big, no permission."""


class Applier:
    """Makes (or, in report mode, proposes) changes and records each one in the manifest."""

    def __init__(
        self, store: MemoryStore, manifest: Manifest, *, mode: str, source: str = "rules",
        keep: Keep | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        self.keep = keep
        """Called with (file, sha256, made by this run?) before each change in a rewrite run:
        the rollback point keeps those bytes when they are a save made since it was taken."""
        self.store = store
        self.manifest = manifest
        self.mode = mode
        self.source = source
        self.archived: dict[str, str | None] = {}
        """Ids archived (report mode: proposed for it) in this run -> their successor."""
        self.proposed: dict[str, Memory] = {}
        """Report mode: each memory as the changes proposed so far would leave it, so that
        the rules after see what they would see in a rewrite run (one code path)."""

    @property
    def writes(self) -> bool:
        return self.mode == "rewrite"

    # the three operations

    def rewrite(
        self,
        memory: Memory,
        *,
        rule: str,
        reason: str | None,
        stamp: Any = None,
        **fields: Any,
    ) -> Memory | None:
        """Change fields of an existing memory (store.write keywords); None when not done.

        The memory keeps its age: `updated` says when the fact was said, and tidying does
        not say it again (DESIGN §7.3a), whichever rule or the model pass writes. `stamp`
        sets another (a merge: the newest `updated` of the memories it joins).
        """
        # (typed Any: callers spread their **fields here, as the store's keywords)
        stamp = (memory.updated or "") if not isinstance(stamp, str) else stamp
        rel = self._rel(memory.id)
        base = self._entry("rewrite", memory.id, rel, rule, reason, fields=sorted(fields))
        if memory.locked:
            self._refuse(base, "the memory is locked (locked: true)")
            return None
        if not self.writes:
            proposed = _as_written(memory, {**fields, "updated": stamp or None})
            if proposed == memory:
                return memory
            self._add_proposed(base, rel, memory)
            self.proposed[memory.id] = proposed
            return proposed
        done = self._apply(base, rel, memory, lambda: self.store.write(
            memory.id, expected_sha256=memory.sha256, stamp=stamp, **fields
        ))
        if done is None:
            return None
        entry, before, updated = done
        after = self._state(rel, memory.path)
        if after == before:
            self.manifest.drop_change(entry)
            return updated
        self.manifest.mark_applied(entry, after)
        return updated

    def _add_proposed(self, base: dict[str, Any], rel: str, memory: Memory) -> None:
        """A report run's change to `memory`, listed as proposed (nothing is written)."""
        self.manifest.add_change(
            {**base, "state": "proposed", "before": self._state(rel, memory.path)}
        )

    def _apply(self, base: dict[str, Any], rel: str, memory: Memory,
               change: Callable[[], T]) -> tuple[dict[str, Any], dict[str, Any], T] | None:
        """`change` made to `memory`, listed as pending first: its manifest entry, the file's
        state before it and what `change` returned. None, with the refusal in the manifest,
        when the file changed since the rule read it or the store refused the change (each
        write passes the sha256 the rule read: an edit saved since this check is refused)."""
        before = self._state(rel, memory.path)
        if before is None or before.get("sha256") != memory.sha256:
            self._refuse(base, _changed_since_read(before))
            return None
        self._keep_before(rel, memory)
        entry = self.manifest.add_change({**base, "state": "pending", "before": before})
        try:
            return entry, before, change()
        except SageMemError as exc:
            self.manifest.drop_change(entry, {**base, "refusedBecause": str(exc)})
            return None

    def _keep_before(self, rel: str, memory: Memory) -> None:
        """Make the bytes about to be changed the rollback point's copy of `rel`, when they are
        a save made after the rollback point was taken (not the run's own earlier change):
        a rollback then undoes the run, never that save (`snapshots.BeforeKeeper`)."""
        if self.keep is not None:
            self.keep(rel, memory.sha256, lambda: self._left_by_run(rel) == memory.sha256)

    def _left_by_run(self, rel: str) -> str | None:
        """The sha256 this run's last change of `rel` left there (None: it has not changed it)."""
        for change in reversed(self.manifest.changes):
            if change.get("file") == rel and change.get("state") == "applied":
                return (change.get("after") or {}).get("sha256")
        return None

    def archive(
        self, memory: Memory, *, rule: str, reason: str | None, superseded_by: str | None = None
    ) -> Memory | None:
        """Move a memory into archive/ (never a delete); refused without a reason."""
        rel = self._rel(memory.id)
        base = self._entry("archive", memory.id, rel, rule, reason)
        if superseded_by:
            base["supersededBy"] = superseded_by
        if not reason or not reason.strip():
            self._refuse(base, "an archive needs a reason")
            return None
        if memory.locked:
            self._refuse(base, "the memory is locked (locked: true)")
            return None
        if memory.id in self.archived:
            return None
        if not self.writes:
            self._add_proposed(base, rel, memory)
            self.archived[memory.id] = superseded_by
            return None
        extra = {"supersededBy": superseded_by} if superseded_by else None
        done = self._apply(base, rel, memory, lambda: self.store.archive(
            memory.id, reason, extra=extra, expected_sha256=memory.sha256
        ))
        if done is None:
            return None
        entry, _, archived = done
        self.archived[memory.id] = superseded_by
        self.manifest.mark_applied(entry, self._state(self._rel_path(archived.path), archived.path))
        return archived

    def create(
        self,
        memory_id: str,
        *,
        rule: str,
        reason: str | None,
        stamps: tuple[str, str] | None = None,
        **fields: Any,
    ) -> Memory | None:
        """Write a new memory; refused when a file of that id exists already.

        `stamps` (`created`, `updated`): a memory moved to a new name stays as old as it
        was (the day its dates count from, which of two contradicting facts is newer).
        """
        path = self.store.folder.path_for(memory_id)
        canonical = self.store.folder.normalize_id(memory_id)
        rel = self._rel(canonical)
        base = self._entry("create", canonical, rel, rule, reason, fields=sorted(fields))
        if os.path.lexists(path):
            self._refuse(base, "a file of that name exists already")
            return None
        if not self.writes:
            self.manifest.add_change({**base, "state": "proposed", "before": None})
            proposed = _new_memory(canonical, path, fields, stamps)
            self.proposed[canonical] = proposed
            return proposed
        entry = self.manifest.add_change({**base, "state": "pending", "before": None})
        try:
            if stamps:
                self.store.folder.check_new_id(canonical)
                values = {key: value for key, value in fields.items() if key != "body"}
                data = new_memory_bytes(
                    values, str(fields.get("body", "")), created=stamps[0], updated=stamps[1]
                )
                created = self.store.create_file(canonical, data)
            else:
                created = self.store.write(canonical, expected_sha256="", **fields)
        except SageMemError as exc:
            self.manifest.drop_change(entry, {**base, "refusedBecause": str(exc)})
            return None
        self.manifest.mark_applied(entry, self._state(rel, path))
        return created

    # what could not be done, and what a person should know

    def refuse(
        self, memory_id: str | None, *, operation: str, rule: str, reason: str, why: str
    ) -> None:
        """List a change (or a call naming no memory, memory_id None) as refused."""
        rel = self._rel(memory_id) if memory_id else None
        self._refuse(self._entry(operation, memory_id, rel, rule, reason), why)

    def note(self, memory_id: str | None, *, rule: str, message: str) -> None:
        """Something for a person to look at that no rule can fix (a broken link, unclear dates)."""
        entry: dict[str, Any] = {"rule": rule, "message": message, "source": self.source}
        if memory_id is not None:
            entry["id"] = memory_id
            entry["file"] = self._rel(memory_id)
        self.manifest.note(entry)

    # internals

    def _entry(
        self,
        operation: str,
        memory_id: str | None,
        rel: str | None,
        rule: str,
        reason: str | None,
        **extra: Any,
    ) -> dict[str, Any]:
        text = " ".join((reason or "").split())
        return {
            "file": rel,
            "id": memory_id,
            "operation": operation,
            "rule": rule,
            "reason": text or "unexplained",
            "unexplained": not text,
            "source": self.source,
            **extra,
        }

    def _refuse(self, base: Mapping[str, Any], why: str) -> None:
        self.manifest.refuse({**base, "refusedBecause": why})

    def _rel(self, memory_id: str) -> str:
        return memory_id + ".md"

    def _state(self, rel: str, path: Path) -> dict[str, Any] | None:
        return file_state(self.store.folder, rel, path)

    def _rel_path(self, path: Path) -> str:
        return os.path.relpath(path, self.store.folder.root).replace(os.sep, "/")


_LIST_FIELDS = frozenset(("aliases", "tags", "supersedes"))


def _as_written(memory: Memory, fields: Mapping[str, Any]) -> Memory:
    """`memory` with `fields` (store.write keywords) as a rewrite would set them."""
    values: dict[str, Any] = {}
    for key, value in fields.items():
        if value is None or not hasattr(memory, key):
            continue
        values[key] = tuple(value) if key in _LIST_FIELDS else value
    return replace(memory, **values) if values else memory


def _new_memory(
    memory_id: str, path: Path, fields: Mapping[str, Any], stamps: tuple[str, str] | None
) -> Memory:
    """A memory as `create` would write it, for a report run's later rules."""
    values = validated({f.name: fields[f.name] for f in FIELDS if f.name in fields})
    created, updated = stamps or ("", "")
    meta = new_file_meta(values, created=created, updated=updated)
    meta = {key: value for key, value in meta.items() if value != ""}
    return memory_from_meta(memory_id, path, meta, "\n" + str(fields.get("body", "")))


def _changed_since_read(state: dict[str, Any] | None) -> str:
    if state is not None and "unreadable" in state:
        return f"the file cannot be read now: {state['unreadable']}"
    return "the file changed on disk since the run read it"


def read_checked(folder: MemoryFolder, path: Path) -> Seen:
    """The folder's one checked read (`disk.folder.read_memory`), a missing file as `Seen.absent()`.

    Raises one of REFUSED for a file it will not read; it never follows a link out of
    the folder, never waits on a FIFO and never reads past the size cap.
    """
    try:
        return read_memory(folder, path)
    except (FileNotFoundError, NotADirectoryError):
        return Seen.absent()


def file_state(folder: MemoryFolder, rel: str, path: Path) -> dict[str, Any] | None:
    """`file`, `bytes` and `sha256` of a file as the manifest records it; None when absent.

    A file the checked read refuses is recorded with why (`unreadable`), never read.
    """
    try:
        seen = read_checked(folder, path)
    except REFUSED as exc:
        return {"file": rel, "unreadable": str(exc)}
    if seen.raw is None:
        return None
    return {"file": rel, "bytes": len(seen.raw), "sha256": sha256_bytes(seen.raw)}
