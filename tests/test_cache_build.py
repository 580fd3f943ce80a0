"""A large folder's cold build (`cache.build`) writes exactly the cache the in-memory index wrote.

The build of 100,000 memories took 4.3 GB (issue 13): it now counts the
memories one at a time into compact arrays (`building.Builder`) and writes the
cache section by section (`cache._write`). These tests prove that only the
memory changed, not the result: on random bilingual folders (English,
Chinese, mixed, every field, archived and broken files, a term counted more
than 65,535 times), the file is byte for byte the one the writer before this
change (`_reference_write`, kept below as it was) made of an `Index` of the
same memories, and a store built that way answers every query alike.
"""

from __future__ import annotations

import marshal
import os
import random
import time
import zlib
from array import array
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import cast

import pytest

from sage_mem import MemoryStore
from sage_mem import store as store_module
from sage_mem.memory.value import Memory, ValueProblem
from sage_mem.search import building, dense_build
from sage_mem.search import cache as cache_module
from sage_mem.search import loading as loading_module
from sage_mem.search.building import Builder
from sage_mem.search.cache import (
    _MEMORY_FIELDS,
    _PROBLEMS,
    COUNTS_PAGE,
    FORMAT_VERSION,
    MAGIC,
    RACY_NS,
    TERM_BLOCK,
    Entry,
    _checked_piece,
    _column,
    _shared,
    fingerprint,
)
from sage_mem.search.index import Index
from sage_mem.search.packed import Export, packed_ids
from sage_mem.search.scoring import FIELDS, Scoring, word_pairs
from sage_mem.search.tokens import tokenize

WORDS = ("deploy release database migration garden coffee flight budget pytest running "
         "tests cats meeting Sesame Alice Tuesday login version numbers apples").split()
HANZI = "我的猫叫小花喜欢在花园里晒太阳部署前先跑测试数据库迁移咖啡预算航班会议"
QUERIES = ["how do I run the tests", "database migration", "小花 花园", "咖啡预算",
           "deploy 部署 release", "Alice meeting Tuesday", "cats", "猫", "login version 2"]


def _text(rng: random.Random, words: int) -> str:
    parts = []
    for _ in range(words):
        kind = rng.random()
        if kind < 0.45:
            parts.append(rng.choice(WORDS))
        elif kind < 0.9:
            start = rng.randrange(len(HANZI) - 4)
            parts.append(HANZI[start : start + rng.randint(1, 4)])
        else:
            parts.append(str(rng.randint(1, 2030)))
    return " ".join(parts)


