"""Long bodies without a summary get one: first sentences, at most 150 characters (en, zh)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_dream_support import add

from sage_mem.dream import run_dream
from sage_mem.dream.rules.summaries import make_summary
from sage_mem.store import MemoryStore

LONG_EN = (
    "Run the whole test suite before every commit. A change that broke the build went unnoticed "
    "for a day because only one file had been run. Use `python -m pytest` from the root, e.g. in "
    "the pre-commit hook, and never skip it."
)
LONG_ZH = (
    "发布前必须运行全部测试。上次只跑了一个文件，结果构建坏了一整天都没人发现！"
    "测试命令是在仓库根目录运行 pytest，提交前的钩子里也要跑一遍。不要为了赶时间跳过它。"
    "如果测试太慢，先找出最慢的那几个，再想办法加速，而不是跳过。"
    "持续集成会在每次推送时运行同样的命令，本地通过而远端失败时，先看环境变量和依赖版本是否一致。"
    "记录下每次失败的原因，写进这条记忆里，下次遇到同样的问题就能很快找到答案。"
    "有疑问就问维护者。"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            LONG_EN,
            "Run the whole test suite before every commit. A change that broke the "
            "build went unnoticed for a day because only one file had been run.",
            id="english-two-sentences",
        ),
        pytest.param(
            LONG_ZH,
            "发布前必须运行全部测试。上次只跑了一个文件，结果构建坏了一整天都没人发现！"
            "测试命令是在仓库根目录运行 pytest，提交前的钩子里也要跑一遍。不要为了赶时间跳过它。"
            "如果测试太慢，先找出最慢的那几个，再想办法加速，而不是跳过。",
            id="chinese-split-at-full-stops",
        ),
        pytest.param(
            "# Deploy\n\n- Use **make deploy**, e.g. from CI. Then check [the dashboard](x.md).",
            "Use make deploy, e.g. from CI. Then check the dashboard.",
            id="markdown-stripped",
        ),
        pytest.param(
            "```\ncode first\n```\nThe prose. More prose.",
            "The prose. More prose.",
            id="code-block-skipped",
        ),
        pytest.param(
            "Deploy steps.\n\n    make deploy\n\nThen wait.",
            "Deploy steps. Then wait.",
            id="indented-code-block-skipped",
        ),
        pytest.param(
            "````\n```\nstill code\n````\nThe prose.",
            "The prose.",
            id="fence-closed-only-by-as-long-a-run",
        ),
        pytest.param(
            "<pre>\nsome code\n</pre>\n\nThe prose.",
            "The prose.",
            id="html-pre-skipped",
        ),
        pytest.param(
            "Run `` `make` `` or <code>make all</code> first.",
            "Run `` `make` `` or `make all` first.",
            id="inline-code-stays-code",
        ),
        pytest.param(
            "See [[user_cat#name]] and [[user_dog#name|the dog]].",
            "See user_cat and the dog.",
            id="wiki-anchor-is-not-the-text",
        ),
        pytest.param(
            'Read [the guide](guide.md "Guide") first.',
            "Read the guide first.",
            id="link-with-a-title",
        ),
        pytest.param(
            "Dr. Smith owns the billing service. Ask him.",
            "Dr. Smith owns the billing service. Ask him.",
            id="abbreviation-kept",
        ),
        pytest.param(
            "下一行是中文\n换行后继续。",
            "下一行是中文换行后继续。",
            id="chinese-wrap-without-space",
        ),
    ],
)
def test_the_summary_is_the_first_sentences(body: str, expected: str) -> None:
    assert make_summary(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("word " * 80, id="english-one-long-sentence"),
        pytest.param("很长的句子" * 60, id="chinese-one-long-sentence"),
    ],
)
def test_a_first_sentence_over_the_limit_is_cut_with_an_ellipsis(body: str) -> None:
    summary = make_summary(body)
    assert summary is not None
    assert len(summary) <= 150
    assert summary.endswith("…")


@pytest.mark.parametrize(
    "body", [pytest.param(LONG_EN, id="english"), pytest.param(LONG_ZH, id="chinese")]
)
def test_a_long_body_gets_a_summary_and_the_file_keeps_its_other_bytes(
    empty_dir: Path, body: str
) -> None:
    path = add(
        empty_dir,
        "feedback_tests",
        "Tests before commits",
        body,
        category="feedback",
        created="2026-11-20",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    memory = store.read("feedback_tests")
    assert memory.summary and len(memory.summary) <= 150
    assert memory.body.strip() == body
    assert path.read_text(encoding="utf-8").startswith("---\ndescription: Tests before commits\n")


@pytest.mark.parametrize(
    ("body", "meta"),
    [
        pytest.param("Short body under the limit.", {}, id="short-body"),
        pytest.param(LONG_EN, {"summary": "Mine, not yours"}, id="has-summary"),
        pytest.param(LONG_ZH, {"locked": True}, id="locked"),
    ],
)
def test_memories_that_need_no_summary_are_untouched(
    empty_dir: Path, body: str, meta: dict
) -> None:
    path = add(empty_dir, "feedback_tests", "Tests", body, category="feedback", **meta)
    before = path.read_bytes()
    run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("description", "body"),
    [
        pytest.param(
            "On-call runbook for the payments service",
            "On-call runbook for the payments service. Page the secondary after 15 minutes "
            "without an acknowledgement. " + LONG_EN,
            id="english-first-sentence-repeats",
        ),
        pytest.param(
            "发布前必须运行全部测试",
            LONG_ZH,
            id="chinese-first-sentence-repeats",
        ),
    ],
)
def test_a_summary_never_repeats_the_description(description: str, body: str) -> None:
    summary = make_summary(body, description=description)
    assert summary is not None
    assert not summary.startswith(description)


def test_a_body_that_only_repeats_its_description_gets_no_summary() -> None:
    description = "Run the whole test suite before every commit"
    body = "# Run the whole test suite before every commit\n\n" + (
        "| step | command |\n| --- | --- |\n| test | pytest |\n" * 12
    ) + "\nRun the whole test suite before every commit."
    assert make_summary(body, description=description) is None


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        pytest.param(
            "The checklist lives in the release_tools repository and is linked from "
            "[[project_api_v3]]. " + LONG_EN,
            ("release_tools", "project_api_v3"),
            id="snake-case-and-wiki-link",
        ),
        pytest.param(
            "Set __init__ paths and the MAX_RETRIES value; _private names stay. " + LONG_EN,
            ("MAX_RETRIES", "_private"),
            id="identifiers",
        ),
        pytest.param("This is _really_ important. " + LONG_EN, ("This is really important.",),
                     id="underscore-emphasis-still-dropped"),
    ],
)
def test_markdown_stripping_keeps_identifiers_readable(body: str, kept: tuple[str, ...]) -> None:
    summary = make_summary(body, description="Notes")
    assert summary is not None
    for text in kept:
        assert text in summary


def test_a_summary_never_hides_the_description(empty_dir: Path) -> None:
    """MEMORY.md, search results (MCP and CLI), listings and the hook show the description."""
    from datetime import UTC, datetime

    from sage_mem.agents.context import render_memory
    from sage_mem.commands.render import hit_line, memory_line
    from sage_mem.mcp_server.memory_tools import hit_dict

    description = "Tests before commits"
    add(empty_dir, "feedback_tests", description, LONG_EN, category="feedback",
        created="2026-11-20")
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    memory = store.read("feedback_tests")
    assert memory.summary  # the dream filled it
    index = (empty_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert f"(feedback_tests.md) — {description}" in index
    hit = store.search("tests before commits")[0]
    assert hit_dict(hit)["description"] == description
    assert hit_dict(hit)["summary"] == memory.summary  # beside it, not instead
    assert description in hit_line(hit) and memory.summary not in hit_line(hit)
    assert description in memory_line(memory)
    assert description in render_memory(memory, datetime.now(UTC))


def test_a_memory_without_a_description_shows_its_summary(empty_dir: Path) -> None:
    from sage_mem.commands.render import memory_line

    (empty_dir / "feedback_nodesc.md").write_text(
        "---\ncategory: feedback\nsummary: Run the suite first\n---\n\n# Notes\n\nSome text.\n",
        encoding="utf-8",
    )
    memory = MemoryStore(empty_dir).read("feedback_nodesc")
    assert "Run the suite first" in memory_line(memory)


TOKEN = "ghp_" + "Zq8RkT2mWx9LbV4nYc7HdJ3sPf6GaE1uKo5i"  # not a real token


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        pytest.param(
            f"The deploy bot pushes with the token {TOKEN} from its own account. It runs "
            "every night after the integration suite passes and posts its result in the "
            "release channel, so a failed night shows up before the standup starts.",
            "It runs every night",
            id="english",
        ),
        pytest.param(
            f"部署机器人用令牌 {TOKEN} 推送代码。"
            "它每天夜里在集成测试通过后运行，并把结果发到发布频道，"
            "这样夜里失败的构建在站会之前就能被发现，值班的同事也能及时处理，不用等到第二天。"
            "如果连续两晚失败，就要暂停合并，先找出原因再继续。机器人的配置放在运维仓库里，"
            "改动之前要先和平台组确认，改完之后要在测试环境跑一晚再上线，免得影响第二天的发布。",
            "它每天夜里",
            id="chinese",
        ),
    ],
)
def test_a_summary_never_copies_a_credential_and_a_report_proposes_what_a_rewrite_does(
    tmp_path: Path, body: str, kept: str
) -> None:
    results = {}
    for mode in ("report", "rewrite"):
        folder = tmp_path / mode / "memory"
        add(folder, "reference_bot", "The deploy bot", body, category="reference")
        store = MemoryStore(folder)
        result = run_dream(store, mode=mode)
        report = Path(result.report or "").read_text(encoding="utf-8")
        assert TOKEN not in report
        results[mode] = (result.by_rule.get("summaries"), result.refused)
        summary = store.read("reference_bot").summary
        if mode == "rewrite":
            assert summary and summary.startswith(kept) and TOKEN not in summary
    assert results["report"] == results["rewrite"] == (1, 0)
