"""The top of a query's scores, exactly, reading as few postings as it can.

Cost: the saturated weight of each (term, memory) is computed when the memory
is indexed and kept in the postings, so a query never reads a file or looks
at a memory that shares no term with it. A memory has a number (its place in
the index); a term's postings are two flat arrays, memory numbers (int32,
ascending) and weights (float32), about 8 bytes a posting, where Python
dicts took some 80. Postings are walked from the term of highest possible
contribution to the lowest, with a threshold primed from real scores: a
memory that cannot reach it is never taken or is dropped, and once no unseen
memory could still reach the top each candidate is looked up (by bisection)
in the lists left until it is out (exact pruning; see `accumulate_scores`).
With numpy, `dense.py` adds every posting in C instead, to the same sums.
A long query (a pasted page) is first cut to its rarest terms, pairs and
loose terms (MAX_QUERY_TERMS, MAX_QUERY_PAIRS, MAX_QUERY_LOOSE); a hook's
search is then bounded by the postings it reads (`max_postings`,
`_within_postings`), for those few terms can still be long lists in a large folder.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import mul
from typing import NamedTuple

from .packed import IdsByNumber

# Postings this short are walked without first asking whether they could matter.
_SHORT_LIST = 64

@dataclass(frozen=True)
class Hit:
    """One search result: compact, never the body."""

    id: str
    score: float
    description: str
    category: str | None
    trust: float
    updated: str | None
    summary: str | None = None
    project: str | None = None
    tags: tuple[str, ...] = ()
    matched: float = 0.0
    folder: str | None = None  # the folder's name, when several are read at once (folders/)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "id": self.id,
            "score": self.score,
            "description": self.description,
            "category": self.category,
            "trust": self.trust,
            "updated": self.updated,
            "summary": self.summary,
            "project": self.project,
            "tags": list(self.tags),
            "matched": self.matched,
        }
        if self.folder is not None:
            data["folder"] = self.folder
        return data

class Weighted(NamedTuple):
    parts: list[tuple[Sequence[int], Sequence[float]]]  # the cache's postings, then memory's
    size: int
    weight: float
    idf: float
    is_pair: bool
    ceiling: float  # weight times the largest saturated tf in the postings


def accumulate_scores(
    weighted: list[Weighted],
    count: int,
    passes: Callable[[int], bool] | None,
    factor: Callable[[int], float],
    bound: float,
) -> dict[int, float]:
    """Raw scores of every memory that can reach the top `count`, exactly.

    Terms go from the highest possible contribution (their `ceiling`:
    weight times the largest saturated tf in the term's postings, kept
    with the postings) to the lowest, which puts the long postings of
    common words last: the MaxScore idea (Turtle & Flood, 1995). `theta`
    is a lower bound of the `count`-th best final score: before a long
    list, the `count` best candidates so far are scored in full, by
    bisection in every list still to come, and the `count`-th of those
    real final scores is the bound. With it, exactly:

    - a memory not seen yet can reach the top only through the lists
      still to come, so once the sum of their ceilings, times the largest
      trust factor, is below `theta`, no new memory is taken: the long
      lists are then only looked up for the candidates (`_look_up`);
    - before that, a memory first met in a list is taken only if its
      weight there plus the later lists' ceilings, times its own factor,
      reaches `theta` (`_admit`, tests in C);
    - before each long list, a candidate whose score plus every ceiling
      to come, times its factor, stays below `theta` is dropped
      (`_reaching`).

    A memory's contributions are added in the lists' order whatever is
    pruned, so every score kept equals an exhaustive sum's to the last
    bit (`tests/test_pruning.py`); the bounds keep a margin of 1e-9 for
    the rounding of the sums of ceilings.
    """
    ordered = sorted(weighted, key=lambda item: item.ceiling, reverse=True)
    after = [0.0] * (len(ordered) + 1)  # after[i]: the ceilings of lists i, i + 1, ...
    for at in range(len(ordered) - 1, -1, -1):
        after[at] = after[at + 1] + ordered[at].ceiling
    boost = bound
    scores: dict[int, float] = {}
    theta = 0.0
    full: dict[int, float] = {}  # raw scores summed over every list, by priming
    primed_at = -1  # how many candidates there were when theta was last primed
    for at, item in enumerate(ordered):
        weight = item.weight
        if item.size > _SHORT_LIST and len(scores) >= count and _prune_due(len(scores),
                                                                            primed_at):
            if len(scores) != primed_at:
                theta = max(theta, _primed(scores, count, ordered, at, passes, factor, full))
            if theta > 0.0:
                scores = _reaching(scores, after[at], theta, factor)
            primed_at = len(scores)
        if theta > 0.0 and after[at] * boost < theta - _MARGIN:
            # No memory not seen yet can reach the top: the candidates only, each
            # through the lists left until it is done or out.
            return _finish(scores, ordered[at:], after[at:], theta, count, passes, factor,
                           full)
        # A memory first met here needs at least this weight in this list (factor <= boost).
        least = (theta / boost - after[at + 1] - _MARGIN) / weight if theta > 0 < weight else 0
        for numbers, weights in item.parts:
            if least > 0.0:
                if scores:
                    _look_up(scores, numbers, weights, weight)
                _admit(scores, numbers, weights, weight, least, after[at + 1], theta, factor)
            elif not scores:
                scores = dict(zip(numbers, map(weight.__mul__, weights), strict=True))
            else:
                # In C but for the memories already scored (a + b == b + a exactly).
                added = dict(zip(numbers, map(weight.__mul__, weights), strict=True))
                for key in added.keys() & scores.keys():
                    added[key] += scores[key]
                scores.update(added)
    return scores


def matched_shares(numbers: list[int], weighted: list[Weighted]) -> dict[int, float]:
    """For each memory, the share of the query's idf (word terms, not pairs) it contains."""
    terms = [item for item in weighted if not item.is_pair]
    total_idf = sum(item.idf for item in terms) or 1.0
    found = dict.fromkeys(numbers, 0.0)
    wanted = set(numbers)
    for item in terms:
        for posted, _ in item.parts:
            holding: Iterable[int]
            if len(posted) <= 16 * len(wanted):
                holding = wanted.intersection(posted)  # a short list: in C
            else:
                holding = [number for number in numbers if _holds(posted, number)]
            for number in holding:
                found[number] += item.idf
    return {number: value / total_idf for number, value in found.items()}


