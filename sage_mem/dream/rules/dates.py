"""Relative dates made absolute, in English and Chinese, where a memory says when it was written.

"yesterday" in a memory is wrong from the next day on, and models are poor at
date arithmetic, so the phrase is replaced (not annotated: the old wording
would stay wrong) by the date it meant: "Yesterday we shipped" → "On 2026-11-28
we shipped", "上周开会" → "2026年11月16日那一周开会".

The anchor is the day the text was written, which a memory only tells for sure
when `created` and `updated` fall on the same day, or when only one of them is
known. A memory edited on a later day might have gained its "yesterday" on
either day: it is left alone and reported, as is one with no date at all.

Weeks start on Monday. "next Friday" / "下周五" is the Friday of next week,
"last Friday" / "上周五" the Friday of the week before; "this Friday" / "这周五"
the Friday of the anchor's week. Code is never touched: fenced and indented
blocks, code spans, `<code>` and `<pre>` (`sage_mem.memory.markdown` says what is code).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from ...memory.markdown import outside_code
from ...memory.value import Memory
from . import RuleContext

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
_ZH_WEEKDAY_NAMES = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_ZH_NUMBERS = {
    "一": 1,
    "两": 2,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_PREPOSITIONS = frozenset(
    "on in at by since until till from before after during of for to as around about through "
    "between within than".split()
)


# what each phrase means


def _en_day(day: date) -> str:
    return day.isoformat()


def _zh_day(day: date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


Replacement = tuple[str, str]  # (text, kind): kind is "day", "week", "month", "year", "around"


def _english(match: re.Match[str], anchor: date) -> Replacement | None:
    word = match.group(0).lower()
    word = " ".join(word.split())
    days = {
        "the day before yesterday": -2,
        "the day after tomorrow": 2,
        "yesterday": -1,
        "today": 0,
        "tomorrow": 1,
    }
    if word in days:
        return _en_day(anchor + timedelta(days=days[word])), "day"
    parts = word.split()
    if parts[-1] == "ago" or parts[0] == "in":
        count_word = parts[1] if parts[0] == "in" else parts[0]
        count = _EN_NUMBERS.get(count_word) or (int(count_word) if count_word.isdigit() else None)
        if count is None or count > 366:
            return None
        sign = -1 if parts[-1] == "ago" else 1
        unit = parts[-2] if parts[-1] == "ago" else parts[-1]
        if unit.startswith("day"):
            return _en_day(anchor + timedelta(days=sign * count)), "day"
        if unit.startswith("week"):
            return _en_day(anchor + timedelta(weeks=sign * count)), "around"
        return None
    which, unit = parts[0], parts[1]
    offset = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        return _en_day(_monday(anchor) + timedelta(weeks=offset)), "week"
    if unit == "month":
        first = _add_months(anchor, offset)
        return f"{_EN_MONTHS[first.month]} {first.year}", "month"
    if unit == "year":
        return str(anchor.year + offset), "year"
    if unit in _EN_WEEKDAYS:
        day = _monday(anchor) + timedelta(weeks=offset, days=_EN_WEEKDAYS.index(unit))
        return f"{unit.title()} {_en_day(day)}", "day"
    return None


def _chinese(match: re.Match[str], anchor: date) -> Replacement | None:
    word = match.group(0)
    days = {
        "大前天": -3,
        "前天": -2,
        "昨天": -1,
        "昨日": -1,
        "今天": 0,
        "今日": 0,
        "明天": 1,
        "明日": 1,
        "后天": 2,
        "大后天": 3,
    }
    if word in days:
        return _zh_day(anchor + timedelta(days=days[word])), "day"
    years = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
    if word in years:
        return f"{anchor.year + years[word]}年", "year"
    counted = re.fullmatch(
        r"(\d+|[一两二三四五六七八九十])(天|周|个星期|星期)(前|后|以前|以后|之前|之后)", word
    )
    if counted:
        number, unit, direction = counted.groups()
        count = int(number) if number.isdigit() else _ZH_NUMBERS[number]
        if count > 366:
            return None
        sign = -1 if direction.endswith("前") else 1
        if unit == "天":
            return _zh_day(anchor + timedelta(days=sign * count)), "day"
        return _zh_day(anchor + timedelta(weeks=sign * count)) + "前后", "around"
    month = re.fullmatch(r"(上上|上|这|本|下下|下)(?:个)?月", word)
    if month:
        offset = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}[month.group(1)]
        first = _add_months(anchor, offset)
        return f"{first.year}年{first.month}月", "month"
    week = re.fullmatch(
        r"(上上|上|这|本|下下|下)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])?", word
    )
    if week:
        offset = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}[week.group(1)]
        monday = _monday(anchor) + timedelta(weeks=offset)
        if week.group(2):
            index = 6 if week.group(2) in "日天" else _ZH_WEEKDAYS.index(week.group(2))
            day = monday + timedelta(days=index)
            return f"{_zh_day(day)}（{_ZH_WEEKDAY_NAMES[index]}）", "day"
        return f"{_zh_day(monday)}那一周", "week"
    return None


_EN_COUNT = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_EN_PATTERN = re.compile(
    r"\b(?:the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|today|tomorrow"
    rf"|{_EN_COUNT}\s+(?:days?|weeks?)\s+ago|in\s+{_EN_COUNT}\s+(?:days?|weeks?)"
    r"|(?:last|this|next)\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.IGNORECASE,
)
_ZH_PATTERN = re.compile(
    r"大前天|大后天|前天|昨天|昨日|今天|今日|明天|明日|后天|前年|去年|今年|明年|后年"
    r"|(?:\d{1,3}|[一两二三四五六七八九十])(?:天|周|个星期|星期)(?:以前|以后|之前|之后|前|后)"
    r"|(?:上上|下下|上|这|本|下)(?:个)?月"
    r"|(?:上上|下下|上|这|本|下)(?:个)?(?:周|星期|礼拜)[一二三四五六日天]?"
)
# Words that overlap a pattern but are no date: 先天后天 ("innate and acquired"), 这个月饼
# ("this mooncake"), 周末 ("weekend": 这周末 is not "this week" + 末), 周报 ("weekly report").
_ZH_NOT_DATES = re.compile(
    r"先天后天|后天性|今日头条|明日之星|月饼|月份|月亮|月球|月光|月薪|月报|月度|周年|周边|周末|周期|周围|周到"
    r"|周刊|周转|周报|周会|周岁"
)
# 上/下/这/本 closing a word of their own: 马上周一 is "at once, Monday", 看一下周报 "glance at the
# weekly report", 版本周期 "release cycle".
_ZH_WORD_ENDINGS = frozenset(
    "马上 晚上 早上 以上 加上 之上 路上 身上 网上 线上 会上 手上 一下 以下 之下 线下 "
    "手下 地下 底下 私下 眼下 当下 如下 留下 剩下 放下 基本 版本 日本 成本 根本 书本 "
    "课本 脚本 样本 文本 资本 账本 剧本".split()
)


def _english_text(match: re.Match[str], new: str, kind: str, before: str) -> str:
    previous = before.rstrip().rsplit(None, 1)[-1].lower() if before.strip() else ""
    after_preposition = previous.strip("([\"'") in _PREPOSITIONS
    if kind == "day":
        text = new if after_preposition else f"on {new}"
    elif kind == "week":
        text = f"the week of {new}" if after_preposition else f"in the week of {new}"
    elif kind == "around":
        text = f"around {new}" if not after_preposition else new
    else:
        text = new if after_preposition else f"in {new}"
    original = match.group(0)
    if original[:1].isupper() and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def absolutize(text: str, anchor: date) -> tuple[str, list[tuple[str, str]]]:
    """`text` with its relative dates made absolute from `anchor`, and the (old, new) pairs."""
    changes: list[tuple[str, str]] = []

    def prose(segment: str) -> str:
        segment = _substitute(
            segment, _EN_PATTERN, lambda m, s: _en_replacement(m, s, anchor), changes
        )
        return _substitute(
            segment, _ZH_PATTERN, lambda m, s: _zh_replacement(m, s, anchor), changes
        )

    return outside_code(text, prose), changes


def _en_replacement(match: re.Match[str], segment: str, anchor: date) -> str | None:
    end = match.end()
    if segment[end : end + 2] in ("'s", "’s"):
        meant = _english(match, anchor)
        return None if meant is None else meant[0]  # "yesterday's call" -> "2026-11-28's call"
    if segment[max(0, match.start() - 1) : match.start()] in ("-", "_", "/") or segment[
        end : end + 1
    ] in ("-", "_", "/"):
        return None  # part of a name: release-tomorrow, next_week.md
    meant = _english(match, anchor)
    if meant is None:
        return None
    return _english_text(match, meant[0], meant[1], segment[: match.start()])


def _zh_replacement(match: re.Match[str], segment: str, anchor: date) -> str | None:
    start, end = match.start(), match.end()
    if start and segment[start - 1 : start + 1] in _ZH_WORD_ENDINGS:
        return None
    for found in _ZH_NOT_DATES.finditer(segment, max(0, start - 4), min(len(segment), end + 4)):
        if found.start() < end and found.end() > start:
            return None
    meant = _chinese(match, anchor)
    return None if meant is None else meant[0]


def _substitute(
    segment: str,
    pattern: re.Pattern[str],
    replace: Callable[[re.Match[str], str], str | None],
    changes: list[tuple[str, str]],
) -> str:
    out: list[str] = []
    last = 0
    for match in pattern.finditer(segment):
        new = replace(match, segment)
        if new is None:
            continue
        out.append(segment[last : match.start()])
        out.append(new)
        changes.append((match.group(0), new))
        last = match.end()
    out.append(segment[last:])
    return "".join(out)


def anchor_of(memory: Memory) -> tuple[date | None, str]:
    """The day the memory's text was written, or None and why it is not known."""
    created = _day(memory.created)
    updated = _day(memory.updated)
    if created and updated and created != updated:
        return None, (
            f"written on {created.isoformat()} and edited on {updated.isoformat()}: "
            "which day its relative dates count from is not known"
        )
    if created or updated:
        return created or updated, ""
    return None, "no created or updated date to count its relative dates from"


