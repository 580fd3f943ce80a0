"""The model pass through a real agent command: `serve --dream-run` over stdio, and its limits.

A scripted fake agent (a Python file written into the test's folder and
configured as `agentCommand`) does what `claude -p` or `codex exec` would: it
reads the MCP configuration it is handed, starts the restricted server from it
with the real `mcp` client, lists the tools and makes the calls of a plan —
known ones, refused ones and a forbidden one. The tests then read the run's
manifest, its human report and the folder's bytes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from test_dream_support import add, folder_bytes, live_bytes, read_manifest

from sage_mem.cli import main
from sage_mem.dream import DreamConfig, rollback, run_dream
from sage_mem.dream.model import DreamTools
from sage_mem.mcp_server.dream_server import DESCRIPTIONS, build_dream_server
from sage_mem.store import MemoryStore

READ_TOOLS = ["memory_audit", "memory_list", "memory_read", "memory_search"]
WRITE_TOOLS = ["memory_archive", "memory_write"]
REPORT_TOOLS = sorted([*READ_TOOLS, "memory_note", "memory_propose"])
"""A report run reads, proposes and leaves notes; it has no write tool."""
REWRITE_TOOLS = sorted([*READ_TOOLS, *WRITE_TOOLS, "memory_note"])

FAKE_AGENT = '''
import json, os, sys

import anyio
from mcp import Client, StdioServerParameters

config_arg, plan_path, out_path = sys.argv[1:4]
config_path = os.environ["SAGE_MEM_DREAM_MCP_CONFIG"] if config_arg == "env" else config_arg
with open(config_path, encoding="utf-8") as handle:
    server = json.load(handle)["mcpServers"]["sage-mem-dream"]
with open(plan_path, encoding="utf-8") as handle:
    plan = json.load(handle)


async def main():
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server.get("env")
    )
    done = {"calls": []}
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        done["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        for tool, arguments in plan["calls"]:
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text if result.content else ""
            done["calls"].append({"tool": tool, "error": result.is_error, "text": text})
    for path, text in plan.get("append", []):  # edits of its own, outside the server
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(done, handle)


anyio.run(main)
sys.exit(plan.get("exit", 0))
'''


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake agent's folder, also the working folder: a stray write there would show."""
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "agent.py").write_text(FAKE_AGENT, encoding="utf-8")
    monkeypatch.chdir(folder)
    return folder


def agent_config(
    agent_dir: Path, calls: list[Any], *, via_env: bool = False, **plan: Any
) -> DreamConfig:
    """A run's settings whose agent command is the fake agent making `calls`."""
    (agent_dir / "plan.json").write_text(json.dumps({"calls": calls, **plan}), encoding="utf-8")
    command = (
        sys.executable,
        str(agent_dir / "agent.py"),
        "env" if via_env else "{mcp_config}",
        str(agent_dir / "plan.json"),
        str(agent_dir / "done.json"),
    )
    return DreamConfig(agent_command=command, agent_timeout_seconds=60)


def agent_calls(agent_dir: Path) -> dict[str, Any]:
    return json.loads((agent_dir / "done.json").read_text(encoding="utf-8"))


def tidy_folder(folder: Path) -> None:
    """A few memories for the agent to work on, and one the rules fix by themselves."""
    add(folder, "project_plan", "The release plan", "Decided yesterday.", category="project",
        created="2026-11-25")
    add(folder, "user_name", "The user is called Ada", category="user")
    add(folder, "user_editor", "Preferred editor is Helix with the default keymap", category="user")
    add(folder, "user_editor_old", "Used Emacs with evil mode for years", category="user")
    add(folder, "user_shell", "Interactive shell is fish", category="user")
    add(folder, "reference_keys", "Where the signing keys are kept", category="reference",
        locked=True)


REWRITE_CALLS = [
    ["memory_search", {"query": "editor"}],
    ["memory_read", {"id": "user_name"}],
    ["memory_write", {"id": "user_new", "description": "The user's cat is called Sesame",
                      "category": "user", "reason": "split out of a longer note"}],
    ["memory_write", {"id": "user_name", "description": "The user is called Ada Lovelace"}],
    ["memory_archive", {"id": "user_editor_old", "reason": "replaced by user_editor",
                        "superseded_by": "user_editor"}],
    ["memory_archive", {"id": "user_shell"}],
    ["memory_write", {"id": "reference_keys", "description": "Keys", "reason": "shorter"}],
    ["memory_delete", {"id": "user_shell", "reason": "not needed"}],
]


