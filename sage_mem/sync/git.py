"""Running git in a memory folder, and the setup sync needs there.

`Git(root)` runs git with `-C root`, never a shell, and turns a failure into a
`SyncError` whose message is git's last line. A commit needs an identity: when
git has none configured (a fresh machine, a container), sage-mem commits as
`sage-mem <sage-mem@MACHINE>` rather than failing; a configured one is always
used.

The machine's name labels its commits (the trailer `Sage-Mem-Machine: NAME`)
and names the conflict siblings made from its versions elsewhere
(`user_cat.conflict-laptop`): `git config sage-mem.machine NAME` in the
folder's repository, else the host name, lower-cased, letters, digits and `-`.

`ensure_setup` registers the merge driver: a line `*.md merge=sage-mem` in
`.gitattributes` (tracked, so every clone names the driver) and, in the
repository's own config (never the user's global one), the command git runs,
`merge.sage-mem.driver`, with this Python's path; each clone writes its own.
It also sets `core.symlinks=false` there (a link that arrives from a remote is
checked out as a file holding its target's name, never as a link a later read
follows), `fetch.fsckObjects=true` (a tree with `..` or `.git` in a path is
refused when fetched) and `merge.directoryRenames=false` (a restore that empties
`archive/` is no folder moved to the top: git 2.39 so taking it put the other side's
archive of a memory onto this side's edit, and a plain `git pull` ended, exit 0, with
that memory under no name).

It installs a pre-push hook (`pre_push_script()`, a few lines of sh calling `python -m
sage_mem pre-push`) that refuses a plain `git push` carrying a file the secret
scan flags, as sync's own push does; a hook that was there is kept, renamed
`pre-push.before-sage-mem`, and run after the check. Hooks kept elsewhere
(`core.hooksPath` outside the repository) are not touched: that folder serves
other repositories too, and the summary says the check is missing.

A remote is not trusted: sync reads and writes a file of the work tree only
through `read_in_tree`, which refuses a symbolic link anywhere below the folder
(`LinkRefused`), and never merges a commit that brings one (`steps._Sync.refuse_unsafe`).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..disk.safe_io import Seen, create, file_mode, identity, rewrite
from ..errors import FileChanged, SageMemError

DRIVER = "sage-mem"
ATTRIBUTE_LINE = f"*.md merge={DRIVER}"
MACHINE_KEY = "sage-mem.machine"
MACHINE_TRAILER = "Sage-Mem-Machine"
# How sync's own merge runs git (here, not beside the merge rules, so that a merge git
# commits by itself imports none of them): the driver command that merges nothing, so
# that git leaves each file both sides changed unmerged for `batch_merge.resolve_all`,
# and the variable naming the commit merged in, for the driver to name the other machine.
NO_DRIVER = "false"
THEIRS_ENV = "SAGE_MEM_THEIRS"
DEFAULT_BRANCH = "main"
REMOTE = "origin"
_MAX_ATTRIBUTES = 1 << 20


# What git sets for a hook (and `git -c`) to name *its* repository, as `git rev-parse
# --local-env-vars` lists them (2.39): a sync run from another repository's hook must not
# take them for the memory folder's.
_REPOSITORY_VARIABLES = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
)


def git_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a git run in a memory folder: without the variables
    that name another repository (a hook's), with git's prompts off and its messages in
    English (they are parsed)."""
    env = {key: value for key, value in os.environ.items()
           if key not in _REPOSITORY_VARIABLES and not key.startswith("GIT_CONFIG_KEY_")
           and not key.startswith("GIT_CONFIG_VALUE_")}
    env.update(extra)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_LITERAL_PATHSPECS="1", LC_ALL="C")
    return env


class SyncError(SageMemError):
    """A git operation sync needed failed, or the folder is not set up for it."""


class LinkRefused(SyncError):
    """A path of the work tree sync must read or write is a symbolic link, or goes through one."""


# The repository's own settings sync keeps (never the user's global config): a link from a
# remote is checked out as a plain file; a malformed tree (`..`, `.git`) is refused at fetch.
SAFE_CONFIG = (("core.symlinks", "false"), ("fetch.fsckObjects", "true"),
               ("merge.directoryRenames", "false"))


