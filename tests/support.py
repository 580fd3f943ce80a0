"""Helpers every test file may import (no fixtures here: those live in conftest.py).

pytest advises against importing conftest, so the paths and the helpers the
suites share live here; tests/ is on sys.path (rootdir conftest, prepend mode),
so `from support import ...` works from any test file.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "memory_template"


def missing_tool(why: str, *, module_level: bool = False) -> NoReturn:
    """A slow tier's tool (Chromium, a real client) is not installed: skip here, fail in CI.

    `.ci/run` installs them; under CI=true a test that cannot run is a failed
    run, not a quiet skip (a green CI must have driven the browser and the clients).
    """
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true: {why} (.ci/run installs it)", pytrace=False)
    pytest.skip(why, allow_module_level=module_level)


def write_memory(folder: Path, memory_id: str, text: str | bytes) -> Path:
    """Write a memory file by hand, as a user's editor would."""
    path = folder / (memory_id + ".md")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def wait_until(
    predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02
) -> object:
    """Poll `predicate` until it returns something truthy; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(
                f"condition not met within {timeout} s: {getattr(predicate, '__name__', predicate)}"
            )
        time.sleep(interval)


# The injected context (agents/context.py `render_memory`): each memory is a heading in
# sage-mem's own words, then its quoted text, the id first (`> id: …`).
HEADING = re.compile(
    r"memory \((?:(?:user|feedback|project|reference|unknown category), )?"
    r"(?:updated today|updated yesterday|updated \d+ days ago|update date unknown)"
    r"(?:; flagged: [^\n]*)?\):"
)


def injected_blocks(context: str) -> dict[str, tuple[str, list[str]]]:
    """id -> (its heading, its quoted lines after the id) for every memory in `context`."""
    lines = context.split("\n")
    blocks: dict[str, tuple[str, list[str]]] = {}
    for number, line in enumerate(lines[:-1]):
        if line.startswith("memory (") and lines[number + 1].startswith("> id: "):
            quoted = []
            for after in lines[number + 2:]:
                if not after.startswith(">"):
                    break
                quoted.append(after)
            blocks[lines[number + 1][len("> id: "):]] = (line, quoted)
    return blocks


def injected_ids(context: str) -> list[str]:
    """The ids of the memories in an injected context, in order."""
    return list(injected_blocks(context))


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """An address to bind an AF_UNIX socket at `path`, however long the folder's path (a
    test's folder under a pytest-xdist worker passes sun_path's 108 bytes): through the
    folder's descriptor, as `agents/hook_socket.py` reaches a long state folder."""
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)
