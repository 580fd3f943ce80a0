"""The audit (DESIGN §7.4): checks the memory folder and reports; it never changes a byte.

`audit(store)` walks the folder itself and reads each file's raw bytes, because
most of what it looks for is what the tolerant parser in `memory/file_format.py` forgives: a
BOM, CRLF endings, duplicate keys, a value cut short by YAML's ` #` comment rule.
It opens files read-only and never writes, not even to the state folder, so the
folder's bytes and mtimes are the same after an audit as before. (The page's
incremental audit, `FileResults` with a path, keeps what each file gave in a
cache file in the state folder; the memory folder is never written.)

Each finding has a stable `check` name (the keys of `CHECKS`) and a severity:
"error" for what loses data, hides a file from the index, or leaks a secret;
"warning" for departures from the conventions of DESIGN §2 and §3. The CLI
exits 1 for an error and 0 for warnings alone (`--strict`: 1 for either), so
that an audit in CI or a pre-commit hook fails on what matters and can be
left on.

What is fine, on purpose:

- No `MEMORY.md` at all (a folder just copied from `memory_template/`): the
  tool writes it on the first change or `sage-mem index`. Only an existing
  index is checked.
- A hand-written `MEMORY.md` (one without sage-mem's note, as Claude Code keeps
  it) is checked for dangling entries and missing memories, but not compared
  byte for byte with what sage-mem would write. A truncated one ("…and N more")
  is not expected to list every memory; which memories it lists depends on
  usage counts, so only the lines it has and its count are checked.
- The `<category>_*.md` prefix is checked at the top level; below it, a first
  folder named after a category (`project/api/auth_flow.md`) stands in for the
  prefix, and any other folder is free-form unless the filename's own prefix
  names a different category. `<category>-*.md` counts as the prefix too, and
  a hyphenated name with no prefix at all (`cluster-crash-notes.md`, as Claude
  Code names its memory files) is not held to the convention; a prefix that
  names another category is.
- A YAML comment after two or more spaces (`trust: 0.7  # fairly sure`) is
  meant; one after a single space inside a text value (`description: use C# #
  not java`, `description: issue #12 is fixed`) is the classic accident.
- Links: `[[id]]` resolves against the folder root, the linking file's folder,
  or the one memory with that file name (as Obsidian does; a name two memories
  share is reported, since a rename could not tell which one it meant: the
  reading is `memory/links.py`'s, as for a rename); `[text](x.md)` against
  the linking file's folder (as a markdown viewer does) or the root. Web links,
  links leaving the folder, and links inside code are not checked; what is
  code and what is a link is `memory/markdown.py`'s, as for the dream (MEMORY.md is
  read the same way).
- Conflict markers are looked for on every line, code blocks included: git puts
  them wherever the conflict is. Secrets too (see `checks/credentials.py`), and every
  finding shows them redacted.

Archived memories (`archive/`) are out of service, so their conventions, links
and index entries are not audited; but a file there still sits in the user's
git history, so it is checked for what is harmful anywhere: `unreadable`,
`conflict-markers` and `secret`. Reports in `autodream/` are the tool's own
output and are not audited.

Why one module: each check is a few lines over the same walk of the folder
(`_Audit`: the raw bytes, the parsed memories, the ids for links and the
index), and `FileResults` keeps exactly the findings that walk makes, per file;
the table of checks (`CHECKS`) at the top is the list a reader looks for.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import re
import time
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

import yaml

from ..disk.folder import ARCHIVE_DIR, INDEX_FILE, MemoryFolder
from ..disk.safe_io import parked_original
from ..errors import InvalidId, InvalidMemory
from ..memory import catalog
from ..memory.file_format import (
    conflict_marker_line,
    parse_bytes,
    parsed_or_none,
    sha256_bytes,
)
from ..memory.json_view import camel_dict
from ..memory.links import Ids, wiki_target
from ..memory.markdown import MARKDOWN_LINK, WIKI_LINK, is_relative_md, linked_file, mask_code
from ..memory.value import CATEGORIES, INVALID, MAX_TAG_LENGTH, MAX_TAGS, Memory, memory_from_meta
from . import agent_safety
from .credentials import (
    decoded_secrets,
    find_secrets,
    find_secrets_in_name,
    redact,
    redact_name,
)
from .prompt_injection import unsafe_name_characters, visible

if TYPE_CHECKING:
    from ..store import MemoryStore

Severity = Literal["error", "warning"]

CHECKS: dict[str, tuple[Severity, str]] = {
    "unreadable": ("error", "cannot be read: permissions, encoding, binary, over 512 KB, symlink"),
    "invalid-yaml": ("error", "frontmatter is not valid YAML"),
    "unclosed-frontmatter": ("error", "frontmatter opens with --- but never closes"),
    "frontmatter-not-mapping": ("error", "frontmatter is YAML but not `key: value` pairs"),
    "duplicate-key": ("error", "a frontmatter key appears twice; YAML keeps only the last"),
    "yaml-comment-cut": ("error", "a value was cut at ' #', which YAML reads as a comment"),
    "conflict-markers": ("error", "git conflict markers left in the file"),
    "conflict-sibling": (
        "warning",
        "another version of a memory kept beside it: by `sage-mem sync` when two machines"
        " changed it, or when two saves crossed a write here (`.conflict-local`)",
    ),
    "interrupted-delete": (
        "warning",
        "a file an interrupted `sage-mem delete` left parked (`.NAME.PID.HEX.deleting`): "
        "remove it to finish the delete, or rename it back to keep the memory",
    ),
    "secret": ("error", "a credential (API key, token, password, private key) in a memory"),
    "no-frontmatter": ("warning", "file has no frontmatter (no description, no category)"),
    "missing-description": ("warning", "frontmatter has no description"),
    "missing-category": ("warning", "frontmatter has no category (or type)"),
    "unknown-category": ("warning", f"category is not one of {', '.join(CATEGORIES)}"),
    "category-prefix": ("warning", "category and the <category>_*.md filename prefix disagree"),
    "tags-limit": ("warning", f"over {MAX_TAGS} tags, or a tag over {MAX_TAG_LENGTH} characters"),
    "invalid-value": ("warning", "a frontmatter value of the wrong type or out of range"),
    "bom": ("warning", "file starts with a UTF-8 byte order mark"),
    "crlf": ("warning", "CRLF line endings (sage-mem writes LF)"),
    "broken-link": ("warning", "[[id]] or [text](x.md) link to a memory that does not exist"),
    "dangling-index-entry": ("warning", "MEMORY.md links to a file that does not exist"),
    "missing-from-index": ("warning", "a memory is not listed in MEMORY.md"),
    "index-stale": ("warning", "MEMORY.md differs from what `sage-mem index` would write"),
    "index-too-large": ("warning", "MEMORY.md is over 200 lines or 25,000 bytes"),
    "unsafe-name": (
        "warning",
        "a file name with a backtick, or a control, separator, bidi or invisible character, "
        "which can pass for other text where the name is shown",
    ),
}
"""Every check: its severity and what it means."""
CHECKS.update(agent_safety.CHECKS)


@dataclass(frozen=True)
class Finding:
    """One problem in one file; `path` is relative to the memory folder, `line` 1-based."""

    check: str
    path: str
    message: str
    line: int | None = None
    severity: Severity = "warning"

    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.path, self.line or 0, self.check, self.message)

    def format_text(self) -> str:
        """`path:line: check: message`, the controls of a file's name (a remote's `\\e]0;…`)
        named (`<U+001B>`), never sent to the terminal."""
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return visible(f"{where}: {self.check}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self, "check severity path line message")


@dataclass(frozen=True)
class AuditReport:
    """Every finding, in a stable order (path, line, check), and how many files were checked."""

    findings: tuple[Finding, ...] = ()
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    def exit_status(self, *, strict: bool = False) -> int:
        """1 when there is an error (with `strict`, any finding), else 0: the CLI's status."""
        return 1 if self.errors or (strict and self.findings) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "count": len(self.findings),
            "checked": self.checked,
        }

    def format_text(self) -> str:
        """One line per finding, `path:line: check: message`; empty when the folder is clean."""
        return "".join(f.format_text() + "\n" for f in self.findings)


