"""A cold build: many memories into one packed index, in a fraction of an `Index`'s memory.
"""

from __future__ import annotations

import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections import _count_elements, deque  # type: ignore[attr-defined]  # Counter's, in C
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import accumulate, compress, pairwise, repeat
from operator import add, and_, eq, itemgetter, lshift, mul, not_, or_, rshift, sub, truediv
from typing import BinaryIO

from ..memory.value import Memory
from .packed import Columns, Packed, Round
from .scoring import (
    _NAMED_FIELDS,
    FIELDS,
    Scoring,
    counted_fields,
    snap_average,
    word_pairs,
)
from .tokens import name_prefixes


def term_crcs(terms: Sequence[str]) -> array:
    """The CRC-32 of each term's UTF-8 (uint32): what the cache file orders its terms by."""
    encoded = map(str.encode, terms, repeat("utf-8"), repeat("surrogatepass"))
    return array("I", map(zlib.crc32, encoded))


def crc_order(crcs: array) -> array:
    """The term numbers by CRC-32, ties in term order (as a stable sort gives them).

    A counting sort on the top 16 bits, then each bucket (a few dozen terms)
    sorted: `sorted` of all of them at once would hold a Python int and a list
    slot per term (100 MB at 100,000 memories), the build's peak. Below 65,536 terms
    that sort is small and the sweep of 65,536 buckets the larger cost (10 ms a build at
    any size: a tenth of a small folder's first open), so it is sorted at once.
    """
    size = 1 << 16
    if len(crcs) < size:
        return array("I", sorted(range(len(crcs)), key=crcs.__getitem__))
    sizes = array("q", [0]) * (size + 1)
    for crc in crcs:
        sizes[(crc >> 16) + 1] += 1
    starts = array("q", accumulate(sizes))
    del sizes
    cursor = array("q", starts)
    order = array("I", [0]) * len(crcs)
    for number, crc in enumerate(crcs):
        bucket = crc >> 16
        order[cursor[bucket]] = number
        cursor[bucket] += 1
    del cursor
    key = crcs.__getitem__
    for bucket in range(size):
        begin, end = starts[bucket], starts[bucket + 1]
        if end - begin > 1:
            order[begin:end] = array("I", sorted(order[begin:end], key=key))
    return order


class TermTexts(Sequence[str]):
    """A build's terms by number, as text: the words as they were counted, a word pair made
    from its words' texts when asked for (`block`), never all of them at once."""

    def __init__(self, words: dict[str, int], codes: array) -> None:
        self._words = dict(zip(words.values(), words, strict=True))  # number -> text
        self._codes = codes  # per term: a pair's code (`_PairNumbers`), a word's 0

    def __len__(self) -> int:
        return len(self._codes)

    def __getitem__(self, number: int) -> str:  # type: ignore[override]
        return self.block([number if number >= 0 else number + len(self)])[0]

    def block(self, numbers: Sequence[int]) -> list[str]:
        """The texts of `numbers`, in order."""
        words, codes = self._words, self._codes
        return [
            words[code >> _PAIR_SHIFT] + " " + words[code & _SECOND] if code else words[number]
            for number, code in zip(numbers, map(codes.__getitem__, numbers), strict=True)
        ]

    def crcs(self) -> array:
        """`term_crcs` of every term, a pair's from its words' (CRC-32 runs on: the CRC of
        "a b" is that of " b" after "a's")."""
        words, codes = self._words, self._codes
        crcs = array("I", [0]) * len(codes)
        deque(map(crcs.__setitem__, words, term_crcs(list(words.values()))), maxlen=0)
        spaced = {number: b" " + text.encode("utf-8", "surrogatepass")
                  for number, text in words.items()}
        pairs = array("I", compress(range(len(codes)), codes))  # their numbers (4 bytes each)
        firsts = map(crcs.__getitem__, map(rshift, map(codes.__getitem__, pairs),
                                           repeat(_PAIR_SHIFT)))
        seconds = map(spaced.__getitem__, map(and_, map(codes.__getitem__, pairs),
                                              repeat(_SECOND)))
        deque(map(crcs.__setitem__, pairs, map(zlib.crc32, seconds, firsts)), maxlen=0)
        return crcs


