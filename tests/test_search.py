"""Search: ranking in Chinese, English and mixed text, filters, modifiers, and index upkeep.

BILINGUAL_MEMORIES and BILINGUAL_QUERIES are a small hand-made folder of the
kind a real user keeps (short notes in Chinese, English or both) and the
questions an agent would ask of it; `benchmarks/retrieval.py` prints their
per-language figures beside the LoCoMo ones.
"""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sage_mem import MemoryStore
from sage_mem.memory.value import Memory, memory_from_meta
from sage_mem.search.index import Index
from sage_mem.search.query import Filters
from sage_mem.search.scoring import word_pairs
from sage_mem.search.tokens import loose_terms, tokenize

BILINGUAL_MEMORIES: dict[str, str] = {
    "user_cat": """---
description: 用户的猫叫芝麻，喜欢晒太阳
category: user
aliases: [猫, cat, pet, 宠物]
---
芝麻是一只三岁的橘猫，最喜欢在窗台上晒太阳。
""",
    "user_neighbour_dog": """---
description: The neighbour's dog Biscuit barks at the mail carrier every morning
category: user
---
Not the user's pet; mentioned when the user complained about noise.
""",
    "reference_test_command": """---
description: "How to run the tests: .venv/bin/pytest -q from the repo root"
category: reference
aliases: [测试命令, run tests, pytest]
---
Use `-k NAME` to pick tests and `-x` to stop at the first failure.
""",
    "reference_integration_tests_zh": """---
description: 集成测试需要先用 docker compose 启动 Postgres
category: reference
aliases: [integration tests]
---
运行 `docker compose up -d db`，再跑 `make integration`。
""",
    "project_release_zh": """---
description: sage-mem 1.0 的发布截止日期是 12 月 15 日
category: project
aliases: [deadline, release date]
project: sage-mem
---
发布前要完成文档、基准测试和 PyPI 打包。
""",
    "project_payments_migration": """---
description: The payments API migration must ship by March 3
category: project
project: payments
---
Old endpoints are switched off the week after.
""",
    "feedback_concise_zh": """---
description: 回答要简洁，先给结论再解释
category: feedback
aliases: [concise answers, brevity]
---
**Why:** 用户不喜欢长篇大论。
**How to apply:** 第一句就是答案。
""",
    "feedback_tests_first": """---
description: Write a failing test before fixing a bug
category: feedback
---
**Why:** a fix without a test comes back.
**How to apply:** reproduce the bug in a test, watch it fail, then fix it.
""",
    "user_profile": """---
description: The user is a backend engineer who works mostly in Python and Go
category: user
---
Reads TypeScript but does not enjoy writing it.
""",
    "user_editor_zh": """---
description: 用户用 Neovim 写代码，不用 VS Code
category: user
aliases: [editor, 编辑器]
---
插件用 lazy.nvim 管理。
""",
    "user_coffee": """---
description: The user drinks an oat milk flat white, no sugar
category: user
aliases: [咖啡, coffee order]
---
Usually around 10 am.
""",
    "user_tea_zh": """---
description: 用户下午喜欢喝乌龙茶
category: user
aliases: [tea, oolong]
---
""",
    "reference_docs_zh": """---
description: 项目文档在 docs/ 目录，用 mkdocs 构建
category: reference
aliases: [documentation, docs]
---
本地预览：`mkdocs serve`。
""",
    "reference_ci": """---
description: CI runs on GitHub Actions; the workflow file is .github/workflows/ci.yml
category: reference
aliases: [持续集成]
---
""",
    "project_db_migration_zh": """---
description: 数据库迁移用 alembic，迁移脚本放在 migrations/ 下
category: project
aliases: [database migrations]
---
新建迁移：`alembic revision --autogenerate -m "..."`。
""",
    "user_timezone": """---
description: The user lives in Shanghai (UTC+8) and works 10:00 to 19:00
category: user
aliases: [时区, 上海, timezone]
---
""",
    "user_birthday_zh": """---
description: 用户的生日是 4 月 2 日
category: user
aliases: [birthday]
---
""",
    "feedback_commit_messages": """---
description: No emoji in commit messages; use the imperative mood
category: feedback
aliases: [提交信息]
---
""",
    "feedback_reply_language_zh": """---
description: 用中文回复用户，代码注释用英文
category: feedback
aliases: [reply language, Chinese replies]
---
""",
    "project_flaky_watch_test": """---
description: test_watch 在 macOS 上偶尔失败，原因是 FSEvents 延迟
category: project
aliases: [flaky test]
---
重跑一次通常就过；不要加 sleep，用 wait_until。
""",
    "reference_staging": """---
description: The staging server is staging.example.internal; deploy with make deploy-staging
category: reference
aliases: [预发布环境, 部署]
---
""",
    "user_allergy": """---
description: The user is allergic to peanuts
category: user
aliases: [花生过敏]
---
""",
    "project_standup_zh": """---
description: 每周三上午十点开站会
category: project
aliases: [standup, weekly meeting]
---
""",
    "reference_api_keys": """---
description: API keys live in the 1Password vault Engineering, never in the repo
category: reference
aliases: [密钥, secrets]
---
""",
    "user_kids_zh": """---
description: 用户有两个孩子，女儿叫小米，儿子叫豆豆
category: user
aliases: [children, daughter, son]
---
""",
    "project_perf_goal": """---
description: "Search latency target: median under 1 ms at 100k memories"
category: project
aliases: [性能目标]
---
""",
    "feedback_small_prs": """---
description: Keep pull requests under 400 lines; split larger changes
category: feedback
aliases: [代码审查, PR 大小]
---
""",
    "reference_style_zh": """---
description: 代码风格遵循ruff默认规则，行宽100
category: reference
aliases: [style guide, lint]
---
""",
    "user_running_zh": """---
description: 用户每周跑步三次，在准备半程马拉松
category: user
aliases: [running, marathon]
---
""",
    "user_support_group": """---
description: The user joined a support group for new parents last spring
category: user
---
They meet on the first Sunday of the month.
""",
    "reference_office_address_zh": """---
description: 公司地址：上海市徐汇区虹桥路 100 号，前台在一楼
category: reference
aliases: [office address]
---
""",
    "user_commute_zh": """---
description: 用户每天坐地铁上班，单程四十分钟
category: user
---
""",
    "reference_meeting_notes_zh": """---
description: 会议纪要记在飞书文档里，按月份归档
category: reference
---
""",
    "project/api/auth_flow": """---
description: Login uses the OAuth device code grant; tokens are refreshed every hour
category: project
---
""",
    "user_group_support_ticket": """---
description: The user filed a ticket with group IT support about the VPN
category: user
---
""",
}

