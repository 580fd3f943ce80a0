"""The sage-mem commands, on click: each command with its arguments and options beside it.

A command parses its arguments, calls the library and prints; `--json` prints
the same data as JSON; its help ends with an example. A user error (a missing
memory, a bad value, a bad command line, click's own usage errors included) is
one line on stderr, `sage-mem: error: …`, and exit status 1, never a traceback
(`Commands.main`). Heavy modules (`mcp`, `watchdog`, the page) are imported by
the commands that need them.

Run through `sage_mem.cli.main`, which imports this module only for a command
line that is not a plain `hook` one: click would cost each prompt ~20 ms.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from . import __version__
from .cli import PROG, answer_hook
from .errors import SageMemError
from .fields import BOOL, FIELDS, INT, TEXTS, UNIT
from .folder import default_folder

ALIASES = {"write": "add"}
EPILOG = """\b
Examples:
  sage-mem init
  sage-mem add user_cat --category user --description "The user's cat is called Sesame"
  sage-mem search "what is my cat called"
  sage-mem search 我的猫叫什么 --json
  sage-mem show user_cat

The memory folder is --dir, else $SAGE_MEM_DIR, else ~/.sage-mem/memory."""


@dataclass
class Session:
    """One run of the command line: where its output goes, and the folder it names."""

    out: TextIO
    err: TextIO
    dir: str | None = None

    @property
    def folder(self) -> Path:
        return Path(self.dir).expanduser() if self.dir else default_folder()

    def open_store(self) -> Any:
        from .store import MemoryStore

        # One command, one answer: no watcher to keep the index current afterwards.
        store = MemoryStore(self.folder, watch=False)
        for note in store.folder.state_notes:  # said once, on the folder's first use
            self.err.write(f"{PROG}: note: {note}\n")
        return store

    def print_json(self, data: Any, to: TextIO | None = None) -> None:
        (to or self.out).write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")

    def print_result(self, result: Any, as_json: bool) -> int:
        """Print a library result (anything with `to_dict` and `format_text`) as asked; exit 0."""
        if as_json:
            self.print_json(result.to_dict())
        else:
            self.out.write(result.format_text())
        return 0


# what a command line holds, said as one line when it is wrong


class Number(click.ParamType):
    """An int or a float, optionally within bounds."""

    def __init__(self, kind: type[int] | type[float], low: int | None = None,
                 high: int | None = None) -> None:
        assert high is None or low is not None
        self.kind, self.name, self.low, self.high = kind, kind.__name__, low, high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = self.kind(value)
            except (TypeError, ValueError):
                self.fail(f"invalid {self.name} value: {value!r}", param, ctx)
        if self.high is not None and self.low is not None and not self.low <= number <= self.high:
            self.fail(f"must be from {self.low} to {self.high}, not {number}", param, ctx)
        elif self.low is not None and number < self.low:
            self.fail(f"must be at least {self.low}, not {number}", param, ctx)
        return number


class Choice(click.Choice):
    """click's Choice, its refusal worded as the one-line errors are."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        return f"invalid choice: {value!r} (choose from {', '.join(map(repr, self.choices))})"


def error_line(exc: click.ClickException) -> str:
    """A click error as one line: what is wrong, and where to read the command's help."""
    if isinstance(exc, click.NoSuchCommand):
        names = ", ".join(repr(name) for name in cli.list_commands(exc.ctx))  # type: ignore[arg-type]
        message = f"argument COMMAND: invalid choice: {exc.command_name!r}" + (
            _did_you_mean(exc.possibilities) or f" (choose from {names})"
        )
    elif isinstance(exc, click.NoSuchOption):
        message = f"no such option {exc.option_name!r}{_did_you_mean(exc.possibilities)}"
    elif isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter) \
            and exc.param is not None:
        where = "/".join(exc.param.opts) if isinstance(exc.param, click.Option) \
            else exc.param.human_readable_name
        message = f"argument {where}: {exc.message}"
    else:
        message = exc.format_message().rstrip(".")
        if message[:1].isupper() and message[1:2].islower():
            message = message[0].lower() + message[1:]
    context = getattr(exc, "ctx", None)
    if context is not None:
        message += f" (see `{context.command_path} --help`)"
    return " ".join(message.split())


