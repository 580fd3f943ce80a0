"""A change on disk goes before the work the page does ahead of time (issue 30, item 3 at
50,000 memories): from the moment the watcher hears it until the page's request for it is
answered, the audit, the link graph and the footer made in the background wait (at most
`Answering.EXPECT_SECONDS` when no request comes), instead of sharing the interpreter with the
store's refresh, `MEMORY.md` and the list's answer."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import write_memory
from test_ui import Client, memory_file

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer
from sage_mem.ui.audit import Answering


def _pausing(answering: Answering) -> tuple[threading.Thread, list[float]]:
    ended: list[float] = []
    thread = threading.Thread(target=lambda: (answering.pause(), ended.append(time.monotonic())))
    thread.start()
    return thread, ended


def test_background_work_waits_from_a_change_heard_until_the_request_for_it_is_answered(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Answering, "EXPECT_SECONDS", 30.0)
    monkeypatch.setattr(Answering, "LONGEST_PAUSE", 30.0)
    answering = Answering()
    answering.expect()
    waiting, ended = _pausing(answering)
    waiting.join(0.3)
    assert waiting.is_alive()  # no request yet: it waits for the one on its way
    with answering.answering():
        time.sleep(0.1)
        assert waiting.is_alive()
    waiting.join(5)
    assert not waiting.is_alive()
    started = time.monotonic()
    answering.pause()  # answered: nothing is expected any more
    assert time.monotonic() - started < 0.1


def test_with_no_request_after_a_change_background_work_goes_on_after_a_while(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Answering, "EXPECT_SECONDS", 0.3)
    answering = Answering()
    answering.expect()
    started = time.monotonic()
    answering.pause()
    took = time.monotonic() - started
    assert 0.2 < took < 5
    started = time.monotonic()
    answering.pause()
    assert time.monotonic() - started < 0.1


def test_a_change_on_disk_makes_the_pages_background_work_wait_for_the_list(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Answering, "EXPECT_SECONDS", 30.0)
    monkeypatch.setattr(Answering, "LONGEST_PAUSE", 30.0)
    write_memory(memory_dir, "user_a", memory_file("About a", "text", category="user"))
    with MemoryStore(memory_dir, watch=True) as store, UiServer(store, port=0).start() as server:
        state: Any = server.app.app.state
        client = Client(server)
        generation = state.feed.generations["memories"]
        write_memory(memory_dir, "user_b", memory_file("About b", "new"))
        deadline = time.monotonic() + 20
        while state.feed.generations["memories"] == generation:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        waiting, ended = _pausing(state.answering)
        waiting.join(0.3)
        assert waiting.is_alive()  # the audit, the graph, the footer: behind the change
        status, body, _ = client.get("/api/memories?limit=10")
        assert status == 200 and "user_b" in [m["id"] for m in body["results"]]
        waiting.join(5)
        assert not waiting.is_alive()


def _bumped(state: Any, generation: int) -> None:
    deadline = time.monotonic() + 20
    while state.feed.generations["memories"] == generation:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_memory_md_follows_a_hand_edit_once_the_list_for_it_is_answered(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Answering, "EXPECT_SECONDS", 30.0)
    monkeypatch.setattr(Answering, "LONGEST_PAUSE", 30.0)
    write_memory(memory_dir, "user_a", memory_file("About a", "text", category="user"))
    with MemoryStore(memory_dir, watch=True) as store, \
            UiServer(store, port=0, keep_catalog=True).start() as server:
        store.regenerate_index()
        state: Any = server.app.app.state
        catalog = memory_dir / "MEMORY.md"
        write_memory(memory_dir, "user_b", memory_file("Made by hand", "new", category="user"))
        _bumped(state, 0)
        time.sleep(0.5)
        assert "user_b" not in catalog.read_text()  # behind the list the change is shown in
        status, body, _ = Client(server).get("/api/memories?limit=10")
        assert status == 200 and "user_b" in [m["id"] for m in body["results"]]
        deadline = time.monotonic() + 20
        while "user_b" not in catalog.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)


def test_an_audit_after_a_memory_made_by_hand_finds_it_in_memory_md(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Answering, "EXPECT_SECONDS", 0.3)
    write_memory(memory_dir, "user_a", memory_file("About a", "text", category="user"))
    with MemoryStore(memory_dir, watch=True) as store, \
            UiServer(store, port=0, keep_catalog=True).start() as server:
        store.regenerate_index()
        state: Any = server.app.app.state
        client = Client(server)
        assert client.get("/api/audit")[0] == 200
        write_memory(memory_dir, "user_b", memory_file("Made by hand", "new", category="user"))
        _bumped(state, 0)
        status, body, _ = client.get("/api/audit")  # (no list asked for: the badge's alone)
        assert status == 200
        assert not [f for f in body["findings"] if f["check"] == "missing-from-index"], body
        assert "user_b" in (memory_dir / "MEMORY.md").read_text()


def test_background_work_waits_until_the_lists_answer_is_encoded(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list's JSON (100 rows) is made while background work still waits, not after it
    resumed: `MEMORY.md`, the graph and the audit came in between the list's answer and its
    bytes on the way to the page."""
    from starlette.responses import JSONResponse

    from sage_mem.ui import api

    write_memory(memory_dir, "user_a", memory_file("About a", "text", category="user"))
    with MemoryStore(memory_dir, watch=True) as store, UiServer(store, port=0).start() as server:
        state: Any = server.app.app.state
        seen: list[bool] = []
        original = JSONResponse.render

        def render(response: JSONResponse, content: Any) -> bytes:
            if isinstance(content, dict) and "results" in content:
                seen.append(bool(state.answering._count))
            return original(response, content)

        monkeypatch.setattr(api.JSONResponse, "render", render)
        status, body, _ = Client(server).get("/api/memories?limit=10")
        assert status == 200 and "user_a" in [m["id"] for m in body["results"]]
    assert seen == [True]
