"""What a write does to one memory file's text: a new file, an edit of its fields, archive marks.

Pure: it is handed the bytes the writer read and returns the text to write (or
None for "no change"); the store decides when to write, and checks the result
(its size, that it reads back, secrets) before it does. An edit touches only
the keys it means to change (`file_format.edit_frontmatter`) and keeps the
file's own line endings; a file dated by `modified` alone (Claude Code's) keeps
that key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConflictError, InvalidMemory, MemoryLocked
from .body_edits import BodyEdit
from .fields import FIELDS, new_file_meta
from .file_format import (
    DELETE,
    conflict_marker_line,
    edit_frontmatter,
    parse_bytes,
    parsed_or_none,
    render_new,
    sha256_bytes,
)
from .links import Ids, retarget
from .value import Memory, memory_from_meta, now_iso


def check_expected(
    path: Path, raw: bytes | None, expected: str | None,
    intended: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a write based on bytes other than `raw` (ConflictError).

    `intended` is what the write would set, by write()'s keyword names (and
    `body`); when given, the error names those of its fields that the file on
    disk holds other values for. Who changed them cannot be told from here:
    the bytes the writer read are not ours.
    """
    if expected is None:
        return
    actual = sha256_bytes(raw) if raw is not None else ""
    if raw is None and expected:
        raise ConflictError(f"{path.name}: the memory was removed since it was read", path=path)
    if raw is not None and expected.lower() != actual:
        from .merge import differing_fields  # only on a conflict

        fields: tuple[str, ...] = ()
        if intended:
            parsed = parsed_or_none(raw, path)
            if parsed is not None:
                now = memory_from_meta(path.stem, path, parsed.meta, parsed.body)
                current = {key: getattr(now, key) for key in intended if hasattr(now, key)}
                fields = tuple(
                    META_KEYS.get(key, key) for key in differing_fields(intended, current)
                )
        differ = f"; on disk, {', '.join(fields)} differ from this write" if fields else ""
        raise ConflictError(
            f"{path.name}: changed on disk since it was read (expected sha256 {expected[:12]}…, "
            f"found {actual[:12]}…){differ}; read it again and retry",
            path=path, actual_sha256=actual, fields=fields,
        )


def new_memory_text(
    memory_id: str, path: Path, fields: Mapping[str, Any], body: str | None,
    *, stamps: tuple[str, str] | None = None,
) -> str:
    """The text of a new memory with the (validated) `fields` and `body`, stamped now, or
    with `stamps` (`created`, `updated`: an import that knows when the memory was made)."""
    for field in FIELDS:
        if field.required and not fields.get(field.name):
            where = f"{memory_id}: " if memory_id else ""
            raise InvalidMemory(f"{where}a new memory needs a {field.key}", path=path)
    stamp = now_iso()
    created, updated = stamps or (stamp[:10], stamp)
    meta = new_file_meta(fields, created=created, updated=updated)
    return render_new(meta, normalize_body(body or "", "\n", lead=""))