# (query, expected id, language, rank it must reach: 1 = first, 3 = top three)
BILINGUAL_QUERIES: list[tuple[str, str, str, int]] = [
    ("我的猫叫什么名字", "user_cat", "zh", 1),
    ("猫", "user_cat", "zh", 1),
    ("测试命令是什么", "reference_test_command", "zh", 1),
    ("集成测试怎么跑", "reference_integration_tests_zh", "zh", 1),
    ("发布截止日期", "project_release_zh", "zh", 1),
    ("回答风格要简洁吗", "feedback_concise_zh", "zh", 1),
    ("用什么编辑器", "user_editor_zh", "zh", 1),
    ("数据库迁移脚本放在哪里", "project_db_migration_zh", "zh", 1),
    ("站会是什么时候", "project_standup_zh", "zh", 1),
    ("女儿叫什么", "user_kids_zh", "zh", 1),
    ("半程马拉松", "user_running_zh", "zh", 1),
    ("生日", "user_birthday_zh", "zh", 1),
    ("喝茶", "user_tea_zh", "zh", 1),
    ("茶", "user_tea_zh", "zh", 1),
    ("公司地址", "reference_office_address_zh", "zh", 1),
    ("会议纪要放在哪里", "reference_meeting_notes_zh", "zh", 1),
    ("每天怎么上班", "user_commute_zh", "zh", 1),
    ("what is my cat called", "user_cat", "en", 1),
    ("how do I run the tests", "reference_test_command", "en", 1),
    ("release deadline", "project_release_zh", "en", 1),
    ("which editor does the user prefer", "user_editor_zh", "en", 1),
    ("coffee order", "user_coffee", "en", 1),
    ("where is the documentation", "reference_docs_zh", "en", 1),
    ("what timezone is the user in", "user_timezone", "en", 1),
    ("is the user allergic to anything", "user_allergy", "en", 1),
    ("rules for commit messages", "feedback_commit_messages", "en", 1),
    ("how do we deploy to staging", "reference_staging", "en", 1),
    ("where are the API keys kept", "reference_api_keys", "en", 1),
    ("how big should a pull request be", "feedback_small_prs", "en", 1),
    ("when is the payments migration due", "project_payments_migration", "en", 1),
    ("fix bugs test first", "feedback_tests_first", "en", 1),
    ("support group", "user_support_group", "en", 1),
    ("deploying to staging", "reference_staging", "en", 1),
    ("auth flow", "project/api/auth_flow", "en", 1),
    ("when do login tokens refresh", "project/api/auth_flow", "en", 1),
    ("office address", "reference_office_address_zh", "en", 1),
    ("pytest 命令", "reference_test_command", "mixed", 1),
    ("芝麻 cat", "user_cat", "mixed", 1),
    ("staging 环境怎么部署", "reference_staging", "mixed", 1),
    ("flaky 测试", "project_flaky_watch_test", "mixed", 1),
    ("用 mkdocs 构建文档", "reference_docs_zh", "mixed", 1),
    ("ruff 行宽", "reference_style_zh", "mixed", 1),
    ("ruff规则", "reference_style_zh", "mixed", 1),
    ("用pytest跑测试", "reference_test_command", "mixed", 1),
    ("Neovim 插件", "user_editor_zh", "mixed", 1),
    ("ｐｙｔｅｓｔ", "reference_test_command", "mixed", 1),
    ("ＣＩ ｗｏｒｋｆｌｏｗ", "reference_ci", "mixed", 1),
    ("咖啡", "user_coffee", "mixed", 1),
    ("tea", "user_tea_zh", "mixed", 1),
    ("花生", "user_allergy", "mixed", 1),
    ("peanut allergy", "user_allergy", "mixed", 1),
    ("上海时区", "user_timezone", "mixed", 1),
    ("代码审查 PR", "feedback_small_prs", "mixed", 1),
    ("secrets 放哪里", "reference_api_keys", "mixed", 1),
    ("用户的孩子 children", "user_kids_zh", "mixed", 3),
    ("持续集成 workflow", "reference_ci", "mixed", 1),
]


