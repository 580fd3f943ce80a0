"""Concurrent writers: several processes writing, giving feedback and archiving at once.

Worker processes use the API (each with a live watcher, as an MCP server has)
and the CLI, all on one folder, all started together. What must hold when
they are done:

- no lost update: a shared counter, incremented by read-modify-write with
  `expected_sha256`, ends at exactly the number of increments; the conflicts
  on the way were detected (refused), not silently overwritten;
- feedback from every process lands: trust ends where that many steps put it,
  and `stats.json` counts every feedback and every retrieval, exactly;
- a memory archived by several processes at once is archived once;
- `MEMORY.md` lists every memory at the end (none lost to a writer whose index
  was behind), and is what a fresh store would write;
- each process's index converges to the folder's real state.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from reliability_support import SLOW, cli
from support import ROOT, TEMPLATE, wait_until

from sage_mem.checks.audit import audit
from sage_mem.errors import ConflictError
from sage_mem.store import MemoryStore

API_WORKERS = 8 if SLOW else 4
CLI_WORKERS = 4 if SLOW else 2
ROUNDS = 30 if SLOW else 6
CLI_ROUNDS = 6 if SLOW else 1

API_WORKER = r"""
import json, sys, time
from sage_mem.errors import ConflictError, MemoryNotFound
from sage_mem.store import MemoryStore

folder, me, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = MemoryStore(folder, watch=True, reconcile_seconds=0.5)
print("ready", flush=True)
sys.stdin.readline()  # go: every worker starts at once
done = {"increments": 0, "conflicts": 0, "feedback": 0, "used": 0, "created": [], "archived": []}
for k in range(rounds):
    memory_id = f"project/w{me}/note_{k}"
    store.write(memory_id, description=f"worker {me} note {k} 第{k}条", category="project",
                body=f"written by worker {me} in round {k}\n" * 50)
    done["created"].append(memory_id)
    while True:
        counter = store.read("project_counter")
        try:
            store.write("project_counter", body=str(int(counter.body) + 1),
                        expected_sha256=counter.sha256)
            done["increments"] += 1
            break
        except ConflictError:
            done["conflicts"] += 1
    store.feedback("user_cat_zh", helpful=True)
    done["feedback"] += 1
    store.note_used(["user_profile"])
    done["used"] += 1
    if k % 3 == 2:
        store.archive(f"project/w{me}/note_{k - 1}", reason=f"worker {me} tidies up")
        done["archived"].append(f"project/w{me}/note_{k - 1}")
try:
    store.archive("project_contested", reason=f"worker {me} got there first")
    done["won"] = True
except MemoryNotFound:
    done["won"] = False
print(json.dumps(done), flush=True)
sys.stdin.readline()  # check: every worker is done writing

def state(s):
    return {m.id: m.sha256 for archived in (False, True) for m in s.list(archived=archived)}

deadline = time.monotonic() + 20
while state(store) != state(MemoryStore(folder)) and time.monotonic() < deadline:
    time.sleep(0.05)  # waiting for this process's watcher, not for the test
print(json.dumps({"converged": state(store) == state(MemoryStore(folder))}), flush=True)
store.close()
"""

CLI_WORKER = r"""
import json, subprocess, sys

folder, me, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def cli(*argv):
    return subprocess.run([sys.executable, "-m", "sage_mem", "--dir", folder, *argv],
                          capture_output=True, text=True)

print("ready", flush=True)
sys.stdin.readline()
done = {"increments": 0, "conflicts": 0, "feedback": 0, "used": 0, "created": [], "archived": []}
for k in range(rounds):
    memory_id = f"project/cli{me}/note_{k}"
    result = cli("add", memory_id, "--description", f"cli worker {me} note {k}",
                 "--category", "project", "--body", f"from the command line, round {k}")
    assert result.returncode == 0, result.stderr
    done["created"].append(memory_id)
    while True:
        shown = json.loads(cli("show", "project_counter", "--json").stdout)
        result = cli("add", "project_counter", "--body", str(int(shown["body"]) + 1),
                     "--expected-sha256", shown["sha256"])
        if result.returncode == 0:
            done["increments"] += 1
            break
        assert "changed on disk" in result.stderr, result.stderr
        done["conflicts"] += 1
    result = cli("feedback", "user_cat_zh", "helpful")
    assert result.returncode == 0, result.stderr
    done["feedback"] += 1
