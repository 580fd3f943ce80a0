"""`sage-mem ui` end to end in a real headless Chromium (Debian's `chromium`, driven by Playwright).

Playwright's own browser download is not used: the tests launch
/usr/bin/chromium (`.ci/ui-setup` installs it) and skip, saying why, when it
or the playwright package is missing. One browser for the module, a fresh
context (storage, cookies) per test, a real server on its own folder per test.
Screenshots of the main pages go to test-artifacts/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, TEMPLATE, missing_tool, write_memory

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")


if not CHROMIUM.exists():
    missing_tool(f"{CHROMIUM} is missing: install Debian's chromium (see .ci/ui-setup)",
                 module_level=True)
try:
    from playwright import sync_api
except ImportError:
    missing_tool("playwright is not installed (pip install -e '.[test]')", module_level=True)
expect = sync_api.expect
expect.set_options(timeout=10_000)

ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ROOT / "tests" / "screenshots"
SCRIPT = "<script>window.__pwned = 1</script>"
TIMEOUT = 10_000
PHONE = {"width": 390, "height": 844}
STAR_MAP_QUALITY = 85  # (its pictures as JPEGs: under 300 KB each)


def memory_file(description: str, body: str = "", **meta: Any) -> str:
    lines = [f"description: {json.dumps(description, ensure_ascii=False)}"]
    lines += [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body + "\n"


def settle(page: Any) -> None:
    """Let the page render two frames and run what they scheduled (no fixed sleep)."""
    page.evaluate(
        "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
        "() => setTimeout(done))))"
    )


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def readme_shot(page: Any, name: str, *, quality: int | None = None) -> None:
    """A picture for the README and docs/ui.md: into tests/screenshots/ with
    SAGE_MEM_UI_SCREENSHOTS=1 (to refresh them), else into test-artifacts/. With `quality`, a
    JPEG: the star map's glow is some 360 KB as a PNG, a third of that as a JPEG."""
    folder = SCREENSHOTS if os.environ.get("SAGE_MEM_UI_SCREENSHOTS") == "1" else ARTIFACTS
    folder.mkdir(exist_ok=True)
    if quality is None:
        page.screenshot(path=str(folder / f"{name}.png"))
    else:
        page.screenshot(path=str(folder / f"{name}.jpg"), type="jpeg", quality=quality)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def folder(memory_dir: Path) -> Path:
    write_memory(memory_dir, "user_evil", memory_file(
        f"Evil {SCRIPT} description",
        f"Body {SCRIPT} <img src=x onerror=\"window.__pwned=2\"> [x](javascript:window.__pwned=3)",
        category="user", tags=["xss"],
    ))
    write_memory(memory_dir, "project/api/auth_flow", memory_file(
        "The API signs requests with short-lived tokens", "See [[user_profile]].",
        category="project", tags=["api"], created="2026-01-02", updated="2026-01-03T10:00:00Z",
    ))
    return memory_dir


@pytest.fixture
def server(folder: Path) -> Iterator[UiServer]:
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as running:
        yield running


@pytest.fixture
def page(browser: Any, server: UiServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(TIMEOUT)
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"),
                                        dialog.dismiss()))
    opened.goto(server.url)
    expect(opened.locator("#results li.result").first).to_be_visible()
    yield opened
    pwned = opened.evaluate("() => window.__pwned || null")
    context.close()
    assert problems == [] and pwned is None


def test_the_token_leaves_the_address_bar_and_the_page_lists_every_memory(
    page: Any, server: UiServer
) -> None:
    assert "token" not in page.url
    expect(page.locator("#results li.result")).to_have_count(10)
    expect(page.locator("#result-count")).to_have_text("10 memories")
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))


def test_search_and_chips_filter_the_list_as_you_type(page: Any) -> None:
    page.locator("#search").press_sequentially("tests first", delay=20)
    first = page.locator("#results li.result").first
    expect(first).to_have_attribute("data-id", "feedback_tests_first")
    page.locator("#search").fill("")
    page.locator('#category-chips [data-category="user"]').click()
    expect(page.locator("#results li.result")).to_have_count(3)
    page.locator('#tag-chips [data-tag="xss"]').click()
    expect(page.locator("#results li.result")).to_have_count(1)
    expect(page.locator("#results li.result")).to_have_attribute("data-id", "user_evil")
    expect(page.locator('#tag-chips [data-tag="xss"]')).to_have_attribute("aria-pressed", "true")
    page.locator('#tag-chips [data-tag="xss"]').click()
    page.locator("#search").fill("猫")
    expect(page.locator("#results li.result").first).to_have_attribute("data-id", "user_cat_zh")
    expect(page.locator("#result-count")).to_contain_text("of 10 memories match")
    page.locator("#search").fill("")
    page.locator('#category-chips [data-category="user"]').click()
    expect(page.locator("#results li.result")).to_have_count(10)
    shot(page, "ui-list")