# The commands that change nothing git keeps (their answers may be remembered until one that
# does runs), and those after which the config may have changed.
_READS = frozenset({
    "rev-parse", "status", "ls-files", "diff-files", "diff", "diff-index", "diff-tree", "ls-tree",
    "cat-file",
    "for-each-ref", "merge-base", "log", "show", "ls-remote", "hash-object",
})
_LEAVE_REMOTE_REFS = frozenset({"merge", "commit", "add", "checkout", "update-index", "reset",
                                "rm", "mv", "read-tree"})
_CONFIG_WRITERS = frozenset({"config", "remote", "branch", "push", "init", "clone", "switch",
                             "checkout", "symbolic-ref"})


# A gitlink's mode (0o160000) as git's index writes it, big-endian.
_GITLINK_MODE_BYTES = b"\x00\x00\xe0\x00"


class Git:
    """git, run in one repository's work tree.

    A sync asks the same few questions many times (the git folder, the branch, HEAD, a
    config key): each costs a git process (~3 ms of CPU), so the answers are remembered,
    the config read whole with one `git config --list`, and forgotten as soon as a
    command that may change them runs (any but `_READS`).
    """

    def __init__(self, root: Path, *, env: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.env = dict(env or {})
        self._identity: list[str] | None = None
        self.notes: list[str] = []  # what setup could not do, for the summary
        self._git_dir: Path | None = None
        self._toplevel: str | None = None
        self._hooks: str | None = None
        self._config: dict[str, str] | None = None
        self._revs: dict[str, str | None] = {}
        self._head_ref: tuple[str | None] | None = None
        self._trees: dict[str, dict[str, tuple[str, str]]] = {}
        self._sizes: dict[str, int] = {}  # object id -> bytes, as `ls-tree -l` told
        # Answers about two commits by id never change: asked again within a sync (the
        # merge's checks, MEMORY.md's making, the pulled list), they cost no process.
        self._bases: dict[tuple[str, str], str | None] = {}
        self._diffs: dict[tuple[str, str], list[tuple[str, str, str, str, str]]] = {}

    def run(
        self, *args: str, check: bool = True, input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        full_env = git_environment(**self.env, **(env or {}))
        # What git writes here (objects, COMMIT_EDITMSG, FETCH_HEAD) is as private as the
        # folder; a push keeps the person's umask for a remote on a shared disk.
        umask = -1 if args[:1] == ("push",) else (
            0o007 if file_mode(self.root) == 0o660 else 0o077)
        try:
            done = subprocess.run(
                ["git", "-C", str(self.root), *args], input=input, capture_output=True,
                env=full_env, check=False, umask=umask,
            )
        except FileNotFoundError:
            raise SyncError("sync needs git, and git is not installed") from None
        self._forget(args)
        if check and done.returncode != 0:
            raise SyncError(f"git {_command(args)} failed: {error_line(done)}")
        return done

    def _forget(self, args: Sequence[str]) -> None:
        """Forget the answers a command may have changed."""
        command = _command(args)
        if command in _READS or (command == "config" and ("--get" in args or "--list" in args)):
            return
        if command == "symbolic-ref" and "-q" in args and len(args) <= 4:
            return  # reading HEAD's branch
        # A fetch moves only the remote's refs (git refuses to fetch into the branch HEAD is on);
        # the remote's refs move only with a fetch, a push or a command naming refs (a merge,
        # a commit, a checkout leave them).
        kept = {name: rev for name, rev in self._revs.items()
                if (name == "HEAD" and command == "fetch")
                or (name.startswith("refs/remotes/") and command in _LEAVE_REMOTE_REFS)}
        self._revs.clear()
        self._revs.update(kept)
        if command in _CONFIG_WRITERS:  # which branch HEAD names changes with these too
            self._config = None
            self._head_ref = None

    def text(self, *args: str, check: bool = True) -> str:
        return self.run(*args, check=check).stdout.decode("utf-8", "surrogateescape")

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def config(self, key: str) -> str | None:
        """A key's value as `git config --get` gives it (the last one set), None when unset
        or empty."""
        if self._config is None:
            done = self.run("config", "--list", "-z", check=False)
            self._config = {}
            for record in done.stdout.decode("utf-8", "replace").split("\0"):
                name, _, value = record.partition("\n")
                if name:
                    self._config[_config_key(name)] = value
        value = self._config.get(_config_key(key), "").strip()
        return value or None

    def set_config(self, key: str, value: str) -> None:
        """`git config key value` in the repository's own config; the config read already is
        kept, with this key's new value (no second `git config --list`)."""
        known = self._config
        self.run("config", key, value)
        if known is not None:
            known[_config_key(key)] = value
            self._config = known

    def identity(self) -> list[str]:
        """`-c` options naming sage-mem as the committer when git has no identity of its own."""
        if self._identity is None:
            missing = not self.config("user.email") and not os.environ.get("GIT_AUTHOR_EMAIL")
            self._identity = [
                "-c", "user.name=sage-mem", "-c", f"user.email=sage-mem@{self.machine()}",
            ] if missing else []
        return self._identity

    def stage(self, paths: Sequence[str]) -> None:
        """Stage each path as the work tree has it, as `git add -A PATH...` does (a path
        gone from the work tree leaves the index), with `git update-index --add --remove`:
        `git add` matches every path given against every file of the index (100 paths at
        10,000 memories: ~45 ms of CPU, update-index ~11 ms). What update-index refuses
        (a folder: a nested repository) goes to `git add`, which stages it or says why."""
        if not paths:
            return
        data = quoted_paths(paths)
        if not any(path.endswith("/") for path in paths):
            done = self.run("update-index", "--add", "--remove", "-z", "--stdin", input=data,
                            check=False)
            if done.returncode == 0:
                return
        self.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input=data)

    def commit(self, message: str, *extra: str) -> None:
        self.run(*self.identity(), "commit", "--quiet", "--no-verify", "-m", message, *extra)

    def machine(self) -> str:
        return machine_label(self.config(MACHINE_KEY) or _host_name())

    # the repository's state

    def _locate(self) -> bool:
        """The git folder, the work tree's top and the hooks folder, with one `rev-parse`;
        HEAD's commit and the ref it names with them (every sync asks both next), unless
        HEAD has no commit yet (a new repository: asked apart)."""
        if self._git_dir is not None:
            return True
        where = ("rev-parse", "--absolute-git-dir", "--show-toplevel", "--git-path", "hooks")
        done = self.run(*where, "HEAD^{commit}", "--symbolic-full-name", "HEAD", check=False)
        lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
        if done.returncode == 0 and len(lines) == 6:
            head, ref = lines[3], lines[4]
            self._revs.setdefault("HEAD", head)
            if self._head_ref is None:  # `symbolic-ref -q HEAD`'s answer: None when detached
                self._head_ref = (ref if ref.startswith("refs/") else None,)
        else:
            done = self.run(*where, check=False)
            lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
            if done.returncode != 0 or len(lines) != 4:  # a bare repository has no top level
                return False
        self._git_dir, self._toplevel, self._hooks = Path(lines[0]), lines[1], lines[2]
        return True

    @property
    def git_dir(self) -> Path:
        if self._locate():
            assert self._git_dir is not None
            return self._git_dir
        return Path(self.text("rev-parse", "--absolute-git-dir").strip())

    @property
    def toplevel(self) -> str:
        """The top folder of the work tree the root is in."""
        if self._locate():
            assert self._toplevel is not None
            return self._toplevel
        return self.text("rev-parse", "--show-toplevel").strip()

    @property
    def hooks(self) -> Path:
        """The folder git runs hooks from (`core.hooksPath`, else the git folder's)."""
        if self._locate():
            assert self._hooks is not None
            hooks = Path(self._hooks)
        else:
            hooks = Path(self.text("rev-parse", "--git-path", "hooks").strip())
        return hooks if hooks.is_absolute() else self.root / hooks

    def is_repository(self) -> bool:
        return (self.root / ".git").exists() and (self._locate() or self.ok("rev-parse",
                                                                            "--git-dir"))

    def head(self) -> str | None:
        return self.rev("HEAD")

    def rev(self, name: str) -> str | None:
        if name not in self._revs:
            done = self.run("rev-parse", "-q", "--verify", f"{name}^{{commit}}", check=False)
            self._revs[name] = done.stdout.decode().strip() if done.returncode == 0 else None
        return self._revs[name]

    def rev_and_base(self, name: str, head: str | None) -> str | None:
        """`rev(name)`, with its merge base with the commit `head` (by id) remembered for
        `merge_base`: one `git rev-parse HEAD...NAME` (which prints NAME's commit, HEAD's,
        then each merge base after a `^`) where a receive ran `rev-parse` and `merge-base`
        apart.
        Several merge bases (a criss-cross history) are left to `merge-base`, which picks
        one of them."""
        if head is None or name in self._revs:
            return self.rev(name)
        done = self.run("rev-parse", f"{head}...{name}^{{commit}}", check=False)
        lines = done.stdout.decode("ascii", "replace").split()
        if done.returncode != 0 or len(lines) < 2 or lines[1] != head:
            return self.rev(name)  # no such ref (a branch never pushed): as `rev` says it
        theirs, bases = lines[0], lines[2:]
        self._revs[name] = theirs
        if len(bases) <= 1 and all(base.startswith("^") for base in bases):
            self._bases[(head, theirs)] = bases[0][1:] if bases else None
        return theirs

    def fast_forward(self, old: str, new: str,
                     message: str) -> subprocess.CompletedProcess[bytes]:
        """The work tree and index moved from commit `old` to `new` (`git read-tree -m -u`:
        what `git merge` checks out for a fast-forward, refusing as it does), then HEAD's
        branch, only if it is still at `old`; HEAD then known as `new` (no `rev-parse`)."""
        done = self.run("read-tree", "-m", "-u", old, new, check=False)
        if done.returncode != 0:
            return done
        return self.move_head(old, new, message)

    def move_head(self, old: str, new: str, message: str) -> subprocess.CompletedProcess[bytes]:
        """HEAD's branch moved from `old` to `new`, only if it is still at `old`."""
        remote = {name: rev for name, rev in self._revs.items()
                  if name.startswith("refs/remotes/")}
        done = self.run("update-ref", "-m", message, "HEAD", new, old, check=False)
        self._revs.update(remote)  # only HEAD's branch moved
        if done.returncode == 0:
            self._revs["HEAD"] = new
        return done

    def head_ref(self) -> str | None:
        """The ref HEAD names (`refs/heads/main`), None when it is detached."""
        if self._head_ref is None:
            done = self.run("symbolic-ref", "-q", "HEAD", check=False)
            ref = done.stdout.decode("utf-8", "surrogateescape").strip()
            self._head_ref = (ref if done.returncode == 0 and ref else None,)
        return self._head_ref[0]

    def branch(self) -> str:
        ref = self.head_ref()
        if ref is None or not ref.startswith("refs/heads/"):
            return DEFAULT_BRANCH
        return ref[len("refs/heads/"):] or DEFAULT_BRANCH

    def remote_url(self, name: str = REMOTE) -> str | None:
        return self.config(f"remote.{name}.url")

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each blob, read with one `git cat-file --batch`."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input="\n".join(wanted).encode() + b"\n").stdout
        found: dict[str, bytes] = {}
        position = 0
        while position < len(out):
            newline = out.index(b"\n", position)
            header = out[position:newline].decode().split()
            if len(header) != 3:  # "<id> missing": nothing to merge from, and nothing dropped
                raise SyncError(
                    f"git cat-file: {out[position:newline].decode(errors='replace')}")
            sha, _, size = header
            found[sha] = out[newline + 1: newline + 1 + int(size)]
            position = newline + 1 + int(size) + 1
        return found

    def sizes(self, ids: Iterable[str]) -> dict[str, int]:
        """The size in bytes of each object, with one `git cat-file --batch-check` (none
        read) for those a listing (`_listing`) has not told already."""
        known = set(ids)
        found = {sha: self._sizes[sha] for sha in known if sha in self._sizes}
        wanted = sorted(known - found.keys())
        if not wanted:
            return found
        out = self.run("cat-file", "--batch-check=%(objectname) %(objectsize)",
                       input="\n".join(wanted).encode() + b"\n").stdout.decode("ascii", "replace")
        for line in out.splitlines():
            sha, _, size = line.partition(" ")
            if size.isdigit():
                found[sha] = int(size)
        return found

    def blob(self, rev: str, path: str) -> bytes | None:
        done = self.run("cat-file", "blob", f"{rev}:{path}", check=False)
        return done.stdout if done.returncode == 0 else None

    def gitlink(self) -> str | None:
        """The path of the first submodule entry (mode 160000) in the index, if any.

        Asked of every sync, which runs a handful of git commands when nothing changed:
        git is asked (`git ls-files -s`) only when the index file holds the four bytes a
        gitlink's mode is written as (`00 00 e0 00`), which a folder without one seldom
        does (a blob id or a stat field that happens to hold them costs that one git
        command, never a wrong answer). A split index's shared part is not looked in."""
        try:
            with open(self.git_dir / "index", "rb") as index:
                if _GITLINK_MODE_BYTES not in index.read():
                    return None
        except OSError:
            return None
        staged = b"\x00" + self.run("ls-files", "-s", "-z").stdout
        at = staged.find(b"\x00160000 ")  # a search of the bytes, not a parse of each record
        if at < 0:
            return None
        record = staged[at + 1:].split(b"\x00", 1)[0]
        return os.fsdecode(record.partition(b"\t")[2])

    def entries(self, old: str | None, new: str) -> list[tuple[str, str, str]]:
        """(mode, path, object id) of each file `new` holds that `old` does not hold alike
        (all of `new` when `old` is None): what a merge of `new` may check out."""
        if old is None:
            return [(mode, path, blob) for path, (mode, blob) in self._listing(new).items()]
        return [(mode, path, blob) for mode, status, path, blob, _ in self._diff(old, new)
                if status != "D"]

    def blob_changes(self, old: str, new: str) -> list[tuple[str, str, str, str, str]]:
        """(status letter, path, old blob id, new blob id, new mode) of each file that
        differs between two commits, renames not followed (an id of zeros: no file)."""
        return [(status, path, before, blob, mode)
                for mode, status, path, blob, before in self._diff(old, new)]

    def _diff(self, old: str, new: str) -> list[tuple[str, str, str, str, str]]:
        """(new mode, status letter, path, new blob id, old blob id) of each file that differs
        between two commits, renames not followed; remembered for commit ids (the link
        check, the list of what a merge brings and the record of MEMORY.md ask it of the
        same two)."""
        if (old, new) in self._diffs:
            return self._diffs[(old, new)]
        records = self.run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old,
                           new).stdout.split(b"\0")
        found: list[tuple[str, str, str, str, str]] = []
        for meta, path in zip(records[::2], records[1::2], strict=False):
            fields = meta.split()
            if len(fields) >= 5:
                found.append((fields[1].decode(), fields[4].decode()[:1], os.fsdecode(path),
                              fields[3].decode(), fields[2].decode()))
        if is_object_id(old) and is_object_id(new):
            self._diffs[(old, new)] = found
        return found

    def tree(self, rev: str) -> dict[str, str]:
        """path -> blob id of every file in `rev` (a commit's, remembered: it never changes)."""
        return {path: blob for path, (_, blob) in self._listing(rev).items()}

    def _listing(self, rev: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, object id) of every file in `rev`, with one `git ls-tree` (a commit's
        remembered: the link check and the record of MEMORY.md of a join ask it of one)."""
        if rev in self._trees:
            return self._trees[rev]
        entries: dict[str, tuple[str, str]] = {}
        # `-l`: each blob's size too, which `sizes` then knows without asking git again.
        for record in self.run("ls-tree", "-r", "-l", "-z", "--full-tree",
                               rev).stdout.split(b"\0"):
            meta, _, path = record.partition(b"\t")
            fields = meta.split()
            if len(fields) == 4:
                entries[os.fsdecode(path)] = (fields[0].decode(), fields[2].decode())
                if fields[3].isdigit():
                    self._sizes[fields[2].decode()] = int(fields[3])
        if is_object_id(rev):
            self._trees[rev] = entries
        return entries

    def merge_base(self, one: str, other: str) -> str | None:
        """The best common ancestor of two commits (given by id), None when they have none."""
        key = (one, other)
        if key not in self._bases:
            done = self.run("merge-base", one, other, check=False)
            self._bases[key] = done.stdout.decode().strip() or None \
                if done.returncode == 0 else None
        return self._bases[key]

    def name_status(self, old: str, new: str) -> dict[str, str]:
        """path -> git's status letter (A, D, M, T) of each file that differs between two
        commits, renames not followed."""
        if old == new:
            return {}
        records = self.run("diff-tree", "-r", "-z", "--no-renames", "--name-status", old,
                           new).stdout.split(b"\0")
        return {os.fsdecode(path): status.decode()[:1]
                for status, path in zip(records[::2], records[1::2], strict=False) if path}

    def changed_paths(self, old: str | None, new: str) -> list[str]:
        """Files that differ between two commits (all of `new` when `old` is None)."""
        if old is None:
            return sorted(self.tree(new))
        if old == new:
            return []
        return sorted(path for _, _, path, _, _ in self._diff(old, new))

    def changes(self, old: str, new: str) -> dict[str, str | None]:
        """path -> blob id in `new` (None: deleted) of each file that differs between two
        commits: with `old`'s files, what `new` holds, without listing all of `new`."""
        if old == new:
            return {}
        return {path: None if status == "D" else blob
                for _, status, path, blob, _ in self._diff(old, new)}


