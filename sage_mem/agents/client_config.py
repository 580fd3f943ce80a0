"""What `install` writes into a client's config files, and how it finds its own entries again.

The edits themselves (split from `install.py`, which plans, backs up and writes
them): sage-mem's server entry and hook commands in JSON (Claude Code, Cursor,
Codex's hooks.json), edited in place through `json_edit`, and the server table
in Codex's TOML, edited by hand-written code (see `install.py` for why not
tomlkit). Each edit keeps everything that is not sage-mem's, byte for byte, and
checks that the result parses to exactly the data meant, else refuses
(SageMemError). `doctor` reads what is installed through `load_json`,
`load_toml` and `is_our_hook_entry`.

This module never imports `mcp`.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from ..errors import SageMemError
from . import json_edit

SERVER_NAME = "sage-mem"
DIR_ENV = "SAGE_MEM_DIR"
HOOK_EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
               "Stop": "stop", "PreCompact": "pre-compact"}
EXECUTABLES = ("sage-mem", "sage-mem.exe")


# what is ours


def is_our_hook(command: str, sub: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (
        len(words) >= 3
        and words[-2:] == ["hook", sub]
        and any(Path(word).name in EXECUTABLES or word == "sage_mem" for word in words[:-2])
    )


def merge_entry(existing: Any, wanted: Mapping[str, Any]) -> dict[str, Any]:
    """Our server entry, keeping keys (and env variables) a user added to it."""
    entry = dict(existing) if isinstance(existing, Mapping) else {}
    for key, value in wanted.items():
        if key != "env":
            entry[key] = value
    env = dict(entry["env"]) if isinstance(entry.get("env"), Mapping) else {}
    env.pop(DIR_ENV, None)
    env.update(wanted.get("env") or {})
    if env:
        entry["env"] = env
    else:
        entry.pop("env", None)
    return entry


# JSON files


def load_json(text: str, path: Path) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SageMemError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); fix it first, "
            "nothing was changed", path=path,
        ) from None
    except (ValueError, RecursionError) as exc:  # an integer past 4,300 digits; nested too deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise SageMemError(f"{path}: not valid JSON for sage-mem ({why}); fix it first, "
                           "nothing was changed", path=path) from None
    if not isinstance(data, dict):
        raise SageMemError(
            f"{path}: expected a JSON object at the top, found {type(data).__name__}; "
            "nothing was changed", path=path,
        )
    return data


def _object_at(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise SageMemError(
            f"{path}: {key!r} is a {type(value).__name__}, expected an object; nothing was changed",
            path=path,
        )
    return value


def _dump_json(data: Any, original: str) -> str:
    """The whole file written anew (a new file, or an edit the minimal one could not make)."""
    unit = json_edit.indent_unit(original)
    # Keep a file that spells non-ASCII as \u escapes that way, so the diff shows only our change.
    ascii_only = bool(original) and original.isascii()
    return json_edit.dumps(data, unit=unit, ensure_ascii=ascii_only) + "\n"


def _checked(new: str, expected: Any, original: str) -> str:
    """The minimal edit when it reads back as `expected`; else the whole file written anew."""
    try:
        if json.loads(new) == expected:
            return new
    except ValueError:
        pass
    return _dump_json(expected, original)


def _editor(text: str, path: Path) -> json_edit.Editor:
    try:
        return json_edit.Editor(text)
    except ValueError as exc:  # json.loads took it: a form this parser does not (never seen)
        raise SageMemError(f"{path}: cannot edit this JSON in place ({exc}); nothing was changed",
                           path=path) from None


def edit_json_server(text: str, path: Path, wanted: Mapping[str, Any]) -> str:
    data = load_json(text, path)
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        _object_at(data, "mcpServers", path)  # raises, naming what it is
    current = (servers or {}).get(SERVER_NAME)
    entry = merge_entry(current, wanted)
    if servers is not None and current == entry and text:
        return text
    expected = copy.deepcopy(data)
    expected.setdefault("mcpServers", {})[SERVER_NAME] = entry
    if not text.strip():
        return _dump_json(expected, text)
    editor = _editor(text, path)
    member = editor.root.member("mcpServers")
    if member is None:
        editor.add_member(editor.root, "mcpServers", {SERVER_NAME: entry})
    else:
        ours = member[2].member(SERVER_NAME)
        if ours is None:
            editor.add_member(member[2], SERVER_NAME, entry)
        else:
            editor.replace(ours[2], entry)
    return _checked(editor.text, expected, text)


def edit_json_hooks(text: str, path: Path, commands: Mapping[str, str]) -> str:
    data = load_json(text, path)
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        _object_at(data, "hooks", path)  # raises, naming what it is
    wanted = dict(hooks or {})
    for event, command in commands.items():
        groups = wanted.get(event, [])
        if not isinstance(groups, list):
            raise SageMemError(
                f"{path}: hooks.{event} is a {type(groups).__name__}, expected a list; "
                "nothing was changed", path=path,
            )
        wanted[event] = _with_our_hook(groups, command, HOOK_EVENTS[event])
    if hooks is not None and wanted == hooks and text:
        return text
    expected = copy.deepcopy(data)
    expected["hooks"] = wanted
    if not text.strip():
        return _dump_json(expected, text)
    editor = _editor(text, path)
    member = editor.root.member("hooks")
    if member is None:
        editor.add_member(editor.root, "hooks", {event: wanted[event] for event in commands})
        return _checked(editor.text, expected, text)
    obj = member[2]
    added = []
    for event in commands:
        before, after = (hooks or {}).get(event), wanted[event]
        if before == after:
            continue
        found = obj.member(event)
        if found is None:
            added.append((event, after))
        else:
            _edit_list(editor, found[2], before or [], after)
    editor.add_members(obj, added)
    return _checked(editor.text, expected, text)


def _edit_list(editor: json_edit.Editor, node: json_edit.Node, before: list[Any],
               after: list[Any]) -> None:
    """Change the JSON list at `node` from `before` to `after` touching as few items as it can."""
    if node.kind != "array" or len(node.items) != len(before):
        editor.replace(node, after)
    elif len(after) == len(before) + 1 and after[:-1] == before:
        editor.add_item(node, after[-1])
    elif len(after) == len(before):
        for item, old, new in zip(node.items, before, after, strict=True):
            if old != new:
                editor.replace(item, new)
    elif len(after) < len(before) and _is_subsequence(after, before):
        doomed, j = [], 0
        for i, old in enumerate(before):
            if j < len(after) and old == after[j]:
                j += 1
            else:
                doomed.append(i)
        editor.remove_items(node, doomed)
    else:
        editor.replace(node, after)


def _is_subsequence(short: list[Any], long: list[Any]) -> bool:
    it = iter(long)
    return all(any(item == other for other in it) for item in short)


def remove_json_server(text: str, path: Path) -> str | None:
    data = load_json(text, path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return text
    expected = copy.deepcopy(data)
    del expected["mcpServers"][SERVER_NAME]
    editor = _editor(text, path)
    member = editor.root.member("mcpServers")
    assert member is not None
    if expected["mcpServers"]:
        editor.remove_members(member[2], {SERVER_NAME})
    else:
        del expected["mcpServers"]
        editor.remove_members(editor.root, {"mcpServers"})
    if not expected:
        return None  # nothing else was in it: as before the install, no file
    return _checked(editor.text, expected, text)


def remove_json_hooks(text: str, path: Path) -> str | None:
    data = load_json(text, path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return text
    wanted = dict(hooks)
    for event, sub in HOOK_EVENTS.items():
        groups = hooks.get(event)
        if isinstance(groups, list):
            kept = _without_our_hook(groups, sub)
            if kept != groups:
                wanted[event] = kept
                if not kept:
                    del wanted[event]
    if wanted == hooks:
        return text
    expected = copy.deepcopy(data)
    editor = _editor(text, path)
    member = editor.root.member("hooks")
    assert member is not None
    if not wanted:
        del expected["hooks"]
        editor.remove_members(editor.root, {"hooks"})
    else:
        expected["hooks"] = wanted
        gone = {event for event in hooks if event not in wanted}
        for event in wanted:
            found = member[2].member(event)
            if found is not None and wanted[event] != hooks[event]:
                _edit_list(editor, found[2], hooks[event], wanted[event])
        editor.remove_members(member[2], gone)
    if not expected:
        return None
    return _checked(editor.text, expected, text)


def nothing_left(text: str | None) -> str | None:
    """None (the file goes) for an uninstall's edit that leaves an empty object."""
    try:
        return None if text is None or json.loads(text) == {} else text
    except ValueError:
        return text