def _day(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def run(ctx: RuleContext) -> None:
    for memory in ctx.live():
        fields: dict[str, str] = {}
        found: list[tuple[str, str]] = []
        texts = {
            "description": memory.description,
            "summary": memory.summary or "",
            "body": memory.body,
        }
        if not any(_EN_PATTERN.search(t) or _ZH_PATTERN.search(t) for t in texts.values()):
            continue
        anchor, why = anchor_of(memory)
        if anchor is None:
            phrases = sorted(
                {
                    m.group(0)
                    for t in texts.values()
                    for p in (_EN_PATTERN, _ZH_PATTERN)
                    for m in p.finditer(t)
                }
            )
            ctx.applier.note(
                memory.id,
                rule=NAME,
                message=(
                    f"relative dates ({', '.join(map(repr, phrases[:4]))}) left as written: {why}"
                ),
            )
            continue
        for key, text in texts.items():
            if not text:
                continue
            new, changes = absolutize(text, anchor)
            if changes and new != text:
                fields[key] = new
                found.extend(changes)
        if not fields:
            continue
        shown = "; ".join(f"{old!r} → {new!r}" for old, new in found[:4])
        more = f" and {len(found) - 4} more" if len(found) > 4 else ""
        ctx.applier.rewrite(
            memory,
            rule=NAME,
            reason=f"{shown}{more} (written on {anchor.isoformat()})",
            **fields,
        )
