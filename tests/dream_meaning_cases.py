"""Twins and contradictions worded differently, in English and Chinese (issue 29), for the tests.

A second folder, as agents write one over months (appended to REWORDED and LOOKALIKE, and in
SUPERSEDED and DATED): twins said anew, look-alikes one fact apart over the very same body
(an environment, before / after, a version, a unit, a name, a command), facts that changed,
and relative dates to date against each memory's own day or to leave alone. A third folder
(appended to LOOKALIKE): look-alikes from other angles, a unit, a sign, a bound, a modality, a
scope, a frequency, a tense, who a fact is about, a role, in English and Chinese. A fourth
(appended to LOOKALIKE): a hedge ("about 5", 左右, "sometimes"), a place qualifier ("near",
附近), a direction (to / from, 发给 / 发来), whose (my / our, 我的 / 我们的), how many, a
time of day, allow / deny, first / last, read / write.

Each case is a small set of memories: (id, category, day, description, body), and what
a careful reader wants of them. Kinds, not sentences: the same fact reworded with the
same body, a Claude Code `type:` twin, answer-style and test-rule pairs; a value that
changed weeks apart (an editor, a theme, a length, a meeting, a deploy rule, a pair
across `user` and `feedback`); near-twins that differ in a fact and must never merge.
"""

from __future__ import annotations

from typing import Any

# (id, category, day, description, body)
Row = tuple[str, str, str, str, str]

TWINS: list[tuple[str, list[Row]]] = [
    ("zh-habit", [
        ("user_zh_justfile", "user", "2026-10-02", "用户喜欢用 justfile 管理命令",
         "每个仓库根目录放一个 justfile，常用的构建、测试、发布命令都写成配方，不用 npm scripts。"),
        ("user_zh_justfile_habit", "user", "2026-11-12", "用户习惯用 justfile 管理命令",
         "每个仓库根目录放一个 justfile，常用的构建、测试、发布命令都写成配方，不用 npm scripts。"),
    ]),
    ("en-prefers", [
        ("user_prefers_fish", "user", "2026-10-05", "The user prefers the fish shell",
         "Write shell snippets for fish, not bash: set -x VAR value, and no $(...) syntax."),
        ("user_likes_fish", "user", "2026-11-14", "The user likes using the fish shell",
         "Write shell snippets for fish, not bash: set -x VAR value, and no $(...) syntax."),
    ]),
    ("en-brief", [
        ("feedback_brief_replies", "feedback", "2026-10-08", "Keep replies brief",
         "The user reads on a phone between meetings. Two or three sentences, then stop; no "
         "recap of the question and no closing offer to help further."),
        ("feedback_short_responses", "feedback", "2026-11-18", "Keep responses short",
         "The user reads on a phone between meetings. Two or three sentences, then stop; no "
         "recap of the question and no closing offer to help further."),
    ]),
    ("zh-concise", [
        ("feedback_zh_concise", "feedback", "2026-10-09", "回答要简洁",
         "用户不喜欢长篇大论，先给结论，再用两三句话说明理由，不要重复问题。"),
        ("feedback_zh_brief", "feedback", "2026-11-19", "回复保持简短",
         "用户不喜欢长篇大论，先给结论，再用两三句话说明理由，不要重复问题。"),
    ]),
    ("en-no-fake-queue", [
        ("feedback_no_fake_queue", "feedback", "2026-10-10",
         "Never fake the message queue in integration tests",
         "Integration tests talk to a real RabbitMQ started by docker compose. A faked queue "
         "hid an ordering bug that reached production in March."),
        ("feedback_real_queue", "feedback", "2026-11-20",
         "Do not stub the message queue in integration tests",
         "Integration tests talk to a real RabbitMQ started by docker compose. A faked queue "
         "hid an ordering bug that reached production in March."),
    ]),
]

# Claude Code's own format (name/description/type, `modified`) beside sage-mem's own.
CLAUDE_TWIN: list[tuple[str, str]] = [
    ("feedback_zh_commit_language",
     "---\ndescription: 提交信息用英文写\ncategory: feedback\ncreated: 2026-10-11\n"
     "updated: 2026-10-11T09:00:00Z\n---\n\n"
     "提交信息一律用英文，祈使句开头，第一行不超过七十二个字符，正文说明为什么改。\n"),
    ("commit_messages_in_english",
     "---\nname: commit messages in English\ndescription: 提交信息要用英文写\ntype: feedback\n"
     "modified: 2026-11-21T08:00:00.000Z\n---\n\n"
     "提交信息一律用英文，祈使句开头，第一行不超过七十二个字符，正文说明为什么改。\n"),
]

# (old, new): the newer one must be proposed as the one that stands.
CONTRADICTIONS: list[tuple[str, list[Row]]] = [
    ("en-editor", [
        ("user_editor_sublime", "user", "2026-10-03", "The user's editor is Sublime Text",
         "Give keyboard shortcuts for Sublime Text when explaining editor actions."),
        ("user_editor_helix", "user", "2026-11-24", "The user's editor is now Helix",
         "Give keyboard shortcuts for Helix when explaining editor actions; the modal keys."),
    ]),
    ("zh-theme", [
        ("user_zh_theme_light", "user", "2026-10-06", "用户的终端用浅色主题",
         "终端和编辑器都用浅色主题，截图时注意对比度。"),
        ("user_zh_theme_dark", "user", "2026-11-23", "用户的终端现在用深色主题",
         "终端和编辑器都用深色主题，截图时注意对比度。"),
    ]),
    ("zh-duration", [
        ("project_zh_review_two_hours", "project", "2026-10-07", "每周代码评审会开两个小时",
         "评审会在周三下午，大家提前读完待评审的合并请求。"),
        ("project_zh_review_one_hour", "project", "2026-11-25", "每周代码评审会改为开一个小时",
         "评审会在周三下午，大家提前读完待评审的合并请求，时间压缩了。"),
    ]),
    ("en-retro-moved", [
        ("project_retro_monday", "project", "2026-10-12", "The sprint retro is on Monday afternoon",
         "Everyone brings one thing that went well and one to change."),
        ("project_retro_friday", "project", "2026-11-26", "Sprint retro happens Friday afternoon",
         "Everyone brings one thing that went well and one to change; it moved to fit the "
         "release train."),
    ]),
    ("across-categories", [
        ("user_tabs_width_eight", "user", "2026-10-13", "The user sets tab width to 8 in Go files",
         "gofmt output is viewed with tabs eight columns wide."),
        ("feedback_tabs_width_four", "feedback", "2026-11-27",
         "Set tab width to 4 in Go files",
         "The user asked for tabs four columns wide when showing Go code."),
    ]),
]

