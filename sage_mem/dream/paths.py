"""Where autodream keeps things: the state folder's `autodream/` and the reports folder.

<state>/autodream/config.json              settings (optional; flags override)
<state>/autodream/state.json               last run, last finished run, session-gate cache
<state>/autodream/state.lock               one writer of state.json at a time
<state>/autodream/lock                     one dream or rollback at a time
<state>/autodream/runs/<runId>/manifest.json
<state>/autodream/runs/<runId>/journal.jsonl   every change as it happens
<state>/autodream/snapshots/<runId>/       rollback points
<state>/autodream/rollbacks.json           append-only log of rollbacks
<memory>/autodream/<runId>.md              the human reports
<state>/sessions/                          what the session gate counts (see gates.py)

Everything in the state folder is private (files 0600, folders 0700, whatever
the umask); the reports follow the memory folder's own policy
(`safe_io.file_mode`: private, or shared with the group the folder is shared with).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..disk.folder import DREAM_DIR, MemoryFolder
from ..disk.safe_io import make_private_dirs
from ..errors import DreamError

RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{4,}$")


class _InBase:
    """A file or folder of `<state>/autodream/`, named once (the module docstring's table)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, paths: DreamPaths, owner: type | None = None) -> Path:
        return paths.base / self.name


@dataclass(frozen=True)
class DreamPaths:
    """The files of autodream for one memory folder."""

    folder: MemoryFolder

    config_file = _InBase("config.json")
    state_file = _InBase("state.json")
    state_lock = _InBase("state.lock")
    lock_file = _InBase("lock")
    runs_dir = _InBase("runs")
    snapshots_dir = _InBase("snapshots")
    rollbacks_log = _InBase("rollbacks.json")

    @property
    def base(self) -> Path:
        return self.folder.state_path("autodream")

    @property
    def sessions_dir(self) -> Path:
        return self.folder.state_path("sessions")

    @property
    def reports_dir(self) -> Path:
        return self.folder.root / DREAM_DIR

    def check_reports_dir(self) -> None:
        """Refuse a run (a dream, a rollback) that could not write its report, before it is
        recorded or changes a file: `autodream` a link out of the folder, or a file (a
        person's, a remote's) where the reports' folder goes."""
        reports = self.reports_dir
        self.folder.check_contained(reports)
        if os.path.lexists(reports) and not reports.is_dir():
            raise DreamError(
                f"{reports}: not a folder; dream runs and rollbacks write their reports in "
                "it: move that file away and run again"
            )

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def snapshot_dir(self, run_id: str) -> Path:
        return self.snapshots_dir / run_id

    def report_file(self, run_id: str) -> Path:
        return self.reports_dir / f"{run_id}.md"

    def ensure(self) -> None:
        """Create the state folder's autodream folders, private (0700) whatever the umask."""
        for folder in (self.base, self.runs_dir, self.snapshots_dir):
            make_private_dirs(folder)
