"""A hook's search reads a bounded number of postings, whatever the prompt (issue 32, item 1).

The term caps bound how many terms a pasted page gives, not how long their
postings are: at 100,000 memories a 4,000-character English page's rarest
terms held over a million postings, the server's search passed the hook's
300 ms wait, and the hook's own path then its 2 s budget, injecting nothing.
A hook's search now takes terms from the rarest up until the next would pass
`context.HOOK_MAX_POSTINGS`. Proved here by counting the postings read from
the index cache (`cache._Backing.postings`, the only way a loaded index reads
postings) on a generated folder, with the bound set low so that a small
folder shows the same rule a 100,000-memory one would; and through a real
hook process whose server never answers: the hook's own path answers with
the memory the prompt is about, within the bound and its budget.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support import unix_address, write_memory

from sage_mem import MemoryStore
from sage_mem.agents import context, hook_socket
from sage_mem.disk.folder import MemoryFolder
from sage_mem.search import cache

COMMON = ("deploy build server release test config error cache query user log branch "
          "review docker network script token backup report metric").split()
MEMORIES = 240
BOUND = 600  # a few of the common words' lists (each some 200 postings), far under all of them
RARE = "zanzibarite"  # one memory's own word, the prompt's question


def _folder(root: Path) -> Path:
    rng = random.Random(32)
    for n in range(MEMORIES):
        words = rng.choices(COMMON, k=40)
        own = RARE if n == 7 else f"qx{n}word"
        write_memory(root, f"project_note_{n}", (
            f"---\ndescription: note on {' '.join(words[:4])} {own}\ncategory: project\n---\n\n"
            f"{' '.join(words)} {own}\n"))
    # Written an hour ago: a file changed within 2 s of the cache is read again (the racy
    # rule), and a hook reads at most 64 such files.
    an_hour_ago = time.time() - 3600
    for path in root.glob("*.md"):
        os.utime(path, (an_hour_ago, an_hour_ago))
    return root


def _pasted() -> str:
    """A pasted log of common words, cut at the 4,000 characters a hook passes on, then the
    question about one memory's own word."""
    rng = random.Random(7)
    question = f" what did we decide about {RARE}?"
    log = " ".join(rng.choice(COMMON) for _ in range(900))
    return log[: context.MAX_QUERY_CHARS - len(question)] + question


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = _folder(tmp_path / "memory")
    MemoryStore(root, watch=False)  # the index cache, as a server or a hook loads it
    return root


@pytest.fixture
def postings_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The length of every postings list read from the index cache."""
    read: list[int] = []
    original = cache._Backing.postings

    def counted(self: Any, term: str) -> Any:
        found = original(self, term)
        if found is not None:
            read.append(len(found[0]))
        return found

    monkeypatch.setattr(cache._Backing, "postings", counted)
    yield read


def _hook_store(root: Path) -> MemoryStore:
    store = MemoryStore(root, watch=False, build=False)  # the hook's own path opens it so
    assert store.loaded is not None and store.loaded.how != "partial"
    return store


def test_a_hook_search_on_a_pasted_page_reads_no_more_postings_than_the_bound(
    folder: Path, postings_read: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = _pasted()
    store = _hook_store(folder)
    store.search(prompt, limit=5)  # unbounded (a CLI search): the page reads far more
    assert sum(postings_read) > 4 * BOUND
    postings_read.clear()

    monkeypatch.setattr(context, "HOOK_MAX_POSTINGS", BOUND)
    session = context.SessionLog.load(folder / "sessions", None)
    text, chosen = context.prompt_context(
        store, prompt, project="p", session=session, limit=5, now=datetime.now(UTC))
    assert 0 < sum(postings_read) <= BOUND
    # The rarest terms are the ones kept: the memory the question is about is found.
    assert [memory.id for memory in chosen][:1] == ["project_note_7"]
    assert RARE in text


def test_a_search_whose_postings_fit_the_bound_is_the_unbounded_search(folder: Path) -> None:
    """The bound only cuts long prompts: a question's hits, scores and order are unchanged."""
    store = _hook_store(folder)
    for query in (f"{RARE} deploy", "release build server", "what broke the docker network"):
        unbounded = store.search(query, limit=10)
        assert unbounded
        assert store.search(query, limit=10, max_postings=context.HOOK_MAX_POSTINGS) == unbounded
        assert store.index.search(query, limit=10, max_postings=10**9) == unbounded


