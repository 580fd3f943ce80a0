"""Markdown as sage-mem reads it: what is code, what is a link, and the prose around both.

The audit and every dream rule read memory bodies through this module, so they
agree on what is code (never checked, never rewritten) and on what is a link.
Code, as CommonMark has it, without a full parser:

- fenced blocks: a line of three or more ``` or ~~~ indented at most three
  spaces (a backtick fence's info string holds no backtick); closed by a line
  of the same character, at least as long, indented at most three spaces, with
  nothing but spaces after it; an unclosed fence runs to the end of the text
  (or of the block quote or list item it was opened in);
- indented blocks: lines indented four columns (a tab counts to the next
  multiple of four) more than the list item they are in, at the start of the
  text or after a blank line, a heading, a thematic break or other code; an
  indented line that continues a paragraph is prose;
- code spans: a run of backticks up to the next run of exactly as many, within
  one paragraph; a backslash-escaped backtick opens none, and an unmatched run
  is plain text;
- HTML `<code>…</code>` (within a paragraph) and `<pre>…</pre>` (blank lines
  included), in any letter case, only when closed.

Block quote markers (`> `) are read through and are never part of the code.

Links: `[[id]]`, `[[id|text]]`, `[[id#anchor]]` (`WIKI_LINK`), and
`[text](target.md)`, `[text](<target with spaces.md>)`, with an optional title
in "…", '…' or (…), images `![alt](…)` too (`MARKDOWN_LINK`). `linked_file`
says which file a markdown link's destination names.

`mask_code(text)` is the text with its code blanked (every character but line
breaks turned into a space): the same offsets and line numbers, for checks that
report where they found something. `outside_code(text, transform)` rewrites the
prose and leaves the code byte for byte. `code_ranges(text)` says where the
code is, and of which kind.

Imports nothing else of sage-mem: any module may use it.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import Literal, NamedTuple
from urllib.parse import unquote

CodeKind = Literal["fence", "indented", "html-pre", "span", "html-code"]
BLOCK_KINDS: frozenset[str] = frozenset({"fence", "indented", "html-pre"})
"""The kinds of code that stand apart from the prose; the others sit inside a sentence."""

WIKI_LINK = re.compile(
    r"\[\[(?P<target>[^\[\]\r\n|#]+)(?:#(?P<anchor>[^\[\]\r\n|]*))?(?:\|(?P<text>[^\[\]\r\n]*))?\]\]"
)
"""`[[id]]`, `[[id#anchor]]`, `[[id|text]]`, `[[id#anchor|text]]`: groups target, anchor, text."""

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def html_comments(text: str) -> Iterator[re.Match[str]]:
    """Each `<!-- … -->` in `text`: looked for only before the last `-->`, since each
    `<!--` after it would read on to the end of the text for one (`<!--<!--…`: quadratic)."""
    last = text.rfind("-->")
    return _COMMENT.finditer(text, 0, last + 3) if last >= 0 else iter(())


def without_html_comments(text: str) -> str:
    """`text` with each `<!-- … -->` taken out (as `html_comments` finds them)."""
    last = text.rfind("-->")
    return _COMMENT.sub("", text[: last + 3]) + text[last + 3 :] if last >= 0 else text


MARKDOWN_LINK = re.compile(
    r"(?P<image>!)?\[(?P<text>[^\[\]\r\n]*)\]"
    r"\(\s*(?P<destination><[^<>\r\n]*>|(?:[^()\s]|\([^()\s]*\))*)"
    r"(?:\s+(?P<title>\"[^\"\r\n]*\"|'[^'\r\n]*'|\([^()\r\n]*\)))?\s*\)"
)
"""`[text](destination "title")` and `![alt](…)`: groups image, text, destination, title.