# Must never merge (they differ in a fact), however alike they read.
DISTINCT: list[list[Row]] = [
    [("project_limit_500", "project", "2026-11-25", "The upload limit is 500 MB per file",
      "Larger files are rejected by the gateway with a 413."),
     ("project_limit_5000", "project", "2026-11-25", "The upload limit is 5000 MB per file",
      "Larger files are rejected by the gateway with a 413.")],
    [("feedback_do_log", "feedback", "2026-11-25", "Log the request body in debug builds",
      "It helps to reproduce customer reports locally."),
     ("feedback_do_not_log", "feedback", "2026-11-25",
      "Do not log the request body in debug builds",
      "It helps to reproduce customer reports locally.")],
    [("project_region_ap", "project", "2026-11-25", "The replica runs in ap-south-1",
      "Failover is manual and takes about ten minutes."),
     ("project_region_sa", "project", "2026-11-25", "The replica runs in sa-east-1",
      "Failover is manual and takes about ten minutes.")],
    [("user_zh_two_kids", "user", "2026-11-25", "用户有两个孩子", "周末常带孩子去公园。"),
     ("user_zh_three_kids", "user", "2026-11-25", "用户有三个孩子", "周末常带孩子去公园。")],
    [("user_zh_manager_liu", "user", "2026-11-25", "用户的经理是刘洋",
      "周报发给经理，抄送团队，每周五下午之前发出。"),
     ("user_zh_manager_liu2", "user", "2026-11-25", "用户的经理是刘阳",
      "周报发给经理，抄送团队，每周五下午之前发出。")],
    [("project_zh_canary", "project", "2026-11-25", "新版本先发到灰度环境",
      "观察一天没有告警再继续，出问题就回滚。"),
     ("project_zh_preprod", "project", "2026-11-25", "新版本先发到预发环境",
      "观察一天没有告警再继续，出问题就回滚。")],
    [("user_contact_anna", "user", "2026-11-25", "The user's accountant is Anna",
      "Tax papers go to her by the end of March each year."),
     ("user_contact_anne", "user", "2026-11-25", "The user's accountant is Anne",
      "Tax papers go to her by the end of March each year.")],
    # one description over bodies whose negation moved (one not, one not, in other places)
    [("user_zh_diet_mild", "user", "2026-11-25", "用户的饮食口味",
      "用户不吃辣，喜欢清淡的菜，推荐餐厅时注意。"),
     ("user_zh_diet_spicy", "user", "2026-11-25", "用户的饮食口味",
      "用户爱吃辣，不喜欢清淡的菜，推荐餐厅时注意。")],
]

