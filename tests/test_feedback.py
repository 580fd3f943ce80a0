"""General words reach specific memories through pseudo-relevance feedback (issue 33, item 2).

A search asks, besides its own words, for the most telling words of its two best hits
(`QueryPath._feedback`): "kitchen appliance" finds the brisket smoked on the Traeger the
appliance memories name, though that memory holds neither word. The two hits read keep
their places; a hook's bounded search (`max_postings`) and the fused search's lexical side
read no feedback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search.index import Index


def make(memory_id: str, description: str, body: str = "") -> Memory:
    return memory_from_meta(memory_id, Path(memory_id + ".md"),
                            {"description": description}, body)


FILLER = {
    "en": [
        ("project_deploy", "Deploys run from the main branch", "CI builds the wheel first."),
        ("project_tests", "Run pytest before every commit", "Ruff and mypy too."),
        ("user_trip", "Trip to Lisbon in May", "Booked the hotel near the river."),
        ("user_bike", "Cycled forty miles on Saturday", "The new saddle helped."),
        ("user_book", "Reading a novel about sailors", "Halfway through."),
        ("user_walls", "Painted the bedroom walls blue", "Two coats."),
    ],
    "zh": [
        ("project_deploy", "部署从主分支发布", "持续集成先构建安装包。"),
        ("project_tests", "每次提交前运行测试", "还有代码检查。"),
        ("user_trip", "五月去里斯本旅行", "订了河边的酒店。"),
        ("user_bike", "周六骑行六十公里", "新车座很舒服。"),
        ("user_book", "在读一本关于水手的小说", "读了一半。"),
        ("user_walls", "卧室墙刷成蓝色", "刷了两遍。"),
    ],
}
# Two memories the query's words find, and one that shares only their specific words.
CASES = {
    "en": ("kitchen appliance", [
        ("user_smoker", "New kitchen appliance: a Traeger pellet smoker",
         "Bought the Traeger pellet smoker for the kitchen."),
        ("user_manual", "Manual of the kitchen appliance",
         "Traeger pellet smoker manual: keep the hopper dry."),
        ("user_brisket", "Smoked a brisket for twelve hours",
         "On the Traeger, with hickory pellets in the smoker."),
    ]),
    "zh": ("厨房电器", [
        ("user_smoker", "新买的厨房电器：长帝烤箱", "买了一台长帝烤箱，放在厨房。"),
        ("user_manual", "厨房电器的说明书", "长帝烤箱说明书：先预热十分钟。"),
        ("user_brisket", "周末烤了全麦面包", "用长帝烤箱烤的，预热十分钟。"),
    ]),
}


def indexed(language: str, **options: float) -> tuple[Index, str]:
    query, memories = CASES[language]
    index = Index(**options)  # type: ignore[arg-type]
    index.add_many(make(*fields) for fields in [*memories, *FILLER[language]])
    return index, query


@pytest.mark.parametrize("language", ["en", "zh"])
def test_general_words_reach_a_memory_holding_only_its_best_hits_words(language: str) -> None:
    index, query = indexed(language)
    found = [hit.id for hit in index.search(query)]
    assert "user_brisket" in found
    # The two hits the feedback read keep their places.
    assert found[:2] == [hit.id for hit in indexed(language, feedback_weight=0.0)[0].search(
        query)][:2]
    # Scores stay in rank order.
    scores = [hit.score for hit in index.search(query)]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_bounded_search_and_a_search_without_feedback_read_none(language: str) -> None:
    index, query = indexed(language)
    assert "user_brisket" in [hit.id for hit in index.search(query)]
    # A hook's search (bounded postings) and the fused search's lexical side: the query's words.
    assert "user_brisket" not in [hit.id for hit in index.search(query, max_postings=10_000)]
    assert "user_brisket" not in [hit.id for hit in index.search(query, feedback=False)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_feedback_leaves_a_search_of_one_or_two_hits_as_it_was(language: str) -> None:
    index, query = indexed(language)
    plain, _ = indexed(language, feedback_weight=0.0)
    assert [hit.id for hit in index.search(query, limit=2)] == [
        hit.id for hit in plain.search(query, limit=2)]
