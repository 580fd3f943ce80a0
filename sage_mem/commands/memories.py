"""Commands on memories: `add`, `search`, `show`, `list`, `archive`, `feedback`."""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

import click

from ..errors import SageMemError
from ..memory.fields import FIELDS
from .base import (
    Choice,
    Number,
    Session,
    command,
    dir_option,
    field_option,
    filter_options,
    json_option,
    stacked,
)


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
                help="the memory id (archive/… for an archived one; ID@REV: as it was in git)")
@json_option
@click.pass_obj
def show(session: Session, memory_id: str, as_json: bool) -> int:
    from .render import memory_text

    store = session.open_store()
    name, at, rev = memory_id.rpartition("@")
    if at and name and rev and not _is_memory(store, memory_id):
        from ..sync.history import memory_at

        memory = memory_at(store.root, name, rev)
    else:
        memory = store.read(memory_id)
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
