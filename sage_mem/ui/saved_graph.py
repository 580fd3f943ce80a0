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

A file that is short, garbled (CRC-32), of another format or written by another version of
sage-mem (whose rules may resolve a link differently) is ignored: the graph is made from the
memories, and saved again. Only the state folder is ever written, never the memory folder.
"""

from __future__ import annotations

import functools
import marshal
import zlib
from collections.abc import Callable
from pathlib import Path

from .links import Graph, LaterResolver, Link, Resolver, updated_graph
from .listing import Difference, Listing, many

GRAPH_FILE = ("ui", "links-graph.bin")  # in the state folder, never the memory folder
MAGIC = b"SMLGRAPH"
FORMAT_VERSION = 2  # 2: the naming tables apart, after the rest (read later)
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


def encode(graph: Graph, listing: Listing) -> bytes:
    """The bytes of `graph`, made over the memories of `listing`: what a memory's page needs,
    then the naming tables (read only when memories changed: `Graph.later`)."""
    graph.tables()
    links = {memory_id: [(link.kind, link.written, link.id, link.archived) for link in found]
             for memory_id, found in graph.links.items()}
    first = marshal.dumps((
        FORMAT_VERSION, _version(), sorted(listing.archived), graph.shas, links,
        graph.supersedes, graph.backlinks,
    ))
    payload = len(first).to_bytes(8, "little") + first + marshal.dumps(
        (FORMAT_VERSION, graph.naming, graph.names_of))
    head = FORMAT_VERSION.to_bytes(4, "little") + zlib.crc32(payload).to_bytes(4, "little")
    return MAGIC + head + payload


def decode(data: bytes) -> tuple[Graph, list[str]] | None:
    """The graph (without a resolver) and the archived ids it was made with; None for a file
    that is not one this version wrote whole. Its naming tables are read when first needed
    (`Graph.tables`: after a change), not now."""
    if len(data) < len(MAGIC) + 16 or not data.startswith(MAGIC):
        return None
    at = len(MAGIC)
    if int.from_bytes(data[at:at + 4], "little") != FORMAT_VERSION:
        return None
    payload = memoryview(data)[at + 8:]
    if zlib.crc32(payload) != int.from_bytes(data[at + 4:at + 8], "little"):
        return None
    split = 8 + int.from_bytes(payload[:8], "little")
    if split > len(payload):
        return None
    from ..disk.bulk import gc_paused

    with gc_paused():  # (hundreds of thousands of objects, none garbage: a third of the time)
        decoded = _decoded(payload[8:split])
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
    """The graph file of one memory folder (`path()`: in its state folder), for `LinkGraph`."""

    def __init__(self, path: Callable[[], Path]) -> None:
        self._path = path

    def load(self, listing: Listing,
             resolver: Callable[[], Resolver]) -> tuple[Graph, bool] | None:
        """The saved graph brought to `listing`, and whether it is as the file holds it; None
        when there is none to trust or so many memories changed that it is made again."""
        from ..disk.bulk import gc_paused

        # (The resolver and an update make many objects too, none garbage; the graph, the
        # listing and the index read before it live as long as the process: `keep`.)
        with gc_paused(keep=True):
            saved = read(self._path())
            if saved is None:
                return None
            graph = brought_up_to_date(saved, listing, resolver)
        return (graph, graph is saved[0]) if graph is not None else None

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
