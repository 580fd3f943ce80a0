"""A cold build with numpy (`search/dense_build.py`) writes the pure build's file, byte for byte.

numpy is optional: a plain install builds with `building.Builder` alone. Where
numpy is there, `cache.build` pairs, counts, weighs and places with it. These
tests build the same folders with numpy blocked and with it and compare the
files byte for byte (the terms' numbering, on first sight, included: the file
orders the terms of one CRC-32 by it), and the two builders' `Packed` term by
term, under other scorings too.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from test_cache_build import WORDS, _text, make_folder, write

from sage_mem import MemoryStore
from sage_mem import store as store_module
from sage_mem.memory.value import Memory
from sage_mem.search import building, dense_build
from sage_mem.search import cache as cache_module
from sage_mem.search.building import Builder
from sage_mem.search.scoring import FIELD_WEIGHTS, Scoring, word_pairs
from sage_mem.search.tokens import tokenize

np = pytest.importorskip("numpy")


def _cold_build(
    folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, list[type]]:
    """The cache `cache.build` writes of `folder` (the clock stood still), and the builders
    it used."""
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: 1_800_000_000_000_000_000)
    store = MemoryStore(folder, state_dir=state, watch=False)  # small: an index in memory
    memories = sorted(store.index.memories(), key=lambda memory: memory.id)
    entries = store_module._Files(store).entries(cache_module.scan(store.folder))
    used: list[type] = []
    real = dense_build.builder_for

    def spied(*args, **kwargs):  # type: ignore[no-untyped-def]
        made = real(*args, **kwargs)
        used.append(type(made))
        return made

    monkeypatch.setattr(dense_build, "builder_for", spied)
    path = cache_module.cache_path(store.folder)
    path.unlink()
    written = cache_module.build(store.folder, iter(memories), lambda: entries,
                                 scoring=Scoring(), started_ns=1_700_000_000_000_000_000)
    assert written == len(memories)
    return path.read_bytes(), used


@pytest.mark.parametrize(("seed", "round_postings"), [(1, 1 << 30), (2, 1 << 30), (3, 700),
                                                     (4, 1), (5, 5_000)])
def test_a_build_with_numpy_writes_the_file_the_pure_build_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, round_postings: int
) -> None:
    """Byte for byte, with every posting placed at once or a range of terms at a time
    (`building.ROUND_POSTINGS`: 1 is a block of terms a round), in chunks of 16 memories
    (spilled): bilingual texts, every field, a term counted more than 65,535 times."""
    folder = tmp_path / "memory"
    make_folder(folder, 150, seed)
    monkeypatch.setattr(building, "_CHUNK", 16)
    monkeypatch.setattr(building, "ROUND_POSTINGS", round_postings)
    with monkeypatch.context() as blocked:
        blocked.setitem(sys.modules, "numpy", None)  # a plain install
        pure, used = _cold_build(folder, tmp_path / "pure", blocked)
    assert used == [Builder]
    with monkeypatch.context() as present:
        dense, used = _cold_build(folder, tmp_path / "numpy", present)
    assert used == [dense_build.NumpyBuilder]
    assert dense == pure


ODD_WORDS = ["Deborah", "Alexander", "Sesame", "Katherine", "6", "q", "café", "naïve", "👍",
             "v2.1", "C++"]


def _memories(seed: int, count: int) -> list[Memory]:
    """Memories whose terms are first seen in every order: words, pairs and name prefixes,
    repeated within and across fields and memories, English, Chinese and mixed."""
    rng = random.Random(seed)

    def text(words: int) -> str:
        parts = _text(rng, words).split()
        for _ in range(len(parts) // 3 + 1):  # names (their prefixes too), odd words
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(ODD_WORDS))
        return " ".join(parts)

    folder = Path("/nowhere")
    return [
        Memory(
            id=f"m{n:04d}", path=folder / f"m{n:04d}.md", description=text(rng.randint(0, 9)),
            body=text(rng.randint(0, 80)), name=text(2) if rng.random() < 0.4 else None,
            summary=text(5) if rng.random() < 0.3 else None,
            aliases=tuple(text(2) for _ in range(rng.randint(0, 2))),
            tags=tuple(rng.choice(WORDS) for _ in range(rng.randint(0, 3))),
        )
        for n in range(count)
    ]


SCORINGS = {
    "default": Scoring(),
    "no pairs": Scoring(pair_weight=0.0),
    "tags not weighed": Scoring(field_weights={**FIELD_WEIGHTS, "tags": 0.0}),
    "other k1 and b": Scoring(k1=1.3, field_b={"description": 0.75, "body": 0.5}),
}


def _packed_rounds(builder: Builder, memories: list[Memory]) -> tuple:
    for memory in memories:
        builder.add(memory)
    packed = builder.finish()
    rounds = [(low, high, bytes(slots), bytes(weights))
              for low, high, slots, weights in packed.rounds]
    return (list(packed.terms), packed.counts.tolist(), packed.order.tolist(),
            packed.sorted_crcs.tolist(), packed.starts.tolist(), packed.lengths.tolist(),
            packed.columns, rounds)


@pytest.mark.parametrize("scoring", list(SCORINGS), ids=list(SCORINGS))
@pytest.mark.parametrize("round_postings", [1 << 30, 300])
def test_the_numpy_builder_gives_the_pure_builders_terms_and_postings(
    monkeypatch: pytest.MonkeyPatch, scoring: str, round_postings: int
) -> None:
    """Every term in the same order (numbered on first sight), every posting's memory and
    float32 weight, every round, whatever the scoring's constants."""
    monkeypatch.setattr(building, "_CHUNK", 7)
    monkeypatch.setattr(building, "ROUND_POSTINGS", round_postings)
    memories = _memories(11, 120)
    built = []
    for make in (Builder, lambda **kw: dense_build.NumpyBuilder(np, **kw)):
        with tempfile.TemporaryFile() as spill:
            built.append(_packed_rounds(make(scoring=SCORINGS[scoring], spill=spill, block=4),
                                        memories))
    assert built[0][0] == built[1][0]  # the terms, in order
    assert built[0] == built[1]
    assert len(built[0][-1]) > (1 if round_postings < 1000 else 0)  # rounds, when asked


