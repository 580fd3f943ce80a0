"""`sage-mem doctor`: what is in use, what runs, and what to do about each problem.

The answer a person looks for when "it doesn't remember": the memory folder
and its state folder, whether it is a memory folder at all, the clients that
have sage-mem installed (and whether the command their hooks and server run
still starts), the daemon, the index cache, the semantic extra, sync and the
dream. One `Finding` a line: `ok`, a `note` (worth knowing, nothing broken) or
a `problem`, each problem with what to do. `Checkup.exit_status` is 1 when a
problem was found, else 0.

It changes nothing in the memory folder, and in the state folder only what
any command's first use makes (the folder and its owner record): the store is
opened as a hook opens it (`build=False`: the cache and a few files, never a
build, never a cache written), locks are looked at without being taken (`_held`), the
semantic extra is found with `importlib.util.find_spec` (numpy and the model
are never imported) and sync's held-back files are found by its own scan, with
nothing staged. Two things go outside: each client's command is started once
with `--version` (that is the check), and the sync remote is asked for its
branches (`git ls-remote`, bounded by `REMOTE_SECONDS`; `remote=False` skips
it). A dream run whose process is gone is marked interrupted, as `runs` marks it.

It sits in agents/ because it reads every room below (disk, search, sync,
dream) and the clients' files (`install.installed`); nothing imports it but the
`doctor` command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..disk.folder import INDEX_FILE, MemoryFolder, refuse_misplaced
from ..errors import SageMemError

OK, NOTE, PROBLEM = "ok", "note", "problem"
REMOTE_SECONDS = 20.0
VERSION_SECONDS = 20.0


@dataclass(frozen=True)
class Finding:
    """One line of the checkup: what was found about `area`, and what to do when it is wrong."""

    area: str
    level: str  # OK, NOTE or PROBLEM
    text: str
    fix: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"area": self.area, "level": self.level, "text": self.text, "fix": self.fix,
                **({"data": dict(self.data)} if self.data else {})}

    def format_text(self) -> str:
        mark = {OK: "ok     ", NOTE: "note   ", PROBLEM: "PROBLEM"}[self.level]
        fix = f" → {self.fix}" if self.fix else ""
        return f"{mark}  {self.area}: {self.text}{fix}"


@dataclass
class Checkup:
    """Everything `doctor` found about one memory folder."""

    folder: Path
    state_dir: Path | None
    findings: list[Finding] = field(default_factory=list)

    def add(self, area: str, level: str, text: str, fix: str | None = None,
            **data: Any) -> None:
        self.findings.append(Finding(area, level, " ".join(text.split()), fix, data))

    @property
    def problems(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.level == PROBLEM]

    @property
    def exit_status(self) -> int:
        """1 when a problem was found, 0 when none (notes alone are healthy)."""
        return 1 if self.problems else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "stateDir": str(self.state_dir) if self.state_dir else None,
            "healthy": not self.problems,
            "problems": len(self.problems),
            "findings": [finding.to_dict() for finding in self.findings],
        }

    def format_text(self) -> str:
        lines = [finding.format_text() for finding in self.findings]
        count = len(self.problems)
        lines.append(f"{count} problem{'s' if count != 1 else ''} found." if count
                     else "No problems found.")
        return "\n".join(lines) + "\n"


def checkup(folder: Path, *, named_by: str, project_dir: Path, home: Path,
            codex_home: Path | None = None, remote: bool = True,
            env: Mapping[str, str] | None = None) -> Checkup:
    """Look at the memory folder `folder` (named by `named_by`: "--dir", "$SAGE_MEM_DIR" or
    "the default") and at the clients' files for `project_dir` and `home`."""
    env = os.environ if env is None else env
    folder = Path(os.path.abspath(folder))
    dir_flag = "" if named_by == "the default" else f"--dir {shlex.quote(str(folder))} "
    result = Checkup(folder, None)
    usable = _check_folder(result, folder, named_by, dir_flag)
    if usable:
        memory_folder = MemoryFolder(folder)
        result.state_dir = memory_folder.state_dir
        store = _check_state_and_index(result, memory_folder, dir_flag, env)
        if store is not None:
            try:
                _check_semantic(result, store, dir_flag, env)
                _check_sync(result, memory_folder, dir_flag, remote=remote)
                _check_dream(result, store, dir_flag, env)
            finally:
                store.close()
    _check_clients(result, folder, project_dir=project_dir, home=home, codex_home=codex_home)
    return result


# the folder


