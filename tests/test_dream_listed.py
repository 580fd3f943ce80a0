"""What a dream run leaves, it lists; what it must not touch, it leaves (issue 29).

A relative date the run cannot date for sure (a count from another event, a
rule's sentence naming a day) is left as written and listed in the report; a
stamp from the future is listed; a habitual "yesterday's" is a standing rule; a
link to an archived memory in a sentence about the old thing keeps naming it; a
summary never quotes a proposal the body rejects and keeps code as code; the
writing moment's own offset (or the `timeZone` setting) decides what
"yesterday" was; and every model call that fails is listed, as is a model write
that would hollow a memory out.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from test_dream_support import add, folder_bytes, read_manifest

from sage_mem.dream import DreamConfig, run_dream
from sage_mem.dream.model import DreamTools
from sage_mem.dream.rules.dates import absolutize
from sage_mem.dream.rules.summaries import make_summary
from sage_mem.errors import DreamError, SageMemError
from sage_mem.mcp_server.dream_server import build_dream_server
from sage_mem.memory.file_format import parse_bytes
from sage_mem.store import MemoryStore

WEDNESDAY = date(2026, 11, 25)
RUN = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DAY = {"created": "2026-11-25", "updated": "2026-11-25T09:30:00Z"}


def _dated(text: str, anchor: date = WEDNESDAY) -> tuple[str, list[str]]:
    unsure: list[str] = []
    new, _ = absolutize(text, anchor, unsure)
    return new, unsure


# -- a count from another event is left and listed ----------------------------------------


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        pytest.param("12 月 3 号起暂停对账任务，三天后恢复。", "三天后", id="zh-day-of-month"),
        pytest.param("明天开始封版，一周以后解封。", "一周以后", id="zh-after-a-day-ahead"),
        pytest.param("The vendor trial begins on December 9 and billing starts in ten days.",
                     "in ten days", id="en-month-day"),
        pytest.param("Early access opens on the 12th and closes in three weeks.",
                     "in three weeks", id="en-ordinal"),
        pytest.param("The pilot closes on Friday; the survey goes out two weeks after that.",
                     "two weeks after", id="en-after-that"),
        pytest.param("We cut the branch, and a week later the hotfix landed.", "a week later",
                     id="en-later"),
    ],
)
def test_a_count_from_another_event_is_left_and_listed(text: str, listed: str) -> None:
    new, unsure = _dated(text)
    assert listed in unsure
    assert f"{listed}（" not in new and f"{listed} (" not in new


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("我们两周后发布。", "两周后（2026年12月9日前后）",
                     id="zh-from-the-writing-day"),
        pytest.param("前天谈妥了条款，三天后签字。", "三天后（2026年11月28日）",
                     id="zh-after-news"),
        pytest.param("We ship the fix in two weeks.", "in two weeks (around 2026-12-09)",
                     id="en-from-the-writing-day"),
    ],
)
def test_a_count_from_the_writing_day_is_still_dated(text: str, expected: str) -> None:
    assert expected in _dated(text)[0]


# -- habits, rules and periods --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("The nightly sync job imports yesterday's shipments.", id="en-nightly"),
        pytest.param("A cron job runs at 02:00.\nIt archives yesterday's logs.", id="en-cron"),
        pytest.param("每晚十一点，脚本会备份昨天的数据库快照。", id="zh-every-night"),
        pytest.param("定时任务把昨天的告警汇总成一封邮件。", id="zh-scheduled"),
    ],
)
def test_a_habitual_yesterdays_is_a_standing_rule(text: str) -> None:
    assert _dated(text) == (text, [])


@pytest.mark.parametrize(
    ("description", "body"),
    [
        pytest.param("Nightly order export", "The export collects yesterday's orders.",
                     id="en-habit-in-the-description"),
        pytest.param("Order export", "The export collects yesterday's orders.",
                     id="en-present-tense"),
        pytest.param("每天的订单导出", "导出脚本汇总昨天的订单。",
                     id="zh-habit-in-the-description"),
    ],
)
def test_a_possessive_yesterday_that_may_be_a_habit_is_left_and_listed(
    empty_dir: Path, utc: None, description: str, body: str
) -> None:
    path = add(empty_dir, "reference_export", description, body, category="reference", **DAY)
    result = run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN)
    assert body in path.read_text(encoding="utf-8")
    assert [n["id"] for n in read_manifest(result)["notes"] if n["rule"] == "relative-dates"] == [
        "reference_export"]


def test_a_one_off_event_of_a_nightly_job_is_still_dated() -> None:
    assert "yesterday (2026-11-24)" in _dated("The nightly build broke yesterday.")[0]


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        pytest.param("Since last Friday the login tests usually time out.", "last Friday",
                     id="en-usually"),
        pytest.param("Releases must not ship until the pentest next week is signed off.",
                     "next week", id="en-must-not"),
        pytest.param("上周三起，部署一般要两个人确认。", "上周三", id="zh-generally"),
    ],
)
def test_a_day_named_in_a_rule_sentence_is_left_and_listed(text: str, listed: str) -> None:
    assert _dated(text) == (text, [listed])


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Never promise a customer a fix for tomorrow.", id="en-any-tomorrow"),
        pytest.param("不要答应客户明天修好。", id="zh-any-tomorrow"),
        pytest.param("On the last Friday of each month we rotate keys.", id="en-period"),
    ],
)
def test_a_rule_about_any_day_is_left_and_not_listed(text: str) -> None:
    assert _dated(text) == (text, [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("We open the Lisbon office next quarter.", "next quarter (Q1 2027)",
                     id="en-next"),
        pytest.param("下个季度开始招测试工程师。", "下个季度（2027年第一季度）", id="zh-next"),
        pytest.param("上季度的故障复盘还没写完。", "上季度（2026年第三季度）", id="zh-last"),
    ],
)
def test_a_quarter_is_dated(text: str, expected: str) -> None:
    new, _ = _dated(text)
    assert expected in new
    assert _dated(new) == (new, [])  # a second run adds nothing


def test_every_phrase_left_is_listed_not_only_the_first_four(empty_dir: Path, utc: None) -> None:
    add(empty_dir, "project_many", "Many phrases", "Next Friday the demo; the Friday after "
        "it; next Thursday review; next Saturday party; next Sunday rest; last Monday "
        "party.", category="project", **DAY)
    result = run_dream(MemoryStore(empty_dir, watch=False), mode="report", now=RUN)
    (note,) = [n for n in read_manifest(result)["notes"] if n["rule"] == "relative-dates"]
    for phrase in ("Next Friday", "next Saturday", "next Sunday", "last Monday"):
        assert repr(phrase) in note["message"], note["message"]


def test_a_stamp_after_the_run_is_listed(empty_dir: Path, utc: None) -> None:
    add(empty_dir, "project_resize", "Staging database resized to 64 GB", "Done by ops.",
        category="project", created="2027-03-01", updated="2027-03-01T10:00:00Z")
    add(empty_dir, "project_today", "Written today", category="project",
        created="2026-12-01", updated="2026-12-01T09:00:00Z")
    result = run_dream(MemoryStore(empty_dir, watch=False), mode="report", now=RUN)
    notes = [n for n in read_manifest(result)["notes"] if n["rule"] == "stamps"]
    assert [n["id"] for n in notes] == ["project_resize"]
    assert "2027-03-01" in notes[0]["message"]
    report = Path(result.report or "").read_text(encoding="utf-8")
    assert "`project_resize.md`" in report


# -- the writing moment's own time zone -----------------------------------------------------


def test_the_stamps_own_offset_decides_what_yesterday_was(empty_dir: Path, utc: None) -> None:
    """01:40 in Beijing on 11-26 is 17:40 UTC on 11-25; the tool's `created` is that UTC day."""
    path = add(empty_dir, "project_zh_night_fix", "夜里修好了告警", "昨天晚上修好了告警风暴。",
               category="project", created="2026-11-25", updated="2026-11-26T01:40:00+08:00")
    run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN)
    assert "昨天（2026年11月25日）晚上" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        pytest.param("Asia/Shanghai", "昨天（2026年11月25日）晚上", id="shanghai"),
        pytest.param("America/New_York", "昨天（2026年11月24日）晚上", id="new-york"),
    ],
)
def test_a_utc_stamp_is_read_in_the_configured_zone(
    empty_dir: Path, utc: None, zone: str, expected: str
) -> None:
    path = add(empty_dir, "project_zh_alerts", "告警风暴", "昨天晚上修好了告警风暴。",
               category="project", created="2026-11-25", updated="2026-11-25T17:40:00Z")
    config = DreamConfig().with_overrides(time_zone=zone)
    run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN, config=config)
    assert expected in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", 8])
