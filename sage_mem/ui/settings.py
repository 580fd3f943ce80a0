"""The dream's settings on the page: read, shown and written back to `config.json`.

The fields are derived from `DreamConfig` itself (its dataclass fields, their
types and defaults; a field's `metadata` may add `label`, `help` and, for a
text field, `choices`), so a setting added there appears on the page with no
second list. Values are checked by `DreamConfig.with_overrides`, the check a
run itself applies, before anything is written.

`config.json` lives in the state folder. It is read through the checked read
and written through `safe_io.commit` against the bytes read, expecting the
sha256 the page was shown: an edit by hand in between is a conflict, never
overwritten. Keys the page was not asked to change stay as they are, in their
order; a key is added only when its value differs from the default.

The agent command in effect is shown with where it was found (`PATH` of this
process, as a run would start it); one that cannot be found is said so before
a run, and `POST /api/dream` refuses it unless asked to run with the rules only.
The agent CLIs found on PATH (`AGENTS`: Claude Code, Codex) are offered as
choices, each with its whole command line.
"""

from __future__ import annotations

import json
import os
import shutil
import typing
from dataclasses import MISSING, fields
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..disk.home import home as find_home
from ..errors import ConflictError, DreamError, FileChanged, InvalidMemory
from ..store import MemoryStore
from .api import json_body, store_of
from .responses import JSONResponse

CONFIG_LIMIT = 64 * 1024

# The agent CLIs the page offers for `agentCommand` when they are on PATH, each with the
# command line docs/dream.md gives for it (tested end to end in tests/test_real_dream_agents.py).
AGENTS: dict[str, tuple[str, ...]] = {
    "claude": (
        "claude", "-p", "{prompt}", "--mcp-config", "{mcp_config}", "--strict-mcp-config",
        "--tools", "", "--allowedTools", "mcp__sage-mem-dream", "--no-session-persistence",
    ),
    "codex": (
        "codex", "exec", "--skip-git-repo-check", "--ephemeral",
        "--sandbox", "read-only", "--disable", "shell_tool",
        "--disable", "view_image", "--disable", "multi_agent", "--disable", "goals",
        "--disable", "image_generation", "--disable", "browser_use",
        "--disable", "computer_use", "--disable", "apps",
        "-c", 'web_search="disabled"',
        "-c", 'mcp_servers.sage-mem-dream.command="sage-mem"',
        "-c", 'mcp_servers.sage-mem-dream.args=["--dir", "{memory_dir}", "serve", '
              '"--dream-run", "{run_id}"]',
        "-c", 'mcp_servers.sage-mem-dream.env={SAGE_MEM_STATE_DIR="{state_dir}"}',
        "-c", "mcp_servers.sage-mem-dream.required=true",
        "-c", 'mcp_servers.sage-mem-dream.default_tools_approval_mode="approve"',
        "-c", 'mcp_servers.sage-mem={command="sage-mem", enabled=false}',
        "{prompt}",
    ),
}


# DreamConfig's own kinds of setting, as the form's controls are named.
_CONTROLS = {"whole": "int", "path": "text", "zone": "text"}


def _label(name: str) -> str:
    words = name.split("_")
    return " ".join([words[0].capitalize(), *words[1:]])


def _kind(hint: Any) -> tuple[str, list[Any] | None]:
    """The form control for a field's type: bool, int, number, command, choice or text."""
    if hint is bool:
        return "bool", None
    if hint is int:
        return "int", None
    if hint is float:
        return "number", None
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "choice", list(typing.get_args(hint))
    if origin in (tuple, list):
        return "command", None
    return "text", None


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def describe_fields() -> list[dict[str, Any]]:
    """Every setting of DreamConfig, in its order: key, label, kind, default (and help, choices)."""
    from ..dream.config import DreamConfig, key_of

    hints = typing.get_type_hints(DreamConfig)
    out = []
    for item in fields(DreamConfig):
        kind, choices = _kind(hints.get(item.name))
        if "kind" in item.metadata:  # DreamConfig's fields say their kind themselves
            kind = _CONTROLS.get(item.metadata["kind"], item.metadata["kind"])
        if item.default is not MISSING:
            default = item.default
        elif item.default_factory is not MISSING:
            default = item.default_factory()
        else:
            default = None
        meta = dict(item.metadata or {})
        choices = list(meta.get("choices", ())) or choices
        out.append({
            "key": key_of(item),
            "name": item.name,
            "label": str(meta.get("label") or _label(item.name)),
            "help": str(meta.get("help") or meta.get("doc") or ""),
            "kind": "choice" if choices else kind,
            "choices": choices,
            "minimum": meta.get("minimum"),
            "default": _plain(default),
        })
    return out


