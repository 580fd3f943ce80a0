"""`sage-mem install`: registering with Claude Code, Cursor and Codex, harming no config."""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from pathlib import Path
from urllib.parse import quote

import pytest

from sage_mem.agents import install as install_module
from sage_mem.agents.install import InstallResult, default_command, install
from sage_mem.errors import SageMemError

COMMAND = ["/opt/sage mem/bin/sage-mem"]

OTHER_SERVER = {"command": "npx", "args": ["-y", "@acme/other-mcp"], "env": {"TOKEN": "x"}}
OTHER_SESSION_HOOK = {"type": "command", "command": "echo hello", "timeout": 5}
OTHER_PROMPT_HOOK = {"type": "command", "command": "~/bin/lint-prompt.sh"}

CODEX_CONFIG = """\
# my codex settings
model = "o3"  # the good one
approval_policy = "on-request"

[mcp_servers.other]
command = "npx"
args = ["-y", "@acme/other-mcp"]   # keep this comment

# a comment about profiles
[profiles.fast]
model = "o4-mini"
"""


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


def run(client: str, scope: str | None, project: Path, home: Path, **kwargs) -> InstallResult:
    kwargs.setdefault("command", COMMAND)
    kwargs.setdefault("memory_dir", None)
    kwargs.setdefault("dry_run", False)
    return install(client, scope=scope, project_dir=project, home=home, **kwargs)


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def config_files(client: str, scope: str, project: Path, home: Path) -> list[Path]:
    base = project if scope == "project" else home
    if client == "claude-code":
        mcp = project / ".mcp.json" if scope == "project" else home / ".claude.json"
        return [mcp, base / ".claude" / "settings.json"]
    if client == "cursor":
        return [base / ".cursor" / "mcp.json"]
    return [base / ".codex" / "config.toml", base / ".codex" / "hooks.json"]


def seed_other_config(client: str, scope: str, project: Path, home: Path) -> None:
    """Each client's files as a user who already has other servers and hooks would have them."""
    for path in config_files(client, scope, project, home):
        if path.name == "config.toml":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(CODEX_CONFIG, encoding="utf-8")
        elif path.name in ("settings.json", "hooks.json"):  # Codex's hooks.json: hooks alone
            write_json(path, {
                **({"permissions": {"allow": ["Bash(npm test)"]}}
                   if path.name == "settings.json" else {}),
                "hooks": {
                    "SessionStart": [{"matcher": "startup", "hooks": [OTHER_SESSION_HOOK]}],
                    "UserPromptSubmit": [{"hooks": [OTHER_PROMPT_HOOK]}],
                    "PreToolUse": [{"matcher": "Bash", "hooks": [OTHER_PROMPT_HOOK]}],
                },
            })
        elif path.name == ".claude.json":
            write_json(path, {
                "numStartups": 12,
                "projects": {str(project): {"mcpServers": {"local-one": OTHER_SERVER}}},
                "mcpServers": {"other": OTHER_SERVER},
            })
        else:
            write_json(path, {"mcpServers": {"other": OTHER_SERVER}})


def snapshot(*folders: Path) -> dict[str, tuple[bytes | None, int]]:
    out: dict[str, tuple[bytes | None, int]] = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for name in dirs:
                out[os.path.join(root, name)] = (None, 0)
            for name in files:
                path = os.path.join(root, name)
                out[path] = (Path(path).read_bytes(), os.stat(path).st_mtime_ns)
    return out


ALL = [
    pytest.param("claude-code", "project", id="claude-code-project"),
    pytest.param("claude-code", "user", id="claude-code-user"),
    pytest.param("cursor", "project", id="cursor-project"),
    pytest.param("cursor", "user", id="cursor-user"),
    pytest.param("codex", "user", id="codex-user"),
    pytest.param("codex", "project", id="codex-project"),
]


# Claude Code


