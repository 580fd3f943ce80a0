"""The autodream's commands: `dream`, `runs`, `rollback`.

They work on one folder, the personal one (the first `--dir`): a shared folder
is dreamed on by naming it alone (`sage-mem --dir ~/team-memory dream`). A
folder the config lists as read-only is never changed: the dream (whose
report too is a file in the folder, `autodream/`) and rollback refuse it
(`folders.read_only_spec`).
"""

from __future__ import annotations

import click

from ..errors import FolderError
from .base import (
    Choice,
    Session,
    folder_command,
    json_option,
)


@folder_command(
    "dream",
    "an autodream run: merge twins, archive what was superseded, fix summaries, dates, links "
    "(a report run changes no memory and writes only its report, autodream/<runId>.md)",
    "sage-mem dream --mode rewrite",
)
@click.option("--mode", type=Choice(["report", "rewrite"]), default=None,
              help="report (default; with --auto, the settings' autoMode): no memory changes, "
              "the one file written is the run's report, autodream/<runId>.md in the memory "
              "folder; or rewrite, with a rollback point first")
@click.option("--auto", is_flag=True,
              help="run only if the gates open (hours and sessions since the last run, the lock)")
@json_option
@click.pass_obj
def dream(session: Session, mode: str | None, auto: bool, as_json: bool) -> int:
    from ..dream import run_dream
    from ..folders import read_only_spec

    store = session.open_store()
    frozen = read_only_spec(store.root)
    if frozen is not None:
        raise FolderError(f"{store.root}: the config lists it as the read-only folder "
                          f"{frozen.name!r}: the dream changes nothing in it, not even a report "
                          f"(dream in a clone of your own)")
    return session.print_result(run_dream(store, mode=mode, auto=auto), as_json)


@folder_command("runs", "past dream runs and rollbacks, newest first", "sage-mem runs --json")
@json_option
@click.pass_obj
def runs(session: Session, as_json: bool) -> int:
    from ..dream import format_runs, list_runs

    found = list_runs(session.open_store())
    if as_json:  # newest first, as the text lists them
        session.print_json(
            {"runs": [run.to_dict() for run in reversed(found)], "count": len(found)}
        )
    else:
        session.out.write(format_runs(found) if found else "No dream runs yet.\n")
    return 0


@folder_command("rollback", "undo a dream run (or a rollback); nothing is deleted",
                "sage-mem rollback 20261129T201500Z-1a2b --scope all --dry-run")
@click.argument("run_id", metavar="RUN_ID",
                help="the run to undo (see `sage-mem runs`)")
@click.option("--scope", type=Choice(["touched", "all"]),
              help="only the files the run touched, or the whole folder (default: the "
                   "rollbackScope setting, touched unless set)")
@click.option("--dry-run", is_flag=True, help="say what would be restored, change nothing")
@click.option("--force", is_flag=True,
              help="also put back files changed since the run (skipped otherwise; their "
                   "present version is kept in the protective snapshot)")
@json_option
@click.pass_obj
def rollback(session: Session, run_id: str, scope: str | None, dry_run: bool, force: bool,
             as_json: bool) -> int:
    from ..dream import rollback as roll_back
    from ..folders import read_only_spec

    store = session.open_store()
    frozen = read_only_spec(store.root)
    if frozen is not None and not dry_run:
        raise FolderError(f"{store.root}: the config lists it as the read-only folder "
                          f"{frozen.name!r}: nothing is rolled back in it (--dry-run shows what "
                          f"would be)")
    result = roll_back(store, run_id, scope=scope, dry_run=dry_run, force=force)
    return session.print_result(result, as_json)
