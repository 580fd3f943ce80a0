"""A plain `sage-mem sync` line runs without click, and means exactly what click makes of it.

A sync with nothing to do at 10,000 memories is ~0.13 s of CPU, most of it the
interpreter's start and git's; click and the commands it would import cost
about 25 ms more (`benchmarks/sync.py`). So `cli.main` reads a plain sync line
itself (`agents/sync_command.plain_sync_line`) and runs it (`answer_sync_line`);
anything else goes to click. These tests hold the shortcut to click: the same
folder and options reach the sync, the same output, errors and exit status.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sync_support import bare_remote, machine, use_private_git

from sage_mem.agents import sync_command
from sage_mem.agents.sync_command import plain_sync_line
from sage_mem.cli import main
from sage_mem.commands import cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def both_ways(argv: list[str]) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(status, stdout, stderr) of `argv` through the entry point (the shortcut, when it
    takes the line), then through click alone."""
    runs = []
    for run in (main, lambda a, out, err: cli.main(a, standalone_mode=False, out=out, err=err)):
        out, err = io.StringIO(), io.StringIO()
        status = run(argv, out=out, err=err)
        runs.append((status, out.getvalue(), err.getvalue()))
    return runs[0], runs[1]


LINES = [
    ["sync"],
    ["--dir", "D", "sync"],
    ["--dir=D", "sync", "--json"],
    ["sync", "--dir", "D"],
    ["--dir", "D", "sync", "--dir", "E", "--no-push"],
    ["sync", "--remote", "R", "--dir", "D"],
    ["--dir", "D", "sync", "--remote=R", "--allow-secret", "--json", "--no-push"],
    ["--dir", "D", "sync", "--json", "--no-push", "--remote", "R"],
]
# Lines the shortcut leaves to click (click runs them or says what is wrong).
NOT_PLAIN = [
    ["--dir", "D"],
    ["--dir", "D", "sync", "--help"],
    ["--dir", "D", "sync", "--auto", "on"],
    ["--dir", "D", "sync", "--background"],
    ["--dir", "D", "sync", "--remote"],
    ["--dir", "D", "sync", "--remote", "--json"],
    ["--dir", "D", "sync", "--remote", "R", "--remote", "S"],
    ["--dir", "D", "sync", "--json", "--json"],
    ["--dir", "", "sync"],
    ["--dir=", "sync"],
    ["--dir", "D", "--json", "sync"],
    ["--remote", "R", "sync"],
    ["--dir", "D", "sync", "extra"],
    ["--dir", "D", "sync", "sync"],
    ["--version", "sync"],
    ["--dir", "D", "log", "sync"],
]


@pytest.mark.parametrize("argv", LINES, ids=[" ".join(a) for a in LINES])
def test_a_plain_sync_line_reaches_the_sync_as_click_reads_it(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGE_MEM_DIR", str(tmp_path / "default"))
    argv = [str(tmp_path / a) if a in ("D", "E") else a for a in argv]
    assert plain_sync_line(argv) is not None
    seen: list[dict[str, Any]] = []

    def recorded(folder: Path, **options: Any) -> int:
        seen.append({"folder": folder, **{k: v for k, v in options.items()
                                          if k not in ("out", "err")}})
        return 0

    monkeypatch.setattr(sync_command, "run_sync", recorded)
    shortcut, by_click = both_ways(argv)
    assert shortcut == by_click == (0, "", "")
    assert len(seen) == 2 and seen[0] == seen[1], seen


@pytest.mark.parametrize("argv", NOT_PLAIN, ids=[" ".join(a) or "(empty)" for a in NOT_PLAIN])
def test_any_other_line_is_left_to_click(argv: list[str]) -> None:
    assert plain_sync_line(argv) is None


def test_the_shortcut_says_what_click_says_and_exits_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    (tmp_path / "plain").mkdir()
    cases = [
        ["--dir", str(laptop), "sync", "--json"],  # nothing to do: the same JSON
        ["--dir", str(laptop), "sync"],  # the same summary line
        ["--dir", str(tmp_path / "plain"), "sync"],  # not a repository: one line, exit 1
        ["--dir", str(laptop / ".git"), "sync", "--json"],  # a folder that is no memory folder
        ["--dir", str(tmp_path / "missing"), "sync", "--no-push"],
    ]
    for argv in cases:
        shortcut, by_click = both_ways(argv)
        assert shortcut == by_click, argv
    status, out, _ = both_ways(cases[0])[0]
    assert status == 0 and json.loads(out)["pulled"] == []
    status, _, err = both_ways(cases[2])[0]
    assert status == 1 and err.startswith("sage-mem: error: ") and err.count("\n") == 1


IMPORTS_PROBE = [sys.executable, "-X", "importtime", "-m", "sage_mem"]


def test_a_plain_sync_line_imports_no_click(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    done = subprocess.run([*IMPORTS_PROBE, "--dir", str(laptop), "sync"], capture_output=True,
                          timeout=60, env={**os.environ, "SAGE_MEM_AUTOSYNC": "0"})
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().startswith("pulled 0, pushed 0")
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "sage_mem.sync.steps" in imported  # the probe saw the sync run
    assert not imported & {"click", "sage_mem.commands", "sage_mem.commands.base", "gettext"}, \
        sorted(imported & {"click", "sage_mem.commands", "sage_mem.commands.base"})
