"""Search by when: a query's time words rank the memories dated then higher (issue 33).

"What did I buy 10 days ago?" is answered by the memory dated ten days
before the query's date, by its `updated` day or by a date its text writes
(the dream writes "(2026-11-24)" beside "yesterday"), in English and Chinese;
the relative words themselves ("ago", "last", 上周) weigh little once they
became a window, and a window no memory is dated in changes nothing.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sage_mem import MemoryStore
from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search import ranking, timewords
from sage_mem.search.index import Index
from sage_mem.search.timewords import read_time

NOW = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)  # a Friday


def make(memory_id: str, description: str, body: str = "", **meta: object) -> Memory:
    return memory_from_meta(memory_id, Path(memory_id + ".md"),
                            {"description": description, **meta}, body)


def index_of(*memories: Memory, **options: float) -> Index:
    index = Index(**options)
    index.add_many(memories)
    return index


def ids(index: Index, query: str, now: datetime | None = NOW) -> list[str]:
    return [hit.id for hit in index.search(query, now=now)]


@pytest.mark.parametrize(
    ("query", "bought", "old"),
    [
        pytest.param("What kitchen appliance did I buy 10 days ago?",
                     "Bought a smoker for the kitchen", "Bought a kettle for the kitchen",
                     id="en-days-ago"),
        pytest.param("我十天前买了什么厨房电器", "买了一台烤箱放在厨房", "买了一个水壶放在厨房",
                     id="zh-十天前"),
    ],
)
def test_the_memory_dated_in_the_window_ranks_first(query: str, bought: str, old: str) -> None:
    # Otherwise equal, and the older one first by id: only the date can tell them apart.
    index = index_of(
        make("user_a_old", old, updated="2026-06-02T10:00:00Z"),
        make("user_b_new", bought, updated="2026-11-24T10:00:00Z"),
    )
    assert ids(index, query)[:1] == ["user_b_new"]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        pytest.param("what did we decide last week", "project_retro", id="en-last-week"),
        pytest.param("上周我们决定了什么", "project_retro_zh", id="zh-上周"),
        pytest.param("what did we decide last month", "project_retro", id="en-last-month"),
        pytest.param("上个月决定了什么", "project_retro_zh", id="zh-上个月"),
    ],
)
def test_a_date_written_in_the_text_dates_the_memory(query: str, wanted: str) -> None:
    index = index_of(
        # Dated by what the dream wrote beside "yesterday", though edited since.
        make("project_retro", "We decided to drop the beta flag",
             "Yesterday (2026-11-24) we decided to drop the beta flag.",
             updated="2026-12-03T10:00:00Z"),
        make("project_retro_zh", "决定取消测试版开关", "昨天（2026年11月24日）决定取消测试版开关。",
             updated="2026-12-03T10:00:00Z"),
        make("project_old", "We decided to keep the beta flag for now, decided again",
             "Decided on (2026-02-10).", updated="2026-12-03T10:00:00Z"),
        make("project_old_zh", "决定保留测试版开关，再次决定", "（2026年2月10日）决定的。",
             updated="2026-12-03T10:00:00Z"),
    )
    assert ids(index, query)[:1] == [wanted]


def test_the_relative_words_no_longer_outvote_the_date() -> None:
    """"last week" written in an old memory matched the words; the window wins now."""
    memories = [
        make("user_old_trip", "Last week's trip notes: nothing planned",
             updated="2026-03-02T10:00:00Z"),
        make("user_trip", "Booked the trip to Lisbon", updated="2026-11-25T10:00:00Z"),
    ]
    query = "which trip did I book last week"
    assert ids(index_of(*memories), query)[:1] == ["user_trip"]
    assert ids(index_of(*memories, date_boost=0.0), query)[:1] == ["user_old_trip"]


def test_a_window_no_memory_is_dated_in_changes_nothing() -> None:
    memories = [
        make("user_a", "She moved to Berlin 3 years ago", updated="2026-11-30T10:00:00Z"),
        make("user_b", "三年前搬到柏林"),
        make("user_c", "Moved house again last spring", updated="2026-10-01T10:00:00Z"),
    ]
    plain = index_of(*memories, date_boost=0.0)
    timed = index_of(*memories)
    for query in ("she moved 3 years ago", "who moved yesterday", "上周搬家了吗"):
        assert [(h.id, h.score) for h in timed.search(query, now=datetime(2010, 1, 5))] == [
            (h.id, h.score) for h in plain.search(query, now=datetime(2010, 1, 5))]


def test_a_query_of_time_words_only_keeps_them_as_terms() -> None:
    index = index_of(make("user_note", "yesterday's standup notes",
                          updated="2026-12-03T10:00:00Z"))
    assert ids(index, "yesterday?") == ["user_note"]


def test_without_now_the_window_is_read_from_the_current_time() -> None:
    today = datetime.now(UTC)
    index = index_of(
        make("user_a_old", "Bought new running shoes", updated="2020-01-02T10:00:00Z"),
        make("user_b_now", "Bought new running shoes",
             updated=today.strftime("%Y-%m-%dT%H:%M:%SZ")),
    )
    assert ids(index, "what shoes did I buy today", now=None)[:1] == ["user_b_now"]


def test_store_search_passes_the_query_date(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "user_a.md").write_text(
        "---\ndescription: Bought a smoker\nupdated: 2023-05-06T10:00:00Z\n---\n", encoding="utf-8")
    (folder / "user_b.md").write_text(
        "---\ndescription: Bought a kettle\nupdated: 2023-09-06T10:00:00Z\n---\n", encoding="utf-8")
    store = MemoryStore(folder, state_dir=tmp_path / "state", watch=False)
    spring = [hit.id for hit in store.search("what did I buy 3 days ago",
                                             now=datetime(2023, 5, 9, tzinfo=UTC))]
    autumn = [hit.id for hit in store.search("what did I buy 3 days ago",
                                             now=datetime(2023, 9, 9, tzinfo=UTC))]
    assert spring[:1] == ["user_a"]
    assert autumn[:1] == ["user_b"]


# The boost is a factor of each memory, so the pruning's bound of every factor must
# grow with it: the pruned search still returns exactly the exhaustive top k.

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "dor")


def dated_corpus(seed: int, size: int) -> tuple[list[Memory], list[str]]:
    rng = random.Random(seed)
    vocabulary = list(dict.fromkeys(
        "".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))) for _ in range(300)))
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    memories = []
    for number in range(size):
        body = " ".join(rng.choices(vocabulary, weights=weights, k=rng.randint(5, 40)))
        if rng.random() < 0.3:
            body += f" (2026-{rng.randint(9, 11):02}-{rng.randint(1, 28):02})"
        memories.append(make(
            f"note_{number:04}", " ".join(rng.choices(vocabulary, weights=weights, k=4)), body,
            trust=rng.choice((0.0, 0.5, 1.0)),
            updated=f"2026-{rng.randint(8, 11):02}-{rng.randint(1, 28):02}T10:00:00Z"))
    phrases = ("last week", "last month", "10 days ago", "上周", "上个月", "in October")
    queries = [" ".join(rng.choices(vocabulary, weights=weights, k=rng.choice((2, 3, 6))))
               + " " + rng.choice(phrases) for _ in range(40)]
    return memories, queries


def exhaustive(index: Index, query: str, limit: int) -> list[tuple[str, float]]:
    """The dated search, scoring every posting of every term (no pruning)."""
    time = read_time(query, NOW)
    factor = index._factor(NOW, False)
    dated = index._dated(factor, time)
    chosen = index._query_terms(query)
    if dated is not None:
        factor = dated[0]
        chosen = index._query_terms(time.text, time) or chosen
    assert chosen is not None
    weighted = index._query_weights(*index._most_telling(*chosen))
    scores: dict[int, float] = {}
    for item in sorted(weighted, key=lambda entry: entry.ceiling, reverse=True):
        for numbers, values in item.parts:
            for number, value in zip(numbers, values, strict=True):
                scores[number] = scores[number] + item.weight * value if number in scores \
                    else item.weight * value
    final = {key: value * factor(key) for key, value in scores.items()}
    best = ranking.top(final, limit, index._ids)
    return [(index._ids[key], round(value, 4)) for key, value in best]  # type: ignore[misc]


def mismatches(index: Index, queries: list[str]) -> int:
    return sum(
        [(hit.id, hit.score) for hit in index.search(query, limit=limit, now=NOW)]
        != exhaustive(index, query, limit)
        for query in queries for limit in (1, 5)
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_the_pruned_dated_search_equals_scoring_every_posting(seed: int) -> None:
    memories, queries = dated_corpus(seed, 400)
    assert mismatches(index_of(*memories), queries) == 0


def test_a_bound_that_leaves_out_the_boost_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    memories, queries = dated_corpus(1, 400)
    index = index_of(*memories)
    dated = index._dated

    def unbounded(factor, time):  # type: ignore[no-untyped-def]
        found = dated(factor, time)
        return None if found is None else (found[0], index._max_boost)

    monkeypatch.setattr(index, "_dated", unbounded)
    assert mismatches(index, queries) > 0


def write(folder: Path, name: str, description: str, updated: str) -> None:
    (folder / f"{name}.md").write_text(
        f"---\ndescription: {description}\nupdated: {updated}\n---\n", encoding="utf-8")


@pytest.fixture
def dated_store(tmp_path: Path) -> MemoryStore:
    folder = tmp_path / "memory"
    folder.mkdir()
    write(folder, "project_a_spring", "We decided to move the release to Friday",
          "2023-04-03T10:00:00Z")
    write(folder, "project_b_autumn", "We decided to move the release to Friday",
          "2023-10-02T10:00:00Z")
    return MemoryStore(folder, state_dir=tmp_path / "state", watch=False)


def test_the_prompt_hook_reads_time_words_from_the_prompts_date(dated_store: MemoryStore) -> None:
    from sage_mem.agents.context import SessionLog, prompt_context

    def injected(now: datetime) -> list[str]:
        _, chosen = prompt_context(dated_store, "what did we decide last week about the release",
                                   project="", session=SessionLog(None), limit=1, now=now)
        return [memory.id for memory in chosen]

    assert injected(datetime(2023, 4, 12, 9, tzinfo=UTC)) == ["project_a_spring"]
    assert injected(datetime(2023, 10, 11, 9, tzinfo=UTC)) == ["project_b_autumn"]


@pytest.mark.parametrize(("now", "wanted"), [("2023-04-12", "project_a_spring"),
                                             ("2023-10-11T09:00:00Z", "project_b_autumn")])
def test_memory_search_takes_the_questions_date(
    dated_store: MemoryStore, now: str, wanted: str
) -> None:
    from sage_mem.mcp_server import memory_tools

    found = memory_tools.search(dated_store, "what did we decide last week", now=now)
    assert [hit["id"] for hit in found["hits"]][:1] == [wanted]


def test_memory_search_refuses_a_now_that_is_no_date(dated_store: MemoryStore) -> None:
    from sage_mem.errors import InvalidMemory
    from sage_mem.mcp_server import memory_tools

    with pytest.raises(InvalidMemory, match="not an ISO date"):
        memory_tools.search(dated_store, "release", now="last Tuesday")


@pytest.mark.parametrize(("now", "wanted"), [("2023-04-12", "project_a_spring"),
                                             ("2023-10-11", "project_b_autumn")])
def test_the_cli_search_takes_now(dated_store: MemoryStore, now: str, wanted: str) -> None:
    from click.testing import CliRunner

    from sage_mem.commands import cli

    result = CliRunner().invoke(cli, ["--dir", str(dated_store.folder.root), "search",
                                      "what did we decide last week", "--now", now, "--json"])
    assert result.exit_code == 0, result.output
    assert result.output.index(wanted) < result.output.index(
        ({"project_a_spring", "project_b_autumn"} - {wanted}).pop())


def test_the_cli_refuses_a_now_that_is_no_date(dated_store: MemoryStore) -> None:
    from click.testing import CliRunner

    from sage_mem.commands import cli

    result = CliRunner().invoke(cli, ["--dir", str(dated_store.folder.root), "search",
                                      "release", "--now", "yesterday"])
    assert result.exit_code != 0
    assert "not an ISO date" in result.output
    assert "Traceback" not in result.output


def test_the_semantic_side_is_dated_as_the_lexical_side_is() -> None:
    """The factors a search applies (`Index.factors` with the query) hold its date windows';
    `Index.date_factors` (what a fused search multiplies the fused score by) is that part."""
    index = index_of(
        make("user_a_old", "Bought a kettle", updated="2026-06-02T10:00:00Z"),
        make("user_b_new", "Bought a smoker", updated="2026-11-24T10:00:00Z"),
    )
    plain = index.factors(["user_a_old", "user_b_new"])
    dated = index.factors(["user_a_old", "user_b_new"], query="what did I buy 10 days ago",
                          now=NOW)
    assert dated["user_a_old"] == plain["user_a_old"]
    assert dated["user_b_new"] == pytest.approx(plain["user_b_new"] * (1 + index.date_boost))
    assert index.date_factors(["user_a_old", "user_b_new"], "what did I buy 10 days ago",
                              NOW) == pytest.approx({"user_a_old": 1.0,
                                                     "user_b_new": 1 + index.date_boost})
    assert index.date_factors(["user_a_old", "user_b_new"], "what did I buy", NOW) == {}


def test_a_large_folder_is_not_read_stamp_by_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_STAMPS_READ memories a window is taken as live, unread: the words weigh less."""
    memories = [make("user_a", "She moved to Berlin 3 years ago"),
                make("user_b", "Moved house again last spring")]
    query, then = "she moved 3 years ago", datetime(2010, 1, 5)
    plain = [(h.id, h.score) for h in index_of(*memories, date_boost=0.0).search(query, now=then)]
    assert [(h.id, h.score) for h in index_of(*memories).search(query, now=then)] == plain
    monkeypatch.setattr(timewords, "MAX_STAMPS_READ", 1)
    assert [(h.id, h.score) for h in index_of(*memories).search(query, now=then)] != plain


