"""MEMORY.md: the index file in Claude Code's format, regenerated, never merged.

One line per memory, `- [Title](file.md) — hook`, under 150 characters, grouped
by category in a fixed order and sorted by id within a group, with no dates or
counts in it, so the same memories always give the same bytes and git diffs
stay small. Claude Code loads at most 200 lines and 25,000 bytes: past that the
file lists baselines and the most used memories and says how many more exist.

A MEMORY.md that sage-mem did not write (Claude Code's own, a person's) is its
owner's: `updated_index` keeps every line of it, byte for byte, and maintains
only a marked region (`REGION_BEGIN` … `REGION_END`) listing the memories the
owner's lines do not index. Pure functions only: no I/O here.
"""

from __future__ import annotations

import heapq
import operator
import posixpath
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol
from urllib.parse import unquote

from .coercion import CATEGORIES


class Listed(Protocol):
    """What MEMORY.md shows of a memory: a `Memory`, or the few fields sync keeps of one
    (`sync.index_file`: 10,000 of them made in milliseconds, not a `Memory` each)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def display(self) -> str: ...
    @property
    def category(self) -> str | None: ...
    @property
    def baseline(self) -> bool: ...
    @property
    def baseline_priority(self) -> int: ...
    @property
    def archived(self) -> bool: ...

class Listing(NamedTuple):
    """What MEMORY.md shows of one memory (`Listed`), from the few fields kept of it: sync's
    record of each file (`sync.index_file`), the index cache's record of each memory
    (`Index.listings`). Made for every memory of the folder on each regeneration, where a
    `Memory` each (a frozen dataclass of 22 fields, its `Path`) cost ~0.1-0.5 s at 10,000."""

    id: str
    name: str | None
    display: str
    category: str | None
    baseline: bool
    baseline_priority: int
    archived: bool = False


MAX_LINES = 200
MAX_BYTES = 25_000
MAX_LINE_CHARS = 150
MIN_TITLE_CHARS = 8
MIN_HOOK_CHARS = 20
HEADER = "# Memory index"
NOTE = (
    "<!-- Written by sage-mem from the memory files; edit those, not this file. "
    "`sage-mem index` regenerates it. -->"
)
REGION_BEGIN = (
    "<!-- sage-mem:begin — sage-mem lists the memories below and rewrites this part; "
    "the rest of the file is yours -->"
)
REGION_END = "<!-- sage-mem:end -->"


def entry_line(memory: Listed) -> str:
    """`- [Title](file.md) — hook`, cut to fit in MAX_LINE_CHARS.

    The link is never cut (a cut link is a broken one): a long title is
    shortened first, then the hook. Only an id too long to fit by itself can
    make the line longer than MAX_LINE_CHARS.
    """
    # A title or hook from a file (a remote's, pulled) may hold a terminal escape or a bidi
    # control: named (`<U+001B>`), as `list` names it, never written into the index.
    title = _named(" ".join((memory.name or memory.id.rsplit("/", 1)[-1]).split()))
    title = title.replace("[", "(").replace("]", ")")
    target = memory.id + ".md"
    if any(ch in target for ch in " ()<>"):
        target = f"<{target}>"
    fixed = len("- []()") + len(target)
    title = _cut(title, max(MIN_TITLE_CHARS, MAX_LINE_CHARS - fixed - 3 - MIN_HOOK_CHARS))
    head = f"- [{title}]({target})"
    hook = _named(" ".join(memory.display.split()))
    room = MAX_LINE_CHARS - len(head) - 3
    if not hook or room < MIN_HOOK_CHARS // 2:
        return head
    return f"{head} — {_cut(hook, room)}"


# A control, a line or paragraph separator, a format character but the two joiners: what
# `disk/folder.hidden_in_name` finds (this room imports nothing of `disk`), named in a line.
_JOINERS = frozenset("\u200c\u200d")


def _named(text: str) -> str:
    """`text` with each character that could move or hide it named (`<U+001B>`), as
    `checks/prompt_injection.visible_name` names it in a frame."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        f"<U+{ord(c):04X}>" if (kind := unicodedata.category(c)) in ("Cc", "Zl", "Zp")
        or (kind == "Cf" and c not in _JOINERS) else c for c in text)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + "…"


