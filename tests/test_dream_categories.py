"""Keyword reclassification: a memory filed under a category its content does not fit (issue 14)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_dream_support import add, live_bytes, read_manifest

from sage_mem.dream import rollback, run_dream
from sage_mem.store import MemoryStore

RULE_EN = (
    "Write commit subjects in the imperative mood, at most 72 characters.\n\n"
    "**Why:** the changelog is generated from them.\n\n"
    "**How to apply:** every commit, in every repository."
)
RULE_ZH = (
    "代码注释统一用中文写。\n\n**原因：** 团队成员都是中文母语。\n\n"
    "**怎么做：** 公共接口的文档字符串用英文。"
)


@pytest.mark.parametrize(
    ("description", "body"),
    [
        pytest.param("Write commit messages in the imperative", RULE_EN, id="english"),
        pytest.param("不要用拼音写注释", RULE_ZH, id="chinese"),
    ],
)
def test_a_rule_filed_as_user_moves_to_feedback_keeping_its_name_convention(
    empty_dir: Path, description: str, body: str
) -> None:
    add(
        empty_dir,
        "user_commit_rule",
        description,
        body,
        category="user",
        trust=0.8,
        tags=["git"],
        created="2026-11-20",
    )
    add(
        empty_dir,
        "project_notes",
        "Notes",
        "See [[user_commit_rule]] before committing.",
        category="project",
        created="2026-11-20",
    )
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite")
    moved = store.read("feedback_commit_rule")
    assert moved.category == "feedback" and moved.description == description
    assert moved.body.strip() == body and moved.trust == 0.8 and moved.tags == ("git",)
    assert not (empty_dir / "user_commit_rule.md").exists()
    assert (empty_dir / "archive" / "user_commit_rule.md").exists()  # never deleted
    assert "[[feedback_commit_rule]]" in store.read("project_notes").body
    rules = {c["rule"] for c in read_manifest(result)["changes"]}
    assert "categories" in rules and "links" in rules


def test_a_move_is_undone_by_the_run_rollback(empty_dir: Path) -> None:
    add(
        empty_dir,
        "user_commit_rule",
        "Write commit messages in the imperative",
        RULE_EN,
        category="user",
        created="2026-11-20",
    )
    before = live_bytes(empty_dir)
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite")
    assert "feedback_commit_rule.md" in live_bytes(empty_dir)
    rollback(store, result.run_id)
    after = live_bytes(empty_dir)
    assert {k: after.get(k) for k in before} == before
    assert "feedback_commit_rule.md" not in after


def test_a_file_without_the_prefix_only_changes_its_category(empty_dir: Path) -> None:
    add(
        empty_dir,
        "commit_rule",
        "Write commit messages in the imperative",
        RULE_EN,
        category="user",
        created="2026-11-20",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("commit_rule").category == "feedback"


@pytest.mark.parametrize(
    ("memory_id", "text", "meta"),
    [
        pytest.param(
            "user_commit_rule",
            f"---\nname: commit\ndescription: Commit messages\ntype: user\n"
            f"modified: 2026-11-20T10:00:00Z\n---\n\n{RULE_EN}\n",
            None,
            id="claude-code-keys-a-new-file-would-lose",
        ),
        pytest.param("user_commit_rule", None, {"origin": "hand-written"}, id="a-key-of-its-own"),
    ],
)
def test_a_move_that_would_lose_frontmatter_is_reported(
    empty_dir: Path, memory_id: str, text: str | None, meta: dict | None
) -> None:
    if text is None:
        path = add(
            empty_dir,
            memory_id,
            "Commit messages",
            RULE_EN,
            category="user",
            created="2026-11-20",
            **(meta or {}),
        )
    else:
        path = empty_dir / f"{memory_id}.md"
        path.write_text(text, encoding="utf-8")
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    assert any("move it by hand" in n["message"] for n in read_manifest(result)["notes"])


@pytest.mark.parametrize(
    ("memory_id", "description", "body", "category"),
    [
        pytest.param("user_editor", "The user edits in Neovim", "With LazyVim.", "user", id="fits"),
        pytest.param(
            "feedback_pytest",
            "The user prefers pytest over unittest",
            "Use it for every new test file.",
            "feedback",
            id="a-preference-rule",
        ),
        pytest.param(
            "project_dash",
            "Dashboards for the release",
            "https://grafana.internal/d/release shows the rollout.",
            "project",
            id="a-project-with-a-link",
        ),
    ],
)
def test_memories_that_fit_well_enough_are_not_moved(
    empty_dir: Path, memory_id: str, description: str, body: str, category: str
) -> None:
    path = add(empty_dir, memory_id, description, body, category=category, created="2026-11-20")
    before = path.read_bytes()
    run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before


def test_a_stray_date_and_a_release_word_do_not_make_a_rule_a_project_note(
    empty_dir: Path,
) -> None:
    path = add(
        empty_dir,
        "feedback_answers",
        "Answers lead with the conclusion",
        "Noted on 2026-11-20 during the release review.",
        category="feedback",
        created="2026-11-20",
    )
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    assert not [n for n in read_manifest(result)["notes"] if n["rule"] == "categories"]


@pytest.mark.parametrize("mode", ["report", "rewrite"])
def test_a_moved_memory_keeps_the_day_it_was_written(empty_dir: Path, mode: str) -> None:
    """The move is the same memory under its right name: as old as it was, for the next rules
    and the next runs (a contradiction's newer side, the day its dates count from)."""
    add(
        empty_dir,
        "user_commit_rule",
        "Write commit messages in the imperative",
        RULE_EN,
        category="user",
        created="2026-11-02",
        updated="2026-11-02T09:00:00Z",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode=mode)
    if mode == "rewrite":
        moved = store.read("feedback_commit_rule")
    else:
        from sage_mem.dream.changes import Applier
        from sage_mem.dream.manifest import Manifest
        from sage_mem.dream.paths import DreamPaths
        from sage_mem.dream.rules import RuleContext
        from sage_mem.dream.rules.categories import run as move

        paths = DreamPaths(store.folder)
        manifest = Manifest.start(
            paths, "20261201T000000Z-abcd", kind="dream", mode="report", now=datetime.now(UTC)
        )
        ctx = RuleContext(store, Applier(store, manifest, mode="report"), now=datetime.now(UTC))
        move(ctx)
        moved = next(m for m in ctx.live() if m.id == "feedback_commit_rule")
    assert (moved.created, moved.updated) == ("2026-11-02", "2026-11-02T09:00:00Z")
