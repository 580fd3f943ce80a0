"""Every file or module the code's comments and the docs name is there.

A stale name in a comment sends the next reader looking for a file that moved
(the pyproject once named `sage_mem/files.py` long after it was gone). Read
here: every module, comment and docstring of `sage_mem/`, `docs/*.md`, the
README and pyproject.toml; checked: each `sage_mem/…`, `tests/…`, `docs/…` or
`benchmarks/…` path, each `room/module.py` path inside the package, each
`module.py` named alone, each dotted `sage_mem.module` name, and each name a
comment gives as `module.name` (`building.Builder`, `memory/value.age_note`)
where the module is one of the package's and no other has its name, and each
`Class.name` where the class is one of the package's and no other has its name: the
class, or a class of the package it comes from, defines or assigns that name.
"""

from __future__ import annotations

import ast
import re

from support import ROOT

PACKAGE = ROOT / "sage_mem"
READ = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "docs").glob("*.md")) + [
    ROOT / "README.md", ROOT / "pyproject.toml",
]
ROOMS = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists())
# Where a named file may be: the repository's top, the package and its rooms, the tests,
# the benchmarks, the CI scripts.
PLACES = [ROOT, PACKAGE, *(PACKAGE / room for room in ROOMS), PACKAGE / "dream" / "rules",
          ROOT / "tests", ROOT / "benchmarks", ROOT / ".ci"]
# Paths that are only in the built wheel: the template is copied there (pyproject.toml).
WHEEL_ONLY = {"sage_mem/memory_template"}

_EDGE = r"(?<![\w./-])"
FROM_TOP = re.compile(_EDGE + r"((?:sage_mem|tests|benchmarks|docs)/[\w./-]*[\w/])")
IN_PACKAGE = re.compile(_EDGE + r"((?:" + "|".join(ROOMS) + r")/[\w/-]+\.py)\b")
ALONE = re.compile(_EDGE + r"([\w-]+\.py)\b")
DOTTED = re.compile(_EDGE + r"(sage_mem(?:\.\w+)+)")
# `module.name` or `room/module.name`, alone in its code span (maybe called: `name()`).
QUALIFIED = re.compile(r"`((?:[a-z_]+/)?[a-z_]\w*)\.([A-Za-z_]\w*)(?:\([^`]*\))?`")
# `Class.name`, alone in its code span (maybe called).
MEMBER = re.compile(r"`(_?[A-Z]\w*)\.([A-Za-z_]\w*)(?:\([^`]*\))?`")
# Bases from outside the package that give a class no member a comment would name (but a
# NamedTuple's `_replace`, `_asdict`, `_fields`).
PLAIN_BASES = {"object", "Protocol", "Generic", "NamedTuple"}


