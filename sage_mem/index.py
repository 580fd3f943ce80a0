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
    bm25(t,d) = idf(t) * tf' / (k1 + tf')          k1 = 0.9

with b = 0.5 for description and summary, 0.75 for body and 0.3 for the short
fields (aliases, name, tags, filename).

A query's score for d adds up, over its distinct terms and its distinct
adjacent word pairs:

    score(q, d) = sum over terms t of q_t * bm25(t, d)
                + 0.3 * sum over pairs p of bm25(p, d)

where q_t is 1 for words and CJK bigrams and 0.3 for a CJK single character
(enough for a one-character query to find "用户的猫叫芝麻" without letting
characters outvote bigrams). The pair part is a small proximity bonus after
Metzler & Croft's sequential dependence model (2005): `word_pairs` turns two
word terms next to each other, once stop words are dropped, into one term
("support group", which "support groups" meets too), indexed like any other
term with its own document frequency, so a phrase rare in the folder counts
more. CJK text needs no pairs: its bigrams already are adjacency.

The score is then multiplied by trust, 0.8 + 0.4 * trust (neutral at the
default 0.5), and, when a half-life is set, by recency of `updated`,
0.7 + 0.3 * 0.5 ** (age_days / half_life). Ties order by id, so equal scores
always list in the same order.

Tuning (`benchmarks/retrieval.py --grid`, on LoCoMo conversations 0-2 and
checked on 3-4) found a flat optimum: over k1 0.6-1.6, description weight 1-3
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
at a memory that shares no term with it. Postings are walked from the rarest
term to the most common, and a common term's long list is only looked up for
the known candidates once no unseen memory could still reach the top (exact
MaxScore pruning; see `Index._accumulate`). An index loaded from the on-disk
cache (`cache.py`) decodes a term's postings and a memory's fields only when
a query or a change first needs them; changes to terms not yet decoded wait
as pending edits, so a warm process that answers one query touches only that
query's terms. Thread-safe: one lock guards every read and write of the
postings.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import compress, filterfalse, repeat
from operator import add, eq, ge, itemgetter, mul
from typing import NamedTuple, Protocol, TypeVar

from .memory import CATEGORIES, Memory, parse_moment
from .tokens import _CJK, is_unigram, tokenize

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
    "description": 0.5,
    "aliases": 0.3,
    "name": 0.3,
    "summary": 0.5,
    "tags": 0.3,
    "filename": 0.3,
    "body": 0.75,
}
FIELDS = tuple(FIELD_WEIGHTS)
K1 = 0.9
UNIGRAM_QUERY_WEIGHT = 0.3
PAIR_WEIGHT = 0.3
MAX_BODY_CHARS = 20_000
AVERAGE_STEPS = 32
# How many decoded postings (about 80 bytes each, so some 500 MB) a process loaded from the
# cache keeps beyond those it changed; more are decoded again when a query needs them.
DECODED_POSTINGS = 6_000_000
# Postings this short are walked without first asking whether they could matter.
_SHORT_LIST = 64

_T = TypeVar("_T")

