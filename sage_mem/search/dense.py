"""The exact top of a query's scores with numpy: every posting added in C.

`ranking.accumulate_scores` walks postings in Python, pruning what cannot
reach the top; on a large folder a query's long lists still cost it
milliseconds to hundreds of them (a pasted page at 100,000 memories). Here
each list is added to one array of scores, a float64 a memory, in C:

    scores[numbers] += weight * weights          (list after list, in ceiling order)

The sums are the pure path's to the last bit: the same float64 products
(a float32 weight widened, times the term's weight) added to each memory in
the same order, the lists sorted by ceiling as there (`tests/test_pruning.py`
checks both paths against scoring every posting). Then the memories are
walked from the highest raw score down, each final score (raw times its
factor) taken until the raw score times the largest factor is below the
`count`-th best final one: no memory further down can reach the top, nor
tie with it.

numpy is optional (the semantic extra brings it): a plain install has only
the pure path, and both rank alike. Importing numpy costs some 100 ms of CPU,
more than a hook's whole search, so a process imports it only once its
searches have read `IMPORT_AFTER` postings in Python (what the import costs,
read in Python: a server pays it once, a hook's one search never does), and
in a background thread, so that no search waits for it; a process that has
numpy already (one embedding) uses it from the start.
"""

from __future__ import annotations

import heapq
import os
import sys
import threading
from array import array
from collections.abc import Callable
from typing import Any

from .ranking import _MARGIN, _TINY, Weighted

# Postings read in Python before numpy is imported (about its import's CPU time).
IMPORT_AFTER = 300_000
# A query with fewer postings is as quick in Python (numpy's calls have their own cost).
DENSE_FROM = 256
# None: numpy by the rule above; True or False: always or never (tests compare both).
USE_NUMPY: bool | None = None

_read_in_python = 0
_missing = False
_importing = False


def numpy_for(postings: int) -> Any | None:
    """numpy, to score a query of `postings` postings with; None for the pure path."""
    global _read_in_python, _importing
    if USE_NUMPY is False or postings < DENSE_FROM and USE_NUMPY is None:
        return None
    found = sys.modules.get("numpy")
    if found is not None:
        # Until an import under way in another thread (this module's, or the semantic
        # extra's) has finished, the module is half made: Python meanwhile.
        spec = getattr(found, "__spec__", None)
        return None if getattr(spec, "_initializing", False) else found
    if _missing:
        return None
    if USE_NUMPY:  # asked for (tests): imported now
        return _imported()
    _read_in_python += postings
    if _read_in_python >= IMPORT_AFTER and not _importing:
        # In the background: the search that crossed the line (perhaps a hook's, served)
        # does not wait the import's 100 ms; the next ones use numpy once it is there.
        _importing = True
        threading.Thread(target=_imported, name="sage-mem numpy import", daemon=True).start()
    return None


def _imported() -> Any | None:
    """numpy, imported; None (and remembered) when it cannot be: a plain install."""
    global _missing
    # BLAS on one thread, as `semantic.py` sets it (read when numpy loads, whichever first).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        import numpy
    except ImportError:
        _missing = True
        return None
    return numpy


def accumulate_dense(
    np: Any,
    weighted: list[Weighted],
    count: int,
    passes: Callable[[int], bool] | None,
    factor: Callable[[int], float],
    bound: float,
    size: int,
    factors: array | None = None,
) -> dict[int, float]:
    """Raw scores of the memories (numbered below `size`) that can reach the top `count`,
    exactly as `ranking.accumulate_scores` gives them; `bound`: the largest factor.

    `factors`: the factor of each memory number when `factor` is only that (trust, no
    recency or dates) and no filter is asked: the top is then taken in C too.
    """
    ordered = sorted(weighted, key=lambda item: item.ceiling, reverse=True)
    scores = np.zeros(size)
    float64, int32, float32, add_at = np.float64, np.int32, np.float32, np.add.at
    for item in ordered:
        weight = item.weight
        for numbers, weights in item.parts:
            if len(numbers):
                # In float64: a float32 array times a Python float stays float32 (NEP 50).
                added = np.multiply(np.frombuffer(weights, dtype=float32), weight, dtype=float64)
                add_at(scores, np.frombuffer(numbers, dtype=int32), added)
    held = np.flatnonzero(scores)
    if not len(held):
        return {}
    raw = scores[held]
    if factors is not None and passes is None:
        finals = raw * _gathered(np, factors, held)
        if len(held) > count:
            # Every memory tied with the `count`-th final score too: ties break by id later.
            # (Of the memories scored only: a partition of every memory's, zeros and all,
            # took three times as long at 100,000.)
            floor = max(np.partition(finals, len(held) - count)[len(held) - count], _TINY)
        else:
            floor = _TINY
        shown = np.flatnonzero(finals >= floor)
        return dict(zip(held[shown].tolist(), raw[shown].tolist(), strict=True))
    best: list[float] = []  # the `count` best positive final scores walked (a heap)
    out: dict[int, float] = {}
    theta = 0.0
    step = 8 * count + 64
    while len(raw):
        # The next `step` best raw scores, in order (argpartition: no sort of them all).
        if len(raw) > step:
            parted = np.argpartition(-raw, step - 1)
            chosen, left = parted[:step], parted[step:]
        else:
            chosen, left = np.arange(len(raw)), np.arange(0)
        chosen = chosen[np.argsort(-raw[chosen], kind="stable")]
        keys, values = held[chosen], raw[chosen]
        held, raw = held[left], raw[left]
        step *= 4
        for key, value in zip(keys.tolist(), values.tolist(), strict=True):
            if len(best) == count and value * bound < theta - _MARGIN:
                return out  # no memory from here down reaches the top, nor ties with it
            out[key] = value
            if passes is not None and not passes(key):
                continue
            final = value * factor(key)
            if final <= 0.0:
                continue
            if len(best) < count:
                heapq.heappush(best, final)
            elif final > best[0]:
                heapq.heapreplace(best, final)
            if len(best) == count:
                theta = best[0]
    return out


def _gathered(np: Any, factors: array, numbers: Any) -> Any:
    """`factors` at `numbers`, copied: no view of the array outlives the call (an array
    with a view cannot grow, and the index appends a memory's factor when it adds one)."""
    return np.frombuffer(factors, dtype=np.float64)[numbers]
