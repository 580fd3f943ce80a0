"""The link graph kept in the state folder between launches (`ui/links-graph.bin`), so that a
new `sage-mem ui` process finds its graph made instead of resolving every body's links again
(about a second of CPU at 20,000 memories, seconds on a loaded machine).

What it holds is never trusted as it stands: it keeps the ids and versions (sha256) of the
live memories it was made over, and the archived ids. A launch compares that with the store's
listing, and the graph is brought up to date as after any change (`links.updated_graph`): the
links of every memory whose version differs, came or went are resolved again, and of every
memory naming the file name of one that came or went (no other link can resolve differently);
made whole again when many changed. A memory edited while the page was closed therefore never
shows a stale link or backlink.

The graph is kept in buckets by id (a memory's links, supersedes and backlinks all in the
bucket of its id), each behind its own CRC-32, after a small head that says where each is.
So a memory's page opened as the launch begins reads the head, the ids and versions, and one
bucket (`Saved.lookup`: some 25 ms of CPU at 50,000 memories, most of it the listing's ids
and versions to compare, made once a listing), instead of waiting for the
whole graph (some 0.15 s of CPU there, most of it one `marshal.loads` that holds the
interpreter); the launch's whole read goes a bucket at a time and waits between them while a
request is answered (`pause`). When memories changed while the page was closed, the page's
lookup corrects that memory's entries for them (`links.one_memory_updated`).

A file that is short, garbled, of another format or written by another version of sage-mem
(whose rules may resolve a link differently) is ignored: the graph is made from the memories,
and saved again. Only the state folder is ever written, never the memory folder.
"""

from __future__ import annotations

import functools
import marshal
import os
import stat
import threading
import unicodedata
import zlib
from collections.abc import Callable, Iterable
from operator import attrgetter
from pathlib import Path
from typing import Any

from .links import (
    Graph,
    LaterResolver,
    Link,
    Resolver,
    one_memory_updated,
    resolved_again,
    updated_graph,
)
from .listing import Difference, Listing, many

GRAPH_FILE = ("ui", "links-graph.bin")  # in the state folder, never the memory folder
MAGIC = b"SMLGRAPH"
# 2: the naming tables apart, after the rest (read later); 3: in buckets by id, behind a head
FORMAT_VERSION = 3
LARGEST = 512 * 1024 * 1024
BUCKET_SIZE = 32  # memories a bucket, about: one bucket is what a memory's page reads
PAUSE_EVERY_BUCKETS = 16  # the launch's whole read asks `pause` this often
SHA_LENGTH = 64  # a version: the hex sha256 of a memory's file
_HEAD = len(MAGIC) + 12  # the magic, the format, the head's length and its CRC-32


# Links that each rule of resolution reads, over a few ids: what they resolve to is part of the
# file's fingerprint, so that a change of those rules (with no new version number) makes every
# saved graph be made again rather than trusted.
_SAMPLE_IDS = ("user_a", "project_b", "notes/c", "notes", "reference_笔记", "项目", "café",
               "deep/x/y", "other/y")
_SAMPLE_BODY = ("[[project_b]] [[c]] [x](project_b.md#top) [[user_a]] [[notes/c]] [y](<notes/c.md>)"
                " `[[user_a]]` [[.]] [[..]] [[./c]] [[../user_a]] [z](../project_b.md) [[项目]]"
                " [w](%E9%A1%B9%E7%9B%AE.md) [[gone]] [[old]] [[cafe\u0301]] [v](caf%C3%A9.md)"
                " [[../../user_a]] [[../x/y]] [[y]] [q](../../notes/c.md) ![i](user_a.md)\n"
                "```\n[[user_a]]\n```\n[[archive/old]] [o](old.md) [[Notes/C]] [[c.md]]")


@functools.cache
def _version() -> str:
    from .. import __version__
    from ..memory.value import Memory

    resolver = Resolver(_SAMPLE_IDS, ("old",))
    said = [[link.to_dict() for link in resolver.links_of(
        Memory(id=memory_id, path=Path(memory_id + ".md"), description="", body=_SAMPLE_BODY))]
        for memory_id in ("deep/x/y", "notes/c", "user_a")]
    return f"{__version__} {zlib.crc32(repr(said).encode('utf-8')):08x}"


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # (an id from a file name not in UTF-8)


def bucket_of(memory_id: str, buckets: int) -> int:
    """The bucket a memory's entries are kept in (the same in every process)."""
    return zlib.crc32(_utf8(memory_id)) % buckets


