"""A dream's edit keeps the memory's age (DESIGN §7.3a, issue 29).

`updated` says when the fact was said. Writing a date beside "yesterday", a
summary, a link repair, a category move or the model pass's tidying does not
say it again: whatever the run changes keeps the stamp it found (a merge may
carry the newest stamp of the memories it joins), so a September note does not
come out of a December run looking new, ranking as recent and escaping the
staleness checks. The rollback still puts back every byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dream_corpus import NOW, build, seed_retrievals
from test_dream_support import add, folder_bytes, read_manifest

from sage_mem.dream import rollback, run_dream
from sage_mem.dream.model import DreamTools
from sage_mem.memory.file_format import parse_bytes
from sage_mem.store import MemoryStore

OLD = {"created": "2026-09-03", "updated": "2026-09-03T08:15:00Z"}
OLDER = {"created": "2026-08-20", "updated": "2026-08-20T16:00:00Z"}
RUN = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _stamps(path: Path) -> dict[str, str]:
    meta = parse_bytes(path.read_bytes(), path).meta
    return {key: str(meta[key]) for key in ("created", "updated", "modified") if key in meta}


def _stamp_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(r"^(?:created|updated|modified):.*$", text, re.MULTILINE)


def _dated(folder: Path) -> str:
    add(folder, "project_rollout", "Checkout rollout", "Yesterday the new checkout went to "
        "ten percent of traffic and the error rate held.", category="project", **OLD)
    return "project_rollout"


def _summarised(folder: Path) -> str:
    add(folder, "reference_backups", "Where the database backups are kept",
        "Nightly backups of the orders database are copied to the cold-storage bucket in "
        "Frankfurt and kept for ninety days. Restores are tested by the platform team in a "
        "scratch project before each quarter ends, and the restore drill log sits beside them.",
        category="reference", **OLD)
    return "reference_backups"


def _linked(folder: Path) -> str:
    add(folder, "project_queue_v1", "Queue design, first version", "Jobs went through Redis "
        "lists.", category="project", **OLDER)
    add(folder, "project_queue_v2", "Queue design, second version", "Jobs go through "
        "Postgres with SKIP LOCKED.", category="project", supersedes=["project_queue_v1"],
        created="2026-10-01", updated="2026-10-01T09:00:00Z")
    add(folder, "project_workers", "How the workers pick up jobs", "The workers follow the "
        "queue design in [[project_queue_v1]].", category="project", **OLD)
    return "project_workers"


def _recategorised(folder: Path) -> str:
    add(folder, "commit_style", "Write commit subjects in the imperative",
        "Write commit subjects in the imperative mood.\n\n**Why:** the changelog is built "
        "from them.\n\n**How to apply:** every commit, in every repository.",
        category="user", **OLD)
    return "commit_style"


def _moved(folder: Path) -> str:
    add(folder, "user_review_rule", "Ask for a second reviewer on schema changes",
        "Ask for a second reviewer on every schema change.\n\n**Why:** a bad migration "
        "locked the orders table once.\n\n**How to apply:** any pull request touching "
        "migrations/.", category="user", **OLD)
    return "feedback_review_rule"


def _model_written(folder: Path) -> str:
    add(folder, "user_timezone", "The user works from Lisbon", "Mornings are for deep work.",
        category="user", **OLD)
    return "user_timezone"


def _model(tools: DreamTools) -> None:
    tools.write("user_timezone", description="The user works from Lisbon (WET)",
                reason="names the time zone")


CASES: list[tuple[Callable[[Path], str], Callable[[DreamTools], None] | None]] = [
    (_dated, None),
    (_summarised, None),
    (_linked, None),
    (_recategorised, None),
    (_moved, None),
    (_model_written, _model),
]


@pytest.mark.parametrize(
    ("make", "model"),
    [pytest.param(make, model, id=make.__name__.strip("_")) for make, model in CASES],
)
def test_a_dream_edit_keeps_the_stamp_and_the_rollback_puts_back_every_byte(
    empty_dir: Path, make: Callable[[Path], str], model: Callable[[DreamTools], None] | None,
    utc: None,
) -> None:
    memory_id = make(empty_dir)
    before = folder_bytes(empty_dir)
    original = empty_dir / f"{memory_id}.md"
    if not original.exists():  # a move: the old file's stamps
        original = next(p for p in empty_dir.glob("*.md") if p.name != "MEMORY.md")
    stamp_lines = _stamp_lines(original)
    store = MemoryStore(empty_dir, watch=False)
    result = run_dream(store, mode="rewrite", now=RUN, model_pass=model)
    manifest = read_manifest(result)
    changed = {c["id"] for c in manifest["changes"] if c["state"] == "applied"}
    assert memory_id in changed, manifest["changes"]
    assert _stamp_lines(empty_dir / f"{memory_id}.md") == stamp_lines
    rollback(store, result.run_id)
    # a memory the run created (a move's new file) goes to archive/, never deleted
    created = {f"archive/{c['file']}" for c in manifest["changes"] if c["operation"] == "create"}
    assert {k: v for k, v in folder_bytes(empty_dir).items() if k not in created} == before


def test_a_file_dated_by_claude_codes_modified_alone_gains_no_stamp(
    empty_dir: Path, utc: None
) -> None:
    path = empty_dir / "project_freeze.md"
    path.write_text(
        "---\nname: Release freeze\ndescription: Release freeze\nmetadata:\n  type: project\n"
        "modified: 2026-09-10T11:00:00Z\n---\n\nThe freeze started yesterday.\n",
        encoding="utf-8",
    )
    result = run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN)
    assert result.by_rule.get("relative-dates") == 1
    text = path.read_text(encoding="utf-8")
    assert "yesterday (2026-09-09)" in text
    assert _stamps(path) == {"modified": "2026-09-10T11:00:00Z"} or _stamps(path) == {
        "modified": "2026-09-10 11:00:00+00:00"
    }
    assert "created" not in text and "updated" not in text


def test_a_merge_carries_at_most_the_newest_stamp_of_the_memories_it_joins(
    empty_dir: Path, utc: None
) -> None:
    add(empty_dir, "reference_status_page", "The status page is status.example.com",
        "The status page is status.example.com. Incidents are posted there first.",
        category="reference", trust=0.7, **OLDER)
    add(empty_dir, "reference_status_site", "The status page is status.example.com",
        "The status page is status.example.com. Incidents are posted there first, and the "
        "subscription form sends e-mail updates to customers.", category="reference", **OLD)
    store = MemoryStore(empty_dir, watch=False)
    result = run_dream(store, mode="rewrite", now=RUN)
    manifest = read_manifest(result)
    assert any(c["operation"] == "archive" for c in manifest["changes"]), manifest
    kept = empty_dir / "reference_status_page.md"
    assert _stamps(kept)["updated"] in (OLDER["updated"], OLD["updated"])


def test_no_memory_of_the_corpus_looks_fresher_after_a_rewrite(tmp_path: Path, utc: None) -> None:
    """Every rule kind at once: the stamps after are the stamps before (a moved memory keeps
    the old file's; a merge's keeper at most the newest of its group)."""
    folder = tmp_path / "memory"
    truth = build(folder)
    before = {
        path.relative_to(folder).with_suffix("").as_posix(): _stamps(path)
        for path in folder.rglob("*.md")
    }
    store = MemoryStore(folder, watch=False)
    seed_retrievals(store, truth)
    result = run_dream(store, mode="rewrite", now=NOW)
    manifest = read_manifest(result)
    newest = max(s.get("updated", s.get("modified", "")) for s in before.values())
    fresher = []
    for path in folder.glob("*.md"):
        memory_id = path.stem
        if memory_id == "MEMORY":
            continue
        stamps = _stamps(path)
        was = before.get(memory_id)
        if was is None:  # a memory moved to the category it fits: the old file's stamps
            moved = next(c for c in manifest["changes"]
                         if c.get("operation") == "archive" and c.get("supersededBy") == memory_id)
            was = before[moved["id"]]
        if stamps != was:
            group = next((g for g in truth.duplicates if memory_id in g), {memory_id})
            allowed = max(before[m].get("updated", "") for m in group if m in before)
            if stamps.get("updated", "") > allowed or stamps.get("created") != was.get("created"):
                fresher.append(f"{memory_id}: {was} -> {stamps}")
    assert fresher == []
    assert all(s.get("updated", "") <= newest for s in map(_stamps, folder.glob("*.md"))
               if s)


def test_the_stores_write_leaves_the_stamp_it_is_given(empty_dir: Path, utc: None) -> None:
    """One rule in the store: `stamp` is the `updated` an edit leaves; without it, now."""
    add(empty_dir, "user_a", "A", "Body.", category="user", **OLD)
    add(empty_dir, "user_b", "B", "Body.", category="user")  # no stamp at all
    store = MemoryStore(empty_dir, watch=False)
    kept = store.write("user_a", body="Body, edited.", stamp=OLD["updated"])
    assert (kept.created, kept.updated) == (OLD["created"], OLD["updated"])
    carried = store.write("user_a", body="Body, merged.", stamp="2026-10-01T08:00:00Z")
    assert carried.updated == "2026-10-01T08:00:00Z"
    bare = store.write("user_b", body="Body, edited.", stamp="")
    assert _stamps(bare.path) == {}
    fresh = store.write("user_a", body="Body, said again.")
    assert fresh.updated is not None and fresh.updated > "2026-10-01T08:00:00Z"
