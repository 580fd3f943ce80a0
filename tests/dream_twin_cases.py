"""A fifth annotated folder: twins reworded the ways people reword, beside look-alikes one fact
apart that the same rewordings would join if read carelessly (the field complaint: the dream
"misses twins worded differently").

An agent's memory folder as it looks after months: preferences, project facts, people, habits,
rules, in English and Chinese. Each twin is one fact saved twice, on two days, reworded by one
or two kinds: an abbreviation (k8s / Kubernetes, JS / JavaScript, DB / 数据库, PR / 合并请求),
a synonym, word order, active / passive (由…, 被…), a number format (1,000 / 1000 / 一千, 10k /
10,000, two / 2, 九点半 / 9:30), a unit's spelling (30 minutes / 30 min / 30 分钟), Chinese and
English mixed, a typo (ediotr, 登陆 / 登录, 帐号 / 账号), a bound said two ways (最多 / 不超过),
one description longer than the other with nothing new in it (its extra words are in the other
memory's body). Each look-alike is two facts one fact apart under the same rewordings: k8s
staging / production, JS / TS, 1,000 / 10,000, 一千 / 一万, 30 minutes / 30 seconds, 九点半 /
十点半, Postgres / MySQL, before / after, 周五 / 周一…

`python tests/dream_twin_cases.py [--vectors]`: the folder through the CLI as installed
(`sage-mem dream --mode rewrite --json`, then `sage-mem rollback`; `--vectors` runs `sage-mem
embed` first), and what became of each pair. tests/test_dream_twin_cases.py holds it to that.
"""

from __future__ import annotations

from typing import Any

# (id, category, day, description, body)
Row = tuple[str, str, str, str, str]