def _group(memory: Listed) -> str:
    return memory.category or "uncategorized"


def _group_order(name: str) -> tuple[int, str]:
    if name in CATEGORIES:
        return (CATEGORIES.index(name), name)
    return (len(CATEGORIES) + (1 if name == "uncategorized" else 0), name)


def render(memories: Sequence[Listed], retrievals: Mapping[str, int] | None = None) -> str:
    """The text of MEMORY.md for these (unarchived) memories, in any order."""
    live = [m for m in memories if not m.archived]
    lines: dict[str, str] = {}  # each entry's line once, over the cuts tried below
    if len(live) <= MAX_LINES:
        text = _render_groups(sorted(live, key=_id), more=0, lines=lines)
        if _fits(text):
            return text
    # One line per memory: no more than MAX_LINES can fit, whatever the folder's size, so only
    # the first MAX_LINES of the ranking are made (after each change, at 50,000 memories).
    ranked = _ranked(live, retrievals, first=MAX_LINES)
    low, high = 0, len(ranked)
    while low < high:
        mid = (low + high + 1) // 2
        if _fits(_render_groups(sorted(ranked[:mid], key=_id), len(live) - mid, lines=lines)):
            low = mid
        else:
            high = mid - 1
    return _render_groups(sorted(ranked[:low], key=_id), len(live) - low, lines=lines)


_id: Callable[[Listed], str] = operator.attrgetter("id")


def _ranked(memories: Sequence[Listed], retrievals: Mapping[str, int] | None,
            first: int | None = None) -> list[Listed]:
    """Who stays when the index is cut: baselines by priority, then the most used, then by id
    (`first`: only so many of them, as the whole ranking would begin)."""
    counts = retrievals or {}

    def rank(m: Listed) -> tuple[bool, int, int, str]:
        return (not m.baseline, -m.baseline_priority if m.baseline else 0,
                -counts.get(m.id, 0), m.id)

    if first is None:
        return sorted(memories, key=rank)
    # Baselines and used memories come before every other, which come by id alone: the
    # smallest ids of the others are among the `first` smallest ids of all.
    ahead = [m for m in memories if m.baseline or counts.get(m.id)] if counts else \
        [m for m in memories if m.baseline]
    if len(ahead) >= first:
        return heapq.nsmallest(first, ahead, key=rank)
    chosen = {m.id for m in ahead}
    smallest = [m for m in heapq.nsmallest(first, memories, key=_id) if m.id not in chosen]
    return sorted(ahead, key=rank) + smallest[:first - len(ahead)]


def _more_line(more: int) -> str:
    return f"…and {more} more memories not listed here: `sage-mem search` finds them."


def _fits(text: str) -> bool:
    return text.count("\n") <= MAX_LINES and len(text.encode("utf-8")) <= MAX_BYTES


def _render_groups(memories: Sequence[Listed], more: int,
                   lines: dict[str, str] | None = None) -> str:
    """`lines`: the entry lines made so far, by id (kept by the caller across calls)."""
    made = {} if lines is None else lines
    groups: dict[str, list[Listed]] = {}
    for memory in memories:
        groups.setdefault(_group(memory), []).append(memory)
    text = [HEADER, "", NOTE]
    for name in sorted(groups, key=_group_order):
        text += ["", f"## {name}"]
        for memory in groups[name]:
            line = made.get(memory.id)
            if line is None:
                line = made[memory.id] = entry_line(memory)
            text.append(line)
    if more:
        text += ["", _more_line(more)]
    if not memories and not more:
        text += ["", "No memories yet."]
    return "\n".join(text) + "\n"


# Someone else's MEMORY.md: every line of it kept, sage-mem's part in a marked region.


class IndexUpdate(NamedTuple):
    """What MEMORY.md should become, as `updated_index` decides it.

    `data` is the file's new bytes (the old ones when nothing changes), or None:
    leave the file as it is, for the reason in `problem`, a one-line message
    for the caller to report. `owner_text` is True when the file holds lines
    sage-mem did not write, so that only its region is sage-mem's.
    """

    data: bytes | None
    problem: str | None = None
    owner_text: bool = False


