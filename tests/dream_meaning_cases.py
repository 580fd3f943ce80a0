"""Twins and contradictions worded differently, in English and Chinese (issue 29), for the tests.

Each case is a small set of memories: (id, category, day, description, body), and what
a careful reader wants of them. Kinds, not sentences: the same fact reworded with the
same body, a Claude Code `type:` twin, answer-style and test-rule pairs; a value that
changed weeks apart (an editor, a theme, a length, a meeting, a deploy rule, a pair
across `user` and `feedback`); near-twins that differ in a fact and must never merge.
"""

from __future__ import annotations

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
]
