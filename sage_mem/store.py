"""MemoryStore: the memory folder, its live index and every change made through the tool.

Ties `folder` (paths), `files` (parse and atomic write), `index` (search) and
`watch` (the watcher, started only when asked) together. Reads for search come
from the index; `read` goes to the disk so that its sha256 is the file's own.
Every write takes the folder's write lock, checks `expected_sha256`, writes
atomically, re-indexes the file at once (without waiting for the watcher) and
regenerates MEMORY.md.
"""

from __future__ import annotations

import difflib
import os
import stat
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import catalog
from .errors import (
    ConflictError,
    FolderError,
    InvalidId,
    InvalidMemory,
    MemoryLocked,
    MemoryNotFound,
)
from .files import (
    DELETE,
    atomic_write,
    edit_frontmatter,
    make_private_dirs,
    parse_bytes,
    render_new,
    sha256_bytes,
)
from .folder import MemoryFolder
from .index import Hit, Index
from .locks import file_lock
from .memory import (
    CATEGORIES,
    MAX_FILE_BYTES,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    Memory,
    memory_from_meta,
    now_iso,
)
from .stats import Stats

_UNSET: Any = object()
# Each failed attempt means another writer succeeded meanwhile, so this bounds
# how many concurrent changes one feedback call will wait out.
_FEEDBACK_ATTEMPTS = 20


@dataclass(frozen=True)
class Problem:
    """A file that could not be indexed, and why."""

    path: Path
    message: str
    line: int | None = None
    column: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path), "message": self.message,
            "line": self.line, "column": self.column,
        }


