"""Other ways to fuse the lexical and semantic sides, over the extra's cached vectors.

    python benchmarks/fusion_variants.py [--sets locomo-dev,dulemon-utterance]
                                         [--variants NAME,...] [--cache DIR]
                                         [--feedback] [--grid]

Each question's fused-search inputs are read once through the stores
`benchmarks/retrieval.py` builds (`semantic_store`: the extra's vectors and
latent terms made by `MemoryStore.embed`, kept in `--cache`; a set whose
vectors are not cached there is skipped, never embedded here): the lexical
list searched once and refined (`Index.search(refine=True)`, as `sage-mem
search` ranks), 150 deep; every memory's semantic score and latent score; the
semantic nearest; the date windows' factors; whether the query writes a figure.
Then each variant ranks those inputs without another pass of the model, and
the row "shipped" goes through `fusion.fuse` itself (the variants' own code
reproduces it at the shipped constants: `tests/test_fusion_variants_benchmark.py`).

Printed per variant, R@5 / MRR@10: locomo-dev's questions (all, the tuning
half of conversations 0-2 where a variant is chosen, the check half 3-4, the
temporal slice), its relative rewrites (English and Chinese phrases, tuning |
check: `retrieval.relative_rewrites`), and every other set.

The variants: the lexical weight; the refined lexical side; reciprocal rank
fusion; the candidates each side gives; the latent side's weight; the
semantic side scaled from a share of the folder's cosines (not from the
candidates' least); the lexical side scaled over every candidate's own
score; the date windows added to the fused score instead of multiplying it;
pseudo-relevance feedback read from the fused top two instead of the lexical
top two (`--feedback`: one more lexical search a question at capture);
and a linear fusion learned on locomo-dev's tuning half (pairwise logistic
loss over each side's scaled score: the three sides' weights fitted, nothing
else), then applied to every set as it is.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import retrieval  # noqa: E402

from sage_mem.memory.markdown import mask_code  # noqa: E402
from sage_mem.search import fusion  # noqa: E402
from sage_mem.search import query as query_path  # noqa: E402
from sage_mem.search.scoring import DATE_BOOST  # noqa: E402
from sage_mem.search.vectors import PASSAGE_CHARS, read_in_part  # noqa: E402

DEEP = 150  # the lexical list captured: deep enough for every depth compared


@dataclass
class Asked:
    """One question's fused-search inputs, captured once."""

    question: str
    relevant: list[str]
    kind: str  # "q" (a dev question), "rw-en" / "rw-zh" (a relative rewrite)
    conv: int | None
    temporal: bool
    figure: bool
    lexical: list[tuple[str, float]]
    refined: list[tuple[str, float]]
    cosines: dict[str, float]
    nearest: list[str]
    latent: dict[str, float] | None
    dates: dict[str, float]
    partial: set[str] = field(default_factory=set)
    fed: list[tuple[str, float]] = field(default_factory=list)


# Min-max over a side's scores, the fusion's own (the variants change what is scaled, not how).
scaled = fusion._scaled


@dataclass(frozen=True)
class Rule:
    """A fusion variant's constants and choices (the defaults are the shipped fusion)."""

    weight: float = fusion.LEXICAL_WEIGHT
    figure_weight: float = fusion.FIGURE_LEXICAL_WEIGHT
    lexical_depth: int = fusion.DEPTH
    semantic_depth: int = fusion.DEPTH
    latent_weight: float = fusion.LATENT_WEIGHT
    lexical_list: str = "lexical"  # or "refined", "fed"
    rrf: int = 0  # k of reciprocal rank fusion; 0: min-max score fusion
    semantic_low: float | None = None  # the share of the folder's cosines the side starts at
    lexical_over_all: bool = False  # every candidate's own lexical score, not 0 past the top
    date_added: float = 0.0  # the windows as an added side of this weight, not a factor
    # Learned weights of the lexical, semantic and latent sides (`learned`).
    sides: tuple[float, float, float] | None = None