def make_folder(folder: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(count):
        where = rng.choice(["", "", "project/", f"project/p{n % 3}/", "archive/"])
        lines = [f"description: {_text(rng, rng.randint(1, 8))}"]
        if rng.random() < 0.5:
            lines.append(f"name: {_text(rng, 2)}")
        if rng.random() < 0.4:
            lines.append(f"summary: {_text(rng, 6)}")
        if rng.random() < 0.4:
            lines.append(f"aliases: [{_text(rng, 2)}, {_text(rng, 1)}]")
        if rng.random() < 0.5:
            lines.append(f"tags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]")
        if rng.random() < 0.7:
            lines.append(f"category: {rng.choice(['user', 'project', 'feedback', 'reference'])}")
        if rng.random() < 0.3:
            lines.append(f"project: p{rng.randint(0, 2)}")
        if rng.random() < 0.5:
            lines.append(f"trust: {rng.choice([0.1, 0.3, 0.5, 0.9, 1.0])}")
        if rng.random() < 0.5:
            lines.append(f"updated: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
        body = "\n\n".join(_text(rng, rng.randint(0, 60)) for _ in range(rng.randint(0, 4)))
        name = f"{rng.choice(['user', 'project', 'note'])}_{n}"
        write(folder / f"{where}{name}.md", "---\n" + "\n".join(lines) + f"\n---\n\n{body}\n")
    write(folder / "broken.md", "---\ndescription: [unclosed\n---\nbody\n")
    write(folder / "no_description.md", "---\ntags: [x]\n---\n测试 the body only\n")
    # One term counted 70,000 times (past an unsigned 16-bit count).
    write(folder / "repeated.md", "---\ndescription: " + "cats " * 70_000 + "\n---\n猫\n")
    moment = time.time() - 3600  # older than RACY_NS: nothing is read again for its mtime
    for path in folder.rglob("*.md"):
        os.utime(path, (moment, moment))


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _reference_write(
    path: Path, export: Export, root: Path, entries: dict[str, Entry], header: dict
) -> None:
    """The cache writer before issue 13's build work (`_encode` and `_write`), as it was
    (format 6), with the ids as sections of their own (format 7)."""
    terms, unsorted_numbers, unsorted_weights, tops = export.postings
    crcs = [zlib.crc32(term.encode("utf-8", "surrogatepass")) for term in terms]
    order = sorted(range(len(terms)), key=crcs.__getitem__)
    numbers = cast("list[array]", list(map(unsorted_numbers.__getitem__, order)))
    weights = cast("list[array]", list(map(unsorted_weights.__getitem__, order)))
    starts = list(accumulate(map(len, numbers), initial=0))
    postings_crcs = [zlib.crc32(w, zlib.crc32(n)) for n, w in zip(numbers, weights, strict=True)]
    table = list(zip(
        map(crcs.__getitem__, order), map(terms.__getitem__, order), starts, starts[1:],
        map(tops.__getitem__, order), postings_crcs, strict=False,
    ))
    blocks = [
        _checked_piece(marshal.dumps(table[first : first + TERM_BLOCK]))
        for first in range(0, len(table), TERM_BLOCK)
    ]
    columns = export.columns
    records = []
    prefix = str(root) + os.sep
    for number in export.numbers:
        memory = export.memory(number)
        values = [getattr(memory, name) for name in _MEMORY_FIELDS]
        where = str(memory.path)
        values[_MEMORY_FIELDS.index("path")] = (
            where[len(prefix) :] if where.startswith(prefix) else where
        )
        values[_PROBLEMS] = tuple(
            (str(p), p.code, p.key) if isinstance(p, ValueProblem) else p
            for p in memory.problems
        )
        records.append(_checked_piece(marshal.dumps(tuple(values))))
    started_ns = header["started_ns"]
    sorted_crcs, sizes = array("I", sorted(crcs)), array("I", map(len, numbers))
    counts = sorted_crcs + sizes
    pages = range(0, len(sorted_crcs), COUNTS_PAGE)
    meta = {
        "counts_page": COUNTS_PAGE,
        "counts_fences": array("I", [sorted_crcs[first] for first in pages]).tobytes(),
        "counts_pages": array("I", [
            zlib.crc32(sizes[first : first + COUNTS_PAGE],
                       zlib.crc32(sorted_crcs[first : first + COUNTS_PAGE]))
            for first in pages
        ]).tobytes(),
        "term_fences": array("I", [block[0] for block in table[::TERM_BLOCK]]).tobytes(),
        "term_block_starts": array("Q", list(accumulate(map(len, blocks), initial=0))).tobytes(),
        "averages": [columns.averages[name] for name in FIELDS],
        "length_sums": [columns.length_sums[name] for name in FIELDS],
        "trusts": columns.trusts,
        "updated": _shared(columns.updated),
        "archived": columns.archived,
        "categories": _shared(columns.categories),
        "projects": _shared(columns.projects),
        "max_boost": columns.max_boost,
        "racy": [
            relative for relative, entry in entries.items()
            if entry.signature[1] >= started_ns - RACY_NS
        ],
        "problems": {
            relative: entry.problem for relative, entry in entries.items() if entry.problem
        },
    }
    id_blob, id_starts, id_order = packed_ids(columns.ids)
    columns_out = {
        "ids": id_blob, "id_starts": id_starts.tobytes(), "id_order": id_order.tobytes(),
        "lengths": array("I", export.lengths).tobytes(),
        "record_starts": array("Q", list(accumulate(map(len, records), initial=0))).tobytes(),
        "paths": "\0".join(entries).encode("utf-8", "surrogatepass"),
        "signatures": _column(
            [value for entry in entries.values() for value in entry.signature]
        ).tobytes(),
    }
    meta["column_crcs"] = {name: zlib.crc32(data) for name, data in columns_out.items()}
    meta_bytes = marshal.dumps(meta)
    sections = {
        "meta": meta_bytes, **columns_out, "records": b"".join(records),
        "terms": b"".join(blocks), "slots": b"".join(numbers), "weights": b"".join(weights),
        "counts": counts.tobytes(),
    }
    placed: dict[str, tuple[int, int]] = {}
    offset = 16 + 4096
    for name, data in sections.items():
        offset = (offset + 7) & ~7
        placed[name] = (offset, len(data))
        offset += len(data)
    header = dict(header, meta_crc=zlib.crc32(meta_bytes), sections=placed, size=offset)
    body = marshal.dumps(header)
    header_bytes = zlib.crc32(body).to_bytes(4, "little") + body
    with open(path, "wb") as handle:
        handle.write(MAGIC + len(header_bytes).to_bytes(8, "little") + header_bytes)
        for name, data in sections.items():
            handle.seek(placed[name][0])
            handle.write(data)
        handle.truncate(offset)


def _memories(store: MemoryStore) -> list[Memory]:
    return sorted(store.index.memories(), key=lambda memory: memory.id)


@pytest.mark.parametrize(("seed", "round_postings"), [(1, 1 << 30), (2, 1 << 30), (3, 1 << 30),
                                                     (1, 700), (2, 1), (3, 5_000)])
def test_the_streamed_build_writes_the_bytes_the_index_writer_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, round_postings: int
) -> None:
    """Byte for byte, whether the build places every posting at once or a range of terms
    at a time (`building.ROUND_POSTINGS`: 1 is a term a round)."""
    folder = tmp_path / "memory"
    make_folder(folder, 150, seed)
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: 1_800_000_000_000_000_000)
    store = MemoryStore(folder, state_dir=tmp_path / "read", watch=False)  # small: in memory
    memories = _memories(store)
    assert len(memories) > 140 and store.problems()
    assert max(count for memory in memories
               for count in Index()._counts(memory)[0][0].values()) > 65_535
    entries = store_module._Files(store).entries(cache_module.scan(store.folder))
    scoring, started_ns = Scoring(), 1_700_000_000_000_000_000
    header = {"version": FORMAT_VERSION, "fingerprint": fingerprint(scoring),
              "sample": (cache_module._CODE, cache_module.sample_terms()),
              "root": str(store.folder.root), "started_ns": started_ns,
              "written_ns": time.time_ns()}

    index = Index(scoring=scoring)
    index.add_many(memories)
    reference = tmp_path / "reference.idx"
    _reference_write(reference, index.export(), store.folder.root, entries, header)
    path = cache_module.cache_path(store.folder)

    # The index's writer, now section by section.
    assert cache_module.save(store.folder, index, entries, started_ns=started_ns)
    assert path.read_bytes() == reference.read_bytes()
    # The build straight from the memories, none of them held (in chunks of 16, spilled).
    path.unlink()
    monkeypatch.setattr(building, "_CHUNK", 16)
    monkeypatch.setattr(building, "ROUND_POSTINGS", round_postings)
    written = cache_module.build(store.folder, iter(memories), lambda: entries,
                                 scoring=scoring, started_ns=started_ns)
    assert written == len(memories)
    assert path.read_bytes() == reference.read_bytes()


