"""The user's story, end to end with real processes.

`sage-mem install claude-code` in a project; in one session the agent writes
"my cat is called Sesame" through the MCP server (the configured command, over
stdio, with the handshake Claude Code uses); in a later session the
UserPromptSubmit hook — run exactly as configured in settings.json — has already
put that memory in context when the user asks what the cat is called.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def run(
    argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


async def test_remembered_in_one_session_recalled_by_the_hook_in_the_next(tmp_path: Path) -> None:
    import sys

    project = tmp_path / "project"
    project.mkdir()
    # sage-mem on PATH, as a person who installed it has it: the project's files run it by name.
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    env = {**os.environ, "HOME": str(tmp_path / "home"), "SAGE_MEM_DIR": str(tmp_path / "memory"),
           "PATH": path}
    sage = [sys.executable, "-m", "sage_mem"]
    assert run([*sage, "init"], project, env).returncode == 0
    installed = run([*sage, "install", "claude-code"], project, env)
    assert installed.returncode == 0, installed.stderr
    assert "not on your PATH" not in installed.stdout

    server = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"][
        "sage-mem"
    ]
    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        cwd=project,
        env={**env, **server.get("env", {})},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        result = await client.call_tool(
            "memory_write",
            {
                "id": "user_cat",
                "description": "The user's cat is called Sesame",
                "category": "user",
                "aliases": ["pet"],
                "body": "An orange tabby, three years old.",
            },
        )
        assert not result.is_error, result.content[0].text

    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (group,) = settings["hooks"]["UserPromptSubmit"]
    command = shlex.split(group["hooks"][0]["command"])
    hook_input = {
        "session_id": "a-later-session",
        "transcript_path": str(tmp_path / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "what is my cat called?",
    }
    answer = run(command, project, env, stdin=json.dumps(hook_input))
    assert answer.returncode == 0, answer.stderr
    output = json.loads(answer.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "user_cat" in output["additionalContext"] and "Sesame" in output["additionalContext"]

    again = run(command, project, env, stdin=json.dumps(hook_input))
    assert again.returncode == 0 and "Sesame" not in again.stdout
