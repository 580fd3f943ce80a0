"""Claude Code's own auto memory beside sage-mem: the choice `install claude-code` offers.

Claude Code (2.1.332) has a memory of its own: every request tells the model
"You have a persistent file-based memory at `~/.claude/projects/<cwd>/memory/`
… write to it directly" (the Write tool, a `MEMORY.md` index). With sage-mem
installed the model is then told of two memory systems, which split the same
facts between them. Claude Code's switches, read from its binary (`strings`):

- the setting `autoMemoryEnabled` ("Enable auto-memory for this project. When
  false, Claude will not read from or write to the auto-memory directory"),
  read from the merged settings, so a project's `.claude/settings.json` or the
  user's `~/.claude/settings.json` turns it off;
- the environment variable `CLAUDE_CODE_DISABLE_AUTO_MEMORY` (true: off; a
  false value forces it on, over the setting) — a person's shell, not a file
  install edits;
- the setting `autoMemoryDirectory` (where its files go), which Claude Code
  ignores in a project's checked-in `.claude/settings.json` "for security".

The choices (`--claude-memory`):

- `off` (the default): `autoMemoryEnabled: false` in the settings file the
  hooks go in, so the model hears of one memory system, sage-mem's. A person
  who installs sage-mem has chosen it as the agent's memory; two stores that
  each hold half the facts are what they would not expect. Claude Code's files
  stay where they are (install says where, and that `sage-mem import
  claude-code DIR` brings them in).
- `keep`: nothing of Claude Code's changes; install says that the model is
  told of both. If an earlier `off` install changed the setting, `keep` puts
  back what was there.
- Pointing `autoMemoryDirectory` at the sage-mem folder ("share") is not
  offered: the model would still be told of two systems (the request would
  carry both instructions), Claude Code's Write-tool saves would bypass what
  every sage-mem write checks (credentials, `locked: true`, expected sha256,
  size), and it keeps its own `MEMORY.md` index by hand where sage-mem keeps
  the one it writes (DESIGN §3).

What `off` changed is recorded in the state folder (`install-backups/
claude-auto-memory.json`: the settings file and the value it had, or none), so
that `uninstall` (or a `keep` install) puts back exactly that, and only while
the setting is still the `false` install wrote: a value the person set since is
theirs. Without the record (another state folder, a teammate's clone) the
setting is left as it is and the result says so.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..disk.safe_io import atomic_write, make_private_dirs
from . import json_edit

CHOICES = ("off", "keep")
DEFAULT = "off"
SETTING = "autoMemoryEnabled"
RECORD = "claude-auto-memory.json"
_ABSENT = object()


class Change:
    """What one edit of a settings file did to `autoMemoryEnabled` (filled in by `edit`)."""

    def __init__(self) -> None:
        self.before: Any = _ABSENT
        self.after: Any = _ABSENT
        self.changed = False
        self.left_unrecorded = False  # uninstall found `false` it has no record of writing


def turned_off(text: str, change: Change) -> str:
    """`text` (a settings file's JSON, already valid) with `autoMemoryEnabled: false`."""
    data = _data(text)
    change.before = data.get(SETTING, _ABSENT)
    if change.before is False:
        return text
    change.after, change.changed = False, True
    return _set(text, data, False)


def restored(text: str, record: dict[str, Any] | None, change: Change) -> str:
    """`text` with `autoMemoryEnabled` as it was before an `off` install, if `record` (that
    install's note for this file) says it changed it and the value is still its `false`."""
    data = _data(text)
    current = data.get(SETTING, _ABSENT)
    if current is not False:
        return text
    if record is None:
        change.left_unrecorded = True
        return text
    before = record["before"] if "before" in record else _ABSENT
    change.before, change.after, change.changed = current, before, True
    return _set(text, data, before)


def read_record(backups: Path, settings: Path) -> dict[str, Any] | None:
    """What an `off` install recorded for `settings` ({"before": value} or {} for absent)."""
    try:
        records = json.loads((backups / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = records.get(_key(settings)) if isinstance(records, dict) else None
    return entry if isinstance(entry, dict) else None


def write_record(backups: Path, settings: Path, change: Change) -> None:
    """Note (after an `off` install changed it) or forget (after a restore) `settings`' value."""
    path = backups / RECORD
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        records = {}
    if not isinstance(records, dict):
        records = {}
    if change.after is False:
        records[_key(settings)] = {} if change.before is _ABSENT else {"before": change.before}
    else:
        records.pop(_key(settings), None)
    make_private_dirs(backups)
    atomic_write(path, (json.dumps(records, indent=2, ensure_ascii=False) + "\n").encode(),
                 mode=0o600)


def own_memory_folder(home: Path, project: Path) -> Path:
    """Where Claude Code keeps its memory of `project`: `~/.claude/projects/<cwd with every
    character but letters and digits as ->/memory` (as its binary names it)."""
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project)) / "memory"


def memory_files(folder: Path) -> int:
    """How many memory files (`*.md` but the `MEMORY.md` index) Claude Code has in `folder`."""
    try:
        return sum(1 for path in folder.glob("*.md") if path.name != "MEMORY.md")
    except OSError:
        return 0


def _key(settings: Path) -> str:
    return os.path.abspath(settings)


def _data(text: str) -> dict[str, Any]:
    data = json.loads(text) if text.strip() else {}
    return data if isinstance(data, dict) else {}


def _set(text: str, data: dict[str, Any], value: Any) -> str:
    """`text` with the setting at `value` (`_ABSENT`: taken out), changing nothing else."""
    expected = dict(data)
    if value is _ABSENT:
        expected.pop(SETTING, None)
    else:
        expected[SETTING] = value
    if not text.strip():
        return json_edit.dumps(expected, unit="  ") + "\n"
    editor = json_edit.Editor(text)
    found = editor.root.member(SETTING)
    if value is _ABSENT:
        editor.remove_members(editor.root, {SETTING})
    elif found is None:
        editor.add_member(editor.root, SETTING, value)
    else:
        editor.replace(found[2], value)
    try:
        if json.loads(editor.text) == expected:
            return editor.text
    except ValueError:
        pass
    return json_edit.dumps(expected, unit=json_edit.indent_unit(text)) + "\n"