# The same fact said twice in other words, over bodies in other words too (issue 29's recall):
# a person wants each pair merged when the rules can prove it, else listed as a possible
# duplicate. Kinds: a place, a preference, a rule with its reason, a schedule, a command, a
# link, a habit; one side negated ("Do not…" / "Avoid…", 不能吃 / 过敏); two across languages.
REWORDED: list[tuple[str, list[Row]]] = [
    ("en-place", [
        ("user_based_montreal", "user", "2026-10-02", "The user is based in Montreal",
         "Works remotely from Montreal, Canada; schedule calls in Eastern Time."),
        ("user_lives_montreal", "user", "2026-11-10", "User lives and works in Montreal",
         "Remote, living in Montreal (Canada): meetings should fit Eastern Time."),
    ]),
    ("en-why-first", [
        ("feedback_reasoning_first", "feedback", "2026-10-03",
         "Explain the reasoning before showing code",
         "The user wants to understand the approach before reading any code, so open with a "
         "short explanation of why it works."),
        ("feedback_why_then_code", "feedback", "2026-11-11", "Give the why first, then the code",
         "Open answers with why the change works and only then paste the code: the user reads "
         "the explanation of the approach first."),
    ]),
    ("en-nightly-refresh", [
        ("project_staging_refresh", "project", "2026-10-04",
         "The staging database is refreshed from production every night",
         "A cron job at 02:00 UTC restores the production dump into the staging database, "
         "with customer emails scrubbed."),
        ("project_nightly_prod_copy", "project", "2026-11-12",
         "Staging DB gets a nightly copy of prod data",
         "Every night at 02:00 UTC the staging database gets a scrubbed restore of the "
         "production dump (customer emails removed)."),
    ]),
    ("en-dashboard-link", [
        ("reference_payment_error_board", "reference", "2026-10-05",
         "Where the payment errors are charted",
         "Failed charges and refund errors are charted at kibana.acme.dev/app/pay-errors."),
        ("reference_kibana_payments", "reference", "2026-11-13",
         "Kibana board for payment failures",
         "The charts of failed charges and refund errors live at "
         "kibana.acme.dev/app/pay-errors."),
    ]),
    ("en-allergy", [
        ("user_peanut_allergy", "user", "2026-10-06", "The user is allergic to peanuts",
         "Severe peanut allergy: never suggest recipes or snacks that contain peanuts."),
        ("user_no_peanuts", "user", "2026-11-14", "Peanuts are off the menu for the user",
         "The user cannot eat peanuts (an allergy), so leave them out of any recipe idea or "
         "snack."),
    ]),
    ("en-spelling", [
        ("feedback_british_spelling", "feedback", "2026-10-07", "Use British spelling in docs",
         "Write colour, organise and licence (the noun) in all documentation; the team and "
         "its readers are in London."),
        ("feedback_uk_english_docs", "feedback", "2026-11-15",
         "Documentation follows UK English spelling",
         "Docs use UK spelling: colour not color, organise not organize, licence as the noun; "
         "the readers are in London."),
    ]),
    ("en-obvious-comments", [
        ("feedback_no_restating_comments", "feedback", "2026-10-08",
         "Do not write comments that restate the code",
         "A comment should say why, not what: the user deletes comments like '# increment i' "
         "that repeat what the line does."),
        ("feedback_avoid_obvious_comments", "feedback", "2026-11-16",
         "Avoid obvious comments that repeat what the code does",
         "Comments say why, never what the line already says; the user removes ones like "
         "'# increment i'."),
    ]),
    ("en-timezone", [
        ("user_pacific_time", "user", "2026-10-09", "The user's timezone is US Pacific",
         "Lives in California; give times in Pacific time and avoid meetings before 8am."),
        ("user_california_hours", "user", "2026-11-17", "User keeps California hours",
         "Based in California, on Pacific time: no meetings before 8am, times given in "
         "Pacific time."),
    ]),
    ("en-docs-build", [
        ("project_docs_locally", "project", "2026-10-10", "Building the docs locally",
         "Run `mkdocs serve` from the repository root and open localhost:8000 to see them."),
        ("project_mkdocs_preview", "project", "2026-11-18",
         "Preview documentation with mkdocs serve",
         "From the repository root, `mkdocs serve` builds the docs and serves them on "
         "localhost:8000."),
    ]),
    ("en-small-prs", [
        ("feedback_small_prs", "feedback", "2026-10-11", "Prefer small pull requests",
         "One change per pull request, under about 300 lines, so review takes minutes, "
         "not an afternoon."),
        ("feedback_focused_prs", "feedback", "2026-11-19", "Keep each PR small and focused",
         "A pull request should hold one change and stay under about 300 lines: reviews then "
         "take minutes rather than an afternoon."),
    ]),
    ("en-laptop", [
        ("user_small_screen", "user", "2026-10-12",
         "The user reads code on a small laptop screen",
         "A 13-inch laptop with no external monitor: keep code lines short and avoid wide "
         "tables."),
        ("user_no_monitor", "user", "2026-11-20",
         "User codes on a laptop without an external display",
         "Only a 13-inch laptop, no monitor: wide tables and long code lines do not fit."),
    ]),
    ("en-never-push", [
        ("feedback_no_push_main", "feedback", "2026-10-13", "Never push directly to main",
         "Every change to main goes through a pull request with review."),
        ("feedback_pr_for_main", "feedback", "2026-11-21",
         "Changes to main always go through a pull request",
         "No direct pushes to main: open a PR and get a review."),
    ]),
    ("zh-city", [
        ("user_zh_hangzhou", "user", "2026-10-02", "用户住在杭州",
         "用户在杭州工作和生活，约时间请按北京时间。"),
        ("user_zh_base_hangzhou", "user", "2026-11-10", "用户的常住地是杭州",
         "常住杭州，开会时间按北京时间安排。"),
    ]),
    ("zh-typescript", [
        ("feedback_zh_ts_examples", "feedback", "2026-10-03", "代码示例用 TypeScript 写",
         "团队的前后端都是 TypeScript，示例代码不要用 JavaScript，类型要写全。"),
        ("feedback_zh_examples_in_ts", "feedback", "2026-11-11", "示例代码请使用 TypeScript",
         "前后端统一用 TypeScript，给示例时类型写完整，别给 JavaScript 版本。"),
    ]),
    ("zh-backup", [
        ("project_zh_db_backup", "project", "2026-10-04", "每天凌晨备份数据库",
         "凌晨两点定时任务把数据库备份到对象存储，保留最近的备份。"),
        ("project_zh_nightly_backup", "project", "2026-11-12", "数据库每晚自动备份",
         "每天夜里两点由定时任务自动备份数据库，备份文件存到对象存储。"),
    ]),
    ("zh-unit-tests", [
        ("feedback_zh_tests_before_commit", "feedback", "2026-10-05", "提交前先跑单元测试",
         "每次提交代码之前先在本地运行单元测试，全部通过再提交，省得流水线失败。"),
        ("feedback_zh_run_tests_first", "feedback", "2026-11-13", "提交代码之前要先运行单测",
         "本地先把单测跑一遍，全部通过了再提交，避免流水线变红。"),
    ]),
    ("zh-peanut", [
        ("user_zh_peanut_allergy", "user", "2026-10-06", "用户对花生过敏",
         "推荐菜谱或零食时不要包含花生，用户对花生严重过敏。"),
        ("user_zh_no_peanut", "user", "2026-11-14", "用户不能吃花生",
         "用户花生过敏，推荐菜谱和零食都要避开花生。"),
    ]),
    ("zh-deploy-doc", [
        ("project_zh_deploy_doc", "project", "2026-10-07", "部署文档在 Confluence 上",
         "上线步骤、回滚方法和值班联系人都写在 Confluence 的部署页面里。"),
        ("project_zh_release_steps", "project", "2026-11-15", "上线流程写在 Confluence 的部署页面",
         "Confluence 部署页面记录了上线步骤、回滚方法和值班联系人。"),
    ]),
    ("zh-chinese-answers", [
        ("feedback_zh_answer_chinese", "feedback", "2026-10-08", "请用中文回答问题",
         "用户读中文更快，解释和说明都用中文，代码里的标识符保持英文。"),
        ("feedback_zh_explain_chinese", "feedback", "2026-11-16", "解释说明一律用中文",
         "说明和解释都写中文，用户读得快；代码标识符仍然用英文。"),
    ]),
    ("zh-backend", [
        ("user_zh_backend", "user", "2026-10-09", "用户是后端工程师",
         "主要写 Go 和数据库相关的服务端代码，前端接触不多。"),
        ("user_zh_server_side", "user", "2026-11-17", "用户主要做后端开发",
         "日常写 Go 服务和数据库相关的代码，很少碰前端。"),
    ]),
    ("cross-colour", [
        ("user_colour_blind", "user", "2026-10-10", "The user is red-green colour-blind",
         "Never tell red from green apart by colour alone in charts: add shapes or labels."),
        ("user_zh_colour_blind", "user", "2026-11-18", "用户是红绿色盲",
         "图表里不要只靠红色和绿色区分，要加形状或文字标签。"),
    ]),
    ("cross-vpn", [
        ("reference_vpn_setup", "reference", "2026-10-11", "How to connect to the office VPN",
         "Install WireGuard and import the profile from vpn.acme.dev; ask IT for a key."),
        ("reference_zh_vpn", "reference", "2026-11-19", "连接公司 VPN 的方法",
         "安装 WireGuard，从 vpn.acme.dev 导入配置文件，密钥找 IT 要。"),
    ]),
    # -- a second folder, agents' notes over months: twins said anew (a command, a rule with
    # its **Why:**, a person's habit, a page to open; two over the very same body) --
    ("en-pnpm", [
        ("project_web_pnpm", "project", "2026-09-14", "Use pnpm, not npm, in the web repo",
         "The lockfile is pnpm-lock.yaml; run pnpm install, never npm install, or CI rejects "
         "the lockfile."),
        ("project_web_package_manager", "project", "2026-11-03",
         "The web repo's package manager is pnpm",
         "Install with pnpm install (the lockfile is pnpm-lock.yaml); npm install makes CI "
         "reject the lockfile."),
    ]),
    ("en-page-db", [
        ("reference_db_pager", "reference", "2026-09-20", "Who to page for database incidents",
         "Page the data-platform on-call through PagerDuty service DP-DB, then post in "
         "#data-oncall."),
        ("reference_db_incident_oncall", "reference", "2026-11-06",
         "Paging the on-call for a database incident",
         "PagerDuty service DP-DB reaches the data-platform on-call; also post in #data-oncall."),
    ]),
    ("en-squash", [
        ("feedback_squash_merge", "feedback", "2026-09-22", "Squash commits when merging a PR",
         "The user wants one commit per pull request on main, so use squash merge.\n\n"
         "**Why:** bisecting main is easier with one commit per change."),
        ("feedback_always_squash", "feedback", "2026-11-08", "Always squash-merge pull requests",
         "One commit per pull request on main: squash merge every time.\n\n"
         "**Why:** bisecting main is easier with one commit per change."),
    ]),
    ("en-metric", [
        ("user_metric_units", "user", "2026-09-25", "The user prefers metric units",
         "Give distances in kilometres and temperatures in Celsius; the user never thinks in "
         "miles or Fahrenheit."),
        ("user_uses_metric", "user", "2026-11-09", "Use metric units with the user",
         "Kilometres and Celsius, not miles or Fahrenheit: the user never thinks in imperial "
         "units."),
    ]),
    ("en-migrations-same-body", [
        ("project_run_migrations", "project", "2026-10-01",
         "Run database migrations with alembic upgrade head",
         "From the api/ folder: `alembic upgrade head`. New revisions go in "
         "api/migrations/versions."),
        ("project_alembic_migrations", "project", "2026-11-12",
         "Database migrations: alembic upgrade head",
         "From the api/ folder: `alembic upgrade head`. New revisions go in "
         "api/migrations/versions."),
    ]),
    ("en-type-hints", [
        ("feedback_type_hints", "feedback", "2026-10-03",
         "Add type hints to new Python functions",
         "Every new function gets annotated arguments and return type; mypy runs in CI."),
        ("feedback_annotate_functions", "feedback", "2026-11-14",
         "New Python functions need type annotations",
         "Annotate the arguments and the return type of every new function: CI runs mypy."),
    ]),
    ("zh-pnpm", [
        ("project_zh_pnpm", "project", "2026-09-15", "前端项目用 pnpm 管理依赖",
         "锁文件是 pnpm-lock.yaml，安装依赖用 pnpm install，不要用 npm install。"),
        ("project_zh_package_manager", "project", "2026-11-04", "前端仓库的包管理器是 pnpm",
         "依赖一律用 pnpm install 安装，锁文件是 pnpm-lock.yaml，别用 npm install。"),
    ]),
    ("zh-standup", [
        ("project_zh_standup", "project", "2026-09-21", "每天上午十点开站会",
         "站会十五分钟，每人说昨天做了什么、今天打算做什么、有没有阻塞。"),
        ("project_zh_standup_time", "project", "2026-11-07", "站会时间是每天上午十点",
         "每天十点的站会十五分钟，每人讲昨天做了什么、今天做什么、有什么阻塞。"),
    ]),
    ("zh-vegetarian", [
        ("user_zh_vegetarian", "user", "2026-09-23", "用户吃素",
         "推荐餐厅或菜谱时只推荐素食，不要有肉和海鲜。"),
        ("user_zh_vegetarian_diet", "user", "2026-11-10", "用户是素食者",
         "推荐菜谱和餐厅时只给素食，肉类和海鲜都不要。"),
    ]),
    ("zh-no-emoji", [
        ("feedback_zh_no_emoji", "feedback", "2026-09-26", "回复里不要用表情符号",
         "用户觉得表情符号不专业，回答和提交信息里都不要加。"),
        ("feedback_zh_emoji_off", "feedback", "2026-11-11", "回答中别加表情符号",
         "回答和提交信息里都不要加表情符号，用户觉得不专业。"),
    ]),
    ("zh-loki-same-body", [
        ("reference_zh_prod_logs", "reference", "2026-10-02", "生产环境的日志在 Loki 里查",
         "打开 grafana.acme.cn 的 Explore，数据源选 Loki，按 app 标签过滤。"),
        ("reference_zh_loki_logs", "reference", "2026-11-13", "在 Loki 上查生产日志",
         "打开 grafana.acme.cn 的 Explore，数据源选 Loki，按 app 标签过滤。"),
    ]),
    ("zh-review", [
        ("feedback_zh_one_reviewer", "feedback", "2026-10-04", "合并前至少要一个人审核",
         "每个合并请求都要至少一位同事批准才能合并，紧急修复也一样。"),
        ("feedback_zh_approval_needed", "feedback", "2026-11-15", "合并请求需要至少一位同事批准",
         "紧急修复也不例外：至少一位同事审核批准之后才能合并。"),
    ]),
]