def write_corpus(folder: Path, memories: dict[str, str]) -> None:
    for memory_id, text in memories.items():
        path = folder / (memory_id + ".md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    root = tmp_path_factory.mktemp("bilingual")
    write_corpus(root / "memory", BILINGUAL_MEMORIES)
    return MemoryStore(root / "memory", state_dir=root / "state")


@pytest.mark.parametrize(
    ("query", "expected", "within"),
    [
        pytest.param(query, expected, within, id=f"{language}-{query}")
        for query, expected, language, within in BILINGUAL_QUERIES
    ],
)
def test_bilingual_query_ranks_its_memory_near_the_top(
    bilingual: MemoryStore, query: str, expected: str, within: int
) -> None:
    ranked = [hit.id for hit in bilingual.search(query, limit=10)]
    assert expected in ranked[:within], ranked[:5]


# Index-level helpers: memories built in memory, no files.


def make(memory_id: str, description: str, body: str = "", **meta: object) -> Memory:
    return memory_from_meta(
        memory_id,
        Path(memory_id + ".md"),
        {"description": description, **meta},
        body,
        archived=memory_id.startswith("archive/"),
    )


def index_of(*memories: Memory, half_life_days: float | None = None) -> Index:
    index = Index(half_life_days=half_life_days)
    index.add_many(memories)
    return index


def ids(hits: list) -> list[str]:
    return [hit.id for hit in hits]


# Filters.


def test_category_filter_keeps_only_that_category() -> None:
    index = index_of(
        make("user_tests", "the user likes tests", category="user"),
        make("feedback_tests", "write tests first", category="feedback"),
        make("reference_tests", "tests run with pytest", category="reference"),
    )
    assert ids(index.search("tests", filters=Filters(category="feedback"))) == ["feedback_tests"]
    assert set(ids(index.search("tests", filters=Filters(category=["user", "reference"])))) == {
        "user_tests",
        "reference_tests",
    }


def test_project_filter_hides_other_projects_and_keeps_global_memories() -> None:
    index = index_of(
        make("mine", "deploy with make deploy", project="sage-mem"),
        make("theirs", "deploy with make deploy", project="payments"),
        make("everywhere", "deploy checklist", project="global"),
        make("unscoped", "deploy notes"),
    )
    assert set(ids(index.search("deploy", filters=Filters(project="sage-mem")))) == {
        "mine",
        "everywhere",
        "unscoped",
    }
    assert "theirs" in ids(index.search("deploy"))


def test_tag_filter_needs_every_tag_given_in_any_case() -> None:
    index = index_of(
        make("both", "release steps", tags=["Release", "ops"]),
        make("one", "release notes", tags=["release"]),
    )
    assert ids(index.search("release", filters=Filters(tags=["release", "OPS"]))) == ["both"]
    assert set(ids(index.search("release", filters=Filters(tags=["release"])))) == {"both", "one"}


def test_archived_memories_are_hidden_unless_asked_for() -> None:
    index = index_of(
        make("archive/old_cat", "the user's old cat"),
        make("user_cat", "the user's cat Sesame"),
    )
    assert ids(index.search("cat")) == ["user_cat"]
    assert ids(index.search("cat", filters=Filters(category="user"))) == []
    assert set(ids(index.search("cat", filters=Filters(archived=True)))) == {
        "archive/old_cat", "user_cat"}
    assert [m.id for m in index.select()] == ["user_cat"]
    assert [m.id for m in index.select(Filters(archived=True))] == ["archive/old_cat", "user_cat"]


def test_store_search_hides_the_archive_folder_by_default(
    empty_dir: Path, tmp_path: Path
) -> None:
    write_corpus(
        empty_dir,
        {
            "user_cat": "---\ndescription: the user's cat Sesame\n---\n",
            "archive/user_old_cat": "---\ndescription: the user's old cat Pepper\n---\n",
        },
    )
    store = MemoryStore(empty_dir, state_dir=tmp_path / "state")
    assert ids(store.search("cat")) == ["user_cat"]
    assert "user_cat" in ids(store.search("cat", archived=True))
    assert len(store.search("cat", archived=True)) == 2


# Modifiers and order.


def test_higher_trust_ranks_an_otherwise_equal_memory_first() -> None:
    index = index_of(
        make("a_doubted", "the build uses make", trust=0.2),
        make("b_trusted", "the build uses make", trust=0.9),
    )
    hits = index.search("build")
    assert ids(hits) == ["b_trusted", "a_doubted"]
    assert hits[0].score > hits[1].score


def test_recency_ranks_the_newer_memory_first_when_a_half_life_is_set() -> None:
    memories = (
        make("a_old", "the deploy script", updated="2025-01-01T00:00:00Z"),
        make("b_new", "the deploy script", updated="2026-11-01T00:00:00Z"),
    )
    now = datetime(2026, 11, 29, tzinfo=UTC)
    assert ids(index_of(*memories, half_life_days=30).search("deploy", now=now)) == [
        "b_new",
        "a_old",
    ]
    assert ids(index_of(*memories).search("deploy", now=now)) == ["a_old", "b_new"]


def test_equal_scores_list_by_id_on_every_page() -> None:
    names = ["m07", "m02", "m10", "m01", "m05", "m03", "m09", "m04", "m08", "m06"]
    index = index_of(*(make(name, "the same words") for name in names))
    everything = ids(index.search("same words", limit=10))
    assert everything == sorted(names)
    pages = [ids(index.search("same words", limit=3, offset=start)) for start in (0, 3, 6, 9)]
    assert [memory_id for page in pages for memory_id in page] == everything


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n\t", id="blank"),
        pytest.param("?!, ...", id="punctuation"),
        pytest.param("what is the", id="english-stop-words"),
        pytest.param("what kind of how many", id="question-frames"),
        pytest.param("什么的吗", id="chinese-stop-words"),
        pytest.param("xyzzy", id="unknown-word"),
    ],
)
def test_query_without_useful_terms_finds_nothing(query: str) -> None:
    index = index_of(make("user_cat", "what is the user's cat called: Sesame, 芝麻"))
    assert index.search(query) == []


