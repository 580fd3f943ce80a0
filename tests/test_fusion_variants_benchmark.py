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


def test_a_variant_changes_the_ranking_the_shipped_fusion_gives() -> None:
    bench = _bench()
    asked = _asked(bench, 1)
    assert bench.ranked(asked, bench.Rule(rrf=60)) != bench.shipped(asked)
    assert bench.ranked(asked, bench.Rule(weight=0.9, figure_weight=0.9)) != bench.shipped(asked)