def test_a_fused_search_applies_the_date_once_to_the_fused_score() -> None:
    """The date windows' factor acts on the fused ranking, not on each side before scaling:
    the lexical scores (which hold it) are read without it, and the fused score is multiplied
    by it, so the semantic and latent sides of a dated memory gain as its lexical side did."""
    from sage_mem.search import fusion

    plain = [("a", 10.0), ("b", 8.0), ("c", 2.0)]
    dates = {"b": 1.75, "c": 1.375}  # b in the window, c near it, a elsewhere
    dated = [(key, score * dates.get(key, 1.0)) for key, score in plain]  # as a search gives
    cosines = {"a": 0.9, "b": 0.5, "c": 0.1}
    latent = {"a": 1.0, "b": 0.0, "c": 0.5}
    undated = dict(fusion.fuse(plain, cosines, ["a", "b", "c"], weight=0.4, complete=True,
                               spread=1, latent=latent))
    fused = fusion.fuse(dated, cosines, ["a", "b", "c"], weight=0.4, complete=True, spread=1,
                        latent=latent, dates=dates)
    assert dict(fused) == pytest.approx({key: value * dates.get(key, 1.0)
                                         for key, value in undated.items()})
    # a: 0.9 * 1 + 0.1 * 1 = 1.0; b: 0.9 * (0.4 * 0.8 + 0.6 * 0.5) = 0.558 -> x 1.75 = 0.9765
    assert [key for key, _ in fused] == ["a", "b", "c"]
    assert dict(fused)["b"] == pytest.approx(0.9765 * 10.0)


