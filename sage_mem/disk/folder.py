"""The memory folder: ids <-> paths, reserved names, and the state folder beside it.

A memory's id is its path relative to the folder, `/`-separated, without `.md`.
Every id that comes from outside (CLI, API, MCP, hook) goes through `path_for`,
which refuses anything that could escape the folder.

The state folder
----------------

Each memory folder has a state folder of its own (counts, sessions, caches,
dream runs: see DESIGN §2), beside it and never inside it, named after it:

    projects/
      notes/                      a memory folder
      .notes.sage-mem/            its state
        owner.json                {"memoryFolder": "/…/projects/notes", "inode": 1234}
        index/  sessions/  stats.json  autodream/  write.lock  write.generation
      team/                       a second memory folder beside it
      .team.sage-mem/             its own state: nothing is shared

    ~/.sage-mem/                  the default folder's home, and its state
      owner.json  index/  sessions/  stats.json  autodream/ …
      memory/                     the default memory folder (`~/.sage-mem/memory`)
      work/                       any other memory folder placed here…
      .work.sage-mem/             …has a state folder of its own, like anywhere

A folder named `memory` directly inside a folder named `.sage-mem` keeps that
folder as its state, as it always has; another memory folder there cannot be
named like one of its state entries (`index`, `sessions`, `autodream`).
`SAGE_MEM_STATE_DIR` or `state_dir=` name the state folder outright: then
nothing below happens and two folders given the same one share it.

`owner.json` records which memory folder a state folder belongs to (its
absolute path and the folder's inode), so that a state folder found where it
does not belong is noticed rather than silently used:

- The parent folder moved or was renamed (`notes/` has the inode on record
  under another path): the record is brought up to date.
- `notes/` was renamed to `ideas/`: on the first use of `ideas/` (when it
  holds a MEMORY.md or dream reports: only then is the parent listed),
  `.notes.sage-mem/` is found by the inode on record, checked against the
  dream reports and ids it holds, and renamed to `.ideas.sage-mem/`. A new
  `notes/` made where the old one was does not get that state: it goes to
  the renamed folder. (`mv .notes.sage-mem .ideas.sage-mem` by hand does the
  same.)
- The tree was copied (`cp -r projects copy`): the copy's state folder holds
  a record of the original; the copy takes it over and a note says so.

Older versions kept one `.sage-mem/` for every memory folder in the same
parent (`~/.sage-mem/` for folders directly in the home folder). When a memory
folder has no state folder of its own yet, its old shared one is looked at:
the root path in each index cache (`index/*.idx`) and the dream runs whose
reports (`<folder>/autodream/<runId>.md`) sit in a folder say which folders
used it. It becomes this folder's state when this folder used it and no other
existing folder did (folders that no longer exist beside it, since renamed or
deleted, do not count; a folder elsewhere that named it as its state does),
or, when nothing names any folder, when this is the
only folder beside it that holds memories: a rename of the whole folder to
`.notes.sage-mem/`, or, when it cannot be moved (it holds other folders, as
`~/.sage-mem/` does), an `owner.json` written in it. The default folder keeps
`~/.sage-mem/` unless only other folders used it: it has always been its
home, and folders that shared it start afresh. Otherwise the old state is
left as it is, this folder starts with a fresh state, and
`MemoryFolder.state_notes` says why (the library prints nothing). A
long-lived process of an older version still running writes to the old place
until it is restarted.

Why one module: `MemoryFolder` is the one place that turns ids into paths
and back, and its refusals (reserved names, links out of the folder, folders a
walk does not enter) are read together with the walk that finds the memories,
so that what can be written is what is found. `_StateClaim` (which state folder
is this folder's, and its owner) keeps the same rules of what is inside the
folder and what is beside it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import unquote

from ..errors import FolderError, InvalidId
from .home import default_folder as default_folder  # where it always was: SAGE_MEM_DIR, or ~
from .home import expand_home
from .safe_io import Seen, make_private_dirs, parked_original, read_file

INDEX_FILE = "MEMORY.md"
ARCHIVE_DIR = "archive"
DREAM_DIR = "autodream"
RESERVED_TOP = frozenset({ARCHIVE_DIR, DREAM_DIR})
STATE_DIR_NAME = ".sage-mem"
STATE_SUFFIX = ".sage-mem"
OWNER_FILE = "owner.json"
HOME_FOLDER_NAME = "memory"
# The folders a state folder holds; a memory folder in `.sage-mem/` cannot take their names.
STATE_FOLDERS = frozenset({"index", "sessions", DREAM_DIR})
MAX_ID_LENGTH = 200
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")

# Names may keep the two joiners (emoji sequences, Persian and Indic scripts); any
# other format character, and every control or separator, hides or turns text.
_JOINERS = frozenset("\u200c\u200d")


def hidden_in_name(char: str) -> bool:
    """True for a character of a name that can pass for other text where it is shown: a
    control, a line or paragraph separator, a format character (bidi, zero-width, tags) but
    the two joiners. New ids refuse them; the frames name them (`checks/prompt_injection`)."""
    kind = unicodedata.category(char)
    return kind in ("Cc", "Zl", "Zp") or (kind == "Cf" and char not in _JOINERS)

# Not allowed in the names of new memories, so that a folder shared through git
# checks out on Windows too; existing files with them can still be read.
_NOT_PORTABLE = re.compile(r'[:*?"<>|]')
# Names Windows keeps for devices, with any extension (`aux.md`, `con.notes.md`).
_WINDOWS_DEVICE = re.compile(r"(?i)(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?")
# `git mergetool` writes `<name>_LOCAL_<pid>.md` (and REMOTE, BASE, BACKUP) beside the file.
_MERGETOOL_COPY = re.compile(r".+_(?:LOCAL|REMOTE|BASE|BACKUP)_[0-9]+\.md$")
# Short ids of ordinary characters are reachable by construction; others are checked with
# `normalize_id` (for every file, a cold build of 100k files would pay ~0.5 s). A lone
# surrogate is a byte of the file's name that is not UTF-8 (`surrogateescape`).
_PLAIN_ID = re.compile(r"[^\x00-\x1f\x7f\\%\ud800-\udfff]{1,60}")
_MAX_DECODING_ROUNDS = 5
_MAX_NAME_BYTES = 255
# How many entries of a parent folder, and ids of an old state, are looked at when
# looking for a state folder's owner: a one-time look, bounded in a huge home folder.
_MAX_SIBLINGS = 5000
_MAX_IDS_CHECKED = 200


def state_dir_name(folder_name: str) -> str:
    """`.<name>.sage-mem`, the name of a memory folder's own state folder.

    A name too long for the filesystem is cut and keeps a hash of the whole.
    """
    name = f".{folder_name}{STATE_SUFFIX}"
    if len(os.fsencode(name)) <= _MAX_NAME_BYTES:
        return name
    from ..memory.file_format import sha256  # here: a sync imports no memory format

    digest = sha256(os.fsencode(folder_name)).hexdigest()[:12]
    room = _MAX_NAME_BYTES - len(f".-{digest}{STATE_SUFFIX}")
    head = os.fsencode(folder_name)[:room].decode("utf-8", "ignore")
    return f".{head}-{digest}{STATE_SUFFIX}"


def default_state_dir(root: Path) -> Path:
    """The state folder of the memory folder `root` (see the module docstring).

    `.<name>.sage-mem/` beside it; for `memory` inside a `.sage-mem` folder,
    that folder. Old state shared by the folders of `root`'s parent is taken
    over here when it is clearly `root`'s own.
    """
    return _StateClaim(Path(os.path.abspath(root))).resolve()


def refuse_misplaced(root: Path | str) -> None:
    """Raise FolderError when `root` is a state folder or the folder a memory folder sits in.

    Named as a memory folder (`--dir`, `$SAGE_MEM_DIR`, `init DIR`), either would be
    taken for one: the memories' ids would start with `memory/`, their MEMORY.md would
    be listed as a memory, and a state folder of the state folder (`..sage-mem.sage-mem`)
    would be made. A few stats; the folder is listed only when it has no MEMORY.md (a
    memory folder has one), and a folder on record as a memory folder is never refused.
    """
    root = Path(os.path.abspath(expand_home(root)))
    name = root.name
    if (name == STATE_DIR_NAME or (name.startswith(".") and name.endswith(STATE_SUFFIX))
            or os.path.isfile(root / OWNER_FILE)):
        owner = _read_owner(root)
        whose = f"the state folder of {owner.folder}" if owner else "a state folder"
        hint = f"; use --dir {owner.folder}" if owner else ""
        raise FolderError(f"{root}: this is {whose} (sage-mem's counts and caches), not a "
                          f"memory folder{hint}", path=root)
    if not root.is_dir() or os.path.lexists(root / INDEX_FILE):
        return
    own = _read_owner(root.parent / state_dir_name(name))
    if own is not None and own.folder == str(root):
        return  # a memory folder on record, whatever it holds
    try:
        entries = [entry.name for entry in os.scandir(root)
                   if entry.name.startswith(".") and entry.name.endswith(STATE_SUFFIX)]
    except OSError:
        return
    for entry in sorted(entries):
        owner = _read_owner(root / entry)
        if owner is not None and owner.folder.startswith(str(root) + os.sep):
            raise FolderError(f"{root}: this folder holds the memory folder {owner.folder}, "
                              f"it is not one itself; use --dir {owner.folder}", path=root)


def is_editor_junk(name: str) -> bool:
    """Editor temp, swap and backup files, `git mergetool`'s copies, dot-files: never memories."""
    return (
        name.startswith((".", "#", "~"))
        or name.endswith(("~", ".swp", ".swo", ".swx", ".tmp", ".bak", ".orig"))
        or name == "4913"
        or ("_" in name and _MERGETOOL_COPY.search(name) is not None)
    )


