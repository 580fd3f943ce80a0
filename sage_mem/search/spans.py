"""A question that asks for a span of time, and a text that writes one (the eleventh pass).

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
`timewords`). Both patterns are compiled on first use; a query without "how" or one of
the Chinese question words is turned away by a substring test first, and a text is read
only around the words a span needs (a unit of time, "once", "every", "since", 年, 次, 每…:
`str.find`), as `timewords` reads a query around its anchors: a 500-character memory costs
a few µs, where the whole pattern over the whole text cost 90.
"""

from __future__ import annotations

import re

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
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(name: str) -> re.Pattern[str]:
    found = _PATTERNS.get(name)
    if found is None:
        source = {"en_span": _EN_SPAN, "zh_span": _ZH_SPAN, "en_asks": _EN_ASKS,
                  "zh_asks": _ZH_ASKS}[name]
        found = _PATTERNS[name] = re.compile(source, re.IGNORECASE)
    return found


def asks_span(query: str) -> bool:
    """Whether `query` asks how long, how often or how old ("How long has…", 多久, 几次)."""
    if "how" in query.lower() and _pattern("en_asks").search(query) is not None:
        return True
    return (any(hint in query for hint in _ZH_HINTS)
            and _pattern("zh_asks").search(query) is not None)


def writes_span(text: str) -> bool:
    """Whether `text` (its first MAX_SPAN_CHARS) writes a duration, a frequency or an age
    ("for 3 years", "twice a week", "since 2016", "the age of 17", 三年, 每周, 17岁); a
    date is none."""
    low = text[:MAX_SPAN_CHARS].lower()
    english = chinese = None
    for anchor in _ANCHORS:
        at = low.find(anchor)
        if at < 0:
            continue
        if anchor.isascii():
            pattern = english = english or _pattern("en_span")
        else:
            pattern = chinese = chinese or _pattern("zh_span")
        while at >= 0:
            # An English anchor starts a word ("days", not "today"; "age", not "message").
            if not (pattern is english and at and low[at - 1].isalpha()) and pattern.search(
                    low, max(0, at - _BEFORE), at + _AFTER) is not None:
                return True
            at = low.find(anchor, at + len(anchor))
    return False


__all__ = ["MAX_SPAN_CHARS", "asks_span", "writes_span"]
