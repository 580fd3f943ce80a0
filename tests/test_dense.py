"""numpy's engine (`search/dense.py`): used only when it pays, never needed.

Its rankings equal the pure-Python engine's and a sum over every posting
(`tests/test_pruning.py` runs every comparison on both); here: a process
imports numpy only once its searches read in Python what the import costs
(a hook's one search never does), and without numpy (a plain install) every
search takes the pure path and ranks alike.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from test_plain_install import without_extras_env
from test_pruning import NOW, corpus

from sage_mem.search import dense
from sage_mem.search.index import Index

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_pruning import corpus
    from sage_mem.search import dense
    from sage_mem.search.index import Index

    dense.IMPORT_AFTER = {after}
    memories, queries = corpus(2, 400)
    index = Index()
    index.add_many(memories)
    seen = []
    for query in queries:
        index.search(query)
        seen.append("numpy" in sys.modules)
    import threading
    for thread in threading.enumerate():
        if thread.name == "sage-mem numpy import":
            thread.join()
    used = dense.numpy_for(dense.DENSE_FROM) is not None
    print(seen.index(True) if True in seen else -1, dense._read_in_python, int(used))
""")


def run(after: int, env: dict[str, str] | None = None) -> tuple[int, int, bool]:
    from pathlib import Path

    tests = str(Path(__file__).parent)
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests, after=after)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    first, read, used = done.stdout.split()
    return int(first), int(read), used == "1"


def test_numpy_is_imported_once_searches_read_what_it_costs() -> None:
    pytest.importorskip("numpy")
    # Past the first few searches (each reads a few hundred postings in Python), not before;
    # imported in the background, then used.
    first, read, used = run(after=3_000)
    assert first > 0 and read >= 3_000 and used
    # The rule's real threshold is never reached by one search of this folder (a hook's).
    first, read, used = run(after=dense.IMPORT_AFTER)
    assert first == -1 and read < dense.IMPORT_AFTER and not used


def test_without_numpy_every_search_is_pure_python_and_ranks_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memories, queries = corpus(3, 400)
    index = Index()
    index.add_many(memories)
    monkeypatch.setattr(dense, "USE_NUMPY", False)
    want = [[(hit.id, hit.score) for hit in index.search(query, now=NOW)] for query in queries]
    monkeypatch.setattr(dense, "USE_NUMPY", True)  # asked for, but absent
    monkeypatch.setattr(dense, "DENSE_FROM", 0)
    monkeypatch.setattr(dense, "_missing", False)
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` raises ImportError
    got = [[(hit.id, hit.score) for hit in index.search(query, now=NOW)] for query in queries]
    assert got == want
    assert dense._missing  # it tried once, and remembers


def test_a_plain_install_searches_without_numpy() -> None:
    """In a process where numpy cannot be imported (a plain install), a search whose
    postings would call for numpy answers all the same."""
    first, _, used = run(after=0, env=without_extras_env())
    assert first == -1 and not used


@pytest.mark.parametrize("half_life", [None, 30.0])
def test_numpy_sums_equal_the_pure_sums_to_the_last_bit(half_life: float | None) -> None:
    """Every raw score numpy's engine gives is the sum, in the same order, of the same
    float64 products as adding every posting in Python: equal as floats, not only rounded."""
    np = pytest.importorskip("numpy")
    memories, queries = corpus(5, 500)
    index = Index(half_life_days=half_life)
    index.add_many(memories)
    compared = 0
    for query in queries:
        chosen = index._query_terms(query)
        if chosen is None:
            continue
        weighted = index._query_weights(*index._most_telling(*chosen))
        every: dict[int, float] = {}
        for item in sorted(weighted, key=lambda entry: entry.ceiling, reverse=True):
            for numbers, weights in item.parts:
                for number, value in zip(numbers, weights, strict=True):
                    every[number] = every[number] + item.weight * value if number in every \
                        else item.weight * value
        factor = index._factor(NOW, False)
        trusts = None if half_life else index._shown
        got = dense.accumulate_dense(np, weighted, 10, None, factor, index._max_boost,
                                     len(index._ids), trusts)
        assert got and all(every[key] == value for key, value in got.items())
        compared += len(got)
    assert compared > 500


def test_an_index_still_grows_after_numpy_read_its_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy reads the postings and trust factors in place (no copy); an array read so
    cannot grow while a view of it lives, so none may outlive the search: a memory added
    after is indexed and found."""
    pytest.importorskip("numpy")
    from sage_mem.memory.value import memory_from_meta

    monkeypatch.setattr(dense, "USE_NUMPY", True)
    monkeypatch.setattr(dense, "DENSE_FROM", 0)
    memories, queries = corpus(6, 200)
    index = Index()
    for memory in memories:
        index.put(memory)  # postings held in growable arrays, as a live index's are
    for query in queries[:10]:
        index.search(query)
    first = memories[0]
    index.put(memory_from_meta("zz_new", first.path.with_name("zz_new.md"),
                               {"description": first.description}, first.body))
    assert "zz_new" in [hit.id for hit in index.search(first.description, limit=50)]


def test_a_numpy_another_thread_is_still_importing_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The semantic extra imports numpy in a background thread of a server; a search
    meanwhile finds it in `sys.modules` half made, and scores in Python until it is done."""
    import importlib.machinery
    import types

    half = types.ModuleType("numpy")
    half.__spec__ = importlib.machinery.ModuleSpec("numpy", None)
    half.__spec__._initializing = True  # type: ignore[attr-defined]  # as importlib marks it
    monkeypatch.setitem(sys.modules, "numpy", half)
    monkeypatch.setattr(dense, "USE_NUMPY", None)
    assert dense.numpy_for(10 * dense.DENSE_FROM) is None
    half.__spec__._initializing = False  # type: ignore[attr-defined]
    assert dense.numpy_for(10 * dense.DENSE_FROM) is half