def test_repeating_a_query_word_changes_nothing() -> None:
    index = index_of(make("a", "cat food brand"), make("b", "cat toys and cat trees"))
    once = index.search("cat food")
    assert index.search("cat cat food cat") == once


def test_adjacent_query_words_rank_the_phrase_above_scattered_words() -> None:
    index = index_of(
        make("user_group_support_ticket", "the user asked group IT for support"),
        make("user_support_group", "the user joined a support group"),
    )
    assert ids(index.search("support group")) == [
        "user_support_group",
        "user_group_support_ticket",
    ]


def test_word_pairs_join_adjacent_words_only() -> None:
    assert word_pairs(["support", "group", "用户", "~用", "meet"]) == ["support group"]
    assert word_pairs(["cat", "cat"]) == []
    # Chinese terms only: no pair; a word of non-ASCII letters among them is still a word.
    assert word_pairs(["用户", "~用", "~户", "测试"], {"用户", "~用", "~户", "测试"}) == []
    terms = tokenize("用户 café naïve 测试")
    assert word_pairs(terms) == word_pairs(terms, set(terms)) == ["café naïve"]


def test_category_prefix_of_a_file_name_is_not_a_search_term() -> None:
    index = index_of(
        make("user_cat_zh", "用户的猫叫芝麻", category="user"),
        make("user_profile", "works mostly in Python", category="user"),
    )
    assert ids(index.search("user")) == []
    assert ids(index.search("profile")) == ["user_profile"]


