"""Whether a daemon runs for a folder, and starting one: the part of `daemon` a hook reaches.

After a hook answered on its own path it starts `sage-mem daemon` in the
background (`start_detached`) unless one holds the folder's build lock
(`take_build_lock`, which the daemon takes first). Imports neither `hooks`
nor `daemon`, which both import it: the daemon answers with `hooks`, and the
hooks start the daemon through this module alone.

SAGE_MEM_DAEMON (`daemon_mode`) says what a hook may start; see `daemon`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..disk.folder import MemoryFolder
from ..disk.safe_io import make_private_dirs

DAEMON_ENV = "SAGE_MEM_DAEMON"
# How long a command waits for the index another process is building before it builds
# one itself (`wait_for_running_build`): a build of 100,000 memories on a busy machine.
BUILD_WAIT_S = 300.0


def daemon_mode() -> str:
    """What a hook may start: "daemon", "build" or "none" (SAGE_MEM_DAEMON, see the docstring)."""
    raw = os.environ.get(DAEMON_ENV, "").strip().lower()
    if raw in ("0", "off", "no", "false"):
        return "none"
    if raw == "build":
        return "build"
    return "daemon"


def build_lock_path(folder: MemoryFolder) -> Path:
    from ..search.cache import cache_path

    path = cache_path(folder)
    return path.with_name(path.stem + ".build.lock")


def take_build_lock(folder: MemoryFolder) -> int | None:
    """The build lock's descriptor (held until closed), or None when another process has it.

    Without flock (Windows, where no hook starts a daemon) the descriptor locks nothing.
    """
    path = build_lock_path(folder)
    make_private_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        import fcntl
    except ImportError:
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def build_running(folder: MemoryFolder) -> bool:
    """True while a daemon (building or serving) holds the folder's build lock."""
    try:
        fd = take_build_lock(folder)
    except OSError:
        return False
    if fd is None:
        return True
    os.close(fd)
    return False


def wait_for_running_build(folder: MemoryFolder, *, say: Callable[[str], None],
                           limit: float = BUILD_WAIT_S) -> None:
    """Before a command opens `folder`: when its index cache does not exist yet and another
    process holds the build lock (the build a join started, a hook's daemon building), wait
    for that process's cache rather than build a second index beside it.

    The two builds would share the cores (the first search after a join took a cold
    start's CPU and twice its wall time); waiting, the command loads the cache once it is
    written. It stops waiting when the cache appears, when the lock is let go (the build
    ended, or died: the lock is the kernel's), or after `limit` seconds; then it opens the
    folder as ever (from the cache, or building it). `say` is told once that it waits.
    """
    from ..search.cache import cache_path

    if not folder.root.is_dir():
        return  # the command says what is wrong with the folder
    path = cache_path(folder)
    if path.exists() or not build_running(folder):
        return
    say(f"waiting for the search index another sage-mem process is building for {folder.root} "
        f"(at most {limit / 60:.0f} minutes)")
    deadline = time.monotonic() + limit
    probed = time.monotonic()
    while time.monotonic() < deadline and not path.exists():
        time.sleep(0.05)
        # The lock is probed once a second (a probe holds it for an instant).
        if time.monotonic() - probed >= 1.0:
            probed = time.monotonic()
            if not build_running(folder):
                return


def what_builds() -> str:
    """How the index a hook lacked comes to be, for its log line."""
    if os.name == "posix" and daemon_mode() != "none":
        return "the index is brought up to date in the background"
    return (f"{DAEMON_ENV} starts no background build: `sage-mem daemon --build-only` "
            "(or any sage-mem command) brings the index up to date")


def start_detached(folder: MemoryFolder, *, build_needed: bool, log: Callable[[str], None]) -> None:
    """After a hook answered on its own path: start a daemon (or a build) unless one runs."""
    if os.name != "posix":
        return
    mode = daemon_mode()
    if mode == "none":
        return
    if mode == "build" and not build_needed:
        return
    try:
        if build_running(folder):
            return
        argv = [sys.executable, "-m", "sage_mem", "--dir", str(folder.root), "daemon"]
        if mode == "build":
            argv.append("--build-only")
        spawn_detached(argv)
    except OSError as exc:
        log(f"no background build started: {exc.strerror or exc}")


def spawn_detached(argv: list[str]) -> int:
    """Start `argv` in a session of its own with no standard streams; returns its pid.

    Claude Code waits for the hook's stdout to close, so nothing of the hook's
    may be inherited; nothing waits for the process either (the hook ends at
    once, and the process outlives it).
    """
    devnull = os.devnull
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0),
    ]
    return os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)