def test_claude_code_project_scope_adds_the_server_and_both_hooks_beside_existing_ones(
    project: Path, home: Path
) -> None:
    seed_other_config("claude-code", "project", project, home)
    result = run("claude-code", "project", project, home)

    mcp = read_json(project / ".mcp.json")
    assert mcp["mcpServers"]["other"] == OTHER_SERVER
    assert mcp["mcpServers"]["sage-mem"] == {
        "type": "stdio", "command": COMMAND[0], "args": ["serve"]}

    settings = read_json(project / ".claude" / "settings.json")
    assert settings["permissions"] == {"allow": ["Bash(npm test)"]}
    assert settings["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [OTHER_PROMPT_HOOK]}]
    session = settings["hooks"]["SessionStart"]
    assert session[0] == {"matcher": "startup", "hooks": [OTHER_SESSION_HOOK]}
    # No matcher: SessionStart must run on startup, resume, clear and compact alike.
    assert session[1] == {"hooks": [{"type": "command",
                                     "command": f"{shlex.quote(COMMAND[0])} hook session-start"}]}
    prompt = settings["hooks"]["UserPromptSubmit"]
    assert prompt[0] == {"hooks": [OTHER_PROMPT_HOOK]}
    assert shlex.split(prompt[1]["hooks"][0]["command"]) == [*COMMAND, "hook", "user-prompt-submit"]
    assert sorted(map(str, result.files_changed)) == sorted(
        [str(project / ".mcp.json"), str(project / ".claude" / "settings.json")])


def test_claude_code_user_scope_uses_top_level_mcp_servers_in_claude_json(
    project: Path, home: Path
) -> None:
    seed_other_config("claude-code", "user", project, home)
    run("claude-code", "user", project, home)

    state = read_json(home / ".claude.json")
    assert state["numStartups"] == 12
    assert state["projects"] == {str(project): {"mcpServers": {"local-one": OTHER_SERVER}}}
    assert set(state["mcpServers"]) == {"other", "sage-mem"}
    assert state["mcpServers"]["sage-mem"]["command"] == COMMAND[0]
    hooks = read_json(home / ".claude" / "settings.json")["hooks"]
    assert len(hooks["SessionStart"]) == 2 and len(hooks["UserPromptSubmit"]) == 2
    assert not (project / ".mcp.json").exists()
    assert not (project / ".claude").exists()


def test_an_old_sage_mem_hook_is_updated_in_place_and_never_duplicated(
    project: Path, home: Path
) -> None:
    ours = shlex.quote(COMMAND[0])
    old = "/old/venv/bin/sage-mem"
    settings = write_json(project / ".claude" / "settings.json", {"hooks": {
        "SessionStart": [{"hooks": [
            OTHER_SESSION_HOOK,
            {"type": "command", "command": f"{old} hook session-start", "timeout": 9},
        ]}],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "sage-mem hook user-prompt-submit"}]},
            {"hooks": [{"type": "command",
                        "command": "python3 -m sage_mem hook user-prompt-submit"}]},
            {"hooks": [OTHER_PROMPT_HOOK]},
        ],
    }})
    run("claude-code", "project", project, home)

    hooks = read_json(settings)["hooks"]
    assert hooks["SessionStart"] == [{"hooks": [
        OTHER_SESSION_HOOK,
        {"type": "command", "command": f"{ours} hook session-start", "timeout": 9},
    ]}]
    assert hooks["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": f"{ours} hook user-prompt-submit"}]},
        {"hooks": [OTHER_PROMPT_HOOK]},
    ]


def test_keys_a_user_added_to_our_server_entry_are_kept(project: Path, home: Path) -> None:
    mcp = write_json(project / ".cursor" / "mcp.json", {"mcpServers": {"sage-mem": {
        "command": "/old/sage-mem", "args": ["serve"], "disabled": False,
        "env": {"SAGE_MEM_DIR": "/old/memory", "HTTP_PROXY": "http://proxy"},
    }}})
    run("cursor", "project", project, home)

    assert read_json(mcp)["mcpServers"]["sage-mem"] == {
        "command": COMMAND[0], "args": ["serve"], "disabled": False,
        "env": {"HTTP_PROXY": "http://proxy"},
    }


@pytest.mark.parametrize("folder, passed", [
    pytest.param("memory dir/with space", True, id="custom-folder"),
    pytest.param("home/.sage-mem/memory", False, id="default-folder"),
])
def test_a_custom_memory_folder_is_passed_as_dir_and_as_env(
    tmp_path: Path, project: Path, home: Path, folder: str, passed: bool
) -> None:
    memory = tmp_path / folder
    result = run("claude-code", "project", project, home, memory_dir=memory)

    entry = read_json(project / ".mcp.json")["mcpServers"]["sage-mem"]
    hooks = read_json(project / ".claude" / "settings.json")["hooks"]
    command = hooks["SessionStart"][0]["hooks"][0]
    if passed:
        assert entry["env"] == {"SAGE_MEM_DIR": str(memory)}
        assert shlex.split(command["command"]) == [
            *COMMAND, "--dir", str(memory), "hook", "session-start"]
        assert result.memory_dir == memory
    else:
        assert "env" not in entry
        assert "--dir" not in command["command"]
        assert result.memory_dir is None


# Cursor