def test_an_agent_in_a_rewrite_run_changes_only_through_the_manifest(
    empty_dir: Path, agent_dir: Path
) -> None:
    tidy_folder(empty_dir)
    before = folder_bytes(empty_dir)
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite", config=agent_config(agent_dir, REWRITE_CALLS))
    manifest = read_manifest(result)
    assert manifest["model"]["status"] == "finished", manifest["model"]

    done = agent_calls(agent_dir)
    assert done["tools"] == REWRITE_TOOLS
    errors = [call["text"] for call in done["calls"] if call["error"]]
    assert [call["error"] for call in done["calls"]] == [False] * 5 + [True] * 3
    assert errors == [
        "memory_archive: user_shell: not archived: an archive needs a reason",
        "memory_write: reference_keys: memory is locked (locked: true)",
        "memory_delete: memory_delete is not a tool of this run (it offers memory_list, "
        "memory_read, memory_search, memory_audit, memory_write, memory_archive, memory_note; "
        "there is no delete)",
    ]

    model = [c for c in manifest["changes"] if c["source"] == "model"]
    assert [(c["operation"], c["file"], c["unexplained"], c["state"]) for c in model] == [
        ("create", "user_new.md", False, "applied"),
        ("rewrite", "user_name.md", True, "applied"),
        ("archive", "user_editor_old.md", False, "applied"),
    ]
    assert model[2]["supersededBy"] == "user_editor"
    refused = [(r["operation"], r["file"], r["refusedBecause"])
               for r in manifest["refused"] if r["source"] == "model"]
    assert refused == [
        ("archive", "user_shell.md", "an archive needs a reason"),
        ("rewrite", "reference_keys.md", "the memory is locked (locked: true)"),
        ("memory_delete", "user_shell.md", "memory_delete is not a tool of this run"),
    ]
    rules = [c for c in manifest["changes"] if c["source"] == "rules"]
    assert any(c["file"] == "project_plan.md" for c in rules), "the rules ran first"

    report = Path(result.report).read_text(encoding="utf-8")
    assert "### Changes by the model pass" in report
    assert "rewrote `user_name.md` (description): **unexplained**" in report
    assert "- `user_shell.md`: memory_delete (model) refused: memory_delete is not a tool" in report
    assert "## Model pass" in report and "finished" in report

    after = folder_bytes(empty_dir)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    assert changed == {
        "MEMORY.md",
        "project_plan.md",
        "user_name.md",
        "user_new.md",
        "user_editor_old.md",
        "archive/user_editor_old.md",
    }
    assert sorted(p.name for p in agent_dir.iterdir()) == ["agent.py", "done.json", "plan.json"]

    undone = rollback(store, result.run_id)
    assert undone.count("restore", "recreate") >= 3
    now = folder_bytes(empty_dir)
    assert {name: now.get(name) for name in before} == before
    assert set(live_bytes(empty_dir)) == set(before)


REPORT_CALLS = [
    ["memory_list", {}],
    ["memory_search", {"query": "user name"}],
    ["memory_read", {"id": "user_name"}],
    ["memory_audit", {}],
    ["memory_write", {"id": "user_name", "description": "The user is called Bob",
                      "reason": "the user said so"}],
    ["memory_archive", {"id": "user_shell", "reason": "obsolete"}],
    ["memory_delete", {"id": "user_editor_old"}],
]


