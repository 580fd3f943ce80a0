"""A sixth annotated folder: twins said in other words the way agents resave a memory weeks
later (a verb in another's place, a rule turned into a noun phrase, clauses reordered, filler
added, Chinese particles and measure words, 请 / 要 / 必须, 使用 / 用 / 采用), beside look-alikes
one fact apart written the same ways (a negation, another tool, number, person, day, time of
day, must / may, allowed / forbidden, before / after).

Written before any rule was changed for it (dream16), so that its "before" figures measure the
rules as they were, on cases they were not made for. Each twin is one fact saved twice on two
days, both bodies saying the same in their own words; each look-alike is two facts saved the
same day, one apart, most over the very same body (the fact is in the description only), some
with the fact in the body too.

`python tests/dream_paraphrase_cases.py [--vectors]`: the folder through the CLI as installed
(`sage-mem dream --mode rewrite --json`, then `sage-mem rollback`), and what became of each
pair. tests/test_dream_paraphrase_cases.py holds it to that.
"""

from __future__ import annotations

from typing import Any

# (id, category, day, description, body)
Row = tuple[str, str, str, str, str]

TWINS: list[tuple[str, list[Row]]] = [
    # -- English: a rule as a noun phrase, a verb in another's place, reordered, filler --
    ("en-friday-forbidden", [
        ("feedback_fridays_forbidden", "feedback", "2026-08-03",
         "Deploying on Fridays is forbidden",
         "A Friday release broke checkout over a weekend in March and nobody was around to "
         "roll it back. Ship from Monday to Thursday."),
        ("feedback_never_deploy_friday", "feedback", "2026-10-12",
         "Never deploy on a Friday",
         "A release on a Friday broke checkout for a weekend in March with nobody around to "
         "roll back; ship Monday to Thursday."),
    ]),
    ("en-approvals", [
        ("feedback_two_approvals", "feedback", "2026-08-04",
         "Merging requires approval from two reviewers",
         "Branch protection on main enforces it; the author's own approval does not count."),
        ("feedback_two_reviewers_approve", "feedback", "2026-10-13",
         "Two reviewers must approve before a merge",
         "Branch protection on main enforces this, and the author's own approval does not "
         "count."),
    ]),
    ("en-commit-english", [
        ("feedback_commit_english", "feedback", "2026-08-05",
         "Write commit messages in English",
         "Half the team does not read Chinese; the changelog is generated from commit "
         "messages."),
        ("feedback_commit_messages_english", "feedback", "2026-10-14",
         "Commit messages are in English",
         "The changelog is generated from the commit messages, and half the team does not "
         "read Chinese."),
    ]),
    ("en-pnpm", [
        ("project_use_pnpm", "project", "2026-08-06", "Use pnpm to install packages",
         "The lockfile is pnpm-lock.yaml; npm install breaks the workspace links."),
        ("project_packages_pnpm", "project", "2026-10-15", "Packages are installed with pnpm",
         "pnpm-lock.yaml is the lockfile, and npm install breaks the workspace links."),
    ]),
    ("en-remote-monday", [
        ("user_home_mondays", "user", "2026-08-07", "The user works from home on Mondays",
         "No in-person meetings on Mondays; calls are fine."),
        ("user_mondays_remote", "user", "2026-10-16", "On Mondays the user works from home",
         "Calls are fine on Mondays, but no in-person meetings."),
    ]),
    ("en-ticket", [
        ("feedback_ticket_in_commit", "feedback", "2026-08-08",
         "Put the ticket number in every commit message",
         "Jira links commits to tickets by the key, like PAY-1234, at the start of the "
         "subject."),
        ("feedback_commit_includes_ticket", "feedback", "2026-10-17",
         "Every commit message must include the ticket number",
         "Jira links a commit to its ticket by the key at the start of the subject, "
         "PAY-1234 for example."),
    ]),
    ("en-utc-logs", [
        ("feedback_logs_utc", "feedback", "2026-08-09", "Always use UTC in logs",
         "Servers run in three regions; local times made the March incident timeline "
         "unreadable."),
        ("feedback_log_timestamps_utc", "feedback", "2026-10-18",
         "Log timestamps should be in UTC",
         "The servers are in three regions, and local times made the timeline of the March "
         "incident unreadable."),
    ]),
    ("en-staging-reset", [
        ("project_staging_reset_nightly", "project", "2026-08-10",
         "The staging database is reset every night",
         "A cron job at 02:00 UTC restores it from the anonymised snapshot; do not keep test "
         "data there."),
        ("project_staging_db_nightly_reset", "project", "2026-10-19",
         "Every night the staging database gets reset",
         "At 02:00 UTC a cron job restores it from the anonymised snapshot, so test data "
         "there does not last."),
    ]),
    ("en-ask-branch", [
        ("feedback_ask_before_branch_delete", "feedback", "2026-08-11",
         "Ask before deleting any branch",
         "The user keeps half-finished work on old branches and lost a week of it once."),
        ("feedback_no_branch_delete_without_asking", "feedback", "2026-10-20",
         "Do not delete a branch without asking first",
         "Half-finished work sits on old branches; the user lost a week of it once."),
    ]),
    ("en-black", [
        ("project_black_formatting", "project", "2026-08-12",
         "Use Black to format Python code",
         "Line length 100, set in pyproject.toml; CI fails on unformatted files."),
        ("project_python_formatted_black", "project", "2026-10-21",
         "Python code is formatted with Black",
         "pyproject.toml sets the line length to 100, and CI fails on any unformatted file."),
    ]),
    ("en-filler-tabs", [
        ("user_prefers_tabs", "user", "2026-08-13", "The user prefers tabs for indentation",
         "Except in YAML and Python, where the tools want spaces."),
        ("user_basically_tabs", "user", "2026-10-22",
         "Basically, the user just prefers tabs for indentation",
         "Not in YAML or Python though: the tools there want spaces."),
    ]),
    ("en-replica", [
        ("project_reports_replica", "project", "2026-08-14",
         "Reports query the read replica",
         "The primary is kept for writes; a heavy report once locked the orders table."),
        ("project_replica_for_reports", "project", "2026-10-23",
         "Use the read replica for report queries",
         "Writes go to the primary: a heavy report locked the orders table once."),
    ]),
    ("en-short-answers", [
        ("feedback_keep_answers_short", "feedback", "2026-08-15", "Please keep answers short",
         "The user reads on a phone between meetings; details only when asked."),
        ("feedback_wants_short_answers", "feedback", "2026-10-24",
         "The user wants answers kept short",
         "Between meetings the user reads on a phone: details only when asked for."),
    ]),
    ("en-review-migrations", [
        ("project_alice_reviews_migrations", "project", "2026-08-16",
         "Alice reviews every database migration",
         "She owns the schema; tag her on the pull request before merging."),
        ("project_migrations_reviewed_alice", "project", "2026-10-25",
         "Database migrations are all reviewed by Alice",
         "The schema is hers: tag her on the pull request before the merge."),
    ]),
    ("en-freeze-start", [
        ("project_freeze_starts_15th", "project", "2026-08-17",
         "The code freeze starts on the 15th",
         "Only fixes are merged after it, until the release on the last day of the month."),
        ("project_freeze_begins_15th", "project", "2026-10-26",
         "Code freeze begins on the 15th of each month",
         "After it only fixes are merged, until the release on the month's last day."),
    ]),
    # -- Chinese: particles, measure words, 请 / 要 / 必须, 使用 / 用 / 采用 --
    ("zh-friday", [
        ("feedback_zh_no_friday_release", "feedback", "2026-08-03", "周五不要上线",
         "三月份有一次周五上线把支付搞挂了，周末没人处理。周一到周四上线。"),
        ("feedback_zh_friday_release_forbidden", "feedback", "2026-10-12", "禁止在周五上线",
         "三月有次周五上线导致支付挂了，周末没人处理，所以只在周一到周四上线。"),
    ]),
    ("zh-prettier", [
        ("project_zh_prettier", "project", "2026-08-04", "代码用 Prettier 格式化",
         "配置在 .prettierrc 里，提交前的钩子会自动格式化。"),
        ("project_zh_use_prettier", "project", "2026-10-13", "请使用 Prettier 来格式化代码",
         "配置放在 .prettierrc，提交前钩子会自动格式化。"),
    ]),
    ("zh-vim", [
        ("user_zh_vim", "user", "2026-08-05", "用户喜欢用 Vim",
         "键位建议按 Vim 的来，不要推荐别的编辑器。"),
        ("user_zh_vim_habit", "user", "2026-10-14", "用户习惯使用 Vim 编辑器",
         "给键位建议时按 Vim 来，别推荐其他编辑器。"),
    ]),
    ("zh-reply-chinese", [
        ("feedback_zh_reply_chinese", "feedback", "2026-08-06", "请用中文回复用户",
         "用户读英文慢，代码和命令可以保留英文。"),
        ("feedback_zh_reply_in_chinese", "feedback", "2026-10-15", "回复用户时要使用中文",
         "用户看英文比较慢；代码、命令保持英文就行。"),
    ]),
    ("zh-test-db-reset", [
        ("project_zh_test_db_reset", "project", "2026-08-07", "测试数据库每天晚上重置",
         "凌晨两点从脱敏快照恢复，别在上面留测试数据。"),
        ("project_zh_test_db_nightly", "project", "2026-10-16", "每天晚上都会重置一次测试数据库",
         "每天凌晨两点用脱敏快照恢复，测试数据不要留在上面。"),
    ]),
    ("zh-two-reviewers", [
        ("feedback_zh_two_reviewers", "feedback", "2026-08-08", "合并前必须有两个人审核",
         "主分支开了保护，作者自己的批准不算。"),
        ("feedback_zh_two_colleagues", "feedback", "2026-10-17", "合并之前需要两位同事审核",
         "主分支有保护规则，作者本人的批准不算数。"),
    ]),
    ("zh-unit-before-commit", [
        ("feedback_zh_tests_before_commit", "feedback", "2026-08-09", "提交代码前要先跑单元测试",
         "本地跑 make test，失败了就先别提交。"),
        ("feedback_zh_run_tests_first", "feedback", "2026-10-18", "在提交代码之前请先运行单元测试",
         "先在本地执行 make test，没通过不要提交。"),
    ]),
    ("zh-utc", [
        ("feedback_zh_logs_utc", "feedback", "2026-08-10", "日志统一用 UTC 时间",
         "服务器分布在三个地区，用本地时间排查事故时对不上。"),
        ("feedback_zh_logs_all_utc", "feedback", "2026-10-19", "日志里的时间一律采用 UTC",
         "服务器在三个地区，本地时间在排查事故的时候对不上。"),
    ]),
    ("zh-run-morning", [
        ("user_zh_morning_run", "user", "2026-08-11", "用户每天早上跑步",
         "早上七点到八点不在线，别在这个时间约会。"),
        ("user_zh_runs_every_morning", "user", "2026-10-20", "用户每天早上都会去跑步",
         "七点到八点之间不在线，这段时间别约会议。"),
    ]),
    ("zh-main-branch", [
        ("feedback_zh_no_direct_main", "feedback", "2026-08-12", "不要直接在主分支上改代码",
         "所有改动都走合并请求，主分支只接受合并。"),
        ("feedback_zh_main_forbidden", "feedback", "2026-10-21", "禁止直接在主分支上修改代码",
         "改动一律走合并请求，主分支只能合并进来。"),
    ]),
    # -- mixed Chinese and English --
    ("mixed-notion", [
        ("reference_mx_api_docs_notion", "reference", "2026-08-13", "API 文档放在 Notion 上",
         "Notion 的 Engineering 空间下，每个服务一页，接口变了要同步更新。"),
        ("reference_mx_api_docs_in_notion", "reference", "2026-10-22", "API docs 在 Notion 里",
         "在 Notion 的 Engineering 空间，每个服务一页，接口一改就要同步更新。"),
    ]),
    ("mixed-actions", [
        ("project_mx_deploy_actions", "project", "2026-08-14", "部署用 GitHub Actions",
         "workflow 在 .github/workflows/deploy.yml，合并到 main 自动触发。"),
        ("project_mx_actions_deploy", "project", "2026-10-23", "用 GitHub Actions 来部署",
         "workflow 写在 .github/workflows/deploy.yml，合到 main 就会自动触发。"),
    ]),
    ("mixed-vscode", [
        ("user_mx_ide_vscode", "user", "2026-08-15", "用户的 IDE 是 VS Code",
         "装了 Python 和 GitLens 插件，给配置建议时按 VS Code 的 settings.json 写。"),
        ("user_mx_writes_in_vscode", "user", "2026-10-24", "用户用 VS Code 写代码",
         "装了 Python、GitLens 插件；配置建议按 VS Code 的 settings.json 来写。"),
    ]),
    ("mixed-redis-ttl", [
        ("project_mx_redis_ttl", "project", "2026-08-16", "Redis 缓存过期时间是 10 分钟",
         "过期后从数据库重新加载，热点 key 会预热。"),
        ("project_mx_redis_expires", "project", "2026-10-25", "Redis 的缓存 10 分钟后过期",
         "过期以后从数据库重新加载，热点 key 会提前预热。"),
    ]),
    ("mixed-pr-approve", [
        ("feedback_mx_pr_one_approve", "feedback", "2026-08-17", "每个 PR 至少要一个人 approve",
         "没人 approve 不能合并，紧急修复也一样。"),
        ("feedback_mx_pr_approval_needed", "feedback", "2026-10-26",
         "PR 至少需要一个人批准才能合并",
         "没人批准就不能合并，紧急修复也不例外。"),
    ]),
]

