"""A short name reaches the full name it begins ("Deb" finds "Deborah"), below an exact match.

A name a memory writes is indexed by its first 3 to 5 letters too (`tokens.name_prefixes`:
"deb*", "debo*", "debor*"), and a short capitalised name inside a query asks for its prefix
term at PREFIX_WEIGHT (`tokens.short_names`): one more term a query, no scan of the
vocabulary. In Chinese a given name inside a full one is found by its bigrams already.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sage_mem import MemoryStore
from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search.index import Index
from sage_mem.search.scoring import field_counts
from sage_mem.search.tokens import name_prefixes, short_names


def make(memory_id: str, description: str, body: str = "") -> Memory:
    return memory_from_meta(memory_id, Path(memory_id + ".md"),
                            {"description": description}, body)


MEMORIES = [
    make("people_a", "Caroline moved to Paris for the new job"),
    make("people_b", "Deborah moved to Lisbon last spring", "She loves the tram."),
    make("people_c", "Tom moved the meeting to Friday"),
]


def ids(index: Index, query: str) -> list[str]:
    return [hit.id for hit in index.search(query)]


def test_a_name_is_indexed_by_its_first_letters() -> None:
    assert name_prefixes("Deborah met Mel and Jonathan's dog. MELANIE, McDonald, Eve") == [
        "deb*", "debo*", "debor*", "jon*", "jona*", "jonat*"]
    assert short_names("When did Deb move, and did Chris or Al help?") == ["deb*", "chris*"]
    assert short_names("Deb moved") == []  # a sentence's first word is not taken for a name


@pytest.mark.parametrize("query", ["Where did Deb move to?", "where did Deb move"])
def test_a_short_name_reaches_the_full_name(query: str) -> None:
    index = Index()
    index.add_many(MEMORIES)
    assert ids(index, query)[:1] == ["people_b"]


def test_without_prefix_terms_the_short_name_misses() -> None:
    index = Index(prefix_weight=0.0)
    index.add_many(MEMORIES)
    assert ids(index, "Where did Deb move to?")[:1] != ["people_b"]


def test_an_exact_name_ranks_above_a_longer_one_it_begins() -> None:
    index = Index()
    index.add_many([*MEMORIES, make("people_d", "Deb moved to Porto last spring")])
    assert ids(index, "Where did Deb move to?")[:2] == ["people_d", "people_b"]


def test_prefix_terms_count_in_no_fields_length() -> None:
    counts, lengths = field_counts(MEMORIES[1], 0.3)
    _, plain = field_counts(make("people_b", "Anna moved to Lisbon last spring",
                                 "She loves the tram."), 0.3)
    assert lengths == plain
    assert counts[0]["debor*"] == 1


def test_a_cached_index_finds_the_full_name_too(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    for memory in MEMORIES:
        (folder / f"{memory.id}.md").write_text(
            f"---\ndescription: {memory.description}\n---\n{memory.body}\n", encoding="utf-8")
    MemoryStore(folder, state_dir=tmp_path / "state", watch=False).close()
    warm = MemoryStore(folder, state_dir=tmp_path / "state", watch=False)
    assert [hit.id for hit in warm.search("Where did Deb move to?")][:1] == ["people_b"]


def test_a_chinese_given_name_finds_the_full_name() -> None:
    index = Index()
    index.add_many([make("zh_a", "王小红搬到了杭州"), make("zh_b", "李明搬到了上海"),
                    make("zh_c", "小王喜欢红色的车")])
    assert ids(index, "小红搬到哪里了")[:1] == ["zh_a"]
