"""Text to index terms: stemmed words for Latin text, character bigrams for CJK.

Latin text is NFKC-folded (full-width letters and digits meet their ASCII
forms), lower-cased and split into words at anything that is not a letter or a
digit, so a possessive "Caroline's" gives "caroline" and the stop word "s".
Words in `ENGLISH_STOP_WORDS` and question frames ("how many", "what kind of")
are dropped; the rest go through `stem`, the Snowball English (Porter2)
stemmer written out below, so "racing", "races" and "race" meet, as do
"activities" and "active". Digits stay words ("2023").

CJK runs are cut at Chinese function words (`CHINESE_STOP_WORDS`) and
particles (`CHINESE_BREAKS`), then each stretch becomes overlapping character
bigrams; each CJK character that is not a function character is also kept as
a unigram term, prefixed `~`, which the index weighs lower, so a one-character
query ("猫") still finds "用户的猫叫芝麻".

Must stay import-light: the hook path imports it.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import filterfalse

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(rf"([{_CJK}]+)")
# A word is a run of letters and digits that are not CJK, so "用pytest跑测试"
# gives the word "pytest" between two CJK runs.
_WORD = re.compile(rf"[^\W_{_CJK}]+")
# The ideographic space and the full-width forms of ASCII, with their NFKD forms.
_FULL_WIDTH = re.compile("[\u3000\uff01-\uff5e]")
_NARROW = {
    char: unicodedata.normalize("NFKD", char)
    for char in ["\u3000", *map(chr, range(0xFF01, 0xFF5F))]
}

# The Snowball English stop list, plus a few words so common in notes that
# they carry no topic ("also", "get", "got", "let").
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just ll
    m me more most mustn my myself no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under
    until up very was wasn we were weren what when where which while who whom why will with
    won would wouldn y you your yours yourself yourselves ve let lets also get got
    """.split()
)

# Chinese function words, removed as whole units before bigrams are taken.
# Cutting at every single-character particle would also cut content words
# apart (地址, 会议, 需要, 了解, 过滤, 本地, 存在), so a text is cut only at
# multi-character function words and at the particles in CHINESE_BREAKS, which
# hardly ever sit inside a content word; the other single characters in
# CHINESE_STOP_CHARS stay inside bigrams but never stand alone as a term.
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
# The lookahead on first characters is only for speed: without it the regex
# engine tries all forty alternatives at every character of a run.
_CHINESE_STOP = re.compile(
    "(?=[" + "".join(sorted({w[0] for w in CHINESE_STOP_WORDS} | set(CHINESE_BREAKS))) + "])(?:"
    + "|".join(sorted(CHINESE_STOP_WORDS, key=len, reverse=True)) + f"|[{CHINESE_BREAKS}])"
)

# Question frames: "how many", "how long", "what kind of" say what shape the
# answer has, not what it is about, and would match stray "long"s and "kind"s.
QUESTION_FRAMES = frozenset(("many", "much", "long", "often"))
FRAME_NOUNS = frozenset(("kind", "kinds", "type", "types", "sort", "sorts"))
_FRAME_WORDS = QUESTION_FRAMES | FRAME_NOUNS


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
    return _CJK_RUN.search(text) is not None


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
    folded = fold(text)
    if folded.isascii():
        return _word_terms(_WORD.findall(folded))
    # Alternating stretches: text between CJK runs (odd ones), then a CJK run.
    out: list[str] = []
    for i, part in enumerate(_CJK_RUN.split(folded)):
        out += cjk_terms(part) if i % 2 else _word_terms(_WORD.findall(part))
    return out


def _word_terms(found: list[str]) -> list[str]:
    """Terms of the words between two CJK runs (a question frame never spans a CJK run)."""
    if _FRAME_WORDS.isdisjoint(found):
        # The common case, done in C: drop stop words, look up (or make) each stem.
        return list(map(_STEMS.__getitem__, filterfalse(ENGLISH_STOP_WORDS.__contains__, found)))
    out: list[str] = []
    previous = ""
    for i, word in enumerate(found):
        frame = (previous == "how" and word in QUESTION_FRAMES) or (
            word in FRAME_NOUNS and i + 1 < len(found) and found[i + 1] == "of"
        )
        previous = word
        if not frame and word not in ENGLISH_STOP_WORDS:
            out.append(_STEMS[word])
    return out


def cjk_terms(run: str) -> list[str]:
    """Terms of one CJK run: bigrams of each stretch between function words, then its characters."""
    out: list[str] = []
    unigram = _UNIGRAMS.__getitem__
    for segment in _CHINESE_STOP.split(run):
        if len(segment) > 1:
            out += [segment[i : i + 2] for i in range(len(segment) - 1)]
        out += filter(None, map(unigram, segment))
    return out


class _UnigramTerms(dict[str, str]):
    """Character -> its unigram term (`~` + character), or "" for a function character.

    Looked up in C for each character of a run; one string per character rather
    than a new one per occurrence (whose hash the index then computes again).
    """

    def __missing__(self, char: str) -> str:
        term = "" if char in CHINESE_STOP_CHARS else "~" + char
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
    return bool(term) and term[0] != "~" and _CJK_RUN.match(term) is None


