"""Claude Code hook commands: `sage-mem hook session-start|user-prompt-submit|stop|pre-compact`.

`stop` and `pre-compact` ask the agent, after a long run of tool steps, whether
anything is worth remembering: `reflection.py` holds all of it; here is only
the wiring.

Each reads the hook's JSON on stdin and answers on stdout with

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "…"}}

or prints nothing when there is nothing to inject (Claude Code takes an empty
stdout on exit 0 as "no context"; an empty header would cost tokens for
nothing). Whatever goes wrong — input that is not JSON, a missing memory
folder, a broken memory file, a state folder that cannot be written — the hook
injects what it could, logs one line per problem to stderr and exits 0: it must
never block the user's prompt.

A new process runs for every prompt, so the prompt never waits for an index:

1. When a sage-mem process runs for the folder (`serve`, `ui`, `daemon`),
   the hook asks it over its Unix socket (`hook_socket`) and imports almost
   nothing else: not the store, the index or the injection text.
2. Otherwise it answers here, from a store that never builds
   (`MemoryStore(build=False)`: the index cache plus a few files read
   directly; what changed since found by the folders' stat, not every
   file's: `by_folders`), with the same function a server answers with
   (`answer_with_store`), and once the answer is out starts `sage-mem
   daemon` in the background when none runs (`daemon_start.start_detached`).

With shared folders (a config's, or `--dir` given again: `sage_mem.folders`)
the hook answers on its own path whatever runs, since a server answers for
its own folder only: every folder's store opened with `build=False`, each
folder's hits above its own floor, merged (`context.prompt_context`).

It never imports `mcp` or `watchdog`, nor argparse or logging
(`tests/test_hook_imports.py` checks what the process imports).

Autodream from the hook (opt-in): when enabled, `session-start` starts
`sage-mem dream --auto` as a detached background process — its own session,
no stdin/stdout/stderr — and answers without waiting for it. It is enabled by
`"autoFromHook": true` in `<state>/autodream/config.json`, or by the
environment variable SAGE_MEM_AUTODREAM=1 (SAGE_MEM_AUTODREAM=0 turns it off
whatever the file says). The time gate is checked here first, so a closed gate
costs one small file read and no process; `dream --auto` checks every gate
again (sessions, the lock) before it changes anything, and runs in the mode
the settings' `autoMode` says (report unless set to rewrite).

Time budget: whatever the folder holds (a memory that takes seconds to read,
a server that accepts and never answers) and whatever the input does (a
stdin that never ends), a hook process answers within its budget, counted from
the start of `run_hook`: 2 s for user-prompt-submit, 3 s for session-start,
2 s for stop and pre-compact (`BUDGETS_MS`; they read only the transcript's
tail and answer nothing when cut short). Claude Code holds the user's prompt
until the hook answers; a hook takes tens of milliseconds (docs/speed.md), so
the budget only ever cuts a pathological case. A session start happens once
and also loads the baselines, so it gets a little more. SAGE_MEM_HOOK_BUDGET_MS (a whole number of
milliseconds, 1 to 60,000) sets both, for tests. When the budget runs out, a
SIGALRM handler writes the answer the hook can give without its memories —
nothing for a prompt, the tools guide at session start — unless the real
answer is already being written (then that one is finished instead: never two
answers), logs one line and ends the process at once with status 0. The timer
is armed only when the hook answers on the process's own stdout, from the main
thread (the `sage-mem hook` process), never when `run_hook` is called with
other streams.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import SageMemError

if TYPE_CHECKING:  # imported when the hook answers on its own path, not to ask a server
    from ..store import MemoryStore

# The two reflection hooks (`reflection.py`, imported only when one runs: the prompt's
# path stays thin).
REFLECTION_EVENTS = {"stop": "Stop", "pre-compact": "PreCompact"}
SERVED_EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}
"""The hooks a server may answer (`serve_request`); the reflection hooks answer themselves."""
EVENTS = {**SERVED_EVENTS, **REFLECTION_EVENTS}
AUTODREAM_ENV = "SAGE_MEM_AUTODREAM"
DREAM_RUN_ENV = "SAGE_MEM_DREAM_RUN"  # dream.model.DREAM_RUN_ENV (not imported on the hook's path)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
RELEASING_SOURCES = frozenset({"compact", "clear"})
_LOG_PREFIX = "sage-mem hook"

BUDGET_ENV = "SAGE_MEM_HOOK_BUDGET_MS"
BUDGETS_MS = {"UserPromptSubmit": 2_000, "SessionStart": 3_000, "Stop": 2_000,
              "PreCompact": 2_000}
"""The hard wall-clock budget of each hook, in milliseconds (see the module docstring)."""
MAX_BUDGET_MS = 60_000  # Claude Code's own default timeout for a hook command


class _Log:
    """One line on stderr per problem; a broken stderr is ignored, never raised."""

    def __init__(self, stream: TextIO, event: str) -> None:
        self.stream = stream
        self.event = event

    def __call__(self, message: str) -> None:
        line = " ".join(f"{_LOG_PREFIX} {self.event}: {message}".split())
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError, UnicodeError):
            pass


def run_hook(
    event: str,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    folder: Path | None = None,
    shared: tuple[str, ...] = (),
) -> int:
    """Run one hook command; always returns 0 (the exit status Claude Code reads as "go on").

    The answer is written before what was injected is recorded, so that a
    process cut short by its budget may inject a memory twice, never lose one.
    """
    if os.environ.get(DREAM_RUN_ENV):
        # Inside a dream run's agent (dream.model sets it): no context, no session, no counts.
        return 0
    log = _Log(stderr, event)
    budget = _Budget.start(event, stdout, stderr, log)
    try:
        try:
            answer, record = _answer(event, stdin, folder, log, shared)
        except Exception as exc:  # noqa: BLE001 - the hook must never block the prompt
            log(f"unexpected error, nothing injected: {type(exc).__name__}: {exc}")
            answer, record = None, None
        if answer is not None:
            with budget.answering():
                try:
                    stdout.write(json.dumps(answer) + "\n")
                    stdout.flush()
                except (OSError, ValueError) as exc:
                    log(f"cannot write the answer: {exc}")
        if record is not None:
            try:
                record()
            except Exception as exc:  # noqa: BLE001 - the answer is out; only bookkeeping failed
                log(f"unexpected error after answering: {type(exc).__name__}: {exc}")
    finally:
        budget.cancel()
    return 0


class _Budget:
    """The hook's hard time budget: a SIGALRM that answers with what needs no memory and exits.

    `answering()` marks the real answer's write: a deadline reached during it
    lets the write finish (one whole answer, never two) and ends the process
    right after; one reached later, while what was injected is recorded, ends
    it at once, the answer out.
    """

    def __init__(self, seconds: float, fallback: bytes, out_fd: int, err_fd: int,
                 stderr: TextIO, event: str, budget_ms: int) -> None:
        self.seconds = seconds
        self.fallback = fallback
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.stderr = stderr
        self.event = event
        self.budget_ms = budget_ms
        self.writing = False
        self.answered = False
        self.expired = False
        self.previous: Any = None
        self.armed = False

    @classmethod
    def start(cls, event: str, stdout: TextIO, stderr: TextIO, log: _Log) -> _Budget | _NoBudget:
        """The budget armed for this process, or none (see the module docstring)."""
        try:
            return cls._start(event, stdout, stderr, log)
        except Exception as exc:  # noqa: BLE001 - no timer is better than no answer
            log(f"no time budget: {type(exc).__name__}: {exc}")
            return _NoBudget()

    @classmethod
    def _start(cls, event: str, stdout: TextIO, stderr: TextIO, log: _Log) -> _Budget | _NoBudget:
        hook_name = EVENTS.get(event)
        if hook_name is None or stdout is not sys.__stdout__:
            return _NoBudget()
        budget_ms, warning = hook_budget_ms(hook_name, os.environ.get(BUDGET_ENV))
        if warning:
            log(warning)
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return _NoBudget()
        try:
            out_fd = stdout.fileno()
            err_fd = stderr.fileno()
        except (OSError, ValueError, AttributeError):
            return _NoBudget()
        fallback = b""
        if hook_name == "SessionStart":
            from . import context

            answer = {"hookSpecificOutput": {"hookEventName": hook_name,
                                             "additionalContext": context.TOOLS_GUIDE}}
            fallback = (json.dumps(answer) + "\n").encode("utf-8")
        budget = cls(budget_ms / 1000, fallback, out_fd, err_fd, stderr, event, budget_ms)
        budget.previous = signal.signal(signal.SIGALRM, budget._expire)
        budget.armed = True
        signal.setitimer(signal.ITIMER_REAL, budget.seconds)
        return budget

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        self.writing = self.answered = True
        try:
            yield
        finally:
            self.writing = False
        if self.expired:
            self._exit()

    def cancel(self) -> None:
        if not self.armed:
            return
        import signal

        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        self.armed = False

    def _expire(self, signum: int, frame: object) -> None:
        if self.expired:
            return
        self.expired = True
        if self.writing:
            return  # the answer is being written: `answering` ends the process once it is out
        if self.fallback and not self.answered:
            _write_all(self.out_fd, self.fallback)
        self._exit()

    def _exit(self) -> None:
        if self.answered:
            what = "answered, but what was injected may not be recorded (it may repeat)"
        else:
            what = "injected only the tools guide" if self.fallback else "nothing injected"
        line = f"{_LOG_PREFIX} {self.event}: time budget of {self.budget_ms} ms reached; {what}"
        with contextlib.suppress(Exception):  # a log line the signal cut: write past it
            self.stderr.flush()
        _write_all(self.err_fd, (line + "\n").encode("utf-8", "replace"))
        os._exit(0)


class _NoBudget:
    """No timer: `run_hook` was given streams of its caller's, not the process's own."""

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        yield

    def cancel(self) -> None:
        pass


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass


def hook_budget_ms(hook_name: str, raw: str | None) -> tuple[int, str | None]:
    """The budget of a hook in ms: SAGE_MEM_HOOK_BUDGET_MS when usable, else BUDGETS_MS.

    Returns the budget and a warning when the setting was unusable.
    """
    default = BUDGETS_MS[hook_name]
    if raw is None or not raw.strip():
        return default, None
    text = raw.strip()
    if text.isascii() and text.isdigit() and len(text) <= 6 and 1 <= int(text) <= MAX_BUDGET_MS:
        return int(text), None
    return default, (f"{BUDGET_ENV}={raw[:40]!r} is not a whole number of milliseconds "
                     f"from 1 to {MAX_BUDGET_MS}; using {default}")


_Reply = tuple[dict[str, Any] | None, Callable[[], None] | None]


def _answer(event: str, stdin: TextIO, folder: Path | None, log: _Log,
            shared: tuple[str, ...] = ()) -> _Reply:
    """The answer to write (None: print nothing), and what to do once it is written.

    From the server that runs for the folder when there is one (`hook_socket`),
    else here, from the cache and the few files changed since (never a build:
    one is started in the background when needed, see `agents/daemon.py`).
    """
    hook_name = EVENTS.get(event)
    if hook_name is None:  # before reading stdin: no budget is armed for an unknown event
        log(f"unknown hook event {event[:40]!r} (expected {' or '.join(EVENTS)})")
        return None, None
    read = _read_payload(stdin, log)
    payload = read if read is not None else {}
    if event in REFLECTION_EVENTS:
        from ..disk.folder import MemoryFolder, default_folder
        from . import reflection

        def sessions() -> Path:
            return MemoryFolder(folder or default_folder()).state_path("sessions")

        done = (lambda: _flush_autosync(folder, shared, log)) if hook_name == "Stop" else None
        return reflection.answer(hook_name, payload, sessions, log), done
    if hook_name == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            if read is not None:  # (an input that could not be read has said why already)
                log("no prompt in the hook input; nothing injected")
            return None, None
        if not prompt.strip():
            return None, None
    try:
        root = _folder_root(folder)
    except SageMemError as exc:
        log(f"nothing injected: {exc}")
        return None, None
    specs = _shared_folders(root, shared, log)
    if specs:  # a server answers for its own folder: with shared ones the hook answers here
        return _answer_here(hook_name, payload, folder, root, log, specs)
    answered = _ask_server(hook_name, payload, root, log)
    if answered is not None:
        for line in answered.log:
            log(line)
        return answered.answer, answered.done
    return _answer_here(hook_name, payload, folder, root, log)


FORWARDED_ENV = ("SAGE_MEM_HOOK_LIMIT", AUTODREAM_ENV)
"""The settings a server answering a hook takes from the hook's environment, not its own."""


