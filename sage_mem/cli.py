"""The `sage-mem` command line: parse arguments, call the library, print.

Every command that prints data takes `--json`. A user error (a missing memory,
a bad flag, a malformed file) is one line on stderr and exit status 1, never a
traceback. Heavy modules (`mcp`, `watchdog`) are imported only by the commands
that need them.

`sage-mem hook …` runs in a new process for every prompt, so `main` recognises
its plain command lines before building the parser: argparse, the parser of
every command and what argparse pulls in (shutil, gettext, locale) would cost
each prompt about 10 ms. Anything unusual about such a command line (an
abbreviated option, `--help`, a missing or extra argument) goes through
argparse as usual.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from . import __version__
from .errors import SageMemError
from .folder import default_folder

if TYPE_CHECKING:
    import argparse

PROG = "sage-mem"


class UsageError(Exception):
    """A bad command line: reported in one line, exit status 1."""


def _print_json(data: Any, out: TextIO) -> None:
    out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _print_result(result: Any, args: argparse.Namespace, out: TextIO) -> int:
    """Print a library result (anything with `to_dict` and `format_text`) as asked; exit 0."""
    if args.json:
        _print_json(result.to_dict(), out)
    else:
        out.write(result.format_text())
    return 0


def _folder(args: argparse.Namespace) -> Path:
    return Path(args.dir).expanduser() if args.dir else default_folder()


def _open_store(args: argparse.Namespace):
    from .store import MemoryStore

    # One command, one answer: no watcher to keep the index current afterwards.
    store = MemoryStore(_folder(args), watch=False)
    for note in store.folder.state_notes:  # said once, on the folder's first use
        sys.stderr.write(f"sage-mem: note: {note}\n")
    return store


# commands


def cmd_init(args: argparse.Namespace, out: TextIO) -> int:
    from .template import EXAMPLE_PREFIX, init_folder

    target = Path(args.path).expanduser() if args.path else _folder(args)
    result = init_folder(target, git=args.git, examples=args.examples)
    data = {
        "path": str(result.root),
        "created": result.created,
        "copied": result.copied,
        "existing": result.existing,
        "git": result.git_initialized,
        "gitattributes": result.gitattributes_written,
        "stateDir": str(result.state_dir),
    }
    if args.json:
        _print_json(data, out)
        return 0
    if result.copied:
        out.write(
            f"Created {result.root} with {len(result.copied)} example memories: tagged "
            f"`example`, each description starting {EXAMPLE_PREFIX.strip()!r}, none a baseline.\n"
            "Archive each when done with it: sage-mem archive ID --reason example\n"
        )
    elif result.existing:
        skipped = "; no examples copied" if args.examples else ""
        out.write(f"{result.root} already holds {result.existing} memories{skipped}.\n")
    else:
        made = "Created" if result.created else "Ready:"
        out.write(
            f"{made} {result.root}, an empty memory folder.\n"
            'Add a memory: sage-mem add user_name --category user --description "…"\n'
            "(or see how memories look: sage-mem init --examples)\n"
        )
    if result.git_initialized:
        out.write(
            "Initialized a git repository there, with a .gitattributes that keeps LF endings.\n"
        )
    elif result.gitattributes_written:
        out.write("Wrote a .gitattributes that keeps LF endings.\n")
    if result.copied:
        out.write('Try: sage-mem search "how do I run the tests"\n')
    out.write(f"State (counts, caches, sessions): {result.state_dir}\n")
    return 0


def _read_body(args: argparse.Namespace) -> str | None:
    if args.body == "-":
        return sys.stdin.read()
    if args.body is not None:
        return args.body
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return None
    # Read a piped or redirected body, but never wait on a terminal or /dev/null.
    if stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
        text = sys.stdin.read()
        return text if text.strip() else None
    return None


def cmd_add(args: argparse.Namespace, out: TextIO) -> int:
    from .fields import FIELDS

    store = _open_store(args)
    memory = store.write(
        args.id,
        body=_read_body(args),
        expected_sha256=args.expected_sha256,
        allow_secret=args.allow_secret,
        **{field.name: getattr(args, field.name) for field in FIELDS},
    )
    if args.json:
        _print_json(memory.to_dict(body=False), out)
    else:
        out.write(f"Saved {memory.id} ({memory.path})\n")
    return 0


def cmd_search(args: argparse.Namespace, out: TextIO) -> int:
    from .render import hit_dict, hit_line

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    store = _open_store(args)
    hits = store.search(
        args.query,
        limit=args.limit,
        offset=args.offset,
        category=args.category,
        project=args.project,
        tags=args.tag,
        archived=args.archived,
    )
    if args.json:
        _print_json({"results": [hit_dict(hit) for hit in hits], "count": len(hits)}, out)
    elif hits:
        out.writelines(hit_line(hit) + "\n" for hit in hits)
    else:
        out.write("No memories match.\n")
    return 0


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from .render import memory_text

    memory = _open_store(args).read(args.id)
    if args.json:
        _print_json(memory.to_dict(), out)
    else:
        out.write(memory_text(memory))
    return 0


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    from .render import memory_line

    store = _open_store(args)
    memories = store.list(
        category=args.category, project=args.project, tags=args.tag, archived=args.archived
    )
    if args.json:
        _print_json(
            {"memories": [m.to_dict(body=False) for m in memories], "count": len(memories)}, out
        )
    else:
        out.writelines(memory_line(memory) + "\n" for memory in memories)
        if not memories:
            out.write("No memories.\n")
    return 0


def cmd_archive(args: argparse.Namespace, out: TextIO) -> int:
    memory = _open_store(args).archive(
        args.id, reason=args.reason, expected_sha256=args.expected_sha256
    )
    if args.json:
        _print_json(memory.to_dict(body=False), out)
    else:
        out.write(f"Archived {args.id} as {memory.id} ({memory.path})\n")
    return 0


def cmd_feedback(args: argparse.Namespace, out: TextIO) -> int:
    memory = _open_store(args).feedback(args.id, helpful=args.verdict == "helpful")
    if args.json:
        _print_json({"id": memory.id, "trust": memory.trust}, out)
    else:
        out.write(f"{memory.id}: trust is now {memory.trust:g}\n")
    return 0


def cmd_index(args: argparse.Namespace, out: TextIO) -> int:
    store = _open_store(args)
    changed = store.regenerate_index()
    problems = store.problems()
    if args.json:
        _print_json(
            {
                "path": str(store.folder.index_file),
                "changed": changed,
                "memories": len(store.list()),
                "problems": [p.to_dict() for p in problems],
            },
            out,
        )
        return 0
    state = "rewritten" if changed else "already up to date"
    out.write(f"{store.folder.index_file}: {state} ({len(store.list())} memories)\n")
    for problem in problems:
        out.write(f"skipped: {problem.message}\n")
    return 0


def cmd_audit(args: argparse.Namespace, out: TextIO) -> int:
    from .audit import audit

    report = audit(_open_store(args))
    if args.json:
        _print_json(report.to_dict(), out)
    else:
        text = report.format_text()
        out.write(text if text.endswith("\n") or not text else text + "\n")
        if report.ok:
            out.write("No problems found.\n")
    return 0 if report.ok else 1


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    if args.dream_run:
        from .server_dream import serve_dream

        return serve_dream(_folder(args), args.dream_run)
    from .server import serve

    return serve(_folder(args), poll=args.poll)


def cmd_ui(args: argparse.Namespace, out: TextIO) -> int:
    from .ui import run_ui

    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError("--port must be from 0 to 65535")
    return run_ui(_folder(args), port=args.port, open_browser=args.open, poll=args.poll, out=out)


def cmd_hook(args: argparse.Namespace, out: TextIO) -> int:
    return _run_hook(args.event, args.dir, out)


def _run_hook(event: str, folder: str | None, out: TextIO) -> int:
    from .hooks import run_hook

    root = Path(folder).expanduser() if folder else None
    return run_hook(event, sys.stdin, out, sys.stderr, folder=root)


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


def _hook_command(argv: Sequence[str]) -> tuple[str, str | None] | None:
    """(event, --dir or None) when `argv` is a plain `hook` command line, else None.

    Plain means: `--dir DIR` or `--dir=DIR` any number of times, then `hook`,
    then one EVENT and any number of `--dir` after it, in any order; no
    argument that argparse could take for an option is left to guess (a value
    or an EVENT starting with `-` goes to argparse). As with argparse, the last
    `--dir` wins and one given after `hook` beats one given before it.
    """
    position, before = _dir_options(argv, 0)
    if position is None or position >= len(argv) or argv[position] != "hook":
        return None
    event: str | None = None
    after: str | None = None
    position += 1
    while position < len(argv):
        arg = argv[position]
        if arg == "--dir" or arg.startswith("--dir="):
            position, value = _dir_options(argv, position, single=True)
            if position is None:
                return None
            after = value
        elif event is None and not arg.startswith("-"):
            event = arg
            position += 1
        else:
            return None
    if event is None:
        return None
    return event, after if after is not None else before


def _dir_options(
    argv: Sequence[str], position: int, *, single: bool = False
) -> tuple[int | None, str | None]:
    """Read `--dir DIR` / `--dir=DIR` from `position`: (where they end, the last value).

    The position is None when a `--dir` lacks a value argparse would surely take.
    """
    value: str | None = None
    while position < len(argv):
        arg = argv[position]
        if arg.startswith("--dir="):
            value = arg[len("--dir=") :]
            position += 1
        elif arg == "--dir":
            if position + 1 >= len(argv) or argv[position + 1].startswith("-"):
                return None, None
            value = argv[position + 1]
            position += 2
        else:
            break
        if single:
            break
    return position, value


def cmd_install(args: argparse.Namespace, out: TextIO) -> int:
    from .install import install

    memory_dir = (
        Path(args.dir).expanduser()
        if args.dir
        else (
            Path(os.environ["SAGE_MEM_DIR"]).expanduser()
            if os.environ.get("SAGE_MEM_DIR")
            else None
        )
    )
    codex_home = os.environ.get("CODEX_HOME")
    result = install(
        args.client,
        scope=args.scope,
        project_dir=Path.cwd(),
        home=Path.home(),
        memory_dir=memory_dir,
        dry_run=args.dry_run,
        codex_home=Path(codex_home).expanduser() if codex_home else None,
    )
    return _print_result(result, args, out)


def cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    from .importers import import_claude_code, import_mnemo

    store = _open_store(args)
    if args.source == "claude-code":
        result = import_claude_code(store, Path(args.path).expanduser(), dry_run=args.dry_run)
    else:
        result = import_mnemo(store, Path(args.path).expanduser(), dry_run=args.dry_run)
    return _print_result(result, args, out)


def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    from .importers import export_jsonl, export_jsonl_file
    from .injection import visible_name

    store = _open_store(args)
    if args.output:
        result = export_jsonl_file(store, args.output, archived=args.archived)
    else:
        result = export_jsonl(store, out, archived=args.archived)
    status = 1 if result.left_out else 0
    # stdout carries the memories unless they went to a file.
    report = out if args.output else sys.stderr
    if args.json:
        _print_json(result.to_dict(), report)
        return status
    for item in result.left_out:
        sys.stderr.write(visible_name(f"{PROG}: not exported: {item.path}: {item.problem}") + "\n")
    if args.output:
        sys.stderr.write(f"Exported {result.exported} memories to {args.output}\n")
    if result.left_out:
        count = len(result.left_out)
        sys.stderr.write(
            f"{PROG}: {count} file{'s' if count != 1 else ''} not exported "
            "(cannot be read or parsed; see `sage-mem audit`)\n"
        )
    return status


def cmd_dream(args: argparse.Namespace, out: TextIO) -> int:
    from .dream import run_dream

    result = run_dream(_open_store(args), mode=args.mode, auto=args.auto)
    return _print_result(result, args, out)


def cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    from .dream import format_runs, list_runs

    runs = list_runs(_open_store(args))
    if args.json:
        _print_json({"runs": [run.to_dict() for run in runs], "count": len(runs)}, out)
    else:
        out.write(format_runs(runs) if runs else "No dream runs yet.\n")
    return 0


def cmd_rollback(args: argparse.Namespace, out: TextIO) -> int:
    from .dream import rollback

    result = rollback(
        _open_store(args), args.run_id, scope=args.scope, dry_run=args.dry_run, force=args.force
    )
    return _print_result(result, args, out)


# the parser

EPILOG = """examples:
  sage-mem init
  sage-mem add user_cat --category user --description "The user's cat is called Sesame"
  sage-mem search "what is my cat called"
  sage-mem search 我的猫叫什么 --json
  sage-mem show user_cat