def test_hit_reports_the_share_of_query_terms_it_matched() -> None:
    index = index_of(make("both", "oat milk flat white"), make("one", "flat tyre"))
    by_id = {hit.id: hit for hit in index.search("flat white")}
    assert by_id["both"].matched == 1.0
    assert 0.0 < by_id["one"].matched < 1.0



@pytest.mark.parametrize(
    ("query", "covering", "decoy", "others"),
    [
        pytest.param(
            "garden tomatoes",
            "Every spring the user grows tomato seedlings on the balcony, moves them to the"
            " allotment garden in May and waters them each evening after work, writing the"
            " harvest down in a notebook",
            "Tomato soup recipe",
            ["The garden shed key is under the mat", "Garden waste goes out on Tuesdays",
             "The community garden meets on Sundays"],
            id="en",
        ),
        pytest.param(
            "花园里的番茄",
            "用户每年春天在阳台上育番茄苗，五月移到社区花园，每天下班后去浇水并记录收成",
            "番茄炒蛋的做法",
            ["花园工具间的钥匙在门垫下", "周二清理花园垃圾", "社区花园周日开放"],
            id="zh",
        ),
    ],
)
def test_a_long_memory_holding_every_query_word_outranks_a_short_one_holding_one(
    query: str, covering: str, decoy: str, others: list[str]
) -> None:
    # A memory's length says how much it covers more than how wordy it is: the short
    # decoy holds only the rarer query word, and must not win on its brevity.
    index = index_of(
        make("user_balcony", covering),
        make("user_a_soup", decoy),
        *(make(f"user_other_{n}", text) for n, text in enumerate(others)),
    )
    assert ids(index.search(query))[:2] == ["user_balcony", "user_a_soup"]


# Keeping the postings current.


def unique(step: int) -> str:
    """A word of its own for each step, of consonants only (no suffix to stem; "unique12"
    would also be "unique")."""
    return "unique" + "".join("bcdfghjkmn"[int(digit)] for digit in str(step))


