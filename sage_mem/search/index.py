"""The in-memory index: postings over every memory's fields, kept live.

The ranking formula is `scoring.py`'s, the query path `query.py`'s (and the
exact top of the scores `ranking.py`'s); a cold build of a large folder is
`building.py`'s, and what the on-disk cache stores and gives back `packed.py`'s.

A memory has a number (its place in the index); a term's postings are two
flat arrays, memory numbers (int32, ascending) and weights (float32), about
8 bytes a posting, where Python dicts took some 80. A changed memory gets a
new number; its old one is retired (id None, factor 0).

An index loaded from the on-disk cache (`search/cache.py`) reads a term's postings
from the file when a query needs them (the base): nothing is decoded at
start, and a query reads only its own terms. A memory changed since then gets a
new number past the base and its postings go to arrays in memory; its old
number is retired, and the base postings of retired numbers are skipped
(their factor is 0) and subtracted from the document frequencies, so the
index scores exactly as a fresh build of the same folder would. Weights are
float32 in both, so a warm index and a fresh one hold the same numbers.
Its memory ids stay packed as the cache stores them (`PackedIds`): an id is
decoded for a hit or found by bisection, so a hook holds no list or dict of
every id (some 16 MB at 100,000 memories).
Thread-safe: one lock guards every read and write of the postings.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat
from operator import add, itemgetter, mul, not_
from typing import TYPE_CHECKING, TypeVar

from ..disk.bulk import gc_paused
from ..memory.value import Memory
from .packed import (
    Backing,
    BackingError,
    Columns,
    Export,
    IdsByNumber,
    NumbersById,
    PackedIds,
    Slices,
    Terms,
    as_array,
    extend_array,
)
from .query import QueryPath
from .ranking import Hit
from .scoring import (
    DATE_BOOST,
    EXACT_WEIGHT,
    FEEDBACK_WEIGHT,
    FIELD_WEIGHTS,
    FIELDS,
    PASSAGE_WEIGHT,
    SPAN_WEIGHT,
    SPELLING_WEIGHT,
    TIME_WORD_WEIGHT,
    Scoring,
    field_counts,
    snap_average,
    unique_idf,
    weigh,
)
from .tokens import PREFIX_WEIGHT

if TYPE_CHECKING:  # not imported on a hook's path
    from ..memory.catalog import Listed

# What a caller of the index meets: its answers, and the scale of their scores.
__all__ = ["Hit", "Index", "unique_idf"]

_T = TypeVar("_T")


class Index(QueryPath):
    """Postings over every memory's fields, with filters and BM25F scoring."""

    def __init__(
        self,
        *,
        half_life_days: float | None = None,
        scoring: Scoring | None = None,
        recover: Callable[[], Iterable[Memory]] | None = None,
        date_boost: float = DATE_BOOST,
        time_word_weight: float = TIME_WORD_WEIGHT,
        prefix_weight: float = PREFIX_WEIGHT,
        feedback_weight: float = FEEDBACK_WEIGHT,
        passage_weight: float = PASSAGE_WEIGHT,
        exact_weight: float = EXACT_WEIGHT,
        span_weight: float = SPAN_WEIGHT,
        spelling_weight: float = SPELLING_WEIGHT,
    ) -> None:
        self.half_life_days = half_life_days
        self.scoring = scoring or Scoring()
        # 0 reads no time words: a query's words are all its terms (benchmarks compare).
        self.date_boost = date_boost
        self.time_word_weight = time_word_weight
        # A short name's prefix term ("Deb": "deb*", `tokens.short_names`); 0 asks for none.
        self.prefix_weight = prefix_weight
        # The most telling feedback term's weight (`QueryPath._feedback`); 0 reads no feedback.
        self.feedback_weight = feedback_weight
        # A long memory's best passage against its whole (`QueryPath._best_passages`); 0: none.
        self.passage_weight = passage_weight
        # A query word written as the query writes it, in the top few (`QueryPath._exact_forms`).
        self.exact_weight = exact_weight
        # A question asking how long / how often / how old / when, in the top few (`_spans`).
        self.span_weight = span_weight
        # A misspelt query word read as the indexed word one edit away (`QueryPath._spelled`).
        self.spelling_weight = spelling_weight
        self._lock = threading.RLock()
        # Called when the backing turns out damaged: every memory, read again from the files.
        self.recover = recover
        self._reset()

    def _reset(self) -> None:
        # Per memory number (a changed memory gets a new one; the old is retired: id None).
        self._ids: list[str | None] | IdsByNumber = []
        self._trusts: list[float] = []
        self._boost = array("d")  # trust factor; 0.0 once retired
        self._shown = array("d")  # the same, but 0.0 for archived memories too
        self._updated: list[str | None] = []
        self._categories: list[str | None] = []
        self._projects: list[str | None] = []
        self._archived = bytearray()
        self._moments: dict[int, float | None] = {}
        self._lengths: dict[int, tuple[int, ...]] = {}
        # The terms of memories indexed one by one (`_add`), so replacing one again is cheap.
        self._terms: dict[int, list[str]] = {}
        # Per live id.
        self._number: dict[str, int] | NumbersById = {}
        self._memories: dict[str, Memory] = {}
        # What MEMORY.md shows of base memories not made (`listings`), by number.
        self._listed: dict[int, Listed] = {}
        # Postings held in memory (every memory's, unless loaded from the cache).
        self._postings: dict[str, tuple[array, array]] = {}
        self._tops: dict[str, float] = {}
        # An upper bound of every trust factor (recency only lowers it), for pruning.
        self._max_boost = 1.2
        self._length_sums: Counter[str] = Counter()
        self._averages: dict[str, float] = {name: 1.0 for name in FIELD_WEIGHTS}
        self._normalized_at = 0
        self._unsettled = False
        # Loaded from the cache: memories 0 .. _base_count-1 and their postings live in
        # `_backing`; `_gone` counts, per term, the base postings of retired memories.
        self._backing: Backing | None = None
        self._base_count = 0
        self._gone: Counter[str] = Counter()

    def _guarded(self, action: Callable[[], _T]) -> _T:
        """Run `action`; if the cache behind the index is damaged, rebuild (`recover`) and rerun."""
        with self._lock:
            try:
                return action()
            except BackingError:
                if self.recover is None:
                    raise
                memories = list(self.recover())
                self._reset()
                self.add_many(memories)
                return action()

    # reading

    def __len__(self) -> int:
        return len(self._number)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._number

    def get(self, memory_id: str) -> Memory | None:
        if memory_id not in self._number:
            return None
        return self._guarded(
            lambda: self._memory(memory_id) if memory_id in self._number else None
        )

    def shown_clean(self, memory: Memory, mark: int) -> bool:
        """Whether `memory` is this index's own copy of a cache record that the cache,
        judged by the credential rules `mark`, holds nothing a hook would mask in.

        Only the very object the record was read into (not a copy with a field changed),
        of a memory unchanged since the cache (a changed one has a number of its own)."""
        with self._lock:
            secrets = self._backing.secrets if self._backing is not None else None
            if secrets is None or secrets[0] != mark:
                return False
            number = self._number.get(memory.id)
            return (
                number is not None and number < self._base_count
                and self._memories.get(memory.id) is memory and not secrets[1][number]
            )

    def memories(self, *, ordered: bool = True) -> list[Memory]:
        """Every indexed memory, sorted by id; or (`ordered` False) in no order, which costs no
        sort and, once every memory was made, no lookup per id (the page's listing after each
        change: 55 ms at 50,000 memories sorted, a few unsorted)."""
        if ordered:
            return self._guarded(lambda: [self._memory(key) for key in sorted(self._number)])

        def unordered() -> list[Memory]:
            if len(self._memories) == len(self._number):  # (its keys are among the ids)
                return list(self._memories.values())
            return [self._memory(key) for key in self._number]

        return self._guarded(unordered)

    def listings(self) -> list[Listed]:
        """What MEMORY.md shows of every indexed memory, in no order: a memory already made,
        else the fields its cached record holds, kept (a `Memory` each, with its `Path`, was
        most of a write's time under the lock at 10,000 memories: 0.3 s of its 0.4)."""

        def listed() -> list[Listed]:
            if len(self._memories) == len(self._number):
                return list(self._memories.values())
            assert self._backing is not None
            made, kept, backing = self._memories, self._listed, self._backing
            found: list[Listed] = []
            for number, memory_id in enumerate(self._ids):  # by number: no look-up of each id
                if memory_id is None:  # retired
                    continue
                item: Listed | None = made.get(memory_id) or kept.get(number)
                if item is None:  # a base memory's record never changes: kept by its number
                    item = kept[number] = backing.listing(number)
                found.append(item)
            return found

        return self._guarded(listed)

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._number)

    def _memory(self, memory_id: str) -> Memory:
        memory = self._memories.get(memory_id)
        if memory is None:
            assert self._backing is not None
            memory = self._backing.memory(self._number[memory_id])
            self._memories[memory_id] = memory
        return memory

    def _lengths_of(self, number: int) -> tuple[int, ...]:
        lengths = self._lengths.get(number)
        if lengths is None:
            assert self._backing is not None
            lengths = self._backing.lengths(number)
        return lengths

    # writing

    def add_many(self, memories: Iterable[Memory]) -> None:
        """Index (or re-index) many memories; the averages are re-taken once, at the end."""
        with self._lock:
            if not self._number and self._backing is None and not self._ids:
                self._build(memories)
                return
            for memory in memories:
                self._remove(memory.id)
                self._add(memory)
            self._unsettled = True

    def put(self, memory: Memory) -> None:
        """Index one memory, replacing any earlier version with the same id."""

        def put() -> None:
            self._remove(memory.id)
            self._add(memory)
            self._unsettled = True

        self._guarded(put)

    def remove(self, memory_id: str) -> bool:
        """Forget one memory; True when it was indexed."""

        def remove() -> bool:
            found = self._remove(memory_id)
            self._unsettled = True
            return found

        return self._guarded(remove)

    def withhold(self, memory_ids: Iterable[str]) -> None:
        """Leave memories of the cache out of every answer, at no cost per term.

        Unlike `remove`, their terms still count in document frequencies and
        length averages (working those out means weighing each memory again):
        for an index that answers only until a build replaces it (a hook's,
        when many files changed since the cache). A memory not from the cache
        is removed as usual.
        """

        chosen = list(memory_ids)

        def withhold() -> None:
            for memory_id in chosen:
                number = self._number.get(memory_id)
                if number is None:
                    continue
                if number >= self._base_count:
                    self._remove(memory_id)
                    continue
                del self._number[memory_id]
                self._memories.pop(memory_id, None)
                self._ids[number] = None
                self._boost[number] = 0.0
                self._shown[number] = 0.0

        self._guarded(withhold)

    def _counts(self, memory: Memory) -> tuple[list[dict[str, int]], tuple[int, ...]]:
        """Term counts of each field (word pairs included) and field lengths, in FIELDS order."""
        return field_counts(memory, self.scoring.pair_weight)

    def _number_of(self, memory: Memory, lengths: tuple[int, ...]) -> int:
        """Give `memory` the next number and note what filters and factors need of it."""
        number = len(self._ids)
        memory_id = memory.id
        self._ids.append(memory_id)
        self._trusts.append(memory.trust)
        self._number[memory_id] = number
        self._memories[memory_id] = memory
        boost = 0.8 + 0.4 * memory.trust
        self._boost.append(boost)
        self._shown.append(0.0 if memory.archived else boost)
        self._max_boost = max(self._max_boost, boost)
        self._updated.append(memory.updated)
        self._categories.append(memory.category)
        self._projects.append(memory.project)
        self._archived.append(1 if memory.archived else 0)
        self._lengths[number] = lengths
        self._length_sums.update(dict(zip(FIELDS, lengths, strict=True)))
        return number

    def _build(self, memories: Iterable[Memory]) -> None:
        """Index memories into an empty index: lengths first (for the averages), then weights."""
        with gc_paused():
            self._build_unpaused(memories)

    def _build_unpaused(self, memories: Iterable[Memory]) -> None:
        latest = {memory.id: memory for memory in memories}
        ordered = [latest[key] for key in sorted(latest)]
        counted = []
        for memory in ordered:
            counts, lengths = self._counts(memory)
            self._number_of(memory, lengths)
            counted.append(counts)
        self._averages = self._target_averages()
        self._normalized_at = len(ordered)
        self._unsettled = False
        # Two dicts and a KeyError for a new term: half the cost of one dict of pairs.
        numbers_of: dict[str, array] = {}
        weights_of: dict[str, array] = {}
        for number, counts in enumerate(counted):
            counted[number] = None  # type: ignore[call-overload]  # freed as it goes
            for term, value in self._weigh(counts, self._lengths[number]).items():
                try:
                    numbers_of[term].append(number)
                    weights_of[term].append(value)
                except KeyError:
                    numbers_of[term] = array("i", (number,))
                    weights_of[term] = array("f", (value,))
        pairs = zip(numbers_of.values(), weights_of.values(), strict=True)
        self._postings = dict(zip(numbers_of, pairs, strict=True))

    def _add(self, memory: Memory) -> None:
        """Index one more memory (with the current averages), under a new number."""
        counts, lengths = self._counts(memory)
        number = self._number_of(memory, lengths)
        postings, tops = self._postings, self._tops
        weighted = self._weigh(counts, lengths)
        self._terms[number] = list(weighted)
        for term, value in weighted.items():
            found = postings.get(term)
            if found is None:
                found = postings[term] = (array("i"), array("f"))
            found[0].append(number)
            found[1].append(value)
            top = tops.get(term)
            if top is not None and found[1][-1] > top:
                tops[term] = found[1][-1]

    def _weigh(self, counts: list[dict[str, int]], lengths: tuple[int, ...]) -> dict[str, float]:
        """The saturated weight of each term of a memory (the same arithmetic everywhere)."""
        return weigh(counts, lengths, self.scoring, self._averages)

    def _remove(self, memory_id: str) -> bool:
        number = self._number.get(memory_id)
        if number is None:
            return False
        lengths = self._lengths_of(number)
        # The terms it was posted under: what weighing its fields gives (the averages do not
        # change which terms).
        terms = self._terms.pop(number, None)
        if terms is None:
            terms = list(self._weigh(self._counts(self._memory(memory_id))[0], lengths))
        self._length_sums.subtract(dict(zip(FIELDS, lengths, strict=True)))
        if number < self._base_count:
            # Its postings stay in the cache file: skipped (factor 0) and not counted.
            self._gone.update(terms)
        else:
            postings = self._postings
            for term in terms:
                found = postings.get(term)
                if found is None:
                    continue
                numbers, weights = found
                at = bisect_left(numbers, number)
                if at < len(numbers) and numbers[at] == number:
                    del numbers[at]
                    del weights[at]
                    if not numbers:
                        del postings[term]
                        self._tops.pop(term, None)
        del self._number[memory_id]
        self._memories.pop(memory_id, None)
        self._ids[number] = None
        self._boost[number] = 0.0
        self._shown[number] = 0.0
        self._archived[number] = 0
        self._lengths.pop(number, None)
        self._moments.pop(number, None)
        return True

    def _target_averages(self) -> dict[str, float]:
        count = len(self._number)
        return {name: snap_average(self._length_sums[name], count) for name in FIELD_WEIGHTS}

    def averages_moved(self) -> bool:
        """True when the changes since the last weighing moved a length average."""
        with self._lock:
            return self._target_averages() != self._averages

    def reweigh(self) -> None:
        """Re-weight every posting now if an average moved: the index a fresh build would give."""
        self._guarded(lambda: self._renormalize() if self.averages_moved() else None)

    def _settle(self) -> None:
        """Re-weight every posting once the number of memories drifted by a tenth.

        Between re-weighings a changed memory is weighed with the averages of
        the last one, as re-weighing every posting on each save would cost a
        large folder seconds; `reweigh` makes the index exact on demand.
        """
        if self._unsettled:
            self._unsettled = False
            count, last = len(self._number), self._normalized_at
            if abs(count - last) > max(10, last // 10) and self.averages_moved():
                self._renormalize()

    def _renormalize(self) -> None:
        """Index every memory again from scratch (this decodes the whole cache, if any)."""
        memories = [self._memory(key) for key in self._number]
        self._reset()
        self._build(memories)

    # the on-disk cache

    def export(self) -> Export:
        """The index as the on-disk cache stores it (re-weighed first if an average moved)."""
        return self._guarded(self._export)

    def _export(self) -> Export:
        if self.averages_moved():
            self._renormalize()
        numbers = [number for number, key in enumerate(self._ids) if key is not None]
        identity = len(numbers) == len(self._ids)
        renumber = array("i", [-1]) * len(self._ids)
        for slot, number in enumerate(numbers):
            renumber[number] = slot
        ids = [key for key in self._ids if key is not None]  # in `numbers` order

        def moved(found: Sequence[int]) -> Sequence[int]:
            return found if identity else array("i", map(renumber.__getitem__, found))

        def moved_held(found: array) -> array:
            return found if identity else array("i", map(renumber.__getitem__, found))

        def postings() -> Terms:
            held = self._postings
            if self._backing is None:
                # In bulk, in C: a fresh build's cache is written right after it.
                all_found = list(map(moved, map(itemgetter(0), held.values())))
                all_weights = list(map(itemgetter(1), held.values()))
                return list(held), all_found, all_weights, list(map(max, all_weights))
            # Every term's postings end to end in two arrays, each term a slice of them: an
            # array or a memoryview a term would take some 400 bytes of Python objects for
            # each of the millions of terms of a large folder (2 GB to rewrite 100,000).
            out_terms: list[str] = []
            out_tops: list[float] = []
            slots, weighed, bounds = array("i"), array("f"), array("q", [0])
            done = set()
            for term, found, weights, top in self._backing.terms():
                if self._gone.get(term):
                    # Some of these memories were retired: keep the others' postings.
                    kept = list(map(renumber.__getitem__, found))
                    mask = list(map((-1).__lt__, kept))
                    found = array("i", compress(kept, mask))
                    weights = array("f", compress(weights, mask))
                    top = max(weights, default=0.0)
                else:
                    found = moved(found)
                extra = held.get(term)
                if extra is not None:
                    done.add(term)
                    found = as_array("i", found) + moved_held(extra[0])
                    weights = as_array("f", weights) + extra[1]
                    top = max(top, self._held_top(term, extra[1]))
                if len(found):
                    out_terms.append(term)
                    extend_array(slots, found)
                    extend_array(weighed, weights)
                    bounds.append(len(slots))
                    out_tops.append(top)
            for term, (held_found, held_weights) in held.items():
                if term not in done:
                    out_terms.append(term)
                    extend_array(slots, moved_held(held_found))
                    extend_array(weighed, held_weights)
                    bounds.append(len(slots))
                    out_tops.append(max(held_weights))
            return (out_terms, Slices(slots, bounds), Slices(weighed, bounds), out_tops)

        held = {
            number: self._memory(key)
            for number, key in zip(numbers, ids, strict=True)
            if number >= self._base_count
        }
        backing = self._backing

        def memory(number: int) -> Memory:
            found = held.get(number)
            if found is None:
                assert backing is not None
                found = backing.memory(number)
            return found

        return Export(
            columns=Columns(
                ids=ids,
                trusts=[self._trusts[number] for number in numbers],
                updated=[self._updated[number] for number in numbers],
                archived=[bool(self._archived[number]) for number in numbers],
                categories=[self._categories[number] for number in numbers],
                projects=[self._projects[number] for number in numbers],
                averages=dict(self._averages),
                length_sums={name: self._length_sums[name] for name in FIELDS},
                max_boost=self._max_boost,
            ),
            numbers=numbers,
            lengths=[n for number in numbers for n in self._lengths_of(number)],
            base=self._backing,
            base_count=self._base_count,
            memory=memory,
            postings=postings(),
        )

    @classmethod
    def from_backing(
        cls,
        columns: Columns,
        backing: Backing,
        *,
        half_life_days: float | None = None,
        scoring: Scoring | None = None,
        recover: Callable[[], Iterable[Memory]] | None = None,
    ) -> Index:
        """An index that reads its postings and memories from `backing` as it needs them.

        `recover` gives every memory again, read from the files, for when the
        backing turns out damaged.
        """
        index = cls(half_life_days=half_life_days, scoring=scoring, recover=recover)
        index._backing = backing
        ids = columns.ids
        index._base_count = len(ids)
        if isinstance(ids, PackedIds):
            index._ids = IdsByNumber(ids)
            index._number = NumbersById(index._ids)
        else:
            index._ids = ids  # type: ignore[assignment]  # the caller's, now ours
            index._number = dict(zip(ids, range(len(ids)), strict=True))
        index._trusts = columns.trusts
        index._averages = dict(columns.averages)
        index._length_sums = Counter(columns.length_sums)
        index._normalized_at = len(ids)
        # In bulk (what `_number_of` does one by one): a warm start takes this for every memory.
        index._boost = array("d", map(add, repeat(0.8), map(mul, repeat(0.4), columns.trusts)))
        index._shown = array("d", map(mul, index._boost, map(not_, columns.archived)))
        index._archived = bytearray(columns.archived)
        index._updated = columns.updated
        index._categories = columns.categories
        index._projects = columns.projects
        index._max_boost = max(index._max_boost, columns.max_boost)
        return index