def made_over(ids: list[str], shas: str, archived: Iterable[str]) -> bytes:
    """What a graph was made over, as bytes compared whole: the live ids (sorted), their
    versions in that order (end to end), and the archived ids, between NULs (no id holds
    one)."""
    return _utf8("\0".join([str(len(ids)), *ids, shas, *sorted(archived)]))


def _end_to_end(count: int, shas: Iterable[str]) -> str | None:
    """`count` versions end to end; None when one is not known (never trusted then)."""
    joined = "".join(shas)
    return joined if len(joined) == SHA_LENGTH * count and joined.isascii() else None


def listing_made_over(listing: Listing) -> bytes | None:
    """`made_over` of a listing's memories (a few milliseconds at 50,000, in C loops); None
    when a memory's version is not known."""
    ids = sorted(listing.live)
    shas = _end_to_end(len(ids), map(_SHA, map(listing.live.__getitem__, ids)))
    return made_over(ids, shas, listing.archived) if shas is not None else None


_SHA = attrgetter("sha256")


def _parsed_made_over(data: bytes) -> tuple[dict[str, str], list[str]] | None:
    """The versions by id and the archived ids of `made_over` bytes; None for empty bytes."""
    if not data:
        return None
    parts = data.decode("utf-8", "surrogatepass").split("\0")
    try:
        count = int(parts[0])
    except ValueError:
        return None
    if count < 0 or len(parts) < count + 2:
        return None
    ids, shas = parts[1:count + 1], parts[count + 1]
    if len(shas) != SHA_LENGTH * count:
        return None
    versions = {memory_id: shas[SHA_LENGTH * n:SHA_LENGTH * (n + 1)]
                for n, memory_id in enumerate(ids)}
    return versions, parts[count + 2:]


