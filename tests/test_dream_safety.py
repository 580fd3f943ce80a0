"""Autodream and rollback never follow, copy or wait on what is not a memory, never revert an
edit made after the run unless asked, and keep their state private.

Everything here goes through `python -m sage_mem --dir D ...` in a child process, as a person
would run it: a hang is a timeout, a crash an exit status.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from reliability_support import assert_one_line_error, cli_process, tree
from support import ROOT, TEMPLATE, wait_until
from test_dream_support import add, memory_text
from test_ui import Client

from sage_mem.disk.folder import MemoryFolder
from sage_mem.disk.stats import Stats
from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer

SECRET = b"zebra-body-7731"  # the bytes of a file outside the memory folder
TIMEOUT = 60  # seconds; each command here takes well under one


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sage(
    folder: Path, *args: str, umask: int = -1, timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, umask=umask,
    )


def sage_json(folder: Path, *args: str, umask: int = -1) -> Any:
    done = sage(folder, *args, "--json", umask=umask)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def dream(folder: Path, *, umask: int = -1) -> dict[str, Any]:
    run = sage_json(folder, "dream", "--mode", "rewrite", umask=umask)
    assert run["status"] == "finished", run
    return run


def state_dir(folder: Path) -> Path:
    return MemoryFolder(folder).state_dir


def tidy_folder(folder: Path) -> dict[str, Path]:
    """Memories a rewrite run changes: a relative date made absolute, a superseded one archived."""
    return {
        "dated": add(
            folder, "project_x", "Plan", "Decided yesterday.",
            category="project", created="2026-11-25",
        ),
        "old": add(folder, "user_old", "Old editor: vim", "vim", category="user"),
        "new": add(
            folder, "user_new", "New editor: helix", "helix",
            category="user", supersedes=["user_old"],
        ),
    }


def bytes_under(base: Path) -> list[tuple[Path, bytes]]:
    """Every regular file under `base` (links are not followed) with its bytes."""
    found = []
    for dirpath, _, filenames in os.walk(base):
        for name in filenames:
            path = Path(dirpath) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                found.append((path, path.read_bytes()))
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    secret = tmp_path / "outside" / "secret.md"
    secret.write_text(memory_text("Outside secret zebra", SECRET.decode()), encoding="utf-8")
    return secret


# Item 9: the checked read — nothing outside the folder is copied, followed or waited on


def test_a_memory_linked_outside_the_folder_is_not_copied_and_stays_a_link(
    empty_dir: Path, outside: Path, tmp_path: Path
) -> None:
    tidy_folder(empty_dir)
    (empty_dir / "leak.md").symlink_to(outside)
    run = dream(empty_dir)
    holders = [p for p, data in bytes_under(tmp_path) if SECRET in data and p != outside]
    assert holders == []
    report = Path(run["report"]).read_text(encoding="utf-8")
    assert "leak.md" in report and "not copied" in report
    undo = sage(empty_dir, "rollback", run["runId"], "--scope", "all")
    assert undo.returncode == 0, undo.stderr
    assert (empty_dir / "leak.md").is_symlink()
    assert os.readlink(empty_dir / "leak.md") == str(outside)
    assert "leak.md" in undo.stdout  # reported, not restored
    assert [p for p, data in bytes_under(tmp_path) if SECRET in data and p != outside] == []


def test_a_link_out_of_the_folder_removed_after_the_run_is_not_brought_back_as_a_memory(
    empty_dir: Path, outside: Path, tmp_path: Path
) -> None:
    tidy_folder(empty_dir)
    (empty_dir / "leak.md").symlink_to(outside)
    run = dream(empty_dir)
    (empty_dir / "leak.md").unlink()
    undo = sage(empty_dir, "rollback", run["runId"], "--scope", "all")
    assert undo.returncode == 0, undo.stderr
    assert not os.path.lexists(empty_dir / "leak.md")
    assert [p for p, data in bytes_under(tmp_path) if SECRET in data and p != outside] == []
    found = sage_json(empty_dir, "search", "zebra")
    assert found["results"] == []


def test_a_memory_linked_to_dev_zero_is_refused_not_read(empty_dir: Path) -> None:
    tidy_folder(empty_dir)
    (empty_dir / "zero.md").symlink_to("/dev/zero")
    run = dream(empty_dir)
    assert "zero.md" in Path(run["report"]).read_text(encoding="utf-8")
    undo = sage(empty_dir, "rollback", run["runId"], "--scope", "all")
    assert undo.returncode == 0, undo.stderr
    assert os.readlink(empty_dir / "zero.md") == "/dev/zero"


# Item 12: a FIFO named like a memory


def test_a_fifo_named_like_a_memory_does_not_hang_a_rewrite_run_or_hold_the_lock(
    empty_dir: Path,
) -> None:
    paths = tidy_folder(empty_dir)
    before = paths["dated"].read_bytes()
    os.mkfifo(empty_dir / "x.md")
    run = dream(empty_dir)  # a timeout here is the hang
    assert paths["dated"].read_bytes() != before
    assert "x.md" in Path(run["report"]).read_text(encoding="utf-8")
    added = sage(empty_dir, "add", "user_cat", "--category", "user", "--description", "Cat")
    assert added.returncode == 0, added.stderr  # the write lock was let go
    undo = sage(empty_dir, "rollback", run["runId"], "--scope", "all")
    assert undo.returncode == 0, undo.stderr
    assert "x.md" in undo.stdout
    assert stat.S_ISFIFO(os.lstat(empty_dir / "x.md").st_mode)
    assert paths["dated"].read_bytes() == before


def test_the_page_shows_a_run_whose_file_is_a_fifo_now(empty_dir: Path) -> None:
    paths = tidy_folder(empty_dir)
    run = dream(empty_dir)
    paths["dated"].unlink()
    os.mkfifo(paths["dated"])
    answer: dict[str, Any] = {}
    with MemoryStore(empty_dir, watch=False) as store, UiServer(store, port=0).start() as server:

        def ask() -> None:
            try:
                answer["status"], answer["body"], _ = Client(server).request(
                    "GET", f"/api/runs/{run['runId']}"
                )
            except OSError as exc:  # the request timed out
                answer["error"] = exc

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        asking.join(TIMEOUT / 2)
        if asking.is_alive():  # stuck opening the FIFO: give it a writer so the server can stop
            fd = os.open(paths["dated"], os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            wait_until(lambda: not asking.is_alive(), timeout=TIMEOUT)
            pytest.fail("the run's page waited on a FIFO")
    assert answer["status"] == 200
    change = next(c for c in answer["body"]["run"]["changes"] if c["file"] == "project_x.md")
    # What the run wrote was only in the file, which is a FIFO now: said gone, never waited on.
    assert change["diff"] is None and "no longer kept" in change["diffNote"]


# Item 7: an edit made after the run is never reverted unless asked


def test_a_file_edited_after_the_run_is_a_conflict_listed_first_and_kept(
    empty_dir: Path,
) -> None:
    paths = tidy_folder(empty_dir)
    before_old = paths["old"].read_bytes()
    run = dream(empty_dir)
    assert not paths["old"].exists()
    edited = paths["dated"].read_bytes() + b"Edited by hand after the run.\n"
    paths["dated"].write_bytes(edited)
    done = sage(empty_dir, "rollback", run["runId"])
    assert done.returncode == 0, done.stderr
    assert paths["dated"].read_bytes() == edited
    assert paths["old"].read_bytes() == before_old  # the rest of the run is undone
    lines = done.stdout.splitlines()
    assert "1 changed since the run" in lines[0] and "--force" in done.stdout
    assert lines[1].split()[:2] == ["conflict", "project_x.md"]
    report = Path(json.loads(sage(empty_dir, "runs", "--json").stdout)["runs"][0]["report"])
    text = (empty_dir / report).read_text(encoding="utf-8")
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0].startswith("## Skipped: changed since the run")
    assert "project_x.md" in text.split(sections[0])[1].split("## ")[0]


def test_force_puts_back_a_file_edited_after_the_run_and_the_edit_can_be_had_back(
    empty_dir: Path,
) -> None:
    paths = tidy_folder(empty_dir)
    before = paths["dated"].read_bytes()
    run = dream(empty_dir)
    edited = paths["dated"].read_bytes() + b"Edited by hand after the run.\n"
    paths["dated"].write_bytes(edited)
    plan = sage_json(empty_dir, "rollback", run["runId"], "--dry-run")
    assert plan["actions"][0]["action"] == "conflict" and plan["forcible"] == 1
    done = sage_json(empty_dir, "rollback", run["runId"], "--force")
    assert paths["dated"].read_bytes() == before
    assert done["conflicts"] == 0
    again = sage_json(empty_dir, "rollback", done["rollbackId"])
    assert paths["dated"].read_bytes() == edited
    assert again["conflicts"] == 0


def test_a_memory_created_after_the_run_is_left_in_service_unless_forced(
    empty_dir: Path,
) -> None:
    tidy_folder(empty_dir)
    run = dream(empty_dir)
    later = add(empty_dir, "user_later", "Written after the run", category="user")
    plan = sage_json(empty_dir, "rollback", run["runId"], "--scope", "all", "--dry-run")
    assert [a["action"] for a in plan["actions"] if a["path"] == "user_later.md"] == ["conflict"]
    sage_json(empty_dir, "rollback", run["runId"], "--scope", "all")
    assert later.is_file()


@pytest.mark.anyio
async def test_the_mcp_rollback_tool_lists_conflicts_first_and_puts_them_back_when_forced(
    empty_dir: Path,
) -> None:
    from mcp import Client

    from sage_mem.mcp_server.server import build_server

    paths = tidy_folder(empty_dir)
    before = paths["dated"].read_bytes()
    run = dream(empty_dir)
    paths["dated"].write_bytes(paths["dated"].read_bytes() + b"Edited after the run.\n")
    async with Client(build_server(MemoryStore(empty_dir, watch=False))) as client:
        plan = await client.call_tool("memory_rollback", {"run_id": run["runId"], "dry_run": True})
        first = plan.structured_content["actions"][0]
        assert (first["action"], first["path"], first["forcible"]) == (
            "conflict", "project_x.md", True
        )
        done = await client.call_tool("memory_rollback", {"run_id": run["runId"], "force": True})
        assert not done.is_error, done.content[0].text
    assert paths["dated"].read_bytes() == before


# An editor saving while the rollback writes

EDITOR_SAVES = r"""
import sys
from pathlib import Path
import sage_mem.disk.safe_io as safe_io
from sage_mem.cli import main

