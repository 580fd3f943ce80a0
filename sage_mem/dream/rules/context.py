"""What a rule is given: `RuleContext`, the folder as the run found it and the one way to change it.

Its own module so that each rule imports it without importing the package that
lists the rules (`rules/__init__`, which imports every rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from ...memory.value import Memory
from ...store import MemoryStore
from ..changes import Applier


@dataclass
class RuleContext:
    """What a rule may look at, and the one object through which it may change anything."""

    store: MemoryStore
    applier: Applier
    now: datetime
    retrievals: dict[str, int] = field(default_factory=dict)
    zone: tzinfo | None = None
    """The writers' time zone (the `timeZone` setting) for reading a UTC stamp's day; None:
    this machine's."""
    written: dict[str, str] = field(default_factory=dict)
    """When each memory was last written as the run found it (`updated`, else `created`):
    which of two facts is newer is read from here, as the run found the folder."""

    _close: list[Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.written:
            self.written = {m.id: m.updated or m.created or "" for m in self.store.list()}

    def close_pairs(self) -> list[Any]:
        """Pairs of memories close in meaning (`dream.candidates`), found once a run."""
        if self._close is None:
            from ..candidates import close_pairs

            self._close = close_pairs(self.store.folder, self.live())
        return self._close

    def live(self) -> list[Memory]:
        """Memories in service now, minus those archived (or proposed for it) in this run."""
        gone = self.applier.archived
        proposed = dict(self.applier.proposed)
        live = [proposed.pop(m.id, m) for m in self.store.list() if m.id not in gone]
        # Report mode: memories a change proposed to create, as the rules after would see them.
        live.extend(m for m in proposed.values() if m.id not in gone)
        return sorted(live, key=lambda m: m.id)
