"""The optional model pass (DESIGN §7.2): after the rules, changing only through the manifest.

Two ways in, one set of tools:

- `model_pass=` on `run_dream`: a callable handed a `DreamTools` in this
  process (tests, and MCP sampling where a client offers it);
- `agentCommand` in the settings: an agent command (`claude -p …`, `codex exec
  …`) started with an MCP configuration that points at `sage-mem serve
  --dream-run <runId>`. That server, in its own process, calls
  `attach_tools(store, run_id)` and exposes exactly the tools the returned
  `DreamTools` allows: list, read, search and audit; write and archive only
  when the run is a rewrite run. Each change lands in the run's journal, which
  the runner folds into its manifest when the agent has finished.

A model that fails, times out or runs out of calls leaves the rule-based
result standing. There is no delete tool.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import DreamError, MemoryLocked, SageMemError, ToolRefused
from ..store import MemoryStore
from .changes import Applier
from .manifest import Manifest
from .paths import DreamPaths

RULE = "model"
DEFAULT_PROMPT = (
    "You are tidying a folder of agent memories (sage-mem). Use the sage-mem-dream tools: "
    "list and read the memories, find ones that say the same thing or contradict each other, "
    "and (when write and archive are available) merge or correct them. Give a one-line reason "
    "for every write and archive; archiving needs one. Never invent facts. Stop when done."
)


class DreamTools:
    """The tools of a model during one run: reads always, writes only in rewrite mode."""

    def __init__(self, store: MemoryStore, applier: Applier, *, max_calls: int = 200) -> None:
        self.store = store
        self.applier = applier
        self.max_calls = max_calls
        self.calls = 0

    @property
    def names(self) -> tuple[str, ...]:
        reads = ("memory_list", "memory_read", "memory_search", "memory_audit")
        return reads + (("memory_write", "memory_archive") if self.applier.writes else ())

    def list(self, *, category: str | None = None) -> list[dict[str, Any]]:
        self._count()
        return [
            {"id": m.id, "description": m.display, "category": m.category}
            for m in self.store.list(category=category)
        ]

    def read(self, memory_id: str) -> dict[str, Any]:
        self._count()
        return self.store.read(memory_id).to_dict()

    def search(self, query: str, *, limit: int = 10) -> builtins.list[dict[str, Any]]:
        self._count()
        return [hit.to_dict() for hit in self.store.search(query, limit=limit)]

    def audit(self) -> dict[str, Any]:
        self._count()
        from .health import audit_summary

        return audit_summary(self.store) or {}

    def write(self, memory_id: str, *, reason: str | None = None, **fields: Any) -> dict[str, Any]:
        """Create or rewrite a memory (not in report mode); without a reason it is unexplained."""
        self._count()
        self._require_rewrite("write", memory_id, reason)
        path = self.store.folder.path_for(memory_id)
        if not path.exists():
            created = self.applier.create(memory_id, rule=RULE, reason=reason, **fields)
            return {"id": memory_id, "written": created is not None}
        memory = self.store.read(memory_id)
        if memory.locked:
            self.applier.refuse(
                memory.id,
                operation="rewrite",
                rule=RULE,
                reason=reason or "",
                why="the memory is locked (locked: true)",
            )
            raise MemoryLocked(f"{memory.id}: memory is locked (locked: true)")
        updated = self.applier.rewrite(memory, rule=RULE, reason=reason, **fields)
        return {"id": memory.id, "written": updated is not None}

    def archive(
        self, memory_id: str, *, reason: str | None = None, superseded_by: str | None = None
    ) -> dict[str, Any]:
        """Move a memory into archive/; refused in report mode and without a reason."""
        self._count()
        self._require_rewrite("archive", memory_id, reason)
        memory = self.store.read(memory_id)
        refused = len(self.applier.manifest.refused)
        archived = self.applier.archive(
            memory, rule=RULE, reason=reason, superseded_by=superseded_by
        )
        if archived is None:
            # Tell the model why (no reason, locked, changed meanwhile), not only that.
            why = "already archived in this run"
            if len(self.applier.manifest.refused) > refused:
                why = self.applier.manifest.refused[-1].get("refusedBecause", why)
            raise ToolRefused(f"{memory.id}: not archived: {why}")
        return {"id": memory.id, "archivedAs": archived.id}

    def refuse_tool(self, name: str, memory_id: str | None, *, reason: str | None = None) -> None:
        """Record a call to a tool this run does not offer (`memory_delete`, …) and refuse it."""
        self._count()
        self.applier.refuse(
            memory_id,
            operation=name,
            rule=RULE,
            reason=reason or "",
            why=f"{name} is not a tool of this run",
        )
        raise ToolRefused(
            f"{name} is not a tool of this run (it offers {', '.join(self.names)}; "
            "there is no delete)"
        )

    def _require_rewrite(self, operation: str, memory_id: str, reason: str | None) -> None:
        if not self.applier.writes:
            self.applier.refuse(
                memory_id,
                operation=operation,
                rule=RULE,
                reason=reason or "",
                why="a report run has no write tools",
            )
            raise ToolRefused(f"{operation} is not available in a report run")

    def _count(self) -> None:
        self.calls += 1
        if self.calls > self.max_calls:
            raise ToolRefused(f"this run allows at most {self.max_calls} tool calls")


def attach_tools(store: MemoryStore, run_id: str, *, max_calls: int = 200) -> DreamTools:
    """The model's tools in a running run, for the restricted server (`serve --dream-run`)."""
    paths = DreamPaths(store.folder)
    manifest = Manifest.load(paths, run_id)
    if manifest.status != "running" or manifest.data.get("kind") != "dream":
        raise DreamError(f"run {run_id} is not a dream run in progress")
    mode = str(manifest.data.get("mode"))
    limit = manifest.data.get("agentMaxCalls")
    if isinstance(limit, int) and not isinstance(limit, bool):
        max_calls = limit
    return DreamTools(
        store, Applier(store, manifest, mode=mode, source="model"), max_calls=max_calls
    )


