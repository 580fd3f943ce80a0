"""Bringing memories in from other tools, and from JSON lines.

Owns `sage-mem import claude-code DIR`, `sage-mem import mnemo DB` and
`sage-mem import jsonl`. An import never overwrites a memory: an id that is
taken by a different memory is skipped and reported, and a run can be repeated
safely (what is already there is reported as "already present"). Every import
can be a dry run, which reports the same plan and writes nothing. Every write
goes through the store (`MemoryStore.create_file`, `MemoryStore.write`): under
the folder's write lock, counted, so that another process's next MEMORY.md
lists what was imported, with the folder's file modes, and never over a file.
Every file read, in the source or the destination, goes through the one
checked read (`disk.folder.read_memory`): a FIFO is reported, never waited on.

Claude Code
    Claude Code keeps memories in `~/.claude/projects/<project>/memory/`: one
    markdown file per memory with `name`, `description` and `type` frontmatter
    (sometimes `metadata.type`), and a `MEMORY.md` index that is not a memory.
    Those files are already sage-mem memories (`type` and `metadata.type` are
    read as the category), so the import copies each file's bytes unchanged, to
    the same relative id. Files sage-mem cannot parse are reported and skipped;
    files without frontmatter are copied and left for `sage-mem audit` to report.

    The source's MEMORY.md is not copied: its index lines are rebuilt from the
    memories. Its other lines (notes Claude Code or the person wrote there,
    and the headings over them) are carried over, as they were, into one new
    memory, `reference_claude_code_notes` (`_2`, `_3`… when that id holds
    something else), reported as the item `MEMORY.md`. A memory rather than
    the destination's MEMORY.md: there they would be neither searched nor
    injected, and a MEMORY.md is regenerated, never merged, when a folder is
    synced. It is not made a baseline: which project the notes belong to cannot
    be told from Claude Code's folder name, and a baseline shows in every
    project. Left out, and counted in the report: the index lines of the
    folder's memory files, and the headings over nothing else.

    Such a folder also works in place, without importing:
    `sage-mem --dir ~/.claude/projects/<project>/memory search …` (or
    `SAGE_MEM_DIR`). sage-mem then keeps its state in `.sage-mem/` beside that
    folder, keeps every line of its `MEMORY.md` and lists the memories that
    file does not in a marked region of it (`catalog.updated_index`), and a
    file it rewrites keeps the `type` key it already uses.

mnemo
    A mnemo SQLite database (opened read-only) has a `facts` table; each row
    becomes one memory:

        content          the body, and the description (its first sentence,
                         at most 150 characters; 。！？ end sentences as well)
        category         the category, through MNEMO_CATEGORIES; an unknown one
                         becomes `reference` and is kept as a tag
        trust_score      trust, clamped to 0..1
        summary          summary
        tags             tags (JSON list or comma-separated text), cut to the
                         limits of 20 tags of at most 40 characters
        retrieval_count  retrieval counts in the state folder's stats.json
        created_at       `created` (its date) and `updated` (with only
        updated_at       `created_at`, the fact was last changed then); the
                         dream dates relative dates by them, so an import
                         must not date a fact by the day of the import

    Only `content` is required. Ids are `<category>_<words of the description>`
    in their own script (Latin folded to ASCII, a possessive 's and common
    words dropped: `user_favourite_colour_teal`, `user_用户的猫叫芝麻`), and
    `<category>_mnemo_<sha1 of the content, 8 hex>` only for a description
    with no letters or digits, with `_2`, `_3`… when an id is taken. A fact
    that looks like it holds a credential is refused unless `allow_secret`. A fact whose content is
    already the body of a memory (archived ones included) is "already present".
    MEMORY.md is regenerated once at the end, not after every fact.

JSON lines
    `import jsonl` reads what `export` writes (see `import_jsonl`): a round trip.

`export.py` writes what `import jsonl` reads.

Why one module: the three imports (Claude Code, mnemo, JSON lines) make one
plan and one report (`ImportItem`, `ImportResult`, the statuses), free ids the
same way and write through the same checked `create_file`; each has its own
section below (`# Claude Code`, `# mnemo`, `# JSON lines`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import re
import sqlite3
import stat
import unicodedata
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from urllib.parse import quote

from ..checks.credentials import redact_name
from ..disk.folder import INDEX_FILE, MemoryFolder, read_memory
from ..disk.home import expand_home
from ..errors import (
    FileChanged,
    FolderError,
    InvalidId,
    InvalidMemory,
    SageMemError,
    SecretRefused,
)
from ..memory import catalog
from ..memory.fields import FIELDS
from ..memory.file_format import parse_bytes
from ..memory.value import (
    MAX_FILE_BYTES,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    iso_datetime,
    now_iso,
    parse_moment,
)
from ..store import MemoryStore, check_id_secret, check_new_file, new_memory_bytes

MNEMO_CATEGORIES = {
    "identity": "user",        # who the user is
    "coding_style": "feedback",  # how the user wants code written
    "tool_pref": "feedback",   # which tools to use, and how
    "workflow": "feedback",    # how to work with the user
    "project": "project",      # ongoing work and its state
    "general": "reference",    # facts to look up, not instructions
}
"""mnemo's category -> sage-mem's. Unknown categories become `reference` (plus a tag)."""

UNKNOWN_CATEGORY = "reference"
MNEMO_COLUMNS = ("content", "category", "trust_score", "summary", "tags", "retrieval_count",
                 "created_at", "updated_at")
MAX_DESCRIPTION = 150
MAX_IMPORTED_RETRIEVALS = 10_000

IMPORTED = "imported"
WOULD_IMPORT = "would-import"
PRESENT = "present"
SKIPPED = "skipped"
INVALID = "invalid"
_STATUS_TEXT = {
    IMPORTED: "imported",
    WOULD_IMPORT: "would import",
    PRESENT: "already present",
    SKIPPED: "skipped",
    INVALID: "cannot import",
}


@dataclass(frozen=True)
class ImportItem:
    """What happened to one source file or row."""

    source: str
    memory_id: str | None
    status: str  # imported, would-import, present, skipped, invalid
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "id": self.memory_id, "status": self.status,
                "detail": self.detail}


@dataclass(frozen=True)
class ImportResult:
    """The outcome of one import: an item per source file or row, in source order."""

    kind: str
    source: Path
    dry_run: bool
    items: tuple[ImportItem, ...]
    notes: tuple[str, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(item.status for item in self.items)
        return {status: counted[status] for status in _STATUS_TEXT if counted[status]}

    @property
    def imported_ids(self) -> list[str]:
        """Ids created (or, in a dry run, that would be)."""
        return [item.memory_id for item in self.items
                if item.status in (IMPORTED, WOULD_IMPORT) and item.memory_id]

    def failure(self) -> str | None:
        """One line saying how many sources could not be imported and which, or None when
        all could: a partial import is a failure for the person, though what was
        imported is kept."""
        failed = [item.source for item in self.items if item.status == INVALID]
        if not failed:
            return None
        unit = {"jsonl": "line", "mnemo": "row"}.get(self.kind, "file")
        total = len(self.items)
        named = ", ".join(failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10
                                          else "")
        kept = ("nothing was written (dry run)" if self.dry_run
                else "what was imported is kept")
        return (f"{len(failed)} of {total} {unit}{'s' if total != 1 else ''} could not be "
                f"imported ({named}); {kept}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": str(self.source),
            "dryRun": self.dry_run,
            "counts": self.counts,
            "items": [item.to_dict() for item in self.items],
            "notes": list(self.notes),
        }

    def format_text(self) -> str:
        lines = []
        for item in self.items:
            target = f" -> {item.memory_id}" if item.memory_id else ""
            detail = f" ({item.detail})" if item.detail else ""
            lines.append(f"{_STATUS_TEXT[item.status]}: {item.source}{target}{detail}")
        summary = ", ".join(f"{n} {_STATUS_TEXT[s]}" for s, n in self.counts.items())
        summary = summary or "nothing found"
        lines.append(f"{self.kind} import from {self.source}: {summary}.")
        if self.dry_run:
            lines.append("Dry run: nothing was written.")
        lines.extend(f"Note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"


# Claude Code


def import_claude_code(store: MemoryStore, source_dir: Path | str, *, dry_run: bool = False,
                       allow_secret: bool = False) -> ImportResult:
    """Copy a Claude Code memory folder's memory files, byte for byte, into the store.

    A file with a line that looks like a credential is refused (reported, not
    copied) unless `allow_secret`.
    """
    source = Path(os.path.abspath(expand_home(source_dir)))
    if not source.is_dir():
        raise FolderError(f"{source}: no such folder", path=source)
    origin = MemoryFolder(source)
    same_folder = source == store.root
    items: list[ImportItem] = []
    memory_files: set[str] = set()  # their index lines in MEMORY.md are not notes
    notes = []
    with _index_regenerated_once(store, enabled=not dry_run):
        for path in origin.iter_files():
            rel = origin.id_for(path)
            if rel is None:
                continue
            memory_files.add(rel + ".md")
            if not same_folder and _is_within(path, store.root):
                continue  # the store lives inside the source folder: never import it into itself
            items.append(_import_file(store, origin, path, rel, dry_run=dry_run,
                                      allow_secret=allow_secret))
        if not items:
            notes.append(f"no memory files found in {source}")
        if not same_folder:  # in place, the notes are already where they were
            item = _import_index_notes(store, origin, source, memory_files, dry_run=dry_run,
                                       allow_secret=allow_secret)
            if item is not None:
                items.append(item)
    return ImportResult("claude-code", source, dry_run, tuple(items), tuple(notes))


NOTES_ID = "reference_claude_code_notes"
MAX_NOTES_IDS = 100
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _import_index_notes(store: MemoryStore, origin: MemoryFolder, source: Path,
                        memory_files: set[str], *, dry_run: bool,
                        allow_secret: bool = False) -> ImportItem | None:
    """Carry the lines of the source's MEMORY.md that index none of its memories into a memory."""
    shown = INDEX_FILE
    path = origin.index_file
    if not os.path.lexists(path):
        return None
    try:
        raw = read_memory(origin, path).raw or b""
    except (InvalidId, InvalidMemory) as exc:
        return ImportItem(shown, None, INVALID,
                          f"{_read_problem(exc, path)}; its notes were not carried over")
    except OSError as exc:
        return ImportItem(shown, None, INVALID,
                          f"cannot read: {exc.strerror or exc}; its notes were not carried over")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return ImportItem(shown, None, INVALID, "not valid UTF-8; its notes were not carried over")
    lines = index_notes(catalog.owner_lines(raw), memory_files)
    if not lines:
        return None
    data = _notes_memory(lines, _project_label(source))
    kept = sum(1 for line in lines if line.strip())
    left_out = sum(1 for line in catalog.owner_lines(raw) if line.strip()) - kept
    detail = f"{kept} lines of notes and headings, as they were"
    if left_out:
        detail += f"; {left_out} index lines of its memories and headings over them left out"
    for n in range(1, MAX_NOTES_IDS + 1):
        memory_id = NOTES_ID if n == 1 else f"{NOTES_ID}_{n}"
        target = store.folder.path_for(memory_id)
        archived = store.folder.archive_dir / (memory_id + ".md")
        if _bytes_in(store, target) == data:
            return ImportItem(shown, memory_id, PRESENT)
        if _bytes_in(store, archived) == data:
            return ImportItem(shown, memory_id, PRESENT, f"archived as archive/{memory_id}")
        if os.path.lexists(target) or os.path.lexists(archived):
            continue  # holds something else (edited since, or other notes): never overwritten
        refused = _secret_refusal(data, target, allow_secret=allow_secret)
        if refused:
            return ImportItem(shown, None, INVALID, f"{refused}; its notes were not carried over")
        if dry_run:
            return ImportItem(shown, memory_id, WOULD_IMPORT, detail)
        try:
            store.create_file(memory_id, data, allow_secret=allow_secret)
        except FileChanged:
            continue  # created meanwhile
        except OSError as exc:
            return ImportItem(shown, None, INVALID, f"cannot write {memory_id}: "
                              f"{exc.strerror or exc}; its notes were not carried over")
        return ImportItem(shown, memory_id, IMPORTED, detail)
    return ImportItem(shown, None, SKIPPED,
                      f"{NOTES_ID} to {NOTES_ID}_{MAX_NOTES_IDS} are all taken; "
                      "its notes were not carried over")


