"""General words reach specific memories through pseudo-relevance feedback (issue 33, item 2).

A person's or an agent's search (`sage-mem search`, `memory_search`: `refine=True`) asks,
besides its own words, for the most telling words of its two best hits
(`QueryPath._feedback`): "kitchen appliance" lifts the brisket smoked on the Traeger the
appliance memories name above the memories that only name the kitchen. The two hits read
keep their places, only memories holding a query word are listed, and a hook's bounded
search (`max_postings`) reads no feedback.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sage_mem import MemoryStore
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
# Two memories the query's words find, one that holds a query word only in passing (below
# the memories naming the kitchen alone) but shares their specific words, and those others.
CASES = {
    "en": ("kitchen appliance", [
        ("user_smoker", "New kitchen appliance: a Traeger pellet smoker",
         "Bought the Traeger pellet smoker for the kitchen."),
        ("user_manual", "Manual of the kitchen appliance",
         "Traeger pellet smoker manual: keep the hopper dry."),
        ("user_brisket", "Smoked a brisket for twelve hours",
         "On the Traeger behind the kitchen, hickory pellets in the smoker, then sliced it "
         "thin for the whole family at dinner on Sunday evening."),
        ("user_tap", "Kitchen tap drips again", ""),
        ("user_lights", "Kitchen lights need new bulbs", ""),
        ("user_floor", "Cleaned the kitchen floor", ""),
    ]),
    "zh": ("厨房电器", [
        ("user_smoker", "新买的厨房电器：长帝烤箱", "买了一台长帝烤箱，放在厨房。"),
        ("user_manual", "厨房电器的说明书", "长帝烤箱说明书：先预热十分钟。"),
        ("user_brisket", "周末烤了全麦面包",
         "在厨房用长帝烤箱烤的，先预热十分钟，切成薄片，全家周日晚饭一起吃完了。"),
        ("user_tap", "厨房水龙头又漏水", ""),
        ("user_lights", "厨房灯泡要换新的", ""),
        ("user_floor", "打扫了厨房地板", ""),
    ]),
}


# Shares the appliance memories' specific words, none of the query's.
RIBS = {"en": ("Ribs on the Traeger", "Hickory pellets in the smoker."),
        "zh": ("周六烤了排骨", "长帝烤箱先预热十分钟。")}


def indexed(language: str, **options: float) -> tuple[Index, str]:
    query, memories = CASES[language]
    index = Index(**options)  # type: ignore[arg-type]
    index.add_many(make(*fields) for fields in [*memories, *FILLER[language]])
    return index, query


def ranked(index: Index, query: str, **options: object) -> list[str]:
    return [hit.id for hit in index.search(query, **options)]  # type: ignore[arg-type]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_general_words_lift_a_memory_holding_its_best_hits_specific_words(language: str) -> None:
    index, query = indexed(language)
    once = ranked(index, query)
    assert once.index("user_brisket") > 2  # below the memories naming the kitchen alone
    refined = ranked(index, query, refine=True)
    assert refined[2] == "user_brisket"
    assert refined[:2] == once[:2]  # the two hits the feedback read keep their places
    scores = [hit.score for hit in index.search(query, refine=True)]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_memory_holding_only_feedback_words_is_listed(
        language: str) -> None:
    index, query = indexed(language)
    index.add_many([make("user_ribs", *RIBS[language])])
    refined = ranked(index, query, limit=50, refine=True)
    holders = ranked(index, query, limit=50)
    assert "user_ribs" not in holders
    assert refined[:2] == holders[:2]
    assert "user_ribs" in refined[2:]


@pytest.mark.parametrize(("language", "word"), [("en", "Traeger"), ("zh", "长帝")])
def test_a_query_whose_words_find_one_memory_reads_no_feedback(
        language: str, word: str) -> None:
    index, _ = indexed(language)
    index.add_many([make("user_gift", f"{word} 🎁", "")])
    unique = "🎁"
    assert ranked(index, unique, refine=True) == ["user_gift"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_bounded_search_reads_no_feedback(language: str) -> None:
    index, query = indexed(language)
    # A hook's search (bounded postings): the query's words alone.
    assert ranked(index, query, refine=True, max_postings=10_000) == ranked(index, query)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_store_search_asked_to_refine_does_and_a_hooks_does_not(
        language: str, tmp_path: Path) -> None:
    query, memories = CASES[language]
    folder = tmp_path / "memory"
    folder.mkdir()
    for memory_id, description, body in [*memories, *FILLER[language]]:
        (folder / f"{memory_id}.md").write_text(
            f"---\ndescription: {json.dumps(description)}\n---\n{body}\n", encoding="utf-8")
    store = MemoryStore(folder, state_dir=tmp_path / "state", watch=False)
    assert [hit.id for hit in store.search(query, refine=True)][2] == "user_brisket"
    assert [hit.id for hit in store.search(query)].index("user_brisket") > 2
    hook = store.search(query, refine=True, max_postings=10_000)
    assert [hit.id for hit in hook].index("user_brisket") > 2


def write_case(folder: Path, language: str) -> None:
    folder.mkdir(exist_ok=True)
    _, memories = CASES[language]
    for memory_id, description, body in [*memories, *FILLER[language]]:
        (folder / f"{memory_id}.md").write_text(
            f"---\ndescription: {json.dumps(description)}\n---\n{body}\n", encoding="utf-8")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_sage_mem_search_and_memory_search_refine(language: str, empty_dir: Path) -> None:
    from sage_mem.cli import main
    from sage_mem.mcp_server import memory_tools

    write_case(empty_dir, language)
    query = CASES[language][0]
    out, err = io.StringIO(), io.StringIO()
    assert main(["search", query, "--json"], out=out, err=err) == 0
    assert [hit["id"] for hit in json.loads(out.getvalue())["results"]][2] == "user_brisket"
    with MemoryStore(empty_dir, watch=False) as store:
        found = memory_tools.search(store, query, limit=5)
    assert [hit["id"] for hit in found["hits"]][2] == "user_brisket"
