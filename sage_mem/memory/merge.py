"""Three-way merge of one memory: its frontmatter key by key, its body line by line.

Pure: it is handed three versions of a memory (the `base` both sides started
from, `ours`, `theirs`) as parsed frontmatter mappings and body text, and
touches no file. The page uses it when a save meets a change on disk (ours is
the person's edit, theirs the disk); a git merge driver can use it the same way.

The rules, for each frontmatter key:

- the same on both sides: that value (a key both sides deleted stays deleted);
- changed on one side only: that side's value (a deletion is a change);
- changed on both sides to different values:
  - a list in `set_keys` (tags, aliases, supersedes): what either side removed
    goes, what either side added comes, in ours' order then theirs' additions;
  - a key in `newest_keys` (updated, modified): the later moment;
  - a key in `moved_keys` (trust), a number from 0 to 1 feedback moves a step at a time: both
    sides' moves from the base, added (a helpful on one machine and an unhelpful on the
    other cancel out; two helpfuls count twice), kept within 0..1;
  - two mappings (Claude Code's `metadata`): merged key by key by these rules;
  - anything else is a `FieldConflict`, for the person (or the caller) to decide.

The body is split into lines (CRLF read as LF) and merged as diff3 does:
a run of lines changed on one side only is taken from that side; a run changed
on both sides the same way is taken once; a run changed on both sides in
different ways is a `Clash` that keeps the base, ours and theirs lines. Two
edits count as separate only with at least one unchanged line between them
(as in git), so edits in different paragraphs merge, edits of adjacent lines clash.

A proposal never decides a conflict silently: `MemoryMerge.meta` holds ours
for a conflicting key and `TextMerge.text()` needs a choice for each clash.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from .coercion import DEFAULT_TRUST, parse_moment

SET_KEYS = frozenset({"tags", "aliases", "supersedes"})
NEWEST_KEYS = frozenset({"updated", "modified"})
# Evidence that adds up: each side's move from the base counts (`_both_moves`).
MOVED_KEYS = frozenset({"trust"})
Choice = Literal["ours", "theirs", "both"]


class _Missing:
    """A key absent from one version (deleted there, or never there)."""

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""The value of a key a version does not have."""


class Version(NamedTuple):
    """One version of a memory: its parsed frontmatter and its body text."""

    meta: Mapping[str, Any]
    body: str


@dataclass(frozen=True)
class FieldConflict:
    """A key both sides changed to different values; MISSING where a side deleted it."""

    key: str
    base: Any
    ours: Any
    theirs: Any


@dataclass(frozen=True)
class Clash:
    """A run of body lines both sides changed in different ways."""

    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]


@dataclass(frozen=True)
class TextMerge:
    """A merged text: runs of lines that merged, and clashes that need a choice.

    `chunks` hold lines without their line break; `newline` is the line break
    the merged text is written with.
    """

    chunks: tuple[tuple[str, ...] | Clash, ...]
    newline: str = "\n"

    @property
    def clean(self) -> bool:
        return not self.clashes

    @property
    def clashes(self) -> tuple[Clash, ...]:
        return tuple(chunk for chunk in self.chunks if isinstance(chunk, Clash))

    def text(self, choose: Choice | Sequence[Choice] | None = None) -> str:
        """The merged text, each clash resolved by `choose` (one choice, or one per clash).

        Raises ValueError when there are clashes and no choice for them: a
        merge never picks a side on its own.
        """
        clashes = self.clashes
        if isinstance(choose, str):
            choices: Sequence[Choice] = [choose] * len(clashes)
        else:
            choices = list(choose or ())
        if len(choices) != len(clashes):
            raise ValueError(f"{len(clashes)} clashes need a choice each, {len(choices)} given")
        picks = iter(choices)
        lines: list[str] = []
        for chunk in self.chunks:
            if isinstance(chunk, Clash):
                pick = next(picks)
                if pick not in ("ours", "theirs", "both"):
                    raise ValueError(f"a clash is resolved by ours, theirs or both, not {pick!r}")
                if pick in ("ours", "both"):
                    lines.extend(chunk.ours)
                if pick in ("theirs", "both"):
                    lines.extend(chunk.theirs)
            else:
                lines.extend(chunk)
        return self.newline.join(lines)