def _check_folder(result: Checkup, folder: Path, named_by: str, dir_flag: str) -> bool:
    try:
        refuse_misplaced(folder)
    except SageMemError as exc:
        result.add("folder", PROBLEM, f"{exc} (named by {named_by})",
                   "name the memory folder itself")
        return False
    if not folder.exists():
        result.add("folder", PROBLEM, f"{folder} (named by {named_by}) does not exist",
                   f"sage-mem {dir_flag}init (or name the folder you meant)")
        return False
    if not folder.is_dir():
        result.add("folder", PROBLEM, f"{folder} (named by {named_by}) is a file, not a folder",
                   "name a memory folder")
        return False
    result.add("folder", OK, f"{folder} (named by {named_by}), a memory folder")
    if not (folder / INDEX_FILE).exists():
        # Not wrong (a folder of memory files is read as it is), but worth a look: `init`
        # and every write make one, so a folder without it may not be the one meant.
        result.add("folder", NOTE, f"no {INDEX_FILE} in it yet", f"sage-mem {dir_flag}index "
                   "writes it (or name the folder you meant)")
    return True


def _check_state_and_index(result: Checkup, folder: MemoryFolder, dir_flag: str,
                           env: Mapping[str, str]) -> Any:
    from ..store import MemoryStore

    state = folder.state_dir
    if state.is_dir() and not os.access(state, os.W_OK | os.X_OK):
        result.add("state", PROBLEM, f"{state} cannot be written: counts, sessions and the "
                   "index cache are not kept", f"chmod u+rwx {shlex.quote(str(state))}")
    elif state.is_dir():
        result.add("state", OK, f"{state}")
    else:
        result.add("state", NOTE, f"{state} is not made yet (made on the folder's first use)")
    building = _held(_build_lock(folder))
    answering = _held(_hook_lock(folder))
    try:
        store = MemoryStore(folder.root, watch=False, build=False)
    except SageMemError as exc:
        result.add("memories", PROBLEM, f"cannot be read: {exc}", f"sage-mem {dir_flag}audit")
        return None
    loaded = store.loaded
    memories = len(store.list())
    if loaded is not None and loaded.left_out:
        # Without a fresh cache the store read a few files or none (a hook's budget): the
        # memories are counted by the walk instead, not said to be "0" (or too few).
        memories = sum(1 for _ in store.folder.iter_files())
    broken = [problem for problem in store.problems()
              if store.folder.id_for(problem.path) is not None]
    result.add("memories", OK, f"{memories} memories", count=memories)
    if broken:
        from ..checks.prompt_injection import visible

        names = visible(", ".join(str(p.path.relative_to(store.root)) for p in broken[:3]))
        more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
        result.add("memories", PROBLEM,
                   f"{len(broken)} file{'s' if len(broken) != 1 else ''} could not be read, "
                   f"so no search or hook finds {'it' if len(broken) == 1 else 'them'}: "
                   f"{names}{more}",
                   f"sage-mem {dir_flag}audit says why; fix each in an editor",
                   files=[str(p.path) for p in broken])
    how = loaded.how if loaded is not None else "partial"
    build = f"sage-mem {dir_flag}daemon --build-only (or any sage-mem command)"
    if building and not answering:
        result.add("index", OK, "the index cache is being built now", state="building")
    elif how == "partial":
        result.add("index", PROBLEM, "no index cache: a hook answers from a few files only",
                   build, state="missing")
    elif loaded is not None and loaded.build_needed and not loaded.left_out:
        # Behind in its weights (an average moved) or in files each process reads again:
        # every memory is still found, so no problem (it said "0 changed files ... missed").
        result.add("index", NOTE, "the index cache is behind: no hook misses a memory, but each "
                   "reads some files again or weighs words by old averages", build,
                   state="behind")
    elif loaded is not None and loaded.build_needed:
        result.add("index", PROBLEM,
                   f"the index cache is stale ({loaded.left_out} changed files are not in it): "
                   "a hook misses them", build, state="stale", changed=loaded.left_out)
    else:
        result.add("index", OK, "the index cache is fresh", state="fresh")
    _check_daemon(result, folder, building=building, answering=answering, env=env)
    return store


