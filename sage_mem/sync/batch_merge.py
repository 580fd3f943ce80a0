"""Every memory file a sync's merge leaves unmerged, merged in the sync's own process.

git runs a merge driver as a new process for each file both sides changed:
a Python start and sage-mem's imports, about 0.1 s of CPU each, 10 s for a
hundred files. Sync's own `git merge` therefore names a driver that merges
nothing (`git.NO_DRIVER`: git keeps each such file unmerged, its three versions
in the index), and `resolve_all` merges them all here by the driver's rules
(`merge_driver.merge_versions`, `merge_index`): the versions read with one
`git cat-file --batch`, the results staged with one `git update-index` (`Git.stage`). What git
itself leaves unmerged (an edit against a deletion, a file only one side
has) goes the same way. A plain `git pull` still runs the registered driver,
with the same rules.

Even a driver that merges nothing is a process git starts per file: while
sync's merge runs, `merge_later` has git start none.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..disk.safe_io import make_dirs
from .git import Git, quoted_paths
from .merge_driver import (
    INDEX_PATH,
    keep_sibling,
    merge_index,
    merge_other_file,
    merge_versions,
    other_machine,
)


def unmerged(git: Git) -> dict[str, dict[int, str]]:
    """path -> {stage: blob id} of every path the index holds unmerged."""
    entries: dict[str, dict[int, str]] = {}
    for record in git.run("ls-files", "-u", "-z").stdout.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        _, blob, stage = meta.decode().split()
        entries.setdefault(os.fsdecode(path), {})[int(stage)] = blob
    return entries


def resolve_all(git: Git, root: Path, theirs: str,
                put: Callable[[Path, bytes, bytes | None], None], *, own: bool) -> None:
    """Merge every unmerged path by the driver's rules, write it (`put`: the result, and
    the version git left in the work tree, which the result was made from, when known)
    and stage it. `own`: the merge was sync's, run with `NO_DRIVER`."""
    entries = unmerged(git)
    if not entries:
        return
    blobs = git.blobs(blob for stages in entries.values() for blob in stages.values())
    added: list[str] = []
    removed: list[str] = []
    for path, stages in entries.items():
        versions = {stage: blobs.get(blob, b"") for stage, blob in stages.items()}
        target = root / path
        moved = _moved_aside(root, path)
        if moved is not None and (2 in versions) != (3 in versions):
            # A folder one side made where the other edited a memory (`x.md/`): git moves
            # the file aside as `x.md~HEAD`, a name no walk reads, where the edit would be
            # out of sight. It is kept as a conflict sibling (a memory, listed and searched)
            # and git's copy of it goes.
            label = git.machine() if 2 in versions else other_machine(git, moved, theirs)
            data = versions.get(2, versions.get(3, b""))
            sibling = keep_sibling(root / moved, label, data)
            added.append(sibling.relative_to(root).as_posix())
            removed.append(path)
            _drop_copy(target, data)
            continue
        result, kept = merged_version(git, root, path, versions, theirs)
        if kept is not None:
            added.append(kept)
        if result is None:
            removed.append(path)
            continue
        # What git left in the work tree: of a memory in sync's own merge, ours (its driver,
        # `NO_DRIVER`, writes nothing) or the side's that kept the file. Of another file
        # (`.gitattributes`), or after a plain `git pull`, git's own merge with conflict
        # markers, not known here: written over.
        left = versions.get(2, versions.get(3)) if own and path.endswith(".md") else None
        put(target, result, left)
        added.append(path)
    if removed:
        git.run("rm", "--cached", "-q", "--pathspec-from-file=-", "--pathspec-file-nul",
                input=quoted_paths(removed))
    if added:
        git.stage(added)


def merged_version(git: Git, root: Path, path: str, versions: dict[int, bytes],
                   theirs: str) -> tuple[bytes | None, str | None]:
    """One unmerged path's result by the driver's rules, from its versions by stage (1 the
    base, 2 ours, 3 theirs): the bytes (None: deleted on both sides), and the conflict
    sibling written for theirs where both changed the same thing (its path, or None)."""
    if 2 in versions and 3 in versions:
        base, ours, theirs_data = versions.get(1, b""), versions[2], versions[3]
        if path == INDEX_PATH:
            return merge_index(ours, theirs_data, base), None
        other = merge_other_file(path, ours, theirs_data, base)
        if other is not None:
            return other, None
        outcome = merge_versions(base, ours, theirs_data, path)
        if not outcome.keep_theirs:
            return outcome.merged, None
        # Beside a path this folder may not have yet (`archive/x.md`, the other side's
        # archive of a memory both edited): its folder is made first.
        make_dirs((root / path).parent, root=root)
        sibling = keep_sibling(root / path, other_machine(git, path, theirs), theirs_data)
        return outcome.merged, sibling.relative_to(root).as_posix()
    if 2 in versions or 3 in versions:
        return versions.get(2, versions.get(3, b"")), None  # the side that kept it: never gone
    return None, None


def _moved_aside(root: Path, path: str) -> str | None:
    """The memory path git moved `path` aside from (`x.md~HEAD` for `x.md`, which is a
    folder now), or None for any other path."""
    original, tilde, branch = path.rpartition("~")
    if not tilde or not branch or "/" in branch or not original.endswith(".md"):
        return None
    return original if (root / original).is_dir() else None


def _drop_copy(path: Path, data: bytes) -> None:
    """Remove git's copy of a file moved aside once it is kept elsewhere: only if it holds
    exactly `data` (anything else stays where it is)."""
    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
            path.unlink()
    except OSError:
        pass