TWINS: list[tuple[str, list[Row]]] = [
    # -- abbreviations --
    ("en-k8s", [
        ("project_k8s_helm", "project", "2026-08-04",
         "Services are deployed to k8s with Helm charts",
         "Each service has a chart under deploy/charts; CI runs `helm upgrade --install` on "
         "every merge to main."),
        ("project_kubernetes_helm", "project", "2026-10-19",
         "Deploy services to Kubernetes using Helm charts",
         "Charts live in deploy/charts, one per service, and CI runs `helm upgrade --install` "
         "on every merge to main."),
    ]),
    ("en-js", [
        ("feedback_plain_js", "feedback", "2026-08-06", "Write code examples in plain JS",
         "The user's readers are beginners: no TypeScript and no framework in examples."),
        ("feedback_plain_javascript", "feedback", "2026-10-21",
         "Code examples use plain JavaScript",
         "Beginners read these examples, so no TypeScript and no framework in them."),
    ]),
    ("en-prod", [
        ("feedback_no_load_prod", "feedback", "2026-08-08",
         "Never run load tests against prod",
         "Load tests go to the perf environment; one against production took checkout down "
         "for an hour in July."),
        ("feedback_no_load_production", "feedback", "2026-10-23",
         "Do not run load tests against production",
         "Load tests go to the perf environment: one against production took checkout down "
         "for an hour in July."),
    ]),
    ("en-db-pr", [
        ("feedback_migration_own_pr", "feedback", "2026-08-10",
         "Every DB migration gets its own PR",
         "Schema changes are reviewed apart from the code that uses them, so a migration "
         "ships alone and can be rolled back alone."),
        ("feedback_migration_separate_pull_request", "feedback", "2026-10-25",
         "Each database migration gets its own pull request",
         "Schema changes are reviewed apart from the code using them: a migration ships "
         "alone and can be rolled back alone."),
    ]),
    ("en-ts", [
        ("project_frontend_ts", "project", "2026-08-12", "The frontend is written in TS",
         "React with strict mode on; the build fails on any implicit any."),
        ("project_frontend_typescript", "project", "2026-10-27",
         "The frontend is written in TypeScript",
         "React, strict mode on: the build fails on any implicit any."),
    ]),
    ("en-docs-repo", [
        ("reference_docs_folder", "reference", "2026-08-14",
         "Docs live in the repo's docs folder",
         "Markdown under docs/, built by mkdocs; the site deploys from main."),
        ("reference_documentation_folder", "reference", "2026-10-29",
         "Documentation lives in the repository's docs folder",
         "Markdown under docs/, built with mkdocs, and the site deploys from main."),
    ]),
    ("en-postgres", [
        ("project_main_db_pg", "project", "2026-08-16", "The main DB is Postgres 16",
         "Hosted on RDS in eu-central-1 with one read replica; connection strings are in "
         "Vault under secret/db."),
        ("project_main_database_postgresql", "project", "2026-10-31",
         "The main database is PostgreSQL 16",
         "On RDS in eu-central-1 with a read replica; the connection strings are in Vault at "
         "secret/db."),
    ]),
    ("en-config-env", [
        ("reference_env_config", "reference", "2026-08-18",
         "Config for each env is in config/<env>.yaml",
         "Values are read at start-up; secrets are not in these files but in Vault."),
        ("reference_environment_configuration", "reference", "2026-11-01",
         "Configuration for each environment is in config/<env>.yaml",
         "Read at start-up; secrets are never in these files, they are in Vault."),
    ]),
    # -- number formats, units --
    ("en-thousand", [
        ("project_free_plan_calls", "project", "2026-08-20",
         "The free plan allows 1,000 API calls per day",
         "Calls over the limit get a 429 until midnight UTC; the counter is per account."),
        ("project_free_plan_limit", "project", "2026-11-02",
         "The free plan allows 1000 API calls per day",
         "Over the limit a call gets a 429 until midnight UTC; the counter is per account."),
    ]),
    ("en-10k", [
        ("feedback_log_lines_10k", "feedback", "2026-08-22",
         "Alert when the error log passes 10k lines a day",
         "Below that the noise is normal; above it something is looping. Page the on-call."),
        ("feedback_log_lines_10000", "feedback", "2026-11-03",
         "Alert when the error log passes 10,000 lines a day",
         "Below that the noise is normal, above it something is looping: page the on-call."),
    ]),
    ("en-two-spaces", [
        ("feedback_yaml_two_spaces", "feedback", "2026-08-24",
         "Indent YAML files with two spaces",
         "Never tabs in YAML; the linter in CI rejects them and Helm misreads them."),
        ("feedback_yaml_2_spaces", "feedback", "2026-11-04",
         "Indent YAML files with 2 spaces",
         "No tabs in YAML: the CI linter rejects them and Helm misreads them."),
    ]),
    ("en-minutes", [
        ("project_cache_ttl_minutes", "project", "2026-08-26",
         "The session cache expires after 30 minutes",
         "Idle sessions are dropped from Redis then; the user has to log in again."),
        ("project_cache_ttl_min", "project", "2026-11-05",
         "The session cache expires after 30 min",
         "Idle sessions are dropped from Redis then, and the user has to log in again."),
    ]),
    # -- word order, active / passive, synonyms --
    ("en-order-fridays", [
        ("project_friday_demos", "project", "2026-08-28", "On Fridays the team does demos",
         "Each demo is ten minutes, in the all-hands call at 16:00; sign up in the sheet."),
        ("project_demos_friday", "project", "2026-11-06", "The team does demos on Fridays",
         "Ten minutes per demo, in the 16:00 all-hands call; sign up in the sheet."),
    ]),
    ("en-passive", [
        ("project_ci_runs_linter", "project", "2026-08-30", "CI runs the linter on every push",
         "ruff and mypy run in the lint job; a push with a lint error is marked red."),
        ("project_linter_run_by_ci", "project", "2026-11-07",
         "The linter is run by CI on every push",
         "The lint job runs ruff and mypy; a push with a lint error is marked red."),
    ]),
    ("en-start-begin", [
        ("feedback_start_with_answer", "feedback", "2026-09-01",
         "Start replies with the answer",
         "The user wants the conclusion in the first line, then the reasons; no preamble."),
        ("feedback_begin_with_answer", "feedback", "2026-11-08",
         "Begin responses with the answer",
         "The conclusion goes in the first line, then the reasons, and no preamble."),
    ]),
    ("en-manager", [
        ("user_manager_priya", "user", "2026-09-03", "Priya is the user's manager",
         "One-to-one every other Tuesday; she wants a written status before it."),
        ("user_managed_by_priya", "user", "2026-11-09", "The user's manager is Priya",
         "A one-to-one every other Tuesday, and she wants a written status before it."),
    ]),
    # -- a typo; one longer with nothing new --
    ("en-typo", [
        ("user_dark_theme_editor", "user", "2026-09-05",
         "The user prefers a dark theme in the editor",
         "Screenshots and colour advice should assume a dark background; light themes hurt "
         "the user's eyes."),
        ("user_dark_theme_ediotr", "user", "2026-11-10",
         "The user prefers a dark theme in the ediotr",
         "Screenshots and colour advice should assume a dark background: light themes hurt "
         "the user's eyes."),
    ]),
    ("en-longer", [
        ("project_backup_wiki", "project", "2026-09-07", "The wiki is backed up weekly",
         "Every Sunday night a job copies the team wiki's export to the S3 bucket "
         "acme-backups."),
        ("project_backup_team_wiki_s3", "project", "2026-11-11",
         "The team wiki is backed up weekly to S3",
         "Every Sunday night a job copies the team wiki's export to the S3 bucket "
         "acme-backups."),
    ]),
    # -- Chinese --
    ("zh-k8s", [
        ("project_zh_k8s", "project", "2026-08-05", "服务用 k8s 部署",
         "每个服务一个 Helm chart，合并到 main 后流水线自动发布到集群。"),
        ("project_zh_kubernetes", "project", "2026-10-20", "服务用 Kubernetes 部署",
         "每个服务有自己的 Helm chart，合并到 main 之后由流水线自动发布到集群。"),
    ]),
    ("zh-thousand", [
        ("project_zh_free_quota", "project", "2026-08-07", "免费版每天一千次调用",
         "超过额度返回 429，零点（UTC）重置，按账户计数。"),
        ("project_zh_free_quota_digits", "project", "2026-10-22", "免费版每天 1000 次调用",
         "超出额度就返回 429，UTC 零点重置，按账户计数。"),
    ]),
    ("zh-wan", [
        ("project_zh_log_keep_wan", "project", "2026-08-09", "审计日志保留 1万 条",
         "超过的部分按时间从旧到新删除，导出前先确认条数。"),
        ("project_zh_log_keep_10000", "project", "2026-10-24", "审计日志保留 10000 条",
         "超过部分按时间从旧到新删除，导出之前先确认条数。"),
    ]),
    ("zh-pr", [
        ("feedback_zh_tests_before_pr", "feedback", "2026-08-11", "提交 PR 前先跑测试",
         "本地测试全部通过再提交，流水线红了要先修好再请别人评审。"),
        ("feedback_zh_tests_before_merge_request", "feedback", "2026-10-26",
         "提交合并请求前先跑测试",
         "本地测试都通过再提交，流水线变红要先修好，再请人评审。"),
    ]),
    ("zh-db", [
        ("project_zh_db_postgres", "project", "2026-08-13", "主数据库是 PostgreSQL",
         "托管在阿里云 RDS，连接串在 Vault 的 secret/db 下。"),
        ("project_zh_db_pg", "project", "2026-10-28", "主 DB 是 Postgres",
         "托管在阿里云 RDS 上，连接串放在 Vault 的 secret/db 里。"),
    ]),
    ("zh-js", [
        ("feedback_zh_prettier_js", "feedback", "2026-08-15", "JS 代码用 Prettier 格式化",
         "提交前跑 prettier --write，配置文件在仓库根目录，别手动调缩进。"),
        ("feedback_zh_prettier_javascript", "feedback", "2026-10-30",
         "JavaScript 代码用 Prettier 格式化",
         "提交之前跑 prettier --write，配置在仓库根目录，不要手动调缩进。"),
    ]),
    ("zh-order-vim", [
        ("user_zh_vim", "user", "2026-08-17", "用户用 Vim 写代码",
         "快捷键按 Vim 的给，别推荐要大量鼠标操作的插件。"),
        ("user_zh_code_in_vim", "user", "2026-11-01", "用户写代码用 Vim",
         "给快捷键按 Vim 的来，不要推荐需要大量鼠标操作的插件。"),
    ]),
    ("zh-passive", [
        ("project_zh_ci_formats", "project", "2026-08-19", "CI 会自动格式化代码",
         "流水线里跑 gofmt 和 prettier，格式不对会自动提交一个修复。"),
        ("project_zh_code_formatted_by_ci", "project", "2026-11-02", "代码由 CI 自动格式化",
         "流水线跑 gofmt 和 prettier，格式不对就自动提交一个修复。"),
    ]),
    ("zh-time", [
        ("project_zh_standup_930", "project", "2026-08-21", "每天 9:30 开站会",
         "站会十五分钟，在腾讯会议上开，每人说进展和阻塞。"),
        ("project_zh_standup_half_nine", "project", "2026-11-03", "每天九点半开站会",
         "站会开十五分钟，用腾讯会议，每人讲进展和阻塞。"),
    ]),
    ("zh-minutes", [
        ("project_zh_deploy_downtime", "project", "2026-08-23", "每次部署最多停机 5 分钟",
         "超过就回滚，并在值班群里说明原因。"),
        ("project_zh_deploy_downtime_limit", "project", "2026-11-04", "每次部署停机不超过五分钟",
         "超过了就回滚，然后在值班群里说明原因。"),
    ]),
    ("zh-typo-login", [
        ("user_zh_github_login", "user", "2026-08-25", "用户用 GitHub 账号登录内部系统",
         "内部系统都接了 GitHub 单点登录，不用另外注册。"),
        ("user_zh_github_login_typo", "user", "2026-11-05", "用户用 GitHub 帐号登陆内部系统",
         "内部系统都接了 GitHub 单点登录，不需要另外注册。"),
    ]),
    ("zh-longer", [
        ("project_zh_weekly_report", "project", "2026-08-27", "周报每周五发",
         "周五下午发给经理，抄送整个团队，写本周完成和下周计划。"),
        ("project_zh_weekly_report_manager", "project", "2026-11-06", "周报每周五下午发给经理",
         "周五下午发给经理，抄送整个团队，写本周完成和下周计划。"),
    ]),
    ("zh-mixed", [
        ("feedback_zh_commit_english", "feedback", "2026-08-29", "commit message 用英文写",
         "祈使句开头，第一行不超过 72 个字符，正文说明为什么改。"),
        ("feedback_zh_commit_message_english", "feedback", "2026-11-07", "提交信息用英文写",
         "第一行不超过 72 个字符，祈使句开头，正文写为什么改。"),
    ]),
    ("zh-synonym", [
        ("user_zh_morning_tea", "user", "2026-08-31", "用户早上喝绿茶",
         "不喝咖啡，推荐饮品时给茶类，尤其是龙井。"),
        ("user_zh_morning_tea2", "user", "2026-11-08", "用户早晨喝绿茶",
         "不喝咖啡，推荐饮品时给茶，尤其是龙井。"),
    ]),
    ("zh-two-approvals", [
        ("feedback_zh_two_approvals", "feedback", "2026-09-02", "合并请求需要两个人批准",
         "两位同事批准之后才能合并，紧急修复也一样。"),
        ("feedback_zh_2_approvals", "feedback", "2026-11-09", "MR 需要 2 个人批准",
         "两位同事批准后才可以合并，紧急修复也不例外。"),
    ]),
    ("zh-repo", [
        ("reference_zh_design_docs", "reference", "2026-09-04", "设计文档放在仓库的 docs 目录",
         "每个功能一个 markdown 文件，评审通过后合并到 main。"),
        ("reference_zh_design_docs_repo", "reference", "2026-11-10",
         "设计文档放在 repo 的 docs 目录",
         "每个功能一个 markdown 文件，评审通过之后合并到 main。"),
    ]),
]

