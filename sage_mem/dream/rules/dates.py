"""Relative dates made absolute, in English and Chinese, where they date a specific event.

"yesterday" in a memory is wrong from the next day on, and models are poor at
date arithmetic, so the date it meant is written beside it, keeping the
person's words readable: "Yesterday we shipped" → "Yesterday (2026-11-24) we
shipped", "上周开会" → "上周（2026年11月16日那一周）开会". A phrase already followed by
its date is left, so a second run adds nothing.

Only a phrase that dates a specific past or planned event changes. Left as
written (DESIGN §7.3a):

- standing rules, general statements, habits and conditions: a sentence that says
  never, always, do not, every, usually, sometimes, by default, if, in case, assuming,
  when…, most/many (不要、总是、每次、平时、有时、默认、如果、万一、若、除非、只要…),
  a **How to apply:** line, a phrase someone "says" (用户说下周);
- quoted speech ("…", “…”, 「…」, 《…》, a `>` quote), idioms ("tomorrow is
  another day", "that's so yesterday", 今日事今日毕) and a date word said twice in one sentence;
- names: a phrase in title case inside a sentence ("The Day After Tomorrow") or
  opening one ("Yesterday Once More is her song", "Today Was a Fairytale"), one
  the sentence calls a song, a film, a book ("Yesterday, by the Beatles, is…"),
  the literary 今日/明日/昨日 (明日方舟, 今日头条 are names far more often than dates);
- periods rather than days: "the last year", "the next week or two",
  "the last Friday of each month" (a determiner before, "of" or "or" after);
- code of any kind (`sage_mem.memory.markdown` says what is code), a link's target
  (`[[today]]`, `(today.md)`; a link's text or an image's alt text is left and listed:
  `[yesterday's notes](notes.md)`), a web or e-mail address, an HTML comment, and a word
  glued to a name (`$today`, `{{today}}`, `DATE=today`, `today.txt`);
- in a feedback memory (a standing rule by definition) any phrase pointing
  forward or to the present ("tomorrow", 下周, 本周) outside its **Why:** line;
- a habit: a possessive "yesterday's" in a paragraph that names one ("the nightly
  job collects yesterday's orders", 每天早上把昨天的工单汇总).

Two phrases joined ("today or tomorrow", "last week through this week", 这周和下周) are
each dated when both can be; when one cannot ("this week and next", "tomorrow or the day
after", "next Monday or Tuesday", 下周一到五, 明后天), the whole is left and listed.

When unsure — words reported from another day ("Yesterday he promised it for
tomorrow", 昨天他答应明天交付), "next Friday" said on a Wednesday (this week's or the next?),
"last Tuesday" said on a Friday, "this Monday" once Monday has passed, "next
Monday" or "last week" said on a Sunday (the first day of the week for many
English speakers), a count from another event ("two weeks later", 上线三天后, a count
forward after a day the sentence names: 下个月15号开始冻结，两周后解冻), a phrase naming a
day in a sentence that reads as a rule ("Since last Friday the suite usually fails"),
a possessive that may be a habit (the memory names one elsewhere; "the export
collects yesterday's orders") — the phrase is left and listed in the report, every
one of them.

The anchor is the day the text was written, on the writer's clock: a time
with an offset (`2026-11-26T01:40:00+08:00`) is that offset's day, a UTC time
(`…Z`, as the tool writes it) the day on this machine's clock, a time with no
offset at all (written by hand) its day when that is the same on the writer's
clock and read as UTC (else it is not known), a bare date that day, and a bare
`created` date beside a UTC `updated` is the writer's own day when it is not the
UTC one (a note saved at 01:40 in Beijing: `created:
2026-11-26`, `updated: 2026-11-25T17:40:00Z`). A memory only tells it for sure
when `created` and `updated` can fall on the same day, or when only one of them
(or Claude Code's `modified`) is known. A memory edited on a
later day might have gained its "yesterday" on either day: it is left alone
and listed, as is one with no date at all.

Weeks start on Monday. "next Monday" / "下周一" is the Monday of next week,
"last Friday" / "上周五" the Friday of the week before, "this Friday" / "这周五"
the Friday of the anchor's week.

Why one module: it is one rule. Which phrases mean a date (the English and
Chinese tables and their patterns), where such a phrase dates an event and not
a habit, a quotation or an address (the structural checks), and how the date
is written beside it (the substitution) are tuned against the same sentences
(tests/test_dream_dates.py); the tables and their comments are most of it.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any

from ...memory.markdown import MARKDOWN_LINK, WIKI_LINK, code_ranges, html_comments
from ...memory.value import Memory, parse_moment
from ..rewording import HAN
from .context import RuleContext

NAME = "relative-dates"
_EN_MONTHS = (
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_WEEKDAYS = "一二三四五六日"
# Number words of both languages, a line a number: English as lowercased, Chinese numerals
# (a count such as 十五 is read digit by digit, `_zh_count`).
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "一": 1,
    "two": 2, "两": 2, "二": 2,
    "three": 3, "三": 3,
    "four": 4, "四": 4,
    "five": 5, "五": 5,
    "six": 6, "六": 6,
    "seven": 7, "七": 7,
    "eight": 8, "八": 8,
    "nine": 9, "九": 9,
    "ten": 10, "十": 10,
    "eleven": 11,
    "twelve": 12,
}
# The phrases that name a day by its distance from the anchor, a line a day: English as
# lowercased with single spaces (`_english`), Chinese as written.
_DAYS_FROM_ANCHOR = {
    "大前天": -3,
    "the day before yesterday": -2, "前天": -2,
    "yesterday": -1, "last night": -1, "昨天": -1, "昨晚": -1,
    "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
    "今天": 0, "今晚": 0, "今早": 0,
    "tomorrow": 1, "明天": 1,
    "the day after tomorrow": 2, "后天": 2,
    "大后天": 3,
}


# what each phrase means

AMBIGUOUS = "ambiguous"


def _en_day(day: date) -> str:
    return day.isoformat()


def _zh_day(day: date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _english(word: str, anchor: date) -> str | None:
    """The date an English phrase means, as written beside it; AMBIGUOUS; None for no date."""
    word = " ".join(word.lower().split())
    if word in _DAYS_FROM_ANCHOR:
        return _en_day(anchor + timedelta(days=_DAYS_FROM_ANCHOR[word]))
    if word in ("a few days ago", "a couple of days ago"):
        return f"a few days before {_en_day(anchor)}"
    # On a Sunday, the last day of a week that, for many English speakers, is the first,
    # "this week", "next week", "last week" may each mean either of two weeks.
    sunday = anchor.weekday() == 6
    if word in ("earlier this week", "later this week"):
        return AMBIGUOUS if sunday else f"week of {_en_day(_monday(anchor))}"
    parts = word.split()
    if parts[-1] in ("later", "after", "afterwards", "earlier", "before"):
        return AMBIGUOUS  # "two weeks later": after something else, which only the text knows
    if parts[-1] == "ago" or parts[0] == "in":
        count_word = parts[1] if parts[0] == "in" else parts[0]
        count = _NUMBER_WORDS.get(count_word) or (int(count_word) if count_word.isdigit() else None)
        if count is None or count > 366:
            return None
        sign = -1 if parts[-1] == "ago" else 1
        unit = parts[-2] if parts[-1] == "ago" else parts[-1]
        if unit.startswith("day"):
            return _en_day(anchor + timedelta(days=sign * count))
        if unit.startswith("week"):
            return f"around {_en_day(anchor + timedelta(weeks=sign * count))}"
        if unit.startswith("month") and count <= 24:
            first = _add_months(anchor, sign * count)
            return f"around {_EN_MONTHS[first.month]} {first.year}"
        return None
    which, unit = parts[0], parts[1]
    offset = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        if sunday:
            return AMBIGUOUS
        return f"week of {_en_day(_monday(anchor) + timedelta(weeks=offset))}"
    if unit == "weekend":
        saturday = _monday(anchor) + timedelta(weeks=offset, days=5)
        return f"{_en_day(saturday)} to {_en_day(saturday + timedelta(days=1))}"
    if unit == "month":
        first = _add_months(anchor, offset)
        return f"{_EN_MONTHS[first.month]} {first.year}"
    if unit == "quarter":
        year, quarter = _quarter(anchor, offset)
        return f"Q{quarter} {year}"
    if unit == "year":
        return str(anchor.year + offset)
    if unit in _EN_WEEKDAYS:
        index = _EN_WEEKDAYS.index(unit)
        # "next Friday" on a Wednesday may be this week's or the next; "last Tuesday" on a
        # Friday this week's or the last: a careful reader asks, so the rule does not guess.
        # So are "this Monday" once Monday has passed (the one just gone, or the coming
        # one?) and "next Monday" said on a Sunday, the last day of a week that, for many,
        # is the first.
        today = anchor.weekday()
        if (
            (offset == 1 and (index > today or sunday))
            or (offset == -1 and index < today)
            or (offset == 0 and index < today)
        ):
            return AMBIGUOUS
        return _en_day(_monday(anchor) + timedelta(weeks=offset, days=index))
    return None


def _quarter(anchor: date, offset: int) -> tuple[int, int]:
    """(year, quarter 1-4) of the quarter `offset` quarters from the anchor's."""
    index = anchor.year * 4 + (anchor.month - 1) // 3 + offset
    return index // 4, index % 4 + 1


