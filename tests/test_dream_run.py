"""A whole dream run: report mode changes nothing, the manifest has every change, reports read."""

from __future__ import annotations

import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import TEMPLATE
from test_dream_support import add, folder_bytes, messy_folder, read_manifest

from sage_mem.dream import DreamConfig, DreamError, list_runs, run_dream
from sage_mem.dream.model import DreamTools, ToolRefused
from sage_mem.dream.paths import RUN_ID
from sage_mem.memory.file_format import sha256_bytes
from sage_mem.store import MemoryStore


@pytest.fixture
def messy(empty_dir: Path) -> Path:
    messy_folder(empty_dir, 60, seed=7)
    for path in TEMPLATE.glob("*.md"):
        shutil.copy(path, empty_dir / path.name)
    return empty_dir


def test_report_mode_changes_no_byte_but_writes_the_report(messy: Path) -> None:
    before = folder_bytes(messy, skip=())
    result = run_dream(MemoryStore(messy), mode="report")
    after = folder_bytes(messy, skip=())
    report = f"autodream/{result.run_id}.md"
    assert set(after) - set(before) == {report}
    assert {k: v for k, v in after.items() if k != report} == before
    assert result.changes > 0
    assert all(c["state"] == "proposed" for c in read_manifest(result)["changes"])


def test_a_rewrite_records_bytes_and_sha256_before_and_after(messy: Path) -> None:
    result = run_dream(MemoryStore(messy), mode="rewrite")
    manifest = read_manifest(result)
    assert manifest["status"] == "finished"
    assert {"near-duplicates", "summaries", "relative-dates", "index"} <= {
        c["rule"] for c in manifest["changes"]
    }
    # Followed in order, each change starts from the bytes the previous one left,
    # and the last one of each file describes the file as it is now.
    last: dict[str, str | None] = {}
    for change in manifest["changes"]:
        assert change["state"] == "applied" and change["reason"]
        name, before, after = change["file"], change["before"], change["after"]
        if name in last:
            assert (before or {}).get("sha256") == last[name]
        if change["operation"] == "archive":
            last[name] = None
        last[after["file"]] = after["sha256"]
    for name, sha in last.items():
        path = messy / name
        assert (sha256_bytes(path.read_bytes()) if path.exists() else None) == sha
    assert manifest["audit"]["before"] is not None
    assert manifest["health"]["before"]["memories"] > manifest["health"]["after"]["memories"]


def test_locked_memories_are_never_changed(messy: Path) -> None:
    store = MemoryStore(messy)
    locked = {m.id: m.path.read_bytes() for m in store.list() if m.locked}
    assert locked
    run_dream(store, mode="rewrite")
    assert {memory_id: (messy / f"{memory_id}.md").read_bytes() for memory_id in locked} == locked


def test_the_report_leads_with_the_undo_command_and_lists_each_rule(messy: Path) -> None:
    result = run_dream(MemoryStore(messy), mode="rewrite")
    text = Path(result.report).read_text(encoding="utf-8")
    head = text.split("\n## ")[0]
    assert f"sage-mem rollback {result.run_id}" in head
    for title in (
        "Near-duplicates merged",
        "Summaries added",
        "Relative dates made absolute",
        "## Health",
        "## Audit",
    ):
        assert title in text
    assert len(text.splitlines()) < 200


def test_a_folder_with_nothing_to_tidy_gets_a_short_report(empty_dir: Path) -> None:
    add(empty_dir, "user_name", "The user is called Ada", category="user")
    store = MemoryStore(empty_dir)
    store.regenerate_index()
    result = run_dream(store, mode="rewrite")
    assert result.changes == 0
    assert "Nothing needed tidying." in Path(result.report).read_text(encoding="utf-8")


