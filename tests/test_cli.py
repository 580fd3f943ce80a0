"""The sage-mem CLI, in-process (fast) and as a real subprocess (packaging, entry point)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.cli import main


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


def test_show_prints_body_and_sha(memory_dir: Path) -> None:
    code, out, _ = run("show", "user_cat_zh")
    assert code == 0 and "芝麻" in out and "sha256" in out
    code, out, _ = run("show", "user_cat_zh", "--json")
    assert json.loads(out)["sha256"]


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
    assert set(hooks) == {"SessionStart", "UserPromptSubmit"}


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