def _folder_root(folder: Path | None) -> str:
    """The memory folder's absolute path as `MemoryFolder` makes it (tests/test_hook_socket.py
    holds the two to each other); FolderError when `~` in it leads nowhere."""
    from ..disk.home import default_folder, expand_home

    return os.path.abspath(expand_home(folder) if folder is not None else default_folder())


def _ask_server(
    hook_name: str, payload: dict[str, Any], root: str, log: _Log
) -> Any:
    """The answer of a sage-mem process running for the folder, or None (see `hook_socket`)."""
    if os.environ.get("SAGE_MEM_DAEMON", "").strip() == "off":
        return None
    from . import hook_socket

    request = {
        "v": hook_socket.PROTOCOL, "event": hook_name, "root": root, "payload": payload,
        "cwd": _process_cwd(),
        "env": {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ},
    }
    return hook_socket.ask(root, request, hook_socket.wait_ms() / 1000, log)


def serve_request(store: MemoryStore, request: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A server's answer to a hook's request (`hook_socket.Listener`): what the hook's own
    path would answer, from the server's live index, and what to record once it is written."""
    lines: list[str] = []
    hook_name = request.get("event")
    payload = request.get("payload")
    env = request.get("env")
    cwd = request.get("cwd")
    if (not isinstance(hook_name, str) or hook_name not in SERVED_EVENTS.values()
            or not isinstance(payload, dict) or not isinstance(env, dict)):
        return {"answer": None, "log": ["the sage-mem server got a request it cannot read"]}, None
    payload = payload_fields(payload, lines.append)  # the socket is a boundary of its own
    if hook_name == "UserPromptSubmit" and not payload.get("prompt", "").strip():
        lines.append("no prompt in the hook input; nothing injected")
        return {"answer": None, "log": lines}, None
    answer, record = answer_with_store(
        hook_name, payload, store, lines.append,
        env={str(k): str(v) for k, v in env.items() if k in FORWARDED_ENV},
        cwd=cwd if isinstance(cwd, str) else None,
    )
    return {"answer": answer, "log": lines}, record


def _shared_folders(root: str, shared: tuple[str, ...], log: _Log) -> list[Any]:
    """Every folder read with `root` when there are shared ones (`--dir` after the first, else
    the config's; `folders/`), the personal one first; [] when `root` is read alone."""
    from .. import folders

    try:
        if not shared and not folders.has_config():
            return []
        specs = folders.folders_for([root, *shared])
    except SageMemError as exc:
        log(f"shared folders left out: {exc}")
        try:
            specs = folders.folders_for([root, *shared], config=None)
        except SageMemError:  # a `--dir` of its own that leads nowhere: said above
            return []
    return specs if len(specs) > 1 else []


def _answer_here(
    hook_name: str, payload: dict[str, Any], folder: Path | None, root: str, log: _Log,
    shared: list[Any] | None = None,
) -> _Reply:
    """The hook's own path: stores that never build, and a build started when one lacks it."""
    from ..disk.folder import default_folder, refuse_misplaced
    from ..store import MemoryStore

    try:
        # A state folder, or the folder a memory folder sits in, is no memory folder: read
        # as one it would inject `memory/…` ids and make a state folder of the state folder.
        refuse_misplaced(folder if folder is not None else default_folder())
        # No server answered: the folders' stat finds what changed since the cache, not a
        # stat of every file (the injected text is read again from each file regardless).
        store = MemoryStore(folder, watch=False, build=False, by_folders=True)
    except (SageMemError, OSError) as exc:
        log(f"nothing injected: {exc}")
        return None, None
    several = None
    if shared:
        from ..folders import Folders

        several = Folders(shared, store=store, watch=False, build=False)
        for note in several.missing_notes():
            log(note)
    loaded = store.loaded
    if loaded is not None and loaded.left_out:
        from .daemon_start import what_builds

        if loaded.how == "partial":
            log(f"no index cache yet: answered without the {loaded.left_out} memory files; "
                f"{what_builds()}")
        else:
            log(f"{loaded.left_out} memory files changed since the index cache was written: "
                f"answered without them; {what_builds()}")
    answer, record = answer_with_store(hook_name, payload, store, log, env=os.environ,
                                       cwd=_process_cwd(), folders=several)

    def after() -> None:
        if record is not None:
            record()
        from .daemon_start import start_detached

        for each in several.stores.values() if several is not None else (store,):
            start_detached(each.folder, build_needed=each.build_needed, log=log)

    return answer, after


def answer_with_store(
    hook_name: str, payload: dict[str, Any], store: MemoryStore, log: Callable[[str], None],
    *, env: Mapping[str, str], cwd: str | None, folders: Any = None,
) -> _Reply:
    """The answer to a hook from `store`, and what to record once it is written.

    The one answering function of the hook's own path and of a server's
    (`serve_request`): the same store contents give the same answer.
    """
    from . import context

    for note in store.folder.state_notes:
        log(note)
    _report_problems(store, log)

    now = datetime.now(UTC)
    sessions_dir = store.folder.state_path("sessions")
    try:
        context.prune_sessions(sessions_dir, now)
    except OSError as exc:
        log(f"cannot prune old session files in {sessions_dir}: {exc.strerror or exc}")
    session_id = payload.get("session_id")
    if not isinstance(session_id, str):
        session_id = None
    session = context.SessionLog.load(sessions_dir, session_id)
    given = payload.get("cwd")
    project = context.project_for(given if isinstance(given, str) and given else cwd)

    changed = False
    if hook_name == "SessionStart":
        if payload.get("source") in RELEASING_SOURCES and session.injected:
            session.release()
        # Saved at every session start, injected or not: the autodream session gate
        # counts the session logs touched since the last run (dream/gates.py).
        changed = True
        text, chosen = context.session_start_context(
            store, project=project, session=session, now=now, folders=folders
        )
        from . import reflection

        text = reflection.after_compaction(text, payload, sessions_dir)
        _maybe_start_autodream(store, now, log, env)
        for each in folders.stores.values() if folders is not None else (store,):
            _maybe_start_autosync(each, log)
    else:
        limit, warning = context.prompt_limit(env.get("SAGE_MEM_HOOK_LIMIT"))
        if warning:
            log(warning)
        text, chosen = context.prompt_context(
            store, payload["prompt"], project=project, session=session, limit=limit, now=now,
            folders=folders,
        )

    def record() -> None:
        save = changed
        if chosen:
            session.add(chosen)
            save = True
        if save:
            try:
                session.save()
            except OSError as exc:
                log(f"cannot record what was injected ({exc.strerror or exc}); it may repeat")
        if chosen:
            try:
                if folders is None:
                    store.note_used(memory.id for memory in chosen)
                else:
                    for name, ids in context.by_folder(folders, chosen).items():
                        folders.stores[name].note_used(ids)
            except SageMemError as exc:  # a stats lock held too long must not cost the context
                log(f"retrievals not counted: {exc}")

    if not text:
        return None, record
    return (
        {"hookSpecificOutput": {"hookEventName": hook_name, "additionalContext": text}},
        record,
    )


def autodream_enabled(store: MemoryStore, env: Mapping[str, str] | None = None) -> bool:
    """SAGE_MEM_AUTODREAM when set (1/0), else the settings file's `autoFromHook`.

    Reads the file with json here rather than through `DreamConfig`: importing
    the dream package costs every session start about 50 ms, and most users
    never turn this on.
    """
    flag = (os.environ if env is None else env).get(AUTODREAM_ENV)
    if flag is not None and flag.strip().lower() in _TRUE | _FALSE:
        return flag.strip().lower() in _TRUE
    try:
        path = store.folder.state_path("autodream", "config.json")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # (JSON nested too deep)
        return False
    return isinstance(data, dict) and data.get("autoFromHook") is True


def _maybe_start_autodream(
    store: MemoryStore, now: datetime, log: Callable[[str], None], env: Mapping[str, str]
) -> None:
    """Start `dream --auto` in the background when enabled and the time gate is open."""
    try:
        if not autodream_enabled(store, env):
            return
        from ..dream.config import DreamConfig
        from ..dream.gates import load_state, time_gate
        from ..dream.paths import DreamPaths

        paths = DreamPaths(store.folder)
        gate = time_gate(load_state(paths), DreamConfig.load(paths.config_file), now)
        if not gate.open:
            return
        _spawn_detached(
            [sys.executable, "-m", "sage_mem", "--dir", str(store.folder.root), "dream", "--auto"]
        )
    except (SageMemError, OSError) as exc:
        log(f"autodream not started: {exc}")


def _maybe_start_autosync(store: MemoryStore, log: Callable[[str], None]) -> None:
    """Start `sage-mem sync` in the background when autosync is on (`sync/auto.py`)."""
    try:
        from ..sync import auto

        root, state = store.folder.root, store.folder.state_dir
        if not auto.enabled(root, state):
            return
        note = auto.take_offline_note(state)
        if note:
            log(f"autosync: the last sync could not reach the remote: {note}")
        auto.start_in_background(root, _spawn_detached)
    except (SageMemError, OSError) as exc:
        log(f"autosync not started: {exc}")


def _flush_autosync(folder: Path | None, shared: tuple[str, ...], log: _Log) -> None:
    """At the end of a turn (the Stop hook, its answer written): a write the server has not
    synced yet is synced in the background, in each folder with autosync on (`sync/auto.py`).
    A small file read a folder; never git, never a wait."""
    from ..disk.folder import MemoryFolder, default_folder
    from ..sync import auto

    try:
        roots = [MemoryFolder(folder or default_folder())]
        specs = _shared_folders(str(roots[0].root), shared, log)
        roots += [MemoryFolder(spec.path) for spec in specs[1:]]
        for each in roots:
            auto.flush_pending(each.root, each.state_dir, _spawn_detached)
    except (SageMemError, OSError) as exc:
        log(f"autosync not started: {exc}")


def _spawn_detached(argv: list[str]) -> None:
    import subprocess

    # Its own session and no inherited pipes: Claude Code waits for the hook's
    # stdout to close, and must not wait for the run.
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
    )


