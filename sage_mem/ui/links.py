"""The relations between memories, as the page draws them: `[[links]]`, `[text](x.md)` links and
`supersedes`, resolved to ids; each memory's backlinks; and what a body's links point to.

Links are read outside code, through `memory.markdown` (as the audit and the
dream read them), and resolved the way the audit resolves them: a wiki link
by id from the root, then from the linking memory's folder, then by a file
name that only one memory has; a markdown link as a path from the memory's
folder, then from the root. A target that resolves to no live memory is
broken (`id` None), or archived (`archived` names where it is now).

The graph is built from the index (never a file read) once per change of the
memories (`LinkGraph.get` with the live feed's generation).
"""

from __future__ import annotations

import functools
import posixpath
import threading
import time
import unicodedata
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from ..disk.folder import ARCHIVE_DIR
from ..memory.links import Ids, markdown_candidates, markdown_target, wiki_candidates, wiki_target
from ..memory.markdown import MARKDOWN_LINK, WIKI_LINK, linked_file, mask_code
from ..memory.value import Memory
from ..store import MemoryStore
from .listing import Difference, Listing, Listings, differ, many


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


class Link(NamedTuple):
    """One link in a body: as written, of which kind, and the live memory it reaches (or not).

    A tuple (not a dataclass): a saved graph's links are made from the tuples it holds by
    `tuple.__new__` alone, a third of the time of an object with a `__dict__` each (some
    300,000 links at 50,000 memories, while the first memory page waits for them)."""

    kind: str  # "wiki" or "markdown"
    written: str  # the wiki target, or the markdown destination, as in the text
    id: str | None  # the live memory it points to
    archived: str | None = None  # when it points to an archived memory: its archive/ id

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "written": self.written, "id": self.id,
                "archived": self.archived}


@dataclass
class Graph:
    """Every memory's resolved links, its supersedes, and who links to it."""

    links: dict[str, list[Link]] = field(default_factory=dict)
    supersedes: dict[str, list[str]] = field(default_factory=dict)
    backlinks: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    resolver: Resolver | None = None  # the ids it was built over, for one memory's links
    shas: dict[str, str] = field(default_factory=dict)  # each live memory's version in it
    # Who names each file name (`_names`) in a link or supersedes: the memories whose links may
    # resolve differently when a memory of that name comes or goes; and the names each names.
    naming: dict[str, set[str]] = field(default_factory=dict)
    names_of: dict[str, frozenset[str]] = field(default_factory=dict)
    # Those two tables when they are still to be read (`saved_graph`: a third of a saved graph,
    # needed only once memories change): `tables()` reads them first.
    later: Callable[[], tuple[dict[str, set[str]], dict[str, frozenset[str]]]] | None = None
    _reading: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def tables(self) -> Graph:
        """This graph with `naming` and `names_of` read, if they were left for later."""
        if self.later is not None:
            with self._reading:
                later = self.later
                if later is not None:
                    self.naming, self.names_of = later()
                    self.later = None
        return self

    def edges(self) -> list[dict[str, str]]:
        """Each relation once: `{from, to, kind}` with kind `link` or `supersedes`."""
        out: list[dict[str, str]] = []
        for source in sorted(self.links):
            seen: set[str] = set()
            for link in self.links[source]:
                if link.id and link.id != source and link.id not in seen:
                    seen.add(link.id)
                    out.append({"from": source, "to": link.id, "kind": "link"})
        for source in sorted(self.supersedes):
            for target in self.supersedes[source]:
                out.append({"from": source, "to": target, "kind": "supersedes"})
        return out


