"""Run ids (the liveness of a run's process is `disk/processes.py`'s).

A run id is `<UTC time>Z-<hex>`, e.g. `20261129T201500Z-1a2b`: ids sort by
start time, and the suffix keeps two runs in the same second apart (it is
chosen above every id already used in that second, so the order holds there too).
"""

from __future__ import annotations

import os
import secrets
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
