"""The link graph kept in the state folder between launches (`ui/links-graph.bin`), so that a
new `sage-mem ui` process finds its graph made instead of resolving every body's links again
(about a second of CPU at 20,000 memories, seconds on a loaded machine).

What it holds is never trusted as it stands: each memory's links are kept with the sha256 of
the version they were resolved from, with the ids of the live and archived memories at that
moment. A launch compares that with the store's listing, and the graph is brought up to date
as after any change (`links.updated_graph`): the links of every memory whose version differs,
came or went are resolved again, and of every memory naming the file name of one that came or
went (no other link can resolve differently); made whole again when many changed. A memory
edited while the page was closed therefore never shows a stale link or backlink.

Each memory's links, supersedes and backlinks are kept a second time, one entry a memory
found by an offset table (`Pages`), so that the first memory page of a launch is answered from
its one entry while the whole graph is still being read (at 50,000 memories some 100 ms of CPU
to unmarshal and make its links, in front of that page). An entry is used only when the file
is known current for the whole folder: the ids, versions and archived ids it was made over are
those of the listing, byte for byte; after any change while the page was closed the page waits
for the whole graph, brought up to date, as before.

A file that is short, garbled (CRC-32), of another format or written by another version of
sage-mem (whose rules may resolve a link differently) is ignored: the graph is made from the
memories, and saved again. Only the state folder is ever written, never the memory folder.
"""

from __future__ import annotations

import functools
import marshal
import os
import stat
import struct
import threading
import zlib
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

from .links import Graph, LaterResolver, Link, Resolver, updated_graph
from .listing import Difference, Listing, many

GRAPH_FILE = ("ui", "links-graph.bin")  # in the state folder, never the memory folder
MAGIC = b"SMLGRAPH"
FORMAT_VERSION = 3  # 2: the naming tables apart (read later); 3: an entry a memory (`Pages`)
LARGEST = 512 * 1024 * 1024


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


SHA_BYTES = 32  # a memory's version: the sha256 of its file (kept as bytes, 64 hex digits)
HEAD = len(MAGIC) + 8  # the magic, the format, the CRC-32 of the rest
PAGES_HEAD = 12  # the entries' section's length and its own CRC-32, first after `HEAD`


def encode(graph: Graph, listing: Listing) -> bytes:
    """The bytes of `graph`, made over the memories of `listing`: an entry a memory (`Pages`,
    read alone at a launch), the whole graph, then the naming tables (read only when memories
    changed: `Graph.later`)."""
    graph.tables()
    links = {memory_id: [(link.kind, link.written, link.id, link.archived) for link in found]
             for memory_id, found in graph.links.items()}
    pages = _pages(graph, links, listing)
    first = marshal.dumps((
        FORMAT_VERSION, _version(), sorted(listing.archived), graph.shas, links,
        graph.supersedes, graph.backlinks,
    ))
    payload = b"".join((len(pages).to_bytes(8, "little"), zlib.crc32(pages).to_bytes(4, "little"),
                        pages, len(first).to_bytes(8, "little"), first,
                        marshal.dumps((FORMAT_VERSION, graph.naming, graph.names_of))))
    head = FORMAT_VERSION.to_bytes(4, "little") + zlib.crc32(payload).to_bytes(4, "little")
    return MAGIC + head + payload


def _made_over(ids: list[str], shas: str, listing: Listing) -> tuple[str, bytes, str] | None:
    """What a saved graph's entries were made over, compared whole at a launch: the live ids
    (sorted, each between NULs, which no id holds), their versions in that order, and the
    archived ids; None when a version is not known (never trusted)."""
    if len(shas) != 2 * SHA_BYTES * len(ids):
        return None
    try:
        versions = bytes.fromhex(shas)
    except ValueError:
        return None
    return "\0" + "\0".join(ids) + "\0", versions, "\0".join(sorted(listing.archived))


def _pages(graph: Graph, links: dict[str, list[tuple[Any, ...]]], listing: Listing) -> bytes:
    """Each live memory's entry (its links, supersedes and backlinks, marshalled on its own),
    after a head saying what they were made over and where each starts; empty when the graph
    is not exactly of `listing`'s memories (then no page is answered from an entry)."""
    ids = sorted(graph.shas)
    made_over = _made_over(ids, "".join(map(graph.shas.__getitem__, ids)), listing)
    if made_over is None or graph.shas.keys() != listing.live.keys():
        return b""
    entries = [marshal.dumps((links.get(memory_id, []), graph.supersedes.get(memory_id, []),
                              graph.backlinks.get(memory_id, []))) for memory_id in ids]
    starts = [0]
    for entry in entries:
        starts.append(starts[-1] + len(entry))
    head = marshal.dumps((FORMAT_VERSION, _version(), *made_over,
                          struct.pack(f"<{len(starts)}Q", *starts)))
    return len(head).to_bytes(8, "little") + head + b"".join(entries)