def updated_index(
    existing: bytes | None,
    memories: Sequence[Listed],
    retrievals: Mapping[str, int] | None = None,
) -> IndexUpdate:
    """The new MEMORY.md, given the bytes of the current one (None: there is no file).

    - No file, an empty (or blank) one, or one sage-mem wrote entirely (its
      `HEADER` and note, then only lines of the kinds `render` writes, even
      with git conflict markers among them): `render(memories, retrievals)`,
      the whole file, as always.
    - Any other file is its owner's. Every line outside sage-mem's region is
      kept byte for byte (BOM, CRLF, bytes that are not UTF-8 included); the
      region, between a `REGION_BEGIN` and a `REGION_END` line, lists the
      memories that no index line of the owner (`- [Title](file.md) …`, see
      `index_target`) already lists (an owner's line is theirs, and is never
      repeated in the region), grouped like the whole file. Where there
      is no region yet, one is appended after a blank line, and only if it
      has something to list. It is written with the file's own line endings
      (CRLF when most of its lines end so).
    - A line typed inside the region that is none of the kinds sage-mem
      writes there (an entry, a `## group` heading over one, the count line)
      is moved out, just after the region; entry lines inside it are
      sage-mem's and are rewritten.
    - A file sage-mem wrote that someone then added lines to keeps those
      lines: its generated part becomes a region in the place of its header.
    - The whole file stays within MAX_LINES and MAX_BYTES: the region lists
      baselines and the most used memories first and counts the rest; when
      the owner's lines alone fill the budget, it holds only the count. An
      owner's line is never cut.
    - Left alone (`data` None, `problem` says why): a region that is broken
      (a begin line without an end line, the other way round, two of either),
      or git conflict markers anywhere but among sage-mem's own lines.

    Pure: no I/O; the same arguments always give the same bytes, and feeding
    the result back in gives the same bytes again.
    """
    if existing is None:
        return IndexUpdate(render(memories, retrievals).encode("utf-8"))
    bom, text = _decode(existing)
    if not text.strip():
        return IndexUpdate(render(memories, retrievals).encode("utf-8"))
    lines = _split(text)
    contents = [_content(line) for line in lines]
    hunks = _conflict_hunks(contents)
    markers = {i for hunk in hunks for i in hunk.markers}
    begins = [i for i, c in enumerate(contents) if c.strip().startswith(_BEGIN_PREFIX)]
    ends = [i for i, c in enumerate(contents) if c.strip().startswith(_END_PREFIX)]
    newline = _newline(lines)
    plan = _Plan(bom, newline, memories, retrievals)

    if begins or ends:
        broken = _broken_region(begins, ends)
        if broken:
            return _left_alone(f"MEMORY.md has {broken} of sage-mem's region")
        begin, end = begins[0], ends[0]
        if any(not (begin < hunk.start and hunk.end < end) for hunk in hunks):
            return _left_alone(_CONFLICT_PROBLEM)
        kinds = _kinds(contents, markers, begin + 1, end)
        if any(kinds[i] == _OWNER for hunk in hunks for i in hunk.span()):
            return _left_alone(_CONFLICT_PROBLEM)
        moved = [lines[i] for i in range(begin + 1, end) if kinds[i] == _OWNER]
        return plan.in_place(lines[:begin], moved, lines[end + 1:])

    header = _signature(contents, markers)
    if header is not None:
        kinds = _kinds(contents, markers, 0, len(contents))
        if _OWNER not in kinds:
            return IndexUpdate(render(memories, retrievals).encode("utf-8"))
        if any(kinds[i] == _OWNER for hunk in hunks for i in hunk.span()):
            return _left_alone(_CONFLICT_PROBLEM)
        before = _runs(lines, kinds, 0, header)
        after = _runs(lines, kinds, header, len(lines))
        return plan.around(before, after)

    if hunks:
        return _left_alone(_CONFLICT_PROBLEM)
    return plan.appended(existing, lines)


