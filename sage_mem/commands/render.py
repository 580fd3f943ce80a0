"""Plain-text rendering of memories and hits for people (the CLI) and agents.

Results say how old a memory is (`age_note` in `memory/value.py`, the one wording of every
interface): models are poor at date arithmetic.

The one-line fields of a memory (id, category, description, the header lines
of `show`) are printed through `visible_name`/`visible`: a terminal escape or a
bidi control in a file is named (`<U+001B>`), not sent to the terminal or to an
agent reading the output. The body `show` prints is the file's own text with
its controls named likewise (`visible`: the newline and the tab stay; a CRLF file's
lines print as lines); `show --json` gives the text as it is.
"""

from __future__ import annotations

from datetime import datetime

from ..checks.prompt_injection import visible, visible_name
from ..memory.value import Memory, age_note
from ..search.index import Hit


def hit_dict(hit: Hit, now: datetime | None = None) -> dict[str, object]:
    """A hit as JSON data, with its age note."""
    data = hit.to_dict()
    data["age"] = age_note(hit.updated, now)
    return data


def hit_line(hit: Hit, now: datetime | None = None) -> str:
    category = f"[{visible_name(hit.category)}] " if hit.category else ""
    age = age_note(hit.updated, now, today=False)
    tail = f"  ({age})" if age else ""
    text = visible(hit.description)  # a summary never hides the description (DESIGN §7.3a)
    return f"{hit.score:7.3f}  {visible_name(hit.id)}  {category}{text}{tail}"


def memory_line(memory: Memory) -> str:
    category = f"[{visible_name(memory.category)}] " if memory.category else ""
    flags = "".join(
        f" ({flag})"
        for flag, on in (("baseline", memory.baseline), ("locked", memory.locked))
        if on
    )
    return f"{visible_name(memory.id)}  {category}{visible(memory.display)}{flags}"


def memory_text(memory: Memory, now: datetime | None = None) -> str:
    """One memory in full, for `show`: a few header lines, then the file's body."""
    fields = [
        ("id", memory.id),
        ("description", memory.description),
        ("category", memory.category),
        ("name", memory.name),
        ("summary", memory.summary),
        ("aliases", ", ".join(memory.aliases) or None),
        ("tags", ", ".join(memory.tags) or None),
        ("trust", f"{memory.trust:g}"),
        ("project", memory.project),
        ("baseline", f"yes (priority {memory.baseline_priority})" if memory.baseline else None),
        ("locked", "yes" if memory.locked else None),
        ("archived", "yes" if memory.archived else None),
        ("created", memory.created),
        (
            "updated",
            " — ".join(x for x in (memory.updated, age_note(memory.updated, now)) if x) or None,
        ),
        ("path", str(memory.path)),
        ("sha256", memory.sha256),
    ]
    width = max(len(name) for name, _ in fields)
    lines = [
        f"{name.ljust(width)}  {visible_name(value)}"
        for name, value in fields
        if value not in (None, "")
    ]
    for problem in memory.problems:
        lines.append(f"{'problem'.ljust(width)}  {visible_name(problem)}")
    # The body's lines as lines (a CRLF file's too), every other control named: a remote's or
    # another tool's text never moves, clears or retitles the terminal it is shown in.
    body = visible(memory.body.replace("\r\n", "\n").strip("\n"))
    return "\n".join(lines) + ("\n\n" + body if body else "") + "\n"
