"""The change feed behind the page's live updates (server-sent events).

Two things can change under an open page: the memories (the store calls its
listeners after every change to the index: the watcher's refresh after an
editor save, a `git pull`, an agent writing through MCP, or this server's own
writes), and the dream runs (their manifests live in the state folder, which no
watcher follows, so it is looked at once a second, and only while a page is
listening). Each kind has a generation counter; an event stream sends the
counters whenever one moves, and the page re-fetches what it shows. Nothing
runs while idle but that one stat per second with a page open.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

KINDS = ("memories", "runs")
HEARTBEAT_SECONDS = 15.0
RUNS_POLL_SECONDS = 1.0


class ChangeFeed:
    """Generation counters per kind, and the event streams waiting on them."""

    def __init__(self) -> None:
        self.generations = dict.fromkeys(KINDS, 0)
        self.closed = False
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @property
    def listening(self) -> int:
        """How many event streams are open."""
        return len(self._waiters)

    def bump(self, kind: str = "memories") -> None:
        """Note a change; thread-safe (the store calls it from the watcher's thread)."""
        with self._lock:
            self.generations[kind] += 1
            waiters = list(self._waiters)
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass  # that stream's loop is closed: it is going away anyway

    def close(self) -> None:
        """End every event stream (the server is stopping)."""
        self.closed = True
        self.bump("memories")

    async def stream(self, *, heartbeat: float = HEARTBEAT_SECONDS) -> AsyncIterator[str]:
        """Server-sent event text: a `hello`, then an event for each kind that moved."""
        event = asyncio.Event()
        waiter = (asyncio.get_running_loop(), event)
        with self._lock:
            self._waiters.add(waiter)
            seen = dict(self.generations)
        try:
            # `retry` makes the browser reconnect within a second if the stream drops.
            yield f"retry: 1000\nevent: hello\ndata: {json.dumps(seen)}\n\n"
            while not self.closed:
                try:
                    await asyncio.wait_for(event.wait(), timeout=heartbeat)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                event.clear()
                if self.closed:
                    break
                with self._lock:
                    now = dict(self.generations)
                for kind in KINDS:
                    if now[kind] != seen[kind]:
                        yield f"event: {kind}\ndata: {json.dumps({'generation': now[kind]})}\n\n"
                seen = now
        finally:
            with self._lock:
                self._waiters.discard(waiter)


def runs_signature(runs_dir: Path) -> tuple[tuple[str, int], ...]:
    """What changes when a run starts, moves on or ends: the mtimes of its folder and manifest,
    and the size of its journal (a run appends each change to it as it goes)."""
    try:
        names = sorted(os.listdir(runs_dir))
    except OSError:
        return ()
    signature: list[tuple[str, int]] = []
    for name in names[-8:]:
        try:
            signature.append((name, os.stat(runs_dir / name / "manifest.json").st_mtime_ns))
        except OSError:
            signature.append((name, 0))
        try:
            journal = os.stat(runs_dir / name / "journal.jsonl")
            signature.append((name + "/journal", journal.st_size))
        except OSError:
            pass
    try:
        signature.append(("", os.stat(runs_dir).st_mtime_ns))
    except OSError:
        pass
    return tuple(signature)


async def watch_runs(
    feed: ChangeFeed, runs_dir: Callable[[], Path], *, every: float = RUNS_POLL_SECONDS
) -> None:
    """Bump `runs` when the dream runs change; looks only while a page is listening.

    The first look is at start-up, so a run that ends between a page's
    connecting and the next look is still seen as a change.
    """
    last = await asyncio.to_thread(runs_signature, runs_dir())
    while not feed.closed:
        await asyncio.sleep(every)
        if not feed.listening:
            continue
        now = await asyncio.to_thread(runs_signature, runs_dir())
        if now != last:
            feed.bump("runs")
        last = now