def index_target(line: str) -> str | None:
    """The memory file an index line lists, as a path relative to the folder; else None.

    An index line is a list item that starts with a link to a relative `.md`
    file: `- [Title](file.md) — hook` as Claude Code writes it, with `*` or
    `+` bullets, `<…>` targets, `%` escapes, anchors and link titles allowed.
    A link elsewhere in a line (prose, "- see [x](x.md)") indexes nothing.
    """
    match = _INDEX_LINE.match(line)
    if match is None:
        return None
    target = match.group(1)
    if target.startswith("<"):
        target = target[1:-1]
    target = unquote(target.split("#", 1)[0]).strip()
    from .markdown import is_relative_md  # its regexes (~2 ms) only for a person's lines

    if not is_relative_md(target):
        return None
    target = posixpath.normpath(target)
    if target == ".." or target.startswith("../"):
        return None
    return unicodedata.normalize("NFC", target)


def owner_lines(existing: bytes) -> list[str]:
    """The lines of a MEMORY.md that sage-mem did not write, in order, without line endings.

    What `updated_index` keeps of it: outside a region, everything; inside
    one, or in a file sage-mem wrote, what is none of the kinds sage-mem
    writes. A file with a broken region is all its owner's. The BOM is
    dropped; bytes that are not UTF-8 come back as lone surrogates
    (`surrogateescape`).
    """
    _bom, text = _decode(existing)
    contents = [_content(line) for line in _split(text)]
    markers = {i for hunk in _conflict_hunks(contents) for i in hunk.markers}
    begins = [i for i, c in enumerate(contents) if c.strip().startswith(_BEGIN_PREFIX)]
    ends = [i for i, c in enumerate(contents) if c.strip().startswith(_END_PREFIX)]
    if begins or ends:
        if _broken_region(begins, ends):
            return contents
        begin, end = begins[0], ends[0]
        kinds = _kinds(contents, markers, begin + 1, end)
        return [c for i, c in enumerate(contents)
                if not begin <= i <= end or begin < i < end and kinds[i] == _OWNER]
    if _signature(contents, markers) is None:
        return contents
    kinds = _kinds(contents, markers, 0, len(contents))
    return [c for i, c in enumerate(contents) if kinds[i] == _OWNER]


_BEGIN_PREFIX = "<!-- sage-mem:begin"
_END_PREFIX = "<!-- sage-mem:end"
# Recognised by its start, so that a later wording of NOTE still marks a file sage-mem wrote.
_NOTE_PREFIX = "<!-- Written by sage-mem"
_BOM = b"\xef\xbb\xbf"
_EMPTY = "No memories yet."
_CONFLICT_PROBLEM = (
    "MEMORY.md has git conflict markers in lines sage-mem did not write; it is left as it is: "
    "resolve the conflict, then run `sage-mem index`"
)
_SAGE, _OWNER, _BLANK, _MARKER = "sage", "owner", "blank", "marker"
_ENTRY = re.compile(r"^- \[[^\[\]\n]*\]\((?:<.+?\.md>|[^()\s<>]+\.md)\)(?: — .*)?$")
_GROUP = re.compile(r"^## \S")
_MORE = re.compile(r"^…and \d+ more memories\b")
_INDEX_LINE = re.compile(
    r"^[ \t]{0,3}[-*+][ \t]+\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]"
    r"\(\s*(<[^<>\n]+>|[^()\s]+)(?:\s+\"[^\"\n]*\")?\s*\)"
)
_CONFLICT_OPEN = re.compile(r"^<{7}(?: |$)")
_CONFLICT_BASE = re.compile(r"^\|{7}(?: |$)")
_CONFLICT_CLOSE = re.compile(r"^>{7}(?: |$)")


def _left_alone(problem: str) -> IndexUpdate:
    return IndexUpdate(None, problem, owner_text=True)


def _decode(existing: bytes) -> tuple[bool, str]:
    bom = existing.startswith(_BOM)
    # surrogateescape: bytes that are not UTF-8 go back out exactly as they came in.
    return bom, existing[len(_BOM) if bom else 0:].decode("utf-8", "surrogateescape")


def _encode(bom: bool, text: str) -> bytes:
    return (_BOM if bom else b"") + text.encode("utf-8", "surrogateescape")