@pytest.mark.parametrize(
    ("query", "bought", "meant"),
    [
        pytest.param("What gift did I buy ten days ago?", "Bought flowers at the market",
                     "A pendant, a silver necklace", id="en"),
        pytest.param("我十天前买了什么礼物", "在市场买了一束花", "一条银项链", id="zh"),
    ],
)
def test_with_the_extra_the_memory_dated_in_the_window_keeps_its_lexical_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, bought: str, meant: str
) -> None:
    """With the extra, the memory dated in the window that matches the query's words ranks
    above an undated one found by meaning alone, as lexical search ranks it. (Before, the
    date raised it on its lexical side only, before scaling; at the bottom of the semantic
    side, its date gave it nothing there, and the memory found by meaning came first.)"""
    from support import write_memory
    from test_semantic import WordsEmbedder

    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)
    folder = tmp_path / "memory"
    folder.mkdir()
    for name, text, day in (("a_old", bought, "2026-06-02"), ("b_new", bought, "2026-11-24"),
                            ("c_meant", meant, "2026-06-02")):
        write_memory(folder, name, f"---\ndescription: {text}\ncategory: user\n"
                                   f"updated: {day}T10:00:00Z\n---\n")
    store = MemoryStore(folder, watch=False)
    assert [hit.id for hit in store.search(query, now=NOW)][:1] == ["b_new"]  # lexical
    store.embed(embedder=WordsEmbedder())
    assert [hit.id for hit in store.search(query, limit=2, now=NOW)][:1] == ["b_new"]


