"""The link graph kept in the state folder between launches (issue 30, item 2 in a new process):
a new `sage-mem ui` finds the graph its last launch saved, resolves again only the links of the
memories that changed while it was closed (and of those naming one that came or went), and
never shows a stale link or backlink; a file it cannot trust is made again."""

from __future__ import annotations

import gc
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from support import write_memory
from test_ui import Client, memory_file
from test_ui_memory_page_first import tricky_folder

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer, api, links
from sage_mem.ui.links import build_graph
from sage_mem.ui.saved_graph import GRAPH_FILE

PAGES = ["project_b", "user_a", "gone", "reference_笔记", "notes/c", "项目", "archive/old_one"]


def _page(memory_id: str) -> str:
    return "/api/memory?id=" + urllib.parse.quote(memory_id)


def _whole_pages(store: MemoryStore) -> dict[str, Any]:
    whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
    return {memory_id: api.memory_page(store, memory_id, whole) for memory_id in PAGES}


def _launch_and_close(folder: Path) -> None:
    """One launch of the page that made its graph, then stopped (as Ctrl-C stops it)."""
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
        state: Any = server.app.app.state
        state.graph.get(store, state.feed.generations["memories"])


def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.02)


class _Counted:
    """Which memories' links are resolved, and how many whole graphs are made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.resolved: list[str] = []
        self.made: list[int] = []
        original_links, original_build = links.Resolver.links_of, links.build_graph

        def counted_links(resolver: links.Resolver, memory: Any) -> Any:
            self.resolved.append(memory.id)
            return original_links(resolver, memory)

        def counted_build(*args: Any, **kwargs: Any) -> Any:
            self.made.append(1)
            return original_build(*args, **kwargs)

        monkeypatch.setattr(links.Resolver, "links_of", counted_links)
        monkeypatch.setattr(links, "build_graph", counted_build)


def test_a_new_process_finds_the_saved_graph_and_resolves_only_what_changed_while_it_was_closed(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tricky_folder(memory_dir)
    write_memory(folder, "old_one", memory_file("About old_one", "links to [[项目]]"))
    _launch_and_close(folder)
    with MemoryStore(folder) as closed:  # while no page is open: an editor, an agent, a pull
        saved = closed.folder.state_path(*GRAPH_FILE)
        assert saved.is_file() and folder not in saved.parents  # the state folder's, only
        closed.archive("old_one", "done with it")  # [[old_one]] now names an archived memory
    write_memory(folder, "user_a", memory_file("About user_a", "Now [[notes/c]] only."))
    write_memory(folder, "gone", memory_file("Back again", "[[project_b]]"))  # [[gone]] resolves
    counted = _Counted(monkeypatch)
    with MemoryStore(folder, watch=True) as store:  # a new process: nothing kept in it
        with UiServer(store, port=0).start() as server:
            client = Client(server)
            pages = {}
            for memory_id in PAGES:
                status, body, _ = client.get(_page(memory_id))
                assert status == 200, body
                pages[memory_id] = body
            state: Any = server.app.app.state
            state.graph.get(store, state.feed.generations["memories"])
        assert counted.made == []
        # The changed, the new, and those whose links name a file name that came or went.
        assert "项目" not in counted.resolved and "other/y" not in counted.resolved
        assert {"user_a", "gone", "reference_笔记"} <= set(counted.resolved)
        monkeypatch.undo()
        assert pages == _whole_pages(store)  # no stale link or backlink
    sources = {(b["id"], b["kind"]) for b in pages["project_b"]["memory"]["backlinks"]}
    assert ("user_a", "link") not in sources and ("gone", "link") in sources
    said = pages["reference_笔记"]["memory"]["links"]
    [gone] = [link for link in said if link["written"] == "gone"]
    assert gone["id"] == "gone"
    [old] = [link for link in said if link["written"] == "old_one"]
    assert old["id"] is None and old["archived"] == "archive/old_one"


def test_the_graph_is_saved_again_as_the_page_stops_and_read_by_the_next(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
        client = Client(server)
        write_memory(folder, "user_a", memory_file("About user_a", "Now [[项目]] only."))
        _wait_for(lambda: ["user_a", "link"] in [
            [b["id"], b["kind"]] for b in client.get(_page("项目"))[1]["memory"]["backlinks"]])
        status, page, _ = client.get(_page("项目"))
        assert status == 200
    counted = _Counted(monkeypatch)
    with MemoryStore(folder) as store, UiServer(store, port=0).start() as server:
        status, again, _ = Client(server).get(_page("项目"))
        assert status == 200
        state: Any = server.app.app.state
        state.graph.get(store, state.feed.generations["memories"])
    assert counted.made == [] and counted.resolved == []  # the last launch's graph, as it ended
    assert again == page


def test_a_saved_graph_is_read_without_its_naming_tables_until_a_change_needs_them(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Who names each file name (a third of the file at 50,000 memories) is needed only to bring
    the graph up to date after a change: a new launch reads the rest for the first memory page,
    and those tables only when a memory comes, goes or changes; the pages stay right."""
    from sage_mem.ui import saved_graph

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    read: list[int] = []
    original = saved_graph._tables

    def counted(data: bytes) -> Any:
        read.append(len(data))
        return original(data)

    monkeypatch.setattr(saved_graph, "_tables", counted)
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
        client = Client(server)
        status, page, _ = client.get(_page("reference_笔记"))
        assert status == 200
        state: Any = server.app.app.state
        state.graph.get(store, state.feed.generations["memories"])
        assert read == []  # the first page and the whole graph, without them
        [link] = [each for each in page["memory"]["links"] if each["written"] == "gone"]
        assert link["id"] is None
        write_memory(folder, "gone", memory_file("Back again", "[[project_b]]"))
        _wait_for(lambda: [each["id"] for each in client.get(_page("reference_笔记"))[1]["memory"]
                           ["links"] if each["written"] == "gone"] == ["gone"])
        assert len(read) == 1
        shown = [memory_id for memory_id in PAGES if memory_id != "archive/old_one"]
        pages = {memory_id: client.get(_page(memory_id))[1] for memory_id in shown}
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert pages == {i: api.memory_page(store, i, whole) for i in shown}  # none stale


