"""The rule-based consolidator: each rule a module with `NAME` and `run(ctx)`, run in order.

Relative dates go first, while `updated` still says when the text was written
(any other rule's change moves it); near-duplicates and `supersedes:` run
before summaries and links, so that no work is spent on a memory about to be
archived and links can follow the memories archived in this run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
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
    written: dict[str, str] = field(default_factory=dict)
    """When each memory was last written as the run found it (`updated`, else `created`):
    a rule's own change moves `updated`, which must not make an old fact look new."""

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
    from . import categories, contradictions, dates, dedupe, links, summaries, supersedes

    return [
        (dates.NAME, dates.run),
        (supersedes.NAME, supersedes.run),
        (dedupe.NAME, dedupe.run),
        (contradictions.NAME, contradictions.run),
        (summaries.NAME, summaries.run),
        (categories.NAME, categories.run),
        (links.NAME, links.run),
    ]
