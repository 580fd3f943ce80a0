"""The git merge driver for memory files: merged by rule, or both kept; never conflict markers.

git runs `python -m sage_mem merge-driver %O %A %B %P` (registered by
`git.ensure_setup`) for each `*.md` file both sides changed: the base, ours
(where the result goes), theirs, and the file's path in the work tree. Three
versions of a memory are merged by `memory.merge` (frontmatter key by key:
tags, aliases and supersedes as sets, `updated` the newest, any other key
from the side that changed it; the body line by line):

- everything merges: the result is the memory, and git records it;
- both sides changed the same key to different values, or the same lines of
  the body: the memory keeps ours, with every change of theirs that did
  merge, and theirs is kept whole, byte for byte, as a conflict sibling
  beside it, `<id>.conflict-<machine>.md` (the machine whose version it is;
  `.2`, `.3` … after it when that name holds another version). The audit
  reports siblings (`conflict-sibling`) until a person merges and deletes them.

`MEMORY.md` at the root is sage-mem's index: when it is sage-mem's own, ours is
kept and sync regenerates it from the merged memories; a hand-written one is
merged by lines, both sides' lines kept where they clash (as git's `union`).
A file that is no memory (a name not ending in `.md`: `.gitignore`, routed here by a
remote's `* merge=sage-mem`, or left unmerged by git in sync's own merge) is merged
as text, this side's lines kept and the other's added after them where both changed the
same lines (`merge_other_file`): memory rules and conflict siblings are for memories.

A file that cannot be parsed on some side (invalid YAML, not UTF-8) is merged
as text when that is clean, and otherwise kept both ways as above. The driver
exits 0 whenever it left a result (git then records the path as merged), and
1 only when it could not write one (git then keeps the path unmerged and
`steps` resolves it by the same rules).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..disk.safe_io import conflict_sibling
from ..errors import InvalidMemory
from ..memory import catalog
from ..memory.file_format import DELETE, ParsedFile, edit_frontmatter, parse_bytes
from ..memory.merge import Version, merge_memory, merge_text, same
from .git import MACHINE_TRAILER, THEIRS_ENV, Git, machine_label, write_new

INDEX_PATH = "MEMORY.md"


@dataclass(frozen=True)
class Outcome:
    """A merge's result: the bytes for the file, and whether theirs must be kept beside it."""

    merged: bytes
    keep_theirs: bool
    reasons: tuple[str, ...] = ()


def merge_versions(base: bytes, ours: bytes, theirs: bytes, path: str = "<memory>") -> Outcome:
    """Three versions of one memory file merged by the module's rules (pure)."""
    if ours == theirs or base == theirs:
        return Outcome(ours, False)
    if base == ours:
        return Outcome(theirs, False)
    try:
        parsed = [parse_bytes(raw, path) for raw in (base, ours, theirs)]
    except InvalidMemory:
        return _merge_as_text(base, ours, theirs, "a version cannot be parsed")
    if any(p.frontmatter is not None and not p.rewritable for p in parsed[1:]):
        return _merge_as_text(base, ours, theirs, "a frontmatter cannot be rewritten")
    try:
        result = merge_memory(*(Version(p.meta, p.body) for p in parsed))
    except RecursionError:  # a value nested past what comparing it key by key reaches
        return _merge_as_text(base, ours, theirs, "a frontmatter value is nested too deeply")
    reasons = [f"both changed {c.key}" for c in result.conflicts]
    if not result.body.clean:
        reasons.append("both changed the same lines of the body")
    body = result.body.text("ours")
    try:
        merged = _render(parsed[1], ours, result.meta, body, path)
    except (InvalidMemory, RecursionError):
        return Outcome(ours, True, (*reasons, "the merge cannot be written into ours"))
    return Outcome(merged, bool(reasons), tuple(reasons))


def merge_index(ours: bytes, theirs: bytes, base: bytes) -> bytes:
    """MEMORY.md: sage-mem's own keeps ours (it is regenerated); a person's is merged by lines."""
    texts = [raw.decode("utf-8", "replace") for raw in (base, ours, theirs)]
    if catalog.NOTE in texts[1] or catalog.NOTE in texts[2]:
        return ours
    return merge_text(*texts).text("both").encode("utf-8")


def merge_other_file(path: str, ours: bytes, theirs: bytes, base: bytes) -> bytes | None:
    """A file both sides changed that is no memory (its name does not end in `.md`:
    `.gitignore`, `.gitattributes`, a note someone keeps beside the memories), merged as
    text; where both changed the same lines, ours is kept and each line theirs added
    (in neither ours nor the base) follows it: rules and settings add up, and nothing
    either side wrote is lost. None for a memory, or for bytes that are not text (those
    are kept both ways, as a memory that cannot be parsed is).

    Memory rules never apply to such a file, whatever a `.gitattributes` (a remote's:
    `* merge=sage-mem`) routes to the driver: its conflict sibling would be a `.md`
    file beside it (`.gitignore.conflict-laptop.md`) that nothing reports, and the
    other side's lines would be lost from it."""
    if path.endswith(".md"):
        return None
    outcome = merge_versions(base, ours, theirs, path)
    if not outcome.keep_theirs:
        return outcome.merged  # a clean merge, as the rules make it
    try:
        texts = [raw.decode("utf-8") for raw in (base, ours, theirs)]
    except UnicodeDecodeError:
        return None
    if "\0" in "".join(texts):
        return None
    base_text, ours_text, theirs_text = texts
    known = set(base_text.splitlines()) | set(ours_text.splitlines())
    added = [line for line in theirs_text.splitlines() if line not in known]
    if not added:
        return ours
    lead = "" if not ours_text or ours_text.endswith("\n") else "\n"
    return (ours_text + lead + "\n".join(added) + "\n").encode("utf-8")