class Resolver:
    """Resolves link targets against the live and archived memories of one moment.

    A target in service is resolved by `memory.links` (the rule the rename and
    the dream follow too); only where an archived memory now is, is the page's.
    """

    def __init__(self, live: Iterable[str], archived: Iterable[str]) -> None:
        self.ids = Ids.of(_nfc(i) for i in live)
        self.live = self.ids.live
        self.archived = {_nfc(i) for i in archived}

    def wiki(self, target: str, folder_rel: str) -> Link:
        found = wiki_target(target, folder_rel, self.ids)
        archived = None
        if found is None:
            candidates = wiki_candidates(target, folder_rel)
            archived = next((f"{ARCHIVE_DIR}/{c}" for c in candidates if c in self.archived), None)
        return Link("wiki", target, found, archived)

    def markdown(self, destination: str, folder_rel: str) -> Link | None:
        candidates = markdown_candidates(destination, folder_rel)
        if not candidates:
            return None
        found = markdown_target(destination, folder_rel, self.ids)
        archived = None
        if found is None:
            for memory_id in candidates:
                if memory_id.startswith(ARCHIVE_DIR + "/") and \
                        memory_id[len(ARCHIVE_DIR) + 1:] in self.archived:
                    archived = memory_id
                    break
                if memory_id in self.archived:
                    archived = f"{ARCHIVE_DIR}/{memory_id}"
                    break
        return Link("markdown", destination, found, archived)

    def links_of(self, memory: Memory) -> list[Link]:
        if "[" not in memory.body:
            return []
        folder_rel = posixpath.dirname(memory.id.removeprefix(ARCHIVE_DIR + "/"))
        text = mask_code(memory.body)
        out: list[Link] = []
        for line in text.split("\n"):
            if "[" not in line:
                continue
            for match in WIKI_LINK.finditer(line):
                out.append(self.wiki(match.group("target"), folder_rel))
            for match in MARKDOWN_LINK.finditer(line):
                if match.group("image"):
                    continue
                found = self.markdown(match.group("destination"), folder_rel)
                if found is not None:
                    out.append(found)
        return out


class LaterResolver(Resolver):
    """A resolver made when it is first used (`make`): a saved graph that no change touched
    answers a memory's page from the links it holds, and the resolver over every id (0.4 s of
    CPU at 50,000 memories) is made only for a memory whose version the graph does not hold,
    or for a change."""

    def __init__(self, make: Callable[[], Resolver]) -> None:  # (made later: no super call)
        self._make = make
        self._making = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        # Only for what a made resolver holds (`ids`, `live`, `archived`), on its first use.
        if name.startswith("_"):
            raise AttributeError(name)
        with self._making:
            if "ids" not in self.__dict__:
                made = self._make()
                self.__dict__.update(ids=made.ids, live=made.live, archived=made.archived)
        return object.__getattribute__(self, name)


PAUSE_EVERY = 256  # memories between two `pause`s of a graph made ahead of time


def build_graph(live: list[Memory], archived: list[Memory],
                resolver: Resolver | None = None,
                pause: Callable[[], None] | None = None) -> Graph:
    """The whole graph; `resolver` when one over these memories' ids is made already; `pause`
    called now and then (made ahead of time: it waits while a person's request is answered,
    as the audit does, instead of sharing the interpreter with it)."""
    resolver = resolver or _resolver(live, archived)
    graph = Graph(resolver=resolver)
    backlinks: dict[str, set[tuple[str, str]]] = defaultdict(set)
    naming: dict[str, set[str]] = defaultdict(set)
    for n, memory in enumerate(live):
        if pause is not None and n % PAUSE_EVERY == 0:
            pause()
        for target, kind in _add(graph, resolver, memory):
            backlinks[target].add((memory.id, kind))
        for name in graph.names_of.get(memory.id, ()):
            naming[name].add(memory.id)
    graph.backlinks = {key: sorted(value) for key, value in backlinks.items()}
    graph.naming = dict(naming)
    return graph


EVERY_NAME = "/"  # in `Graph.naming`: a link whose file name cannot be told (`..` in it)


def _names(link: Link) -> str:
    """The file name (an id's last part) of every memory the link could name, live or archived:
    each rule resolves it to an id ending so (or `EVERY_NAME` when a `.` or `..` part could
    change that)."""
    if link.kind == "wiki":
        written: str | None = _nfc(link.written.strip().removesuffix(".md"))
    else:
        found = linked_file(link.written)
        written = found[:-3] if found is not None else None
    if not written:
        return EVERY_NAME
    parts = written.split("/")
    return EVERY_NAME if any(part in ("", ".", "..") for part in parts) else parts[-1]


