"""How alike two memories are, for the near-duplicate rule: term sets, Jaccard, containment.

Terms are the index's own (`tokens.tokenize`): stemmed words for Latin text,
character bigrams for CJK. Left out: CJK single-character terms (`~x`), which
make merely related Chinese texts look alike ("用户的猫…" and "用户的狗…" share
most of their characters), and bigrams with a function character in them
(户在, 区是), which say nothing and make twins that differ in one particle
("是"/"为") look apart. A text with nothing else keeps what it has.

Two measures, both 0..1:

- `head`: Jaccard of the description+name terms. Twins say the same thing in
  nearly the same words; related memories share a topic but differ in the
  word that matters ("cat"/"dog", "staging"/"production"), which costs a short
  description a large share of its terms.
- `contained`: the share of one body's terms found in the other body, so that a
  merge never archives a body with content the kept memory lacks.

Numbers must agree: "release 2.3" and "release 2.4" are different facts
however alike the rest is. The thresholds were measured on labelled pairs in
English and Chinese (see tests/test_dream_dedupe.py and the module `dedupe`).

Why one module: `difference` is one judgement, a chain of small checks (a number, a
bound, a negation, a quantity, a place, a direction, a person, a key term…) over the
same helpers (`_units`, `_said`, `key_words`), each check a pattern and a few lines; the
near-duplicate and contradiction rules read it as one answer, and split across modules
its order (a bound before a key term, a swap last) would be hidden.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from ..memory.value import Memory
from ..search import tokens
from ..search.tokens import has_cjk, is_unigram, tokenize
from .rewording import HAN, normalised

MIN_BODY_TERMS = 8
"""Bodies with fewer distinct terms than this carry too little to compare."""


@dataclass(frozen=True)
class Fingerprint:
    """The term sets of one memory that the near-duplicate rule compares."""

    id: str
    head: frozenset[str]
    numbers: frozenset[str]
    aliases: frozenset[str]
    body: frozenset[str]
    description: str = ""


_FUNCTION_CHARS = frozenset(getattr(tokens, "CHINESE_STOP_CHARS", ())) | frozenset(
    getattr(tokens, "CHINESE_BREAKS", "")
)


def terms(text: str) -> frozenset[str]:
    """Index terms of `text` as a set, without CJK unigrams or function-character bigrams."""
    found = tokenize(text)
    strong = frozenset(
        t
        for t in found
        if not is_unigram(t) and not (has_cjk(t) and any(c in _FUNCTION_CHARS for c in t))
    )
    return strong if strong else frozenset(found)


def fingerprint(memory: Memory) -> Fingerprint:
    """The terms of a memory, its terms, numbers and units each written one way
    (`rewording.normalised`: k8s / Kubernetes, 1,000 / 1000 are one term)."""
    description = normalised(memory.description)
    head_text = description if not memory.name else f"{description} ; {normalised(memory.name)}"
    head = terms(head_text)
    return Fingerprint(
        id=memory.id,
        head=head,
        # a number, not a name with a digit in it (S3, EC2, e5)
        numbers=frozenset(t for t in terms(description) if t[:1].isdigit()),
        aliases=terms(" ; ".join(memory.aliases)),
        body=terms(normalised(memory.body[:20_000])),
        description=memory.description,
    )


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def containment(part: frozenset[str], whole: frozenset[str]) -> float:
    """Share of `part`'s terms that are also in `whole` (1.0 for an empty `part`)."""
    if not part:
        return 1.0
    return len(part & whole) / len(part)


def body_covered(loser: Fingerprint, keeper: Fingerprint, threshold: float) -> tuple[bool, float]:
    """Whether the keeper's body already says what the loser's says, and the measured share."""
    if len(loser.body) < MIN_BODY_TERMS:
        return True, 1.0
    share = containment(loser.body, keeper.body | keeper.head)
    return share >= threshold, share


# what makes two alike descriptions different facts

_ZH_DAYS = {"一": "mon", "二": "tue", "三": "wed", "四": "thu", "五": "fri", "六": "sat",
            "日": "sun", "天": "sun"}
_WEEKDAY_WORDS = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:周|星期|礼拜)[一二三四五六日天]",
    re.IGNORECASE,
)
# 9:30, 9.30 am, 9点; not 3.12 (Python 3.12 is a version, not a time)
# (no word boundary in Chinese: 每天9:30开站会)
_TIME = re.compile(
    r"(?<![\d:.])\d{1,2}:\d{2}(?![\d])|\b\d{1,2}\.\d{2}(?=\s*(?:[ap]\.?m\b|h\b))|\d{1,2}点")
_LATIN_WORD = re.compile(r"[^\W\d_]+|\d+(?:[.,]\d+)*", re.UNICODE)
_CJK_CHAR = re.compile(f"[{HAN}]")
# Characters and words that reword without changing the fact: 是/为 ("is"), 都 ("all"),
# 请 ("please"), "the", "a", punctuation words.
_PLAIN_CHARS = frozenset("的了是为在和与及也都就又很把被由给让对从向之其而或个一每请")
_PLAIN_WORDS = frozenset(
    "the a an of to and or is are be for with on in at by it its this that s".split()
)
# "The user", the person a memory is about, says nothing of the fact ("The user prefers
# fish" / "Prefers fish"); "user" elsewhere names a thing: "The limit is per user" / "…per
# team".
_SUBJECT = re.compile(r"^\s*user(?:['’]s)?\b|\bthe\s+user(?:['’]s)?\b", re.IGNORECASE)


def _latin_part(text: str) -> str:
    """`text` without its CJK characters, without "the user", the person it is about, and
    without the words `difference` compares by their kind (`_by_kind`)."""
    return _SUBJECT.sub(" ", _CJK_CHAR.sub(" ", _by_kind(text)))


@lru_cache(maxsize=4096)
def _by_kind(text: str) -> str:
    """`text` without its quantity, bound, negation and modal words ("always", "every", "at
    most", "never", "must", "requires", 一律, 不, 必须), which `difference` compares by their
    kind: one added on one side is a rewording ("Squash commits when merging" / "Always
    squash-merge", "Merging requires two approvals" / "Two reviewers must approve"), one
    side's against the other's another fact. "May" with a capital, the month, stays."""
    text = _QUANTITY.sub(" ", _BOUND.sub(" ", text))
    text = _NEGATION.sub(" ", text.replace("’", "'"))
    return _MODAL.sub(lambda m: m.group(0) if m.group(0) == "May" else " ", text)


