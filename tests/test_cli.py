"""The sage-mem CLI: in-process through `main` (fast), through click's CliRunner (the
click commands on their own), and as a real subprocess (packaging, entry point)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sage_mem import __version__
from sage_mem.cli import main
from sage_mem.commands import ALIASES, cli


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def run_process(
    *argv: str, stdin: str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sage_mem", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_init_examples_copies_the_template(tmp_path: Path) -> None:
    code, out, _ = run("init", "--examples")
    assert code == 0
    folder = tmp_path / "memory"
    assert (folder / "user_cat_zh.md").is_file()
    assert (folder / "MEMORY.md").is_file()
    assert "8 example memories" in out


def test_init_leaves_an_existing_folder_alone(memory_dir: Path) -> None:
    (memory_dir / "feedback_tests_first.md").write_text(
        "---\ndescription: mine\n---\n", encoding="utf-8"
    )
    (memory_dir / "user_profile.md").unlink()
    code, out, _ = run("init", "--examples")
    assert code == 0
    assert not (memory_dir / "user_profile.md").exists()
    assert (memory_dir / "feedback_tests_first.md").read_text(
        encoding="utf-8"
    ) == "---\ndescription: mine\n---\n"
    assert "already holds 7 memories; no examples copied" in out


def test_init_takes_a_path_argument(tmp_path: Path) -> None:
    code, _, _ = run("init", str(tmp_path / "elsewhere"))
    assert code == 0
    assert [p.name for p in (tmp_path / "elsewhere").iterdir()] == ["MEMORY.md"]
    assert not (tmp_path / "memory").exists()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            "how do I run the tests",
            {"reference_test_command", "feedback_tests_first"},
            id="english",
        ),
        pytest.param("我的猫叫什么", {"user_cat_zh"}, id="chinese"),
        pytest.param("发布计划", {"project_release_zh"}, id="chinese-project"),
        pytest.param("cat 芝麻", {"user_cat_zh"}, id="mixed"),
    ],
)
def test_search_finds_template_memories(memory_dir: Path, query: str, expected: set[str]) -> None:
    code, out, _ = run("search", query, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["count"] == len(data["results"]) >= 1
    assert data["results"][0]["id"] in expected
    first = data["results"][0]
    assert {"id", "score", "description", "category", "trust", "updated", "age"} <= set(first)


def test_search_text_output_and_no_match(memory_dir: Path) -> None:
    code, out, _ = run("search", "run the tests", "--limit", "1")
    assert code == 0 and len(out.strip().splitlines()) == 1
    code, out, _ = run("search", "zzqxv")
    assert code == 0 and "No memories match" in out


def test_search_filters_by_category(memory_dir: Path) -> None:
    code, out, _ = run("search", "tests", "--category", "reference", "--json")
    assert code == 0
    assert {hit["category"] for hit in json.loads(out)["results"]} == {"reference"}


def test_add_creates_then_updates_only_given_fields(memory_dir: Path) -> None:
    code, out, _ = run(
        "add",
        "user_editor",
        "--description",
        "The user edits in Helix",
        "--category",
        "user",
        "--tag",
        "tools",
        "--alias",
        "editor",
        "--body",
        "Helix, not vim.",
        "--json",
    )
    assert code == 0, out
    created = json.loads(out)
    assert created["id"] == "user_editor" and created["tags"] == ["tools"]
    code, out, _ = run("add", "user_editor", "--summary", "Helix user", "--json")
    assert code == 0
    text = (memory_dir / "user_editor.md").read_text(encoding="utf-8")
    assert "description: The user edits in Helix" in text and "summary: Helix user" in text
    assert text.endswith("Helix, not vim.\n")


def test_add_write_alias_and_dir_after_command(tmp_path: Path, memory_dir: Path) -> None:
    other = tmp_path / "other"
    run("init", str(other))
    code, _, err = run(
        "write", "project/deadline", "--description", "截止日期是周五", "--dir", str(other)
    )
    assert code == 0, err
    assert (other / "project" / "deadline.md").is_file()
    assert not (memory_dir / "project").exists()


def test_add_refuses_a_stale_expected_sha(memory_dir: Path) -> None:
    code, out, err = run("add", "user_cat_zh", "--summary", "x", "--expected-sha256", "0" * 64)
    assert code == 1 and "changed on disk" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", [
    pytest.param(["archive", "user_cat_zh", "--reason", "x"], id="archive"),
    pytest.param(["mv", "user_cat_zh", "user/pets/cat"], id="mv"),
])
def test_a_stale_expected_sha_is_one_line_and_changes_nothing(
    memory_dir: Path, command: list[str]
) -> None:
    """`archive` and `mv` refuse a file changed since it was read (its sha256 as `show` gave
    it), as `add` does: one line, exit 1, nothing moved; with the sha256 now, they proceed."""
    path = memory_dir / "user_cat_zh.md"
    shown = json.loads(run_process("show", "user_cat_zh", "--json").stdout)["sha256"]
    path.write_bytes(path.read_bytes() + b"Edited in vim meanwhile.\n")
    edited = path.read_bytes()
    done = run_process(*command, "--expected-sha256", shown)
    assert done.returncode == 1 and "changed on disk" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert path.read_bytes() == edited and not (memory_dir / "user" / "pets").exists()
    now = json.loads(run_process("show", "user_cat_zh", "--json").stdout)["sha256"]
    done = run_process(*command, "--expected-sha256", now)
    assert done.returncode == 0, done.stderr
    assert not path.exists()


def test_show_prints_body_and_sha(memory_dir: Path) -> None:
    code, out, _ = run("show", "user_cat_zh")
    assert code == 0 and "芝麻" in out and "sha256" in out
    code, out, _ = run("show", "user_cat_zh", "--json")
    assert json.loads(out)["sha256"]


def test_show_names_the_terminal_escapes_a_body_holds_never_sends_them(
    empty_dir: Path,
) -> None:
    """A memory from a remote or another tool whose body holds an OSC title change, a screen
    clear or a carriage return over a line reached the terminal raw through `show`. Named
    (`<U+001B>`), as the header lines are; a CRLF file's lines still print as lines; `--json`
    keeps the text."""
    (empty_dir / "user_cat.md").write_bytes(
        b"---\r\ndescription: The cat is Sesame\r\ncategory: user\r\n---\r\n\r\n"
        b"Sesame is orange.\x1b]0;pwned\x07\x1b[2J\r\nsafe\rHIDDEN \xe2\x80\xae\tend\r\n"
    )
    result = subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "show",
                             "user_cat"], capture_output=True, timeout=60)  # bytes: \r as is
    assert result.returncode == 0, result.stderr
    body = result.stdout.decode().split("\n\n", 1)[1]
    assert "\x1b" not in body and "\x07" not in body and "\r" not in body, repr(body)
    assert body == ("Sesame is orange.<U+001B>]0;pwned<2 invisible characters>[2J\n"
                    "safe<U+000D>HIDDEN <U+202E>\tend\n"), repr(body)
    shown = json.loads(run_process("--dir", str(empty_dir), "show", "user_cat", "--json").stdout)
    assert "\x1b]0;pwned\x07" in shown["body"]


def test_list_archive_feedback_index(memory_dir: Path) -> None:
    code, out, _ = run("list", "--category", "reference", "--json")
    ids = [m["id"] for m in json.loads(out)["memories"]]
    assert ids == ["reference_docs_zh", "reference_test_command"]
    code, out, _ = run("feedback", "reference_docs_zh", "helpful", "--json")
    assert code == 0 and json.loads(out)["trust"] > 0.5
    code, out, _ = run("archive", "reference_docs_zh", "--reason", "moved to the wiki")
    assert code == 0
    assert (memory_dir / "archive" / "reference_docs_zh.md").is_file()
    assert not (memory_dir / "reference_docs_zh.md").exists()
    code, out, _ = run("list", "--archived", "--json")
    assert "archive/reference_docs_zh" in out
    index = (memory_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert "\n## " in index
    (memory_dir / "MEMORY.md").write_text(  # a merge conflict inside sage-mem's own file
        index.replace("\n## ", "\n<<<<<<< HEAD\n=======\n>>>>>>> x\n## ", 1), encoding="utf-8"
    )
    code, out, _ = run("index")
    assert code == 0 and "<<<<<<<" not in (memory_dir / "MEMORY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["show", "no_such_memory"], id="missing-memory"),
        pytest.param(["show", "../etc/passwd"], id="traversal"),
        pytest.param(["add", "x"], id="new-without-description"),
        pytest.param(["add", "x", "--description", "d", "--category", "pets"], id="bad-category"),
        pytest.param(["add", "x", "--description", "d", "--trust", "7"], id="trust-out-of-range"),
        pytest.param(
            ["add", "x", "--description", "d", "--trust", "high"], id="trust-not-a-number"
        ),
        pytest.param(["archive", "user_cat_zh"], id="archive-without-reason"),
        pytest.param(["feedback", "user_cat_zh", "great"], id="bad-verdict"),
        pytest.param(["search"], id="missing-query"),
        pytest.param(["search", "x", "--limit", "0"], id="zero-limit"),
        pytest.param(["nonsense"], id="unknown-command"),
        pytest.param(["--dir", "/nonexistent/folder", "list"], id="missing-folder"),
    ],
)
def test_user_errors_are_one_line_and_exit_1(memory_dir: Path, argv: list[str]) -> None:
    code, out, err = run(*argv)
    assert code == 1
    assert err.startswith("sage-mem: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_broken_file_is_reported_by_index_not_fatal(memory_dir: Path) -> None:
    (memory_dir / "broken.md").write_text("---\ndescription: [unclosed\n---\n", encoding="utf-8")
    code, out, _ = run("index")
    assert code == 0 and "broken.md" in out
    code, _, _ = run("search", "tests")
    assert code == 0


def test_subprocess_round_trip_with_stdin_body(tmp_path: Path) -> None:
    env = {"SAGE_MEM_DIR": str(tmp_path / "memory")}
    assert run_process("init", env=env).returncode == 0
    added = run_process(
        "add",
        "user_cat",
        "--description",
        "The user's cat is called Sesame",
        "--category",
        "user",
        "--body",
        "-",  # stdin is read for the body only when asked (tests/test_first_hour.py)
        stdin="Orange tabby, 3 years old.\n",
        env=env,
    )
    assert added.returncode == 0, added.stderr
    found = run_process("search", "what is my cat called", "--json", env=env)
    assert json.loads(found.stdout)["results"][0]["id"] == "user_cat"
    shown = run_process("show", "user_cat", env=env)
    assert "Orange tabby" in shown.stdout


def test_subprocess_error_has_no_traceback(tmp_path: Path) -> None:
    result = run_process("show", "nothing", env={"SAGE_MEM_DIR": str(tmp_path / "missing")})
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_help_lists_every_command() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for command in (
        "init",
        "add",
        "search",
        "show",
        "list",
        "archive",
        "feedback",
        "index",
        "audit",
    ):
        assert command in out


def test_install_dry_run_writes_nothing(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    code, out, err = run("install", "claude-code", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)
    assert list(project.iterdir()) == []


def test_install_claude_code_writes_server_and_hooks(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    assert run("install", "claude-code")[0] == 0
    servers = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert servers["sage-mem"]["args"][-1] == "serve"
    hooks = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact"}


def test_export_writes_one_json_line_per_memory(memory_dir: Path) -> None:
    code, out, _ = run("export", "--jsonl")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 8 and all("body" in line for line in lines)


def test_import_errors_are_one_line(memory_dir: Path, tmp_path: Path) -> None:
    code, _, err = run("import", "mnemo", str(tmp_path / "missing.db"))
    assert code == 1 and err.count("\n") == 1
    code, _, err = run("import", "claude-code", str(tmp_path / "missing"))
    assert code == 1 and err.count("\n") == 1


# every command documents itself


COMMANDS = cli.list_commands(click.Context(cli))


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_an_example_and_help_for_each_parameter(name: str) -> None:
    command = cli.commands[name]
    assert command.help and len(command.help) > 10
    assert command.epilog and "sage-mem " in command.epilog.partition("Example:\n")[2]
    for param in command.params:
        assert param.help, f"{name} {param.name} has no help text"


def test_help_lists_the_commands_in_the_order_of_the_design() -> None:
    code, out, _ = run("--help")
    listed = [line.split()[0] for line in out.split("Commands:\n")[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed[: len(COMMANDS)] == COMMANDS


def test_no_command_prints_the_help_and_exits_0() -> None:
    code, out, err = run()
    assert code == 0 and err == "" and "Commands:" in out


def test_an_alias_is_its_command() -> None:
    for alias, name in ALIASES.items():
        shown = run(alias, "--help")[1]
        assert shown.replace(f"sage-mem {alias} ", f"sage-mem {name} ") == run(name, "--help")[1]


# the click commands through CliRunner


def test_cli_runner_add_search_show_round_trip(empty_dir: Path) -> None:
    runner = CliRunner()
    added = runner.invoke(cli, ["add", "user_cat", "--description", "The cat is called Sesame",
                                "--category", "user", "--tag", "pets", "--body", "-", "--json"],
                          input="Orange tabby.\n")
    assert added.exit_code == 0, added.stderr
    assert json.loads(added.stdout)["tags"] == ["pets"]
    found = runner.invoke(cli, ["search", "what is my cat called", "--json"])
    assert found.exit_code == 0 and json.loads(found.stdout)["results"][0]["id"] == "user_cat"
    shown = runner.invoke(cli, ["show", "user_cat"])
    assert shown.exit_code == 0 and "Orange tabby." in shown.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["frobnicate"], "invalid choice: 'frobnicate'", id="unknown-command"),
        pytest.param(["serch", "x"], "did you mean 'search'", id="near-command"),
        pytest.param(["search", "x", "--lim", "3"], "did you mean '--dir' or '--limit'",
                     id="near-option"),
        pytest.param(["search"], "missing argument 'QUERY'", id="missing-argument"),
        pytest.param(["search", "x", "y"], "unexpected extra argument", id="extra-argument"),
        pytest.param(["feedback", "x", "maybe"], "argument VERDICT: invalid choice: 'maybe'",
                     id="bad-choice"),
        pytest.param(["search", "x", "--limit", "many"], "argument --limit: invalid int value",
                     id="not-a-number"),
        pytest.param(["ui", "--port", "70000"], "must be from 0 to 65535", id="out-of-range"),
        pytest.param(["archive", "user_cat"], "missing option '--reason'", id="missing-option"),
        pytest.param(["show", "nobody"], "no memory 'nobody'", id="library-error"),
    ],
)
def test_cli_runner_errors_are_one_line_and_exit_1(
    memory_dir: Path, argv: list[str], message: str
) -> None:
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("sage-mem: error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr
    assert "Usage:" not in result.stderr and "Traceback" not in result.stderr


def test_cli_runner_help_and_version_exit_0() -> None:
    runner = CliRunner()
    helped = runner.invoke(cli, ["add", "-h"])
    assert helped.exit_code == 0, helped.output
    assert "--locked / --unlocked" in helped.stdout
    version = runner.invoke(cli, ["--version"])
    assert version.exit_code == 0 and version.stdout == f"sage-mem {__version__}\n"


def test_dir_given_twice_writes_to_the_first_the_personal_folder(
    tmp_path: Path, memory_dir: Path
) -> None:
    # Before issue 15 item 5 the last --dir won; now the first is the personal folder and
    # a further one a shared folder read with it (tests/test_folders.py).
    other = tmp_path / "other"
    run("init", str(other))
    code, _, err = run("--dir", str(memory_dir), "add", "user_x", "--description", "x y",
                       "--dir", str(other))
    assert code == 0, err
    assert (memory_dir / "user_x.md").is_file() and not (other / "user_x.md").exists()


# the real process


def test_subprocess_usage_error_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = run_process("search", "--limit", "x", env={"SAGE_MEM_DIR": str(tmp_path)})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("sage-mem: error: ") and result.stderr.count("\n") == 1


def test_subprocess_help_and_version() -> None:
    helped = run_process("--help")
    assert helped.returncode == 0 and "Commands:" in helped.stdout
    version = run_process("--version")
    assert version.returncode == 0 and version.stdout == f"sage-mem {__version__}\n"
