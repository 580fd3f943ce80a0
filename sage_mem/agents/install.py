"""`sage-mem install` and `uninstall`: sage-mem in an agent client's own configuration files.

Owns editing other programs' config files safely. Each client and scope maps to
files (checked against each client's documentation):

    client       scope    file                              what sage-mem adds
    claude-code  project  <project>/.mcp.json               mcpServers["sage-mem"] (type stdio)
                          <project>/.claude/settings.json   hooks SessionStart, UserPromptSubmit,
                                                            Stop, PreCompact; autoMemoryEnabled
                                                            false (claude_memory.py)
    claude-code  user     ~/.claude.json                    top-level mcpServers["sage-mem"]
                          ~/.claude/settings.json           the same four hooks (and the same)
    cursor       project  <project>/.cursor/mcp.json        mcpServers["sage-mem"]
    cursor       user     ~/.cursor/mcp.json                mcpServers["sage-mem"]
    codex        user     ~/.codex/config.toml              [mcp_servers.sage-mem]
                          ~/.codex/hooks.json               hooks SessionStart, UserPromptSubmit
    codex        project  <project>/.codex/config.toml      [mcp_servers.sage-mem] (if trusted)
                          <project>/.codex/hooks.json       the same two hooks

Codex's hooks.json has Claude Code's shape (event, group, handler) and Codex
(0.171.0, tests/test_real_clients.py) passes both hooks' context to the model
unchanged; it runs a hook only once a person trusted it (`/hooks` in Codex),
which install says. Stop and PreCompact are not registered there: they read
Claude Code's transcript.

The rules every edit keeps:

- Everything that is not ours stays: other servers, other hooks (including
  other hooks on the same events), unknown keys, and in TOML every other table
  and comment byte for byte. Keys a user added to our own entry are kept too.
- Idempotent: our entry is found by name (the `sage-mem` server) or by what it
  runs (a hook command ending in `hook session-start` whose program is
  sage-mem), updated in place when it differs, never duplicated. A second run
  changes nothing and makes no backup.
- Minimal edits: JSON is edited in place (`json_edit`): only sage-mem's
  member, hook group or command text changes, in the file's indentation, a
  one-line object staying on one line; everything else keeps its bytes, so a
  project's diff shows only sage-mem. TOML: only our tables are replaced.
- A file is backed up before it is changed, in the state folder
  (`<state>/install-backups/<the file's path, %-encoded>.<UTC time>`, same
  mode, never overwritten), not beside it: project files are committed, and a
  backup there would be too. Then it is written atomically; a symlinked config
  file is written through to its target.
- `uninstall` takes out exactly that: our server entry and our hooks, a hook
  group or event or `hooks`/`mcpServers` object their removal empties, and a
  file that held nothing else (deleted). An empty folder install made stays.
- A file that cannot be parsed is a one-line error and is never overwritten;
  every file is checked before any is written, so a run changes all its files
  or none.
- Dry run: the same plan and diffs, nothing written, no folder created.

The command written: in project scope, whose files a team commits and shares,
`sage-mem`, found on each person's PATH (`shared_command`; a note says so when
the name does not find this sage-mem here, and how to fix it); in user scope,
or with `absolute=True` (`--absolute`), the absolute path of the `sage-mem`
executable beside the running Python (or on PATH, or `python -m sage_mem`), so
the client can run it outside the virtualenv. A memory folder other than the
default is passed as `--dir` to hook commands and as `SAGE_MEM_DIR` in MCP
entries; one that does not exist is said (the hooks would inject nothing).

Codex's TOML is edited by hand-written code, not tomlkit. Tried with tomlkit
0.15.2: adding `[mcp_servers.sage-mem]` to a file with `[mcp_servers.other]`
then `# a comment about profiles` and `[profiles.fast]` put the new table
between that comment and `[profiles.fast]` (inside the `mcp_servers`
super-table's last position, tearing the comment from the table it is about,
with no blank line before `[profiles.fast]`); deleting the
`[mcp_servers.sage-mem.env]` sub-table also deleted the `# about the tail
table` comment that followed it (tomlkit keeps it as that table's trailing
trivia). Both are tests in tests/test_install.py. The hand-written editor
touches only our tables' lines and checks the result parses to exactly the
intended data (tomllib), else refuses.

This module never imports `mcp`.
"""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..disk.home import expand_home
from ..disk.safe_io import atomic_write, read_file
from ..errors import FolderError, InvalidMemory, SageMemError
from ..memory.value import not_text
from . import claude_memory as own_memory
from .client_config import (
    DIR_ENV,
    EXECUTABLES,
    HOOK_EVENTS,
    SERVER_NAME,
    edit_json_hooks,
    edit_json_server,
    edit_toml_server,
    is_our_hook_entry,
    load_json,
    load_toml,
    nothing_left,
    remove_json_hooks,
    remove_json_server,
    remove_toml_server,
)