def is_walked(name: str, *, is_dir: bool, in_root: bool) -> bool:
    """Whether a walk of the memory folder takes this entry: a memory file, or a folder to enter.

    The one rule for every walk (`MemoryFolder.iter_files`, `cache.scan`), so that a
    cold start and a warm one agree on what is a memory. `is_dir` is the entry's own
    type: a symlink is never a folder to enter (symlinked folders are not followed).
    `in_root` says the entry lies directly in the memory folder, where `MEMORY.md`
    and `autodream/` are reserved; `archive/` is entered (it holds the archived
    memories) and left out by the walks that want only memories in service.
    """
    if is_dir:
        return not is_editor_junk(name) and not (in_root and name == DREAM_DIR)
    if not name.endswith(".md") or is_editor_junk(name):
        return False
    return not (in_root and name == INDEX_FILE)


def _id_of(rel: str) -> str | None:
    """The memory id of a path relative to the folder (`/` between its parts), None when it
    names no memory (reserved, not .md): `MemoryFolder.id_for`'s rule."""
    if not rel.endswith(".md"):
        return None
    parts = rel.split("/")
    if parts[0] in RESERVED_TOP or rel == INDEX_FILE:
        return None
    if any(not part or is_editor_junk(part) for part in parts):
        return None
    return unicodedata.normalize("NFC", rel[:-3])


