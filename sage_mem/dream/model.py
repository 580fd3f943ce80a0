"""The optional model pass (DESIGN §7.2): after the rules, changing only through the manifest.

Two ways in, one set of tools:

- `model_pass=` on `run_dream`: a callable handed a `DreamTools` in this
  process (tests, and MCP sampling where a client offers it);
- `agentCommand` in the settings: an agent command (`claude -p …`, `codex exec
  …`) started with an MCP configuration that points at `sage-mem serve
  --dream-run <runId>`. That server, in its own process, calls
  `attach_tools(store, run_id)` and exposes exactly the tools the returned
  `DreamTools` allows: list, read, search and audit, and `memory_note` (a
  note for the person, in the report); write and archive in a rewrite run,
  `memory_propose` (a change a rewrite would make, with its reason) in a
  report run. Each change lands in the run's journal, which the runner folds
  into its manifest when the agent has finished.

An agent also has tools of its own (a shell, a file editor). The documented
command lines take them away, but whatever it changes in the memory folder
outside the restricted server is found all the same: the folder's files are
read before the agent starts and after it ends, and every difference the
run's journal does not explain is recorded in the manifest as an `outside`
change by the model (bytes and sha256 before and after), listed in the report
and put back by `sage-mem rollback RUN_ID` like any other change. A report
run with an agent takes a rollback point before the agent starts for that.
Nothing is put back on its own: a person editing a memory during the run
looks the same as an agent doing it, and only a person may decide.

sage-mem's own hooks do nothing in the agent's session: the agent's
environment carries `SAGE_MEM_DREAM_RUN` (see `agents.hooks`).

A model that fails, times out or runs out of calls leaves the rule-based
result standing. There is no delete tool.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..disk.folder import INDEX_FILE, MemoryFolder
from ..errors import DreamError, MemoryLocked, MemoryNotFound, SageMemError, ToolRefused
from ..memory.fields import FIELDS
from ..memory.value import Memory
from ..store import MemoryStore
from .candidates import work_list
from .changes import Applier, file_state
from .manifest import Manifest
from .paths import DreamPaths
from .snapshots import BeforeKeeper, has_snapshot, take_snapshot

RULE = "model"
OUTSIDE = "outside"
"""The source of a change the agent made with its own tools, outside the restricted server."""
DREAM_RUN_ENV = "SAGE_MEM_DREAM_RUN"
"""Set (to the run id) in the agent's environment: sage-mem's hooks do nothing there."""
NOTE_MAX = 1_000
DEFAULT_PROMPT = (
    "You are tidying a folder of agent memories (sage-mem). Use the sage-mem-dream tools: "
    "list and read the memories, find ones that say the same thing or contradict each other, "
    "and (when write and archive are available) merge or correct them. Give a one-line reason "
    "for every write and archive; archiving needs one. Never invent facts. Stop when done."
)
REPORT_PROMPT = (
    "You are reviewing a folder of agent memories (sage-mem) for its owner; nothing will be "
    "changed in this run. Use the sage-mem-dream tools: list and read the memories, find ones "
    "that say the same thing, contradict each other or are out of date, and for each call "
    "memory_propose with the change a tidying run should make and a one-line reason "
    "(archive=true to retire one, superseded_by naming the one that replaces it), or "
    "memory_note for anything else the owner should look at. Never invent facts. Stop when "
    "done."
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
        changes = ("memory_write", "memory_archive") if self.applier.writes else ("memory_propose",)
        return reads + changes + ("memory_note",)

    def list(self, *, category: str | None = None) -> list[dict[str, Any]]:
        self._count()
        return [
            {"id": m.id, "description": m.display, "category": m.category}
            for m in self.store.list(category=category)
        ]

    def read(self, memory_id: str) -> dict[str, Any]:
        self._count()
        with self.listed("memory_read", memory_id, None):
            return self.store.read(memory_id).to_dict()

    @contextlib.contextmanager
    def listed(
        self, operation: str, memory_id: Any, reason: Any
    ) -> Iterator[None]:
        """Every call that fails is listed in the run's refused section (once): an id that
        leaves the folder, MEMORY.md, a bad value, a locked memory, a tool not offered."""
        before = len(self.applier.manifest.refused)
        try:
            yield
        except (SageMemError, TypeError, ValueError) as exc:
            if len(self.applier.manifest.refused) == before:
                self.record_refusal(operation, memory_id, reason, " ".join(str(exc).split()))
            raise

    def record_refusal(self, operation: str, memory_id: Any, reason: Any, why: str) -> None:
        """List a call refused before it reached a tool (a bad argument) or inside one."""
        known: str | None = None
        if isinstance(memory_id, str):
            try:
                if self.store.folder.path_for(memory_id).exists():
                    known = self.store.folder.normalize_id(memory_id)
            except SageMemError:
                known = None  # an id that leaves the folder: named in `why`, never as a file
        if known is None and isinstance(memory_id, str) and memory_id:
            why = f"{why} (id {memory_id[:200]!r})" if memory_id[:200] not in why else why
        self.applier.refuse(
            known, operation=operation, rule=RULE,
            reason=reason if isinstance(reason, str) else "", why=why,
        )

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
        with self.listed("write", memory_id, reason):
            return self._write(memory_id, reason=reason, **fields)

    def _write(self, memory_id: str, *, reason: str | None = None, **fields: Any) -> dict[str, Any]:
        self._require_rewrite("write", memory_id, reason)
        path = self.store.folder.path_for(memory_id)
        current = self.store.read(memory_id) if path.exists() else None
        emptied = hollow_write(current, fields)
        if emptied:
            raise ToolRefused(f"{memory_id}: not written: {emptied}")
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
        with self.listed("archive", memory_id, reason):
            return self._archive(memory_id, reason=reason, superseded_by=superseded_by)

    def _archive(
        self, memory_id: str, *, reason: str | None = None, superseded_by: str | None = None
    ) -> dict[str, Any]:
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

    def propose(
        self,
        memory_id: str,
        *,
        reason: str | None,
        archive: bool = False,
        superseded_by: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """A report run's way to say what should change: listed as proposed, with its reason.

        Recorded exactly as the same write or archive would be in a rewrite run, as
        `proposed`; nothing is changed. A proposal needs a reason.
        """
        self._count()
        with self.listed("archive" if archive else "rewrite", memory_id, reason):
            if self.applier.writes:
                raise ToolRefused(
                    "memory_propose is for report runs; this rewrite run offers memory_write and "
                    "memory_archive"
                )
            operation = "archive" if archive else "rewrite"
            if not reason or not reason.strip():
                why = "a proposal needs a reason"
                self.applier.refuse(memory_id, operation=operation, rule=RULE, reason="", why=why)
                raise ToolRefused(f"{memory_id}: not proposed: a proposal needs a reason")
            if not archive and not fields:
                raise ToolRefused(
                    f"{memory_id}: not proposed: give the fields to write, or archive=true"
                )
            refused = len(self.applier.manifest.refused)
            path = self.store.folder.path_for(memory_id)
            emptied = None if archive else hollow_write(
                self.store.read(memory_id) if path.exists() else None, fields
            )
            if emptied:
                raise ToolRefused(f"{memory_id}: not proposed: {emptied}")
            if not archive and not path.exists():
                operation = "create"
                self.applier.create(memory_id, rule=RULE, reason=reason, **fields)
            else:
                memory = self.store.read(memory_id)
                memory_id = memory.id
                if archive:
                    self.applier.archive(memory, rule=RULE, reason=reason,
                                         superseded_by=superseded_by)
                else:
                    self.applier.rewrite(memory, rule=RULE, reason=reason, **fields)
            if len(self.applier.manifest.refused) > refused:
                why = self.applier.manifest.refused[-1].get("refusedBecause", "refused")
                raise ToolRefused(f"{memory_id}: not proposed: {why}")
            return {"id": memory_id, "proposed": operation}

    def note(self, message: str, *, memory_id: str | None = None) -> dict[str, Any]:
        """A note for the person, listed in the report under "For you to look at"."""
        self._count()
        text = " ".join((message or "").split())
        if not text:
            raise ToolRefused("a note needs a message")
        if len(text) > NOTE_MAX:
            text = text[:NOTE_MAX] + "…(truncated)"
        if memory_id is not None:
            if not self.store.folder.path_for(memory_id).exists():
                raise MemoryNotFound(f"{memory_id}: no such memory")
            memory_id = self.store.folder.normalize_id(memory_id)
        self.applier.note(memory_id, rule=RULE, message=text)
        return {"noted": True, **({"id": memory_id} if memory_id else {})}

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


BODY_SHRINK = 0.25
"""A model's body under this share of the one it replaces (a long one) is no tidying."""
SHRINK_FROM = 80
"""Characters a body or description has before a shrink below BODY_SHRINK counts."""
MIN_DESCRIPTION = 3
"""Characters a description needs ("x" says nothing; two Chinese characters, 周报, may)."""