CLIENTS = ("claude-code", "cursor", "codex")
SCOPES = ("project", "user")
DEFAULT_SCOPE = {"claude-code": "project", "cursor": "project", "codex": "user"}
BACKUP_FOLDER = "install-backups"
HOOKS_PURPOSE = "SessionStart, UserPromptSubmit, Stop and PreCompact hooks"
CODEX_HOOK_EVENTS = ("SessionStart", "UserPromptSubmit")
CODEX_HOOKS_PURPOSE = "SessionStart and UserPromptSubmit hooks"
SHARED_COMMAND = "sage-mem"
# A client's config read whole to edit it; ~/.claude.json, which holds Claude Code's history
# of projects, grows to megabytes. Past this it is no config (a mistake, /dev/zero).
CONFIG_LIMIT = 64 << 20


@dataclass(frozen=True)
class FileChange:
    """What install did (or, in a dry run, would do) to one config file."""

    path: Path
    purpose: str
    action: str  # "create", "update" or "unchanged"
    diff: str
    backup: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "purpose": self.purpose,
            "action": self.action,
            "diff": self.diff,
            "backup": str(self.backup) if self.backup else None,
        }


@dataclass(frozen=True)
class InstallResult:
    """The outcome of one `install` run: a change (or none) per file, and notes for the user."""

    client: str
    scope: str
    dry_run: bool
    command: tuple[str, ...]
    memory_dir: Path | None
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...] = ()
    removing: bool = False  # an uninstall

    @property
    def files_changed(self) -> list[Path]:
        """Files written (or, in a dry run, that would be written)."""
        return [change.path for change in self.changes if change.action != "unchanged"]

    @property
    def backups(self) -> list[Path]:
        return [change.backup for change in self.changes if change.backup is not None]

    @property
    def changed(self) -> bool:
        return bool(self.files_changed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "scope": self.scope,
            "dryRun": self.dry_run,
            "command": list(self.command),
            "memoryDir": str(self.memory_dir) if self.memory_dir else None,
            "changed": [str(path) for path in self.files_changed],
            "backups": [str(path) for path in self.backups],
            "files": [change.to_dict() for change in self.changes],
            "notes": list(self.notes),
        }

    def format_text(self) -> str:
        lines: list[str] = []
        verb = {"create": "would create", "update": "would update",
                "delete": "would delete"} if self.dry_run else {
            "create": "created", "update": "updated", "delete": "deleted"}
        for change in self.changes:
            if change.action == "unchanged":
                state = "no sage-mem entry" if self.removing else "already set up"
                lines.append(f"{change.path}: {state} ({change.purpose}); nothing to do")
                continue
            lines.append(f"{change.path}: {verb[change.action]} ({change.purpose})")
            if change.backup is not None:
                lines.append(f"  backup: {change.backup}")
        if self.dry_run and self.changed:
            lines.append("")
            lines.extend(change.diff.rstrip("\n") for change in self.changes if change.diff)
            lines.append("")
            lines.append("Dry run: nothing was written.")
        elif not self.changed:
            state = "not installed" if self.removing else "already installed"
            lines.append(f"sage-mem is {state} for {self.client} ({self.scope} scope).")
        else:
            done = "Uninstalled" if self.removing else "Installed"
            lines.append(f"{done} sage-mem for {self.client} ({self.scope} scope).")
        lines.extend(f"Note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"


def default_command() -> list[str]:
    """The absolute command that runs this sage-mem, usable outside its virtualenv."""
    # The script beside the running interpreter is this very installation, even
    # when its virtualenv is not activated (and so not on PATH).
    for name in EXECUTABLES:
        sibling = Path(sys.executable).parent / name
        if sibling.is_file() and os.access(sibling, os.X_OK):
            return [str(sibling)]
    found = shutil.which("sage-mem")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "sage_mem"]


