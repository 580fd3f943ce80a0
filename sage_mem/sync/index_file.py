"""MEMORY.md regenerated for sync from each memory's frontmatter, without a search index.

MEMORY.md lists each memory in service by its id, title, description,
category and baseline fields (`memory.catalog`): nothing of the search
index. Opening a store to write it built (or brought up to date) the whole
index, a memory at a time: 112 of the 121 s of a 10,000-memory join. Here the
memories are read as the store reads them (the same walk, ids and checked
reads) and only what the catalog needs is kept.

What was read is kept in the state folder (`catalog.entries`: a row of each
file, its id, path, git blob id and fields, as columns in the order of the
ids, which load and save whole in milliseconds), known by the file's blob id
and path, never by its stat: a file git says is as the index has it (`git
ls-files -s`, less the paths `git diff-files` names) is known by its blob,
which no later write can alias, so a sync that changed nothing or a few files
reads only those. A file read (git does not track it yet, or sees it changed)
is kept under the blob id its bytes will have once committed; symlinks are
read every time. The entries are a cache: a damaged or
missing one costs a read of every memory, never a wrong line.

A sync that changed nothing need not make MEMORY.md again: `stamp` records,
after a commit, that MEMORY.md of that commit is what `regenerate` made of its
memories, when what it read was exactly that commit's files (each memory's
blob, MEMORY.md's, no memory the commit lacks or holds beside them). `current`
then answers for a clean work tree at that commit (`git status` shows nothing,
not even an ignored memory): the same commit, the same retrieval counts (they
order a cut index) and the same sage-mem say MEMORY.md needs no walk.

The file is written as the store writes it (`MemoryStore._regenerate_catalog`):
under the folder's write lock, a person's MEMORY.md keeping every line of
theirs (`catalog.updated_index`), a symlink replaced, never followed.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import stat
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..disk.bulk import gc_paused
from ..disk.folder import ARCHIVE_DIR, DREAM_DIR, INDEX_FILE, MemoryFolder, read_memory
from ..disk.locks import write_lock
from ..disk.safe_io import Seen, atomic_write, file_mode, read_or_absent, rewrite
from ..errors import FileChanged, InvalidId, InvalidMemory
from .git import Git, SyncError

if TYPE_CHECKING:  # imported where used: a sync with nothing to do imports no `memory`
    from ..memory.catalog import Listing

ENTRIES = "catalog.entries"
CHANGES = "catalog.changes"
# The most rows `catalog.changes` holds before the record is written whole again.
_MOST_CHANGES = 512
STAMP = "catalog.stamp"
_VERSION = 3
_SYMLINK_MODE = b"120000"
Fields = tuple[str | None, str, str | None, bool, int]


class Made(NamedTuple):
    """What one `regenerate` made MEMORY.md from: each memory file's path and the blob id of
    the bytes read (None when one cannot be vouched for: a symlink, a file unread), the
    blob id of MEMORY.md as it left it, the retrieval counts' file as it was, and the
    token naming what it kept in `catalog.entries`."""

    inputs: dict[str, str] | None
    index_blob: str | None
    stats: list[int] | None
    changed: bool
    token: str = ""
    # Made from a stamped commit's record (`_since_stamp`): that commit, its MEMORY.md's
    # blob and its memory files' blobs (`stamp` checked them against its tree), from which
    # and a diff the next stamp knows the files of a later commit (`known_tree`).
    base: tuple[str, str, dict[str, str]] | None = None
    # With `base`: the paths whose blobs may differ from its (those read again); every
    # other path of `inputs` has the blob `base` holds for it.
    touched: frozenset[str] = frozenset()


def regenerate(folder: MemoryFolder, git: Git, differ: Iterable[str] | None = None) -> Made:
    """Bring MEMORY.md up to date with the memories on disk.

    After a `stamp`, only the files that differ from the stamped commit are read (those
    `git status` names, and those of the commits since): the rest are the stamped
    commit's, known by their blobs. Otherwise the folder is walked. `differ`: the paths a
    `git status --untracked-files=all --ignored` just named, when the caller has them.
    """
    from ..disk.stats import Stats
    from ..memory import catalog

    folder.ensure_state_dir()
    saved = _load_saved(folder)
    # Read under the lock, as the store reconciles under it: a memory another process
    # writes meanwhile is then either read here or followed by its own regeneration.
    with write_lock(folder.root, folder.state_dir):
        stats = _stats_identity(folder)
        with gc_paused():  # 10,000 rows and listings made, no garbage (a walk is not paused)
            found = _since_stamp(folder, git, saved, differ)
        if found is None:
            kept: dict[str, Fields] = {}
            inputs: dict[str, str] = {}
            # The blobs git vouches for name what is kept of them: none kept, none asked.
            blobs = _clean_blobs(git) if saved.rows.paths else {}
            memories, vouched = _memories(folder, blobs, saved.by_key(), kept, inputs)
            rows = _Rows.of(kept, inputs)
            base, touched = None, None
        else:
            memories, vouched, base, rows, touched = found
        retrievals = (Stats(folder.state_path("stats.json")).retrieval_counts()
                      if len(memories) > catalog.MAX_LINES // 2 else {})
        changed, data = _write(folder, memories, retrievals)
    token = saved.token
    if rows != saved.rows or vouched != saved.complete or not token:
        token = os.urandom(8).hex()
        _save_entries(folder, saved, rows, vouched, token, touched)
    return Made(dict(zip(rows.paths, rows.blobs, strict=True)) if vouched else None,
                blob_id(data) if data is not None else None, stats, changed, token, base,
                frozenset(touched or ()))


class _Rows(NamedTuple):
    """What was read of each memory file whose bytes are known by their blob id, as
    columns in the order of the ids (then paths): 10,000 of them load, compare and save
    in a few milliseconds, where a dict of tuples keyed by blob and path took ~25 ms. A
    file that is no valid memory has its row too (its fields None): its blob is known."""

    ids: list[str]
    paths: list[str]
    blobs: list[str]
    fields: list[Fields | None]

    @classmethod
    def of(cls, kept: Mapping[str, Fields], inputs: Mapping[str, str]) -> _Rows:
        """The rows of a walk's `kept` (fields by `blob\0path`) and `inputs` (path -> blob
        of each file read or vouched for: every path of `kept` is there)."""
        keyed = sorted((unicodedata.normalize("NFC", path[:-3]), path)
                       for path in inputs)  # the ids `id_for` gives
        blobs = [inputs[path] for _, path in keyed]
        fields = [kept.get(f"{blob}\0{path}")
                  for (_, path), blob in zip(keyed, blobs, strict=True)]
        return cls([memory_id for memory_id, _ in keyed], [path for _, path in keyed], blobs,
                   fields)

    def well_formed(self) -> bool:
        """Columns of one length, of the types they hold, in order: what a damaged record
        (or another version's) is not."""
        ids, paths, blobs, fields = self
        count = len(ids)
        # Each test a pass in C (`map`, `sorted`) over 10,000 rows: ~1 ms, where a
        # comprehension per value and a pairwise walk took ~2 ms of every receive.
        return (len(paths) == count and len(blobs) == count and len(fields) == count
                and all(type(column) is list for column in self)
                and not (set(map(type, ids)) | set(map(type, paths)) | set(map(type, blobs)))
                - {str}
                and all(f is None or (type(f) is tuple and len(f) == 5) for f in fields)
                and ids == sorted(ids))

    def picked(self, numbers: list[int]) -> _Rows:
        """The rows at these positions."""
        return _Rows([self.ids[n] for n in numbers], [self.paths[n] for n in numbers],
                     [self.blobs[n] for n in numbers], [self.fields[n] for n in numbers])

    def spliced(self, gone: set[str], added: _Rows) -> _Rows:
        """These rows but those of the paths `gone`, with `added` put in id order."""
        if gone:
            rows = self.picked([n for n, path in enumerate(self.paths) if path not in gone])
        else:
            rows = _Rows(list(self.ids), list(self.paths), list(self.blobs), list(self.fields))
        for number, memory_id in enumerate(added.ids):
            at = bisect_left(rows.ids, memory_id)
            rows.ids.insert(at, memory_id)
            rows.paths.insert(at, added.paths[number])
            rows.blobs.insert(at, added.blobs[number])
            rows.fields.insert(at, added.fields[number])
        return rows


_NO_ROWS = _Rows([], [], [], [])


class _Saved(NamedTuple):
    """`catalog.entries` and its `catalog.changes`: the rows read (`_Rows`), whether they
    hold every memory file of the folder (each vouched for), the token naming them, and
    the rows and token of `catalog.entries` alone (what a next change is written against)."""

    rows: _Rows
    complete: bool
    token: str
    base: _Rows = _Rows([], [], [], [])
    base_token: str = ""
    gone: tuple[str, ...] = ()  # what `catalog.changes` holds: the paths of `base` taken away
    added: _Rows = _Rows([], [], [], [])  # and the rows it adds

    def by_key(self) -> dict[str, Fields]:
        """The fields of each row by `blob\0path`, as the walk looks them up."""
        rows = self.rows
        return {f"{blob}\0{path}": fields
                for path, blob, fields in zip(rows.paths, rows.blobs, rows.fields, strict=True)
                if fields}


def _since_stamp(folder: MemoryFolder, git: Git, saved: _Saved, differ: Iterable[str] | None,
                 ) -> tuple[list[Listing], bool, tuple[str, str, dict[str, str]] | None,
                            _Rows, set[str]] | None:
    """The memories as `_memories` finds them, from the stamped commit's (`saved`, when the
    stamp names it) and a read of each file that differs from that commit; whether each
    was vouched for; what the stamp says of that commit (`Made.base`; None for a record
    without MEMORY.md's blob); and the rows to keep. None when that cannot be known (no
    stamp, another sage-mem, a folder git does not look into, two files of one id)."""
    from ..memory.catalog import Listing

    record = _load_stamp(folder)
    if (record is None or not saved.complete or record.get("token") != saved.token
            or record.get("sage-mem") != _code_identity()):
        return None
    since = record.get("head")
    head = git.head()
    if not isinstance(since, str) or head is None:
        return None
    names: set[str] = set()
    if head != since:
        try:  # the list the merge asked git for already, when a merge brought `head`
            names.update(git.changed_paths(since, head))
        except SyncError:
            return None  # the stamped commit is gone (a history rewritten)
    if differ is None:
        status = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                         "--no-renames", "--ignored").stdout
        differ = [os.fsdecode(r[3:]) for r in status.split(b"\0") if len(r) > 3]
    for name in differ:
        if name.endswith("/"):
            return None  # a folder git did not look into (another repository)
        names.add(name)
    before = saved.rows
    if len(names) > max(256, len(before.paths) // 4):
        return None  # most of the folder (a join): the walk finds them for less
    if len(set(before.ids)) != len(before.ids):
        return None  # two files of one id: the walk's order decides, not this one
    ids, paths, blobs = list(before.ids), list(before.paths), list(before.blobs)
    fields = list(before.fields)
    position = {path: number for number, path in enumerate(paths)} if names else {}
    gone = sorted((position[name] for name in names if name in position), reverse=True)
    if len(gone) > 64:  # one pass rather than a shift of every column per row
        left = set(range(len(paths))).difference(gone)
        ids, paths, blobs = ([v for n, v in enumerate(c) if n in left] for c in (ids, paths, blobs))
        fields = [value for number, value in enumerate(fields) if number in left]
    else:
        for number in gone:
            del ids[number], paths[number], blobs[number], fields[number]
    vouched = True
    unvouched: list[Listing] = []  # read through a link: listed, but no row (no blob)
    with _Files(folder.root) as files:
        for name in sorted(names):
            path = folder.root / name
            if not _walked(folder, name):
                continue
            memory_id = folder.id_for(path)
            assert memory_id is not None
            read, read_blob = _read_with_blob(folder, path, memory_id, files)
            at = bisect_left(ids, memory_id)
            if (at < len(ids) and ids[at] == memory_id) or any(
                    m.id == memory_id for m in unvouched):
                return None  # two files of one id
            if read_blob is None:
                vouched = False
                if read is not None:
                    unvouched.append(Listing(memory_id, *read))
                continue
            ids.insert(at, memory_id)
            paths.insert(at, name)
            blobs.insert(at, read_blob)
            fields.insert(at, read)
    memories = [Listing(memory_id, *read) for memory_id, read in zip(ids, fields, strict=True)
                if read]
    if unvouched:
        memories = sorted(memories + unvouched, key=lambda listing: listing.id)
    index = record.get("index")
    base = None
    if isinstance(index, str):
        base = (since, index, dict(zip(before.paths, before.blobs, strict=True)))
    return memories, vouched, base, _Rows(ids, paths, blobs, fields), names


def _walked(folder: MemoryFolder, name: str) -> bool:
    """Whether a walk of the folder (`MemoryFolder.iter_files`) yields the file `name`: a
    memory's name, in real folders (a symlinked one is never entered), not a folder."""
    if folder.id_for(folder.root / name) is None:
        return False
    current = str(folder.root)
    for part in name.split("/")[:-1]:
        current += os.sep + part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    try:
        return not stat.S_ISDIR(os.lstat(folder.root / name).st_mode)
    except OSError:
        return False


def stamp(folder: MemoryFolder, made: Made, head: str, tree: Mapping[str, str],
          only: Iterable[str] | None = None) -> bool:
    """Record that commit `head`'s MEMORY.md is what `regenerate` makes of the commit's
    memories, when `made` read exactly them (`tree`: the commit's path -> blob id); True
    when it did. Anything else (a file held back, one saved after it was read, a memory
    git ignores, a link) leaves no record: the next sync makes MEMORY.md again.

    `only`: the paths where `made.inputs` and `tree` may differ, when both are `made.base`
    but for them (`stamp_paths`); every other path is in both with one blob, so the
    verdict is the one all of them give (two passes of 10,000 rows spared a receive)."""
    inputs = made.inputs
    if inputs is None or made.index_blob is None or tree.get(INDEX_FILE) != made.index_blob:
        return False
    looked = set(only) if only is not None else None
    if any(tree.get(path) != inputs[path] for path in (
            inputs if looked is None else [path for path in looked if path in inputs])):
        return False
    for path in tree if looked is None else [path for path in looked if path in tree]:
        if (path.endswith(".md") and path not in inputs and path != INDEX_FILE
                and not path.startswith((ARCHIVE_DIR + "/", DREAM_DIR + "/"))
                and folder.id_for(folder.root / path) is not None):
            return False  # a memory of the commit the walk did not read
    record = {"head": head, "stats": made.stats, "sage-mem": _code_identity(),
              "token": made.token, "index": made.index_blob}
    try:
        atomic_write(folder.state_path(STAMP), json.dumps(record).encode(), durable=False)
    except OSError:
        return False
    return True


def known_tree(base: tuple[str, str, dict[str, str]],
               changes: Mapping[str, str | None]) -> dict[str, str]:
    """What `stamp` reads of a commit's tree, without listing it (`git ls-tree` of 10,000
    files): the stamped commit `base` names (its MEMORY.md's blob and its memory files',
    which `stamp` checked against its tree, every memory of it among them) with what
    differs from it to the commit (`changes`: path -> blob id, None when deleted). Each
    path it holds has the commit's blob, and every memory of the commit is there."""
    _, index_blob, inputs = base
    tree = dict(inputs)
    tree[INDEX_FILE] = index_blob
    for path, blob in changes.items():
        if blob is None:
            tree.pop(path, None)
        else:
            tree[path] = blob
    return tree


def stamp_paths(made: Made, changes: Mapping[str, str | None]) -> set[str] | None:
    """The paths `stamp` need look at (its `only`) for the tree `known_tree(made.base,
    changes)`: those the regeneration read again (`made.touched`), those the diff names and
    MEMORY.md. None when `made` was not made from `base` (a walk): every path then."""
    if made.base is None:
        return None
    return {*made.touched, *changes, INDEX_FILE}


def current(folder: MemoryFolder, head: str | None) -> bool:
    """Whether MEMORY.md is known to be what `regenerate` would make, for a work tree that is
    exactly commit `head` (the caller's `git status` is clean): `stamp` recorded that commit,
    and neither the retrieval counts nor sage-mem changed since."""
    record = _load_stamp(folder)
    return (record is not None and head is not None and record.get("head") == head
            and record.get("stats") == _stats_identity(folder)
            and record.get("sage-mem") == _code_identity())


def _load_stamp(folder: MemoryFolder) -> dict[str, object] | None:
    try:
        record = json.loads(folder.state_path(STAMP).read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def forget(folder: MemoryFolder) -> None:
    """Drop the record (`stamp`): the next sync makes MEMORY.md again."""
    try:
        folder.state_path(STAMP).unlink()
    except OSError:
        pass


def _stats_identity(folder: MemoryFolder) -> list[int] | None:
    try:
        st = os.stat(folder.state_path("stats.json"))
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _code_identity() -> list[object]:
    """This sage-mem (its version, and the file that writes MEMORY.md's lines as installed):
    another one may write other bytes."""
    from .. import __version__

    # The file's place, not its import (a sync with nothing to do never imports it).
    lines = os.path.join(os.path.dirname(os.path.dirname(__file__)), "memory", "catalog.py")
    try:
        st = os.stat(lines)
        found: list[object] = [__version__, _VERSION, st.st_size, st.st_mtime_ns]
    except OSError:
        found = [__version__, _VERSION]
    return found


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
              kept: dict[str, Fields], inputs: dict[str, str]) -> tuple[list[Listing], bool]:
    """Every memory in service, as much of it as MEMORY.md needs, by id (as the store's
    index); `inputs` gets each memory file's path and the blob id of the bytes read, and
    the flag says whether each could be vouched for (not a symlink, and read)."""
    with _Files(folder.root) as files:
        return _memories_read(folder, files, blobs, cached, kept, inputs)


def _memories_read(folder: MemoryFolder, files: _Files, blobs: dict[str, bytes],
                   cached: dict[str, Fields], kept: dict[str, Fields],
                   inputs: dict[str, str]) -> tuple[list[Listing], bool]:
    from ..memory.catalog import Listing

    found: dict[str, Listing] = {}
    vouched = True
    for path, relative, memory_id in folder.memory_files():
        blob = blobs.get(relative)
        key = f"{blob.decode()}\0{relative}" if blob is not None else None
        fields = cached.get(key) if key is not None else None
        if isinstance(fields, tuple) and len(fields) == 5:
            assert blob is not None
            inputs[relative] = blob.decode()
        else:
            fields, read_blob = _read_with_blob(folder, path, memory_id, files)
            if read_blob is None:
                vouched = False
            else:
                inputs[relative] = read_blob
            if fields is None:
                continue
            # Kept under the blob git will make of these bytes: found again once committed.
            key = None if read_blob is None else f"{read_blob}\0{relative}"
        if key is not None:
            kept[key] = fields
        name, description, category, baseline, priority = fields
        found[memory_id] = Listing(memory_id, name, description, category, baseline, priority)
    return [found[memory_id] for memory_id in sorted(found)], vouched


def _read_with_blob(folder: MemoryFolder, path: Path | str, memory_id: str,
                    files: _Files) -> tuple[Fields | None, str | None]:
    """`_read`'s fields, and the blob id of the bytes read: None for bytes not read, or read
    through a link (what git holds is the link, not them): the record cannot vouch for it."""
    fields, raw, short = _read(folder, path, memory_id, files)
    linked = not short and os.path.islink(path)
    return fields, (blob_id(raw) if raw is not None and not linked else None)


def _read(folder: MemoryFolder, path: Path | str, memory_id: str,
          files: _Files) -> tuple[Fields | None, bytes | None, bool]:
    """What MEMORY.md needs of one file, read as the store reads it (None: the store would
    not index it), the file's bytes (None: not read), and whether they were read the short
    way (`_Files`: then the file is no symbolic link)."""
    raw: bytes | None = None
    short = False
    try:
        folder.check_reachable(memory_id, path=path)  # the store indexes no other (InvalidId)
        raw = files.read(path)
        short = raw is not None
        if raw is None:
            raw = read_memory(folder, Path(path)).raw or b""
        return listed_of(raw, memory_id, path), raw, short
    except (InvalidMemory, InvalidId, OSError, ValueError):
        return None, raw, short


def listed_of(raw: bytes, memory_id: str, path: Path | str) -> Fields:
    """`memory.listing.listed_of`, imported when a memory is read: a sync with nothing to
    read imports no memory format (`file_format`, `value`: ~8 ms of its ~0.07 s)."""
    from ..memory.listing import listed_of as listed

    return listed(raw, memory_id, path)


class _Files:
    """Memory files read the short way: each opened by name from its folder's descriptor, the
    folders opened once each from the root down, none of them (nor the file) through a
    symbolic link. What is not a plain regular file within the size limit (a link, a FIFO,
    one gone or unreadable, one too big) is None here and read the checked way,
    `read_memory`, which says what is wrong with it: the same bytes or the same refusal,
    for a third of its system calls (no containment walk, one `fstat`)."""

    _FILE = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0)
    _FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)

    def __init__(self, root: Path) -> None:
        from ..memory.coercion import MAX_FILE_BYTES

        self.root = str(root)
        self.open: dict[str, int | None] = {}
        self.limit = MAX_FILE_BYTES

    def __enter__(self) -> _Files:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.open.values():
            if fd is not None:
                os.close(fd)
        self.open.clear()

    def folder(self, rel: str) -> int | None:
        """A descriptor of the folder `rel` below the root ("" for the root), None when one
        on the way is a link or cannot be opened."""
        if rel in self.open:
            return self.open[rel]
        fd: int | None = None
        try:
            if not rel:
                fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            else:
                parent, _, name = rel.rpartition("/")
                above = self.folder(parent)
                if above is not None and name not in ("", ".", ".."):
                    fd = os.open(name, self._FOLDER, dir_fd=above)
        except OSError:
            fd = None
        self.open[rel] = fd
        return fd

    def read(self, path: Path | str) -> bytes | None:
        if os.name != "posix":
            return None
        text = os.fspath(path)
        if not text.startswith(self.root + "/"):
            return None
        parent, _, name = text[len(self.root) + 1:].rpartition("/")
        above = self.folder(parent)
        if above is None:
            return None
        try:
            fd = os.open(name, self._FILE, dir_fd=above)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.limit:
                return None
            chunks = []
            size = 0
            while chunk := os.read(fd, self.limit + 1 - size):
                chunks.append(chunk)
                size += len(chunk)
                if size > self.limit:
                    return None
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)


