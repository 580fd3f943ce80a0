"""The on-disk index cache: a warm start always ends with exactly what a fresh build gives.

Every scenario builds a cache with one store, changes things while no store
runs (edits, moves, deletes, a damaged or foreign cache file, two builders at
once), opens a second store from that cache and compares it with a store
built from scratch (an empty state folder): the same hits with the same
scores for English, Chinese and mixed queries, the same list() and the same
problems.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import write_memory

from sage_mem import MemoryStore
from sage_mem import store as store_module
from sage_mem.disk.folder import MemoryFolder
from sage_mem.search import cache as cache_module
from sage_mem.search import loading as loading_module
from sage_mem.search.scoring import Scoring

ROOT = Path(__file__).resolve().parent.parent

ENGLISH = "tests pytest deploy release database migration cat garden coffee flight budget".split()
CHINESE = ["测试", "部署", "发布", "数据库", "迁移", "小猫", "花园", "咖啡", "航班", "预算"]
QUERIES = [
    "how do I run the tests", "database migration", "cat garden", "coffee budget flight",
    "我的猫叫什么", "数据库迁移", "发布 测试", "咖啡", "pytest 测试", "deploy 部署 release",
    "archived note", "nothing matches this zzzz",
]


def started(folder: Path, state: Path) -> MemoryStore:
    """A store as one process start opens it: from the cache, with no watcher running after."""
    return MemoryStore(folder, state_dir=state, watch=False)


def write(folder: Path, memory_id: str, text: str) -> Path:
    path = folder / (memory_id + ".md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_folder(folder: Path, count: int = 60, seed: int = 3) -> None:
    rng = random.Random(seed)
    for n in range(count):
        english = " ".join(rng.sample(ENGLISH, 3))
        chinese = "".join(rng.sample(CHINESE, 2))
        description = [english, chinese, f"{english} {chinese}"][n % 3]
        where = f"project/p{n % 4}/" if n % 5 == 0 else ""
        write(folder, f"{where}note_{n}", (
            f"---\ndescription: {description}\ncategory: {rng.choice(['user', 'project'])}\n"
            f"trust: {rng.choice([0.3, 0.5, 0.9])}\n---\n\n{english} {chinese} body {n}\n"
        ))
    write(folder, "archive/old_note", "---\ndescription: an archived note\n---\nold\n")
    write(folder, "broken", "---\ndescription: [unclosed\n---\nbody\n")
    age_files(folder)


def age_files(folder: Path, seconds: int = 3600) -> None:
    """Date every file an hour back: files written within 2 s of a build are read again."""
    moment = time.time() - seconds
    for path in folder.rglob("*.md"):
        os.utime(path, (moment, moment))


def state_of(store: MemoryStore) -> object:
    """Everything a user can observe of a store's index."""
    hits = [
        [(hit.id, hit.score, hit.matched) for hit in store.search(query, limit=10)]
        for query in QUERIES
    ]
    archived = [hit.id for hit in store.search("archived note", archived=True)]
    listed = [memory.to_dict() for memory in store.list(archived=True)]
    problems = [(str(p.path), p.message) for p in store.problems()]
    return hits, archived, listed, problems, len(store.index)


