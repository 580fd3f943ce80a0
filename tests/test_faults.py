"""Faults: a killed process, a full disk, a read-only folder, unreadable files, lost events.

The kill tests run the real write path in a child process and SIGKILL it:
- at *every* file-system call of one operation (create, update, archive,
  MEMORY.md regeneration), by counting the calls and killing at call K, so
  each crash point is tried, reproducibly (quick mode samples them);
- at random moments of a loop of large writes (quick mode: a few kills).
After each kill every memory is whole — its old bytes or its new ones, never
a mix — `MEMORY.md` too, the temp file a killed write leaves is never taken
for a memory, the lock is free, and the audit finds nothing wrong.

Killing autodream runs is in `test_dream_crash.py`.
"""

from __future__ import annotations

import errno
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_support import SLOW, assert_one_line_error, cli, hook, hook_context, prompt_input
from support import ROOT, TEMPLATE, wait_until, write_memory

from sage_mem.checks.audit import audit
from sage_mem.disk import safe_io
from sage_mem.disk.watch import Watcher
from sage_mem.errors import FolderError, InvalidMemory
from sage_mem.memory import catalog
from sage_mem.memory.file_format import parse_bytes
from sage_mem.store import MemoryStore

TEMP = re.compile(r"^\..+\.\d+\.[0-9a-f]{8}\.tmp$")
BIG = "".join(f"line {n} of a long body that takes a while to write\n" for n in range(3000))

# The child: one operation, with every file-system call counted; SIGKILL at call K.
CHILD = r"""
import os, signal, sys
from sage_mem.store import MemoryStore

folder, kill_at, operation = sys.argv[1], int(sys.argv[2]), sys.argv[3]
BIG = sys.stdin.read()
store = MemoryStore(folder, watch=False)  # no watcher thread: the same calls on every run
calls = 0

def counted(real):
    def call(*args, **kwargs):
        global calls
        calls += 1
        if calls == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call

for name in ("open", "write", "fsync", "close", "chmod", "replace", "link", "unlink", "rename",
             "mkdir", "stat", "fstat", "read"):
    setattr(os, name, counted(getattr(os, name)))

if operation == "update":
    store.write("user_cat_zh", description="用户的猫叫芝麻，三岁了", body=BIG)
elif operation == "create":
    store.write("project_new", description="a new project memory", category="project", body=BIG)
elif operation == "archive":
    store.archive("feedback_tests_first", reason="merged into the style guide")
elif operation == "index":
    store.regenerate_index()
print(calls)
"""


def run_child(folder: Path, kill_at: int, operation: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(kill_at), operation],
        input=BIG, capture_output=True, text=True, timeout=60, cwd=ROOT,
    )


def memory_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*.md") if not p.name.startswith(".")
    }


def prepared(folder: Path, operation: str) -> None:
    shutil.copytree(TEMPLATE, folder)
    if operation == "index":
        # MEMORY.md goes stale when memories are edited by hand: many lines change at once.
        for n in range(150):
            write_memory(folder, f"project_p{n:03}", f"---\ndescription: plan {n}\n---\n\nP{n}\n")
        MemoryStore(folder).regenerate_index()
        for n in range(0, 150, 3):
            text = f"---\ndescription: plan {n} v2\n---\n\nP{n}\n"
            write_memory(folder, f"project_p{n:03}", text)
    else:
        MemoryStore(folder).regenerate_index()


def check_whole(folder: Path, before: dict[str, bytes], operation: str) -> str:
    """Everything a killed operation may leave is whole; returns which state it is in."""
    store = MemoryStore(folder)
    assert store.problems() == []
    now = memory_files(folder)
    leftovers = [p.name for p in folder.rglob("*") if p.name.startswith(".") and p.is_file()]
    assert all(TEMP.match(name) for name in leftovers), leftovers
    assert {m.id + ".md" for m in store.list(archived=True)} == set(now) - {"MEMORY.md"}
    index = now.pop("MEMORY.md")
    old_index = before.pop("MEMORY.md")
    assert index in (old_index, store.catalog_text().encode())
    changed = {rel for rel in set(now) | set(before) if now.get(rel) != before.get(rel)}
    if operation == "update":
        assert changed <= {"user_cat_zh.md"}
        if changed:
            memory = store.read("user_cat_zh")
            assert memory.description == "用户的猫叫芝麻，三岁了" and memory.body == "\n" + BIG
    elif operation == "create":
        assert changed <= {"project_new.md"}
        if changed:
            assert store.read("project_new").body == "\n" + BIG
    elif operation == "archive":
        assert changed <= {"feedback_tests_first.md", "archive/feedback_tests_first.md"}
        live = now.get("feedback_tests_first.md")
        moved = now.get("archive/feedback_tests_first.md")
        assert (live is None) != (moved is None), "exactly one copy, live or archived"
        original = parse_bytes(before["feedback_tests_first.md"])
        kept = parse_bytes(live or moved or b"")
        assert kept.body == original.body
    else:
        assert changed == set()
    report = audit(store)
    assert not report.errors, report.format_text()
    store.write("user_profile", summary="written after the kill")  # the lock was released
    return "new" if changed or index != old_index else "old"


