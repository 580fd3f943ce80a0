"""An audit people keep on (issue 17, item 6), as a person and a long-lived server meet it.

- `sage-mem audit` exits 1 for an error, 0 for warnings alone, and with
  `--strict` 1 for either: a pre-commit hook or CI fails on what matters.
- Claude Code's own file names (hyphenated words, no `<category>_` prefix) are
  another convention, not a finding; a prefix naming another category still is.
- A memory made by hand while `sage-mem serve` runs is listed in MEMORY.md by
  that process, so no `missing-from-index` is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support import write_memory


def audit(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "audit", *argv],
        capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def checks(folder: Path) -> list[tuple[str, str]]:
    report = json.loads(audit(folder, "--json").stdout)
    return [(f["path"], f["check"]) for f in report["findings"]]


FINE = "---\ndescription: {d}\ncategory: user\n---\n\nBody.\n"


def test_warnings_alone_exit_0_errors_exit_1_and_strict_fails_on_both(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_cat", FINE.format(d="The cat").replace("\n", "\r\n"))  # crlf
    done = audit(empty_dir)
    assert done.returncode == 0, done.stdout
    assert "crlf" in done.stdout and "0 errors, 1 warning" in done.stdout
    strict = audit(empty_dir, "--strict")
    assert strict.returncode == 1 and "--strict" in strict.stdout
    assert audit(empty_dir, "--json").returncode == 0
    assert audit(empty_dir, "--json", "--strict").returncode == 1

    write_memory(empty_dir, "user_dog", FINE.format(d="The dog") + "<<<<<<< HEAD\nA\n=======\n"
                 "B\n>>>>>>> other\n")
    done = audit(empty_dir)
    assert done.returncode == 1 and "conflict-markers" in done.stdout
    assert "1 error, 1 warning" in done.stdout


def test_a_clean_folder_exits_0_either_way(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_猫", FINE.format(d="猫叫芝麻"))
    for argv in ((), ("--strict",)):
        done = audit(empty_dir, *argv)
        assert done.returncode == 0 and "No problems found." in done.stdout


@pytest.mark.parametrize("name, category, flagged", [
    pytest.param("cluster-72-canonical-slot-crash", "project", False, id="claude-code-name"),
    pytest.param("feedback-testing", "feedback", False, id="hyphen-prefix"),
    pytest.param("用户-偏好", "user", False, id="chinese-hyphenated"),
    pytest.param("user-role", "feedback", True, id="hyphen-prefix-of-another-category"),
    pytest.param("notes", "project", True, id="no-prefix-one-word"),
    pytest.param("-rf", "user", True, id="leading-dash-is-no-name"),
    pytest.param("user_role", "feedback", True, id="underscore-prefix-of-another"),
])
def test_claude_code_file_names_are_not_flagged(
    empty_dir: Path, name: str, category: str, flagged: bool
) -> None:
    write_memory(empty_dir, name, (
        f"---\nname: {name}\ndescription: a memory named as Claude Code names them\n"
        f"metadata:\n  type: {category}\n---\n\nBody.\n"
    ))
    found = (name + ".md", "category-prefix") in checks(empty_dir)
    assert found is flagged


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_hand_made_memory_is_indexed_by_the_running_server(
    empty_dir: Path, tmp_path: Path
) -> None:
    write_memory(empty_dir, "user_cat", FINE.format(d="The cat is called Sesame"))
    assert audit(empty_dir).returncode == 0  # no MEMORY.md yet: nothing to be missing from
    subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "index"],
                   check=True, capture_output=True, timeout=60)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sage_mem", "serve"], cwd=tmp_path,
        env={**os.environ, "SAGE_MEM_DIR": str(empty_dir)},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        await client.call_tool("memory_search", {"query": "cat"})  # the server is up
        write_memory(empty_dir, "user_bike", FINE.format(d="The user rides a tandem"))
        write_memory(empty_dir, "project/自行车", FINE.format(d="双人自行车").replace(
            "category: user", "category: project"))
        with anyio.fail_after(20):
            while "自行车" not in (empty_dir / "MEMORY.md").read_text(encoding="utf-8") or (
                "user_bike" not in (empty_dir / "MEMORY.md").read_text(encoding="utf-8")
            ):
                await anyio.sleep(0.05)
        result = await client.call_tool("memory_audit", {})
        findings = result.structured_content["findings"]
        assert [f for f in findings if f["check"] == "missing-from-index"] == []
    assert not [c for c in checks(empty_dir) if c[1] == "missing-from-index"]
    assert audit(empty_dir, "--strict").returncode == 0
