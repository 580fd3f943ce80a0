"""A query's time words read as date windows (`search/timewords.py`), in English and Chinese.

Each case is resolved against a fixed "now", Friday 2026-12-04, so a window is
a pair of days that can be checked by hand; weeks start on Monday.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime

import pytest

from sage_mem.search.timewords import date_terms, read_time

NOW = date(2026, 12, 4)  # a Friday


def windows(query: str, now: date | datetime = NOW) -> list[tuple[str, str]]:
    return [(w.start.isoformat(), w.end.isoformat()) for w in read_time(query, now).windows]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("What did I buy yesterday?", [("2026-12-03", "2026-12-03")], id="yesterday"),
        pytest.param("what happened the day before yesterday", [("2026-12-02", "2026-12-02")],
                     id="day-before-yesterday"),
        pytest.param("what did we ship today", [("2026-12-04", "2026-12-04")], id="today"),
        pytest.param("What kitchen appliance did I buy 10 days ago?",
                     [("2026-11-23", "2026-11-25")], id="ten-days-ago"),
        pytest.param("the investment four weeks ago", [("2026-11-03", "2026-11-09")],
                     id="four-weeks-ago"),
        pytest.param("a trip two months ago", [("2026-10-01", "2026-10-31")],
                     id="two-months-ago"),
        pytest.param("where did she move from 4 years ago", [("2022-01-01", "2022-12-31")],
                     id="four-years-ago"),
        pytest.param("a few days ago", [("2026-11-30", "2026-12-02")], id="a-few-days-ago"),
        pytest.param("what did we decide last week", [("2026-11-23", "2026-11-29")],
                     id="last-week"),
        pytest.param("the party last weekend", [("2026-11-28", "2026-11-29")],
                     id="last-weekend"),
        pytest.param("the bill last month", [("2026-11-01", "2026-11-30")], id="last-month"),
        pytest.param("the move last year", [("2025-01-01", "2025-12-31")], id="last-year"),
        pytest.param("the call last Tuesday", [("2026-12-01", "2026-12-01")],
                     id="last-tuesday"),
        pytest.param("what I read in the past week", [("2026-11-27", "2026-12-04")],
                     id="the-past-week"),
        pytest.param("What did we plan in March?", [("2026-03-01", "2026-03-31")],
                     id="in-march"),
        pytest.param("the trip last March", [("2026-03-01", "2026-03-31")], id="last-march"),
        pytest.param("the trip in December", [("2026-12-01", "2026-12-31")],
                     id="this-month-named"),
        pytest.param("Was the first half of September 2022 a good month?",
                     [("2022-09-01", "2022-09-30")], id="a-month-and-its-year"),
        pytest.param("what did we do in May?", [("2026-05-01", "2026-05-31")], id="in-may"),
    ],
)
def test_an_english_time_phrase_is_a_window_of_days(
    query: str, expected: list[tuple[str, str]]
) -> None:
    assert windows(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("我十天前买了什么", [("2026-11-23", "2026-11-25")], id="十天前"),
        pytest.param("四周前的投资", [("2026-11-03", "2026-11-09")], id="四周前"),
        pytest.param("三个星期前", [("2026-11-10", "2026-11-16")], id="三个星期前"),
        pytest.param("两个月前去了哪里", [("2026-10-01", "2026-10-31")], id="两个月前"),
        pytest.param("上个月的账单", [("2026-11-01", "2026-11-30")], id="上个月"),
        pytest.param("上月的账单", [("2026-11-01", "2026-11-30")], id="上月"),
        pytest.param("这个月的计划", [("2026-12-01", "2026-12-31")], id="这个月"),
        pytest.param("上周我们决定了什么", [("2026-11-23", "2026-11-29")], id="上周"),
        pytest.param("上个星期开的会", [("2026-11-23", "2026-11-29")], id="上个星期"),
        pytest.param("上周五的电话", [("2026-11-27", "2026-11-27")], id="上周五"),
        pytest.param("上周末去爬山", [("2026-11-28", "2026-11-29")], id="上周末"),
        pytest.param("昨天吃了什么", [("2026-12-03", "2026-12-03")], id="昨天"),
        pytest.param("前天买的书", [("2026-12-02", "2026-12-02")], id="前天"),
        pytest.param("去年搬的家", [("2025-01-01", "2025-12-31")], id="去年"),
        pytest.param("前年的旅行", [("2024-01-01", "2024-12-31")], id="前年"),
        pytest.param("几天前说的事", [("2026-11-30", "2026-12-02")], id="几天前"),
        pytest.param("三月份的计划", [("2026-03-01", "2026-03-31")], id="三月份"),
    ],
)
def test_a_chinese_time_phrase_is_a_window_of_days(
    query: str, expected: list[tuple[str, str]]
) -> None:
    assert windows(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("the last time I saw Deborah", id="the-last-time"),
        pytest.param("what is his last name", id="last-name"),
        pytest.param("who came last", id="last-alone"),
        pytest.param("I met her a while ago", id="ago-without-a-count"),
        pytest.param("that was long ago", id="long-ago"),
        pytest.param("years ago we met", id="ago-with-a-unit-but-no-count"),
        pytest.param("May I ask what you think?", id="may-the-verb-opening"),
        pytest.param("you may go when ready", id="may-the-verb"),
        pytest.param("we march on", id="march-the-verb"),
        pytest.param("上个厕所", id="上个-not-a-month"),
        pytest.param("换上个版本", id="上个版本"),
        pytest.param("马上周一开会", id="马上-closes-上"),
        pytest.param("目前天气很好", id="目前-closes-前"),
        pytest.param("这个月饼很好吃", id="月饼"),
    ],
)
def test_words_that_only_look_like_time_make_no_window(query: str) -> None:
    found = read_time(query, NOW)
    assert found.windows == ()
    assert found.text == query


@pytest.mark.parametrize(
    ("query", "left"),
    [
        pytest.param("What did I buy 10 days ago?", "What did I buy  ?", id="en"),
        pytest.param("上周我们决定了什么", " 我们决定了什么", id="zh"),
    ],
)
def test_a_relative_phrase_is_taken_out_of_the_query_text(query: str, left: str) -> None:
    assert read_time(query, NOW).text == left


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("Logs:\n\n```\n2026-10-09 fair ERROR\n```\n\nWhat gift did Nate get?", [],
                     id="en-fenced-log"),
        pytest.param("Why does `since 2023-04-10` fail?", [], id="en-inline-code"),
        pytest.param("日志：\n```\n2026年10月9日 集市 出错\n```\n我昨天买了什么",
                     [("2026-12-03", "2026-12-03")], id="zh-fenced-log"),
    ],
)
def test_a_date_in_pasted_code_is_no_window(query: str, expected: list[tuple[str, str]]) -> None:
    """A log's or a traceback's dates are not what a prompt asks about (as `fusion.writes_figure`
    reads them): only the prose's time phrases are windows, and the text keeps the code."""
    assert windows(query) == expected
    assert "2026" in read_time(query, NOW).text or "2023" in read_time(query, NOW).text


