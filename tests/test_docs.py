"""The README and docs/ say what the code does, and every link in them leads somewhere.

- every CLI command is in the README and has help text with an example;
- every MCP tool is in the README or docs/agents.md;
- every audit check the code knows has a row in docs/audit.md's table;
- every relative link in README.md and docs/*.md points at a file that exists
  (and a `#fragment` at a heading of that file);
- every docs/*.md page is linked from the README;
- the README opens with the two set-up commands, and CI runs both.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import click
import pytest

from sage_mem.commands import ALIASES, cli

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
DOCS = ROOT / "docs"
README = README_PATH.read_text(encoding="utf-8")
PAGES = sorted(DOCS.glob("*.md"))
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _subcommands() -> dict[str, click.Command]:
    context = click.Context(cli, info_name="sage-mem")
    commands = {name: cli.get_command(context, name) for name in cli.list_commands(context)}
    return {name: command for name, command in commands.items()
            if command is not None and name not in ALIASES}


# commands


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_command_is_in_readme(name: str) -> None:
    assert re.search(rf"`sage-mem {re.escape(name)}\b", README), f"README has no `sage-mem {name}`"


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_command_has_help_and_example(name: str) -> None:
    command = _subcommands()[name]
    assert command.help and len(command.help) > 10
    assert command.epilog and "sage-mem " in command.epilog
    for param in command.params:
        assert getattr(param, "help", None), f"{name} {param.name} has no help text"


# the two set-up commands


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_opens_with_the_two_setup_commands() -> None:
    blocks = _bash_blocks(README)
    assert README.index("```bash") < README.index("\n## "), "the set-up commands come first"
    assert re.match(r"pip install \. && sage-mem init\b.* && sage-mem search ", blocks[0])
    assert 'pip install -e ".[test]" && python -m pytest' in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    assert 'pip install --quiet -e ".[test]"' in CI and "\npython -m pytest\n" in CI


def test_ci_runs_the_readme_first_command_from_the_wheel() -> None:
    from installed_surfaces import readme_first_command

    assert readme_first_command()[0][0] == "init"  # parsed, and starts where a person starts
    # .ci/run drives every surface, the README's first command first, from the wheel installed
    # without extras (and again with [semantic]).
    assert re.search(r'installed_surfaces\.py" \\\n\s*"\$work/plain-venv/bin/sage-mem"', CI)
    semantic = r'installed_surfaces\.py" --semantic \\\n\s*"\$work/semantic-venv/bin/sage-mem"'
    assert re.search(semantic, CI)


# MCP tools and audit checks


def test_every_mcp_tool_is_in_readme_or_agents_page() -> None:
    from sage_mem.mcp_server.server import DESCRIPTIONS

    documented = README + _text(DOCS / "agents.md")
    for name, description in DESCRIPTIONS.items():
        assert f"`{name}`" in documented, f"neither README nor docs/agents.md documents {name}"
        assert 20 < len(description) < 2048


def _audit_rows() -> dict[str, str]:
    rows = re.findall(r"^\| `([a-z-]+)` \| (error|warning) \|", _text(DOCS / "audit.md"), re.M)
    return dict(rows)


def test_every_audit_check_has_a_row_in_the_audit_page() -> None:
    from sage_mem.checks.audit import CHECKS

    rows = _audit_rows()
    for name, (severity, _finds) in CHECKS.items():
        assert name in rows, f"docs/audit.md does not list the audit check {name}"
        assert rows[name] == severity, f"docs/audit.md gives {name} the wrong severity"


def test_the_audit_page_lists_no_check_the_code_does_not_know() -> None:
    from sage_mem.checks.audit import CHECKS

    assert set(_audit_rows()) <= set(CHECKS)


# links


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", _text(path), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M)}


def _links(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"!?\[[^\]]*\]\(<?([^)\s>]+)>?(?: \"[^\"]*\")?\)", text)


def _relative_links() -> list[tuple[Path, str]]:
    found = []
    for page in [README_PATH, *PAGES]:
        for target in _links(_text(page)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                continue  # http:, https:, mailto: …
            found.append((page, target))
    return found


@pytest.mark.parametrize(
    ("page", "target"),
    [pytest.param(page, target, id=f"{page.relative_to(ROOT)}->{target}")
     for page, target in _relative_links()],
)
def test_every_relative_link_points_at_an_existing_file(page: Path, target: str) -> None:
    path_part, _, fragment = target.partition("#")
    resolved = (page.parent / unquote(path_part)).resolve() if path_part else page
    assert resolved.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"
    assert resolved == ROOT or ROOT in resolved.parents, f"{target} leads out of the repository"
    if fragment and resolved.suffix == ".md":
        assert fragment in _anchors(resolved), (
            f"{page.relative_to(ROOT)} links to {target}: no such heading"
        )


def test_the_docs_have_links_to_check() -> None:
    assert len(_relative_links()) > len(PAGES), "the link test found (almost) nothing to check"


@pytest.mark.parametrize("page", [pytest.param(p, id=p.name) for p in PAGES])
def test_every_docs_page_is_linked_from_the_readme(page: Path) -> None:
    linked = {
        (ROOT / unquote(target.partition("#")[0])).resolve()
        for source, target in _relative_links() if source == README_PATH
    }
    assert page.resolve() in linked, f"README.md does not link to docs/{page.name}"


def test_the_docs_folder_has_the_pages_the_readme_promises() -> None:
    names = {p.name for p in PAGES}
    assert {"memory-file.md", "agents.md", "ui.md", "dream.md", "audit.md", "git.md",
            "retrieval.md", "speed.md", "reliability.md"} <= names


def test_the_readme_stays_a_first_page() -> None:
    assert len(README.splitlines()) <= 260, "README.md is for newcomers: details go in docs/"
