"""Twins worded differently, beside look-alikes one fact apart (`dream_twin_cases`, the fifth
annotated folder), through the CLI: `sage-mem dream --mode rewrite`, then `sage-mem rollback`.

What a careful reader wants: each twin merged or listed with its pair (an abbreviation, a
synonym, word order, active / passive, a number or a unit written another way, Chinese and
English mixed, a typo, one description longer with nothing new), no look-alike merged or
listed as a twin, every memory keeping its `created` and `updated`, the rollback putting back
every byte. And the ways of writing one thing, each by its kind (`rewording.normalised`),
never joining two things.
"""

from __future__ import annotations

from typing import Any

import pytest
from dream_meaning_cases import found
from dream_twin_cases import (
    LATER_LOOKALIKES,
    LATER_TWINS,
    LOOKALIKES,
    THIRD_LOOKALIKES,
    THIRD_TWINS,
    TWINS,
    build,
)
from test_dream_support import assert_stamps_kept, cli_rewrite_and_rollback

from sage_mem.dream.rewording import folder_words, mend_typo, normalised, zh_number
from sage_mem.dream.similarity import difference


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("twins")
    build(root / "memory")
    return cli_rewrite_and_rollback(root, root / "memory")


ALL_TWINS = TWINS + LATER_TWINS + THIRD_TWINS
ALL_LOOKALIKES = LOOKALIKES + LATER_LOOKALIKES + THIRD_LOOKALIKES


# A verb said in another's place ("Write code examples in plain JS" / "Code examples use plain
# JavaScript", "Use the company VPN for prod access" / "Production access goes through the
# company VPN") is a light verb, not a swapped key term as JS / TS is: each twin is found.
@pytest.mark.parametrize("name", [name for name, _ in ALL_TWINS])
def test_a_twin_worded_differently_is_merged_or_listed_with_its_pair(
        folder_run: dict[str, Any], name: str) -> None:
    assert found(folder_run["manifest"], dict(ALL_TWINS)[name]) in ("merged", "listed")


@pytest.mark.parametrize("rows", ALL_LOOKALIKES, ids=[rows[0][0] for rows in ALL_LOOKALIKES])
def test_a_look_alike_one_fact_apart_is_neither_merged_nor_listed_as_a_twin(
        folder_run: dict[str, Any], rows: list) -> None:
    assert found(folder_run["manifest"], rows) == "missed"


def test_twins_said_with_an_abbreviation_or_a_number_written_otherwise_are_merged(
        folder_run: dict[str, Any]) -> None:
    merged = {name for name, rows in ALL_TWINS
              if found(folder_run["manifest"], rows) == "merged"}
    assert {"en-k8s", "en-ts", "en-thousand", "en-10k", "en-two-spaces", "en-minutes",
            "en-typo", "zh-wan", "zh-repo", "later-en-upload", "third-en-friday", "third-en-pm",
            "third-en-half-hour", "third-zh-pm", "third-zh-half-hour"} <= merged


