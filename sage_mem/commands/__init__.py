"""The sage-mem commands, on click: each command with its arguments and options beside it.

A command parses its arguments, calls the library and prints; `--json` prints
the same data as JSON; its help ends with an example. Heavy modules (`mcp`,
`watchdog`, the page) are imported by the commands that need them.

Modules: `base` (the group, the session, option types, one-line errors), one
module per area (`AREAS`: `folder`, `memories`, `dream`, `agents`, `sync`, `doctor`,
listed in that order), and `render` (plain text for
people). Run through `sage_mem.cli.main`, which imports this package only for
a command line that is not a plain `hook` one: click would cost each prompt
~20 ms. Nothing outside this package and `cli` imports it.
"""

from __future__ import annotations

from importlib import import_module

from .base import ALIASES, cli

# Each area registers its commands when imported; `sage-mem --help` lists them in this order.
AREAS = ("folder", "memories", "dream", "agents", "sync", "doctor")
for _area in AREAS:
    import_module(f"{__name__}.{_area}")

__all__ = ["ALIASES", "cli"]