def test_an_agent_in_a_report_run_reads_and_every_write_is_refused_and_listed(
    empty_dir: Path, agent_dir: Path
) -> None:
    tidy_folder(empty_dir)
    before = folder_bytes(empty_dir, skip=())
    config = agent_config(agent_dir, REPORT_CALLS, via_env=True)
    result = run_dream(MemoryStore(empty_dir), mode="report", config=config)

    done = agent_calls(agent_dir)
    assert done["tools"] == REPORT_TOOLS, "no write tool exists in a report run"
    outcome = [(call["tool"], call["error"]) for call in done["calls"]]
    assert outcome == [
        ("memory_list", False),
        ("memory_search", False),
        ("memory_read", False),
        ("memory_audit", False),
        ("memory_write", True),
        ("memory_archive", True),
        ("memory_delete", True),
    ]
    listed = json.loads(done["calls"][0]["text"])
    assert listed["total"] == 6 and {m["id"] for m in listed["memories"]} >= {"user_name"}
    assert json.loads(done["calls"][2]["text"])["description"] == "The user is called Ada"
    assert done["calls"][4]["text"] == "memory_write: write is not available in a report run"

    manifest = read_manifest(result)
    assert manifest["model"]["status"] == "finished"
    assert [(r["operation"], r["file"]) for r in manifest["refused"]] == [
        ("write", "user_name.md"),
        ("archive", "user_shell.md"),
        ("memory_delete", "user_editor_old.md"),
    ]
    assert not [c for c in manifest["changes"] if c["source"] == "model"]
    report = Path(result.report).read_text(encoding="utf-8")
    assert "`user_name.md`: write (model) refused: a report run has no write tools" in report

    after = folder_bytes(empty_dir, skip=())
    assert set(after) - set(before) == {f"autodream/{result.run_id}.md"}
    assert {name: after[name] for name in before} == before


def test_an_agent_that_fails_leaves_the_rule_based_result_and_what_it_did_recorded(
    empty_dir: Path, agent_dir: Path
) -> None:
    tidy_folder(empty_dir)
    calls = [["memory_write", {"id": "user_name", "description": "Ada L.", "reason": "short"}]]
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite", config=agent_config(agent_dir, calls, exit=1))
    manifest = read_manifest(result)
    assert manifest["model"]["status"] == "failed"
    assert manifest["model"]["detail"].startswith("exit status 1")
    assert store.read("project_plan").body.strip() == "Decided yesterday (2026-11-24)."
    assert [(c["file"], c["state"]) for c in manifest["changes"] if c["source"] == "model"] == [
        ("user_name.md", "applied")
    ]
    assert manifest["status"] == "finished"


def test_an_agent_that_times_out_is_stopped_and_the_rules_stand(empty_dir: Path) -> None:
    tidy_folder(empty_dir)
    hangs = (sys.executable, "-c", "import threading; threading.Event().wait()")
    config = DreamConfig(agent_command=hangs, agent_timeout_seconds=0.3)
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite", config=config)
    manifest = read_manifest(result)
    assert manifest["model"] == {"status": "timed out", "detail": "stopped after 0.3 s"}
    assert manifest["status"] == "finished"
    assert store.read("project_plan").body.strip() == "Decided yesterday (2026-11-24)."
    assert "timed out: stopped after 0.3 s" in Path(result.report).read_text(encoding="utf-8")


def test_the_agent_command_gets_the_run_its_folders_and_a_prompt(
    empty_dir: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "argv.json"
    record = "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))"
    command = (sys.executable, "-c", record, str(seen),
               "{memory_dir}", "{state_dir}", "{run_id}", "{mode}", "{prompt}", "{other}")
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="report", config=DreamConfig(agent_command=command))
    memory_dir, state_dir, run_id, mode, prompt, other = json.loads(seen.read_text())
    assert (memory_dir, state_dir) == (str(empty_dir), str(store.folder.state_dir))
    assert (run_id, mode, other) == (result.run_id, "report", "{other}")
    assert "memory_propose" in prompt and "one-line reason" in prompt, "a report run's prompt"


# the restricted server in-process


def _in_a_run(folder: Path, mode: str, during: Any) -> Any:
    """Run `during(server)` against the dream server of a real run, while it is in progress."""
    kept: dict[str, Any] = {}

    def model(tools: DreamTools) -> None:
        server = build_dream_server(tools.store, tools.applier.manifest.run_id)
        kept["server"] = server
        kept["during"] = anyio.run(during, server)

    kept["result"] = run_dream(MemoryStore(folder), mode=mode, model_pass=model)
    return kept


