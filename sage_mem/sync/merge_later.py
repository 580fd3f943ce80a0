"""While sync's merge runs, git merges no memory file itself and starts no process for one.

A merge driver, even one that merges nothing (`git.NO_DRIVER`), is a process
git starts per file both sides changed (a fork of git and an exec: ~2 ms of
CPU each, 0.2 s for a hundred files at 10,000 memories). For the time of
sync's merge, `merged_later` therefore writes `.git/info/attributes` (git's
own attributes, above the folder's `.gitattributes`) with `*.md -merge`: git
keeps each such file unmerged as the driver that merges nothing did, its
three versions in the index and ours in the work tree, for
`batch_merge.resolve_all`, and starts no process. Only where no such file
exists: a person's own is never touched (the driver that merges nothing is
named then). The file is removed once the merge ran, or by the next sync's
merge after a kill (a plain `git pull` in between leaves those files
unmerged, nothing lost, and sync finishes the merge).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Exactly this file, and nothing else, is sync's own (`merged_later`): a person's is kept.
MERGE_LATER = (b"# sage-mem sync: a merge under way; this file goes when it ends\n"
               b"*.md -merge\n")


@contextmanager
def merged_later(git_dir: Path) -> Iterator[bool]:
    """For the time of a merge, git merges no memory file itself and starts no driver:
    each is left unmerged for `resolve_all`. Yields whether the file was written."""
    path = git_dir / "info" / "attributes"
    remove_merge_later(git_dir)  # one a killed sync left
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:  # a person's own attributes (or a link) there: the driver that merges nothing
        yield False
        return
    try:
        os.write(fd, MERGE_LATER)
    finally:
        os.close(fd)
    try:
        yield True
    finally:
        remove_merge_later(git_dir)


def remove_merge_later(git_dir: Path) -> None:
    """Remove `.git/info/attributes` when it is sync's own (left by a killed sync)."""
    path = git_dir / "info" / "attributes"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        held = os.read(fd, len(MERGE_LATER) + 1)
    finally:
        os.close(fd)
    if held == MERGE_LATER:
        try:
            path.unlink()
        except OSError:
            pass
