"""A memory's page right after a launch or a change: it never waits for the whole link graph
(made ahead of it by the warm thread, a second or more at 20,000 memories), and what it says of
the memory's links and backlinks is exactly what the whole graph says (issue 30, item 2)."""

from __future__ import annotations

import threading
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from support import write_memory
from test_ui import Client, memory_file

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer, api, links
from sage_mem.ui.audit import Answering
from sage_mem.ui.links import ARCHIVE_DIR, LinkGraph, build_graph, one_memory_graph

NFD_NAME = unicodedata.normalize("NFD", "café")


def tricky_folder(folder: Path) -> Path:
    """Links of every kind the resolver reads: by id, by file name, from the linking folder,
    `.`/`..` climbs, markdown paths (relative, `%`-encoded, `<…>`, with fragments), NFD text,
    Chinese names, links in code, self links, supersedes (of itself too), broken and archived."""
    memories = {
        "user_a": ("[[project_b]] [[c]] [x](project_b.md#top) [[user_a]]", {}),
        "project_b": ("[[notes/c]] [y](<notes/c.md>) `[[user_a]]`", {"supersedes": ["user_a"]}),
        "notes/c": ("[[.]] [[..]] [[./c]] [[../user_a]] [z](../project_b.md)", {}),
        "notes": ("[[notes/c]] [[notes/.]]", {"supersedes": ["notes"]}),
        "reference_笔记": ("[[项目]] [w](%E9%A1%B9%E7%9B%AE.md) [[gone]] [[old_one]]", {}),
        "项目": (f"[[reference_笔记]] [[{NFD_NAME}]]", {}),
        "café": ("[v](caf%C3%A9.md) no link to others", {}),
        "deep/x/y": ("[[../../user_a]] [[../x/y]] [[y]] [q](../../notes/c.md)", {}),
        "other/y": ("[[y]] [[other/y]] ```\n[[user_a]]\n```", {}),
        "feedback_plain": ("no links at all", {"supersedes": ["project_b", "missing"]}),
        "old_one": ("about to be archived", {}),
    }
    for memory_id, (body, meta) in memories.items():
        write_memory(folder, memory_id, memory_file(f"About {memory_id}", body, **meta))
    return folder


def test_one_memorys_page_says_what_the_whole_graph_says(memory_dir: Path) -> None:
    store = MemoryStore(tricky_folder(memory_dir))
    store.archive("old_one", "old")
    live = store.list()
    archived = [m for m in store.list(archived=True) if m.archived]
    whole = build_graph(live, archived)
    assert any(whole.backlinks.values())  # (the folder has backlinks to compare)
    for memory_id in [m.id for m in live] + [m.id for m in archived]:
        alone = one_memory_graph(live, archived, memory_id)
        assert api.memory_page(store, memory_id, alone) == \
            api.memory_page(store, memory_id, whole), memory_id
    assert archived and archived[0].id.startswith(ARCHIVE_DIR + "/")


def test_a_memory_page_asked_while_the_graph_is_being_made_does_not_wait_for_it(
    memory_dir: Path
) -> None:
    folder = tricky_folder(memory_dir)
    with MemoryStore(folder) as store, UiServer(store, port=0).start() as server:
        client = Client(server)
        state: Any = server.app.app.state  # (behind the guard)
        state.graph.get(store, state.feed.generations["memories"])  # the warm thread's, done
        # A change: the graph of the new generation is being made (its lock held) while
        # a person opens a memory's page.
        state.feed.bump("memories")
        answered: dict[str, Any] = {}
        with links._kept(store).lock:  # (the graph is kept with the store)
            asking = threading.Thread(
                target=lambda: answered.update(page=client.get("/api/memory?id=project_b")))
            asking.start()
            asking.join(10)
            waited = asking.is_alive()
        asking.join(30)
        assert not waited
        status, body, _ = answered["page"]
        assert status == 200
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert body == api.memory_page(store, "project_b", whole)
        assert body["memory"]["backlinks"]  # (there are some to say)


def test_a_memory_page_after_a_change_reuses_the_resolver_when_no_memory_came_or_went(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tricky_folder(memory_dir)
    store = MemoryStore(folder)
    graph = LinkGraph()
    graph.get(store, 1)
    made: list[int] = []
    original = links.Resolver.__init__

    def counted(self: links.Resolver, *args: Any) -> None:
        made.append(1)
        original(self, *args)

    monkeypatch.setattr(links.Resolver, "__init__", counted)
    write_memory(folder, "user_a", memory_file("About user_a", "Now [[project_b]] only."))
    store.refresh([str(folder / "user_a.md")])
    page = api.memory_page(store, "project_b", graph.of_one(store, 2, "project_b"))
    assert made == []
    monkeypatch.setattr(links.Resolver, "__init__", original)
    whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
    assert page == api.memory_page(store, "project_b", whole)


def test_the_graph_made_ahead_of_time_waits_while_a_persons_request_is_answered(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tricky_folder(memory_dir))
    monkeypatch.setattr(Answering, "LONGEST_PAUSE", 30.0)
    answering = Answering()
    graph = LinkGraph()
    with answering.answering():  # a list or a memory's page being answered
        making = threading.Thread(target=lambda: graph.get(store, 1, pause=answering.pause))
        making.start()
        making.join(0.5)
        assert making.is_alive() and graph.ready(1) is None
    making.join(10)
    assert not making.is_alive()
    made = graph.ready(1)
    assert made is not None
    whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
    assert (made.links, made.backlinks) == (whole.links, whole.backlinks)


def test_a_new_launch_on_an_open_store_finds_the_graph_made_and_updates_it_after_a_change(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph is kept with the store (as its index is): the page launched again on an open
    store resolves no link of a memory that did not change; after a change, only the changed."""
    folder = tricky_folder(memory_dir)
    store = MemoryStore(folder)
    LinkGraph().get(store, 0)  # the first launch's, made by its warm thread
    resolved: list[str] = []
    made: list[int] = []
    original_links, original_build = links.Resolver.links_of, links.build_graph

    def counted_links(self: links.Resolver, memory: Any) -> Any:
        resolved.append(memory.id)
        return original_links(self, memory)

    def counted_build(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return original_build(*args, **kwargs)

    monkeypatch.setattr(links.Resolver, "links_of", counted_links)
    monkeypatch.setattr(links, "build_graph", counted_build)
    again = LinkGraph()  # a new launch of the page: its own listings, the same store
    page = api.memory_page(store, "project_b", again.of_one(store, 0, "project_b"))
    assert resolved == [] and made == []
    write_memory(folder, "user_a", memory_file("About user_a", "Now [[notes/c]] only."))
    store.refresh([str(folder / "user_a.md")])
    after = api.memory_page(store, "project_b", again.of_one(store, 1, "project_b"))
    assert resolved == ["user_a"] and made == []
    monkeypatch.setattr(links.Resolver, "links_of", original_links)
    whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
    assert after == api.memory_page(store, "project_b", whole)
    assert page != after  # user_a's backlink went
