"""Relative dates become absolute (English, Chinese) where a memory says when it was written."""

from __future__ import annotations

import time
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
        pytest.param(
            "We shipped it yesterday.", "We shipped it yesterday (2026-11-24).", id="en-yesterday"
        ),
        pytest.param(
            "Yesterday we shipped it.", "Yesterday (2026-11-24) we shipped it.", id="en-capitalised"
        ),
        pytest.param(
            "The review is due tomorrow",
            "The review is due tomorrow (2026-11-26)",
            id="en-tomorrow",
        ),
        pytest.param(
            "Blocked since yesterday",
            "Blocked since yesterday (2026-11-24)",
            id="en-after-preposition",
        ),
        pytest.param(
            "It broke the day before yesterday",
            "It broke the day before yesterday (2026-11-23)",
            id="en-day-before",
        ),
        pytest.param("Merged two days ago", "Merged two days ago (2026-11-23)", id="en-days-ago"),
        pytest.param(
            "Freeze starts in 3 days", "Freeze starts in 3 days (2026-11-28)", id="en-in-days"
        ),
        pytest.param(
            "I was ill last week", "I was ill last week (week of 2026-11-16)", id="en-last-week"
        ),
        pytest.param("Demo next week", "Demo next week (week of 2026-11-30)", id="en-next-week"),
        pytest.param(
            "Standup moves next Monday",
            "Standup moves next Monday (2026-11-30)",
            id="en-next-monday",
        ),
        pytest.param(
            "It failed last Friday", "It failed last Friday (2026-11-20)", id="en-last-friday"
        ),
        pytest.param(
            "We moved offices last month",
            "We moved offices last month (October 2026)",
            id="en-last-month",
        ),
        pytest.param(
            "Budget approved this year", "Budget approved this year (2026)", id="en-this-year"
        ),
        pytest.param(
            "yesterday's call ran long",
            "yesterday's (2026-11-24) call ran long",
            id="en-possessive",
        ),
        pytest.param("我昨天去了超市", "我昨天（2026年11月24日）去了超市", id="zh-yesterday"),
        pytest.param("前天发布了新版本", "前天（2026年11月23日）发布了新版本", id="zh-day-before"),
        pytest.param("明天开会", "明天（2026年11月26日）开会", id="zh-tomorrow"),
        pytest.param("上周讨论了方案", "上周（2026年11月16日那一周）讨论了方案", id="zh-last-week"),
        pytest.param(
            "下周一开始新的站会时间",
            "下周一（2026年11月30日）开始新的站会时间",
            id="zh-next-monday",
        ),
        pytest.param("上周五服务器宕机", "上周五（2026年11月20日）服务器宕机", id="zh-last-friday"),
        pytest.param("上个月搬了办公室", "上个月（2026年10月）搬了办公室", id="zh-last-month"),
        pytest.param("上月底完成迁移", "上月底（2026年10月底）完成迁移", id="zh-month-end"),
        pytest.param("去年加入公司", "去年（2025年）加入公司", id="zh-last-year"),
        pytest.param("三天前合并了分支", "三天前（2026年11月22日）合并了分支", id="zh-days-ago"),
        pytest.param("十五天前上线了", "十五天前（2026年11月10日）上线了", id="zh-fifteen"),
        pytest.param("二十天后发布", "二十天后（2026年12月15日）发布", id="zh-twenty"),
        pytest.param("二十一天前换了", "二十一天前（2026年11月4日）换了", id="zh-twenty-one"),
        pytest.param("会议改到下星期三", "会议改到下星期三（2026年12月2日）", id="zh-xingqi"),
        pytest.param(
            "Yesterday 我们决定下周发布",
            "Yesterday (2026-11-24) 我们决定下周（2026年11月30日那一周）发布",
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
        pytest.param("马上周一的例会就要开始了", id="zh-word-before"),
        pytest.param("请看一下周报", id="zh-weekly-report"),
        pytest.param("`明天`是一个变量名", id="zh-code-span"),
        pytest.param("Deploy:\n\n    sleep until tomorrow\n", id="en-indented-code-block"),
        pytest.param("    sleep until tomorrow\n", id="en-indented-code-at-start"),
        pytest.param("Deploy:\n\n\tsleep until tomorrow\n", id="en-tab-indented-code"),
        pytest.param("Run <code>deploy --when tomorrow</code> to stage it", id="en-html-code"),
        pytest.param("<pre>\nsleep until tomorrow\n\nand tomorrow\n</pre>\n", id="en-html-pre"),
        pytest.param('用 <CODE class="x">明天</CODE> 作变量名', id="zh-html-code"),
        # a standing rule or a general statement dates nothing
        pytest.param("Do not promise a fix for tomorrow.", id="en-rule-do-not"),
        pytest.param("Never schedule a deploy for tomorrow morning.", id="en-rule-never"),
        pytest.param("When the user says next week, ask for the exact day.", id="en-mention"),
        pytest.param("Releases go out on the last Friday of each month.", id="en-last-x-of"),
        pytest.param("Over the last year the user moved to Go.", id="en-over-the-last-year"),
        pytest.param("The migration takes the next week or two.", id="en-idiom-week-or-two"),
        pytest.param("Most teams today use trunk-based development.", id="en-generic-today"),
        pytest.param("The user likes to say tomorrow is another day.", id="en-idiom"),
        pytest.param("Their favourite film is The Day After Tomorrow.", id="en-title"),
        # a title opening a sentence: title case after the word, or the sentence names a work
        pytest.param("Yesterday Once More is her favourite song.", id="en-title-at-start"),
        pytest.param("Today Was a Fairytale is on repeat in her car.", id="en-title-verb"),
        pytest.param("Yesterday's Gone is the tune he hums.", id="en-title-possessive"),
        pytest.param("Today I Learned: pytest fixtures compose.", id="en-title-til"),
        pytest.param("Yesterday, by the Beatles, is her favourite song.", id="en-title-work"),
        pytest.param('The manager said: "we ship tomorrow or never".', id="en-quote"),
        pytest.param("> Customer: we need it by tomorrow\n", id="en-block-quote"),
        pytest.param("The user signed off with 'see you tomorrow' as usual.", id="en-single-quote"),
        pytest.param("You must not promise anything for tomorrow.", id="en-must-not"),
        pytest.param("**How to apply:** ask whether tomorrow works.", id="en-how-to-apply"),
        pytest.param("不要答应客户明天修好。", id="zh-rule"),
        pytest.param("如果用户说下周，要问清楚是哪一天。", id="zh-if"),
        pytest.param("用户喜欢玩明日方舟。", id="zh-proper-noun"),
        pytest.param("今日头条上看到的新闻。", id="zh-literary-today"),
        pytest.param("用户常说：今日事今日毕。", id="zh-idiom"),
        pytest.param("老板说“明天一定上线”。", id="zh-quote"),
        pytest.param("推荐《明天会更好》这首歌。", id="zh-title"),
        pytest.param("今天你要嫁给我是她最喜欢的歌。", id="zh-title-at-start"),
        pytest.param("她最喜欢的歌是今天你要嫁给我。", id="zh-title-after-song-is"),
        pytest.param("明天过后是他最爱的电影。", id="zh-film-title"),
        pytest.param("今天是个好日子这首歌很好听。", id="zh-this-song"),
        # a date the person wrote beside the phrase already
        pytest.param("The review is tomorrow (Nov 26).", id="en-month-day-beside"),
        pytest.param("The review is tomorrow (Thursday).", id="en-weekday-beside"),
        pytest.param("The review is tomorrow, Nov 26.", id="en-month-day-after-comma"),
        pytest.param("The review is tomorrow (the 26th).", id="en-ordinal-beside"),
        pytest.param("明天（周四）开会。", id="zh-weekday-beside"),
        pytest.param("明天，也就是周四，开会。", id="zh-that-is-thursday"),
        # an ordinal, a range or a count cut short is no count of days from the writing
        pytest.param("It broke two or three days ago.", id="en-range-or"),
        pytest.param("It broke 5 to 7 days ago.", id="en-range-to"),
        pytest.param("The outage was one or two weeks ago.", id="en-range-weeks"),
        pytest.param("第三天后开始下雨。", id="zh-ordinal-day"),
        pytest.param("三四天前出过一次故障。", id="zh-range-three-or-four"),
        pytest.param("两三天前出过一次故障。", id="zh-range-two-or-three"),
        pytest.param("一百零五天前立项。", id="zh-count-with-zero"),
        pytest.param("1000天前立项。", id="zh-count-over-three-digits"),
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
            "Last night the replica failed over.",
            "Last night (2026-11-24) the replica failed over.",
            id="en-last-night",
        ),
        pytest.param(
            "A few days ago the tests got flaky.",
            "A few days ago (a few days before 2026-11-25) the tests got flaky.",
            id="en-a-few-days-ago",
        ),
        pytest.param(
            "Earlier this week we pinned Chromium.",
            "Earlier this week (week of 2026-11-23) we pinned Chromium.",
            id="en-earlier-this-week",
        ),
        pytest.param(
            "Last weekend we ran a hackathon.",
            "Last weekend (2026-11-21 to 2026-11-22) we ran a hackathon.",
            id="en-last-weekend",
        ),
        pytest.param("昨晚缓存打满了。", "昨晚（2026年11月24日）缓存打满了。", id="zh-last-night"),
        pytest.param(
            "前几天就有告警。", "前几天（2026年11月25日前几天）就有告警。", id="zh-a-few-days-ago"
        ),
        pytest.param(
            "上周末去爬山了。", "上周末（2026年11月21日至22日）去爬山了。", id="zh-last-weekend"
        ),
        pytest.param(
            "Yesterday Alice shipped the fix.",
            "Yesterday (2026-11-24) Alice shipped the fix.",
            id="en-name-after-date-word",
        ),
        pytest.param(
            "The review is tomorrow (may be late).",
            "The review is tomorrow (2026-11-26) (may be late).",
            id="en-may-is-no-month",
        ),
        pytest.param("明天去看电影。", "明天（2026年11月26日）去看电影。", id="zh-see-a-film"),
        pytest.param(
            "Yesterday I fixed the login bug.",
            "Yesterday (2026-11-24) I fixed the login bug.",
            id="en-i-after-date-word",
        ),
        pytest.param(
            "Outage yesterday; the fix ships tomorrow.",
            "Outage yesterday (2026-11-24); the fix ships tomorrow (2026-11-26).",
            id="en-two-events",
        ),
        pytest.param(
            "The fix should land tomorrow.",
            "The fix should land tomorrow (2026-11-26).",
            id="en-a-plan-with-should",
        ),
        pytest.param(
            "We moved to Go three months ago.",
            "We moved to Go three months ago (around August 2026).",
            id="en-months-ago",
        ),
        pytest.param(
            "三个月前换了供应商。",
            "三个月前（2026年8月前后）换了供应商。",
            id="zh-months-ago",
        ),
        pytest.param(
            "特别是昨天的发布很顺利。",
            "特别是昨天（2026年11月24日）的发布很顺利。",
            id="zh-bie-inside-a-word-is-no-rule",
        ),
        pytest.param(
            "**Why:** the build broke yesterday.",
            "**Why:** the build broke yesterday (2026-11-24).",
            id="en-why-line-is-an-event",
        ),
        pytest.param(
            "I suppose we ship tomorrow.",
            "I suppose we ship tomorrow (2026-11-26).",
            id="en-a-hedge-is-no-condition",
        ),
    ],
)
def test_the_phrases_the_first_version_missed(text: str, expected: str) -> None:
    assert absolutize(text, ANCHOR)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Travel requests are due next Friday.", id="next-friday-on-a-wednesday"),
        pytest.param("It failed last Monday.", id="last-monday-on-a-wednesday"),
    ],
)
def test_a_weekday_that_may_mean_either_week_is_left_and_listed(text: str) -> None:
    unsure: list[str] = []
    assert absolutize(text, ANCHOR, unsure) == (text, [])
    assert unsure


