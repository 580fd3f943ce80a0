"""Text to index terms: stemmed words for Latin text, character bigrams for CJK.

Latin text is NFKC-folded (full-width letters and digits meet their ASCII
forms), lower-cased and split into words at anything that is not a letter or a
digit, so a possessive "Caroline's" gives "caroline" and the stop word "s".
Words in `ENGLISH_STOP_WORDS` (with `NOW_WORDS`: "currently", "recently") and
question frames ("how many", "what kind of") are dropped; the rest go through
`stem`, the Snowball English (Porter2) stemmer of `porter2.py`, so "racing",
"races" and "race" meet, as do "activities" and "active"; irregular verbs and
plurals ("won", "bought", "children") are their base word first. Digits stay
words ("2023").

Words written differently meet (DESIGN.md §4):
  - dates: every written form ("4月28日", "4月28号", "2023-04-28", "April 28th",
    "28 April 2023") becomes "<day> <month> <year>" with the English month
    name, before words are split (`_dates_and_numbers`, `_english_dates`);
  - numbers: "three" is "3", and so are "third", "3rd" and "三" before a measure
    word ("三年");
  - identifiers: "LazyVim", "OAuth2", "getUserName" also give their parts
    ("lazy", "vim"; "oauth"; "user", "name"), which do not count as more
    tokens in a field's length (`tokenize_counted`);
  - a lone Latin word inside Chinese text ("IT行业") is never a stop word.
What only a query may add (a joined "log in", a Chinese doubled character
or skip bigram, a name's weight) is `loose_terms`.

CJK runs are cut at Chinese function words (`CHINESE_STOP_WORDS`) and
particles (`CHINESE_BREAKS`), then each stretch becomes overlapping character
bigrams; each CJK character that is not a function character is also kept as
a unigram term, prefixed `~`, which the index weighs lower, so a one-character
query ("猫") still finds "用户的猫叫芝麻"; so is the pronoun of a thing (它,
`THING_PRONOUNS`), a function character that tells a chat's memories apart.

Each emoji or pictographic symbol is a term of its own (`_SYMBOL`): chat memories carry
meaning in them, and a query "🐶" finds the memory holding one.

Must stay import-light: the hook path imports it.

Why one module: a query's terms must be the index's terms. The tokenizer, the
forms it folds together (dates, numbers, irregular words) and the loose terms a
query adds over them (`loose_terms`) read the same tables (the function words
and characters, the unigram terms); in two modules the query's side would
drift from what the index holds.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate, filterfalse, repeat
from operator import add

from ..memory.patterns import on_use
from .porter2 import porter2

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
# The patterns only text with a non-ASCII character runs (CJK runs, symbols, full-width
# forms, Chinese function words and numbers) are compiled at their first use (`on_use`):
# an English prompt's hook compiles none of them.
_CJK_RUN = on_use(rf"([{_CJK}]+)")
# A word is a run of letters and digits that are not CJK, so "用pytest跑测试"
# gives the word "pytest" between two CJK runs. Only ever run on text without CJK (ASCII,
# a stretch `_CJK_RUN` split off, or CJK runs made spaces), where that is every run of
# letters and digits: the CJK ranges left out of its class, whose compiling was a
# millisecond of every hook.
_WORD = re.compile(r"[^\W_]+")
# Emoji and pictographic symbols, each a term (a flag's two regional letters one term):
# chat memories carry meaning in them ("a 👍 means go ahead", "我家的狗🐶"). Skin tones,
# variation selectors and joiners are not part of the term: 👍🏽 is 👍, ❤️ is ❤.
# Arrows, ©, ® and other marks are punctuation. Never ASCII, so ASCII text skips this.
_SYMBOL = on_use(
    "[\U0001F1E6-\U0001F1FF]{2}"
    "|[\u231a-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001F000-\U0001F1E5"
    "\U0001F200-\U0001F3FA\U0001F400-\U0001FAFF]"
)
# The ideographic space and the full-width forms of ASCII, with their NFKD forms.
_FULL_WIDTH = on_use("[\u3000\uff01-\uff5e]")
_NARROW = {
    char: unicodedata.normalize("NFKD", char)
    for char in ["\u3000", *map(chr, range(0xFF01, 0xFF5F))]
}

# Words that say "now" as the Snowball list's "now" does: they place a note in time,
# which its date does, not in a topic, and would match every note an agent wrote
# in the present tense ("The user is currently ...").
NOW_WORDS = frozenset(("currently", "recently", "lately", "nowadays", "presently"))

# The Snowball English stop list, plus a few words so common in notes that
# they carry no topic ("also", "get", "got", "let"), plus NOW_WORDS.
ENGLISH_STOP_WORDS = NOW_WORDS | frozenset(
    """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just ll
    m me more most mustn my myself no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under
    until up very was wasn we were weren what when where which while who whom why will with
    would wouldn y you your yours yourself yourselves ve let lets also get got
    """.split()
)

# Chinese function words, removed as whole units before bigrams are taken.
# Cutting at every single-character particle would also cut content words
# apart (地址, 会议, 需要, 了解, 过滤, 本地, 存在), so a text is cut only at
# multi-character function words and at the particles in CHINESE_BREAKS, which
# hardly ever sit inside a content word; the other single characters in
# CHINESE_STOP_CHARS stay inside bigrams but never stand alone as a term (but for
# THING_PRONOUNS, below).
CHINESE_STOP_WORDS = (
    "什么", "怎么", "怎样", "怎么样", "如何", "为什么", "哪里", "哪儿", "哪个", "哪些", "这个",
    "那个", "这些", "那些", "这么", "那么", "这样", "那样", "我们", "你们", "他们", "她们",
    "它们", "自己", "一个", "一下", "一些", "可以", "没有", "就是", "还是", "但是", "因为",
    "所以", "如果", "而且", "或者", "已经", "时候", "的话", "多少", "多久",
)
CHINESE_BREAKS = "的吗呢吧啊呀哦嗯"
CHINESE_STOP_CHARS = frozenset(
    CHINESE_BREAKS
    + "地得了着过是在和与及也都就又很把被给让对从向"
    + "我你您他她它这那有会要个之其而或么哪谁"
)
# The pronoun of a thing or an animal (it): a function character inside bigrams, as the
# others, but also indexed as a character. A person's pronouns (我, 你, 他, 她) are in nearly
# every memory of a chat and tell nothing; 它 is in the few that speak of a pet or an object,
# and a turn that says 它 points at one of them ("它的名字叫…"). Its weight is its idf, so
# where it is common (an encyclopedia) it weighs little. English "it" stays a stop word:
# there it is also the empty subject of "it was fun". docs/retrieval.md, "the fourteenth
# pass".
THING_PRONOUNS = frozenset("它")
# The lookahead on first characters is only for speed: without it the regex
# engine tries all forty alternatives at every character of a run.
_CHINESE_STOP = on_use(
    "(?=[" + "".join(sorted({w[0] for w in CHINESE_STOP_WORDS} | set(CHINESE_BREAKS))) + "])(?:"
    + "|".join(sorted(CHINESE_STOP_WORDS, key=len, reverse=True)) + f"|[{CHINESE_BREAKS}])"
)

# Question frames: "how many", "how long", "what kind of" say what shape the
# answer has, not what it is about, and would match stray "long"s and "kind"s.
QUESTION_FRAMES = frozenset(("many", "much", "long", "often"))
FRAME_NOUNS = frozenset(("kind", "kinds", "type", "types", "sort", "sorts"))
_FRAME_WORDS = QUESTION_FRAMES | FRAME_NOUNS


# Irregular English verbs and plurals: the past and the past participle are the base
# verb, the plural the singular, which no suffix rule finds ("won" and "win", "bought"
# and "buy", "went" and "go", "children" and "child"). Forms
# that are mostly other words are left out ("a bit", "a rose", "the ground", "a
# wound", "bound"). "won" was a stop word (as part of "won't"); it is a word now.
_IRREGULAR_TEXT = """
arise arose arisen; awake awoke awoken; bear bore borne; beat beaten; become became;
begin began begun; bend bent; bet; bite bitten; bleed bled; blow blew blown;
break broke broken; breed bred; bring brought; build built; burn burnt; burst; buy bought;
catch caught; choose chose chosen; cling clung; come came; cost; creep crept; cut;
deal dealt; dig dug; draw drew drawn; dream dreamt; drink drank drunk; drive drove driven;
eat ate eaten; fall fell fallen; feed fed; feel felt; fight fought; find found; flee fled;
fly flew flown; forbid forbade forbidden; forget forgot forgotten; forgive forgave forgiven;
freeze froze frozen; give gave given; go went gone; grow grew grown;
hang hung; hear heard; hide hid hidden; hit; hold held; hurt; keep kept; kneel knelt;
know knew known; lay laid; lead led; lean leant; leap leapt; learn learnt; leave left;
lend lent; lie lain; light lit; lose lost; make made; mean meant; meet met; pay paid;
prove proven; put; quit; read; ride rode ridden; ring rang rung; rise risen; run ran;
say said; see saw seen; seek sought; sell sold; send sent; set; sew sewn; shake shook shaken;
shine shone; shoot shot; show shown; shrink shrank shrunk; shut; sing sang sung; sink sank sunk;
sit sat; sleep slept; slide slid; speak spoke spoken; speed sped; spend spent; spin spun;
split; spread; spring sprang sprung; stand stood; steal stole stolen; stick stuck; sting stung;
stink stank stunk; strike struck; strive strove striven; swear swore sworn; sweep swept;
swim swam swum; swing swung; take took taken; teach taught; tear tore torn; tell told;
think thought; throw threw thrown; understand understood; wake woke woken; wear wore worn;
weave wove woven; weep wept; win won; write wrote written;
child children; man men; woman women; foot feet; tooth teeth; mouse mice; goose geese;
wife wives; knife knives; wolf wolves; half halves; shelf shelves
"""
IRREGULAR_FORMS = {
    form: forms.split()[0]
    for forms in _IRREGULAR_TEXT.replace("\n", " ").split(";")
    for form in forms.split()[1:]
}


def fold(text: str) -> str:
    """NFKC and lower case: full-width letters and digits meet their ASCII forms."""
    if not text.isascii():
        # NFKC returns at once a text that is already in NFKC, but a single
        # full-width comma (in most Chinese sentences) makes it normalize the
        # whole text, slowly. Each such character is first replaced by its own
        # NFKD form: NFKC composes the NFKD of a text, which this leaves as it is.
        text = _FULL_WIDTH.sub(_narrow, text)
    return unicodedata.normalize("NFKC", text).lower()


def _narrow(match: re.Match[str]) -> str:
    return _NARROW[match.group()]


def has_cjk(text: str) -> bool:
    # ASCII first: an English prompt compiles no CJK pattern (`on_use`).
    return not text.isascii() and _CJK_RUN.search(text) is not None


def written_forms(text: str) -> dict[str, set[str]]:
    """Each index term of `text`'s Latin words, and the words that give it as written
    (folded: NFKC, lower case): "books" for "book", "read" for "read". Stop words give
    none, nor does CJK, whose terms are its characters as written."""
    out: dict[str, set[str]] = {}
    for word in set(_WORD.findall(fold(text))):
        if word in ENGLISH_STOP_WORDS or (not word.isascii() and has_cjk(word)):
            continue
        out.setdefault(_STEMS[word], set()).add(word)
    return out


def writes_word(folded: str, word: str) -> bool:
    """Whether `folded` (a text `fold`ed) writes `word` as a whole word: "books" in "Two
    books.", not in "bookshelf" or "e_books2". A `str.find` a candidate, no pattern: a
    pattern of a query's forms cost 25 µs of CPU a 500-character memory, this about 1."""
    start = folded.find(word)
    while start >= 0:
        end = start + len(word)
        if ((start == 0 or not folded[start - 1].isalnum())
                and (end == len(folded) or not folded[end].isalnum())):
            return True
        start = folded.find(word, start + 1)
    return False