async def _tool_list(server: Any) -> list[dict[str, Any]]:
    async with Client(server) as client:
        return [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in (await client.list_tools()).tools
        ]


@pytest.mark.parametrize(
    ("mode", "names"),
    [
        pytest.param("report", REPORT_TOOLS, id="report-reads-and-proposes"),
        pytest.param("rewrite", REWRITE_TOOLS, id="rewrite-adds-write"),
    ],
)
def test_the_dream_server_offers_only_the_tools_of_its_mode(
    empty_dir: Path, mode: str, names: list[str]
) -> None:
    tidy_folder(empty_dir)
    tools = _in_a_run(empty_dir, mode, _tool_list)["during"]
    assert sorted(tool["name"] for tool in tools) == names
    assert "memory_delete" not in DESCRIPTIONS
    for tool in tools:
        assert 40 < len(tool["description"]) < 2_048
        assert "title" not in json.dumps(tool["inputSchema"])
    assert len(json.dumps(tools, ensure_ascii=False)) < 5_000


def test_a_dream_server_left_running_after_its_run_refuses_every_call(empty_dir: Path) -> None:
    tidy_folder(empty_dir)

    async def nothing(server: Any) -> None:
        return None

    kept = _in_a_run(empty_dir, "rewrite", nothing)
    before = folder_bytes(empty_dir)

    async def late_write(server: Any) -> str:
        async with Client(server) as client:
            result = await client.call_tool(
                "memory_write", {"id": "user_name", "description": "Late", "reason": "late"}
            )
        assert result.is_error
        return result.content[0].text

    assert "the dream run is over" in anyio.run(late_write, kept["server"])
    assert folder_bytes(empty_dir) == before