# Porter2, after https://snowballstem.org/algorithms/english/stemmer.html.

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDINGS = frozenset("cdeghkmnrt")
_R1_PREFIXES = (
    "gener", "commun", "arsen", "past", "univers", "later", "emerg", "organ", "inter",
)
_EXCEPTIONS = {
    "skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
    "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli",
    "singly": "singl", "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas",
    "cosmos": "cosmos", "bias": "bias", "andes": "andes",
}
_KEEP_AFTER_1A = frozenset(
    (
        "inning", "outing", "canning", "herring", "earring", "evening",
        "proceed", "exceed", "succeed",
    )
)
_STEP2 = (
    ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"),
    ("iveness", "ive"), ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"),
    ("entli", "ent"), ("ation", "ate"), ("alism", "al"), ("aliti", "al"), ("ousli", "ous"),
    ("iviti", "ive"), ("fulli", "ful"), ("ogist", "og"), ("enci", "ence"), ("anci", "ance"),
    ("abli", "able"), ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"),
    ("ogi", "og"), ("li", ""),
)  # longest first: the longest matching suffix decides
_STEP3 = (
    ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
    ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
)
_STEP4 = (
    "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous",
    "ive", "ize", "ion", "al", "er", "ic",
)
# One `endswith` over all of a step's suffixes skips the step for most words.
_STEP2_SUFFIXES = tuple(suffix for suffix, _ in _STEP2)
_STEP3_SUFFIXES = tuple(suffix for suffix, _ in _STEP3)
_VOWEL_CONSONANT = re.compile("[aeiouy][^aeiouy]")


def stem(word: str) -> str:
    """The Porter2 (Snowball English) stem of a lower-case word; other words pass unchanged."""
    return _STEMS[word]


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
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    w = _mark_y(word)
    r1, r2 = _regions(w)
    w = _step1a(w)
    if w in _KEEP_AFTER_1A:
        return w
    w = _step1b(w, r1)
    w = _step1c(w)
    w = _step2(w, r1)
    w = _step3(w, r1, r2)
    w = _step4(w, r2)
    w = _step5(w, r1, r2)
    return w.replace("Y", "y")


def _mark_y(word: str) -> str:
    # A consonant y (initial, or after a vowel) is written Y so that it is not a vowel.
    if "y" not in word:
        return word
    chars = list(word)
    if chars[0] == "y":
        chars[0] = "Y"
    for i in range(1, len(chars)):
        if chars[i] == "y" and chars[i - 1] in _VOWELS:
            chars[i] = "Y"
    return "".join(chars)


def _regions(word: str) -> tuple[int, int]:
    if word.startswith(_R1_PREFIXES):
        r1 = next(len(p) for p in _R1_PREFIXES if word.startswith(p))
    else:
        r1 = _after_vowel_consonant(word, 0)
    return r1, _after_vowel_consonant(word, r1)


def _after_vowel_consonant(word: str, start: int) -> int:
    # Just past the first non-vowel that follows a vowel, both at or after `start`.
    match = _VOWEL_CONSONANT.search(word, start)
    return match.end() if match else len(word)


def _has_vowel(text: str) -> bool:
    return any(char in _VOWELS for char in text)


def _short_syllable_end(word: str) -> bool:
    n = len(word)
    if n == 2:
        return word[0] in _VOWELS and word[1] not in _VOWELS
    return (
        n >= 3
        and word[-3] not in _VOWELS
        and word[-2] in _VOWELS
        and word[-1] not in _VOWELS
        and word[-1] not in "wxY"
    ) or word == "past"


def _step1a(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(("ied", "ies")):
        return w[:-2] if len(w) > 4 else w[:-1]
    if w.endswith(("us", "ss")):
        return w
    if w.endswith("s") and _has_vowel(w[:-2]):
        return w[:-1]
    return w


def _step1b(w: str, r1: int) -> str:
    for suffix in ("eedly", "eed"):
        if w.endswith(suffix):
            if len(w) - len(suffix) >= r1:
                return w[: -len(suffix)] + "ee"
            return w
    for suffix in ("ingly", "edly", "ing", "ed"):
        if w.endswith(suffix):
            stem_part = w[: -len(suffix)]
            if not _has_vowel(stem_part):
                return w
            if stem_part.endswith(("at", "bl", "iz")):
                return stem_part + "e"
            if stem_part.endswith(_DOUBLES):
                # "adding", "egged": a vowel and a double alone keep the double
                if len(stem_part) == 3 and stem_part[0] in "aeo":
                    return stem_part
                return stem_part[:-1]
            if _short_syllable_end(stem_part) and r1 >= len(stem_part):
                return stem_part + "e"
            return stem_part
    return w


def _step1c(w: str) -> str:
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _VOWELS:
        return w[:-1] + "i"
    return w


def _step2(w: str, r1: int) -> str:
    # The longest matching suffix decides; it is replaced only when it lies in R1.
    if not w.endswith(_STEP2_SUFFIXES):
        return w
    for suffix, replacement in _STEP2:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < r1:
                return w
            if suffix in ("ogi", "ogist") and not w[:start].endswith("l"):
                return w
            if suffix == "li" and (start == 0 or w[start - 1] not in _LI_ENDINGS):
                return w
            return w[:start] + replacement
    return w


def _step3(w: str, r1: int, r2: int) -> str:
    if not w.endswith(_STEP3_SUFFIXES):
        return w
    for suffix, replacement in _STEP3:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < r1 or (suffix == "ative" and start < r2):
                return w
            return w[:start] + replacement
    return w


def _step4(w: str, r2: int) -> str:
    if not w.endswith(_STEP4):
        return w
    for suffix in _STEP4:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < r2:
                return w
            if suffix == "ion" and (start == 0 or w[start - 1] not in "st"):
                return w
            return w[:start]
    return w


def _step5(w: str, r1: int, r2: int) -> str:
    if w.endswith("e"):
        start = len(w) - 1
        if start >= r2 or (start >= r1 and not _short_syllable_end(w[:-1])):
            return w[:-1]
    elif w.endswith("l") and len(w) - 1 >= r2 and w[-2:-1] == "l":
        return w[:-1]
    return w