# Postings a build places at once (8 bytes each; a round's 16, placed and then split): one
# with more places them a range of terms at a time (`Builder._placed_in_rounds`), not all
# 250 MB of 100,000 memories at once.
ROUND_POSTINGS = 4 << 20

# Memories per chunk of a build's term counts (freed chunk after chunk as they are weighed).
_CHUNK = 1024


class _TermNumbers(dict):  # type: ignore[type-arg]  # str -> int
    """Each word's (or name prefix's) number, given on first sight: a known one is one
    look-up, in C. It shares one numbering with the word pairs (`_PairNumbers`): `counts`
    and `codes`, one entry a term."""

    def __init__(self, counts: array, codes: array) -> None:
        super().__init__()
        self.counts = counts  # per term: how many memories hold it (0 when numbered)
        self.codes = codes  # per term: a pair's code, a word's 0

    def __missing__(self, term: str) -> int:
        number = self[term] = len(self.counts)
        self.counts.append(0)
        self.codes.append(0)
        return number


# A word pair ("support group") is held as its words' numbers, `first << 32 | second`: an int
# of 32 bytes, not a string of 60 (2.1 million of the 2.4 million terms of 100,000 memories).
_PAIR_SHIFT = 32
_SECOND = (1 << _PAIR_SHIFT) - 1


# A `_PairNumbers` slot with no pair in it (no code: a word's number is below 2**32 - 1).
_EMPTY = (1 << 64) - 1
_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / the golden ratio, odd: Fibonacci hashing