def _host_name() -> str:
    """The machine's host name (`socket.gethostname()`, without importing socket: 7 ms)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def _config_key(key: str) -> str:
    """A config key as git compares it: section and name in any case, a subsection exactly."""
    section, _, rest = key.partition(".")
    middle, dot, name = rest.rpartition(".")
    return f"{section.lower()}.{middle}{dot}{name.lower()}"


def is_object_id(rev: str) -> bool:
    """Whether `rev` is an object id written out (40 hex digits, 64 in a SHA-256
    repository): what it names never changes, as a branch's or `HEAD`'s target does."""
    return re.fullmatch(r"[0-9a-f]{40,64}", rev) is not None


def error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    """The line of git's output that says why it failed: its first error, or what came
    before it (`ssh: Could not resolve hostname …`, `error: gpg failed to sign the data`,
    not the consequence after it, `fatal: Could not read from remote repository`)."""
    lines = [
        line.strip() for line in (done.stderr or done.stdout or b"").decode(
            "utf-8", "replace").splitlines() if line.strip()
    ]
    said = [line for line in lines if not line.startswith(("hint:", "warning:", "To "))]
    for number, line in enumerate(said):
        if line.startswith(("fatal:", "error:")):
            return said[0] if number else line
    return (lines or [f"exit status {done.returncode}"])[-1]


def _command(args: Sequence[str]) -> str:
    """git's subcommand among its arguments (`-c key=value` options come first)."""
    for number, arg in enumerate(args):
        if not arg.startswith("-") and (number == 0 or args[number - 1] != "-c"):
            return arg
    return "git"


