"""The in-memory index and its scoring: the search hot path.

Terms come from `tokens.tokenize`: Porter2-stemmed English words (stop words
and question frames such as "how many" dropped) and, for CJK text, character
bigrams plus single characters marked `~`. Each field of a memory is
tokenized on its own; the fields and their weights w_f fall in the order of
DESIGN.md §4:

    description 2.0, aliases 1.8, name 1.6, summary 1.4, tags 1.3, filename 1.1, body 1.0

The filename field is the last part of the id with `_` and `-` read as spaces
and a leading category prefix dropped (`user_cat_zh` gives "cat zh"): the
prefix repeats the category, which is a filter, not a topic. The body counts
up to its first 20,000 characters.

Scoring is BM25F (Robertson & Zaragoza, "The Probabilistic Relevance
Framework", 2009) with one saturation over the weighted fields. For a term t
and a memory d with field lengths len_f (in terms) and corpus averages avg_f:

    tf'(t, d) = sum over fields f of  w_f * tf_f(t, d) / (1 - b_f + b_f * len_f / avg_f)
    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    bm25(t,d) = idf(t) * tf' / (k1 + tf')          k1 = 0.7

with b = 0.2 for description and summary, 0.3 for body and 0.1 for the short
fields (aliases, name, tags, filename). Length normalisation is weak on
purpose: a memory is a short note, and a longer one usually covers more (the
"scope" reading of length, Robertson & Walker 1994) rather than repeating
itself (the "verbosity" reading that b near 1 assumes), so a short memory
holding one query word must not outrank a longer one holding them all on its
brevity alone. Classic values (b 0.5-0.75, k1 0.9) lost 0.007 of R@5 on
locomo-dev and 0.008 on cmrc-sent; no normalisation at all (b 0) lost more.

A query's score for d adds up, over its distinct terms and its distinct
adjacent word pairs:

    score(q, d) = sum over terms t of q_t * bm25(t, d)
                + 0.3 * sum over pairs p of bm25(p, d)

where q_t is 1 for words and CJK bigrams and 0.25 for a CJK single character
(enough for a one-character query to find "用户的猫叫芝麻" without letting
characters outvote bigrams: at 0.3 or 0.6, which score better on cmrc-sent,
a mixed query such as "flaky 测试" ranks the memories holding 测试 above the
one it names). `tokens.loose_terms` adds query terms or sets their q_t: a
name inside the question 1.5 (a capitalised word not starting a sentence:
the question is about that person), a doubled Chinese character's unigram
1.0 ("狗狗" for 狗), a Chinese skip bigram 0.4 ("打篮球" for 打球), a verb and
its particle joined 1.0 ("log in" for "login") and a word split into its
verb and particle 0.3 ("login" for "log"). The pair part is a small proximity bonus after
Metzler & Croft's sequential dependence model (2005): `word_pairs` turns two
word terms next to each other, once stop words are dropped, into one term
("support group", which "support groups" meets too), indexed like any other
term with its own document frequency, so a phrase rare in the folder counts
more. CJK text needs no pairs: its bigrams already are adjacency.

The score is then multiplied by trust, 0.8 + 0.4 * trust (neutral at the
default 0.5), and, when a half-life is set, by recency of `updated`,
0.7 + 0.3 * 0.5 ** (age_days / half_life), and, when the query names a time
("10 days ago", 上个月: `timewords.read_time`, against the query's `now`), by
1 + DATE_BOOST for a memory dated inside one of its windows (its `updated`
day or a date its text writes), 1 + DATE_BOOST / 2 for one near it; a
relative phrase's words then weigh TIME_WORD_WEIGHT (`Index._dated`, and
docs/retrieval.md "Search by when"). Ties order by id, so equal scores
always list in the same order.

Tuning (`benchmarks/retrieval.py --grid`, on LoCoMo conversations 0-2 and
checked on 3-4) found a flat optimum: over k1 0.5-1.6, description weight 1-3
and pair weight 0.15-0.45, R@5 and MRR@10 stay within 0.03 of each other on
either half; the constants above sit inside that plateau, not on its best
corner. Without pairs, R@5 drops by about 0.02 on the check half. A coverage bonus
(for matching more distinct query terms), unordered or wider pair windows,
strict adjacency across stop words, pseudo-relevance feedback and typo
correction were tried and left out: none helped both halves.

Length averages: avg_f is the mean length of field f over all memories,
rounded to a 1/32-octave grid (a step of 2.2 %; a mean under 1 counts as 1).
The rounding changes scores by well under one percent (retrieval figures are
unchanged to three decimals), and it makes a fresh build a pure function of
the folder that a cached index can match exactly: one loaded from the
on-disk cache and brought up to date re-weights its postings only if the
changes moved an average across a grid step (`reweigh`). A live index (the
watcher's) re-weighs when the number of memories has drifted by a tenth
since the last time, as before; in between, a changed memory is weighed
with the averages of the last re-weighing.

Cost: the saturated weight of each (term, memory) is computed when the memory
is indexed and kept in the postings, so a query never reads a file or looks
at a memory that shares no term with it. A memory has a number (its place in
the index); a term's postings are two flat arrays, memory numbers (int32,
ascending) and weights (float32), about 8 bytes a posting, where Python
dicts took some 80. Postings are walked from the term of highest possible
contribution to the lowest, with a threshold primed from real scores: a
memory that cannot reach it is never taken or is dropped, and once no unseen
memory could still reach the top each candidate is looked up (by bisection)
in the lists left until it is out (exact pruning; see `Index._accumulate`).
A long query (a pasted page) is first cut to its rarest terms, pairs and
loose terms (MAX_QUERY_TERMS, MAX_QUERY_PAIRS, MAX_QUERY_LOOSE); a hook's
search is then bounded by the postings it reads (`max_postings`,
`_within_postings`), for those few terms can still be long lists in a large folder.

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

import gc
import heapq
import math
import threading
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import accumulate, compress, filterfalse, repeat
from operator import add, eq, itemgetter, lshift, mul, not_, or_
from typing import Any, BinaryIO, NamedTuple, Protocol, TypeVar

from ..memory.value import CATEGORIES, Memory, parse_moment
from .timewords import TimeQuery, any_stamp_within, date_terms, read_time, stamp_day
from .tokens import _CJK_RUN, is_unigram, loose_terms, tokenize, tokenize_counted

FIELD_WEIGHTS: dict[str, float] = {
    "description": 2.0,
    "aliases": 1.8,
    "name": 1.6,
    "summary": 1.4,
    "tags": 1.3,
    "filename": 1.1,
    "body": 1.0,
}
FIELD_B: dict[str, float] = {
    "description": 0.2,
    "aliases": 0.1,
    "name": 0.1,
    "summary": 0.2,
    "tags": 0.1,
    "filename": 0.1,
    "body": 0.3,
}
FIELDS = tuple(FIELD_WEIGHTS)
K1 = 0.7
UNIGRAM_QUERY_WEIGHT = 0.25
PAIR_WEIGHT = 0.3
MAX_BODY_CHARS = 20_000
AVERAGE_STEPS = 32
# Postings this short are walked without first asking whether they could matter.
_SHORT_LIST = 64
# A long prompt is scored on its most telling terms only (highest idf): the work per
# query stays bounded (a pasted page holds hundreds of terms) and so does its tail.
MAX_QUERY_TERMS = 32
MAX_QUERY_PAIRS = 16
# And on its rarest loose terms (`tokens.loose_terms`: a pasted Chinese page gives a
# skip bigram for nearly every three characters). No question of the dev sets has more.
MAX_QUERY_LOOSE = 32
# A memory dated inside a window the query names (`timewords.read_time`) scores this much
# more (1 + DATE_BOOST), one dated near it half that.
DATE_BOOST = 0.75
# What a relative time phrase's own words weigh once the phrase became a window.
TIME_WORD_WEIGHT = 0.5

_T = TypeVar("_T")
_K = TypeVar("_K")

def term_idf(df: int, total: int) -> float:
    """idf(t) of the module docstring: a term `df` of `total` memories hold."""
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def unique_idf(total: int) -> float:
    """The idf of a term one memory of `total` holds: what one rare query term weighs in
    that folder, its scores' scale (the hook's relevance floor, the merge of folders)."""
    return term_idf(1, max(total, 1))


@dataclass(frozen=True)
class Scoring:
    """The constants of the ranking formula (see the module docstring)."""

    k1: float = K1
    field_weights: Mapping[str, float] = field(default_factory=lambda: dict(FIELD_WEIGHTS))
    field_b: Mapping[str, float] = field(default_factory=lambda: dict(FIELD_B))
    unigram_weight: float = UNIGRAM_QUERY_WEIGHT
    pair_weight: float = PAIR_WEIGHT


@dataclass(frozen=True)
class Hit:
    """One search result: compact, never the body."""

    id: str
    score: float
    description: str
    category: str | None
    trust: float
    updated: str | None
    summary: str | None = None
    project: str | None = None
    tags: tuple[str, ...] = ()
    matched: float = 0.0
    folder: str | None = None  # the folder's name, when several are read at once (folders/)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "id": self.id,
            "score": self.score,
            "description": self.description,
            "category": self.category,
            "trust": self.trust,
            "updated": self.updated,
            "summary": self.summary,
            "project": self.project,
            "tags": list(self.tags),
            "matched": self.matched,
        }
        if self.folder is not None:
            data["folder"] = self.folder
        return data


def memory_fields(memory: Memory) -> dict[str, list[str]]:
    """The terms of each indexed field of a memory, in text order."""
    return {name: terms for name, (terms, _) in counted_fields(memory).items()}


def counted_fields(memory: Memory) -> dict[str, tuple[list[str], int]]:
    """The terms of each indexed field of a memory, in text order, and its length in tokens."""
    leaf = memory.id.rsplit("/", 1)[-1]
    head, _, rest = leaf.partition("_")
    if rest and head.lower() in CATEGORIES:
        # `user_cat`: the prefix repeats the category, a filter rather than a topic,
        # and would let every "user ..." question match every user memory.
        leaf = rest
    return {
        "description": tokenize_counted(memory.description),
        "aliases": tokenize_counted(" ; ".join(memory.aliases)),
        "name": tokenize_counted(memory.name or ""),
        "summary": tokenize_counted(memory.summary or ""),
        "tags": tokenize_counted(" ; ".join(memory.tags)),
        "filename": tokenize_counted(leaf.replace("_", " ").replace("-", " ")),
        "body": tokenize_counted(memory.body[:MAX_BODY_CHARS]),
    }


def word_pairs(terms: Sequence[str], distinct: AbstractSet[str] | None = None) -> list[str]:
    """Adjacent word terms as `"first second"` pair terms (no term contains a space).

    `distinct` is `set(terms)` when the caller has it.
    """
    if len(terms) < 2:
        return []
    if distinct is None:
        distinct = set(terms)
    if "".join(distinct).isascii():
        latin = distinct  # a CJK term is never ASCII (nor is `~` and a CJK character)
    else:
        # An ASCII term is a word; a term of other letters ("café") is a word unless it
        # starts with `~` (a unigram) or a CJK character (a bigram). (A regex class of
        # `~` and the CJK ranges would take 10 ms to compile, in every hook process.)
        latin = set(filter(str.isascii, distinct))
        others = list(filterfalse(latin.__contains__, distinct))
        rest = "".join(others).replace("~", "")
        if not (rest and _CJK_RUN.fullmatch(rest)):
            # Not only CJK bigrams and unigrams (their text, without the `~`, is all CJK).
            others = [term for term in others if term[0] != "~"]
            latin.update(filterfalse(_CJK_RUN.match, others))
        if len(latin) < 2:
            return []  # a pair joins two different words: none in a Chinese text
    following = terms[1:]
    if len(latin) == len(distinct) and not any(map(eq, terms, following)):
        # Only words, none repeated in place (the common case): no test per pair.
        return list(map(" ".join, zip(terms, following, strict=False)))
    return [
        first + " " + second
        for first, second in zip(terms, following, strict=False)
        if first != second and first in latin and second in latin
    ]


def snap_average(total: float, count: int) -> float:
    """A field's mean length on the 1/32-octave grid of the module docstring."""
    value = max(1.0, total / max(1, count))
    return 2.0 ** (round(math.log2(value) * AVERAGE_STEPS) / AVERAGE_STEPS)


