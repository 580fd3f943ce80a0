"""A cold build's bulk work with numpy: pairing, counting, weighing and placing in C.

`building.Builder` does a cold build's work a term, a pair and a posting at a
time in Python: at 100,000 memories some 40 million look-ups and probes of
tables of 2.4 million terms, and 31 million postings weighed and placed one by
one. `NumpyBuilder` keeps in Python only what needs a string: each of a
memory's terms is numbered by one look-up in a dict of its words (as the pure
path does). The rest is done a chunk of memories at a time, in numpy:

- the word pairs: two words next to each other in a field, both words a pair
  joins (`pairable`), not the same word, as the code `first << 32 | second`;
  numbered in a sorted table of the codes seen (no Python object a pair);
- each term's count in each field of each memory: one sort of the chunk's
  keys `memory << 35 | term << 3 | field`, which also gives each memory's
  distinct terms (the document counts);
- once every memory is counted (the length averages known), the weights:
  each count times its field's norm, added field after field in a float64
  array (the same products and additions in the same order as the pure
  path's `weigh`), saturated, made float32;
- the placing: each chunk's postings sorted by their term's place in the
  file and their memory; then, a range of terms (`building.ROUND_POSTINGS`)
  at a time, each chunk's in memory order put at their terms' cursors.

The terms are numbered as the pure path numbers them (on first sight: a
field's words, then its pairs, then its name prefixes, field after field,
memory after memory): a word gets its number in the dict and the stamp of the
field and part it was first seen in, a pair the stamp of its first sight, and
the chunk's new terms take their numbers in stamp order. So the cache file is
byte for byte the pure path's, to the order of terms of one CRC-32
(`tests/test_build_with_numpy.py` builds the same folders both ways).

numpy is optional (the semantic extra brings it; a plain install builds with
the pure path). It is imported only by a build (`cache.build`, a folder of
`loading.ADOPT_CACHE_FROM` memories or more, where its ~100 ms import is a
few percent of the build), never when this module is imported: a hook never
builds.
"""

from __future__ import annotations

import functools
import io
import os
from array import array
from collections.abc import Iterator
from itertools import pairwise
from typing import Any, BinaryIO, cast

from ..memory.value import Memory
from . import building
from .building import Builder, TermTexts
from .packed import Packed, Round
from .scoring import _NAMED_FIELDS, FIELDS, Scoring, counted_fields
from .tokens import _CJK_RUN, name_prefixes

# False: the pure path even where numpy is installed (tests compare both).
USE_NUMPY = True

_WIDTH = len(FIELDS)
# A term's stamp: where it was first seen, `(memory * _WIDTH + field) * 4 + part`, the part
# 0 for a field's words, 1 for its word pairs, 2 for its name prefixes (their order in `add`).
_WORDS, _PAIRS, _PREFIXES = 0, 1, 2


def numpy_for_build() -> Any | None:
    """numpy, for a build to use; None for the pure path (not installed, or USE_NUMPY)."""
    if not USE_NUMPY:
        return None
    # BLAS on one thread, as `semantic.py` sets it (read when numpy loads, whichever first).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def builder_for(
    scoring: Scoring | None = None, *, spill: BinaryIO | None = None, block: int = 1
) -> Builder:
    """A `NumpyBuilder` when numpy is there, else the pure `building.Builder`."""
    np = numpy_for_build()
    if np is None:
        return Builder(scoring, spill=spill, block=block)
    return NumpyBuilder(np, scoring, spill=spill, block=block)


class _StampedNumbers(dict):  # type: ignore[type-arg]  # str -> int
    """Each word's (or name prefix's) number, given on first sight (one look-up in C for a
    known one), with the stamp it was first seen under and whether a pair may join it."""

    def __init__(self) -> None:
        super().__init__()
        self.stamp = 0  # set by the caller before each field's part
        self.stamps = array("q")
        # What `scoring.word_pairs` reads a word by: ASCII, or neither a CJK unigram (`~`)
        # nor a CJK bigram (what a field's terms hold decides nothing more: see the tests).
        self.pairable = bytearray()

    def __missing__(self, term: str) -> int:
        number = self[term] = len(self.stamps)
        self.stamps.append(self.stamp)
        self.pairable.append(term.isascii() or (term[0] != "~" and not _CJK_RUN.match(term)))
        return number


