"""The list of dream runs as the page asks for it: each run's line kept while its files are
unchanged, and a running run's journal read on from where the last look stopped.

The page asks for the list every second while a run it started runs (to show its progress),
and again whenever the runs' folder changes. Read whole each time, one run of 50,000
memories (a manifest of 29 MB, a journal as long) made each answer cost seconds of the
process the run itself runs in, and the answers queued behind each other.
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from typing import NamedTuple

from ..dream.manifest import JOURNAL, MANIFEST, JournalFold, Manifest
from ..dream.paths import DreamPaths
from ..dream.runner import RunInfo, list_runs, run_info
from ..dream.snapshots import has_snapshot
from ..store import MemoryStore


class _Held(NamedTuple):
    key: tuple[int, int, int]  # the manifest file's inode, size and mtime when it was read
    line: RunInfo | None  # a finished (complete) run's line
    manifest: Manifest | None  # a running run's manifest as saved, with `fold`
    fold: JournalFold | None


class RunLines:
    """What the page's list of runs read, by run folder (one for the page's process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}

    def runs(self, store: MemoryStore) -> list[RunInfo]:
        """Every run, oldest first, as `list_runs` gives them."""
        with self._lock:  # one listing at a time: a second asker waits, then reads little
            return list_runs(store, read=self._line)

    def _line(self, paths: DreamPaths, run_id: str) -> RunInfo:
        run_dir = paths.run_dir(run_id)
        try:
            stat = os.stat(run_dir / MANIFEST)
        except OSError:
            return run_info(paths, run_id, Manifest.load(paths, run_id))  # says why it cannot
        key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        held = self._held.get(str(run_dir))
        if held is None or held.key != key:
            # Saved anew (finished, rolled back, marked interrupted): read again.
            manifest = Manifest.load(paths, run_id, journal=False)
            if manifest.data.get("complete"):
                held = _Held(key, run_info(paths, run_id, manifest), None, None)
            else:
                held = _Held(key, None, manifest, JournalFold())
            self._held[str(run_dir)] = held
        if held.line is not None:
            # A rollback point can be rotated out without the manifest changing.
            return replace(held.line, rollback_point=has_snapshot(paths, run_id))
        assert held.manifest is not None and held.fold is not None
        if held.fold.read(run_dir / JOURNAL):
            held.manifest.take(held.fold)
        return run_info(paths, run_id, held.manifest)
