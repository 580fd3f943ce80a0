"""Whether a process that left something behind (a run, a lock, a temp file) still runs.

One place for the liveness rule: the dream's run records and lock, a sync's
record of its git locks, and the temp files of writes that were killed
(`safe_io.leftover_temps`) all ask `process_alive`.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def host_name() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """An opaque start stamp of process `pid` (Linux /proc), to tell a reused pid apart."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    rest = raw[raw.rfind(")") + 2 :].split()
    return rest[19] if len(rest) > 19 else None


def process_alive(pid: int | None, start: str | None = None, host: str | None = None) -> bool:
    """True when `pid` still runs (and is the same process as when `start` was read)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    if host and host != host_name():
        return True  # another machine's process: we cannot tell, so assume it lives
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
        if state[state.rfind(")") + 2 :].startswith("Z"):
            return False  # killed, not yet reaped
    except OSError:
        pass
    if start is not None:
        now_start = process_start(pid)
        if now_start is not None and now_start != start:
            return False
    return True


def own_identity() -> dict[str, object]:
    """What a run records about its own process, for crash detection."""
    return {"pid": os.getpid(), "pidStart": process_start(os.getpid()), "host": host_name()}
