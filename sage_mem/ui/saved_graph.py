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


SHA_LENGTH = 64  # a memory's version: the hex sha256 of its file


def encode(graph: Graph, listing: Listing) -> bytes:
    """The bytes of `graph`, made over the memories of `listing`: the whole graph, then an
    entry a memory (`Pages`), then the naming tables (read only when memories changed:
    `Graph.later`)."""
    graph.tables()
    links = {memory_id: [(link.kind, link.written, link.id, link.archived) for link in found]
             for memory_id, found in graph.links.items()}
    first = marshal.dumps((
        FORMAT_VERSION, _version(), sorted(listing.archived), graph.shas, links,
        graph.supersedes, graph.backlinks,
    ))
    pages = _pages(graph, links, listing)
    payload = b"".join((len(first).to_bytes(8, "little"), first,
                        len(pages).to_bytes(8, "little"), pages,
                        marshal.dumps((FORMAT_VERSION, graph.naming, graph.names_of))))
    head = FORMAT_VERSION.to_bytes(4, "little") + zlib.crc32(payload).to_bytes(4, "little")
    return MAGIC + head + payload


def _made_over(ids: list[str], shas: str, listing: Listing) -> tuple[bytes, ...]:
    """What a saved graph's entries were made over, as bytes compared whole at a launch: the
    live ids (sorted, each between NULs, which no id holds), their versions in that order, and
    the archived ids."""
    archived_ids = sorted(listing.archived)
    return (b"\0" + "\0".join(ids).encode("utf-8", "surrogatepass") + b"\0",
            shas.encode("ascii"), "\0".join(archived_ids).encode("utf-8", "surrogatepass"))


def _pages(graph: Graph, links: dict[str, list[tuple[Any, ...]]], listing: Listing) -> bytes:
    """Each live memory's entry (its links, supersedes and backlinks, marshalled on its own),
    after a head saying what they were made over and where each starts; empty when the graph
    is not exactly of `listing`'s memories (then no page is answered from an entry)."""
    ids = sorted(graph.shas)
    shas = "".join(map(graph.shas.__getitem__, ids))
    if graph.shas.keys() != listing.live.keys() or len(shas) != SHA_LENGTH * len(ids) \
            or not shas.isascii():
        return b""
    entries = [marshal.dumps((links.get(memory_id, []), graph.supersedes.get(memory_id, []),
                              graph.backlinks.get(memory_id, []))) for memory_id in ids]
    starts = [0]
    for entry in entries:
        starts.append(starts[-1] + len(entry))
    head = marshal.dumps((FORMAT_VERSION, _version(), *_made_over(ids, shas, listing),
                          struct.pack(f"<{len(starts)}Q", *starts)))
    return len(head).to_bytes(8, "little") + head + b"".join(entries)


class Pages:
    """A saved graph's entries, one a memory: its links, supersedes and backlinks read alone."""

    def __init__(self, made_over: tuple[bytes, ...], starts: bytes, entries: memoryview) -> None:
        self.made_over = made_over
        self._starts = starts
        self._entries = entries

    def current(self, listing: Listing) -> bool:
        """Whether the entries were made over exactly the memories of `listing` (the same ids,
        versions and archived ids): a few milliseconds at 50,000 memories, in C loops."""
        ids = sorted(listing.live)
        shas = "".join(map(attrgetter("sha256"), map(listing.live.__getitem__, ids)))
        if len(shas) != SHA_LENGTH * len(ids) or not shas.isascii():
            return False  # (a version not known: never trusted)
        return _made_over(ids, shas, listing) == self.made_over

    def graph(self, memory_id: str) -> Graph | None:
        """The graph of one live memory as the whole graph holds it (its links, supersedes,
        backlinks and version); None for an id without an entry."""
        ids = self.made_over[0]
        at = ids.find(b"\0" + memory_id.encode("utf-8", "surrogatepass") + b"\0")
        if at < 0:
            return None
        n = ids.count(b"\0", 0, at)
        start, end = struct.unpack_from("<2Q", self._starts, 8 * n)
        try:
            found, supersedes, backlinks = marshal.loads(self._entries[start:end])
        except (EOFError, ValueError, TypeError):
            return None
        sha = self.made_over[1][SHA_LENGTH * n:SHA_LENGTH * (n + 1)].decode("ascii")
        graph = Graph(shas={memory_id: sha})
        if found:
            graph.links[memory_id] = [Link(*link) for link in found]
        if supersedes:
            graph.supersedes[memory_id] = supersedes
        if backlinks:
            graph.backlinks[memory_id] = backlinks
        return graph


