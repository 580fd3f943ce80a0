"""The page's list of dream runs reads little: a finished run's manifest once while it is
unchanged, a running run's journal from where the last look stopped, and never a live run's
journal just to see that its process lives (at 50,000 memories each whole read cost seconds,
and the page asks every second while a run it started runs)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sage_mem import MemoryStore
from sage_mem.dream import list_runs, run_dream
from sage_mem.dream.manifest import JOURNAL, JournalFold, Manifest
from sage_mem.dream.paths import DreamPaths
from sage_mem.dream.runner import mark_interrupted
from sage_mem.ui.run_lines import RunLines

EVENTS = [
    {"event": "change", "ref": "a1", "file": "a.md", "state": "pending"},
    {"event": "change", "ref": "b2", "file": "b.md", "state": "proposed"},
    {"event": "applied", "ref": "a1", "after": {"file": "a.md"}},
    {"event": "note", "file": "c.md", "message": "look"},
    {"event": "change", "ref": "c3", "file": "c.md", "state": "pending"},
    {"event": "dropped", "ref": "c3"},
    {"event": "refused", "file": "d.md", "reason": "locked"},
    {"event": "change", "ref": "简4", "file": "简.md", "state": "proposed"},
]


def _lines(events: list[dict]) -> bytes:
    return b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in events)


def _folded(journal: Path) -> tuple[list, list, list]:
    fold = JournalFold()
    fold.read(journal, to_end=True)
    return list(fold.changes.values()), fold.refused, fold.notes


@pytest.mark.parametrize("cut", range(len(EVENTS) + 1))
def test_a_journal_read_on_in_steps_folds_as_one_read_of_it_whole(tmp_path: Path, cut: int) -> None:
    journal = tmp_path / JOURNAL
    whole = _lines(EVENTS)
    first = _lines(EVENTS[:cut])
    # The next line half written: left for the next read, never taken half.
    journal.write_bytes(first + whole[len(first):len(first) + 7])
    fold = JournalFold()
    fold.read(journal)
    assert fold.offset == len(first)
    journal.write_bytes(whole)
    fold.read(journal)
    assert (list(fold.changes.values()), fold.refused, fold.notes) == _folded(journal)
    assert [c["ref"] for c in fold.changes.values()] == ["a1", "b2", "简4"]
    assert fold.changes["a1"]["state"] == "applied" and len(fold.refused) == len(fold.notes) == 1


def test_a_killed_runs_cut_last_line_is_skipped_and_a_journal_made_anew_is_read_from_its_start(
    tmp_path: Path,
) -> None:
    journal = tmp_path / JOURNAL
    journal.write_bytes(_lines(EVENTS[:2]) + b'{"event": "chan')
    changes, _, _ = _folded(journal)
    assert [c["ref"] for c in changes] == ["a1", "b2"]
    fold = JournalFold()
    fold.read(journal)
    journal.write_bytes(_lines(EVENTS[1:2]))  # shorter than what was read: another file
    fold.read(journal)
    assert list(fold.changes) == ["b2"]


def _folder(tmp_path: Path) -> MemoryStore:
    folder = tmp_path / "memory"
    folder.mkdir()
    for n in range(3):
        (folder / f"note-{n}.md").write_text(
            f"---\ndescription: note {n}, said 3 days ago\ncategory: project\n---\n\nBody {n}.\n")
    return MemoryStore(folder, state_dir=tmp_path / "state", watch=False)


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    calls: list[tuple[str, bool]] = []
    original = Manifest.load.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Manifest], paths: DreamPaths, run_id: str, *, journal: bool = True):
        calls.append((run_id, journal))
        return original(cls, paths, run_id, journal=journal)

    monkeypatch.setattr(Manifest, "load", classmethod(counted))
    return calls


def test_a_finished_runs_line_is_read_once_while_its_manifest_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _folder(tmp_path)
    finished = run_dream(store, mode="report")
    lines = RunLines()
    calls = _count_loads(monkeypatch)
    first = lines.runs(store)
    assert first == list_runs(store)
    calls.clear()
    assert lines.runs(store) == first
    assert calls == []
    # Saved anew (as a rollback marks it): read again, and the page shows what it says now.
    paths = DreamPaths(store.folder)
    manifest = Manifest.load(paths, finished.run_id)
    manifest.update(rolledBackBy="20261205T000000Z-beef")
    calls.clear()
    again = lines.runs(store)
    assert calls == [(finished.run_id, False)]
    assert again[0].rolled_back_by == "20261205T000000Z-beef"
    assert again == list_runs(store)


def test_a_running_runs_line_follows_its_journal_reading_only_what_was_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _folder(tmp_path)
    paths = DreamPaths(store.folder)
    run_id = "20261205T120000Z-a1b2"
    running = Manifest.start(paths, run_id, kind="dream", mode="report",
                             now=datetime(2026, 12, 5, 12, tzinfo=UTC))
    lines = RunLines()
    reads: list[int] = []
    original = JournalFold.read

    def counted(fold: JournalFold, path: object, *, to_end: bool = False) -> bool:
        before = fold.offset
        found = original(fold, path, to_end=to_end)
        reads.append(fold.offset - before)
        return found

    monkeypatch.setattr(JournalFold, "read", counted)
    for n in range(5):
        running.add_change({"file": f"note-{n}.md", "rule": "relative-dates", "state": "proposed"})
        running.note({"file": f"note-{n}.md", "message": "look"})
        (line,) = lines.runs(store)
        assert line.status == "running"
        assert line.counts["proposed"] == n + 1 and line.counts["notes"] == n + 1
    journal = (paths.run_dir(run_id) / JOURNAL).stat().st_size
    assert sum(reads) == journal and all(0 < r < journal for r in reads[1:])
    # The process's liveness is read from the manifest as saved: the journal is not folded.
    monkeypatch.setattr(Manifest, "_fold_journal", lambda self: pytest.fail("folded"))
    assert mark_interrupted(paths) == []


def test_a_rollback_point_rotated_out_shows_at_once(tmp_path: Path) -> None:
    store = _folder(tmp_path)
    done = run_dream(store, mode="rewrite")
    paths = DreamPaths(store.folder)
    lines = RunLines()
    (line,) = lines.runs(store)
    assert line.rollback_point is True
    snapshot = paths.snapshot_dir(done.run_id)
    os.rename(snapshot, snapshot.with_name(done.run_id + ".gone"))  # as rotation takes it
    (line,) = lines.runs(store)
    assert line.rollback_point is False
    assert lines.runs(store) == list_runs(store)


def test_a_run_with_no_journal_yet_keeps_the_changes_its_manifest_was_saved_with(
    tmp_path: Path,
) -> None:
    store = _folder(tmp_path)
    paths = DreamPaths(store.folder)
    run_id = "20261205T130000Z-c3d4"
    running = Manifest.start(paths, run_id, kind="dream", mode="report",
                             now=datetime(2026, 12, 5, 13, tzinfo=UTC))
    running.changes.append({"ref": "x1", "file": "note-0.md", "state": "proposed"})
    running.save()  # saved with a change, no journal line written
    assert not (paths.run_dir(run_id) / JOURNAL).exists()
    assert [c["ref"] for c in Manifest.load(paths, run_id).changes] == ["x1"]
    (line,) = RunLines().runs(store)
    assert line.counts["proposed"] == 1
