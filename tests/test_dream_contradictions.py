"""Likely contradictions: same subject, different value; the newer is the proposal (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_dream_support import add, live_bytes, read_manifest

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore

PAIRS = [
    pytest.param(
        "The main database is PostgreSQL 14",
        "The main database is now MySQL 8",
        id="database-switched",
    ),
    pytest.param("Deploy target is AWS ECS", "Deploy target is Fly.io", id="deploy-target"),
    pytest.param(
        "Weekly sync meeting is on Tuesday at 10:00",
        "Weekly sync meeting is on Thursday at 10:00",
        id="meeting-day-moved",
    ),
    pytest.param(
        "Python indentation: 4 spaces", "Python indentation: 2 spaces", id="indentation-rule"
    ),
    pytest.param("消息队列用的是 RabbitMQ", "消息队列用的是 Kafka", id="zh-queue"),
    pytest.param("团队周会时间是周二上午", "团队周会时间是周四上午", id="zh-meeting-day"),
]


def add_old_and_new(folder: Path, old: tuple[str, str], new: tuple[str, str]) -> None:
    """`project_old` written 2026-11-02 and `project_new` 2026-11-20, each (description, body)."""
    for memory_id, (description, body), day in (
        ("project_old", old, "2026-11-02"), ("project_new", new, "2026-11-20"),
    ):
        add(folder, memory_id, description, body, category="project", created=day,
            updated=f"{day}T09:00:00Z")


@pytest.mark.parametrize(("old", "new"), PAIRS)
@pytest.mark.parametrize("mode", ["report", "rewrite"])
def test_a_likely_contradiction_is_reported_with_the_newer_as_proposal(
    empty_dir: Path, old: str, new: str, mode: str
) -> None:
    add_old_and_new(empty_dir, (old, "Written first."), (new, "Written later."))
    before = live_bytes(empty_dir)
    result = run_dream(MemoryStore(empty_dir), mode=mode)
    notes = [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]
    assert len(notes) == 1
    assert notes[0]["id"] == "project_old"
    assert "Proposal: project_new stands" in notes[0]["message"]
    assert "supersedes: [project_old]" in notes[0]["message"]
    after = live_bytes(empty_dir)
    assert after["project_old.md"] == before["project_old.md"]  # only supersedes: settles it


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(
            "The billing runbook is at wiki/billing",
            "The search runbook is at wiki/search",
            id="other-subject",
        ),
        pytest.param(
            "The user's shell is fish",
            "The user's browser is Firefox",
            id="other-thing-of-the-user",
        ),
        pytest.param(
            "测试环境数据库是 Postgres 15",
            "生产环境数据库是 Postgres 15",
            id="zh-other-environment",
        ),
        pytest.param(
            "Deploy target is AWS ECS",
            "Deploy target is AWS ECS in eu-west-1",
            id="same-value-said-more",
        ),
    ],
)
def test_memories_about_different_subjects_are_no_contradiction(
    empty_dir: Path, first: str, second: str
) -> None:
    add(empty_dir, "project_a", first, category="project", created="2026-11-02")
    add(empty_dir, "project_b", second, category="project", created="2026-11-20")
    result = run_dream(MemoryStore(empty_dir), mode="report")
    assert not [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            "The user's home city is Berlin",
            "In 2023 the user's home city was Paris",
            id="en-a-past-year",
        ),
        pytest.param(
            "The user's team lead is Alice",
            "The user's team lead was Bob before the reorg",
            id="en-was-before",
        ),
        pytest.param("团队负责人：张三", "团队负责人：李四（重组之前）", id="zh-before-the-reorg"),
    ],
)
def test_a_newer_memory_about_the_past_does_not_contradict_a_present_fact(
    empty_dir: Path, old: str, new: str
) -> None:
    """Written later but telling how it was: both hold, so the past one is never proposed."""
    add_old_and_new(empty_dir, (old, ""), (new, ""))
    result = run_dream(MemoryStore(empty_dir), mode="report")
    assert not [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]


@pytest.mark.parametrize(
    ("old", "new", "contradicts"),
    [
        pytest.param(
            "The daily run distance is 10 km", "The daily run distance is 6.2 miles", False,
            id="en-km-miles",
        ),
        pytest.param("每天跑步的距离是10公里", "每天跑步的距离是6.2英里", False, id="zh-km-miles"),
        pytest.param(
            "The weight limit of the bag is 23 kg", "The weight limit of the bag is 50 lbs", False,
            id="en-kg-lbs",
        ),
        pytest.param(
            "The daily run distance is 10 km", "The daily run distance is 10 miles", True,
            id="en-another-distance",
        ),
    ],
)
def test_one_amount_written_in_two_units_is_no_contradiction(
    empty_dir: Path, old: str, new: str, contradicts: bool
) -> None:
    add_old_and_new(empty_dir, (old, ""), (new, ""))
    result = run_dream(MemoryStore(empty_dir), mode="report")
    notes = [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]
    assert bool(notes) == contradicts


def test_a_contradiction_settled_by_supersedes_is_resolved_not_reported(empty_dir: Path) -> None:
    add(
        empty_dir,
        "feedback_old",
        "Indent Python code with 4 spaces",
        category="feedback",
        created="2026-11-02",
    )
    add(
        empty_dir,
        "feedback_new",
        "Indent Python code with 2 spaces",
        category="feedback",
        created="2026-11-20",
        supersedes=["feedback_old"],
    )
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    manifest = read_manifest(result)
    assert not (empty_dir / "feedback_old.md").exists()
    assert not [n for n in manifest["notes"] if n["rule"] == "contradictions"]


@pytest.mark.parametrize(
    ("old", "new_description", "new_body"),
    [
        pytest.param(
            ("We use PostgreSQL for the main database", "All services write to it."),
            "Main database migration done",
            "We switched the main database from PostgreSQL to MySQL after the licence review.",
            id="database-worded-differently",
        ),
        pytest.param(
            ("Production deploys go to AWS ECS", "The cluster is in eu-west-1."),
            "Production deploys now on Fly.io",
            "Production deploys moved from ECS to Fly.io; the ECS cluster is being drained.",
            id="deploy-target-worded-differently",
        ),
        pytest.param(
            ("The team's weekly sync happens every Tuesday", "In the big room."),
            "Weekly sync change",
            "The weekly sync moved from Tuesday to Thursday because of the release train.",
            id="meeting-moved",
        ),
        pytest.param(
            ("Indent YAML files with 4 spaces", "Applies to every repository."),
            "YAML indentation rule",
            "Indent YAML files with 2 spaces instead of 4 spaces, the style guide changed.",
            id="indentation-instead-of",
        ),
        pytest.param(
            ("团队的消息队列用 RabbitMQ", "所有异步任务都走它。"),
            "消息队列迁移完成",
            "团队的消息队列已经从 RabbitMQ 换成了 Kafka，旧集群下季度下线。",
            id="zh-queue-switched",
        ),
    ],
)
def test_a_memory_that_says_what_changed_is_set_against_the_older_one(
    empty_dir: Path, old: tuple[str, str], new_description: str, new_body: str
) -> None:
    add_old_and_new(empty_dir, old, (new_description, new_body))
    result = run_dream(MemoryStore(empty_dir), mode="report")
    notes = [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]
    assert [n["id"] for n in notes] == ["project_old"]
    assert "Proposal: project_new stands" in notes[0]["message"]


def test_the_older_memory_stays_the_older_one_after_a_rule_rewrites_it(empty_dir: Path) -> None:
    """The dates rule rewrites the old memory first (moving its `updated`): still the old one."""
    add_old_and_new(empty_dir, ("Deploy target is AWS ECS", "Set up yesterday."),
                    ("Deploy target is Fly.io", "Chosen after the cost review."))
    for mode in ("report", "rewrite"):
        result = run_dream(MemoryStore(empty_dir), mode=mode)
        notes = [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]
        assert [n["id"] for n in notes] == ["project_old"], mode


def test_one_subject_with_many_values_is_a_list_of_facts_not_a_contradiction(
    empty_dir: Path,
) -> None:
    for n, (case, day) in enumerate([("481", "02"), ("367", "05"), ("690", "09")]):
        add(
            empty_dir,
            f"project_case_{n}",
            f"The staging database note is case {case}",
            category="project",
            created=f"2026-11-{day}",
        )
    result = run_dream(MemoryStore(empty_dir), mode="report")
    assert not [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]


@pytest.mark.parametrize(("old", "new"), PAIRS[2:3] + PAIRS[5:6])
def test_a_restamp_of_the_older_memory_does_not_make_it_the_proposal(
    empty_dir: Path, old: str, new: str
) -> None:
    """A change of a tag restamps `updated`; the fact is as old as it was."""
    add_old_and_new(empty_dir, (old, "Written first."), (new, "Written later."))
    store = MemoryStore(empty_dir)
    store.write("project_old", tags=["restamped"])
    result = run_dream(store, mode="report")
    notes = [n for n in read_manifest(result)["notes"] if n["rule"] == "contradictions"]
    assert len(notes) == 1
    assert "Proposal: project_old stands" not in notes[0]["message"]
    assert "not clear" in notes[0]["message"]


def test_the_newer_is_the_one_written_later_whatever_zone_its_stamp_is_in(
    empty_dir: Path,
) -> None:
    """A team's folder: Tokyo wrote first (`2026-11-05T08:00:00+09:00`, 23:00 UTC on the
    4th), San Francisco five hours later (`2026-11-04T20:00:00-08:00`). Compared as text the
    Tokyo stamp was the later one, and the older fact was proposed to stand."""
    import json
    import os
    import subprocess
    import sys

    from support import ROOT

    add(empty_dir, "project_old", "Deploy target is AWS ECS", "Written first.",
        category="project", updated="2026-11-05T08:00:00+09:00")
    add(empty_dir, "project_new", "Deploy target is Fly.io", "Written later.",
        category="project", updated="2026-11-04T20:00:00-08:00")
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "dream", "--json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads(Path(json.loads(done.stdout)["manifest"]).read_text())
    notes = [n for n in manifest["notes"] if n["rule"] == "contradictions"]
    assert len(notes) == 1, notes
    assert notes[0]["id"] == "project_old"
    assert "Proposal: project_new stands" in notes[0]["message"]
