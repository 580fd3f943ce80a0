"""What keeps sync within a few times plain git's speed, with real repositories: MEMORY.md
written from the memories' frontmatter (no search index built for it), every file both
sides changed merged in the sync's own process, the index built in the background after
a join so that the first search answers from the cache (benchmarks/sync.py times them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import write_memory
from sync_support import (
    bare_remote,
    git,
    index_is_current,
    machine,
    memory,
    sm,
    sync,
    use_private_git,
)

from sage_mem.disk.folder import MemoryFolder
from sage_mem.memory.file_format import parse_bytes
from sage_mem.search import cache
from sage_mem.search.index import Index
from sage_mem.search.scoring import Scoring
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def filled(folder: Path, count: int, start: int = 0) -> None:
    for number in range(start, start + count):
        write_memory(folder, f"project/t{number % 3}/note_{number}", memory(
            f"Note number {number} about the build", f"Body of note {number}.\n\nMore text."))


def two_machines(tmp_path: Path, notes: int) -> tuple[Path, Path]:
    """A laptop of `notes` notes pushed to a bare remote, and a desktop that joined it."""
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    filled(laptop, notes)
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    sync(desktop)
    return laptop, desktop


def two_to_receive(tmp_path: Path) -> tuple[Path, Path]:
    """Two machines of twelve notes, the laptop having pushed two revised ones the desktop
    has yet to receive."""
    laptop, desktop = two_machines(tmp_path, 12)
    for number in (1, 5):
        write_memory(laptop, f"project/t{number % 3}/note_{number}",
                     memory(f"Note {number}, revised on the laptop", "Body."))
    sync(laptop)
    return laptop, desktop


def both_sides_edited(tmp_path: Path) -> tuple[Path, Path]:
    """Two machines of one remote, each having changed another field of the same six notes."""
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    filled(laptop, 6)
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    for number in range(6):
        name = f"project/t{number % 3}/note_{number}.md"
        for folder, old, new in ((laptop, "description: Note", "description: Laptop's note"),
                                 (desktop, "More text.", "More text, from the desktop.")):
            path = folder / name
            path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return laptop, desktop


def count_indexed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many memories go into a search index (a put or a build), from now on."""
    seen: list[int] = []
    put, add_many = Index.put, Index.add_many

    def counting_put(self: Index, memory: Any) -> Any:
        seen.append(1)
        return put(self, memory)

    def counting_add_many(self: Index, memories: Any) -> Any:
        memories = list(memories)
        seen.append(len(memories))
        return add_many(self, memories)

    monkeypatch.setattr(Index, "put", counting_put)
    monkeypatch.setattr(Index, "add_many", counting_add_many)
    monkeypatch.setattr(cache, "build", lambda *a, **k: seen.append(-1) or None)
    return seen


def test_a_join_writes_memory_md_without_building_a_search_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_remote(tmp_path)
    first = machine(tmp_path / "first", remote, "first", first=True)
    filled(first, 40)
    sync(first)
    indexed = count_indexed(monkeypatch)
    joined = machine(tmp_path / "joined", remote, "joined")
    assert sum(indexed) == 0, "the join built a search index to write MEMORY.md"
    monkeypatch.undo()
    assert (joined / "MEMORY.md").read_bytes() == (first / "MEMORY.md").read_bytes()
    index_is_current(joined)


def test_a_join_into_a_new_folder_opens_no_store_and_imports_no_search_module(
    tmp_path: Path
) -> None:
    """The folder a join makes holds no memory until the checkout: its MEMORY.md is sync's
    own (`index_file.regenerate`), with no store opened for it (which imported the search
    modules and the secret patterns and saved an empty index: ~0.04 s of a join's CPU)."""
    remote = bare_remote(tmp_path)
    first = machine(tmp_path / "first", remote, "first", first=True)
    filled(first, 12)
    sync(first)
    joined = tmp_path / "joined"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sage_mem", "--dir", str(joined), "sync",
         "--remote", str(remote)], capture_output=True, text=True, check=False,
        env={**os.environ, "SAGE_MEM_DAEMON": "off"})
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "sage_mem.sync.steps" in imported  # the list is the one wanted
    assert not imported & {"sage_mem.store", "sage_mem.search.loading", "sage_mem.search.index",
                           "sage_mem.checks.credentials"}, sorted(imported)
    assert (joined / "MEMORY.md").read_bytes() == (first / "MEMORY.md").read_bytes()
    assert git(joined, "status", "--porcelain", "--ignored") == ""
    index_is_current(joined)


def test_memory_files_lists_what_a_walk_and_id_for_take(tmp_path: Path) -> None:
    """`MemoryFolder.memory_files` (a join's list of its 10,000 files, as text) names the
    files and ids `iter_files` and `id_for` name together, whatever the folder holds."""
    folder = MemoryFolder(tmp_path / "memory")
    names = ["a.md", "sub/b.md", "sub/MEMORY.md", "MEMORY.md", ".hidden.md", ".dir/c.md",
             "archive/d.md", "autodream/e.md", "sub/archive/f.md", "#g.md#", "h.md~", "i.txt",
             "j_BACKUP_123.md", "cafe\u0301.md", "deep/er/k.md", "l.md.swp", "sub/.m.md"]
    for name in names:
        path = folder.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---\ndescription: x\n---\n", encoding="utf-8")
    os.symlink(folder.root / "sub", folder.root / "linked")  # a folder link: never walked
    os.symlink(folder.root / "a.md", folder.root / "n.md")  # a file link: listed, read checked
    expected = [(str(path), path.relative_to(folder.root).as_posix(), memory_id)
                for path in folder.iter_files() if (memory_id := folder.id_for(path))]
    assert list(folder.memory_files()) == expected
    assert {memory_id for _, _, memory_id in expected} == {
        "a", "sub/b", "sub/MEMORY", "deep/er/k", "caf\u00e9", "n", "sub/archive/f"}


def test_the_frontmatter_cache_of_tag_lists_empties_only_itself(tmp_path: Path) -> None:
    """The fast path's tables are emptied each on its own when full: a folder of thousands of
    different tag lists no longer empties the table of its few dates (each date then
    resolved again), nor that of its keys."""
    from sage_mem.memory import file_format

    file_format._simple_mapping("created: 2026-07-12\n")
    assert "2026-07-12" in file_format._plains
    for number in range(1, file_format._REMEMBERED + 10):  # lists of 13 tags, all different
        tags = [f"x{bit}" for bit in range(13) if number >> bit & 1]
        assert file_format._simple_mapping(f"tags: [{', '.join(tags)}]\n") == {"tags": tags}
    assert len(file_format._values) <= file_format._REMEMBERED
    assert "2026-07-12" in file_format._plains and "tags" in file_format._keys
    # Each tag is resolved once, as a plain scalar is, whatever list it is in.
    assert {f"x{bit}" for bit in range(13)} <= file_format._plains.keys()