def test_memory_md_is_repaired(empty_dir: Path) -> None:
    add(empty_dir, "user_name", "The user is called Ada", category="user")
    (empty_dir / "MEMORY.md").write_text("# stale\n- [gone](gone.md)\n", encoding="utf-8")
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert "user_name.md" in (empty_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert [c["rule"] for c in read_manifest(result)["changes"]] == ["index"]


def test_run_ids_sort_in_the_order_runs_started(empty_dir: Path) -> None:
    store = MemoryStore(empty_dir)
    moment = datetime(2026, 11, 29, 20, 15, tzinfo=UTC)
    ids = [run_dream(store, now=moment + timedelta(seconds=s // 2)).run_id for s in range(5)]
    assert all(RUN_ID.match(i) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [r.run_id for r in list_runs(store)] == ids


def test_a_bad_mode_is_one_clear_error(empty_dir: Path) -> None:
    with pytest.raises(DreamError, match="mode must be one of report, rewrite"):
        run_dream(MemoryStore(empty_dir), mode="delete")


# the model pass seam


def test_a_model_in_a_report_run_can_read_but_not_write(empty_dir: Path) -> None:
    path = add(empty_dir, "user_name", "The user is called Ada", category="user")
    before = path.read_bytes()
    seen = {}

    def model(tools: DreamTools) -> None:
        seen["names"] = tools.names
        seen["read"] = tools.read("user_name")["description"]
        with pytest.raises(ToolRefused):
            tools.write("user_name", description="The user is called Bob", reason="renamed")
        tools.archive("user_name", reason="obsolete")

    result = run_dream(MemoryStore(empty_dir), mode="report", model_pass=model)
    assert path.read_bytes() == before
    assert "memory_write" not in seen["names"] and seen["read"] == "The user is called Ada"
    refused = read_manifest(result)["refused"]
    assert [(r["operation"], r["source"]) for r in refused] == [
        ("write", "model"),
        ("archive", "model"),
    ]
    assert read_manifest(result)["model"]["status"] == "stopped"


def test_a_model_in_a_rewrite_run_changes_through_the_manifest(empty_dir: Path) -> None:
    add(empty_dir, "user_name", "The user is called Ada", category="user")
    add(empty_dir, "user_old", "Old note", category="user")

    def model(tools: DreamTools) -> None:
        tools.write("user_name", description="The user is called Ada Lovelace")  # no reason given
        tools.write("user_new", description="A new memory", category="user", reason="split out")
        with pytest.raises(ToolRefused):
            tools.archive("user_old", reason="")
        tools.archive("user_old", reason="duplicate of user_name", superseded_by="user_name")

    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite", model_pass=model)
    manifest = read_manifest(result)
    model_changes = [c for c in manifest["changes"] if c["source"] == "model"]
    assert [(c["operation"], c["unexplained"]) for c in model_changes] == [
        ("rewrite", True),
        ("create", False),
        ("archive", False),
    ]
    assert manifest["refused"][0]["refusedBecause"] == "an archive needs a reason"
    assert "**unexplained**" in Path(result.report).read_text(encoding="utf-8")
    assert store.read("user_name").description == "The user is called Ada Lovelace"


def test_a_failing_model_leaves_the_rule_based_result(empty_dir: Path) -> None:
    add(
        empty_dir,
        "project_x",
        "Plan",
        "Decided yesterday.",
        category="project",
        created="2026-11-25",
    )

    def model(tools: DreamTools) -> None:
        raise RuntimeError("model crashed")

    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite", model_pass=model)
    assert read_manifest(result)["model"]["status"] == "failed"
    assert store.read("project_x").body.strip() == "Decided yesterday (2026-11-24)."


def test_an_agent_command_that_fails_leaves_the_rule_based_result(empty_dir: Path) -> None:
    add(
        empty_dir,
        "project_x",
        "Plan",
        "Decided yesterday.",
        category="project",
        created="2026-11-25",
    )
    store = MemoryStore(empty_dir)
    command = [sys.executable, "-c", "import sys; sys.exit('no model here: {run_id}')"]
    result = run_dream(store, mode="rewrite", config=DreamConfig(agent_command=tuple(command)))
    model = read_manifest(result)["model"]
    assert model["status"] == "failed" and "no model here" in model["detail"]
    assert store.read("project_x").body.strip() == "Decided yesterday (2026-11-24)."


FAKE_AGENT = """
import os, sys
from sage_mem.store import MemoryStore
from sage_mem.dream.model import ToolRefused, attach_tools

tools = attach_tools(MemoryStore(sys.argv[1]), os.environ["SAGE_MEM_DREAM_RUN"])
print(sorted(tools.names))
assert tools.read("user_name")["description"] == "The user is called Ada"
try:
    tools.write("user_name", description="The user is called Ada Lovelace", reason="full name")
except ToolRefused:
    print("refused")
"""


@pytest.mark.parametrize(
    ("mode", "description", "refused"),
    [
        pytest.param("report", "The user is called Ada", 1, id="report-refuses-the-write"),
        pytest.param("rewrite", "The user is called Ada Lovelace", 0, id="rewrite-records-it"),
    ],
)
def test_an_agent_command_works_through_the_run_journal(
    empty_dir: Path, mode: str, description: str, refused: int
) -> None:
    add(empty_dir, "user_name", "The user is called Ada", category="user")
    store = MemoryStore(empty_dir)
    agent = DreamConfig(agent_command=(sys.executable, "-c", FAKE_AGENT, str(empty_dir)))
    result = run_dream(store, mode=mode, config=agent)
    manifest = read_manifest(result)
    assert manifest["model"]["status"] == "finished"
    assert store.read("user_name").description == description
    assert len([r for r in manifest["refused"] if r["source"] == "model"]) == refused
    written = [c for c in manifest["changes"] if c["source"] == "model"]
    assert [(c["operation"], c["state"]) for c in written] == (
        [("rewrite", "applied")] if mode == "rewrite" else []
    )


def test_a_report_never_copies_a_credential_a_memory_holds(empty_dir: Path) -> None:
    """The report sits in the memory folder (git, the page, sync): what it quotes is masked."""
    old, new = (
        "ghp_" + "Zq8RkT2mWx9LbV4nYc7HdJ3sPf6GaE1uKo5i",
        "ghp_" + "Wq3RkT2mWx9LbV4nYc7HdJ3sPf6GaE1uKo9z",
    )
    add(
        empty_dir,
        "project_token_old",
        f"The deploy bot token is {old}",
        "Used by CI.",
        category="project",
        created="2026-11-02",
    )
    add(
        empty_dir,
        "project_token_new",
        f"The deploy bot token is now {new}",
        "Used by CI.",
        category="project",
        created="2026-11-20",
    )
    result = run_dream(MemoryStore(empty_dir), mode="report")
    report = Path(result.report or "").read_text(encoding="utf-8")
    assert "likely contradicts project_token_new" in report
    assert old not in report and new not in report
    assert "ghp_" in report  # masked, as the audit shows it: the kind stays readable