# Two facts one fact apart, each under the rewordings above: never merged, never listed as
# twins (a pair written on two days may be listed as possibly contradicting: another rule).
LOOKALIKES: list[list[Row]] = [
    [("project_k8s_staging", "project", "2026-09-06",
      "Deploy to the k8s staging cluster with make deploy",
      "The deploy builds the image, pushes it to the registry and rolls it out."),
     ("project_k8s_production", "project", "2026-09-06",
      "Deploy to the Kubernetes production cluster with make deploy",
      "The deploy builds the image, pushes it to the registry and rolls it out.")],
    [("feedback_examples_js", "feedback", "2026-09-08", "Write the SDK examples in JS",
      "Each example is one file that runs as it is, with its output in a comment."),
     ("feedback_examples_ts", "feedback", "2026-09-08", "Write the SDK examples in TS",
      "Each example is one file that runs as it is, with its output in a comment.")],
    [("project_pro_plan_calls", "project", "2026-09-10",
      "The pro plan allows 1,000 API calls per minute",
      "Bursts over the limit are queued for a second, then refused with a 429."),
     ("project_pro_plan_calls_10k", "project", "2026-09-10",
      "The pro plan allows 10,000 API calls per minute",
      "Bursts over the limit are queued for a second, then refused with a 429.")],
    [("project_batch_1k", "project", "2026-09-12", "The import batch size is 1k rows",
      "Larger batches time out on the shared database; the importer splits the file."),
     ("project_batch_1m", "project", "2026-09-12", "The import batch size is 1M rows",
      "Larger batches time out on the shared database; the importer splits the file.")],
    [("project_token_ttl_minutes", "project", "2026-09-14",
      "Access tokens expire after 15 minutes",
      "Clients refresh them with the refresh token; the gateway checks the expiry."),
     ("project_token_ttl_seconds", "project", "2026-09-14",
      "Access tokens expire after 15 seconds",
      "Clients refresh them with the refresh token; the gateway checks the expiry.")],
    [("feedback_no_load_dev", "feedback", "2026-09-16", "Never run the soak test against dev",
      "The soak test runs for six hours and fills the disks; ask in #perf first."),
     ("feedback_no_load_prod_soak", "feedback", "2026-09-16",
      "Never run the soak test against prod",
      "The soak test runs for six hours and fills the disks; ask in #perf first.")],
    [("feedback_two_approvals", "feedback", "2026-09-18", "PRs need two approvals",
      "The second reviewer must be from another team; bots do not count."),
     ("feedback_one_approval", "feedback", "2026-09-18", "PRs need one approval",
      "The second reviewer must be from another team; bots do not count.")],
    [("project_queue_alert_1000", "project", "2026-09-20",
      "Alert when the queue holds over 1,000 messages",
      "The consumer autoscaler reacts later; the alert is for a stuck consumer."),
     ("project_queue_alert_1000000", "project", "2026-09-20",
      "Alert when the queue holds over 1,000,000 messages",
      "The consumer autoscaler reacts later; the alert is for a stuck consumer.")],
    [("project_frontend_js", "project", "2026-09-22", "The admin frontend is written in JS",
      "It is an old Angular app; new pages follow the style of the existing ones."),
     ("project_backend_js", "project", "2026-09-22", "The admin backend is written in JS",
      "It is an old Angular app; new pages follow the style of the existing ones.")],
    [("feedback_indent_two", "feedback", "2026-09-24", "Indent the JSON fixtures with two spaces",
      "The fixtures are compared as text in the snapshot tests."),
     ("feedback_indent_four", "feedback", "2026-09-24", "Indent the JSON fixtures with 4 spaces",
      "The fixtures are compared as text in the snapshot tests.")],
    [("feedback_start_with_summary", "feedback", "2026-09-26",
      "Start the incident notes with the summary",
      "The notes go to the status page and to the customers' account managers."),
     ("feedback_end_with_summary", "feedback", "2026-09-26",
      "End the incident notes with the summary",
      "The notes go to the status page and to the customers' account managers.")],
    [("user_pw_manager_1password", "user", "2026-09-28",
      "The user's DB passwords are in 1Password",
      "The shared vault is Engineering; ask before adding a new item."),
     ("user_pw_manager_bitwarden", "user", "2026-09-28",
      "The user's DB passwords are in Bitwarden",
      "The shared vault is Engineering; ask before adding a new item.")],
    [("user_vegetarian", "user", "2026-09-30", "The user is vegetarian",
      "Suggest restaurants and recipes to fit; the user cooks most evenings."),
     ("user_vegan", "user", "2026-09-30", "The user is vegan",
      "Suggest restaurants and recipes to fit; the user cooks most evenings.")],
    [("project_jira_backup_s3", "project", "2026-10-02",
      "The Jira export is backed up weekly to S3",
      "The job runs on Sunday night from the ops cron host and mails the ops list."),
     ("project_jira_backup_gcs", "project", "2026-10-02",
      "The Jira export is backed up weekly to GCS",
      "The job runs on Sunday night from the ops cron host and mails the ops list.")],
    [("user_prefers_dark_editor", "user", "2026-10-04",
      "The user prefers a dark theme in the terminal",
      "Colours in examples should read well on the user's setup."),
     ("user_prefers_light_editor", "user", "2026-10-04",
      "The user prefers a light theme in the terminal",
      "Colours in examples should read well on the user's setup.")],
    # Chinese
    [("project_zh_deploy_k8s", "project", "2026-09-07", "报表服务用 k8s 部署",
      "部署脚本在 deploy 目录，上线前先在群里说一声。"),
     ("project_zh_deploy_compose", "project", "2026-09-07", "报表服务用 Docker Compose 部署",
      "部署脚本在 deploy 目录，上线前先在群里说一声。")],
    [("project_zh_quota_qian", "project", "2026-09-09", "企业版每天一千次导出",
      "导出任务排队执行，超过额度第二天再试。"),
     ("project_zh_quota_wan", "project", "2026-09-09", "企业版每天一万次导出",
      "导出任务排队执行，超过额度第二天再试。")],
    [("project_zh_budget_2k", "project", "2026-09-11", "每月云服务预算两千元",
      "超出预算要提前找财务申请，账单每月一号出。"),
     ("project_zh_budget_2w", "project", "2026-09-11", "每月云服务预算 2 万元",
      "超出预算要提前找财务申请，账单每月一号出。")],
    [("project_zh_db_mysql", "project", "2026-09-13", "订单库是 MySQL",
      "读写分离，一主两从，慢查询日志每天汇总。"),
     ("project_zh_db_pg_orders", "project", "2026-09-13", "订单库是 Postgres",
      "读写分离，一主两从，慢查询日志每天汇总。")],
    [("feedback_zh_tests_after_pr", "feedback", "2026-09-15", "合并 PR 后跑一遍冒烟测试",
      "冒烟测试在预发环境跑，大约十分钟，失败了马上回滚。"),
     ("feedback_zh_tests_before_pr_smoke", "feedback", "2026-09-15", "合并 PR 前跑一遍冒烟测试",
      "冒烟测试在预发环境跑，大约十分钟，失败了马上回滚。")],
    [("project_zh_standup_1030", "project", "2026-09-17", "每周一十点半开周会",
      "周会一个小时，过一遍看板，每个人说本周计划。"),
     ("project_zh_standup_0930", "project", "2026-09-17", "每周一九点半开周会",
      "周会一个小时，过一遍看板，每个人说本周计划。")],
    [("project_zh_cache_minutes", "project", "2026-09-19", "商品缓存 30 分钟过期",
      "过期后从数据库重新加载，热点商品会提前预热。"),
     ("project_zh_cache_seconds", "project", "2026-09-19", "商品缓存 30 秒过期",
      "过期后从数据库重新加载，热点商品会提前预热。")],
    [("user_zh_github_account", "user", "2026-09-21", "用户用 GitHub 账号登录代码平台",
      "公司的代码平台接了单点登录，不用单独注册。"),
     ("user_zh_gitlab_account", "user", "2026-09-21", "用户用 GitLab 账号登录代码平台",
      "公司的代码平台接了单点登录，不用单独注册。")],
    [("project_zh_report_friday", "project", "2026-09-23", "月报每月最后一个周五发",
      "发给部门负责人，抄送财务，附上成本表。"),
     ("project_zh_report_monday", "project", "2026-09-23", "月报每月最后一个周一发",
      "发给部门负责人，抄送财务，附上成本表。")],
    [("user_zh_emacs", "user", "2026-09-25", "用户用 Emacs 写笔记",
      "笔记用 org-mode 格式，每周整理一次。"),
     ("user_zh_vim_notes", "user", "2026-09-25", "用户用 Vim 写笔记",
      "笔记用 org-mode 格式，每周整理一次。")],
    [("project_zh_free_export", "project", "2026-09-27", "免费版每天 100 次导出",
      "超出后提示升级，计数按团队算。"),
     ("project_zh_paid_export", "project", "2026-09-27", "付费版每天 100 次导出",
      "超出后提示升级，计数按团队算。")],
    [("feedback_zh_js_lint", "feedback", "2026-09-29", "JS 代码用 ESLint 检查",
      "规则集在仓库根目录，提交前本地先跑一遍。"),
     ("feedback_zh_ts_lint", "feedback", "2026-09-29", "TS 代码用 ESLint 检查",
      "规则集在仓库根目录，提交前本地先跑一遍。")],
    [("user_zh_green_tea", "user", "2026-10-01", "用户早上喝绿茶提神",
      "在家办公时上午会泡一壶，下午不喝。"),
     ("user_zh_red_tea", "user", "2026-10-01", "用户早上喝红茶提神",
      "在家办公时上午会泡一壶，下午不喝。")],
    [("project_zh_downtime_5", "project", "2026-10-03", "数据迁移最多停机五分钟",
      "超过就中止迁移并回滚，提前一天通知客户。"),
     ("project_zh_downtime_15", "project", "2026-10-03", "数据迁移最多停机十五分钟",
      "超过就中止迁移并回滚，提前一天通知客户。")],
    [("reference_zh_api_docs_repo", "reference", "2026-10-05", "接口文档放在仓库的 api 目录",
      "用 OpenAPI 3 写，改接口时同一个合并请求里改文档。"),
     ("reference_zh_api_docs_wiki", "reference", "2026-10-05", "接口文档放在 wiki 的 api 目录",
      "用 OpenAPI 3 写，改接口时同一个合并请求里改文档。")],
]

