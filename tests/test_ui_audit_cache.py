"""The page's audit across launches (issue 30, item 1): what each file gave is kept in the state
folder, so the next `sage-mem ui`'s first audit reads only what changed since, and finds exactly
what a fresh audit finds.

Each `AuditState()` here is what a new launch of the page starts with.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import write_memory

from sage_mem.checks.audit import audit
from sage_mem.store import MemoryStore
from sage_mem.ui.audit import AUDIT_CACHE, AuditState

HEAD = "---\ndescription: A note\ncategory: user\n---\n\n"


@pytest.fixture
def store(memory_dir: Path) -> Iterator[MemoryStore]:
    write_memory(memory_dir, "feedback_misfiled", HEAD + "filed under user\n")
    write_memory(memory_dir, "user_crlf", HEAD.replace("\n", "\r\n") + "crlf\r\n")
    write_memory(memory_dir, "user_links", HEAD + "[[user_gone]] and [cat](user_cat_zh.md)\n")
    write_memory(memory_dir, "user_yaml", "---\ndescription: a: b\n---\n")
    write_memory(memory_dir, "notes", "no frontmatter, password=hunter2x\n")
    write_memory(memory_dir, "archive/user_old", "<<<<<<< a\n=======\n>>>>>>> b\n")
    write_memory(memory_dir, "project/api/auth", HEAD.replace("user", "project") + "See [[x]].")
    with MemoryStore(memory_dir) as opened:
        opened.regenerate_index()
        (memory_dir / "MEMORY.md").write_text(
            (memory_dir / "MEMORY.md").read_text() + "- [x](gone.md)\n")
        opened.reconcile()
        yield opened


def files_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the audit reads from now on (by their path in the folder)."""
    from sage_mem.checks import audit as audit_module

    read: list[str] = []
    original = audit_module._Audit.read

    def counted(self: Any, path: Path, rel: str) -> Any:
        read.append(rel)
        return original(self, path, rel)

    monkeypatch.setattr(audit_module._Audit, "read", counted)
    return read


def a_launch(store: MemoryStore) -> dict[str, Any]:
    """The page's audit as a new launch makes it, its findings as the CLI's audit has them."""
    data = AuditState().get(store, 0)
    return {**data, "findings": [{k: v for k, v in f.items() if k != "id"}
                                 for f in data["findings"]]}


