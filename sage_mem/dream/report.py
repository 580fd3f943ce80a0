"""The human report of a run or a rollback, `memory/autodream/<runId>.md`: readable in a minute.

It leads with what happened and how to undo it, then one short section per
rule, then what was refused and what a person should look at, then the health
and audit figures before and after. Long lists are cut (the manifest has
everything, and the report says where it is).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_ITEMS = 25

RULE_TITLES = {
    "relative-dates": ("Relative dates made absolute", "Relative dates to make absolute"),
    "supersedes": ("Superseded memories archived", "Superseded memories to archive"),
    "near-duplicates": ("Near-duplicates merged", "Near-duplicates to merge"),
    "summaries": ("Summaries added", "Summaries to add"),
    "categories": ("Memories moved to the category they fit", "Memories to move to their category"),
    "links": ("Links fixed", "Links to fix"),
    "index": ("MEMORY.md", "MEMORY.md"),
    "model": ("Changes by the model pass", "Changes the model pass proposed"),
}
"""Each rule's section titles (its changes made, its changes proposed), in the report's order."""


def rule_title(rule: str, *, done: bool) -> str:
    """The title of `rule`'s changes: made (`done`) or proposed; a rule without one, its name."""
    titles = RULE_TITLES.get(rule)
    return rule if titles is None else titles[0 if done else 1]


HEALTH_ROWS = (
    ("memories", "memories in service"),
    ("archived", "archived"),
    ("unreadable", "unreadable files"),
    ("averageTrust", "average trust"),
    ("averageLength", "average body length (characters)"),
    ("withSummary", "with a summary"),
    ("locked", "locked"),
)


def render_run(data: Mapping[str, Any], *, manifest_path: str) -> str:
    """The report of a dream run, from its manifest data."""
    run_id = data["runId"]
    rewrite = data.get("mode") == "rewrite"
    changes = [
        c for c in data.get("changes", []) if c.get("state") in ("applied", "proposed", "pending")
    ]
    refused = data.get("refused", [])
    notes = data.get("notes", [])
    lines = [f"# Autodream run {run_id}", ""]
    when = _when(data)
    if rewrite:
        lines.append(
            f"Rewrite run{when}: {_count(len(changes), 'change')}, {len(refused)} refused, "
            f"{_count(len(notes), 'thing')} for you to look at."
        )
        if changes:
            lines.append(f"Undo it with `sage-mem rollback {run_id}`; every file was copied first.")
    elif any(c.get("state") == "applied" for c in changes):
        done = [c for c in changes if c.get("state") == "applied"]
        lines.append(
            f"Report run{when}: **the agent changed {_count(len(done), 'file')} with its own "
            f"tools**, outside the run's (listed under the model pass). Undo it with "
            f"`sage-mem rollback {run_id}`; every file was copied first."
        )
    else:
        lines.append(
            f"Report run{when}: nothing in the folder was changed. A rewrite run "
            f"(`sage-mem dream --mode rewrite`) would make {_count(len(changes), 'change')}; "
            f"{len(refused)} would be refused; {_count(len(notes), 'thing')} for you to look at."
        )
    if data.get("error"):
        lines += ["", f"**The run stopped early:** {data['error']}"]
    lines.append("")

    by_rule: dict[str, list[Mapping[str, Any]]] = {}
    for change in changes:
        by_rule.setdefault(change.get("rule", "other"), []).append(change)
    if by_rule:
        lines += ["## " + ("What changed" if rewrite else "What a rewrite run would change"), ""]
        for rule, items in _ordered(by_rule):
            title = rule_title(rule, done=rewrite)
            lines.append(f"- {title}: {len(items)}")
        lines.append("")
        for rule, items in _ordered(by_rule):
            title = rule_title(rule, done=rewrite)
            lines += [f"### {title}", ""]
            lines += _cut([_change_line(item) for item in items])
            lines.append("")
    elif not data.get("error"):
        lines += ["Nothing needed tidying.", ""]

    if refused:
        lines += ["## Refused", ""]
        lines += _cut([_refused_line(r) for r in refused])
        lines.append("")
    if notes:
        lines += ["## For you to look at", ""]
        lines += _cut(
            [
                f"- `{n['file']}`: {n.get('message')}" if n.get("file") else f"- {n.get('message')}"
                for n in notes
            ]
        )
        lines.append("")

    lines += _health(data.get("health") or {}, rewrite)
    lines += _audit(data.get("audit") or {})
    model = data.get("model")
    if isinstance(model, Mapping) and model.get("status") not in (None, "not configured"):
        lines += [
            "## Model pass",
            "",
            f"{model.get('status')}: {model.get('detail', '')}".rstrip(": "),
            "",
        ]
    lines += [
        f"Every detail (bytes and sha256 before and after each change): `{manifest_path}`",
        "",
    ]
    return "\n".join(lines)


