"""Likely contradictions: two memories about the same subject that give it different values.

"The main database is PostgreSQL 14" (written 2026-11-02) and "The main
database is now MySQL 8" (2026-11-20) cannot both hold. A description is read
as a subject and a value, split at its verb ("is", "uses", "runs on", "moved
to", 是, 用, 改为…, or a colon); two memories in one category and project whose
subjects have the same words (at least two of them) but whose values differ are
surfaced (only when no third memory shares the subject: one subject with many
values is a list of facts, a note per case), with the newer one as the
proposal: the report says which, and how to settle it (`supersedes:` in the
newer one, which the next rewrite run acts on). Newer is changed later
(`updated`); when the other was created later all the same (a trust change
restamps an old memory), the report says which is newer is not clear. A newer
memory that tells how things were ("in 2023 the user's home city was Paris", "the
team lead was Bob before the reorg", 以前, 曾经) beside an older one saying how
they are is no contradiction: both hold. Nor is one amount written in two units
("10 km" / "6.2 miles", 10公里 / 6.2英里, within 2%).

A memory that says what changed ("switched the main database from PostgreSQL
to MySQL", "the sync moved from Tuesday to Thursday", "Kafka instead of
RabbitMQ", "从 RabbitMQ 换成了 Kafka") is also compared with the older memories
of its category and project that name the old value and share its topic (two
terms of its description, or one when the older description names the old
value), however they are worded.

Nothing is archived here: only `supersedes:` is clear enough evidence for that
(the `supersedes` rule). Two deploy windows on different days may both be
true, so the report says "likely", and a person decides.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ...memory.value import Memory, moment_order
from ..candidates import Pair
from ..similarity import canonical, difference, jaccard, key_words, terms
from .context import RuleContext

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
    reported: set[tuple[str, str]] = set()
    groups: dict[tuple[str | None, str | None], list[Memory]] = defaultdict(list)
    for memory in ctx.live():
        groups[(memory.category, memory.project)].append(memory)
    for key in sorted(groups, key=lambda k: (str(k[0]), str(k[1]))):
        members = sorted(groups[key], key=lambda m: m.id)
        _by_subject(ctx, members, reported)
        _by_change(ctx, members, reported)
    _by_meaning(ctx, reported)


CLOSE_LEXICAL = 0.45
CLOSE_VECTORS = 0.92
"""How close in meaning (the candidates' cosine) two memories must be to be about one subject
(e5's cosines are compressed: unrelated notes of one folder reach 0.9)."""
SHARED_SUBJECT = 0.2
"""Pairs proposed by vectors must share this much of their description's terms too."""
FAMILY_JACCARD = 0.4
"""Descriptions this alike, a slot apart, make a family ("the billing runbook" / "the search
runbook"): a memory with two such partners is one of a list of facts."""


def _by_meaning(ctx: RuleContext, reported: set[tuple[str, str]]) -> None:
    """Pairs close in meaning (`dream.candidates`) written on different days that differ in a value.

    "The user's editor is Sublime Text" (October) / "…is now Helix" (November), 浅色 / 深色,
    两个小时 / 一个小时, Monday / Friday, a rule filed as `user` and its change as
    `feedback`: the descriptions differ in a number, a weekday, a time, a negation or a
    key term that their bodies differ in too (twins whose bodies say the same are the
    near-duplicate rule's). Listed with the newer one as the proposal; one pair a memory.
    """
    live = {m.id: m for m in ctx.live()}
    listed: set[str] = {old for old, _ in reported} | {new for _, new in reported}
    # a pair the near-duplicate rule listed as likely twins is not listed again as a clash
    twins = {n["id"] for n in ctx.applier.manifest.notes
             if n.get("rule") == "near-duplicates" and n.get("id")}
    found: list[tuple[Pair, Memory, Memory, str]] = []
    partners: dict[str, int] = defaultdict(int)
    for pair in ctx.close_pairs():
        a, b = live.get(pair.first), live.get(pair.second)
        if a is None or b is None:
            continue
        wanted = CLOSE_VECTORS if pair.source == "vectors" else CLOSE_LEXICAL
        if pair.score < wanted or a.project != b.project:
            continue
        differs = difference(canonical(a.description), canonical(b.description))
        a_terms, b_terms = terms(a.description), terms(b.description)
        if differs is None or a_terms <= b_terms or b_terms <= a_terms:
            continue  # the same, or one says more of it ("…AWS ECS" / "…AWS ECS in eu-west-1")
        shared = jaccard(a_terms, b_terms)
        if pair.source == "vectors" and shared < SHARED_SUBJECT:
            continue  # close vectors, but no word of a subject in common: another topic
        if shared >= FAMILY_JACCARD:
            partners[a.id] += 1
            partners[b.id] += 1
        found.append((pair, a, b, differs))
    for pair, a, b, differs in found:
        if a.id in listed or b.id in listed or a.id in b.supersedes or b.id in a.supersedes:
            continue
        if a.id in twins or b.id in twins:
            continue
        # One subject with many values is a list of facts (a runbook per service), as above.
        if partners[a.id] > 1 and partners[b.id] > 1:
            continue
        if _when(a, ctx.written)[:10] == _when(b, ctx.written)[:10]:
            continue  # written the same day: two facts noted together, not one that changed
        if differs.startswith("a different key term") and not _value_in_bodies(a, b):
            continue
        older, newer = sorted((a, b), key=lambda m: (_moment(m, ctx.written), m.id))
        if _of_the_past(newer.description) and not _of_the_past(older.description):
            continue
        reported.add((older.id, newer.id))
        listed.update((a.id, b.id))
        how = "by their vectors" if pair.source == "vectors" else "by their words"
        across = (
            f" (filed as {older.category} and {newer.category})"
            if older.category != newer.category else ""
        )
        what = f"close in meaning ({how}, {pair.score:.2f}){across}, {differs}"
        if _maybe_older(newer, older, ctx.written):
            _note_unclear(ctx, older, newer, what)
            continue
        said = (
            "says it changed" if _CHANGE.search(newer.description + " " + newer.body)
            else "is newer"
        )
        _note(ctx, older, newer, what, said, possibly=True)


def _by_subject(ctx: RuleContext, memories: list[Memory], reported: set[tuple[str, str]]) -> None:
    members = [(m, *found) for m in memories if (found := split(m.description)) is not None]
    by_term: dict[str, list[int]] = defaultdict(list)
    for index, (_, subject, _) in enumerate(members):
        for term in subject:
            by_term[term].append(index)
    seen: set[tuple[int, int]] = set()
    pairs: list[tuple[int, int]] = []
    for indices in by_term.values():
        if len(indices) > 50:
            continue  # a word every subject has says nothing
        for position, i in enumerate(indices):
            for j in indices[position + 1 :]:
                if (i, j) not in seen:
                    seen.add((i, j))
                    if jaccard(members[i][1], members[j][1]) >= SUBJECT_JACCARD:
                        pairs.append((i, j))
    # One subject with many values is a list of facts (a runbook per service, a note per
    # case), not one fact that changed: only a subject two memories share is compared.
    partners: dict[int, int] = defaultdict(int)
    for i, j in pairs:
        partners[i] += 1
        partners[j] += 1
    for i, j in sorted(pairs):
        if partners[i] == 1 and partners[j] == 1:
            _compare(ctx, members[i], members[j], reported)


# A value is a few words of at most MAX_WORD characters each, and a word starts where one
# starts (after a space, a comma, a full stop): an unbounded `[^\s,.;]+` tried at every
# character of one long run without spaces (a Chinese paragraph, a digest, base64) made the
# second pattern quadratic — a 400 KB line ran for minutes.
MAX_WORD = 40
_W = rf"(?<![^\s,.;])[^\s,.;]{{1,{MAX_WORD}}}(?![^\s,.;])"
_FROM_TO = [
    re.compile(
        r"\b(?:switched|moved|migrated|changed|went|converted|upgraded|downgraded)\b[^.;。\n]{0,60}?"
        rf"\bfrom\s+(?P<old>{_W}(?:\s+{_W}){{0,2}}?)\s+to\s+"
        rf"(?P<new>{_W}(?:\s+(?:[A-Z0-9][^\s,.;]{{0,{MAX_WORD}}}))?)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"(?P<new>(?:\d{{1,12}}(?:\.\d{{1,12}})?\s+)?{_W})\s+(?:now\s+)?instead\s+of\s+"
        rf"(?P<old>{_W}(?:\s+{_W})?)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\breplaced\s+(?P<old>{_W}(?:\s+{_W})?)\s+with\s+(?P<new>{_W})",
        re.IGNORECASE,
    ),
    re.compile(
        r"[从由]\s*(?P<old>[^\s，。；、]{1,15}?)\s*(?:换成|改为|改成|迁移到|迁到|切换到|切到|改到|升级到)了?"
        r"\s*(?P<new>[^\s，。；、]{1,15})"
    ),
]


def changes_of(memory: Memory) -> list[tuple[str, str]]:
    """(old value, new value) for each change the memory says happened."""
    text = f"{memory.description}\n{memory.body}"
    found = []
    for pattern in _FROM_TO:
        for match in pattern.finditer(text):
            old, new = match.group("old").strip(), match.group("new").strip()
            if terms(old) and terms(new) and not terms(old) <= terms(new):
                found.append((old, new))
    return found


def _by_change(ctx: RuleContext, memories: list[Memory], reported: set[tuple[str, str]]) -> None:
    # Each memory's terms once, and only the memories naming the old value looked at: a
    # tokenization of every body for every change said was quadratic in the folder.
    texts = [terms(f"{m.description}\n{m.body}") for m in memories]
    by_term: dict[str, list[int]] = defaultdict(list)
    for index, found in enumerate(texts):
        for term in found:
            by_term[term].append(index)
    for newer in memories:
        for old_value, new_value in changes_of(newer):
            old_terms, new_terms = terms(old_value), terms(new_value)
            topic = terms(newer.description) - old_terms - new_terms
            rarest = min(old_terms, key=lambda term: len(by_term.get(term, ())))
            for index in by_term.get(rarest, ()):
                older, text = memories[index], texts[index]
                if older.id == newer.id or not _maybe_older(older, newer, ctx.written):
                    continue
                if not old_terms <= text or new_terms <= text:
                    continue
                shared = len(topic & terms(older.description))
                # Two topic words; or one, when the older description names the old value.
                if shared < MIN_SUBJECT_TERMS and not (
                    shared and old_terms <= terms(older.description)
                ):
                    continue
                if older.id in newer.supersedes or (older.id, newer.id) in reported:
                    continue
                reported.add((older.id, newer.id))
                _note(ctx, older, newer, f"{newer.id} says it changed from {old_value} to "
                      f"{new_value}", "says it changed")


def _compare(
    ctx: RuleContext,
    first: tuple[Memory, frozenset[str], str],
    second: tuple[Memory, frozenset[str], str],
    reported: set[tuple[str, str]],
) -> None:
    (a, a_subject, a_value), (b, b_subject, b_value) = first, second
    if jaccard(a_subject, b_subject) < SUBJECT_JACCARD:
        return
    if a.id in b.supersedes or b.id in a.supersedes:
        return  # settled: the supersedes rule acts on it
    a_terms, b_terms = terms(a_value), terms(b_value)
    if a_terms <= b_terms or b_terms <= a_terms:
        return  # one says the same value, or more of it: no contradiction
    if _same_quantity(a_value, b_value):
        return  # "10 km" and "6.2 miles": one distance written in two units
    differs = difference(a_value, b_value)
    older, newer = sorted((a, b), key=lambda m: (_moment(m, ctx.written), m.id))
    if _when(older, ctx.written) == _when(newer, ctx.written):
        return  # no newer one to propose
    if _of_the_past(newer.description) and not _of_the_past(older.description):
        return  # written later, about before: "in 2023 the city was Paris" beside "is Berlin"
    if (older.id, newer.id) in reported:
        return
    reported.add((older.id, newer.id))
    what = f"same subject, {differs or 'a different value'}"
    if _maybe_older(newer, older, ctx.written):
        _note_unclear(ctx, older, newer, what)
        return
    said = "says it changed" if _CHANGE.search(newer.description + " " + newer.body) else "is newer"
    _note(ctx, older, newer, what, said)


def _value_in_bodies(a: Memory, b: Memory) -> bool:
    """Whether the words only one description has are in its own body and not the other's.

    "The user's editor is Sublime Text" over a body naming Sublime, "…is now Helix" over
    one naming Helix: the value changed. "Call with the vendor" / "Price increase": the
    descriptions name two things, not one thing's two values.
    """
    a_words, a_chars = key_words(a.description)
    b_words, b_chars = key_words(b.description)
    a_body, b_body = key_words(a.body), key_words(b.body)
    for only, own, other in (
        (a_words - b_words, a_body[0], b_body[0]),
        (b_words - a_words, b_body[0], a_body[0]),
        (a_chars - b_chars, a_body[1], b_body[1]),
        (b_chars - a_chars, b_body[1], a_body[1]),
    ):
        if only and only <= own and not only & other:
            return True
    return False


# Units a value may be written in, with their size in a base unit of their kind.
_UNITS = {
    "km": ("length", 1000.0), "kilometer": ("length", 1000.0), "kilometre": ("length", 1000.0),
    "公里": ("length", 1000.0), "千米": ("length", 1000.0),
    "mi": ("length", 1609.344), "mile": ("length", 1609.344), "英里": ("length", 1609.344),
    "m": ("length", 1.0), "meter": ("length", 1.0), "metre": ("length", 1.0), "米": ("length", 1.0),
    "ft": ("length", 0.3048), "foot": ("length", 0.3048), "feet": ("length", 0.3048),
    "英尺": ("length", 0.3048),
    "kg": ("mass", 1.0), "kilogram": ("mass", 1.0), "公斤": ("mass", 1.0), "千克": ("mass", 1.0),
    "lb": ("mass", 0.45359237), "lbs": ("mass", 0.45359237), "pound": ("mass", 0.45359237),
    "磅": ("mass", 0.45359237), "斤": ("mass", 0.5),
}
_QUANTITY = re.compile(
    r"(\d+(?:\.\d+)?)\s*(kilomet(?:er|re)s?|km|miles?|mi|met(?:er|re)s?|m|feet|foot|ft"
    r"|kilograms?|kg|pounds?|lbs?|公里|千米|英里|米|英尺|公斤|千克|磅|斤)(?![A-Za-z])",
    re.IGNORECASE,
)


def _same_quantity(first: str, second: str) -> bool:
    """Whether two values are one amount in two units (within 2%: "10 km" / "6.2 miles")."""
    amounts = []
    for text in (first, second):
        found = _QUANTITY.findall(text)
        if len(found) != 1:
            return False
        number, unit = found[0]
        unit = unit.lower()
        kind = _UNITS.get(unit) or _UNITS.get(unit.rstrip("s")) or _UNITS.get(unit[:-2])
        if kind is None:
            return False
        amounts.append((kind[0], float(number) * kind[1], unit))
    (kind_a, size_a, unit_a), (kind_b, size_b, unit_b) = amounts
    if kind_a != kind_b or unit_a == unit_b or not size_a or not size_b:
        return False
    return abs(size_a - size_b) <= 0.02 * max(size_a, size_b)


# A description that tells how it was (a past year, "was", "used to", 以前, 曾经) and not that
# it changed ("was moved to", "now"): both it and a present fact may hold.
_PAST = re.compile(
    r"\b(?:was|were|used\s+to|had\s+been|previously|formerly|back\s+in|before\s+the"
    r"|until|in\s+(?:19|20)\d\d)\b|以前|之前|曾经|过去|原来|当时|那时|(?:19|20)\d\d\s*年",
    re.IGNORECASE,
)


def _of_the_past(description: str) -> bool:
    return bool(_PAST.search(description)) and not _CHANGE.search(description)


def _note(
    ctx: RuleContext, older: Memory, newer: Memory, what: str, said: str, possibly: bool = False
) -> None:
    old_day, new_day = _when(older, ctx.written)[:10], _when(newer, ctx.written)[:10]
    ctx.applier.note(
        older.id,
        rule=NAME,
        message=(
            f"{'possibly' if possibly else 'likely'} contradicts {newer.id}: "
            f"“{older.description}” ({old_day}) vs "
            f"“{newer.description}” ({new_day}), {what}. Proposal: {newer.id} stands "
            f"({said}); to settle it add `supersedes: [{older.id}]` to {newer.id}, or keep both "
            "if both hold"
        ),
    )


def _note_unclear(ctx: RuleContext, first: Memory, last: Memory, what: str) -> None:
    """Which one is newer is not clear: `last` changed last, but `first` was created later."""
    ctx.applier.note(
        first.id,
        rule=NAME,
        message=(
            f"likely contradicts {last.id}: “{first.description}” vs “{last.description}”, "
            f"{what}. Which is newer is not clear: {last.id} was changed last "
            f"({_when(last, ctx.written)[:10]}; a change of trust or tags counts too) but "
            f"{first.id} was created later ({(first.created or '')[:10]}); to settle it add "
            "`supersedes: [the other]` to the one that stands, or keep both if both hold"
        ),
    )


def _maybe_older(first: Memory, second: Memory, written: dict[str, str] | None) -> bool:
    """Whether `first` may say the older fact: changed before `second`, or created before it.

    `updated` moves with any change of the file, a trust change (`sage-mem feedback`)
    too, so a memory changed last may still state the older fact; `created` tells.
    """
    if _moment(first, written) < _moment(second, written):
        return True
    return bool(first.created and second.created and first.created[:10] < second.created[:10])


def _when(memory: Memory, written: dict[str, str] | None = None) -> str:
    if written and memory.id in written:
        return written[memory.id]
    return memory.updated or memory.created or ""


def _moment(memory: Memory, written: dict[str, str] | None = None) -> float:
    """When `_when` says, in the order of when (a team's stamps are in several zones)."""
    return moment_order(_when(memory, written))