@pytest.mark.parametrize(
    ("text", "expected", "listed"),
    [
        pytest.param(
            "Yesterday he promised the build for tomorrow.",
            "Yesterday (2026-11-24) he promised the build for tomorrow.",
            "tomorrow",
            id="en-promised-yesterday",
        ),
        pytest.param(
            "On Monday she said the fix would land tomorrow.",
            "On Monday she said the fix would land tomorrow.",
            "tomorrow",
            id="en-said-on-monday",
        ),
        pytest.param(
            "昨天他答应明天交付。",
            "昨天（2026年11月24日）他答应明天交付。",
            "明天",
            id="zh-promised",
        ),
    ],
)
def test_words_reported_from_another_day_are_left_and_listed(
    text: str, expected: str, listed: str
) -> None:
    """"tomorrow" in what someone said on another day counts from that day, not the writing."""
    unsure: list[str] = []
    assert absolutize(text, ANCHOR, unsure)[0] == expected
    assert unsure == [listed]


def test_words_reported_with_no_other_day_count_from_the_writing() -> None:
    assert absolutize("She said she would come tomorrow.", ANCHOR)[0] == (
        "She said she would come tomorrow (2026-11-26)."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Write this week's results and next week's plan in the report.",
            "Write this week's results and next week's plan in the report.",
            id="forward-phrases-in-a-rule-stay",
        ),
        pytest.param(
            "周报写本周完成的事和下周计划。", "周报写本周完成的事和下周计划。", id="zh-rule-stays"
        ),
        pytest.param(
            "**Why:** the release due tomorrow was promised to a customer.",
            "**Why:** the release due tomorrow (2026-11-26) was promised to a customer.",
            id="the-why-line-tells-what-happened",
        ),
        pytest.param(
            "Yesterday the user asked for no emoji in commit messages.",
            "Yesterday (2026-11-24) the user asked for no emoji in commit messages.",
            id="a-past-incident-is-dated",
        ),
    ],
)
def test_a_feedback_memory_is_read_as_a_standing_rule(text: str, expected: str) -> None:
    assert absolutize(text, ANCHOR, rules_only=True)[0] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "## 2026-11-18\n\nYesterday we cut the branch.\n\n## 2026-11-24\n\n"
            "Today it shipped; the hotfix is due tomorrow.\n",
            "## 2026-11-18\n\nYesterday (2026-11-17) we cut the branch.\n\n## 2026-11-24\n\n"
            "Today (2026-11-24) it shipped; the hotfix is due tomorrow (2026-11-25).\n",
            id="dated-headings",
        ),
        pytest.param(
            "- 2026年11月20日：昨天定了发版流程。\n- 2026年11月23日：上周五的回归测试通过了。\n",
            "- 2026年11月20日：昨天（2026年11月19日）定了发版流程。\n"
            "- 2026年11月23日：上周五（2026年11月20日）的回归测试通过了。\n",
            id="zh-dated-log-lines",
        ),
        pytest.param(
            "2026-11-10: moved the cron job yesterday.\n\nLast week nothing changed.\n",
            "2026-11-10: moved the cron job yesterday (2026-11-09).\n\n"
            "Last week nothing changed.\n",
            id="an-undated-paragraph-is-left",
        ),
    ],
)
def test_a_dated_heading_or_line_anchors_what_it_heads(text: str, expected: str) -> None:
    unsure: list[str] = []
    assert absolutize(text, None, unsure)[0] == expected
    assert unsure == (["Last week"] if "Last week" in text else [])