# Different facts in alike words (and a shared topic): never merged, and not listed as
# possible duplicates either (a pair written on two days may be listed as possibly
# contradicting: that is another rule). Kinds: another environment, person, language, number,
# tool, subject, time; one says not; a family of one subject per service.
LOOKALIKE: list[list[Row]] = [
    [("project_deploy_staging_cmd", "project", "2026-11-02",
      "Deploy to staging with make deploy-staging",
      "The staging deploy builds the image and rolls it out to the staging cluster."),
     ("project_deploy_prod_cmd", "project", "2026-11-02",
      "Production deploys run through make release",
      "The release target builds the image, tags it and rolls it out to the production "
      "cluster.")],
    [("user_sister_porto", "user", "2026-11-03", "The user's sister lives in Porto",
      "They visit her a few times a year."),
     ("user_brother_porto", "user", "2026-11-03", "User has a brother living in Porto",
      "They visit him a few times a year.")],
    [("feedback_go_tabs", "feedback", "2026-11-04", "Indent Go code with tabs",
      "gofmt decides: tabs for indentation in every Go file."),
     ("feedback_python_spaces", "feedback", "2026-11-04",
      "Python files are indented with four spaces",
      "Follow PEP 8: spaces for indentation in every Python file.")],
    [("project_rate_limit_minute", "project", "2026-11-05",
      "The API allows 60 requests per minute",
      "Clients over the limit get a 429 and must back off."),
     ("project_rate_limit_key", "project", "2026-11-05",
      "Rate limiting: 600 requests a minute per API key",
      "Over the limit, the API answers 429 and the client backs off.")],
    [("user_terminal_light", "user", "2026-11-06", "The user's terminal uses a light theme",
      "Screenshots of the terminal have a white background."),
     ("user_editor_dark", "user", "2026-11-06", "The user's editor is in dark mode",
      "Screenshots of the editor have a dark background.")],
    [("project_backup_retention", "project", "2026-11-07", "Backups are kept for 30 days",
      "Older backups are deleted by a lifecycle rule on the bucket."),
     ("project_log_retention", "project", "2026-11-07", "Logs are retained for 30 days",
      "Older log files are deleted by a lifecycle rule on the bucket.")],
    [("feedback_lint_before_commit", "feedback", "2026-11-08",
      "Always run the linter before committing",
      "ruff check on the changed files; fix what it reports first."),
     ("feedback_no_format_vendored", "feedback", "2026-11-08",
      "Never run the formatter on vendored code",
      "Files under vendor/ stay as upstream wrote them; formatting them makes diffs huge.")],
    [("project_mobile_flutter", "project", "2026-11-09", "The mobile app is built with Flutter",
      "One codebase for iOS and Android, in Dart."),
     ("project_web_react", "project", "2026-11-09", "The web app is written in React",
      "A single-page app in TypeScript, served from the CDN.")],
    [("user_learning_rust", "user", "2026-11-10", "The user is learning Rust",
      "Explain borrow checker errors step by step."),
     ("user_teaches_rust", "user", "2026-11-10", "The user teaches Rust at a bootcamp",
      "Examples can assume a teaching context, with exercises.")],
    [("project_integration_nightly", "project", "2026-11-11",
      "Integration tests run nightly on CI",
      "The nightly job spins up the whole stack in docker compose."),
     ("project_unit_on_push", "project", "2026-11-11", "Unit tests run on every push in CI",
      "The push job runs pytest on the unit suite only.")],
    [("reference_runbook_billing", "reference", "2026-11-12",
      "Runbook for a billing service outage",
      "Check the payment provider status page first, then the billing workers' queue."),
     ("reference_runbook_search", "reference", "2026-11-12",
      "Runbook for a search service outage",
      "Check the Elasticsearch cluster health first, then the indexing workers' queue.")],
    [("user_coffee_morning", "user", "2026-11-13", "The user drinks coffee every morning",
      "Two cups before standup."),
     ("user_no_coffee_afternoon", "user", "2026-11-13", "The user avoids coffee after 2pm",
      "Caffeine late in the day keeps them awake.")],
    [("project_zh_test_mysql", "project", "2026-11-02", "测试环境的数据库是 MySQL",
      "测试环境用 MySQL 8，数据每周重置一次。"),
     ("project_zh_prod_postgres", "project", "2026-11-02", "生产环境用的是 PostgreSQL 数据库",
      "生产环境的 PostgreSQL 有一主两从，数据每天备份。")],
    [("user_zh_daughter_school", "user", "2026-11-03", "用户的女儿在上小学",
      "下午四点要去学校接她。"),
     ("user_zh_son_school", "user", "2026-11-03", "用户的儿子在读初中",
      "晚上要辅导他写作业。")],
    [("project_zh_monday_meeting", "project", "2026-11-04", "每周一上午开周会",
      "周会过一遍上周进度和本周计划。"),
     ("project_zh_friday_review", "project", "2026-11-04", "每周五下午做代码评审",
      "评审本周合并的代码，提前读完合并请求。")],
    [("project_zh_frontend_vue", "project", "2026-11-05", "前端用 Vue 写",
      "面向用户的前端页面都用 Vue 3 和 Vite。"),
     ("project_zh_admin_react", "project", "2026-11-05", "后台管理系统用 React 写",
      "内部的后台管理系统用 React 和 Ant Design。")],
    [("user_zh_green_tea", "user", "2026-11-06", "用户喜欢喝绿茶", "每天下午泡一壶龙井。"),
     ("user_zh_no_coffee", "user", "2026-11-06", "用户不喝咖啡", "喝了咖啡会心慌。")],
    [("feedback_zh_notify_ops", "feedback", "2026-11-07", "发布前要先通知运维",
      "提前一天在运维群里说明发布内容和时间。"),
     ("feedback_zh_notify_pm", "feedback", "2026-11-07", "发布后要通知产品经理",
      "上线完成后在产品群里同步发布内容。")],
    [("project_zh_log_days", "project", "2026-11-08", "日志保留七天",
      "超过七天的日志由定时任务清理。"),
     ("project_zh_backup_days", "project", "2026-11-08", "备份保留三十天",
      "超过三十天的备份由定时任务清理。")],
    [("user_zh_mac_code", "user", "2026-11-09", "用户用 Mac 写代码",
      "工作电脑是 MacBook Pro，终端用 iTerm2。"),
     ("user_zh_windows_games", "user", "2026-11-09", "用户在家用 Windows 玩游戏",
      "家里的台式机装的是 Windows，只用来玩游戏。")],
    # -- the second folder: one fact apart (an environment, before / after, a role, a negation,
    # a version, a unit, a user name, a day of the month, a command, a clock, a name) --
    [("project_db_host_staging", "project", "2026-10-20",
      "The staging database host is db-staging.internal:5432",
      "Connect through the bastion; credentials are in the team vault."),
     ("project_db_host_prod", "project", "2026-10-20",
      "The production database host is db-prod.internal:5432",
      "Connect through the bastion; credentials are in the team vault.")],
    [("feedback_migrate_before_deploy", "feedback", "2026-10-21",
      "Run the migrations before deploying the API",
      "Otherwise new code reads columns that do not exist yet."),
     ("feedback_migrate_after_deploy", "feedback", "2026-10-21",
      "Run the migrations after deploying the API",
      "Otherwise new code reads columns that do not exist yet.")],
    [("user_manager_priya", "user", "2026-10-22", "The user's manager is Priya",
      "One-to-one every other Thursday."),
     ("user_mentor_priya", "user", "2026-10-22", "The user's mentor is Priya",
      "One-to-one every other Thursday.")],
    [("feedback_emoji_commits", "feedback", "2026-10-23",
      "The user wants emoji in commit messages",
      "A gitmoji prefix on the first line of every commit."),
     ("feedback_no_emoji_commits", "feedback", "2026-10-23",
      "The user does not want emoji in commit messages",
      "A gitmoji prefix on the first line of every commit.")],
    [("project_django_32", "project", "2026-10-24",
      "The legacy service is pinned to Django 3.2",
      "Upgrading needs the custom auth backend rewritten first."),
     ("project_django_42", "project", "2026-10-24",
      "The legacy service is pinned to Django 4.2",
      "Upgrading needs the custom auth backend rewritten first.")],
    [("project_upload_10mb", "project", "2026-10-25", "Uploads are capped at 10 MB",
      "The gateway answers 413 above the cap."),
     ("project_upload_10gb", "project", "2026-10-25", "Uploads are capped at 10 GB",
      "The gateway answers 413 above the cap.")],
    [("user_allergic_cats", "user", "2026-10-26", "The user is allergic to cats",
      "Mention it when suggesting holiday rentals."),
     ("user_allergic_dogs", "user", "2026-10-26", "The user is allergic to dogs",
      "Mention it when suggesting holiday rentals.")],
    [("reference_bastion_ubuntu", "reference", "2026-10-27",
      "SSH to the bastion as ubuntu",
      "ssh -i ~/.ssh/acme.pem to bastion.acme.dev, then hop to the private hosts."),
     ("reference_bastion_ec2_user", "reference", "2026-10-27",
      "SSH to the bastion as ec2-user",
      "ssh -i ~/.ssh/acme.pem to bastion.acme.dev, then hop to the private hosts.")],
    [("project_invoices_1st", "project", "2026-10-28",
      "Invoices are sent on the 1st of the month",
      "The billing job emails PDF invoices to every customer."),
     ("project_invoices_15th", "project", "2026-10-28",
      "Invoices are sent on the 15th of the month",
      "The billing job emails PDF invoices to every customer.")],
    [("project_build_frontend", "project", "2026-10-29",
      "Build the frontend with npm run build",
      "The output lands in dist/ and is served by nginx."),
     ("project_build_frontend_prod", "project", "2026-10-29",
      "Build the frontend with npm run build:prod",
      "The output lands in dist/ and is served by nginx.")],
    [("project_backup_utc", "project", "2026-10-30", "Backups run at 02:00 UTC",
      "The job dumps the database to the backups bucket."),
     ("project_backup_local", "project", "2026-10-30", "Backups run at 02:00 local time",
      "The job dumps the database to the backups bucket.")],
    [("project_sdk_v2_deprecated", "project", "2026-10-31", "Client SDK v2 is deprecated",
      "Point customers at the migration guide on the docs site."),
     ("project_sdk_v3_deprecated", "project", "2026-10-31", "Client SDK v3 is deprecated",
      "Point customers at the migration guide on the docs site.")],
    [("project_zh_redis_6379", "project", "2026-10-20", "测试环境的 Redis 端口是 6379",
      "连接前先开 VPN，密码在团队密码库里。"),
     ("project_zh_redis_6380", "project", "2026-10-20", "测试环境的 Redis 端口是 6380",
      "连接前先开 VPN，密码在团队密码库里。")],
    [("user_zh_model3", "user", "2026-10-21", "用户的车是特斯拉 Model 3",
      "充电一般在公司楼下的超充站。"),
     ("user_zh_modely", "user", "2026-10-21", "用户的车是特斯拉 Model Y",
      "充电一般在公司楼下的超充站。")],
    [("project_zh_weekly_zhangwei", "project", "2026-10-22", "周报每周五发给张伟",
      "用团队模板，写本周完成、下周计划和风险。"),
     ("project_zh_weekly_zhangwei2", "project", "2026-10-22", "周报每周五发给张薇",
      "用团队模板，写本周完成、下周计划和风险。")],
    [("project_zh_timeout_seconds", "project", "2026-10-23", "接口超时设为 30 秒",
      "超时后返回 504，客户端自己重试。"),
     ("project_zh_timeout_minutes", "project", "2026-10-23", "接口超时设为 30 分钟",
      "超时后返回 504，客户端自己重试。")],
    [("user_zh_no_seafood", "user", "2026-10-24", "用户不吃海鲜",
      "推荐餐厅时注意口味。"),
     ("user_zh_likes_seafood", "user", "2026-10-24", "用户爱吃海鲜",
      "推荐餐厅时注意口味。")],
    [("project_zh_orders_beijing", "project", "2026-10-25", "订单库部署在北京机房",
      "主库一台，从库两台，延迟一般在一秒以内。"),
     ("project_zh_orders_shanghai", "project", "2026-10-25", "订单库部署在上海机房",
      "主库一台，从库两台，延迟一般在一秒以内。")],
    [("project_zh_jdk17", "project", "2026-10-26", "后端服务用 JDK 17",
      "本地开发请装同一个版本，镜像里也是这个版本。"),
     ("project_zh_jdk21", "project", "2026-10-26", "后端服务用 JDK 21",
      "本地开发请装同一个版本，镜像里也是这个版本。")],
    [("user_zh_daughter_grade3", "user", "2026-10-27", "用户的女儿今年上三年级",
      "工作日下午四点半要去接孩子。"),
     ("user_zh_son_grade3", "user", "2026-10-27", "用户的儿子今年上三年级",
      "工作日下午四点半要去接孩子。")],
    [("project_zh_branch_develop", "project", "2026-10-28", "开发分支叫 develop",
      "功能分支从开发分支切出，合并回开发分支。"),
     ("project_zh_branch_dev", "project", "2026-10-28", "开发分支叫 dev",
      "功能分支从开发分支切出，合并回开发分支。")],
    [("project_zh_test_before_release", "project", "2026-10-29", "发版前在预发环境回归一遍",
      "回归用例在测试平台上，一般跑四十分钟。"),
     ("project_zh_test_after_release", "project", "2026-10-29", "发版后在生产环境回归一遍",
      "回归用例在测试平台上，一般跑四十分钟。")],
    # how many, and "only": words the index drops, and a term whose characters stand
    # elsewhere in the same description (标准输出 / 标准错误 beside 日志输出)
    [("feedback_all_tests", "feedback", "2026-10-30", "Run all tests before merging",
      "The CI job runs pytest on the repository before a pull request can be merged."),
     ("feedback_some_tests", "feedback", "2026-10-30", "Run some tests before merging",
      "The CI job runs pytest on the repository before a pull request can be merged.")],
    [("project_only_admins_delete", "project", "2026-10-31", "Only admins can delete projects",
      "Deleting a project removes its data after a thirty day grace period; the audit log "
      "records who did it."),
     ("project_admins_delete", "project", "2026-10-31", "Admins can delete projects",
      "Deleting a project removes its data after a thirty day grace period; the audit log "
      "records who did it.")],
    [("project_deploy_both_approvals", "project", "2026-11-01", "Deploys need both approvals",
      "Approvals come from the service owner and the on-call engineer through the deploy bot."),
     ("project_deploy_either_approval", "project", "2026-11-01",
      "Deploys need either approval",
      "Approvals come from the service owner and the on-call engineer through the deploy bot.")],
    [("project_zh_log_stdout", "project", "2026-11-02", "日志输出到标准输出",
      "服务的日志都按这个约定写，收集器从这里读取并转发到 Loki，上线前检查一遍配置。"),
     ("project_zh_log_stderr", "project", "2026-11-02", "日志输出到标准错误",
      "服务的日志都按这个约定写，收集器从这里读取并转发到 Loki，上线前检查一遍配置。")],
    [("user_has_a_cat", "user", "2026-11-03", "The user has a cat",
      "Mention pets when planning trips: suggest pet-friendly rentals and sitters nearby."),
     ("user_has_cats", "user", "2026-11-03", "The user has cats",
      "Mention pets when planning trips: suggest pet-friendly rentals and sitters nearby.")],
    [("project_staging_prod_db", "project", "2026-11-04", "Staging uses the prod database",
      "Read-only credentials; heavy queries there are felt by customers, so run them at night."),
     ("project_staging_own_db", "project", "2026-11-04", "Staging uses the staging database",
      "Read-only credentials; heavy queries there are felt by customers, so run them at night.")],
    # The third folder (issue: look-alikes from other angles than the second's): a unit, a
    # sign, a bound, a modality, a scope, a frequency, a tense, who a fact is about, a role,
    # each pair over the very same body. Those marked * (14) were merged before (docs/dream.md).
    *[[(f"{category}_{stem}_{side}", category, day, description, body)
       for side, description in (("a", first), ("b", second))]
      for category, stem, day, first, second, body in [
        ("project", "zh_timeout_unit", "2026-11-05", "超时时间是 500 毫秒", "超时时间是 500 秒",
         "网关超时后取消上游调用，给客户端返回 504，重试由客户端决定。"),  # *
        ("project", "timeout_unit", "2026-11-05", "Request timeout is 500 ms",
         "Request timeout is 500 s",
         "The gateway cancels the upstream call after that and answers 504 to the client."),
        ("project", "zh_timestamp_unit", "2026-11-05", "时间戳用秒存储", "时间戳用毫秒存储",
         "数据库里的 created_at 字段是整数，前端展示时再转成本地时间。"),  # *
        ("user", "utc_offset", "2026-11-06", "The user's timezone is UTC+8",
         "The user's timezone is UTC-8",
         "Schedule calls inside their working hours and write dates with the offset."),  # *
        ("project", "zh_dau", "2026-11-06", "日活用户大约 5 千", "日活用户大约 5 万",
         "数据来自埋点统计，每周一在周报里更新一次。"),
        ("feedback", "tests_must_should", "2026-11-07", "Tests must pass before merging",
         "Tests should pass before merging",
         "The merge button checks the CI status of the last commit on the branch."),  # *
        ("project", "zh_canary_must_may", "2026-11-07", "大版本上线前必须走灰度",
         "大版本上线前可以走灰度", "灰度先放百分之五的流量，观察半小时错误率再全量。"),
        ("feedback", "tabs_scope", "2026-11-08", "Use tabs in this repo", "Use tabs in all repos",
         "The editorconfig file sets the indentation; the formatter follows it on save."),  # *
        ("feedback", "spaces_scope", "2026-11-08", "Use four spaces in this project",
         "Use four spaces in every project",
         "A pre-commit hook reformats staged files; reviewers never comment on indentation."),  # *
        ("feedback", "zh_pnpm_scope", "2026-11-08", "本项目用 pnpm 管理依赖",
         "所有项目都用 pnpm 管理依赖", "锁文件要进仓库，升级依赖单独开一个合并请求。"),
        ("project", "meets_every_other", "2026-11-09", "The team meets every other week",
         "The team meets every week",
         "The meeting goes over the roadmap and open incidents, thirty minutes on the call."),  # *
        ("project", "zh_backup_freq", "2026-11-09", "数据库每天备份", "数据库每周备份",
         "备份文件存到对象存储，保留一个月，恢复步骤写在 wiki 上。"),
        ("project", "retry_once_twice", "2026-11-09", "Retry a failed job once",
         "Retry a failed job twice",
         "The scheduler puts it back in the queue with a backoff of a minute."),
        ("project", "coverage_bound", "2026-11-10", "Coverage must be at least 80%",
         "Coverage must be above 80%",
         "The CI job fails below the bar and posts the report as a comment."),
        ("project", "zh_approval_bound", "2026-11-10", "金额在一万元以上需要审批",
         "金额在一万元以下需要审批", "审批在 OA 系统里提，财务负责人审批通过后才能付款。"),
        ("project", "node_bound", "2026-11-10", "Requires Node 18", "Requires Node >= 18",
         "The engines field in package.json says it; CI runs the matching image."),  # *
        ("project", "zh_replicas_bound", "2026-11-10", "生产环境跑 3 个副本",
         "生产环境至少跑 3 个副本", "副本数写在服务的 helm values 里，改了要重新部署。"),  # *
        ("user", "works_worked", "2026-11-11", "The user works at Google",
         "The user worked at Google",
         "Examples about large monorepos and internal tooling land well with them."),  # *
        ("user", "zh_works_before", "2026-11-11", "用户在谷歌工作", "用户以前在谷歌工作",
         "讲大型单仓库和内部工具的例子时用户比较有共鸣。"),  # *
        ("user", "allergic_whose", "2026-11-12", "The user is allergic to shellfish",
         "The user's son is allergic to shellfish",
         "Check restaurant menus and recipes for shrimp and crab before suggesting them."),
        ("user", "zh_allergic_whose", "2026-11-12", "用户对芒果过敏", "用户的儿子对芒果过敏",
         "推荐甜品和饮料时先确认里面没有芒果。"),  # *
        ("user", "manager_whose", "2026-11-12", "The user's manager is Alice",
         "The user is Alice's manager", "One-to-one every other Thursday on the video call."),  # *
        ("user", "zh_lead_role", "2026-11-13", "用户是技术负责人", "用户向技术负责人汇报",
         "架构问题在每周四的设计评审上讨论。"),  # *
        ("user", "lead_role", "2026-11-13", "The user is the tech lead",
         "The user reports to the tech lead",
         "Architecture questions go through the weekly design review on Thursdays."),
        ("project", "zh_owner_person", "2026-11-13", "我负责支付模块", "他负责支付模块",
         "支付模块的告警和发布都找负责人，值班表在 wiki 上。"),
        ("project", "rate_limit_per", "2026-11-14", "The rate limit is per user",
         "The rate limit is per team",
         "Requests over the limit get a 429 with a Retry-After header in seconds."),
        ("project", "api_port", "2026-11-14", "The API listens on port 8080",
         "The API listens on port 8081",
         "The load balancer forwards HTTPS traffic to it inside the private network."),
        # The fourth folder: a hedge, a place qualifier, a direction, whose, how many, a time
        # of day, a permission, first / last, read / write, each over the very same body.
        # Those marked * (13) were merged before, + (4) listed as possible duplicates.
        ("project", "build_about", "2026-11-15", "The build takes about 5 minutes",
         "The build takes 5 minutes",
         "CI caches dependencies between runs; a cold cache adds the download time."),  # *
        ("project", "zh_build_about", "2026-11-15", "构建大约要 5 分钟", "构建要 5 分钟",
         "CI 会缓存依赖，缓存失效时还要加上下载的时间。"),  # *
        ("project", "zh_logs_about", "2026-11-15", "日志保留 7 天左右", "日志保留 7 天",
         "过期的日志由定时任务清理，要查更早的记录去对象存储的归档里找。"),  # *
        ("user", "sometimes_weekends", "2026-11-16", "The user sometimes works on weekends",
         "The user works on weekends",
         "Do not assume they are away on Saturday; ask before scheduling anything."),  # +
        ("user", "hardly_coffee", "2026-11-16", "The user hardly drinks coffee",
         "The user drinks coffee",
         "Suggest meeting places with a choice of drinks; they like quiet corners."),  # *
        ("user", "zh_sometimes_overtime", "2026-11-16", "用户有时周末加班", "用户周末加班",
         "周末约时间前先问一下，别默认用户有空。"),  # *
        ("user", "zh_rarely_coffee", "2026-11-16", "用户很少喝咖啡", "用户喝咖啡",
         "约见面时选饮品多一些的地方，用户喜欢安静的角落。"),  # *
        ("project", "usually_afternoon", "2026-11-16", "Deploys usually happen in the afternoon",
         "Deploys always happen in the afternoon",
         "The deploy bot posts in the release channel when a rollout starts and ends."),
        ("project", "zh_first_last_run", "2026-11-16", "第一次迁移很慢", "最后一次迁移很慢",
         "迁移会重写事件表，跑的时候盯着从库延迟。"),
        ("project", "team_near", "2026-11-17", "The team is based near Berlin",
         "The team is based in Berlin",
         "Plan meetings in Central European Time and expect the office to close on holidays."),  # *
        ("project", "dc_outside", "2026-11-17", "The data centre is outside Frankfurt",
         "The data centre is in Frankfurt",
         "Latency to the office is a few milliseconds; hardware swaps take a day."),  # +
        ("project", "zh_team_near", "2026-11-17", "团队在上海附近", "团队在上海",
         "开会按北京时间约，节假日办公室不开门。"),  # *
        ("project", "copy_to_from", "2026-11-18", "Copy the config to the server",
         "Copy the config from the server",
         "Use scp with the deploy key; the file holds the feature flags for the service."),  # *
        ("project", "zh_contract_to_from", "2026-11-18", "签好的合同寄给李娜",
         "签好的合同由李娜寄来", "用顺丰寄，单号记在采购表里，原件放财务的柜子。"),  # *
        ("project", "upload_download", "2026-11-18", "Upload backups to S3 every night",
         "Download backups from S3 every night",
         "The job runs from cron on the backup host and logs to the ops channel."),
        ("project", "my_our_key", "2026-11-19", "Use my API key for the sandbox",
         "Use our API key for the sandbox",
         "The key is in the password manager; the sandbox resets its data every Monday."),  # *
        ("project", "their_our_ci", "2026-11-19", "Their CI runs on GitHub Actions",
         "Our CI runs on GitHub Actions",
         "Workflows live in the .github folder; runners are the hosted Ubuntu ones."),  # *
        ("project", "zh_my_our_key", "2026-11-19", "用我的 API 密钥调沙箱",
         "用我们的 API 密钥调沙箱", "密钥在密码管理器里，沙箱每周一清空数据。"),  # *
        ("project", "zh_their_our_ci", "2026-11-19", "他们的 CI 用 Jenkins",
         "我们的 CI 用 Jenkins", "流水线脚本在仓库根目录，构建机是公司机房的两台服务器。"),
        ("project", "few_lot_flaky", "2026-11-20", "The repo has a few flaky tests",
         "The repo has a lot of flaky tests",
         "Flaky tests are tagged in the tracker and rerun once by the CI job."),  # +
        ("project", "zh_few_many_flaky", "2026-11-20", "项目有几个不稳定的测试",
         "项目有很多不稳定的测试", "不稳定的测试在看板上打了标签，CI 失败后自动重跑一次。"),
        ("project", "zh_deploy_am_pm", "2026-11-21", "每天上午部署", "每天下午部署",
         "部署由值班的人在发布频道里发起，出问题先回滚再排查。"),
        ("project", "first_last_run", "2026-11-21", "The first run of the migration is slow",
         "The last run of the migration is slow",
         "It rewrites the events table; watch the replica lag while it runs."),
        ("project", "zh_allow_deny", "2026-11-22", "允许外部访问管理后台", "禁止外部访问管理后台",
         "管理后台在网关上配置访问规则，改动要安全组审批。"),  # +
        ("project", "bot_read_write", "2026-11-22", "The bot has read access to the repo",
         "The bot has write access to the repo",
         "Its token is scoped to one repository and rotated every ninety days."),
    ]],
]