class MemoryFolder:
    """Paths of one memory folder and of its state folder."""

    def __init__(self, root: Path | str, *, state_dir: Path | str | None = None) -> None:
        root = expand_home(root)
        self.root = Path(os.path.abspath(root))
        if self.root.parent == self.root:
            raise FolderError(f"{self.root}: cannot use the filesystem root as a memory folder")
        env_state = os.environ.get("SAGE_MEM_STATE_DIR")
        if state_dir is None and env_state:
            state_dir = env_state
        # What finding the state folder noticed: old shared state left alone, a copy taken over.
        self.state_notes: tuple[str, ...] = ()
        self._owns_state = state_dir is None
        if state_dir is not None:
            self.state_dir = Path(os.path.abspath(expand_home(state_dir)))
        else:
            if self.root.parent.name == STATE_DIR_NAME and self.root.name in STATE_FOLDERS:
                raise FolderError(
                    f"{self.root}: a memory folder in {self.root.parent} cannot be named "
                    f"{self.root.name!r}: the state kept there has a folder of that name",
                    path=self.root,
                )
            claim = _StateClaim(self.root)
            self.state_dir = claim.resolve()
            self.state_notes = tuple(claim.notes)
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
        """Raise FolderError unless the memory folder exists, is a folder and can be read.

        A folder this process may not list or enter would read as an empty one (every
        walk passes over what it cannot list): `list` would say "No memories", `audit`
        "No problems found", `export` write nothing.
        """
        if not self.root.exists():
            raise FolderError(
                f"{self.root}: no memory folder here (create one with `sage-mem init`)",
                path=self.root,
            )
        if not self.root.is_dir():
            raise FolderError(f"{self.root}: not a folder", path=self.root)
        if not os.access(self.root, os.R_OK | os.X_OK):
            raise FolderError(f"{self.root}: no permission to read the memory folder",
                              path=self.root)

    def state_path(self, *parts: str) -> Path:
        """A path inside the state folder (not created).

        The first call makes sure a default state folder records its owner: it
        is created then (mode 0700) if it does not exist, so that the process
        that first uses it is the one that says whose it is.
        """
        if self._owns_state:
            self._owns_state = False
            if self.root.is_dir() and not (self.state_dir / OWNER_FILE).exists():
                try:
                    make_private_dirs(self.state_dir)
                except OSError:
                    pass  # nothing can be kept there; whoever writes there says why
                else:
                    _write_owner(self.state_dir, self.root)
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
        return None if rel is None else _id_of(rel)

    def memory_files(self) -> Iterator[tuple[str, str, str]]:
        """(path, path relative to the folder with `/`, id) of each file `iter_files` yields
        that `id_for` names, as text: no `Path` made, no path made absolute again (a join
        lists 10,000, where those took ~0.07 s of CPU)."""
        root = str(self.root)
        prefix = len(root) + 1
        for text in self._walked_paths():
            if not text.startswith(root + os.sep):
                continue
            rel = text[prefix:].replace(os.sep, "/")
            # What the walk takes `_id_of` names: a `.md` file, no part empty or an editor's,
            # neither archive/ nor autodream/ entered at the top, nor MEMORY.md taken there.
            yield text, rel, unicodedata.normalize("NFC", rel[:-3])

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
        from ..memory.value import not_text

        problem = not_text(f"id {shown}", raw)
        if problem:
            raise InvalidId(problem)
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

    def check_reachable(self, memory_id: str, *, archived: bool = False,
                        path: Path | str | None = None) -> None:
        """Raise InvalidId when no id can reach the file `id_for` named `memory_id` (a
        newline, a backslash or a byte that is not UTF-8 in its name, `.md.md`, too long;
        or, given its `path`, another file whose name is the same in NFC, which the id
        names: `café.md` written by macOS in NFD beside one in NFC): it could be neither
        read nor changed, and would break its line of MEMORY.md, so it is no memory
        anyone searches or lists (the audit's unaddressable-name)."""
        if path is not None and not memory_id.isascii():
            self._check_twin(memory_id, Path(path), archived=archived)
        if _PLAIN_ID.fullmatch(memory_id) and not memory_id.endswith(".md"):
            return
        if self.normalize_id(memory_id, allow_archived=archived) != memory_id:
            raise InvalidId(f"id {memory_id!r} would name another file")

    def _check_twin(self, memory_id: str, path: Path, *, archived: bool) -> None:
        rel = self._relative(path)
        if rel is None or rel[:-3] == memory_id:
            return  # its name is the id's own spelling (NFC): the id reaches it first
        try:
            reached = self.path_for(memory_id, allow_archived=archived)
        except InvalidId:
            return  # the id itself is refused: said below
        if reached != path:
            raise InvalidId(
                f"id {memory_id[:80]!r} names another file, {reached.name!r}: the two names "
                "differ only in how Unicode spells their accents (NFC and NFD, as macOS writes)"
            )

    def check_new_id(self, memory_id: str, *, moving_from: str | None = None) -> None:
        """Refuse, for a memory about to be created, a name Windows cannot check out as it is,
        or one holding a character that hides or turns text (`hidden_in_name`): `ls`, `git
        status` and a diff would show another name than the file's (the audit's unsafe-name);
        or the name of a file beside it but for case (`USER_CAT` by `user_cat`), one file on
        macOS and Windows, where a clone keeps one of the two. `moving_from`: the id being
        renamed to this one, whose file is no twin (a rename that only changes case)."""
        hidden = next((c for c in memory_id if hidden_in_name(c)), None)
        if hidden is not None:
            raise InvalidId(
                f"id {memory_id[:80]!r} holds U+{ord(hidden):04X}, a control, separator, bidi "
                "or invisible character (not allowed in new memories: the name would show as "
                "other text)"
            )
        if _NOT_PORTABLE.search(memory_id):
            raise InvalidId(
                f"id {memory_id[:80]!r} contains one of : * ? \" < > | "
                "(not allowed in new memories: the folder must check out on Windows too)"
            )
        device = next((p for p in memory_id.split("/") if _WINDOWS_DEVICE.fullmatch(p)), None)
        if device is not None:
            raise InvalidId(
                f"id {memory_id[:80]!r}: {device!r} is a device name on Windows (not allowed in "
                "new memories: the folder must check out on Windows too)"
            )
        if any(part != part.strip() or part.endswith(".") for part in memory_id.split("/")):
            raise InvalidId(
                f"id {memory_id[:80]!r} has a part that starts or ends with a space or ends "
                "with a dot (not allowed in new memories: Windows would change the name)"
            )
        twin = self._case_twin(memory_id, moving_from)
        if twin is not None:
            mine = "/".join(memory_id.split("/")[: twin.count("/") + 1])
            what = f"id {memory_id[:80]!r}" if mine == memory_id else (
                f"id {memory_id[:80]!r}: its folder {mine!r}")
            raise InvalidId(
                f"{what} differs from {twin!r} only in case (not allowed in new memories: on "
                "macOS and Windows the two are one, and a clone there keeps one of them)"
            )

    def _case_twin(self, memory_id: str, moving_from: str | None) -> str | None:
        """The path (relative, without `.md`) of a file or folder on the way to `memory_id`'s
        file whose name differs from its part only in case (compared in NFC), other than
        `moving_from`'s file; None when there is none."""
        parts = memory_id.split("/")
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            name = unicodedata.normalize("NFC", part + ".md" if last else part)
            folded = name.casefold()
            try:
                names = os.listdir(self.root.joinpath(*parts[:depth]))
            except OSError:
                return None  # no such folder yet: nothing beside it
            for other in names:  # (an ASCII name is its own NFC: most of a large folder)
                nfc = other if other.isascii() else unicodedata.normalize("NFC", other)
                if nfc != name and nfc.casefold() == folded:
                    twin = "/".join([*parts[:depth], nfc[:-3] if last else nfc])
                    if twin != moving_from:
                        return twin
        return None

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
            link = self._link_out(path, real_root)
            through = f" (on the way to {link[1]})" if link and link[1] != link[0] else ""
            raise InvalidId(
                f"{link[0] if link else path.name}: a symlink that leads outside the memory "
                f"folder{through}", path=path
            )

    def _link_out(self, path: Path, real_root: str) -> tuple[str, str] | None:
        """(the first part of `path` below the root that leads outside it, `path`), both
        relative to the root: `archive` for `archive/user_cat.md` when archive/ is the link."""
        rel = self._relative(path)
        if rel is None:
            return None
        current = str(self.root)
        for part in rel.split("/"):
            current += os.sep + part
            real = os.path.realpath(current)
            if os.path.islink(current) and real != real_root \
                    and not real.startswith(real_root + os.sep):
                return os.path.relpath(current, self.root).replace(os.sep, "/"), rel
        return None

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

        What is walked is decided by `is_walked`, entry by entry. Symlinked
        folders are not followed (a symlinked archive/ neither); a symlinked
        file is yielded and checked for containment when it is read. `under`
        walks only a folder of the folder, and nothing when the whole walk
        would not reach it (a dot-folder, a symlinked folder, archive/ for
        memories in service).
        """
        return map(Path, self._walked_paths(archived=archived, under=under))

    def _walked_paths(self, *, archived: bool = False, under: Path | None = None) -> Iterator[str]:
        """`iter_files`, each path as text."""
        start = Path(os.path.abspath(under)) if under is not None else self.root
        if archived and start == self.root:
            start = self.archive_dir
        if not self._walk_reaches(start, archived=archived):
            return
        def enter(name: str, in_root: bool) -> bool:
            return (is_walked(name, is_dir=True, in_root=in_root)
                    and not (in_root and name == ARCHIVE_DIR and not archived))

        for in_root, entry in _files_under(start, in_root=start == self.root, enter=enter):
            if is_walked(entry.name, is_dir=False, in_root=in_root):
                yield entry.path

    def iter_parked(self, unlisted: list[Path] | None = None) -> Iterator[Path]:
        """Files an interrupted delete left parked (`safe_io.PARKED`) in the folders a walk
        enters, archive/ included, sorted by path: never memories, never lost. `unlisted`
        is given the folders of the walk this process may not list (`unlisted_folders`)."""
        def enter(name: str, in_root: bool) -> bool:
            return is_walked(name, is_dir=True, in_root=in_root)

        for _, entry in _files_under(self.root, in_root=True, enter=enter, unlisted=unlisted):
            if parked_original(entry.name) is not None:
                yield Path(entry.path)

    def unlisted_folders(self) -> list[Path]:
        """The folders a walk enters (archive/ too) that this process may not list, sorted:
        every walk passes over them, so the memories in them are not read, listed, searched,
        exported or synced, and `list`, `export` and `audit` name them."""
        unlisted: list[Path] = []
        for _ in self.iter_parked(unlisted):
            pass
        return sorted(unlisted)

    def check_walked(self, path: Path, *, archived: bool = False) -> None:
        """Raise InvalidId unless a walk of the folder would find a memory file at `path`.

        For a file about to be created or moved there (its missing folders will be
        made as real ones): a folder that is a symlink is never walked, so a memory
        written through one would be lost to the index, `list` and `restore` (or,
        through a link to a folder in service, an archived memory would be back in
        service).
        """
        rel = self._relative(path)
        parts = rel.split("/")[:-1] if rel is not None else []
        current = self.root
        for number, part in enumerate(parts):
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                return  # made by the write, as a real folder
            except OSError:
                break
            if stat.S_ISDIR(st.st_mode) and is_walked(part, is_dir=True, in_root=number == 0):
                continue
            shown = current.relative_to(self.root).as_posix()
            what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a folder the index walks"
            raise InvalidId(
                f"{shown}/ is {what}: sage-mem does not write a memory through it (the memory "
                "would be lost to the index)",
                path=path,
            )
        if rel is None or (parts[:1] == [ARCHIVE_DIR]) != archived:
            raise InvalidId(f"{path}: not where a walk of the memory folder finds it", path=path)

    def _walk_reaches(self, start: Path, *, archived: bool) -> bool:
        """True when walking the whole folder enters `start` (the root, or a real folder in it)."""
        rel = self._relative(start)
        if rel is None:
            return start == self.root and not archived
        parts = rel.split("/")
        if (parts[0] == ARCHIVE_DIR) != archived:
            return False
        current = str(self.root)
        for number, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                if not stat.S_ISDIR(os.lstat(current).st_mode):
                    return False
            except OSError:
                return False
            if not is_walked(part, is_dir=True, in_root=number == 0):
                return False
        return True


def _files_under(
    start: Path, *, in_root: bool, enter: Callable[[str, bool], bool],
    unlisted: list[Path] | None = None,
) -> Iterator[tuple[bool, os.DirEntry[str]]]:
    """(whether in the root, entry) of each file under `start`, in sorted path order, going
    into the folders `enter(name, in_root)` allows; symlinks are never followed. A folder
    the process may not list is passed over (and added to `unlisted`).

    A stack of sorted listings rather than recursion: no depth limit.
    """
    stack = [(in_root, iter(_sorted_entries(start, unlisted)))]
    while stack:
        in_root, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if not is_dir:
            yield in_root, entry
        elif enter(entry.name, in_root):
            stack.append((False, iter(_sorted_entries(Path(entry.path), unlisted))))


def _sorted_entries(folder: Path, unlisted: list[Path] | None = None) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda e: e.name)
    except PermissionError:
        if unlisted is not None:
            unlisted.append(folder)
        return []
    except OSError:  # gone, not a folder: nothing to list
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


# finding, checking and taking over a memory folder's state folder


class _Owner:
    """What `owner.json` records: the memory folder's absolute path and its inode."""

    __slots__ = ("folder", "inode")

    def __init__(self, folder: str, inode: int | None) -> None:
        self.folder = folder
        self.inode = inode


