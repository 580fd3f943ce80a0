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

Cost: the saturated weight of each (term, memory) is computed when the memory
is indexed and kept in the postings, so a query never reads a file or looks
at a memory that shares no term with it. Postings are walked from the rarest
term to the most common, and a common term's long list is only looked up for
the known candidates once no unseen memory could still reach the top (exact
MaxScore pruning; see `Index._accumulate`). Field length averages are re-taken
(and the postings rebuilt) whenever the number of memories has drifted by more
than a tenth since they were last taken. Thread-safe: one lock guards every
read and write of the postings.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from typing import NamedTuple

from .memory import CATEGORIES, Memory, parse_moment
from .tokens import is_unigram, is_word, tokenize

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
K1 = 0.9
UNIGRAM_QUERY_WEIGHT = 0.3
PAIR_WEIGHT = 0.3
MAX_BODY_CHARS = 20_000


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
    latin = {term for term in set(terms) if is_word(term)}
    return [
        first + " " + second
        for first, second in zip(terms, terms[1:], strict=False)
        if first != second and first in latin and second in latin
    ]


class Index:
    """Postings over every memory's fields, with filters and BM25F scoring."""

    def __init__(
        self, *, half_life_days: float | None = None, scoring: Scoring | None = None
    ) -> None:
        self.half_life_days = half_life_days
        self.scoring = scoring or Scoring()
        self._lock = threading.RLock()
        self._memories: dict[str, Memory] = {}
        self._fields: dict[str, dict[str, Counter[str]]] = {}
        self._lengths: dict[str, dict[str, int]] = {}
        self._postings: dict[str, dict[str, float]] = {}
        self._boost: dict[str, float] = {}
        self._moments: dict[str, float] = {}
        self._archived: set[str] = set()
        # An upper bound of every trust factor (recency only lowers it), for pruning.
        self._max_boost = 1.2
        self._length_sums: Counter[str] = Counter()
        self._averages: dict[str, float] = {name: 1.0 for name in FIELD_WEIGHTS}
        self._normalized_at = 0

    # reading

    def __len__(self) -> int:
        return len(self._memories)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._memories

    def get(self, memory_id: str) -> Memory | None:
        return self._memories.get(memory_id)

    def memories(self) -> list[Memory]:
        """Every indexed memory, sorted by id."""
        with self._lock:
            return [self._memories[key] for key in sorted(self._memories)]

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._memories)

    # writing

    def add_many(self, memories: Iterable[Memory]) -> None:
        """Index (or re-index) many memories, then re-take the length averages once."""
        with self._lock:
            for memory in memories:
                self._remove(memory.id)
                self._store(memory)
            self._renormalize()

    def put(self, memory: Memory) -> None:
        """Index one memory, replacing any earlier version with the same id."""
        with self._lock:
            self._remove(memory.id)
            self._store(memory)
            self._post(memory.id)
            self._maybe_renormalize()

    def remove(self, memory_id: str) -> bool:
        """Forget one memory; True when it was indexed."""
        with self._lock:
            found = self._remove(memory_id)
            self._maybe_renormalize()
            return found

    def _store(self, memory: Memory) -> None:
        fields: dict[str, Counter[str]] = {}
        lengths: dict[str, int] = {}
        for name, terms in memory_fields(memory).items():
            counts = Counter(terms)
            lengths[name] = len(terms)
            if self.scoring.pair_weight:
                counts.update(word_pairs(terms))
            fields[name] = counts
        memory_id = memory.id
        self._memories[memory_id] = memory
        self._fields[memory_id] = fields
        self._lengths[memory_id] = lengths
        self._length_sums.update(lengths)
        self._boost[memory_id] = boost = 0.8 + 0.4 * memory.trust
        self._max_boost = max(self._max_boost, boost)
        moment = parse_moment(memory.updated)
        if moment is not None:
            self._moments[memory_id] = moment.timestamp()
        if memory.archived:
            self._archived.add(memory_id)

    def _post(self, memory_id: str) -> None:
        scoring = self.scoring
        weights, b, k1 = scoring.field_weights, scoring.field_b, scoring.k1
        fields = self._fields[memory_id]
        lengths = self._lengths[memory_id]
        weighted: dict[str, float] = {}
        for name, counts in fields.items():
            if not lengths[name] or not weights.get(name):
                continue
            norm = weights[name] / (1.0 - b[name] + b[name] * lengths[name] / self._averages[name])
            for term, count in counts.items():
                weighted[term] = weighted.get(term, 0.0) + count * norm
        postings = self._postings
        for term, tf in weighted.items():
            bucket = postings.get(term)
            if bucket is None:
                bucket = postings[term] = {}
            bucket[memory_id] = tf / (k1 + tf)

    def _remove(self, memory_id: str) -> bool:
        if memory_id not in self._memories:
            return False
        fields = self._fields.pop(memory_id)
        self._length_sums.subtract(self._lengths.pop(memory_id))
        del self._memories[memory_id]
        del self._boost[memory_id]
        self._moments.pop(memory_id, None)
        self._archived.discard(memory_id)
        postings = self._postings
        for counts in fields.values():
            for term in counts:
                bucket = postings.get(term)
                if bucket is not None and bucket.pop(memory_id, None) is not None and not bucket:
                    del postings[term]
        return True

    def _maybe_renormalize(self) -> None:
        count = len(self._memories)
        if abs(count - self._normalized_at) > max(10, self._normalized_at // 10):
            self._renormalize()

    def _renormalize(self) -> None:
        count = max(1, len(self._memories))
        self._averages = {
            name: max(1.0, self._length_sums[name] / count) for name in FIELD_WEIGHTS
        }
        self._postings = {}
        for memory_id in self._memories:
            self._post(memory_id)
        self._normalized_at = len(self._memories)

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
        with self._lock:
            weighted = self._query_weights(terms, pairs)
            if not weighted:
                return []
            passes = self._passes(category, project, tags, archived)
            factor = self._factor(now)
            raw = self._accumulate(weighted, offset + limit, passes, factor)
            if passes is None:
                scores = {key: value * factor(key) for key, value in raw.items()}
            else:
                scores = {key: value * factor(key) for key, value in raw.items() if passes(key)}
            best = _top(scores, offset + limit)[offset:]
            return [self._hit(key, score, weighted) for key, score in best]

    def _query_weights(self, terms: list[str], pairs: list[str]) -> list[_Weighted]:
        """Postings, query weight * idf, and idf of each query term and pair found."""
        scoring = self.scoring
        total = len(self._memories)
        out = []
        for term in terms + pairs:
            bucket = self._postings.get(term)
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
            out.append(_Weighted(bucket, idf * factor, idf, is_pair))
        return out

    def _passes(
        self,
        category: str | Sequence[str] | None,
        project: str | None,
        tags: Sequence[str] | None,
        archived: bool,
    ) -> Callable[[str], bool] | None:
        """A test of a memory id against the filters, or None when every memory passes."""
        accept = _filter(category, project, tags, archived)
        if accept is not None:
            memories = self._memories
            return lambda key: accept(memories[key])
        if not archived and self._archived:
            hidden = self._archived
            return lambda key: key not in hidden
        return None

    def _factor(self, now: datetime | None) -> Callable[[str], float]:
        """Trust (and, with a half-life, recency) factor of a memory id."""
        boost = self._boost
        if not self.half_life_days:
            return boost.__getitem__
        moment = (now or datetime.now(UTC)).timestamp()
        half_life = float(self.half_life_days) * 86400.0
        moments = self._moments

        def factor(key: str) -> float:
            updated = moments.get(key)
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

        Terms go from the highest possible contribution (weight, as a saturated
        tf is below 1) to the lowest, which puts the long postings of common
        words last. Before such a list is walked, if `count` candidates already
        score (times their factor) above what any memory not yet seen could
        still reach, the list is only looked up for the known candidates: the
        MaxScore idea (Turtle & Flood, 1995), which keeps a query over 100,000
        memories from touching every posting of "user" or "project".
        """
        ordered = sorted(weighted, key=lambda item: item.weight, reverse=True)
        remaining = sum(item.weight for item in ordered)
        scores: dict[str, float] = {}
        closed = False
        for item in ordered:
            bucket, weight = item.bucket, item.weight
            if not closed and scores and len(bucket) > len(scores):
                ceiling = remaining * self._max_boost
                closed = _kth_best(scores, count, passes, factor) > ceiling
            remaining -= weight
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
        memory = self._memories[memory_id]
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
        accept = _filter(category, project, tags, archived)
        with self._lock:
            memories = self._memories
            if accept is None:
                hidden = set() if archived else self._archived
                return [memories[key] for key in sorted(memories) if key not in hidden]
            return [memories[key] for key in sorted(memories) if accept(memories[key])]


class _Weighted(NamedTuple):
    bucket: dict[str, float]
    weight: float
    idf: float
    is_pair: bool


def _kth_best(
    scores: dict[str, float],
    count: int,
    passes: Callable[[str], bool] | None,
    factor: Callable[[str], float],
) -> float:
    """The `count`-th best final score among candidates passing the filters (0 if fewer)."""
    if passes is None:
        finals = [value * factor(key) for key, value in scores.items()]
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


def _filter(
    category: str | Sequence[str] | None,
    project: str | None,
    tags: Sequence[str] | None,
    archived: bool,
) -> Callable[[Memory], bool] | None:
    """A predicate for the filters, or None when there are none but `archived`."""
    categories = {category} if isinstance(category, str) else set(category or ())
    categories = {c.lower() for c in categories if c}
    wanted_tags = {t.lower() for t in tags or () if t}
    if not categories and project is None and not wanted_tags:
        return None

    def accept(memory: Memory) -> bool:
        if memory.archived and not archived:
            return False
        if categories and memory.category not in categories:
            return False
        if project is not None and memory.project not in (None, project):
            return False
        if wanted_tags and not wanted_tags <= {t.lower() for t in memory.tags}:
            return False
        return True

    return accept