def _chinese(word: str, anchor: date) -> str | None:
    """The date a Chinese phrase means, as written beside it; None for no date."""
    if word in _DAYS_FROM_ANCHOR:
        return _zh_day(anchor + timedelta(days=_DAYS_FROM_ANCHOR[word]))
    if word in ("前几天", "前两天"):
        return f"{_zh_day(anchor)}前几天"
    years = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
    if word in years:
        return f"{anchor.year + years[word]}年"
    counted = re.fullmatch(
        r"(\d+|[一两二三四五六七八九十百]+)(天|周|个星期|星期|个月)(前|后|以前|以后|之前|之后)",
        word,
    )
    if counted:
        number, unit, direction = counted.groups()
        count = int(number) if number.isdigit() else _zh_count(number)
        if count is None or count > 366:
            return None
        sign = -1 if direction.endswith("前") else 1
        if unit == "天":
            return _zh_day(anchor + timedelta(days=sign * count))
        if unit == "个月":
            first = _add_months(anchor, sign * count)
            return f"{first.year}年{first.month}月前后"
        return _zh_day(anchor + timedelta(weeks=sign * count)) + "前后"
    offsets = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
    quarter = re.fullmatch(r"(上上|上|这|本|下下|下)(?:个)?季度", word)
    if quarter:
        year, number = _quarter(anchor, offsets[quarter.group(1)])
        return f"{year}年第{'一二三四'[number - 1]}季度"
    month = re.fullmatch(r"(上上|上|这|本|下下|下)(?:个)?月([初中底末])?", word)
    if month:
        first = _add_months(anchor, offsets[month.group(1)])
        return f"{first.year}年{first.month}月{month.group(2) or ''}"
    weekend = re.fullmatch(r"(上上|上|这|本|下下|下)(?:个)?(?:周|星期|礼拜)末", word)
    if weekend:
        saturday = _monday(anchor) + timedelta(weeks=offsets[weekend.group(1)], days=5)
        sunday = saturday + timedelta(days=1)
        end = f"{sunday.day}日" if sunday.month == saturday.month else _zh_day(sunday)
        return f"{_zh_day(saturday)}至{end}"
    week = re.fullmatch(
        r"(上上|上|这|本|下下|下)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])?", word
    )
    if week:
        monday = _monday(anchor) + timedelta(weeks=offsets[week.group(1)])
        if week.group(2):
            index = 6 if week.group(2) in "日天" else _ZH_WEEKDAYS.index(week.group(2))
            return _zh_day(monday + timedelta(days=index))
        return f"{_zh_day(monday)}那一周"
    return None


def _zh_count(numerals: str) -> int | None:
    """十五 → 15, 二十一 → 21, 一百二十 → 120; None for a range (三四, 两三: "three or four")."""
    total, digit = 0, None
    for char in numerals:
        if char in "十百":
            total += (1 if digit is None else digit) * (10 if char == "十" else 100)
            digit = None
        elif digit is not None:
            return None
        else:
            digit = _NUMBER_WORDS[char]
    return total + (digit or 0)


_EN_COUNT = r"(?:\d{1,3}|" + "|".join(word for word in _NUMBER_WORDS if word.isascii()) + ")"
_EN_PATTERN = re.compile(
    r"\b(?:the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow"
    r"|a\s+(?:few|couple\s+of)\s+days\s+ago|(?:earlier|later)\s+this\s+week"
    r"|last\s+night|this\s+(?:morning|afternoon|evening)|yesterday|today|tonight|tomorrow"
    rf"|{_EN_COUNT}\s+(?:days?|weeks?|months?)\s+ago|in\s+{_EN_COUNT}\s+(?:days?|weeks?|months?)"
    rf"|{_EN_COUNT}\s+(?:days?|weeks?|months?)\s+(?:later|after(?:wards)?|earlier|before)"
    r"|(?:last|this|next)\s+(?:weekend|week|month|quarter|year"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.IGNORECASE,
)
_ZH_PATTERN = re.compile(
    r"大前天|大后天|前天|昨天|昨晚|今天|今晚|今早|明天|后天|前几天|前两天|前年|去年|今年|明年|后年"
    r"|(?:\d{1,3}|[一两二三四五六七八九十百]+)(?:天|周|个星期|星期|个月)(?:以前|以后|之前|之后|前|后)"
    r"|(?:上上|下下|上|这|本|下)(?:个)?季度"
    r"|(?:上上|下下|上|这|本|下)(?:个)?月[初中底末]?"
    r"|(?:上上|下下|上|这|本|下)(?:个)?(?:周|星期|礼拜)[一二三四五六日天末]?"
)
# Words that overlap a pattern but are no date: 先天后天 ("innate and acquired"), 这个月饼
# ("this mooncake"), 周报 ("weekly report"), 周期 ("cycle").
_ZH_NOT_DATES = re.compile(
    r"先天后天|后天性|月饼|月份|月亮|月球|月光|月薪|月报|月度|周年|周边|周期|周围|周到"
    r"|周刊|周转|周报|周会|周岁|前天晚上好"
    # 后天 as "acquired" (后天努力, 后天养成的), 今天的 as "nowadays" (今天的年轻人, 今天的社会)
    r"|后天(?:努力|培养|养成|形成|习得|因素|环境|训练|获得)"
    r"|今天的(?:社会|世界|时代|中国|年轻人|人们|孩子)"
)
# 上/下/这/本 closing a word of their own: 马上周一 is "at once, Monday", 看一下周报 "glance at the
# weekly report", 版本周期 "release cycle". So do 前/后/今/去: 目前天气 is "the weather now",
# 然后天黑了 "then it got dark", 如今年轻人 "young people nowadays", 过去年份 "past years" — no
# 前天, 后天, 今年 or 去年 in them. (至今/迄今 are left out: 截至今天 is "as of today".)
_ZH_WORD_ENDINGS = frozenset(
    "马上 晚上 早上 以上 加上 之上 路上 身上 网上 线上 会上 手上 一下 以下 之下 线下 "
    "手下 地下 底下 私下 眼下 当下 如下 留下 剩下 放下 基本 版本 日本 成本 根本 书本 "
    "课本 脚本 样本 文本 资本 账本 剧本 "
    "目前 当前 之前 以前 提前 眼前 面前 先前 从前 事前 跟前 空前 门前 生前 日前 "
    "然后 之后 以后 最后 随后 此后 其后 今后 往后 背后 落后 午后 饭后 事后 过后 稍后 日后 "
    "善后 而后 先后 "
    "如今 当今 现今 而今 古今 "
    "过去 失去 回去 出去 进去 离去 死去 除去".split()
)