# Written after the rules were changed, to see whether they hold on cases they were not
# changed for (docs/dream.md reports them apart).
LATER_TWINS: list[tuple[str, list[Row]]] = [
    ("later-en-handle", [
        ("user_github_handle", "user", "2026-08-03", "The user's GitHub handle is wchen",
         "Mention them as @wchen in issues and pull requests."),
        ("user_wchen_on_github", "user", "2026-11-12", "User is wchen on GitHub",
         "In issues and PRs, mention the user as @wchen."),
    ]),
    ("later-en-pytest", [
        ("project_pytest_xdist", "project", "2026-08-05", "Tests run with pytest -n auto in CI",
         "The test job spreads the suite over all cores; a test must not depend on order."),
        ("project_ci_pytest", "project", "2026-11-13", "CI runs the tests using pytest -n auto",
         "The suite is spread over all cores by the test job, so no test may depend on order."),
    ]),
    ("later-en-upload", [
        ("project_upload_cap", "project", "2026-08-07", "The max upload size is 25 MB",
         "Bigger files get a 413 from nginx; the web form checks it first."),
        ("project_upload_capped", "project", "2026-11-14", "Uploads are capped at 25MB",
         "nginx answers a bigger file with a 413, and the web form checks it first."),
    ]),
    ("later-en-refresh", [
        ("project_staging_refresh_hours", "project", "2026-08-09",
         "The staging env is refreshed every 24 hours",
         "Data older than the refresh is gone; do not keep test accounts there."),
        ("project_staging_refresh_24h", "project", "2026-11-15",
         "The staging environment is refreshed every 24h",
         "Anything older than the refresh is gone, so keep no test accounts there."),
    ]),
    ("later-en-vpn", [
        ("feedback_vpn_for_prod", "feedback", "2026-08-11",
         "Use the company VPN for prod access",
         "Production hosts only accept connections from the VPN range."),
        ("feedback_prod_through_vpn", "feedback", "2026-11-16",
         "Production access goes through the company VPN",
         "The production hosts accept connections only from the VPN range."),
    ]),
    ("later-en-peak", [
        ("project_peak_5000", "project", "2026-08-13",
         "The API handles 5,000 requests per second at peak",
         "Measured on Black Friday; the autoscaler adds pods above 60% CPU."),
        ("project_peak_5k", "project", "2026-11-17",
         "At peak the API handles 5k requests per second",
         "Black Friday's figure; above 60% CPU the autoscaler adds pods."),
    ]),
    ("later-en-typo", [
        ("feedback_migrate_before_deploy", "feedback", "2026-08-15",
         "Always run the migrations before deploying",
         "A deploy against an old schema fails at start-up and rolls back."),
        ("feedback_migrate_before_deplyoing", "feedback", "2026-11-18",
         "Always run the migrations before deplyoing",
         "A deploy against an old schema fails at start-up and is rolled back."),
    ]),
    ("later-zh-ts", [
        ("project_zh_frontend_ts", "project", "2026-08-04", "前端用 TS 写",
         "严格模式打开，不允许隐式 any，组件用函数式写法。"),
        ("project_zh_frontend_typescript", "project", "2026-11-12", "前端用 TypeScript 写",
         "开严格模式，不允许隐式 any，组件都用函数式写法。"),
    ]),
    ("later-zh-reset", [
        ("project_zh_test_db_reset", "project", "2026-08-06", "测试环境数据库每周日凌晨重置",
         "重置后只保留种子数据，手工造的数据会丢。"),
        ("project_zh_reset_test_db", "project", "2026-11-13", "每周日凌晨重置测试环境的 DB",
         "重置之后只剩种子数据，手工造的数据会丢掉。"),
    ]),
    ("later-zh-review", [
        ("feedback_zh_two_reviewers", "feedback", "2026-08-08", "每个 PR 至少两人评审",
         "一个人看代码，一个人看测试，都同意了才能合并。"),
        ("feedback_zh_2_reviewers", "feedback", "2026-11-14", "每个合并请求至少 2 人评审",
         "一人看代码，一人看测试，都同意才能合并。"),
    ]),
    ("later-zh-run", [
        ("user_zh_run_3km", "user", "2026-08-10", "用户每天跑步三公里",
         "一般在晚饭后跑，下雨天改成在家做拉伸。"),
        ("user_zh_run_three_km", "user", "2026-11-15", "用户每天跑 3 公里",
         "通常晚饭后跑，下雨就在家做拉伸。"),
    ]),
    ("later-zh-alipay", [
        ("user_zh_alipay_email", "user", "2026-08-12", "用户的支付宝帐户绑定了工作邮箱",
         "报销和发票都走这个账户，通知会发到工作邮箱。"),
        ("user_zh_alipay_work_email", "user", "2026-11-16", "用户的支付宝账户绑定了工作邮箱",
         "报销、发票都走这个账户，通知发到工作邮箱。"),
    ]),
    ("later-zh-apollo", [
        ("reference_zh_prod_config", "reference", "2026-08-14", "线上环境的配置放在 Apollo",
         "改配置要走审批，生效前在群里通知。"),
        ("reference_zh_prod_config_apollo", "reference", "2026-11-17",
         "prod 的 config 放在 Apollo 里",
         "配置改动要走审批，生效之前在群里通知一下。"),
    ]),
    ("later-en-kids", [
        ("user_two_kids", "user", "2026-08-16", "The user has two kids",
         "School pick-up is at 15:30; avoid meetings then."),
        ("user_2_children", "user", "2026-11-19", "The user has 2 children",
         "Pick-up from school at 15:30, so no meetings then."),
    ]),
]