class NumpyBuilder(Builder):
    """`building.Builder` with numpy: the same `Packed`, the same file (module docstring)."""

    def __init__(
        self, np: Any, scoring: Scoring | None = None, *, spill: BinaryIO | None = None,
        block: int = 1,
    ) -> None:
        super().__init__(scoring, spill=spill, block=block)
        self._np = np
        self._words = _StampedNumbers()
        self._pairing = bool(self.scoring.pair_weight)
        # The chunk being counted: its fields' terms (word numbers) and name prefixes, and
        # where each memory's field ends in them (`_WIDTH` a memory).
        self._first = 0  # the chunk's first memory number
        self._tokens, self._token_ends = array("I"), array("I")
        self._prefixes, self._prefix_ends = array("I"), array("I")
        self._term_of_word = np.zeros(0, np.int64)  # word number -> term number
        self._terms = 0  # term numbers given
        self._pair_codes = np.zeros(0, np.uint64)  # the pairs seen, sorted
        self._pair_terms = np.zeros(0, np.uint32)  # and their term numbers
        self._held = np.zeros(1 << 16, np.uint32)  # per term: how many memories hold it
        # Per chunk counted: where (in the spill file, or the arrays), its first memory, how
        # many memories, entries, and its counts' type code.
        self._parked_counts: list[tuple[Any, int, int, int, str]] = []

    def add(self, memory: Memory) -> None:
        """Count one more memory's terms (after every memory of a lower id)."""
        if len(self._rows) - self._first >= building._CHUNK:
            self._count_chunk()
        words = self._words
        number = words.__getitem__
        stamp = len(self._rows) * _WIDTH * 4
        tokens, prefixes = self._tokens, self._prefixes
        lengths = []
        for field, (weighed, (name, (terms, length))) in enumerate(
            zip(self._weighed, counted_fields(memory).items(), strict=True)
        ):
            lengths.append(length)
            if weighed and length:
                words.stamp = stamp + 4 * field + _WORDS
                tokens.extend(map(number, terms))
                if name in _NAMED_FIELDS:
                    words.stamp = stamp + 4 * field + _PREFIXES
                    prefixes.extend(map(number, name_prefixes(_NAMED_FIELDS[name](memory))))
            self._token_ends.append(len(tokens))
            self._prefix_ends.append(len(prefixes))
        self._keep(memory, lengths)

    def _count_chunk(self) -> None:
        """Number the chunk's new terms, count its terms by memory and field, and park the
        counts (`_parked_counts`) until `finish` weighs them."""
        np = self._np
        memories = len(self._rows) - self._first
        if not memories:
            return
        tokens = np.array(self._tokens, np.int64)
        segments = np.repeat(np.arange(memories * _WIDTH),
                             np.diff(np.array(self._token_ends, np.int64), prepend=0))
        prefixes = np.array(self._prefixes, np.int64)
        prefix_segments = np.repeat(np.arange(memories * _WIDTH),
                                    np.diff(np.array(self._prefix_ends, np.int64), prepend=0))
        self._tokens, self._token_ends = array("I"), array("I")
        self._prefixes, self._prefix_ends = array("I"), array("I")
        codes, pair_segments = self._pairs(tokens, segments)
        distinct, firsts, inverse = self._distinct(codes)
        pair_terms = self._numbered(distinct, firsts, pair_segments)[inverse]
        term_of_word = self._term_of_word
        keys = np.concatenate([
            _keys(np, segments, term_of_word[tokens]),
            _keys(np, pair_segments, pair_terms),
            _keys(np, prefix_segments, term_of_word[prefixes]),
        ])
        del tokens, segments, prefixes, prefix_segments, codes, pair_segments, pair_terms
        entries, counts = np.unique(keys, return_counts=True)
        del keys
        # Each memory's distinct terms (its entries of one term are side by side).
        postings = entries >> 3
        new = np.empty(len(postings), bool)
        new[:1] = True
        np.not_equal(postings[1:], postings[:-1], out=new[1:])
        held = (postings[new] & 0xFFFFFFFF).astype(np.int64)
        del postings, new
        if len(self._held) < self._terms:
            grown = np.zeros(max(self._terms, len(self._held) * 5 // 4), np.uint32)
            grown[: len(self._held)] = self._held
            self._held = grown
        np.add.at(self._held, held, np.uint32(1))  # a Python int: a path 25 times slower
        del held
        terms = (entries >> 3 & 0xFFFFFFFF).astype(np.uint32)
        places = ((entries >> 35) << 3 | entries & 7).astype(np.uint32)  # memory * 8 + field
        del entries
        code = "H" if not len(counts) or counts.max() < 1 << 16 else "I"
        counts = counts.astype(np.dtype(code))
        if self._spill is None:
            where: Any = (terms, places, counts)
        else:
            where = self._spill.seek(0, 2)
            for part in (terms, places, counts):
                self._spill.write(part.data)
        self._parked_counts.append((where, self._first, memories, len(terms), code))
        self._first = len(self._rows)

    def _pairs(self, tokens: Any, segments: Any) -> tuple[Any, Any]:
        """The chunk's word pairs in text order, as codes of their words' numbers, and the
        field (segment) of each: what `building._pair_codes` gives field after field."""
        np = self._np
        if not self._pairing or len(tokens) < 2:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64)
        pairable = np.frombuffer(self._words.pairable, np.uint8).astype(bool)
        first, second = tokens[:-1], tokens[1:]
        joined = (segments[1:] == segments[:-1]) & (first != second)
        joined &= pairable[first]
        joined &= pairable[second]
        del pairable
        at = np.flatnonzero(joined)
        codes = first[at].astype(np.uint64) << 32 | second[at].astype(np.uint64)
        return codes, segments[at]

    def _distinct(self, codes: Any) -> tuple[Any, Any, Any]:
        """The distinct `codes` (sorted), where each is first met in `codes`, and which
        distinct code each of `codes` is."""
        np = self._np
        if not len(codes):
            empty = np.zeros(0, np.int64)
            return np.zeros(0, np.uint64), empty, empty
        order = np.argsort(codes)
        ordered = codes[order]
        new = np.empty(len(codes), bool)
        new[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        inverse = np.empty(len(codes), np.int64)
        inverse[order] = np.cumsum(new) - 1
        return ordered[starts], np.minimum.reduceat(order, starts), inverse

    def _numbered(self, distinct: Any, firsts: Any, pair_segments: Any) -> Any:
        """The term number of each of the chunk's `distinct` pair codes, and the chunk's new
        terms (words and pairs) numbered in the order the pure path numbers them."""
        np = self._np
        known_codes, known_terms = self._pair_codes, self._pair_terms
        places = np.searchsorted(known_codes, distinct)
        known = places < len(known_codes)
        known[known] = known_codes[places[known]] == distinct[known]
        numbers = np.empty(len(distinct), np.int64)
        numbers[known] = known_terms[places[known]]
        fresh = np.flatnonzero(~known)  # in code order
        by_sight = fresh[np.argsort(firsts[fresh], kind="stable")]
        pair_stamps = ((self._first * _WIDTH + pair_segments[firsts[by_sight]]) * 4 + _PAIRS)
        stamps = np.frombuffer(self._words.stamps, np.int64)
        word_stamps = stamps[len(self._term_of_word):]
        new_words = len(word_stamps)
        # The chunk's new words (in their numbers' order) and pairs (in order of first
        # sight), each in stamp order: merged by stamp (a word and a pair never share one).
        sight = np.argsort(np.concatenate([word_stamps, pair_stamps]), kind="stable")
        del stamps, word_stamps
        base = self._terms
        given = np.empty(len(sight), np.int64)
        given[sight] = np.arange(base, base + len(sight))
        self._terms += len(sight)
        self._term_of_word = np.concatenate([self._term_of_word, given[:new_words]])
        numbers[by_sight] = given[new_words:]
        self._pair_codes = np.insert(known_codes, places[fresh], distinct[fresh])
        self._pair_terms = np.insert(known_terms, places[fresh],
                                     numbers[fresh].astype(np.uint32))
        return numbers

    def finish(self) -> Packed:
        """Weigh every memory and place its postings, as `building.Builder.finish` does."""
        np = self._np
        self._count_chunk()
        averages = self._averages()
        # Each term's code by number (`TermTexts`): a pair's words by their term numbers.
        term_of_word = self._term_of_word
        paired = self._pair_codes
        codes = np.zeros(self._terms, np.uint64)
        codes[self._pair_terms] = (
            term_of_word[(paired >> 32).astype(np.int64)].astype(np.uint64) << 32
            | term_of_word[(paired & 0xFFFFFFFF).astype(np.int64)].astype(np.uint64))
        words = dict(zip(self._words, term_of_word.tolist(), strict=True))
        del paired, term_of_word
        self._pair_codes, self._pair_terms = np.zeros(0, np.uint64), np.zeros(0, np.uint32)
        self._words, self._term_of_word = _StampedNumbers(), np.zeros(0, np.int64)
        terms = TermTexts(words, array("Q", codes.tobytes()))
        del words, codes
        _trim()  # the count's tables, freed
        held = self._held[: self._terms]
        self._held = np.zeros(0, np.uint32)
        crcs = np.frombuffer(terms.crcs(), np.uint32)
        order = np.argsort(crcs, kind="stable").astype(np.uint32)  # by CRC-32, ties by number
        sorted_crcs = array("I", crcs[order].tobytes())
        del crcs
        total = int(held.sum(dtype=np.uint64))
        wide = total >= 1 << 32
        starts = array("q" if wide else "I", [0])
        starts.frombytes(np.cumsum(held[order], dtype=np.int64 if wide else np.uint32).tobytes())
        rank = np.empty(len(order), np.uint32)
        rank[order] = np.arange(len(order), dtype=np.uint32)
        order_array = array("I", order.tobytes())
        del order
        if total <= building.ROUND_POSTINGS or self._spill is None:
            cuts = [0, len(order_array)]
        else:
            cuts = self._rounds_cuts(starts)
        return Packed(
            self._columns(averages), self._lengths, terms, array("I", held.tobytes()),
            order_array, sorted_crcs, starts, self._placed(rank, averages, starts, cuts),
        )

    def _weighed_chunks(self, averages: dict[str, float], rank: Any) -> Iterator[tuple[Any, ...]]:
        """Each chunk's postings: their terms' places in the file, memory numbers and
        weights, by place then memory. A weight is each count times its field's norm, added
        field after field in float64 as `weigh` adds them, saturated, then float32. Frees
        the chunks' counts as it goes."""
        np = self._np
        k1, weights, field_b = self.scoring.k1, self.scoring.field_weights, self.scoring.field_b
        lengths = np.frombuffer(self._lengths, np.uint32).reshape(-1, _WIDTH)
        for where, first, memories, size, code in self._parked_counts:
            terms, places, counts = self._read_counts(where, size, code)
            fields = places & 7
            rows = lengths[first : first + memories]
            norms = np.zeros((memories, 8))
            for field, name in enumerate(FIELDS):
                weight = weights.get(name) or 0.0
                if weight:
                    b, average = field_b.get(name, 0.0), averages.get(name, 1.0)
                    norms[:, field] = weight / (1.0 - b + b * rows[:, field] / average)
            values = counts * norms.reshape(-1)[places]
            del norms, counts
            memory = (places >> 3).astype(np.int64)
            del places
            postings = memory << 32 | terms
            new = np.empty(len(postings), bool)
            new[:1] = True
            np.not_equal(postings[1:], postings[:-1], out=new[1:])
            del postings
            which = np.cumsum(new) - 1
            tf = np.zeros(int(which[-1]) + 1 if len(which) else 0)
            # Field after field: a posting has at most one entry a field, so each addition
            # is one float64 addition, in the order `weigh` makes them.
            for field in range(_WIDTH):
                chosen = fields == field
                tf[which[chosen]] += values[chosen]
            del which, values, fields
            saturated = (tf / (k1 + tf)).astype(np.float32)
            del tf
            starts = np.flatnonzero(new)
            places = rank[terms[starts]]
            numbers = (memory[starts] + first).astype(np.int32)
            del terms, memory, starts, new
            order = np.argsort(places.astype(np.int64) << 32 | numbers)
            yield places[order], numbers[order], saturated[order]
        self._parked_counts = []

    def _read_counts(self, where: Any, size: int, code: str) -> tuple[Any, Any, Any]:
        """A chunk's counts as `_count_chunk` parked them: term, memory * 8 + field, count."""
        np = self._np
        if self._spill is None:
            return where  # type: ignore[no-any-return]
        self._spill.seek(where)
        terms = np.empty(size, np.uint32)
        places = np.empty(size, np.uint32)
        counts = np.empty(size, np.dtype(code))
        for part in (terms, places, counts):
            _read_into(self._spill, part)
        return terms, places, counts

    def _placed(
        self, rank: Any, averages: dict[str, float], starts: array, cuts: list[int]
    ) -> Iterator[Round]:
        """The postings placed a range of terms (`cuts`, places in the file) at a time.

        Each chunk is weighed once, its postings sorted by place and memory and
        kept (parked in the spill file when there is one); each round takes
        its range of places from each chunk in memory order, each posting
        placed after its term's postings from the chunks before.
        """
        np = self._np
        spill = self._spill
        bounds = np.array(cuts, np.uint32)
        # Per chunk: its postings (arrays, or where in the spill file and how many), and
        # where each round's range starts in them.
        weighed: list[tuple[Any, list[int]]] = []
        for chunk in self._weighed_chunks(averages, rank):
            within = np.searchsorted(chunk[0], bounds).tolist()
            if spill is None:
                weighed.append((chunk, within))
                continue
            weighed.append(((spill.seek(0, 2), len(chunk[0])), within))
            for part in chunk:
                spill.write(part.data)
        del rank
        _trim()
        largest = max(starts[high] - starts[low] for low, high in pairwise(cuts))
        # One pair of arrays for every round, each round given as views of them (valid
        # until the next round is asked for, as `Round` says).
        numbers = np.empty(largest, np.int32)
        weights = np.empty(largest, np.float32)
        try:
            for at, (low, high) in enumerate(pairwise(cuts)):
                base = starts[low]
                cursor = np.frombuffer(
                    starts, np.uint32 if starts.typecode == "I" else np.int64, high - low,
                    low * starts.itemsize).astype(np.int64) - base
                for chunk, within in weighed:
                    begin, end = within[at], within[at + 1]
                    if end > begin:
                        places, memories, values = self._parked_range(chunk, begin, end)
                        _place(np, places.astype(np.int64) - low, memories, values, cursor,
                               numbers, weights)
                size = starts[high] - base
                yield Round(low, high, memoryview(numbers)[:size], memoryview(weights)[:size])
        finally:
            del numbers, weights
            _trim()  # before the rest of the file is made (`cache._write_sections`)

    def _parked_range(self, chunk: Any, begin: int, end: int) -> tuple[Any, Any, Any]:
        """Postings `begin` to `end` of a weighed chunk: places, memory numbers, weights."""
        np = self._np
        if self._spill is None:
            return tuple(part[begin:end] for part in chunk)  # type: ignore[return-value]
        where, size = chunk
        out = []
        for offset, kind in ((0, np.uint32), (4 * size, np.int32), (8 * size, np.float32)):
            part = np.empty(end - begin, kind)
            self._spill.seek(where + offset + 4 * begin)
            _read_into(self._spill, part)
            out.append(part)
        return out[0], out[1], out[2]


def _place(
    np: Any, terms: Any, memories: Any, values: Any, cursor: Any, numbers: Any, weights: Any
) -> None:
    """Place postings (by term, then memory) at their terms' cursors, moving them on."""
    size = len(terms)
    runs = np.flatnonzero(terms[1:] != terms[:-1]) + 1
    firsts = np.concatenate(([0], runs))
    lengths = np.diff(np.concatenate((firsts, [size])))
    run_terms = terms[firsts]
    # A posting's place: its term's cursor, plus how far into its term's run it is.
    places = np.repeat(cursor[run_terms] - firsts, lengths) + np.arange(size)
    numbers[places] = memories
    weights[places] = values
    cursor[run_terms] += lengths


def _read_into(file: BinaryIO, target: Any) -> None:
    """Fill the numpy array `target` from `file` (a temporary file: it reads all asked)."""
    cast("io.BufferedRandom", file).readinto(target.data.cast("B"))


def _trim() -> None:
    """Give the memory freed so far back to the system, where the C library can (glibc's
    `malloc_trim`). numpy's arrays of a few MB, made and freed chunk after chunk, are
    kept by the allocator once a larger one was freed (its threshold for giving memory
    straight back moves up), and a build's peak RSS then held 40 MB of them at 100,000
    memories."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any | None:
    """glibc's `malloc_trim`; None elsewhere (macOS, musl; Windows, where `CDLL(None)` is
    a TypeError)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):
        return None


def _keys(np: Any, segments: Any, terms: Any) -> Any:
    """`memory << 35 | term << 3 | field` of each of a chunk's terms (`segments`: memory *
    _WIDTH + field, the memory counted in the chunk)."""
    memory, field = np.divmod(segments, _WIDTH)
    return memory << 35 | terms.astype(np.int64) << 3 | field