def encode(graph: Graph, listing: Listing) -> bytes:
    """The bytes of `graph`, made over the memories of `listing`: a head saying where each part
    is, what the graph was made over, its buckets, then the naming tables (read only when
    memories changed: `Graph.later`)."""
    graph.tables()
    ids = sorted(graph.shas)
    shas = _end_to_end(len(ids), map(graph.shas.__getitem__, ids))
    over = made_over(ids, shas, listing.archived) if shas is not None else b""
    count = max(1, (len(ids) + BUCKET_SIZE - 1) // BUCKET_SIZE)
    groups: list[tuple[dict[str, Any], ...]] = [({}, {}, {}) for _ in range(count)]
    links = {memory_id: [tuple(link) for link in found]
             for memory_id, found in graph.links.items()}
    tables: tuple[dict[str, Any], ...] = (links, graph.supersedes, graph.backlinks)
    for place, table in enumerate(tables):
        for memory_id, value in table.items():
            groups[bucket_of(memory_id, count)][place][memory_id] = value
    parts = [over, *(marshal.dumps(group) for group in groups),
             marshal.dumps((FORMAT_VERSION, graph.naming, graph.names_of))]
    spans: list[tuple[int, int, int]] = []
    at = 0
    for part in parts:
        spans.append((at, len(part), zlib.crc32(part)))
        at += len(part)
    head = marshal.dumps((FORMAT_VERSION, _version(), spans[0], spans[1:-1], spans[-1]))
    return b"".join((MAGIC, FORMAT_VERSION.to_bytes(4, "little"),
                     len(head).to_bytes(4, "little"), zlib.crc32(head).to_bytes(4, "little"),
                     head, *parts))


Span = tuple[int, int, int]  # where a part starts (after the head), its length, its CRC-32


class _File:
    """A saved graph file opened for reading: its head read and checked; its parts read one by
    one, each checked (the file is replaced whole by a rename, so what the descriptor reads is
    one version)."""

    def __init__(self, fd: int, size: int, head: tuple[Span, list[Span], Span], start: int):
        self._fd, self._size, self._start = fd, size, start
        self.over, self.buckets, self.tables = head

    @classmethod
    def open(cls, path: Path) -> _File | None:
        """The file at `path` when it is a regular file this version wrote; else None."""
        try:
            # O_NONBLOCK: a FIFO put there is never waited on (the state folder is the user's).
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except OSError:
            return None
        try:
            seen = os.fstat(fd)
            size = seen.st_size
            if not stat.S_ISREG(seen.st_mode) or size > LARGEST:
                raise ValueError
            first = os.pread(fd, _HEAD, 0)
            if len(first) < _HEAD or not first.startswith(MAGIC) or \
                    int.from_bytes(first[8:12], "little") != FORMAT_VERSION:
                raise ValueError
            length = int.from_bytes(first[12:16], "little")
            data = os.pread(fd, length, _HEAD)
            if len(data) != length or zlib.crc32(data) != int.from_bytes(first[16:20], "little"):
                raise ValueError
            head = marshal.loads(data)
            if not (isinstance(head, tuple) and len(head) == 5 and head[0] == FORMAT_VERSION
                    and head[1] == _version() and head[3]):
                raise ValueError
            return cls(fd, size, (head[2], list(head[3]), head[4]), _HEAD + length)
        except (OSError, ValueError, EOFError, TypeError):
            os.close(fd)
            return None

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def part(self, span: Span) -> bytes:
        """The bytes of one part; ValueError when they are not what was written."""
        at, length, crc = span
        if self._start + at + length > self._size:
            raise ValueError("the saved graph is cut short")
        data = os.pread(self._fd, length, self._start + at)
        if len(data) != length or zlib.crc32(data) != crc:
            raise ValueError("the saved graph is garbled")
        return data

    def bucket(self, memory_id: str) -> tuple[dict[str, Any], ...]:
        return _bucket(self.part(self.buckets[bucket_of(memory_id, len(self.buckets))]))

    def made_over(self) -> bytes:
        """What the graph was made over (`made_over`); empty when a version was not known."""
        return self.part(self.over)


def _bucket(data: bytes) -> tuple[dict[str, Any], ...]:
    values = marshal.loads(data)
    if not (isinstance(values, tuple) and len(values) == 3
            and all(isinstance(each, dict) for each in values)):
        raise ValueError("not a bucket of this version")
    return values


_LINK = functools.partial(tuple.__new__, Link)  # (as `Link(*values)`, without its checks)


def _tables(data: bytes) -> tuple[dict[str, set[str]], dict[str, frozenset[str]]]:
    """The naming tables of a saved graph (its CRC was checked as the graph was read)."""
    from ..disk.bulk import gc_paused

    with gc_paused():
        values = marshal.loads(data)
    if not (isinstance(values, tuple) and len(values) == 3 and values[0] == FORMAT_VERSION):
        raise ValueError("the saved graph's naming tables are not this version's")
    return values[1], values[2]


def read(path: Path, pause: Callable[[], None] | None = None) -> tuple[Graph, list[str]] | None:
    """The graph (without a resolver) and the archived ids it was made with; None for a file
    that is not one this version wrote whole. A bucket at a time, `pause` called now and
    then; its naming tables are read when first needed (`Graph.tables`: after a change)."""
    file = _File.open(path)
    if file is None:
        return None
    with file:
        try:
            data = file.made_over()
            if pause is not None:
                pause()
            over = _parsed_made_over(data)
            if over is None:
                return None
            shas, archived = over
            tables = file.part(file.tables)  # (checked now, read later)
            graph = Graph(shas=shas)
            for n, span in enumerate(file.buckets):
                if pause is not None and n % PAUSE_EVERY_BUCKETS == 0:
                    pause()
                found, supersedes, backlinks = _bucket(file.part(span))
                graph.links.update({memory_id: list(map(_LINK, each))
                                    for memory_id, each in found.items()})
                graph.supersedes.update(supersedes)
                graph.backlinks.update(backlinks)
        except (OSError, ValueError, EOFError, TypeError):
            return None
    graph.later = functools.partial(_tables, tables)
    return graph, archived


def write(path: Path, graph: Graph, listing: Listing) -> None:
    from ..disk.safe_io import atomic_write, make_private_dirs

    try:
        make_private_dirs(path.parent)
        atomic_write(path, encode(graph, listing), durable=False)
    except OSError:
        pass  # only a head start for the next launch: the graph is made from the memories


class Saved:
    """The graph file of one memory folder (`path()`: in its state folder), for `LinkGraph`."""

    def __init__(self, path: Callable[[], Path]) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._over: tuple[Listing, bytes | None] | None = None  # a listing's `made_over`

    def load(self, listing: Listing, resolver: Callable[[], Resolver],
             pause: Callable[[], None] | None = None) -> tuple[Graph, bool] | None:
        """The saved graph brought to `listing`, and whether it is as the file holds it; None
        when there is none to trust or so many memories changed that it is made again."""
        from ..disk.bulk import gc_paused

        # (The resolver and an update make many objects too, none garbage; the graph, the
        # listing and the index read before it live as long as the process: `keep`.)
        with gc_paused(keep=True):
            # What the listing is, first: a memory's page asked meanwhile compares its bucket's
            # file with it (`lookup`), and finds it made.
            self._made_over(listing)
            if pause is not None:
                pause()
            saved = read(self._path(), pause)
            if saved is None:
                return None
            graph = brought_up_to_date(saved, listing, resolver)
        return (graph, graph is saved[0]) if graph is not None else None

    def save(self, graph: Graph, listing: Listing) -> None:
        write(self._path(), graph, listing)

    def lookup(self, listing: Listing, memory_id: str,
               resolver: Callable[[], Resolver]) -> Graph | None:
        """What the saved graph, brought to `listing`, says of one memory (its links and
        backlinks), from the head and its bucket alone; None when there is no file to trust,
        or many memories changed."""
        file = _File.open(self._path())
        if file is None:
            return None
        with file:
            try:
                over = file.made_over()
                if not over:
                    return None
                found = Graph()
                # (Its links are kept under its id; its backlinks under its id in NFC.)
                for each in {memory_id, unicodedata.normalize("NFC", memory_id)}:
                    links, supersedes, backlinks = file.bucket(each)
                    if each in links:
                        found.links[each] = list(map(_LINK, links[each]))
                    for table, out in ((supersedes, found.supersedes),
                                       (backlinks, found.backlinks)):
                        if each in table:
                            out[each] = table[each]
                if over == self._made_over(listing):
                    if memory_id in listing.live:  # (its version is the file's)
                        found.shas[memory_id] = listing.live[memory_id].sha256
                    found.resolver = LaterResolver(resolver)
                    return found
                saved = _parsed_made_over(over)
                if saved is None:
                    return None
                return self._corrected(file, saved, found, listing, memory_id, resolver)
            except (OSError, ValueError, EOFError, TypeError):
                return None

    def _made_over(self, listing: Listing) -> bytes | None:
        with self._lock:  # (once a listing: the pages asked before the whole graph is read)
            if self._over is None or self._over[0] is not listing:
                self._over = (listing, listing_made_over(listing))
            return self._over[1]

    @staticmethod
    def _corrected(file: _File, saved: tuple[dict[str, str], list[str]], found: Graph,
                   listing: Listing, memory_id: str,
                   resolver: Callable[[], Resolver]) -> Graph | None:
        """`found` (one memory's entries as saved) made true of `listing`, as `updated_graph`
        would: None when many changed."""
        shas, archived_then = saved
        difference, gone, new = changes(shas, archived_then, listing)
        if many(difference, len(listing.live)):
            return None
        again = resolved_again(difference, gone, new, lambda: _tables(file.part(file.tables))[0])
        if memory_id in shas:
            found.shas[memory_id] = shas[memory_id]
        return one_memory_updated(found, listing.live, memory_id, again,
                                  LaterResolver(resolver))


def changes(shas: dict[str, str], archived_then: Iterable[str],
            listing: Listing) -> tuple[Difference, list[str], list[str]]:
    """What differs from a graph made over `shas` (live ids and versions) and `archived_then`
    to `listing`: the live memories added, removed and changed, the archived ids gone and new."""
    added = [i for i in listing.live if i not in shas]
    changed = [i for i, memory in listing.live.items()
               if i in shas and (not memory.sha256 or shas[i] != memory.sha256)]
    removed = [i for i in shas if i not in listing.live] \
        if len(shas) + len(added) != len(listing.live) else []
    before = set(archived_then)
    gone = [i for i in before if i not in listing.archived]
    new = [i for i in listing.archived if i not in before]
    return Difference(added, removed, changed), gone, new


def brought_up_to_date(saved: tuple[Graph, list[str]], listing: Listing,
                       resolver: Callable[[], Resolver]) -> Graph | None:
    """The saved graph made true of `listing` (`resolver` over its ids): the links of what
    changed since it was saved resolved again; None when so many changed that making the graph
    again is as quick."""
    graph, archived_then = saved
    difference, gone, new = changes(graph.shas, archived_then, listing)
    if many(difference, len(listing.live)):
        return None
    graph.resolver = LaterResolver(resolver)  # (made only when a memory's page needs it)
    if not difference and not gone and not new:
        return graph
    return updated_graph(graph, listing.live, listing.archived, difference, gone, new)
