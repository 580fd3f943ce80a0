"""The command group and what its commands share: the session, option types, one-line errors.

`cli` is the group; a command module declares its commands with `command(…)`
and the options here. A user error (a missing memory, a bad value, a bad
command line, click's own usage errors included) is one line on stderr,
`sage-mem: error: …`, and exit status 1, never a traceback (`Commands.main`); on a
`hook` command line the same line, and exit 0 (a hook never fails the prompt).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import click

from .. import PROG, __version__
from ..agents.hook_command import names_hook
from ..agents.sync_command import speaks_unicode
from ..disk.home import default_folder, expand_home
from ..errors import SageMemError
from ..memory.fields import BOOL, INT, TEXTS, UNIT
from ..memory.value import CATEGORIES

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
    dirs: list[str] = field(default_factory=list)

    @property
    def dir(self) -> str | None:
        """The personal folder named on the command line: the first `--dir`.

        An empty one (`--dir "$DIR"` with DIR unset) names no folder: a person's command
        refuses it rather than act on the default folder (`agent_folder` takes it for
        the default, as the hook does).
        """
        if self.dirs and not self.dirs[0]:
            raise SageMemError("--dir is empty: name a folder, or leave --dir out for the "
                               "default ($SAGE_MEM_DIR or ~/.sage-mem/memory)")
        return self.dirs[0] if self.dirs else None

    @property
    def folder(self) -> Path:
        """The memory folder the command works on; a state folder, or the folder a memory
        folder sits in, is refused in one line (`refuse_misplaced`)."""
        return _checked(expand_home(self.dir) if self.dir else default_folder())

    @property
    def agent_folder(self) -> Path:
        """`folder` for what an agent starts (`serve`, `daemon`; the hook reads `dirs`
        itself): `--dir ""` is the default folder, as every hook takes it."""
        return _checked(
            expand_home(self.dirs[0]) if self.dirs and self.dirs[0] else default_folder()
        )

    def open_folders(self) -> Any:
        """Every folder the command line and the config name (`folders/`), missing shared
        ones said once; with one folder, that folder's store and nothing else."""
        from ..folders import Folders, folders_for

        specs = folders_for(self.dirs)
        if len(specs) == 1:
            return Folders(specs, store=self.open_store())
        folders = Folders(specs, store=self.open_store(specs[0].path))
        for note in folders.missing_notes():
            self.note(note)
        return folders

    def note(self, line: str) -> None:
        self.err.write(f"{PROG}: note: {line}\n")

    def open_store(self, path: Path | None = None, *, shared: bool = False) -> Any:
        from ..agents.daemon_start import wait_for_running_build
        from ..disk.folder import MemoryFolder
        from ..store import MemoryStore

        state = None
        if shared:  # a shared folder's state is its own (folders.shared_state)
            from ..folders import shared_state

            state = shared_state(path or self.folder)
        folder = MemoryFolder(path or self.folder, state_dir=state)
        for note in folder.state_notes:  # said once, on the folder's first use
            self.note(note)
        wait_for_running_build(folder, say=self.note)
        # One command, one answer: no watcher to keep the index current afterwards.
        return MemoryStore(folder.root, watch=False, state_dir=state)

    def store_for(self, memory_id: str) -> tuple[Any, str]:
        """The store a change to `memory_id` goes to, and its id there: the personal folder's,
        or a writable shared folder's for `NAME:ID` (a read-only one refuses, one line)."""
        from ..folders import check_writable, folders_for, split_id

        specs = folders_for(self.dirs)
        if len(specs) == 1:
            return self.open_store(), memory_id
        spec, plain = split_id(specs, memory_id)
        check_writable(specs, spec)
        return self.open_store(spec.path, shared=not spec.personal), plain

    def print_json(self, data: Any, to: TextIO | None = None) -> None:
        stream = to or self.out
        stream.write(json.dumps(data, ensure_ascii=not speaks_unicode(stream), indent=2) + "\n")

    def print_memory(self, memory: Any, as_json: bool, line: str) -> int:
        """Print a memory a command changed: its fields as JSON, or `line`; exit 0."""
        if as_json:
            self.print_json(memory.to_dict(body=False))
        else:
            self.out.write(line)
        return 0

    def print_result(self, result: Any, as_json: bool) -> int:
        """Print a library result (anything with `to_dict` and `format_text`) as asked; exit 0."""
        if as_json:
            self.print_json(result.to_dict())
        else:
            self.out.write(result.format_text())
        return 0


def _checked(folder: Path) -> Path:
    from ..disk.folder import refuse_misplaced

    refuse_misplaced(folder)
    return folder


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
        for stream in (out, err):  # never a UnicodeEncodeError for a memory in Chinese
            if not speaks_unicode(stream):
                with contextlib.suppress(AttributeError, ValueError, OSError):
                    stream.reconfigure(errors="backslashreplace")  # type: ignore[attr-defined,union-attr]
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
        if status == 1 and names_hook(sys.argv[1:] if args is None else args):
            status = 0  # a hook always exits 0, misused too: its error said in one line
        if standalone_mode:
            sys.exit(status)
        return status


# options more than one command takes


def _remember_dir(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    # Given before the command or after it, in the order given: the first is the personal
    # folder, each further one a shared folder read with it (folders/).
    if value:
        session = ctx.find_object(Session)
        assert session is not None  # made by the group before any option is read
        session.dirs.extend(value)


dir_option = click.option(
    "--dir", metavar="DIR", expose_value=False, callback=_remember_dir, multiple=True,
    help="the memory folder (default: $SAGE_MEM_DIR or ~/.sage-mem/memory); repeated: "
         "your folder first, then shared ones to read with it",
)
json_option = click.option("--json", "as_json", is_flag=True, help="print JSON")
poll_option = click.option(
    "--poll", is_flag=True, help="watch the folder by polling (for network drives)"
)


def expected_sha256_option(
    help: str = "refuse if the file changed since you read it",
) -> Callable[[Any], Any]:
    """`--expected-sha256`: a write refused (ConflictError) when the file changed since read."""
    return click.option("--expected-sha256", metavar="SHA", help=help)


def allow_secret_option(what: str) -> Callable[[Any], Any]:
    """`--allow-secret`: `what` the command does even with text that looks like a credential."""
    return click.option("--allow-secret", is_flag=True, help=f"{what} (refused by default)")


def stacked(*decorators: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Several options as one decorator, listed in the order given."""
    def apply(function: Any) -> Any:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


filter_options = stacked(
    # One of the four, as in `memory_search` and `memory_list`: a typo is an error, not an
    # empty list.
    click.option("--category", type=Choice(CATEGORIES, case_sensitive=False),
                 help="only memories of this category"),
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


# the group


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


def folder_command(name: str, summary: str, example: str) -> Callable[[Any], Any]:
    """A `command` over a memory folder: `--dir` is its first option (all but the git
    helpers `pre-push` and `merge-driver`, and `install`/`uninstall`, whose `client_options`
    start with it)."""
    return stacked(command(name, summary, example), dir_option)


