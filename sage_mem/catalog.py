"""MEMORY.md: the index file in Claude Code's format, regenerated, never merged.

One line per memory, `- [Title](file.md) — hook`, under 150 characters, grouped
by category in a fixed order and sorted by id within a group, with no dates or
counts in it, so the same memories always give the same bytes and git diffs
stay small. Claude Code loads at most 200 lines and 25,000 bytes: past that the
file lists baselines and the most used memories and says how many more exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .memory import CATEGORIES, Memory

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


def entry_line(memory: Memory) -> str:
    """`- [Title](file.md) — hook`, cut to fit in MAX_LINE_CHARS.

    The link is never cut (a cut link is a broken one): a long title is
    shortened first, then the hook. Only an id too long to fit by itself can
    make the line longer than MAX_LINE_CHARS.
    """
    title = " ".join((memory.name or memory.id.rsplit("/", 1)[-1]).split())
    title = title.replace("[", "(").replace("]", ")")
    target = memory.id + ".md"
    if any(ch in target for ch in " ()<>"):
        target = f"<{target}>"
    fixed = len("- []()") + len(target)
    title = _cut(title, max(MIN_TITLE_CHARS, MAX_LINE_CHARS - fixed - 3 - MIN_HOOK_CHARS))
    head = f"- [{title}]({target})"
    hook = " ".join(memory.display.split())
    room = MAX_LINE_CHARS - len(head) - 3
    if not hook or room < MIN_HOOK_CHARS // 2:
        return head
    return f"{head} — {_cut(hook, room)}"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + "…"


def _group(memory: Memory) -> str:
    return memory.category or "uncategorized"


def _group_order(name: str) -> tuple[int, str]:
    if name in CATEGORIES:
        return (CATEGORIES.index(name), name)
    return (len(CATEGORIES) + (1 if name == "uncategorized" else 0), name)


def render(memories: Sequence[Memory], retrievals: Mapping[str, int] | None = None) -> str:
    """The text of MEMORY.md for these (unarchived) memories."""
    memories = sorted((m for m in memories if not m.archived), key=lambda m: m.id)
    if len(memories) <= MAX_LINES:
        text = _render_groups(memories, more=0)
        if _fits(text):
            return text
    counts = retrievals or {}
    ranked = sorted(
        memories,
        key=lambda m: (not m.baseline, -m.baseline_priority if m.baseline else 0,
                       -counts.get(m.id, 0), m.id),
    )
    # One line per memory: no more than MAX_LINES can fit, whatever the folder's size.
    low, high = 0, min(len(ranked), MAX_LINES)
    while low < high:
        mid = (low + high + 1) // 2
        if _fits(_render_groups(sorted(ranked[:mid], key=lambda m: m.id), len(ranked) - mid)):
            low = mid
        else:
            high = mid - 1
    return _render_groups(sorted(ranked[:low], key=lambda m: m.id), len(ranked) - low)


def _fits(text: str) -> bool:
    return text.count("\n") <= MAX_LINES and len(text.encode("utf-8")) <= MAX_BYTES


def _render_groups(memories: Sequence[Memory], more: int) -> str:
    groups: dict[str, list[Memory]] = {}
    for memory in memories:
        groups.setdefault(_group(memory), []).append(memory)
    lines = [HEADER, "", NOTE]
    for name in sorted(groups, key=_group_order):
        lines += ["", f"## {name}"]
        lines += [entry_line(memory) for memory in groups[name]]
    if more:
        lines += ["", f"…and {more} more memories not listed here: `sage-mem search` finds them."]
    if not memories and not more:
        lines += ["", "No memories yet."]
    return "\n".join(lines) + "\n"
