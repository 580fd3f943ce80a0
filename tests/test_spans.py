"""A question asking how long, how often, how old or when ranks first the memory writing
a span of time or a date (docs/retrieval.md, "the eleventh pass").

"How long has Nate had his turtles?" is answered by "Nate has had turtles for 3 years",
while memories holding "turtles" more often rank above it by its words alone. A person's
or an agent's search (`refine=True`) orders its top SPAN_DEPTH again (`QueryPath._spans`):
a memory writing a duration, a frequency or an age gains SPAN_WEIGHT of the top score, in
English and in Chinese; a date is no span, and a hook's search (bounded) never reads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_exact_forms import OTHERS as ENGLISH_OTHERS
from test_exact_forms import make

from sage_mem.search.index import Index
from sage_mem.search.scoring import SPAN_DEPTH
from sage_mem.search.spans import asks_span, asks_when, writes_span, writes_time

# Other notes (those of the words-as-written tests, and some in Chinese), so that the words
# of the memories compared have an idf worth the name.
OTHERS = [*ENGLISH_OTHERS, *(make(f"other_zh_{number}", text) for number, text in enumerate(
    ["午饭和设计组一起吃", "汽车需要换新轮胎", "春天规划花园"]))]

# A question, the memory holding its words more often (first by its words alone), the
# memory writing the span asked for: (id, description, body) each.
ASKED = [
    ("en long", "How long has Nate had his turtles?",
     ("turtles_pets", "Nate has turtles as pets, and the turtles cheer him up",
      "Session 4, 8:56 pm on 20 July, 2023. Nate: my turtles, my turtles!"),
     ("turtles_years", "Nate has had turtles for 3 years", "")),
    ("en often", "How often does John work out with his family?",
     ("workouts", "John and his family work out and cheer each other's work outs", ""),
     ("three_a_week", "John works out with his family three times a week", "")),
    ("zh", "小明养乌龟多久了？",
     ("wugui_pets", "小明养乌龟，养的乌龟让他开心", "小明：我的乌龟！养乌龟真好。"),
     ("wugui_years", "小明养乌龟已经三年了，那是他搬家以后开始的", "")),
    # A question asking when: the memory writing a date or a time answers it.
    ("en when", "When did Nate get his turtles?",
     ("turtles_pets", "Nate has turtles as pets, and the turtles cheer him up",
      "Nate: my turtles, my turtles!"),
     ("turtles_got", "Nate got his first turtles in 2019", "")),
    ("zh when", "小明什么时候开始养乌龟？",
     ("wugui_start", "小明开始养乌龟，养乌龟让他开心", "小明：我开始养乌龟了！"),
     ("wugui_since", "小明2019年开始养乌龟，那年他搬了家，搬家以后的事情很多", "")),
]
CASES = {name: (query, make(*wordy), make(*spanned)) for name, query, wordy, spanned in ASKED}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_question_asking_how_long_or_when_ranks_the_memory_writing_it_first(case: str) -> None:
    query, wordy, spanned = CASES[case]
    memories = [*OTHERS, wordy, spanned]
    index, off = Index(), Index(span_weight=0)
    index.add_many(memories)
    off.add_many(memories)
    assert [hit.id for hit in index.search(query)][:2] == [wordy.id, spanned.id]
    assert [hit.id for hit in off.search(query, refine=True)][:2] == [wordy.id, spanned.id]
    hits = index.search(query, refine=True)
    assert [hit.id for hit in hits][:2] == [spanned.id, wordy.id]
    assert hits[0].score >= hits[1].score
    # A hook's search is bounded and never reads it.
    bounded = index.search(query, refine=True, max_postings=10_000)
    assert [hit.id for hit in bounded][:2] == [wordy.id, spanned.id]


def test_a_question_not_asking_for_a_span_is_unchanged() -> None:
    query = "What pets does Nate have? turtles"
    _, wordy, spanned = CASES["en long"]
    memories = [*OTHERS, wordy, spanned]
    index, off = Index(), Index(span_weight=0)
    index.add_many(memories)
    off.add_many(memories)
    assert ([hit.id for hit in index.search(query, refine=True)]
            == [hit.id for hit in off.search(query, refine=True)])


def test_what_asks_for_a_span_and_what_writes_one() -> None:
    for asking in ("How long has Caroline had her friends?", "how often do they meet",
                   "For how long has Nate had his turtles?", "How old was Tim then?",
                   "他学钢琴多久了", "每周去几次健身房", "她今年几岁", "住了多长时间"):
        assert asks_span(asking), asking
    for other in ("How did Melanie feel?", "What did she buy?", "几天前买的什么",
                  "多少钱", "How many children does Melanie have?"):
        assert not asks_span(other), other
    for spanned in ("known her friends for 4 years", "three times a week", "30-60 seconds",
                    "since 2016", "since the age of 17", "a 10-year-old", "every weekend",
                    "a few months", "练了三年", "每周两次", "他17岁", "两个月"):
        assert writes_span(spanned), spanned
    for dated in ("Session 10, 8:56 pm on 20 July, 2023.", "on 2023-05-08", "2023年5月8日",
                  "in May 2023", "the best day", "今年春天"):
        assert not writes_span(dated), dated


def test_what_asks_when_and_what_writes_a_time() -> None:
    for asking in ("When did Gina lose her job?", "when is the party", "In what year was it?",
                   "Which month did they move?", "and when did you go there",
                   "小明什么时候去的", "哪一年毕业的", "何时开始", "你们几号放假"):
        assert asks_when(asking), asking
    for other in ("What did she buy?", "How long has he lived there?", "Where was Tim?",
                  "What did he do when he was young?", "他去了哪里", "哪个朝代的皇帝"):
        assert not asks_when(other), other
    for dated in ("Session 10, 8:56 pm on 20 July, 2023.", "in 2016", "last Friday",
                  "3 days ago", "on 2023-05-08", "1998年", "4月", "上世纪八十年代", "去年",
                  "我今年读大二"):
        assert writes_time(dated), dated
    for undated in ("Nate has turtles as pets", "she may come", "小明养乌龟", "一百个人"):
        assert not writes_time(undated), undated


def test_only_the_order_inside_the_top_few_changes() -> None:
    """A memory below the top SPAN_DEPTH writing a span stays below it."""
    query = "How long has Nate had his turtles?"
    strong = [make(f"turtle_{number}", f"Nate's turtles and turtle tank, turtles {number}",
                   "Nate: turtles! " * (number + 2))
              for number in range(SPAN_DEPTH - 1)]
    late = make("late_years", "A tank for 3 years", "turtles")
    _, _, spanned = CASES["en long"]
    memories = [*OTHERS, *strong, spanned, late]
    index, off = Index(), Index(span_weight=0)
    index.add_many(memories)
    off.add_many(memories)
    shown = [hit.id for hit in index.search(query, refine=True, limit=20)]
    before = [hit.id for hit in off.search(query, refine=True, limit=20)]
    assert shown != before
    assert set(shown[:SPAN_DEPTH]) == set(before[:SPAN_DEPTH])
    assert shown[SPAN_DEPTH:] == before[SPAN_DEPTH:]


def test_a_fused_search_orders_its_top_by_spans_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the extra, a person's or an agent's search (`refine`) orders the fused top few
    by the spans they write as a lexical one does; a hook's fused search does not."""
    pytest.importorskip("numpy")
    from support import write_memory
    from test_semantic import WordsEmbedder

    from sage_mem import MemoryStore

    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)
    query, _, spanned = CASES["en long"]
    # Nearer the query on the semantic side too (the test embedder hashes its words).
    wordy = make("turtles_walks", "How Nate had his turtles on long walks; the turtles are pets")
    folder = tmp_path / "memory"
    folder.mkdir()
    for memory in [*OTHERS, wordy, spanned]:
        write_memory(folder, memory.id, f"---\ndescription: {memory.description}\n"
                                        f"category: user\n---\n{memory.body}\n")
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    assert [hit.id for hit in store.search(query)][:2] == [wordy.id, spanned.id]
    assert [hit.id for hit in store.search(query, refine=True)][:2] == [spanned.id, wordy.id]
    store.index.span_weight = 0
    assert [hit.id for hit in store.search(query, refine=True)][:2] == [wordy.id, spanned.id]


def test_a_long_text_is_read_only_so_far() -> None:
    """A span past MAX_SPAN_CHARS is not looked for (the cost of a pasted page is bounded)."""
    from sage_mem.search.spans import MAX_SPAN_CHARS

    filler = "the old days and every one of them " * (MAX_SPAN_CHARS // 30)
    assert writes_span(filler[: MAX_SPAN_CHARS - 20] + " for 3 years")
    assert not writes_span(filler + " for 3 years")