def test_a_saved_graph_that_holds_every_version_answers_without_a_resolver_over_every_id(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolver over every id (0.4 s of CPU at 50,000 memories) is made only when something
    needs it: not for the first pages of a launch whose saved graph no change touched; a
    memory's page after a change (which does need it) is still right."""
    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    made: list[int] = []
    original = links._resolver

    def counted(*args: Any) -> Any:
        made.append(1)
        return original(*args)

    monkeypatch.setattr(links, "_resolver", counted)
    shown = [memory_id for memory_id in PAGES if memory_id not in ("archive/old_one", "gone")]
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
        client = Client(server)
        before = {memory_id: client.get(_page(memory_id))[1] for memory_id in shown}
        state: Any = server.app.app.state
        state.graph.get(store, state.feed.generations["memories"])
        assert made == []
        write_memory(folder, "user_a", memory_file("About user_a", "Now [[项目]] only."))
        _wait_for(lambda: ["user_a", "link"] in [
            [b["id"], b["kind"]] for b in client.get(_page("项目"))[1]["memory"]["backlinks"]])
        after = {memory_id: client.get(_page(memory_id))[1] for memory_id in shown}
        monkeypatch.undo()
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert after == {i: api.memory_page(store, i, whole) for i in shown}
    assert before["user_a"] != after["user_a"]


def test_the_saved_graph_read_at_launch_is_never_walked_by_a_collection_again(
    memory_dir: Path,
) -> None:
    """The launch's saved graph (half a million objects at 50,000 memories, all made while
    collection was paused) is kept for good (`gc.freeze`): no collection after walks it again
    (a full one was 0.2 s of CPU, a stall of whatever the page answered then); its pages are
    still a whole graph's; and a page that stops holds it no more."""
    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    try:
        with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
            state: Any = server.app.app.state
            kept = links._kept(store)
            assert kept.saved_looked_at.wait(20)
            assert kept.cached is not None
            graph = kept.cached[0]
            assert graph is kept.saved  # (the saved one, not one made again)
            held = {id(graph.links), id(graph.backlinks), id(graph.shas),
                    *map(id, graph.links.values()), *map(id, graph.backlinks.values())}
            collected = {id(each) for each in gc.get_objects()}
            assert not held & collected
            client = Client(server)
            shown = [i for i in PAGES if i not in ("archive/old_one", "gone")]
            pages = {memory_id: client.get(_page(memory_id))[1] for memory_id in shown}
            assert state.graph.ready(state.feed.generations["memories"]) is graph
            whole = build_graph(store.list(), [m for m in store.list(archived=True)
                                               if m.archived])
            assert pages == {i: api.memory_page(store, i, whole) for i in shown}
            generation = state.feed.generations["memories"]
        # Stopped, the page lets go of the graph (kept with the store for the next launch):
        # what is kept for good holds no page's graph after it stops.
        assert state.graph.ready(generation) is None
    finally:
        gc.unfreeze()  # (the rest of the test run collects as before)


@pytest.mark.parametrize("damage", [
    pytest.param(lambda data: data[: len(data) // 2], id="cut-short"),
    pytest.param(lambda data: data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:], id="one-byte"),
    pytest.param(lambda data: b"not a graph at all", id="garbage"),
    pytest.param(lambda data: data[:8] + (99).to_bytes(4, "little") + data[12:],
                 id="another-format"),
])
def test_a_saved_graph_that_cannot_be_trusted_is_made_again_and_saved(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    with MemoryStore(folder) as store:
        saved = store.folder.state_path(*GRAPH_FILE)
    good = saved.read_bytes()
    saved.write_bytes(damage(good))
    counted = _Counted(monkeypatch)
    with MemoryStore(folder) as store:
        with UiServer(store, port=0).start() as server:
            pages = {memory_id: Client(server).get(_page(memory_id))[1]
                     for memory_id in ("project_b", "notes/c")}
            state: Any = server.app.app.state
            state.graph.get(store, state.feed.generations["memories"])
        assert counted.made == [1]
        monkeypatch.undo()
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert pages == {i: api.memory_page(store, i, whole) for i in pages}
    assert saved.read_bytes() == good  # made again, and saved again for the next launch


def test_a_memory_page_asked_as_the_launch_starts_reading_the_saved_graph_is_a_lookup(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page opened at a memory's address asks for it as the launch begins: when the launch's
    read of the saved graph had not yet taken its lock (its listing still being made), the page
    resolved the memory's links alone, a pass over every body (0.2 s of CPU at 50,000
    memories) beside that read. It is a lookup in the saved graph instead (its bucket)."""
    from sage_mem.ui.listing import Listings
    from sage_mem.ui.saved_graph import Saved

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    with MemoryStore(folder) as store:  # a new process: nothing kept in it
        listings = Listings()
        graph = links.LinkGraph(listings, Saved(lambda: store.folder.state_path(*GRAPH_FILE)))
        reading, go = threading.Event(), threading.Event()
        listing_of = Listings.get

        def slow(self: Listings, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread().name == "launch":
                reading.set()
                go.wait(5)
            return listing_of(self, *args, **kwargs)

        alone: list[str] = []
        one_memory_graph = links.one_memory_graph

        def counted(*args: Any, **kwargs: Any) -> Any:
            alone.append(args[2])
            return one_memory_graph(*args, **kwargs)

        monkeypatch.setattr(Listings, "get", slow)
        monkeypatch.setattr(links, "one_memory_graph", counted)
        launch = threading.Thread(target=graph.read_saved, args=(store, 0), name="launch")
        launch.start()
        assert reading.wait(5)
        threading.Timer(0.2, go.set).start()
        found = graph.of_one(store, 0, "project_b")
        launch.join(5)
        assert alone == []
        monkeypatch.undo()
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert api.memory_page(store, "project_b", found) == \
            api.memory_page(store, "project_b", whole)


def _archive_old_one(store: MemoryStore, folder: Path) -> None:
    store.archive("old_one", "done with it")


def _rename_project_b(store: MemoryStore, folder: Path) -> None:
    store.rename("project_b", "notes/project_bee")  # the links naming it follow it


def _edit_by_hand(store: MemoryStore, folder: Path) -> None:
    write_memory(folder, "user_a", memory_file("About user_a", "Now [[项目]] only."))


def _add_gone(store: MemoryStore, folder: Path) -> None:
    write_memory(folder, "gone", memory_file("Back again", "[[project_b]] [[notes/c]]"))


def _delete_notes_c(store: MemoryStore, folder: Path) -> None:
    (folder / "notes" / "c.md").unlink()


def _supersede_by_hand(store: MemoryStore, folder: Path) -> None:
    write_memory(folder, "café", memory_file("About café", "no link", supersedes=["项目"]))


def _editor_saves_by_rename(store: MemoryStore, folder: Path) -> None:
    temp = folder / ".项目.md.swp"
    temp.write_text(memory_file("About 项目", "[[user_a]] [x](notes/c.md)"), encoding="utf-8")
    temp.replace(folder / "项目.md")


@pytest.mark.parametrize("change", [
    pytest.param(None, id="nothing"),
    pytest.param(_edit_by_hand, id="edit"),
    pytest.param(_add_gone, id="add"),
    pytest.param(_delete_notes_c, id="delete"),
    pytest.param(_archive_old_one, id="archive"),
    pytest.param(_rename_project_b, id="rename"),
    pytest.param(_supersede_by_hand, id="supersedes"),
    pytest.param(_editor_saves_by_rename, id="editor-rename"),
])
def test_one_memorys_lookup_in_the_saved_graph_says_what_the_whole_graph_says(
    memory_dir: Path, change: Any
) -> None:
    """A memory's page of a new launch reads its one bucket of the saved graph (not the whole
    file): after any change made while the page was closed, its links and backlinks are the
    whole graph's, for every memory, live and archived."""
    from sage_mem.ui.listing import Listings
    from sage_mem.ui.saved_graph import Saved

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    if change is not None:
        with MemoryStore(folder) as closed:
            change(closed, folder)
    with MemoryStore(folder) as store:  # a new process: nothing kept in it
        listing = Listings().get(store, 0)
        saved = Saved(lambda: store.folder.state_path(*GRAPH_FILE))
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        ids = [*listing.live, *listing.archived]
        assert len(ids) >= 10
        for memory_id in ids:
            found = saved.lookup(listing, memory_id,
                                 lambda: links._resolver(listing.live.values(),
                                                         listing.archived.values()))
            assert found is not None, memory_id
            assert api.memory_page(store, memory_id, found) == \
                api.memory_page(store, memory_id, whole), memory_id


def test_a_lookup_after_an_edit_while_closed_resolves_only_the_edited_memory(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a pass over every body: a memory that changed while the page was closed is the only
    one whose links the lookup resolves again (for the page of a memory it may link to)."""
    from sage_mem.ui.listing import Listings
    from sage_mem.ui.saved_graph import Saved

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    _edit_by_hand(MemoryStore(folder, watch=False), folder)
    counted = _Counted(monkeypatch)
    with MemoryStore(folder) as store:
        listing = Listings().get(store, 0)
        saved = Saved(lambda: store.folder.state_path(*GRAPH_FILE))
        found = saved.lookup(listing, "项目", lambda: links._resolver(
            listing.live.values(), listing.archived.values()))
        assert found is not None
        page = api.memory_page(store, "项目", found)
        assert counted.resolved == ["user_a"] and counted.made == []
        monkeypatch.undo()
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert page == api.memory_page(store, "项目", whole)
    assert ["user_a", "link"] in [[b["id"], b["kind"]] for b in page["memory"]["backlinks"]]


def test_a_memory_page_asked_while_the_launch_reads_the_saved_graph_does_not_wait_for_it(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page opened at a memory's address as the launch begins is answered from its bucket of
    the saved graph while the launch's read of the whole graph is still under way (0.15 s of
    CPU at 50,000 memories, 0.4-0.6 s on two busy cores): it used to wait for that read, and
    past it resolved the memory's links alone over every body."""
    from sage_mem.ui import saved_graph
    from sage_mem.ui.listing import Listings
    from sage_mem.ui.saved_graph import Saved

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    with MemoryStore(folder) as store:  # a new process: nothing kept in it
        graph = links.LinkGraph(Listings(), Saved(lambda: store.folder.state_path(*GRAPH_FILE)))
        reading, go = threading.Event(), threading.Event()
        whole_read = saved_graph.read

        def held(*args: Any, **kwargs: Any) -> Any:
            reading.set()
            go.wait(30)
            return whole_read(*args, **kwargs)

        monkeypatch.setattr(saved_graph, "read", held)
        counted = _Counted(monkeypatch)
        alone: list[str] = []
        one_memory_graph = links.one_memory_graph
        monkeypatch.setattr(links, "one_memory_graph",
                            lambda *args, **kwargs: alone.append(args[2]) or
                            one_memory_graph(*args, **kwargs))
        launch = threading.Thread(target=graph.read_saved, args=(store, 0))
        launch.start()
        try:
            assert reading.wait(10)
            started = time.monotonic()
            found = graph.of_one(store, 0, "project_b")
            took = time.monotonic() - started
        finally:
            go.set()
            launch.join(10)
        assert took < 1.5 and alone == [] and counted.resolved == []
        monkeypatch.undo()
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert api.memory_page(store, "project_b", found) == \
            api.memory_page(store, "project_b", whole)


def test_the_launchs_read_of_the_saved_graph_waits_while_a_persons_request_is_answered(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole read goes a bucket at a time and waits between them while a request is
    answered, instead of one unmarshalling that holds the interpreter for its whole length
    (some 0.13 s at 50,000 memories) beside the page a person waits for."""
    from sage_mem.ui.audit import Answering
    from sage_mem.ui.listing import Listings
    from sage_mem.ui.saved_graph import Saved

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    monkeypatch.setattr(Answering, "LONGEST_PAUSE", 30.0)
    answering = Answering()
    with MemoryStore(folder) as store:
        graph = links.LinkGraph(Listings(), Saved(lambda: store.folder.state_path(*GRAPH_FILE)))
        with answering.answering():
            launch = threading.Thread(target=graph.read_saved,
                                      args=(store, 0, answering.pause))
            launch.start()
            launch.join(0.5)
            assert launch.is_alive() and graph.ready(0) is None
        launch.join(10)
        assert not launch.is_alive()
        made = graph.ready(0)
        assert made is not None
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert (made.links, made.backlinks, made.supersedes) == \
            (whole.links, whole.backlinks, whole.supersedes)


def test_a_lookup_in_a_garbled_bucket_is_refused_and_the_page_still_right(
    memory_dir: Path,
) -> None:
    from sage_mem.ui.listing import Listings
    from sage_mem.ui.saved_graph import Saved, _File, bucket_of

    folder = tricky_folder(memory_dir)
    _launch_and_close(folder)
    with MemoryStore(folder) as store:
        path = store.folder.state_path(*GRAPH_FILE)
        file = _File.open(path)
        assert file is not None
        with file:
            at, length, _ = file.buckets[bucket_of("project_b", len(file.buckets))]
            start = file._start
        data = bytearray(path.read_bytes())
        data[start + at + length // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        listing = Listings().get(store, 0)
        assert Saved(lambda: path).lookup(listing, "project_b", lambda: links._resolver(
            listing.live.values(), listing.archived.values())) is None
        with UiServer(store, port=0).start() as server:
            status, page, _ = Client(server).get(_page("project_b"))
        assert status == 200
        whole = build_graph(store.list(), [m for m in store.list(archived=True) if m.archived])
        assert page == api.memory_page(store, "project_b", whole)