# A sentence that states a rule or a general truth dates nothing.
# ("The fix should land tomorrow" and "the report must be out by tomorrow" are plans: only a
# negated modal makes a rule.)
_EN_GENERIC = re.compile(
    r"\b(?:never|always|don'?t|do\s+not|does\s+not|doesn'?t|must\s+not|mustn'?t"
    r"|should\s+not|shouldn'?t|cannot|can'?t|avoid|whenever|each|every|usually|typically"
    r"|generally|often|tends?\s+to|if|unless|most|many|nowadays|these\s+days|as\s+a\s+rule"
    r"|per|any\s+time|anytime|in\s+case|assuming|supposing|sometimes|normally|rarely"
    r"|seldom|occasionally|frequently|regularly|in\s+general|by\s+default|more\s+than\s+ever)\b"
    r"|^\W*(?:when|should|provided|suppose)\b|,\s*provided\b",
    re.IGNORECASE,
)
_ZH_GENERIC = re.compile(
    r"不要|(?<![特区分级类告识个差性])别(?![人的处墅名])|不能|不得|禁止|总是|永远|每次|每天|每周|每个"
    r"|每月|每逢|如果|假如|要是|一旦|凡是|通常|一般|经常|往往|务必|千万|常说|不许|切勿"
    r"|万一|倘若|假设|假使|若(?!干)|的话|除非|只要|每当|平时|平常|常常|有时(?!间)|偶尔|从不|从来"
    r"|向来|一向|默认"
)
_EN_IDIOMS = re.compile(
    r"tomorrow\s+is\s+another\s+day|here\s+today|gone\s+tomorrow|born\s+yesterday"
    r"|yesterday'?s\s+news|live\s+for\s+today|today'?s\s+world|(?:no|never)\s+time\s+like"
    r"|no\s+tomorrow|tomorrow'?s\s+problem|tomorrow\s+is\s+a\s+new\s+day"
    r"|tomorrow[’']s\s+(?:world|leaders|technology|generation|jobs)"
    r"|(?:world|leaders|technology|generation|jobs|city|cities|kitchen|office)\s+of\s+(?:today|tomorrow)\b",
    re.IGNORECASE,
)
_ZH_IDIOMS = re.compile(
    r"明天会更好|今日事今日毕|明日复明日|今朝有酒|活在今天|今天的事今天|又是新的一天|今天不知明天事"
)
_MENTION_EN = re.compile(r"\b(?:says?|said|write|writes|wrote|mentions?|means?|word)\s*$", re.I)
_MENTION_ZH = re.compile(r"(?:说|讲|写|提到)[：:，, ]?$")
_QUOTES = (("“", "”"), ("「", "」"), ("『", "』"), ("《", "》"), ("‘", "’"))
_SENTENCE_BREAK = re.compile(r"[.!?。！？;；\n]")
# A date written beside the phrase already, by a person or an earlier run: "(2026-11-26)",
# "(Nov 26)", "(Thursday)", "（周四）", "(the 26th)", ", Nov 26", ", Thursday,", "，也就是周四".
_EN_MONTH_DAY = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s*\d"
_EN_WEEKDAY = (
    r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
    r"|(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\.?(?=\s*[)）,]))"
)
_ALREADY = re.compile(
    r"\s?[(（]\s*(?:around |week of |a few days |\d|the \d|Q[1-4]\b"
    rf"|{_EN_MONTH_DAY}|{_EN_WEEKDAY}|周[一二三四五六日天]|星期|礼拜)"
    rf"|,\s*(?:on\s+)?(?:{_EN_MONTH_DAY}|{_EN_WEEKDAY}|the \d)"
    r"|[，,]\s*(?:也就是|即|就是)?\s*(?:周[一二三四五六日天]|星期|礼拜|\d{1,2}月\d)",
    re.IGNORECASE,
)


# Text inside a sentence that is no prose: a link's target, a web or e-mail address, an
# HTML comment. Rewriting a phrase in it would break it ("[[today]]", "?day=tomorrow").
# An address's user starts where a run of its characters starts (the leftmost start the
# scan would take anyway): tried at every character of a long run, each try reading to the
# run's end, a line of 上周上周… (CJK characters are word characters) took quadratic time.
_ADDRESSES = re.compile(
    r"<[A-Za-z][A-Za-z0-9+.-]*:[^<>\s]*>"
    r"|\b[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'，。；！？、）】」』]+|\bwww\.[^\s<>\"'，。；！？、）】」』]+"
    r"|(?<![\w.+-])[\w.+-]++@[\w-]+(?:\.[\w-]+)+",
)


def _not_prose(segment: str) -> list[tuple[int, int]]:
    """(start, end) of each link target, address or comment in `segment`."""
    found = [(m.start(), m.end()) for m in WIKI_LINK.finditer(segment)]
    found += [(m.start("destination"), m.end()) for m in MARKDOWN_LINK.finditer(segment)]
    found += [(m.start(), m.end()) for m in _ADDRESSES.finditer(segment)]
    found += [(m.start(), m.end()) for m in html_comments(segment)]
    return found


# A sentence longer than this is read no further: each of its phrases would be read against
# the whole of it, so a long run of dates on one line would take time quadratic in its
# length (issue 29: a 100 KB line of "yesterday" ran for minutes). Its phrases are left
# and listed instead. Prose sentences run to a few hundred characters.
LONGEST_SENTENCE = 2_000
_QUOTE_MARKS = "\"'" + "".join(o + c for o, c in _QUOTES)


class _Layout:
    """Where a segment's sentences, lines and quote marks are, found once: each phrase looks
    its sentence up by bisection instead of scanning the segment around it."""

    def __init__(self, segment: str) -> None:
        self.segment = segment
        self.breaks = [m.start() for m in _SENTENCE_BREAK.finditer(segment)]
        self.newlines = [m.start() for m in re.finditer("\n", segment)]
        self.blank_lines = [m.start() for m in re.finditer("(?=\n\n)", segment)]
        self.marks: dict[str, list[int]] = {c: [] for c in _QUOTE_MARKS}
        for m in re.finditer(f"[{re.escape(_QUOTE_MARKS)}]", segment):
            self.marks[m.group(0)].append(m.start())
        # what is found once per sentence or paragraph, by its (start, end)
        self.per_span: dict[tuple[Any, ...], Any] = {}

    def sentence_span(self, start: int, end: int) -> tuple[int, int]:
        """(start, end) of the sentence around segment[start:end]: between breaks."""
        return self._between(self.breaks, start, end)

    def line_span(self, start: int, end: int) -> tuple[int, int]:
        """(start, end) of the line segment[start:end] is on (`end` past it: from `end`)."""
        return self._between(self.newlines, start, end)

    def _between(self, bounds: list[int], start: int, end: int) -> tuple[int, int]:
        """(start, end) around segment[start:end] from the bound before `start` (sorted
        positions, each a character that ends a stretch) to the first at or past `end`."""
        before, after = bisect_left(bounds, start), bisect_left(bounds, end)
        return (bounds[before - 1] + 1 if before else 0,
                bounds[after] if after < len(bounds) else len(self.segment))

    def count(self, mark: str, start: int, end: int) -> int:
        """How many `mark` are in segment[start:end]."""
        found = self.marks[mark]
        return bisect_left(found, end) - bisect_left(found, start)

    def last(self, mark: str, start: int, end: int) -> int:
        """Where the last `mark` in segment[start:end] is, -1 when none is."""
        found = self.marks[mark]
        index = bisect_left(found, end) - 1
        return found[index] if index >= 0 and found[index] >= start else -1


@lru_cache(maxsize=8)
def _layout(segment: str) -> _Layout:
    return _Layout(segment)


def _too_long(segment: str, start: int, end: int) -> bool:
    """Whether the sentence around segment[start:end] is over LONGEST_SENTENCE."""
    head, tail = _layout(segment).sentence_span(start, end)
    return tail - head > LONGEST_SENTENCE


def _sentence(segment: str, start: int, end: int) -> tuple[str, str]:
    """(the sentence before the phrase, the phrase's whole sentence)."""
    head, tail = _layout(segment).sentence_span(start, end)
    return segment[head:start], segment[head:tail]


def _per_sentence(segment: str, start: int, end: int, key: str, find: Callable[[str], Any]) -> Any:
    """find(the sentence around segment[start:end]), found once for each sentence."""
    layout = _layout(segment)
    head, tail = layout.sentence_span(start, end)
    if (key, head, tail) not in layout.per_span:
        layout.per_span[key, head, tail] = find(segment[head:tail])
    return layout.per_span[key, head, tail]


_BLOCKQUOTE = re.compile(r"\s*>")
_OPENS_SINGLE = re.compile(r"[\s(:—–-]")


def _quoted(segment: str, start: int) -> bool:
    layout = _layout(segment)
    line_start, _ = layout.line_span(start, start)
    if _BLOCKQUOTE.match(segment, line_start, start):
        return True
    if layout.count('"', line_start, start) % 2 == 1:
        return True
    # 'see you tomorrow' (an apostrophe, as in "user's", opens none): the last ' before
    # the phrase opens a quote when it starts the line or follows a space or a bracket
    quote = layout.last("'", line_start, start)
    if quote >= 0 and quote + 1 < start and re.match(r"\w", segment[quote + 1]) and (
        quote == line_start or _OPENS_SINGLE.match(segment[quote - 1])
    ):
        return True
    return any(
        layout.count(o, line_start, start) > layout.count(c, line_start, start)
        for o, c in _QUOTES
    )


