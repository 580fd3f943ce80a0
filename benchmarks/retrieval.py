"""Retrieval quality on the LoCoMo development set (../shared/data/locomo-dev).

    python benchmarks/retrieval.py [--data DIR] [--json] [--per-category]
                                   [--convs 0,1,2] [--split] [--grid]

Builds a MemoryStore over the whole `memories/` folder (all conversations as
one store, as the held-out evaluation does), runs every question in
`queries.jsonl` through `MemoryStore.search`, and prints recall@1/5/10, hit@5
and MRR@10 overall and per question category, with the median and p95 query
latency and the index build time. The data is CC BY-NC 4.0 and is read in
place, never copied into the project.

`--convs` keeps only the questions of those conversations (the store still
holds every memory). `--split` prints the tuning half (conv0-2) beside the
check half (conv3-4), the overfitting check. `--grid` scores a coarse grid of
the ranking constants (k1, description weight, pair weight) on both halves and
says how flat the optimum is. Every run also scores the small bilingual
folder of tests/test_search.py and prints one line per language.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sage_mem import MemoryStore  # noqa: E402
from sage_mem.search.index import FIELD_WEIGHTS, K1, PAIR_WEIGHT, Index, Scoring  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
BILINGUAL = ROOT / "tests" / "test_search.py"
TUNE_CONVS = frozenset({0, 1, 2})
CHECK_CONVS = frozenset({3, 4})
BASELINES = [
    ("BM25 over description + body (bm25s, stemmed)", 0.484, 0.704, 0.767, 0.772, 0.650),
    ("BM25 over description only", 0.418, 0.604, 0.662, 0.688, 0.566),
    ("all-MiniLM-L6-v2 cosine over description + body", 0.437, 0.675, 0.754, 0.753, 0.623),
    ("original JS sage-mem scoring", 0.284, 0.449, 0.498, 0.517, 0.412),
]
GRID = {
    "k1": (0.6, 0.9, 1.2, 1.6),
    "description": (1.0, 2.0, 3.0),
    "pair": (0.0, 0.15, 0.3, 0.45),
}
KEYS = ("r1", "r5", "r10", "hit5", "mrr10")

Search = Callable[[str], list[str]]


def load_queries(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def conversation(query: dict) -> int:
    """The conversation number of a query id such as `conv3/q17`."""
    return int(query["id"].split("/", 1)[0].removeprefix("conv"))


def evaluate(search: Search, queries: list[dict]) -> dict:
    """Metrics rows per query, and per-query latencies in microseconds."""
    rows = []
    latencies = []
    for query in queries:
        started = time.perf_counter()
        ranked = search(query["question"])
        latencies.append((time.perf_counter() - started) * 1e6)
        relevant = set(query["relevant"])
        first = next((i for i, memory_id in enumerate(ranked) if memory_id in relevant), None)
        rows.append({
            "category": query.get("category_name", str(query.get("category"))),
            "conv": conversation(query),
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


def store_search(store: MemoryStore) -> Search:
    return lambda question: [hit.id for hit in store.search(question, limit=10)]


def index_search(index: Index) -> Search:
    return lambda question: [hit.id for hit in index.search(question, limit=10)]


def halves(search: Search, queries: list[dict]) -> dict[str, dict[str, float]]:
    rows = evaluate(search, queries)["rows"]
    return {
        "tune conv0-2": summarize([r for r in rows if r["conv"] in TUNE_CONVS]),
        "check conv3-4": summarize([r for r in rows if r["conv"] in CHECK_CONVS]),
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the locomo-dev folder")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--per-category", action="store_true", help="also print per-category rows")
    parser.add_argument("--convs", type=parse_convs, help="only these conversations, e.g. 0,1,2")
    parser.add_argument("--split", action="store_true", help="tuning half vs check half")
    parser.add_argument("--grid", action="store_true", help="score a coarse grid of constants")
    args = parser.parse_args(argv)
    memories = args.data / "memories"
    if not memories.is_dir():
        print(f"error: {memories} not found (pass --data)", file=sys.stderr)
        return 1
    queries = load_queries(args.data / "queries.jsonl")
    if args.convs is not None:
        queries = [query for query in queries if conversation(query) in args.convs]
    with tempfile.TemporaryDirectory() as state:
        started = time.perf_counter()
        store = MemoryStore(memories, state_dir=Path(state) / "state", watch=False)
        build_ms = (time.perf_counter() - started) * 1000
        result = evaluate(store_search(store), queries)
        split = halves(store_search(store), queries) if args.split else None
        grid = run_grid(store, queries) if args.grid else None
    overall = summarize(result["rows"])
    categories = sorted({row["category"] for row in result["rows"]})
    per_category = {
        name: summarize([row for row in result["rows"] if row["category"] == name])
        for name in categories
    }
    latencies = sorted(result["latencies"])
    timing = {
        "median_us": statistics.median(latencies),
        "p95_us": latencies[int(0.95 * (len(latencies) - 1))],
        "build_ms": build_ms,
        "memories": len(store.index),
        "queries": len(queries),
    }
    bilingual = bilingual_figures()
    if args.json:
        print(json.dumps({
            "overall": overall, "per_category": per_category, "timing": timing,
            "split": split, "grid": grid, "bilingual": bilingual,
        }, indent=2))
        return 0
    print(f"{timing['memories']} memories, {timing['queries']} queries; index built in "
          f"{build_ms:.0f} ms; query latency median {timing['median_us']:.0f} µs, "
          f"p95 {timing['p95_us']:.0f} µs\n")
    print("| retriever | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    o = overall
    print(f"| **sage-mem** | **{o['r1']:.3f}** | **{o['r5']:.3f}** | **{o['r10']:.3f}** | "
          f"**{o['hit5']:.3f}** | **{o['mrr10']:.3f}** |")
    if args.convs is None:
        for name, *figures in BASELINES:
            print(f"| {name} | " + " | ".join(f"{f:.3f}" for f in figures) + " |")
    if args.per_category:
        print("\n| category | n | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, s in per_category.items():
            print(f"| {name} | {s['n']} | {s['r1']:.3f} | {s['r5']:.3f} | {s['r10']:.3f} | "
                  f"{s['hit5']:.3f} | {s['mrr10']:.3f} |")
    if split is not None:
        print("\n| half | n | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, s in split.items():
            print(f"| {name} | {s['n']} | {s['r1']:.3f} | {s['r5']:.3f} | {s['r10']:.3f} | "
                  f"{s['hit5']:.3f} | {s['mrr10']:.3f} |")
    if grid is not None:
        print_grid(grid["points"])
    if bilingual is not None:
        print("\n| bilingual folder | n | hit@1 | hit@3 | MRR@10 |")
        print("| --- | --- | --- | --- | --- |")
        for language, s in bilingual.items():
            print(f"| {language} | {s['n']} | {s['hit1']:.3f} | {s['hit3']:.3f} | "
                  f"{s['mrr10']:.3f} |")
    return 0


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
