"""The ranking formula: terms of a memory's fields, their saturated weights (BM25F), idf.

Terms come from `tokens.tokenize`: Porter2-stemmed English words (stop words
and question frames such as "how many" dropped) and, for CJK text, character
bigrams plus single characters marked `~`. Each field of a memory is
tokenized on its own; the fields and their weights w_f fall in the order of
DESIGN.md §4:

    description 2.0, aliases 1.8, name 1.6, summary 1.4, tags 1.3, filename 1.1, body 1.0

The filename field is the last part of the id with `_` and `-` read as spaces
and a leading category prefix dropped (`user_cat_zh` gives "cat zh"): the
prefix repeats the category, which is a filter, not a topic. The body counts
up to its first 20,000 characters.

Scoring is BM25F (Robertson & Zaragoza, "The Probabilistic Relevance
Framework", 2009) with one saturation over the weighted fields. For a term t
and a memory d with field lengths len_f (in terms) and corpus averages avg_f:

    tf'(t, d) = sum over fields f of  w_f * tf_f(t, d) / (1 - b_f + b_f * len_f / avg_f)
    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    bm25(t,d) = idf(t) * tf' / (k1 + tf')          k1 = 0.7

with b = 0.2 for description and summary, 0.3 for body and 0.1 for the short
fields (aliases, name, tags, filename). Length normalisation is weak on
purpose: a memory is a short note, and a longer one usually covers more (the
"scope" reading of length, Robertson & Walker 1994) rather than repeating
itself (the "verbosity" reading that b near 1 assumes), so a short memory
holding one query word must not outrank a longer one holding them all on its
brevity alone. Classic values (b 0.5-0.75, k1 0.9) lost 0.007 of R@5 on
locomo-dev and 0.008 on cmrc-sent; no normalisation at all (b 0) lost more.

A query's score for d adds up, over its distinct terms and its distinct
adjacent word pairs:

    score(q, d) = sum over terms t of q_t * bm25(t, d)
                + 0.3 * sum over pairs p of bm25(p, d)

where q_t is 1 for words and CJK bigrams and 0.25 for a CJK single character
(enough for a one-character query to find "用户的猫叫芝麻" without letting
characters outvote bigrams: at 0.3 or 0.6, which score better on cmrc-sent,
a mixed query such as "flaky 测试" ranks the memories holding 测试 above the
one it names). `tokens.loose_terms` adds query terms or sets their q_t: a
name inside the question 1.5 (a capitalised word not starting a sentence:
the question is about that person), a doubled Chinese character's unigram
1.0 ("狗狗" for 狗), a Chinese character standing alone between function words
0.5 (狗 of "我的狗"), a Chinese skip bigram 0.4 ("打篮球" for 打球), a verb and
its particle joined 1.0 ("log in" for "login") and a word split into its
verb and particle 0.3 ("login" for "log"); `tokens.short_names` a short name's prefix
term 0.5 ("Deb" asks for "deb*", which a memory writing "Deborah" is indexed under:
`tokens.name_prefixes`, outside the field's length). The pair part is a small proximity bonus after
Metzler & Croft's sequential dependence model (2005): `word_pairs` turns two
word terms next to each other, once stop words are dropped, into one term
("support group", which "support groups" meets too), indexed like any other
term with its own document frequency, so a phrase rare in the folder counts
more. CJK text needs no pairs: its bigrams already are adjacency.

The score is then multiplied by trust, 0.8 + 0.4 * trust (neutral at the
default 0.5), and, when a half-life is set, by recency of `updated`,
0.7 + 0.3 * 0.5 ** (age_days / half_life), and, when the query names a time
("10 days ago", 上个月: `timewords.read_time`, against the query's `now`), by
1 + DATE_BOOST for a memory dated inside one of its windows (its `updated`
day or a date its text writes), 1 + DATE_BOOST / 2 for one near it; a
relative phrase's words then weigh TIME_WORD_WEIGHT (`Index._dated`, and
docs/retrieval.md "Search by when"; a fused search applies it to the fused
score instead: `Index.date_factors`). Ties order by id, so equal scores
always list in the same order.

Tuning (`benchmarks/retrieval.py --grid`, on LoCoMo conversations 0-2 and
checked on 3-4) found a flat optimum: over k1 0.5-1.6, description weight 1-3
and pair weight 0.15-0.45, R@5 and MRR@10 stay within 0.03 of each other on
either half; the constants above sit inside that plateau, not on its best
corner. Without pairs, R@5 drops by about 0.02 on the check half. A coverage bonus
(for matching more distinct query terms), unordered or wider pair windows,
strict adjacency across stop words and typo correction were tried and left
out: none helped both halves. Pseudo-relevance feedback, left out then (every
hit ranked again), is a person's or an agent's search now, its two hits read
keeping their places (`QueryPath._feedback`), as is a long memory's best
passage (`QueryPath._best_passages`): docs/retrieval.md, "the eighth pass". Its
top EXACT_DEPTH are then ordered again by the query's words as written
(`QueryPath._exact_forms`: "books" above "book"; "the tenth pass", which also
measured term proximity, the rarest words' coverage and a weaker idf, none kept); before them, a
question asking how long, how often or how old (or when) has its top SPAN_DEPTH
ordered by the spans of time (or the dates) they write (`QueryPath._spans`,
`search/spans.py`: "for 3 years", 每周, 1998年; "the eleventh pass").

Length averages: avg_f is the mean length of field f over all memories,
rounded to a 1/32-octave grid (a step of 2.2 %; a mean under 1 counts as 1).
The rounding changes scores by well under one percent (retrieval figures are
unchanged to three decimals), and it makes a fresh build a pure function of
the folder that a cached index can match exactly: one loaded from the
on-disk cache and brought up to date re-weights its postings only if the
changes moved an average across a grid step (`reweigh`). A live index (the
watcher's) re-weighs when the number of memories has drifted by a tenth
since the last time, as before; in between, a changed memory is weighed
with the averages of the last re-weighing.
"""

