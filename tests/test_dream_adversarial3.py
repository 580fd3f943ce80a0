"""A third adversarial bilingual corpus: what the dream probe "dream3" attacked, in one folder.

Each memory below is one attack a real folder holds: a Chinese date word that is only
two words meeting (目前天气, 然后天黑, 如今年轻人), a project memory in Claude Code's
shape (a decision with **Why:** and **How to apply:** lines), a memory of one project
superseding one of another project or a global one, a Chinese count that runs from
another event (上线三天后), a long body whose opening a heading or a "but…" takes back,
and more in the sections below. What a
careful person accepts is written beside it: `KEPT` must keep every byte, `DATED` must
read as given, `LISTED` must be left and listed. A report run must show exactly what a
rewrite run does, a second rewrite run change nothing, and a rollback put back every byte.
"""

from __future__ import annotations

from pathlib import Path

from dream_corpus import NOW
from test_dream_support import (
    add,
    assert_report_shows_rewrite,
    assert_second_rewrite_changes_nothing,
    corpus_run,
    folder_bytes,
)

from sage_mem.dream import rollback, run_dream
from sage_mem.store import MemoryStore

DAY = "2026-11-25"  # a Wednesday: the day every note below was written (`created`, `updated`)

# id -> (category, description, body); every byte must stay
KEPT = {
    # a date word made of two words meeting: 目前+天气, 然后+天黑, 之后+天气, 如今+年轻人,
    # 如今+早已, 过去+年份, 当前+天数 (in the description too)
    "project_zh_weather": ("project", "天气与演练", "目前天气很好，演练照常进行。"),
    "project_zh_then": ("project", "机房断电记录", "机房断电了，然后天就黑了，我们用手电排查。"),
    "project_zh_after": ("project", "降温提醒", "寒潮过境之后天气转凉，记得给机房加湿。"),
    "project_zh_nowadays": ("project", "招聘观察", "如今年轻人都用 Rust 写服务了，我们也在招。"),
    "project_zh_already": ("project", "旧脚本", "那个旧脚本如今早已不用了，可以归档。"),
    "project_zh_past_years": ("project", "数据口径", "过去年份的数据口径不同，对比时要注意。"),
    "project_zh_current": ("project", "当前天数", "当前天数统计在看板上。"),
    # a project memory in Claude Code's own shape: the decision, then **Why:** and
    # **How to apply:** lines — a project memory still, not a feedback rule
    "project_ledger": (
        "project",
        "Use Postgres for the ledger",
        "We chose Postgres for the ledger.\n\n**Why:** we need serializable transactions."
        "\n\n**How to apply:** new ledger tables go in Postgres.",
    ),
    "project_zh_ledger": (
        "project",
        "账本用 PostgreSQL",
        "账本表统一放在 PostgreSQL。\n\n**Why:** 需要可串行化事务。"
        "\n\n**How to apply:** 新的账本表都建在 PostgreSQL 里。",
    ),
}
# id -> (category, description, body, the body as it must read after a rewrite)
DATED = {
    "project_zh_days": (
        "project",
        "评审与发版",
        "后天开评审，大后天发版，前天已经冻结了代码。",
        "后天（2026年11月27日）开评审，大后天（2026年11月28日）发版，"
        "前天（2026年11月23日）已经冻结了代码。",
    ),
    "project_zh_plan": (
        "project",
        "灰度计划",
        "我们预计三天后开始灰度，两周前已经做完压测。",
        "我们预计三天后（2026年11月28日）开始灰度，两周前（2026年11月11日前后）已经做完压测。",
    ),
    "project_zh_as_of": (
        "project",
        "截至今天的进度",
        "截至今天，迁移完成了一半。",
        "截至今天（2026年11月25日），迁移完成了一半。",
    ),
}
# id -> (category, description, body, a phrase the run must name when it lists the memory)
LISTED: dict[str, tuple[str, str, str, str]] = {
    # a count that runs from another event, not from the day it was written
    "project_zh_leak": ("project", "内存泄漏", "v2 上线三天后出现了内存泄漏，已回滚。", "三天后"),
    "project_zh_feedback": ("project", "上线后观察", "发布两周后用户反馈明显变少。", "两周后"),
    "project_zh_freeze": ("project", "代码冻结", "发版一周前冻结代码。", "一周前"),
}



def build(folder: Path) -> None:
    folder.mkdir(parents=True)
    stamp = {"created": DAY, "updated": f"{DAY}T09:00:00Z"}
    for memory_id, (category, description, body) in KEPT.items():
        add(folder, memory_id, description, body, category=category, **stamp)
    for memory_id, (category, description, body, _) in DATED.items():
        add(folder, memory_id, description, body, category=category, **stamp)
    for memory_id, (category, description, body, _) in LISTED.items():
        add(folder, memory_id, description, body, category=category, **stamp)
    for memory_id, (description, body) in {**UNSUMMED, **SUMMED}.items():
        add(folder, memory_id, description, body, category="project", **stamp)
    build_scoped(folder)


