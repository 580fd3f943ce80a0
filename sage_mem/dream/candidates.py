"""Pairs of memories close in meaning, for the rules to verify: likely twins and contradictions.

Wording alone misses the same fact said twice in other words ("用户喜欢用 Makefile" /
"用户习惯用 Makefile"), and a fact that changed ("The user's editor is VS Code", weeks
later "The user writes code in Zed now"). Candidates come from the index, never from
comparing every pair:

- with the semantic extra and the folder's vectors made (by `serve`, `ui`, the
  daemon or `sage-mem embed`, in the background), the K memories nearest each
  memory by the cosine of their vectors (each the mean of its pieces'). Only vectors already
  made for a memory's current text are read; none is made here (a dream must not
  spend minutes embedding);
- and always (with vectors or without), the K nearest by the index's terms
  (`similarity.terms`: stemmed words, CJK bigrams), weighted by rarity (tf-idf
  cosine) through an inverted index whose common terms are skipped, so the work
  grows with the folder, not with its square. A pair either proposes carries both
  closenesses where both exist (`Pair.lexical`, `Pair.vectors`): made vectors add
  pairs and never hide one the words found ("How to run the tests" / "Running the
  test suite" was listed by its words, 0.82, and lost once vectors made it a pair
  of cosine 0.983 alone).

A pair is only a candidate: `rules.dedupe` merges what it can prove twins and
`rules.contradictions` lists what may contradict; the rest of the close pairs
are listed as possible duplicates. The model pass gets the listed pairs as its
first work list (`work_list`).
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..memory.value import Memory
from .similarity import terms

K = 5
"""Neighbours looked at per memory."""
LEXICAL_CHARS = 2000
"""The first characters of a memory (description, then body) its lexical neighbours come from."""
MAX_POSTINGS = 200
"""A term in more memories than this says little about meaning and costs the most: skipped
(unless it is all a memory has)."""


@dataclass(frozen=True)
class Pair:
    """Two memories close in meaning: ids in order, how close (0..1), and what said so."""

    first: str
    second: str
    score: float
    source: str  # "vectors" or "lexical": what `score` is (the vectors' when both are known)
    lexical: float | None = None
    """The closeness of their words (tf-idf cosine), when the terms proposed the pair."""
    vectors: float | None = None
    """The cosine of their vectors, when both have current ones."""


def close_pairs(folder: Any, memories: Sequence[Memory], k: int = K) -> list[Pair]:
    """Each memory's k nearest as pairs (each pair once, its best score), best first."""
    found: dict[tuple[str, str], Pair] = {}
    covered: set[str] = set()
    cosine: Any = None
    try:
        pairs, cosine = _by_vectors(folder, memories, k, covered)
        for pair in pairs:
            found[(pair.first, pair.second)] = pair
    except (OSError, ValueError, RuntimeError, ImportError, MemoryError):
        # A vector file this numpy or backend cannot read: the words still propose pairs.
        found.clear()
        covered.clear()
        cosine = None
    # Every memory gets its lexical neighbours too: a pair its words make close stays
    # proposed when vectors exist (and carries their cosine when both memories have one).
    by_terms, words = _by_terms(memories, {m.id for m in memories}, k)
    for pair in by_terms:
        key = (pair.first, pair.second)
        known = found.get(key)
        if known is not None:
            found[key] = replace(known, lexical=pair.score)
        elif pair.first in covered and pair.second in covered and cosine is not None:
            found[key] = replace(pair, vectors=cosine(pair.first, pair.second))
        else:
            found[key] = pair
    for key, pair in found.items():
        if pair.lexical is None:  # near by vectors only: how near are their words?
            found[key] = replace(pair, lexical=words(pair.first, pair.second))
    return sorted(found.values(), key=lambda p: (-p.score, p.first, p.second))


