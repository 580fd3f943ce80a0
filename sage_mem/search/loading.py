"""How a store's index comes to be: from the on-disk cache and what changed since, or a build.

`load_index` decides, for `MemoryStore.reload`:

- A usable cache (`cache.load`): the index it holds, with the files whose
  stat differs from what the cache saw read again (a warm start). When many
  changed (more than `cache.REWRITE_AFTER`) or a length average moved, the
  cache is written again, so that the next process reads nothing.
- A cache so far behind that more than a quarter of the files changed (a
  folder just cloned or pulled into): built again, as without one.
- No usable cache: every file is read and indexed (a cold build), and the
  cache is written for the next process. A large folder (`ADOPT_CACHE_FROM`
  files or more) is built straight into the cache file, one memory at a
  time, with no index in memory (`cache.build`: under 1 GB at 100,000
  memories, where an index took 4.3 GB), and the store answers from the
  cache it wrote.

With `build=False` (the hook's store: a new process for every prompt, which
must never wait for a build) neither a build nor a cache write ever happens
here. The index holds what the cache holds plus at most `HOOK_READS` files
read directly (changed since the cache, or every file of a small folder
without one); a file changed beyond that is left out of this process's index
rather than answered from its stale copy. `Loaded.build_needed` then says
that a build should run elsewhere (the hook starts one detached: see
`agents/daemon.py`), and `Loaded.left_out` how many files this index lacks.

The store keeps what it knows of each file (its problems, what was last seen
of it); this module reaches it only through `Files`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..disk.bulk import gc_paused
from ..disk.folder import MemoryFolder
from ..memory.value import Memory
from . import HOOK_READS, cache
from .index import Index
from .scoring import Scoring

# From this many memories, a store that built its index answers from the cache it wrote.
ADOPT_CACHE_FROM = 5_000
# A build instead of a warm start when more than this many files and a REBUILD_SHARE-th of
# the folder changed since the cache (`_rebuild_cheaper`).
REBUILD_AFTER = 256
REBUILD_SHARE = 4

Signatures = Mapping[str, cache.Signature | None]


class Files(Protocol):
    """What loading needs of the store: its folder, and reading one file as the store does."""

    folder: MemoryFolder

    def load(self, path: Path, *, archived: bool) -> Memory | None:
        """The memory in one file (None: not one, or unreadable: the store notes why)."""

    def id_of(self, path: Path) -> tuple[str | None, bool]:
        """The id a path would hold (None: no memory), and whether it is archived."""

    def read_all(self) -> list[Memory]:
        """Every memory of the folder, read from its file."""

    def forget(self) -> None:
        """Drop what is known of every file (problems, signatures seen)."""

    def keep_problem(self, relative: str, problem: tuple[str, int | None, int | None]) -> None:
        """A file the cache could not index, unchanged since: still a problem."""

    def seen_later(self, unchanged: Collection[str], signatures: Signatures) -> None:
        """The files the cache had right: their signatures, to be remembered when needed."""

    def entries(self, signatures: Signatures) -> dict[str, cache.Entry]:
        """What a cache written now should record of each file."""

    def secrets(self) -> cache.Secrets | None:
        """What judges a memory's shown text for credentials, for a cache written now to keep
        (a hook then shows a memory the cache holds clean without the patterns)."""


@dataclass
class Loaded:
    """The index a store answers from, and how it was had."""

    index: Index
    how: str
    """"cache" (warm start), "built" (read every file) or "partial" (build=False, no cache)."""
    wrote_cache: bool = False
    build_needed: bool = False
    """build=False only: the cache is missing, stale or damaged, and a build should run."""
    left_out: int = 0
    """build=False only: files changed since the cache that this index lacks."""
    walk: cache.Walk | None = None
    """The stat walk this index was brought in line with (a reconcile compares the next with it)."""


def load_index(
    files: Files,
    *,
    scoring: Scoring,
    half_life_days: float | None,
    recover: Callable[[], Iterable[Memory]],
    started: int,
    build: bool = True,
    by_folders: bool = False,
    settle: bool = False,
) -> Loaded:
    """The index of the folder of `files` (see the module docstring).

    `by_folders` (build=False only: a hook answering with no server) lists only
    the folders whose stat changed since the cache (`cache.scan_changed`)
    instead of stat-ing every file; every other open walks the whole folder.
    `settle` (a build in the background, which no prompt waits for): a large folder's
    build sleeps out what is left of the racy window before it checks the files that were
    within it (`cache.settled`), rather than list them for the next process to read again.
    """
    with gc_paused():  # a set and a dict entry per file, none of them garbage
        warm = _from_cache(files, scoring, half_life_days, recover, started, build,
                           by_folders and not build)
    if warm is not None:
        return warm
    signatures = cache.scan(files.folder)
    if not build:
        return _partial(files, signatures, scoring, half_life_days, recover)
    if len(signatures) >= ADOPT_CACHE_FROM:
        built = _built_to_cache(files, signatures, scoring, half_life_days, recover, started,
                                settle)
        if built is not None:
            return built
        # The state folder cannot take a cache: an index held in memory, as for a small folder.
    with gc_paused():  # thousands of memories made, none of them garbage
        memories = files.read_all()
    index = Index(half_life_days=half_life_days, scoring=scoring, recover=recover)
    index.add_many(memories)
    del memories
    wrote = save(files, index, signatures, started)
    return Loaded(_adopted(files, index, signatures, recover), "built", wrote_cache=wrote,
                  walk=signatures)


def _built_to_cache(
    files: Files, signatures: Signatures, scoring: Scoring, half_life_days: float | None,
    recover: Callable[[], Iterable[Memory]], started: int, settle: bool = False,
) -> Loaded | None:
    """A large folder's cold build: the cache written straight from the files, then read.

    No index is held in memory while it is built (`cache.build`: a tenth of
    the memory), and the store answers from the cache as it would after
    `_adopted`. The cache read back must be the one this build wrote (the same
    files seen, as many memories): another build's may have been renamed over
    it, and is then checked against the files as on a warm start. None when
    the state folder cannot take a cache.
    """
    written = cache.build(  # the entries asked for once every file was read
        files.folder, _in_id_order(files), lambda: files.entries(signatures),
        scoring=scoring, started_ns=started,
        walk=signatures if isinstance(signatures, cache.Walk) else None,
        secrets=files.secrets(), settle=settle,
    )
    if written is None:
        return None
    found = cache.load(
        files.folder, scoring=scoring, half_life_days=half_life_days, recover=recover
    )
    if found is not None and isinstance(signatures, cache.Walk):
        changes = found.compare(signatures)
        failed = {signatures.names[at] for at in signatures.failed}
        # What this build saw of every file, and as many memories (its racy files too:
        # what it read of them is what it wrote; the next start reads them again).
        if not changes.differs - failed and not changes.removed and len(found.index) == written:
            return Loaded(found.index, "built", wrote_cache=True)
    with gc_paused():
        warm = _from_cache(files, scoring, half_life_days, recover, started, True)
    if warm is None:
        return None
    return Loaded(warm.index, "built", wrote_cache=True)


def _in_id_order(files: Files) -> Iterator[Memory]:
    """Every memory of the folder, read from its file, in id order: what an index built
    from `read_all` numbers them by (of two files of one id, the later one read wins)."""
    folder = files.folder
    paths: dict[str, list[tuple[Path, bool]]] = {}
    for archived in (False, True):
        for path in folder.iter_files(archived=archived):
            memory_id = folder.archived_id_for(path) if archived else folder.id_for(path)
            if memory_id is not None:
                paths.setdefault(memory_id, []).append((path, archived))
    for memory_id in sorted(paths):
        chosen = None
        for path, archived in paths.pop(memory_id):
            memory = files.load(path, archived=archived)
            if memory is not None:
                chosen = memory
        if chosen is not None:
            yield chosen


def save(files: Files, index: Index, signatures: Signatures, started: int) -> bool:
    """Write the on-disk cache; a state folder that cannot take it just means no cache."""
    return cache.save(files.folder, index, files.entries(signatures), started_ns=started,
                      walk=signatures if isinstance(signatures, cache.Walk) else None,
                      secrets=files.secrets())


def forget_cache(folder: MemoryFolder) -> None:
    """Remove a cache found damaged (the next build writes a good one)."""
    with contextlib.suppress(OSError):
        cache.cache_path(folder).unlink()


def _from_cache(
    files: Files, scoring: Scoring, half_life_days: float | None,
    recover: Callable[[], Iterable[Memory]], started: int, build: bool,
    by_folders: bool = False,
) -> Loaded | None:
    """The cached index with what changed since applied; None when there is no usable cache."""
    found = cache.load(
        files.folder, scoring=scoring, half_life_days=half_life_days, recover=recover
    )
    if found is None:
        return None
    shortcut = cache.scan_changed(files.folder, found) if by_folders else None
    signatures = shortcut if shortcut is not None else cache.scan(files.folder)
    if build and _rebuild_cheaper(found, signatures):
        return None
    try:
        stale, left_out = _apply_changes(files, found, signatures, None if build else HOOK_READS)
    except cache.CacheCorrupt:
        # Damaged where the header did not show it: build from the files instead.
        files.forget()
        forget_cache(files.folder)
        return None
    index = found.index
    loaded = Loaded(index, "cache", left_out=left_out, walk=signatures)
    moved = index.averages_moved()
    if not build:
        # Re-weighing (an average moved) or rewriting (many changed) is the build's work.
        loaded.build_needed = bool(left_out) or moved or stale > cache.REWRITE_AFTER
        return loaded
    if moved:
        # Exactly what a fresh build would hold; rare, as it takes a grid step.
        index.reweigh()
        loaded.wrote_cache = save(files, index, signatures, started)
    elif stale > cache.REWRITE_AFTER:
        loaded.wrote_cache = save(files, index, signatures, started)
    return loaded


def _rebuild_cheaper(found: cache.Loaded, walk: cache.Walk) -> bool:
    """Whether so much changed since the cache (a folder just cloned or pulled into a cache of
    its empty self) that a build from the files is cheaper than bringing the index along.

    A changed memory put into a loaded index costs about four times its share of a whole
    build (its terms weighed in and out of every posting list one by one). Only files
    whose stat changed count: one merely within the racy window is read again and, its
    bytes the same, not put.
    """
    changed = len(found.compare(walk).differs)
    return changed > REBUILD_AFTER and changed * REBUILD_SHARE > len(walk)


def _apply_changes(
    files: Files, found: cache.Loaded, walk: cache.Walk, most: int | None
) -> tuple[int, int]:
    """Bring a loaded cache in line with the stat walk.

    Returns the files looked at again, and those left out of the index because
    more than `most` (None: no limit) would have had to be read.
    """
    index = found.index
    prefix = str(files.folder.root) + os.sep
    changes = found.compare(walk)
    stale = 0
    for relative in changes.removed:
        stale += 1
        memory_id, _ = files.id_of(Path(prefix + relative))
        if memory_id is not None:
            index.remove(memory_id)
    removed = set(changes.removed)
    for relative, problem in found.problems.items():
        if relative not in removed and relative not in changes.differs:
            files.keep_problem(relative, problem)
    # The unchanged files' entries are made when first needed (a hook never does).
    files.seen_later(changes.unchanged, walk)
    changed = sorted(changes.again)
    left_out = 0
    if most is not None and len(changed) > most:
        # Left out rather than answered from a copy the file no longer holds (and
        # withheld, not removed: removing weighs each memory again, as costly as a read).
        ids = [files.id_of(Path(prefix + relative))[0] for relative in changed[most:]]
        index.withhold([memory_id for memory_id in ids if memory_id is not None])
        left_out = len(changed) - most
        changed = changed[:most]
    for relative in changed:
        stale += 1
        path = Path(prefix + relative)
        memory_id, archived = files.id_of(path)
        memory = files.load(path, archived=archived)
        if memory is None:
            if memory_id is not None:
                index.remove(memory_id)
            continue
        cached = index.get(memory.id)
        if cached is None or cached.sha256 != memory.sha256 or cached.path != memory.path:
            index.put(memory)
    return stale + left_out, left_out


def _partial(
    files: Files, signatures: Signatures, scoring: Scoring, half_life_days: float | None,
    recover: Callable[[], Iterable[Memory]],
) -> Loaded:
    """build=False without a cache: a small folder read directly, a larger one not at all."""
    index = Index(half_life_days=half_life_days, scoring=scoring, recover=recover)
    loaded = Loaded(index, "partial", build_needed=bool(signatures))
    if len(signatures) > HOOK_READS:
        loaded.left_out = len(signatures)
        return loaded
    prefix = str(files.folder.root) + os.sep
    memories = []
    for relative in sorted(signatures):
        path = Path(prefix + relative)
        memory = files.load(path, archived=files.id_of(path)[1])
        if memory is not None:
            memories.append(memory)
    index.add_many(memories)
    return loaded


def _adopted(
    files: Files, index: Index, signatures: Signatures, recover: Callable[[], Iterable[Memory]]
) -> Index:
    """After a build, the index of the cache just written, as a warm start would have it.

    Its postings are then read from the file as queries need them instead
    of held in memory, which for a large folder is most of a long-lived
    process's memory. Only for a folder of ADOPT_CACHE_FROM memories or
    more (a smaller one's postings take a few megabytes, and answer a
    little faster from memory), and only when the cache holds exactly what
    was built: every file unchanged since, none within the racy window.
    """
    if len(index) < ADOPT_CACHE_FROM:
        return index
    found = cache.load(
        files.folder, scoring=index.scoring, half_life_days=index.half_life_days,
        recover=recover,
    )
    if found is None or not isinstance(signatures, cache.Walk):
        return index
    changes = found.compare(signatures)
    if changes.again - {signatures.names[at] for at in signatures.failed}:
        return index
    if len(found.index) != len(index):
        return index
    return found.index