from __future__ import annotations

import math
from collections import _count_elements  # type: ignore[attr-defined]  # Counter's, in C
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import filterfalse
from operator import eq
from typing import TypeVar

from ..memory.value import CATEGORIES, Memory
from .tokens import _CJK_RUN, name_prefixes, tokenize_counted

FIELD_WEIGHTS: dict[str, float] = {
    "description": 2.0,
    "aliases": 1.8,
    "name": 1.6,
    "summary": 1.4,
    "tags": 1.3,
    "filename": 1.1,
    "body": 1.0,
}
FIELD_B: dict[str, float] = {
    "description": 0.2,
    "aliases": 0.1,
    "name": 0.1,
    "summary": 0.2,
    "tags": 0.1,
    "filename": 0.1,
    "body": 0.3,
}
FIELDS = tuple(FIELD_WEIGHTS)
K1 = 0.7
UNIGRAM_QUERY_WEIGHT = 0.25
PAIR_WEIGHT = 0.3
MAX_BODY_CHARS = 20_000
AVERAGE_STEPS = 32
# A memory dated inside a window the query names (`timewords.read_time`) scores this much
# more (1 + DATE_BOOST), one dated near it half that.
DATE_BOOST = 0.75
# What a relative time phrase's own words weigh once the phrase became a window.
TIME_WORD_WEIGHT = 0.5
# Pseudo-relevance feedback (`QueryPath._feedback`): the words of the top FEEDBACK_MEMORIES
# hits (the first FEEDBACK_CHARS of each body) give the query FEEDBACK_TERMS more terms, the
# most telling weighing FEEDBACK_WEIGHT; those hits keep their places, the rest are ranked again.
FEEDBACK_MEMORIES = 2
FEEDBACK_TERMS = 20
FEEDBACK_WEIGHT = 0.2
FEEDBACK_CHARS = 2_000
# The best passage (`QueryPath._best_passages`): a memory whose body is longer than
# PASSAGE_CHARS, among the top PASSAGE_DEPTH, is also scored by its best piece (paragraphs
# packed to PASSAGE_CHARS), weighing PASSAGE_WEIGHT against its whole.
PASSAGE_CHARS = 800
PASSAGE_DEPTH = 10
PASSAGE_WEIGHT = 1.0
# Written forms (`QueryPath._exact_forms`): among the top EXACT_DEPTH, a memory writing a query
# word as the query writes it ("books" for "books", not only "book") gains EXACT_WEIGHT times
# that term's query weight; the order inside the top EXACT_DEPTH alone changes.
EXACT_WEIGHT = 0.2
EXACT_DEPTH = 5
# Spans (`QueryPath._spans`): for a question asking how long, how often or how old (or when),
# a memory among the top SPAN_DEPTH that writes a span of time ("for 3 years", 每周; or a date,
# 1998年) gains SPAN_WEIGHT of the top score; the order inside the top SPAN_DEPTH alone changes.
SPAN_WEIGHT = 0.3
# A misspelt query word (`QueryPath._spelled`): the indexed word one edit away that the most
# memories hold is asked for at SPELLING_WEIGHT, as the word it was meant to be.
SPELLING_WEIGHT = 1.0
SPAN_DEPTH = PASSAGE_DEPTH

_K = TypeVar("_K")


def term_idf(df: int, total: int) -> float:
    """idf(t) of the module docstring: a term `df` of `total` memories hold."""
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def unique_idf(total: int) -> float:
    """The idf of a term one memory of `total` holds: what one rare query term weighs in
    that folder, its scores' scale (the hook's relevance floor, the merge of folders)."""
    return term_idf(1, max(total, 1))


@dataclass(frozen=True)
class Scoring:
    """The constants of the ranking formula (see the module docstring)."""

    k1: float = K1
    field_weights: Mapping[str, float] = field(default_factory=lambda: dict(FIELD_WEIGHTS))
    field_b: Mapping[str, float] = field(default_factory=lambda: dict(FIELD_B))
    unigram_weight: float = UNIGRAM_QUERY_WEIGHT
    pair_weight: float = PAIR_WEIGHT