def _each_group(groups: list[Any],
                edit: Callable[[list[Any]], list[Any] | None]) -> list[Any]:
    """The event's hook groups, each one's `hooks` list put through `edit`: the same list keeps
    the group as it is, None leaves it out; a group without such a list is kept as it is."""
    out: list[Any] = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            out.append(group)
            continue
        kept = edit(entries)
        if kept is entries:
            out.append(group)
        elif kept is not None:
            out.append({**group, "hooks": kept})
    return out


def _without_our_hook(groups: list[Any], sub: str) -> list[Any]:
    """The event's hook groups without sage-mem's hook, and without a group it alone was in."""

    def edit(entries: list[Any]) -> list[Any] | None:
        kept = [entry for entry in entries if not is_our_hook_entry(entry, sub)]
        return entries if len(kept) == len(entries) else kept or None

    return _each_group(groups, edit)


def is_our_hook_entry(entry: Any, sub: str) -> bool:
    return (
        isinstance(entry, dict) and entry.get("type") == "command"
        and isinstance(entry.get("command"), str) and is_our_hook(entry["command"], sub)
    )


def _with_our_hook(groups: list[Any], command: str, sub: str) -> list[Any]:
    """The event's hook groups with exactly one sage-mem hook, running `command`."""
    found = False

    def edit(entries: list[Any]) -> list[Any] | None:
        nonlocal found
        kept: list[Any] = []
        for entry in entries:
            if not is_our_hook_entry(entry, sub):
                kept.append(entry)
            elif not found:
                found = True
                kept.append({**entry, "command": command})
            # a second sage-mem hook on the same event would inject everything twice: drop it
        return kept if kept or not entries else None

    out = _each_group(groups, edit)
    if not found:
        out.append({"hooks": [{"type": "command", "command": command}]})
    return out


