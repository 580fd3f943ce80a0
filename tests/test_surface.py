"""The public surface, pinned: what users, scripts and agents already call.

- the names `from sage_mem import …` offers, and the signatures of the
  documented MemoryStore methods (DESIGN §6);
- every CLI command, its arguments and its options, read from its `--help`
  (the way a person finds them, whatever parses the command line);
- every MCP tool, its input-schema properties with their JSON types, and
  which of them are required.

A refactor must leave all of this as it is. A change here is a change for
users: make it on purpose, in this file, in the commit that makes it.
"""

from __future__ import annotations

import inspect
import io
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import anyio
import pytest

import sage_mem
from sage_mem import Hit, Memory, MemoryStore
from sage_mem.cli import main

# the Python API

PUBLIC_NAMES = [
    "CATEGORIES", "ConflictError", "DreamError", "FolderError", "Folders", "Hit", "InvalidId",
    "InvalidMemory", "Memory", "MemoryLocked", "MemoryNotFound", "MemoryStore", "Problem",
    "RunNotFound", "SageMemError", "SecretRefused", "StoreLocked", "__version__",
]

STORE_METHODS = {
    "__init__": "path=None, *, watch=True, poll=False, half_life_days=None, state_dir=None, "
                "reconcile_seconds=30.0, build=True, by_folders=False",
    "search": "query, *, limit=10, offset=0, category=None, project=None, tags=None, "
              "archived=False, model_tokens=None, now=None, max_postings=None, refine=False",
    "read": "memory_id",
    "list": "*, category=None, project=None, tags=None, archived=False",
    "write": "memory_id, *, description=None, body=None, category=None, name=None, "
             "summary=None, aliases=None, tags=None, trust=None, baseline=None, "
             "baseline_priority=None, project=None, supersedes=None, locked=None, "
             "expected_sha256=None, allow_secret=False, stamp=None",
    "archive": "memory_id, reason, *, extra=None, expected_sha256=None",
    "feedback": "memory_id, helpful",
    "restore": "archived_id",
    "rename": "old_id, new_id, *, expected_sha256=None",
    "delete": "memory_id, *, expected_sha256=None",
    "close": "",
}

MEMORY_FIELDS = [
    "id", "path", "description", "body", "category", "name", "summary", "aliases", "tags",
    "trust", "baseline", "baseline_priority", "project", "created", "updated", "supersedes",
    "locked", "archived", "sha256", "category_key", "meta", "problems",
]
HIT_FIELDS = [
    "id", "score", "description", "category", "trust", "updated", "summary", "project", "tags",
    "matched", "folder",
]


def parameters(function: Any) -> str:
    """A signature as names, `*` and defaults: what a caller writes (annotations aside)."""
    shown, star = [], False
    for parameter in list(inspect.signature(function).parameters.values())[1:]:  # no self
        if parameter.kind is parameter.KEYWORD_ONLY and not star:
            shown.append("*")
            star = True
        text = parameter.name
        if parameter.kind is parameter.VAR_POSITIONAL:
            text, star = "*" + text, True
        elif parameter.kind is parameter.VAR_KEYWORD:
            text = "**" + text
        if parameter.default is not parameter.empty:
            text += f"={parameter.default!r}"
        shown.append(text)
    return ", ".join(shown)


def test_the_package_offers_the_public_names() -> None:
    assert sorted(sage_mem.__all__) == sorted(PUBLIC_NAMES)
    for name in PUBLIC_NAMES:
        assert getattr(sage_mem, name) is not None


@pytest.mark.parametrize("method", sorted(STORE_METHODS))
def test_store_methods_keep_their_signatures(method: str) -> None:
    assert parameters(getattr(MemoryStore, method)) == STORE_METHODS[method]


def test_store_is_a_context_manager() -> None:
    assert callable(MemoryStore.__enter__) and callable(MemoryStore.__exit__)


def test_memory_and_hit_keep_their_fields() -> None:
    assert [f.name for f in fields(Memory)] == MEMORY_FIELDS
    assert [f.name for f in fields(Hit)] == HIT_FIELDS


# the CLI: command -> (its arguments as its usage line shows them, its options)