# Words that say the same of a preference, a length or a test double, so that "The user
# prefers fish" / "…likes using fish", 喜欢 / 习惯, "brief" / "short", "mock" / "stub" read
# as one fact when their bodies say the same (`canonical`). Only words that reword, never
# ones that name a thing: a person, a place, an environment stays a key term.
_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("prefer", "prefers", "preferred", "like", "likes", "liked", "love", "loves", "enjoy",
     "enjoys", "favour", "favours", "favor", "favors", "usually use", "tends to use",
     "is used to", "likes using", "prefers using", "loves using"),
    ("short", "brief", "concise", "terse", "succinct", "compact"),
    ("answer", "answers", "reply", "replies", "response", "responses"),
    ("mock", "mocks", "stub", "stubs", "fake", "fakes", "mocked", "stubbed", "faked"),
    ("never", "do not", "don't", "must not", "should not"),
    ("always", "every time", "each time"),
    ("use", "uses", "using"),
    ("start", "starts", "begin", "begins"),
    ("remove", "removes", "delete", "deletes"),
    ("child", "kid"),
    ("children", "kids"),
    ("large", "big"),
    ("fast", "quick"),
    ("show", "shows", "display", "displays"),
    ("choose", "chooses", "pick", "picks", "select", "selects"),
    ("buy", "buys", "purchase", "purchases"),
    ("help", "helps", "assist", "assists"),
    ("用", "使用", "采用"),
    ("早上", "早晨", "清晨"),
    ("孩子", "小孩", "子女"),
    ("电脑", "计算机"),
    ("快速", "迅速"),
    ("显示", "展示"),
    ("删除", "删掉", "移除"),
    ("购买", "买了"),
    ("选择", "挑选"),
    ("帮助", "协助", "帮忙"),
    ("运行", "跑", "执行"),
    ("喜欢", "习惯", "偏好", "爱用", "常用", "倾向于", "更喜欢", "偏爱"),
    ("简洁", "简短", "简明", "精简", "简练"),
    ("回答", "回复", "答复"),
    ("要", "保持", "要保持", "应该", "应当", "需要"),
    ("不要", "别", "不许", "不准", "禁止", "不能"),
)
_SYNONYM_OF = {word: words[0] for words in _SYNONYMS for word in words}
_SYNONYM = re.compile(
    "|".join(
        (re.escape(w) if _CJK_CHAR.match(w) else rf"\b{re.escape(w)}\b")
        for w in sorted(_SYNONYM_OF, key=len, reverse=True)
    ),
    re.IGNORECASE,
)


def canonical(text: str) -> str:
    """`text` with words that only reword (prefer / like, brief / short, 喜欢 / 习惯) made one,
    and its terms, numbers and units written one way (`rewording.normalised`)."""
    return _SYNONYM.sub(lambda m: _SYNONYM_OF[m.group(0).casefold()], normalised(text))


# Chinese numbers before a measure word (两个人, 半小时, 三天): a number as much as "3 days".
_ZH_NUMBER = re.compile(
    r"([零一二两三四五六七八九十百千万半]+)"
    r"(?=个|位|名|小时|分钟|天|周|次|人|年|月|倍|台|条|份|页|点|楼|层|只|张|本|辆|件|套|间|家)"
)
# a digit after a letter is part of a name, not a number (S3, EC2, h2)
_NUMBER = re.compile(
    r"((?:\+|(?<![\w.])[-−])?(?<![A-Za-z\d])\d+(?:[.,/]\d+)*)(?: ?([a-zµ%‰]{1,3})(?![a-z]))?")
_ZH_DIGITS = {"零": "0", "一": "1", "二": "2", "两": "2", "三": "3", "四": "4", "五": "5",
              "六": "6", "七": "7", "八": "8", "九": "9", "十": "10", "半": "0.5"}


def _zh_numbers(text: str) -> frozenset[str]:
    """The Chinese numbers of `text`, but "once" (一次), which a rule says or leaves
    unsaid alike (测试库每晚重置 / 每晚重置一次测试库); 两次 is a number."""
    return frozenset(
        _ZH_DIGITS.get(m.group(1), m.group(1)) for m in _ZH_NUMBER.finditer(text)
        if not (m.group(1) == "一" and text[m.end():m.end() + 1] == "次")
    )


