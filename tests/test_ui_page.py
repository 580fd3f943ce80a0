"""`sage-mem ui` in Chromium, issue 18: every memory reachable, a phone, the keyboard, what a
person hits when something goes wrong (a stopped server, a locked memory, a broken file).

The browser, the folder, the server and the page come from test_ui_browser.py
(one Chromium for the module, a real server on its own folder per test).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from support import write_memory
from test_ui_browser import expect, memory_file, settle, shot

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser
PHONE = test_ui_browser.PHONE
# The browser, the folder with its server, the page on it: the same as test_ui_browser's.
browser = test_ui_browser.browser
folder = test_ui_browser.folder
server = test_ui_browser.server
page = test_ui_browser.page
dreamy = test_ui_browser.dreamy


def go(page: Any, hash_: str) -> None:
    page.evaluate(f"() => {{ location.hash = {hash_!r}; }}")


def many(folder: Path, count: int) -> None:
    for n in range(count):
        write_memory(folder, f"project/bulk/note_{n:04d}", memory_file(
            f"Bulk note {n} about the release train", f"Note {n}.", category="project",
            tags=["bulk"], updated=f"2025-01-01T00:{n // 60:02d}:{n % 60:02d}Z",
        ))


@contextlib.contextmanager
def bulk_list(browser: Any, folder: Path, *, watch: bool) -> Iterator[Any]:
    """The list of a folder of 260 memories (`many`) open in a new page, its first 100 shown."""
    many(folder, 250)
    with MemoryStore(folder, watch=watch) as store, UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        try:
            shown = context.new_page()
            shown.goto(running.url)
            expect(shown.locator("#results li.result")).to_have_count(100)
            yield shown
        finally:
            context.close()


# 4: every memory reachable, with true totals


def test_the_list_pages_through_every_memory_with_a_true_total(
    browser: Any, folder: Path
) -> None:
    with bulk_list(browser, folder, watch=True) as shown:
        rows = shown.locator("#results li.result")
        expect(shown.locator("#result-count")).to_have_text("260 memories (100 shown)")
        shown.locator("#load-more").click()
        expect(rows).to_have_count(200)
        shown.locator("#load-more").click()
        expect(rows).to_have_count(260)
        expect(shown.locator("#load-more")).to_have_count(0)
        ids = shown.locator("#results li.result").evaluate_all(
            "rows => rows.map(r => r.dataset.id)")
        assert len(set(ids)) == 260
        shown.locator("#search").fill("release train")
        expect(shown.locator("#result-count")).to_have_text(
            re.compile(r"^25\d of 260 memories match \(100 shown\)$"))
        total = int(shown.locator("#result-count").inner_text().split()[0])
        shown.locator("#load-more").dblclick()  # twice at once: still one page more
        expect(rows).to_have_count(200)
        shown.locator("#load-more").click()
        expect(rows).to_have_count(total)
        expect(shown.locator("#load-more")).to_have_count(0)
        ids = rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert len(set(ids)) == total


def test_the_second_click_of_a_double_click_on_show_more_opens_no_memory(
    browser: Any, folder: Path
) -> None:
    """A double click on "Show more": the first click appends a page, which moves the button
    down; when that page comes back before the second click, a card sits under the pointer.
    The second click of a double click (its `detail` is 2) opens nothing; a card's own click
    still opens its memory."""
    with bulk_list(browser, folder, watch=False) as shown:
        rows = shown.locator("#results li.result")
        card = shown.locator("#results a.card").first
        card.dispatch_event("click", {"detail": 2, "button": 0})
        shown.wait_for_timeout(200)
        assert "#/m/" not in shown.url
        expect(rows).to_have_count(100)
        opened = rows.first.get_attribute("data-id")
        card.click()
        expect(shown).to_have_url(re.compile("#/m/" + re.escape(str(opened)) + "$"))


# 5: Enter opens the first result of what is in the box


def test_enter_right_after_typing_opens_the_first_result_of_that_query(page: Any) -> None:
    search = page.locator("#search")
    search.fill("tests")
    expect(page.locator("#results li.result").first).to_have_attribute(
        "data-id", "feedback_tests_first")
    search.fill("芝麻")
    search.press("Enter")
    expect(page).to_have_url(re.compile(r"#/m/user_cat_zh$"))


# 6: a report run's page has no literal "null"


def test_a_report_run_page_shows_no_null(page: Any, dreamy: Path) -> None:
    go(page, "#/runs")
    page.locator("#dream-report").click()
    expect(page.locator("#run-title")).to_contain_text("Dream run")
    expect(page.locator("#run-report h1")).to_be_visible()
    for details in page.locator("#run-changes details").all():
        details.locator("summary").click()
    text = page.locator("main").inner_text()
    assert not re.search(r"\bnull\b|\bundefined\b|NaN", text), text


# 7: a phone


def no_wider_than_the_viewport(shown: Any) -> None:
    wide = shown.evaluate("""() => {
        const width = document.documentElement.clientWidth;
        const out = [];
        const whole = document.documentElement.scrollWidth;
        if (whole > width) out.push('document ' + whole);
        for (const node of document.querySelectorAll('main *, header *, footer *')) {
            const box = node.getBoundingClientRect();
            if (!box.width) continue;
            let clipped = false;
            for (let up = node.parentElement; up; up = up.parentElement) {
                const style = getComputedStyle(up);
                if (['auto', 'scroll', 'hidden'].includes(style.overflowX)) {
                    const outer = up.getBoundingClientRect();
                    if (outer.right <= width + 0.5 && outer.left >= -0.5) { clipped = true; break; }
                }
            }
            if (!clipped && (box.right > width + 0.5 || box.left < -0.5)) {
                out.push(node.tagName + '#' + node.id + ' ' + Math.round(box.right));
            }
        }
        return out;
    }""")
    assert wide == []


def test_on_a_phone_the_first_result_is_above_the_fold_and_nothing_is_wider(
    browser: Any, server: UiServer, folder: Path
) -> None:
    write_memory(folder, "reference_long_code", memory_file(
        "A memory with a long line of code", "```\n" + "x = 1  # " + "long " * 60 + "\n```\n"
        + "and a long url https://example.com/" + "a" * 120, category="reference"))
    server.store.reconcile()
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        shown = context.new_page()
        shown.goto(server.url)
        first = shown.locator("#results li.result").first
        expect(first).to_be_visible()
        header = shown.locator("header.top").bounding_box()
        assert header["height"] <= 60
        box = first.bounding_box()
        assert box["y"] + box["height"] <= PHONE["height"]
        no_wider_than_the_viewport(shown)
        shot(shown, "phone-list")
        for hash_, ready in [("#/m/reference_long_code", "#memory-body pre"),
                             ("#/audit", "#audit"), ("#/archive", "#archive-count"),
                             ("#/stars", "#starmap")]:
            go(shown, hash_)
            expect(shown.locator(ready)).to_be_visible()
            settle(shown)
            no_wider_than_the_viewport(shown)
        go(shown, "#/runs")
        shown.locator("#dream-report").click()
        expect(shown.locator("#run-title")).to_be_visible()
        go(shown, "#/runs")
        expect(shown.locator("#runs tr[data-run]")).to_have_count(1)
        no_wider_than_the_viewport(shown)
        shot(shown, "phone-runs")
    finally:
        context.close()


# 10: the list shows the person's description, and follows an edit


def test_the_list_shows_the_description_not_the_summary_and_follows_an_edit(
    page: Any, folder: Path, server: UiServer
) -> None:
    write_memory(folder, "user_summed", memory_file(
        "What the person wrote", "body", category="user", summary="What a dream summarised"))
    server.store.reconcile()
    page.locator("#search").fill("person wrote")
    card = page.locator('li.result[data-id="user_summed"] .desc')
    expect(card).to_have_text("What the person wrote")
    go(page, "#/edit/user_summed")
    page.locator("#f-description").fill("What the person wrote, edited")
    page.locator("#save").click()
    expect(page.locator("#memory-title")).to_have_text("What the person wrote, edited")
    page.locator('nav [data-nav="list"]').click()
    page.locator("#search").fill("person wrote")
    expect(card).to_have_text("What the person wrote, edited")


# 11: the audit follows a change, incrementally


def test_the_audit_follows_a_change_on_disk(page: Any, folder: Path) -> None:
    go(page, "#/audit")
    expect(page.locator("#audit")).to_contain_text("files")
    write_memory(folder, "feedback_misfiled", memory_file("Misfiled", category="user"))
    expect(page.locator("#findings a", has_text="feedback_misfiled.md").first).to_be_visible()
    expect(page.locator("#audit-badge")).to_be_visible()


def test_a_first_audit_shows_its_findings_as_they_come(
    browser: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30 item 1: a folder never audited (seconds at thousands of memories) shows the
    findings of the files read so far, says it is still reading, then the whole result."""
    import threading

    from sage_mem.checks import audit as audit_module

    write_memory(folder, "feedback_misfiled", memory_file("Misfiled", category="user"))
    monkeypatch.setattr(audit_module, "PROGRESS_FILES", 1)
    go_on = threading.Event()
    original = audit_module._Audit.check_file

    def held(self: Any, path: Path, *, archived: bool) -> None:
        original(self, path, archived=archived)
        if path.name == "feedback_misfiled.md":
            go_on.wait(60)  # the rest of the folder is still to be read

    monkeypatch.setattr(audit_module._Audit, "check_file", held)
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        try:
            shown = context.new_page()
            shown.goto(running.url)
            go(shown, "#/audit")
            expect(shown.locator("#audit-checking")).to_contain_text("for the first time")
            expect(shown.locator("#findings a", has_text="feedback_misfiled.md").first
                   ).to_be_visible()
            go_on.set()
            expect(shown.locator("#audit-checking")).to_have_count(0)
            expect(shown.locator("#findings a", has_text="feedback_misfiled.md").first
                   ).to_be_visible()
        finally:
            go_on.set()
            context.close()