# TOML (Codex)


_HEADER = re.compile(r"^[ \t]*\[(?!\[)(?P<key>[^\[\]#]+)\][ \t]*(?:#.*)?$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def load_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SageMemError(f"{path}: not valid TOML ({exc}); fix it first, nothing was changed",
                           path=path) from None
    except RecursionError:  # arrays or tables nested past Python's recursion limit
        raise SageMemError(f"{path}: not valid TOML for sage-mem (nested too deeply); fix it "
                           "first, nothing was changed", path=path) from None


def edit_toml_server(text: str, path: Path, wanted: Mapping[str, Any]) -> str:
    data = load_toml(text, path)
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise SageMemError(f"{path}: mcp_servers is not a table; nothing was changed", path=path)
    existing = servers.get(SERVER_NAME)
    entry = merge_entry(existing, {k: v for k, v in wanted.items() if k != "type"})
    if existing == entry:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    table = _toml_table(("mcp_servers", SERVER_NAME), entry, newline)
    lines = text.splitlines(keepends=True)
    regions = _our_regions(lines)
    if existing is None:
        new_text = text
        if new_text and not new_text.endswith("\n"):
            new_text += newline
        if new_text.strip() and not new_text.endswith(newline * 2):
            new_text += newline
        new_text += table
    elif regions:
        start = regions[0][0]
        for first, last in reversed(regions):
            del lines[first:last]
        lines.insert(start, table)
        new_text = "".join(lines)
    else:
        raise SageMemError(
            f"{path}: mcp_servers.{SERVER_NAME} is written in a form sage-mem does not edit "
            f"(not a [mcp_servers.{SERVER_NAME}] table); remove it and run install again",
            path=path,
        )
    expected = copy.deepcopy(data)
    expected.setdefault("mcp_servers", {})[SERVER_NAME] = entry
    _check_toml(new_text, expected, path, (
        f"{path}: could not add [mcp_servers.{SERVER_NAME}] without disturbing the rest of "
        "the file; add it by hand (see `sage-mem install codex --dry-run`)"
    ))
    return new_text


