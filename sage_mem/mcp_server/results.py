"""A tool's answer as MCP carries it: JSON text and the same data as structured content."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent


def tool_result(data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: `data` as JSON text and as structured content.

    JSON-RPC carries UTF-8 only: a lone surrogate (a byte of a file name that is
    not UTF-8, as the audit reports it) made the SDK's serializer fail and the
    server close the connection. Such text goes out as its escape (`\\udce9`).
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        data = _utf8(data)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _utf8(value: Any) -> Any:
    """`value` with each lone surrogate in its text written as a backslash escape."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_utf8(key): _utf8(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_utf8(item) for item in value]
    return value
