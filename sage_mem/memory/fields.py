"""The writable fields of a memory: one spec, from which every interface is derived.

For each field: its Python name (a `MemoryStore.write` keyword and a `Memory`
attribute), its frontmatter key (that name in camelCase), its kind, its help
text, its place in a new file and its validation. Derived from `FIELDS`:

- the store's validation, name-to-key mapping and new-file key order (`store.py`);
- the CLI's `add` options (`commands/`);
- the MCP `memory_write` input schema (`mcp_server/server.py`);
- the page's write arguments, sent by frontmatter key (`ui/api.py`).

The body is not a field: it is the file's text after the frontmatter, and
each interface takes it in its own way (an argument, stdin, a text area).

Validation is strict: a value of the wrong type is refused, never coerced
("yes" is not true, "5" is not a number), so every interface refuses the same
values. Imported by the store on the hook's path: must not import click or
pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidMemory
from .json_view import camel
from .value import CATEGORIES, MAX_INT_BITS, MAX_TAG_LENGTH, MAX_TAGS, not_text

# The kinds of value a field holds.
TEXT = "text"  # one line: runs of white space become one space
TEXTS = "texts"  # a list of one-line texts: blanks dropped, repeats dropped, order kept
UNIT = "unit"  # a number from 0 to 1
INT = "int"  # an integer
BOOL = "bool"  # true or false
KINDS = (TEXT, TEXTS, UNIT, INT, BOOL)

# Written by the tool into a new file between the fields before and after them.
STAMPS = ("created", "updated")


@dataclass(frozen=True)
class Field:
    """One writable memory field and everything an interface needs to offer it."""

    name: str
    kind: str
    help: str
    # The CLI option (one value per use for a list: `--tag a --tag b`), its
    # value's name in the help, and for a flag the option that sets it false.
    flag: str
    metavar: str | None = None
    off_flag: str | None = None
    choices: tuple[str, ...] = ()
    required: bool = False  # a new memory needs it, and it may never be blank
    max_items: int | None = None
    max_length: int | None = None
    after_stamps: bool = False  # in a new file, after `created` and `updated`

    @property
    def key(self) -> str:
        """Its frontmatter key: its name in camelCase (`baseline_priority`: `baselinePriority`)."""
        return camel(self.name)

    def check(self, value: Any) -> Any:
        """The value as it is stored; raises InvalidMemory for one this field does not take."""
        if self.kind == TEXT:
            return self._text(value)
        if self.kind == TEXTS:
            return self._texts(value)
        if self.kind == UNIT:
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:  # NaN is in no range
                raise InvalidMemory(f"{self.key} must be a number from 0 to 1, not {value!r}")
            return float(value)
        if self.kind == INT:
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidMemory(f"{self.key} must be an integer, not {value!r}")
            if value.bit_length() > MAX_INT_BITS:
                raise InvalidMemory(f"{self.key} is an integer too large to store")
            return value
        if not isinstance(value, bool):
            raise InvalidMemory(f"{self.key} must be true or false, not {value!r}")
        return value

    def _text(self, value: Any) -> str:
        if self.choices:
            text = value.strip().lower() if isinstance(value, str) else value
            if text not in self.choices:
                raise InvalidMemory(
                    f"{self.key} must be one of {', '.join(self.choices)}, not {value!r}"
                )
            return text
        if not isinstance(value, str):
            raise InvalidMemory(f"{self.key} must be text")
        check_unicode(self.key, value)
        text = " ".join(value.split())
        if self.required and not text:
            raise InvalidMemory(f"{self.key} must not be empty")
        return text

    def _texts(self, value: Any) -> list[str]:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(
            isinstance(item, str) for item in value
        ):
            raise InvalidMemory(f"{self.key} must be a list of text")
        for item in value:
            check_unicode(self.key, item)
        items = list(dict.fromkeys(" ".join(item.split()) for item in value if item.strip()))
        if self.max_items is not None and len(items) > self.max_items:
            raise InvalidMemory(f"at most {self.max_items} {self.key}, not {len(items)}")
        for item in items:
            if self.max_length is not None and len(item) > self.max_length:
                raise InvalidMemory(
                    f"{self.key}: {item[:50]!r} is longer than {self.max_length} characters"
                )
        return items


# In the order a new file lists them (DESIGN §3), `created` and `updated` after `project`.
FIELDS = (
    Field("name", TEXT, "a short name", "--name"),
    Field("description", TEXT,
          "one line saying what this memory is (required when new)", "--description",
          required=True),
    Field("category", TEXT, f"{', '.join(CATEGORIES[:-1])} or {CATEGORIES[-1]}",
          "--category", choices=CATEGORIES),
    Field("trust", UNIT, "how far to rely on it (default 0.5; feedback moves it)",
          "--trust", metavar="0..1"),
    Field("summary", TEXT, "short display text for a long body", "--summary"),
    Field("aliases", TEXTS, "other wordings that should find it", "--alias",
          metavar="ALIAS"),
    Field("tags", TEXTS,
          f"labels to filter by: at most {MAX_TAGS}, each at most {MAX_TAG_LENGTH} characters",
          "--tag", metavar="TAG", max_items=MAX_TAGS, max_length=MAX_TAG_LENGTH),
    Field("baseline", BOOL, "load at the start of every session", "--baseline",
          off_flag="--no-baseline"),
    Field("baseline_priority", INT, "order among baselines, higher first",
          "--baseline-priority", metavar="N"),
    Field("project", TEXT, 'scope it to one project ("global": everywhere)',
          "--project"),
    Field("supersedes", TEXTS, "ids of the memories this one replaces",
          "--supersedes", metavar="ID", after_stamps=True),
    Field("locked", BOOL, "no tool, agent or dream run may change or archive it",
          "--locked", off_flag="--unlocked", after_stamps=True),
)

BY_NAME: Mapping[str, Field] = {field.name: field for field in FIELDS}
BY_KEY: Mapping[str, Field] = {field.key: field for field in FIELDS}


def validated(values: Mapping[str, Any]) -> dict[str, Any]:
    """The given fields (by name; None means not given), checked and as they are stored.

    Raises InvalidMemory for an unknown name or a value its field does not take.
    """
    checked: dict[str, Any] = {}
    for name, value in values.items():
        field = BY_NAME.get(name)
        if field is None:
            raise InvalidMemory(f"unknown field {name!r}")
        if value is not None:
            checked[name] = field.check(value)
    return checked


def new_file_meta(values: Mapping[str, Any], *, created: str, updated: str) -> dict[str, Any]:
    """The frontmatter of a new file, by key, in the spec's order: checked values by name."""
    meta = {field.key: values[field.name] for field in FIELDS
            if field.name in values and not field.after_stamps}
    meta.update(zip(STAMPS, (created, updated), strict=True))
    meta.update({field.key: values[field.name] for field in FIELDS
                 if field.name in values and field.after_stamps})
    return meta


def check_unicode(key: str, value: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (`value.not_text`)."""
    problem = not_text(key, value)
    if problem:
        raise InvalidMemory(problem)
