"""Relative dates become absolute (English, Chinese) where a memory says when it was written."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from test_dream_support import add, read_manifest

from sage_mem.dream import run_dream
from sage_mem.dream.rules.dates import absolutize
from sage_mem.store import MemoryStore

ANCHOR = date(2026, 11, 25)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("We shipped it yesterday.", "We shipped it on 2026-11-24.", id="en-yesterday"),
        pytest.param(
            "Yesterday we shipped it.", "On 2026-11-24 we shipped it.", id="en-capitalised"
        ),
        pytest.param(
            "The review is due tomorrow", "The review is due on 2026-11-26", id="en-tomorrow"
        ),
        pytest.param(
            "Blocked since yesterday", "Blocked since 2026-11-24", id="en-after-preposition"
        ),
        pytest.param(
            "It broke the day before yesterday", "It broke on 2026-11-23", id="en-day-before"
        ),
        pytest.param("Merged two days ago", "Merged on 2026-11-23", id="en-days-ago"),
        pytest.param("Freeze starts in 3 days", "Freeze starts on 2026-11-28", id="en-in-days"),
        pytest.param(
            "I was ill last week", "I was ill in the week of 2026-11-16", id="en-last-week"
        ),
        pytest.param("Demo next week", "Demo in the week of 2026-11-30", id="en-next-week"),
        pytest.param(
            "Standup moves next Monday", "Standup moves on Monday 2026-11-30", id="en-next-monday"
        ),
        pytest.param(
            "It failed last Friday", "It failed on Friday 2026-11-20", id="en-last-friday"
        ),
        pytest.param(
            "We moved offices last month", "We moved offices in October 2026", id="en-last-month"
        ),
        pytest.param("Budget approved this year", "Budget approved in 2026", id="en-this-year"),
        pytest.param("yesterday's call ran long", "2026-11-24's call ran long", id="en-possessive"),
        pytest.param("我昨天去了超市", "我2026年11月24日去了超市", id="zh-yesterday"),
        pytest.param("前天发布了新版本", "2026年11月23日发布了新版本", id="zh-day-before"),
        pytest.param("明天开会", "2026年11月26日开会", id="zh-tomorrow"),
        pytest.param("上周讨论了方案", "2026年11月16日那一周讨论了方案", id="zh-last-week"),
        pytest.param(
            "下周一开始新的站会时间", "2026年11月30日（周一）开始新的站会时间", id="zh-next-monday"
        ),
        pytest.param("上周五服务器宕机", "2026年11月20日（周五）服务器宕机", id="zh-last-friday"),
        pytest.param("上个月搬了办公室", "2026年10月搬了办公室", id="zh-last-month"),
        pytest.param("上月底完成迁移", "2026年10月底完成迁移", id="zh-month-end"),
        pytest.param("去年加入公司", "2025年加入公司", id="zh-last-year"),
        pytest.param("三天前合并了分支", "2026年11月22日合并了分支", id="zh-days-ago"),
        pytest.param("会议改到下星期三", "会议改到2026年12月2日（周三）", id="zh-xingqi"),
        pytest.param(
            "Yesterday 我们决定下周发布",
            "On 2026-11-24 我们决定2026年11月30日那一周发布",
            id="mixed",
        ),
    ],
)
def test_relative_dates_become_absolute(text: str, expected: str) -> None:
    assert absolutize(text, ANCHOR)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Run `make deploy-tomorrow` to stage it", id="en-code-span"),
        pytest.param("```\nsleep until tomorrow\n```\n", id="en-code-block"),
        pytest.param("See notes/yesterday.md", id="en-path"),
        pytest.param("The Yesterday-Today pipeline", id="en-hyphenated-name"),
        pytest.param("A weekly sync, not a daily one", id="en-no-phrase"),
        pytest.param("性格是先天后天共同形成的", id="zh-innate-acquired"),
        pytest.param("这个月饼很好吃", id="zh-mooncake"),
        pytest.param("这周末去爬山", id="zh-weekend"),
        pytest.param("马上周一的例会就要开始了", id="zh-word-before"),
        pytest.param("请看一下周报", id="zh-weekly-report"),
        pytest.param("`明天`是一个变量名", id="zh-code-span"),
        pytest.param("Deploy:\n\n    sleep until tomorrow\n", id="en-indented-code-block"),
        pytest.param("    sleep until tomorrow\n", id="en-indented-code-at-start"),
        pytest.param("Deploy:\n\n\tsleep until tomorrow\n", id="en-tab-indented-code"),
        pytest.param("Run <code>deploy --when tomorrow</code> to stage it", id="en-html-code"),
        pytest.param("<pre>\nsleep until tomorrow\n\nand tomorrow\n</pre>\n", id="en-html-pre"),
        pytest.param("用 <CODE class=\"x\">明天</CODE> 作变量名", id="zh-html-code"),
        pytest.param("~~~~\nsleep until tomorrow\n~~~\nstill tomorrow\n~~~~\n", id="en-long-fence"),
        pytest.param("```\nsleep until tomorrow\n", id="en-unclosed-fence"),
        pytest.param("> ```\n> sleep until tomorrow\n> ```\n", id="en-fence-in-quote"),
        pytest.param("- step:\n  ```\n  sleep until tomorrow\n  ```\n", id="en-fence-in-list"),
        pytest.param("Run `` a ` tomorrow `` now", id="en-double-backtick-span"),
    ],
)
def test_text_that_only_looks_like_a_relative_date_is_kept(text: str) -> None:
    assert absolutize(text, ANCHOR) == (text, [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Shipped yesterday:\n    and reviewed tomorrow\n",
            "Shipped on 2026-11-24:\n    and reviewed on 2026-11-26\n",
            id="indented-line-continuing-a-paragraph",
        ),
        pytest.param(
            "- shipped\n\n    reviewed tomorrow\n",
            "- shipped\n\n    reviewed on 2026-11-26\n",
            id="indented-paragraph-in-a-list-item",
        ),
        pytest.param(
            "    ```\nshipped yesterday\n",
            "    ```\nshipped on 2026-11-24\n",
            id="a-fence-indented-four-spaces-is-indented-code",
        ),
        pytest.param(
            "Escaped \\`backtick, shipped yesterday`",
            "Escaped \\`backtick, shipped on 2026-11-24`",
            id="escaped-backtick-opens-no-span",
        ),
        pytest.param(
            "`a\n\nshipped yesterday`",
            "`a\n\nshipped on 2026-11-24`",
            id="a-code-span-ends-with-its-paragraph",
        ),
        pytest.param(
            "```\ncode\n```\nshipped yesterday ```x``` done\n",
            "```\ncode\n```\nshipped on 2026-11-24 ```x``` done\n",
            id="prose-after-a-closed-fence",
        ),
    ],
)
def test_prose_next_to_code_is_still_dated(text: str, expected: str) -> None:
    assert absolutize(text, ANCHOR)[0] == expected


@pytest.mark.parametrize(
    ("description", "body", "expected_body"),
    [
        pytest.param(
            "Standup time",
            "Moved to 10:00 yesterday.",
            "Moved to 10:00 on 2026-11-24.",
            id="english",
        ),
        pytest.param(
            "站会时间", "昨天决定站会改到十点。", "2026年11月24日决定站会改到十点。", id="chinese"
        ),
    ],
)
def test_an_anchored_memory_is_rewritten(
    empty_dir: Path, description: str, body: str, expected_body: str
) -> None:
    add(
        empty_dir,
        "project_standup",
        description,
        body,
        category="project",
        created="2026-11-25",
        updated="2026-11-25T09:00:00Z",
    )
    store = MemoryStore(empty_dir)
    result = run_dream(store, mode="rewrite")
    assert store.read("project_standup").body.strip() == expected_body
    change = next(c for c in read_manifest(result)["changes"] if c["rule"] == "relative-dates")
    assert change["reason"].endswith("(written on 2026-11-25)")


@pytest.mark.parametrize(
    ("meta", "why"),
    [
        pytest.param({}, "no created or updated date", id="no-date"),
        pytest.param(
            {"created": "2026-11-01", "updated": "2026-11-20T10:00:00Z"},
            "edited on",
            id="edited-later",
        ),
    ],
)
@pytest.mark.parametrize(
    "body",
    [pytest.param("Decided yesterday.", id="english"), pytest.param("昨天决定的。", id="chinese")],
)
def test_dates_without_a_sure_anchor_are_left_and_reported(
    empty_dir: Path, meta: dict, why: str, body: str
) -> None:
    path = add(empty_dir, "project_plan", "Plan", body, category="project", **meta)
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    assert any(why in note["message"] for note in read_manifest(result)["notes"])


def test_only_updated_is_enough_of_an_anchor(empty_dir: Path) -> None:
    add(
        empty_dir,
        "user_note",
        "Note",
        "Met the team last week.",
        category="user",
        modified="2026-11-25T08:00:00Z",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("user_note").body.strip() == "Met the team in the week of 2026-11-16."


def test_the_description_loses_its_relative_date_too(empty_dir: Path) -> None:
    add(
        empty_dir,
        "project_freeze",
        "Code freeze starts next Monday",
        category="project",
        created="2026-11-25",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project_freeze").description == "Code freeze starts on Monday 2026-11-30"