def _split(text: str) -> list[str]:
    """Lines with their endings; only LF ends a line (str.splitlines also splits at U+2028 …)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _content(line: str) -> str:
    line = line[:-1] if line.endswith("\n") else line
    return line[:-1] if line.endswith("\r") else line


def _newline(lines: Sequence[str]) -> str:
    crlf = sum(1 for line in lines if line.endswith("\r\n"))
    return "\r\n" if crlf * 2 > sum(1 for line in lines if line.endswith("\n")) else "\n"


def _broken_region(begins: Sequence[int], ends: Sequence[int]) -> str | None:
    if len(begins) > 1:
        return f"{len(begins)} begin lines"
    if len(ends) > 1:
        return f"{len(ends)} end lines"
    if not ends:
        return "a begin line but no end line"
    if not begins:
        return "an end line but no begin line"
    if ends[0] < begins[0]:
        return "its end line before its begin line"
    return None


class _Hunk(NamedTuple):
    start: int
    end: int  # the closing marker, or the last line when the conflict is never closed
    markers: tuple[int, ...]

    def span(self) -> range:
        return range(self.start, self.end + 1)


def _conflict_hunks(contents: Sequence[str]) -> list[_Hunk]:
    """git's conflict hunks; `=======` counts only inside one (else it underlines a heading)."""
    hunks: list[_Hunk] = []
    start: int | None = None
    markers: list[int] = []
    for i, line in enumerate(contents):
        if _CONFLICT_OPEN.match(line):
            if start is None:
                start = i
            markers.append(i)
        elif start is not None and (line == "=======" or _CONFLICT_BASE.match(line)):
            markers.append(i)
        elif _CONFLICT_CLOSE.match(line):
            markers.append(i)
            hunks.append(_Hunk(i if start is None else start, i, tuple(markers)))
            start, markers = None, []
    if start is not None:
        hunks.append(_Hunk(start, len(contents) - 1, tuple(markers)))
    return hunks


def _signature(contents: Sequence[str], markers: set[int]) -> int | None:
    """Where a file sage-mem wrote starts: its HEADER line, a blank one, then its note.

    Conflict markers between them are skipped: two versions' notes may differ.
    """
    at = [i for i in range(len(contents)) if i not in markers]
    for k in range(len(at) - 2):
        if (contents[at[k]] == HEADER and not contents[at[k + 1]]
                and contents[at[k + 2]].startswith(_NOTE_PREFIX)):
            return at[k]
    return None


def _kinds(contents: Sequence[str], markers: set[int], start: int, stop: int) -> list[str]:
    """For lines start..stop-1: sage-mem's (the kinds it writes), the owner's, or a marker.

    A `## group` heading is sage-mem's only over one of its entries; a blank
    line is the owner's only between two lines of the owner (the blank lines
    inside their notes), else sage-mem's. Lines outside the range are the owner's.
    """
    kinds = [_OWNER] * len(contents)
    for i in range(start, stop):
        line = contents[i]
        if i in markers:
            kinds[i] = _MARKER
        elif not line.strip():
            kinds[i] = _BLANK
        elif (line == HEADER or line.startswith(_NOTE_PREFIX) and line.endswith("-->")
              or line == _EMPTY or _ENTRY.match(line) or _MORE.match(line)):
            kinds[i] = _SAGE
        elif _GROUP.match(line):
            after = next((j for j in range(i + 1, stop) if j not in markers), None)
            kinds[i] = _SAGE if after is not None and _ENTRY.match(contents[after]) else _OWNER
    last = None
    for i in range(start, stop):  # blank lines: the owner's when between two of the owner's
        if kinds[i] == _BLANK:
            kinds[i] = last or _SAGE
        elif kinds[i] != _MARKER:
            last = kinds[i]
    following = None
    for i in reversed(range(start, stop)):
        if kinds[i] == _OWNER and not contents[i].strip() and following != _OWNER:
            kinds[i] = _SAGE
        elif contents[i].strip() and kinds[i] != _MARKER:
            following = kinds[i]
    return kinds


def _runs(lines: Sequence[str], kinds: Sequence[str], start: int, stop: int) -> list[list[str]]:
    """The owner's lines in start..stop-1, as runs of consecutive lines."""
    runs: list[list[str]] = []
    previous = False
    for i in range(start, stop):
        mine = kinds[i] == _OWNER
        if mine and not previous:
            runs.append([])
        if mine:
            runs[-1].append(lines[i])
        previous = mine
    return runs


