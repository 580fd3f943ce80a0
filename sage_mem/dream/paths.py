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

import re
from dataclasses import dataclass
from pathlib import Path

from ..disk.folder import DREAM_DIR, MemoryFolder
from ..disk.safe_io import make_private_dirs

RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{4,}$")


@dataclass(frozen=True)
class DreamPaths:
    """The files of autodream for one memory folder."""

    folder: MemoryFolder

    @property
    def base(self) -> Path:
        return self.folder.state_path("autodream")

    @property
    def config_file(self) -> Path:
        return self.base / "config.json"

    @property
    def state_file(self) -> Path:
        return self.base / "state.json"

    @property
    def lock_file(self) -> Path:
        return self.base / "lock"

    @property
    def runs_dir(self) -> Path:
        return self.base / "runs"

    @property
    def snapshots_dir(self) -> Path:
        return self.base / "snapshots"

    @property
    def rollbacks_log(self) -> Path:
        return self.base / "rollbacks.json"

    @property
    def sessions_dir(self) -> Path:
        return self.folder.state_path("sessions")

    @property
    def reports_dir(self) -> Path:
        return self.folder.root / DREAM_DIR

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