def test_many_updates_and_removes_leave_no_ghost_hits() -> None:
    rng = random.Random(7)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    index = Index()
    live: dict[str, Memory] = {}
    for step in range(100):
        memory_id = f"m{rng.randrange(30)}"
        if memory_id in live and rng.random() < 0.4:
            assert index.remove(memory_id)
            del live[memory_id]
        else:
            text = " ".join(rng.sample(words, 3)) + f" {unique(step)}"
            live[memory_id] = make(memory_id, text)
            index.put(live[memory_id])
    assert index.ids() == set(live)
    for step in range(100):
        owner = [m.id for m in live.values() if m.description.endswith(f" {unique(step)}")]
        assert ids(index.search(unique(step))) == owner
    for word in words:
        expected = {m.id for m in live.values() if word in m.description.split()}
        assert set(ids(index.search(word, limit=100))) == expected
    rebuilt = index_of(*live.values())
    for word in words:
        query = word + " " + words[(words.index(word) + 1) % len(words)]
        fresh = index.search(query, limit=100)
        again = rebuilt.search(query, limit=100)
        assert ids(fresh) == ids(again)
        assert [h.score for h in fresh] == pytest.approx([h.score for h in again], rel=1e-3)


def test_removing_everything_empties_the_postings() -> None:
    memories = [make(f"m{i}", f"note number {i} about cats and dogs") for i in range(40)]
    index = index_of(*memories)
    for memory in memories:
        index.remove(memory.id)
    assert len(index) == 0
    assert index.search("cats") == []
    assert index._postings == {}


def test_pruned_search_returns_exactly_what_scoring_every_posting_would() -> None:
    rng = random.Random(11)
    vocabulary = [f"w{n}" for n in range(60)]
    zipf = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    memories = [
        make(
            f"m{n:03}",
            " ".join(rng.choices(vocabulary, weights=zipf, k=6)),
            trust=rng.choice([0.0, 0.5, 1.0]),
            project=rng.choice([None, "a", "b"]),
            updated=f"2026-{rng.randint(1, 11):02}-01",
        )
        for n in range(600)
    ]
    queries = [" ".join(rng.sample(vocabulary[:30], rng.randint(2, 8))) for _ in range(80)]
    now = datetime(2026, 12, 1, tzinfo=UTC)
    for half_life in (None, 30.0):
        pruned = index_of(*memories, half_life_days=half_life)
        exhaustive = index_of(*memories, half_life_days=half_life)
        exhaustive._max_boost = float("inf")  # no unseen memory is ever ruled out
        for query in queries:
            for page in ({}, {"filters": Filters(project="a")}, {"limit": 5, "offset": 5}):
                got = pruned.search(query, now=now, **page)
                want = exhaustive.search(query, now=now, **page)
                assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]


def test_search_never_reads_the_files(empty_dir: Path, tmp_path: Path) -> None:
    write_corpus(empty_dir, {"user_cat": "---\ndescription: the user's cat Sesame\n---\n"})
    store = MemoryStore(empty_dir, state_dir=tmp_path / "state")
    (empty_dir / "user_cat.md").unlink()
    assert ids(store.search("Sesame")) == ["user_cat"]


def test_concurrent_writes_and_searches_stay_consistent() -> None:
    index = index_of(*(make(f"base{i}", f"shared topic {i}") for i in range(50)))
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for step in range(200):
                memory_id = f"w{worker}_{step % 20}"
                index.put(make(memory_id, f"shared topic writer {worker} step {step}"))
                if step % 3 == 0:
                    index.remove(memory_id)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(200):
                for hit in index.search("shared topic", limit=20):
                    assert hit.id in index or hit.id.startswith("w")
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert {hit.id for hit in index.search("shared topic", limit=500)} == index.ids()


# Words that differ: dates, identifiers, word forms, numbers, loose Chinese. Each decoy
# shares the query's surface (its digits, its characters) and sorts first by id, so a
# search that does not read the words the same way ranks the decoy first.