LOOKALIKES: list[list[Row]] = [
    # -- English, over the very same body --
    [("feedback_thursdays_deploy_forbidden", "feedback", "2026-09-14",
      "Deploying on Thursdays is forbidden",
      "Releases need someone around for a day after them to watch the dashboards."),
     ("feedback_never_deploy_monday", "feedback", "2026-09-14", "Never deploy on a Monday",
      "Releases need someone around for a day after them to watch the dashboards.")],
    [("feedback_mock_db_may", "feedback", "2026-09-14", "Unit tests may mock the database",
      "The fixtures in tests/fixtures set up the schema; see the testing guide."),
     ("feedback_mock_db_must_not", "feedback", "2026-09-14",
      "Unit tests must not mock the database",
      "The fixtures in tests/fixtures set up the schema; see the testing guide.")],
    [("project_yarn_install", "project", "2026-09-14", "Use yarn to install packages",
      "The lockfile is checked in; do not mix package managers in one workspace."),
     ("project_installed_with_npm", "project", "2026-09-14", "Packages are installed with npm",
      "The lockfile is checked in; do not mix package managers in one workspace.")],
    [("feedback_three_reviewers", "feedback", "2026-09-14",
      "Merging requires approval from three reviewers",
      "Branch protection enforces it on the release branches."),
     ("feedback_one_reviewer", "feedback", "2026-09-14",
      "One reviewer must approve before a merge",
      "Branch protection enforces it on the release branches.")],
    [("project_bob_reviews_migrations", "project", "2026-09-14",
      "Bob reviews every database migration",
      "Tag the reviewer on the pull request before merging."),
     ("project_migrations_reviewed_carol", "project", "2026-09-14",
      "Database migrations are all reviewed by Carol",
      "Tag the reviewer on the pull request before merging.")],
    [("user_home_tuesdays", "user", "2026-09-14", "The user works from home on Tuesdays",
      "No in-person meetings then; calls are fine."),
     ("user_thursdays_home", "user", "2026-09-14", "On Thursdays the user works from home",
      "No in-person meetings then; calls are fine.")],
    [("feedback_commit_must_english", "feedback", "2026-09-14",
      "Commit messages must be in English",
      "The changelog is generated from commit messages."),
     ("feedback_commit_may_english", "feedback", "2026-09-14",
      "Commit messages may be in English",
      "The changelog is generated from commit messages.")],
    [("feedback_force_push_allowed", "feedback", "2026-09-14",
      "Force-pushing to feature branches is allowed",
      "Feature branches belong to one person; shared branches are another matter."),
     ("feedback_force_push_forbidden", "feedback", "2026-09-14",
      "Force-pushing to feature branches is forbidden",
      "Feature branches belong to one person; shared branches are another matter.")],
    [("feedback_unit_tests_before_push", "feedback", "2026-09-14",
      "Run the unit tests before every push",
      "make test runs them locally in a few minutes."),
     ("feedback_integration_tests_before_push", "feedback", "2026-09-14",
      "Integration tests must pass before pushing",
      "make test runs them locally in a few minutes.")],
    [("project_staging_reset_weekly", "project", "2026-09-14",
      "The staging cache is reset every week",
      "A cron job restores it from the snapshot; do not rely on what is there."),
     ("project_staging_reset_hourly", "project", "2026-09-14",
      "Every hour the staging cache gets reset",
      "A cron job restores it from the snapshot; do not rely on what is there.")],
    [("feedback_ask_before_tag_delete", "feedback", "2026-09-14",
      "Ask before deleting any tag",
      "Releases are built from tags and a lost one cannot be rebuilt."),
     ("feedback_no_tag_push_without_asking", "feedback", "2026-09-14",
      "Do not push a tag without asking first",
      "Releases are built from tags and a lost one cannot be rebuilt.")],
    [("project_ruff_format", "project", "2026-09-14", "Use Ruff to format Python code",
      "Line length 100, set in pyproject.toml."),
     ("project_python_formatted_yapf", "project", "2026-09-14",
      "Python code is formatted with yapf",
      "Line length 100, set in pyproject.toml.")],
    [("project_reports_primary", "project", "2026-09-14", "Reports query the primary",
      "The nightly finance report needs data that is at most a second old."),
     ("project_replica_for_dashboards", "project", "2026-09-14",
      "Use the read replica for dashboard queries",
      "The nightly finance report needs data that is at most a second old.")],
    [("feedback_keep_answers_detailed", "feedback", "2026-09-14",
      "Please keep answers detailed",
      "The user reads them later at a desk, with time to spare."),
     ("feedback_wants_answers_short_code", "feedback", "2026-09-14",
      "The user wants code answers kept short",
      "The user reads them later at a desk, with time to spare.")],
    [("project_freeze_starts_20th", "project", "2026-09-14",
      "The feature freeze starts on the 20th",
      "Only fixes are merged after it, until the release."),
     ("project_freeze_ends_20th", "project", "2026-09-14",
      "The feature freeze ends on the 20th",
      "Only fixes are merged after it, until the release.")],
    # -- English, the fact in the body too --
    [("user_prefers_spaces", "user", "2026-09-15",
      "Basically, the user just prefers spaces for indentation",
      "Four spaces, everywhere: the user finds spaces easier to align."),
     ("user_prefers_tabs_go", "user", "2026-09-15", "The user prefers tabs for indentation in Go",
      "gofmt wants tabs, and the user is fine with that in Go code.")],
    [("user_wife_home_fridays", "user", "2026-09-15",
      "The user's wife works from home on Fridays",
      "The user's wife is home on Fridays, so the user takes the kids to school."),
     ("user_home_fridays", "user", "2026-09-15", "On Fridays the user works from home",
      "The user is home on Fridays and skips in-person meetings.")],
    # -- Chinese, over the very same body --
    [("feedback_zh_thursday_release_allowed", "feedback", "2026-09-14", "周四允许上线",
      "上线之后要有人盯一天监控。"),
     ("feedback_zh_thursday_release_banned", "feedback", "2026-09-14", "禁止在周四上线",
      "上线之后要有人盯一天监控。")],
    [("user_zh_likes_emacs", "user", "2026-09-14", "用户喜欢用 Emacs",
      "键位建议按用户的编辑器来。"),
     ("user_zh_dislikes_emacs", "user", "2026-09-14", "用户不喜欢用 Emacs",
      "键位建议按用户的编辑器来。")],
    [("feedback_zh_reply_english", "feedback", "2026-09-14", "请用英文回复客户",
      "客户在海外，代码和命令保持原样。"),
     ("feedback_zh_reply_customers_japanese", "feedback", "2026-09-14", "回复客户时要使用日文",
      "客户在海外，代码和命令保持原样。")],
    [("project_zh_cache_weekly", "project", "2026-09-14", "预发缓存每周重置一次",
      "从快照恢复，别在上面留数据。"),
     ("project_zh_cache_every_night", "project", "2026-09-14", "每天晚上都会重置一次预发缓存",
      "从快照恢复，别在上面留数据。")],
    [("feedback_zh_three_reviewers", "feedback", "2026-09-14", "发布前必须有三个人审核",
      "发布分支开了保护，作者自己的批准不算。"),
     ("feedback_zh_one_colleague", "feedback", "2026-09-14", "发布之前需要一位同事审核",
      "发布分支开了保护，作者自己的批准不算。")],
    [("feedback_zh_tests_after_commit", "feedback", "2026-09-14", "提交代码后要跑集成测试",
      "在本地跑 make it，大概十分钟。"),
     ("feedback_zh_tests_before_merge", "feedback", "2026-09-14", "在提交代码之前请先运行集成测试",
      "在本地跑 make it，大概十分钟。")],
    [("feedback_zh_logs_beijing", "feedback", "2026-09-14", "日志统一用北京时间",
      "排查事故时对时间要看清时区。"),
     ("feedback_zh_logs_local", "feedback", "2026-09-14", "日志里的时间一律采用本地时间",
      "排查事故时对时间要看清时区。")],
    [("user_zh_evening_run", "user", "2026-09-14", "用户每天晚上跑步",
      "这段时间不在线，别约会议。"),
     ("user_zh_swims_every_morning", "user", "2026-09-14", "用户每天早上都会去游泳",
      "这段时间不在线，别约会议。")],
    [("feedback_zh_direct_dev_ok", "feedback", "2026-09-14", "可以直接在开发分支上改代码",
      "开发分支每天会重建一次。"),
     ("feedback_zh_dev_forbidden", "feedback", "2026-09-14", "禁止直接在开发分支上修改代码",
      "开发分支每天会重建一次。")],
    # -- mixed, over the very same body --
    [("reference_mx_api_docs_confluence", "reference", "2026-09-14",
      "API 文档放在 Confluence 上", "每个服务一页，接口变了要同步更新。"),
     ("reference_mx_design_docs_notion", "reference", "2026-09-14", "设计文档在 Notion 里",
      "每个服务一页，接口变了要同步更新。")],
    [("project_mx_deploy_jenkins", "project", "2026-09-14", "部署用 Jenkins",
      "合并到 main 自动触发。"),
     ("project_mx_gitlab_ci_deploy", "project", "2026-09-14", "用 GitLab CI 来部署",
      "合并到 main 自动触发。")],
    [("project_mx_redis_ttl_30", "project", "2026-09-14", "Redis 会话过期时间是 30 分钟",
      "过期后需要重新登录。"),
     ("project_mx_redis_session_30s", "project", "2026-09-14", "Redis 的会话 30 秒后过期",
      "过期后需要重新登录。")],
    [("feedback_mx_pr_two_approve", "feedback", "2026-09-14", "每个 PR 至少要两个人 approve",
      "没人 approve 不能合并。"),
     ("feedback_mx_mr_approval_optional", "feedback", "2026-09-14", "PR 不需要人批准也能合并",
      "没人 approve 不能合并。")],
    [("user_mx_ide_intellij", "user", "2026-09-14", "用户的 IDE 是 IntelliJ",
      "配置建议按用户的 IDE 来写。"),
     ("user_mx_writes_in_zed", "user", "2026-09-14", "用户用 Zed 写代码",
      "配置建议按用户的 IDE 来写。")],
]

