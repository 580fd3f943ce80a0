"""Text to index terms: words for Latin text, character bigrams for CJK.

Latin text is NFKC-folded, lower-cased, split into words, stripped of English
stop words and lightly stemmed (plural, -ing and -ed endings and a final `e`,
so "racing", "races" and "race" meet). CJK runs are cut at Chinese function
words and particles, then turned into overlapping character bigrams; each CJK
character is also kept as a unigram term, which the index weighs lower, so a
one-character query ("猫") still finds "用户的猫叫芝麻".

Must stay import-light: the hook path imports it.
"""

from __future__ import annotations

import re
import unicodedata

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"([{_CJK}]+)|([^\W_]+)")
_HAS_CJK = re.compile(rf"[{_CJK}]")

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

# Multi-character function words go first so that their characters do not
# survive as bigrams; single characters below are particles and pronouns.
CHINESE_STOP_WORDS = (
    "什么", "怎么", "怎样", "如何", "为什么", "哪里", "哪儿", "哪个", "哪些", "这个", "那个",
    "这些", "那些", "我们", "你们", "他们", "她们", "它们", "自己", "一个", "一下", "一些",
    "可以", "没有", "就是", "还是", "但是", "因为", "所以", "如果", "而且", "或者", "已经",
    "时候", "的话", "吗", "呢", "吧", "啊", "呀", "哦", "嗯", "的", "地", "得", "了", "着",
    "过", "是", "在", "和", "与", "及", "也", "都", "就", "又", "很", "把", "被", "给", "让",
    "对", "从", "向", "我", "你", "您", "他", "她", "它", "这", "那", "有", "会", "要", "个",
    "之", "其", "而", "或", "么", "哪", "谁", "吗",
)
_CHINESE_STOP = re.compile("|".join(sorted(set(CHINESE_STOP_WORDS), key=len, reverse=True)))


def fold(text: str) -> str:
    """NFKC and lower case: full-width letters and digits meet their ASCII forms."""
    return unicodedata.normalize("NFKC", text).lower()


def has_cjk(text: str) -> bool:
    return _HAS_CJK.search(text) is not None


def stem(word: str) -> str:
    """A light English stemmer: enough to meet plurals and -ing/-ed forms, never over-eager."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) > 4:
        word = _undouble(word[:-2])
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Latin index terms of `text`, in order (CJK is skipped)."""
    out = []
    for match in _TOKEN.finditer(fold(text)):
        word = match.group(2)
        if word and word not in ENGLISH_STOP_WORDS:
            out.append(stem(word))
    return out


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character stands for itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Index terms of `text`: stemmed words, CJK bigrams, and CJK unigrams prefixed `~`."""
    out: list[str] = []
    for match in _TOKEN.finditer(fold(text)):
        cjk, word = match.groups()
        if word:
            if word not in ENGLISH_STOP_WORDS:
                out.append(stem(word))
            continue
        for segment in _CHINESE_STOP.split(cjk):
            if not segment:
                continue
            if len(segment) > 1:
                out.extend(bigrams(segment))
            out.extend("~" + char for char in segment)
    return out


def is_unigram(term: str) -> bool:
    """True for a CJK single-character term (weighed lower than bigrams)."""
    return term.startswith("~")
