"""Commands on memories: `add`, `edit`, `search`, `show`, `list`, `archive`, `restore`, `mv`,
`delete`, `feedback`.

`edit`, `mv` and `delete` are a person's: agents and the dream have tools for
none of them (an agent archives; only a person deletes, an archived memory,
after saying yes).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any, TextIO

import click

from .. import PROG
from ..errors import InvalidMemory, SageMemError
from ..memory.fields import FIELDS
from ..memory.value import MAX_FILE_BYTES
from .base import (
    Choice,
    Number,
    Session,
    allow_secret_option,
    expected_sha256_option,
    field_option,
    filter_options,
    folder_command,
    json_option,
    stacked,
)


def read_body(body: str | None, err: TextIO) -> str | None:
    """The body: `--body TEXT`, or stdin for `--body -`; else none (the body is kept as it is).

    stdin is read only when asked: `… | while read x; do sage-mem add …; done` must not have
    its first `add` swallow the lines meant for the loop. A body piped without `--body -` (as
    older versions read it) is left unread, and a note says so rather than drop it unsaid.
    """
    if body == "-":
        if _is_terminal():
            err.write(f"{PROG}: reading the body from the terminal; end it with Ctrl-D\n")
        return _read_stdin()
    if body is None and _stdin_waiting():
        err.write(f"{PROG}: note: stdin left unread (a body is read from stdin only with "
                  "`--body -`)\n")
    return body


def _is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (ValueError, AttributeError):
        return False


def _stdin_waiting() -> bool:
    """Whether stdin is a pipe with bytes waiting or a file with bytes left (never read)."""
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            return os.fstat(fd).st_size > os.lseek(fd, 0, os.SEEK_CUR)
        if stat.S_ISFIFO(mode):
            import fcntl
            import termios

            waiting = bytearray(4)
            fcntl.ioctl(fd, termios.FIONREAD, waiting)
            return int.from_bytes(waiting, sys.byteorder) > 0
    except (OSError, ValueError, AttributeError, ImportError):
        pass
    return False


def _read_stdin() -> str:
    """stdin, up to what a memory may hold: `add ID < disk.img` is refused, never read whole."""
    text = sys.stdin.read(MAX_FILE_BYTES + 1)  # characters: each at least one byte
    if len(text) > MAX_FILE_BYTES:
        raise InvalidMemory(f"the body on stdin is over the {MAX_FILE_BYTES // 1024} KB a "
                            "memory may hold; nothing written")
    return text


@folder_command(
    "add",
    "create or update a memory (body from --body; `--body -` reads it from stdin, and stdin is "
    "read only then); also called `write`",
    'sage-mem add user_cat --category user --description "The cat is called Sesame"',
)
@click.argument("memory_id", metavar="ID",
                help="the memory id: its path in the folder without .md")
@stacked(*(field_option(field) for field in FIELDS))
@click.option("--body",
              help="the body text; `-` reads it from stdin (stdin is read only then: "
                   "`echo text | sage-mem add ID --description D --body -`)")
@expected_sha256_option()
@allow_secret_option("write even if the text looks like a credential")
@json_option
@click.pass_obj
def add(session: Session, memory_id: str, body: str | None, expected_sha256: str | None,
        allow_secret: bool, as_json: bool, **given: Any) -> int:
    # A list option not given is () to click, and a field not given is None to the store.
    fields = {name: list(value) or None if isinstance(value, tuple) else value
              for name, value in given.items()}
    store, memory_id = session.store_for(memory_id)
    memory = store.write(
        memory_id, body=read_body(body, session.err), expected_sha256=expected_sha256,
        allow_secret=allow_secret, **fields,
    )
    return session.print_memory(memory, as_json, f"Saved {memory.id} ({memory.path})\n")


@folder_command(
    "edit",
    "open a memory file in $VISUAL or $EDITOR; saved only if it still parses and nobody "
    "changed it meanwhile (else your text is kept, and where is said); or change part of "
    "its body at once (--replace, --append, --heading), as the memory_edit tool does",
    "EDITOR=nano sage-mem edit user_cat",
)
@click.argument("memory_id", metavar="ID", help="the memory id")
@click.option("--replace", nargs=2, metavar="OLD NEW",
              help="replace OLD (found exactly once in the body) with NEW; no editor opens")
@click.option("--append", metavar="TEXT", help="add TEXT at the end of the body")
@click.option("--heading", metavar="HEADING",
              help="with --append: add it at the end of this heading's section")
@expected_sha256_option("with --replace or --append: refuse if the file changed since you "
                        "read it")
@allow_secret_option("save even if a new line looks like a credential")
@json_option
@click.pass_obj
def edit(session: Session, memory_id: str, replace: tuple[str, str] | None,
         append: str | None, heading: str | None, expected_sha256: str | None,
         allow_secret: bool, as_json: bool) -> int:
    if replace or append is not None or heading is not None or expected_sha256 is not None:
        from ..memory.body_edits import BodyEdit

        old, new = replace or (None, None)
        store, memory_id = session.store_for(memory_id)
        memory = store.edit(memory_id, BodyEdit(old=old, new=new, append=append,
                                                heading=heading),
                            expected_sha256=expected_sha256, allow_secret=allow_secret)
        return session.print_memory(memory, as_json, f"Saved {memory.id} ({memory.path})\n")
    import hashlib
    import shlex
    import subprocess
    import time

    from ..disk.folder import read_memory
    from ..disk.safe_io import atomic_write, read_file
    from ..errors import ConflictError, InvalidMemory, MemoryLocked, MemoryNotFound
    from ..memory.value import MAX_FILE_BYTES

    store, memory_id = session.store_for(memory_id)
    memory = store.read(store.folder.normalize_id(memory_id))  # says so when there is none
    canonical = memory.id
    if memory.locked:
        raise MemoryLocked(f"{canonical}: memory is locked (locked: true): sage-mem does not "
                           f"change it; edit {memory.path} itself to unlock or change it")
    raw = read_memory(store.folder, store.folder.path_for(canonical)).raw or b""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    drafts = store.folder.ensure_state_dir("edits")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    draft = drafts / f"{canonical.replace('/', '__')}.{stamp}.{os.getpid()}.md"
    atomic_write(draft, raw, mode=0o600)
    err = session.err
    kept = f"your text is kept in {draft}"
    while True:
        try:
            done = subprocess.run([*shlex.split(editor), str(draft)], check=False)
        except (OSError, ValueError) as exc:
            draft.unlink()
            raise InvalidMemory(
                f"cannot start the editor {editor!r} ($VISUAL, $EDITOR): {exc}; nothing changed"
            ) from None
        if done.returncode != 0:
            err.write(f"{PROG}: error: the editor exited with status {done.returncode}; "
                      f"not saved; {kept}\n")
            return 1
        try:
            # Through the checked read: what the editor left may be no file (a FIFO would
            # wait for a writer for ever) or far past what a memory may hold.
            edited = read_file(draft, limit=MAX_FILE_BYTES).raw
            if edited == raw:
                draft.unlink()
                session.out.write(f"No changes to {canonical}.\n")
                return 0
            memory = store.replace_file(canonical, edited, allow_secret=allow_secret,
                                     expected_sha256=hashlib.sha256(raw).hexdigest())
        except (InvalidMemory, ConflictError, MemoryLocked, MemoryNotFound) as exc:
            err.write(f"{PROG}: error: not saved: {exc}\n")
            if isinstance(exc, InvalidMemory) and sys.stdin.isatty() and click.confirm(
                "Open the editor again to fix it?", default=True, err=True
            ):
                continue
            err.write(f"{PROG}: {kept} (nothing is lost: fix it and run "
                      f"`{PROG} edit` again, or copy it over the file)\n")
            return 1
        break
    draft.unlink()
    if as_json:
        session.print_json(memory.to_dict(body=False))
        return 0
    session.out.write(f"Saved {memory.id} ({memory.path})\n")
    for problem in memory.problems:
        err.write(f"{PROG}: note: {memory.id}: {problem}\n")
    return 0


def _not_blank(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A query with something in it (as `memory_search` asks): a blank one is a mistake."""
    if not value.strip():
        raise click.BadParameter("is empty", ctx=ctx, param=param)
    return value