def _check_daemon(result: Checkup, folder: MemoryFolder, *, building: bool, answering: bool,
                  env: Mapping[str, str]) -> None:
    from .daemon import LOG_FILE
    from .daemon_start import DAEMON_ENV

    if answering:
        result.add("daemon", OK, "running: a sage-mem process (serve, ui or a daemon) answers "
                   "this folder's hooks", state="running")
        return
    if building:
        result.add("daemon", OK, "building the index", state="building")
        return
    last = _last_line(folder.state_dir / LOG_FILE)
    mode = env.get(DAEMON_ENV, "").strip().lower()
    if mode in ("0", "off", "no", "false"):
        result.add("daemon", NOTE, f"not running; {DAEMON_ENV}={mode} keeps hooks from "
                   "starting one (each hook reads the cache itself)", state="off")
    elif last:
        result.add("daemon", OK, f"idle: not running (a hook starts one); its last word: {last}",
                   state="idle")
    else:
        result.add("daemon", OK, "not started yet (the next hook starts one)",
                   state="not started")


def _build_lock(folder: MemoryFolder) -> Path:
    from .daemon_start import build_lock_path

    return build_lock_path(folder)


def _hook_lock(folder: MemoryFolder) -> Path:
    from .hook_socket import socket_name

    return folder.state_dir / (socket_name(str(folder.root))[: -len(".sock")] + ".lock")


def _held(path: Path) -> bool:
    """Whether a process holds the flock on `path` (an existing file: none is made)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # a shared lock taken is let go with the descriptor
    return False


def _last_line(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 4096))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


# the semantic extra


def _check_semantic(result: Checkup, store: Any, dir_flag: str, env: Mapping[str, str]) -> None:
    from ..search import embedder
    from ..search.vectors import memory_text_hash, stored_hashes, vectors_path

    if env.get(embedder.SEMANTIC_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        result.add("semantic", NOTE, f"turned off ({embedder.SEMANTIC_ENV}=0): search is "
                   "lexical", state="off")
        return
    if embedder.available() is None:
        result.add("semantic", NOTE, "the extra is not installed: search is lexical (words "
                   "and characters, no model)", f"to add it: {embedder.INSTALL_HINT}",
                   state="not installed")
        return
    stored = stored_hashes(vectors_path(store.folder)) or {}
    memories = store.list()
    lacking = sum(1 for memory in memories if stored.get(memory.id)
                  != memory_text_hash(memory.description, memory.body))
    if lacking:
        result.add("semantic", NOTE, f"installed; {lacking} of {len(memories)} memories have "
                   "no vector, or one made before their last change (search finds them by "
                   "their words meanwhile)",
                   f"sage-mem {dir_flag}embed (serve, ui and the daemon make them too)",
                   state="installed", lacking=lacking)
    else:
        result.add("semantic", OK, "installed; every memory has its vector",
                   state="installed", lacking=0)


# sync


def _check_sync(result: Checkup, folder: MemoryFolder, dir_flag: str, *, remote: bool) -> None:
    from ..sync import auto
    from ..sync.git import Git, git_environment, shown_url
    from ..sync.steps import held_back

    root = folder.root
    if not (root / ".git").exists():
        result.add("sync", NOTE, "not a git repository: nothing is synced",
                   f"to sync: sage-mem {dir_flag}sync --remote URL", state="off")
        return
    git = Git(root)
    try:
        url = git.remote_url()
        git_dir = git.git_dir
    except SageMemError as exc:
        result.add("sync", PROBLEM, f"git cannot read the repository: {exc}",
                   f"git -C {shlex.quote(str(root))} status")
        return
    autosync = "on" if auto.enabled(root, folder.state_dir) else "off"
    fetched = _modified(git_dir / "FETCH_HEAD")
    last = f"last fetched {fetched}" if fetched else "never fetched"
    if url is None:
        result.add("sync", NOTE, f"a git repository with no remote; autosync {autosync}",
                   f"sage-mem {dir_flag}sync --remote URL", remote=None, autosync=autosync)
    else:
        shown = shown_url(url)
        reach = _reach(root, git_environment()) if remote else None
        if reach is not None:
            result.add("sync", PROBLEM, f"the remote {shown} cannot be reached: {reach}",
                       f"check the URL (git -C {shlex.quote(str(root))} remote -v), the network "
                       f"and your credentials; sage-mem {dir_flag}sync --remote URL sets another",
                       remote=shown, autosync=autosync)
        else:
            result.add("sync", OK, f"remote {shown}; autosync {autosync}; {last}",
                       remote=shown, autosync=autosync, lastFetched=fetched)
    offline = auto.read_settings(folder.state_dir).get("offline")
    if isinstance(offline, str):
        result.add("sync", PROBLEM, f"the last background sync failed: {offline}",
                   f"sage-mem {dir_flag}sync (says what fails)")
    try:
        held = held_back(root)
    except SageMemError as exc:
        result.add("sync", PROBLEM, f"cannot list what changed: {exc}", None)
        return
    if held:
        names = "; ".join(f"{item.shown} ({item.reason})" for item in held[:3])
        more = f" and {len(held) - 3} more" if len(held) > 3 else ""
        result.add("sync", PROBLEM,
                   f"{len(held)} changed file{'s' if len(held) != 1 else ''} held back from "
                   f"sync, kept on this machine only: {names}{more}",
                   "take the secret out of each (sage-mem edit ID); the next sync commits it",
                   heldBack=[item.to_dict() for item in held])


def _reach(root: Path, env: Mapping[str, str]) -> str | None:
    """None when `origin` answers `git ls-remote`; else why not, in one line."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-remote", "--heads", "origin"], capture_output=True,
            env={**env, "GIT_TERMINAL_PROMPT": "0"}, timeout=REMOTE_SECONDS, check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {REMOTE_SECONDS:.0f} s"
    except OSError as exc:
        return str(exc.strerror or exc)
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines()
             if line.strip()]
    return (lines[0] if lines else f"git exited with status {done.returncode}")[:300]


