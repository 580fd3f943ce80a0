"""Helpers shared by the reliability suites (bad input, faults, concurrency, containment).

Not a test module: it holds the few things those files all need — a byte-exact
picture of a folder, the CLI in-process and as a process, an MCP client over a
store, the hook in-process — and the checks they all make of an interface's
answer (one line, no traceback).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from support import ROOT

from sage_mem.agents.hooks import run_hook
from sage_mem.cli import main
from sage_mem.mcp_server.server import build_server
from sage_mem.store import MemoryStore

SLOW = os.environ.get("SAGE_MEM_SLOW") == "1"
"""`SAGE_MEM_SLOW=1` runs the heavy loops long; by default they run in a quick mode."""


def tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`, symlinks not followed: file bytes, or what a link or FIFO is."""
    out: dict[str, bytes | str] = {}
    if not folder.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            elif path.is_file():
                out[rel] = path.read_bytes()
            else:
                out[rel] = "special"
    return out


def cli(*argv: str) -> tuple[int, str, str]:
    """The CLI in-process: exit status, stdout, stderr. An unexpected exception propagates."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def cli_process(
    *argv: str | bytes, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The CLI as a real process (`python -m sage_mem`), bytes in and out."""
    return subprocess.run(
        [sys.executable, "-m", "sage_mem", *argv],
        input=stdin if stdin is not None else b"",
        capture_output=True, timeout=60, cwd=ROOT, env={**os.environ, **(env or {})},
    )


def assert_one_line_error(code: int, err: str) -> None:
    """A user error: exit 1 and exactly one line on stderr, no traceback."""
    assert code == 1, err
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("sage-mem: error: "), err


@asynccontextmanager
async def mcp_client(store: MemoryStore) -> AsyncIterator[Client]:
    async with Client(build_server(store)) as client:
        yield client


async def mcp_call(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(ok, structured result or one-line error text) of one tool call; a crash fails the test."""
    result = await client.call_tool(tool, arguments)
    (content,) = result.content
    if result.is_error:
        assert "\n" not in content.text and content.text.strip(), content.text
        assert "Traceback" not in content.text
        assert "Error executing tool" not in content.text, content.text  # an unexpected crash
        return False, content.text
    return True, result.structured_content


def hook(event: str, stdin: str, folder: Path | None = None) -> tuple[int, str, str]:
    """A hook in-process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(event, io.StringIO(stdin), out, err, folder=folder)
    return code, out.getvalue(), err.getvalue()


def hook_context(stdout: str) -> str:
    """The additionalContext of a hook answer ("" when it printed nothing)."""
    if not stdout:
        return ""
    answer = json.loads(stdout)
    return answer["hookSpecificOutput"]["additionalContext"]


def prompt_input(prompt: Any, session: Any = "s-bad-input", **extra: Any) -> str:
    data = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/home/dev/shop",
            "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    data.update(extra)
    return json.dumps(data)
