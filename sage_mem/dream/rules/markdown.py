"""Markdown prose versus code: the rules rewrite prose and never touch code."""

from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def outside_code(text: str, transform: Callable[[str], str]) -> str:
    """Apply `transform` to the prose of `text`; fenced blocks and code spans stay as they are."""
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is None and opening:
            out.append(_spans("".join(prose), transform))
            prose = []
            fence = opening.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            closing = _FENCE.match(line)
            if (
                closing
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and not line.strip().strip(fence[0])
            ):
                fence = None
        else:
            prose.append(line)
    out.append(_spans("".join(prose), transform))
    return "".join(out)


def _spans(text: str, transform: Callable[[str], str]) -> str:
    if not text:
        return text
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(transform(text[last : span.start()]))
        out.append(span.group(0))
        last = span.end()
    out.append(transform(text[last:]))
    return "".join(out)
