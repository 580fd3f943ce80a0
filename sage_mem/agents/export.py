"""`sage-mem export --jsonl`: every memory as one JSON object a line, what `import jsonl` reads.

One JSON object a line per memory (`Memory.to_dict(body=True)` and `file`,
the file's whole text), by id.
A memory file that cannot be read or parsed is named in the result, with
why, never left out silently. `-o FILE` writes a new file, whole, mode 0600
whatever the umask (memories are private), and never replaces one.
"""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..disk.folder import read_memory
from ..disk.home import expand_home
from ..disk.safe_io import create, text_bytes
from ..errors import FileChanged, SageMemError
from ..memory.file_format import parse_bytes
from ..memory.value import memory_from_meta
from ..store import MemoryStore
from .importers import without_path


@dataclass(frozen=True)
class LeftOut:
    """A memory file an export could not include (it cannot be read or parsed), and why."""

    path: str  # relative to the memory folder, with / separators
    problem: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "problem": self.problem}


@dataclass(frozen=True)
class ExportResult:
    """How many memories an export wrote, and each memory file it had to leave out."""

    exported: int
    left_out: tuple[LeftOut, ...] = ()
    output: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "exported": self.exported,
            "output": str(self.output) if self.output is not None else None,
            "leftOut": [item.to_dict() for item in self.left_out],
        }


def export_jsonl(store: MemoryStore, out: TextIO, *, archived: bool = False,
                 ascii_only: bool = False) -> ExportResult:
    """Write every memory (with `archived`, archived ones too) as one JSON object a line, by id.

    `ascii_only`: JSON's `\\u` escapes for what is not ASCII, for a stream that cannot
    carry it (the same objects once read).

    Each line is `Memory.to_dict()` with the body, and `file`: the file's
    whole text as it is on disk (read again now, so that `sha256` is its own),
    from which `import jsonl` makes the same file again. A memory file that
    cannot be read or parsed has no such object: it is named in the result's
    `left_out`, never left out silently.
    """
    count = 0
    left_out = list(_left_out(store, archived=archived))
    for memory in store.list(archived=archived):
        try:
            raw = read_memory(store.folder, memory.path).raw or b""
            parsed = parse_bytes(raw, memory.path)
            text = raw.decode("utf-8")
        except FileNotFoundError:
            continue  # removed since the index saw it
        except (OSError, SageMemError, UnicodeDecodeError) as exc:
            rel = os.path.relpath(memory.path, store.root).replace(os.sep, "/")
            left_out.append(LeftOut(rel, without_path(str(exc), memory.path)))
            continue
        fresh = memory_from_meta(
            memory.id, memory.path, parsed.meta, parsed.body, sha256=parsed.sha256,
            archived=memory.archived, problems=parsed.problems,
        )
        out.write(json.dumps({**fresh.to_dict(body=True), "file": text},
                             ensure_ascii=ascii_only) + "\n")
        count += 1
    return ExportResult(count, tuple(sorted(left_out, key=lambda item: item.path)))


def export_jsonl_file(store: MemoryStore, target: Path | str, *, archived: bool = False
                      ) -> ExportResult:
    """`export_jsonl` into a new file `target`, private (0600), never replacing a file.

    The file appears whole or not at all. Raises FileChanged, writing
    nothing, when a file is at `target` (or one appears there meanwhile).
    """
    target = Path(os.path.abspath(expand_home(target)))
    if os.path.lexists(target):
        raise FileChanged(f"{target}: exists; an export never replaces a file", path=target)
    buffer = io.StringIO()
    result = export_jsonl(store, buffer, archived=archived)
    create(target, text_bytes(buffer.getvalue()), mode=0o600)  # a path not UTF-8: escaped
    return ExportResult(result.exported, result.left_out, target)


_LOCATION = re.compile(r"^(?::\d+)*: ?")


def _left_out(store: MemoryStore, *, archived: bool) -> tuple[LeftOut, ...]:
    items = []
    for problem in store.problems():
        if store.folder.id_for(problem.path) is None and not (
            archived and store.folder.archived_id_for(problem.path) is not None
        ):
            continue  # MEMORY.md, or an archived file not asked for
        where = str(problem.path)
        message = problem.message
        if message.startswith(where):
            message = _LOCATION.sub("", message[len(where):])
        path = os.path.relpath(problem.path, store.root).replace(os.sep, "/")
        items.append(LeftOut(path, message))
    for folder in store.folder.unlisted_folders():
        path = os.path.relpath(folder, store.root).replace(os.sep, "/") + "/"
        items.append(LeftOut(path, "a folder this process may not list (no permission): "
                                   "the memories in it are not exported"))
    return tuple(sorted(items, key=lambda item: item.path))


__all__ = ["ExportResult", "LeftOut", "export_jsonl", "export_jsonl_file"]