_PAST = re.compile(r"yesterday|last|ago|earlier|before|昨|前|上|去年", re.IGNORECASE)
_WHY_LINE = re.compile(r"\W*(?:why|原因|为什么)\W", re.IGNORECASE)


_NOT_AN_EVENT, _IN_A_RULE = "no event", "in a rule"
_HOW_TO_APPLY = re.compile(r"\W*(?:how to apply|怎么用|如何应用)", re.IGNORECASE)


def _not_an_event(
    segment: str, start: int, end: int, chinese: bool, rules_only: bool = False,
    habits: bool = False,
) -> str:
    """Why the phrase at segment[start:end] is no date of a specific event; "" when it is one.

    `_IN_A_RULE`: the sentence reads as a rule, a general statement or a condition, so
    the phrase is left; one that names a particular day or period ("last Friday",
    "next week", 上周三) may still date an event there, so it is listed as well.
    `_NOT_AN_EVENT`: a quote, an idiom, a title, a period, a habit ("the nightly job
    collects yesterday's orders"): left, nothing to list.

    `rules_only`: the text is a standing rule (a feedback memory), where "tomorrow",
    "next week", 下周 speak of any day; only a **Why:** line tells what happened, and
    only a phrase pointing back ("yesterday", 上周) can date an incident elsewhere.
    """
    lead, sentence = _sentence(segment, start, end)
    line_start, line_end = _layout(segment).line_span(start, end)
    rule = False
    if rules_only and not _WHY_LINE.match(segment, line_start, line_end) and not _PAST.search(
        segment[start:end]
    ):
        rule = True
    if _quoted(segment, start):
        return _NOT_AN_EVENT
    if _habitual(segment, start, end, chinese):
        return _NOT_AN_EVENT
    if habits and chinese and _CJK_NEXT.match(segment, end):
        # Chinese drops the 的 of a possessive (下周计划, 昨天数据: next week's plan,
        # yesterday's data): in a memory that names a habit (周报每周五发), maybe every
        # week's. Left and listed, as "next week's plan" is.
        rule = True
    if _POSSESSIVE.match(segment, end) and (
        habits or (not chinese and _PRESENT_VERB.search(lead))
    ):
        # "The export job collects yesterday's orders" under "Nightly order export": maybe
        # every day's yesterday, maybe one day's. Left and listed.
        rule = True
    if _HOW_TO_APPLY.match(segment, line_start, line_end):
        rule = True
    generic = _ZH_GENERIC if chinese else _EN_GENERIC
    if _per_sentence(segment, start, end, f"generic {chinese}", generic.search):
        rule = True
    if _structural(segment, start, end, chinese, lead, sentence):
        return _NOT_AN_EVENT
    return _IN_A_RULE if rule else ""


def _structural(
    segment: str, start: int, end: int, chinese: bool, lead: str, sentence: str
) -> bool:
    """True when the phrase is an idiom, a title, a word mentioned, a period, a range."""
    if _per_sentence(
        segment, start, end, "idioms",
        lambda text: bool(_EN_IDIOMS.search(text) or _ZH_IDIOMS.search(text)),
    ):
        return True
    if (_MENTION_ZH if chinese else _MENTION_EN).search(lead):
        return True
    word = segment[start:end]
    pattern = _ZH_PATTERN if chinese else _EN_PATTERN
    said = _per_sentence(
        segment, start, end, f"phrases {chinese}",
        lambda text: Counter(m.group(0).lower() for m in pattern.finditer(text)),
    )
    if said[word.lower()] > 1:
        return True  # "今日事今日毕", "tomorrow and tomorrow and tomorrow"
    if chinese:
        # a song, a film, a book named without 《》: 今天你要嫁给我是她最喜欢的歌,
        # 最喜欢的歌是今天你要嫁给我, 今天是个好日子这首歌
        tail = sentence[len(lead) + len(word) :]
        return bool(
            _ZH_WORK_BEFORE.search(lead)
            or (not lead.strip() and _ZH_WORK_AFTER.match(tail))
            or _ZH_THIS_WORK.match(tail)
        )
    if (
        _SO_IDIOM.search(lead)
        and (_SO_IDIOM_COPULA.search(lead) or _CLAUSE_END.match(segment, end))
        and _PAST.match(word)
    ):
        return True  # "that's so yesterday", "flash is so last year": outdated, no day
    if re.search(rf"\b{_EN_COUNT}\s*(?:or|to|-|–)\s*$", lead, re.IGNORECASE):
        return True  # "two or three days ago", "5 to 7 days ago": a range, not a day
    if _OF_NEXT.match(segment, end) or (
        _OR_NEXT.match(segment, end) and not _joined_date(segment, start, end, chinese)
    ):
        return True  # "the last Friday of each month", "the next week or two"
    previous = lead.rstrip().rsplit(None, 1)[-1].lower() if lead.strip() else ""
    if previous in ("the", "a", "that", "this", "over", "past") and not word.lower().startswith(
        "the"
    ):
        return True  # "over the last year", "the next week": a period, not a day
    words = word.split()
    capitals = [w for w in words if w[:1].isupper() and w.lower() not in _EN_WEEKDAYS]
    at_start = not lead.strip() or bool(re.search(r"[:*(\-–—]\s*$", lead))
    if len(capitals) > 1 or (capitals and not at_start and words[0] in capitals):
        return True  # a title: "The Day After Tomorrow", a song "Yesterday"
    if at_start and words[0] in capitals:
        after = _TITLE_CASE_NEXT.match(segment, end)
        if after and (after.group(1) or after.group(2).lower() in _TITLE_WORDS):
            return True  # "Yesterday Once More is her song", "Today Was a Fairytale"
        if _NAMES_A_WORK.search(sentence[len(lead) :]):
            return True  # "Yesterday, by the Beatles, is her favourite song"
    return False


_OF_NEXT = re.compile(r"\s*of\b", re.IGNORECASE)
_OR_NEXT = re.compile(r"\s*or\b", re.IGNORECASE)


# "so yesterday", "so last year" (outdated): "so" right before a past phrase that ends its
# clause or follows a verb of being ("that's so yesterday", "is so last year, we moved on").
# "so" as a conjunction ("it passed, so yesterday we shipped") is followed by the clause it
# opens.
_SO_IDIOM = re.compile(r"\bso+\s+$", re.IGNORECASE)
_SO_IDIOM_COPULA = re.compile(
    r"(?:\b(?:is|was|are|were|be|been|being|seems?|seemed|looks?|looked|feels?|felt|sounds?"
    r"|sounded|becomes?|became|gets?|got)|['’]s|['’]re)"
    r"\s+(?:(?:just|totally|really|very|like|already|now|all)\s+){0,2}so+\s+$",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[ \t]*(?:[.!?,;:)—–…]|$|\n|now\b|anyway\b)", re.IGNORECASE)


_ZH_WORK = r"(?:歌曲|歌|电影|影片|书|小说|专辑|电视剧|剧|节目|游戏|动画|综艺)"
_ZH_WORK_BEFORE = re.compile(rf"{_ZH_WORK}名?(?:是|叫做|叫)\s*$")
_ZH_WORK_AFTER = re.compile(rf"[^，,；;]*?(?:是|为)[^，,。；;]{{0,8}}?{_ZH_WORK}")
_ZH_THIS_WORK = re.compile(rf"[^，,。；;]*?(?:这|那)(?:首|部|本|张|出|个){_ZH_WORK}")


# A capitalised date word that starts a sentence opens a title when the word after it is one
# no sentence capitalises but a title does ("Yesterday Once More", "Yesterday's Gone",
# "Today I Learned"), not a name ("Yesterday Alice shipped it"); or when the sentence says
# the phrase is a song, a film, a book.
_TITLE_CASE_NEXT = re.compile(r"(?:['’]s)?[ \t]+(?:I[ \t]+([A-Z])|([A-Z][a-z]*)\b)")
_TITLE_WORDS = frozenset(
    "once more was is are were will would be been never ever again only gone and or of the "
    "an in on to my your our his her their me you we she he they it not no all come comes "
    "came die dies died".split()
)
_NAMES_A_WORK = re.compile(
    r"^[^.!?;]*?\b(?:is|was|are|were)\s+(?:[\w’'-]+\s+){0,3}?(?:songs?|films?"
    r"|movies?|books?|novels?|albums?|tracks?|tunes?|singles?|shows?|series|podcasts?"
    r"|plays?|musicals?|poems?|episodes?|games?)\b",
    re.IGNORECASE,
)


