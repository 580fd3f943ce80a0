"""The field spec (`sage_mem.memory.fields`): one list of the writable memory fields, and every
interface derived from it — the store's validation and new-file order, the CLI's `add`
options, the MCP `memory_write` schema, the page's write arguments.

The copies of this list used to drift (`locked` was taken by the store and set by no
interface, the MCP server took "yes" for true): each test here holds one interface to
the spec, so that a field added to the spec reaches all of them or a test fails.
"""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from sage_mem import InvalidMemory, Memory, MemoryStore
from sage_mem.cli import main
from sage_mem.memory.fields import (
    BOOL,
    BY_KEY,
    FIELDS,
    INT,
    KINDS,
    STAMPS,
    TEXT,
    TEXTS,
    UNIT,
    validated,
)
from sage_mem.memory.value import MAX_TAG_LENGTH, MAX_TAGS

# One good value of each field, as a caller gives it, and as the file then holds it.
GIVEN: dict[str, Any] = {
    "name": "  the   cat ", "description": "The user's cat is called Sesame",
    "category": "User", "trust": 1, "summary": "Sesame", "aliases": ["cat", " pet ", "cat", " "],
    "tags": ["pets"], "baseline": True, "baseline_priority": 3, "project": "sage-mem",
    "supersedes": ["user_old_cat"], "locked": False,
}
STORED: dict[str, Any] = {
    "name": "the cat", "description": "The user's cat is called Sesame", "category": "user",
    "trust": 1.0, "summary": "Sesame", "aliases": ["cat", "pet"], "tags": ["pets"],
    "baseline": True, "baselinePriority": 3, "project": "sage-mem",
    "supersedes": ["user_old_cat"], "locked": False,
}


def frontmatter(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


# the spec itself


def test_every_field_has_a_name_a_key_a_kind_help_and_a_flag() -> None:
    assert len({field.name for field in FIELDS}) == len({field.key for field in FIELDS})
    for field in FIELDS:
        assert field.kind in KINDS, field.name
        assert 8 < len(field.help) < 80, field.name
        assert field.flag.startswith("--"), field.name
        assert (field.off_flag is not None) == (field.kind == BOOL), field.name
    assert set(GIVEN) == {field.name for field in FIELDS}


def test_the_spec_is_what_a_memory_holds() -> None:
    attributes = set(inspect.signature(Memory).parameters)
    keys = set(Memory(id="x", path=Path("x.md"), description="d", body="").to_dict())
    for field in FIELDS:
        assert field.name in attributes and field.key in keys, field.name


def test_write_takes_exactly_the_fields_of_the_spec() -> None:
    keywords = [
        name for name, parameter in inspect.signature(MemoryStore.write).parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY
    ]
    assert set(keywords) - {"body", "expected_sha256", "allow_secret", "stamp"} == set(GIVEN)


def test_good_values_are_stored_normalised() -> None:
    checked = validated(GIVEN)
    assert {BY_KEY[key].name: value for key, value in STORED.items()} == checked


# Wrong types are refused, never coerced: "yes" is not true, "5" is not a number.
BAD_BY_KIND = {
    TEXT: [5, {}, ["a"], b"bytes", "caf\udce9"],
    TEXTS: ["a,b", 5, [1], ("ok", None), ["caf\udce9"]],
    UNIT: ["0.5", True, -0.1, 1.01, float("nan"), float("inf"), [0.5]],
    INT: ["5", 5.0, True, 2**13_001],
    BOOL: ["yes", "true", 1, 0, []],
}


@pytest.mark.parametrize(
    ("name", "value"),
    [pytest.param(field.name, value, id=f"{field.name}-{value!r:.20}")
     for field in FIELDS for value in BAD_BY_KIND[field.kind]],
)
def test_a_value_of_the_wrong_type_or_range_is_refused(name: str, value: Any) -> None:
    with pytest.raises(InvalidMemory):
        validated({name: value})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"category": "pets"}, "category must be one of", id="unknown-category"),
        pytest.param({"description": " \t "}, "must not be empty", id="blank-description"),
        pytest.param({"tags": [f"t{n}" for n in range(MAX_TAGS + 1)]}, f"at most {MAX_TAGS}",
                     id="too-many-tags"),
        pytest.param({"tags": ["t" * (MAX_TAG_LENGTH + 1)]}, f"longer than {MAX_TAG_LENGTH}",
                     id="over-long-tag"),
        pytest.param({"baseline_priority": "ten"}, "baselinePriority must be an integer",
                     id="message-names-the-key"),
        pytest.param({"colour": "red"}, "unknown field 'colour'", id="unknown-field"),
    ],
)
def test_the_spec_says_what_is_wrong(values: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidMemory, match=message):
        validated(values)


def test_none_means_not_given() -> None:
    assert validated(dict.fromkeys(GIVEN)) == {}


# the store


