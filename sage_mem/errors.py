"""The sage-mem error tree.

    SageMemError                  root: every error sage-mem raises on purpose
    ├── MemoryNotFound            no memory with that id
    ├── InvalidId                 an id that is malformed or escapes the folder
    ├── InvalidMemory             a file or a value that cannot be parsed or accepted
    │   └── SecretRefused         a write whose text looks like a credential
    ├── ConflictError             expected_sha256 did not match the file on disk
    │   └── FileChanged           the file changed between our read and our write
    ├── MemoryLocked              the memory says `locked: true`
    ├── StoreLocked               another process holds a lock we needed
    ├── FolderError               the memory folder is missing or unusable
    └── DreamError                a dream or rollback request that cannot be carried out
        ├── RunNotFound           no dream run or rollback with that id
        └── ToolRefused           a dream model's tool call this run does not allow

Errors are turned into user-facing output at exactly three edges: the CLI prints
one line and exits 1, the MCP server returns a tool error, and hooks log to
stderr and exit 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    class Place(TypedDict, total=False):
        """`InvalidMemory`'s keywords (where in a file), as a subclass passes them on whole
        (mypy holds the two to each other; a type only: a TypedDict class is a millisecond of
        every hook's start)."""

        path: Path | str | None
        line: int | None
        column: int | None


class SageMemError(Exception):
    """Root of every error sage-mem raises on purpose."""

    def __init__(self, message: str, *, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = Path(path) if path is not None else None

    def __str__(self) -> str:
        return self.message


class MemoryNotFound(SageMemError):
    """Raised when no memory exists with the requested id."""


class InvalidId(SageMemError):
    """Raised for an id that is malformed, reserved, or escapes the memory folder."""


class InvalidMemory(SageMemError):
    """Raised when a memory file or a value cannot be parsed or accepted."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message, path=path)
        self.line = line
        self.column = column


class SecretRefused(InvalidMemory):
    """Raised when a write would store text that looks like a credential (unless allow_secret)."""

    def __init__(self, message: str, *, kind: str = "", **place: Unpack[Place]) -> None:
        super().__init__(message, **place)
        self.kind = kind


class ConflictError(SageMemError):
    """Raised when expected_sha256 does not match the file as it is on disk.

    `actual_sha256` is the file's sha256 now ("" when it is gone); `fields`
    names the fields (frontmatter keys, and `body`) of the refused write whose
    value the file on disk does not hold, when the writer said what it meant
    to write: without the bytes the writer read, the store cannot tell who
    changed them, only where the two differ.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        actual_sha256: str = "",
        fields: Sequence[str] = (),
    ) -> None:
        super().__init__(message, path=path)
        self.actual_sha256 = actual_sha256
        self.fields = tuple(fields)


class FileChanged(ConflictError):
    """Raised when a file changed on disk between the read a write was based on and its rename."""


class MemoryLocked(SageMemError):
    """Raised when a change is asked of a memory marked `locked: true`."""


class StoreLocked(SageMemError):
    """Raised when a lock could not be taken: held by another process too long, or a file
    system without locks."""


class FolderError(SageMemError):
    """Raised when the memory folder is missing, not a folder, or not usable."""


class DreamError(SageMemError):
    """Raised for a dream or rollback request that cannot be carried out (bad mode, no point)."""


class RunNotFound(DreamError):
    """Raised when no dream run or rollback has the requested id."""


class ToolRefused(DreamError):
    """Raised to a dream run's model for a tool call the run does not allow (and recorded)."""

