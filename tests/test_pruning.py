"""Exact dynamic pruning (issue 13): the pruned search returns exactly the exhaustive top k.

`ranking.accumulate_scores` skips postings and drops candidates using each term's
ceiling (its largest possible contribution) and a threshold primed from real
scores. These tests score every posting of every query term instead, in the
same order, on random English and Chinese corpora and random queries (with
filters, trust, recency, pages, an index loaded from the cache and changed
since), and ask for the same ids and the same scores. A bound made too low on
purpose must make them differ: the comparison can fail.

Every test runs on both engines: the pure-Python one (the only one on a
plain install) and numpy's (`search/dense.py`, every posting added in C), which
must give the same ids and the same scores, to the last bit.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search import dense, ranking
from sage_mem.search.index import Hit, Index
from sage_mem.search.query import Filters
from sage_mem.search.scoring import word_pairs
from sage_mem.search.tokens import loose_terms, tokenize

NOW = datetime(2026, 12, 1, tzinfo=UTC)
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "dor")
HANZI = "猫狗鱼鸟花草树山水火风雨雪云星月日天地人心手口目耳书画茶酒饭面米油盐糖"


def words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))) for _ in range(count)]


def zipf_pick(rng: random.Random, pool: list[str], count: int) -> list[str]:
    weights = [1.0 / (rank + 1) for rank in range(len(pool))]
    return rng.choices(pool, weights=weights, k=count)


def corpus(seed: int, size: int) -> tuple[list[Memory], list[str]]:
    """Memories in English, Chinese and both, and queries of each kind and length."""
    rng = random.Random(seed)
    vocabulary = list(dict.fromkeys(words(rng, 400)))
    hanzi = list(HANZI)
    rng.shuffle(hanzi)

    def text(language: str, count: int) -> str:
        if language == "en":
            return " ".join(zipf_pick(rng, vocabulary, count))
        if language == "zh":
            return "".join(zipf_pick(rng, hanzi, count * 2))
        return " ".join(zipf_pick(rng, vocabulary, count // 2)) + " " + "".join(
            zipf_pick(rng, hanzi, count))

    memories = []
    for number in range(size):
        language = rng.choice(("en", "zh", "mixed"))
        memories.append(memory_from_meta(
            f"note_{number:04}", Path(f"note_{number:04}.md"),
            {"description": text(language, rng.randint(3, 8)),
             "trust": rng.choice((0.0, 0.3, 0.5, 0.5, 0.5, 0.9, 1.0)),
             "project": rng.choice((None, None, "a", "b")),
             "updated": f"2026-{rng.randint(1, 11):02}-{rng.randint(1, 28):02}"},
            text(language, rng.randint(5, 60)),
        ))
    queries = []
    for _ in range(60):
        language = rng.choice(("en", "zh", "mixed"))
        queries.append(text(language, rng.choice((2, 3, 5, 8, 14, 40))))
    return memories, queries


def exhaustive(index: Index, query: str, *, limit: int = 10, offset: int = 0,
               project: str | None = None) -> list[tuple[str, float]]:
    """What `Index.search` answers, scoring every posting of every term (no pruning)."""
    sequence = tokenize(query)
    terms = list(dict.fromkeys(sequence))
    pairs = list(dict.fromkeys(word_pairs(sequence)))
    weighted = index._query_weights(*index._most_telling(terms, pairs, dict(loose_terms(query))))
    if not weighted:
        return []
    scores: dict[int, float] = {}
    # The order `_accumulate` adds in, so that equal sums are equal to the last bit.
    for item in sorted(weighted, key=lambda entry: entry.ceiling, reverse=True):
        for numbers, weights in item.parts:
            for number, value in zip(numbers, weights, strict=True):
                if number in scores:
                    scores[number] = scores[number] + item.weight * value
                else:
                    scores[number] = item.weight * value
    passes = index._filter(Filters(project=project))
    factor = index._factor(NOW, False)
    final = {key: value * factor(key) for key, value in scores.items()
             if passes is None or passes(key)}
    best = ranking.top(final, offset + limit, index._ids)[offset:]
    return [(index._ids[key], round(value, 4)) for key, value in best]  # type: ignore[misc]


def pruned(index: Index, query: str, *, project: str | None = None,
           **page: int) -> list[tuple[str, float]]:
    hits: list[Hit] = index.search(query, now=NOW, filters=Filters(project=project), **page)
    return [(hit.id, hit.score) for hit in hits]


FILTERS: list[dict[str, object]] = [
    {}, {"limit": 3}, {"limit": 5, "offset": 5}, {"project": "a"}, {"limit": 1},
]


@pytest.fixture(autouse=True, params=["python", "numpy"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each search through one engine: Python's pruning, or numpy's sums (every query)."""
    if request.param == "numpy":
        pytest.importorskip("numpy")
        monkeypatch.setattr(dense, "USE_NUMPY", True)
        monkeypatch.setattr(dense, "DENSE_FROM", 0)
    else:
        monkeypatch.setattr(dense, "USE_NUMPY", False)
    return str(request.param)


def mismatches(index: Index, queries: list[str]) -> int:
    wrong = 0
    for query in queries:
        for filters in FILTERS:
            want = exhaustive(index, query, **filters)  # type: ignore[arg-type]
            wrong += pruned(index, query, **filters) != want
    return wrong


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("half_life", [None, 30.0])
def test_pruned_search_equals_scoring_every_posting(seed: int, half_life: float | None) -> None:
    memories, queries = corpus(seed, 500)
    index = Index(half_life_days=half_life)
    index.add_many(memories)
    assert mismatches(index, queries) == 0


def test_pruned_search_equals_scoring_every_posting_from_the_cache(tmp_path: Path) -> None:
    """An index read from the cache file, then changed: postings in two parts, retired numbers."""
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search import cache

    memories, queries = corpus(4, 400)
    folder = MemoryFolder(tmp_path / "memory", state_dir=tmp_path / "state")
    folder.root.mkdir(parents=True)
    built = Index()
    built.add_many(memories)
    assert cache.save(folder, built, {}, started_ns=0)
    loaded = cache.load(folder, scoring=built.scoring)
    assert loaded is not None
    index = loaded.index
    rng = random.Random(9)
    for memory in rng.sample(memories, 40):
        index.put(memory_from_meta(memory.id, memory.path,
                                   {"description": memory.body[:40], "trust": 0.8}, memory.body))
    assert mismatches(index, queries) == 0


def test_a_bound_set_too_low_is_caught(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    """With every ceiling halved the pruning is wrong, and the comparison says so."""
    if engine == "numpy":
        pytest.skip("numpy's sums read the ceilings only for their order: nothing to halve")
    memories, queries = corpus(1, 500)
    index = Index()
    index.add_many(memories)
    weights = index._query_weights

    def halved(*args, **kwargs):  # type: ignore[no-untyped-def]
        return [entry._replace(ceiling=entry.ceiling / 2) for entry in weights(*args, **kwargs)]

    monkeypatch.setattr(index, "_query_weights", halved)
    # The reference sorts by the same halved ceilings (the same order), but prunes nothing.
    assert mismatches(index, queries) > 0


def test_a_factor_bound_set_too_low_is_caught(engine: str) -> None:
    """Both engines stop walking once no memory's raw score times the largest factor can
    reach the top: told a largest factor below the real ones, they miss memories."""
    memories, queries = corpus(1, 500)
    index = Index()
    index.add_many(memories)
    index._max_boost = 0.5  # trust factors go up to 1.2
    assert mismatches(index, queries) > 0