# Written after the rules were changed for the pairs above, measured once, not tuned on: how
# the change holds on cases it was not made for (a folder of their own, with SINGLES).
HELD_OUT_TWINS: list[tuple[str, list[Row]]] = [
    ("held-en-poetry", [
        ("project_poetry_deps", "project", "2026-08-20", "Use Poetry to manage dependencies",
         "pyproject.toml and poetry.lock are the source of truth; never pip install into the "
         "project's environment by hand."),
        ("project_deps_managed_poetry", "project", "2026-11-02",
         "Dependencies are managed with Poetry",
         "The source of truth is pyproject.toml with poetry.lock; do not pip install into the "
         "project's environment by hand."),
    ]),
    ("held-en-migrations-tx", [
        ("feedback_migrations_transaction", "feedback", "2026-08-21",
         "Always run migrations in a transaction",
         "A half-applied migration left the schema broken in May; Postgres can roll DDL back."),
        ("feedback_migrations_must_transaction", "feedback", "2026-11-03",
         "Migrations must run inside a transaction",
         "In May a half-applied migration broke the schema, and Postgres can roll DDL back."),
    ]),
    ("held-en-go", [
        ("user_prefers_go", "user", "2026-08-22", "The user prefers Go",
         "Suggest Go first for services and tools; Python only for notebooks."),
        ("user_go_preferred_language", "user", "2026-11-04", "Go is the user's preferred language",
         "For services and tools suggest Go first, Python only for notebooks."),
    ]),
    ("held-en-pii-logs", [
        ("feedback_no_personal_data_logs", "feedback", "2026-08-23", "Don't log personal data",
         "GDPR: names, emails and addresses never go to the log pipeline, which keeps data "
         "for a year."),
        ("feedback_logging_personal_not_allowed", "feedback", "2026-11-05",
         "Logging personal data is not allowed",
         "Because of GDPR, names, emails and addresses never reach the log pipeline; it keeps "
         "data for a year."),
    ]),
    ("held-en-staging-auto", [
        ("project_staging_auto_deploy", "project", "2026-08-24",
         "Staging deploys happen automatically on merge",
         "The pipeline deploys main to staging after the tests pass; production is manual."),
        ("project_merge_deploys_staging", "project", "2026-11-06",
         "Merging deploys to staging automatically",
         "Once the tests pass the pipeline deploys main to staging; production stays manual."),
    ]),
    ("held-en-lunch", [
        ("project_team_lunch_thursday", "project", "2026-08-25", "Team lunch is every Thursday",
         "At 12:30 in the canteen; no meetings are booked over it."),
        ("project_thursdays_lunch_together", "project", "2026-11-07",
         "On Thursdays the team has lunch together",
         "12:30 in the canteen, and nobody books meetings over it."),
    ]),
    ("held-zh-dark-theme", [
        ("user_zh_dark_theme", "user", "2026-08-26", "用户偏好深色主题",
         "截图和配色建议都按深色背景来，浅色主题看久了眼睛累。"),
        ("user_zh_likes_dark_theme", "user", "2026-11-08", "用户喜欢用深色的主题",
         "配色建议和截图按深色背景来，浅色主题看久了眼睛累。"),
    ]),
    ("held-zh-changelog", [
        ("feedback_zh_changelog_before_release", "feedback", "2026-08-27",
         "每次发版前都要写更新日志",
         "更新日志写在 CHANGELOG.md，按新增、修改、修复分组。"),
        ("feedback_zh_changelog_must", "feedback", "2026-11-09", "发版之前必须写好更新日志",
         "按新增、修改、修复分组，写在 CHANGELOG.md 里。"),
    ]),
    ("held-zh-rollback-first", [
        ("feedback_zh_rollback_first", "feedback", "2026-08-28", "线上问题先回滚再排查",
         "先止血：回滚到上一个版本，恢复之后再慢慢查原因。"),
        ("feedback_zh_prod_issue_rollback", "feedback", "2026-11-10",
         "生产环境出问题时，先回滚，再排查原因",
         "先止血，回滚到上个版本，恢复以后再慢慢查原因。"),
    ]),
    ("held-zh-review-two", [
        ("feedback_zh_review_two_pass", "feedback", "2026-08-29", "代码评审至少两个人通过",
         "一个人通过不能合并，作者自己不算。"),
        ("feedback_zh_review_two_agree", "feedback", "2026-11-11", "代码评审需要至少两个人同意",
         "只有一个人通过不能合并，作者本人不算。"),
    ]),
    ("held-mixed-actions-ci", [
        ("project_mx_ci_actions", "project", "2026-08-30", "CI 用 GitHub Actions 跑",
         "workflow 在 .github/workflows/ci.yml，每个 PR 都会跑单元测试和 lint。"),
        ("project_mx_actions_run_ci", "project", "2026-11-12", "用 GitHub Actions 跑 CI",
         "workflow 写在 .github/workflows/ci.yml，每个 PR 都跑单元测试和 lint。"),
    ]),
    ("held-mixed-vault", [
        ("reference_mx_secrets_vault", "reference", "2026-08-31", "密钥都放在 Vault 里",
         "路径是 secret/<服务名>，本地开发用 vault login 拿临时 token。"),
        ("reference_mx_all_secrets_vault", "reference", "2026-11-13", "所有密钥统一存放在 Vault",
         "按 secret/<服务名> 存放，本地开发用 vault login 取临时 token。"),
    ]),
]