def fresh(folder: Path, tmp_path: Path) -> MemoryStore:
    """A store built from the files alone (its own, empty state folder)."""
    state = tmp_path / f"fresh-state-{len(list(tmp_path.iterdir()))}"
    return started(folder, state)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "memory"
    make_folder(target)
    return target


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The memory files read from now on (every read goes through store.load_memory)."""
    seen: list[Path] = []
    original = store_module.load_memory

    def counting(folder, path, memory_id, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(path)
        return original(folder, path, memory_id, **kwargs)

    monkeypatch.setattr(store_module, "load_memory", counting)
    return seen


def test_a_second_store_starts_from_the_cache_without_reading_a_file(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = started(folder, state)
    assert cache_module.cache_path(first.folder).is_file()
    seen = reads(monkeypatch)
    second = started(folder, state)
    assert seen == []
    assert state_of(second) == state_of(first) == state_of(fresh(folder, tmp_path))


def test_edits_moves_and_deletes_made_while_no_store_ran_are_all_seen(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started(folder, state)
    write(folder, "note_1", "---\ndescription: 我的猫叫芝麻 the cat Sesame\n---\n猫\n")
    os.rename(folder / "note_2.md", folder / "renamed_note.md")
    os.rename(folder / "note_4.md", folder / "archive" / "note_4.md")
    (folder / "note_3.md").unlink()
    write(folder, "project/p9/brand_new", "---\ndescription: a brand new database note\n---\n")
    write(folder, "note_6", "---\ndescription: [now broken\n---\n")
    write(folder, "broken", "---\ndescription: fixed now, about coffee\n---\n")
    seen = reads(monkeypatch)
    warm = started(folder, state)
    assert len(seen) == 6  # the changed files only, not the other 56
    assert state_of(warm) == state_of(fresh(folder, tmp_path))
    # Too few changes to rewrite the cache: the next store reads the same six again.
    assert state_of(started(folder, state)) == state_of(warm)


def test_many_changes_rewrite_the_cache_so_the_next_start_reads_nothing(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started(folder, state)
    for n in range(60):
        if n % 3 == 0:
            write(folder, f"note_{n}", f"---\ndescription: rewritten note {n} 新的内容\n---\n")
    for n in range(100, 120):
        write(folder, f"added_{n}", f"---\ndescription: added note {n} about flights\n---\n")
    age_files(folder, seconds=60)  # else they would count as racy, and be read again
    warm = started(folder, state)
    assert state_of(warm) == state_of(fresh(folder, tmp_path))
    seen = reads(monkeypatch)
    again = started(folder, state)
    assert seen == []
    assert state_of(again) == state_of(warm)


def test_an_edit_that_keeps_size_and_mtime_is_seen_through_ctime(
    folder: Path, state: Path, tmp_path: Path
) -> None:
    started(folder, state)
    path = folder / "note_7.md"
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("body 7", "BODY 7"), encoding="utf-8")  # `cp -p` style
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    warm = started(folder, state)
    assert state_of(warm) == state_of(fresh(folder, tmp_path))
    assert "BODY 7" in (warm.index.get("note_7") or warm.read("note_7")).body


def test_a_file_changed_in_the_same_tick_as_the_build_is_read_again(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a file system with coarse timestamps an edit right after the build can leave
    # size, mtime and ctime as they were: only the racy window can catch it.
    path = folder / "note_8.md"
    os.utime(path)  # written just before the build
    started(folder, state)
    before = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("body 8", "BODY 8"), "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    real_scan = cache_module.scan

    def coarse_scan(memory_folder):  # type: ignore[no-untyped-def]
        found = real_scan(memory_folder)
        key = "note_8.md"
        size, mtime, inode, _ = found[key]
        found[key] = (size, mtime, inode, before.st_ctime_ns)
        return found

    monkeypatch.setattr(cache_module, "scan", coarse_scan)
    warm = started(folder, state)
    assert "BODY 8" in (warm.index.get("note_8") or warm.read("note_8")).body
    assert state_of(warm) == state_of(fresh(folder, tmp_path))


def flip(data: bytes, at: int, bits: int = 0x01) -> bytes:
    """`data` with some bits of the byte at `at` flipped."""
    return data[:at] + bytes([data[at] ^ bits]) + data[at + 1 :]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:20], id="truncated-in-header"),
        pytest.param(lambda data: b"garbage" * 100, id="garbage"),
        pytest.param(lambda data: b"X" + data[1:], id="bad-magic"),
        pytest.param(lambda data: flip(data, 40, 0xFF), id="header-bit"),
        pytest.param(lambda data: flip(data, len(data) - 9), id="last-chunk"),
        pytest.param(lambda data: flip(data, len(data) // 2, 0x10), id="middle-bit"),
    ],
)
def test_a_damaged_cache_file_ends_with_the_results_of_a_fresh_build(
    folder: Path, state: Path, tmp_path: Path, damage
) -> None:
    first = started(folder, state)
    path = cache_module.cache_path(first.folder)
    path.write_bytes(damage(path.read_bytes()))
    warm = started(folder, state)
    assert state_of(warm) == state_of(fresh(folder, tmp_path))
    assert state_of(started(folder, state)) == state_of(warm)


def test_two_processes_building_the_cache_at_once_leave_a_good_one(
    folder: Path, state: Path, tmp_path: Path
) -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from sage_mem import MemoryStore;"
        "MemoryStore(sys.argv[2], state_dir=sys.argv[3]).search('cat')"
    )
    args = [sys.executable, "-c", code, str(ROOT), str(folder), str(state)]
    builders = [subprocess.Popen(args) for _ in range(3)]
    assert [builder.wait(timeout=120) for builder in builders] == [0, 0, 0]
    store = started(folder, state)
    assert cache_module.load(store.folder, scoring=Scoring()) is not None
    assert state_of(store) == state_of(fresh(folder, tmp_path))
    assert not [p for p in cache_module.cache_path(store.folder).parent.iterdir()
                if p.name.endswith(".tmp")]


def test_a_format_version_change_ignores_the_old_cache(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = started(folder, state)
    monkeypatch.setattr(cache_module, "FORMAT_VERSION", cache_module.FORMAT_VERSION + 1)
    monkeypatch.setattr(cache_module, "_fingerprints", {})
    assert cache_module.load(store.folder, scoring=Scoring()) is None
    seen = reads(monkeypatch)
    rebuilt = started(folder, state)
    assert len(seen) == 62  # every file, the broken one included
    assert state_of(rebuilt) == state_of(fresh(folder, tmp_path))
    assert cache_module.load(rebuilt.folder, scoring=Scoring()) is not None


@pytest.mark.parametrize("change", ["scoring version", "tokenizer"])
def test_a_scoring_or_tokenizer_change_ignores_the_old_cache(
    folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    store = started(folder, state)
    monkeypatch.setattr(cache_module, "_fingerprints", {})
    if change == "scoring version":
        monkeypatch.setattr(cache_module, "SCORING_VERSION", cache_module.SCORING_VERSION + 1)
    else:  # a tokenizer that now stems one more word differently, with no version bump:
        # its code changed (what the cache recorded of the sample's terms is not taken)
        original = cache_module.tokenize
        monkeypatch.setattr(cache_module, "tokenize",
                            lambda text: [t.replace("test", "tst") for t in original(text)])
        monkeypatch.setattr(cache_module, "_CODE", ("another", 1))
    assert cache_module.load(store.folder, scoring=Scoring()) is None


def test_the_same_code_takes_the_sample_terms_the_cache_recorded(
    folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process running the code that wrote the cache (the same bytes in every file of the
    tokenizer, the same Python) does not tokenize the fingerprint's sample again: that
    compiled every CJK and symbol pattern in each hook, whatever its prompt."""
    store = started(folder, state)
    sample = cache_module.sample_terms()
    assert "\x00" in sample and "~猫" in sample.split("\x00")  # the sample's CJK made terms
    monkeypatch.setattr(cache_module, "_fingerprints", {})

    def no_tokenizing(text: str) -> list[str]:
        raise AssertionError("the sample was tokenized")

    monkeypatch.setattr(cache_module, "tokenize", no_tokenizing)
    assert cache_module.load(store.folder, scoring=Scoring()) is not None
    # Recorded by other code, or when the code here is not known: tokenized, as before.
    for code, recorded in [(cache_module._CODE, (("other", 1), sample)),
                           (None, (None, sample)), (cache_module._CODE, None)]:
        monkeypatch.setattr(cache_module, "_CODE", code)
        with pytest.raises(AssertionError, match="tokenized"):
            cache_module.sample_terms(recorded)