@dataclass(frozen=True)
class FieldsMerge:
    """Merged frontmatter: ours' value stands in for each conflicting key until it is decided."""

    meta: dict[str, Any]
    conflicts: tuple[FieldConflict, ...]
    from_ours: tuple[str, ...]
    """Keys only ours changed (taken from ours), as dotted paths for nested keys."""
    from_theirs: tuple[str, ...]
    """Keys only theirs changed (taken from theirs)."""
    combined: tuple[str, ...]
    """Keys both changed that the rules combined (set union, newest moment, both moves)."""


@dataclass(frozen=True)
class MemoryMerge:
    """A whole memory merged: frontmatter and body."""

    fields: FieldsMerge
    body: TextMerge

    @property
    def meta(self) -> dict[str, Any]:
        return self.fields.meta

    @property
    def conflicts(self) -> tuple[FieldConflict, ...]:
        return self.fields.conflicts

    @property
    def clean(self) -> bool:
        return not self.fields.conflicts and self.body.clean


def merge_memory(
    base: Version,
    ours: Version,
    theirs: Version,
    *,
    set_keys: Iterable[str] = SET_KEYS,
    newest_keys: Iterable[str] = NEWEST_KEYS,
    moved_keys: Iterable[str] = MOVED_KEYS,
) -> MemoryMerge:
    """Merge two versions of a memory made from `base`: frontmatter key by key, body by lines.

    Each version is a `Version` or any (meta, body) pair.
    """
    return MemoryMerge(
        merge_fields(base[0], ours[0], theirs[0], set_keys=set_keys, newest_keys=newest_keys,
                     moved_keys=moved_keys),
        merge_text(base[1], ours[1], theirs[1]),
    )


def merge_fields(
    base: Mapping[str, Any],
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    *,
    set_keys: Iterable[str] = SET_KEYS,
    newest_keys: Iterable[str] = NEWEST_KEYS,
    moved_keys: Iterable[str] = MOVED_KEYS,
) -> FieldsMerge:
    """Merge frontmatter mappings by the module's rules; key order follows ours."""
    merger = _FieldMerger(frozenset(set_keys), frozenset(newest_keys), frozenset(moved_keys))
    meta = merger.merge(base, ours, theirs, prefix="")
    return FieldsMerge(
        meta, tuple(merger.conflicts), tuple(merger.from_ours), tuple(merger.from_theirs),
        tuple(merger.combined),
    )


class _FieldMerger:
    def __init__(self, set_keys: frozenset[str], newest_keys: frozenset[str],
                 moved_keys: frozenset[str]) -> None:
        self.set_keys = set_keys
        self.newest_keys = newest_keys
        self.moved_keys = moved_keys
        self.conflicts: list[FieldConflict] = []
        self.from_ours: list[str] = []
        self.from_theirs: list[str] = []
        self.combined: list[str] = []

    def merge(
        self, base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any],
        *, prefix: str,
    ) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for key in _key_order(ours, theirs, base):
            value = self.merge_value(
                key, prefix + str(key), base.get(key, MISSING), ours.get(key, MISSING),
                theirs.get(key, MISSING),
            )
            if value is not MISSING:
                merged[key] = value
        return merged

    def merge_value(self, key: Any, path: str, base: Any, ours: Any, theirs: Any) -> Any:
        if same(ours, theirs):
            return ours
        if same(ours, base):
            self.from_theirs.append(path)
            return theirs
        if same(theirs, base):
            self.from_ours.append(path)
            return ours
        if key in self.set_keys and all(_is_list(v) for v in (ours, theirs)) and (
            base is MISSING or _is_list(base)
        ):
            self.combined.append(path)
            return merge_sets(base or [], ours, theirs)
        if key in self.newest_keys and ours and theirs:
            newest = _newest(ours, theirs)
            if newest is not MISSING:
                self.combined.append(path)
                return newest
        if key in self.moved_keys and path == key:  # a memory's own trust, not a mapping's key
            moved = _both_moves(base, ours, theirs)
            if moved is not MISSING:
                self.combined.append(path)
                return moved
        if all(isinstance(v, Mapping) for v in (ours, theirs)) and (
            base is MISSING or isinstance(base, Mapping)
        ):
            return self.merge(base or {}, ours, theirs, prefix=path + ".")
        self.conflicts.append(FieldConflict(path, base, ours, theirs))
        return ours


