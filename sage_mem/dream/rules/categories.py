"""Keyword reclassification: a memory whose category does not fit its content.

Each category has its signs, in English and Chinese (`SIGNS`): a feedback rule
has **Why:** and **How to apply:** lines (原因 / 怎么做) and reads as an order
(Always, Never, Do not…, 不要、必须…); a reference points somewhere (links,
"runbook", "dashboard", 文档在、地址); a user memory says who the user is or what
they like (The user likes…, 用户喜欢…); a project memory dates work (a date, a
deadline, a release, an incident, 进度、上线). Each sign counts once per word it
finds, at most twice. A memory with no sign of its own category and a clear
lead of another (MOVE_SCORE, ahead by MOVE_MARGIN) is moved in a rewrite run;
a lead of REPORT_SCORE but no margin is only reported; anything weaker is
left alone (a stray date or link says little). A project memory is never moved to
feedback, only listed: Claude Code writes its project memories with **Why:** and
**How to apply:** lines too (the decision, why, how to apply it).

A move keeps the file name convention: `user_commit_rule.md` becomes
`feedback_commit_rule.md` (a file without the prefix keeps its name and only its
category changes). It is made as a new file plus the old one archived with
`supersededBy`, so the links rule points every link at the new name and the
run's rollback undoes both; the new file keeps the old one's `created` and
`updated` (it is as old as it was). Moved only when nothing would be lost: a file with
frontmatter keys the tool does not write (Claude Code's `modified`, a key of
the person's own), relative dates still to date, or a name taken, is reported.
"""

from __future__ import annotations

import re
from typing import Any

from ...memory.fields import FIELDS
from ...memory.value import CATEGORIES, Memory
from .context import RuleContext
from .dates import _phrases

NAME = "categories"
MOVE_SCORE = 3
MOVE_MARGIN = 2
REPORT_SCORE = 3

_I = re.IGNORECASE | re.MULTILINE
SIGNS: dict[str, list[tuple[re.Pattern[str], int, str]]] = {
    "feedback": [
        (re.compile(r"\*\*(?:why|原因|为什么)[:：]?\*\*[:：]?", _I), 1, "a **Why:** line"),
        # Claude Code's own shape of a feedback memory: worth two signs
        (re.compile(r"\*\*(?:how to apply|怎么做|如何应用)[:：]?\*\*[:：]?", _I), 2,
         "a **How to apply:** line"),
        (re.compile(r"^\W*(?:(?:always|never|don'?t|do not|avoid|prefer|keep|write|run|ask|use"
                    r"|make sure)\b|不要|总是|必须|务必|别|禁止|尽量|优先|记得)", _I), 1,
         "reads as a rule"),
    ],
    "reference": [
        (re.compile(r"https?://\S+"), 1, "a link"),
        (re.compile(r"\b(?:runbooks?|dashboards?|wiki|docs? (?:are|is|live)|lives (?:at|in)"
                    r"|is at|see)\b|文档在|地址|链接|位于", _I), 1, "points somewhere"),
    ],
    "user": [
        (re.compile(r"\b(?:the )?user(?:'s)? (?:likes|loves|prefers|hates|is|has|lives"
                    r"|speaks|works|keeps|listens|types)\b|用户(?:喜欢|不喜欢|是|有|住|习惯|每天|在读)",
                    _I), 1, "says who the user is"),
        (re.compile(r"\b(?:favou?rite|hobby|pets?|family|kids|partner)\b|爱好|宠物|孩子|家人", _I),
         1, "something personal"),
    ],
    "project": [
        (re.compile(r"\b20\d\d-\d\d-\d\d\b|20\d\d年\d{1,2}月"), 1, "a date"),
        (re.compile(r"\b(?:deadline|sprint|milestone|release[sd]?|incident|outage|migration"
                    r"|roadmap|status|launch|rollout)\b|截止|上线|进度|里程碑|故障|迁移|发布", _I),
         1, "tracks work"),
    ],
}
_KNOWN_KEYS = frozenset(f.key for f in FIELDS) | {"created", "updated"}