def local_remote(url: str | None) -> str | None:
    """`url` as given on a command line, with a relative path on this machine (`../remote.git`)
    made absolute from the working folder, as `git clone` reads it: git, run in the memory
    folder, would read it from there, another folder. A URL (`https://`, `host:path`) or an
    absolute path is kept as it is."""
    if not url or "://" in url or os.path.isabs(url) or url.startswith("~"):
        return url
    if ":" in url.split("/", 1)[0] and not os.path.exists(url):
        return url  # `host:path`, git's scp-like syntax
    return os.path.abspath(url) if os.path.exists(url) else url


def shown_url(url: str | None) -> str | None:
    """A remote's URL as sage-mem prints it: a password (a token) in it masked,
    `https://me:****@host/x.git`, as git's own messages show it."""
    if url is None:
        return None
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/@:]*):[^/@]*@", r"\1:****@", url)


def machine_label(name: str) -> str:
    """A machine name as it may appear in a file name: `Lap Top.local` -> `lap-top`."""
    label = re.sub(r"[^a-z0-9]+", "-", name.split(".", 1)[0].lower()).strip("-")
    return label[:40] or "other"


def driver_command() -> str:
    """What git runs to merge a memory file (`%O %A %B %P`: base, ours, theirs, its path)."""
    return f"{shlex.quote(sys.executable)} -m sage_mem merge-driver %O %A %B %P"


