"""The session gate counts every session: Claude Code's hook sessions and MCP sessions of
any client (the real `sage-mem serve` over stdio, through the official `mcp` client), a
Claude Code session that uses both once."""

from __future__ import annotations

import io
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from sage_mem.agents.hooks import run_hook
from sage_mem.dream import run_dream
from sage_mem.dream.gates import count_sessions_since
from sage_mem.dream.paths import DreamPaths
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def mcp_session(
    memory_dir: Path, *, tool_calls: int = 1, **env: str
) -> None:
    """One MCP session of a client: connect to `sage-mem serve`, call tools, leave."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sage_mem", "serve"],
        cwd=memory_dir.parent,
        env={
            "SAGE_MEM_DIR": str(memory_dir),
            "HOME": str(memory_dir.parent / "home"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            **env,
        },
    )
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        for _ in range(tool_calls):
            result = await client.call_tool("memory_search", {"query": "cat 猫"})
            assert not result.is_error


def hook_session(memory_dir: Path, session_id: str) -> None:
    payload = {"session_id": session_id, "cwd": str(memory_dir.parent), "source": "startup"}
    out, err = io.StringIO(), io.StringIO()
    assert run_hook("session-start", io.StringIO(json.dumps(payload)), out, err,
                    folder=memory_dir) == 0


def active_since(memory_dir: Path, since: datetime) -> int:
    return count_sessions_since(DreamPaths(MemoryStore(memory_dir, watch=False).folder), since)


async def test_mcp_sessions_of_any_client_count_with_hook_sessions(memory_dir: Path) -> None:
    since = datetime.now(UTC) - timedelta(minutes=1)
    await mcp_session(memory_dir)  # e.g. Codex
    await mcp_session(memory_dir, tool_calls=3)  # e.g. Cursor: one session, several calls
    hook_session(memory_dir, "9d0f5c1e-0b1a-4a57-9a51-3f7a3f3c2b10")
    assert active_since(memory_dir, since) == 3

    store = MemoryStore(memory_dir, watch=False)
    first = run_dream(store, auto=True, now=since)  # the gates now count from here
    assert first.status == "finished"
    later = since + timedelta(hours=30)
    assert run_dream(store, auto=True, min_sessions=4, now=later).gate == "sessions"
    await mcp_session(memory_dir)
    assert run_dream(store, auto=True, min_sessions=4, now=later + timedelta(minutes=11)).status \
        == "finished"


async def test_a_claude_code_session_with_hooks_and_mcp_counts_once(memory_dir: Path) -> None:
    since = datetime.now(UTC) - timedelta(minutes=1)
    session_id = "5b3c2e8a-7f41-4c2d-9e1b-0a6d4f8e2c71"
    hook_session(memory_dir, session_id)
    await mcp_session(memory_dir, CLAUDE_CODE_SESSION_ID=session_id)
    assert active_since(memory_dir, since) == 1
    # Another Claude Code session, MCP only (no hooks installed), still counts.
    await mcp_session(memory_dir, CLAUDE_CODE_SESSION_ID="0c9e6f1d-2a3b-4c5d-8e7f-9a0b1c2d3e4f")
    assert active_since(memory_dir, since) == 2


async def test_a_session_without_activity_or_inside_a_dream_run_does_not_count(
    memory_dir: Path,
) -> None:
    since = datetime.now(UTC) - timedelta(minutes=1)
    await mcp_session(memory_dir, tool_calls=0)  # connected, never used
    await mcp_session(memory_dir, SAGE_MEM_DREAM_RUN="20261129T080000Z-0001")
    assert active_since(memory_dir, since) == 0


def test_a_hook_session_counts_even_when_nothing_was_injected(empty_dir: Path) -> None:
    since = datetime.now(UTC) - timedelta(minutes=1)
    hook_session(empty_dir, "e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b")
    assert active_since(empty_dir, since) == 1


async def test_mcp_session_marks_older_than_a_week_are_pruned(memory_dir: Path) -> None:
    sessions = memory_dir.parent / ".memory.sage-mem" / "sessions"
    sessions.mkdir(parents=True)
    old = sessions / "0123456789abcdef.conn.json"
    old.write_text("", encoding="utf-8")
    week_ago = (datetime.now(UTC) - timedelta(days=8)).timestamp()
    os.utime(old, (week_ago, week_ago))
    await mcp_session(memory_dir)
    assert not old.exists()
    assert len(list(sessions.glob("*.conn.json"))) == 1