def _add(graph: Graph, resolver: Resolver, memory: Memory) -> list[tuple[str, str]]:
    """Put one memory's links and supersedes in `graph`; the (target, kind) it links to."""
    graph.shas[memory.id] = memory.sha256
    links = resolver.links_of(memory)
    if links:
        graph.links[memory.id] = links
    out = [(link.id, "link") for link in links if link.id and link.id != memory.id]
    named = frozenset({_names(link) for link in links}
                      | {_leaf(s) for s in memory.supersedes})
    if named:
        graph.names_of[memory.id] = named
    replaced = [_nfc(s) for s in memory.supersedes if _nfc(s) in resolver.live]
    if replaced:
        graph.supersedes[memory.id] = replaced
        out.extend((target, "supersedes") for target in replaced)
    return out


def _targets(graph: Graph, memory_id: str) -> set[str]:
    """What a memory of the graph links to or supersedes."""
    found = {link.id for link in graph.links.get(memory_id, ()) if link.id}
    return found | set(graph.supersedes.get(memory_id, ()))


def _leaf(memory_id: str) -> str:
    return _nfc(memory_id).rsplit("/", 1)[-1]


def resolved_again(difference: Difference, gone_archived: Iterable[str],
                   new_archived: Iterable[str],
                   naming: Callable[[], Mapping[str, set[str]]]) -> set[str]:
    """The memories whose links may resolve otherwise after these changes: the changed, the
    new and the gone, and those whose links name the file name of a memory that came or went
    (`naming`: the graph's, asked for only then)."""
    again = set(difference.changed) | set(difference.added) | set(difference.removed)
    names = {_leaf(i) for i in (*difference.added, *difference.removed, *gone_archived,
                                *new_archived)}
    if names:
        named = naming()
        for name in (*names, EVERY_NAME):
            again.update(named.get(name, ()))
    return again


def updated_graph(graph: Graph, live: Mapping[str, Memory], archived: Iterable[str],
                  difference: Difference, gone_archived: Iterable[str] = (),
                  new_archived: Iterable[str] = ()) -> Graph:
    """`graph` after the changes `difference` says (and archived ids gone or new): the links of
    the memories that changed made again, and of those whose links name the file name of a
    memory that came or went (no other link can resolve differently); a new graph, `graph`
    left as it was for a page still reading it."""
    assert graph.resolver is not None
    graph.tables()
    gone_archived, new_archived = list(gone_archived), list(new_archived)
    resolver = graph.resolver
    if difference.added or difference.removed or gone_archived or new_archived:
        resolver = Resolver(live, (i[len(ARCHIVE_DIR) + 1:] for i in archived))
    out = Graph(links=dict(graph.links), supersedes=dict(graph.supersedes),
                backlinks=dict(graph.backlinks), resolver=resolver, shas=dict(graph.shas),
                naming=dict(graph.naming), names_of=dict(graph.names_of))
    again = resolved_again(difference, gone_archived, new_archived, lambda: graph.naming)
    for memory_id in sorted(again):
        touched = _targets(out, memory_id)
        out.links.pop(memory_id, None)
        out.supersedes.pop(memory_id, None)
        out.shas.pop(memory_id, None)
        named = out.names_of.pop(memory_id, frozenset())
        memory = live.get(memory_id)
        now = _add(out, resolver, memory) if memory is not None else []
        now_named = out.names_of.get(memory_id, frozenset())
        for name in named - now_named:  # copies: the graph before keeps its sets
            out.naming[name] = out.naming[name] - {memory_id}
            if not out.naming[name]:
                del out.naming[name]
        for name in now_named - named:
            out.naming[name] = out.naming.get(name, set()) | {memory_id}
        touched.update(target for target, _ in now)
        for target in touched:
            entries = {entry for entry in out.backlinks.get(target, ()) if entry[0] != memory_id}
            entries.update((memory_id, kind) for found, kind in now if found == target)
            if entries:
                out.backlinks[target] = sorted(entries)
            else:
                out.backlinks.pop(target, None)
    return out


def _resolver(live: Iterable[Memory], archived: Iterable[Memory]) -> Resolver:
    return Resolver((m.id for m in live), (m.id[len(ARCHIVE_DIR) + 1:] for m in archived))


class Saved(Protocol):
    """Where a graph is kept between processes (`saved_graph.Saved`: the state folder)."""

    def load(self, listing: Listing, resolver: Callable[[], Resolver],
             pause: Callable[[], None] | None = None) -> tuple[Graph, bool] | None: ...

    def save(self, graph: Graph, listing: Listing) -> None: ...

    def lookup(self, listing: Listing, memory_id: str,
               resolver: Callable[[], Resolver]) -> Graph | None: ...