def test_a_bad_time_zone_setting_is_one_clear_line(zone: Any) -> None:
    with pytest.raises(DreamError, match="timeZone must be a time zone name"):
        DreamConfig().with_overrides(time_zone=zone)


# -- links to archived memories in a sentence about the old thing ---------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        pytest.param("The retired lint setup is [[feedback_old_lint]].", id="en-retired"),
        pytest.param("The archived lint setup is [[feedback_old_lint]].", id="en-archived"),
        pytest.param("Our old lint setup was [[feedback_old_lint]].", id="en-old"),
        pytest.param("已归档的检查规则是 [[feedback_old_lint]]。", id="zh-archived"),
        pytest.param("老的检查规则见 [[feedback_old_lint]]。", id="zh-old"),
    ],
)
def test_a_link_to_an_archived_memory_about_the_old_thing_is_left_and_listed(
    empty_dir: Path, utc: None, sentence: str
) -> None:
    add(empty_dir, "feedback_new_lint", "Lint with ruff", "Lint with ruff only.",
        category="feedback", **DAY)
    add(empty_dir, "archive/feedback_old_lint", "Lint with flake8", "Lint with flake8.",
        category="feedback", archived="2026-11-20T10:00:00Z", archiveReason="moved to ruff",
        supersededBy="feedback_new_lint", **DAY)
    path = add(empty_dir, "project_lint_history", "Lint history",
               "Today we lint with [[feedback_new_lint]].\n\n" + sentence,
               category="project", created="2026-11-21", updated="2026-11-21T09:00:00Z")
    result = run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN)
    assert sentence in path.read_text(encoding="utf-8")
    assert any(n["rule"] == "links" and n["id"] == "project_lint_history"
               for n in read_manifest(result)["notes"])