def _holds(numbers: Sequence[int], number: int) -> bool:
    at = bisect_left(numbers, number)
    return at < len(numbers) and numbers[at] == number


# Rounding slack of the pruning bounds (scores are sums of a few dozen products near 1).
_MARGIN = 1e-9



# Up to this many candidates, they are pruned before every long list; past it, only once
# they have doubled since: each pruning is a pass over every candidate, and a pasted page of
# a large folder has dozens of long lists (a pass per list was most of its time at 100k).
# Pruning less keeps more candidates, never a different top: the scores stay exact.
_PRUNE_EVERY = 1024


def _prune_due(candidates: int, pruned: int) -> bool:
    """Whether to prune `candidates` now, `pruned` having been left by the last pruning."""
    return candidates < _PRUNE_EVERY or candidates >= 2 * pruned


def _reaching(
    scores: dict[int, float], rest: float, theta: float, factor: Callable[[int], float]
) -> dict[int, float]:
    """The candidates whose score plus `rest` (the ceilings to come), times factor, reach theta."""
    reach = map(mul, map(rest.__add__, scores.values()), map(factor, scores))
    keep = list(map((theta - _MARGIN).__le__, reach))
    if all(keep):
        return scores
    return dict(compress(scores.items(), keep))


def _admit(
    scores: dict[int, float],
    numbers: Sequence[int],
    weights: Sequence[float],
    weight: float,
    least: float,
    rest: float,
    theta: float,
    factor: Callable[[int], float],
) -> None:
    """Add the memories first met in this list that could still reach theta.

    `least` is the weight a memory needs here with the largest factor; those
    above it are then tested with their own: (weight * w + rest) * factor.
    """
    keep = list(map(least.__le__, weights))
    numbers = list(compress(numbers, keep))
    if not numbers:
        return
    values = list(map(weight.__mul__, compress(weights, keep)))
    reach = map(mul, map(rest.__add__, values), map(factor, numbers))
    keep = list(map((theta - _MARGIN).__le__, reach))
    added = dict(zip(compress(numbers, keep), compress(values, keep), strict=True))
    for key in added.keys() & scores.keys():
        del added[key]
    scores.update(added)


