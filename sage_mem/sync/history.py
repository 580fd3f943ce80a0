"""A memory's history from git: `sage-mem log ID` and `sage-mem show ID@REV`.

`log` lists the commits that changed a memory, newest first, following it
through renames (`git log --follow`, with git's rename detection: a file
moved and changed by more than half is a new file to git) and into
`archive/` when it is archived now. `memory_at` reads the memory as it was at
a revision (any name git accepts: a commit id, `HEAD~2`, `main@{yesterday}`),
at the path it had then.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..disk.folder import ARCHIVE_DIR, MemoryFolder
from ..errors import InvalidMemory, MemoryNotFound
from ..memory.file_format import parse_bytes
from ..memory.value import Memory, memory_from_meta
from .git import MACHINE_TRAILER, Git, SyncError


@dataclass(frozen=True)
class Version:
    """One commit that changed a memory."""

    rev: str
    date: str
    author: str
    machine: str
    subject: str
    path: str

    def to_dict(self) -> dict[str, Any]:
        return {"rev": self.rev, "date": self.date, "author": self.author,
                "machine": self.machine, "subject": self.subject, "path": self.path}

    def format_text(self) -> str:
        """One line for a terminal. The author, the machine and the subject are whatever the
        commit's maker wrote (a remote's, for a pulled commit): a terminal escape or a bidi
        control in them is named (`<U+001B>`), never sent to the terminal."""
        from ..checks.prompt_injection import visible_name

        who = visible_name(self.machine or self.author)
        subject = visible_name(self.subject)
        return f"{self.rev[:10]}  {self.date[:19].replace('T', ' ')}  {who}  {subject}\n"


def _repository(folder: MemoryFolder) -> Git:
    git = Git(folder.root)
    if not git.is_repository():
        raise SyncError(f"{folder.root}: not a git repository, so no history "
                        "(`sage-mem init --git` starts one)")
    return git


def memory_path(folder: MemoryFolder, memory_id: str) -> str:
    """The repository path of a memory: live, archived, or only in history."""
    path = folder.path_for(memory_id, allow_archived=True)
    rel = path.relative_to(folder.root).as_posix()
    if os.path.lexists(path) or memory_id.startswith(ARCHIVE_DIR + "/"):
        return rel
    archived = f"{ARCHIVE_DIR}/{rel}"
    if os.path.lexists(folder.root / archived):
        return archived
    return rel


def log(root: Path | str, memory_id: str) -> list[Version]:
    """Every commit that changed the memory, newest first."""
    folder = MemoryFolder(root)
    git = _repository(folder)
    path = memory_path(folder, memory_id)
    if git.head() is None:
        return []
    raw = git.run(
        "log", "--follow", "-z", "--name-only",
        f"--format=%H%x01%aI%x01%an%x01%(trailers:key={MACHINE_TRAILER},valueonly,"
        "separator=)%x01%s", "--", path,
    ).stdout.decode("utf-8", "surrogateescape")
    # -z: a commit's header, NUL, then a newline and the file's name at that commit, NUL
    # (`HEADER\0\nNAME\0HEADER\0\nNAME\0`): the name is the token after its header.
    headers: list[list[str]] = []
    for token in raw.split("\0"):
        if token.startswith("\n"):
            if headers and len(headers[-1]) == 5:
                headers[-1].append(token[1:])
        elif "\x01" in token:
            headers.append(token.split("\x01", 4))
    versions = []
    for fields in headers:
        if len(fields) < 5:
            continue
        rev, date, author, machine, subject = fields[:5]
        name = fields[5] if len(fields) > 5 else path
        versions.append(Version(rev, date, author, machine.strip(), subject, name))
    if not versions:
        raise MemoryNotFound(f"{memory_id}: no commit holds this memory", path=path)
    return versions


def memory_at(root: Path | str, memory_id: str, rev: str) -> Memory:
    """The memory as it was at `rev`, at the path it had then."""
    folder = MemoryFolder(root)
    git = _repository(folder)
    commit = git.rev(rev)
    if commit is None:
        raise SyncError(f"{rev!r}: no such revision in {folder.root}")
    path = memory_path(folder, memory_id)
    try:
        versions = log(root, memory_id)
    except MemoryNotFound:
        versions = []
    # Its path at `rev`: the one its newest version at or before `rev` left it at (before
    # a rename or an archive, the old one), not whatever file holds that name there now.
    reachable = set(git.text("rev-list", commit).split()) if versions else set()
    then = next((v.path for v in versions if v.rev in reachable), None)
    if versions:
        candidates = [then] if then is not None else []
    else:
        candidates = [path] + ([] if path.startswith(ARCHIVE_DIR + "/")
                               else [f"{ARCHIVE_DIR}/{path}"])
    for candidate in dict.fromkeys(candidates):
        data = git.blob(commit, candidate)
        if data is not None:
            break
    else:
        raise MemoryNotFound(f"{memory_id}: not in {rev}", path=path)
    try:
        parsed = parse_bytes(data, f"{candidate}@{rev}")
    except InvalidMemory as exc:
        raise InvalidMemory(f"{memory_id}@{rev}: {exc.message}") from None
    shown_id = candidate[:-3] if candidate.endswith(".md") else candidate
    return memory_from_meta(shown_id, folder.root / candidate, parsed.meta, parsed.body)
