"""A hook input whose fields have the wrong type is one log line, never a traceback.

Claude Code sends strings where sage-mem reads strings; anything else (a
prompt that is an object, a session id that is a list) comes from a broken or
hostile caller. Both boundaries check the shape: the hook reading stdin, and a
server reading the socket, which any process of the user can write to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import unix_address

from sage_mem import MemoryStore
from sage_mem.agents import daemon, hook_socket, hooks

EVENTS = ["session-start", "user-prompt-submit", "stop", "pre-compact"]
WRONG: list[Any] = [{"a": 1}, ["cat"], 7]
FIELDS = ["prompt", "session_id", "cwd", "source", "transcript_path", "stop_hook_active"]


def payload(field: str, value: Any) -> dict[str, Any]:
    good = {"session_id": "s-shape", "prompt": "what is my cat called", "cwd": "/tmp",
            "source": "startup", "transcript_path": "/nonexistent/t.jsonl",
            "hook_event_name": "UserPromptSubmit"}
    return {**good, field: value}


def run_hook(folder: Path, event: str, data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "hook", event],
        input=json.dumps(data), capture_output=True, text=True, timeout=60,
    )


@pytest.fixture
def served(memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("SAGE_MEM_DAEMON")
    store = MemoryStore(memory_dir)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    yield memory_dir
    listener.stop()
    store.close()


def every_field(value: Any) -> dict[str, Any]:
    return {field: value for field in FIELDS}


@pytest.mark.parametrize("event", EVENTS)
def test_a_wrong_type_in_every_field_is_logged_not_a_crash_on_the_hooks_own_path(
    memory_dir: Path, event: str
) -> None:
    for value in WRONG:
        done = run_hook(memory_dir, event, every_field(value))
        assert done.returncode == 0
        assert "Traceback" not in done.stderr and "unexpected error" not in done.stderr
        assert len(done.stderr.splitlines()) <= 2


@pytest.mark.parametrize("event", EVENTS)
def test_a_server_answers_a_wrong_type_in_every_field_without_a_traceback(
    served: Path, event: str, capfd: pytest.CaptureFixture[str]
) -> None:
    done = run_hook(served, event, every_field({"a": 1}))
    assert done.returncode == 0
    assert "did not answer" not in done.stderr  # the server answered, it did not die
    assert "unexpected error" not in done.stderr
    assert "Traceback" not in capfd.readouterr().err  # the server's thread raised nothing


@pytest.mark.parametrize("field", FIELDS)
def test_serve_request_keeps_only_fields_of_the_right_type(memory_dir: Path, field: str) -> None:
    store = MemoryStore(memory_dir, watch=False)
    request = {"v": hook_socket.PROTOCOL, "event": "UserPromptSubmit",
               "root": str(memory_dir),
               "payload": payload(field, {"nested": ["x"]}), "cwd": None, "env": {}}
    answer, _ = hooks.serve_request(store, request)
    named = "no prompt" if field == "prompt" else "wrong type"
    assert any(named in line and (field in line or field == "prompt") for line in answer["log"])
    assert answer["answer"] is None or "additionalContext" in json.dumps(answer["answer"])


# A hook sends the server only a session start or a prompt (the others it answers itself):
# a request naming any other event, or an event that is no string, is one it cannot read.
@pytest.mark.parametrize("event", [
    pytest.param(["UserPromptSubmit"], id="a-list"),
    pytest.param({"UserPromptSubmit": 1}, id="an-object"),
    pytest.param("Stop", id="stop"),
    pytest.param("PreCompact", id="pre-compact"),
])
@pytest.mark.parametrize("prompt", [pytest.param(7, id="prompt-a-number"),
                                    pytest.param("what is my cat called", id="prompt-text")])
def test_a_server_refuses_a_request_for_an_event_it_does_not_answer(
    served: Path, event: Any, prompt: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    root = hooks._folder_root(served)
    request = {"v": hook_socket.PROTOCOL, "event": event, "root": root,
               "payload": {"session_id": "s-event", "prompt": prompt}, "cwd": None, "env": {}}
    answered = hook_socket.ask(root, request, 10.0, lambda line: None)
    assert answered is not None  # the server answered, its thread did not die
    answered.done()
    assert answered.answer is None
    assert answered.log == ["the sage-mem server got a request it cannot read"]
    assert "Traceback" not in capfd.readouterr().err


def test_a_server_reads_a_request_nested_too_deep_as_none_without_a_traceback(
    served: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import socket

    root = hooks._folder_root(served)
    (path,) = [place for state in hook_socket.state_dirs(root)
               if os.path.exists(place := os.path.join(state, hook_socket.socket_name(root)))]
    with socket.socket(socket.AF_UNIX) as sock, unix_address(Path(path)) as address:
        sock.settimeout(10)
        sock.connect(address)
        sock.sendall(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        assert sock.recv(100) == b""  # closed unanswered: the hook then answers on its own
    # The server still answers the next hook.
    done = run_hook(served, "user-prompt-submit", payload("session_id", "s-next"))
    assert "did not answer" not in done.stderr and "unexpected error" not in done.stderr
    assert "Traceback" not in capfd.readouterr().err
