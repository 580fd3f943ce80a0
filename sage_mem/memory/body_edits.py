"""A partial edit of a memory's body, the way a person edits a note: one change, not a rewrite.

Three kinds, one at a time (`BodyEdit`):

- replace: `old` (which must occur exactly once in the body) becomes `new` (`""` takes it
  out);
- append: `append` is added at the end of the body;
- insert under a heading: `append` with `heading` is added at the end of that heading's
  section (before the next heading of the same or a higher level), the heading matched by
  its text, once, outside fenced code.

Pure: `apply` is handed the body exactly as read and returns it with the one change, every
other byte kept, in the file's own line endings (the text given is written with them: an
agent sends `\\n`, a CRLF file stays CRLF). A refusal is InvalidMemory, one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidMemory
from .fields import check_unicode

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class BodyEdit:
    """One partial edit (see the module docstring); `check` says whether it is one."""

    old: str | None = None
    new: str | None = None
    append: str | None = None
    heading: str | None = None

    def check(self) -> None:
        """Refuse (InvalidMemory) anything but exactly one kind of edit, well formed."""
        replacing = self.old is not None or self.new is not None
        if replacing == (self.append is not None):
            raise InvalidMemory("give old and new (replace), or append (with heading: under it)")
        if replacing and (self.old is None or self.new is None):
            raise InvalidMemory("a replace needs both old and new (new may be empty)")
        if replacing and self.heading is not None:
            raise InvalidMemory("heading goes with append, not with old and new")
        for name in ("old", "new", "append", "heading"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidMemory(f"{name} must be text")
            if value is not None:
                check_unicode(name, value)
        if self.old is not None and not self.old.strip():
            raise InvalidMemory("old is empty: give the text to replace")
        if self.append is not None and not self.append.strip():
            raise InvalidMemory("append is empty: give the text to add")
        if self.heading is not None and not self.heading.strip("# \t"):
            raise InvalidMemory("heading is empty: give the heading's text")

    def apply(self, body: str, newline: str, *, frontmatter: bool = True) -> str:
        """`body` with this edit made; `newline` the file's line ending."""
        if self.old is not None and self.new is not None:
            return _replace(body, _lines_as(self.old, newline), _lines_as(self.new, newline))
        assert self.append is not None
        text = _lines_as(self.append.strip("\r\n"), newline) + newline
        if self.heading is not None:
            return _under_heading(body, self.heading, text, newline)
        if not body.strip():
            # A memory with no body yet: its text after the blank line under the frontmatter.
            return (newline if frontmatter else "") + text
        return body + ("" if body.endswith(("\n", "\r")) else newline) + text


def _lines_as(text: str, newline: str) -> str:
    plain = text.replace("\r\n", "\n").replace("\r", "\n")
    return plain.replace("\n", newline) if newline != "\n" else plain


def _replace(body: str, old: str, new: str) -> str:
    found = body.count(old)
    if found == 0:
        raise InvalidMemory("old is not in the body (read the memory again: it must match "
                            "exactly, spaces and line breaks too)")
    if found > 1:
        raise InvalidMemory(f"old occurs {found} times in the body: give more of the text "
                            "around it, so that it occurs once")
    return body.replace(old, new, 1)


def _heading_title(text: str) -> str:
    return " ".join(text.strip().lstrip("#").split())


def _under_heading(body: str, heading: str, text: str, newline: str) -> str:
    lines = body.splitlines(keepends=True)
    wanted = _heading_title(heading)
    headings: list[tuple[int, int]] = []  # (line number, level)
    matches: list[int] = []
    fence: str | None = None
    for number, line in enumerate(lines):
        stripped = line.rstrip("\r\n")
        opened = _FENCE.match(stripped)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        match = _HEADING.match(stripped)
        if match:
            headings.append((number, len(match.group(1))))
            if " ".join((match.group(2) or "").split()) == wanted:
                matches.append(len(headings) - 1)
    if not matches:
        raise InvalidMemory(f"no heading {wanted!r} in the body (append without heading adds "
                            "at the end)")
    if len(matches) > 1:
        raise InvalidMemory(f"the heading {wanted!r} occurs {len(matches)} times in the body")
    start, level = headings[matches[0]]
    end = next((number for number, other in headings[matches[0] + 1:] if other <= level),
               len(lines))
    # After the section's last line of text: its trailing blank lines stay after the insert.
    at = end
    while at > start + 1 and not lines[at - 1].strip():
        at -= 1
    before = lines[:at]
    if before and not before[-1].endswith(("\n", "\r")):
        before[-1] += newline
    return "".join(before) + text + "".join(lines[at:])