def field_counts(
    memory: Memory, pair_weight: float
) -> tuple[list[Counter[str]], tuple[int, ...]]:
    """Term counts of each field (word pairs too, with a pair weight) and field lengths,
    in FIELDS order."""
    counts: list[Counter[str]] = []
    lengths: list[int] = []
    for terms, length in counted_fields(memory).values():
        counted = Counter(terms)
        lengths.append(length)
        if pair_weight and len(terms) > 1:
            counted.update(word_pairs(terms))
        counts.append(counted)
    return counts, tuple(lengths)


def weigh(
    counts: Sequence[Mapping[_K, int]], lengths: Sequence[int], scoring: Scoring,
    averages: Mapping[str, float],
) -> dict[_K, float]:
    """The saturated weight of each term of a memory (the same arithmetic everywhere).

    Its terms in order of first appearance, field after field: a build's terms
    are numbered in that order (`Builder`), which the cache's ties follow.
    """
    weights, b, k1 = scoring.field_weights, scoring.field_b, scoring.k1
    weighted: dict[_K, float] = {}
    for name, counted, length in zip(FIELDS, counts, lengths, strict=True):
        if not length or not weights.get(name):
            continue
        norm = weights[name] / (1.0 - b[name] + b[name] * length / averages[name])
        if not weighted:
            weighted = {term: count * norm for term, count in counted.items()}
            continue
        common = counted.keys() & weighted.keys()
        for term in common:
            weighted[term] += counted[term] * norm
        if len(common) < len(counted):
            weighted.update(
                {term: count * norm for term, count in counted.items() if term not in common}
            )
    return {term: tf / (k1 + tf) for term, tf in weighted.items()}


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