def ensure_setup(git: Git, root: Path) -> bool:
    """Register the merge driver in `.gitattributes` and the repository's config, and
    install the pre-push hook (a note in `git.notes` when it cannot be).

    Returns True when `.gitattributes` changed. The config is the clone's own
    (`.git/config`), rewritten when this Python moved.
    """
    if git.config(f"merge.{DRIVER}.driver") != driver_command():
        git.set_config(f"merge.{DRIVER}.name", "sage-mem: memories merged field by field")
        git.set_config(f"merge.{DRIVER}.driver", driver_command())
    for key, value in SAFE_CONFIG:
        if git.config(key) != value:
            git.set_config(key, value)
    note = install_pre_push(git)
    if note and note not in git.notes:
        git.notes.append(note)
    return add_attribute_line(root / ".gitattributes")


PRE_PUSH_MARK = "# sage-mem pre-push hook"
CHAINED_HOOK = "pre-push.before-sage-mem"
ALLOW_SECRET_ENV = "SAGE_MEM_ALLOW_SECRET"
"""Set to 1 for a push the pre-push hook lets through unchecked (`sync --allow-secret`'s)."""
CHECKED_ENV = "SAGE_MEM_PUSH_CHECKED"
"""Set by sync on its own push, which it checked already: the hook does not scan again."""


