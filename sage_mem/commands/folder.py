"""Commands on the folder as a whole: `init`, `index`, `embed`, `audit`, `import`, `export`."""

from __future__ import annotations

import os
import shlex
from typing import Any

import click

from .. import PROG
from ..disk.folder import default_folder
from ..disk.home import expand_home
from ..errors import FolderError
from .base import (
    Choice,
    Session,
    allow_secret_option,
    folder_command,
    json_option,
    speaks_unicode,
)


@folder_command(
    "init",
    "create an empty memory folder, private to you (0700); with --examples, add example memories",
    "sage-mem init --git",
)
@click.argument("path", metavar="[DIR]", required=False,
                help="where (default: the memory folder)")
@click.option("--examples", is_flag=True,
              help="add example memories to a folder that has none (marked as examples: tag "
                   "`example`, description starting \"Example:\", none a baseline)")
@click.option("--git", is_flag=True,
              help="make it a git repository on `main` with a first commit, LF endings and "
                   "sage-mem's merge driver")
@click.option("--remote", metavar="URL",
              help="with --git (implied): set the remote `origin` that `sage-mem sync` uses")
@json_option
@click.pass_obj
def init(session: Session, path: str | None, examples: bool, git: bool, remote: str | None,
         as_json: bool) -> int:
    from functools import partial

    from ..disk.template import EXAMPLE_PREFIX, init_folder
    from ..store import MemoryStore
    from ..sync.git import shown_url
    from ..sync.steps import init_repository

    out = session.out
    target = expand_home(path) if path else session.folder
    result = init_folder(target, partial(MemoryStore, watch=False), examples=examples)
    if git or remote:
        init_repository(result, remote)
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
            "firstCommit": result.first_commit,
            "remote": shown_url(result.remote),
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
            "Initialized a git repository there on `main`, with a first commit, a "
            ".gitattributes that keeps LF endings and sage-mem's merge driver.\n"
        )
    if result.remote:
        out.write(f"Remote: {shown_url(result.remote)}. Sync it: sage-mem {where}sync\n")
    elif result.git_initialized:
        out.write(f"To sync it: sage-mem {where}sync --remote URL\n")
    elif result.gitattributes_written:
        out.write("Wrote a .gitattributes that keeps LF endings.\n")
    if result.copied:
        out.write(f'Try: sage-mem {where}search "how do I run the tests"\n')
    out.write(f"State (counts, caches, sessions): {result.state_dir}\n")
    return 0


@folder_command("index", "regenerate MEMORY.md (also repairs one left with merge conflicts)",
                "sage-mem index")
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
    from ..checks.prompt_injection import visible

    for problem in problems:  # a file's name, a remote's say, may hold a terminal escape
        session.out.write(f"skipped: {visible(problem.message)}\n")
    return 0


@folder_command("embed",
                "make the vectors of semantic search for the memories that lack one (needs "
                "the extra: pip install \".[semantic]\" in a sage-mem checkout, or "
                "pip install \"sage_mem-….whl[semantic]\" with its wheel)",
                "sage-mem embed")
@json_option
@click.pass_obj
def embed(session: Session, as_json: bool) -> int:
    store = session.open_store()
    bar: list[Any] = []

    def progress(done: int, total: int) -> None:
        if as_json or not total:
            return
        if not bar:
            if not session.err.isatty():  # a log, not a terminal: one line, no bar
                session.err.write(f"{PROG}: embedding {total} memories\n")
                bar.append(None)
                return
            bar.append(click.progressbar(length=total, label="embedding", file=session.err))
            bar[0].__enter__()
        if bar[0] is not None:
            bar[0].update(done - bar[0].pos)

    try:
        updated = store.embed(progress)
    finally:
        if bar and bar[0] is not None:
            bar[0].__exit__(None, None, None)
    model = updated.model
    if updated.unsaved:
        raise FolderError(f"{updated.path}: the {updated.embedded} vectors made cannot be kept "
                          f"({updated.unsaved}); search will not use them: check the state folder")
    # A file that could not be read has no vector (it is not a memory until it parses): said
    # here as `index` says it, not left for the user to find missing from search.
    problems = store.problems()
    if as_json:
        session.print_json({
            "model": model.name, "version": model.version, "dimension": model.dimension,
            "path": str(updated.path), "embedded": updated.embedded, "kept": updated.kept,
            "removed": updated.removed, "vectors": updated.total,
            "seconds": round(updated.seconds, 3),
            "problems": [p.to_dict() for p in problems],
        })
        return 0
    dropped = f", {updated.removed} dropped (memory gone)" if updated.removed else ""
    session.out.write(
        f"{updated.total} memories have vectors ({updated.embedded} made, {updated.kept} "
        f"up to date{dropped}) with {model.name} {model.version}, in "
        f"{updated.seconds:.1f} s; kept in {updated.path}\n"
    )
    from ..checks.prompt_injection import visible

    for problem in problems:  # a file's name, a remote's say, may hold a terminal escape
        session.out.write(f"skipped: {visible(problem.message)}\n")
    return 0