The destination is as written: `<…>` around it when it has spaces, a
`#fragment` or `?query` after it; `linked_file` reads it.
"""

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_QUOTE_MARK = re.compile(r" {0,3}> ?")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_LIST_MARKER = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?=[ \t]|$)")
_INLINE_OPENING = re.compile(r"`+|<(code|pre)(?:\s[^<>]*)?>", re.IGNORECASE)
_SIGNS_OF_CODE = ("`", "~~~", "<", "\t", "    ")
_BLOCK_STARTERS = frozenset("`~-*_#+0123456789")
_NOT_PLAIN = _BLOCK_STARTERS | frozenset(" \t>")
_CLOSING_TAG = {
    "code": re.compile(r"</code\s*>", re.IGNORECASE),
    "pre": re.compile(r"</pre\s*>", re.IGNORECASE),
}


class Code(NamedTuple):
    """A stretch of code: text[start:end], of one kind (see `CodeKind`)."""

    start: int
    end: int
    kind: CodeKind


def code_ranges(text: str) -> list[Code]:
    """Where `text` holds code, in order; the stretches never overlap."""
    if not any(sign in text for sign in _SIGNS_OF_CODE):
        return []  # most memories: no backtick, fence, tag, tab or deep indent at all
    blocks, breaks = _blocks(text)
    found: list[Code] = []
    last = 0
    for block in blocks:
        found.extend(_inline_code(text, last, block.start, breaks))
        found.append(block)
        last = block.end
    found.extend(_inline_code(text, last, len(text), breaks))
    return found


def mask_code(text: str) -> str:
    """`text` with every character of its code but line breaks turned into a space."""
    out: list[str] = []
    last = 0
    for code in code_ranges(text):
        out.append(text[last : code.start])
        out.append(_blank(text[code.start : code.end]))
        last = code.end
    out.append(text[last:])
    return "".join(out)


def outside_code(text: str, transform: Callable[[str], str]) -> str:
    """`text` with `transform` applied to each stretch of prose; the code stays as it is."""
    out: list[str] = []
    last = 0
    for code in code_ranges(text):
        if code.start > last:
            out.append(transform(text[last : code.start]))
        out.append(text[code.start : code.end])
        last = code.end
    if last < len(text):
        out.append(transform(text[last:]))
    return "".join(out)


def code_content(text: str, code: Code) -> str:
    """What a reader sees of a code span or HTML element: without its backticks or tags."""
    piece = text[code.start : code.end]
    if code.kind == "span":
        ticks = len(piece) - len(piece.lstrip("`"))
        inner = _LINE_BREAK.sub(" ", piece[ticks:-ticks])
        if inner[:1] == inner[-1:] == " " and inner.strip(" "):
            inner = inner[1:-1]
        return inner
    if code.kind in ("html-code", "html-pre"):
        opening = _INLINE_OPENING.match(piece)
        closing = piece.rfind("</")
        inner = piece[opening.end() if opening else 0 : closing if closing >= 0 else len(piece)]
        return _LINE_BREAK.sub(" ", inner) if code.kind == "html-code" else inner
    return piece


def linked_file(destination: str) -> str | None:
    """The file a markdown link destination names (NFC, percent-decoded, relative).

    Without its `<…>`, `#fragment` and `?query`; None for a web link (any
    scheme), an absolute path or a file that is not `.md`.
    """
    target = destination.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not is_relative_md(target):
        return None
    return unicodedata.normalize("NFC", target)


def is_relative_md(target: str) -> bool:
    """Whether a link's target (unwrapped and decoded) can name a memory file: a `.md` path
    relative to the linking file, not a web link (any scheme) nor an absolute path.
    `linked_file`'s test, and MEMORY.md's index lines' (`catalog`, the audit)."""
    return target.endswith(".md") and not _SCHEME.match(target) and not target.startswith("/")


# blocks


class _Fence(NamedTuple):
    char: str
    length: int
    quotes: int
    container: int  # the indent of the list item it is in: a line indented less ends it


def _blocks(text: str) -> tuple[list[Code], list[int]]:
    """The code blocks, and where each block of prose begins (no code span reaches over one)."""
    found: list[Code] = []
    breaks: list[int] = []
    fence: _Fence | None = None
    quotes = 0
    lists: list[int] = []  # content columns of the list items open, innermost last
    paragraph = False  # an indented line now would continue a paragraph, not start code
    for start, end, line_end in _lines(text):
        line = text[start:end]
        if fence is not None:
            depth, offset = _quote_prefix(line, limit=fence.quotes)
            rest = line[offset:]
            columns, skip = _indent(rest)
            ended = depth < fence.quotes or (
                rest.strip(" \t") and columns < fence.container
            )
            if not ended:
                found.append(Code(start + offset, line_end, "fence"))
                body = rest[skip:]
                run = len(body) - len(body.lstrip(fence.char))
                if (
                    columns - fence.container <= 3
                    and run >= fence.length
                    and not body[run:].strip(" \t")
                ):
                    fence = None
                continue
            fence = None
        if paragraph and not quotes and line and line[0] not in _NOT_PLAIN:
            continue  # the common case: a line of plain text going on with its paragraph
        depth, offset = _quote_prefix(line)
        if depth != quotes:
            paragraph = paragraph and depth < quotes  # a lazy line continues the quote's paragraph
            quotes = depth
            lists = []
        rest = line[offset:]
        if not rest.strip(" \t"):
            paragraph = False
            breaks.append(start)
            continue
        columns, skip = _indent(rest)
        body = rest[skip:]
        base = lists[-1] if lists else 0
        if paragraph and (columns - base >= 4 or not _starts_block(body)):
            continue  # a line continuing the paragraph, however indented
        breaks.append(start)
        while lists and columns < lists[-1]:
            lists.pop()
        base = lists[-1] if lists else 0
        if columns - base >= 4:
            found.append(Code(start + offset, line_end, "indented"))
            paragraph = False
            continue
        position = offset + skip
        # A list item's first line may itself open a fence: read on at its content column.
        while True:
            opening = _FENCE.match(body)
            if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
                found.append(Code(start + position, line_end, "fence"))
                marker = opening.group(1)
                fence = _Fence(marker[0], len(marker), quotes, lists[-1] if lists else 0)
                paragraph = False
                break
            if _THEMATIC_BREAK.match(body) or _HEADING.match(body):
                paragraph = False
                break
            marker = _LIST_MARKER.match(body)
            if marker is None:
                paragraph = True
                break
            after = body[marker.end() :]
            spaces, spaces_skip = _indent(after, start=columns + marker.end())
            gap = spaces - columns - marker.end()
            if not after.strip(" \t"):
                lists.append(columns + marker.end() + 1)
                paragraph = False
                break
            if gap > 4:  # the item starts with indented code: its content is one column in
                lists.append(columns + marker.end() + 1)
                found.append(Code(start + position + marker.end(), line_end, "indented"))
                paragraph = False
                break
            lists.append(spaces)
            columns = spaces
            position += marker.end() + spaces_skip
            body = after[spaces_skip:]
    return _merged(found), breaks