def test_a_script_in_a_memory_shows_as_text_in_the_list_and_the_memory(page: Any) -> None:
    page.locator("#search").fill("evil")
    card = page.locator('li.result[data-id="user_evil"]')
    expect(card).to_contain_text(f"Evil {SCRIPT} description")
    card.locator("a").click()
    expect(page.locator("#memory-title")).to_have_text(f"Evil {SCRIPT} description")
    body = page.locator("#memory-body")
    expect(body).to_contain_text(SCRIPT)
    expect(body).to_contain_text('<img src=x onerror="window.__pwned=2">')
    assert body.locator("script, img").count() == 0
    assert body.locator("a[href^='javascript']").count() == 0


def test_editing_and_saving_writes_the_file(page: Any, folder: Path) -> None:
    page.goto(page.url.split("#")[0] + "#/m/user_profile")
    page.locator("#edit").click()
    expect(page.locator("#f-description")).to_be_focused()
    page.locator("#f-summary").fill("Backend developer, short answers")
    page.locator("#f-tags").fill("example, profile")
    body = page.locator("#f-body")
    body.fill(body.input_value() + "\nPrefers tabs over spaces.\n")
    shot(page, "ui-editor")
    page.locator("#save").click()
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    expect(page.locator("#memory-body")).to_contain_text("Prefers tabs over spaces.")
    text = (folder / "user_profile.md").read_text()
    assert "summary: Backend developer, short answers" in text
    assert "Prefers tabs over spaces." in text
    assert "baselinePriority: 10" in text  # a key the form did not change is left as it was


def test_save_over_conflict_keeps_changes_made_on_disk(page: Any, folder: Path) -> None:
    page.goto(page.url.split("#")[0] + "#/edit/user_profile")
    description = page.locator("#f-description")
    expect(description).to_have_value(re.compile("backend developer"))
    description.fill("A backend developer who likes short answers")
    path = folder / "user_profile.md"
    # An editor's save while the page is open: other tags, a line added to the body.
    path.write_text(path.read_text().replace("tags: [example]", "tags: [example, python]")
                    + "\nEdited in vim while the page was open.\n")
    expect(page.locator("#changed-on-disk")).to_be_visible()
    page.locator("#save").click()
    conflict = page.locator("#conflict")
    expect(conflict).to_be_visible()
    conflict.get_by_role("button", name=re.compile(r"^Save")).click()
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    expect(page.locator("#memory-body")).to_contain_text("Edited in vim while the page was open.")
    text = path.read_text()
    assert "description: A backend developer who likes short answers" in text
    assert "tags: [example, python]" in text
    assert "Edited in vim while the page was open." in text


def test_a_conflict_says_what_was_merged_and_what_each_side_changed(
    page: Any, folder: Path
) -> None:
    page.goto(page.url.split("#")[0] + "#/edit/user_profile")
    expect(page.locator("#f-description")).to_have_value(re.compile("backend developer"))
    page.locator("#f-summary").fill("Backend, short answers")
    path = folder / "user_profile.md"
    path.write_text(path.read_text().replace("trust: 0.6", "trust: 0.8"))
    page.locator("#save").click()
    taken = page.locator("#merge-taken")
    expect(taken).to_contain_text("From your edit: summary")
    expect(taken).to_contain_text("From the disk: trust")
    expect(page.locator("#save-merge")).to_have_text("Save the merge")
    expect(page.locator("#merge-fields")).to_have_count(0)
    page.locator("#conflict details.both-versions summary").click()
    expect(page.locator("#version-disk")).to_contain_text("trust: 0.80")
    expect(page.locator("#version-mine")).to_contain_text("summary: Backend, short answers")
    expect(page.locator("#conflict-diff .add").first).to_be_visible()
    page.locator("#save-merge").click()
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    text = path.read_text()
    assert "trust: 0.8" in text and "summary: Backend, short answers" in text


