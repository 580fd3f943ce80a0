"""The pairs close in meaning a dream's rules verify (`dream.candidates`): from the stored
vectors when they are made, from the index's terms otherwise, k nearest a memory, never
every pair, and never a vector made during the dream.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_dream_support import add

from sage_mem.dream.candidates import close_pairs
from sage_mem.store import MemoryStore


@pytest.fixture(autouse=True)
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    folder.mkdir()
    add(folder, "user_gift", "The user bought a pendant for Melanie", "For her birthday.",
        category="user")
    add(folder, "user_present", "Melanie got a necklace from the user", "A birthday present.",
        category="user")
    add(folder, "user_stomach", "The user has gastritis", "No spicy food.", category="user")
    add(folder, "project_ci", "CI runs on GitHub Actions", "Jobs: lint, test.")
    return folder


def test_stored_vectors_propose_the_nearest_without_making_any(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    from test_semantic import WordsEmbedder

    assert np
    folder = _folder(tmp_path)
    store = MemoryStore(folder, watch=False)
    embedder = WordsEmbedder()
    store.embed(embedder=embedder)
    made = embedder.passages
    pairs = close_pairs(store.folder, store.list(), k=1)
    assert embedder.passages == made  # read what exists, made nothing
    best = {(p.first, p.second): p for p in pairs}
    assert ("user_gift", "user_present") in best
    assert best[("user_gift", "user_present")].source == "vectors"


def test_a_memory_changed_since_its_vectors_gets_lexical_neighbours(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    from test_semantic import WordsEmbedder

    folder = _folder(tmp_path)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    add(folder, "project_ci_again", "CI runs on GitHub Actions for every push", "Jobs: lint.")
    store = MemoryStore(folder, watch=False)
    pairs = close_pairs(store.folder, store.list(), k=2)
    sources = {(p.first, p.second): p.source for p in pairs}
    assert sources[("project_ci", "project_ci_again")] == "lexical"


def test_without_vectors_the_index_terms_propose_the_nearest(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    add(folder, "project_ci_twin", "Our CI is on GitHub Actions", "Jobs: lint, test, build.")
    store = MemoryStore(folder, watch=False)
    pairs = close_pairs(store.folder, store.list(), k=1)
    assert ("project_ci", "project_ci_twin") in {(p.first, p.second) for p in pairs}
    assert {p.source for p in pairs} == {"lexical"}


@pytest.mark.scale
def test_close_pairs_grow_with_the_folder_not_its_square(tmp_path: Path) -> None:
    """k nearest a memory through an inverted index: 4x the memories, about 4x the time."""
    from sage_mem.memory.value import Memory

    words = [f"w{i}x" for i in range(3000)]

    def memories(n: int) -> list[Memory]:
        return [
            Memory(id=f"m{i}", path=Path(f"m{i}.md"),
                   description=f"note about {words[i % 3000]} and {words[(i * 7) % 3000]}",
                   body=f"the {words[(i * 13) % 3000]} team owns {words[(i * 31) % 3000]}")
            for i in range(n)
        ]

    folder = tmp_path / "memory"
    folder.mkdir()
    store = MemoryStore(folder, watch=False)

    def cost(n: int) -> float:
        given = memories(n)
        started = time.process_time()
        pairs = close_pairs(store.folder, given)
        assert len(pairs) <= 5 * n
        return time.process_time() - started

    small, large = cost(1000), cost(4000)
    assert large < 8 * small + 0.5, (small, large)


def test_with_vectors_the_words_still_propose_their_pairs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Made vectors add pairs, never hide one the words found; a pair carries both closenesses."""
    pytest.importorskip("numpy")
    from test_semantic import WordsEmbedder

    folder = _folder(tmp_path)
    add(folder, "project_ci_twin", "Our CI is on GitHub Actions", "Jobs: lint, test, build.")
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    pairs = {(p.first, p.second): p for p in close_pairs(store.folder, store.list(), k=1)}
    twin = pairs[("project_ci", "project_ci_twin")]
    assert twin.lexical is not None and twin.lexical > 0
    assert twin.vectors is not None and twin.vectors > 0
    monkeypatch.setenv("SAGE_MEM_SEMANTIC", "0")
    by_words = close_pairs(store.folder, store.list(), k=1)
    assert {p.source for p in by_words} == {"lexical"}
    assert {(p.first, p.second) for p in by_words} <= set(pairs)
