"""The package's rooms and what each may import (the rules in each room's docstring).

Every import in `sage_mem/` is read from the source (at module level and inside
functions alike; an import under `if TYPE_CHECKING:` is only a type and does not
count), turned into the room it reaches, and checked against `MAY_IMPORT`; and
no module reaches, through any chain of imports, back to itself (a circle). A new
module at the top of the package, or a new room, fails here until it is given
its place: the folder listing is how a reader finds the code.
"""

from __future__ import annotations

import ast
import functools
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
                        "mcp_server", "ui", "sync"},
    # The entry point's fast paths: a hook (agents) and the merge driver git runs (sync).
    "cli": BASE | {"agents", "commands", "sync"},
    "__main__": {"cli"},
    "__init__": BASE | {"memory", "search", "store", "folders"},
}
# A module that may reach one room more than the rest of its own, and why (none today:
# `sage-mem init`, which once opened the store from the disk floor, is handed the opener).
EXCEPTIONS: set[tuple[str, str]] = set()


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
    return list(_imported_modules(path, text))


@functools.cache  # the circle tests parse the whole package once per graph they draw
def _imported_modules(path: Path, text: str | None) -> tuple[tuple[int, str], ...]:
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
    return tuple(found)


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


def import_graph(texts: dict[str, str] | None = None) -> dict[str, set[str]]:
    """module -> the package's modules it imports (`texts`: a module's source to use instead).

    A module's reach to a package that holds it counts only where its source
    names it (`from . import RuleContext`): Python runs a package's `__init__`
    before any module inside it, but that is no import the module wrote, while
    a name read back from a package that imports the module is a circle like
    any other (the package cannot be read without the module, nor it without
    the package).
    """
    texts = texts or {}
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        name = module_name(path)
        graph[name] = {target for _, target in imported_modules(path, texts.get(name))}
    for name, targets in graph.items():
        graph[name] = {
            target for target in targets
            if target in graph and target != name
        }
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in order:
            continue
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in stack:
                    low[node] = min(low[node], order[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == order[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_its_way_back_to_itself() -> None:
    found = circles(import_graph())
    assert not found, f"import circles (give one side a narrower interface): {found}"


def test_a_circle_is_caught_however_long_and_however_it_is_written() -> None:
    # The circles this test was written against, put back one at a time.
    put_back = {
        "sage_mem.disk.template": "def f():\n    from ..sync.steps import first_commit\n",
        "sage_mem.agents.daemon_start": "def f():\n    from . import hooks\n",
        "sage_mem.agents.hook_command": "from ..cli import main\n",
        "sage_mem.disk.watch": "def f():\n    from ..store import MemoryStore\n",
        # A name read back from the package that imports this module.
        "sage_mem.folders.several": "from . import config_file\n",
        "sage_mem.dream.rules.dates": "from . import RuleContext\n",
    }
    for module, text in put_back.items():
        found = circles(import_graph({module: text}))
        assert any(module in group for group in found), module
    # A type-only import is no circle.
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..store import X\n"
    assert circles(import_graph({"sage_mem.disk.watch": typed})) == []
    # A longer loop: memory -> search -> store -> memory.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_disk_floor_never_knows_the_store() -> None:
    # Type-only imports count here: the watcher knows what it keeps current, and `init`
    # what it writes the new folder through, as a protocol.
    named = sorted(
        str(path.relative_to(PACKAGE))
        for path in sorted((PACKAGE / "disk").glob("*.py"))
        if "..store import" in path.read_text(encoding="utf-8")
    )
    assert named == [], f"the disk floor imports the store: {named}"


def test_every_import_reaches_a_module_that_is_there() -> None:
    # A lazy import of a module that moved fails only when its line runs (a hook, once).
    def exists(target: str) -> bool:
        base = ROOT.joinpath(*target.split("."))
        return base.with_suffix(".py").exists() or (base / "__init__.py").exists()

    gone = [f"{path.relative_to(PACKAGE)} line {line}: {target}"
            for path in SOURCES for line, target in imported_modules(path) if not exists(target)]
    assert not gone, f"imports of modules that are not there: {gone}"
    broken = "def f():\n    from .agents.hooks import run_hook\n"
    hook_command = PACKAGE / "agents" / "hook_command.py"
    assert [t for _, t in imported_modules(hook_command, broken) if not exists(t)] == [
        "sage_mem.agents.agents.hooks"
    ]


# A module this long is more than one reader holds in mind: it is split by what its parts own,
# or its docstring says, in a paragraph starting "Why one module:", why it is one thing.
LONG_MODULE = 800


def long_modules_without_a_reason(sources: dict[str, str]) -> list[str]:
    """The modules (path -> source) over LONG_MODULE lines whose docstring gives no reason."""
    return sorted(
        where for where, text in sources.items()
        if len(text.splitlines()) > LONG_MODULE
        and "Why one module:" not in (ast.get_docstring(ast.parse(text)) or "")
    )


def test_a_long_module_says_why_it_is_one() -> None:
    sources = {str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8")
               for path in SOURCES}
    missing = long_modules_without_a_reason(sources)
    assert not missing, f"split these, or say why each is one thing (Why one module:): {missing}"
    long = '"""A room."""\n' + "x = 1\n" * (LONG_MODULE + 1)
    assert long_modules_without_a_reason({"a.py": long}) == ["a.py"]
    reasoned = '"""A room.\n\nWhy one module: it is one thing.\n"""\n' + "x = 1\n" * LONG_MODULE
    assert long_modules_without_a_reason({"a.py": reasoned}) == []