def index_notes(lines: list[str], memory_files: set[str]) -> list[str]:
    """What a Claude Code MEMORY.md holds besides the index lines of `memory_files`.

    Dropped: each line that indexes one of those files (`catalog.index_target`),
    and each heading with nothing kept under it (a "## User" over index lines
    only). Kept as they were: every other line, a heading over anything kept
    (and the headings above it), whatever lies in a code fence. Runs of blank
    lines become one; none lead or trail. Nothing left: an empty list.
    """
    files = {unicodedata.normalize("NFC", name) for name in memory_files}
    entries: list[list[Any]] = []  # [line, kept]
    sections: list[tuple[int, int]] = []  # (entry of an open heading, its level)
    fence = ""

    def keep(line: str) -> None:
        for entry, _level in sections:
            entries[entry][1] = True
        entries.append([line, True])

    for line in lines:
        fenced = _FENCE.match(line)
        if fence:
            if fenced and fenced.group(1).startswith(fence):
                fence = ""
            keep(line)
        elif fenced:
            fence = fenced.group(1)
            keep(line)
        elif heading := _HEADING.match(line):
            level = len(heading.group(1))
            while sections and sections[-1][1] >= level:
                sections.pop()
            sections.append((len(entries), level))
            entries.append([line, False])  # kept once something under it is
        elif not line.strip():
            entries.append([line, True])
        elif catalog.index_target(line) not in files:
            keep(line)
    out: list[str] = []
    for line, kept in entries:
        if kept and (line.strip() or (out and out[-1].strip())):
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return out