def _numpy_builder() -> Builder:
    return dense_build.NumpyBuilder(pytest.importorskip("numpy"))


# The pure builder, and numpy's where numpy is installed (`search/dense_build.py`).
BUILDERS = [pytest.param(Builder, id="pure"), pytest.param(_numpy_builder, id="numpy")]


@pytest.mark.parametrize("make_builder", BUILDERS)
def test_a_builder_weighs_every_term_as_an_index_does(
    make_builder: Callable[[], Builder],
) -> None:
    folder = Path("/nowhere")
    memories = [
        Memory(id=f"m{n}", path=folder / f"m{n}.md", description=text, body=body)
        for n, (text, body) in enumerate([
            ("cats and dogs", "the cat Sesame 我的猫叫芝麻"), ("", ""), ("猫", "cats cats cats"),
            ("running tests", "pytest -q before every release; tests tests"),
        ])
    ]
    index = Index()
    index.add_many(memories)
    terms, numbers, weights, _ = index.export().postings
    builder = make_builder()
    for memory in memories:
        builder.add(memory)
    packed = builder.finish()
    assert list(packed.terms) == terms
    # The postings in the cache file's order of the terms: by CRC-32, ties by number.
    crcs = [zlib.crc32(term.encode("utf-8", "surrogatepass")) for term in terms]
    assert list(packed.order) == sorted(range(len(terms)), key=crcs.__getitem__)
    assert list(packed.sorted_crcs) == sorted(crcs)
    [whole] = packed.rounds  # a small build: every term's postings in one round
    assert (whole.low, whole.high) == (0, len(terms))
    for rank, at in enumerate(packed.order):
        term = terms[at]
        begin, end = packed.starts[rank], packed.starts[rank + 1]
        assert list(whole.slots[begin:end]) == list(numbers[at]), term
        assert whole.weights[begin:end].tobytes() == bytes(weights[at]), term
        assert packed.counts[at] == len(numbers[at]), term
    assert any(" " in term for term in terms)  # word pairs too


