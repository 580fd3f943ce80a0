"""Minimal edits to a JSON file a person or another program owns: only the values meant change.

`install` and `uninstall` change sage-mem's entries in other programs' config
files (`.mcp.json`, `.claude/settings.json`, `.cursor/mcp.json`), which teams
commit: a whole file re-indented is a diff nobody can review. So a file is read
once with the position of each value (`parse`), and an edit replaces, inserts
or removes the text of one value or member, in the file's own style: its
indentation unit, a one-line object kept on one line, `\\u` escapes kept where
the file uses them. Every other byte stays as it was. The caller checks the
result reads back as intended (`edited` does) and falls back to a whole dump
only if it does not.

Imports nothing of sage-mem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


@dataclass
class Node:
    """One JSON value in the text: text[start:end]; an object's members or an array's items."""

    start: int
    end: int
    kind: str  # "object", "array" or "scalar"
    members: list[tuple[str, int, Node]] = field(default_factory=list)  # (key, key start, value)
    items: list[Node] = field(default_factory=list)

    def member(self, key: str) -> tuple[str, int, Node] | None:
        """The member `key` (the last one, as json.loads keeps it)."""
        found = [m for m in self.members if m[0] == key]
        return found[-1] if found else None


def parse(text: str) -> Node:
    """The value tree of `text` with positions; raises ValueError where json.loads would."""
    node, end = _value(text, _skip(text, 0))
    if _skip(text, end) != len(text):
        raise ValueError("extra data after the JSON value")
    return node


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _value(text: str, at: int) -> tuple[Node, int]:
    if at >= len(text):
        raise ValueError("unexpected end of JSON")
    char = text[at]
    if char in "{[":
        # An object and an array are read alike: members (key, ':', value) or items, then
        # ',' or the closing bracket.
        node = Node(at, at, "object" if char == "{" else "array")
        close = "}" if char == "{" else "]"
        at = _skip(text, at + 1)
        if text.startswith(close, at):
            node.end = at + 1
            return node, at + 1
        while True:
            if char == "{":
                if not text.startswith('"', at):
                    raise ValueError("expected a key")
                key, after = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
                key_start = at
                at = _skip(text, after)
                if not text.startswith(":", at):
                    raise ValueError("expected ':'")
                value, at = _value(text, _skip(text, at + 1))
                node.members.append((key, key_start, value))
            else:
                value, at = _value(text, at)
                node.items.append(value)
            at = _skip(text, at)
            if text.startswith(",", at):
                at = _skip(text, at + 1)
                continue
            if text.startswith(close, at):
                node.end = at + 1
                return node, at + 1
            raise ValueError(f"expected ',' or '{close}'")
    if char == '"':
        _, end = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
        return Node(at, end, "scalar"), end
    for word in _LITERALS:
        if text.startswith(word, at):
            return Node(at, at + len(word), "scalar"), at + len(word)
    match = _NUMBER.match(text, at)
    if match:
        return Node(at, match.end(), "scalar"), match.end()
    raise ValueError(f"unexpected {char!r}")


class Editor:
    """Edits of one file's text, in its style, applied together (`text`)."""

    def __init__(self, text: str) -> None:
        self.original = text
        self.root = parse(text)
        self.unit = indent_unit(text)
        self.ascii = bool(text) and text.isascii()
        self._edits: list[tuple[int, int, str]] = []

    @property
    def text(self) -> str:
        out = self.original
        for start, end, new in sorted(self._edits, key=lambda e: (e[0], e[1]), reverse=True):
            out = out[:start] + new + out[end:]
        return out

    def render(self, value: Any, at: int) -> str:
        """`value` as JSON text to stand at position `at`: indented as the line it starts on."""
        if self._one_line_at(at):
            return json.dumps(value, ensure_ascii=self.ascii)
        return self._rendered_under(value, _line_indent(self.original, at))

    def replace(self, node: Node, value: Any) -> None:
        self._edits.append((node.start, node.end, self.render(value, node.start)))

    def add_member(self, obj: Node, key: str, value: Any) -> None:
        """Put `"key": value` last in the object `obj`."""
        self.add_members(obj, [(key, value)])

    def add_members(self, obj: Node, pairs: list[tuple[str, Any]]) -> None:
        """Put these members last in the object `obj`, in this order (one call per object)."""
        if not pairs:
            return
        def pair(key: str, value: Any, indent: str | None) -> str:
            head = json.dumps(key, ensure_ascii=self.ascii) + ": "
            if indent is None:
                return head + json.dumps(value, ensure_ascii=self.ascii)
            return head + self._rendered_under(value, indent)

        if obj.members:
            _, key_start, last = obj.members[-1]
            if self._one_line(obj):
                new = "".join(", " + pair(k, v, None) for k, v in pairs)
            else:
                indent = _line_indent(self.original, key_start)
                new = "".join(",\n" + indent + pair(k, v, indent) for k, v in pairs)
            self._edits.append((last.end, last.end, new))
            return
        outer = _line_indent(self.original, obj.start)
        inner = outer + self.unit
        new = "\n" + ",\n".join(inner + pair(k, v, inner) for k, v in pairs) + "\n" + outer
        self._edits.append((obj.start + 1, obj.end - 1, new))

    def add_item(self, array: Node, value: Any) -> None:
        """Put `value` last in the array `array`."""
        if array.items:
            last = array.items[-1]
            if self._one_line(array):
                new = ", " + json.dumps(value, ensure_ascii=self.ascii)
            else:
                indent = _line_indent(self.original, last.start)
                new = ",\n" + indent + self._rendered_under(value, indent)
            self._edits.append((last.end, last.end, new))
            return
        outer = _line_indent(self.original, array.start)
        inner = outer + self.unit
        new = "\n" + inner + self._rendered_under(value, inner) + "\n" + outer
        self._edits.append((array.start + 1, array.end - 1, new))

    def remove_members(self, obj: Node, keys: set[str]) -> None:
        """Take the members `keys` out of `obj` (in one call per object), with their commas."""
        spans = [(m[1], m[2].end) for m in obj.members]
        doomed = [i for i, m in enumerate(obj.members) if m[0] in keys]
        self._remove(obj, spans, doomed)

    def remove_items(self, array: Node, doomed: list[int]) -> None:
        self._remove(array, [(item.start, item.end) for item in array.items], doomed)

    def _remove(self, container: Node, spans: list[tuple[int, int]], doomed: list[int]) -> None:
        if not doomed:
            return
        if len(doomed) == len(spans):
            self._edits.append((container.start + 1, container.end - 1, ""))
            return
        kept = [i for i in range(len(spans)) if i not in doomed]
        for i in doomed:
            if any(k < i for k in kept):
                # `,<space>entry`: from the end of the entry before it to its own end
                self._edits.append((spans[i - 1][1], spans[i][1], ""))
            else:
                # `entry,<space>`: from its start to the start of the next kept entry
                after = min(k for k in kept if k > i)
                self._edits.append((spans[i][0], spans[after][0], ""))
        self._edits = _merged(self._edits)

    def _rendered_under(self, value: Any, indent: str) -> str:
        return dumps(value, unit=self.unit, indent=indent, ensure_ascii=self.ascii)

    def _one_line(self, node: Node) -> bool:
        return "\n" not in self.original[node.start:node.end]

    def _one_line_at(self, at: int) -> bool:
        """True when the value at `at` sits in a container written on one line."""
        for container in _containers(self.root, at):
            if container.start < at and self._one_line(container):
                return True
        return False


