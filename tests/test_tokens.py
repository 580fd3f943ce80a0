"""Tokens: Porter2 stemming, stop words and question frames, CJK bigrams, NFKC folding."""

from __future__ import annotations

import pytest

from sage_mem.search.tokens import bigrams, fold, is_unigram, is_word, stem, tokenize, words

# Expected stems are the Snowball English stemmer's own output.
STEMS = [
    ("running", "run"),
    ("runs", "run"),
    ("racing", "race"),
    ("races", "race"),
    ("raced", "race"),
    ("hopping", "hop"),
    ("hoping", "hope"),
    ("agreed", "agre"),
    ("caresses", "caress"),
    ("ponies", "poni"),
    ("ties", "tie"),
    ("cries", "cri"),
    ("gaps", "gap"),
    ("gas", "gas"),
    ("activities", "activ"),
    ("active", "activ"),
    ("generously", "generous"),
    ("generate", "generat"),
    ("relational", "relat"),
    ("conditional", "condit"),
    ("hopefulness", "hope"),
    ("adjustment", "adjust"),
    ("happiness", "happi"),
    ("happy", "happi"),
    ("adoption", "adopt"),
    ("adopted", "adopt"),
    ("international", "internat"),
    ("university", "universiti"),
    ("communication", "communic"),
    ("knightly", "knight"),
    ("consolingly", "consol"),
    ("adding", "add"),
    ("fizzed", "fizz"),
    ("controlling", "control"),
    ("rolling", "roll"),
    ("dying", "die"),
    ("skies", "sky"),
    ("news", "news"),
    ("only", "onli"),
    ("evening", "evening"),
    ("inning", "inning"),
    ("proceed", "proceed"),
    ("succeeding", "succeed"),
    ("by", "by"),
    ("say", "say"),
    ("yelling", "yell"),
]


@pytest.mark.parametrize(("word", "expected"), [pytest.param(w, e, id=w) for w, e in STEMS])
def test_stem_matches_snowball_english(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(
    "word",
    [
        pytest.param("2023", id="digits"),
        pytest.param("b2b", id="letters-and-digits"),
        pytest.param("café", id="non-ascii"),
        pytest.param("go", id="two-letters"),
    ],
)
def test_stem_leaves_words_it_cannot_stem_alone(word: str) -> None:
    assert stem(word) == word


def test_inflections_of_a_word_share_one_term() -> None:
    assert tokenize("deploying deployed deploys deployment") == ["deploy"] * 4


def test_possessive_keeps_the_name_and_drops_the_s() -> None:
    assert tokenize("Caroline's cat") == tokenize("Caroline cat") == ["carolin", "cat"]


def test_english_stop_words_are_dropped() -> None:
    assert tokenize("What is the name of the cat?") == ["name", "cat"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("How many cats", ["cat"], id="how-many"),
        pytest.param("how long does the build take", ["build", "take"], id="how-long"),
        pytest.param("what kind of music", ["music"], id="kind-of"),
        pytest.param("types of tests", ["test"], id="types-of"),
        pytest.param("a kind person", ["kind", "person"], id="kind-without-of"),
        pytest.param("a long walk", ["long", "walk"], id="long-without-how"),
    ],
)
def test_question_frames_are_dropped_only_in_their_frame(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_digits_stay_words_and_split_at_punctuation() -> None:
    assert tokenize("UTC+8, 10:00 on 8 May 2023") == ["utc", "8", "10", "00", "8", "may", "2023"]


def test_chinese_run_gives_bigrams_then_characters() -> None:
    assert tokenize("芝麻猫") == ["芝麻", "麻猫", "~芝", "~麻", "~猫"]


def test_chinese_particle_cuts_the_run_and_is_not_a_term() -> None:
    assert tokenize("用户的猫叫芝麻") == [
        "用户", "~用", "~户", "猫叫", "叫芝", "芝麻", "~猫", "~叫", "~芝", "~麻",
    ]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        pytest.param("公司地址", "地址", id="di-address"),
        pytest.param("会议纪要", "会议", id="hui-meeting"),
        pytest.param("需要重构", "需要", id="yao-need"),
        pytest.param("先了解需求", "了解", id="le-understand"),
        pytest.param("过滤日志", "过滤", id="guo-filter"),
        pytest.param("本地开发", "本地", id="di-local"),
    ],
)
def test_chinese_content_words_with_a_function_character_keep_their_bigram(
    text: str, word: str
) -> None:
    assert word in tokenize(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("什么", id="shenme"),
        pytest.param("为什么是这样的呢", id="why-is-it-so"),
        pytest.param("我的", id="mine"),
        pytest.param("吗？", id="particle"),
    ],
)
def test_chinese_function_words_alone_give_no_terms(text: str) -> None:
    assert tokenize(text) == []


def test_one_chinese_character_is_a_unigram_term() -> None:
    assert tokenize("猫") == ["~猫"]
    assert is_unigram("~猫") and not is_unigram("芝麻") and not is_unigram("cat")


def test_mixed_text_keeps_words_and_bigrams_in_order() -> None:
    assert tokenize("运行 pytest 命令") == [
        "运行", "~运", "~行", "pytest", "命令", "~命", "~令",
    ]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        pytest.param("用pytest跑测试", "pytest", id="word-inside-chinese"),
        pytest.param("Python3编程", "python3", id="word-then-chinese"),
        pytest.param("在GitHub上", "github", id="chinese-around-word"),
        pytest.param("ｐｙｔｈｏｎ编程", "python", id="full-width-word-then-chinese"),
    ],
)
def test_a_word_written_against_chinese_text_is_its_own_term(text: str, word: str) -> None:
    terms = tokenize(text)
    assert word in terms
    assert not any(word in term and term != word for term in terms)


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        pytest.param("ＰＹＴＥＳＴ", "pytest", id="full-width-letters"),
        pytest.param("１２３", "123", id="full-width-digits"),
        pytest.param("ﬁle", "file", id="ligature"),
        pytest.param("Ｃａｆé", "café", id="full-width-and-accent"),
        pytest.param("芝麻，猫！", "芝麻,猫!", id="full-width-punctuation"),
    ],
)
def test_nfkc_folding_makes_compatibility_forms_meet(text: str, plain: str) -> None:
    assert fold(text) == plain
    assert tokenize(text) == tokenize(plain)


def test_words_skips_cjk_and_stop_words() -> None:
    assert words("the user 的猫 is called Sesame") == ["user", "call", "sesam"]


def test_bigrams_of_short_runs() -> None:
    assert bigrams("") == []
    assert bigrams("猫") == ["猫"]
    assert bigrams("芝麻") == ["芝麻"]


def test_is_word_tells_latin_terms_from_cjk_terms() -> None:
    assert is_word("cat") and is_word("2023")
    assert not is_word("芝麻") and not is_word("~猫")
