"""What the README and docs/agents.md say of the API and the tool list is measured, not guessed.

- The README's Python example runs as written against a real folder, and every
  attribute its comments name (`hit.id`, `.score`, `.meta`…) exists.
- The tool-list size docs/agents.md states is what an agent receives, measured
  through the official MCP client (within 2%: a description edit that moves it
  further must update the page).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from mcp import Client
from support import ROOT, TEMPLATE

from sage_mem import Hit, Memory, MemoryStore
from sage_mem.mcp_server.server import build_server

README = (ROOT / "README.md").read_text(encoding="utf-8")
AGENTS = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")


def python_example() -> str:
    section = README.split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_python_example_runs_as_written(isolated_env: Path) -> None:
    shutil.copytree(TEMPLATE, isolated_env / "home" / ".sage-mem" / "memory")
    namespace: dict[str, object] = {}
    exec(compile(python_example(), "README.md", "exec"), namespace)  # noqa: S102
    assert isinstance(namespace["memory"], Memory)


def test_every_attribute_the_example_names_exists() -> None:
    named = set()
    for line in python_example().splitlines():
        _, hash_, comment = line.partition("#")
        if hash_:
            named |= set(re.findall(r"(?:^|(?<=[\s,(]))(?:hit)?\.(\w+)", comment))
    assert {"id", "score", "meta", "body", "sha256"} <= named
    for name in named:
        assert name in Memory.__dataclass_fields__ or name in Hit.__dataclass_fields__, name


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_documented_tool_list_size_is_the_measured_one(empty_dir: Path) -> None:
    async with Client(build_server(MemoryStore(empty_dir, watch=False))) as client:
        tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                 for tool in (await client.list_tools()).tools]
    seen = [{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in tools]
    measured = (len(json.dumps(seen, ensure_ascii=False)),
                len(json.dumps(tools, ensure_ascii=False)))
    stated = re.search(r"is about ([\d,]+) characters, ([\d,]+) with output schemas",
                       " ".join(AGENTS.split()))
    assert stated, "docs/agents.md no longer states the tool list's size"
    for said, real in zip(stated.groups(), measured, strict=True):
        number = int(said.replace(",", ""))
        assert abs(number - real) <= real * 0.02, (
            f"docs/agents.md says {said} characters; an agent receives {real:,}"
        )