class PackedIds:
    """A cache's memory ids as it stores them: their UTF-8 end to end, where each starts,
    and their numbers in id order; an id is decoded when asked for, found by bisection."""

    __slots__ = ("_blob", "_order", "_starts")

    def __init__(self, blob: bytes, starts: Sequence[int], order: Sequence[int]) -> None:
        self._blob, self._starts, self._order = blob, starts, order

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, number: int) -> str:
        starts = self._starts
        return self._blob[starts[number] : starts[number + 1]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return map(self.__getitem__, range(len(self)))

    def _encoded(self, number: int) -> bytes:
        return self._blob[self._starts[number] : self._starts[number + 1]]

    def find(self, memory_id: str) -> int | None:
        """The number of `memory_id`, or None. UTF-8 orders bytes as str orders text."""
        key = memory_id.encode("utf-8", "surrogatepass")
        order = self._order
        at = bisect_left(order, key, key=self._encoded)
        if at < len(order) and self._encoded(order[at]) == key:
            return order[at]
        return None


def packed_ids(ids: Iterable[str]) -> tuple[bytes, array, array]:
    """What `PackedIds` reads: the ids' UTF-8 joined, where each starts (uint32, one more
    than the ids), and their numbers in id order (uint32)."""
    encoded = [key.encode("utf-8", "surrogatepass") for key in ids]
    starts = array("I", accumulate(map(len, encoded), initial=0))
    order = array("I", sorted(range(len(encoded)), key=encoded.__getitem__))
    return b"".join(encoded), starts, order


class _IdsByNumber:
    """Memory ids by number, as `Index._ids` holds them, for an index on a cache: the cache's
    (`PackedIds`, decoded one at a time), then those numbered since; None for one retired."""

    __slots__ = ("added", "base", "count", "gone", "retired")

    def __init__(self, base: PackedIds) -> None:
        self.base = base
        self.count = len(base)
        self.retired = bytearray(self.count)
        self.gone = 0  # how many of the cache's are retired
        self.added: list[str | None] = []

    def __len__(self) -> int:
        return self.count + len(self.added)

    def __getitem__(self, number: int) -> str | None:
        if number < self.count:
            return None if self.retired[number] else self.base[number]
        return self.added[number - self.count]

    def __setitem__(self, number: int, value: str | None) -> None:
        if value is not None:
            raise ValueError("a memory number is only ever retired")
        if number >= self.count:
            self.added[number - self.count] = None
        elif not self.retired[number]:
            self.retired[number] = 1
            self.gone += 1

    def append(self, memory_id: str | None) -> None:
        self.added.append(memory_id)

    def __iter__(self) -> Iterator[str | None]:
        for number in range(self.count):
            yield self[number]
        yield from self.added


class _NumbersById(MutableMapping[str, int]):
    """The live ids' numbers, as `Index._number` holds them, over `_IdsByNumber`: the cache's
    found by bisection, those numbered since in a dict; iterated as a dict would be (the
    cache's in number order, then the others as they were numbered)."""

    def __init__(self, ids: _IdsByNumber) -> None:
        self.ids = ids
        self.added: dict[str, int] = {}

    def get(self, memory_id: str, default: Any = None) -> Any:
        number = self.added.get(memory_id)
        if number is not None:
            return number
        ids = self.ids
        number = ids.base.find(memory_id) if isinstance(memory_id, str) else None
        return default if number is None or ids.retired[number] else number

    def __getitem__(self, memory_id: str) -> int:
        number = self.get(memory_id)
        if number is None:
            raise KeyError(memory_id)
        return number

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self.get(memory_id) is not None

    def __setitem__(self, memory_id: str, number: int) -> None:
        if number < self.ids.count or memory_id in self:
            raise ValueError("only a new number is given, to an id not live")
        self.added[memory_id] = number

    def __delitem__(self, memory_id: str) -> None:
        if self.added.pop(memory_id, None) is None:
            self.ids[self[memory_id]] = None

    def __len__(self) -> int:
        return self.ids.count - self.ids.gone + len(self.added)

    def __iter__(self) -> Iterator[str]:
        ids = self.ids
        base, retired = ids.base, ids.retired
        for number in range(ids.count):
            if not retired[number]:
                yield base[number]
        yield from self.added


class BackingError(Exception):
    """Raised by a Backing whose data turned out damaged (the index rebuilds: see `recover`)."""


class Backing(Protocol):
    """The base of an index loaded from the on-disk cache, read from the file as needed.

    Memories 0 .. n-1 of the index are the cache's n memories, in its order.
    """

    def postings(self, term: str) -> tuple[Sequence[int], Sequence[float], float] | None:
        """`term`'s memory numbers (ascending) and weights, with the largest weight; or None."""

    def count(self, term: str) -> int:
        """How many memories `term`'s postings hold (0: none), without reading them."""

    def estimated_counts(self, terms: list[str]) -> list[int]:
        """`count` of each term, cheaply: exact for a term held; for one not held 0, or
        rarely another term's count (a caller checks with `count` the terms it keeps)."""

    def terms(self) -> Iterable[tuple[str, Sequence[int], Sequence[float], float]]:
        """Every term the cache holds, as `postings` gives it, in file order."""

    def memory(self, number: int) -> Memory:
        """A memory the cache holds."""

    def lengths(self, number: int) -> tuple[int, ...]:
        """A memory's field lengths (in terms, in FIELDS order)."""


@dataclass
class Columns:
    """One value per memory, in index order: what a loaded index starts from."""

    ids: list[str] | PackedIds
    trusts: list[float]
    updated: list[str | None]
    archived: list[bool]
    categories: list[str | None]
    projects: list[str | None]
    averages: dict[str, float]
    length_sums: dict[str, int]
    max_boost: float


Terms = tuple[list[str], Sequence[Sequence[int]], Sequence[Sequence[float]], list[float]]
"""Terms, and for each its memory numbers, weights and largest weight: four columns."""


@dataclass
class Export:
    """An index as the on-disk cache stores it: its live memories numbered 0, 1, ... in order.

    `numbers` are the index's own numbers of those memories (ascending);
    `lengths` their field lengths, row after row; `postings` the terms, and
    for each the new numbers (ascending), the weights and the largest weight,
    as four columns; `memory` gives a memory by the index's number. All of it
    is taken under the index's lock: later changes to the index do not reach it.
    """

    columns: Columns
    numbers: list[int]
    lengths: list[int]
    base: Backing | None
    base_count: int
    memory: Callable[[int], Memory]
    postings: Terms


class Packed(NamedTuple):
    """A build's index, compact: every term's postings in two flat arrays (see `Builder`).

    Term `t` (numbered in order of first appearance) holds the postings
    `starts[t]` to `starts[t + 1]` of `slots` (memory numbers, ascending) and
    `weights`; memory `n` the field lengths `lengths[n * len(FIELDS):]`.
    """

    columns: Columns
    lengths: array
    terms: list[str]
    starts: array
    slots: array
    weights: array


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


class Index:
    """Postings over every memory's fields, with filters and BM25F scoring."""

    def __init__(
        self,
        *,
        half_life_days: float | None = None,
        scoring: Scoring | None = None,
        recover: Callable[[], Iterable[Memory]] | None = None,
        date_boost: float = DATE_BOOST,
        time_word_weight: float = TIME_WORD_WEIGHT,
    ) -> None:
        self.half_life_days = half_life_days
        self.scoring = scoring or Scoring()
        # 0 reads no time words: a query's words are all its terms (benchmarks compare).
        self.date_boost = date_boost
        self.time_word_weight = time_word_weight
        self._lock = threading.RLock()
        # Called when the backing turns out damaged: every memory, read again from the files.
        self.recover = recover
        self._reset()

    def _reset(self) -> None:
        # Per memory number (a changed memory gets a new one; the old is retired: id None).
        self._ids: list[str | None] | _IdsByNumber = []
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
        self._number: dict[str, int] | _NumbersById = {}
        self._memories: dict[str, Memory] = {}
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

    def memories(self) -> list[Memory]:
        """Every indexed memory, sorted by id."""
        return self._guarded(lambda: [self._memory(key) for key in sorted(self._number)])

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

    def _counts(self, memory: Memory) -> tuple[list[Counter[str]], tuple[int, ...]]:
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

    def _weigh(self, counts: list[Counter[str]], lengths: tuple[int, ...]) -> dict[str, float]:
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
                    found = _as_array("i", found) + moved_held(extra[0])
                    weights = _as_array("f", weights) + extra[1]
                    top = max(top, self._held_top(term, extra[1]))
                if len(found):
                    out_terms.append(term)
                    _extend(slots, found)
                    _extend(weighed, weights)
                    bounds.append(len(slots))
                    out_tops.append(top)
            for term, (held_found, held_weights) in held.items():
                if term not in done:
                    out_terms.append(term)
                    _extend(slots, moved_held(held_found))
                    _extend(weighed, held_weights)
                    bounds.append(len(slots))
                    out_tops.append(max(held_weights))
            return (out_terms, _Slices(slots, bounds), _Slices(weighed, bounds), out_tops)

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
            index._ids = _IdsByNumber(ids)
            index._number = _NumbersById(index._ids)
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

    # searching

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        category: str | Sequence[str] | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        archived: bool = False,
        now: datetime | None = None,
        max_postings: int | None = None,
    ) -> list[Hit]:
        """Ranked hits for `query` among memories that pass the filters.

        `now` is the query's date (default: the current time): the time words it
        names ("10 days ago", 上个月) are read against it (`timewords.read_time`).
        `max_postings` bounds the postings the search reads (`_within_postings`):
        a hook's search, whatever the prompt and the folder's size.
        """
        if limit <= 0:
            return []
        offset = max(0, offset)
        time = read_time(query, now) if self.date_boost else TimeQuery((), query)
        plain = self._query_terms(query)
        if plain is None:
            return []
        # Without its relative phrases ("10 days ago", 上周), when the query has more words.
        reworded = self._query_terms(time.text, time) if time.text is not query else None

        def search() -> list[Hit]:
            self._settle()
            factor = self._factor(now, archived)
            bound = self._max_boost
            chosen = plain
            dated = self._dated(factor, time) if time.windows else None
            if dated is not None:
                # Some memory is dated in or near a window: the dates, not the words, say when.
                factor, bound = dated
                chosen = reworded or plain
            telling = self._most_telling(*chosen)
            if max_postings is not None:
                telling = self._within_postings(*telling, max_postings)
            weighted = self._query_weights(*telling)
            if not weighted:
                return []
            passes = self._filter(category, project, tags, archived)
            raw = self._accumulate(weighted, offset + limit, passes, factor, bound)
            if passes is None:
                scores = dict(zip(raw, map(mul, raw.values(), map(factor, raw)), strict=True))
            else:
                scores = {key: value * factor(key) for key, value in raw.items() if passes(key)}
            best = _top(scores, offset + limit, self._ids)[offset:]
            matched = _matched([key for key, _ in best], weighted)
            return [self._hit(key, score, matched[key]) for key, score in best]

        return self._guarded(search)

    def _query_terms(
        self, text: str, time: TimeQuery | None = None
    ) -> tuple[list[str], list[str], dict[str, float]] | None:
        """The terms, pairs and loose terms of a query's `text`; None when it has no terms.

        With `time`, `text` is the query without its relative phrases, whose own
        words then weigh `time_word_weight`: a memory may say "3 years ago" too, but
        "ago", "weeks" and "last" mostly match the wrong memories' words.
        """
        sequence = tokenize(text)
        terms = list(dict.fromkeys(sequence))
        if not terms:
            return None
        known = set(terms)
        pairs = list(dict.fromkeys(word_pairs(sequence, known))) if self.scoring.pair_weight else []
        loose = dict(loose_terms(text, known))
        if time is not None and self.time_word_weight:
            for window in time.windows:
                if window.relative:
                    for term in tokenize(window.phrase):
                        if term not in known:
                            loose.setdefault(term, self.time_word_weight)
        return terms, pairs, loose

    def _most_telling(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float]
    ) -> tuple[list[str], list[str], Mapping[str, float]]:
        """The query's MAX_QUERY_TERMS terms, MAX_QUERY_PAIRS pairs and MAX_QUERY_LOOSE
        loose terms (those it does not hold already) of highest idf.

        Only a long query (a pasted page) has more; each term then costs a
        document-frequency look-up (no postings read), and the rarest are kept,
        in query order (the earlier one on a tie). A loose weight of a term
        kept stays.
        """
        if len(terms) > MAX_QUERY_TERMS or len(pairs) > MAX_QUERY_PAIRS:
            terms = self._rarest(terms, MAX_QUERY_TERMS)
            pairs = self._rarest(pairs, MAX_QUERY_PAIRS)
        known = set(terms)
        extra = list(filterfalse(known.__contains__, loose))
        if len(extra) > MAX_QUERY_LOOSE:
            # The weights of the terms the query holds (a unigram's, a name's) stay; the
            # others kept follow in query order, which is all `_query_weights` reads.
            rarest = self._rarest(extra, MAX_QUERY_LOOSE)
            held_weights = {term: loose[term] for term in known.intersection(loose)}
            loose = held_weights | dict(zip(rarest, map(loose.__getitem__, rarest), strict=True))
        return terms, pairs, loose

    def _rarest(self, candidates: list[str], cap: int) -> list[str]:
        """The `cap` candidates held by the fewest memories (and by some), in query order.

        Document frequencies of a cached index come from the cache's counts
        (one bisection a term, `Backing.estimated_counts`), which may credit
        a term it does not hold with another's count: each term kept is
        checked (`count`, the look-up its postings need anyway) and one not
        held is passed over. Held postings (memories changed since) count too.
        """
        if len(candidates) <= cap:
            return candidates
        backing, held, gone = self._backing, self._postings, self._gone
        counts = [0] * len(candidates) if backing is None else backing.estimated_counts(candidates)
        # Each (document frequency, place) as one int, df << bits | place: sorted as ints
        # (a sort of tuples took 0.3 ms for a pasted page's 2,000 terms).
        bits = len(candidates).bit_length()
        found: list[int]
        if backing is not None and not gone and held.keys().isdisjoint(candidates):
            # Only the cache's counts (no memory changed holds these terms): in C.
            found = list(compress(map(or_, map(lshift, counts, repeat(bits)),
                                      range(len(counts))), counts))
        else:
            found = []
            for number, (term, df) in enumerate(zip(candidates, counts, strict=True)):
                mine = held.get(term)
                if mine is not None:
                    # Exact, for the check below passes a held term over.
                    df = len(mine[0]) + (0 if backing is None else backing.count(term))
                if df and gone:
                    df -= gone.get(term, 0)
                if df > 0:
                    found.append(df << bits | number)
        found.sort()  # the lowest document frequency is the highest idf, then query order
        mask = (1 << bits) - 1
        kept: list[int] = []
        for code in found:
            if len(kept) >= cap:
                break
            number = code & mask
            term = candidates[number]
            # Only a count from the cache may be another term's; a held term's is its own.
            if backing is None or term in held or backing.count(term) > 0:
                kept.append(number)
        kept.sort()
        return list(map(candidates.__getitem__, kept))

    def _within_postings(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float], budget: int
    ) -> tuple[list[str], list[str], Mapping[str, float]]:
        """The query's terms, pairs and loose terms whose postings, together, are at most
        `budget`: taken from the fewest postings (the highest idf) up, until the next would
        pass it; kept in query order.

        The term cap (`_most_telling`) bounds the number of terms, not their length: a
        pasted page's 32 rarest terms can still be common words of a large folder, each a
        list of tens of thousands of postings, and scoring walks them in Python (a hook's
        search past its 300 ms wait at 100,000 memories). A query whose postings fit is
        unchanged. A term's size is what its search would read: the cache's postings
        (retired ones included) and those held in memory, counted without reading them.
        Dropping a term changes no other term's weight (each idf is its own).
        """
        known = set(terms)
        candidates = terms + [term for term in loose if term not in known] + pairs
        backing, held = self._backing, self._postings
        sizes = [0 if backing is None else backing.count(term) for term in candidates]
        for at, term in enumerate(candidates):
            mine = held.get(term)
            if mine is not None:
                sizes[at] += len(mine[0])
        if sum(sizes) <= budget:
            return terms, pairs, loose
        kept: set[str] = set()
        spent = 0
        for at in sorted(range(len(candidates)), key=sizes.__getitem__):  # stable: query order
            spent += sizes[at]
            if spent > budget:
                break  # every later term is at least as long
            kept.add(candidates[at])
        return ([term for term in terms if term in kept], [pair for pair in pairs if pair in kept],
                {term: weight for term, weight in loose.items() if term in kept})

    def _query_weights(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float] | None = None
    ) -> list[_Weighted]:
        """Postings, query weight * idf, and idf of each query term and pair found.

        `loose` (from `tokens.loose_terms`) adds terms, or sets the weight of one
        the query holds already.
        """
        scoring = self.scoring
        total = len(self._number)
        backing, held, gone = self._backing, self._postings, self._gone
        loose = loose or {}
        out = []
        known = set(terms)
        for term in terms + [term for term in loose if term not in known] + pairs:
            parts: list[tuple[Sequence[int], Sequence[float]]] = []
            df = 0
            top = 0.0
            if backing is not None:
                found = backing.postings(term)
                if found is not None:
                    parts.append(found[:2])
                    df += len(found[0]) - gone.get(term, 0)
                    top = found[2]
            mine = held.get(term)
            if mine is not None:
                parts.append(mine)
                df += len(mine[0])
                top = max(top, self._held_top(term, mine[1]))
            if df <= 0:
                continue
            idf = term_idf(df, total)
            is_pair = " " in term
            if term in loose:
                factor = loose[term]
            elif is_pair:
                factor = scoring.pair_weight
            elif is_unigram(term):
                factor = scoring.unigram_weight
            else:
                factor = 1.0
            weight = idf * factor
            size = sum(len(part[0]) for part in parts)
            out.append(_Weighted(parts, size, weight, idf, is_pair, weight * top))
        return out

    def _held_top(self, term: str, weights: Sequence[float]) -> float:
        """The largest weight of a term's postings held in memory (a bound, after removals)."""
        top = self._tops.get(term)
        if top is None:
            top = self._tops[term] = max(weights)
        return top

    def _filter(
        self,
        category: str | Sequence[str] | None,
        project: str | None,
        tags: Sequence[str] | None,
        archived: bool,
    ) -> Callable[[int], bool] | None:
        """A test of a memory number for the filters, or None when there are none.

        Archived and retired memories need no test: their factor is 0 (`_factor`).
        """
        categories = {category} if isinstance(category, str) else set(category or ())
        categories = {c.lower() for c in categories if c}
        wanted_tags = {t.lower() for t in tags or () if t}
        if not categories and project is None and not wanted_tags:
            return None
        ids, of_category, of_project = self._ids, self._categories, self._projects

        def accept(number: int) -> bool:
            memory_id = ids[number]
            if memory_id is None:
                return False
            if categories and of_category[number] not in categories:
                return False
            if project is not None and of_project[number] not in (None, project):
                return False
            if wanted_tags and not wanted_tags <= {t.lower() for t in self._memory(memory_id).tags}:
                return False
            return True

        return accept

    def _factor(self, now: datetime | None, archived: bool) -> Callable[[int], float]:
        """Trust (and, with a half-life, recency) factor of a memory number; 0 for one hidden."""
        boost = self._boost if archived else self._shown
        if not self.half_life_days:
            return boost.__getitem__
        moment = (now or datetime.now(UTC)).timestamp()
        half_life = float(self.half_life_days) * 86400.0
        moments, stamps = self._moments, self._updated

        def factor(number: int) -> float:
            if number in moments:
                updated = moments[number]
            else:
                parsed = parse_moment(stamps[number])
                updated = moments[number] = parsed.timestamp() if parsed is not None else None
            if updated is None:
                return boost[number]
            age = max(0.0, moment - updated)
            return boost[number] * (0.7 + 0.3 * 0.5 ** (age / half_life))

        return factor

    def _dated(
        self, factor: Callable[[int], float], time: TimeQuery
    ) -> tuple[Callable[[int], float], float] | None:
        """`factor` times 1 + DATE_BOOST for a memory dated in one of the query's windows
        (half that near one), and the new bound of every factor; None when no memory is
        dated in or near any window (the time words then say nothing of these memories).

        A memory is dated by its `updated` day and by the dates its text writes
        (their index terms, `timewords.date_terms`: a dream writes "(2026-11-24)"
        beside "yesterday"), whichever is closer.
        """
        written: dict[int, float] = {}
        for window in time.windows:
            for wanted in date_terms(window):
                holders = self._holders(wanted.terms)
                if wanted.confirm and holders:
                    holders &= self._holders(wanted.confirm)
                for number in holders:
                    if written.get(number, 0.0) < wanted.closeness:
                        written[number] = wanted.closeness
        stamps, boost = self._updated, self.date_boost
        if not written and not any_stamp_within(stamps, time):
            return None
        memo: dict[int, float] = {}

        def dated(number: int) -> float:
            found = memo.get(number)
            if found is None:
                closeness = written.get(number, 0.0)
                if closeness < 1.0:
                    day = stamp_day(stamps[number])
                    if day is not None:
                        closeness = max(closeness, time.closeness(day))
                found = memo[number] = 1.0 + boost * closeness
            return factor(number) * found

        return dated, self._max_boost * (1.0 + boost)

    def _holders(self, terms: Iterable[str]) -> set[int]:
        """The numbers of the memories holding any of `terms` (retired ones too: factor 0)."""
        backing, held = self._backing, self._postings
        out: set[int] = set()
        for term in terms:
            if backing is not None:
                found = backing.postings(term)
                if found is not None:
                    out.update(found[0])
            mine = held.get(term)
            if mine is not None:
                out.update(mine[0])
        return out

    def _accumulate(
        self,
        weighted: list[_Weighted],
        count: int,
        passes: Callable[[int], bool] | None,
        factor: Callable[[int], float],
        bound: float | None = None,
    ) -> dict[int, float]:
        """Raw scores of every memory that can reach the top `count`, exactly.

        Terms go from the highest possible contribution (their `ceiling`:
        weight times the largest saturated tf in the term's postings, kept
        with the postings) to the lowest, which puts the long postings of
        common words last: the MaxScore idea (Turtle & Flood, 1995). `theta`
        is a lower bound of the `count`-th best final score: before a long
        list, the `count` best candidates so far are scored in full, by
        bisection in every list still to come, and the `count`-th of those
        real final scores is the bound. With it, exactly:

        - a memory not seen yet can reach the top only through the lists
          still to come, so once the sum of their ceilings, times the largest
          trust factor, is below `theta`, no new memory is taken: the long
          lists are then only looked up for the candidates (`_look_up`);
        - before that, a memory first met in a list is taken only if its
          weight there plus the later lists' ceilings, times its own factor,
          reaches `theta` (`_admit`, tests in C);
        - before each long list, a candidate whose score plus every ceiling
          to come, times its factor, stays below `theta` is dropped
          (`_reaching`).

        A memory's contributions are added in the lists' order whatever is
        pruned, so every score kept equals an exhaustive sum's to the last
        bit (`tests/test_pruning.py`); the bounds keep a margin of 1e-9 for
        the rounding of the sums of ceilings.
        """
        ordered = sorted(weighted, key=lambda item: item.ceiling, reverse=True)
        after = [0.0] * (len(ordered) + 1)  # after[i]: the ceilings of lists i, i + 1, ...
        for at in range(len(ordered) - 1, -1, -1):
            after[at] = after[at + 1] + ordered[at].ceiling
        boost = self._max_boost if bound is None else bound
        scores: dict[int, float] = {}
        theta = 0.0
        full: dict[int, float] = {}  # raw scores summed over every list, by priming
        primed_at = -1  # how many candidates there were when theta was last primed
        for at, item in enumerate(ordered):
            weight = item.weight
            if item.size > _SHORT_LIST and len(scores) >= count and _prune_due(len(scores),
                                                                                primed_at):
                if len(scores) != primed_at:
                    theta = max(theta, _primed(scores, count, ordered, at, passes, factor, full))
                if theta > 0.0:
                    scores = _reaching(scores, after[at], theta, factor)
                primed_at = len(scores)
            if theta > 0.0 and after[at] * boost < theta - _MARGIN:
                # No memory not seen yet can reach the top: the candidates only, each
                # through the lists left until it is done or out.
                return _finish(scores, ordered[at:], after[at:], theta, count, passes, factor,
                               full)
            # A memory first met here needs at least this weight in this list (factor <= boost).
            least = (theta / boost - after[at + 1] - _MARGIN) / weight if theta > 0 < weight else 0
            for numbers, weights in item.parts:
                if least > 0.0:
                    if scores:
                        _look_up(scores, numbers, weights, weight)
                    _admit(scores, numbers, weights, weight, least, after[at + 1], theta, factor)
                elif not scores:
                    scores = dict(zip(numbers, map(weight.__mul__, weights), strict=True))
                else:
                    # In C but for the memories already scored (a + b == b + a exactly).
                    added = dict(zip(numbers, map(weight.__mul__, weights), strict=True))
                    for key in added.keys() & scores.keys():
                        added[key] += scores[key]
                    scores.update(added)
        return scores

    def _hit(self, number: int, score: float, matched: float) -> Hit:
        memory = self._memory(self._ids[number])  # type: ignore[arg-type]
        return Hit(
            id=memory.id,
            score=round(score, 4),
            description=memory.description,
            category=memory.category,
            trust=memory.trust,
            updated=memory.updated,
            summary=memory.summary,
            project=memory.project,
            tags=memory.tags,
            matched=round(matched, 3),
        )

    def select(
        self,
        *,
        category: str | Sequence[str] | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        archived: bool = False,
    ) -> list[Memory]:
        """Memories that pass the filters, sorted by id."""

        def select() -> list[Memory]:
            accept = self._filter(category, project, tags, archived)
            number, shown = self._number, self._archived
            out = []
            for key in sorted(number):
                at = number[key]
                if (archived or not shown[at]) and (accept is None or accept(at)):
                    out.append(self._memory(key))
            return out

        return self._guarded(select)

    def passing(
        self,
        memory_ids: Sequence[str],
        *,
        category: str | Sequence[str] | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        archived: bool = False,
    ) -> list[str]:
        """Those of `memory_ids` a search with these filters may return, in their order."""

        def passing() -> list[str]:
            accept = self._filter(category, project, tags, archived)
            boost, number = (self._boost if archived else self._shown), self._number
            return [key for key in memory_ids if key in number and boost[number[key]] > 0
                    and (accept is None or accept(number[key]))]

        return self._guarded(passing)

    def factors(
        self, memory_ids: Sequence[str], *, archived: bool = False, query: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, float]:
        """The trust (and recency) multiplier a search applies to each of these memories;
        with `query`, times its date windows' (`_dated`), read against `now`."""
        time = read_time(query, now) if query is not None and self.date_boost else None

        def factors() -> dict[str, float]:
            factor, number = self._factor(None, archived), self._number
            if time is not None and time.windows:
                dated = self._dated(factor, time)
                if dated is not None:
                    factor = dated[0]
            return {key: factor(number[key]) for key in memory_ids if key in number}

        return self._guarded(factors)

    def hit_for(self, memory_id: str, score: float) -> Hit | None:
        """The hit of one memory at `score` (another ranking's, e.g. a fused one's)."""
        return self._guarded(
            lambda: self._hit(self._number[memory_id], score, 0.0)
            if memory_id in self._number else None
        )


