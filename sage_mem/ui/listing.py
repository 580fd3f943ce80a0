"""The folder's memories as the page's views start from them: one listing a change of the
memories, shared, and which memories differ between two listings.

Each view that follows the folder (the list's order and facets, the link graph, the footer)
used to remake itself from the whole folder after every change: at 5,000 memories some 450 ms
of CPU a change, queued on two busy cores in front of the next change's list. Now the listing
of a generation (the live feed's count of changes) is made once, and each view updates what
it keeps for the memories that `differ` only, falling back to a whole remake when many did.

A memory that did not change is the same object in the next listing (the index hands out one
`Memory` a version), so telling the changed ones apart is a pass of identity checks; a
memory made again from the same file (a shared folder's, whose id is qualified on each
listing) is the same when its id, path and sha256 are.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ..memory.value import Memory


@dataclass(frozen=True)
class Listing:
    """Every memory at one generation: the live ones by id and the archived ones (`archive/…`
    ids), in no order."""

    generation: int
    live: dict[str, Memory]
    archived: dict[str, Memory]


_ID = attrgetter("id")
_ARCHIVED = attrgetter("archived")


def _list(source: Any) -> tuple[dict[str, Memory], dict[str, Memory]]:
    index = getattr(source, "index", None)
    if index is not None:
        # One pass over the index, a tenth of `store.list()`'s cost, whose filtering asks the
        # index's id table for each memory in turn; in no order (no view needs one: each sorts
        # what it shows), which spares a sort of every id after each change.
        # In C loops (map, filter): 50,000 memories after each change.
        everything = index.memories(ordered=False)
        live = dict(zip(map(_ID, everything), everything, strict=True))
        archived = {m.id: m for m in filter(_ARCHIVED, everything)}
        for memory_id in archived:
            del live[memory_id]
        return live, archived
    return ({m.id: m for m in source.list()},  # several folders (`Folders`): ids qualified
            {m.id: m for m in source.list(archived=True) if m.archived})


class Listings:
    """The listing of the newest generation asked for, made once for every view that asks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: Listing | None = None

    def get(self, source: Any, generation: int) -> Listing:
        with self._lock:
            if self._cached is not None and self._cached.generation == generation:
                return self._cached
            live, archived = _list(source)
            self._cached = Listing(generation, live, archived)
            return self._cached


def same(old: Memory, new: Memory) -> bool:
    """The same version of a memory: the same object, or made from the same file's bytes."""
    return old is new or (bool(old.sha256) and old.sha256 == new.sha256
                          and old.id == new.id and old.path == new.path)


@dataclass(frozen=True)
class Difference:
    """What differs from one listing of some memories to the next, by id."""

    added: list[str]
    removed: list[str]
    changed: list[str]

    def __len__(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)


def differ(before: Mapping[str, Memory], after: Mapping[str, Memory]) -> Difference:
    """The ids new in `after`, gone from it, and of another version in it."""
    # The identity test first, in one comprehension: at 50,000 memories after each change,
    # where a call of `same` for each was most of the time.
    get = before.get
    differing = [memory_id for memory_id, memory in after.items() if get(memory_id) is not memory]
    added: list[str] = []
    changed: list[str] = []
    for memory_id in differing:
        old = before.get(memory_id)
        if old is None:
            added.append(memory_id)
        elif not same(old, after[memory_id]):
            changed.append(memory_id)
    removed = [] if len(before) + len(added) == len(after) else [
        memory_id for memory_id in before if memory_id not in after]
    return Difference(added, removed, changed)


def many(difference: Difference, size: int) -> bool:
    """So many changed (a pull, a dream run) that remaking everything is as quick."""
    return len(difference) * 8 > max(size, 64)