# Asked as of a day at the calendar's edge, a time phrase may name days no date holds
# (before year 1, after 9999): the phrase is then words, never an overflow.
AT_THE_CALENDARS_EDGE = [
    pytest.param("0001-01-02", "what did we decide 10 days ago", id="year-1-days-ago"),
    pytest.param("0001-01-02", "what did we decide yesterday", id="year-1-yesterday"),
    pytest.param("0001-01-02T12:00:00+08:00", "我们上个月决定了什么", id="year-1-上个月"),
    pytest.param("0001-01-02", "what did we decide last month", id="year-1-last-month"),
    pytest.param("9999-12-30", "what did we decide last week", id="year-9999-last-week"),
    pytest.param("9999-12-30", "what did we decide 10 days ago", id="year-9999-days-ago"),
    pytest.param("9999-12-30", "我们上周决定了什么", id="year-9999-上周"),
]


@pytest.mark.parametrize(("now", "query"), AT_THE_CALENDARS_EDGE)
def test_the_cli_answers_a_question_asked_at_the_calendars_edge(
    dated_store: MemoryStore, now: str, query: str
) -> None:
    from click.testing import CliRunner

    from sage_mem.commands import cli

    result = CliRunner().invoke(cli, ["--dir", str(dated_store.folder.root), "search",
                                      query, "--now", now, "--json"])
    assert result.exit_code == 0, result.output
    assert result.exception is None


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(("now", "query"), AT_THE_CALENDARS_EDGE)
async def test_memory_search_answers_a_question_asked_at_the_calendars_edge(
    dated_store: MemoryStore, now: str, query: str, anyio_backend: str
) -> None:
    from reliability_support import mcp_call, mcp_client

    async with mcp_client(dated_store) as client:
        good, found = await mcp_call(client, "memory_search", query=query, now=now)
    assert good, found