class _Weighted(NamedTuple):
    parts: list[tuple[Sequence[int], Sequence[float]]]  # the cache's postings, then memory's
    size: int
    weight: float
    idf: float
    is_pair: bool
    ceiling: float  # weight times the largest saturated tf in the postings


def _matched(numbers: list[int], weighted: list[_Weighted]) -> dict[int, float]:
    """For each memory, the share of the query's idf (word terms, not pairs) it contains."""
    terms = [item for item in weighted if not item.is_pair]
    total_idf = sum(item.idf for item in terms) or 1.0
    found = dict.fromkeys(numbers, 0.0)
    wanted = set(numbers)
    for item in terms:
        for posted, _ in item.parts:
            holding: Iterable[int]
            if len(posted) <= 16 * len(wanted):
                holding = wanted.intersection(posted)  # a short list: in C
            else:
                holding = [number for number in numbers if _holds(posted, number)]
            for number in holding:
                found[number] += item.idf
    return {number: value / total_idf for number, value in found.items()}


def _holds(numbers: Sequence[int], number: int) -> bool:
    at = bisect_left(numbers, number)
    return at < len(numbers) and numbers[at] == number


# Rounding slack of the pruning bounds (scores are sums of a few dozen products near 1).
_MARGIN = 1e-9



# Up to this many candidates, they are pruned before every long list; past it, only once
# they have doubled since: each pruning is a pass over every candidate, and a pasted page of
# a large folder has dozens of long lists (a pass per list was most of its time at 100k).
# Pruning less keeps more candidates, never a different top: the scores stay exact.
_PRUNE_EVERY = 1024


