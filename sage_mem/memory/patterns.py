"""Regular expressions compiled at their first use, not when their module is imported.

A hook answered without a server is a new process for every prompt, and every
module-level `re.compile` on its import path is paid by every prompt whether the
pattern is used or not: the YAML and frontmatter patterns (a file is parsed only
when it changed since the index cache), CJK runs and Chinese dates and numbers
(for an English prompt). `on_use` gives such a pattern: the same object
in the module, compiled the first time one of its methods is asked for; from
then on its methods are the compiled pattern's own (bound in C), so a build that
runs it ten thousand times pays nothing for the wait. What a hook compiles at
import is kept to the patterns it runs on every prompt
(tests/test_hook_imports.py checks that it runs none of these on a plain prompt).
"""

from __future__ import annotations

import re
from typing import cast

# What a caller may ask of a pattern; each is taken over from the compiled pattern.
_TAKEN = ("search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer",
          "scanner", "pattern", "flags", "groups", "groupindex")


class _OnUse:
    """A pattern's source and flags until a method is asked for, then the compiled pattern's
    methods and attributes as its own (a second thread compiling too sets the same ones)."""

    def __init__(self, source: str, flags: int) -> None:
        self.source = source
        self.compile_flags = flags

    def __getattr__(self, name: str) -> object:
        # Only for a name not set yet: `_TAKEN` is set at once, so this runs once.
        if name not in _TAKEN:
            raise AttributeError(name)
        compiled = re.compile(self.source, self.compile_flags)
        for taken in _TAKEN:
            setattr(self, taken, getattr(compiled, taken))
        return getattr(compiled, name)

    @property
    def compiled(self) -> bool:
        """Whether the pattern was compiled (a method of it was asked for)."""
        return "search" in self.__dict__

    def __repr__(self) -> str:
        return f"on_use({self.source!r}, {self.compile_flags})"


def on_use(source: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(source, flags)`, made when first used: any `re.Pattern` method works."""
    return cast("re.Pattern[str]", _OnUse(source, flags))


def was_compiled(pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` is compiled: always for `re.compile`'s, for `on_use`'s once used."""
    return not isinstance(pattern, _OnUse) or pattern.compiled
