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
write lock, never over a file. The disk floor does not import the store: the
caller hands in how to open one (`open_store`, `MemoryStore` for the folder,
unwatched), which `init_folder` uses as a `NewFolderStore`.

Permissions follow `safe_io`: a folder `init` creates is 0700, and so are the
missing folders above it; files get the folder's mode (`file_mode`: 0600, or
0660 in a folder its owner shared with a group), whatever the umask. With
`--git`, the repository is made as private as the folder
(`core.sharedRepository`), since it will hold copies of every memory.

`--git` makes the repository on the branch `main` (whatever the user's
`init.defaultBranch`), registers sage-mem's merge driver and makes a first
commit of the folder as it is, so `git push -u origin main` works at once;
`--remote URL` also sets `origin`. The git work is `sync.steps.init_repository`'s
(sync is the one place that commits, holding back files the secret scan flags):
`init --git` calls it after `init_folder`, from the room above both.

The template ships inside the wheel as `sage_mem/memory_template/`; in a source
checkout or an editable install it is the repository's top-level
`memory_template/`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..errors import FileChanged, FolderError
from .folder import INDEX_FILE, MemoryFolder, refuse_misplaced
from .safe_io import make_private_dirs

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


class NewFolderStore(Protocol):
    """What `init_folder` does with the folder's store (a MemoryStore): all it knows of it."""

    @property
    def folder(self) -> MemoryFolder: ...

    def batch(self) -> AbstractContextManager[None]: ...

    def create_file(self, memory_id: str, data: bytes) -> object: ...

    def regenerate_index(self) -> object: ...


def init_folder(target: Path, open_store: Callable[[Path], NewFolderStore], *,
                examples: bool = False,
                regenerate: Callable[[MemoryFolder], object] | None = None) -> InitResult:
    """Make `target` a memory folder (MEMORY.md; with `examples`, the example memories).

    `open_store(root)` opens the folder's store, unwatched. A folder that
    already holds memories keeps them as they are: no examples are added to it.
    `regenerate(folder)`, when given, makes MEMORY.md of a folder that holds no
    memory and gets no example, where the store would be opened only for that
    (a join's: sync makes it as it makes every MEMORY.md, `index_file.regenerate`,
    and imports no store and no search module, ~0.04 s of CPU).
    """
    refuse_misplaced(target)
    folder = MemoryFolder(target)
    root = folder.root
    if os.path.lexists(root) and not root.is_dir():
        raise FolderError(f"{root}: exists and is not a folder", path=root)
    result = InitResult(root=root, created=not root.exists())
    result.existing = sum(1 for _ in folder.iter_files()) if root.is_dir() else 0
    make_private_dirs(root)
    if regenerate is not None and not result.existing and not examples:
        result.state_dir = folder.state_dir
        regenerate(folder)
        return result
    store = open_store(root)
    result.state_dir = store.folder.state_dir
    if examples and not result.existing:
        from ..memory.value import now_iso

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
    return result


def example_memory(raw: bytes, path: Path | str = "<example>", *,
                   stamp: str | None = None) -> bytes:
    """A template memory as `init --examples` installs it: marked an example, never a baseline,
    made and updated at `stamp` (now_iso's form; default now), as `write` stamps a new memory."""
    from ..memory.file_format import DELETE, edit_frontmatter, parse_bytes
    from ..memory.value import now_iso

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