def _did_you_mean(possibilities: Sequence[str] | None) -> str:
    if not possibilities:
        return ""
    return f" (did you mean {' or '.join(repr(name) for name in sorted(possibilities))}?)"


class Commands(click.Group):
    """The sage-mem group: its commands in the order they were declared, aliases, and errors
    that are one line and exit 1, whoever runs it (the console script, CliRunner, a test)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
            return 0

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        *,
        out: TextIO | None = None,
        err: TextIO | None = None,
        **extra: Any,
    ) -> int:
        """Run a command line; returns its exit status (exits with it in standalone mode)."""
        # Looked up now, not at import: CliRunner and the tests swap the streams.
        out = out or sys.stdout
        err = err or sys.stderr
        try:
            with contextlib.redirect_stdout(out):  # where click writes --help and --version
                status = super().main(
                    args, prog_name=PROG, complete_var=complete_var, standalone_mode=False,
                    obj=Session(out, err), **extra,
                )
        except click.ClickException as exc:
            err.write(f"{PROG}: error: {error_line(exc)}\n")
            status = 1
        except SageMemError as exc:
            err.write(f"{PROG}: error: {exc}\n")
            status = 1
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            err.write(f"{PROG}: error: {where}{exc.strerror or exc}\n")
            status = 1
        except (click.Abort, KeyboardInterrupt):
            err.write(f"{PROG}: interrupted\n")
            status = 130
        status = status if isinstance(status, int) else 0
        if standalone_mode:
            sys.exit(status)
        return status


# options more than one command takes


def _remember_dir(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # Given before the command or after it: the one given last wins, as with argparse.
    if value is not None:
        session = ctx.find_object(Session)
        assert session is not None  # made by the group before any option is read
        session.dir = value


dir_option = click.option(
    "--dir", metavar="DIR", expose_value=False, callback=_remember_dir,
    help="the memory folder (default: $SAGE_MEM_DIR or ~/.sage-mem/memory)",
)
json_option = click.option("--json", "as_json", is_flag=True, help="print JSON")
poll_option = click.option(
    "--poll", is_flag=True, help="watch the folder by polling (for network drives)"
)


def stacked(*decorators: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Several options as one decorator, listed in the order given."""
    def apply(function: Any) -> Any:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


filter_options = stacked(
    click.option("--category", help="only this category (user, feedback, project, reference)"),
    click.option("--project", help="only memories for this project (and global ones)"),
    click.option("--tag", "tags", multiple=True, metavar="TAG",
                 help="only memories with this tag (repeatable)"),
    click.option("--archived", is_flag=True, help="include archived memories"),
)


def field_option(field: Any) -> Callable[[Any], Any]:
    """The `add` option that sets one field of the spec (fields.py); the store checks its value."""
    if field.kind == BOOL:
        return click.option(f"{field.flag}/{field.off_flag}", field.name, default=None,
                            help=field.help)
    repeated = field.kind == TEXTS
    return click.option(
        field.flag, field.name, metavar=field.metavar or "TEXT", multiple=repeated,
        type={UNIT: Number(float), INT: Number(int)}.get(field.kind, click.STRING),
        help=field.help + (" (repeatable)" if repeated else ""),
    )


# the commands


@click.group(
    cls=Commands, invoke_without_command=True, epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Memory for AI agents, kept as plain markdown files.",
)
@dir_option
@click.version_option(__version__, "--version", prog_name=PROG, message="%(prog)s %(version)s",
                      help="print the version")
@click.pass_context
def cli(ctx: click.Context) -> int:
    if ctx.invoked_subcommand is None:
        ctx.obj.out.write(ctx.get_help() + "\n")
    return 0


def command(name: str, summary: str, example: str) -> Callable[[Any], Any]:
    """A command of the group: what it does (its help and its line in the list) and an example."""
    return cli.command(name, help=summary, short_help=summary,
                       epilog=f"\b\nExample:\n  {example}")


@command(
    "init",
    "create an empty memory folder, private to you (0700); with --examples, add example memories",
    "sage-mem init --git",
)
@dir_option
@click.argument("path", metavar="[DIR]", required=False,
                help="where (default: the memory folder)")
