"""Autodream settings: defaults, the optional `config.json` in the state folder, and flags.

    {"minHours": 24, "minSessions": 5, "autoFromHook": true, "autoMode": "rewrite",
     "agentCommand": ["claude", "-p", "{prompt}", "--mcp-config", "{mcp_config}"],
     "inputSource": "memory+sessions", "sessionsDir": "~/.claude/projects/-home-me-shop"}

Every key is optional; a flag given to `run_dream` wins over the file. A bad
value is one clear line naming the key, what it must be and the file.

`DreamConfig` is a plain frozen dataclass whose fields describe themselves, so
a settings form (the page) can be derived from it: `DreamConfig.settings()`
lists the fields in order; each field's `metadata` holds `kind` (number,
whole, bool, choice, command, path or zone), `doc` (one line for people), and
`minimum` or `choices` where they apply; `key_of(field)` is its camelCase
name in config.json. `DreamConfig.describe()` gives all of it as JSON-ready
data; `to_json()` gives a config in the file's form, and
`with_overrides(**values)` checks values as `load` does.

`autoFromHook: true` lets the session-start hook start `dream --auto` in the
background (see `sage_mem.agents.hooks`; the environment variable SAGE_MEM_AUTODREAM
overrides it); `autoMode` is the mode of every automatic run.
"""

from __future__ import annotations

import json
import os
from dataclasses import Field, dataclass, field, fields, replace
from datetime import tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import DreamError, InvalidMemory
from ..memory.json_view import camel

NUMBER, WHOLE, BOOL, CHOICE, COMMAND, PATH, ZONE = (
    "number", "whole", "bool", "choice", "command", "path", "zone"
)
MEMORY_ONLY, WITH_SESSIONS = "memory", "memory+sessions"
# Every number setting is a duration (hours, minutes or seconds) that becomes a `timedelta`:
# past this, in any of those units, none can hold it (a lock "stale after 1e300 minutes").
MAX_DURATION = 1e9


def _setting(default: Any, kind: str, doc: str, **limits: Any) -> Any:
    if kind in (NUMBER, WHOLE):
        limits.setdefault("minimum", 0)  # a count or a duration is never negative
    return field(default=default, metadata={"kind": kind, "doc": doc, **limits})