def _prune_due(candidates: int, pruned: int) -> bool:
    """Whether to prune `candidates` now, `pruned` having been left by the last pruning."""
    return candidates < _PRUNE_EVERY or candidates >= 2 * pruned


def _reaching(
    scores: dict[int, float], rest: float, theta: float, factor: Callable[[int], float]
) -> dict[int, float]:
    """The candidates whose score plus `rest` (the ceilings to come), times factor, reach theta."""
    reach = map(mul, map(rest.__add__, scores.values()), map(factor, scores))
    keep = list(map((theta - _MARGIN).__le__, reach))
    if all(keep):
        return scores
    return dict(compress(scores.items(), keep))


def _admit(
    scores: dict[int, float],
    numbers: Sequence[int],
    weights: Sequence[float],
    weight: float,
    least: float,
    rest: float,
    theta: float,
    factor: Callable[[int], float],
) -> None:
    """Add the memories first met in this list that could still reach theta.

    `least` is the weight a memory needs here with the largest factor; those
    above it are then tested with their own: (weight * w + rest) * factor.
    """
    keep = list(map(least.__le__, weights))
    numbers = list(compress(numbers, keep))
    if not numbers:
        return
    values = list(map(weight.__mul__, compress(weights, keep)))
    reach = map(mul, map(rest.__add__, values), map(factor, numbers))
    keep = list(map((theta - _MARGIN).__le__, reach))
    added = dict(zip(compress(numbers, keep), compress(values, keep), strict=True))
    for key in added.keys() & scores.keys():
        del added[key]
    scores.update(added)


