"""`benchmarks/semantic_static.py` measures a static side made of sage-mem's own words.

A memory's and a query's static vector is a mean over the words the index
reads (a Latin word weighed by its stem, a Chinese text's bigrams), and the
side is fused through the extra's own `fusion.search`: these pin both, in
English and Chinese, with word vectors made by hand (no model).
"""

from __future__ import annotations

import importlib.util
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sage_mem import MemoryStore
from sage_mem.search.tokens import is_unigram, is_word, tokenize

np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "semantic_static_bench", ROOT / "benchmarks" / "semantic_static.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["semantic_static_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_a_texts_words_are_the_index_words_in_english_and_chinese() -> None:
    bench = _bench()
    english = "Caroline's cousins were racing to the wedding"
    found = bench.text_words(english)
    assert [term for _, term in found] == [t for t in tokenize(english) if is_word(t)]
    assert [word for word, _ in found] == ["caroline", "cousins", "racing", "wedding"]
    chinese = "我喜欢战国无双的故事"
    found = bench.text_words(chinese)
    assert [term for _, term in found] == [t for t in tokenize(chinese) if not is_unigram(t)]
    assert ("无双", "无双") in found


class _HandMadeWords:
    """Word vectors made by hand: each word its own random direction (seeded by the word: 384
    dimensions, nearly orthogonal), the words of `alike` the direction of another word."""

    def __init__(self, alike: dict[str, str]) -> None:
        self.alike = alike
        self.index: dict[str, int] = {}
        self.rows: list[Any] = []

    def need(self, words: Sequence[str]) -> None:
        for word in words:
            if word not in self.index:
                self.index[word] = len(self.rows)
                self.rows.append(None)
        for word, at in self.index.items():
            seed = self.alike.get(word, word)
            vector = np.random.default_rng(zlib.crc32(seed.encode())).standard_normal(384)
            self.rows[at] = (vector / np.linalg.norm(vector)).astype(np.float32)

    def matrix(self, words: Sequence[str]) -> Any:
        return np.stack([self.rows[self.index[word]] for word in words])


@pytest.mark.parametrize(("query", "found", "others", "alike"), [
    ("kitchen appliance", "Bought a smoker for the patio",
     ["Went hiking near the lake", "Painted the fence blue",
      "Watched a film on Sunday"], {"smoker": "appliance"}),
    ("厨房电器", "买了一台烤炉", ["去湖边徒步", "把篱笆刷成蓝色", "周末去山里露营"],
     {"烤炉": "电器"}),
])
def test_the_static_side_finds_a_memory_by_its_words_vectors_through_the_fused_search(
    tmp_path: Path, query: str, found: str, others: list[str], alike: dict[str, str]
) -> None:
    bench = _bench()
    folder = tmp_path / "memory"
    folder.mkdir()
    # The memory to find sorts last by id: a tie would not put it first.
    for name, text in (("z-found", found), *((f"a-other{n}", o) for n, o in enumerate(others))):
        (folder / f"{name}.md").write_text(
            f"---\ndescription: {text}\ncategory: user\n---\n\n{text}\n", encoding="utf-8")
    store = MemoryStore(folder, state_dir=tmp_path / "state", watch=False)
    assert store.search(query) == []  # no word in common: lexically, nothing
    words = _HandMadeWords(alike)
    static = bench.Static(words, store.index.memories(), weighting="uniform")
    side = static.side()
    scores = dict(side.scored(static.query(query)).nearest(10))
    # Nearly orthogonal random words: only the word given a like vector lifts a memory.
    assert scores["z-found"] > 0.15 > max(v for k, v in scores.items() if k != "z-found")
    ranked = bench.fused_search(store, side)(query, None)
    assert ranked[0] == "z-found"