@pytest.mark.parametrize("scope", ["project", "user"])
def test_cursor_gets_an_mcp_servers_entry_and_no_type_key(
    project: Path, home: Path, scope: str
) -> None:
    seed_other_config("cursor", scope, project, home)
    run("cursor", scope, project, home)

    path = (project if scope == "project" else home) / ".cursor" / "mcp.json"
    servers = read_json(path)["mcpServers"]
    assert servers == {"other": OTHER_SERVER,
                       "sage-mem": {"command": COMMAND[0], "args": ["serve"]}}


# Codex


def test_codex_appends_our_table_and_keeps_every_other_byte(project: Path, home: Path) -> None:
    seed_other_config("codex", "user", project, home)
    config = home / ".codex" / "config.toml"
    run("codex", None, project, home, memory_dir=home / "notes")

    text = config.read_text(encoding="utf-8")
    assert text.startswith(CODEX_CONFIG)
    assert text[len(CODEX_CONFIG):] == (
        "\n[mcp_servers.sage-mem]\n"
        f'command = "{COMMAND[0]}"\n'
        'args = ["serve"]\n'
        f'env = {{ SAGE_MEM_DIR = "{home / "notes"}" }}\n'
    )
    data = tomllib.loads(text)
    assert data["mcp_servers"]["other"] == {"command": "npx", "args": ["-y", "@acme/other-mcp"]}
    assert data["mcp_servers"]["sage-mem"]["env"] == {"SAGE_MEM_DIR": str(home / "notes")}


def test_codex_gets_the_two_context_hooks_in_its_hooks_json_beside_the_users(
    project: Path, home: Path
) -> None:
    """Codex reads hooks from hooks.json beside config.toml, in Claude Code's shape: install
    adds SessionStart and UserPromptSubmit there (not Stop or PreCompact, which read Claude
    Code's transcript), keeps the user's hooks byte for byte, and says to trust them."""
    seed_other_config("codex", "user", project, home)
    hooks_file = home / ".codex" / "hooks.json"
    before = hooks_file.read_text(encoding="utf-8")
    result = run("codex", "user", project, home, memory_dir=home / "notes")

    hooks = read_json(hooks_file)["hooks"]
    assert set(read_json(hooks_file)) == {"hooks"}  # Codex refuses any other root key
    assert hooks["PreToolUse"] == [{"matcher": "Bash", "hooks": [OTHER_PROMPT_HOOK]}]
    assert hooks["SessionStart"][0] == {"matcher": "startup", "hooks": [OTHER_SESSION_HOOK]}
    for event, sub in (("SessionStart", "session-start"),
                       ("UserPromptSubmit", "user-prompt-submit")):
        (ours,) = hooks[event][1]["hooks"]
        assert shlex.split(ours["command"]) == [*COMMAND, "--dir", str(home / "notes"),
                                                "hook", sub]
    assert "Stop" not in hooks and "PreCompact" not in hooks
    assert any("/hooks" in note and "trust" in note for note in result.notes)
    assert run("codex", "user", project, home, memory_dir=home / "notes").changed is False
    removed = install_module.uninstall("codex", scope="user", project_dir=project, home=home)
    assert hooks_file in removed.files_changed
    assert hooks_file.read_text(encoding="utf-8") == before


def test_codex_replaces_only_our_table_when_the_command_changes(project: Path, home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    before = (
        CODEX_CONFIG
        + "\n[mcp_servers.sage-mem]\ncommand = \"/old/sage-mem\"\nargs = [\"serve\"]\n"
        + "startup_timeout_sec = 20\n\n[mcp_servers.sage-mem.env]\nSAGE_MEM_DIR = \"/old\"\n"
        + "\n# about the tail table\n[tail]\nkey = 'v'\n"
    )
    config.write_text(before, encoding="utf-8")
    result = run("codex", "user", project, home)

    text = config.read_text(encoding="utf-8")
    assert text == (
        CODEX_CONFIG
        + f'\n[mcp_servers.sage-mem]\ncommand = "{COMMAND[0]}"\nargs = ["serve"]\n'
        + "startup_timeout_sec = 20\n"
        + "\n# about the tail table\n[tail]\nkey = 'v'\n"
    )
    assert result.backups and result.backups[0].read_text(encoding="utf-8") == before


@pytest.mark.parametrize("quoted", [
    pytest.param('[mcp_servers."sage-mem"]', id="double-quoted"),
    pytest.param("[mcp_servers.'sage-mem']", id="single-quoted"),
    pytest.param("[ mcp_servers . sage-mem ]  # ours", id="spaced"),
])
def test_codex_finds_our_table_however_its_header_is_spelled(
    project: Path, home: Path, quoted: str
) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'{quoted}\ncommand = "/old"\nargs = ["serve"]\n\n[other]\nx = 1\n')
    run("codex", "user", project, home)

    data = tomllib.loads(config.read_text(encoding="utf-8"))
    assert data == {"mcp_servers": {"sage-mem": {"command": COMMAND[0], "args": ["serve"]}},
                    "other": {"x": 1}}