def side_scores(asked: Asked, rule: Rule) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The candidates and each side's scaled score (the date windows taken out)."""
    whole = getattr(asked, rule.lexical_list)
    lexical = whole[:rule.lexical_depth]
    complete = len(whole) < rule.lexical_depth
    nearest = asked.nearest[:rule.semantic_depth]
    candidates = list(dict.fromkeys([key for key, _ in lexical] + nearest))
    dates = asked.dates
    lexical_scores = {key: score / dates.get(key, 1.0) for key, score in lexical}
    if rule.lexical_over_all:
        every = {key: score / dates.get(key, 1.0) for key, score in whole}
        lexical_scores = {key: every.get(key, 0.0) for key in candidates}
    cosines = {key: asked.cosines[key] for key in candidates if key in asked.cosines}
    latent = ({key: asked.latent[key] for key in candidates if key in asked.latent}
              if asked.latent else {})
    if rule.rrf:
        out = {}
        for name, values in (("lex", lexical_scores), ("sem", cosines), ("lat", latent)):
            order = sorted(values, key=lambda key: -values[key])
            out[name] = {key: 1.0 / (rule.rrf + rank + 1) for rank, key in enumerate(order)}
        return candidates, out
    semantic = scaled(cosines)
    if rule.semantic_low is not None and cosines:
        folder = sorted(asked.cosines.values())
        low = folder[int(rule.semantic_low * (len(folder) - 1))]
        high = max(cosines.values())
        semantic = {key: max(0.0, (value - low) / (high - low)) if high > low else 1.0
                    for key, value in cosines.items()}
    return candidates, {"lex": scaled(lexical_scores, from_zero=complete),
                        "sem": semantic, "lat": scaled(latent) if latent else {}}


def ranked(asked: Asked, rule: Rule) -> list[str]:
    """The variant's ranking of `asked`'s candidates, best first."""
    candidates, side = side_scores(asked, rule)
    weight = rule.figure_weight if asked.figure else rule.weight
    fused = {}
    for key in candidates:
        lexical = side["lex"].get(key, 0.0)
        semantic = side["sem"].get(key, lexical)
        if key in asked.partial and lexical > semantic:
            semantic = lexical
        if rule.sides is not None:
            a, b, c = rule.sides
            fused[key] = a * lexical + b * semantic + c * side["lat"].get(key, 0.0)
            continue
        fused[key] = weight * lexical + (1.0 - weight) * semantic
        if side["lat"]:
            share = rule.latent_weight
            fused[key] = (1.0 - share) * fused[key] + share * side["lat"].get(key, fused[key])
    if rule.sides is not None:  # a learned side may weigh below 0: every candidate above 0
        low = min(fused.values(), default=0.0)
        fused = {key: value - low + 1e-9 for key, value in fused.items()}
    for key in candidates:
        factor = asked.dates.get(key, 1.0)
        if rule.date_added:  # in units of the shipped factor's boost (`scoring.DATE_BOOST`)
            fused[key] += rule.date_added * (factor - 1.0) / DATE_BOOST
        else:
            fused[key] *= factor
    return sorted((key for key in candidates if fused[key] > 0.0),
                  key=lambda key: (-fused[key], key))


def shipped(asked: Asked) -> list[str]:
    """`fusion.fuse` itself over the captured inputs, at the shipped constants."""
    lexical = asked.lexical[:fusion.DEPTH]
    nearest = asked.nearest[:fusion.DEPTH]
    candidates = list(dict.fromkeys([key for key, _ in lexical] + nearest))
    latent = ({key: asked.latent[key] for key in candidates if key in asked.latent}
              if asked.latent else None)
    return [key for key, _ in fusion.fuse(
        lexical, {key: asked.cosines[key] for key in candidates if key in asked.cosines},
        nearest, weight=fusion.FIGURE_LEXICAL_WEIGHT if asked.figure else fusion.LEXICAL_WEIGHT,
        complete=len(asked.lexical) < fusion.DEPTH, latent=latent,
        dates={key: asked.dates[key] for key in candidates if key in asked.dates},
        partial={key for key in candidates if key in asked.partial})]


def learned(tuning: Sequence[Asked], steps: int = 2000) -> tuple[float, float, float]:
    """The three sides' weights fitted on `tuning` (pairwise logistic loss: each relevant
    candidate against each other one), summing to 1."""
    import numpy as np

    pairs = []
    for asked in tuning:
        candidates, side = side_scores(asked, Rule())
        rows = {key: [side["lex"].get(key, 0.0), side["sem"].get(key, side["lex"].get(key, 0.0)),
                      side["lat"].get(key, 0.0)] for key in candidates}
        relevant = [rows[key] for key in candidates if key in asked.relevant]
        others = [rows[key] for key in candidates if key not in asked.relevant]
        pairs += [[p - n for p, n in zip(good, bad, strict=True)]
                  for good in relevant for bad in others]
    diffs = np.array(pairs)
    weights = np.full(3, 1 / 3)
    for _ in range(steps):
        margin = np.clip(diffs @ weights, -30, 30)
        weights += 5.0 * (diffs / (1.0 + np.exp(margin))[:, None]).mean(axis=0)
    weights /= np.abs(weights).sum()
    return float(weights[0]), float(weights[1]), float(weights[2])


