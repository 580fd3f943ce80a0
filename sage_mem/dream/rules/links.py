"""Links to memories that were archived or renamed: point them at where the memory is now.

Links resolve as the audit resolves them: `[[id]]` against the folder root, the
linking file's folder, or any memory with that file name; `[text](x.md)`
against the linking file's folder or the root. A broken link is fixed when
its target

- was archived with a successor (`supersededBy`, followed to a memory in
  service): it points to the successor;
- was archived without one: a markdown link points to the archived file (it
  still opens); a `[[id]]` link is reported, since `[[archive/…]]` would not
  resolve either;
- was moved: exactly one memory in service has the target's file name.

A link in historical context ("History: [[api_v1]] came before it",
"the archived test convention is [[x]]", "之前用的是 [[x]]", 已归档的规范是 [[x]]) names the
old memory on purpose: it is never pointed at the
successor (a markdown link may point at the archived file, which still opens),
and neither is a link from a memory to the one it superseded, which would make
it link to itself. Anything else is reported, never guessed. Links in code are left alone; what
is code and what is a link is `sage_mem.memory.markdown`'s, as for the audit.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from dataclasses import dataclass, field

from ...disk.folder import ARCHIVE_DIR
from ...memory.markdown import MARKDOWN_LINK, WIKI_LINK, linked_file, outside_code
from ...memory.value import Memory
from .context import RuleContext

NAME = "links"
MAX_HOPS = 10
_HISTORY = re.compile(
    r"\b(?:history|historical(?:ly)?|previous(?:ly)?|former(?:ly)?|used\s+to|superseded"
    r"|replaced|deprecated|legacy|came\s+before|earlier\s+versions?|old(?:er)?\s+versions?"
    r"|originally|archived|retired|old(?:er)?|prior|outdated|obsolete|no\s+longer)\b"
    r"|历史|之前的|以前的|原来的|曾经|旧版|旧的|过去的|取代|替代|已归档|归档的|老的|老版|废弃|过时|先前",
    re.IGNORECASE,
)


def historical(text: str, start: int, end: int) -> bool:
    """True when the line around the link text[start:end] speaks of the past (see above)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start:start] + " " + text[end : line_end if line_end >= 0 else len(text)]
    return bool(_HISTORY.search(line))


@dataclass
class Targets:
    """Where memories are now: in service, archived (with successors), by file name."""

    live: set[str]
    archived: dict[str, tuple[str, str | None]]
    """Former id -> (path of the archived file relative to the folder, successor id or None)."""
    by_leaf: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, ctx: RuleContext) -> Targets:
        live = {m.id for m in ctx.live()}
        archived: dict[str, tuple[str, str | None]] = {}
        for memory in ctx.store.list(archived=True):
            if not memory.archived:
                continue
            former = _former_id(memory)
            successor = memory.meta.get("supersededBy")
            archived.setdefault(
                former, (memory.id + ".md", successor if isinstance(successor, str) else None)
            )
        for memory_id, successor in ctx.applier.archived.items():
            # Archived in this run: its successor wins over any earlier archived namesake.
            path = archived.get(memory_id, (f"{ARCHIVE_DIR}/{memory_id}.md", None))[0]
            archived[memory_id] = (path, successor)
        by_leaf: dict[str, list[str]] = {}
        for memory_id in sorted(live):
            by_leaf.setdefault(memory_id.rsplit("/", 1)[-1], []).append(memory_id)
        return cls(live, archived, by_leaf)

    def successor(self, memory_id: str) -> str | None:
        """The memory in service that replaced `memory_id`, following successors."""
        seen = {memory_id}
        current = memory_id
        for _ in range(MAX_HOPS):
            entry = self.archived.get(current)
            if entry is None or entry[1] is None:
                return None
            current = entry[1].removesuffix(".md")
            if current in self.live:
                return current
            if current in seen:
                return None
            seen.add(current)
        return None

    def moved(self, memory_id: str) -> str | None:
        found = self.by_leaf.get(memory_id.rsplit("/", 1)[-1], [])
        return found[0] if len(found) == 1 else None


def _former_id(memory: Memory) -> str:
    former = memory.id.removeprefix(ARCHIVE_DIR + "/")
    # archive/x-2.md is the second archived x: its former id is x
    if (
        re.search(r"-\d+$", former)
        and memory.path.with_name(re.sub(r"-\d+$", "", memory.path.stem) + ".md").exists()
    ):
        return re.sub(r"-\d+$", "", former)
    return former


