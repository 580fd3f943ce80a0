"""A query's time words, read as date windows: "10 days ago", "last week", 上个月, 十天前.

`read_time(query, now)` finds the phrases of a query that place what it asks
about in time and resolves each against `now` (the query's own date: a hook
knows it, an MCP call or the CLI may pass it; else the current time) into a
`Window`, a span of days with a margin of days "near" it. Search then ranks
memories dated in or near a window higher (`search/query.py`, `Index.search`)
and leaves a relative phrase out of the lexical terms: "ago", "weeks" and
"last" would only match the wrong memories' words.

Read, in English (any case) and in Chinese:

- days: "yesterday", "the day before yesterday", "today", "tonight", "last
  night", "this morning"; 昨天, 昨晚, 前天, 大前天, 今天, 今晚, 今早;
- counts back: "10 days ago", "four weeks ago", "a few days ago", "a couple of
  months ago", "two years ago"; 十天前, 四周前, 三个星期前, 两个月前, 几天前, 3年前
  ("a while ago", "long ago": no count, no window, the words stay);
- calendar units: "last week", "last weekend", "last month", "last year",
  "this week", "earlier this month", "last Friday"; 上周, 上个星期, 上礼拜, 上周五,
  上周末, 上个月, 这个月, 本周, 去年, 前年, 今年. "the last week" and "the past
  month" are the seven or thirty days up to now. "last" not followed by a unit
  is no time ("the last time I", "last name"), nor is 上个 not followed by
  月/周/星期/礼拜 (上个厕所, 上个版本), nor 上周 closing another word (马上周一);
- months and dates: "in March", "last March", "March 2023", "April 10, 2023",
  "10th of April", "2023-04-10"; 三月, 3月份, 2023年4月, 4月10日, 2023年4月10日; a
  year: "in 2022", 2022年. "May" is a month only when it is unmistakably one
  ("in May", "May 2023", "May 10"), never the verb ("May I ask", "you may").

An absolute date or month stays in the lexical terms (the memory that writes
it matches it in any written form: `tokens.py`); only a relative phrase is
taken out (`TimeQuery.text`). A relative phrase in a query that also writes a
full date is resolved against that date, not now: "last weekend before April
10, 2023" is the weekend of April 8-9, 2023.

Cheap on a hook's path: nothing is compiled at import; the patterns are
compiled on the first query that holds a time word at all (a quick test of
a few substrings first), and a query is read up to MAX_TIME_CHARS characters.
Weeks start on Monday.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from ..memory.patterns import on_use

# A pasted page is read this far for time words (a hook's prompt is cut before this).
MAX_TIME_CHARS = 8_000
MAX_WINDOWS = 8

_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)
_MONTH_OF = {name: i for i, name in enumerate(_MONTHS, 1)} | {
    name[:3]: i for i, name in enumerate(_MONTHS, 1) if name != "may"
} | {"sept": 9}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "fifteen": 15, "twenty": 20, "thirty": 30,
}
# "a few", "a couple of", "several": a count that is no number, read as this one (and the
# window widened to cover its neighbours: see `_back`).
_FEW = 3


class Window(NamedTuple):
    """Days `start` to `end` (inclusive) that a phrase of the query names, and `margin` days
    either side that count as near it."""

    start: date
    end: date
    margin: int
    phrase: str
    relative: bool  # a relative phrase ("last week"), left out of the lexical terms
    unit: str  # "day", "month" or "year": what a memory must write to be in it

    def closeness(self, day: date) -> float:
        """1 for a day inside the window, 0.5 near it (within the margin), else 0."""
        if self.start <= day <= self.end:
            return 1.0
        if self.start - timedelta(days=self.margin) <= day <= self.end + timedelta(
                days=self.margin):
            return 0.5
        return 0.0


class TimeQuery(NamedTuple):
    """The windows a query names and its text without the relative phrases."""

    windows: tuple[Window, ...]
    text: str

    def closeness(self, day: date) -> float:
        """The best closeness of `day` to any window (0 when there are none)."""
        return max((window.closeness(day) for window in self.windows), default=0.0)


# Fenced blocks (``` or ~~~, to their closing fence or the end) and inline code: read here
# rather than with `memory.markdown`'s full rules, which the hook's path does not import.
_FENCE = on_use(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?:.*?\n[ \t]*\1[^\n]*$|.*\Z)",
                re.MULTILINE | re.DOTALL)
_INLINE = on_use(r"`[^`\n]+`")


def _blanked(match: re.Match[str]) -> str:
    return "\n".join(" " * len(line) for line in match.group().split("\n"))


def read_time(query: str, now: date | datetime | None = None) -> TimeQuery:
    """The date windows `query` names, resolved against `now` (default: today, local time).

    `TimeQuery.text` is `query` with each relative phrase replaced by a space;
    a query that names no time comes back as it is, with no windows. Its code (a fenced
    block, even one left open, and inline code) names none.
    """
    head = query[:MAX_TIME_CHARS]
    if not _may_hold_time(head):
        return TimeQuery((), query)
    # A date in pasted code (a log's, a traceback's) is not a time the query asks about:
    # its code is read as blanks (the same length, so a phrase's place stays the query's).
    if "```" in head or "~~~" in head:
        head = _FENCE.sub(_blanked, head)
    if "`" in head:
        head = _INLINE.sub(_blanked, head)
    if now is None:
        today = date.today()
    elif isinstance(now, datetime):
        today = now.astimezone().date() if now.tzinfo is not None else now.date()
    else:
        today = now
    found = _absolute(head, today) + _relative(head, today)
    if not found:
        return TimeQuery((), query)
    # A relative phrase said of a full date in the same query is said from that date.
    anchors = [window.start for _, window in found if not window.relative and _is_day(window)]
    if len(anchors) == 1 and anchors[0] != today:
        found = _absolute(head, today) + _relative(head, anchors[0])
    # "last March" is one phrase, not "last March" and "March".
    spans = [span for span, window in found if window.relative]
    found = [(span, window) for span, window in found if window.relative or not any(
        start <= span[0] and span[1] <= end for start, end in spans)]
    found.sort(key=lambda item: item[0])
    # The same window once; a page naming dozens of dates (a pasted log) asks about none
    # of them in particular: its first MAX_WINDOWS are read.
    windows = tuple(dict.fromkeys(window for _, window in found))[:MAX_WINDOWS]
    text = query
    for (start, end), window in reversed(found):
        if window.relative:
            text = text[:start] + " " + text[end:]
    return TimeQuery(windows, text)


def _is_day(window: Window) -> bool:
    return window.unit == "day" and window.start == window.end


# What a time phrase needs somewhere in the text: a quick test before any pattern runs.
_HINTS = (
    "ago", "yesterday", "today", "tonight", "last", "this", "past", "previous", "earlier",
    "week", "month", "year", "morning", "天", "周", "月", "年", "星期", "礼拜", "昨", "今",
)


def _may_hold_time(text: str) -> bool:
    lowered = text.lower()
    if any(hint in lowered for hint in _HINTS):
        return True
    return any(month in lowered for month in _MONTH_OF) or _has_iso_hint(text)


def _has_iso_hint(text: str) -> bool:
    return "-" in text and any(char.isdigit() for char in text)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _patterns() -> dict[str, re.Pattern[str]]:
    """The patterns, compiled on first use (a hook process compiles them only if it needs them)."""
    if _PATTERNS:
        return _PATTERNS
    count = r"\d{1,3}|a\s+few|a\s+couple\s+of|a\s+couple|couple\s+of|several|few|" + "|".join(
        sorted(_EN_COUNTS, key=len, reverse=True))
    months = "|".join(sorted(_MONTH_OF, key=len, reverse=True))
    weekdays = "|".join(_WEEKDAYS)
    zh_number = r"\d{1,3}|[一两二三四五六七八九十百几]+"
    _PATTERNS.update({
        # A year, and where an ISO date may be: each starts with a class the engine scans
        # for, in C.
        "year": re.compile(r"[12][0-9]{3}(?![0-9])(?<![0-9]{5})"),
        "iso_hint": re.compile(r"[12][0-9]{3}-[0-9]{1,2}-[0-9]{1,2}"),
        "en": re.compile(
            r"(?<![\w-])(?:"
            rf"(?P<back>(?P<count>{count})\s+(?P<unit>day|week|month|year)s?\s+ago)"
            r"|(?P<before_yesterday>the\s+day\s+before\s+yesterday)"
            r"|(?P<day>yesterday|today|tonight|last\s+night"
            r"|this\s+(?:morning|afternoon|evening))"
            r"|(?P<rolling>the\s+(?:last|past)\s+(?:(?P<rolling_count>\d{1,2}|two|three|four|few"
            r"|couple\s+of)\s+)?(?P<rolling_unit>day|week|month|year)s?)"
            r"|(?P<earlier>(?:earlier|later)\s+this\s+(?P<earlier_unit>week|month|year))"
            r"|(?P<calendar>(?P<which>last|this|previous|past)\s+"
            rf"(?P<calendar_unit>weekend|week|month|year|{weekdays}|{months}))"
            r")(?![\w-])",
            re.IGNORECASE,
        ),
        "en_date": re.compile(
            r"(?<![\w-])(?:"
            rf"(?P<month_day>(?P<md_month>{months})\.?\s+(?P<md_day>\d{{1,2}})(?:st|nd|rd|th)?"
            r"(?:,?\s+(?P<md_year>[12]\d{3}))?)"
            rf"|(?P<day_month>(?P<dm_day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?"
            rf"(?P<dm_month>{months})\.?(?:,?\s+(?P<dm_year>[12]\d{{3}}))?)"
            r"|(?P<iso>(?P<iso_year>[12]\d{3})-(?P<iso_month>\d{1,2})-(?P<iso_day>\d{1,2}))"
            rf"|(?P<month_year>(?P<my_lead>(?:in|during|since|of|by|until|early|late|mid)\s+)?"
            rf"(?P<my_month>{months})(?:,?\s+(?P<my_year>[12]\d{{3}}))?)"
            r"|(?P<year>(?:in|during|since)\s+(?P<year_value>[12]\d{3}))"
            r")(?![\w-])",
            re.IGNORECASE,
        ),
        "zh": re.compile(
            r"(?P<zh_day>大前天|前天|昨天|昨晚|今天|今晚|今早)"
            rf"|(?P<zh_back>(?<![月\d])(?P<zh_count>{zh_number})\s*(?:个)?\s*"
            r"(?P<zh_unit>天|日|周|星期|礼拜|月|年)(?:以前|之前|前))"
            r"|(?P<zh_week>(?P<zh_week_which>上上|上|这|本)(?:个)?(?:周|星期|礼拜)"
            r"(?P<zh_weekday>[一二三四五六日天末])?)"
            r"|(?P<zh_month>(?P<zh_month_which>上上|上|这|本)(?:个)?月(?![份饼亮球光薪报度]))"
            r"|(?P<zh_year>去年|前年|今年)"
            r"|(?P<zh_recent>前几天|这几天)"
        ),
        "zh_date": re.compile(
            r"(?:(?P<zd_year>[12]\d{3})\s*年\s*)?"
            r"(?P<zd_month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])\s*月(?:份)?"
            r"(?:\s*(?P<zd_day>[12]\d|3[01]|0?[1-9]|[一二三]?十[一二三四五六七八九]?"
            r"|[一二三四五六七八九])\s*[日号])?"
            r"|(?P<zd_only_year>[12]\d{3})\s*年(?!\s*(?:[0-9]|1[0-2]|[一二三四五六七八九十])\s*月)"
        ),
    })
    return _PATTERNS


def _number(text: str) -> int | None:
    text = " ".join(text.lower().split())
    if text.isdigit():
        return int(text)
    if text in _EN_COUNTS:
        return _EN_COUNTS[text]
    if "few" in text or "couple" in text or text == "several":
        return None  # a vague count: `_back` reads it as _FEW, widened
    return _zh_number(text)


_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}


def _zh_number(text: str) -> int | None:
    """十五 15, 二十 20, 一百 100; None for 几 ("a few") or a range (三四)."""
    total, digit = 0, None
    for char in text:
        if char == "十" or char == "百":
            total += (1 if digit is None else digit) * (10 if char == "十" else 100)
            digit = None
        elif char in _ZH_DIGITS and digit is None:
            digit = _ZH_DIGITS[char]
        else:
            return None
    value = total + (digit or 0)
    return value or None


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month_start(day: date, months: int = 0) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _month_window(first: date, phrase: str, relative: bool) -> Window:
    last = _month_start(first, 1) - timedelta(days=1)
    return Window(first, last, 7, phrase, relative, "month")


def _year_window(year: int, phrase: str, relative: bool) -> Window | None:
    if not 1 <= year <= 9999:
        return None
    return Window(date(year, 1, 1), date(year, 12, 31), 0, phrase, relative, "year")


def _back(count: int | None, unit: str, today: date, phrase: str) -> Window | None:
    """"N units ago" ("a few" when `count` is None): a window around that day."""
    vague = count is None
    n = _FEW if count is None else count
    if n <= 0 or n > 400:
        return None
    if unit in ("day", "天", "日"):
        spread = (n // 2 if vague else n // 7)
        centre = today - timedelta(days=n)
        return Window(centre - timedelta(days=spread), centre + timedelta(days=spread),
                      max(1, n // 4), phrase, True, "day")
    if unit in ("week", "周", "星期", "礼拜"):
        centre = today - timedelta(weeks=n)
        spread = 3 + (7 if vague else 0)
        return Window(centre - timedelta(days=spread), centre + timedelta(days=spread),
                      4, phrase, True, "day")
    if unit in ("month", "月"):
        if n > 36:
            return None
        first = _month_start(today, -n)
        window = _month_window(first, phrase, True)
        if vague:
            return Window(_month_start(today, -n - 1), _month_start(today, -n + 2)
                          - timedelta(days=1), 7, phrase, True, "month")
        return window
    if n > 100:
        return None
    if vague:
        return Window(date(today.year - n - 1, 1, 1), date(today.year - n + 1, 12, 31), 0,
                      phrase, True, "year")
    return _year_window(today.year - n, phrase, True)


def _on_calendar(make: Callable[..., Window | None], *given: Any) -> Window | None:
    """The window `make(*given)` reads a phrase as; None when it, its margin or the month
    after it (what `date_terms` and `any_stamp_within` read) falls off the calendar: asked
    as of a day near year 1 or 9999 (`--now`), "last month" may name days no date holds,
    and the phrase is then words, as a year past 9999 is (`_year_window`)."""
    try:
        window = make(*given)
        if window is not None:  # each raises for a day no date holds
            _month_start(window.end + timedelta(days=window.margin), 1)
            window.start - timedelta(days=window.margin)
    except (OverflowError, ValueError):
        return None
    return window


def _relative(text: str, today: date) -> list[tuple[tuple[int, int], Window]]:
    """Each relative phrase of `text` (English, then Chinese), with its window."""
    patterns = _patterns()
    out: list[tuple[tuple[int, int], Window]] = []
    lowered = text.lower()
    for match in _matches(patterns["en"], text, _near(lowered, _EN_ANCHORS, 40, 40)):
        window = _on_calendar(_english, match, today)
        if window is not None:
            out.append(((match.start(), match.end()), window))
    if not text.isascii():
        for match in _matches(patterns["zh"], text, _near(text, _ZH_ANCHORS, 12, 6)):
            if _closes_a_word(text, match.start(), match.group()):
                continue
            window = _on_calendar(_chinese, match, today)
            if window is not None:
                out.append(((match.start(), match.end()), window))
    return out


# Every phrase holds one of its pattern's anchors: a pattern is run only around them (found
# by `str.find`, in C), not tried at each character of a pasted page.
_EN_ANCHORS = ("ago", "yesterday", "today", "tonight", "last", "this", "past", "previous")
_ZH_ANCHORS = ("天", "周", "星期", "礼拜", "月", "年", "昨晚", "今晚", "今早")
_EN_DATE_ANCHORS = (*sorted(_MONTH_OF), "in 1", "in 2", "during", "since")
_ZH_DATE_ANCHORS = ("月", "年")


def _near(text: str, anchors: tuple[str, ...], before: int, after: int) -> list[tuple[int, int]]:
    """The stretches of `text` within `before`/`after` characters of an anchor, merged."""
    spans = []
    for anchor in anchors:
        at = text.find(anchor)
        while at >= 0:
            spans.append((max(0, at - before), at + len(anchor) + after))
            at = text.find(anchor, at + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _matches(
    pattern: re.Pattern[str], text: str, stretches: list[tuple[int, int]]
) -> list[re.Match[str]]:
    """The matches of `pattern` in those stretches of `text` (its look-behinds see before)."""
    out: list[re.Match[str]] = []
    for start, end in stretches:
        out.extend(pattern.finditer(text, start, min(end, len(text))))
    return out


def _english(match: re.Match[str], today: date) -> Window | None:
    phrase = match.group()
    groups = match.groupdict()
    if groups["back"]:
        return _back(_number(groups["count"]), groups["unit"].lower(), today, phrase)
    if groups["before_yesterday"]:
        day = today - timedelta(days=2)
        return Window(day, day, 1, phrase, True, "day")
    if groups["day"]:
        word = " ".join(groups["day"].lower().split())
        day = today - timedelta(days=1) if word in ("yesterday", "last night") else today
        return Window(day, day, 1, phrase, True, "day")
    if groups["rolling"]:
        unit = groups["rolling_unit"].lower()
        counted = groups["rolling_count"]
        n = 1 if counted is None else (_number(counted) or _FEW)
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
        return Window(today - timedelta(days=days), today, max(1, days // 7), phrase, True,
                      "day" if days <= 62 else "month")
    if groups["earlier"]:
        unit = groups["earlier_unit"].lower()
        if unit == "week":
            start = _monday(today)
        elif unit == "month":
            start = _month_start(today)
        else:
            start = date(today.year, 1, 1)
        end = today if phrase.lower().startswith("earlier") else (
            start + timedelta(days=6) if unit == "week" else
            _month_start(today, 1) - timedelta(days=1) if unit == "month" else
            date(today.year, 12, 31))
        return Window(start, end, 1, phrase, True, "day" if unit == "week" else "month")
    which = groups["which"].lower()
    unit = groups["calendar_unit"].lower()
    back = 0 if which == "this" else -1
    if unit in ("week", "weekend"):
        monday = _monday(today) + timedelta(weeks=back)
        if unit == "weekend":
            saturday = monday + timedelta(days=5)
            return Window(saturday, saturday + timedelta(days=1), 1, phrase, True, "day")
        return Window(monday, monday + timedelta(days=6), 3, phrase, True, "day")
    if unit == "month":
        return _month_window(_month_start(today, back), phrase, True)
    if unit == "year":
        return _year_window(today.year + back, phrase, True)
    if unit in _WEEKDAYS:
        index = _WEEKDAYS.index(unit)
        if back == 0:
            day = _monday(today) + timedelta(days=index)
        else:
            # The last such day before today ("last Friday" said on a Saturday: yesterday's
            # or the week before's: near either, so the margin reaches both).
            day = today - timedelta(days=(today.weekday() - index - 1) % 7 + 1)
        return Window(day, day, 1 if back == 0 else 7, phrase, True, "day")
    # "last March": the latest March before this month.
    number = _MONTH_OF[unit]
    year = today.year if (back == 0 or number < today.month) else today.year - 1
    return _month_window(date(year, number, 1), phrase, True)


def _chinese(match: re.Match[str], today: date) -> Window | None:
    phrase = match.group()
    groups = match.groupdict()
    if groups["zh_day"]:
        back = {"大前天": 3, "前天": 2, "昨天": 1, "昨晚": 1}.get(phrase, 0)
        day = today - timedelta(days=back)
        return Window(day, day, 1, phrase, True, "day")
    if groups["zh_back"]:
        unit = groups["zh_unit"]
        count_text = groups["zh_count"]
        count = None if "几" in count_text else _number(count_text)
        if count is None and "几" not in count_text:
            return None
        return _back(count, unit, today, phrase)
    if groups["zh_week"]:
        back = {"上上": -2, "上": -1}.get(groups["zh_week_which"], 0)
        monday = _monday(today) + timedelta(weeks=back)
        weekday = groups["zh_weekday"]
        if weekday == "末":
            saturday = monday + timedelta(days=5)
            return Window(saturday, saturday + timedelta(days=1), 1, phrase, True, "day")
        if weekday:
            day = monday + timedelta(days=6 if weekday in "日天" else "一二三四五六".index(weekday))
            return Window(day, day, 1, phrase, True, "day")
        return Window(monday, monday + timedelta(days=6), 3, phrase, True, "day")
    if groups["zh_month"]:
        back = {"上上": -2, "上": -1}.get(groups["zh_month_which"], 0)
        return _month_window(_month_start(today, back), phrase, True)
    if groups["zh_year"]:
        back = {"去年": -1, "前年": -2}.get(phrase, 0)
        return _year_window(today.year + back, phrase, True)
    if phrase == "这几天":
        return Window(today - timedelta(days=4), today, 2, phrase, True, "day")
    return Window(today - timedelta(days=6), today - timedelta(days=2), 2, phrase, True, "day")


# A phrase whose first character closes a word of its own: 马上周一 is "at once, Monday",
# 目前天气 "the weather now", 过去年份 "past years", 如今天气 "the weather nowadays".
_ZH_WORD_ENDINGS = frozenset(
    "马上 晚上 早上 以上 加上 之上 路上 身上 网上 线上 会上 手上 基本 版本 日本 成本 根本 "
    "书本 课本 脚本 样本 文本 资本 剧本 目前 当前 之前 以前 提前 眼前 面前 先前 从前 事前 "
    "跟前 空前 门前 生前 日前 如今 当今 现今 而今 古今 至今 迄今 过去 失去 回去 出去 进去 "
    "离去 死去 除去 这这".split()
)


def _closes_a_word(text: str, start: int, phrase: str) -> bool:
    return start > 0 and (text[start - 1] + phrase[0]) in _ZH_WORD_ENDINGS


def _absolute(text: str, today: date) -> list[tuple[tuple[int, int], Window]]:
    """Each date, month or year written out in `text`, with its window (kept lexical).

    A date written without its year ("between August 11 and August 15 2023") is of
    the one year the query writes, else the latest such day not after `today`.
    """
    patterns = _patterns()
    years = {found for found in patterns["year"].findall(text) if "1800" <= found <= "2099"}
    hint = int(years.pop()) if len(years) == 1 else None
    out: list[tuple[tuple[int, int], Window]] = []
    stretches = _near(text.lower(), _EN_DATE_ANCHORS, 16, 24)
    stretches += [(m.start(), m.end()) for m in patterns["iso_hint"].finditer(text)]
    for match in _matches(patterns["en_date"], text, sorted(stretches)):
        window = _on_calendar(_english_date, match, today, hint)
        if window is not None:
            out.append(((match.start(), match.end()), window))
    if not text.isascii():
        for match in _matches(patterns["zh_date"], text, _near(text, _ZH_DATE_ANCHORS, 10, 8)):
            window = _on_calendar(_chinese_date, match, today, hint)
            if window is not None:
                out.append(((match.start(), match.end()), window))
    return list(dict((span, (span, window)) for span, window in out).values())




def _latest_year(month: int, day: int, today: date) -> int:
    """The year of the latest such day not after `today` (a date written without its year)."""
    try:
        return today.year if date(today.year, month, day) <= today else today.year - 1
    except ValueError:
        return today.year - 1


def _day_window(year: int, month: int, day: int, phrase: str) -> Window | None:
    try:
        day_ = date(year, month, day)
    except ValueError:
        return None
    return Window(day_, day_, 3, phrase, False, "day")


_MAY_LEADS = ("in", "during", "since", "of", "by", "until", "early", "late", "mid")


def _english_date(match: re.Match[str], today: date, hint: int | None) -> Window | None:
    phrase = match.group()
    groups = match.groupdict()
    if groups["month_day"] or groups["day_month"]:
        month_word = groups["md_month"] or groups["dm_month"]
        day_text = groups["md_day"] or groups["dm_day"]
        year_text = groups["md_year"] or groups["dm_year"]
        if month_word.lower() == "may" and not year_text and groups["month_day"]:
            # "May 3" is a date; "may 3 of them" is not: a capital says which.
            if month_word != "May":
                return None
        month, day = _MONTH_OF[month_word.lower()], int(day_text)
        year = int(year_text) if year_text else hint or _latest_year(month, day, today)
        return _day_window(year, month, day, phrase)
    if groups["iso"]:
        return _day_window(int(groups["iso_year"]), int(groups["iso_month"]),
                           int(groups["iso_day"]), phrase)
    if groups["month_year"]:
        month_word = groups["my_month"]
        lead = (groups["my_lead"] or "").strip().lower()
        year_text = groups["my_year"]
        if month_word[0].islower() and not lead and not year_text:
            return None  # "march on", "we may go": a month name starts with a capital
        if month_word.lower() == "may" and lead not in _MAY_LEADS and not year_text:
            return None  # "May I ask", "They may": the verb
        if len(month_word) == 3 and month_word.lower() != "may" and not year_text and not lead:
            return None  # "Mar", "Dec" alone are too often other words
        month = _MONTH_OF[month_word.lower()]
        year = int(year_text) if year_text else hint or _latest_year(month, 1, today)
        return _month_window(date(year, month, 1), phrase, False)
    return _year_window(int(groups["year_value"]), phrase, False)


def _chinese_date(match: re.Match[str], today: date, hint: int | None) -> Window | None:
    phrase = match.group()
    groups = match.groupdict()
    if groups["zd_only_year"]:
        return _year_window(int(groups["zd_only_year"]), phrase, False)
    month = _zh_or_digits(groups["zd_month"])
    if month is None or not 1 <= month <= 12:
        return None
    day_text = groups["zd_day"]
    day = _zh_or_digits(day_text) if day_text else None
    if day_text and day is None:
        return None
    year_text = groups["zd_year"]
    year = int(year_text) if year_text else hint or _latest_year(month, day or 1, today)
    if day is not None:
        return _day_window(year, month, day, phrase)
    return _month_window(date(year, month, 1), phrase, False)


def _zh_or_digits(text: str) -> int | None:
    return int(text) if text.isdigit() else _zh_number(text)


# A folder of more memories is taken to have one dated in any window, unread: the pass
# over the column costs about 0.12 ms CPU per thousand memories.
MAX_STAMPS_READ = 20_000


def any_stamp_within(stamps: Sequence[str | None], time: TimeQuery) -> bool:
    """True when some `updated` stamp falls in or near one of the query's windows.

    ISO stamps compare as text: one pass over the column, no date parsed.
    """
    if len(stamps) > MAX_STAMPS_READ:
        return True
    for window in time.windows:
        low = (window.start - timedelta(days=window.margin)).isoformat()
        high = (window.end + timedelta(days=window.margin)).isoformat()
        if any(low <= stamp[:10] <= high for stamp in stamps if stamp):
            return True
    return False


def stamp_day(stamp: str | None) -> date | None:
    """The day of an `updated` stamp ("2026-11-24", "2026-11-24T18:00:00Z"), as written."""
    if not stamp or len(stamp) < 10:
        return None
    try:
        return date.fromisoformat(stamp[:10])
    except ValueError:
        return None


# What a memory's text must hold to be dated in a window: the index terms a written date
# gives (`tokens.tokenize("24 November 2026")` is "24", "novemb", "2026", and the pairs
# "24 novemb" and "novemb 2026" that `scoring.word_pairs` makes of them).
MAX_DAY_TERMS = 62


class DateTerms(NamedTuple):
    """A memory holding one of `terms`, and one of `confirm` when there are any, is dated
    at `closeness` to the window (1 inside, 0.5 near)."""

    terms: tuple[str, ...]
    confirm: tuple[str, ...]
    closeness: float


def date_terms(window: Window) -> list[DateTerms]:
    """The index terms that date a memory's text in `window` (inside, then near it)."""
    from .tokens import stem

    def day_pair(day: date) -> str:
        return f"{day.day} {stem(_MONTHS[day.month - 1])}"

    def month_pair(day: date) -> str:
        return f"{stem(_MONTHS[day.month - 1])} {day.year}"

    def days(start: date, end: date) -> list[date]:
        return [start + timedelta(days=i) for i in range((end - start).days + 1)]

    def months(start: date, end: date) -> tuple[str, ...]:
        found = dict.fromkeys(month_pair(day) for day in (start, end))
        first = _month_start(start)
        while first <= end:
            found[month_pair(first)] = None
            first = _month_start(first, 1)
        return tuple(found)

    if window.unit == "year":
        return [DateTerms((str(window.start.year),), (), 1.0)]
    margin = timedelta(days=window.margin)
    before = days(window.start - margin, window.start - timedelta(days=1)) if margin else []
    after = days(window.end + timedelta(days=1), window.end + margin) if margin else []
    near = before + after
    out = []
    if window.unit == "day" and (window.end - window.start).days < MAX_DAY_TERMS:
        inside = days(window.start, window.end)
        out.append(DateTerms(tuple(map(day_pair, inside)),
                             months(window.start, window.end), 1.0))
    else:
        out.append(DateTerms(months(window.start, window.end), (), 1.0))
    if near and len(near) <= MAX_DAY_TERMS:
        out.append(DateTerms(tuple(map(day_pair, near)), months(near[0], near[-1]), 0.5))
    return out


__all__ = [
    "MAX_STAMPS_READ", "MAX_TIME_CHARS", "DateTerms", "TimeQuery", "Window", "any_stamp_within",
    "date_terms", "read_time", "stamp_day",
]
