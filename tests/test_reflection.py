"""Reflection before memory is lost (issue 17, item 3), through `sage-mem hook stop|pre-compact`.

Each test writes a Claude Code transcript (JSON lines, as the client keeps
them) and runs the hook command as Claude Code does: a process, the hook JSON
on stdin, the answer on stdout, exit 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.agents.reflection import DEFAULT_STEPS


def prompt(text: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}}


def tools(*names: str, sidechain: bool = False) -> list[dict]:
    """One assistant message per tool call, each followed by its result, as the client logs them."""
    out = []
    for n, name in enumerate(names):
        out.append({"type": "assistant", "isSidechain": sidechain, "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "working"},
                        {"type": "tool_use", "id": f"t{n}", "name": name, "input": {}}]}})
        out.append({"type": "user", "isSidechain": sidechain, "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                         "content": "ok"}]}})
    return out


def reply(text: str = "Done.") -> dict:
    return {"type": "assistant", "message": {"role": "assistant",
                                             "content": [{"type": "text", "text": text}]}}


WRITE = "mcp__sage-mem__memory_write"
SEARCH = "mcp__sage-mem__memory_search"


def transcript(tmp_path: Path, *entries: dict | list[dict]) -> Path:
    path = tmp_path / "session.jsonl"
    lines = []
    for entry in entries:
        lines.extend(entry if isinstance(entry, list) else [entry])
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def hook(folder: Path, event: str, payload: dict, **env: str) -> tuple[dict | None, str]:
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "hook", event],
        input=json.dumps(payload), capture_output=True, text=True, timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


def stop(folder: Path, path: Path, *, active: bool = False, **env: str) -> dict | None:
    payload = {"session_id": "s1", "transcript_path": str(path), "hook_event_name": "Stop",
               "stop_hook_active": active, "cwd": str(folder)}
    return hook(folder, "stop", payload, **env)[0]


def test_a_long_turn_is_asked_once_what_is_worth_remembering(
    memory_dir: Path, tmp_path: Path
) -> None:
    path = transcript(tmp_path, prompt("把测试跑起来并修好失败的那个"), tools(*["Bash"] * 8),
                      reply())
    answer = stop(memory_dir, path)
    assert answer is not None and answer["decision"] == "block"
    assert "8 tool steps" in answer["reason"] and "memory_write" in answer["reason"]
    # The agent answered the question and stops again: the same turn is not asked twice.
    assert stop(memory_dir, path, active=True) is None


@pytest.mark.parametrize("entries", [
    pytest.param([prompt("fix it"), tools(*["Bash"] * (DEFAULT_STEPS - 1)), reply()],
                 id="a-short-turn"),
    pytest.param([prompt("fix it"), tools(*["Bash"] * 9, WRITE), reply()],
                 id="the-last-tool-saved"),
    pytest.param([prompt("fix it"), tools(*["Bash"] * 9, SEARCH), reply()],
                 id="the-last-tool-was-a-memory-tool"),
    pytest.param([prompt("fix it"), tools(*["Bash"] * 9, WRITE, "Bash", "Edit"), reply()],
                 id="few-steps-since-the-save"),
    pytest.param([prompt("fix it"), tools(*["Bash"] * 9),
                  prompt("[Request interrupted by user for tool use]")],
                 id="a-cancelled-turn"),
    pytest.param([prompt("long one"), tools(*["Bash"] * 12), reply(), prompt("thanks"),
                  tools("Read", "Read"), reply()],
                 id="the-long-turn-was-the-one-before"),
    pytest.param([prompt("delegate"), tools("Task"), tools(*["Bash"] * 20, sidechain=True),
                  reply()],
                 id="a-subagent's-steps-are-its-own"),
])
def test_no_question_when_it_would_nag(
    memory_dir: Path, tmp_path: Path, entries: list
) -> None:
    assert stop(memory_dir, transcript(tmp_path, *entries)) is None


def test_the_threshold_is_configurable_and_zero_turns_it_off(
    memory_dir: Path, tmp_path: Path
) -> None:
    path = transcript(tmp_path, prompt("go"), tools("Bash", "Bash", "Edit"), reply())
    assert stop(memory_dir, path) is None
    assert stop(memory_dir, path, SAGE_MEM_REFLECT_STEPS="3")["decision"] == "block"
    long = transcript(tmp_path, prompt("go"), tools(*["Bash"] * 30), reply())
    assert stop(memory_dir, long, SAGE_MEM_REFLECT_STEPS="0") is None
    answer, err = hook(memory_dir, "stop", {"session_id": "s", "transcript_path": str(long)},
                       SAGE_MEM_REFLECT_STEPS="many")
    assert answer is not None and "SAGE_MEM_REFLECT_STEPS" in err  # default kept, and said


def test_a_day_of_turns_is_asked_at_most_once_per_long_turn(
    memory_dir: Path, tmp_path: Path
) -> None:
    """Measured, not promised: 30 turns of 0 to 14 steps, a stop after each, as Claude Code runs."""
    entries: list = []
    asked = long_turns = 0
    for turn in range(30):
        steps = (turn * 5) % 15
        entries += [prompt(f"task {turn}"), tools(*["Bash"] * steps), reply()]
        long_turns += steps >= DEFAULT_STEPS
        path = transcript(tmp_path, *entries)
        if stop(memory_dir, path) is not None:
            asked += 1
            assert stop(memory_dir, path, active=True) is None
    assert asked == long_turns and asked <= 30 // 2


def test_compaction_after_unsaved_steps_asks_when_the_session_resumes(
    memory_dir: Path, tmp_path: Path
) -> None:
    path = transcript(tmp_path, prompt("refactor"), tools(*["Edit"] * 9))
    payload = {"session_id": "s2", "transcript_path": str(path), "trigger": "auto"}
    answer, _ = hook(memory_dir, "pre-compact", payload)
    assert answer is None  # a PreCompact answer would reach only the person
    start = {"session_id": "s2", "source": "compact", "transcript_path": str(path),
             "cwd": str(memory_dir)}
    resumed, _ = hook(memory_dir, "session-start", start)
    context = resumed["hookSpecificOutput"]["additionalContext"]
    assert "just compacted after 9 tool steps" in context
    again, _ = hook(memory_dir, "session-start", start)
    assert "just compacted" not in again["hookSpecificOutput"]["additionalContext"]


def test_compaction_right_after_a_save_asks_nothing(memory_dir: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path, prompt("refactor"), tools(*["Edit"] * 9, WRITE))
    hook(memory_dir, "pre-compact", {"session_id": "s3", "transcript_path": str(path)})
    resumed, _ = hook(memory_dir, "session-start", {"session_id": "s3", "source": "compact"})
    assert "just compacted" not in resumed["hookSpecificOutput"]["additionalContext"]


def test_a_missing_or_broken_transcript_asks_nothing(memory_dir: Path, tmp_path: Path) -> None:
    assert stop(memory_dir, tmp_path / "missing.jsonl") is None
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\x00not json\n{\"type\": \"user\"\n")
    assert stop(memory_dir, broken) is None
    answer, _ = hook(memory_dir, "stop", {"stop_hook_active": "yes"})
    assert answer is None


def test_a_transcript_line_nested_too_deep_is_passed_over_and_the_rest_still_counts(
    memory_dir: Path, tmp_path: Path
) -> None:
    """A line of the transcript `[[[…]]]` 100,000 deep (a tool's output pasted into it) is no
    message: it is passed over as a line that is not JSON is, not an "unexpected error"."""
    path = transcript(tmp_path, prompt("fix it"), tools(*["Bash"] * 12), reply())
    deep = b'{"type": "user", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n" + deep, 1))
    answer, log = hook(memory_dir, "stop", {"session_id": "s4", "transcript_path": str(path),
                                            "hook_event_name": "Stop", "cwd": str(memory_dir)})
    assert "unexpected" not in log, log
    assert answer is not None and "12 tool steps" in answer["reason"]
    payload = {"session_id": "s4", "transcript_path": str(path)}
    assert hook(memory_dir, "pre-compact", payload) == (None, "")