def test_the_plain_paths_a_join_skips_checking_are_those_the_check_passes(
    tmp_path: Path
) -> None:
    """The link-and-path check of a remote's tree (`refuse_unsafe`) passes a regular file of a
    plain path on a few tests of its text (`_plainly_safe`): whatever it passes, the whole
    check (`unsafe_entry`) passes too, and what the check refuses it sends there."""
    from sage_mem.sync.git import Git
    from sage_mem.sync.steps import _plainly_safe, _Sync

    root = tmp_path / "memory"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    run = _Sync(MemoryFolder(root), Git(root), lambda _: None)
    blob = subprocess.run(["git", "-C", str(root), "hash-object", "-w", "--stdin"], input=b"",
                          capture_output=True, check=True).stdout.decode().strip()  # empty
    refused = ["..", "../x.md", "a/../b.md", "a/./b.md", ".", ".git/config", ".GIT/x",
               "a/.git/b", ".git./x", ".git /x", "a//b.md", "/abs.md", "a/", "a\\..\\b.md",
               "MEMORY.md/x", "archive", "autodream", ".gitignore/x", "x" * 256,
               "d/" + "é" * 128 + ".md"]
    paths = [*refused, "a.md", "project/t07/note_1.md", "archive/x.md", "日本/メモ.md",
             "x" * 63 + ".md", ".gitattributes", "sub/.gitattributes", "MEMORY.md",
             "autodream/x.md", "é" * 63 + "/" + "é" * 64 + ".md", "GIT~1/config", ".hidden.md"]
    passed = 0
    for path in paths:
        for mode in ("100644", "100755", "120000", "160000", "100664"):
            if _plainly_safe(mode, path):
                passed += 1
                assert run.unsafe_entry(mode, path, blob) is None, (mode, path)
            if path in refused or mode in ("120000", "160000"):
                assert not _plainly_safe(mode, path), (mode, path)
                assert run.unsafe_entry(mode, path, blob) is not None, (mode, path)
    assert passed >= 10  # the common files do take the short way


def test_a_sync_reads_only_the_memories_changed_since_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_remote(tmp_path)
    first = machine(tmp_path / "first", remote, "first", first=True)
    filled(first, 30)
    sync(first)
    from sage_mem.sync import index_file

    read: list[str] = []
    real = index_file.listed_of
    monkeypatch.setattr(index_file, "listed_of", lambda raw, memory_id, path: read.append(
        str(path)) or real(raw, memory_id, path))
    sync(first)
    assert read == []
    write_memory(first, "project/t1/note_1", memory("Note one, renamed by hand", "Body."))
    sync(first)
    assert [Path(p).name for p in read] == ["note_1.md"]
    assert "Note one, renamed by hand" in (first / "MEMORY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("shape", [
    pytest.param("cut", id="over-200-memories-baselines-and-retrievals"),
    pytest.param("odd", id="no-description-bad-yaml-symlink-chinese"),
    pytest.param("owned", id="a-persons-memory-md-with-a-region"),
])
def test_memory_md_after_a_sync_is_what_the_store_writes(tmp_path: Path, shape: str) -> None:
    folder = tmp_path / "memory"
    status, _, err = sm(folder, "init", "--git")
    assert status == 0, err
    if shape == "cut":
        filled(folder, 230)
        for number in (5, 17):
            write_memory(folder, f"user_base_{number}", memory(
                f"Baseline {number}", "Always.", baseline="true", baselinePriority=str(number)))
        MemoryFolder(folder).state_path("stats.json").write_text(
            '{"project/t2/note_200": {"retrievals": 9}}', encoding="utf-8")
    elif shape == "odd":
        filled(folder, 3)
        write_memory(folder, "user_plain", "No frontmatter here, a first line only.\n")
        write_memory(folder, "user_broken", "---\ndescription: [unclosed\n---\nbody\n")
        write_memory(folder, "user_猫", memory("猫叫芝麻，三岁", "橘猫。", name="芝麻"))
        os.symlink("user_猫.md", folder / "user_link.md")
    else:
        filled(folder, 4)
        (folder / "MEMORY.md").write_text("# My own index\n\n- [Mine](project/t0/note_0.md)"
                                          " — the one I keep\n", encoding="utf-8")
    sync(folder, online=False)
    index_is_current(folder)
    if shape == "owned":
        assert (folder / "MEMORY.md").read_text(encoding="utf-8").startswith("# My own index\n")


def assert_both_sides_merged(desktop: Path, result: dict) -> None:  # type: ignore[type-arg]
    """Each of `both_sides_edited`'s six notes holds the laptop's description and the
    desktop's body, and the sync reported no conflict."""
    assert result["conflicts"] == []
    for number in range(6):
        parsed = parse_bytes((desktop / f"project/t{number % 3}/note_{number}.md").read_bytes())
        assert str(parsed.meta["description"]).startswith("Laptop's note")
        assert "from the desktop" in parsed.body


def test_files_changed_on_both_sides_are_merged_without_a_driver_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "driver-ran"
    # The registered driver records that git started it (and fails, leaving the path to sync).
    monkeypatch.setattr("sage_mem.sync.git.driver_command",
                        lambda: f"echo %P >> {marker}; exit 1")
    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    result = sync(desktop)
    assert not marker.exists(), marker.read_text()
    assert_both_sides_merged(desktop, result)
    assert git(desktop, "status", "--porcelain") == ""


def no_driver_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The driver sync's own merge names records each start (and merges nothing, as `false`)."""
    marker = tmp_path / "no-driver-ran"
    monkeypatch.setattr("sage_mem.sync.steps.NO_DRIVER", f"echo %P >> {marker}; exit 1")
    return marker


def test_the_merge_of_files_changed_on_both_sides_starts_no_process_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = no_driver_recorded(tmp_path, monkeypatch)
    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    result = sync(desktop)
    assert not marker.exists(), marker.read_text()  # git started no driver, not even `false`
    assert_both_sides_merged(desktop, result)
    assert not (desktop / ".git" / "info" / "attributes").exists()  # gone once the merge ran
    assert git(desktop, "status", "--porcelain") == ""


def synced_over_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: bytes
) -> tuple[Path, Path, Path, dict]:  # type: ignore[type-arg]
    """The desktop's sync of `both_sides_edited` with `.git/info/attributes` holding `held`
    before it: the driver's record, the desktop, that file, the sync's result."""
    marker = no_driver_recorded(tmp_path, monkeypatch)
    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    attributes = desktop / ".git" / "info" / "attributes"
    attributes.parent.mkdir(exist_ok=True)
    attributes.write_bytes(held)
    return marker, desktop, attributes, sync(desktop)


def test_a_persons_own_git_attributes_are_kept_through_a_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker, desktop, own, result = synced_over_attributes(tmp_path, monkeypatch,
                                                          b"*.png binary\n")
    assert own.read_bytes() == b"*.png binary\n"
    assert len(marker.read_text().splitlines()) == 6  # the driver that merges nothing, as before
    assert_both_sides_merged(desktop, result)


def test_the_attributes_a_killed_merge_left_go_with_the_next_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.sync.merge_later import MERGE_LATER

    marker, desktop, left, result = synced_over_attributes(tmp_path, monkeypatch, MERGE_LATER)
    assert not left.exists()
    assert not marker.exists()
    assert result["conflicts"] == []


