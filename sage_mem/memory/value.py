"""The Memory value: what one memory file means once parsed.

Owns field names and defaults, and makes a `Memory` of frontmatter with the
tolerant coercion of `memory/coercion.py` (whose public names it re-exports:
the limits, the dates, `listed_fields`). It never touches the disk (see
`memory/file_format.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .coercion import (
    CATEGORIES,
    DEFAULT_TRUST,
    GLOBAL_PROJECT,
    INVALID,
    MAX_FILE_BYTES,
    MAX_INT_BITS,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    ValueProblem,
    _category,
    _date_text,
    _fallback_description,
    _int,
    _shown,
    _strings,
    _text,
    _trust,
    iso_datetime,
    listed_fields,
    moment_order,
    now_iso,
    parse_moment,
)

# Named here for every room that imports them from `value` (they live in `coercion`).
__all__ = [
    "CATEGORIES", "DEFAULT_TRUST", "GLOBAL_PROJECT", "INVALID", "MAX_FILE_BYTES",
    "MAX_INT_BITS", "MAX_TAGS", "MAX_TAG_LENGTH", "Memory", "ValueProblem", "age_note",
    "display_text", "iso_datetime", "listed_fields", "memory_from_meta", "moment_order",
    "not_text", "now_iso", "parse_moment", "shown_body",
]


@dataclass(frozen=True)
class Memory:
    """One memory: its id, typed fields, the raw frontmatter and the exact body."""

    id: str
    path: Path
    description: str
    body: str
    category: str | None = None
    name: str | None = None
    summary: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    trust: float = DEFAULT_TRUST
    baseline: bool = False
    baseline_priority: int = 0
    project: str | None = None
    created: str | None = None
    updated: str | None = None
    supersedes: tuple[str, ...] = ()
    locked: bool = False
    archived: bool = False
    sha256: str = ""
    category_key: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    problems: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        """Short text for listings: the description the person wrote.

        A summary (autodream fills it) never hides it: it stands in only for a file
        with no description, whose description is then a fallback (name, first line).
        """
        return display_text(self.description, self.summary,
                            (getattr(problem, "code", None) for problem in self.problems))

    def to_dict(self, *, body: bool = True) -> dict[str, Any]:
        """Plain JSON-ready data, in a stable key order."""
        data: dict[str, Any] = {
            "id": self.id,
            "description": self.description,
            "category": self.category,
            "name": self.name,
            "summary": self.summary,
            "aliases": list(self.aliases),
            "tags": list(self.tags),
            "trust": self.trust,
            "baseline": self.baseline,
            "baselinePriority": self.baseline_priority,
            "project": self.project,
            "created": self.created,
            "updated": self.updated,
            "supersedes": list(self.supersedes),
            "locked": self.locked,
            "archived": self.archived,
            "sha256": self.sha256,
            "path": str(self.path),
        }
        if body:
            data["body"] = self.body
        if self.problems:
            data["problems"] = list(self.problems)
        return data


def display_text(description: str, summary: str | None,
                 problem_codes: Iterable[str | None]) -> str:
    """`Memory.display` from the fields it reads (the index cache's records make it so too)."""
    if summary and "missing-description" in problem_codes:
        return summary
    return description


def shown_body(body: str) -> str:
    """A body as an agent is shown it (`agents/context.render_memory`): line ends made LF,
    no blank lines before or after. What the index cache's secret flag was computed on
    (`checks/credentials.shown_secrets`), so the two never differ."""
    return body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def not_text(what: str, value: str) -> str | None:
    """Why `value` cannot be stored as UTF-8, or None: a lone surrogate, which is what bytes
    that were not UTF-8 (an argument typed in a Latin-1 terminal) become."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"{what} is not valid text: it holds U+{ord(value[exc.start]):04X}, a lone "
                "surrogate (input that was not UTF-8?)")
    return None


def memory_from_meta(
    memory_id: str,
    path: Path,
    meta: Mapping[str, Any],
    body: str,
    *,
    sha256: str = "",
    archived: bool = False,
    problems: tuple[str, ...] = (),
) -> Memory:
    """Build a Memory from parsed frontmatter, coercing values and noting what was wrong."""
    found: list[str] = list(problems)
    category, category_key = _category(meta)
    if category is not None and category not in CATEGORIES:
        found.append(
            ValueProblem(f"unknown category {category!r}", "unknown-category", category_key)
        )
    description = _text(meta.get("description"))
    if not description:
        found.append(ValueProblem("no description", "missing-description", "description"))
        description = _fallback_description(meta, body, memory_id)
    trust = _trust(meta.get("trust"), found)
    tags = _strings(meta.get("tags"), "tags", found)
    if len(tags) > MAX_TAGS:
        found.append(ValueProblem(f"{len(tags)} tags (at most {MAX_TAGS})", "tags-limit", "tags"))
    long_tags = [t for t in tags if len(t) > MAX_TAG_LENGTH]
    if long_tags:
        found.append(ValueProblem(
            f"tag longer than {MAX_TAG_LENGTH} characters: {long_tags[0][:50]!r}", "tags-limit",
            "tags",
        ))
    for key in ("created", "updated", "modified"):
        value = meta.get(key)
        if value not in (None, "") and parse_moment(_date_text(value)) is None:
            found.append(ValueProblem(f"{key} is not a date: {_shown(value)}", INVALID, key))
    project = _text(meta.get("project")) or None
    if project == GLOBAL_PROJECT:
        project = None
    return Memory(
        id=memory_id,
        path=path,
        description=description,
        body=body,
        category=category,
        name=_text(meta.get("name")) or None,
        summary=_text(meta.get("summary")) or None,
        aliases=_strings(meta.get("aliases"), "aliases", found),
        tags=tags,
        trust=trust,
        baseline=meta.get("baseline") is True,
        baseline_priority=_int(meta.get("baselinePriority"), "baselinePriority", found),
        project=project,
        created=_date_text(meta.get("created")),
        updated=_date_text(meta.get("updated") or meta.get("modified")),
        supersedes=_strings(meta.get("supersedes"), "supersedes", found),
        locked=meta.get("locked") is True,
        archived=archived,
        sha256=sha256,
        category_key=category_key,
        meta=dict(meta),
        problems=tuple(found),
    )


def age_note(
    updated: str | None, now: datetime | None = None, *, today: bool = True
) -> str | None:
    """How old a memory is: `updated today`, `updated yesterday`, `updated 12 days ago`.

    The one age note of every interface (CLI, MCP, page, hooks): models are poor
    at date arithmetic, so results say it. Whole calendar days on the local
    clock, as the person who wrote the memory counts them (a memory written at
    23:00 is "yesterday" at 01:00); a date without a time is that day. None
    when `updated` is missing or not a date, and with `today=False` (compact
    results, which note only old memories) for one updated today.
    """
    moment = parse_moment(updated)
    if moment is None:
        return None
    now = now or datetime.now(UTC)
    day = moment.date() if len(updated or "") == 10 else moment.astimezone().date()
    days = (now.astimezone().date() - day).days
    if days <= 0:
        return "updated today" if today else None
    return "updated yesterday" if days == 1 else f"updated {days} days ago"