def test_an_absolute_date_stays_in_the_query_text_and_is_a_window() -> None:
    found = read_time("What did Tim say about his injury on 16 November, 2023?", NOW)
    assert [(w.start, w.end, w.relative) for w in found.windows] == [
        (date(2023, 11, 16), date(2023, 11, 16), False)]
    assert found.text == "What did Tim say about his injury on 16 November, 2023?"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("What did Maria do last weekend before April 10, 2023?",
                     [("2023-04-08", "2023-04-09"), ("2023-04-10", "2023-04-10")], id="en"),
        pytest.param("2023年4月10日之前的上周末做了什么",
                     [("2023-04-08", "2023-04-09"), ("2023-04-10", "2023-04-10")], id="zh"),
    ],
)
def test_a_relative_phrase_beside_a_full_date_is_read_from_that_date(
    query: str, expected: list[tuple[str, str]]
) -> None:
    assert sorted(windows(query)) == expected


def test_chinese_dates_in_every_written_form_are_windows() -> None:
    assert windows("2023年4月10日") == [("2023-04-10", "2023-04-10")]
    assert windows("4月10号的会") == [("2026-04-10", "2026-04-10")]
    assert windows("2023年4月") == [("2023-04-01", "2023-04-30")]
    assert windows("2022年发生了什么") == [("2022-01-01", "2022-12-31")]


def test_now_is_the_query_date_and_defaults_to_today() -> None:
    assert windows("yesterday", datetime(2023, 5, 9, 12, tzinfo=UTC)) == [
        ("2023-05-08", "2023-05-08")]
    assert read_time("yesterday").windows[0].end < date.today()


def test_a_day_near_the_window_is_half_as_close_as_one_inside() -> None:
    window = read_time("last week", NOW).windows[0]
    assert window.closeness(date(2026, 11, 25)) == 1.0
    assert window.closeness(date(2026, 11, 30)) == 0.5
    assert window.closeness(date(2026, 10, 1)) == 0.0


def test_the_terms_that_date_a_memory_are_those_a_written_date_gives() -> None:
    from sage_mem.search.scoring import word_pairs
    from sage_mem.search.tokens import tokenize

    written = tokenize("Yesterday (2026-11-24) we shipped")
    held = set(written) | set(word_pairs(written))
    inside = date_terms(read_time("10 days ago", NOW).windows[0])[0]
    assert held & set(inside.terms) and held & set(inside.confirm)
    year = date_terms(read_time("去年", NOW).windows[0])[0]
    assert year.terms == ("2025",)


def test_a_long_pasted_prompt_is_read_quickly() -> None:
    question = " what broke last week?"
    pasted = ("Traceback (most recent call last):\n  File \"app.py\", line 12, in main\n" * 40
              + "日志：服务在2026年启动失败，" * 60)[: 4_000 - len(question)] + question
    read_time(pasted, NOW)  # the patterns are compiled once, here
    started = time.process_time()
    for _ in range(20):
        found = read_time(pasted, NOW)
    spent = (time.process_time() - started) / 20
    assert [w.phrase for w in found.windows if w.relative] == ["last week"]
    assert spent < 0.005


def test_a_date_without_its_year_takes_the_one_year_the_query_writes() -> None:
    assert windows("Where was John between August 11 and August 15 2023?") == [
        ("2023-08-11", "2023-08-11"), ("2023-08-15", "2023-08-15")]


def test_a_page_of_dates_gives_a_bounded_number_of_windows() -> None:
    log = "".join(f"2026-11-{day:02}T10:00:00 started\n" for day in range(1, 29)) + "2026年" * 20
    found = read_time(log, NOW).windows
    assert len(found) == 8
    assert len(set(found)) == len(found)
