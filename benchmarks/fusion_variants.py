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
semantic nearest; the date windows' factors; whether the query writes a figure;
each piece's cosine with each of the query's forms (`Semantic.query_vector`'s:
the query and its core). Then each variant ranks those inputs without another
pass of the model, and the row "shipped" goes through `fusion.fuse` itself (the
variants' own code reproduces it at the shipped constants:
`tests/test_fusion_variants_benchmark.py`). The lexical list is the fused search's
own (`spell`, as `refine` asks it), and every row's top 10 is ordered by the spans
of time or dates a question asking how long or when wants (`Index.span_order`), so
the row "shipped" is the store's search with the extra (`MemoryStore.search(refine=True)`).

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
a memory's pieces pooled otherwise (the share of their mean, the best alone, a soft
maximum); the query's forms weighed otherwise (the query alone, its core alone); a
hub's semantic score lowered (`hubness`: CSLS, each memory's mean score against the
descriptions of its k nearest memories, taken off β times); and a linear fusion
learned on locomo-dev's tuning half (pairwise logistic loss over each side's
scaled score: the three sides' weights fitted, nothing else), then applied to
every set as it is. A variant's gain on each half is given with its paired
bootstrap interval (5,000 draws, 95 %) against the row "shipped".
"""

from __future__ import annotations

import argparse
import re
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
    # Each piece's cosine with each of the query's forms (pieces x forms), and those forms'
    # vectors: what a variant pooling the pieces or weighing the forms otherwise reads.
    piece_cosines: Any = None
    forms: Any = None
    half: str | None = None  # "tuning" or "check" (`half_of`)


def half_of(query: dict) -> str | None:
    """The half a question is in: locomo-dev's conversations 0-2 | 3-4, dulemon-utterance's
    chat sessions 0-4 | 5-9 (`retrieval.session_halves`), cmrc-sent's articles even | odd
    (the fourteenth pass's split: n of `DEV_<n>_QUERY_<k>`)."""
    conv = retrieval.conversation(query)
    if conv is not None:
        return "tuning" if conv in retrieval.TUNE_CONVS else "check"
    found = re.fullmatch(r"s(\d+)/t\d+", query["id"]) or re.fullmatch(
        r"DEV_(\d+)_QUERY_\d+", query["id"])
    if found is None:
        return None
    number = int(found.group(1))
    if query["id"].startswith("s"):
        return "tuning" if number < 5 else "check"
    return "tuning" if number % 2 == 0 else "check"


@dataclass
class Pieces:
    """A set's pieces as the semantic side stores them: which memory each run belongs to."""

    ids: list[str]
    starts: Any
    counts: Any
    current: set[str]
    hubs: dict[int, Any] = field(default_factory=dict)  # k: each memory's CSLS term
    matrix: Any = None

    def hub(self, k: int) -> Any:
        """Each memory's mean score (best piece + mean of pieces) against the descriptions
        of its k nearest other memories, centred (CSLS's r term, the folder as the queries)."""
        import numpy as np

        if k not in self.hubs:
            first = self.matrix[self.starts]
            cross = self.matrix @ first.T
            scores = (np.maximum.reduceat(cross, self.starts, axis=0)
                      + np.add.reduceat(cross, self.starts, axis=0) / self.counts[:, None])
            np.fill_diagonal(scores, -np.inf)
            nearest = -np.sort(-scores, axis=1)[:, :min(k, len(self.ids) - 1)]
            term = nearest.mean(axis=1)
            self.hubs[k] = term - term.mean()
        return self.hubs[k]


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
    # The semantic side scored again from the pieces (None: as shipped, `Semantic.scored`).
    piece_mean: float | None = None  # best + this share of the mean (shipped: PIECE_MEAN)
    soft: float = 0.0  # a soft maximum of the pieces at this temperature, not best + mean
    core_weight: float | None = None  # the core form's weight against the query's (shipped 1)
    hub_k: int = 0  # CSLS: each memory's mean score against its k nearest memories ...
    hub_beta: float = 0.0  # ... taken off this many times

    def rescored(self) -> bool:
        return (self.piece_mean is not None or self.soft > 0 or self.core_weight is not None
                or self.hub_k > 0)


def semantic_scores(asked: Asked, rule: Rule, pieces: Pieces) -> tuple[dict[str, float],
                                                                        list[str]]:
    """The semantic side scored again under `rule` from the captured piece cosines: each
    current memory's score and the nearest (best first)."""
    import numpy as np

    from sage_mem.search.semantic import PIECE_MEAN

    cosines, forms = asked.piece_cosines, asked.forms
    weights = np.ones(len(forms), dtype=np.float32)
    if rule.core_weight is not None and len(forms) > 1:
        weights[1] = rule.core_weight
    vector = (weights[:, None] * forms).sum(axis=0)
    cosine = (cosines * weights).sum(axis=1) / float(np.linalg.norm(vector))
    starts, counts = pieces.starts, pieces.counts
    if rule.soft > 0:
        top = float(cosine.max())
        score = top + rule.soft * np.log(
            np.add.reduceat(np.exp((cosine - top) / rule.soft), starts) / counts)
    else:
        share = PIECE_MEAN if rule.piece_mean is None else rule.piece_mean
        score = (np.maximum.reduceat(cosine, starts)
                 + share * np.add.reduceat(cosine, starts) / counts)
    if rule.hub_k:
        score = score - rule.hub_beta * pieces.hub(rule.hub_k)
    values = {key: float(score[row]) for row, key in enumerate(pieces.ids)
              if key in pieces.current}
    return values, sorted(values, key=lambda key: -values[key])[:DEEP]


def side_scores(asked: Asked, rule: Rule, pieces: Pieces | None = None,
                ) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The candidates and each side's scaled score (the date windows taken out)."""
    whole = getattr(asked, rule.lexical_list)
    lexical = whole[:rule.lexical_depth]
    complete = len(whole) < rule.lexical_depth
    all_cosines, all_nearest = asked.cosines, asked.nearest
    if rule.rescored():
        if pieces is None:
            raise ValueError("a variant scoring the pieces again needs the set's pieces")
        all_cosines, all_nearest = semantic_scores(asked, rule, pieces)
    nearest = all_nearest[:rule.semantic_depth]
    candidates = list(dict.fromkeys([key for key, _ in lexical] + nearest))
    dates = asked.dates
    lexical_scores = {key: score / dates.get(key, 1.0) for key, score in lexical}
    if rule.lexical_over_all:
        every = {key: score / dates.get(key, 1.0) for key, score in whole}
        lexical_scores = {key: every.get(key, 0.0) for key in candidates}
    cosines = {key: all_cosines[key] for key in candidates if key in all_cosines}
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
        folder = sorted(all_cosines.values())
        low = folder[int(rule.semantic_low * (len(folder) - 1))]
        high = max(cosines.values())
        semantic = {key: max(0.0, (value - low) / (high - low)) if high > low else 1.0
                    for key, value in cosines.items()}
    return candidates, {"lex": scaled(lexical_scores, from_zero=complete),
                        "sem": semantic, "lat": scaled(latent) if latent else {}}


def ranked(asked: Asked, rule: Rule, pieces: Pieces | None = None) -> list[str]:
    """The variant's ranking of `asked`'s candidates, best first."""
    return [key for key, _ in scored(asked, rule, pieces)]


def scored(asked: Asked, rule: Rule, pieces: Pieces | None = None) -> list[tuple[str, float]]:
    """The variant's ranking of `asked`'s candidates, best first, with its fused scores."""
    candidates, side = side_scores(asked, rule, pieces)
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
    # In the shipped fusion's units (`fusion.fuse`: squared, times the best lexical score),
    # which `Index.span_order` adds its share of the top score to.
    unit = max((score / asked.dates.get(key, 1.0)
                for key, score in getattr(asked, rule.lexical_list)[:rule.lexical_depth]),
               default=0.0)
    return [(key, fused[key] ** fusion.SPREAD * unit)
            for key in sorted((key for key in candidates if fused[key] > 0.0),
                              key=lambda key: (-fused[key], key))]


def shipped(asked: Asked) -> list[str]:
    """`fusion.fuse` itself over the captured inputs, at the shipped constants."""
    return [key for key, _ in shipped_scored(asked)]


def shipped_scored(asked: Asked) -> list[tuple[str, float]]:
    """`fusion.fuse` itself over the captured inputs, at the shipped constants, with its
    scores."""
    lexical = asked.lexical[:fusion.DEPTH]
    nearest = asked.nearest[:fusion.DEPTH]
    candidates = list(dict.fromkeys([key for key, _ in lexical] + nearest))
    latent = ({key: asked.latent[key] for key in candidates if key in asked.latent}
              if asked.latent else None)
    return fusion.fuse(
        lexical, {key: asked.cosines[key] for key in candidates if key in asked.cosines},
        nearest, weight=fusion.FIGURE_LEXICAL_WEIGHT if asked.figure else fusion.LEXICAL_WEIGHT,
        complete=len(asked.lexical) < fusion.DEPTH, latent=latent,
        dates={key: asked.dates[key] for key in candidates if key in asked.dates},
        partial={key for key in candidates if key in asked.partial})


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


def capture(name: str, folder: Path, cache: Path, feedback: bool,
            ) -> tuple[list[Asked], Pieces, Any, tempfile.TemporaryDirectory[str]]:
    """Every question's (and rewrite's) fused-search inputs on one set; the set's pieces;
    its index (for `Index.span_order`) and the state folder it lives in (kept until done)."""
    import numpy as np

    from sage_mem.search import semantic as semantic_module

    queries = retrieval.load_queries(folder / "queries.jsonl")
    asked = [dict(query, kind="q") for query in queries]
    if name.startswith("locomo-dev"):
        for language in retrieval.REWRITES:
            asked += [dict(query, kind=f"rw-{language}")
                      for query in retrieval.relative_rewrites(queries, language)]
    out = []
    state = tempfile.TemporaryDirectory()
    store = retrieval.semantic_store(folder / "memories", Path(state.name), cache, name)
    if store is None:
        raise SystemExit("the semantic extra is not installed (pip install '.[semantic]')")
    index, semantic = store.index, store._semantic_signal()
    memories = index.memories()
    ids = [memory.id for memory in memories]
    partial = {memory.id for memory in memories
               if read_in_part(memory.description, memory.body)}
    stored, _, starts = semantic._state
    matrix = np.asarray(stored.matrix, dtype=np.float32)
    pieces = Pieces(ids=list(stored.ids), starts=np.asarray(starts),
                    counts=np.asarray(stored.counts, dtype=np.float32),
                    current=set(semantic.scored(np.zeros(matrix.shape[1], np.float32))
                                .of(memories)), matrix=matrix)
    for query in asked:
        text, now = query["question"], query.get("now")
        # The query's forms as `Semantic.query_vector` makes them (the query, its core).
        bounded = semantic.bounded_query(text)
        core = (semantic_module.question_core(bounded)
                if semantic.query_tokens(bounded) <= semantic_module.QUESTION_TOKENS else "")
        forms = np.asarray(semantic.embedder.embed_queries([bounded, *([core] if core else [])]),
                           dtype=np.float32)
        vector = forms.sum(axis=0)
        scored = semantic.scored(vector / float(np.linalg.norm(vector)))
        cosines = scored.of(memories)
        latent_query = semantic.latent_query(text)
        item = Asked(
            question=text, relevant=query["relevant"], kind=query["kind"],
            conv=retrieval.conversation(query), temporal=retrieval.is_temporal(query),
            figure=fusion.writes_figure(mask_code(text[:PASSAGE_CHARS])),
            lexical=[(hit.id, hit.score)
                     for hit in index.search(text, limit=DEEP, now=now, spell=True)],
            refined=[(hit.id, hit.score)
                     for hit in index.search(text, limit=DEEP, now=now, refine=True)],
            cosines=cosines,
            nearest=[key for key, _ in scored.nearest(4 * DEEP) if key in cosines][:DEEP],
            latent=(semantic.latent_scores(memories, latent_query)
                    if latent_query is not None else None),
            dates={key: value for key, value in index.date_factors(ids, text, now).items()
                   if value != 1.0},
            partial=partial, piece_cosines=matrix @ forms.T, forms=forms,
            half=half_of(query))
        if feedback:
            item.fed = fed_from(index, item, now)
        out.append(item)
    return out, pieces, index, state


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
    "tuning": lambda a: a.kind == "q" and a.half == "tuning",
    "check": lambda a: a.kind == "q" and a.half == "check",
    "temporal": lambda a: a.kind == "q" and a.temporal,
    "rewrites en, tuning": lambda a: a.kind == "rw-en" and a.half == "tuning",
    "rewrites en, check": lambda a: a.kind == "rw-en" and a.half == "check",
    "rewrites zh, tuning": lambda a: a.kind == "rw-zh" and a.half == "tuning",
    "rewrites zh, check": lambda a: a.kind == "rw-zh" and a.half == "check",
}