@click.option("--examples", is_flag=True,
              help="add example memories to a folder that has none (marked as examples: tag "
                   "`example`, description starting \"Example:\", none a baseline)")
@click.option("--git", is_flag=True,
              help="make it a git repository with a .gitattributes that keeps LF endings")
@json_option
@click.pass_obj
def init(session: Session, path: str | None, examples: bool, git: bool, as_json: bool) -> int:
    from .template import EXAMPLE_PREFIX, init_folder

    out = session.out
    target = Path(path).expanduser() if path else session.folder
    result = init_folder(target, git=git, examples=examples)
    # The hints name the folder unless the next command would find it by itself.
    same = os.path.abspath(default_folder()) == str(result.root)
    where = "" if same else f"--dir {shlex.quote(str(result.root))} "
    if as_json:
        session.print_json({
            "path": str(result.root),
            "created": result.created,
            "copied": result.copied,
            "existing": result.existing,
            "git": result.git_initialized,
            "gitattributes": result.gitattributes_written,
            "stateDir": str(result.state_dir),
        })
        return 0
    if result.copied:
        out.write(
            f"Created {result.root} with {len(result.copied)} example memories: tagged "
            f"`example`, each description starting {EXAMPLE_PREFIX.strip()!r}, none a baseline.\n"
            f"Archive each when done with it: sage-mem {where}archive ID --reason example\n"
        )
    elif result.existing:
        skipped = "; no examples copied" if examples else ""
        out.write(f"{result.root} already holds {result.existing} memories{skipped}.\n")
    else:
        made = "Created" if result.created else "Ready:"
        out.write(
            f"{made} {result.root}, an empty memory folder.\n"
            f'Add a memory: sage-mem {where}add user_name --category user --description "…"\n'
            f"(or see how memories look: sage-mem {where}init --examples)\n"
        )
    if result.git_initialized:
        out.write(
            "Initialized a git repository there, with a .gitattributes that keeps LF endings.\n"
        )
    elif result.gitattributes_written:
        out.write("Wrote a .gitattributes that keeps LF endings.\n")
    if result.copied:
        out.write(f'Try: sage-mem {where}search "how do I run the tests"\n')
    out.write(f"State (counts, caches, sessions): {result.state_dir}\n")
    return 0


def read_body(body: str | None) -> str | None:
    """The body: `--body`, `-` for stdin, else a piped or redirected stdin (never a terminal)."""
    if body == "-":
        return sys.stdin.read()
    if body is not None:
        return body
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return None
    # Read a piped or redirected body, but never wait on a terminal or /dev/null.
    if stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
        text = sys.stdin.read()
        return text if text.strip() else None
    return None


@command(
    "add",
    "create or update a memory (body from --body or stdin); also called `write`",
    'sage-mem add user_cat --category user --description "The cat is called Sesame"',
)
@dir_option
@click.argument("memory_id", metavar="ID",
                help="the memory id: its path in the folder without .md")
@stacked(*(field_option(field) for field in FIELDS))
@click.option("--body",
              help="the body text (`-` reads stdin; a piped stdin is read when this is absent)")
@click.option("--expected-sha256", metavar="SHA",
              help="refuse if the file changed since you read it")
@click.option("--allow-secret", is_flag=True,
              help="write even if the text looks like a credential (refused by default)")
@json_option
@click.pass_obj
def add(session: Session, memory_id: str, body: str | None, expected_sha256: str | None,
        allow_secret: bool, as_json: bool, **given: Any) -> int:
    # A list option not given is () to click, and a field not given is None to the store.
    fields = {name: list(value) or None if isinstance(value, tuple) else value
              for name, value in given.items()}
    memory = session.open_store().write(
        memory_id, body=read_body(body), expected_sha256=expected_sha256,
        allow_secret=allow_secret, **fields,
    )
    if as_json:
        session.print_json(memory.to_dict(body=False))
    else:
        session.out.write(f"Saved {memory.id} ({memory.path})\n")
    return 0


@command("search", "ranked compact results for a query",
         'sage-mem search "how do I run the tests" --limit 5')
@dir_option
@click.argument("query", help="words, in any language")
@click.option("--limit", type=Number(int, low=1), default=10, metavar="N",
              help="how many results (default 10)")
