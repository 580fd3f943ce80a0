"""What MEMORY.md shows of a memory, read straight from the file's bytes (`listed_of`).

MEMORY.md is made from every memory's name, description, category and
baseline fields (`value.listed_fields`). A join reads 10,000 memories for it,
and `parse_bytes` spends ~48 µs on each: a SHA-256 of the bytes, the problems
list and the `ParsedFile`, none of which MEMORY.md needs.

`listed_of` takes the frontmatter sage-mem itself writes, `---`, flat
`key: value` lines (LF, no BOM), the closing line, and reads it with the
frontmatter's fast path (`_simple_mapping`, which resolves what repeats from
file to file once), without the rest of `parse_bytes`. Anything else it
does not fully recognise (CRLF, a BOM, a nested or block value, a tab, an
indented line, a key YAML reads as no string, no frontmatter) goes the long
way, `parse_bytes` and `listed_fields`: the result is the same either way
(`tests/test_listing_fast_path.py` holds the two to each other on generated
hostile and edge input).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidMemory
from .coercion import listed_fields
from .file_format import _CLOSING_LINE, _check_expansion, _simple_mapping, parse_bytes

Fields = tuple[str | None, str, str | None, bool, int]
_OPENING = "---\n"


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
    meta = _simple_mapping(fm_text)
    if meta is None:
        return None
    try:
        _check_expansion(meta, "")
    except InvalidMemory:
        return None
    body = text[(text.find("\n", closing.start()) + 1 or len(text)):]
    return listed_fields(memory_id, meta, body)
