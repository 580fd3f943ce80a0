"""A question that asks for a span of time or a date, and a text that writes one (the
eleventh pass).

"How long has Nate had his turtles?", "How often does John work out?", "How old was
she?", 多久, 多长时间, 几年, 几次, 几岁: what answers is a memory that writes a duration,
a frequency or an age ("for 3 years", "three times a week", "since 2016", "the age of
17", 三年, 每周两次, 17岁), while the memories above it hold the question's other words
("turtles", "works out") and no span. That is the kind of answer the question asks for,
not a word it shares with it: a question answering system's answer type, here only where
the type is written the same way in every memory that holds it (a number and a unit of
time), so no model and no list of topics is needed. A person's or an agent's search reads
it over its top few (`QueryPath._spans`); a hook's search never does.

`asks_span(query)` finds such a question (English in any case; Chinese), `writes_span(text)`
such an answer. Neither is a date: "10 July 2023", "8:56 pm", 2023年 write no span (a
year of four digits is a date; the question's "when" is the date windows' work,
`timewords`). Its patterns are compiled on first use; a query without "how" or one of
the Chinese question words is turned away by a substring test first, and a text is read
only around the words a span needs (a unit of time, "once", "every", "since", 年, 次, 每…:
`str.find`), as `timewords` reads a query around its anchors: a 500-character memory costs
a few µs, where the whole pattern over the whole text cost 90.

The same holds for a question asking when ("When did Gina lose her job?", "In what
year…", 哪一年, 什么时候, 何时): what answers it writes a date or a time ("in 2016", "last
Friday", "3 days ago", 1998年, 去年), `asks_when` and `writes_time`; `answer_test(query)`
gives the test of a memory a question asks for, or None. (A question that asks both, "How
long ago…", is read as asking a span.) In a folder whose every memory writes a date (a
chat log's sessions) nothing moves: every candidate gains alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..memory.patterns import on_use

_EN_COUNT = (
    r"(?:\d+(?:\.\d+)?(?:\s*(?:-|to)\s*\d+)?|an?|one|two|three|four|five|six|seven|eight|"
    r"nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|a\s+few|few|several|"
    r"(?:a\s+)?couple(?:\s+of)?|many)"
)
_EN_UNIT = r"(?:years?|months?|weeks?|days?|hours?|minutes?|seconds?|decades?|yrs?|mins?)"
_EN_SPAN = (
    r"\b" + _EN_COUNT + r"[\s-]+" + _EN_UNIT + r"\b"
    # A frequency: "twice a week", "three times a month", "once every day", "every weekend".
    r"|\b(?:once|twice|thrice|\w+\s+times)\s+(?:a|an|per|every|each)\s+"
    r"(?:day|week|month|year|night|morning|weekend)\b"
    r"|\bevery\s+(?:other\s+)?(?:day|week|month|year|night|morning|weekend|summer|winter)\b"
    r"|\b(?:daily|weekly|monthly|yearly|annually|nightly)\b"
    # An age, or a start: "the age of 17", "17 years old", "since 2016", "since she was 10".
    r"|\bage\s+(?:of\s+)?\d+|\b\d+\s*-?\s*years?\s*-?\s*old\b"
    r"|\bsince\s+(?:\w+\s+)?\d{4}\b|\bsince\s+(?:he|she|they|i|we|you)\s+was\s+\w+"
)
# A count (digits of at most three: 2023年 is a year) and a unit of time, an age or a count of
# times: 三年, 两个月, 十几天, 3周, 17岁, 两次; a frequency: 每天, 每周, 每个月.
_ZH_SPAN = (
    r"(?:(?<![0-9])[0-9]{1,3}|[零一二两三四五六七八九十百几半多]+)\s*"
    r"(?:年|个月|个多月|个星期|周|星期|天|个小时|小时|分钟|秒|岁|次|遍)"
    r"|每(?:天|日|周|星期|个?月|年|晚|早)"
)
_EN_ASKS = r"\bhow\s+(?:long|often|frequently|old)\b"
# Not a window's phrase (几天前, 几年后: `timewords` reads those as dates).
_ZH_ASKS = (
    r"(?:多久|多长时间|多长的时间|多少年|几年|多少岁|几岁|多大年纪|多少次|几次|多少个月|几个月|"
    r"多少天|几天|多少周|几周|几个星期|多少个小时|多少小时|几个小时|几小时|多少分钟|几分钟)"
    r"(?![前后以])"
)
_ZH_HINTS = ("多", "几")
# A question asking when (a date answers it: "When did Gina lose her job?", "In what year…",
# 哪一年, 什么时候, 何时), and a text writing a date or a time: a year of four digits, a month or
# a weekday named, a day ("yesterday", "last week", "3 days ago"), a clock time; 1998年, 4月,
# 10日, 上世纪, 八十年代, 公元前, 昨天, 去年.
_EN_WHEN = (
    r"^\W*when\b|\bwhen\s+(?:did|does|do|is|was|were|will|are|has|have|had)\b"
    r"|\b(?:what|which)\s+(?:year|date|day|month|century|decade)\b"
)
_ZH_WHEN = r"哪一年|哪年|哪一天|哪天|什么时候|何时|几月|几号|什么时间|哪个世纪|哪一个世纪|哪个年代"
_ZH_WHEN_HINTS = ("哪", "什么时", "何时", "几月", "几号")
# Each alternative bounded once, outside (no word character either side): 1.5 times
# faster than a \b in each (the pattern is tried at every place of a memory).
_EN_TIME = (
    r"(?<!\w)(?:"
    r"1[0-9]{3}|20[0-9]{2}|\d{4}-\d\d-\d\d"
    r"|january|february|march|april|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|may\s+\d+|\d{1,2}(?:st|nd|rd|th)?\s+may"
    r"|(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
    r"|yesterday|today|tonight|tomorrow"
    r"|(?:last|next|this)\s+(?:week|month|year|weekend|night|summer|winter|spring|fall|autumn)"
    r"|ago|recently|\d{1,2}(?::\d\d)?\s*(?:am|pm)"
    r")(?!\w)"
)
_ZH_TIME = (
    r"(?<![0-9])[0-9]{3,4}\s*年|[零〇一二三四五六七八九]{4}年|(?<![0-9])[0-9]{1,2}\s*月"
    r"|[一二三四五六七八九十]{1,3}月|[0-9]{1,2}\s*[日号]|世纪|年代|公元|昨天|前天|今天|去年|前年|今年|明年"
    r"|上(?:个)?(?:月|周|星期)|[0-9一二三四五六七八九十几]+\s*(?:天|年|个月|周)前"
)
# A text is read this far for a span (a long memory's best piece is at most a paragraph, but
# a paragraph may be long): 20,000 characters of anchors that write no span cost 8 ms of CPU.
MAX_SPAN_CHARS = 4_000
# What a span cannot be written without (lowercase), and how far around one it is read.
_ANCHORS = ("year", "month", "week", "day", "hour", "minute", "second", "decade", "yr",
            "min", "once", "twice", "thrice", "times", "every", "daily", "nightly", "annually",
            "age", "old", "since", "年", "月", "周", "星期", "天", "小时", "分钟", "秒", "岁",
            "次", "遍", "每")
_BEFORE = 24
_AFTER = 32
# Compiled on first use (`memory.patterns.on_use`): a question asking neither runs none.
_EN_SPAN_PATTERN = on_use(_EN_SPAN, re.IGNORECASE)
_ZH_SPAN_PATTERN = on_use(_ZH_SPAN, re.IGNORECASE)
_EN_ASKS_PATTERN = on_use(_EN_ASKS, re.IGNORECASE)
_ZH_ASKS_PATTERN = on_use(_ZH_ASKS, re.IGNORECASE)
_EN_WHEN_PATTERN = on_use(_EN_WHEN, re.IGNORECASE)
_ZH_WHEN_PATTERN = on_use(_ZH_WHEN, re.IGNORECASE)
_EN_TIME_PATTERN = on_use(_EN_TIME, re.IGNORECASE)
_ZH_TIME_PATTERN = on_use(_ZH_TIME, re.IGNORECASE)


def asks_span(query: str) -> bool:
    """Whether `query` asks how long, how often or how old ("How long has…", 多久, 几次)."""
    if "how" in query.lower() and _EN_ASKS_PATTERN.search(query) is not None:
        return True
    return (any(hint in query for hint in _ZH_HINTS)
            and _ZH_ASKS_PATTERN.search(query) is not None)


def writes_span(text: str) -> bool:
    """Whether `text` (its first MAX_SPAN_CHARS) writes a duration, a frequency or an age
    ("for 3 years", "twice a week", "since 2016", "the age of 17", 三年, 每周, 17岁); a
    date is none."""
    low = text[:MAX_SPAN_CHARS].lower()
    for anchor in _ANCHORS:
        at = low.find(anchor)
        if at < 0:
            continue
        english = anchor.isascii()
        pattern = _EN_SPAN_PATTERN if english else _ZH_SPAN_PATTERN
        while at >= 0:
            # An English anchor starts a word ("days", not "today"; "age", not "message").
            if not (english and at and low[at - 1].isalpha()) and pattern.search(
                    low, max(0, at - _BEFORE), at + _AFTER) is not None:
                return True
            at = low.find(anchor, at + len(anchor))
    return False


def asks_when(query: str) -> bool:
    """Whether `query` asks when ("When did…", "In what year…", 哪一年, 什么时候, 何时)."""
    low = query.lower()
    if "when" in low or "what" in low or "which" in low:
        if _EN_WHEN_PATTERN.search(low) is not None:
            return True
    return (any(hint in query for hint in _ZH_WHEN_HINTS)
            and _ZH_WHEN_PATTERN.search(query) is not None)


def writes_time(text: str) -> bool:
    """Whether `text` (its first MAX_SPAN_CHARS) writes a date or a time ("in 2016", "20
    July", "last Friday", "3 days ago", "8:56 pm", 1998年, 4月, 上世纪, 去年)."""
    low = text[:MAX_SPAN_CHARS].lower()
    return (_EN_TIME_PATTERN.search(low) is not None
            or (not low.isascii() and _ZH_TIME_PATTERN.search(low) is not None))


def answer_test(query: str) -> Callable[[str], bool] | None:
    """What a memory must write to be the kind of answer `query` asks for: a span of time
    for "how long / how often / how old" (`writes_span`), a date or a time for "when"
    (`writes_time`); None for any other question."""
    if asks_span(query):
        return writes_span
    if asks_when(query):
        return writes_time
    return None


__all__ = ["MAX_SPAN_CHARS", "answer_test", "asks_span", "asks_when", "writes_span",
           "writes_time"]