def merge_sets(base: Sequence[Any], ours: Sequence[Any], theirs: Sequence[Any]) -> list[Any]:
    """Three-way merge of two lists read as sets: removals and additions of both sides."""
    ours_keys = {_hashable(v) for v in ours}
    theirs_keys = {_hashable(v) for v in theirs}
    removed = {
        k for k in (_hashable(v) for v in base) if k not in ours_keys or k not in theirs_keys
    }
    merged: list[Any] = []
    seen: set[Any] = set()
    for value in [*ours, *theirs]:
        key = _hashable(value)
        if key in removed or key in seen:
            continue
        seen.add(key)
        merged.append(value)
    return merged


def merge_text(base: str, ours: str, theirs: str) -> TextMerge:
    """Line-based three-way merge (diff3); CRLF is read as LF.

    The merged text keeps ours' line breaks, unless only theirs changed them.
    """
    newlines = [_newline(t) for t in (base, ours, theirs)]
    newline = newlines[2] if newlines[1] == newlines[0] else newlines[1]
    base_lines, ours_lines, theirs_lines = (_lines(t) for t in (base, ours, theirs))
    chunks: list[tuple[str, ...] | Clash] = []

    def emit(lines: Sequence[str]) -> None:
        if not lines:
            return
        if chunks and not isinstance(chunks[-1], Clash):
            chunks[-1] = (*chunks[-1], *lines)
        else:
            chunks.append(tuple(lines))

    at_base = at_ours = at_theirs = 0
    for base_start, base_end, ours_start, theirs_start in _sync_regions(
        base_lines, ours_lines, theirs_lines
    ):
        was = base_lines[at_base:base_start]
        mine = ours_lines[at_ours:ours_start]
        other = theirs_lines[at_theirs:theirs_start]
        if mine == other or was == other:
            emit(mine)
        elif was == mine:
            emit(other)
        else:
            chunks.append(Clash(tuple(was), tuple(mine), tuple(other)))
        emit(base_lines[base_start:base_end])
        length = base_end - base_start
        at_base, at_ours, at_theirs = base_end, ours_start + length, theirs_start + length
    return TextMerge(tuple(chunks), newline)


def differing_fields(
    intended: Mapping[str, Any], current: Mapping[str, Any], *, body_key: str = "body"
) -> tuple[str, ...]:
    """The keys of `intended` whose value is not what `current` holds (bodies by their lines)."""
    differ = []
    for key, value in intended.items():
        now = current.get(key, MISSING)
        if key == body_key and isinstance(value, str) and isinstance(now, str):
            if _lines(value.strip("\r\n")) != _lines(now.strip("\r\n")):
                differ.append(key)
        elif not same(value, now):
            differ.append(key)
    return tuple(differ)


def same(a: Any, b: Any) -> bool:
    """Equal as frontmatter values: a list and a tuple of the same items are the same."""
    if _is_list(a) and _is_list(b):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b  # true is not 1
    if a is MISSING or b is MISSING:
        return a is b
    return bool(a == b)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _both_moves(base: Any, ours: Any, theirs: Any) -> Any:
    """The base moved by both sides' moves, within 0..1 (3 decimals, as feedback writes it);
    MISSING when a value is no number from 0 to 1 (a person's text: a conflict as before). A
    base without the key counts from the default trust."""
    start = DEFAULT_TRUST if base is MISSING else base
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1
               for v in (start, ours, theirs)):
        return MISSING
    return round(min(1.0, max(0.0, ours + theirs - start)), 3)