def blob_id(raw: bytes) -> str:
    """git's id of a blob of these bytes (`git hash-object`)."""
    _hashed[0] += 1
    sha1 = _sha1("_sha1" if _hashed[0] <= _FEW_HASHED else "hashlib")
    return sha1(b"blob %d\0" % len(raw) + raw).hexdigest()


# The first few blobs are hashed by CPython's own SHA-1 module (0.3 ms to import), the rest by
# hashlib's (OpenSSL's: 3 ms to load, four times as fast): a receive of a few files loads no
# OpenSSL, a join of 10,000 hashes them at full speed.
_FEW_HASHED = 64
_hashed = [0]


@functools.cache
def _sha1(module: str) -> Callable[[bytes], Any]:
    if module == "_sha1":
        try:
            from _sha1 import sha1
        except ImportError:  # pragma: no cover - other interpreters
            pass
        else:
            return sha1  # type: ignore[no-any-return]
    from hashlib import sha1 as openssl_sha1

    return openssl_sha1


def _write(folder: MemoryFolder, memories: Iterable[Listing],
           retrievals: dict[str, int]) -> tuple[bool, bytes | None]:
    """Write MEMORY.md: (whether its bytes changed, its bytes now; None when left alone)."""
    from ..memory import catalog
    from ..memory.coercion import MAX_FILE_BYTES

    listed = list(memories)
    target = folder.index_file
    if target.is_symlink():
        # Never followed (it may lead outside): the link itself is replaced.
        data = catalog.render(listed, retrievals).encode("utf-8")
        atomic_write(target, data, mode=file_mode(folder.root))
        return True, data
    now: list[bytes | None] = [None]

    def updated(seen: Seen) -> bytes | None:
        data = catalog.updated_index(seen.raw, listed, retrievals).data
        now[0] = data if data is not None else seen.raw
        return data

    def read(path: Path) -> Seen:
        if path.is_dir():
            raise InvalidMemory(f"{path}: a folder, not a file", path=path)
        return read_or_absent(path, limit=MAX_FILE_BYTES)

    try:
        _, written = rewrite(target, updated, read=read, mode=file_mode(folder.root),
                             limit=MAX_FILE_BYTES)
    except (InvalidMemory, FileChanged):  # a FIFO, a folder, an unreadable file: left alone
        return False, None
    return written is not None, now[0]


