"""Helpers for the sync tests: clones of a bare remote on local disk, driven by sage-mem.

Every test gets a git of its own: `GIT_CONFIG_GLOBAL` points at a file in the
test's folder (whose `init.defaultBranch` is `master`, to prove `main` is
chosen), the system config is skipped, and the author is set by environment.
The user's own git config is never read or written.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from sage_mem.cli import main

MARKER = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)


def use_private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[init]\n\tdefaultBranch = master\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Tester")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "tester@example.com")
    # git runs the merge driver as `python -m sage_mem`: it must import this checkout.
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + path if path else ""))


def git(folder: Path, *argv: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *argv], check=check, capture_output=True, text=True
    ).stdout


def sm(folder: Path | None, *argv: str) -> tuple[int, str, str]:
    """Run a sage-mem command line in-process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    prefix = ["--dir", str(folder)] if folder is not None else []
    status = main([*prefix, *argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def sm_process(folder: Path, *argv: str) -> tuple[int, str, str]:
    """Run a sage-mem command line as a process of its own (`python -m sage_mem`), as a
    person does: (status, stdout, stderr). A traceback on stderr fails the test."""
    done = subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(folder), *argv],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def sync(folder: Path, *argv: str, online: bool = True) -> dict[str, Any]:
    status, out, err = sm(folder, "sync", "--json", *argv)
    assert status == 0, (out, err)
    result: dict[str, Any] = json.loads(out)
    if online:
        assert result["offline"] is None, result["offline"]
    return result


def bare_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    return remote


def machine(folder: Path, remote: Path, name: str, *, first: bool = False) -> Path:
    """A clone named `name`: the first makes the folder (`init --git --remote`), the others
    join with `sync --remote` into a folder that does not exist yet."""
    if first:
        status, out, err = sm(folder, "init", "--git", "--remote", str(remote))
        assert status == 0, err
        git(folder, "config", "sage-mem.machine", name)
        sync(folder)
    else:
        status, out, err = sm(folder, "sync", "--remote", str(remote))
        assert status == 0, err
        git(folder, "config", "sage-mem.machine", name)
    return folder


def memory(description: str, body: str, **fields: Any) -> str:
    lines = ["---", f"description: {description}", "category: user"]
    for key, value in fields.items():
        if isinstance(value, list):
            lines.append(f"{key}: [{', '.join(value)}]")
        else:
            lines.append(f"{key}: {value}")
    return "\n".join([*lines, "---", "", body, ""])


def files(folder: Path) -> dict[str, bytes]:
    """Every file of the work tree (not .git), by path."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and rel.parts[0] != ".git":
            found[rel.as_posix()] = path.read_bytes()
    return found


def no_markers(folder: Path) -> None:
    for rel, data in files(folder).items():
        assert not MARKER.search(data.decode("utf-8", "replace")), f"conflict markers in {rel}"


def index_is_current(folder: Path) -> None:
    before = (folder / "MEMORY.md").read_bytes()
    status, _, err = sm(folder, "index")
    assert status == 0, err
    assert (folder / "MEMORY.md").read_bytes() == before, "MEMORY.md is not what `index` writes"
