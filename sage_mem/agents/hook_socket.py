"""Hooks answered by a long-lived sage-mem process, over a Unix socket in the state folder.

A hook runs as a new process for every prompt; whichever sage-mem process
already runs for the folder (`serve`, `ui`, `daemon`) holds the index live
and answers it in a few milliseconds instead (`Listener`). The hook's side
(`ask`) imports almost nothing: os, socket, json, zlib.

Where: `<state>/hook-<crc32 of the folder path>.sock` (several folders may
share a state folder named with SAGE_MEM_STATE_DIR), and beside it
`hook-….lock`, held (flock) by the one process that listens. A path too long
for a socket address (about 107 bytes) is reached through the state folder's
descriptor (`/proc/self/fd/N/…`), so any state folder works on Linux.

Who may connect: the socket is made 0600 before it appears under its name
(bound under a temporary name, chmod, renamed), inside a state folder that is
0700; and the listener reads each peer's credentials (SO_PEERCRED) and closes,
unanswered, a connection from any other user id. The hook checks the other
way: it uses only a socket file owned by its own user, mode 0600, whose
listening process runs as its own user.

The exchange: the hook sends one JSON line (`{"v": 1, "event", "root",
"payload", "cwd", "env"}`) and reads one JSON line back (`{"v": 1, "answer":
… or null, "log": [lines]}`); it writes the answer, then sends one byte (`+`),
on which the server records what was injected (a hook cut short between the
two may inject a memory again, never lose one). The server answers with the
same function as the hook's own path (`hooks.answer_with_store`), on the same
session files, so both give the same answer. Anything else — no socket, a
refused or dead one, a socket of another user or mode, a listener of another
user, no complete answer within the wait (`SOCKET_WAIT_MS`, 300 ms;
SAGE_MEM_HOOK_SOCKET_MS sets it), a line that is not such an answer — and
the hook has written nothing yet and answers on its own path: never two
answers, never a hang.

Not on Windows (no AF_UNIX for this): there the hook always answers on its own path.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket
# `socket` (and the `selectors` it imports, ~2 ms) is imported where a socket is made:
# a hook with no server running finds no socket file and never needs it.

PROTOCOL = 1
SOCKET_WAIT_MS = 300
SOCKET_ENV = "SAGE_MEM_HOOK_SOCKET_MS"
# A request (a hook's input) or an answer larger than this is refused.
MAX_MESSAGE = 32 << 20
# How long the server waits for a client's request, and for its acknowledgement (a
# hook writes its answer in microseconds; one that died must not hold up the next).
SERVER_WAIT = 2.0
ACK_WAIT = 0.5
ACK = b"+"
_ADDRESS_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def socket_name(root: str) -> str:
    """The socket's file name for the memory folder `root` (an absolute path)."""
    return f"hook-{zlib.crc32(os.fsencode(root)):08x}.sock"


def state_dirs(root: str) -> list[str]:
    """Where the state folder of `root` can be, without looking at the disk (first: likeliest).

    `MemoryFolder` decides where the state folder is (disk/folder.py); this
    only lists the places it puts one: SAGE_MEM_STATE_DIR, `.<name>.sage-mem`
    beside the folder, or the `.sage-mem` folder it shares with its siblings
    (or lives in). A state folder it moved elsewhere is simply not found, and
    the hook answers on its own path. `tests/test_hook_socket.py` holds the
    two to each other.
    """
    env = os.environ.get("SAGE_MEM_STATE_DIR")
    if env:
        return [os.path.abspath(os.path.expanduser(env))]
    parent, name = os.path.split(root)
    own = os.path.join(parent, _state_dir_name(name))
    shared = parent if os.path.basename(parent) == ".sage-mem" else os.path.join(
        parent, ".sage-mem"
    )
    return [shared, own] if os.path.basename(parent) == ".sage-mem" else [own, shared]


def _state_dir_name(name: str) -> str:
    plain = f".{name}.sage-mem"
    if len(os.fsencode(plain)) <= 255:
        return plain
    from ..disk.folder import state_dir_name  # only for a name too long to keep whole

    return state_dir_name(name)


def wait_ms() -> int:
    """How long a hook waits for a server's answer (SAGE_MEM_HOOK_SOCKET_MS, else 300 ms)."""
    raw = os.environ.get(SOCKET_ENV, "").strip()
    if raw.isascii() and raw.isdigit() and 0 <= int(raw) <= 10_000:
        return int(raw)
    return SOCKET_WAIT_MS