@click.option("--offset", type=Number(int, low=0), default=0, metavar="N",
              help="skip this many results (paging)")
@filter_options
@json_option
@click.pass_obj
def search(session: Session, query: str, limit: int, offset: int, category: str | None,
           project: str | None, tags: tuple[str, ...], archived: bool, as_json: bool) -> int:
    from .render import hit_dict, hit_line

    hits = session.open_store().search(
        query, limit=limit, offset=offset, category=category, project=project,
        tags=list(tags) or None, archived=archived,
    )
    if as_json:
        session.print_json({"results": [hit_dict(hit) for hit in hits], "count": len(hits)})
    elif hits:
        session.out.writelines(hit_line(hit) + "\n" for hit in hits)
    else:
        session.out.write("No memories match.\n")
    return 0


@command("show", "one memory in full", "sage-mem show user_cat")
@dir_option
@click.argument("memory_id", metavar="ID",
                help="the memory id (archive/… for an archived one)")
@json_option
@click.pass_obj
def show(session: Session, memory_id: str, as_json: bool) -> int:
    from .render import memory_text

    memory = session.open_store().read(memory_id)
    if as_json:
        session.print_json(memory.to_dict())
    else:
        session.out.write(memory_text(memory))
    return 0


@command("list", "memories, filterable by category, tag or project",
         "sage-mem list --category feedback")
@dir_option
@filter_options
@json_option
@click.pass_obj
def list_memories(session: Session, category: str | None, project: str | None,
                  tags: tuple[str, ...], archived: bool, as_json: bool) -> int:
    from .render import memory_line

    memories = session.open_store().list(
        category=category, project=project, tags=list(tags) or None, archived=archived
    )
    if as_json:
        session.print_json(
            {"memories": [m.to_dict(body=False) for m in memories], "count": len(memories)}
        )
    else:
        session.out.writelines(memory_line(memory) + "\n" for memory in memories)
        if not memories:
            session.out.write("No memories.\n")
    return 0


@command("archive", "move a memory to archive/ (nothing is ever deleted)",
         'sage-mem archive user_old_cat --reason "the cat was renamed"')
@dir_option
@click.argument("memory_id", metavar="ID", help="the memory id")
@click.option("--reason", required=True, help="why (kept in the archived file)")
@click.option("--expected-sha256", metavar="SHA",
              help="refuse if the file changed since you read it")
@json_option
@click.pass_obj
def archive(session: Session, memory_id: str, reason: str, expected_sha256: str | None,
            as_json: bool) -> int:
    memory = session.open_store().archive(
        memory_id, reason=reason, expected_sha256=expected_sha256
    )
    if as_json:
        session.print_json(memory.to_dict(body=False))
    else:
        session.out.write(f"Archived {memory_id} as {memory.id} ({memory.path})\n")
    return 0


@command("feedback", "say a memory was helpful or not (moves its trust)",
         "sage-mem feedback user_cat helpful")
@dir_option
@click.argument("memory_id", metavar="ID", help="the memory id")
@click.argument("verdict", type=Choice(["helpful", "unhelpful"]),
                help="helpful or unhelpful")
@json_option
@click.pass_obj
def feedback(session: Session, memory_id: str, verdict: str, as_json: bool) -> int:
    memory = session.open_store().feedback(memory_id, helpful=verdict == "helpful")
    if as_json:
        session.print_json({"id": memory.id, "trust": memory.trust})
    else:
        session.out.write(f"{memory.id}: trust is now {memory.trust:g}\n")
    return 0


@command("index", "regenerate MEMORY.md (also repairs one left with merge conflicts)",
         "sage-mem index")
@dir_option
@json_option
@click.pass_obj
def index(session: Session, as_json: bool) -> int:
    store = session.open_store()
    changed = store.regenerate_index()
    problems = store.problems()
    if as_json:
        session.print_json({
            "path": str(store.folder.index_file),
            "changed": changed,
            "memories": len(store.list()),
            "problems": [p.to_dict() for p in problems],
        })
        return 0
    state = "rewritten" if changed else "already up to date"
    session.out.write(f"{store.folder.index_file}: {state} ({len(store.list())} memories)\n")
    for problem in problems:
        session.out.write(f"skipped: {problem.message}\n")
    return 0


