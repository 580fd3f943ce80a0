"""What MEMORY.md shows of a memory, read straight from the file's bytes (`listed_of`).

MEMORY.md is made from every memory's name, description, category and
baseline fields (`value.listed_fields`). A join reads 10,000 memories for it,
and `parse_bytes` spends ~48 µs on each: a SHA-256 of the bytes, the problems
list, the `ParsedFile`, and the frontmatter's fast path
(`file_format._simple_mapping`) resolving every plain scalar afresh, though a
folder's dates, categories and keys repeat from file to file.

`listed_of` takes the frontmatter sage-mem itself writes, `---`, flat
`key: value` lines (LF, no BOM), the closing line, and reads it line by line
as `_simple_mapping` does, with its own helpers (`_plain`, `_simple_value`),
remembering what a repeated key or plain scalar resolved to (the resolution
depends on the text alone, and its values are immutable). Anything else it
does not fully recognise (CRLF, a BOM, a nested or block value, a tab, an
indented line, a key YAML reads as no string, no frontmatter) goes the long
way, `parse_bytes` and `listed_fields`: the result is the same either way
(`tests/test_listing_fast_path.py` holds the two to each other on generated
hostile and edge input).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InvalidMemory
from .file_format import (
    _CLOSING_LINE,
    _NOT_PLAIN_START,
    _SIMPLE_LINE,
    _STR_TAG,
    _check_expansion,
    _NotSimple,
    _plain,
    _resolve,
    _simple_text,
    _simple_value,
    _Yaml,
    _yaml,
    parse_bytes,
)
from .value import listed_fields

Fields = tuple[str | None, str, str | None, bool, int]
_OPENING = "---\n"
# A plain scalar's value by its text (_LEFT: one `_plain` leaves to PyYAML), a quoted or flow
# value's, and whether a key is read as a string: a folder's dates, categories and keys
# repeat. Emptied when full.
_LEFT = object()
_plains: dict[str, Any] = {}
_values: dict[str, Any] = {}  # the text after `key: ` of a quoted or flow value
_string_keys: dict[str, bool] = {}
_REMEMBERED = 4096


def listed_of(raw: bytes, memory_id: str, path: Path | str = "<memory>") -> Fields:
    """`listed_fields` of the memory these bytes hold, as `parse_bytes` reads them; raises
    InvalidMemory as `parse_bytes` does for bytes it cannot read."""
    fast = listed_fast(raw, memory_id)
    if fast is not None:
        return fast
    parsed = parse_bytes(raw, path)
    return listed_fields(memory_id, parsed.meta, parsed.body)


def listed_fast(raw: bytes, memory_id: str) -> Fields | None:
    """`listed_of` for the flat frontmatter sage-mem writes; None for anything else."""
    if b"\r" in raw or b"\x00" in raw or raw.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.startswith(_OPENING):
        return None
    closing = _CLOSING_LINE.search(text, 4)
    if closing is None:
        return None
    fm_text = text[4:closing.start()]
    meta = _flat_mapping(fm_text)
    if meta is None:
        return None
    try:
        _check_expansion(meta, "")
    except InvalidMemory:
        return None
    body = text[(text.find("\n", closing.start()) + 1 or len(text)):]
    return listed_fields(memory_id, meta, body)


def _flat_mapping(fm_text: str) -> dict[str, Any] | None:
    """`_simple_mapping(fm_text)` (LF only), with what repeats remembered."""
    if _simple_text().fullmatch(fm_text) is None:
        return None
    kit = _yaml()
    resolvers = kit.loader.yaml_implicit_resolvers
    if kit.loader.yaml_path_resolvers or None in resolvers:
        return None
    if max(len(_plains), len(_values), len(_string_keys)) > _REMEMBERED:
        _plains.clear()
        _values.clear()
        _string_keys.clear()
    mapping: dict[str, Any] = {}
    for line in fm_text.split("\n"):
        if not line.strip(" ") or line[0] == "#":  # blank, or a comment
            continue
        match = _SIMPLE_LINE.match(line)
        if match is None:
            return None
        key, text = match.groups()
        if key[0] in resolvers and not _string_key(kit, key):  # `yes:`, `null:`
            return None
        first = text[:1]
        if first and first not in _NOT_PLAIN_START:
            cut = text.find(" #")
            scalar = (text if cut < 0 else text[:cut]).rstrip(" ")
            if ": " in scalar or scalar[-1] == ":":
                return None
            if first in resolvers:
                value = _plains.get(scalar, _LEFT) if len(scalar) <= 64 else _LEFT
                if value is _LEFT:
                    value = _plain_or_left(scalar, kit)
                    if value is _LEFT:
                        return None
                mapping[key] = value
            else:
                mapping[key] = scalar
        else:
            value = _values.get(text, _LEFT) if len(text) <= 128 else _LEFT
            if value is _LEFT:
                value = _value_or_left(text, kit)
                if value is _LEFT:
                    return None
            # A flow list is the one value that is not immutable: each file gets its own.
            mapping[key] = list(value) if isinstance(value, list) else value
    return mapping or None


def _string_key(kit: _Yaml, key: str) -> bool:
    known = _string_keys.get(key)
    if known is None:
        known = _string_keys[key] = _resolve(kit, key) == _STR_TAG
    return known


def _value_or_left(text: str, kit: _Yaml) -> Any:
    try:
        value = _simple_value(text, kit)
    except _NotSimple:
        value = _LEFT
    if len(text) <= 128:
        _values[text] = value
    return value


def _plain_or_left(scalar: str, kit: _Yaml) -> Any:
    try:
        value = _plain(scalar, kit)
    except _NotSimple:
        value = _LEFT
    if len(scalar) <= 64:
        _plains[scalar] = value
    return value
