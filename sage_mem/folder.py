"""The memory folder: ids <-> paths, reserved names, and the state folder beside it.

A memory's id is its path relative to the folder, `/`-separated, without `.md`.
Every id that comes from outside (CLI, API, MCP, hook) goes through `path_for`,
which refuses anything that could escape the folder.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from .errors import FolderError, InvalidId
from .files import make_private_dirs

INDEX_FILE = "MEMORY.md"
ARCHIVE_DIR = "archive"
DREAM_DIR = "autodream"
RESERVED_TOP = frozenset({ARCHIVE_DIR, DREAM_DIR})
STATE_DIR_NAME = ".sage-mem"
MAX_ID_LENGTH = 200
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
# Not allowed in the names of new memories, so that a folder shared through git
# checks out on Windows too; existing files with them can still be read.
_NOT_PORTABLE = re.compile(r'[:*?"<>|]')
_MAX_DECODING_ROUNDS = 5


def default_folder() -> Path:
    """`SAGE_MEM_DIR`, else `~/.sage-mem/memory`."""
    env = os.environ.get("SAGE_MEM_DIR")
    return Path(env).expanduser() if env else Path.home() / ".sage-mem" / "memory"


def default_state_dir(root: Path) -> Path:
    """`.sage-mem/` beside the memory folder.

    The default folder `~/.sage-mem/memory` already sits in a `.sage-mem`
    folder, so that folder is the state folder (`~/.sage-mem/stats.json`
    beside `~/.sage-mem/memory/`), not a `.sage-mem` nested in it.
    """
    if root.parent.name == STATE_DIR_NAME:
        return root.parent
    return root.parent / STATE_DIR_NAME


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
            else default_state_dir(self.root)
        )
        real_root, real_state = os.path.realpath(self.root), os.path.realpath(self.state_dir)
        if real_state == real_root or real_state.startswith(real_root + os.sep):
            raise FolderError(
                f"{self.state_dir}: the state folder must be beside the memory folder, "
                "not inside it (volatile state would churn the memory folder)",
                path=self.state_dir,
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
        """Create (mode 0700) and return a folder inside the state folder."""
        folder = self.state_path(*parts)
        make_private_dirs(folder)
        return folder

    # ids and paths

    def id_for(self, path: Path | str) -> str | None:
        """The memory id of `path`; None when it is not a memory (reserved, outside, not .md)."""
        rel = self._relative(path)
        if rel is None or not rel.endswith(".md"):
            return None
        parts = rel.split("/")
        if parts[0] in RESERVED_TOP or rel == INDEX_FILE:
            return None
        if any(not part or is_editor_junk(part) for part in parts):
            return None
        return unicodedata.normalize("NFC", rel[:-3])

    def archived_id_for(self, path: Path | str) -> str | None:
        """The id (`archive/...`) of an archived memory file, or None."""
        rel = self._relative(path)
        if rel is None or not rel.startswith(ARCHIVE_DIR + "/") or not rel.endswith(".md"):
            return None
        if any(not part or is_editor_junk(part) for part in rel.split("/")):
            return None
        return unicodedata.normalize("NFC", rel[:-3])

    def _relative(self, path: Path | str) -> str | None:
        path = os.path.abspath(path)
        root = str(self.root)
        if not path.startswith(root + os.sep):
            return None
        return path[len(root) + 1 :].replace(os.sep, "/")

    def normalize_id(self, memory_id: str, *, allow_archived: bool = False) -> str:
        """Check an id from outside and return it in canonical form; raise InvalidId if unsafe.

        The canonical form is NFC, without `.md`. Percent-encoding is decoded
        (repeatedly, for double encoding) only to look for traversal: the id
        itself is never decoded, so `100%25` names a file called `100%25.md`.
        """
        if not isinstance(memory_id, str):
            raise InvalidId(f"id must be text, not {type(memory_id).__name__}")
        raw = unicodedata.normalize("NFC", memory_id)
        if raw.endswith(".md"):
            raw = raw[:-3]
        shown = repr(memory_id[:80])
        if raw.endswith(".md"):
            # `x.md.md` would name the file x.md.md, whose id is `x.md`, which names x.md.
            raise InvalidId(f"id {shown} ends in .md twice; no id could reach such a file")
        if not raw.strip():
            raise InvalidId("id is empty")
        if len(raw) > MAX_ID_LENGTH:
            raise InvalidId(f"id {shown}… is longer than {MAX_ID_LENGTH} characters")
        for candidate in _decodings(raw):
            if _FORBIDDEN_CHARS.search(candidate):
                raise InvalidId(f"id {shown} contains a character not allowed in ids")
            if candidate.startswith("/") or re.match(r"^[A-Za-z]:(?:[/\\]|$)", candidate):
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
        if len(parts) > 1 and (
            parts[0] == DREAM_DIR or (parts[0] == ARCHIVE_DIR and not allow_archived)
        ):
            raise InvalidId(f"id {shown} is inside the reserved {parts[0]}/ folder")
        return raw

    def check_new_id(self, memory_id: str) -> None:
        """Refuse, for a memory about to be created, a name Windows cannot check out as it is."""
        if _NOT_PORTABLE.search(memory_id):
            raise InvalidId(
                f"id {memory_id[:80]!r} contains one of : * ? \" < > | "
                "(not allowed in new memories: the folder must check out on Windows too)"
            )
        if any(part != part.strip() or part.endswith(".") for part in memory_id.split("/")):
            raise InvalidId(
                f"id {memory_id[:80]!r} has a part that starts or ends with a space or ends "
                "with a dot (not allowed in new memories: Windows would change the name)"
            )

    def path_for(self, memory_id: str, *, allow_archived: bool = False) -> Path:
        """The file of a memory id, refusing any id or symlink that leads outside the folder.

        An existing file whose name is stored in another Unicode normalization
        (NFD, as macOS writes it) is found under its NFC id.
        """
        canonical = self.normalize_id(memory_id, allow_archived=allow_archived)
        parts = canonical.split("/")
        parts[-1] += ".md"
        path = self.root.joinpath(*parts)
        if not os.path.lexists(path) and not canonical.isascii():
            path = _find_normalized(self.root, parts)
        self.check_contained(path)
        return path

    def check_contained(self, path: Path) -> None:
        """Raise InvalidId when `path` (following symlinks) resolves outside the folder."""
        if self._inside_without_links(path):
            return
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root + os.sep):
            raise InvalidId(
                f"{path.name}: a symlink that leads outside the memory folder", path=path
            )

    def _inside_without_links(self, path: Path) -> bool:
        """True when `path` is spelled under the root and each part below the root is no symlink.

        Such a path resolves to the resolved root plus the same parts, inside
        it wherever the root itself leads: the same answer as comparing both
        realpaths, for one lstat per part below the root instead of one per
        part of both paths. Anything else (a symlink, a part that is missing or
        cannot be read, `..`) gets the full check.
        """
        if os.name != "posix":  # a Windows junction is no symlink to lstat
            return False
        text = str(path)
        root = str(self.root)
        if not text.startswith(root + "/"):
            return False
        current = root
        for part in text[len(root) + 1 :].split("/"):
            if part in ("", ".", ".."):
                return False
            current += "/" + part
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    return False
            except OSError:
                return False
        return True

    # walking

    def iter_files(self, *, archived: bool = False, under: Path | None = None) -> Iterator[Path]:
        """Every memory file (or, with `archived`, every archived one), sorted by path.

        Symlinked folders are not followed; a symlinked file is yielded and
        checked for containment when it is read.
        """
        start = Path(under or (self.archive_dir if archived else self.root))
        # A stack of sorted listings rather than recursion: no depth limit.
        stack = [(start, iter(_sorted_entries(start)))]
        while stack:
            folder, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name.startswith(".") or (
                    folder == self.root
                    and (entry.name == DREAM_DIR or (entry.name == ARCHIVE_DIR and not archived))
                ):
                    continue
                stack.append((path, iter(_sorted_entries(path))))
            elif (self.archived_id_for(path) if archived else self.id_for(path)) is not None:
                yield path


def _sorted_entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda e: e.name)
    except OSError:  # gone, not a folder, no permission: nothing to list
        return []


def _decodings(text: str) -> list[str]:
    """`text` and each successive percent-decoding of it, until decoding changes nothing."""
    out = [text]
    for _ in range(_MAX_DECODING_ROUNDS):
        decoded = unquote(out[-1])
        if decoded == out[-1]:
            break
        out.append(decoded)
    return out


def _find_normalized(root: Path, parts: list[str]) -> Path:
    """`parts` under `root`, each part spelled as an existing name that equals it in NFC.

    A part with no such name is kept as given, so a new memory in an existing
    NFD folder goes into that folder rather than a twin of it.
    """
    current = root
    for part in parts:
        candidate = current / part
        if not os.path.lexists(candidate):
            try:
                names = os.listdir(current)
            except OSError:
                names = []
            match = next((n for n in names if unicodedata.normalize("NFC", n) == part), None)
            if match is not None:
                candidate = current / match
        current = candidate
    return current