LATER_LOOKALIKES: list[list[Row]] = [
    [("project_upload_25mb", "project", "2026-10-07", "The max upload size for videos is 25 MB",
      "The transcoder rejects anything bigger before it is stored."),
     ("project_upload_25gb", "project", "2026-10-07", "The max upload size for videos is 25 GB",
      "The transcoder rejects anything bigger before it is stored.")],
    [("project_pytest_n4", "project", "2026-10-07", "Integration tests run with pytest -n 4",
      "More workers exhaust the database connections of the test instance."),
     ("project_pytest_n8", "project", "2026-10-07", "Integration tests run with pytest -n 8",
      "More workers exhaust the database connections of the test instance.")],
    [("project_demo_refresh_24", "project", "2026-10-07", "The demo env is reset every 24 hours",
      "Sales accounts are recreated from the seed file after each reset."),
     ("project_demo_refresh_48", "project", "2026-10-07", "The demo env is reset every 48 hours",
      "Sales accounts are recreated from the seed file after each reset.")],
    [("feedback_bastion_prod", "feedback", "2026-10-07", "SSH to prod only through the bastion",
      "The bastion records every session for the audit."),
     ("feedback_bastion_staging", "feedback", "2026-10-07",
      "SSH to staging only through the bastion",
      "The bastion records every session for the audit.")],
    [("user_two_cats", "user", "2026-10-07", "The user has two cats at home",
      "They sometimes walk over the keyboard during calls."),
     ("user_three_cats", "user", "2026-10-07", "The user has three cats at home",
      "They sometimes walk over the keyboard during calls.")],
    [("project_search_5k", "project", "2026-10-07", "Search serves 5k queries per second",
      "The cluster has three nodes; the cache takes most of the load."),
     ("project_search_50k", "project", "2026-10-07", "Search serves 50k queries per second",
      "The cluster has three nodes; the cache takes most of the load.")],
    [("feedback_lint_before_push", "feedback", "2026-10-07", "Run the linters before pushing",
      "The pre-push hook is optional; CI is the last word."),
     ("feedback_lint_after_push", "feedback", "2026-10-07", "Run the linters after pushing",
      "The pre-push hook is optional; CI is the last word.")],
    [("user_gitlab_handle", "user", "2026-10-07", "The user's GitLab handle is mzhou",
      "Use it when assigning merge requests in the internal GitLab."),
     ("user_gitea_handle", "user", "2026-10-07", "The user's Gitea handle is mzhou",
      "Use it when assigning merge requests in the internal GitLab.")],
    [("project_zh_backend_ts", "project", "2026-10-07", "管理后台的前端用 TS 写",
      "和主站共用组件库，样式用 Tailwind。"),
     ("project_zh_backend_js", "project", "2026-10-07", "管理后台的前端用 JS 写",
      "和主站共用组件库，样式用 Tailwind。")],
    [("project_zh_reset_sunday", "project", "2026-10-07", "演示环境数据库每周日凌晨重置",
      "重置后导入演示数据，销售账号会重建。"),
     ("project_zh_reset_saturday", "project", "2026-10-07", "演示环境数据库每周六凌晨重置",
      "重置后导入演示数据，销售账号会重建。")],
    [("feedback_zh_release_two", "feedback", "2026-10-07", "发版需要两位负责人签字",
      "签字记录存在发版单里，审计时要查。"),
     ("feedback_zh_release_three", "feedback", "2026-10-07", "发版需要三位负责人签字",
      "签字记录存在发版单里，审计时要查。")],
    [("user_zh_swim_1k", "user", "2026-10-07", "用户每周游泳一千米",
      "周三晚上去公司附近的游泳馆。"),
     ("user_zh_swim_2k", "user", "2026-10-07", "用户每周游泳两千米",
      "周三晚上去公司附近的游泳馆。")],
    [("reference_zh_gray_config", "reference", "2026-10-07", "灰度环境的配置放在 Nacos",
      "改动要在发布单里写明，值班的人审批。"),
     ("reference_zh_test_config", "reference", "2026-10-07", "测试环境的配置放在 Nacos",
      "改动要在发布单里写明，值班的人审批。")],
    [("user_zh_wechat_work", "user", "2026-10-07", "用户的企业微信绑定了工作手机",
      "验证码和审批提醒都发到这个手机上。"),
     ("user_zh_wechat_personal", "user", "2026-10-07", "用户的企业微信绑定了个人手机",
      "验证码和审批提醒都发到这个手机上。")],
]

