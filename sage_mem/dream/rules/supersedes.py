"""`supersedes:` — archive what a memory says it replaces.

A memory naming itself, memories naming each other round a cycle (A → B → A,
A → B → C → A), or a name that is nowhere (neither in service nor archived) is
reported, never acted on. Nor is a memory changed after the one that says it
replaces it (its `updated` later): that edit may be news the newer one lacks, so
the archive is refused and reported. Nor is a memory of another project scope
than the one naming it (a memory of project `shop` naming one of `blog`, or a
global one): the other still holds where the newer one is never retrieved, so it
is listed, not archived. A global memory may replace one of any project.
"""

from __future__ import annotations

from ...memory.value import Memory, parse_moment
from .context import RuleContext

NAME = "supersedes"


def run(ctx: RuleContext) -> None:
    live = {m.id: m for m in ctx.live()}
    archived_ids = {
        m.id.removeprefix("archive/") for m in ctx.store.list(archived=True) if m.archived
    }
    for memory in sorted(live.values(), key=lambda m: m.id):
        for target_id in memory.supersedes:
            target_id = target_id.removesuffix(".md")
            if target_id == memory.id:
                ctx.applier.note(
                    memory.id, rule=NAME, message="`supersedes:` names the memory itself"
                )
                continue
            target = live.get(target_id)
            if target is None:
                if target_id not in archived_ids and target_id not in ctx.applier.archived:
                    ctx.applier.note(
                        memory.id,
                        rule=NAME,
                        message=f"`supersedes:` names {target_id!r}, which does not exist",
                    )
                continue
            if memory.id in target.supersedes:
                if memory.id < target_id:
                    ctx.applier.note(
                        memory.id,
                        rule=NAME,
                        message=(
                            f"{memory.id!r} and {target_id!r} each say they supersede the other; "
                            "neither was archived"
                        ),
                    )
                continue
            cycle = _cycle(live, memory.id, target_id)
            if cycle:
                if memory.id == min(cycle):
                    ctx.applier.note(
                        memory.id,
                        rule=NAME,
                        message=(
                            "`supersedes:` goes round a cycle ("
                            + " → ".join([*cycle, cycle[0]])
                            + "): none of them is the newest, so none was archived"
                        ),
                    )
                continue
            if memory.project is not None and target.project != memory.project:
                # A memory of one project replaces nothing outside it: the other still
                # holds where `memory` is not retrieved (another project, or everywhere).
                scope = f"project {target.project}" if target.project else "every project"
                ctx.applier.note(
                    target_id,
                    rule=NAME,
                    message=(
                        f"{memory.id} (project {memory.project}) says it supersedes "
                        f"{target_id}, which is for {scope}: not archived, as it may still "
                        f"hold there; archive it by hand (`sage-mem archive {target_id}`) "
                        "if it does not"
                    ),
                )
                continue
            edited = _edited_after(ctx, target_id, memory.id)
            if edited:
                ctx.applier.refuse(
                    target_id,
                    operation="archive",
                    rule=NAME,
                    reason=f"superseded by {memory.id} (its `supersedes:` names this memory)",
                    why=f"{target_id} was changed ({edited[0]}) after {memory.id} ({edited[1]}), "
                    "which says it replaces it: that edit may be news; archive it by hand "
                    f"(`sage-mem archive {target_id}`) if {memory.id} still stands",
                )
                continue
            ctx.applier.archive(
                target,
                rule=NAME,
                superseded_by=memory.id,
                reason=f"superseded by {memory.id} (its `supersedes:` names this memory)",
            )


def _edited_after(ctx: RuleContext, target_id: str, newer_id: str) -> tuple[str, str] | None:
    """(when, when) if `target_id` was last written after `newer_id`, which supersedes it.

    Bare dates compare by day (the same day is not after), times by the moment.
    """
    target, newer = ctx.written.get(target_id, ""), ctx.written.get(newer_id, "")
    first, second = parse_moment(target), parse_moment(newer)
    if first is None or second is None:
        return None
    if len(target) == 10 or len(newer) == 10:
        later = first.date() > second.date()
    else:
        later = first > second
    return (target, newer) if later else None


def _cycle(live: dict[str, Memory], start: str, target: str) -> list[str]:
    """The memories from `start` round to it again through `target`, or [] when none."""
    stack: list[tuple[str, list[str]]] = [(target, [start, target])]
    seen = {start}
    while stack:
        current, path = stack.pop()
        if current in seen or current not in live:
            continue
        seen.add(current)
        for name in live[current].supersedes:
            name = name.removesuffix(".md")
            if name == start:
                return path
            if name in live and name not in seen:
                stack.append((name, [*path, name]))
    return []
