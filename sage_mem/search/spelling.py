"""A misspelt query word read as the word one edit away that memories hold.

"educaton", "fesetival", "torunament", "recieved", "persue": a question typed by
a person misspells a word now and then, and a word no memory holds finds nothing
(locomo-dev's 631 questions hold about ten). A person's or an agent's search
(`QueryPath.search` with `refine`) reads such a word as the indexed word one edit
away (one letter dropped, added or changed, or two neighbours swapped: Damerau's
single errors, most typing errors), the one most memories hold, as a spelling
corrector does (Norvig's, without a dictionary: the folder's own words are the
vocabulary). Only where it is safe to guess:

  - a lower-case Latin word of at least MIN_LETTERS letters, not a stop word:
    a shorter word has too many neighbours ("terms" is one edit from "teams"),
    and a capitalised word inside a sentence is a name (a person the folder does
    not know is not another one it does);
  - at most MAX_LETTERS letters: a longer run of letters is no typed word, and
    its candidates would cost time and memory in the square of its length (a
    pasted 4,000-letter run took 10 s and 860 MB, one of 30,000 letters 24 GB);
  - a word no memory holds at all (its stem's document count is 0);
  - the first and the last letter kept: a misspelling seldom starts a word
    wrong, and a changed last letter is mostly another inflection, which the
    stemmer already meets;
  - at most MAX_WORDS words a query (a pasted page holds many unknown words).

The candidates are made from the word (about 50 a letter) and looked up as
stems: no scan of the vocabulary, whatever the folder's size.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..memory.patterns import on_use
from .tokens import ENGLISH_STOP_WORDS, stem_once

MIN_LETTERS = 5
# "antidisestablishmentarianism" has 28 letters, the longest words in use not many more.
MAX_LETTERS = 40
MAX_WORDS = 4
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Compiled when first used (`on_use`): a hook imports this module but never guesses.
# A word of Latin letters alone ("mp3", "snake_case" and "café" are not typed words here).
_WORD = on_use(r"(?<![0-9A-Z_a-z\u00c0-\u024f])[A-Za-z]+(?![0-9A-Z_a-z\u00c0-\u024f])")
# What stands before a name: a capitalised word inside a sentence (as `tokens` reads names).
_INSIDE = on_use(r"[^\s.!?。！？]\s")


def guessable_words(text: str) -> list[str]:
    """The words of a query `text` a misspelling may be guessed for, folded, in order, at
    most MAX_WORDS: Latin letters only, MIN_LETTERS to MAX_LETTERS of them, no stop word, no
    capitalised word inside a sentence (a name)."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if not MIN_LETTERS <= len(word) <= MAX_LETTERS or not word[1:].islower():
            continue  # short or endless, or "NASA", "iPhone": an acronym or an identifier
        start = match.start()
        if word[0].isupper() and _INSIDE.fullmatch(text, max(0, start - 2), start):
            continue  # a name
        word = word.lower()
        if word in ENGLISH_STOP_WORDS or word in out:
            continue
        out.append(word)
        if len(out) == MAX_WORDS:
            break
    return out


def one_edit(word: str) -> Iterator[str]:
    """The words one edit from `word` that keep its first and last letters: one letter
    dropped, added or changed inside it, or two neighbours inside it swapped."""
    first, inner, last = word[0], word[1:-1], word[-1]
    seen = {word}
    for at in range(len(inner) + 1):
        head, tail = inner[:at], inner[at:]
        found = []
        if tail:
            found.append(head + tail[1:])
            if len(tail) > 1:
                found.append(head + tail[1] + tail[0] + tail[2:])
            found += [head + letter + tail[1:] for letter in _LETTERS]
        found += [head + letter + tail for letter in _LETTERS]
        for middle in found:
            candidate = first + middle + last
            if candidate not in seen:
                seen.add(candidate)
                yield candidate


def candidate_stems(word: str) -> dict[str, str]:
    """Stem -> the first word one edit from `word` (`one_edit`) giving it, other than
    `word`'s own stem and stop words."""
    own = stem_once(word)
    out: dict[str, str] = {}
    for candidate in one_edit(word):
        if candidate in ENGLISH_STOP_WORDS:
            continue
        found = stem_once(candidate)
        if found != own and found not in out:
            out[found] = candidate
    return out