def _finish(
    scores: dict[int, float],
    rest: list[_Weighted],
    after: list[float],
    theta: float,
    count: int,
    passes: Callable[[int], bool] | None,
    factor: Callable[[int], float],
    full: dict[int, float],
) -> dict[int, float]:
    """The candidates' raw scores over the lists left, each memory on its own.

    No other memory can reach the top now. Best candidate first, each is
    looked up (by bisection) in the lists left, in their order, until its
    score plus the ceilings still to come, times its factor, falls below
    `theta`: then it is out. `theta` rises to the `count`-th best final
    score of the memories done, so that later candidates go sooner.
    """
    best: list[float] = []  # the `count` best final scores done (a heap)
    done: dict[int, float] = {}
    if theta > 0.0 and rest:
        # The loop's first test for every candidate at once (in C): most are out here, and
        # a pasted page of a large folder leaves tens of thousands (`_prune_due`).
        scores = _reaching(scores, after[0], theta, factor)
    for key in sorted(scores, key=scores.__getitem__, reverse=True):
        value = full.get(key)  # scored in full already, when theta was primed
        own = factor(key)
        if value is None:
            value = scores[key]
            out = False
            for item, left in zip(rest, after, strict=False):
                if (value + left) * own < theta - _MARGIN:
                    out = True
                    break
                weight = item.weight
                for numbers, weights in item.parts:
                    place = bisect_left(numbers, key)
                    if place < len(numbers) and numbers[place] == key:
                        value = value + weight * weights[place]
            if out:
                continue
        done[key] = value
        if passes is None or passes(key):
            final = value * own
            if len(best) < count:
                heapq.heappush(best, final)
            elif final > best[0]:
                heapq.heapreplace(best, final)
            if len(best) == count and best[0] > theta:
                theta = best[0]
    return done


