"""Contradictions found by meaning (issue 29): a value that changed, in any wording, is listed
with the newer memory as the proposal; nothing is archived for it.

The cases (`dream_meaning_cases.py`: an editor, a theme, a length in Chinese numbers, a
meeting moved, a rule filed as `user` and its change as `feedback`) sit in the annotated
corpus (`dream_corpus.py`), whose runbook-per-service and progress-per-system families
must not be listed as clashes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dream_corpus import NOW, build
from dream_meaning_cases import CONTRADICTIONS
from test_dream_support import read_manifest
from test_dream_twins_by_meaning import write_rows

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("clash") / "memory"
    build(folder)
    write_rows(folder, [row for _, rows in CONTRADICTIONS for row in rows])
    return read_manifest(run_dream(MemoryStore(folder, watch=False), mode="report", now=NOW))


def _listed(manifest: dict, old: str, new: str) -> list[str]:
    return [
        n["message"] for n in manifest["notes"]
        if n.get("rule") == "contradictions" and n.get("id") == old and new in n["message"]
    ]


@pytest.mark.parametrize("name", [name for name, _ in CONTRADICTIONS])
def test_a_value_that_changed_is_listed_with_the_newer_as_the_proposal(
    manifest: dict, name: str
) -> None:
    old, new = (row[0] for row in dict(CONTRADICTIONS)[name])
    found = _listed(manifest, old, new)
    assert found, [n["message"] for n in manifest["notes"] if n.get("rule") == "contradictions"]
    assert f"Proposal: {new} stands" in found[0]


def test_nothing_is_archived_for_a_possible_contradiction(manifest: dict) -> None:
    ids = {row[0] for _, rows in CONTRADICTIONS for row in rows}
    assert not [
        c for c in manifest["changes"] if c.get("id") in ids and c.get("operation") == "archive"
    ]


def test_a_family_of_one_subject_per_service_is_not_listed_as_a_clash(manifest: dict) -> None:
    """"Where the billing runbook is" / "Where the search runbook is": a list of facts."""
    family = re.compile(r"runbook|_progress|_docs")
    assert not [
        n["message"] for n in manifest["notes"]
        if n.get("rule") == "contradictions" and family.search(n.get("id", ""))
    ]


def test_two_facts_noted_the_same_day_are_not_a_clash(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    write_rows(folder, [
        ("user_editor_work", "user", "2026-11-20", "The user's editor at work is Sublime Text",
         "Give keyboard shortcuts for Sublime Text at work."),
        ("user_editor_home", "user", "2026-11-20", "The user's editor at home is Helix",
         "Give keyboard shortcuts for Helix at home."),
    ])
    manifest = read_manifest(run_dream(MemoryStore(folder, watch=False), mode="report", now=NOW))
    assert not [n for n in manifest["notes"] if n.get("rule") == "contradictions"]