# A term that is not a word starts with `~` (a CJK unigram) or a CJK character (a bigram).
_NOT_WORD = re.compile(rf"[~{_CJK}]")


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

    def to_dict(self) -> dict[str, object]:
        return {
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


def memory_fields(memory: Memory) -> dict[str, list[str]]:
    """The terms of each indexed field of a memory, in text order."""
    leaf = memory.id.rsplit("/", 1)[-1]
    head, _, rest = leaf.partition("_")
    if rest and head.lower() in CATEGORIES:
        # `user_cat`: the prefix repeats the category, a filter rather than a topic,
        # and would let every "user ..." question match every user memory.
        leaf = rest
    return {
        "description": tokenize(memory.description),
        "aliases": tokenize(" ; ".join(memory.aliases)),
        "name": tokenize(memory.name or ""),
        "summary": tokenize(memory.summary or ""),
        "tags": tokenize(" ; ".join(memory.tags)),
        "filename": tokenize(leaf.replace("_", " ").replace("-", " ")),
        "body": tokenize(memory.body[:MAX_BODY_CHARS]),
    }


def word_pairs(terms: Sequence[str]) -> list[str]:
    """Adjacent word terms as `"first second"` pair terms (no term contains a space)."""
    if len(terms) < 2:
        return []
    distinct = set(terms)
    latin = set(filterfalse(_NOT_WORD.match, distinct))
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


class BackingError(Exception):
    """Raised by a Backing whose data turned out damaged (the index rebuilds: see `recover`)."""


class Backing(Protocol):
    """Where an index loaded from the on-disk cache finds what it has not decoded yet."""

    def bucket(self, term: str) -> dict[str, float] | None:
        """The postings of `term` as the cache holds them (a new dict), or None."""

    def items(self) -> Iterable[tuple[str, dict[str, float]]]:
        """Every term the cache holds, with its postings as the cache holds them."""

    def memory(self, memory_id: str) -> Memory:
        """A memory the cache holds."""

    def lengths(self, memory_id: str) -> dict[str, int]:
        """The field lengths (in terms) of a memory the cache holds."""


@dataclass
class Snapshot:
    """An index in plain columns (sorted by id): what the on-disk cache stores and loads.

    `postings` maps each term to its postings (memory id -> saturated weight);
    `memory` returns a memory by id.
    """

    averages: dict[str, float]
    length_sums: dict[str, int]
    ids: list[str]
    lengths: list[tuple[int, ...]]
    trusts: list[float]
    updated: list[str | None]
    archived: list[bool]
    categories: list[str | None]
    projects: list[str | None]
    max_boost: float
    postings: Mapping[str, dict[str, float]]
    memory: Callable[[str], Memory]


class Index:
    """Postings over every memory's fields, with filters and BM25F scoring."""

    def __init__(
        self, *, half_life_days: float | None = None, scoring: Scoring | None = None
    ) -> None:
        self.half_life_days = half_life_days
        self.scoring = scoring or Scoring()
        self._lock = threading.RLock()
        # Called when the backing turns out damaged: every memory, read again from the files.
        self.recover: Callable[[], Iterable[Memory]] | None = None
        self._reset()

    def _reset(self) -> None:
        # The live memories are the keys of `_boost`; `_memories` holds those decoded so far.
        self._boost: dict[str, float] = {}
        self._memories: dict[str, Memory] = {}
        self._fields: dict[str, dict[str, Counter[str]]] = {}
        self._lengths: dict[str, dict[str, int]] = {}
        self._postings: dict[str, dict[str, float]] = {}
        self._tops: dict[str, float] = {}
        self._moments: dict[str, float | None] = {}
        self._updated: dict[str, str | None] = {}
        self._archived: set[str] = set()
        self._categories: dict[str, str | None] = {}
        self._projects: dict[str, str | None] = {}
        # An upper bound of every trust factor (recency only lowers it), for pruning.
        self._max_boost = 1.2
        self._length_sums: Counter[str] = Counter()
        self._averages: dict[str, float] = {name: 1.0 for name in FIELD_WEIGHTS}
        self._normalized_at = 0
        self._unsettled = False
        # Loaded from the cache: terms not decoded yet live in `_backing`, and changes
        # to them wait in `_pending` (memory id -> weight, or None for a removal).
        self._backing: Backing | None = None
        self._decoded: set[str] = set()
        self._pending: dict[str, dict[str, float | None]] = {}
        # Decoded postings no change has touched since, least recently used first: they
        # can be dropped and decoded again, which bounds what a long-lived process holds.
        self._clean: OrderedDict[str, int] = OrderedDict()
        self._clean_postings = 0

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
        return len(self._boost)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._boost

    def get(self, memory_id: str) -> Memory | None:
        if memory_id not in self._boost:
            return None
        return self._guarded(lambda: self._memory(memory_id) if memory_id in self._boost else None)

    def memories(self) -> list[Memory]:
        """Every indexed memory, sorted by id."""
        return self._guarded(lambda: [self._memory(key) for key in sorted(self._boost)])

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._boost)

    def _memory(self, memory_id: str) -> Memory:
        memory = self._memories.get(memory_id)
        if memory is None:
            assert self._backing is not None
            memory = self._memories[memory_id] = self._backing.memory(memory_id)
        return memory

    # writing

    def add_many(self, memories: Iterable[Memory]) -> None:
        """Index (or re-index) many memories; the averages are re-taken once, at the end."""
        with self._lock:
            fresh = not self._boost and self._backing is None
            for memory in memories:
                self._remove(memory.id)
                self._store(memory)
                if not fresh:
                    self._post(memory.id)
            if fresh:
                self._renormalize()
            else:
                self._unsettled = True

    def put(self, memory: Memory) -> None:
        """Index one memory, replacing any earlier version with the same id."""

        def put() -> None:
            self._remove(memory.id)
            self._store(memory)
            self._post(memory.id)
            self._unsettled = True

        self._guarded(put)

    def remove(self, memory_id: str) -> bool:
        """Forget one memory; True when it was indexed."""

        def remove() -> bool:
            found = self._remove(memory_id)
            self._unsettled = True
            return found

        return self._guarded(remove)

    def _store(self, memory: Memory) -> None:
        pair_weight = self.scoring.pair_weight
        fields: dict[str, Counter[str]] = {}
        lengths: dict[str, int] = {}
        for name, terms in memory_fields(memory).items():
            counts = Counter(terms)
            lengths[name] = len(terms)
            if pair_weight and len(terms) > 1:
                counts.update(word_pairs(terms))
            fields[name] = counts
        memory_id = memory.id
        self._memories[memory_id] = memory
        self._fields[memory_id] = fields
        self._lengths[memory_id] = lengths
        self._length_sums.update(lengths)
        self._note(memory_id, memory.trust, memory.updated, memory.archived,
                   memory.category, memory.project)

    def _note(
        self, memory_id: str, trust: float, updated: str | None, archived: bool,
        category: str | None, project: str | None,
    ) -> None:
        self._boost[memory_id] = boost = 0.8 + 0.4 * trust
        self._max_boost = max(self._max_boost, boost)
        # Parsed when a half-life first needs it (`_factor`): a warm start skips 100k parses.
        self._moments.pop(memory_id, None)
        self._updated[memory_id] = updated
        if archived:
            self._archived.add(memory_id)
        self._categories[memory_id] = category
        self._projects[memory_id] = project

    def _weigh(self, memory_id: str) -> dict[str, float]:
        """The saturated weight of each term of a memory (the same arithmetic everywhere)."""
        scoring = self.scoring
        weights, b, k1 = scoring.field_weights, scoring.field_b, scoring.k1
        lengths = self._lengths[memory_id]
        averages = self._averages
        weighted: dict[str, float] = {}
        for name, counts in self._fields[memory_id].items():
            if not lengths[name] or not weights.get(name):
                continue
            norm = weights[name] / (1.0 - b[name] + b[name] * lengths[name] / averages[name])
            if not weighted:
                weighted = {term: count * norm for term, count in counts.items()}
                continue
            common = counts.keys() & weighted.keys()
            for term in common:
                weighted[term] += counts[term] * norm
            if len(common) < len(counts):
                weighted.update(
                    {term: count * norm for term, count in counts.items() if term not in common}
                )
        return {term: tf / (k1 + tf) for term, tf in weighted.items()}

    def _post(self, memory_id: str) -> None:
        postings = self._postings
        weighted = self._weigh(memory_id)
        tops = self._tops
        if tops:
            for term in weighted.keys() & tops.keys():
                if weighted[term] > tops[term]:
                    tops[term] = weighted[term]
        if self._backing is None:
            for term, value in weighted.items():
                bucket = postings.get(term)
                if bucket is None:
                    postings[term] = {memory_id: value}
                else:
                    bucket[memory_id] = value
            return
        decoded, pending, clean = self._decoded, self._pending, self._clean
        for term, value in weighted.items():
            bucket = postings.get(term)
            if bucket is not None:
                if term in clean:
                    self._touch(term)
                bucket[memory_id] = value
            elif term in decoded:
                postings[term] = {memory_id: value}
            else:
                pending.setdefault(term, {})[memory_id] = value

    def _remove(self, memory_id: str) -> bool:
        if memory_id not in self._boost:
            return False
        fields = self._fields_of(memory_id)
        self._length_sums.subtract(self._lengths_of(memory_id))
        self._fields.pop(memory_id, None)
        self._lengths.pop(memory_id, None)
        self._memories.pop(memory_id, None)
        del self._boost[memory_id]
        self._moments.pop(memory_id, None)
        self._updated.pop(memory_id, None)
        self._archived.discard(memory_id)
        self._categories.pop(memory_id, None)
        self._projects.pop(memory_id, None)
        postings = self._postings
        lazy = self._backing is not None
        clean = self._clean
        for counts in fields.values():
            for term in counts:
                bucket = postings.get(term)
                if bucket is not None:
                    if term in clean:
                        self._touch(term)
                    if bucket.pop(memory_id, None) is not None and not bucket:
                        del postings[term]
                elif lazy and term not in self._decoded:
                    self._pending.setdefault(term, {})[memory_id] = None
        return True

    def _fields_of(self, memory_id: str) -> dict[str, Counter[str]]:
        fields = self._fields.get(memory_id)
        if fields is None:
            # A memory loaded from the cache: its terms are only needed now, to remove it.
            memory = self._memory(memory_id)
            self._store(memory)
            self._length_sums.subtract(self._lengths[memory_id])
            fields = self._fields[memory_id]
        return fields

    def _lengths_of(self, memory_id: str) -> dict[str, int]:
        lengths = self._lengths.get(memory_id)
        if lengths is None:
            assert self._backing is not None
            lengths = self._lengths[memory_id] = self._backing.lengths(memory_id)
        return lengths

    def _target_averages(self) -> dict[str, float]:
        count = len(self._boost)
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
            count, last = len(self._boost), self._normalized_at
            if abs(count - last) > max(10, last // 10) and self.averages_moved():
                self._renormalize()

    def _renormalize(self) -> None:
        self._averages = self._target_averages()
        if self._backing is not None:
            # Every posting is rebuilt here, so the cache is done with (this decodes it all).
            for memory_id in self._boost:
                self._fields_of(memory_id)
            self._backing = None
            self._decoded = set()
            self._pending = {}
            self._clean = OrderedDict()
            self._clean_postings = 0
        self._postings = {}
        self._tops = {}
        for memory_id in self._boost:
            self._post(memory_id)
        self._normalized_at = len(self._boost)
        self._unsettled = False

    def _bucket(self, term: str) -> dict[str, float] | None:
        """The postings of `term`, decoding them from the cache on first use."""
        bucket = self._postings.get(term)
        if bucket is not None or self._backing is None or term in self._decoded:
            if bucket is not None and term in self._clean:
                self._clean.move_to_end(term)
            return bucket
        self._decoded.add(term)
        bucket = self._backing.bucket(term) or {}
        pending = self._pending.pop(term, None)
        if pending:
            for key, value in pending.items():
                if value is None:
                    bucket.pop(key, None)
                else:
                    bucket[key] = value
        if not bucket:
            return None
        self._postings[term] = bucket
        if not pending:
            self._clean[term] = len(bucket)
            self._clean_postings += len(bucket)
            while self._clean_postings > DECODED_POSTINGS and len(self._clean) > 1:
                old, size = self._clean.popitem(last=False)
                self._clean_postings -= size
                del self._postings[old]
                self._decoded.discard(old)
        return bucket

    def _touch(self, term: str) -> None:
        """A decoded term is about to change: keep it (it can no longer be decoded again)."""
        size = self._clean.pop(term, None)
        if size is not None:
            self._clean_postings -= size

    # the on-disk cache

    def snapshot(self) -> Snapshot:
        """The whole index as columns (decodes every posting still in the cache)."""
        return self._guarded(self._snapshot)

    def _snapshot(self) -> Snapshot:
        if self.averages_moved():
            self._renormalize()
        postings = dict(self._postings)
        if self._backing is not None:
            # Every posting, read in file order (a lookup per term would cost 100 times more),
            # with the changes made since: decoded terms are already in `postings`.
            decoded, pending = self._decoded, self._pending
            for term, bucket in self._backing.items():
                if term in decoded:
                    continue
                for key, value in pending.get(term, {}).items():
                    if value is None:
                        bucket.pop(key, None)
                    else:
                        bucket[key] = value
                if bucket:
                    postings[term] = bucket
            for term, changes in pending.items():
                if term not in postings:
                    added = {key: value for key, value in changes.items() if value is not None}
                    if added:
                        postings[term] = added
        ids = sorted(self._boost)
        lengths = [tuple(self._lengths_of(key)[name] for name in FIELDS) for key in ids]
        memories = [self._memory(key) for key in ids]
        return Snapshot(
            averages=dict(self._averages),
            length_sums={name: self._length_sums[name] for name in FIELDS},
            ids=ids,
            lengths=lengths,
            trusts=[memory.trust for memory in memories],
            updated=[memory.updated for memory in memories],
            archived=[memory.archived for memory in memories],
            categories=[memory.category for memory in memories],
            projects=[memory.project for memory in memories],
            max_boost=self._max_boost,
            postings=postings,
            memory=self._memory,
        )

    @classmethod
    def from_snapshot(
        cls,
        snapshot: Snapshot,
        backing: Backing,
        *,
        half_life_days: float | None = None,
        scoring: Scoring | None = None,
    ) -> Index:
        """An index whose postings and memories are decoded from `backing` as they are used."""
        index = cls(half_life_days=half_life_days, scoring=scoring)
        index._backing = backing
        index._averages = dict(snapshot.averages)
        index._length_sums = Counter(snapshot.length_sums)
        index._normalized_at = len(snapshot.ids)
        ids = snapshot.ids
        # In bulk (what `_note` does one by one): a warm start takes this for every memory.
        index._boost = dict(zip(ids, map(add, repeat(0.8), map(mul, repeat(0.4), snapshot.trusts)),
                                strict=True))
        index._updated = dict(zip(ids, snapshot.updated, strict=True))
        index._archived = set(compress(ids, snapshot.archived))
        index._categories = dict(zip(ids, snapshot.categories, strict=True))
        index._projects = dict(zip(ids, snapshot.projects, strict=True))
        index._max_boost = max(index._max_boost, snapshot.max_boost)
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
    ) -> list[Hit]:
        """Ranked hits for `query` among memories that pass the filters."""
        sequence = tokenize(query)
        terms = list(dict.fromkeys(sequence))
        if not terms or limit <= 0:
            return []
        offset = max(0, offset)
        pairs = list(dict.fromkeys(word_pairs(sequence))) if self.scoring.pair_weight else []

        def search() -> list[Hit]:
            self._settle()
            weighted = self._query_weights(terms, pairs)
            if not weighted:
                return []
            passes = self._passes(category, project, tags, archived)
            factor = self._factor(now)
            raw = self._accumulate(weighted, offset + limit, passes, factor)
            if passes is None:
                scores = dict(zip(raw, map(mul, raw.values(), map(factor, raw)), strict=True))
            else:
                scores = {key: value * factor(key) for key, value in raw.items() if passes(key)}
            best = _top(scores, offset + limit)[offset:]
            return [self._hit(key, score, weighted) for key, score in best]

        return self._guarded(search)

    def _query_weights(self, terms: list[str], pairs: list[str]) -> list[_Weighted]:
        """Postings, query weight * idf, and idf of each query term and pair found."""
        scoring = self.scoring
        total = len(self._boost)
        out = []
        for term in terms + pairs:
            bucket = self._bucket(term)
            if not bucket:
                continue
            df = len(bucket)
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            is_pair = " " in term
            if is_pair:
                factor = scoring.pair_weight
            elif is_unigram(term):
                factor = scoring.unigram_weight
            else:
                factor = 1.0
            weight = idf * factor
            out.append(_Weighted(bucket, weight, idf, is_pair, weight * self._top_tf(term, bucket)))
        return out

    def _top_tf(self, term: str, bucket: dict[str, float]) -> float:
        """The largest saturated tf in a term's postings (an upper bound: removals leave it)."""
        top = self._tops.get(term)
        if top is None:
            top = self._tops[term] = max(bucket.values())
        return top

    def _passes(
        self,
        category: str | Sequence[str] | None,
        project: str | None,
        tags: Sequence[str] | None,
        archived: bool,
    ) -> Callable[[str], bool] | None:
        """A test of a memory id against the filters, or None when every memory passes."""
        accept = self._filter(category, project, tags, archived)
        if accept is not None:
            return accept
        if not archived and self._archived:
            hidden = self._archived
            return lambda key: key not in hidden
        return None

    def _filter(
        self,
        category: str | Sequence[str] | None,
        project: str | None,
        tags: Sequence[str] | None,
        archived: bool,
    ) -> Callable[[str], bool] | None:
        """A test of a memory id for the filters, or None when there are none but `archived`."""
        categories = {category} if isinstance(category, str) else set(category or ())
        categories = {c.lower() for c in categories if c}
        wanted_tags = {t.lower() for t in tags or () if t}
        if not categories and project is None and not wanted_tags:
            return None
        hidden = set() if archived else self._archived
        of_category, of_project = self._categories, self._projects

        def accept(key: str) -> bool:
            if key in hidden:
                return False
            if categories and of_category[key] not in categories:
                return False
            if project is not None and of_project[key] not in (None, project):
                return False
            if wanted_tags and not wanted_tags <= {t.lower() for t in self._memory(key).tags}:
                return False
            return True

        return accept

    def _factor(self, now: datetime | None) -> Callable[[str], float]:
        """Trust (and, with a half-life, recency) factor of a memory id."""
        boost = self._boost
        if not self.half_life_days:
            return boost.__getitem__
        moment = (now or datetime.now(UTC)).timestamp()
        half_life = float(self.half_life_days) * 86400.0
        moments, stamps = self._moments, self._updated

        def factor(key: str) -> float:
            if key in moments:
                updated = moments[key]
            else:
                parsed = parse_moment(stamps.get(key))
                updated = moments[key] = parsed.timestamp() if parsed is not None else None
            if updated is None:
                return boost[key]
            age = max(0.0, moment - updated)
            return boost[key] * (0.7 + 0.3 * 0.5 ** (age / half_life))

        return factor

    def _accumulate(
        self,
        weighted: list[_Weighted],
        count: int,
        passes: Callable[[str], bool] | None,
        factor: Callable[[str], float],
    ) -> dict[str, float]:
        """Raw scores of every memory that can reach the top `count`, exactly.

        Terms go from the highest possible contribution (weight times the
        largest saturated tf in the term's postings) to the lowest, which puts
        the long postings of common words last. Before such a list is walked,
        if `count` candidates already score (times their factor) above what
        any memory not yet seen could still reach, the list is only looked up
        for the known candidates, and candidates that could not reach the
        k-th best score even with every remaining list are dropped: the
        MaxScore idea (Turtle & Flood, 1995), which keeps a query over 100,000
        memories from touching every posting of "user" or "project".
        """
        ordered = sorted(weighted, key=lambda item: item.ceiling, reverse=True)
        remaining = sum(item.ceiling for item in ordered)
        boost = self._max_boost
        scores: dict[str, float] = {}
        closed = False
        for item in ordered:
            bucket, weight = item.bucket, item.weight
            if len(scores) > count and len(bucket) > _SHORT_LIST:
                kth = _kth_best(scores, count, passes, factor)
                if not closed:
                    closed = kth > remaining * boost
                if closed and len(scores) > 2 * count:
                    # Candidates that cannot reach the k-th best even with every list
                    # still to come: looking them up would only cost time.
                    reach = map(add, scores.values(), repeat(remaining))
                    bounds = map(mul, reach, map(factor, list(scores)))
                    scores = dict(compress(scores.items(), map(ge, bounds, repeat(kth))))
            remaining -= item.ceiling
            if closed:
                if len(scores) <= len(bucket):
                    found = bucket.get
                    for key, value in scores.items():
                        posted = found(key)
                        if posted is not None:
                            scores[key] = value + weight * posted
                else:
                    for key, posted in bucket.items():
                        value = scores.get(key)
                        if value is not None:
                            scores[key] = value + weight * posted
                continue
            get = scores.get
            for key, posted in bucket.items():
                scores[key] = get(key, 0.0) + weight * posted
        return scores

    def _hit(self, memory_id: str, score: float, weighted: list[_Weighted]) -> Hit:
        memory = self._memory(memory_id)
        terms = [item for item in weighted if not item.is_pair]
        total_idf = sum(item.idf for item in terms) or 1.0
        matched = sum(item.idf for item in terms if memory_id in item.bucket) / total_idf
        return Hit(
            id=memory_id,
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
            if accept is None:
                hidden = set() if archived else self._archived
                return [self._memory(key) for key in sorted(self._boost) if key not in hidden]
            return [self._memory(key) for key in sorted(self._boost) if accept(key)]

        return self._guarded(select)


class _Weighted(NamedTuple):
    bucket: dict[str, float]
    weight: float
    idf: float
    is_pair: bool
    ceiling: float  # weight times the largest saturated tf in the bucket


def _kth_best(
    scores: dict[str, float],
    count: int,
    passes: Callable[[str], bool] | None,
    factor: Callable[[str], float],
) -> float:
    """The `count`-th best final score among candidates passing the filters (0 if fewer)."""
    if passes is None:
        if len(scores) < count:
            return 0.0
        return heapq.nlargest(count, map(mul, scores.values(), map(factor, scores)))[-1]
    else:
        finals = [value * factor(key) for key, value in scores.items() if passes(key)]
    if len(finals) < count:
        return 0.0
    return heapq.nlargest(count, finals)[-1]


def _top(scores: dict[str, float], count: int) -> list[tuple[str, float]]:
    """The `count` best (id, score) pairs, by score and then by id, deterministically."""
    if len(scores) > count:
        best = heapq.nlargest(count, scores.items(), key=itemgetter(1))
        floor = best[-1][1]
        # every memory tied with the last one competes, so ties always break by id
        tied = [(-value, key) for key, value in scores.items() if value >= floor]
    else:
        tied = [(-value, key) for key, value in scores.items()]
    tied.sort()
    return [(key, -value) for value, key in tied[:count]]