def test_overlapping_edits_wait_for_the_persons_choice(page: Any, folder: Path) -> None:
    page.goto(page.url.split("#")[0] + "#/edit/user_profile")
    body = page.locator("#f-body")
    expect(body).to_have_value(re.compile("Works mostly in Python"))
    page.locator("#f-description").fill("Mine: a Python developer")
    page.locator("#f-tags").fill("example, mine")
    body.fill(body.input_value().replace("reads Go and TypeScript", "reads C"))
    path = folder / "user_profile.md"
    path.write_text(
        path.read_text()
        .replace("description: The user is", "description: On disk, the user is")
        .replace("reads Go and TypeScript", "reads Rust")
        .replace("lead with the conclusion.", "lead with the conclusion, as edited in vim.")
    )
    page.locator("#save").click()
    fields = page.locator("#merge-fields")
    expect(fields.locator("fieldset")).to_have_count(1)
    expect(fields.locator('fieldset[data-field="description"]')).to_contain_text(
        "On disk, the user is"
    )
    expect(page.locator("#merge-taken")).to_contain_text("From your edit: tags")
    clash = page.locator("#merge-body fieldset.clash")
    expect(clash).to_have_count(1)
    expect(clash.locator(".clash-mine")).to_contain_text("reads C")
    expect(clash.locator(".clash-disk")).to_contain_text("reads Rust")
    expect(clash.locator(".clash-disk")).to_contain_text("as edited in vim")
    save = page.locator("#save-merge")
    expect(save).to_be_disabled()
    expect(save).to_have_text("Choose a side for 2 more")
    shot(page, "ui-conflict")
    assert "reads Rust" in path.read_text()  # nothing saved yet
    page.locator("#pick-description-disk").check()
    expect(save).to_have_text("Choose a side for 1 more")
    page.locator("#pick-body-0-both").check()
    expect(save).to_be_enabled()
    save.click()
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    text = path.read_text()
    assert "description: On disk, the user is" in text and "tags: [example, mine]" in text
    assert "reads C" in text and "reads Rust" in text and "as edited in vim" in text


def test_a_third_change_during_the_merge_is_caught_and_merged_too(
    page: Any, folder: Path
) -> None:
    page.goto(page.url.split("#")[0] + "#/edit/user_profile")
    expect(page.locator("#f-description")).to_have_value(re.compile("backend developer"))
    page.locator("#f-summary").fill("Short answers")
    path = folder / "user_profile.md"
    path.write_text(path.read_text().replace("trust: 0.6", "trust: 0.8"))
    page.locator("#save").click()
    expect(page.locator("#save-merge")).to_be_enabled()
    path.write_text(path.read_text().replace("tags: [example]", "tags: [example, third]"))
    page.locator("#save-merge").click()
    expect(page.locator("#merge-taken")).to_contain_text("From the disk: tags")
    expect(page.locator("#merge-taken")).to_contain_text("From your edit: summary")
    assert "summary" not in path.read_text()
    page.locator("#save-merge").click()
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    text = path.read_text()
    assert "trust: 0.8" in text and "tags: [example, third]" in text
    assert "summary: Short answers" in text


def test_a_memory_removed_on_disk_is_not_saved_over(page: Any, folder: Path) -> None:
    page.goto(page.url.split("#")[0] + "#/edit/user_profile")
    expect(page.locator("#f-description")).to_have_value(re.compile("backend developer"))
    page.locator("#f-summary").fill("Short answers")
    (folder / "user_profile.md").unlink()
    page.locator("#save").click()
    expect(page.locator("#conflict")).to_contain_text("removed or archived on disk")
    expect(page.locator("#version-mine")).to_contain_text("summary: Short answers")
    expect(page.locator("#save-merge")).to_have_count(0)
    assert not (folder / "user_profile.md").exists()


def test_archive_then_restore_from_the_archive_page(page: Any, folder: Path) -> None:
    page.goto(page.url.split("#")[0] + "#/m/user_cat_zh")
    page.locator("#archive").click()
    page.locator("#archive-reason").fill("the cat moved out")
    page.locator("#archive-confirm").click()
    expect(page).to_have_url(re.compile(r"#/m/archive%2Fuser_cat_zh$"))
    expect(page.locator("#archived-note")).to_contain_text("the cat moved out")
    assert not (folder / "user_cat_zh.md").exists()
    assert (folder / "archive/user_cat_zh.md").exists()
    page.locator('nav [data-nav="archive"]').click()
    row = page.locator('tr[data-id="archive/user_cat_zh"]')
    expect(row).to_contain_text("the cat moved out")
    shot(page, "ui-archive")
    row.locator("button.restore").click()
    expect(page).to_have_url(re.compile(r"#/m/user_cat_zh$"))
    expect(page.locator("#edit")).to_be_visible()
    assert (folder / "user_cat_zh.md").exists()
    assert "archiveReason" not in (folder / "user_cat_zh.md").read_text()


