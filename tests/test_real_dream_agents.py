"""The dream's model pass with the real agent CLIs: docs/dream.md's command lines, run for real.

`sage-mem dream` (a subprocess, as a person runs it) starts Claude Code or Codex
from npm (`.ci/clients-setup`) with exactly the `agentCommand` that docs/dream.md
documents; the agent talks to a stand-in model API on 127.0.0.1 that plays a
scripted model (tool calls out, tool results in) and records every request.
The tests read what the agent was offered, the run's manifest and report, and
the folder's bytes — before, after the run and after its rollback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stand_in_api import (
    ModelRequest,
    StandInAPI,
    Text,
    ToolCall,
    claude_env,
    client,
    clients_bin,
    codex_env,
    codex_provider,
    isolated_env,
    sage_mem_on_path,
)
from support import ROOT
from test_dream_support import add, folder_bytes

from sage_mem.disk.folder import MemoryFolder
from sage_mem.dream.paths import DreamPaths

SAGE = [sys.executable, "-m", "sage_mem"]
TIMEOUT = 180
REPORT_TOOLS = sorted(["memory_audit", "memory_list", "memory_note", "memory_propose",
                       "memory_read", "memory_search"])
REWRITE_TOOLS = sorted(["memory_archive", "memory_audit", "memory_list", "memory_note",
                        "memory_read", "memory_search", "memory_write"])
CLAUDE_PREFIX = "mcp__sage-mem-dream__"
CODEX_NAMESPACE = "mcp__sage_mem_dream"


def documented_command(program: str) -> list[str]:
    """The `agentCommand` that docs/dream.md gives for `program` (claude or codex)."""
    text = (ROOT / "docs" / "dream.md").read_text(encoding="utf-8")
    for block in re.findall(r"```json\n(.*?)```", text, flags=re.S):
        data = json.loads(block)
        command = data.get("agentCommand") if isinstance(data, dict) else None
        if command and command[0] == program:
            return list(command)
    raise AssertionError(f"docs/dream.md documents no agentCommand for {program}")


@dataclass
class Dreamer:
    """A person's machine with a memory folder, about to run `sage-mem dream` with an agent."""

    home: Path
    memory: Path
    work: Path
    bin: Path

    @property
    def paths(self) -> DreamPaths:
        return DreamPaths(MemoryFolder(self.memory))

    def configure(self, command: list[str]) -> None:
        self.paths.ensure()
        self.paths.config_file.write_text(
            json.dumps({"agentCommand": command, "agentTimeoutSeconds": 120}), encoding="utf-8"
        )

    def sage(self, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        env = {**env, "PATH": f"{clients_bin()}{os.pathsep}{self.bin}{os.pathsep}{env['PATH']}"}
        return subprocess.run([*SAGE, "--dir", str(self.memory), *args], cwd=self.work,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)

    def dream(self, env: dict[str, str], mode: str) -> dict[str, Any]:
        done = self.sage(env, "dream", "--mode", mode, "--json")
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        return dict(json.loads(done.stdout))

    def manifest(self, run_id: str) -> dict[str, Any]:
        path = self.paths.run_dir(run_id) / "manifest.json"
        return dict(json.loads(path.read_text(encoding="utf-8")))

    def report(self, result: dict[str, Any]) -> str:
        return Path(result["report"]).read_text(encoding="utf-8")


@pytest.fixture
def dreamer(tmp_path: Path) -> Dreamer:
    home, memory, work = tmp_path / "home", tmp_path / "memory", tmp_path / "work"
    for folder in (home, memory, work):
        folder.mkdir()
    made = Dreamer(home, memory, work, tmp_path / "bin")
    sage_mem_on_path(made.bin)
    add(memory, "project_db_old", "The project database is MySQL 5.7",
        "We run MySQL 5.7 on db1.", category="project", created="2026-03-02",
        updated="2026-03-02")
    add(memory, "project_db", "The project database is PostgreSQL 16 since the October switch",
        "Moved from MySQL to PostgreSQL 16 in October.", category="project",
        created="2026-10-20", updated="2026-10-20")
    add(memory, "user_name", "The user is called Mei Lin", "Mei Lin, a backend engineer.",
        category="user", created="2026-01-05", updated="2026-01-05")
    add(memory, "project_release_zh", "发布在每周四下午进行",
        "每周四 15:00 发布，发布前跑集成测试。", category="project", created="2026-09-01",
        updated="2026-09-01")
    return made


def scripted(steps: list[Callable[[ModelRequest], list[Text | ToolCall]]]) -> Callable[
        [ModelRequest], list[Text | ToolCall] | None]:
    """A model that plays `steps` in order, one for each turn that follows a tool result."""

    def model(request: ModelRequest) -> list[Text | ToolCall] | None:
        if not request.tool_names:
            return None  # a side request of the client: not a turn of the script
        step = len(request.tool_results)
        return steps[step](request) if step < len(steps) else [Text("Done.")]

    return model


def call(name: str, arguments: dict[str, Any], *, codex: bool = False
         ) -> Callable[[ModelRequest], list[Text | ToolCall]]:
    if codex:
        return lambda request: [ToolCall(name, arguments, namespace=CODEX_NAMESPACE)]
    return lambda request: [Text("Looking."), ToolCall(CLAUDE_PREFIX + name, arguments)]


PROPOSAL = {"id": "project_db_old", "archive": True, "superseded_by": "project_db",
            "reason": "overturned: the database moved from MySQL to PostgreSQL in October"}
NOTE = {"id": "project_release_zh", "message": "发布日是周四还是周五？两条记录说法不一，请确认。"}
FIX = {"id": "project_db", "tags": ["database"],
       "reason": "tagged so that searches for the database find it"}
ARCHIVE = {"id": "project_db_old", "superseded_by": "project_db",
           "reason": "overturned by project_db: the database is PostgreSQL now"}


def claude_dream_env(dreamer: Dreamer, api: StandInAPI) -> dict[str, str]:
    return claude_env(dreamer.home, api)


def offered(request: ModelRequest) -> list[str]:
    return sorted(request.tool_names)


def assert_report_run_proposes_and_changes_nothing(
    dreamer: Dreamer, result: dict[str, Any], before: dict[str, bytes]
) -> None:
    run_id = result["runId"]
    manifest = dreamer.manifest(run_id)
    assert manifest["model"]["status"] == "finished", manifest["model"]
    proposed = [c for c in manifest["changes"] if c["source"] == "model"]
    assert [(c["operation"], c["file"], c["state"], c.get("supersededBy")) for c in proposed] == [
        ("archive", "project_db_old.md", "proposed", "project_db")]
    assert proposed[0]["reason"] == PROPOSAL["reason"]
    (note,) = [n for n in manifest["notes"] if n.get("source") == "model"]
    assert note["file"] == "project_release_zh.md" and note["message"] == NOTE["message"]
    report = dreamer.report(result)
    assert "### Changes the model pass proposed" in report
    assert f"- archived `project_db_old.md`: {PROPOSAL['reason']}" in report
    assert f"- `project_release_zh.md`: {NOTE['message']}" in report
    assert not dreamer.paths.snapshot_dir(run_id).exists(), "no rollback point left behind"
    after = folder_bytes(dreamer.memory, skip=())
    assert set(after) - set(before) == {f"autodream/{run_id}.md"}
    assert {name: after[name] for name in before} == before, "a report run changes nothing"


def assert_rewrite_run_rolls_back_byte_for_byte(
    dreamer: Dreamer, env: dict[str, str], result: dict[str, Any], before: dict[str, bytes]
) -> None:
    run_id = result["runId"]
    manifest = dreamer.manifest(run_id)
    assert manifest["model"]["status"] == "finished", manifest["model"]
    model = [(c["operation"], c["file"], c["state"]) for c in manifest["changes"]
             if c["source"] == "model"]
    assert model == [("rewrite", "project_db.md", "applied"),
                     ("archive", "project_db_old.md", "applied")]
    assert not (dreamer.memory / "project_db_old.md").exists()
    assert "database" in (dreamer.memory / "project_db.md").read_text(encoding="utf-8")
    report = dreamer.report(result)
    assert "### Changes by the model pass" in report and ARCHIVE["reason"] in report

    undone = dreamer.sage(env, "rollback", run_id)
    assert undone.returncode == 0, undone.stderr
    assert folder_bytes(dreamer.memory, skip=("autodream",)) == before


# Claude Code


@pytest.mark.clients
def test_claude_code_report_run_proposes_and_notes_with_only_the_dream_tools(
    dreamer: Dreamer,
) -> None:
    """The documented command line: only the restricted tools, no hooks, proposals in the report."""
    claude = client("claude")
    installed = subprocess.run(
        [*SAGE, "--dir", str(dreamer.memory), "install", "claude-code", "--scope", "user"],
        cwd=dreamer.work, capture_output=True, text=True, timeout=TIMEOUT,
        env=isolated_env(dreamer.home),
    )
    assert installed.returncode == 0, installed.stderr  # the hooks and server a user has
    dreamer.configure(documented_command("claude"))
    before = folder_bytes(dreamer.memory, skip=())
    model = scripted([call("memory_list", {}), call("memory_propose", PROPOSAL),
                      call("memory_note", NOTE)])
    with StandInAPI(model) as api:
        result = dreamer.dream(claude_dream_env(dreamer, api), "report")
    assert claude and not api.errors, api.errors
    first = api.scripted()[0]
    assert offered(first) == [CLAUDE_PREFIX + name for name in REPORT_TOOLS], (
        "no built-in tool (shell, file editing) and no other server: only the run's own")
    assert "nothing will be changed in this run" in first.text  # the report run's prompt
    # sage-mem's own hooks (installed for the user) did nothing inside the run
    assert all("Memory tools (sage-mem)" not in request.text for request in api.requests)
    sessions = MemoryFolder(dreamer.memory).state_path("sessions")
    assert not sessions.exists() or not any(sessions.iterdir())
    listed = json.loads(api.scripted()[1].tool_results[0]["text"])
    assert listed["total"] == 4
    assert_report_run_proposes_and_changes_nothing(dreamer, result, before)


@pytest.mark.clients
def test_claude_code_rewrite_run_changes_through_the_manifest_and_rolls_back(
    dreamer: Dreamer,
) -> None:
    client("claude")
    dreamer.configure(documented_command("claude"))
    before = folder_bytes(dreamer.memory, skip=("autodream",))
    model = scripted([call("memory_read", {"id": "project_db_old"}), call("memory_write", FIX),
                      call("memory_archive", ARCHIVE)])
    with StandInAPI(model) as api:
        env = claude_dream_env(dreamer, api)
        result = dreamer.dream(env, "rewrite")
        assert not api.errors, api.errors
        assert offered(api.scripted()[0]) == [CLAUDE_PREFIX + name for name in REWRITE_TOOLS]
        read = json.loads(api.scripted()[1].tool_results[0]["text"])
        assert read["description"] == "The project database is MySQL 5.7"
        assert_rewrite_run_rolls_back_byte_for_byte(dreamer, env, result, before)


def with_shell(command: list[str]) -> list[str]:
    """The documented Claude Code line, but one that (wrongly) leaves the agent its shell."""
    at = command.index("--tools")
    changed = [*command[:at], "--tools", "Bash", *command[at + 2:]]
    allowed = changed.index("--allowedTools")
    changed[allowed + 1] += " Bash"
    return changed


@pytest.mark.clients
@pytest.mark.parametrize("mode", ["report", "rewrite"])
def test_an_agent_editing_the_folder_with_its_own_tools_is_caught_and_rolled_back(
    dreamer: Dreamer, mode: str
) -> None:
    """Every change the run's journal does not explain: in the manifest, report and rollback."""
    client("claude")
    dreamer.configure(with_shell(documented_command("claude")))
    before = folder_bytes(dreamer.memory, skip=("autodream",))
    folder = dreamer.memory
    planted = "---\\ndescription: planted\\n---\\nplanted\\n"
    sneak = (f"printf 'Actually she is called May.\\n' >> {folder}/user_name.md && "
             f"printf -- '{planted}' > {folder}/user_planted.md")
    steps = [lambda request: [ToolCall("Bash", {"command": sneak, "description": "edit"})]]
    if mode == "rewrite":
        steps.append(call("memory_write", FIX))  # and one change through the server, explained
    with StandInAPI(scripted(steps)) as api:
        env = claude_dream_env(dreamer, api)
        result = dreamer.dream(env, mode)
    assert not api.errors, api.errors
    shell = api.scripted()[1].tool_results[0]
    assert not shell["is_error"], shell["text"]
    assert "May" in (folder / "user_name.md").read_text(encoding="utf-8")

    manifest = dreamer.manifest(result["runId"])
    outside = {c["file"]: c for c in manifest["changes"] if c["source"] == "outside"}
    assert set(outside) == {"user_name.md", "user_planted.md"}
    assert outside["user_name.md"]["operation"] == "rewrite"
    assert outside["user_planted.md"]["operation"] == "create"
    assert outside["user_planted.md"]["before"] is None
    assert outside["user_name.md"]["before"]["sha256"] != outside["user_name.md"]["after"]["sha256"]
    if mode == "rewrite":
        assert "project_db.md" not in outside, "a change through the server is the journal's"
    report = dreamer.report(result)
    assert "rewrote `user_name.md`: **changed by the agent's own tools**" in report
    assert f"undo with `sage-mem rollback {result['runId']}`" in report

    undone = dreamer.sage(env, "rollback", result["runId"])
    assert undone.returncode == 0, undone.stderr
    live = folder_bytes(folder, skip=("autodream", "archive"))
    assert live == {name: data for name, data in before.items() if not name.startswith("archive/")}
    # never deleted: the planted file went into archive/
    assert any(path.name.startswith("user_planted") for path in (folder / "archive").rglob("*"))


# Codex


def codex_dream_env(dreamer: Dreamer, api: StandInAPI) -> dict[str, str]:
    config = dreamer.home / ".codex" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    if "[model_providers.stand-in]" not in text:
        config.write_text(codex_provider(api) + "\n" + text, encoding="utf-8")
    return codex_env(dreamer.home)


def codex_tools(request: ModelRequest) -> tuple[list[str], list[str]]:
    """(the restricted server's tools, every other top-level tool) of one request."""
    server: list[str] = []
    other: list[str] = []
    for tool in request.body.get("tools") or []:
        if tool.get("type") == "namespace" and tool.get("name") == CODEX_NAMESPACE:
            server = sorted(inner["name"] for inner in tool["tools"])
        else:
            other.append(str(tool.get("name") or tool.get("type")))
    return server, other


@pytest.mark.clients
def test_codex_report_run_proposes_and_notes_with_only_the_dream_tools(dreamer: Dreamer) -> None:
    client("codex")
    installed = subprocess.run(  # the normal server of a user who ran `install codex`
        [*SAGE, "--dir", str(dreamer.memory), "install", "codex"], cwd=dreamer.work,
        capture_output=True, text=True, timeout=TIMEOUT, env=codex_env(dreamer.home),
    )
    assert installed.returncode == 0, installed.stderr
    dreamer.configure(documented_command("codex"))
    before = folder_bytes(dreamer.memory, skip=())
    model = scripted([call("memory_list", {}, codex=True),
                      call("memory_propose", PROPOSAL, codex=True),
                      call("memory_note", NOTE, codex=True)])
    with StandInAPI(model) as api:
        result = dreamer.dream(codex_dream_env(dreamer, api), "report")
    assert not api.errors, api.errors
    server, other = codex_tools(api.requests[0])
    assert server == REPORT_TOOLS
    # Codex's own tools that reach past the run (images, web search, sub-agents,
    # goals, apps, a browser) are switched off by the documented command: what is
    # left reads this run's MCP server or asks the user, whom `codex exec` has not.
    assert set(other) <= {"list_mcp_resources", "list_mcp_resource_templates",
                          "read_mcp_resource", "request_user_input"}, other
    assert not [name for name in other if name.startswith("mcp__sage_mem")], (
        "the user's own sage-mem server is switched off inside the run")
    outcomes = [request.tool_results[-1] for request in api.requests[1:4]]
    assert all("not a tool" not in result["text"] for result in outcomes), outcomes
    assert_report_run_proposes_and_changes_nothing(dreamer, result, before)


@pytest.mark.clients
def test_codex_rewrite_run_changes_through_the_manifest_and_rolls_back(dreamer: Dreamer) -> None:
    client("codex")
    dreamer.configure(documented_command("codex"))
    before = folder_bytes(dreamer.memory, skip=("autodream",))
    model = scripted([call("memory_read", {"id": "project_db_old"}, codex=True),
                      call("memory_write", FIX, codex=True),
                      call("memory_archive", ARCHIVE, codex=True)])
    with StandInAPI(model) as api:
        env = codex_dream_env(dreamer, api)
        result = dreamer.dream(env, "rewrite")
        assert not api.errors, api.errors
        assert codex_tools(api.requests[0])[0] == REWRITE_TOOLS
        assert "MySQL 5.7" in api.requests[1].tool_results[0]["text"]
        assert_rewrite_run_rolls_back_byte_for_byte(dreamer, env, result, before)


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_sage_mem_hooks_do_nothing_inside_a_dream_runs_agent(
    dreamer: Dreamer, event: str
) -> None:
    """With SAGE_MEM_DREAM_RUN (set for the agent) a hook injects nothing and records nothing."""
    add(dreamer.memory, "user_profile", "Mei Lin's profile", "Mei Lin, a backend engineer.",
        category="user", baseline=True)
    sessions = MemoryFolder(dreamer.memory).state_path("sessions")
    hook_input = json.dumps({"session_id": "s1", "cwd": str(dreamer.work),
                             "hook_event_name": "x", "source": "startup",
                             "prompt": "what is the project database?"})

    def hook(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*SAGE, "--dir", str(dreamer.memory), "hook", event],
                              input=hook_input, capture_output=True, text=True,
                              timeout=TIMEOUT, env=isolated_env(dreamer.home, **extra))

    inside = hook(SAGE_MEM_DREAM_RUN="20261201T120000Z-1a2b")
    assert (inside.returncode, inside.stdout, inside.stderr) == (0, "", "")
    assert not sessions.exists() or not any(sessions.iterdir())
    outside = hook()  # the same hook in a person's session
    assert outside.returncode == 0 and "additionalContext" in outside.stdout
    assert any(sessions.iterdir())
