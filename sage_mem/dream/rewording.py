"""One way of writing what people write many ways: terms, numbers, units, clock times, typos.

The near-duplicate and contradiction rules compare two descriptions word by word
(`similarity.difference`); a fact saved twice is often written twice differently in ways
that change no fact, and each read as "a different key term" or "a different number" kept
twins apart (and listed some as contradicting each other). `normalised` writes each such
way one way, by its kind, never by a case's words:

- a term and its well-known abbreviation or its other language's name (k8s / Kubernetes,
  JS / JavaScript, DB / database / 数据库, PR / pull request / merge request / 合并请求, repo /
  仓库, commit message / 提交信息, 单测 / 单元测试): one term (`TERMS`), written in the
  text's language (the Chinese name in a text with Chinese in it, where it has one);
- a number in another notation (1,000 / 1000, 10k / 10000, two / 2, 一千 / 1000, 1万 /
  10000, 十五 / 15, full-width ３０) is one number, and a unit spelt another way after it
  (30 minutes / 30 min / 30 分钟, 5 seconds / 5 s / 5 秒, 两个小时 / 2 小时) one unit; a
  duration said in words (half an hour, 半小时, 一刻钟) is the number of minutes;
- a clock time on the 24-hour clock (九点半 / 9:30, 3pm / 下午三点 / 15:00), a weekday by
  its full name (Fri / Friday, 星期五 / 礼拜五 / 周五);
- a well-known misspelling or variant character of a Chinese word (登陆 / 登录 for "log in",
  帐号 / 账号) is the word (`VARIANTS`).

A bound said in words ("capped at", "up to", 上限) is read by `similarity`'s bound check.

What it must never join stays apart: a number keeps its magnitude (5 千 / 5 万 are 5000 /
50000; 5k / 5m stay two), "one" is left a word (it is also a pronoun: "one of them"), a
Chinese numeral is read only before a measure word or unit (千万不要 stays a warning, 一起
stays together), "Sat" and "Sun" are days only where a day is named ("on Sat"; "He sat
down"), and a term is only ever written as its own full name. A mistyped English word is not
guessed here: which of "editor" / "ediotr" is the word needs the folder's own words
(`mend_typo`, which also reads British and American spellings as one).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache

# A Han character (CJK ideographs, extension A, compatibility): one class for the dream.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{HAN}]")

# (the English name, its Chinese name or "", the other ways it is written). Only names of
# one thing: a term whose abbreviation also means another thing in memories (auth:
# authentication or authorization; doc: a document or the docs) is not here.
TERMS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Kubernetes", "", ("k8s", "kube")),
    ("JavaScript", "", ("js",)),
    ("TypeScript", "", ("ts",)),
    ("PostgreSQL", "", ("postgres", "pg", "psql")),
    ("MongoDB", "", ("mongo",)),
    ("database", "数据库", ("db",)),
    ("databases", "数据库", ("dbs",)),
    ("pull request", "合并请求", ("pr", "merge request", "mr", "拉取请求")),
    ("pull requests", "合并请求", ("prs", "merge requests")),
    ("repository", "仓库", ("repo", "代码仓库", "代码库")),
    ("repositories", "仓库", ("repos",)),
    ("documentation", "文档", ("docs",)),
    ("configuration", "配置", ("config", "configs")),
    ("environment", "环境", ("env",)),
    ("environments", "环境", ("envs",)),
    ("production", "生产环境", ("prod", "线上环境")),
    ("commit message", "提交信息", ("commit msg", "提交说明", "commit 信息")),
    ("commit messages", "提交信息", ("commit msgs",)),
    ("unit test", "单元测试", ("单测",)),
    ("type hint", "类型注解", ("type annotation", "类型提示")),
    ("type hints", "类型注解", ("type annotations",)),
    ("unit tests", "单元测试", ()),
    ("end-to-end", "端到端", ("e2e",)),
    ("message", "", ("msg",)),
    ("messages", "", ("msgs",)),
    ("without", "", ("w/o",)),
    ("with", "", ("w/",)),
)
# Chinese words written with a well-known wrong or old character: 登陆 (to land) for 登录 (to
# log in), 帐 for 账.
VARIANTS: dict[str, str] = {
    "登陆": "登录", "帐号": "账号", "帐户": "账户", "帐单": "账单", "其它": "其他",
    "做为": "作为", "按装": "安装",
}


def _term_pattern() -> tuple[re.Pattern[str], dict[str, tuple[str, str]]]:
    names: dict[str, tuple[str, str]] = {}
    for english, chinese, others in TERMS:
        for form in (english, *others, *([chinese] if chinese else [])):
            names.setdefault(form.casefold(), (english, chinese or english))
    alternatives = []
    for form in sorted(names, key=len, reverse=True):
        escaped = re.escape(form).replace(r"\ ", r"\s+")
        if _CJK.match(form):
            alternatives.append(escaped)
        else:
            # a whole word, not a part of a name glued from parts (pr-123, docs/, .js)
            alternatives.append(rf"(?<![\w./-]){escaped}(?![\w-]|/\w|\.\w)")
    return re.compile("|".join(alternatives), re.IGNORECASE), names


_TERM, _TERM_OF = _term_pattern()

_ENGLISH_NUMBERS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
}
_ENGLISH_NUMBER = re.compile(r"\b(" + "|".join(_ENGLISH_NUMBERS) + r")\b(?![-‐])", re.IGNORECASE)
# 1,000 and 1,000,000 (groups of three), 10k and 1.5k, 1万 and 2 千
_GROUPED = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+)(?![\d,]|\.\d)")
_KILO = re.compile(r"(?<![A-Za-z0-9_.])(\d+(?:\.\d+)?)\s?k\b", re.IGNORECASE)
_ZH_MAGNITUDE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s?([千万亿])(?![克米瓦])")
_ZH_NUMERALS = "零〇一二两三四五六七八九十百千万亿"
_ZH_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
             "七": 7, "八": 8, "九": 9}
_ZH_UNIT = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
# what a Chinese numeral counts: a measure word or a unit (a numeral before anything else is
# often a word: 一起, 统一, 千万不要)
_MEASURE = (
    "个|位|名|小时|分钟|秒钟|毫秒|秒|天|周|次|人|年|月|倍|台|条|份|页|楼|层|只|张|本|辆|件|套|间|家"
    "|元|块|行|字|米|公里|千米|克|千克|公斤|岁|号|日|点钟|核|节|票|笔|项|遍|轮|版"
)
# a numeral starts with a digit or 十, never with 百, 千 or 万 alone (千克 is a kilogram) nor
# after a digit (1万 is `_ZH_MAGNITUDE`'s)
_ZH_NUMBER = re.compile(
    rf"(?<![\d.])([零〇一二两三四五六七八九十][{_ZH_NUMERALS}]*)(?=\s?(?:{_MEASURE}))")
# 九点半, 十点一刻, 9点, 9点15分; 一点 / 三点 only with 半, 一刻 or 分 after, or a time of day
# before (一点 is also "a little", 三点 "three points")
_TIME_OF_DAY = "早上|早晨|上午|中午|下午|晚上|凌晨|傍晚|夜里|每天|每晚|每早"
_AFTERNOON = "下午|晚上|傍晚|夜里|每晚"
_ZH_CLOCK = re.compile(
    r"(\d{1,2}|[零一二两三四五六七八九十]{1,3})\s?点(?:钟)?"
    r"(半|一刻|三刻|(\d{1,2}|[零一二三四五六七八九十]{1,3})\s?分)?"
)
# a unit spelt another way after a number: one spelling each (30 minutes / 30 min / 30 分钟)
_UNITS = (
    ("ms", r"milliseconds?|millis|msecs?|ms|毫秒"),
    ("s", r"seconds?|secs?|s|秒钟|秒"),
    ("min", r"minutes?|mins?|分钟"),
    ("h", r"hours?|hrs?|h|小时"),
    ("d", r"days?|d|天"),
)
_UNIT = re.compile(
    r"(?<![A-Za-z0-9_.])(\d+(?:\.\d+)?)\s?(?:个\s?)?(?:"
    + "|".join(rf"(?P<{short}>{forms})" for short, forms in _UNITS) + r")(?![a-zA-Z])",
    re.IGNORECASE,
)


def zh_number(text: str) -> int | None:
    """The value of a Chinese numeral (十五, 两千, 一万二千, 三百零五), or None."""
    total, section, digit = 0, 0, None
    for char in text:
        if char in _ZH_DIGIT:
            digit = _ZH_DIGIT[char]
        elif char in _ZH_UNIT:
            section += (1 if digit is None else digit) * _ZH_UNIT[char]
            digit = None
        elif char in _ZH_BIG:
            section += digit or 0
            total += (section or 1) * _ZH_BIG[char]
            section, digit = 0, None
        else:
            return None
    if digit is not None:
        if len(text) > 1 and text[-2] in _ZH_UNIT and text[-2] != "十":
            digit *= _ZH_UNIT[text[-2]] // 10  # 两千五 is 2500
        section += digit
    return total + section


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _clock(match: re.Match[str]) -> str:
    hour_text, minutes = match.group(1), match.group(2)
    if not hour_text.isdigit():
        hour_value = zh_number(hour_text)
        if hour_value is None or hour_value > 24:
            return match.group(0)
        before = match.string[max(0, match.start() - 3) : match.start()]
        if hour_text in ("一", "三", "几") and not minutes and not re.search(
                rf"(?:{_TIME_OF_DAY})\s?$", before):
            return match.group(0)
        if not minutes and not re.search(rf"(?:{_TIME_OF_DAY})\s?$", before) and not (
                match.group(0).endswith("钟")):
            return match.group(0)  # 三点建议: three points, not three o'clock
        hour = hour_value
    else:
        hour = int(hour_text)
    before = match.string[max(0, match.start() - 3) : match.start()]
    if hour < 12 and re.search(rf"(?:{_AFTERNOON})\s?$", before):
        hour += 12  # 下午三点 is 15:00
    if not minutes:
        minute = 0
    elif minutes == "半":
        minute = 30
    elif minutes == "一刻":
        minute = 15
    elif minutes == "三刻":
        minute = 45
    else:
        digits = match.group(3)
        value = int(digits) if digits.isdigit() else zh_number(digits)
        if value is None or value >= 60:
            return match.group(0)
        minute = value
    # spaced: a time glued to the characters around it reads as one name (下午15:00代码评审)
    return f" {hour}:{minute:02d} "


# a unit of time after 一 or 两 (两个小时, 一天): a count, written as a number as 三天 is
_DURATION = re.compile(r"个?\s?(?:小时|分钟|秒钟|秒|毫秒|天)")


def _zh_numeral(match: re.Match[str]) -> str:
    value = zh_number(match.group(1))
    after = match.string[match.end() : match.end() + 4].lstrip()
    if value is None or (len(match.group(1)) == 1 and match.group(1) in "一两"
                         and not _DURATION.match(after)):
        # 一个, 两个: "a", "a couple" as often as a count; left as the words they are (a
        # count of one or two still reads as a number to `similarity.values`)
        return match.group(0)
    return f"{value} " if not after.startswith("个") else f"{value}"


def _term(match: re.Match[str]) -> str:
    written = match.group(0)
    if len(written) <= 3 and written.istitle():
        return written  # "Mr", "Ts", "Env": a word or a title, not the abbreviation
    english, chinese = _TERM_OF[" ".join(written.casefold().split())]
    text = match.string
    around = text[max(0, match.start() - 12) : match.end() + 12]
    return chinese if _CJK.search(around) else english


_FULL_WIDTH = {code: code - 0xFEE0
               for first, last in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A))
               for code in range(first, last + 1)}
# A duration said in words: half an hour, 半小时, 一刻钟
_SAID_DURATIONS = (
    (re.compile(r"\b(?:an?|one)\s+hour\s+and\s+a\s+half\b|一个半小时", re.IGNORECASE), "90min"),
    (re.compile(r"\bhalf\s+an\s+hour\b|半个?小时|半个钟头?", re.IGNORECASE), "30min"),
    (re.compile(r"\b(?:a\s+)?quarter\s+of\s+an\s+hour\b|一刻钟", re.IGNORECASE), "15min"),
    (re.compile(r"\ban\s+hour\b", re.IGNORECASE), "1h"),
)
# 3pm, 3:30 p.m., 9 am: the 24-hour clock (15:00, 15:30, 9:00)
_TWELVE_HOUR = re.compile(r"(?<![\d:])(\d{1,2})(?::(\d{2}))?\s?([ap])\.?m\.?(?![a-z])",
                          re.IGNORECASE)
# Fri / Friday, Tue / Tuesday (capitalised: "sat", "wed" and "sun" are words); Sat and Sun
# only where a day is named ("on Sat", "Sat-Sun", "Sat 10:00")
_DAY_SHORT = re.compile(
    r"\b(Mon|Tues?|Wed|Thu(?:rs?)?|Fri)\b\.?"
    r"|(?:(?<=\bon\s)|(?<=very\s)|(?<=each\s)|(?<=ntil\s)|(?<=till\s)|(?<=from\s)"
    r"|(?<=[-–/])|(?<=[-–/]\s))(Sat|Sun)\b\.?"
    r"|\b(Sat|Sun)\b\.?(?=\s?[-–/]|\s\d)"
)
# 星期五, 礼拜五, 周五 are one day; 星期天 is 周日
_ZH_DAY = re.compile(r"(?:星期|礼拜|周)([一二三四五六日天])")
_DAY_NAMES = {"mon": "Monday", "tue": "Tuesday", "wed": "Wednesday", "thu": "Thursday",
              "fri": "Friday", "sat": "Saturday", "sun": "Sunday"}


def _twelve_hour(match: re.Match[str]) -> str:
    hour = int(match.group(1))
    if not 1 <= hour <= 12:
        return match.group(0)
    hour = hour % 12 + (12 if match.group(3).casefold() == "p" else 0)
    return f"{hour}:{match.group(2) or '00'}"


def _day(match: re.Match[str]) -> str:
    short = next(group for group in match.groups() if group)
    return _DAY_NAMES[short[:3].casefold()]


def normalised(text: str) -> str:
    """`text` with each term, number, unit, clock time and variant character written one way
    (see the module). Idempotent: a normalised text is its own normal form. Short texts
    (descriptions, sentences), compared again and again, are remembered; a body is not."""
    return _normalised_short(text) if len(text) <= CACHED_CHARS else _normalised(text)


CACHED_CHARS = 400


@lru_cache(maxsize=8192)
def _normalised_short(text: str) -> str:
    return _normalised(text)


def _normalised(text: str) -> str:
    # full-width digits and letters (５分钟, ＰＲ) are the ASCII ones; full-width punctuation
    # stays Chinese punctuation (a ":" would glue the words around it into one name)
    text = text.translate(_FULL_WIDTH)
    for wrong, right in VARIANTS.items():
        text = text.replace(wrong, right)
    text = _TERM.sub(_term, text)
    for pattern, duration in _SAID_DURATIONS:
        text = pattern.sub(duration, text)
    text = _ZH_CLOCK.sub(_clock, text)
    text = _TWELVE_HOUR.sub(_twelve_hour, text)
    text = _DAY_SHORT.sub(_day, text)
    text = _ZH_DAY.sub(lambda m: "周" + ("日" if m.group(1) == "天" else m.group(1)), text)
    text = _GROUPED.sub(lambda m: m.group(1).replace(",", ""), text)
    text = _KILO.sub(lambda m: _number(float(m.group(1)) * 1000), text)
    text = _ZH_MAGNITUDE.sub(
        lambda m: _number(float(m.group(1)) * {"千": 1000, "万": 10_000, "亿": 10**8}[m.group(2)]),
        text)
    text = _ZH_NUMBER.sub(_zh_numeral, text)
    text = _ENGLISH_NUMBER.sub(lambda m: str(_ENGLISH_NUMBERS[m.group(1).casefold()]), text)
    text = _UNIT.sub(lambda m: f"{m.group(1)}{m.lastgroup}", text)
    return text


_WORD = re.compile(r"(?<![\w])[a-z]{5,}(?![\w])")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _slips(word: str) -> set[str]:
    """The words one slip of the keys from `word`, its first and last letters kept: a letter
    inside it dropped or added, or two neighbours inside it swapped. Not a letter changed
    for another (staging / staying, lines / lives: two words as often as a slip)."""
    inner = range(1, len(word) - 1)
    found = {word[:at] + word[at + 1 :] for at in inner}
    found |= {word[:at] + word[at] + word[at:] for at in inner}
    found |= {word[:at] + word[at + 1] + word[at] + word[at + 2 :]
              for at in range(1, len(word) - 2)}
    found |= {word[:at] + letter + word[at:] for at in inner for letter in _LETTERS}
    found.discard(word)
    return found


# British and American spellings of one word: colour / color, organise / organize,
# analyse / analyze, centre / center, licence / license, travelled / traveled
_SPELLINGS = (("our", "or"), ("is", "iz"), ("ys", "yz"), ("tre", "ter"), ("ence", "ense"),
              ("ll", "l"), ("ogue", "og"))


def _spellings(word: str) -> set[str]:
    """The other spellings of `word` (British / American), one pattern at a time."""
    found = set()
    for british, american in _SPELLINGS:
        for one, other in ((british, american), (american, british)):
            at = word.find(one, 1)
            while at != -1:
                found.add(word[:at] + other + word[at + len(one) :])
                at = word.find(one, at + 1)
    found.discard(word)
    return found


def mend_typo(first: str, second: str, held: Callable[[str], int]) -> str:
    """`second` with a word mistyped in one of the two texts written as the other writes it.

    A word of one text (in lower case, at least five letters) one slip of the keys from a
    word of the other (`_slips`: a letter dropped, added or doubled inside it, two neighbours
    swapped; the first and last letters kept, as `search.spelling` assumes), when one of the
    two stands in no memory of the folder but the one that says it (`held(word)`, how many
    memories hold it): "ediotr" beside "editor". A word held by other memories is a word the
    folder uses, never a slip; the pair is then left as written. A British spelling beside
    the American one (colour / color, organise / organize: `_SPELLINGS`) is one word, however
    many memories use either.
    """
    a_words, b_words = set(_WORD.findall(first)), set(_WORD.findall(second))
    for word in sorted(b_words - a_words):
        fixes = sorted(fix for fix in _spellings(word) if fix in a_words - b_words)
        if not fixes:
            fixes = sorted(fix for fix in _slips(word) if fix in a_words - b_words)
            if len(fixes) == 1 and min(held(word), held(fixes[0])) > 1:
                fixes = []
        if len(fixes) == 1:
            second = re.sub(rf"(?<![\w]){re.escape(word)}(?![\w])", fixes[0], second)
    return second


def folder_words(texts: Iterable[str]) -> Callable[[str], int]:
    """How many of `texts` hold a lower-case word, for `mend_typo`."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(_WORD.findall(text.casefold())))
    return lambda word: counts.get(word, 0)