def test_a_second_run_adds_nothing() -> None:
    once = absolutize("Shipped yesterday, 上周开会。", ANCHOR)[0]
    assert absolutize(once, date(2026, 11, 30)) == (once, [])


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param(
            {"created": "2026-11-26", "updated": "2026-11-26T01:40:00+08:00"},
            "昨晚（2026年11月25日）切换失败。",
            id="beijing-after-midnight",
        ),
        pytest.param(
            {"created": "2026-11-25", "updated": "2026-11-25T17:40:00Z"},
            "昨晚（2026年11月25日）切换失败。",
            id="utc-time-read-on-a-beijing-clock",
        ),
        pytest.param(
            {"created": "2026-11-26", "updated": "2026-11-25T17:40:00Z"},
            "昨晚（2026年11月25日）切换失败。",
            id="created-on-the-writers-calendar-beside-a-utc-time",
        ),
        pytest.param(
            {"modified": "2026-11-25T17:40:00Z"},
            "昨晚（2026年11月25日）切换失败。",
            id="claude-code-modified-on-a-beijing-clock",
        ),
        pytest.param(
            {"created": "2026-11-24", "updated": "2026-11-24T23:30:00-05:00"},
            "昨晚（2026年11月23日）切换失败。",
            id="new-york-before-midnight",
        ),
    ],
)
def test_the_anchor_is_the_writers_local_day(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch, meta: dict, expected: str
) -> None:
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        add(empty_dir, "project_failover", "切换记录", "昨晚切换失败。", category="project", **meta)
        store = MemoryStore(empty_dir)
        run_dream(store, mode="rewrite")
        assert store.read("project_failover").body.strip() == expected
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Shipped yesterday:\n    and reviewed tomorrow\n",
            "Shipped yesterday (2026-11-24):\n    and reviewed tomorrow (2026-11-26)\n",
            id="indented-line-continuing-a-paragraph",
        ),
        pytest.param(
            "- shipped\n\n    reviewed tomorrow\n",
            "- shipped\n\n    reviewed tomorrow (2026-11-26)\n",
            id="indented-paragraph-in-a-list-item",
        ),
        pytest.param(
            "    ```\nshipped yesterday\n",
            "    ```\nshipped yesterday (2026-11-24)\n",
            id="a-fence-indented-four-spaces-is-indented-code",
        ),
        pytest.param(
            "Escaped \\`backtick, shipped yesterday`",
            "Escaped \\`backtick, shipped yesterday (2026-11-24)`",
            id="escaped-backtick-opens-no-span",
        ),
        pytest.param(
            "`a\n\nshipped yesterday`",
            "`a\n\nshipped yesterday (2026-11-24)`",
            id="a-code-span-ends-with-its-paragraph",
        ),
        pytest.param(
            "```\ncode\n```\nshipped yesterday ```x``` done\n",
            "```\ncode\n```\nshipped yesterday (2026-11-24) ```x``` done\n",
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
            "Moved to 10:00 yesterday (2026-11-24).",
            id="english",
        ),
        pytest.param(
            "站会时间",
            "昨天决定站会改到十点。",
            "昨天（2026年11月24日）决定站会改到十点。",
            id="chinese",
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
    ("text", "listed"),
    [
        pytest.param("We ship this week and next.", "this week and next", id="this-week-and-next"),
        pytest.param("Ship this week or next.", "this week or next", id="this-week-or-next"),
        pytest.param("The review is next week or the week after.", "next week or the week after",
                     id="the-week-after"),
        pytest.param("Tomorrow or the day after we deploy.", "Tomorrow or the day after",
                     id="the-day-after"),
        pytest.param("We meet next Monday or Tuesday.", "next Monday or Tuesday",
                     id="weekday-alone"),
        pytest.param("Sales rose last month and the one before.",
                     "last month and the one before", id="the-one-before"),
        pytest.param("下周一或周二开会。", "下周一或周二", id="zh-weekday-alone"),
        pytest.param("下周一到五在上海出差。", "下周一到五", id="zh-weekday-range"),
        pytest.param("明后天交付。", "明后天", id="zh-two-days-in-one-word"),
        pytest.param("上周到这周都在忙发布。", "上周到这周", id="zh-one-part-not-a-date"),
    ],
)
def test_two_periods_joined_are_left_and_listed_when_one_cannot_be_dated(
    text: str, listed: str
) -> None:
    unsure: list[str] = []
    assert absolutize(text, ANCHOR, unsure) == (text, [])
    assert unsure == [listed]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("The fix lands today or tomorrow.",
                     "The fix lands today (2026-11-25) or tomorrow (2026-11-26).",
                     id="today-or-tomorrow"),
        pytest.param("Busy last week through this week.",
                     "Busy last week (week of 2026-11-16) through this week (week of 2026-11-23).",
                     id="last-week-through-this-week"),
        pytest.param("我们今天或明天发布。",
                     "我们今天（2026年11月25日）或明天（2026年11月26日）发布。",
                     id="zh-today-or-tomorrow"),
        pytest.param("这周和下周在上海出差。",
                     "这周（2026年11月23日那一周）和下周（2026年11月30日那一周）在上海出差。",
                     id="zh-this-week-and-next-week"),
    ],
)
def test_two_periods_joined_are_each_dated_when_both_can_be(text: str, expected: str) -> None:
    unsure: list[str] = []
    assert absolutize(text, ANCHOR, unsure)[0] == expected
    assert unsure == []