print(json.dumps(done), flush=True)
sys.stdin.readline()
print(json.dumps({"converged": True}), flush=True)
"""


def start(script: str, folder: Path, me: int, rounds: int) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(folder), str(me), str(rounds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    return child


def say(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()


def hear(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return child.stdout.readline()


def trust_after(steps: int, trust: float = 0.5) -> float:
    for _ in range(steps):
        trust = round(min(1.0, max(0.0, trust + (1.0 - trust) * 0.2)), 3)
    return trust


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    shutil.copytree(TEMPLATE, folder)
    store = MemoryStore(folder)
    store.write("project_counter", description="a counter every worker increments",
                category="project", body="0")
    store.write("project_contested", description="a memory every worker archives",
                category="project")
    return folder


def test_concurrent_writers_lose_no_update_no_entry_and_no_count(shared: Path) -> None:
    children = [start(API_WORKER, shared, n, ROUNDS) for n in range(API_WORKERS)]
    children += [start(CLI_WORKER, shared, n, CLI_ROUNDS) for n in range(CLI_WORKERS)]
    results: list[dict[str, Any]] = []
    try:
        assert all(hear(child) == "ready\n" for child in children)
        for child in children:
            say(child, "go")
        results = [json.loads(hear(child)) for child in children]
        for child in children:
            say(child, "check")
        converged = [json.loads(hear(child))["converged"] for child in children]
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=60)
            if child.stdout is not None:
                child.stdout.close()
    assert all(child.returncode == 0 for child in children)
    assert all(converged), "every process's index converged to the folder"

    store = MemoryStore(shared)
    increments = sum(r["increments"] for r in results)
    assert int(store.read("project_counter").body) == increments
    assert increments == API_WORKERS * ROUNDS + CLI_WORKERS * CLI_ROUNDS
    feedback = sum(r["feedback"] for r in results)
    assert store.read("user_cat_zh").trust == trust_after(feedback)
    stats_file = shared.parent / ".memory.sage-mem" / "stats.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    assert stats["user_cat_zh"]["helpful"] == feedback
    assert stats["user_profile"]["retrievals"] == sum(r["used"] for r in results)

    assert sum(1 for r in results if r.get("won")) == 1
    assert (shared / "archive" / "project_contested.md").is_file()
    assert not list((shared / "archive").glob("project_contested-*.md"))
    created = {m for r in results for m in r["created"]}
    archived = {m for r in results for m in r["archived"]}
    live = {m.id for m in store.list()}
    assert created - archived <= live
    assert {f"archive/{m}" for m in archived} <= {m.id for m in store.list(archived=True)}
    assert not live & archived

    index = (shared / "MEMORY.md").read_text(encoding="utf-8")
    assert index == store.catalog_text(), "MEMORY.md is what a fresh store writes"
    listed = {memory_id for memory_id in live if f"({memory_id}.md)" in index}
    more = re.search(r"…and (\d+) more memories", index)  # past 200 lines it says how many
    assert len(listed) + (int(more.group(1)) if more else 0) == len(live)
    assert store.problems() == []
    assert not list(shared.rglob(".*.tmp"))
    assert not audit(store).errors

    conflicts = sum(r["conflicts"] for r in results)
    print(f"\n{len(children)} processes, {increments} counter increments, {conflicts} conflicts "
          f"refused and retried, {feedback} feedbacks, {len(created)} memories created, "
          f"{len(archived) + 1} archived")


def test_a_writer_whose_index_is_behind_still_lists_every_memory(shared: Path) -> None:
    first, second = MemoryStore(shared), MemoryStore(shared)  # two processes, no watcher
    first.write("project_from_first", description="written by the first", category="project")
    second.write("project_from_second", description="written by the second", category="project")
    index = (shared / "MEMORY.md").read_text(encoding="utf-8")
    assert "(project_from_first.md)" in index and "(project_from_second.md)" in index
    assert "project_from_first" in second.index  # caught up under the lock
    first.archive("project_from_second", reason="merged")
    assert "project_from_second.md" not in (shared / "MEMORY.md").read_text(encoding="utf-8")


def test_two_writers_with_the_same_sha256_one_wins_one_is_refused(shared: Path) -> None:
    first, second = MemoryStore(shared), MemoryStore(shared)
    sha = first.read("user_cat_zh").sha256
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def write(store: MemoryStore, summary: str) -> None:
        barrier.wait()
        try:
            store.write("user_cat_zh", summary=summary, expected_sha256=sha)
            outcomes.append(summary)
        except ConflictError:
            outcomes.append("refused")

    threads = [threading.Thread(target=write, args=(s, t))
               for s, t in ((first, "芝麻 the first"), (second, "芝麻 the second"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 2 and outcomes.count("refused") == 1
    winner = next(o for o in outcomes if o != "refused")
    assert MemoryStore(shared).read("user_cat_zh").summary == winner


def test_cli_and_api_writers_at_once_keep_memory_md_complete(shared: Path) -> None:
    store = MemoryStore(shared)
    errors: list[BaseException] = []

    def api() -> None:
        try:
            for n in range(10):
                store.write(f"project/api/n{n}", description=f"api note {n}", category="project")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=api)
    thread.start()
    for n in range(10):
        code, _, err = cli("--dir", str(shared), "add", f"project/cli/n{n}", "--description",
                           f"cli note {n}", "--category", "project")
        assert code == 0, err
    thread.join()
    assert errors == []
    index = (shared / "MEMORY.md").read_text(encoding="utf-8")
    for n in range(10):
        assert f"(project/api/n{n}.md)" in index and f"(project/cli/n{n}.md)" in index
    assert index == MemoryStore(shared).catalog_text()


def test_an_archive_of_a_memory_changed_since_it_was_read_is_refused(shared: Path) -> None:
    agent, editor = MemoryStore(shared), MemoryStore(shared)
    seen = agent.read("user_cat_zh").sha256
    editor.write("user_cat_zh", summary="芝麻 is four now")
    with pytest.raises(ConflictError, match="changed on disk"):
        agent.archive("user_cat_zh", reason="outdated", expected_sha256=seen)
    assert (shared / "user_cat_zh.md").is_file() and not (shared / "archive").exists()
    fresh = agent.read("user_cat_zh").sha256
    assert agent.archive("user_cat_zh", reason="outdated", expected_sha256=fresh).archived


COUNTER = r"""
import sys
from pathlib import Path
from sage_mem.disk.locks import WriteLock
lock = WriteLock(Path(sys.argv[1]))
print("counting", flush=True)
while True:
    lock.count()