def test_terms_are_taken_rarest_first_until_the_bound(folder: Path,
                                                      postings_read: list[int]) -> None:
    store = _hook_store(folder)
    store.search("release", limit=3)
    one_list = sum(postings_read)  # one common word's postings
    assert one_list > 50
    postings_read.clear()
    # A bound under the common word's list: only the rare word is read, and found.
    hits = store.search(f"release {RARE}", limit=3, max_postings=one_list - 1)
    assert [hit.id for hit in hits] == ["project_note_7"]
    assert postings_read == [1]


def test_a_hooks_answer_is_never_empty_when_the_server_is_slow(folder: Path) -> None:
    """A server that never answers: after the wait the hook's own path answers, in full
    and within its budget, reading no more postings than the bound (set low here)."""
    state = MemoryFolder(folder).state_dir
    silent = socket.socket(socket.AF_UNIX)
    path = state / hook_socket.socket_name(str(folder))
    with unix_address(path) as address:
        silent.bind(address)
    os.chmod(path, 0o600)
    silent.listen()
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True)
    thread.start()
    # The hook process as Claude Code runs it, with the cache's reads counted and the bound
    # set low (on code without the bound, the count passes it).
    program = (
        "import os, runpy, sys\n"
        "from sage_mem.agents import context\n"
        "from sage_mem.search import cache\n"
        f"context.HOOK_MAX_POSTINGS = {BOUND}\n"
        "read = []\n"
        "original = cache._Backing.postings\n"
        "def counted(self, term):\n"
        "    found = original(self, term)\n"
        "    if found is not None:\n"
        "        read.append(len(found[0]))\n"
        "    return found\n"
        "cache._Backing.postings = counted\n"
        "from sage_mem import cli\n"
        "exit_now = cli._exit_now\n"  # a hook ends with os._exit: no atexit
        "def reported(*args):\n"
        "    os.write(2, f'POSTINGS READ {sum(read)}\\n'.encode())\n"
        "    exit_now(*args)\n"
        "cli._exit_now = reported\n"
        f"sys.argv = ['sage-mem', '--dir', {str(folder)!r}, 'hook', 'user-prompt-submit']\n"
        "runpy.run_module('sage_mem', run_name='__main__')\n"
    )
    payload = {"session_id": "s1", "prompt": _pasted(), "cwd": str(folder)}
    try:
        result = subprocess.run(
            [sys.executable, "-c", program], input=json.dumps(payload).encode(),
            capture_output=True, timeout=60,
            env={**os.environ, "SAGE_MEM_HOOK_SOCKET_MS": "200",
                 "SAGE_MEM_HOOK_BUDGET_MS": "1500"},
        )
    finally:
        silent.close()
        for conn in accepted:
            conn.close()
    assert result.returncode == 0, result.stderr
    assert b"did not answer in time" in result.stderr  # the server was asked, and was late
    assert b"time budget" not in result.stderr
    answer = json.loads(result.stdout.decode().splitlines()[0])
    assert "project_note_7" in answer["hookSpecificOutput"]["additionalContext"]
    read = [line for line in result.stderr.decode().splitlines()
            if line.startswith("POSTINGS READ")]
    assert read and 0 < int(read[-1].split()[-1]) <= BOUND


@pytest.mark.parametrize("seed", [1, 2])
def test_pruning_only_when_the_candidates_doubled_keeps_the_search_exact(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `_PRUNE_EVERY` candidates they are pruned only once they have doubled (a pass
    over every candidate before each of a pasted page's dozens of long lists was most of
    its time at 100k). Set low here so that a 500-memory folder takes that path: every
    search still equals scoring every posting."""
    from test_pruning import corpus, mismatches

    from sage_mem.search import ranking
    from sage_mem.search.index import Index

    monkeypatch.setattr(ranking, "_PRUNE_EVERY", 4)
    memories, queries = corpus(seed, 500)
    index = Index()
    index.add_many(memories)
    assert mismatches(index, queries) == 0


def test_a_filter_few_candidates_pass_keeps_the_search_exact() -> None:
    """The threshold's candidates are filtered best first (a hook's project filter was a
    Python call for each of a pasted page's tens of thousands): with one memory in twenty
    passing, the best that pass are often not among the best, and the search is exact."""
    import dataclasses

    from test_pruning import corpus, exhaustive, pruned

    from sage_mem.search.index import Index

    memories, queries = corpus(3, 500)
    memories = [dataclasses.replace(memory, project="a" if number % 20 == 0 else "b")
                for number, memory in enumerate(memories)]
    index = Index()
    index.add_many(memories)
    for query in queries:
        for limit in (1, 3, 10):
            assert pruned(index, query, project="a", limit=limit) == exhaustive(
                index, query, project="a", limit=limit)