# A habit: "the nightly job collects yesterday's orders", 每天凌晨汇总昨天的订单 — "yesterday's"
# is every day's yesterday. A possessive ("yesterday's", 昨天的) with a marker of a habit
# anywhere in its paragraph (the job is often named in the sentence before).
_EN_HABIT = re.compile(
    r"\b(?:nightly|(?:daily|hourly)\s+(?:jobs?|tasks?|exports?|imports?|digests?|batch(?:es)?"
    r"|runs?|backups?|syncs?|emails?|e-mails?)|every\s+(?:night|morning|evening|day|hour|weekday|run)"
    r"|each\s+(?:night|morning|evening|day|run)|cron(?:\s*job|tab)?|scheduled\s+(?:job|task)"
    r"|(?:runs|run)\s+at\s+\d{1,2}(?::\d\d)?)\b",
    re.IGNORECASE,
)
_ZH_HABIT = re.compile(r"每天|每晚|每日|每夜|每早|每小时|每周|定时|定期|例行|夜间任务|凌晨任务")
_POSSESSIVE = re.compile(r"(?:['’]s|的)")
_CJK_NEXT = re.compile(f"[{HAN}]")

# A present-tense verb right before a possessive ("collects yesterday's orders") may say a
# habit even where none is named.
_PRESENT_VERB = re.compile(
    r"\b(?!(?:is|was|has|as|its|this|his|us|yes|does|plus|thus|across|less|unless|news)\b)"
    r"[a-z]+[^s]s\s+$"
)


def _habitual(segment: str, start: int, end: int, chinese: bool) -> bool:
    """True for a possessive phrase in a paragraph that names a habit (see above)."""
    # Only the possessive: "the nightly build broke yesterday" is one event.
    if not _POSSESSIVE.match(segment, end):
        return False
    habit = _ZH_HABIT if chinese else _EN_HABIT
    # a paragraph is read once, not once for each of its phrases
    layout = _layout(segment)
    before = bisect_right(layout.blank_lines, start - 2)  # segment.rfind("\n\n", 0, start)
    head = layout.blank_lines[before - 1] if before else -1
    after = bisect_left(layout.blank_lines, end)  # segment.find("\n\n", end)
    tail = layout.blank_lines[after] if after < len(layout.blank_lines) else -1
    key = ("habit", chinese, head, tail)
    if key not in layout.per_span:
        layout.per_span[key] = bool(
            habit.search(segment[head + 1 : tail if tail >= 0 else len(segment)])
        )
    return bool(layout.per_span[key])


# A phrase of a rule's sentence that names a particular day or period may still date an
# event ("the notes from last Friday list every change"); "tomorrow" in "do not promise a
# fix for tomorrow" speaks of any day.
_ANY_DAY = frozenset(
    "today tonight tomorrow this morning this afternoon this evening "
    "今天 今晚 今早 明天".split(" ")
)


def _names_a_day(word: str, chinese: bool) -> bool:
    word = " ".join(word.lower().split())
    if chinese:
        return word not in _ANY_DAY
    return word not in _ANY_DAY and not word.startswith(("this morning", "this afternoon",
                                                          "this evening"))


def absolutize(
    text: str,
    anchor: date | None,
    unsure: list[str] | None = None,
    *,
    rules_only: bool = False,
    habits: bool = False,
    too_long: list[str] | None = None,
    coded: frozenset[str] = frozenset(),
    reasons: dict[str, str] | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """`text` with the date of each event phrase written beside it, and the (old, new) pairs.

    A phrase under a dated heading or on a dated line ("## 2026-11-18", "- 2026-11-18:")
    counts from that date, the rest from `anchor` (None: not known). Phrases left
    because the date they mean is ambiguous or not known are added to `unsure`;
    `rules_only` reads the text as a standing rule (see `_not_an_event`); `habits`: the
    memory names a habit ("nightly", 每天), so a possessive "yesterday's" may be every
    day's: it is left and listed. Phrases in a sentence over LONGEST_SENTENCE characters
    are left and added to `too_long` (to `unsure` when it is None). `coded`: the date words
    the memory's code uses (`date -d yesterday`, see `coded_words`): the same word in its
    prose ("for yesterday's date") names what the code computes, any day's: left and listed.
    `reasons` gets, for each phrase left and listed, why (one of the WHY_* sentences).
    """
    changes: list[tuple[str, str]] = []
    doubts = unsure if unsure is not None else []
    unread = too_long if too_long is not None else doubts
    anchor_at = _Sections(_dated_sections(text), anchor).day_at

    out: list[str] = []
    last = 0
    for code in [*code_ranges(text), None]:
        stop = len(text) if code is None else code.start
        if stop > last:
            out.append(_substitute(
                text[last:stop], last, anchor_at, changes, doubts, rules_only, habits, unread,
                coded, reasons,
            ))
        if code is not None:
            out.append(text[code.start : code.end])
            last = code.end
    return "".join(out), changes


class _Sections:
    """The day of the nearest dated section around an offset, asked for offsets in order.

    The phrases are asked for from the start of the text on: a sweep keeps the sections
    begun so far in a heap, nearest (shortest) first, instead of trying every section for
    every phrase (a log of thousands of dated lines, each with its "yesterday").
    """

    def __init__(self, sections: list[tuple[int, int, date]], anchor: date | None) -> None:
        self.sections = sections  # nearest first, as `_dated_sections` orders them
        self.anchor = anchor
        self.by_start = sorted(range(len(sections)), key=lambda i: sections[i][0])
        self.begun = 0  # how many of `by_start` start at or before the last offset asked
        self.open: list[int] = []  # a heap of indexes into `sections`: the nearest on top
        self.last = -1

    def day_at(self, offset: int) -> date | None:
        if offset < self.last:  # asked out of order: try each (not expected)
            return next(
                (day for start, end, day in self.sections if start <= offset < end), self.anchor
            )
        self.last = offset
        while self.begun < len(self.by_start) and self.sections[
            self.by_start[self.begun]
        ][0] <= offset:
            heapq.heappush(self.open, self.by_start[self.begun])
            self.begun += 1
        # a section ended before the offset ends before every later one: dropped for good
        while self.open and self.sections[self.open[0]][1] <= offset:
            heapq.heappop(self.open)
        return self.sections[self.open[0]][2] if self.open else self.anchor


_DATED_START = re.compile(
    r"^(?P<mark>[ \t]{0,3}(?:#{1,6}[ \t]+|(?:[-*+]|\d{1,3}[.)])[ \t]+)?[*_\[]{0,2})"
    r"(?:(?P<y>20\d\d)-(?P<m>\d\d)-(?P<d>\d\d)|(?P<zy>20\d\d)年(?P<zm>\d{1,2})月(?P<zd>\d{1,2})日)"
    r"(?!\d)",
    re.MULTILINE,
)


def _dated_sections(text: str) -> list[tuple[int, int, date]]:
    """(start, end, day) of each stretch a date at the start of a heading or a line heads.

    A dated heading heads what follows it up to the next heading; a dated line (a log
    entry, a list item) heads itself and its continuation up to a blank line, the next
    item or the next heading.
    """
    found: list[tuple[int, int, date]] = []
    for match in _DATED_START.finditer(text):
        try:
            if match.group("y"):
                day = date(int(match.group("y")), int(match.group("m")), int(match.group("d")))
            else:
                day = date(int(match.group("zy")), int(match.group("zm")), int(match.group("zd")))
        except ValueError:
            continue
        start = match.start()
        if match.group("mark").lstrip().startswith("#"):
            following = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]", re.MULTILINE).search(
                text, match.end()
            )
        else:
            following = re.compile(
                r"\n[ \t]*\n|\n(?=[ \t]{0,3}(?:#{1,6}[ \t]|[-*+][ \t]|\d{1,3}[.)][ \t]|20\d\d))"
            ).search(text, match.end())
        end = following.start() if following else len(text)
        found.append((start, end, day))
    # a dated line inside a dated section wins: it is the nearer date
    return sorted(found, key=lambda item: (item[1] - item[0], item[0]))


_GLUED_BEFORE = frozenset("-_/.$%{=#@\\~")
_GLUED_AFTER = frozenset("-_/@%}=")


