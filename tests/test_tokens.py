"""Tokens: Porter2 stemming, stop words and question frames, CJK bigrams, NFKC folding,
dates, numbers and identifier parts."""

from __future__ import annotations

import pytest

from sage_mem.search.tokens import (
    LONE_WEIGHT,
    bigrams,
    chinese_number,
    fold,
    is_unigram,
    is_word,
    loose_terms,
    stem,
    tokenize,
    tokenize_counted,
    words,
)

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
    assert tokenize("UTC+8, 10:00 on 2023") == ["utc", "8", "10", "00", "2023"]


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


# Dates: every written form gives the same terms (month name, day, year).


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("4月28日", id="zh-ri"),
        pytest.param("4月28号", id="zh-hao"),
        pytest.param("四月二十八日", id="zh-numerals"),
        pytest.param("2023年4月28日", id="zh-with-year"),
        pytest.param("2023-04-28", id="iso"),
        pytest.param("2023/4/28", id="slashes"),
        pytest.param("April 28", id="en-month-day"),
        pytest.param("April 28th", id="en-ordinal"),
        pytest.param("Apr. 28", id="en-abbreviation"),
        pytest.param("28 April 2023", id="en-day-month-year"),
        pytest.param("the 28th of April", id="en-of"),
        pytest.param("on 28 April, 2023", id="en-comma-year"),
    ],
)
def test_a_date_in_any_written_form_gives_the_month_and_the_day(text: str) -> None:
    terms = tokenize(text)
    assert "april" in terms and "28" in terms
    assert terms.index("28") < terms.index("april")  # one order, so the pair "28 april" matches


def test_a_date_keeps_its_year_and_a_lone_month_is_its_name() -> None:
    assert tokenize("2023-04-28") == ["28", "april", "2023"]
    assert tokenize("2023年4月") == tokenize("April 2023") == ["april", "2023"]
    assert tokenize("last April") == ["last", "april"]
    assert tokenize("去年4月") == tokenize("去年四月") == ["去年", "~去", "~年", "april"]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("2023-13-40", id="no-such-month"),
        pytest.param("13月", id="zh-no-such-month"),
        pytest.param("version 1.2.3", id="version-number"),
    ],
)
def test_what_is_not_a_date_is_left_as_it_was(text: str) -> None:
    assert not {"april", "december", "january", "february", "march"} & set(tokenize(text))


def test_three_months_is_a_count_not_march() -> None:
    assert "march" not in tokenize("三个月")
    assert "3" in tokenize("三个月")


# Numbers.


@pytest.mark.parametrize(
    ("text", "number"),
    [
        pytest.param("three years", "3", id="en-word"),
        pytest.param("3 years", "3", id="en-digits"),
        pytest.param("twenty", "20", id="en-tens"),
        pytest.param("三年", "3", id="zh-before-measure"),
        pytest.param("养了两只猫", "2", id="zh-liang"),
        pytest.param("十五个人", "15", id="zh-teen"),
        pytest.param("两百本书", "200", id="zh-hundreds"),
        pytest.param("3年", "3", id="zh-digits"),
    ],
)
def test_a_number_is_its_digits_in_either_language(text: str, number: str) -> None:
    assert number in tokenize(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("十分好吃", id="shifen-very"),
        pytest.param("一起去", id="yiqi-together"),
        pytest.param("三明治", id="sanmingzhi-sandwich"),
        pytest.param("the blue one", id="en-one"),
    ],
)
def test_a_numeral_inside_a_word_stays_part_of_it(text: str) -> None:
    assert not any(term.isdigit() for term in tokenize(text))


def test_chinese_numerals_read_as_numbers() -> None:
    numerals = ("三", "十", "十五", "二十八", "两百", "一千零一")
    assert [chinese_number(text) for text in numerals] == [3, 10, 15, 28, 200, 1001]
    assert chinese_number("二三") is None


# Identifiers and word forms.


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        pytest.param("LazyVim", ["lazyvim", "lazi", "vim"], id="camel"),
        pytest.param("getUserName", ["user", "name"], id="lower-camel"),
        pytest.param("HTTPServer", ["http", "server"], id="acronym-then-word"),
        pytest.param("OAuth2", ["oauth2", "oauth"], id="letters-then-digits"),
        pytest.param("snake_case", ["snake", "case"], id="snake"),
        pytest.param("用LazyVim写代码", ["lazyvim", "lazi", "vim"], id="camel-in-chinese"),
    ],
)
def test_an_identifier_also_gives_its_parts(text: str, parts: list[str]) -> None:
    terms = tokenize(text)
    assert all(part in terms for part in parts), terms