def load_memory(
    folder: MemoryFolder, path: Path, memory_id: str, *, archived: bool = False
) -> Memory:
    """Read and parse one memory file. Raises InvalidMemory (with the reason) when it cannot."""
    folder.check_contained(path)
    too_big = f"over the {MAX_FILE_BYTES // 1024} KB limit; not indexed"
    try:
        # O_NONBLOCK: a FIFO named *.md must not hang the load; it is refused below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except PermissionError:
        raise InvalidMemory(f"{path}: no permission to read", path=path) from None
    except IsADirectoryError:
        raise InvalidMemory(f"{path}: is a folder", path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidMemory(f"{path}: not a regular file", path=path)
        if st.st_size > MAX_FILE_BYTES:
            raise InvalidMemory(f"{path}: {st.st_size} bytes, {too_big}", path=path)
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        raise InvalidMemory(f"{path}: grew past the limit while read, {too_big}", path=path)
    parsed = parse_bytes(raw, path)
    return memory_from_meta(
        memory_id, path, parsed.meta, parsed.body,
        sha256=parsed.sha256, archived=archived, problems=parsed.problems,
    )


class MemoryStore:
    """A memory folder with a live in-memory index.

    >>> with MemoryStore("~/.sage-mem/memory") as store:
    ...     hits = store.search("how do I run the tests", limit=5)
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        watch: bool = False,
        poll: bool = False,
        half_life_days: float | None = None,
        state_dir: Path | str | None = None,
        reconcile_seconds: float = 30.0,
    ) -> None:
        from .folder import default_folder

        self.folder = MemoryFolder(
            path if path is not None else default_folder(), state_dir=state_dir
        )
        self.folder.check_exists()
        self.root = self.folder.root
        self.index = Index(half_life_days=half_life_days)
        self.stats = Stats(self.folder.state_path("stats.json"))
        self._problems: dict[str, Problem] = {}
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._refresh_lock = threading.RLock()
        self._watcher = None
        self.reload()
        if watch:
            from .watch import Watcher

            self._watcher = Watcher(self, poll=poll, reconcile_seconds=reconcile_seconds)
            self._watcher.start()

    # lifecycle

    def close(self) -> None:
        """Stop the watcher (if any). The store can still be searched afterwards."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.root)!r}, memories={len(self.index)})"

    # loading and keeping current

    def reload(self) -> None:
        """Re-read the whole folder and rebuild the index from scratch."""
        with self._refresh_lock:
            memories: list[Memory] = []
            self._problems.clear()
            self._seen.clear()
            for archived in (False, True):
                for path in self.folder.iter_files(archived=archived):
                    memory = self._load(path, archived=archived)
                    if memory is not None:
                        memories.append(memory)
            self.index = Index(half_life_days=self.index.half_life_days)
            self.index.add_many(memories)

    def _id_of(self, path: Path) -> tuple[str | None, bool]:
        memory_id = self.folder.id_for(path)
        if memory_id is not None:
            return memory_id, False
        archived_id = self.folder.archived_id_for(path)
        return archived_id, archived_id is not None

    def _load(self, path: Path, *, archived: bool) -> Memory | None:
        key = str(path)
        memory_id = self.folder.archived_id_for(path) if archived else self.folder.id_for(path)
        if memory_id is None:
            return None
        try:
            st = path.stat()
            memory = load_memory(self.folder, path, memory_id, archived=archived)
        except FileNotFoundError:
            self._problems.pop(key, None)
            self._seen.pop(key, None)
            return None
        except (InvalidMemory, OSError, Exception) as exc:  # noqa: BLE001 - a bad file must not stop the load
            self._problems[key] = _problem(path, exc)
            self._seen[key] = (-1, -1, -1)
            return None
        self._problems.pop(key, None)
        self._seen[key] = (st.st_size, st.st_mtime_ns, st.st_ino)
        return memory

    def refresh(self, paths: Iterable[Path | str]) -> int:
        """Bring the index up to date for these paths (files or folders); returns changes made.

        Event types are not trusted: editors save by rename and `git checkout`
        rewrites hundreds of files, so each path is simply looked at again.
        """
        changed = 0
        with self._refresh_lock:
            updates: list[Memory] = []
            for raw in paths:
                path = Path(os.path.abspath(raw))
                if _is_within(self.root, path):
                    path = self.root
                elif self._id_of(path)[0] is None and self._id_of(path / "x.md")[0] is None:
                    # Nothing at or under this path can be a memory (.git/, an editor's
                    # temp file, autodream/, outside the folder): skip the walk and the
                    # scan that `git` and every atomic save would otherwise pay for.
                    continue
                if path.is_dir() and not path.is_symlink():
                    changed += self._refresh_folder(path, updates)
                    continue
                changed += self._refresh_file(path, updates)
            for memory in updates:
                self.index.put(memory)
        return changed

    def _refresh_file(self, path: Path, updates: list[Memory]) -> int:
        memory_id, archived = self._id_of(path)
        key = str(path)
        if memory_id is None:
            if path != self.root and os.path.lexists(path):
                return 0  # a file that is not a memory (MEMORY.md, notes.txt) holds none
            return self._forget_under(path)
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is None:
            self._seen.pop(key, None)
            self._problems.pop(key, None)
            return int(self.index.remove(memory_id))
        if self._seen.get(key) == (st.st_size, st.st_mtime_ns, st.st_ino) and (
            memory_id in self.index or key in self._problems
        ):
            return 0
        memory = self._load(path, archived=archived)
        if memory is None:
            return int(self.index.remove(memory_id))
        updates.append(memory)
        return 1

    def _refresh_folder(self, folder: Path, updates: list[Memory]) -> int:
        changed = 0
        present: set[str] = set()
        for archived in (False, True):
            start = folder
            in_archive = _is_within(folder, self.folder.archive_dir)
            if archived and not (folder == self.root or in_archive):
                continue
            if not archived and in_archive:
                continue
            if archived and folder == self.root:
                start = self.folder.archive_dir
            for path in self.folder.iter_files(archived=archived, under=start):
                present.add(str(path))
                changed += self._refresh_file(path, updates)
        prefix = str(folder) + os.sep
        for key in [k for k in self._seen if k.startswith(prefix) and k not in present]:
            changed += self._refresh_file(Path(key), updates)
        return changed

    def _forget_under(self, path: Path) -> int:
        prefix = str(path) + os.sep
        gone = [key for key in self._seen if key.startswith(prefix)]
        changed = 0
        for key in gone:
            memory_id, _ = self._id_of(Path(key))
            self._seen.pop(key, None)
            self._problems.pop(key, None)
            if memory_id is not None:
                changed += int(self.index.remove(memory_id))
        return changed

    def reconcile(self) -> int:
        """Compare the index with the folder by a stat walk and repair any difference."""
        return self.refresh([self.root])

    # reading

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        category: str | Sequence[str] | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        archived: bool = False,
    ) -> list[Hit]:
        """Ranked compact hits for `query`; never reads a file."""
        return self.index.search(
            query, limit=limit, offset=offset, category=category,
            project=project, tags=tags, archived=archived,
        )

    def read(self, memory_id: str) -> Memory:
        """One memory in full, read from disk (`archive/...` ids read archived memories)."""
        path = self.folder.path_for(memory_id, allow_archived=True)
        canonical = self.folder.normalize_id(memory_id, allow_archived=True)
        if not path.is_file():
            raise MemoryNotFound(self._not_found_message(canonical), path=path)
        return load_memory(self.folder, path, canonical, archived=canonical.startswith("archive/"))

    def list(
        self,
        *,
        category: str | Sequence[str] | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        archived: bool = False,
    ) -> list[Memory]:
        """Memories passing the filters, sorted by id (from the index)."""
        return self.index.select(category=category, project=project, tags=tags, archived=archived)

    def problems(self) -> list[Problem]:
        """Files that could not be indexed, sorted by path."""
        with self._refresh_lock:
            return [self._problems[key] for key in sorted(self._problems)]

    def baselines(self, *, project: str | None = None, limit: int = 8) -> list[Memory]:
        """Baseline memories by `baselinePriority` (higher first), then id."""
        chosen = [m for m in self.list(project=project) if m.baseline]
        chosen.sort(key=lambda m: (-m.baseline_priority, m.id))
        return chosen[:limit]

    def _not_found_message(self, memory_id: str) -> str:
        close = difflib.get_close_matches(memory_id, sorted(self.index.ids()), n=1, cutoff=0.7)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"no memory {memory_id!r}{hint}"

    # writing

    def write(
        self,
        memory_id: str,
        *,
        description: str | None = None,
        body: str | None = None,
        category: str | None = None,
        name: str | None = None,
        summary: str | None = None,
        aliases: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        trust: float | None = None,
        baseline: bool | None = None,
        baseline_priority: int | None = None,
        project: str | None = None,
        supersedes: Sequence[str] | None = None,
        locked: bool | None = None,
        expected_sha256: str | None = None,
    ) -> Memory:
        """Create a memory, or update the fields given (None leaves a field as it is).

        Raises ConflictError when `expected_sha256` is given and the file on
        disk differs, MemoryLocked for a `locked: true` memory, InvalidMemory
        for a bad value or a file that cannot be rewritten safely.
        """
        path = self.folder.path_for(memory_id)
        canonical = self.folder.normalize_id(memory_id)
        fields = _validated_fields(
            description=description, category=category, name=name, summary=summary,
            aliases=aliases, tags=tags, trust=trust, baseline=baseline,
            baseline_priority=baseline_priority, project=project, supersedes=supersedes,
            locked=locked,
        )
        with self._write_lock():
            try:
                raw = path.read_bytes()
            except FileNotFoundError:
                raw = None
            except (IsADirectoryError, NotADirectoryError):
                raise InvalidId(
                    f"{canonical}: a folder and a file would share this name", path=path
                ) from None
            except PermissionError:
                raise InvalidMemory(f"{path}: no permission to read", path=path) from None
            _check_expected(path, raw, expected_sha256)
            if raw is None:
                if not fields.get("description"):
                    raise InvalidMemory(f"{canonical}: a new memory needs a description", path=path)
                self.folder.check_new_id(canonical)
                stamp = now_iso()
                meta = _ordered_new_meta(fields, created=stamp[:10], updated=stamp)
                text = render_new(meta, _normalize_body(body or "", "\n", lead=""))
                make_private_dirs(path.parent)
                self.folder.check_contained(path)
                atomic_write(path, text.encode("utf-8"))
            else:
                parsed = parse_bytes(raw, path)
                current = memory_from_meta(canonical, path, parsed.meta, parsed.body)
                if current.locked:
                    raise MemoryLocked(f"{canonical}: memory is locked (locked: true)", path=path)
                changes = _changes(parsed.meta, current, fields)
                new_body = None
                if body is not None:
                    # Keep the file's own line endings and its blank line (or none) after
                    # the frontmatter; a body equal but for those is no change at all.
                    lead = parsed.body if parsed.body or parsed.frontmatter is None else None
                    new_body = _normalize_body(body, parsed.newline, lead=lead)
                    if new_body in (
                        parsed.body, _normalize_body(parsed.body, parsed.newline, lead=lead)
                    ):
                        new_body = None
                if changes or new_body is not None:
                    # A file dated by `modified` (Claude Code) keeps that key.
                    stamp_key = "modified" if "modified" in parsed.meta and (
                        "updated" not in parsed.meta
                    ) else "updated"
                    changes[stamp_key] = now_iso()
                    text = edit_frontmatter(parsed, changes, new_body, path=path)
                    atomic_write(path, text.encode("utf-8"))
            memory = load_memory(self.folder, path, canonical)
            self._note_written(path, memory)
            self._regenerate_catalog()
        return memory

    def feedback(self, memory_id: str, helpful: bool) -> Memory:
        """Move trust a fifth of the way toward 1 (helpful) or toward 0 (unhelpful)."""
        if not isinstance(helpful, bool):
            raise InvalidMemory("helpful must be true or false")
        for attempt in range(_FEEDBACK_ATTEMPTS):
            memory = self.read(memory_id)
            if memory.archived:
                raise InvalidMemory(f"{memory.id}: archived memories take no feedback")
            step = (1.0 - memory.trust) * 0.2 if helpful else -memory.trust * 0.2
            trust = round(min(1.0, max(0.0, memory.trust + step)), 3)
            try:
                updated = self.write(memory.id, trust=trust, expected_sha256=memory.sha256)
                break
            except ConflictError:
                # Another writer changed the file between our read and our write:
                # step from its new trust rather than overwrite its change.
                if attempt == _FEEDBACK_ATTEMPTS - 1:
                    raise
        try:
            self.stats.record([memory.id], event="helpful" if helpful else "unhelpful")
        except OSError:
            pass
        return updated

    def archive(
        self, memory_id: str, reason: str, *, extra: Mapping[str, Any] | None = None
    ) -> Memory:
        """Move a memory to `archive/` with the reason in its frontmatter; never deletes.

        `extra` adds frontmatter keys to the archived file (e.g. `supersededBy`).
        """
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidMemory("archiving needs a reason")
        reason = " ".join(reason.split())
        path = self.folder.path_for(memory_id)
        canonical = self.folder.normalize_id(memory_id)
        with self._write_lock():
            if not path.is_file():
                raise MemoryNotFound(self._not_found_message(canonical), path=path)
            raw = path.read_bytes()
            parsed = parse_bytes(raw, path)
            current = memory_from_meta(canonical, path, parsed.meta, parsed.body)
            if current.locked:
                raise MemoryLocked(f"{canonical}: memory is locked (locked: true)", path=path)
            text = None
            if parsed.rewritable:
                marks = {"archived": now_iso(), "archiveReason": reason, **(extra or {})}
                try:
                    text = edit_frontmatter(parsed, marks, path=path)
                except InvalidMemory:
                    text = None  # a layout we cannot edit safely is moved as it is
            target = _free_name(self.folder.archive_dir / (canonical + ".md"))
            make_private_dirs(target.parent)
            target = _move_no_clobber(path, target)
            if text is not None:
                atomic_write(target, text.encode("utf-8"))
            archived_id = self.folder.archived_id_for(target)
            assert archived_id is not None
            memory = load_memory(self.folder, target, archived_id, archived=True)
            with self._refresh_lock:
                self._seen.pop(str(path), None)
                self.index.remove(canonical)
            self._note_written(target, memory)
            try:
                self.stats.rename(canonical, archived_id)
            except OSError:
                pass
            self._regenerate_catalog()
        return memory

    def regenerate_index(self) -> bool:
        """Rewrite MEMORY.md from the memories; True when its bytes changed."""
        with self._write_lock():
            return self._regenerate_catalog()

    def note_used(self, ids: Iterable[str]) -> None:
        """Count a retrieval for each id (kept in the state folder)."""
        try:
            self.stats.record(ids)
        except OSError:
            pass

    # internals

    def _write_lock(self):
        try:
            self.folder.ensure_state_dir()
        except OSError as exc:
            raise FolderError(
                f"{self.folder.state_dir}: cannot create the state folder: {exc.strerror}",
                path=self.folder.state_dir,
            ) from None
        return file_lock(self.folder.state_path("write.lock"))

    def _note_written(self, path: Path, memory: Memory) -> None:
        with self._refresh_lock:
            st = path.stat()
            self._seen[str(path)] = (st.st_size, st.st_mtime_ns, st.st_ino)
            self._problems.pop(str(path), None)
            self.index.put(memory)

    def catalog_text(self) -> str:
        """MEMORY.md as it would be written now, from the index."""
        retrievals: dict[str, int] = {}
        if len(self.index) > catalog.MAX_LINES // 2:
            retrievals = self.stats.retrieval_counts()
        return catalog.render(self.list(), retrievals)

    def _regenerate_catalog(self) -> bool:
        data = self.catalog_text().encode("utf-8")
        target = self.folder.index_file
        try:
            if target.read_bytes() == data:
                return False
        except OSError:
            pass
        atomic_write(target, data)
        return True


