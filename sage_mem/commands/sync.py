"""Commands for memory over git: `sync`, `log`, and `merge-driver` (what git runs)."""

from __future__ import annotations

import click

from .. import PROG
from .base import Choice, Session, command, folder_command, json_option


@folder_command(
    "sync",
    "commit what changed, fetch, merge (memories field by field, never conflict markers) and "
    "push; secrets are never pushed",
    "sage-mem sync --remote git@example.com:me/memory.git",
)
@click.option("--remote", metavar="URL",
              help="set the remote (`origin`) first; a folder that is not a repository becomes one")
@click.option("--no-push", "no_push", is_flag=True, help="commit and merge, but do not push")
@click.option("--allow-secret", is_flag=True,
              help="commit and push files the secret scan flags (a false alarm) instead of "
                   "holding them back")
@click.option("--auto", "auto", type=Choice(["on", "off"]), default=None,
              help="turn autosync on or off for this folder (sync at session start and "
                   "after the server's writes) and stop")
@click.option("--background", is_flag=True, hidden=True,
              help="as autosync runs it: no output, a failure recorded for the next session")
@json_option
@click.pass_obj
def sync(session: Session, remote: str | None, no_push: bool, allow_secret: bool,
         auto: str | None, background: bool, as_json: bool) -> int:
    from ..agents.sync_command import run_sync

    if auto is not None:
        return _set_autosync(session, auto == "on", as_json)
    if background:
        return _background_sync(session)
    return run_sync(session.folder, remote=remote, push=not no_push, allow_secret=allow_secret,
                    as_json=as_json, out=session.out, err=session.err)


def _set_autosync(session: Session, on: bool, as_json: bool) -> int:
    from ..disk.folder import MemoryFolder
    from ..sync.auto import write_settings

    folder = MemoryFolder(session.folder)
    folder.check_exists()
    write_settings(folder.state_dir, enabled=on)
    if as_json:
        session.print_json({"autosync": on, "root": str(folder.root)})
    else:
        session.out.write(f"Autosync {'on' if on else 'off'} for {folder.root}.\n")
    return 0


def _background_sync(session: Session) -> int:
    """Autosync's run: nothing printed; what failed is kept for the next session to say."""
    from ..disk.folder import MemoryFolder
    from ..errors import SageMemError
    from ..sync.auto import record, take_pending
    from ..sync.steps import sync as run_sync

    folder = MemoryFolder(session.folder)
    try:
        take_pending(folder.state_dir)  # this sync takes what waited; a write from now is due
    except OSError:
        pass
    try:
        offline = run_sync(folder.root).offline
    except SageMemError as exc:
        offline = str(exc)
    try:
        record(folder.state_dir, offline)
    except OSError:
        pass
    return 0


@folder_command("log", "a memory's versions, from git, newest first", "sage-mem log user_cat")
@click.argument("memory_id", metavar="ID", help="the memory id")
@json_option
@click.pass_obj
def log(session: Session, memory_id: str, as_json: bool) -> int:
    from ..folders.several import folders_for, split_id
    from ..sync.history import log as versions

    # `team:ID`: the shared folder's history (its repository), as `show team:ID@REV` reads it.
    specs = folders_for(session.dirs)
    spec, plain = split_id(specs, memory_id)
    found = versions(session.folder if spec is specs[0] else spec.path, plain)
    if as_json:
        session.print_json([v.to_dict() for v in found])
    else:
        session.out.write("".join(v.format_text() for v in found))
        session.out.write(f"Show one: {PROG} show {memory_id}@REV\n")
    return 0


@command("pre-push",
         "refuse a git push carrying a file the secret scan flags (the hook init --git and "
         "sync install; git runs it)",
         "sage-mem pre-push origin < refs   # as git's hook runs it; "
         "SAGE_MEM_ALLOW_SECRET=1 git push skips it")
@click.argument("remote", metavar="REMOTE", help="the remote's name or URL (git's $1)")
@click.argument("url", metavar="URL", required=False, help="its URL (git's $2)")
@click.pass_obj
def pre_push(session: Session, remote: str, url: str | None) -> int:
    import sys
    from pathlib import Path

    from ..sync.steps import check_push

    refused = check_push(Path.cwd(), remote, sys.stdin.read().splitlines())
    for held in refused:
        session.err.write(f"{PROG}: not pushed: {held.shown}: {held.reason}\n")
    if refused:
        session.err.write(f"{PROG}: push refused, a secret in a commit; take it out, or push "
                          "anyway: SAGE_MEM_ALLOW_SECRET=1 git push\n")
    return 1 if refused else 0


@command("merge-driver",
         "merge one memory file for git (registered by init --git and sync; git runs it)",
         "git config merge.sage-mem.driver 'sage-mem merge-driver %O %A %B %P'")
@click.argument("base", metavar="BASE", help="the version both sides started from (git's %O)")
@click.argument("ours", metavar="OURS", help="this side's version; the result goes here (%A)")
@click.argument("theirs", metavar="THEIRS", help="the other side's version (%B)")
@click.argument("path", metavar="PATH", help="the file's path in the work tree (%P)")
@click.pass_obj
def merge_driver(session: Session, base: str, ours: str, theirs: str, path: str) -> int:
    from ..sync.merge_driver import run_driver

    return run_driver([base, ours, theirs, path])
