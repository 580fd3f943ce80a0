"""Shared fixtures: every test gets its own memory folder; nothing touches the real home."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "memory_template"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point SAGE_MEM_DIR and HOME at the test's own folders."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAGE_MEM_DIR", str(tmp_path / "memory"))
    monkeypatch.delenv("SAGE_MEM_STATE_DIR", raising=False)
    monkeypatch.delenv("SAGE_MEM_AUTODREAM", raising=False)
    return tmp_path


@pytest.fixture(autouse=True)
def stop_watchers() -> Iterator[None]:
    """Stop the watchers of the stores a test left open (a store watches by default)."""
    yield
    watch = sys.modules.get("sage_mem.watch")
    for watcher in list(watch._running) if watch is not None else ():
        watcher.stop()


@pytest.fixture
def memory_dir(tmp_path: Path) -> Path:
    """A real memory folder copied from memory_template/."""
    target = tmp_path / "memory"
    shutil.copytree(TEMPLATE, target)
    return target


@pytest.fixture
def empty_dir(tmp_path: Path) -> Path:
    """An empty memory folder."""
    target = tmp_path / "memory"
    target.mkdir()
    return target


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