def _modules_by_name() -> dict[str, set[tuple[str, ...]]]:
    """`building` and `search/building` -> ("sage_mem", "search", "building"); a room's
    name -> its package."""
    found: dict[str, set[tuple[str, ...]]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        for name in {parts[-1], "/".join(parts[-2:])} if len(parts) > 2 else {parts[-1]}:
            found.setdefault(name, set()).add(parts)
    return found


MODULES = _modules_by_name()


def _classes() -> dict[str, list[tuple[set[str], list[str]]]]:
    """Each class of the package by name: the names it defines or assigns (`self.name = …`
    in its methods too), and the names of its bases."""
    found: dict[str, list[tuple[set[str], list[str]]]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            names: set[str] = set()
            for inner in ast.walk(node):
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(inner.name)
                elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    names.add(inner.id)
                elif isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store):
                    names.add(inner.attr)
            bases = [ast.unparse(base).rsplit(".", 1)[-1].split("[")[0] for base in node.bases]
            found.setdefault(node.name, []).append((names, bases))
    return found


CLASSES = _classes()


def _has_member(class_name: str, name: str) -> bool:
    """Whether the package's one class `class_name` (or a class it comes from) has `name`; a
    class that comes from one outside the package may have it from there."""
    (names, bases), = CLASSES[class_name]
    if name in names or name in ("_replace", "_asdict", "_fields") and "NamedTuple" in bases:
        return True
    for base in bases:
        if len(CLASSES.get(base, ())) == 1:
            if _has_member(base, name):
                return True
        elif base not in PLAIN_BASES:
            return True
    return False


def _source(parts: list[str]) -> str | None:
    """The source of the module `parts` names, None when there is none."""
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path.read_text(encoding="utf-8")
    return None


def _names_something(parts: list[str]) -> bool:
    """`sage_mem.store.MemoryStore`: the longest module, then a name its source holds."""
    for length in range(len(parts), 1, -1):
        source = _source(parts[:length])
        if source is not None:
            if length == len(parts) or parts[length].startswith("__"):  # `__file__`
                return True
            return re.search(rf"\b{parts[length]}\b", source) is not None
    return False


def missing_names(text: str) -> list[str]:
    """The paths and module names in `text` that name nothing in the repository."""
    missing = []
    for match in FROM_TOP.finditer(text):
        path = match.group(1).rstrip("/.")
        if path not in WHEEL_ONLY and not (ROOT / path).exists():
            missing.append(path)
    for match in IN_PACKAGE.finditer(text):
        if not (PACKAGE / match.group(1)).exists() and match.group(1) not in missing:
            missing.append(match.group(1))
    for match in ALONE.finditer(text):
        if not any((place / match.group(1)).exists() for place in PLACES):
            missing.append(match.group(1))
    for match in DOTTED.finditer(text):
        if not _names_something(match.group(1).split(".")):
            missing.append(match.group(1))
    for match in QUALIFIED.finditer(text):
        module, name = match.groups()
        found = MODULES.get(module, set())
        # A name two modules share (`audit`, `catalog`) is not checked: which one is meant
        # is the reader's guess; `py` is a file's ending (`store.py`), checked above.
        if len(found) == 1 and name != "py" and not _names_something([*next(iter(found)), name]):
            missing.append(f"{module}.{name}")
    for match in MEMBER.finditer(text):
        class_name, name = match.groups()
        if len(CLASSES.get(class_name, ())) == 1 and class_name not in MODULES and not (
                _has_member(class_name, name)):
            missing.append(f"{class_name}.{name}")
    return missing


def test_every_path_and_module_named_in_comments_and_docs_is_there() -> None:
    stale = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in READ
        for name in missing_names(path.read_text(encoding="utf-8"))
    ]
    assert not stale, "these name files or modules that are not there: " + "; ".join(stale)


def test_a_stale_name_is_caught_however_it_is_written() -> None:
    assert missing_names("reads with PyYAML (sage_mem/files.py)") == ["sage_mem/files.py"]
    assert missing_names("see `disk/templates.py`") == ["disk/templates.py"]
    assert missing_names("read with the first (`folders.py`)") == ["folders.py"]
    assert missing_names("measured by tests/test_nothing.py") == ["tests/test_nothing.py"]
    assert missing_names("`sage_mem.agents.demon`") == ["sage_mem.agents.demon"]
    assert missing_names("counted (`index.Builder`)") == ["index.Builder"]
    assert missing_names("how old (`memory.age_note`)") == ["memory.age_note"]
    assert missing_names("`search/index.word_pairs()`") == ["search/index.word_pairs"]
    assert missing_names("waits for it (`MemoryStore.reading_saved`)") == [
        "MemoryStore.reading_saved"]
    assert missing_names("`Index.no_such_weight`, `MemoryStore.no_field`") == [
        "Index.no_such_weight", "MemoryStore.no_field"]
    assert missing_names(
        "`sage_mem/disk/template.py`, `agents/daemon.py`, `store.py`, docs/ and "
        "`sage_mem.store.MemoryStore` and sage_mem/memory_template/ are there, as are "
        "`building.Builder`, `memory/value.age_note`, `scoring.word_pairs(terms)`, "
        "`memory.links`, `merge.sage.driver` (git's) and `hit.id` (no module's), "
        "`MemoryStore.search` (a method), `Index.search` (its base's), `Index.span_weight` "
        "(set in `__init__`), `Hit.id` (a field), `Version._replace` (a NamedTuple's), "
        "`SageMemError.args` (Exception's) and `Path.stem` (not the package's)"
    ) == []