@pytest.mark.parametrize(
    ("query", "text", "decoy"),
    [
        pytest.param("4月28日的会议", "Team meeting on 2023-04-28 on the budget",
                     "Team meeting on 2023-05-28 on the budget", id="zh-to-iso"),
        pytest.param("4月28号开会", "2023年4月28日开会讨论预算", "4号楼28层开会讨论预算",
                     id="hao-to-ri"),
        pytest.param("what happened on April 28", "2023-04-28 预算会议", "2023-05-28 预算会议",
                     id="en-to-iso"),
        pytest.param("meeting 2023-04-28", "We met on 28 April 2023 to plan",
                     "We met on 28 May 2023 to plan, room 04", id="iso-to-en"),
        pytest.param("去年四月的旅行", "Trip to Kyoto in April 2023", "Trip to Kyoto in 2024",
                     id="zh-month-to-en"),
    ],
)
def test_a_date_finds_the_memory_that_writes_it_another_way(
    query: str, text: str, decoy: str
) -> None:
    index = index_of(make("user_dated", text), make("user_a_decoy", decoy))
    assert ids(index.search(query))[:1] == ["user_dated"]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        pytest.param("OAuth setup", "reference_api", id="prefix-of-identifier"),
        pytest.param("which lazy setup", "reference_editor", id="camel-part"),
        pytest.param("how do I log in", "reference_page", id="log-in-finds-login"),
        pytest.param("the user name", "reference_accessor", id="camel-parts-apart"),
        pytest.param("用lazy管理插件", "reference_editor", id="zh-around-camel-part"),
        pytest.param("用户 name 字段", "reference_accessor", id="zh-camel-part"),
    ],
)
def test_a_part_of_an_identifier_finds_it(query: str, wanted: str) -> None:
    index = index_of(
        make("reference_api", "The API uses OAuth2 for every client"),
        make("reference_editor", "Editor: LazyVim, plugins pinned in the lock file"),
        make("reference_accessor", "getUserName() returns the display label"),
        make("reference_page", "The login page is at /auth"),
        make("reference_a_noise", "The build runs on every push"),
    )
    # (The ids say nothing the query asks: a file name is searched too.)
    assert ids(index.search(query))[:1] == [wanted]


def test_login_finds_log_in_written_apart() -> None:
    index = index_of(
        make("user_sso", "To log in, the user goes through the company SSO"),
        make("user_password", "Passwords are reset through the help desk"),
    )
    assert ids(index.search("login problems")) == ["user_sso"]


@pytest.mark.parametrize(
    ("query", "text", "decoy"),
    [
        pytest.param("lived there three years", "She has lived there for 3 years",
                     "She has lived there for 5 years", id="en-word"),
        pytest.param("住了三年", "She has lived in Berlin for 3 years", "五年前去过罗马",
                     id="zh-to-digits"),
        pytest.param("she moved 3 years ago", "三年前搬到柏林", "五年前去过罗马",
                     id="digits-to-zh"),
        pytest.param("when did he win his third tournament", "He won the 3rd tournament in May",
                     "He won the 5th tournament in May", id="en-ordinal"),
    ],
)
def test_a_number_finds_the_memory_that_writes_it_another_way(
    query: str, text: str, decoy: str
) -> None:
    index = index_of(make("user_counted", text), make("user_a_decoy", decoy))
    assert ids(index.search(query))[:1] == ["user_counted"]


def test_a_word_for_now_is_no_topic() -> None:
    # "currently" places the question in time, as "now" does: a note that happens to
    # say "currently" is not what it asks about.
    index = index_of(
        make("user_book", "The user is reading Dune by Frank Herbert"),
        make("user_a_piano", "The user is currently learning the piano"),
    )
    assert ids(index.search("what is the user currently reading"))[:1] == ["user_book"]
    assert ids(index.search("what has the user recently been reading"))[:1] == ["user_book"]


def test_a_latin_word_in_chinese_text_is_searched_not_dropped() -> None:
    index = index_of(
        make("user_it", "用户在IT行业工作了十年"),
        make("user_a_food", "用户在餐饮行业"),
    )
    assert ids(index.search("IT行业"))[:1] == ["user_it"]


@pytest.mark.parametrize(
    ("query", "text", "decoy"),
    [
        pytest.param("狗狗的名字", "用户养了一条狗，叫旺财", "名片在抽屉", id="doubled-character"),
        pytest.param("打篮球", "用户周末打球", "篮子里有球拍", id="skip-bigram"),
    ],
)
def test_loose_chinese_finds_the_memory_when_nothing_better_matches(
    query: str, text: str, decoy: str
) -> None:
    index = index_of(make("user_wanted", text), make("user_a_decoy", decoy))
    assert ids(index.search(query))[:1] == ["user_wanted"]