@pytest.mark.parametrize("text", [
    "support groups support group meetings", "cats cats cats and dogs", "deploy",
    "我的猫叫芝麻", "the flaky 测试 runs again 测试 flaky", "café au lait, naïve café",
    "log in to macOS 10.15 then login", "狗狗 dog dog 狗", "",
])
def test_a_build_pairs_the_words_word_pairs_pairs(text: str) -> None:
    """The build's pairs (as its words' numbers) are `word_pairs`'s, in the same order."""
    terms = tokenize(text)
    numbers = {term: 7 * at + 1 for at, term in enumerate(dict.fromkeys(terms))}
    texts = {number: term for term, number in numbers.items()}
    codes = building._pair_codes(terms, [numbers[term] for term in terms])
    assert [f"{texts[code >> 32]} {texts[code & 0xFFFFFFFF]}" for code in codes] == (
        word_pairs(terms))


@pytest.mark.parametrize("terms", [0, 1, 5, 3_000, 65_535, 65_536, 70_000])
def test_terms_are_ordered_by_crc_ties_in_term_order_below_and_above_the_bucket_sweep(
    terms: int,
) -> None:
    """Below 65,536 terms the order is one sort, above it the buckets' sweep: both the
    stable order by CRC-32 (ties, here many, keep their term order)."""
    rng = random.Random(terms)
    crcs = array("I", (rng.choice((rng.getrandbits(32), 7 << 16 | 3, 0xFFFFFFFF))
                       for _ in range(terms)))
    expected = sorted(range(terms), key=crcs.__getitem__)
    assert building.crc_order(crcs).tolist() == expected


