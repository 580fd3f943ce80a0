"""Near-duplicates within a category (and project): keep one, fold the other in, archive the other.

Two memories are twins when (measured on labelled English and Chinese pairs,
see tests/test_dream_dedupe.py):

- their description+name terms have a Jaccard of at least HEAD_JACCARD and
  share at least MIN_SHARED_TERMS terms (or have the very same terms: a short
  description differing in one word, "the user's cat" / "the user's dog",
  is a different fact, and one word is a large share of five);
- the numbers in their descriptions agree ("release 2.3" / "release 2.4");
- the descriptions do not differ in a number, a weekday, a time, a swapped key
  term ("unit" / "integration", 猫 / 狗), an opposite ("before" / "after") or two
  parts in swapped places ("from MySQL to PostgreSQL" / "from PostgreSQL to MySQL":
  `similarity.difference`), however alike
  the rest (a pair that differs only in two parts in swapped places is listed
  for a person: the order may be the fact, "commit and push", or not); a reworded
  pair (REWORDED_HEAD_JACCARD of the description terms) passes only when its
  bodies say the same too (REWORDED_BODY_JACCARD).

Which one stays: the one retrieved more than PROTECTED_RETRIEVALS times (mnemo's
frequency protection; when both are, neither is archived and the pair is
reported), then higher trust, then more retrievals, then longer content, then
the smaller id. It gains the other's aliases and tags, its `baseline` (with its
priority) when the other was injected at every session start, and what the other's
description and body say that its own lack (`missing_parts`: sentences, or whole paragraphs of
lists, tables and code), after its own text and saying where it came from; the
other is archived with `supersededBy`. No text leaves service: a twin whose
extra text names a different number, weekday or time than the kept one (a
likely contradiction), or adds more than MAX_FOLDED_CHARS, is reported instead; so
is one whose body has a sentence alike to one of the kept body's (CLASH_JACCARD)
that says another fact ("staging" / "production", "runs" / "does not run":
`contradicting_part`), which folding would join and archiving would hide.

Candidates come from prefix filtering over an inverted index of the head terms
(rarest terms first): two sets with a Jaccard of t or more must share a term
among the first |x| - ceil(t·|x|) + 1 rarest terms of each, so only pairs that
can pass are ever compared, and a 10,000-memory folder is not O(n²).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from ...memory.value import MAX_TAG_LENGTH, MAX_TAGS, Memory
from ...search.tokens import has_cjk
from ..candidates import Pair
from ..rewording import folder_words, mend_typo
from ..similarity import (
    MIN_BODY_TERMS,
    Fingerprint,
    body_covered,
    canonical,
    difference,
    fingerprint,
    jaccard,
    key_words,
    only_swapped,
    reordered,
    terms,
)
from .context import RuleContext

NAME = "near-duplicates"
HEAD_JACCARD = 0.75
MIN_SHARED_TERMS = 5
REWORDED_HEAD_JACCARD = 0.45
REWORDED_BODY_JACCARD = 0.6
BODY_CONTAINMENT = 0.9
PROTECTED_RETRIEVALS = 100
MAX_FOLDED_CHARS = 2000
"""A twin that adds more than this to the kept memory is reported, not folded in."""
MAX_CANDIDATES_PER_MEMORY = 200


def head_similarity(a: Fingerprint, b: Fingerprint) -> float | None:
    """How alike `a` and `b` are when they pass the twin test, else None.

    Nearly the same description words; or, reworded, half of them and a body
    saying the same (REWORDED_*). Never when the descriptions differ in a number,
    a weekday, a time or a swapped key term (`similarity.difference`).
    """
    score = _alike(a, b)
    if score is None or difference(a.description, b.description) is not None:
        return None
    return score


def _alike(a: Fingerprint, b: Fingerprint) -> float | None:
    """How alike the heads (and, reworded, the bodies) are when they pass, before `difference`."""
    if a.numbers != b.numbers or not a.head or not b.head:
        return None
    score = jaccard(a.head, b.head)
    alike = score == 1.0 or (score >= HEAD_JACCARD and len(a.head & b.head) >= MIN_SHARED_TERMS)
    if not alike and score >= REWORDED_HEAD_JACCARD:
        alike = (
            min(len(a.body), len(b.body)) >= MIN_BODY_TERMS
            and jaccard(a.body, b.body) >= REWORDED_BODY_JACCARD
        )
    return score if alike else None


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


def keep_key(memory: Memory, retrievals: dict[str, int]) -> tuple[bool, float, int, int, str]:
    """Sort key: the memory to keep sorts first (one retrieved > PROTECTED_RETRIEVALS first)."""
    uses = retrievals.get(memory.id, 0)
    return (uses <= PROTECTED_RETRIEVALS, -memory.trust, -uses, -_length(memory), memory.id)


def run(ctx: RuleContext) -> None:
    live = ctx.live()
    close = ctx.close_pairs()
    groups: dict[tuple[str | None, str | None], list[Memory]] = defaultdict(list)
    for memory in live:
        groups[(memory.category, memory.project)].append(memory)
    handled: set[str] = set()
    # the folder's words, to tell a slip of the keys ("ediotr") from a word it uses
    held = folder_words(f"{m.description}\n{m.body}" for m in live)
    for _, members in sorted(groups.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        if len(members) > 1:
            _merge_group(ctx, members, close, handled, held)
    _list_likely_twins(ctx, {m.id: m for m in live}, close, handled, held)


def _merge_group(
    ctx: RuleContext, members: list[Memory], close: Sequence[Pair], handled: set[str],
    held: Callable[[str], int] = lambda word: 0,
) -> None:
    prints = [fingerprint(m) for m in members]
    at = {m.id: i for i, m in enumerate(members)}
    parent = list(range(len(members)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    swapped: list[tuple[int, int, float]] = []
    proven: set[tuple[str, str]] = set()
    for i, j in sorted(candidate_pairs([p.head for p in prints], REWORDED_HEAD_JACCARD)):
        score = _alike(prints[i], prints[j])
        if score is None:
            continue
        first, second = prints[i].description, prints[j].description
        if difference(first, second) is None:
            parent[find(i)] = find(j)
        elif difference(first, mend_typo(first, second, held)) is None:
            # one word mistyped ("ediotr"): the description is the other's, its slip mended
            parent[find(i)] = find(j)
            proven.add(tuple(sorted((members[i].id, members[j].id))))  # type: ignore[arg-type]
        elif only_swapped(first, second):
            swapped.append((i, j, score))
    # Close in meaning (the index's neighbours) and proven the same: bodies saying the same,
    # descriptions differing only in words that reword (prefer / like, 喜欢 / 习惯).
    for pair in close:
        left, right = at.get(pair.first), at.get(pair.second)
        if left is None or right is None or find(left) == find(right):
            continue
        if same_by_meaning(members[left], members[right], held):
            parent[find(left)] = find(right)
            proven.add((pair.first, pair.second))
    # Twins but for two parts in swapped places ("Keep answers short and lead with the
    # conclusion" / "Lead with the conclusion and keep answers short"): not merged, since in
    # "commit and push" the order is the fact; listed like a twin whose body says another
    # fact (the one that would have been archived names the one kept).
    for i, j, score in swapped:
        keeper, other = _unmerged(ctx, members[i], members[j], handled)
        ctx.applier.note(other.id, rule=NAME, message=(
            f"says the same as {keeper.id} (descriptions {score:.0%} alike), but "
            f"two parts of its description are in swapped places: “{_short(other.description)}”"
            f" / “{_short(keeper.description)}”; the order may be the fact (“commit and "
            "push”): not merged; merge them by hand if it is not"))
    clusters: dict[int, list[int]] = defaultdict(list)
    for i in range(len(members)):
        clusters[find(i)].append(i)
    for indices in sorted(clusters.values(), key=lambda ix: min(members[i].id for i in ix)):
        if len(indices) > 1:
            group = [members[i] for i in indices]
            handled.update(m.id for m in group)
            _merge_cluster(ctx, group, [prints[i] for i in indices], proven)


def same_by_meaning(a: Memory, b: Memory, held: Callable[[str], int] = lambda word: 0) -> bool:
    """Whether two memories are proven to say one fact, though their descriptions are reworded.

    Their bodies say the same (nearly the same terms, REWORDED_BODY_SAME, and enough of them
    to tell) and their descriptions differ in nothing once the words that only reword are
    made one (`similarity.canonical`), a slip of the keys mended (`rewording.mend_typo`, by
    the folder's words `held`): no number, weekday, time, negation or key term.
    """
    if not _bodies_same(a, b):
        return False
    return difference(*_compared(a, b, held)) is None


def _compared(a: Memory, b: Memory, held: Callable[[str], int]) -> tuple[str, str]:
    """The descriptions of `a` and `b` as the rules compare them: words that only reword
    made one (`similarity.canonical`), a slip of the keys in one mended (`mend_typo`)."""
    first, second = canonical(a.description), canonical(b.description)
    return first, mend_typo(first, second, held)


def _bodies_same(a: Memory, b: Memory) -> bool:
    """Whether two bodies say the same: nearly the same terms (REWORDED_BODY_SAME), enough of
    them to tell (MIN_BODY_TERMS), and no number, name or key term apart."""
    a_body, b_body = terms(a.body[:20_000]), terms(b.body[:20_000])
    if min(len(a_body), len(b_body)) < MIN_BODY_TERMS:
        return False
    return jaccard(a_body, b_body) >= REWORDED_BODY_SAME and difference(a.body, b.body) is None


REWORDED_BODY_SAME = 0.85
"""Bodies this alike (Jaccard of their terms) say the same, for twins proven by meaning."""
LIKELY_TWIN_LEXICAL = 0.6
LIKELY_TWIN_LEXICAL_CJK = 0.35
LIKELY_TWIN_VECTORS = (0.95, 0.15)
LIKELY_TWIN_VECTORS_WITH_WORDS = (0.9, 0.4)
"""How close two memories of one category must be to be listed as likely twins when they
cannot be proven so: their words' tf-idf cosine (a Chinese rewording shares fewer bigrams
than an English one shares words: 用户住在杭州 / 用户的常住地是杭州, 0.31), or their
vectors' cosine (multilingual-e5-small puts any two memories of one topic above 0.85, reworded
twins at 0.95-0.99 and look-alikes of one topic up to 0.95), or both a little less. Measured
on `dream_meaning_cases.REWORDED` and `LOOKALIKE` (docs/dream.md, "Twins by meaning: how
many are found")."""


def close_as_twins(pair: Pair, a: Memory, b: Memory) -> str | None:
    """How `a` and `b` are close enough to be listed as likely twins ("by their words, 0.71"),
    or None."""
    words, vectors = pair.lexical, pair.vectors
    cjk = has_cjk(a.description) and has_cjk(b.description)
    if words is not None and words >= (LIKELY_TWIN_LEXICAL_CJK if cjk else LIKELY_TWIN_LEXICAL):
        return f"by their words, {words:.2f}"
    if vectors is not None and any(
        vectors >= close and (words or 0.0) >= alike
        for close, alike in (LIKELY_TWIN_VECTORS, LIKELY_TWIN_VECTORS_WITH_WORDS)
    ):
        return f"by their vectors, {vectors:.2f}"
    return None


def _list_likely_twins(
    ctx: RuleContext, live: dict[str, Memory], close: Sequence[Pair], handled: set[str],
    held: Callable[[str], int] = lambda word: 0,
) -> None:
    """List the close pairs no rule could prove twins, when nothing tells them apart.

    A pair whose descriptions differ in a number, a weekday, a time, a negation or one or
    two swapped key terms is another fact (if written on two days, maybe a changed one:
    `contradictions`), not listed here.
    """
    for pair in close:
        a, b = live.get(pair.first), live.get(pair.second)
        if a is None or b is None or a.id in handled or b.id in handled:
            continue
        how = close_as_twins(pair, a, b)
        if how is None or (a.category, a.project) != (b.category, b.project):
            continue
        first, second = _compared(a, b, held)
        differs = difference(first, second)
        negated = (
            differs is not None and differs.startswith("a negation")
            and _reworded(a, b, (pair.vectors or 0.0) >= LIKELY_TWIN_VECTORS[0]
                          and (pair.lexical or 0.0) >= LIKELY_TWIN_VECTORS_WITH_WORDS[1])
        )
        swapped = differs is not None and only_swapped(first, second)
        # a description said anew, its shared words in another order, over a body that says
        # the same (生产环境的日志在 Loki 里查 / 在 Loki 上查生产日志): the words apart are
        # the rewording; a frame with one word in another's place (北京机房 / 上海机房) keeps
        # its order and is another fact
        retold = (
            differs is not None and differs.startswith("a different key term")
            and not swapped and _reworded(a, b) and reordered(first, second)
        )
        if differs is not None and not negated and not swapped and not retold:
            continue  # "Unit tests…" / "Integration tests…": one word swapped is another fact
        keeper, other = _unmerged(ctx, a, b, handled)
        ctx.applier.note(other.id, rule=NAME, message=(
            f"possible duplicate of {keeper.id}: “{_short(other.description)}” / "
            f"“{_short(keeper.description)}”, close in meaning ({how})"
            + (", though only one says not (“must use a real …” / “never mock …” say one "
               "rule in two ways; check that they do)" if negated else "")
            + (", though two parts are in swapped places (the order may be the fact: "
               "“commit and push”)" if swapped else "")
            + "; not merged, since the rules cannot prove they say one fact: merge them by "
            f"hand (archive {other.id} with `supersededBy: {keeper.id}`) if they do"))


def _unmerged(ctx: RuleContext, a: Memory, b: Memory, handled: set[str]
              ) -> tuple[Memory, Memory]:
    """A pair reported, not merged: the one that would be kept and the one that would be
    archived (whose note names the other); neither is looked at again."""
    handled.update((a.id, b.id))
    keeper, other = sorted((a, b), key=lambda m: keep_key(m, ctx.retrievals))
    return keeper, other


def _reworded(a: Memory, b: Memory, close: bool = False) -> bool:
    """Descriptions in other words (more than two key words apart), bodies alike (or, `close`,
    the memories as near as twins by their vectors and words: "Never push directly to main" /
    "Changes to main always go through a pull request", whose bodies say it each in its own
    words; not "Ask for the exact day when the user is vague about dates" / "Never promise a
    fix date to a customer", 0.96 by vectors but 0.25 by words).

    A negation on one side is then no proof of another fact ("Tests must hit a real
    database" / "No mocking the database in tests"), as it is between two descriptions
    otherwise the same ("Do cache…" / "Do not cache…").
    """
    a_words, a_chars = key_words(canonical(a.description))
    b_words, b_chars = key_words(canonical(b.description))
    apart = len(a_words ^ b_words) > 2 or len(a_chars ^ b_chars) > 3
    return apart and (close or jaccard(terms(a.body), terms(b.body)) >= 0.3)


def _merge_cluster(
    ctx: RuleContext,
    memories: list[Memory],
    prints: list[Fingerprint],
    proven: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> None:
    order = sorted(range(len(memories)), key=lambda i: keep_key(memories[i], ctx.retrievals))
    keeper, keeper_print = memories[order[0]], prints[order[0]]
    mergeable: list[tuple[Memory, str]] = []
    added: list[tuple[str, list[str]]] = []  # (twin id, its paragraphs the keeper lacks)
    body = keeper.body
    for i in order[1:]:
        other, other_print = memories[i], prints[i]
        score = head_similarity(other_print, keeper_print)
        by_meaning = tuple(sorted((other.id, keeper.id))) in proven
        if score is None and not by_meaning:
            continue  # a twin of a twin, not of the keeper: left for a later run
        covered, share = body_covered(other_print, keeper_print, BODY_CONTAINMENT)
        said = (
            f"descriptions {score:.0%} alike" if score is not None
            else "the same body; descriptions reworded: "
            f"“{_short(other.description)}” / “{_short(keeper.description)}”"
        )
        clash = contradicting_part(other.body, body)
        if clash:
            ctx.applier.note(
                other.id,
                rule=NAME,
                message=f"says the same as {keeper.id} ({said}), but its body says {clash}: "
                "not merged; merge them by hand",
            )
            continue
        # what only its description says ("…and then to production") is folded in too:
        # the description leaves service with the archived twin
        extra = missing_parts(other.description, f"{keeper.description}\n\n{body}")
        if by_meaning and score is None:
            extra = []  # proven to reword the kept description: nothing of its own to keep
        # a short body ("- peanuts\n- shellfish\n- milk") is never "covered" by its terms
        # alone: an item the keeper lacks is folded in all the same
        from_body = missing_parts(other.body, body)
        if not covered or from_body:
            conflict = difference(" ".join(from_body), body) if from_body else "nothing to fold in"
            if conflict and conflict.startswith("a different key term"):
                conflict = None  # what it adds is new words: that is the point of folding it in
            extra += from_body
            if conflict or sum(map(len, extra)) > MAX_FOLDED_CHARS:
                ctx.applier.note(
                    other.id,
                    rule=NAME,
                    message=(
                        f"says the same as {keeper.id} ({said}), but only {share:.0%} of its "
                        f"body is in {keeper.id}"
                        + (f" and its body says {conflict}" if conflict else "")
                        + ": not merged; merge them by hand"
                    ),
                )
                continue
        reason = (
            f"near-duplicate of {keeper.id} ({said}); kept {keeper.id}: "
            f"{_why_kept(keeper, other, ctx.retrievals)}"
            + (f"; what only this one said was folded into {keeper.id}" if extra else "")
        )
        uses = ctx.retrievals.get(other.id, 0)
        if uses > PROTECTED_RETRIEVALS:
            ctx.applier.refuse(
                other.id,
                operation="archive",
                rule=NAME,
                reason=reason,
                why=f"retrieved {uses} times, as is {keeper.id}: a merge archives neither of "
                f"two memories retrieved more than {PROTECTED_RETRIEVALS} times",
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
        if extra:
            added.append((other.id, extra))
            body = _with_parts(body, other.id, extra)
    if not mergeable:
        return
    aliases, tags = _folded(keeper, [other for other, _ in mergeable])
    fields: dict[str, object] = {}
    if aliases != list(keeper.aliases):
        fields["aliases"] = aliases
    if tags != list(keeper.tags):
        fields["tags"] = tags
    if body != keeper.body:
        fields["body"] = body
    # a baseline (injected at every session start) stays one when its twin is kept
    baselines = [other for other, _ in mergeable if other.baseline]
    if baselines and not keeper.baseline:
        fields["baseline"] = True
        priority = max(other.baseline_priority for other in baselines)
        if priority:
            fields["baseline_priority"] = priority
    if fields:
        what = [
            name
            for name, key in (
                ("text", "body"),
                ("aliases", "aliases"),
                ("tags", "tags"),
                ("baseline", "baseline"),
            )
            if key in fields
        ]
        fold_reason = f"folded in the {', '.join(what)} of near-duplicate " + ", ".join(
            other.id for other, _ in mergeable
        )
        if added:
            fold_reason += "; added: " + "; ".join(
                f"from {twin}: “{_short(' '.join(parts))}”" for twin, parts in added
            )
        if keeper.locked:
            for other, reason in mergeable:
                ctx.applier.refuse(
                    other.id,
                    operation="archive",
                    rule=NAME,
                    reason=reason,
                    why=f"{keeper.id} is locked, so what this memory adds cannot be folded into it",
                )
            return
        updated = ctx.applier.rewrite(keeper, rule=NAME, reason=fold_reason, **fields)
        if updated is None:
            return  # the fold was refused: archiving now would take text out of service
    for other, reason in mergeable:
        ctx.applier.archive(other, rule=NAME, reason=reason, superseded_by=keeper.id)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")
_STRUCTURED = re.compile(r"^\s*(?:[-*+#|>]|\d+[.)]|```|~~~|    |\t)", re.MULTILINE)


CLASH_JACCARD = 0.5
"""A sentence of one twin this alike to one of the other's, yet a different fact, is a clash."""


def _parts(text: str) -> list[str]:
    """Sentences of plain paragraphs, whole paragraphs of lists, tables, code and quotes."""
    found: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if not paragraph.strip():
            continue
        if _STRUCTURED.search(paragraph):
            found.append(paragraph.strip())
        else:
            flat = " ".join(paragraph.split())
            found += [p.strip() for p in _SENTENCE_END.split(flat) if p.strip()]
    return found


def contradicting_part(text: str, kept: str) -> str | None:
    """How a part of `text` and an alike part of `kept` say different facts, or None.

    "The deploy uses the staging profile" / "…the production profile", "runs the
    migrations first" / "does not run the migrations first": folding one into the
    other would join a contradiction, and archiving it would hide one.
    """
    kept_parts = [(part, terms(part)) for part in _parts(kept)]
    # Only the kept parts that can reach CLASH_JACCARD are compared (prefix filtering, as
    # `candidate_pairs`): every sentence against every other was quadratic in two long bodies.
    df = Counter(term for _, found in kept_parts for term in found)
    postings: dict[str, list[int]] = defaultdict(list)
    for index, (_, found) in enumerate(kept_parts):
        for term in _prefix(found, df, CLASH_JACCARD):
            postings[term].append(index)
    for part in _parts(text):
        found = terms(part)
        near: set[int] = set()
        for term in _prefix(found, df, CLASH_JACCARD):
            near.update(postings.get(term, ())[:MAX_CANDIDATES_PER_MEMORY])
            if len(near) >= MAX_CANDIDATES_PER_MEMORY:
                break
        for index in sorted(near):
            other, other_terms = kept_parts[index]
            if part == other or not found or jaccard(found, other_terms) < CLASH_JACCARD:
                continue
            why = difference(part, other)
            if why:
                return f"{why}: “{_short(part)}” / “{_short(other)}”"
    return None


def _prefix(found: frozenset[str], df: Counter[str], threshold: float) -> list[str]:
    """The rarest terms of `found` of which any set `threshold` Jaccard-alike shares one."""
    ordered = sorted(found, key=lambda term: (df[term], term))
    return ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]


def missing_parts(text: str, kept: str) -> list[str]:
    """The parts of `text` (sentences of plain paragraphs, else whole paragraphs) `kept` lacks.

    A part is there when BODY_CONTAINMENT of its terms are in `kept` and each item it
    lists (a list's line, a thing named between commas: "peanuts, shellfish, milk")
    has a term there: a merge never drops an item. Code, lists, tables and quotes are
    compared as whole paragraphs, never cut.
    """
    kept_terms = terms(kept)
    missing: list[str] = []
    for part in _parts(text):
        found = terms(part)
        if found and (
            len(found & kept_terms) / len(found) < BODY_CONTAINMENT
            or any(not (terms(item) & kept_terms) for item in _items(part))
        ):
            missing.append(part)
    return missing


_ITEM_BREAK = re.compile(r"\n|[,，、;；/]|\b(?:and|or|plus)\b|以及|和|及|与|或", re.IGNORECASE)


def _items(part: str) -> list[str]:
    """The items a part lists (lines of a list, things named between commas, and, 、, 和)."""
    return [item for item in _ITEM_BREAK.split(part) if item.strip()]


def _with_parts(body: str, twin: str, parts: list[str]) -> str:
    """`body` and, after it, what the twin `twin` said that it lacked, saying where it came from."""
    prose = all(not _STRUCTURED.search(part) for part in parts)
    added = " ".join(parts) if prose else "\n\n".join(parts)
    head = body.rstrip("\n")
    if not head:
        return f"{added}\n"
    # a list, a table or code keeps its first line's markup on a line of its own
    return f"{head}\n\n(From {twin}, merged here:){' ' if prose else chr(10) * 2}{added}\n"


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
    uses = retrievals.get(keeper.id, 0)
    if uses > PROTECTED_RETRIEVALS >= retrievals.get(other.id, 0):
        return f"retrieved {uses} times (more than {PROTECTED_RETRIEVALS}: the one agents rely on)"
    if keeper.trust != other.trust:
        return f"higher trust ({keeper.trust:g} vs {other.trust:g})"
    used, other_used = retrievals.get(keeper.id, 0), retrievals.get(other.id, 0)
    if used != other_used:
        return f"retrieved more often ({used} vs {other_used} times)"
    if _length(keeper) != _length(other):
        return f"longer ({_length(keeper)} vs {_length(other)} characters)"
    return "same trust, use and length; first by id"