class _Plan:
    """Assembles an owner's file with sage-mem's region, shrunk to fit Claude Code's budget."""

    def __init__(self, bom: bool, newline: str, memories: Sequence[Listed],
                 retrievals: Mapping[str, int] | None) -> None:
        self.bom = bom
        self.newline = newline
        self.memories = memories
        self.retrievals = retrievals

    def in_place(self, before: list[str], moved: list[str], after: list[str]) -> IndexUpdate:
        """The region where it is; lines typed into it go just after it."""
        tail: list[str] = []
        if moved:
            tail = [self.newline, *moved]
            if after and _content(after[0]).strip():
                tail.append(self.newline)
        tail += after
        return self._fitted(before, tail, keep_empty=True)

    def around(self, before: list[list[str]], after: list[list[str]]) -> IndexUpdate:
        """A file sage-mem wrote, plus the owner's lines: the region where its header was."""
        head = self._blocks(before)
        if head:
            head.append(self.newline)
        tail = self._blocks(after)
        if tail:
            tail.insert(0, self.newline)
        return self._fitted(head, tail, keep_empty=True)

    def appended(self, existing: bytes, lines: list[str]) -> IndexUpdate:
        """An owner's file without a region: one after the owner's lines, if it lists anything."""
        head = list(lines)
        if not head[-1].endswith("\n"):
            head[-1] += self.newline
        if _content(head[-1]).strip():
            head.append(self.newline)
        update = self._fitted(head, [], keep_empty=False)
        return update if update.data is not None else IndexUpdate(existing, owner_text=True)

    def _blocks(self, runs: list[list[str]]) -> list[str]:
        out: list[str] = []
        for run in runs:
            if out:
                if not out[-1].endswith("\n"):
                    out[-1] += self.newline
                out.append(self.newline)
            out += run
        if out and not out[-1].endswith("\n"):
            out[-1] += self.newline
        return out

    def _fitted(self, head: list[str], tail: list[str], *, keep_empty: bool) -> IndexUpdate:
        owner_listed = {
            target for line in (*head, *tail)
            if (target := index_target(_content(line))) is not None
        }
        unlisted = sorted(
            (m for m in self.memories
             if not m.archived and unicodedata.normalize("NFC", m.id + ".md") not in owner_listed),
            key=lambda m: m.id,
        )
        if not unlisted and not keep_empty:
            return IndexUpdate(None, owner_text=True)

        def build(listed: Sequence[Listed]) -> str:
            region = _region_lines(sorted(listed, key=lambda m: m.id), len(unlisted) - len(listed))
            return "".join((*head, *(line + self.newline for line in region), *tail))

        # One line per memory: more than MAX_LINES can never fit, so never build them all.
        text = build(unlisted) if len(unlisted) <= MAX_LINES else ""
        if not text or not self._fits(text):
            text = _largest_fit(_ranked(unlisted, self.retrievals), build, self._fits)
        return IndexUpdate(_encode(self.bom, text), owner_text=True)

    def _fits(self, text: str) -> bool:
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        return lines <= MAX_LINES and len(_encode(self.bom, text)) <= MAX_BYTES


def _largest_fit(ranked: Sequence[Listed], build: Callable[[Sequence[Listed]], str],
                 fits: Callable[[str], bool]) -> str:
    """`build` of the longest prefix of `ranked` that fits (none, when not even the count does)."""
    low, high = 0, min(len(ranked), MAX_LINES)
    while low < high:
        mid = (low + high + 1) // 2
        if fits(build(ranked[:mid])):
            low = mid
        else:
            high = mid - 1
    return build(ranked[:low])


def _region_lines(memories: Sequence[Listed], more: int) -> list[str]:
    groups: dict[str, list[Listed]] = {}
    for memory in memories:
        groups.setdefault(_group(memory), []).append(memory)
    lines = [REGION_BEGIN]
    for n, name in enumerate(sorted(groups, key=_group_order)):
        if n:
            lines.append("")
        lines.append(f"## {name}")
        lines += [entry_line(memory) for memory in groups[name]]
    if more:
        if memories:
            lines.append("")
        lines.append(_more_line(more))
    lines.append(REGION_END)
    return lines
