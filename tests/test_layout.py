"""The package's rooms and what each may import (the rules in each room's docstring).

Every import in `sage_mem/` is read from the source (at module level and inside
functions alike; an import under `if TYPE_CHECKING:` is only a type and does not
count), turned into the room it reaches, and checked against `MAY_IMPORT`. A new
module at the top of the package, or a new room, fails here until it is given
its place: the folder listing is how a reader finds the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import ROOT

PACKAGE = ROOT / "sage_mem"

# The top-level modules that are not rooms: the public API, the entry points,
# the error tree and the store that ties the rooms together.
TOP = {"__init__", "__main__", "cli", "errors", "store"}

# room -> the rooms (or top-level modules) it may import at run time.
# `from .. import __version__` reaches the package itself (`__init__`): any room may.
BASE = {"errors", "__init__"}
MAY_IMPORT: dict[str, set[str]] = {
    "errors": {"__init__"},
    "memory": BASE,
    "disk": BASE | {"memory"},
    "search": BASE | {"memory", "disk"},
    "checks": BASE | {"memory", "disk"},
    "store": BASE | {"memory", "disk", "search", "checks"},
    # several folders at once, above the store: one store per folder
    "folders": BASE | {"memory", "disk", "search", "checks", "store"},
    "dream": BASE | {"memory", "disk", "search", "checks", "store"},
    "sync": BASE | {"memory", "disk", "checks", "store"},
    "agents": BASE | {"memory", "disk", "search", "checks", "store", "folders", "dream", "sync"},
    "mcp_server": BASE | {"memory", "disk", "search", "checks", "store", "folders", "dream",
                          "agents", "sync"},
    "ui": BASE | {"memory", "disk", "search", "checks", "store", "folders", "dream", "agents"},
    "commands": BASE | {"memory", "disk", "search", "checks", "store", "folders", "dream", "agents",
                        "mcp_server", "ui", "sync", "cli"},
    # The entry point's fast paths: a hook (agents) and the merge driver git runs (sync).
    "cli": BASE | {"agents", "commands", "sync"},
    "__main__": {"cli"},
    "__init__": BASE | {"memory", "search", "store", "folders"},
}
# A module that may reach one room more than the rest of its own, and why.
EXCEPTIONS = {
    # `sage-mem init` opens the new folder's store to write its MEMORY.md.
    ("disk/template.py", "store"),
    # `sage-mem init --git` makes its first commit the way sync commits (secrets held back).
    ("disk/template.py", "sync"),
}


def room_of(module: str) -> str:
    """`sage_mem.disk.safe_io` -> `disk`; `sage_mem.store` -> `store`; `sage_mem` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def type_only_lines(tree: ast.Module) -> set[int]:
    """The lines of every `if TYPE_CHECKING:` block."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported_modules(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """Every sage_mem module `path` imports at run time (of `text`, if given), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    skip = type_only_lines(tree)
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("sage_mem"))
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if not target.startswith("sage_mem"):
            continue
        for alias in node.names:  # `from . import context` names a module
            sub = ROOT.joinpath(*f"{target}.{alias.name}".split("."))
            is_module = sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()
            found.append((node.lineno, f"{target}.{alias.name}" if is_module else target))
    return found


def wrong_imports(path: Path, text: str | None = None) -> list[str]:
    room = room_of(module_name(path))
    allowed = MAY_IMPORT.get(room, set()) | {room}
    where = str(path.relative_to(PACKAGE))
    return [
        f"line {line}: {target}"
        for line, target in imported_modules(path, text)
        if room_of(target) not in allowed and (where, room_of(target)) not in EXCEPTIONS
    ]


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_lives_in_a_known_room() -> None:
    unknown = sorted(
        str(path.relative_to(PACKAGE))
        for path in SOURCES
        if room_of(module_name(path)) not in MAY_IMPORT
    )
    assert not unknown, f"give these a room in MAY_IMPORT (and a docstring saying why): {unknown}"


def test_every_room_says_what_it_owns_and_may_not_import() -> None:
    for room in sorted(MAY_IMPORT.keys() - TOP - {"errors"}):
        init = PACKAGE / room / "__init__.py"
        assert init.exists(), f"{room}/ is a room, with an __init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "Modules:" in doc, f"{room}/__init__.py names its modules"
        assert "import" in doc, f"{room}/__init__.py says what it may (not) import"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_module_imports_only_what_its_room_may(path: Path) -> None:
    wrong = wrong_imports(path)
    where = path.relative_to(PACKAGE)
    assert not wrong, f"{where} reaches outside what its room may import: {wrong}"


def test_a_wrong_import_is_caught_however_it_is_written() -> None:
    value = PACKAGE / "memory" / "value.py"
    assert wrong_imports(value, "from ..store import MemoryStore\n") == ["line 1: sage_mem.store"]
    assert wrong_imports(value, "def f():\n    from ..disk import safe_io\n") == [
        "line 2: sage_mem.disk.safe_io"
    ]
    assert wrong_imports(value, "import sage_mem.search.index\n") == [
        "line 1: sage_mem.search.index"
    ]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..store import X\n"
    assert wrong_imports(value, typed) == []
    assert wrong_imports(value, "from . import fields\nfrom .. import errors\n") == []
