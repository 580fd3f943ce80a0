"""Reflection before memory is lost: after a long run of tool steps, ask once what is worth keeping.

Two Claude Code hooks (`sage-mem hook stop`, `sage-mem hook pre-compact`):

- **Stop** (the agent is about to end its turn): when the turn took at least
  `SAGE_MEM_REFLECT_STEPS` tool steps (default 7) since the last memory save,
  the hook answers `{"decision": "block", "reason": QUESTION}`, which Claude
  Code hands the agent as one more instruction: save what is worth keeping
  with `memory_write`, or just stop. Never twice in a turn (`stop_hook_active`
  is true on the stop that follows the question, and then the hook says
  nothing); never when the last tool was a sage-mem memory tool (it just
  saved, searched or read); never for a turn the user cancelled (Claude Code
  runs no Stop hook then, and the transcript's "[Request interrupted by
  user…]" mark is checked as well); never for a short turn.
- **PreCompact** (the context is about to be summarised): when as many steps
  went by without a save, a mark is left in the state folder
  (`sessions/<hash of the session id>.reflect.json`); the SessionStart hook that
  Claude Code runs right after the compaction (`source: compact`) hands the
  agent the same question (`after_compaction`), once, and removes the mark.
  A PreCompact hook cannot give the agent text itself: its output reaches only
  the person (Claude Code's hooks reference), so the question waits for the
  first moment the agent can be told.

The tool steps are counted from the session's transcript (`transcript_path`,
Claude Code's JSON lines): the `tool_use` blocks of the main agent (not of
subagents) since the person's last prompt, or since the last `memory_write`
when that came later. Only the transcript's last `TAIL_BYTES` are read: a turn
longer than that counts from where the window starts, which is still long.

`SAGE_MEM_REFLECT_STEPS=0` turns both off. Everything here is the hook's: no
store, no index, no memory read (a Stop hook runs at the end of every turn).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STEPS_ENV = "SAGE_MEM_REFLECT_STEPS"
DEFAULT_STEPS = 7
MAX_STEPS = 1_000
TAIL_BYTES = 2 * 1024 * 1024

# The server's tools as Claude Code names them: mcp__<server>__<tool>.
_MEMORY_TOOL = re.compile(r"^mcp__[^_].*__memory_[a-z_]+$")
_SAVE_TOOL = re.compile(r"^mcp__[^_].*__memory_write$")
_INTERRUPTED = "[Request interrupted by user"

QUESTION = (
    "Before you end this turn: it took {steps} tool steps since anything was saved to memory. "
    "Is something from them worth remembering in a later session (a decision and its reason, "
    "a preference or correction the user gave, a fact about this project that the code does "
    "not say)? If so, save each with memory_write (search first to update rather than "
    "duplicate); if not, end the turn as you were going to. Do not ask the user about this."
)
AFTER_COMPACTION = (
    "The conversation was just compacted after {steps} tool steps that no memory save followed. "
    "If something from before the compaction is worth remembering in a later session, save it "
    "now with memory_write; if not, carry on. Do not ask the user about this."
)


def steps_setting(raw: str | None) -> tuple[int, str | None]:
    """The step threshold from SAGE_MEM_REFLECT_STEPS (0: off), and a warning when unusable."""
    if raw is None or not raw.strip():
        return DEFAULT_STEPS, None
    text = raw.strip()
    if text.isascii() and text.isdigit() and len(text) <= 4 and int(text) <= MAX_STEPS:
        return int(text), None
    return DEFAULT_STEPS, (f"{STEPS_ENV}={raw[:40]!r} is not a whole number from 0 to "
                           f"{MAX_STEPS}; using {DEFAULT_STEPS}")


@dataclass(frozen=True)
class Steps:
    """What the end of a transcript says of the current turn."""

    since_save: int = 0  # tool steps since the turn began or the last memory_write
    last_tool: str | None = None
    interrupted: bool = False

    @property
    def last_was_memory(self) -> bool:
        return self.last_tool is not None and bool(_MEMORY_TOOL.match(self.last_tool))


def read_steps(transcript: Path | str, *, whole_session: bool = False) -> Steps:
    """The tool steps of the current turn (or, `whole_session`, since the last save at all)."""
    try:
        # The path comes from the hook's input: only a regular file is read (a FIFO would wait
        # for a writer, /dev/zero never ends), and never more than its tail.
        fd = os.open(transcript, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return Steps()
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            start = max(0, size - TAIL_BYTES)
            handle.seek(start)
            data = handle.read(TAIL_BYTES)
    except (OSError, ValueError):  # ValueError: a path with a NUL in it
        return Steps()
    if start:
        data = data[data.find(b"\n") + 1:]
    since, last, interrupted = 0, None, False
    for line in data.split(b"\n"):
        if b'"user"' not in line and b'"tool_use"' not in line:
            continue  # most lines: cheap to pass over
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") is True:
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") == "user" and entry.get("isMeta") is not True:
            text = _prompt_text(content)
            if text is None:
                continue  # tool results: the turn goes on
            if text.lstrip().startswith(_INTERRUPTED):
                interrupted = True
                continue
            interrupted = False
            last = None
            if not whole_session:
                since = 0
        elif entry.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    name = block.get("name")
                    last = name if isinstance(name, str) else ""
                    since = 0 if _SAVE_TOOL.match(last) else since + 1
    return Steps(since, last, interrupted)


def _prompt_text(content: Any) -> str | None:
    """The text of a person's message; None for a message of tool results only."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [block.get("text") for block in content
             if isinstance(block, dict) and block.get("type") == "text"]
    if not texts:
        return None
    return "\n".join(text for text in texts if isinstance(text, str))


