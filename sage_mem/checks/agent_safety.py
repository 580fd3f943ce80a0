"""Audit checks for what reaches an agent: orders hidden in memory text, names no id can reach.

Called by `checks/audit.py` for each memory in service (not for archived ones, which
are never injected). Reports only, like the rest of the audit:

- `prompt-injection`: text that reads like an order to the agent rather than
  a note (see `checks/prompt_injection.py`): "ignore previous instructions", "忽略之前的指令",
  a fake system prompt, hidden characters. A warning, so that a person looks:
  memories are injected as quoted data either way, but `MEMORY.md`, which
  Claude Code loads as it is, carries every description.
- `unaddressable-name`: a file whose name no id can reach (a control
  character or a backslash in it, `.md.md`, or longer than an id may be): it
  is not indexed, and a newline in it would break a line of `MEMORY.md`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Literal

from ..disk.folder import MemoryFolder
from ..errors import InvalidId
from .prompt_injection import find_injections

CHECKS: dict[str, tuple[Literal["error", "warning"], str]] = {
    "prompt-injection": (
        "warning",
        "memory text that reads like orders to the agent (ignore previous instructions, "
        "a fake system prompt, hidden characters)",
    ),
    "unaddressable-name": (
        "warning", "a file name no id can reach (control characters, backslash, .md.md, too long)",
    ),
}
"""The checks this module adds to `audit.CHECKS`: severity and meaning."""


def findings(folder: MemoryFolder, rel: str, text: str) -> Iterator[tuple[str, int | None, str]]:
    """(check, line, message) for one memory file in service; `text` without its BOM."""
    memory_id = unicodedata.normalize("NFC", rel[:-3])
    try:
        folder.check_reachable(memory_id, path=folder.root / rel)
    except InvalidId as exc:
        yield ("unaddressable-name", None,
               f"{exc}; no command can read it and it is not indexed: rename the file")
    for match in find_injections(text):
        yield ("prompt-injection", match.line,
               f"{match.label}: {match.excerpt!r}; it is injected as data, but check who "
               "wrote it")


__all__ = ["CHECKS", "findings"]