@command("audit", "check the folder and report problems (changes nothing; exit 1 if any)",
         "sage-mem audit --json")
@dir_option
@json_option
@click.pass_obj
def audit(session: Session, as_json: bool) -> int:
    from .audit import audit as audit_folder

    report = audit_folder(session.open_store())
    if as_json:
        session.print_json(report.to_dict())
    else:
        text = report.format_text()
        session.out.write(text if text.endswith("\n") or not text else text + "\n")
        if report.ok:
            session.out.write("No problems found.\n")
    return 0 if report.ok else 1


@command(
    "dream",
    "an autodream run: merge twins, archive what was superseded, fix summaries, dates, links",
    "sage-mem dream --mode rewrite",
)
@dir_option
@click.option("--mode", type=Choice(["report", "rewrite"]), default="report",
              help="report only (default) or rewrite, with a rollback point first")
@click.option("--auto", is_flag=True,
              help="run only if the gates open (hours and sessions since the last run, the lock)")
@json_option
@click.pass_obj
def dream(session: Session, mode: str, auto: bool, as_json: bool) -> int:
    from .dream import run_dream

    return session.print_result(run_dream(session.open_store(), mode=mode, auto=auto), as_json)


@command("runs", "past dream runs and rollbacks, newest first", "sage-mem runs --json")
@dir_option
@json_option
@click.pass_obj
def runs(session: Session, as_json: bool) -> int:
    from .dream import format_runs, list_runs

    found = list_runs(session.open_store())
    if as_json:
        session.print_json({"runs": [run.to_dict() for run in found], "count": len(found)})
    else:
        session.out.write(format_runs(found) if found else "No dream runs yet.\n")
    return 0


@command("rollback", "undo a dream run (or a rollback); nothing is deleted",
         "sage-mem rollback 20261129T201500Z-1a2b --scope all --dry-run")
@dir_option
@click.argument("run_id", metavar="RUN_ID",
                help="the run to undo (see `sage-mem runs`)")
@click.option("--scope", type=Choice(["touched", "all"]), default="touched",
              help="only the files the run touched (default) or the whole folder")
@click.option("--dry-run", is_flag=True, help="say what would be restored, change nothing")
@click.option("--force", is_flag=True,
              help="also put back files changed since the run (skipped otherwise; their "
                   "present version is kept in the protective snapshot)")
@json_option
@click.pass_obj
def rollback(session: Session, run_id: str, scope: str, dry_run: bool, force: bool,
             as_json: bool) -> int:
    from .dream import rollback as roll_back

    result = roll_back(session.open_store(), run_id, scope=scope, dry_run=dry_run, force=force)
    return session.print_result(result, as_json)


@command("serve", "run the MCP server on stdio (for Claude Code, Cursor, Codex…)",
         "sage-mem --dir ~/notes/memory serve")
@dir_option
@poll_option
@click.option("--dream-run", metavar="RUN_ID",
              help="only the tools of one dream run in progress, for its model pass "
                   "(autodream starts this itself)")
@click.pass_obj
def serve(session: Session, poll: bool, dream_run: str | None) -> int:
    if dream_run:
        from .server_dream import serve_dream

        return serve_dream(session.folder, dream_run)
    from .server import serve as serve_stdio

    return serve_stdio(session.folder, poll=poll)


@command("ui", "a local web page to browse, search, edit and review the memory (127.0.0.1 only)",
         "sage-mem ui --open")
@dir_option
@click.option("--port", type=Number(int, low=0, high=65535), metavar="N",
              help="port on 127.0.0.1 (default 8765, or a free one if taken; 0: any free)")
@click.option("--open", "open_browser", is_flag=True,
              help="open the page in the browser (the link carries this launch's token)")
@poll_option
@click.pass_obj
def ui(session: Session, port: int | None, open_browser: bool, poll: bool) -> int:
    from .ui import run_ui

    return run_ui(session.folder, port=port, open_browser=open_browser, poll=poll,
                  out=session.out)