def _check_toml(new_text: str, expected: Any, path: Path, refusal: str) -> None:
    """Refuse (SageMemError, `refusal`) a TOML edit that does not read as exactly `expected`."""
    try:
        check = tomllib.loads(new_text)
    except (tomllib.TOMLDecodeError, RecursionError):
        check = None
    if check != expected:
        raise SageMemError(refusal, path=path)


def remove_toml_server(text: str, path: Path) -> str | None:
    """The file without the [mcp_servers.sage-mem] tables install wrote (and the blank line
    before them); None when nothing else was in it."""
    data = load_toml(text, path)
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return text
    lines = text.splitlines(keepends=True)
    regions = _our_regions(lines)
    if not regions:
        raise SageMemError(
            f"{path}: mcp_servers.{SERVER_NAME} is written in a form sage-mem does not edit "
            f"(not a [mcp_servers.{SERVER_NAME}] table); take it out by hand", path=path,
        )
    for first, last in reversed(regions):
        # the blank line install put before the table, unless the file starts with it
        if first > 0 and not lines[first - 1].strip():
            first -= 1
        del lines[first:last]
    new_text = "".join(lines)
    expected = copy.deepcopy(data)
    del expected["mcp_servers"][SERVER_NAME]
    if not expected["mcp_servers"]:
        del expected["mcp_servers"]
    _check_toml(new_text, expected, path, (
        f"{path}: could not take [mcp_servers.{SERVER_NAME}] out without disturbing the "
        "rest of the file; take it out by hand"
    ))
    return new_text if new_text.strip() else None


def _our_regions(lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges of the [mcp_servers.sage-mem...] tables, without trailing blanks and comments."""
    headers: list[tuple[int, tuple[str, ...] | None]] = []
    for i, line in enumerate(lines):
        match = _HEADER.match(line.rstrip("\r\n"))
        if match:
            headers.append((i, _key_path(match.group("key"))))
        elif line.lstrip().startswith("[["):
            headers.append((i, None))
    regions: list[tuple[int, int]] = []
    for n, (start, key) in enumerate(headers):
        if key is None or key[:2] != ("mcp_servers", SERVER_NAME):
            continue
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        while end - 1 > start and _blank_or_comment(lines[end - 1]):
            end -= 1
        if regions and all(not line.strip() for line in lines[regions[-1][1]:start]):
            start = regions.pop()[0]  # [..sage-mem] and [..sage-mem.env] with blank lines between
        regions.append((start, end))
    return regions


def _blank_or_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _key_path(text: str) -> tuple[str, ...] | None:
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if rest[0] == '"':
            match = re.match(r'"((?:[^"\\]|\\.)*)"', rest)
            if not match:
                return None
            try:
                parts.append(json.loads(match.group(0)))
            except ValueError:
                return None
        elif rest[0] == "'":
            match = re.match(r"'([^']*)'", rest)
            if not match:
                return None
            parts.append(match.group(1))
        else:
            match = re.match(r"[A-Za-z0-9_-]+", rest)
            if not match:
                return None
            parts.append(match.group(0))
        rest = rest[match.end():].strip()
        if rest:
            if rest[0] != ".":
                return None
            rest = rest[1:].strip()
    return tuple(parts)


def _toml_table(key: tuple[str, ...], entry: Mapping[str, Any], newline: str) -> str:
    lines = [f"[{'.'.join(_toml_key(part) for part in key)}]"]
    lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in entry.items())
    return newline.join(lines) + newline


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pairs = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }"
    raise SageMemError(f"cannot write {type(value).__name__} as TOML")