def values(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The numbers, weekdays and times a text names: a difference in any is a different fact."""
    folded = text.casefold()
    # "3/5" and "5/3" are two dates, not the same two numbers
    # a sign is part of its number (UTC+8 / UTC-8); a hyphen after a word is not (ec2-18)
    # and so is its unit, one to three letters after it (500 ms / 500 s, 5k / 5m)
    numbers = frozenset(
        number + (unit if unit and (len(unit) == 1 or unit not in tokens.ENGLISH_STOP_WORDS)
                  else "")
        for number, unit in _NUMBER.findall(_TIME.sub(" ", folded))
    )
    numbers |= _zh_numbers(folded)
    # 周五 and Friday are one day
    weekdays = frozenset(
        _ZH_DAYS.get(m.group(0)[-1], m.group(0)[:3]) for m in _WEEKDAY_WORDS.finditer(folded)
    )
    times = frozenset(_TIME.findall(folded))
    return numbers, weekdays, times


def key_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The content words (Latin, stemmed as the index stems) and the CJK characters of a text."""
    latin = frozenset(
        t for t in tokenize(_latin_part(text)) if not has_cjk(t) and t not in _PLAIN_WORDS
    )
    chars = frozenset(c for c in _CJK_CHAR.findall(_by_kind(text)) if c not in _PLAIN_CHARS)
    return latin, chars


def difference(first: str, second: str) -> str | None:
    """What makes two alike texts say different facts, or None when nothing does.

    A differing number (with its sign and unit: UTC+8 / UTC-8, 500 ms / 500 s), weekday or
    time; a bound ("at least" / "above", 以上 / 以下, or beside the same number: "Node 18" /
    "Node >= 18"); a modality ("must" / "should", 必须 / 可以); a past on one side (works /
    worked, 以前); who the fact is about ("the user's son" / "the user"); "is" given a verb
    in its place ("is the tech lead" / "reports to the tech lead"); a unit made finer (秒 /
    毫秒); a currency sign or a code name written
    differently on each side ($ / €, fetchUser / fetchUsers); "about" a number on one side
    only ("about 5 minutes" / "5 minutes", 左右); less than always on one side only
    ("sometimes", "hardly", 有时, 很少); near or outside a place on one side only ("near
    Berlin" / "in Berlin", 上海附近); a thing gone to on one side, come from on the other
    ("to the server" / "from the server", 寄给李娜 / 由李娜寄来); another person by pronoun
    ("my key" / "our key", 我的 / 我们的); a permission beside a prohibition (允许 / 禁止,
    which `canonical` makes a negation); a name glued from parts beside
    one of its parts alone ("build" / "build:prod"); a negation on one side only ("likes" /
    "does not like", 喜欢 / 不喜欢) or moved (不吃辣，喜欢 / 爱吃辣，不喜欢); a quantity ("all" /
    "some", "this repo" / "all repos", "every other week" / "every week"), "only" on one side,
    one thing had or more ("has a cat" / "has cats"); a word or
    character gone though it stands elsewhere too (标准输出 / 标准错误 beside 日志输出, counted);
    opposites the index drops as stop words
    ("before" / "after", "am" / "pm"); the same words with two parts in swapped
    places ("Alice reports to Bob" / "Bob reports to Alice"); or a swapped key term: each text has a
    word (or, in Chinese, a character) the other lacks, and only one or two of them
    ("unit" / "integration", 猫 / 狗, 测试 / 生产) — rewording changes more words
    than that, and an added word ("every", 都) changes only one side.

    Both texts are first written one way (`rewording.normalised`: k8s / Kubernetes, 1,000 /
    1000, 30 minutes / 30 min, 3pm / 15:00 are one thing), so that what differs is a fact.
    """
    first, second = normalised(first), normalised(second)
    found = _difference_but_a_swap(first, second)
    if found:
        return found
    swapped = _swapped(first, second)
    if swapped:
        return f"a different key term (swapped: {swapped[0]} / {swapped[1]})"
    return None


def only_swapped(first: str, second: str) -> bool:
    """Whether two parts in swapped places are all that `difference` finds between the texts."""
    first, second = normalised(first), normalised(second)
    return _difference_but_a_swap(first, second) is None and _swapped(first, second) is not None


def _difference_but_a_swap(first: str, second: str) -> str | None:
    """`difference`, but for two parts in swapped places (checked last, by `_swapped`)."""
    a_numbers, a_days, a_times = values(first)
    b_numbers, b_days, b_times = values(second)
    if a_days != b_days:
        return f"a different weekday ({_shown(a_days)} / {_shown(b_days)})"
    if a_times != b_times:
        return f"a different time ({_shown(a_times)} / {_shown(b_times)})"
    if a_numbers != b_numbers:
        return f"a different number ({_shown(a_numbers)} / {_shown(b_numbers)})"
    for kind, pattern in _EXACT:
        only_a, only_b = _exact(pattern, first, second), _exact(pattern, second, first)
        if only_a and only_b:
            return f"a different {kind} ({_shown(only_a)} / {_shown(only_b)})"
    glued = _glued_name(first, second) or _glued_name(second, first)
    if glued:
        return f"a different name ({glued[0]} / {glued[1]})"
    direction = _direction(first, second)
    if direction:
        return f"a different direction ({direction[0]} / {direction[1]})"
    a_persons, b_persons = _persons(first), _persons(second)
    if a_persons - b_persons and b_persons - a_persons:
        return (f"a different person ({_shown(a_persons - b_persons)} / "
                f"{_shown(b_persons - a_persons)})")
    if _negated(first) != _negated(second):
        if bool(_PERMIT.search(first)) != bool(_PERMIT.search(second)):
            return "a permission on one side, a prohibition on the other"
        return "a negation on one side only (one says not)"
    moved = _negation_moved(first, second)
    if moved:
        return f"a negation in another place (not {moved[0]} / not {moved[1]})"
    # one side saying one, the other another ("all" / "some", "must" / "should")
    for kind, said in (("quantity", _quantities), ("modality", _modalities)):
        a_said, b_said = said(first), said(second)
        if a_said - b_said and b_said - a_said:
            return f"a different {kind} ({_shown(a_said - b_said)} / {_shown(b_said - a_said)})"
    if bool(_ONLY.search(first)) != bool(_ONLY.search(second)):
        return "a restriction on one side only (one says only)"
    if bool(_SELDOM.search(first)) != bool(_SELDOM.search(second)):
        return "a frequency on one side only (one says sometimes or rarely)"
    if bool(_NEAR.search(first)) != bool(_NEAR.search(second)):
        return "a place on one side only (one says near or outside)"
    # a bound on one side only counts when both name the number ("Requires Node 18" /
    # "Requires Node >= 18"): elsewhere rewording adds one ("Keep it short" / "…at most")
    a_bound, b_bound = _bounds(first), _bounds(second)
    if a_bound != b_bound and (
        (a_bound - b_bound and b_bound - a_bound) or (a_numbers and a_numbers == b_numbers)
    ):
        return f"a different bound ({_shown(a_bound - b_bound)} / {_shown(b_bound - a_bound)})"
    if bool(_PAST.search(first)) != bool(_PAST.search(second)):
        return "a time on one side only (one says it was)"
    # each checked both ways: (as in the text that says it, as in the other)
    for kind, check in (("unit", _magnitude), ("tense", _tense), ("subject", _owned),
                        ("relation", _copula), ("number", _one_and_many)):
        found = check(first, second) or check(second, first)
        if found:
            return f"a different {kind} ({found[0]} / {found[1]})"
    names = _names(first, second)
    if names:
        return f"a different name ({names[0]} / {names[1]})"
    a_words, a_chars = key_words(first)
    b_words, b_chars = key_words(second)
    only_a, only_b = a_words - b_words, b_words - a_words
    if _swapped_terms(only_a, only_b, 2):
        return (
            f"a different key term ({_as_written(first, only_a)} / {_as_written(second, only_b)})"
        )
    verb = _verb_for_word(first, second, only_a, only_b) or _verb_for_word(
        second, first, only_b, only_a)
    if verb:
        return f"a different key term ({verb[0]} / {verb[1]})"
    only_a, only_b = a_chars - b_chars, b_chars - a_chars
    if _swapped_terms(only_a, only_b, 3):
        return f"a different key term ({_shown(only_a)} / {_shown(only_b)})"
    # counted: a word or character said twice on one side and once on the other is one gone
    # (日志输出到标准输出 / 日志输出到标准错误: 输出 / 错误, though both have 输出; "Staging
    # uses the prod database" / "Staging uses the staging database": prod / staging)
    a_count, b_count = _word_counts(first), _word_counts(second)
    gone_a, gone_b = frozenset(a_count - b_count), frozenset(b_count - a_count)
    if _swapped_terms(gone_a, gone_b, 2):
        return f"a different key term ({_shown(gone_a)} / {_shown(gone_b)})"
    a_count, b_count = _char_counts(first), _char_counts(second)
    gone_a, gone_b = frozenset(a_count - b_count), frozenset(b_count - a_count)
    if _swapped_terms(gone_a, gone_b, 3):
        return f"a different key term ({_shown(gone_a)} / {_shown(gone_b)})"
    # Counted as written, a name is one word though the index splits it (RabbitMQ: rabbitmq,
    # rabbit, mq), and a name may swap scripts (用户的猫叫芝麻 / 用户的猫叫 Miso).
    a_names, b_names = _whole_words(first), _whole_words(second)
    a_side = (a_names - b_names, only_a)
    b_side = (b_names - a_names, only_b)
    most = 3 if only_a or only_b else 2
    if 1 <= len(a_side[0]) + len(a_side[1]) <= most >= len(b_side[0]) + len(b_side[1]) >= 1 and (
            not _light(a_side[0] | a_side[1] | b_side[0] | b_side[1])):
        shown = [", ".join(sorted(words | chars)) for words, chars in (a_side, b_side)]
        return f"a different key term ({shown[0]} / {shown[1]})"
    opposite = _opposite(first, second)
    if opposite:
        return f"a different key term ({opposite[0]} / {opposite[1]})"
    return None


# How many or how much, words the index drops as stop words: one side saying "all" and the
# other "some" ("Run all tests…" / "Run some tests…", "both approvals" / "either approval") is
# another fact; a word added on one side only ("every") is not, as rewording adds them.
# "this repo" / "all repos" is one and every one of a kind; "every other week" is half of them.
# In Chinese the adverbs of "without exception" (统一, 一律: 日志统一用 UTC / 日志一律用 UTC);
# 所有, 全部, 本 and 总是 stay characters, compared as key terms (本项目 / 所有项目).
_QUANTITY = re.compile(
    r"\b(?:every\s+(?:other|second)|all|every|each|some|any|both|either|neither|most|many|few"
    r"|several|this|these|once|twice|thrice|a lot of|lots of|plenty of|numerous|a couple of"
    r"|a handful of|always|usually|often|mostly|generally|normally|typically)\b"
    r"|一律|统一|一概",
    re.IGNORECASE,
)
# "Only admins can delete projects" says what "Admins can delete projects" does not: that no
# one else can. One side only, like a negation.
_ONLY = re.compile(r"\b(?:only|solely|exclusively)\b|只有|只能|仅|唯有", re.IGNORECASE)


# How often, when it is less than always: "The user sometimes works on weekends" / "The user
# works on weekends", 用户很少喝咖啡 / 用户喝咖啡. One side only, like "only": the unhedged
# side says it holds, the other that it mostly does not. ("usually" / "always", 一般 / 总是,
# on both sides, are key terms apart.)
_SELDOM = re.compile(
    r"\b(?:sometimes|occasionally|rarely|seldom|hardly|barely|scarcely|now and then"
    r"|from time to time)\b|有时|偶尔|很少|极少|难得|间或",
    re.IGNORECASE,
)
# Where, when it is not at the place named: "based near Berlin" / "based in Berlin", 上海附近 /
# 上海. One side only.
_NEAR = re.compile(
    r"\b(?:near|nearby|outside|close to|next to|beyond|around(?!\s*[\d~]))\b"
    r"|附近|周边|周围|一带|郊区|旁边|以外|之外",
    re.IGNORECASE,
)
# Who a pronoun names: "my key" / "our key" / "their CI", 我的 / 我们的 / 他们的. Words the
# index drops as stop words (or characters it does not tell apart from 们).
_PERSON = re.compile(
    r"\b(?:I|me|my|mine|we|us|our|ours|you|your|yours|they|them|their|theirs)\b"
    r"|我们|咱们|你们|他们|她们|我|你|您",
    re.IGNORECASE,
)
_SAME_PERSON = {"i": "i", "me": "i", "my": "i", "mine": "i", "我": "i",
                "we": "we", "us": "we", "our": "we", "ours": "we", "我们": "we", "咱们": "we",
                "you": "you", "your": "you", "yours": "you", "你": "you", "您": "you",
                "你们": "you", "they": "they", "them": "they", "their": "they",
                "theirs": "they", "他们": "they", "她们": "they"}


def _persons(text: str) -> frozenset[str]:
    """Who the pronouns of `text` name (i, we, you, they); "US" in capitals is a country."""
    return frozenset(
        _SAME_PERSON[m.group(0).casefold()] for m in _PERSON.finditer(text)
        if m.group(0) != "US"
    )


# Which way a thing goes: "Copy the config to the server" / "…from the server", 周报发给张伟
# / 周报由张伟发来. "to" and "from" are stop words, 给 a plain character.
_DIRECTION = re.compile(
    r"\b(?:(to|into|onto|towards?)|(from|out of))\s+(?:(?:the|a|an|my|our|your|their)\s+)?"
    r"([^\W\d_]+)|(给|到|向|往)([\u3400-\u4dbf\u4e00-\u9fff])|(从|由|自)([\u3400-\u4dbf\u4e00-\u9fff])",
    re.IGNORECASE,
)


def _directions(text: str) -> dict[str, set[str]]:
    """Each thing `text` says something goes to or comes from: {thing: {"to", "from"}}."""
    found: dict[str, set[str]] = {}
    for m in _DIRECTION.finditer(text):
        if m.group(3):
            way, thing = ("to" if m.group(1) else "from"), m.group(3).casefold()
        else:
            way, thing = ("to", m.group(5)) if m.group(4) else ("from", m.group(7))
        found.setdefault(thing, set()).add(way)
    return found


def _direction(first: str, second: str) -> tuple[str, str] | None:
    """A thing one text says is gone to and the other that it is come from, each one way
    only: (as in first, as in second)."""
    theirs = _directions(second)
    for thing, ways in sorted(_directions(first).items()):
        other = theirs.get(thing)
        if other and len(ways) == len(other) == 1 and ways != other:
            return f"{next(iter(ways))} {thing}", f"{next(iter(other))} {thing}"
    return None


# A permission on one side, a prohibition on the other: 允许 / 禁止 (which `canonical` makes
# 不要, a negation on one side that may be a rewording), "allow" / "do not allow".
_PERMIT = re.compile(r"\b(?:allow|allows|allowed|permit|permits|permitted)\b|允许|准许|许可",
                     re.IGNORECASE)


# "has a cat" / "has cats": one and more than one of what someone has, which the index stems
# alike. Only what is had: elsewhere "a" is often any one ("Paging the on-call for a database
# incident" / "Who to page for database incidents" say one rule).
_ONE_OF = re.compile(
    r"\b(?:has|have|had|owns?|owned)\s+(?:a|an|one)\s+(?:[a-z-]+\s+)?([a-z]+)\b",
    re.IGNORECASE,
)


def _one_and_many(text: str, other: str) -> tuple[str, str] | None:
    """A thing `text` says is had as one ("has a cat") that `other` says only in the plural
    ("cats"): (as in text, as in other)."""
    words = {w.casefold() for w in re.findall(r"[A-Za-z]+", other)}
    own = {w.casefold() for w in re.findall(r"[A-Za-z]+", text)}
    for match in _ONE_OF.finditer(text):
        one = match.group(1).casefold()
        if one in words:
            continue
        for many in (one + "s", one + "es", one[:-1] + "ies" if one.endswith("y") else ""):
            if many and many in words and many not in own:
                return match.group(0), many
    return None


_SAME_QUANTITY = {"every": "all", "each": "all", "always": "all", "usually": "most",
                  "often": "most", "mostly": "most", "generally": "most", "normally": "most",
                  "typically": "most", "several": "some", "these": "this",
                  "a lot of": "many", "lots of": "many", "plenty of": "many", "numerous": "many",
                  "a couple of": "few", "a handful of": "few", "一律": "all", "统一": "all",
                  "一概": "all"}


def _said(pattern: re.Pattern[str], same: dict[str, str], text: str) -> frozenset[str]:
    """What `pattern` finds in `text`, casefolded, those in `same` made one ("every" / "all")."""
    return frozenset(
        same.get(word, word)
        for word in (" ".join(m.group(0).casefold().split()) for m in pattern.finditer(text))
    )


def _quantities(text: str) -> frozenset[str]:
    """The quantity words of `text`, those that say one amount made one ("every" / "all")."""
    return _said(_QUANTITY, _SAME_QUANTITY, text)


# Which side of a number a bound is: "at least 80%" / "above 80%" / "at most 80%", 以上 /
# 以下 / 不超过, or about it ("about 5", 5 天左右). Words the index drops as stop words;
# each side its own bound is another fact.
_BOUND = re.compile(
    r"\b(?:at least|no (?:less|fewer) than|not (?:less|fewer) than|minimum|min"
    r"|above|over|more than|greater than|exceeding"
    r"|at most|no more than|not more than|maximum|max"
    r"|below|under|less than|fewer than|exactly|up to|capped at|limited to)\b|[<>≤≥]=?|(?<=\d)\+"
    r"|\b(?:about|around|roughly|approximately|circa)(?=\s+\d)|~(?=\s*\d)"
    r"|不少于|不低于|至少|最少|以上|超过|大于|多于|高于|不超过|不多于|至多|最多|以下|以内|少于|小于|低于|恰好"
    r"|上限|封顶|下限"
    r"|大约|大概|左右|约(?=\s*\d)",
    re.IGNORECASE,
)
_SAME_BOUND = {
    "no less than": ">=", "no fewer than": ">=", "not less than": ">=", "not fewer than": ">=",
    "at least": ">=", "minimum": ">=", "min": ">=", "不少于": ">=", "不低于": ">=", "至少": ">=",
    "最少": ">=", "以上": ">=",
    "above": ">", "over": ">", "more than": ">", "greater than": ">", "exceeding": ">",
    "超过": ">", "大于": ">", "多于": ">", "高于": ">",
    "at most": "<=", "no more than": "<=", "not more than": "<=", "maximum": "<=", "max": "<=",
    "不超过": "<=", "不多于": "<=", "至多": "<=", "最多": "<=", "以下": "<=", "以内": "<=",
    "below": "<", "under": "<", "less than": "<", "fewer than": "<", "少于": "<", "小于": "<",
    "低于": "<", "up to": "<=", "capped at": "<=", "limited to": "<=", "上限": "<=", "封顶": "<=",
    "下限": ">=", "exactly": "=", "恰好": "=", ">=": ">=", "≥": ">=", "+": ">=", "<=": "<=",
    "≤": "<=", ">": ">", "<": "<",
    # about a number: "takes about 5 minutes" is not "takes 5 minutes" (大约 / 左右)
    "about": "~", "around": "~", "roughly": "~", "approximately": "~", "circa": "~", "~": "~",
    "大约": "~", "大概": "~", "左右": "~", "约": "~",
}


def _bounds(text: str) -> frozenset[str]:
    """The bounds `text` puts on its numbers (>=, >, <=, <, =, ~), as many as it says."""
    return _said(_BOUND, _SAME_BOUND, text)


# How binding a rule is: "Tests must pass" / "Tests should pass" / "Tests may pass", 必须 /
# 最好 / 可以. Words the index drops as stop words; one side saying one and the other
# another is another rule (a modal on one side only is not: rewording adds them).
_MODAL = re.compile(
    r"\b(?:must|has to|have to|needs? to|requires?|required|should|ought to|may|can|could|might"
    r"|optional|allowed to)\b|必须|务必|一定要|最好|建议|可以|可选",
    re.IGNORECASE,
)
_SAME_MODAL = {"has to": "must", "have to": "must", "need to": "must", "needs to": "must",
               "required": "must", "require": "must", "requires": "must", "务必": "must",
               "必须": "must", "一定要": "must",
               "ought to": "should", "最好": "should", "建议": "should", "could": "may",
               "might": "may", "can": "may", "optional": "may", "allowed to": "may",
               "可以": "may", "可选": "may"}


def _modalities(text: str) -> frozenset[str]:
    """How binding `text` says its rule is: must, should or may, as many as it says."""
    return _said(_MODAL, _SAME_MODAL, text)


# A unit made a thousand times finer or coarser in Chinese by one character before it (秒 /
# 毫秒, 克 / 千克, 米 / 厘米): the index sees one character added, as rewording adds them.
_MAGNITUDE = re.compile(r"([毫微纳皮厘千兆])([\u3400-\u4dbf\u4e00-\u9fff])")


def _magnitude(text: str, other: str) -> tuple[str, str] | None:
    """A unit with a magnitude before it in `text` that `other` names bare: (as in text,
    as in other)."""
    for match in _MAGNITUDE.finditer(text):
        unit = match.group(2)
        bare = other.replace(match.group(0), "")
        if match.group(0) not in other and unit in bare and match.group(1) not in other:
            return match.group(0), unit
    return None


# What someone has, said of them: "The user's son is allergic to peanuts" is not "The user is
# allergic to peanuts"; "The user's manager is Alice" is not "The user is Alice's manager".
_OWNED = re.compile(
    r"([A-Za-z]+)['’]s\s+([A-Za-z]+)|([\u3400-\u4dbf\u4e00-\u9fff])的([\u3400-\u4dbf\u4e00-\u9fff])"
)


def _possessions(text: str) -> dict[tuple[str, str], str]:
    """(owner, thing) for each "X's Y" and X的Y of `text`, stemmed (the last character of
    a Chinese owner, the first of its thing), with the words as written."""
    found = {}
    for match in _OWNED.finditer(text):
        owner, thing = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
        found[(_units(owner)[-1], _units(thing)[0])] = match.group(0)
    return found


def _owned(text: str, other: str) -> tuple[str, str] | None:
    """A thing `text` says someone has whose owner `other` names, while `other` names the
    thing not at all and says nothing `text` does not ("the user's son is allergic" / "the
    user is allergic"), or as the other owner's ("the user's manager is Alice" / "the user
    is Alice's manager"): (as in text, as in other)."""
    theirs = _possessions(other)
    their_units = set(_units(other))
    own = _possessions(text)
    for owner, thing in sorted(own.keys() - theirs.keys()):
        if owner not in their_units:
            continue
        if thing not in their_units and not their_units - set(_units(text)):
            return own[(owner, thing)], "not said"
        # the owners traded places: each text names both
        others = sorted(
            theirs[o, t] for o, t in theirs if t == thing and o != owner and o in _units(text)
        )
        if others:
            return own[(owner, thing)], others[0]
    return None


# Words that carry no fact of their own, only the way a rule or a fact is said: the verbs of
# using, writing down, putting, keeping, having, going, wanting and asking for ("Write code
# examples in plain JS" / "Code examples use plain JavaScript", "Use the company VPN for prod
# access" / "Production access goes through the company VPN", "Please keep answers short" /
# "The user wants answers kept short"), fillers ("basically", "just", "please") and their
# Chinese kin (放在 / 在, 在 Notion 上 / 里; not 来 / 去, a direction). Light words apart on
# both sides are a rewording, not a swapped key term; a light word on one side against another
# word on the other ("Write the tests first" / "Run the tests first") still is one.
_LIGHT = frozenset(
    tokens.stem(word) for word in
    "use uses used using write writes written wrote writing put puts putting keep keeps kept "
    "keeping get gets got gotten getting go goes went gone going have has had having make "
    "makes made making do does did done doing want wants wanted wanting include includes "
    "included including need needs needed require requires required be is are was were been "
    "basically just really actually simply please".split()
) | frozenset("放里上")


def _light(words: frozenset[str]) -> bool:
    """Whether `words` (stemmed words, CJK characters) are all light ones (`_LIGHT`)."""
    return bool(words) and all(_is_light(w) for w in words)


@lru_cache(maxsize=4096)
def _is_light(word: str) -> bool:
    """Whether one word (as written or stemmed) or CJK character is a light one."""
    return word.casefold() in _LIGHT or tokens.stem(word.casefold()) in _LIGHT


def heavy(words: frozenset[str]) -> frozenset[str]:
    """`words` (stemmed words, CJK characters) without the light ones (`_LIGHT`)."""
    return frozenset(w for w in words if not _is_light(w))


def _swapped_terms(only_a: frozenset[str], only_b: frozenset[str], most: int) -> bool:
    """Whether the words (or characters) each side has and the other lacks are a swapped key
    term: one to `most` on each side, not all of them light; or so once the light ones are
    set aside ("Please keep answers detailed" / "The user wants code answers kept short":
    detailed / code, short)."""
    if 1 <= len(only_a) <= most and 1 <= len(only_b) <= most and not _light(only_a | only_b):
        return True
    heavy_a, heavy_b = heavy(only_a), heavy(only_b)
    return 1 <= len(heavy_a) <= most and 1 <= len(heavy_b) <= most


# A name in a Chinese text: a word in Latin letters (用户的 IDE 是 IntelliJ, 部署用 Jenkins). One
# on each side that the other lacks is another thing named, however the rest is reworded
# (用户的 IDE 是 IntelliJ / 用户用 Zed 写代码). English rewords with names as much as it names
# another thing ("British spelling" / "UK English spelling", "US Pacific" / "California
# hours"): there the key-term checks count them with the other words.
_ASCII_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9]*(?:[.+#-][A-Za-z0-9]+)*")


def _names(first: str, second: str) -> tuple[str, str] | None:
    """A name on each side of two Chinese texts that the other does not say: (first's,
    second's), stemmed."""
    if not (_CJK_CHAR.search(first) and _CJK_CHAR.search(second)):
        return None
    a_names = {tokens.stem(w.casefold()) for w in _ASCII_WORD.findall(first)}
    b_names = {tokens.stem(w.casefold()) for w in _ASCII_WORD.findall(second)}
    only_a, only_b = a_names - b_names, b_names - a_names
    if only_a and only_b:
        return ", ".join(sorted(only_a)), ", ".join(sorted(only_b))
    return None


# Verbs the index drops as stop words, which may be the whole fact: "The user is allergic to
# cats" / "The user has cats".
_STOP_VERBS = frozenset(
    "has have had is are was were do does did get gets got can could will would".split()
)


def _verb_for_word(
    text: str, other: str, own: frozenset[str], theirs: frozenset[str]
) -> tuple[str, str] | None:
    """When `text` has one or two content words `other` lacks (`own`), and `other` has none
    of its own but a verb the index drops: (`text`'s words, the verb)."""
    if not 1 <= len(own) <= 2 or theirs:
        return None
    mine = {w.casefold() for w in _LATIN_WORD.findall(text)}
    added = {w.casefold() for w in _LATIN_WORD.findall(other)} - mine - {"a", "an", "the"}
    if added and added <= _STOP_VERBS and not _light(own):
        return _as_written(text, own), ", ".join(sorted(added))
    return None


def _content_units(text: str) -> set[str]:
    """The units of `text` that say something: not stop words, plain words or particles."""
    return {
        u for u in _units(text) if u not in _PLAIN_CHARS and u not in _PLAIN_WORDS
        and u not in tokens.ENGLISH_STOP_WORDS and u not in _FUNCTION_CHARS
    }


# "is" said of one side only, the other saying a verb in its place: "The user is the tech
# lead" / "The user reports to the tech lead", 用户是技术负责人 / 用户向技术负责人汇报.
_COPULAS = frozenset({"is", "are", "was", "were", "是", "为"})


def _copula(text: str, other: str) -> tuple[str, str] | None:
    """When all `text` has that `other` lacks is "is" (是), the rest of it stands in `other`
    in the same order, and `other` says content words in its place: ("is", what other
    says)."""
    own, theirs = set(_units(text)), set(_units(other))
    gone = own - theirs
    if not gone or not gone <= _COPULAS or theirs & _COPULAS:
        return None  # no copula gone, or one said for another (是 / 为): a rewording
    # the rest of `text` in `other`, in its order: words put in its place, not a sentence
    # said anew ("…errors are charted at…" / "The charts of…errors live at…")
    rest = iter(_units(other))
    if not all(unit in rest for unit in _units(text) if unit not in gone):
        return None
    said = [u for u in _units(other) if u in _content_units(other) - own]
    if _light(frozenset(said)):
        return None  # "Commit messages are in English" / "Write commit messages in English"
    return (sorted(gone)[0], " ".join(dict.fromkeys(said))) if said else None


# A fact said of the past on one side only ("The user used to work at Google", 用户以前在
# 谷歌工作): what was is not what is.
_PAST = re.compile(
    r"\b(?:used to|formerly|previously|no longer)\b|以前|曾经|从前|过去|原来", re.IGNORECASE
)
_PAST_FORMS = {"was": "is", "were": "are", "had": "has", "did": "does"}


def _tense(text: str, other: str) -> tuple[str, str] | None:
    """A verb `text` says in the past that `other` says in the present, on the same stem and
    after the same word ("the user worked" / "the user works", "wife was" / "wife is"; not
    "are charted" / "the charts", a passive beside a noun): (as in text, as in other)."""
    own_words = [w.casefold() for w in re.findall(r"[A-Za-z]+", text)]
    their_words = [w.casefold() for w in re.findall(r"[A-Za-z]+", other)]
    own, theirs = set(own_words), set(their_words)
    present = {
        (their_words[k - 1] if k else "", tokens.stem(w)): w
        for k, w in enumerate(their_words)
        if w in theirs - own and not w.endswith("ed")
    }
    for k, word in enumerate(own_words):
        if word in theirs:
            continue
        before = own_words[k - 1] if k else ""
        if word in _PAST_FORMS and present.get((before, _PAST_FORMS[word])) == _PAST_FORMS[word]:
            return word, _PAST_FORMS[word]
        if word.endswith("ed") and len(word) > 4 and (before, tokens.stem(word)) in present:
            return word, present[(before, tokens.stem(word))]
    return None


def _word_counts(text: str) -> Counter[str]:
    """How many times each Latin content word (stemmed as the index stems) stands in `text`."""
    return Counter(
        t for t in tokenize(_latin_part(text)) if not has_cjk(t) and t not in _PLAIN_WORDS
    )


def _char_counts(text: str) -> Counter[str]:
    """How many times each CJK content character stands in `text`."""
    return Counter(c for c in _CJK_CHAR.findall(_by_kind(text)) if c not in _PLAIN_CHARS)


def _whole_words(text: str) -> frozenset[str]:
    """The Latin content words of `text`, each one stem as written (no camel-case parts)."""
    return frozenset(
        tokens.stem(word.casefold())
        for word in _LATIN_WORD.findall(_latin_part(text))
        if not word[0].isdigit() and word.casefold() not in _PLAIN_WORDS
        and word.casefold() not in tokens.ENGLISH_STOP_WORDS
    )


# What the index folds together but that names another thing when it differs: a currency
# sign ($500 / €500) and a code name, compared as written (fetchUser / fetchUsers,
# max_retries / max_retry; the index stems both alike).
_EXACT = (
    ("currency", re.compile(r"[$€£¥₹₩₽¢]")),
    ("code name", re.compile(r"\b[A-Za-z_]\w*?(?:[a-z0-9][A-Z]|_)\w*")),
)


# A name glued from parts ("build:prod", "db-staging", "api/v2", "node.js") is one name: a
# text naming one of its parts alone names another thing ("npm run build" / "npm run
# build:prod"), though the index splits it into words the other text has.
_GLUED = re.compile(r"[^\W_]+(?:[:/._-][^\W_]+)+")


def _glued_name(text: str, other: str) -> tuple[str, str] | None:
    """A glued name of `text` that `other` lacks, of which `other` names one part alone but
    not another ("build:prod" beside a lone "build", no "prod"): (as in other, as in text)."""
    other_names = {name.casefold() for name in _GLUED.findall(other)}
    alone = {
        tokens.stem(word.casefold()) for word in _LATIN_WORD.findall(_GLUED.sub(" ", other))
    }
    said = {tokens.stem(word.casefold()) for word in _LATIN_WORD.findall(other)}
    for name in _GLUED.findall(text):
        if name.casefold() in other_names:
            continue
        parts = [tokens.stem(part.casefold()) for part in _LATIN_WORD.findall(name)]
        shared = [part for part in parts if part in alone]
        if shared and any(part not in said for part in parts):
            return shared[0], name
    return None


def _exact(pattern: re.Pattern[str], text: str, other: str) -> frozenset[str]:
    """What `pattern` finds in `text`, as written, that it does not find in `other`."""
    return frozenset(pattern.findall(text)) - frozenset(pattern.findall(other))


# Words the index drops as stop words (or that are too short to tell) but that flip a fact
# when one side says one and the other its opposite: "before" / "after", "am" / "pm".
_OPPOSITES = (
    ("before", "after"),
    ("above", "below"),
    ("up", "down"),
    ("on", "off"),
    ("in", "out"),
    ("over", "under"),
    ("more", "less"),
    ("more", "fewer"),
    ("most", "least"),
    ("he", "she"),
    ("him", "her"),
    ("his", "her"),
    ("am", "pm"),
    ("a.m", "p.m"),
    # in Chinese one character says it (发布前 / 发布后, 上线 / 下线, 前端 / 后端)
    ("前", "后"),
    ("上", "下"),
    ("早", "晚"),
    ("开", "关"),
    ("多", "少"),
    ("大", "小"),
    ("长", "短"),
    ("高", "低"),
    ("新", "旧"),
    ("内", "外"),
    ("左", "右"),
    ("男", "女"),
)
_PLAIN_WORD = re.compile(r"[a-z]+(?:\.[a-z](?=\.))?")


def _opposite(first: str, second: str) -> tuple[str, str] | None:
    """A pair of opposite words, one only in `first`, the other only in `second`."""
    a = set(_PLAIN_WORD.findall(first.casefold())) | set(_CJK_CHAR.findall(first))
    b = set(_PLAIN_WORD.findall(second.casefold())) | set(_CJK_CHAR.findall(second))
    for x, y in _OPPOSITES:
        for one, other in ((x, y), (y, x)):
            if one in a - b and other in b - a:
                return one, other
    return None


_UNIT = re.compile(
    rf"[{HAN}]|[^\W_{HAN}]+"
)
MAX_SWAP_UNITS = 60


def _units(text: str) -> list[str]:
    """The words (stemmed) and CJK characters of `text`, in order."""
    return [
        unit if _CJK_CHAR.fullmatch(unit) else tokens.stem(unit.casefold())
        for unit in _UNIT.findall(text)
    ]


def _swapped(first: str, second: str) -> tuple[str, str] | None:
    """Two parts the texts name in swapped places, when they have the same words otherwise.

    "Alice reports to Bob" / "Bob reports to Alice", "from MySQL to PostgreSQL" / "from
    PostgreSQL to MySQL", 上午开会，下午写代码 / 下午开会，上午写代码: the words the
    two share, in order, are one sequence with two parts exchanged around a middle that
    stays. A phrase moved to the front ("On Fridays we deploy" / "We deploy on Fridays")
    has no middle: a rewording, not a swap.
    """
    a_units, b_units = _units(first), _units(second)
    shared = set(a_units) & set(b_units)
    a = [u for u in a_units if u in shared]
    b = [u for u in b_units if u in shared]
    if a == b or len(a) != len(b) or len(a) > MAX_SWAP_UNITS or sorted(a) != sorted(b):
        return None
    head = 0
    while a[head] == b[head]:
        head += 1
    tail = 0
    while a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a, b = a[head : len(a) - tail], b[head : len(b) - tail]
    size = len(a)
    for x in range(1, size - 1):
        for y in range(1, size - x):
            if (
                a[:x] == b[size - x :]
                and a[size - y :] == b[:y]
                and a[x : size - y] == b[y : size - x]
            ):
                joiner = "" if all(_CJK_CHAR.fullmatch(u) for u in a) else " "
                return joiner.join(a[:x]), joiner.join(a[size - y :])
    return None


def reordered(first: str, second: str) -> bool:
    """Whether the words the texts share come in another order: a sentence said anew
    (生产环境的日志在 Loki 里查 / 在 Loki 上查生产日志), not a frame with a word put in
    another's place (订单库部署在北京机房 / 订单库部署在上海机房), which keeps its order."""
    a_units, b_units = _units(first), _units(second)
    shared = set(a_units) & set(b_units)
    a = list(dict.fromkeys(u for u in a_units if u in shared))
    b = list(dict.fromkeys(u for u in b_units if u in shared))
    return a != b


# "unless" and 除非 are "if not": "Merge when CI is green" / "Merge unless CI is green"; "X is
# forbidden" is "do not X" ("Deploying on Fridays is forbidden" / "Never deploy on a Friday",
# 禁止周五上线 / 周五不要上线).
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|without|cannot|can't|don't|doesn't|isn't|aren't|won't"
    r"|didn't|shouldn't|mustn't|unless|forbid|forbids|forbidden|prohibit|prohibits|prohibited"
    r"|banned)\b|不|没|别|无|非|未|勿|除非|禁止|严禁",
    re.IGNORECASE,
)


def _negated(text: str) -> bool:
    """Whether `text` says not (an odd count of negations); a bound that says it with a
    negation ("no more than", 不超过) is a bound, not one."""
    return len(_NEGATION.findall(_BOUND.sub(" ", text.replace("’", "'")))) % 2 == 1


_NEXT_UNIT = re.compile(r"\s*(?:(?:to|be|do|does|did)\s+)?([A-Za-z]+|[\u3400-\u4dbf\u4e00-\u9fff])")


def _negation_moved(first: str, second: str) -> tuple[str, str] | None:
    """What each text says not, when each says not to a word the other says plainly: the
    negation moved (用户不吃辣，喜欢清淡的菜 / 用户爱吃辣，不喜欢清淡的菜), which a count of
    negations on each side (one and one) cannot see."""
    said: list[tuple[set[str], set[str]]] = []
    for text in (first, second):
        text = text.replace("’", "'")
        negated = set()
        for match in _NEGATION.finditer(text):
            unit = _NEXT_UNIT.match(text, match.end())
            if unit:
                negated.add(_units(unit.group(1))[0])
        said.append((negated, set(_units(text))))
    (a_not, a_all), (b_not, b_all) = said
    a_moved = sorted(u for u in a_not - b_not if u in b_all)
    b_moved = sorted(u for u in b_not - a_not if u in a_all)
    return (a_moved[0], b_moved[0]) if a_moved and b_moved else None


def _as_written(text: str, stems: frozenset[str]) -> str:
    """The words of `text` that the index terms `stems` come from, as the person wrote them."""
    words = [w for w in re.findall(r"[\w.+#-]+", text) if set(tokenize(w)) & stems]
    return ", ".join(dict.fromkeys(words)) or _shown(stems)


def _shown(items: frozenset[str]) -> str:
    return ", ".join(sorted(items)) or "none"
