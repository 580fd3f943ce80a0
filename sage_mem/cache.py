"""The on-disk index cache in `<state>/index/`: a new process starts warm, not from the files.

Owns the cache file's format, its validation against the folder and its
atomic replacement. The store (`MemoryStore.reload`) uses it; nothing else
needs to know it exists, and deleting the folder only costs one cold build.

One file per memory folder, `<state>/index/<hash of the folder path>.idx`:

    magic (8 bytes) | header length (8) | header | sections, each 8-byte aligned

The header (marshal) holds the format version, a fingerprint of everything
the cached data depends on (`fingerprint`), when the build started, and each
section's place, length and CRC-32s. The sections:

    meta      marshal: memory ids (sorted) with their trust, updated, archived,
              category, project; field lengths; length sums and averages; and
              what the build saw of each file (relative path, size, mtime_ns,
              inode, ctime_ns, and the problem if it could not be indexed)
    records   each memory's fields (marshal), decoded only when asked for
    term_*    postings terms sorted by CRC-32 of their UTF-8 (crc, text, start,
              largest weight)
    slots     int32 memory numbers of every posting, term after term, each
              term's ascending
    weights   float32 saturated weights, in the same order

The index reads `slots` and `weights` in place (`index.Backing`): a warm
process decodes no postings, and its memory holds only the pages its
queries touched.

Nothing in it is trusted blindly:

- Validation: a stat walk (`scan`) compares every file's size, mtime_ns,
  inode and ctime_ns (a `cp -p` that restores an old mtime still moves ctime)
  and the set of paths with what the cache saw; only files that differ are
  read again. As in git's "racy" index, a file whose mtime is within
  `RACY_NS` (2 s) of the moment the build began, or later, may have changed
  again within the same timestamp tick, so it is read again too.
- Integrity: the header and meta are checked (CRC-32) on load; the big
  sections carry a CRC-32 per 64 KiB chunk, checked the first time a query
  touches the chunk, so a warm process never reads what it does not use.
  A file that is short, garbled, from another format version or from other
  scoring or tokenizer code is ignored and rebuilt; a chunk found corrupt later
  raises `CacheCorrupt`, on which the index rebuilds itself from the files.
- Versioning: `FORMAT_VERSION`, plus a fingerprint hashing the scoring
  constants and the source of the modules that turn a file into postings
  (files, memory, folder, store, tokens, index, cache: their size, mtime and
  inode, a stat each), so any change there invalidates it.
- Concurrency: written to a temp file in the same folder and renamed over
  the old one (not fsynced: a file torn by a crash fails its checksums), so
  a reader sees the old file or the new one, never a mix, and two processes
  building at once each write a whole file (the last rename wins; both are
  correct). Readers take no lock and map the file read-only; a
  file renamed over keeps its old contents for whoever mapped it.
- A state folder that cannot be written just means no cache.

Must stay import-light: the hook path imports it.
"""

from __future__ import annotations

import hashlib
import marshal
import mmap
import os
import sys
import time
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, fields
from itertools import accumulate
from operator import itemgetter
from pathlib import Path

from .files import make_private_dirs
from .folder import ARCHIVE_DIR, DREAM_DIR, INDEX_FILE, MemoryFolder, is_editor_junk
from .index import FIELDS, BackingError, Columns, Export, Index, Scoring, gc_paused
from .memory import Memory

FORMAT_VERSION = 2
MAGIC = b"SAGEMEMI"
RACY_NS = 2_000_000_000
CHUNK_SHIFT = 16
STALE_TEMP_SECONDS = 600.0
# A process that finds this many files changed since the cache was written writes a new
# one; fewer are cheaper to read again (about a millisecond each) than a rewrite.
REWRITE_AFTER = 32
_SOURCES = ("files.py", "memory.py", "folder.py", "store.py", "tokens.py", "index.py", "cache.py")
_MEMORY_FIELDS = tuple(f.name for f in fields(Memory))

Signature = tuple[int, int, int, int]
"""size, mtime_ns, inode, ctime_ns of a file (following a symlink)."""


class CacheCorrupt(BackingError):
    """A part of the cache file did not match its checksum (the index rebuilds from the files)."""