def test_every_memory_keeps_its_stamps_and_the_rollback_puts_back_every_byte(
        folder_run: dict[str, Any]) -> None:
    archived = [c for c in folder_run["manifest"]["changes"] if c["operation"] == "archive"]
    assert len(archived) >= 15
    assert_stamps_kept(folder_run)
    assert folder_run["restored"] == folder_run["before"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Deploy with k8s", "Deploy with Kubernetes"),
        ("主 DB 是 Postgres", "主数据库是 PostgreSQL"),
        ("commit message 用英文写", "提交信息用英文写"),
        ("1,000 calls a day", "1000 calls a day"),
        ("10k lines", "10,000 lines"),
        ("two spaces", "2 spaces"),
        ("after 30 minutes", "after 30 min"),
        ("every 24 hours", "every 24h"),
        ("免费版每天一千次调用", "免费版每天 1000 次调用"),
        ("保留 1万 条", "保留 10000 条"),
        ("十五分钟", "15 分钟"),
        ("每天九点半开站会", "每天 9:30 开站会"),
        ("用 GitHub 帐号登陆", "用 GitHub 账号登录"),
        ("Freeze starts on Fri", "Freeze starts on Friday"),
        ("Retro at 3pm", "Retro at 15:00"),
        ("下午三点评审", "下午 15:00 评审"),
        ("a break every half an hour", "a break every 30 minutes"),
        ("例会开半小时", "例会开 ３０ 分钟"),
        ("会开两个小时", "会开 2 小时"),
    ],
)
def test_one_thing_written_two_ways_is_written_one_way(first: str, second: str) -> None:
    assert normalised(first).replace(" ", "") == normalised(second).replace(" ", "")
    assert normalised(normalised(first)) == normalised(first)
    assert difference(first, second) is None


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("周会在周五", "周会在星期五"),  # one day
        ("The max upload is 25 MB", "Uploads are capped at 25 MB"),  # one bound
        ("Squash commits when merging a PR", "Always squash-merge pull requests"),  # "always"
        ("每次部署最多停机 5 分钟", "每次部署停机不超过五分钟"),  # 不超过 is a bound, not a not
    ],
)
def test_one_thing_said_two_ways_is_no_other_fact(first: str, second: str) -> None:
    assert difference(first, second) is None


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Deploy with k8s to staging", "Deploy with Kubernetes to production"),
        ("Examples in JS", "Examples in TS"),
        ("1,000 calls a day", "10,000 calls a day"),
        ("1k rows", "1M rows"),
        ("5 千", "5 万"),
        ("企业版每天一千次导出", "企业版每天一万次导出"),
        ("用户每周游泳一千米", "用户每周游泳两千米"),
        ("Tokens expire after 15 minutes", "Tokens expire after 15 seconds"),
        ("Timeout is 500 ms", "Timeout is 500 s"),
        ("每天九点半开会", "每天十点半开会"),
        ("开发分支叫 develop", "开发分支叫 dev"),  # dev is a name as often as "development"
        ("数据迁移最多停机五分钟", "数据迁移最多停机十五分钟"),
        ("Release notes go out on Fri", "Release notes go out on Mon"),
        ("The backup runs at 3am", "The backup runs at 3pm"),
        ("每周二下午三点发版", "每周二凌晨三点发版"),
        ("Keep it to half an hour", "Keep it to an hour"),
        ("站会开半小时", "站会开一刻钟"),
        ("会开两个小时", "会开一个小时"),
    ],
)
def test_two_things_stay_two(first: str, second: str) -> None:
    assert difference(first, second) is not None


@pytest.mark.parametrize(
    "text",
    ["千万不要删库", "大家一起评审", "统一用 UTF-8", "5 千克", "Mr Smith", "三点建议", "pr-123",
     ".env", "He sat down", "Sun Microsystems"],
)
def test_what_only_looks_like_a_number_or_an_abbreviation_is_left(text: str) -> None:
    assert normalised(text) == text


def test_a_chinese_numeral_is_read() -> None:
    assert [zh_number(t) for t in ("十五", "两千五", "一万二千", "三百零五")] == [
        15, 2500, 12000, 305]


def test_a_slip_of_the_keys_is_mended_only_where_the_folder_does_not_use_the_word() -> None:
    slip = "The user prefers a dark theme in the ediotr"
    held = folder_words(["The user prefers a dark theme in the editor", slip])
    assert mend_typo("…in the editor", slip, held).endswith("in the editor")
    # "trail" and "trial" are each a word other memories use: neither is a slip
    held = folder_words(["a trail run", "trail maps", "a trial run", "trial accounts"])
    assert mend_typo("The user likes the trail", "The user likes the trial", held).endswith(
        "trial")
    # a British spelling beside the American one is one word, however often either is used
    held = folder_words(["colour"] * 3 + ["color"] * 3)
    assert mend_typo("Use the brand colour", "Use the brand color", held).endswith("colour")
