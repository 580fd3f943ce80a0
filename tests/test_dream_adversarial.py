"""A second, adversarial bilingual corpus: what the dream probe "dream2" attacked, in one folder.

Each memory below is one attack (a title opening a sentence, a Chinese count of two
characters, a range, a currency or code name the index folds together, a list one twin
has an item more of, a newer memory about the past, a memory edited after the one
superseding it, a link to a twin the run archives). What a careful person accepts is
written beside it: `KEPT` must keep every byte, `DATED` must read as given, and the
folder-wide checks say what no run may do (drop a listed item, archive an edited
memory, break a link, propose the past over the present). A report run must show
exactly what a rewrite run does, and a second rewrite run change nothing.
"""

from __future__ import annotations

from pathlib import Path

from dream_corpus import NOW
from test_dream_support import (
    add,
    assert_report_shows_rewrite,
    assert_second_rewrite_changes_nothing,
    corpus_run,
)

from sage_mem.store import MemoryStore

DAY = "2026-11-25"  # a Wednesday: the day every note below was written (`created`, `updated`)

# id -> (category, description, body); every byte must stay (what is dated elsewhere aside)
KEPT = {
    "user_song": ("user", "Her favourite song", "Yesterday Once More is her favourite song."),
    "user_fairytale": ("user", "Songs on repeat", "Today Was a Fairytale is on repeat in her car."),
    "user_beatles": ("user", "A Beatles song", "Yesterday, by the Beatles, is her favourite song."),
    "user_song_zh": ("user", "她最喜欢的歌", "《昨日重现》是她最喜欢的歌，《明天会更好》也常听。"),
    "project_range_en": ("project", "Disk alert", "The disk alert fired two or three days ago."),
    "project_range_to": ("project", "Flaky job", "The nightly job was flaky 5 to 7 days ago."),
    "project_range_zh": ("project", "磁盘告警", "三四天前磁盘告警响过一次。"),
    "project_promised": (
        "project",
        "The build promise",
        "On Monday he promised the build for tomorrow.",
    ),
    "project_ordinal_zh": ("project", "演练安排", "演练开始后，第三天后切换到备用机房。"),
}
# id -> (category, description, body, the body as it must read after a rewrite)
DATED = {
    "project_fifteen_zh": (
        "project",
        "新版本上线",
        "十五天前上线了新版本。",
        "十五天前（2026年11月10日）上线了新版本。",
    ),
    "project_twenty_zh": (
        "project",
        "下一次发布",
        "二十天后发布下一个版本。",
        "二十天后（2026年12月15日）发布下一个版本。",
    ),
    "project_name_after": (
        "project",
        "The login fix",
        "Yesterday Alice shipped the login fix.",
        "Yesterday (2026-11-24) Alice shipped the login fix.",
    ),
}
# pairs that look alike but name another thing: neither may be archived
APART = [
    ("project_budget_usd", "The monthly cloud budget is $500"),
    ("project_budget_eur", "The monthly cloud budget is €500"),
    ("project_fetch_user", "Call fetchUser to load the profile page"),
    ("project_fetch_users", "Call fetchUsers to load the profile page"),
    ("project_budget_cny", "每月的云服务预算是 ¥500"),
    ("project_budget_dollar", "每月的云服务预算是 $500"),
]
# twins with one item more on the archived side: every item stays in service
LISTS = [
    ("user_allergy", "The user's food allergies", "- peanuts\n- shellfish", 0.9),
    ("user_allergies", "The user's food allergies", "- peanuts\n- shellfish\n- milk", 0.5),
    ("user_guomin", "用户对这些食物过敏", "- 花生\n- 海鲜", 0.9),
    ("user_guomin_all", "用户对这些食物过敏", "- 花生\n- 海鲜\n- 牛奶", 0.5),
]
ITEMS = ["peanuts", "shellfish", "milk", "花生", "海鲜", "牛奶"]