def shared_command() -> tuple[list[str], str | None]:
    """The command for a project's shared files: `sage-mem`, found on each teammate's PATH.

    With a note when the name does not find this sage-mem here (not on PATH,
    or another installation first on it), saying how to put it there.
    """
    mine = default_command()
    found = shutil.which(SHARED_COMMAND)
    if found and os.path.realpath(found) == os.path.realpath(mine[0]):
        return [SHARED_COMMAND], None
    where = (f"`{SHARED_COMMAND}` on your PATH is {found}, another installation than this "
             f"one ({shlex.join(mine)})" if found else f"`{SHARED_COMMAND}` is not on your PATH")
    return [SHARED_COMMAND], (
        f"{where}: this project's files run `{SHARED_COMMAND}` from each person's PATH, so that "
        "they work for every teammate; put it there (`pipx install` or `uv tool install` "
        "sage-mem, or its virtualenv's bin/ on PATH), or install with --absolute to write this "
        "installation's "
        "path instead (for this machine only)"
    )


def _command_for(scope: str, command: list[str] | None, absolute: bool
                 ) -> tuple[list[str], str | None]:
    if command:
        return list(command), None
    if scope == "user" or absolute:
        return default_command(), None
    return shared_command()


def install(
    client: str,
    *,
    scope: str | None = None,
    project_dir: Path,
    home: Path,
    memory_dir: Path | None = None,
    dry_run: bool = False,
    command: list[str] | None = None,
    codex_home: Path | None = None,
    absolute: bool = False,
    backup_dir: Path | None = None,
    claude_memory: str | None = None,
) -> InstallResult:
    """Register sage-mem with `client` (claude-code, cursor, codex) in `scope` (project, user).

    `scope` None picks the client's usual scope (project for claude-code and
    cursor, user for codex). `memory_dir` None, or the default folder, leaves
    the folder to the server's own default. `codex_home` is `$CODEX_HOME`
    (default `home/.codex`). The command written is `command` when given;
    else, in project scope (files a team commits), `sage-mem` from PATH
    (`shared_command`), and in user scope or with `absolute`, this
    installation's absolute path (`default_command`). Backups of changed files
    go to `backup_dir` (the state folder's `install-backups/`; default
    `home/.sage-mem/install-backups`), never beside the file. Raises
    SageMemError for an unknown client or scope and for a config file that
    cannot be parsed (nothing is written then).

    `claude_memory` (claude-code only; default `off`): what becomes of Claude
    Code's own auto memory beside sage-mem (`claude_memory.py`): `off` sets
    `autoMemoryEnabled: false` in the hooks' settings file, `keep` leaves it on
    (and puts back what an earlier `off` changed).
    """
    if client not in CLIENTS:
        raise SageMemError(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")
    scope = scope or DEFAULT_SCOPE[client]
    if scope not in SCOPES:
        raise SageMemError(f"unknown scope {scope!r}: choose project or user")
    if claude_memory is not None and client != "claude-code":
        raise SageMemError("--claude-memory is for claude-code: other clients have no memory "
                           "of their own that sage-mem changes")
    claude_memory = claude_memory or own_memory.DEFAULT
    if claude_memory not in own_memory.CHOICES:
        raise SageMemError(f"unknown --claude-memory {claude_memory!r}: choose "
                           f"{' or '.join(own_memory.CHOICES)}")
    argv, command_note = _command_for(scope, command, absolute)
    if not argv or not all(isinstance(part, str) and part for part in argv):
        raise SageMemError("the sage-mem command must be a non-empty list of arguments")
    project_dir = Path(os.path.abspath(expand_home(project_dir)))
    home = Path(os.path.abspath(expand_home(home)))
    folder = _folder_to_pass(memory_dir, home)
    backups = _backup_dir(backup_dir, home)

    edits: list[tuple[Path, str, Callable[[str], str | None]]] = []
    warnings: list[str] = [command_note] if command_note else []  # said even when nothing changes
    notes: list[str] = []
    used = folder or (Path(os.path.abspath(expand_home(memory_dir))) if memory_dir
                      else home / ".sage-mem" / "memory")
    problem = not_text(f"the memory folder's path {str(used)!r}", str(used))
    if problem:  # the client would read another path: rename the folder
        raise FolderError(f"{problem}; a client's config cannot name it")
    if used.exists() and not used.is_dir():
        warnings.append(f"the memory folder {used} is a file, not a folder: the hooks and the "
                        "server find nothing there (give --dir a memory folder)")
    elif not used.is_dir():
        warnings.append(f"the memory folder {used} does not exist yet: the hooks and the server "
                     f"find nothing until it does (`sage-mem --dir {shlex.quote(str(used))} "
                     "init`)")
    base = project_dir if scope == "project" else home
    entry = _mcp_entry(argv, folder, with_type=client == "claude-code")
    auto_memory = own_memory.Change()  # what the settings edit does to Claude Code's memory

    def server_in_json(path: Path) -> None:
        edits.append((path, "MCP server", lambda text: edit_json_server(text, path, entry)))

    if client == "claude-code":
        server_in_json(project_dir / ".mcp.json" if scope == "project" else home / ".claude.json")
        settings = base / ".claude" / "settings.json"
        commands = {event: _hook_command(argv, folder, sub) for event, sub in HOOK_EVENTS.items()}
        record = own_memory.read_record(backups, settings)
        choice = claude_memory

        def settings_edit(text: str) -> str:
            text = edit_json_hooks(text, settings, commands)
            if choice == "off":
                return own_memory.turned_off(text, auto_memory)
            return own_memory.restored(text, record, auto_memory)

        edits.append((settings, HOOKS_PURPOSE, settings_edit))
        notes.append(
            "Claude Code asks you to approve a project's .mcp.json servers the first time."
            if scope == "project" else
            "Claude Code rewrites ~/.claude.json while it runs: quit it before installing."
        )
    elif client == "cursor":
        server_in_json(base / ".cursor" / "mcp.json")
        notes.append("Cursor gets no hooks: memories reach it through the MCP tools.")
    else:
        config = (project_dir / ".codex" if scope == "project" else codex_home or home / ".codex")
        config = Path(config) / "config.toml"
        edits.append((config, "MCP server", lambda text: edit_toml_server(text, config, entry)))
        codex_hooks = config.with_name("hooks.json")
        wanted = {event: _hook_command(argv, folder, HOOK_EVENTS[event])
                  for event in CODEX_HOOK_EVENTS}
        edits.append((codex_hooks, CODEX_HOOKS_PURPOSE,
                      lambda text: edit_json_hooks(text, codex_hooks, wanted)))
        if scope == "project":
            notes.append("Codex reads a project's .codex/ files only in a trusted project.")
        notes.append("Codex runs a new or changed hook only once you trust it: open /hooks in "
                     "Codex and trust sage-mem's two (until then Codex skips them, silently).")
    notes.append("Restart the client to load the change.")

    plans = [_plan(path, purpose, edit, user=scope == "user") for path, purpose, edit in edits]
    changes: list[FileChange] = []
    for plan in plans:
        changes.append(plan.apply(backups) if not dry_run else plan.preview())
    changed = any(c.action != "unchanged" for c in changes)
    if client == "claude-code":
        if auto_memory.changed and not dry_run:
            own_memory.write_record(backups, base / ".claude" / "settings.json", auto_memory)
        notes.extend(_own_memory_notes(claude_memory, auto_memory, scope, project_dir, home))
    shown = (*warnings, *notes) if changed else tuple(warnings)
    return InstallResult(client, scope, dry_run, tuple(argv), folder, tuple(changes), shown)


def _own_memory_notes(choice: str, change: own_memory.Change, scope: str, project: Path,
                      home: Path) -> list[str]:
    """What install says of Claude Code's own auto memory, by the choice made."""
    where = ".claude/settings.json" if scope == "project" else "~/.claude/settings.json"
    if choice == "keep":
        back = (f" (autoMemoryEnabled in {where} is back to what it was)"
                if change.changed else "")
        return [f"Claude Code's own auto memory stays on{back}: the model is told of both "
                "memory systems, Claude Code's files and sage-mem's, and may keep a fact in "
                "either; `--claude-memory off` leaves sage-mem's alone."]
    whom = "for this project" if scope == "project" else "for you"
    said = (f"Claude Code's own auto memory is off {whom} (autoMemoryEnabled: false in "
            f"{where}), so the model is told of one memory system, sage-mem; "
            "`--claude-memory keep` keeps both, and `sage-mem uninstall claude-code` turns it "
            "back on.")
    notes = [said]
    folder = own_memory.own_memory_folder(home, project)
    count = own_memory.memory_files(folder)
    if scope == "project" and count:
        notes.append(f"Claude Code's {count} memory file{'s' if count != 1 else ''} of this "
                     f"project in {folder} are no longer loaded; `sage-mem import claude-code "
                     f"{shlex.quote(str(folder))}` brings them into sage-mem.")
    elif scope == "user":
        notes.append("Claude Code's memory files (~/.claude/projects/*/memory/) are no longer "
                     "loaded; `sage-mem import claude-code DIR` brings a project's into "
                     "sage-mem.")
    return notes


def uninstall(
    client: str,
    *,
    scope: str | None = None,
    project_dir: Path,
    home: Path,
    dry_run: bool = False,
    codex_home: Path | None = None,
    backup_dir: Path | None = None,
) -> InstallResult:
    """Take out of `client`'s files exactly what `install` put in; everything else stays.

    The `sage-mem` server entry, sage-mem's own hooks (found as install finds
    them: by what they run), and what their removal leaves empty: a hook group
    that held only ours, an event with no group left, `hooks` or `mcpServers`
    with nothing in them, and a file that held nothing else (deleted, as
    before the install). A file is backed up first, as `install` backs up.
    """
    if client not in CLIENTS:
        raise SageMemError(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")
    scope = scope or DEFAULT_SCOPE[client]
    if scope not in SCOPES:
        raise SageMemError(f"unknown scope {scope!r}: choose project or user")
    project_dir = Path(os.path.abspath(expand_home(project_dir)))
    home = Path(os.path.abspath(expand_home(home)))
    base = project_dir if scope == "project" else home
    edits: list[tuple[Path, str, Callable[[str], str | None]]] = []
    auto_memory = own_memory.Change()
    if client == "claude-code":
        mcp = project_dir / ".mcp.json" if scope == "project" else home / ".claude.json"
        settings = base / ".claude" / "settings.json"
        record = own_memory.read_record(_backup_dir(backup_dir, home), settings)
        edits.append((mcp, "MCP server", lambda text: remove_json_server(text, mcp)))

        def settings_edit(text: str) -> str | None:
            load_json(text, settings)  # a file that cannot be parsed: one line, no change
            if text.strip():
                text = own_memory.restored(text, record, auto_memory)
            return nothing_left(remove_json_hooks(text, settings))

        edits.append((settings, HOOKS_PURPOSE, settings_edit))
    elif client == "cursor":
        cursor = base / ".cursor" / "mcp.json"
        edits.append((cursor, "MCP server", lambda text: remove_json_server(text, cursor)))
    else:
        config = (project_dir / ".codex" if scope == "project" else codex_home or home / ".codex")
        config = Path(config) / "config.toml"
        edits.append((config, "MCP server", lambda text: remove_toml_server(text, config)))
        codex_hooks = config.with_name("hooks.json")
        edits.append((codex_hooks, CODEX_HOOKS_PURPOSE,
                      lambda text: remove_json_hooks(text, codex_hooks)))
    plans = [_plan(path, purpose, edit, user=scope == "user", missing_ok=True)
             for path, purpose, edit in edits]
    backups = _backup_dir(backup_dir, home)
    changes = tuple(plan.apply(backups) if not dry_run else plan.preview() for plan in plans)
    changed = any(c.action != "unchanged" for c in changes)
    notes: list[str] = ["Restart the client to load the change."] if changed else []
    if auto_memory.changed:
        if not dry_run:
            own_memory.write_record(backups, base / ".claude" / "settings.json", auto_memory)
        notes.append("Claude Code's own auto memory is as it was before install "
                     "(autoMemoryEnabled).")
    elif auto_memory.left_unrecorded:
        notes.append("autoMemoryEnabled: false (Claude Code's own memory off) was left as it "
                     "is: this state folder has no record of install setting it; take it out "
                     "of .claude/settings.json to turn that memory back on.")
    return InstallResult(client, scope, dry_run, (), None, changes, tuple(notes), removing=True)


def _backup_dir(backup_dir: Path | None, home: Path) -> Path:
    return Path(backup_dir) if backup_dir is not None else home / ".sage-mem" / BACKUP_FOLDER


# planning and writing


@dataclass(frozen=True)
class _Plan:
    path: Path
    purpose: str
    old: str | None
    new: str | None  # None: the file goes (an uninstall that leaves it empty)
    mode: int

    @property
    def action(self) -> str:
        if self.old is None:
            return "unchanged" if self.new is None else "create"
        if self.new is None:
            return "delete"
        return "unchanged" if self.old == self.new else "update"

    def preview(self) -> FileChange:
        diff = "" if self.action == "unchanged" else _diff(self.path, self.old, self.new or "")
        return FileChange(self.path, self.purpose, self.action, diff)

    def apply(self, backups: Path) -> FileChange:
        change = self.preview()
        if change.action == "unchanged":
            return change
        target = Path(os.path.realpath(self.path))
        backup = None
        if self.old is not None:
            backup = _backup(target, backups)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
        if self.new is None:
            target.unlink()
        else:
            atomic_write(target, self.new.encode("utf-8"), mode=self.mode)
        return FileChange(change.path, change.purpose, change.action, change.diff, backup)


def _plan(path: Path, purpose: str, edit: Callable[[str], str | None], *, user: bool,
          missing_ok: bool = False) -> _Plan:
    real = Path(os.path.realpath(path))
    try:  # never waits on a FIFO, never reads /dev/zero for ever
        raw = read_file(real, limit=CONFIG_LIMIT).raw or b""
    except FileNotFoundError:
        if missing_ok:  # nothing to take out of a file that is not there
            return _Plan(path, purpose, None, None, 0o644)
        old = None
    except InvalidMemory as exc:
        reason = str(exc).removeprefix(f"{real}: ")
        if reason == "is a folder":
            reason = "is a folder, not a config file"
        raise SageMemError(f"{path}: {reason}; nothing was changed", path=path) from None
    else:
        try:
            old = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SageMemError(f"{path}: not UTF-8 text; nothing was changed", path=path) from None
    new = edit(old or "")
    if old is not None and new is not None and raw.startswith(b"\xef\xbb\xbf"):
        old, new = "\ufeff" + old, "\ufeff" + new
    elif old is not None and raw.startswith(b"\xef\xbb\xbf"):
        old = "\ufeff" + old
    # A project's config is usually committed and shared; a user's may hold secrets.
    return _Plan(path, purpose, old, new, 0o600 if user else 0o644)


def _backup(target: Path, backups: Path) -> Path:
    """A copy of `target` in the state folder's `install-backups/` (never in the project).

    Named after the file's whole path and the time, so that it says what it is
    a copy of: `%2Fhome%2Fme%2Fapp%2F.mcp.json.20261201T120000Z`.
    """
    from urllib.parse import quote

    from ..disk.safe_io import make_private_dirs

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    data = target.read_bytes()
    mode = target.stat().st_mode & 0o7777
    make_private_dirs(backups)
    n = 1
    while True:
        suffix = "" if n == 1 else f"-{n}"
        backup = backups / f"{quote(str(target), safe='')[:200]}.{stamp}{suffix}"
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            n += 1
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(backup, mode)
        return backup


def _diff(path: Path, old: str | None, new: str) -> str:
    before = _diff_lines(old or "")
    after = _diff_lines(new)
    lines = difflib.unified_diff(
        before, after, fromfile="/dev/null" if old is None else f"{path} (before)",
        tofile=str(path),
    )
    return "".join(lines)


def _diff_lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


# what gets installed


def _folder_to_pass(memory_dir: Path | None, home: Path) -> Path | None:
    if memory_dir is None:
        return None
    folder = Path(os.path.abspath(expand_home(memory_dir)))
    return None if folder == home / ".sage-mem" / "memory" else folder


def _mcp_entry(argv: list[str], folder: Path | None, *, with_type: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if with_type else {}
    entry["command"] = argv[0]
    entry["args"] = [*argv[1:], "serve"]
    entry["env"] = {DIR_ENV: str(folder)} if folder else {}
    return entry


def _hook_command(argv: list[str], folder: Path | None, sub: str) -> str:
    words = [*argv, *(["--dir", str(folder)] if folder else []), "hook", sub]
    return shlex.join(words)


# reading what is installed (`sage-mem doctor`)


@dataclass(frozen=True)
class Installed:
    """What one client's files hold of sage-mem in one scope, as `install` would find it.

    `server` is the `sage-mem` MCP entry (None when absent); `hooks` the command of each of
    sage-mem's hooks found, by hook name (`session-start`, …); `unreadable` a file that
    cannot be parsed, with why (one line).
    """

    client: str
    scope: str
    server_file: Path
    hooks_file: Path | None
    server: Mapping[str, Any] | None
    hooks: Mapping[str, str]
    expected_hooks: tuple[str, ...]
    unreadable: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        return self.server is not None or bool(self.hooks)


def installed(client: str, scope: str, *, project_dir: Path, home: Path,
              codex_home: Path | None = None) -> Installed:
    """Read (never write) sage-mem's entries in `client`'s files for `scope` (see the table in
    the module docstring), as install and uninstall find them."""
    project_dir = Path(os.path.abspath(expand_home(project_dir)))
    home = Path(os.path.abspath(expand_home(home)))
    base = project_dir if scope == "project" else home
    hooks_file: Path | None
    if client == "claude-code":
        server_file = project_dir / ".mcp.json" if scope == "project" else home / ".claude.json"
        hooks_file = base / ".claude" / "settings.json"
        expected = tuple(HOOK_EVENTS.values())
    elif client == "cursor":
        server_file, hooks_file, expected = base / ".cursor" / "mcp.json", None, ()
    else:
        config = project_dir / ".codex" if scope == "project" else codex_home or home / ".codex"
        server_file = Path(config) / "config.toml"
        hooks_file = server_file.with_name("hooks.json")
        expected = tuple(HOOK_EVENTS[event] for event in CODEX_HOOK_EVENTS)
    unreadable: list[str] = []

    def read(path: Path, parse: Callable[[str, Path], dict[str, Any]]) -> dict[str, Any]:
        try:
            text = (read_file(path, limit=CONFIG_LIMIT).raw or b"").decode("utf-8")
        except FileNotFoundError:
            return {}
        except InvalidMemory as exc:  # a FIFO, a folder, a device, too big
            unreadable.append(str(exc))
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            unreadable.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")
            return {}
        try:
            return parse(text, path)
        except SageMemError as exc:
            unreadable.append(str(exc).replace("; fix it first, nothing was changed", ""))
            return {}

    data = read(server_file, load_toml if client == "codex" else load_json)
    servers = data.get("mcp_servers" if client == "codex" else "mcpServers")
    server = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    commands: dict[str, str] = {}
    if hooks_file is not None:
        events = read(hooks_file, load_json).get("hooks")
        for event, sub in HOOK_EVENTS.items():
            groups = events.get(event) if isinstance(events, dict) else None
            for group in groups if isinstance(groups, list) else ():
                entries = group.get("hooks") if isinstance(group, dict) else None
                for entry in entries if isinstance(entries, list) else ():
                    if is_our_hook_entry(entry, sub):
                        commands.setdefault(sub, entry["command"])
    return Installed(client, scope, server_file, hooks_file,
                     server if isinstance(server, Mapping) else None, commands, expected,
                     tuple(unreadable))


__all__ = ["CLIENTS", "SCOPES", "FileChange", "InstallResult", "default_command", "install",
           "shared_command", "uninstall"]
