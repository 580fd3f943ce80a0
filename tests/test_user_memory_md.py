"""A MEMORY.md that sage-mem did not write belongs to its owner: sage-mem never loses a line of it.

`catalog.updated_index` decides the new MEMORY.md from the current one: a file
sage-mem wrote (or none) is regenerated whole; in anyone else's file (Claude
Code's own, a person's) sage-mem keeps every line and maintains only its
marked region. The CLI tests at the end check the same through real commands.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from sage_mem.memory import catalog
from sage_mem.memory.value import Memory

BEGIN = catalog.REGION_BEGIN
END = catalog.REGION_END


def memory(
    memory_id: str,
    description: str = "a memory",
    *,
    category: str | None = "user",
    **fields: object,
) -> Memory:
    return Memory(
        id=memory_id, path=Path(memory_id + ".md"), description=description,
        body="", category=category, **fields,  # type: ignore[arg-type]
    )


ROLE = memory("user_role", "The user is a data scientist who likes pandas", name="Role")
TESTING = memory("feedback_testing", "测试要用真实数据库", category="feedback", name="testing")
DEPLOY = memory("project/deploy/steps", "How the deploy works", category="project")
MEMORIES = [ROLE, TESTING, DEPLOY]

# As Claude Code's auto memory writes it: a title, index lines grouped under
# headings, and notes of its own (or the person's) that index nothing.
CLAUDE_CODES_OWN = (
    "# Memory Index\n"
    "\n"
    "## User\n"
    "- [Role](user_role.md) — data scientist, works on churn models\n"
    "\n"
    "## Feedback\n"
    "- [Testing](feedback_testing.md) — integration tests must hit a real database\n"
    "\n"
    "## Notes\n"
    "Prefer pnpm over npm in this repo.\n"
    "The staging server is reset every Monday.\n"
)
DEPLOY_REGION = (
    f"{BEGIN}\n"
    "## project\n"
    f"{catalog.entry_line(DEPLOY)}\n"
    f"{END}\n"
)


def update(existing: str | bytes | None, memories: list[Memory] = MEMORIES,
           retrievals: dict[str, int] | None = None) -> catalog.IndexUpdate:
    if isinstance(existing, str):
        existing = existing.encode("utf-8")
    return catalog.updated_index(existing, memories, retrievals)


def written(existing: str | bytes | None, memories: list[Memory] = MEMORIES,
            retrievals: dict[str, int] | None = None) -> bytes:
    result = update(existing, memories, retrievals)
    assert result.problem is None
    assert result.data is not None
    return result.data


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def is_subsequence(part: list[bytes], whole: list[bytes]) -> bool:
    rest = iter(whole)
    return all(any(line == other for other in rest) for line in part)


def within_claude_codes_limits(data: bytes) -> bool:
    return data.count(b"\n") <= catalog.MAX_LINES and len(data) <= catalog.MAX_BYTES


# The files sage-mem wrote: regenerated whole, exactly as `render` writes them.


def _conflicted_generated() -> str:
    ours = catalog.render([ROLE]).splitlines(keepends=True)
    theirs = catalog.render([ROLE, TESTING]).splitlines(keepends=True)
    # git keeps what both sides share and marks the rest
    shared = [line for line in ours if line in theirs]
    return (
        "".join(shared)
        + "<<<<<<< HEAD\n" + "".join(line for line in ours if line not in shared)
        + "=======\n" + "".join(line for line in theirs if line not in shared)
        + ">>>>>>> other-machine\n"
    )


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param(None, id="absent"),
        pytest.param("", id="empty"),
        pytest.param("\n\n  \n", id="blank-lines-only"),
        pytest.param(catalog.render([ROLE]), id="written-by-sage-mem-earlier"),
        pytest.param(catalog.render([]), id="written-for-an-empty-folder"),
        pytest.param(
            catalog.render([memory(f"m{i:04}", "x" * 100) for i in range(300)]),
            id="written-cut-with-a-count",
        ),
        pytest.param(catalog.render([ROLE]).replace("\n", "\r\n"), id="written-then-crlf-checkout"),
        pytest.param("\ufeff" + catalog.render([ROLE]), id="written-then-saved-with-a-bom"),
        pytest.param(_conflicted_generated(), id="written-with-git-conflict-markers"),
        pytest.param(
            catalog.render([ROLE]).replace(
                catalog.NOTE, f"<<<<<<< HEAD\n{catalog.NOTE}\n=======\n"
                "<!-- Written by sage-mem, in other words. -->\n>>>>>>> x"
            ),
            id="written-by-two-versions-with-a-conflict-in-the-note",
        ),
        pytest.param(
            catalog.render([ROLE]) + "- [Testing](feedback_testing.md) — added by Claude Code\n",
            id="written-plus-an-index-line-for-a-memory",
        ),
    ],
)
def test_a_memory_md_sage_mem_wrote_is_regenerated_whole(existing: str | None) -> None:
    assert written(existing) == catalog.render(MEMORIES).encode("utf-8")


def test_the_whole_file_keeps_using_the_retrieval_counts_when_cut() -> None:
    many = [memory(f"m{i:04}", "x" * 100) for i in range(300)]
    counts = {"m0250": 5}
    assert written(None, many, counts) == catalog.render(many, counts).encode("utf-8")


# Claude Code's own MEMORY.md, or a person's: every line kept, a region for the rest.


def test_claude_codes_own_memory_md_keeps_every_line_and_gains_a_region() -> None:
    assert written(CLAUDE_CODES_OWN).decode("utf-8") == CLAUDE_CODES_OWN + "\n" + DEPLOY_REGION


@pytest.mark.parametrize(
    ("owner", "kept"),
    [
        pytest.param(b"Some notes.\n", b"Some notes.\n\n", id="notes"),
        pytest.param(b"Some notes.", b"Some notes.\n\n", id="no-final-newline"),
        pytest.param(b"Some notes.\n\n", b"Some notes.\n\n", id="ends-with-a-blank-line"),
        pytest.param(b"# My index\n\n## Work\n", b"# My index\n\n## Work\n\n", id="headings"),
        pytest.param(b"\xef\xbb\xbfNotes\n", b"\xef\xbb\xbfNotes\n\n", id="bom"),
        pytest.param(b"caf\xe9 (latin-1)\n", b"caf\xe9 (latin-1)\n\n", id="not-utf-8"),
        pytest.param("用户的笔记：每周一重置\n".encode(), "用户的笔记：每周一重置\n\n".encode(),
                     id="chinese"),
        pytest.param(b"Title\n=======\n", b"Title\n=======\n\n",
                     id="setext-heading-not-a-conflict"),
    ],
)
def test_an_owners_file_is_kept_byte_for_byte_and_the_region_appended(
    owner: bytes, kept: bytes
) -> None:
    data = written(owner, [DEPLOY])
    assert data == kept + DEPLOY_REGION.encode("utf-8")


def test_a_crlf_file_keeps_its_crlf_and_gets_a_crlf_region() -> None:
    owner = CLAUDE_CODES_OWN.replace("\n", "\r\n").encode("utf-8")
    data = written(owner)
    assert data == owner + b"\r\n" + DEPLOY_REGION.replace("\n", "\r\n").encode("utf-8")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("- [Steps](project/deploy/steps.md) — how we deploy", id="claude-code-format"),
        pytest.param("- [Steps](project/deploy/steps.md)", id="no-hook"),
        pytest.param("* [Steps](project/deploy/steps.md) - how we deploy", id="star-bullet"),
        pytest.param("  - [Steps](./project/deploy/steps.md): how", id="indented-dot-slash"),
        pytest.param("- [Steps](<project/deploy/steps.md>)", id="angle-brackets"),
        pytest.param("- [Steps](project/deploy/steps.md#top)", id="anchor"),
        pytest.param("- [Steps](project%2Fdeploy/steps.md)", id="percent-encoded"),
    ],
)
def test_a_memory_the_owner_already_indexes_is_not_listed_again(line: str) -> None:
    owner = f"# Mine\n{line}\n"
    assert written(owner, [DEPLOY]) == owner.encode("utf-8")  # nothing to add: left as it is


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("See [the steps](project/deploy/steps.md) before a release.", id="prose"),
        pytest.param("- deploy: [steps](project/deploy/steps.md)", id="link-not-first"),
        pytest.param("- [Steps](https://example.com/project/deploy/steps.md)", id="web-link"),
    ],
)
def test_a_mention_that_is_not_an_index_line_does_not_count_as_indexed(line: str) -> None:
    owner = f"{line}\n"
    assert written(owner, [DEPLOY]).decode("utf-8") == owner + "\n" + DEPLOY_REGION


def test_an_owners_index_lines_stay_even_when_they_point_at_nothing() -> None:
    owner = "- [Gone](user_gone.md) — a memory that was deleted\n"
    assert written(owner, [DEPLOY]).decode("utf-8") == owner + "\n" + DEPLOY_REGION


def test_an_owners_file_that_indexes_every_memory_is_left_as_it_is() -> None:
    result = update(CLAUDE_CODES_OWN, [ROLE, TESTING])
    assert result.data == CLAUDE_CODES_OWN.encode("utf-8") and result.problem is None


def test_an_owners_file_in_an_empty_folder_is_left_as_it_is() -> None:
    assert written("Notes only.\n", []) == b"Notes only.\n"


def test_archived_memories_are_not_listed_in_the_region() -> None:
    archived = memory("archive/user_old", archived=True)
    assert written("Notes.\n", [DEPLOY, archived]).decode("utf-8") == "Notes.\n\n" + DEPLOY_REGION


def test_the_region_groups_by_category_like_the_whole_file() -> None:
    data = written("Notes.\n", [DEPLOY, TESTING, ROLE]).decode("utf-8")
    assert data == (
        f"Notes.\n\n{BEGIN}\n"
        f"## user\n{catalog.entry_line(ROLE)}\n\n"
        f"## feedback\n{catalog.entry_line(TESTING)}\n\n"
        f"## project\n{catalog.entry_line(DEPLOY)}\n"
        f"{END}\n"
    )


# An existing region: maintained where it is, the owner's lines around it untouched.


def test_a_region_in_the_middle_is_updated_in_place() -> None:
    before = "# Mine\n\nNotes above.\n\n"
    after = "\n## Later notes\nStill mine.\n"
    stale = f"{BEGIN}\n## user\n- [old](user_old.md) — an archived memory\n{END}\n"
    data = written(before + stale + after, [DEPLOY]).decode("utf-8")
    assert data == before + DEPLOY_REGION + after


def test_a_region_whose_memories_are_all_indexed_elsewhere_is_kept_empty() -> None:
    owner = f"- [Steps](project/deploy/steps.md)\n\n{DEPLOY_REGION}"
    assert written(owner, [DEPLOY]).decode("utf-8") == (
        f"- [Steps](project/deploy/steps.md)\n\n{BEGIN}\n{END}\n"
    )


def test_a_line_typed_into_the_region_moves_out_of_it_and_is_kept() -> None:
    edited = (
        "Notes.\n\n"
        f"{BEGIN}\n"
        "## project\n"
        f"{catalog.entry_line(DEPLOY)}\n"
        "Remember: deploys freeze on Fridays.\n"
        "- [Typed by hand](user_typed.md) — not a memory\n"
        f"{END}\n"
    )
    data = written(edited, [DEPLOY]).decode("utf-8")
    assert data == (
        "Notes.\n\n" + DEPLOY_REGION + "\nRemember: deploys freeze on Fridays.\n"
    )
    assert written(data, [DEPLOY]).decode("utf-8") == data


def test_an_unchanged_region_gives_the_same_bytes() -> None:
    once = written(CLAUDE_CODES_OWN)
    assert written(once) == once


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param(CLAUDE_CODES_OWN, id="claude-codes-own"),
        pytest.param(b"Some notes.", id="no-final-newline"),
        pytest.param(CLAUDE_CODES_OWN.replace("\n", "\r\n"), id="crlf"),
        pytest.param(b"\xef\xbb\xbf" + CLAUDE_CODES_OWN.encode(), id="bom"),
        pytest.param(catalog.render([ROLE]) + "\nMy own note.\n", id="written-then-noted"),
        pytest.param("x\n" * 300, id="over-budget"),
    ],
)
def test_a_second_update_changes_nothing(existing: str | bytes) -> None:
    once = written(existing)
    assert written(once) == once


def test_the_same_memories_in_any_order_give_the_same_bytes() -> None:
    many = [memory(f"m{i:03}", f"memory {i}", category=c)
            for i, c in zip(range(80), ["user", "feedback", "project", "reference"] * 20,
                            strict=True)]
    shuffled = many[:]
    random.Random(3).shuffle(shuffled)
    assert written(CLAUDE_CODES_OWN, many) == written(CLAUDE_CODES_OWN, shuffled)


# A file sage-mem wrote, then someone added to: their lines are kept.


def test_notes_added_to_a_file_sage_mem_wrote_are_kept_beside_a_region() -> None:
    noted = catalog.render([ROLE]) + "\n## My notes\nUse pnpm.\n\nAsk before deploying.\n"
    data = written(noted, [ROLE, DEPLOY]).decode("utf-8")
    region = (
        f"{BEGIN}\n## user\n{catalog.entry_line(ROLE)}\n\n"
        f"## project\n{catalog.entry_line(DEPLOY)}\n{END}\n"
    )
    assert data == region + "\n## My notes\nUse pnpm.\n\nAsk before deploying.\n"


def test_a_title_put_above_a_file_sage_mem_wrote_stays_above() -> None:
    titled = "# Project memory\n\n" + catalog.render([ROLE])
    data = written(titled, [ROLE]).decode("utf-8")
    assert data == f"# Project memory\n\n{BEGIN}\n## user\n{catalog.entry_line(ROLE)}\n{END}\n"


# Broken structure: nothing is written, and the caller is told why.


@pytest.mark.parametrize(
    ("existing", "reason"),
    [
        pytest.param(f"Notes.\n{BEGIN}\n- [a](a.md)\n", "region", id="begin-without-end"),
        pytest.param(f"Notes.\n- [a](a.md)\n{END}\n", "region", id="end-without-begin"),
        pytest.param(f"{END}\nNotes.\n{BEGIN}\n", "region", id="end-before-begin"),
        pytest.param(f"{BEGIN}\n{END}\nNotes.\n{BEGIN}\n{END}\n", "region", id="two-regions"),
        pytest.param(f"{BEGIN}\n{BEGIN}\n{END}\n", "region", id="two-begins"),
        pytest.param("<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> x\n", "conflict",
                     id="conflict-in-the-owners-lines"),
        pytest.param("# Notes\n<<<<<<< HEAD\nuse npm\n", "conflict", id="conflict-never-closed"),
        pytest.param(
            "<<<<<<< HEAD\n- [a](a.md) — mine\n=======\n- [b](b.md) — theirs\n>>>>>>> main\n",
            "conflict", id="conflict-in-index-lines-claude-code-wrote",
        ),
        pytest.param(
            "Notes.\n\n<<<<<<< HEAD\n" + DEPLOY_REGION + "=======\n>>>>>>> x\n", "conflict",
            id="conflict-around-the-region",
        ),
        pytest.param(
            catalog.render([ROLE]) + "<<<<<<< HEAD\nmy note\n=======\n>>>>>>> x\n", "conflict",
            id="conflict-in-notes-added-to-a-file-sage-mem-wrote",
        ),
    ],
)
def test_a_broken_file_is_left_alone_and_the_reason_given(existing: str, reason: str) -> None:
    result = update(existing)
    assert result.data is None
    assert result.problem and reason in result.problem
    assert "MEMORY.md" in result.problem


def test_a_conflict_inside_the_region_is_repaired_and_the_owners_lines_kept() -> None:
    conflicted = (
        "# Mine\nNotes.\n\n"
        f"{BEGIN}\n## project\n"
        "<<<<<<< HEAD\n- [steps](project/deploy/steps.md) — old hook\n"
        "=======\n- [steps](project/deploy/steps.md) — other hook\n>>>>>>> x\n"
        f"{END}\n"
    )
    assert written(conflicted, [DEPLOY]).decode("utf-8") == "# Mine\nNotes.\n\n" + DEPLOY_REGION


# Claude Code loads only 200 lines and 25,000 bytes: the region shrinks, never an owner's line.


def test_an_owners_file_over_the_budget_gets_only_a_count_in_its_region() -> None:
    owner = "".join(f"- note {i}\n" for i in range(250))
    data = written(owner, MEMORIES).decode("utf-8")
    assert data == (
        owner + "\n" + f"{BEGIN}\n…and 3 more memories not listed here: "
        "`sage-mem search` finds them.\n" + f"{END}\n"
    )


def test_an_owners_file_over_the_byte_budget_keeps_every_byte() -> None:
    owner = ("长" * 40 + "\n") * 300  # 36,300 bytes
    data = written(owner, MEMORIES)
    assert data.startswith(owner.encode("utf-8"))
    assert "…and 3 more memories" in data.decode("utf-8")


def test_the_region_shrinks_to_fit_beside_the_owners_lines_baselines_and_most_used_first() -> None:
    owner = "".join(f"- note {i}\n" for i in range(150))
    many = [memory(f"m{i:03}", f"memory number {i}") for i in range(100)]
    many.append(memory("zz_base", "a baseline", baseline=True))
    data = written(owner, many, {"m077": 9, "m042": 4})
    text = data.decode("utf-8")
    assert text.startswith(owner)
    assert within_claude_codes_limits(data)
    listed = [line for line in text.splitlines()[150:] if line.startswith("- [")]
    assert 0 < len(listed) < 101
    assert f"…and {101 - len(listed)} more memories" in text
    assert "(zz_base.md)" in text and "(m077.md)" in text and "(m042.md)" in text
    assert data.count(b"\n") == catalog.MAX_LINES  # filled to the line limit, no further


def test_the_region_shrinks_to_the_byte_budget_too() -> None:
    owner = ("n" * 99 + "\n") * 150  # 15,000 bytes
    many = [memory(f"记忆{i:03}", "用户的猫叫芝麻，喜欢晒太阳" * 10) for i in range(60)]
    data = written(owner, many)
    assert data.startswith(owner.encode("utf-8"))
    assert within_claude_codes_limits(data)
    assert "more memories not listed" in data.decode("utf-8")


def test_owner_index_lines_count_as_listed_in_the_count() -> None:
    owner = "- [Role](user_role.md)\n" + "".join(f"- note {i}\n" for i in range(250))
    text = written(owner, MEMORIES).decode("utf-8")
    assert "…and 2 more memories" in text


# Through the CLI, in a Claude Code memory folder used in place.

CLAUDE_FILES = {
    "user_role.md": "---\nname: Role\ndescription: The user is a data scientist\ntype: user\n"
                    "---\n\nThey work on churn models.\n",
    "feedback_testing.md": "---\nname: Testing\ndescription: Integration tests hit a real "
                           "database\ntype: feedback\n---\n\n**Why:** mocks hid a bug.\n",
    "project_deploy.md": "---\nname: Deploy\ndescription: Deploys run from the release branch\n"
                         "type: project\n---\n\nmake deploy\n",
}
CLAUDE_INDEX = (
    "# Memory Index\n"
    "\n"
    "## User\n"
    "- [Role](user_role.md) — data scientist, churn models\n"
    "\n"
    "## Feedback\n"
    "- [Testing](feedback_testing.md) — real database in integration tests\n"
    "\n"
    "## Notes\n"
    "Prefer pnpm over npm in this repo.\n"
    "The staging server is reset every Monday.\n"
)


@pytest.fixture
def claude_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / ".claude" / "projects" / "-home-me-app" / "memory"
    folder.mkdir(parents=True)
    for name, text in CLAUDE_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "MEMORY.md").write_text(CLAUDE_INDEX, encoding="utf-8")
    return folder


def sage_mem(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), *argv],
        capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def index_of(folder: Path) -> str:
    return (folder / "MEMORY.md").read_text(encoding="utf-8")


def test_feedback_keeps_claude_codes_own_memory_md_lines(claude_folder: Path) -> None:
    result = sage_mem(claude_folder, "feedback", "user_role", "helpful")
    assert result.returncode == 0, result.stderr
    text = index_of(claude_folder)
    assert text.startswith(CLAUDE_INDEX)
    assert "(project_deploy.md)" in text.split(BEGIN, 1)[1]
    assert text.count("(user_role.md)") == 1 and text.count("(feedback_testing.md)") == 1


def test_index_keeps_claude_codes_own_memory_md_and_adds_a_region(claude_folder: Path) -> None:
    result = sage_mem(claude_folder, "index")
    assert result.returncode == 0, result.stderr
    text = index_of(claude_folder)
    assert text.startswith(CLAUDE_INDEX + "\n" + BEGIN + "\n")
    assert text.endswith(END + "\n")


def test_add_changes_only_the_sage_mem_region(claude_folder: Path) -> None:
    assert sage_mem(claude_folder, "index").returncode == 0
    result = sage_mem(claude_folder, "add", "reference_dashboards",
                      "--description", "Grafana dashboards live under ops/", "--body", "ops/")
    assert result.returncode == 0, result.stderr
    text = index_of(claude_folder)
    assert text.startswith(CLAUDE_INDEX + "\n" + BEGIN + "\n")
    region = text.split(BEGIN, 1)[1]
    assert "(reference_dashboards.md)" in region and "(project_deploy.md)" in region


def test_a_person_editing_around_the_region_keeps_their_edits(claude_folder: Path) -> None:
    assert sage_mem(claude_folder, "index").returncode == 0
    edited = "# Notes first\n\n" + index_of(claude_folder) + "\nA line after the region.\n"
    (claude_folder / "MEMORY.md").write_text(edited, encoding="utf-8")
    assert sage_mem(claude_folder, "feedback", "project_deploy", "unhelpful").returncode == 0
    assert index_of(claude_folder) == edited


def test_index_leaves_a_memory_md_with_conflicts_in_the_owners_lines_alone(
    claude_folder: Path,
) -> None:
    conflicted = CLAUDE_INDEX + "<<<<<<< HEAD\nuse pnpm\n=======\nuse npm\n>>>>>>> laptop\n"
    (claude_folder / "MEMORY.md").write_text(conflicted, encoding="utf-8")
    sage_mem(claude_folder, "index")
    sage_mem(claude_folder, "feedback", "user_role", "helpful")
    assert index_of(claude_folder) == conflicted


def test_index_still_regenerates_a_memory_md_sage_mem_wrote(tmp_path: Path) -> None:
    # Pins today's behaviour: a file sage-mem wrote is rewritten whole, conflicts and all.
    folder = tmp_path / "memory"
    folder.mkdir()
    for name, text in CLAUDE_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    assert sage_mem(folder, "index").returncode == 0
    generated = index_of(folder)
    assert generated.startswith(catalog.HEADER + "\n\n" + catalog.NOTE + "\n")
    stale = generated.replace("\n## project\n", "\n<<<<<<< HEAD\n=======\n>>>>>>> x\n## project\n")
    (folder / "MEMORY.md").write_text(stale, encoding="utf-8")
    assert sage_mem(folder, "index").returncode == 0
    assert index_of(folder) == generated
