"""sage-mem: memory that lasts across sessions for AI agents, as plain markdown files.

    from sage_mem import MemoryStore
    with MemoryStore("~/.sage-mem/memory") as store:
        for hit in store.search("我的猫叫什么", limit=5):
            print(hit.id, hit.score, hit.description)

The names below are imported on first use (PEP 562): the Claude Code hook runs
a new process for every prompt and imports `sage_mem.agents.hooks`, which must not pay
for the whole public API first.
"""

from __future__ import annotations

# For type checkers, which treat this name as typing.TYPE_CHECKING (typing costs 2 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .errors import (
        ConflictError,
        DreamError,
        FolderError,
        InvalidId,
        InvalidMemory,
        MemoryLocked,
        MemoryNotFound,
        RunNotFound,
        SageMemError,
        SecretRefused,
        StoreLocked,
    )
    from .folders import Folders
    from .memory.value import CATEGORIES, Memory
    from .search.index import Hit
    from .store import MemoryStore, Problem

__version__ = "0.1.0"
# The command's name, in its messages: here, below `cli` and `commands`, which both say it.
PROG = "sage-mem"

__all__ = [
    "CATEGORIES",
    "ConflictError",
    "DreamError",
    "FolderError",
    "Folders",
    "Hit",
    "InvalidId",
    "InvalidMemory",
    "Memory",
    "MemoryLocked",
    "MemoryNotFound",
    "MemoryStore",
    "Problem",
    "RunNotFound",
    "SageMemError",
    "SecretRefused",
    "StoreLocked",
    "__version__",
]

# public name -> the module that defines it
_HOMES = {
    "CATEGORIES": "memory.value",
    "ConflictError": "errors",
    "DreamError": "errors",
    "FolderError": "errors",
    "Folders": "folders",
    "Hit": "search.index",
    "InvalidId": "errors",
    "InvalidMemory": "errors",
    "Memory": "memory.value",
    "MemoryLocked": "errors",
    "MemoryNotFound": "errors",
    "MemoryStore": "store",
    "Problem": "store",
    "RunNotFound": "errors",
    "SageMemError": "errors",
    "SecretRefused": "errors",
    "StoreLocked": "errors",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        # Also how `from sage_mem import files` finds the submodule: importlib
        # falls back to importing it when the attribute is missing.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
