"""Installs that suit a shared repository (issue 17, item 2).

Project files (`.mcp.json`, `.claude/settings.json`, `.cursor/mcp.json`) are
committed: they get `sage-mem` from PATH, never one person's absolute path
(unless asked); an edit changes only sage-mem's entries, in the file's style;
backups go to the state folder; a missing memory folder is said; `uninstall`
takes out exactly what `install` put in. Through `install()` and the CLI.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_install import ALL, CODEX_CONFIG, config_files, seed_other_config

from sage_mem.agents.install import default_command, install, uninstall


def run(client: str, scope: str | None, project: Path, home: Path, **kwargs):
    kwargs.setdefault("memory_dir", None)
    return install(client, scope=scope, project_dir=project, home=home, **kwargs)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def on_path(monkeypatch: pytest.MonkeyPatch, folder: Path, target: str | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if target is not None:
        (folder / "sage-mem").symlink_to(target)
    monkeypatch.setenv("PATH", str(folder))


def commands_in(project: Path) -> set[str]:
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["sage-mem"]
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    found = {server["command"]}
    for groups in hooks.values():
        found |= {hook["command"].split()[0] for group in groups for hook in group["hooks"]}
    return found


# the command a shared file runs


def test_project_files_run_sage_mem_from_path_when_it_is_this_one(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path(monkeypatch, tmp_path / "bin", default_command()[0])
    result = run("claude-code", "project", project, home)
    assert commands_in(project) == {"sage-mem"}
    assert not any("PATH" in note for note in result.notes)
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert {event: group[0]["hooks"][0]["command"] for event, group in hooks.items()} == {
        "SessionStart": "sage-mem hook session-start",
        "UserPromptSubmit": "sage-mem hook user-prompt-submit",
        "Stop": "sage-mem hook stop",
        "PreCompact": "sage-mem hook pre-compact",
    }


@pytest.mark.parametrize("other, said", [
    pytest.param(False, "is not on your PATH", id="not-on-path"),
    pytest.param(True, "another installation", id="another-installation"),
])
def test_project_files_still_name_sage_mem_and_say_how_to_put_it_on_path(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    other: bool, said: str,
) -> None:
    script = tmp_path / "other-sage-mem"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    on_path(monkeypatch, tmp_path / "bin", str(script) if other else None)
    result = run("cursor", "project", project, home)
    server = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["sage-mem"]
    assert server["command"] == "sage-mem"
    (note,) = [note for note in result.notes if said in note]
    assert "--absolute" in note and "pipx install" in note


def test_the_absolute_path_only_in_user_scope_or_on_request(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path(monkeypatch, tmp_path / "bin", default_command()[0])
    run("cursor", "user", project, home)
    user = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["sage-mem"]
    assert os.path.isabs(user["command"])
    run("cursor", "project", project, home, absolute=True)
    mine = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["sage-mem"]
    assert mine["command"] == default_command()[0]


# minimal edits


def only_additions(before: str, after: str) -> None:
    """The diff adds lines; a line it takes out only comes back with a comma after it."""
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    removed = [line[2:] for line in diff if line.startswith("- ")]
    added = [line[2:] for line in diff if line.startswith("+ ")]
    assert all(line + "," in added for line in removed), removed
    assert added


SETTINGS = """{
    "permissions": {"allow": ["Bash(npm test)", "Read"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ]
    },
    "zeta": "é"
}
"""
MCP = '{\n\t"mcpServers": {"other": {"command": "npx", "args": ["-y", "@acme/x"]}},\n\t"z": 1\n}\n'


def test_json_edits_change_only_sage_mems_entries_in_the_files_style(
    project: Path, home: Path
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(SETTINGS, encoding="utf-8")
    (project / ".mcp.json").write_text(MCP, encoding="utf-8")
    run("claude-code", "project", project, home, command=["sage-mem"])
    after = settings.read_text(encoding="utf-8")
    only_additions(SETTINGS, after)
    assert '    "permissions": {"allow": ["Bash(npm test)", "Read"]},\n' in after
    assert '"zeta": "é"' in after  # non-ASCII as it was, not \u escapes
    data = json.loads(after)
    # sage-mem's: the hooks, and Claude Code's own memory turned off (claude_memory.py), last
    assert list(data) == ["permissions", "hooks", "zeta", "autoMemoryEnabled"]
    assert list(data["hooks"]) == ["PreToolUse", "SessionStart", "UserPromptSubmit", "Stop",
                                   "PreCompact"]
    mcp = (project / ".mcp.json").read_text(encoding="utf-8")
    # a one-line object stays on one line, and sage-mem joins it there
    assert mcp.startswith('{\n\t"mcpServers": {"other": {"command": "npx", "args": ["-y", '
                          '"@acme/x"]}, "sage-mem": {"type": "stdio"')
    assert mcp.endswith('\n\t"z": 1\n}\n')
    # a second install with another command changes only that command's text
    run("claude-code", "project", project, home, command=["/opt/sage-mem"])
    again = settings.read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(after.splitlines(), again.splitlines(), strict=True)
               if a != b]
    assert changed and all("sage-mem" in a and "/opt/sage-mem" in b for a, b in changed)


# backups and the memory folder


def sage(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "sage_mem", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_backups_go_to_the_state_folder_and_a_missing_memory_folder_is_said(
    project: Path, home: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "HOME": str(home)}
    config = project / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(MCP, encoding="utf-8")
    memory = tmp_path / "notes"
    done = sage(project, env, "--dir", str(memory), "install", "cursor", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert any("does not exist yet" in note and str(memory) in note for note in result["notes"])
    (backup,) = result["backups"]
    assert Path(backup).parent == tmp_path / ".notes.sage-mem" / "install-backups"
    assert Path(backup).read_text(encoding="utf-8") == MCP
    assert sorted(p.name for p in config.parent.iterdir()) == ["mcp.json"]  # nothing beside it
    sage(project, env, "--dir", str(memory), "init")
    again = sage(project, env, "--dir", str(memory), "install", "cursor", "--absolute")
    assert "does not exist" not in again.stdout


# uninstall


def files_of(client: str, scope: str, project: Path, home: Path) -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.exists() else None
            for path in config_files(client, scope, project, home)}


@pytest.mark.parametrize("client, scope", ALL)
def test_uninstall_takes_out_exactly_what_install_put_in(
    project: Path, home: Path, client: str, scope: str
) -> None:
    seed_other_config(client, scope, project, home)
    before = files_of(client, scope, project, home)
    run(client, scope, project, home, memory_dir=home / "mem", command=["sage-mem"])
    assert files_of(client, scope, project, home) != before
    result = uninstall(client, scope=scope, project_dir=project, home=home)
    assert result.changed
    assert files_of(client, scope, project, home) == before
    again = uninstall(client, scope=scope, project_dir=project, home=home)
    assert not again.changed and "not installed" in again.format_text()


@pytest.mark.parametrize("client, scope", ALL)
def test_uninstall_after_an_install_into_nothing_leaves_no_file(
    project: Path, home: Path, client: str, scope: str
) -> None:
    run(client, scope, project, home, command=["sage-mem"])
    result = uninstall(client, scope=scope, project_dir=project, home=home)
    assert {c.action for c in result.changes} == {"delete"}
    assert all(value is None for value in files_of(client, scope, project, home).values())


def test_uninstall_keeps_other_hooks_in_a_group_it_shared(project: Path, home: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    shared = {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "notify-send done"},
        {"type": "command", "command": "sage-mem hook stop"},
    ]}]}}
    settings.write_text(json.dumps(shared, indent=2) + "\n", encoding="utf-8")
    uninstall("claude-code", scope="project", project_dir=project, home=home)
    assert json.loads(settings.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
    }


def test_uninstall_through_the_cli_dry_run_first(project: Path, home: Path) -> None:
    env = {**os.environ, "HOME": str(home)}
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG, encoding="utf-8")
    assert sage(project, env, "install", "codex").returncode == 0
    installed = config.read_text(encoding="utf-8")
    dry = sage(project, env, "uninstall", "codex", "--dry-run")
    assert dry.returncode == 0 and "-[mcp_servers.sage-mem]" in dry.stdout
    assert config.read_text(encoding="utf-8") == installed
    done = sage(project, env, "uninstall", "codex")
    assert done.returncode == 0 and "Uninstalled" in done.stdout
    assert config.read_text(encoding="utf-8") == CODEX_CONFIG
    assert "sage-mem" not in tomllib.loads(config.read_text())["mcp_servers"]
