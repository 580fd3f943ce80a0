"""`sage-mem init` and `sage-mem export` as a person runs them: real processes, real files.

`init` makes an empty memory folder: example memories only with `--examples`,
and then marked as examples and never injected as facts about the user.
`export` names every file it leaves out and writes a private file. Nothing
`init`, `import` or `export` creates can be read by others, whatever the umask,
unless the owner made the memory folder shared with a group.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.memory.file_format import parse_bytes

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "memory_template"
TEMPLATE_IDS = sorted(p.stem for p in TEMPLATE.glob("*.md"))
START = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "SessionStart",
         "source": "startup"}


def sage_mem(*argv: object, stdin: str | None = None, umask: int | None = None
             ) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process (with `umask`, under that umask)."""

    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", *map(str, argv)],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=dict(os.environ), preexec_fn=set_umask,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def files_in(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if ".git" not in p.relative_to(folder).parts)


def session_start_context(folder: Path) -> str:
    result = sage_mem("--dir", folder, "hook", "session-start", stdin=json.dumps(START))
    assert result.returncode == 0, result.stderr
    if not result.stdout.strip():
        return ""
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


# init


def test_init_creates_no_example_memories(tmp_path: Path) -> None:
    folder = tmp_path / "memory"

    result = sage_mem("--dir", folder, "init", "--json")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["copied"] == []
    assert files_in(folder) == ["MEMORY.md"]
    listed = sage_mem("--dir", folder, "list", "--json")
    assert json.loads(listed.stdout)["memories"] == []


def test_init_says_the_folder_is_empty_and_how_to_get_examples(tmp_path: Path) -> None:
    result = sage_mem("--dir", tmp_path / "memory", "init")

    assert result.returncode == 0, result.stderr
    assert "an empty memory folder" in result.stdout
    assert "example memories" not in result.stdout
    assert "sage-mem init --examples" in result.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_init_git_adds_only_the_git_files(tmp_path: Path) -> None:
    folder = tmp_path / "memory"

    assert sage_mem("--dir", folder, "init", "--git").returncode == 0

    assert files_in(folder) == [".gitattributes", ".gitignore", "MEMORY.md"]
    assert (folder / ".git").is_dir()


def test_init_examples_are_marked_and_never_baseline(tmp_path: Path) -> None:
    folder = tmp_path / "memory"

    result = sage_mem("--dir", folder, "init", "--examples", "--json")

    assert result.returncode == 0, result.stderr
    assert sorted(json.loads(result.stdout)["copied"]) == TEMPLATE_IDS
    memories = json.loads(sage_mem("--dir", folder, "list", "--json").stdout)["memories"]
    assert sorted(m["id"] for m in memories) == TEMPLATE_IDS
    for memory in memories:
        assert memory["description"].startswith("Example: "), memory
        assert "example" in memory["tags"], memory
        assert memory["baseline"] is False, memory
    for memory_id in TEMPLATE_IDS:
        parsed = parse_bytes((folder / f"{memory_id}.md").read_bytes())
        assert not {"baseline", "baselinePriority"} & set(parsed.meta), memory_id
        template = parse_bytes((TEMPLATE / f"{memory_id}.md").read_bytes())
        assert parsed.body == template.body


def test_init_examples_still_answer_the_readme_searches(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    assert sage_mem("--dir", folder, "init", "--examples").returncode == 0

    english = sage_mem("--dir", folder, "search", "how do I run the tests", "--json")
    chinese = sage_mem("--dir", folder, "search", "我的猫叫什么", "--json")

    assert {"reference_test_command", "feedback_tests_first"} & {
        hit["id"] for hit in json.loads(english.stdout)["results"]}
    assert "user_cat_zh" in {hit["id"] for hit in json.loads(chinese.stdout)["results"]}


@pytest.mark.parametrize("argv", [
    pytest.param(["init"], id="plain"),
    pytest.param(["init", "--examples"], id="examples"),
])
def test_session_start_after_init_injects_nothing_about_the_user(
    tmp_path: Path, argv: list[str]
) -> None:
    folder = tmp_path / "memory"
    assert sage_mem("--dir", folder, *argv).returncode == 0

    context = session_start_context(folder)

    assert "backend developer" not in context
    assert "user_profile" not in context


def test_init_examples_into_a_folder_with_memories_copies_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "user_name.md").write_text("---\ndescription: mine\n---\n", encoding="utf-8")

    result = sage_mem("--dir", folder, "init", "--examples")

    assert result.returncode == 0, result.stderr
    assert "already holds 1 memories" in result.stdout
    assert files_in(folder) == ["MEMORY.md", "user_name.md"]


# export