def render_rollback(data: Mapping[str, Any], *, manifest_path: str) -> str:
    """The report of a rollback, from its manifest data: what it skipped first."""
    rollback_id = data["runId"]
    target = data.get("target")
    changes = [c for c in data.get("changes", []) if c.get("state") in ("applied", "pending")]
    refused = data.get("refused", [])
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for entry in refused:
        by_kind.setdefault(str(entry.get("conflict") or "name"), []).append(entry)
    skipped = len(by_kind.get("changed", [])) + len(by_kind.get("name", []))
    forced = ", forced" if data.get("force") else ""
    lines = [
        f"# Rollback {rollback_id}",
        "",
        f"Rolled back run {target} (scope: {data.get('scope')}{forced}){_when(data)}: "
        f"{_count(len(changes), 'file')} put back or moved aside, "
        f"{_count(skipped, 'conflict')} skipped.",
        f"The folder as it was just before is kept: `sage-mem rollback {rollback_id}` undoes this.",
        "",
    ]
    sections = (
        (
            "changed",
            "Skipped: changed since the run (your version stays)",
            f"To put these back too: `sage-mem rollback {rollback_id}`, then "
            f"`sage-mem rollback {target} --force`.",
        ),
        ("name", "Skipped: name conflicts (nothing was overwritten)", ""),
        ("unreadable", "Left as they are: not regular files inside the folder", ""),
        ("damaged", "Not put back: the copy in the rollback point is damaged", ""),
    )
    for kind, title, after in sections:
        items = by_kind.get(kind)
        if not items:
            continue
        lines += [f"## {title}", ""]
        lines += _cut([f"- `{c['file']}`: {c.get('refusedBecause')}" for c in items])
        lines += ["", after, ""] if after else [""]
    restored = [c for c in changes if c.get("operation") in ("rewrite", "create")]
    moved = [c for c in changes if c.get("operation") == "archive"]
    if restored:
        lines += ["## Put back", ""]
        lines += _cut([f"- `{c['file']}`: {c.get('reason')}" for c in restored])
        lines.append("")
    if moved:
        lines += ["## Moved aside (into archive/, or into the rollback's own folder)", ""]
        lines += _cut(
            [
                f"- `{c['file']}` → `{(c.get('after') or {}).get('file', '?')}`: {c.get('reason')}"
                for c in moved
            ]
        )
        lines.append("")
    notes = data.get("notes", [])
    if notes:
        lines += ["## For you to look at", ""]
        lines += _cut([f"- `{n.get('file')}`: {n.get('message')}" for n in notes])
        lines.append("")
    lines += [f"Every detail: `{manifest_path}`", ""]
    return "\n".join(lines)


def _when(data: Mapping[str, Any]) -> str:
    started = str(data.get("started", ""))
    text = f", {started[:10]} {started[11:16]} UTC" if len(started) >= 16 else ""
    seconds = data.get("seconds")
    if isinstance(seconds, (int, float)):
        text += f", {seconds:.1f} s"
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _ordered(
    by_rule: Mapping[str, list[Mapping[str, Any]]],
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    order = list(RULE_TITLES)
    return sorted(
        by_rule.items(),
        key=lambda item: (order.index(item[0]) if item[0] in order else 99, item[0]),
    )


def _change_line(change: Mapping[str, Any]) -> str:
    reason = change.get("reason", "")
    if change.get("source") == "outside":
        reason = "**changed by the agent's own tools**, outside the restricted server"
    elif change.get("unexplained"):
        reason = "**unexplained** (no reason was given)"
    pending = (
        " (interrupted: may or may not have happened)" if change.get("state") == "pending" else ""
    )
    if change.get("operation") == "archive":
        moved = (change.get("after") or {}).get("file")
        where = f" → `{moved}`" if moved else ""
        return f"- archived `{change.get('file')}`{where}: {reason}{pending}"
    verb = {"create": "created", "rewrite": "rewrote", "delete": "deleted"}.get(
        change.get("operation", ""), "changed"
    )
    what = change.get("fields")
    fields = f" ({', '.join(what)})" if isinstance(what, list) and what else ""
    return f"- {verb} `{change.get('file')}`{fields}: {reason}{pending}"


def _refused_line(refused: Mapping[str, Any]) -> str:
    # A call that names no memory (a tool the run does not offer) has no file.
    where = f"`{refused['file']}`: " if refused.get("file") else ""
    return (
        f"- {where}{refused.get('operation')} ({refused.get('rule')}) refused: "
        f"{refused.get('refusedBecause')}. Wanted because: {refused.get('reason')}"
    )


def _cut(items: Sequence[str]) -> list[str]:
    if len(items) <= MAX_ITEMS:
        return list(items)
    return [*items[:MAX_ITEMS], f"- …and {len(items) - MAX_ITEMS} more (see the manifest)"]


def _health(health: Mapping[str, Any], rewrite: bool) -> list[str]:
    before, after = health.get("before"), health.get("after")
    if not isinstance(before, Mapping):
        return []
    after = after if isinstance(after, Mapping) else before
    lines = ["## Health", "", "| | before | after |", "| --- | --- | --- |"]
    for key, label in HEALTH_ROWS:
        lines.append(f"| {label} | {_value(before.get(key))} | {_value(after.get(key))} |")
    cats_before = before.get("categories") or {}
    cats_after = after.get("categories") or {}
    for name in _keys(cats_before, cats_after):
        lines.append(
            f"| category {name} | {_value(cats_before.get(name, 0))} | "
            f"{_value(cats_after.get(name, 0))} |"
        )
    lines.append("")
    if not rewrite:
        lines += ["(A report run changes nothing, so after equals before.)", ""]
    return lines


def _audit(audit: Mapping[str, Any]) -> list[str]:
    before, after = audit.get("before"), audit.get("after")
    if not isinstance(before, Mapping):
        return []
    lines = ["## Audit", ""]
    for label, result in (("Before", before), ("After", after)):
        if not isinstance(result, Mapping):
            continue
        if result.get("error"):
            lines.append(f"- {label}: {result['error']}")
            continue
        checks = result.get("checks") or {}
        detail = ", ".join(f"{name} {n}" for name, n in checks.items())
        lines.append(
            f"- {label}: {_count(int(result.get('count', 0)), 'finding')}"
            + (f" ({detail})" if detail else "")
        )
    lines.append("")
    return lines


def _keys(*mappings: Mapping[str, Any]) -> Iterable[str]:
    seen: dict[str, None] = {}
    for mapping in mappings:
        for key in mapping:
            seen.setdefault(key, None)
    return list(seen)


def _value(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