# For the kinds a second change reads (written with it, so no test of it): a weekday or a
# clock time written short (Fri, 3pm, 下午三点), a duration said in words (half an hour,
# 半小时), British / American spelling, full-width digits.
THIRD_TWINS: list[tuple[str, list[Row]]] = [
    ("third-en-friday", [
        ("project_freeze_fri", "project", "2026-08-18", "Code freeze starts on Fri at noon",
         "After the freeze only release-blocking fixes are merged, each with a second review."),
        ("project_freeze_friday", "project", "2026-11-20", "Code freeze starts on Friday at noon",
         "After the freeze only release-blocking fixes get merged, each with a second review."),
    ]),
    ("third-en-pm", [
        ("project_retro_3pm", "project", "2026-08-19", "The retro is at 3pm on Thursdays",
         "In the big meeting room; remote people join the usual video link."),
        ("project_retro_1500", "project", "2026-11-21", "The retro is at 15:00 on Thursdays",
         "In the big meeting room, and remote people join the usual video link."),
    ]),
    ("third-en-half-hour", [
        ("feedback_break_half_hour", "feedback", "2026-08-20",
         "Remind the user to take a break every half an hour",
         "The user has back trouble and asked to be nudged to stand up during long sessions."),
        ("feedback_break_30_minutes", "feedback", "2026-11-22",
         "Remind the user to take a break every 30 minutes",
         "The user has back trouble and asked to be nudged to stand up in long sessions."),
    ]),
    ("third-en-colour", [
        ("feedback_colour_palette", "feedback", "2026-08-21",
         "Use the brand colour palette in charts",
         "Primary #0B5FFF, accent #FFB000, grey for everything else; no default matplotlib "
         "colours."),
        ("feedback_color_palette", "feedback", "2026-11-23",
         "Use the brand color palette in charts",
         "Primary #0B5FFF, accent #FFB000, grey for everything else; no default matplotlib "
         "colors."),
    ]),
    ("third-zh-pm", [
        ("project_zh_review_3pm", "project", "2026-08-22", "每周三下午三点代码评审",
         "评审前把待评审的合并请求贴到群里，每个人至少看两个。"),
        ("project_zh_review_1500", "project", "2026-11-24", "每周三 15:00 代码评审",
         "评审前把待评审的合并请求贴到群里，每人至少看两个。"),
    ]),
    ("third-zh-half-hour", [
        ("project_zh_sync_half_hour", "project", "2026-08-23", "每周例会开半小时",
         "主持人轮流，会议纪要当天发到群里。"),
        ("project_zh_sync_30min", "project", "2026-11-25", "每周例会开 ３０ 分钟",
         "主持人轮流来，会议纪要当天发到群里。"),
    ]),
]