def test_a_plural_acronym_is_not_split() -> None:
    assert tokenize("IDs") == ["id"]


@pytest.mark.parametrize(
    ("apart", "joined"),
    [
        pytest.param("log in", "login", id="log-in"),
        pytest.param("logged in", "login", id="logged-in"),
        pytest.param("signed up", "signup", id="signed-up"),
        pytest.param("back up the disk", "backup", id="back-up"),
    ],
)
def test_a_verb_and_its_particle_also_ask_for_the_joined_word(apart: str, joined: str) -> None:
    assert dict(loose_terms(apart)).get(joined) == 1.0


def test_a_joined_word_also_asks_for_its_verb_at_a_lower_weight() -> None:
    found = dict(loose_terms("login page"))
    assert 0 < found["log"] < 1.0
    assert "pag" not in found and loose_terms("the page") == []


def test_an_irregular_verb_form_is_its_base_verb() -> None:
    assert tokenize("Nate won the tournament") == tokenize("Nate wins the tournament")
    assert tokenize("bought") == tokenize("buying") == ["buy"]
    assert tokenize("she went") == ["go"]
    assert tokenize("a bit of a rose garden") == ["bit", "rose", "garden"]


def test_a_name_inside_a_question_weighs_more() -> None:
    found = dict(loose_terms("What book did Caroline recommend?"))
    assert found == {"carolin": found["carolin"]} and found["carolin"] > 1.0
    assert loose_terms("Books are fun") == []  # the first word of a sentence is no name
    # Nor is one after a full stop or a Chinese full stop; after a comma it is.
    for text in ("Fine. Books are fun", "好了。 Books", "Why? Books"):
        assert "book" not in dict(loose_terms(text)), text
    assert dict(loose_terms("好的, Melanie said")) == {"~好": LONE_WEIGHT, "melani": 1.5}


# Chinese.


@pytest.mark.parametrize(
    ("text", "word"),
    [
        pytest.param("IT行业", "it", id="it-industry"),
        pytest.param("买了A股", "a", id="a-shares"),
        pytest.param("做OR研究", "or", id="operations-research"),
    ],
)
def test_a_latin_word_inside_chinese_text_is_no_english_stop_word(text: str, word: str) -> None:
    assert word in tokenize(text)
    assert word not in tokenize(f"{word} is the word")


def test_a_doubled_character_stands_for_the_character() -> None:
    assert ("~狗", 1.0) in loose_terms("狗狗")


def test_a_skip_bigram_leaves_out_the_middle_character() -> None:
    found = dict(loose_terms("打篮球"))
    assert "打球" in found and found["打球"] < 1.0
    assert loose_terms("play basketball") == []
    assert "我欢" not in dict(loose_terms("我喜欢"))  # a function character makes no skip bigram


def test_identifier_parts_do_not_lengthen_the_text() -> None:
    terms = ["maco", "mac", "os", "lazyvim", "lazi", "vim"]
    assert tokenize_counted("macOS and LazyVim") == (terms, 2)
    assert tokenize_counted("在macOS上") == (["maco", "mac", "os", "~上"], 2)


# Emoji and symbols: chat memories carry meaning in them ("a 👍 means go ahead").


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("🐶", ["🐶"], id="one-emoji"),
    pytest.param("👍🏽", ["👍"], id="skin-tone-is-the-same-emoji"),
    pytest.param("❤️ ❤", ["❤", "❤"], id="variation-selector-is-the-same-symbol"),
    pytest.param("★", ["★"], id="a-symbol"),
    pytest.param("🇯🇵", ["🇯🇵"], id="a-flag-is-one-term"),
    pytest.param("→ © … · ®", [], id="arrows-and-marks-are-not-terms"),
])
def test_an_emoji_or_symbol_is_a_term(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_emoji_are_terms_among_words_in_both_languages() -> None:
    assert tokenize("The dog 🐶 barks!") == ["dog", "🐶", "bark"]
    assert "🐶" in tokenize("我家的狗叫饼干🐶") and "饼干" in tokenize("我家的狗叫饼干🐶")