HELD_OUT_LOOKALIKES: list[list[Row]] = [
    [("project_cli_poetry", "project", "2026-10-01",
      "Use Poetry to manage the CLI's dependencies",
      "The lockfile is checked in; one tool per repository."),
     ("project_cli_deps_pip_tools", "project", "2026-10-01",
      "The CLI's dependencies are managed with pip-tools",
      "The lockfile is checked in; one tool per repository.")],
    [("feedback_migrations_tx_always", "feedback", "2026-10-01",
      "Always run data migrations in a transaction",
      "Some statements cannot run inside a transaction; check the database's docs."),
     ("feedback_migrations_never_tx", "feedback", "2026-10-01",
      "Data migrations must never run inside a transaction",
      "Some statements cannot run inside a transaction; check the database's docs.")],
    [("user_prefers_zig", "user", "2026-10-01", "The user prefers Zig for side projects",
      "Suggest examples in the user's preferred language."),
     ("user_rust_preferred", "user", "2026-10-01",
      "Rust is the user's preferred language for side projects",
      "Suggest examples in the user's preferred language.")],
    [("feedback_no_request_bodies_log", "feedback", "2026-10-01", "Don't log request bodies",
      "The log pipeline keeps data for a year."),
     ("feedback_request_headers_not_allowed", "feedback", "2026-10-01",
      "Logging request headers is not allowed",
      "The log pipeline keeps data for a year.")],
    [("project_preview_auto_on_merge", "project", "2026-10-01",
      "Preview deploys happen automatically on merge",
      "The pipeline runs after the tests pass."),
     ("project_merge_deploys_production", "project", "2026-10-01",
      "Merging deploys to production automatically",
      "The pipeline runs after the tests pass.")],
    [("project_team_breakfast_friday", "project", "2026-10-01",
      "Team breakfast is every Friday",
      "Nobody books meetings over it."),
     ("project_wednesdays_breakfast", "project", "2026-10-01",
      "On Wednesdays the team has breakfast together",
      "Nobody books meetings over it.")],
    [("user_zh_mono_font", "user", "2026-10-01", "用户的编辑器偏好等宽字体",
      "字体建议按用户的偏好来。"),
     ("user_zh_sans_font", "user", "2026-10-01", "用户的编辑器喜欢用无衬线的字体",
      "字体建议按用户的偏好来。")],
    [("feedback_zh_changelog_before", "feedback", "2026-10-01", "每次发版前都要写发布公告",
      "按新增、修改、修复分组。"),
     ("feedback_zh_changelog_after", "feedback", "2026-10-01", "发版之后必须写好发布公告",
      "按新增、修改、修复分组。")],
    [("feedback_zh_test_env_rollback", "feedback", "2026-10-01", "测试环境的问题先回滚再排查",
      "恢复之后再慢慢查原因。"),
     ("feedback_zh_test_env_investigate", "feedback", "2026-10-01",
      "测试环境出问题时，先排查原因，再回滚", "恢复之后再慢慢查原因。")],
    [("feedback_zh_review_two", "feedback", "2026-10-01", "设计评审至少两个人通过",
      "作者自己不算。"),
     ("feedback_zh_review_three", "feedback", "2026-10-01", "设计评审需要至少三个人同意",
      "作者自己不算。")],
    [("project_mx_ci_actions_b", "project", "2026-10-01", "集成测试用 GitHub Actions 跑",
      "每个 PR 都会跑。"),
     ("project_mx_circleci", "project", "2026-10-01", "用 CircleCI 跑集成测试",
      "每个 PR 都会跑。")],
    [("reference_mx_keys_vault", "reference", "2026-10-01", "API 密钥都放在 Vault 里",
      "本地开发用 vault login 拿临时 token。"),
     ("reference_mx_certs_vault", "reference", "2026-10-01", "所有证书统一存放在 Vault",
      "本地开发用 vault login 拿临时 token。")],
]