# long bodies whose opening the rest takes back: a summary of the opening would say what
# is no longer so (a cancelled plan under a heading, a decision cut before its "but…")
UNSUMMED = {
    "project_beta_launch": (
        "Beta launch",
        "## Status: cancelled\n\nWe will launch the public beta to all customers in the EU "
        "region on the first of next quarter, with the new pricing page and onboarding. "
        "Marketing prepared the emails and the blog post, and support has the FAQ ready.",
    ),
    "project_db_plan": (
        "Database plan",
        "The team agreed in the design review on Tuesday that we should migrate the billing "
        "database from PostgreSQL to MySQL during the coming quarter, but the decision was "
        "reversed by the CTO within the same week after a cost review. We stay on PostgreSQL "
        "for now.",
    ),
    "project_zh_db_plan": (
        "数据库计划",
        "团队在周二的设计评审中同意在下个季度把计费数据库从 PostgreSQL 迁移到 MySQL，"
        "并且由平台组负责整个迁移过程中的数据校验、回滚预案、灰度切流和上线之后的监控告警配置，"
        "以及所有下游报表系统的适配和验收工作，但这个决定在同一周就被 CTO 否决了，"
        "我们继续使用 PostgreSQL，相关排期全部释放。",
    ),
}
# a long body nothing takes back still gets its summary
SUMMED = {
    "project_billing_move": (
        "Billing move",
        "The billing service moved to the new cluster in the Frankfurt region, with its "
        "queue workers and the invoice renderer. Support has the runbook for it, and the "
        "old cluster is kept read-only for a month while the reports are checked.",
    ),
}


# `supersedes:` across project scopes: (id, project, supersedes, must stay in service)
SCOPED = [
    ("project_blog_db", "blog", [], True),
    ("project_shop_db", "shop", ["project_blog_db", "project_any_db"], True),
    ("project_any_db", None, [], True),
    ("project_old_cache", "shop", [], False),
    ("project_cache", None, ["project_old_cache"], True),
]


def build_scoped(folder: Path) -> None:
    for memory_id, project, supersedes, _ in SCOPED:
        add(
            folder,
            memory_id,
            f"Where {memory_id} stands",
            category="project",
            **({"project": project} if project else {}),
            **({"supersedes": supersedes} if supersedes else {}),
            created="2026-11-02" if not supersedes else DAY,
            updated=f"{'2026-11-02' if not supersedes else DAY}T09:00:00Z",
        )


def _run(folder: Path, mode: str) -> dict:
    return corpus_run(build, folder, mode, NOW)


def test_a_rewrite_over_the_third_adversarial_corpus_is_one_a_careful_person_accepts(
    tmp_path: Path, utc: None
) -> None:
    folder = tmp_path / "memory"
    manifest = _run(folder, "rewrite")
    store = MemoryStore(folder, watch=False)
    for memory_id, (category, description, body) in KEPT.items():
        memory = store.read(memory_id)
        assert (memory.description, memory.body.strip()) == (description, body), memory_id
        assert memory.category == category, memory_id
    for memory_id, (_, _, _, dated) in DATED.items():
        assert store.read(memory_id).body.strip() == dated, memory_id
    for memory_id, (_, description, body, phrase) in LISTED.items():
        memory = store.read(memory_id)
        assert (memory.description, memory.body.strip()) == (description, body), memory_id
        listed = " ".join(n["message"] for n in manifest["notes"] if n.get("id") == memory_id)
        assert phrase in listed, memory_id
    for memory_id in UNSUMMED:
        assert store.read(memory_id).summary is None, memory_id
    for memory_id in SUMMED:
        assert store.read(memory_id).summary, memory_id
    live = {m.id for m in store.list()}
    for memory_id, _, _, stays in SCOPED:
        assert (memory_id in live) == stays, memory_id
    listed = " ".join(n["message"] for n in manifest["notes"] if n.get("id") == "project_blog_db")
    assert "project shop" in listed and "project blog" in listed


def test_a_report_run_over_the_third_adversarial_corpus_shows_what_a_rewrite_does(
    tmp_path: Path, utc: None
) -> None:
    assert_report_shows_rewrite(build, tmp_path, NOW)


def test_a_second_rewrite_over_the_third_adversarial_corpus_changes_nothing(
    tmp_path: Path, utc: None
) -> None:
    assert_second_rewrite_changes_nothing(build, tmp_path / "memory", NOW)


def test_a_rollback_of_the_run_puts_back_every_byte(tmp_path: Path, utc: None) -> None:
    folder = tmp_path / "memory"
    build(folder)
    before = folder_bytes(folder)
    store = MemoryStore(folder, watch=False)
    run = run_dream(store, mode="rewrite", now=NOW)
    assert folder_bytes(folder) != before
    rollback(store, run.run_id)
    after = folder_bytes(folder, skip=("autodream", "archive"))
    assert after == {name: data for name, data in before.items() if name in after}
    assert set(after) == set(before)