def _meaning(match: re.Match[str], segment: str, chinese: bool, anchor: date) -> str | None:
    start, end = match.start(), match.end()
    if (
        segment[max(0, start - 1) : start] in _GLUED_BEFORE
        or segment[end : end + 1] in _GLUED_AFTER
        or re.match(r"\.\w", segment[end : end + 2])
    ):
        return None  # part of a name: release-tomorrow, next_week.md, $today, 明天.md
    if chinese:
        if start and segment[start - 1 : start + 1] in _ZH_WORD_ENDINGS:
            return None
        if (
            match.group(0) in ("今天", "昨天", "明天")
            and segment[start - 1 : start] in ("至", "迄")
            and segment[max(0, start - 2) : start] != "截至"
            and segment[end : end + 1] in _ZH_DAY_WORD_NEXT
        ):
            # 至今天数 is 至今 + 天数 ("the days so far"), 至今天气 至今 + 天气; 至今天为止 and
            # 截至今天 are "until / as of today". Which it is, a careful reader asks.
            return AMBIGUOUS
        if start and (segment[start - 1] in "第几零〇" or segment[start - 1].isdigit()):
            return None  # 第三天后 ("on the third day"), 一百零五天前: not the whole count
        for found in _ZH_NOT_DATES.finditer(segment, max(0, start - 4), min(len(segment), end + 4)):
            if found.start() < end and found.end() > start:
                return None
        counted = _ZH_COUNTED.fullmatch(match.group(0))
        if counted and (
            _after_an_event(segment, start)
            or (match.group(0).endswith("后") and _named_day_before(segment, start))
        ):
            # 上线三天后 ("three days after going live"), 下个月15号开始冻结，两周后解冻 (two
            # weeks after the freeze): it counts from that, not from the day it was written
            return AMBIGUOUS
        return _chinese(match.group(0), anchor)
    if match.group(0).lower().startswith("in ") and _named_day_before(segment, start):
        return AMBIGUOUS  # "starts on the 15th and is lifted in two weeks": from the 15th?
    return _english(match.group(0), anchor)


_DAY_OF_MONTH = re.compile(
    r"\d{1,2}\s*[号日]|\b\d{1,2}(?:st|nd|rd|th)\b"
    rf"|\b{_EN_MONTH_DAY}|\b\d{{1,2}}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.IGNORECASE,
)


def _named_day_before(segment: str, start: int) -> bool:
    """Whether the sentence names another day before a count forward ("on the 15th … in two
    weeks", 下个月15号开始冻结，两周后): it may run from that day, not from the writing day.
    (A count back, "两周前已经做完", is said from the writing day.)"""
    lead, _ = _sentence(segment, start, start)
    if _OTHER_DAY.search(lead) or _DAY_OF_MONTH.search(lead):
        return True
    # a day ahead named before ("明天开始冻结，两周后解冻"); one behind ("前天谈妥了，三天后签字")
    # is the news of the day the note was written, and the count runs from that day
    return any(
        not _PAST.search(found.group(0))
        for pattern in (_EN_PATTERN, _ZH_PATTERN)
        for found in pattern.finditer(lead)
    )


# A character after 今天/昨天/明天 that joins 天 into a word of its own (天数 "number of
# days", 天气 "weather", 天天 "every day"): after 至 the phrase may be 至今 + 天数.
_ZH_DAY_WORD_NEXT = frozenset(
    "数气天空然才生使堂赋性文线窗台桥价涯际意色灾象体井幕籁伦神仙王敌险道资职命理真"
)
_ZH_COUNTED = re.compile(r"\S+(?:天|周|个星期|星期|个月)(?:以前|以后|之前|之后|前|后)")
# Who or what may stand right before a count that counts from the writing day: a subject
# (我三天前提交了, 我们两周后发布) or a word of time or plan (预计三天后上线, 大约两周前). Any
# other word there names what the count runs from: 上线三天后出了问题 is three days after
# the launch, 发布两周前冻结代码 two weeks before the release.
_ZH_SUBJECTS = (
    "我们", "咱们", "你们", "他们", "她们", "大家", "团队", "我", "你", "您", "他", "她",
    "大约", "大概", "约", "预计", "计划", "打算", "准备", "还有", "再过", "最快", "最晚",
    "最迟", "至少", "就", "将", "会", "要", "也", "都",
)


def _after_an_event(segment: str, start: int) -> bool:
    """True when a Chinese count (三天后) follows a word of its clause that is no subject."""
    if not start or not ("\u4e00" <= segment[start - 1] <= "\u9fff"):
        return False
    return not segment.endswith(_ZH_SUBJECTS, 0, start)


# Reported speech dated by another day: "Yesterday he promised it for tomorrow", "On Monday
# she said she'd be back tomorrow", 昨天他答应明天交付 — the phrase counts from the day it
# was said, not the day it was written down.
_REPORTED = re.compile(
    r"\b(?:said|says|told|promised|mentioned|wrote|asked|agreed|announced|claimed|replied"
    r"|confirmed|estimated|expected|thought|hoped|planned)\b|说|告诉|答应|承诺|提到|表示|回复|确认|估计",
    re.IGNORECASE,
)
_OTHER_DAY = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|(?:周|星期|礼拜)[一二三四五六日天]"
    r"|\b20\d\d-\d\d-\d\d\b|\d{1,2}月\d{1,2}[日号]",
    re.IGNORECASE,
)


def _said_on_another_day(segment: str, start: int) -> bool:
    """Whether the phrase at `start` is in words reported from a day its sentence names."""
    lead, _ = _sentence(segment, start, start)
    if not _REPORTED.search(lead):
        return False
    return bool(_OTHER_DAY.search(lead) or _EN_PATTERN.search(lead) or _ZH_PATTERN.search(lead))


# Two relative phrases joined ("today or tomorrow", "last week through this week", 这周和下周,
# 昨天或前天): each is dated when both can be. When one part cannot be (it is elliptical, as in
# "this week and next", "next Monday or Tuesday", 下周一到五, or left for any other reason),
# the whole is left as written and listed: a date beside one part would read as the date of
# both.
_EN_JOINER = re.compile(r"\s*,?\s*(?:and/or|and|or|&|to|through|thru|until|till|/|–|—)\s*",
                        re.IGNORECASE)
_ZH_JOINER = re.compile(r"\s*(?:或者|或是|还是|和|或|与|跟|及|到|至|、|/|～|~|—)\s*")
# "the week after", "the one before", "the following": after any phrase; a bare "next",
# "last", "this" only after a phrase that has one ("this week and next", not "yesterday and
# this broke").
_EN_ELLIPSIS = re.compile(
    r"(?:the\s+)?(?:following|previous|one\s+after|one\s+before"
    r"|(?:day|week|month|year|weekend)\s+(?:after|before))\b",
    re.IGNORECASE,
)
_EN_BARE_DETERMINER = re.compile(r"(?:the\s+)?(?:next|last|this)\b", re.IGNORECASE)
_EN_WEEKDAY_ALONE = re.compile(r"(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE)
_ZH_WEEKDAY_ALONE = re.compile(r"(?:周|星期|礼拜)?[一二三四五六日天](?![月号日])")
# Two days in one word: 明后天 ("tomorrow or the day after"), 今明天 ("today and tomorrow").
_ZH_TWO_DAYS = frozenset({"明后天", "今明天", "昨前天"})

_DATED, _ALREADY_DATED, _UNSURE, _LEFT = "dated", "already", "unsure", "left"


def _continuation(segment: str, end: int, word: str, chinese: bool) -> int | None:
    """Where an elliptical second part joined to the phrase ending at `end` ends, if one is:
    "this week and next", "tomorrow or the day after", "next Monday or Tuesday", 下周一到五."""
    joined = (_ZH_JOINER if chinese else _EN_JOINER).match(segment, end)
    if joined is None or joined.end() == end:
        return None
    if chinese:
        if word[-1:] in "一二三四五六日天" and re.search(r"周|星期|礼拜", word):
            alone = _ZH_WEEKDAY_ALONE.match(segment, joined.end())
            return alone.end() if alone else None
        return None
    found = _EN_ELLIPSIS.match(segment, joined.end())
    if found is None and re.match(r"(?:last|this|next)\s", word, re.IGNORECASE):
        found = _EN_BARE_DETERMINER.match(segment, joined.end())
    if found is None and _EN_WEEKDAY_ALONE.search(word):
        found = _EN_WEEKDAY_ALONE.match(segment, joined.end())
    return found.end() if found else None


def _joined_date(segment: str, start: int, end: int, chinese: bool) -> bool:
    """Whether a second date phrase, whole or elliptical, is joined to segment[start:end]
    ("today or tomorrow", "this week or next"): then an "or" after it is no period."""
    joined = (_ZH_JOINER if chinese else _EN_JOINER).match(segment, end)
    if joined is None or joined.end() == end:
        return False
    pattern = _ZH_PATTERN if chinese else _EN_PATTERN
    return bool(pattern.match(segment, joined.end())) or _continuation(
        segment, end, segment[start:end], chinese
    ) is not None


class _Stretches:
    """Stretches of a segment, for a phrase to look up by bisection (not against each)."""

    def __init__(self, stretches: list[tuple[int, int]]) -> None:
        self.given = sorted(stretches)
        self.given_starts = [start for start, _ in self.given]
        # the union, as disjoint stretches in order
        self.merged: list[list[int]] = []
        for start, end in self.given:
            if self.merged and start <= self.merged[-1][1]:
                self.merged[-1][1] = max(self.merged[-1][1], end)
            else:
                self.merged.append([start, end])
        self.starts = [start for start, _ in self.merged]

    def overlaps(self, start: int, end: int) -> bool:
        """Whether segment[start:end] (not empty) shares a character with any stretch."""
        index = bisect_left(self.starts, end) - 1
        return index >= 0 and self.merged[index][1] > start

    def around(self, start: int, end: int) -> tuple[int, int] | None:
        """The first stretch (in the order found) holding segment[start:end], of stretches
        that do not overlap (a link's texts)."""
        index = bisect_right(self.given_starts, start) - 1
        if index >= 0 and self.given[index][1] >= end:
            return self.given[index]
        return None


# Why a phrase was left and listed, as the report says it after the phrases.
WHY_CODE = "a word the memory's code computes, any day's"
WHY_RULE = (
    "in a sentence that reads as a rule, a habit or a general statement, where it may or may "
    "not date an event"
)
WHY_REPORTED = "words reported from another day, which may count from that day"
WHY_AMBIGUOUS = "which day it means is not sure"
WHY_COUNT = "a count that may run from another event, not from the day it was written"
WHY_WEEK = "this week's day or the other week's, which only the writer knows"
WHY_OFF_CALENDAR = "a day before year 1 or after 9999, which no calendar shows"
_A_COUNT = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several"
    r"|couple|later|after)\b|^in\b|[一二两三四五六七八九十几半]",
    re.IGNORECASE,
)
_A_WEEK = re.compile(
    r"\bweek|monday|tuesday|wednesday|thursday|friday|saturday|sunday|周|星期|礼拜", re.IGNORECASE
)