def per_question(asked: Asked, order: Sequence[str]) -> tuple[float, float]:
    """One question's R@5 and reciprocal rank at 10."""
    return figures([asked], [list(order)])


def bootstrap(base: Sequence[tuple[float, float]], other: Sequence[tuple[float, float]],
              draws: int = 5000, seed: int = 7) -> list[tuple[float, float, float]]:
    """The paired bootstrap of a variant's gain over the shipped row (R@5, MRR@10): the mean
    difference and its 95 % interval."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for at in (0, 1):
        gains = np.array([b[at] - a[at] for a, b in zip(base, other, strict=True)])
        means = rng.choice(gains, size=(draws, len(gains))).mean(axis=1)
        out.append((float(gains.mean()), float(np.percentile(means, 2.5)),
                    float(np.percentile(means, 97.5))))
    return out

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
    "pieces: best + 0.5 x mean": Rule(piece_mean=0.5),
    "pieces: best + 1.5 x mean": Rule(piece_mean=1.5),
    "pieces: the best alone": Rule(piece_mean=0.0),
    "pieces: a soft maximum at 0.05": Rule(soft=0.05),
    "query: its core weighing 0.5": Rule(core_weight=0.5),
    "query: as written alone": Rule(core_weight=0.0),
    "hubness: k 20 at 0.5": Rule(hub_k=20, hub_beta=0.5),
    "hubness: k 50 at 0.5": Rule(hub_k=50, hub_beta=0.5),
    "hubness: k 50 at 0.25": Rule(hub_k=50, hub_beta=0.25),
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
        asked, pieces, index, state = capture(name, folders[name], args.cache, args.feedback)
        rules: dict[str, Rule | None] = {"shipped": None, **chosen}
        if not args.feedback:
            rules.pop("feedback from the fused top two", None)
        tuning = [a for a in asked if a.kind == "q" and a.conv in retrieval.TUNE_CONVS]
        if tuning:  # fitted on locomo-dev's tuning half, then used as it is on the next sets
            weights = learned(tuning)
        if weights is not None:
            rules["learned on the tuning half " + ", ".join(f"{w:.2f}" for w in weights)] = (
                Rule(sides=weights))
        print(f"\n{name}: R@5 / MRR@10; the halves' paired bootstrap against shipped, 95 %")
        groups = {group: test for group, test in GROUPS.items() if any(map(test, asked))}
        base: list[tuple[float, float]] = []
        for label, rule in rules.items():
            # As the store's refined fused search: the top 10 ordered by spans or dates.
            order = [[key for key, _ in index.span_order(
                shipped_scored(a) if rule is None else scored(a, rule, pieces), a.question)]
                for a in asked]
            each = [per_question(a, o) for a, o in zip(asked, order, strict=True)]
            base = base or each
            cells = []
            for group, test in groups.items():
                kept = [(a, o) for a, o in zip(asked, order, strict=True) if test(a)]
                recall, mrr = figures([a for a, _ in kept], [o for _, o in kept])
                cells.append(f"{group} {recall:.3f} / {mrr:.3f}")
            if rule is not None:
                for half in ("tuning", "check"):
                    at = [i for i, a in enumerate(asked) if GROUPS[half](a)]
                    if at:
                        gains = bootstrap([base[i] for i in at], [each[i] for i in at])
                        cells.append(f"{half} gain " + ", ".join(
                            f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
                            for mean, low, high in gains))
            print(f"  {label}: " + " | ".join(cells), flush=True)
        state.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