def kill_points(total: int) -> list[int]:
    points = list(range(1, total + 1))
    if SLOW:
        return points
    chooser = random.Random(total)
    return sorted({1, total, *chooser.sample(points, min(6, total))})


@pytest.mark.parametrize("operation", ["update", "create", "archive", "index"])
@pytest.mark.kills
def test_a_process_killed_at_any_file_system_call_leaves_every_memory_whole(
    tmp_path: Path, operation: str
) -> None:
    probe = tmp_path / "probe" / "memory"
    prepared(probe, operation)
    done = run_child(probe, 0, operation)
    assert done.returncode == 0, done.stderr
    total = int(done.stdout)
    assert total > 10
    states = []
    for kill_at in kill_points(total):
        folder = tmp_path / f"kill-{kill_at}" / "memory"
        prepared(folder, operation)
        before = memory_files(folder)
        killed = run_child(folder, kill_at, operation)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        states.append(check_whole(folder, before, operation))
        shutil.rmtree(folder.parent)
    assert "old" in states and (operation == "index" or "new" in states or not SLOW)


LOOP = r"""
import sys
from sage_mem.store import MemoryStore

store = MemoryStore(sys.argv[1])
ids = [f"project_loop{n}" for n in range(4)]
round_ = 0
print("ready", flush=True)
while True:
    round_ += 1
    body = "".join(f"line {n} of round {round_}\n" for n in range(4000))
    store.write(ids[round_ % 4], description=f"loop memory at round {round_}", body=body)
    if round_ % 5 == 0:
        store.feedback(ids[0], helpful=round_ % 2 == 0)
"""


