"""The query's words as written order the top few (docs/retrieval.md, "the tenth pass").

Stemming lets "book" and "books" meet, which finds the memory; which of the memories it
finds answers "What books has Caroline read?" is told more finely by the word as the
question writes it. A person's or an agent's search (`refine=True`) orders its top
EXACT_DEPTH again (`QueryPath._exact_forms`): a memory writing a query word in the query's
own form gains EXACT_WEIGHT of that word's query weight. Chinese terms are their
characters as written, so only Latin words count, in a Chinese sentence too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search.index import Index
from sage_mem.search.scoring import EXACT_DEPTH
from sage_mem.search.tokens import writes_word, written_forms


def make(memory_id: str, description: str, body: str = "") -> Memory:
    return memory_from_meta(memory_id, Path(memory_id + ".md"),
                            {"description": description}, body)


# Other notes, so that the words of the two compared have an idf worth the name.
OTHERS = [make(f"other_{number}", text) for number, text in enumerate([
    "Lunch with the design team on Friday", "The car needs new tyres",
    "Plan the garden for spring", "Call the bank about the card", "Renew the gym pass",
    "A dentist visit in March"])]

# A query, the memory writing its word in another form (more often: first by the stems'
# counts alone), the memory writing it as the query does.
CASES = {
    "en": ("What books has Caroline read?",
           make("note_book", "Caroline's book club read a book",
                "She reads a book a week; the book club meets on Monday."),
           make("note_books", "Caroline keeps the books she read on a shelf")),
    "zh": ("Caroline 读过的 books",
           make("note_book", "Caroline 读过的一本 book", "读书会每周读一本 book，周一见。"),
           make("note_books", "Caroline 读过的 books 都放在书架上")),
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_memory_writing_the_query_word_as_the_query_does_ranks_first(language: str) -> None:
    query, other_form, same_form = CASES[language]
    index = Index()
    index.add_many([*OTHERS, other_form, same_form])
    assert [hit.id for hit in index.search(query)][:2] == ["note_book", "note_books"]
    hits = index.search(query, refine=True)
    assert [hit.id for hit in hits][:2] == ["note_books", "note_book"]
    assert hits[0].score >= hits[1].score
    off = Index(exact_weight=0)
    off.add_many([*OTHERS, other_form, same_form])
    assert [hit.id for hit in off.search(query, refine=True)][:2] == ["note_book", "note_books"]


def test_a_chinese_word_is_no_written_form_and_a_stop_word_none() -> None:
    assert written_forms("What books has Caroline read?") == {
        "book": {"books"}, "carolin": {"caroline"}, "read": {"read"}}
    assert written_forms("Caroline 读过的书都放在书架上") == {"carolin": {"caroline"}}
    assert written_forms("读过的书") == {}
    # A form is found as a whole word: not inside "bookshelf" or "ebooks2".
    assert writes_word("two books.", "books") and writes_word("e-books", "books")
    assert writes_word("bookshelf_books", "books")  # an underscore splits words, as in `tokens`
    assert not writes_word("a bookshelf of ebooks2", "books")


def test_only_the_order_inside_the_top_few_changes() -> None:
    """A memory below the top EXACT_DEPTH writing the query's form stays below it."""
    query, other_form, same_form = CASES["en"]
    strong = [make(f"book_{number}", f"Caroline's book club read a book, number {number}",
                   "She reads a book a week; the book club meets on Monday. " * (number + 1))
              for number in range(EXACT_DEPTH - 1)]
    weak = make("note_books_late", "A shelf of books", "")
    memories = [*OTHERS, *strong, same_form, weak]
    index, off = Index(), Index(exact_weight=0)
    index.add_many(memories)
    off.add_many(memories)
    shown = [hit.id for hit in index.search(query, refine=True)]
    before = [hit.id for hit in off.search(query, refine=True)]
    assert shown != before
    assert set(shown[:EXACT_DEPTH]) == set(before[:EXACT_DEPTH])
    assert shown[EXACT_DEPTH:] == before[EXACT_DEPTH:]