@dataclass(frozen=True)
class Entry:
    """What a build saw of one file: its signature, and why it was not indexed (if it was not)."""

    signature: Signature
    problem: tuple[str, int | None, int | None] | None = None


@dataclass
class Loaded:
    """A cache file, read: the index it holds and what its build saw of each file.

    `signatures` holds every file the build saw (relative path -> signature),
    `problems` why some of them could not be indexed.
    """

    index: Index
    signatures: dict[str, Signature]
    problems: dict[str, tuple[str, int | None, int | None]]
    started_ns: int
    racy: frozenset[str] = frozenset()

    def unchanged(self, current: dict[str, Signature | None]) -> set[str]:
        """The files whose signature is as the build saw it, and not racy.

        A file whose mtime is within RACY_NS of the moment the build began (or
        later) may have changed again within the same timestamp tick after it
        was read, so it does not count as unchanged; the build lists them
        (`racy`). In C, as sets: a warm start does this for every file.
        """
        same = self.signatures.items() & current.items()
        return set(map(itemgetter(0), same)) - self.racy


def fingerprint(scoring: Scoring) -> str:
    """A hash of everything cached data depends on besides the files themselves."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT_VERSION}|{sys.byteorder}|{sys.version_info[:2]}".encode())
    digest.update(repr((scoring.k1, sorted(scoring.field_weights.items()),
                        sorted(scoring.field_b.items()), scoring.unigram_weight,
                        scoring.pair_weight, FIELDS, _MEMORY_FIELDS)).encode())
    digest.update(_source_digest())
    return digest.hexdigest()


_source_cache: list[bytes] = []


def _source_digest() -> bytes:
    """The sources' sizes and modification times (a stat each: cheaper than reading them)."""
    if not _source_cache:
        here = os.path.dirname(os.path.abspath(__file__))
        digest = hashlib.sha256()
        for name in _SOURCES:
            try:
                st = os.stat(os.path.join(here, name))
                digest.update(f"{name}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}".encode())
            except OSError:
                # Installed without sources: the package version has to stand for them.
                from importlib.metadata import PackageNotFoundError, version

                try:
                    digest.update(version("sage-mem").encode())
                except PackageNotFoundError:
                    digest.update(b"unknown")
        _source_cache.append(digest.digest())
    return _source_cache[0]


def cache_path(folder: MemoryFolder) -> Path:
    """The cache file of a memory folder (several folders may share one state folder)."""
    key = hashlib.sha256(os.fsencode(folder.root)).hexdigest()[:16]
    return folder.state_path("index", f"{key}.idx")


# the stat walk


def scan(folder: MemoryFolder) -> dict[str, Signature | None]:
    """Every memory file (archived ones too) by relative path, with its signature.

    The same files as `MemoryFolder.iter_files` with and without `archived`,
    found with one `scandir` and one `stat` per file. None for a file whose
    stat failed (it is read again, and the store says why).
    """
    root = str(folder.root)
    out: dict[str, Signature | None] = {}
    stack: list[tuple[str, str]] = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if name.startswith(".") or is_editor_junk(name):
                    continue
                if not prefix and name == DREAM_DIR:
                    continue
                stack.append((entry.path, prefix + name + "/"))
                continue
            # A name ending in .md is junk only by its first character (is_editor_junk).
            if not name.endswith(".md") or name[0] in ".#~":
                continue
            if not prefix and name == INDEX_FILE:
                continue
            try:
                st = entry.stat()
            except OSError:
                out[prefix + name] = None
                continue
            out[prefix + name] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    return out


def is_archived_path(relative: str) -> bool:
    return relative.startswith(ARCHIVE_DIR + "/")


# reading


