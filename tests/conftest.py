"""Shared fixtures: every test gets its own memory folder; nothing touches the real home."""

from __future__ import annotations

import compileall
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import TEMPLATE

import sage_mem


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package to bytecode once, before any test starts a process of it.

    Hundreds of tests run the CLI, hooks and servers as processes. An editable install
    (the README's `pip install -e`) is not compiled, and where PYTHONDONTWRITEBYTECODE is
    set no process writes its bytecode either: each one compiled every module it
    imported again, about half of a CLI process's CPU (0.29 s against 0.15 s). A real
    install is compiled by pip; this makes the test processes start as one does.
    `py_compile` writes each file atomically, and an up-to-date one is left alone.
    """
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        compileall.compile_dir(Path(sage_mem.__file__).parent, quiet=1)
    # The test modules' rewritten asserts are kept too, for the next run (.ci/run's slow tiers).
    sys.dont_write_bytecode = False


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point SAGE_MEM_DIR and HOME at the test's own folders."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAGE_MEM_DIR", str(tmp_path / "memory"))
    monkeypatch.delenv("SAGE_MEM_STATE_DIR", raising=False)
    # The folders config (sage_mem/folders) is read from HOME's ~/.config unless these say.
    monkeypatch.delenv("SAGE_MEM_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("SAGE_MEM_AUTODREAM", raising=False)
    # A hook starts no background daemon or build (tests/test_hook_daemon.py turns it on).
    monkeypatch.setenv("SAGE_MEM_DAEMON", "0")
    # No semantic signal (no model loaded by serve, ui or a daemon) unless a test turns it on
    # (tests/test_semantic.py): the rest of the suite checks lexical search.
    monkeypatch.setenv("SAGE_MEM_SEMANTIC", "0")
    return tmp_path


@pytest.fixture(autouse=True)
def stop_watchers() -> Iterator[None]:
    """Stop the watchers of the stores a test left open (a store watches by default)."""
    yield
    watch = sys.modules.get("sage_mem.disk.watch")
    for watcher in list(watch._running) if watch is not None else ():
        watcher.stop()


@pytest.fixture(autouse=True, scope="session")
def stop_daemons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """End the `sage-mem daemon`s that hooks (a real client's) started in this run's folders.

    They would end on their own once idle (20 minutes) or once pytest removes
    their folder; a test run should not leave them behind meanwhile.
    """
    yield
    base = str(tmp_path_factory.getbasetemp())
    proc = Path("/proc")
    for entry in proc.iterdir() if proc.is_dir() else ():
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "sage_mem" in argv and "daemon" in argv and any(a.startswith(base) for a in argv):
            try:
                os.kill(int(entry.name), signal.SIGTERM)
            except (OSError, ValueError):
                continue


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



@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's clock in UTC: a `…Z` time is then that UTC day (the dream corpora's dates)."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
