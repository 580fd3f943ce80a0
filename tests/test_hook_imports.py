"""What the hook process imports, and the shortcuts it takes: a process runs for every prompt.

The hook must answer in well under a second, so its path imports only the
store, the index, the cache and the injection text: not `mcp` (about 1 s),
not `watchdog`, not PyYAML while the cache is current, not argparse and its
parser (the hook's command line is recognised before the parser is built),
not `logging` (only a masked secret logs). These tests run the hook as a real
process, through both entry points (`python -m sage_mem` and the `sage-mem`
console script), and read the list of imported modules from
`python -X importtime`. The shortcuts (the hook's command line read without
argparse, stats.json written without json's slow `indent` path) must give
exactly what the long way gives.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.cli import UsageError, _hook_command, build_parser, main
from sage_mem.stats import Stats, _dumps

# The console script `sage-mem` is `from sage_mem.cli import main; sys.exit(main())`.
ENTRY_POINTS = {
    "python -m sage_mem": ["-m", "sage_mem"],
    "sage-mem": ["-c", "import sys; from sage_mem.cli import main; sys.exit(main())"],
}
NEVER_ON_THE_HOOK_PATH = (
    "mcp",
    "watchdog",
    "yaml",  # files are parsed only when one changed since the cache was written
    "argparse",
    "gettext",
    "shutil",
    "logging",
    "sage_mem.server",
    "sage_mem.dream",
    "sage_mem.audit",
    "sage_mem.watch",
    "sage_mem.render",
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
    imported_by_hook(entry, event, payload)  # writes the index cache: the usual, warm case
    imported, result = imported_by_hook(entry, event, {**payload, "session_id": "s2"})
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert {"sage_mem.hooks", "sage_mem.store", "sage_mem.inject"} <= imported
    assert not forbidden(imported)


def test_hook_with_dir_before_and_after_the_command_skips_argparse(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    entry = ENTRY_POINTS["sage-mem"]
    payload = {"session_id": "s1", "prompt": "anything"}
    imported, result = imported_by_hook(
        entry, "user-prompt-submit", payload, "--dir", str(tmp_path / "other")
    )
    assert result.returncode == 0
    assert "argparse" not in imported
    assert str(tmp_path / "other") in result.stderr.decode()  # "no memory folder …"

    # `--dir` after `hook` wins over one before it, as with argparse.
    result = subprocess.run(
        [sys.executable, *entry, "--dir", str(tmp_path), "hook", "user-prompt-submit",
         "--dir", str(elsewhere)],
        input=json.dumps(payload).encode(), capture_output=True, timeout=60,
    )
    assert result.returncode == 0
    assert str(elsewhere) in result.stderr.decode()


def test_forbidden_imports_are_detected() -> None:
    """The check above can fail: a command that does import argparse is caught."""
    imported, result = imported_by_hook(ENTRY_POINTS["sage-mem"], "--help", {})
    assert result.returncode == 0
    assert "argparse" in forbidden(imported)


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


# The hook's command line, recognised without argparse, must mean what argparse makes of it.

TOKENS = ["hook", "user-prompt-submit", "--dir", "--dir=a", "--dir=", "b", "-x", "--di", "-", "--"]


def _argparse_view(argv: list[str], parser=None) -> tuple[str, str | None] | None:
    parser = parser or build_parser()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = parser.parse_args(argv)
    except (UsageError, SystemExit):
        return None
    if getattr(args, "command", None) != "hook":
        return None
    return args.event, getattr(args, "dir", None)


def test_hook_command_lines_read_as_argparse_reads_them() -> None:
    parser = build_parser()
    recognised = 0
    for length in range(6):
        for argv in itertools.product(TOKENS, repeat=length):
            fast = _hook_command(list(argv))
            if fast is None:
                continue  # left to argparse
            recognised += 1
            assert fast == _argparse_view(list(argv), parser), argv
    assert recognised > 500


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["hook", "session-start"], ("session-start", None), id="plain"),
        pytest.param(["--dir", "/m", "hook", "x"], ("x", "/m"), id="dir-before"),
        pytest.param(["--dir=/m", "hook", "x"], ("x", "/m"), id="dir-equals"),
        pytest.param(["hook", "x", "--dir", "/n"], ("x", "/n"), id="dir-after"),
        pytest.param(["--dir", "/m", "hook", "--dir", "/n", "x"], ("x", "/n"), id="after-wins"),
        pytest.param(["--dir", "/m", "--dir", "/n", "hook", "x"], ("x", "/n"), id="last-wins"),
        pytest.param(["hook"], None, id="no-event"),
        pytest.param(["hook", "a", "b"], None, id="two-events"),
        pytest.param(["hook", "--help"], None, id="help"),
        pytest.param(["hook", "-"], None, id="dash"),
        pytest.param(["--di", "/m", "hook", "x"], None, id="abbreviated"),
        pytest.param(["--dir", "-m", "hook", "x"], None, id="dir-value-like-option"),
        pytest.param(["search", "hook"], None, id="other-command"),
    ],
)
def test_hook_command(argv: list[str], expected: tuple[str, str | None] | None) -> None:
    assert _hook_command(argv) == expected
    if expected is not None:
        assert _argparse_view(argv) == expected


def test_hook_command_line_argparse_refuses_is_still_refused() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["hook"], out=out, err=err) == 1
    assert "EVENT" in err.getvalue() and out.getvalue() == ""


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