def _modified(path: Path) -> str | None:
    try:
        moment = datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0)
    except OSError:
        return None
    return moment.isoformat().replace("+00:00", "Z")


# the dream


def _check_dream(result: Checkup, store: Any, dir_flag: str, env: Mapping[str, str]) -> None:
    from ..dream import DreamConfig, list_runs
    from ..dream.gates import load_state, time_gate
    from ..dream.paths import DreamPaths
    from .hooks import autodream_enabled

    runs = [run for run in list_runs(store) if run.kind == "dream"]
    if not runs:
        result.add("dream", OK, "no dream run yet", state="none")
    else:
        run = runs[-1]
        if run.status == "rolled-back":  # undone (a run interrupted, or not liked): settled
            result.add("dream", OK, f"last run {run.run_id} ({run.mode}) rolled back by "
                       f"{run.rolled_back_by}", runId=run.run_id, status=run.status)
        elif run.status != "finished" or run.error:
            why = f": {run.error}" if run.error else ""
            result.add("dream", PROBLEM,
                       f"the last dream run {run.run_id} ({run.mode}) is {run.status}{why}",
                       f"sage-mem {dir_flag}runs shows it; sage-mem {dir_flag}rollback "
                       f"{run.run_id} --dry-run shows what it changed; sage-mem {dir_flag}dream "
                       "runs again", runId=run.run_id, status=run.status)
        else:
            result.add("dream", OK, f"last run {run.run_id} ({run.mode}) finished",
                       runId=run.run_id, status=run.status)
    if not autodream_enabled(store, env):
        result.add("dream", OK, "automatic runs are off (the settings' autoFromHook)",
                   gate="off")
        return
    paths = DreamPaths(store.folder)
    try:
        config = DreamConfig.load(paths.config_file)
    except SageMemError as exc:
        result.add("dream", PROBLEM, f"its settings cannot be read: {exc}",
                   f"fix {paths.config_file}, or set it again on the page")
        return
    gate = time_gate(load_state(paths), config, datetime.now(UTC))
    if gate.open:
        result.add("dream", OK, f"automatic runs are on ({config.auto_mode}); the time gate is "
                   "open: the next session start runs one if enough sessions passed",
                   gate="open")
    else:
        result.add("dream", OK, f"automatic runs are on ({config.auto_mode}); the {gate.gate} "
                   f"gate is closed: {gate.detail}", gate=gate.gate or "closed")


# the clients


def _check_clients(result: Checkup, folder: Path, *, project_dir: Path, home: Path,
                   codex_home: Path | None) -> None:
    from .install import CLIENTS, SCOPES, installed

    found = 0
    started: dict[tuple[str, ...], str | None] = {}
    for client in CLIENTS:
        for scope in SCOPES:
            entry = installed(client, scope, project_dir=project_dir, home=home,
                              codex_home=codex_home)
            where = f"{client} ({scope})"
            for why in entry.unreadable:
                result.add("client", PROBLEM, f"{where}: {why}",
                           "fix the file (sage-mem reads and edits only valid files)")
            if not entry.present:
                continue
            found += 1
            _check_install(result, entry, where, folder, home, started)
    if not found:
        result.add("client", NOTE, f"no client has sage-mem installed for {project_dir} or for "
                   "your user: agents do not see this memory",
                   "sage-mem install claude-code (or cursor, codex)")