def answer(hook_name: str, payload: dict[str, Any], sessions_dir: Callable[[], Path],
           log: Callable[[str], None]) -> dict[str, Any] | None:
    """The answer of the Stop or PreCompact hook (None: print nothing)."""
    threshold, warning = steps_setting(os.environ.get(STEPS_ENV))
    if warning:
        log(warning)
    transcript = payload.get("transcript_path")
    if threshold == 0 or not isinstance(transcript, str) or not transcript:
        return None
    if hook_name == "Stop":
        if payload.get("stop_hook_active") is True:
            return None  # the question was asked in this turn already
        steps = read_steps(transcript)
        if steps.interrupted or steps.last_was_memory or steps.since_save < threshold:
            return None
        return {"decision": "block", "reason": QUESTION.format(steps=steps.since_save)}
    if hook_name == "PreCompact":
        steps = read_steps(transcript, whole_session=True)
        if steps.since_save >= threshold and not steps.last_was_memory:
            mark = _mark(sessions_dir(), payload)
            if mark is not None:
                try:
                    mark.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                    mark.write_text(str(steps.since_save), encoding="utf-8")
                except OSError as exc:
                    log(f"cannot leave the reflection mark in {mark.parent}: "
                        f"{exc.strerror or exc}")
    return None


def after_compaction(text: str, payload: dict[str, Any], sessions_dir: Path) -> str:
    """`text` (the SessionStart context) with the question a PreCompact hook left, if any."""
    if payload.get("source") != "compact":
        return text
    mark = _mark(sessions_dir, payload)
    if mark is None:
        return text
    try:
        steps = mark.read_text(encoding="utf-8").strip()
        mark.unlink()
    except OSError:
        return text
    question = AFTER_COMPACTION.format(steps=steps if steps.isdigit() else "many")
    return f"{text}\n\n{question}" if text else question


def _mark(sessions_dir: Path, payload: dict[str, Any]) -> Path | None:
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return None
    import hashlib  # only here: every prompt's hook imports this module

    name = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return sessions_dir / f"{name}.reflect.json"  # pruned with the session logs


__all__ = ["QUESTION", "Steps", "after_compaction", "answer", "read_steps",
           "steps_setting"]
