"""A cold build: many memories into one packed index, in a fraction of an `Index`'s memory.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate, filterfalse, repeat
from operator import add
from typing import BinaryIO

from ..memory.value import Memory
from .packed import Columns, Packed
from .scoring import FIELD_WEIGHTS, FIELDS, Scoring, field_counts, snap_average, weigh


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection inside: for work that makes millions of objects, none garbage.

    Each generation-0 collection would also walk the older generations now and
    then, which for a build of 100,000 memories costs whole seconds.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()

# Memories per chunk of a build's term counts (freed chunk after chunk as they are weighed).
_CHUNK = 1024


class Builder:
    """A cold build of many memories into `Packed`, in a fraction of an `Index`'s memory.

    An index builds postings as two small arrays per term, some 300 bytes of
    Python objects a term before its first posting: for 100,000 memories
    (2.4 million terms, 31 million postings) that, the term counts of every
    memory held until the averages are known and the memories themselves came
    to 3 GB. Here memories are `add`ed one at a time (in id order, each id
    once: their numbers) and dropped by the caller; each keeps only its term
    numbers and counts, field after field, in compact chunks (parked in a
    temporary file, `spill`, until they are weighed). `finish` takes
    the averages, weighs each memory with the arithmetic of `Index` (`weigh`)
    and places its postings straight into one array of slots and one of
    weights (a counting sort: each term's count is known from the first
    pass), freeing the chunks as it goes. The weights are exactly an
    `Index`'s, and `Index.export` of the same memories gives the same terms
    in the same order.
    """

    def __init__(self, scoring: Scoring | None = None, *, spill: BinaryIO | None = None) -> None:
        self.scoring = scoring or Scoring()
        # Where full chunks wait for `finish` (a temporary file), instead of in memory.
        self._spill = spill
        self._parked: list[tuple[int, int, str]] = []  # per chunk spilled: where, size, code
        self._term_numbers: dict[str, int] = {}
        self._counts = array("I")  # per term: how many memories hold it
        # Per memory: id, trust, updated, category, project (the columns; see `finish`).
        self._rows: list[tuple[str, float, str | None, str | None, str | None]] = []
        self._archived: list[bool] = []
        self._lengths = array("I")
        self._length_sums = [0] * len(FIELDS)
        self._max_boost = 1.2
        # Chunks of _CHUNK memories: term numbers, their counts, and per memory and field
        # where its terms end (in the chunk).
        self._chunks: list[tuple[array, array, array] | None] = []
        weights = self.scoring.field_weights
        self._weighed = [bool(weights.get(name)) for name in FIELDS]

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, memory: Memory) -> None:
        """Count one more memory's terms (after every memory of a lower id)."""
        if len(self._rows) % _CHUNK == 0:
            self._park()
            self._chunks.append((array("i"), array("H"), array("I")))
        chunk = self._chunks[-1]
        assert chunk is not None
        numbers, counts, ends = chunk
        known = self._term_numbers
        held = self._counts
        field_terms, lengths = field_counts(memory, self.scoring.pair_weight)
        first = len(numbers)
        for weighed, counted, length in zip(self._weighed, field_terms, lengths, strict=True):
            if weighed and length and counted:
                new = list(filterfalse(known.__contains__, counted))
                if new:
                    known.update(zip(new, range(len(known), len(known) + len(new)), strict=True))
                    held.extend(repeat(0, len(new)))
                numbers.extend(map(known.__getitem__, counted))
                at = len(counts)
                try:
                    counts.extend(counted.values())
                except OverflowError:  # a count past 65,535: this chunk's counts take 4 bytes
                    del counts[at:]
                    counts = array("I", counts)
                    counts.extend(counted.values())
                    chunk = self._chunks[-1] = (numbers, counts, ends)
            ends.append(len(numbers))
        for number in set(numbers[first:]):
            held[number] += 1
        trust = memory.trust
        self._rows.append((memory.id, trust, memory.updated, memory.category, memory.project))
        self._archived.append(bool(memory.archived))
        self._lengths.extend(lengths)
        self._length_sums = list(map(add, self._length_sums, lengths))
        self._max_boost = max(self._max_boost, 0.8 + 0.4 * trust)

    def _park(self) -> None:
        """Move the last chunk's term numbers and counts to the spill file, if there is one."""
        spill = self._spill
        if spill is None or len(self._parked) >= len(self._chunks):
            return
        numbers, counts, ends = self._chunks[-1]  # type: ignore[misc]
        spill.seek(0, 2)
        self._parked.append((spill.tell(), len(numbers), counts.typecode))
        spill.write(numbers)
        spill.write(counts)
        self._chunks[-1] = (array("i"), array(counts.typecode), ends)

    def _chunk(self, at: int) -> tuple[array, array, array]:
        """Chunk `at`, read back from the spill file if it was parked there; then freed."""
        chunk = self._chunks[at]
        assert chunk is not None
        self._chunks[at] = None
        if at >= len(self._parked):
            return chunk
        assert self._spill is not None
        where, size, code = self._parked[at]
        self._spill.seek(where)
        numbers, counts = array("i"), array(code)
        numbers.frombytes(self._spill.read(size * numbers.itemsize))
        counts.frombytes(self._spill.read(size * counts.itemsize))
        return numbers, counts, chunk[2]

    def finish(self) -> Packed:
        """Weigh every memory and place its postings; the builder is spent after."""
        self._park()
        total = len(self._rows)
        sums = dict(zip(FIELDS, self._length_sums, strict=True))
        averages = {name: snap_average(sums[name], total) for name in FIELD_WEIGHTS}
        terms = list(self._term_numbers)
        self._term_numbers = {}
        counts, self._counts = self._counts, array("I")
        starts = array("q", accumulate(counts, initial=0))
        del counts
        size = starts[-1]
        slots = array("i", [0]) * size
        weights = array("f", [0.0]) * size
        cursor = array("q", starts)
        width = len(FIELDS)
        scoring, lengths = self.scoring, self._lengths
        number = 0
        for at in range(len(self._chunks)):
            numbers, held, ends = self._chunk(at)  # freed as it goes
            begin = 0
            for row in range(len(ends) // width):
                fields = []
                for end in ends[row * width : (row + 1) * width]:
                    fields.append(dict(zip(numbers[begin:end], held[begin:end], strict=True)))
                    begin = end
                own = lengths[number * width : (number + 1) * width]
                for term, value in weigh(fields, own, scoring, averages).items():
                    place = cursor[term]
                    slots[place] = number
                    weights[place] = value
                    cursor[term] = place + 1
                number += 1
            del numbers, held, ends
        self._chunks = []
        rows = self._rows
        columns = Columns(
            ids=[row[0] for row in rows],
            trusts=[row[1] for row in rows],
            updated=[row[2] for row in rows],
            archived=self._archived,
            categories=[row[3] for row in rows],
            projects=[row[4] for row in rows],
            averages=averages,
            length_sums=sums,
            max_boost=self._max_boost,
        )
        return Packed(columns, lengths, terms, starts, slots, weights)
