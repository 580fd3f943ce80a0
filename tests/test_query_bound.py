"""Bounded work per query (issue 13, item 3): a long prompt is scored on its most telling terms.

A pasted page holds hundreds of terms; scoring walks the postings of at most
MAX_QUERY_TERMS terms and MAX_QUERY_PAIRS pairs, those of highest idf, so the
rare words that say what the prompt is about are kept and the common ones go.
"""

from __future__ import annotations

import random

import pytest

from sage_mem.memory.value import memory_from_meta
from sage_mem.search import query as query_module
from sage_mem.search.index import Index
from sage_mem.search.query import MAX_QUERY_PAIRS, MAX_QUERY_TERMS
from sage_mem.search.scoring import word_pairs
from sage_mem.search.tokens import tokenize

COMMON = ("the service request user system data time change team report update code "
          "review build test page value file line error issue").split()
CHINESE = "我们的系统今天需要更新数据报告团队代码审查页面测试问题"


def memory(memory_id: str, description: str, body: str):  # type: ignore[no-untyped-def]
    from pathlib import Path

    return memory_from_meta(memory_id, Path(f"/m/{memory_id}.md"),
                            {"description": description}, body, sha256="0" * 64)


@pytest.fixture
def index() -> Index:
    rng = random.Random(5)
    built = Index()
    memories = [
        memory(f"note_{n}", " ".join(rng.sample(COMMON, 4)),
               " ".join(rng.sample(COMMON, 12)) + " " + CHINESE[rng.randrange(20):][:6])
        for n in range(300)
    ]
    memories.append(memory("kettle", "descaling the kettle with citric acid",
                           "the kettle in the office: citric acid, monthly 水壶除垢"))
    built.add_many(memories)
    return built


def pasted(rng: random.Random, chars: int, needle: str) -> str:
    words: list[str] = []
    while sum(map(len, words)) < chars:
        words.append(rng.choice(COMMON) if rng.random() < 0.9 else rng.choice(CHINESE))
    middle = len(words) // 2
    return " ".join(words[:middle] + [needle] + words[middle:])[:chars + len(needle)]


def scored_terms(index: Index, monkeypatch: pytest.MonkeyPatch, query: str) -> list[int]:
    seen: list[int] = []
    original = index._accumulate

    def counting(weighted, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(len(weighted))
        return original(weighted, *args, **kwargs)

    monkeypatch.setattr(index, "_accumulate", counting)
    index.search(query)
    return seen


def test_a_long_prompt_is_scored_on_a_bounded_number_of_terms(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1)
    prompt = pasted(rng, 4000, "how do I descale the kettle with citric acid? 水壶除垢")
    sequence = tokenize(prompt)
    every = index._query_weights(list(dict.fromkeys(sequence)),
                                 list(dict.fromkeys(word_pairs(sequence))))
    assert len(every) > 3 * (MAX_QUERY_TERMS + MAX_QUERY_PAIRS)  # what an unbounded query walks
    [scored] = scored_terms(index, monkeypatch, prompt)
    assert 0 < scored <= MAX_QUERY_TERMS + MAX_QUERY_PAIRS
    assert index.search(prompt, limit=1)[0].id == "kettle"  # its rare words are the ones kept


@pytest.mark.parametrize("query", [
    "descale the kettle", "水壶除垢", "the service request code review",
    "citric acid 水壶 kettle office monthly",
])
def test_a_short_query_is_scored_exactly_as_before(
    index: Index, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    bounded = [(hit.id, hit.score) for hit in index.search(query)]
    monkeypatch.setattr(query_module, "MAX_QUERY_TERMS", 10_000)
    monkeypatch.setattr(query_module, "MAX_QUERY_PAIRS", 10_000)
    assert [(hit.id, hit.score) for hit in index.search(query)] == bounded


def test_the_cap_keeps_the_rarest_terms(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query_module, "MAX_QUERY_TERMS", 2)
    monkeypatch.setattr(query_module, "MAX_QUERY_PAIRS", 0)
    seen: list[list[float]] = []
    original = index._accumulate

    def recording(weighted, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(sorted(entry.idf for entry in weighted))
        return original(weighted, *args, **kwargs)

    monkeypatch.setattr(index, "_accumulate", recording)
    query = "the code review of the citric kettle"
    hits = index.search(query)
    assert hits[0].id == "kettle"
    everything = sorted(entry.idf for entry in index._query_weights(
        list(dict.fromkeys(tokenize(query))), []))
    assert seen == [everything[-2:]]


def chinese_page(rng: random.Random, chars: int) -> str:
    """Running Chinese text (no spaces): a skip bigram for nearly every three characters."""
    pool = CHINESE + "猫狗鱼鸟花草树山水火风雨雪云星月日天地人心手口目耳书画茶酒饭面米油盐糖"
    return "".join(rng.choice(pool) for _ in range(chars))


def test_a_long_chinese_prompt_is_scored_on_a_bounded_number_of_loose_terms(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.search.query import MAX_QUERY_LOOSE
    from sage_mem.search.tokens import loose_terms

    prompt = chinese_page(random.Random(2), 3000) + " 水壶除垢 kettle citric acid"
    assert len(loose_terms(prompt)) > 10 * MAX_QUERY_LOOSE  # what an unbounded query adds
    [scored] = scored_terms(index, monkeypatch, prompt)
    assert 0 < scored <= MAX_QUERY_TERMS + MAX_QUERY_PAIRS + MAX_QUERY_LOOSE
    assert index.search(prompt, limit=1)[0].id == "kettle"


def reference_loose(text: str) -> list[tuple[str, float]]:
    """The Chinese part of `loose_terms` written as one loop per segment, in text order
    (the characters standing alone after the rest)."""
    from sage_mem.search import tokens

    out: dict[str, float] = {}
    for run in tokens._CJK_RUN.findall(tokens.fold(text)):
        for segment in tokens._CHINESE_STOP.split(run):
            for i in range(len(segment) - 1):
                if segment[i] == segment[i + 1] and tokens._UNIGRAMS[segment[i]]:
                    out[tokens._UNIGRAMS[segment[i]]] = tokens.REDUPLICATED_WEIGHT
            for i in range(len(segment) - 2):
                first, last = segment[i], segment[i + 2]
                if first != last and tokens._UNIGRAMS[first] and tokens._UNIGRAMS[last]:
                    out.setdefault(first + last, tokens.SKIP_WEIGHT)
    for run in tokens._CJK_RUN.findall(tokens.fold(text)):
        for segment in tokens._CHINESE_STOP.split(run):
            unigram = tokens._UNIGRAMS[segment] if len(segment) == 1 else ""
            if unigram and out.get(unigram, 0.0) < tokens.LONE_WEIGHT:
                out[unigram] = tokens.LONE_WEIGHT
    held = set(tokenize(text))
    return [(term, weight) for term, weight in out.items()
            if term.startswith("~") or term not in held]


@pytest.mark.parametrize("seed", range(6))
def test_loose_chinese_terms_come_once_each_in_text_order(seed: int) -> None:
    """Skip bigrams, doubled characters and characters standing alone, made in C over the
    whole text, in the loop's order."""
    from sage_mem.search.tokens import loose_terms

    rng = random.Random(seed)
    pieces = [chinese_page(rng, rng.randint(1, 12)) for _ in range(60)]
    for n in range(0, len(pieces), 7):
        pieces[n] += pieces[n][-1:] * 2 + "的吗了"  # doubled characters, function characters
    text = rng.choice(("", "，")).join(pieces)
    assert loose_terms(text) == reference_loose(text)
    assert loose_terms(text, tokenize(text)) == loose_terms(text)