class _PairNumbers:
    """Each word pair's term number, by its code, given on first sight: a hash table in two
    arrays (open addressing, linear probing), 12 bytes a slot and no Python object a pair.

    A dict of the 2.1 million pairs of 100,000 memories was 200 MB (a key int, a
    number int and a slot a pair) made in pymalloc's arenas among the words' and
    rows' objects, which kept those arenas, and so the RSS, after the dict was
    freed; this table's two arrays go back to the system when freed (50 MB at
    100,000 memories, the table at most 5/8 full). A field's pairs found in their
    first slots are looked up in C (`numbers`); the rest, new pairs and pairs a
    collision moved on, by a Python loop (`_probed`).
    """

    def __init__(self, counts: array, codes: array) -> None:
        self.counts = counts  # shared with the words' `_TermNumbers`
        self.codes = codes
        self._used = 0
        self._make(1 << 12)

    def __len__(self) -> int:
        return self._used

    def _make(self, size: int) -> None:
        self._keys = array("Q", [_EMPTY]) * size
        self._numbers = array("I", [0]) * size
        self._mask = size - 1
        self._shift = 64 - (size.bit_length() - 1)  # a slot: the product's top bits

    def numbers(self, codes: Collection[int]) -> list[int]:
        """The number of each of `codes` (each once), a new one numbered in their order."""
        if 8 * (self._used + len(codes)) > 5 * len(self._keys):
            self._grow(self._used + len(codes))
        if len(codes) < 2:  # `itemgetter` of one gives no tuple
            return self._probed(codes)
        keys, values, shift = self._keys, self._numbers, self._shift
        # Each code's first slot, the key there and whether it is the code, in C: most
        # pairs are met again, and most of those in their first slot (at most 5/8 full).
        slots = list(map(rshift, map(and_, map(mul, codes, repeat(_GOLDEN)), repeat(_MASK64)),
                         repeat(shift)))
        at_first = list(map(eq, itemgetter(*slots)(keys), codes))
        if all(at_first):
            return list(itemgetter(*slots)(values))
        return self._probed(codes, slots, at_first)

    def _probed(
        self, codes: Iterable[int], slots: list[int] | None = None,
        at_first: list[bool] | None = None,
    ) -> list[int]:
        """`numbers(codes)` by a loop: each code's slot (`slots`, where `at_first` says the
        code is, when given) probed on to the code or an empty slot (a new pair)."""
        keys, values, mask, shift = self._keys, self._numbers, self._mask, self._shift
        counts, all_codes = self.counts, self.codes
        found: list[int] = []
        if slots is None or at_first is None:
            slots = [((code * _GOLDEN) & _MASK64) >> shift for code in codes]
            at_first = [False] * len(slots)
        for code, slot, there in zip(codes, slots, at_first, strict=True):
            if there:
                found.append(values[slot])
                continue
            while True:
                key = keys[slot]
                if key == code:
                    found.append(values[slot])
                    break
                if key == _EMPTY:
                    number = len(counts)
                    counts.append(0)
                    all_codes.append(code)
                    keys[slot] = code
                    values[slot] = number
                    found.append(number)
                    self._used += 1
                    break
                slot = (slot + 1) & mask
        return found

    def _grow(self, needed: int) -> None:
        """A table of at least twice the slots, `needed` pairs at most half of it; the pairs
        (from `codes`) placed again in C, those that meet in a slot by a Python loop."""
        # Arrays, not lists: a list of ints would be 100 MB at 100,000 memories, for a moment.
        numbers = array("I", compress(range(len(self.codes)), self.codes))  # a word's code: 0
        codes = array("Q", map(self.codes.__getitem__, numbers))
        size = 2 * len(self._keys)
        while 2 * needed > size:
            size *= 2
        self._make(size)
        keys, values, mask = self._keys, self._numbers, self._mask
        slots = array("Q", map(rshift, map(and_, map(mul, codes, repeat(_GOLDEN)),
                                             repeat(_MASK64)), repeat(self._shift)))
        # Two of one slot: the later written stays, the earlier goes on below.
        deque(map(keys.__setitem__, slots, codes), maxlen=0)
        deque(map(values.__setitem__, slots, numbers), maxlen=0)
        placed = bytes(map(eq, map(keys.__getitem__, slots), codes))
        for at in compress(range(len(placed)), map(not_, placed)):
            slot = (slots[at] + 1) & mask
            while keys[slot] != _EMPTY:
                slot = (slot + 1) & mask
            keys[slot] = codes[at]
            values[slot] = numbers[at]