def _finish(
    scores: dict[int, float],
    rest: list[Weighted],
    after: list[float],
    theta: float,
    count: int,
    passes: Callable[[int], bool] | None,
    factor: Callable[[int], float],
    full: dict[int, float],
) -> dict[int, float]:
    """The candidates' raw scores over the lists left, each memory on its own.

    No other memory can reach the top now. Best candidate first, each is
    looked up (by bisection) in the lists left, in their order, until its
    score plus the ceilings still to come, times its factor, falls below
    `theta`: then it is out. `theta` rises to the `count`-th best final
    score of the memories done, so that later candidates go sooner.
    """
    best: list[float] = []  # the `count` best final scores done (a heap)
    done: dict[int, float] = {}
    if theta > 0.0 and rest:
        # The loop's first test for every candidate at once (in C): most are out here, and
        # a pasted page of a large folder leaves tens of thousands (`_prune_due`).
        scores = _reaching(scores, after[0], theta, factor)
    for key in sorted(scores, key=scores.__getitem__, reverse=True):
        value = full.get(key)  # scored in full already, when theta was primed
        own = factor(key)
        if value is None:
            value = scores[key]
            out = False
            for item, left in zip(rest, after, strict=False):
                if (value + left) * own < theta - _MARGIN:
                    out = True
                    break
                weight = item.weight
                for numbers, weights in item.parts:
                    place = bisect_left(numbers, key)
                    if place < len(numbers) and numbers[place] == key:
                        value = value + weight * weights[place]
            if out:
                continue
        done[key] = value
        if passes is None or passes(key):
            final = value * own
            if len(best) < count:
                heapq.heappush(best, final)
            elif final > best[0]:
                heapq.heapreplace(best, final)
            if len(best) == count and best[0] > theta:
                theta = best[0]
    return done


def _primed(
    scores: dict[int, float],
    count: int,
    ordered: list[Weighted],
    at: int,
    passes: Callable[[int], bool] | None,
    factor: Callable[[int], float],
    full: dict[int, float],
) -> float:
    """A lower bound of the `count`-th best final score: real scores of the best candidates.

    The `count` best candidates so far (by score times factor) are scored in
    full, by bisection in every list from `at` on, adding in the lists' order
    as `_accumulate` does; `full` keeps those totals for the next call. The
    `count`-th best final score among every memory scored in full is the
    bound (0 when fewer than `count` pass the filters).
    """
    keys = list(scores)
    finals = map(mul, map(scores.__getitem__, keys), map(factor, keys))
    if passes is None:
        best = heapq.nlargest(count, zip(finals, keys, strict=False))
    else:
        # The filter is a Python call a candidate (a hook's project filter: every one of a
        # pasted page's tens of thousands, most of its time at 100k); asked of the best
        # first. (final, key) pairs are all distinct, so the first `count` that pass
        # among the best are the best that pass.
        wide = heapq.nlargest(4 * count, zip(finals, keys, strict=False))
        best = [pair for pair in wide if passes(pair[1])][:count]
        if len(best) < count < len(keys) and len(wide) == 4 * count:
            kept = list(filter(passes, keys))
            finals = map(mul, map(scores.__getitem__, kept), map(factor, kept))
            best = heapq.nlargest(count, zip(finals, kept, strict=False))
    rest = ordered[at:]
    for _, key in best:
        if key in full:
            continue
        total = scores[key]
        for item in rest:
            weight = item.weight
            for numbers, weights in item.parts:
                place = bisect_left(numbers, key)
                if place < len(numbers) and numbers[place] == key:
                    total = total + weight * weights[place]
        full[key] = total
    if len(full) < count:
        return 0.0
    return heapq.nlargest(count, map(mul, full.values(), map(factor, full)))[-1]


def _look_up(
    scores: dict[int, float], numbers: Sequence[int], weights: Sequence[float], weight: float
) -> None:
    """Add one term's contribution to the candidates already in `scores` only."""
    size = len(numbers)
    if len(scores) * 10 < size:
        # A few candidates in a long list: bisect for each.
        for key, value in scores.items():
            at = bisect_left(numbers, key)
            if at < size and numbers[at] == key:
                scores[key] = value + weight * weights[at]
        return
    found = dict(zip(numbers, weights, strict=True))
    for key in found.keys() & scores.keys():
        scores[key] = scores[key] + weight * found[key]


def top(
    scores: dict[int, float], count: int, ids: list[str | None] | IdsByNumber
) -> list[tuple[int, float]]:
    """The `count` best (number, score) pairs, by score and then by id, deterministically.

    A score of 0 is a memory with factor 0 (archived and not asked for, or retired).
    """
    if len(scores) > count:
        best = heapq.nlargest(count, scores.values())
        floor = max(best[-1], _TINY)
        # every memory tied with the last one competes, so ties always break by id
        tied = [(-value, ids[key], key) for key, value in scores.items() if value >= floor]
    else:
        tied = [(-value, ids[key], key) for key, value in scores.items() if value > 0.0]
    tied.sort()
    return [(key, -value) for value, _, key in tied[:count]]


_TINY = 5e-324
