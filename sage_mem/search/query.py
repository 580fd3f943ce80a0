"""The query path: from a query's text to its hits (`Index.search`).

A query's terms, pairs and loose terms (`tokens`), cut to the most telling
(`_most_telling`) and, for a hook, to a budget of postings
(`_within_postings`); their weights (`_query_weights`: idf times the query
weight); the filters and factors (trust, recency, the time a query names:
`_dated`); then the exact top (`ranking.accumulate_scores`) and the hits.

A long query (a pasted page) is first cut to its rarest terms, pairs and
loose terms (MAX_QUERY_TERMS, MAX_QUERY_PAIRS, MAX_QUERY_LOOSE); a hook's
search is then bounded by the postings it reads (`max_postings`,
`_within_postings`), for those few terms can still be long lists in a large folder.

Why one module: it is the one place that decides the lexical list (the query
once passed between five modules on its way); a person's or an agent's second
look (`_feedback`, `_best_passages`, `_spans`, `_exact_forms`) reorders that same list
from the same terms, weights and postings, and a split would hand those back
and forth again.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from itertools import compress, filterfalse, repeat
from operator import lshift, mul, or_
from typing import NamedTuple, TypeVar

from ..memory.patterns import on_use
from ..memory.value import Memory, parse_moment
from .dense import accumulate_dense, numpy_for
from .packed import Backing, IdsByNumber, NumbersById
from .ranking import Hit, Weighted, accumulate_scores, matched_shares, top
from .scoring import (
    EXACT_DEPTH,
    FEEDBACK_CHARS,
    FEEDBACK_MEMORIES,
    FEEDBACK_TERMS,
    K1,
    MAX_BODY_CHARS,
    PASSAGE_CHARS,
    PASSAGE_DEPTH,
    SPAN_DEPTH,
    Scoring,
    term_idf,
    word_pairs,
)
from .spans import answer_test
from .spelling import candidate_stems, guessable_words
from .timewords import TimeQuery, any_stamp_within, date_terms, read_time, stamp_day
from .tokens import (
    fold,
    is_unigram,
    loose_terms,
    short_names,
    stem,
    tokenize,
    writes_word,
    written_forms,
)

# A long prompt is scored on its most telling terms only (highest idf): the work per
# query stays bounded (a pasted page holds hundreds of terms) and so does its tail.
MAX_QUERY_TERMS = 32
MAX_QUERY_PAIRS = 16
# And on its rarest loose terms (`tokens.loose_terms`: a pasted Chinese page gives a
# skip bigram for nearly every three characters). No question of the dev sets has more.
MAX_QUERY_LOOSE = 32

_T = TypeVar("_T")
_BLANK_LINE = on_use(r"\n\s*\n")


def _head_reordered(
    head: list[tuple[int, float]], rest: Sequence[tuple[int, float]]
) -> list[tuple[int, float]]:
    """A second look's top few (`head`, rescored) in their new order, then the rest with
    scores at most the head's last: only the order inside the head changes, never what is
    in it. The sort is stable: the first ranking decides a tie."""
    head.sort(key=lambda pair: -pair[1])
    floor = head[-1][1]
    return head + [(number, min(score, floor)) for number, score in rest]


class Filters(NamedTuple):
    """What a search or a listing may return, as one value: the public surfaces (the
    store's `search` and `list`, the MCP tools, the CLI's options) name the filters as
    keywords, and make this once; below them it is passed whole (`Index.search`,
    `Index.select`, `passing`, a fused search's two lists)."""

    category: str | Sequence[str] | None = None
    project: str | None = None
    tags: Sequence[str] | None = None
    archived: bool = False


NO_FILTERS = Filters()


def _pieces(body: str) -> list[str]:
    """`body` cut at its blank lines into pieces of at most PASSAGE_CHARS (a longer
    paragraph is a piece of its own)."""
    out: list[str] = []
    current = ""
    for paragraph in _BLANK_LINE.split(body):
        if current and len(current) + len(paragraph) > PASSAGE_CHARS:
            out.append(current)
            current = paragraph
        else:
            current = current + "\n\n" + paragraph if current else paragraph
    if current:
        out.append(current)
    return out


class QueryPath:
    """The search side of `index.Index`, which holds the postings and columns it reads
    (declared here; see `Index._reset`)."""

    scoring: Scoring
    half_life_days: float | None
    date_boost: float
    time_word_weight: float
    prefix_weight: float
    feedback_weight: float
    passage_weight: float
    exact_weight: float
    span_weight: float
    spelling_weight: float
    _ids: list[str | None] | IdsByNumber
    _number: dict[str, int] | NumbersById
    _boost: array
    _shown: array
    _updated: list[str | None]
    _categories: list[str | None]
    _projects: list[str | None]
    _archived: bytearray
    _moments: dict[int, float | None]
    _postings: dict[str, tuple[array, array]]
    _tops: dict[str, float]
    _max_boost: float
    _backing: Backing | None
    _gone: Counter[str]

    def _guarded(self, action: Callable[[], _T]) -> _T:
        raise NotImplementedError

    def _settle(self) -> None:
        raise NotImplementedError

    def _memory(self, memory_id: str) -> Memory:
        raise NotImplementedError

    # searching

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        filters: Filters = NO_FILTERS,
        now: datetime | None = None,
        max_postings: int | None = None,
        refine: bool = False,
        spell: bool = False,
    ) -> list[Hit]:
        """Ranked hits for `query` among memories that pass `filters`.

        `now` is the query's date (default: the current time): the time words it
        names ("10 days ago", 上个月) are read against it (`timewords.read_time`).
        `max_postings` bounds the postings the search reads (`_within_postings`):
        a hook's search, whatever the prompt and the folder's size. With `refine`
        (a person's or an agent's search: `sage-mem search`, `memory_search`,
        through `MemoryStore.search`) the search looks twice: pseudo-relevance
        feedback (`_feedback`) and a long memory's best passage
        (`_best_passages`), a misspelt word read as the word memories hold
        (`_spelled`), then the top few ordered again by the spans of time
        they write when the query asks how long or when (`_spans`) and by the
        query's words as written (`_exact_forms`). A bounded search
        never does (a hook's budget), nor the fused search's lexical side (its
        semantic side reaches other words, and reads a long memory in pieces).
        `spell` reads a misspelt word so without the second look (a fused search's
        lexical side, for a person or an agent); a bounded search never does.
        """
        if limit <= 0:
            return []
        offset = max(0, offset)
        time = read_time(query, now) if self.date_boost else TimeQuery((), query)
        plain = self._query_terms(query)
        if plain is None:
            return []
        # Without its relative phrases ("10 days ago", 上周), when the query has more words.
        reworded = self._query_terms(time.text, time) if time.text is not query else None

        def search() -> list[Hit]:
            self._settle()
            archived = filters.archived
            factor = self._factor(now, archived)
            bound = self._max_boost
            chosen = plain
            dated = self._dated(factor, time) if time.windows else None
            if dated is not None:
                # Some memory is dated in or near a window: the dates, not the words, say when.
                factor, bound = dated
                chosen = reworded or plain
            refines = refine and max_postings is None
            if (refines or spell and max_postings is None) and self.spelling_weight > 0:
                chosen = self._spelled(query, chosen)
            telling = self._most_telling(*chosen)
            if max_postings is not None:
                telling = self._within_postings(*telling, max_postings)
            weighted = self._query_weights(*telling)
            if not weighted:
                return []
            passes = self._filter(filters)
            # The factors as an array when trust is all they are (numpy's path reads them so).
            trusts = None if dated is not None or self.half_life_days else (
                self._boost if archived else self._shown)
            wanted = offset + limit

            def ranked(weighted: list[Weighted], count: int) -> list[tuple[int, float]]:
                raw = self._accumulate(weighted, count, passes, factor, bound, trusts)
                if passes is None:
                    scores = dict(zip(raw, map(mul, raw.values(), map(factor, raw)), strict=True))
                else:
                    scores = {key: value * factor(key) for key, value in raw.items()
                              if passes(key)}
                return top(scores, count, self._ids)

            count = max(wanted, FEEDBACK_MEMORIES, PASSAGE_DEPTH) if refines else wanted
            best = ranked(weighted, count)
            if refines and self.feedback_weight > 0 and len(best) >= FEEDBACK_MEMORIES:
                best = self._feedback(best, count, weighted, telling, ranked)
            pieces: dict[int, str] = {}
            if refines and self.passage_weight > 0 and len(best) > 1:
                best = self._best_passages(best, telling, factor, pieces)
            answers = answer_test(query) if refines and self.span_weight > 0 else None
            if answers is not None and len(best) > 1:
                best = self._spans(best, pieces, answers)
            if refines and self.exact_weight > 0 and len(best) > 1:
                best = self._exact_forms(best, query, telling, factor, pieces)
            best = best[offset:wanted]
            matched = matched_shares([key for key, _ in best], weighted)
            return [self._hit(key, score, matched[key]) for key, score in best]

        return self._guarded(search)

    def _spelled(
        self, text: str, chosen: tuple[list[str], list[str], dict[str, float]]
    ) -> tuple[list[str], list[str], dict[str, float]]:
        """The query's terms with each misspelt word of `text` ("educaton", "recieved": a
        word no memory holds, `spelling.guessable_words`) read as the indexed word one edit
        away (`spelling.candidate_stems`) that the most memories hold, asked for as a loose
        term at `spelling_weight` (1: the word it was meant to be). Chosen on misspelt
        locomo-dev questions: docs/retrieval.md, "the thirteenth pass".
        """
        terms, pairs, loose = chosen
        added: dict[str, float] = {}
        for word in guessable_words(text):
            if self._document_count(stem(word)) > 0:
                continue
            best: tuple[int, str] | None = None
            for found in candidate_stems(word):
                if found in loose or found in added:
                    continue
                df = self._document_count(found)
                if df > 0 and (best is None or (df, best[1]) > (best[0], found)):
                    best = (df, found)
            if best is not None and best[1] not in terms:
                added[best[1]] = self.spelling_weight
        if not added:
            return chosen
        return terms, pairs, loose | added

    def _feedback(
        self,
        best: list[tuple[int, float]],
        wanted: int,
        weighted: list[Weighted],
        telling: tuple[list[str], list[str], Mapping[str, float]],
        ranked: Callable[[list[Weighted], int], list[tuple[int, float]]],
    ) -> list[tuple[int, float]]:
        """The top `wanted` of `best` ranked again with pseudo-relevance feedback: general
        words reach specific memories ("kitchen appliance" the memory of "a smoker") through
        the words of the memories the query's own words found best.

        The top FEEDBACK_MEMORIES hits' words (description and the first
        FEEDBACK_CHARS of the body), each term by its share of the memory's
        terms times the memory's score over the top one's, times its idf: the
        FEEDBACK_TERMS most telling that the query does not hold (words, CJK
        bigrams; no single CJK character) are asked for too, the first at
        `feedback_weight`, the others in proportion (a relevance model, Lavrenko
        & Croft 2001, as RM3 adds it to the query). The hits read keep their
        places: their own words would only confirm them, and reordering them
        cost MRR@10 on the dev sets; the rest are ranked by the query with its
        feedback terms, each scored at most the one above it (so scores stay in
        rank order), a memory holding only feedback terms too (a chat turn and
        the persona fact it uses share few words: listing only memories that
        hold a query word lost dulemon-utterance's gain). A query whose words
        find fewer than FEEDBACK_MEMORIES memories reads none: one memory is
        no topic to widen (a search for a unique word lists its memory alone).
        Cost: tokenizing two bounded texts and a second search (docs/retrieval.md,
        "the eighth pass").
        """
        head = best[:FEEDBACK_MEMORIES]
        terms, pairs, loose = telling
        known = set(terms).union(loose, pairs)
        best_score = head[0][1]
        if best_score <= 0:
            return best
        shares: dict[str, float] = {}
        for number, score in head:
            memory = self._memory(self._ids[number])  # type: ignore[arg-type]
            found = tokenize(memory.description) + tokenize(memory.body[:FEEDBACK_CHARS])
            if not found:
                continue
            share = score / best_score / len(found)
            for term in found:
                if term[0] != "~" and term not in known:
                    shares[term] = shares.get(term, 0.0) + share
        total = len(self._number)
        telling_terms = sorted(
            ((value * term_idf(df, total), term) for term, value in shares.items()
             if (df := self._document_count(term)) > 0),
            reverse=True)[:FEEDBACK_TERMS]
        if not telling_terms:
            return best
        most = telling_terms[0][0]
        added = self._query_weights(
            [], [], {term: self.feedback_weight * value / most for value, term in telling_terms})
        kept = {number for number, _ in head}
        rest = [(number, score) for number, score in ranked(weighted + added, wanted + len(head))
                if number not in kept]
        out = list(head)
        for number, score in rest[:wanted - len(head)]:
            out.append((number, min(score, out[-1][1])))
        return out

    def _best_passages(
        self,
        best: list[tuple[int, float]],
        telling: tuple[list[str], list[str], Mapping[str, float]],
        factor: Callable[[int], float],
        pieces: dict[int, str] | None = None,
    ) -> list[tuple[int, float]]:
        """`best` with its top PASSAGE_DEPTH ranked again by their best passage too: a fact
        said in one paragraph of a long memory about something else.

        A memory whose body is longer than PASSAGE_CHARS is cut at its blank lines
        into pieces of at most PASSAGE_CHARS (a longer paragraph is a piece of its
        own; the body's first MAX_BODY_CHARS, as indexed); a piece scores the
        query's terms and pairs it holds, each its query weight times idf times
        its saturated count (tf / (K1 + tf)), times the memory's `factor` as its
        whole score is (trust, the date a query names: without it the passage
        halved the date's say, and relative rewrites on long memories lost 0.06
        of R@5). Each of the top memories then scores
        its whole score over the top one's plus `passage_weight` times its best
        piece's over the best piece of all (a memory of one piece: its whole's
        share again). Nothing changes when no top memory is longer than a piece.
        Scores stay in the lexical units and in rank order (the top's at most the
        top score; the rest at most the last reranked one's). Cost: tokenizing
        the long memories among the top ten (docs/retrieval.md, "the eighth pass").
        """
        head = best[:PASSAGE_DEPTH]
        bodies = {}
        for number, _ in head:
            body = self._memory(self._ids[number]).body  # type: ignore[arg-type]
            if len(body) > PASSAGE_CHARS:
                bodies[number] = body[:MAX_BODY_CHARS]
        top_score = head[0][1]
        if not bodies or top_score <= 0:
            return best
        weights = self._term_weights(*telling)
        passages = {}
        for number, body in bodies.items():
            score, text = self._passage_score(body, weights)
            passages[number] = score * factor(number)
            if pieces is not None:
                pieces[number] = text
        best_passage = max(passages.values())
        if best_passage <= 0:
            return best
        share = self.passage_weight
        scored = []
        for number, score in head:
            whole = score / top_score
            piece = passages[number] / best_passage if number in passages else whole
            scored.append((number, (whole + share * piece) / (1 + share) * top_score))
        return _head_reordered(scored, best[PASSAGE_DEPTH:])

    def _passage_score(self, body: str, weights: Mapping[str, float]) -> tuple[float, str]:
        """The best score of `body`'s pieces (`_best_passages`) for terms `weights`, and that
        piece (the first on a tie)."""
        best = 0.0
        chosen = ""
        for piece in _pieces(body):
            found = tokenize(piece)
            counts = Counter(found)
            if self.scoring.pair_weight:
                counts.update(word_pairs(found))
            score = 0.0
            for term, weight in weights.items():
                tf = counts.get(term)
                if tf:
                    score += weight * tf / (K1 + tf)
            if score > best or not chosen:
                best, chosen = max(best, score), piece
        return best, chosen

    def _spans(
        self, best: list[tuple[int, float]], pieces: Mapping[int, str],
        answers: Callable[[str], bool],
    ) -> list[tuple[int, float]]:
        """`best` with its top SPAN_DEPTH ordered again for a question that asks how long,
        how often or how old, or when (`spans.answer_test`): a memory among them that writes
        the kind of answer asked for, `answers` (a span of time, `spans.writes_span`: "for 3
        years", "three times a week", 17岁; a date or a time, `spans.writes_time`: "in 2016",
        去年) gains `span_weight` of the top score.

        The memories above the answer hold the question's other words ("How long has Nate
        had his turtles?": "Nate has turtles as pets…") and no span; the one that answers
        is the one writing the kind of answer asked for. A long memory is read in its best
        piece (`pieces`, from `_best_passages`). Only the order inside the top SPAN_DEPTH
        changes; below it, scores stay at most the last one's. Chosen on locomo-dev's
        tuning half: docs/retrieval.md, "the eleventh pass".
        """
        head = best[:SPAN_DEPTH]
        top_score = head[0][1]
        if top_score <= 0:
            return best
        gain = self.span_weight * top_score
        scored = []
        for number, score in head:
            memory = self._memory(self._ids[number])  # type: ignore[arg-type]
            body = pieces.get(number) or memory.body[:MAX_BODY_CHARS]
            found = answers(memory.description) or answers(body)
            scored.append((number, score + gain if found else score))
        return _head_reordered(scored, best[SPAN_DEPTH:])

    def _exact_forms(
        self,
        best: list[tuple[int, float]],
        query: str,
        telling: tuple[list[str], list[str], Mapping[str, float]],
        factor: Callable[[int], float],
        pieces: Mapping[int, str],
    ) -> list[tuple[int, float]]:
        """`best` with its top EXACT_DEPTH ordered again by the query's words as written: a
        memory writing "books" for a query's "books" above one writing only "book".

        Stemming lets "book", "books" and "booking" meet, which finds the memory; the
        word as the question writes it is the finer evidence of which one answers it
        (a list question's plural, a verb's tense). Each query word (a term of the query,
        not a relative time phrase's or a feedback one's; Latin only: CJK terms are
        their characters as written) that a top memory writes in the query's own form
        adds `exact_weight` times its query weight (query weight × idf), times the
        memory's `factor` as its score has it (trust, the query's date). A long
        memory is read in its best piece (`pieces`, from `_best_passages`): somewhere
        in a long text every form of a word is written. Only the order inside the top
        EXACT_DEPTH changes (what is in it does not); below it, scores stay at most
        the last one's. Chosen on locomo-dev's tuning half: docs/retrieval.md, "the
        tenth pass".
        """
        forms = written_forms(query)
        head = best[:EXACT_DEPTH]
        if not forms or len(head) < 2:
            return best
        total = len(self._number)
        weights = {term: self._query_factor(term, telling[2]) * term_idf(df, total)
                   for term in telling[0]
                   if term in forms and (df := self._document_count(term)) > 0}
        if not weights:
            return best
        scored = []
        for number, score in head:
            memory = self._memory(self._ids[number])  # type: ignore[arg-type]
            body = pieces.get(number) or memory.body[:MAX_BODY_CHARS]
            text = fold(memory.description + "\n" + body)
            gain = sum(weight for term, weight in weights.items()
                       if any(writes_word(text, form) for form in forms[term]))
            scored.append((number, score + self.exact_weight * gain * factor(number)))
        return _head_reordered(scored, best[EXACT_DEPTH:])

    def span_order(
        self, ranked: Sequence[tuple[str, float]], query: str
    ) -> list[tuple[str, float]]:
        """Another ranking's (id, score) — a fused one's, in lexical units — with its top
        SPAN_DEPTH ordered again for a question asking how long, how often, how old or when,
        as a person's or an agent's lexical search orders its own (`_spans`). (The query's words
        as written, `_exact_forms`, are not read there: in the fused search they lost on
        locomo-dev's tuning half, docs/retrieval.md "the eleventh pass".)"""
        answers = answer_test(query) if self.span_weight > 0 else None
        if answers is None or len(ranked) < 2:
            return list(ranked)

        def order() -> list[tuple[str, float]]:
            number = self._number
            best = [(number[key], score) for key, score in ranked if key in number]
            if len(best) < len(ranked):
                return list(ranked)
            return [(self._ids[at], score)  # type: ignore[misc]
                    for at, score in self._spans(best, {}, answers)]

        return self._guarded(order)

    def _term_weights(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float]
    ) -> dict[str, float]:
        """Query weight times idf of each query term and pair some memory holds."""
        total = len(self._number)
        known = set(terms)
        out = {}
        for term in terms + [term for term in loose if term not in known] + pairs:
            df = self._document_count(term)
            if df > 0:
                out[term] = self._query_factor(term, loose) * term_idf(df, total)
        return out

    def _query_factor(self, term: str, loose: Mapping[str, float]) -> float:
        """A query term's weight before idf: a loose term's own, a pair's, a CJK unigram's, 1."""
        if term in loose:
            return loose[term]
        if " " in term:
            return self.scoring.pair_weight
        if is_unigram(term):
            return self.scoring.unigram_weight
        return 1.0

    def _document_count(self, term: str) -> int:
        """How many live memories hold `term` (the cache's postings and those held)."""
        count = 0 if self._backing is None else self._backing.count(term) - self._gone.get(term, 0)
        mine = self._postings.get(term)
        return count + (0 if mine is None else len(mine[0]))

    def _query_terms(
        self, text: str, time: TimeQuery | None = None
    ) -> tuple[list[str], list[str], dict[str, float]] | None:
        """The terms, pairs and loose terms of a query's `text`; None when it has no terms.

        With `time`, `text` is the query without its relative phrases, whose own
        words then weigh `time_word_weight`: a memory may say "3 years ago" too, but
        "ago", "weeks" and "last" mostly match the wrong memories' words.
        """
        sequence = tokenize(text)
        terms = list(dict.fromkeys(sequence))
        if not terms:
            return None
        known = set(terms)
        pairs = list(dict.fromkeys(word_pairs(sequence, known))) if self.scoring.pair_weight else []
        loose = dict(loose_terms(text, known))
        if self.prefix_weight:
            for term in short_names(text):
                loose.setdefault(term, self.prefix_weight)
        if time is not None and self.time_word_weight:
            for window in time.windows:
                if window.relative:
                    for term in tokenize(window.phrase):
                        if term not in known:
                            loose.setdefault(term, self.time_word_weight)
        return terms, pairs, loose

    def _most_telling(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float]
    ) -> tuple[list[str], list[str], Mapping[str, float]]:
        """The query's MAX_QUERY_TERMS terms, MAX_QUERY_PAIRS pairs and MAX_QUERY_LOOSE
        loose terms (those it does not hold already) of highest idf.

        Only a long query (a pasted page) has more; each term then costs a
        document-frequency look-up (no postings read), and the rarest are kept,
        in query order (the earlier one on a tie). A loose weight of a term
        kept stays.
        """
        if len(terms) > MAX_QUERY_TERMS or len(pairs) > MAX_QUERY_PAIRS:
            terms = self._rarest(terms, MAX_QUERY_TERMS)
            pairs = self._rarest(pairs, MAX_QUERY_PAIRS)
        known = set(terms)
        extra = list(filterfalse(known.__contains__, loose))
        if len(extra) > MAX_QUERY_LOOSE:
            # The weights of the terms the query holds (a unigram's, a name's) stay; the
            # others kept follow in query order, which is all `_query_weights` reads.
            rarest = self._rarest(extra, MAX_QUERY_LOOSE)
            held_weights = {term: loose[term] for term in known.intersection(loose)}
            loose = held_weights | dict(zip(rarest, map(loose.__getitem__, rarest), strict=True))
        return terms, pairs, loose

    def _rarest(self, candidates: list[str], cap: int) -> list[str]:
        """The `cap` candidates held by the fewest memories (and by some), in query order.

        Document frequencies of a cached index come from the cache's counts
        (one bisection a term, `Backing.estimated_counts`), which may credit
        a term it does not hold with another's count: each term kept is
        checked (`count`, the look-up its postings need anyway) and one not
        held is passed over. Held postings (memories changed since) count too.
        """
        if len(candidates) <= cap:
            return candidates
        backing, held, gone = self._backing, self._postings, self._gone
        counts = [0] * len(candidates) if backing is None else backing.estimated_counts(candidates)
        # Each (document frequency, place) as one int, df << bits | place: sorted as ints
        # (a sort of tuples took 0.3 ms for a pasted page's 2,000 terms).
        bits = len(candidates).bit_length()
        found: list[int]
        if backing is not None and not gone and held.keys().isdisjoint(candidates):
            # Only the cache's counts (no memory changed holds these terms): in C.
            found = list(compress(map(or_, map(lshift, counts, repeat(bits)),
                                      range(len(counts))), counts))
        else:
            found = []
            for number, (term, df) in enumerate(zip(candidates, counts, strict=True)):
                mine = held.get(term)
                if mine is not None:
                    # Exact, for the check below passes a held term over.
                    df = len(mine[0]) + (0 if backing is None else backing.count(term))
                if df and gone:
                    df -= gone.get(term, 0)
                if df > 0:
                    found.append(df << bits | number)
        found.sort()  # the lowest document frequency is the highest idf, then query order
        mask = (1 << bits) - 1
        kept: list[int] = []
        for code in found:
            if len(kept) >= cap:
                break
            number = code & mask
            term = candidates[number]
            # Only a count from the cache may be another term's; a held term's is its own.
            if backing is None or term in held or backing.count(term) > 0:
                kept.append(number)
        kept.sort()
        return list(map(candidates.__getitem__, kept))

    def _within_postings(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float], budget: int
    ) -> tuple[list[str], list[str], Mapping[str, float]]:
        """The query's terms, pairs and loose terms whose postings, together, are at most
        `budget`: taken from the fewest postings (the highest idf) up, until the next would
        pass it; kept in query order.

        The term cap (`_most_telling`) bounds the number of terms, not their length: a
        pasted page's 32 rarest terms can still be common words of a large folder, each a
        list of tens of thousands of postings, and scoring walks them in Python (a hook's
        search past its 300 ms wait at 100,000 memories). A query whose postings fit is
        unchanged. A term's size is what its search would read: the cache's postings
        (retired ones included) and those held in memory, counted without reading them.
        Dropping a term changes no other term's weight (each idf is its own).
        """
        known = set(terms)
        candidates = terms + [term for term in loose if term not in known] + pairs
        backing, held = self._backing, self._postings
        sizes = [0 if backing is None else backing.count(term) for term in candidates]
        for at, term in enumerate(candidates):
            mine = held.get(term)
            if mine is not None:
                sizes[at] += len(mine[0])
        if sum(sizes) <= budget:
            return terms, pairs, loose
        kept: set[str] = set()
        spent = 0
        for at in sorted(range(len(candidates)), key=sizes.__getitem__):  # stable: query order
            spent += sizes[at]
            if spent > budget:
                break  # every later term is at least as long
            kept.add(candidates[at])
        return ([term for term in terms if term in kept], [pair for pair in pairs if pair in kept],
                {term: weight for term, weight in loose.items() if term in kept})

    def _query_weights(
        self, terms: list[str], pairs: list[str], loose: Mapping[str, float] | None = None
    ) -> list[Weighted]:
        """Postings, query weight * idf, and idf of each query term and pair found.

        `loose` (from `tokens.loose_terms`) adds terms, or sets the weight of one
        the query holds already.
        """
        total = len(self._number)
        backing, held, gone = self._backing, self._postings, self._gone
        loose = loose or {}
        out = []
        known = set(terms)
        for term in terms + [term for term in loose if term not in known] + pairs:
            parts: list[tuple[Sequence[int], Sequence[float]]] = []
            df = 0
            top = 0.0
            if backing is not None:
                found = backing.postings(term)
                if found is not None:
                    parts.append(found[:2])
                    df += len(found[0]) - gone.get(term, 0)
                    top = found[2]
            mine = held.get(term)
            if mine is not None:
                parts.append(mine)
                df += len(mine[0])
                top = max(top, self._held_top(term, mine[1]))
            if df <= 0:
                continue
            idf = term_idf(df, total)
            is_pair = " " in term
            weight = idf * self._query_factor(term, loose)
            size = sum(len(part[0]) for part in parts)
            out.append(Weighted(parts, size, weight, idf, is_pair, weight * top))
        return out

    def _held_top(self, term: str, weights: Sequence[float]) -> float:
        """The largest weight of a term's postings held in memory (a bound, after removals)."""
        top = self._tops.get(term)
        if top is None:
            top = self._tops[term] = max(weights)
        return top

    def _filter(self, filters: Filters) -> Callable[[int], bool] | None:
        """A test of a memory number for the filters, or None when there are none.

        Archived and retired memories need no test: their factor is 0 (`_factor`).
        """
        category, project, tags = filters.category, filters.project, filters.tags
        categories = {category} if isinstance(category, str) else set(category or ())
        categories = {c.lower() for c in categories if c}
        wanted_tags = {t.lower() for t in tags or () if t}
        if not categories and project is None and not wanted_tags:
            return None
        ids, of_category, of_project = self._ids, self._categories, self._projects

        def accept(number: int) -> bool:
            memory_id = ids[number]
            if memory_id is None:
                return False
            if categories and of_category[number] not in categories:
                return False
            if project is not None and of_project[number] not in (None, project):
                return False
            if wanted_tags and not wanted_tags <= {t.lower() for t in self._memory(memory_id).tags}:
                return False
            return True

        return accept

    def _factor(self, now: datetime | None, archived: bool) -> Callable[[int], float]:
        """Trust (and, with a half-life, recency) factor of a memory number; 0 for one hidden."""
        boost = self._boost if archived else self._shown
        if not self.half_life_days:
            return boost.__getitem__
        moment = (now or datetime.now(UTC)).timestamp()
        half_life = float(self.half_life_days) * 86400.0
        moments, stamps = self._moments, self._updated

        def factor(number: int) -> float:
            if number in moments:
                updated = moments[number]
            else:
                parsed = parse_moment(stamps[number])
                updated = moments[number] = parsed.timestamp() if parsed is not None else None
            if updated is None:
                return boost[number]
            age = max(0.0, moment - updated)
            return boost[number] * (0.7 + 0.3 * 0.5 ** (age / half_life))

        return factor

    def _dated(
        self, factor: Callable[[int], float], time: TimeQuery
    ) -> tuple[Callable[[int], float], float] | None:
        """`factor` times 1 + DATE_BOOST for a memory dated in one of the query's windows
        (half that near one), and the new bound of every factor; None when no memory is
        dated in or near any window (the time words then say nothing of these memories).

        A memory is dated by its `updated` day and by the dates its text writes
        (their index terms, `timewords.date_terms`: a dream writes "(2026-11-24)"
        beside "yesterday"), whichever is closer.
        """
        written: dict[int, float] = {}
        for window in time.windows:
            for wanted in date_terms(window):
                holders = self._holders(wanted.terms)
                if wanted.confirm and holders:
                    holders &= self._holders(wanted.confirm)
                for number in holders:
                    if written.get(number, 0.0) < wanted.closeness:
                        written[number] = wanted.closeness
        stamps, boost = self._updated, self.date_boost
        if not written and not any_stamp_within(stamps, time):
            return None
        memo: dict[int, float] = {}

        def dated(number: int) -> float:
            found = memo.get(number)
            if found is None:
                closeness = written.get(number, 0.0)
                if closeness < 1.0:
                    day = stamp_day(stamps[number])
                    if day is not None:
                        closeness = max(closeness, time.closeness(day))
                found = memo[number] = 1.0 + boost * closeness
            return factor(number) * found

        return dated, self._max_boost * (1.0 + boost)

    def _holders(self, terms: Iterable[str]) -> set[int]:
        """The numbers of the memories holding any of `terms` (retired ones too: factor 0)."""
        backing, held = self._backing, self._postings
        out: set[int] = set()
        for term in terms:
            if backing is not None:
                found = backing.postings(term)
                if found is not None:
                    out.update(found[0])
            mine = held.get(term)
            if mine is not None:
                out.update(mine[0])
        return out

    def _accumulate(
        self,
        weighted: list[Weighted],
        count: int,
        passes: Callable[[int], bool] | None,
        factor: Callable[[int], float],
        bound: float | None = None,
        factors: array | None = None,
    ) -> dict[int, float]:
        """Raw scores of every memory that can reach the top `count`: `dense.accumulate_dense`
        with numpy when it pays (`dense.numpy_for`), else `ranking.accumulate_scores`;
        `bound`: the largest factor (the trust factors' by default); `factors`: each
        memory's, when `factor` only reads them."""
        largest = self._max_boost if bound is None else bound
        np = numpy_for(sum(item.size for item in weighted))
        if np is not None:
            return accumulate_dense(np, weighted, count, passes, factor, largest, len(self._ids),
                                    factors)
        return accumulate_scores(weighted, count, passes, factor, largest)

    def _hit(self, number: int, score: float, matched: float) -> Hit:
        memory = self._memory(self._ids[number])  # type: ignore[arg-type]
        return Hit(
            id=memory.id,
            score=round(score, 4),
            description=memory.description,
            category=memory.category,
            trust=memory.trust,
            updated=memory.updated,
            summary=memory.summary,
            project=memory.project,
            tags=memory.tags,
            matched=round(matched, 3),
        )

    def select(self, filters: Filters = NO_FILTERS) -> list[Memory]:
        """Memories that pass `filters`, sorted by id."""
        archived = filters.archived

        def select() -> list[Memory]:
            accept = self._filter(filters)
            number, shown = self._number, self._archived
            out = []
            for key in sorted(number):
                at = number[key]
                if (archived or not shown[at]) and (accept is None or accept(at)):
                    out.append(self._memory(key))
            return out

        return self._guarded(select)

    def passing(
        self,
        memory_ids: Sequence[str],
        filters: Filters,
    ) -> list[str]:
        """Those of `memory_ids` a search with `filters` may return, in their order."""

        def passing() -> list[str]:
            accept = self._filter(filters)
            boost, number = (self._boost if filters.archived else self._shown), self._number
            return [key for key in memory_ids if key in number and boost[number[key]] > 0
                    and (accept is None or accept(number[key]))]

        return self._guarded(passing)

    def factors(
        self, memory_ids: Sequence[str], *, archived: bool = False, query: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, float]:
        """The trust (and recency) multiplier a search applies to each of these memories;
        with `query`, times its date windows' (`_dated`), read against `now`."""
        time = read_time(query, now) if query is not None and self.date_boost else None

        def factors() -> dict[str, float]:
            factor, number = self._factor(None, archived), self._number
            if time is not None and time.windows:
                dated = self._dated(factor, time)
                if dated is not None:
                    factor = dated[0]
            return {key: factor(number[key]) for key in memory_ids if key in number}

        return self._guarded(factors)

    def date_factors(
        self, memory_ids: Sequence[str], query: str, now: datetime | None = None
    ) -> dict[str, float]:
        """The date windows' multiplier of each of these memories for `query` (`_dated`:
        1 + DATE_BOOST in a window, less near one, 1 elsewhere); {} when the query names no
        window any memory is dated in or near (its time words are then words). A fused
        search applies it once, to the fused score (`fusion.search`)."""
        time = read_time(query, now) if self.date_boost else None
        if time is None or not time.windows:
            return {}

        def factors() -> dict[str, float]:
            dated = self._dated(lambda number: 1.0, time)
            if dated is None:
                return {}
            number = self._number
            return {key: dated[0](number[key]) for key in memory_ids if key in number}

        return self._guarded(factors)

    def hit_for(self, memory_id: str, score: float) -> Hit | None:
        """The hit of one memory at `score` (another ranking's, e.g. a fused one's)."""
        return self._guarded(
            lambda: self._hit(self._number[memory_id], score, 0.0)
            if memory_id in self._number else None
        )
