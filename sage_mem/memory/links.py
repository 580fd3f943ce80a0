"""Which memory a link names, and links pointed again after memories move (`MemoryStore.rename`).

A link is read as the audit reads it (`checks/audit.py`):

- `[[target]]` (with or without `.md`, NFC): the memory `target` from the
  folder root, else `target` from the linking memory's folder, else, for a
  bare name, the one memory in service with that file name (two or more:
  it names none for certain, and is left as it is);
- `[text](x.md)` (and `![alt](x.md)`): the file from the linking memory's
  folder, else from the root. Web links, absolute paths and links that leave
  the folder name no memory.

`retarget` rewrites the links of one body so that each still names the memory
it named before a move (the moved one under its new id), in the link's own
style where that style still reaches it (a link that found its memory by file
name alone stays a bare name, one relative to the linking folder stays
relative, one from the root names the new id); every rewritten link is
read back through the same resolution and kept only when it names the memory
meant. Links in code are never touched (`markdown.outside_code`).

Imports only `markdown`: no disk, no index.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .markdown import MARKDOWN_LINK, WIKI_LINK, linked_file, outside_code


@dataclass(frozen=True)
class Ids:
    """The ids of the memories in service, and which of them have each file name."""

    live: frozenset[str]
    by_leaf: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, ids: Iterable[str]) -> Ids:
        live = frozenset(ids)
        by_leaf: dict[str, list[str]] = {}
        for memory_id in sorted(live):
            by_leaf.setdefault(leaf(memory_id), []).append(memory_id)
        return cls(live, {name: tuple(found) for name, found in by_leaf.items()})

    def renamed(self, old: str, new: str) -> Ids:
        return Ids.of((self.live - {old}) | {new})


def leaf(memory_id: str) -> str:
    return memory_id.rsplit("/", 1)[-1]


def folder_of(memory_id: str) -> str:
    """The folder (relative to the root, "" for the root) a memory's relative links start from."""
    return posixpath.dirname(memory_id)


def wiki_target(target: str, folder: str, ids: Ids) -> str | None:
    """The id `[[target]]` names, written in a memory in `folder`; None when it names none."""
    return _wiki(target, folder, ids)[0]


def wiki_candidates(target: str, folder: str) -> tuple[str, ...]:
    """The ids `[[target]]`, written in a memory in `folder`, may name by its path, in the
    order they are tried: from the root, then from the linking folder (none for a blank)."""
    memory_id = _nfc(target.strip().removesuffix(".md"))
    if not memory_id:
        return ()
    return posixpath.normpath(memory_id), posixpath.normpath(posixpath.join(folder, memory_id))


def _wiki(target: str, folder: str, ids: Ids) -> tuple[str | None, str]:
    """The id `[[target]]` names and how: from the "root", the linking "folder", or by "leaf"."""
    candidates = wiki_candidates(target, folder)
    if not candidates:
        return None, ""
    for candidate, how in zip(candidates, ("root", "folder"), strict=True):
        if candidate in ids.live:
            return candidate, how
    memory_id = _nfc(target.strip().removesuffix(".md"))
    if "/" not in memory_id:
        found = ids.by_leaf.get(memory_id, ())
        if len(found) == 1:
            return found[0], "leaf"
    return None, ""


def markdown_candidates(destination: str, folder: str) -> tuple[str, ...]:
    """The ids the link destination `destination`, written in a memory in `folder`, may name,
    in the order they are tried: from the linking folder, then from the root; none for a web
    link, a file that is not `.md` or a path out of the memory folder."""
    target = linked_file(destination)
    if target is None:
        return ()
    resolved = posixpath.normpath(posixpath.join(folder, target))
    if resolved == ".." or resolved.startswith("../"):
        return ()
    return tuple(_nfc(candidate[:-3]) for candidate in (resolved, posixpath.normpath(target)))


def markdown_target(destination: str, folder: str, ids: Ids) -> str | None:
    """The id the link destination `destination` names, from a memory in `folder`; or None."""
    return next((memory_id for memory_id in markdown_candidates(destination, folder)
                 if memory_id in ids.live), None)


@dataclass
class Retargeted:
    """A body with its links pointed again: the new text, and what was changed or could not be."""

    body: str
    changed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def retarget(
    body: str,
    *,
    before: Ids,
    after: Ids,
    moved: Mapping[str, str],
    folder_before: str,
    folder_after: str | None = None,
) -> Retargeted:
    """`body` with each link naming, after the move, what it named before (`moved` old -> new).

    `folder_before`/`folder_after` are the linking memory's folder before and
    after (they differ only for the moved memory itself). A link that named
    nothing before is left alone; one that cannot be written to name its
    memory again is left and said in `left`.
    """
    folder_after = folder_before if folder_after is None else folder_after
    result = Retargeted(body)

    def wiki(match: re.Match[str]) -> str:
        target = match.group("target")
        was, how = _wiki(target, folder_before, before)
        if was is None:
            return match.group(0)
        want = moved.get(was, was)
        if wiki_target(target, folder_after, after) == want:
            return match.group(0)
        suffix = ".md" if target.strip().endswith(".md") else ""
        options = []
        if how == "leaf":
            options.append(leaf(want))
        if how == "folder" and folder_after and want.startswith(folder_after + "/"):
            options.append(want[len(folder_after) + 1:])
        options.append(want)
        for option in options:
            if wiki_target(option, folder_after, after) == want:
                new = option + suffix
                result.changed.append(f"[[{target.strip()}]] → [[{new}]]")
                return (match.string[match.start():match.start("target")] + new
                        + match.string[match.end("target"):match.end()])
        result.left.append(f"[[{target.strip()}]] could not be pointed at {want}")
        return match.group(0)

    def markdown(match: re.Match[str]) -> str:
        raw = match.group("destination")
        was = markdown_target(raw, folder_before, before)
        if was is None:
            return match.group(0)
        want = moved.get(was, was)
        if markdown_target(raw, folder_after, after) == want:
            return match.group(0)
        inner = raw[1:-1] if raw.startswith("<") and raw.endswith(">") else raw
        cut = min((i for i in (inner.find("#"), inner.find("?")) if i >= 0), default=len(inner))
        tail = inner[cut:]
        from_root = posixpath.normpath(linked_file(raw) or "") == was + ".md" and (
            posixpath.normpath(posixpath.join(folder_before, linked_file(raw) or "")) != was + ".md"
        )
        relative = posixpath.relpath(want + ".md", folder_after or ".")
        options = [want + ".md", relative] if from_root else [relative, want + ".md"]
        for option in options:
            written = option.replace("%", "%25") + tail
            if raw.startswith("<") or any(c in written for c in " ()"):
                written = f"<{written}>"
            if markdown_target(written, folder_after, after) == want:
                result.changed.append(f"({raw}) → ({written})")
                return (match.string[match.start():match.start("destination")] + written
                        + match.string[match.end("destination"):match.end()])
        result.left.append(f"({raw}) could not be pointed at {want}")
        return match.group(0)

    def prose(text: str) -> str:
        return MARKDOWN_LINK.sub(markdown, WIKI_LINK.sub(wiki, text))

    if "[" in body:
        result.body = outside_code(body, prose)
    return result


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


__all__ = ["Ids", "Retargeted", "folder_of", "markdown_target", "retarget", "wiki_target"]
