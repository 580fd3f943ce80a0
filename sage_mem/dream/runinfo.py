"""Run ids and the liveness of the process that owns a run or a lock.

A run id is `<UTC time>Z-<hex>`, e.g. `20261129T201500Z-1a2b`: ids sort by
start time, and the suffix keeps two runs in the same second apart (it is
chosen above every id already used in that second, so the order holds there too).
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import UTC, datetime
from pathlib import Path


def new_run_id(now: datetime, taken_in: Path) -> str:
    """A fresh, sortable run id that is not a folder name in `taken_in` yet."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    floor = 0
    try:
        for name in os.listdir(taken_in):
            if name.startswith(stamp + "-"):
                try:
                    floor = max(floor, int(name.split("-", 1)[1], 16) + 1)
                except ValueError:
                    continue
    except FileNotFoundError:
        pass
    suffix = max(floor, secrets.randbelow(0x8000))
    return f"{stamp}-{suffix:04x}"


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