"""


def test_a_writer_killed_while_counting_never_sets_the_write_count_back(tmp_path: Path) -> None:
    """The count is how other processes learn of a write: it may only go up, whenever a
    writer dies (an empty count file would read as 0)."""
    import random
    import signal
    import time

    from sage_mem.disk.locks import read_generation

    chooser = random.Random(7)
    last = 0
    for _ in range(25):
        child = subprocess.Popen(
            [sys.executable, "-c", COUNTER, str(tmp_path)], cwd=ROOT,
            stdout=subprocess.PIPE, text=True,
        )
        assert child.stdout is not None and child.stdout.readline() == "counting\n"
        time.sleep(chooser.uniform(0.0, 0.02))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        now = read_generation(tmp_path)
        assert now >= last, f"the count went back from {last} to {now}"
        last = now
    assert last > 0


STATS_HOLDER = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("holding", flush=True)
sys.stdin.readline()
"""


def test_counts_held_up_by_another_process_never_undo_a_change_that_was_made(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retrieval and feedback counts are bookkeeping: a process stuck holding the stats lock
    (stopped, or on a starved machine) must not make an archive, a rename or a restore that
    happened report an error and leave MEMORY.md behind, nor fail a read or a feedback."""
    import functools

    from sage_mem.disk import locks, stats
    from sage_mem.mcp_server import memory_tools

    store = MemoryStore(shared)
    lock_path = store.stats.path.with_name(store.stats.path.name + ".lock")
    monkeypatch.setattr(stats, "file_lock", functools.partial(locks.file_lock, timeout=0.2))
    holder = subprocess.Popen([sys.executable, "-c", STATS_HOLDER, str(lock_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert hear(holder) == "holding\n"
        assert memory_tools.read(store, "user_cat_zh")["id"] == "user_cat_zh"  # MCP memory_read
        assert store.feedback("user_cat_zh", helpful=True).trust > 0.5
        archived = store.archive("project_contested", reason="整理：不再需要")
        renamed = store.rename("user_cat_zh", "user_pet_zh").memory
        restored = store.restore(archived.id)
    finally:
        holder.communicate("done\n")
    assert renamed.id == "user_pet_zh" and restored.id == "project_contested"
    catalog = (shared / "MEMORY.md").read_text(encoding="utf-8")
    assert "(user_pet_zh.md)" in catalog and "(user_cat_zh.md)" not in catalog
    assert catalog == MemoryStore(shared).catalog_text()


def test_a_dream_never_archives_a_memory_an_editor_saved_after_the_rule_read_it(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dream checks the memory against what its rule read, then archives: an edit saved by
    another process between that check and the archive may be the reason to keep it."""
    from datetime import UTC, datetime

    from sage_mem.dream.changes import Applier
    from sage_mem.dream.manifest import Manifest
    from sage_mem.dream.paths import DreamPaths

    store = MemoryStore(shared, watch=False)
    read = store.read("user_cat_zh")
    path = shared / "user_cat_zh.md"
    edited = path.read_text(encoding="utf-8") + "\n芝麻 is ill: keep this note (vet on Friday)\n"
    real_archive = store.archive

    def an_editor_saves_first(*args: Any, **kwargs: Any) -> Any:
        subprocess.run([sys.executable, "-c", "import sys; open(sys.argv[1], 'w', "
                        "encoding='utf-8').write(sys.argv[2])", str(path), edited], check=True)
        return real_archive(*args, **kwargs)

    monkeypatch.setattr(store, "archive", an_editor_saves_first)
    manifest = Manifest.start(DreamPaths(store.folder), "20261201T000000Z-race", kind="dream",
                              mode="rewrite", now=datetime.now(UTC))
    applier = Applier(store, manifest, mode="rewrite")
    assert applier.archive(read, rule="dedupe", reason="a duplicate of user_pet") is None
    assert path.read_text(encoding="utf-8") == edited
    assert not (shared / "archive").exists()
    assert [entry["id"] for entry in manifest.refused] == ["user_cat_zh"]


LOCK_HOLDER = r"""
import sys
from pathlib import Path
from sage_mem.disk.locks import file_lock, write_lock

kind, *paths = sys.argv[1:]
lock = write_lock(Path(paths[0]), Path(paths[1])) if kind == "write" else file_lock(Path(paths[0]))
with lock:
    print("held", flush=True)
    sys.stdin.readline()
"""


def hold(kind: str, *paths: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A process that takes a lock, says "held" and keeps it until told to let go."""
    return subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, kind, *map(str, paths)], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )


def still_running(process: subprocess.Popen[Any], seconds: float) -> bool:
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return True
    return False


@pytest.mark.parametrize(("pull_away", "elsewhere"), [
    pytest.param(shutil.rmtree, False, id="state-folder-removed"),
    pytest.param(lambda state: (state / "write.lock").unlink(), False, id="lock-file-removed"),
    pytest.param(lambda state: None, True, id="writer-given-another-state-folder"),
])
def test_the_write_lock_still_holds_when_its_lock_file_is_pulled_away(
    empty_dir: Path, tmp_path: Path, pull_away: Any, elsewhere: bool
) -> None:
    """A process holds the folder's write lock; the state folder (or its lock file) is deleted
    (a cleanup of "safe to delete" state), or the next writer names another state folder for
    the same memory folder. That writer must wait for the holder, never write beside it."""
    store = MemoryStore(empty_dir, watch=False)
    state = store.folder.state_dir
    holder = hold("write", empty_dir, state)
    env = dict(os.environ)
    writer = None
    try:
        assert hear(holder) == "held\n"
        pull_away(state)
        if elsewhere:
            env["SAGE_MEM_STATE_DIR"] = str(tmp_path / "elsewhere")
        writer = subprocess.Popen(
            [sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "add", "project_x",
             "--description", "written while another process held the lock"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        assert still_running(writer, 2), "the write did not wait for the lock's holder"
        assert not (empty_dir / "project_x.md").exists()
    finally:
        holder.communicate("done\n")
        if writer is not None:
            _, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert (empty_dir / "project_x.md").exists()


def test_a_lock_taken_on_a_file_deleted_meanwhile_is_taken_again_on_the_new_one(
    tmp_path: Path,
) -> None:
    """B waits on the lock file; it is deleted; C makes a new one and locks it; the first
    holder lets go. B's lock is then on a file no one else will ever lock: it must take the
    one at the path, held by C, and wait for C."""
    lock = tmp_path / "state" / "some.lock"
    first = hold("file", lock)
    waiting = third = None
    try:
        assert hear(first) == "held\n"
        waiting = hold("file", lock)
        fds = Path(f"/proc/{waiting.pid}/fd")
        if not fds.parent.exists():
            pytest.skip("needs /proc to see that the waiter opened the lock file")

        def opened() -> bool:
            try:
                return any(os.path.realpath(lock) == os.readlink(fd) for fd in fds.iterdir())
            except OSError:
                return False

        wait_until(opened, timeout=30)
        lock.unlink()
        third = hold("file", lock)
        assert hear(third) == "held\n"
        first.communicate("done\n")
        assert not _said_held(waiting, 2), (
            "two processes held the lock at once")
        third.communicate("done\n")
        assert hear(waiting) == "held\n"
    finally:
        for process in (first, waiting, third):
            if process is not None and process.poll() is None:
                process.communicate("done\n", timeout=30)


def _said_held(process: subprocess.Popen[str], seconds: float) -> bool:
    """Whether `process` says "held" within `seconds`."""
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        return bool(selector.select(timeout=seconds)) and process.stdout.readline() == "held\n"