def _primed(
    scores: dict[int, float],
    count: int,
    ordered: list[_Weighted],
    at: int,
    passes: Callable[[int], bool] | None,
    factor: Callable[[int], float],
    full: dict[int, float],
) -> float:
    """A lower bound of the `count`-th best final score: real scores of the best candidates.

    The `count` best candidates so far (by score times factor) are scored in
    full, by bisection in every list from `at` on, adding in the lists' order
    as `_accumulate` does; `full` keeps those totals for the next call. The
    `count`-th best final score among every memory scored in full is the
    bound (0 when fewer than `count` pass the filters).
    """
    keys = list(scores)
    finals = map(mul, map(scores.__getitem__, keys), map(factor, keys))
    if passes is None:
        best = heapq.nlargest(count, zip(finals, keys, strict=False))
    else:
        # The filter is a Python call a candidate (a hook's project filter: every one of a
        # pasted page's tens of thousands, most of its time at 100k); asked of the best
        # first. (final, key) pairs are all distinct, so the first `count` that pass
        # among the best are the best that pass.
        wide = heapq.nlargest(4 * count, zip(finals, keys, strict=False))
        best = [pair for pair in wide if passes(pair[1])][:count]
        if len(best) < count < len(keys) and len(wide) == 4 * count:
            kept = list(filter(passes, keys))
            finals = map(mul, map(scores.__getitem__, kept), map(factor, kept))
            best = heapq.nlargest(count, zip(finals, kept, strict=False))
    rest = ordered[at:]
    for _, key in best:
        if key in full:
            continue
        total = scores[key]
        for item in rest:
            weight = item.weight
            for numbers, weights in item.parts:
                place = bisect_left(numbers, key)
                if place < len(numbers) and numbers[place] == key:
                    total = total + weight * weights[place]
        full[key] = total
    if len(full) < count:
        return 0.0
    return heapq.nlargest(count, map(mul, full.values(), map(factor, full)))[-1]


