"""Rollback points: a copy of every memory file and of MEMORY.md, with the sha256 of each.

    <state>/autodream/snapshots/<runId>/files/<path in the memory folder>
    <state>/autodream/snapshots/<runId>/snapshot.json   written last: its presence
                                                        means the copy is complete

A copy whose bytes equal the same file in the previous complete snapshot is a
hard link to it (snapshot copies are never written again), so ten rollback
points of a large folder cost little more than one. `archive/` is not copied:
nothing in it is ever rewritten, and a rollback never needs to put a file back
there. Protective snapshots (taken by a rollback, of the present) are never
rotated out, so that every rollback can itself be rolled back.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..errors import DreamError
from ..files import sha256_bytes
from ..folder import INDEX_FILE, MemoryFolder
from ..locks import file_lock
from ..memory import iso_datetime
from ..safe_io import atomic_write
from .paths import DreamPaths

MANIFEST = "snapshot.json"


@dataclass(frozen=True)
class FileEntry:
    sha256: str
    bytes: int
    mode: int = 0o600


@dataclass(frozen=True)
class Snapshot:
    """A complete rollback point: the files it holds, by path relative to the memory folder."""

    run_id: str
    root: Path
    created: str
    protective: bool
    files: dict[str, FileEntry]

    def read(self, rel: str) -> bytes:
        """The bytes of `rel` as they were, checked against their sha256."""
        entry = self.files[rel]
        try:
            data = (self.root / "files" / rel).read_bytes()
        except OSError as exc:
            raise DreamError(f"rollback point {self.run_id}: cannot read {rel}: {exc}") from None
        if sha256_bytes(data) != entry.sha256:
            raise DreamError(
                f"rollback point {self.run_id}: the copy of {rel} is damaged (sha256 differs)"
            )
        return data


def memory_paths(folder: MemoryFolder) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of every file a rollback point holds: memories and MEMORY.md."""
    if folder.index_file.is_file():
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
    files_dir.mkdir(mode=0o700, parents=True, exist_ok=False)
    previous = newest_snapshot(paths)
    files: dict[str, FileEntry] = {}
    with file_lock(folder.state_path("write.lock")):
        for rel, path in memory_paths(folder):
            try:
                data = path.read_bytes()
                mode = path.stat().st_mode & 0o777
            except OSError:
                continue  # unreadable now (permissions, gone): nothing of it to restore either
            digest = sha256_bytes(data)
            target = files_dir / rel
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _link_previous(previous, rel, digest, target):
                with open(target, "wb") as out:
                    out.write(data)
            files[rel] = FileEntry(digest, len(data), mode)
    _sync()
    snapshot = Snapshot(run_id, root, iso_datetime(now.replace(microsecond=0)), protective, files)
    record = {
        "runId": run_id,
        "created": snapshot.created,
        "protective": protective,
        "files": {
            rel: {"sha256": e.sha256, "bytes": e.bytes, "mode": e.mode}
            for rel, e in sorted(files.items())
        },
    }
    atomic_write(
        root / MANIFEST, (json.dumps(record, ensure_ascii=False, indent=1) + "\n").encode()
    )
    return snapshot


def load_snapshot(paths: DreamPaths, run_id: str) -> Snapshot | None:
    """The complete rollback point of a run, or None (never taken, rotated out, or cut short)."""
    root = paths.snapshot_dir(run_id)
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        files = {
            rel: FileEntry(str(entry["sha256"]), int(entry["bytes"]), int(entry.get("mode", 0o600)))
            for rel, entry in data["files"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Snapshot(run_id, root, str(data.get("created", "")), bool(data.get("protective")), files)


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
        os.link(previous.root / "files" / rel, target)
    except OSError:
        return False
    return True


def _sync() -> None:
    # One sync for the whole copy, not an fsync per file: the rollback point
    # must be on disk before the first change, and 10,000 fsyncs would be slow.
    sync = getattr(os, "sync", None)
    if sync is not None:
        sync()
