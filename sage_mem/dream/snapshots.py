"""Rollback points: a copy of every memory file and of MEMORY.md, with the sha256 of each.

    <state>/autodream/snapshots/<runId>/files/<path in the memory folder>
    <state>/autodream/snapshots/<runId>/snapshot.json   written last: its presence
                                                        means the copy is complete

Every file is read through the folder's one checked read: a link out of the
folder, a FIFO, a device, a file over the size cap or one that cannot be read is
not copied (nor followed, nor waited on) but listed in `refused` with why, for
the run's report. Everything here is private (files 0600, folders 0700).

A copy whose bytes equal the same file in the previous complete snapshot is a
hard link to it (snapshot copies are never written again), so ten rollback
points of a large folder cost little more than one. `archive/` is not copied:
nothing in it is ever rewritten, and a rollback never needs to put a file back
there. Protective snapshots (taken by a rollback, of the present) are never
rotated out, so that every rollback can itself be rolled back.

A file saved after the rollback point was taken and before the run changed it (an
editor, an agent, `git pull` while the run goes) is changed by the run over that
save: the run read it. Its copy is then the bytes the run changed (`keep_before`,
before the change is made: a new file, `kept/<sha256>`, named in the file's entry),
so that a rollback puts back the save and undoes only the run; `snapshot.json`
lists such files under `keptBefore` with the sha256 the rollback point first had.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..disk.folder import INDEX_FILE, MemoryFolder
from ..disk.locks import write_lock
from ..disk.safe_io import atomic_write, make_private_dirs, read_file, text_bytes
from ..errors import DreamError, InvalidMemory
from ..memory.file_format import sha256_bytes
from ..memory.value import MAX_FILE_BYTES, iso_datetime
from .changes import REFUSED, read_checked
from .paths import DreamPaths

MANIFEST = "snapshot.json"
_KEPT = re.compile(r"kept/[0-9a-f]{64}")


@dataclass(frozen=True)
class FileEntry:
    sha256: str
    bytes: int
    mode: int = 0o600
    copy: str | None = None
    """Where the copy is, relative to the snapshot's folder, when not `files/<path>`: a copy
    `keep_before` made (`kept/<path>.<sha256>`)."""


@dataclass(frozen=True)
class Snapshot:
    """A complete rollback point: the files it holds, by path relative to the memory folder."""

    run_id: str
    root: Path
    created: str
    protective: bool
    files: dict[str, FileEntry]
    refused: dict[str, str] = field(default_factory=dict)
    """Files that were there but not copied (not a regular file inside the folder) -> why."""

    def copy_path(self, rel: str) -> Path:
        """The file holding the copy of `rel`."""
        entry = self.files[rel]
        return self.root / entry.copy if entry.copy else self.root / "files" / rel

    def read(self, rel: str) -> bytes:
        """The bytes of `rel` as they were, checked against their sha256."""
        entry = self.files[rel]
        try:
            data = read_file(self.copy_path(rel), limit=MAX_FILE_BYTES).raw or b""
        except (OSError, InvalidMemory) as exc:
            raise DreamError(f"rollback point {self.run_id}: cannot read {rel}: {exc}") from None
        if sha256_bytes(data) != entry.sha256:
            raise DreamError(
                f"rollback point {self.run_id}: the copy of {rel} is damaged (sha256 differs)"
            )
        return data


def memory_paths(folder: MemoryFolder) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of every file a rollback point holds: memories and MEMORY.md."""
    if os.path.lexists(folder.index_file):
        yield INDEX_FILE, folder.index_file
    for path in folder.iter_files():
        rel = os.path.relpath(path, folder.root).replace(os.sep, "/")
        yield rel, path


