"""The rule-based consolidator: each rule a module with `NAME` and `run(ctx)`, run in order.

Relative dates go first, so that the rules after see the dates written (no change a
run makes moves `updated`: `Applier.rewrite` keeps the memory's age); near-duplicates
and `supersedes:` run before summaries and links, so that no work is spent on a memory
about to be archived and links can follow the memories archived in this run.
"""

from __future__ import annotations

from collections.abc import Callable
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


def all_rules() -> list[tuple[str, Callable[[RuleContext], None]]]:
    from . import (
        categories,
        contradictions,
        dates,
        dedupe,
        links,
        stamps,
        summaries,
        supersedes,
    )

    return [
        (dates.NAME, dates.run),
        (stamps.NAME, stamps.run),
        (supersedes.NAME, supersedes.run),
        (dedupe.NAME, dedupe.run),
        (contradictions.NAME, contradictions.run),
        (summaries.NAME, summaries.run),
        (categories.NAME, categories.run),
        (links.NAME, links.run),
    ]