def decode_pages(data: bytes) -> Pages | None:
    """A saved graph's entries (`Pages`), without reading the whole graph; None for a file that
    is not one this version wrote whole, or was saved without them."""
    payload = _payload(data)
    if payload is None or len(payload) < 8:
        return None
    at = 8 + int.from_bytes(payload[:8], "little")
    if at + 8 > len(payload):
        return None
    end = at + 8 + int.from_bytes(payload[at:at + 8], "little")
    if end < at + 16 or end > len(payload):  # (16: a head's length and a head at least)
        return None
    pages = payload[at + 8:end]
    split = 8 + int.from_bytes(pages[:8], "little")
    if split > len(pages):
        return None
    try:
        head = marshal.loads(pages[8:split])
    except (EOFError, ValueError, TypeError):
        return None
    if not (isinstance(head, tuple) and len(head) == 6 and head[0] == FORMAT_VERSION
            and head[1] == _version() and all(isinstance(each, bytes) for each in head[2:])):
        return None
    return Pages(tuple(head[2:5]), head[5], pages[split:])


def _payload(data: bytes) -> memoryview | None:
    """What follows a saved graph's head, when its magic, format and CRC are this version's."""
    if len(data) < len(MAGIC) + 16 or not data.startswith(MAGIC):
        return None
    at = len(MAGIC)
    if int.from_bytes(data[at:at + 4], "little") != FORMAT_VERSION:
        return None
    payload = memoryview(data)[at + 8:]
    if zlib.crc32(payload) != int.from_bytes(data[at + 4:at + 8], "little"):
        return None
    return payload


def decode(data: bytes) -> tuple[Graph, list[str]] | None:
    """The graph (without a resolver) and the archived ids it was made with; None for a file
    that is not one this version wrote whole. Its naming tables are read when first needed
    (`Graph.tables`: after a change), not now."""
    payload = _payload(data)
    if payload is None or len(payload) < 8:
        return None
    split = 8 + int.from_bytes(payload[:8], "little")
    if split + 8 > len(payload):
        return None
    tables = split + 8 + int.from_bytes(payload[split:split + 8], "little")  # (after the pages)
    if tables > len(payload):
        return None
    from ..disk.bulk import gc_paused

    with gc_paused():  # (hundreds of thousands of objects, none garbage: a third of the time)
        decoded = _decoded(payload[8:split])
    if decoded is not None:
        decoded[0].later = functools.partial(_tables, bytes(payload[tables:]))
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



def read_bytes(path: Path) -> bytes | None:
    from ..disk.safe_io import read_or_absent
    from ..errors import InvalidMemory

    try:
        seen = read_or_absent(path, limit=LARGEST)
    except (InvalidMemory, OSError):
        return None
    return seen.raw


def read(path: Path) -> tuple[Graph, list[str]] | None:
    raw = read_bytes(path)
    return decode(raw) if raw is not None else None


def write(path: Path, graph: Graph, listing: Listing) -> None:
    from ..disk.safe_io import atomic_write, make_private_dirs

    try:
        make_private_dirs(path.parent)
        atomic_write(path, encode(graph, listing), durable=False)
    except OSError:
        pass  # only a head start for the next launch: the graph is made from the memories


class Saved:
    """The graph file of one memory folder (`path()`: in its state folder), for `LinkGraph`:
    read once at launch, by whichever comes first of the whole graph's read (`load`) and a
    memory's page (`page`), which needs only its entries."""

    def __init__(self, path: Callable[[], Path]) -> None:
        self._path = path
        self._reading = threading.Lock()
        self._raw: bytes | None = None
        self._read = False  # (the file was read: `_raw` is its bytes until the graph is made)
        self._pages: tuple[Listing, Pages | None] | None = None  # and whether they are current
        self._loaded = False  # (the whole graph was read: no page is answered from entries)

    def _bytes(self) -> bytes | None:
        with self._reading:
            if not self._read:
                self._raw, self._read = read_bytes(self._path()), True
            return self._raw

    def page(self, listing: Listing, memory_id: str) -> Graph | None:
        """One memory's graph from its entry, while the whole graph is not yet read; None when
        the file is not known current for `listing` (a change while the page was closed: the
        page waits for the whole graph, brought up to date) or holds no entry for it."""
        pages = self._pages
        if pages is None or pages[0] is not listing:
            raw = self._bytes()
            found = decode_pages(raw) if raw is not None else None
            pages = (listing, found if found is not None and found.current(listing) else None)
            with self._reading:
                if not self._loaded:
                    self._pages = pages
        return pages[1].graph(memory_id) if pages[1] is not None else None

    def load(self, listing: Listing,
             resolver: Callable[[], Resolver]) -> tuple[Graph, bool] | None:
        """The saved graph brought to `listing`, and whether it is as the file holds it; None
        when there is none to trust or so many memories changed that it is made again."""
        from ..disk.bulk import gc_paused

        # (The resolver and an update make many objects too, none garbage; the graph, the
        # listing and the index read before it live as long as the process: `keep`.)
        try:
            with gc_paused(keep=True):
                raw = self._bytes()
                saved = decode(raw) if raw is not None else None
                if saved is None:
                    return None
                graph = brought_up_to_date(saved, listing, resolver)
            return (graph, graph is saved[0]) if graph is not None else None
        finally:
            with self._reading:  # (read: the graph's pages answer from it from now on)
                self._raw, self._read, self._pages, self._loaded = None, True, None, True

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