def test_creating_a_memory_from_the_page(page: Any, folder: Path) -> None:
    page.locator("#new-memory").click()
    page.locator("#f-id").fill("feedback_commit_messages")
    page.locator("#f-description").fill("Commit messages in the imperative mood")
    page.locator("#f-category").select_option("feedback")
    page.locator("#f-body").fill("**Why:** the team's convention.")
    page.locator("#save").click()
    expect(page).to_have_url(re.compile(r"#/m/feedback_commit_messages$"))
    expect(page.locator("#memory-body strong")).to_have_text("Why:")
    assert "category: feedback" in (folder / "feedback_commit_messages.md").read_text()


def test_audit_findings_link_to_the_memory(page: Any, folder: Path, server: UiServer) -> None:
    write_memory(folder, "feedback_misfiled", memory_file("Misfiled", category="user"))
    server.store.reconcile()
    page.locator('nav [data-nav="audit"]').click()
    link = page.locator("#findings a", has_text="feedback_misfiled.md").first
    expect(link).to_be_visible()
    shot(page, "ui-audit")
    link.click()
    expect(page.locator("#memory-title")).to_have_text("Misfiled")


@pytest.fixture
def dreamy(folder: Path) -> Path:
    write_memory(folder, "user_old_editor", memory_file("Old editor: vim", "vim", category="user"))
    write_memory(folder, "user_new_editor", memory_file(
        "New editor: helix", "helix", category="user", supersedes=["user_old_editor"]))
    write_memory(folder, "project_deploy", memory_file(
        f"Deploy day {SCRIPT}", "Yesterday we moved the deploy to Fridays.",
        category="project", created="2026-01-10", updated="2026-01-10T09:00:00Z"))
    return folder


def test_a_dream_run_shows_its_report_and_diffs_and_can_be_rolled_back(
    page: Any, dreamy: Path, server: UiServer
) -> None:
    server.store.reconcile()
    before = (dreamy / "project_deploy.md").read_bytes()
    page.locator('nav [data-nav="runs"]').click()
    page.locator("#dream-rewrite").click()
    page.locator("#dream-rewrite-go").click()
    expect(page.locator("#run-report h1")).to_contain_text("Autodream run")
    changes = page.locator("#run-changes")
    deploy = changes.locator('details[data-file="project_deploy.md"]')
    deploy.locator("summary").click()
    expect(deploy.locator(".diff .del")).to_contain_text(["Yesterday we moved the deploy"])
    expect(deploy.locator(".diff .add", has_text="2026-01-09")).to_be_visible()
    index = changes.locator('details[data-file="MEMORY.md"]')
    index.locator("summary").click()
    expect(index.locator(".diff")).to_contain_text(f"Deploy day {SCRIPT}")
    assert page.locator("#run-changes script, #run-report script").count() == 0
    assert (dreamy / "project_deploy.md").read_bytes() != before
    shot(page, "ui-dream-run")

    page.locator("#rollback").click()
    expect(page.locator("#rollback-summary")).to_contain_text("put back")
    expect(page.locator("#rollback-summary")).to_contain_text("can itself be undone")
    page.locator("#rollback-confirm").click()
    expect(page.locator("#toast")).to_contain_text("Rolled back")
    expect(page.locator("#run-title")).to_contain_text("Rollback")
    expect(page.locator("#run-report")).to_contain_text("Rolled back run")
    assert (dreamy / "project_deploy.md").read_bytes() == before
    assert (dreamy / "user_old_editor.md").exists()
    page.locator('nav [data-nav="runs"]').click()
    expect(page.locator("#runs .status.rolled-back")).to_have_count(1)


