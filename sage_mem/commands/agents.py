"""Commands for agent clients and the page: `serve`, `ui`, `hook`, `daemon`, `(un)install`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .. import PROG
from ..agents.hook_command import answer_hook
from ..disk.home import expand_home, home_folder
from .base import (
    Choice,
    Number,
    Session,
    command,
    dir_option,
    folder_command,
    json_option,
    poll_option,
    stacked,
)


@folder_command("serve", "run the MCP server on stdio (for Claude Code, Cursor, Codex…)",
                "sage-mem --dir ~/notes/memory serve")
@poll_option
@click.option("--dream-run", metavar="RUN_ID",
              help="only the tools of one dream run in progress, for its model pass "
                   "(autodream starts this itself)")
@click.pass_obj
def serve(session: Session, poll: bool, dream_run: str | None) -> int:
    if dream_run is not None:  # even empty: a dream run's server, never the full one
        from ..mcp_server.dream_server import serve_dream

        return serve_dream(session.agent_folder, dream_run)
    from ..mcp_server.server import serve as serve_stdio

    return serve_stdio(session.agent_folder, poll=poll, shared=session.dirs[1:])


@folder_command(
    "ui", "a local web page to browse, search, edit and review the memory (127.0.0.1 only)",
    "sage-mem ui --open",
)
@click.option("--port", type=Number(int, low=0, high=65535), metavar="N",
              help="port on 127.0.0.1 (default 8765, or a free one if taken; 0: any free)")
@click.option("--open", "open_browser", is_flag=True,
              help="open the page in the browser (the link carries this launch's token)")
@poll_option
@click.pass_obj
def ui(session: Session, port: int | None, open_browser: bool, poll: bool) -> int:
    from ..ui import run_ui

    return run_ui(session.folder, port=port, open_browser=open_browser, poll=poll,
                  out=session.out, shared=session.dirs[1:])


@folder_command(
    "hook",
    "hook commands for Claude Code (all four) and Codex (session-start, user-prompt-submit): "
    "read the hook JSON on stdin, answer JSON; always exit 0",
    "echo '{\"session_id\": \"s1\", \"prompt\": \"hi\"}' | sage-mem hook user-prompt-submit",
)
# Any text, not a Choice: a hook must exit 0 even when misconfigured, so run_hook reports it.
@click.argument("event", metavar="EVENT",
                help="session-start (baselines and a tool guide), user-prompt-submit "
                     "(relevant memories), stop or pre-compact (ask what is worth keeping)")
@click.pass_obj
def hook(session: Session, event: str) -> int:
    # `--dir ""` is the default folder here (never refused: a hook always exits 0).
    return answer_hook(event, session.dirs[0] if session.dirs else None, session.out,
                       session.dirs[1:])


@folder_command("daemon",
                "build the index in the background and answer the folder's hooks until idle "
                "(a hook starts it); when one already runs for the folder, says so and exits 0",
                "sage-mem daemon --build-only")
@click.option("--idle", type=Number(float, low=1, high=604_800), default=1200.0,
              show_default=True, metavar="SECONDS",
              help="end after this long without a hook to answer")
@click.option("--build-only", is_flag=True,
              help="build (or bring up to date) the index cache, then end")
@poll_option
@click.pass_obj
def daemon(session: Session, idle: float, build_only: bool, poll: bool) -> int:
    from ..agents.daemon import run_daemon

    def say(line: str) -> None:
        session.err.write(f"{PROG}: {line}\n")

    return run_daemon(session.agent_folder, idle=idle, build_only=build_only, poll=poll,
                      say=say)


# What install and uninstall both take: the folder, the client, and whose config.
client_options = stacked(
    dir_option,
    click.argument("client", type=Choice(["claude-code", "cursor", "codex"]),
                   help="which client"),
    click.option("--scope", type=Choice(["project", "user"]),
                 help="this project's config or your user config (default: project; user for "
                      "codex)"),
)
dry_run_option = click.option("--dry-run", is_flag=True, help="show the diff, write nothing")


@command("install", "register sage-mem with a client: the MCP server, and hooks for Claude Code "
         "(4) and Codex (session-start, user-prompt-submit); Cursor gets no hooks",
         "sage-mem install claude-code --scope user --dry-run")
@client_options
@click.option("--absolute", is_flag=True,
              help="write this installation's absolute path in project files too (by default "
                   "they run `sage-mem` from PATH, so they work for every teammate)")
@click.option("--claude-memory", type=Choice(["off", "keep"]),
              help="claude-code: Claude Code's own auto memory beside sage-mem: off (the "
                   "default: autoMemoryEnabled false, one memory system) or keep (both)")
@dry_run_option
@json_option
@click.pass_obj
def install(session: Session, client: str, scope: str | None, absolute: bool,
            claude_memory: str | None, dry_run: bool, as_json: bool) -> int:
    from ..agents.install import install as install_client

    # The folder the client is to use: only one named here or in the environment.
    named = session.dir or os.environ.get("SAGE_MEM_DIR")
    codex_home = os.environ.get("CODEX_HOME")
    result = install_client(
        client,
        scope=scope,
        project_dir=Path.cwd(),
        home=home_folder("a client's config"),
        memory_dir=expand_home(named) if named else None,
        dry_run=dry_run,
        codex_home=expand_home(codex_home) if codex_home else None,
        absolute=absolute,
        backup_dir=_backups(session),
        claude_memory=claude_memory,
    )
    return session.print_result(result, as_json)


@command("uninstall", "take out of a client's config exactly what `install` put in",
         "sage-mem uninstall claude-code --dry-run")
@client_options
@dry_run_option
@json_option
@click.pass_obj
def uninstall(session: Session, client: str, scope: str | None, dry_run: bool,
              as_json: bool) -> int:
    from ..agents.install import uninstall as uninstall_client

    codex_home = os.environ.get("CODEX_HOME")
    result = uninstall_client(
        client, scope=scope, project_dir=Path.cwd(), home=home_folder("a client's config"),
        dry_run=dry_run, codex_home=expand_home(codex_home) if codex_home else None,
        backup_dir=_backups(session),
    )
    return session.print_result(result, as_json)


def _backups(session: Session) -> Path:
    """Where install and uninstall keep the files they change: the state folder, not the repo."""
    from ..disk.folder import MemoryFolder

    return MemoryFolder(session.folder).state_dir / "install-backups"
