"""Usage statistics kept in the state folder (`stats.json`), never in the memory folder.

Retrieval counts and last-used times change on every use; keeping them out of
the memory files means a git user sees no churn from searching.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .files import atomic_write
from .locks import file_lock
from .memory import now_iso


class Stats:
    """Retrieval counts and feedback per memory id, read and written under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError, OSError):
            return {}
        return data if isinstance(data, dict) else {}

    def retrievals(self, memory_id: str) -> int:
        entry = self.load().get(memory_id)
        return _count(entry.get("retrievals")) if isinstance(entry, dict) else 0

    def retrieval_counts(self) -> dict[str, int]:
        """Retrievals per memory id."""
        return {
            key: _count(entry.get("retrievals"))
            for key, entry in self.load().items() if isinstance(entry, dict)
        }

    def record(self, ids: Iterable[str], *, event: str = "retrievals") -> None:
        """Add one `event` (retrievals, helpful, unhelpful) to each id, with the time."""
        ids = list(ids)
        if not ids:
            return
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            data = self.load()
            stamp = now_iso()
            for memory_id in ids:
                entry = data.get(memory_id)
                if not isinstance(entry, dict):
                    entry = data[memory_id] = {}
                entry[event] = _count(entry.get(event)) + 1
                entry["lastUsed"] = stamp
            self._save(data)

    def rename(self, old: str, new: str) -> None:
        """Carry an id's counts over to its new id (after an archive)."""
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            data = self.load()
            if old in data:
                data[new] = data.pop(old)
                self._save(data)

    def _save(self, data: dict[str, Any]) -> None:
        text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n"
        atomic_write(self.path, text.encode("utf-8"))


def _count(value: Any) -> int:
    """A count from stats.json, which a person may have edited: anything odd counts as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return max(int(value), 0)