# Memories of their own, as any folder has (a twin's nearest neighbours are not all twins).
SINGLES: list[Row] = [
    ("user_role_sre", "user", "2026-07-01", "The user is an SRE on the platform team",
     "Knows Terraform and Kubernetes well; writes Go, reads Python."),
    ("user_zh_name_li", "user", "2026-07-02", "用户叫李明，同事叫他老李",
     "正式邮件里写李明。"),
    ("feedback_no_trailing_summary", "feedback", "2026-07-03",
     "Do not end answers with a summary",
     "The user reads the diff; a closing recap wastes a screen."),
    ("project_oncall_rotation", "project", "2026-07-04", "On-call rotates every Monday",
     "The handover note goes into the #oncall channel at 10:00."),
    ("reference_runbooks", "reference", "2026-07-05", "Runbooks are in the ops repository",
     "ops/runbooks/<service>.md, one per service, linked from the alerts."),
    ("project_zh_release_train", "project", "2026-07-06", "每两周发一次版",
     "周一切发布分支，之后只合修复。"),
    ("feedback_zh_no_emoji", "feedback", "2026-07-07", "提交信息里不要用表情符号",
     "更新日志是从提交信息生成的，表情符号会弄乱格式。"),
    ("user_zh_timezone", "user", "2026-07-08", "用户在上海，时区是东八区",
     "约会议按北京时间，下午六点以后别约。"),
]