def audit(store: MemoryStore, *, cache: FileResults | None = None,
          progress: Callable[[int, list[Finding]], None] | None = None,
          pause: Callable[[], None] | None = None,
          changed: Collection[Path] | None = None) -> AuditReport:
    """Check the store's memory folder and report; reads files, writes nothing.

    Takes a MemoryStore (only its `folder` and `problems()` are used, so the
    audit sees the disk as it is now, not as the index last saw it).
    Raises FolderError when the folder is missing. `cache`, `progress`, `pause`, `changed`:
    see `audit_folder`.
    """
    return audit_folder(store.folder, known_problems=store.problems(), cache=cache,
                        progress=progress, pause=pause, changed=changed)


PROGRESS_FILES = 200  # files read between two `progress` reports (a second's worth or less)


def audit_folder(
    folder: MemoryFolder, *, known_problems: Iterable[Any] = (), cache: FileResults | None = None,
    progress: Callable[[int, list[Finding]], None] | None = None,
    pause: Callable[[], None] | None = None, changed: Collection[Path] | None = None,
) -> AuditReport:
    """The audit of one memory folder (see `audit`).

    With `cache`, a file whose stat has not changed since the last audit with
    that cache is not read again: its own findings are reused, and only the
    checks across files (links, MEMORY.md) run over everything. `progress` is
    told how many files were checked so far and given the list of what they
    found (the audit's own, growing: copy it to keep it), every PROGRESS_FILES
    files: the page shows a first audit's results as they come (the checks
    across files come at the end). `pause` is called before each file: the page's
    audit waits there while a person's request is answered.

    `changed` (with a `cache` that walked the folder before): the only files that may differ
    since that audit (the page knows them from its listing of the memories after each
    change). The folder is not walked again and no other file is looked at: the files of
    the last walk, with these added or taken out, give what they gave. Without it the whole
    folder is walked and every file's stat compared (at 50,000 memories seconds of CPU,
    after each change of one).
    """
    folder.check_exists()
    run = _Audit(folder)
    due = PROGRESS_FILES
    looked = cache.walk_after(folder, changed) if cache is not None and changed is not None \
        else None
    files: Iterable[tuple[Path, bool]]
    if cache is not None and looked is not None:
        files = cache.resume(run, looked)
    else:
        files = ((path, archived) for archived in (False, True)
                 for path in folder.iter_files(archived=archived))
    walk: dict[str, tuple[Path, bool]] = {}
    for path, archived in files:
        if pause is not None:
            pause()
        if cache is None:
            run.check_file(path, archived=archived)
        elif looked is None:
            walk[str(path)] = (path, archived)
            cache.check_file(run, path, archived=archived)
        elif str(path) in looked or not cache.reuse(run, path, archived=archived):
            cache.check_file(run, path, archived=archived)
        due -= 1
        if not due and progress is not None:
            due = PROGRESS_FILES
            progress(run.checked, run.findings)
    unlisted: list[Path] = []
    if cache is not None:
        cache.forget_except(run.walked)
        if looked is None:
            cache.parked = list(folder.iter_parked(unlisted))
            cache.unlisted = unlisted
            cache.remember_walk(walk)
        cache.remember_paths(run)
    parked = list(folder.iter_parked(unlisted)) if cache is None else \
        [path for path in cache.parked if os.path.lexists(path)]
    for parked_file in parked:
        run.check_parked(parked_file)
    if cache is not None:  # what the last whole walk could not list, unless it can be now
        unlisted = [path for path in cache.unlisted
                    if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK)]
    for folder_path in unlisted:
        run.check_unlisted(folder_path)
    if cache is None:
        for body in run.bodies:
            run.check_links(body)
    else:
        cache.check_links(run)
    run.check_index()
    if cache is not None:
        cache.save()
    for problem in known_problems:
        run.check_known_problem(problem)
    findings = sorted(run.findings, key=Finding.sort_key)
    return AuditReport(tuple(findings), run.checked)