class _Section:
    """A section of the mapped file whose 64 KiB chunks are checked on first use."""

    def __init__(self, view: memoryview, crcs: list[int], name: str) -> None:
        self.view = view
        self.crcs = crcs
        self.checked = bytearray(len(crcs))
        self.name = name

    def check(self, start: int, end: int) -> None:
        """Raise CacheCorrupt unless bytes [start, end) are as written."""
        if end <= start:
            return
        view, crcs, checked = self.view, self.crcs, self.checked
        for chunk in range(start >> CHUNK_SHIFT, ((end - 1) >> CHUNK_SHIFT) + 1):
            if not checked[chunk]:
                begin = chunk << CHUNK_SHIFT
                if zlib.crc32(view[begin : begin + (1 << CHUNK_SHIFT)]) != crcs[chunk]:
                    raise CacheCorrupt(f"index cache: section {self.name} is damaged")
                checked[chunk] = 1

    def typed(self, code: str) -> memoryview:
        return self.view.cast(code)


class _Backing:
    """The cache file as an `index.Backing`: postings read in place, memories on demand."""

    def __init__(self, sections: dict[str, _Section], meta: dict, root: Path) -> None:
        self.sections = sections
        self.lengths_column: list[int] = meta["lengths"]
        self.record_starts: list[int] = meta["record_starts"]
        self.root = root
        self.crcs = sections["term_crcs"].typed("I")
        self.text_starts = sections["term_text_starts"].typed("Q")
        self.posting_starts = sections["term_starts"].typed("Q")
        self.tops = sections["term_tops"].typed("f")
        self.text = sections["term_text"]
        self.slots = sections["slots"]
        self.weights = sections["weights"]
        self.slot_view = self.slots.typed("i")
        self.weight_view = self.weights.typed("f")
        self.records = sections["records"]

    def _find(self, term: str) -> int:
        """The position of `term` in the term table, or -1; checks only the chunks it reads."""
        encoded = term.encode("utf-8", "surrogatepass")
        crc = zlib.crc32(encoded)
        crcs, check_crcs = self.crcs, self.sections["term_crcs"].check
        low, high = 0, len(crcs)
        while low < high:
            middle = (low + high) // 2
            check_crcs(middle * 4, middle * 4 + 4)
            if crcs[middle] < crc:
                low = middle + 1
            else:
                high = middle
        starts, text = self.text_starts, self.text
        check_starts = self.sections["term_text_starts"].check
        position = low
        while position < len(crcs):
            check_crcs(position * 4, position * 4 + 4)
            if crcs[position] != crc:
                break
            check_starts(position * 8, position * 8 + 16)
            begin, end = starts[position], starts[position + 1]
            text.check(begin, end)
            if text.view[begin:end] == encoded:
                self.sections["term_starts"].check(position * 8, position * 8 + 16)
                self.sections["term_tops"].check(position * 4, position * 4 + 4)
                return position
            position += 1
        return -1

    def postings(self, term: str) -> tuple[memoryview, memoryview, float] | None:
        position = self._find(term)
        if position < 0:
            return None
        begin, end = self.posting_starts[position], self.posting_starts[position + 1]
        self.slots.check(begin * 4, end * 4)
        self.weights.check(begin * 4, end * 4)
        return self.slot_view[begin:end], self.weight_view[begin:end], self.tops[position]

    def terms(self) -> Iterator[tuple[str, memoryview, memoryview, float]]:
        for section in self.sections.values():
            if section is not self.records:
                section.check(0, len(section.view))
        text_starts, posting_starts, text = self.text_starts, self.posting_starts, self.text.view
        slots, weights, tops = self.slot_view, self.weight_view, self.tops
        for position in range(len(self.crcs)):
            term = bytes(text[text_starts[position] : text_starts[position + 1]])
            begin, end = posting_starts[position], posting_starts[position + 1]
            yield (term.decode("utf-8", "surrogatepass"), slots[begin:end], weights[begin:end],
                   tops[position])

    def record(self, number: int) -> memoryview:
        """A memory's record as stored (checked)."""
        begin, end = self.record_starts[number], self.record_starts[number + 1]
        self.records.check(begin, end)
        return self.records.view[begin:end]

    def memory(self, number: int) -> Memory:
        try:
            values = marshal.loads(self.record(number))
        except (EOFError, ValueError, TypeError) as exc:
            raise CacheCorrupt(f"index cache: record {number} unreadable: {exc}") from None
        data = dict(zip(_MEMORY_FIELDS, values, strict=True))
        path = data["path"]
        data["path"] = self.root / path if not os.path.isabs(path) else Path(path)
        return Memory(**data)

    def lengths(self, number: int) -> tuple[int, ...]:
        width = len(FIELDS)
        return tuple(self.lengths_column[number * width : (number + 1) * width])