def test_the_pair_table_numbers_pairs_as_a_dict_numbering_them_on_first_sight() -> None:
    """A build numbers its word pairs in a hash table of two arrays (`_PairNumbers`, no
    Python object a pair), sharing one numbering with the words: each pair gets the number
    a dict giving numbers on first sight would, through collisions and the table's growth,
    and the codes by number are what the file's texts are made from."""
    rng = random.Random(5)
    counts, codes = array("I"), array("Q")
    words = building._TermNumbers(counts, codes)
    pairs = building._PairNumbers(counts, codes)
    reference: dict[str | int, int] = {}
    pool = [rng.randrange(1 << 21) << 32 | rng.randrange(1, 1 << 21) for _ in range(6000)]
    pool += [7 << 32 | second for second in range(8, 3000)]  # one first word, many pairs
    pool += [first << 32 | 5 for first in range(6, 3000)]  # one second word
    for _ in range(900):
        word = f"w{rng.randrange(500)}"
        assert words[word] == reference.setdefault(word, len(reference))
        chosen = list(dict.fromkeys(rng.choices(pool, k=rng.randrange(1, 60))))
        assert pairs.numbers(chosen) == [
            reference.setdefault(code, len(reference)) for code in chosen]
    assert len(pairs) > 4096  # grown past its first table, at most 5/8 of it used
    assert len(counts) == len(reference) and set(counts) == {0}
    assert list(codes) == [0 if isinstance(key, str) else key for key in reference]
    every = [key for key in reference if isinstance(key, int)]
    assert pairs.numbers(every) == [reference[code] for code in every]  # all found again


@pytest.mark.parametrize("make_builder", BUILDERS)
@pytest.mark.parametrize("pair_first", [True, False])
def test_a_word_pair_and_a_word_of_one_crc_keep_the_order_they_were_first_seen_in(
    pair_first: bool, make_builder: Callable[[], Builder],
) -> None:
    """A build holds a word pair as its words' numbers and makes its CRC-32 from theirs:
    where a pair and a word share a CRC-32 (about 160 times among 100,000 memories' terms),
    the file still holds them in the order they were first met, as the index writer does."""
    pair, word = "mufafam jutenut", "rajojat"
    assert zlib.crc32(pair.encode()) == zlib.crc32(word.encode())
    texts = [f"{pair} again", f"{word} later"] if pair_first else [f"{word} first", pair]
    folder = Path("/nowhere")
    memories = [Memory(id=f"m{n}", path=folder / f"m{n}.md", description=text, body=text)
                for n, text in enumerate(texts)]
    index = Index()
    index.add_many(memories)
    terms = index.export().postings[0]
    builder = make_builder()
    for memory in memories:
        builder.add(memory)
    packed = builder.finish()
    assert list(packed.terms) == terms
    ranked = [terms[at] for at in packed.order]
    assert ranked.index(pair) - ranked.index(word) == (-1 if pair_first else 1)
    crcs = [zlib.crc32(term.encode("utf-8", "surrogatepass")) for term in terms]
    assert list(packed.order) == sorted(range(len(terms)), key=crcs.__getitem__)
    assert list(packed.sorted_crcs) == sorted(crcs)


def test_a_large_folder_built_straight_to_the_cache_answers_as_one_built_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "memory"
    make_folder(folder, 120, 7)
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: 1_800_000_000_000_000_000)
    in_memory = MemoryStore(folder, state_dir=tmp_path / "small", watch=False)
    assert in_memory.index._backing is None
    built = tmp_path / "built"
    monkeypatch.setattr(loading_module, "ADOPT_CACHE_FROM", 10)
    calls: list[int] = []
    real_build = cache_module.build

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(cache_module, "build", counted)
    streamed = MemoryStore(folder, state_dir=built, watch=False)
    assert calls == [1] and streamed.loaded is not None and streamed.loaded.how == "built"
    assert streamed.index._backing is not None and streamed.index._postings == {}
    for query in QUERIES:
        assert ([(hit.id, hit.score, hit.matched) for hit in streamed.search(query, limit=20)]
                == [(hit.id, hit.score, hit.matched)
                    for hit in in_memory.search(query, limit=20)]), query
    assert [m.to_dict() for m in streamed.list(archived=True)] == [
        m.to_dict() for m in in_memory.list(archived=True)]
    assert sorted(map(str, streamed.problems())) == sorted(map(str, in_memory.problems()))
    # The very file the small folder's store wrote from its index (the clock stands still).
    assert (cache_module.cache_path(streamed.folder).read_bytes()
            == cache_module.cache_path(in_memory.folder).read_bytes())