target, saved = Path(sys.argv[1]), sys.argv[2].encode()
real = safe_io._temp_file

def temp_file(path, data, mode):
    made = real(path, data, mode)
    if Path(path) == target and target.read_bytes() != saved:
        target.write_bytes(saved)  # the editor saves as the rollback's bytes are ready
    return made

safe_io._temp_file = temp_file
sys.exit(main(sys.argv[3:]))
"""


def test_an_editor_saving_during_the_rollback_is_not_overwritten(empty_dir: Path) -> None:
    paths = tidy_folder(empty_dir)
    run = dream(empty_dir)
    saved = paths["dated"].read_text(encoding="utf-8") + "Saved by an editor meanwhile.\n"
    done = subprocess.run(
        [sys.executable, "-c", EDITOR_SAVES, str(paths["dated"]), saved,
         "--dir", str(empty_dir), "rollback", run["runId"], "--json"],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert paths["dated"].read_text(encoding="utf-8") == saved
    result = json.loads(done.stdout)
    assert [a["action"] for a in result["actions"] if a["path"] == "project_x.md"] == [
        "conflict"
    ]


# Item 7: what a restored memory had


def test_retrieval_counts_follow_a_memory_the_rollback_restores(empty_dir: Path) -> None:
    tidy_folder(empty_dir)
    stats = Stats(MemoryStore(empty_dir, watch=False).stats.path)
    for _ in range(120):
        stats.record(["user_old"])
    run = dream(empty_dir)
    assert stats.retrievals("archive/user_old") == 120
    sage_json(empty_dir, "rollback", run["runId"])
    assert stats.retrievals("user_old") == 120
    assert "archive/user_old" not in stats.load()


def test_a_memory_put_back_no_longer_shows_as_archived(empty_dir: Path) -> None:
    tidy_folder(empty_dir)
    run = dream(empty_dir)
    assert "archive/user_old" in archived_ids(empty_dir)
    done = sage_json(empty_dir, "rollback", run["runId"])
    listed = archived_ids(empty_dir)
    assert "user_old" in listed and "archive/user_old" not in listed
    # Moved aside into the rollback's own folder in the state folder, not deleted.
    kept = [
        p for p, _ in bytes_under(state_dir(empty_dir) / "autodream" / "runs" / done["rollbackId"])
        if p.name == "user_old.md"
    ]
    assert len(kept) == 1


def test_undoing_a_rollback_puts_the_archived_copy_back_where_it_was(empty_dir: Path) -> None:
    tidy_folder(empty_dir)
    stats = Stats(MemoryStore(empty_dir, watch=False).stats.path)
    for _ in range(5):
        stats.record(["user_old"])
    run = dream(empty_dir)
    archived = (empty_dir / "archive" / "user_old.md").read_bytes()
    undo = sage_json(empty_dir, "rollback", run["runId"])
    sage_json(empty_dir, "rollback", undo["rollbackId"])
    assert not (empty_dir / "user_old.md").exists()
    assert [p.name for p in (empty_dir / "archive").iterdir()] == ["user_old.md"]
    assert (empty_dir / "archive" / "user_old.md").read_bytes() == archived
    assert stats.retrievals("archive/user_old") == 5


def archived_ids(folder: Path) -> set[str]:
    return {m["id"] for m in sage_json(folder, "list", "--archived")["memories"]}


# Item 11: permissions


def _modes(base: Path) -> dict[str, int]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            found[str(path.relative_to(base))] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def test_what_a_run_and_a_rollback_keep_in_the_state_folder_is_private_under_umask_0(
    empty_dir: Path,
) -> None:
    tidy_folder(empty_dir)
    run = dream(empty_dir, umask=0)
    sage_json(empty_dir, "rollback", run["runId"], umask=0)
    state = state_dir(empty_dir)
    modes = _modes(state / "autodream")
    assert any("snapshots" in p for p in modes) and any("runs" in p for p in modes)
    wrong = {
        p: oct(m) for p, m in modes.items()
        if m != (0o700 if (state / "autodream" / p).is_dir() else 0o600)
    }
    assert wrong == {}
    assert stat.S_IMODE(os.stat(state / "autodream").st_mode) == 0o700
    reports = _modes(empty_dir / "autodream")
    assert len(reports) == 2 and set(reports.values()) == {0o600}
    assert stat.S_IMODE(os.stat(empty_dir / "autodream").st_mode) == 0o700


def test_reports_in_a_folder_shared_with_a_group_are_shared_with_it_too(
    empty_dir: Path,
) -> None:
    tidy_folder(empty_dir)
    os.chmod(empty_dir, 0o2770)
    run = dream(empty_dir, umask=0)
    report = Path(run["report"])
    assert stat.S_IMODE(os.stat(report).st_mode) == 0o660
    assert stat.S_IMODE(os.stat(report.parent).st_mode) & 0o777 == 0o770
    snapshot = state_dir(empty_dir) / "autodream" / "snapshots" / run["runId"]
    assert {m for m in _modes(snapshot).values()} <= {0o600, 0o700}


@pytest.mark.parametrize("kind", ["file", "link-out"])
def test_a_run_whose_report_has_no_folder_is_refused_before_it_starts(
    tmp_path: Path, kind: str
) -> None:
    """`autodream` in the folder is a file (a person's notes, a remote's) or a link out of it:
    a dream and a rollback are refused in one line before they change a file or are recorded
    (a rollback once put every file back, then failed on its report, marked interrupted)."""
    folder = tmp_path / "memory"
    shutil.copytree(TEMPLATE, folder)
    (folder / "user_cat.md").write_text(
        "---\ndescription: The cat is Sesame\ncategory: user\nupdated: 2026-12-01T10:00:00Z\n"
        "---\nI saw her yesterday.\n", encoding="utf-8")
    done = cli_process("--dir", str(folder), "dream", "--mode", "rewrite", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["runId"]
    shutil.rmtree(folder / "autodream")
    if kind == "file":
        (folder / "autodream").write_text("my notes\n", encoding="utf-8")
    else:
        (tmp_path / "elsewhere").mkdir()
        (folder / "autodream").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    before = tree(folder)
    for argv in (["dream"], ["dream", "--mode", "rewrite"], ["rollback", run_id]):
        done = cli_process("--dir", str(folder), *argv)
        assert done.returncode == 1
        assert_one_line_error(done.returncode, done.stderr.decode())
        assert "autodream" in done.stderr.decode()
    assert tree(folder) == before
    assert not (kind == "link-out" and list((tmp_path / "elsewhere").iterdir()))
    runs = json.loads(cli_process("--dir", str(folder), "runs", "--json").stdout)["runs"]
    assert [run["runId"] for run in runs] == [run_id]  # nothing recorded, nothing interrupted