def _load_saved(folder: MemoryFolder) -> _Saved:
    try:
        with gc_paused():  # tens of thousands of strings and tuples, none of them garbage
            data = marshal.loads(folder.state_path(ENTRIES).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return _Saved(_NO_ROWS, False, "")
    if isinstance(data, tuple) and len(data) == 4 and data[0] == 2:
        return _older_saved(data)  # the record of the sage-mem before: still good
    if not isinstance(data, tuple) or len(data) != 4 or data[0] != _VERSION:
        return _Saved(_NO_ROWS, False, "")
    _, columns, complete, token = data
    rows = _Rows(*columns) if isinstance(columns, tuple) and len(columns) == 4 else _NO_ROWS
    if not rows.well_formed():
        return _Saved(_NO_ROWS, False, "")
    token = token if isinstance(token, str) else ""
    return _load_changes(folder, _Saved(rows, complete is True, token, rows, token))


def _older_saved(data: tuple[object, ...]) -> _Saved:
    """Version 2's record (fields by `blob\0path`, the paths' blobs when all were vouched
    for) as rows."""
    _, kept, inputs, token = data
    if not isinstance(kept, dict):
        return _Saved(_NO_ROWS, False, "")
    complete = isinstance(inputs, dict)
    if not isinstance(inputs, dict):
        inputs = {key.partition("\0")[2]: key.partition("\0")[0] for key in kept
                  if isinstance(key, str)}
    rows = _Rows.of(kept, inputs)
    if not rows.well_formed():
        return _Saved(_NO_ROWS, False, "")
    return _Saved(rows, complete, token if isinstance(token, str) else "")


def _load_changes(folder: MemoryFolder, saved: _Saved) -> _Saved:
    """`saved` with the rows `catalog.changes` adds and takes away, when they were written
    against it (its token); else `saved` alone."""
    try:
        with gc_paused():
            data = marshal.loads(folder.state_path(CHANGES).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return saved
    if (not isinstance(data, tuple) or len(data) != 6 or data[0] != _VERSION
            or data[1] != saved.token or not saved.token):
        return saved
    _, _, token, complete, gone, added = data
    added = _Rows(*added) if isinstance(added, tuple) and len(added) == 4 else None
    if (added is None or not added.well_formed() or not isinstance(gone, list)
            or not all(type(path) is str for path in gone) or not isinstance(token, str)):
        return saved
    rows = saved.rows.spliced(set(gone), added)
    return _Saved(rows, complete is True, token, saved.rows, saved.token, tuple(gone), added)


def _save_entries(folder: MemoryFolder, saved: _Saved, rows: _Rows, complete: bool,
                  token: str, touched: set[str] | None) -> None:
    """Keep `rows`: as what `catalog.entries` lacks and has no more, in `catalog.changes`
    (a receive's few rows, not 10,000 written again each time), until they are many; then
    whole, in `catalog.entries`. `touched`: the paths whose rows alone differ from the
    saved ones (`_since_stamp`'s), None when any may (a walk)."""
    try:
        if touched is not None and saved.base_token and saved.base.paths:
            gone = sorted(touched.intersection(saved.base.paths).union(saved.gone))
            earlier = saved.added.picked(
                [n for n, path in enumerate(saved.added.paths) if path not in touched])
            added = earlier.spliced(set(), rows.picked(
                [n for n, path in enumerate(rows.paths) if path in touched] if touched else []))
            if len(gone) + len(added.paths) <= _MOST_CHANGES:
                atomic_write(folder.state_path(CHANGES), marshal.dumps(
                    (_VERSION, saved.base_token, token, complete, gone, tuple(added))),
                    durable=False)
                return
        atomic_write(folder.state_path(ENTRIES),
                     marshal.dumps((_VERSION, tuple(rows), complete, token)), durable=False)
        folder.state_path(CHANGES).unlink(missing_ok=True)
    except OSError:
        pass  # a cache: the next sync reads the files again