def edit_memory_text(
    memory_id: str, path: Path, raw: bytes, fields: Mapping[str, Any], body: str | None,
    *, stamp: str | None = None,
) -> str | None:
    """`raw` with the (validated) `fields` and `body` set and the update stamped; None when
    nothing would change. Raises MemoryLocked for a `locked: true` memory.

    `stamp` (None: now) is the `updated` the edit leaves: the memory's own keeps its age
    (see `MemoryStore.write`); "" leaves a memory that has no stamp without one.
    """
    parsed = parse_bytes(raw, path)
    current = memory_from_meta(memory_id, path, parsed.meta, parsed.body)
    if current.locked:
        raise MemoryLocked(f"{memory_id}: memory is locked (locked: true)", path=path)
    changes = field_changes(parsed.meta, current, fields)
    new_body = None
    if body is not None:
        # Keep the file's own line endings and its blank line (or none) after
        # the frontmatter; a body equal but for those is no change at all.
        lead = parsed.body if parsed.body or parsed.frontmatter is None else None
        new_body = normalize_body(body, parsed.newline, lead=lead) + _kept_tail(
            parsed.body, body, parsed.newline
        )
        if new_body in (parsed.body, normalize_body(parsed.body, parsed.newline, lead=lead)):
            new_body = None
    if not changes and new_body is None:
        return None
    if new_body is None and set(changes) <= UNSTAMPED_KEYS:
        # Feedback is a judgement of the memory, not a change to what it says: `updated`
        # keeps dating the content (its age note, recency, the dream's relative dates), and
        # an "unhelpful" never makes a memory look fresher.
        return edit_frontmatter(parsed, changes, None, path=path)
    key = stamp_key(parsed.meta)
    if stamp is not None:
        # An edit that does not say the fact again (the dream's tidying) leaves the stamp as
        # it is, or sets the one it is given (a merge: the newest of the memories it joins).
        if stamp and stamp != current.updated:
            changes[key] = stamp
        return edit_frontmatter(parsed, changes, new_body, path=path)
    if "created" not in parsed.meta and current.updated:
        # A file dated by one stamp alone (Claude Code's `modified`) keeps, as `created`,
        # the moment its text was last written: a restamp for a trust change must not
        # tell the dream that "yesterday" in it was written today.
        changes["created"] = current.updated
    changes[key] = now_iso()
    return edit_frontmatter(parsed, changes, new_body, path=path)


def partial_edit_text(memory_id: str, path: Path, raw: bytes, edit: BodyEdit) -> str:
    """`raw` with one partial edit of its body (`body_edits.BodyEdit`) and the update
    stamped; every byte of the body outside the edit kept. Raises MemoryLocked for a
    `locked: true` memory, InvalidMemory for an edit that cannot be made (nothing changes
    then: an edit that changes nothing is refused as well, so an agent knows)."""
    parsed = parse_bytes(raw, path)
    current = memory_from_meta(memory_id, path, parsed.meta, parsed.body)
    if current.locked:
        raise MemoryLocked(f"{memory_id}: memory is locked (locked: true)", path=path)
    body = edit.apply(parsed.body, parsed.newline, frontmatter=parsed.frontmatter is not None)
    if body == parsed.body:
        raise InvalidMemory(f"{memory_id}: the edit changes nothing", path=path)
    conflict = conflict_marker_line(body)
    if conflict is not None:
        raise InvalidMemory(f"{memory_id}: not written: the edit leaves git conflict markers "
                            "(<<<<<<< … >>>>>>>) in the body; choose between the versions first",
                            path=path)
    changes: dict[str, Any] = {}
    if "created" not in parsed.meta and current.updated:
        changes["created"] = current.updated  # as edit_memory_text: a one-stamp file's date
    changes[stamp_key(parsed.meta)] = now_iso()
    return edit_frontmatter(parsed, changes, body, path=path)


UNSTAMPED_KEYS = frozenset({"trust"})
"""Frontmatter keys whose change alone leaves `updated` as it is (every surface: `feedback`
in the CLI and MCP, a write of `trust`, the page's form)."""

# write()'s keyword for a field -> its frontmatter key
META_KEYS = {field.name: field.key for field in FIELDS}


def field_changes(
    meta: Mapping[str, Any], current: Memory, fields: Mapping[str, Any]
) -> dict[str, Any]:
    """The frontmatter keys to set for `fields` (write()'s keywords) that differ from `meta`."""
    changes: dict[str, Any] = {}
    for key, value in fields.items():
        meta_key = META_KEYS[key]
        if key == "category":
            where = current.category_key or "category"
            if current.category == value:
                continue
            if where == "metadata.type":
                nested = dict(meta.get("metadata") or {})
                nested["type"] = value
                changes["metadata"] = nested
            else:
                changes[where] = value
            continue
        if meta.get(meta_key) != value:
            changes[meta_key] = value
    return changes