# The hook input's fields sage-mem reads, and the type each must have (Claude Code's and
# Codex's hook JSON); anything else in it is never looked at.
PAYLOAD_FIELDS: dict[str, type] = {
    "session_id": str, "prompt": str, "cwd": str, "source": str, "transcript_path": str,
    "hook_event_name": str, "stop_hook_active": bool,
}


def payload_fields(data: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """The fields of a hook's input that have the type they must have; one log line names
    those that do not (dropped: a dict where a prompt goes is no prompt, not a crash).

    Applied where a hook input comes in: from stdin, and in a server from the socket."""
    kept = {}
    wrong = []
    for name, kind in PAYLOAD_FIELDS.items():
        value = data.get(name)
        if value is None:
            continue
        if type(value) is kind:
            kept[name] = value
        elif name != "prompt":  # a prompt hook says "no prompt" itself; the others never read it
            wrong.append(name)
    if wrong:
        log(f"hook input field{'s' if len(wrong) > 1 else ''} of the wrong type ignored: "
            + ", ".join(wrong))
    return kept


def _read_payload(stdin: TextIO, log: _Log) -> dict[str, Any] | None:
    """The hook input as a dict of the fields sage-mem reads; None (after one log line) when
    it is missing, unreadable or not an object."""
    try:
        if stdin.isatty():
            log("expects the hook's JSON on stdin (run it from Claude Code's hook settings)")
            return None
        buffer = getattr(stdin, "buffer", None)
        # Bytes, decoded here: the locale's encoding may not be UTF-8, and a prompt in
        # Chinese must not turn into a decode error.
        if buffer is None:
            raw = stdin.read()
        else:
            from .hook_socket import MAX_MESSAGE  # what a server takes as a hook's input

            data = _read_at_most(buffer, MAX_MESSAGE)
            if data is None:
                log(f"hook input is over {MAX_MESSAGE >> 20} MB; not read")
                return None
            raw = data.decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        log(f"cannot read the hook input: {exc}")
        return None
    if not raw.strip():
        log("empty hook input")
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        log(f"hook input is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
        return None
    except (ValueError, RecursionError) as exc:  # an integer past 4,300 digits; nested too deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        log(f"hook input is not JSON sage-mem can read ({why})")
        return None
    if not isinstance(data, dict):
        log(f"hook input is a JSON {type(data).__name__}, not an object")
        return None
    return payload_fields(data, log)


def _read_at_most(buffer: Any, limit: int) -> bytes | None:
    """All of `buffer` up to `limit` bytes (None past it), a chunk at a time: one read of a
    stdin that never ends (/dev/zero) would never return to Python, where the budget fires."""
    parts: list[bytes] = []
    size = 0
    read = getattr(buffer, "read1", buffer.read)
    while True:
        chunk = read(1 << 20)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)


def _report_problems(store: MemoryStore, log: Callable[[str], None]) -> None:
    problems = store.problems()
    if not problems:
        return
    first = problems[0].message
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    log(f"skipped a memory file that cannot be read: {first}{more}; see `sage-mem audit`")


def _process_cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None
