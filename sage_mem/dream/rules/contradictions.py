"""Likely contradictions: two memories about the same subject that give it different values.

"The main database is PostgreSQL 14" (written 2026-11-02) and "The main
database is now MySQL 8" (2026-11-20) cannot both hold. A description is read
as a subject and a value, split at its verb ("is", "uses", "runs on", "moved
to", 是, 用, 改为…, or a colon); two memories in one category and project whose
subjects have the same words (at least two of them) but whose values differ are
surfaced, with the newer one as the proposal: the report says which, and how to
settle it (`supersedes:` in the newer one, which the next rewrite run acts on).

Nothing is archived here: only `supersedes:` is clear enough evidence for that
(the `supersedes` rule). Two deploy windows on different days may both be
true, so the report says "likely", and a person decides.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ...memory.value import Memory
from ..similarity import difference, jaccard, terms
from . import RuleContext

NAME = "contradictions"
SUBJECT_JACCARD = 0.67
MIN_SUBJECT_TERMS = 2

_VERB = re.compile(
    r"\s(?:is|are|was|were|uses?|runs?\s+on|lives?\s+(?:in|at|on)|goes?\s+to|moved\s+to"
    r"|switched\s+to|happens?\s+on|now)\s|[:=]\s"
    r"|是|为|用|改为|改成|换成|改到|：",
    re.IGNORECASE,
)
_CHANGE = re.compile(
    r"\b(?:switched|moved|changed|migrated|replaced|instead\s+of|no\s+longer|now|from)\b"
    r"|换成|改为|改成|改到|迁到|迁移到|不再|现在|从",
    re.IGNORECASE,
)


def split(description: str) -> tuple[frozenset[str], str] | None:
    """(the subject's terms, the value's text) of a description, or None when it has no verb."""
    match = _VERB.search(description)
    if match is None or not description[match.end() :].strip():
        return None
    subject = terms(description[: match.start()])
    if len(subject) < MIN_SUBJECT_TERMS:
        return None
    return subject, description[match.end() :]


def run(ctx: RuleContext) -> None:
    groups: dict[tuple[str | None, str | None], list[tuple[Memory, frozenset[str], str]]] = (
        defaultdict(list)
    )
    for memory in ctx.live():
        found = split(memory.description)
        if found is not None:
            groups[(memory.category, memory.project)].append((memory, *found))
    for key in sorted(groups, key=lambda k: (str(k[0]), str(k[1]))):
        members = sorted(groups[key], key=lambda item: item[0].id)
        by_term: dict[str, list[int]] = defaultdict(list)
        for index, (_, subject, _) in enumerate(members):
            for term in subject:
                by_term[term].append(index)
        seen: set[tuple[int, int]] = set()
        for indices in by_term.values():
            if len(indices) > 50:
                continue  # a word every subject has says nothing
            for position, i in enumerate(indices):
                for j in indices[position + 1 :]:
                    if (i, j) in seen:
                        continue
                    seen.add((i, j))
                    _compare(ctx, members[i], members[j])


def _compare(
    ctx: RuleContext,
    first: tuple[Memory, frozenset[str], str],
    second: tuple[Memory, frozenset[str], str],
) -> None:
    (a, a_subject, a_value), (b, b_subject, b_value) = first, second
    if jaccard(a_subject, b_subject) < SUBJECT_JACCARD:
        return
    if a.id in b.supersedes or b.id in a.supersedes:
        return  # settled: the supersedes rule acts on it
    a_terms, b_terms = terms(a_value), terms(b_value)
    if a_terms <= b_terms or b_terms <= a_terms:
        return  # one says the same value, or more of it: no contradiction
    differs = difference(a_value, b_value)
    older, newer = sorted((a, b), key=lambda m: (_when(m), m.id))
    if _when(older) == _when(newer):
        return  # no newer one to propose
    said = "says it changed" if _CHANGE.search(newer.description + " " + newer.body) else "is newer"
    ctx.applier.note(
        older.id,
        rule=NAME,
        message=(
            f"likely contradicts {newer.id}: “{older.description}” ({_when(older)[:10]}) vs "
            f"“{newer.description}” ({_when(newer)[:10]}), same subject, "
            f"{differs or 'a different value'}. Proposal: {newer.id} stands ({said}); to settle "
            f"it add `supersedes: [{older.id}]` to {newer.id}, or keep both if both hold"
        ),
    )


def _when(memory: Memory) -> str:
    return memory.updated or memory.created or ""