class Pages:
    """A saved graph's entries, one a memory: its links, supersedes and backlinks read alone."""

    def __init__(self, made_over: tuple[str, bytes, str], starts: bytes,
                 entries: memoryview) -> None:
        self.made_over = made_over
        self._starts = starts
        self._entries = entries

    def current(self, listing: Listing) -> bool:
        """Whether the entries were made over exactly the memories of `listing` (the same ids,
        versions and archived ids): some milliseconds at 50,000 memories, in C loops."""
        ids = sorted(listing.live)
        shas = "".join(map(attrgetter("sha256"), map(listing.live.__getitem__, ids)))
        return _made_over(ids, shas, listing) == self.made_over

    def graph(self, memory_id: str) -> Graph | None:
        """The graph of one live memory as the whole graph holds it (its links, supersedes,
        backlinks and version); None for an id without an entry."""
        ids = self.made_over[0]
        at = ids.find("\0" + memory_id + "\0")
        if at < 0:
            return None
        n = ids.count("\0", 0, at)
        start, end = struct.unpack_from("<2Q", self._starts, 8 * n)
        try:
            found, supersedes, backlinks = marshal.loads(self._entries[start:end])
        except (EOFError, ValueError, TypeError):
            return None
        graph = Graph(shas={memory_id: self.made_over[1][SHA_BYTES * n:SHA_BYTES * (n + 1)].hex()})
        if found:
            graph.links[memory_id] = [Link(*link) for link in found]
        if supersedes:
            graph.supersedes[memory_id] = supersedes
        if backlinks:
            graph.backlinks[memory_id] = backlinks
        return graph