def test_a_chinese_character_standing_alone_counts_as_a_word() -> None:
    """狗 between function words (我的狗，) is a one-character word, above a stray
    character of a longer word (步 of 散步), even written twice in a shorter memory."""
    index = index_of(
        make("user_dog", "家里养了一条狗"),
        make("user_a_decoy", "一步一步来"),
        make("user_other", "周末在公司加班"),
    )
    assert ids(index.search("我的狗，喜欢散步"))[:1] == ["user_dog"]
    from sage_mem.search.tokens import LONE_WEIGHT, REDUPLICATED_WEIGHT

    assert ("~狗", LONE_WEIGHT) in loose_terms("我的狗，喜欢散步")
    assert ("~狗", REDUPLICATED_WEIGHT) in loose_terms("狗狗和我的狗")


def test_the_pronoun_of_a_thing_finds_the_memory_that_speaks_of_it(
    empty_dir: Path, tmp_path: Path
) -> None:
    """它 (it: a pet, an object) is a function character inside bigrams but also a
    character of its own: "它叫什么名字" finds the pet's memory, which says 它, above a
    shorter one sharing only 叫. A person's pronoun (我) and English "it" stay function words."""
    write_corpus(
        empty_dir,
        {
            "user_pet": "---\ndescription: 用户家里养了一只兔子，叫团子，它三岁了\n---\n",
            "user_colleague": "---\ndescription: 用户的同事叫小王\n---\n",
            "user_pet_en": "---\ndescription: the user's rabbit Tuanzi, it is three\n---\n",
        },
    )
    store = MemoryStore(empty_dir, state_dir=tmp_path / "state")
    assert ids(store.search("它叫什么名字", refine=True))[:1] == ["user_pet"]
    assert ids(store.search("它叫什么名字"))[:1] == ["user_pet"]
    assert "~它" in tokenize("它的名字") and "~我" not in tokenize("我的名字")
    assert ids(store.search("it")) == []


def test_a_loose_match_ranks_below_an_exact_one() -> None:
    index = index_of(
        make("user_basketball", "用户喜欢打篮球"),
        make("user_ball", "用户喜欢打球"),
    )
    assert ids(index.search("打篮球")) == ["user_basketball", "user_ball"]
    index = index_of(make("user_puppy", "家里的狗狗很乖"), make("user_dog", "一条狗"))
    assert ids(index.search("狗狗")) == ["user_puppy", "user_dog"]


def test_an_emoji_only_query_finds_the_memories_holding_that_emoji(empty_dir: Path) -> None:
    """Store, CLI and MCP share one tokenizer: `search "🐶"` finds the dog in both languages."""
    import asyncio
    import json
    import os
    import subprocess
    import sys

    from mcp import Client
    from support import write_memory

    from sage_mem.mcp_server.server import build_server

    write_memory(empty_dir, "user_dog", "---\ndescription: The user's dog Biscuit 🐶\n---\n\nx\n")
    write_memory(empty_dir, "user_狗", "---\ndescription: 我家的狗叫饼干🐶\n---\n\n遛狗。\n")
    write_memory(empty_dir, "feedback_go", "---\ndescription: A 👍🏽 means go ahead\n---\n\ny\n")
    write_memory(empty_dir, "project_fly", "---\ndescription: Deploy to Fly.io\n---\n\nz\n")
    store = MemoryStore(empty_dir)
    assert {hit.id for hit in store.search("🐶")} == {"user_dog", "user_狗"}
    assert [hit.id for hit in store.search("👍")] == ["feedback_go"]
    done = subprocess.run([sys.executable, "-m", "sage_mem", "--dir", str(empty_dir), "search",
                           "🐶", "--json"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert {hit["id"] for hit in json.loads(done.stdout)["results"]} == {"user_dog", "user_狗"}

    async def mcp_search() -> set[str]:
        async with Client(build_server(store), mode="auto") as client:
            result = await client.call_tool("memory_search", {"query": "🐶"})
        return {hit["id"] for hit in result.structured_content["hits"]}

    assert asyncio.run(mcp_search()) == {"user_dog", "user_狗"}
