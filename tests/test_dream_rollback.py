"""Rollback puts back every byte, never deletes or overwrites, and can itself be rolled back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import TEMPLATE, write_memory
from test_dream_support import add, folder_bytes, live_bytes, memory_text, messy_folder

from sage_mem.dream import DreamError, RunNotFound, list_runs, rollback, run_dream
from sage_mem.dream.paths import DreamPaths
from sage_mem.store import MemoryStore


@pytest.fixture
def messy(empty_dir: Path) -> Path:
    messy_folder(empty_dir, 40, seed=11)
    for path in TEMPLATE.glob("*.md"):
        shutil.copy(path, empty_dir / path.name)
    return empty_dir


def _assert_back_to(folder: Path, before: dict[str, bytes]) -> None:
    """Every file there before has its bytes; nothing new is in service (archive/ may hold more)."""
    now = folder_bytes(folder)
    assert {name: now.get(name) for name in before} == before
    assert set(live_bytes(folder)) == {n for n in before if not n.startswith("archive/")}


@pytest.mark.parametrize(
    "scope", [pytest.param("all", id="all"), pytest.param("touched", id="touched")]
)
def test_a_rollback_puts_back_every_byte(messy: Path, scope: str) -> None:
    before = folder_bytes(messy)
    store = MemoryStore(messy)
    run = run_dream(store, mode="rewrite")
    assert folder_bytes(messy) != before
    result = rollback(store, run.run_id, scope=scope)
    _assert_back_to(messy, before)
    assert result.count("restore", "recreate") > 0
    assert {m.id for m in store.list()} == {m.id for m in MemoryStore(messy).list()}


def test_a_rollback_of_a_rollback_puts_the_run_back(messy: Path) -> None:
    store = MemoryStore(messy)
    run = run_dream(store, mode="rewrite")
    after_run = live_bytes(messy)
    undo = rollback(store, run.run_id)
    redo = rollback(store, undo.rollback_id)
    assert live_bytes(messy) == after_run
    statuses = {r.run_id: r.status for r in list_runs(store)}
    assert statuses[run.run_id] == "rolled-back" and statuses[undo.rollback_id] == "rolled-back"
    assert statuses[redo.rollback_id] == "finished"


def test_a_dry_run_changes_nothing(messy: Path) -> None:
    store = MemoryStore(messy)
    run = run_dream(store, mode="rewrite")
    before = folder_bytes(messy, skip=())
    plan = rollback(store, run.run_id, dry_run=True)
    assert folder_bytes(messy, skip=()) == before
    assert plan.dry_run and plan.count("restore", "recreate") > 0
    assert "would restore" in plan.format_text()


def test_a_new_file_in_the_name_of_an_archived_one_is_a_conflict_not_overwritten(
    empty_dir: Path,
) -> None:
    add(empty_dir, "user_old", "Old editor", category="user")
    add(empty_dir, "user_new", "New editor", category="user", supersedes=["user_old"])
    store = MemoryStore(empty_dir)
    run = run_dream(store, mode="rewrite")
    newcomer = write_memory(
        empty_dir, "user_old", memory_text("Someone else's memory", category="user")
    )
    mine = newcomer.read_bytes()
    result = rollback(store, run.run_id)
    assert newcomer.read_bytes() == mine
    assert result.count("conflict") == 1
    assert "Skipped: name conflicts" in Path(result.report).read_text(encoding="utf-8")
    log = json.loads(DreamPaths(store.folder).rollbacks_log.read_text(encoding="utf-8"))
    assert log[-1]["conflicts"] == 1 and log[-1]["runId"] == run.run_id


def test_a_file_that_did_not_exist_is_moved_into_archive_not_deleted(empty_dir: Path) -> None:
    add(empty_dir, "user_name", "The user is called Ada", category="user")
    store = MemoryStore(empty_dir)
    run = run_dream(store, mode="rewrite")
    later = add(empty_dir, "user_later", "Written after the run", category="user")
    data = later.read_bytes()
    # Written after the run: without force it is a conflict (test_dream_safety.py).
    result = rollback(store, run.run_id, scope="all", force=True)
    assert not later.exists()
    assert (empty_dir / "archive" / "user_later.md").read_bytes() == data
    assert [a.action for a in result.actions if a.path == "user_later.md"] == ["archive"]


def test_scope_touched_leaves_files_the_run_did_not_touch(empty_dir: Path) -> None:
    add(
        empty_dir,
        "project_x",
        "Plan",
        "Decided yesterday.",
        category="project",
        created="2026-11-25",
    )
    other = add(empty_dir, "user_name", "The user is called Ada", category="user")
    store = MemoryStore(empty_dir)
    run = run_dream(store, mode="rewrite")
    other.write_text(memory_text("The user is called Ada L.", category="user"), encoding="utf-8")
    edited = other.read_bytes()
    rollback(store, run.run_id, scope="touched")
    assert other.read_bytes() == edited
    assert "yesterday" in (empty_dir / "project_x.md").read_text(encoding="utf-8")


def test_the_protective_snapshot_survives_rotation(messy: Path) -> None:
    store = MemoryStore(messy)
    run = run_dream(store, mode="rewrite", keep_snapshots=1)
    undo = rollback(store, run.run_id)
    later = [run_dream(store, mode="rewrite", keep_snapshots=1).run_id for _ in range(3)]
    kept = sorted(p.name for p in DreamPaths(store.folder).snapshots_dir.iterdir())
    assert kept == sorted([undo.rollback_id, later[-1]])
    with pytest.raises(DreamError, match="no rollback point any more"):
        rollback(store, later[0])


@pytest.mark.parametrize(
    ("setup", "error", "message"),
    [
        pytest.param("unknown", RunNotFound, "no dream run or rollback", id="unknown-run"),
        pytest.param("malformed", RunNotFound, "is not a run id", id="malformed-id"),
        pytest.param("report", DreamError, "was a report run", id="report-run"),
        pytest.param("twice", DreamError, "rolled back already by", id="rolled-back-twice"),
    ],
)
def test_rollbacks_that_cannot_happen_are_one_clear_error(
    messy: Path, setup: str, error, message: str
) -> None:
    store = MemoryStore(messy)
    run_id = {"unknown": "20200101T000000Z-0000", "malformed": "../../etc"}.get(setup)
    if setup == "report":
        run_id = run_dream(store, mode="report").run_id
    if setup == "twice":
        run_id = run_dream(store, mode="rewrite").run_id
        rollback(store, run_id)
    with pytest.raises(error, match=message):
        rollback(store, run_id)


def test_a_run_whose_rollback_was_undone_names_the_rollback_that_undoes_it_again(
    messy: Path,
) -> None:
    store = MemoryStore(messy)
    run_id = run_dream(store, mode="rewrite").run_id
    first = rollback(store, run_id).rollback_id
    with pytest.raises(DreamError, match=f"roll back {first} to undo that"):
        rollback(store, run_id)
    second = rollback(store, first).rollback_id  # the run's changes are back in place
    with pytest.raises(DreamError) as raised:
        rollback(store, run_id)
    said = str(raised.value)
    assert f"{first} was undone by {second}" in said and f"roll back {second}" in said
    assert f"roll back {first} to undo that" not in said
    third = rollback(store, second).rollback_id  # undone again
    with pytest.raises(DreamError, match=f"roll back {third} to bring it back"):
        rollback(store, run_id)


def test_a_damaged_rollback_point_is_never_written_back(empty_dir: Path) -> None:
    add(
        empty_dir,
        "project_x",
        "Plan",
        "Decided yesterday.",
        category="project",
        created="2026-11-25",
    )
    store = MemoryStore(empty_dir)
    run = run_dream(store, mode="rewrite")
    copy = DreamPaths(store.folder).snapshot_dir(run.run_id) / "files" / "project_x.md"
    copy.unlink()
    copy.write_bytes(b"not what it was")
    current = (empty_dir / "project_x.md").read_bytes()
    result = rollback(store, run.run_id)
    assert (empty_dir / "project_x.md").read_bytes() == current
    assert result.damaged == 1


# the property: any folder, dream, rollback --scope all: every byte back

_PIECES = [
    "The cat ",
    "sleeps ",
    "in the sun",
    ". ",
    "\n",
    "\n\n",
    "yesterday ",
    "next Monday ",
    "用户的猫",
    "叫芝麻",
    "。",
    "昨天",
    "上周",
    "[[m1]] ",
    "[m2](m2.md) ",
    "`code` ",
    "---\n",
]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)
_MEMORY = st.fixed_dictionaries(
    {
        "description": st.sampled_from(
            [
                "The user's cat is Sesame and likes the sun",
                "User's cat is Sesame; likes the sun",
                "用户的猫叫芝麻，喜欢晒太阳",
                "用户养的猫叫芝麻，很喜欢晒太阳",
                "Deploy with make deploy",
            ]
        ),
        "body": _TEXT,
        "category": st.sampled_from(["user", "project"]),
        "trust": st.sampled_from([0.3, 0.5, 0.9]),
        "created": st.sampled_from([None, "2026-11-20"]),
        "locked": st.booleans(),
        "supersedes": st.sampled_from([None, ["m0"], ["m2"]]),
    },
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(memories=st.lists(_MEMORY, min_size=1, max_size=6), with_index=st.booleans())
def test_any_folder_dreamt_and_rolled_back_is_byte_identical(
    tmp_path_factory, memories, with_index
) -> None:
    folder = tmp_path_factory.mktemp("prop") / "memory"
    folder.mkdir()
    for n, fields in enumerate(memories):
        meta = {
            k: v
            for k, v in fields.items()
            if k not in ("description", "body") and v not in (None, False)
        }
        add(folder, f"m{n}", fields["description"], fields["body"].strip(), **meta)
    if with_index:
        MemoryStore(folder).regenerate_index()
    before = folder_bytes(folder)
    store = MemoryStore(folder)
    run = run_dream(store, mode="rewrite")
    rollback(store, run.run_id, scope="all")
    _assert_back_to(folder, before)


def test_another_process_sees_a_rollback_before_its_next_write(messy: Path) -> None:
    store = MemoryStore(messy)
    run = run_dream(store, mode="rewrite")
    other = MemoryStore(messy)  # no watcher: it learns of other writers only through the lock
    after_run = {m.id for m in other.list()}
    rollback(store, run.run_id, scope="all")
    restored = {m.id for m in MemoryStore(messy).list()}
    assert restored != after_run  # the rollback brought memories back (or took some away)
    # The other store's index still holds the run's folder; its next write must not
    # write a MEMORY.md without what the rollback put back.
    other.write("note_after_rollback", description="written by another process", body="x")
    catalog = (messy / "MEMORY.md").read_text(encoding="utf-8")
    for memory_id in restored - after_run:
        assert memory_id in catalog
    assert {m.id for m in other.list()} == restored | {"note_after_rollback"}


def test_a_rollback_without_a_scope_takes_the_settings_default(messy: Path) -> None:
    """`rollbackScope` in config.json is the scope of a rollback that names none (CLI, page)."""
    import subprocess
    import sys

    from support import ROOT

    store = MemoryStore(messy, watch=False)
    run = run_dream(store, mode="rewrite")
    assert rollback(store, run.run_id, dry_run=True).scope == "touched"
    config = DreamPaths(store.folder).config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"rollbackScope": "all"}))
    assert rollback(store, run.run_id, dry_run=True).scope == "all"
    assert rollback(store, run.run_id, dry_run=True, scope="touched").scope == "touched"
    shown = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(messy), "rollback", run.run_id,
         "--dry-run", "--json"], capture_output=True, text=True, cwd=ROOT, check=True,
    )
    assert json.loads(shown.stdout)["scope"] == "all"
    config.write_text(json.dumps({"rollbackScope": "some"}))
    with pytest.raises(DreamError, match="rollbackScope"):
        rollback(store, run.run_id, dry_run=True)
