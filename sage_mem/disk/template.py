"""Creating a memory folder: `sage-mem init`, its `--examples` and `--git`.

A new memory folder holds nothing but MEMORY.md: nothing in it may pose as a
fact about the person, and a baseline is put into every session as one.
`--examples` adds the example memories of `memory_template/`, marked on the
way in (`example_memory`): the description starts with "Example: ", the tag
`example` is there, none is a baseline (the template's `user_profile` is
one, because the tests use the template as a folder with a baseline), and
`created`/`updated` are the moment `init` made them, written as every new
memory is stamped (a fresh example is not "updated 5 days ago"). They go
through the store like any new memory (`MemoryStore.create_file`): under the
write lock, never over a file.

Permissions follow `safe_io`: a folder `init` creates is 0700, and so are the
missing folders above it; files get the folder's mode (`file_mode`: 0600, or
0660 in a folder its owner shared with a group), whatever the umask. With
`--git`, the repository is made as private as the folder
(`core.sharedRepository`), since it will hold copies of every memory.

`--git` makes the repository on the branch `main` (whatever the user's
`init.defaultBranch`), registers sage-mem's merge driver and makes a first
commit of the folder as it is, so `git push -u origin main` works at once;
`--remote URL` also sets `origin`. The git work is `sync.steps.first_commit`'s
(the one place that commits, holding back files the secret scan flags): it is
imported only for `--git`.

The template ships inside the wheel as `sage_mem/memory_template/`; in a source
checkout or an editable install it is the repository's top-level
`memory_template/`.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FileChanged, FolderError
from ..memory.file_format import DELETE, edit_frontmatter, parse_bytes
from ..memory.value import now_iso
from .folder import INDEX_FILE, MemoryFolder, refuse_misplaced
from .safe_io import create, file_mode, make_private_dirs

GITATTRIBUTES = "* text=auto eol=lf\n*.md text eol=lf merge=sage-mem\n"
# A write killed mid-way leaves its temp file (a dot-file, never a memory).
GITIGNORE = "# temp files of interrupted sage-mem writes\n.*.tmp\n"
EXAMPLE_TAG = "example"
EXAMPLE_PREFIX = "Example: "


def template_dir() -> Path:
    """Where the example memories are, installed or in a checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "memory_template", package.parent / "memory_template"):
        if candidate.is_dir():
            return candidate
    raise FolderError("the memory template is missing from this installation of sage-mem")


@dataclass
class InitResult:
    """What `init_folder` did."""

    root: Path
    state_dir: Path | None = None
    created: bool = False
    copied: list[str] = field(default_factory=list)
    existing: int = 0
    git_initialized: bool = False
    gitattributes_written: bool = False
    first_commit: str | None = None
    remote: str | None = None


def init_folder(
    target: Path, *, git: bool = False, examples: bool = False, remote: str | None = None,
) -> InitResult:
    """Make `target` a memory folder (MEMORY.md; with `examples`, the example memories).

    A folder that already holds memories keeps them as they are: no examples
    are added to it. `remote` implies `git`.
    """
    from ..store import MemoryStore

    refuse_misplaced(target)
    folder = MemoryFolder(target)
    root = folder.root
    if os.path.lexists(root) and not root.is_dir():
        raise FolderError(f"{root}: exists and is not a folder", path=root)
    result = InitResult(root=root, created=not root.exists())
    result.existing = sum(1 for _ in folder.iter_files()) if root.is_dir() else 0
    make_private_dirs(root)
    store = MemoryStore(root, watch=False)
    result.state_dir = store.folder.state_dir
    if examples and not result.existing:
        source = template_dir()
        stamp = now_iso()  # one moment for every example of this init
        with store.batch():
            for path in sorted(source.rglob("*.md")):
                relative = path.relative_to(source).as_posix()
                if relative == INDEX_FILE or os.path.lexists(root / relative):
                    continue
                try:
                    data = example_memory(path.read_bytes(), path, stamp=stamp)
                    store.create_file(relative[:-3], data)
                except FileChanged:
                    continue  # created meanwhile: never replaced
                result.copied.append(relative[:-3])
    store.regenerate_index()
    if git or remote:
        _init_git(root, result, remote)
    return result


def example_memory(raw: bytes, path: Path | str = "<example>", *,
                   stamp: str | None = None) -> bytes:
    """A template memory as `init --examples` installs it: marked an example, never a baseline,
    made and updated at `stamp` (now_iso's form; default now), as `write` stamps a new memory."""
    parsed = parse_bytes(raw, path)
    changes: dict[str, object] = {key: DELETE for key in ("baseline", "baselinePriority")
                                  if key in parsed.meta}
    stamp = stamp or now_iso()
    changes["created"], changes["updated"] = stamp[:10], stamp
    description = str(parsed.meta.get("description") or "")
    if not description.startswith(EXAMPLE_PREFIX):
        changes["description"] = EXAMPLE_PREFIX + description
    tags = parsed.meta.get("tags")
    tags = list(tags) if isinstance(tags, list) else []
    if EXAMPLE_TAG not in tags:
        changes["tags"] = [EXAMPLE_TAG, *tags]
    return edit_frontmatter(parsed, changes, path=path).encode("utf-8")


def _init_git(root: Path, result: InitResult, remote: str | None) -> None:
    from ..sync.git import Git, ensure_setup, git_environment
    from ..sync.steps import first_commit

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
    result.first_commit = first_commit(root, remote)
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