def dumps(value: Any, *, unit: str = "  ", indent: str = "", ensure_ascii: bool = False) -> str:
    """JSON as people write config: objects one member a line, a list of scalars on one line."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = indent + unit
        members = [
            f"{inner}{json.dumps(key, ensure_ascii=ensure_ascii)}: "
            + dumps(item, unit=unit, indent=inner, ensure_ascii=ensure_ascii)
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return json.dumps(value, ensure_ascii=ensure_ascii)
        inner = indent + unit
        items = [inner + dumps(item, unit=unit, indent=inner, ensure_ascii=ensure_ascii)
                 for item in value]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=ensure_ascii)


def _containers(node: Node, at: int) -> list[Node]:
    found = []
    current: Node | None = node
    while current is not None:
        found.append(current)
        children = [m[2] for m in current.members] + current.items
        current = next((c for c in children if c.start <= at < c.end), None)
    return found


def _merged(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Deletions that overlap, joined (inserts stay as they are)."""
    out: list[tuple[int, int, str]] = []
    for start, end, new in sorted(edits):
        if out and not new and not out[-1][2] and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]), "")
        else:
            out.append((start, end, new))
    return out


def indent_unit(text: str) -> str:
    """What the JSON `text` indents by: its first indented line's white space, else 2 spaces."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    match = re.match(r"[ \t]*", text[line_start:at])
    return match.group(0) if match else ""


__all__ = ["Editor", "Node", "dumps", "parse"]