def test_a_new_file_lists_its_keys_in_the_spec_order(empty_dir: Path) -> None:
    memory = MemoryStore(empty_dir, watch=False).write("user_cat", **GIVEN)
    meta = frontmatter(memory.path)
    before = [field.key for field in FIELDS if not field.after_stamps]
    after = [field.key for field in FIELDS if field.after_stamps]
    assert list(meta) == [*before, *STAMPS, *after]
    assert {key: meta[key] for key in STORED} == STORED


def test_what_a_write_stores_reads_back_as_the_same_fields(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir, watch=False)
    store.write("user_cat", **GIVEN)
    memory = store.read("user_cat").to_dict()
    assert {key: memory[key] for key in STORED} == STORED


def test_an_update_writes_each_field_under_its_key(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir, watch=False)
    store.write("user_cat", description="a cat")
    memory = store.write("user_cat", baseline_priority=7, locked=True)
    meta = frontmatter(memory.path)
    assert meta["baselinePriority"] == 7 and meta["locked"] is True
    assert "baseline_priority" not in meta


# the interfaces: each offers every field, by the spec


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_the_cli_add_command_has_an_option_for_every_field() -> None:
    code, text, _ = cli("add", "--help")
    assert code == 0
    for field in FIELDS:
        assert field.flag in text and field.help.split(" (")[0] in " ".join(text.split())
        if field.off_flag:
            assert field.off_flag in text


def test_the_cli_sets_every_field(empty_dir: Path) -> None:
    code, out, err = cli(
        "--dir", str(empty_dir), "add", "user_cat", "--name", "the cat", "--description",
        "The user's cat is called Sesame", "--category", "user", "--trust", "1", "--summary",
        "Sesame", "--alias", "cat", "--alias", "pet", "--tag", "pets", "--baseline",
        "--baseline-priority", "3", "--project", "sage-mem", "--supersedes", "user_old_cat",
        "--unlocked", "--json",
    )
    assert code == 0, err
    assert {key: frontmatter(empty_dir / "user_cat.md")[key] for key in STORED} == STORED
    code, _, err = cli("--dir", str(empty_dir), "add", "user_cat", "--no-baseline", "--locked")
    assert code == 0, err
    meta = frontmatter(empty_dir / "user_cat.md")
    assert meta["baseline"] is False and meta["locked"] is True
    code, _, err = cli("--dir", str(empty_dir), "add", "user_cat", "--unlocked")
    assert code == 1 and "locked" in err  # only a person, in an editor, unlocks a memory


def mcp_tools(store: MemoryStore) -> tuple[dict[str, Any], list[tuple[bool, str]]]:
    """memory_write's input schema, and the results of the calls in CALLS."""
    from mcp import Client

    from sage_mem.mcp_server.server import build_server

    async def session() -> tuple[dict[str, Any], list[tuple[bool, str]]]:
        async with Client(build_server(store)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            results = []
            for tool, arguments in CALLS:
                result = await client.call_tool(tool, arguments)
                results.append((result.is_error, result.content[0].text))
            return tools["memory_write"].input_schema, results

    return anyio.run(session)


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_write", {"id": "user_cat", **GIVEN, "category": "user"}),
    ("memory_feedback", {"id": "user_cat", "helpful": "yes"}),
    ("memory_feedback", {"id": "user_cat", "helpful": "true"}),
    ("memory_feedback", {"id": "user_cat", "helpful": 1}),
    ("memory_write", {"id": "user_cat", "baseline": "yes"}),
    ("memory_write", {"id": "user_cat", "baseline_priority": "3"}),
    ("memory_write", {"id": "user_cat", "trust": "0.9"}),
    ("memory_write", {"id": "user_cat", "locked": True}),
    ("memory_feedback", {"id": "user_cat", "helpful": True}),
]


def test_the_mcp_write_tool_takes_every_field_strictly(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir, watch=False)
    schema, results = mcp_tools(store)
    types = {BOOL: "boolean", INT: "integer", UNIT: "number", TEXT: "string", TEXTS: "array"}
    for field in FIELDS:
        assert schema["properties"][field.name]["type"] == types[field.kind], field.name
    (write_failed, written), *refused, (lock_failed, _), (feedback_failed, feedback) = results
    assert not write_failed, written
    for failed, message in refused:
        assert failed and "invalid" in message, message
    assert not lock_failed
    meta = frontmatter(empty_dir / "user_cat.md")
    assert {key: meta[key] for key in STORED} == {**STORED, "locked": True}
    assert feedback_failed and "locked" in feedback  # a locked memory takes no feedback either


def test_the_page_sends_every_field_by_its_key(empty_dir: Path) -> None:
    from sage_mem.ui.api import save_memory

    store = MemoryStore(empty_dir, watch=False)
    sent = {"id": "user_cat", "create": True, "body": "Orange.", **STORED}
    saved = save_memory(store, sent)["memory"]
    assert saved["id"] == "user_cat"
    assert {key: frontmatter(empty_dir / "user_cat.md")[key] for key in STORED} == STORED
    with pytest.raises(InvalidMemory, match="unknown field 'baseline_priority'"):
        save_memory(store, {"id": "user_cat", "expectedSha256": saved["sha256"],
                            "baseline_priority": 1})
    json.dumps(saved)