def test_changes_reach_the_list_while_an_audit_takes_its_time(
    browser: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30 item 3: the list's refresh does not wait for the audit badge. A first audit
    takes seconds (a minute at 50,000 memories); the badge asked for one after each change,
    and with six connections to a server at most, the stacked audits held the list's requests
    back until the first audit ended."""
    import threading
    import time

    from sage_mem.checks import audit as audit_module

    go_on = threading.Event()
    original = audit_module._Audit.check_file

    def held(self: Any, path: Path, *, archived: bool) -> None:
        go_on.wait(120)  # an audit still reading
        original(self, path, archived=archived)

    monkeypatch.setattr(audit_module._Audit, "check_file", held)
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        try:
            shown = context.new_page()
            shown.goto(running.url)
            expect(shown.locator("#results li.result").first).to_be_visible()
            for n in range(8):
                time.sleep(1.2)  # past the badge's wait, so that each change asks for an audit
                write_memory(folder, "user_profile", memory_file(
                    f"Profile, edited {n}", "x", category="user",
                    updated=f"2030-01-01T00:00:{n:02d}Z"))
                expect(shown.locator("#results li.result").first).to_contain_text(
                    f"Profile, edited {n}")
        finally:
            go_on.set()
            context.close()


# 12: a stopped server, messages, a locked memory, broken links, 404, titles


def test_a_stopped_server_keeps_the_view_and_offers_a_retry(
    browser: Any, folder: Path
) -> None:
    store = MemoryStore(folder, watch=True)
    running = UiServer(store, port=0).start()
    context = browser.new_context()
    try:
        shown = context.new_page()
        shown.goto(running.url)
        expect(shown.locator("#results li.result").first).to_be_visible()
        running.stop()
        shown.locator("#search").fill("cat")
        expect(shown.locator("#offline")).to_be_visible()
        expect(shown.locator("#offline")).to_contain_text("not reachable")
        expect(shown.locator("#search")).to_be_visible()
        expect(shown.locator("#results li.result").first).to_be_visible()
        shown.locator("#retry").click()
        expect(shown.locator("#toast")).to_contain_text("Still not reachable")
        expect(shown.locator("#toast .msg")).to_have_count(1)
    finally:
        context.close()
        running.stop()
        store.close()


def test_one_message_at_a_time_and_it_does_not_follow_to_the_next_page(page: Any) -> None:
    go(page, "#/m/user_profile")
    page.locator("#archive").click()
    page.locator("#archive-confirm").click()  # no reason: an error message
    page.locator("#archive-confirm").click()
    expect(page.locator("#toast .msg")).to_have_count(1)
    go(page, "#/audit")
    expect(page.locator("#toast .msg")).to_have_count(0)


def test_a_saved_message_shows_on_the_page_it_leads_to_then_goes(page: Any) -> None:
    go(page, "#/edit/user_profile")
    page.locator("#f-summary").fill("short")
    page.locator("#save").click()
    expect(page.locator("#toast")).to_contain_text("Saved user_profile")
    page.locator('nav [data-nav="stars"]').click()
    expect(page.locator("#toast .msg")).to_have_count(0)


def test_a_locked_memory_has_no_live_edit_button_and_its_editor_says_why(
    page: Any, folder: Path, server: UiServer
) -> None:
    write_memory(folder, "user_locked", memory_file("Locked one", "x", category="user",
                                                     locked=True))
    server.store.reconcile()
    go(page, "#/m/user_locked")
    expect(page.locator("#edit")).to_be_disabled()
    expect(page.locator("#archive")).to_be_disabled()
    go(page, "#/edit/user_locked")
    note = page.locator("#locked-note")
    expect(note).to_contain_text("locked: true")
    note.locator("#back-to-memory").click()
    expect(page).to_have_url(re.compile(r"#/m/user_locked$"))


def test_a_broken_link_looks_broken_and_a_working_one_does_not(
    page: Any, folder: Path, server: UiServer
) -> None:
    write_memory(folder, "user_links", memory_file(
        "Links", "See [[user_profile]], [[user_nobody]] and [the cat](user_cat_zh.md), "
        "[gone](user_gone.md).", category="user"))
    server.store.reconcile()
    go(page, "#/m/user_links")
    body = page.locator("#memory-body")
    expect(body.locator("a", has_text="user_profile")).not_to_have_class("missing")
    expect(body.locator("a", has_text="the cat")).not_to_have_class("missing")
    expect(body.locator("a", has_text="user_nobody")).to_have_class("missing")
    expect(body.locator("a", has_text="gone")).to_have_class("missing")


def test_a_missing_memory_is_said_once_and_pages_have_their_own_titles(page: Any) -> None:
    go(page, "#/m/user_nobody")
    gone = page.locator("#gone")
    expect(gone).to_contain_text("There is no memory")
    assert gone.inner_text().count("user_nobody") == 1
    expect(page).to_have_title("Not found · sage-mem")
    go(page, "#/nowhere")
    expect(page.locator("#not-found")).to_be_visible()
    titles = set()
    for hash_, title in [("#/", "Memories"), ("#/stars", "Star map"), ("#/archive", "Archive"),
                         ("#/audit", "Audit"), ("#/runs", "Dream runs")]:
        go(page, hash_)
        expect(page).to_have_title(f"{title} · sage-mem")
        titles.add(page.title())
    go(page, "#/m/user_profile")
    expect(page).to_have_title(re.compile(r"backend developer.* · sage-mem$"))
    assert len(titles) == 5


# 13: a file that does not parse, fixed from the page


def test_a_file_with_invalid_yaml_is_fixed_in_the_raw_editor_exactly_as_typed(
    page: Any, folder: Path, server: UiServer
) -> None:
    broken = "---\ndescription: the cat: 芝麻\ncategory: user\n---\n\nKept as it is.\r\n"
    path = write_memory(folder, "user_broken", broken)
    server.store.reconcile()
    go(page, "#/m/user_broken")
    expect(page.locator("#unreadable")).to_contain_text("invalid YAML")
    page.locator("#edit-raw").click()
    problem = page.locator("#raw-problem")
    expect(problem).to_contain_text("line 2")
    text = page.locator("#raw-text")
    expect(text).to_have_value(broken.replace("\r\n", "\n"))
    page.locator("#raw-save").click()  # unchanged: nothing is written
    expect(page.locator("#toast")).to_contain_text("Nothing changed")
    assert path.read_bytes() == broken.encode()
    text.fill("---\ndescription: the cat still: 芝麻 [\n---\n")
    page.locator("#raw-save").click()
    expect(problem).to_contain_text("not written")
    assert path.read_bytes() == broken.encode()
    text.fill('---\ndescription: "the cat: 芝麻"\ncategory: user\n---\n\nKept as it is.\n')
    page.locator("#raw-save").click()
    expect(page.locator("#memory-title")).to_have_text("the cat: 芝麻")
    # Only the line the person changed changed: the line they left keeps its CRLF.
    fixed = '---\ndescription: "the cat: 芝麻"\ncategory: user\n---\n\nKept as it is.\r\n'
    assert path.read_bytes() == fixed.encode()


@pytest.mark.parametrize("broken, fixed", [
    pytest.param(
        "---\ndescription: the cat: 芝麻\ncategory: user\n---\n\n旧 Mac 的一行。\rCRLF line.\r\n"
        "LF line.\n",
        '---\ndescription: "the cat: 芝麻"\ncategory: user\n---\n\n旧 Mac 的一行。\rCRLF line.\r\n'
        "LF line.\n",
        id="mixed"),
    pytest.param(
        "---\rdescription: the cat: 芝麻\rcategory: user\r---\r\rOnly lone CRs.\r",
        '---\rdescription: "the cat: 芝麻"\rcategory: user\r---\r\rOnly lone CRs.\r'
        "A new line.\r",
        id="lone-cr"),
])
def test_the_raw_editor_keeps_each_lines_lone_cr_ending(
    page: Any, folder: Path, server: UiServer, broken: str, fixed: str
) -> None:
    """The textarea shows a lone CR as a line break; the save puts it back on each line that
    had it, and gives a new line the file's usual ending."""
    path = write_memory(folder, "user_broken", broken)
    server.store.reconcile()
    go(page, "#/raw/user_broken")
    text = page.locator("#raw-text")
    shown = broken.replace("\r\n", "\n").replace("\r", "\n")
    expect(text).to_have_value(shown)
    page.locator("#raw-save").click()  # unchanged: nothing is written
    expect(page.locator("#toast")).to_contain_text("Nothing changed")
    assert path.read_bytes() == broken.encode()
    text.fill(fixed.replace("\r\n", "\n").replace("\r", "\n"))
    page.locator("#raw-save").click()
    expect(page.locator("#toast")).to_contain_text("Saved user_broken")
    assert path.read_bytes() == fixed.encode()


# 14: the keyboard


def test_tab_reaches_the_first_result_quickly_and_arrows_move_through_results(
    page: Any
) -> None:
    search = page.locator("#search")
    expect(search).to_be_focused()
    presses = 0
    while presses < 6 and not page.evaluate("() => !!document.activeElement.closest('#results')"):
        page.keyboard.press("Tab")
        presses += 1
    assert presses <= 3
    search.focus()
    page.keyboard.press("ArrowDown")
    first, second = page.locator("#results a.card").nth(0), page.locator("#results a.card").nth(1)
    expect(first).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(second).to_be_focused()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    expect(search).to_be_focused()
    chip = page.locator("#category-chips button.chip").first
    chip.focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#category-chips button.chip").nth(1)).to_be_focused()


def test_escape_leaves_the_editor_closes_boxes_and_asks_before_dropping_an_edit(
    page: Any, folder: Path
) -> None:
    go(page, "#/edit/user_profile")
    expect(page.locator("#f-description")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    page.locator("#archive").click()
    expect(page.locator("#archive-form")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#archive-form")).to_be_hidden()
    go(page, "#/edit/user_profile")
    page.locator("#f-summary").fill("unsaved")
    page.keyboard.press("Escape")
    expect(page.locator("#leave-confirm")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#leave-confirm")).to_have_count(0)
    path = folder / "user_profile.md"
    path.write_text(path.read_text().replace("trust: 0.6", "trust: 0.8"))
    page.locator("#save").click()
    expect(page.locator("#conflict")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#conflict")).to_be_hidden()
    page.keyboard.press("Escape")
    page.locator("#leave-anyway").click()
    expect(page).to_have_url(re.compile(r"#/m/user_profile$"))
    assert "unsaved" not in path.read_text()
    go(page, "#/runs")
    page.locator("#dream-rewrite").click()
    expect(page.locator("#dream-confirm")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#dream-confirm")).to_be_hidden()



# 3: the star map's lines are the real relations; backlinks; the library's size


def test_the_star_map_draws_links_and_supersedes_and_a_memory_shows_its_backlinks(
    page: Any, folder: Path, server: UiServer
) -> None:
    write_memory(folder, "user_links", memory_file(
        "Links", "See [[user_profile]] and [the cat](user_cat_zh.md), not [[user_nobody]].",
        category="user", supersedes=["user_evil"], created="2026-02-01"))
    server.store.reconcile()
    go(page, "#/stars")
    canvas = page.locator("#starmap")
    expect(canvas).to_have_attribute("data-star-count", "11")
    relations = canvas.evaluate(
        "c => c.starmap.relations.map(([a, b, kind]) => [a.id, b.id, kind]).sort()")
    assert relations == sorted([
        ["feedback_tests_first", "reference_test_command", "link"],  # in the template
        ["project/api/auth_flow", "user_profile", "link"],
        ["user_links", "user_cat_zh", "link"],
        ["user_links", "user_profile", "link"],
        ["user_links", "user_evil", "supersedes"],
    ])
    expect(canvas).to_have_attribute("data-edges", "5")
    page.locator("#timeline").fill("0")  # before user_links and auth_flow were born
    expect(canvas).not_to_have_attribute("data-edges", "5")
    assert int(canvas.get_attribute("data-edges")) <= 1
    go(page, "#/m/user_profile")
    backlinks = page.locator("#backlinks li")
    expect(backlinks).to_have_count(2)
    expect(page.locator('#backlinks li[data-id="user_links"]')).to_contain_text("Links")
    go(page, "#/m/user_evil")
    expect(page.locator('#backlinks li[data-kind="supersedes"]')).to_contain_text("supersedes")
    size = sum(p.stat().st_size for p in folder.glob("**/*.md")
               if p.name != "MEMORY.md" and ".sage-mem" not in p.parts)
    expect(page.locator("#foot-size")).to_have_text(
        f"11 memories, {size / 1024:.1f} KB in all")
    expect(page.locator("#foot-folder")).to_have_text(str(folder))


# 8: tooltip, legend, labels, the timeline's arrow keys


def test_the_tooltip_stays_in_the_map_and_the_legend_follows_the_timeline(page: Any) -> None:
    go(page, "#/stars")
    canvas = page.locator("#starmap")
    expect(canvas).to_have_attribute("data-star-count", "10")
    rightmost = canvas.evaluate("""c => {
        const stars = c.starmap.stars.slice().sort((a, b) => b.x - a.x);
        return { x: stars[0].x, y: stars[0].y };
    }""")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + rightmost["x"], box["y"] + rightmost["y"])
    tip = page.locator("#star-tip")
    expect(tip).to_be_visible()
    tip_box = tip.bounding_box()
    assert tip_box["x"] >= box["x"] and tip_box["x"] + tip_box["width"] <= box["x"] + box["width"]
    assert tip_box["y"] + tip_box["height"] <= box["y"] + box["height"]

    def legend_total() -> int:
        texts = page.locator("#star-legend span[data-group]").all_inner_texts()
        return sum(int(t.split()[-1]) for t in texts)

    assert legend_total() == 10
    page.locator("#timeline").fill("0")
    expect(canvas).to_have_attribute("data-star-count", "2")
    expect(page.locator("#star-legend span[data-group]")).not_to_have_count(4)
    assert legend_total() == 2
    labels = canvas.evaluate("c => c.starmap.labels.map(l => l.group).sort()")
    shown = canvas.evaluate("c => Object.keys(c.starmap.shown).sort()")
    assert labels == shown and "other" not in shown
    expect(page.locator("#star-legend")).not_to_contain_text("uncategorized")

    slider = page.locator("#timeline")
    slider.fill("1000")
    expect(canvas).to_have_attribute("data-star-count", "10")
    slider.focus()
    page.keyboard.press("ArrowLeft")  # back to the day before the newest memories' birth day
    expect(canvas).not_to_have_attribute("data-star-count", "10")
    born = canvas.evaluate("c => c.starmap.dated.filter(s => s.born <= c.starmap.time).length")
    assert 0 < born < 10 and int(slider.input_value()) < 990  # a day, not 0.1%
    page.keyboard.press("ArrowRight")
    expect(canvas).to_have_attribute("data-star-count", "10")


def test_five_thousand_stars_are_fine_points_and_no_label_is_under_the_legend(
    browser: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    categories = ["user", "feedback", "project", "reference"]
    for n in range(5000):
        category = categories[n % 4]
        write_memory(folder, f"{category}_{n:04d}", memory_file(
            f"Memory {n} 记忆 {n % 97}", "word " * (n % 300) + f"[[{categories[(n + 1) % 4]}_"
            f"{(n + 1) % 5000:04d}]]", category=category,
            created=f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}"))
    with MemoryStore(folder, watch=False) as store, UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        try:
            shown = context.new_page()
            shown.goto(running.url + "")
            expect(shown.locator("#results li.result").first).to_be_visible(timeout=30_000)
            go(shown, "#/stars")
            canvas = shown.locator("#starmap")
            expect(canvas).to_have_attribute("data-star-count", "5000", timeout=30_000)
            expect(canvas).to_have_attribute("data-edges", "5000")
            sky = canvas.evaluate("""c => {
                const m = c.starmap;
                const cores = m.stars.reduce((n, s) => n + Math.PI * s.radius * s.radius, 0);
                const biggest = Math.max(...m.stars.map(s => s.radius));
                return { cores: cores / (m.w * m.h), biggest: biggest,
                         labels: m.labels };
            }""")
            assert sky["biggest"] <= 4.5 and sky["cores"] < 0.08
            legend = shown.locator("#star-legend").bounding_box()
            box = canvas.bounding_box()
            for label in sky["labels"]:
                apart = (label["right"] + box["x"] <= legend["x"]
                         or label["left"] + box["x"] >= legend["x"] + legend["width"]
                         or label["bottom"] + box["y"] <= legend["y"]
                         or label["top"] + box["y"] >= legend["y"] + legend["height"])
                assert apart, label
            shot(shown, "ui-starmap-5000")
            # Seen whole, the lines of a sky of thousands (a faint haze: at 50,000 memories
            # 0.1 s to draw) are drawn at half the resolution; zoomed in twice, sharp, and
            # every one of them still drawn.
            expect(canvas).to_have_attribute("data-lines", "half")
            shown.locator("#zoom-in").click()
            shown.locator("#zoom-in").click()
            expect(canvas).to_have_attribute("data-zoom", "2.25")
            expect(canvas).to_have_attribute("data-lines", "whole")
            expect(canvas).to_have_attribute("data-edges", "5000")
        finally:
            context.close()


# 9: after a rollback: what is listed, and what the messages say


def test_after_a_rollback_the_archive_and_the_messages_say_what_happened(
    page: Any, dreamy: Path, server: UiServer
) -> None:
    server.store.reconcile()
    go(page, "#/runs")
    page.locator("#dream-rewrite").click()
    page.locator("#dream-rewrite-go").click()
    expect(page.locator("#run-report h1")).to_contain_text("Autodream run")
    run_url = page.url
    go(page, "#/archive")
    expect(page.locator('tr[data-id="archive/user_old_editor"]')).to_be_visible()
    page.goto(run_url)
    page.locator("#rollback").click()
    summary = page.locator("#rollback-summary")
    expect(summary).to_contain_text(
        "set MEMORY.md and archive/user_old_editor.md aside in the rollback's folder")
    expect(summary).not_to_contain_text("to archive/")
    page.locator("#rollback-confirm").click()
    toast = page.locator("#toast")
    expect(toast).to_contain_text(
        "MEMORY.md and archive/user_old_editor.md set aside in the rollback's folder")
    expect(toast).not_to_contain_text("moved to archive/")
    expect(page.locator("#run-title")).to_contain_text("Rollback")
    index = page.locator('#run-changes details[data-file="MEMORY.md"]')
    expect(index.locator(".op")).to_have_text("set aside")
    go(page, "#/archive")
    expect(page.locator("#archive-count")).to_be_visible()
    expect(page.locator('tr[data-id="archive/user_old_editor"]')).to_have_count(0)
    go(page, "#/m/user_old_editor")
    expect(page.locator("#edit")).to_be_visible()
    page.goto(run_url)
    expect(page.locator("#run-changes")).to_be_visible()
    for details in page.locator("#run-changes details").all():
        details.locator("summary").click()
    expect(page.locator("#run-changes")).not_to_contain_text("rotated out")
    archived = page.locator('#run-changes details[data-file="user_old_editor.md"]')
    expect(archived.locator(".diff")).to_be_visible()


# 1: the dream's settings


def test_the_dream_settings_panel_saves_config_json_and_warns_of_a_missing_command(
    page: Any, server: UiServer
) -> None:
    import json

    from sage_mem.dream.paths import DreamPaths

    config = DreamPaths(server.store.folder).config_file
    go(page, "#/runs")
    expect(page.locator("#agent-command")).to_contain_text("none configured")
    page.locator("#dream-settings-link").click()
    expect(page).to_have_title("Dream settings · sage-mem")
    form = page.locator("#dream-settings")
    for key in ["minHours", "minSessions", "keepSnapshots", "agentCommand", "agentMaxCalls",
                "autoFromHook"]:
        expect(form.locator(f"#s-{key}")).to_be_visible()
    page.locator("#s-minHours").fill("6")
    page.locator("#s-autoFromHook").check()
    page.locator("#s-agentCommand").fill("no-such-agent-x -p '{prompt}' --mcp-config {mcp_config}")
    page.locator("#settings-save").click()
    expect(page.locator("#toast")).to_contain_text("Saved the dream settings")
    assert json.loads(config.read_text()) == {
        "minHours": 6, "agentCommand": ["no-such-agent-x", "-p", "{prompt}", "--mcp-config",
                                        "{mcp_config}"], "autoFromHook": True}
    expect(page.locator("#agent-command")).to_contain_text("not found on PATH")
    go(page, "#/runs")
    expect(page.locator("#agent-command")).to_contain_text("no-such-agent-x")
    page.locator("#dream-report").click()
    expect(page.locator("#dream-refused")).to_contain_text("Not started: the agent command")
    expect(page.locator("#runs")).to_contain_text("No dream runs yet")
    page.locator("#dream-rules-only").click()
    expect(page.locator("#run-title")).to_contain_text("Dream run")


# 2 and 13: delete from the Archive page, after confirming; rename, links following


def test_an_archived_memory_is_deleted_from_the_archive_page_after_confirming(
    page: Any, folder: Path
) -> None:
    go(page, "#/m/user_cat_zh")
    page.locator("#archive").click()
    page.locator("#archive-reason").fill("the cat moved out")
    page.locator("#archive-confirm").click()
    expect(page.locator("#archived-note")).to_be_visible()
    go(page, "#/archive")
    row = page.locator('tr[data-id="archive/user_cat_zh"]')
    row.locator("button.delete").click()
    confirm = page.locator("#delete-confirm")
    expect(confirm).to_contain_text("for good")
    page.keyboard.press("Escape")
    expect(confirm).to_have_count(0)
    assert (folder / "archive/user_cat_zh.md").exists()
    row.locator("button.delete").click()
    shot(page, "ui-delete")
    page.locator("#delete-go").click()
    expect(page.locator("#toast")).to_contain_text("Deleted archive/user_cat_zh")
    expect(row).to_have_count(0)
    assert not (folder / "archive/user_cat_zh.md").exists()
    assert not (folder / "user_cat_zh.md").exists()


def test_a_live_update_keeps_an_open_delete_confirmation(
    page: Any, folder: Path, server: UiServer
) -> None:
    # The archive list is drawn again on every change on disk (an archive's own event lands a
    # moment after it): the confirmation a person has open must outlive it, not vanish.
    server.store.archive("user_cat_zh", reason="the cat moved out")
    go(page, "#/archive")
    page.locator('tr[data-id="archive/user_cat_zh"] button.delete').click()
    confirm = page.locator("#delete-confirm")
    expect(confirm).to_contain_text("for good")
    server.store.archive("feedback_tests_first", reason="written into CONTRIBUTING")
    expect(page.locator("#archive-count")).to_contain_text("2 of 2")
    expect(confirm).to_contain_text("archive/user_cat_zh")
    expect(page.locator('tr[data-id="archive/user_cat_zh"] + tr#delete-confirm')).to_have_count(1)
    page.locator("#delete-go").click()
    expect(page.locator("#toast")).to_contain_text("Deleted archive/user_cat_zh")
    assert not (folder / "archive/user_cat_zh.md").exists()
    assert (folder / "archive/feedback_tests_first.md").exists()


def test_renaming_a_memory_moves_its_file_and_the_links_follow(
    page: Any, folder: Path, server: UiServer
) -> None:
    write_memory(folder, "user_fan", memory_file("Links to the cat", "See [[user_cat_zh]].",
                                                 category="user"))
    server.store.reconcile()
    go(page, "#/m/user_cat_zh")
    page.locator("#rename").click()
    page.locator("#rename-id").fill("user/pets/sesame")
    page.locator("#rename-confirm").click()
    expect(page).to_have_url(re.compile(r"#/m/user%2Fpets%2Fsesame$"))
    expect(page.locator("#toast")).to_contain_text("links updated in 1 memory")
    expect(page.locator('#backlinks li[data-id="user_fan"]')).to_be_visible()
    assert (folder / "user/pets/sesame.md").exists() and not (folder / "user_cat_zh.md").exists()
    assert "[[user/pets/sesame]]" in (folder / "user_fan.md").read_text()


@pytest.mark.parametrize("action, field, value, route", [
    pytest.param("#archive", "#archive-reason", "the cat moved out", "**/api/archive",
                 id="archive"),
    pytest.param("#rename", "#rename-id", "user/pets/sesame", "**/api/rename", id="rename"),
])
def test_archive_and_rename_act_only_on_the_version_the_page_showed(
    page: Any, folder: Path, action: str, field: str, value: str, route: str
) -> None:
    go(page, "#/m/user_cat_zh")
    expect(page.locator("#memory-title")).to_have_text("用户的猫叫芝麻，喜欢晒太阳")
    path = folder / "user_cat_zh.md"
    edited = path.read_text(encoding="utf-8") + "\n芝麻今天去看了兽医。\n"

    def edit_first(request: Any) -> None:  # an editor saves while the request is on its way
        path.write_text(edited, encoding="utf-8")
        request.continue_()

    page.route(route, edit_first)
    page.locator(action).click()
    page.locator(field).fill(value)
    page.locator(field).press("Enter")
    toast = page.locator("#toast .msg.error")
    expect(toast).to_contain_text("changed on disk since the page showed it: nothing was")
    assert path.read_text(encoding="utf-8") == edited
    assert not (folder / "archive").exists() and not (folder / "user/pets").exists()
    page.unroute(route)
    toast.get_by_role("button", name="Reload").click()
    expect(page.locator("#memory-body")).to_contain_text("芝麻今天去看了兽医。")
    page.locator(action).click()
    page.locator(field).fill(value)
    page.locator(field).press("Enter")
    expect(page).not_to_have_url(re.compile(r"#/m/user_cat_zh$"))
    assert not path.exists()


@pytest.mark.parametrize("action, field, typed", [
    pytest.param("#archive", "#archive-reason", "the cat moved o", id="archive"),
    pytest.param("#rename", "#rename-id", "user/pets/ses", id="rename"),
])
def test_a_change_on_disk_keeps_an_open_archive_or_rename_form_and_what_was_typed(
    page: Any, folder: Path, action: str, field: str, typed: str
) -> None:
    go(page, "#/m/user_cat_zh")
    expect(page.locator("#memory-title")).to_have_text("用户的猫叫芝麻，喜欢晒太阳")
    page.locator(action).click()
    page.locator(field).fill(typed)
    path = folder / "user_cat_zh.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n芝麻今天去看了兽医。\n", encoding="utf-8")
    expect(page.locator("#memory-body")).to_contain_text("芝麻今天去看了兽医。")
    expect(page.locator(field)).to_be_visible()
    expect(page.locator(field)).to_have_value(typed)
    expect(page.locator(field)).to_be_focused()
    page.locator(field).press("End")
    page.locator(field).type("ut" if action == "#archive" else "ame")
    page.locator(field).press("Enter")  # acts on the version now shown, so it is not refused
    expect(page).not_to_have_url(re.compile(r"#/m/user_cat_zh$"))
    assert not path.exists()


def test_choosing_session_transcripts_shows_the_privacy_warning(page: Any) -> None:
    go(page, "#/dream-settings")
    source = page.locator("#s-inputSource")
    expect(source).to_have_value("memory")
    expect(page.locator("#privacy-warning")).to_be_hidden()
    source.select_option("memory+sessions")
    expect(page.locator("#privacy-warning")).to_contain_text("private text")
    expect(page.locator("#s-sessionsDir")).to_be_visible()
    expect(page.locator("#s-autoMode")).to_have_value("report")


# 1: the default rollback scope is a setting, and a run's page offers it first


def test_a_runs_rollback_offers_the_settings_default_scope_first(
    page: Any, dreamy: Path, server: UiServer
) -> None:
    import json

    from sage_mem.dream.paths import DreamPaths

    server.store.reconcile()
    go(page, "#/runs")
    page.locator("#dream-rewrite").click()
    page.locator("#dream-rewrite-go").click()
    expect(page.locator("#run-report h1")).to_contain_text("Autodream run")
    expect(page.locator("#scope-touched")).to_be_checked()
    config = DreamPaths(server.store.folder).config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"rollbackScope": "all"}))
    page.reload()
    expect(page.locator("#scope-all")).to_be_checked()


# the page probed: an edit writes only what the person changed


def test_an_edit_of_the_body_leaves_tags_and_aliases_with_commas_as_they_were(
    page: Any, folder: Path
) -> None:
    """The form shows a list as comma-separated text; a list item holding a comma ("Smith,
    John", "c,d") must not come back split into two items when the person edited something
    else: a field not touched is not written."""
    path = write_memory(folder, "user_names", (
        '---\ndescription: 同事的名字\ncategory: user\naliases: ["Smith, John", 猫]\n'
        'tags: ["c,d", 名字]\n---\n\nbody\n'))
    go(page, "#/edit/user_names")
    expect(page.locator("#f-aliases")).to_have_value("Smith, John, 猫")
    page.locator("#f-body").fill("body, edited in the page")
    page.locator("#save").click()
    expect(page).to_have_url(re.compile(r"#/m/user_names$"))
    text = path.read_text()
    assert "body, edited in the page" in text
    assert 'aliases: ["Smith, John", 猫]' in text and 'tags: ["c,d", 名字]' in text


# the page probed: Chinese typed through an input method


def ime(page: Any, text: str) -> Any:
    """Start composing `text` in the focused box, as a pinyin input method does (Chromium's
    own IME path over CDP); the session commits it with `commit`."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.imeSetComposition", {"text": text, "selectionStart": len(text),
                                         "selectionEnd": len(text)})
    return cdp


def ime_key(cdp: Any, key: str) -> None:
    """A key pressed while composing: the browser marks it isComposing (keyCode 229)."""
    for kind in ("keyDown", "keyUp"):
        cdp.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                                            "windowsVirtualKeyCode": 229,
                                            "nativeVirtualKeyCode": 229})


def test_enter_and_escape_while_composing_chinese_belong_to_the_input_method(
    page: Any, folder: Path
) -> None:
    """Enter (commit the pinyin) and Escape (cancel it) are the input method's while a word
    is being composed: the search does not open the first result of the half-typed pinyin,
    the archive box does not archive with a reason half typed, the editor is not left."""
    write_memory(folder, "user_mao", memory_file("熊猫馆在北京 (xiongmao)", "熊猫。",
                                                 category="user"))
    expect(page.locator("#results")).to_contain_text("熊猫馆")
    search = page.locator("#search")
    search.focus()
    cdp = ime(page, "xiongmao")
    expect(page.locator("#results a.card").first).to_contain_text("熊猫馆")
    ime_key(cdp, "Enter")
    settle(page)
    assert "#/m/" not in page.url and search.input_value() == "xiongmao"
    cdp.send("Input.insertText", {"text": "熊猫馆"})
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"#/m/user_mao$"))
    page.locator("#archive").click()
    page.locator("#archive-reason").focus()
    cdp = ime(page, "yuanyin")
    ime_key(cdp, "Enter")
    settle(page)
    assert (folder / "user_mao.md").exists() and not (folder / "archive").exists()
    cdp.send("Input.insertText", {"text": "原因"})
    go(page, "#/edit/user_mao")
    body = page.locator("#f-body")
    body.focus()
    cdp = ime(page, "zhima")
    ime_key(cdp, "Escape")
    settle(page)
    expect(page).to_have_url(re.compile(r"#/edit/user_mao$"))
    assert page.locator("#leave-confirm").count() == 0


# the page probed: sage-mem ui started again while an edit is open


def test_a_restarted_server_never_drops_the_edit_open_in_the_page(
    browser: Any, folder: Path
) -> None:
    """Ctrl-C and `sage-mem ui` again (same port, a new key) while an edit is unsaved: the
    Save that meets the old key keeps the editor and its text and says to open the new
    link; opening it in this tab takes the new key, and the same edit is then saved."""
    store = MemoryStore(folder, watch=True)
    first = UiServer(store, port=0).start()
    second = None
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(first.url)
        expect(tab.locator("#results li.result").first).to_be_visible()
        go(tab, "#/edit/user_profile")
        body = tab.locator("#f-body")
        expect(body).to_be_visible()
        body.fill("Typed before the restart, 重启之前写的。")
        first.stop()
        second = UiServer(store, port=first.port).start()
        tab.locator("#save").click()
        expect(tab.locator("#need-token")).to_contain_text("sage-mem ui")
        expect(body).to_have_value("Typed before the restart, 重启之前写的。")
        tab.goto(second.url)  # the new link, in this tab: only its #fragment differs
        expect(tab.locator("#need-token")).to_be_hidden()
        tab.locator("#save").click()
        expect(tab).to_have_url(re.compile(r"#/m/user_profile$"))
        assert "重启之前写的" in (folder / "user_profile.md").read_text()
    finally:
        context.close()
        first.stop()
        if second is not None:
            second.stop()
        store.close()


# the page probed: a hostile body (an agent may write what a web page told it)


def test_a_hostile_body_is_shown_as_text_without_freezing_or_breaking_the_page(
    page: Any, folder: Path
) -> None:
    """Thousands of nested `>` overflowed the renderer's stack (the memory did not show),
    and a long line of `[[` or `[x](` took the markdown patterns quadratic time (a 300 KB
    line froze the tab for most of a minute). Both show as text, at once."""
    write_memory(folder, "reference_deep", memory_file(
        "深的引用 deep quotes", ">" * 6000 + " 最深处 the bottom\n", category="reference"))
    write_memory(folder, "reference_brackets", memory_file(
        "方括号 brackets", "[[" * 75000 + "\n\n" + "[x](" * 50000 + "\n\nthe end 结束\n",
        category="reference"))
    go(page, "#/m/reference_deep")
    expect(page.locator("#memory-body")).to_contain_text("最深处 the bottom")
    go(page, "#/m/reference_brackets")
    expect(page.locator("#memory-body")).to_contain_text("the end 结束")
    assert page.locator("#memory-body a").count() == 0