def rows() -> list[Row]:
    """Every memory of the folder."""
    return [r for _, pair in TWINS for r in pair] + [
        r for pair in LOOKALIKES for r in pair] + SINGLES


def build(folder: Any) -> None:
    """Write the folder: each memory created and updated on its own day."""
    from dream_twin_cases import write_rows

    write_rows(folder, rows())


def build_held_out(folder: Any) -> None:
    """Write the held-out folder: its pairs and the memories of their own."""
    from dream_twin_cases import write_rows

    write_rows(folder, [r for _, pair in HELD_OUT_TWINS for r in pair] + [
        r for pair in HELD_OUT_LOOKALIKES for r in pair] + SINGLES)


def run_cli(root: Any, vectors: bool = False) -> dict[str, Any]:
    """The folder through the CLI as installed (`dream_twin_cases.measure_cli`)."""
    from dream_twin_cases import measure_cli

    return measure_cli(root, build, TWINS, LOOKALIKES, vectors=vectors)


def run_cli_held_out(root: Any, vectors: bool = False) -> dict[str, Any]:
    """The held-out folder through the CLI as installed."""
    from dream_twin_cases import measure_cli

    return measure_cli(root, build_held_out, HELD_OUT_TWINS, HELD_OUT_LOOKALIKES,
                       vectors=vectors)


def main() -> int:
    """`python tests/dream_paraphrase_cases.py [--vectors] [--held-out]`: the figures
    docs/dream.md quotes."""
    import sys

    from dream_twin_cases import print_figures

    if "--held-out" in sys.argv:
        return print_figures(run_cli_held_out,
                             [("held out", HELD_OUT_TWINS, HELD_OUT_LOOKALIKES)])
    return print_figures(run_cli, [("paraphrased", TWINS, LOOKALIKES)])


if __name__ == "__main__":
    __import__("sys").path.insert(0, __import__("os").path.dirname(__file__))
    raise SystemExit(main())