def pre_push_script() -> str:
    """The hook: the check (unless the push is sync's or allowed), then the hook it replaced.

    stdin (the refs being pushed) is read once and given to both. A Python that is gone
    (sage-mem moved) stops the push with a line saying what to run: never let through
    unchecked in silence.
    """
    python = shlex.quote(sys.executable)
    return f"""#!/bin/sh
{PRE_PUSH_MARK}: a push carrying a file the secret scan flags is refused.
# Push anyway: {ALLOW_SECRET_ENV}=1 git push (or sage-mem sync --allow-secret).
# A hook that was here before is kept as {CHAINED_HOOK}, run after the check.
refs=$(cat)
if [ -z "${CHECKED_ENV}" ] && [ "${ALLOW_SECRET_ENV}" != 1 ]; then
  if [ ! -x {python} ]; then
    echo "sage-mem: pre-push check: "{python}" is gone; run sage-mem sync to set it again," \
      "or push unchecked with {ALLOW_SECRET_ENV}=1" >&2
    exit 1
  fi
  printf '%s\n' "$refs" | {python} -m sage_mem pre-push "$1" "$2" || exit 1
fi
chained="$(dirname "$0")/{CHAINED_HOOK}"
if [ -x "$chained" ]; then
  printf '%s\n' "$refs" | "$chained" "$@" || exit $?
fi
exit 0
"""


