"""The semantic signal of one memory folder: its vectors in memory, made by one embedder.

`Semantic` holds the vectors of `search/vectors.py`'s file (read again when
another process wrote it) and answers two
questions for search (`search/fusion.py`): which memories lie nearest a query
(`nearest`), and the cosine of a given memory (`cosines`), each only for a
vector made from the memory's current text (its text hash): a memory changed
since its vector was made has none until it is made again. A vector is made
from a memory's passage (description, then body; `vectors.passage_text`),
never at query time: `update` makes those missing (the `embed` command's
backfill), and `Background` runs it in a thread of a long-lived process
(`serve`, `ui`, `daemon`) whenever the store's index changes, with its
progress in that process's log; one process at a time makes a folder's
vectors (a lock beside the file), the others then read what it made.
Archived memories get none (they rank lexically when searched).

Imported only by a process that uses the signal (numpy, and the backend when
a vector is made); never on a hook's own path.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..disk.folder import MemoryFolder
from ..memory.value import Memory
from . import vectors
from .embedder import Embedder

BATCH = 32
SAVE_EVERY_SECONDS = 30.0
# A long-lived process waits this long after a change before embedding, so that a
# `git checkout` of many files is one pass, not hundreds.
SETTLE_SECONDS = 1.0
PROGRESS_EVERY_SECONDS = 10.0

Progress = Callable[[int, int], None]


def memory_hash(memory: Memory) -> str:
    return vectors.text_hash(vectors.passage_text(memory.description, memory.body))


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


class Semantic:
    """A folder's vectors, and the embedder that makes them and embeds queries."""

    def __init__(self, folder: MemoryFolder, embedder: Embedder) -> None:
        self.folder = folder
        self.embedder = embedder
        self.model = vectors.Model(embedder.name, embedder.version, embedder.dimension)
        self.path = vectors.vectors_path(folder)
        self._lock = threading.Lock()
        self._updating = threading.Lock()
        # Replaced whole, never changed in place: a search reads both halves of one state.
        self._state: tuple[vectors.Stored, dict[str, int]] = (
            vectors.Stored.empty(self.model), {})
        self._signature: tuple[int, int, int] | None = None
        self.reload()

    # the file

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ino)

    def reload(self) -> None:
        """Read the file again if it changed (another process made vectors); a bad one is none."""
        signature = self._stat()
        if signature == self._signature:
            return
        found = vectors.load(self.path, self.model) if signature is not None else None
        with self._lock:
            self._set(found or vectors.Stored.empty(self.model))
            self._signature = signature

    def _set(self, stored: vectors.Stored) -> None:
        self._state = (stored, {memory_id: row for row, memory_id in enumerate(stored.ids)})

    def _save(self) -> None:
        with self._lock:
            stored = self._state[0]
        try:
            vectors.save(self.path, stored)
        except OSError:
            return  # a state folder that takes no file: the vectors live in this process only
        with self._lock:
            self._signature = self._stat()

    # search

    def __len__(self) -> int:
        return len(self._state[0].ids)

    def query_vector(self, query: str) -> Any:
        return np.asarray(self.embedder.embed_query(query), dtype=np.float32)

    def nearest(self, query_vector: Any, count: int) -> list[tuple[str, float]]:
        """The `count` stored vectors nearest the query: (id, cosine), best first.

        Whether each is still current, and passes the search's filters, is the caller's to ask.
        """
        stored = self._state[0]
        if not stored.ids or count <= 0:
            return []
        scores = stored.matrix @ query_vector
        if count < len(scores):
            best = np.argpartition(-scores, count - 1)[:count]
        else:
            best = np.arange(len(scores))
        ranked = sorted(((float(scores[i]), stored.ids[i]) for i in best), key=lambda x: -x[0])
        return [(memory_id, score) for score, memory_id in ranked]

    def cosines(self, memories: Iterable[Memory], query_vector: Any) -> dict[str, float]:
        """The cosine of each memory whose vector is current; those without one are left out."""
        stored, rows = self._state
        wanted: list[tuple[str, int]] = []
        for memory in memories:
            row = rows.get(memory.id)
            if row is not None and not memory.archived and stored.hashes[row] == memory_hash(
                memory
            ):
                wanted.append((memory.id, row))
        if not wanted:
            return {}
        found = stored.matrix[[row for _, row in wanted]] @ query_vector
        return {memory_id: float(score) for (memory_id, _), score in zip(wanted, found,
                                                                          strict=True)}

    # making vectors

    def stale(self, memories: Iterable[Memory]) -> list[Memory]:
        """The memories in service whose vector is missing or was made from another text."""
        stored, rows = self._state
        out = []
        for memory in memories:
            if memory.archived:
                continue
            row = rows.get(memory.id)
            if row is None or stored.hashes[row] != memory_hash(memory):
                out.append(memory)
        return out

    def update(self, memories: Sequence[Memory], progress: Progress | None = None) -> Updated:
        """Make the vectors missing for `memories` (every memory of the folder), drop the others'.

        Saved every SAVE_EVERY_SECONDS and at the end, so that a process
        stopped midway keeps what it made. `progress(done, total)` after each batch.
        """
        with self._updating, self._folder_lock():
            started = time.monotonic()
            self.reload()
            live = {memory.id: memory_hash(memory) for memory in memories if not memory.archived}
            todo = self.stale(memories)
            with self._lock:
                stored = self._state[0]
                keep = [row for row, memory_id in enumerate(stored.ids)
                        if live.get(memory_id) == stored.hashes[row]]
                removed = len(stored.ids) - len(keep)
                if removed:
                    self._set(vectors.Stored(
                        self.model, [stored.ids[row] for row in keep],
                        [stored.hashes[row] for row in keep], stored.matrix[keep],
                    ))
            kept = len(keep)
            if progress is not None:
                progress(0, len(todo))
            saved = time.monotonic()
            for start in range(0, len(todo), BATCH):
                batch = todo[start : start + BATCH]
                texts = [vectors.passage_text(m.description, m.body) for m in batch]
                made = np.asarray(self.embedder.embed_passages(texts), dtype=np.float32)
                if made.shape != (len(batch), self.model.dimension):
                    raise ValueError(f"{self.model.name} gave vectors of shape {made.shape}")
                self._add([(m.id, memory_hash(m)) for m in batch], made)
                if progress is not None:
                    progress(min(start + BATCH, len(todo)), len(todo))
                if time.monotonic() - saved >= SAVE_EVERY_SECONDS:
                    self._save()
                    saved = time.monotonic()
            if todo or removed:
                self._save()
            return Updated(len(todo), kept, removed, time.monotonic() - started,
                           total=len(self), model=self.model, path=self.path)

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

    def _add(self, made: list[tuple[str, str]], matrix: Any) -> None:
        with self._lock:
            stored, rows = self._state
            rows = dict(rows)
            ids, hashes = list(stored.ids), list(stored.hashes)
            replaced = [(rows[memory_id], number) for number, (memory_id, _) in enumerate(made)
                        if memory_id in rows]
            new = [number for number, (memory_id, _) in enumerate(made) if memory_id not in rows]
            merged = np.concatenate([stored.matrix, matrix[new]]) if new else stored.matrix.copy()
            for row, number in replaced:
                merged[row] = matrix[number]
                hashes[row] = made[number][1]
            ids += [made[number][0] for number in new]
            hashes += [made[number][1] for number in new]
            order = sorted(range(len(ids)), key=ids.__getitem__)
            self._set(vectors.Stored(self.model, [ids[i] for i in order],
                                     [hashes[i] for i in order], merged[order]))


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
                 log: Callable[[str], None]) -> None:
        self.semantic = semantic
        self.memories = memories
        self.log = log
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

        updated = self.semantic.update(memories, progress)
        if updated.embedded or updated.removed:
            self.log(f"semantic vectors up to date: {updated.embedded} made, {updated.kept} "
                     f"kept, {updated.removed} dropped in {updated.seconds:.1f} s")


__all__ = ["Background", "Semantic", "Updated", "memory_hash", "open_semantic"]
