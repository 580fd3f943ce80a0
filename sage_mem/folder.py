"""The memory folder: ids <-> paths, reserved names, and the state folder beside it.

A memory's id is its path relative to the folder, `/`-separated, without `.md`.
Every id that comes from outside (CLI, API, MCP, hook) goes through `path_for`,
which refuses anything that could escape the folder.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from .errors import FolderError, InvalidId

INDEX_FILE = "MEMORY.md"
ARCHIVE_DIR = "archive"
DREAM_DIR = "autodream"
RESERVED_TOP = frozenset({ARCHIVE_DIR, DREAM_DIR})
STATE_DIR_NAME = ".sage-mem"
MAX_ID_LENGTH = 200
_FORBIDDEN_CHARS = re.compile(r'[\x00-\x1f\x7f\\:*?"<>|]')


def default_folder() -> Path:
    """`SAGE_MEM_DIR`, else `~/.sage-mem/memory`."""
    env = os.environ.get("SAGE_MEM_DIR")
    return Path(env).expanduser() if env else Path.home() / ".sage-mem" / "memory"


def is_editor_junk(name: str) -> bool:
    """Editor temp, swap and backup files, and dot-files: never memories."""
    return (
        name.startswith((".", "#", "~"))
        or name.endswith(("~", ".swp", ".swo", ".swx", ".tmp", ".bak", ".orig"))
        or name == "4913"
    )


class MemoryFolder:
    """Paths of one memory folder and of its state folder."""

    def __init__(self, root: Path | str, *, state_dir: Path | str | None = None) -> None:
        root = Path(root).expanduser()
        self.root = Path(os.path.abspath(root))
        if self.root.parent == self.root:
            raise FolderError(f"{self.root}: cannot use the filesystem root as a memory folder")
        env_state = os.environ.get("SAGE_MEM_STATE_DIR")
        if state_dir is None and env_state:
            state_dir = env_state
        self.state_dir = (
            Path(os.path.abspath(Path(state_dir).expanduser()))
            if state_dir is not None
            else self.root.parent / STATE_DIR_NAME
        )

    @property
    def index_file(self) -> Path:
        return self.root / INDEX_FILE

    @property
    def archive_dir(self) -> Path:
        return self.root / ARCHIVE_DIR

    def check_exists(self) -> None:
        """Raise FolderError unless the memory folder exists and is a folder."""
        if not self.root.exists():
            raise FolderError(
                f"{self.root}: no memory folder here (create one with `sage-mem init`)",
                path=self.root,
            )
        if not self.root.is_dir():
            raise FolderError(f"{self.root}: not a folder", path=self.root)

    def state_path(self, *parts: str) -> Path:
        """A path inside the state folder (not created)."""
        return self.state_dir.joinpath(*parts)

    def ensure_state_dir(self, *parts: str) -> Path:
        folder = self.state_path(*parts)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder

    # ids and paths

    def id_for(self, path: Path | str) -> str | None:
        """The memory id of `path`, or None when the path is not a memory (reserved, outside, not .md)."""
        rel = self._relative(path)
        if rel is None or not rel.endswith(".md"):
            return None
        parts = rel.split("/")
        if parts[0] in RESERVED_TOP or rel == INDEX_FILE:
            return None
        if any(not part or is_editor_junk(part) for part in parts):
            return None
        return rel[:-3]

    def archived_id_for(self, path: Path | str) -> str | None:
        """The id (`archive/...`) of an archived memory file, or None."""
        rel = self._relative(path)
        if rel is None or not rel.startswith(ARCHIVE_DIR + "/") or not rel.endswith(".md"):
            return None
        if any(not part or is_editor_junk(part) for part in rel.split("/")):
            return None
        return rel[:-3]

    def _relative(self, path: Path | str) -> str | None:
        path = os.path.abspath(path)
        root = str(self.root)
        if not path.startswith(root + os.sep):
            return None
        return path[len(root) + 1 :].replace(os.sep, "/")

    def normalize_id(self, memory_id: str, *, allow_archived: bool = False) -> str:
        """Check an id from outside and return it in canonical form; raise InvalidId if unsafe."""
        if not isinstance(memory_id, str):
            raise InvalidId(f"id must be text, not {type(memory_id).__name__}")
        raw = memory_id.strip()
        if raw.endswith(".md"):
            raw = raw[:-3]
        shown = repr(memory_id[:80])
        if not raw:
            raise InvalidId("id is empty")
        if len(raw) > MAX_ID_LENGTH:
            raise InvalidId(f"id {shown}… is longer than {MAX_ID_LENGTH} characters")
        decoded = unquote(raw)
        for candidate in {raw, decoded}:
            if _FORBIDDEN_CHARS.search(candidate):
                raise InvalidId(f"id {shown} contains a character not allowed in ids")
            if candidate.startswith("/") or re.match(r"^[A-Za-z]:", candidate):
                raise InvalidId(f"id {shown} is an absolute path; ids are relative to the folder")
            parts = candidate.split("/")
            if any(part in ("", ".", "..") for part in parts):
                raise InvalidId(f"id {shown} would leave the memory folder or has an empty part")
            if any(part.startswith(".") for part in parts):
                raise InvalidId(f"id {shown} names a hidden file")
        parts = raw.split("/")
        if any(len(part.encode()) > 240 for part in parts):
            raise InvalidId(f"id {shown} has a part longer than a file name can be")
        if any(is_editor_junk(part) for part in parts):
            raise InvalidId(f"id {shown} looks like an editor temp file")
        if raw == INDEX_FILE[:-3]:
            raise InvalidId(f"id {shown} is reserved for the index file")
        if parts[0] == DREAM_DIR or (parts[0] == ARCHIVE_DIR and not allow_archived):
            raise InvalidId(f"id {shown} is inside the reserved {parts[0]}/ folder")
        return unicodedata.normalize("NFC", raw)

    def path_for(self, memory_id: str, *, allow_archived: bool = False) -> Path:
        """The file of a memory id, refusing any id or symlink that leads outside the folder."""
        canonical = self.normalize_id(memory_id, allow_archived=allow_archived)
        path = self.root.joinpath(*canonical.split("/")).with_name(canonical.split("/")[-1] + ".md")
        self.check_contained(path)
        return path

    def check_contained(self, path: Path) -> None:
        """Raise InvalidId when `path` (following symlinks) resolves outside the folder."""
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root + os.sep):
            raise InvalidId(f"{path.name}: a symlink that leads outside the memory folder", path=path)

    # walking

    def iter_files(self, *, archived: bool = False, under: Path | None = None) -> Iterator[Path]:
        """Every memory file (or, with `archived`, every archived one), in sorted order.

        Symlinked folders are not followed; a symlinked file is yielded and
        checked for containment when it is read.
        """
        start = under or (self.archive_dir if archived else self.root)
        stack = [Path(start)]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            for entry in entries:
                path = Path(entry.path)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if entry.name.startswith(".") or (
                        folder == self.root and entry.name in RESERVED_TOP and not archived
                    ) or (folder == self.root and entry.name == DREAM_DIR):
                        continue
                    stack.append(path)
                elif (self.archived_id_for(path) if archived else self.id_for(path)) is not None:
                    yield path