def _read_owner(state: Path) -> _Owner | None:
    try:
        with open(state / OWNER_FILE, "rb") as handle:
            data = json.loads(handle.read(1 << 16))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("memoryFolder"), str):
        return None
    inode = data.get("inode")
    return _Owner(data["memoryFolder"], inode if type(inode) is int else None)


def _write_owner(state: Path, root: Path, *, exclusive: bool = False) -> bool:
    """Record `root` as the owner of `state`; False if that failed (or, `exclusive`, one exists)."""
    record = {"memoryFolder": str(root), "inode": _inode(root)}
    try:
        text = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a path that is not UTF-8: escaped, still the same path
        text = (json.dumps(record) + "\n").encode("ascii")
    target = state / OWNER_FILE
    temp = state / f".{OWNER_FILE}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
        if exclusive:
            os.link(temp, target)  # fails when another process recorded an owner first
        else:
            os.replace(temp, target)
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _inode(path: Path | str) -> int | None:
    """The inode of a folder; None when `path` is no folder."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_ino if stat.S_ISDIR(st.st_mode) else None


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _cache_root(path: Path) -> str | None:
    """The memory folder an index cache file was built for, from its header (None if unreadable)."""
    import marshal
    import zlib

    try:
        with open(path, "rb") as handle:
            start = handle.read(16)
            # The layout is cache.py's: magic, header length, CRC-32, marshalled header.
            if len(start) < 16 or start[:8] != b"SAGEMEMI":
                return None
            length = int.from_bytes(start[8:], "little")
            if not 4 < length <= 1 << 16:
                return None
            body = handle.read(length)
        if zlib.crc32(body[4:]) != int.from_bytes(body[:4], "little"):
            return None
        header = marshal.loads(body[4:])
    except (OSError, ValueError, EOFError, TypeError):
        return None
    root = header.get("root") if isinstance(header, dict) else None
    return root if isinstance(root, str) else None


def _cache_key(path: str) -> str:
    """The name of a folder's index cache file (as `cache.cache_path` makes it), without `.idx`."""
    from ..memory.file_format import sha256

    return sha256(os.fsencode(path)).hexdigest()[:16]


