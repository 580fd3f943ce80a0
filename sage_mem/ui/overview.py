"""What the page shows of the folder as a whole: the star map's data and the footer's counts.

`star_data` is every live memory as a star with the link graph's edges;
`FolderSize` keeps each file's size once a version, so that the footer after a
change costs the stat of what changed, not a walk of the folder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..disk.home import home as find_home
from ..memory.value import CATEGORIES, Memory
from ..store import MemoryStore
from .api import store_of
from .links import PAUSE_EVERY, Graph, build_graph
from .listing import Listings, same
from .responses import JSONResponse, json_bytes


def star_data(store: MemoryStore, graph: Graph | None = None,
              memories: list[Memory] | None = None) -> dict[str, Any]:
    """Every live memory as a star, and the real relations between them as lines.

    In columns, one list a field (`ids`, `descriptions`, ...), a relation as the places of its
    two stars in them (`links`, `supersedes`: flat pairs): at 20,000 memories half the bytes
    of an object a star and a relation, encoded and parsed in half the time, and the page finds
    a relation's stars without a lookup by id. A category and a date are sent once, each
    star's as its place in `category_names` and `dates` (where `null` stands for none): at 50,000
    memories their texts were a third of the answer (2.5 of 5.7 MB), and the page parses each
    date once."""
    memories = store.list() if memories is None else memories  # (in any order)
    ids = list(map(attrgetter("id"), memories))
    place = {memory_id: n for n, memory_id in enumerate(ids)}
    graph = graph or build_graph(memories, [])
    links: list[int] = []
    pair = links.append
    resolved = graph.links
    for at, source in enumerate(ids):
        out = resolved.get(source)
        if not out:
            continue
        if len(out) == 1:  # (most memories: no set to make)
            target = out[0].id
            to = place.get(target) if target and target != source else None
            if to is not None:
                pair(at)
                pair(to)
            continue
        seen: set[str] = set()
        for link in out:
            target = link.id
            if target and target != source and target not in seen:
                to = place.get(target)
                if to is not None:
                    seen.add(target)
                    pair(at)
                    pair(to)
    supersedes: list[int] = []
    for at, source in enumerate(ids):
        for target in graph.supersedes.get(source, ()):
            to = place.get(target)
            if to is not None:
                supersedes += (at, to)
    categories = list(map(attrgetter("category"), memories))
    category_names = list(dict.fromkeys(categories))
    created = list(map(attrgetter("created"), memories))
    updated = list(map(attrgetter("updated"), memories))
    dates = list(dict.fromkeys(created + updated))
    category_at = {name: n for n, name in enumerate(category_names)}.__getitem__
    date_at = {text: n for n, text in enumerate(dates)}.__getitem__
    return {
        "total": len(memories),
        "ids": ids,
        "descriptions": list(map(attrgetter("description"), memories)),
        "categories": list(map(category_at, categories)),
        "category_names": category_names,
        "lengths": [len(m.body) + len(m.description) for m in memories],
        "created": list(map(date_at, created)),
        "updated": list(map(date_at, updated)),
        "dates": dates,
        "links": links,
        "supersedes": supersedes,
    }


class StarAnswers:
    """The star map's answer, encoded once a generation of the memories: a second look at the
    map (or a second tab) costs nothing until something changes. Made ahead of the first look
    at a launch, and after a change once the map was looked at (`app.warm`: 0.15 s of CPU at
    50,000 memories that the map's first draw waited for)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[int, bytes] | None = None
        self.asked = False  # the map was looked at in this launch

    def get(self, generation: int, make: Callable[[], dict[str, Any]],
            pause: Callable[[], None] | None = None) -> bytes:
        """`pause` (made ahead of a look): called between two fields of the JSON, each
        encoded apart (at 50,000 memories one encoding of the whole held the interpreter for
        some 50 ms), to the same bytes as `JSONResponse`'s."""
        kept = self._kept
        if kept is not None and kept[0] == generation:
            return kept[1]
        with self._lock:  # (one made at a time: two tabs opening the map share it)
            kept = self._kept
            if kept is not None and kept[0] == generation:
                return kept[1]
            data = make()
            if pause is None:
                body = bytes(JSONResponse(data).body)
            else:
                parts = []
                for key, value in data.items():
                    pause()
                    parts.append(json_bytes(key) + b":" + json_bytes(value))
                body = b"{" + b",".join(parts) + b"}"
            self._kept = (generation, body)
            return body


async def stars(request: Request) -> Response:
    store = store_of(request)
    state = request.app.state

    def work() -> bytes:
        state.stars.asked = True
        return star_answer(state, store, state.feed.generations["memories"])

    return Response(await run_in_threadpool(work), media_type="application/json")


def star_answer(state: Any, store: MemoryStore, generation: int,
                pause: Callable[[], None] | None = None) -> bytes:
    """The star map's answer for `generation` (the page's `state`), made once."""
    # The memories of the change's listing (made once for every view), not a sort of all.
    return state.stars.get(generation, lambda: star_data(
        store, state.graph.get(store, generation),
        list(state.listings.get(store, generation).live.values())), pause)


def folder_bytes(store: MemoryStore) -> int:
    """The size of the memory files (live and archived), from a stat of each: no file is read."""
    total = 0
    for archived in (False, True):
        for path in store.folder.iter_files(archived=archived):
            try:
                total += path.stat().st_size
            except OSError:
                continue
    return total


class FolderSize:
    """What the footer says of the folder: how many memories, archived ones, and the bytes of
    the memory files, each file's size taken once a version of it (a change costs the stat of
    what changed, not a walk of the folder), and the files that could not be read each time."""

    def __init__(self, listings: Listings | None = None) -> None:
        self._listings = listings or Listings()
        self._lock = threading.Lock()
        self._sizes: dict[str, tuple[Memory, int]] = {}
        self.stats = 0  # how many files were looked at (tests)

    def get(self, store: MemoryStore, generation: int,
            pause: Callable[[], None] | None = None) -> dict[str, int]:
        """`pause` is called now and then while files are looked at (a launch's first footer
        stats every file: 20,000 of them beside the list and a memory's page, which it waits
        for, as the audit does)."""
        listing = self._listings.get(store, generation)
        with self._lock:
            sizes: dict[str, tuple[Memory, int]] = {}
            total = 0
            for group in (listing.live, listing.archived):
                for memory_id, memory in group.items():
                    kept = self._sizes.get(memory_id)
                    if kept is None or not same(kept[0], memory):
                        if pause is not None and self.stats % PAUSE_EVERY == 0:
                            pause()
                        kept = (memory, self._size(memory.path))
                    sizes[memory_id] = kept
                    total += kept[1]
            self._sizes = sizes
            folder = store.folder
            for problem in store.problems():  # files that are memories but could not be read
                if folder.id_for(problem.path) or folder.archived_id_for(problem.path):
                    total += self._size(problem.path)
        return {"memories": len(listing.live), "archived": len(listing.archived),
                "bytes": total}

    def _size(self, path: Path) -> int:
        self.stats += 1
        try:
            return os.stat(path).st_size
        except OSError:
            return 0


def info_data(store: MemoryStore, size: dict[str, int] | None = None) -> dict[str, Any]:
    from .. import __version__
    from ..search.embedder import unavailable

    home = str(find_home() or "")
    folder = str(store.root)
    shown = "~" + folder[len(home):] if home and folder.startswith(home + os.sep) else folder
    counts = size or FolderSize().get(store, 0)
    return {
        "folder": folder,
        "folderShown": shown,
        "version": __version__,
        "memories": counts["memories"],
        "archived": counts["archived"],
        "bytes": counts["bytes"],
        "problems": len(store.problems()),
        "categories": list(CATEGORIES),
        # None: semantic search runs here; else the one line saying why not (the settings show it)
        "semanticUnavailable": unavailable(),
    }


async def info(request: Request) -> JSONResponse:
    store, state = store_of(request), request.app.state

    def work() -> dict[str, Any]:
        return info_data(store, state.size.get(store, state.feed.generations["memories"],
                                               pause=state.answering.pause))

    return JSONResponse(await run_in_threadpool(work))
