"""The Porter2 (Snowball English) stemmer, written out: "racing", "races", "race" -> "race".

After https://snowballstem.org/algorithms/english/stemmer.html (its exceptions
and the R1 prefixes included). `tokens.stem` reads irregular forms and number
words first and caches stems; this is the algorithm alone, ASCII words only.
"""

from __future__ import annotations

import re

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



def porter2(word: str) -> str:
    """The Porter2 stem alone, without the irregular forms and numbers `stem` reads first."""
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
