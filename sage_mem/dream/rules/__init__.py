"""The rule-based consolidator: each rule a module with `NAME` and `run(ctx)`, run in order.

Relative dates go first, so that the rules after see the dates written (no change a
run makes moves `updated`: `Applier.rewrite` keeps the memory's age); near-duplicates
and `supersedes:` run before summaries and links, so that no work is spent on a memory
about to be archived and links can follow the memories archived in this run.
"""

from __future__ import annotations

from collections.abc import Callable

from .context import RuleContext

__all__ = ["RuleContext", "all_rules"]


def all_rules() -> list[tuple[str, Callable[[RuleContext], None]]]:
    from . import (
        categories,
        contradictions,
        dates,
        dedupe,
        links,
        stamps,
        summaries,
        supersedes,
    )

    return [
        (dates.NAME, dates.run),
        (stamps.NAME, stamps.run),
        (supersedes.NAME, supersedes.run),
        (dedupe.NAME, dedupe.run),
        (contradictions.NAME, contradictions.run),
        (summaries.NAME, summaries.run),
        (categories.NAME, categories.run),
        (links.NAME, links.run),
    ]