def test_serve_dream_run_refuses_a_run_that_is_not_in_progress(
    empty_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finished = run_dream(MemoryStore(empty_dir), mode="report").run_id
    for run_id in (finished, "20261129T201500Z-1a2b"):
        assert main(["--dir", str(empty_dir), "serve", "--dream-run", run_id]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert errors[0] == f"sage-mem: error: run {finished} is not a dream run in progress"
    assert "no dream run or rollback" in errors[1]


def test_in_a_report_run_the_model_proposes_and_notes_and_each_proposal_needs_a_reason(
    empty_dir: Path,
) -> None:
    """memory_propose records what a rewrite would do (as `proposed`); memory_note a note."""
    tidy_folder(empty_dir)
    before = folder_bytes(empty_dir)
    calls = [
        ("memory_propose", {"id": "user_editor_old", "archive": True,
                            "superseded_by": "user_editor", "reason": "replaced by user_editor"}),
        ("memory_propose", {"id": "user_name", "description": "The user is called Ada Lovelace",
                            "reason": "the full name"}),
        ("memory_propose", {"id": "user_cat", "description": "The user's cat is Sesame",
                            "category": "user", "reason": "said in passing"}),
        ("memory_propose", {"id": "user_shell", "archive": True, "reason": "  "}),
        ("memory_propose", {"id": "reference_keys", "description": "Keys", "reason": "tidier"}),
        ("memory_note", {"message": "两个编辑器的记录\n# not a heading", "id": "user_editor"}),
        ("memory_note", {"message": "about nothing", "id": "no_such_memory"}),
        ("memory_propose", {"id": "user_name", "reason": "says nothing to change"}),
        ("memory_write", {"id": "user_name", "description": "Ada", "reason": "r"}),
    ]

    async def model(server: Any) -> list[tuple[bool, str]]:
        async with Client(server) as client:
            done = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                done.append((result.is_error, result.content[0].text))
            return done

    kept = _in_a_run(empty_dir, "report", model)
    errors = [error for error, _ in kept["during"]]
    assert errors == [False, False, False, True, True, False, True, True, True]
    assert "give the fields to write" in kept["during"][7][1]
    assert "a proposal needs a reason" in kept["during"][3][1]
    assert "locked" in kept["during"][4][1]
    manifest = read_manifest(kept["result"])
    proposed = [(c["operation"], c["file"], c["state"], c.get("fields"), c.get("supersededBy"))
                for c in manifest["changes"] if c["source"] == "model"]
    assert proposed == [
        ("archive", "user_editor_old.md", "proposed", None, "user_editor"),
        ("rewrite", "user_name.md", "proposed", ["description"], None),
        ("create", "user_cat.md", "proposed", ["category", "description"], None),
    ]
    # every call that failed is listed, in order: a note about no memory, a proposal of nothing
    assert [(r["operation"], r["file"]) for r in manifest["refused"]] == [
        ("archive", "user_shell.md"), ("rewrite", "reference_keys.md"), ("memory_note", None),
        ("rewrite", "user_name.md"), ("write", "user_name.md")]
    (note,) = [n for n in manifest["notes"] if n["source"] == "model"]
    assert note["file"] == "user_editor.md"
    assert note["message"] == "两个编辑器的记录 # not a heading", "one line: no heading"
    report = Path(kept["result"].report).read_text(encoding="utf-8")
    assert "- archived `user_editor_old.md`: replaced by user_editor" in report
    assert "- `user_editor.md`: 两个编辑器的记录 # not a heading" in report
    assert folder_bytes(empty_dir) == before


@pytest.mark.parametrize(("mode", "name", "arguments", "expected"), [
    pytest.param("report", "memory_propose",
                 {"id": "user_shell", "archive": 1, "reason": "old"},
                 "invalid archive: true or false, not a number", id="propose-archive-1"),
    pytest.param("rewrite", "memory_write",
                 {"id": "user_name", "baseline": "yes", "reason": "pin it"},
                 "invalid baseline: true or false, not a string", id="write-baseline-yes"),
    pytest.param("report", "memory_list", {"limit": True},
                 "invalid limit: a whole number, not true or false", id="list-limit-true"),
    pytest.param("report", "memory_search", {"query": "cat", "limit": True},
                 "invalid limit: a whole number, not true or false", id="search-limit-true"),
])
def test_the_dream_server_takes_flags_and_numbers_only_as_their_json_type(
    empty_dir: Path, mode: str, name: str, arguments: dict[str, Any], expected: str
) -> None:
    """As the main server: 1 or "yes" is not true, and true is not 1: a one-line tool error,
    nothing proposed or written."""
    tidy_folder(empty_dir)
    before = folder_bytes(empty_dir)

    async def model(server: Any) -> tuple[bool, str]:
        async with Client(server) as client:
            result = await client.call_tool(name, arguments)
            return result.is_error, result.content[0].text

    kept = _in_a_run(empty_dir, mode, model)
    is_error, text = kept["during"]
    assert is_error and expected in text and "\n" not in text, text
    assert not [c for c in read_manifest(kept["result"])["changes"] if c["source"] == "model"]
    if mode == "report":
        assert folder_bytes(empty_dir) == before


def test_an_agent_edit_on_top_of_a_server_write_is_caught_and_rolled_back(
    empty_dir: Path, agent_dir: Path
) -> None:
    """A file the server changed and the agent then edited itself: the journal explains only
    the first step, so the file is an outside change too; the rollback puts all of it back."""
    tidy_folder(empty_dir)
    before = folder_bytes(empty_dir)
    calls = [["memory_write", {"id": "user_name", "description": "The user is called Ada L.",
                               "reason": "the full name"}]]
    config = agent_config(agent_dir, calls, append=[
        [str(empty_dir / "user_name.md"), "and a line of the agent's own\n"],
        [str(empty_dir / "archive" / "user_gone.md"), "---\ndescription: planted\n---\n"],
    ])
    (empty_dir / "archive").mkdir(exist_ok=True)
    result = run_dream(MemoryStore(empty_dir), mode="rewrite", config=config)
    manifest = read_manifest(result)
    by_source = [(c["source"], c["operation"], c["file"]) for c in manifest["changes"]
                 if c["source"] in ("model", "outside")]
    assert by_source == [("model", "rewrite", "user_name.md"),
                         ("outside", "create", "archive/user_gone.md"),
                         ("outside", "rewrite", "user_name.md")]
    assert manifest["model"]["outside"] == 2
    assert rollback(MemoryStore(empty_dir), result.run_id).count("conflict") == 0
    assert live_bytes(empty_dir) == {k: v for k, v in before.items()
                                     if not k.startswith("archive/")}