def take_snapshot(
    folder: MemoryFolder, paths: DreamPaths, run_id: str, *, protective: bool, now: datetime
) -> Snapshot:
    """Copy every memory file into a new rollback point, under the store's write lock."""
    paths.ensure()
    root = paths.snapshot_dir(run_id)
    files_dir = root / "files"
    make_private_dirs(root)
    files_dir.mkdir(mode=0o700)  # never one that exists: a run id is used once
    previous = newest_snapshot(paths)
    files: dict[str, FileEntry] = {}
    refused: dict[str, str] = {}
    with write_lock(folder.root, folder.state_dir):
        for rel, path in memory_paths(folder):
            try:
                seen = read_checked(folder, path)
            except REFUSED as exc:
                refused[rel] = str(exc)
                continue
            if seen.raw is None:
                continue  # gone since the listing: nothing of it to restore either
            data = seen.raw
            digest = sha256_bytes(data)
            target = files_dir / rel
            make_private_dirs(target.parent)
            if not _link_previous(previous, rel, digest, target):
                _write_private(target, data)
            files[rel] = FileEntry(digest, len(data), seen.mode if seen.mode is not None else 0o600)
    _sync()
    created = iso_datetime(now.replace(microsecond=0))
    snapshot = Snapshot(run_id, root, created, protective, files, refused)
    record = {
        "runId": run_id,
        "created": snapshot.created,
        "protective": protective,
        "files": _files_record(files),
        "refused": dict(sorted(refused.items())),
    }
    _save_record(root, record)
    return snapshot