def test_an_empty_build_and_one_of_empty_memories() -> None:
    folder = Path("/nowhere")
    empty = [Memory(id=f"e{n}", path=folder / f"e{n}.md", description="", body="")
             for n in range(3)]
    for memories in ([], empty):
        assert (_packed_rounds(Builder(), memories)
                == _packed_rounds(dense_build.NumpyBuilder(np), memories))


@pytest.mark.parametrize("text", [
    "support groups support group meetings", "cats cats cats and dogs", "deploy",
    "我的猫叫芝麻", "the flaky 测试 runs again 测试 flaky", "café au lait, naïve café",
    "log in to macOS 10.15 then login", "狗狗 dog dog 狗", "", "a 👍 means go 👍 ahead",
    "Ünïcode wörds 和 中文 mixed ~tilde~ words", "flaky 测 test", "x",
])
def test_the_numpy_builder_pairs_the_words_word_pairs_pairs(text: str) -> None:
    """A word is one a pair may join (`_StampedNumbers.pairable`, what `word_pairs` reads of
    each term), and a field's pairs are two such words next to each other, not one word
    twice: `word_pairs`'s, in the same order."""
    builder = dense_build.NumpyBuilder(np)
    terms = tokenize(text)
    numbers = np.array([builder._words[term] for term in terms], np.int64)
    codes, _ = builder._pairs(numbers, np.zeros(len(terms), np.int64))
    texts = list(builder._words)
    assert [f"{texts[code >> 32]} {texts[code & 0xFFFFFFFF]}" for code in codes.tolist()] == (
        word_pairs(terms))


def test_a_plain_install_builds_without_numpy_and_never_imports_it_otherwise(
    tmp_path: Path,
) -> None:
    """A store that opens a folder without building (a hook's, or a small folder's in memory)
    imports no numpy; a large folder's build does, once, where it is installed, and with
    `USE_NUMPY = False` it never does."""
    folder = tmp_path / "memory"
    for n in range(30):
        write(folder / f"note_{n}.md", f"---\ndescription: note {n} on flaky tests\n---\nbody\n")
    moment = time.time() - 3600
    for path in folder.rglob("*.md"):
        os.utime(path, (moment, moment))
    script = textwrap.dedent(f"""
        import sys
        from sage_mem import MemoryStore
        from sage_mem.search import dense_build, loading
        small = MemoryStore({str(folder)!r}, state_dir={str(tmp_path / "small")!r}, watch=False)
        again = MemoryStore({str(folder)!r}, state_dir={str(tmp_path / "small")!r}, watch=False)
        before = "numpy" in sys.modules
        loading.ADOPT_CACHE_FROM = 10
        dense_build.USE_NUMPY = False
        MemoryStore({str(folder)!r}, state_dir={str(tmp_path / "pure")!r}, watch=False)
        never = "numpy" in sys.modules
        dense_build.USE_NUMPY = True
        MemoryStore({str(folder)!r}, state_dir={str(tmp_path / "dense")!r}, watch=False)
        print(small.loaded.how, again.loaded.how, before, never, "numpy" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["built", "cache", "False", "False", "True"]
