"""A hook shows memories the index cache holds clean without loading the credential patterns.

Compiling `checks/credentials`' patterns was a tenth of a hook's CPU at 10,000 memories (issue
32 item 4). The cache now keeps, for each memory, whether anything a hook shows of it (id,
category, description, body) would be masked (`credentials.shown_secrets`), judged when the
cache is written, under a mark of the rules that judged it. A hook trusts that verdict only
for the index's own copy of a record whose file still holds the bytes indexed, and only
under the same rules; anything else is checked as before, so no secret is ever shown
unmasked: one in the cache, one written into a file after the cache (its mtime set back so
that no walk sees it), one under rules changed since.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_hook_imports import ENTRY_POINTS, imported_by_hook

from sage_mem import MemoryStore
from sage_mem import store as store_module
from sage_mem.agents import context
from sage_mem.checks.credentials import shown_secrets
from sage_mem.memory.value import Memory
from sage_mem.search import cache as cache_module

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
CREDENTIALS = "sage_mem.checks.credentials"


def _write(folder: Path, name: str, description: str, body: str) -> Path:
    path = folder / f"{name}.md"
    path.write_text(
        f"---\nid: {name}\ncategory: reference\ndescription: {description}\n---\n{body}\n",
        encoding="utf-8",
    )
    return path


def _warm(folder: Path) -> MemoryStore:
    """A store answering from the cache a first store wrote (a hook's, in process)."""
    MemoryStore(folder, watch=False)
    return MemoryStore(folder, watch=False, build=False)


def _hook(folder: Path, prompt: str, event: str = "user-prompt-submit") -> tuple[str, set[str]]:
    payload = {"session_id": f"s-{abs(hash(prompt))}", "prompt": prompt, "cwd": str(folder),
               "source": "startup"}
    imported, result = imported_by_hook(ENTRY_POINTS["python -m sage_mem"], event, payload)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    out = result.stdout.decode()
    return (json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip()
            else ""), imported


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_a_hook_on_a_current_cache_loads_no_credential_pattern(
    memory_dir: Path, event: str
) -> None:
    MemoryStore(memory_dir, watch=False)  # writes the cache, judging every memory
    text, imported = _hook(memory_dir, "how do I run the tests", event)
    assert text  # memories (or the session's baselines) were shown
    assert CREDENTIALS not in imported


def test_a_memory_the_cache_flags_is_masked_and_the_patterns_loaded(empty_dir: Path) -> None:
    _write(empty_dir, "deploy_token", "the deploy token for the staging cluster",
           f"staging cluster deploy token {TOKEN}")
    _write(empty_dir, "deploy_notes", "how the staging cluster deploys", "staging cluster notes")
    store = _warm(empty_dir)
    flagged = store.index.get("deploy_token")
    assert flagged is not None and not store.shown_clean(flagged)
    text, imported = _hook(empty_dir, "what is the staging cluster deploy token")
    assert "deploy_token" in text and TOKEN not in text and "ghp_****" in text
    assert CREDENTIALS in imported


@pytest.mark.parametrize("mtime_set_back", [False, True], ids=["edited", "edited-mtime-back"])
def test_a_secret_written_after_the_cache_is_masked(empty_dir: Path, mtime_set_back: bool) -> None:
    path = _write(empty_dir, "deploy_notes", "the staging cluster deploy notes",
                  "staging cluster deploy notes")
    _write(empty_dir, "other", "gardening", "tomatoes")
    store = _warm(empty_dir)
    memory = store.index.get("deploy_notes")
    assert memory is not None and store.shown_clean(memory)
    before = path.stat()
    _write(empty_dir, "deploy_notes", "the staging cluster deploy notes",
           f"staging cluster deploy notes\ntoken: {TOKEN}")
    if mtime_set_back:  # an edit no stat of the folder sees: only the file's bytes tell
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.utime(empty_dir, ns=(empty_dir.stat().st_atime_ns, empty_dir.stat().st_mtime_ns))
    text, imported = _hook(empty_dir, "staging cluster deploy notes")
    assert "deploy_notes" in text and TOKEN not in text and "ghp_****" in text
    assert CREDENTIALS in imported


def test_verdicts_of_other_rules_are_not_trusted(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(empty_dir, "notes", "staging notes", "nothing secret here")
    store = _warm(empty_dir)
    memory = store.index.get("notes")
    assert memory is not None and store.shown_clean(memory)
    mark = store_module.credential_rules_mark()
    assert mark is not None
    monkeypatch.setattr(store_module, "_RULES_MARK", [mark ^ 1])  # credentials.py changed
    assert not store.shown_clean(memory)


def test_only_the_index_own_copy_of_an_unchanged_record_is_clean(empty_dir: Path) -> None:
    from dataclasses import replace

    _write(empty_dir, "notes", "staging notes", "nothing secret here")
    store = _warm(empty_dir)
    memory = store.index.get("notes")
    assert memory is not None and store.shown_clean(memory)
    assert not store.shown_clean(replace(memory, body=f"{TOKEN}"))  # a copy, changed
    store.index.put(replace(memory, description="changed"))  # a changed memory: its own number
    changed = store.index.get("notes")
    assert changed is not None and not store.shown_clean(changed)


def test_a_small_folder_without_a_cache_checks_every_memory(empty_dir: Path) -> None:
    _write(empty_dir, "notes", "staging notes", "nothing secret here")
    store = MemoryStore(empty_dir, watch=False, build=False)  # no cache: read from the files
    memory = store.index.get("notes")
    assert memory is not None and not store.shown_clean(memory)


def test_a_rewritten_cache_keeps_the_verdicts_and_judges_what_changed(
    empty_dir: Path,
) -> None:
    _write(empty_dir, "notes", "staging notes", "nothing secret here")
    _write(empty_dir, "keys", "the api keys", f"ci token {TOKEN}")
    path = _write(empty_dir, "later", "a later note", "nothing yet")
    MemoryStore(empty_dir, watch=False)
    _write(empty_dir, "later", "a later note", f"now {TOKEN}")
    store = MemoryStore(empty_dir, watch=False, build=False)  # the cache, the change on top
    files = store_module._Files(store)
    assert cache_module.save(store.folder, store.index, files.entries(cache_module.scan(
        store.folder)), started_ns=path.stat().st_mtime_ns - 10**10, secrets=files.secrets())
    again = MemoryStore(empty_dir, watch=False, build=False)
    verdicts = {}
    for name in ("notes", "keys", "later"):
        memory = again.index.get(name)
        assert memory is not None
        verdicts[name] = again.shown_clean(memory)
    assert verdicts == {"notes": True, "keys": False, "later": False}


SHOWN = [
    pytest.param(Memory(id=f"ref_{TOKEN}", path=Path("x.md"), description="d", body="b"), id="id"),
    pytest.param(Memory(id="x", path=Path("x.md"), description=f"key {TOKEN}", body="b"),
                 id="description"),
    pytest.param(Memory(id="x", path=Path("x.md"), description="d", body=f"a\r\ntoken={TOKEN}\r\n"),
                 id="body-crlf"),
    pytest.param(Memory(id="x", path=Path("x.md"), description="d", body="b",
                        category=f"misc {TOKEN}"), id="category"),
    pytest.param(Memory(id="x", path=Path("x.md"), description="d",
                        body="db\npassword: Xq7#pLm2$vR9\n"), id="password"),
    pytest.param(Memory(id="x", path=Path("x.md"), description="d", body="密码是 Kx9#mQ2!pL"),
                 id="chinese-password"),
]


@pytest.mark.parametrize("memory", SHOWN)
def test_whatever_a_hook_would_mask_is_judged_unclean(memory: Memory) -> None:
    """The verdict covers every part `render_memory` masks: trusting it renders the same."""
    now = datetime(2026, 12, 5, tzinfo=UTC)
    masked = context.render_memory(memory, now)
    assert masked != context.render_memory(memory, now, clean=True)  # something was masked
    assert shown_secrets(memory)


@pytest.mark.parametrize("memory", [
    pytest.param(Memory(id="x", path=Path("x.md"), description="the password policy",
                        body="Passwords rotate monthly; the token is in the vault."), id="prose"),
    pytest.param(Memory(id="x", path=Path("x.md"), description="猫", body="我的猫叫小花"),
                 id="chinese"),
])
def test_a_clean_memory_renders_the_same_either_way(memory: Memory) -> None:
    now = datetime(2026, 12, 5, tzinfo=UTC)
    assert not shown_secrets(memory)
    assert context.render_memory(memory, now) == context.render_memory(memory, now, clean=True)