@pytest.mark.kills
def test_a_write_loop_killed_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    shutil.copytree(TEMPLATE, folder)
    store = MemoryStore(folder)
    for n in range(4):
        store.write(f"project_loop{n}", description=f"loop memory {n}", category="project",
                    body="line 0 of round 0\n")
    chooser = random.Random(6)
    kills = 25 if SLOW else 3
    for _ in range(kills):
        child = subprocess.Popen([sys.executable, "-c", LOOP, str(folder)], cwd=ROOT,
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
            try:
                child.wait(timeout=chooser.uniform(0.05, 0.6))  # the random moment
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
            if child.stdout is not None:
                child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        fresh = MemoryStore(folder)
        assert fresh.problems() == []
        for n in range(4):
            memory = fresh.read(f"project_loop{n}")
            rounds = set(re.findall(r"of round (\d+)\n", memory.body))
            assert len(rounds) == 1, "a body from one round only, never a mix"
            assert len(re.findall(r"^line \d+ of round", memory.body, re.M)) in (1, 4000)
        index = (folder / "MEMORY.md").read_text(encoding="utf-8")
        assert index.startswith(catalog.HEADER) and index.endswith("\n")
        assert all(f"(project_loop{n}.md)" in index for n in range(4))
    assert not audit(MemoryStore(folder)).errors


# A full disk


def _full_disk_after(monkeypatch: pytest.MonkeyPatch, room: int) -> None:
    """os.write in safe_io.py writes `room` bytes in all, then fails with ENOSPC."""
    real_write = os.write
    left = {"room": room}

    def write(fd: int, data: bytes) -> int:
        if left["room"] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        chunk = bytes(data[: left["room"]])
        left["room"] -= len(chunk)
        return real_write(fd, chunk)

    monkeypatch.setattr(safe_io.os, "write", write)


@pytest.mark.parametrize("room", [0, 100, 4096])
def test_a_full_disk_refuses_the_write_and_leaves_every_byte(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, room: int
) -> None:
    store = MemoryStore(memory_dir)
    store.regenerate_index()
    before = memory_files(memory_dir)
    _full_disk_after(monkeypatch, room)
    for attempt in (
        lambda: store.write("user_cat_zh", body=BIG),
        lambda: store.write("project_full", description="no room", category="project", body=BIG),
        lambda: store.archive("user_profile", reason="no room"),
    ):
        with pytest.raises(OSError) as full:
            attempt()
        assert full.value.errno == errno.ENOSPC
    monkeypatch.undo()
    after = memory_files(memory_dir)
    assert after == before or set(after) - set(before) == {"archive/user_profile.md"}
    assert not [p for p in memory_dir.rglob(".*.tmp")]
    assert MemoryStore(memory_dir).problems() == []
    if "archive/user_profile.md" in after:  # moved, but its archive marks did not fit: text kept
        assert parse_bytes(after["archive/user_profile.md"]).body == parse_bytes(
            before["user_profile.md"]).body


def test_a_full_disk_while_memory_md_is_rewritten_keeps_the_memory_and_the_old_index(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(memory_dir)
    store.regenerate_index()
    old_index = (memory_dir / "MEMORY.md").read_bytes()
    real_temp_file = safe_io._temp_file

    def memory_write_fits_index_does_not(path: Path, data: bytes, mode: int):
        if path.name == "MEMORY.md":
            _full_disk_after(monkeypatch, 10)
        return real_temp_file(path, data, mode)

    monkeypatch.setattr(safe_io, "_temp_file", memory_write_fits_index_does_not)
    with pytest.raises(OSError):
        store.write("user_cat_zh", description="用户的猫叫芝麻，今年三岁")
    monkeypatch.undo()
    assert (memory_dir / "MEMORY.md").read_bytes() == old_index
    assert MemoryStore(memory_dir).read("user_cat_zh").description == "用户的猫叫芝麻，今年三岁"
    assert not [p for p in memory_dir.rglob(".*.tmp")]
    code, _, _ = cli("--dir", str(memory_dir), "index")  # repaired by the next regeneration
    assert code == 0 and "今年三岁" in (memory_dir / "MEMORY.md").read_text(encoding="utf-8")


def test_a_full_disk_is_one_line_in_the_cli_and_nothing_in_the_hook(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = memory_files(memory_dir)
    _full_disk_after(monkeypatch, 0)
    code, out, err = cli("--dir", str(memory_dir), "add", "user_cat_zh", "--body", "x")
    assert_one_line_error(code, err)
    assert "No space left on device" in err
    code, out, err = hook("user-prompt-submit", prompt_input("我的猫叫什么"), memory_dir)
    assert code == 0 and "user_cat_zh" in hook_context(out)  # reading needs no room
    assert "cannot record what was injected" in err
    monkeypatch.undo()
    assert memory_files(memory_dir) == before


def test_an_archive_on_a_full_disk_says_the_memory_is_not_archived_and_leaves_it(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename needs no room but the archive marks do (reproduced on a 64 KB tmpfs): the
    file is put back where it was, and the one line says it was not archived."""
    store = MemoryStore(memory_dir)
    store.regenerate_index()
    before = memory_files(memory_dir)
    _full_disk_after(monkeypatch, 0)
    code, _out, err = cli("--dir", str(memory_dir), "archive", "user_cat_zh", "--reason", "旧")
    assert_one_line_error(code, err)
    assert "user_cat_zh not archived (it stays where it was)" in err, err
    assert "No space left on device" in err
    with pytest.raises(OSError, match="user_profile not archived") as full:
        store.archive("user_profile", reason="no room")
    assert full.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert memory_files(memory_dir) == before
    assert store.read("user_profile").path == memory_dir / "user_profile.md"


def _memory_md_does_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file fits but MEMORY.md: its temp file fails with ENOSPC."""
    real_temp_file = safe_io._temp_file

    def memory_md_does_not_fit(path: Path, data: bytes, mode: int):
        if path.name == "MEMORY.md":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_temp_file(path, data, mode)

    monkeypatch.setattr(safe_io, "_temp_file", memory_md_does_not_fit)


@pytest.mark.parametrize("argv, said, kept", [
    pytest.param(("add", "user_cat_zh", "--description", "用户的猫叫芝麻，今年三岁"),
                 "user_cat_zh saved to user_cat_zh.md", ("user_cat_zh", "今年三岁"), id="update"),
    pytest.param(("add", "project_new", "--description", "A new project note",
                  "--category", "project", "--body", "Kept."),
                 "project_new saved to project_new.md", ("project_new", "A new project note"),
                 id="create"),
    pytest.param(("archive", "user_cat_zh", "--reason", "旧"),
                 "user_cat_zh archived to archive/user_cat_zh.md", ("archive/user_cat_zh", "芝麻"),
                 id="archive"),
    pytest.param(("mv", "user_cat_zh", "user/pets/芝麻"),
                 "user_cat_zh renamed to user/pets/芝麻.md", ("user/pets/芝麻", "芝麻"),
                 id="rename"),
])
def test_a_change_whose_memory_md_does_not_fit_says_the_change_is_made(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...], said: str,
    kept: tuple[str, str],
) -> None:
    """The memory was written; only MEMORY.md had no room: the person is told the change
    stands, and how MEMORY.md is brought up to date (not just "No space left on device")."""
    MemoryStore(memory_dir).regenerate_index()
    old_index = (memory_dir / "MEMORY.md").read_bytes()
    _memory_md_does_not_fit(monkeypatch)
    code, _out, err = cli("--dir", str(memory_dir), *argv)
    assert_one_line_error(code, err)
    assert said + ", but MEMORY.md not updated (No space left on device): `sage-mem index` " \
        "updates it" in err, err
    monkeypatch.undo()
    assert (memory_dir / "MEMORY.md").read_bytes() == old_index
    memory_id, text = kept
    memory = MemoryStore(memory_dir).read(memory_id)
    assert text in memory.description + memory.body
    code, _, _ = cli("--dir", str(memory_dir), "index")
    assert code == 0 and (memory_dir / "MEMORY.md").read_bytes() != old_index


def test_a_rename_on_a_full_disk_names_the_links_it_could_not_update(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename needs no room, the links to it in other memories do: those left naming the
    old id are said, where the error spoke of MEMORY.md alone (reproduced on a 64 KB tmpfs)."""
    (memory_dir / "user_linker.md").write_text(
        "---\ndescription: a note that links\ncategory: user\n---\nSee [[user_cat_zh]].\n",
        encoding="utf-8")
    MemoryStore(memory_dir).regenerate_index()
    _full_disk_after(monkeypatch, 0)
    code, _out, err = cli("--dir", str(memory_dir), "mv", "user_cat_zh", "user_cat_new")
    assert_one_line_error(code, err)
    assert "user_cat_zh renamed to user_cat_new.md (the links to it in user_linker still name " \
        "user_cat_zh: see `sage-mem audit`), but MEMORY.md not updated" in err, err
    monkeypatch.undo()
    assert "[[user_cat_zh]]" in (memory_dir / "user_linker.md").read_text(encoding="utf-8")


def test_the_store_says_a_write_is_saved_when_only_memory_md_does_not_fit(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(memory_dir)
    store.regenerate_index()
    _memory_md_does_not_fit(monkeypatch)
    with pytest.raises(OSError, match="user_profile saved to user_profile.md, but MEMORY.md "
                       "not updated") as full:
        store.write("user_profile", description="The user, now in Berlin")
    assert full.value.errno == errno.ENOSPC
    assert store.read("user_profile").description == "The user, now in Berlin"


# A read-only folder


def _read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Creating or replacing any file under `folder` fails with EROFS, as on a read-only mount."""
    real_open, real_replace, real_mkdir = os.open, os.replace, os.mkdir
    prefix = str(folder)

    def refuse(path: object) -> None:
        if str(path).startswith(prefix):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def open_(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def replace(src, dst, *args, **kwargs):
        refuse(dst)
        return real_replace(src, dst, *args, **kwargs)

    def mkdir(path, *args, **kwargs):
        refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "link", lambda src, dst, *a, **k: refuse(dst))
    monkeypatch.setattr(safe_io, "_rename_call", lambda src, dst, **flags: refuse(dst))


@pytest.mark.parametrize("what", ["memory folder", "state folder", "both"])
def test_a_read_only_folder_refuses_changes_clearly_and_still_serves_reads(
    tmp_path: Path, memory_dir: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    MemoryStore(memory_dir).regenerate_index()
    (tmp_path / ".memory.sage-mem").mkdir(exist_ok=True)
    before = memory_files(memory_dir)
    target = {"memory folder": memory_dir, "state folder": tmp_path / ".memory.sage-mem",
              "both": tmp_path}[what]
    _read_only(monkeypatch, target)
    store = MemoryStore(memory_dir)
    assert store.search("猫")[0].id == "user_cat_zh"
    for argv in (["add", "user_cat_zh", "--trust", "0.9"],
                 ["add", "project_ro", "--description", "read-only", "--category", "project"],
                 ["archive", "user_profile", "--reason", "read-only"],
                 ["feedback", "user_cat_zh", "helpful"]):
        code, out, err = cli("--dir", str(memory_dir), *argv)
        assert_one_line_error(code, err)
        assert "Read-only file system" in err or "state folder" in err, err
    code, out, err = hook("user-prompt-submit", prompt_input("我的猫叫什么"), memory_dir)
    assert code == 0 and "user_cat_zh" in hook_context(out)
    code, out, err = cli("--dir", str(memory_dir), "search", "猫")
    assert code == 0 and "user_cat_zh" in out
    monkeypatch.undo()
    assert memory_files(memory_dir) == before
    assert not [p for p in memory_dir.rglob(".*.tmp")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions; the "
                    "simulated read-only test above covers this")
def test_a_folder_without_write_permission_refuses_changes(memory_dir: Path) -> None:
    before = memory_files(memory_dir)
    os.chmod(memory_dir, 0o500)
    try:
        code, out, err = cli("--dir", str(memory_dir), "add", "project_x", "--description", "x")
        assert_one_line_error(code, err)
        assert MemoryStore(memory_dir).search("猫")
    finally:
        os.chmod(memory_dir, 0o700)
    assert memory_files(memory_dir) == before


@pytest.mark.parametrize("error", [errno.ENOLCK, errno.EOPNOTSUPP], ids=["ENOLCK", "EOPNOTSUPP"])
def test_a_state_folder_without_file_locks_refuses_changes_naming_the_lock(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    """A network file system without locks (NFS without lockd, some FUSE and SMB mounts): every
    change is refused rather than made unlocked, in one line that says where and why."""
    import fcntl

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(error, os.strerror(error))

    before = memory_files(memory_dir)
    monkeypatch.setattr(fcntl, "flock", no_locks)
    for argv in (["add", "project_x", "--description", "网络盘 x"], ["feedback", "user_cat_zh",
                                                                  "helpful"]):
        code, out, err = cli("--dir", str(memory_dir), *argv)
        assert_one_line_error(code, err)
        assert "write.lock" in err and "does not support file locks" in err, err
    assert memory_files(memory_dir) == before
    assert MemoryStore(memory_dir, watch=False).search("猫")


def test_a_folder_moved_away_while_a_server_runs_is_one_line_naming_it(memory_dir: Path) -> None:
    """`mv memory notes` while an MCP server runs on `memory`: each change it is asked for
    says the folder is gone, in one line; nothing is made where the folder was."""
    import anyio
    from reliability_support import mcp_call, mcp_client

    store = MemoryStore(memory_dir, watch=True)
    moved = memory_dir.with_name("notes")
    before = memory_files(memory_dir)

    async def calls() -> list[str]:
        errors = []
        async with mcp_client(store) as client:
            memory_dir.rename(moved)
            for tool, arguments in (
                ("memory_write", {"id": "project_new", "description": "搬家以后 after the move"}),
                ("memory_write", {"id": "user_cat_zh", "body": "芝麻 moved too"}),
                ("memory_archive", {"id": "user_cat_zh", "reason": "outdated"}),
                ("memory_feedback", {"id": "user_cat_zh", "helpful": True}),
            ):
                good, error = await mcp_call(client, tool, **arguments)
                assert not good, tool
                errors.append(error)
        return errors

    try:
        errors = anyio.run(calls)
    finally:
        store.close()
    assert all(str(memory_dir) in error and " is gone" in error for error in errors), errors
    assert not memory_dir.exists()
    assert memory_files(moved) == before


def test_a_state_folder_that_cannot_be_created_is_a_folder_error(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _read_only(monkeypatch, tmp_path / ".memory.sage-mem")
    with pytest.raises(FolderError, match="cannot create the state folder"):
        MemoryStore(memory_dir).write("user_cat_zh", trust=0.9)


# Files without read permission


def _unreadable(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Opening `path` fails with EACCES, as for a file without read permission (root reads all)."""
    real_open = os.open
    real_builtin = open

    def os_open(name, flags, *args, **kwargs):
        if os.path.abspath(name) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(name))
        return real_open(name, flags, *args, **kwargs)

    def builtin_open(name, *args, **kwargs):
        if isinstance(name, (str, Path)) and os.path.abspath(name) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(name))
        return real_builtin(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr("sage_mem.checks.audit.open", builtin_open, raising=False)


def test_an_unreadable_file_is_reported_and_skipped_everywhere(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked_out = memory_dir / "user_profile.md"
    before = memory_files(memory_dir)
    _unreadable(monkeypatch, locked_out)
    store = MemoryStore(memory_dir)
    assert "user_profile" not in store.index and "user_cat_zh" in store.index
    (problem,) = store.problems()
    assert problem.path == locked_out and "no permission to read" in problem.message
    findings = [f for f in audit(store).findings if f.path == "user_profile.md"]
    assert [f.check for f in findings] == ["unreadable"] and "permission" in findings[0].message
    code, out, err = cli("--dir", str(memory_dir), "show", "user_profile")
    assert_one_line_error(code, err)
    code, out, err = cli("--dir", str(memory_dir), "index")
    assert code == 0 and "skipped" in out and "user_profile" not in (
        memory_dir / "MEMORY.md").read_text(encoding="utf-8")
    with pytest.raises(InvalidMemory, match="no permission"):
        store.write("user_profile", trust=0.9)
    code, out, err = hook("user-prompt-submit", prompt_input("我的猫叫什么"), memory_dir)
    assert code == 0 and "user_cat_zh" in hook_context(out)
    assert err.count("\n") == 1 and "no permission" in err
    monkeypatch.undo()
    now = memory_files(memory_dir)
    assert {k: v for k, v in now.items() if k != "MEMORY.md"} == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads through file permissions; the "
                    "simulated test above covers this")
def test_a_file_without_read_permission_is_reported_and_skipped(memory_dir: Path) -> None:
    (memory_dir / "user_profile.md").chmod(0)
    try:
        store = MemoryStore(memory_dir)
        assert "user_profile" not in store.index
        assert any("permission" in p.message for p in store.problems())
    finally:
        (memory_dir / "user_profile.md").chmod(0o600)



def _without_read_override() -> list[str]:
    """What runs a process so that it meets permissions as any user does: nothing, or as root
    `setpriv` dropping the capabilities that read through them (the test is skipped without)."""
    if os.geteuid() != 0:
        return []
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-dac_override,-dac_read_search"]
    if shutil.which("setpriv") is None or subprocess.run([*drop, "true"]).returncode != 0:
        pytest.skip("root reads through permissions and cannot drop that here")
    return drop


def test_a_memory_folder_without_read_permission_is_named_never_taken_for_an_empty_one(
    memory_dir: Path, tmp_path: Path
) -> None:
    """`chmod 000` on the folder (or a mount that denies it): `list` said "No memories.",
    `audit` "No problems found." and `export` wrote nothing, each with exit 0; the hooks
    injected nothing and said nothing of why."""
    prefix = _without_read_override()
    env = {**os.environ, "HOME": str(tmp_path), "SAGE_MEM_DIR": str(memory_dir),
           "SAGE_MEM_DAEMON": "off"}
    memory_dir.chmod(0)
    try:
        for command in (["list"], ["search", "cat"], ["audit"], ["export"]):
            done = subprocess.run([*prefix, sys.executable, "-m", "sage_mem", *command],
                                  capture_output=True, text=True, timeout=60, cwd=ROOT,
                                  env=env)
            assert_one_line_error(done.returncode, done.stderr)
            assert str(memory_dir) in done.stderr and "permission" in done.stderr, command
        for event in ("session-start", "user-prompt-submit"):
            done = subprocess.run([*prefix, sys.executable, "-m", "sage_mem", "hook", event],
                                  input='{"session_id": "s", "prompt": "cat"}',
                                  capture_output=True, text=True, timeout=60, cwd=ROOT,
                                  env=env)
            assert done.returncode == 0 and "Traceback" not in done.stderr
            assert str(memory_dir) in done.stderr and "permission" in done.stderr, event
    finally:
        memory_dir.chmod(0o700)


def test_a_subfolder_without_read_permission_is_named_by_list_search_audit_and_export(
    memory_dir: Path, tmp_path: Path
) -> None:
    """`chmod 000` on a topic folder: every walk passes over what it cannot list, so `list`
    and `search` left its memories out without a word, `audit` said "No problems found."
    and `export` wrote the rest with exit 0."""
    prefix = _without_read_override()
    env = {**os.environ, "HOME": str(tmp_path), "SAGE_MEM_DIR": str(memory_dir),
           "SAGE_MEM_DAEMON": "off"}
    hidden = memory_dir / "project" / "alpha"
    write_memory(memory_dir, "project/alpha/note_one", "---\ndescription: the alpha plan\n---\n")
    hidden.chmod(0)
    try:
        def run(*command: str) -> subprocess.CompletedProcess[str]:
            done = subprocess.run([*prefix, sys.executable, "-m", "sage_mem", *command],
                                  capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
            assert "Traceback" not in done.stderr, done.stderr
            return done

        listed = run("list")
        assert listed.returncode == 0 and "user_profile" in listed.stdout
        assert "project/alpha/" in listed.stderr and "permission" in listed.stderr
        searched = run("search", "alpha plan")
        assert searched.returncode == 0
        assert "project/alpha/" in searched.stderr and "permission" in searched.stderr
        audited = run("audit")
        assert audited.returncode != 0
        assert "project/alpha/" in audited.stdout + audited.stderr
        exported = run("export", "--output", str(tmp_path / "out.jsonl"))
        assert exported.returncode != 0
        assert "project/alpha/" in exported.stderr and "permission" in exported.stderr
    finally:
        hidden.chmod(0o700)


def test_a_subfolder_without_read_permission_is_named_by_sync_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git passes over a folder it may not open with a warning on its stderr, which sync took
    and dropped: `pushed 1`, the memories in it neither committed nor said. Its tracked files
    stay in the remote's tree."""
    from sync_support import bare_remote, machine, use_private_git

    prefix = _without_read_override()
    use_private_git(tmp_path, monkeypatch)
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "project/alpha/note_one", "---\ndescription: the alpha plan\n---\n")
    write_memory(laptop, "user_other", "---\ndescription: another\n---\n")
    done = subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(laptop), "sync"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    hidden = laptop / "project" / "alpha"
    (laptop / "user_other.md").write_text("---\ndescription: another, edited\n---\n",
                                          encoding="utf-8")
    hidden.chmod(0)
    try:
        done = subprocess.run([*prefix, sys.executable, "-m", "sage_mem", "--dir", str(laptop),
                               "sync"], capture_output=True, text=True, timeout=120)
    finally:
        hidden.chmod(0o700)
    assert "Traceback" not in done.stderr
    said = done.stdout + done.stderr
    assert "project/alpha/" in said and "permission" in said, said
    tree = subprocess.run(["git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only",
                           "HEAD"], capture_output=True, text=True, check=True).stdout
    assert "project/alpha/note_one.md" in tree.split()


# The watcher losing events


def test_events_the_watcher_never_delivers_are_repaired_by_the_periodic_reconcile(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(memory_dir, watch=False)  # the watcher under test is the only one
    watcher = Watcher(store, reconcile_seconds=0.2)
    monkeypatch.setattr(watcher, "notify", lambda paths: None)  # every event is lost
    watcher.start()
    try:
        write_memory(memory_dir, "project_lost", "---\ndescription: a lost axolotl\n---\n")
        (memory_dir / "user_profile.md").unlink()
        write_memory(memory_dir, "user_cat_zh", "---\ndescription: 用户养了一只狗\n---\n")
        wait_until(lambda: "project_lost" in store.index)
        wait_until(lambda: "user_profile" not in store.index)
        wait_until(lambda: store.index.get("user_cat_zh").description == "用户养了一只狗")
        assert watcher.flush_count == 0 and watcher.reconcile_count >= 1
    finally:
        watcher.stop()
    fresh = MemoryStore(memory_dir)
    assert sorted(store.index.ids()) == sorted(fresh.index.ids())

