"""A misspelt query word is read as the indexed word one edit away (docs/retrieval.md,
"the thirteenth pass").

A person's or an agent's search (`refine=True`, `QueryPath._spelled`) reads a word no
memory holds ("educaton", "tournamnet") as the word one edit away that the most memories
hold; a capitalised word inside a sentence is a name and is never guessed, nor a short
word, nor a word some memory holds. In a Chinese sentence a Latin word is read the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_exact_forms import OTHERS, make

from sage_mem.search.index import Index
from sage_mem.search.spelling import MAX_WORDS, candidate_stems, guessable_words, one_edit

MEMORIES = [
    *OTHERS,
    make("maria_walks", "Maria walks the dog every morning"),
    make("education", "Caroline wants to study counselling", "Her education plan: a degree."),
    make("tournament", "Nate won the chess tournament", "下棋比赛第一名"),
]


def index_of(**weights: float) -> Index:
    index = Index(**weights)
    index.add_many(MEMORIES)
    return index


@pytest.mark.parametrize(("query", "wanted"), [
    ("Anything about my educaton?", "education"),
    ("Which tournamnet?", "tournament"),
    ("Recieved the tournamnet results", "tournament"),
    ("赢了哪个 tournamnet", "tournament"),
    ("赢了哪个tournamnet呢", "tournament"),
])
def test_a_misspelt_word_finds_the_word_memories_hold(query: str, wanted: str) -> None:
    index = index_of()
    assert index.search(query, refine=True)[0].id == wanted
    # Without the rule (or in a search that does not refine: a hook's) the word finds nothing.
    off = index_of(spelling_weight=0)
    assert [hit.id for hit in off.search(query, refine=True)][:1] != [wanted]


def test_the_corrected_word_weighs_as_the_word_itself() -> None:
    index = index_of()
    typed = index.search("my educaton", refine=True)
    right = index.search("my education", refine=True)
    assert typed[0].id == right[0].id == "education"
    assert typed[0].score == pytest.approx(right[0].score)


def test_names_short_words_and_known_words_are_not_guessed() -> None:
    index = index_of()
    # "Marla" is one edit from "Maria", but a capitalised word inside a sentence is a name.
    assert index.search("Where is Marla?", refine=True) == []
    assert index.search("where is marla?", refine=True)[0].id == "maria_walks"
    assert guessable_words("Where did Marla go with her educaton? Recieved it") == [
        "educaton", "recieved"]
    # Four letters or fewer, stop words, acronyms and identifiers: not typed words to guess.
    assert guessable_words("the tyre NASA iPhone mp3player snake_case cafés about") == []
    assert len(guessable_words("alpha bravo charlie delta echoes foxtrot")) == MAX_WORDS
    # A word some memory holds is its own word: "tyres" is not read as "tries".
    assert index.search("tyres", refine=True)[0].id == "other_1"


def test_one_edit_keeps_the_first_and_the_last_letter() -> None:
    edits = set(one_edit("educaton"))
    assert {"education", "educaon", "eudcaton", "edacaton"} <= edits
    assert all(word[0] == "e" and word[-1] == "n" for word in edits)
    assert "educaton" not in edits
    assert "educ" in candidate_stems("educaton")  # "education", stemmed as the index does
    assert "tournament" in candidate_stems("tournamnet")


def test_a_fused_search_reads_a_misspelt_word_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the extra, a person's or an agent's search (`refine`) reads the misspelt word on
    its lexical side too; a search that does not refine (a hook's) does not."""
    pytest.importorskip("numpy")
    from support import write_memory
    from test_semantic import WordsEmbedder

    from sage_mem import MemoryStore

    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)
    folder = tmp_path / "memory"
    folder.mkdir()
    for memory in MEMORIES:
        write_memory(folder, memory.id, f"---\ndescription: {memory.description}\n"
                                        f"category: user\n---\n{memory.body}\n")
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    query = "Which tournamnet?"
    assert [hit.id for hit in store.search(query, refine=True)][:1] == ["tournament"]
    assert [hit.id for hit in store.search(query)][:1] != ["tournament"]
    store.index.spelling_weight = 0
    assert [hit.id for hit in store.search(query, refine=True)][:1] != ["tournament"]


def test_a_search_for_one_endless_word_is_not_guessed_and_costs_what_a_word_costs(
    memory_dir: Path,
) -> None:
    """A run of letters longer than any typed word (`spelling.MAX_LETTERS`) is no misspelling:
    guessing it would make ~54 candidates a letter, each as long as the word (4,000 letters
    took 10 s and 860 MB; 30,000 letters 24 GB, killed). The process gets 5 s of CPU."""
    import resource
    import subprocess
    import sys

    from support import ROOT

    def five_cpu_seconds() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (5, 5))

    word = "x" * 4_000
    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(memory_dir), "search", word],
        capture_output=True, timeout=120, cwd=ROOT, preexec_fn=five_cpu_seconds,
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-500:])
    assert result.stdout.decode().strip() == "No memories match."

    from sage_mem.search.spelling import MAX_LETTERS

    assert len(word) > MAX_LETTERS and guessable_words(f"where is my {word}") == []
    # Up to the limit a word is still guessed: a long word misspelt is a misspelling.
    assert guessable_words("x" * MAX_LETTERS) == ["x" * MAX_LETTERS]