def test_a_file_changed_since_the_run_is_listed_first_and_put_back_only_when_asked(
    page: Any, dreamy: Path, server: UiServer
) -> None:
    from sage_mem.dream import run_dream

    server.store.reconcile()
    deploy = dreamy / "project_deploy.md"
    before = deploy.read_bytes()
    run = run_dream(server.store, mode="rewrite")
    edited = deploy.read_bytes() + b"Edited by hand after the run.\n"
    deploy.write_bytes(edited)
    page.evaluate(f"() => {{ location.hash = '#/runs/{run.run_id}'; }}")
    page.locator("#rollback").click()
    first = page.locator("#rollback-plan li").first
    expect(first).to_have_attribute("data-action", "conflict")
    expect(first).to_have_attribute("data-path", "project_deploy.md")
    expect(page.locator("#rollback-summary")).to_contain_text("skip 1 changed since the run")
    expect(page.locator("#rollback-confirm")).not_to_contain_text("forced")
    assert deploy.read_bytes() == edited  # a preview changes nothing

    page.locator("#rollback-force").check()
    put_back = page.locator('#rollback-plan li[data-path="project_deploy.md"]')
    expect(put_back).to_have_attribute("data-action", "restore")
    expect(page.locator("#rollback-confirm")).to_contain_text("forced")
    page.locator("#rollback-confirm").click()
    expect(page.locator("#toast")).to_contain_text("Rolled back")
    expect(page.locator("#run-title")).to_contain_text("Rollback")
    assert deploy.read_bytes() == before
    assert (dreamy / "user_old_editor.md").exists()


