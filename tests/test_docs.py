"""The README documents every CLI command, and every command has help text with an example."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sage_mem.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub for name, sub in action.choices.items() if name != "write"}


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_command_is_in_readme(name: str) -> None:
    assert re.search(rf"`sage-mem {re.escape(name)}\b", README), f"README has no `sage-mem {name}`"


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_command_has_help_and_example(name: str) -> None:
    sub = _subcommands()[name]
    assert sub.description and len(sub.description) > 10
    assert sub.epilog and "sage-mem " in sub.epilog
    for action in sub._actions:
        if action.dest not in ("help",) and action.help is not argparse.SUPPRESS:
            assert action.help, f"{name} {action.dest} has no help text"


def test_readme_opens_with_the_two_setup_commands() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert "pip install . && sage-mem init && sage-mem search" in blocks[0]
    assert 'pip install -e ".[test]" && python -m pytest' in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet -e ".[test]"' in ci and "python -m pytest" in ci


def test_every_mcp_tool_is_in_readme() -> None:
    from sage_mem.server import DESCRIPTIONS

    for name, description in DESCRIPTIONS.items():
        assert f"`{name}`" in README, f"README does not document {name}"
        assert 20 < len(description) < 2048


def test_every_audit_check_is_in_readme() -> None:
    from sage_mem.audit import CHECKS

    for name in CHECKS:
        assert f"| `{name}` |" in README, f"README does not list the audit check {name}"