class _StateClaim:
    """Finds the state folder of one memory folder, checking its owner and taking over old state.

    The rules are in the module docstring. Everything here is a look at a few
    small files, except the first use of a folder that has no state folder of
    its own yet, which looks at its parent folder once.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.parent = root.parent
        self.own = self.parent / state_dir_name(root.name)
        self.shared = (
            self.parent if self.parent.name == STATE_DIR_NAME else self.parent / STATE_DIR_NAME
        )
        self.inode = _inode(root)
        self.notes: list[str] = []
        self._siblings: list[os.DirEntry[str]] | None = None

    def resolve(self) -> Path:
        if self.inode is None:  # no folder (yet): where its state will be; nothing checked
            if os.path.isdir(self.own):
                return self.own
            owner = _read_owner(self.shared) if os.path.isdir(self.shared) else None
            if owner is None:
                return self.shared if self._is_home() else self.own
            return self.shared if owner.folder == str(self.root) else self.own
        if os.path.isdir(self.own):
            return self._check_own()
        shared_exists = self.shared != self.root and os.path.isdir(self.shared)
        owner = _read_owner(self.shared) if shared_exists else None
        if owner is not None and self._owns(owner, self.shared):
            self._record(self.shared, owner)
            return self.shared
        if self._used_before() and self._take_over_renamed():
            return self.own
        if not shared_exists:
            return self.own
        if owner is None:
            return self._take_over_shared()
        if os.path.realpath(self.root) in self._users(self.shared)[0]:
            self.notes.append(
                f"{self.shared} holds state this folder shared under an older version, but it "
                f"belongs to {owner.folder} now; {self.root} starts with a state folder of its "
                f"own, {self.own}"
            )
        return self.own

    def _owns(self, owner: _Owner, state: Path) -> bool:
        """True when the record in `state` names this folder.

        By path and inode; by inode alone when the recorded path is gone or
        another folder (the folder or its parent was moved or renamed); by path
        alone when no folder beside this one has the recorded inode (the folder
        was replaced, by a fresh clone, say) — if one has, that folder is the
        owner, renamed, and this one a new folder made in its place.
        """
        if owner.folder == str(self.root):
            return (
                owner.inode is None
                or owner.inode == self.inode
                or self._renamed_to(owner.inode, state) is None
            )
        return (
            owner.inode is not None
            and owner.inode == self.inode
            and _inode(owner.folder) != owner.inode
        )

    def _record(self, state: Path, owner: _Owner | None) -> None:
        if owner is None or owner.folder != str(self.root) or owner.inode != self.inode:
            _write_owner(state, self.root)

    # the folder's own state folder

    def _check_own(self) -> Path:
        owner = _read_owner(self.own)
        if owner is None or self._owns(owner, self.own):
            self._record(self.own, owner)
            return self.own
        heir = (
            self._renamed_to(owner.inode, self.own)
            if owner.folder == str(self.root) and owner.inode is not None
            else None
        )
        if heir is not None:
            target = self.parent / state_dir_name(heir.name)
            if not os.path.lexists(target) and _rename(self.own, target):
                _write_owner(target, Path(heir.path))
                self.notes.append(
                    f"{self.own} was the state of the folder now called {heir.path}; moved to "
                    f"{target}, and {self.root} starts with a state folder of its own"
                )
                return self.own
        self.notes.append(
            f"{self.own} was the state of {owner.folder} (copied along with it?); "
            f"it is now the state of {self.root}"
        )
        _write_owner(self.own, self.root)
        return self.own

    def _renamed_to(self, inode: int, state: Path) -> os.DirEntry[str] | None:
        """The folder beside this one with `inode`, when what `state` holds confirms it."""
        for entry in self._sibling_folders():
            if entry.path != str(self.root) and _inode(entry.path) == inode:
                return entry if _confirms(state, Path(entry.path)) else None
        return None

    def _used_before(self) -> bool:
        """True when sage-mem has written here (MEMORY.md, dream reports): it may have had state.

        Only then is the parent folder listed for the state folder it had under
        another name; a new folder's first use looks nowhere but at its own.
        A symlinked MEMORY.md is not followed to decide (sage-mem writes a file).
        """
        try:
            if stat.S_ISREG(os.lstat(self.root / INDEX_FILE).st_mode):
                return True
        except OSError:
            pass
        return os.path.isdir(self.root / DREAM_DIR)

    def _take_over_renamed(self) -> bool:
        """Rename the state folder this folder had under its old name, if there is one."""
        found: list[Path] = []
        for entry in self._sibling_folders():
            state = Path(entry.path)
            if not entry.name.endswith(STATE_SUFFIX) or state in (self.own, self.shared):
                continue
            owner = _read_owner(state)
            if (
                owner is not None
                and owner.folder != str(self.root)
                and self._owns(owner, state)
                and _confirms(state, self.root)
            ):
                found.append(state)
        if len(found) != 1:
            return False
        if not _rename(found[0], self.own):
            return os.path.isdir(self.own)
        _write_owner(self.own, self.root)
        self.notes.append(f"{found[0]} was this folder's state under its old name; now {self.own}")
        return True

    # old state shared by the folders of one parent

    def _take_over_shared(self) -> Path:
        users, unknown = self._users(self.shared)
        me = os.path.realpath(self.root)
        parent = os.path.realpath(self.parent)
        others = sorted(
            user for user in users - {me}
            # Folders that were beside this one and are gone (renamed, deleted) claim nothing.
            if os.path.isdir(user) or os.path.dirname(user) != parent
        )
        if unknown:
            others.append("a folder its index cache does not name")
        if me in users:
            if not others or self._is_home():
                return self._adopt()
            self.notes.append(
                f"{self.shared} holds state that {self.root} shared with {', '.join(others)} "
                f"under an older version; it is left where it is, and {self.root} starts with "
                f"a state folder of its own, {self.own}"
            )
            return self.own
        if others:
            return self.own  # another folder's
        # Nothing names a folder that is still there: the cache was deleted, or the folder
        # that used the state has been renamed since.
        if self._is_home():
            return self._adopt()
        if not _holds_state(self.shared):
            return self.own
        if not any(self._holds_memories(entry) for entry in self._sibling_folders()):
            return self._adopt()
        self.notes.append(
            f"{self.shared} holds state from an older version that names no memory folder here, "
            f"and {self.root} is not the only memory folder beside it; it is left where it is, "
            f"and {self.root} starts with a state folder of its own, {self.own}"
        )
        return self.own

    def _adopt(self) -> Path:
        """Make the shared state this folder's: renamed to its own name, or recorded in place."""
        if self.shared != self.parent and _only_state_inside(self.shared):
            if _rename(self.shared, self.own):
                _write_owner(self.own, self.root)
                return self.own
            if os.path.isdir(self.own):  # another process took it over first
                return self.own
        if _write_owner(self.shared, self.root, exclusive=True):
            return self.shared
        owner = _read_owner(self.shared)
        return self.shared if owner is not None and self._owns(owner, self.shared) else self.own

    def _users(self, state: Path) -> tuple[set[str], bool]:
        """The memory folders (real paths) that `state` names, and whether some cache named none.

        A cache file records the folder it was built for; a dream run, by its
        report in `<folder>/autodream/`.
        """
        users: set[str] = set()
        unknown = False
        keys: dict[str, str] | None = None
        for name in _names(state / "index"):
            if not name.endswith(".idx") or name.startswith("."):
                continue
            root = _cache_root(state / "index" / name)
            if root is None:
                if keys is None:  # a cache from before caches recorded their folder
                    keys = {_cache_key(str(self.root)): str(self.root)}
                    keys.update((_cache_key(e.path), e.path) for e in self._sibling_folders())
                root = keys.get(name[:-4])
            if root is None:
                unknown = True
            else:
                users.add(os.path.realpath(root))
        runs = set(_names(state / DREAM_DIR / "runs"))
        if runs:
            for folder in [str(self.root), *(e.path for e in self._sibling_folders())]:
                if runs & _report_ids(Path(folder)):
                    users.add(os.path.realpath(folder))
        return users, unknown

    def _holds_memories(self, entry: os.DirEntry[str]) -> bool:
        """A folder beside this one that could be a memory folder: it has a top-level `.md` file."""
        if entry.path == str(self.root) or entry.name.startswith("."):
            return False
        try:
            with os.scandir(entry.path) as listing:
                return any(item.name.endswith(".md") for item in listing)
        except OSError:
            return False

    def _sibling_folders(self) -> list[os.DirEntry[str]]:
        if self._siblings is None:
            found: list[os.DirEntry[str]] = []
            try:
                with os.scandir(self.parent) as listing:
                    for entry in listing:
                        try:
                            if entry.is_dir():
                                found.append(entry)
                        except OSError:
                            continue
                        if len(found) >= _MAX_SIBLINGS:
                            break
            except OSError:
                pass
            self._siblings = found
        return self._siblings

    def _is_home(self) -> bool:
        return self.parent.name == STATE_DIR_NAME and self.root.name == HOME_FOLDER_NAME


