"""The page's audit: one run at a time, incremental per changed file, shown as it goes.

`AuditState` keeps what each file gave (in the state folder, across launches)
and the last result; `Answering` counts the requests a person waits for, and
the audit waits between two files while there are any. `/api/audit` is
`audit_findings`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..errors import InvalidMemory
from ..memory.value import Memory
from ..store import MemoryStore
from .api import store_of
from .listing import Listing, Listings, differ
from .responses import JSONResponse


class Answering:
    """The requests a person is waiting for (the list, a search, a memory's page) being answered
    now, or on their way after a change on disk (`expect`). The audit (seconds, a minute at
    50,000 memories, in the same interpreter), the graph and the footer made ahead of time wait
    between two files (or memories) while there are any, up to LONGEST_PAUSE at a time so that
    they always end."""

    LONGEST_PAUSE = 0.5
    # After a change is heard, how long background work waits for the page's request for it
    # (the event goes through the browser, which asks for the list again) when none comes.
    EXPECT_SECONDS = 1.0

    def __init__(self) -> None:
        self._count = 0
        self._expected = 0.0  # until when a request is on its way (time.monotonic)
        self._idle = threading.Condition()

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        with self._idle:
            self._count += 1
        try:
            yield
        finally:
            with self._idle:
                self._count -= 1
                if not self._count:
                    self._expected = 0.0  # (what a change asked for is answered)
                    self._idle.notify_all()

    def expect(self) -> None:
        """A change on disk was heard: the page's request for it is on its way. From now (the
        store's `MEMORY.md`, the event through the browser are the change's way to the list
        too, and at 50,000 memories a launch's audit beside them doubled it) until it is
        answered, or EXPECT_SECONDS."""
        with self._idle:
            self._expected = time.monotonic() + self.EXPECT_SECONDS

    def pause(self) -> None:
        if not self._count and not self._expected:  # (no lock: the common case costs nothing)
            return
        with self._idle:
            until = time.monotonic() + self.LONGEST_PAUSE
            while True:
                now = time.monotonic()
                if self._expected and self._expected <= now:
                    self._expected = 0.0
                if not (self._count or self._expected) or now >= until:
                    return
                self._idle.wait(min(until, self._expected if not self._count else until) - now)


AUDIT_CACHE = ("ui", "audit-cache.json")  # in the state folder, never the memory folder
AUDIT_LAST = ("ui", "audit-last.json")  # the last result, shown at once while the next runs
KEEP_LAST_EVERY_SECONDS = 60.0
# After a change the audit looks at the changed files only; the whole folder is walked at the
# first audit of a launch, on "Check again", and at most this long after the last walk (for a
# file the store's index does not follow: a memory file is followed by its watcher).
WALK_EVERY_SECONDS = 300.0


class AuditState:
    """The audit as the open pages see it: incremental per changed file, one run per change.

    Files whose stat is unchanged are not read again (`FileResults`), also
    across launches (what each file gave is kept in the state folder, and a
    file's parsed memory is the index's), and a result is shared by every
    open tab until the memories change again (the state folder and other
    files can change too, so "Check again" asks for a fresh run with `fresh`,
    which checks every link again).
    """

    def __init__(self, listings: Listings | None = None) -> None:
        self._lock = threading.Lock()
        self._files: Any = None
        # With the page's listings: the memories and problems the last run saw, so that the
        # next looks only at the files of what changed since (`changed_files`), and when the
        # folder was last walked whole.
        self._listings = listings
        self._seen: tuple[Listing, set[Path]] | None = None
        self._walked_at = 0.0
        self._cached: tuple[int, dict[str, Any]] | None = None
        self._kept_at: float | None = None
        # The run under way, as far as it got: (files checked, its findings list, about how
        # many files there are), for `known` while there is no result to show yet.
        self._running: tuple[int, list[Any], int] | None = None

    def get(self, store: MemoryStore, generation: int, *, fresh: bool = False,
            pause: Callable[[], None] | None = None) -> dict[str, Any]:
        from ..checks.audit import FileResults

        with self._lock:  # one audit at a time: a second tab waits for the first's result
            if not fresh and self._cached is not None and self._cached[0] == generation:
                return self._cached[1]
            if self._files is None:
                self._files = FileResults(store.folder.state_path(*AUDIT_CACHE), pause=pause)
            self._files.read_memories_from(_index_lookup(store))
            if fresh:
                self._files.forget_links()
            about = len(store.index) + len(store.problems())

            def progress(checked: int, findings: list[Any]) -> None:
                self._running = (checked, findings, about)

            changed, seen = None, None
            if self._listings is not None:
                seen = (self._listings.get(store, generation),
                        {problem.path for problem in store.problems()})
                now = time.monotonic()
                if fresh or self._seen is None or now - self._walked_at >= WALK_EVERY_SECONDS:
                    self._walked_at = now
                else:
                    changed = changed_files(self._seen, seen)
            try:
                data = audit_data(store, self._files, progress, pause, changed)
            finally:
                self._running = None
            self._seen = seen
            self._cached = (generation, data)
            now = time.monotonic()
            if self._kept_at is None or now - self._kept_at >= KEEP_LAST_EVERY_SECONDS:
                self._kept_at = now  # (an open page audits after every change)
                _keep_last(store, data)
            return data

    def known(self, store: MemoryStore, generation: int) -> dict[str, Any]:
        """At once, without waiting for a run: the last result (of this launch, or the last
        launch's), with `stale` when the memories changed since; `{"pending": true}` if none."""
        cached = self._cached
        if cached is not None:
            return {**cached[1], "stale": cached[0] != generation}
        from ..disk.safe_io import read_or_absent

        try:
            seen = read_or_absent(store.folder.state_path(*AUDIT_LAST), limit=16 * 1024 * 1024)
            data = json.loads(seen.raw) if seen.raw is not None else None
        except (InvalidMemory, ValueError):
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
            return self._so_far(store)
        return {**data, "stale": True}

    def _so_far(self, store: MemoryStore) -> dict[str, Any]:
        """What the run under way found in the files it checked so far (a folder's first audit:
        seconds at thousands of memories), `running`; `{"pending": true}` before its first."""
        from ..checks.audit import Finding

        running = self._running
        if running is None:
            return {"pending": True}
        checked, findings, about = running
        found = sorted(list(findings), key=Finding.sort_key)  # a copy: the run appends to it
        data = {"findings": [_finding(store, f) for f in found], "count": len(found),
                "checked": checked, "running": True, "about": max(about, checked)}
        return data


def changed_files(before: tuple[Listing, set[Path]],
                  after: tuple[Listing, set[Path]]) -> set[Path]:
    """The files that may differ between two moments of the folder: those of the memories
    (live or archived) that came, went or changed between the two listings, and every file the
    store could not read at either (a problem is no memory of the listing)."""
    files = before[1] | after[1]
    for old, new in ((before[0].live, after[0].live),
                     (before[0].archived, after[0].archived)):
        difference = differ(old, new)
        files.update(old[i].path for i in (*difference.removed, *difference.changed))
        files.update(new[i].path for i in (*difference.added, *difference.changed))
    return files


def _keep_last(store: MemoryStore, data: dict[str, Any]) -> None:
    from ..disk.safe_io import atomic_write, make_private_dirs, text_bytes

    path = store.folder.state_path(*AUDIT_LAST)
    try:
        make_private_dirs(path.parent)
        atomic_write(path, text_bytes(json.dumps(data, ensure_ascii=False)), durable=False)
    except OSError:
        pass  # only a head start for the next launch's Audit tab


def _index_lookup(store: MemoryStore) -> Any:
    """A memory by id as the index holds it now, for the audit's reuse of unchanged files."""
    by_id: dict[str, Memory] | None = None

    def lookup(memory_id: str) -> Memory | None:
        nonlocal by_id
        if by_id is None:  # once per audit, and only when a saved result asks
            by_id = {memory.id: memory for memory in store.list()}
        return by_id.get(memory_id)
    return lookup


def audit_data(store: MemoryStore, cache: Any = None, progress: Any = None,
               pause: Any = None, changed: set[Path] | None = None) -> dict[str, Any]:
    from ..checks.audit import audit

    report = audit(store, cache=cache, progress=progress, pause=pause, changed=changed)
    data = report.to_dict()
    data["findings"] = [_finding(store, finding) for finding in report.findings]
    return data


def _finding(store: MemoryStore, finding: Any) -> dict[str, Any]:
    data: dict[str, Any] = finding.to_dict()
    data["id"] = _id_for_finding(store, data.get("path"))
    return data


def _id_for_finding(store: MemoryStore, rel: Any) -> str | None:
    if not isinstance(rel, str) or not rel.endswith(".md"):
        return None
    path = store.folder.root / rel
    memory_id = store.folder.id_for(path) or store.folder.archived_id_for(path)
    if memory_id is None or (memory_id not in store.index and not path.is_file()):
        return None
    return memory_id


async def audit_findings(request: Request) -> JSONResponse:
    store = store_of(request)
    state = request.app.state
    fresh = request.query_params.get("fresh") == "1"
    if request.query_params.get("known") == "1":
        return JSONResponse(state.audit.known(store, state.feed.generations["memories"]))

    def run() -> dict[str, Any]:
        generation = state.feed.generations["memories"]
        # MEMORY.md first (the audit checks it), once the list for the change is answered.
        state.catalog.bring_in_line(generation, state.answering.pause)
        return state.audit.get(store, generation, fresh=fresh, pause=state.answering.pause)

    return JSONResponse(await run_in_threadpool(run))
