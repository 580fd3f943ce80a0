"""Claude Code hook commands: `sage-mem hook session-start|user-prompt-submit`.

Each reads the hook's JSON on stdin and answers on stdout with

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "…"}}

or prints nothing when there is nothing to inject (Claude Code takes an empty
stdout on exit 0 as "no context"; an empty header would cost tokens for
nothing). Whatever goes wrong — input that is not JSON, a missing memory
folder, a broken memory file, a state folder that cannot be written — the hook
injects what it could, logs one line per problem to stderr and exits 0: it must
never block the user's prompt.

A new process runs for every prompt, so this path builds the store without a
watcher and must never import `mcp` or `watchdog`, nor argparse or logging
(`tests/test_hook_imports.py` checks what the process imports).

Autodream from the hook (opt-in): when enabled, `session-start` starts
`sage-mem dream --auto` as a detached background process — its own session,
no stdin/stdout/stderr — and answers without waiting for it. It is enabled by
`"autoFromHook": true` in `<state>/autodream/config.json`, or by the
environment variable SAGE_MEM_AUTODREAM=1 (SAGE_MEM_AUTODREAM=0 turns it off
whatever the file says). The time gate is checked here first, so a closed gate
costs one small file read and no process; `dream --auto` checks every gate
again (sessions, the lock) before it changes anything.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from . import inject
from .errors import SageMemError
from .store import MemoryStore

EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}
AUTODREAM_ENV = "SAGE_MEM_AUTODREAM"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
RELEASING_SOURCES = frozenset({"compact", "clear"})
_LOG_PREFIX = "sage-mem hook"


class _Log:
    """One line on stderr per problem; a broken stderr is ignored, never raised."""

    def __init__(self, stream: TextIO, event: str) -> None:
        self.stream = stream
        self.event = event

    def __call__(self, message: str) -> None:
        line = " ".join(f"{_LOG_PREFIX} {self.event}: {message}".split())
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError, UnicodeError):
            pass


def run_hook(
    event: str,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    folder: Path | None = None,
) -> int:
    """Run one hook command; always returns 0 (the exit status Claude Code reads as "go on")."""
    log = _Log(stderr, event)
    try:
        answer = _answer(event, stdin, folder, log)
    except Exception as exc:  # noqa: BLE001 - the hook must never block the prompt
        log(f"unexpected error, nothing injected: {type(exc).__name__}: {exc}")
        answer = None
    if answer is not None:
        try:
            stdout.write(json.dumps(answer) + "\n")
            stdout.flush()
        except (OSError, ValueError) as exc:
            log(f"cannot write the answer: {exc}")
    return 0


def _answer(event: str, stdin: TextIO, folder: Path | None, log: _Log) -> dict[str, Any] | None:
    hook_name = EVENTS.get(event)
    payload = _read_payload(stdin, log)
    if hook_name is None:
        log(f"unknown hook event {event[:40]!r} (expected {' or '.join(EVENTS)})")
        return None
    prompt: str | None = None
    if hook_name == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            if payload:
                log("no prompt in the hook input; nothing injected")
            return None
        if not prompt.strip():
            return None

    try:
        store = MemoryStore(folder, watch=False)
    except (SageMemError, OSError) as exc:
        log(f"nothing injected: {exc}")
        return None
    _report_problems(store, log)

    now = datetime.now(UTC)
    sessions_dir = store.folder.state_path("sessions")
    try:
        inject.prune_sessions(sessions_dir, now)
    except OSError as exc:
        log(f"cannot prune old session files in {sessions_dir}: {exc.strerror or exc}")
    session_id = payload.get("session_id")
    if not isinstance(session_id, str):
        session_id = None
    session = inject.SessionLog.load(sessions_dir, session_id)
    cwd = payload.get("cwd")
    project = inject.project_for(cwd if isinstance(cwd, str) and cwd else _process_cwd())

    changed = False
    if prompt is None:
        if payload.get("source") in RELEASING_SOURCES and session.injected:
            session.release()
            changed = True
        text, chosen = inject.session_start_context(
            store, project=project, session=session, now=now
        )
        _maybe_start_autodream(store, now, log)
    else:
        limit, warning = inject.prompt_limit(os.environ.get("SAGE_MEM_HOOK_LIMIT"))
        if warning:
            log(warning)
        text, chosen = inject.prompt_context(
            store, prompt, project=project, session=session, limit=limit, now=now
        )

    if chosen:
        session.add(chosen)
        changed = True
        try:
            store.note_used(memory.id for memory in chosen)
        except SageMemError as exc:  # a stats lock held too long must not cost the context
            log(f"retrievals not counted: {exc}")
    if changed:
        try:
            session.save()
        except OSError as exc:
            log(f"cannot record what was injected ({exc.strerror or exc}); it may repeat")
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": hook_name, "additionalContext": text}}


def autodream_enabled(store: MemoryStore) -> bool:
    """SAGE_MEM_AUTODREAM when set (1/0), else the settings file's `autoFromHook`.

    Reads the file with json here rather than through `DreamConfig`: importing
    the dream package costs every session start about 50 ms, and most users
    never turn this on.
    """
    flag = os.environ.get(AUTODREAM_ENV)
    if flag is not None and flag.strip().lower() in _TRUE | _FALSE:
        return flag.strip().lower() in _TRUE
    try:
        path = store.folder.state_path("autodream", "config.json")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("autoFromHook") is True


def _maybe_start_autodream(store: MemoryStore, now: datetime, log: _Log) -> None:
    """Start `dream --auto` in the background when enabled and the time gate is open."""
    try:
        if not autodream_enabled(store):
            return
        from .dream.config import DreamConfig
        from .dream.gates import load_state, time_gate
        from .dream.paths import DreamPaths

        paths = DreamPaths(store.folder)
        gate = time_gate(load_state(paths), DreamConfig.load(paths.config_file), now)
        if not gate.open:
            return
        _spawn_detached(
            [sys.executable, "-m", "sage_mem", "--dir", str(store.folder.root), "dream", "--auto"]
        )
    except (SageMemError, OSError) as exc:
        log(f"autodream not started: {exc}")


def _spawn_detached(argv: list[str]) -> None:
    import subprocess

    # Its own session and no inherited pipes: Claude Code waits for the hook's
    # stdout to close, and must not wait for the run.
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
    )


def _read_payload(stdin: TextIO, log: _Log) -> dict[str, Any]:
    """The hook input as a dict; {} (after one log line) when it is missing or not an object."""
    try:
        if stdin.isatty():
            log("expects the hook's JSON on stdin (run it from Claude Code's hook settings)")
            return {}
        buffer = getattr(stdin, "buffer", None)
        # Bytes, decoded here: the locale's encoding may not be UTF-8, and a prompt in
        # Chinese must not turn into a decode error.
        raw = buffer.read().decode("utf-8", "replace") if buffer is not None else stdin.read()
    except (OSError, ValueError) as exc:
        log(f"cannot read the hook input: {exc}")
        return {}
    if not raw.strip():
        log("empty hook input")
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        log(f"hook input is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
        return {}
    if not isinstance(data, dict):
        log(f"hook input is a JSON {type(data).__name__}, not an object")
        return {}
    return data


def _report_problems(store: MemoryStore, log: _Log) -> None:
    problems = store.problems()
    if not problems:
        return
    first = problems[0].message
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    log(f"skipped a memory file that cannot be read: {first}{more}; see `sage-mem audit`")


def _process_cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None
