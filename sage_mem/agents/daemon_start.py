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
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..disk.folder import MemoryFolder
from ..disk.safe_io import make_private_dirs

DAEMON_ENV = "SAGE_MEM_DAEMON"
# The build lock a starter took and handed to the daemon it started (`start_holding_lock`):
# its descriptor number in the daemon, which takes it up (`handed_build_lock`).
HANDED_LOCK_ENV = "SAGE_MEM_BUILD_LOCK_FD"
HANDED_LOCK_FD = 3
# What the build lock's holder says in its file: building the index, or ready (serving).
BUILDING = b"building\n"
READY = b"ready\n"
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
    """Before a command opens `folder`: while another process builds its index (the build a
    join started, a hook's daemon opening the folder), wait for that build rather than
    build a second index beside it.

    The two builds would share the cores (the first search after a join took a cold
    start's CPU and twice its wall time); waiting, the command loads the cache the build
    wrote. A daemon says in its lock file that it is building, then that it is ready (its
    index loaded or built, the cache written): a serving daemon that is ready is not
    waited for. The wait ends when the build says it is ready, when the lock is let go
    (the build ended, or died: the lock is the kernel's), or after `limit` seconds; then
    the folder is opened as ever. `say` is told once that it waits.
    """
    if not folder.root.is_dir():
        return  # the command says what is wrong with the folder
    path = build_lock_path(folder)
    if not _says_building(path) or not build_running(folder):
        return
    say(f"waiting for the search index another sage-mem process is building for {folder.root} "
        f"(at most {limit / 60:.0f} minutes)")
    deadline = time.monotonic() + limit
    probed = time.monotonic()
    while time.monotonic() < deadline and _says_building(path):
        time.sleep(0.05)
        # The lock is probed once a second (a probe holds it for an instant).
        if time.monotonic() - probed >= 1.0:
            probed = time.monotonic()
            if not build_running(folder):
                return


def say_in_lock(lock: int, state: bytes) -> None:
    """Write what the holder of a build lock is doing into its file (BUILDING, READY)."""
    try:
        os.ftruncate(lock, 0)
        os.pwrite(lock, state, 0)
    except OSError:
        pass  # then no command waits for this build: it builds as before


def _says_building(path: Path) -> bool:
    """Whether the lock file says `building` (read without following a link or waiting on
    anything that is no regular file: a command never blocks on the state folder)."""
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(BUILDING)) == BUILDING
    except OSError:
        return False
    finally:
        os.close(fd)


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
    argv = [sys.executable, "-m", "sage_mem", "--dir", str(folder.root), "daemon"]
    if mode == "build":
        argv.append("--build-only")
    try:
        start_holding_lock(folder, argv)
    except OSError as exc:
        log(f"no background build started: {exc.strerror or exc}")


def start_holding_lock(folder: MemoryFolder, argv: list[str]) -> bool:
    """Start the daemon `argv` with the folder's build lock already held for it; False (and
    nothing started) when another process holds the lock.

    The lock is taken here and handed over (the daemon inherits its open file, and so its
    flock): from the moment this returns, any process sees the build running, even before
    the daemon's Python has started (`wait_for_running_build`: the first search after a
    join waits for that build instead of starting its own beside it). Two starters at
    once: one takes the lock, the other finds it held.
    """
    lock = take_build_lock(folder)
    if lock is None:
        return False
    say_in_lock(lock, BUILDING)
    try:
        # The state folder that holds the lock, named outright: the daemon must not find
        # another (the lock it is handed would guard nothing it builds, and a command
        # waiting on it would wait for the whole build, then build its own index).
        spawn_detached(argv, lock=lock, state_dir=folder.state_dir)
    finally:
        os.close(lock)  # the daemon's copy holds it now
    return True


def handed_build_lock(folder: MemoryFolder) -> int | None:
    """The folder's build lock, when the process that started this one handed it over
    (`start_holding_lock`); else None, and the daemon takes the lock itself.

    The descriptor is taken up only if it is this folder's lock file and holds its lock
    (flock on the same open file succeeds for its holder, fails for anyone else).
    """
    raw = os.environ.pop(HANDED_LOCK_ENV, None)
    if raw is None:
        return None
    try:
        fd = int(raw)
        held, wanted = os.fstat(fd), os.stat(build_lock_path(folder))
    except (ValueError, OSError):
        return None
    if (held.st_dev, held.st_ino) != (wanted.st_dev, wanted.st_ino):
        return None
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (ImportError, OSError):
        os.close(fd)
        return None
    os.set_inheritable(fd, False)  # no process this daemon starts keeps it
    return fd


def spawn_detached(argv: list[str], *, lock: int | None = None,
                   state_dir: Path | None = None) -> int:
    """Start `argv` in a session of its own with no standard streams; returns its pid.

    Claude Code waits for the hook's stdout to close, so nothing of the hook's
    may be inherited; nothing waits for the process either (the hook ends at
    once, and the process outlives it). `lock`, a build lock's descriptor, is the
    one thing handed over (`start_holding_lock`), with the state folder it lies in.
    """
    devnull = os.devnull
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0),
    ]
    env = dict(os.environ)
    env.pop(HANDED_LOCK_ENV, None)
    if lock is not None:
        actions.append((os.POSIX_SPAWN_DUP2, lock, HANDED_LOCK_FD))  # (dup2: not close-on-exec)
        env[HANDED_LOCK_ENV] = str(HANDED_LOCK_FD)
    if state_dir is not None:
        env["SAGE_MEM_STATE_DIR"] = str(state_dir)
    return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