def _problem(path: Path, exc: BaseException) -> Problem:
    if isinstance(exc, InvalidMemory):
        return Problem(path, str(exc), exc.line, exc.column)
    if isinstance(exc, OSError):
        return Problem(path, f"{path}: cannot read: {exc.strerror or exc}")
    return Problem(path, f"{path}: {exc}")


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or str(path).startswith(str(folder) + os.sep)


def _check_expected(path: Path, raw: bytes | None, expected: str | None) -> None:
    if expected is None:
        return
    actual = sha256_bytes(raw) if raw is not None else ""
    if raw is None and expected:
        raise ConflictError(f"{path.name}: the memory was removed since it was read", path=path)
    if raw is not None and expected.lower() != actual:
        raise ConflictError(
            f"{path.name}: changed on disk since it was read (expected sha256 {expected[:12]}…, "
            f"found {actual[:12]}…); read it again and retry",
            path=path, actual_sha256=actual,
        )


def _validated_fields(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if key in ("description", "name", "summary", "project"):
            if not isinstance(value, str):
                raise InvalidMemory(f"{key} must be text")
            value = " ".join(value.split())
            if key == "description" and not value:
                raise InvalidMemory("description must not be empty")
        elif key == "category":
            value = str(value).strip().lower()
            if value not in CATEGORIES:
                raise InvalidMemory(
                    f"category must be one of {', '.join(CATEGORIES)}, not {value!r}"
                )
        elif key in ("aliases", "tags", "supersedes"):
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise InvalidMemory(f"{key} must be a list of text")
            value = list(dict.fromkeys(" ".join(v.split()) for v in value if v.strip()))
            if key == "tags":
                if len(value) > MAX_TAGS:
                    raise InvalidMemory(f"at most {MAX_TAGS} tags, not {len(value)}")
                for tag in value:
                    if len(tag) > MAX_TAG_LENGTH:
                        raise InvalidMemory(
                            f"tag {tag[:50]!r} is longer than {MAX_TAG_LENGTH} characters"
                        )
        elif key == "trust":
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:
                raise InvalidMemory(f"trust must be a number from 0 to 1, not {value!r}")
            value = float(value)
        elif key == "baseline_priority":
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidMemory(f"baselinePriority must be an integer, not {value!r}")
        elif key in ("baseline", "locked") and not isinstance(value, bool):
            raise InvalidMemory(f"{key} must be true or false")
        out[key] = value
    return out


_META_KEYS = {
    "name": "name", "description": "description", "category": "category", "trust": "trust",
    "summary": "summary", "aliases": "aliases", "tags": "tags", "baseline": "baseline",
    "baseline_priority": "baselinePriority", "project": "project", "supersedes": "supersedes",
    "locked": "locked",
}


def _ordered_new_meta(fields: Mapping[str, Any], *, created: str, updated: str) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("name", "description", "category", "trust", "summary", "aliases", "tags",
                "baseline", "baseline_priority", "project"):
        if key in fields:
            meta[_META_KEYS[key]] = fields[key]
    meta["created"] = created
    meta["updated"] = updated
    for key in ("supersedes", "locked"):
        if key in fields:
            meta[_META_KEYS[key]] = fields[key]
    return meta


def _changes(meta: Mapping[str, Any], current: Memory, fields: Mapping[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key, value in fields.items():
        meta_key = _META_KEYS[key]
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


def _normalize_body(body: str, newline: str, *, lead: str | None = None) -> str:
    text = body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not text:
        return ""
    text = "\n" + text + "\n" if lead is None or lead.startswith(("\n", "\r\n")) else text + "\n"
    return text.replace("\n", newline) if newline != "\n" else text


def _free_name(target: Path) -> Path:
    if not target.exists():
        return target
    stem = target.name[:-3]
    n = 2
    while (candidate := target.with_name(f"{stem}-{n}.md")).exists():
        n += 1
    return candidate


def _move_no_clobber(source: Path, target: Path) -> Path:
    """Move `source` to `target`, or to the next free name if `target` appears meanwhile."""
    for _ in range(100):
        try:
            os.link(source, target)
        except FileExistsError:
            target = _free_name(target)
            continue
        except OSError:
            # No hard links here (some network or FUSE file systems): a checked
            # rename, which can lose only a race with another writer of that name.
            if target.exists():
                target = _free_name(target)
                continue
            os.rename(source, target)
            return target
        os.unlink(source)
        return target
    raise InvalidMemory(f"{target}: no free name in the archive; not overwritten", path=target)


__all__ = ["MemoryStore", "Problem", "load_memory", "DELETE"]