def _look_up(
    scores: dict[int, float], numbers: Sequence[int], weights: Sequence[float], weight: float
) -> None:
    """Add one term's contribution to the candidates already in `scores` only."""
    size = len(numbers)
    if len(scores) * 10 < size:
        # A few candidates in a long list: bisect for each.
        for key, value in scores.items():
            at = bisect_left(numbers, key)
            if at < size and numbers[at] == key:
                scores[key] = value + weight * weights[at]
        return
    found = dict(zip(numbers, weights, strict=True))
    for key in found.keys() & scores.keys():
        scores[key] = scores[key] + weight * found[key]


def _top(
    scores: dict[int, float], count: int, ids: list[str | None] | _IdsByNumber
) -> list[tuple[int, float]]:
    """The `count` best (number, score) pairs, by score and then by id, deterministically.

    A score of 0 is a memory with factor 0 (archived and not asked for, or retired).
    """
    if len(scores) > count:
        best = heapq.nlargest(count, scores.values())
        floor = max(best[-1], _TINY)
        # every memory tied with the last one competes, so ties always break by id
        tied = [(-value, ids[key], key) for key, value in scores.items() if value >= floor]
    else:
        tied = [(-value, ids[key], key) for key, value in scores.items() if value > 0.0]
    tied.sort()
    return [(key, -value) for value, _, key in tied[:count]]


_TINY = 5e-324


def _extend(target: array, values: Sequence[Any] | memoryview) -> None:
    """Append `values` (an array or a memoryview of the same item type) to `target`, in C."""
    target.frombytes(memoryview(values).cast("B"))  # type: ignore[arg-type]  # a buffer


class _Slices(Sequence[Any]):
    """Item `t`: the slice `bounds[t]` to `bounds[t + 1]` of `values`, as a memoryview."""

    def __init__(self, values: array, bounds: array) -> None:
        self._view = memoryview(values)
        self._bounds = bounds

    def __len__(self) -> int:
        return len(self._bounds) - 1

    def __getitem__(self, at: Any) -> Any:
        if not isinstance(at, int):
            raise TypeError("one item at a time")
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError(at)
        return self._view[self._bounds[at] : self._bounds[at + 1]]


def _as_array(code: str, values: Sequence[Any] | memoryview) -> array:
    """`values` as an array of `code` (a memoryview is copied as bytes)."""
    if isinstance(values, array):
        return array(code, values)
    if not isinstance(values, memoryview):
        raise TypeError(f"expected an array or a memoryview, not {type(values).__name__}")
    return array(code, values.tobytes())
