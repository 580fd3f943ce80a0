"""sage-mem: memory that lasts across sessions for AI agents, as plain markdown files.

    from sage_mem import MemoryStore
    with MemoryStore("~/.sage-mem/memory") as store:
        for hit in store.search("我的猫叫什么", limit=5):
            print(hit.id, hit.score, hit.description)
"""

from __future__ import annotations

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
from .index import Hit
from .memory import CATEGORIES, Memory
from .store import MemoryStore, Problem

__version__ = "0.1.0"

__all__ = [
    "CATEGORIES",
    "ConflictError",
    "DreamError",
    "FolderError",
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
