"""`sage-mem sync`: commit what changed, fetch, integrate, push; safe to run at any time.

1. **Finish what a killed sync left**: git's lock files left by a sync that is
   no longer running (its record in the state folder, `sync.json`, names a
   process that is gone) are removed; a merge it left half done (`MERGE_HEAD`
   the commit its record says it was merging) is resolved and committed as
   below; the temp files of writes that were killed before their rename
   (`safe_io.leftover_temps`) are removed. A merge, rebase or cherry-pick a
   person started is theirs to finish: sync refuses and touches nothing (a
   resolution they typed is never replaced).
2. **Commit** every change in the folder (edits by sage-mem, by hand, by
   `git pull`), in one commit whose message names the memories and whose
   trailer names the machine, except files the secret scan flags
   (`checks/credentials.py`, the audit's `secret` check): those are held back,
   named in the result, and stay on this machine, uncommitted. `MEMORY.md` is
   made again first, from what changed since the last commit sync recorded
   (`index_file`); a clean work tree at that commit makes and commits nothing.
3. **Fetch** `origin`. Offline or a failing remote ends the sync here with the
   local commit made and the reason in `offline`; the next sync pushes it.
4. **Integrate** with `git merge` (never a rebase: nothing already committed
   is rewritten). Memory files both sides changed go through the merge
   driver; what git itself leaves unmerged is resolved by the same rules:
   an edit against a deletion keeps the edit, each side's file kept when
   only one side has it, both sides' versions merged or kept as a conflict
   sibling. A memory archived on one side and edited on the other comes back
   out of `archive/` with the edit (`MemoryStore.restore`). `MEMORY.md` is
   regenerated from the merged memories, never merged. A merge that fails
   (git refusing its commit: a signing that fails, a hook) is undone with
   `git merge --abort` and the error said: never left half done.
5. **Push** to `origin`, unless the outgoing commits hold a blob the secret
   scan flags (one committed by hand): then nothing is pushed, and the file is
   named. A push that lost a race with another machine fetches and integrates
   again (three times at most).

Every step is a git command that either happened or did not, so a sync killed
at any point (SIGKILL, a power cut) leaves committed history, a merge in
progress or work-tree changes, and the next sync takes each of those as it
comes: nothing is lost. One sync runs at a time in a folder (`sync.lock` in
the state folder).

Why one module: the five steps are one `_Sync`, which carries what each step
learnt for the next (the git answers it keeps, the record of a killed sync,
the bytes already scanned for secrets); what stands on its own is elsewhere
(`git`, `index_file`, `batch_merge`, `merge_later`, `merge_driver`, `history`, `auto`),
and a reader follows a sync, and its recovery after a kill, top to bottom here.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..disk.folder import ARCHIVE_DIR, DREAM_DIR, INDEX_FILE, MemoryFolder
from ..disk.locks import file_lock, read_generation
from ..disk.safe_io import (
    Seen,
    atomic_write,
    conflict_sibling,
    create,
    file_mode,
    leftover_temps,
    make_dirs,
    move,
    remove,
    rewrite,
)
from ..errors import FileChanged, FolderError, SageMemError
from . import index_file
from .git import (
    ALLOW_SECRET_ENV,
    CHECKED_ENV,
    DRIVER,
    MACHINE_TRAILER,
    NO_DRIVER,
    REMOTE,
    THEIRS_ENV,
    Git,
    LinkRefused,
    SyncError,
    ensure_setup,
    error_line,
    git_environment,
    is_object_id,
    local_remote,
    quoted_paths,
    read_in_tree,
    shown_url,
)
from .index_file import Made, regenerate

if TYPE_CHECKING:
    from ..disk.template import InitResult, NewFolderStore

# Imported where used: the secret scan's patterns (10 ms to compile), the merge's rules,
# MEMORY.md's lines are not needed by a sync that has nothing to commit or merge.

SYNC_LOCK = "sync.lock"
SYNC_RECORD = "sync.json"
PUSH_ATTEMPTS = 3
_MAX_SCANNED = 8 << 20
_GIT_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "MERGE_HEAD.lock", "config.lock",
              "packed-refs.lock", "FETCH_HEAD.lock")
Progress = Callable[[str], None]
# How git says a push lost a race with another machine's: behind it when it arrived, or
# the remote's ref moved while it was being updated.
_RACES = ("(fetch first)", "(non-fast-forward)", "cannot lock ref", "(failed to update ref)")
# git's warning (exit 0) when a fetch from a shallow remote (`git clone --bare --depth 1`)
# would cut this repository's history: the remote's branch is then not fetched at all.
_SHALLOW_REFUSED = b"shallow roots are not allowed to be updated"
_LOCKED = _RACES[2:]  # the remote's ref was locked: by another push, or left by a killed one


def _merge_settings() -> tuple[str, ...]:
    """Both of sync's merges: renames followed (a memory moved on one side keeps the other's
    edit), but no folder taken for renamed: a restore that empties `archive/` is no move of
    `archive/` to the top, and git so taking it moved the other side's archive of a memory
    onto this side's edit of it, and the merge held that memory under no name (git 2.39).
    The driver that merges nothing (`NO_DRIVER`): every file both sides changed is merged in
    this process."""
    return ("-c", "merge.renames=true", "-c", "merge.directoryRenames=false",
            "-c", f"merge.{DRIVER}.driver={NO_DRIVER}")


class Held(NamedTuple):
    """A file sync did not commit, and why (a secret, or too big to check)."""

    path: str
    reason: str

    @property
    def shown(self) -> str:
        """The path as it may be shown: a secret in the file name masked."""
        from ..checks.credentials import redact_name

        return redact_name(self.path)

    def to_dict(self) -> dict[str, str]:
        return {"path": self.shown, "reason": self.reason}


class SyncResult:
    """What one sync did.

    A plain class, as `Held` is a NamedTuple: `dataclasses` imports `inspect` (with `ast`,
    `dis`, `tokenize`): ~10 ms of a sync with nothing to do, ~0.13 s of CPU at 10,000
    memories."""

    def __init__(self, root: Path, machine: str, remote: str | None = None) -> None:
        self.root = root
        self.machine = machine
        self.remote = remote
        self.committed: list[str] = []
        self.pulled: list[str] = []
        self.pushed: list[str] = []
        self.conflicts: list[str] = []
        self.restored: list[str] = []
        self.held_back: list[Held] = []
        self.push_refused: list[Held] = []
        self.offline: str | None = None
        self.notes: list[str] = []

    def summary(self) -> str:
        """One line: `pulled 3, pushed 2, 1 conflict kept as user_cat.conflict-laptop`."""
        parts = [f"pulled {len(self.pulled)}", f"pushed {len(self.pushed)}"]
        if self.conflicts:
            count = len(self.conflicts)
            parts.append(f"{count} conflict{'s' if count > 1 else ''} kept as "
                         + ", ".join(self.conflicts))
        if self.restored:
            parts.append("back from the archive (edited elsewhere): " + ", ".join(self.restored))
        if self.held_back:
            parts.append("not committed (a secret, a link, ignored or unreadable): "
                         + ", ".join(h.shown for h in self.held_back))
        if self.push_refused:
            parts.append("push refused, a secret in a commit: "
                         + ", ".join(h.shown for h in self.push_refused))
        if self.remote is None:
            parts.append(f"committed {len(self.committed)}, no remote "
                         "(set one: sage-mem sync --remote URL)")
        elif self.offline:
            parts.append(f"committed {len(self.committed)}, not synced: {self.offline}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "machine": self.machine,
            "remote": shown_url(self.remote),
            "committed": self.committed,
            "pulled": self.pulled,
            "pushed": self.pushed,
            "conflicts": self.conflicts,
            "restored": self.restored,
            "heldBack": [h.to_dict() for h in self.held_back],
            "pushRefused": [h.to_dict() for h in self.push_refused],
            "offline": self.offline,
            "notes": self.notes,
            "summary": self.summary(),
        }

    def format_text(self) -> str:
        lines = [f"note: {note}" for note in self.notes]
        lines += [f"not committed: {h.shown}: {h.reason}" for h in self.held_back]
        lines += [f"not pushed: {h.shown}: {h.reason}" for h in self.push_refused]
        return "".join(line + "\n" for line in [*lines, self.summary()])


def sync(
    root: Path | str, *, remote: str | None = None, push: bool = True,
    progress: Progress | None = None, allow_secret: bool = False,
    checked_out: Callable[[Path, int], None] | None = None,
) -> SyncResult:
    """Sync the memory folder at `root` with its remote (see the module docstring).

    With `remote`, `origin` is set to it first; a folder that is not yet a
    repository is then made one (`init --git`). Raises SyncError when the
    folder is not a repository of its own, or git fails in a way a later sync
    cannot finish. `checked_out(root, memories)` is called as soon as a join has
    checked out the remote's branch (`take_remote`), before `MEMORY.md` is made of
    what came: the index's build then starts beside the rest of the join.
    """
    remote = local_remote(remote)
    folder = MemoryFolder(root)
    git = Git(folder.root)
    joining = not git.is_repository()
    if joining:
        if remote is None:
            raise SyncError(
                f"{folder.root}: not a git repository; set it up with "
                "`sage-mem sync --remote URL` (or `sage-mem init --git`)"
            )
        from ..disk.template import init_folder

        init_repository(init_folder(folder.root, _open_store,
                                    regenerate=lambda new: regenerate(new, git)),
                        remote, commit=False, git=git)
    folder.check_exists()
    top = git.toplevel
    if os.path.realpath(top) != os.path.realpath(folder.root):
        raise SyncError(
            f"{folder.root}: inside the repository {top}; sync works on a memory folder "
            "that is a repository of its own"
        )
    with file_lock(folder.state_dir / SYNC_LOCK, timeout=60):
        run = _Sync(folder, git, progress or (lambda _: None), allow_secret)
        run.checked_out = checked_out
        record = folder.state_dir / SYNC_RECORD
        run.recover_locks(record)
        run.check_idle()
        run.write_record()
        try:
            return run.run(remote, push, joining=joining)
        finally:
            # A merge still half done (an error inside it) keeps the record naming it,
            # so that the next sync finishes it rather than take it for a person's.
            if not (git.git_dir / "MERGE_HEAD").exists():
                try:
                    record.unlink()
                except OSError:
                    pass


def _open_store(root: Path) -> NewFolderStore:
    """The store of a folder a join makes a memory folder of, when it holds memories
    already (imported only then: a new folder's MEMORY.md is sync's own)."""
    from ..store import MemoryStore

    return MemoryStore(root, watch=False)


def held_back(root: Path | str) -> list[Held]:
    """The changed files the next sync would hold back (a secret, too big to check), read
    only: `git status` and the secret scan, nothing staged or committed (`sage-mem doctor`)."""
    folder = MemoryFolder(root)
    run = _Sync(folder, Git(folder.root), lambda _: None)
    return run.scan(run.changed_files())


def first_commit(root: Path, remote: str | None = None) -> str | None:
    """Set up a new repository for sync and commit the folder as it is (`init --git`)."""
    folder = MemoryFolder(root)
    git = Git(folder.root)
    run = _Sync(folder, git, lambda _: None)
    ensure_setup(git, folder.root)
    if remote:
        run.set_remote(remote)
    run.commit_local(run.result, message="sage-mem: a new memory folder")
    return git.head()


GITATTRIBUTES = "* text=auto eol=lf\n*.md text eol=lf merge=sage-mem\n"
# A write killed mid-way leaves its temp file (a dot-file, never a memory).
GITIGNORE = "# temp files of interrupted sage-mem writes\n.*.tmp\n"


def init_repository(result: InitResult, remote: str | None = None, *,
                    commit: bool = True, git: Git | None = None) -> None:
    """Make the folder `init_folder` made a repository (`init --git`), noting it in `result`.

    A new repository is on `main` with a first commit (`first_commit`; without
    `commit`, set up for sync with nothing committed: a join's, whose first
    sync takes the remote's branch or commits the folder); an existing one is
    only set up for sync: its branch and history are theirs. `git`: the caller's
    `Git` of the folder, whose answers are then kept.
    """
    remote = local_remote(remote)
    root = result.root
    mode = file_mode(root)
    result.gitattributes_written = _create_if_absent(root / ".gitattributes", GITATTRIBUTES, mode)
    _create_if_absent(root / ".gitignore", GITIGNORE, mode)
    if (root / ".git").exists():
        # Someone's repository: set up for sync, but its branch and history are theirs.
        repository = Git(root)
        ensure_setup(repository, root)
        if remote and repository.remote_url() != remote:
            repository.run("remote", "set-url" if repository.remote_url() else "add", "origin",
                           remote)
        result.remote = repository.remote_url()
        return
    # Every object git stores is a copy of a memory: as private as the folder, whatever
    # the umask (git applies this to everything it creates in the repository, later too).
    shared = "0660" if mode == 0o660 else "0600"
    try:
        subprocess.run(
            ["git", "init", "--quiet", "--initial-branch=main", f"--shared={shared}", str(root)],
            check=True, capture_output=True, text=True, env=git_environment(),
        )
    except FileNotFoundError:
        raise FolderError("`--git` needs git, and git is not installed") from None
    except subprocess.CalledProcessError as exc:
        message = (exc.stderr or "").strip().splitlines()
        raise FolderError(f"git init failed: {message[-1] if message else exc}") from None
    result.git_initialized = True
    if commit:
        result.first_commit = first_commit(root, remote)
    else:
        git = git or Git(root)
        ensure_setup(git, root)
        if remote:
            git.run("remote", "add", REMOTE, remote)
    result.remote = remote


def _create_if_absent(path: Path, text: str, mode: int) -> bool:
    """Create `path` holding `text` unless something is there; True when it was created."""
    if os.path.lexists(path):
        return False
    try:
        create(path, text.encode("utf-8"), mode=mode)
    except FileChanged:
        return False
    return True


def memory_ids(paths: Iterable[str]) -> list[str]:
    """The memory ids among repository paths (archived ones as `archive/…`)."""
    ids = []
    for path in paths:
        if not path.endswith(".md") or path == INDEX_FILE or path.partition("/")[0] == DREAM_DIR:
            continue
        if path.startswith(".") or "/." in path:  # a part of it a dot-file or dot-folder
            continue
        ids.append(path[:-3])
    return sorted(set(ids))


# git's conflict markers, at the start of a line: what a merge without the driver leaves.
_MARKERS = re.compile(rb"^<{7}(?: |$).*^>{7}(?: |$)", re.MULTILINE | re.DOTALL)
LINK_REASON = ("a symbolic link; sync never commits one (another machine's read would "
               "follow it): replace it with a file")
REPOSITORY_REASON = ("a git repository of its own; sync never commits one (git would commit "
                     "it as a submodule, none of its files): move its .git away")


_LINK_MODE = "120000"  # a symbolic link, in a tree
_GITLINK_MODE = "160000"  # a submodule's commit, in a tree


# An attribute set (not unset: `-working-tree-encoding`) that has git re-encode a file on
# checkout: the memories, written as UTF-8, could then never be committed again.
_REENCODES = re.compile(rb"(?m)^[^#\n]*[ \t]working-tree-encoding=")
# A filter names a program of this machine's git config (git-lfs's, set up for other work) run
# on every file it matches as it is checked out or committed: the memories would be stored as
# what it makes of them (pointer files), or, the program gone, every checkout and status fail.
_FILTERS = re.compile(rb"(?m)^[^#\n]*[ \t]filter=")
# sage-mem's own names at the top of the folder: a file each, a folder each. A remote's commit
# making one the other (`MEMORY.md/user_x.md`, a file `archive`) is refused as a link is.
# git's warning (its C locale) for a folder of the work tree it may not open: it passes over
# it, so the memories in it are neither committed nor found changed.
_UNOPENED = re.compile(rb"could not open directory '([^'\n]+)': Permission denied")
_UNLISTED_REASON = ("a folder this process may not list (no permission): the memories in it are "
                   "not committed; give it back read permission (chmod u+rx), then sync")
_OWN_FILES = frozenset({INDEX_FILE, ".gitattributes", ".gitignore"})
_OWN_FOLDERS = frozenset({ARCHIVE_DIR, DREAM_DIR})
_NAME_MAX = 255  # bytes in one path part: what Linux, macOS and Windows file systems hold
_OWN_NAMES = _OWN_FILES | _OWN_FOLDERS
_REGULAR_MODES = frozenset({"100644", "100755"})


def _shown(text: str) -> str:
    """Text from a remote, as one printable line of at most 120 characters."""
    return text.encode("unicode_escape").decode("ascii")[:120]


def _inside(path: str) -> bool:
    """A tree path git may check out inside the folder: relative, no `..`, no `.git`."""
    parts = path.replace("\\", "/").split("/")
    return not path.startswith("/") and all(
        part not in ("", ".", "..") and part.lower().rstrip(". ") != ".git" for part in parts)


# git's line when `fetch.fsckObjects` refused an object: `error: object ID: CHECK: WHAT`.
_FSCK_ERROR = re.compile(r"error: object ([0-9a-f]+): (\w+: [^\n]*)")


def _plainly_safe(mode: str, path: str) -> bool:
    """A file of a remote's tree `_Sync.unsafe_entry` has nothing to say of, told by a few
    tests of its text (a join checks 10,000: ~0.02 s less than the whole check of each):
    a regular file, at most 255 bytes of path (no part longer), no part of it empty or
    starting with a dot (`.`, `..` and every `.git` `_inside` refuses start with one; so
    does `.gitattributes`, the one file read), no backslash, no sage-mem name at its top.
    False says nothing: the whole check decides."""
    return (mode in _REGULAR_MODES and path != "" and "\\" not in path
            and path[0] not in "./" and "/." not in path and "//" not in path
            and path[-1] != "/" and path.partition("/")[0] not in _OWN_NAMES
            and (len(path) <= _NAME_MAX // 4 or len(os.fsencode(path)) <= _NAME_MAX))


def _git_like(path: str) -> bool:
    """A path with a part another file system takes for `.git` (`git~1`, the 8.3 name;
    `.git::$INDEX_ALLOCATION`, a stream): git refuses them when fetched."""
    return any(part.lower().rstrip(". ") == "git~1" or part.lower().startswith(".git:")
               for part in path.split("/"))


def _refused_why(path: str) -> str:
    """Why a path `_inside` or `_git_like` refuses may not be checked out, in a few words."""
    parts = path.replace("\\", "/").split("/")
    if _git_like(path) or any(part.lower().rstrip(". ") == ".git" for part in parts):
        return "a `.git` in it: git would take what it holds for a repository's own files"
    return "it leads outside the folder"


def _may_hold_temps(path: str) -> bool:
    """Whether `git status` naming this path (changed, untracked or ignored) may mean a temp
    file a killed write left (`.name.PID.hex.tmp`): one, or a folder git did not look into
    (another repository). A status naming none spares the walk of the folder that finds
    them."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return path.endswith("/") or (name.startswith(".") and name.endswith(".tmp"))


def name_reason(path: str) -> str | None:
    """Why a file of this name may not leave the machine (a secret in it), or None."""
    from ..checks.credentials import find_secrets_in_name

    for match in find_secrets_in_name(path):
        return (f"the file name holds a possible {match.label} "
                f"{match.excerpt_redacted}")
    return None


def secret_reason(data: bytes) -> str | None:
    """Why these bytes may not leave the machine (the audit's secret check), or None."""
    from ..checks.credentials import decoded_secrets, find_secrets
    from ..memory.file_format import parsed_or_none

    if len(data) > _MAX_SCANNED:
        return f"over {_MAX_SCANNED >> 20} MB, not checked for secrets"
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    for match in find_secrets(text):
        return (f"line {match.line}: possible {match.label} "
                f"{match.excerpt_redacted}")
    if "\\" in text:  # an escape: YAML may decode what the text does not show
        parsed = parsed_or_none(data)
        if parsed is None:
            return None
        for key, match in decoded_secrets(text, parsed.meta):
            return (f"{key}: possible {match.label} "
                    f"{match.excerpt_redacted}, spelled with escapes")
    return None


def _blob_ids(changes: list[tuple[str, str, str, str, str]]) -> list[str]:
    """The blobs `changes` (`Git.blob_changes`) name, both sides, an absent file's none."""
    return [blob for _, _, old, new, _ in changes for blob in (old, new) if blob.strip("0")]


class _Sync:
    def __init__(self, folder: MemoryFolder, git: Git, progress: Progress,
                 allow_secret: bool = False) -> None:
        self.allow_secret = allow_secret  # `sync --allow-secret`: nothing held back
        self.folder = folder
        self.root = folder.root
        self.git = git
        self.progress = progress
        self.machine = git.machine()
        self.result = SyncResult(self.root, self.machine)
        self.record = folder.state_dir / SYNC_RECORD
        self.left_merging: str | None = None  # the merge a killed sync left, per its record
        self.theirs: str | None = None  # the commit being merged in, while sync writes it
        self.parked: dict[str, str] = {}  # held-back files moved aside for a merge: aside -> path
        self.made: Made | None = None  # what the last regeneration of MEMORY.md read
        # Blob ids of the bytes this sync scanned and found no secret in, and the paths
        # whose names it checked and found none in: its push need not check them again
        # (the same bytes or name, the same answer).
        self.clean_blobs: set[str] = set()
        self.clean_names: set[str] = set()
        # The commit at which this sync's `git status` showed a clean work tree, the
        # folder's write count read before that status, and the files it named ignored:
        # what a merge git commits by itself needs no second status of (`status_after_merge`).
        self.clean: tuple[str, int, list[str]] | None = None
        # git's line when the remote refused to update its branch (its ref was locked):
        # a race, unless it stays so on every attempt (a killed push left the lock).
        self.ref_refused: str | None = None
        self.checked_out: Callable[[Path, int], None] | None = None  # see `sync`

    # 1. what a killed sync left

    def write_record(self, merging: str | None = None) -> None:
        """`sync.json`: this process, and the commit it is merging (a merge it started)."""
        record: dict[str, Any] = {"pid": os.getpid()}
        if merging:
            record["merge"] = merging
        atomic_write(self.record, json.dumps(record).encode())

    def recover_locks(self, record: Path) -> None:
        try:
            previous = json.loads(record.read_bytes())
            pid = int(previous["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        from ..disk.processes import process_alive

        if process_alive(pid):
            return
        merging = previous.get("merge")
        self.left_merging = merging if isinstance(merging, str) else None
        git_dir = self.git.git_dir
        locks = [git_dir / name for name in _GIT_LOCKS]
        locks += list((git_dir / "refs").rglob("*.lock"))
        deadline = time.monotonic() + 2.0  # a git the killed sync started may still finish
        while any(p.exists() for p in locks) and time.monotonic() < deadline:
            time.sleep(0.05)
        for lock in locks:
            try:
                lock.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise SyncError(f"{lock}: left by a killed sync, cannot remove it: {exc}") from None
            self.result.notes.append(f"removed {lock.name}, left by a sync that was killed")

    def remove_leftover_temps(self) -> None:
        """Clear the temp files of writes that were killed (a merge driver's, an agent's)."""
        removed = 0
        for path in leftover_temps(self.root):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                self.result.notes.append(f"{path.name}: left by a killed write, not removed: "
                                         f"{exc.strerror}")
                continue
            removed += 1
        if removed:
            self.result.notes.append(f"removed {removed} temporary file{'s' * (removed > 1)} "
                                     "left by killed writes")

    def check_idle(self) -> None:
        """Refuse while a person's own git operation is half done: it is theirs to finish."""
        git_dir = self.git.git_dir
        for name, what in (("rebase-merge", "rebase"), ("rebase-apply", "rebase or am"),
                           ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"),
                           ("BISECT_LOG", "bisect")):
            if (git_dir / name).exists():
                raise SyncError(f"{self.root}: a git {what} is in progress; finish or abort it, "
                                "then sync")
        gitlink = self.git.gitlink()
        if gitlink is not None:
            # Already here (a plain clone, a merge before sync refused them): git takes
            # every file below it for another repository's, so a memory written there
            # would go into no commit, said nowhere.
            shown = _shown(gitlink)
            raise SyncError(f"{self.root}: {shown} is a submodule (a gitlink); sync never "
                            "commits below one (a memory there would reach no other machine): "
                            f"remove it (git rm --cached {shown} && git commit), then sync")
        reshaped = self.own_file_reshaped()
        if reshaped is not None:
            raise SyncError(f"{self.root}: {reshaped}")
        if self.git.head_ref() is None:
            raise SyncError(f"{self.root}: HEAD is detached; check out a branch (git switch main), "
                            "then sync")
        if (git_dir / "MERGE_HEAD").exists() and self.git.rev("MERGE_HEAD") is None:
            # git was killed writing MERGE_HEAD: `commit_changes` undoes the merge, if no
            # person typed into its files (nor may git finish it: no second parent)
            if self.left_merging is None and not self.left_by_plain_git():
                raise SyncError(f"{self.root}: a git merge was left half done and its MERGE_HEAD "
                                "names no commit; undo it (git merge --abort), then sync")
        elif (git_dir / "MERGE_HEAD").exists() and (
                self.left_merging is None or self.git.rev("MERGE_HEAD") != self.left_merging):
            if not self.left_by_plain_git():
                raise SyncError(f"{self.root}: a git merge is in progress; finish it (git add, "
                                "git commit) or abort it (git merge --abort), then sync")
            self.left_merging = self.git.rev("MERGE_HEAD")
            self.result.notes.append("finishing the merge a plain git pull left (its conflicts "
                                     "resolved as sync resolves them)")

    def left_by_plain_git(self) -> bool:
        """Whether the merge in progress is one plain git stopped, nothing typed into it yet:
        each unmerged file still holds git's conflict markers, or ours untouched (a merge
        driver that failed: a fresh clone has none configured, or its Python moved). Sync
        finishes such a merge from git's own stages; one a person resolved a file of (and
        has yet to add) stays theirs."""
        from .batch_merge import unmerged as unmerged_paths

        unmerged = unmerged_paths(self.git)
        if not unmerged:
            return False
        for path, stages in unmerged.items():
            try:
                now = read_in_tree(self.root, path, limit=_MAX_SCANNED).raw
            except SyncError:
                return False
            if now is None or _MARKERS.search(now):
                continue
            if 2 in stages and now == self.git.run("cat-file", "blob", stages[2]).stdout:
                continue
            return False
        return True

    def run(self, remote: str | None, push: bool, *, joining: bool = False) -> SyncResult:
        result = self.result
        ensure_setup(self.git, self.root)
        result.notes.extend(n for n in self.git.notes if n not in result.notes)
        generation = read_generation(self.folder.state_dir)  # before the status: a write
        status: tuple[dict[str, str], list[str]] | None = self.status()  # after it shows
        assert status is not None
        if remote:
            self.set_remote(remote)
        # Nothing committed yet (a join): the remote's branch checked out, when the folder
        # holds nothing else (`take_remote`, which fetches first).
        fetched = (status is not None and self.git.head() is None
                   and not (self.git.git_dir / "MERGE_HEAD").exists()
                   and self.take_remote(status))
        if result.offline:
            result.remote = self.git.remote_url()  # a join that could not fetch: not "no remote"
            return result
        if not fetched:
            self.commit_changes(status, generation)
        result.remote = self.git.remote_url()
        if result.remote is None:
            return result
        for attempt in range(PUSH_ATTEMPTS):
            if not (fetched and attempt == 0) and not self.fetch():
                return result
            if joining or self.git.config(f"branch.{self.git.branch()}.remote") is None:
                self.take_remote_branch()  # a branch never synced yet
                joining = False
            self.integrate()
            if not push or self.push():
                break
        else:
            result.offline = (
                f"pushing to {REMOTE} lost the race with another machine "
                f"{PUSH_ATTEMPTS} times; sync again" if self.ref_refused is None else
                f"pushing to {REMOTE} failed {PUSH_ATTEMPTS} times: the remote could not update "
                f"its branch ({self.ref_refused}); if no other push to it is running, a push "
                f"killed there left `refs/heads/{self.git.branch()}.lock` in the remote's git "
                "folder: remove that file and sync again")
        return result

    def commit_changes(self, status: tuple[dict[str, str], list[str]] | None,
                       generation: int) -> None:
        """Step 2 (and 1's merge left half done): commit what changed since the last commit,
        MEMORY.md made first. `status`: the `git status` taken after the folder's write
        count `generation` was read."""
        result = self.result
        if status is not None and any(_may_hold_temps(path) for paths in status
                                      for path in paths):
            self.remove_leftover_temps()
            status = None
        if (self.git.git_dir / "MERGE_HEAD").exists():
            head = self.git.head()
            theirs = self.git.rev("MERGE_HEAD")
            if theirs is None:
                self.undo_unnamed_merge()
            else:
                result.notes.append("finished a merge a previous sync left half done")
                self.finish_merge(head, theirs, own=False)
            status = None
        if status is None:
            status = self.status()
        self.name_ignored(status[1])
        if not self.nothing_changed(status):
            # Hand edits since the last write reach MEMORY.md; the commit takes a status of
            # its own, so that a memory saved while MEMORY.md was made goes with it.
            self.regenerate_index(status)
            first = self.git.head() is None  # a join's folder that held memories already
            self.commit_local(result, message="sage-mem: a new memory folder" if first else None)
            self.stamp_index()
        elif (head := self.git.head()) is not None:
            self.clean = (head, generation, status[1])

    def name_ignored(self, ignored: list[str]) -> None:
        """Hold back, by name and rule, each memory git ignores: it never leaves this machine
        (a `.gitignore` of `*.md` from the remote hid every new memory, `pushed 0`, said
        nowhere). One `git check-ignore` only when git ignores a memory.

        A folder git names whole (`team/`: one git does not look into, a repository of its
        own, under a rule such as `*` or its own path) is named once, in one line, when it
        holds a memory."""
        memories = [p for p in ignored if (self.is_memory(self.root / p)
                                           if not p.endswith("/") else self.holds_memory(p))]
        if not memories:
            return
        # check-ignore refuses the literal pathspecs every other command is run with
        done = self.git.run("--no-literal-pathspecs", "check-ignore", "-v", "-z", "--stdin",
                            input=quoted_paths(memories), check=False)
        fields = done.stdout.split(b"\0")
        for source, line, pattern, path in zip(fields[::4], fields[1::4], fields[2::4],
                                               fields[3::4], strict=False):
            rule = _shown(f"{os.fsdecode(source)}:{line.decode()}: {os.fsdecode(pattern)}")
            name = os.fsdecode(path)
            what = ("it never leaves this machine" if not name.endswith("/") else
                    "it and the memories in it never leave this machine (and git does not "
                    "look into it: a git repository of its own)"
                    if os.path.lexists(self.root / name / ".git") else
                    "it and the memories in it never leave this machine")
            item = Held(name, f"ignored by git ({rule}), so {what}: take it out of that rule "
                        "(or git add -f it), then sync")
            if item not in self.result.held_back:
                self.result.held_back.append(item)

    def is_memory(self, path: Path) -> bool:
        """Whether `path` is a memory's file, archived or not."""
        return (self.folder.id_for(path) is not None
                or self.folder.archived_id_for(path) is not None)

    def holds_memory(self, folder: str) -> bool:
        """Whether a folder git names whole (`team/`, `archive/`) holds a memory file, archived
        or not, at any depth (no link followed, no `.git` folder looked into)."""
        for top, folders, files in os.walk(self.root / folder):
            folders[:] = [name for name in folders if name != ".git"]
            if any(self.is_memory(Path(top, name)) for name in files):
                return True
        return False

    def nothing_changed(self, status: tuple[dict[str, str], list[str]] | None) -> bool:
        """Whether the work tree is the last commit's, and MEMORY.md known to be what a
        regeneration makes of it (`index_file.current`): nothing to make or commit. One `git
        status` (`status`, when the caller has it), not a walk of the folder and ~10 git
        commands."""
        changed, ignored = status or self.status()
        if changed or any(self.is_memory(self.root / p) for p in ignored):
            return False  # a memory git ignores is named at every sync, and changes unseen
        return index_file.current(self.folder, self.git.head())

    def stamp_index(self) -> None:
        """After a commit: record that its MEMORY.md is what the regeneration just before it
        made of its memories, if that read exactly them (`index_file.stamp`)."""
        head = self.git.head()
        if self.made is None or head is None:
            return
        base = self.made.base
        # From the last record and a diff when the regeneration started from one: a receive
        # changes a few files of 10,000, and `git ls-tree` of them all is ~20 ms of CPU.
        only = None
        if base is not None:
            changes = self.git.changes(base[0], head)
            tree = index_file.known_tree(base, changes)
            only = index_file.stamp_paths(self.made, changes)
        else:
            tree = self.git.tree(head)
        if not index_file.stamp(self.folder, self.made, head, tree, only):
            index_file.forget(self.folder)

    def set_remote(self, url: str) -> None:
        current = self.git.remote_url()
        if current == url:
            return
        self.git.run("remote", "set-url" if current else "add", REMOTE, url)

    # 2. commit

    def commit_local(self, result: SyncResult, *, message: str | None = None,
                     merging: bool = False, changed: dict[str, str] | None = None) -> None:
        """Commit the changed files (`changed`: path -> `git status` letters, when the
        caller knows them) but those held back."""
        if changed is None:
            changed = self.changed_files()
        if not changed and not merging:
            return  # `git status` lists every staged change too: nothing to commit
        changed = {p: s for p, s in changed.items() if p not in self.parked}
        held = self.scan(self.not_theirs(changed) if merging else changed)
        index_flagged = any(h.path == INDEX_FILE for h in held) and self.generated_index()
        if index_flagged:  # its lines are the memories': staged below without the held ones
            held = [h for h in held if h.path != INDEX_FILE]
        held_paths = {h.path for h in held}
        for item in held:
            if item not in result.held_back:
                result.held_back.append(item)
        staged_held = [p for p in held_paths if self.is_staged(p)]
        if staged_held:
            self.unstage(staged_held)
        taken = [p for p in changed if p not in held_paths]
        # Only what the work tree has that the index lacks: a deletion already staged (`git
        # mv`, `git rm`) or a file a merge staged as it is has nothing to add, and git
        # matches each path given against every file (a join's 10,000: 2 s).
        to_add = [p for p in taken if changed[p][1] != " "]
        held_ids = set(memory_ids(held_paths))
        if (held_ids or index_flagged) and INDEX_FILE in to_add:
            by_line = self.stage_index_without(held_ids)
            if by_line is not None:
                to_add.remove(INDEX_FILE)
                for item in by_line:  # held for its line in MEMORY.md alone
                    if item.path in to_add:
                        to_add.remove(item.path)
                    if item.path in taken:
                        taken.remove(item.path)
                    if self.is_staged(item.path):
                        self.unstage([item.path])
        if to_add:
            self.git.stage(to_add)
        if not merging and self.git.ok("diff", "--cached", "--quiet"):
            return
        ids = memory_ids(taken)
        if message is None:
            self.progress(f"committing {len(taken)} changed files")
            named = ids or taken
            message = "sync: " + ", ".join(named[:3]) + (
                f" and {len(named) - 3} more" if len(named) > 3 else "")
        body = "\n".join(taken[:200]) or "(no file changed)"
        self.git.commit(message, "-m", body, "-m", f"{MACHINE_TRAILER}: {self.machine}")
        already = set(result.committed)  # a set: a join commits 10,000 ids
        result.committed.extend(i for i in ids if i not in already)

    def stage_index_without(self, held: set[str]) -> list[Held] | None:
        """Stage a sage-mem MEMORY.md that does not list the memories held back.

        Its entries would name them to the remote, and every other machine
        would drop them again at its next sync: a commit each way, every sync.
        The work tree keeps its full MEMORY.md (a file sage-mem regenerates,
        which `integrate` may set back to the staged one before a merge).
        None for a MEMORY.md someone wrote (theirs, committed as it is).

        MEMORY.md is made from the memories, so a false alarm in it never holds the
        whole index back: a memory whose line reads as a secret (a title ending in 密码
        before its link) while its own file does not is held back alone, named, and
        left out of the staged index; what is returned. Only an index still flagged
        without any such line (a category's heading) is held back itself.
        """
        from ..checks.credentials import find_secrets
        from ..memory import catalog

        if not self.generated_index():
            return None
        from ..store import MemoryStore

        with MemoryStore(self.root, watch=False) as store:
            kept = [m for m in store.list() if m.id not in held]
        data = catalog.render(kept).encode("utf-8")
        by_line: list[Held] = []
        if secret_reason(data):
            for memory in kept:
                for match in find_secrets(catalog.entry_line(memory)):
                    path = memory.path.relative_to(self.root).as_posix()
                    by_line.append(Held(path, (
                        f"its line in MEMORY.md reads as a possible {match.label} "
                        f"{match.excerpt_redacted}; rename or retitle it, or sync "
                        "--allow-secret if that is a false alarm")))
                    break
            if by_line:
                left_out = {h.path for h in by_line}
                kept = [m for m in kept
                        if m.path.relative_to(self.root).as_posix() not in left_out]
                data = catalog.render(kept).encode("utf-8")
        for item in by_line:
            if all(h.path != item.path for h in self.result.held_back):
                self.result.held_back.append(item)
        reason = secret_reason(data)
        if reason:
            if self.is_staged(INDEX_FILE):
                self.unstage([INDEX_FILE])
            if all(h.path != INDEX_FILE for h in self.result.held_back):
                self.result.held_back.append(Held(INDEX_FILE, reason))
            return by_line
        blob = self.git.run("hash-object", "-w", "--stdin", input=data).stdout.decode().strip()
        self.git.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{INDEX_FILE}")
        return by_line

    def generated_index(self) -> bool:
        """Whether MEMORY.md is sage-mem's own, regenerated from the memories (not a
        person's, nor one with a person's region in it)."""
        from ..memory import catalog

        try:
            raw = read_in_tree(self.root, INDEX_FILE, limit=_MAX_SCANNED).raw
            text = raw.decode("utf-8") if raw is not None else ""
        except (OSError, SyncError, UnicodeDecodeError):
            return False
        return catalog.NOTE in text and catalog.REGION_BEGIN not in text

    def drop_unstaged_index(self) -> None:
        """Before a merge: a sage-mem MEMORY.md differing from the staged one is set back to it
        (it is regenerated after the merge), so that the merge can take the other side's."""
        if self.git.ok("diff", "--quiet", "--", INDEX_FILE):
            return
        if self.generated_index():
            self.git.run("checkout", "--", INDEX_FILE)

    def changed_files(self) -> dict[str, str]:
        """Each changed path and its two-letter status (`git status --porcelain`)."""
        return self.status()[0]

    def status(self) -> tuple[dict[str, str], list[str]]:
        """Each changed path and its two-letter status (`git status --porcelain`), and the
        files git ignores, with one `git status`."""
        done = self.git.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                            "--no-renames", "--ignored")
        raw = done.stdout
        for folder in _UNOPENED.findall(done.stderr or b""):
            item = Held(os.fsdecode(folder), _UNLISTED_REASON)
            if item not in self.result.held_back:
                self.result.held_back.append(item)
        paths = {}
        ignored = []
        for record in raw.split(b"\0"):
            if len(record) > 3:
                if record[:2] == b"!!":
                    ignored.append(os.fsdecode(record[3:]))
                else:
                    paths[os.fsdecode(record[3:])] = record[:2].decode()
        return dict(sorted(paths.items())), ignored

    def scan(self, paths: Iterable[str]) -> list[Held]:
        """The changed files that may not leave the machine: a secret in the name or the
        bytes (unless `--allow-secret`), and a symbolic link (another machine's sync would
        refuse it; a plain git there would follow it)."""
        held: list[Held] = []
        for path in paths:
            if path.endswith("/"):  # a folder git did not look into: a repository's
                held.append(Held(path, REPOSITORY_REASON))
                continue
            try:
                seen = read_in_tree(self.root, path, limit=_MAX_SCANNED)
            except LinkRefused:
                held.append(Held(path, LINK_REASON))
                continue
            except SyncError as exc:
                held.append(Held(path, f"cannot be checked for secrets: {exc.message}"))
                continue
            if seen.raw is None or self.allow_secret:
                continue  # deleted, or allowed
            reason = (None if path in self.clean_names else name_reason(path)) or \
                secret_reason(seen.raw)
            if reason:
                held.append(Held(path, reason))
            else:
                self.clean_blobs.add(index_file.blob_id(seen.raw))
                self.clean_names.add(path)
        return held

    def not_theirs(self, changed: dict[str, str]) -> list[str]:
        """Of a merge's changed paths, those whose bytes the remote does not already hold:
        the files it brought in leave nothing new on a push, and are not scanned again
        (a join's would be every file of the folder)."""
        if not (self.git.git_dir / "MERGE_HEAD").exists():
            return list(changed)
        # The index against the commit merged in, without a look at the work tree (`git diff
        # MERGE_HEAD` stats every file: ~40 ms at 10,000, this ~5 ms); a file whose work tree
        # differs from the index (`git status`'s second letter, `??` too) is scanned, what
        # the index holds of it aside.
        raw = self.git.run("diff-index", "--cached", "--name-only", "-z", "--no-renames",
                           "MERGE_HEAD", "--").stdout
        differ = {os.fsdecode(p) for p in raw.split(b"\0") if p}
        return [p for p, status in changed.items() if status[1:] != " " or p in differ]

    def is_staged(self, path: str) -> bool:
        if self.git.head() is None:
            return self.git.ok("ls-files", "--error-unmatch", "--", path)
        return not self.git.ok("diff", "--cached", "--quiet", "--", path)

    def unstage(self, paths: list[str]) -> None:
        if self.git.head() is None:
            self.git.run("rm", "--cached", "-q", "--", *paths)
        else:
            self.git.run("reset", "-q", "--", *paths)

    # 3. fetch

    def fetch(self) -> bool:
        self.progress(f"fetching {REMOTE}")
        # --prune: a branch the remote lost (renamed there, the remote made anew) is not
        # taken for there still, which would make the push think it had nothing to send.
        done = self.git.run("fetch", "--quiet", "--prune", REMOTE, check=False)
        if done.returncode == 0 and _SHALLOW_REFUSED in done.stderr:
            # A remote whose history was cut (`--depth`): git fetched none of its branch.
            # A join takes it as `git clone` does, with the history cut where the remote's
            # is; a folder with a history of its own that lacks the remote's cut cannot.
            if self.git.head() is not None:
                self.result.offline = (
                    f"fetching {REMOTE} took nothing: it is a shallow repository (its history "
                    "cut by `--depth`) that this folder's history does not reach; make the "
                    "remote a whole copy (`git fetch --unshallow` in it, or a new one made "
                    "with `git clone --bare` of a whole clone), then sync")
                return False
            done = self.git.run("fetch", "--quiet", "--update-shallow", REMOTE, check=False)
        if done.returncode != 0:
            self.result.offline = (self.refused_when_fetched(done)
                                   or f"fetching {REMOTE} failed: {error_line(done)}")
            return False
        return True

    def refused_when_fetched(self, done: subprocess.CompletedProcess[bytes]) -> str | None:
        """Why git refused what the remote sent (`fetch.fsckObjects`), naming the path: git
        names only an object id and a check (`hasDotgit: contains '.git'`). None when the
        fetch failed for any other reason (offline) or no such path is found.

        The remote's branches are fetched again, unchecked, into a repository of their own
        in the state folder (borrowing this one's objects), whose trees are only listed,
        never checked out, and which is removed at once: the first path sync would refuse
        (`_inside`: `..`, a `.git` part in any case or with trailing dots; git's other
        names of `.git`, `git~1` and `.git:stream`) is named with the commit that brought
        it; failing that, the folder holding the name git refused (its tree's object)."""
        said = (done.stderr or b"").decode("utf-8", "replace")
        check = _FSCK_ERROR.search(said)
        url = self.git.remote_url()
        if check is None or url is None:
            return None
        import shutil
        import tempfile

        refused, why = check.group(1), _shown(check.group(2))
        quarantine = tempfile.mkdtemp(prefix="refused-", dir=self.folder.state_dir)
        try:
            bare = ("--git-dir", quarantine)
            self.git.run(*bare, "init", "--quiet", "--bare", check=False)
            alternates = Path(quarantine, "objects", "info", "alternates")
            alternates.write_text(str(self.git.git_dir / "objects") + "\n", encoding="utf-8")
            unchecked = ("-c", "fetch.fsckObjects=false", "-c", "transfer.fsckObjects=false")
            self.git.run(*bare, *unchecked, "fetch", "--quiet", "--no-tags", url,
                         "+refs/heads/*:refs/heads/*", check=False)
            branches = self.git.run(*bare, "for-each-ref", "--format=%(refname:short)",
                                    "refs/heads/", check=False).stdout.decode().split()
            for branch in branches:
                root = self.git.run(*bare, "rev-parse", f"{branch}^{{tree}}",
                                    check=False).stdout.decode().strip()
                trees = {root: ""}
                path = None
                for entry in self.git.run(*bare, "ls-tree", "-r", "-t", "-z", branch,
                                          check=False).stdout.split(b"\0"):
                    meta, _, raw = entry.partition(b"\t")
                    name = os.fsdecode(raw)
                    if not name:
                        continue
                    if not _inside(name) or _git_like(name):
                        path = name
                        break
                    if meta.split(b" ")[1:2] == [b"tree"]:
                        trees.setdefault(meta.split(b" ")[2].decode(), name + "/")
                if path is None and refused in trees:
                    path = trees[refused]  # a name git refused in this folder ("" the top)
                elif path is None:
                    continue
                found = self.git.run(*bare, "--literal-pathspecs", "log", "-1",
                                     "--format=%h by %an", branch, "--", *([path] if path else []),
                                     check=False).stdout.decode("utf-8", "replace").strip()
                commit = f", from commit {_shown(found)[:80]}" if found else ""
                what = (f"{_shown(path)} is a path sync never checks out ({_refused_why(path)}; "
                        f"git: {why})" if not path.endswith("/") and path else
                        f"a name in {_shown(path) or 'the top folder'} that git refuses ({why})")
                return (f"{REMOTE}/{_shown(branch)} refused when fetched: {what}{commit}: ask "
                        "its author to remove it, then sync")
            return None
        except OSError:
            return None
        finally:
            shutil.rmtree(quarantine, ignore_errors=True)

    def take_remote(self, status: tuple[dict[str, str], list[str]]) -> bool:
        """A folder with nothing committed and nothing in it but what `init` made (MEMORY.md
        listing no memory, `.gitattributes`, `.gitignore`, each as sage-mem wrote it): the
        remote's branch is checked out as it is, as `git clone` would, rather than a first
        commit merged with the remote's unrelated history (a merge commit pushed back by
        every machine that joins). MEMORY.md is then made from the memories checked out
        (the remote's is never taken on trust) and committed only when it differs.

        Fetches first (`result.offline` when that fails); True when the branch was taken,
        False when the usual way follows (the remote has no branch yet, the folder holds
        more, a file of ours differs from the remote's and is not sage-mem's own)."""
        if self.git.remote_url() is None or not self.only_template_files(status):
            return False
        if not self.fetch():
            return False
        branch = self.remote_branch()
        theirs = self.git.rev(f"refs/remotes/{REMOTE}/{branch}") if branch else None
        if branch is None or theirs is None:
            return False
        self.refuse_unsafe(None, theirs, branch)
        tree = self.git.tree(theirs)
        ours = self.git.branch()
        for name in (INDEX_FILE, ".gitattributes", ".gitignore"):
            if name in tree:  # ours, made just now and checked by only_template_files
                try:
                    (self.root / name).unlink()
                except FileNotFoundError:
                    pass
        self.progress(f"checking out {REMOTE}/{branch}")
        self.git.run("checkout", "--quiet", "-B", branch, "--track",
                     f"{REMOTE}/{branch}")
        came = memory_ids(tree)
        if self.checked_out is not None:
            self.checked_out(self.root, len(came))
        if branch != ours:
            self.result.notes.append(f"working on {REMOTE}'s branch {branch!r}")
        # The remote's .gitattributes may lack the merge driver's line: added (and committed).
        attributes = ensure_setup(self.git, self.root)
        self.regenerate_index(({}, []))  # the work tree is the commit's: nothing differs
        changed = {path: " M" if path in tree else "??"
                   for path, differs in ((INDEX_FILE, self.made is not None and self.made.changed),
                                         (".gitattributes", attributes)) if differs}
        self.commit_local(self.result, changed=changed)
        self.stamp_index()
        self.result.pulled.extend(came)
        return True

    def only_template_files(self, status: tuple[dict[str, str], list[str]]) -> bool:
        """Whether the work tree (its `git status`) holds nothing but the files `init` makes
        in a folder without memories, as it made them (nothing a person wrote is in the
        way of a checkout)."""
        changed, ignored = status
        if ignored or not set(changed) <= {INDEX_FILE, ".gitattributes", ".gitignore"}:
            return False
        from ..memory import catalog

        expected = {INDEX_FILE: catalog.render([]).encode("utf-8"),
                    ".gitattributes": GITATTRIBUTES.encode(), ".gitignore": GITIGNORE.encode()}
        for name in changed:
            try:
                if read_in_tree(self.root, name, limit=_MAX_SCANNED).raw != expected[name]:
                    return False
            except SyncError:
                return False
        return True

    def remote_branch(self) -> str | None:
        """The remote's branch a folder never synced takes: this one's name when the remote
        has it, else the remote's only branch (or its default among several)."""
        branch = self.git.branch()
        if self.git.rev(f"refs/remotes/{REMOTE}/{branch}") is not None:
            return branch
        prefix = f"refs/remotes/{REMOTE}/"
        names = [ref[len(prefix):] for ref in self.git.text(
            "for-each-ref", "--format=%(refname)", prefix).split() if ref != prefix + "HEAD"]
        if len(names) > 1:  # the remote's own default among several
            listed = self.git.run("ls-remote", "--symref", REMOTE, "HEAD", check=False)
            head = listed.stdout.decode("utf-8", "replace").partition("\t")[0]
            names = [n for n in names if head == f"ref: refs/heads/{n}"]
        return names[0] if len(names) == 1 else None

    def take_remote_branch(self) -> None:
        """A branch never synced yet (a folder just made, on `main`) becomes the remote's.

        A remote whose memories are on another branch (`master`: a first machine's
        folder made in a repository of its own keeps its branch) would otherwise never
        be merged, and this machine's `main` pushed beside it, the machines never
        meeting. Only when the remote lacks this branch and has one (or a default).
        """
        branch = self.git.branch()
        name = self.remote_branch()
        if name is None or name == branch:
            return
        if self.git.rev(f"refs/heads/{name}") is not None:  # a person's branch beside it
            raise SyncError(
                f"{self.root}: branch {branch!r} was never synced and {REMOTE} has no such "
                f"branch; the memories are on {name!r}, a branch here already: switch to it "
                f"(git switch {name}, or sync the worktree that has it), then sync")
        self.git.run("branch", "-m", branch, name)
        self.result.notes.append(f"working on {REMOTE}'s branch {name!r}")

    # 4. integrate

    def integrate(self) -> None:
        branch = self.git.branch()
        head = self.git.head()
        theirs = self.git.rev_and_base(f"refs/remotes/{REMOTE}/{branch}", head)
        if theirs is None or head == theirs:
            return
        # Theirs is in ours' history exactly when it is the two's merge base: one `merge-base`
        # answers this, the link check's and the archive check's question.
        if head is not None and self.git.merge_base(head, theirs) == theirs:
            return
        self.refuse_unsafe(head, theirs, branch)
        incoming = set(self.git.changed_paths(head, theirs))
        blocking = []
        for held in self.result.held_back:
            if held.path == INDEX_FILE and self.generated_index():
                continue  # regenerated: set back to the committed one just below
            if held.path in incoming:  # git would refuse to merge over it, naming no reason
                if held.reason in (LINK_REASON, REPOSITORY_REASON) or held.path == INDEX_FILE:
                    raise SyncError(
                        f"{held.path}: not committed ({held.reason}), and {REMOTE} changed it "
                        "too, so nothing can be merged until it is committed")
                blocking.append(held.path)
        try:
            self.park(blocking)
            self.merge(head, theirs, branch)
        finally:
            self.unpark(head)

    def park(self, paths: list[str]) -> None:
        """Move each held-back file that the remote changed too out of the merge's way.

        git refuses to merge over an uncommitted file; one held back (a secret, a false
        alarm) must not stall everything else. It is renamed beside itself
        (`x.conflict-held.md`: a rename, so a sync killed now leaves it in the folder,
        never lost) and the committed version put back for the merge; `unpark` merges
        the two afterwards.
        """
        for path in paths:
            target = self.root / path
            try:
                if read_in_tree(self.root, path, limit=_MAX_SCANNED).raw is None:
                    continue
            except LinkRefused:
                raise
            except SyncError:
                pass  # too big to read (or unreadable): moved aside all the same, never read
            aside = move(target, conflict_sibling(target, "held"))
            self.parked[aside.relative_to(self.root).as_posix()] = path
            if self.git.ok("ls-files", "--error-unmatch", "--", path):
                self.git.run("checkout", "--", path)

    def unpark(self, head: str | None) -> None:
        """Each parked file back at its path, the remote's changes merged into it by the
        merge driver's rules (theirs kept beside it when both changed the same thing);
        still uncommitted, so still held back until the person settles it."""
        if not self.parked:
            return  # the common case: no import of the merge rules or the secret patterns
        from ..checks.credentials import redact_name
        from .merge_driver import keep_sibling, merge_versions, other_machine

        for aside, path in list(self.parked.items()):
            target = self.root / path
            try:
                ours = read_in_tree(self.root, aside, limit=_MAX_SCANNED).raw
            except LinkRefused:
                raise
            except SyncError as exc:  # too big to merge: yours stays beside theirs, unread
                self.result.notes.append(
                    f"{redact_name(path)}: changed on {REMOTE} too, and yours cannot be merged "
                    f"({exc.message}): yours kept as {redact_name(aside)}, uncommitted")
                del self.parked[aside]
                continue
            if ours is None:
                del self.parked[aside]
                continue
            now = read_in_tree(self.root, path, limit=_MAX_SCANNED).raw
            base = (self.git.blob(head, path) if head else None) or b""
            data = ours
            if now is not None and now != base and now != ours:
                outcome = merge_versions(base, ours, now, path)
                data = outcome.merged
                if outcome.keep_theirs:
                    keep_sibling(target, other_machine(self.git, path), now)
                self.result.notes.append(
                    f"{redact_name(path)}: changed on {REMOTE} too; merged into your version, "
                    "which stays uncommitted (held back)")
            self.put(target, data, now)
            (self.root / aside).unlink()
            del self.parked[aside]

    def merge(self, head: str | None, theirs: str, branch: str) -> None:
        self.progress(f"merging {REMOTE}/{branch}")
        # The status before the fetch showed the work tree as the commit merged into, and no
        # sage-mem process wrote since: MEMORY.md is the committed one, nothing to set back
        # (a `git diff` of it spared). One edited by hand meanwhile makes git refuse the
        # merge before it starts: then it is set back and the merge run again.
        clean = self.clean
        unchecked = (clean is not None and clean[0] == head
                     and read_generation(self.folder.state_dir) == clean[1])
        if not unchecked:
            self.drop_unstaged_index()
        self.write_record(merging=theirs)
        done = self.run_merge(theirs, branch)
        if done.returncode != 0 and unchecked and not (self.git.git_dir / "MERGE_HEAD").exists():
            self.drop_unstaged_index()
            done = self.run_merge(theirs, branch)
        if done.returncode != 0 and not (self.git.git_dir / "MERGE_HEAD").exists():
            raise SyncError(f"merging {REMOTE}/{branch} failed: {error_line(done)}")
        self.finish_merge(head, theirs, own=True)
        self.write_record()
        after = self.git.head()
        assert after is not None
        came = [p for p in self.git.changed_paths(head, after)]
        # Sets: a join pulls 10,000 ids, each looked up in the list so far.
        skipped = set(self.result.conflicts) | set(self.result.restored) | set(self.result.pulled)
        self.result.pulled.extend(i for i in memory_ids(came) if i not in skipped)

    def run_merge(self, theirs: str, branch: str) -> subprocess.CompletedProcess[bytes]:
        from .merge_later import merged_later, remove_merge_later

        head = self.git.head()
        if head is not None and self.git.merge_base(head, theirs) == head:
            remove_merge_later(self.git.git_dir)  # one a killed sync's merge left
            return self.fast_forward(head, theirs, branch)
        if head is not None:
            done = self.merge_outside(head, theirs)
            if done is not None:
                return done
        with merged_later(self.git.git_dir):
            return self._run_merge(theirs, branch)

    def merge_outside(self, head: str, theirs: str) -> subprocess.CompletedProcess[bytes] | None:
        """A merge with changes on both sides, of memories alone, made outside the work tree
        and written into it by sync, as a fast-forward is (None: left to `git merge`).

        `git merge` checks the work tree, then unlinks and writes each file it
        merges: a save in between was lost (1-2 of ~1,000 saves in a race probe).
        Here `git merge-tree --write-tree` (git 2.38+; the same merge, renames and
        all, the same driver that merges nothing) gives the merged tree and what
        conflicts; each conflict is merged by the driver's rules (`batch_merge`),
        every file written with `put`/`remove`, then staged, and MERGE_HEAD left for
        the commit that finishes it (`finish_merge`). A kill before MERGE_HEAD
        leaves the written files as local changes, which the next sync commits and
        merges again; after it, a merge that sync finishes. Anything else (an older
        git, a settings file, a file's type, a folder where a file was, an untracked
        file in the way) is `git merge`'s.
        """
        from .batch_merge import merged_version
        from .merge_later import merged_later

        self.theirs = theirs
        with merged_later(self.git.git_dir):  # no driver process per file, not even `false`
            done = self.git.run(*_merge_settings(), "merge-tree", "--write-tree", "-z", head,
                                theirs, check=False)
        if done.returncode not in (0, 1):
            return None  # git before 2.38, unrelated histories, …
        fields = done.stdout.split(b"\0")
        tree = fields[0].decode("ascii", "replace").strip()
        conflicted: dict[str, dict[int, str]] = {}
        for record in fields[1:]:
            if not record:
                break  # the end of the conflicted files; messages follow
            meta, _, raw_path = record.partition(b"\t")
            parts = meta.split()
            if len(parts) != 3 or parts[0] != b"100644":
                return None  # an executable memory's mode is git's to merge
            conflicted.setdefault(os.fsdecode(raw_path), {})[int(parts[2])] = parts[1].decode()
        if not is_object_id(tree) or (done.returncode == 1) != bool(conflicted):
            return None
        changes = self.git.blob_changes(head, tree)
        if not self.writes_itself(changes) or not all(
                "~" not in path and self.writable("M", path) for path in conflicted):
            return None
        blobs = self.git.blobs([*_blob_ids(changes),
                                *(blob for stages in conflicted.values()
                                  for blob in stages.values())])
        before = {path: old for _, path, old, _, _ in changes}
        # Deletions last: the file a memory was renamed from (or archived from) goes only
        # once its new file, which may hold this side's edit, is written. A kill between
        # the two leaves both names, never neither: the next sync commits what it finds as
        # this side's and merges again, and a deletion committed so would drop the edit.
        deleted = [change for change in changes if change[0] == "D"]
        written = self.write_changes([change for change in changes if change[0] != "D"],
                                     blobs, skip=conflicted)
        for path, stages in conflicted.items():
            versions = {stage: blobs.get(blob, b"") for stage, blob in stages.items()}
            data, sibling = merged_version(self.git, self.root, path, versions, theirs)
            if sibling is not None:
                written.append(sibling)
            if data is not None:  # made from ours: what this folder holds since its commit
                was = before.get(path)
                ours = versions.get(2, blobs.get(was, b"") if was else b"")
                self.put(self.root / path, data, ours)
            else:
                self.remove_unchanged(self.root / path, versions.get(2, b""))
            written.append(path)
        written += self.write_changes(deleted, blobs, skip=conflicted)
        self.git.stage(written)
        git_dir = self.git.git_dir
        (git_dir / "MERGE_MSG").write_text(  # as `resolve_and_commit` words it
            f"sync: merge {REMOTE} into {self.machine}\n", encoding="utf-8")
        (git_dir / "MERGE_MODE").write_text("no-ff", encoding="utf-8")
        (git_dir / "MERGE_HEAD").write_text(theirs + "\n", encoding="ascii")
        return subprocess.CompletedProcess(["merge-tree"], 1, b"", b"")

    def fast_forward(self, head: str, theirs: str,
                     branch: str) -> subprocess.CompletedProcess[bytes]:
        """The merge of a commit that holds ours (a receive): what changed from `head` to
        `theirs` written into the work tree and the index, then the branch moved to `theirs`
        only if it is still at `head`. Memories are written here (`writes_itself`); any
        other change is git's two-tree checkout (`git read-tree -m -u`, which refuses as
        `git merge` does: a file changed here that the commit changes too, an untracked
        file in the way of one it adds). Either way without the merge's first step, a
        refresh of every file's stat in the index (~25 ms of CPU at 10,000 files), which
        the `git status` before the fetch has just made; a person's post-merge hook is not
        run (as no hook of theirs runs for sync's commits: `--no-verify`)."""
        message = f"sync: fast-forward to {REMOTE}/{branch}"
        self.theirs = theirs
        changes = self.git.blob_changes(head, theirs)
        if not self.writes_itself(changes):
            return self.git.fast_forward(head, theirs, message)
        # Memories only: written here as every write of sage-mem is (`put`, `remove`: a
        # save made meanwhile is never written over or deleted), where git would unlink
        # and write each file with nothing to tell it that a person saved into it after
        # its check (2 of 800 saves lost while an editor typed and syncs ran).
        self.git.stage(self.write_changes(changes, self.git.blobs(_blob_ids(changes))))
        return self.git.move_head(head, theirs, message)

    def write_changes(self, changes: list[tuple[str, str, str, str, str]],
                      blobs: dict[str, bytes], skip: Collection[str] = ()) -> list[str]:
        """Each of `changes` (`Git.blob_changes`) but `skip` written into the work tree by
        `put` and `remove_unchanged`, each made from the version it replaces; the paths."""
        written = []
        for status, path, old, new, _ in changes:
            if path in skip:
                continue
            target = self.root / path
            if status == "D":
                self.remove_unchanged(target, blobs[old])
            else:  # an added file was made from none: one that appears meanwhile is merged
                self.put(target, blobs[new], blobs.get(old, b""))
            written.append(path)
        return written

    def writes_itself(self, changes: list[tuple[str, str, str, str, str]]) -> bool:
        """Whether a fast-forward's changes are memory files alone, each changed, added where
        nothing stands in its way, or deleted: what sync writes itself. Anything else (a
        folder's settings, a file's type, an untracked file in the way, which git refuses
        to write over) is git's `read-tree -m -u`."""
        return all(self.writable(status, path, mode) for status, path, _, _, mode in changes)

    def writable(self, status: str, path: str, mode: str = "100644") -> bool:
        """Whether sync writes this change itself (`writes_itself`)."""
        # A file's mode is git's to write (sync writes 0644-like files: an executable memory
        # a teammate's plain git made would be set back and pushed as this machine's change).
        if status not in "AMD" or not path.endswith(".md") or mode not in ("100644", "000000"):
            return False
        target = self.root / path
        if not self.can_hold(target.parent):
            return False
        if status == "A":
            return not os.path.lexists(target)
        # A person's link or folder there: git says what it does; an executable file too (git
        # sets its mode back when a commit makes it a plain file again).
        try:
            mode_here = os.lstat(target).st_mode
        except FileNotFoundError:
            return True
        return stat.S_ISREG(mode_here) and not mode_here & 0o111

    def can_hold(self, folder: Path) -> bool:
        """`folder` is the memory folder, or a real folder in it (or none yet, under one)."""
        while folder != self.root:
            if os.path.lexists(folder):
                return folder.is_dir() and not folder.is_symlink()
            folder = folder.parent
        return True

    def remove_unchanged(self, target: Path, data: bytes) -> None:
        """Delete `target` if it still holds `data`; a file saved since stays (then
        committed by the next sync: an edit outlives a deletion), as does a folder."""
        try:
            remove(target, Seen(data), limit=_MAX_SCANNED)
        except (FileChanged, OSError):
            return
        folder = target.parent
        while folder != self.root:  # as git leaves no empty folder behind
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent

    def _run_merge(self, theirs: str, branch: str) -> subprocess.CompletedProcess[bytes]:
        return self.git.run(
            # --ff --commit --no-squash: a person's merge.ff=only or branch.*.mergeoptions
            # are for their own merges; sync's always ends in a commit holding both sides.
            # The driver that merges nothing: every file both sides changed is merged in
            # this process (batch_merge), not in a process of its own per file.
            *_merge_settings(), *self.git.identity(), "merge", "--quiet", "--no-edit",
            "--ff", "--commit", "--no-squash",
            "--no-verify", "--allow-unrelated-histories", "-m",
            f"sync: merge {REMOTE}/{branch} into {self.machine}",
            "-m", f"{MACHINE_TRAILER}: {self.machine}", theirs,
            check=False, env={THEIRS_ENV: theirs},
        )

    def own_file_reshaped(self) -> str | None:
        """What is wrong, when one of sage-mem's own files is a folder here, or its own folder
        a file: what `refuse_unsafe` refuses to merge, brought by a plain `git pull` (every
        write, index and archive after it would fail). None when all are as sage-mem keeps
        them (or absent)."""
        for name, folder in [*((n, False) for n in sorted(_OWN_FILES)),
                             *((n, True) for n in sorted(_OWN_FOLDERS))]:
            try:
                mode = os.lstat(self.root / name).st_mode
            except OSError:
                continue
            if folder and stat.S_ISREG(mode):
                return (f"{name} is a file, where sage-mem keeps its own folder (every archive "
                        f"or dream run would fail); move it away (git mv {name} {name}.moved "
                        "&& git commit), then sync")
            if not folder and stat.S_ISDIR(mode):
                return (f"{name} is a folder, where sage-mem keeps its own file (the index, "
                        f"every write and every sync would fail); move it away (git mv {name} "
                        f"{name}.moved && git commit), then sync")
        return None

    def refuse_unsafe(self, head: str | None, theirs: str, branch: str) -> None:
        """Never merge a commit that brings a symbolic link, a submodule, a path leaving the
        folder or a name no disk holds, nor a `.gitattributes` that re-encodes files.

        Checked out, a link would be followed by the next read of its path (sync's, an
        editor's, a plain git's on a machine without `core.symlinks=false`), and what it
        read pushed back. A submodule entry (a gitlink) makes git take every file below its
        folder for another repository's: a memory written there (`archive/` one) would go
        into no commit and never reach another machine; so would every memory once git
        re-encodes them (`working-tree-encoding`). One line names the first such path and
        the commit that brought it.
        """
        # What their side brought since the two met (a link both had and this side deleted
        # stays deleted by the merge, and is no reason to refuse it).
        since = (self.git.merge_base(head, theirs) or head) if head else None
        entries = self.git.entries(since, theirs)
        unsafe = [(path, why) for mode, path, blob in entries
                  if not _plainly_safe(mode, path)
                  and (why := self.unsafe_entry(mode, path, blob)) is not None]
        # A file over what sync reads: merging it would read it whole (a 230 MB blob took
        # 1.4 GB, a 2 GB one the machine's memory); sync never commits one either.
        sizes = self.git.sizes(blob for mode, _, blob in entries
                               if mode not in (_GITLINK_MODE, _LINK_MODE))
        unsafe += [(path, f"is {sizes[blob] >> 20} MB, over what sync reads "
                          f"({_MAX_SCANNED >> 20} MB)")
                   for mode, path, blob in entries
                   if mode not in (_GITLINK_MODE, _LINK_MODE)
                   and sizes.get(blob, 0) > _MAX_SCANNED]
        if not unsafe:
            return
        from ..checks.credentials import redact_name

        path, why = unsafe[0]
        shown = _shown(redact_name(path))
        fix = ("sync never lets a remote reshape its own files, nor reads a file that large: "
               "ask its author to undo that commit, then sync"
               if why.startswith("makes ") or " MB, over " in why else
               "sync never lets a remote's attributes change how git writes the memories: ask "
               "its author to remove that line, then sync" if why.startswith("sets ") else
               "sync never checks out a link, a submodule or a path outside the folder (a later "
               "read would follow it to any file of yours, a memory written below it would "
               "never be committed): ask its author to replace it with a file, then sync")
        found = self.git.run("log", "-1", "--format=%h by %an", theirs, "--", path,
                             check=False).stdout.decode("utf-8", "replace").strip()
        commit = _shown(found)[:80] or theirs[:7]
        more = f" (and {len(unsafe) - 1} more)" if len(unsafe) > 1 else ""
        raise SyncError(
            f"{REMOTE}/{branch} not merged: {shown} {why}{more}, from commit {commit}; {fix}")

    def unsafe_entry(self, mode: str, path: str, blob: str) -> str | None:
        """Why a file of the remote (its object id `blob`) may not be checked out (None: it
        may). Only a `.gitattributes` other than sage-mem's own is read (one git command)."""
        if not _inside(path):
            return "is a path outside the folder"
        if any(len(os.fsencode(part)) > _NAME_MAX for part in path.split("/")):
            return f"is a name too long for a file here (over {_NAME_MAX} bytes)"
        if mode == _GITLINK_MODE:
            return "is a submodule (a gitlink)"
        if mode == _LINK_MODE:
            target = b"".join(self.git.blobs([blob]).values()).decode("utf-8", "replace")
            return f"is a symbolic link (to {_shown(target)})"
        top, _, below = path.partition("/")
        if below and top in _OWN_FILES:
            return (f"makes {top} a folder (sage-mem keeps its own file there: "
                    "the index, every write and every sync after would fail)")
        if not below and top in _OWN_FOLDERS:
            return (f"makes {top} a file (sage-mem keeps its own folder there: "
                    "every archive or dream run after would fail)")
        if path.rsplit("/", 1)[-1] != ".gitattributes":
            return None
        from .index_file import blob_id

        if blob == blob_id(GITATTRIBUTES.encode()):
            return None
        attributes = b"".join(self.git.blobs([blob]).values())
        if _REENCODES.search(attributes):
            return ("sets working-tree-encoding (git would re-encode the memories sync writes "
                    "as UTF-8, and refuse to commit them)")
        if _FILTERS.search(attributes):
            return ("sets filter (git would run a program of this machine's git config, "
                    "git-lfs's say, on every memory it matches, and commit what it makes of "
                    "them; one that is gone fails every sync)")
        return None

    def undo_unnamed_merge(self) -> None:
        """Undo a merge whose MERGE_HEAD names no commit: git was killed writing it, after
        the merge had written the index and the files, so nothing says what to finish it
        with. Undone as `git merge --abort` undoes one (its files as the last commit has
        them, every other change kept; `check_idle` let it through only if no person typed
        into them); this sync then fetches and merges again."""
        if not self.git.ok("merge", "--abort"):
            raise SyncError(f"{self.root}: a git merge was left half done and its MERGE_HEAD "
                            "names no commit; undo it (git merge --abort), then sync")
        self.result.notes.append("undid a merge a killed sync had begun (its MERGE_HEAD was "
                                 "cut short); merging again")
        self.write_record()

    def finish_merge(self, head: str | None, theirs: str, *, own: bool) -> None:
        """Resolve, regenerate and commit the merge; one that fails is undone, not left.
        `own`: this sync ran it (not a plain `git pull`, whose driver may have written
        conflict markers into the work tree)."""
        try:
            self.resolve_and_commit(head, theirs, own=own)
        except Exception as exc:
            if not (self.git.git_dir / "MERGE_HEAD").exists():
                raise
            if not self.git.ok("merge", "--abort"):
                raise  # the record still names the merge: the next sync finishes it
            self.write_record()
            why = exc.message if isinstance(exc, SageMemError) else f"{type(exc).__name__}: {exc}"
            raise SyncError(f"merging {REMOTE} failed, undone (the folder is as before "
                            f"it): {why}") from None

    def resolve_and_commit(self, head: str | None, theirs: str, *, own: bool) -> None:
        merging = (self.git.git_dir / "MERGE_HEAD").exists()
        # A merge git committed itself left nothing unmerged (git refuses to start one on an
        # index with an unmerged path): what is unmerged is asked of a merge left to finish.
        if merging:
            from .batch_merge import resolve_all

            resolve_all(self.git, self.root, theirs, self.put, own=own)
        self.restore_edited_archives(head, theirs)
        status = self.status_after_merge(head, merging)  # one for both: MEMORY.md, siblings
        self.regenerate_index(status)
        # The siblings this merge made: on neither side before it.
        made = [p for p in self.sibling_files(status) if p not in self.parked]
        if made:
            known = set(self.git.tree(theirs)) | (set(self.git.tree(head)) if head else set())
            made = [p for p in made if p not in known]
        for memory_id in memory_ids(made):
            if memory_id not in self.result.conflicts:
                self.result.conflicts.append(memory_id)
        message = f"sync: merge {REMOTE} into {self.machine}" if merging else None
        changed = None
        if not merging:
            # git committed the merge (a fast-forward, or no file changed on both sides):
            # what changed since the status above is MEMORY.md alone, when
            # the regeneration rewrote it (a memory saved meanwhile waits for the next
            # sync, as one saved after any status does); every changed file is scanned,
            # whatever its status letters, so no second `git status` of the whole folder.
            changed = dict(status[0])
            if self.made is not None and self.made.changed:
                code = changed.get(INDEX_FILE, " M")
                changed[INDEX_FILE] = code if code[1] != " " else code[0] + "M"
        self.commit_local(self.result, message=message, merging=merging, changed=changed)
        self.stamp_index()

    def status_after_merge(self, head: str | None,
                           merging: bool) -> tuple[dict[str, str], list[str]]:
        """The work tree's `git status` after a merge (`status`).

        The one taken before it still holds when it showed a clean tree at the
        commit merged into, git committed the merge itself (it wrote only the
        files the merge changed, each now as committed, and made no conflict
        sibling), the merge changed no file of git's own settings
        (`.gitignore`, `.gitattributes`: what git ignores, how it reads a file)
        and no sage-mem process wrote in the folder since (its write count): a
        second `git status` of 10,000 files (~40 ms of CPU) would say the same.
        A file saved by hand meanwhile waits for the next sync, as one saved
        after any status does.
        """
        clean = self.clean
        after = self.git.head()
        if (merging or clean is None or head is None or after is None or clean[0] != head
                or read_generation(self.folder.state_dir) != clean[1]
                or any(p.rsplit("/", 1)[-1].startswith(".git")
                       for p in self.git.changed_paths(head, after))):
            return self.status()
        return {}, list(clean[2])

    def regenerate_index(self, status: tuple[dict[str, str], list[str]] | None = None) -> None:
        # From the memories' frontmatter (index_file), not a search index built for it.
        differ = None if status is None else [*status[0], *status[1]]
        self.made = regenerate(self.folder, self.git, differ)

    def sibling_files(self, status: tuple[dict[str, str], list[str]]) -> set[str]:
        """The conflict siblings (`x.conflict-laptop.md`, archived ones too) git does not have
        in HEAD: new in the index or the work tree (one `git status`, not a walk of the
        folder: every file of a side is in HEAD or in the index as new)."""
        changed, ignored = status
        found = set()
        for rel in [*changed, *ignored]:
            # Every sibling's name holds `.conflict-`: the rest skip the path arithmetic.
            if ".conflict-" not in rel.rsplit("/", 1)[-1] or not rel.endswith(".md"):
                continue
            path = self.root / rel
            if self.folder.id_for(path) is None and self.folder.archived_id_for(path) is None:
                continue  # not where a walk of the folder finds a memory
            from ..checks.audit import conflict_sibling_of  # only for a sibling's name

            if not path.is_file() or conflict_sibling_of(rel[:-3]) is None:
                continue
            found.add(rel)
        return found

    def put(self, target: Path, data: bytes, made_from: bytes | None = None) -> None:
        """Write a merge's `data` at `target`, which held `made_from` when the merge read it.

        A person may type into the file while the sync runs (after its commit, after
        git's check for uncommitted files): bytes other than `made_from` (or `data`)
        are theirs, never written over. Their change is merged into `data` by the
        merge driver's rules, and where the two changed the same thing, theirs stays
        at the path and `data` is kept beside it.
        """
        make_dirs(target.parent, root=self.root)  # as private as the folder, as git's are not
        rel = target.relative_to(self.root).as_posix()

        def merged(seen: Seen) -> bytes:
            if made_from is None or seen.raw is None or seen.raw in (made_from, data):
                return data
            from .merge_driver import keep_sibling, merge_index, merge_versions, other_machine

            if rel == INDEX_FILE:  # made again from the memories; a person's merged by lines
                return merge_index(seen.raw, data, made_from)
            outcome = merge_versions(made_from, seen.raw, data, rel)
            if outcome.keep_theirs:
                keep_sibling(target, other_machine(self.git, rel, self.theirs), data)
            return outcome.merged

        rewrite(target, merged, read=lambda p: read_in_tree(self.root, rel, limit=_MAX_SCANNED),
                mode=file_mode(self.root), limit=_MAX_SCANNED)

    def restore_edited_archives(self, head: str | None, theirs: str) -> None:
        """A memory archived on one side and edited on the other comes back, with the edit."""
        if head is None:
            return
        base = self.git.merge_base(head, theirs)
        if base is None or base in (head, theirs):
            return  # a fast-forward: one side changed nothing, archived nothing
        # What each side changed since the two met (git compares trees by id: no listing of
        # every file of three commits).
        changes = {side: self.git.name_status(base, side) for side in (head, theirs)}
        wanted = []
        for archived_on, edited_on in ((head, theirs), (theirs, head)):
            moved_away, edited = changes[archived_on], changes[edited_on]
            for path, status in moved_away.items():
                if (status != "D" or not path.endswith(".md") or path == INDEX_FILE
                        or path.startswith(ARCHIVE_DIR + "/")):
                    continue
                # Gone from its place, new in archive/ on one side; changed on the other.
                if (moved_away.get(f"{ARCHIVE_DIR}/{path}") == "A"
                        and edited.get(path) in ("M", "T")):
                    wanted.append(path)
        wanted = [p for p in wanted if (self.root / ARCHIVE_DIR / p).is_file()
                  and not os.path.lexists(self.root / p)]
        if not wanted:
            return
        from ..store import MemoryStore

        with MemoryStore(self.root, watch=False) as store:
            for path in wanted:
                store.restore(f"{ARCHIVE_DIR}/{path[:-3]}")
                self.result.restored.append(path[:-3])

    # 5. push

    def push(self) -> bool:
        """Push HEAD; False when the remote moved meanwhile (fetch and integrate again)."""
        branch = self.git.branch()
        old = self.git.rev(f"refs/remotes/{REMOTE}/{branch}")
        head = self.git.head()
        if head is None or head == old:
            return True
        if old is not None and self.git.ok("merge-base", "--is-ancestor", head, old):
            return True
        refused = self.outgoing_secrets(head, old)
        if refused:
            self.result.push_refused = refused
            return True
        self.progress(f"pushing to {REMOTE}/{branch}")
        # Checked just above: the pre-push hook need not scan again (it still runs a hook
        # of the person's that it chains).
        checked = {ALLOW_SECRET_ENV: "1"} if self.allow_secret else {CHECKED_ENV: "1"}
        # The branch by its full name: a tag named `HEAD` (any remote can send one, fetched
        # with its commit) is what `git push` takes `HEAD:` for.
        ref = f"refs/heads/{branch}"
        done = self.git.run("push", "--quiet", "-u", REMOTE, f"{ref}:{ref}",
                            check=False, env=checked)
        if done.returncode != 0:
            text = (done.stderr or b"").decode("utf-8", "replace")
            if any(race in text for race in _RACES):
                # Lost a race: fetch, merge, push again (a remote's refusal is not).
                self.ref_refused = (error_line(done) if any(
                    locked in text for locked in _LOCKED) else None)
                return False
            self.result.offline = f"pushing to {REMOTE} failed: {error_line(done)}"
            return True
        for memory_id in memory_ids(self.git.changed_paths(old, head)):
            if memory_id not in self.result.pushed:
                self.result.pushed.append(memory_id)
        if old is None:  # the branch is new there: a teammate's plain clone must find it
            if self.git.config(f"branch.{branch}.merge") is not None:
                self.result.notes.append(
                    f"{REMOTE} had no branch {branch!r} (renamed or deleted there, or the "
                    "remote made anew): pushed it again")
            self.point_remote_head(branch)
        return True

    def point_remote_head(self, branch: str) -> None:
        """A remote whose HEAD names a branch it lacks (`git init --bare` on `master`, sync
        pushing `main`) gives a plain `git clone` nothing to check out. A remote on this
        disk gets its HEAD pointed at the branch just pushed; of any other, the summary
        says what to run.
        """
        listed = self.git.run("ls-remote", "--symref", REMOTE, "HEAD", check=False)
        if listed.returncode != 0 or listed.stdout.strip():
            return  # HEAD names a branch the remote has (or the remote cannot say)
        url = self.git.remote_url() or ""
        path = url.removeprefix("file://")
        if os.path.isdir(path) and Git(Path(path)).ok(
                "symbolic-ref", "HEAD", f"refs/heads/{branch}"):
            self.result.notes.append(
                f"pointed {REMOTE}'s HEAD at {branch!r}, which it lacked: a plain git clone "
                "checks it out")
            return
        self.result.notes.append(
            f"{REMOTE}'s HEAD names a branch it does not have: a plain git clone checks out "
            f"nothing; clone with `git clone -b {branch} URL`, or on the server run "
            f"`git symbolic-ref HEAD refs/heads/{branch}` in the repository")

    def outgoing_secrets(self, head: str, old: str | None) -> list[Held]:
        """Files in the commits about to be pushed whose bytes the secret scan flags."""
        if self.allow_secret:
            return []
        return outgoing_secrets(self.git, head, [old] if old else [f"--remotes={REMOTE}"],
                                self.clean_blobs, self.clean_names)


def outgoing_secrets(git: Git, head: str, exclude: list[str],
                     clean: Iterable[str] = (), clean_names: Iterable[str] = ()) -> list[Held]:
    """Files in the commits from `head` back to (not into) `exclude` whose name or bytes the
    secret scan flags: what a push of `head` would carry that the remote does not hold.
    `clean`: blob ids whose bytes were scanned already and hold none; `clean_names`: the
    paths whose names were (any other name is still checked)."""
    listing = git.text("rev-list", "--objects", "--no-object-names", head, "--not",
                       *exclude).split()
    named = git.text("rev-list", "--objects", head, "--not", *exclude).splitlines()
    paths = {}
    for line in named:
        sha, _, path = line.partition(" ")
        if path:
            paths[sha] = path
    blobs = [sha for sha in listing if sha in paths]
    known, named_clean = set(clean), set(clean_names)
    refused = []
    for sha in blobs:
        if sha in known and paths[sha] not in named_clean:
            reason = name_reason(paths[sha])
            if reason:
                refused.append(Held(paths[sha], reason + "; it was committed by hand: remove it "
                                    "from the unpushed commits (git reset), then sync"))
    blobs = [sha for sha in blobs if sha not in known]
    if not blobs:
        return refused
    out = git.run("cat-file", "--batch", input="\n".join(blobs).encode() + b"\n").stdout
    position = 0
    while position < len(out):
        newline = out.index(b"\n", position)
        sha, kind, size = out[position:newline].decode().split()
        data = out[newline + 1: newline + 1 + int(size)]
        position = newline + 1 + int(size) + 1
        if kind != "blob":
            continue
        reason = name_reason(paths[sha]) or secret_reason(data)
        if reason:
            refused.append(Held(paths[sha], reason + "; it was committed by hand: remove it "
                                "from the unpushed commits (git reset), then sync"))
    return refused


_ZERO = frozenset("0")


def check_push(root: Path | str, remote: str, refs: Iterable[str]) -> list[Held]:
    """What the pre-push hook refuses: for each `<local ref> <sha> <remote ref> <sha>` line
    git gives it, the flagged files in the commits the remote lacks (`outgoing_secrets`)."""
    git = Git(Path(root))
    refused: list[Held] = []
    for line in refs:
        fields = line.split()
        if len(fields) != 4 or set(fields[1]) == _ZERO:
            continue  # a deletion carries nothing
        local, theirs = fields[1], fields[3]
        exclude = [theirs] if set(theirs) != _ZERO and git.rev(theirs) else []
        if git.remote_url(remote) is not None:  # a remote's name; a URL has no refs here
            exclude.append(f"--remotes={remote}")
        for held in outgoing_secrets(git, local, exclude):
            if held not in refused:
                refused.append(held)
    return refused
