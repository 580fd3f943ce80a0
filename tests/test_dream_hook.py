"""Autodream from the session-start hook: opt-in, gated in-process, started in the background.

In-process tests replace `subprocess.Popen` to see what would be started; one
test runs the hook as Claude Code does, with an autodream run that cannot
finish until the test lets it, to show the hook answers without waiting.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support import wait_until

from sage_mem.agents.hooks import run_hook

START = {"session_id": "s1", "cwd": "/home/dev/shop", "source": "startup"}


class FakePopen:
    """Stands in for subprocess.Popen: records each start, starts nothing."""

    started: list[tuple[list[str], dict[str, Any]]] = []

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        FakePopen.started.append((argv, kwargs))


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, Any]]]:
    FakePopen.started = []
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    return FakePopen.started


def settings(memory_dir: Path, **values: Any) -> None:
    folder = memory_dir.parent / ".memory.sage-mem" / "autodream"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(values), encoding="utf-8")


def last_run(memory_dir: Path, hours_ago: float) -> None:
    folder = memory_dir.parent / ".memory.sage-mem" / "autodream"
    folder.mkdir(parents=True, exist_ok=True)
    moment = datetime.now(UTC) - timedelta(hours=hours_ago)
    state = {"lastRunStarted": moment.strftime("%Y-%m-%dT%H:%M:%SZ")}
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")


def session_start(memory_dir: Path, event: str = "session-start") -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    assert run_hook(event, io.StringIO(json.dumps(START)), out, err, folder=memory_dir) == 0
    return out.getvalue(), err.getvalue()


def test_an_enabled_hook_starts_dream_auto_detached_and_still_answers(
    memory_dir: Path, started: list[Any]
) -> None:
    settings(memory_dir, autoFromHook=True)
    answer, _ = session_start(memory_dir)
    assert json.loads(answer)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    ((argv, kwargs),) = started
    assert argv == [sys.executable, "-m", "sage_mem", "--dir", str(memory_dir), "dream", "--auto"]
    assert kwargs == {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "close_fds": True,
        "start_new_session": True,
    }


@pytest.mark.parametrize(
    ("env", "config", "expected"),
    [
        pytest.param(None, None, 0, id="off-by-default"),
        pytest.param(None, {"autoFromHook": False}, 0, id="off-in-settings"),
        pytest.param("1", None, 1, id="on-by-env"),
        pytest.param("0", {"autoFromHook": True}, 0, id="env-0-wins-over-settings"),
        pytest.param(None, {"autoFromHook": "yes"}, 0, id="only-true-turns-it-on"),
    ],
)
def test_autodream_from_the_hook_is_opt_in(
    memory_dir: Path,
    started: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    env: str | None,
    config: dict[str, Any] | None,
    expected: int,
) -> None:
    if env is not None:
        monkeypatch.setenv("SAGE_MEM_AUTODREAM", env)
    if config is not None:
        settings(memory_dir, **config)
    session_start(memory_dir)
    assert len(started) == expected


@pytest.mark.parametrize(
    ("hours_ago", "min_hours", "expected"),
    [
        pytest.param(1, None, 0, id="closed-an-hour-after-the-last-run"),
        pytest.param(25, None, 1, id="open-after-a-day"),
        pytest.param(3, 2, 1, id="open-after-min-hours"),
    ],
)
def test_a_closed_time_gate_starts_no_process(
    memory_dir: Path,
    started: list[Any],
    hours_ago: float,
    min_hours: float | None,
    expected: int,
) -> None:
    settings(memory_dir, autoFromHook=True, **({"minHours": min_hours} if min_hours else {}))
    last_run(memory_dir, hours_ago)
    session_start(memory_dir)
    assert len(started) == expected


def test_only_session_start_starts_autodream(memory_dir: Path, started: list[Any]) -> None:
    settings(memory_dir, autoFromHook=True)
    out, err = io.StringIO(), io.StringIO()
    payload = io.StringIO(json.dumps({"session_id": "s1", "prompt": "what is my cat called"}))
    run_hook("user-prompt-submit", payload, out, err, folder=memory_dir)
    assert started == []


def test_a_failure_to_start_is_logged_and_the_hook_still_answers(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cannot_start(argv: list[str], **kwargs: Any) -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "Popen", cannot_start)
    settings(memory_dir, autoFromHook=True)
    answer, err = session_start(memory_dir)
    assert json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert "autodream not started: [Errno 11] Resource temporarily unavailable" in err


def test_unusable_settings_are_logged_and_nothing_starts(
    memory_dir: Path, started: list[Any]
) -> None:
    settings(memory_dir, autoFromHook=True, minHours="soon")
    answer, err = session_start(memory_dir)
    assert answer and started == []
    assert "autodream not started: minHours must be a number" in err


PROBE = """
import io, json, sys
from sage_mem.agents.hooks import run_hook
run_hook("session-start", io.StringIO(sys.argv[1]), io.StringIO(), sys.stderr)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("sage_mem.dream", "mcp")))))
"""


@pytest.mark.parametrize(
    ("enabled", "expected"),
    [
        pytest.param(False, [], id="off-imports-no-dream-code"),
        pytest.param(True, ["sage_mem.dream", "sage_mem.dream.gates"], id="on-imports-no-mcp"),
    ],
)
def test_a_hook_with_a_closed_gate_stays_light(
    memory_dir: Path, enabled: bool, expected: list[str]
) -> None:
    settings(memory_dir, autoFromHook=enabled)
    last_run(memory_dir, 1)
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(START)],
        capture_output=True,
        timeout=60,
        check=True,
    )
    imported = json.loads(probe.stdout)
    assert not [m for m in imported if m == "mcp" or m.startswith("mcp.")]
    assert [m for m in imported if m in ("sage_mem.dream", "sage_mem.dream.gates")] == expected


def test_the_hook_process_answers_without_waiting_for_the_run(
    memory_dir: Path, tmp_path: Path
) -> None:
    # The run's model pass blocks on a FIFO until the test writes to it: the run
    # cannot finish before the hook returns unless the hook does not wait for it.
    gate = tmp_path / "release"
    os.mkfifo(gate)
    blocker = f"open({str(gate)!r}).read()"
    settings(
        memory_dir,
        agentCommand=[sys.executable, "-c", blocker],
        agentTimeoutSeconds=60,
    )
    hook = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(memory_dir), "hook", "session-start"],
        input=json.dumps(START).encode(),
        capture_output=True,
        timeout=30,
        env={**os.environ, "SAGE_MEM_AUTODREAM": "1"},
    )
    assert hook.returncode == 0 and hook.stderr == b""
    assert json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]

    runs = memory_dir.parent / ".memory.sage-mem" / "autodream" / "runs"
    (marker,) = wait_until(lambda: list(runs.glob("*/running")), timeout=30)
    manifest = marker.parent / "manifest.json"
    # The mark is made first, the manifest a moment after (a run killed between the two
    # is still found by its mark): wait for it.
    wait_until(manifest.exists, timeout=30)
    assert json.loads(manifest.read_text(encoding="utf-8"))["status"] == "running"

    def release() -> bool:
        try:
            fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # no reader yet: the agent has not started
            if exc.errno == errno.ENXIO:
                return False
            raise
        os.close(fd)
        return True

    wait_until(release, timeout=30)
    wait_until(lambda: not marker.exists(), timeout=30)
    data = json.loads(manifest.read_text(encoding="utf-8"))
    assert (data["status"], data["auto"], data["model"]["status"]) == ("finished", True, "finished")


@pytest.mark.parametrize("mode", ["report", "rewrite"])
def test_the_settings_choose_the_mode_of_a_run_the_hook_starts(
    memory_dir: Path, mode: str
) -> None:
    settings(memory_dir, autoFromHook=True, **({"autoMode": mode} if mode != "report" else {}))
    hook = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(memory_dir), "hook", "session-start"],
        input=json.dumps(START).encode(),
        capture_output=True,
        timeout=30,
    )
    assert hook.returncode == 0 and hook.stderr == b""
    runs = memory_dir.parent / ".memory.sage-mem" / "autodream" / "runs"

    def finished() -> dict[str, Any] | None:
        for path in runs.glob("*/manifest.json"):
            try:
                data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue  # being replaced at this moment
            if data.get("status") == "finished":
                return data
        return None

    data = wait_until(finished, timeout=60)
    assert (data["mode"], data["auto"]) == (mode, True)
    assert ("rollbackPoint" in data) == (mode == "rewrite")
