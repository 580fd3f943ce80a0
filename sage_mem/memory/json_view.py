"""The JSON view of a result value: its fields under camelCase keys, in their order.

`--json`, the MCP tools and the page print results (a dream run, an audit
finding, a rollback's action) with the keys their readers expect (`runId` for
`run_id`); one function spells that mapping, so no `to_dict` lists a value's
fields again one by one.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def camel(name: str) -> str:
    """`rolled_back_by` -> `rolledBackBy`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_dict(value: Any, names: str | None = None) -> dict[str, Any]:
    """`value`'s dataclass fields (or the space-separated `names`) under camelCase keys, in order.

    A key a caller then sets again (`{**camel_dict(self), "seconds": …}`) keeps its place.
    """
    keys = names.split() if names is not None else [spec.name for spec in fields(value)]
    return {camel(key): getattr(value, key) for key in keys}
