"""A fact said in one paragraph of a long memory about something else (issue 33, item 3).

A person's or an agent's search (`sage-mem search`, `memory_search`: `refine=True`) scores
each long memory among its top ten by its best passage too (`QueryPath._best_passages`:
paragraphs packed to PASSAGE_CHARS): the memory saying "the spare key to the garage is under
the blue flowerpot" in one paragraph ranks above one whose paragraphs each name one of
those words, twice, and whose description names two, though the latter's whole scores more.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search.index import Index
from sage_mem.search.query import _pieces
from sage_mem.search.scoring import PASSAGE_CHARS


def make(memory_id: str, description: str, body: str = "") -> Memory:
    return memory_from_meta(memory_id, Path(memory_id + ".md"),
                            {"description": description}, body)


FILLER = {
    "en": "We went over the budget for the spring, the hiring plan and the office move; "
          "everyone agreed on the dates and the travel policy stays as it was. ",
    "zh": "今天讨论了春季预算、招聘计划和搬办公室的事，大家对日期没有意见，差旅制度不变。",
}
CASES = {
    "en": ("spare key garage flowerpot",
           "By the way, the spare key to the garage is under the blue flowerpot.",
           ["The garage door squeaks; the garage needs oil.",
            "A key ring came off; the key is bent.",
            "The flowerpot cracked; a new flowerpot is on order.",
            "A spare tyre, and a spare bulb."]),
    "zh": ("车库 备用 钥匙 花盆",
           "顺便说一下，车库的备用钥匙在蓝色花盆下面。",
           ["车库门响了，车库要上油。",
            "钥匙圈掉了，钥匙弯了。",
            "花盆裂了，新花盆已经订了。",
            "备用轮胎，还有备用灯泡。"]),
}


def long_memories(language: str) -> list[Memory]:
    query, fact, scattered = CASES[language]
    filler = FILLER[language] * (3 if language == "en" else 8)  # past a piece: 800 characters
    told = "\n\n".join([filler, filler, fact, filler, filler])
    spread = "\n\n".join(part for line in scattered for part in (filler, line))
    english = language == "en"
    return [make("project_offsite", "Offsite notes" if english else "团建记录", told),
            make("project_house", "Garage and flowerpot notes" if english else "车库和花盆记录",
                 spread)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_fact_in_one_paragraph_of_a_long_memory_ranks_first(language: str) -> None:
    index = Index()
    index.add_many(long_memories(language))
    query = CASES[language][0]
    assert [hit.id for hit in index.search(query)][0] == "project_house"  # the whole, before
    hits = index.search(query, refine=True)
    assert [hit.id for hit in hits] == ["project_offsite", "project_house"]
    assert hits[0].score >= hits[1].score


@pytest.mark.parametrize("language", ["en", "zh"])
def test_short_memories_keep_their_ranking(language: str) -> None:
    index = Index()
    _, fact, scattered = CASES[language]
    index.add_many(make(f"note_{number}", line) for number, line in enumerate([fact, *scattered]))
    query = CASES[language][0]
    assert [hit.id for hit in index.search(query, refine=True, limit=2)] == [
        hit.id for hit in index.search(query, limit=2)]


def test_a_body_is_cut_at_blank_lines_into_pieces_of_at_most_the_passage_size() -> None:
    paragraph = "x" * 300
    pieces = _pieces("\n\n".join([paragraph] * 5))
    assert [len(piece) for piece in pieces] == [602, 602, 300]
    assert all(len(piece) <= PASSAGE_CHARS for piece in pieces)
    assert _pieces("y" * 1_000) == ["y" * 1_000]  # a longer paragraph is a piece of its own


# A factor between what flips the order with the pieces multiplied and what flips it without.
@pytest.mark.parametrize(("language", "favour"), [("en", 3.0), ("zh", 1.15)])
def test_a_piece_carries_its_memory_factor_as_the_whole_does(language: str,
                                                             favour: float) -> None:
    """A date window or trust multiplies a memory's pieces as it does its whole: a memory
    the query's date favours is not put down by a piece scored without it."""
    index = Index()
    index.add_many(long_memories(language))
    query = CASES[language][0]
    house = index._number["project_house"]

    def factor(number: int) -> float:
        return favour if number == house else 1.0

    telling = index._query_terms(query)
    assert telling is not None
    once = [(index._number[hit.id], hit.score * factor(index._number[hit.id]))
            for hit in index.search(query)]
    once.sort(key=lambda pair: -pair[1])
    ranked = index._best_passages(once, telling, factor)
    assert [number for number, _ in ranked] == [house, index._number["project_offsite"]]
    assert index._best_passages(once, telling, lambda number: 1.0)[0][0] != house