def _merge_as_text(base: bytes, ours: bytes, theirs: bytes, why: str) -> Outcome:
    try:
        texts = [raw.decode("utf-8") for raw in (base, ours, theirs)]
    except UnicodeDecodeError:
        return Outcome(ours, True, (why,))
    if "\0" in "".join(texts):
        return Outcome(ours, True, (why,))
    merged = merge_text(*texts)
    if merged.clean:
        return Outcome(merged.text().encode("utf-8"), False)
    return Outcome(ours, True, (why, "both changed the same lines"))


def _render(parsed: ParsedFile, raw: bytes, meta: dict[str, Any], body: str, path: str) -> bytes:
    changes: dict[str, Any] = {
        key: value for key, value in meta.items()
        if key not in parsed.meta or not same(value, parsed.meta[key])
    }
    changes.update({key: DELETE for key in parsed.meta if key not in meta})
    if not changes and body == parsed.body:
        return raw
    if parsed.frontmatter is None and not changes:
        return (("\ufeff" if parsed.bom else "") + body).encode("utf-8")
    return edit_frontmatter(parsed, changes, body=body, path=path).encode("utf-8")


def sibling_path(target: Path, label: str, data: bytes) -> tuple[Path, bool]:
    """Where theirs goes beside `target`: (the path, True when it must still be written).

    A sibling already holding exactly these bytes (a sync killed and run again)
    is used as it is, never written twice.
    """
    for number in range(1, 1000):
        candidate = conflict_sibling(target, label, number)
        if not os.path.lexists(candidate):
            return candidate, True
        try:
            if candidate.is_file() and candidate.read_bytes() == data:
                return candidate, False
        except OSError:
            continue
    raise InvalidMemory(f"{target}: too many conflict siblings", path=target)


def keep_sibling(target: Path, label: str, data: bytes) -> Path:
    """Write theirs beside `target` (never over a file); returns the sibling's path."""
    for _ in range(20):
        candidate, needed = sibling_path(target, label, data)
        if not needed or write_new(candidate, data):
            return candidate
    raise InvalidMemory(f"{target}: could not keep the other version beside it", path=target)


def other_machine(git: Git, path: str, rev: str | None = None) -> str:
    """The machine whose version of `path` is being merged in (its sync trailer, its author)."""
    # A plain `git merge`/`git pull` writes MERGE_HEAD only after its drivers ran; it names
    # the commit being merged in `GITHEAD_<sha>` in their environment.
    named = [key[8:] for key in os.environ if key.startswith("GITHEAD_") and len(key) >= 48]
    rev = rev or os.environ.get(THEIRS_ENV) or (named[0] if len(named) == 1 else None) or (
        git.rev("MERGE_HEAD"))
    if not rev:
        return "other"
    done = git.run(
        "log", "-1", f"--format=%(trailers:key={MACHINE_TRAILER},valueonly,separator=)%x00%an",
        rev, "--", path, check=False,
    )
    trailer, _, author = done.stdout.decode("utf-8", "replace").strip().partition("\0")
    return machine_label(trailer.strip() or author.strip() or "other")


def run_driver(argv: list[str]) -> int:
    """`merge-driver BASE OURS THEIRS PATH`, as git calls it; writes the result into OURS."""
    if len(argv) != 4:
        sys.stderr.write("sage-mem: error: merge-driver needs BASE OURS THEIRS PATH "
                         "(git's %O %A %B %P)\n")
        return 2
    base_file, ours_file, theirs_file, path = argv
    try:
        base, ours, theirs = (Path(f).read_bytes() for f in (base_file, ours_file, theirs_file))
    except OSError as exc:
        sys.stderr.write(f"sage-mem: error: merge-driver cannot read {exc.filename}\n")
        return 1
    if path == INDEX_PATH:
        Path(ours_file).write_bytes(merge_index(ours, theirs, base))
        return 0
    other = merge_other_file(path, ours, theirs, base)
    if other is not None:
        Path(ours_file).write_bytes(other)
        return 0
    outcome = merge_versions(base, ours, theirs, path)
    try:
        if outcome.keep_theirs:
            top = Path(Git(Path.cwd()).text("rev-parse", "--show-toplevel").strip())
            label = other_machine(Git(top), path)
            sibling = keep_sibling(top / path, label, theirs)
            sys.stderr.write(
                f"sage-mem: {path}: {'; '.join(outcome.reasons)}: kept both, the other "
                f"version as {sibling.relative_to(top).as_posix()}\n"
            )
        Path(ours_file).write_bytes(outcome.merged)
    except Exception as exc:  # any failure: leave the path unmerged, sync resolves it
        sys.stderr.write(f"sage-mem: error: merge-driver {path}: {exc}\n")
        return 1
    return 0