def hollow_write(current: Memory | None, fields: dict[str, Any]) -> str | None:
    """Why a model's write would hollow a memory out (an empty body, the description "x", a
    long text cut to a scrap) or names no field of a memory, or None. A shrink to nothing is
    never tidying: refused, listed."""
    body, description = fields.get("body"), fields.get("description")
    unknown = sorted(set(fields) - {field.name for field in FIELDS} - {"body"})
    if unknown:
        return f"unknown argument {unknown[0]!r}"
    if isinstance(body, str) and current is not None and current.body.strip():
        new, old = len(body.strip()), len(current.body.strip())
        if new == 0:
            return "it would empty the body"
        if old >= SHRINK_FROM and new < old * BODY_SHRINK:
            return f"it would cut the body from {old} to {new} characters"
    if isinstance(description, str):
        text = description.strip()
        cjk = sum(1 for char in text if "\u3400" <= char <= "\u9fff")
        words = re.sub(r"[\W_]", "", text)
        if len(words) < MIN_DESCRIPTION and cjk < 2:
            return f"the description {description!r} says nothing"
        if current is not None:
            old = len(current.description.strip())
            if old >= SHRINK_FROM // 2 and len(text) < old * BODY_SHRINK:
                return f"it would cut the description from {old} to {len(text)} characters"
    return None


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
    keep = BeforeKeeper(store.folder, paths, run_id) if mode == "rewrite" else None
    return DreamTools(
        store, Applier(store, manifest, mode=mode, source="model", keep=keep), max_calls=max_calls
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
            Applier(store, applier.manifest, mode=applier.mode, source="model", keep=applier.keep),
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
        finally:
            # A restricted server built in this process (`build_dream_server`) journals
            # through a Manifest of its own: take in what it recorded.
            applier.manifest.reload_journal()
        return {"status": "finished", "calls": tools.calls}
    if not agent_command:
        return {"status": "not configured"}
    manifest = applier.manifest
    # The server of `serve --dream-run` reads its bound on calls from the manifest.
    manifest.update(agentMaxCalls=max_calls)
    own_point = not has_snapshot(manifest.paths, manifest.run_id)
    if own_point:
        # A report run: a rollback point all the same, so that whatever the agent
        # changes with its own tools can be put back.
        snapshot = take_snapshot(
            store.folder, manifest.paths, manifest.run_id, protective=False,
            now=datetime.now(UTC),
        )
        manifest.update(
            rollbackPoint={"snapshot": str(snapshot.root), "files": len(snapshot.files),
                           "refused": len(snapshot.refused), "before": "model pass"}
        )
    known = {change["ref"] for change in manifest.changes}
    before = folder_files(store.folder)
    outcome = launch_agent(store, manifest, agent_command, timeout=timeout)
    # The agent's server wrote from another process: take in its journal and its files.
    manifest.reload_journal()
    outside = record_outside_changes(store.folder, manifest, before, known)
    if outside:
        outcome = {**outcome, "outside": len(outside)}
    elif own_point:
        # Nothing to put back: a report run keeps no rollback point (none would be rotated).
        shutil.rmtree(manifest.paths.snapshot_dir(manifest.run_id), ignore_errors=True)
        manifest.data.pop("rollbackPoint", None)
        manifest.save()
    store.reconcile()
    return outcome


def folder_files(folder: MemoryFolder) -> dict[str, dict[str, Any] | None]:
    """Every file in the memory folder (archive/ and dot-files too, not .git) -> its state.

    The state is what the manifest records (`file_state`: bytes and sha256, or why
    the checked read refused it); links are not followed.
    """
    found: dict[str, dict[str, Any] | None] = {}
    root = folder.root
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(name for name in dirs if name != ".git")
        entries = sorted(files) + [name for name in dirs if os.path.islink(os.path.join(top, name))]
        for name in entries:
            path = Path(top) / name
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            state = file_state(folder, rel, path)
            if state is not None:
                found[rel] = state
    return found


def record_outside_changes(
    folder: MemoryFolder,
    manifest: Manifest,
    before: dict[str, dict[str, Any] | None],
    known: set[str],
) -> list[dict[str, Any]]:
    """Record every change in the folder that the run's journal since `before` does not explain.

    `known`: the refs of the changes made before the agent started. A change
    the server journaled explains a file only when the file went from what
    the journal says it was to what it says it left, so an edit of the agent's
    own before or after a server write shows too. MEMORY.md is the server's
    to regenerate after its writes (the run regenerates it once more, and
    journals that): it counts as outside only when the server wrote nothing.
    """
    after = folder_files(folder)
    steps: dict[str, list[tuple[str | None, str | None]]] = {}
    loose: set[str] = set()  # a change cut short: what it left is unknown
    for change in manifest.changes:
        if change["ref"] in known or change.get("source") == OUTSIDE:
            continue
        rel = change.get("file")
        if not isinstance(rel, str):
            continue
        if change.get("state") == "pending":
            loose.add(rel)
            loose.add(INDEX_FILE)
            continue
        if change.get("state") != "applied":
            continue
        loose.add(INDEX_FILE)
        was, left = change.get("before"), change.get("after")
        if change.get("operation") == "archive" and isinstance(left, dict):
            steps.setdefault(rel, []).append((_digest(was), None))
            moved = left.get("file")
            if isinstance(moved, str):
                steps.setdefault(moved, []).append((None, _digest(left)))
        else:
            steps.setdefault(rel, []).append((_digest(was), _digest(left)))
    recorded = []
    for rel in sorted(set(before) | set(after)):
        was, now = before.get(rel), after.get(rel)
        if rel in loose or (rel not in steps and was == now):
            continue
        current = _digest(was)
        explained = True
        for expected, left in steps.get(rel, []):
            explained = explained and expected == current
            current = left
        if explained and current == _digest(now):
            continue
        operation = "create" if was is None else "delete" if now is None else "rewrite"
        entry = {
            "file": rel,
            "id": _memory_id(folder, rel),
            "operation": operation,
            "rule": RULE,
            "reason": "changed by the agent's own tools, outside the restricted server "
            "(not checked by sage-mem; a rollback of this run puts it back)",
            "unexplained": True,
            "source": OUTSIDE,
            "state": "applied",
            "before": was,
            "after": now,
        }
        recorded.append(manifest.add_change(entry))
    if recorded:
        manifest.note({
            "rule": RULE,
            "source": OUTSIDE,
            "message": f"the agent changed {len(recorded)} file"
            f"{'s' if len(recorded) != 1 else ''} in the memory folder with its own tools, "
            f"outside the restricted server: {', '.join(e['file'] for e in recorded[:10])}"
            f"{' …' if len(recorded) > 10 else ''}; undo with `sage-mem rollback "
            f"{manifest.run_id}`",
        })
    return recorded


def _digest(state: Any) -> str | None:
    if not isinstance(state, dict):
        return None
    if "sha256" in state:
        return str(state["sha256"])
    return "unreadable: " + str(state.get("unreadable"))


def _memory_id(folder: MemoryFolder, rel: str) -> str | None:
    try:
        return folder.id_for(folder.root / rel)
    except SageMemError:
        return None


def launch_agent(
    store: MemoryStore, manifest: Manifest, command: Sequence[str], *, timeout: float
) -> dict[str, Any]:
    """Start the agent command with an MCP configuration for this run; wait at most `timeout` s.

    Placeholders in the command: `{mcp_config}` (path of the MCP configuration
    file), `{run_id}`, `{mode}`, `{prompt}` (DEFAULT_PROMPT, or REPORT_PROMPT
    in a report run), and `{memory_dir}`
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
        # An agent may start its MCP servers with a bare environment (Codex does): keep
        # the state folder, and the import path by which this Python found this sage-mem.
        "env": {
            "SAGE_MEM_STATE_DIR": str(store.folder.state_dir),
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
        },
    }
    config_path.write_text(json.dumps({"mcpServers": {"sage-mem-dream": server}}, indent=1) + "\n")
    values = {
        "mcp_config": str(config_path),
        "run_id": manifest.run_id,
        "mode": str(manifest.data.get("mode")),
        "prompt": (DEFAULT_PROMPT if manifest.data.get("mode") == "rewrite" else REPORT_PROMPT)
        + work_list(manifest.notes),  # the pairs the rules listed as likely twins or clashes
        "memory_dir": str(store.folder.root),
        "state_dir": str(store.folder.state_dir),
    }
    argv = [_fill(part, values) for part in command]
    env = {
        **os.environ,
        DREAM_RUN_ENV: manifest.run_id,
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