def install_pre_push(git: Git) -> str | None:
    """Put the pre-push hook in the repository's hooks folder; a note when it cannot be.

    A hook that is not sage-mem's is renamed `pre-push.before-sage-mem` (never replaced;
    when that name is taken too, nothing is installed) and run by ours after the check.
    """
    git_dir = git.git_dir
    hooks = git.hooks
    if os.path.realpath(hooks) != os.path.realpath(git_dir / "hooks"):
        return (f"no pre-push check installed: core.hooksPath is {hooks}, shared with other "
                "repositories; a plain git push here is not checked for secrets")
    hook = hooks / "pre-push"
    script = pre_push_script().encode()
    try:
        current = read_in_tree(git_dir, "hooks/pre-push", limit=_MAX_ATTRIBUTES).raw
    except SyncError as exc:
        return f"no pre-push check installed: {exc.message}"
    if current == script:
        return None
    hooks.mkdir(mode=0o770 if file_mode(git.root) == 0o660 else 0o700, exist_ok=True)
    if current is not None and PRE_PUSH_MARK.encode() not in current:
        kept = hooks / CHAINED_HOOK
        if os.path.lexists(kept):
            return (f"no pre-push check installed: {hook} is not sage-mem's and "
                    f"{kept.name} is taken")
        os.rename(hook, kept)  # the person's hook, kept whole under a name ours runs
    tmp = hooks / f".pre-push.{os.getpid()}.tmp"
    tmp.write_bytes(script)
    # As private as the folder (a group's when it is shared with one), and runnable.
    tmp.chmod(0o770 if file_mode(git.root) == 0o660 else 0o700)
    os.replace(tmp, hook)
    return None