def _notes_memory(lines: list[str], label: str) -> bytes:
    description = f"Notes from the Claude Code MEMORY.md of {label}, besides its index lines"
    head = [
        "---",
        "name: Claude Code notes",
        f"description: {json.dumps(description, ensure_ascii=False)}",
        "category: reference",
        "tags: [claude-code]",
        "---",
        "",
    ]
    return ("\n".join(head + lines) + "\n").encode("utf-8")


def _project_label(source: Path) -> str:
    """`-home-me-app` for ~/.claude/projects/-home-me-app/memory; else the folder itself."""
    if source.name == "memory" and source.parent.parent.name == "projects":
        return source.parent.name
    return str(source)


def _import_file(store: MemoryStore, origin: MemoryFolder, path: Path, rel: str, *,
                 dry_run: bool, allow_secret: bool = False) -> ImportItem:
    shown = rel + ".md"
    try:
        raw = read_memory(origin, path).raw or b""
    except (InvalidId, InvalidMemory) as exc:
        return ImportItem(shown, None, INVALID, _read_problem(exc, path))
    except OSError as exc:
        return ImportItem(shown, None, INVALID, f"cannot read: {exc.strerror or exc}")
    try:
        parsed = parse_bytes(raw, path)
    except InvalidMemory as exc:
        return ImportItem(shown, None, INVALID, without_path(str(exc), path))
    try:
        memory_id = store.folder.normalize_id(rel)
        target = store.folder.path_for(memory_id)
    except InvalidId as exc:
        return ImportItem(shown, None, SKIPPED, str(exc))
    archived = store.folder.archive_dir / (memory_id + ".md")
    if os.path.lexists(target):
        same = _bytes_in(store, target) == raw
        detail = "" if same else "a different memory has this id; not overwritten"
        return ImportItem(shown, memory_id, PRESENT if same else SKIPPED, detail)
    if archived.exists():
        return ImportItem(shown, memory_id, PRESENT, f"archived as archive/{memory_id}")
    detail = "; ".join(p for p in parsed.problems)
    refused = _secret_refusal(raw, target, allow_secret=allow_secret, memory_id=memory_id)
    if refused:
        return ImportItem(redact_name(shown), None, INVALID, refused)
    if dry_run:
        return ImportItem(shown, memory_id, WOULD_IMPORT, detail)
    try:
        store.create_file(memory_id, raw, allow_secret=allow_secret)
    except FileChanged:
        return ImportItem(shown, memory_id, SKIPPED, "created meanwhile; not overwritten")
    except InvalidId as exc:  # a subfolder that is a symlink leading out of the folder
        return ImportItem(shown, memory_id, SKIPPED, str(exc))
    except OSError as exc:  # a file where a folder of the id would go, a full disk
        return ImportItem(shown, memory_id, SKIPPED, f"cannot write: {exc.strerror or exc}")
    return ImportItem(shown, memory_id, IMPORTED, detail)