_Kept = tuple[Any, list["Finding"], list["_Body"], list[Memory]]
CACHE_VERSION = 2  # 2: a line of JSON per SAVE_LINE files (1: one document)
SAVE_LINE = 500


class FileResults:
    """Each file's own audit results, kept while its stat signature stays the same.

    An open page audits after every change; with this, a change costs the
    reading of the files that changed, not of the whole folder. Each file's
    link findings are kept too, while the set of files they were checked
    against stays the same (`check_links`).

    With `path` (a file in the state folder, never in the memory folder), what
    is kept outlives the process: the next launch's first audit reads only the
    files whose stat changed since. What the saved file cannot hold (a file's
    parsed memory, for the links and MEMORY.md) is taken from `memories`, the
    store's index, only when the index holds that very version of the file
    (its sha256); any other file is read and checked again. The saved findings
    are the audit's own output, so the rules stay here, in one place.
    """

    def __init__(self, path: Path | None = None,
                 memories: Callable[[str], Memory | None] | None = None,
                 pause: Callable[[], None] | None = None) -> None:
        self._files: dict[tuple[str, bool], _Kept] = {}
        self._shas: dict[tuple[str, bool], str] = {}
        self._links: dict[str, tuple[Any, list[Finding]]] = {}
        self._linked_against: Any = None
        self._path = path
        self._memories = memories
        self._saved: dict[tuple[str, bool], list[Any]] = {}
        self._saved_links: dict[str, tuple[Any, list[Any]]] = {}
        self._saved_against: Any = None
        self._saved_at: float | None = None
        self._changed = False
        self._walk: dict[str, tuple[Path, bool]] | None = None  # the last walk's files
        self._ids: tuple[str, Ids] | None = None  # the ids the last links were checked against
        self._fingerprinted: tuple[set[str], set[str], str] | None = None
        # What the last audit walked: its files' paths, and the memory and archive paths (NFC).
        self._last: tuple[set[str], set[str], set[str]] | None = None
        self.parked: list[Path] = []  # and the parked files it found
        self.unlisted: list[Path] = []  # and the folders it could not list
        if path is not None:
            self._load(path, pause)

    def check_file(self, run: _Audit, path: Path, *, archived: bool) -> None:
        rel = run.rel(path)
        try:
            st, lst = os.stat(path), os.lstat(path)
            signature: Any = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns,
                              lst.st_ino, lst.st_mtime_ns)
        except OSError:
            signature = None
        key = (rel, archived)
        kept = self._files.get(key)
        if signature is not None and kept is None:
            kept = self._from_saved(run, key, path, signature)
        if signature is not None and kept is not None and kept[0] == signature:
            self._take(run, rel, kept, archived=archived)
            return
        self._changed = True
        marks = len(run.findings), len(run.bodies), len(run.memories)
        run.check_file(path, archived=archived)
        self._links.pop(rel, None)
        if signature is None:
            self._files.pop(key, None)
            return
        self._files[key] = (signature, run.findings[marks[0]:], run.bodies[marks[1]:],
                            run.memories[marks[2]:])
        self._shas[key] = run.shas.get(rel, "")

    def reuse(self, run: _Audit, path: Path, *, archived: bool) -> bool:
        """What `path` gave at the last audit, taken again without a look at the file (it did not
        change, says the caller); False when nothing is kept of it."""
        rel = run.rel(path)
        kept = self._files.get((rel, archived))
        if kept is None:
            return False
        self._take(run, rel, kept, archived=archived)
        return True

    @staticmethod
    def _take(run: _Audit, rel: str, kept: _Kept, *, archived: bool) -> None:
        """A file's results of the last audit, counted in `run` as if it had been checked."""
        run.walked.add(rel)
        run.checked += 1
        (run.archived if archived else run.active).add(_nfc(rel))
        run.findings.extend(kept[1])
        run.bodies.extend(kept[2])
        run.memories.extend(kept[3])

    def remember_walk(self, walk: dict[str, tuple[Path, bool]]) -> None:
        """The files a whole walk found (by path), for the audits after it (`walk_after`)."""
        self._walk = walk

    def remember_paths(self, run: _Audit) -> None:
        self._last = (run.walked, run.active, run.archived)

    def resume(self, run: _Audit, looked: set[str]) -> list[tuple[Path, bool]]:
        """`run` as the last audit left it, but for the files `looked` at again (after
        `walk_after`), which are the files to check: what every other file gave, taken in
        bulk. (Through `reuse`, file by file, when a path is not NFC: two files may share a
        memory path then.)"""
        assert self._walk is not None
        if self._last is None or not all(key.isascii() or _nfc(key) == key for key in looked) \
                or not self._nfc_only():
            return list(self._walk.values())
        walked, active, archived = self._last
        rels = {run.rel(Path(key)) for key in looked}
        run.walked = walked - rels
        run.active = active - rels
        run.archived = archived - rels
        run.checked = len(run.walked)
        for (rel, _), kept in self._files.items():
            if rel not in rels:
                run.findings.extend(kept[1])
                run.bodies.extend(kept[2])
                run.memories.extend(kept[3])
        return [self._walk[key] for key in looked if key in self._walk]

    def _nfc_only(self) -> bool:
        """Every file of the last walk has an NFC path (so a path is its memory path)."""
        if self._last is None:
            return False
        walked, active, archived = self._last
        return len(walked) == len(active) + len(archived) and active | archived >= walked

    def walked(self) -> list[tuple[Path, bool]]:
        """The files of the last walk, as changed since (`walk_after`)."""
        return list(self._walk.values()) if self._walk is not None else []

    def walk_after(self, folder: MemoryFolder, changed: Collection[Path]) -> set[str] | None:
        """The last walk's files with `changed` (files that may have come, gone or changed)
        put in or taken out as they are now; the paths (as text) to look at again. None when
        there was no walk to go on (the folder is walked)."""
        if self._walk is None:
            return None
        looked: set[str] = set()
        for each in changed:
            path = Path(os.path.abspath(each))
            key = str(path)
            looked.add(key)
            self._walk.pop(key, None)
            if not os.path.lexists(path) or (path.is_dir() and not path.is_symlink()):
                continue
            if folder.archived_id_for(path) is not None:
                self._walk[key] = (path, True)
            elif folder.id_for(path) is not None:
                self._walk[key] = (path, False)
        return looked

    def _from_saved(self, run: _Audit, key: tuple[str, bool], path: Path,
                    signature: Any) -> _Kept | None:
        """A file's results from the saved file, when its stat and its version in the index
        are still those of the saved results; None when it must be read again."""
        saved = self._saved.pop(key, None)
        if saved is None or list(signature) != saved[0]:
            return None
        _, sha, first_line, findings, has_memory = saved
        memories: list[Memory] = []
        bodies: list[_Body] = []
        if has_memory:
            # The id the index would give it; any other reading fails the sha check below.
            memory = self._memories(_nfc(key[0][:-3])) if self._memories is not None else None
            if memory is None or memory.sha256 != sha:
                return None
            memories.append(memory)
            if first_line is not None:
                bodies.append(_Body(key[0], first_line, memory.body))
        kept = (signature, [Finding(*f) for f in findings], bodies, memories)
        self._files[key] = kept
        self._shas[key] = sha
        return kept

    def check_links(self, run: _Audit) -> None:
        """The links of every body: a body's findings are reused while neither it nor the
        files it was checked against (the folder's memory and archive paths) changed."""
        last = self._fingerprinted
        if last is not None and last[0] == run.active and last[1] == run.archived:
            against = last[2]  # the same paths (a set comparison, not a sort and a hash)
        else:
            against = _fingerprint(run.active, run.archived)
            self._fingerprinted = (set(run.active), set(run.archived), against)
        saved, self._saved_links = self._saved_links, {}
        if against != self._linked_against:
            self._links.clear()
            self._linked_against = against
            self._changed = self._changed or not (saved and against == self._saved_against)
        if self._ids is not None and self._ids[0] == against:
            run.__dict__["ids"] = self._ids[1]  # the same paths: the same ids (`_Audit.ids`)
        if saved and against == self._saved_against:
            for rel, (signature, findings) in saved.items():
                if rel not in self._links:
                    self._links[rel] = (tuple(signature), [Finding(*f) for f in findings])
        for body in run.bodies:
            kept = self._links.get(body.rel)
            signature = self._files.get((body.rel, False), (None,))[0]
            if kept is not None and kept[0] == signature:
                run.findings.extend(kept[1])
                continue
            mark = len(run.findings)
            run.check_links(body)
            self._links[body.rel] = (signature, run.findings[mark:])
            self._changed = True
        if "ids" in run.__dict__:  # made (a link was checked): kept for the next audit
            self._ids = (against, run.ids)

    def read_memories_from(self, memories: Callable[[str], Memory | None]) -> None:
        """Where the saved results' memories come from (the store's index, as it is now)."""
        self._memories = memories

    def forget_links(self) -> None:
        """Check every link again next time (a link may name a file that is no memory, which
        the file signatures do not follow)."""
        self._links.clear()
        self._linked_against = None

    def forget_except(self, walked: set[str]) -> None:
        """Drop what is kept of files the last audit no longer found."""
        for key in [key for key in self._files if key[0] not in walked]:
            del self._files[key]
            self._shas.pop(key, None)
            self._links.pop(key[0], None)
            self._changed = True
        self._saved.clear()

    SAVE_EVERY_SECONDS = 60.0

    def save(self) -> None:
        """Keep what the last audit found in the state folder, when it changed: after the first
        audit, then at most once a minute (an open page audits after every change, and a file
        changed since the last save is only read again at the next launch)."""
        if self._path is None or not self._changed:
            return
        now = time.monotonic()
        if self._saved_at is not None and now - self._saved_at < self.SAVE_EVERY_SECONDS:
            return
        self._saved_at = now
        from ..disk.safe_io import atomic_write, make_private_dirs, text_bytes

        files = []
        for (rel, archived), (signature, findings, bodies, memories) in self._files.items():
            files.append([rel, archived, list(signature), self._shas.get((rel, archived), ""),
                          bodies[0].first_line if bodies else None,
                          [[f.check, f.path, f.message, f.line, f.severity] for f in findings],
                          bool(memories)])
        links = {rel: [list(signature), [[f.check, f.path, f.message, f.line, f.severity]
                                         for f in findings]]
                 for rel, (signature, findings) in self._links.items() if signature is not None}
        # One line of JSON per SAVE_LINE entries: made (and read) a line at a time, so that the
        # interpreter goes to other threads between two (one call over the whole of 50,000
        # memories held it for 0.2-2 s, a change on disk waiting behind it).
        lines = [json.dumps({"version": CACHE_VERSION, "against": self._linked_against})]
        for at in range(0, len(files), SAVE_LINE):
            lines.append(json.dumps({"files": files[at:at + SAVE_LINE]}, ensure_ascii=False))
        linked = list(links.items())
        for at in range(0, len(linked), SAVE_LINE):
            lines.append(json.dumps({"links": dict(linked[at:at + SAVE_LINE])},
                                    ensure_ascii=False))
        try:
            make_private_dirs(self._path.parent)
            atomic_write(self._path, text_bytes("\n".join(lines)), durable=False)
        except OSError:
            return  # a cache: the next audit reads the files again
        self._changed = False

    def _load(self, path: Path, pause: Callable[[], None] | None = None) -> None:
        """`pause` is called before each line: a launch's page reads this (16 MB at 50,000
        memories, 0.3-0.5 s of CPU) beside its first requests, which it waits for."""
        from ..disk.bulk import gc_paused

        try:
            with gc_paused():  # (hundreds of thousands of lists, none garbage)
                lines = iter(path.read_bytes().split(b"\n"))
                head = json.loads(next(lines))
                parts: Iterable[Any] = (json.loads(line) for line in lines)
                if head.get("version") == 1:  # one document (before 2026-12): still read
                    parts = [{"files": head["files"], "links": head["links"]["files"]}]
                    head = {"version": CACHE_VERSION, "against": head["links"]["against"]}
                if head.get("version") != CACHE_VERSION:
                    return
                self._saved_against = head["against"]
                for part in parts:
                    if pause is not None:
                        pause()
                    for rel, archived, signature, sha, first_line, findings, has_memory in \
                            part.get("files", ()):
                        self._saved[(rel, bool(archived))] = [signature, sha, first_line,
                                                              findings, has_memory]
                    for rel, (signature, findings) in part.get("links", {}).items():
                        self._saved_links[rel] = (signature, findings)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, StopIteration):
            # Unreadable or of another shape: every file is read again.
            self._saved.clear()
            self._saved_links = {}