def test_the_next_launch_reads_no_unchanged_file_and_finds_the_same(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = a_launch(store)
    assert first == audit(store).to_dict()
    assert {f["check"] for f in first["findings"]} >= {
        "category-prefix", "crlf", "broken-link", "invalid-yaml", "no-frontmatter", "secret",
        "conflict-markers", "dangling-index-entry"}
    read = files_read(monkeypatch)
    again = a_launch(store)
    assert read == ["MEMORY.md"]  # the index is read for what it lists, every time
    fresh = audit(store).to_dict()
    for name in ("findings", "count", "checked"):
        assert again[name] == fresh[name] == first[name]


def test_the_next_launch_reads_only_what_changed_and_follows_new_ids(
    store: MemoryStore, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = a_launch(store)
    assert any("[[user_gone]]" in f["message"] for f in before["findings"])
    # Meanwhile (sage-mem ui stopped): the missing memory is written, another file is fixed.
    write_memory(memory_dir, "user_gone", HEAD + "back\n")
    write_memory(memory_dir, "user_crlf", HEAD + "lf now\n")
    store.reconcile()
    read = files_read(monkeypatch)
    after = a_launch(store)
    assert sorted(read) == ["MEMORY.md", "user_crlf.md", "user_gone.md"]
    assert after == audit(store).to_dict()
    assert not any("[[user_gone]]" in f["message"] for f in after["findings"])
    assert not any(f["path"] == "user_crlf.md" for f in after["findings"])


def test_a_file_the_index_holds_in_another_version_is_read_again(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_launch(store)
    cache = store.folder.state_path(*AUDIT_CACHE)
    parts = [json.loads(line) for line in cache.read_text().split("\n")]
    for part in parts:
        for entry in part.get("files", ()):
            if entry[0] == "user_links.md":
                entry[3] = "0" * 64  # the saved results were of another version than the index's
    cache.write_text("\n".join(json.dumps(part) for part in parts))
    read = files_read(monkeypatch)
    a_launch(store)
    assert sorted(read) == ["MEMORY.md", "user_links.md"]


def test_the_cache_is_in_the_state_folder_and_a_broken_one_is_read_past(
    store: MemoryStore, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = sorted(p.relative_to(memory_dir) for p in memory_dir.rglob("*"))
    first = a_launch(store)
    cache = store.folder.state_path(*AUDIT_CACHE)
    assert cache.is_file() and store.folder.state_dir in cache.parents
    assert memory_dir not in cache.parents or store.folder.state_dir != memory_dir
    assert sorted(p.relative_to(memory_dir) for p in memory_dir.rglob("*")) == inside
    cache.write_text("{not json")
    read = files_read(monkeypatch)
    assert a_launch(store)["findings"] == first["findings"]
    assert len(read) == first["checked"]  # every file read again, nothing lost


def test_the_last_result_is_there_at_once_while_the_next_run_reads(store: MemoryStore) -> None:
    assert AuditState().known(store, 0) == {"pending": True}
    first = AuditState().get(store, 0)
    known = AuditState().known(store, 0)  # the next launch, before its own run
    assert known["stale"] is True and known["findings"] == first["findings"]
    state = AuditState()
    state.get(store, 3)
    assert state.known(store, 3)["stale"] is False
    assert state.known(store, 4)["stale"] is True  # the memories changed since


def test_a_first_audit_shows_what_the_files_read_so_far_hold_as_it_goes(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder never audited (no last result): seconds at thousands of memories, so the Audit
    tab shows the findings of the files read so far, then the whole result."""
    import threading

    from sage_mem.checks import audit as audit_module

    monkeypatch.setattr(audit_module, "PROGRESS_FILES", 2)
    reached, go = threading.Event(), threading.Event()
    original = audit_module._Audit.check_file

    def held(self: Any, path: Path, *, archived: bool) -> None:
        original(self, path, archived=archived)
        if self.checked == 6:  # well into the walk: hold it there
            reached.set()
            assert go.wait(30)

    monkeypatch.setattr(audit_module._Audit, "check_file", held)
    state = AuditState()
    assert state.known(store, 0) == {"pending": True}
    result: list[dict[str, Any]] = []
    runner = threading.Thread(target=lambda: result.append(state.get(store, 0)))
    runner.start()
    try:
        assert reached.wait(30)
        so_far = state.known(store, 0)
    finally:
        go.set()
        runner.join(30)
    assert so_far["running"] is True
    assert 4 <= so_far["checked"] <= 6 < so_far["about"] == len(store.index) + len(
        store.problems())
    final = result[0]
    # What it showed is what those files hold in the whole result (the files are read in
    # path order; the checks across files come at the end).
    shown = {(f["path"], f["check"], f["message"]) for f in so_far["findings"]}
    assert shown and shown <= {(f["path"], f["check"], f["message"]) for f in final["findings"]}
    assert so_far["count"] == len(so_far["findings"])
    known = state.known(store, 0)
    assert "running" not in known and known["findings"] == final["findings"]


def test_the_audit_waits_between_files_while_a_persons_request_is_answered(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30 item 3: an audit (a minute at 50,000 memories, in the same interpreter) shares
    the CPU with the list's answer to a change; it waits while the list, a search or a memory's
    page is answered (the page's `Answering`), and then goes on."""
    import threading

    from sage_mem.checks import audit as audit_module
    from sage_mem.ui.audit import Answering

    monkeypatch.setattr(Answering, "LONGEST_PAUSE", 60.0)
    answering = Answering()
    log: list[str] = []
    paused = threading.Event()
    original = audit_module._Audit.check_file

    def recorded(self: Any, path: Path, *, archived: bool) -> None:
        log.append("file")
        original(self, path, archived=archived)

    def pause() -> None:
        paused.set()
        answering.pause()

    monkeypatch.setattr(audit_module._Audit, "check_file", recorded)
    result: list[dict[str, Any]] = []
    with answering.answering():
        runner = threading.Thread(target=lambda: result.append(
            AuditState().get(store, 0, pause=pause)))
        runner.start()
        assert paused.wait(30)
        log.append("answered")
    runner.join(60)
    assert log[0] == "answered" and log.count("file") > 1  # none read before, all after
    found = [{k: v for k, v in f.items() if k != "id"} for f in result[0]["findings"]]
    assert found == audit(store).to_dict()["findings"]


def test_the_cache_is_read_and_written_a_few_hundred_files_at_a_time(
    store: MemoryStore, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One JSON call over the results of 50,000 files held the interpreter for up to two seconds
    at a launch, a change on disk waiting behind it: a line of JSON per SAVE_LINE files."""
    from sage_mem.checks import audit as audit_module

    monkeypatch.setattr(audit_module, "SAVE_LINE", 2)
    first = a_launch(store)
    cache = store.folder.state_path(*AUDIT_CACHE)
    lines = cache.read_text().split("\n")
    parts = [json.loads(line) for line in lines]
    assert parts[0]["version"] == audit_module.CACHE_VERSION and len(parts) > 4
    assert all(len(part.get("files", part.get("links", {}))) <= 2 for part in parts[1:])
    read = files_read(monkeypatch)
    assert a_launch(store) == first
    assert sorted(read) == ["MEMORY.md"]  # every other file's results taken from the cache


def test_a_launch_reads_the_saved_results_waiting_between_lines_for_a_persons_request(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 50,000 memories the saved results are 16 MB, 0.3-0.5 s of CPU to read, and a launch's
    audit read them beside the first memory page (which waits for the saved link graph's read,
    in the same interpreter): the read waits between two lines while a request is answered."""
    from sage_mem.checks import audit as audit_module

    monkeypatch.setattr(audit_module, "SAVE_LINE", 2)
    first = a_launch(store)
    lines = len(store.folder.state_path(*AUDIT_CACHE).read_text().split("\n"))
    loaded: list[bool] = []
    made = audit_module.FileResults.__init__

    def load(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        loaded.append(True)

    monkeypatch.setattr(audit_module.FileResults, "__init__", load)
    paused: list[bool] = []
    AuditState().get(store, 0, pause=lambda: paused.append(bool(loaded)))
    assert paused.count(False) >= lines - 1 > 4  # a pause before each line of the results
    monkeypatch.undo()
    assert a_launch(store) == first


def test_a_cache_saved_as_one_document_before_is_still_read(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = a_launch(store)
    cache = store.folder.state_path(*AUDIT_CACHE)
    parts = [json.loads(line) for line in cache.read_text().split("\n")]
    files = [entry for part in parts for entry in part.get("files", ())]
    links = {rel: found for part in parts for rel, found in part.get("links", {}).items()}
    cache.write_text(json.dumps({"version": 1, "files": files,
                                 "links": {"against": parts[0]["against"], "files": links}}))
    read = files_read(monkeypatch)
    assert a_launch(store) == first
    assert sorted(read) == ["MEMORY.md"]