@dataclass(frozen=True)
class DreamConfig:
    """What the gates, the snapshots and the optional model pass are allowed to do."""

    min_hours: float = _setting(
        24.0, NUMBER, "Hours since the last finished run before an automatic run may start.",
    )
    min_sessions: int = _setting(
        5, WHOLE, "Sessions (Claude Code hook or any MCP client) with activity since the last "
        "finished run before an automatic run may start.",
    )
    session_scan_minutes: float = _setting(
        10.0, NUMBER, "How long a count of the sessions is reused before the folder is scanned "
        "again.",
    )
    keep_snapshots: int = _setting(
        10, WHOLE, "Rollback points kept (the newest; protective ones are never rotated out).",
        minimum=1,
    )
    stale_lock_minutes: float = _setting(
        60.0, NUMBER, "After this long a run still holding the lock is named as possibly stuck "
        "(with its pid); a live run's lock is never taken over.",
    )
    rollback_scope: str = _setting(
        "touched", CHOICE, "The scope of a rollback that names none (the CLI, the page): "
        "touched puts back what the run changed, all the whole folder as it was before it.",
        choices=("touched", "all"),
    )
    agent_command: tuple[str, ...] = _setting(
        (), COMMAND, "The agent command of the optional model pass, as a list of strings "
        "(empty: no model pass).",
    )
    agent_timeout_seconds: float = _setting(
        600.0, NUMBER, "Seconds the model pass may take before it is stopped.",
    )
    agent_max_calls: int = _setting(
        200, WHOLE, "Tool calls the model pass may make.",
    )
    auto_from_hook: bool = _setting(
        False, BOOL, "Let the Claude Code session-start hook start an automatic run in the "
        "background.",
    )
    auto_mode: str = _setting(
        "report", CHOICE, "The mode of an automatic run (`dream --auto`, the hook): report "
        "changes nothing, rewrite changes the folder after a rollback point.",
        choices=("report", "rewrite"),
    )
    input_source: str = _setting(
        MEMORY_ONLY, CHOICE, "What the model pass may read: the memories only, or also the "
        "agent's session transcripts (search_sessions; they may hold private text).",
        choices=(MEMORY_ONLY, WITH_SESSIONS),
    )
    sessions_dir: str = _setting(
        "", PATH, "Where the session transcripts are (Claude Code's JSONL files); empty: "
        "~/.claude/projects (or $CLAUDE_CONFIG_DIR/projects). Nothing outside it is read.",
    )

    time_zone: str = _setting(
        "", ZONE, "The writers' time zone, an IANA name such as Asia/Shanghai: the day a UTC "
        "stamp was written on, which \"yesterday\" counts from (a stamp with its own offset "
        "says it); empty: this machine's.",
    )

    @classmethod
    def settings(cls) -> list[Field[Any]]:
        """Every setting, in order, each with its metadata (`key`, `kind`, `doc`, limits)."""
        return list(fields(cls))

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """Every setting as JSON-ready data, for a settings form: key, kind, default, doc, limits.

            [{"key": "minHours", "kind": "number", "default": 24.0, "minimum": 0,
              "doc": "Hours since the last finished run before an automatic run may start."}, …]
        """
        defaults = cls().to_json()
        described = []
        for spec in fields(cls):
            key = key_of(spec)
            entry: dict[str, Any] = {"key": key, "kind": spec.metadata["kind"],
                                     "default": defaults[key], "doc": spec.metadata["doc"]}
            for limit in ("minimum", "choices"):
                if limit in spec.metadata:
                    value = spec.metadata[limit]
                    entry[limit] = list(value) if isinstance(value, tuple) else value
            described.append(entry)
        return described

    @classmethod
    def load(cls, path: Path) -> DreamConfig:
        """The defaults overlaid with `path` (when it exists). Raises DreamError when unusable."""
        from ..disk.safe_io import read_file

        try:  # never waits on a FIFO, never reads /dev/zero for ever
            data = json.loads(read_file(path, limit=1 << 20).raw or b"")
        except FileNotFoundError:
            return cls()
        except InvalidMemory as exc:
            raise DreamError(f"cannot read the autodream settings: {exc}", path=path) from None
        except (OSError, ValueError, RecursionError) as exc:  # (JSON nested too deep)
            raise DreamError(
                f"{path}: cannot read the autodream settings: {exc}", path=path
            ) from None
        if not isinstance(data, dict):
            raise DreamError(f"{path}: autodream settings must be a JSON object", path=path)
        known = {key_of(f): f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise DreamError(f"{path}: unknown autodream setting {key!r}", path=path)
            if value is None:
                raise DreamError(
                    f"{key} must not be null (leave it out for the default) (in {path})",
                    path=path,
                )
            values[known[key]] = value
        try:
            return cls().with_overrides(**values)
        except DreamError as exc:
            raise DreamError(f"{exc} (in {path})", path=path) from None

    def with_overrides(self, **overrides: Any) -> DreamConfig:
        """A copy with the given settings (None leaves one as it is), each checked."""
        by_name = {f.name: f for f in fields(self)}
        given = {}
        for name, value in overrides.items():
            if value is None:
                continue
            spec = by_name.get(name)
            if spec is None:
                raise DreamError(f"unknown autodream setting {name!r}")
            given[name] = _checked(spec, value)
        return replace(self, **given)

    def to_json(self) -> dict[str, Any]:
        """The settings as config.json holds them (camelCase keys, lists for commands)."""
        out: dict[str, Any] = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            out[key_of(spec)] = list(value) if isinstance(value, tuple) else value
        return out

    def zone(self) -> tzinfo | None:
        """`time_zone` as a tzinfo; None (this machine's) when not set."""
        return ZoneInfo(self.time_zone) if self.time_zone else None

    def sessions_root(self) -> Path:
        """The folder `search_sessions` may read: `sessions_dir`, or Claude Code's projects."""
        if self.sessions_dir:
            return Path(os.path.expanduser(self.sessions_dir))
        base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
        return Path(base) / "projects"


def key_of(spec: Field[Any]) -> str:
    """A setting's name in config.json: its field name in camelCase (min_hours -> minHours)."""
    return camel(spec.name)


def _checked(spec: Field[Any], value: Any) -> Any:
    key, kind = key_of(spec), spec.metadata["kind"]
    if kind == BOOL:
        if not isinstance(value, bool):
            raise DreamError(f"{key} must be true or false, not {value!r}")
        return value
    if kind == COMMAND:
        if (
            isinstance(value, (str, bytes))
            or not isinstance(value, (list, tuple))
            or not all(isinstance(part, str) for part in value)
        ):
            raise DreamError(f"{key} must be a list of strings (the command and its arguments)")
        if value and not value[0].strip():
            raise DreamError(f"{key}: the command (its first string) must not be empty")
        return tuple(value)
    if kind == CHOICE:
        choices = spec.metadata["choices"]
        if value not in choices:
            listed = " or ".join(json.dumps(choice) for choice in choices)
            raise DreamError(f"{key} must be {listed}, not {value!r}")
        return value
    if kind == ZONE:
        if not isinstance(value, str):
            raise DreamError(f"{key} must be a time zone name as a string, not {value!r}")
        if value:
            try:
                ZoneInfo(value)
            except (ValueError, OSError, ZoneInfoNotFoundError):
                raise DreamError(
                    f"{key} must be a time zone name such as Asia/Shanghai or UTC, not {value!r}"
                ) from None
        return value
    if kind == PATH:
        if not isinstance(value, str) or "\0" in value:
            raise DreamError(f"{key} must be a folder path as a string, not {value!r}")
        if value and not os.path.isabs(os.path.expanduser(value)):
            raise DreamError(f"{key} must be an absolute path (or start with ~), not {value!r}")
        return value
    minimum = spec.metadata["minimum"]
    if kind == WHOLE:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise DreamError(f"{key} must be a whole number of at least {minimum}, not {value!r}")
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value != value  # NaN
        or value in (float("inf"), float("-inf"))
        or value < minimum
    ):
        raise DreamError(f"{key} must be a number of at least {minimum}, not {value!r}")
    if value > MAX_DURATION:
        raise DreamError(f"{key} must be a number of at most {MAX_DURATION:,.0f}, not {value!r}")
    return float(value)
