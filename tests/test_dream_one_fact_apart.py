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
        ("超时时间是 500 毫秒", "超时时间是 500 秒", "number"),  # 500 ms / 500 s
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
        # the fourth folder's: about a number, less than always, near, which way, whose
        ("The build takes about 5 minutes", "The build takes 5 minutes", "bound"),
        ("日志保留 7 天左右", "日志保留 7 天", "bound"),
        ("The user hardly drinks coffee", "The user drinks coffee", "frequency"),
        ("用户有时周末加班", "用户周末加班", "frequency"),
        ("The team is based near Berlin", "The team is based in Berlin", "place"),
        ("团队在上海附近", "团队在上海", "place"),
        ("Copy the config to the server", "Copy the config from the server", "direction"),
        ("签好的合同寄给李娜", "签好的合同由李娜寄来", "direction"),
        ("Use my API key for the sandbox", "Use our API key for the sandbox", "person"),
        ("用我的 API 密钥调沙箱", "用我们的 API 密钥调沙箱", "person"),
        ("The repo has a few flaky tests", "The repo has a lot of flaky tests", "quantity"),
        ("允许外部访问管理后台", "不要外部访问管理后台", "permission"),
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
        ("Keep PRs about 300 lines", "Keep PRs around 300 lines"),  # both about the number
        ("Notes about the deploy", "Notes on the deploy"),  # "about" before no number
        ("Lunch places near the office", "Lunch places near the office building"),  # both near
        ("Send the report to Bob", "Send Bob the report"),  # no way said twice
        ("The US team owns billing", "The team owns billing"),  # US is no pronoun
        ("Ping me before you push", "Ping me before pushing"),  # a person on one side only
    ],
)
def test_a_rewording_is_not_another_fact(first: str, second: str) -> None:
    assert difference(first, second) is None
