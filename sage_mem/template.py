"""Creating a memory folder: the starter memories of `memory_template/`, and `--git`.

The template ships inside the wheel as `sage_mem/memory_template/`; in a source
checkout or an editable install it is the repository's top-level
`memory_template/`.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .errors import FolderError
from .folder import INDEX_FILE, MemoryFolder

GITATTRIBUTES = "* text=auto eol=lf\n*.md text eol=lf\n"
# A write killed mid-way leaves its temp file (a dot-file, never a memory).
GITIGNORE = "# temp files of interrupted sage-mem writes\n.*.tmp\n"


def template_dir() -> Path:
    """Where the starter memories are, installed or in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "memory_template", here.parent / "memory_template"):
        if candidate.is_dir():
            return candidate
    raise FolderError("the memory template is missing from this installation of sage-mem")


@dataclass
class InitResult:
    """What `init_folder` did."""

    root: Path
    copied: list[str] = field(default_factory=list)
    existing: int = 0
    git_initialized: bool = False
    gitattributes_written: bool = False


def init_folder(target: Path, *, git: bool = False) -> InitResult:
    """Create `target` from the template; a folder that already has memories is left as it is."""
    folder = MemoryFolder(target)
    root = folder.root
    if root.exists() and not root.is_dir():
        raise FolderError(f"{root}: exists and is not a folder", path=root)
    result = InitResult(root=root)
    existing = list(folder.iter_files()) if root.is_dir() else []
    result.existing = len(existing)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not existing:
        source = template_dir()
        for path in sorted(source.rglob("*.md")):
            relative = path.relative_to(source)
            if relative.as_posix() == INDEX_FILE:
                continue
            destination = root / relative
            if destination.exists():
                continue
            destination.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
            destination.chmod(0o600)
            result.copied.append(relative.as_posix()[:-3])
    if git:
        _init_git(root, result)
    return result


def _init_git(root: Path, result: InitResult) -> None:
    attributes = root / ".gitattributes"
    if not attributes.exists():
        attributes.write_text(GITATTRIBUTES, encoding="utf-8")
        result.gitattributes_written = True
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text(GITIGNORE, encoding="utf-8")
    if (root / ".git").exists():
        return
    try:
        subprocess.run(
            ["git", "init", "--quiet", str(root)], check=True, capture_output=True, text=True
        )
    except FileNotFoundError:
        raise FolderError("`--git` needs git, and git is not installed") from None
    except subprocess.CalledProcessError as exc:
        message = (exc.stderr or "").strip().splitlines()
        raise FolderError(f"git init failed: {message[-1] if message else exc}") from None
    result.git_initialized = True