HELP = {"-h", "--help"}
CLI = {
    "init": ("[DIR]", {"--dir", "--examples", "--git", "--remote", "--json"}),
    "add": ("ID", {
        "--dir", "--description", "--category", "--name", "--summary", "--alias", "--tag",
        "--trust", "--baseline", "--no-baseline", "--baseline-priority", "--project",
        "--supersedes", "--locked", "--unlocked", "--body", "--expected-sha256", "--allow-secret",
        "--json",
    }),
    "edit": ("ID", {"--dir", "--replace", "--append", "--heading", "--expected-sha256",
                    "--allow-secret", "--json"}),
    "search": ("QUERY", {
        "--dir", "--limit", "--offset", "--now", "--category", "--project", "--tag", "--archived",
        "--json",
    }),
    "show": ("ID", {"--dir", "--json"}),
    "list": ("", {"--dir", "--category", "--project", "--tag", "--archived", "--json"}),
    "archive": ("ID", {"--dir", "--reason", "--expected-sha256", "--json"}),
    "restore": ("ID", {"--dir", "--json"}),
    "mv": ("OLD NEW", {"--dir", "--expected-sha256", "--json"}),
    "delete": ("ID", {"--dir", "--yes", "-y", "--json"}),
    "feedback": ("ID {HELPFUL,UNHELPFUL}", {"--dir", "--json"}),
    "index": ("", {"--dir", "--json"}),
    "embed": ("", {"--dir", "--json"}),
    "audit": ("", {"--dir", "--strict", "--json"}),
    "dream": ("", {"--dir", "--mode", "--auto", "--json"}),
    "runs": ("", {"--dir", "--json"}),
    "rollback": ("RUN_ID", {"--dir", "--scope", "--dry-run", "--force", "--json"}),
    "serve": ("", {"--dir", "--poll", "--dream-run"}),
    "ui": ("", {"--dir", "--port", "--open", "--poll"}),
    "hook": ("EVENT", {"--dir"}),
    "daemon": ("", {"--dir", "--idle", "--build-only", "--poll"}),
    "install": ("{CLAUDE-CODE,CURSOR,CODEX}",
                {"--dir", "--scope", "--absolute", "--claude-memory", "--dry-run", "--json"}),
    "uninstall": ("{CLAUDE-CODE,CURSOR,CODEX}", {"--dir", "--scope", "--dry-run", "--json"}),
    "import": ("{CLAUDE-CODE,MNEMO,JSONL} PATH",
               {"--dir", "--dry-run", "--allow-secret", "--json"}),
    "export": ("", {"--dir", "--jsonl", "--archived", "--output", "-o", "--json"}),
    "sync": ("", {"--dir", "--remote", "--no-push", "--allow-secret", "--auto", "--json"}),
    "pre-push": ("REMOTE URL", set()),
    "doctor": ("", {"--dir", "--offline", "--json"}),
    "log": ("ID", {"--dir", "--json"}),
    "merge-driver": ("BASE OURS THEIRS PATH", set()),
}
ALIASES = {"write": "add"}
MAIN_OPTIONS = {"--dir", "--version"}

OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def help_text(monkeypatch: pytest.MonkeyPatch, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps at the terminal's width
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--help"], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def listed_options(text: str) -> set[str]:
    """The options a help text lists: each line that starts with an option, up to its help."""
    found: set[str] = set()
    for line in text.splitlines():
        spec = re.match(r"^ {2}(-\S.*?)(?: {2,}|$)", line)
        if spec:
            found |= set(OPTION.findall(spec.group(1)))
    return found


def usage_arguments(text: str) -> str:
    """The arguments a usage line shows, without its options: `ID {HELPFUL,UNHELPFUL}`."""
    usage = re.search(r"(?is)usage: sage-mem \S+(.*?)(?:\n\s*\n|$)", text)
    assert usage, text
    line = " ".join(usage.group(1).split())
    kept, position = [], 0
    while position < len(line):  # drop option groups, `[-x …]` and `[OPTIONS]`, nested ones too
        if line.startswith(("[-", "[OPTIONS]"), position):
            depth = 0
            while True:
                depth += {"[": 1, "]": -1}.get(line[position], 0)
                position += 1
                if depth == 0:
                    break
        else:
            kept.append(line[position])
            position += 1
    words = "".join(kept).replace("|", ",").upper().split()
    shown: list[str] = []
    for word in words:  # a required option (`--reason REASON`) is no argument
        if shown and shown[-1].startswith("-") and word == shown[-1].lstrip("-").replace("-", "_"):
            shown.pop()
            continue
        shown.append(word)
    return " ".join(word for word in shown if not word.startswith("-"))


def listed_commands(text: str) -> set[str]:
    return set(re.findall(r"(?m)^ {2,4}([a-z][a-z-]*)(?: \([a-z, ]+\))?(?= {2,}|$)", text))


def test_the_main_help_lists_every_command_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_text(monkeypatch)
    assert listed_commands(text) - set(ALIASES) == set(CLI)
    assert listed_options(text) == MAIN_OPTIONS | HELP


@pytest.mark.parametrize("command", [*CLI, *ALIASES])
def test_each_command_keeps_its_arguments_and_options(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    arguments, options = CLI[ALIASES.get(command, command)]
    text = help_text(monkeypatch, command)
    assert usage_arguments(text) == arguments
    assert listed_options(text) == options | HELP


def test_the_version_option_prints_the_version() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["--version"], out=out, err=err) == 0
    assert out.getvalue() == f"sage-mem {sage_mem.__version__}\n"


# MCP: tool -> {property: its JSON type}, and the required properties

MEMORY_ID, TEXT, TEXTS, FLAG, WHOLE, NUMBER = (
    "string", "string", "array of string", "boolean", "integer", "number"
)
CATEGORY = "string: user|feedback|project|reference"
MCP = {
    "memory_search": ({"query": TEXT, "limit": WHOLE, "offset": WHOLE, "category": CATEGORY,
                       "project": TEXT, "tags": TEXTS, "now": TEXT}, ["query"]),
    "memory_read": ({"id": MEMORY_ID}, ["id"]),
    "memory_write": ({
        "id": MEMORY_ID, "description": TEXT, "body": TEXT, "category": CATEGORY, "name": TEXT,
        "summary": TEXT, "aliases": TEXTS, "tags": TEXTS, "trust": NUMBER, "baseline": FLAG,
        "baseline_priority": WHOLE, "project": TEXT, "supersedes": TEXTS, "locked": FLAG,
        "expected_sha256": TEXT, "force": FLAG, "allow_secret": FLAG,
    }, ["id"]),
    "memory_edit": ({"id": MEMORY_ID, "old": TEXT, "new": TEXT, "append": TEXT, "heading": TEXT,
                     "expected_sha256": TEXT, "allow_secret": FLAG}, ["id"]),
    "memory_find_similar": ({"query": TEXT, "id": TEXT, "limit": WHOLE}, []),
    "memory_list": ({"category": CATEGORY, "project": TEXT, "tags": TEXTS, "archived": FLAG,
                     "limit": WHOLE, "offset": WHOLE}, []),
    "memory_feedback": ({"id": MEMORY_ID, "helpful": FLAG}, ["id", "helpful"]),
    "memory_archive": ({"id": MEMORY_ID, "reason": TEXT, "expected_sha256": TEXT},
                       ["id", "reason"]),
    "memory_audit": ({}, []),
    "memory_dream": ({"mode": "string: report|rewrite"}, []),
    "memory_rollback": ({"run_id": TEXT, "scope": "string: touched|all", "dry_run": FLAG,
                         "force": FLAG}, ["run_id"]),
}


def json_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if kind == "array":
        return f"array of {json_type(schema.get('items', {}))}"
    if "enum" in schema:
        return f"{kind}: {'|'.join(schema['enum'])}"
    assert isinstance(kind, str), schema  # one plain type: optional means "leave it out"
    return kind


def listed_tools(folder: Path) -> dict[str, dict[str, Any]]:
    from mcp import Client

    from sage_mem.mcp_server.server import build_server

    async def listing() -> dict[str, dict[str, Any]]:
        with MemoryStore(folder, watch=False) as store:
            async with Client(build_server(store)) as client:
                return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return anyio.run(listing)


def test_the_mcp_server_offers_every_tool_with_its_arguments(memory_dir: Path) -> None:
    tools = listed_tools(memory_dir)
    assert sorted(tools) == sorted(MCP)
    for name, schema in tools.items():
        properties, required = MCP[name]
        shown = {key: json_type(value) for key, value in schema.get("properties", {}).items()}
        assert shown == properties, name
        assert sorted(schema.get("required", [])) == sorted(required), name
