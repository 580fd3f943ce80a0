"""Frontmatter values coerced into typed fields, and the limits they are held to.

The tolerant coercion `memory_from_meta` (`memory/value.py`) makes each `Memory`'s
fields with, the fields MEMORY.md lists of a memory (`listed_fields`), the
dates a memory carries, and the constants every room names (`CATEGORIES`,
`MAX_FILE_BYTES`). No dataclass here: `dataclasses` imports `inspect` (with
`ast`, `dis`, `tokenize`, ~10 ms), and a process that only lists a few
memories (a sync receiving them) needs none of `Memory`. `value` re-exports
each public name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

CATEGORIES = ("user", "feedback", "project", "reference")
DEFAULT_TRUST = 0.5
MAX_TAGS = 20
MAX_TAG_LENGTH = 40
MAX_FILE_BYTES = 512 * 1024
GLOBAL_PROJECT = "global"
# An integer field past this many bits (~3,900 decimal digits) is refused: Python
# cannot write it as decimal text, so it could not be shown or saved.
MAX_INT_BITS = 13_000


INVALID = "invalid-value"


class ValueProblem(str):
    """One thing wrong with a memory's values: the message a person reads, and its code.

    A `str`, so that it prints, compares and serialises as its message; `code`
    is the audit check it is reported under and `key` the frontmatter key it
    is about, so that rewording a message never reclassifies it.
    """

    code: str
    key: str | None

    def __new__(cls, message: str, code: str, key: str | None = None) -> ValueProblem:
        problem = super().__new__(cls, message)
        problem.code = code
        problem.key = key
        return problem


def listed_fields(
    memory_id: str, meta: Mapping[str, Any], body: str
) -> tuple[str | None, str, str | None, bool, int]:
    """What MEMORY.md shows of a memory (`catalog.Listed`): its name, display text,
    category, baseline flag and priority, as `memory_from_meta` makes them (the same
    helpers), without the 17 other fields: a join lists 10,000 memories."""
    description = _text(meta.get("description"))
    if not description:  # `Memory.display`: the summary, else the fallback description
        description = _text(meta.get("summary")) or _fallback_description(meta, body, memory_id)
    return (_text(meta.get("name")) or None, description, _category(meta)[0],
            meta.get("baseline") is True,
            _int(meta.get("baselinePriority"), "baselinePriority", []))


def _category(meta: Mapping[str, Any]) -> tuple[str | None, str | None]:
    for key in ("category", "type"):
        value = _text(meta.get(key))
        if value:
            return value.lower(), key
    nested = meta.get("metadata")
    if isinstance(nested, Mapping):
        value = _text(nested.get("type"))
        if value:
            return value.lower(), "metadata.type"
    return None, None


def _text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _int_text(value)
    return " ".join(str(value).split())


def _int_text(value: int) -> str:
    """An integer as decimal text; past Python's limit on decimal digits, in hex (it has none).

    A file's YAML never gives such an integer (`memory/file_format.py` keeps it as written),
    but a caller of the API can.
    """
    try:
        return str(value)
    except ValueError:
        return hex(value)


def _shown(value: Any) -> str:
    """A value as a problem message shows it: its repr, cut at 80 characters, never an error."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long for decimal text, maybe inside a list
        text = f"a {type(value).__name__} too large to show"
    return text if len(text) <= 80 else text[:79] + "…"


def _fallback_description(meta: Mapping[str, Any], body: str, memory_id: str) -> str:
    name = _text(meta.get("name"))
    if name:
        return name
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:200]
    return memory_id


def _trust(value: Any, found: list[str]) -> float:
    if value is None:
        return DEFAULT_TRUST
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        found.append(ValueProblem(f"trust is not a number: {_shown(value)}", INVALID, "trust"))
        return DEFAULT_TRUST
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        number = math.inf if value > 0 else -math.inf
    if not 0.0 <= number <= 1.0:
        shown = _int_text(value) if isinstance(value, int) else str(value)
        found.append(ValueProblem(f"trust {shown[:40]} outside 0..1", INVALID, "trust"))
        return min(1.0, max(0.0, number))
    return number


def _int(value: Any, key: str, found: list[str]) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        found.append(ValueProblem(f"{key} is not an integer: {_shown(value)}", INVALID, key))
        return 0
    if value.bit_length() > MAX_INT_BITS:
        found.append(ValueProblem(
            f"{key} is an integer of {value.bit_length():,} bits, too large to use", INVALID, key
        ))
        return 0
    return value


def _strings(value: Any, key: str, found: list[str]) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        items: list[Any] = [part for part in value.split(",")]
    elif isinstance(value, list):
        items = value
    else:
        found.append(ValueProblem(f"{key} is not a list: {_shown(value)}", INVALID, key))
        items = [value] if isinstance(value, (int, float)) else []
    # A dict keeps the first of each, in order, in linear time: a list of 99,000
    # tags, searched item by item, took 35 s to read.
    return tuple(dict.fromkeys(text for text in map(_text, items) if text))


def _date_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return iso_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    return _text(value) or None


def iso_datetime(moment: datetime) -> str:
    """ISO 8601 text for a datetime; UTC is written with a `Z`."""
    if moment.tzinfo is not None and moment.utcoffset() == timedelta(0):
        return moment.replace(tzinfo=None).isoformat() + "Z"
    return moment.isoformat()


def now_iso() -> str:
    """The current time in UTC, to the second, as the tool writes `updated`."""
    return iso_datetime(datetime.now(UTC).replace(microsecond=0))


# The moments every zone's clock can show (a zone is at most a day from UTC).
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def parse_moment(text: str | None) -> datetime | None:
    """Read an ISO date or datetime written in a memory; None when it is not one."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        # A moment so near the calendar's edge that some zone's clock falls off it cannot be
        # shown as an age or compared with now: it is not a date a memory can carry.
        if not _EARLIEST <= moment <= _LATEST:
            return None
    except OverflowError:
        return None
    return moment


def moment_order(text: str | None) -> float:
    """A stamp as a number that orders stamps by when they were written, whatever zone each
    is in (as text, `2026-11-05T08:00:00+09:00` would come after `2026-11-05`, though it is
    nine hours before it); one that is no date, or none, before every other."""
    moment = parse_moment(text)
    return moment.timestamp() if moment is not None else float("-inf")