# The second folder's changed facts: (old, new) written weeks apart; the newer one must be
# proposed as the one that stands ("contradiction"), and the two never merged into one.
SUPERSEDED: list[tuple[str, list[Row]]] = [
    ("en-flags-moved", [
        ("project_flags_launchdarkly", "project", "2026-09-10",
         "Feature flags are managed in LaunchDarkly",
         "Every risky change ships behind a flag; the SDK key is in the team vault."),
        ("project_flags_unleash", "project", "2026-11-16",
         "Feature flags moved from LaunchDarkly to Unleash",
         "Flags now live in the self-hosted Unleash at flags.acme.dev; LaunchDarkly is being "
         "cancelled."),
    ]),
    ("en-standup-time", [
        ("project_standup_930", "project", "2026-09-11", "Daily standup is at 9:30",
         "Fifteen minutes on the team call; cameras optional."),
        ("project_standup_1000", "project", "2026-11-17", "Daily standup moved to 10:00",
         "Fifteen minutes on the team call; cameras optional. Moved for the new hires in "
         "Lisbon."),
    ]),
    ("en-city", [
        ("user_lives_berlin", "user", "2026-09-12", "The user lives in Berlin",
         "Schedule calls in Central European Time."),
        ("user_moved_lisbon", "user", "2026-11-18", "The user moved to Lisbon",
         "Schedule calls in Western European Time now."),
    ]),
    ("zh-weekly-moved", [
        ("project_zh_weekly_tuesday", "project", "2026-09-13", "团队周会在周二下午",
         "周会过一遍各自的进度和风险。"),
        ("project_zh_weekly_thursday", "project", "2026-11-19", "团队周会改到周四下午了",
         "周会过一遍各自的进度和风险，因为周二要和客户开会所以改了时间。"),
    ]),
    ("zh-phone", [
        ("user_zh_iphone", "user", "2026-09-14", "用户用的手机是 iPhone 13",
         "截图和操作说明按 iOS 给。"),
        ("user_zh_pixel", "user", "2026-11-20", "用户换了手机，现在用 Pixel 8",
         "截图和操作说明按 Android 给。"),
    ]),
    ("zh-mq", [
        ("project_zh_mq_rabbit", "project", "2026-09-15", "消息队列用的是 RabbitMQ",
         "订单事件都走消息队列，消费者在 worker 服务里。"),
        ("project_zh_mq_kafka", "project", "2026-11-21", "消息队列从 RabbitMQ 换成了 Kafka",
         "订单事件现在都走 Kafka，消费者还在 worker 服务里。"),
    ]),
]

