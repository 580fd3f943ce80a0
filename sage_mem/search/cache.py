"""The on-disk index cache in `<state>/index/`: a new process starts warm, not from the files.

Owns the cache file's format, its validation against the folder and its
atomic replacement. `loading` (for `MemoryStore.reload`) decides when to read
and write it; deleting the folder only costs one build.

One file per memory folder, `<state>/index/<hash of the folder path>.idx`:

    magic (8 bytes) | header length (8) | header | sections, each 8-byte aligned

The header (marshal) holds the format version, a fingerprint of everything
the cached data depends on (`fingerprint`), the terms of the fingerprint's
sample with the signature of the code that made them (`sample_terms`: a
reader running that same code need not tokenize the sample), when the build
started, and each section's place and length. The sections:

    meta      marshal: the memories' trust, updated, archived,
              category, project; length sums and averages; the first term of
              each term block; the first CRC-32 and the CRC-32 of each page of
              the counts; the problems of the files that could not be indexed,
              those within the racy window; the CRC-32 of each section below
              that holds one of its columns; when the store handed a judge
              (`Secrets`), its mark and a byte a memory: whether a hook would
              mask anything it shows of it (absent: not judged, every shown
              memory is checked)
    ids       the memory ids, their UTF-8 end to end (`packed.PackedIds`)
    id_starts  where each id starts in `ids`, and where the last ends (uint32)
    id_order  the memory numbers in id order (uint32): an id is found by bisection
    lengths   the memories' field lengths (uint32, row after row)
    record_starts  where each record starts (uint64)
    paths     the relative paths of the files the build saw, NUL-joined (UTF-8),
              in the order of the walk it started from (`Walk`)
    signatures  theirs: size, mtime_ns, inode, ctime_ns (int64, `_packed`)
    records   each memory's fields (marshal), decoded only when asked for
    terms     the terms sorted by CRC-32 of their UTF-8, in blocks of
              TERM_BLOCK (marshal): for each, its text, where its postings are,
              their largest weight and their CRC-32
    slots     int32 memory numbers of every posting, term after term, each
              term's ascending
    weights   float32 saturated weights, in the same order
    counts    the terms' CRC-32s (uint32, ascending, as the term table) and
              then their postings counts (uint32, the same order): a long
              query's document frequencies in one bisection each, without
              decoding a term block (`_Backing.estimated_counts`), read a
              page of COUNTS_PAGE terms at a time

The file is read with `pread`, a term's block and postings at a time, never
mapped: a mapping would count every page the kernel maps around a touched
one (whole large folios) as the process's memory, and 300 queries touched
most of a 470 MB file. A warm process holds the meta and what its current
query reads; the page cache keeps the rest warm for every process at once.

Nothing in it is trusted blindly:

- Validation: a stat walk (`scan`) compares every file's size, mtime_ns,
  inode and ctime_ns (a `cp -p` that restores an old mtime still moves ctime)
  and the set of paths with what the cache saw; only files that differ are
  read again. As in git's "racy" index, a file whose mtime is within
  `RACY_NS` (2 s) of the moment the build began, or later, may have changed
  again within the same timestamp tick, so it is read again too. A hook
  answered with no server may instead stat only the folders (`scan_changed`:
  the cache records each folder's stat, `folders` in the meta) and list
  only those that changed; a file edited in place in an unchanged folder is
  then seen at the next full walk, and what a hook shows of a memory is
  read again from its file first.
- Integrity: the header and meta are checked (CRC-32) on load; every term
  block and record carries its own CRC-32, and every term its postings',
  each checked when first read, so a warm process never reads what it does
  not use; each page of the counts section when first read (CRC-32s in the
  meta). A file that is short, garbled, from another format version or
  from other scoring or tokenizer code is ignored and rebuilt; a part found
  corrupt later raises `CacheCorrupt`, on which the index rebuilds itself
  from the files.
- Versioning: `FORMAT_VERSION` (the file's layout) and `SCORING_VERSION`
  (what a file turns into), plus a fingerprint of the scoring constants and
  of the terms the tokenizer makes of a fixed sample, so a change there
  invalidates it; where and when the package was installed does not (a
  reinstall or an upgrade that changed none of it keeps the cache).
- Writing: `save` (an index) and `build` (a large folder's cold build,
  straight from the files, no index held) write the same bytes for the same
  memories, section by section: records and term blocks go to a nameless
  spill file beside the cache until the meta (first in the file) is known,
  the postings are written term by term, nothing is built whole in memory.
- Concurrency: written to a temp file in the same folder and renamed over
  the old one (not fsynced: a file torn by a crash fails its checksums), so
  a reader sees the old file or the new one, never a mix, and two processes
  building at once each write a whole file (the last rename wins; both are
  correct). Readers take no lock and keep the file open; a file renamed
  over keeps its old contents for whoever has it open.
- A state folder that cannot be written just means no cache.

Must stay import-light: the hook path imports it.

Why one module: it is one file format, and each section's
writer (`_write`, `build`, `save`) and reader (`_Backing`, `load`) must change
together with the format version; split in two, a layout would live in two
rooms and drift apart.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
import time
import weakref
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from itertools import accumulate, filterfalse, groupby, repeat
from operator import add, getitem, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, cast

from ..disk.bulk import gc_paused
from ..disk.folder import MemoryFolder, is_walked
from ..disk.safe_io import make_private_dirs
from ..memory.file_format import sha256
from ..memory.value import Memory, ValueProblem, display_text
from .building import TermTexts, crc_order, term_crcs
from .index import Index
from .packed import BackingError, Columns, Export, PackedIds, Round, packed_ids
from .scoring import FIELDS, Scoring, word_pairs
from .tokens import tokenize

if TYPE_CHECKING:  # imported when first used: not on a hook's path
    from ..memory.catalog import Listing

# 5: the counts section; 6: paths and signatures packed in walk order, big meta columns as
# sections, the counts read a page at a time; 7: the ids packed, sections of their own.
FORMAT_VERSION = 7
MAGIC = b"SAGEMEMI"
RACY_NS = 2_000_000_000
# Terms per block of the term table: one read of a few KiB finds a term.
TERM_BLOCK = 64
# Where the postings of this many terms are remembered (some 150 bytes each).
FOUND_TERMS = 50_000
# Whose estimated counts (long queries' document frequencies) are remembered (~100 bytes each).
COUNTED_TERMS = 100_000
# Terms a page of the counts section: a long query reads the pages its terms fall in
# (2 KiB of CRC-32s and 2 KiB of counts each), not the whole section (19 MB at 100,000).
COUNTS_PAGE = 512
# How many bytes of postings read from the file a process keeps for its next queries.
KEPT_BYTES = 16 << 20
STALE_TEMP_SECONDS = 600.0
# A process that finds this many files changed since the cache was written writes a new
# one; fewer are cheaper to read again (about a millisecond each) than a rewrite.
REWRITE_AFTER = 32
# What a file turns into (fields, terms, weights): bump it with any change to how
# `memory/value.py`, `search/tokens.py` or `search/scoring.py` make postings of a file
# that the fingerprint's sample and constants would not show.
# 2: issue 16 (dates, numbers, identifier parts, irregular forms);
# 3: weak length normalisation (k1 0.7, b 0.1-0.3), CJK unigrams at 0.25, the words
#    for "now" as stop words, ordinal words as their digits.
# 4: names indexed by their prefixes too ("deb*" for "Deborah", `tokens.name_prefixes`).
# 5: the pronoun of a thing (它) indexed as a character too (`tokens.THING_PRONOUNS`).
SCORING_VERSION = 5
_MEMORY_FIELDS = tuple(f.name for f in fields(Memory))
_PROBLEMS = _MEMORY_FIELDS.index("problems")
# What MEMORY.md shows of a memory (`listing`), where its record holds it.
_LISTED = itemgetter(*(_MEMORY_FIELDS.index(name) for name in (
    "id", "name", "description", "summary", "category", "baseline", "baseline_priority",
    "archived", "problems")))

# marshal writes a string of one character (a term "6", a tag "a") as interned or not as
# Python holds it, and Python holds each one-character string once, interned or not
# depending on what the process imported before (numpy's modules intern most of them):
# all 256 interned now, so that no later import changes a cache's bytes.
for _code in range(256):
    sys.intern(chr(_code))
del _code

Signature = tuple[int, int, int, int]
Secrets = tuple[int, Callable[[Memory], bool]]
"""The mark of the credential rules (`store.credential_rules_mark`) and their judge of a
memory (True: a hook would mask something of it), handed down by the store (`checks` is
not this floor's to import): a cache keeps the verdicts, a hook trusts them only under
the same mark."""
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

    What the build saw, packed as a walk has it (`Walk`): `paths` the relative
    paths joined by NUL (UTF-8) in the order of the walk it was written from,
    `column` their signatures (four int64 each); `problems` why some of
    them could not be indexed, `racy` those changed within RACY_NS of the
    moment the build began.
    """

    index: Index
    paths: bytes
    column: Sequence[int]
    problems: dict[str, tuple[str, int | None, int | None]]
    racy: frozenset[str] = frozenset()
    folders: list[tuple[str, int, int, int]] | None = None
    """The folders the build's walk listed, in its order, with their stat (`scan_changed`);
    None when not recorded. One within the racy window has signature (0, 0, 0)."""

    def compare(self, walk: Walk) -> Changes:
        """How the folder a walk found differs from what the build saw.

        A file whose mtime is within RACY_NS of the moment the build began (or
        later) may have changed again within the same timestamp tick after it
        was read, so it is read again whatever its signature (`racy`).

        As the walk of an unchanged folder meets the files in the same order
        as the walk the cache was written from, the paths are compared as one
        string and the signatures as arrays, block by block, in C; only
        between the first and the last path where the two orders differ (a
        file added, removed or renamed) are paths matched by name. No tuple, set or
        dict entry a file (at 100,000 files those cost 60 ms and tens of MB).
        """
        names = walk.names
        new, old = walk.column, self.column
        if _same_paths(names, self.paths):
            differs = _differing(new, old, 0, 0, len(names))
            removed: list[str] = []
        else:
            differs, removed = _aligned(names, new, self._cached_paths(), old)
        differs.update(walk.failed)
        changed = set(map(names.__getitem__, differs))
        again = changed | (self.racy - set(removed)) if self.racy else changed
        return Changes(walk, frozenset(changed), removed, frozenset(again))

    def _cached_paths(self) -> list[str]:
        return self.paths.decode("utf-8", "surrogatepass").split("\0") if self.paths else []

    @property
    def signatures(self) -> dict[str, Signature]:
        """Every file the build saw: relative path -> signature (made when asked for)."""
        cached = self._cached_paths()
        column = self.column
        return {name: _unpacked(column[4 * at : 4 * at + 4]) for at, name in enumerate(cached)}


@dataclass(frozen=True)
class Changes:
    """What `Loaded.compare` found: the files the cache has wrong, and those it has right.

    `differs`: paths of the walk whose signature is not the one the build
    saw (new, edited, or whose stat failed); `removed`: paths the build saw
    that the walk did not find; `again`: the files to read again (`differs`
    and the racy ones still there). `unchanged` is every other path of the
    walk, iterated when asked for.
    """

    walk: Walk
    differs: frozenset[str]
    removed: list[str]
    again: frozenset[str]

    @property
    def unchanged(self) -> Collection[str]:
        return _Unchanged(self.walk, self.again)


class _Unchanged(Collection[str]):
    """The paths of a walk but those to read again, without a set of them."""

    __slots__ = ("walk", "again")

    def __init__(self, walk: Walk, again: frozenset[str]) -> None:
        self.walk = walk
        self.again = again

    def __iter__(self) -> Iterator[str]:
        return filterfalse(self.again.__contains__, self.walk.names)

    def __len__(self) -> int:
        return len(self.walk.names) - len(self.again)  # every path to read again is the walk's

    def __contains__(self, name: object) -> bool:
        return name not in self.again and name in self.walk


# Signatures compared a block at a time: one slice comparison in C per this many files.
_BLOCK = 256


def _same_paths(names: list[str], joined: bytes) -> bool:
    """Whether `joined` is `names` joined by NUL (UTF-8), compared a block at a time: no copy
    of the whole (some 4 MB at 100,000 files)."""
    at = 0
    for first in range(0, len(names), _BLOCK):
        piece = "\0".join(names[first : first + _BLOCK]).encode("utf-8", "surrogatepass")
        if first:
            piece = b"\0" + piece
        if joined[at : at + len(piece)] != piece:
            return False
        at += len(piece)
    return at == len(joined)


def _differing(
    new: Sequence[int], old: Sequence[int], new_at: int, old_at: int, count: int
) -> set[int]:
    """Positions (in `new`) among `count` files from `new_at` / `old_at` whose signatures differ."""
    out: set[int] = set()
    for first in range(0, count, _BLOCK):
        last = min(first + _BLOCK, count)
        a, b = 4 * (new_at + first), 4 * (old_at + first)
        if new[a : a + 4 * (last - first)] == old[b : b + 4 * (last - first)]:
            continue
        for at in range(first, last):
            a, b = 4 * (new_at + at), 4 * (old_at + at)
            if new[a : a + 4] != old[b : b + 4]:
                out.add(new_at + at)
    return out


def _common(one: list[str], other: list[str], *, backwards: bool = False) -> int:
    """How many paths the two lists share at their start (or end), found in blocks."""
    most = min(len(one), len(other))
    same = 0
    step = _BLOCK
    while same < most:
        size = min(step, most - same)
        if backwards:
            a = one[len(one) - same - size : len(one) - same]
            b = other[len(other) - same - size : len(other) - same]
        else:
            a, b = one[same : same + size], other[same : same + size]
        if a == b:
            same += size
            continue
        if size == 1:
            break
        step = max(1, size // 8)
    return same


def _aligned(
    names: list[str], new: Sequence[int], cached: list[str], old: Sequence[int]
) -> tuple[set[int], list[str]]:
    """`_differing` for paths that are not the same list: (positions that differ, removed).

    The shared start and end compare by position; the paths between by name."""
    head = _common(names, cached)
    tail = _common(names[head:], cached[head:], backwards=True)
    differs = _differing(new, old, 0, 0, head)
    differs |= _differing(new, old, len(names) - tail, len(cached) - tail, tail)
    where = {name: at for at, name in enumerate(cached[head : len(cached) - tail], head)}
    for at in range(head, len(names) - tail):
        was = where.pop(names[at], None)
        if was is None or new[4 * at : 4 * at + 4] != old[4 * was : 4 * was + 4]:
            differs.add(at)
    return differs, list(where)


def fingerprint(scoring: Scoring, recorded: object = None) -> str:
    """A hash of everything cached data depends on besides the files themselves.

    The format and scoring versions, the scoring constants, the memory's
    fields, and the terms the tokenizer makes of a fixed bilingual sample (a
    tokenizer that changed without a version bump still misses the cache).
    Nothing about where or when the package was installed: a reinstall or an
    upgrade that changed none of these keeps the cache. `recorded`: a cache
    header's `sample` (`sample_terms`).
    """
    constants = repr((scoring.k1, sorted(scoring.field_weights.items()),
                      sorted(scoring.field_b.items()), scoring.unigram_weight,
                      scoring.pair_weight, FIELDS, _MEMORY_FIELDS))
    known = _fingerprints.get(constants)
    if known is not None:
        return known
    digest = sha256()
    digest.update(f"{FORMAT_VERSION}|{SCORING_VERSION}|{sys.byteorder}|"
                  f"{sys.version_info[:2]}|{constants}".encode())
    digest.update(sample_terms(recorded).encode("utf-8", "surrogatepass"))
    value = _fingerprints[constants] = digest.hexdigest()
    return value


def sample_terms(recorded: object = None) -> str:
    """The terms the tokenizer makes of the fingerprint's sample, and their word pairs.

    `recorded` is what a cache's header holds of them, `(code, terms)`: when
    `code` is this process's `_CODE` (the same Python, and the same bytes in
    every file of the tokenizer's code), its terms are the ones this code
    makes, and the sample is not tokenized again: that compiled the
    tokenizer's every pattern (CJK runs, symbols, Chinese numbers and dates)
    in each hook process, whatever its prompt asked. Anything else (none, other
    code, no code known here): tokenized.
    """
    if (_CODE is not None and isinstance(recorded, tuple) and len(recorded) == 2
            and recorded[0] == _CODE and isinstance(recorded[1], str)):
        return recorded[1]
    terms = tokenize(_CANARY)
    return "\x00".join(terms + word_pairs(terms))


# The modules whose code makes the sample's terms (`tokenize`, `word_pairs`) and every
# sage_mem module they import (tests/test_cache.py holds the list to their imports).
TOKENIZER_MODULES = (
    "sage_mem.search.tokens", "sage_mem.search.porter2", "sage_mem.search.scoring",
    "sage_mem.memory.patterns", "sage_mem.memory.value", "sage_mem.memory.coercion",
    "sage_mem.errors", "sage_mem.search.cache",
)


def _code_signature() -> tuple[str, int] | None:
    """The Python version and the CRC-32 of the bytes of the TOKENIZER_MODULES' files (about
    0.1 ms), or None when one cannot be read (a zip). Taken once, when this module is
    imported, right after those modules were: the code this process runs, not what an
    upgrade may put in the files later while a server runs."""
    crc = 0
    for name in TOKENIZER_MODULES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path is None:
            return None
        try:
            with open(path, "rb") as source:
                crc = zlib.crc32(source.read(), crc)
        except OSError:
            return None
    return sys.version, crc


_CANARY = (
    "Running the tests: `pytest -q` before every release; the deployment's "
    "databases migrated (v2.1, 2026-11-30). How many cats? 我的猫叫小花，喜欢在花园里晒太阳。"
    "部署前先跑测试 pytest 测试，ＦＵＬＬ width 👍🏽"
)
_fingerprints: dict[str, str] = {}
_CODE = _code_signature()


def cache_path(folder: MemoryFolder) -> Path:
    """The cache file of a memory folder (several folders may share one state folder)."""
    key = sha256(os.fsencode(folder.root)).hexdigest()[:16]
    return folder.state_path("index", f"{key}.idx")


# the stat walk


def scan(folder: MemoryFolder, *, pause: Callable[[], None] | None = None) -> Walk:
    """Every memory file (archived ones too) by relative path, with its signature.

    The same files as `MemoryFolder.iter_files` with and without `archived`
    (both ask `folder.is_walked` of every entry), found with one `scandir` a
    folder and one `stat` a file, by name relative to the open folder (a
    third less time than `DirEntry.stat`, which joins every path). None for a
    file whose stat failed (it is read again, and the store says why).

    Packed (`Walk`): the paths in the order the walk met them and the
    signatures as one array of integers, no tuple or dict entry a file; a
    cache written from a walk keeps that order, so that the next walk over an
    unchanged folder compares with it as two strings and two arrays (`Loaded.compare`).

    `pause`, if given, is called every PAUSE_FILES files: a long-lived
    process's reconcile waits there while a hook is answered (`Walk.since`).
    """
    walk = Walk([], array("q"), frozenset(), [])
    _Lister(walk, pause).walk([(str(folder.root), "")])
    return walk


def scan_changed(folder: MemoryFolder, found: Loaded) -> Walk | None:
    """A walk of `folder` that lists only the folders whose stat changed since the cache.

    The shortcut of a hook answered with no server (`loading.load_index` with
    `by_folders`): a file added, removed or renamed into a folder (an editor's
    atomic save too) moves that folder's mtime, so each folder the cache's
    walk met is stat'ed, and only those whose signature (mtime_ns, inode,
    ctime_ns) differs, or was within the racy window, are listed and their
    files stat'ed; the files of the others are taken from the cache as they
    were. What this cannot see: a file edited in place (open, write, no
    rename) in an unchanged folder, which the index then holds in its old
    form until the next full walk (a daemon's); what is injected is read
    again from its file first (`MemoryStore.current`), never the cache's copy.

    None (a full `scan` is needed) when the cache recorded no folders, or its
    files are not in runs per folder, one run each, in the folders' order.
    """
    recorded = found.folders
    if recorded is None:
        return None
    cached = found._cached_paths()
    # Each file's folder ("" or "a/b/", as `_prefix_of` says), made in C, then its runs:
    # a Python call per file was a tenth of such a hook's work at 10,000 files.
    cuts = map(add, map(str.rfind, cached, repeat("/")), repeat(1))
    groups = [(prefix, len(list(run))) for prefix, run in groupby(
        map(getitem, cached, map(slice, repeat(None), cuts)))]
    runs: dict[str, tuple[int, int]] = {}
    at = taken = 0
    for prefix, *_ in recorded:
        begin = at
        if taken < len(groups) and groups[taken][0] == prefix:
            at += groups[taken][1]
            taken += 1
        if prefix in runs:
            return None
        runs[prefix] = (begin, at)
    if at != len(cached):
        return None
    walk = Walk([], array("q"), frozenset(), [])
    lister = _Lister(walk, None)
    root = str(folder.root)
    known = set(runs)
    old = memoryview(found.column)  # type: ignore[arg-type]  # an array or a memoryview
    listed: set[str] = set()  # the folders listed again, and those found gone
    dirs = walk.dirs
    assert dirs is not None
    for entry in recorded:
        prefix, signature = entry[0], entry[1:]
        directory = os.path.join(root, prefix[:-1]) if prefix else root
        parent = _prefix_of(prefix[:-1]) if prefix else None
        if parent in listed and prefix not in lister.met:
            # Its folder was listed again without it (removed, renamed, now a symlink):
            # not walked, as a full walk would not.
            listed.add(prefix)
            continue
        try:
            st = os.stat(directory)
        except OSError:
            listed.add(prefix)  # gone: its files (and folders) are not found, so removed
            continue
        if signature == (st.st_mtime_ns, st.st_ino, st.st_ctime_ns):
            begin, end = runs[prefix]
            walk.names.extend(cached[begin:end])
            walk.column.frombytes(old[4 * begin : 4 * end].tobytes())
            dirs.append(entry)
            continue
        # Changed: listed as a full walk lists it; a folder in it the cache did not
        # know is walked whole, one it knew is met in its own turn.
        listed.add(prefix)
        lister.walk([(directory, prefix)], known=known)
    return walk


def _prefix_of(relative: str) -> str:
    """The relative folder of a walked file, as the walk names it: "" or "a/b/"."""
    cut = relative.rfind("/")
    return relative[: cut + 1]


class _Lister:
    """`scan`'s work: folders listed one by one into a `Walk`."""

    def __init__(self, walk: Walk, pause: Callable[[], None] | None) -> None:
        self.out = walk
        self.pause = pause
        self.due = PAUSE_FILES if pause is not None else -1
        self.failed: list[int] = []
        self.met: set[str] = set()  # the folders of `known` met in a listing

    def walk(self, stack: list[tuple[str, str]], known: Collection[str] = ()) -> None:
        """List every folder of `stack` and the folders found in them (those in `known`
        excepted: the caller lists them in their turn)."""
        names, column, failed, pause = self.out.names, self.out.column, self.failed, self.pause
        status = os.stat
        by_name = os.stat in os.supports_dir_fd
        by_fd = os.scandir in os.supports_fd
        add_name, add_values = names.append, column.extend
        dirs = self.out.dirs
        assert dirs is not None
        while stack:
            directory, prefix = stack.pop()
            fd = None
            if by_name:
                try:
                    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
                except OSError:
                    fd = None
            try:
                # The folder's own stat before its listing: a change after it moves the
                # mtime past what is recorded, and the next walk lists the folder again.
                st = os.fstat(fd) if fd is not None else os.stat(directory)
                dirs.append((prefix, st.st_mtime_ns, st.st_ino, st.st_ctime_ns))
                # One entry at a time (a listing of 100,000 entries, each with its name and
                # path, would take some 25 MB at once), from the open folder when it can be.
                with os.scandir(fd if fd is not None and by_fd else directory) as listing:
                    in_root = not prefix
                    for entry in listing:
                        name = entry.name
                        try:
                            is_dir = entry.is_dir(follow_symlinks=False)
                        except OSError:
                            continue
                        if not is_walked(name, is_dir=is_dir, in_root=in_root):
                            continue
                        if is_dir:
                            inner = prefix + name + "/"
                            if inner in known:
                                self.met.add(inner)
                            else:
                                stack.append((os.path.join(directory, name), inner))
                            continue
                        add_name(prefix + name)  # "" + name is name itself: no new string
                        self.due -= 1
                        if not self.due and pause is not None:
                            pause()
                            self.due = PAUSE_FILES
                        try:
                            st = status(name, dir_fd=fd) if fd is not None else status(
                                os.path.join(directory, name))
                        except OSError:
                            failed.append(len(names) - 1)
                            add_values(_NO_SIGNATURE)
                            continue
                        try:
                            add_values((st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns))
                        except OverflowError:  # an inode of 2**63 or more, a date past 2262
                            del column[len(column) - len(column) % 4:]
                            add_values(map(_packed, (st.st_size, st.st_mtime_ns, st.st_ino,
                                                     st.st_ctime_ns)))
            except OSError:
                continue  # a folder that cannot be listed: its files are not seen
            finally:
                if fd is not None:
                    os.close(fd)
        self.out.failed = frozenset(failed) | self.out.failed


# How many files `scan` stats between two calls of its `pause` (about a millisecond's worth).
PAUSE_FILES = 256
_NO_SIGNATURE = (0, 0, 0, 0)  # a failed stat's place in the column (never a file's: inode 0)
_WRAP = 1 << 64


def _packed(value: int) -> int:
    """An integer as a signed 64-bit one: modulo 2**64 (signatures are only compared for
    equality, so the same value always packs the same way)."""
    value %= _WRAP
    return value - _WRAP if value >= 1 << 63 else value


def _column(values: list[int]) -> array:
    """Signatures' integers as an int64 array (`_packed` when one does not fit as it is)."""
    try:
        return array("q", values)
    except OverflowError:
        return array("q", map(_packed, values))


def _unpacked(values: Sequence[int]) -> Signature:
    size, mtime, inode, ctime = values
    return size, mtime, inode + _WRAP if inode < 0 else inode, ctime


class Walk(Mapping[str, "Signature | None"]):
    """What a stat walk found (`scan`): relative paths in walk order, signatures packed.

    A mapping of path -> signature (None: the stat failed) made when first
    asked for: comparing with a cache (`Loaded.compare`) needs none of it.
    """

    __slots__ = ("names", "column", "failed", "dirs", "_map")

    def __init__(self, names: list[str], column: array, failed: frozenset[int],
                 dirs: list[tuple[str, int, int, int]] | None = None) -> None:
        self.names = names
        self.column = column  # four int64 a path: size, mtime_ns, inode, ctime_ns
        self.failed = failed  # positions whose stat failed
        # The folders walked, in walk order: relative ("" or "a/b/"), mtime_ns, inode, ctime_ns.
        self.dirs = dirs
        self._map: dict[str, Signature | None] | None = None

    def since(self, before: Walk) -> Changes:
        """How the folder changed between an earlier walk, `before`, and this one.

        For a long-lived process's reconcile (`MemoryStore.reconcile`), compared
        as `Loaded.compare` compares a walk with a cache: the two lists of paths
        at once, the signatures a block at a time in C, and only between the
        first and the last path where the two orders differ by name. `differs`:
        this walk's paths that are new, whose signature changed or whose stat
        failed; `removed`: the paths of `before` this walk did not find.
        """
        names = self.names
        if names == before.names:
            differs = _differing(self.column, before.column, 0, 0, len(names))
            removed: list[str] = []
        else:
            differs, removed = _aligned(names, self.column, before.names, before.column)
        differs.update(self.failed)
        changed = frozenset(map(names.__getitem__, differs))
        return Changes(self, changed, removed, changed)

    def signature(self, position: int) -> Signature | None:
        if position in self.failed:
            return None
        return _unpacked(self.column[4 * position : 4 * position + 4])

    def _mapping(self) -> dict[str, Signature | None]:
        if self._map is None:
            self._map = dict(zip(self.names, map(self.signature, range(len(self.names))),
                                 strict=True))
        return self._map

    def __getitem__(self, name: str) -> Signature | None:
        return self._mapping()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._mapping()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __setitem__(self, name: str, signature: Signature | None) -> None:
        """Change the signature of a path the walk found (tests: a coarser clock)."""
        position = self.names.index(name)
        if signature is None:
            self.failed |= {position}
            values: Iterable[int] = _NO_SIGNATURE
        else:
            self.failed -= {position}
            values = map(_packed, signature)
        self.column[4 * position : 4 * position + 4] = array("q", values)
        self._map = None


# reading


_seek_lock = threading.Lock()


def _pread(fd: int, length: int, offset: int) -> bytes:
    """`length` bytes at `offset` (fewer at the end of the file), leaving no file position."""
    if hasattr(os, "pread"):
        return os.pread(fd, length, offset)
    with _seek_lock:  # no pread (Windows): seek and read, one reader at a time
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, length)


class _File:
    """The cache file, open for `pread`: what a reader asks for, checked or refused."""

    def __init__(self, fd: int, sections: dict[str, tuple[int, int]]) -> None:
        self.fd = fd
        self.sections = sections

    def own(self) -> None:
        """Close the file when this object goes (until then `load` closes it on failure)."""
        weakref.finalize(self, os.close, self.fd)

    def read(self, section: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of a section; CacheCorrupt when the file holds fewer."""
        offset, length = self.sections[section]
        if not 0 <= start <= end <= length:
            raise CacheCorrupt(f"index cache: {section} read out of bounds")
        try:
            data = _pread(self.fd, end - start, offset + start)
        except OSError as exc:
            raise CacheCorrupt(f"index cache: cannot read {section}: {exc}") from None
        if len(data) != end - start:
            raise CacheCorrupt(f"index cache: {section} is cut short")
        return data

    def checked(self, section: str, start: int, end: int) -> bytes:
        """A piece that begins with the CRC-32 of the rest, returned without it."""
        data = self.read(section, start, end)
        if len(data) < 4 or zlib.crc32(data[4:]) != int.from_bytes(data[:4], "little"):
            raise CacheCorrupt(f"index cache: a part of {section} is damaged")
        return data[4:]


_UNKNOWN: tuple[int, int, float, int] = (-1, -1, 0.0, 0)


def _checked_piece(data: bytes) -> bytes:
    return zlib.crc32(data).to_bytes(4, "little") + data


class _Backing:
    """The cache file as an `packed.Backing`: postings and memories read when asked for."""

    def __init__(self, file: _File, meta: dict, root: Path) -> None:
        self.file = file
        self.root = root
        self.lengths_column = memoryview(meta["lengths"]).cast("I")
        self.record_starts = memoryview(meta["record_starts"]).cast("Q")
        self.fences = memoryview(meta["term_fences"]).cast("I")
        self.block_starts = memoryview(meta["term_block_starts"]).cast("Q")
        self.verified: set[int] = set()  # postings (by start) whose CRC-32 matched
        self.found: dict[str, tuple[int, int, float, int] | None] = {}  # terms looked up
        # Postings read lately, kept for the next query (up to KEPT_BYTES, then dropped).
        self.kept: dict[str, tuple[memoryview, memoryview[float], float]] = {}
        self.kept_bytes = 0
        self.counted: dict[str, int] = {}  # estimated counts looked up lately
        # The counts section a page at a time: the first CRC-32 of each page, each page's
        # own CRC-32, the pages read so far (their CRC-32s and counts).
        self.count_fences = memoryview(meta["counts_fences"]).cast("I")
        self.count_checks = memoryview(meta["counts_pages"]).cast("I")
        self.count_pages: dict[int, tuple[memoryview, memoryview]] = {}
        self.count_page_terms: int = meta["counts_page"]  # terms a page, as written
        if self.count_page_terms < 1:
            raise ValueError("index cache: no terms a page of counts")
        flags, mark = meta.get("secrets"), meta.get("secrets_mark")
        self.secrets: tuple[int, bytes] | None = (
            (mark, flags) if isinstance(mark, int) and isinstance(flags, bytes)
            and len(flags) == len(self.record_starts) - 1 else None
        )

    def _block(self, number: int) -> list[tuple[int, str, int, int, float, int]]:
        data = self.file.checked(
            "terms", self.block_starts[number], self.block_starts[number + 1]
        )
        try:
            return marshal.loads(data)
        except (EOFError, ValueError, TypeError) as exc:
            raise CacheCorrupt(f"index cache: term block unreadable: {exc}") from None

    def _find(self, term: str) -> tuple[int, int, float, int] | None:
        """Where `term`'s postings are (start, end, largest weight, CRC-32), or None."""
        crc = zlib.crc32(term.encode("utf-8", "surrogatepass"))
        fences = self.fences
        # Terms with the same CRC may begin in the block before the first fence equal to it.
        block = max(0, bisect_left(fences, crc) - 1)
        while block < len(fences) and fences[block] <= crc:
            for entry_crc, text, start, end, top, postings_crc in self._block(block):
                if entry_crc == crc and text == term:
                    return start, end, top, postings_crc
                if entry_crc > crc:
                    return None
            block += 1
        return None

    def _postings(
        self, start: int, end: int, crc: int
    ) -> tuple[memoryview, memoryview[float]]:
        slots = self.file.read("slots", start * 4, end * 4)
        weights = self.file.read("weights", start * 4, end * 4)
        if start not in self.verified:
            if zlib.crc32(weights, zlib.crc32(slots)) != crc:
                raise CacheCorrupt("index cache: postings are damaged")
            self.verified.add(start)
        return memoryview(slots).cast("i"), memoryview(weights).cast("f")

    def count(self, term: str) -> int:
        kept = self.kept.get(term)
        if kept is not None:
            return len(kept[0])
        found = self._located(term)
        return 0 if found is None else found[1] - found[0]

    def estimated_counts(self, terms: list[str]) -> list[int]:
        """How many memories each term's postings hold, from the counts section.

        Exact for every term the cache holds (one with a CRC-32 shared by
        another term of the cache is looked up in the term table); 0 for a
        term it does not hold, unless another term has the same CRC-32: then
        that term's count. `Index._rarest` checks with `count` each term it
        keeps, so such a term never takes another's place.
        """
        counted = self.counted
        missing = list(filterfalse(counted.__contains__, terms))
        if not missing:
            return list(map(counted.__getitem__, terms))
        wanted = [zlib.crc32(term.encode("utf-8", "surrogatepass")) for term in missing]
        found = []
        for term, crc in zip(missing, wanted, strict=True):
            place = self._first_at_least(crc)
            if place is None or self._count_entry(place)[0] != crc:
                found.append(0)
            elif self._count_entry(place + 1)[0] == crc:
                found.append(self.count(term))  # two terms of the cache share this CRC-32
            else:
                found.append(self._count_entry(place)[1])
        new = dict(zip(missing, found, strict=True))
        out: list[int] = list(map(new.get, terms, map(counted.get, terms)))  # type: ignore[arg-type]
        if len(counted) + len(new) > COUNTED_TERMS:
            counted.clear()
        counted.update(new)
        return out

    def _first_at_least(self, crc: int) -> int | None:
        """Where the first CRC-32 not below `crc` is in the counts section (None: past the end).

        Every CRC-32 of the pages before the one found is below the first of
        that page, which is below `crc`; only that page is read."""
        page = bisect_left(self.count_fences, crc) - 1
        if page < 0:
            return 0 if len(self.count_fences) else None
        crcs, _ = self._count_page(page)
        place = page * self.count_page_terms + bisect_left(crcs, crc)
        return place if place < self._counted_terms() else None

    def _counted_terms(self) -> int:
        return self.file.sections["counts"][1] // 8

    def _count_entry(self, place: int) -> tuple[int, int]:
        """(CRC-32, count) of the term at `place` in the counts section; (-1, 0) past its end."""
        if place >= self._counted_terms():
            return -1, 0
        crcs, sizes = self._count_page(place // self.count_page_terms)
        return crcs[place % self.count_page_terms], sizes[place % self.count_page_terms]

    def _count_page(self, page: int) -> tuple[memoryview, memoryview]:
        known = self.count_pages.get(page)
        if known is not None:
            return known
        total = self._counted_terms()
        if not 0 <= page < len(self.count_checks) or self.file.sections["counts"][1] % 8:
            raise CacheCorrupt("index cache: the counts are damaged")
        first, last = page * self.count_page_terms, min((page + 1) * self.count_page_terms, total)
        crcs = self.file.read("counts", first * 4, last * 4)
        sizes = self.file.read("counts", (total + first) * 4, (total + last) * 4)
        if zlib.crc32(sizes, zlib.crc32(crcs)) != self.count_checks[page]:
            raise CacheCorrupt("index cache: the counts are damaged")
        known = self.count_pages[page] = memoryview(crcs).cast("I"), memoryview(sizes).cast("I")
        return known

    def _located(self, term: str) -> tuple[int, int, float, int] | None:
        found = self.found.get(term, _UNKNOWN)
        if found is _UNKNOWN:
            if len(self.found) >= FOUND_TERMS:
                self.found.clear()
            found = self.found[term] = self._find(term)
        return found

    def postings(self, term: str) -> tuple[memoryview, memoryview[float], float] | None:
        kept = self.kept.get(term)
        if kept is not None:
            return kept
        found = self._located(term)
        if found is None:
            return None
        start, end, top, crc = found
        postings = (*self._postings(start, end, crc), top)
        size = (end - start) * 8
        if self.kept_bytes + size > KEPT_BYTES:
            self.kept.clear()
            self.kept_bytes = 0
        if size <= KEPT_BYTES // 4:
            self.kept[term] = postings
            self.kept_bytes += size
        return postings

    def terms(self) -> Iterator[tuple[str, memoryview, memoryview[float], float]]:
        for block in range(len(self.fences)):
            for _, text, start, end, top, crc in self._block(block):
                yield (text, *self._postings(start, end, crc), top)

    def record(self, number: int) -> bytes:
        """A memory's record (marshal), checked."""
        begin, end = self.record_starts[number], self.record_starts[number + 1]
        return self.file.checked("records", begin, end)

    def memory(self, number: int) -> Memory:
        try:
            values = marshal.loads(self.record(number))
        except (EOFError, ValueError, TypeError) as exc:
            raise CacheCorrupt(f"index cache: record {number} unreadable: {exc}") from None
        data = dict(zip(_MEMORY_FIELDS, values, strict=True))
        path = data["path"]
        data["path"] = self.root / path if not os.path.isabs(path) else Path(path)
        data["problems"] = tuple(
            ValueProblem(*problem) if isinstance(problem, tuple) else problem
            for problem in data["problems"]
        )
        return Memory(**data)

    def listing(self, number: int) -> Listing:
        from ..memory.catalog import Listing

        try:
            values = marshal.loads(self.record(number))
            (memory_id, name, description, summary, category, baseline, priority, archived,
             problems) = _LISTED(values)
        except (EOFError, ValueError, TypeError, IndexError) as exc:
            raise CacheCorrupt(f"index cache: record {number} unreadable: {exc}") from None
        codes = (problem[1] if isinstance(problem, tuple) else None for problem in problems)
        return Listing(memory_id, name, display_text(description, summary, codes), category,
                       baseline, priority, archived)

    def lengths(self, number: int) -> tuple[int, ...]:
        width = len(FIELDS)
        return tuple(self.lengths_column[number * width : (number + 1) * width])


def load(
    folder: MemoryFolder,
    *,
    scoring: Scoring,
    half_life_days: float | None = None,
    recover: Callable[[], Iterable[Memory]] | None = None,
) -> Loaded | None:
    """The cached index of `folder`, or None when there is no usable cache (never raises)."""
    try:
        fd = os.open(cache_path(folder), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        loaded = _parse(fd, folder, scoring, half_life_days, recover)
    except (CacheCorrupt, OSError, EOFError, ValueError, TypeError, KeyError, IndexError,
            OverflowError, MemoryError):
        loaded = None
    if loaded is None:
        os.close(fd)
    return loaded


def _parse(
    fd: int, folder: MemoryFolder, scoring: Scoring, half_life_days: float | None,
    recover: Callable[[], Iterable[Memory]] | None,
) -> Loaded | None:
    size = os.fstat(fd).st_size
    start = _pread(fd, 16, 0)
    if len(start) < 16 or start[:8] != MAGIC:
        return None
    header_length = int.from_bytes(start[8:16], "little")
    if header_length <= 4 or 16 + header_length > size:
        return None
    header_bytes = _pread(fd, header_length, 16)
    if zlib.crc32(header_bytes[4:]) != int.from_bytes(header_bytes[:4], "little"):
        return None
    header = marshal.loads(header_bytes[4:])
    if header.get("version") != FORMAT_VERSION or header.get("fingerprint") != fingerprint(
        scoring, header.get("sample")
    ):
        return None
    if header.get("root") != str(folder.root) or header.get("size") != size:
        return None
    places = {name: (offset, length) for name, (offset, length) in header["sections"].items()}
    if any(offset + length > size for offset, length in places.values()):
        return None
    file = _File(fd, places)
    meta_length = places["meta"][1]
    meta_bytes = file.read("meta", 0, meta_length)
    if zlib.crc32(meta_bytes) != header["meta_crc"]:
        return None
    with gc_paused():  # tens of thousands of new containers, none of them garbage
        meta = marshal.loads(meta_bytes)
    del meta_bytes
    for name, crc in meta["column_crcs"].items():
        data = file.read(name, 0, places[name][1])
        if zlib.crc32(data) != crc:
            return None
        meta[name] = data
    backing = _Backing(file, meta, folder.root)
    # The ids as read: decoded only for a hit, found by bisection (no list of every id).
    if len(meta["id_starts"]) % 4 or len(meta["id_order"]) % 4:
        return None
    id_starts = memoryview(meta["id_starts"]).cast("I")
    id_order = memoryview(meta["id_order"]).cast("I")
    count = len(id_order)
    if len(id_starts) != count + 1 or id_starts[-1] != len(meta["ids"]):
        return None
    ids = PackedIds(meta["ids"], id_starts, id_order)
    if len(backing.lengths_column) != count * len(FIELDS):
        return None
    if len(backing.record_starts) != count + 1:
        return None
    if len(backing.block_starts) != len(backing.fences) + 1:
        return None
    paths, column = meta["paths"], memoryview(meta["signatures"]).cast("q")
    if len(column) != 4 * (paths.count(b"\0") + 1 if paths else 0):
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
    index = Index.from_backing(
        columns, backing, half_life_days=half_life_days, scoring=scoring, recover=recover
    )
    file.own()
    folders = meta.get("folders")
    return Loaded(index, paths, column, meta["problems"], frozenset(meta["racy"]),
                  [tuple(each) for each in folders] if folders is not None else None)


# writing


def save(
    folder: MemoryFolder,
    index: Index,
    entries: dict[str, Entry],
    *,
    started_ns: int,
    walk: Walk | None = None,
    secrets: Secrets | None = None,
) -> bool:
    """Write the cache of `folder` (atomically); False when the state folder cannot take it.

    `secrets`: the mark of the credential rules and the judge of a memory (`Secrets`),
    whose verdicts the file keeps; without it, none."""
    path = cache_path(folder)
    try:
        make_private_dirs(path.parent)
        _remove_stale_temps(path.parent)
        with gc_paused(), _spill(path.parent) as spill:
            export = index.export()
            records = _spill_records(export, folder.root, spill)
            flags = _export_flags(export, secrets) if secrets is not None else None
            terms, found, weighed, tops = export.postings
            # Every postings column is an array or a memoryview (Index.export, Backing.terms):
            # buffers, as crc32 and the file's writes need.
            numbers = cast("list[array | memoryview]", found)
            weights = cast("list[array | memoryview]", weighed)
            body = _Body(
                export.columns, array("I", export.lengths), terms, list(map(len, numbers)),
                lambda term: (numbers[term], weights[term]), tops.__getitem__,
            )
            _write(path, _header(index.scoring, folder, started_ns), body, spill, records,
                   entries, started_ns, walk, _secrets_meta(secrets, flags))
    except OSError:
        return False
    return True


def build(
    folder: MemoryFolder,
    memories: Iterable[Memory],
    entries: Callable[[], dict[str, Entry]],
    *,
    scoring: Scoring,
    started_ns: int,
    walk: Walk | None = None,
    secrets: Secrets | None = None,
    settle: bool = False,
) -> int | None:
    """Write the cache of `folder` straight from its memories, with no `Index` in between.

    `memories` come in id order, each id once (they are numbered so); each is
    counted (`building.Builder`) and its record written to a spill file as it
    comes, so the caller holds none of them. `entries` is asked once every
    memory was read. The file is byte for byte what `save` of an index built
    from the same memories writes (with the same `secrets`), but for the files
    within the racy window as the build began (a folder just checked out):
    `settled` may find them all unchanged once the window has passed (`settle`:
    sleeping out what is left of it first), and then none is listed racy.
    Returns how many memories it holds, or None when the state folder cannot
    take it.
    """
    from .dense_build import builder_for  # not on the hook's path: a hook never builds

    path = cache_path(folder)
    try:
        make_private_dirs(path.parent)
        _remove_stale_temps(path.parent)
        with gc_paused(), _spill(path.parent) as spill, _spill(path.parent) as counts:
            builder = builder_for(scoring, spill=counts, block=TERM_BLOCK)  # numpy's if there
            prefix = str(folder.root) + os.sep
            records = array("Q")
            flags = bytearray() if secrets is not None else None
            digests: dict[str, str] = {}  # what was read of each file (`settled`)
            for memory in memories:
                builder.add(memory)
                where = str(memory.path)
                digests[where[len(prefix):] if where.startswith(prefix) else where] = (
                    memory.sha256)
                piece = _record_piece(memory, prefix)
                spill.write(piece)
                records.append(len(piece))
                if flags is not None and secrets is not None:
                    flags.append(secrets[1](memory))
            packed = builder.finish()
            body = _Body(
                packed.columns, packed.lengths, packed.terms, packed.counts, _no_postings,
                _no_top, _Ranked(packed.order, packed.sorted_crcs, packed.starts,
                                 iter(packed.rounds)),
            )
            seen = entries()
            header = _header(scoring, folder, started_ns)
            walk, racy_from = settled(folder, walk, digests, started_ns, wait=settle)
            # `builder` is still alive here, its rows too: see `_write`.
            _write(path, header, body, spill, records, seen, racy_from, walk,
                   _secrets_meta(secrets, flags))
            del builder
            return len(records)
    except OSError:
        return None


def settled(folder: MemoryFolder, walk: Walk | None, digests: Mapping[str, str],
            started_ns: int, *, wait: bool = False) -> tuple[Walk | None, int]:
    """The walk a build's cache records and the moment its racy window is counted from.

    A file changed within RACY_NS of the moment the build began is listed racy and read
    again by the next process: after a checkout of the whole folder (a join), every file,
    which is a cold build again. So, once the window has passed since the newest file
    (`wait`: sleeping out what is left of it, at most RACY_NS; else only when it passed
    while the build ran), the folder is walked again: when that walk finds every path
    with the signature the build's walk saw, and each file that was within the window
    holds the bytes the build indexed (their SHA-256, `digests` by relative path), what
    was indexed is what the folder holds, and a later change moves a signature (its
    timestamps past the window): the second walk and its moment are returned, and no file
    is racy. Otherwise (a file changed, one not read, no walk) `walk` and `started_ns`, as
    before: those files are read again by the next process.
    """
    if walk is None or walk.failed or not walk.names:
        return walk, started_ns
    window = started_ns - RACY_NS
    column = walk.column
    newest = max(max(column[1::4]), max(column[3::4]))
    if newest < window:
        return walk, started_ns  # nothing within the window: nothing to settle
    left = newest + RACY_NS - time.time_ns()
    if left > 0:
        if not wait:
            return walk, started_ns
        time.sleep(min(left, RACY_NS) / 1e9)
    now = time.time_ns()
    if newest >= now - RACY_NS:
        return walk, started_ns
    again = scan(folder)
    if again.failed or again.names != walk.names or again.column != column:
        return walk, started_ns
    from ..disk.folder import read_memory
    from ..errors import SageMemError

    root = folder.root
    for at, name in enumerate(walk.names):
        if column[4 * at + 1] < window:
            continue
        digest = digests.get(name)
        try:
            held = (read_memory(folder, root / name).raw or b"") if digest is not None else None
        except (OSError, SageMemError):
            held = None
        if held is None or sha256(held).hexdigest() != digest:
            return walk, started_ns
    return again, now


class _Ranked(NamedTuple):
    """A build's postings as the file holds them: the terms in CRC-32 order (`order`,
    `sorted_crcs`), the `r`-th holding the postings from `starts[r]`, a range of terms
    at a time (`rounds`, read once, in order: `Packed`)."""

    order: array
    sorted_crcs: array
    starts: array
    rounds: Iterator[Round]


class _Body(NamedTuple):
    """What a cache file holds besides its records: from an `Export` or a `Packed` build.

    An export's postings come by term number (`postings`, `top`); a build's
    already in the file's order (`ranked`).
    """

    columns: Columns
    lengths: array
    terms: Sequence[str]  # a build's: `TermTexts`
    sizes: Sequence[int]
    postings: Callable[[int], tuple[memoryview | array, memoryview | array]]
    top: Callable[[int], float]
    ranked: _Ranked | None = None


def _no_postings(term: int) -> tuple[memoryview, memoryview]:
    raise AssertionError("a build's postings are read in the file's order")


def _no_top(term: int) -> float:
    raise AssertionError("a build's largest weights are read from its postings")


@contextmanager
def _spill(folder: Path) -> Iterator[BinaryIO]:
    """A nameless temporary file beside the cache: records and term blocks, until the meta
    (which comes first in the file and says where they start) is known."""
    import tempfile  # not on the hook's path

    with tempfile.TemporaryFile(dir=folder) as spill:
        yield spill


def _secrets_meta(secrets: Secrets | None, flags: bytearray | None) -> dict:
    """The meta's entries for the secret flags: the rules' mark, a byte a memory."""
    if secrets is None or flags is None:
        return {}
    return {"secrets_mark": secrets[0], "secrets": bytes(flags)}


def _export_flags(export: Export, secrets: Secrets) -> bytearray:
    """The secret flag of each memory an export writes, in its order: a record copied from
    a cache judged by the same rules keeps its flag, any other memory is judged."""
    mark, judge = secrets
    base = export.base
    known = base.secrets if base is not None else None
    base_flags = known[1] if known is not None and known[0] == mark else None
    flags = bytearray()
    for number in export.numbers:
        if base_flags is not None and number < export.base_count:
            flags.append(base_flags[number])
        else:
            flags.append(judge(export.memory(number)))
    return flags


def _record_piece(memory: Memory, prefix: str) -> bytes:
    values = [getattr(memory, name) for name in _MEMORY_FIELDS]
    where = str(memory.path)
    values[_MEMORY_FIELDS.index("path")] = (
        where[len(prefix) :] if where.startswith(prefix) else where
    )
    values[_PROBLEMS] = tuple(  # marshal takes no str subclass: a coded problem as a tuple
        (str(p), p.code, p.key) if isinstance(p, ValueProblem) else p
        for p in memory.problems
    )
    return _checked_piece(marshal.dumps(tuple(values)))


def _spill_records(export: Export, root: Path, spill: BinaryIO) -> array:
    """Each memory's record, written to `spill`; their lengths."""
    base = export.base if isinstance(export.base, _Backing) else None
    prefix = str(root) + os.sep
    lengths = array("Q")
    for number in export.numbers:
        if base is not None and number < export.base_count:
            # As stored (the same root): no memory to make and marshal again.
            piece = _checked_piece(base.record(number))
        else:
            piece = _record_piece(export.memory(number), prefix)
        spill.write(piece)
        lengths.append(len(piece))
    return lengths


def _header(scoring: Scoring, folder: MemoryFolder, started_ns: int) -> dict:
    return {
        "version": FORMAT_VERSION,
        "fingerprint": fingerprint(scoring),
        "sample": (_CODE, sample_terms()),
        "root": str(folder.root),
        "started_ns": started_ns,
        "written_ns": time.time_ns(),
    }


def _write(
    path: Path, header: dict, body: _Body, spill: BinaryIO, records: array,
    entries: dict[str, Entry], started_ns: int, walk: Walk | None = None,
    extra: dict | None = None,
) -> None:
    """Write the cache file (`_write_sections`); a build's postings, placed a range of terms
    at a time, wait in two more spill files until their sections are written. `extra`:
    more entries of the meta."""
    if body.ranked is None:
        _write_sections(path, header, body, spill, records, entries, started_ns, walk, None,
                        extra)
        return
    with _spill(path.parent) as slots, _spill(path.parent) as weights:
        _write_sections(path, header, body, spill, records, entries, started_ns, walk,
                        (slots, weights), extra)


def _write_sections(
    path: Path, header: dict, body: _Body, spill: BinaryIO, records: array,
    entries: dict[str, Entry], started_ns: int, walk: Walk | None,
    placed_postings: tuple[BinaryIO, BinaryIO] | None, extra: dict | None = None,
) -> None:
    """Write the cache file, section by section, to a temp file renamed over `path`.

    Nothing is built whole in memory: the term blocks go to `spill` after the
    records, a block at a time, and each section is then copied or written in
    place. The bytes are the same as when each section was one bytes object,
    to the marshal flags: marshal marks an object held more than once
    (FLAG_REF), so every object a block or the meta holds is kept referenced
    elsewhere too, as it was (the index, the export, `Builder`'s rows).
    """
    terms, sizes, postings, top = body.terms, body.sizes, body.postings, body.top
    ranked = body.ranked
    if ranked is None:
        crcs = term_crcs(terms)
        order = crc_order(crcs)
        sorted_crcs = array("I", map(crcs.__getitem__, order))
        del crcs

        def at_rank(rank: int) -> tuple[memoryview | array, memoryview | array]:
            return postings(order[rank])
    else:
        order, sorted_crcs = ranked.order, ranked.sorted_crcs
        bounds = ranked.starts
        rounds = ranked.rounds
        assert placed_postings is not None
        # The round that holds the terms now written: its range, where its postings start,
        # and them; each round's postings are copied to `placed_postings` when it comes.
        held: list = [0, 0, 0, memoryview(b""), memoryview(b"")]

    def block_at(first: int, size: int) -> list[tuple[memoryview | array, memoryview | array]]:
        """The postings of the terms ranked `first` to `first + size - 1`: a block's."""
        if ranked is None:
            return list(map(at_rank, range(first, first + size)))
        # A round is whole term blocks (`Builder`): the last block read all of its own.
        while first >= held[1]:
            held[3:] = [memoryview(b""), memoryview(b"")]
            low, high, slots, weights = next(rounds)
            assert low == held[1], "rounds come in order"
            assert placed_postings is not None
            placed_postings[0].write(slots)
            placed_postings[1].write(weights)
            held[:] = [low, high, bounds[low], memoryview(slots), memoryview(weights)]
            del slots, weights
        base, slots_held, weights_held = held[2], held[3], held[4]
        # The block's slices in one comprehension: no call a term.
        ends = [end - base for end in bounds[first : first + size + 1]]
        return [(slots_held[begin:end], weights_held[begin:end])
                for begin, end in zip(ends, ends[1:], strict=False)]
    records_length = spill.tell()
    fences = array("I")
    blocks = array("Q")
    start = 0
    total = 0
    for first in range(0, len(order), TERM_BLOCK):
        chosen = order[first : first + TERM_BLOCK]
        texts = (terms.block(chosen) if isinstance(terms, TermTexts)
                 else list(map(terms.__getitem__, chosen)))
        block_crcs = list(sorted_crcs[first : first + TERM_BLOCK])
        parts = block_at(first, len(chosen))
        starts = list(accumulate(map(len, map(itemgetter(0), parts)), initial=start))
        if ranked is None:
            tops = list(map(top, chosen))
        else:
            tops = list(map(max, map(itemgetter(1), parts)))
        postings_crcs = [zlib.crc32(w, zlib.crc32(n)) for n, w in parts]
        table = list(zip(block_crcs, texts, starts, starts[1:], tops, postings_crcs,
                         strict=False))
        piece = _checked_piece(marshal.dumps(table[:]))
        spill.write(piece)
        blocks.append(len(piece))
        fences.append(block_crcs[0])
        start = starts[-1]
        total = start
    if ranked is not None:
        # The last round's arrays and the build's placing ones (a suspended generator's),
        # freed before the rest of the file is made.
        held.clear()
        close = getattr(rounds, "close", None)
        if close is not None:
            close()
    # Made once the postings are written (a build's last round is freed by then), in one
    # array whose second half is then overwritten with the sizes, a slice at a time: an
    # array grown item by item left its old copies in the heap (the step took 53 MB of RSS
    # at 100,000 memories).
    counts = sorted_crcs + sorted_crcs
    for first in range(0, len(order), COUNTS_PAGE):
        chosen = order[first : first + COUNTS_PAGE]
        at = len(order) + first
        counts[at : at + len(chosen)] = array("I", map(sizes.__getitem__, chosen))
    columns = body.columns
    pages = range(0, len(sorted_crcs), COUNTS_PAGE)
    sizes_sorted = memoryview(counts)[len(sorted_crcs) :]
    meta = {
        "counts_page": COUNTS_PAGE,
        "counts_fences": array("I", [sorted_crcs[first] for first in pages]).tobytes(),
        "counts_pages": array("I", [
            zlib.crc32(sizes_sorted[first : first + COUNTS_PAGE],
                       zlib.crc32(sorted_crcs[first : first + COUNTS_PAGE]))
            for first in pages
        ]).tobytes(),
        "term_fences": fences.tobytes(),
        "term_block_starts": array("Q", accumulate(blocks, initial=0)).tobytes(),
        "averages": [columns.averages[name] for name in FIELDS],
        "length_sums": [columns.length_sums[name] for name in FIELDS],
        # Equal values as one object, which marshal then writes once and a reader makes
        # once: a few distinct categories and dates instead of one object a memory.
        "trusts": columns.trusts,
        "updated": _shared(columns.updated),
        "archived": columns.archived,
        "categories": _shared(columns.categories),
        "projects": _shared(columns.projects),
        "max_boost": columns.max_boost,
        "racy": [
            relative for relative, entry in entries.items()
            if entry.signature[1] >= started_ns - RACY_NS
        ],
        "problems": {
            relative: entry.problem for relative, entry in entries.items() if entry.problem
        },
    }
    folders = _folders(walk, entries, started_ns)
    if folders is not None:  # absent: every reader walks every file (`scan_changed`)
        meta["folders"] = folders
    meta.update(extra or {})
    del sorted_crcs, sizes_sorted
    # Columns of the meta kept out of its marshal, each a section of its own read as it is
    # (no copy made by unmarshalling): the paths in the order of the walk they come from
    # (`Loaded.compare`), joined by NUL, their signatures packed.
    id_blob, id_starts, id_order = packed_ids(columns.ids)
    columns_out = {
        "ids": id_blob,
        "id_starts": id_starts.tobytes(),
        "id_order": id_order.tobytes(),
        "lengths": body.lengths.tobytes(),
        "record_starts": array("Q", accumulate(records, initial=0)).tobytes(),
        "paths": "\0".join(entries).encode("utf-8", "surrogatepass"),
        "signatures": _column(
            [value for entry in entries.values() for value in entry.signature]
        ).tobytes(),
    }
    meta["column_crcs"] = {name: zlib.crc32(data) for name, data in columns_out.items()}
    meta_bytes = marshal.dumps(meta)
    del meta
    lengths = {
        "meta": len(meta_bytes),
        **{name: len(data) for name, data in columns_out.items()},
        "records": records_length,
        "terms": spill.tell() - records_length,
        "slots": total * 4,
        "weights": total * 4,
        "counts": len(counts) * 4,
    }
    del records_length  # each length held by the header alone, as marshal then flags it
    placed: dict[str, tuple[int, int]] = {}
    # The header's size depends on the offsets it holds: place the sections after a
    # generous allowance, then fill the gap.
    allowance = 4096
    offset = 16 + allowance
    for name in tuple(lengths):
        offset = (offset + 7) & ~7
        placed[name] = (offset, lengths.pop(name))
        offset += placed[name][1]
    header = dict(header, meta_crc=zlib.crc32(meta_bytes), sections=placed, size=offset)
    header_body = marshal.dumps(header)
    header_bytes = zlib.crc32(header_body).to_bytes(4, "little") + header_body
    if len(header_bytes) > allowance:
        raise OSError("index cache: header larger than its allowance")
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            handle.write(MAGIC + len(header_bytes).to_bytes(8, "little") + header_bytes)
            handle.seek(placed["meta"][0])
            handle.write(meta_bytes)
            del meta_bytes
            for name, data in columns_out.items():
                handle.seek(placed[name][0])
                handle.write(data)
            del columns_out
            spill.seek(0)
            for name in ("records", "terms"):
                handle.seek(placed[name][0])
                _copy(spill, handle, placed[name][1])
            for side in (0, 1):
                handle.seek(placed[("slots", "weights")[side]][0])
                if placed_postings is not None:  # in the file's order, round after round
                    placed_postings[side].seek(0)
                    _copy(placed_postings[side], handle, total * 4)
                    continue
                for term in order:
                    handle.write(postings(term)[side])
            handle.seek(placed["counts"][0])
            handle.write(counts)
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


def _folders(
    walk: Walk | None, entries: dict[str, Entry], started_ns: int
) -> list[tuple[str, int, int, int]] | None:
    """The folders `walk` listed, for `scan_changed`: only when the cache holds every file
    of the walk (then a folder's files are one run of its paths), and a folder within the
    racy window recorded as never matching (a file added in the same tick would not show)."""
    if walk is None or walk.dirs is None or walk.failed or len(entries) != len(walk):
        return None
    if any(a != b for a, b in zip(entries, walk.names, strict=True)):
        return None
    racy = started_ns - RACY_NS
    return [(prefix, 0, 0, 0) if mtime >= racy or ctime >= racy else (prefix, mtime, inode, ctime)
            for prefix, mtime, inode, ctime in walk.dirs]


def _shared(values: list) -> list:
    """`values` with each run of equal values made one object (`marshal` refers back to it)."""
    first: dict = {}
    return list(map(first.setdefault, values, values))


def _copy(source: BinaryIO, target: BinaryIO, length: int) -> None:
    """`length` bytes from where `source` is to where `target` is."""
    while length > 0:
        data = source.read(min(length, 1 << 20))
        if not data:
            raise OSError("index cache: the spill file is cut short")
        target.write(data)
        length -= len(data)


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
    "CacheCorrupt", "Entry", "FORMAT_VERSION", "Loaded", "SCORING_VERSION", "cache_path",
    "fingerprint",
    "load", "save", "scan",
]