def _pair_codes(terms: list[str], seq: list[int]) -> list[int]:
    """`scoring.word_pairs(terms)`, each pair as the code of its words' numbers (`seq`: the
    number of each of `terms`), in the same order."""
    if len(terms) < 2:
        return []
    if not "".join(terms).isascii():
        # CJK among the words: which terms pair is `word_pairs`'s to say (rarer, dearer).
        numbers = dict(zip(terms, seq, strict=True))
        return [numbers[first] << _PAIR_SHIFT | numbers[second]
                for first, second in map(str.split, word_pairs(terms, numbers.keys()),
                                         repeat(" "))]
    # Only words (what `word_pairs` finds for ASCII terms): every two adjacent, but a word
    # repeated in place.
    following = seq[1:]
    if not any(map(eq, seq, following)):
        return list(map(or_, map(lshift, seq, repeat(_PAIR_SHIFT)), following))
    return [first << _PAIR_SHIFT | second
            for first, second in zip(seq, following, strict=False) if first != second]


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

    def __init__(
        self, scoring: Scoring | None = None, *, spill: BinaryIO | None = None, block: int = 1
    ) -> None:
        self.scoring = scoring or Scoring()
        # Rounds of placing (`_placed_in_rounds`) are whole blocks of this many terms: the
        # cache's term blocks (a block's postings are read after its last term's are placed).
        self._block = block
        # Where full chunks wait for `finish` (a temporary file), instead of in memory.
        self._spill = spill
        self._parked: list[tuple[int, int, str]] = []  # per chunk spilled: where, size, code
        self._counts = array("I")  # per term: how many memories hold it
        self._codes = array("Q")  # per term: a pair's code, a word's 0 (`TermTexts`)
        self._term_numbers: dict[str, int] = _TermNumbers(self._counts, self._codes)
        self._pair_numbers = _PairNumbers(self._counts, self._codes)
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
        # What `scoring.field_counts` counts, numbered as it comes: a field's words, then
        # its word pairs (as codes, `_pair_codes`), then its name prefixes.
        word_number = self._term_numbers.__getitem__  # numbers a new term (`_TermNumbers`)
        pair_numbers = self._pair_numbers.numbers
        pairing = bool(self.scoring.pair_weight)
        held = self._counts
        first = len(numbers)
        lengths = []
        for weighed, (name, (terms, length)) in zip(
            self._weighed, counted_fields(memory).items(), strict=True
        ):
            lengths.append(length)
            if weighed and length:  # then `terms` holds a term
                # Each term's number, a new one numbered in the order the terms first come
                # (as counting them first and numbering the distinct ones did), then counted
                # as ints: one look-up a term, and the pairs made from the same numbers.
                seq = list(map(word_number, terms))
                counted: dict[int, int] = {}
                _count_elements(counted, seq)
                numbers.extend(counted)
                counts = self._counted(counts, counted.values())
                if pairing and len(terms) > 1:
                    pairs: dict[int, int] = {}
                    _count_elements(pairs, _pair_codes(terms, seq))
                    numbers.extend(pair_numbers(pairs))
                    counts = self._counted(counts, pairs.values())
                if name in _NAMED_FIELDS:
                    prefixes: dict[str, int] = {}
                    _count_elements(prefixes, name_prefixes(_NAMED_FIELDS[name](memory)))
                    numbers.extend(map(word_number, prefixes))
                    counts = self._counted(counts, prefixes.values())
            ends.append(len(numbers))
        # Each of the memory's terms once: one more memory holds it. A loop: `map` over an
        # array's `__getitem__` and `__setitem__` (slot wrappers, a tuple made a call) took
        # twice as long.
        for term in set(numbers[first:]):
            held[term] += 1
        self._keep(memory, lengths)

    def _keep(self, memory: Memory, lengths: list[int]) -> None:
        """What the columns keep of a counted memory, and its field lengths."""
        trust = memory.trust
        self._rows.append((memory.id, trust, memory.updated, memory.category, memory.project))
        self._archived.append(bool(memory.archived))
        self._lengths.extend(lengths)
        self._length_sums = list(map(add, self._length_sums, lengths))
        self._max_boost = max(self._max_boost, 0.8 + 0.4 * trust)

    def _counted(self, counts: array, values: Iterable[int]) -> array:
        """`counts` (the last chunk's) extended by `values`; past 65,535 the chunk's counts
        take 4 bytes (a new array, which the chunk then holds)."""
        at = len(counts)
        try:
            counts.extend(values)
        except OverflowError:
            del counts[at:]
            counts = array("I", counts)
            counts.extend(values)
            numbers, _, ends = self._chunks[-1]  # type: ignore[misc]
            self._chunks[-1] = (numbers, counts, ends)
        return counts

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
        """Weigh every memory and place its postings; the builder is spent after.

        The postings are placed in the order the cache file holds its terms (by
        CRC-32, `crc_order`), so that the file takes them as they are: no term's
        postings sliced out and written one by one.
        """
        self._park()
        averages = self._averages()
        terms = TermTexts(self._term_numbers, self._codes)
        self._term_numbers = {}
        self._pair_numbers = _PairNumbers(array("I"), array("Q"))  # its table freed
        counts, self._counts = self._counts, array("I")
        crcs = terms.crcs()
        order = crc_order(crcs)
        sorted_crcs = array("I", map(crcs.__getitem__, order))
        del crcs
        # Where each term's postings start (4 bytes each while they fit, as they do at
        # 100,000 memories' 31 million).
        starts = array("I" if sum(counts) < 1 << 32 else "q",
                       accumulate(map(counts.__getitem__, order), initial=0))
        if starts[-1] <= ROUND_POSTINGS or self._spill is None:
            rounds: Iterable[Round] = [self._placed_at_once(order, starts, averages)]
        else:
            rounds = self._placed_in_rounds(order, starts, averages)  # placed when read
        return Packed(self._columns(averages), self._lengths, terms, counts, order, sorted_crcs,
                      starts, rounds)

    def _averages(self) -> dict[str, float]:
        """Each weighed field's mean length, on the grid (`snap_average`)."""
        total = len(self._rows)
        return {name: snap_average(sums, total)
                for name, sums in zip(FIELDS, self._length_sums, strict=True)}

    def _columns(self, averages: dict[str, float]) -> Columns:
        rows = self._rows
        return Columns(
            ids=[row[0] for row in rows],
            trusts=[row[1] for row in rows],
            updated=[row[2] for row in rows],
            archived=self._archived,
            categories=[row[3] for row in rows],
            projects=[row[4] for row in rows],
            averages=averages,
            length_sums=dict(zip(FIELDS, self._length_sums, strict=True)),
            max_boost=self._max_boost,
        )

    def _rounds_cuts(self, starts: Sequence[int]) -> list[int]:
        """Where the rounds of placing (`_placed_in_rounds`) cut the terms (places in the
        file): the most whole blocks of terms whose postings fit ROUND_POSTINGS, at least
        one block a round."""
        terms = len(starts) - 1
        block = self._block
        cuts = [0]
        while cuts[-1] < terms:
            low = cuts[-1]
            fit = bisect_right(starts, starts[low] + ROUND_POSTINGS) - 1
            cuts.append(min(terms, max(low + block, fit - fit % block)))
        return cuts

    def _weighed_memories(
        self, averages: dict[str, float], rank: array | None = None
    ) -> Iterator[tuple[dict[int, float], Iterator[float]]]:
        """Each memory's terms (numbers, or with `rank` their places in the file) and
        weights, in memory number order, as `weigh` gives them:
        each term's count times its field's norm, added field after field (the same float
        additions in the same order), then saturated. Frees the chunks as it goes."""
        width = len(FIELDS)
        lengths, k1 = self._lengths, self.scoring.k1
        weights, field_b = self.scoring.field_weights, self.scoring.field_b
        factors = [(weights.get(name) or 0.0, field_b.get(name, 0.0), averages.get(name, 1.0))
                   for name in FIELDS]
        number = 0
        for at in range(len(self._chunks)):
            numbers, held, ends = self._chunk(at)
            if rank is not None:  # the terms by their places in the file instead
                numbers = array("I", map(rank.__getitem__, numbers))
            begin = 0
            for row in range(len(ends) // width):
                weighted: dict[int, float] = {}
                row_lengths = lengths[number * width : (number + 1) * width]
                for field, end in enumerate(ends[row * width : (row + 1) * width]):
                    if end == begin:
                        continue  # no terms: empty, or a field not weighed (see `add`)
                    weight, b, average = factors[field]
                    norm = weight / (1.0 - b + b * row_lengths[field] / average)
                    found = numbers[begin:end]
                    values = map(mul, held[begin:end], repeat(norm))
                    if weighted:
                        weighted.update(zip(
                            found, map(add, map(weighted.get, found, repeat(0.0)), values),
                            strict=True,
                        ))
                    else:
                        weighted = dict(zip(found, values, strict=True))
                    begin = end
                tfs = weighted.values()
                yield weighted, map(truediv, tfs, map(add, repeat(k1), tfs))
                number += 1
            del numbers, held, ends
        self._chunks = []

    def _placed_at_once(
        self, order: array, starts: array, averages: dict[str, float]
    ) -> Round:
        """Every posting placed in one pass: a memory's go straight to their terms' places."""
        cursor = array("q", [0]) * len(order)  # where each term's next posting goes, by number
        deque(map(cursor.__setitem__, order, starts), maxlen=0)
        size = starts[-1]
        slots = array("i", [0]) * size
        weights = array("f", [0.0]) * size
        for number, (weighted, saturated) in enumerate(self._weighed_memories(averages)):
            for term, value in zip(weighted, saturated, strict=True):
                place = cursor[term]
                slots[place] = number
                weights[place] = value
                cursor[term] = place + 1
        return Round(0, len(order), slots, weights)

    def _placed_in_rounds(
        self, order: array, starts: array, averages: dict[str, float]
    ) -> Iterator[Round]:
        """The postings placed a range of terms (in the file's order) at a time, each range
        at most ROUND_POSTINGS postings: the build never holds every posting at once.

        Each memory is weighed once, its postings sorted by their term's place in
        the file and parked in the spill file; each round then reads them back
        and places those of its own terms.
        """
        spill = self._spill
        assert spill is not None
        terms = len(order)
        rank = array("I", [0]) * terms
        deque(map(rank.__setitem__, order, range(terms)), maxlen=0)
        parked: list[tuple[int, int, array]] = []  # where, postings, each memory's end
        ranks, values, ends = array("I"), array("f"), array("I")

        def park(ranks: array, values: array, ends: array) -> None:
            # At the end of the file: the chunks of counts are read from it meanwhile.
            parked.append((spill.seek(0, 2), len(ranks), ends))
            spill.write(ranks)
            spill.write(values)

        k1 = self.scoring.k1
        for weighed, _ in self._weighed_memories(averages, rank):
            # Its terms by place (ints sort fast), then their weights in that order.
            placed = sorted(weighed)
            ranks.extend(placed)
            tfs = list(map(weighed.__getitem__, placed))
            values.extend(map(truediv, tfs, map(add, repeat(k1), tfs)))
            ends.append(len(ranks))
            if len(ends) == _CHUNK:
                park(ranks, values, ends)
                ranks, values, ends = array("I"), array("f"), array("I")
        if ends:
            park(ranks, values, ends)
        del rank, ranks, values, ends
        cuts = self._rounds_cuts(starts)
        # One pair of arrays for every round: a round's freed arrays would be memory the
        # allocator keeps (and the next round's new ones more of it). Each round is given
        # as views of them, read before the next round is asked for (which overwrites
        # them); no copy (a posting's number and weight side by side, then split, took two).
        largest = max(starts[high] - starts[low] for low, high in pairwise(cuts))
        numbers = array("i", [0]) * largest
        weights = array("f", [0.0]) * largest
        # By place in the file: where its next posting goes, in the round.
        cursor = array("I" if largest < 1 << 32 else "q", [0]) * terms
        for low, high in pairwise(cuts):
            base = starts[low]
            cursor[low:high] = array(cursor.typecode, map(sub, starts[low:high], repeat(base)))
            number = 0
            for where, size, memory_ends in parked:
                spill.seek(where)
                ranks, values = array("I"), array("f")
                ranks.frombytes(spill.read(size * ranks.itemsize))
                values.frombytes(spill.read(size * values.itemsize))
                begin = 0
                for end in memory_ends:
                    first = bisect_left(ranks, low, begin, end)
                    last = bisect_left(ranks, high, first, end)
                    for place_rank, value in zip(ranks[first:last], values[first:last],
                                                 strict=True):
                        place = cursor[place_rank]
                        numbers[place] = number
                        weights[place] = value
                        cursor[place_rank] = place + 1
                    begin = end
                    number += 1
            size = starts[high] - base
            slots, values_placed = memoryview(numbers)[:size], memoryview(weights)[:size]
            yield Round(low, high, slots, values_placed)
            del slots, values_placed
