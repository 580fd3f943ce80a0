"""The dream as a person runs it on a folder agents wrote over months (`dream_meaning_cases`'
second folder): `sage-mem dream --mode rewrite`, then `sage-mem rollback`, through the CLI.

What a careful reader wants of it: no look-alike merged (a wrong merge loses a fact), each
twin merged or listed, a changed fact never merged and listed with the newer one as the
proposal, every relative date of an event dated against its memory's own day and the rest
left alone (and listed where unsure), every memory the run touches keeping its `created` and
`updated` (DESIGN §7.3a), the report saying what it did, and the rollback putting back every
byte.
"""

from __future__ import annotations

from typing import Any

import pytest
from dream_meaning_cases import DATED, LOOKALIKE, REWORDED, SUPERSEDED, Row, found
from test_dream_support import add, assert_stamps_kept, cli_rewrite_and_rollback

# the second folder's cases: the ones after the first folder's last (see dream_meaning_cases)
TWINS = REWORDED[[name for name, _ in REWORDED].index("en-pnpm"):]
LOOKALIKES = LOOKALIKE[[rows[0][0] for rows in LOOKALIKE].index("project_db_host_staging"):]
# "The user lives in Berlin" / "The user moved to Lisbon": no word in common but "user", and
# "moved to" names no old value; the rules do not see it (left to vectors and the model pass)
NOT_SEEN = {"en-city"}


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("folder")
    folder = root / "memory"
    folder.mkdir()
    rows: list[Row] = [row for _, pair in TWINS + SUPERSEDED for row in pair]
    rows += [row for pair in LOOKALIKES for row in pair]
    for memory_id, category, day, description, body in rows:
        add(folder, memory_id, description, body, category=category, created=day,
            updated=f"{day}T09:00:00Z")
    for memory_id, category, created, updated, description, body, _ in DATED:
        add(folder, memory_id, description, body, category=category, created=created,
            updated=updated)
    return cli_rewrite_and_rollback(root, folder)


@pytest.mark.parametrize("rows", LOOKALIKES, ids=[rows[0][0] for rows in LOOKALIKES])
def test_a_look_alike_one_fact_apart_is_neither_merged_nor_listed_as_a_twin(
        folder_run: dict[str, Any], rows: list[Row]) -> None:
    assert found(folder_run["manifest"], rows) == "missed"


# The twins the rules find by their words; the rest ("The user prefers metric units" / "Use
# metric units with the user", 用户吃素 / 用户是素食者…: descriptions two or three words apart,
# as a swapped name is) are left to vectors and the model pass (docs/dream.md).
FOUND = ["en-pnpm", "en-page-db", "en-squash", "en-migrations-same-body", "zh-pnpm",
         "zh-loki-same-body", "zh-review"]


@pytest.mark.parametrize("name", FOUND)
def test_twins_said_anew_are_merged_or_listed(folder_run: dict[str, Any], name: str) -> None:
    assert found(folder_run["manifest"], dict(TWINS)[name]) in ("merged", "listed")


def test_twins_over_the_very_same_body_are_merged(folder_run: dict[str, Any]) -> None:
    assert found(folder_run["manifest"], dict(TWINS)["en-migrations-same-body"]) == "merged"


@pytest.mark.parametrize("name", [name for name, _ in SUPERSEDED if name not in NOT_SEEN])
def test_a_changed_fact_is_listed_with_the_newer_one_standing(
        folder_run: dict[str, Any], name: str) -> None:
    rows = dict(SUPERSEDED)[name]
    old, new = rows[0][0], rows[1][0]
    assert found(folder_run["manifest"], rows) == "contradiction"
    notes = [n["message"] for n in folder_run["manifest"]["notes"]
             if n.get("rule") == "contradictions" and n.get("id") in (old, new)]
    assert any(f"Proposal: {new} stands" in message for message in notes), notes


def test_no_changed_fact_is_merged(folder_run: dict[str, Any]) -> None:
    assert [name for name, rows in SUPERSEDED
            if found(folder_run["manifest"], rows) == "merged"] == []


@pytest.mark.parametrize("case", DATED, ids=[case[0] for case in DATED])
def test_a_relative_date_is_dated_against_its_own_memory_or_left(
        folder_run: dict[str, Any], case: tuple) -> None:
    memory_id, *_, wanted = case
    name = f"{memory_id}.md"
    text = folder_run["after"][name].decode("utf-8")
    if not wanted:
        assert folder_run["after"][name] == folder_run["before"][name]
    for phrase, rewritten in wanted:
        assert rewritten in text, (phrase, text)
        assert f"`{name}`" in folder_run["report"]


def test_a_word_the_memorys_code_computes_is_left_and_listed(folder_run: dict[str, Any]) -> None:
    notes = [n["message"] for n in folder_run["manifest"]["notes"]
             if n.get("id") == "reference_date_cmd"]
    assert notes and "'yesterday'" in notes[0].casefold(), notes


def test_every_memory_the_run_touched_keeps_its_stamps(folder_run: dict[str, Any]) -> None:
    touched = {c["file"] for c in folder_run["manifest"]["changes"]} - {"MEMORY.md"}
    assert len(touched) >= 8
    assert_stamps_kept(folder_run)


def test_the_report_says_what_it_did_and_how_to_undo_it(folder_run: dict[str, Any]) -> None:
    report = folder_run["report"]
    assert f"Undo it with `sage-mem rollback {folder_run['run_id']}`" in report
    assert ("rewrote `project_zh_failover.md` (body): '三天前' → '三天前（2026年11月17日）'"
            in report)
    assert "(written on 2026-11-20)" in report
    assert "archived `project_alembic_migrations.md`" in report or (
        "archived `project_run_migrations.md`" in report)


def test_the_rollback_puts_back_every_byte(folder_run: dict[str, Any]) -> None:
    assert folder_run["restored"] == folder_run["before"]
