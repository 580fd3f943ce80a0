"""A rewrite run over an annotated folder does what a careful person would accept (issue 14).

The corpus (`tests/dream_corpus.py`, 165 memories in English and Chinese) says for
each memory what may change: which relative dates date an event and to what,
which text must stay as written, which memories are true duplicates and which
only look alike, which contradict each other. The scores:

    python tests/dream_corpus.py             # a rewrite run; `report` for a report run
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from dream_corpus import NOW, Scores, build, score, seed_retrievals

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore


def _run(folder: Path, mode: str) -> tuple[Scores, dict]:
    truth = build(folder)
    store = MemoryStore(folder, watch=False)
    seed_retrievals(store, truth)
    result = run_dream(store, mode=mode, now=NOW)
    manifest = json.loads(Path(result.manifest or "").read_text(encoding="utf-8"))
    return score(folder, manifest, truth), manifest


def test_a_rewrite_over_the_corpus_is_one_a_careful_person_accepts(
    tmp_path: Path, utc: None
) -> None:
    scores, _ = _run(tmp_path / "memory", "rewrite")
    assert scores.harmful == [], scores.line()
    merged, groups = scores.duplicates
    assert merged >= 0.8 * groups, scores.line()
    # "Keep answers short and lead with the conclusion" / the reverse order: refused as two
    # parts in swapped places ("commit and push"), but listed for a person
    assert merged + scores.duplicates_listed >= 10, scores.line()
    dated, events = scores.dates
    assert dated >= 0.9 * events, scores.line()
    kinds, all_kinds = scores.contradiction_kinds
    assert kinds >= 3 and all_kinds == 4, scores.line()
    good, summaries = scores.summaries
    assert summaries and good == summaries, scores.line()
    listed, unsure = scores.unsure_listed
    assert listed == unsure, scores.line()


def _proposal(change: dict) -> tuple:
    return (
        change.get("file"),
        change.get("operation"),
        change.get("rule"),
        change.get("reason"),
        tuple(change.get("fields") or ()),
        change.get("supersededBy"),
    )


def test_a_report_run_shows_exactly_what_a_rewrite_run_does(tmp_path: Path, utc: None) -> None:
    _, report = _run(tmp_path / "a" / "memory", "report")
    _, rewrite = _run(tmp_path / "b" / "memory", "rewrite")
    proposed = [_proposal(c) for c in report["changes"] if c.get("rule") != "index"]
    applied = [_proposal(c) for c in rewrite["changes"] if c.get("rule") != "index"]
    assert proposed == applied
    assert [n["message"] for n in report["notes"]] == [n["message"] for n in rewrite["notes"]]


def test_a_second_rewrite_run_over_the_corpus_changes_nothing(tmp_path: Path, utc: None) -> None:
    """Dates already written beside their phrases, merged twins, moved memories: all settled."""
    folder = tmp_path / "memory"
    _run(folder, "rewrite")
    store = MemoryStore(folder, watch=False)
    again = run_dream(store, mode="rewrite", now=NOW + timedelta(days=3))
    manifest = json.loads(Path(again.manifest or "").read_text(encoding="utf-8"))
    assert [c for c in manifest["changes"] if c["rule"] != "index"] == []
