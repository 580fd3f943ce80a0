"""Reading and writing one memory file.

Owns the on-disk format: tolerant parsing (BOM, CRLF, a missing closing `---`,
YAML that is not a mapping, invalid YAML with its line and column, YAML dates as
ISO strings), frontmatter edits that touch only the keys they mean to change
(key order, unknown keys, comments and the body's exact bytes survive), and
atomic writes (temp file in the same folder, fsync, rename).

PyYAML is used directly rather than through python-frontmatter: that library
strips the body and re-sorts keys on every dump, which would rewrite bytes the
user never asked us to touch.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from .errors import InvalidMemory
from .memory import iso_datetime

DELETE = object()
"""Sentinel for `edit_frontmatter`: remove this key."""

_Loader = type("_Loader", (getattr(yaml, "CSafeLoader", yaml.SafeLoader),), {})


def _timestamp_as_iso(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    value = yaml.SafeLoader.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    if isinstance(value, datetime):
        return iso_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_iso)


class _Dumper(yaml.SafeDumper):
    """Writes ISO dates as plain scalars: our loader reads them back as the same text."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    scalars = all(isinstance(item, (str, int, float, bool)) or item is None for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=scalars)


def _represent_dict(dumper: yaml.SafeDumper, data: dict[Any, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items()
}

_DELIMITER = re.compile(r"^---[ \t]*\r?\n?$")
_CLOSING = re.compile(r"^(---|\.\.\.)[ \t]*\r?\n?$")
_TOP_KEY = re.compile(r"""^(?:"[^"]*"|'[^']*'|[^\s#'"\-?:][^:]*?|-[^\s:][^:]*?)[ \t]*:(?:[ \t]|\r?\n|$)""")


@dataclass(frozen=True)
class ParsedFile:
    """A memory file split into its parts, exactly as read."""

    meta: dict[str, Any]
    body: str
    frontmatter: str | None
    newline: str
    bom: bool
    problems: tuple[str, ...]
    rewritable: bool
    sha256: str


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_bytes(raw: bytes, path: Path | str = "<memory>") -> ParsedFile:
    """Parse a memory file's bytes. Raises InvalidMemory when it cannot be read at all."""
    digest = sha256_bytes(raw)
    if b"\x00" in raw:
        raise InvalidMemory(f"{path}: binary file (contains NUL bytes)", path=path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(
            f"{path}: not valid UTF-8 (byte {exc.start})", path=path
        ) from None
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    problems: list[str] = []
    if bom:
        problems.append("starts with a UTF-8 byte order mark")
    if "\r\n" in text:
        problems.append("CRLF line endings")

    lines = text.splitlines(keepends=True)
    if not lines or not _DELIMITER.match(lines[0]):
        problems.append("no frontmatter")
        return ParsedFile({}, text, None, newline, bom, tuple(problems), False, digest)

    closing = next((i for i in range(1, len(lines)) if _CLOSING.match(lines[i])), None)
    rewritable = True
    if closing is None:
        problems.append("frontmatter has no closing ---")
        rewritable = False
        end = next((i for i in range(1, len(lines)) if not lines[i].strip()), len(lines))
        fm_text, body = "".join(lines[1:end]), "".join(lines[end:])
    else:
        fm_text, body = "".join(lines[1:closing]), "".join(lines[closing + 1 :])

    meta = _load_yaml(fm_text, path)
    if not isinstance(meta, dict):
        if meta is not None:
            problems.append(f"frontmatter is not a mapping (it is a {type(meta).__name__})")
            rewritable = False
        meta = {}
    meta = {str(key): value for key, value in meta.items()}
    return ParsedFile(meta, body, fm_text, newline, bom, tuple(problems), rewritable, digest)


def _load_yaml(fm_text: str, path: Path | str) -> Any:
    if not fm_text.strip():
        return None
    try:
        return yaml.load(fm_text, Loader=_Loader)  # noqa: S506 - a safe loader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark else None  # +1 for 1-based, +1 for the opening ---
        column = mark.column + 1 if mark else None
        where = f"line {line}, column {column}" if mark else "frontmatter"
        problem = exc.problem or exc.context or "invalid YAML"
        raise InvalidMemory(
            f"{path}:{line}:{column}: invalid YAML at {where}: {problem}",
            path=path, line=line, column=column,
        ) from None
    except yaml.YAMLError as exc:
        raise InvalidMemory(f"{path}: invalid YAML: {exc}", path=path) from None
    except RecursionError:
        raise InvalidMemory(f"{path}: frontmatter nested too deeply", path=path) from None


def dump_value(key: str, value: Any) -> str:
    """One top-level `key: value` entry as YAML text, ending with a newline."""
    return yaml.dump(
        {key: value}, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1_000_000,
    )


def render_new(meta: Mapping[str, Any], body: str) -> str:
    """The text of a new memory file: frontmatter in the given key order, a blank line, the body."""
    fm = "".join(dump_value(key, value) for key, value in meta.items())
    if body and not body.endswith("\n"):
        body += "\n"
    return f"---\n{fm}---\n" + (f"\n{body}" if body else "")


def edit_frontmatter(parsed: ParsedFile, changes: Mapping[str, Any], body: str | None = None) -> str:
    """The file's new text with `changes` applied (DELETE removes a key).

    Only the lines of changed keys are rewritten; every other byte (order,
    comments, unknown keys, the body) is kept. When the frontmatter's layout is
    too unusual to edit line by line, it is re-dumped whole in its own key order.
    """
    if not parsed.rewritable or parsed.frontmatter is None:
        raise InvalidMemory("file cannot be rewritten safely: fix its frontmatter first")
    nl = parsed.newline
    lines = parsed.frontmatter.splitlines(keepends=True)
    spans = _key_spans(lines)
    for key, value in changes.items():
        new = [] if value is DELETE else _with_newline(dump_value(key, value), nl)
        if key in spans:
            start, end = spans[key]
            lines[start:end] = new
        elif value is not DELETE:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += nl
            lines.extend(new)
        spans = _key_spans(lines)
    fm_text = "".join(lines)
    expected = {k: v for k, v in parsed.meta.items() if k not in changes}
    expected.update({k: v for k, v in changes.items() if v is not DELETE})
    if _load_quietly(fm_text) != expected:
        ordered = dict(parsed.meta)
        for key, value in changes.items():
            if value is DELETE:
                ordered.pop(key, None)
            else:
                ordered[key] = value
        fm_text = _with_newline("".join(dump_value(k, v) for k, v in ordered.items()), nl)
    text = f"---{nl}{fm_text}---{nl}" + (parsed.body if body is None else body)
    return ("\ufeff" if parsed.bom else "") + text


def _with_newline(text: str, nl: str) -> list[str]:
    return [line.rstrip("\n") + nl for line in text.splitlines(keepends=True)]


def _key_spans(lines: list[str]) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    for i, line in enumerate(lines):
        if _TOP_KEY.match(line):
            if current is not None:
                spans[current] = (start, i)
            current = _key_name(line)
            start = i
        elif line[:1] in (" ", "\t", "-") or not line.strip():
            continue
        elif current is not None:
            spans[current] = (start, i)
            current = None
    if current is not None:
        spans[current] = (start, len(lines))
    return spans


def _key_name(line: str) -> str:
    key = line.split(":", 1)[0].strip() if line[:1] not in "\"'" else line[1 : line.index(line[0], 1)]
    return key


def _load_quietly(fm_text: str) -> Any:
    try:
        data = yaml.load(fm_text, Loader=_Loader)  # noqa: S506
    except yaml.YAMLError:
        return None
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else None


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a mix.

    The temp file is a dot-file in the same folder (so the rename is atomic and
    the watcher does not take it for a memory); an existing file keeps its mode.
    """
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