def read_pages(path: Path) -> Pages | None:
    """A saved graph's entries (`Pages`), read alone (the first part of the file, its own
    CRC-32 checked), not the whole graph; None for a file this version did not write whole, or
    saved without them."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.pread(fd, HEAD + PAGES_HEAD, 0)
        if len(head) < HEAD + PAGES_HEAD or not head.startswith(MAGIC) \
                or int.from_bytes(head[len(MAGIC):len(MAGIC) + 4], "little") != FORMAT_VERSION:
            return None
        size = int.from_bytes(head[HEAD:HEAD + 8], "little")
        if not 16 <= size <= LARGEST:  # (16: a head's length and a head at least)
            return None
        pages = _read_at(fd, size, HEAD + PAGES_HEAD)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(pages) != size or zlib.crc32(pages) != int.from_bytes(head[HEAD + 8:], "little"):
        return None
    split = 8 + int.from_bytes(pages[:8], "little")
    if split > len(pages):
        return None
    try:
        values = marshal.loads(memoryview(pages)[8:split])
    except (EOFError, ValueError, TypeError):
        return None
    if not (isinstance(values, tuple) and len(values) == 6 and values[0] == FORMAT_VERSION
            and values[1] == _version() and isinstance(values[2], str)
            and isinstance(values[3], bytes) and isinstance(values[4], str)
            and isinstance(values[5], bytes)):
        return None
    return Pages((values[2], values[3], values[4]), values[5], memoryview(pages)[split:])


def _read_at(fd: int, size: int, at: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, min(size, 1 << 22), at)
        if not chunk:
            break
        chunks.append(chunk)
        size, at = size - len(chunk), at + len(chunk)
    return b"".join(chunks)


def decode(data: bytes) -> tuple[Graph, list[str]] | None:
    """The graph (without a resolver) and the archived ids it was made with; None for a file
    that is not one this version wrote whole. Its naming tables are read when first needed
    (`Graph.tables`: after a change), not now."""
    if len(data) < HEAD + PAGES_HEAD or not data.startswith(MAGIC):
        return None
    if int.from_bytes(data[len(MAGIC):len(MAGIC) + 4], "little") != FORMAT_VERSION:
        return None
    payload = memoryview(data)[HEAD:]
    if zlib.crc32(payload) != int.from_bytes(data[len(MAGIC) + 4:HEAD], "little"):
        return None
    at = PAGES_HEAD + int.from_bytes(payload[:8], "little")  # (the entries: not needed here)
    if at + 8 > len(payload):
        return None
    split = at + 8 + int.from_bytes(payload[at:at + 8], "little")
    if split > len(payload):
        return None
    from ..disk.bulk import gc_paused

    with gc_paused():  # (hundreds of thousands of objects, none garbage: a third of the time)
        decoded = _decoded(payload[at + 8:split])
    if decoded is not None:
        decoded[0].later = functools.partial(_tables, bytes(payload[split:]))
    return decoded


def _decoded(payload: memoryview) -> tuple[Graph, list[str]] | None:
    try:
        values = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(values, tuple) or len(values) != 7 or values[0] != FORMAT_VERSION \
            or values[1] != _version():
        return None
    _, _, archived, shas, links, supersedes, backlinks = values
    make = functools.partial(tuple.__new__, Link)  # (as `Link(*values)`, without its checks)
    graph = Graph(links={memory_id: list(map(make, found)) for memory_id, found in links.items()},
                  supersedes=supersedes, backlinks=backlinks, shas=shas)
    return graph, archived


def _tables(data: bytes) -> tuple[dict[str, set[str]], dict[str, frozenset[str]]]:
    """The naming tables of a saved graph (its CRC was checked with the rest)."""
    from ..disk.bulk import gc_paused

    with gc_paused():
        values = marshal.loads(data)
    if not (isinstance(values, tuple) and len(values) == 3 and values[0] == FORMAT_VERSION):
        raise ValueError("the saved graph's naming tables are not this version's")
    return values[1], values[2]



def read(path: Path) -> tuple[Graph, list[str]] | None:
    from ..disk.safe_io import read_or_absent
    from ..errors import InvalidMemory

    try:
        seen = read_or_absent(path, limit=LARGEST)
    except (InvalidMemory, OSError):
        return None
    return decode(seen.raw) if seen.raw is not None else None


def write(path: Path, graph: Graph, listing: Listing) -> None:
    from ..disk.safe_io import atomic_write, make_private_dirs

    try:
        make_private_dirs(path.parent)
        atomic_write(path, encode(graph, listing), durable=False)
    except OSError:
        pass  # only a head start for the next launch: the graph is made from the memories


class Saved:
    """The graph file of one memory folder (`path()`: in its state folder), for `LinkGraph`:
    read whole once at launch (`load`), and a memory's entry alone (`page`) meanwhile."""

    def __init__(self, path: Callable[[], Path]) -> None:
        self._path = path
        self._reading = threading.Lock()
        self._pages: tuple[Listing, Pages | None] | None = None  # and whether they are current
        self._loaded = False  # (the whole graph was read: no page is answered from entries)

    def page(self, listing: Listing, memory_id: str) -> Graph | None:
        """One memory's graph from its entry, while the whole graph is not yet read; None when
        the file is not known current for `listing` (a change while the page was closed: the
        page waits for the whole graph, brought up to date) or holds no entry for it."""
        pages = self._current_pages(listing)
        return pages.graph(memory_id) if pages is not None else None

    def _current_pages(self, listing: Listing) -> Pages | None:
        """The file's entries when they are current for `listing`: read once (by the launch's
        `load` first, so that a page asked meanwhile finds them read), until the whole graph
        is."""
        with self._reading:  # (one read for the pages asked at once)
            if self._loaded:
                return None
            pages = self._pages
            if pages is None or pages[0] is not listing:
                found = read_pages(self._path())
                pages = self._pages = (listing, found if found is not None
                                       and found.current(listing) else None)
            return pages[1]

    def load(self, listing: Listing,
             resolver: Callable[[], Resolver]) -> tuple[Graph, bool] | None:
        """The saved graph brought to `listing`, and whether it is as the file holds it; None
        when there is none to trust or so many memories changed that it is made again."""
        from ..disk.bulk import gc_paused

        # (The resolver and an update make many objects too, none garbage; the graph, the
        # listing and the index read before it live as long as the process: `keep`.)
        self._current_pages(listing)  # (a few ms: a page asked while the rest is read finds it)
        try:
            with gc_paused(keep=True):
                saved = read(self._path())
                if saved is None:
                    return None
                graph = brought_up_to_date(saved, listing, resolver)
            return (graph, graph is saved[0]) if graph is not None else None
        finally:
            with self._reading:  # (the graph's pages answer from it from now on)
                self._pages, self._loaded = None, True

    def save(self, graph: Graph, listing: Listing) -> None:
        write(self._path(), graph, listing)


def brought_up_to_date(saved: tuple[Graph, list[str]], listing: Listing,
                       resolver: Callable[[], Resolver]) -> Graph | None:
    """The saved graph made true of `listing` (`resolver` over its ids): the links of what
    changed since it was saved resolved again; None when so many changed that making the graph
    again is as quick."""
    graph, archived_then = saved
    shas = graph.shas
    added = [i for i in listing.live if i not in shas]
    changed = [i for i, memory in listing.live.items()
               if i in shas and (not memory.sha256 or shas[i] != memory.sha256)]
    removed = [i for i in shas if i not in listing.live] \
        if len(shas) + len(added) != len(listing.live) else []
    difference = Difference(added, removed, changed)
    before = set(archived_then)
    gone = [i for i in before if i not in listing.archived]
    new = [i for i in listing.archived if i not in before]
    if many(difference, len(listing.live)):
        return None
    graph.resolver = LaterResolver(resolver)  # (made only when a memory's page needs it)
    if not difference and not gone and not new:
        return graph
    return updated_graph(graph, listing.live, listing.archived, difference, gone, new)