def capture(name: str, folder: Path, cache: Path, feedback: bool) -> list[Asked]:
    """Every question's (and rewrite's) fused-search inputs on one set."""
    queries = retrieval.load_queries(folder / "queries.jsonl")
    asked = [dict(query, kind="q") for query in queries]
    if name.startswith("locomo-dev"):
        for language in retrieval.REWRITES:
            asked += [dict(query, kind=f"rw-{language}")
                      for query in retrieval.relative_rewrites(queries, language)]
    out = []
    with tempfile.TemporaryDirectory() as state:
        store = retrieval.semantic_store(folder / "memories", Path(state), cache, name)
        if store is None:
            raise SystemExit("the semantic extra is not installed (pip install '.[semantic]')")
        index, semantic = store.index, store._semantic_signal()
        memories = index.memories()
        ids = [memory.id for memory in memories]
        partial = {memory.id for memory in memories
                   if read_in_part(memory.description, memory.body)}
        for query in asked:
            text, now = query["question"], query.get("now")
            scored = semantic.scored(semantic.query_vector(text))
            cosines = scored.of(memories)
            latent_query = semantic.latent_query(text)
            item = Asked(
                question=text, relevant=query["relevant"], kind=query["kind"],
                conv=retrieval.conversation(query), temporal=retrieval.is_temporal(query),
                figure=fusion.writes_figure(mask_code(text[:PASSAGE_CHARS])),
                lexical=[(hit.id, hit.score) for hit in index.search(text, limit=DEEP, now=now)],
                refined=[(hit.id, hit.score)
                         for hit in index.search(text, limit=DEEP, now=now, refine=True)],
                cosines=cosines,
                nearest=[key for key, _ in scored.nearest(4 * DEEP) if key in cosines][:DEEP],
                latent=(semantic.latent_scores(memories, latent_query)
                        if latent_query is not None else None),
                dates={key: value for key, value in index.date_factors(ids, text, now).items()
                       if value != 1.0},
                partial=partial)
            if feedback:
                item.fed = fed_from(index, item, now)
            out.append(item)
    return out


def fed_from(index: Any, asked: Asked, now: Any) -> list[tuple[str, float]]:
    """The refined lexical list with its feedback read from the shipped fused top two (each
    weighing as the lexical top does) instead of the lexical top two."""
    fused = shipped(asked)[:query_path.FEEDBACK_MEMORIES]
    original = query_path.QueryPath._feedback

    def from_fused(self: Any, best: list[tuple[int, float]], *args: Any) -> Any:
        numbers = [self._number[key] for key in fused]
        head = [(number, best[0][1]) for number in numbers]
        rest = [pair for pair in best if pair[0] not in set(numbers)]
        return original(self, head + rest, *args)

    query_path.QueryPath._feedback = from_fused  # type: ignore[method-assign]
    try:
        return [(hit.id, hit.score)
                for hit in index.search(asked.question, limit=DEEP, now=now, refine=True)]
    finally:
        query_path.QueryPath._feedback = original  # type: ignore[method-assign]


def figures(asked: Sequence[Asked], ranking: Sequence[list[str]]) -> tuple[float, float]:
    """R@5 and MRR@10."""
    recall = reciprocal = 0.0
    for item, order in zip(asked, ranking, strict=True):
        relevant = set(item.relevant)
        recall += len(relevant & set(order[:5])) / len(relevant)
        first = next((i for i, key in enumerate(order[:10]) if key in relevant), None)
        reciprocal += 0.0 if first is None else 1.0 / (first + 1)
    return recall / max(1, len(asked)), reciprocal / max(1, len(asked))


GROUPS: dict[str, Callable[[Asked], bool]] = {
    "all": lambda a: a.kind == "q",
    "tuning": lambda a: a.kind == "q" and a.conv in retrieval.TUNE_CONVS,
    "check": lambda a: a.kind == "q" and a.conv in retrieval.CHECK_CONVS,
    "temporal": lambda a: a.kind == "q" and a.temporal,
    "rewrites en, tuning": lambda a: a.kind == "rw-en" and a.conv in retrieval.TUNE_CONVS,
    "rewrites en, check": lambda a: a.kind == "rw-en" and a.conv in retrieval.CHECK_CONVS,
    "rewrites zh, tuning": lambda a: a.kind == "rw-zh" and a.conv in retrieval.TUNE_CONVS,
    "rewrites zh, check": lambda a: a.kind == "rw-zh" and a.conv in retrieval.CHECK_CONVS,
}