# -- summaries ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "never"),
    [
        pytest.param(
            '"We should rewrite the billing service in Go," the new lead suggested in the '
            "planning meeting, citing memory use and the long garbage-collection pauses. The "
            "team turned the idea down: billing stays in Java for now, because the payment "
            "provider's SDK only ships for the JVM.", "Go,", id="en-turned-down"),
        pytest.param(
            '"Move the cron jobs to Lambda," the contractor proposed, since the VM is idle most '
            "of the day and costs money every hour it sits there. We rejected that; the jobs "
            "stay on the VM because they need the local disk cache and run for forty minutes.",
            "Lambda", id="en-rejected"),
        pytest.param(
            "“把日志全部迁到 ClickHouse 吧”，架构组在评审会上建议，理由是查询更快、压缩率更高，"
            "也能省下不少存储费用。最后我们没有采纳：日志继续放在 Elasticsearch，因为告警规则和"
            "看板都建在它上面，迁移的工作量太大，今年不会再提。", "ClickHouse",
            id="zh-not-adopted"),
    ],
)
def test_a_summary_never_quotes_a_proposal_the_body_rejects(body: str, never: str) -> None:
    summary = make_summary(body, description="Where it runs")
    assert summary is None or never not in summary


def test_a_summary_keeps_code_spans_so_the_next_run_leaves_them(
    empty_dir: Path, utc: None
) -> None:
    path = add(empty_dir, "reference_clock_tests", "How the clock tests are run",
               "Shift the container clock with `faketime 'tomorrow'` first, then run "
               "`make clock-suite` and compare the `clock_report` files against the golden "
               "copies. The suite needs the tz database of the base image and takes about six "
               "minutes on the shared CI runner.", category="reference", **DAY)
    store = MemoryStore(empty_dir, watch=False)
    run_dream(store, mode="rewrite", now=RUN)
    meta = parse_bytes(path.read_bytes(), path).meta
    assert "`faketime 'tomorrow'`" in str(meta["summary"])
    again = run_dream(store, mode="rewrite", now=RUN)
    assert again.changes == 0 and again.notes == 0, read_manifest(again)


def test_a_body_keeps_its_trailing_blank_line(empty_dir: Path, utc: None) -> None:
    path = add(empty_dir, "project_tilde_fence", "Release notes use tilde fences",
               "Yesterday the notes moved to tilde fences:\n\n~~~\nmake notes\n~~~\n",
               category="project", **DAY)
    assert path.read_bytes().endswith(b"~~~\n\n")
    run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN)
    text = path.read_text(encoding="utf-8")
    assert "Yesterday (2026-11-24)" in text and text.endswith("~~~\n\n")


# -- the model pass -------------------------------------------------------------------------


def _model_folder(folder: Path) -> None:
    add(folder, "project_runbook", "Deploy runbook for the shop",
        "Deploys go out from the release branch after the smoke suite passes. Roll back with "
        "the previous image tag; the on-call engineer owns the decision and writes it up.",
        category="project", **DAY)
    add(folder, "user_editor", "The user edits in Helix", category="user", **DAY)


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        pytest.param({"body": ""}, "empty the body", id="empty-body"),
        pytest.param({"body": "  \n"}, "empty the body", id="blank-body"),
        pytest.param({"body": "Deploys."}, "cut the body", id="body-to-a-scrap"),
        pytest.param({"description": "x"}, "says nothing", id="description-x"),
        pytest.param({"description": "-"}, "says nothing", id="description-dash"),
    ],
)
def test_a_model_write_that_hollows_a_memory_out_is_refused_and_listed(
    empty_dir: Path, utc: None, fields: dict[str, str], why: str
) -> None:
    _model_folder(empty_dir)
    before = folder_bytes(empty_dir)
    seen: list[str] = []

    def model(tools: DreamTools) -> None:
        try:
            tools.write("project_runbook", reason="tidier", **fields)
        except SageMemError as exc:
            seen.append(str(exc))

    result = run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN,
                       model_pass=model)
    assert seen and why in seen[0]
    refused = [r for r in read_manifest(result)["refused"] if r["source"] == "model"]
    assert [(r["id"], why in r["refusedBecause"]) for r in refused] == [("project_runbook", True)]
    assert folder_bytes(empty_dir)["project_runbook.md"] == before["project_runbook.md"]


