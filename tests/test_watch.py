"""The watcher: every way a file can change on disk reaches search after a short debounce.

All tests run a live watcher against real file operations and poll with
`wait_until`; the final check of every scenario is that the watched index
equals a cold reload of the folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import wait_until, write_memory
from watchdog.observers.polling import PollingObserver

from sage_mem.disk import watch
from sage_mem.disk.watch import Watcher
from sage_mem.store import MemoryStore

# watchdog warns (from its own thread) when nested folders appear faster than it
# adds watches; sage_mem.disk.watch silences it, but pytest's "error" filter goes first.
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

WORDS = [
    pytest.param("quokka", id="english"),
    pytest.param("榴莲", id="chinese"),
]


def text(description: str, body: str = "") -> str:
    return f"---\ndescription: {description}\ncategory: project\n---\n\n{body or description}\n"


def found(store: MemoryStore, query: str, memory_id: str, *, archived: bool = False) -> bool:
    return memory_id in {hit.id for hit in store.search(query, limit=500, archived=archived)}


def snapshot(store: MemoryStore) -> dict[str, str]:
    """Every indexed memory (archived too) with the sha256 it was indexed from."""
    return {m.id: m.sha256 for archived in (False, True) for m in store.list(archived=archived)}


def cold_snapshot(folder: Path) -> dict[str, str]:
    return snapshot(MemoryStore(folder))


def close_promptly(store: MemoryStore) -> set[threading.Thread]:
    """Close `store` (failing the test if close never returns); the threads alive as it returned.

    close runs in a helper thread so that a close stuck waiting for something that
    would end only much later (an hour-long reconcile period, an observer that never
    stops) fails `wait_until` instead of hanging the suite.
    """
    alive: list[set[threading.Thread]] = []

    def close() -> None:
        store.close()
        alive.append(set(threading.enumerate()) - {threading.current_thread()})

    threading.Thread(target=close, name="test-close", daemon=True).start()
    wait_until(lambda: alive)
    return alive[0]


@dataclass
class Expect:
    """What a scenario leaves: id -> a query that must find it, and ids that must be gone."""

    visible: dict[str, str] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    archived: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the memory folder, for moves in and out."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def watched(memory_dir: Path):
    """Open watched stores on the memory folder; every one is closed after the test."""
    stores: list[MemoryStore] = []

    def open_store(**options) -> MemoryStore:
        store = MemoryStore(memory_dir, watch=True, **options)
        stores.append(store)
        return store

    yield open_store
    for store in stores:
        store.close()


# editor save patterns and other ways files change


def no_setup(folder: Path, word: str) -> None:
    pass


def save_in_place(folder: Path, outside: Path, word: str) -> Expect:
    with open(folder / "user_profile.md", "w", encoding="utf-8") as handle:
        handle.write(text(f"The user keeps a {word} diary"))
    return Expect(visible={"user_profile": word})


def save_atomic_rename(folder: Path, outside: Path, word: str) -> Expect:
    tmp = folder / ".user_profile.md.tmp"
    tmp.write_text(text(f"The user keeps a {word} diary"), encoding="utf-8")
    os.replace(tmp, folder / "user_profile.md")
    return Expect(visible={"user_profile": word})


def save_like_vim(folder: Path, outside: Path, word: str) -> Expect:
    # vim probes that it may create files, keeps a swap file, and by default
    # renames the original to a backup before writing the new file.
    probe = folder / "4913"
    probe.write_bytes(b"")
    probe.unlink()
    swap = folder / ".user_profile.md.swp"
    swap.write_text(text(f"swap {word}"), encoding="utf-8")
    os.rename(folder / "user_profile.md", folder / "user_profile.md~")
    write_memory(folder, "user_profile", text(f"The user keeps a {word} diary"))
    (folder / "user_profile.md~").unlink()
    return Expect(visible={"user_profile": word})


def save_like_emacs(folder: Path, outside: Path, word: str) -> Expect:
    # emacs autosaves to #name#, locks with a dangling .#name symlink, backs up to name~.
    (folder / "#user_profile.md#").write_text(text(f"autosave {word}"), encoding="utf-8")
    os.symlink("me@host.4242:1700000000", folder / ".#user_profile.md")
    os.rename(folder / "user_profile.md", folder / "user_profile.md~")
    write_memory(folder, "user_profile", text(f"The user keeps a {word} diary"))
    return Expect(visible={"user_profile": word})


def create_new_file(folder: Path, outside: Path, word: str) -> Expect:
    write_memory(folder, "project_fresh", text(f"A fresh {word} project"))
    return Expect(visible={"project_fresh": word})


def delete_file(folder: Path, outside: Path, word: str) -> Expect:
    (folder / "user_profile.md").unlink()
    return Expect(gone=["user_profile"])


def rename_file(folder: Path, outside: Path, word: str) -> Expect:
    path = folder / "user_profile.md"
    path.write_text(text(f"The user keeps a {word} diary"), encoding="utf-8")
    os.rename(path, folder / "user_renamed.md")
    return Expect(visible={"user_renamed": word}, gone=["user_profile"])


def move_file_in(folder: Path, outside: Path, word: str) -> Expect:
    source = write_memory(outside, "project_moved", text(f"Moved {word} in from elsewhere"))
    os.rename(source, folder / "project_moved.md")
    return Expect(visible={"project_moved": word})


def move_file_out(folder: Path, outside: Path, word: str) -> Expect:
    os.rename(folder / "user_profile.md", outside / "user_profile.md")
    return Expect(gone=["user_profile"])


def move_file_to_archive(folder: Path, outside: Path, word: str) -> Expect:
    path = folder / "user_profile.md"
    path.write_text(text(f"The user keeps a {word} diary"), encoding="utf-8")
    (folder / "archive").mkdir(exist_ok=True)
    os.rename(path, folder / "archive" / "user_profile.md")
    return Expect(gone=["user_profile"], archived={"archive/user_profile": word})


def move_folder_in(folder: Path, outside: Path, word: str) -> Expect:
    team = outside / "team"
    for n in range(3):
        write_memory(team, f"deep/note_{n}", text(f"Team {word} note {n}"))
    os.rename(team, folder / "team")
    return Expect(visible={f"team/deep/note_{n}": word for n in range(3)})


def setup_subfolder(folder: Path, word: str) -> None:
    for n in range(3):
        write_memory(folder, f"team/deep/note_{n}", text(f"Team {word} note {n}"))


def move_folder_out(folder: Path, outside: Path, word: str) -> Expect:
    os.rename(folder / "team", outside / "team")
    return Expect(gone=[f"team/deep/note_{n}" for n in range(3)])


def rename_folder(folder: Path, outside: Path, word: str) -> Expect:
    os.rename(folder / "team", folder / "crew")
    return Expect(
        visible={f"crew/deep/note_{n}": word for n in range(3)},
        gone=[f"team/deep/note_{n}" for n in range(3)],
    )


def create_subfolder(folder: Path, outside: Path, word: str) -> Expect:
    (folder / "project" / "api" / "v2").mkdir(parents=True)
    for n in range(3):
        write_memory(folder, f"project/api/v2/auth_{n}", text(f"Auth {word} flow {n}"))
    return Expect(visible={f"project/api/v2/auth_{n}": word for n in range(3)})


def burst_of_200(folder: Path, outside: Path, word: str) -> Expect:
    for n in range(200):
        write_memory(folder, f"burst/note_{n:03}", text(f"Burst {word} note {n}"))
    return Expect(visible={f"burst/note_{n:03}": word for n in range(200)})


def setup_checkout(folder: Path, word: str) -> None:
    for n in range(60):
        write_memory(folder, f"project_old_{n:02}", text(f"Old release plan {n}"))


def git_checkout(folder: Path, outside: Path, word: str) -> Expect:
    git = folder / ".git"
    (git / "objects" / "ab").mkdir(parents=True)
    (git / "index.lock").write_bytes(b"lock")
    for n in range(60):
        path = folder / f"project_old_{n:02}.md"
        (git / "objects" / "ab" / f"{n:038}").write_text(text(f"object {word}"), encoding="utf-8")
        path.unlink()
        if n % 3:
            path.write_text(text(f"Checked out {word} plan {n}"), encoding="utf-8")
    for n in range(20):
        write_memory(folder, f"project_new_{n:02}", text(f"Checked out {word} plan new {n}"))
    os.replace(git / "index.lock", git / "index")
    return Expect(
        visible={
            **{f"project_old_{n:02}": word for n in range(60) if n % 3},
            **{f"project_new_{n:02}": word for n in range(20)},
        },
        gone=[f"project_old_{n:02}" for n in range(60) if not n % 3],
    )


CHANGES = [
    pytest.param(no_setup, save_in_place, id="in-place-write"),
    pytest.param(no_setup, save_atomic_rename, id="atomic-rename"),
    pytest.param(no_setup, save_like_vim, id="vim"),
    pytest.param(no_setup, save_like_emacs, id="emacs"),
    pytest.param(no_setup, create_new_file, id="new-file"),
    pytest.param(no_setup, delete_file, id="delete"),
    pytest.param(no_setup, rename_file, id="rename"),
    pytest.param(no_setup, move_file_in, id="move-file-in"),
    pytest.param(no_setup, move_file_out, id="move-file-out"),
    pytest.param(no_setup, move_file_to_archive, id="move-to-archive"),
    pytest.param(no_setup, move_folder_in, id="move-folder-in"),
    pytest.param(setup_subfolder, move_folder_out, id="move-folder-out"),
    pytest.param(setup_subfolder, rename_folder, id="rename-folder"),
    pytest.param(no_setup, create_subfolder, id="new-subfolder"),
    pytest.param(no_setup, burst_of_200, id="burst-200"),
    pytest.param(setup_checkout, git_checkout, id="git-checkout"),
]


def check(store: MemoryStore, expect: Expect) -> bool:
    queries: dict[tuple[str, bool], set[str]] = {}
    for ids, archived in ((expect.visible, False), (expect.archived, True)):
        for memory_id, query in ids.items():
            queries.setdefault((query, archived), set()).add(memory_id)
    for (query, archived), ids in queries.items():
        hits = {hit.id for hit in store.search(query, limit=1000, archived=archived)}
        if not ids <= hits:
            return False
    return not any(memory_id in store.index for memory_id in expect.gone)


def assert_no_junk(store: MemoryStore) -> None:
    def is_junk(part: str) -> bool:
        return part.startswith((".", "#")) or part.endswith("~")

    assert [i for i in snapshot(store) if any(is_junk(p) for p in i.split("/"))] == []
    assert not any(p.path.name.startswith(("#", ".")) for p in store.problems())


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize(("setup", "change"), CHANGES)
def test_change_on_disk_reaches_search(
    watched, memory_dir: Path, outside: Path, setup: Callable, change: Callable, word: str
) -> None:
    setup(memory_dir, word)
    store = watched()
    expect = change(memory_dir, outside, word)
    wait_until(lambda: check(store, expect))
    truth = cold_snapshot(memory_dir)
    wait_until(lambda: snapshot(store) == truth)
    assert_no_junk(store)


def test_old_description_stops_matching_after_an_edit(watched, memory_dir: Path) -> None:
    store = watched()
    assert found(store, "猫", "user_cat_zh")
    write_memory(memory_dir, "user_cat_zh", text("用户养了一条狗，名叫豆豆"))
    wait_until(lambda: found(store, "狗", "user_cat_zh"))
    assert not found(store, "芝麻", "user_cat_zh")


def test_continuous_stream_of_changes_still_lands(watched, memory_dir: Path) -> None:
    store = watched()
    write_memory(memory_dir, "stream/first", text("The first wombat of a stream"))
    count = iter(range(10_000))

    def keep_writing_until_visible() -> bool:
        write_memory(memory_dir, f"stream/more_{next(count)}", text("more of the stream"))
        return found(store, "wombat", "stream/first")

    wait_until(keep_writing_until_visible, timeout=5, interval=0.01)


def test_a_checkout_slower_than_the_longest_delay_still_lands_as_one_refresh(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(300):
        write_memory(memory_dir, f"co/note_{n:03}", text(f"before checkout {n}"))
    store = watched()
    calls: list[int] = []
    real_refresh = store.refresh

    def counting(paths):  # type: ignore[no-untyped-def]
        paths = list(paths)
        calls.append(len(paths))
        return real_refresh(paths)

    store.refresh = counting  # type: ignore[method-assign]
    # Ten times the default quiet (and the delays with it), so that a loaded
    # machine's stall in the writing loop is not taken for the quiet that ends a burst.
    watcher = store._watcher
    assert watcher is not None
    watcher.quiet_seconds = watcher.max_delay_seconds = 0.5
    monkeypatch.setattr(watch, "BULK_DELAY_SECONDS", 10 * watch.BULK_DELAY_SECONDS)
    # A sleep lasts at least as long as asked: the stream outlasts the longest
    # delay (2.4 times it) without a pause as long as the quiet that ends a burst.
    pause = 2.4 * watcher.max_delay_seconds / 300
    assert pause < watcher.quiet_seconds / 10
    for n in range(300):
        write_memory(memory_dir, f"co/note_{n:03}", text(f"after checkout quokka {n}"))
        time.sleep(pause)
    wait_until(lambda: len(store.search("quokka", limit=500)) == 300, timeout=10)
    # The first few events may land before the stream counts as bulk; the rest, once.
    assert len(calls) <= 2, calls
    assert sum(calls) >= 300


# polling mode (network drives)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(save_in_place, id="in-place-write"),
        pytest.param(save_atomic_rename, id="atomic-rename"),
        pytest.param(delete_file, id="delete"),
        pytest.param(move_folder_in, id="move-folder-in"),
    ],
)
def test_polling_mode_sees_changes(
    watched, memory_dir: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, change: Callable
) -> None:
    monkeypatch.setattr(watch, "POLL_SECONDS", 0.05)
    store = watched(poll=True)
    assert isinstance(store._watcher._observer, PollingObserver)
    expect = change(memory_dir, outside, "quokka")
    wait_until(lambda: check(store, expect))
    assert snapshot(store) == cold_snapshot(memory_dir)


def test_falls_back_to_polling_when_events_are_unavailable(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_inotify():
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watch, "Observer", no_inotify)
    monkeypatch.setattr(watch, "POLL_SECONDS", 0.05)
    with caplog.at_level(logging.WARNING, logger="sage_mem.disk.watch"):
        store = watched()
    assert "polling instead" in caplog.text
    assert isinstance(store._watcher._observer, PollingObserver)
    write_memory(memory_dir, "project_polled", text("A polled tapir"))
    wait_until(lambda: found(store, "tapir", "project_polled"))


@pytest.mark.parametrize("word", WORDS)
def test_a_save_made_while_the_store_loads_reaches_search_without_waiting_for_a_reconcile(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    """An editor or `git pull` saving while a server starts (its load has walked the folder,
    its watcher not yet started) must not wait for the periodic reconcile, 30 s away."""
    real_reload = MemoryStore.reload

    def reload_then_a_save(store: MemoryStore) -> None:
        real_reload(store)
        write_memory(memory_dir, "project_late", text(f"A {word} saved as the server starts"))
        write_memory(memory_dir, "user_cat_zh", text(f"用户养了一只{word}"))
        (memory_dir / "user_profile.md").unlink()

    monkeypatch.setattr(MemoryStore, "reload", reload_then_a_save)
    store = watched()
    monkeypatch.setattr(MemoryStore, "reload", real_reload)
    wait_until(lambda: found(store, word, "project_late") and "user_profile" not in store.index,
               timeout=5)
    assert store.index.get("user_cat_zh").description == f"用户养了一只{word}"
    assert snapshot(store) == cold_snapshot(memory_dir)


# what events alone cannot do


def test_reconcile_repairs_changes_made_while_nothing_watched(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir, watch=False)
    write_memory(memory_dir, "project_unseen", text("An unseen narwhal plan"))
    (memory_dir / "user_profile.md").unlink()
    write_memory(memory_dir, "user_cat_zh", text("用户养了一条狗，名叫豆豆"))
    watcher = Watcher(store, reconcile_seconds=0.2)
    watcher.start()
    try:
        wait_until(lambda: watcher.reconcile_count >= 1)
        wait_until(lambda: found(store, "narwhal", "project_unseen"))
        assert "user_profile" not in store.index
        assert found(store, "狗", "user_cat_zh")
        assert watcher.flush_count == 0
        assert snapshot(store) == cold_snapshot(memory_dir)
    finally:
        watcher.stop()


def _events_lost(monkeypatch: pytest.MonkeyPatch, watcher: Watcher) -> None:
    monkeypatch.setattr(watcher, "notify", lambda paths: None)


def test_reconcile_finds_a_folder_moved_back_whose_move_back_the_events_missed(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder moved away and back keeps its files' signatures (a rename does not touch them):
    the reconcile's walk then equals the one before, yet the index followed the first move."""
    write_memory(memory_dir, "travel/kyoto", text("A temple visit in Kyoto"))
    write_memory(memory_dir, "travel/chengdu", text("在成都吃火锅"))
    store = watched(reconcile_seconds=3600)
    watcher = store._watcher
    store.reconcile()  # the walk a reconcile compares the next with
    os.rename(memory_dir / "travel", memory_dir / "trips")
    wait_until(lambda: found(store, "Kyoto", "trips/kyoto") and "travel/kyoto" not in store.index)
    _events_lost(monkeypatch, watcher)
    os.rename(memory_dir / "trips", memory_dir / "travel")
    reconciles = watcher.reconcile_count
    watcher.request_reconcile()
    wait_until(lambda: watcher.reconcile_count > reconciles)
    assert found(store, "Kyoto", "travel/kyoto") and found(store, "火锅", "travel/chengdu")
    assert "trips/kyoto" not in store.index and "trips/chengdu" not in store.index
    assert snapshot(store) == cold_snapshot(memory_dir)


