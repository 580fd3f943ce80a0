"""`benchmarks/fusion_variants.py` ranks fusion variants over captured inputs: at the shipped
constants its own fusion must be `fusion.fuse`'s, or its other rows compare against
something that is not what ships."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fusion_variants_bench", ROOT / "benchmarks" / "fusion_variants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fusion_variants_bench"] = module
    spec.loader.exec_module(module)
    return module


def _asked(bench: ModuleType, seed: int) -> object:
    """A question's inputs made at random: a lexical list cut or complete, cosines for most
    candidates, latent scores or none, dated and partly read memories, a figure or not."""
    rng = random.Random(seed)
    ids = [f"m{i:03d}" for i in range(200)]
    matched = rng.sample(ids, rng.choice([20, 49, 120]))
    lexical = sorted(((key, rng.uniform(0.1, 9.0)) for key in matched), key=lambda p: -p[1])
    cosines = {key: rng.uniform(0.6, 0.95) for key in ids if rng.random() < 0.95}
    nearest = sorted(cosines, key=lambda key: -cosines[key])
    latent = None if seed % 3 == 0 else {key: rng.uniform(0, 3) for key in ids}
    dates = {key: rng.choice([1.375, 1.75]) for key in rng.sample(ids, 15)}
    return bench.Asked(
        question="q", relevant=[ids[0]], kind="q", conv=0, temporal=bool(dates),
        figure=seed % 2 == 0, lexical=lexical, refined=lexical, cosines=cosines,
        nearest=nearest, latent=latent, dates=dates, partial=set(rng.sample(ids, 10)))


def test_the_benchmarks_fusion_at_the_shipped_constants_ranks_as_fusion_fuse() -> None:
    bench = _bench()
    for seed in range(12):
        asked = _asked(bench, seed)
        assert bench.ranked(asked, bench.Rule()) == bench.shipped(asked), seed
        # In the same units too: `Index.span_order` adds a share of the top score to them.
        ours, theirs = bench.scored(asked, bench.Rule()), bench.shipped_scored(asked)
        assert max(abs(a[1] - b[1]) for a, b in zip(ours, theirs, strict=True)) < 1e-9, seed


def test_a_variant_changes_the_ranking_the_shipped_fusion_gives() -> None:
    bench = _bench()
    asked = _asked(bench, 1)
    assert bench.ranked(asked, bench.Rule(rrf=60)) != bench.shipped(asked)
    assert bench.ranked(asked, bench.Rule(weight=0.9, figure_weight=0.9)) != bench.shipped(asked)


def test_the_semantic_side_scored_again_at_the_shipped_pooling_ranks_as_fusion_fuse() -> None:
    """A variant that pools a memory's pieces or weighs the query's forms otherwise scores
    them again from the captured piece cosines: at the shipped pooling (best + PIECE_MEAN x
    mean, both forms alike) that must be `Semantic.scored`'s score, so its rows compare
    against what ships."""
    import numpy as np

    from sage_mem.search.semantic import PIECE_MEAN

    bench = _bench()
    for seed in range(6):
        asked = _asked(bench, seed)
        rng = np.random.default_rng(seed)
        ids = [f"m{i:03d}" for i in range(200)]
        counts = rng.integers(1, 5, size=len(ids))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        matrix = rng.normal(size=(int(counts.sum()), 8)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        forms = rng.normal(size=(1 + seed % 2, 8)).astype(np.float32)
        forms /= np.linalg.norm(forms, axis=1, keepdims=True)
        query = forms.sum(axis=0) / np.linalg.norm(forms.sum(axis=0))
        cosine = matrix @ query
        score = (np.maximum.reduceat(cosine, starts)
                 + PIECE_MEAN * np.add.reduceat(cosine, starts) / counts)
        current = set(ids) - {ids[7], ids[19]}
        asked.cosines = {key: float(score[row]) for row, key in enumerate(ids) if key in current}
        asked.nearest = sorted(asked.cosines, key=lambda key: -asked.cosines[key])
        asked.piece_cosines, asked.forms = matrix @ forms.T, forms
        pieces = bench.Pieces(ids=ids, starts=starts, counts=counts.astype(np.float32),
                              current=current, matrix=matrix)
        rescored, _ = bench.semantic_scores(asked, bench.Rule(core_weight=1.0), pieces)
        assert rescored.keys() == asked.cosines.keys()
        assert max(abs(rescored[key] - asked.cosines[key]) for key in rescored) < 1e-5
        same = bench.Rule(piece_mean=PIECE_MEAN, core_weight=1.0)
        assert same.rescored()
        assert bench.ranked(asked, same, pieces) == bench.shipped(asked), seed
        assert bench.ranked(asked, bench.Rule(hub_k=5, hub_beta=3.0), pieces) != (
            bench.shipped(asked)), seed