def _secret_refusal(data: bytes, path: Path, *, allow_secret: bool, memory_id: str = "") -> str:
    """Why `data`, or the id it would take, would be refused as holding a secret (the store's
    own words), or ""."""
    if allow_secret:
        return ""
    try:
        check_id_secret(memory_id)
        check_new_file(path, data)
    except SecretRefused as exc:
        return str(exc).removeprefix(f"{path.name}: ").removeprefix(f"{redact_name(memory_id)}: ")
    except InvalidMemory:
        return ""  # refused later, for what it is
    return ""


def _bytes_in(store: MemoryStore, path: Path) -> bytes | None:
    """What the destination holds at `path` (its checked read); None when nothing can be read."""
    try:
        return read_memory(store.folder, path).raw
    except (OSError, SageMemError):
        return None


def _read_problem(exc: SageMemError, path: Path) -> str:
    """Why the checked read refused `path` ("not a regular file"), without the path."""
    return str(exc).removeprefix(f"{path}: ").removesuffix("; not indexed")


def without_path(message: str, path: Path) -> str:
    prefix = str(path)
    return message[len(prefix):].lstrip(":0123456789 ") if message.startswith(prefix) else message


def _is_within(path: Path, folder: Path) -> bool:
    return str(path).startswith(str(folder) + os.sep)


# mnemo