def _moment(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """An ISO date or time (`--now 2026-11-24`), or None when not given."""
    if value is None:
        return None
    from ..memory.value import parse_moment

    moment = parse_moment(value.strip())
    if moment is None:
        raise click.BadParameter(f"{value!r} is not an ISO date (2026-11-24)", ctx=ctx,
                                 param=param)
    return moment


@folder_command("search", "ranked compact results for a query",
                'sage-mem search "how do I run the tests" --limit 5')
@click.argument("query", help="words, in any language", callback=_not_blank)
@click.option("--limit", type=Number(int, low=1), default=10, metavar="N",
              help="how many results (default 10)")
@click.option("--offset", type=Number(int, low=0), default=0, metavar="N",
              help="skip this many results (paging)")
@click.option("--now", metavar="DATE", callback=_moment,
              help="the date the question is asked (ISO), for its time words such as "
                   "\"last week\" (default: now)")
@filter_options
@json_option
@click.pass_obj
def search(session: Session, query: str, limit: int, offset: int, now: Any,
           category: str | None, project: str | None, tags: tuple[str, ...], archived: bool,
           as_json: bool) -> int:
    from .render import hit_dict, hit_line

    folders = session.open_folders()
    hits = (folders if folders.several else folders.personal).search(
        query, limit=limit, offset=offset, category=category, project=project,
        tags=list(tags) or None, archived=archived, now=now, refine=True,
    )
    unreadable = len(broken_files(folders, archived=archived))
    if as_json:
        session.print_json({"results": [hit_dict(hit) for hit in hits], "count": len(hits),
                            "unreadable": unreadable})
    elif hits:
        session.out.writelines(hit_line(hit) + "\n" for hit in hits)
    else:
        session.out.write("No memories match.\n")
    if unreadable:  # on stderr: the results (and their JSON) stay as they were
        session.err.write(f"{PROG}: note: {unreadable} file{'s' if unreadable != 1 else ''} "
                          f"could not be read, so no search finds {_them(unreadable)} "
                          f"({PROG} audit)\n")
    note_unlisted(session, folders, "no search finds them")
    return 0


def _them(count: int) -> str:
    return "it" if count == 1 else "them"


def note_unlisted(session: Session, folders: Any, what: str) -> None:
    """A note on stderr for each folder of the walk this process may not list: every walk
    passes over it, so its memories would be missing without a word."""
    from ..checks.prompt_injection import visible_name

    for name, store in folders.stores.items():
        for folder in store.folder.unlisted_folders():
            rel = os.path.relpath(folder, store.root).replace(os.sep, "/")
            shown = visible_name(folders.qualify(name, rel + "/"))
            session.err.write(f"{PROG}: note: {shown} cannot be listed (no permission): the "
                              f"memories in it are not read, and {what}\n")


def broken_files(folders: Any, *, archived: bool = False) -> list[tuple[str, Any]]:
    """(id, problem) of every file in the folders that could not be read as a memory: a
    search cannot find them and a list cannot show their fields, but neither hides them."""
    found = []
    for name, store in folders.stores.items():
        for problem in store.problems():
            memory_id = store.folder.id_for(problem.path)
            if memory_id is None and archived:
                memory_id = store.folder.archived_id_for(problem.path)
            if memory_id is not None:
                found.append((folders.qualify(name, memory_id), problem))
    return sorted(found, key=lambda pair: pair[0])


@folder_command("show", "one memory in full", "sage-mem show user_cat")
@click.argument("memory_id", metavar="ID",
                help="the memory id (archive/… for an archived one; ID@REV: as it was in git)")
@json_option
@click.pass_obj
def show(session: Session, memory_id: str, as_json: bool) -> int:
    from .render import memory_text

    folders = session.open_folders()
    folder_name, memory_id = folders.split(memory_id)
    store = folders.store(folder_name)
    name, at, rev = memory_id.rpartition("@")
    if at and name and rev and not _is_memory(store, memory_id):
        from ..sync.history import memory_at

        memory = memory_at(store.root, name, rev)
    else:
        memory = store.read(memory_id)
    memory = folders.labelled(folder_name, memory)
    if as_json:
        session.print_json(memory.to_dict())
    else:
        session.out.write(memory_text(memory))
    return 0


def _is_memory(store: Any, memory_id: str) -> bool:
    """Whether `memory_id` names a memory file as it is (an id may hold an `@`)."""
    try:
        return bool(store.folder.path_for(memory_id, allow_archived=True).exists())
    except SageMemError:
        return False


@folder_command("list", "memories, filterable by category, tag or project",
                "sage-mem list --category feedback")
@filter_options
@json_option
@click.pass_obj
def list_memories(session: Session, category: str | None, project: str | None,
                  tags: tuple[str, ...], archived: bool, as_json: bool) -> int:
    from ..checks.prompt_injection import visible, visible_name
    from .render import memory_line

    folders = session.open_folders()
    memories = (folders if folders.several else folders.personal).list(
        category=category, project=project, tags=list(tags) or None, archived=archived
    )
    broken = broken_files(folders, archived=archived)
    if as_json:
        session.print_json({
            "memories": [{**m.to_dict(body=False), **archive_marks(m)} for m in memories],
            "count": len(memories),
            "broken": [{"id": memory_id, **problem.to_dict()} for memory_id, problem in broken],
        })
        return 0
    lines = []
    for memory in memories:
        marks = archive_marks(memory)
        line = memory_line(memory)
        if memory.archived:
            when = str(marks.get("archived") or "")[:10]
            reason = marks.get("archiveReason") or "no reason given"
            line += f"  — archived{' ' + when if when else ''}: {visible(str(reason))}"
        lines.append((memory.id, line))
    # A file that does not parse has no fields to filter on: listed, marked, whatever the filter.
    lines += [(memory_id, f"{visible_name(memory_id)}  BROKEN: {visible(problem.message)}")
              for memory_id, problem in broken]
    session.out.writelines(line + "\n" for _, line in sorted(lines, key=lambda pair: pair[0]))
    if not lines:
        session.out.write("No memories.\n")
    if broken:
        count = len(broken)
        session.err.write(f"{PROG}: note: {count} file{'s' if count != 1 else ''} could not be "
                          f"read, marked BROKEN above (fix it in an editor; {PROG} audit)\n")
    note_unlisted(session, folders, "they are not shown")
    return 0


def archive_marks(memory: Any) -> dict[str, Any]:
    """An archived memory's `archived` time and `archiveReason` (and `supersededBy`), as JSON."""
    if not memory.archived:
        return {}
    marks = {key: memory.meta.get(key) for key in ("archived", "archiveReason", "supersededBy")}
    return {key: value if isinstance(value, str) else None if value is None else str(value)
            for key, value in marks.items()}


@folder_command("archive", "move a memory to archive/ (nothing is ever deleted)",
                'sage-mem archive user_old_cat --reason "the cat was renamed"')
@click.argument("memory_id", metavar="ID", help="the memory id")
@click.option("--reason", required=True, help="why (kept in the archived file)")
@expected_sha256_option()
@json_option
@click.pass_obj
def archive(session: Session, memory_id: str, reason: str, expected_sha256: str | None,
            as_json: bool) -> int:
    store, memory_id = session.store_for(memory_id)
    memory = store.archive(
        memory_id, reason=reason, expected_sha256=expected_sha256
    )
    return session.print_memory(
        memory, as_json, f"Archived {memory_id} as {memory.id} ({memory.path})\n"
    )


@folder_command("restore", "bring an archived memory back under its old id (never over another)",
                "sage-mem restore archive/user_old_cat")
@click.argument("memory_id", metavar="ID", help="the archived memory (archive/… or its old id)")
@json_option
@click.pass_obj
def restore(session: Session, memory_id: str, as_json: bool) -> int:
    store, memory_id = session.store_for(memory_id)
    memory = store.restore(memory_id)
    return session.print_memory(memory, as_json, f"Restored {memory.id} ({memory.path})\n")


@folder_command(
    "mv", "give a memory a new id; links to it in other memories follow (never overwrites)",
    "sage-mem mv user_cat user/pets/cat --expected-sha256 SHA  # SHA as `show` printed it",
)
@click.argument("old_id", metavar="OLD", help="the memory's id now")
@click.argument("new_id", metavar="NEW", help="its new id")
@expected_sha256_option()
@json_option
@click.pass_obj
def move(session: Session, old_id: str, new_id: str, expected_sha256: str | None,
         as_json: bool) -> int:
    renamed = session.open_store().rename(old_id, new_id, expected_sha256=expected_sha256)
    return session.print_result(renamed, as_json)


@folder_command("delete",
                "delete an archived memory for good, after you confirm (only archived ones; agents "
                "and the dream cannot)",
                "sage-mem delete archive/user_old_cat --yes")
@click.argument("memory_id", metavar="ID", help="the archived memory (archive/… or its old id)")
@click.option("--yes", "-y", "yes", is_flag=True, help="do not ask for confirmation")
@json_option
@click.pass_obj
def delete(session: Session, memory_id: str, yes: bool, as_json: bool) -> int:
    from ..checks.prompt_injection import visible, visible_name

    store = session.open_store()
    shown = store.read(store.deletable_id(memory_id))
    if not yes:
        reason = archive_marks(shown).get("archiveReason") or "no reason given"
        session.err.write(
            f"{visible_name(shown.id)}: {visible(shown.description)}\n"
            f"  archived: {visible(str(reason))}\n  {shown.path}\n"
        )
        try:
            confirmed = click.confirm(
                f"Delete {visible_name(shown.id)} for good? It cannot be undone "
                "(unless the folder is in git)", default=False, err=True,
            )
        except click.Abort:
            confirmed = False
        if not confirmed:
            session.err.write(f"Not deleted (confirm, or pass --yes): {shown.id}\n")
            return 1
    gone = store.delete(shown.id, expected_sha256=shown.sha256)
    if as_json:
        session.print_json({"id": gone.id, "path": str(gone.path), "deleted": True})
    else:
        session.out.write(f"Deleted {gone.id} ({gone.path})\n")
    return 0


@folder_command("feedback", "say a memory was helpful or not (moves its trust)",
                "sage-mem feedback user_cat helpful")
@click.argument("memory_id", metavar="ID", help="the memory id")
@click.argument("verdict", type=Choice(["helpful", "unhelpful"]),
                help="helpful or unhelpful")
@json_option
@click.pass_obj
def feedback(session: Session, memory_id: str, verdict: str, as_json: bool) -> int:
    store, memory_id = session.store_for(memory_id)
    memory = store.feedback(memory_id, helpful=verdict == "helpful")
    if as_json:
        session.print_json({"id": memory.id, "trust": memory.trust})
    else:
        session.out.write(f"{memory.id}: trust is now {memory.trust:g}\n")
    return 0
