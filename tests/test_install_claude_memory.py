"""`install claude-code` and Claude Code's own auto memory (agents/claude_memory.py).

By default install turns Claude Code's memory off where it writes the hooks
(`autoMemoryEnabled: false`), so that the model is told of one memory system;
`--claude-memory keep` keeps both, and says so. `uninstall` puts back exactly
what was there, and only while the value is still the one install wrote. The
real client's request is checked in tests/test_real_clients.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.agents.install import install, uninstall
from sage_mem.errors import SageMemError

COMMAND = ["/opt/sage-mem/bin/sage-mem"]


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return {"home": home, "project": project, "backups": tmp_path / "state" / "install-backups"}


def put(world: dict[str, Path], choice: str | None = None, scope: str = "project", **kw):
    return install("claude-code", scope=scope, project_dir=world["project"],
                   home=world["home"], command=COMMAND, backup_dir=world["backups"],
                   claude_memory=choice, **kw)


def take(world: dict[str, Path], scope: str = "project", **kw):
    return uninstall("claude-code", scope=scope, project_dir=world["project"],
                     home=world["home"], backup_dir=world["backups"], **kw)


def settings_of(world: dict[str, Path], scope: str = "project") -> Path:
    base = world["project"] if scope == "project" else world["home"]
    return base / ".claude" / "settings.json"


@pytest.mark.parametrize("scope", ["project", "user"])
def test_install_turns_claude_codes_own_memory_off_and_says_how_to_keep_it(world, scope):
    result = put(world, scope=scope)
    data = json.loads(settings_of(world, scope).read_text(encoding="utf-8"))
    assert data["autoMemoryEnabled"] is False and "SessionStart" in data["hooks"]
    said = result.format_text()
    assert "autoMemoryEnabled: false" in said and "--claude-memory keep" in said
    assert "uninstall claude-code" in said


@pytest.mark.parametrize("before", [
    pytest.param(None, id="no-file"),
    pytest.param('{\n  "permissions": {"allow": ["Read"]}\n}\n', id="absent"),
    pytest.param('{\n  "autoMemoryEnabled": true,\n  "model": "opus"\n}\n', id="was-true"),
    pytest.param('{"autoMemoryEnabled": "yes", "model": "opus"}', id="odd-value"),
])
def test_uninstall_puts_back_exactly_what_was_there(world, before):
    settings = settings_of(world)
    if before is not None:
        settings.parent.mkdir()
        settings.write_text(before, encoding="utf-8")
    put(world)
    assert json.loads(settings.read_text(encoding="utf-8"))["autoMemoryEnabled"] is False
    result = take(world)
    if before is None:
        assert not settings.exists()
    else:
        assert settings.read_text(encoding="utf-8") == before
    assert "as it was before install" in result.format_text()


def test_a_person_who_had_it_off_keeps_it_off_after_uninstall(world):
    settings = settings_of(world)
    settings.parent.mkdir()
    settings.write_text('{"autoMemoryEnabled": false}\n', encoding="utf-8")
    put(world)
    take(world)
    assert settings.read_text(encoding="utf-8") == '{"autoMemoryEnabled": false}\n'


def test_a_value_the_person_set_since_install_is_theirs(world):
    settings = settings_of(world)
    put(world)
    data = json.loads(settings.read_text(encoding="utf-8"))
    data["autoMemoryEnabled"] = True
    settings.write_text(json.dumps(data), encoding="utf-8")
    take(world)
    assert json.loads(settings.read_text(encoding="utf-8")) == {"autoMemoryEnabled": True}


def test_without_install_s_record_uninstall_leaves_the_setting_and_says_so(world, tmp_path):
    settings = settings_of(world)
    put(world)
    result = uninstall("claude-code", scope="project", project_dir=world["project"],
                       home=world["home"], backup_dir=tmp_path / "another-state")
    assert json.loads(settings.read_text(encoding="utf-8")) == {"autoMemoryEnabled": False}
    assert "no record" in result.format_text()


def test_keep_leaves_it_on_says_both_and_undoes_an_earlier_off(world):
    settings = settings_of(world)
    settings.parent.mkdir()
    settings.write_text('{\n  "autoMemoryEnabled": true\n}\n', encoding="utf-8")
    kept = put(world, "keep")
    assert json.loads(settings.read_text(encoding="utf-8"))["autoMemoryEnabled"] is True
    assert "both" in kept.format_text()
    put(world, "off")
    assert json.loads(settings.read_text(encoding="utf-8"))["autoMemoryEnabled"] is False
    put(world, "keep")
    assert json.loads(settings.read_text(encoding="utf-8"))["autoMemoryEnabled"] is True
    take(world)
    assert settings.read_text(encoding="utf-8") == '{\n  "autoMemoryEnabled": true\n}\n'


def test_a_dry_run_records_nothing(world):
    result = put(world, dry_run=True)
    assert '"autoMemoryEnabled": false' in result.format_text()
    assert not settings_of(world).exists() and not world["backups"].exists()


def test_install_names_claude_codes_memories_of_the_project_and_how_to_import_them(world):
    own = (world["home"] / ".claude" / "projects"
           / str(world["project"]).replace("/", "-").replace("_", "-") / "memory")
    own.mkdir(parents=True)
    (own / "MEMORY.md").write_text("- [Cat](user_cat.md) — the cat\n", encoding="utf-8")
    (own / "user_cat.md").write_text("---\nname: cat\ndescription: cat\ntype: user\n---\nx\n",
                                     encoding="utf-8")
    said = put(world).format_text()
    assert f"1 memory file of this project in {own}" in said
    assert "sage-mem import claude-code" in said


def test_claude_memory_is_for_claude_code_only(world):
    with pytest.raises(SageMemError, match="--claude-memory is for claude-code"):
        install("cursor", project_dir=world["project"], home=world["home"],
                command=COMMAND, claude_memory="off")


def test_the_cli_takes_the_choice_and_refuses_another_in_one_line(world, tmp_path):
    env = {"HOME": str(world["home"]), "SAGE_MEM_DIR": str(tmp_path / "memory"),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "sage_mem", "install", "claude-code",
                           "--claude-memory", "share"], cwd=world["project"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "--claude-memory: invalid choice: 'share' (choose from 'off', 'keep')" in done.stderr
    done = subprocess.run([sys.executable, "-m", "sage_mem", "install", "claude-code",
                           "--claude-memory", "keep"], cwd=world["project"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "autoMemoryEnabled" not in settings_of(world).read_text(encoding="utf-8")
