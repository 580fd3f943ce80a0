"""Autodream settings: defaults, the optional `config.json` in the state folder, and flags.

    {"minHours": 24, "minSessions": 5, "keepSnapshots": 10, "staleLockMinutes": 60,
     "agentCommand": ["claude", "-p", "{prompt}", "--mcp-config", "{mcp_config}"],
     "agentTimeoutSeconds": 600, "agentMaxCalls": 200, "autoFromHook": false}

Every key is optional; a flag given to `run_dream` wins over the file.
`autoFromHook: true` lets the session-start hook start `dream --auto` in the
background (see `sage_mem.agents.hooks`; the environment variable SAGE_MEM_AUTODREAM
overrides it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..errors import DreamError


@dataclass(frozen=True)
class DreamConfig:
    """What the gates, the snapshots and the optional model pass are allowed to do."""

    min_hours: float = 24.0
    min_sessions: int = 5
    session_scan_minutes: float = 10.0
    keep_snapshots: int = 10
    stale_lock_minutes: float = 60.0
    agent_command: tuple[str, ...] = ()
    agent_timeout_seconds: float = 600.0
    agent_max_calls: int = 200
    auto_from_hook: bool = False

    @classmethod
    def load(cls, path: Path) -> DreamConfig:
        """The defaults overlaid with `path` (when it exists). Raises DreamError when unusable."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            raise DreamError(
                f"{path}: cannot read the autodream settings: {exc}", path=path
            ) from None
        if not isinstance(data, dict):
            raise DreamError(f"{path}: autodream settings must be a JSON object", path=path)
        known = {_camel(f.name): f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise DreamError(f"{path}: unknown autodream setting {key!r}", path=path)
            values[known[key]] = value
        return cls().with_overrides(**values)

    def with_overrides(self, **overrides: Any) -> DreamConfig:
        """A copy with the given settings (None leaves one as it is), each checked."""
        given = {key: value for key, value in overrides.items() if value is not None}
        for key, value in list(given.items()):
            given[key] = _checked(key, value)
        return replace(self, **given)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _checked(key: str, value: Any) -> Any:
    if key == "auto_from_hook":
        if not isinstance(value, bool):
            raise DreamError(f"autoFromHook must be true or false, not {value!r}")
        return value
    if key == "agent_command":
        if isinstance(value, str) or not all(isinstance(part, str) for part in value):
            raise DreamError(
                "agentCommand must be a list of strings (the command and its arguments)"
            )
        return tuple(value)
    if key in ("min_sessions", "keep_snapshots", "agent_max_calls"):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < (1 if key == "keep_snapshots" else 0)
        ):
            raise DreamError(
                f"{_camel(key)} must be a whole number of at least "
                f"{1 if key == 'keep_snapshots' else 0}, not {value!r}"
            )
        return value
    if key in ("min_hours", "session_scan_minutes", "stale_lock_minutes", "agent_timeout_seconds"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise DreamError(f"{_camel(key)} must be a number of at least 0, not {value!r}")
        return float(value)
    raise DreamError(f"unknown autodream setting {key!r}")