def _lines(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end without the line break, end with it) of each line."""
    start = 0
    for brk in _LINE_BREAK.finditer(text):
        yield start, brk.start(), brk.end()
        start = brk.end()
    if start < len(text):
        yield start, len(text), len(text)


def _quote_prefix(line: str, *, limit: int | None = None) -> tuple[int, int]:
    """(how many `>` markers open the line, where its content starts), up to `limit` markers."""
    depth = offset = 0
    while limit is None or depth < limit:
        mark = _QUOTE_MARK.match(line, offset)
        if mark is None:
            break
        depth, offset = depth + 1, mark.end()
    return depth, offset


def _indent(text: str, start: int = 0) -> tuple[int, int]:
    """(the column reached after the leading spaces and tabs, how many characters they are)."""
    column = start
    for count, char in enumerate(text):
        if char == " ":
            column += 1
        elif char == "\t":
            column += 4 - column % 4
        else:
            return column, count
    return column, len(text)


def _starts_block(body: str) -> bool:
    """True when a line (its indent stripped) interrupts a paragraph rather than continuing it."""
    if body[:1] not in _BLOCK_STARTERS:
        return False
    opening = _FENCE.match(body)
    if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
        return True
    return bool(
        _THEMATIC_BREAK.match(body) or _HEADING.match(body) or _LIST_MARKER.match(body)
    )


def _merged(found: list[Code]) -> list[Code]:
    """Consecutive lines of one block as one stretch."""
    out: list[Code] = []
    for code in found:
        if out and out[-1].end == code.start and out[-1].kind == code.kind:
            out[-1] = Code(out[-1].start, code.end, code.kind)
        else:
            out.append(code)
    return out


# inline


def _inline_code(text: str, start: int, end: int, breaks: list[int]) -> Iterator[Code]:
    """Code spans and HTML code elements in the prose text[start:end]."""
    position = start
    while position < end:
        opening = _INLINE_OPENING.search(text, position, end)
        if opening is None:
            return
        tag = opening.group(1)
        if tag is not None:
            pre = tag.lower() == "pre"
            limit = end if pre else _block_end(opening.end(), end, breaks)
            closing = _CLOSING_TAG[tag.lower()].search(text, opening.end(), limit)
            if closing is None:
                position = opening.end()
                continue
            yield Code(opening.start(), closing.end(), "html-pre" if pre else "html-code")
            position = closing.end()
            continue
        run_start = opening.start()
        if _escaped(text, run_start):
            run_start += 1  # "\`" is a backtick, not an opening; the rest of the run may be one
        length = opening.end() - run_start
        if length == 0:
            position = opening.end()
            continue
        limit = _block_end(opening.end(), end, breaks)
        run_end = _closing_run(text, opening.end(), limit, length)
        if run_end is None:
            position = opening.end()
            continue
        yield Code(run_start, run_end, "span")
        position = run_end


def _escaped(text: str, index: int) -> bool:
    backslashes = 0
    while index - backslashes - 1 >= 0 and text[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _closing_run(text: str, start: int, end: int, length: int) -> int | None:
    """The end of the first run of exactly `length` backticks in text[start:end]."""
    position = start
    while True:
        found = text.find("`", position, end)
        if found < 0:
            return None
        run_end = found
        while run_end < end and text[run_end] == "`":
            run_end += 1
        if run_end - found == length:
            return run_end
        position = run_end


def _block_end(position: int, end: int, breaks: list[int]) -> int:
    """Where the block of prose holding `position` ends: the next break, or `end`."""
    following = bisect_right(breaks, position)
    return min(breaks[following], end) if following < len(breaks) else end


def _blank(piece: str) -> str:
    return re.sub(r"[^\r\n]", " ", piece)