def add_attribute_line(path: Path) -> bool:
    """Append `*.md merge=sage-mem` to a `.gitattributes` that lacks it; create one if none."""
    def edited(seen: object) -> bytes | None:
        raw = getattr(seen, "raw", None)
        if raw is None:
            return (ATTRIBUTE_LINE + "\n").encode()
        lines = raw.decode("utf-8", "replace").splitlines()
        if any(line.split()[:1] == ["*.md"] and f"merge={DRIVER}" in line.split()
               for line in lines):
            return None
        separator = b"" if raw.endswith(b"\n") or not raw else b"\n"
        return raw + separator + (ATTRIBUTE_LINE + "\n").encode()

    mode = file_mode(path.parent)
    try:
        _, written = rewrite(
            path, edited, read=lambda p: read_in_tree(path.parent, p.name, limit=_MAX_ATTRIBUTES),
            mode=mode, limit=_MAX_ATTRIBUTES,
        )
    except FileChanged:
        return False
    return written is not None


def read_in_tree(root: Path, rel: str, *, limit: int) -> Seen:
    """The regular file at `rel` below `root`, never following a symbolic link on the way.

    Each folder on the path and the file itself is opened with O_NOFOLLOW from the one
    before it, so a link swapped in meanwhile is refused too. `Seen.absent()` when there
    is no file; LinkRefused for a link (or a FIFO, a device: what is not a regular file);
    SyncError when it cannot be read or is over `limit` bytes.
    """
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise LinkRefused(f"{rel}: not a path inside the folder")
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    directory = getattr(os, "O_DIRECTORY", 0)
    fd = os.open(root, os.O_RDONLY | directory)
    try:
        for number, part in enumerate(parts):
            last = number == len(parts) - 1
            flags = os.O_RDONLY | nofollow | (os.O_NONBLOCK if last else directory)
            try:
                next_fd = os.open(part, flags, dir_fd=fd)
            except OSError as exc:  # ELOOP (or ENOTDIR) for a link: said as one
                if _is_link(fd, part):
                    raise _refused(root, parts[: number + 1], rel) from None
                if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                    return Seen.absent()
                raise SyncError(f"{rel}: cannot read: {exc.strerror or exc}") from None
            os.close(fd)
            fd = next_fd
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LinkRefused(f"{rel}: not a regular file; sync reads only files")
        if st.st_size > limit:
            raise SyncError(f"{rel}: over {limit >> 10} KB; not read")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        raw = b"".join(chunks)
        if len(raw) > limit:
            raise SyncError(f"{rel}: over {limit >> 10} KB; not read")
        after = os.fstat(fd)
    finally:
        os.close(fd)
    return Seen(raw, identity(after), stat.S_IMODE(after.st_mode))


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def _refused(root: Path, parts: list[str], rel: str) -> LinkRefused:
    link = "/".join(parts)
    try:
        target = os.readlink(root.joinpath(*parts))
    except OSError:
        target = "?"
    where = rel if link == rel else f"{rel} (through {link})"
    return LinkRefused(
        f"{where}: a symbolic link to {target}; sync never follows one (a remote could make "
        f"it read any file of yours): replace it with a file (git rm {link}), then sync")


def write_new(path: Path, data: bytes) -> bool:
    """Create `path` holding `data`, never over a file; False when one is there."""
    try:
        create(path, data, mode=file_mode(path.parent))
    except FileChanged:
        return False
    return True


def quoted_paths(paths: Sequence[str]) -> bytes:
    """Paths for `--pathspec-from-file=- --pathspec-file-nul` (taken literally: `run` sets
    GIT_LITERAL_PATHSPECS)."""
    return b"".join(os.fsencode(p) + b"\0" for p in paths)
