"""The MCP server: tools, resources and errors, through the real `mcp` client.

Over stdio against `sage-mem serve` as a subprocess (one server shared by the
module, connected with the initialize handshake Claude Code uses), and
in-process with `Client(server)` in the default and the legacy mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support import TEMPLATE, write_memory

from sage_mem import MemoryStore
from sage_mem.mcp_server.server import DESCRIPTIONS, INSTRUCTIONS, build_server

pytestmark = pytest.mark.anyio

TOOLS = sorted(DESCRIPTIONS)
MODES = [pytest.param("auto", id="default-mode"), pytest.param("legacy", id="legacy-handshake")]


def server_command() -> list[str]:
    """How the tests launch the server: the real CLI entry point."""
    return [sys.executable, "-m", "sage_mem", "serve"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(store: MemoryStore, mode: str = "auto") -> AsyncIterator[Client]:
    async with Client(build_server(store), mode=mode) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result (the text block says the same)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; its one-line error message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    (content,) = result.content
    assert "\n" not in content.text and content.text.strip()
    return content.text


@pytest.fixture
def store(memory_dir: Path) -> MemoryStore:
    return MemoryStore(memory_dir)


def aged(description: str, days: int, **extra: str) -> str:
    moment = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"description: {description}", f"updated: {moment}"]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\nBody.\n"


# stdio: the real `serve` process


@pytest.fixture(scope="module")
def stdio_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stdio")
    shutil.copytree(TEMPLATE, root / "memory")
    (root / "home").mkdir()
    return root


@pytest.fixture(scope="module")
async def stdio(stdio_folder: Path) -> AsyncIterator[Client]:
    command, *args = server_command()
    params = StdioServerParameters(
        command=command,
        args=args,
        cwd=stdio_folder,
        env={"SAGE_MEM_DIR": str(stdio_folder / "memory"), "HOME": str(stdio_folder / "home"),
             # this checkout's sage-mem, not the one the virtualenv has installed
             "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        yield client


# `serve` answers before the folder is open: a folder whose opening is held (here, until the
# test makes a file) still gets the initialize answer and the tool list; a call then waits.
HELD_SERVE = """
import os, sys, time
from sage_mem.mcp_server import server

opening = server.Opening._opening


def held(self):
    while not os.path.exists(os.environ["GATE"]):
        time.sleep(0.02)
    return opening(self)


server.Opening._opening = held
from sage_mem.cli import main