def test_a_short_chinese_description_is_no_hollow_write(empty_dir: Path, utc: None) -> None:
    add(empty_dir, "feedback_zh_report", "周报要写风险", "周报里写清楚风险。", category="feedback",
        **DAY)
    result = run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN,
                       model_pass=lambda tools: tools.write("feedback_zh_report",
                                                            description="周报", reason="短"))
    assert [c["id"] for c in read_manifest(result)["changes"] if c["source"] == "model"] == [
        "feedback_zh_report"]


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_read", {"id": "../../etc/passwd"}),
    ("memory_write", {"id": "../outside", "description": "Escaped", "reason": "r"}),
    ("memory_write", {"id": "/tmp/abs", "description": "Absolute", "reason": "r"}),
    ("memory_write", {"id": "user_editor", "colour": "red", "reason": "r"}),
    ("memory_write", {"id": "user_editor", "category": "secrets", "reason": "r"}),
    ("memory_archive", {"id": "MEMORY", "reason": "the index is noise"}),
    ("memory_archive", {"id": "no_such_memory", "reason": "gone"}),
    ("memory_write", {"id": "project_runbook", "body": "", "reason": "tidy"}),
    ("memory_write", {"id": "project_runbook", "description": "x", "reason": "tidy"}),
    ("memory_delete", {"id": "user_editor"}),
    ("memory_write", {"id": "user_editor", "description": "The user edits in Helix daily",
                      "reason": "more precise"}),
]


def test_every_failed_model_call_is_listed_in_the_report(empty_dir: Path, utc: None) -> None:
    """Escapes, an unknown argument, a category the schema does not offer, MEMORY.md, a
    missing memory, a hollow write, a tool not offered: each is listed, once."""
    _model_folder(empty_dir)

    async def calls(server: Any) -> list[bool]:
        async with Client(server) as client:
            return [(await client.call_tool(name, args)).is_error for name, args in CALLS]

    kept: dict[str, Any] = {}

    def model(tools: DreamTools) -> None:
        server = build_dream_server(tools.store, tools.applier.manifest.run_id)
        kept["errors"] = anyio.run(calls, server)

    result = run_dream(MemoryStore(empty_dir, watch=False), mode="rewrite", now=RUN,
                       model_pass=model)
    assert kept["errors"] == [True] * (len(CALLS) - 1) + [False]
    manifest = read_manifest(result)
    refused = [r for r in manifest["refused"] if r["source"] == "model"]
    assert len(refused) == len(CALLS) - 1, [r["refusedBecause"] for r in refused]
    assert all(not (r.get("file") or "").startswith(("..", "/")) for r in refused)
    report = Path(result.report or "").read_text(encoding="utf-8")
    for needle in ("../../etc/passwd", "../outside", "colour", "invalid category", "MEMORY",
                   "empty the body", "says nothing", "memory_delete"):
        assert needle in report, needle


# -- the report says why each date was left ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "why"),
    [
        pytest.param("We travel next Friday to meet the vendor.",
                     "this week's day or the other week's", id="a-week"),
        pytest.param("12 月 3 号起暂停对账任务，三天后恢复。",
                     "a count that may run from another event", id="a-count"),
        pytest.param("Since last Friday the suite usually fails on the first run.",
                     "reads as a rule, a habit or a general statement", id="a-rule"),
        pytest.param("Yesterday he promised it for tomorrow.",
                     "words reported from another day", id="reported"),
        pytest.param("Run `date -d yesterday +%F` to print yesterday's date.",
                     "a word the memory's code computes", id="code"),
    ],
)
def test_the_report_says_why_a_date_was_left(tmp_path: Path, body: str, why: str) -> None:
    """One reason, the one that holds, not every reason there may be: a person reads which."""
    folder = tmp_path / "memory"
    folder.mkdir()
    add(folder, "project_note", "A note", body, category="project", **DAY)
    notes = [n["message"] for n in read_manifest(
        run_dream(MemoryStore(folder, watch=False), mode="report", now=RUN))["notes"]
        if n["rule"] == "relative-dates"]
    assert len(notes) == 1 and why in notes[0], notes
    assert [r for r in _REASONS if r in notes[0]] == [r for r in _REASONS if r in why]


_REASONS = ("this week's day", "a count that may run", "reads as a rule", "reported from",
            "code computes")