def test_codex_keeps_crlf_line_endings(project: Path, home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(b'model = "o3"\r\n')
    run("codex", "user", project, home)

    raw = config.read_bytes()
    assert raw.startswith(b'model = "o3"\r\n\r\n[mcp_servers.sage-mem]\r\n')
    assert b"\n" not in raw.replace(b"\r\n", b"")


def test_codex_project_scope_and_codex_home(project: Path, home: Path, tmp_path: Path) -> None:
    run("codex", "project", project, home)
    config = tomllib.loads((project / ".codex" / "config.toml").read_text())
    assert "sage-mem" in config["mcp_servers"]

    elsewhere = tmp_path / "codex-home"
    run("codex", "user", project, home, codex_home=elsewhere)
    assert (elsewhere / "config.toml").is_file()
    assert not (home / ".codex").exists()


def test_codex_entry_written_in_a_form_we_do_not_edit_is_refused(project: Path, home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    before = '[mcp_servers]\nsage-mem = { command = "/old", args = ["serve"] }\n'
    config.write_text(before)
    with pytest.raises(SageMemError, match="does not edit"):
        run("codex", "user", project, home)
    assert config.read_text() == before


# every client


@pytest.mark.parametrize("client, scope", ALL)
def test_a_second_install_changes_nothing_and_makes_no_second_backup(
    project: Path, home: Path, client: str, scope: str
) -> None:
    seed_other_config(client, scope, project, home)
    first = run(client, scope, project, home, memory_dir=home / "mem")
    assert len(first.backups) == len(config_files(client, scope, project, home))
    before = snapshot(project, home)

    second = run(client, scope, project, home, memory_dir=home / "mem")

    assert second.files_changed == [] and second.backups == []
    assert {change.action for change in second.changes} == {"unchanged"}
    assert snapshot(project, home) == before
    assert "already installed" in second.format_text()


@pytest.mark.parametrize("client, scope", ALL)
def test_install_into_empty_folders_creates_the_files(
    project: Path, home: Path, client: str, scope: str
) -> None:
    result = run(client, scope, project, home)

    assert {change.action for change in result.changes} == {"create"}
    assert result.backups == []
    for path in config_files(client, scope, project, home):
        assert path.is_file()
        if path.suffix == ".toml":
            tomllib.loads(path.read_text())
        else:
            read_json(path)
    mode = 0o644 if scope == "project" else 0o600
    assert all(path.stat().st_mode & 0o777 == mode for path in result.files_changed)


@pytest.mark.parametrize("client, scope", ALL)
@pytest.mark.parametrize("seeded", [
    pytest.param(True, id="existing"), pytest.param(False, id="new")])
def test_dry_run_shows_the_diff_and_writes_nothing(
    project: Path, home: Path, client: str, scope: str, seeded: bool
) -> None:
    if seeded:
        seed_other_config(client, scope, project, home)
    before = snapshot(project, home)

    result = run(client, scope, project, home, dry_run=True)

    assert snapshot(project, home) == before
    assert result.dry_run and result.backups == []
    assert len(result.files_changed) == len(config_files(client, scope, project, home))
    for change in result.changes:
        assert "sage-mem" in change.diff and "serve" in "".join(c.diff for c in result.changes)
        assert change.diff.startswith("---")
    text = result.format_text()
    assert "would " in text and "Dry run: nothing was written." in text


MALFORMED = [
    pytest.param("claude-code", ".mcp.json", '{"mcpServers": {', "not valid JSON",
                 id="truncated-json"),
    pytest.param("claude-code", ".mcp.json", '["a list"]', "JSON object", id="json-list"),
    pytest.param("claude-code", ".mcp.json", '{"mcpServers": "none"}', "expected an object",
                 id="servers-not-object"),
    pytest.param("claude-code", ".claude/settings.json", '{"hooks": []}', "expected an object",
                 id="hooks-not-object"),
    pytest.param("claude-code", ".claude/settings.json", '{"hooks": {"SessionStart": {}}}',
                 "expected a list", id="event-not-list"),
    pytest.param("claude-code", ".claude/settings.json", "{'single': 'quotes'}", "not valid JSON",
                 id="single-quoted-json"),
    pytest.param("cursor", ".cursor/mcp.json", '{"mcpServers": {}} // comment', "not valid JSON",
                 id="json-with-comment"),
    pytest.param("codex", ".codex/config.toml", 'model = "o3\n', "not valid TOML", id="bad-toml"),
    pytest.param("codex", ".codex/config.toml", "mcp_servers = 3\n", "not a table",
                 id="servers-not-table"),
]


@pytest.mark.parametrize("client, name, content, message", MALFORMED)
def test_a_malformed_config_is_a_one_line_error_and_nothing_is_written(
    project: Path, home: Path, client: str, name: str, content: str, message: str
) -> None:
    scope = "project"
    for path in config_files(client, scope, project, home):
        if path.suffix == ".json":
            write_json(path, {"mcpServers": {"other": OTHER_SERVER}})
    bad = project / name
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(content, encoding="utf-8")
    before = snapshot(project, home)

    with pytest.raises(SageMemError) as caught:
        run(client, scope, project, home)

    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(bad) in str(caught.value)
    assert snapshot(project, home) == before  # not overwritten, no other file changed, no backup


def test_a_backup_keeps_the_original_bytes_and_mode_and_the_file_keeps_its_mode(
    project: Path, home: Path
) -> None:
    path = write_json(project / ".cursor" / "mcp.json", {"mcpServers": {"other": OTHER_SERVER}})
    os.chmod(path, 0o640)
    original = path.read_bytes()

    result = run("cursor", "project", project, home)

    (backup,) = result.backups
    # In the state folder, never beside the file (a project's files are committed).
    assert backup.parent == home / ".sage-mem" / "install-backups"
    assert backup.name.startswith(quote(str(path), safe="") + ".")
    assert not [p for p in path.parent.iterdir() if p != path]
    assert backup.read_bytes() == original
    assert backup.stat().st_mode & 0o777 == 0o640
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_symlinked_config_is_written_through_to_its_target(
    project: Path, home: Path, tmp_path: Path
) -> None:
    target = write_json(tmp_path / "dotfiles" / "mcp.json", {"mcpServers": {"other": OTHER_SERVER}})
    link = home / ".cursor" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)

    run("cursor", "user", project, home)

    assert link.is_symlink()
    assert set(read_json(target)["mcpServers"]) == {"other", "sage-mem"}


def test_json_indentation_and_key_order_are_kept(project: Path, home: Path) -> None:
    path = project / ".mcp.json"
    path.write_text('{\n    "zeta": 1,\n    "mcpServers": {},\n    "alpha": "é"\n}\n',
                    encoding="utf-8")
    result = run("claude-code", "project", project, home)

    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n    "zeta": 1,\n    "mcpServers": {\n        "sage-mem": {')
    assert list(json.loads(text)) == ["zeta", "mcpServers", "alpha"]
    assert '"alpha": "é"' in text
    diff = next(c.diff for c in result.changes if c.path == path)
    assert '-    "zeta": 1' not in diff


def test_unknown_client_or_scope_is_refused(project: Path, home: Path) -> None:
    with pytest.raises(SageMemError, match="unknown client"):
        run("vscode", "project", project, home)
    with pytest.raises(SageMemError, match="unknown scope"):
        run("cursor", "global", project, home)


def test_default_scope_is_project_except_for_codex(project: Path, home: Path) -> None:
    assert run("cursor", None, project, home, dry_run=True).scope == "project"
    assert run("claude-code", None, project, home, dry_run=True).scope == "project"
    assert run("codex", None, project, home, dry_run=True).scope == "user"


def test_default_command_is_an_absolute_runnable_sage_mem() -> None:
    command = default_command()
    assert os.path.isabs(command[0])
    assert os.access(command[0], os.X_OK)
    assert command == [command[0]] or command[1:] == ["-m", "sage_mem"]


def test_result_as_json_and_text(project: Path, home: Path) -> None:
    seed_other_config("cursor", "project", project, home)
    result = run("cursor", "project", project, home)

    data = json.loads(json.dumps(result.to_dict()))
    assert data["client"] == "cursor" and data["scope"] == "project" and data["dryRun"] is False
    assert data["command"] == COMMAND
    assert data["changed"] == [str(project / ".cursor" / "mcp.json")]
    assert data["backups"] == [str(result.backups[0])]
    assert data["files"][0]["action"] == "update" and data["files"][0]["diff"]
    text = result.format_text()
    assert f"{project / '.cursor' / 'mcp.json'}: updated" in text
    assert "backup: " in text and "Restart the client" in text