def _why_ambiguous(phrase: str) -> str:
    """Why a phrase `_meaning` calls AMBIGUOUS was left: a count, a week, or neither sure."""
    if _A_COUNT.search(phrase):
        return WHY_COUNT
    return WHY_WEEK if _A_WEEK.search(phrase) else WHY_AMBIGUOUS
WHY_JOINED = "joined to a day or period that cannot be dated"
WHY_LINK = "in a link's text, where a date would change the link"


def _substitute(
    segment: str,
    base: int,
    anchor_at: Callable[[int], date | None],
    changes: list[tuple[str, str]],
    unsure: list[str],
    rules_only: bool = False,
    habits: bool = False,
    too_long: list[str] | None = None,
    coded: frozenset[str] = frozenset(),
    reasons: dict[str, str] | None = None,
) -> str:
    """One stretch of prose (at `base` in the text) with its event phrases dated; why each
    phrase left and listed was left goes into `reasons` (WHY_*)."""
    unread: set[int] = set()  # where a phrase in a sentence too long to read is
    matches = sorted(
        [(m, False) for m in _EN_PATTERN.finditer(segment)]
        + [(m, True) for m in _ZH_PATTERN.finditer(segment)],
        key=lambda item: item[0].start(),
    )
    not_prose = _Stretches(_not_prose(segment))
    # A link's text or an image's alt text: a date written inside the brackets would change
    # what the link reads as ("[yesterday's (2026-11-24) notes](notes.md)"), and one after
    # the link would read as the date of what it links to. Left and listed.
    link_texts = _Stretches(
        [(m.start("text"), m.end("text")) for m in MARKDOWN_LINK.finditer(segment)]
    )
    in_links: dict[int, str] = {}  # by the start of a phrase left in a link's text: the text
    whys: dict[int, str] = {}  # by the start of a phrase left and listed: why (WHY_*)
    why_of = reasons if reasons is not None else {}
    # What each phrase would become on its own: [start, end, kind, note, chinese]
    parts: list[list[Any]] = []
    covered = 0
    for match, chinese in matches:
        if match.start() < covered:
            continue  # inside a phrase already dated
        if not_prose.overlaps(match.start(), match.end()):
            continue
        end = match.end()
        if not chinese and segment[end : end + 2] in ("'s", "’s"):
            end += 2  # "yesterday's retro" -> "yesterday's (2026-11-24) retro"
        kind, note = _LEFT, ""
        if _ALREADY.match(segment, end):
            kind = _ALREADY_DATED  # dated already, by a person or an earlier run
        elif _too_long(segment, match.start(), match.end()):
            kind = _UNSURE  # a sentence too long to read for dates: left and listed
            unread.add(match.start())
        elif coded and " ".join(match.group(0).casefold().split()) in coded:
            kind = _UNSURE  # "`date -d yesterday` prints yesterday's date": what code computes
            whys[match.start()] = WHY_CODE
        elif why := _not_an_event(
            segment, match.start(), match.end(), chinese, rules_only, habits
        ):
            # (a feedback memory is rules through and through: its 下周计划 is every week's)
            if why == _IN_A_RULE and not rules_only and _names_a_day(match.group(0), chinese):
                kind = _UNSURE  # "The notes from last Friday list every change": maybe an event
                whys[match.start()] = WHY_RULE
        elif _said_on_another_day(segment, match.start()):
            kind = _UNSURE  # "Yesterday he promised it for tomorrow": whose day?
            whys[match.start()] = WHY_REPORTED
        else:
            anchor = anchor_at(base + match.start())
            if anchor is None:
                if _meaning(match, segment, chinese, date(2000, 1, 5)) is not None:
                    kind = _UNSURE
            else:
                try:
                    meant = _meaning(match, segment, chinese, anchor)
                except (OverflowError, ValueError):  # "300 days ago" in January, year 1
                    meant, whys[match.start()] = None, WHY_OFF_CALENDAR
                    kind = _UNSURE
                if meant == AMBIGUOUS:
                    kind = _UNSURE
                    whys[match.start()] = _why_ambiguous(match.group(0))
                elif meant is not None and (
                    around := link_texts.around(match.start(), match.end())
                ):
                    in_links[match.start()] = f"[{segment[around[0]:around[1]]}]"
                elif meant is not None:
                    kind, note = _DATED, f"（{meant}）" if chinese else f" ({meant})"
                    covered = end
        parts.append([match.start(), end, kind, note, chinese])

    doubts: dict[int, str] = {}  # by the start of the part that lists it
    index = 0
    while index < len(parts):
        group = [parts[index]]
        while index + len(group) < len(parts):
            following = parts[index + len(group)]
            joiner = _ZH_JOINER if group[-1][4] else _EN_JOINER
            between = segment[group[-1][1] : following[0]]
            if not between or not joiner.fullmatch(between):
                break
            group.append(following)
        first, last = group[0], group[-1]
        stop = last[1]
        kinds = {part[2] for part in group}
        elliptical = _continuation(segment, last[1], segment[last[0] : last[1]], last[4])
        compound = first[4] and segment[max(0, first[0] - 1) : first[1]] in _ZH_TWO_DAYS
        if elliptical is not None:
            stop = elliptical
        start = first[0] - 1 if compound else first[0]
        datable = kinds & {_DATED, _UNSURE}
        if datable and (elliptical is not None or compound or kinds - {_DATED, _ALREADY_DATED}
                        ) and (len(group) > 1 or elliptical is not None or compound):
            for part in group:
                part[2] = _LEFT
            doubts[first[0]] = segment[start:stop]
        index += len(group)

    out: list[str] = []
    last_end = 0
    for start, end, kind, note, _chinese in parts:
        if start in doubts:
            unsure.append(doubts[start])
            why_of.setdefault(doubts[start], WHY_JOINED)
        if start in in_links:
            unsure.append(in_links[start])
            why_of.setdefault(in_links[start], WHY_LINK)
        if kind == _UNSURE:
            phrase = segment[start:end].removesuffix("'s").removesuffix("’s")
            (too_long if too_long is not None and start in unread else unsure).append(phrase)
            if start in whys:
                why_of.setdefault(phrase, whys[start])
        elif kind == _DATED:
            out.append(segment[last_end:end])
            out.append(note)
            changes.append((segment[start:end], segment[start:end] + note))
            last_end = end
    out.append(segment[last_end:])
    return "".join(out)


