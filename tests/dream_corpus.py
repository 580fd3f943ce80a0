"""An annotated memory folder for autodream, and the score a careful reader gives a run over it.

    truth = build(folder)                  # writes ~170 memories, returns the ground truth
    result = run_dream(MemoryStore(folder), mode="rewrite", now=NOW)
    scores = score(folder, result, truth)  # harmful, duplicates, dates, contradictions, summaries

    python tests/dream_corpus.py           # the scores of a rewrite run over a fresh copy

Every memory says what a careful person would accept (`Entry`):

- `events`: each relative date that dates a specific past or planned event, with the
  absolute date a run must add (as it must read: "2026-11-24", "2026年11月24日",
  "October 2026"); any other date a run adds to the memory is a harmful change;
- `unsure`: its relative dates cannot be anchored (no date, edited on a later day): the
  run leaves them and lists the memory;
- `keep`: text that must stay exactly as written (standing rules, quotes, idioms, proper
  nouns, code, links in historical context);
- `misfiled`: the category its content belongs to, when its own is wrong.

And the folder (`Truth`): groups of true duplicates (any one may stay, the others are
archived with `supersededBy` inside the group), pairs that must never merge,
contradictions of four kinds (old, new, kind, whether the evidence is clear).

Deterministic: no randomness, no clock. Dates as the corpus has them: the notes were
written between 2026-11-16 and 2026-11-30; 2026-11-25 is a Wednesday; the run is on
2026-12-01.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_dream_support import memory_text  # noqa: E402

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


@dataclass
class Entry:
    """One memory and what a careful person would accept a run doing to it."""

    id: str
    description: str
    body: str
    meta: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)
    unsure: bool = False
    keep: list[str] = field(default_factory=list)
    misfiled: str | None = None
    raw: str | None = None  # the file as written, for Claude Code's own format


@dataclass
class Truth:
    entries: dict[str, Entry]
    duplicates: list[set[str]]
    distinct: list[tuple[str, str]]
    contradictions: list[tuple[str, str, str, bool]]  # (old, new, kind, clear evidence)
    retrievals: dict[str, int] = field(default_factory=dict)


def _day(day: str, time: str = "09:30:00Z") -> dict[str, str]:
    return {"created": day, "updated": f"{day}T{time}"}


def entries() -> list[Entry]:
    out: list[Entry] = []

    def add(
        memory_id: str,
        description: str,
        body: str,
        day: str | None = "2026-11-25",
        category: str | None = None,
        **extra: Any,
    ) -> Entry:
        truth = {k: extra.pop(k) for k in ("events", "unsure", "keep", "misfiled") if k in extra}
        meta: dict[str, Any] = {"category": category or memory_id.split("_", 1)[0]}
        meta.update(extra)
        if day:
            meta.update(_day(day))
        entry = Entry(memory_id, description, body, meta, **truth)
        out.append(entry)
        return entry

    # -- relative dates that date an event ---------------------------------------------
    add(
        "project_payments_outage",
        "Payments API outage and its fix",
        "Yesterday the payments API returned 502s for forty minutes. We rolled back "
        "release 4.2 and the errors stopped.",
        events=[("Yesterday", "2026-11-24")],
    )
    add(
        "project_search_rewrite",
        "Search service rewrite status",
        "The rewrite of the search service was merged two days ago. The old indexer is "
        "switched off next Monday.",
        events=[("two days ago", "2026-11-23"), ("next Monday", "2026-11-30")],
    )
    add(
        "project_offsite",
        "Team offsite planning",
        "The offsite was booked last week. Travel requests are due next Tuesday.",
        events=[("last week", "2026-11-16"), ("next Tuesday", "2026-12-01")],
    )
    add(
        "project_budget",
        "Infrastructure budget decision",
        "Finance approved the infrastructure budget last month, after the review in September.",
        events=[("last month", "October 2026")],
    )
    add(
        "project_cert_expiry",
        "TLS certificate renewal",
        "The wildcard certificate was renewed this morning; the old one expires tomorrow.",
        events=[("this morning", "2026-11-25"), ("tomorrow", "2026-11-26")],
    )
    add(
        "project_db_failover",
        "Database failover incident",
        "Last night the primary database failed over to the replica. Nobody was paged "
        "because the alert was muted.",
        events=[("Last night", "2026-11-24")],
    )
    add(
        "project_flaky_tests",
        "Flaky browser tests investigation",
        "A few days ago the browser tests started failing one run in ten. Earlier this week "
        "we pinned Chromium and the failures stopped.",
        events=[("A few days ago", "2026-11-25"), ("Earlier this week", "2026-11-23")],
    )
    add(
        "project_hackathon",
        "Hackathon results",
        "Last weekend the team ran a hackathon; the winning idea was a CLI for releases.",
        events=[("Last weekend", "2026-11-21 to 2026-11-22")],
    )
    add(
        "project_zh_release",
        "移动端 3.1 版本发布记录",
        "昨天下午发布了移动端 3.1 版本，崩溃率下降了一半。下周一开始灰度到全部用户。",
        events=[("昨天", "2026年11月24日"), ("下周一", "2026年11月30日")],
    )
    add(
        "project_zh_incident",
        "缓存集群故障复盘",
        "昨晚缓存集群内存打满，导致首页超时。前几天就有告警，但没人处理。",
        events=[("昨晚", "2026年11月24日"), ("前几天", "2026年11月25日")],
    )
    add(
        "project_zh_teambuilding",
        "团建安排",
        "上周末组织了团建，去了郊外爬山。下个月再安排一次聚餐。",
        events=[("上周末", "2026年11月21日"), ("下个月", "2026年12月")],
    )
    add(
        "project_zh_contract",
        "合同续签进展",
        "前天和供应商谈妥了续签条款，三天后签字。",
        events=[("前天", "2026年11月23日"), ("三天后", "2026年11月28日")],
    )
    add(
        "project_zh_review",
        "架构评审会议",
        "上周五的架构评审通过了新的消息队列方案，本周三开始实施。",
        events=[("上周五", "2026年11月20日"), ("本周三", "2026年11月25日")],
    )
    add(
        "project_zh_lastyear",
        "数据平台迁移背景",
        "去年把数据平台从自建机房迁到了云上，今年开始按量计费。",
        events=[("去年", "2025年"), ("今年", "2026年")],
    )
    add(
        "user_zh_trip",
        "用户出差安排",
        "用户下周三去上海出差，周五回来。",
        events=[("下周三", "2026年12月2日")],
        category="user",
    )
    add(
        "project_possessive",
        "Retro after the billing incident",
        "Yesterday's retro agreed to add a canary stage to the billing deploys.",
        events=[("Yesterday", "2026-11-24")],
    )
    # Written at 01:40 in Beijing: its day is 2026-11-26 there, 2026-11-25 in UTC.
    add(
        "project_zh_midnight",
        "主从切换失败处理记录",
        "昨晚数据库主从切换失败，今天凌晨已经恢复。",
        day=None,
        created="2026-11-26",
        updated="2026-11-26T01:40:00+08:00",
        events=[("昨晚", "2026年11月25日"), ("今天", "2026年11月26日")],
    )
    # Written at 23:30 in New York: its day is 2026-11-24 there, 2026-11-25 in UTC.
    add(
        "project_late_pairing",
        "Pairing session on the importer",
        "Paired with Dana today on the CSV importer; we found the encoding bug.",
        day=None,
        created="2026-11-24",
        updated="2026-11-24T23:30:00-05:00",
        events=[("today", "2026-11-24")],
    )

    # Claude Code's own format: name/description/type and an ISO `modified`, nothing else.
    def claude(
        memory_id: str, description: str, body: str, kind: str, modified: str, **truth: Any
    ) -> None:
        raw = (
            f"---\nname: {memory_id}\ndescription: {description}\ntype: {kind}\n"
            f"modified: {modified}\n---\n\n{body}\n"
        )
        out.append(Entry(memory_id, description, body, {}, raw=raw, **truth))

    claude(
        "project_cc_migration",
        "Schema migration for the orders table",
        "The orders table migration ran yesterday and took 12 minutes.",
        "project",
        "2026-11-23T16:20:11.532Z",
        events=[("yesterday", "2026-11-22")],
    )
    claude(
        "project_cc_demo",
        "Customer demo preparation",
        "The customer demo is next Thursday; the slides are in the shared drive.",
        "project",
        "2026-11-27T08:05:00Z",
        events=[("next Thursday", "2026-12-03")],
    )
    claude(
        "project_cc_zh",
        "客服系统切换",
        "客服系统上周完成了切换，旧系统明天下线。",
        "project",
        "2026-11-18T03:00:00Z",
        events=[("上周", "2026年11月9日"), ("明天", "2026年11月19日")],
    )

    # -- relative dates a run must leave alone -----------------------------------------
    add(
        "feedback_no_promises",
        "Never promise a fix date to a customer",
        "Do not promise a fix for tomorrow; say when it is merged instead.\n\n"
        "**Why:** a promised date slipped twice and the customer escalated.\n\n"
        "**How to apply:** when a customer asks, give the status, not a day.",
        keep=["Do not promise a fix for tomorrow"],
    )
    add(
        "project_release_cadence",
        "Monthly release cadence",
        "Releases go out on the last Friday of each month, after the freeze.",
        keep=["on the last Friday of each month"],
    )
    add(
        "user_background",
        "User's programming background",
        "Over the last year the user moved from Java to Go; they still read Kotlin.",
        category="user",
        keep=["Over the last year"],
    )
    add(
        "feedback_ask_exact_day",
        "Ask for the exact day when the user is vague about dates",
        "When the user says next week, ask for the exact day before writing it down.\n\n"
        "**Why:** vague dates in notes went stale.\n\n"
        "**How to apply:** any time a plan is mentioned without a date.",
        keep=["When the user says next week, ask"],
    )
    add(
        "project_estimate",
        "Migration effort estimate",
        "The migration should take the next week or two, depending on review speed.",
        keep=["the next week or two"],
    )
    add(
        "user_manager_quote",
        "What the user's manager said about the launch",
        'In the planning meeting the manager said: "we ship tomorrow or never". '
        "The user took it as a joke.",
        category="user",
        keep=['"we ship tomorrow or never"'],
    )
    add(
        "user_zh_games",
        "用户喜欢的游戏",
        "用户喜欢玩明日方舟，每天晚上做日常任务。也玩过今日头条上推荐的小游戏。",
        category="user",
        keep=["明日方舟", "今日头条"],
    )
    add(
        "user_zh_quote",
        "老板说过的话",
        "老板在周会上说“明天一定上线”，结果推迟了。",
        category="user",
        day=None,
        keep=["“明天一定上线”"],
    )
    add(
        "feedback_zh_no_promise",
        "不要答应客户具体的修复日期",
        "不要答应客户明天修好，先确认合并时间。\n\n**Why:** 之前答应过的日期两次没做到。\n\n"
        "**How to apply:** 客户催进度时，只说当前状态。",
        keep=["不要答应客户明天修好"],
    )
    add(
        "feedback_zh_ask_day",
        "用户说下周时要问清楚哪一天",
        "如果用户说下周，要问清楚具体是哪一天。\n\n**Why:** 模糊的日期记下来很快就过时。\n\n"
        "**How to apply:** 记录计划时总是写具体日期。",
        keep=["如果用户说下周"],
    )
    add(
        "reference_deploy_script",
        "How to stage a deploy with the script",
        "Stage it with the script:\n\n    ./deploy.sh --stage --when tomorrow\n\n"
        "Then check the dashboard.",
        category="reference",
        keep=["    ./deploy.sh --stage --when tomorrow"],
    )
    add(
        "reference_backup_cmd",
        "Backup command before a migration",
        "Run <code>backup --since yesterday</code> before any migration, and "
        "`restore --from yesterday` if it fails.",
        category="reference",
        keep=["<code>backup --since yesterday</code>", "`restore --from yesterday`"],
    )
    add(
        "reference_cron_zh",
        "定时任务配置",
        "定时任务的配置：\n\n```yaml\nschedule: 明天 03:00\nrun: cleanup\n```\n",
        category="reference",
        keep=["schedule: 明天 03:00"],
    )
    add(
        "user_idioms",
        "User's favourite sayings",
        "When a release goes badly the user likes to say tomorrow is another day.",
        category="user",
        keep=["tomorrow is another day"],
    )
    add(
        "user_zh_idiom",
        "用户的口头禅",
        "用户常说：今日事今日毕。",
        category="user",
        keep=["今日事今日毕"],
    )
    add(
        "user_movie",
        "User's favourite film",
        "The user's favourite film is The Day After Tomorrow; they rewatch it every winter.",
        category="user",
        keep=["The Day After Tomorrow"],
    )
    add(
        "reference_generic_today",
        "Trunk-based development note",
        "Most teams today use trunk-based development with short-lived branches.",
        category="reference",
        keep=["Most teams today use"],
    )
    # Edited on a later day: which day "yesterday" counts from is not known.
    add(
        "project_edited_later",
        "Vendor evaluation notes",
        "Yesterday we compared three vendors; the cheapest lacked SSO.",
        day=None,
        created="2026-11-10",
        updated="2026-11-20T10:00:00Z",
        unsure=True,
    )
    add(
        "project_undated",
        "Office move notes",
        "We moved to the new office last month. The old keys go back next week.",
        day=None,
        unsure=True,
    )

    # -- near-duplicates: true twins ---------------------------------------------------
    add(
        "feedback_ruff_first",
        "Always run ruff before committing Python code",
        "Run ruff check on the changed files before every commit.",
        trust=0.7,
    )
    add(
        "feedback_ruff_before_commit",
        "always run Ruff before committing python code!",
        "Run ruff check on the changed files before every commit.",
    )
    add(
        "user_cat_sesame",
        "The user's cat is named Sesame and likes sunbathing",
        "Sesame is a grey cat who sleeps on the windowsill in the afternoon.",
        category="user",
    )
    add(
        "user_cat_name",
        "User's cat is named Sesame; it likes sunbathing",
        "Sesame is a grey cat who sleeps on the windowsill in the afternoon.",
        category="user",
    )
    add(
        "reference_ci_workflow",
        "CI runs on GitHub Actions; the workflow file is .github/workflows/ci.yml",
        "Jobs: lint, test, build. Secrets are set in the repository settings.",
        category="reference",
    )
    add(
        "reference_ci_actions",
        "CI runs on GitHub Actions, workflow file .github/workflows/ci.yml",
        "Jobs: lint, test, build. Secrets are set in the repository settings.",
        category="reference",
    )
    add(
        "user_zh_coffee",
        "用户每天早上喝一杯不加糖的黑咖啡",
        "不加奶也不加糖，早上九点前喝。",
        category="user",
    )
    add(
        "user_zh_coffee_morning",
        "用户每天早上都喝一杯不加糖的黑咖啡",
        "不加奶也不加糖，早上九点前喝。",
        category="user",
    )
    add(
        "feedback_zh_tests_first",
        "发布前必须运行全部测试并更新说明文档",
        "每次发布前都要跑完整的测试套件，并更新变更说明。",
    )
    add(
        "feedback_zh_release_tests",
        "发布之前必须运行全部测试，并更新说明文档",
        "每次发布前都要跑完整的测试套件，并更新变更说明。",
    )
    # reworded twins (English, Chinese) whose bodies say the same
    add(
        "feedback_short_answers",
        "Keep answers short and lead with the conclusion",
        "The user wants the answer first, then at most a few lines of reasoning. Long "
        "preambles annoy them.",
    )
    add(
        "feedback_conclusion_first",
        "Lead with the conclusion and keep answers short",
        "The user wants the answer first, then at most a few lines of reasoning; long "
        "preambles annoy them.",
    )
    add(
        "user_zh_office",
        "用户在北京办公室工作，时区是东八区",
        "用户在北京的办公室上班，时区是 Asia/Shanghai，开会要按北京时间约。",
        category="user",
    )
    add(
        "user_zh_beijing",
        "用户在北京工作，时区为东八区",
        "用户在北京的办公室上班，时区是 Asia/Shanghai，开会要按北京时间约。",
        category="user",
    )
    # twins whose bodies differ: the one kept must end up with the other's text too
    add(
        "reference_grafana",
        "Grafana dashboards for the API live on grafana.internal",
        "The API dashboard is grafana.internal/d/api. Latency panels are on the second row.",
        category="reference",
        trust=0.7,
    )
    add(
        "reference_grafana_api",
        "Grafana dashboards for the API live on grafana.internal",
        "The API dashboard is grafana.internal/d/api. The on-call rota is linked in the "
        "dashboard's header, and alerts go to the #api-oncall channel.",
        category="reference",
    )

    # -- look alike but are different facts (must never merge) -------------------------
    add(
        "project_deploy_window_tue",
        "Deploy window is Tuesday 10:00-12:00",
        "Deploys to production happen only in this window, with two reviewers online.",
    )
    add(
        "project_deploy_window_thu",
        "Deploy window is Thursday 10:00-12:00",
        "Deploys to production happen only in this window, with two reviewers online.",
    )
    add(
        "feedback_unit_tests",
        "Unit tests run with pytest -x on every push",
        "They must pass before a review is requested.",
    )
    add(
        "feedback_integration_tests",
        "Integration tests run with pytest -x on every push",
        "They must pass before a review is requested.",
    )
    add(
        "project_node_18",
        "The legacy admin app runs on Node 18",
        "It cannot move until the PDF library is replaced.",
    )
    add(
        "project_node_20",
        "The storefront app runs on Node 20",
        "It moved in the summer; the build uses the same Docker base image.",
    )
    add(
        "user_zh_cat",
        "用户的猫叫芝麻",
        "芝麻是一只灰色的猫。",
        category="user",
    )
    add(
        "user_zh_dog",
        "用户的狗叫芝麻",
        "芝麻是一只黄色的狗。",
        category="user",
    )
    add(
        "project_zh_staging_db",
        "测试环境数据库是 Postgres 15",
        "地址是 db-staging.internal，每天凌晨重置。",
    )
    add(
        "project_zh_prod_db",
        "生产环境数据库是 Postgres 15",
        "地址是 db-prod.internal，只读副本两台。",
    )
    add(
        "project_zh_release_tue",
        "移动端每周二发布",
        "发布前一天冻结代码。",
    )
    add(
        "project_zh_release_thu",
        "网页端每周四发布",
        "发布前一天冻结代码。",
    )

    # -- contradictions: same subject, a newer value -----------------------------------
    add(
        "project_main_database",
        "The main database is PostgreSQL 14",
        "All services write to the PostgreSQL cluster on db-main.internal.",
        day="2026-11-02",
    )
    add(
        "project_database_switch",
        "The main database is now MySQL 8",
        "We switched the main database from PostgreSQL to MySQL 8 after the licence review; "
        "db-main.internal now points at MySQL.",
        day="2026-11-20",
    )
    add(
        "project_deploy_target",
        "Deploy target is AWS ECS",
        "Production containers run on the ECS cluster in eu-west-1.",
        day="2026-11-03",
    )
    add(
        "project_deploy_flyio",
        "Deploy target is Fly.io",
        "Production moved from AWS ECS to Fly.io; the ECS cluster is being drained.",
        day="2026-11-21",
    )
    add(
        "project_sync_meeting",
        "Weekly sync meeting is on Tuesday at 10:00",
        "Everyone joins from the team room.",
        day="2026-11-04",
    )
    add(
        "project_sync_moved",
        "Weekly sync meeting is on Thursday at 10:00",
        "The weekly sync moved from Tuesday to Thursday because of the release train.",
        day="2026-11-22",
    )
    add(
        "feedback_indent_tabs",
        "Indent Python code with 4 spaces",
        "Follow PEP 8 indentation in every repository.",
        day="2026-11-05",
    )
    add(
        "feedback_indent_two",
        "Indent Python code with 2 spaces",
        "The team changed the indentation rule from 4 spaces to 2 spaces in the style guide.",
        day="2026-11-23",
        supersedes=["feedback_indent_tabs"],
    )
    add(
        "project_zh_queue_old",
        "消息队列用的是 RabbitMQ",
        "所有异步任务都走 RabbitMQ。",
        day="2026-11-06",
    )
    add(
        "project_zh_queue_new",
        "消息队列用的是 Kafka",
        "消息队列从 RabbitMQ 换成了 Kafka，旧的集群下个季度下线。",
        day="2026-11-24",
    )

    # -- links -------------------------------------------------------------------------
    add(
        "project_api_v2",
        "API v2 design",
        "Version 2 of the API used REST with cursor pagination.",
        day="2026-10-01",
    )
    add(
        "project_api_v3",
        "API v3 design",
        "Version 3 moves to GraphQL.\n\nHistory: [[project_api_v1]] and "
        "[v2](project_api_v2.md) came before it.",
        day="2026-11-19",
        supersedes=["project_api_v2"],
        keep=["History: [[project_api_v1]] and [v2](", "project_api_v2.md)"],
    )
    add(
        "project_api_v1",
        "API v1 design",
        "Version 1 of the API was XML over HTTP.",
        day="2026-06-01",
    )
    add(
        "project_api_clients",
        "Which API version the clients use",
        "The mobile client is built against the current API, see [[project_api_v2]].",
        day="2026-10-02",
    )

    # -- summaries ---------------------------------------------------------------------
    add(
        "reference_release_checklist",
        "Release checklist for the mobile app",
        "# Release checklist for the mobile app\n\n"
        "| step | owner |\n| --- | --- |\n| freeze | lead |\n| notes | writer |\n\n"
        "The checklist lives in the release_tools repository and is linked from "
        "[[project_api_v3]]. Every step needs a named owner before the freeze starts, "
        "and the store listing is updated last.",
        category="reference",
    )
    add(
        "reference_oncall_runbook",
        "On-call runbook for the payments service",
        "On-call runbook for the payments service. Page the secondary after 15 minutes "
        "without an acknowledgement. Use the payments_oncall channel for updates and keep "
        "the incident doc open while you work. Escalate to the database team only with a "
        "query plan in hand.",
        category="reference",
    )
    add(
        "reference_zh_handbook",
        "新人入职手册的位置",
        "新人入职手册放在内部维基的工程空间里，第一周要完成账号申请、开发环境搭建和安全培训。"
        "手册里还有各个服务负责人的联系方式，以及常见问题的解答，遇到权限问题先找 IT 值班。",
        category="reference",
    )

    # -- misfiled ----------------------------------------------------------------------
    add(
        "user_commit_rule",
        "Write commit messages in the imperative",
        "Write commit subjects in the imperative mood, at most 72 characters.\n\n"
        "**Why:** the changelog is generated from them.\n\n"
        "**How to apply:** every commit, in every repository.",
        category="user",
        misfiled="feedback",
    )

    out.extend(_variants())
    out.extend(_fillers())
    return out


def _variants() -> list[Entry]:
    """The same traps worded another way: the rules must hold for the principle, not the text."""
    out: list[Entry] = []

    def add(
        memory_id: str, description: str, body: str, day: str | None = "2026-11-25", **extra: Any
    ) -> None:
        truth = {k: extra.pop(k) for k in ("events", "unsure", "keep", "misfiled") if k in extra}
        meta: dict[str, Any] = {"category": extra.pop("category", memory_id.split("_", 1)[0])}
        meta.update(extra)
        if day:
            meta.update(_day(day))
        out.append(Entry(memory_id, description, body, meta, **truth))

    # events
    add(
        "project_api_freeze",
        "API freeze timing",
        "The API freeze starts in 3 days.",
        events=[("in 3 days", "2026-11-28")],
    )
    add(
        "project_client_demo",
        "Client demo held",
        "We demoed the importer to the client this afternoon; they asked for CSV exports.",
        events=[("this afternoon", "2026-11-25")],
    )
    add(
        "project_zh_design",
        "设计稿交付时间",
        "下周二之前要交付设计稿，评审在周四。",
        events=[("下周二", "2026年12月1日")],
    )
    add(
        "project_new_hire",
        "New backend hire",
        "The new backend engineer starts next month.",
        events=[("next month", "December 2026")],
    )
    add(
        "project_vendor_prices",
        "CDN price increase",
        "Two weeks ago the CDN vendor raised prices by 12 percent.",
        events=[("Two weeks ago", "2026-11-11")],
    )
    add(
        "project_fix_eta",
        "ETA of the login fix",
        "The login fix should land tomorrow after review.",
        events=[("tomorrow", "2026-11-26")],
    )
    add(
        "project_zh_migration_done",
        "数据迁移完成",
        "上个月底完成了数据迁移，没有丢数据。",
        events=[("上个月底", "2026年10月底")],
    )
    add(
        "project_zh_minutes",
        "会议纪要",
        "大前天的会议纪要还没发出去。",
        events=[("大前天", "2026年11月22日")],
    )
    out.append(
        Entry(
            "project_cc_logs",
            "日志系统下线",
            "昨天把旧的日志系统下线了。",
            {},
            raw="---\nname: logs\ndescription: 日志系统下线\nmetadata:\n  type: project\n"
            "modified: 2026-11-21T02:00:00Z\n---\n\n昨天把旧的日志系统下线了。\n",
            events=[("昨天", "2026年11月20日")],
        )
    )
    # dated notes: a dated heading or log line anchors what it heads
    add(
        "project_release_log",
        "Release 5.0 log",
        "## 2026-11-18\n\nYesterday we cut the release branch.\n\n## 2026-11-24\n\n"
        "Today the release went out; the hotfix ships tomorrow.\n",
        day=None,
        created="2026-11-18",
        updated="2026-11-24T18:00:00Z",
        events=[("Yesterday", "2026-11-17"), ("Today", "2026-11-24"), ("tomorrow", "2026-11-25")],
    )
    add(
        "project_zh_release_log",
        "发版流程调整记录",
        "- 2026年11月20日：昨天定了新的发版流程。\n- 2026年11月23日：上周五的回归测试全部通过。\n",
        day=None,
        created="2026-11-20",
        updated="2026-11-23T10:00:00Z",
        events=[("昨天", "2026年11月19日"), ("上周五", "2026年11月20日")],
    )
    # traps
    add(
        "feedback_friday_releases",
        "Avoid Friday releases",
        "Avoid scheduling a release for tomorrow when today is Thursday.",
        keep=["for tomorrow when today is Thursday"],
    )
    add(
        "feedback_fix_today",
        "Fix failing tests the same day",
        "If a test fails today, fix it today.",
        keep=["If a test fails today, fix it today."],
    )
    add(
        "user_signoff",
        "The user's email sign-off",
        'The user signs emails with "Talk tomorrow" and no name.',
        category="user",
        keep=['"Talk tomorrow"'],
    )
    add(
        "user_zh_film",
        "用户最喜欢的电影",
        "用户最喜欢的电影是《后天》，每年冬天都要重看。",
        category="user",
        keep=["《后天》"],
    )
    add(
        "feedback_zh_meeting_rule",
        "例会时间不要随便改",
        "每周一上午开例会，不要把会议改到明天。",
        keep=["不要把会议改到明天"],
    )
    add(
        "reference_cron_en",
        "How the nightly job is scheduled",
        "See `deploy --at tomorrow` and the crontab:\n\n    0 3 * * * run --since yesterday\n",
        category="reference",
        keep=["`deploy --at tomorrow`", "    0 3 * * * run --since yesterday"],
    )
    add(
        "reference_til_channel",
        "Where TILs are shared",
        "Short lessons go to the The Today I Learned channel, #til.",
        category="reference",
        keep=["The Today I Learned channel"],
    )
    add(
        "reference_newsletter",
        "Internal newsletter name",
        "The internal newsletter is called Yesterday's News and goes out monthly.",
        category="reference",
        keep=["Yesterday's News"],
    )
    add(
        "project_travel",
        "Travel requests deadline",
        "Travel requests for the offsite are due next Friday.",
        unsure=True,
    )
    # look-alikes that must stay apart
    add(
        "project_release_23",
        "Release 2.3 ships the new search page",
        "The search page uses the new ranking and the filters from the design review.",
    )
    add(
        "project_release_24",
        "Release 2.4 ships the new search page",
        "The search page uses the new ranking and the filters from the design review.",
    )
    add(
        "user_son",
        "The user's son is called Leo",
        "He is seven and likes football.",
        category="user",
    )
    add(
        "user_daughter",
        "The user's daughter is called Leo",
        "She is seven and likes football.",
        category="user",
    )
    add("user_zh_spicy", "用户喜欢吃辣", "点外卖时可以选川菜。", category="user")
    add("user_zh_not_spicy", "用户不喜欢吃辣", "点外卖时可以选川菜。", category="user")
    # true duplicates
    add(
        "feedback_conventional",
        "Use conventional commit prefixes (feat:, fix:) in commits",
        "Every commit subject starts with a type such as feat, fix, docs or chore.",
    )
    add(
        "feedback_commit_prefixes",
        "Use conventional commit prefixes like feat: and fix: in commits",
        "Every commit subject starts with a type such as feat, fix, docs or chore.",
    )
    add(
        "feedback_zh_weekly_report",
        "周报每周五下午发给经理",
        "周报用团队模板，写本周完成的事、下周计划和风险，发邮件给经理并抄送团队。",
    )
    add(
        "feedback_zh_report_friday",
        "每周五下午把周报发给经理",
        "周报用团队模板，写本周完成的事、下周计划和风险，发邮件给经理并抄送团队。",
    )
    add(
        "user_pets_en",
        "The user has a parrot named Kiwi",
        "Kiwi is green and says hello.",
        category="user",
    )
    add(
        "user_pets_zh", "用户养了一只叫 Kiwi 的鹦鹉", "Kiwi 是绿色的，会说 hello。", category="user"
    )
    # a contradiction worded differently
    add(
        "project_ci_old",
        "We run CI on Jenkins",
        "The Jenkins server is ci.internal.",
        day="2026-11-03",
    )
    add(
        "project_ci_new",
        "CI migration finished",
        "We migrated CI from Jenkins to GitHub Actions; ci.internal is read-only now.",
        day="2026-11-24",
    )
    return out


def _plain(
    rows: list[tuple[str, str, str]], prefix: str, category: str, day: str
) -> list[Entry]:
    """Memories with no trap of their own: (slug, description, body), all of one day."""
    return [
        Entry(f"{prefix}{slug}", description, body, {"category": category, **_day(day)})
        for slug, description, body in rows
    ]


def _fillers() -> list[Entry]:
    """The bulk of a real folder: varied memories, some with dated events, none alike."""
    out: list[Entry] = []
    services = [
        ("billing", "Stripe webhooks", "2026-11-17"),
        ("search", "the OpenSearch cluster", "2026-11-18"),
        ("auth", "the OAuth2 provider", "2026-11-19"),
        ("notifications", "the push gateway", "2026-11-20"),
        ("reports", "the nightly exports", "2026-11-23"),
        ("inventory", "the warehouse sync", "2026-11-24"),
        ("checkout", "the payment form", "2026-11-26"),
        ("profile", "the avatar uploads", "2026-11-27"),
        ("catalog", "the product feed", "2026-11-30"),
        ("shipping", "the carrier rates API", "2026-11-16"),
    ]
    previous = {
        "2026-11-17": "2026-11-16",
        "2026-11-18": "2026-11-17",
        "2026-11-19": "2026-11-18",
        "2026-11-20": "2026-11-19",
        "2026-11-23": "2026-11-22",
        "2026-11-24": "2026-11-23",
        "2026-11-26": "2026-11-25",
        "2026-11-27": "2026-11-26",
        "2026-11-30": "2026-11-29",
        "2026-11-16": "2026-11-15",
    }
    owners = ["Alice", "Bilal", "Chen", "Dana", "Emeka", "Fatima", "Goran", "Hana", "Ivan", "Jia"]
    for (name, part, day), owner in zip(services, owners, strict=True):
        out.append(
            Entry(
                f"project/{name}/status",
                f"State of the {name} service work",
                f"{owner} finished the work on {part} yesterday. The next step is load testing, "
                f"owned by {owner}.",
                {"category": "project", **_day(day)},
                events=[("yesterday", previous[day])],
            )
        )
        out.append(
            Entry(
                f"reference/{name}/runbook",
                f"Where the {name} runbook and dashboards are",
                f"Runbook: https://wiki.internal/runbooks/{name}. Dashboard: "
                f"https://grafana.internal/d/{name}-overview. Owner: {owner}.",
                {"category": "reference", **_day(day)},
            )
        )
    zh_services = [
        ("订单", "orders", "2026-11-17"),
        ("库存", "stock", "2026-11-18"),
        ("会员", "members", "2026-11-19"),
        ("优惠券", "coupons", "2026-11-20"),
        ("物流", "logistics", "2026-11-23"),
        ("客服", "support", "2026-11-24"),
        ("风控", "risk", "2026-11-26"),
        ("推荐", "recommend", "2026-11-27"),
    ]
    for zh, slug, day in zh_services:
        prev = previous[day]
        y, m, d = (int(x) for x in prev.split("-"))
        out.append(
            Entry(
                f"project/zh/{slug}_progress",
                f"{zh}系统的开发进度",
                f"{zh}系统的接口昨天联调通过了，接下来做压测和监控。",
                {"category": "project", **_day(day)},
                events=[("昨天", f"{y}年{m}月{d}日")],
            )
        )
        out.append(
            Entry(
                f"reference/zh/{slug}_docs",
                f"{zh}系统的文档位置",
                f"{zh}系统的设计文档在 https://wiki.internal/{slug}，接口说明在仓库的 docs 目录。",
                {"category": "reference", **_day(day)},
            )
        )
    prefs = [
        (
            "editor",
            "The user edits in Neovim with LazyVim",
            "Plugins are managed by lazy.nvim; the config is in a dotfiles repository.",
        ),
        ("shell", "The user's shell is fish", "Aliases live in config.fish; scripts are bash."),
        ("terminal", "The user works in WezTerm", "Font JetBrains Mono at 13 points."),
        ("os", "The user's laptop runs Fedora 41", "Wayland session, GNOME."),
        (
            "keyboard",
            "The user types on a split keyboard",
            "Colemak layout; shortcuts are remapped accordingly.",
        ),
        ("music", "The user listens to lo-fi while coding", "Do not suggest podcasts."),
        (
            "languages",
            "The user speaks English and Mandarin",
            "Replies in the language of the question.",
        ),
        ("timezone", "The user lives in Lisbon", "Working hours 09:00-17:00 local time."),
        (
            "browser",
            "The user's browser is Firefox",
            "With uBlock Origin and a container per client.",
        ),
        ("pets_fish", "The user keeps tropical fish", "Two neon tetras and a shrimp colony."),
    ]
    out += _plain(prefs, "user_", "user", "2026-11-18")
    zh_prefs = [
        ("tea", "用户喜欢喝乌龙茶", "下午三点左右泡一壶。"),
        ("run", "用户每周跑步三次", "一般在晚上，五公里左右。"),
        ("reading", "用户在读《三体》", "读到第二部了。"),
        ("food", "用户不吃香菜", "点外卖时要备注。"),
        ("commute", "用户骑自行车上班", "下雨天改坐地铁。"),
        ("phone", "用户用的是安卓手机", "测试移动端时优先用安卓。"),
        ("notes", "用户用 Obsidian 记笔记", "笔记库同步在坚果云。"),
        ("kids", "用户有两个孩子", "周末一般不安排工作。"),
    ]
    out += _plain(zh_prefs, "user_zh_", "user", "2026-11-19")
    rules = [
        (
            "types",
            "Add type hints to every new Python function",
            "**Why:** mypy runs in CI in strict mode.\n\n**How to apply:** public and private "
            "functions alike.",
        ),
        (
            "small_prs",
            "Keep pull requests under 400 lines",
            "**Why:** reviews of larger ones took days.\n\n**How to apply:** split by layer.",
        ),
        (
            "no_force_push",
            "Never force-push to shared branches",
            "**Why:** it rewrote a colleague's commits once.\n\n**How to apply:** use "
            "--force-with-lease only on your own branches.",
        ),
        (
            "changelog",
            "Update CHANGELOG.md in the same pull request",
            "**Why:** release notes are built from it.\n\n**How to apply:** one bullet per "
            "user-visible change.",
        ),
        (
            "sql_migrations",
            "Every schema change ships with a reversible migration",
            "**Why:** a rollback failed without a down migration.\n\n**How to apply:** test the "
            "down step locally.",
        ),
        (
            "logging",
            "Log with structured fields, not string formatting",
            '**Why:** the log search indexes fields.\n\n**How to apply:** logger.info("msg", '
            "extra={...}).",
        ),
        (
            "secrets",
            "Never paste secrets into chat or memories",
            "**Why:** transcripts are kept.\n\n**How to apply:** refer to the vault path.",
        ),
        (
            "screenshots",
            "Attach a screenshot to every UI change",
            "**Why:** reviewers cannot run every branch.\n\n**How to apply:** before and after.",
        ),
    ]
    out += _plain(rules, "feedback_", "feedback", "2026-11-17")
    zh_rules = [
        (
            "comments",
            "代码注释用中文写",
            "**Why:** 团队成员都是中文母语。\n\n**How to apply:** 公共接口的文档字符串用英文。",
        ),
        (
            "review",
            "合并前至少要一个人批准",
            "**Why:** 之前有未评审的代码引发了故障。\n\n**How to apply:** 紧急修复也要事后补评审。",
        ),
        (
            "naming",
            "变量名用英文全称，不用拼音",
            "**Why:** 拼音缩写没人看得懂。\n\n**How to apply:** 新代码和重构时都遵守。",
        ),
        (
            "meetings",
            "会议纪要当天发出",
            "**Why:** 隔天就记不清了。\n\n**How to apply:** 发到团队群并存档。",
        ),
        (
            "errors",
            "报错信息要说清楚怎么修",
            "**Why:** 用户看不懂堆栈。\n\n**How to apply:** 一行说明原因和解决办法。",
        ),
        (
            "deps",
            "新增依赖要说明理由",
            "**Why:** 依赖太多升级困难。\n\n**How to apply:** 在合并请求里写一句为什么。",
        ),
    ]
    out += _plain(zh_rules, "feedback_zh_", "feedback", "2026-11-18")
    events = [
        (
            "interview",
            "Interview loop for the backend role",
            "Yesterday we interviewed two candidates for the backend role; the debrief is "
            "tomorrow.",
            "2026-11-26",
            [("Yesterday", "2026-11-25"), ("tomorrow", "2026-11-27")],
        ),
        (
            "vendor_call",
            "Call with the CDN vendor",
            "Had a call with the CDN vendor today about the price increase.",
            "2026-11-23",
            [("today", "2026-11-23")],
        ),
        (
            "security_audit",
            "External security audit",
            "The external audit starts next week and runs for five days.",
            "2026-11-19",
            [("next week", "2026-11-23")],
        ),
        (
            "laptop",
            "New laptops for the team",
            "The new laptops arrived this week; setup is on Friday.",
            "2026-11-24",
            [("this week", "2026-11-23")],
        ),
        (
            "conference",
            "Conference talk accepted",
            "The talk on incremental indexing was accepted last Tuesday.",
            "2026-11-23",
            [("last Tuesday", "2026-11-17")],
        ),
    ]
    zh_events = [
        (
            "zh_hiring",
            "后端招聘进展",
            "今天面试了两位候选人，明天出结果。",
            "2026-11-20",
            [("今天", "2026年11月20日"), ("明天", "2026年11月21日")],
        ),
        (
            "zh_audit",
            "安全审计安排",
            "安全审计下周开始，为期五天。",
            "2026-11-19",
            [("下周", "2026年11月23日")],
        ),
        (
            "zh_vendor",
            "和云厂商的会议",
            "上周三和云厂商开会谈了折扣。",
            "2026-11-26",
            [("上周三", "2026年11月18日")],
        ),
        (
            "zh_training",
            "新人培训",
            "两天前完成了新人培训的第一期。",
            "2026-11-27",
            [("两天前", "2026年11月25日")],
        ),
    ]
    for slug, description, body, day, found in events + zh_events:
        out.append(
            Entry(
                f"project_{slug}",
                description,
                body,
                {"category": "project", **_day(day)},
                events=found,
            )
        )
    longs = [
        (
            "architecture",
            "Overview of the service architecture",
            "There are nine services behind one gateway. The gateway terminates TLS and routes by "
            "path prefix. Services talk over gRPC internally and publish events to Kafka; the "
            "read models are rebuilt from those events, which is why a replay takes an hour.",
        ),
        (
            "zh_data_pipeline",
            "数据管道的整体结构",
            "数据从业务库通过 CDC 同步到消息队列，再由流处理任务写入数仓。"
            "每天凌晨两点跑一次全量校验，"
            "发现不一致时会自动补数并在群里通知负责人。报表服务只读数仓，不直连业务库。",
        ),
    ]
    for slug, description, body in longs:
        out.append(
            Entry(
                f"reference_{slug}",
                description,
                body,
                {"category": "reference", **_day("2026-11-20")},
            )
        )
    return out


def truth_of(all_entries: Iterable[Entry]) -> Truth:
    by_id = {e.id: e for e in all_entries}
    return Truth(
        entries=by_id,
        duplicates=[
            {"feedback_ruff_first", "feedback_ruff_before_commit"},
            {"user_cat_sesame", "user_cat_name"},
            {"reference_ci_workflow", "reference_ci_actions"},
            {"user_zh_coffee", "user_zh_coffee_morning"},
            {"feedback_zh_tests_first", "feedback_zh_release_tests"},
            {"feedback_short_answers", "feedback_conclusion_first"},
            {"user_zh_office", "user_zh_beijing"},
            {"reference_grafana", "reference_grafana_api"},
            {"feedback_conventional", "feedback_commit_prefixes"},
            {"feedback_zh_weekly_report", "feedback_zh_report_friday"},
            {"user_pets_en", "user_pets_zh"},  # across languages: rules rarely see it
        ],
        distinct=[
            ("project_release_23", "project_release_24"),
            ("user_son", "user_daughter"),
            ("user_zh_spicy", "user_zh_not_spicy"),
            ("project_deploy_window_tue", "project_deploy_window_thu"),
            ("feedback_unit_tests", "feedback_integration_tests"),
            ("project_node_18", "project_node_20"),
            ("user_zh_cat", "user_zh_dog"),
            ("project_zh_staging_db", "project_zh_prod_db"),
            ("project_zh_release_tue", "project_zh_release_thu"),
            ("project_main_database", "project_database_switch"),
            ("project_deploy_target", "project_deploy_flyio"),
            ("project_sync_meeting", "project_sync_moved"),
            ("project_zh_queue_old", "project_zh_queue_new"),
        ],
        contradictions=[
            ("project_main_database", "project_database_switch", "database", False),
            ("project_deploy_target", "project_deploy_flyio", "deploy target", False),
            ("project_sync_meeting", "project_sync_moved", "meeting day", False),
            ("feedback_indent_tabs", "feedback_indent_two", "indentation rule", True),
            ("project_zh_queue_old", "project_zh_queue_new", "message queue", False),
            ("project_ci_old", "project_ci_new", "ci system", False),
        ],
        # the reworded twin that is kept is the one retrieved more often
        retrievals={"feedback_conclusion_first": 140, "feedback_short_answers": 3},
    )


def build(folder: Path) -> Truth:
    """Write the corpus into `folder` (created if missing) and return its ground truth."""
    folder.mkdir(parents=True, exist_ok=True)
    all_entries = entries()
    for entry in all_entries:
        path = folder / (entry.id + ".md")
        path.parent.mkdir(parents=True, exist_ok=True)
        text = entry.raw or memory_text(entry.description, entry.body, **entry.meta)
        path.write_bytes(text.encode("utf-8"))
    truth = truth_of(all_entries)
    return truth


# -- scoring -----------------------------------------------------------------------------

DATE_TEXT = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{4}年\d{1,2}月(?:\d{1,2}日)?|\d{4}年"
    r"|(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December) \d{4}|\b20\d\d\b"
)


@dataclass
class Scores:
    harmful: list[str]
    duplicates: tuple[int, int]
    dates: tuple[int, int]
    contradiction_kinds: tuple[int, int]
    summaries: tuple[int, int]
    unsure_listed: tuple[int, int]
    problems: list[str] = field(default_factory=list)  # what a careful person would not accept
    duplicates_listed: int = 0  # groups not merged but listed for a person to look at

    def line(self) -> str:
        def share(pair: tuple[int, int]) -> str:
            return f"{pair[0]}/{pair[1]}"

        return (
            f"harmful {len(self.harmful)}, duplicates merged {share(self.duplicates)} "
            f"({self.duplicates_listed} more listed), "
            f"event dates absolute {share(self.dates)}, contradiction kinds surfaced "
            f"{share(self.contradiction_kinds)}, good summaries {share(self.summaries)}, "
            f"unsure dates listed {share(self.unsure_listed)}"
        )


def _read(path: Path) -> tuple[dict[str, Any], str]:
    from sage_mem.memory.file_format import parse_bytes

    parsed = parse_bytes(path.read_bytes(), path)
    return dict(parsed.meta), parsed.body


def _where_now(folder: Path, memory_id: str) -> tuple[Path | None, bool]:
    live = folder / (memory_id + ".md")
    if live.exists():
        return live, False
    archived = folder / "archive" / (memory_id + ".md")
    return (archived if archived.exists() else None), True


def _dates(text: str) -> list[str]:
    return DATE_TEXT.findall(text)


def _terms(text: str) -> set[str]:
    from sage_mem.dream.similarity import terms

    return set(terms(text))


def score(folder: Path, manifest: dict[str, Any], truth: Truth) -> Scores:
    harmful: list[str] = []
    problems: list[str] = []
    changes = [c for c in manifest.get("changes", []) if c.get("state") in ("applied", "proposed")]
    said = " ".join(
        json.dumps(item, ensure_ascii=False)
        for item in [*manifest.get("notes", []), *changes, *manifest.get("refused", [])]
    )
    dup_of = {memory_id: group for group in truth.duplicates for memory_id in group}
    clear = {(old, new) for old, new, _, sure in truth.contradictions if sure}

    # archives: only a true duplicate into its group, a clearly superseded memory, a move
    for change in changes:
        if change.get("operation") != "archive":
            continue
        memory_id, successor = change["id"], change.get("supersededBy")
        ok = (
            (memory_id in dup_of and successor in dup_of[memory_id])
            or (memory_id, successor) in clear
            or any(e.supersedes_ok(memory_id, successor) for e in [_Supersedes(truth)])
            or (
                truth.entries.get(memory_id)
                and truth.entries[memory_id].misfiled
                and successor
                and successor.split("_", 1)[0] == truth.entries[memory_id].misfiled
            )
        )
        if not ok:
            harmful.append(f"archived {memory_id} (into {successor}): not a duplicate of it")
    for first, second in truth.distinct:
        for a, b in ((first, second), (second, first)):
            if any(
                c.get("operation") == "archive" and c["id"] == a and c.get("supersededBy") == b
                for c in changes
            ):
                harmful.append(f"merged {a} into {b}: different facts")

    # texts: kept phrases, dates added, self-links
    dates_done = dates_total = 0
    for entry in truth.entries.values():
        path, archived = _where_now(folder, entry.id)
        if path is None:
            moved = [
                c for c in changes if c.get("id") == entry.id and c.get("operation") == "archive"
            ]
            harmful.append(f"{entry.id}: file gone" + ("" if moved else " without a record"))
            continue
        meta, body = _read(path)
        before_text = "\n".join([entry.description, entry.body])
        after_text = "\n".join([str(meta.get("description", "")), body])
        for snippet in entry.keep:
            if snippet not in after_text:
                harmful.append(f"{entry.id}: {snippet!r} was changed")
        allowed = {text for _, text in entry.events}
        added = list(_dates(after_text))
        for found in _dates(before_text):
            if found in added:
                added.remove(found)
        for found in added:
            if not any(found in text or text in found for text in allowed):
                # a date that comes from a merged twin's text is that twin's, not new
                harmful.append(f"{entry.id}: a date was added that the text does not mean: {found}")
        for phrase, expected in entry.events:
            dates_total += 1
            if after_text.count(expected) > before_text.count(expected):
                dates_done += 1
            elif not archived:
                problems.append(f"{entry.id}: {phrase!r} not made absolute ({expected})")
        for link in (f"[[{entry.id}]]", f"({entry.id}.md)"):
            if link in body and link not in entry.body:
                harmful.append(f"{entry.id}: a link to itself was made")

    # unsure dates: left and listed
    unsure = [e for e in truth.entries.values() if e.unsure]
    listed = sum(1 for e in unsure if e.id in {n.get("id") for n in manifest.get("notes", [])})

    # duplicates: all but one of the group archived into the group
    merged = listed_groups = 0
    for group in truth.duplicates:
        gone = {
            c["id"]
            for c in changes
            if c.get("operation") == "archive"
            and c["id"] in group
            and c.get("supersededBy") in group
        }
        if len(gone) == len(group) - 1:
            merged += 1
            keeper = next(iter(group - gone))
            keeper_path, _ = _where_now(folder, keeper)
            kept_text = keeper_path.read_text(encoding="utf-8") if keeper_path else ""
            for other in gone:
                lost = _terms(truth.entries[other].body) - _terms(kept_text)
                if len(lost) > 2:
                    harmful.append(
                        f"merged {other} into {keeper}: its text left service "
                        f"({', '.join(sorted(lost)[:5])})"
                    )
            for memory_id, uses in truth.retrievals.items():
                if memory_id in group and uses > 100 and memory_id != keeper:
                    harmful.append(f"{memory_id} is retrieved {uses} times but was archived")
        elif any(
            n.get("rule") == "near-duplicates"
            and n.get("id") in group
            and any(other in n.get("message", "") for other in group - {n.get("id")})
            for n in manifest.get("notes", [])
        ):
            listed_groups += 1
            problems.append(f"duplicates listed, not merged: {sorted(group)}")
        else:
            problems.append(f"duplicates not merged: {sorted(group)}")

    # contradictions: each kind named with both memories; a clear one resolved
    kinds: dict[str, bool] = {}
    for old, new, kind, sure in truth.contradictions:
        surfaced = old in said and new in said
        if sure:
            surfaced = surfaced and any(
                c.get("operation") == "archive" and c["id"] == old for c in changes
            )
        kinds[kind] = kinds.get(kind, False) or surfaced
        if not surfaced:
            problems.append(f"contradiction not surfaced: {old} vs {new} ({kind})")
    core = ["database", "deploy target", "meeting day", "indentation rule"]
    kinds_found = sum(1 for kind in core if kinds.get(kind))

    # summaries: each adds something its description lacks, and reads cleanly
    good = total = 0
    for change in changes:
        if change.get("rule") != "summaries":
            continue
        total += 1
        entry = truth.entries.get(change["id"])
        path, _ = _where_now(folder, change["id"])
        if entry is None or path is None:
            continue
        meta, _ = _read(path)
        summary = str(meta.get("summary") or "")
        bad = _bad_summary(summary, entry)
        if bad:
            harmful.append(f"{entry.id}: summary {summary!r}: {bad}")
        else:
            good += 1
    return Scores(
        harmful,
        (merged, len(truth.duplicates)),
        (dates_done, dates_total),
        (kinds_found, len(core)),
        (good, total),
        (listed, len(unsure)),
        problems,
        listed_groups,
    )


class _Supersedes:
    """`supersedes:` in the corpus: archiving what a memory says it replaces is right."""

    def __init__(self, truth: Truth) -> None:
        self.pairs = {
            (old, e.id) for e in truth.entries.values() for old in e.meta.get("supersedes", [])
        }

    def supersedes_ok(self, memory_id: str, successor: str | None) -> bool:
        return (memory_id, successor) in self.pairs


def _bad_summary(summary: str, entry: Entry) -> str:
    if not summary.strip():
        return "empty"
    new_terms = _terms(summary) - _terms(entry.description)
    if len(new_terms) < 2:
        return "says nothing the description does not"
    if "|" in summary or re.search(r"(^|\s)#{1,6}\s", summary):
        return "holds table or heading syntax"
    for word in re.findall(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", entry.body):
        if word.replace("_", "") in summary and word not in summary:
            return f"mangled {word}"
    for target in re.findall(r"\[\[([^\]|#]+)", entry.body):
        if target.replace("_", "") in summary and target not in summary:
            return f"mangled [[{target}]]"
    return ""


def main() -> int:
    import tempfile

    from sage_mem.dream import run_dream
    from sage_mem.store import MemoryStore

    mode = "report" if "report" in sys.argv[1:] else "rewrite"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "memory"
        truth = build(folder)
        store = MemoryStore(folder, watch=False)
        seed_retrievals(store, truth)
        result = run_dream(store, mode=mode, now=NOW)
        manifest = json.loads(Path(result.manifest or "").read_text(encoding="utf-8"))
        scores = score(folder, manifest, truth)
        print(f"{len(truth.entries)} memories; {result.format_text().strip()}")
        print(scores.line())
        for item in scores.harmful:
            print("  HARMFUL", item)
        for item in scores.problems:
            print("  missed ", item)
        if "--report" in sys.argv:
            print(Path(result.report or "").read_text(encoding="utf-8"))
    return 0


def seed_retrievals(store: Any, truth: Truth) -> None:
    """Give the corpus its retrieval counts, as searches would have left them."""
    for memory_id, uses in truth.retrievals.items():
        for _ in range(uses):
            store.stats.record([memory_id])




# -- issue 29: a dream's edit keeps the memory's age; what it leaves, it lists -------------
# Appended (the module is shared): new memories of each kind, in new wordings, and the score's
# extra checks. `entries` and `score` are rebound below to take them in.

NEVER_IN_SUMMARY: dict[str, list[str]] = {
    # a proposal the body rejects: the summary never quotes it
    "project_search_engine": ["Elasticsearch"],
    "project_zh_cache_choice": ["Memcached"],
}
SAME_END: dict[str, str] = {
    # the body's own end (a blank line after a code block) stays as written
    "project_tilde_notes": "~~~\n\n",
}


def _issue_29_entries() -> list[Entry]:
    out: list[Entry] = []

    def add(memory_id: str, description: str, body: str, day: str | None = "2026-11-25",
            category: str | None = None, **extra: Any) -> None:
        truth = {k: extra.pop(k) for k in ("events", "unsure", "keep", "misfiled") if k in extra}
        meta: dict[str, Any] = {"category": category or memory_id.split("_", 1)[0]}
        if day:
            meta.update(_day(day))
        meta.update(extra)
        out.append(Entry(memory_id, description, body, meta, **truth))

    # a count from another event: left and listed, never dated from the writing day
    add("project_zh_reconcile_pause", "对账任务暂停",
        "12 月 3 号起暂停对账任务，三天后恢复。", unsure=True, keep=["三天后恢复"])
    add("project_vendor_trial", "Vendor trial and billing",
        "The vendor trial begins on December 9 and the first invoice is due in ten days.",
        unsure=True, keep=["due in ten days."])
    add("project_pilot_wrapup", "Pilot wrap-up",
        "The pilot closes on the 12th; the survey goes out two weeks after that.",
        unsure=True, keep=["two weeks after that"])
    # the writing moment's own offset decides what "yesterday" was (the bare `created` is
    # the tool's UTC day of the same moment)
    add("project_zh_login_fix", "登录超时修复", "昨天晚上值班时修好了登录超时的问题。", day=None,
        created="2026-11-19", updated="2026-11-20T00:50:00+08:00",
        events=[("昨天", "2026年11月19日")])
    add("project_cache_warmer", "Cache warmer switched off",
        "Last night the cache warmer was switched off after it doubled the database load.",
        day=None, created="2026-11-22", updated="2026-11-23T07:15:00+09:00",
        events=[("Last night", "2026-11-22")])
    # a link to an archived memory in a sentence about the old thing: left and listed
    add("feedback_fixture_factories", "Build test data with factory functions",
        "Build test data with factory functions, not shared fixtures files.\n\n"
        "**Why:** shared fixtures drifted from the schema.", day="2026-11-10")
    add("archive/feedback_old_fixtures", "Keep test data in shared fixtures files",
        "Keep test data in the shared fixtures/ folder.", day="2026-08-02",
        category="feedback", archived="2026-11-10T10:00:00Z",
        archiveReason="replaced by factory functions",
        supersededBy="feedback_fixture_factories")
    add("project_test_data_history", "How test data was built over time",
        "New tests use [[feedback_fixture_factories]].\n\n"
        "The retired convention was [[feedback_old_fixtures]].", day="2026-11-12",
        keep=["The retired convention was [[feedback_old_fixtures]]."])
    add("feedback_zh_new_naming", "分支命名用 feat/ 和 fix/ 前缀",
        "分支命名用 feat/ 和 fix/ 前缀。\n\n**原因：** 发布脚本按前缀生成变更记录。",
        day="2026-11-08")
    add("archive/feedback_zh_old_naming", "分支命名用姓名缩写开头",
        "分支命名用姓名缩写开头，例如 zw-login。", day="2026-07-01", category="feedback",
        archived="2026-11-08T10:00:00Z", archiveReason="改用前缀",
        supersededBy="feedback_zh_new_naming")
    add("project_zh_branch_history", "分支命名规范的变化",
        "现在的规范见 [[feedback_zh_new_naming]]。\n\n"
        "已归档的旧规范是 [[feedback_zh_old_naming]]。",
        day="2026-11-09", keep=["已归档的旧规范是 [[feedback_zh_old_naming]]。"])
    # a summary never quotes a proposal the body rejects
    add("project_search_engine", "Which engine serves catalogue search",
        '"Let\'s move search to Elasticsearch," the consultant proposed at the architecture '
        "review, pointing at faceted filters and typo tolerance for the catalogue. The team "
        "turned that down: search stays on Postgres full-text with trigram indexes, since the "
        "catalogue is small and one database is easier to run.")
    add("project_zh_cache_choice", "缓存用什么",
        "“缓存全部换成 Memcached 吧”，一位同事在周会上提议，理由是它更轻量、运维更简单，也更适合"
        "我们的纯键值场景。团队最后没有采纳这个提议：缓存继续使用 Redis，因为我们依赖它的有序集合"
        "和发布订阅功能，迁移成本也太高，短期内不会再讨论。")
    # a habitual "yesterday's": a standing rule, not one day
    add("reference_invoice_export", "Where the invoice export lands",
        "A nightly export job copies yesterday's invoices to the finance bucket.",
        category="reference", keep=["yesterday's invoices"])
    add("reference_zh_ticket_digest", "工单日报怎么发",
        "每天早上八点，脚本会把昨天的工单汇总发到运维群里。", category="reference",
        keep=["昨天的工单"])
    # relative dates in a sentence that reads as a rule: left, and listed when they name a day
    add("project_flaky_payments", "Flaky payments suite",
        "Since last Friday the payments suite usually fails on its first run.",
        unsure=True, keep=["Since last Friday the payments suite"])
    add("project_zh_review_rule", "合并请求的审核人数",
        "上周三起，合并请求一般要两个人审核。", unsure=True, keep=["上周三起"])
    add("project_merge_hold", "Merges held for the audit",
        "Merges to main must not land until the audit next week is done; the auditors "
        "review the tree as it stands.", unsure=True, keep=["the audit next week is done"])
    # quarters
    add("project_zh_hiring_plan", "测试工程师招聘", "下个季度开始招两名测试工程师。",
        events=[("下个季度", "2027年第一季度")])
    add("project_office_floor", "Office move", "The team moves to the fifth floor next quarter.",
        events=[("next quarter", "Q1 2027")])
    # a stamp after the run: listed
    add("project_staging_resize", "Staging database size",
        "The staging database was resized to 64 GB of memory.", day=None,
        created="2027-03-01", updated="2027-03-01T10:00:00Z", unsure=True)
    # a summary keeps code spans: `date -d tomorrow` stays code, and the next run leaves it
    add("reference_cert_renewal", "How the certificate renewal is tested",
        "Set the clock forward with `date -d tomorrow` in the renewal container, then run "
        "`make renew-check` and read the `renew_report` output for expired chains. The check "
        "needs the staging CA bundle and takes about four minutes on the shared runner.",
        category="reference", keep=["`date -d tomorrow`"])
    # the body's own end stays: a blank line after a tilde fence
    add("project_tilde_notes", "Release script uses tilde fences",
        "Yesterday the release script notes moved to tilde fences:\n\n~~~sh\n"
        "./release --date tomorrow\n~~~\n", events=[("Yesterday", "2026-11-24")])
    return out


_entries_before_29 = entries
_score_before_29 = score


def _entries_29() -> list[Entry]:
    out = _entries_before_29()
    for entry in out:
        if entry.id == "project_zh_queue_new":  # 下个季度 has been dated since issue 29
            entry.events.append(("下个季度", "2027年第一季度"))
    return out + _issue_29_entries()


def _stamps_of(path: Path) -> dict[str, str]:
    meta, _ = _read(path)
    return {key: str(meta[key]) for key in ("created", "updated", "modified") if key in meta}


def _entry_stamps(entry: Entry) -> dict[str, str]:
    if entry.raw is not None:
        from sage_mem.memory.file_format import parse_bytes

        meta = parse_bytes(entry.raw.encode("utf-8"), Path("x.md")).meta
        return {k: str(meta[k]) for k in ("created", "updated", "modified") if k in meta}
    return {k: str(entry.meta[k]) for k in ("created", "updated", "modified") if k in entry.meta}


def _score_29(folder: Path, manifest: dict[str, Any], truth: Truth) -> Scores:
    scores = _score_before_29(folder, manifest, truth)
    changes = [c for c in manifest.get("changes", []) if c.get("state") in ("applied", "proposed")]
    moved_to = {c.get("supersededBy"): c["id"] for c in changes
                if c.get("operation") == "archive" and c.get("rule") == "categories"}
    for path in sorted(folder.glob("*.md")):
        if path.name == "MEMORY.md":
            continue
        entry = truth.entries.get(moved_to.get(path.stem, path.stem))
        if entry is None:
            continue
        was, now = _entry_stamps(entry), _stamps_of(path)
        group = next((g for g in truth.duplicates if entry.id in g), {entry.id})
        newest = max(_entry_stamps(truth.entries[m]).get("updated", "") for m in group)
        if now != was and (now.get("updated", "") > newest or now.get("created") != was.get(
                "created") or now.get("modified") != was.get("modified")):
            scores.harmful.append(f"{entry.id}: made to look fresher: {was} -> {now}")
    for memory_id, words in NEVER_IN_SUMMARY.items():
        path, _ = _where_now(folder, memory_id)
        summary = str(_read(path)[0].get("summary") or "") if path else ""
        for word in words:
            if word in summary:
                scores.harmful.append(f"{memory_id}: the summary quotes what the body rejects")
    for memory_id, end in SAME_END.items():
        path, _ = _where_now(folder, memory_id)
        if path is not None and not path.read_text(encoding="utf-8").endswith(end):
            scores.harmful.append(f"{memory_id}: the body's end was changed")
    return scores


entries = _entries_29
score = _score_29


# -- issue 29: twins and contradictions found by meaning (appended; see dream_meaning_cases) --

_entries_before_meaning = entries
_truth_before_meaning = truth_of


def _meaning_entries() -> list[Entry]:
    from dream_meaning_cases import CONTRADICTIONS, DISTINCT, TWINS

    rows = [row for _, group in TWINS + CONTRADICTIONS for row in group]
    rows += [row for group in DISTINCT for row in group]
    return [
        Entry(memory_id, description, body, {"category": category, **_day(day)})
        for memory_id, category, day, description, body in rows
    ]


def entries() -> list[Entry]:  # type: ignore[no-redef]  # noqa: F811
    return _entries_before_meaning() + _meaning_entries()


def truth_of(all_entries: Iterable[Entry]) -> Truth:  # type: ignore[no-redef]  # noqa: F811
    from dream_meaning_cases import CONTRADICTIONS, DISTINCT, TWINS

    truth = _truth_before_meaning(all_entries)
    truth.duplicates += [{row[0] for row in group} for _, group in TWINS]
    truth.distinct += [(group[0][0], group[1][0]) for group in DISTINCT]
    truth.contradictions += [
        (group[0][0], group[1][0], name, False) for name, group in CONTRADICTIONS
    ]
    return truth


if __name__ == "__main__":
    raise SystemExit(main())
