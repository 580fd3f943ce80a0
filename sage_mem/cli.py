"""The `sage-mem` command line's entry point: `main` runs one and returns its exit status.

The commands themselves, on click, are in `commands/`; `python -m sage_mem`
and the `sage-mem` console script both come through `main`.

`sage-mem hook …` runs in a new process for every prompt, so `main` recognises
its plain command lines first and answers the hook without importing click,
which with what it pulls in (gettext, shutil, …) would cost each prompt about
20 ms. A plain `sync` line is run without click too (`agents/sync_command`): a
sync with nothing to do is mostly the interpreter's start and git. Anything
unusual about such a command line (`--help`, a missing or extra argument, a
`--dir` value that looks like an option) goes through click as usual; a line a
shortcut takes means what click makes of it (tests/test_hook_imports.py and
tests/test_sync_command_line.py hold the two to each other). A hook line click
refuses is still a hook: its one-line error, and exit 0
(`agents/hook_command.py` `names_hook`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from . import PROG


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the CLI; returns the exit status."""
    whole_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 5 and argv[0] == "merge-driver" and "--help" not in argv:
        # What git runs for every memory file both sides changed in a plain `git pull`:
        # straight to the driver, without click and the commands (a quarter of its start).
        from .sync.merge_driver import run_driver

        return run_driver(argv[1:])
    hook = _hook_command(argv)
    if hook is None:
        if "sync" in argv:  # a plain sync line: without click (agents/sync_command)
            from .agents.sync_command import answer_sync_line, plain_sync_line, speaks_unicode

            line = plain_sync_line(argv)
            out, err = out or sys.stdout, err or sys.stderr
            if line is not None and speaks_unicode(out) and speaks_unicode(err):
                return answer_sync_line(line, out, err)
        from .commands import cli

        return cli.main(argv, standalone_mode=False, out=out, err=err)
    out = out or sys.stdout
    err = err or sys.stderr
    event, dirs = hook
    if whole_process:
        _collect_seldom()
    from .agents.hook_command import answer_hook

    try:
        status = answer_hook(event, dirs[0] if dirs else None, out, dirs[1:])
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        status = 130
    if whole_process:
        _exit_now(status, out, err)
    return status


HOOK_GC_THRESHOLD = 100_000


def _collect_seldom() -> None:
    """Let a hook process collect cyclic garbage only every HOOK_GC_THRESHOLD new containers.

    A hook imports the store and the index (tens of thousands of functions, classes and
    module objects, none of them garbage) and ends at once (`_exit_now`): with the
    default threshold (700) the collector walked them again and again, about 10 ms of
    each prompt's CPU at 10,000 memories. Still bounded: a hook that makes that much
    cyclic garbage has it collected.
    """
    import gc

    gc.set_threshold(HOOK_GC_THRESHOLD, *gc.get_threshold()[1:])


def _exit_now(status: int, out: TextIO, err: TextIO) -> NoReturn:
    """End a hook process at once, its answer written.

    Tearing the interpreter down (freeing an index of 10,000 memories object
    by object) would cost each prompt ~12 ms. Everything the hook writes to
    files is closed by then (atomic writes), so only the standard streams
    need flushing.
    """
    with contextlib.suppress(OSError, ValueError):
        out.flush()
    with contextlib.suppress(OSError, ValueError):
        err.flush()
    os._exit(status)


def _hook_command(argv: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """(event, the --dir values in order) when `argv` is a plain `hook` command line, else None.

    Plain means: `--dir DIR` or `--dir=DIR` any number of times, then `hook`,
    then one EVENT and any number of `--dir` after it, in any order; no
    argument is left to guess (a value or an EVENT starting with `-` goes to
    click). As with click, the folders are the `--dir` values in the order
    given, those before `hook` first: the first is the personal folder, the
    rest shared ones read with it (`folders/`).
    """
    position, before = _dir_options(argv, 0)
    if position is None or position >= len(argv) or argv[position] != "hook":
        return None
    event: str | None = None
    dirs = list(before)
    position += 1
    while position < len(argv):
        arg = argv[position]
        if arg == "--dir" or arg.startswith("--dir="):
            position, value = _dir_options(argv, position, single=True)
            if position is None:
                return None
            dirs.extend(value)
        elif event is None and not arg.startswith("-"):
            event = arg
            position += 1
        else:
            return None
    if event is None:
        return None
    return event, tuple(dirs)


def _dir_options(
    argv: Sequence[str], position: int, *, single: bool = False
) -> tuple[int | None, list[str]]:
    """Read `--dir DIR` / `--dir=DIR` from `position`: (where they end, the values).

    The position is None when a `--dir` lacks a value or has one that looks like an option.
    """
    values: list[str] = []
    while position < len(argv):
        arg = argv[position]
        if arg.startswith("--dir="):
            values.append(arg[len("--dir=") :])
            position += 1
        elif arg == "--dir":
            if position + 1 >= len(argv) or argv[position + 1].startswith("-"):
                return None, []
            values.append(argv[position + 1])
            position += 2
        else:
            break
        if single:
            break
    return position, values