def counted_fields(memory: Memory) -> dict[str, tuple[list[str], int]]:
    """The terms of each indexed field of a memory, in text order, and its length in tokens."""
    leaf = memory.id.rsplit("/", 1)[-1]
    head, _, rest = leaf.partition("_")
    if rest and head.lower() in CATEGORIES:
        # `user_cat`: the prefix repeats the category, a filter rather than a topic,
        # and would let every "user ..." question match every user memory.
        leaf = rest
    return {
        "description": tokenize_counted(memory.description),
        "aliases": tokenize_counted(" ; ".join(memory.aliases)),
        "name": tokenize_counted(memory.name or ""),
        "summary": tokenize_counted(memory.summary or ""),
        "tags": tokenize_counted(" ; ".join(memory.tags)),
        "filename": tokenize_counted(leaf.replace("_", " ").replace("-", " ")),
        "body": tokenize_counted(memory.body[:MAX_BODY_CHARS]),
    }


def word_pairs(terms: Sequence[str], distinct: AbstractSet[str] | None = None) -> list[str]:
    """Adjacent word terms as `"first second"` pair terms (no term contains a space).

    `distinct` is `set(terms)` when the caller has it.
    """
    if len(terms) < 2:
        return []
    if distinct is None:
        distinct = set(terms)
    if "".join(distinct).isascii():
        latin = distinct  # a CJK term is never ASCII (nor is `~` and a CJK character)
    else:
        # An ASCII term is a word; a term of other letters ("café") is a word unless it
        # starts with `~` (a unigram) or a CJK character (a bigram). (A regex class of
        # `~` and the CJK ranges would take 10 ms to compile, in every hook process.)
        latin = set(filter(str.isascii, distinct))
        others = list(filterfalse(latin.__contains__, distinct))
        rest = "".join(others).replace("~", "")
        if not (rest and _CJK_RUN.fullmatch(rest)):
            # Not only CJK bigrams and unigrams (their text, without the `~`, is all CJK).
            others = [term for term in others if term[0] != "~"]
            latin.update(filterfalse(_CJK_RUN.match, others))
        if len(latin) < 2:
            return []  # a pair joins two different words: none in a Chinese text
    following = terms[1:]
    if len(latin) == len(distinct) and not any(map(eq, terms, following)):
        # Only words, none repeated in place (the common case): no test per pair.
        return list(map(" ".join, zip(terms, following, strict=False)))
    return [
        first + " " + second
        for first, second in zip(terms, following, strict=False)
        if first != second and first in latin and second in latin
    ]


def snap_average(total: float, count: int) -> float:
    """A field's mean length on the 1/32-octave grid of the module docstring."""
    value = max(1.0, total / max(1, count))
    return 2.0 ** (round(math.log2(value) * AVERAGE_STEPS) / AVERAGE_STEPS)


def field_counts(
    memory: Memory, pair_weight: float
) -> tuple[list[dict[str, int]], tuple[int, ...]]:
    """Term counts of each field (word pairs too, with a pair weight) and field lengths,
    in FIELDS order."""
    counts: list[dict[str, int]] = []
    lengths: list[int] = []
    for name, (terms, length) in counted_fields(memory).items():
        # What `Counter(terms)` does, without its checks of the argument (a build makes
        # seven a memory: their checks cost as much as the counting).
        counted: dict[str, int] = {}
        _count_elements(counted, terms)
        lengths.append(length)
        if pair_weight and len(terms) > 1:
            _count_elements(counted, word_pairs(terms))
        if name in _NAMED_FIELDS:
            # Not in the field's length: another way to find a word it holds.
            _count_elements(counted, name_prefixes(_NAMED_FIELDS[name](memory)))
        counts.append(counted)
    return counts, tuple(lengths)


# The fields whose names ("Deborah") are indexed by their prefixes too (`tokens.name_prefixes`).
_NAMED_FIELDS = {
    "description": lambda memory: memory.description,
    "body": lambda memory: memory.body[:MAX_BODY_CHARS],
}


def weigh(
    counts: Sequence[Mapping[_K, int]], lengths: Sequence[int], scoring: Scoring,
    averages: Mapping[str, float],
) -> dict[_K, float]:
    """The saturated weight of each term of a memory (the same arithmetic everywhere).

    Its terms in order of first appearance, field after field: a build's terms
    are numbered in that order (`Builder`), which the cache's ties follow.
    """
    weights, b, k1 = scoring.field_weights, scoring.field_b, scoring.k1
    weighted: dict[_K, float] = {}
    for name, counted, length in zip(FIELDS, counts, lengths, strict=True):
        if not length or not weights.get(name):
            continue
        norm = weights[name] / (1.0 - b[name] + b[name] * length / averages[name])
        if not weighted:
            weighted = {term: count * norm for term, count in counted.items()}
            continue
        common = counted.keys() & weighted.keys()
        for term in common:
            weighted[term] += counted[term] * norm
        if len(common) < len(counted):
            weighted.update(
                {term: count * norm for term, count in counted.items() if term not in common}
            )
    return {term: tf / (k1 + tf) for term, tf in weighted.items()}