def run_model_pass(
    store: MemoryStore,
    applier: Applier,
    *,
    model_pass: Callable[[DreamTools], object] | None,
    agent_command: Sequence[str],
    timeout: float,
    max_calls: int,
) -> dict[str, Any]:
    """Run the model pass if configured; never raises (a failure leaves the rules' result)."""
    if model_pass is not None:
        tools = DreamTools(
            store,
            Applier(store, applier.manifest, mode=applier.mode, source="model"),
            max_calls=max_calls,
        )
        try:
            model_pass(tools)
        except SageMemError as exc:
            return {"status": "stopped", "detail": str(exc), "calls": tools.calls}
        except Exception as exc:  # noqa: BLE001 - a failing model leaves the rule-based result standing
            return {
                "status": "failed",
                "detail": f"{type(exc).__name__}: {exc}",
                "calls": tools.calls,
            }
        return {"status": "finished", "calls": tools.calls}
    if not agent_command:
        return {"status": "not configured"}
    # The server of `serve --dream-run` reads its bound on calls from the manifest.
    applier.manifest.update(agentMaxCalls=max_calls)
    outcome = launch_agent(store, applier.manifest, agent_command, timeout=timeout)
    # The agent's server wrote from another process: take in its journal and its files.
    applier.manifest.reload_journal()
    store.reconcile()
    return outcome


def launch_agent(
    store: MemoryStore, manifest: Manifest, command: Sequence[str], *, timeout: float
) -> dict[str, Any]:
    """Start the agent command with an MCP configuration for this run; wait at most `timeout` s.

    Placeholders in the command: `{mcp_config}` (path of the MCP configuration
    file), `{run_id}`, `{mode}`, `{prompt}` (DEFAULT_PROMPT), and `{memory_dir}`
    and `{state_dir}` for agents that take their servers as flags (`codex exec -c`).
    """
    run_dir = manifest.paths.run_dir(manifest.run_id)
    config_path = run_dir / "mcp.json"
    server = {
        "command": sys.executable,
        "args": [
            "-m",
            "sage_mem",
            "--dir",
            str(store.folder.root),
            "serve",
            "--dream-run",
            manifest.run_id,
        ],
        # An agent may start its MCP servers with a bare environment: keep the state folder.
        "env": {"SAGE_MEM_STATE_DIR": str(store.folder.state_dir)},
    }
    config_path.write_text(json.dumps({"mcpServers": {"sage-mem-dream": server}}, indent=1) + "\n")
    values = {
        "mcp_config": str(config_path),
        "run_id": manifest.run_id,
        "mode": str(manifest.data.get("mode")),
        "prompt": DEFAULT_PROMPT,
        "memory_dir": str(store.folder.root),
        "state_dir": str(store.folder.state_dir),
    }
    argv = [_fill(part, values) for part in command]
    env = {
        **os.environ,
        "SAGE_MEM_DREAM_RUN": manifest.run_id,
        "SAGE_MEM_DREAM_MCP_CONFIG": str(config_path),
        "SAGE_MEM_STATE_DIR": str(store.folder.state_dir),
    }
    try:
        # Its own process group: on a timeout the agent goes together with what it
        # started (the `serve --dream-run` server among them), so nothing changes
        # the folder after the run has moved on.
        agent = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return {"status": "failed", "detail": f"could not start {argv[0]!r}: {exc.strerror or exc}"}
    try:
        stdout, stderr = agent.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(agent)
        return {"status": "timed out", "detail": f"stopped after {timeout:g} s"}
    if agent.returncode != 0:
        tail = (stderr or stdout or "").strip().splitlines()[-1:] or [""]
        return {"status": "failed", "detail": f"exit status {agent.returncode}: {tail[0][:200]}"}
    return {"status": "finished", "detail": ""}


def _stop_group(agent: subprocess.Popen[str]) -> None:
    """Kill the agent's process group, then reap the agent.

    Only while the agent is not reaped yet: until then its pid, the group's id,
    cannot be given to another process.
    """
    try:
        os.killpg(agent.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    agent.wait()
    for stream in (agent.stdout, agent.stderr):
        if stream is not None:
            stream.close()


def _fill(part: str, values: dict[str, str]) -> str:
    # Only the known placeholders: a command may hold other braces (a script, JSON).
    for key, value in values.items():
        part = part.replace("{" + key + "}", value)
    return part
