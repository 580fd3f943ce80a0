"""`sage-mem hook EVENT` as a command line: whether a line names it, and answering it.

Both the entry point (`cli.py`, which answers a plain hook line without
importing click) and the click commands (`commands/`, for every other hook
line) use these, so they live below both. Imports only `hooks`, and that
only when a hook is answered.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO


def answer_hook(event: str, folder: str | None, out: TextIO, shared: Sequence[str] = ()) -> int:
    """Run a Claude Code hook command (`sage-mem hook EVENT`): the answer on `out`, exit 0.

    `shared`: further `--dir` folders, read with the first (`folders/`)."""
    from .hooks import run_hook

    root = Path(folder) if folder else None  # `~` expanded by the hook, which logs a bad one
    shared = [value for value in shared if value]  # `--dir=` names no folder
    if shared:
        return run_hook(event, sys.stdin, out, sys.stderr, folder=root, shared=tuple(shared))
    return run_hook(event, sys.stdin, out, sys.stderr, folder=root)


def names_hook(argv: Sequence[str]) -> bool:
    """Whether the command `argv` names is `hook`, however wrong the rest of the line is.

    The command is the first argument that is neither an option nor a `--dir` value, as
    click reads it; a hook line click refuses must still exit 0 (DESIGN section 5)."""
    position = 0
    while position < len(argv):
        arg = argv[position]
        if arg == "--dir":
            position += 2
        elif arg.startswith("-"):
            position += 1
        else:
            return arg == "hook"
    return False