@dataclass
class _Body:
    rel: str
    first_line: int
    text: str


@dataclass
class _Audit:
    folder: MemoryFolder
    findings: list[Finding] = field(default_factory=list)
    checked: int = 0
    walked: set[str] = field(default_factory=set)
    active: set[str] = field(default_factory=set)  # rel paths (NFC) of memory files
    archived: set[str] = field(default_factory=set)
    memories: list[Memory] = field(default_factory=list)
    bodies: list[_Body] = field(default_factory=list)
    shas: dict[str, str] = field(default_factory=dict)  # rel path: sha256 of the bytes read

    def add(self, check: str, rel: str, message: str, line: int | None = None) -> None:
        # A file name that holds a credential is reported (`check_secrets`), never printed.
        self.findings.append(Finding(check, redact_name(rel), message, line, CHECKS[check][0]))

    def rel(self, path: Path) -> str:
        text, root = str(path), str(self.folder.root)
        if text.startswith(root + os.sep):  # the walk's own paths: no relpath's normalizing
            return text[len(root) + 1:].replace(os.sep, "/")
        return os.path.relpath(path, self.folder.root).replace(os.sep, "/")

    # one file

    def check_file(self, path: Path, *, archived: bool) -> None:
        rel = self.rel(path)
        self.walked.add(rel)
        self.checked += 1
        (self.archived if archived else self.active).add(_nfc(rel))
        raw = self.read(path, rel)
        if raw is None:
            return
        self.shas[rel] = sha256_bytes(raw)
        text = self.decode(raw, rel)
        if text is None:
            return
        bom = text.startswith("\ufeff")
        if bom:
            text = text[1:]
        self.check_conflict_markers(text, rel)
        self.check_secrets(text, rel, raw)
        if archived:
            return
        if bom:
            self.add("bom", rel, "starts with a byte order mark; save it as UTF-8 without BOM", 1)
        self.check_line_endings(text, rel)
        self.check_memory(raw, text, path, rel)
        self.check_name(rel)
        self.check_conflict_sibling(rel)
        for check, line, message in agent_safety.findings(self.folder, rel, text):
            self.add(check, rel, message, line)

    def check_parked(self, path: Path) -> None:
        rel = self.rel(path)
        name = parked_original(path.name)
        assert name is not None  # what `iter_parked` yields
        was = redact_name(posixpath.join(posixpath.dirname(rel), name))
        self.add("interrupted-delete", rel,
                 f"left by an interrupted `sage-mem delete` of {was}; nothing is lost: "
                 f"remove this file to finish the delete, or rename it back to {was} "
                 "to keep the memory")

    def check_unlisted(self, path: Path) -> None:
        self.add("unreadable", self.rel(path) + "/",
                 "a folder this process may not list (no permission): the memories in it are "
                 "not read, listed, searched, exported or synced; give it back read permission "
                 "(chmod u+rx)")

    def check_conflict_sibling(self, rel: str) -> None:
        found = conflict_sibling_of(rel[:-3])
        if found:
            memory_id, machine = found
            self.add("conflict-sibling", rel,
                     f"the version of {memory_id} from {machine}, kept by `sage-mem sync` when "
                     f"both changed it: merge what you want to keep into {memory_id}, then "
                     "delete this file")

    def check_name(self, rel: str) -> None:
        found = unsafe_name_characters(rel[:-3])
        if found:
            shown = ", ".join("a backtick" if c == "`" else f"<U+{ord(c):04X}>" for c in found)
            self.add("unsafe-name", rel,
                     f"the file name holds {shown}: where the name is shown (a hook's heading, "
                     "a line of MEMORY.md, a terminal) it can pass for other text; rename the file")

    def read(self, path: Path, rel: str) -> bytes | None:
        """The file's bytes through the one checked read, or None after reporting why not."""
        from ..disk.folder import read_memory

        try:
            return read_memory(self.folder, path).raw
        except InvalidId:
            self.add("unreadable", rel, "a symlink that leads outside the memory folder; not read")
        except FileNotFoundError:
            if os.path.islink(path):
                self.add("unreadable", rel, "a symlink to a file that does not exist")
        except InvalidMemory as exc:
            self.add("unreadable", rel, _unreadable_reason(exc, path))
        return None

    def decode(self, raw: bytes, rel: str) -> str | None:
        nul = raw.find(b"\x00")
        if nul >= 0:
            line = raw.count(b"\n", 0, nul) + 1
            self.add("unreadable", rel, "binary file (contains NUL bytes); not indexed", line)
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            self.add(
                "unreadable", rel,
                f"not valid UTF-8 (byte {exc.start}); not indexed: save it as UTF-8", line,
            )
            return None

    def check_line_endings(self, text: str, rel: str) -> None:
        crlf = text.count("\r\n")
        if crlf:
            line = text.count("\n", 0, text.index("\r\n")) + 1
            lines = "lines" if crlf > 1 else "line"
            self.add("crlf", rel, f"CRLF line endings ({crlf} {lines}); sage-mem writes LF", line)
        elif "\r" in text and "\n" not in text:
            self.add("crlf", rel, "CR line breaks (old Mac) and no LF: its frontmatter cannot be "
                     "read and the tool will not rewrite it; save it with LF line endings", 1)

    def check_conflict_markers(self, text: str, rel: str, *, fix: str = "") -> None:
        opened = conflict_marker_line(text)
        if opened is not None:
            self.add(
                "conflict-markers", rel,
                "git conflict markers (<<<<<<< … >>>>>>>): "
                + (fix or "resolve the conflict and remove them"),
                opened,
            )

    def check_secrets(self, text: str, rel: str, raw: bytes | None = None) -> None:
        for match in find_secrets_in_name(rel):
            self.add(
                "secret", rel,
                f"the file name holds a possible {match.label}: "
                f"{match.excerpt_redacted} (rename the file; the name is listed in MEMORY.md "
                "and shown to agents)",
            )
        for match in find_secrets(text):
            self.add(
                "secret", rel,
                f"possible {match.label}: {match.excerpt_redacted} "
                "(remove it; keep a pointer to where the secret lives instead)",
                match.line,
            )
        if raw is None or "\\" not in text:
            return  # no escape: YAML decodes nothing into what the text does not show
        parsed = parsed_or_none(raw)
        if parsed is None:
            return
        for key, match in decoded_secrets(text, parsed.meta):
            self.add(
                "secret", rel,
                f"possible {match.label} in {key}, spelled with escapes "
                f"that every reader decodes: {match.excerpt_redacted} (remove it; keep a pointer "
                "to where the secret lives instead)",
                _key_line(text, key),
            )

    def check_memory(self, raw: bytes, text: str, path: Path, rel: str) -> None:
        memory_id = self.folder.id_for(path) or _nfc(rel[:-3])
        lines = text.split("\n")
        try:
            parsed = parse_bytes(raw, path)
        except InvalidMemory as exc:
            self.add("invalid-yaml", rel, _without_path(str(exc), path) + "; not indexed", exc.line)
            return
        if parsed.frontmatter is None:
            self.add("no-frontmatter", rel,
                     "no frontmatter: add ---, a description and a category, then ---", 1)
            memory = memory_from_meta(memory_id, path, {}, parsed.body)
            self.memories.append(memory)
            self.bodies.append(_Body(rel, 1, parsed.body))
            return
        closing = next((i for i in range(1, len(lines)) if _CLOSING.match(lines[i])), None)
        if closing is None:
            self.add("unclosed-frontmatter", rel,
                     "frontmatter opens with --- but never closes; the tool will not rewrite it", 1)
        node = _compose(parsed.frontmatter)
        if node is not None and not isinstance(node, yaml.MappingNode):
            self.add("frontmatter-not-mapping", rel,
                     "frontmatter is not `key: value` pairs; not indexed as metadata", 2)
        memory = memory_from_meta(memory_id, path, parsed.meta, parsed.body)
        self.memories.append(memory)
        if isinstance(node, yaml.MappingNode):
            key_lines, cut = self.check_keys(node, parsed.frontmatter, rel)
            self.check_values(memory, rel, key_lines, cut)
        elif node is None:  # `---` then `---`: an empty frontmatter lacks everything
            self.check_values(memory, rel, {}, set())
        body_line = closing + 2 if closing is not None else parsed.frontmatter.count("\n") + 2
        self.bodies.append(_Body(rel, body_line, parsed.body))

    def check_keys(
        self, node: yaml.MappingNode, fm_text: str, rel: str
    ) -> tuple[dict[str, int], set[str]]:
        """Report duplicate keys and ` #` cuts; return each key's file line, and the cut keys."""
        fm_lines = fm_text.split("\n")
        key_lines: dict[str, int] = {}  # the last occurrence: the one YAML keeps
        cut_keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            line = key_node.start_mark.line + 2
            if key in key_lines:
                self.add("duplicate-key", rel,
                         f"`{key}` appears twice (also on line {key_lines[key]}); "
                         "YAML keeps only the last one", line)
            key_lines[key] = line
            cut = _comment_cut(value_node, fm_lines)
            if cut is not None:
                cut_keys.add(key)
                kept, lost = cut
                shown = f"reads {kept!r}" if kept else "is empty"
                self.add("yaml-comment-cut", rel,
                         f"`{key}` {shown}: YAML took '{_clip(redact(lost))}' for a comment; "
                         "put the value in quotes", value_node.end_mark.line + 2)
        return key_lines, cut_keys

    def check_values(
        self, memory: Memory, rel: str, key_lines: dict[str, int], cut_keys: set[str]
    ) -> None:
        for problem in memory.problems:
            check = getattr(problem, "code", INVALID)
            key = getattr(problem, "key", None)
            if check == "unknown-category":
                key = _top_key(key)
            if key in cut_keys:
                continue  # already reported as yaml-comment-cut, the cause
            if check == "missing-description":
                self.add(check, rel, "no description: add one line saying what this memory is",
                         key_lines.get("description", 1))
            elif check == "unknown-category":
                self.add(check, rel, f"{problem}; use one of {', '.join(CATEGORIES)}",
                         key_lines.get(key or "category", 1))
            else:
                self.add(check, rel, problem, key_lines.get(key or "", 1))
        if memory.category is None:
            self.add("missing-category", rel,
                     f"no category: add `category:` ({', '.join(CATEGORIES)})", 1)
        elif memory.category in CATEGORIES:
            message = _prefix_mismatch(rel, memory.category)
            if message:
                self.add("category-prefix", rel, message,
                         key_lines.get(_top_key(memory.category_key), 1))

    # links between memories

    def check_links(self, body: _Body) -> None:
        folder_rel = posixpath.dirname(body.rel)
        for offset, line in enumerate(mask_code(body.text).split("\n")):
            number = body.first_line + offset
            for match in WIKI_LINK.finditer(line):
                message = self.wiki_link_problem(match.group("target").strip(), folder_rel)
                if message:
                    self.add("broken-link", body.rel, message, number)
            for match in MARKDOWN_LINK.finditer(line):
                message = self.md_link_problem(match.group("destination"), folder_rel)
                if message:
                    self.add("broken-link", body.rel, message, number)

    def wiki_link_problem(self, target: str, folder_rel: str) -> str | None:
        """What is wrong with `[[target]]`, read as `memory/links` reads it for a rename."""
        memory_id = _nfc(target.strip().removesuffix(".md"))
        if not memory_id or wiki_target(target, folder_rel, self.ids) is not None:
            return None
        sharing = self.ids.by_leaf.get(memory_id, ()) if "/" not in memory_id else ()
        if len(sharing) > 1:
            named = " or ".join(sharing[:3]) + (" or others" if len(sharing) > 3 else "")
            return f"[[{_clip(target)}]] could mean {named}: write the memory's whole id"
        candidates = [
            posixpath.normpath(memory_id),
            posixpath.normpath(posixpath.join(folder_rel, memory_id)),
        ]
        archived = next((c for c in candidates if f"{ARCHIVE_DIR}/{c}.md" in self.archived), None)
        if archived is not None:
            return f"[[{_clip(target)}]] points to an archived memory ({ARCHIVE_DIR}/{archived})"
        return f"[[{_clip(target)}]]: no memory with that id"

    @functools.cached_property
    def ids(self) -> Ids:
        """The ids in service, made once the walk is over (links are checked after it)."""
        return Ids.of(rel.removesuffix(".md") for rel in self.active)

    def md_link_problem(self, raw_target: str, folder_rel: str) -> str | None:
        target = linked_file(raw_target)
        if target is None:
            return None
        resolved = posixpath.normpath(posixpath.join(folder_rel, target))
        from_root = posixpath.normpath(target)
        if resolved.startswith("../") or resolved == "..":
            return None
        for candidate in (resolved, from_root):
            if candidate in self.active or candidate in self.archived:
                return None
            if not candidate.startswith("../") and (self.folder.root / candidate).is_file():
                return None
        moved = f"{ARCHIVE_DIR}/{resolved}"
        if moved in self.archived:
            return f"link to {_clip(raw_target)}: archived, it is now {moved}"
        return f"link to {_clip(raw_target)}: no such file"

    # MEMORY.md

    def listable(self) -> list[Memory]:
        """The memories MEMORY.md lists: not one whose name no id reaches (that file has its
        unaddressable-name finding instead, and the index never lists it)."""
        found = []
        for memory in self.memories:
            try:
                self.folder.check_reachable(memory.id, path=memory.path)
            except InvalidId:
                continue
            found.append(memory)
        return found

    def check_index(self) -> None:
        path = self.folder.index_file
        if not os.path.lexists(path):
            return
        rel = INDEX_FILE
        raw = self.read(path, rel)
        if raw is None:
            return
        self.checked += 1
        text = self.decode(raw, rel)
        if text is None:
            return
        before = len(self.findings)
        self.check_conflict_markers(text, rel, fix="`sage-mem index` regenerates the file")
        listed: dict[str, int] = {}
        for number, line in enumerate(mask_code(text).split("\n"), start=1):
            for match in MARKDOWN_LINK.finditer(line):
                self.check_index_entry(match.group("destination"), number, listed)
        more_line = next(
            (n for n, line in enumerate(text.split("\n"), start=1) if _MORE.match(line)), None
        )
        memories = self.listable()
        if more_line is None:
            for memory in memories:
                memory_rel = memory.id + ".md"
                if _nfc(memory_rel) not in listed:
                    self.add("missing-from-index", memory_rel,
                             "not listed in MEMORY.md; `sage-mem index` regenerates it")
        size = len(raw)
        line_count = text.count("\n")
        if line_count > catalog.MAX_LINES or size > catalog.MAX_BYTES:
            self.add("index-too-large", rel,
                     f"{line_count} lines, {size:,} bytes: Claude Code loads only the first "
                     f"{catalog.MAX_LINES} lines and {catalog.MAX_BYTES:,} bytes")
        if len(self.findings) == before and catalog.NOTE in text:
            self.check_index_current(text, listed, more_line, memories)

    def check_index_entry(self, raw_target: str, number: int, listed: dict[str, int]) -> None:
        target = raw_target.strip()
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]
        target = unquote(target.split("#", 1)[0])
        if not is_relative_md(target):
            return
        target = _nfc(posixpath.normpath(target))
        if target in self.active:
            listed.setdefault(target, number)
            return
        if target.startswith("../") or (self.folder.root / target).is_file() and not (
            target.startswith(ARCHIVE_DIR + "/")
        ):
            return
        if target in self.archived:
            message = f"lists {_clip(raw_target)}, which is archived"
        elif f"{ARCHIVE_DIR}/{target}" in self.archived:
            message = f"lists {_clip(raw_target)}, which was archived"
        else:
            message = f"lists {_clip(raw_target)}, which does not exist"
        self.add("dangling-index-entry", INDEX_FILE, message + "; `sage-mem index` regenerates it",
                 number)

    def check_index_current(self, text: str, listed: dict[str, int], more_line: int | None,
                            memories: list[Memory]) -> None:
        expected = catalog.render(memories)
        expected_more = next((line for line in expected.split("\n") if _MORE.match(line)), None)
        hint = "; `sage-mem index` regenerates it"
        if more_line is None or expected_more is None:
            if text != expected:
                self.add("index-stale", INDEX_FILE, "out of date with the memory files" + hint,
                         _first_difference(text, expected))
            return
        # A truncated index lists the most used memories: which ones depends on
        # usage counts, so check the lines it has and its count, not its choice.
        by_rel = {_nfc(m.id + ".md"): m for m in memories}
        lines = text.split("\n")
        for target, number in sorted(listed.items(), key=lambda item: item[1]):
            memory = by_rel.get(target)
            if memory is not None and lines[number - 1] != catalog.entry_line(memory):
                self.add("index-stale", INDEX_FILE,
                         f"the entry for {memory.id} is out of date" + hint, number)
                return
        count = _MORE.match(lines[more_line - 1])
        if count and int(count.group(1)) != len(memories) - len(listed):
            self.add("index-stale", INDEX_FILE,
                     f"says {count.group(1)} more, but {len(memories) - len(listed)} "
                     "memories are not listed" + hint, more_line)

    # problems the store met that the walk did not

    def check_known_problem(self, problem: Any) -> None:
        path = Path(getattr(problem, "path", ""))
        try:
            rel = self.rel(path)
        except ValueError:
            return
        if rel in self.walked or rel.startswith("../") or not os.path.lexists(path):
            return
        self.add("unreadable", rel, _without_path(str(getattr(problem, "message", "")), path),
                 getattr(problem, "line", None))