def run(ctx: RuleContext) -> None:
    targets = Targets.of(ctx)
    for memory in ctx.live():
        if "[" not in memory.body:
            continue
        fix_links(ctx, targets, memory)


def fix_links(ctx: RuleContext, targets: Targets, memory: Memory) -> None:
    """Fix the links of one memory that point to a memory archived or moved; note the
    broken ones it cannot fix."""
    root = ctx.store.folder.root
    folder_rel = posixpath.dirname(memory.id)
    memory_id_self = memory.id
    fixed: list[str] = []
    broken: list[str] = []

    def wiki(match: re.Match[str]) -> str:
        target = match.group("target").strip()
        suffix = match.string[match.end("target") : match.end() - 2]
        memory_id = _nfc(target.removesuffix(".md"))
        candidates = [
            posixpath.normpath(memory_id),
            posixpath.normpath(posixpath.join(folder_rel, memory_id)),
        ]
        if any(c in targets.live for c in candidates):
            return match.group(0)
        if "/" not in memory_id and targets.by_leaf.get(memory_id):
            return match.group(0)
        for candidate in candidates:
            if candidate in targets.archived:
                successor = targets.successor(candidate)
                if successor is not None and (
                    successor == memory_id_self
                    or historical(match.string, match.start(), match.end())
                ):
                    broken.append(
                        f"[[{target}]] names an archived memory on purpose (history, or the "
                        f"one {memory_id_self} replaced): left as it is"
                    )
                    return match.group(0)
                if successor is not None:
                    fixed.append(f"[[{target}]] → [[{successor}]] (archived, superseded by it)")
                    return f"[[{successor}{suffix}]]"
                broken.append(f"[[{target}]] points to an archived memory with no successor")
                return match.group(0)
        moved = targets.moved(memory_id)
        if moved is not None:
            fixed.append(f"[[{target}]] → [[{moved}]] (moved)")
            return f"[[{moved}{suffix}]]"
        broken.append(f"[[{target}]]: no memory with that id")
        return match.group(0)

    def markdown(match: re.Match[str]) -> str:
        raw = match.group("destination")
        head = match.string[match.start() : match.start("destination")]
        tail = match.string[match.end("destination") : match.end()]
        bracketed = raw.startswith("<") and raw.endswith(">")
        inner = raw[1:-1] if bracketed else raw
        _, sep, fragment = inner.partition("#")
        target = linked_file(raw)
        if target is None:
            return match.group(0)
        resolved = posixpath.normpath(posixpath.join(folder_rel, target))
        from_root = posixpath.normpath(target)
        if resolved.startswith("../") or resolved == "..":
            return match.group(0)
        for candidate in (resolved, from_root):
            if (
                not candidate.startswith("../")
                and candidate[:-3] not in targets.archived
                and (root / candidate).is_file()
            ):
                return match.group(0)
            if candidate[:-3] in targets.live:
                return match.group(0)
        new_rel = None
        why = ""
        for candidate in (resolved, from_root):
            former = candidate[:-3]
            if former in targets.archived:
                successor = targets.successor(former)
                if successor is not None and (
                    successor == memory_id_self
                    or historical(match.string, match.start(), match.end())
                ):
                    successor = None  # the old memory is meant: point at its archived file
                if successor is not None:
                    new_rel, why = successor + ".md", "archived, superseded by it"
                else:
                    new_rel, why = targets.archived[former][0], "archived"
                break
        if new_rel is None:
            moved = targets.moved(resolved[:-3])
            if moved is not None:
                new_rel, why = moved + ".md", "moved"
        if new_rel is None:
            broken.append(f"({raw}): no such memory")
            return match.group(0)
        new_target = posixpath.relpath(new_rel, folder_rel or ".") + (
            sep + fragment if sep else ""
        )
        if bracketed or " " in new_target:
            new_target = f"<{new_target}>"
        fixed.append(f"({raw}) → ({new_target}) ({why})")
        return head + new_target + tail

    def prose(text: str) -> str:
        return MARKDOWN_LINK.sub(markdown, WIKI_LINK.sub(wiki, text))

    body = outside_code(memory.body, prose)
    for problem in broken:
        ctx.applier.note(memory.id, rule=NAME, message=f"broken link not fixed: {problem}")
    if fixed and body != memory.body:
        shown = "; ".join(fixed[:3]) + (
            f"; and {len(fixed) - 3} more" if len(fixed) > 3 else ""
        )
        ctx.applier.rewrite(memory, rule=NAME, body=body, reason=f"fixed links: {shown}")


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)
