"""Retrieval quality on the LoCoMo development set (../shared/data/locomo-dev).

    python benchmarks/retrieval.py [--data DIR] [--json] [--per-category]

Builds a MemoryStore over the whole `memories/` folder (all conversations as
one store, as the held-out evaluation does), runs every question in
`queries.jsonl` through `MemoryStore.search`, and prints recall@1/5/10, hit@5
and MRR@10 overall and per question category, with the median and p95 query
latency and the index build time. The data is CC BY-NC 4.0 and is read in
place, never copied into the project.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sage_mem import MemoryStore  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
BASELINES = [
    ("BM25 over description + body (bm25s, stemmed)", 0.484, 0.704, 0.767, 0.772, 0.650),
    ("BM25 over description only", 0.418, 0.604, 0.662, 0.688, 0.566),
    ("all-MiniLM-L6-v2 cosine over description + body", 0.437, 0.675, 0.754, 0.753, 0.623),
    ("original JS sage-mem scoring", 0.284, 0.449, 0.498, 0.517, 0.412),
]


def load_queries(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def evaluate(store: MemoryStore, queries: list[dict]) -> dict:
    """Metrics overall and per category, and per-query latencies in microseconds."""
    rows = []
    latencies = []
    for query in queries:
        started = time.perf_counter()
        hits = store.search(query["question"], limit=10)
        latencies.append((time.perf_counter() - started) * 1e6)
        ranked = [hit.id for hit in hits]
        relevant = set(query["relevant"])
        first = next((i for i, memory_id in enumerate(ranked) if memory_id in relevant), None)
        rows.append({
            "category": query.get("category_name", str(query.get("category"))),
            "r1": len(relevant & set(ranked[:1])) / len(relevant),
            "r5": len(relevant & set(ranked[:5])) / len(relevant),
            "r10": len(relevant & set(ranked[:10])) / len(relevant),
            "hit5": 1.0 if first is not None and first < 5 else 0.0,
            "mrr10": 1.0 / (first + 1) if first is not None else 0.0,
        })
    return {"rows": rows, "latencies": latencies}


def summarize(rows: list[dict]) -> dict[str, float]:
    keys = ("r1", "r5", "r10", "hit5", "mrr10")
    return {key: sum(row[key] for row in rows) / len(rows) for key in keys} | {"n": len(rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the locomo-dev folder")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--per-category", action="store_true", help="also print per-category rows")
    args = parser.parse_args(argv)
    memories = args.data / "memories"
    if not memories.is_dir():
        print(f"error: {memories} not found (pass --data)", file=sys.stderr)
        return 1
    queries = load_queries(args.data / "queries.jsonl")
    with tempfile.TemporaryDirectory() as state:
        started = time.perf_counter()
        store = MemoryStore(memories, state_dir=Path(state) / "state")
        build_ms = (time.perf_counter() - started) * 1000
        result = evaluate(store, queries)
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
    if args.json:
        print(json.dumps({"overall": overall, "per_category": per_category, "timing": timing}, indent=2))
        return 0
    print(f"{timing['memories']} memories, {timing['queries']} queries; index built in "
          f"{build_ms:.0f} ms; query latency median {timing['median_us']:.0f} µs, "
          f"p95 {timing['p95_us']:.0f} µs\n")
    print("| retriever | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    o = overall
    print(f"| **sage-mem** | **{o['r1']:.3f}** | **{o['r5']:.3f}** | **{o['r10']:.3f}** | "
          f"**{o['hit5']:.3f}** | **{o['mrr10']:.3f}** |")
    for name, *figures in BASELINES:
        print(f"| {name} | " + " | ".join(f"{f:.3f}" for f in figures) + " |")
    if args.per_category:
        print("\n| category | n | R@1 | R@5 | R@10 | hit@5 | MRR@10 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, s in per_category.items():
            print(f"| {name} | {s['n']} | {s['r1']:.3f} | {s['r5']:.3f} | {s['r10']:.3f} | "
                  f"{s['hit5']:.3f} | {s['mrr10']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