THIRD_LOOKALIKES: list[list[Row]] = [
    [("project_release_fri", "project", "2026-10-09", "Release notes go out on Fri",
      "Written from the merged pull requests; the support team reviews them first."),
     ("project_release_mon", "project", "2026-10-09", "Release notes go out on Mon",
      "Written from the merged pull requests; the support team reviews them first.")],
    [("project_backup_3am", "project", "2026-10-09", "The database backup runs at 3am",
      "It takes about forty minutes and slows the reporting queries while it runs."),
     ("project_backup_3pm", "project", "2026-10-09", "The database backup runs at 3pm",
      "It takes about forty minutes and slows the reporting queries while it runs.")],
    [("feedback_standup_half_hour", "feedback", "2026-10-09",
      "Keep the planning meeting to half an hour",
      "Longer planning meetings lose people; park the details for later."),
     ("feedback_standup_hour", "feedback", "2026-10-09", "Keep the planning meeting to an hour",
      "Longer planning meetings lose people; park the details for later.")],
    [("project_zh_deploy_3pm", "project", "2026-10-09", "每周二下午三点发版",
      "发版前一小时冻结合并，发版后盯半小时监控。"),
     ("project_zh_deploy_3am", "project", "2026-10-09", "每周二凌晨三点发版",
      "发版前一小时冻结合并，发版后盯半小时监控。")],
    [("project_zh_meeting_half", "project", "2026-10-09", "每日站会开半小时",
      "超时的话题会后单独约人讨论。"),
     ("project_zh_meeting_15", "project", "2026-10-09", "每日站会开一刻钟",
      "超时的话题会后单独约人讨论。")],
    [("feedback_theme_colour", "feedback", "2026-10-09", "Use the dark colour theme in slides",
      "Slides are shown on the big screen in the dim meeting room."),
     ("feedback_theme_light_color", "feedback", "2026-10-09",
      "Use the light color theme in slides",
      "Slides are shown on the big screen in the dim meeting room.")],
]

# Memories of their own, as any folder has (a twin's nearest neighbours are not all twins).
SINGLES: list[Row] = [
    ("user_role", "user", "2026-07-01", "The user is a backend engineer on the payments team",
     "Mostly Go and SQL; knows Kubernetes well, less so the frontend."),
    ("user_zh_name", "user", "2026-07-02", "用户叫陈静，大家叫她静姐",
     "称呼她陈静就好，正式邮件里写陈静。"),
    ("feedback_no_emoji", "feedback", "2026-07-03", "No emoji in commit messages",
     "The changelog is generated from them and emoji break the release notes."),
    ("project_release_train", "project", "2026-07-04", "Releases go out every second Wednesday",
     "The release branch is cut on Monday; only fixes go in after that."),
    ("reference_grafana", "reference", "2026-07-05", "Grafana dashboards for the API",
     "grafana.acme.dev/d/api has latency, errors and saturation per endpoint."),
    ("project_zh_oncall", "project", "2026-07-06", "值班表在飞书日历里",
     "每周一换人，交接时在值班群里发一条总结。"),
    ("feedback_zh_no_mock_db", "feedback", "2026-07-07", "集成测试不要 mock 数据库",
     "用 docker compose 起一个真的 PostgreSQL，mock 掉的数据库曾经掩盖过迁移的问题。"),
    ("user_zh_kids", "user", "2026-07-08", "用户有一个女儿，在上小学",
     "下午四点要去接孩子，这个时间别约会议。"),
]


