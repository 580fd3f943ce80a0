"""The packed store: what an index loaded from the on-disk cache reads and keeps.

A cache's memory ids stay packed as it stores them (`PackedIds`): an id is
decoded for a hit or found by bisection, so a hook holds no list or dict of
every id (some 16 MB at 100,000 memories). `Backing` is the cache as the
index reads it (a term's postings from the file when a query needs them);
`Columns`, `Export` and `Packed` are an index's columns and postings as the
cache writes them (`search/cache.py`) and a build gives them (`building.py`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..memory.value import Memory

if TYPE_CHECKING:  # not imported on a hook's path
    from ..memory.catalog import Listing


class PackedIds:
    """A cache's memory ids as it stores them: their UTF-8 end to end, where each starts,
    and their numbers in id order; an id is decoded when asked for, found by bisection."""

    __slots__ = ("_blob", "_order", "_starts")

    def __init__(self, blob: bytes, starts: Sequence[int], order: Sequence[int]) -> None:
        self._blob, self._starts, self._order = blob, starts, order

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, number: int) -> str:
        starts = self._starts
        return self._blob[starts[number] : starts[number + 1]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return map(self.__getitem__, range(len(self)))

    def _encoded(self, number: int) -> bytes:
        return self._blob[self._starts[number] : self._starts[number + 1]]

    def find(self, memory_id: str) -> int | None:
        """The number of `memory_id`, or None. UTF-8 orders bytes as str orders text."""
        key = memory_id.encode("utf-8", "surrogatepass")
        order = self._order
        at = bisect_left(order, key, key=self._encoded)
        if at < len(order) and self._encoded(order[at]) == key:
            return order[at]
        return None


def packed_ids(ids: Iterable[str]) -> tuple[bytes, array, array]:
    """What `PackedIds` reads: the ids' UTF-8 joined, where each starts (uint32, one more
    than the ids), and their numbers in id order (uint32)."""
    encoded = [key.encode("utf-8", "surrogatepass") for key in ids]
    starts = array("I", accumulate(map(len, encoded), initial=0))
    order = array("I", sorted(range(len(encoded)), key=encoded.__getitem__))
    return b"".join(encoded), starts, order


class IdsByNumber:
    """Memory ids by number, as `Index._ids` holds them, for an index on a cache: the cache's
    (`PackedIds`, decoded one at a time), then those numbered since; None for one retired."""

    __slots__ = ("added", "base", "count", "gone", "retired")

    def __init__(self, base: PackedIds) -> None:
        self.base = base
        self.count = len(base)
        self.retired = bytearray(self.count)
        self.gone = 0  # how many of the cache's are retired
        self.added: list[str | None] = []

    def __len__(self) -> int:
        return self.count + len(self.added)

    def __getitem__(self, number: int) -> str | None:
        if number < self.count:
            return None if self.retired[number] else self.base[number]
        return self.added[number - self.count]

    def __setitem__(self, number: int, value: str | None) -> None:
        if value is not None:
            raise ValueError("a memory number is only ever retired")
        if number >= self.count:
            self.added[number - self.count] = None
        elif not self.retired[number]:
            self.retired[number] = 1
            self.gone += 1

    def append(self, memory_id: str | None) -> None:
        self.added.append(memory_id)

    def __iter__(self) -> Iterator[str | None]:
        for number in range(self.count):
            yield self[number]
        yield from self.added


class NumbersById(MutableMapping[str, int]):
    """The live ids' numbers, as `Index._number` holds them, over `IdsByNumber`: the cache's
    found by bisection, those numbered since in a dict; iterated as a dict would be (the
    cache's in number order, then the others as they were numbered)."""

    def __init__(self, ids: IdsByNumber) -> None:
        self.ids = ids
        self.added: dict[str, int] = {}

    def get(self, memory_id: str, default: Any = None) -> Any:
        number = self.added.get(memory_id)
        if number is not None:
            return number
        ids = self.ids
        number = ids.base.find(memory_id) if isinstance(memory_id, str) else None
        return default if number is None or ids.retired[number] else number

    def __getitem__(self, memory_id: str) -> int:
        number = self.get(memory_id)
        if number is None:
            raise KeyError(memory_id)
        return number

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self.get(memory_id) is not None

    def __setitem__(self, memory_id: str, number: int) -> None:
        if number < self.ids.count or memory_id in self:
            raise ValueError("only a new number is given, to an id not live")
        self.added[memory_id] = number

    def __delitem__(self, memory_id: str) -> None:
        if self.added.pop(memory_id, None) is None:
            self.ids[self[memory_id]] = None

    def __len__(self) -> int:
        return self.ids.count - self.ids.gone + len(self.added)

    def __iter__(self) -> Iterator[str]:
        ids = self.ids
        base, retired = ids.base, ids.retired
        for number in range(ids.count):
            if not retired[number]:
                yield base[number]
        yield from self.added


class BackingError(Exception):
    """Raised by a Backing whose data turned out damaged (the index rebuilds: see `recover`)."""


class Backing(Protocol):
    """The base of an index loaded from the on-disk cache, read from the file as needed.

    Memories 0 .. n-1 of the index are the cache's n memories, in its order.
    """

    secrets: tuple[int, bytes] | None
    """What the cache says of each memory's shown text: the mark of the credential rules it
    was judged by, and a byte a memory (1: a hook would mask something). None: not said."""

    def postings(self, term: str) -> tuple[Sequence[int], Sequence[float], float] | None:
        """`term`'s memory numbers (ascending) and weights, with the largest weight; or None."""

    def count(self, term: str) -> int:
        """How many memories `term`'s postings hold (0: none), without reading them."""

    def estimated_counts(self, terms: list[str]) -> list[int]:
        """`count` of each term, cheaply: exact for a term held; for one not held 0, or
        rarely another term's count (a caller checks with `count` the terms it keeps)."""

    def terms(self) -> Iterable[tuple[str, Sequence[int], Sequence[float], float]]:
        """Every term the cache holds, as `postings` gives it, in file order."""

    def memory(self, number: int) -> Memory:
        """A memory the cache holds."""

    def listing(self, number: int) -> Listing:
        """What MEMORY.md shows of a memory the cache holds, without making its `Memory`."""

    def lengths(self, number: int) -> tuple[int, ...]:
        """A memory's field lengths (in terms, in FIELDS order)."""


@dataclass
class Columns:
    """One value per memory, in index order: what a loaded index starts from."""

    ids: list[str] | PackedIds
    trusts: list[float]
    updated: list[str | None]
    archived: list[bool]
    categories: list[str | None]
    projects: list[str | None]
    averages: dict[str, float]
    length_sums: dict[str, int]
    max_boost: float


Terms = tuple[list[str], Sequence[Sequence[int]], Sequence[Sequence[float]], list[float]]
"""Terms, and for each its memory numbers, weights and largest weight: four columns."""


@dataclass
class Export:
    """An index as the on-disk cache stores it: its live memories numbered 0, 1, ... in order.

    `numbers` are the index's own numbers of those memories (ascending);
    `lengths` their field lengths, row after row; `postings` the terms, and
    for each the new numbers (ascending), the weights and the largest weight,
    as four columns; `memory` gives a memory by the index's number. All of it
    is taken under the index's lock: later changes to the index do not reach it.
    """

    columns: Columns
    numbers: list[int]
    lengths: list[int]
    base: Backing | None
    base_count: int
    memory: Callable[[int], Memory]
    postings: Terms


class Round(NamedTuple):
    """The postings of the terms `low` to `high` (places in the cache file's order of
    terms) of a build: memory numbers and weights, term after term (`Packed`); valid
    until the next round is asked for."""

    low: int
    high: int
    slots: array | memoryview
    weights: array | memoryview[Any]  # float32


class Packed(NamedTuple):
    """A build's index, compact: every term's postings in flat arrays (see `Builder`), in
    the order the cache file holds the terms (by CRC-32).

    Terms are numbered in order of first appearance: term `t` is `terms[t]`,
    held by `counts[t]` memories. The `r`-th term of the file, `order[r]`
    (CRC-32 `sorted_crcs[r]`), holds the postings `starts[r]` to
    `starts[r + 1]` (memory numbers, ascending, and weights), given a range
    of terms at a time by `rounds` (each read once, in order; the whole range
    at once for a small build); memory `n` the field lengths
    `lengths[n * len(FIELDS):]`.
    """

    columns: Columns
    lengths: array
    terms: Sequence[str]  # `building.TermTexts`: a pair made into text when asked for
    counts: array
    order: array
    sorted_crcs: array
    starts: array
    rounds: Iterable[Round]


def extend_array(target: array, values: Sequence[Any] | memoryview) -> None:
    """Append `values` (an array or a memoryview of the same item type) to `target`, in C."""
    target.frombytes(memoryview(values).cast("B"))  # type: ignore[arg-type]  # a buffer


class Slices(Sequence[Any]):
    """Item `t`: the slice `bounds[t]` to `bounds[t + 1]` of `values`, as a memoryview."""

    def __init__(self, values: array, bounds: array) -> None:
        self._view = memoryview(values)
        self._bounds = bounds

    def __len__(self) -> int:
        return len(self._bounds) - 1

    def __getitem__(self, at: Any) -> Any:
        if not isinstance(at, int):
            raise TypeError("one item at a time")
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError(at)
        return self._view[self._bounds[at] : self._bounds[at + 1]]


def as_array(code: str, values: Sequence[Any] | memoryview) -> array:
    """`values` as an array of `code` (a memoryview is copied as bytes)."""
    if isinstance(values, array):
        return array(code, values)
    if not isinstance(values, memoryview):
        raise TypeError(f"expected an array or a memoryview, not {type(values).__name__}")
    return array(code, values.tobytes())