def _by_terms(
    memories: Sequence[Memory], wanted: set[str], k: int
) -> tuple[list[Pair], Any]:
    """The k nearest the `wanted` memories by their terms, and the closeness of any two."""
    bags = [Counter(_lexical_terms(m)) for m in memories]
    df = Counter(term for bag in bags for term in bag)
    n = len(memories)
    idf = {term: math.log(1 + n / count) for term, count in df.items()}
    vectors: list[dict[str, float]] = []
    for bag in bags:
        weights = {term: (1 + math.log(count)) * idf[term] for term, count in bag.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({term: w / norm for term, w in weights.items()})
    postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for index, weights in enumerate(vectors):
        for term, weight in weights.items():
            if df[term] <= MAX_POSTINGS:
                postings[term].append((index, weight))
    pairs = []
    for index, memory in enumerate(memories):
        if memory.id not in wanted:
            continue
        scores: dict[int, float] = defaultdict(float)
        for term, weight in vectors[index].items():
            for other, other_weight in postings.get(term, ()):
                if other != index:
                    scores[other] += weight * other_weight
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        for other, score in best:
            pairs.append(_pair(memory.id, memories[other].id, score, "lexical"))
    at = {memory.id: index for index, memory in enumerate(memories)}

    def closeness(a: str, b: str) -> float:
        one, two = vectors[at[a]], vectors[at[b]]
        if len(two) < len(one):
            one, two = two, one
        value = sum(weight * two.get(term, 0.0) for term, weight in one.items())
        return round(min(max(value, 0.0), 1.0), 4)

    return pairs, closeness


def _lexical_terms(memory: Memory) -> list[str]:
    from ..search.tokens import tokenize

    strong = terms(memory.description)  # CJK bigrams without unigrams and particles
    text = f"{memory.description}\n{memory.body}"[:LEXICAL_CHARS]
    return [t for t in tokenize(text) if t in strong or t not in _weak(t)]


def _weak(term: str) -> frozenset[str]:
    # a single CJK character says little (用户的猫 / 用户的狗 share most of theirs)
    from ..search.tokens import is_unigram

    return frozenset((term,)) if is_unigram(term) else frozenset()


def _pair(a: str, b: str, score: float, source: str) -> Pair:
    first, second = sorted((a, b))
    score = round(min(max(score, 0.0), 1.0), 4)
    if source == "vectors":
        return Pair(first, second, score, source, vectors=score)
    return Pair(first, second, score, source, lexical=score)


def _by_vectors(
    folder: Any, memories: Sequence[Memory], k: int, covered: set[str]
) -> tuple[list[Pair], Any]:
    """The k nearest by the stored vectors of the memories that have current ones, and the
    cosine of any two of them (None without vectors)."""
    if importlib.util.find_spec("numpy") is None:
        return [], None
    from ..search import embedder as embedders
    from ..search import vectors

    if embedders.disabled():
        return [], None
    stored = _stored(vectors.vectors_path(folder))
    if stored is None or not stored.ids:
        return [], None
    import numpy as np

    from ..search.semantic import memory_hash

    rows = {memory_id: row for row, memory_id in enumerate(stored.ids)}
    starts = np.zeros(len(stored.counts), dtype=np.intp)
    if stored.counts:
        starts[1:] = np.cumsum(stored.counts[:-1])
    ids, at = [], []
    for memory in memories:
        row = rows.get(memory.id)
        if row is not None and stored.hashes[row] == memory_hash(memory):
            ids.append(memory.id)
            at.append(row)
    if len(ids) < 2:
        return [], None
    covered.update(ids)
    # A memory's vector: the mean of its pieces' (its description and lines, each read once:
    # `vectors.passage_pieces`), which stands for the whole of it.
    means = np.add.reduceat(np.asarray(stored.matrix, dtype=np.float32), starts, axis=0) / (
        np.asarray(stored.counts, dtype=np.float32)[:, None])
    matrix = means[np.asarray(at)]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    take = min(k, len(ids) - 1)
    pairs = []
    for block, best, scores in _nearest(matrix, take):
        for row, (others, values) in enumerate(zip(best, scores, strict=True)):
            for other, score in zip(others, values, strict=True):
                pairs.append(_pair(ids[block + row], ids[int(other)], float(score), "vectors"))
    index = {memory_id: row for row, memory_id in enumerate(ids)}

    def cosine(a: str, b: str) -> float:
        value = float(matrix[index[a]] @ matrix[index[b]])
        return round(min(max(value, 0.0), 1.0), 4)

    return pairs, cosine


def _nearest(matrix: Any, k: int) -> Any:
    """(first row, its rows' k nearest others, their cosines) per block of rows.

    Exact, a block of rows against all at a time: n² dot products, but in one matrix
    product a block (about 1 s of CPU for 4,000 memories of 384 dimensions), and memory
    that grows with n, never n².
    """
    import numpy as np

    n = len(matrix)
    block = 256
    for start in range(0, n, block):
        sims = matrix[start : start + block] @ matrix.T
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -2.0
        best = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        yield start, best, np.take_along_axis(sims, best, axis=1)


def _stored(path: Any) -> Any:
    """The vectors in `path`, whichever model made them (checked as `vectors.decode` checks)."""
    from ..search import vectors

    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < 16 or data[:8] != vectors.MAGIC:
        return None
    size = int.from_bytes(data[8:12], "little")
    try:
        header = json.loads(data[16 : 16 + size])
        model = vectors.Model(str(header["model"]), str(header["version"]),
                              int(header["dimension"]))
    except (ValueError, KeyError, TypeError):
        return None
    return vectors.decode(data, model)


def work_list(notes: Sequence[Mapping[str, Any]], limit: int = 40) -> str:
    """What the rules listed of twins and contradictions, as a first work list for the model."""
    lines = []
    for note in notes:
        if note.get("rule") not in ("near-duplicates", "contradictions") or not note.get("id"):
            continue
        lines.append(f"- {note.get('id')}: {note.get('message')}")
        if len(lines) >= limit:
            break
    if not lines:
        return ""
    return (
        "\n\nStart with these pairs, which the rules found close in meaning but could not "
        "settle: for each, read both memories and decide (merge them, say which one stands, "
        "or leave both):\n" + "\n".join(lines)
    )