def test_the_attributes_a_killed_merge_left_go_with_the_next_fast_forward(
    tmp_path: Path
) -> None:
    from sage_mem.sync.merge_later import MERGE_LATER

    laptop, desktop = two_to_receive(tmp_path)
    left = desktop / ".git" / "info" / "attributes"
    left.parent.mkdir(exist_ok=True)
    left.write_bytes(MERGE_LATER)
    assert sorted(sync(desktop)["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    assert not left.exists()  # a plain `git pull` after it merges with the driver again


def test_a_cache_far_behind_the_folder_is_rebuilt_not_brought_along(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    MemoryStore(folder, watch=False)  # the cache of an empty folder, as a join's first step
    filled(folder, 300)
    store = MemoryStore(folder, watch=False)
    assert store.loaded is not None and store.loaded.how == "built"
    assert len(store.index) == 300
    filled(folder, 2, start=300)  # a few: still a warm start
    store = MemoryStore(folder, watch=False)
    assert store.loaded is not None and store.loaded.how == "cache" and len(store.index) == 302


def test_a_build_only_daemon_waits_out_the_racy_window(tmp_path: Path) -> None:
    from sage_mem.agents.daemon import run_daemon

    folder = tmp_path / "memory"
    filled(folder, 5)  # just written, as by a checkout
    started = time.monotonic()
    assert run_daemon(folder, build_only=True) == 0
    assert time.monotonic() - started >= 1.0
    found = cache.load(MemoryFolder(folder), scoring=Scoring())
    assert found is not None and len(found.index) == 5
    assert found.racy == frozenset(), "the next process would read these files again"


@pytest.mark.parametrize("memories,daemon,started", [
    pytest.param(80, "1", True, id="a-join-of-80"),
    pytest.param(10, "1", False, id="a-join-of-10-a-search-reads-them"),
    pytest.param(80, "0", False, id="SAGE_MEM_DAEMON=0"),
])
def test_a_join_starts_the_index_build_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memories: int, daemon: str, started: bool,
) -> None:
    remote = bare_remote(tmp_path)
    first = machine(tmp_path / "first", remote, "first", first=True)
    filled(first, memories)
    sync(first)
    spawned: list[list[str]] = []
    monkeypatch.setattr("sage_mem.agents.daemon_start.spawn_detached",
                        lambda argv, lock=None, state_dir=None: spawned.append(argv) or 0)
    monkeypatch.setenv("SAGE_MEM_DAEMON", daemon)
    joined = machine(tmp_path / "joined", remote, "joined")
    if started:
        assert len(spawned) == 1 and spawned[0][-2:] == ["daemon", "--build-only"]
        assert spawned[0][spawned[0].index("--dir") + 1] == str(joined)
    else:
        assert spawned == []
    sync(joined)  # nothing brought in: nothing started again
    assert len(spawned) == (1 if started else 0)


def test_the_merge_driver_git_runs_starts_without_the_cli(tmp_path: Path) -> None:
    versions = []
    for name, text in (("base", "one\n"), ("ours", "one\ntwo\n"), ("theirs", "zero\none\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
        versions.append(str(tmp_path / name))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sage_mem", "merge-driver", *versions,
         "notes.txt"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ours").read_text(encoding="utf-8") == "zero\none\ntwo\n"
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert "click" not in imported and "sage_mem.commands" not in imported


def sync_benchmark() -> Any:
    """`benchmarks/sync.py` as a module."""
    import importlib.util

    from support import ROOT

    spec = importlib.util.spec_from_file_location("sync_bench", ROOT / "benchmarks" / "sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sync_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_the_sync_benchmark_gives_the_ratio_of_the_medians_and_each_rounds_spread() -> None:
    bench = sync_benchmark()
    ours = [{"cpu": 0.3, "wall": 0.4}, {"cpu": 0.2, "wall": 0.9}, {"cpu": 0.5, "wall": 0.5}]
    theirs = [{"cpu": 0.1, "wall": 0.2}, {"cpu": 0.1, "wall": 0.1}, {"cpu": 0.2, "wall": 0.25}]
    found = bench.compared(ours, theirs)
    assert found["sage-mem"]["cpu"] == pytest.approx(0.3)  # each side's median
    assert found["sage-mem"]["wall"] == pytest.approx(0.5)
    assert found["git"]["cpu"] == pytest.approx(0.1) and found["git"]["wall"] == pytest.approx(0.2)
    ratio = found["ratio"]
    assert ratio["cpu"] == pytest.approx(3.0) and ratio["wall"] == pytest.approx(2.5)
    # Each round's sage-mem CPU over git's CPU of the same round, not of another one.
    assert ratio["rounds"] == pytest.approx([3.0, 2.0, 2.5])
    assert (ratio["median"], ratio["min"], ratio["max"]) == pytest.approx((2.5, 2.0, 3.0))
    line = bench.row("receive", found)
    assert "| 3 | 0.300 s (0.500 s) | 0.100 s (0.200 s) | **3.00×** (2.50×) |" in line
    assert line.endswith("| 2.50× (2.00–3.00×) |")
    with pytest.raises(ValueError):
        bench.compared(ours, theirs[:2])


def test_the_sync_benchmark_alternates_which_side_runs_first() -> None:
    bench = sync_benchmark()
    calls: list[str] = []

    def side(name: str) -> Any:
        return lambda number: calls.append(f"{name}{number}") or {"cpu": 1.0, "wall": 1.0}

    runs = bench.alternated(3, {"sage-mem": side("s"), "git": side("g")},
                            lambda number: calls.append(f"prepare{number}"))
    assert calls == ["prepare0", "s0", "g0", "prepare1", "g1", "s1", "prepare2", "s2", "g2"]
    assert len(runs["sage-mem"]) == len(runs["git"]) == 3


@pytest.mark.scale
def test_the_sync_benchmark_runs_every_case_against_git(tmp_path: Path) -> None:
    import statistics

    from support import ROOT

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sync.py"), "--size", "120", "--json",
         "--quiet", "--rounds", "2", "--work", str(tmp_path / "work")],
        capture_output=True, text=True, check=False, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cases = json.loads(done.stdout)["cases"]
    compared = [cases["join"]["git"], cases["join"]["git --no-local"],
                *(cases[case] for case in ("idle", "receive 10", "both 100"))]
    for found in compared:
        assert found["sage-mem"]["cpu"] > 0 and found["git"]["cpu"] > 0
        # The ratio of the two sides' medians over the rounds, each round's beside it.
        ours = statistics.median(run["cpu"] for run in found["sage-mem"]["runs"])
        theirs = statistics.median(run["cpu"] for run in found["git"]["runs"])
        assert found["ratio"]["cpu"] == pytest.approx(ours / theirs)
        assert found["ratio"]["min"] <= found["ratio"]["median"] <= found["ratio"]["max"]
    # The join and `git clone` three times each in turn (one run says little); the other
    # cases as many rounds as asked.
    assert len(cases["join"]["git"]["sage-mem"]["runs"]) == 3
    assert len(cases["join"]["git"]["git"]["runs"]) == 3
    assert len(cases["join"]["git --no-local"]["git"]["runs"]) == 3
    for case in ("idle", "receive 10", "both 100"):
        assert len(cases[case]["ratio"]["rounds"]) == 2
    # The first search right after the join, once its background build ended, the next one,
    # and a cold start in a copy that did not come by sync.
    searches = cases["first search"]
    for key in ("right after", "sage-mem", "warm", "cold"):
        assert searches[key]["cpu"] > 0
    # Right after the join against the cache's time and against a cold start.
    for against in ("warm", "cold"):
        for key in ("cpu", "wall"):
            assert searches["ratio"][against][key] == pytest.approx(
                searches["right after"][key] / searches[against][key])


def git_commands_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that writes each command line it runs to the returned file."""
    real = shutil.which("git")
    assert real is not None
    wrapper = tmp_path / "git-wrapper"
    wrapper.mkdir()
    log = tmp_path / "git-commands.log"
    script = wrapper / "git"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n',
                      encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper}{os.pathsep}{os.environ['PATH']}")
    return log


def counting_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each walk of the memory folder (`iter_files`, `memory_files`) and each memory file
    parsed, from now on."""
    from sage_mem.sync import index_file

    seen: list[str] = []
    listed = index_file.listed_of

    def counting(walk: Any) -> Any:
        def counting_walk(self: MemoryFolder, *args: Any, **kwargs: Any) -> Any:
            seen.append("walk")
            return walk(self, *args, **kwargs)
        return counting_walk

    for name in ("iter_files", "memory_files"):
        monkeypatch.setattr(MemoryFolder, name, counting(getattr(MemoryFolder, name)))
    monkeypatch.setattr(index_file, "listed_of", lambda raw, memory_id, path: seen.append(
        f"read {path}") or listed(raw, memory_id, path))
    return seen


def test_a_sync_with_nothing_changed_runs_a_handful_of_git_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    filled(laptop, 12)
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    sync(desktop)
    log = git_commands_of(tmp_path, monkeypatch)
    assert sync(desktop)["pulled"] == []
    commands = log.read_text(encoding="utf-8").splitlines()
    # A fetch and a status as plain git's own, the few reads that say which branch and
    # commit (where the repository is, HEAD and its branch: one `rev-parse`), the config,
    # the remote's branch: not ~26 commands of ~3 ms each before the fetch even starts.
    assert len(commands) <= 5, "\n".join(commands)
    assert sum(" fetch " in f" {c} " for c in commands) == 1


def test_a_receive_fast_forwards_with_a_handful_of_git_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = two_to_receive(tmp_path)
    sync(desktop)  # the stamp of what MEMORY.md was made of, as a receive finds it
    for number in (2, 7):
        write_memory(laptop, f"project/t{number % 3}/note_{number}",
                     memory(f"Note {number}, revised again", "Body."))
    sync(laptop)
    before = git(desktop, "rev-parse", "HEAD").strip()
    log = git_commands_of(tmp_path, monkeypatch)
    assert sorted(sync(desktop)["pulled"]) == ["project/t1/note_7", "project/t2/note_2"]
    commands = log.read_text(encoding="utf-8").splitlines()
    # `rev-parse HEAD...origin/main` prints the remote's commit and the merge base: no
    # `merge-base`, no second `rev-parse` of the branch (each a process, ~3 ms).
    assert not [c for c in commands if " merge-base " in f" {c} "], commands
    # A fast-forward of memories is written by sync itself (a save made meanwhile is never
    # written over): both versions read with one `cat-file --batch`, staged with one
    # `update-index`, the branch moved with one `update-ref`; no `git merge` and its stat
    # of every file (~25 ms at 10,000: the status before the fetch made it), no checkout.
    assert not [c for c in commands if " merge " in f" {c} "], commands
    assert not [c for c in commands if " read-tree " in f" {c} "], commands
    assert sum(" cat-file --batch " in f" {c} " for c in commands) == 1, commands
    # The sizes of what the remote brings, asked before anything is read (a file over what
    # sync reads is refused): one `--batch-check`, 1.6 ms of CPU.
    assert sum(" cat-file --batch-check=" in f" {c}" for c in commands) == 1, commands
    assert sum(" update-ref " in f" {c} " for c in commands) == 1, commands
    assert sum(" rev-parse " in f" {c} " for c in commands) == 2, commands  # where, both
    assert len(commands) <= 10, "\n".join(commands)
    assert "Note 7, revised again" in (desktop / "MEMORY.md").read_text(encoding="utf-8")
    assert git(desktop, "status", "--porcelain") == ""
    assert git(desktop, "rev-parse", "HEAD").strip() == git(
        laptop, "rev-parse", "HEAD").strip()
    assert git(desktop, "rev-parse", "HEAD~1").strip() == before
    index_is_current(desktop)


def test_a_sync_with_nothing_changed_walks_no_folder_and_reads_no_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    filled(laptop, 12)
    sync(laptop)
    sync(laptop)
    seen = counting_walks(monkeypatch)
    assert sync(laptop)["committed"] == []
    assert seen == [], "MEMORY.md was made again though nothing changed"


def test_a_sync_that_receives_changes_reads_only_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = two_to_receive(tmp_path)
    seen = counting_walks(monkeypatch)
    assert sorted(sync(desktop)["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    # MEMORY.md made once, after the merge (nothing had changed here before it), from the
    # two files that came and what the last sync knew of the rest: no walk of the folder,
    # none looking for the conflict siblings the merge made.
    assert seen.count("walk") == 0, seen
    assert sorted(Path(s).name for s in seen) == ["note_1.md", "note_5.md"]
    monkeypatch.undo()
    assert "Note 5, revised on the laptop" in (desktop / "MEMORY.md").read_text(encoding="utf-8")
    index_is_current(desktop)


def test_a_receive_writes_the_rows_it_changed_not_the_whole_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record of what was read (`catalog.entries`, 10,000 rows) is not written again for
    a receive of a few files: its changes go to `catalog.changes`, read with it by the next
    sync; once they are many the record is written whole."""
    from sage_mem.sync import index_file

    laptop, desktop = two_to_receive(tmp_path)
    entries = MemoryFolder(desktop).state_path(index_file.ENTRIES)
    changes = entries.with_name(index_file.CHANGES)
    before = entries.read_bytes()
    assert sorted(sync(desktop)["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    assert entries.read_bytes() == before and changes.exists()
    index_is_current(desktop)
    for number in (2, 7):
        write_memory(laptop, f"project/t{number % 3}/note_{number}",
                     memory(f"Note {number}, revised again", "Body."))
    sync(laptop)
    seen = counting_walks(monkeypatch)
    sync(desktop)
    assert sorted(Path(s).name for s in seen) == ["note_2.md", "note_7.md"], seen
    assert entries.read_bytes() == before
    monkeypatch.undo()
    use_private_git(tmp_path, monkeypatch)
    index_is_current(desktop)
    # The record with its changes is the one a walk of the folder makes.
    kept: dict[str, Any] = {}
    inputs: dict[str, str] = {}
    folder = MemoryFolder(desktop)
    index_file._memories(folder, {}, {}, kept, inputs)
    assert index_file._load_saved(folder).rows == index_file._Rows.of(kept, inputs)
    # Many changes: the record written whole, its changes gone.
    monkeypatch.setattr(index_file, "_MOST_CHANGES", 1)
    write_memory(laptop, "project/t0/note_3", memory("Note 3, revised", "Body."))
    sync(laptop)
    sync(desktop)
    assert entries.read_bytes() != before and not changes.exists()
    index_is_current(desktop)
    write_memory(laptop, "project/t1/note_4", memory("Note 4, revised", "Body."))
    sync(laptop)
    seen = counting_walks(monkeypatch)
    sync(desktop)
    assert [Path(s).name for s in seen] == ["note_4.md"], seen


@pytest.mark.parametrize("record", [
    pytest.param("version-2", id="the-record-of-the-sage-mem-before"),
    pytest.param("garbage", id="not-marshal"),
    pytest.param("cut", id="cut-short"),
    pytest.param("unordered", id="rows-out-of-order"),
    pytest.param("short-column", id="columns-of-two-lengths"),
    pytest.param("not-text", id="a-path-not-text"),
    pytest.param("bad-fields", id="fields-of-another-shape"),
    pytest.param("changes-garbage", id="its-changes-not-marshal"),
    pytest.param("changes-elsewhere", id="its-changes-written-against-another-record"),
    pytest.param("changes-bad-rows", id="its-changes-rows-out-of-order"),
])
def test_a_damaged_or_older_record_costs_a_walk_never_a_wrong_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str
) -> None:
    """`catalog.entries` is a cache: the record of the version before is taken up (a receive
    still reads only what came), anything else damaged costs a read of every memory, and
    MEMORY.md is what `sage-mem index` writes either way."""
    import marshal

    from sage_mem.sync import index_file

    laptop, desktop = two_to_receive(tmp_path)
    entries = MemoryFolder(desktop).state_path(index_file.ENTRIES)
    version, (ids, paths, blobs, fields), complete, token = marshal.loads(entries.read_bytes())
    assert version == 3 and complete is True and len(paths) == 12
    changes = entries.with_name(index_file.CHANGES)
    if record.startswith("changes"):
        # A token of its own, which the stamp names: the record is read with its changes.
        stamp = json.loads(entries.with_name(index_file.STAMP).read_text(encoding="utf-8"))
        stamp["token"] = "t2"
        entries.with_name(index_file.STAMP).write_text(json.dumps(stamp), encoding="utf-8")
        rows = (ids[:1], paths[:1], blobs[:1], fields[:1])
        if record == "changes-bad-rows":
            rows = (ids[:2][::-1], paths[:2][::-1], blobs[:2][::-1], fields[:2][::-1])
        against = "another" if record == "changes-elsewhere" else token
        changes.write_bytes(b"not marshal" if record == "changes-garbage" else marshal.dumps(
            (3, against, "t2", True, [paths[0]], rows)))
        data = entries.read_bytes()
    elif record == "version-2":
        kept = {f"{b}\0{p}": f for p, b, f in zip(paths, blobs, fields, strict=True) if f}
        data = marshal.dumps((2, kept, dict(zip(paths, blobs, strict=True)), token))
    elif record == "garbage":
        data = b"not a record"
    elif record == "cut":
        data = entries.read_bytes()[:-100]
    else:
        if record == "unordered":
            ids = ids[::-1]
        elif record == "short-column":
            blobs = blobs[:-1]
        elif record == "not-text":
            paths = [paths[0].encode(), *paths[1:]]
        else:
            fields = [(f[0], f[1]) if f else f for f in fields]
        data = marshal.dumps((3, (ids, paths, blobs, fields), complete, token))
    entries.write_bytes(data)
    seen = counting_walks(monkeypatch)
    assert sorted(sync(desktop)["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    if record == "version-2":
        assert sorted(Path(s).name for s in seen) == ["note_1.md", "note_5.md"], seen
    else:
        assert "walk" in seen, seen
    monkeypatch.undo()
    assert "Note 5, revised on the laptop" in (desktop / "MEMORY.md").read_text(encoding="utf-8")
    index_is_current(desktop)


@pytest.mark.parametrize("change", [
    pytest.param("hand-commit", id="a-memory-committed-by-hand"),
    pytest.param("during", id="a-memory-saved-while-sync-wrote-memory-md"),
    pytest.param("retrievals", id="retrieval-counts-that-order-a-cut-index"),
    pytest.param("ignored", id="a-memory-git-ignores"),
])
def test_memory_md_follows_a_change_no_git_status_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Guard of the nothing-changed path (these pass on the code before it too): what
    MEMORY.md is made from can change while `git status` stays clean."""
    folder = tmp_path / "memory"
    status, _, err = sm(folder, "init", "--git")
    assert status == 0, err
    filled(folder, 130 if change == "retrievals" else 6)
    if change == "ignored":
        (folder / ".gitignore").write_text(".*.tmp\nprivate/\n", encoding="utf-8")
    sync(folder, online=False)
    sync(folder, online=False)
    if change == "hand-commit":
        write_memory(folder, "project/t1/note_1", memory("Retitled by hand", "Body."))
        git(folder, "commit", "-q", "-am", "by hand")
    elif change == "during":
        from sage_mem.sync import steps

        real = steps.regenerate

        def then_saved(*args: Any, **kwargs: Any) -> Any:
            done = real(*args, **kwargs)
            if not (folder / "saved").exists():  # an editor's save, once, just after it
                (folder / "saved").write_text("", encoding="utf-8")
                write_memory(folder, "project/t1/note_1", memory("Saved meanwhile", "Body."))
            return done

        write_memory(folder, "project/t2/note_2", memory("Changed before", "Body."))
        monkeypatch.setattr(steps, "regenerate", then_saved)
        sync(folder, online=False)
        monkeypatch.undo()
        use_private_git(tmp_path, monkeypatch)
    elif change == "retrievals":
        MemoryFolder(folder).state_path("stats.json").write_text(
            '{"project/t2/note_128": {"retrievals": 9}}', encoding="utf-8")
    else:
        write_memory(folder, "private/user_own", memory("My own note", "Mine."))
    assert git(folder, "status", "--porcelain") in ("", "?? saved\n")
    sync(folder, online=False)
    index_is_current(folder)


@pytest.mark.parametrize("change", [
    "new", "deleted", "renamed", "archived", "broken", "new-folder", "local-and-remote",
    "linked-folder", "linked-file", "nfd-twin",
])
def test_memory_md_made_from_what_changed_is_what_a_walk_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """MEMORY.md made from the files that differ from the last sync's commit (no walk) is
    byte for byte what `sage-mem index` makes, whatever came."""
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    filled(laptop, 8)
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    sync(desktop)
    sync(desktop)
    if change == "new":
        write_memory(laptop, "user_new", memory("A new one", "Body."))
    elif change == "deleted":
        (laptop / "project/t1/note_1.md").unlink()
    elif change == "renamed":
        git(laptop, "mv", "project/t1/note_1.md", "project/t1/note_one.md")
    elif change == "archived":
        status, _, err = sm(laptop, "archive", "project/t2/note_2", "--reason", "done")
        assert status == 0, err
    elif change == "broken":
        (laptop / "project/t0/note_3.md").write_text("---\ndescription: [x\n---\nb\n",
                                                     encoding="utf-8")
    elif change == "new-folder":
        write_memory(laptop, "team/deep/er/user_far", memory("Far down", "Body."))
    elif change == "local-and-remote":
        write_memory(laptop, "project/t1/note_4", memory("Laptop's title", "Body."))
        write_memory(desktop, "user_mine", memory("Only on the desktop, new", "Body."))
        write_memory(desktop, "project/t0/note_0", memory("Desktop's title", "Body."))
    elif change == "linked-folder":
        write_memory(laptop, "user_new", memory("A new one", "Body."))
        (tmp_path / "outside").mkdir()
        write_memory(tmp_path / "outside", "user_outside", memory("Never listed", "Body."))
        os.symlink(tmp_path / "outside", desktop / "linked")
    elif change == "linked-file":  # read (and listed) as the walk reads it: no blob for it
        os.symlink(desktop / "project/t1/note_1.md", desktop / "user_alias.md")
    else:  # the same id twice, NFC and NFD: the walk's order decides which is listed
        write_memory(laptop, "user_caf\u00e9", memory("Composed", "Body."))
        write_memory(desktop, "user_cafe\u0301", memory("Decomposed", "Body."))
    sync(laptop)
    seen = counting_walks(monkeypatch)
    sync(desktop)
    monkeypatch.undo()
    use_private_git(tmp_path, monkeypatch)
    index_is_current(desktop)
    if change not in ("nfd-twin", "linked-folder", "linked-file"):
        assert "walk" not in seen, seen


def test_a_sync_scans_the_same_bytes_for_secrets_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a sync committed after scanning it is not scanned again before its push (the
    push still scans what it did not: tests/test_sync.py, a secret committed by hand)."""
    from sage_mem.sync import steps

    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    scanned: list[bytes] = []
    real = steps.secret_reason
    monkeypatch.setattr(steps, "secret_reason",
                        lambda data: scanned.append(data) or real(data))
    result = sync(desktop)
    assert len(result["pushed"]) == 6
    assert len(scanned) == len(set(scanned)), "the same bytes scanned twice"


def test_a_sync_checks_each_name_for_secrets_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's name checked before its commit is not checked again before the push (a
    name the push carries that no check saw still is: tests/test_sync.py)."""
    from sage_mem.sync import steps

    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    checked: list[str] = []
    real = steps.name_reason
    monkeypatch.setattr(steps, "name_reason", lambda path: checked.append(path) or real(path))
    result = sync(desktop)
    assert len(result["pushed"]) == 6
    assert checked and len(checked) == len(set(checked)), sorted(checked)


def test_memory_md_before_a_local_commit_is_made_from_the_status_that_found_the_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status that found the local changes tells MEMORY.md's regeneration what to read
    (not a status of its own); the commit and the merge each take theirs, so that a memory
    saved while MEMORY.md was made goes with them (the guard below): four, was five."""
    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    log = git_commands_of(tmp_path, monkeypatch)
    result = sync(desktop)
    lines = log.read_text(encoding="utf-8").splitlines()  # a commit's message spans lines
    assert sum(line.split(" ")[2:3] == ["status"] for line in lines) == 4, "\n".join(lines)
    monkeypatch.undo()
    assert len(result["pushed"]) == 6 and result["conflicts"] == []
    for number in range(6):
        text = (desktop / f"project/t{number % 3}/note_{number}.md").read_text(encoding="utf-8")
        assert "Laptop's note" in text and "from the desktop" in text
        assert f"Laptop's note number {number}" in (desktop / "MEMORY.md").read_text(
            encoding="utf-8")
    assert git(desktop, "status", "--porcelain") == ""
    index_is_current(desktop)
    sync(laptop)
    assert (laptop / "MEMORY.md").read_bytes() == (desktop / "MEMORY.md").read_bytes()


def test_a_sync_that_receives_changes_runs_few_git_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = two_machines(tmp_path, 12)
    for number in range(10):
        write_memory(laptop, f"project/t{number % 3}/note_{number}",
                     memory(f"Note {number}, revised on the laptop", "Body."))
    sync(laptop)
    log = git_commands_of(tmp_path, monkeypatch)
    assert len(sync(desktop)["pulled"]) == 10
    commands = [c.split(" ", 2)[2] for c in log.read_text(encoding="utf-8").splitlines()]
    # `git pull` is one fetch and one merge; a sync adds what its safety asks (the link
    # check's diff, a status for MEMORY.md, the stamp's tree), each once: not ~25
    # commands, three `git status` of the whole folder among them. The status before the
    # merge still holds after one git committed by itself (~40 ms each at 10,000 files).
    assert len(commands) <= 13, "\n".join(commands)
    assert sum(c.startswith("status ") for c in commands) == 1, "\n".join(commands)
    # The merge is a fast-forward (the desktop changed nothing): its memories written by
    # sync itself, no `git merge` and its stat of every file, no checkout.
    assert sum(" merge " in f" {c} " for c in commands) == 0
    assert not [c for c in commands if c.startswith("read-tree ")], commands
    asked = [c for c in commands if c.split()[0] in ("merge-base", "diff", "diff-tree",
                                                        "ls-tree", "ls-files")]
    assert len(asked) == len(set(asked)), "the same question asked of git twice"
    assert "ls-files -u -z" not in commands  # git committed the merge: nothing unmerged
    # The record of MEMORY.md from the last record and the merge's diff: no listing of
    # every file of the new commit.
    assert not [c for c in commands if c.startswith("ls-tree ")], "\n".join(commands)
    # The status before the fetch showed MEMORY.md as committed, and nothing wrote since:
    # no `git diff` of it before the merge.
    assert not [c for c in commands if c.startswith("diff ")], "\n".join(commands)
    monkeypatch.undo()
    assert "Note 9, revised on the laptop" in (desktop / "MEMORY.md").read_text(encoding="utf-8")
    assert git(desktop, "status", "--porcelain") == ""
    index_is_current(desktop)


@pytest.mark.parametrize("edit", [
    pytest.param("generated", id="memory-md-edited-by-hand-while-fetching"),
    pytest.param("by-sage-mem", id="a-memory-saved-by-sage-mem-while-fetching"),
])
def test_a_receive_merges_what_was_changed_while_it_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    """The status before the fetch spares the `git diff` of MEMORY.md before the merge; a
    MEMORY.md edited by hand after that status is merged into the remote's and made again
    from the memories (it is sage-mem's), and a write by sage-mem meanwhile is seen by its
    count."""
    from sage_mem.sync import steps

    laptop, desktop = two_to_receive(tmp_path)
    fetch = steps._Sync.fetch

    def fetching(self: Any) -> bool:
        done = fetch(self)
        if edit == "generated":
            index = desktop / "MEMORY.md"
            index.write_text(index.read_text(encoding="utf-8") + "- a line typed by hand\n",
                             encoding="utf-8")
        else:
            with MemoryStore(desktop, watch=False) as store:
                store.write("user_saved_meanwhile", description="Saved while fetching",
                            body="Body.")
        return done

    merges: list[int] = []
    run_merge = steps._Sync.run_merge
    monkeypatch.setattr(steps._Sync, "fetch", fetching)
    monkeypatch.setattr(steps._Sync, "run_merge", lambda self, *a: merges.append(1) or run_merge(
        self, *a))
    assert {"project/t1/note_1", "project/t2/note_5"} <= set(sync(desktop)["pulled"])
    # One merge: the fast-forward writes MEMORY.md as it writes a memory (a save made since
    # the status merged in), where git refused to write over it and was run again.
    assert len(merges) == 1
    monkeypatch.undo()
    use_private_git(tmp_path, monkeypatch)
    text = (desktop / "MEMORY.md").read_text(encoding="utf-8")
    assert "Note 5, revised on the laptop" in text
    # The line typed by hand was set back with the file (`git checkout`) to let git merge;
    # now it is merged with the remote's lines and kept, as a regeneration keeps it.
    assert ("typed by hand" in text) == (edit == "generated")
    if edit == "by-sage-mem":
        assert "user_saved_meanwhile" in text
    index_is_current(desktop)


SYNC_PROBE = """
import json, sys
from sage_mem.cli import main
try:
    main(["--dir", sys.argv[1], "sync", "--json"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def synced_in_a_process(folder: Path) -> tuple[dict, list[str]]:
    """One `sync --json` of `folder` in a new process: its answer, and every module it
    imported."""
    probe = subprocess.run([sys.executable, "-c", SYNC_PROBE, str(folder)],
                           capture_output=True, text=True, timeout=60, check=True,
                           env={**os.environ, "SAGE_MEM_AUTOSYNC": "0"})
    result, _, modules = probe.stdout.rstrip("\n").rpartition("\n")
    return json.loads(result), json.loads(modules)


def test_a_sync_that_receives_a_few_changes_imports_no_merge_rules_scan_or_search(
    tmp_path: Path
) -> None:
    laptop, desktop = two_to_receive(tmp_path)
    result, imported = synced_in_a_process(desktop)
    assert sorted(result["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    # git merged it by itself (nothing both sides changed): no merge rule ran, no file
    # needed a secret scan (the remote's own), no search was due for two files.
    assert not [m for m in imported if m.startswith((
        "sage_mem.sync.batch_merge", "sage_mem.sync.merge_driver", "sage_mem.memory.merge",
        "sage_mem.checks.", "sage_mem.search.", "sage_mem.agents.daemon_start"))], imported


def test_a_sync_that_receives_a_few_changes_imports_no_dataclasses(tmp_path: Path) -> None:
    """A receive reads the changed memories and makes MEMORY.md of their listed fields
    (`memory.coercion`, `file_format`, `catalog`): none of it a dataclass, so no
    `dataclasses`, which imports `inspect` (with `ast`, `dis`, `tokenize`): ~10 ms of a
    receive's ~0.3 s of CPU at 10,000 memories, against `git pull`'s ~0.12 s."""
    laptop, desktop = two_to_receive(tmp_path)
    result, imported = synced_in_a_process(desktop)
    assert sorted(result["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    assert "sage_mem.memory.listing" in imported  # the changed memories were read
    assert "dataclasses" not in imported and "inspect" not in imported, imported
    assert "sage_mem.memory.value" not in imported


def test_a_sync_with_nothing_to_do_imports_no_memory_format(tmp_path: Path) -> None:
    """Nothing changed, nothing read: no frontmatter reader, no memory value, no MEMORY.md
    lines, no secret patterns, no merge rules (each a few milliseconds of a ~0.07 s
    process)."""
    laptop, desktop = two_machines(tmp_path, 6)
    sync(desktop)
    result, imported = synced_in_a_process(desktop)
    assert result["pulled"] == []
    assert not [m for m in imported if m.startswith((
        "sage_mem.memory.", "sage_mem.checks.", "sage_mem.sync.batch_merge",
        "sage_mem.sync.merge_driver", "sage_mem.search.", "sage_mem.store"))], imported


def test_memory_md_after_a_receive_makes_a_memory_only_of_the_files_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.memory.value import Memory

    laptop, desktop = two_machines(tmp_path, 30)
    write_memory(laptop, "project/t1/note_1", memory("Note 1, revised on the laptop", "Body."))
    sync(laptop)
    made: list[str] = []
    init = Memory.__init__

    def counting_init(self: Memory, *args: Any, **kwargs: Any) -> None:
        made.append(kwargs.get("id") or args[0])
        init(self, *args, **kwargs)

    monkeypatch.setattr(Memory, "__init__", counting_init)
    from sage_mem.sync.steps import sync as run_sync

    assert run_sync(desktop).pulled == ["project/t1/note_1"]
    # The other 29 lines of MEMORY.md come from the fields kept of them, not a Memory each
    # (10,000 of those were the largest cost of a receive); the file read gives its five
    # fields alone (`value.listed_fields`: a join reads 10,000).
    assert made == [], made
    monkeypatch.undo()
    assert "Note 1, revised on the laptop" in (desktop / "MEMORY.md").read_text(encoding="utf-8")


def test_a_memory_written_while_a_receive_fetches_is_in_its_memory_md_and_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status taken before the merge serves after it only while no sage-mem process
    wrote in the folder (its write count): an agent's note saved during the fetch is
    seen by this sync, as a second `git status` sees it."""
    from sage_mem.sync import steps

    laptop, desktop = two_to_receive(tmp_path)
    fetch = steps._Sync.fetch

    def fetch_while_an_agent_writes(self: steps._Sync) -> bool:
        with MemoryStore(desktop, watch=False) as store:
            store.write("user_written_meanwhile", description="A note saved while the "
                        "sync fetched", body="Its body.", category="user")
        return fetch(self)

    monkeypatch.setattr(steps._Sync, "fetch", fetch_while_an_agent_writes)
    result = sync(desktop)
    monkeypatch.undo()
    assert {"project/t1/note_1", "project/t2/note_5"} <= set(result["pulled"])
    assert "user_written_meanwhile" in result["committed"]
    assert "A note saved while the sync fetched" in (desktop / "MEMORY.md").read_text(
        encoding="utf-8")
    assert git(desktop, "status", "--porcelain") == ""
    index_is_current(desktop)


def test_the_record_made_from_a_diff_is_the_one_the_whole_tree_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`catalog.stamp` checks MEMORY.md's inputs against the commit's files: known from the
    last record and a diff (`index_file.known_tree`) they must give the verdict a listing
    of the whole commit gives, through receives, local edits, a hand commit, a file held
    back, a deletion and a rename, an addition, a file saved while the sync fetched."""
    from sage_mem.sync import index_file, steps
    from sage_mem.sync.git import Git

    stamp = index_file.stamp
    verdicts: list[tuple[bool, bool]] = []

    def checked(folder: MemoryFolder, made: Any, head: str, tree: Any,
                only: Any = None) -> bool:
        whole = stamp(folder, made, head, Git(folder.root).tree(head))
        assert stamp(folder, made, head, tree) == whole, (made.base is not None, head)
        # Checked on the paths the regeneration read and the diff names alone: the same.
        assert stamp(folder, made, head, tree, only) == whole, (only, head)
        verdicts.append((made.base is not None, whole))
        return whole

    monkeypatch.setattr(index_file, "stamp", checked)
    laptop, desktop = two_to_receive(tmp_path)
    sync(desktop)  # a receive
    write_memory(desktop, "project/t0/note_3", memory("Note 3, from the desktop", "Body."))
    sync(desktop)  # a local edit
    write_memory(desktop, "project/t1/note_4", memory("Note 4, committed by hand", "Body."))
    git(desktop, "commit", "-qam", "by hand")
    sync(desktop)
    token = "ghp_" + "k3Jd9QmZx7Lw2Vb8Nc4Rt6Yh1Pf5Gs0Ua2Ei"
    write_memory(desktop, "user_secret", memory("A token", f"The token is {token}"))
    assert sync(desktop)["heldBack"]
    (desktop / "user_secret.md").unlink()
    sync(desktop)
    (laptop / "project/t2/note_8.md").unlink()
    git(laptop, "mv", "project/t0/note_6.md", "project/t0/note_six.md")
    sync(laptop)
    sync(desktop)  # a deletion and a rename received
    assert sync(desktop)["pulled"] == []
    write_memory(laptop, "project/t1/note_7", memory("Note 7, from the laptop", "Body."))
    write_memory(laptop, "project/t0/note_new", memory("A new note", "Body."))
    sync(laptop)
    fetch = steps._Sync.fetch

    def fetch_while_an_agent_writes(self: steps._Sync) -> bool:
        write_memory(desktop, "project/t2/note_2", memory("Note 2, saved meanwhile", "Body."))
        return fetch(self)

    monkeypatch.setattr(steps._Sync, "fetch", fetch_while_an_agent_writes)
    sync(desktop)  # an edit and an addition received, a file changed on disk meanwhile
    monkeypatch.setattr(steps._Sync, "fetch", fetch)
    assert sync(desktop)["pulled"] == []
    assert (True, True) in verdicts and (True, False) in verdicts, verdicts
    index_is_current(desktop)


def test_the_stamp_after_a_receive_looks_only_at_the_paths_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a receive the stamp checks the files the regeneration read and those the diff
    names, not every one of the commit's (two passes of 10,000 rows): the rest are the last
    record's on both sides."""
    from sage_mem.sync import index_file

    stamp = index_file.stamp
    looked: list[int] = []

    class Counted(dict[str, str]):
        def __iter__(self) -> Any:
            looked.append(len(self))
            return super().__iter__()

        def get(self, key: str, default: Any = None) -> Any:
            looked.append(1)
            return super().get(key, default)

        def __contains__(self, key: object) -> bool:
            looked.append(1)
            return super().__contains__(key)

    def counted(folder: MemoryFolder, made: Any, head: str, tree: Any, *args: Any) -> bool:
        looked.clear()
        done = stamp(folder, made, head, Counted(tree), *args)
        verdicts.append((made.base is not None, done, sum(looked)))
        return done

    verdicts: list[tuple[bool, bool, int]] = []
    laptop, desktop = two_machines(tmp_path, 40)
    for number in (1, 5):
        write_memory(laptop, f"project/t{number % 3}/note_{number}",
                     memory(f"Note {number}, revised on the laptop", "Body."))
    sync(laptop)
    monkeypatch.setattr(index_file, "stamp", counted)
    assert sorted(sync(desktop)["pulled"]) == ["project/t1/note_1", "project/t2/note_5"]
    monkeypatch.undo()
    (from_record, stamped, rows), = verdicts
    assert from_record and stamped
    assert rows <= 8, rows  # the two files and MEMORY.md, each looked up once or twice
    index_is_current(desktop)


LISTED = [
    pytest.param({"description": "The cat", "name": "Cat", "category": "User"}, id="plain"),
    pytest.param({"name": "Only a name"}, id="no-description-a-name"),
    pytest.param({"summary": "A summary", "name": "N"}, id="no-description-a-summary"),
    pytest.param({"description": "  ", "summary": " "}, id="blank-both"),
    pytest.param({}, id="nothing-the-body's-first-line"),
    pytest.param({"description": ["a", "list"], "type": "feedback"}, id="list-and-type"),
    pytest.param({"description": 42, "metadata": {"type": "Project"}}, id="number-nested-type"),
    pytest.param({"description": True, "baseline": "yes"}, id="bool-and-baseline-text"),
    pytest.param({"description": "d", "baseline": True, "baselinePriority": 7}, id="baseline"),
    pytest.param({"description": "d", "baselinePriority": "high"}, id="priority-not-a-number"),
    pytest.param({"description": "d", "baselinePriority": 2 ** 80}, id="priority-too-large"),
    pytest.param({"description": "d", "baselinePriority": True}, id="priority-a-bool"),
    pytest.param({"description": "多 行\n 描述", "category": "参考"}, id="chinese-and-spaces"),
]


@pytest.mark.parametrize("meta", LISTED)
def test_the_fields_memory_md_lists_are_the_memorys(meta: dict[str, Any]) -> None:
    from sage_mem.memory.value import listed_fields, memory_from_meta

    body = "\n\n## A heading for the fallback\n\nText."
    memory = memory_from_meta("project/x/note", Path("/m/project/x/note.md"), meta, body)
    assert listed_fields("project/x/note", meta, body) == (
        memory.name, memory.display, memory.category, memory.baseline,
        memory.baseline_priority)


def test_the_fields_of_every_template_memory_are_the_memorys(memory_dir: Path) -> None:
    from sage_mem.memory.value import listed_fields

    with MemoryStore(memory_dir, watch=False) as store:
        memories = store.list()
    assert memories
    for one in memories:
        parsed = parse_bytes(one.path.read_bytes(), one.path)
        assert listed_fields(one.id, parsed.meta, parsed.body) == (
            one.name, one.display, one.category, one.baseline, one.baseline_priority), one.id


def test_a_sync_with_nothing_to_do_imports_no_dataclasses(tmp_path: Path) -> None:
    """`dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`): ~10 ms of the ~0.12 s
    a sync with nothing to do takes at 10,000 memories. (A sync that reads a memory imports
    them with the memory format.)"""
    laptop, desktop = two_machines(tmp_path, 6)
    sync(desktop)
    result, imported = synced_in_a_process(desktop)
    assert result["pulled"] == []
    assert "dataclasses" not in imported and "inspect" not in imported, imported


def test_a_both_sides_sync_stages_by_update_index_not_a_pathspec_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git add PATH...` matches every path given against every file of the index (100 paths
    at 10,000 memories: ~45 ms of CPU, twice a sync); `git update-index` stages the same
    paths in ~11 ms."""
    laptop, desktop = both_sides_edited(tmp_path)
    sync(laptop)
    log = git_commands_of(tmp_path, monkeypatch)
    result = sync(desktop)
    commands = [c.split(" ", 2)[2] for c in log.read_text(encoding="utf-8").splitlines()
                if len(c.split(" ", 2)) == 3 and c.startswith("-C ")]
    assert not [c for c in commands if c.startswith("add ")], "\n".join(commands)
    # The local commit's files, then the merge's.
    assert sum(c.startswith("update-index --add --remove") for c in commands) == 2
    monkeypatch.undo()
    assert_both_sides_merged(desktop, result)
    assert git(desktop, "status", "--porcelain") == ""
    index_is_current(desktop)


def test_staging_by_update_index_stages_what_git_add_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Git.stage` against `git add -A` on twin repositories: an edit, a new file, a deletion,
    a file become a folder, CRLF made LF by `.gitattributes`, a nested repository (which
    update-index refuses: staged by `git add`, as before)."""
    from sage_mem.sync.git import Git

    for variable in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):  # the twins' commits alike
        monkeypatch.setenv(variable, "2026-12-05T12:00:00Z")
    staged = {}
    for how in ("add", "stage"):
        folder = tmp_path / how
        folder.mkdir()
        git(folder, "init", "-q")
        (folder / ".gitattributes").write_text("*.md text eol=lf\n", encoding="utf-8")
        for name in ("kept.md", "edited.md", "gone.md", "became_folder.md"):
            (folder / name).write_text(f"{name}\n", encoding="utf-8")
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "-m", "first")
        (folder / "edited.md").write_text("edited\n", encoding="utf-8")
        (folder / "new.md").write_bytes("新的\r\nline\r\n".encode())
        (folder / "gone.md").unlink()
        (folder / "became_folder.md").unlink()
        (folder / "became_folder.md").mkdir()
        (folder / "became_folder.md" / "inside.md").write_text("in\n", encoding="utf-8")
        (folder / "nested").mkdir()
        git(folder / "nested", "init", "-q")
        (folder / "nested" / "x.md").write_text("x\n", encoding="utf-8")
        git(folder / "nested", "add", "x.md")
        git(folder / "nested", "commit", "-q", "-m", "nested")
        paths = ["edited.md", "new.md", "gone.md", "became_folder.md",
                 "became_folder.md/inside.md"]
        if how == "add":
            git(folder, "add", "-A", "--", *paths, "nested/")
        else:
            Git(folder).stage(paths)  # update-index
            Git(folder).stage(["nested/"])  # refused by update-index: `git add`
        staged[how] = git(folder, "ls-files", "-s")
    assert staged["stage"] == staged["add"]
    assert "nested" in staged["stage"] and "new.md" in staged["stage"]
    assert "gone.md" not in staged["stage"] and "became_folder.md/inside.md" in staged["stage"]