@folder_command("audit",
                "check the folder and report problems (changes nothing; exit 1 for an error, "
                "with --strict for a warning too)",
                "sage-mem audit --strict")
@click.option("--strict", is_flag=True, help="exit 1 for warnings too, not only for errors")
@json_option
@click.pass_obj
def audit(session: Session, strict: bool, as_json: bool) -> int:
    from ..checks.audit import audit as audit_folder

    report = audit_folder(session.open_store())
    if as_json:
        session.print_json(report.to_dict())
    else:
        text = report.format_text()
        session.out.write(text if text.endswith("\n") or not text else text + "\n")
        errors, warnings = len(report.errors), len(report.findings) - len(report.errors)
        if report.ok:
            session.out.write("No problems found.\n")
        else:
            session.out.write(
                f"{errors} error{'s' if errors != 1 else ''}, "
                f"{warnings} warning{'s' if warnings != 1 else ''}"
                + (" (--strict: warnings fail too)\n" if strict and warnings else "\n")
            )
    return report.exit_status(strict=strict)


@folder_command(
    "import",
    "bring memories in from Claude Code, mnemo or an export's JSON lines (never overwrites)",
    "sage-mem import claude-code ~/.claude/projects/my-project/memory --dry-run",
)
@click.argument("source", type=Choice(["claude-code", "mnemo", "jsonl"]),
                help="claude-code (a folder), mnemo (a database) or jsonl (an export)")
@click.argument("path", metavar="PATH",
                help="the Claude Code memory folder, the mnemo SQLite file, or the JSON lines "
                     "file (`-`: stdin)")
@click.option("--dry-run", is_flag=True, help="report what would happen, write nothing")
@allow_secret_option("import even what looks like a credential")
@json_option
@click.pass_obj
def import_memories(session: Session, source: str, path: str, dry_run: bool,
                    allow_secret: bool, as_json: bool) -> int:
    import sys

    from ..agents.importers import import_claude_code, import_jsonl, import_mnemo

    store = session.open_store()
    if source == "jsonl":
        where = sys.stdin if path == "-" else expand_home(path)
        result = import_jsonl(store, where, dry_run=dry_run, allow_secret=allow_secret)
    else:
        bring_in = import_claude_code if source == "claude-code" else import_mnemo
        result = bring_in(store, expand_home(path), dry_run=dry_run,
                          allow_secret=allow_secret)
    session.print_result(result, as_json)
    failure = result.failure()
    if failure is None:
        return 0
    session.err.write(f"{PROG}: error: {failure}\n")
    return 1


@folder_command(
    "export",
    "write every memory as JSON lines (`import jsonl` reads them back); a file that cannot be "
    "parsed is named on stderr and the exit status is 1",
    "sage-mem export -o memories.jsonl",
)
@click.option("--jsonl", is_flag=True,
              help="JSON lines, one memory a line (the default and only format)")
@click.option("--archived", is_flag=True, help="include archived memories")
@click.option("--output", "-o", metavar="FILE",
              help="write to FILE instead of stdout: a new file (never replaced), private (0600)")
@click.option("--json", "as_json", is_flag=True,
              help="print the report (count, files left out and why) as JSON: on stdout with -o, "
                   "else on stderr")
@click.pass_obj
def export(session: Session, jsonl: bool, archived: bool, output: str | None,
           as_json: bool) -> int:
    from ..agents.export import export_jsonl, export_jsonl_file
    from ..checks.prompt_injection import visible_name

    store = session.open_store()
    if output:
        result = export_jsonl_file(store, output, archived=archived)
    else:
        result = export_jsonl(store, session.out, archived=archived,
                              ascii_only=not speaks_unicode(session.out))
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