def rows() -> list[Row]:
    """Every memory of the folder."""
    return [r for _, pair in TWINS + LATER_TWINS + THIRD_TWINS for r in pair] + [
        r for pair in LOOKALIKES + LATER_LOOKALIKES + THIRD_LOOKALIKES for r in pair] + SINGLES


def write_rows(folder: Any, memories: list[Row]) -> None:
    """Write `memories` into `folder`: each created and updated on its own day."""
    from test_dream_support import add

    folder.mkdir(parents=True, exist_ok=True)
    for memory_id, category, day, description, body in memories:
        add(folder, memory_id, description, body, category=category, created=day,
            updated=f"{day}T09:00:00Z")


def build(folder: Any) -> None:
    """Write the folder: each memory created and updated on its own day."""
    write_rows(folder, rows())


def measure_cli(root: Any, write: Any, twins: list[tuple[str, list[Row]]],
                lookalikes: list[list[Row]], vectors: bool = False) -> dict[str, Any]:
    """A folder `write` makes, through the CLI as installed: (optionally `embed`), `dream --mode
    rewrite --json`, `rollback`. What became of each annotated pair, what else was merged,
    whether every memory kept its stamps and whether the rollback put back every byte."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from dream_meaning_cases import found
    from test_dream_support import folder_bytes, stamps

    root = Path(root)
    folder = root / "memory"
    write(folder)
    env = {**os.environ, "SAGE_MEM_STATE_DIR": str(root / "state"), "HOME": str(root / "home"),
           "TZ": "UTC", "SAGE_MEM_DAEMON": "0"}
    if not vectors:
        env["SAGE_MEM_SEMANTIC"] = "0"
    exe = Path(sys.executable).with_name("sage-mem")
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "sage_mem"]

    def sage(*argv: str) -> str:
        done = subprocess.run([*cli, "--dir", str(folder), *argv], env=env, check=True,
                              capture_output=True, text=True)
        return done.stdout

    if vectors:
        sage("embed")
    before = folder_bytes(folder)
    run_id = json.loads(sage("dream", "--mode", "rewrite", "--json"))["runId"]
    manifest = json.loads((root / "state" / "autodream" / "runs" / run_id /
                           "manifest.json").read_text(encoding="utf-8"))
    after = folder_bytes(folder)
    sage("rollback", run_id)
    restored = folder_bytes(folder)

    aged = [name for name, data in before.items() if name != "MEMORY.md" and stamps(
        after.get(name) or after[f"archive/{name}"]) != stamps(data)]
    listed = [n for n in manifest["notes"] if n.get("rule") == "near-duplicates"
              and "possible duplicate" in str(n.get("message"))]
    twin_pairs = [{a[0], b[0]} for _, (a, b) in twins]
    others = [f"{c['id']} -> {c.get('supersededBy')}" for c in manifest["changes"]
              if c.get("operation") == "archive" and c.get("supersededBy")
              and {c["id"], c["supersededBy"]} not in twin_pairs]
    return {
        "twins": {name: found(manifest, pair) for name, pair in twins},
        "lookalikes": {pair[0][0]: found(manifest, pair) for pair in lookalikes},
        "other_merges": others,
        "possible_duplicates": len(listed), "stamps_changed": aged,
        "rollback_exact": restored == before, "run_id": run_id, "manifest": manifest,
    }


def run_cli(root: Any, vectors: bool = False) -> dict[str, Any]:
    """The folder through the CLI as installed (`measure_cli`)."""
    return measure_cli(root, build, TWINS + LATER_TWINS + THIRD_TWINS,
                       LOOKALIKES + LATER_LOOKALIKES + THIRD_LOOKALIKES, vectors=vectors)


def print_figures(run: Any, parts: list[tuple[str, list, list]]) -> int:
    """Run `run` (a folder through the CLI) and print what became of each part's pairs."""
    import sys
    import tempfile
    from collections import Counter

    vectors = "--vectors" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        result = run(tmp, vectors=vectors)
    print(f"{'with' if vectors else 'without'} vectors: stamps changed: "
          f"{len(result['stamps_changed'])}; rollback byte-exact: {result['rollback_exact']}; "
          f"{result['possible_duplicates']} possible duplicates listed in the whole run; "
          f"{len(result['other_merges'])} merges of no annotated twin")
    for part, pairs, alike in parts:
        twins = Counter(result["twins"][name] for name, _ in pairs)
        apart = Counter(result["lookalikes"][rows[0][0]] for rows in alike)
        print(f"{part}: {len(pairs)} reworded twins: {twins['merged']} merged, "
              f"{twins['listed']} listed, {len(pairs) - twins['merged'] - twins['listed']} "
              f"missed; {len(alike)} look-alikes: {apart['merged']} merged, "
              f"{apart['listed']} listed as duplicates")
    for name, what in {**result["twins"], **result["lookalikes"]}.items():
        print(f"  {name}: {what}")
    for merge in result["other_merges"]:
        print(f"  merged, not annotated: {merge}")
    return 0


def main() -> int:
    """`python tests/dream_twin_cases.py [--vectors]`: the figures docs/dream.md quotes."""
    return print_figures(run_cli, [("first written", TWINS, LOOKALIKES),
                                   ("written later", LATER_TWINS, LATER_LOOKALIKES),
                                   ("for the second change", THIRD_TWINS, THIRD_LOOKALIKES)])


if __name__ == "__main__":
    sys_path = __import__("sys").path
    sys_path.insert(0, __import__("os").path.dirname(__file__))
    raise SystemExit(main())