_KEBAB = re.compile(r"[^\W_]+(?:-[^\W_]+)+")
_CONFLICT_SIBLING = re.compile(r"\.conflict-([a-z0-9][a-z0-9-]*)(?:\.(\d+))?$")


def _fingerprint(active: set[str], archived: set[str]) -> str:
    """What the link findings depend on: the folder's memory and archive paths."""
    digest = hashlib.sha256()
    for rel in sorted(active):
        digest.update(rel.encode("utf-8", "surrogatepass") + b"\n")
    digest.update(b"\0")
    for rel in sorted(archived):
        digest.update(rel.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def conflict_sibling_of(memory_id: str) -> tuple[str, str] | None:
    """(the memory's id, the machine) for a conflict sibling's id (`user_cat.conflict-laptop`,
    `user_cat.conflict-laptop.2`, as `sage-mem sync` names them); None for any other id."""
    match = _CONFLICT_SIBLING.search(memory_id)
    if match is None or match.start() == 0 or memory_id[match.start() - 1] == "/":
        return None
    return memory_id[: match.start()], match.group(1)


_CLOSING = re.compile(r"^(---|\.\.\.)[ \t]*\r?$")
_MORE = re.compile(r"^…and (\d+) more\b")
_PLAIN_STYLES = (None, "")
_TEXT_TAGS = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:null")

def _top_key(category_key: str | None) -> str:
    return (category_key or "category").split(".", 1)[0]


def _prefix_mismatch(rel: str, category: str) -> str | None:
    parts = rel[:-3].split("/")
    stem = parts[-1]
    named = next((c for c in CATEGORIES if stem.startswith((c + "_", c + "-"))), None)
    if len(parts) == 1:
        if named == category:
            return None
        if named is not None:
            return f"file name says {named!r} but category is {category!r}"
        if _KEBAB.fullmatch(stem):
            return None  # hyphenated words, as Claude Code names its files: another convention
        return f"file name does not start with '{category}_' (the <category>_*.md convention)"
    top = parts[0]
    if top in CATEGORIES and top != category:
        return f"in the {top}/ folder but category is {category!r}"
    if top not in CATEGORIES and named is not None and named != category:
        return f"file name says {named!r} but category is {category!r}"
    return None


def _compose(fm_text: str) -> yaml.Node | None:
    try:
        return yaml.compose(fm_text, Loader=_ComposeLoader)
    except (yaml.YAMLError, RecursionError):
        return None


_ComposeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _comment_cut(node: yaml.Node, fm_lines: list[str]) -> tuple[str, str] | None:
    """(kept, lost) when a plain text value ends where ` #` began a comment after one space."""
    if not isinstance(node, yaml.ScalarNode) or node.style not in _PLAIN_STYLES:
        return None
    if node.tag not in _TEXT_TAGS:
        return None
    end = node.end_mark
    if end.line >= len(fm_lines):
        return None
    rest = fm_lines[end.line][end.column :].rstrip()
    if not rest.startswith(" #") or not rest[2:].strip():
        return None
    return node.value, rest[1:]


def _first_difference(text: str, expected: str) -> int:
    have, want = text.split("\n"), expected.split("\n")
    for number, (a, b) in enumerate(zip(have, want, strict=False), start=1):
        if a != b:
            return number
    return min(len(have), len(want))


def _without_path(message: str, path: Path) -> str:
    """A core error message without its leading `path:line:column:`."""
    prefix = str(path)
    if message.startswith(prefix):
        message = re.sub(r"^(?::\d+)*:\s*", "", message[len(prefix) :])
    return message


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _key_line(text: str, key: str) -> int | None:
    """The 1-based line where the frontmatter's top-level `key` is written, or None."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith((f"{key}:", f'"{key}":', f"'{key}':")):
            return number
        if number > 1 and line.rstrip("\r") in ("---", "..."):
            return None
    return None


__all__ = ["CHECKS", "AuditReport", "Finding", "audit", "audit_folder", "conflict_sibling_of"]


def _unreadable_reason(exc: InvalidMemory, path: Path) -> str:
    """The checked read's reason, without the path the finding already names."""
    message = exc.message.removeprefix(f"{path}: ")
    if message == "not a regular file":
        return "not a regular file; not read"  # a FIFO or device would block or never end
    if message == "no permission to read":
        return "no permission to read it; not indexed"
    return message
