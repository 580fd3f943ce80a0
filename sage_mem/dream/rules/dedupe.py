"""Near-duplicates within a category (and project): keep one, fold the other in, archive the other.

Two memories are twins when (measured on labelled English and Chinese pairs,
see tests/test_dream_dedupe.py):

- their description+name terms have a Jaccard of at least HEAD_JACCARD and
  share at least MIN_SHARED_TERMS terms (or have the very same terms: a short
  description differing in one word, "the user's cat" / "the user's dog",
  is a different fact, and one word is a large share of five);
- the numbers in their descriptions agree ("release 2.3" / "release 2.4");
- the body of the one to archive says nothing the kept one lacks: at least
  BODY_CONTAINMENT of its terms appear in the kept memory. A merge here never
  loses text from service; twins whose bodies differ are reported instead, for
  a person (or the model pass) to merge by writing.

Which one stays: higher trust, then more retrievals, then longer content, then
the smaller id. Its aliases and tags gain the other's; the other is archived
with `supersededBy`. A memory retrieved more than PROTECTED_RETRIEVALS times is
never archived by a merge.

Candidates come from prefix filtering over an inverted index of the head terms
(rarest terms first): two sets with a Jaccard of t or more must share a term
among the first |x| - ceil(t·|x|) + 1 rarest terms of each, so only pairs that
can pass are ever compared, and a 10,000-memory folder is not O(n²).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

from ...memory.value import MAX_TAG_LENGTH, MAX_TAGS, Memory
from ..similarity import Fingerprint, body_covered, fingerprint, jaccard
from . import RuleContext

NAME = "near-duplicates"
HEAD_JACCARD = 0.75
MIN_SHARED_TERMS = 5
BODY_CONTAINMENT = 0.9
PROTECTED_RETRIEVALS = 100
MAX_CANDIDATES_PER_MEMORY = 200


def head_similarity(a: Fingerprint, b: Fingerprint) -> float | None:
    """The head Jaccard when `a` and `b` pass the twin test on their descriptions, else None."""
    if a.numbers != b.numbers or not a.head or not b.head:
        return None
    score = jaccard(a.head, b.head)
    if score == 1.0 or (score >= HEAD_JACCARD and len(a.head & b.head) >= MIN_SHARED_TERMS):
        return score
    return None


def candidate_pairs(
    heads: Sequence[frozenset[str]], threshold: float = HEAD_JACCARD
) -> set[tuple[int, int]]:
    """Index pairs (i < j) whose head sets may reach `threshold` Jaccard; never misses one."""
    df = Counter(term for head in heads for term in head)
    postings: dict[str, list[int]] = defaultdict(list)
    pairs: set[tuple[int, int]] = set()
    for i in sorted(range(len(heads)), key=lambda k: len(heads[k])):
        ordered = sorted(heads[i], key=lambda term: (df[term], term))
        if not ordered:
            continue
        prefix = len(ordered) - math.ceil(threshold * len(ordered)) + 1
        seen: set[int] = set()
        for term in ordered[:prefix]:
            for j in postings[term]:
                if j in seen or len(seen) >= MAX_CANDIDATES_PER_MEMORY:
                    continue
                seen.add(j)
                if len(heads[j]) >= threshold * len(ordered):
                    pairs.add((min(i, j), max(i, j)))
            postings[term].append(i)
    return pairs


def keep_key(memory: Memory, retrievals: dict[str, int]) -> tuple[float, int, int, str]:
    """Sort key: the memory to keep sorts first."""
    return (-memory.trust, -retrievals.get(memory.id, 0), -_length(memory), memory.id)


def run(ctx: RuleContext) -> None:
    groups: dict[tuple[str | None, str | None], list[Memory]] = defaultdict(list)
    for memory in ctx.live():
        groups[(memory.category, memory.project)].append(memory)
    for _, members in sorted(groups.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        if len(members) > 1:
            _merge_group(ctx, members)


def _merge_group(ctx: RuleContext, members: list[Memory]) -> None:
    prints = [fingerprint(m) for m in members]
    parent = list(range(len(members)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in candidate_pairs([p.head for p in prints]):
        if head_similarity(prints[i], prints[j]) is not None:
            parent[find(i)] = find(j)
    clusters: dict[int, list[int]] = defaultdict(list)
    for i in range(len(members)):
        clusters[find(i)].append(i)
    for indices in sorted(clusters.values(), key=lambda ix: min(members[i].id for i in ix)):
        if len(indices) > 1:
            _merge_cluster(ctx, [members[i] for i in indices], [prints[i] for i in indices])


def _merge_cluster(ctx: RuleContext, memories: list[Memory], prints: list[Fingerprint]) -> None:
    order = sorted(range(len(memories)), key=lambda i: keep_key(memories[i], ctx.retrievals))
    keeper, keeper_print = memories[order[0]], prints[order[0]]
    mergeable: list[tuple[Memory, str]] = []
    for i in order[1:]:
        other, other_print = memories[i], prints[i]
        score = head_similarity(other_print, keeper_print)
        if score is None:
            continue  # a twin of a twin, not of the keeper: left for a later run
        covered, share = body_covered(other_print, keeper_print, BODY_CONTAINMENT)
        said = f"descriptions {score:.0%} alike"
        if not covered:
            ctx.applier.note(
                other.id,
                rule=NAME,
                message=(
                    f"says the same as {keeper.id} ({said}), but {share:.0%} of its body is in "
                    f"{keeper.id}: not merged, as text would leave service; merge them by hand"
                ),
            )
            continue
        reason = (
            f"near-duplicate of {keeper.id} ({said}); kept {keeper.id}: "
            f"{_why_kept(keeper, other, ctx.retrievals)}"
        )
        uses = ctx.retrievals.get(other.id, 0)
        if uses > PROTECTED_RETRIEVALS:
            ctx.applier.refuse(
                other.id,
                operation="archive",
                rule=NAME,
                reason=reason,
                why=f"retrieved {uses} times: a merge never archives a memory "
                f"retrieved more than {PROTECTED_RETRIEVALS} times",
            )
            continue
        if other.locked:
            ctx.applier.refuse(
                other.id,
                operation="archive",
                rule=NAME,
                reason=reason,
                why="the memory is locked (locked: true)",
            )
            continue
        mergeable.append((other, reason))
    if not mergeable:
        return
    aliases, tags = _folded(keeper, [other for other, _ in mergeable])
    if aliases != list(keeper.aliases) or tags != list(keeper.tags):
        fold_reason = "folded in the aliases and tags of near-duplicate " + ", ".join(
            other.id for other, _ in mergeable
        )
        if keeper.locked:
            for other, reason in mergeable:
                ctx.applier.refuse(
                    other.id,
                    operation="archive",
                    rule=NAME,
                    reason=reason,
                    why=f"{keeper.id} is locked, so this memory's aliases and "
                    "tags cannot be folded into it",
                )
            return
        fields: dict[str, list[str]] = {}
        if aliases != list(keeper.aliases):
            fields["aliases"] = aliases
        if tags != list(keeper.tags):
            fields["tags"] = tags
        updated = ctx.applier.rewrite(keeper, rule=NAME, reason=fold_reason, **fields)
        if updated is None and ctx.applier.writes:
            return  # the fold was refused: archiving now would take aliases out of service
    for other, reason in mergeable:
        ctx.applier.archive(other, rule=NAME, reason=reason, superseded_by=keeper.id)


def _folded(keeper: Memory, others: list[Memory]) -> tuple[list[str], list[str]]:
    aliases = list(keeper.aliases)
    tags = list(keeper.tags)
    known_aliases = {a.casefold() for a in aliases}
    known_tags = {t.casefold() for t in tags}
    for other in others:
        for alias in other.aliases:
            if alias.casefold() not in known_aliases:
                aliases.append(alias)
                known_aliases.add(alias.casefold())
        for tag in other.tags:
            if (
                tag.casefold() not in known_tags
                and len(tags) < MAX_TAGS
                and len(tag) <= MAX_TAG_LENGTH
            ):
                tags.append(tag)
                known_tags.add(tag.casefold())
    return aliases, tags


def _length(memory: Memory) -> int:
    return len(memory.description) + len(memory.body.strip())


def _why_kept(keeper: Memory, other: Memory, retrievals: dict[str, int]) -> str:
    if keeper.trust != other.trust:
        return f"higher trust ({keeper.trust:g} vs {other.trust:g})"
    used, other_used = retrievals.get(keeper.id, 0), retrievals.get(other.id, 0)
    if used != other_used:
        return f"retrieved more often ({used} vs {other_used} times)"
    if _length(keeper) != _length(other):
        return f"longer ({_length(keeper)} vs {_length(other)} characters)"
    return "same trust, use and length; first by id"
