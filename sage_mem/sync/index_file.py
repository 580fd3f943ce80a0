"""MEMORY.md regenerated for sync from each memory's frontmatter, without a search index.

MEMORY.md lists each memory in service by its id, title, description,
category and baseline fields (`memory.catalog`): nothing of the search
index. Opening a store to write it built (or brought up to date) the whole
index, a memory at a time: 112 of the 121 s of a 10,000-memory join. Here the
memories are read as the store reads them (the same walk, ids and checked
reads) and only what the catalog needs is kept.

What was read is kept in the state folder (`catalog.entries`), keyed by the
file's git blob id and path, never by its stat: a file git says is as the
index has it (`git ls-files -s`, less the paths `git diff-files` names) is known
by its blob, which no later write can alias, so a sync that changed nothing
or a few files reads only those. A file read (git does not track it yet, or
sees it changed) is kept under the blob id its bytes will have once committed;
symlinks are read every time. The entries are a cache: a damaged or
missing one costs a read of every memory, never a wrong line.

The file is written as the store writes it (`MemoryStore._regenerate_catalog`):
under the folder's write lock, a person's MEMORY.md keeping every line of
theirs (`catalog.updated_index`), a symlink replaced, never followed.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..disk.folder import MemoryFolder, read_memory
from ..disk.locks import write_lock
from ..disk.safe_io import Seen, atomic_write, file_mode, read_or_absent, rewrite
from ..disk.stats import Stats
from ..errors import FileChanged, InvalidId, InvalidMemory
from ..memory import catalog
from ..memory.file_format import parse_bytes
from ..memory.value import MAX_FILE_BYTES, Memory, memory_from_meta
from .git import Git

ENTRIES = "catalog.entries"
_VERSION = 1
_SYMLINK_MODE = b"120000"
# The ids the store indexes (store._PLAIN_ID): another name cannot be read or linked to.
_PLAIN_ID = re.compile(r"[^\x00-\x1f\x7f\\%]{1,60}")
Fields = tuple[str | None, str, str | None, bool, int]


def regenerate(folder: MemoryFolder, git: Git) -> bool:
    """Bring MEMORY.md up to date with the memories on disk; True when its bytes changed."""
    folder.ensure_state_dir()
    cached = _load_entries(folder)
    kept: dict[str, Fields] = {}
    # Read under the lock, as the store reconciles under it: a memory another process
    # writes meanwhile is then either read here or followed by its own regeneration.
    with write_lock(folder.root, folder.state_dir):
        memories = _memories(folder, _clean_blobs(git), cached, kept)
        retrievals = (Stats(folder.state_path("stats.json")).retrieval_counts()
                      if len(memories) > catalog.MAX_LINES // 2 else {})
        changed = _write(folder, memories, retrievals)
    if kept != cached:
        _save_entries(folder, kept)
    return changed


def _clean_blobs(git: Git) -> dict[str, bytes]:
    """path -> blob id of each file the work tree has exactly as git's index does."""
    staged = git.run("ls-files", "-s", "-z").stdout
    blobs: dict[str, bytes] = {}
    for record in staged.split(b"\0"):
        meta, tab, path = record.partition(b"\t")
        fields = meta.split()
        # Stage 0 only (a path left unmerged is read), never a symlink (it is read through).
        if not tab or len(fields) != 3 or fields[2] != b"0" or fields[0] == _SYMLINK_MODE:
            continue
        blobs[os.fsdecode(path)] = fields[1]
    # The work tree against the index (staged changes, a merge's, keep their staged blob).
    changed = git.run("diff-files", "--name-only", "-z").stdout
    for path in changed.split(b"\0"):
        if path:
            blobs.pop(os.fsdecode(path), None)
    return blobs


def _memories(folder: MemoryFolder, blobs: dict[str, bytes], cached: dict[str, Fields],
              kept: dict[str, Fields]) -> list[Memory]:
    """Every memory in service, as much of it as MEMORY.md needs, by id (as the store's index)."""
    found: dict[str, Memory] = {}
    prefix = len(str(folder.root)) + 1
    for path in folder.iter_files():
        memory_id = folder.id_for(path)
        if memory_id is None:
            continue
        relative = str(path)[prefix:].replace(os.sep, "/")
        blob = blobs.get(relative)
        key = f"{blob.decode()}\0{relative}" if blob is not None else None
        fields = cached.get(key) if key is not None else None
        if not (isinstance(fields, tuple) and len(fields) == 5):
            read = _read(folder, path, memory_id)
            if read is None:
                continue
            fields, raw = read
            # Kept under the blob git will make of these bytes: found again once committed.
            key = None if path.is_symlink() else f"{_blob_id(raw)}\0{relative}"
        if key is not None:
            kept[key] = fields
        name, description, category, baseline, priority = fields
        found[memory_id] = Memory(id=memory_id, path=path, description=description, body="",
                                  category=category, name=name, baseline=baseline,
                                  baseline_priority=priority)
    return [found[memory_id] for memory_id in sorted(found)]


def _read(folder: MemoryFolder, path: Path, memory_id: str) -> tuple[Fields, bytes] | None:
    """What MEMORY.md needs of one file, read as the store reads it, and the file's bytes
    (None: the store would not index it)."""
    try:
        if not _PLAIN_ID.fullmatch(memory_id) or memory_id.endswith(".md"):
            if folder.normalize_id(memory_id) != memory_id:
                return None
        raw = read_memory(folder, path).raw or b""
        parsed = parse_bytes(raw, path)
    except (InvalidMemory, InvalidId, OSError, ValueError):
        return None
    memory = memory_from_meta(memory_id, path, parsed.meta, parsed.body,
                              problems=parsed.problems)
    return (memory.name, memory.display, memory.category, memory.baseline,
            memory.baseline_priority), raw


def _blob_id(raw: bytes) -> str:
    """git's id of a blob of these bytes (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(raw) + raw, usedforsecurity=False).hexdigest()


def _write(folder: MemoryFolder, memories: Iterable[Memory], retrievals: dict[str, int]) -> bool:
    listed = list(memories)
    target = folder.index_file
    if target.is_symlink():
        # Never followed (it may lead outside): the link itself is replaced.
        atomic_write(target, catalog.render(listed, retrievals).encode("utf-8"),
                     mode=file_mode(folder.root))
        return True

    def updated(seen: Seen) -> bytes | None:
        return catalog.updated_index(seen.raw, listed, retrievals).data

    def read(path: Path) -> Seen:
        if path.is_dir():
            raise InvalidMemory(f"{path}: a folder, not a file", path=path)
        return read_or_absent(path, limit=MAX_FILE_BYTES)

    try:
        _, written = rewrite(target, updated, read=read, mode=file_mode(folder.root),
                             limit=MAX_FILE_BYTES)
    except (InvalidMemory, FileChanged):  # a FIFO, a folder, an unreadable file: left alone
        return False
    return written is not None


def _load_entries(folder: MemoryFolder) -> dict[str, Fields]:
    try:
        data = marshal.loads(folder.state_path(ENTRIES).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, tuple) or len(data) != 2 or data[0] != _VERSION:
        return {}
    entries = data[1]
    return entries if isinstance(entries, dict) else {}


def _save_entries(folder: MemoryFolder, entries: dict[str, Fields]) -> None:
    try:
        atomic_write(folder.state_path(ENTRIES), marshal.dumps((_VERSION, entries)),
                     durable=False)
    except OSError:
        pass  # a cache: the next sync reads the files again
