"""What `similarity.difference` tells apart that the index folds together (the third folder of
`dream_meaning_cases`): a number's unit and sign, a bound, a modality, a scope, a frequency, a
tense, who a fact is about, a role given by "is" or by a verb; and the rewordings it must still
let through (是 / 为, a sentence said anew, 养的猫 / 的猫).
"""

from __future__ import annotations

import pytest

from sage_mem.dream.similarity import difference


@pytest.mark.parametrize(
    ("first", "second", "kind"),
    [
        ("Request timeout is 500 ms", "Request timeout is 500 s", "number"),
        ("The user's timezone is UTC+8", "The user's timezone is UTC-8", "number"),
        ("超时时间是 500 毫秒", "超时时间是 500 秒", "unit"),
        ("时间戳用秒存储", "时间戳用毫秒存储", "unit"),
        ("Coverage must be at least 80%", "Coverage must be above 80%", "bound"),
        ("Requires Node 18", "Requires Node >= 18", "bound"),
        ("生产环境跑 3 个副本", "生产环境至少跑 3 个副本", "bound"),
        ("Tests must pass before merging", "Tests should pass before merging", "modality"),
        ("You must sign your commits", "You may sign your commits", "modality"),
        ("Use tabs in this repo", "Use tabs in all repos", "quantity"),
        ("The team meets every other week", "The team meets every week", "quantity"),
        ("Retry a failed job once", "Retry a failed job twice", "quantity"),
        ("The user works at Google", "The user worked at Google", "tense"),
        ("The user's wife is a doctor", "The user's wife was a doctor", "tense"),
        ("用户在谷歌工作", "用户以前在谷歌工作", "time on one side only"),
        ("The user is allergic to peanuts", "The user's son is allergic to peanuts", "subject"),
        ("用户对芒果过敏", "用户的儿子对芒果过敏", "subject"),
        ("The user's manager is Alice", "The user is Alice's manager", "subject"),
        ("The user is the tech lead", "The user reports to the tech lead", "relation"),
        ("用户是技术负责人", "用户向技术负责人汇报", "relation"),
        ("The rate limit is per user", "The rate limit is per team", "key term"),
        ("The user is allergic to cats", "The user has cats", "key term"),
    ],
)
def test_one_fact_apart_is_another_fact(first: str, second: str, kind: str) -> None:
    assert kind in (difference(first, second) or ""), difference(first, second)
    assert kind in (difference(second, first) or ""), difference(second, first)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("用户在北京工作，时区为东八区", "用户在北京办公室工作，时区是东八区"),  # 为 / 是
        ("用户的猫叫芝麻，喜欢晒太阳", "用户养的猫叫芝麻，很喜欢晒太阳"),  # 养的 is no owner
        ("Failed charges and refund errors are charted at kibana.acme.dev/app/pay-errors.",
         "The charts of failed charges and refund errors live at kibana.acme.dev/app/pay-errors."),
        ("The user prefers the fish shell", "User prefers the fish shell"),  # who it is about
        ("Release 2.3 and the docs", "Release 2.3 and docs"),  # a stop word after a number
    ],
)
def test_a_rewording_is_not_another_fact(first: str, second: str) -> None:
    assert difference(first, second) is None
