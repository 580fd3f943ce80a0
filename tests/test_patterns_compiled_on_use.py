"""A pattern made with `memory/patterns.on_use` is compiled at its first use, once, and then
answers exactly as `re.compile`'s (the hook's path keeps the patterns it does not run so:
tests/test_hook_imports.py)."""

from __future__ import annotations

import re

import pytest

from sage_mem.memory.patterns import on_use, was_compiled

SOURCE = r"(?P<word>[a-z]+)-([0-9]+)"
TEXT = "alpha-1 Beta-22 gamma-333, delta-x"


@pytest.mark.parametrize("flags", [0, re.IGNORECASE], ids=["plain", "ignorecase"])
def test_answers_as_re_compile(flags: int) -> None:
    eager, lazy = re.compile(SOURCE, flags), on_use(SOURCE, flags)
    assert lazy.search(TEXT).group("word") == eager.search(TEXT).group("word")  # type: ignore[union-attr]
    assert bool(lazy.match(TEXT)) == bool(eager.match(TEXT))
    assert lazy.fullmatch("beta-2") is not None
    assert lazy.findall(TEXT) == eager.findall(TEXT)
    assert [m.span() for m in lazy.finditer(TEXT)] == [m.span() for m in eager.finditer(TEXT)]
    assert lazy.sub(r"\2", TEXT) == eager.sub(r"\2", TEXT)
    assert lazy.subn("", TEXT) == eager.subn("", TEXT)
    assert lazy.split(TEXT) == eager.split(TEXT)
    assert (lazy.pattern, lazy.flags, lazy.groups, dict(lazy.groupindex)) == (
        eager.pattern, eager.flags, eager.groups, dict(eager.groupindex))
    assert lazy.search(TEXT, 8).span() == eager.search(TEXT, 8).span()  # type: ignore[union-attr]


def test_compiled_at_first_use_and_once() -> None:
    pattern = on_use(r"zq[0-9]+x")
    assert not was_compiled(pattern)
    assert pattern.search("a zq12x b") is not None
    assert was_compiled(pattern)
    compiled = pattern.search.__self__  # type: ignore[attr-defined]
    assert isinstance(compiled, re.Pattern)
    pattern.sub("", "zq1x")
    assert pattern.search.__self__ is compiled  # type: ignore[attr-defined]
    assert pattern.sub.__self__ is compiled  # type: ignore[attr-defined]
    assert was_compiled(re.compile("x"))


def test_an_unknown_name_is_an_attribute_error_and_compiles_nothing() -> None:
    pattern = on_use(r"zq")
    with pytest.raises(AttributeError, match="no_such_method"):
        pattern.no_such_method  # type: ignore[attr-defined]  # noqa: B018
    assert not was_compiled(pattern)


def test_a_bad_pattern_fails_at_its_first_use() -> None:
    pattern = on_use(r"(unclosed")
    with pytest.raises(re.error):
        pattern.search("x")