# The second folder's relative dates, each dated against its memory's own day:
# (id, category, created, updated, description, body, [(phrase, as rewritten)]); an empty
# list: the memory is left as it is (a standing rule, a habit, a word its code computes, a
# memory edited on a later day).
DATED: list[tuple[str, str, str, str, str, str, list[tuple[str, str]]]] = [
    ("project_stripe_keys", "project", "2026-11-10", "2026-11-10T16:20:00Z",
     "Stripe API keys rotated after the leak report",
     "Yesterday we rotated the Stripe API keys after the leak report; the webhook secret "
     "was rotated too.",
     [("Yesterday", "Yesterday (2026-11-09)")]),
    ("project_search_disk", "project", "2026-10-15", "2026-10-15T08:05:00Z",
     "The search cluster ran out of disk",
     "Last night the search cluster ran out of disk; we added two data nodes and raised "
     "the watermark alert.",
     [("Last night", "Last night (2026-10-14)")]),
    ("project_tls_expired", "project", "2026-11-05", "2026-11-05T11:00:00Z",
     "The api.acme.dev certificate expired once",
     "This morning the TLS certificate of api.acme.dev expired and was renewed by hand; "
     "auto-renewal had been failing silently.",
     [("This morning", "This morning (2026-11-05)")]),
    ("project_zh_failover", "project", "2026-11-20", "2026-11-20T10:00:00Z",
     "数据库主从切换过一次",
     "三天前数据库主从切换了一次，原因是主库磁盘满了，之后加了磁盘告警。",
     [("三天前", "三天前（2026年11月17日）")]),
    ("project_zh_release_23", "project", "2026-11-18", "2026-11-18T09:30:00Z",
     "2.3 版本已经发布",
     "上周五发布了 2.3 版本，修复了导出超时的问题，客户反馈正常。",
     [("上周五", "上周五（2026年11月13日）")]),
    ("project_zh_demo", "project", "2026-11-16", "2026-11-16T09:00:00Z",
     "给客户演示新的报表功能",
     "明天下午给客户演示新的报表功能，演示环境用预发环境。",
     [("明天", "明天（2026年11月17日）")]),
    ("feedback_no_friday_deploys", "feedback", "2026-10-02", "2026-10-02T09:00:00Z",
     "Never deploy on a Friday afternoon",
     "If a Friday deploy breaks tomorrow, nobody is around to fix it.\n\n"
     "**Why:** a weekend outage in August.\n\n"
     "**How to apply:** hold Friday merges until Monday.", []),
    ("project_zh_alert_check", "project", "2026-10-03", "2026-10-03T09:00:00Z",
     "每天早上检查告警",
     "每天早上九点检查昨天的告警，有问题在值班群里说。", []),
    ("reference_date_cmd", "reference", "2026-10-04", "2026-10-04T09:00:00Z",
     "Yesterday's date in a shell",
     "Use `date -d yesterday +%F` for yesterday's date in GNU date; on macOS, "
     "`date -v-1d +%F`.", []),
    ("project_vendor_contract", "project", "2026-11-01", "2026-11-20T15:00:00Z",
     "The log vendor contract",
     "Yesterday the vendor confirmed the renewal price; the contract runs for a year.", []),
]