def command_status(command: typing.Sequence[str]) -> dict[str, Any]:
    """The agent command a run would start, where it is, or why it cannot be started."""
    argv = list(command)
    if not argv:
        return {"argv": [], "configured": False, "found": None, "problem": None}
    program = argv[0]
    if os.sep in program:
        found = program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    else:
        found = shutil.which(program)
    problem = None
    if found is None:
        problem = (
            f"the agent command {program!r} is not found"
            + ("" if os.sep in program else " on PATH")
            + ": a run would have no model pass (the rules still run). "
            "Install it, or change agentCommand"
        )
    return {"argv": argv, "configured": True, "found": found, "problem": problem}


def agents_found() -> list[dict[str, Any]]:
    """The agent CLIs on PATH (as a run would find them), each with its command line."""
    found = []
    for name, argv in AGENTS.items():
        where = shutil.which(name)
        if where is not None:
            found.append({"name": name, "found": where, "argv": list(argv)})
    return found


def _read_config(store: MemoryStore) -> tuple[Any, dict[str, Any] | None, str | None]:
    """(what was read, the file's JSON object or None, why it cannot be used)."""
    from ..disk.safe_io import read_or_absent
    from ..dream.paths import DreamPaths

    path = DreamPaths(store.folder).config_file
    try:
        seen = read_or_absent(path, limit=CONFIG_LIMIT)
    except InvalidMemory as exc:
        return None, None, str(exc)
    if seen.raw is None:
        return seen, {}, None
    try:
        data = json.loads(seen.raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # (nested too deep)
        return seen, None, f"{path}: not valid JSON ({exc}); fix it by hand"
    if not isinstance(data, dict):
        return seen, None, f"{path}: must be a JSON object; fix it by hand"
    return seen, data, None


def settings_data(store: MemoryStore) -> dict[str, Any]:
    from ..dream.config import DreamConfig
    from ..dream.paths import DreamPaths
    from ..memory.file_format import sha256_bytes

    path = DreamPaths(store.folder).config_file
    seen, data, problem = _read_config(store)
    config = DreamConfig()
    if problem is None:
        try:
            config = DreamConfig.load(path)
        except DreamError as exc:
            problem = str(exc)
    described = describe_fields()
    for item in described:
        item["value"] = _plain(getattr(config, item["name"]))
        item["inFile"] = bool(data) and item["key"] in (data or {})
    raw = seen.raw if seen is not None else None
    home = str(find_home() or "")
    shown = "~" + str(path)[len(home):] if home and str(path).startswith(home + os.sep) \
        else str(path)
    return {
        "file": str(path),
        "fileShown": shown,
        "exists": raw is not None,
        "sha256": sha256_bytes(raw) if raw is not None else "",
        "problem": problem,
        "fields": described,
        "command": command_status(config.agent_command),
        "agents": agents_found(),
    }


def save_settings(store: MemoryStore, values: dict[str, Any], expected: str) -> dict[str, Any]:
    """Write `values` (by config.json's keys) into config.json, if it is still what was shown."""
    from ..disk.safe_io import commit, make_private_dirs
    from ..dream.config import DreamConfig
    from ..dream.paths import DreamPaths
    from ..memory.file_format import sha256_bytes

    paths = DreamPaths(store.folder)
    path = paths.config_file
    seen, data, problem = _read_config(store)
    if seen is None or data is None:
        raise DreamError(problem or f"{path}: cannot be read")
    actual = sha256_bytes(seen.raw) if seen.raw is not None else ""
    if expected != actual:
        raise ConflictError(
            f"{path.name} changed since the page read it: nothing was written; "
            "the settings shown now are the ones on disk",
            path=path, actual_sha256=actual,
        )
    described = {item["key"]: item for item in describe_fields()}
    unknown = sorted(set(values) - set(described))
    if unknown:
        raise DreamError(f"unknown autodream setting {unknown[0]!r}")
    merged = dict(data)
    for key, value in values.items():
        if key not in merged and value == described[key]["default"]:
            continue  # the default, not written out
        merged[key] = value
    # The check a run applies, over the whole file as it would be.
    DreamConfig().with_overrides(**{described[k]["name"]: v for k, v in merged.items()
                                    if k in described})
    extra = sorted(set(merged) - set(described))
    if extra:
        raise DreamError(f"{path}: unknown autodream setting {extra[0]!r}; fix it by hand")
    if merged == data:
        return settings_data(store)
    text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    make_private_dirs(paths.base)
    try:
        commit(path, text.encode("utf-8"), seen, mode=0o600, limit=CONFIG_LIMIT)
    except FileChanged:
        raise ConflictError(
            f"{path.name} changed while it was written: nothing was written", path=path
        ) from None
    return settings_data(store)


async def settings(request: Request) -> JSONResponse:
    return JSONResponse(await run_in_threadpool(settings_data, store_of(request)))


async def save(request: Request) -> JSONResponse:
    data = await json_body(request)
    values = data.get("values")
    expected = data.get("expectedSha256")
    if not isinstance(values, dict):
        raise DreamError("values must be an object of settings")
    if not isinstance(expected, str):
        raise DreamError("expectedSha256 is required (empty when there is no config.json)")
    return JSONResponse(await run_in_threadpool(save_settings, store_of(request), values,
                                                expected))

