"""MemoryStore: the memory folder, its live index and every change made through the tool.

Ties `disk/folder` (paths), `memory/file_format` (parse and edit),
`disk/safe_io` (checked reads and writes), `search/index` (search) and
`disk/watch` (the watcher) together. A store keeps its
index current with a watcher unless it is opened with `watch=False`, as the
one-shot paths (a CLI command, a hook) do. Reads for search come from the
index; `read` goes to the disk so that its sha256 is the file's own. Every
write takes the folder's write lock, checks `expected_sha256`, commits only
over the bytes it read (redoing from a fresh read when the file changed
meanwhile), re-indexes the file at once and regenerates MEMORY.md.

Why one module: it is one class, `MemoryStore`, the only writer of the
folder. Every change it makes (write, edit, replace, archive, restore, rename,
delete, create_file) shares the write lock, the record of the bytes each file
was read at (`_Seen`), the index and MEMORY.md's batching, and is read beside
the others it must agree with; what needs none of that lives in the rooms below
(paths in `disk/folder`, parsing and edits in `memory/`, secrets in `checks/`).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .disk.folder import MemoryFolder, read_memory
from .disk.locks import WriteLock, read_generation, write_lock
from .disk.safe_io import (
    Seen,
    atomic_write,
    create,
    file_mode,
    make_dirs,
    move,
    move_back,
    remove,
    rewrite,
)
from .disk.stats import Stats
from .errors import (
    ConflictError,
    FolderError,
    InvalidId,
    InvalidMemory,
    MemoryLocked,
    MemoryNotFound,
    SageMemError,
    SecretRefused,
    StoreLocked,
)
from .memory.file_format import (
    DELETE,
    conflict_marker_line,
    memory_text,
    parse_bytes,
    parsed_or_none,
    sha256_bytes,
)
from .memory.json_view import camel_dict
from .memory.value import MAX_FILE_BYTES, Memory, memory_from_meta, now_iso
from .search.index import Hit, Index
from .search.query import Filters

if TYPE_CHECKING:
    from datetime import datetime

    from .memory.body_edits import BodyEdit
    from .search.loading import Loaded

# The write side (`memory/edits`, `fields`, `links`, `markdown`, `catalog`) is imported
# where it is used: a hook opens a store to search and never writes (issue 13;
# tests/test_hook_imports.py keeps it off the hook's path).

_UNSET: Any = object()
_UNREADABLE = (-1, -1, -1, -1)
# A reconcile looks at the files it found changed this many at a time, under the refresh lock.
RECONCILE_CHUNK = 64
# The longest a reconcile's walk waits at once for the hooks being answered (`hold_walks`).
HOLD_SECONDS = 1.0
# Each failed attempt means another writer succeeded meanwhile, so this bounds
# how many concurrent changes one feedback call will wait out.
_FEEDBACK_ATTEMPTS = 20
# What may keep a count (stats.json) from being kept: never a reason to report a change that was
# made (a feedback, an archive, a rename) as failed, nor to leave MEMORY.md behind it.
_UNCOUNTED = (OSError, StoreLocked)


@dataclass(frozen=True)
class Problem:
    """A file that could not be indexed, and why."""

    path: Path
    message: str
    line: int | None = None
    column: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {**camel_dict(self), "path": str(self.path)}


def load_memory(
    folder: MemoryFolder, path: Path, memory_id: str, *, archived: bool = False
) -> Memory:
    """Read and parse one memory file. Raises InvalidMemory (with the reason) when it cannot."""
    parsed = parse_bytes(read_memory(folder, path).raw or b"", path)
    return memory_from_meta(
        memory_id, path, parsed.meta, parsed.body,
        sha256=parsed.sha256, archived=archived, problems=parsed.problems,
    )


class MemoryStore:
    """A memory folder with a live in-memory index.

    >>> with MemoryStore("~/.sage-mem/memory") as store:
    ...     hits = store.search("how do I run the tests", limit=5)
    """

    _settles = False
    """Whether a build of this store sleeps out what is left of the racy window before it
    checks the files that were within it (`search.cache.settled`): a build no prompt waits
    on (`daemon --build-only`'s store); any other never sleeps for it."""

    id_prefix = ""
    """How other folders' readers name this folder's ids (`team:`, set by `Folders` for a
    shared folder): its not-found errors name the id as the person gave it."""

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        watch: bool = True,
        poll: bool = False,
        half_life_days: float | None = None,
        state_dir: Path | str | None = None,
        reconcile_seconds: float = 30.0,
        build: bool = True,
        by_folders: bool = False,
    ) -> None:
        """Open the folder and load its index (see `reload`).

        `build=False` is for a process that must not wait for a build (a
        hook): the index is the cache's plus a few files read directly, the
        cache is never written, and `build_needed` says when a build should
        run elsewhere. `by_folders` (with `build=False`: a hook answering with
        no server) finds what changed since the cache by the folders' stat,
        not every file's (`search.cache.scan_changed`): a file edited in place
        in an unchanged folder keeps its cached form in the index, so what is
        shown of a memory is read again first (`current`).
        """
        from .disk.folder import default_folder

        self.folder = MemoryFolder(
            path if path is not None else default_folder(), state_dir=state_dir
        )
        self.folder.check_exists()
        self.root = self.folder.root
        self.index = Index(half_life_days=half_life_days, recover=self._recover_index)
        self.stats = Stats(self.folder.state_path("stats.json"))
        self._problems: dict[str, Problem] = {}
        # What was last seen of each file (size, mtime, inode, ctime), by path: see `_seen`.
        self._seen_map = _Seen()
        self._seen_later: tuple[str, Collection[str], Mapping[str, Any]] | None = None
        # The stat walk (`cache.Walk`) the index was last brought in line with: see `reconcile`.
        self._walked: Any = None
        self._refresh_lock = threading.RLock()
        # Threads answering a hook, and how many holds each has on (see `hold_walks`).
        self._holds: dict[int, int] = {}
        self._holds_changed = threading.Condition()
        self._generation = -1
        self._batch_depth = 0
        self._batch_dirty = False
        self._watcher = None
        self._held: WriteLock | None = None
        self._build = build
        self._by_folders = by_folders and not build
        # The semantic signal (search/semantic.py): _UNSET until the first search asks.
        self._semantic: Any = _UNSET
        self._embedding: Any = None
        self.loaded: Loaded | None = None
        if watch:
            # Watching before the load: a file saved while the folder loads (an editor, a
            # `git pull` as the server starts) is an event refreshed once the load is done,
            # not a change left unseen until the first periodic reconcile.
            from .disk.watch import Watcher

            self._watcher = Watcher(self, poll=poll, reconcile_seconds=reconcile_seconds)
            self._watcher.start()
        try:
            self.reload()
        except BaseException:
            self.close()
            raise

    # lifecycle

    def close(self) -> None:
        """Stop the watcher (if any). The store can still be searched afterwards."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._embedding is not None:
            self._embedding.stop()
            self._embedding = None

    def follow_hand_edits(self) -> None:
        """Bring MEMORY.md up to date whenever the watcher sees memories change on disk.

        For the long-lived interfaces (`sage-mem serve`, `sage-mem ui`): a
        memory made by hand (an editor, `git pull`) while one runs is then
        listed in MEMORY.md as one written through the tool is, and the audit
        finds no `missing-from-index`. A store without a watcher ignores it.
        """
        if self._watcher is not None:
            self._watcher.keep_catalog = True

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.root)!r}, memories={len(self.index)})"

    # loading and keeping current

    def reload(self) -> None:
        """Bring the index in line with the whole folder.

        From the on-disk cache when there is a usable one, reading again only
        the files whose stat differs from what the cache saw; else by reading
        every file, after which the cache is written for the next process
        (`search/loading.py` decides). A store opened with `build=False` never
        builds nor writes the cache: `build_needed` then says one should run.
        """
        import time

        from .search.loading import load_index

        with self._refresh_lock:
            # Read before the walk: a write by another process after it shows as a change.
            self._generation = read_generation(self.folder.state_dir)
            self._problems.clear()
            self._forget_seen()
            loaded = load_index(
                _Files(self), scoring=self.index.scoring, half_life_days=self.index.half_life_days,
                recover=self._recover_index, started=time.time_ns(), build=self._build,
                by_folders=self._by_folders, settle=self._settles and self._build,
            )
            self.index = loaded.index
            self.loaded = loaded
            self._walked = None if loaded.left_out else loaded.walk
            if loaded.how == "built" and self._walked is not None:
                self._seen_map.touched = self._differing_from(self._walked)

    @property
    def build_needed(self) -> bool:
        """True when this store (opened with build=False) lacks a current cache to answer from."""
        return self.loaded is not None and self.loaded.build_needed

    @property
    def _seen(self) -> dict[str, tuple[int, int, int, int]]:
        """What was last seen of each file (size, mtime, inode, ctime), by path, to skip re-reading.

        The ctime is there because an in-place edit may keep the size and the
        mtime (`touch -r`, an editor that restores it, a coarse clock); it cannot
        set the ctime back.

        After a warm start the entries of the files the cache had right are
        made on first use: for 100,000 files they cost 0.1 s, which a hook
        process answering one prompt never needs. Entries made since (problems,
        files read again) win over them.
        """
        if self._seen_later is not None:
            with self._refresh_lock:
                later, self._seen_later = self._seen_later, None
                if later is not None:
                    prefix, unchanged, signatures = later
                    seen = _Seen(zip(
                        map(prefix.__add__, unchanged),
                        map(signatures.__getitem__, unchanged),
                        strict=True,
                    ))
                    dict.update(seen, self._seen_map)
                    seen.touched = self._seen_map.touched
                    self._seen_map = seen
        return self._seen_map

    def _forget_seen(self) -> None:
        self._seen_later = None
        self._seen_map = _Seen()

    def _differing_from(self, walk: Any) -> set[str]:
        """The paths whose entry in `_seen` is not what `walk` found (after a build read them)."""
        prefix = str(self.root) + os.sep
        found = {prefix + name: at for at, name in enumerate(walk.names)}
        seen = self._seen
        touched = {key for key in seen if key not in found}
        for key, at in found.items():
            if seen.get(key) != walk.signature(at):
                touched.add(key)
        return touched

    def _recover_index(self) -> builtins.list[Memory]:
        """Every memory read again from its file, for an index whose cache turned out damaged.

        A store that may not build (a hook) reads nothing: it answers from an
        empty index, and says a build is needed.
        """
        from .search.loading import forget_cache

        forget_cache(self.folder)
        # Not under _refresh_lock: the caller holds the index's lock, which refresh takes
        # after _refresh_lock, and the other order could deadlock.
        self._problems.clear()
        self._forget_seen()
        self._walked = None  # the next reconcile looks at every file
        if not self._build:
            if self.loaded is not None:
                self.loaded.build_needed = True
            return []
        return _Files(self).read_all()

    def _id_of(self, path: Path) -> tuple[str | None, bool]:
        memory_id = self.folder.id_for(path)
        if memory_id is not None:
            return memory_id, False
        archived_id = self.folder.archived_id_for(path)
        return archived_id, archived_id is not None

    def _load(self, path: Path, *, archived: bool) -> Memory | None:
        # Called under _refresh_lock. What it saw goes into `_seen_map` itself: an entry
        # made since a warm start wins over the lazy ones (`_seen`), so a hook reading one
        # changed file never makes the entries of the other 100,000.
        key = str(path)
        memory_id = self.folder.archived_id_for(path) if archived else self.folder.id_for(path)
        if memory_id is None:
            return None
        try:
            self.folder.check_reachable(memory_id, archived=archived, path=path)
        except InvalidId as exc:
            self._problems[key] = Problem(
                path, f"{path}: not indexed, no id can reach this file name ({exc}): rename it"
            )
            self._seen_map[key] = _UNREADABLE
            return None
        try:
            st = path.stat()
            memory = load_memory(self.folder, path, memory_id, archived=archived)
        except FileNotFoundError:
            self._problems.pop(key, None)
            self._seen.pop(key, None)
            return None
        except (InvalidMemory, InvalidId, OSError, ValueError) as exc:
            # What reading and parsing a file can raise: InvalidMemory for what the read or
            # the parser refuses (unreadable, bad YAML, binary, too large, not UTF-8),
            # InvalidId for a symlink leading outside the folder, OSError for the read
            # itself, ValueError for a decoding the parser did not catch. Anything else
            # is a bug, and surfaces as one.
            self._problems[key] = _problem(path, exc)
            self._seen_map[key] = _UNREADABLE
            return None
        self._problems.pop(key, None)
        self._seen_map[key] = _signature(st)
        return memory

    def refresh(self, paths: Iterable[Path | str]) -> int:
        """Bring the index up to date for these paths (files or folders); returns changes made.

        Event types are not trusted: editors save by rename and `git checkout`
        rewrites hundreds of files, so each path is simply looked at again.
        The folder itself (or a folder holding it) is a `reconcile`.
        """
        changed = 0
        whole = False
        with self._refresh_lock:
            updates: list[Memory] = []
            for raw in paths:
                path = Path(os.path.abspath(raw))
                if _is_within(self.root, path):
                    whole = True
                    continue
                if self._id_of(path)[0] is None and self._id_of(path / "x.md")[0] is None:
                    # Nothing at or under this path can be a memory (.git/, an editor's
                    # temp file, autodream/, outside the folder): skip the walk and the
                    # scan that `git` and every atomic save would otherwise pay for.
                    continue
                if path.is_dir() and not path.is_symlink():
                    changed += self._refresh_folder(path, updates)
                    continue
                changed += self._refresh_file(path, updates)
            for memory in updates:
                self.index.put(memory)
        if changed:
            self._changed()
        if whole:
            changed += self.reconcile()
        return changed

    def _refresh_file(self, path: Path, updates: list[Memory]) -> int:
        memory_id, archived = self._id_of(path)
        key = str(path)
        if memory_id is None:
            if path != self.root and os.path.lexists(path):
                return 0  # a file that is not a memory (MEMORY.md, notes.txt) holds none
            return self._forget_under(path)
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is None:
            self._seen.pop(key, None)
            self._problems.pop(key, None)
            return int(self.index.remove(memory_id))
        if self._seen.get(key) == _signature(st) and (
            memory_id in self.index or key in self._problems
        ):
            return 0
        memory = self._load(path, archived=archived)
        if memory is None:
            return int(self.index.remove(memory_id))
        updates.append(memory)
        return 1

    def _refresh_folder(self, folder: Path, updates: list[Memory]) -> int:
        changed = 0
        present: set[str] = set()
        for archived in (False, True):
            start = folder
            in_archive = _is_within(folder, self.folder.archive_dir)
            if archived and not (folder == self.root or in_archive):
                continue
            if not archived and in_archive:
                continue
            if archived and folder == self.root:
                start = self.folder.archive_dir
            for path in self.folder.iter_files(archived=archived, under=start):
                present.add(str(path))
                changed += self._refresh_file(path, updates)
        prefix = str(folder) + os.sep
        for key in [k for k in self._seen if k.startswith(prefix) and k not in present]:
            changed += self._refresh_file(Path(key), updates)
        return changed

    def _forget_under(self, path: Path) -> int:
        prefix = str(path) + os.sep
        gone = [key for key in self._seen if key.startswith(prefix)]
        changed = 0
        for key in gone:
            memory_id, _ = self._id_of(Path(key))
            self._seen.pop(key, None)
            self._problems.pop(key, None)
            if memory_id is not None:
                changed += int(self.index.remove(memory_id))
        return changed

    def reconcile(self) -> int:
        """Compare the index with the folder by a stat walk and repair any difference.

        The watcher runs it every 30 s or more, to repair whatever its events
        missed. One stat walk, the warm start's (`cache.scan`), compared with
        the walk before it (`Walk.since`: in C, 3 ms at 100,000 files); then
        looked at again, as `refresh` looks at a file (read only when its
        signature is not the one last seen): the files new, changed or gone
        since that walk, those whose entry the store changed since (`_Seen`:
        an event's refresh, a write, a folder forgotten), and those that
        could not be indexed. After a build or a damaged cache without such
        a walk, every file is looked at. The walk waits between its chunks
        while a hook is answered (`hold_walks`), and the refresh lock is held
        only to look at RECONCILE_CHUNK files at a time, never for the walk.
        """
        from .search import cache

        with self._refresh_lock:
            before = self._walked
            touched, self._seen_map.touched = self._seen_map.touched, set()
        look = touched
        try:
            walk = cache.scan(self.folder, pause=self._between_chunks)
            prefix = str(self.root) + os.sep
            if before is None:
                look.update(map(prefix.__add__, walk.names))
                look.update(self._seen)
            else:
                changes = walk.since(before)
                look.update(map(prefix.__add__, changes.differs))
                look.update(map(prefix.__add__, changes.removed))
            look.update(self._problems.copy())
            keys = sorted(look)
            changed = 0
            for first in range(0, len(keys), RECONCILE_CHUNK):
                if first:
                    self._between_chunks()
                with self._refresh_lock:
                    updates: list[Memory] = []
                    for key in keys[first : first + RECONCILE_CHUNK]:
                        changed += self._refresh_file(Path(key), updates)
                    for memory in updates:
                        self.index.put(memory)
        except BaseException:
            with self._refresh_lock:  # looked at again by the next reconcile
                self._seen_map.touched.update(look)
            raise
        with self._refresh_lock:
            if self._walked is before:  # else a reload (or a later reconcile) set a newer one
                self._walked = walk
        if changed:
            self._changed()
        return changed

    def hold_walks(self) -> Callable[[], None]:
        """Hold the reconcile's stat walk off while a hook is answered; call what it returns after.

        A long-lived process answers hooks (`agents/hook_socket.py`) in threads
        of its own while its watcher's reconcile walks the folder in another:
        sharing the interpreter, and on a loaded machine a core, with that walk
        made a 6 ms answer take 20 to 40. The walk waits between its chunks
        (`cache.PAUSE_FILES` files, about a millisecond) while a hold is on,
        HOLD_SECONDS at most at a time, so a hook that never ends cannot stop
        it; a reconcile in the holding thread itself does not wait. Calling
        the returned function again does nothing.
        """
        ident = threading.get_ident()
        with self._holds_changed:
            self._holds[ident] = self._holds.get(ident, 0) + 1
        released = False

        def release() -> None:
            nonlocal released
            with self._holds_changed:
                if released:
                    return
                released = True
                left = self._holds.pop(ident) - 1
                if left:
                    self._holds[ident] = left
                elif not self._holds:
                    self._holds_changed.notify_all()

        return release

    def _between_chunks(self) -> None:
        """Where a reconcile waits while a hook is answered (`hold_walks`), and where the
        watcher's own reconcile refreshes the changes heard since it began (`refresh_meanwhile`:
        an editor's save does not wait for the whole walk)."""
        watcher = self._watcher
        if watcher is not None:
            watcher.refresh_meanwhile()
        if not self._holds:
            return
        import time

        ident = threading.get_ident()
        deadline = time.monotonic() + HOLD_SECONDS
        with self._holds_changed:
            while self._holds and ident not in self._holds:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._holds_changed.wait(left)

    # reading

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
        model_tokens: int | None = None,
        now: datetime | None = None,
        max_postings: int | None = None,
        refine: bool = False,
    ) -> list[Hit]:
        """Ranked compact hits for `query`; never reads a file.

        With the semantic extra and vectors made (`embed`, `keep_vectors`), the
        lexical and semantic rankings fused (`search/fusion.py`); else lexical.
        `model_tokens` bounds what the model may read of the query: a longer
        query is answered lexically (a hook's budget: `context.HOOK_MODEL_TOKENS`).
        `now` is the query's date, against which its time words are read ("10 days
        ago", 上周: `search/timewords.py`); default the current time.
        `max_postings` bounds the postings a lexical search reads (`Index.search`; a
        hook's, `context.HOOK_MAX_POSTINGS`). `refine` (a person's or an agent's search:
        `sage-mem search`, `memory_search`) lets an unbounded lexical search look twice
        (`Index.search`: feedback from its best hits, a long memory's best passage), and
        orders a fused search's top few for a question asking how long or when
        (`fusion.search`, `Index.span_order`).
        """
        filters = Filters(category, project, tags, archived)
        semantic = self._semantic_signal()
        if semantic is not None and len(semantic) and (
                model_tokens is None or semantic.query_tokens(query) <= model_tokens):
            from .search import fusion

            try:
                return fusion.search(self.index, semantic, query, limit=limit, offset=offset,
                                     filters=filters, now=now, refine=refine)
            except (OSError, RuntimeError, ValueError):
                pass  # the model failed on this query: answered lexically
        return self.index.search(query, limit=limit, offset=offset, filters=filters, now=now,
                                 max_postings=max_postings, refine=refine)

    # the semantic signal (optional: `embedder.INSTALL_HINT`)

    def _semantic_signal(self) -> Any:
        """The folder's vectors for search, or None (a hook's store never has them)."""
        if self._semantic is _UNSET:
            self._semantic = None
            if self._build:
                from .search.embedder import available
                from .search.vectors import vectors_path

                if available() is not None and vectors_path(self.folder).is_file():
                    from .search.semantic import open_semantic

                    self._semantic = open_semantic(self.folder)
        return self._semantic

    def _semantic_to_make(self, embedder: Any) -> Any:
        from .search.embedder import unavailable

        why = unavailable(embedder)
        if why is not None:  # before the import: search/semantic.py needs numpy at load
            raise SageMemError(why)
        from .search.semantic import Semantic, open_semantic

        current = self._semantic_signal()
        if embedder is None and isinstance(current, Semantic):
            return current
        semantic = open_semantic(self.folder, embedder, create=True)
        if semantic is None:  # the backend failed to load (a broken install)
            raise SageMemError(unavailable() or "semantic search: its model failed to load")
        self._semantic = semantic
        return semantic

    def embed(self, progress: Callable[[int, int], None] | None = None, *,
              embedder: Any = None) -> Any:
        """Make the vectors the folder's memories lack (a backfill); returns `semantic.Updated`.

        `progress(done, total)` after each batch. Raises SageMemError when the
        semantic extra is not installed (or SAGE_MEM_SEMANTIC turns it off).
        `embedder` (a `search.embedder.Embedder`) replaces the default backend.
        """
        semantic = self._semantic_to_make(embedder)
        return semantic.update(self.index.memories(), progress)

    def keep_vectors(self, log: Callable[[str], None], *, embedder: Any = None) -> bool:
        """Keep the vectors current in a background thread, for a long-lived process.

        Made at once for the memories that lack one, then after every change
        to the index (a write, or the watcher seeing a file edited), with the
        progress in `log`. False (nothing started) without the semantic extra.
        """
        if self._embedding is not None:
            return True
        try:
            semantic = self._semantic_to_make(embedder)
        except SageMemError:
            return False
        from .search.semantic import Background

        # Its calls into the model wait while a hook is answered, as the reconcile's walk does.
        self._embedding = Background(semantic, lambda: self.index.memories(), log,
                                     pause=self._between_chunks)
        self.add_listener(self._embedding.poke)
        self._embedding.start()
        return True

    def read(self, memory_id: str) -> Memory:
        """One memory in full, read from disk (`archive/...` ids read archived memories)."""
        path = self.folder.path_for(memory_id, allow_archived=True)
        canonical = self.folder.normalize_id(memory_id, allow_archived=True)
        if not path.is_file():
            raise MemoryNotFound(self._not_found_message(canonical), path=path)
        return load_memory(self.folder, path, canonical, archived=canonical.startswith("archive/"))

    def shown_clean(self, memory: Memory) -> bool:
        """Whether nothing of `memory` a hook shows needs masking, known without the credential
        patterns: `memory` is the index's own copy of a cache record (as `current` returns
        it when the file's bytes are the ones indexed) that the cache, written under the
        rules installed now, judged clean (`checks/credentials.shown_secrets`). False
        whenever that is not known: the caller then checks."""
        mark = credential_rules_mark()
        return mark is not None and self.index.shown_clean(memory, mark)

    def current(self, memory: Memory) -> Memory | None:
        """`memory` as its file holds it now, for what is about to be shown to an agent.

        The index (above all a hook's, answered from the cache) may hold a copy
        the file no longer has: an edit in place moves no folder's mtime, and
        may land between the store's open and the answer. Itself when the
        file's bytes are the ones indexed; the file read again when they
        changed (same id, its path its own); None when it is gone or no longer
        a memory. One read of a small file and its hash (under a millisecond);
        parsed (and the YAML parser imported) only when its bytes changed.
        """
        try:
            raw = read_memory(self.folder, memory.path).raw or b""
            if sha256_bytes(raw) == memory.sha256:
                return memory
            parsed = parse_bytes(raw, memory.path)
            return memory_from_meta(memory.id, memory.path, parsed.meta, parsed.body,
                                    sha256=parsed.sha256, archived=memory.archived,
                                    problems=parsed.problems)
        except (InvalidMemory, InvalidId, OSError, ValueError):
            return None

    def list(
        self,
        *,
        category: str | Sequence[str] | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        archived: bool = False,
    ) -> list[Memory]:
        """Memories passing the filters, sorted by id (from the index)."""
        if category is None and project is None and tags is None:
            # The same memories in one pass, a tenth of `select`'s cost (which asks the index's
            # id table for each memory's number): MEMORY.md after every change leans on it.
            return [m for m in self.index.memories() if archived or not m.archived]
        return self.index.select(Filters(category, project, tags, archived))

    # Below `def list`, a bare `list` in this class body names that method.
    def problems(self) -> builtins.list[Problem]:
        """Files that could not be indexed, sorted by path.

        As the store holds them now, without waiting for a refresh in progress:
        a server answers every hook with these, and the watcher's stat walk of
        a large folder holds the refresh lock for seconds (issue 13). The copy
        is one call in C, so a walk changing them meanwhile cannot break it.
        """
        found = self._problems.copy()
        return [found[key] for key in sorted(found)]

    def baselines(self, *, project: str | None = None, limit: int = 8) -> builtins.list[Memory]:
        """Baseline memories by `baselinePriority` (higher first), then id."""
        chosen = [m for m in self.list(project=project) if m.baseline]
        chosen.sort(key=lambda m: (-m.baseline_priority, m.id))
        return chosen[:limit]

    def _not_found_message(self, memory_id: str) -> str:
        import difflib  # only for a not-found message

        named = self.id_prefix + memory_id
        if not self.root.is_dir():
            return f"no memory {named!r}: the folder {self.root} is gone"
        # Not the id itself: the index may still hold a memory whose file was just deleted.
        others = sorted(self.index.ids() - {memory_id})
        close = difflib.get_close_matches(memory_id, others, n=1, cutoff=0.7)
        hint = f" (did you mean {self.id_prefix + close[0]!r}?)" if close else ""
        return f"no memory {named!r}{hint}"

    # writing

    def write(
        self,
        memory_id: str,
        *,
        description: str | None = None,
        body: str | None = None,
        category: str | None = None,
        name: str | None = None,
        summary: str | None = None,
        aliases: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        trust: float | None = None,
        baseline: bool | None = None,
        baseline_priority: int | None = None,
        project: str | None = None,
        supersedes: Sequence[str] | None = None,
        locked: bool | None = None,
        expected_sha256: str | None = None,
        allow_secret: bool = False,
        stamp: str | None = None,
    ) -> Memory:
        """Create a memory, or update the fields given (None leaves a field as it is).

        An edit stamps `updated` with now; `stamp` gives the `updated` it leaves instead,
        for an edit that does not say the fact again: the dream's tidying passes the
        memory's own (a date written beside "yesterday" does not make a September note
        look new), a merge the newest of the memories it joins; "" leaves a memory that
        has none without one. A new memory is stamped now all the same.

        Raises ConflictError when `expected_sha256` is given and the file on
        disk differs, MemoryLocked for a `locked: true` memory, InvalidMemory
        for a bad value or a file that cannot be rewritten safely, and
        SecretRefused when the write would add text that looks like a
        credential (unless `allow_secret`). Nothing is written when it raises.
        The field keywords are those of `fields.FIELDS` (tests/test_fields.py
        holds the two to each other).
        """
        given = locals()  # the keywords, before any other name is bound
        from .memory.edits import check_expected, edit_memory_text, new_memory_text
        from .memory.fields import FIELDS, check_unicode, validated

        path = self.folder.path_for(memory_id)
        canonical = self.folder.normalize_id(memory_id)
        if body is not None:
            if not isinstance(body, str):
                raise InvalidMemory("body must be text")
            check_unicode("body", body)
            conflict = conflict_marker_line(body)
            if conflict is not None:
                raise InvalidMemory(
                    f"{canonical}: not written: line {conflict} of the body starts git conflict "
                    "markers (<<<<<<< … >>>>>>>); choose between the versions first",
                    path=path,
                )
        fields = validated({field.name: given[field.name] for field in FIELDS})

        intended = {**fields, **({"body": body} if body is not None else {})}

        def edited(seen: Seen) -> bytes | None:
            check_expected(path, seen.raw, expected_sha256, intended)
            if seen.raw is None:
                check_id_secret(canonical, allow_secret=allow_secret)
                text = new_memory_text(canonical, path, fields, body)
                self.folder.check_new_id(canonical)
                data = _checked_bytes(path, text, None, allow_secret=allow_secret)
                self._make_folders_for(path)
                return data
            edited_text = edit_memory_text(canonical, path, seen.raw, fields, body, stamp=stamp)
            if edited_text is None:
                return None
            return _checked_bytes(path, edited_text, seen.raw, allow_secret=allow_secret)

        return self._rewritten(path, canonical, edited, f"{canonical} saved to {canonical}.md")

    def edit(
        self,
        memory_id: str,
        edit: BodyEdit,
        *,
        expected_sha256: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Make one partial edit of a memory's body (`memory.body_edits`: replace a unique
        string, append, or insert under a heading), as `write` writes: against the bytes on
        disk at the moment of the rename, with the same refusals (ConflictError for a stale
        `expected_sha256`, MemoryLocked, SecretRefused unless `allow_secret`, InvalidMemory
        for an edit that cannot be made or a file too big or unreadable; MemoryNotFound).
        """
        from .memory.edits import check_expected, partial_edit_text

        edit.check()
        path = self.folder.path_for(memory_id)
        canonical = self.folder.normalize_id(memory_id)

        def edited(seen: Seen) -> bytes | None:
            if seen.raw is None:
                raise MemoryNotFound(self._not_found_message(canonical), path=path)
            check_expected(path, seen.raw, expected_sha256)
            text = partial_edit_text(canonical, path, seen.raw, edit)
            return _checked_bytes(path, text, seen.raw, allow_secret=allow_secret)

        return self._rewritten(path, canonical, edited, f"{canonical} edited in {canonical}.md")

    def feedback(self, memory_id: str, helpful: bool) -> Memory:
        """Move trust a fifth of the way toward 1 (helpful) or toward 0 (unhelpful)."""
        if not isinstance(helpful, bool):
            raise InvalidMemory("helpful must be true or false")
        for attempt in range(_FEEDBACK_ATTEMPTS):
            memory = self.read(memory_id)
            if memory.archived:
                raise InvalidMemory(f"{memory.id}: archived memories take no feedback")
            step = (1.0 - memory.trust) * 0.2 if helpful else -memory.trust * 0.2
            trust = round(min(1.0, max(0.0, memory.trust + step)), 3)
            try:
                updated = self.write(memory.id, trust=trust, expected_sha256=memory.sha256)
                break
            except ConflictError:
                # Another writer changed the file between our read and our write:
                # step from its new trust rather than overwrite its change.
                if attempt == _FEEDBACK_ATTEMPTS - 1:
                    raise
        try:
            self.stats.record([memory.id], event="helpful" if helpful else "unhelpful")
        except _UNCOUNTED:
            pass
        return updated

    def archive(
        self,
        memory_id: str,
        reason: str,
        *,
        extra: Mapping[str, Any] | None = None,
        expected_sha256: str | None = None,
    ) -> Memory:
        """Move a memory to `archive/` with the reason in its frontmatter; never deletes.

        `extra` adds frontmatter keys to the archived file (e.g. `supersededBy`).
        With `expected_sha256`, a memory changed since it was read is not archived
        (ConflictError): the change may have been the reason to keep it.
        """
        from .memory.edits import with_marks
        from .memory.fields import check_unicode

        if not isinstance(reason, str) or not reason.strip():
            raise InvalidMemory("archiving needs a reason")
        check_unicode("reason", reason)
        reason = " ".join(reason.split())
        from .checks.credentials import find_secrets

        for match in find_secrets(reason):
            raise SecretRefused(
                f"not archived: the reason looks like it holds a {match.label} "
                f"({match.excerpt_redacted}); give a reason without it",
                kind=match.kind,
            )
        path = self.folder.path_for(memory_id)
        canonical = self.folder.normalize_id(memory_id)
        marks = {"archived": now_iso(), "archiveReason": reason, **(extra or {})}
        with self._write_lock():
            seen = self._check_movable(path, canonical, expected_sha256)
            target = self.folder.archive_dir / (canonical + ".md")

            def marked(moved: Seen) -> bytes | None:
                data = with_marks(moved.raw, marks, target)
                if data is not None and len(data) > MAX_FILE_BYTES:  # it would read as no memory
                    raise InvalidMemory(
                        f"{canonical} not archived (it stays where it was): with its reason "
                        f"it would be {len(data):,} bytes, over the {MAX_FILE_BYTES // 1024} "
                        "KB a memory may hold; give a shorter reason", path=path,
                    )
                return data

            marked(seen)  # a reason too long is refused before the file moves
            self.folder.check_contained(target)  # archive/ itself may be a symlink
            self._make_folders_for(target, archived=True)
            # The file moves first, whatever it holds by then (an edit made since our
            # read moves with it); the marks are then written over what was moved.
            wanted, target = target, move(path, target)
            if target != wanted:  # archive/ID.md was taken: the copy says whose id it had
                marks["archivedFrom"] = canonical
            try:
                self._rewrite(target, marked)
            except InvalidMemory:
                if move_back(target, path):
                    raise
                raise InvalidMemory(f"{canonical} moved to {target.relative_to(self.root)} "
                                    "but its archive reason was not written: too long",
                                    path=target) from None
            except OSError as exc:  # no room for the marks (a rename needs none)
                if move_back(target, path):
                    raise OSError(exc.errno, f"{canonical} not archived (it stays where it "
                                  f"was): {exc.strerror or exc}") from exc
                raise OSError(exc.errno, f"{canonical} moved to {target.relative_to(self.root)}"
                              f" but its archive reason was not written: "
                              f"{exc.strerror or exc}") from exc
            archived_id = self.folder.archived_id_for(target)
            assert archived_id is not None
            self._forget_moved(path, canonical)
            memory = self._note_written(target, archived_id, archived=True)
            self._count_renamed(canonical, archived_id)
            self._catalog_after(f"{canonical} archived to {archived_id}.md")
        return memory

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Hold MEMORY.md regeneration for many writes; regenerate once when the block ends.

        Each write otherwise re-renders the whole index (0.15 s at 10,000
        memories), which makes an import or a dream run quadratic.
        """
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0 and self._batch_dirty:
                self._batch_dirty = False
                self.regenerate_index()

    def regenerate_index(self) -> bool:
        """Rewrite MEMORY.md from the memories; True when its bytes changed."""
        with self._write_lock():
            return self._regenerate_catalog()

    def note_used(self, ids: Iterable[str]) -> None:
        """Count a retrieval for each id (kept in the state folder)."""
        try:
            self.stats.record(ids)
        except OSError:
            pass

    def restore(self, archived_id: str) -> Memory:
        """Move an archived memory back out of `archive/`, under its old id; never overwrites.

        `archive/project/x` (or just `project/x`) comes back as `project/x`, and a
        copy archived under a free name (`archive/x-2`, `archive/x` being taken)
        as the id its `archivedFrom` names. The
        marks `archive` added (`archived`, `archiveReason`, `archivedFrom`) are removed and
        `updated` is stamped; other keys stay (`supersededBy` still says what
        replaced it). The file is written whole under its new name before the
        archived copy goes, so a crash leaves two copies, never none. Raises
        MemoryNotFound when there is no such archived memory and ConflictError
        when a memory of that id exists now (nothing is moved then).
        """
        from .memory.edits import without_marks

        prefix = self.folder.archive_dir.name + "/"
        name = archived_id if archived_id.startswith(prefix) else prefix + archived_id
        source = self.folder.path_for(name, allow_archived=True)
        canonical = self.folder.normalize_id(name, allow_archived=True)
        with self._write_lock():
            raw = self._read_for_write(source).raw
            if raw is None:
                raise MemoryNotFound(f"no archived memory {canonical!r}", path=source)
            restored_id = self._archived_from(raw, source) or self.folder.normalize_id(
                canonical[len(prefix):]
            )
            target = self.folder.path_for(restored_id)
            self._check_free(target, restored_id)
            self._make_folders_for(target)
            self._move_to_free(source, target, restored_id)
            self._rewrite(target, lambda seen: without_marks(seen.raw))
            self._forget_moved(source, canonical)
            memory = self._note_written(target, restored_id)
            self._count_renamed(canonical, restored_id)
            self._catalog_after(f"{canonical} restored to {restored_id}.md")
        return memory

    def _archived_from(self, raw: bytes, path: Path) -> str | None:
        """The id an archived copy had (`archivedFrom`, set by `archive` when it took a free
        name), if it names one in service; else None (the copy's own name says it)."""
        meta = parse_bytes(raw, path).meta
        original = meta.get("archivedFrom") if isinstance(meta, dict) else None
        if not isinstance(original, str):
            return None
        try:
            return self.folder.normalize_id(original)
        except SageMemError:
            return None

    def rename(
        self, old_id: str, new_id: str, *, expected_sha256: str | None = None
    ) -> Renamed:
        """Give a memory a new id (a new file name or folder); never replaces a file.

        The file moves first (a no-clobber rename: ConflictError, nothing moved,
        when a file of the new id exists); then every `[[link]]` and
        `[text](x.md)` in the memories in service that named it is pointed at
        the new id, in its own style where that still reaches it, and so are
        `supersedes` lists and archived memories' `supersededBy`. The moved
        memory's own relative links are rewritten when its folder changes. Each
        rewrite is a checked write over the bytes read (redone when the file
        changed meanwhile) and each rewritten link is read back to name the
        memory it named before; `updated` is not stamped (the dream dates
        relative dates by it, and no fact changed). A memory that is locked,
        or whose file cannot be edited safely, keeps its links and is named in
        `Renamed.left`. Raises MemoryLocked for a locked memory, InvalidMemory
        for one whose file does not parse. With `expected_sha256`, a memory
        changed since it was read is not renamed (ConflictError, nothing moved).
        """
        from .memory.edits import relinked_text
        from .memory.links import Ids, folder_of

        old_path = self.folder.path_for(old_id)
        old = self.folder.normalize_id(old_id)
        new_path = self.folder.path_for(new_id)
        new = self.folder.normalize_id(new_id)
        if new == old:
            raise InvalidId(f"{old}: the new id is the same as the old one")
        check_id_secret(new, allow_secret=False)
        self.folder.check_new_id(new, moving_from=old)
        with self._write_lock():
            self._check_movable(old_path, old, expected_sha256)
            self._check_free(new_path, new)
            before = Ids.of([*(m.id for m in self.list()), old])
            after = before.renamed(old, new)
            self._make_folders_for(new_path)
            self._move_to_free(old_path, new_path, new)
            self._forget_moved(old_path, old)
            relinked: list[str] = []
            left: list[str] = []

            def relink(memory_id: str, path: Path, *, folder_before: str,
                       archived: bool = False) -> None:
                notes: list[str] = []

                def edited(current: Seen) -> bytes | None:
                    notes.clear()  # redone from a fresh read when the file changed meanwhile
                    text = relinked_text(
                        current.raw, path, old=old, new=new, before=before, after=after,
                        folder_before=folder_before, folder_after=folder_of(memory_id),
                        archived=archived, left=notes,
                    )
                    if text is None:
                        return None
                    return _checked_bytes(path, text, current.raw, allow_secret=False)

                try:
                    written = self._rewrite(path, edited)
                except (InvalidMemory, ConflictError, OSError) as exc:
                    left.append(f"{memory_id}: links not updated: {exc}")
                    return
                left.extend(f"{memory_id}: {note}" for note in notes)
                if written is not None and memory_id != new:
                    relinked.append(memory_id)
                    self._note_written(path, memory_id, archived=archived)

            relink(new, new_path, folder_before=folder_of(old))
            memory = self._note_written(new_path, new)
            for other in self.list():
                if other.id != new and ("[" in other.body or old in other.supersedes):
                    relink(other.id, other.path, folder_before=folder_of(other.id))
            for other in self.list(archived=True):
                successor = other.meta.get("supersededBy")
                if other.archived and isinstance(successor, str) and (
                    successor.removesuffix(".md") == old
                ):
                    relink(other.id, other.path, folder_before=folder_of(other.id),
                           archived=True)
            self._count_renamed(old, new)
            # Said in the error too, when MEMORY.md then fails (a full disk): else lost with it.
            stale = [note.split(": ", 1)[0] for note in left if ": links not updated: " in note]
            shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
            self._catalog_after(f"{old} renamed to {new}.md" + (
                f" (the links to it in {shown} still name {old}: see `sage-mem audit`)"
                if stale else ""))
        return Renamed(memory, old, tuple(relinked), tuple(left))

    def deletable_id(self, memory_id: str) -> str:
        """The archived memory `delete(memory_id)` would delete: `archive/x` as given, or `x`'s.

        Raises InvalidMemory when `x` is a memory in service (archive it first).
        """
        prefix = self.folder.archive_dir.name + "/"
        if memory_id.startswith(prefix):
            return self.folder.normalize_id(memory_id, allow_archived=True)
        live = self.folder.path_for(memory_id)
        if os.path.lexists(live):
            raise InvalidMemory(
                f"{self.folder.normalize_id(memory_id)}: in service; only an archived "
                "memory can be deleted (archive it first)",
                path=live,
            )
        return self.folder.normalize_id(prefix + memory_id, allow_archived=True)

    def delete(self, memory_id: str, *, expected_sha256: str | None = None) -> Memory:
        """Delete an archived memory for good: a person's act, never the tool's own.

        Only a memory in `archive/` can be deleted (`archive/x`, or `x` when no
        memory `x` is in service: InvalidMemory otherwise, archive it first).
        Agents' tools, the MCP server and the dream never call this; the CLI
        (`sage-mem delete`, after confirmation) and the page do. The file is
        deleted only if it still holds the bytes read under the write lock (and
        `expected_sha256`, when given: ConflictError otherwise, nothing
        deleted). Returns the memory as it was (a file that no longer parses is
        deleted too, and returned with its id, path and sha256 only).
        """
        from .memory.edits import check_expected

        canonical = self.deletable_id(memory_id)
        path = self.folder.path_for(canonical, allow_archived=True)
        with self._write_lock():
            seen = self._read_for_write(path)
            if seen.raw is None:
                raise MemoryNotFound(f"no archived memory {canonical!r}", path=path)
            check_expected(path, seen.raw, expected_sha256)
            try:
                parsed = parse_bytes(seen.raw, path)
                memory = memory_from_meta(
                    canonical, path, parsed.meta, parsed.body, sha256=parsed.sha256,
                    archived=True, problems=parsed.problems,
                )
            except InvalidMemory:
                memory = Memory(canonical, path, "", "", archived=True,
                                sha256=sha256_bytes(seen.raw))
            remove(path, seen, limit=MAX_FILE_BYTES)
            with self._refresh_lock:
                self._seen.pop(str(path), None)
                self._problems.pop(str(path), None)
                self.index.remove(canonical)
                self._count_write()
            self._changed()
            self._catalog_after(f"{canonical} deleted")
        return memory

    # change listeners (the web UI's live updates)

    # Replaced, never mutated: the watcher thread may be iterating the old tuple.
    _listeners: tuple[Callable[[], None], ...] = ()

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` after every change to the index; returns a function that stops it.

        It runs in the thread that made the change (the watcher's or a writer's),
        so it must be quick and thread-safe; an exception it raises is ignored.
        """
        self._listeners = (*self._listeners, callback)

        def remove() -> None:
            self._listeners = tuple(c for c in self._listeners if c is not callback)

        return remove

    def _changed(self) -> None:
        for callback in self._listeners:
            try:
                callback()
            except Exception:  # noqa: BLE001 - a listener must not break a write or the watcher
                pass

    def check_present(self, consequence: str = "") -> None:
        """FolderError when the folder was moved or deleted since this store opened it: its
        index, emptied by the watcher, would answer a search or a listing with nothing, which
        reads as "no memories"; `consequence` says what the caller did not do."""
        if not self.root.is_dir():
            said = f"; {consequence}" if consequence else ""
            raise FolderError(f"{self.root}: the memory folder is gone (moved or deleted){said}",
                              path=self.root)

    # internals

    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[WriteLock]:
        """The folder's write lock, held with an index that knows every other writer's changes.

        Another process (a second agent's MCP server, the CLI) may have written
        since this index was last current, and its watcher, if any, may not have
        caught up yet: MEMORY.md rendered from this index would then drop that
        memory. Each write counts up a generation in the state folder; a writer
        that finds a count it did not write reconciles with the folder first.
        """
        self.check_present("nothing written")
        try:
            self.folder.ensure_state_dir()
        except OSError as exc:
            raise FolderError(
                f"{self.folder.state_dir}: cannot create the state folder: {exc.strerror}",
                path=self.folder.state_dir,
            ) from None
        with write_lock(self.folder.root, self.folder.state_dir) as lock:
            if lock.generation != self._generation:
                self.reconcile()
            self._held = lock
            try:
                yield lock
            finally:
                self._held = None

    def _rewritten(self, path: Path, canonical: str, change: Callable[[Seen], bytes | None],
                   why: str) -> Memory:
        """Under the write lock: `path` rewritten by `change`, the memory as written, the
        catalog regenerated (`why` for its log)."""
        with self._write_lock():
            self._rewrite(path, change)
            memory = self._note_written(path, canonical)
            self._catalog_after(why)
        return memory

    def _check_free(self, target: Path, target_id: str) -> None:
        """Under the write lock, before a rename or a restore moves a memory to `target`:
        ConflictError when a file is there (a memory is never moved over another)."""
        if os.path.lexists(target):
            raise ConflictError(f"{target_id}: a memory of that id exists now; not overwritten "
                                "(archive or rename it first)", path=target)

    def _move_to_free(self, source: Path, target: Path, target_id: str) -> None:
        """Move `source` to `target`, a name found free; ConflictError (nothing moved) when a
        file took it meanwhile."""
        moved = move(source, target)
        if moved != target:  # a memory of that id appeared meanwhile: put it back
            move(moved, source)
            raise ConflictError(
                f"{target_id}: a memory of that id appeared; not overwritten", path=target
            )

    def _forget_moved(self, path: Path, memory_id: str) -> None:
        """What was known of a memory moved away from `path`."""
        with self._refresh_lock:
            self._seen.pop(str(path), None)
            self._problems.pop(str(path), None)
            self.index.remove(memory_id)

    def _count_renamed(self, old_id: str, new_id: str) -> None:
        """Carry a memory's usage counts to its new id (never a reason to fail the move)."""
        try:
            self.stats.rename(old_id, new_id)
        except _UNCOUNTED:
            pass

    def _make_folders_for(self, path: Path, *, archived: bool = False) -> None:
        """Make the folders above a file about to be created or moved to `path`, refusing
        a place a walk of the folder would not find (`check_walked`) or one outside it."""
        self.folder.check_walked(path, archived=archived)
        make_dirs(path.parent, root=self.root)
        self.folder.check_contained(path)

    def _check_movable(self, path: Path, canonical: str, expected_sha256: str | None) -> Seen:
        """Under the write lock, before an archive or a rename moves `path`: what it holds;
        MemoryNotFound, ConflictError for a stale `expected_sha256`, InvalidMemory or
        MemoryLocked."""
        from .memory.edits import check_expected

        seen = self._read_for_write(path)
        if seen.raw is None:
            raise MemoryNotFound(self._not_found_message(canonical), path=path)
        check_expected(path, seen.raw, expected_sha256)
        parsed = parse_bytes(seen.raw, path)
        if memory_from_meta(canonical, path, parsed.meta, parsed.body).locked:
            raise MemoryLocked(f"{canonical}: memory is locked (locked: true)", path=path)
        return seen

    def _read_for_write(self, path: Path) -> Seen:
        """The checked read a write is based on; a missing file is `Seen.absent()`.

        A symlink is read like any memory but never written through: a rewrite
        would put a copy where the person's link was, and the two names would
        part silently. InvalidMemory names the file to change instead.
        """
        try:
            if path.is_dir():
                raise IsADirectoryError(path)
            if os.path.islink(path):
                self.folder.check_contained(path)
                memory_id = self.folder.id_for(path) or path.name
                target = self.folder.id_for(os.path.realpath(path)) or os.readlink(path)
                raise InvalidMemory(
                    f"{memory_id}: a symlink to {target}; sage-mem does not write through a "
                    f"link: change {target} itself (or replace the link by hand)",
                    path=path,
                )
            return read_memory(self.folder, path)
        except FileNotFoundError:
            return Seen.absent()
        except (IsADirectoryError, NotADirectoryError):
            memory_id = self.folder.id_for(path) or path.name
            raise InvalidId(
                f"{memory_id}: a folder and a file would share this name", path=path
            ) from None

    def _rewrite(self, path: Path, transform: Callable[[Seen], bytes | None]) -> bytes | None:
        """Commit `transform` of what `path` holds; redone from a fresh read if it changes."""
        _, written = rewrite(
            path, transform, read=self._read_for_write, mode=file_mode(self.root),
            limit=MAX_FILE_BYTES,
        )
        return written

    def _note_written(self, path: Path, memory_id: str, *, archived: bool = False) -> Memory:
        """Index the file just written, as it is on disk now, and count the write."""
        # Stat before the read: a change after the stat shows as one to the next refresh.
        st = path.stat()
        memory = load_memory(self.folder, path, memory_id, archived=archived)
        with self._refresh_lock:
            self._seen[str(path)] = _signature(st)
            self._problems.pop(str(path), None)
            self.index.put(memory)
            self._count_write()
        self._changed()
        return memory

    def _count_write(self) -> None:
        """Count up the write generation (with the write lock held; see `_write_lock`)."""
        # -1 when it could not be counted: reconcile on the next write rather than trust a guess.
        self._generation = self._held.count() if self._held is not None else -1

    def catalog_text(self) -> str:
        """MEMORY.md as sage-mem writes it in a folder of its own, from the index."""
        from .memory import catalog

        return catalog.render(self.list(), self._catalog_retrievals())

    def _catalog_retrievals(self) -> dict[str, int]:
        from .memory import catalog

        # Only a folder too big for one line each needs to rank by use.
        if len(self.index) > catalog.MAX_LINES // 2:
            return self.stats.retrieval_counts()
        return {}

    def _catalog_after(self, done: str) -> None:
        """Bring MEMORY.md up to date after a change that is made; `done` says what it was.

        When MEMORY.md cannot be written (a full disk), the change stands: the
        error says so first, and how MEMORY.md is brought up to date, so that
        "No space left on device" alone does not read as the change being lost.
        """
        try:
            self._regenerate_catalog()
        except OSError as exc:
            raise OSError(exc.errno, f"{done}, but MEMORY.md not updated "
                          f"({exc.strerror or exc}): `sage-mem index` updates it") from exc

    def _regenerate_catalog(self) -> bool:
        """Bring MEMORY.md up to date; True when its bytes changed.

        A MEMORY.md that sage-mem did not write (Claude Code's own, or a
        person's) is its owner's: only sage-mem's marked region of it changes
        (`catalog.updated_index`), and one it cannot update without losing a
        line is left alone and reported as a problem.
        """
        from .memory import catalog

        if self._batch_depth:
            self._batch_dirty = True
            return False
        # In no order (the catalog sorts what it shows): after every change, at 50,000 memories
        # a sort of every id and a lookup each was most of this; a `Memory` made of each
        # cached record, most of the rest (`Index.listings`).
        memories = [m for m in self.index.listings() if not m.archived]
        retrievals = self._catalog_retrievals()
        target = self.folder.index_file
        key = str(target)
        if target.is_symlink():
            # Never followed (it may lead outside): the link itself is replaced, and
            # the file it pointed to keeps every byte.
            atomic_write(
                target, catalog.render(memories, retrievals).encode("utf-8"),
                mode=file_mode(self.root),
            )
            return True
        problem: list[str] = []

        def updated(seen: Seen) -> bytes | None:
            update = catalog.updated_index(seen.raw, memories, retrievals)
            problem[:] = [update.problem] if update.problem else []
            return update.data

        try:
            written = self._rewrite(target, updated)
        except InvalidMemory as exc:  # a FIFO, a folder, an unreadable file: left alone
            self._problems[key] = _problem(target, exc)
            return False
        if problem:
            self._problems[key] = Problem(target, f"{target}: {problem[0]}")
        else:
            self._problems.pop(key, None)
        return written is not None

    def create_file(
        self, memory_id: str, data: bytes, *, allow_secret: bool = False
    ) -> Memory | None:
        """Create a memory file holding exactly `data` (an import, an example); never replaces one.

        Written like every other change: under the write lock, counted as a
        write (so other processes reconcile before their next one), indexed at
        once, MEMORY.md regenerated (once per `batch`). New folders and the
        file get the folder's modes (`file_mode`, `make_dirs`). An `archive/…`
        id creates an archived memory (an import of an export). Raises
        FileChanged, writing nothing, when a file of that name exists;
        InvalidMemory for data over the size limit or that would not read back
        (not UTF-8, a NUL, a frontmatter that does not parse); SecretRefused
        for a line that looks like a credential, unless `allow_secret`.
        Returns the memory, or None when the file does not load (it is then a
        problem).
        """
        archived = memory_id.startswith(self.folder.archive_dir.name + "/")
        canonical = self.folder.normalize_id(memory_id, allow_archived=archived)
        path = self.folder.path_for(canonical, allow_archived=archived)
        check_id_secret(canonical, allow_secret=allow_secret)
        check_new_file(path, data, allow_secret=allow_secret)
        with self._write_lock():
            self._make_folders_for(path, archived=archived)
            create(path, data, mode=file_mode(self.root))
            with self._refresh_lock:
                memory = self._load(path, archived=archived)
                if memory is not None:
                    self.index.put(memory)
                self._count_write()
            self._changed()
            self._catalog_after(f"{canonical} saved to {canonical}.md")
        return memory

    def replace_file(
        self, memory_id: str, data: bytes, *, expected_sha256: str, allow_secret: bool = False
    ) -> Memory:
        """Put exactly `data` in place of a memory file, as a person wrote it (the raw editor).

        For a file whose frontmatter does not parse, which `write` cannot edit:
        nothing is added or normalised. Raises ConflictError when the file is
        not the one `expected_sha256` names, MemoryNotFound when it is gone,
        MemoryLocked when what is there now says `locked: true`, InvalidMemory
        when `data` would not read back (the parse error says where) and
        SecretRefused as `write` does. Nothing is written when it raises.
        """
        from .memory.edits import check_expected

        canonical = self.folder.normalize_id(memory_id)
        path = self.folder.path_for(canonical)
        text = memory_text(data, path, f"{canonical}: not written")

        def replaced(seen: Seen) -> bytes | None:
            if seen.raw is None:
                raise MemoryNotFound(f"no memory {canonical!r}", path=path)
            check_expected(path, seen.raw, expected_sha256)
            parsed = parsed_or_none(seen.raw, path)
            if parsed is not None and memory_from_meta(
                canonical, path, parsed.meta, parsed.body
            ).locked:
                raise MemoryLocked(f"{canonical}: memory is locked (locked: true)", path=path)
            return _checked_bytes(path, text, seen.raw, allow_secret=allow_secret)

        return self._rewritten(path, canonical, replaced, f"{canonical} saved to {canonical}.md")


@dataclass(frozen=True)
class Renamed:
    """What `MemoryStore.rename` did: the memory under its new id, the memories whose links
    (or `supersedes`, `supersededBy`) now name it, and what could not be updated, and why."""

    memory: Memory
    old_id: str
    relinked: tuple[str, ...] = ()
    left: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id, "oldId": self.old_id, "path": str(self.memory.path),
            "relinked": list(self.relinked), "left": list(self.left),
        }

    def format_text(self) -> str:
        lines = [f"Renamed {self.old_id} to {self.memory.id} ({self.memory.path})"]
        if self.relinked:
            lines.append(f"Links updated in: {', '.join(self.relinked)}")
        lines.extend(f"not updated: {note}" for note in self.left)
        return "\n".join(lines) + "\n"


class _Seen(dict[str, tuple[int, int, int, int]]):
    """`MemoryStore._seen`: a dict that notes every path whose entry is set or dropped.

    `touched` holds those paths since the last reconcile took them: what the
    store changed its mind about (a file read again, a write, a folder
    forgotten) that the next walk's comparison with the last one may not
    show (a folder moved away and back keeps its files' signatures).
    Filling it at once (`_Seen(pairs)`, `dict.update`) notes nothing.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.touched: set[str] = set()

    def __setitem__(self, key: str, value: tuple[int, int, int, int]) -> None:
        self.touched.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.touched.add(key)
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        if key in self:
            self.touched.add(key)
        return super().pop(key, *default)


class _Files:
    """The store as `search.loading.Files`: what loading the index needs of it."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.folder = store.folder

    def load(self, path: Path, *, archived: bool) -> Memory | None:
        return self.store._load(path, archived=archived)

    def id_of(self, path: Path) -> tuple[str | None, bool]:
        return self.store._id_of(path)

    def read_all(self) -> list[Memory]:
        memories: list[Memory] = []
        for archived in (False, True):
            for path in self.folder.iter_files(archived=archived):
                memory = self.store._load(path, archived=archived)
                if memory is not None:
                    memories.append(memory)
        return memories

    def forget(self) -> None:
        self.store._problems.clear()
        self.store._forget_seen()

    def keep_problem(self, relative: str, problem: tuple[str, int | None, int | None]) -> None:
        key = str(self.folder.root) + os.sep + relative
        self.store._problems[key] = Problem(Path(key), *problem)
        self.store._seen_map[key] = _UNREADABLE

    def seen_later(self, unchanged: Collection[str], signatures: Mapping[str, Any]) -> None:
        self.store._seen_later = (str(self.folder.root) + os.sep, unchanged, signatures)

    def entries(self, signatures: Mapping[str, Any]) -> dict[str, Any]:
        from .search import cache

        prefix = str(self.folder.root) + os.sep
        entries: dict[str, cache.Entry] = {}
        for relative, signature in signatures.items():
            if signature is None:
                continue
            key = prefix + relative
            problem = self.store._problems.get(key)
            if problem is not None:
                entries[relative] = cache.Entry(
                    signature, (problem.message, problem.line, problem.column)
                )
            elif self.store._seen.get(key, _UNREADABLE)[0] >= 0:
                entries[relative] = cache.Entry(signature)
        return entries

    def secrets(self) -> tuple[int, Callable[[Memory], bool]] | None:
        mark = credential_rules_mark()
        if mark is None:
            return None
        from .checks.credentials import shown_secrets

        return mark, shown_secrets


_RULES_MARK: list[int | None] = []


def credential_rules_mark() -> int | None:
    """The CRC-32 of `checks/credentials.py` as installed: the secret flags a cache keeps
    were judged by these rules, and are trusted only while they are the same (an upgrade
    that changes a shape judges every memory again). Read, never imported: a hook showing
    only memories held clean loads no pattern. None without the source (then no flag is
    kept or trusted, and every shown memory is checked)."""
    if not _RULES_MARK:
        import zlib

        try:
            with open(os.path.join(os.path.dirname(__file__), "checks", "credentials.py"),
                      "rb") as source:
                _RULES_MARK.append(zlib.crc32(source.read()))
        except OSError:
            _RULES_MARK.append(None)
    return _RULES_MARK[0]


def check_id_secret(memory_id: str, *, allow_secret: bool = False) -> None:
    """Refuse a new memory id that looks like it holds a credential (unless `allow_secret`).

    The id is the file's name: it is listed in MEMORY.md, shown in every hook's
    heading and pushed by sync, so it is held to the rule the text is. The
    message never repeats the secret.
    """
    if allow_secret:
        return
    from .checks.credentials import find_secrets_in_name, redact_name

    for match in find_secrets_in_name(memory_id):
        raise SecretRefused(
            f"{redact_name(memory_id)}: not written: the id looks like it holds a "
            f"{match.label} ({match.excerpt_redacted}); name the memory "
            "for what it is about instead, or allow it explicitly (--allow-secret, "
            "allow_secret=true) if it is not a secret",
            kind=match.kind,
        )


def check_new_file(path: Path, data: bytes, *, allow_secret: bool = False) -> None:
    """Refuse what a new memory file at `path` may not hold, as `create_file` does; else None.

    Raises InvalidMemory for bytes over the size limit, not UTF-8 or that would
    not read back, and SecretRefused for a line that looks like a credential
    (unless `allow_secret`). For a dry run to say what the run would refuse.
    """
    text = memory_text(data, path, f"{path.name}: not written")
    _checked_bytes(path, text, None, allow_secret=allow_secret)


def new_memory_bytes(
    values: Mapping[str, Any], body: str, *, created: str, updated: str
) -> bytes:
    """The bytes `write` would give a new memory with these fields, stamped `created`/`updated`.

    For an import that knows when a memory was made (mnemo's `created_at`, a
    JSON line's `created`): the dream dates relative dates by `updated`, so an
    import must not stamp the day of the import. `values` are write()'s
    keywords (the field spec's names). Raises InvalidMemory for a bad value or
    a missing required field.
    """
    from .memory.edits import new_memory_text
    from .memory.fields import check_unicode, validated

    fields = validated(values)
    if not isinstance(body, str):
        raise InvalidMemory("body must be text")
    check_unicode("body", body)
    return new_memory_text("", Path(), fields, body, stamps=(created, updated)).encode("utf-8")


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    """What `cache.scan` records of a file: size, mtime, inode, ctime."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _problem(path: Path, exc: BaseException) -> Problem:
    if isinstance(exc, InvalidMemory):
        return Problem(path, str(exc), exc.line, exc.column)
    if isinstance(exc, OSError):
        return Problem(path, f"{path}: cannot read: {exc.strerror or exc}")
    return Problem(path, f"{path}: {exc}")


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or str(path).startswith(str(folder) + os.sep)


def _refuse_decoded_secrets(
    path: Path, text: str, meta: Mapping[str, Any], old: bytes | None
) -> None:
    """Refuse a frontmatter value that reads as a credential though the text spells it with
    escapes (`"\\x67hp_…"`), unless the file already held that value."""
    from .checks.credentials import decoded_secrets

    found = decoded_secrets(text, meta)
    if not found:
        return
    before: set[str] = set()
    if old:
        old_parsed = parsed_or_none(old, path)
        if old_parsed is not None:
            before = {str(v) for v in old_parsed.meta.values()}
    for key, match in found:
        if str(meta.get(key)) in before:
            continue
        raise SecretRefused(
            f"{path.name}: not written: the frontmatter's {key} reads as a "
            f"{match.label} ({match.excerpt_redacted}), spelled with "
            "escapes; keep a pointer to where the secret lives instead, or allow it explicitly "
            "(--allow-secret, allow_secret=true) if it is not a secret",
            path=path, kind=match.kind,
        )


def _checked_bytes(path: Path, text: str, old: bytes | None, *, allow_secret: bool) -> bytes:
    """The bytes of `text`, once sure they may be written; raises (nothing written) when not.

    Refuses a file over the size limit, one that would not read back (a NUL
    in the body), and, unless `allow_secret`, one that adds a line that looks
    like a credential: lines already in the file (`old`) are not held against
    a write that leaves them as they are.
    """
    data = text.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise InvalidMemory(
            f"{path.name}: not written: {len(data):,} bytes, over the "
            f"{MAX_FILE_BYTES // 1024} KB a memory may hold",
            path=path,
        )
    try:
        parsed = parse_bytes(data, path)
    except InvalidMemory as exc:
        raise InvalidMemory(
            f"{path.name}: not written: it would not read back ({exc})", path=path
        ) from None
    if allow_secret:
        return data
    _refuse_decoded_secrets(path, text, parsed.meta, old)
    from .checks.credentials import find_secrets

    matches = find_secrets(text)
    if not matches:
        return data
    kept = set(old.decode("utf-8", "replace").lstrip("\ufeff").split("\n")) if old else set()
    lines = text.lstrip("\ufeff").split("\n")
    # Body lines are counted as the caller wrote them: after the blank line that
    # separates them from the frontmatter.
    header = len(lines) - len(parsed.body.split("\n"))
    blank = 1 if parsed.frontmatter is not None and parsed.body.startswith(("\n", "\r\n")) else 0
    for match in matches:
        # A secret over several lines (a key block) is kept only when all of them are.
        if all(lines[number - 1] in kept for number in match.lines):
            continue
        where = (
            f"line {match.line - header - blank} of the body" if match.line > header + blank
            else f"line {match.line} of the frontmatter"
        )
        raise SecretRefused(
            f"{path.name}: not written: {where} looks like a "
            f"{match.label} ({match.excerpt_redacted}); keep a pointer to "
            "where the secret lives instead, or allow it explicitly (--allow-secret, "
            "allow_secret=true) if it is not a secret",
            path=path, line=match.line, column=match.column, kind=match.kind,
        )
    return data




__all__ = ["MemoryStore", "Problem", "Renamed", "check_id_secret", "check_new_file", "load_memory",
           "new_memory_bytes", "DELETE"]