def _newest(ours: Any, theirs: Any) -> Any:
    moments = [parse_moment(v) if isinstance(v, str) else None for v in (ours, theirs)]
    if moments[0] is None or moments[1] is None:
        return MISSING
    return ours if moments[0] >= moments[1] else theirs


def _key_order(*mappings: Mapping[str, Any]) -> list[Any]:
    """Ours' keys in order; a key only another side has goes after the key it follows there."""
    known = set(mappings[0])
    # The keys put right after each key (MISSING: at the start), the last put first: a
    # list's insert at a found index made a merge bringing 40,000 keys quadratic.
    after: dict[Any, list[Any]] = {}
    for other in mappings[1:]:
        previous: Any = MISSING
        for key in other:
            if key not in known:
                known.add(key)
                after.setdefault(previous, []).append(key)
            previous = key
    order: list[Any] = []
    stack = [*mappings[0]][::-1] + after.get(MISSING, [])
    while stack:
        key = stack.pop()
        order.append(key)
        stack.extend(after.get(key, []))
    return order


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").split("\n")


# The line pairs difflib may compare (each base line against each equal line of the side)
# before the lines are lined up more cheaply: ~0.5 s of CPU. Lines repeated many times made
# it quadratic (20,000 lines of `x` and blank lines: 35 s; a remote can send 8 MB of them).
_MAX_COMPARED = 500_000


def _compared(base: Sequence[str], side: Sequence[str]) -> int:
    """How many line pairs difflib's search looks at, at most: for each base line, the side's
    lines equal to it."""
    counts: dict[str, int] = {}
    for line in side:
        counts[line] = counts.get(line, 0) + 1
    return sum(counts.get(line, 0) for line in base)


def _kept(base: Sequence[str], side: Sequence[str]) -> list[difflib.Match]:
    """The runs of `base` lines `side` kept (difflib's matching blocks, without its junk
    heuristic). Where that search would be long (`_MAX_COMPARED`), the lines both share at
    the start and at the end are kept and the ones between them matched only if that is
    cheap; else they count as replaced: a change of the other side among them is then a
    clash, both kept, never a merge that takes minutes."""
    if _compared(base, side) <= _MAX_COMPARED:
        return difflib.SequenceMatcher(None, base, side, autojunk=False).get_matching_blocks()
    start, most = 0, min(len(base), len(side))
    while start < most and base[start] == side[start]:
        start += 1
    end = 0
    while end < most - start and base[-1 - end] == side[-1 - end]:
        end += 1
    middle = (base[start:len(base) - end], side[start:len(side) - end])
    blocks = [difflib.Match(0, 0, start)] if start else []
    if _compared(*middle) <= _MAX_COMPARED:
        blocks += [difflib.Match(start + b, start + s, size) for b, s, size in
                   difflib.SequenceMatcher(None, *middle, autojunk=False).get_matching_blocks()
                   if size]
    if end:
        blocks.append(difflib.Match(len(base) - end, len(side) - end, end))
    return [*blocks, difflib.Match(len(base), len(side), 0)]


def _sync_regions(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]
) -> list[tuple[int, int, int, int]]:
    """Runs of base lines that both sides kept: (base start, base end, ours start, theirs start).

    Ends with an empty run at the end of all three, so that what follows the
    last kept run is merged too.
    """
    ours_blocks, theirs_blocks = _kept(base, ours), _kept(base, theirs)
    regions = []
    i = j = 0
    while i < len(ours_blocks) and j < len(theirs_blocks):
        o_base, o_side, o_len = ours_blocks[i]
        t_base, t_side, t_len = theirs_blocks[j]
        start, end = max(o_base, t_base), min(o_base + o_len, t_base + t_len)
        if start < end:
            regions.append((start, end, o_side + start - o_base, t_side + start - t_base))
        if o_base + o_len < t_base + t_len:
            i += 1
        else:
            j += 1
    regions.append((len(base), len(base), len(ours), len(theirs)))
    return regions
