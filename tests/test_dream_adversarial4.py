"""Leftovers of the dream probe "dream3", one test each (dream4).

An idiom that only sounds like a date ("that's so yesterday"), a date word inside a
link's text, 至今天数 (至今 + 天数, not 至 + 今天), and twins refused because two parts
swapped places, which were neither merged nor listed.
"""

from __future__ import annotations

from datetime import date

import pytest

from sage_mem.dream.rules.dates import absolutize

ANCHOR = date(2026, 11, 25)  # a Wednesday


def _dated(text: str) -> tuple[str, list[str]]:
    unsure: list[str] = []
    new, _ = absolutize(text, ANCHOR, unsure)
    return new, unsure


# 1. "so yesterday" (outdated) is an idiom, not an event


@pytest.mark.parametrize(
    "text",
    [
        "That framework is so yesterday.",
        "That's so yesterday.",
        "That’s so yesterday, nobody uses it now.",
        "Flash is so last year.",
        "Skeuomorphic icons are just so last year",
        "Their logo looks so last year now.",
    ],
)
def test_so_yesterday_is_an_idiom_and_stays_as_written(text: str) -> None:
    assert _dated(text) == (text, [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "It passed, so yesterday we shipped it.",
            "It passed, so yesterday (2026-11-24) we shipped it.",
        ),
        (
            "The tests were green so last week we released.",
            "The tests were green so last week (week of 2026-11-16) we released.",
        ),
        (
            "Flash is so last year now; we moved off it last week.",
            "Flash is so last year now; we moved off it last week (week of 2026-11-16).",
        ),
        ("那个框架上周就淘汰了。", "那个框架上周（2026年11月16日那一周）就淘汰了。"),
    ],
)
def test_so_as_a_conjunction_still_dates_the_event(text: str, expected: str) -> None:
    assert _dated(text) == (expected, [])