def found(manifest: dict, pair: list[Row]) -> str:
    """What a dream did with a pair: "merged", "listed" (a near-duplicate note naming both),
    "contradiction" (listed as possibly contradicting) or "missed"."""
    a, b = pair[0][0], pair[1][0]
    for change in manifest.get("changes", []):
        if change.get("operation") == "archive" and {change["id"], change.get(
                "supersededBy")} == {a, b}:
            return "merged"
    kinds = {
        note.get("rule") for note in manifest.get("notes", [])
        if {note.get("id"), a, b} == {a, b}
        and (b if note.get("id") == a else a) in str(note.get("message"))
    }
    if "near-duplicates" in kinds:
        return "listed"
    return "contradiction" if "contradictions" in kinds else "missed"


def measure(folder: Any, vectors: bool = False) -> dict[str, Any]:
    """A report run over the annotated corpus with REWORDED and LOOKALIKE in it: what became
    of each pair, and how many possible duplicates the whole run listed."""
    from dream_corpus import NOW, build
    from test_dream_support import add, read_manifest

    from sage_mem.dream import run_dream
    from sage_mem.store import MemoryStore

    build(folder)
    for memory_id, category, day, description, body in [
        row for _, rows in REWORDED + SUPERSEDED for row in rows
    ] + [row for rows in LOOKALIKE for row in rows]:
        add(folder, memory_id, description, body, category=category, created=day,
            updated=f"{day}T09:00:00Z")
    store = MemoryStore(folder, watch=False)
    if vectors:
        store.embed()
    manifest = read_manifest(run_dream(store, mode="report", now=NOW))
    twins = {name: found(manifest, rows) for name, rows in REWORDED}
    changed = {name: found(manifest, rows) for name, rows in SUPERSEDED}
    apart = {rows[0][0]: found(manifest, rows) for rows in LOOKALIKE}
    listed = [n for n in manifest["notes"] if n.get("rule") == "near-duplicates"
              and "possible duplicate" in str(n.get("message"))]
    twin_ids = {row[0] for _, rows in REWORDED for row in rows}
    return {"twins": twins, "lookalikes": apart, "superseded": changed,
            "possible_duplicates": len(listed),
            "others": [str(n["message"]) for n in listed if n.get("id") not in twin_ids]}


def main() -> int:
    """`python tests/dream_meaning_cases.py [--vectors]`: the figures docs/dream.md quotes."""
    import sys
    import tempfile
    from collections import Counter
    from pathlib import Path

    vectors = "--vectors" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(Path(tmp) / "memory", vectors=vectors)
    twins, apart = Counter(result["twins"].values()), Counter(result["lookalikes"].values())
    print(f"{'with' if vectors else 'without'} vectors: {len(REWORDED)} reworded twins: "
          f"{twins['merged']} merged, {twins['listed']} listed, "
          f"{len(REWORDED) - twins['merged'] - twins['listed']} missed; {len(LOOKALIKE)} "
          f"look-alikes: {apart['merged']} merged, {apart['listed']} listed as duplicates; "
          f"{result['possible_duplicates']} possible duplicates listed in the whole run")
    changed = Counter(result["superseded"].values())
    print(f"{len(SUPERSEDED)} changed facts: {changed['contradiction']} listed as possibly "
          f"contradicting, {changed['merged']} merged, {changed['listed']} listed as duplicates")
    for name, what in {**result["twins"], **result["lookalikes"],
                       **result["superseded"]}.items():
        print(f"  {name}: {what}")
    for message in result["others"]:
        print(f"  not annotated: {message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