def load_snapshot(paths: DreamPaths, run_id: str) -> Snapshot | None:
    """The complete rollback point of a run, or None (never taken, rotated out, or cut short)."""
    root = paths.snapshot_dir(run_id)
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        files = {
            rel: FileEntry(
                str(entry["sha256"]), int(entry["bytes"]), int(entry.get("mode", 0o600)),
                _copy_of(entry.get("copy")),
            )
            for rel, entry in data["files"].items()
        }
        refused = {str(rel): str(why) for rel, why in (data.get("refused") or {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Snapshot(
        run_id, root, str(data.get("created", "")), bool(data.get("protective")), files, refused
    )


def keep_before(snapshot: Snapshot, rel: str, data: bytes, mode: int | None) -> Snapshot:
    """Make `data` (the bytes a run is about to change) the rollback point's copy of `rel`.

    Called before the change, when the copy differs: the file was saved after the
    rollback point was taken. The new copy is a new file (`kept/<sha256>`) beside the
    old one, which stays as it is (it may be a hard link shared with another snapshot),
    then `snapshot.json` is rewritten atomically to name it: a kill at any moment leaves
    a complete rollback point, with the old copy or the new one. Returns the snapshot as
    it now is.
    """
    digest = sha256_bytes(data)
    entry = snapshot.files.get(rel)
    if entry is not None and entry.sha256 == digest:
        return snapshot
    copy = f"kept/{digest}"
    target = snapshot.root / copy
    make_private_dirs(target.parent)
    atomic_write(target, data)
    record = json.loads((snapshot.root / MANIFEST).read_text(encoding="utf-8"))
    kept = record.setdefault("keptBefore", {})
    kept.setdefault(rel, entry.sha256 if entry is not None else None)
    kept_mode = mode if mode is not None else 0o600
    files = {**snapshot.files, rel: FileEntry(digest, len(data), kept_mode, copy)}
    record["files"] = _files_record(files)
    _save_record(snapshot.root, record)
    return replace(snapshot, files=files)


class BeforeKeeper:
    """`Applier.keep` for a rewrite run: keeps in the run's rollback point the bytes a change
    is made from, when they are neither its copy nor the run's own (a save made since)."""

    def __init__(self, folder: MemoryFolder, paths: DreamPaths, run_id: str) -> None:
        self.folder, self.paths, self.run_id = folder, paths, run_id
        self.snapshot: Snapshot | None = None
        self.loaded = False

    def __call__(self, rel: str, sha256: str, made_by_run: Callable[[], bool]) -> None:
        if not self.loaded:  # read once, when the first change is made
            self.snapshot, self.loaded = load_snapshot(self.paths, self.run_id), True
        if self.snapshot is None:
            return  # no rollback point (a report run's model pass keeps none of its own)
        entry = self.snapshot.files.get(rel)
        if (entry is not None and entry.sha256 == sha256) or made_by_run():
            return
        # Only the bytes the change is made from: changed again, the write is refused anyway.
        self.snapshot = keep_saved(self.snapshot, self.folder, rel, sha256=sha256)


def keep_saved(
    snapshot: Snapshot, folder: MemoryFolder, rel: str, *, sha256: str | None = None
) -> Snapshot:
    """`keep_before` of the bytes `rel` holds now (through the checked read), when they are
    not the copy's; with `sha256`, only bytes of that sha256 (what the change was made from)."""
    try:
        seen = read_checked(folder, folder.root / rel)
    except REFUSED:
        return snapshot  # never copied, never read: the rollback leaves it as it is
    if seen.raw is None or (sha256 is not None and sha256_bytes(seen.raw) != sha256):
        return snapshot
    return keep_before(snapshot, rel, seen.raw, seen.mode)


def has_snapshot(paths: DreamPaths, run_id: str) -> bool:
    """Whether a run has a complete rollback point (without reading it)."""
    return (paths.snapshot_dir(run_id) / MANIFEST).is_file()


def newest_snapshot(paths: DreamPaths) -> Snapshot | None:
    for run_id in sorted(_snapshot_ids(paths), reverse=True):
        snapshot = load_snapshot(paths, run_id)
        if snapshot is not None:
            return snapshot
    return None


def rotate(paths: DreamPaths, keep: int) -> list[str]:
    """Remove all but the newest `keep` ordinary snapshots (protective ones stay); return their ids.

    Called with the dream lock held, so no snapshot is being written meanwhile; a
    snapshot cut short by a crash counts as an ordinary one.
    """
    ordinary = []
    for run_id in sorted(_snapshot_ids(paths), reverse=True):
        snapshot = load_snapshot(paths, run_id)
        if snapshot is None or not snapshot.protective:
            ordinary.append(run_id)
    for run_id in ordinary[keep:]:
        shutil.rmtree(paths.snapshot_dir(run_id), ignore_errors=True)
    return ordinary[keep:]


def _files_record(files: dict[str, FileEntry]) -> dict[str, dict[str, Any]]:
    return {
        rel: {"sha256": e.sha256, "bytes": e.bytes, "mode": e.mode, **(
            {"copy": e.copy} if e.copy else {}
        )}
        for rel, e in sorted(files.items())
    }


def _copy_of(value: object) -> str | None:
    """A kept copy's place as snapshot.json names it: under `kept/`, never out of the snapshot."""
    if isinstance(value, str) and _KEPT.fullmatch(value):
        return value
    return None


def _save_record(root: Path, record: dict[str, Any]) -> None:
    """Write `snapshot.json` (atomically: its presence means the copy is complete)."""
    atomic_write(
        root / MANIFEST, text_bytes(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    )


def _snapshot_ids(paths: DreamPaths) -> list[str]:
    try:
        return [name for name in os.listdir(paths.snapshots_dir) if not name.startswith(".")]
    except FileNotFoundError:
        return []


def _link_previous(previous: Snapshot | None, rel: str, digest: str, target: Path) -> bool:
    if previous is None:
        return False
    entry = previous.files.get(rel)
    if entry is None or entry.sha256 != digest:
        return False
    try:
        os.link(previous.copy_path(rel), target)
        os.chmod(target, 0o600)  # copies made before snapshots were private become so
    except OSError:
        return False
    return True


def _write_private(target: Path, data: bytes) -> None:
    """A new file only this user can read (0600: a umask can only narrow it), never one that
    exists (O_EXCL: nor a link planted there)."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _sync() -> None:
    # One sync for the whole copy, not an fsync per file: the rollback point
    # must be on disk before the first change, and 10,000 fsyncs would be slow.
    sync = getattr(os, "sync", None)
    if sync is not None:
        sync()