The memory folder is --dir, else $SAGE_MEM_DIR, else ~/.sage-mem/memory."""


def _common() -> argparse.ArgumentParser:
    import argparse

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the memory folder (default: $SAGE_MEM_DIR or ~/.sage-mem/memory)",
    )
    return common


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--category", help="only this category (user, feedback, project, reference)"
    )
    parser.add_argument("--project", help="only memories for this project (and global ones)")
    parser.add_argument(
        "--tag", action="append", metavar="TAG", help="only memories with this tag (repeatable)"
    )
    parser.add_argument("--archived", action="store_true", help="include archived memories")


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def build_parser() -> argparse.ArgumentParser:
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{message} (see `{self.prog} --help`)")

    parser = _Parser(
        prog=PROG,
        description="Memory for AI agents, kept as plain markdown files.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dir",
        metavar="DIR",
        help="the memory folder (default: $SAGE_MEM_DIR or ~/.sage-mem/memory)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = _common()

    def command(
        name: str, handler: Callable[..., int], help: str, example: str, aliases: Sequence[str] = ()
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=help,
            description=help,
            epilog=f"example:\n  {example}",
            parents=[common],
            aliases=list(aliases),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(handler=handler)
        return sub

    sub = command(
        "init",
        cmd_init,
        "create an empty memory folder, private to you (0700); with --examples, add example "
        "memories",
        "sage-mem init --git",
    )
    sub.add_argument("path", nargs="?", metavar="DIR", help="where (default: the memory folder)")
    sub.add_argument(
        "--examples",
        action="store_true",
        help="add example memories to a folder that has none (marked as examples: tag "
        "`example`, description starting \"Example:\", none a baseline)",
    )
    sub.add_argument(
        "--git",
        action="store_true",
        help="make it a git repository with a .gitattributes that keeps LF endings",
    )
    _json_flag(sub)

    sub = command(
        "add",
        cmd_add,
        "create or update a memory (body from --body or stdin)",
        'sage-mem add user_cat --category user --description "The cat is called Sesame"',
        aliases=["write"],
    )
    sub.add_argument("id", help="the memory id: its path in the folder without .md")
    from .fields import BOOL, FIELDS, INT, TEXTS, UNIT

    for field in FIELDS:
        if field.kind == BOOL:
            sub.add_argument(field.flag, dest=field.name, action="store_true", default=None,
                             help=field.help)
            sub.add_argument(field.off_flag, dest=field.name, action="store_false",
                             help=f"not {field.flag}")
            continue
        sub.add_argument(
            field.flag, dest=field.name, metavar=field.metavar,
            type={UNIT: float, INT: int}.get(field.kind, str),
            action="append" if field.kind == TEXTS else "store",
            help=field.help + (" (repeatable)" if field.kind == TEXTS else ""),
        )
    sub.add_argument(
        "--body", help="the body text (`-` reads stdin; a piped stdin is read when this is absent)"
    )
    sub.add_argument(
        "--expected-sha256", metavar="SHA", help="refuse if the file changed since you read it"
    )
    sub.add_argument(
        "--allow-secret",
        action="store_true",
        help="write even if the text looks like a credential (refused by default)",
    )
    _json_flag(sub)

    sub = command(
        "search",
        cmd_search,
        "ranked compact results for a query",
        'sage-mem search "how do I run the tests" --limit 5',
    )
    sub.add_argument("query", help="words, in any language")
    sub.add_argument("--limit", type=int, default=10, help="how many results (default 10)")
    sub.add_argument("--offset", type=int, default=0, help="skip this many results (paging)")
    _filters(sub)
    _json_flag(sub)

    sub = command("show", cmd_show, "one memory in full", "sage-mem show user_cat")
    sub.add_argument("id", help="the memory id (archive/… for an archived one)")
    _json_flag(sub)

    sub = command(
        "list",
        cmd_list,
        "memories, filterable by category, tag or project",
        "sage-mem list --category feedback",
    )
    _filters(sub)
    _json_flag(sub)

    sub = command(
        "archive",
        cmd_archive,
        "move a memory to archive/ (nothing is ever deleted)",
        'sage-mem archive user_old_cat --reason "the cat was renamed"',
    )
    sub.add_argument("id", help="the memory id")
    sub.add_argument("--reason", required=True, help="why (kept in the archived file)")
    sub.add_argument(
        "--expected-sha256", metavar="SHA", help="refuse if the file changed since you read it"
    )
    _json_flag(sub)

    sub = command(
        "feedback",
        cmd_feedback,
        "say a memory was helpful or not (moves its trust)",
        "sage-mem feedback user_cat helpful",
    )
    sub.add_argument("id", help="the memory id")
    sub.add_argument("verdict", choices=["helpful", "unhelpful"], help="helpful or unhelpful")
    _json_flag(sub)

    sub = command(
        "index",
        cmd_index,
        "regenerate MEMORY.md (also repairs one left with merge conflicts)",
        "sage-mem index",
    )
    _json_flag(sub)

    sub = command(
        "audit",
        cmd_audit,
        "check the folder and report problems (changes nothing; exit 1 if any)",
        "sage-mem audit --json",
    )
    _json_flag(sub)

    sub = command(
        "dream",
        cmd_dream,
        "an autodream run: merge twins, archive what was superseded, fix summaries, dates, links",
        "sage-mem dream --mode rewrite",
    )
    sub.add_argument(
        "--mode",
        choices=["report", "rewrite"],
        default="report",
        help="report only (default) or rewrite, with a rollback point first",
    )
    sub.add_argument(
        "--auto",
        action="store_true",
        help="run only if the gates open (hours and sessions since the last run, the lock)",
    )
    _json_flag(sub)

    sub = command(
        "runs", cmd_runs, "past dream runs and rollbacks, newest first", "sage-mem runs --json"
    )
    _json_flag(sub)

    sub = command(
        "rollback",
        cmd_rollback,
        "undo a dream run (or a rollback); nothing is deleted",
        "sage-mem rollback 20261129T201500Z-1a2b --scope all --dry-run",
    )
    sub.add_argument("run_id", metavar="RUN_ID", help="the run to undo (see `sage-mem runs`)")
    sub.add_argument(
        "--scope",
        choices=["touched", "all"],
        default="touched",
        help="only the files the run touched (default) or the whole folder",
    )
    sub.add_argument(
        "--dry-run", action="store_true", help="say what would be restored, change nothing"
    )
    sub.add_argument(
        "--force",
        action="store_true",
        help="also put back files changed since the run (skipped otherwise; "
        "their present version is kept in the protective snapshot)",
    )
    _json_flag(sub)

    sub = command(
        "serve",
        cmd_serve,
        "run the MCP server on stdio (for Claude Code, Cursor, Codex…)",
        "sage-mem --dir ~/notes/memory serve",
    )
    sub.add_argument(
        "--poll", action="store_true", help="watch the folder by polling (for network drives)"
    )
    sub.add_argument(
        "--dream-run",
        metavar="RUN_ID",
        help="only the tools of one dream run in progress, for its model pass "
        "(autodream starts this itself)",
    )

    sub = command(
        "ui",
        cmd_ui,
        "a local web page to browse, search, edit and review the memory (127.0.0.1 only)",
        "sage-mem ui --open",
    )
    sub.add_argument(
        "--port",
        type=int,
        metavar="N",
        help="port on 127.0.0.1 (default 8765, or a free one if taken; 0: any free)",
    )
    sub.add_argument(
        "--open",
        action="store_true",
        help="open the page in the browser (the link carries this launch's token)",
    )
    sub.add_argument(
        "--poll", action="store_true", help="watch the folder by polling (for network drives)"
    )

    sub = command(
        "hook",
        cmd_hook,
        "Claude Code hook commands: read the hook JSON on stdin, answer JSON; always exit 0",
        "echo '{\"session_id\": \"s1\", \"prompt\": \"hi\"}' | sage-mem hook user-prompt-submit",
    )
    # Not `choices`: a hook must exit 0 even when misconfigured, so run_hook reports it.
    sub.add_argument(
        "event",
        metavar="EVENT",
        help="session-start (baselines and a tool guide) or user-prompt-submit (relevant memories)",
    )

    sub = command(
        "install",
        cmd_install,
        "register sage-mem with a client: MCP server (and hooks for Claude Code)",
        "sage-mem install claude-code --scope user --dry-run",
    )
    sub.add_argument("client", choices=["claude-code", "cursor", "codex"], help="which client")
    sub.add_argument(
        "--scope",
        choices=["project", "user"],
        help="this project's config or your user config (default: project; user for codex)",
    )
    sub.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
    _json_flag(sub)

    sub = command(
        "import",
        cmd_import,
        "bring memories in from Claude Code or mnemo (never overwrites)",
        "sage-mem import claude-code ~/.claude/projects/my-project/memory --dry-run",
    )
    sub.add_argument(
        "source",
        choices=["claude-code", "mnemo"],
        help="claude-code (a folder) or mnemo (a database)",
    )
    sub.add_argument(
        "path", metavar="PATH", help="the Claude Code memory folder or the mnemo SQLite file"
    )
    sub.add_argument(
        "--dry-run", action="store_true", help="report what would happen, write nothing"
    )
    _json_flag(sub)

    sub = command(
        "export",
        cmd_export,
        "write every memory as JSON lines; a file that cannot be parsed is named on stderr "
        "and the exit status is 1",
        "sage-mem export --jsonl -o memories.jsonl",
    )
    sub.add_argument(
        "--jsonl", action="store_true", required=True, help="JSON lines, one memory a line"
    )
    sub.add_argument("--archived", action="store_true", help="include archived memories")
    sub.add_argument(
        "--output", "-o", metavar="FILE",
        help="write to FILE instead of stdout: a new file (never replaced), private (0600)",
    )
    sub.add_argument(
        "--json", action="store_true",
        help="print the report (count, files left out and why) as JSON: "
        "on stdout with -o, else on stderr",
    )
    return parser


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the CLI; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    whole_process = argv is None
    argv = sys.argv[1:] if argv is None else argv
    hook = _hook_command(argv)
    parser = build_parser() if hook is None else None
    try:
        if hook is not None:
            status = _run_hook(*hook, out)
            if whole_process:
                _exit_now(status, out, err)
            return status
        try:
            with contextlib.redirect_stdout(out):
                args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0)
        if not getattr(args, "command", None):
            parser.print_help(out)
            return 0
        if getattr(args, "dir", None) is None:
            args.dir = None
        return args.handler(args, out)
    except UsageError as exc:
        err.write(f"{PROG}: error: {exc}\n")
        return 1
    except SageMemError as exc:
        err.write(f"{PROG}: error: {exc}\n")
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        err.write(f"{PROG}: error: {where}{exc.strerror or exc}\n")
        return 1
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return 130