def import_mnemo(store: MemoryStore, db_path: Path | str, *, dry_run: bool = False,
                 allow_secret: bool = False) -> ImportResult:
    """Bring a mnemo database's facts in as memories (see the module docstring for the mapping).

    A fact that looks like it holds a credential is refused unless `allow_secret`.
    """
    db = Path(os.path.abspath(expand_home(db_path)))
    rows = list(_read_facts(db))
    present = _bodies(store)
    taken: set[str] = set()
    items: list[ImportItem] = []
    counts: dict[str, int] = {}
    notes: list[str] = []
    with _index_regenerated_once(store, enabled=not dry_run):
        for label, fact in rows:
            item, retrievals = _import_fact(store, label, fact, present, taken, dry_run=dry_run,
                                            allow_secret=allow_secret)
            items.append(item)
            if item.status == IMPORTED and item.memory_id and retrievals:
                counts[item.memory_id] = retrievals
    if counts:
        try:
            # Stats.record adds one event per id listed: list each id as often as it was used.
            store.stats.record(m for m, n in sorted(counts.items()) for _ in range(n))
        except OSError as exc:
            notes.append(f"retrieval counts not recorded: {exc.strerror or exc}")
    elif dry_run and any(fact.get("retrieval_count") for _, fact in rows):
        notes.append("retrieval counts would be added to the state folder's stats.json")
    if not rows:
        notes.append(f"no facts in {db}")
    return ImportResult("mnemo", db, dry_run, tuple(items), tuple(notes))


