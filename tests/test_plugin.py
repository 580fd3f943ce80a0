"""The Claude Code plugin (issue 17, item 2): what it registers is what `install` writes.

`sage_mem/agents/claude_plugin/sage-mem/` is a Claude Code plugin
(`.claude-plugin/plugin.json` with the MCP server inline, `hooks/hooks.json`
with the hooks), listed by `sage_mem/agents/claude_plugin/.claude-plugin/
marketplace.json`: it ships inside the package, so an installed sage-mem
carries it. It runs `sage-mem` from PATH,
as a project install does, so it holds no one's paths. The plugin and
`install claude-code` are two ways to the same entries: a test holds them
equal, so that neither drifts (and `claude plugin validate` checks the format
where Claude Code is installed).
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from stand_in_api import client, isolated_env
from support import ROOT

import sage_mem
from sage_mem.agents.install import HOOK_EVENTS, _hook_command, _mcp_entry

MARKETPLACE = ROOT / "sage_mem" / "agents" / "claude_plugin"
PLUGIN = MARKETPLACE / "sage-mem"


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_manifest_names_the_plugin_and_registers_the_server_as_install_does() -> None:
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", manifest["name"])
    assert manifest["version"] == sage_mem.__version__
    entry = _mcp_entry(["sage-mem"], None, with_type=False)
    entry.pop("env")
    assert manifest["mcpServers"] == {"sage-mem": entry}


def test_the_plugin_hooks_are_the_ones_install_registers() -> None:
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == set(HOOK_EVENTS)
    for event, sub in HOOK_EVENTS.items():
        (group,) = hooks[event]
        assert group == {"hooks": [{"type": "command",
                                    "command": _hook_command(["sage-mem"], None, sub)}]}


def test_the_marketplace_lists_the_plugin_where_it_is() -> None:
    market = load(MARKETPLACE / ".claude-plugin" / "marketplace.json")
    (entry,) = market["plugins"]
    assert entry["name"] == "sage-mem" and (MARKETPLACE / entry["source"]).resolve() == PLUGIN
    assert market["owner"]["name"]


@pytest.mark.clients
def test_claude_code_validates_the_plugin(tmp_path) -> None:
    """The real Claude Code (from .ci/clients-setup) accepts the plugin's format."""
    done = subprocess.run([client("claude"), "plugin", "validate", str(PLUGIN)],
                          capture_output=True, text=True, timeout=120,
                          env=isolated_env(tmp_path / "home"))
    assert done.returncode == 0, done.stdout + done.stderr