sys.exit(main(["serve"]))
"""


async def test_serve_lists_its_tools_before_the_folder_is_open(tmp_path: Path) -> None:
    shutil.copytree(TEMPLATE, tmp_path / "memory")
    (tmp_path / "home").mkdir()
    script = tmp_path / "held_serve.py"
    script.write_text(HELD_SERVE, encoding="utf-8")
    gate = tmp_path / "gate"
    params = StdioServerParameters(
        command=sys.executable, args=[str(script)], cwd=tmp_path,
        env={"SAGE_MEM_DIR": str(tmp_path / "memory"), "HOME": str(tmp_path / "home"),
             "GATE": str(gate), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        tools = (await client.list_tools()).tools
        assert sorted(tool.name for tool in tools) == TOOLS
        assert client.instructions == INSTRUCTIONS
        gate.touch()
        hits = (await call(client, "memory_search", query="how do I run the tests"))["hits"]
        assert hits, "the call waited for the folder and then answered"


def test_the_server_is_built_without_importing_the_store() -> None:
    """What `serve` does before its initialize answer (the SDK, the tools' schemas) leaves
    the store, the index, the watcher, the hooks' context, the dream and numpy for later."""
    probe = (
        "import sys\n"
        "from sage_mem.mcp_server.server import server_over\n"
        "server_over(lambda: None, several=False)\n"
        "heavy = ['sage_mem.store', 'sage_mem.agents.context', 'sage_mem.dream', "
        "'sage_mem.disk.watch', 'sage_mem.mcp_server.memory_tools', 'watchdog', 'numpy']\n"
        "print([name for name in heavy if name in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_stdio_server_lists_every_tool_and_its_instructions(stdio: Client) -> None:
    tools = (await stdio.list_tools()).tools
    assert sorted(tool.name for tool in tools) == TOOLS
    assert stdio.instructions == INSTRUCTIONS
    assert stdio.server_info is not None and stdio.server_info.name == "sage-mem"


async def test_stdio_write_search_read_round_trip_in_chinese_and_english(stdio: Client) -> None:
    written = await call(
        stdio,
        "memory_write",
        id="user_tea_zh",
        description="用户每天下午喝乌龙茶",
        category="user",
        body="偏好冻顶乌龙，不加糖。",
    )
    assert written["created"] is True and written["memory"]["id"] == "user_tea_zh"
    hits = (await call(stdio, "memory_search", query="用户喝什么茶"))["hits"]
    assert hits[0]["id"] == "user_tea_zh"
    await call(
        stdio,
        "memory_write",
        id="reference_ci",
        category="reference",
        description="The CI pipeline is defined in .github/workflows/ci.yml",
    )
    hits = (await call(stdio, "memory_search", query="where is the CI pipeline defined"))["hits"]
    assert hits[0]["id"] == "reference_ci"
    memory = await call(stdio, "memory_read", id="user_tea_zh")
    assert memory["body"].strip() == "偏好冻顶乌龙，不加糖。"
    assert memory["sha256"] == written["memory"]["sha256"]


async def test_stdio_archive_takes_a_memory_out_of_search(
    stdio: Client, stdio_folder: Path
) -> None:
    await call(
        stdio,
        "memory_write",
        id="project_old_plan",
        category="project",
        description="The release was planned for the blue moon",
    )
    archived = await call(stdio, "memory_archive", id="project_old_plan", reason="plan dropped")
    assert archived == {
        "id": "project_old_plan",
        "archived_as": "archive/project_old_plan",
        "reason": "plan dropped",
    }
    assert (stdio_folder / "memory" / "archive" / "project_old_plan.md").is_file()
    hits = (await call(stdio, "memory_search", query="blue moon release"))["hits"]
    assert "project_old_plan" not in [hit["id"] for hit in hits]


async def test_stdio_server_sees_an_edit_made_in_an_editor(
    stdio: Client, stdio_folder: Path
) -> None:
    write_memory(
        stdio_folder / "memory",
        "user_bike",
        "---\ndescription: The user rides a green tandem bicycle\n---\n",
    )
    with anyio.fail_after(10):
        while not (await call(stdio, "memory_search", query="tandem bicycle"))["hits"]:
            await anyio.sleep(0.05)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param(
            "memory_read", {"id": "user_nobody"}, "no memory 'user_nobody'", id="missing-memory"
        ),
        pytest.param(
            "memory_read", {"id": "../x"}, "would leave the memory folder", id="traversal-read"
        ),
        pytest.param(
            "memory_write",
            {"id": "../escape", "description": "x"},
            "would leave the memory folder",
            id="traversal-write",
        ),
        pytest.param(
            "memory_search",
            {"query": "cat", "category": "pets"},
            "invalid category",
            id="bad-category",
        ),
        pytest.param(
            "memory_write",
            {"id": "user_profile", "summary": "x", "expected_sha256": "0" * 64},
            "changed on disk since it was read",
            id="conflict",
        ),
    ],
)
async def test_stdio_errors_are_one_line_tool_errors(
    stdio: Client, stdio_folder: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    message = await fails(stdio, tool, **arguments)
    assert message.startswith(f"{tool}: ") and expected in message
    assert {path.name for path in stdio_folder.iterdir()} <= {"memory", ".memory.sage-mem", "home"}


# the tool list an agent pays for in every request


async def test_tool_list_fits_the_budget_an_agent_pays_for(store: MemoryStore) -> None:
    async with connect(store) as client:
        tools = [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in (await client.list_tools()).tools
        ]
    seen = [{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in tools]
    assert len(json.dumps(seen, ensure_ascii=False)) < 8_000
    assert len(json.dumps(tools, ensure_ascii=False)) < 8_000, "with output schemas and annotations"
    for tool in tools:
        assert 40 < len(tool["description"]) < 2_048, tool["name"]
        assert "title" not in json.dumps(tool["inputSchema"]), tool["name"]


@pytest.mark.parametrize("mode", MODES)
async def test_both_connection_modes_serve_tools_instructions_and_resources(
    store: MemoryStore, mode: str
) -> None:
    async with connect(store, mode) as client:
        assert client.instructions == INSTRUCTIONS
        assert sorted(tool.name for tool in (await client.list_tools()).tools) == TOOLS
        hits = (await call(client, "memory_search", query="我的猫叫什么"))["hits"]
        assert hits[0]["id"] == "user_cat_zh"
        memory = await call(client, "memory_read", id="user_cat_zh")
        assert memory["description"] == "用户的猫叫芝麻，喜欢晒太阳"
        assert "no memory" in await fails(client, "memory_read", id="user_nobody")
        index = await client.read_resource("sage-mem://index")
        assert "(user_cat_zh.md)" in index.contents[0].text


# memory_search


async def test_search_hits_are_compact_with_an_age_note_only_for_old_memories(
    store: MemoryStore, memory_dir: Path
) -> None:
    write_memory(memory_dir, "project_kiln_old", aged("The kiln firing schedule for glazes", 12))
    write_memory(memory_dir, "project_kiln_new", aged("The kiln temperature log for glazes", 0))
    store.reload()
    async with connect(store) as client:
        hits = {
            hit["id"]: hit
            for hit in (await call(client, "memory_search", query="kiln glazes"))["hits"]
        }
    assert hits["project_kiln_old"]["age"] == "updated 12 days ago"
    assert "age" not in hits["project_kiln_new"]
    assert set(hits["project_kiln_old"]) == {
        "id",
        "description",
        "trust",
        "score",
        "updated",
        "age",
    }


async def test_search_that_finds_nothing_costs_no_more_than_one_that_finds_something(
    store: MemoryStore,
) -> None:
    async with connect(store) as client:
        empty = await client.call_tool("memory_search", {"query": "zeppelin quasar"})
        found = await client.call_tool("memory_search", {"query": "cat"})
    assert empty.structured_content == {"hits": []} and not empty.is_error
    assert len(empty.content[0].text) < len(found.content[0].text)


async def test_search_pages_with_limit_and_offset(store: MemoryStore, memory_dir: Path) -> None:
    for n in range(7):
        write_memory(memory_dir, f"reference_lamp_{n}", aged(f"Lamp manual number {n}", 3))
    store.reload()
    async with connect(store) as client:
        first = await call(client, "memory_search", query="lamp manual", limit=5)
        second = await call(
            client, "memory_search", query="lamp manual", limit=5, offset=first["next_offset"]
        )
    assert len(first["hits"]) == 5 and first["next_offset"] == 5
    assert len(second["hits"]) == 2 and "next_offset" not in second
    assert not {h["id"] for h in first["hits"]} & {h["id"] for h in second["hits"]}


async def test_search_filters_by_category_project_and_tags(
    store: MemoryStore, memory_dir: Path
) -> None:
    write_memory(
        memory_dir,
        "project_owl_alpha",
        aged("Owl migration plan", 2, project="alpha", category="project", tags="[birds]"),
    )
    write_memory(
        memory_dir,
        "project_owl_beta",
        aged("Owl census plan", 2, project="beta", category="project"),
    )
    write_memory(memory_dir, "reference_owl", aged("Owl field guide", 2, category="reference"))
    store.reload()
    async with connect(store) as client:

        async def ids(**filters: Any) -> set[str]:
            hits = (await call(client, "memory_search", query="owl", **filters))["hits"]
            return {hit["id"] for hit in hits}

        assert await ids(category="reference") == {"reference_owl"}
        assert await ids(project="alpha") == {"project_owl_alpha", "reference_owl"}
        assert await ids(tags=["birds"]) == {"project_owl_alpha"}


# memory_read and memory_write


async def test_read_returns_the_full_memory_and_the_sha256_of_its_file(
    store: MemoryStore, memory_dir: Path
) -> None:
    async with connect(store) as client:
        memory = await call(client, "memory_read", id="feedback_tests_first")
    assert "**How to apply:**" in memory["body"]
    assert memory["category"] == "feedback" and memory["trust"] == 0.7
    raw = (memory_dir / "feedback_tests_first.md").read_bytes()
    assert memory["sha256"] == hashlib.sha256(raw).hexdigest()
    assert "path" not in memory


async def test_write_creates_a_memory_and_returns_what_was_stored(
    store: MemoryStore, memory_dir: Path
) -> None:
    async with connect(store) as client:
        result = await call(
            client,
            "memory_write",
            id="project/api/auth_flow",
            category="project",
            description="The API signs requests with short-lived HMAC tokens",
            body="Tokens last 5 minutes.",
            tags=["api"],
            aliases=["auth"],
        )
        memory = await call(client, "memory_read", id="project/api/auth_flow")
    stored = result["memory"]
    assert result["created"] is True
    assert stored["id"] == "project/api/auth_flow" and stored["tags"] == ["api"]
    assert "body" not in stored and stored["sha256"] == memory["sha256"]
    assert (memory_dir / "project" / "api" / "auth_flow.md").is_file()


async def test_write_to_an_existing_id_changes_only_the_fields_given(
    store: MemoryStore, memory_dir: Path
) -> None:
    async with connect(store) as client:
        before = await call(client, "memory_read", id="user_profile")
        result = await call(
            client,
            "memory_write",
            id="user_profile",
            summary="Python backend dev",
            expected_sha256=before["sha256"],
        )
        after = await call(client, "memory_read", id="user_profile")
    assert result["created"] is False
    assert after["summary"] == "Python backend dev"
    assert after["body"] == before["body"] and after["description"] == before["description"]
    assert "baseline: true" in (memory_dir / "user_profile.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("description", "twin"),
    [
        pytest.param("用户的猫叫芝麻，喜欢晒太阳", "user_cat_zh", id="same-words-chinese"),
        pytest.param(
            "Run the whole test suite before committing",
            "feedback_tests_first",
            id="says-nothing-new",
        ),
    ],
)
async def test_write_refuses_a_near_duplicate_unless_forced(
    store: MemoryStore, memory_dir: Path, description: str, twin: str
) -> None:
    async with connect(store) as client:
        message = await fails(client, "memory_write", id="user_new", description=description)
        assert f"would duplicate {twin!r}" in message and "force=true" in message
        assert not (memory_dir / "user_new.md").exists()
        forced = await call(
            client, "memory_write", id="user_new", force=True, description=description
        )
    assert forced["created"] is True and (memory_dir / "user_new.md").is_file()


async def test_write_reports_look_alikes_of_a_new_memory_but_still_writes_it(
    store: MemoryStore,
) -> None:
    async with connect(store) as client:
        result = await call(
            client,
            "memory_write",
            id="user_cat_food",
            category="user",
            description="用户的猫叫芝麻，爱吃鱼",
        )
        plain = await call(
            client,
            "memory_write",
            id="user_chess",
            category="user",
            description="The user plays chess on Sundays",
        )
    assert result["created"] is True
    assert [entry["id"] for entry in result["similar"]] == ["user_cat_zh"]
    assert 0.4 <= result["similar"][0]["similarity"] < 0.8
    assert "similar" not in plain


async def test_concurrent_writes_all_land(store: MemoryStore) -> None:
    async with connect(store) as client:

        async def write_shelf(n: int) -> None:
            await call(
                client,
                "memory_write",
                id=f"reference_shelf_{n}",
                category="reference",
                description=f"Shelf {n} holds volume {n * 7}",
            )

        async with anyio.create_task_group() as group:
            for n in range(8):
                group.start_soon(write_shelf, n)
        listed = await call(client, "memory_list", category="reference", limit=100)
    assert {f"reference_shelf_{n}" for n in range(8)} <= {m["id"] for m in listed["memories"]}


async def test_concurrent_writes_of_one_new_id_say_created_once(store: MemoryStore) -> None:
    """Agents writing the same new id at once: one creates it, the others update what it
    made, and each answer says which (every one said `created: true` before)."""
    async with connect(store) as client:
        said: list[bool] = []

        async def write_plan(n: int) -> None:
            done = await call(client, "memory_write", id="project_launch_plan",
                              category="project", description=f"Launch plan, draft {n}",
                              body=f"Draft {n}.")
            said.append(done["created"])

        async with anyio.create_task_group() as group:
            for n in range(10):
                group.start_soon(write_plan, n)
    assert said.count(True) == 1, said


async def test_a_search_or_listing_of_a_folder_moved_away_says_it_is_gone(
    store: MemoryStore, tmp_path: Path
) -> None:
    """Its index emptied, a folder moved away answered a search and a listing with nothing,
    which reads as "no memories"; each says the folder is gone, and answers once it is back."""
    async with connect(store) as client:
        assert (await call(client, "memory_search", query="tests"))["hits"]
        away = tmp_path / "moved-away"
        shutil.move(store.root, away)
        try:
            for tool, arguments in (("memory_search", {"query": "tests"}), ("memory_list", {})):
                said = await fails(client, tool, **arguments)
                assert "the memory folder is gone (moved or deleted)" in said, said
        finally:
            shutil.move(away, store.root)
        assert (await call(client, "memory_list"))["total"] >= 0


# the other tools


async def test_find_similar_takes_a_text_or_an_id_and_never_returns_the_memory_itself(
    store: MemoryStore,
) -> None:
    async with connect(store) as client:
        await call(
            client,
            "memory_write",
            id="user_cat_sun",
            category="user",
            force=True,
            description="用户的猫芝麻喜欢晒太阳",
        )
        by_text = await call(client, "memory_find_similar", query="芝麻喜欢晒太阳")
        by_id = await call(client, "memory_find_similar", id="user_cat_zh")
        both = await fails(client, "memory_find_similar", query="x", id="user_cat_zh")
    assert {entry["id"] for entry in by_text["similar"]} >= {"user_cat_zh", "user_cat_sun"}
    assert [entry["id"] for entry in by_id["similar"]] == ["user_cat_sun"]
    assert "either query" in both


async def test_list_filters_and_pages(store: MemoryStore) -> None:
    async with connect(store) as client:
        everything = await call(client, "memory_list")
        page = await call(client, "memory_list", limit=3, offset=3)
        users = await call(client, "memory_list", category="user")
        await call(client, "memory_archive", id="user_profile", reason="example")
        archived = await call(client, "memory_list", archived=True)
    ids = [m["id"] for m in everything["memories"]]
    assert ids == sorted(ids) and everything["total"] == len(ids) == 8
    assert [m["id"] for m in page["memories"]] == ids[3:6] and page["next_offset"] == 6
    assert {m["id"] for m in users["memories"]} == {"user_cat_zh", "user_profile"}
    assert [m["id"] for m in archived["memories"]] == ["archive/user_profile"]


async def test_feedback_moves_trust_up_or_down(store: MemoryStore) -> None:
    async with connect(store) as client:
        up = await call(client, "memory_feedback", id="user_cat_zh", helpful=True)
        down = await call(client, "memory_feedback", id="user_cat_zh", helpful=False)
    assert up["previous_trust"] == 0.5 < up["trust"]
    assert down["trust"] < up["trust"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"id": "user_cat_zh"}, "missing required argument 'reason'", id="no-reason"),
        pytest.param({"id": "user_cat_zh", "reason": "   "}, "needs a reason", id="blank-reason"),
        pytest.param(
            {"id": "archive/user_cat_zh", "reason": "x"}, "reserved archive/", id="archived"
        ),
    ],
)
async def test_archive_needs_a_reason_and_a_live_memory(
    store: MemoryStore, memory_dir: Path, arguments: dict[str, Any], expected: str
) -> None:
    async with connect(store) as client:
        assert expected in await fails(client, "memory_archive", **arguments)
    assert (memory_dir / "user_cat_zh.md").is_file()