def test_the_star_map_draws_every_memory_and_only_when_something_changes(page: Any) -> None:
    page.locator('nav [data-nav="stars"]').click()
    canvas = page.locator("#starmap")
    expect(canvas).to_have_attribute("data-star-count", "10")
    expect(canvas).to_have_attribute("data-animating", "false")
    settle(page)
    draws = canvas.get_attribute("data-draws")
    settle(page)
    assert canvas.get_attribute("data-draws") == draws  # idle: no animation loop

    where = canvas.evaluate("c => c.starmap.positionOf('user_evil')")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + where["x"], box["y"] + where["y"])
    tip = page.locator("#star-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("user_evil")
    expect(tip).to_contain_text(f"Evil {SCRIPT} description")
    assert tip.locator("script").count() == 0
    shot(page, "ui-starmap")

    page.locator("#timeline").fill("0")
    # At the first birth only the oldest memory and the undated one are in the sky.
    expect(canvas).to_have_attribute("data-star-count", "2")
    replay = page.locator("#replay")
    replay.click()
    expect(canvas).to_have_attribute("data-animating", "true")
    replay.click()  # pause: the animation stops with it
    expect(canvas).to_have_attribute("data-animating", "false")
    settle(page)
    draws = canvas.get_attribute("data-draws")
    settle(page)
    assert canvas.get_attribute("data-draws") == draws
    replay.click()
    expect(canvas).to_have_attribute("data-animating", "true")
    expect(canvas).to_have_attribute("data-animating", "false")
    expect(canvas).to_have_attribute("data-star-count", "10")
    expect(page.locator("#timeline")).to_have_value("1000")

    page.mouse.move(box["x"] + where["x"], box["y"] + where["y"])
    page.mouse.click(box["x"] + where["x"], box["y"] + where["y"])
    expect(page).to_have_url(re.compile(r"#/m/user_evil$"))


def test_a_stream_of_saves_asks_for_the_badges_audit_once_it_pauses(
    page: Any, server: UiServer, folder: Path
) -> None:
    """Each save reaches the list at once; the badge's audit (0.1 s of the server's CPU at 20,000
    memories) waits until the saves pause, instead of running between two saves of a stream."""
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
    page.wait_for_timeout(2500)  # (the launch's own badge)
    audits: list[str] = []
    page.on("request", lambda request: audits.append(request.url)
            if "/api/audit" in request.url else None)
    for n in range(4):
        write_memory(folder, "user_streamed", memory_file(f"Saved {n} times", category="user"))
        expect(page.locator('li.result[data-id="user_streamed"]')).to_contain_text(
            f"Saved {n} times")
        page.wait_for_timeout(1100)  # an editor saving about every second
    assert audits == []
    page.wait_for_timeout(3000)  # then the saves have paused
    assert len(audits) == 1


def test_an_edit_on_disk_is_pushed_to_the_open_page(
    page: Any, server: UiServer, folder: Path
) -> None:
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
    page.evaluate("() => { window.__sameDocument = true; }")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    generation = server.feed.generations["memories"]
    write_memory(folder, "user_from_vim", memory_file("Written in an editor", category="user"))
    expect(page.locator('li.result[data-id="user_from_vim"]')).to_be_visible()
    # Pushed over the open event stream, the fast way: the feed moved and the list
    # was fetched again, with no reload and no reconnect (a reconnect's hello also
    # refreshes the page, a second later).
    assert server.feed.generations["memories"] > generation
    assert any("/api/memories?" in url for url in requests), requests
    assert not any("/api/events" in url for url in requests), requests
    assert page.evaluate("() => window.__sameDocument === true")
    page.goto(page.url.split("#")[0] + "#/m/user_from_vim")
    expect(page.locator("#memory-title")).to_have_text("Written in an editor")
    write_memory(folder, "user_from_vim", memory_file("Rewritten in the editor", category="user"))
    expect(page.locator("#memory-title")).to_have_text("Rewritten in the editor")
    page.locator('nav [data-nav="stars"]').click()
    expect(page.locator("#starmap")).to_have_attribute("data-star-count", "11")
    (folder / "user_from_vim.md").unlink()
    expect(page.locator("#starmap")).to_have_attribute("data-star-count", "10")


def test_the_page_without_its_token_asks_for_the_printed_link(
    browser: Any, server: UiServer
) -> None:
    context = browser.new_context()
    try:
        stranger = context.new_page()
        stranger.goto(server.origin + "/")
        expect(stranger.locator("#need-token")).to_contain_text("sage-mem ui")
        assert stranger.locator("#results").count() == 0
    finally:
        context.close()


def test_another_origin_cannot_read_the_memories(browser: Any, server: UiServer) -> None:
    context = browser.new_context()
    try:
        other = context.new_page()
        # A page from another origin (this server's port under another name would be refused
        # outright; `localhost` is allowed, so use a data: page, which has an opaque origin).
        other.goto("data:text/html,<title>elsewhere</title>")
        result = other.evaluate(
            """async (origin) => {
                const out = {};
                try {
                    const r = await fetch(origin + '/api/memories', {mode: 'no-cors'});
                    out.noCors = r.type;
                    out.body = await r.text();
                } catch (e) { out.noCors = 'error'; }
                try { await fetch(origin + '/api/memories', {headers: {'X-Sage-Token': 'guess'}});
                      out.cors = 'read'; } catch (e) { out.cors = 'blocked'; }
                return out;
            }""",
            server.origin,
        )
        assert result["cors"] == "blocked"
        assert result.get("body", "") == ""  # an opaque response: nothing readable
    finally:
        context.close()


@pytest.fixture
def big_folder() -> Path:
    """A folder that looks lived-in: 140 memories over a year, for the README's pictures."""
    folder = Path.home() / ".sage-mem" / "memory"
    folder.parent.mkdir(parents=True)
    shutil.copytree(TEMPLATE, folder)
    topics = {
        "user": [
            ("Works in Python and Go", "languages"), ("Lives in Beijing, UTC+8", "personal"),
            ("Has a cat called Sesame", "personal"), ("Prefers short answers", "style"),
            ("Reads answers on a phone", "style"), ("Uses helix as the editor", "tools"),
        ],
        "feedback": [
            ("Run the tests before committing", "testing"),
            ("No emojis in commit messages", "git"),
            ("Explain the why of a change", "style"),
            ("Keep diffs small and focused", "git"),
            ("Ask before big refactors", "process"),
            ("Prefer pytest fixtures to setUp", "testing"),
        ],
        "project": [
            ("The release train leaves on Fridays", "release"),
            ("The API moves to v2 this quarter", "api"),
            ("CI migrates to GitHub Actions", "ci"),
            ("Staging runs on Postgres 16", "infra"),
            ("Search must answer under 10 ms", "performance"),
        ],
        "reference": [
            ("Runbooks live in docs/ops", "ops"), ("The design doc is in Notion", "docs"),
            ("Dashboards are in Grafana", "ops"), ("The on-call rota is in PagerDuty", "ops"),
        ],
    }
    places = [("web app", "web"), ("API service", "api"), ("CLI", "cli"),
              ("data pipeline", "data"), ("mobile app", "mobile"), ("infra repo", "infra"),
              ("docs site", "docs")]
    start = datetime(2025, 12, 1, tzinfo=UTC)
    n = 0
    for place, place_tag in places:
        for category, items in topics.items():
            for text, tag in items:
                n += 1
                born = start + timedelta(days=(n * 37) % 360, hours=n % 24)
                touched = born + timedelta(days=(n * 13) % 90)
                slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:24]
                # The same topic in the previous place is linked, as people link related notes.
                before = places[places.index((place, place_tag)) - 1][1]
                link = f"\n\nSee also [[{category}_{slug}_{before}]]." if n % 3 else ""
                write_memory(folder, f"{category}_{slug}_{place_tag}", memory_file(
                    f"{text} (in the {place})", "Details. " * ((n * 7) % 60 + 1) + link,
                    category=category, tags=sorted({tag, place_tag}),
                    created=born.date().isoformat(), updated=touched.strftime("%Y-%m-%dT%H:%M:%SZ"),
                ))
    return folder