def scores(memory: Memory) -> dict[str, tuple[int, list[str]]]:
    """Per category: the weight of the signs the memory shows, and which they are."""
    head = memory.description
    text = f"{memory.description}\n{memory.body}"
    out: dict[str, tuple[int, list[str]]] = {}
    for category, signs in SIGNS.items():
        found: list[tuple[int, str]] = []
        for pattern, weight, why in signs:
            # each sign counts once per different word it finds, at most twice
            words = {m.group(0).casefold() for m in pattern.finditer(
                head if why == "reads as a rule" else text)}
            if words:
                found.append((weight * min(len(words), 2), why))
        out[category] = (sum(weight for weight, _ in found), [why for _, why in found])
    return out


def run(ctx: RuleContext) -> None:
    for memory in ctx.live():
        if memory.category not in CATEGORIES or memory.locked:
            continue
        found = scores(memory)
        own = found[memory.category][0]
        ranked = sorted(
            ((score, why, category) for category, (score, why) in found.items()
             if category != memory.category),
            key=lambda item: (-item[0], item[2]),
        )
        best, why, target = ranked[0]
        runner_up = ranked[1][0] if len(ranked) > 1 else 0
        if own or best < REPORT_SCORE or best - runner_up < 1:
            continue
        shows = f"filed as {memory.category}, but it reads as {target} ({', '.join(why)})"
        # Claude Code writes a project memory in the same shape as a feedback rule (the
        # decision, then **Why:** and **How to apply:** lines), so those lines cannot tell
        # a misfiled rule from a project decision: only list it.
        if (
            best < MOVE_SCORE
            or best - runner_up < MOVE_MARGIN
            or (memory.category == "project" and target == "feedback")
        ):
            ctx.applier.note(memory.id, rule=NAME, message=f"{shows}: check its category")
            continue
        _move(ctx, memory, target, shows)


def _move(ctx: RuleContext, memory: Memory, target: str, shows: str) -> None:
    folder, _, leaf = memory.id.rpartition("/")
    prefix = f"{memory.category}_"
    if not leaf.startswith(prefix):
        ctx.applier.rewrite(
            memory, rule=NAME, category=target, reason=f"{shows}: category set to {target}"
        )
        return
    new_leaf = f"{target}_{leaf[len(prefix):]}"
    new_id = f"{folder}/{new_leaf}" if folder else new_leaf
    extra = sorted(set(memory.meta) - _KNOWN_KEYS)
    undated = _phrases({"description": memory.description, "body": memory.body})
    exists = ctx.store.folder.path_for(new_id).exists() or new_id in ctx.applier.proposed
    why_not = (
        f"its frontmatter has keys a new file would not keep ({', '.join(extra)})" if extra
        else f"its relative dates ({', '.join(undated[:3])}) would lose their day" if undated
        else f"{new_id} exists already" if exists
        else ""
    )
    if why_not:
        ctx.applier.note(
            memory.id,
            rule=NAME,
            message=f"{shows}: would move it to {new_id}.md, but {why_not}; move it by hand",
        )
        return
    fields: dict[str, Any] = {
        "description": memory.description,
        "body": memory.body.lstrip("\n"),
        "category": target,
        "name": memory.name,
        "summary": memory.summary,
        "aliases": list(memory.aliases) or None,
        "tags": list(memory.tags) or None,
        "trust": memory.trust if "trust" in memory.meta else None,
        "baseline": memory.baseline or None,
        "baseline_priority": memory.baseline_priority or None,
        "project": memory.project,
        "supersedes": list(memory.supersedes) or None,
    }
    fields = {key: value for key, value in fields.items() if value is not None}
    reason = f"{shows}: moved to {new_id}.md, as its file name convention has it"
    first, last = memory.created or memory.updated, memory.updated or memory.created
    stamps = (first, last) if first and last else None
    created = ctx.applier.create(new_id, rule=NAME, reason=reason, stamps=stamps, **fields)
    if created is None:
        return
    ctx.applier.archive(
        memory, rule=NAME, superseded_by=new_id, reason=f"moved to {new_id} ({shows})"
    )
