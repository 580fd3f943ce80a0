"""The health summary of a folder, and the audit, taken before and after a run."""

from __future__ import annotations

from typing import Any

from ..memory.value import CATEGORIES
from ..store import MemoryStore


def health(store: MemoryStore) -> dict[str, Any]:
    """Totals, average trust and length, coverage per category; from the index, no file reads."""
    live = store.list()
    archived = [m for m in store.list(archived=True) if m.archived]
    categories: dict[str, int] = {name: 0 for name in CATEGORIES}
    for memory in live:
        key = memory.category if memory.category in CATEGORIES else "uncategorized"
        categories[key] = categories.get(key, 0) + 1
    count = len(live)
    return {
        "memories": count,
        "archived": len(archived),
        "unreadable": len(store.problems()),
        "averageTrust": round(sum(m.trust for m in live) / count, 3) if count else None,
        "averageLength": round(sum(len(m.body.strip()) for m in live) / count) if count else None,
        "withSummary": sum(1 for m in live if m.summary),
        "locked": sum(1 for m in live if m.locked),
        "categories": categories,
    }


def audit_summary(store: MemoryStore) -> dict[str, Any] | None:
    """The audit's report as data, or None when the audit module is not available.

    Imported lazily: the audit is optional to a run, and a failing audit must
    not stop one (its error is recorded instead).
    """
    try:
        from ..checks.audit import audit
    except ImportError:
        return None
    try:
        report = audit(store)
    except Exception as exc:  # noqa: BLE001 - the audit reports; it must never break a run
        return {"error": f"audit failed: {exc}"}
    data = report.to_dict()
    checks: dict[str, int] = {}
    for finding in report.findings:
        name = getattr(finding, "check", "finding")
        checks[name] = checks.get(name, 0) + 1
    return {
        "count": len(report.findings),
        "checks": dict(sorted(checks.items())),
        "findings": data.get("findings", [])[:200],
    }