# the hook's side


class Answered:
    """A server's complete answer; `done()` after writing it lets the server record it."""

    def __init__(self, sock: socket.socket, answer: dict[str, Any] | None, log: list[str]) -> None:
        self.sock = sock
        self.answer = answer
        self.log = log

    def done(self) -> None:
        try:
            self.sock.sendall(ACK)
        except OSError:
            pass
        finally:
            self.sock.close()


def ask(
    root: str, request: dict[str, Any], wait: float, note: Callable[[str], None]
) -> Answered | None:
    """The answer of the server for `root`, or None (then the hook answers on its own path).

    `wait` bounds the whole exchange, in seconds. `note` gets one line when a
    socket was there but could not be used (a dead one left behind is not
    worth a line: it is what a server that ended leaves).
    """
    if wait <= 0:
        return None
    name = socket_name(root)
    deadline = time.monotonic() + wait
    for state in state_dirs(root):
        path = os.path.join(state, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        import socket

        if not hasattr(socket, "AF_UNIX"):
            return None
        if not stat.S_ISSOCK(st.st_mode):
            note(f"{path} is not a socket; not asked")
            return None
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            note(f"{path} belongs to another user or is open to others; not asked")
            return None
        return _exchange(state, name, request, deadline, note)
    return None


def _exchange(
    state: str, name: str, request: dict[str, Any], deadline: float, note: Callable[[str], None]
) -> Answered | None:
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    keep = False
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        _connect(sock, state, name)
        if _peer_uid(sock) != os.getuid():
            note(f"the process listening on {name} runs as another user; not asked")
            return None
        sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
        line = _read_line(sock, deadline)
        if line is None:
            note("the sage-mem server did not answer in time; answering here")
            return None
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # (nested too deep)
            reply = None
        if not (isinstance(reply, dict) and reply.get("v") == PROTOCOL and "answer" in reply):
            note(f"{name}: not a sage-mem answer; answering here")
            return None
        answer, log = reply["answer"], reply.get("log")
        if answer is not None and not isinstance(answer, dict):
            note(f"{name}: not a sage-mem answer; answering here")
            return None
        keep = True
        return Answered(sock, answer, [str(x) for x in log] if isinstance(log, list) else [])
    except (ConnectionRefusedError, FileNotFoundError):
        return None  # what a server that ended leaves behind
    except OSError as exc:
        note(f"the sage-mem server could not be asked ({exc}); answering here")
        return None
    finally:
        if not keep:
            sock.close()


def _connect(sock: socket.socket, state: str, name: str) -> None:
    path = os.path.join(state, name)
    if len(os.fsencode(path)) <= _ADDRESS_MAX:
        sock.connect(path)
        return
    fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sock.connect(f"/proc/self/fd/{fd}/{name}")
    finally:
        os.close(fd)


def _peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end (None where the system cannot tell)."""
    import socket

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return os.getuid()  # no SO_PEERCRED (macOS): the 0600 socket in a 0700 folder decides
    raw = sock.getsockopt(socket.SOL_SOCKET, option, 12)
    return int.from_bytes(raw[4:8], "little", signed=False)


def _read_line(sock: socket.socket, deadline: float) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            return None
        if not chunk:
            return None  # closed before a whole line: refused, or died
        end = chunk.find(b"\n")
        if end >= 0:
            parts.append(chunk[:end])
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE:
            return None


# the server's side


Handler = Callable[[dict[str, Any]], tuple[dict[str, Any], Callable[[], None] | None]]
"""A request -> the reply to send, and what to do once the hook has written it."""


def _nothing() -> None:
    pass


class Listener:
    """Answers hook requests for one memory folder on its socket, from a thread of its own.

    `handle` turns a request into a reply (see `Handler`); calls are one at a
    time. `hold`, if given, is called as each connection is accepted and
    returns what to call once its answer is sent (`MemoryStore.hold_walks`:
    the watcher's walk waits meanwhile, so an answer never shares the
    interpreter with it). `owner_uid` is the only user id answered (the process's own; a test
    sets another to see a connection refused). `start()` is False when the
    socket cannot be had: another process listens already, no AF_UNIX, or the
    state folder cannot take it; the caller then simply does not serve hooks.
    """

    def __init__(self, root: str, state_dir: Path, handle: Handler,
                 hold: Callable[[], Callable[[], None]] | None = None) -> None:
        self.root = root
        self.state_dir = state_dir
        self.handle = handle
        self.hold = hold
        self.name = socket_name(root)
        self.owner_uid = os.getuid() if hasattr(os, "getuid") else -1
        self.last_request = time.monotonic()
        self.answered = 0
        self.refused = 0
        self._sock: socket.socket | None = None
        self._lock_fd: int | None = None
        self._dir_fd: int | None = None
        self._handling = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> Path:
        return self.state_dir / self.name

    def start(self) -> bool:
        import socket

        if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
            return False
        try:
            import fcntl

            from ..disk.safe_io import make_private_dirs

            make_private_dirs(self.state_dir)
            lock_path = self.state_dir / (self.name[: -len(".sock")] + ".lock")
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False  # another process answers this folder's hooks
            self._lock_fd = fd
            self._sock = self._bind()
        except OSError:
            self.stop()
            return False
        self._thread = threading.Thread(target=self._serve, name="sage-mem hook socket",
                                        daemon=True)
        self._thread.start()
        return True

    def _bind(self) -> socket.socket:
        """The listening socket, 0600 before it appears under its name."""
        self._dir_fd = dir_fd = os.open(self.state_dir, os.O_RDONLY | os.O_DIRECTORY)
        temp = f".{self.name[:-5]}.{os.getpid()}.tmp.sock"
        for stale in (temp, self.name):  # ours to replace: the lock is held
            try:
                os.unlink(stale, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self._address(temp))
            os.chmod(temp, 0o600, dir_fd=dir_fd)
            # Every session's hook may connect in one instant while the accept thread waits
            # for the interpreter: queued, not turned away (EAGAIN) into a slow answer of its own.
            sock.listen(socket.SOMAXCONN)
            os.rename(temp, self.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            sock.settimeout(0.5)
        except BaseException:
            sock.close()
            raise
        return sock

    def _address(self, name: str) -> str:
        full = str(self.state_dir / name)
        if len(os.fsencode(full)) <= _ADDRESS_MAX:
            return full
        return f"/proc/self/fd/{self._dir_fd}/{name}"

    def stop(self) -> None:
        """Stop answering, and remove the socket (only if it is still ours)."""
        self._stopped.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                if self._dir_fd is not None:
                    os.unlink(self.name, dir_fd=self._dir_fd)
            except OSError:
                pass
            sock.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        for attribute in ("_dir_fd", "_lock_fd"):
            fd = getattr(self, attribute)
            if fd is not None:
                setattr(self, attribute, None)
                os.close(fd)  # closing the lock's descriptor releases it

    def _serve(self) -> None:
        while not self._stopped.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopped.is_set():
                    return
                time.sleep(0.05)
                continue
            release = self.hold() if self.hold is not None else _nothing
            try:
                threading.Thread(target=self._connection, args=(conn, release), daemon=True,
                                 name="sage-mem hook").start()
            except BaseException:
                release()
                conn.close()
                raise

    def _connection(self, conn: socket.socket, release: Callable[[], None] = _nothing) -> None:
        with conn:
            try:
                if _peer_uid(conn) != self.owner_uid:
                    self.refused += 1
                    return  # closed unanswered
                deadline = time.monotonic() + SERVER_WAIT
                line = _read_line(conn, deadline)
                if line is None:
                    return
                request = json.loads(line)
                if not isinstance(request, dict) or request.get("v") != PROTOCOL:
                    return
                if request.get("root") != self.root:
                    conn.sendall(b"{}\n")  # not this folder's: the hook answers on its own
                    return
                with self._handling:
                    self.last_request = time.monotonic()
                    reply, after = self.handle(request)
                    self.answered += 1
                conn.sendall(json.dumps(dict(reply, v=PROTOCOL)).encode("utf-8") + b"\n")
                release()  # answered: what is left (recording it) may share with a walk
                if after is None:
                    return
                # Waited for outside the lock: a hook slow to write its answer (a loaded
                # machine) must not hold up the answers of the hooks queued behind it.
                conn.settimeout(ACK_WAIT)
                try:
                    ack = conn.recv(1)
                except TimeoutError:
                    ack = b""
                if ack == ACK:
                    with self._handling:
                        after()
            except (OSError, ValueError, RecursionError):  # (a request nested too deep)
                return
            finally:
                release()