def _read_facts(db: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if not db.is_file():
        what = "not a file (a FIFO, a device or a folder)" if os.path.exists(db) else "no such file"
        raise SageMemError(f"{db}: {what}", path=db)
    try:
        connection = sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise SageMemError(f"{db}: cannot open the database: {exc}", path=db) from None
    try:
        try:
            tables = [row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name")]
        except sqlite3.DatabaseError as exc:
            raise SageMemError(f"{db}: not a readable SQLite database ({exc})", path=db) from None
        if "facts" not in tables:
            found = ", ".join(tables) or "none"
            raise SageMemError(
                f"{db}: no `facts` table, so not a mnemo database (tables: {found})", path=db)
        columns = [row[1] for row in connection.execute('PRAGMA table_info("facts")')]
        if "content" not in columns:
            raise SageMemError(
                f"{db}: the facts table has no `content` column (columns: {', '.join(columns)})",
                path=db)
        wanted = [c for c in MNEMO_COLUMNS if c in columns]
        key = "id" if "id" in columns else None
        select = ", ".join(f'"{c}"' for c in ([key] if key else []) + wanted)
        try:
            cursor = connection.execute(f'SELECT rowid, {select} FROM "facts" ORDER BY rowid')
        except sqlite3.OperationalError:  # a WITHOUT ROWID table
            cursor = connection.execute(f'SELECT NULL, {select} FROM "facts"')
        for n, row in enumerate(cursor, start=1):
            values = list(row[1:])
            label_key = values.pop(0) if key else None
            label = f"fact {label_key if label_key is not None else row[0] or n}"
            yield label, dict(zip(wanted, values, strict=True))
    except sqlite3.DatabaseError as exc:
        raise SageMemError(f"{db}: cannot read the facts: {exc}", path=db) from None
    finally:
        connection.close()


def _import_fact(store: MemoryStore, label: str, fact: dict[str, Any], present: dict[str, str],
                 taken: set[str], *, dry_run: bool, allow_secret: bool = False
                 ) -> tuple[ImportItem, int]:
    content = _as_text(fact.get("content"))
    if not content.strip():
        return ImportItem(label, None, INVALID, "empty content"), 0
    if len(content.encode("utf-8")) > MAX_FILE_BYTES - 4096:
        return ImportItem(label, None, INVALID, f"over the {MAX_FILE_BYTES // 1024} KB limit"), 0
    key = _same_text(content)
    if key in present:
        return ImportItem(label, present[key], PRESENT), 0
    notes: list[str] = []
    raw_category = " ".join(_as_text(fact.get("category")).split()).lower()
    category = MNEMO_CATEGORIES.get(raw_category)
    tags, tag_notes = parse_tags(fact.get("tags"))
    notes.extend(tag_notes)
    if category is None:
        category = UNKNOWN_CATEGORY
        if raw_category:
            notes.append(f"unknown category {raw_category!r} kept as a tag")
            extra, _ = parse_tags([raw_category])
            tags = list(dict.fromkeys(tags + extra))[:MAX_TAGS]
    description = first_sentence(content)
    memory_id = _free_id(store, _base_id(category, description, content), taken)
    summary = " ".join(_as_text(fact.get("summary")).split()) or None
    created, updated = _stamps(fact, notes)
    try:
        data = new_memory_bytes(
            {"description": description, "category": category, "summary": summary,
             "tags": tags or None, "trust": _trust(fact.get("trust_score"), notes)},
            content, created=created, updated=updated,
        )
        refused = _secret_refusal(data, store.folder.path_for(memory_id),
                                  allow_secret=allow_secret)
        if refused:
            return ImportItem(label, None, INVALID, refused), 0
        taken.add(memory_id)
        present[key] = memory_id
        if dry_run:
            return ImportItem(label, memory_id, WOULD_IMPORT, "; ".join(notes)), 0
        store.create_file(memory_id, data, allow_secret=allow_secret)
    except SageMemError as exc:
        taken.discard(memory_id)
        present.pop(key, None)
        return ImportItem(label, None, INVALID, str(exc)), 0
    return ImportItem(label, memory_id, IMPORTED, "; ".join(notes)), _retrievals(fact, notes)


def _stamps(fact: dict[str, Any], notes: list[str]) -> tuple[str, str]:
    """`created` (a date) and `updated` (a time) from mnemo's `created_at`/`updated_at`.

    A fact with only `created_at` was last changed then, as far as anyone can
    tell; one with neither is dated now, the day of the import.
    """
    created = _moment(fact.get("created_at"), "created_at", notes)
    updated = _moment(fact.get("updated_at"), "updated_at", notes) or created
    if created is None:
        created = updated
    if created is None or updated is None:
        stamp = now_iso()
        return stamp[:10], stamp
    return created[:10], updated


def _moment(value: Any, column: str, notes: list[str]) -> str | None:
    """An ISO time (UTC, to the second) from SQLite text or a Unix time; None when not one."""
    if value is None or value == "":
        return None
    moment = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        seconds = value / 1000 if value > 1e11 else value  # milliseconds, as JavaScript counts
        with contextlib.suppress(OverflowError, OSError, ValueError):
            moment = datetime.fromtimestamp(seconds, UTC)
    elif isinstance(value, str):
        moment = parse_moment(value.strip())  # SQLite's CURRENT_TIMESTAMP is UTC
    if moment is None:
        notes.append(f"{column} {_as_text(value)[:40]!r} is not a time; not used")
        return None
    return iso_datetime(moment.astimezone(UTC).replace(microsecond=0))


def _bodies(store: MemoryStore) -> dict[str, str]:
    """Every memory's body (archived ones too), as compared with a fact's content -> its id."""
    out: dict[str, str] = {}
    for memory in store.list(archived=True):
        out.setdefault(_same_text(memory.body), memory.id)
    return out


def _same_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _trust(value: Any, notes: list[str]) -> float | None:
    if value is None or value == "":
        return None
    try:
        trust = float(value)
    except (TypeError, ValueError):
        notes.append(f"trust_score {value!r} is not a number; default trust used"[:120])
        return None
    if math.isnan(trust):
        return None
    if not 0.0 <= trust <= 1.0:
        notes.append(f"trust_score {value} clamped to 0..1")
    return min(1.0, max(0.0, trust))


def _retrievals(fact: dict[str, Any], notes: list[str]) -> int:
    try:
        count = int(fact.get("retrieval_count") or 0)
    except (TypeError, ValueError):
        return 0
    if count > MAX_IMPORTED_RETRIEVALS:
        notes.append(f"retrieval_count {count} recorded as {MAX_IMPORTED_RETRIEVALS}")
    return max(0, min(count, MAX_IMPORTED_RETRIEVALS))


def parse_tags(value: Any) -> tuple[list[str], list[str]]:
    """Tags from a JSON list, JSON text or comma-separated text, cut to the limits; and notes."""
    if value is None:
        return [], []
    items: list[Any]
    if isinstance(value, (list, tuple)):
        items = list(value)
    else:
        text = _as_text(value).strip()
        loaded: Any = None
        if text[:1] in ('[', '"', "{"):
            try:
                loaded = json.loads(text)
            except (ValueError, RecursionError):  # then it is a list of words, as written
                loaded = None
        if isinstance(loaded, list):
            items = loaded
        elif isinstance(loaded, dict):
            items = list(loaded)
        else:
            items = re.split(r"[,，、;；\n]", loaded if isinstance(loaded, str) else text)
    notes: list[str] = []
    tags: list[str] = []
    seen: set[str] = set()
    for item in items:
        if item is None or isinstance(item, (dict, list)):
            continue
        tag = " ".join(_as_text(item).split()).lstrip("#").strip()
        if not tag:
            continue
        if len(tag) > MAX_TAG_LENGTH:
            notes.append(f"tag {tag[:20]!r}… cut to {MAX_TAG_LENGTH} characters")
            tag = tag[:MAX_TAG_LENGTH].rstrip()
        if tag.lower() not in seen:
            seen.add(tag.lower())
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        notes.append(f"{len(tags)} tags; the first {MAX_TAGS} kept")
        tags = tags[:MAX_TAGS]
    return tags, notes


_SENTENCE_END = re.compile(r"[。！？]|[.!?](?=\s|$)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "no"})


def first_sentence(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """The first sentence of the first non-empty line, on one line, at most `limit` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.lstrip("#>*-+ \t").split()) or " ".join(line.split())
    end = len(line)
    for match in _SENTENCE_END.finditer(line):
        if match.group() == ".":
            word = line[: match.start()].rsplit(" ", 1)[-1].lower()
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        end = match.end()
        break
    sentence = line[:end].strip()
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:，、") + "…"


_STOPWORDS = frozenset(
    "a an the is are was were be been to of in on for and or with that this it its as at by from "
    "user user's users".split()
)
_MAX_SLUG = 40
_MAX_WIDE_SLUG = 16  # characters of a script without spaces (Chinese): a phrase, not a line


def _base_id(category: str, description: str, content: str) -> str:
    """`<category>_<words of the description>`, in its own script; a hash only when it has none.

    Latin text is folded to ASCII (`café` -> `cafe`); other scripts keep their
    letters (`user_用户的猫叫芝麻`). A possessive `'s` and apostrophes go
    (`user's favourite` -> `favourite`, `don't` -> `dont`), and so do the
    common words that say nothing of the topic.
    """
    text = unicodedata.normalize("NFKC", description).lower().replace("’", "'")
    text = re.sub(r"'s\b", "", text).replace("'", "")
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    latin = sum(ch.isalpha() for ch in folded) >= sum(ch.isalpha() for ch in text)
    words = re.findall(r"[^\W_]+", folded if latin else text)
    words = [w for w in words if w not in _STOPWORDS] or words
    limit = _MAX_SLUG if latin else _MAX_WIDE_SLUG
    slug = ""
    for word in words:
        if len(slug) + len(word) + 1 > limit:
            if not slug:
                slug = word[:limit]
            break
        slug = f"{slug}_{word}" if slug else word
    if slug:
        return f"{category}_{slug}"
    digest = hashlib.sha1(_same_text(content).encode("utf-8")).hexdigest()[:8]
    return f"{category}_mnemo_{digest}"


def _free_id(store: MemoryStore, base: str, taken: set[str]) -> str:
    n = 1
    while True:
        candidate = base if n == 1 else f"{base}_{n}"
        path = store.folder.root / (candidate + ".md")
        archived = store.folder.archive_dir / (candidate + ".md")
        if candidate not in taken and not os.path.lexists(path) and not archived.exists():
            return candidate
        n += 1


@contextmanager
def _index_regenerated_once(store: MemoryStore, *, enabled: bool) -> Iterator[None]:
    """Regenerate MEMORY.md once after many writes instead of after each (quadratic otherwise).

    Measured: 1,000 facts took 8.4 s with a regeneration per write and 3.5 s
    with one at the end.
    """
    if not enabled:
        yield
        return
    with store.batch():
        yield


# JSON lines (what `export` writes)


def import_jsonl(store: MemoryStore, source: Path | str | TextIO, *, dry_run: bool = False,
                 allow_secret: bool = False) -> ImportResult:
    """Bring memories in from JSON lines, as `export` writes them (a round trip).

    A line with `file` (the whole text of the memory file) makes that file
    again, byte for byte, under its `id` (`archive/…` ids as archived
    memories). A line without one (written by another tool) is made from its
    fields, as `export` names them (`description` and `body` at least; the
    `created` and `updated` it gives are kept). A taken id is never
    overwritten: the same bytes are "already present", others are skipped.
    A line that is not a JSON object with an id, or whose memory would be
    refused (a bad value, a secret without `allow_secret`), is reported.
    """
    opened: BinaryIO | None = None
    if isinstance(source, (str, Path)):
        path = Path(os.path.abspath(expand_home(source)))
        try:
            opened = open(path, "rb")  # noqa: SIM115 - closed below, once read
        except FileNotFoundError:
            raise SageMemError(f"{path}: no such file", path=path) from None
        except OSError as exc:
            raise SageMemError(f"{path}: cannot read: {exc.strerror or exc}", path=path) from None
        if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode) and not stat.S_ISFIFO(
                os.fstat(opened.fileno()).st_mode):
            opened.close()
            raise SageMemError(f"{path}: not a file (a device or a folder), so not JSON lines",
                               path=path)
        raw: BinaryIO = opened
        shown = path
    else:
        raw = getattr(source, "buffer", None) or io.BytesIO(source.read().encode("utf-8"))
        shown = Path("-")
    items: list[ImportItem] = []
    try:
        with _index_regenerated_once(store, enabled=not dry_run):
            for number, (line, problem) in enumerate(_jsonl_lines(raw), start=1):
                if problem:
                    items.append(ImportItem(f"line {number}", None, INVALID, problem))
                elif line.strip():
                    items.append(_import_line(store, f"line {number}", line, dry_run=dry_run,
                                              allow_secret=allow_secret))
    finally:
        if opened is not None:
            opened.close()
    notes = () if items else (f"no memories in {shown}",)
    return ImportResult("jsonl", shown, dry_run, tuple(items), notes)


MAX_JSONL_LINE = 16 * MAX_FILE_BYTES
"""The longest line `import jsonl` reads: an export line holds a memory's whole file and its
body, JSON-escaped (at worst six characters for one byte), and is shorter than this."""


def _jsonl_lines(raw: BinaryIO) -> Iterator[tuple[str, str | None]]:
    """Each line of `raw` and what is wrong with it, one line held at a time: a line too long
    (a disk image, /dev/zero on stdin) is passed over to its end, never read whole."""
    while True:
        line = raw.readline(MAX_JSONL_LINE + 1)
        if not line:
            return
        if len(line) > MAX_JSONL_LINE:
            while line and not line.endswith(b"\n"):
                line = raw.readline(MAX_JSONL_LINE)
            yield "", f"longer than {MAX_JSONL_LINE >> 20} MB, so not an export's line"
            continue
        try:
            yield line.decode("utf-8").removesuffix("\n"), None
        except UnicodeDecodeError as exc:
            yield "", f"not UTF-8 text (byte {exc.start + 1})"


# Memory.to_dict()'s values that say nothing a new file needs to hold.
_DEFAULTS: dict[str, Any] = {"trust": 0.5, "baseline": False, "baselinePriority": 0,
                             "locked": False}


def _import_line(store: MemoryStore, label: str, line: str, *, dry_run: bool,
                 allow_secret: bool) -> ImportItem:
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as exc:
        return ImportItem(label, None, INVALID, f"not JSON ({exc.msg}, column {exc.colno})")
    except (ValueError, RecursionError) as exc:  # an integer past 4,300 digits; nested too deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        return ImportItem(label, None, INVALID, f"not JSON sage-mem can read ({why})")
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        return ImportItem(label, None, INVALID, "not a JSON object with an `id`")
    prefix = store.folder.archive_dir.name + "/"
    archived = entry["id"].startswith(prefix)
    try:
        memory_id = store.folder.normalize_id(entry["id"], allow_archived=archived)
        target = store.folder.path_for(memory_id, allow_archived=archived)
        check_id_secret(memory_id, allow_secret=allow_secret)
        if not archived:
            store.folder.check_new_id(memory_id)
        data, notes = _line_bytes(entry)
        check_new_file(target, data, allow_secret=allow_secret)
    except SageMemError as exc:
        return ImportItem(label, redact_name(entry["id"])[:80], INVALID, str(exc))
    if os.path.lexists(target):
        if _bytes_in(store, target) == data:
            return ImportItem(label, memory_id, PRESENT)
        return ImportItem(label, memory_id, SKIPPED,
                          "a different memory has this id; not overwritten")
    if dry_run:
        return ImportItem(label, memory_id, WOULD_IMPORT, "; ".join(notes))
    try:
        store.create_file(memory_id, data, allow_secret=allow_secret)
    except FileChanged:
        return ImportItem(label, memory_id, SKIPPED, "created meanwhile; not overwritten")
    except SageMemError as exc:
        return ImportItem(label, memory_id, INVALID, str(exc))
    except OSError as exc:
        return ImportItem(label, memory_id, SKIPPED, f"cannot write: {exc.strerror or exc}")
    return ImportItem(label, memory_id, IMPORTED, "; ".join(notes))


def _line_bytes(entry: dict[str, Any]) -> tuple[bytes, list[str]]:
    """The file a JSON line stands for: its `file`, else one made from its fields; and what
    of them was not used (a `created` that is no time is said, not dropped unsaid)."""
    whole = entry.get("file")
    if whole is not None:
        if not isinstance(whole, str):
            raise InvalidMemory("`file` must be the text of the memory file")
        return whole.encode("utf-8", errors="surrogatepass"), []
    body = entry.get("body", "")
    if not isinstance(body, str):
        raise InvalidMemory("`body` must be text")
    values: dict[str, Any] = {}
    for field in FIELDS:
        value = entry.get(field.key)
        if value is None or value == [] or _DEFAULTS.get(field.key, ...) == value:
            continue
        values[field.name] = value
    notes: list[str] = []
    created = _moment(entry.get("created"), "created", notes)
    updated = _moment(entry.get("updated"), "updated", notes) or created
    stamp = now_iso()
    return new_memory_bytes(values, body, created=(created or updated or stamp)[:10],
                            updated=updated or stamp), notes


__all__ = [
    "MNEMO_CATEGORIES",
    "ImportItem",
    "ImportResult",
    "first_sentence",
    "import_claude_code",
    "import_jsonl",
    "import_mnemo",
    "parse_tags",
]