@pytest.mark.parametrize(
    ("body", "listed"),
    [pytest.param("We ship this week and next.", "this week and next", id="english"),
     pytest.param("下周一到五在上海出差。", "下周一到五", id="chinese")],
)
def test_a_dream_run_leaves_two_joined_periods_and_lists_them(
    empty_dir: Path, body: str, listed: str
) -> None:
    path = add(empty_dir, "project_trip", "Trip", body, category="project",
               created="2026-11-25", updated="2026-11-25T09:00:00Z")
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    notes = [n["message"] for n in read_manifest(result)["notes"] if n["rule"] == "relative-dates"]
    assert len(notes) == 1 and repr(listed) in notes[0] and "left as written" in notes[0]


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
    assert store.read("user_note").body.strip() == "Met the team last week (week of 2026-11-16)."


def test_the_description_is_dated_too(empty_dir: Path) -> None:
    add(
        empty_dir,
        "project_freeze",
        "Code freeze starts next Monday",
        category="project",
        created="2026-11-25",
    )
    store = MemoryStore(empty_dir)
    run_dream(store, mode="rewrite")
    assert store.read("project_freeze").description == "Code freeze starts next Monday (2026-11-30)"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("See [[today]] for the notes.", id="wiki-link"),
        pytest.param("See [[notes|yesterday's notes]] first.", id="wiki-link-text"),
        pytest.param("See [the notes](today.md) first.", id="markdown-link-target"),
        pytest.param("The log is in tomorrow.md now.", id="file-name"),
        pytest.param("Open https://wiki.example.com/page?day=tomorrow now.", id="url-query"),
        pytest.param("Open https://wiki.example.com/page#today now.", id="url-fragment"),
        pytest.param("Open <https://example.com/?q=next week> now.", id="autolink"),
        pytest.param("Mail tomorrow@example.com about it.", id="email"),
        pytest.param("The shell variable $today holds it.", id="shell-variable"),
        pytest.param("The %today% macro expands.", id="macro"),
        pytest.param("The {{today}} placeholder expands.", id="template"),
        pytest.param("Set DATE=today in the environment.", id="assignment"),
        pytest.param("<!-- tomorrow: check the build -->", id="html-comment"),
        pytest.param("打开 https://example.com/明天/计划 看看。", id="zh-url"),
        pytest.param("笔记在 明天.md 里。", id="zh-file-name"),
        pytest.param("变量 $明天 要改。", id="zh-variable"),
        pytest.param("配置 DAY=明天 即可。", id="zh-assignment"),
    ],
)
def test_a_phrase_in_a_link_a_url_or_an_identifier_is_kept(text: str) -> None:
    assert absolutize(text, ANCHOR) == (text, [])


