"""`memory_edit`: an agent changes part of a memory's body, as a person edits a note.

Through the official `mcp` client against the server (`build_server`): one
unique string replaced, text appended, text inserted under a heading, each with
`memory_write`'s refusals (a stale `expected_sha256`, `locked: true`, a
credential, the size limit) and its guarantee that a refused edit writes
nothing; every byte outside the edit is kept, CRLF files included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from support import write_memory

from sage_mem import MemoryStore
from sage_mem.mcp_server.server import build_server

pytestmark = pytest.mark.anyio

NOTE = """---
description: How the team deploys the kettle service
category: project
updated: 2026-11-01T10:00:00Z
---

Deploy with `make ship` from the main branch.

## Steps

- build the image
- run the migrations

## Contacts

Mei Lin owns the service.
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(folder: Path) -> AsyncIterator[Client]:
    store = MemoryStore(folder, watch=False)
    try:
        async with Client(build_server(store)) as client:
            yield client
    finally:
        store.close()


async def edit(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("memory_edit", arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def refused(client: Client, **arguments: Any) -> str:
    result = await client.call_tool("memory_edit", arguments)
    assert result.is_error, result.structured_content
    (content,) = result.content
    assert "\n" not in content.text
    return content.text


async def read(client: Client, memory_id: str) -> dict[str, Any]:
    result = await client.call_tool("memory_read", {"id": memory_id})
    return json.loads(result.content[0].text)


def body_of(path: Path) -> str:
    return path.read_bytes().decode("utf-8").split("---\n", 2)[2]


async def test_replace_changes_that_text_only_and_returns_the_new_sha(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "project_kettle", NOTE)
    async with connected(empty_dir) as client:
        before = await read(client, "project_kettle")
        done = await edit(client, id="project_kettle", old="`make ship`", new="`make deploy`",
                          expected_sha256=before["sha256"])
        after = await read(client, "project_kettle")
    assert done["memory"]["sha256"] == after["sha256"] != before["sha256"]
    assert body_of(path) == NOTE.split("---\n", 2)[2].replace("`make ship`", "`make deploy`")
    text = path.read_text(encoding="utf-8")
    assert "updated: 2026-11-01T10:00:00Z" not in text, "the edit is stamped as an update"
    assert "description: How the team deploys the kettle service\n" in text


async def test_append_adds_at_the_end_and_under_a_heading_at_its_sections_end(
    empty_dir: Path,
) -> None:
    path = write_memory(empty_dir, "project_kettle", NOTE)
    async with connected(empty_dir) as client:
        await edit(client, id="project_kettle", append="- restart the workers",
                   heading="## Steps")
        await edit(client, id="project_kettle", append="Ask in #kettle first.")
    assert body_of(path) == (
        "\nDeploy with `make ship` from the main branch.\n\n## Steps\n\n- build the image\n"
        "- run the migrations\n- restart the workers\n\n## Contacts\n\nMei Lin owns the "
        "service.\nAsk in #kettle first.\n"
    )


async def test_chinese_text_is_replaced_and_inserted_under_a_chinese_heading(
    empty_dir: Path,
) -> None:
    path = write_memory(empty_dir, "user_cat_zh", "---\ndescription: 用户的猫叫芝麻\n"
                        "category: user\n---\n\n一只橘猫，名叫芝麻。\n\n## 习惯\n\n- 喜欢晒太阳\n")
    async with connected(empty_dir) as client:
        await edit(client, id="user_cat_zh", old="橘猫", new="三花猫")
        await edit(client, id="user_cat_zh", append="- 晚上十点吃饭", heading="习惯")
    assert body_of(path) == "\n一只三花猫，名叫芝麻。\n\n## 习惯\n\n- 喜欢晒太阳\n- 晚上十点吃饭\n"


async def test_a_crlf_file_keeps_every_byte_outside_the_edit(empty_dir: Path) -> None:
    original = NOTE.replace("\n", "\r\n").encode("utf-8")
    path = write_memory(empty_dir, "project_kettle", original)
    async with connected(empty_dir) as client:
        # the agent sends \n; the file's own line endings are what gets written
        await edit(client, id="project_kettle", old="- build the image\n- run the migrations",
                   new="- build the image\n- check the disk\n- run the migrations")
    data = path.read_bytes()
    head, tail = original.split(b"- build the image")
    assert data.endswith(b"- build the image\r\n- check the disk\r\n- run the migrations"
                         + tail.split(b"- run the migrations", 1)[1])
    assert b"\n" not in data.replace(b"\r\n", b"")
    body_start = original.index(b"\r\nDeploy")
    assert data[data.index(b"\r\nDeploy"):].startswith(original[body_start:len(head)])


async def test_an_old_string_found_twice_or_not_at_all_is_refused_and_nothing_written(
    empty_dir: Path,
) -> None:
    path = write_memory(empty_dir, "project_kettle", NOTE)
    async with connected(empty_dir) as client:
        twice = await refused(client, id="project_kettle", old="the", new="a")
        missing = await refused(client, id="project_kettle", old="make shipit", new="x")
    assert "occurs" in twice and "times" in twice and "more of the text" in twice
    assert "not in the body" in missing
    assert path.read_text(encoding="utf-8") == NOTE


async def test_a_stale_sha_is_refused_and_the_other_writers_bytes_kept(empty_dir: Path) -> None:
    path = write_memory(empty_dir, "project_kettle", NOTE)
    async with connected(empty_dir) as client:
        seen = await read(client, "project_kettle")
        by_hand = NOTE.replace("Mei Lin", "Wang Fang")
        path.write_text(by_hand, encoding="utf-8")  # an editor saves meanwhile
        message = await refused(client, id="project_kettle", old="`make ship`",
                                new="`make deploy`", expected_sha256=seen["sha256"])
    assert "changed on disk since it was read" in message
    assert path.read_text(encoding="utf-8") == by_hand


async def test_locked_secret_size_and_conflict_markers_are_refused_as_for_memory_write(
    empty_dir: Path,
) -> None:
    locked = write_memory(empty_dir, "user_locked", "---\ndescription: Locked one\n"
                          "locked: true\n---\n\nKeep me.\n")
    path = write_memory(empty_dir, "project_kettle", NOTE)
    async with connected(empty_dir) as client:
        assert "locked" in await refused(client, id="user_locked", append="more")
        token = "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"
        assert "allow_secret=true" in await refused(client, id="project_kettle", append=token)
        big = "x" * (512 * 1024)
        assert "512 KB" in await refused(client, id="project_kettle", append=big)
        markers = "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> main"
        assert "conflict markers" in await refused(client, id="project_kettle",
                                                    append=markers)
        assert path.read_text(encoding="utf-8") == NOTE
        await edit(client, id="project_kettle", append=token, allow_secret=True)
    assert locked.read_text(encoding="utf-8").endswith("Keep me.\n")
    assert path.read_text(encoding="utf-8").endswith(token + "\n")


@pytest.mark.parametrize(("arguments", "says"), [
    pytest.param({}, "give old and new", id="nothing"),
    pytest.param({"old": "a", "new": "b", "append": "c"}, "give old and new", id="two-kinds"),
    pytest.param({"old": "`make ship`"}, "needs both old and new", id="old-alone"),
    pytest.param({"old": "`make ship`", "new": "x", "heading": "Steps"}, "heading goes with",
                 id="heading-with-replace"),
    pytest.param({"append": "x", "heading": "Nowhere"}, "no heading 'Nowhere'", id="no-heading"),
    pytest.param({"old": "  ", "new": "x"}, "old is empty", id="blank-old"),
    pytest.param({"old": "Mei Lin", "new": "Mei Lin"}, "changes nothing", id="no-change"),
])
async def test_an_edit_that_is_not_one_change_is_refused(
    empty_dir: Path, arguments: dict[str, str], says: str,
) -> None:
    path = write_memory(empty_dir, "project_kettle", NOTE)
    async with connected(empty_dir) as client:
        message = await refused(client, id="project_kettle", **arguments)
        assert says in message, message
        assert "memory_nowhere" in await refused(client, id="memory_nowhere", append="x")
    assert path.read_text(encoding="utf-8") == NOTE


async def test_a_heading_inside_fenced_code_is_not_a_heading(empty_dir: Path) -> None:
    text = ("---\ndescription: Shell notes\n---\n\n```sh\n# Steps\necho hi\n```\n\n"
            "## Steps\n\n- one\n")
    path = write_memory(empty_dir, "reference_shell", text)
    async with connected(empty_dir) as client:
        await edit(client, id="reference_shell", append="- two", heading="Steps")
    assert body_of(path) == "\n```sh\n# Steps\necho hi\n```\n\n## Steps\n\n- one\n- two\n"


def test_the_cli_edit_makes_the_same_partial_edits_without_an_editor(
    empty_dir: Path, tmp_path: Path,
) -> None:
    """`sage-mem edit ID --replace OLD NEW` / `--append TEXT [--heading H]`: the tool's edit
    from the command line; no editor opens (EDITOR would fail), a mistake is one line."""
    path = write_memory(empty_dir, "project_kettle", NOTE)
    env = {**os.environ, "EDITOR": "false", "VISUAL": "false", "HOME": str(tmp_path)}

    def sage(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(empty_dir),
                               "edit", "project_kettle", *argv], capture_output=True,
                              text=True, env=env, timeout=60)

    done = sage("--replace", "`make ship`", "`make deploy`")
    assert done.returncode == 0 and done.stdout.startswith("Saved project_kettle"), done.stderr
    assert sage("--append", "- 重启工作进程", "--heading", "Steps").returncode == 0
    assert "- run the migrations\n- 重启工作进程\n\n## Contacts" in body_of(path)
    assert "`make deploy`" in body_of(path)
    twice = sage("--replace", "the", "a")
    assert twice.returncode == 1 and twice.stderr.count("\n") == 1
    assert "occurs" in twice.stderr and "Traceback" not in twice.stderr
    stale = sage("--append", "x", "--expected-sha256", "0" * 64)
    assert stale.returncode == 1 and "changed on disk" in stale.stderr
