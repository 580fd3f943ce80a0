"""`sage-mem sync` as a command line: running it, printing what it did, and after a join
starting the search index's build in the background.

Both the entry point (`cli.py`, which runs a plain sync line without importing
click: about 25 ms of the 0.13 s of CPU a sync with nothing to do takes at
10,000 memories) and the click command (`commands/sync.py`, for every other
sync line) use these, so they live below both. A plain line means what click
makes of it (`tests/test_sync_command_line.py` holds the two to each other):
the same folder, output, one-line errors and exit status.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, TextIO

from .. import PROG

# The options a plain sync line may carry after the `--dir` values: each as click reads it.
_FLAGS = {"--no-push": "no_push", "--allow-secret": "allow_secret", "--json": "as_json"}


class SyncLine(NamedTuple):
    """A plain `sage-mem sync` command line, read (`plain_sync_line`)."""

    dirs: tuple[str, ...]
    remote: str | None = None
    no_push: bool = False
    allow_secret: bool = False
    as_json: bool = False


def plain_sync_line(argv: Sequence[str]) -> SyncLine | None:
    """The sync command line `argv` holds when it is a plain one, else None (click reads it).

    Plain: `--dir DIR` / `--dir=DIR` any number of times, `sync`, then any of `--dir`,
    `--remote URL` (once), `--no-push`, `--allow-secret`, `--json`, each at most once.
    A value that looks like an option, an empty `--dir`, `--help`, `--auto`,
    `--background` or anything else goes to click, which says what is wrong.
    """
    dirs: list[str] = []
    remote: str | None = None
    flags: set[str] = set()
    command_seen = False
    position = 0
    while position < len(argv):
        arg = argv[position]
        name, equals, value = arg.partition("=")
        if name in ("--dir", "--remote"):
            if not equals:
                if position + 1 >= len(argv):
                    return None
                value = argv[position + 1]
            position += 1 if equals else 2
            if not value or value.startswith("-"):
                return None
            if name == "--dir":
                dirs.append(value)
            elif not command_seen or remote is not None:
                return None  # the command's option; given twice, click's last one wins
            else:
                remote = value
        elif arg == "sync" and not command_seen:
            command_seen = True
            position += 1
        elif command_seen and arg in _FLAGS and _FLAGS[arg] not in flags:
            flags.add(_FLAGS[arg])
            position += 1
        else:
            return None
    if not command_seen:
        return None
    return SyncLine(tuple(dirs), remote, "no_push" in flags, "allow_secret" in flags,
                    "as_json" in flags)


def answer_sync_line(line: SyncLine, out: TextIO, err: TextIO) -> int:
    """Run a plain sync line as the click command does: its output, one-line errors, the
    exit status (`Commands.main`'s)."""
    from ..errors import SageMemError

    try:
        return run_sync(_folder(line.dirs), remote=line.remote, push=not line.no_push,
                        allow_secret=line.allow_secret, as_json=line.as_json, out=out,
                        err=err)
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
        return 0
    except SageMemError as exc:
        err.write(f"{PROG}: error: {exc}\n")
        return 1
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        err.write(f"{PROG}: error: {where}{exc.strerror or exc}\n")
        return 1
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return 130


def _folder(dirs: Sequence[str]) -> Path:
    """The memory folder a command line names, as `Session.folder` finds it."""
    from ..disk.folder import refuse_misplaced
    from ..disk.home import default_folder, expand_home

    folder = expand_home(dirs[0]) if dirs else default_folder()
    refuse_misplaced(folder)
    return folder


def run_sync(folder: Path, *, remote: str | None, push: bool, allow_secret: bool,
             as_json: bool, out: TextIO, err: TextIO) -> int:
    """`sage-mem sync`: sync the folder, start the index's build after a join, print what
    was done (as JSON, or lines); exit 1 when a push was refused."""
    from ..sync.steps import sync

    def progress(line: str) -> None:
        if not as_json:
            err.write(f"{PROG}: {line}\n")

    started: list[int] = []  # a join's build, started as soon as its files are checked out

    def checked_out(root: Path, memories: int) -> None:
        started.append(memories)
        index_in_background(root, memories)

    result = sync(folder, remote=remote, push=push, progress=progress,
                  allow_secret=allow_secret, checked_out=checked_out)
    if not started:
        index_in_background(result.root, len(result.pulled))
    if as_json:
        import json

        out.write(json.dumps(result.to_dict(), ensure_ascii=not speaks_unicode(out),
                             indent=2) + "\n")
    else:
        out.write(result.format_text())
    return 1 if result.push_refused else 0


def index_in_background(root: Path, pulled: int) -> None:
    """After a sync that brought in more files than a search reads by itself (a join, a
    long absence): the search index built in the background, as a hook starts it, so
    that the first search answers from the cache rather than build it while one waits.
    A join starts it as soon as the remote's files are checked out (`sync`'s
    `checked_out`), the build overlapping the rest of the join."""
    from ..search import HOOK_READS  # the package alone: no search module imported

    if pulled <= HOOK_READS or os.name != "posix":  # the common case, before any import
        return
    from ..disk.folder import MemoryFolder
    from .daemon_start import daemon_mode, start_holding_lock

    if daemon_mode() == "none":
        return
    folder = MemoryFolder(root)
    try:  # the lock held from now: a search started as the join returns waits for this build
        start_holding_lock(folder, [sys.executable, "-m", "sage_mem", "--dir", str(folder.root),
                                    "daemon", "--build-only"])
    except OSError:
        pass  # the first search builds it


def speaks_unicode(stream: TextIO) -> bool:
    """Whether `stream` can carry any text (a UTF encoding, or none: a StringIO).

    A terminal or locale that is not UTF-8 (`PYTHONIOENCODING=ascii`, an ISO-8859-1 locale)
    cannot: there the commands' text shows what it cannot carry as backslash escapes
    (`Commands.main`) and JSON escapes it as JSON does (`\\u732b`), so that nothing is lost.
    A plain sync line is run without click only where both streams can (`cli.main`).
    """
    import codecs

    encoding = getattr(stream, "encoding", None)
    try:
        return not encoding or codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return True
