"""The page's JSON answers, able to carry every text the folder holds.

A file name whose bytes are not UTF-8 reaches Python as a lone surrogate
(`caf\\udce9`), which starlette's `JSONResponse` cannot encode: the audit that
reports such a name answered 500. Here it is written as the JSON escape
`\\udce9` (`safe_io.text_bytes`), which the page reads back as the same text.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse as _StarletteJSON

from ..disk.safe_io import text_bytes


def json_bytes(content: Any) -> bytes:
    """`content` as the page's JSON answers carry it."""
    return text_bytes(json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None,
                                 separators=(",", ":")))


class JSONResponse(_StarletteJSON):
    """starlette's `JSONResponse`, a lone surrogate written as its escape."""

    def render(self, content: Any) -> bytes:
        return json_bytes(content)