def load(
    folder: MemoryFolder, *, scoring: Scoring, half_life_days: float | None = None
) -> Loaded | None:
    """The cached index of `folder`, or None when there is no usable cache (never raises)."""
    path = cache_path(folder)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 16:
                return None
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        return _parse(mapped, size, folder, scoring, half_life_days)
    except (CacheCorrupt, EOFError, ValueError, TypeError, KeyError, IndexError,
            OverflowError, MemoryError):
        return None


def _parse(
    mapped: mmap.mmap, size: int, folder: MemoryFolder, scoring: Scoring,
    half_life_days: float | None,
) -> Loaded | None:
    view = memoryview(mapped)
    if bytes(view[:8]) != MAGIC:
        return None
    header_length = int.from_bytes(view[8:16], "little")
    if header_length <= 4 or 16 + header_length > size:
        return None
    header_bytes = bytes(view[16 : 16 + header_length])
    if zlib.crc32(header_bytes[4:]) != int.from_bytes(header_bytes[:4], "little"):
        return None
    header = marshal.loads(header_bytes[4:])
    if header.get("version") != FORMAT_VERSION or header.get("fingerprint") != fingerprint(
        scoring
    ):
        return None
    if header.get("root") != str(folder.root) or header.get("size") != size:
        return None
    sections: dict[str, _Section] = {}
    for name, (offset, length, crcs) in header["sections"].items():
        if offset + length > size or len(crcs) != (length + (1 << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT:
            return None
        sections[name] = _Section(view[offset : offset + length], crcs, name)
    meta_section = sections.pop("meta")
    meta_section.check(0, len(meta_section.view))
    with gc_paused():  # tens of thousands of new containers, none of them garbage
        meta = marshal.loads(meta_section.view)
    backing = _Backing(sections, meta, folder.root)
    ids = meta["ids"]
    count = len(ids)
    if len(meta["lengths"]) != count * len(FIELDS) or len(meta["record_starts"]) != count + 1:
        return None
    if len(meta["paths"]) != len(meta["signatures"]):
        return None
    columns = Columns(
        ids=ids,
        trusts=meta["trusts"],
        updated=meta["updated"],
        archived=meta["archived"],
        categories=meta["categories"],
        projects=meta["projects"],
        averages=dict(zip(FIELDS, meta["averages"], strict=True)),
        length_sums=dict(zip(FIELDS, meta["length_sums"], strict=True)),
        max_boost=meta["max_boost"],
    )
    index = Index.from_backing(columns, backing, half_life_days=half_life_days, scoring=scoring)
    signatures = dict(zip(meta["paths"], meta["signatures"], strict=True))
    return Loaded(
        index, signatures, meta["problems"], header["started_ns"], frozenset(meta["racy"])
    )


# writing


def save(
    folder: MemoryFolder,
    index: Index,
    entries: dict[str, Entry],
    *,
    started_ns: int,
) -> bool:
    """Write the cache of `folder` (atomically); False when the state folder cannot take it."""
    path = cache_path(folder)
    try:
        make_private_dirs(path.parent)
        _remove_stale_temps(path.parent)
        with gc_paused():
            sections = _encode(index.export(), folder.root, entries, started_ns)
        header = {
            "version": FORMAT_VERSION,
            "fingerprint": fingerprint(index.scoring),
            "root": str(folder.root),
            "started_ns": started_ns,
            "written_ns": time.time_ns(),
        }
        _write(path, header, sections)
    except OSError:
        return False
    return True


def _encode(
    export: Export, root: Path, entries: dict[str, Entry], started_ns: int
) -> dict[str, bytes]:
    terms, numbers, weights, tops = export.postings()
    encoded = [term.encode("utf-8", "surrogatepass") for term in terms]
    crcs = list(map(zlib.crc32, encoded))
    order = sorted(range(len(terms)), key=crcs.__getitem__)
    texts = list(map(encoded.__getitem__, order))
    numbers = list(map(numbers.__getitem__, order))
    weights = list(map(weights.__getitem__, order))
    posting_starts = array("Q", list(accumulate(map(len, numbers), initial=0)))
    text_starts = array("Q", list(accumulate(map(len, texts), initial=0)))
    columns = export.columns
    base = export.base if isinstance(export.base, _Backing) else None
    records = []
    prefix = str(root) + os.sep
    for number in export.numbers:
        if base is not None and number < export.base_count:
            records.append(base.record(number))  # as stored: the same root, checked
            continue
        memory = export.memory(number)
        values = [getattr(memory, name) for name in _MEMORY_FIELDS]
        where = str(memory.path)
        values[_MEMORY_FIELDS.index("path")] = (
            where[len(prefix) :] if where.startswith(prefix) else where
        )
        records.append(marshal.dumps(tuple(values)))
    meta = {
        "ids": columns.ids,
        "lengths": export.lengths,
        "record_starts": list(accumulate(map(len, records), initial=0)),
        "averages": [columns.averages[name] for name in FIELDS],
        "length_sums": [columns.length_sums[name] for name in FIELDS],
        "trusts": columns.trusts,
        "updated": columns.updated,
        "archived": columns.archived,
        "categories": columns.categories,
        "projects": columns.projects,
        "max_boost": columns.max_boost,
        "paths": sorted(entries),
        "signatures": [tuple(entries[relative].signature) for relative in sorted(entries)],
        "racy": [
            relative for relative, entry in entries.items()
            if entry.signature[1] >= started_ns - RACY_NS
        ],
        "problems": {
            relative: entry.problem for relative, entry in entries.items() if entry.problem
        },
    }
    # bytes.join takes arrays and mapped memoryviews as they are: one copy, in C.
    return {
        "meta": marshal.dumps(meta),
        "records": b"".join(records),
        "term_crcs": array("I", map(crcs.__getitem__, order)).tobytes(),
        "term_text_starts": text_starts.tobytes(),
        "term_text": b"".join(texts),
        "term_starts": posting_starts.tobytes(),
        "term_tops": array("f", list(map(tops.__getitem__, order))).tobytes(),
        "slots": b"".join(numbers),
        "weights": b"".join(weights),
    }


def _write(path: Path, header: dict, sections: dict[str, bytes]) -> None:
    placed: dict[str, tuple[int, int, list[int]]] = {}
    # The header's size depends on the offsets it holds: place the sections after a
    # generous allowance, then fill the gap.
    allowance = 4096 + 16 * sum(len(data) >> CHUNK_SHIFT for data in sections.values())
    offset = 16 + allowance
    for name, data in sections.items():
        offset = (offset + 7) & ~7
        chunks = [
            zlib.crc32(data[start : start + (1 << CHUNK_SHIFT)])
            for start in range(0, len(data), 1 << CHUNK_SHIFT)
        ]
        placed[name] = (offset, len(data), chunks)
        offset += len(data)
    header = dict(header, sections=placed, size=offset)
    body = marshal.dumps(header)
    header_bytes = zlib.crc32(body).to_bytes(4, "little") + body
    if len(header_bytes) > allowance:
        raise OSError("index cache: header larger than its allowance")
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + len(header_bytes).to_bytes(8, "little") + header_bytes)
            for name, data in sections.items():
                handle.seek(placed[name][0])
                handle.write(data)
            handle.truncate(offset)
        # No fsync: a cache lost or torn by a crash fails its checksums and is rebuilt,
        # and an fsync of tens of megabytes would cost more than the rebuild saves.
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def _remove_stale_temps(folder: Path) -> None:
    """Temp files of writers that died mid-write; any younger one may still be in use."""
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                if entry.name.endswith(".tmp") and entry.name.startswith("."):
                    try:
                        if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                            os.unlink(entry.path)
                    except OSError:
                        continue
    except OSError:
        pass


__all__ = [
    "CacheCorrupt", "Entry", "FORMAT_VERSION", "Loaded", "cache_path", "fingerprint",
    "load", "save", "scan",
]