def test_prose_beside_a_link_is_still_dated() -> None:
    text = "Yesterday we moved [the notes](today.md) to https://example.com/x?d=today."
    assert absolutize(text, ANCHOR)[0] == (
        "Yesterday (2026-11-24) we moved [the notes](today.md) to https://example.com/x?d=today."
    )


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("In case the deploy fails tomorrow, roll back.", id="en-in-case"),
        pytest.param("Should the build fail tomorrow, ping Alice.", id="en-inverted-should"),
        pytest.param("Assuming it ships tomorrow, we demo next.", id="en-assuming"),
        pytest.param("Provided it ships tomorrow, we demo next.", id="en-provided"),
        pytest.param("Sometimes we deploy tomorrow instead.", id="en-sometimes"),
        pytest.param("Normally the job runs tonight.", id="en-normally"),
        pytest.param("By default the cron runs tonight.", id="en-by-default"),
        pytest.param("In general, today is a fine day to ship.", id="en-in-general"),
        pytest.param("Live like there's no tomorrow.", id="en-no-tomorrow"),
        pytest.param("That's tomorrow's problem.", id="en-tomorrows-problem"),
        pytest.param("万一明天下雨就改期。", id="zh-wanyi"),
        pytest.param("若明天下雨就改期。", id="zh-ruo"),
        pytest.param("倘若明天下雨就改期。", id="zh-tangruo"),
        pytest.param("明天下雨的话就改期。", id="zh-dehua"),
        pytest.param("除非明天下雨，否则照常。", id="zh-chufei"),
        pytest.param("只要明天不下雨就去。", id="zh-zhiyao"),
        pytest.param("每当明天有发布，先冻结代码。", id="zh-meidang"),
        pytest.param("用户平时把今天的事拖到明天。", id="zh-pingshi"),
        pytest.param("他有时今晚加班。", id="zh-youshi"),
        pytest.param("默认今晚跑备份。", id="zh-moren"),
        pytest.param("Today, more than ever, tests matter.", id="en-more-than-ever"),
        pytest.param("用户认为能力主要靠后天努力。", id="zh-houtian-acquired"),
        pytest.param("编程习惯是后天养成的。", id="zh-houtian-formed"),
        pytest.param("今天的年轻人都用手机支付。", id="zh-jintian-nowadays"),
        pytest.param("The talk was about the world of tomorrow.", id="en-world-of-tomorrow"),
        pytest.param("He is one of the leaders of tomorrow.", id="en-leaders-of-tomorrow"),
        pytest.param("Tomorrow’s world will be different.", id="en-tomorrows-world"),
        pytest.param("Tomorrow is a new day, the user likes to say.", id="en-a-new-day"),
        pytest.param("用户的口头禅是明天又是新的一天。", id="zh-a-new-day"),
        pytest.param("今天不知明天事，先把备份做好。", id="zh-jintian-buzhi"),
        pytest.param("在今天的社会，远程办公很普遍。", id="zh-jintian-society"),
    ],
)
def test_a_conditional_a_habit_or_an_idiom_dates_nothing(text: str) -> None:
    assert absolutize(text, ANCHOR) == (text, [])


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        # said on Saturday 2026-11-28: the coming Friday, or the one just past?
        pytest.param(
            "The review is this Friday.", date(2026, 11, 28), id="this-friday-on-saturday"
        ),
        pytest.param(
            "Lunch with Sam this Monday.", date(2026, 11, 25), id="this-monday-on-wednesday"
        ),
        # said on Sunday 2026-11-29: tomorrow, or the Monday after?
        pytest.param("Standup moves next Monday.", date(2026, 11, 29), id="next-monday-on-sunday"),
        pytest.param("Demo next Friday.", date(2026, 11, 29), id="next-friday-on-sunday"),
        # a week that starts on Sunday for many English speakers: which week?
        pytest.param("We shipped it last week.", date(2026, 11, 29), id="last-week-on-sunday"),
        pytest.param("Demo next week.", date(2026, 11, 29), id="next-week-on-sunday"),
        pytest.param("Hiring closes this week.", date(2026, 11, 29), id="this-week-on-sunday"),
    ],
)
def test_a_weekday_whose_week_is_unclear_is_left_and_listed(text: str, anchor: date) -> None:
    unsure: list[str] = []
    assert absolutize(text, anchor, unsure) == (text, [])
    assert unsure