def build(folder: Path) -> None:
    folder.mkdir(parents=True)
    stamp = {"created": DAY, "updated": f"{DAY}T09:00:00Z"}
    for memory_id, (category, description, body) in KEPT.items():
        add(folder, memory_id, description, body, category=category, **stamp)
    for memory_id, (category, description, body, _) in DATED.items():
        add(folder, memory_id, description, body, category=category, **stamp)
    for memory_id, description in APART:
        add(folder, memory_id, description, category="project", **stamp)
    for memory_id, description, body, trust in LISTS:
        add(folder, memory_id, description, body, category="user", trust=trust, **stamp)
    # twins whose bodies say two facts: neither folded nor archived
    description = "Deploy the web app with make deploy from the repo root"
    add(
        folder,
        "project_deploy",
        description,
        "It runs the migrations first.",
        category="project",
        trust=0.9,
        **stamp,
    )
    add(
        folder,
        "project_deploy_copy",
        description,
        "It does not run the migrations first.",
        category="project",
        **stamp,
    )
    # a link to the twin the run archives must still lead somewhere
    add(
        folder,
        "project_menu",
        "Team lunch menu",
        "Check [[user_allergies]] first.",
        category="project",
        **stamp,
    )
    # a newer memory about the past, beside an older one about the present
    add(
        folder,
        "user_city",
        "The user's home city is Berlin",
        category="user",
        created="2026-11-02",
        updated="2026-11-02T09:00:00Z",
    )
    add(
        folder,
        "user_city_2023",
        "In 2023 the user's home city was Paris",
        category="user",
        created="2026-11-20",
        updated="2026-11-20T09:00:00Z",
    )
    # superseded, but edited by a person after the memory that supersedes it
    add(
        folder,
        "user_old_editor",
        "The user edits in Vim, with a Helix keymap since Monday",
        category="user",
        created="2026-11-01",
        updated="2026-11-26T09:00:00Z",
    )
    add(
        folder,
        "user_editor",
        "The user switched from Vim to Helix",
        category="user",
        created="2026-11-20",
        updated="2026-11-20T09:00:00Z",
        supersedes=["user_old_editor"],
    )


def _run(folder: Path, mode: str) -> dict:
    return corpus_run(build, folder, mode, NOW)


def test_a_rewrite_over_the_adversarial_corpus_is_one_a_careful_person_accepts(
    tmp_path: Path, utc: None
) -> None:
    folder = tmp_path / "memory"
    manifest = _run(folder, "rewrite")
    store = MemoryStore(folder, watch=False)
    for memory_id, (_, description, body) in KEPT.items():
        memory = store.read(memory_id)
        assert (memory.description, memory.body.strip()) == (description, body), memory_id
    for memory_id, (_, _, _, dated) in DATED.items():
        assert store.read(memory_id).body.strip() == dated, memory_id
    live = store.list()
    live_ids = {m.id for m in live}
    assert {memory_id for memory_id, _ in APART} <= live_ids
    for item in ITEMS:
        assert any(item in m.body or item in m.description for m in live), item
    # the link to the archived twin leads to the twin kept (or into the archive)
    menu = store.read("project_menu").body
    target = menu.split("[[", 1)[1].split("]]", 1)[0]
    assert target in live_ids or (folder / f"{target}.md").exists(), menu
    assert {"user_old_editor", "user_city", "user_city_2023"} <= live_ids
    assert {"project_deploy", "project_deploy_copy"} <= live_ids
    assert store.read("project_deploy").body.strip() == "It runs the migrations first."
    listed = " ".join(n["message"] for n in manifest["notes"] if n.get("id") == "project_promised")
    assert "tomorrow" in listed
    refused = [r["id"] for r in manifest["refused"]]
    assert "user_old_editor" in refused
    assert not [n for n in manifest["notes"] if n["rule"] == "contradictions"]


def test_a_report_run_over_the_adversarial_corpus_shows_what_a_rewrite_does(
    tmp_path: Path, utc: None
) -> None:
    assert_report_shows_rewrite(build, tmp_path, NOW)


def test_a_second_rewrite_over_the_adversarial_corpus_changes_nothing(
    tmp_path: Path, utc: None
) -> None:
    assert_second_rewrite_changes_nothing(build, tmp_path / "memory", NOW)