# A benchmark run end to end: with the other benchmark runs, in the scale tier.
@pytest.mark.scale
def test_the_build_memory_benchmark_measures_a_cold_build_and_a_rewrite(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    folder = tmp_path / "memory"
    make_folder(folder, 60, 5)
    before = sorted((path, path.read_bytes()) for path in folder.rglob("*.md"))
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parent.parent / "benchmarks" /
                             "build_memory.py"), str(folder), "--state", str(tmp_path / "state"),
         "--rewrite", "40", "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["cold"]["how"] == "built" and figures["rewrite"]["how"] == "cache"
    assert figures["cold"]["memories"] == figures["rewrite"]["memories"] > 50
    assert figures["rewrite"]["peak_rss_mb"] > 0 and figures["cold"]["cpu_s"] > 0
    # The folder measured is copied, never written.
    assert sorted((path, path.read_bytes()) for path in folder.rglob("*.md")) == before


def test_the_cache_file_does_not_depend_on_what_the_process_read_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frontmatter's fast path remembers what repeats from file to file; marshal flags
    an object held twice, so a key object held by whichever file came first made the cache's
    bytes depend on what the process had read before (the test above failed run alone)."""
    from sage_mem.memory import file_format

    folder = tmp_path / "memory"
    make_folder(folder, 40, 5)
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: 1_800_000_000_000_000_000)
    for remembered in (file_format._plains, file_format._values, file_format._keys):
        remembered.clear()
    first = MemoryStore(folder, state_dir=tmp_path / "first", watch=False)
    second = MemoryStore(folder, state_dir=tmp_path / "second", watch=False)  # read all before
    assert (cache_module.cache_path(first.folder).read_bytes()
            == cache_module.cache_path(second.folder).read_bytes())


ONE_CHARACTER_BUILD = """
import hashlib, sys
if {intern}:
    # Compiled constants made of name characters are interned: Python's one string "6"
    # (and "q", ...) is then held interned, as a process that imported numpy holds most.
    exec(compile("constants = ('6', '7', 'q', 'x', 'k')", "<interned>", "exec"))
from sage_mem import MemoryStore
from sage_mem.search import cache
store = MemoryStore({folder!r}, state_dir={state!r}, watch=False)
data = cache.cache_path(store.folder).read_bytes()
print(hashlib.sha256(data[16 + 4096 :]).hexdigest())  # past the header (it is dated)
"""


def test_the_cache_file_does_not_depend_on_which_one_character_strings_python_interned(
    tmp_path: Path,
) -> None:
    """marshal writes a string as interned or not as Python holds it, and Python holds one
    string of each character ("6", "q"): whether a process had it interned (numpy's
    modules intern most of them) changed the term blocks' bytes of a cache holding a
    one-character term. The cache's bytes are the same either way."""
    import subprocess
    import sys

    folder = tmp_path / "memory"
    for n in range(12):
        write(folder / f"note_{n}.md",
              f"---\ndescription: release {n % 10} of the q tool, x 7 and k\n---\nbody {n}\n")
    moment = time.time() - 3600  # nothing racy, in the files or their folder
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (moment, moment))
    digests = []
    for intern in (False, True):
        code = ONE_CHARACTER_BUILD.format(intern=intern, folder=str(folder),
                                          state=str(tmp_path / f"state-{intern}"))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        digests.append(done.stdout.split()[-1])
    assert digests[0] == digests[1]