def _check_install(result: Checkup, entry: Any, where: str, folder: Path, home: Path,
                   started: dict[tuple[str, ...], str | None]) -> None:
    reinstall = f"sage-mem install {entry.client} --scope {entry.scope}"
    missing = [sub for sub in entry.expected_hooks if sub not in entry.hooks]
    programs: list[tuple[str, list[str]]] = []
    folders: set[str] = set()
    server = entry.server
    if server is None:
        result.add("client", PROBLEM, f"{where}: hooks but no MCP server in {entry.server_file}",
                   reinstall)
    else:
        command = server.get("command")
        args = server.get("args")
        args = [str(a) for a in args] if isinstance(args, list) else []
        if isinstance(command, str) and command:
            programs.append(("MCP server", [command, *args[:-1]] if args[-1:] == ["serve"]
                             else [command, *args]))
        server_env = server.get("env")
        named = server_env.get("SAGE_MEM_DIR") if isinstance(server_env, Mapping) else None
        folders.add(str(named) if named else "the default folder")
    for sub, command in sorted(entry.hooks.items()):
        words = shlex.split(command)[:-2]
        program, dirs = _without_dirs(words)
        programs.append((f"{sub} hook", program))
        folders.add(dirs[0] if dirs else "the default folder")
    if missing:
        result.add("client", PROBLEM, f"{where}: hooks missing: {', '.join(missing)}", reinstall)
    users: dict[tuple[str, ...], list[str]] = {}
    for what, program in programs:
        users.setdefault(tuple(program), []).append(what)
    broken = False
    for key, whats in users.items():
        if key not in started:
            started[key] = _starts(list(key))
        why = started[key]
        if why is None:
            continue
        broken = True
        hooks = [what for what in whats if what.endswith(" hook")]
        users_named = [what for what in whats if not what.endswith(" hook")]
        if hooks:
            users_named.append(f"{len(hooks)} hook{'s' if len(hooks) != 1 else ''}")
        fix = (f"put `{key[0]}` on PATH (pipx, or its virtualenv's bin/), or {reinstall} "
               "--absolute" if key == ("sage-mem",) and "PATH" in why
               else f"{reinstall} (writes the command of the sage-mem you run it with)")
        result.add("client", PROBLEM,
                   f"{where}: the {' and the '.join(users_named)} run `{shlex.join(key)}`, "
                   f"which {why}", fix, program=list(key))
    # What a client's command with no folder uses (unless the client's own environment
    # sets SAGE_MEM_DIR, which these files do not show).
    default = str(Path(os.path.abspath(home)) / ".sage-mem" / "memory")
    shown = sorted(folders)
    named_here = {str(folder), *(["the default folder"] if str(folder) == default else [])}
    other = [name for name in shown if name not in named_here]
    files = f"{entry.server_file}" + (f", {entry.hooks_file}" if entry.hooks else "")
    if not broken and not missing and server is not None:
        text = f"{where}: installed ({files})"
        if other:
            text += f"; it uses {', '.join(other)}, not {folder}"
        result.add("client", NOTE if other else OK, text, client=entry.client, scope=entry.scope,
                   folders=shown)


def _without_dirs(words: list[str]) -> tuple[list[str], list[str]]:
    """A hook command's program (its words without `--dir DIR`), and the folders it names."""
    program: list[str] = []
    dirs: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word == "--dir" and at + 1 < len(words):
            dirs.append(words[at + 1])
            at += 2
            continue
        if word.startswith("--dir="):
            dirs.append(word[len("--dir="):])
        else:
            program.append(word)
        at += 1
    return program, dirs


def _starts(program: list[str]) -> str | None:
    """None when `program --version` says it is sage-mem; else what is wrong, in a few words."""
    if not program:
        return "is empty"
    found = shutil.which(program[0])
    if found is None:
        return "is not found" + (" on PATH" if os.sep not in program[0] else "")
    try:
        done = subprocess.run([found, *program[1:], "--version"], capture_output=True,
                              timeout=VERSION_SECONDS, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"did not answer --version within {VERSION_SECONDS:.0f} s"
    except OSError as exc:
        return f"cannot be started ({exc.strerror or exc})"
    said = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0 or not said.startswith("sage-mem "):
        error = done.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = error[-1][:200] if error else f"exit status {done.returncode}"
        return f"fails to start ({tail})"
    return None