def test_reconcile_finds_what_the_events_missed_since_the_last_walk(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changes the store saw come and go between two walks (a memory it wrote, deleted by
    hand unseen) and changes it never saw (an in-place edit, a new file, a deletion)."""
    store = watched(reconcile_seconds=3600)
    watcher = store._watcher
    store.reconcile()
    store.write("project_brief", description="A brief note on the otter survey", body="otters")
    assert found(store, "otter", "project_brief")
    _events_lost(monkeypatch, watcher)
    (memory_dir / "project_brief.md").unlink()
    write_memory(memory_dir, "project_unseen", text("An unseen narwhal plan"))
    path = memory_dir / "user_cat_zh.md"
    path.write_text(path.read_text().replace("芝麻", "豆豆"))
    (memory_dir / "user_profile.md").unlink()
    reconciles = watcher.reconcile_count
    watcher.request_reconcile()
    wait_until(lambda: watcher.reconcile_count > reconciles)
    assert "project_brief" not in store.index and "user_profile" not in store.index
    assert found(store, "narwhal", "project_unseen") and found(store, "豆豆", "user_cat_zh")
    assert not found(store, "芝麻", "user_cat_zh")
    assert snapshot(store) == cold_snapshot(memory_dir)


def test_reconcile_reads_only_the_files_that_changed(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem import store as store_module

    store = MemoryStore(memory_dir, watch=False)
    read: list[str] = []
    real_load = store_module.load_memory

    def counted(folder, path, memory_id, **options):  # type: ignore[no-untyped-def]
        read.append(memory_id)
        return real_load(folder, path, memory_id, **options)

    monkeypatch.setattr(store_module, "load_memory", counted)
    assert store.reconcile() == 0 and store.reconcile() == 0
    assert read == []
    write_memory(memory_dir, "project_new", text("A new heron"))
    path = memory_dir / "user_cat_zh.md"
    path.write_text(path.read_text().replace("芝麻", "豆豆"))
    assert store.reconcile() == 2
    assert sorted(read) == ["project_new", "user_cat_zh"]
    assert store.reconcile() == 0 and len(read) == 2


def test_a_reconcile_waits_while_a_hook_is_answered_and_holds_no_lock_meanwhile(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hold_walks`: the walk pauses between its chunks (here after every file) until the
    hold is released; meanwhile a refresh (the refresh lock) goes through at once."""
    from sage_mem.search import cache

    monkeypatch.setattr(cache, "PAUSE_FILES", 1)
    store = MemoryStore(memory_dir, watch=False)
    write_memory(memory_dir, "project_heron", text("A grey heron"))
    release = store.hold_walks()
    done = threading.Event()
    walker = threading.Thread(target=lambda: (store.reconcile(), done.set()), daemon=True)
    walker.start()
    try:
        assert not done.wait(0.5)  # held at its first pause
        write_memory(memory_dir, "project_crane", text("A red-crowned crane"))
        assert store.refresh([memory_dir / "project_crane.md"]) == 1
    finally:
        release()
        release()  # a second call does nothing
    assert done.wait(10)
    walker.join()
    assert found(store, "heron", "project_heron") and found(store, "crane", "project_crane")
    assert store._holds == {}


def test_a_save_heard_during_the_watchers_reconcile_reaches_the_index_before_the_walk_ends(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The periodic walk takes a second and more at 20,000 files on a busy machine: an editor's
    save heard meanwhile is refreshed between two of its chunks, not after the whole walk (the
    open page showed such a save that much later)."""
    from sage_mem.search import cache

    real_scan = cache.scan
    walking, finish = threading.Event(), threading.Event()

    def slow_scan(folder, *, pause=None):  # type: ignore[no-untyped-def]
        walking.set()
        deadline = time.monotonic() + 20
        while not finish.is_set() and time.monotonic() < deadline:
            if pause is not None:
                pause()  # (where the real walk pauses, every PAUSE_FILES files)
            time.sleep(0.005)
        return real_scan(folder, pause=pause)

    store = watched(reconcile_seconds=3600)
    watcher = store._watcher
    assert watcher is not None
    monkeypatch.setattr(cache, "scan", slow_scan)
    watcher.request_reconcile()
    assert walking.wait(10)
    write_memory(memory_dir, "project_heron", text("A grey heron by the 池塘"))
    try:
        wait_until(lambda: found(store, "heron", "project_heron"), timeout=5)
        assert watcher.reconcile_count == 0 and not finish.is_set()  # the walk goes on
    finally:
        finish.set()
    wait_until(lambda: watcher.reconcile_count == 1)
    (memory_dir / "project_heron.md").write_text(text("A grey heron beside an egret"), "utf-8")
    wait_until(lambda: found(store, "egret", "project_heron"))  # and after it, as before
    assert snapshot(store) == cold_snapshot(memory_dir)


def test_a_hold_never_released_only_slows_a_reconcile(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem import store as store_module
    from sage_mem.search import cache

    monkeypatch.setattr(cache, "PAUSE_FILES", 4)
    monkeypatch.setattr(store_module, "HOLD_SECONDS", 0.01)
    store = MemoryStore(memory_dir, watch=False)
    write_memory(memory_dir, "project_heron", text("A grey heron"))
    threading.Thread(target=store.hold_walks, daemon=True).start()  # held by a thread gone
    wait_until(lambda: store._holds)
    assert store.reconcile() == 1
    assert found(store, "heron", "project_heron")
    release = store.hold_walks()  # the thread answering a hook may reconcile itself
    assert store.reconcile() == 0
    release()


def test_inotify_overflow_triggers_a_reconcile_at_once(watched, memory_dir: Path) -> None:
    store = watched(reconcile_seconds=3600)
    watcher = store._watcher
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost"
    )
    wait_until(lambda: watcher.reconcile_count == 1, timeout=2)


def test_failing_refresh_does_not_stop_the_watcher(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(watch, "RETRY_SECONDS", 0.1)
    store = watched()
    real_refresh = store.refresh
    calls = []

    def refresh_failing_once(paths):
        calls.append(paths)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")
        return real_refresh(paths)

    monkeypatch.setattr(store, "refresh", refresh_failing_once)
    with caplog.at_level(logging.ERROR, logger="sage_mem.disk.watch"):
        write_memory(memory_dir, "project_first", text("The first axolotl"))
        wait_until(lambda: store._watcher.error_count == 1)
        write_memory(memory_dir, "project_second", text("The second pangolin"))
        wait_until(lambda: found(store, "pangolin", "project_second"))
        wait_until(lambda: found(store, "axolotl", "project_first"))
    assert "disk on fire" in caplog.text
    assert store._watcher.running


def test_failing_event_handler_does_not_stop_the_observer(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = watched()
    watcher = store._watcher
    real_notify = watcher.notify
    failed = []

    def notify_failing_once(paths):
        if not failed:
            failed.append(paths)
            raise RuntimeError("handler bug")
        real_notify(paths)

    monkeypatch.setattr(watcher, "notify", notify_failing_once)
    with caplog.at_level(logging.ERROR, logger="sage_mem.disk.watch"):
        write_memory(memory_dir, "project_first", text("The first axolotl"))
        wait_until(lambda: failed)
        write_memory(memory_dir, "project_second", text("The second pangolin"))
        wait_until(lambda: found(store, "pangolin", "project_second"))
    assert "handler bug" in caplog.text


# the folder itself


@pytest.mark.parametrize(
    "poll", [pytest.param(False, id="events"), pytest.param(True, id="polling")]
)
def test_deleting_the_watched_folder_empties_the_index(
    watched, memory_dir: Path, monkeypatch: pytest.MonkeyPatch, poll: bool
) -> None:
    monkeypatch.setattr(watch, "POLL_SECONDS", 0.05)
    before = set(threading.enumerate())
    store = watched(poll=poll, reconcile_seconds=0.2)
    assert len(store.index) > 0
    shutil.rmtree(memory_dir)
    wait_until(lambda: len(store.index) == 0)
    write_memory(memory_dir, "project_reborn", text("A reborn phoenix folder"))
    wait_until(lambda: found(store, "phoenix", "project_reborn"))
    write_memory(memory_dir, "project_later", text("A later griffin edit"))
    wait_until(lambda: found(store, "griffin", "project_later"))
    close_promptly(store)
    wait_until(lambda: not set(threading.enumerate()) - before)  # no observer left behind


def test_moving_the_watched_folder_away_empties_the_index(
    watched, memory_dir: Path, outside: Path
) -> None:
    before = set(threading.enumerate())
    store = watched(reconcile_seconds=0.2)
    os.rename(memory_dir, outside / "memory")
    wait_until(lambda: len(store.index) == 0)
    write_memory(outside / "memory", "project_elsewhere", text("An elsewhere okapi"))
    reconciles = store._watcher.reconcile_count
    wait_until(lambda: store._watcher.reconcile_count >= reconciles + 2)
    assert len(store.index) == 0
    close_promptly(store)
    wait_until(lambda: not set(threading.enumerate()) - before)  # no observer left behind


def test_watching_through_a_symlinked_folder(tmp_path: Path, memory_dir: Path) -> None:
    link = tmp_path / "linked"
    link.symlink_to(memory_dir)
    with MemoryStore(link, watch=True) as store:
        write_memory(memory_dir, "project_linked", text("A linked ibex"))
        wait_until(lambda: found(store, "ibex", "project_linked"))


# lifecycle


def test_close_stops_every_thread_promptly(memory_dir: Path) -> None:
    before = set(threading.enumerate())
    # Nothing but close wakes the debounce thread within the hour: close must wake it.
    store = MemoryStore(memory_dir, watch=True, reconcile_seconds=3600)
    assert set(threading.enumerate()) - before
    assert close_promptly(store) - before == set()
    assert found(store, "芝麻", "user_cat_zh")  # still searchable, just no longer kept current


def test_close_does_not_wait_for_an_observer_that_is_slow_to_stop(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(memory_dir, watch=True, reconcile_seconds=3600)
    watcher = store._watcher
    debounce, observer = watcher._thread, watcher._observer
    release = threading.Event()
    real_stop = observer.stop

    def stop_when_released() -> None:  # as watchdog's stop sleeping out a move's other half
        release.wait()
        real_stop()

    monkeypatch.setattr(observer, "stop", stop_when_released)
    try:
        close_promptly(store)
        wait_until(lambda: not debounce.is_alive())
        assert observer.is_alive()  # left to finish in the background
    finally:
        release.set()
    wait_until(lambda: not observer.is_alive())


def test_watcher_threads_are_daemons(watched) -> None:
    store = watched()
    assert store._watcher._thread is not None and store._watcher._thread.daemon
    assert all(t.daemon for t in threading.enumerate() if t is not threading.main_thread())
