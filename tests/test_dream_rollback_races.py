"""A rollback never reverts what was saved after its run started.

The rollback point is taken as a run starts; a person, an agent or `git pull` may save a
memory after that and before a rule reads it. The run's change is then made over that save
(it read it), and putting back the rollback point's copy would undo the save as well: found
by a probe of `dream --mode rewrite` while an MCP agent appended to memories (2 of 156
appends reverted by the rollback, in silence). The run keeps, as the rollback point of each
file it changes, the bytes it changed.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_dream_support import add

from sage_mem.dream import rollback, run_dream
from sage_mem.dream import runner as dream_runner
from sage_mem.store import MemoryStore

# The module, not the function the package exports under its name.
dream_rollback = importlib.import_module("sage_mem.dream.rollback")

LONG = " ".join(
    f"Step {n}: run the renewal check and read its report line by line." for n in range(8)
)


def _after_the_rollback_point(
    monkeypatch: pytest.MonkeyPatch, store: MemoryStore, save: Callable[[], None]
) -> None:
    """Make `save` happen right after the run's rollback point is taken (and the store see it)."""
    taken = dream_runner.take_snapshot

    def then_save(*args: Any, **kwargs: Any) -> Any:
        snapshot = taken(*args, **kwargs)
        save()
        store.reconcile()
        return snapshot

    monkeypatch.setattr(dream_runner, "take_snapshot", then_save)


def _renewal(folder: Path) -> tuple[Path, MemoryStore]:
    """A memory with a long body and no summary (the run adds one), and a store of its folder."""
    path = add(folder, "reference_cert_renewal", "How the certificate renewal is tested", LONG,
               category="reference")
    return path, MemoryStore(folder, watch=False)


def _append(path: Path, line: str) -> None:
    """Save `path` with `line` added at its end, as an editor does."""
    path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")


def _dream_with_a_save(
    monkeypatch: pytest.MonkeyPatch, store: MemoryStore, path: Path, line: str
) -> Any:
    """A rewrite run during which `line` is saved into `path` after the rollback point."""
    _after_the_rollback_point(monkeypatch, store, lambda: _append(path, line))
    run = run_dream(store, mode="rewrite")
    assert line.strip() in path.read_text(encoding="utf-8")
    return run


def _changes(manifest: str | None) -> list[dict[str, Any]]:
    assert manifest is not None
    data = json.loads(Path(manifest).read_text(encoding="utf-8"))
    changes: list[dict[str, Any]] = data["changes"]
    return changes


@pytest.mark.parametrize("scope", ["touched", "all"])
def test_a_save_between_the_rollback_point_and_the_runs_change_survives_the_rollback(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    path, store = _renewal(empty_dir)

    run = _dream_with_a_save(monkeypatch, store, path, "\nSAVED-AFTER-START\n")
    changed = [c for c in _changes(run.manifest) if c["file"] == "reference_cert_renewal.md"]
    assert changed and changed[0]["state"] == "applied"  # the run did change it, over the save

    rollback(store, run.run_id, scope=scope)
    text = path.read_text(encoding="utf-8")
    assert "SAVED-AFTER-START" in text
    assert "summary:" not in text  # the run's change is undone all the same


def test_a_memory_created_after_the_rollback_point_and_changed_by_the_run_stays_in_service(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(empty_dir, "user_cat", "The user's cat is called Sesame", category="user")
    store = MemoryStore(empty_dir, watch=False)
    new = empty_dir / "project_agent_note.md"

    def save() -> None:
        add(empty_dir, "project_agent_note", "What the agent noted about renewals", LONG,
            category="project")

    _after_the_rollback_point(monkeypatch, store, save)
    run = run_dream(store, mode="rewrite")
    assert any(c.get("file") == "project_agent_note.md" and c["state"] == "applied"
               for c in _changes(run.manifest))
    written = new.read_text(encoding="utf-8")

    result = rollback(store, run.run_id)
    assert new.is_file(), result.format_text()
    assert "Step 7" in new.read_text(encoding="utf-8")
    assert "summary:" not in new.read_text(encoding="utf-8") and written != new.read_text()


def test_a_save_a_forced_rollback_puts_back_is_kept_by_its_protective_snapshot(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, store = _renewal(empty_dir)
    run = run_dream(store, mode="rewrite")
    taken = dream_rollback.take_snapshot

    def then_save(*args: Any, **kwargs: Any) -> Any:
        snapshot = taken(*args, **kwargs)
        _append(path, "\nSAVED-DURING-ROLLBACK\n")
        return snapshot

    monkeypatch.setattr(dream_rollback, "take_snapshot", then_save)
    undo = rollback(store, run.run_id, force=True)  # asked: the save goes, into the snapshot
    assert "SAVED-DURING-ROLLBACK" not in path.read_text(encoding="utf-8")
    monkeypatch.setattr(dream_rollback, "take_snapshot", taken)
    assert undo.rollback_id is not None
    rollback(store, undo.rollback_id)
    assert "SAVED-DURING-ROLLBACK" in path.read_text(encoding="utf-8")


def test_a_line_a_person_adds_to_their_memory_md_while_the_run_goes_survives_the_rollback(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = empty_dir / "MEMORY.md"
    index.write_text("# My notes\n\n- keep the renewal runbook close\n", encoding="utf-8")
    _, store = _renewal(empty_dir)
    store.regenerate_index()  # sage-mem's region beside the person's lines

    run = _dream_with_a_save(monkeypatch, store, index, "- LINE-ADDED-WHILE-THE-RUN-WENT\n")
    rollback(store, run.run_id)
    assert "LINE-ADDED-WHILE-THE-RUN-WENT" in index.read_text(encoding="utf-8")


def test_a_kept_copy_is_a_new_file_so_a_kill_before_snapshot_json_names_it_leaves_the_old(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollback point is whole at every moment: the old copy is never written over."""
    from sage_mem.dream import snapshots
    from sage_mem.dream.paths import DreamPaths

    path, store = _renewal(empty_dir)
    paths = DreamPaths(store.folder)
    snapshot = snapshots.take_snapshot(store.folder, paths, "20261206T000000Z-0001",
                                       protective=False, now=datetime.now(UTC))
    old = snapshot.read("reference_cert_renewal.md")

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # killed before snapshot.json names the new copy

    monkeypatch.setattr(snapshots, "_save_record", killed)
    with pytest.raises(KeyboardInterrupt):
        snapshots.keep_before(snapshot, "reference_cert_renewal.md", b"saved since\n", 0o600)
    again = snapshots.load_snapshot(paths, "20261206T000000Z-0001")
    assert again is not None and again.read("reference_cert_renewal.md") == old
    assert path.read_bytes() == old