def test_screenshots_of_the_main_pages_for_the_readme(browser: Any, big_folder: Path) -> None:
    with MemoryStore(big_folder, watch=True) as store, UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(TIMEOUT)
        try:
            shown = context.new_page()
            shown.goto(running.url)
            expect(shown.locator("#results li.result").first).to_be_visible()
            shown.locator("#search").press_sequentially("tests", delay=10)
            shown.locator('#category-chips [data-category="feedback"]').click()
            expect(shown.locator("#result-count")).to_have_text(
                re.compile(r"^([1-9]|1\d) of 155 memories match$")
            )
            expect(shown.locator("#results li.result").first).to_contain_text("tests")
            readme_shot(shown, "ui-list")
            linked = sorted(re.findall(r"\[\[(feedback_run_the_tests[^\]]+)\]\]", "".join(
                p.read_text() for p in big_folder.glob("feedback_run_the_tests*.md"))))[0]
            shown.evaluate(f"() => {{ location.hash = '#/m/{linked}'; }}")
            expect(shown.locator("#backlinks li").first).to_be_visible()
            readme_shot(shown, "ui-memory")
            shown.locator('nav [data-nav="stars"]').click()
            total = str(len(store.list()))
            expect(shown.locator("#starmap")).to_have_attribute("data-star-count", total)
            canvas = shown.locator("#starmap")
            where = canvas.evaluate(
                "c => c.starmap.positionOf('feedback_run_the_tests_before_com_web')"
            )
            box = canvas.bounding_box()
            shown.mouse.move(box["x"] + where["x"], box["y"] + where["y"])
            expect(shown.locator("#star-tip")).to_be_visible()
            readme_shot(shown, "ui-starmap", quality=STAR_MAP_QUALITY)
            shown.evaluate("() => { location.hash = '#/dream-settings'; }")
            expect(shown.locator("#s-minHours")).to_be_visible()
            readme_shot(shown, "ui-dream-settings")
        finally:
            context.close()
        _star_map_shot(browser, running.url, total, "ui-starmap-dark", color_scheme="dark",
                       hover="feedback_run_the_tests_before_com_web")
        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
        try:
            small = phone.new_page()
            small.goto(running.url)
            expect(small.locator("#results li.result").first).to_be_visible()
            readme_shot(small, "ui-phone")
        finally:
            phone.close()
        _star_map_shot(browser, running.url, total, "ui-starmap-phone", color_scheme="dark",
                       viewport=PHONE, is_mobile=True)


def _star_map_shot(browser: Any, url: str, total: str, name: str, *, hover: str | None = None,
                   **options: Any) -> None:
    """The star map drawn whole in a new context (`options`: its theme, its screen), a star's
    links lit when `hover` names it, as a picture for docs/ui.md."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **options})
    context.set_default_timeout(TIMEOUT)
    try:
        shown = context.new_page()
        shown.goto(url)
        expect(shown.locator("#results li.result").first).to_be_visible()
        shown.evaluate("() => { location.hash = '#/stars'; }")
        canvas = shown.locator("#starmap")
        expect(canvas).to_have_attribute("data-star-count", total)
        if hover is not None:
            where = canvas.evaluate("(c, id) => c.starmap.positionOf(id)", hover)
            box = canvas.bounding_box()
            shown.mouse.move(box["x"] + where["x"], box["y"] + where["y"])
            expect(shown.locator("#star-tip")).to_be_visible()
        settle(shown)
        readme_shot(shown, name, quality=STAR_MAP_QUALITY)
    finally:
        context.close()