SAVE_EVERY_SECONDS = 300.0  # a graph updated after changes is saved again at most this often


class _Kept:
    """One store's link graph and resolver, kept as long as the store (and its index) is open:
    a new launch of the page on an open store (`UiServer`) finds the graph made, and after a
    change updates it (`updated_graph`) instead of making it again. A new process finds the
    one its last launch saved (`Saved`), once, and brings it up to date the same way."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cached: tuple[Graph, Listing] | None = None
        self.resolving = threading.Lock()
        self.resolver: tuple[Listing, Resolver] | None = None
        self.looked_for_saved = False
        self.saved_looked_at = threading.Event()  # set once the saved graph was read (or not)
        self.saved: Graph | None = None  # the graph last saved (or read), and when
        self.saved_at = 0.0


_KEPT: weakref.WeakKeyDictionary[Any, _Kept] = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def _kept(store: Any) -> _Kept:
    with _KEPT_LOCK:
        found = _KEPT.get(store)
        if found is None:
            found = _KEPT[store] = _Kept()
        return found


def _kept_resolver(listing: Listing, store: Any = None) -> Resolver:
    """A resolver over the ids of `listing` (the last one made for `store`, when they are the
    same)."""
    kept = _kept(store) if store is not None else _Kept()
    with kept.resolving:
        if kept.resolver is not None:
            seen, made = kept.resolver
            if seen is listing or (seen.live.keys() == listing.live.keys()
                                   and seen.archived.keys() == listing.archived.keys()):
                kept.resolver = (listing, made)
                return made
        made = _resolver(listing.live.values(), listing.archived.values())
        kept.resolver = (listing, made)
        return made


class LinkGraph:
    """The graph of the folder, once per generation: after a change, only the links of the
    memories that changed, and of those naming a memory that came or went, are made again
    (`updated_graph`); remade when many changed (a pull, a dream run). The graph is kept with
    the store (`_Kept`), not with this page: a listing of the same memories finds it made."""

    def __init__(self, listings: Listings | None = None, saved: Saved | None = None) -> None:
        self._listings = listings or Listings()
        self._ready: tuple[int, Graph] | None = None  # this page's generation and its graph
        self._saved = saved

    def resolver(self, listing: Listing, store: Any = None) -> Resolver:
        """A resolver over the ids of `listing` (the last one made, when they are the same)."""
        return _kept_resolver(listing, store)

    def get(self, store: MemoryStore, generation: int,
            pause: Callable[[], None] | None = None) -> Graph:
        # Built under the store's lock: a memory's page that comes while the graph is being made
        # ahead of it (`warm`) makes what it needs alone (`of_one`) instead of a second graph.
        ready = self.ready(generation)
        if ready is not None:
            return ready
        kept = _kept(store)
        with kept.lock:
            listing = self._listings.get(store, generation)
            graph = self._kept_graph(kept, listing) or self._saved_graph(kept, listing, store)
            if graph is None:
                graph = build_graph(list(listing.live.values()), list(listing.archived.values()),
                                    self.resolver(listing, store), pause)
                kept.cached = (graph, listing)
            self._ready = (generation, graph)
        self._save(kept, force=False)
        return graph

    def _saved_graph(self, kept: _Kept, listing: Listing, store: Any,
                     pause: Callable[[], None] | None = None) -> Graph | None:
        """(Under `kept.lock`.) The graph the last process saved, brought to `listing`: looked
        for once, when this process has none."""
        if self._saved is None or kept.cached is not None or kept.looked_for_saved:
            return None
        kept.looked_for_saved = True
        try:
            # (Not through `self`: the saved graph is kept for good (`gc.freeze`) with what
            # it holds, and a cycle back to this page would keep the page after it stops.)
            found = self._saved.load(listing, functools.partial(_kept_resolver, listing, store),
                                     pause)
            if found is None:
                return None
            graph, as_saved = found
            kept.cached = (graph, listing)
            if as_saved:
                kept.saved, kept.saved_at = graph, time.monotonic()
            self._ready = (listing.generation, graph)
            return graph
        finally:
            kept.saved_looked_at.set()  # (after `_ready`: a page waiting for it finds it)

    def _save(self, kept: _Kept, *, force: bool) -> None:
        """Keep the graph for the next process: when it was made whole, at most every
        SAVE_EVERY_SECONDS after changes, and (`force`) as the page stops."""
        cached = kept.cached
        if self._saved is None or cached is None or cached[0] is kept.saved:
            return
        now = time.monotonic()
        if not force and kept.saved is not None and now - kept.saved_at < SAVE_EVERY_SECONDS:
            return
        kept.saved, kept.saved_at = cached[0], now
        self._saved.save(*cached)  # (a graph is never changed once made: no lock needed)

    def read_saved(self, store: MemoryStore, generation: int,
                   pause: Callable[[], None] | None = None) -> None:
        """At start-up, before anything else: the graph the last process saved, brought up to
        date (a tenth of a second at 20,000 memories), a bucket at a time (`pause` between
        some: a memory's page asked meanwhile is a lookup in the file, `of_one`). Never a
        whole graph: that is `get`'s, made while nobody waits."""
        kept = _kept(store)
        if kept.cached is not None or kept.looked_for_saved or self._saved is None:
            return
        try:
            with kept.lock:
                self._saved_graph(kept, self._listings.get(store, generation), store, pause)
        finally:
            kept.saved_looked_at.set()

    def save(self, store: Any) -> None:
        """As the page stops: the graph as it is now, for the next launch (kept with the store,
        no longer with this page: a page kept for good by `gc.freeze` does not keep it)."""
        self._save(_kept(store), force=True)
        self._ready = None

    @staticmethod
    def _kept_graph(kept: _Kept, listing: Listing) -> Graph | None:
        """The kept graph brought to `listing` (under `kept.lock`): the same when no memory
        changed, updated when a few did; None when there is none or many changed."""
        if kept.cached is None:
            return None
        before, seen = kept.cached
        if seen is listing:
            return before
        difference = differ(seen.live, listing.live)
        gone = seen.archived.keys() - listing.archived.keys()
        new = listing.archived.keys() - seen.archived.keys()
        if not difference and not gone and not new:
            graph = before
        elif many(difference, len(listing.live)):
            return None
        else:
            graph = updated_graph(before, listing.live, listing.archived, difference, gone, new)
        kept.cached = (graph, listing)
        return graph

    def ready(self, generation: int) -> Graph | None:
        """The graph of `generation` when it is made already; None (never waiting) when it is
        being made or not yet asked for."""
        ready = self._ready  # (one read of a tuple: no lock, so never behind a build)
        return ready[1] if ready is not None and ready[0] == generation else None

    def of_one(self, store: MemoryStore, generation: int, memory_id: str) -> Graph:
        """For one memory's page: the graph when it is made (or kept with the store, and a few
        memories changed since); else, in a new process, what the graph its last launch saved
        says of that memory (`Saved.lookup`: its bucket of the file, while the launch still
        reads the whole); else `one_memory_graph` (what the whole graph would say of that
        memory, without waiting for it to be made)."""
        graph = self.ready(generation)
        if graph is not None:
            return graph
        listing = self._listings.get(store, generation)
        kept = _kept(store)
        if kept.cached is None and self._saved is not None:
            # (Not behind the launch's read of the whole saved graph: 0.15 s of CPU at 50,000
            # memories, 0.4-0.6 s on the clock of two busy cores, for a page showing one.)
            found = self._saved.lookup(listing, memory_id,
                                       functools.partial(_kept_resolver, listing, store))
            if found is not None:
                return found
        if kept.lock.acquire(blocking=False):  # (never behind a whole graph being made)
            try:  # (not the whole saved graph: the lookup above is what it could say)
                graph = self._kept_graph(kept, listing)
            finally:
                kept.lock.release()
            if graph is not None:
                self._ready = (generation, graph)
                return graph
        return one_memory_graph(list(listing.live.values()), list(listing.archived.values()),
                                memory_id, self.resolver(listing, store))


def one_memory_graph(live: list[Memory], archived: list[Memory], memory_id: str,
                     resolver: Resolver | None = None) -> Graph:
    """What `build_graph(live, archived)` says of one memory, its links and backlinks (and its
    resolver), without resolving the links of every memory: at 20,000 memories the whole graph
    is about a second of CPU, seconds on two busy cores, for a page that shows one memory.

    A memory's links are resolved only when they could reach `memory_id`: a link resolves to
    an id whose last part (file name) is in the link as written (after `%`-decoding and NFC)
    or in the linking memory's own id (`[[.]]`, `[[..]]` climb its folders); a body with no
    `[`, or with an ASCII file name of the target, no `%` and NFC text, and neither name in
    it, cannot link there. Any other body has its links resolved, as the graph would.
    """
    resolver = resolver or _resolver(live, archived)
    graph = Graph(resolver=resolver)
    target = _nfc(memory_id)
    name = _leaf(target)
    backlinks: set[tuple[str, str]] = set()
    for memory in live:
        if memory.supersedes and target in resolver.live and \
                any(_nfc(s) == target for s in memory.supersedes):
            backlinks.add((memory.id, "supersedes"))
        own = memory.id == memory_id  # (its own links are the page's: always resolved)
        if not own and not _may_link_to(memory, name):
            continue
        found = resolver.links_of(memory)
        if own:
            graph.shas[memory.id] = memory.sha256
            if found:
                graph.links[memory.id] = found
        if any(link.id == target and link.id != memory.id for link in found):
            backlinks.add((memory.id, "link"))
    if backlinks:
        graph.backlinks[target] = sorted(backlinks)
    return graph


def _may_link_to(memory: Memory, name: str) -> bool:
    """Whether a link of `memory` could resolve to a memory of file name `name` (NFC): not
    when its body has no `[`, nor when the name is ASCII and neither its body nor its id holds
    it, with no `%` and NFC text (see `one_memory_graph`)."""
    body = memory.body
    return "[" in body and not (
        name.isascii() and name not in body and name not in memory.id and "%" not in body
        and unicodedata.is_normalized("NFC", body))


def one_memory_updated(saved: Graph, live: Mapping[str, Memory], memory_id: str,
                       again: Iterable[str], resolver: Resolver) -> Graph:
    """What `updated_graph` would say of one memory, from what a saved graph holds of it alone
    (`saved`: its links, supersedes, version and backlinks), `again` being the memories whose
    links may resolve otherwise now (the changed, the new, the gone, and those naming the file
    name of one that came or went). Its own links are kept unless it is one of them (then its
    page resolves them); its backlinks from those are dropped and found again, each resolved
    only when it could reach it (`_may_link_to`). `resolver` is over the memories of `live`."""
    graph = Graph(resolver=resolver)
    again = set(again)
    if memory_id not in again and memory_id in saved.shas:
        graph.shas[memory_id] = saved.shas[memory_id]
        if memory_id in saved.links:
            graph.links[memory_id] = saved.links[memory_id]
        if memory_id in saved.supersedes:
            graph.supersedes[memory_id] = saved.supersedes[memory_id]
    target = _nfc(memory_id)
    name = _leaf(target)
    backlinks = {entry for entry in saved.backlinks.get(target, ()) if entry[0] not in again}
    for source_id in sorted(again):
        memory = live.get(source_id)
        if memory is None:
            continue
        # (`target in live` first: a live id in NFC, without making the resolver over all.)
        if memory.supersedes and any(_nfc(s) == target for s in memory.supersedes) and \
                (target in live or target in resolver.live):
            backlinks.add((memory.id, "supersedes"))
        if _may_link_to(memory, name) and any(
                link.id == target and link.id != memory.id for link in resolver.links_of(memory)):
            backlinks.add((memory.id, "link"))
    if backlinks:
        graph.backlinks[target] = sorted(backlinks)
    return graph


def links_of_memory(store: MemoryStore, memory: Memory, graph: Graph | None = None) -> list[Link]:
    """What one memory's links reach now (for a memory shown on its own, archived ones too):
    from `graph` when it holds this version of the memory, else resolved against the store."""
    if graph is not None and graph.resolver is not None:
        if graph.shas.get(memory.id) == memory.sha256 and memory.sha256:
            return list(graph.links.get(memory.id, []))
        return graph.resolver.links_of(memory)
    live = [m.id for m in store.list()]
    archived = [m.id[len(ARCHIVE_DIR) + 1:] for m in store.list(archived=True) if m.archived]
    return Resolver(live, archived).links_of(memory)
