"""Autodream: tidy the memory folder, show every change, undo any run (DESIGN §7).

    from sage_mem.dream import run_dream, list_runs, rollback
    result = run_dream(store, mode="rewrite")       # DreamResult
    runs = list_runs(store)                         # [RunInfo], oldest first
    undone = rollback(store, result.run_id)         # RollbackResult

Modules: `gates` (time and session gates, the lock), `snapshots` (rollback
points), `manifest` (the record of a run), `changes` (the one door for
changes), `rules/` (the rule-based consolidator), `model` (the optional model
pass), `transcripts` (the agent's session transcripts, an opt-in input of the
model pass), `report` (the human report), `runner` (one run), `rollback`.
"""

from __future__ import annotations

from ..errors import DreamError, RunNotFound
from .config import DreamConfig
from .rollback import RollbackResult, rollback
from .runner import DreamResult, RunInfo, format_runs, list_runs, run_dream

__all__ = [
    "DreamConfig",
    "DreamError",
    "DreamResult",
    "RollbackResult",
    "RunInfo",
    "RunNotFound",
    "format_runs",
    "list_runs",
    "rollback",
    "run_dream",
]