@pytest.mark.parametrize(
    ("text", "anchor", "expected"),
    [
        pytest.param(
            "The review is this Friday.",
            date(2026, 11, 25),
            "The review is this Friday (2026-11-27).",
            id="this-friday-on-wednesday",
        ),
        pytest.param(
            "We meet this Sunday.",
            date(2026, 11, 28),
            "We meet this Sunday (2026-11-29).",
            id="this-sunday-on-saturday",
        ),
        pytest.param(
            "这周五开会。",
            date(2026, 11, 28),
            "这周五（2026年11月27日）开会。",
            id="zh-calendar-week",
        ),
    ],
)
def test_a_weekday_of_a_clear_week_is_dated(text: str, anchor: date, expected: str) -> None:
    assert absolutize(text, anchor)[0] == expected


@pytest.mark.parametrize(
    ("stamp", "body"),
    [
        pytest.param("modified", "Yesterday we moved the main database.", id="claude-code"),
        pytest.param("updated", "昨天把主数据库迁到了新集群。", id="updated-only"),
    ],
)
def test_an_edit_by_the_tool_does_not_move_the_day_the_text_was_written(
    empty_dir: Path, stamp: str, body: str
) -> None:
    """A file dated by one stamp alone: an edit of a tag restamps it, the text stays as old."""
    path = add(
        empty_dir,
        "project_db_move",
        "The database move",
        body,
        type="project",
        **{stamp: "2026-11-20T10:00:00Z"},
    )
    store = MemoryStore(empty_dir)
    store.write("project_db_move", tags=["db"])  # an edit by the tool, days later
    edited = path.read_bytes()
    result = run_dream(store, mode="rewrite")
    assert path.read_bytes() == edited  # not dated from the day of the edit
    assert any("edited on" in note["message"] for note in read_manifest(result)["notes"])


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param(
            {"created": "2026-11-25", "updated": "2026-11-25 23:30"},
            "昨晚（2026年11月24日）切换失败。",
            id="a-bare-created-beside-a-time-without-offset",
        ),
        pytest.param(
            {"updated": "2026-11-25 10:00"},
            "昨晚（2026年11月24日）切换失败。",
            id="a-time-without-offset-that-is-one-day-either-way",
        ),
        pytest.param({"updated": "2026-11-25 23:30"}, "昨晚切换失败。", id="unclear-left"),
    ],
)
def test_a_time_without_an_offset_is_the_writers_wall_clock_or_unclear(
    empty_dir: Path, monkeypatch: pytest.MonkeyPatch, meta: dict, expected: str
) -> None:
    """"23:30" with no offset, written by hand: the writer's own clock, or UTC as YAML has
    it? On a Beijing machine the two are different days: left and listed, not guessed."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        add(empty_dir, "project_failover", "切换记录", "昨晚切换失败。", category="project", **meta)
        store = MemoryStore(empty_dir)
        result = run_dream(store, mode="rewrite")
        assert store.read("project_failover").body.strip() == expected
        if expected == "昨晚切换失败。":
            assert any("offset" in n["message"] for n in read_manifest(result)["notes"])
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_memory_stamped_after_today_is_left_and_listed(empty_dir: Path) -> None:
    """A clock set wrong (`created` next March): its "yesterday" has no day to count from."""
    path = add(
        empty_dir,
        "project_outage",
        "Outage",
        "Yesterday the API went down.",
        category="project",
        created="2027-03-10",
        updated="2027-03-10",
    )
    before = path.read_bytes()
    result = run_dream(MemoryStore(empty_dir), mode="rewrite")
    assert path.read_bytes() == before
    notes = [n["message"] for n in read_manifest(result)["notes"] if n["rule"] == "relative-dates"]
    assert notes and "after today" in notes[0]



def test_a_day_counted_off_the_calendar_is_left_and_the_rule_goes_on(empty_dir: Path) -> None:
    """`created: 0001-01-01` (which the audit reports: no zone's clock can show it) and a
    memory of January, year 1, that met someone "300 days ago": counting either fell off the
    calendar (OverflowError), the rule stopped early, and no memory after them was dated."""
    import json
    import os
    import subprocess
    import sys

    from support import ROOT

    edge = add(empty_dir, "project_a", "Plan a", "Decided yesterday.", category="project",
               created="0001-01-01")
    early = add(empty_dir, "project_b", "Plan b", "Met them 300 days ago.",
                category="project", created="0001-01-05")
    before = edge.read_bytes(), early.read_bytes()
    add(empty_dir, "project_z", "Plan z", "Decided yesterday.", category="project",
        created="2026-11-20")
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "dream", "--mode",
         "rewrite", "--json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ),
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    manifest = json.loads(Path(json.loads(done.stdout)["manifest"]).read_text())
    notes = {n.get("id"): n["message"] for n in manifest["notes"]
             if n["rule"] == "relative-dates"}
    assert not [note for note in notes.values() if "stopped early" in note], notes
    assert (empty_dir / "project_z.md").read_text().endswith("Decided yesterday (2026-11-19).\n")
    assert (edge.read_bytes(), early.read_bytes()) == before
    assert "no created or updated date" in notes["project_a"]
    assert "no calendar shows" in notes["project_b"]


# -- a word the memory's code computes; a Chinese possessive without 的 in a habit's memory --


def test_a_date_word_the_memorys_code_computes_is_left_and_listed() -> None:
    """`date -d yesterday` prints any day's yesterday: "for yesterday's date" beside it names
    what the code computes, not a day something happened."""
    from sage_mem.dream.rules.dates import coded_words

    body = ("Use `date -d yesterday +%F` for yesterday's date in GNU date; on macOS, "
            "`date -v-1d +%F`.")
    unsure: list[str] = []
    new, changes = absolutize(body, date(2026, 10, 4), unsure, coded=coded_words(body))
    assert (new, changes) == (body, [])
    assert unsure == ["yesterday"]
    title = "Yesterday's date in a shell"
    assert absolutize(title, date(2026, 10, 4), [], coded=coded_words(body)) == (title, [])
    # code that uses no date word leaves an event's date to be dated
    event = "Yesterday we ran `make report` by hand."
    assert absolutize(event, date(2026, 10, 4), [], coded=coded_words(event))[1] == [
        ("Yesterday", "Yesterday (2026-10-03)")]


def test_a_chinese_possessive_without_its_de_in_a_habits_memory_is_left_and_listed() -> None:
    """下周计划 is 下周的计划 (next week's plan): in a memory of a weekly report, every week's."""
    text = "用团队模板，写本周完成、下周计划和风险。"
    unsure: list[str] = []
    assert absolutize(text, date(2026, 10, 22), unsure, habits=True) == (text, [])
    assert unsure == ["下周"]
    # with no habit named, 下周计划评审 is next week's review: dated
    assert absolutize("下周计划评审新方案。", date(2026, 10, 22), [])[1] == [
        ("下周", "下周（2026年10月26日那一周）")]
