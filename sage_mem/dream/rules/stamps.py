"""Stamps from the future: a memory whose `created` or `updated` falls after the run is listed.

A clock set wrong, a typo (2027 for 2026) or a hand edit leaves a memory that
ranks as the newest, never looks stale and whose relative dates count from a
day that has not come. Which day it was written only the person knows: the run
changes nothing and lists it. A day's slack allows for the writer's time zone
(a bare date of 12-02 is already today on the other side of the world).
"""

from __future__ import annotations

from datetime import timedelta

from ...memory.value import parse_moment
from .context import RuleContext

NAME = "stamps"


def run(ctx: RuleContext) -> None:
    latest = ctx.now.date() + timedelta(days=1)
    for memory in ctx.live():
        late = []
        for key, value in (("created", memory.created), ("updated", memory.updated)):
            moment = parse_moment(value)
            if moment is not None and moment.date() > latest:
                late.append(f"`{key}` {value}")
        if late:
            ctx.applier.note(
                memory.id,
                rule=NAME,
                message=f"{' and '.join(late)} after this run ({ctx.now.date().isoformat()}): "
                "a clock set wrong or a typo? It ranks as the newest memory and never looks "
                "stale; write the day it was said",
            )