def broken_files(folder: Path) -> dict[str, bytes]:
    files = {
        "broken.md": b"---\ndescription: [unclosed\n---\nbody\n",
        "latin1.md": b"---\ndescription: caf\xe9\n---\n",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def test_export_names_each_file_it_cannot_parse_and_exits_1(memory_dir: Path) -> None:
    broken_files(memory_dir)

    result = sage_mem("--dir", memory_dir, "export", "--jsonl")

    assert result.returncode == 1
    exported = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert exported == TEMPLATE_IDS
    for name in ("broken.md", "latin1.md"):
        (line,) = [line for line in result.stderr.splitlines() if name in line]
        assert "not exported" in line
    assert "2 files" in result.stderr


def test_export_without_problems_exits_0_and_says_nothing(memory_dir: Path) -> None:
    result = sage_mem("--dir", memory_dir, "export", "--jsonl")

    assert result.returncode == 0 and result.stderr == ""
    assert len(result.stdout.splitlines()) == len(TEMPLATE_IDS)


@pytest.mark.parametrize("to_file", [
    pytest.param(False, id="stdout"),
    pytest.param(True, id="output-file"),
])
def test_export_json_report_lists_what_was_left_out(
    memory_dir: Path, tmp_path: Path, to_file: bool
) -> None:
    broken_files(memory_dir)
    target = tmp_path / "export.jsonl"

    result = sage_mem("--dir", memory_dir, "export", "--jsonl", "--json",
                      *(["-o", target] if to_file else []))

    assert result.returncode == 1
    report = json.loads(result.stdout if to_file else result.stderr)
    exported = (target.read_text(encoding="utf-8") if to_file else result.stdout).splitlines()
    assert report["exported"] == len(exported) == len(TEMPLATE_IDS)
    assert report["output"] == (str(target) if to_file else None)
    assert [item["path"] for item in report["leftOut"]] == ["broken.md", "latin1.md"]
    assert all(item["problem"] for item in report["leftOut"])


@pytest.mark.parametrize("archived", [
    pytest.param(False, id="plain"),
    pytest.param(True, id="archived"),
])
def test_export_reports_an_unparseable_archived_file_only_with_archived(
    memory_dir: Path, archived: bool
) -> None:
    (memory_dir / "archive").mkdir()
    (memory_dir / "archive" / "old.md").write_bytes(b"---\ndescription: [unclosed\n---\n")

    result = sage_mem("--dir", memory_dir, "export", "--jsonl",
                      *(["--archived"] if archived else []))

    assert result.returncode == (1 if archived else 0)
    assert ("archive/old.md" in result.stderr) == archived


def test_export_file_is_private_whatever_the_umask(memory_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"

    result = sage_mem("--dir", memory_dir, "export", "--jsonl", "-o", target, umask=0)

    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert len(target.read_text(encoding="utf-8").splitlines()) == len(TEMPLATE_IDS)
    assert f"Exported {len(TEMPLATE_IDS)} memories to {target}" in result.stderr


def test_export_never_replaces_an_existing_file(memory_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("keep me\n", encoding="utf-8")

    result = sage_mem("--dir", memory_dir, "export", "--jsonl", "-o", target)

    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "exists" in result.stderr
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert list(tmp_path.glob(".export.jsonl*")) == []  # no temp file left either


# permissions


CLAUDE_SOURCE = {
    "MEMORY.md": "- [Role](user_role.md) — the user's role\n\n## Notes\nUse pnpm.\n",
    "user_role.md": "---\ndescription: The user is a data scientist\ntype: user\n---\n",
    "project/deploy/steps.md": "---\ndescription: How the deploy works\ntype: project\n---\n",
}


def claude_source(tmp_path: Path) -> Path:
    source = tmp_path / "claude" / "memory"
    for name, text in CLAUDE_SOURCE.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text, encoding="utf-8")
    return source


def create_everything(folder: Path, tmp_path: Path) -> Path:
    """init (examples, git), import and export, all under umask 0; returns the export."""
    source = claude_source(tmp_path)
    export = tmp_path / "exports" / "all.jsonl"
    export.parent.mkdir()
    argv = ["init", "--examples", *(["--git"] if shutil.which("git") else [])]
    for command in (argv, ["import", "claude-code", source], ["export", "--jsonl", "-o", export]):
        result = sage_mem("--dir", folder, *command, umask=0)
        assert result.returncode == 0, (command, result.stderr)
    assert (folder / "project" / "deploy" / "steps.md").is_file()
    assert (folder / "reference_claude_code_notes.md").is_file()
    return export


def modes_under(top: Path) -> dict[str, int]:
    return {str(p.relative_to(top)): stat.S_IMODE(p.lstat().st_mode) for p in top.rglob("*")}


def test_nothing_init_import_and_export_create_is_readable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    folder = home / ".sage-mem" / "memory"  # init creates the missing parents too

    export = create_everything(folder, tmp_path)

    created = {**modes_under(home), "home": stat.S_IMODE(home.stat().st_mode),
               "export": stat.S_IMODE(export.stat().st_mode)}
    exposed = {path: oct(mode) for path, mode in created.items() if mode & 0o077}
    assert exposed == {}
    assert created[".sage-mem/memory"] == 0o700
    assert created[".sage-mem/memory/user_role.md"] == 0o600
    assert created[".sage-mem/memory/project"] == 0o700


def test_a_shared_folder_is_shared_with_its_group_and_nobody_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = tmp_path / "team" / "memory"
    folder.mkdir(parents=True)
    folder.chmod(0o2770)  # what a person does to share a folder with a group

    export = create_everything(folder, tmp_path)

    team = modes_under(folder.parent)  # the memory folder and the state folder beside it
    assert {path: oct(mode) for path, mode in team.items() if mode & 0o007} == {}
    assert stat.S_IMODE(export.stat().st_mode) == 0o600
    for name in ("user_role.md", "project/deploy/steps.md", "user_cat_zh.md", "MEMORY.md"):
        assert team[f"memory/{name}"] & 0o660 == 0o660, name
    assert team["memory/project"] & 0o770 == 0o770


def test_init_of_another_folder_hints_commands_that_reach_it(tmp_path: Path) -> None:
    folder = tmp_path / "notes folder"
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "init", "--examples", str(folder)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**os.environ, "SAGE_MEM_DIR": str(tmp_path / "default")},
    )
    assert done.returncode == 0, done.stderr
    hint = next(line for line in done.stdout.splitlines() if line.startswith("Try: "))
    command = shlex.split(hint.removeprefix("Try: "))
    assert command[:3] == ["sage-mem", "--dir", str(folder)]
    found = subprocess.run(
        [sys.executable, "-m", "sage_mem", *command[1:]],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**os.environ, "SAGE_MEM_DIR": str(tmp_path / "default")},
    )
    assert found.returncode == 0 and "feedback_tests_first" in found.stdout, found.stderr
