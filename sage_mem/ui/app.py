"""The Starlette app: routes, error translation, the live feed's wiring, the static page.

Routes (all `/api/` ones need the token; see `security`):

    GET  /                          the page (a shell: no memory data in it)
    GET  /static/…                  its CSS, JavaScript and icon
    GET  /api/info                  folder, version, counts
    GET  /api/memories?q=&category=&tag=&offset=&limit=&count=&sort=   a page of the search (or
                                    list: newest, oldest or by id), its true total (count=0:
                                    only if known), facets
    GET  /api/memory?id=            one memory in full, with its sha256
    POST /api/memory                create ({create: true}) or update ({expectedSha256})
    GET  /api/raw?id=               a memory file's text, sha256 and parse error (the raw editor)
    POST /api/raw                   {id, text, expectedSha256}: exactly that text in its place
    POST /api/merge                 {id, base, mine}: the edit merged with the disk (no write)
    POST /api/archive               {id, reason}
    POST /api/restore               {id: "archive/…"}
    POST /api/rename                {id, newId}: a new id; links and supersedes follow
    POST /api/delete                {id: "archive/…", expectedSha256}: deleted for good (archived
                                    only; a person's act: no agent tool or dream can delete)
    GET  /api/archived              the archive
    GET  /api/audit?fresh=&known=   the audit's findings, with memory ids (incremental);
                                    known=1: the last result at once (`stale` if old)
    GET  /api/stars                 the star map's data
    GET  /api/runs                  dream runs and rollbacks, newest first
    GET  /api/runs/{run_id}?offset=&limit=&kind=   one run: manifest, report, a page of its
                                    changes (of one kind) as diffs, the count of each kind
    POST /api/runs/{run_id}/rollback   {scope, dryRun}
    POST /api/dream                 {mode, rulesOnly}: a dream run now (refused when the agent
                                    command cannot be started, unless rulesOnly)
    GET  /api/dream/settings        the dream's settings (from DreamConfig), the command in effect
    POST /api/dream/settings        {values, expectedSha256}: written to config.json, checked
    GET  /api/events?token=         server-sent events: `memories` and `runs` changed

Errors are JSON `{error, kind}`: 400 for a bad value or id, 404 for a missing
memory or run, 409 for a conflict (with the version on disk and the fields of
the write that differ from it), 423 for a locked memory or a dream in progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import (
    ConflictError,
    MemoryLocked,
    MemoryNotFound,
    RunNotFound,
    SageMemError,
    StoreLocked,
)
from ..store import MemoryStore
from . import api, audit, dreams, overview, settings
from .catalog import Catalog
from .links import LinkGraph
from .listing import Listings
from .live import ChangeFeed, watch_runs
from .responses import JSONResponse
from .saved_graph import GRAPH_FILE, Saved
from .security import Guard
from .warm import Warmer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..folders import Folders

STATIC = Path(__file__).resolve().parent / "static"
GRAPH_AFTER_SECONDS = 0.3
# The star map's answer is made ahead this long after the rest of a launch's (or a change's)
# work: the pages a person opens first come before it (at 50,000 memories it is 0.15 s of CPU).
STARS_AFTER_SECONDS = 2.0


def _status(exc: SageMemError) -> int:
    if isinstance(exc, (MemoryNotFound, RunNotFound)):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, (MemoryLocked, StoreLocked)):
        return 423
    return 400  # InvalidId, InvalidMemory, DreamError, …: the request cannot be carried out


async def _error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SageMemError)
    return JSONResponse({"error": str(exc), "kind": type(exc).__name__}, status_code=_status(exc))


async def _page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")


async def _events(request: Request) -> Response:
    feed: ChangeFeed = request.app.state.feed
    return StreamingResponse(
        feed.stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def create_app(
    store: MemoryStore,
    *,
    token: str,
    port: Callable[[], int | None],
    feed: ChangeFeed | None = None,
    folders: Folders | None = None,
    keep_catalog: bool = False,
) -> Guard:
    """The whole app behind its guard; `port` tells the guard which Host to accept.

    `folders` (several, `store` the personal one): the list and the search read them all
    (`api.py`), and a change in any of them is a change the page hears of. `keep_catalog`:
    `MEMORY.md` follows a hand edit of the memories (`catalog.py`), as `sage-mem ui` asks."""
    feed = feed or ChangeFeed()
    several = folders if folders is not None and folders.several else None

    def warm() -> None:
        """The summary and the link graph of the memories as they are now. (The audit is not
        warmed here: the page asks for it as it opens, for the badge, and it reads only what
        changed since the last launch.)"""
        generation = feed.generations["memories"]
        # Not beside a request already being answered (a page opened at a memory's address
        # asks as the launch begins, and finds its bucket of the saved graph on its own).
        app.state.answering.pause()
        # First the graph the last launch saved (a lookup then for a memory's page; its own
        # whole graph otherwise comes after the summary, below).
        app.state.graph.read_saved(store, generation, app.state.answering.pause)
        # The summary is for the list (whose own request makes it when it comes first): not
        # beside a memory's page being answered (a page opened at its address, which may be
        # reading the saved graph itself: 0.25 s of CPU at 50,000 memories beside it).
        app.state.answering.pause()
        app.state.summary.get(several if several is not None else store, generation)
        # MEMORY.md once the list's request for the change is answered.
        app.state.catalog.bring_in_line(generation, app.state.answering.pause)
        # The open list asks for the summary first; the graph (for a memory's page) waits a
        # moment, so that on two busy cores it does not take the GIL from that answer.
        if generation:  # after a change (at start-up nothing else is waiting)
            time.sleep(GRAPH_AFTER_SECONDS)
        if feed.generations["memories"] == generation:
            app.state.graph.get(store, generation, pause=app.state.answering.pause)
        if not generation or app.state.stars.asked:
            stars_later(generation)

    stars_timer: list[threading.Timer] = []

    def stars_later(generation: int) -> None:
        """The star map's answer, ahead of its first look (at a launch, or after a change once
        the map was looked at), a moment after the rest (the first pages a person opens after a
        launch or a change come first), when nobody waits for another answer."""

        def make() -> None:
            if feed.generations["memories"] != generation:
                return  # (the next change's warming makes it, if the map was looked at)
            app.state.answering.pause()
            try:
                overview.star_answer(app.state, store, generation, app.state.answering.pause)
            except Exception:  # noqa: BLE001 (ahead of time only: the look that needs it says)
                return

        for timer in stars_timer:
            timer.cancel()
        timer = threading.Timer(STARS_AFTER_SECONDS, make)
        timer.daemon = True
        stars_timer[:] = [timer]
        timer.start()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        warmer = Warmer(warm).start()

        def changed() -> None:
            app.state.answering.expect()  # (before the event: the page asks at once)
            feed.bump("memories")
            warmer.poke()

        removers = [each.add_listener(changed)
                    for each in (several.stores.values() if several is not None else (store,))]

        def remove() -> None:
            for each in removers:
                each()
            warmer.stop()
            for timer in stars_timer:
                timer.cancel()

        task = asyncio.create_task(
            watch_runs(feed, lambda: store.folder.state_path("autodream", "runs"))
        )
        try:
            yield
        finally:
            remove()
            feed.close()
            app.state.graph.save(store)  # for the next launch, as the graph is now
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    routes = [
        Route("/", _page),
        Route("/api/info", overview.info),
        Route("/api/memories", api.memories),
        Route("/api/memory", api.memory),
        Route("/api/memory", api.save, methods=["POST"]),
        Route("/api/raw", api.raw),
        Route("/api/raw", api.save_raw, methods=["POST"]),
        Route("/api/merge", api.merge, methods=["POST"]),
        Route("/api/archive", api.archive, methods=["POST"]),
        Route("/api/restore", api.restore, methods=["POST"]),
        Route("/api/rename", api.rename, methods=["POST"]),
        Route("/api/delete", api.delete, methods=["POST"]),
        Route("/api/archived", api.archived),
        Route("/api/audit", audit.audit_findings),
        Route("/api/stars", overview.stars),
        Route("/api/runs", dreams.runs),
        Route("/api/runs/{run_id}", dreams.run),
        Route("/api/runs/{run_id}/rollback", dreams.rollback, methods=["POST"]),
        Route("/api/dream", dreams.dream, methods=["POST"]),
        Route("/api/dream/settings", settings.settings),
        Route("/api/dream/settings", settings.save, methods=["POST"]),
        Route("/api/events", _events),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers={SageMemError: _error}
    )
    app.state.store = store
    app.state.folders = several
    app.state.feed = feed
    # The listing of each change, made once for the views that follow it (`listing.py`).
    listings = Listings()
    app.state.listings = listings
    app.state.summary = api.FolderSummary(listings if several is None else Listings())
    app.state.ranked = api.RankedCache()
    # Kept in the state folder between launches: a new process finds its graph made.
    app.state.graph = LinkGraph(listings, Saved(lambda: store.folder.state_path(*GRAPH_FILE)))
    app.state.size = overview.FolderSize(listings)
    app.state.stars = overview.StarAnswers()
    app.state.audit = audit.AuditState(listings)
    app.state.answering = audit.Answering()  # the audit waits while these are answered
    app.state.catalog = Catalog(store, keep_catalog)
    return Guard(app, token=token, port=port)