def anchor_of(memory: Memory, zone: tzinfo | None = None) -> tuple[date | None, str]:
    """The day the memory's text was written, on the writer's clock, or None and why not.

    A stamp's own offset says the writer's clock; a UTC stamp is read in `zone` (the
    `timeZone` setting; None: this machine's).
    """
    created, updated = memory.created, memory.updated
    if created and updated:
        # A bare `created` that is the UTC day of `updated` may be the tool's UTC stamp of the
        # same moment (`created: 2026-11-25` beside `updated: 2026-11-26T01:40:00+08:00`):
        # then `updated` decides, on its own offset or, for a UTC time, in `zone`. One that
        # is not was written on the writer's own calendar.
        stamped = _moment(updated)
        utc_day = stamped.astimezone(UTC).date() if stamped and not _naive(updated) else None
        given = _exact_day(created)
        if given is not None and given == utc_day and len(created) == 10:
            common = _possible_days(updated, zone)
            given = None
        else:
            common = _possible_days(created, zone) & _possible_days(updated, zone)
        if not common:
            first, last = _writer_day(created, zone), _writer_day(updated, zone)
            return None, (
                f"written on {first} and edited on {last}: "
                "which day its relative dates count from is not known"
            )
        for day in (_exact_day(updated), given, _writer_day(updated, zone)):
            if day is not None and day in common:
                return day, ""
        return min(common), ""
    if created or updated:
        text = created or updated or ""
        day = _writer_day(text, zone)
        if day is not None:
            return day, ""
        if _naive(text):
            moment = _moment(text)
            local = moment.astimezone(zone).date() if moment else None
            return None, (
                f"its time {text} has no offset: {text[:10]} on the writer's clock, "
                f"{local} if it is UTC; which day its relative dates count from is not known"
            )
    return None, "no created or updated date to count its relative dates from"


def _moment(text: str) -> datetime | None:
    return None if len(text) == 10 else parse_moment(text)


def _bare_day(text: str) -> date | None:
    """The day of a bare date (`2026-11-25`) when it is one a memory may carry: read through
    `parse_moment`, the one check of a date read from a file (the audit reports the rest),
    so that `0001-01-01`, whose yesterday no calendar shows, anchors nothing."""
    moment = parse_moment(text) if len(text) == 10 else None
    return moment.date() if moment is not None else None


def _exact_day(text: str) -> date | None:
    """The day a date or time is known to be on the writer's own clock, if it says.

    A time with an offset says it; a bare date says it when it is not the tool's UTC
    stamp of the same moment (the caller checks that against the other field).
    """
    moment = _moment(text)
    if moment is None:
        return _bare_day(text)
    return None if _says_utc(text) or _naive(text) else moment.date()


def _writer_day(text: str, zone: tzinfo | None = None) -> date | None:
    """The writer's day for a date or time: a UTC time is read in `zone` (None: this
    machine's clock).

    A time without an offset ("2026-11-25 23:30", written by hand) is the writer's wall
    clock, or UTC as YAML reads it: its day when both readings agree, else None.
    """
    moment = _moment(text)
    if moment is None:
        return _bare_day(text)
    if _naive(text):
        days = _possible_days(text, zone)
        return next(iter(days)) if len(days) == 1 else None
    return moment.astimezone(zone).date() if _says_utc(text) else moment.date()


def _possible_days(text: str, zone: tzinfo | None = None) -> set[date]:
    """Every day the writer's calendar may have shown: a UTC time is a day anywhere on earth
    (in `zone` only, when the setting names the writers' zone)."""
    moment = _moment(text)
    if moment is None:
        day = _writer_day(text, zone)
        return {day} if day else set()
    if _naive(text):
        return {moment.date(), moment.astimezone(zone).date()}
    if not _says_utc(text):
        return {moment.date()}
    if zone is not None:
        return {moment.astimezone(zone).date()}
    moment = moment.astimezone(UTC)
    first, last = (moment - timedelta(hours=12)).date(), (moment + timedelta(hours=14)).date()
    return {first + timedelta(days=n) for n in range((last - first).days + 1)}


def _says_utc(text: str) -> bool:
    return text.endswith(("Z", "z", "+00:00", "+0000"))


def _naive(text: str) -> bool:
    """A time with neither an offset nor a Z: whose clock it is, it does not say."""
    return (
        _moment(text) is not None
        and not _says_utc(text)
        and not re.search(r"[+-]\d\d:?\d\d$", text)
    )


def _phrases(texts: dict[str, str], rules_only: bool = False) -> list[str]:
    """The event phrases in `texts`, for a report (as they would be read on any day)."""
    found: list[str] = []
    for text in texts.values():
        unsure: list[str] = []
        _, changes = absolutize(text, date(2000, 1, 5), unsure, rules_only=rules_only)
        found.extend(old for old, _ in changes)
        found.extend(unsure)
    return sorted(set(found))


def coded_words(text: str) -> frozenset[str]:
    """The date words (casefolded) that the code in `text` uses: `date -d yesterday`,
    `DAY=today`, 昨天 in a fenced block."""
    found: set[str] = set()
    for code in code_ranges(text):
        inside = text[code.start : code.end]
        for pattern in (_EN_PATTERN, _ZH_PATTERN):
            found.update(" ".join(m.group(0).casefold().split()) for m in pattern.finditer(inside))
    return frozenset(found)


def run(ctx: RuleContext) -> None:
    for memory in ctx.live():
        fields: dict[str, str] = {}
        found: list[tuple[str, str]] = []
        unsure: list[str] = []
        too_long: list[str] = []
        texts = {
            "description": memory.description,
            "summary": memory.summary or "",
            "body": memory.body,
        }
        if not any(_EN_PATTERN.search(t) or _ZH_PATTERN.search(t) for t in texts.values()):
            continue
        rules_only = memory.category == "feedback"
        habits = any(_EN_HABIT.search(t) or _ZH_HABIT.search(t) for t in texts.values())
        coded = coded_words(memory.body)
        reasons: dict[str, str] = {}
        anchor, why = anchor_of(memory, ctx.zone)
        if anchor is not None and anchor > ctx.now.date() + timedelta(days=1):
            # a stamp after today (a clock set wrong): no day to count from
            why = (
                f"it says it was written on {anchor.isoformat()}, after today "
                f"({ctx.now.date().isoformat()}): which day its relative dates count from "
                "is not known"
            )
            anchor = None
        for key, text in texts.items():
            if not text:
                continue
            new, changes = absolutize(
                text, anchor, unsure, rules_only=rules_only, habits=habits, too_long=too_long,
                coded=coded, reasons=reasons,
            )
            if changes and new != text:
                fields[key] = new
                found.extend(changes)
        if too_long:
            phrases = ", ".join(map(repr, list(dict.fromkeys(too_long))[:10]))
            hidden = len(dict.fromkeys(too_long)) - 10
            ctx.applier.note(
                memory.id,
                rule=NAME,
                message=(
                    f"relative dates ({phrases}{f' and {hidden} more' if hidden > 0 else ''}) "
                    f"left as written: in a sentence of over {LONGEST_SENTENCE:,} characters, "
                    "too long to read for dates; write the date you mean"
                ),
            )
        if unsure:
            # every phrase, in the order the memory has them: a careful reader checks each
            listed = list(dict.fromkeys(unsure))
            named = ", ".join(map(repr, listed))
            if anchor is None:
                message = f"relative dates ({named}) left as written: {why}"
            else:
                # why each was left, the phrases of one reason together
                by_reason: dict[str, list[str]] = {}
                for phrase in listed:
                    by_reason.setdefault(reasons.get(phrase, WHY_AMBIGUOUS), []).append(phrase)
                weekday = _EN_WEEKDAYS[anchor.weekday()].title()
                message = (
                    f"relative dates ({named}) left as written (written on "
                    f"{anchor.isoformat()}, a {weekday}): "
                    + ("; ".join(f"{', '.join(map(repr, group))}: {reason}"
                                 for reason, group in by_reason.items())
                       if len(by_reason) > 1 else next(iter(by_reason)))
                    + "; write the date you mean"
                )
            ctx.applier.note(memory.id, rule=NAME, message=message)
        if not fields:
            continue
        shown = "; ".join(f"{old!r} → {new!r}" for old, new in found[:4])
        more = f" and {len(found) - 4} more" if len(found) > 4 else ""
        written = f"written on {anchor.isoformat()}" if anchor else "counted from the dates in it"
        ctx.applier.rewrite(
            memory,
            rule=NAME,
            reason=f"{shown}{more} ({written})",
            **fields,
        )