VARIANTS: dict[str, Rule] = {
    "lexical weight 0.35": Rule(weight=0.35),
    "lexical weight 0.45": Rule(weight=0.45),
    "refined lexical side": Rule(lexical_list="refined"),
    "refined lexical side, weight 0.35": Rule(lexical_list="refined", weight=0.35),
    "refined lexical side, weight 0.45": Rule(lexical_list="refined", weight=0.45),
    "refined lexical side, latent 0.15": Rule(lexical_list="refined", latent_weight=0.15),
    "feedback from the fused top two": Rule(lexical_list="fed"),
    "reciprocal rank fusion, k 10": Rule(rrf=10),
    "reciprocal rank fusion, k 60": Rule(rrf=60),
    "depth 30": Rule(lexical_depth=30, semantic_depth=30),
    "depth 100": Rule(lexical_depth=100, semantic_depth=100),
    "depth lexical 50, semantic 100": Rule(semantic_depth=100),
    "latent weight 0.05": Rule(latent_weight=0.05),
    "latent weight 0.15": Rule(latent_weight=0.15),
    "latent weight 0.2": Rule(latent_weight=0.2),
    "semantic side from the folder's median cosine": Rule(semantic_low=0.5),
    "semantic side from the folder's 20th percentile": Rule(semantic_low=0.2),
    "lexical side over every candidate's own score": Rule(lexical_over_all=True),
    "date windows added, 0.3": Rule(date_added=0.3),
    "date windows added, 0.5": Rule(date_added=0.5),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="locomo-dev,dulemon-utterance")
    parser.add_argument("--variants", default=None, help="only these, comma-separated")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sage-mem-bench")
    parser.add_argument("--feedback", action="store_true",
                        help="also the refined side with feedback from the fused top two")
    parser.add_argument("--grid", action="store_true",
                        help="also the lexical weight 0.35-0.45 by the latent weight 0.05-0.15, "
                             "the lexical side searched once and refined")
    args = parser.parse_args(argv)
    root = retrieval.find_data_root()
    folders = {"locomo-dev": root / "locomo-dev",
               "cmrc-sent": root / "zh-dev" / "cmrc-sent",
               "dulemon-utterance": root / "zh-dev" / "dulemon-utterance"}
    from sage_mem.search import embedder

    model = str(embedder.available()).replace("/", "_")
    chosen = VARIANTS if args.variants is None else {
        name: VARIANTS[name] for name in args.variants.split(",")}
    if args.grid:
        chosen = {**chosen, **{
            f"grid: {side}, weight {weight}, latent {latent}": Rule(
                lexical_list=side, weight=weight, latent_weight=latent)
            for side in ("lexical", "refined") for weight in (0.35, 0.4, 0.45)
            for latent in (0.05, 0.1, 0.15)}}
    weights: tuple[float, float, float] | None = None
    for name in args.sets.split(","):
        if not (args.cache / f"semantic-{name}-{model}.vec").is_file():
            print(f"{name}: no cached vectors in {args.cache} (benchmarks/retrieval.py makes "
                  "them); skipped")
            continue
        asked = capture(name, folders[name], args.cache, args.feedback)
        rules: dict[str, Rule | None] = {"shipped": None, **chosen}
        if not args.feedback:
            rules.pop("feedback from the fused top two", None)
        tuning = [a for a in asked if GROUPS["tuning"](a)]
        if tuning:  # fitted on locomo-dev's tuning half, then used as it is on the next sets
            weights = learned(tuning)
        if weights is not None:
            rules["learned on the tuning half " + ", ".join(f"{w:.2f}" for w in weights)] = (
                Rule(sides=weights))
        print(f"\n{name}: R@5 / MRR@10")
        groups = {group: test for group, test in GROUPS.items() if any(map(test, asked))}
        for label, rule in rules.items():
            order = [shipped(a) if rule is None else ranked(a, rule) for a in asked]
            cells = []
            for group, test in groups.items():
                kept = [(a, o) for a, o in zip(asked, order, strict=True) if test(a)]
                recall, mrr = figures([a for a, _ in kept], [o for _, o in kept])
                cells.append(f"{group} {recall:.3f} / {mrr:.3f}")
            print(f"  {label}: " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