def _rename(source: Path, target: Path) -> bool:
    try:
        os.rename(source, target)
    except OSError:
        return False
    return True


def _report_ids(folder: Path) -> set[str]:
    """The run ids whose reports are in `folder/autodream/`."""
    return {name[:-3] for name in _names(folder / DREAM_DIR) if name.endswith(".md")}


def _holds_state(state: Path) -> bool:
    """True when an old state folder holds counts, sessions or runs (more than a cache)."""
    return (
        os.path.exists(state / "stats.json")
        or bool(_names(state / "sessions"))
        or bool(_names(state / DREAM_DIR / "runs"))
    )


def _only_state_inside(state: Path) -> bool:
    """True when every folder in `state` is a state folder's: it can move as a whole."""
    try:
        with os.scandir(state) as listing:
            return all(
                entry.name in STATE_FOLDERS or not entry.is_dir(follow_symlinks=False)
                for entry in listing
            )
    except OSError:
        return False


def _confirms(state: Path, folder: Path) -> bool:
    """True unless what `state` holds (dream runs, counted ids) contradicts it being `folder`'s.

    Guards an inode match against a reused inode: the runs must have their
    reports in the folder, and some of the counted ids must be its memories.
    """
    runs = set(_names(state / DREAM_DIR / "runs"))
    if runs and not runs & _report_ids(folder):
        return False
    try:
        counted = json.loads((state / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        counted = {}
    ids = [key for key in counted if isinstance(key, str)] if isinstance(counted, dict) else []
    return not ids or any(_is_memory_file(folder, key) for key in ids[:_MAX_IDS_CHECKED])


def _is_memory_file(folder: Path, memory_id: str) -> bool:
    parts = memory_id.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    return os.path.isfile(folder.joinpath(*parts[:-1], parts[-1] + ".md"))


def read_memory(folder: MemoryFolder, path: Path) -> Seen:
    """The one checked read of a file in the memory folder.

    A regular file inside the folder (a symlink that leads outside is refused),
    opened without blocking (a FIFO is refused, never waited on), at most
    MAX_FILE_BYTES. Raises FileNotFoundError when there is no file, InvalidId
    for a path leading outside, InvalidMemory for a file that cannot be read.
    """
    from ..memory.coercion import MAX_FILE_BYTES

    folder.check_contained(path)
    return read_file(path, limit=MAX_FILE_BYTES, what="; not indexed")
