"""Leftovers of the dream probe "dream3", one test each (dream4).

An idiom that only sounds like a date ("that's so yesterday"), a date word inside a
link's text, 至今天数 (至今 + 天数, not 至 + 今天), and twins refused because two parts
swapped places, which were neither merged nor listed.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from test_dream_support import add, folder_bytes, read_manifest

from sage_mem.dream import run_dream
from sage_mem.dream.rules.dates import absolutize
from sage_mem.store import MemoryStore

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


# 2. a date word in a link's text (or an image's alt text) is left inside the brackets, listed


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        ("See [yesterday's notes](notes.md) for more.", "[yesterday's notes]"),
        ("![today's chart](chart.png) shows the drop.", "[today's chart]"),
        ('Read [the notes from last week](notes.md "notes").', "[the notes from last week]"),
        ("见[昨天的会议纪要](notes.md)。", "[昨天的会议纪要]"),
        ("![今天的图表](chart.png)", "[今天的图表]"),
    ],
)
def test_a_date_word_in_a_links_text_is_left_and_listed(text: str, listed: str) -> None:
    assert _dated(text) == (text, [listed])


def test_prose_after_a_link_with_a_date_word_is_still_dated() -> None:
    assert _dated("[yesterday's notes](notes.md) were written yesterday.") == (
        "[yesterday's notes](notes.md) were written yesterday (2026-11-24).",
        ["[yesterday's notes]"],
    )
    assert _dated("[昨天的纪要](n.md)是昨天写的。") == (
        "[昨天的纪要](n.md)是昨天（2026年11月24日）写的。",
        ["[昨天的纪要]"],
    )


def test_a_dream_run_lists_a_date_word_in_a_links_text(empty_dir: Path) -> None:
    body = "See [yesterday's notes](notes.md) and [昨天的纪要](zh.md).\n"
    add(empty_dir, "project_links", "Notes", body, created="2026-11-25", updated="2026-11-25")
    before = folder_bytes(empty_dir)
    store = MemoryStore(empty_dir, watch=False)
    manifest = read_manifest(run_dream(store, mode="rewrite"))
    assert folder_bytes(empty_dir)["project_links.md"] == before["project_links.md"]
    [note] = [n for n in manifest["notes"] if n["rule"] == "relative-dates"]
    assert "[yesterday's notes]" in note["message"] and "[昨天的纪要]" in note["message"]
    assert "link's text" in note["message"]


# 3. 至今天数 is 至今 + 天数 ("the days so far"): left and listed, not dated


@pytest.mark.parametrize(
    "text",
    ["项目上线至今天数已达 30 天。", "迄今天数不多，先观察。", "入冬至今天气一直很干燥。"],
)
def test_zhi_jin_before_a_tian_word_is_left_and_listed(text: str) -> None:
    assert _dated(text) == (text, ["今天"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("截至今天，用户有 5 个项目。", "截至今天（2026年11月25日），用户有 5 个项目。"),
        ("截至今天数据显示一切正常。", "截至今天（2026年11月25日）数据显示一切正常。"),
        ("至今天为止一切正常。", "至今天（2026年11月25日）为止一切正常。"),
        (
            "从昨天至今天下午都在开会。",
            "从昨天（2026年11月24日）至今天（2026年11月25日）下午都在开会。",
        ),
        ("The counter has run until today.", "The counter has run until today (2026-11-25)."),
    ],
)
def test_until_today_is_still_dated(text: str, expected: str) -> None:
    assert _dated(text) == (expected, [])


# 4. twins but for two parts in swapped places: not merged, but listed


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "Keep answers short and lead with the conclusion",
            "Lead with the conclusion and keep answers short",
        ),
        (
            "Always commit the change and push the branch",
            "Always push the branch and commit the change",
        ),
        ("用户在上午开会，下午写代码", "用户在下午开会，上午写代码"),
    ],
)
def test_swapped_twins_are_not_merged_but_listed(
    tmp_path: Path, first: str, second: str
) -> None:
    notes = {}
    for mode in ("report", "rewrite"):
        folder = tmp_path / mode / "memory"
        folder.mkdir(parents=True)
        meta = {"created": "2026-11-20", "updated": "2026-11-20"}
        add(folder, "feedback_one", first, "The user asked for it.", trust=0.7, **meta)
        add(folder, "feedback_two", second, "The user asked for it.", trust=0.5, **meta)
        before = folder_bytes(folder)
        manifest = read_manifest(run_dream(MemoryStore(folder, watch=False), mode=mode))
        assert [c for c in manifest["changes"] if c["rule"] == "near-duplicates"] == []
        after = folder_bytes(folder)
        assert [after[name] for name in before] == list(before.values())
        notes[mode] = [n for n in manifest["notes"] if n["rule"] == "near-duplicates"]
    [note] = notes["rewrite"]
    assert note["id"] == "feedback_two"
    assert "feedback_one" in note["message"] and "swapped places" in note["message"]
    assert first in note["message"] and second in note["message"]
    assert notes["report"] == notes["rewrite"]