async def test_locked_memory_is_refused_as_a_tool_error(
    store: MemoryStore, memory_dir: Path
) -> None:
    write_memory(memory_dir, "user_locked", aged("A locked fact about the user", 1, locked="true"))
    store.reload()
    async with connect(store) as client:
        assert "locked" in await fails(client, "memory_write", id="user_locked", summary="x")
        assert "locked" in await fails(client, "memory_archive", id="user_locked", reason="x")


async def test_audit_reports_through_sage_mem_audit(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Report:
        def to_dict(self) -> dict[str, Any]:
            return {"ok": True, "checks": []}

    fake = type(sys)("sage_mem.checks.audit")
    fake.audit = lambda given: Report() if given is store else None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sage_mem.checks.audit", fake)
    async with connect(store) as client:
        assert await call(client, "memory_audit") == {"ok": True, "checks": []}


async def test_audit_runs_the_real_checks_and_changes_nothing(
    store: MemoryStore, memory_dir: Path
) -> None:
    before = sorted((p, p.read_bytes()) for p in memory_dir.rglob("*") if p.is_file())
    async with connect(store) as client:
        report = await call(client, "memory_audit")
    assert isinstance(report, dict) and report
    assert sorted((p, p.read_bytes()) for p in memory_dir.rglob("*") if p.is_file()) == before


async def test_audit_without_the_audit_module_is_a_clear_tool_error(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sage_mem.checks.audit", None)
    async with connect(store) as client:
        assert "not available yet" in await fails(client, "memory_audit")


async def test_dream_then_rollback_through_the_tools_restores_every_byte(
    store: MemoryStore, memory_dir: Path
) -> None:
    write_memory(
        memory_dir,
        "project_plan",
        "---\ndescription: The release plan\ncategory: project\ncreated: 2026-11-25\n---\n\n"
        "Decided yesterday.\n",
    )
    before = {p: p.read_bytes() for p in memory_dir.rglob("*.md") if "autodream" not in p.parts}
    async with connect(store) as client:
        report = await call(client, "memory_dream")
        assert report["status"] == "finished" and report["mode"] == "report"
        run = await call(client, "memory_dream", mode="rewrite")
        assert run["changes"] >= 1
        assert b"2026-11-24" in (memory_dir / "project_plan.md").read_bytes()
        undone = await call(client, "memory_rollback", run_id=run["runId"], scope="all")
    assert undone["runId"] == run["runId"] and undone["restored"] >= 1
    after = {p: p.read_bytes() for p in memory_dir.rglob("*.md") if "autodream" not in p.parts}
    assert {p: after.get(p) for p in before} == before


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param("memory_dream", {"mode": "delete"}, "invalid mode", id="bad-mode"),
        pytest.param(
            "memory_rollback", {"run_id": "r1"}, "is not a run id", id="malformed-run-id"
        ),
        pytest.param(
            "memory_rollback",
            {"run_id": "20261129T201500Z-1a2b"},
            "no dream run or rollback",
            id="unknown-run",
        ),
    ],
)
async def test_autodream_tools_turn_bad_requests_into_one_line_errors(
    store: MemoryStore, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with connect(store) as client:
        assert expected in await fails(client, tool, **arguments)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param(
            "memory_search", {"query": "cat", "limit": 50}, "invalid limit", id="limit-too-big"
        ),
        pytest.param(
            "memory_search", {"query": "cat", "offset": -1}, "invalid offset", id="negative-offset"
        ),
        pytest.param("memory_search", {"query": "猫", "limit": True},
                     "invalid limit: a whole number, not true or false", id="limit-true"),
        pytest.param("memory_search", {"query": "cat", "offset": False},
                     "invalid offset: a whole number, not true or false", id="offset-false"),
        pytest.param("memory_list", {"limit": True},
                     "invalid limit: a whole number, not true or false", id="list-limit-true"),
        pytest.param("memory_list", {"offset": True},
                     "invalid offset: a whole number, not true or false", id="list-offset-true"),
        pytest.param("memory_find_similar", {"query": "cat", "limit": True},
                     "invalid limit: a whole number, not true or false", id="similar-limit-true"),
        pytest.param("memory_write", {"id": "user_cat_zh", "baseline_priority": True},
                     "invalid baseline_priority", id="priority-true"),
        pytest.param("memory_write", {"id": "user_cat_zh", "trust": True},
                     "invalid trust", id="trust-true"),
        pytest.param("memory_search", {"query": "  "}, "query is empty", id="blank-query"),
        pytest.param(
            "memory_search", {"text": "cat"}, "unknown argument 'text'", id="unknown-argument"
        ),
        pytest.param("memory_read", {}, "missing required argument 'id'", id="no-id"),
        pytest.param("memory_read", {"id": "/etc/passwd"}, "absolute path", id="absolute-id"),
        pytest.param(
            "memory_write",
            {"id": "user_cat_zh", "trust": 2},
            "invalid trust",
            id="trust-out-of-range",
        ),
        pytest.param(
            "memory_write", {"id": "user_new"}, "needs a description", id="new-without-description"
        ),
        pytest.param(
            "memory_write", {"id": "MEMORY", "description": "x"}, "reserved", id="reserved-id"
        ),
        pytest.param(
            "memory_write", {"id": "user_\u202egnp.exe", "description": "x"}, "U+202E",
            id="bidi-in-new-id",
        ),
        pytest.param(
            "memory_feedback",
            {"id": "user_cat_zh", "helpful": "maybe"},
            "invalid helpful",
            id="helpful-not-bool",
        ),
        *(pytest.param(tool, arguments, f"invalid {flag}: true or false, not {kind}",
                       id=f"{flag}-{kind.split()[-1]}")
          for tool, arguments, flag, kind in (
              ("memory_list", {"archived": 1}, "archived", "a number"),
              ("memory_list", {"archived": "yes"}, "archived", "a string"),
              ("memory_rollback", {"run_id": "20261129T201500Z-1a2b", "dry_run": 1}, "dry_run",
               "a number"),
              ("memory_rollback", {"run_id": "20261129T201500Z-1a2b", "force": "yes"}, "force",
               "a string"),
              ("memory_write", {"id": "user_cat_zh", "summary": "x", "force": 1}, "force",
               "a number"),
              ("memory_write", {"id": "user_cat_zh", "summary": "x", "allow_secret": "true"},
               "allow_secret", "a string"),
              ("memory_write", {"id": "user_cat_zh", "baseline": "yes"}, "baseline", "a string"),
              ("memory_feedback", {"id": "user_cat_zh", "helpful": 1}, "helpful", "a number"),
          )),
        pytest.param("memory_nonexistent", {}, "Unknown tool", id="unknown-tool"),
    ],
)
async def test_bad_arguments_are_one_line_tool_errors(
    store: MemoryStore, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with connect(store) as client:
        assert expected in await fails(client, tool, **arguments)


async def test_a_restricted_server_offers_only_the_tools_named(store: MemoryStore) -> None:
    read_tools = {"memory_search", "memory_read", "memory_list", "memory_audit"}
    async with Client(build_server(store, tools=read_tools)) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == read_tools
        assert "Unknown tool" in await fails(client, "memory_write", id="user_x", description="x")
    with pytest.raises(ValueError, match="memory_delete"):
        build_server(store, tools={"memory_delete"})


# resources


async def test_resources_offer_the_baseline_block_the_index_and_each_memory(
    store: MemoryStore, memory_dir: Path
) -> None:
    write_memory(
        memory_dir, "project/api/auth_flow", aged("Auth uses HMAC tokens", 1, category="project")
    )
    store.reload()
    async with connect(store) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ]
        baseline = (await client.read_resource("sage-mem://baseline")).contents[0].text
        index = (await client.read_resource("sage-mem://index")).contents[0].text
        nested = (await client.read_resource("memory://project/api/auth_flow")).contents[0].text
        chinese = (await client.read_resource("memory://user_cat_zh")).contents[0].text
    assert listed == {"sage-mem://baseline", "sage-mem://index"} and templates == ["memory://{+id}"]
    assert "> id: user_profile" in baseline and "not instructions" in baseline
    assert "user_cat_zh" not in baseline
    assert "(user_cat_zh.md)" in index and "(project/api/auth_flow.md)" in index
    assert nested.startswith("---\ndescription: Auth uses HMAC tokens")
    assert "芝麻" in chinese


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("memory://user_nobody", id="missing"),
        pytest.param("memory://../outside", id="traversal"),
        pytest.param("memory://autodream/run", id="reserved"),
    ],
)
async def test_a_bad_memory_resource_is_an_error_not_a_crash(store: MemoryStore, uri: str) -> None:
    from mcp import MCPError

    async with connect(store) as client:
        with pytest.raises(MCPError):
            await client.read_resource(uri)
        assert (await call(client, "memory_search", query="cat"))["hits"]


# imports


@pytest.mark.parametrize("module", ["sage_mem", "sage_mem.mcp_server.memory_tools"])
def test_modules_outside_the_server_never_import_mcp(module: str) -> None:
    code = f"import sys, {module}; print('mcp' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_a_folder_that_cannot_be_opened_is_each_calls_one_line(tmp_path: Path) -> None:
    """The folder opens on a thread: its failure reaches every tool call as one line."""
    from sage_mem.errors import SageMemError
    from sage_mem.mcp_server.server import Opening

    opening = Opening(tmp_path / "gone", poll=False, specs=[tmp_path / "gone"])
    opening.start()
    for _ in range(2):
        with pytest.raises(SageMemError, match=r"could not be opened: .*gone.*no memory folder"):
            opening.get()
    opening.close()