def words(text: str) -> list[str]:
    """Latin index terms of `text`, in order (CJK is skipped)."""
    return [term for term in tokenize(text) if is_word(term)]


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character stands for itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Index terms of `text`: stemmed words, CJK bigrams, and CJK unigrams prefixed `~`."""
    return tokenize_counted(text)[0]


def tokenize_counted(text: str) -> tuple[list[str], int]:
    """`tokenize(text)`, and its length in tokens: an identifier's parts are no more tokens.

    "macOS" is one token with three terms ("maco", "mac", "os"): the parts are
    other ways to find the same word, and must not make a field look longer.
    """
    if not text:
        return [], 0  # most memories leave several fields empty: a build asks this often
    parts = _identifier_parts(text)
    folded = _dates_and_numbers(fold(text))
    extra = [0]
    if folded.isascii():
        found = _WORD.findall(folded)
        if not _MONTH_WORDS.isdisjoint(found):
            found = _english_dates(folded, found)
        out = _word_terms(found, parts, extra, folded)
        return out, len(out) - extra[0]
    # Alternating stretches: text between CJK runs (odd ones), then a CJK run. Runs with
    # only punctuation between them are made terms of at once, joined by a particle
    # that ends a segment as their ends do (a page has hundreds of short runs).
    out = []
    stretches = _CJK_RUN.split(folded)
    inside_chinese = len(stretches) > 1
    runs: list[str] = []
    for i, part in enumerate(stretches):
        if i % 2:
            runs.append(part)
            continue
        found = _WORD.findall(part)
        symbols = _SYMBOL.findall(part) if not part.isascii() else []
        if not found and not symbols:
            continue  # punctuation between two runs: the common case
        if runs:
            out += cjk_terms(_RUN_GAP.join(runs))
            runs = []
        if symbols:
            out += _with_symbols(part, found, parts, extra, inside_chinese)
            continue
        out += _stretch_terms(part, found, parts, extra, inside_chinese)
    if runs:
        out += cjk_terms(_RUN_GAP.join(runs))
    return out, len(out) - extra[0]


def _stretch_terms(
    part: str, found: list[str], parts: dict[str, list[str]] | None, extra: list[int],
    inside_chinese: bool,
) -> list[str]:
    """Terms of the words `found` in `part`, a stretch of text between CJK runs."""
    if not _MONTH_WORDS.isdisjoint(found):
        found = _english_dates(part, found)
    if inside_chinese and len(found) == 1 and found[0] in ENGLISH_STOP_WORDS:
        # One Latin word set in Chinese text ("IT行业", "买了A股") is a name, not an
        # English function word.
        return [_STEMS[found[0]]]
    return _word_terms(found, parts, extra, part)


def _with_symbols(
    part: str, found: list[str], parts: dict[str, list[str]] | None, extra: list[int],
    inside_chinese: bool,
) -> list[str]:
    """`_stretch_terms` of a stretch holding emoji: the words between them, and each emoji,
    in the order they come."""
    out: list[str] = []
    position = 0
    for symbol in _SYMBOL.finditer(part):
        piece = part[position : symbol.start()]
        words_here = _WORD.findall(piece)
        if words_here:
            out += _stretch_terms(piece, words_here, parts, extra, inside_chinese)
        out.append(symbol.group())
        position = symbol.end()
    rest = _WORD.findall(part[position:])
    if rest:
        out += _stretch_terms(part[position:], rest, parts, extra, inside_chinese)
    return out


# A particle no function word holds: `cjk_terms` of runs joined by it are those of each run.
_RUN_GAP = "吗"


def _word_terms(
    found: list[str],
    parts: dict[str, list[str]] | None = None,
    extra: list[int] | None = None,
    text: str | None = None,
) -> list[str]:
    """Terms of the words between two CJK runs (a question frame never spans a CJK run).

    `text` is what the words were found in; the number of identifier parts
    among the terms is added to `extra[0]`.
    """
    if not _FRAME_WORDS.isdisjoint(found):
        found = _without_frames(found)
    if parts is None and _MIXED.search(" ".join(found) if text is None else text) is not None:
        parts = {}
    if parts is not None:
        found, added = _with_parts(found, parts)
        if extra is not None:
            extra[0] += added
    # Done in C: drop stop words, look up (or make) each stem.
    return list(map(_STEMS.__getitem__, filterfalse(ENGLISH_STOP_WORDS.__contains__, found)))


def _without_frames(found: list[str]) -> list[str]:
    """`found` without its question frames ("how many", "what kind of")."""
    out: list[str] = []
    previous = ""
    for i, word in enumerate(found):
        frame = (previous == "how" and word in QUESTION_FRAMES) or (
            word in FRAME_NOUNS and i + 1 < len(found) and found[i + 1] == "of"
        )
        previous = word
        if not frame:
            out.append(word)
    return out


# Identifiers: "LazyVim", "getUserName", "OAuth2", "utf8" also give their parts
# ("lazy", "vim"; "get", "user", "name"; "oauth"; "utf"), right after the whole
# word, so a query for a part finds the identifier and a query for the
# identifier finds text that writes its parts apart. snake_case, kebab-case and
# dotted names split already: "_", "-" and "." are not word characters.
# ("IDs" is a plural, not an identifier: an upper-case run takes two lower-case letters after it.)
# (Each pattern starts with a character class, which the regex engine scans for fast.)
_CAMEL = re.compile(r"[A-Z](?:(?<=[a-z][A-Z])|(?<=[A-Z]{2})(?=[a-z]{2}))")
_CAMEL_WORD = on_use(r"[A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z]{2}[a-z]{2})[A-Za-z0-9]*")
_CAMEL_PART = on_use(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_MIXED = re.compile(r"[0-9](?:(?<=[a-z][0-9])|(?=[a-z]))")
_LETTERS_DIGITS = re.compile(r"[a-z]+|[0-9]+")
MIN_PART = 2
# Letters before or after digits ("utf8", "oauth2", "1a2b") are a part from three letters:
# a two-letter run among digits is more often a code ("a1b2", hex) than a word.
MIN_LETTERS_PART = 3


def _identifier_parts(text: str) -> dict[str, list[str]] | None:
    """The camelCase words of `text` (folded) and their parts; None when there are none."""
    if _CAMEL.search(text) is None:
        return None
    out: dict[str, list[str]] = {}
    for word in _CAMEL_WORD.findall(text):
        whole = word.lower()
        pieces = [piece.lower() for piece in _CAMEL_PART.findall(word)]
        pieces += _LETTERS_DIGITS.findall(whole)  # "OAuth2" is also "oauth"
        out[whole] = list(dict.fromkeys(
            p for p in pieces if len(p) >= MIN_PART and not p.isdigit() and p != whole
        ))
    return out


def _with_parts(found: list[str], parts: dict[str, list[str]]) -> tuple[list[str], int]:
    """`found` with each identifier's parts after it (camelCase, or letters then digits).

    Also the number of parts added that are no stop words (the terms they give).
    """
    out: list[str] = []
    added = 0
    for word in found:
        out.append(word)
        pieces = parts.get(word)
        if (
            pieces is None and not word.isalpha() and not word.isdigit()
            and _MIXED.search(word) is not None and not _ORDINAL.fullmatch(word)
        ):
            pieces = [
                p for p in _LETTERS_DIGITS.findall(word)
                if len(p) >= MIN_LETTERS_PART and not p.isdigit()
            ]
        if pieces and pieces != [word]:
            out += pieces
            added += sum(1 for piece in pieces if piece not in ENGLISH_STOP_WORDS)
    return out, added


# Dates: every written form becomes "<day> <month> <year>" (the parts it has), the
# month as its English name, before words are split, so "4月28日", "4月28号",
# "2023-04-28", "April 28th", "28 April 2023" and "Apr 28" all give the terms
# "28" and "april" (and the pair "28 april"), "April 2023" and "2023年4月" the pair
# "april 2023" that a full date holds too, and a lone "4月" or "四月" gives "april".
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)
_MONTH_OF = {name: i for i, name in enumerate(MONTHS, 1)} | {
    name[:3]: i for i, name in enumerate(MONTHS, 1)
} | {"sept": 9}
_MONTH_NAME = "|".join(sorted(_MONTH_OF, key=len, reverse=True))
_ORDINAL = re.compile(r"[0-9]+(?:st|nd|rd|th)")
_ZH_DIGIT = "〇零一二两三四五六七八九十"
_ISO_DATE = re.compile(r"([12][0-9]{3})[-/.]([0-9]{1,2})[-/.]([0-9]{1,2})(?![0-9])")
_ZH_DATE = on_use(
    rf"(?:([0-9]{{4}})年)?([0-9]{{1,2}}|[{_ZH_DIGIT}]{{1,3}})月"
    rf"(?:([0-9]{{1,2}}|[{_ZH_DIGIT}]{{1,3}})[日号])?"
)
# A letter or a digit of a word: a date is not a part of one ("éapril 28"). CJK is left
# out of `_WORD`, but these patterns only ever see text without CJK (ASCII text, or
# the stretches between CJK runs), so the plain class is the same there and compiles
# in 0.4 ms rather than 6 (a class with CJK ranges is compiled anew at each use).
_IN_WORD = r"[^\W_]"
# Compiled on first use (`_english_date_patterns`): a hook's text seldom names a month.
_MONTH_DAY = (
    rf"(?<!{_IN_WORD})({_MONTH_NAME})\.?\s+([0-9]{{1,2}})(?:st|nd|rd|th)?(?!{_IN_WORD})"
    rf"(?:,?\s+([12][0-9]{{3}})(?!{_IN_WORD}))?"
)
_DAY_MONTH = (
    rf"(?<!{_IN_WORD})([0-9]{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAME})(?!{_IN_WORD})\.?"
    rf"(?:,?\s+([12][0-9]{{3}})(?!{_IN_WORD}))?"
)
_DATE_PATTERNS: list[re.Pattern[str]] = []


def _english_date_patterns() -> list[re.Pattern[str]]:
    """`_MONTH_DAY` and `_DAY_MONTH`, compiled (once)."""
    if not _DATE_PATTERNS:
        _DATE_PATTERNS.extend((re.compile(_MONTH_DAY), re.compile(_DAY_MONTH)))
    return _DATE_PATTERNS
_MONTH_WORDS = frozenset(_MONTH_OF)
# Numbers: a number word is its digits ("three" and "3" meet; "one" and "一" are left
# alone, being also "a" and "someone"); so is an ordinal word, as "3rd" is "3"
# ("third", "3rd" and "3" meet; "first" and "second" are left alone, being mostly
# "at first" and "a second"); a Chinese numeral before a measure word ("三年", "两只",
# "十五个") is its digits too.
NUMBER_WORDS = {
    name: str(value) for value, name in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    ) if name != "_"
} | {
    name: str(value) for value, name in enumerate(
        "_ _ _ third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
        "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
        "twentieth".split()
    ) if name != "_"
} | {
    name: str(value) for value, name in zip(
        range(30, 100, 10), "thirty forty fifty sixty seventy eighty ninety".split(),
        strict=True,
    )
}
_ZH_NUMBER = on_use(
    rf"[{_ZH_DIGIT}百千]+(?=[个年天岁次只条本件位名周句首张台辆家场倍层页部双对种块])"
)
_ZH_COUNTING = on_use("[二两三四五六七八九十]")  # "一年", "百年" stay words
_ZH_VALUE = {char: i for i, char in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_ZH_UNIT = {"十": 10, "百": 100, "千": 1000}


def chinese_number(text: str) -> int | None:
    """The value of a Chinese numeral below 10,000 ("十五" 15, "两百" 200); None if not one."""
    total = 0
    digit: int | None = None
    for char in text:
        if char in _ZH_VALUE:
            if digit is not None and digit != 0:
                return None  # two digits in a row ("二三"): not a numeral this reads
            digit = _ZH_VALUE[char]
        elif char in _ZH_UNIT:
            unit = _ZH_UNIT[char]
            total += (1 if digit is None else digit) * unit
            digit = None
        else:
            return None
    return total + (digit or 0)


def _number_of(text: str | None) -> int | None:
    if not text:
        return None
    return int(text) if text.isdigit() else chinese_number(text)


def _date_text(month: int | None, day: int | None, year: str | None) -> str | None:
    if month is None or not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    shown = (None if day is None else str(day), MONTHS[month - 1], year)
    return " " + " ".join(filter(None, shown)) + " "


def _iso(match: re.Match[str]) -> str:
    start = match.start()
    if start and match.string[start - 1].isdigit():
        return match.group()  # "12023-04-28" is no date
    year, month, day = match.groups()
    return _date_text(int(month), int(day), year) or match.group()


def _zh_date(match: re.Match[str]) -> str:
    year, month, day = match.groups()
    return _date_text(_number_of(month), _number_of(day), year) or match.group()


def _month_day(match: re.Match[str]) -> str:
    month, day, year = match.groups()
    return _date_text(_MONTH_OF[month], int(day), year) or match.group()


def _day_month(match: re.Match[str]) -> str:
    day, month, year = match.groups()
    return _date_text(_MONTH_OF[month], int(day), year) or match.group()


def _zh_number(match: re.Match[str]) -> str:
    numeral = match.group()
    value = chinese_number(numeral) if _ZH_COUNTING.search(numeral) else None
    return numeral if value is None else f" {value} "


def _dates_and_numbers(folded: str) -> str:
    """`folded` with its numeric and Chinese dates in one written form, its Chinese counts
    in digits (English month names are `_english_dates`' work, on the words)."""
    if "月" in folded:
        folded = _ZH_DATE.sub(_zh_date, folded)
    if ("-" in folded or "/" in folded or "." in folded) and _has_digit(folded):
        folded = _ISO_DATE.sub(_iso, folded)
    if not folded.isascii():
        folded = _ZH_NUMBER.sub(_zh_number, folded)
    return folded


def _english_dates(text: str, found: list[str]) -> list[str]:
    """The words of `text` (`found`), again after its English dates were written as one form.

    `text` holds no CJK (ASCII text, or a stretch between CJK runs): see `_IN_WORD`.
    """
    if not _has_digit(text):
        return found
    month_day, day_month = _english_date_patterns()
    text = month_day.sub(_month_day, text)
    return _WORD.findall(day_month.sub(_day_month, text))


def _has_digit(text: str) -> bool:
    return any(map(text.__contains__, "0123456789"))


def cjk_terms(run: str) -> list[str]:
    """Terms of one CJK run: bigrams of each stretch between function words, then its characters."""
    out: list[str] = []
    unigram = _UNIGRAMS.__getitem__
    for segment in _CHINESE_STOP.split(run):
        if len(segment) > 1:
            out += map(add, segment, segment[1:])  # its bigrams, in C
        out += filter(None, map(unigram, segment))
    return out


def loose_terms(text: str, held: Iterable[str] | None = None) -> list[tuple[str, float]]:
    """Extra query terms for words written another way in the memory, with their weight.

    For a query only (a memory is indexed as `tokenize` says); a term the
    query holds already keeps its own weight, and one no memory holds costs
    nothing:
      - a short verb and its particle are often written as one word ("log in"
        and "login", "sign up", "set up", "check out"): the pair also asks for
        the joined word (of the verb's stem: "signed up" asks for "signup"),
        and a word that ends in a particle after a verb of three to five
        letters asks for the verb (SPLIT_WEIGHT: "login" for "log", though
        "cabin" asks for "cab" too);
      - a doubled Chinese character ("狗狗", "宝宝", "看看") is that character: its
        unigram counts as much as a bigram would (REDUPLICATED_WEIGHT), so 狗狗
        finds 一条狗;
      - a skip bigram, the first and third character of three ("打篮球" gives
        "打球"), matches a word with a character left out (SKIP_WEIGHT), so
        打篮球 finds 打球 when nothing holds 篮球;
      - a character standing alone between function words (狗 in "带着我的狗",
        书 in "买的书") is a one-character word, not a piece of a bigram: its
        unigram weighs LONE_WEIGHT rather than a unigram's 0.25, so "我的狗"
        finds 我有一条狗 above a memory sharing a stray character of a bigram.

    `held` is `tokenize(text)` (or its set) when the caller has it already.
    """
    folded = fold(text)
    out: dict[str, float] = {}
    if has_cjk(folded):
        out = _loose_chinese(folded)
        found = _WORD.findall(_CJK_RUN.sub(" ", folded))
    else:
        found = _WORD.findall(folded)
    previous = ""
    for word in found:
        if word in _PARTICLES and previous.isalpha() and previous not in ENGLISH_STOP_WORDS:
            verb = _STEMS[previous]
            if 2 <= len(verb) <= MAX_VERB:
                out.setdefault(verb + word, 1.0)
        elif word.endswith(_PARTICLES) and word.isalpha() and word not in ENGLISH_STOP_WORDS:
            for particle in _PARTICLES:
                verb = word[: -len(particle)]
                if (
                    word.endswith(particle) and 3 <= len(verb) <= MAX_VERB
                    and verb not in ENGLISH_STOP_WORDS
                ):
                    out.setdefault(_STEMS[verb], SPLIT_WEIGHT)
        previous = word
    names = set()
    if NAME_WEIGHT != 1.0:
        for name in _NAME.findall(text):
            for term in tokenize(name):
                out[term] = NAME_WEIGHT
                names.add(term)
    if not out:
        return []
    # What the query holds already goes, but for a unigram or a name (a weight they set).
    if not isinstance(held, (set, frozenset)):
        held = set(tokenize(text) if held is None else held)
    held = held.intersection(out)
    for term in held.difference(names):
        if not is_unigram(term):
            del out[term]
    return list(out.items())


_PARTICLES = ("in", "up", "out", "on", "off", "down", "over")
_SEGMENT_GAP = "的了"
_MARK = "\x00"  # a function character, in `_loose_chinese`
_MARKING: list[re.Pattern[str]] = []  # compiled on the first Chinese query


def _loose_chinese(folded: str) -> dict[str, float]:
    """The doubled characters and skip bigrams of a text's CJK runs, once each, in text order.

    Over the whole text at once, in C but for a step per segment holding a
    doubled character (a segment's doubled characters come before its skip
    bigrams). A skip bigram, joined[i] + joined[i + 2], is one of two
    characters that are no function characters and not the same one: a
    property of the pair, so every pair is made and de-duplicated first and
    the pairs that are none dropped after (a pasted page of 4,000 characters
    has some 2,500 distinct pairs; testing each position took three times as
    long). `tests/test_query_bound.py` holds it to a plain loop per segment.
    """
    if not _MARKING:
        stops = "".join(sorted(CHINESE_STOP_CHARS))
        _MARKING.append(re.compile(f"[{stops}]"))
        _MARKING.append(re.compile(f"(?=([^{_MARK}])\\1)"))  # a doubled character's place
    marks, doubles = _MARKING
    parts = [segment for run in _CJK_RUN.findall(folded) for segment in _CHINESE_STOP.split(run)]
    segments = [segment for segment in parts if len(segment) > 1]
    lone = [segment for segment in parts if len(segment) == 1]
    # Two different function characters between segments: no skip bigram or doubled
    # character spans them. Every function character is then marked, the gap's too.
    marked = marks.sub(_MARK, _SEGMENT_GAP.join(segments))
    chars = set(marked)
    chars.add(_MARK)
    wrong = set(map(add, chars, chars))  # one character twice, or a function character
    wrong.update(map(add, chars, repeat(_MARK)), map(add, repeat(_MARK), chars))
    doubled = [match.start() for match in doubles.finditer(marked)]
    if not doubled:
        return _add_lone(_skip_pairs(marked, 0, len(marked), wrong), lone)
    out: dict[str, float] = {}
    unigram = _UNIGRAMS.__getitem__
    starts = list(accumulate([len(segment) + 2 for segment in segments], initial=0))
    done = 0
    for place in doubled:
        start = starts[bisect_right(starts, place) - 1]
        if start > done:
            _update_new(out, _skip_pairs(marked, done, start, wrong))
            done = start
        out[unigram(marked[place])] = REDUPLICATED_WEIGHT
    _update_new(out, _skip_pairs(marked, done, len(marked), wrong))
    return _add_lone(out, lone)


def _add_lone(out: dict[str, float], lone: list[str]) -> dict[str, float]:
    """`out` with the unigram of each character standing alone (`lone`, one-character
    segments) at LONE_WEIGHT, after the others, in text order (a doubled one keeps its
    REDUPLICATED_WEIGHT)."""
    for term in filter(None, map(_UNIGRAMS.__getitem__, dict.fromkeys(lone))):
        if out.get(term, 0.0) < LONE_WEIGHT:
            out[term] = LONE_WEIGHT
    return out


def _skip_pairs(marked: str, start: int, end: int, wrong: set[str]) -> dict[str, float]:
    """The skip bigrams at places start to end - 1 of `marked`, once each, in text order."""
    pairs = dict.fromkeys(map(add, marked[start:end], marked[start + 2 : end + 2]), SKIP_WEIGHT)
    for pair in wrong.intersection(pairs):
        del pairs[pair]
    return pairs


def name_prefixes(text: str) -> list[str]:
    """The prefix terms of the names `text` writes ("Deborah": "deb*", "debo*", "debor*"),
    one for each time a name is written (a capitalised word of at least five letters)."""
    low, high = PREFIX_LETTERS
    out = []
    for word in _CAPITALISED.findall(text):
        word = word.lower()
        out += [word[:size] + PREFIX_MARK for size in range(low, min(high, len(word) - 2) + 1)]
    return out


def short_names(text: str) -> list[str]:
    """The prefix terms a query's short names ask for: a capitalised word of 3 to 5 letters
    inside a sentence ("when did Deb move": "deb*")."""
    return [word.lower() + PREFIX_MARK for word in _SHORT_NAME.findall(text)]


def _update_new(out: dict[str, float], added: dict[str, float]) -> None:
    """`out.setdefault(term, weight)` for each item of `added`, in order (in C)."""
    for known in added.keys() & out.keys():
        del added[known]
    out.update(added)
# A capitalised word inside a sentence (not after . ! ? or at the start) is a name. (The
# capital first, then the look behind: the engine then scans for the class, in C.)
_NAME = re.compile(r"[A-Z](?<=[^\s.!?。！？]\s[A-Z])[a-z]+(?:'s)?")
NAME_WEIGHT = 1.5
# A name a memory writes ("Deborah", "Melanie") is indexed by its first 3 to 5 letters too,
# as prefix terms ("deb*", "debo*", "debor*"; two letters at least left out), and a short
# name inside a query ("Deb", "Mel", "Chris") asks for its prefix term at PREFIX_WEIGHT:
# an alias reaches the full name, below an exact match. A prefix term holds `*`, which no
# word term does; it counts in no field's length.
PREFIX_MARK = "*"
PREFIX_LETTERS = (3, 5)
PREFIX_WEIGHT = 0.5
# The capital first, then the look behind (the engine then scans for the class, in C).
_CAPITALISED = on_use(r"[A-Z](?<![^\W\d_][A-Z])[a-z]{4,}(?![^\W_])")
_SHORT_NAME = re.compile(r"[A-Z](?<=[^\s.!?。！？]\s[A-Z])[a-z]{2,4}(?![^\W_])")
MAX_VERB = 5
SPLIT_WEIGHT = 0.3
REDUPLICATED_WEIGHT = 1.0
SKIP_WEIGHT = 0.4
# A query character standing alone between function words is a one-character word: its
# unigram weighs this rather than UNIGRAM_QUERY_WEIGHT (0.25). Chosen on dulemon-utterance's
# tuning half (sessions 0-4; 0.35-0.75 a plateau, 1.0 loses): docs/retrieval.md, "the
# twelfth pass".
LONE_WEIGHT = 0.5


class _UnigramTerms(dict[str, str]):
    """Character -> its unigram term (`~` + character), or "" for a function character
    (other than a thing's pronoun, `THING_PRONOUNS`).

    Looked up in C for each character of a run; one string per character rather
    than a new one per occurrence (whose hash the index then computes again).
    """

    def __missing__(self, char: str) -> str:
        term = "" if char in CHINESE_STOP_CHARS and char not in THING_PRONOUNS else "~" + char
        if len(self) < _UNIGRAMS_LIMIT:
            self[char] = term
        return term


_UNIGRAMS_LIMIT = 1 << 15
_UNIGRAMS = _UnigramTerms()


def is_unigram(term: str) -> bool:
    """True for a CJK single-character term (weighed lower than bigrams)."""
    return term.startswith("~")


def is_word(term: str) -> bool:
    """True for a Latin (or digit) word term, as opposed to a CJK bigram or unigram."""
    # Words never hold a CJK character and bigrams hold nothing else: the first says which.
    return bool(term) and term[0] != "~" and (term.isascii() or _CJK_RUN.match(term) is None)


def stem(word: str) -> str:
    """The Porter2 (Snowball English) stem of a lower-case word; other words pass unchanged."""
    return _STEMS[word]


def stem_once(word: str) -> str:
    """`stem` without its cache: for words made up to be looked up once (a misspelt
    word's neighbours, `spelling.candidate_stems`), which would only fill it."""
    return _stem(word)


class _StemCache(dict[str, str]):
    """Word -> stem, filled on first use; `tokenize` looks words up in C, through `map`.

    Emptied when full rather than kept in LRU order: a stem is cheap to redo.
    """

    def __missing__(self, word: str) -> str:
        result = _stem(word)
        if len(self) >= _STEMS_LIMIT:
            self.clear()
        self[word] = result
        return result


_STEMS_LIMIT = 1 << 16
_STEMS = _StemCache()


def _stem(word: str) -> str:
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    if word in IRREGULAR_FORMS:
        word = IRREGULAR_FORMS[word]
    if word[0].isdigit() and word[-1] in "dht" and _ORDINAL.fullmatch(word):
        return word[:-2]  # "28th" is the day "28"
    return porter2(word)