@command(
    "hook",
    "Claude Code hook commands: read the hook JSON on stdin, answer JSON; always exit 0",
    "echo '{\"session_id\": \"s1\", \"prompt\": \"hi\"}' | sage-mem hook user-prompt-submit",
)
@dir_option
# Any text, not a Choice: a hook must exit 0 even when misconfigured, so run_hook reports it.
@click.argument("event", metavar="EVENT",
                help="session-start (baselines and a tool guide) or user-prompt-submit "
                     "(relevant memories)")
@click.pass_obj
def hook(session: Session, event: str) -> int:
    return answer_hook(event, session.dir, session.out)


@command("install", "register sage-mem with a client: MCP server (and hooks for Claude Code)",
         "sage-mem install claude-code --scope user --dry-run")
@dir_option
@click.argument("client", type=Choice(["claude-code", "cursor", "codex"]),
                help="which client")
@click.option("--scope", type=Choice(["project", "user"]),
              help="this project's config or your user config (default: project; user for codex)")
@click.option("--dry-run", is_flag=True, help="show the diff, write nothing")
@json_option
@click.pass_obj
def install(session: Session, client: str, scope: str | None, dry_run: bool,
            as_json: bool) -> int:
    from .install import install as install_client

    # The folder the client is to use: only one named here or in the environment.
    named = session.dir or os.environ.get("SAGE_MEM_DIR")
    codex_home = os.environ.get("CODEX_HOME")
    result = install_client(
        client,
        scope=scope,
        project_dir=Path.cwd(),
        home=Path.home(),
        memory_dir=Path(named).expanduser() if named else None,
        dry_run=dry_run,
        codex_home=Path(codex_home).expanduser() if codex_home else None,
    )
    return session.print_result(result, as_json)


@command("import", "bring memories in from Claude Code or mnemo (never overwrites)",
         "sage-mem import claude-code ~/.claude/projects/my-project/memory --dry-run")
@dir_option
@click.argument("source", type=Choice(["claude-code", "mnemo"]),
                help="claude-code (a folder) or mnemo (a database)")
@click.argument("path", metavar="PATH",
                help="the Claude Code memory folder or the mnemo SQLite file")
@click.option("--dry-run", is_flag=True, help="report what would happen, write nothing")
@json_option
@click.pass_obj
def import_memories(session: Session, source: str, path: str, dry_run: bool,
                    as_json: bool) -> int:
    from .importers import import_claude_code, import_mnemo

    bring_in = import_claude_code if source == "claude-code" else import_mnemo
    result = bring_in(session.open_store(), Path(path).expanduser(), dry_run=dry_run)
    return session.print_result(result, as_json)


@command(
    "export",
    "write every memory as JSON lines; a file that cannot be parsed is named on stderr and the "
    "exit status is 1",
    "sage-mem export --jsonl -o memories.jsonl",
)
@dir_option
@click.option("--jsonl", is_flag=True, required=True, help="JSON lines, one memory a line")
@click.option("--archived", is_flag=True, help="include archived memories")
@click.option("--output", "-o", metavar="FILE",
              help="write to FILE instead of stdout: a new file (never replaced), private (0600)")
@click.option("--json", "as_json", is_flag=True,
              help="print the report (count, files left out and why) as JSON: on stdout with -o, "
                   "else on stderr")
@click.pass_obj
def export(session: Session, jsonl: bool, archived: bool, output: str | None,
           as_json: bool) -> int:
    from .importers import export_jsonl, export_jsonl_file
    from .injection import visible_name

    store = session.open_store()
    if output:
        result = export_jsonl_file(store, output, archived=archived)
    else:
        result = export_jsonl(store, session.out, archived=archived)
    status = 1 if result.left_out else 0
    # stdout carries the memories unless they went to a file.
    if as_json:
        session.print_json(result.to_dict(), to=session.out if output else session.err)
        return status
    err = session.err
    for item in result.left_out:
        err.write(visible_name(f"{PROG}: not exported: {item.path}: {item.problem}") + "\n")
    if output:
        err.write(f"Exported {result.exported} memories to {output}\n")
    if result.left_out:
        count = len(result.left_out)
        err.write(
            f"{PROG}: {count} file{'s' if count != 1 else ''} not exported "
            "(cannot be read or parsed; see `sage-mem audit`)\n"
        )
    return status
