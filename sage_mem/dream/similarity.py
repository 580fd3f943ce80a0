"""How alike two memories are, for the near-duplicate rule: term sets, Jaccard, containment.

Terms are the index's own (`tokens.tokenize`): stemmed words for Latin text,
character bigrams for CJK. Left out: CJK single-character terms (`~x`), which
make merely related Chinese texts look alike ("用户的猫…" and "用户的狗…" share
most of their characters), and bigrams with a function character in them
(户在, 区是), which say nothing and make twins that differ in one particle
("是"/"为") look apart. A text with nothing else keeps what it has.

Two measures, both 0..1:

- `head`: Jaccard of the description+name terms. Twins say the same thing in
  nearly the same words; related memories share a topic but differ in the
  word that matters ("cat"/"dog", "staging"/"production"), which costs a short
  description a large share of its terms.
- `contained`: the share of one body's terms found in the other body, so that a
  merge never archives a body with content the kept memory lacks.

Numbers must agree: "release 2.3" and "release 2.4" are different facts
however alike the rest is. The thresholds were measured on labelled pairs in
English and Chinese (see tests/test_dream_dedupe.py and the module `dedupe`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..memory.value import Memory
from ..search import tokens
from ..search.tokens import has_cjk, is_unigram, tokenize

MIN_BODY_TERMS = 8
"""Bodies with fewer distinct terms than this carry too little to compare."""


@dataclass(frozen=True)
class Fingerprint:
    """The term sets of one memory that the near-duplicate rule compares."""

    id: str
    head: frozenset[str]
    numbers: frozenset[str]
    aliases: frozenset[str]
    body: frozenset[str]


_FUNCTION_CHARS = frozenset(getattr(tokens, "CHINESE_STOP_CHARS", ())) | frozenset(
    getattr(tokens, "CHINESE_BREAKS", "")
)


def terms(text: str) -> frozenset[str]:
    """Index terms of `text` as a set, without CJK unigrams or function-character bigrams."""
    found = tokenize(text)
    strong = frozenset(
        t
        for t in found
        if not is_unigram(t) and not (has_cjk(t) and any(c in _FUNCTION_CHARS for c in t))
    )
    return strong if strong else frozenset(found)


def fingerprint(memory: Memory) -> Fingerprint:
    head_text = memory.description if not memory.name else f"{memory.description} ; {memory.name}"
    head = terms(head_text)
    return Fingerprint(
        id=memory.id,
        head=head,
        numbers=frozenset(t for t in terms(memory.description) if any(c.isdigit() for c in t)),
        aliases=terms(" ; ".join(memory.aliases)),
        body=terms(memory.body[:20_000]),
    )


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def containment(part: frozenset[str], whole: frozenset[str]) -> float:
    """Share of `part`'s terms that are also in `whole` (1.0 for an empty `part`)."""
    if not part:
        return 1.0
    return len(part & whole) / len(part)


def body_covered(loser: Fingerprint, keeper: Fingerprint, threshold: float) -> tuple[bool, float]:
    """Whether the keeper's body already says what the loser's says, and the measured share."""
    if len(loser.body) < MIN_BODY_TERMS:
        return True, 1.0
    share = containment(loser.body, keeper.body | keeper.head)
    return share >= threshold, share