def _kept_tail(old: str, new: str, newline: str) -> str:
    """The blank lines the file's body ends with, when the new body hands them back: a
    writer that read the body and changed a word in it (the dream) leaves its end as it was."""
    old = old.replace("\r\n", "\n").replace("\r", "\n")
    new = new.replace("\r\n", "\n").replace("\r", "\n")
    extra = len(old) - len(old.rstrip("\n")) - 1
    if extra <= 0 or not old.strip("\n") or not new.strip("\n"):
        return ""
    return newline * extra if new.endswith("\n" * (extra + 1)) else ""


def normalize_body(body: str, newline: str, *, lead: str | None = None) -> str:
    text = body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not text:
        return ""
    text = "\n" + text + "\n" if lead is None or lead.startswith(("\n", "\r\n")) else text + "\n"
    return text.replace("\n", newline) if newline != "\n" else text


def stamp_key(meta: Mapping[str, Any]) -> str:
    """`modified` for a file dated by it alone (Claude Code's), else `updated`."""
    return "modified" if "modified" in meta and "updated" not in meta else "updated"


def with_marks(raw: bytes | None, marks: Mapping[str, Any], path: Path) -> bytes | None:
    """An archived file's bytes with the archive marks; None when they cannot be added safely."""
    if raw is None:
        return None
    parsed = parse_bytes(raw, path)
    if not parsed.rewritable:
        return None  # a layout we cannot edit safely stays as it is
    try:
        return edit_frontmatter(parsed, marks, path=path).encode("utf-8")
    except InvalidMemory:
        return None


def without_marks(raw: bytes | None) -> bytes | None:
    """A restored file's bytes without the marks `archive` added, stamped as updated."""
    if raw is None:
        return None
    parsed = parse_bytes(raw)
    if not parsed.rewritable or parsed.meta.get("locked") is True:
        return None
    marks: dict[str, Any] = {
        key: DELETE for key in ("archived", "archiveReason", "archivedFrom") if key in parsed.meta
    }
    marks[stamp_key(parsed.meta)] = now_iso()
    try:
        return edit_frontmatter(parsed, marks).encode("utf-8")
    except InvalidMemory:
        return None  # a layout we cannot edit safely comes back as it is


def relinked_text(
    raw: bytes | None, path: Path, *, old: str, new: str, before: Ids, after: Ids,
    folder_before: str, folder_after: str, archived: bool, left: list[str],
) -> str | None:
    """A memory's text with its links (and `supersedes`/`supersededBy`) following old -> new;
    None when nothing changes or it cannot be edited safely (the reason added to `left`)."""
    if raw is None:
        return None
    parsed = parse_bytes(raw, path)
    current = memory_from_meta(path.stem, path, parsed.meta, parsed.body)
    changes: dict[str, Any] = {}
    body: str | None = None
    if archived:
        successor = parsed.meta.get("supersededBy")
        if isinstance(successor, str) and successor.removesuffix(".md") == old:
            changes["supersededBy"] = new + (".md" if successor.endswith(".md") else "")
    else:
        key = META_KEYS["supersedes"]
        listed = parsed.meta.get(key)
        if isinstance(listed, list) and any(
            isinstance(item, str) and item.removesuffix(".md") == old for item in listed
        ):
            changes[key] = [
                new + (".md" if item.endswith(".md") else "")
                if isinstance(item, str) and item.removesuffix(".md") == old else item
                for item in listed
            ]
        result = retarget(
            parsed.body, before=before, after=after, moved={old: new},
            folder_before=folder_before, folder_after=folder_after,
        )
        left.extend(result.left)
        if result.body != parsed.body:
            body = result.body
    if not changes and body is None:
        return None
    if current.locked:
        left.append("locked (locked: true): its links to the memory were left as they are")
        return None
    if not parsed.rewritable:
        left.append("its frontmatter cannot be edited safely: its links were left as they are")
        return None
    return edit_frontmatter(parsed, changes, body, path=path)
