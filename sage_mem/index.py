"""The in-memory index and its scoring: the search hot path.

Scoring is BM25F (Robertson & Zaragoza): for each query term t and memory d,

    tf'(t, d) = sum over fields f of  w_f * tf_f / (1 - b_f + b_f * len_f / avglen_f)
    score(d)  = sum over t of  q_t * idf(t) * tf' / (k1 + tf')
    idf(t)    = ln(1 + (N - df + 0.5) / (df + 0.5))

with field weights description > aliases > name > summary > tags > filename >
body. CJK unigram terms carry a lower query weight q_t than words and bigrams,
and a query term repeated in the query counts once. The saturated part
tf' / (k1 + tf') is computed when a memory is indexed and kept in the postings,
so a query costs one dictionary update per posting of each query term and never
reads a file. Field length averages are re-taken whenever the number of memories
has drifted by more than a tenth since they were last taken.

The product is then scaled by trust (0.8 + 0.4 * trust: neutral at the default
0.5) and, when a half-life is set, by recency of `updated`.

Thread-safe: one lock guards every read and write of the postings.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from .memory import Memory, parse_moment
from .tokens import is_unigram, tokenize

FIELD_WEIGHTS: dict[str, float] = {
    "description": 3.0,
    "aliases": 2.6,
    "name": 2.2,
    "summary": 1.8,
    "tags": 1.5,
    "filename": 1.2,
    "body": 1.0,
}
FIELD_B: dict[str, float] = {
    "description": 0.6,
    "aliases": 0.3,
    "name": 0.3,
    "summary": 0.5,
    "tags": 0.3,
    "filename": 0.3,
    "body": 0.75,
}
K1 = 1.2
UNIGRAM_QUERY_WEIGHT = 0.3
MAX_BODY_CHARS = 20_000


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
    """The terms of each indexed field of a memory."""
    leaf = memory.id.rsplit("/", 1)[-1]
    return {
        "description": tokenize(memory.description),
        "aliases": tokenize(" ; ".join(memory.aliases)),
        "name": tokenize(memory.name or ""),
        "summary": tokenize(memory.summary or ""),
        "tags": tokenize(" ; ".join(memory.tags)),
        "filename": tokenize(leaf.replace("_", " ").replace("-", " ")),
        "body": tokenize(memory.body[:MAX_BODY_CHARS]),
    }


class Index:
    """Postings over every memory's fields, with filters and BM25F scoring."""

    def __init__(self, *, half_life_days: float | None = None) -> None:
        self.half_life_days = half_life_days
        self._lock = threading.RLock()
        self._memories: dict[str, Memory] = {}
        self._fields: dict[str, dict[str, Counter[str]]] = {}
        self._lengths: dict[str, dict[str, int]] = {}
        self._postings: dict[str, dict[str, float]] = {}
        self._length_sums: Counter[str] = Counter()
        self._averages: dict[str, float] = {field: 1.0 for field in FIELD_WEIGHTS}
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
        fields = {name: Counter(terms) for name, terms in memory_fields(memory).items()}
        lengths = {name: sum(counts.values()) for name, counts in fields.items()}
        self._memories[memory.id] = memory
        self._fields[memory.id] = fields
        self._lengths[memory.id] = lengths
        self._length_sums.update(lengths)

    def _post(self, memory_id: str) -> None:
        fields = self._fields[memory_id]
        lengths = self._lengths[memory_id]
        norms = {
            name: FIELD_WEIGHTS[name]
            / (1.0 - FIELD_B[name] + FIELD_B[name] * lengths[name] / self._averages[name])
            for name in fields
            if lengths[name]
        }
        weighted: dict[str, float] = {}
        for name, norm in norms.items():
            for term, count in fields[name].items():
                weighted[term] = weighted.get(term, 0.0) + count * norm
        postings = self._postings
        for term, tf in weighted.items():
            bucket = postings.get(term)
            if bucket is None:
                bucket = postings[term] = {}
            bucket[memory_id] = tf / (K1 + tf)

    def _remove(self, memory_id: str) -> bool:
        if memory_id not in self._memories:
            return False
        fields = self._fields.pop(memory_id)
        self._length_sums.subtract(self._lengths.pop(memory_id))
        del self._memories[memory_id]
        for counts in fields.values():
            for term in counts:
                bucket = self._postings.get(term)
                if bucket is not None and bucket.pop(memory_id, None) is not None and not bucket:
                    del self._postings[term]
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
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms or limit <= 0:
            return []
        with self._lock:
            total = len(self._memories)
            weights: list[tuple[dict[str, float], float, float]] = []
            for term in terms:
                bucket = self._postings.get(term)
                if not bucket:
                    continue
                idf = math.log(1.0 + (total - len(bucket) + 0.5) / (len(bucket) + 0.5))
                factor = UNIGRAM_QUERY_WEIGHT if is_unigram(term) else 1.0
                weights.append((bucket, idf * factor, idf))
            if not weights:
                return []
            scores: dict[str, float] = {}
            get = scores.get
            for bucket, weight, _ in weights:
                for memory_id, saturated in bucket.items():
                    scores[memory_id] = get(memory_id, 0.0) + weight * saturated
            accept = _filter(category, project, tags, archived)
            moment = now or datetime.now(timezone.utc)
            ranked: list[tuple[float, str]] = []
            memories = self._memories
            for memory_id, score in scores.items():
                memory = memories[memory_id]
                if accept is not None and not accept(memory):
                    continue
                ranked.append((score * self._modifier(memory, moment), memory_id))
            best = heapq.nlargest(offset + limit, ranked, key=lambda pair: (pair[0], _neg(pair[1])))
            total_idf = sum(idf for _, _, idf in weights) or 1.0
            hits = []
            for score, memory_id in best[offset:]:
                memory = memories[memory_id]
                matched = sum(idf for bucket, _, idf in weights if memory_id in bucket) / total_idf
                hits.append(
                    Hit(
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
                )
            return hits

    def _modifier(self, memory: Memory, now: datetime) -> float:
        factor = 0.8 + 0.4 * memory.trust
        if self.half_life_days:
            moment = parse_moment(memory.updated)
            if moment is not None:
                age_days = max(0.0, (now - moment).total_seconds() / 86400)
                factor *= 0.7 + 0.3 * 0.5 ** (age_days / self.half_life_days)
        return factor

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
            return [
                self._memories[key]
                for key in sorted(self._memories)
                if accept is None or accept(self._memories[key])
            ]


class _Reversed(str):
    __slots__ = ()

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__lt__(self, other)


def _neg(memory_id: str) -> _Reversed:
    # Ties break by id ascending, so equal scores always list in the same order.
    return _Reversed(memory_id)


def _filter(
    category: str | Sequence[str] | None,
    project: str | None,
    tags: Sequence[str] | None,
    archived: bool,
):
    categories = {category} if isinstance(category, str) else set(category or ())
    categories = {c.lower() for c in categories if c}
    wanted_tags = {t.lower() for t in tags or () if t}
    if not categories and project is None and not wanted_tags and archived:
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
