"""What PyYAML makes of a plain scalar, decided without importing PyYAML.

The frontmatter's fast path (`file_format._simple_mapping`) splits `key: value`
lines itself; which value a plain scalar stands for (`yes`, `0x1F`,
`2026-11-29`, `~`) is PyYAML's decision. Importing yaml costs a process some
15 ms (a sync's receive of a few files, a hook), so this module holds a copy of
PyYAML's implicit resolvers and makes the commonest values (a null, a bool, a
decimal integer or fraction) by PyYAML's own rules; anything else is left to
PyYAML. tests/test_listing_fast_path.py holds the copy to PyYAML's table and
each value to what PyYAML makes of it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .patterns import on_use

NOT_COMMON = object()
"""`common_value`'s answer for a spelling it leaves to PyYAML's constructor."""

_INT_TAG = "tag:yaml.org,2002:int"

# PyYAML's implicit resolvers (yaml/resolver.py, `Resolver`: the same since PyYAML 3.x):
# (tag, pattern, the first characters it is tried for), in PyYAML's order.
PYYAML_RESOLVERS = (
    ("bool", r"""^(?:yes|Yes|YES|no|No|NO
                    |true|True|TRUE|false|False|FALSE
                    |on|On|ON|off|Off|OFF)$""", "yYnNtTfFoO"),
    ("float", r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", "-+0123456789."),
    ("int", r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""", "-+0123456789"),
    ("merge", r"^(?:<<)$", "<"),
    ("null", r"""^(?: ~
                    |null|Null|NULL
                    | )$""", ["~", "n", "N", ""]),
    ("timestamp", r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
                     (?:[Tt]|[ \t]+)[0-9][0-9]?
                     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
                     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""", "0123456789"),
    ("value", r"^(?:=)$", "="),
    ("yaml", r"^(?:!|&|\*)$", "!&*"),
)
Resolvers = dict[str | None, list[tuple[str, re.Pattern[str]]]]


@functools.cache
def copied_resolvers() -> Resolvers:
    """PYYAML_RESOLVERS compiled, by first character, as PyYAML keeps them
    (`yaml.resolver.Resolver.yaml_implicit_resolvers`)."""
    table: Resolvers = {}
    for name, pattern, firsts in PYYAML_RESOLVERS:
        regexp = re.compile(pattern, re.X if "\n" in pattern else 0)
        for first in firsts:
            table.setdefault(first, []).append((f"tag:yaml.org,2002:{name}", regexp))
    return table


_NULL_TAG, _BOOL_TAG, _FLOAT_TAG = (f"tag:yaml.org,2002:{name}" for name in ("null", "bool",
                                                                              "float"))
_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}
_DECIMAL_INT = on_use(r"[-+]?(?:0|[1-9][0-9]{0,17})")
_DECIMAL_FLOAT = on_use(r"[-+]?[0-9]{1,17}\.[0-9]{0,17}")


def common_value(tag: str, text: str) -> Any:
    """The value PyYAML's constructor makes of the commonest spellings of a null, a bool,
    a decimal integer or fraction (`~`, `true`, `-12`, `0.46`), by the same rule
    (`SafeConstructor.construct_yaml_null`, `_bool`, `_int`, `_float`: no `_`, `:`, `0x`,
    leading 0 or exponent, which they treat apart), without importing PyYAML; NOT_COMMON for
    any other spelling."""
    if tag == _NULL_TAG:
        return None
    if tag == _BOOL_TAG:
        return _BOOLS.get(text.lower(), NOT_COMMON)
    if tag == _INT_TAG and _DECIMAL_INT.fullmatch(text):
        return int(text)
    if tag == _FLOAT_TAG and _DECIMAL_FLOAT.fullmatch(text):
        return float(text)
    return NOT_COMMON


__all__ = ["NOT_COMMON", "PYYAML_RESOLVERS", "Resolvers", "common_value", "copied_resolvers"]