def test_the_code_signature_holds_every_module_the_sample_terms_run() -> None:
    """`_CODE` is read from `TOKENIZER_MODULES`: they must be every sage_mem module that
    `tokenize` and `word_pairs` can run (their modules' imports, to the end)."""
    from test_layout import PACKAGE, imported_modules

    def path_of(module: str) -> Path:
        base = PACKAGE.parent.joinpath(*module.split("."))
        return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")

    reached, todo = set(), ["sage_mem.search.tokens", "sage_mem.search.scoring"]
    while todo:
        module = todo.pop()
        if module in reached or module == "sage_mem":
            continue
        reached.add(module)
        todo += [target for _, target in imported_modules(path_of(module))]
    assert reached <= set(cache_module.TOKENIZER_MODULES)
    assert cache_module._CODE is not None  # read from the files here


def test_a_reinstall_of_the_same_code_keeps_the_cache(
    folder: Path, state: Path, tmp_path: Path
) -> None:
    """Issue 13 item 2: a copy of the package (new inodes and mtimes) starts from the cache."""
    started(folder, state)
    copy = tmp_path / "site"
    shutil.copytree(ROOT / "sage_mem", copy / "sage_mem",
                    ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import sys; from sage_mem import store as s; seen = []; load = s.load_memory\n"
        "s.load_memory = lambda *a, **k: seen.append(a) or load(*a, **k)\n"
        f"st = s.MemoryStore({str(folder)!r}, state_dir={str(state)!r}, watch=False)\n"
        "assert s.__file__.startswith(sys.argv[1]), s.__file__\n"
        "print(st.loaded.how, len(seen))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(copy)], capture_output=True, text=True, timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(copy)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["cache", "0"]


def test_other_scoring_constants_do_not_share_a_cache() -> None:
    assert cache_module.fingerprint(Scoring()) == cache_module.fingerprint(Scoring())
    assert cache_module.fingerprint(Scoring(k1=1.2)) != cache_module.fingerprint(Scoring())
    assert cache_module.fingerprint(Scoring(pair_weight=0.0)) != cache_module.fingerprint(Scoring())


def test_an_unchanged_folder_never_rewrites_the_cache(folder: Path, state: Path) -> None:
    first = started(folder, state)
    path = cache_module.cache_path(first.folder)
    written = path.stat()
    for _ in range(3):
        started(folder, state).search("cat")
    assert path.stat().st_mtime_ns == written.st_mtime_ns
    assert path.stat().st_ino == written.st_ino


def test_the_cache_is_written_in_the_state_folder_never_in_the_memory_folder(
    folder: Path, state: Path
) -> None:
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    store = started(folder, state)
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    assert cache_module.cache_path(store.folder).parent == state / "index"


def test_a_state_folder_that_cannot_be_written_means_no_cache(
    folder: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the state folder's parent should be")
    store = MemoryStore(folder, state_dir=blocker / "state")
    assert state_of(store) == state_of(fresh(folder, tmp_path))


def test_a_cache_written_for_another_folder_is_not_used(
    folder: Path, state: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    make_folder(other, count=10, seed=9)
    started(other, state)
    started(folder, state)
    assert state_of(started(other, state)) == state_of(fresh(other, tmp_path))
    assert state_of(started(folder, state)) == state_of(fresh(folder, tmp_path))


def test_a_store_from_the_cache_keeps_up_with_later_changes(
    folder: Path, state: Path, tmp_path: Path
) -> None:
    started(folder, state)
    warm = started(folder, state)
    warm.write("note_10", description="新的描述 about the garden cat")
    warm.archive("note_11", reason="superseded")
    write(folder, "note_12", "---\ndescription: edited by hand 数据库\n---\n")
    (folder / "note_13.md").unlink()
    warm.refresh([folder / "note_12.md", folder / "note_13.md"])
    # A live index re-weighs only when the count drifts by a tenth; on demand it is exact.
    warm.index.reweigh()
    assert state_of(warm) == state_of(fresh(folder, tmp_path))


def test_memory_md_written_from_the_cache_records_is_the_one_the_memories_give(
    folder: Path, state: Path, tmp_path: Path
) -> None:
    """A write from a store started on the cache makes MEMORY.md from each record's few
    fields (`Index.listings`, no `Memory` made of each): the same bytes as from the files."""
    write(folder, "baseline_rule", "---\ndescription: always run the tests\nbaseline: true\n"
          "baselinePriority: 3\ncategory: feedback\n---\nbody\n")
    write(folder, "summarised", "---\nname: 只有摘要\nsummary: the dream's summary\n---\n"
          "a body whose first line stands in for the description\n")
    age_files(folder)
    started(folder, state)
    warm = started(folder, state)
    warm.write("note_new", description="written after the start 新的")
    assert not warm.index._memories.keys() - {"note_new"}  # the rest never made
    made = (folder / "MEMORY.md").read_bytes()
    (folder / "MEMORY.md").unlink()
    fresh(folder, tmp_path).regenerate_index()
    assert made == (folder / "MEMORY.md").read_bytes()
    assert "the dream's summary" in made.decode()


# A benchmark run end to end (11 s of processes): with the other benchmark runs, in the scale tier.
@pytest.mark.scale
def test_the_speed_benchmark_runs_in_quick_mode(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "speed.py"), "--smoke"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "**search** all" in result.stdout


def test_a_warm_store_reads_postings_from_the_file_and_keeps_none(
    folder: Path, state: Path
) -> None:
    started(folder, state)
    warm = started(folder, state)
    for query in QUERIES:
        warm.search(query)
    assert warm.index._postings == {}  # every posting it scored was read from the file


def test_memories_changed_again_and_again_after_a_warm_start_score_as_a_fresh_build(
    tmp_path: Path,
) -> None:
    folder, state = tmp_path / "big", tmp_path / "big-state"
    make_folder(folder, count=300)
    started(folder, state)
    warm = started(folder, state)
    rng = random.Random(5)
    for round_ in range(4):
        changed = []
        for n in rng.sample(range(300), 6):
            path = next(folder.rglob(f"note_{n}.md"), None) or folder / f"note_{n}.md"
            if round_ % 2 and path.exists():
                path.unlink()
            else:
                english = " ".join(rng.sample(ENGLISH, 3))
                chinese = "".join(rng.sample(CHINESE, 2))
                write(folder, path.relative_to(folder).with_suffix("").as_posix(), (
                    f"---\ndescription: {[english, chinese, english + ' ' + chinese][n % 3]}\n"
                    f"category: {rng.choice(['user', 'project'])}\ntags: [t{n % 3}]\n---\n\n"
                    f"{english} {chinese} body {n}\n"
                ))
            changed.append(path)
        warm.refresh(changed)
        warm.index.reweigh()
        # Still reading the cache file for postings, its old versions retired.
        assert warm.index._backing is not None and warm.index._gone
        assert state_of(warm) == state_of(fresh(folder, tmp_path))
        for kwargs in ({"category": "user"}, {"tags": ["t1"]}, {"project": "p0"}):
            assert [h.id for h in warm.search("cat garden 数据库", **kwargs)] == [
                h.id for h in fresh(folder, tmp_path).search("cat garden 数据库", **kwargs)
            ]
    # The rewritten cache (more than REWRITE_AFTER files changed) starts exactly as well.
    age_files(folder)
    started(folder, state)
    assert state_of(started(folder, state)) == state_of(fresh(folder, tmp_path))


def test_after_a_build_the_store_answers_from_the_cache_it_wrote(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = fresh(folder, tmp_path)
    assert kept.index._backing is None  # a small folder keeps the index it built
    monkeypatch.setattr(loading_module, "ADOPT_CACHE_FROM", 10)
    built = started(folder, state)
    assert built.index._backing is not None and built.index._postings == {}
    assert state_of(built) == state_of(kept)


def test_a_build_with_files_just_written_answers_as_read_and_the_next_start_reads_them_again(
    folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loading_module, "ADOPT_CACHE_FROM", 10)
    path = write(folder, "note_new", "---\ndescription: written a moment ago\n---\n")
    built = started(folder, state)
    # A large folder's build answers from the cache it wrote: what it read of every file.
    assert built.index._backing is not None
    assert [hit.id for hit in built.search("written a moment ago")][:1] == ["note_new"]
    # A racy file (written within RACY_NS of the build): the cache is not trusted for it
    # yet, and the next start reads it again, and only it.
    seen = reads(monkeypatch)
    again = started(folder, state)
    assert seen == [path]
    assert [hit.id for hit in again.search("written a moment ago")][:1] == ["note_new"]


def _sections(data: bytes) -> dict[str, tuple[int, int]]:
    import marshal

    length = int.from_bytes(data[8:16], "little")
    return marshal.loads(data[16 + 4 : 16 + length])["sections"]


@pytest.mark.parametrize(
    "section", ["meta", "ids", "id_starts", "id_order", "records", "terms", "slots", "weights"]
)
@pytest.mark.parametrize("where", [0.0, 0.5, 0.999])
def test_a_bit_flipped_in_any_section_is_caught_or_harmless(
    folder: Path, state: Path, tmp_path: Path, section: str, where: float
) -> None:
    first = started(folder, state)
    path = cache_module.cache_path(first.folder)
    data = path.read_bytes()
    offset, length = _sections(data)[section]
    path.write_bytes(flip(data, offset + int(length * where), 0x04))
    warm = started(folder, state)
    # Every query term's block and postings and every record are read, and checked.
    assert state_of(warm) == state_of(fresh(folder, tmp_path))


def test_without_pread_the_cache_is_read_by_seek_and_read(
    folder: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started(folder, state)
    monkeypatch.delattr(os, "pread")  # as on Windows
    warm = started(folder, state)
    assert warm.index._backing is not None
    assert state_of(warm) == state_of(fresh(folder, tmp_path))


def test_after_a_warm_start_a_refresh_reads_only_what_changed(
    folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started(folder, state)
    warm = started(folder, state)
    seen = reads(monkeypatch)
    assert warm.refresh([folder / "note_3.md", folder / "note_4.md"]) == 0
    assert seen == []  # what the stat walk found unchanged is known without a read
    write(folder, "note_4", "---\ndescription: changed after the warm start\n---\n")
    assert warm.refresh([folder / "note_3.md", folder / "note_4.md"]) == 1
    assert seen == [folder / "note_4.md"]
    assert [hit.id for hit in warm.search("changed after the warm start")][:1] == ["note_4"]


# CRC-32 collisions: pohojinaq and javiqiviq share one, as do quqaluxob and kogogikaf.
COLLIDING = (("pohojinaq", "javiqiviq"), ("quqaluxob", "kogogikaf"))


def test_a_long_query_keeps_the_same_rarest_terms_from_the_cache_as_a_fresh_build(
    tmp_path: Path,
) -> None:
    """The counts section answers a long query's document frequencies by CRC-32: a term
    of the cache sharing its CRC with another is looked up exactly, and a query term the
    cache lacks but whose CRC it holds never takes a kept term's place."""
    import random
    import zlib

    from sage_mem.search.query import MAX_QUERY_TERMS

    for first, second in COLLIDING:
        assert zlib.crc32(first.encode()) == zlib.crc32(second.encode())
    rng = random.Random(4)
    filler = [f"fill{chr(97 + n // 26)}{chr(97 + n % 26)}" for n in range(80)]
    for n in range(120):
        words = rng.sample(filler, 6)
        if n < 3:
            words.append("pohojinaq")  # rare: among a long query's rarest terms
        if n < 2:
            words.append("javiqiviq")  # shares pohojinaq's CRC, also in the cache
        if n < 1:
            words.append("quqaluxob")  # its CRC twin kogogikaf is in no memory
        write_memory(tmp_path / "memory", f"note_{n:03}",
                     f"---\ndescription: {' '.join(words)}\n---\n")
    fresh = MemoryStore(tmp_path / "memory", state_dir=tmp_path / "state", watch=False)
    warm = MemoryStore(tmp_path / "memory", state_dir=tmp_path / "state", watch=False)
    assert fresh.index._backing is None and warm.index._backing is not None
    terms = filler[:MAX_QUERY_TERMS + 10] + ["kogogikaf", "pohojinaq", "javiqiviq"]
    for index in (fresh.index, warm.index):
        assert index._rarest(terms, 1) == ["javiqiviq"]  # in 2 memories; pohojinaq in 3
        assert index._rarest(terms, 2) == ["pohojinaq", "javiqiviq"]
        assert "kogogikaf" not in index._rarest(terms, MAX_QUERY_TERMS)
    assert warm.index._rarest(terms, MAX_QUERY_TERMS) == fresh.index._rarest(terms, MAX_QUERY_TERMS)
    query = " ".join(terms)
    assert [(h.id, h.score) for h in warm.search(query)] == [
        (h.id, h.score) for h in fresh.search(query)]


def _by_path(walk: cache_module.Walk, built: dict[str, tuple[int, int, int, int]],
             racy: frozenset[str]) -> tuple[set[str], set[str], set[str]]:
    """The comparison `Loaded.compare` stands for, path by path: (differs, removed, again)."""
    current = {name: walk.signature(at) for at, name in enumerate(walk.names)}
    differs = {name for name, signature in current.items() if built.get(name) != signature
               or signature is None}
    removed = set(built) - set(current)
    return differs, removed, differs | (racy & set(current))


@pytest.mark.parametrize("seed", range(30))
def test_comparing_a_walk_with_the_cache_finds_exactly_what_a_path_by_path_comparison_finds(
    seed: int
) -> None:
    # The packed comparison takes shortcuts when the walk meets the files in the order the
    # cache was written in; whatever the order and the edits (files added, removed, renamed,
    # edited in place, a failed stat, racy files, an inode past 2**63, a date before 1970,
    # English and Chinese names), it must find what comparing path by path finds.
    rng = random.Random(seed)
    count = rng.choice([0, 1, 5, 300, 1200])
    names = [f"{rng.choice(['', 'project/p1/', 'archive/'])}{rng.choice(['note', '笔记'])}_{n}.md"
             for n in range(count)]
    built = {name: (rng.randrange(1, 5000), rng.randrange(-10**18, 2**62),
                    rng.choice([rng.randrange(1, 2**40), 2**63 + n, 2**64 - 1 - n]),
                    rng.randrange(1, 2**62)) for n, name in enumerate(names)}
    column = cache_module._column([value for name in names for value in built[name]])
    loaded = cache_module.Loaded(
        None, "\0".join(names).encode(), column, {},  # type: ignore[arg-type]
        frozenset(rng.sample(names, min(len(names), rng.choice([0, 0, 3])))),
    )
    now = dict(built)
    order = list(names)
    edits = rng.choice([0, 1, 2, 5, 40])
    for _ in range(edits):
        what = rng.choice(["add", "remove", "rename", "edit", "touch-ctime"][3 * (seed % 3 == 0):])
        if what == "add" or not order:
            name = f"新的_{rng.randrange(10**9)}.md"
            order.insert(rng.randrange(len(order) + 1), name)
            now[name] = (1, 2, rng.randrange(1, 2**40), 3)
        elif what == "remove":
            del now[order.pop(rng.randrange(len(order)))]
        elif what == "rename":
            at = rng.randrange(len(order))
            name = order[at] + ".moved.md"
            now[name] = now.pop(order[at])
            order[at] = name
        else:
            name = rng.choice(order)
            size, mtime, inode, ctime = now[name]
            now[name] = (size, mtime, inode, ctime + 1) if what == "touch-ctime" else (
                size + 1, mtime, inode, ctime)
    if rng.random() < 0.3 and seed % 3:
        rng.shuffle(order)
    failed = frozenset(rng.sample(range(len(order)), min(len(order), rng.choice([0, 0, 1]))))
    values = [value for at, name in enumerate(order)
              for value in ((0, 0, 0, 0) if at in failed else now[name])]
    walk = cache_module.Walk(order, cache_module._column(values), failed)
    changes = loaded.compare(walk)
    differs, removed, again = _by_path(walk, built, loaded.racy)
    assert set(changes.differs) == differs
    assert set(changes.removed) == removed
    assert set(changes.again) == again
    assert list(changes.unchanged) == [name for name in order if name not in again]
    assert len(changes.unchanged) == len(order) - len(again)
    assert loaded.signatures == built


def test_the_walk_gives_each_file_its_signature_and_the_cache_keeps_the_walks_order(
    folder: Path, state: Path
) -> None:
    walk = cache_module.scan(MemoryFolder(folder))
    assert len(set(walk.names)) == len(walk.names)
    for name in walk.names:
        st = (folder / name).stat()
        assert walk[name] == (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    store = started(folder, state)
    found = cache_module.load(store.folder, scoring=Scoring())
    assert found is not None
    written = found.paths.decode().split("\0")
    assert written == [name for name in walk.names if name in set(written)]
    assert not found.compare(cache_module.scan(store.folder)).again


@pytest.mark.parametrize("page", [1, 2, 3, 512])
def test_the_counts_read_a_page_at_a_time_are_every_terms_exact_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    # A long query's document frequencies come from the pages of the counts section its
    # terms fall in (page size 1: every two terms sharing a CRC-32 straddle pages).
    monkeypatch.setattr(cache_module, "COUNTS_PAGE", page)
    rng = random.Random(page)
    vocabulary = [f"w{n}" for n in range(1300)] + ["数据库", "迁移", "小猫"]
    for n in range(90):
        # pohojinaq and javiqiviq share a CRC-32 (and differ in count), as do quqaluxob
        # (in the cache) and kogogikaf (not).
        twins = ["pohojinaq"] * (n < 5) + ["javiqiviq"] * (n < 2) + ["quqaluxob"] * (n < 3)
        words = " ".join(rng.sample(vocabulary, 25) + twins)
        write_memory(tmp_path / "memory", f"note_{n:03}", f"---\ndescription: {words}\n---\n")
    MemoryStore(tmp_path / "memory", state_dir=tmp_path / "state", watch=False)
    warm = MemoryStore(tmp_path / "memory", state_dir=tmp_path / "state", watch=False)
    backing = warm.index._backing
    assert isinstance(backing, cache_module._Backing)
    exact = {text: len(slots) for text, slots, _, _ in backing.terms()}
    assert len(exact) > 3 * page
    assert (exact["pohojinaq"], exact["javiqiviq"], exact["quqaluxob"]) == (5, 2, 3)
    absent = ["kogogikaf", "nowhere", "没有的词"]  # kogogikaf shares quqaluxob's CRC-32
    asked = list(exact) + absent
    rng.shuffle(asked)
    backing.counted.clear()
    counts = backing.estimated_counts(asked)
    for term, count in zip(asked, counts, strict=True):
        if term in exact:
            assert count == exact[term], term
        elif term == "kogogikaf":
            assert count == 3  # quqaluxob's: `Index._rarest` checks the terms it keeps
        else:
            assert count == 0
    assert len(backing.count_pages) == len(backing.count_checks)  # every page, once each


# The ids of a warm index: packed as the cache stores them, decoded one at a time.

IDS = ["a", "b", "z", "é", "Ω", "用户/小猫", "用户/花园", "项目/部署", "project/p0/deploy",
       "project/p0/deploy_notes", "project/p1", "😀_emoji", "Zebra", "ａ_fullwidth", "a b"]


def _id_folder(root: Path, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    ids = [*IDS, *(f"note_{n}" for n in range(200)), *(f"笔记/第{n}条" for n in range(60))]
    rng.shuffle(ids)
    for n, memory_id in enumerate(ids):
        english, chinese = " ".join(rng.sample(ENGLISH, 3)), "".join(rng.sample(CHINESE, 2))
        write(root, memory_id, (
            f"---\ndescription: {english} {chinese}\ncategory: {['user', 'project'][n % 2]}\n"
            f"tags: [t{n % 3}]\n---\n\n{english} {chinese} body {n}\n"
        ))
    age_files(root)
    return ids


def test_a_warm_index_finds_every_id_and_only_those(tmp_path: Path) -> None:
    folder, state = tmp_path / "memory", tmp_path / "state"
    ids = _id_folder(folder)
    started(folder, state)
    index = started(folder, state).index
    assert index._backing is not None
    for memory_id in ids:
        assert memory_id in index and index.get(memory_id).id == memory_id  # type: ignore[union-attr]
    for absent in ["", "a ", "note_", "note_2000", "用户", "用户/", "project/p0", "😀", "ｚ",
                   "A", "project/p0/deploy_notes/x", "\udcff", "b\x00"]:
        assert absent not in index and index.get(absent) is None, absent
    assert index.ids() == set(ids) and len(index) == len(ids)
    assert [memory.id for memory in index.memories()] == sorted(ids)


def test_a_warm_index_keeps_its_ids_as_a_dict_index_would_through_changes(
    tmp_path: Path,
) -> None:
    """Removed, put back, withheld, added: the warm index's ids, their numbers, their order
    and its answers stay those of an index that holds them in a list and a dict."""
    folder, state = tmp_path / "memory", tmp_path / "state"
    ids = _id_folder(folder)
    started(folder, state)
    warm = started(folder, state)
    plain = started(folder, state)
    # The same cache, its ids in a list and a dict (what every warm index held before).
    plain.index._ids = list(plain.index._ids)
    plain.index._number = dict(zip(plain.index._ids, range(len(ids)), strict=True))
    rng = random.Random(4)
    for step in range(120):
        memory_id = rng.choice([*ids, "new_one", "新的/一条"])
        action = rng.choice(["remove", "put", "withhold", "put"])
        for store in (warm, plain):
            if action == "remove":
                store.index.remove(memory_id)
            elif action == "withhold":
                store.index.withhold([memory_id])
            else:
                memory = store.index.get(memory_id) or fresh_memory(folder, memory_id, step)
                store.index.put(memory)
        one, other = warm.index, plain.index
        assert list(one._number) == list(other._number), step
        assert list(one._ids) == list(other._ids)
        assert len(one) == len(other) and one.ids() == other.ids()
        assert all(one._number.get(key) == other._number.get(key) for key in ids)
    for kwargs in ({}, {"category": "user"}, {"tags": ["t1"]}, {"archived": True}):
        for query in QUERIES:
            assert [(h.id, h.score) for h in warm.search(query, **kwargs)] == [
                (h.id, h.score) for h in plain.search(query, **kwargs)
            ], (query, kwargs)


def fresh_memory(folder: Path, memory_id: str, step: int):  # type: ignore[no-untyped-def]
    from sage_mem.memory.value import Memory

    return Memory(id=memory_id, path=folder / f"{memory_id}.md",
                  description=f"added at step {step} 数据库 cat", body=f"body {step}")


def test_a_warm_store_reading_a_changed_file_makes_no_entry_for_every_other_file(
    tmp_path: Path,
) -> None:
    """A hook over one changed file made the signature entry of every other file (45 MB at
    100,000): the one it read goes on top of the lazy ones, which are made only when asked."""
    folder, state = tmp_path / "memory", tmp_path / "state"
    ids = _id_folder(folder)
    started(folder, state)
    changed = folder / f"{ids[5]}.md"
    changed.write_text(changed.read_text(encoding="utf-8") + "an edit\n", encoding="utf-8")
    warm = MemoryStore(folder, state_dir=state, watch=False, build=False)
    assert "an edit" in warm.read(ids[5]).body
    assert warm._seen_later is not None  # the other files' entries are not made
    assert len(warm._seen_map) == 1
    assert warm._seen[str(changed)] == store_module._signature(changed.stat())  # the read, on top
    assert len(warm._seen) == len(ids)


def test_a_warm_store_holds_no_list_or_dict_of_every_id(tmp_path: Path) -> None:
    """A hook's store: its ids stay packed (100,000 strings and their dict were 16 MB)."""
    import gc
    import types

    folder, state = tmp_path / "memory", tmp_path / "state"
    ids = _id_folder(folder)
    started(folder, state)
    warm = started(folder, state)
    for query in QUERIES:
        warm.search(query, limit=5)
        warm.search(query, limit=5, category="user", tags=["t1"])
    assert warm.index.get(ids[7]).id == warm.read(ids[7]).id == ids[7]  # type: ignore[union-attr]
    probe, seen, held = ids[3], set(), []
    waiting: list[object] = [warm]
    while waiting:  # everything the store reaches, but code, classes and modules
        found = waiting.pop()
        if id(found) in seen or isinstance(found, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(found))
        if isinstance(found, (list, dict, set, tuple)) and len(found) >= len(ids) \
                and probe in found:
            held.append(type(found).__name__)
        waiting.extend(gc.get_referents(found))
    assert len(seen) > 1000 and held == []
