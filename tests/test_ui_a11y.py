"""`sage-mem ui` for everyone (issue 30, item 9): axe-core finds nothing in any view, light or
dark, and every star of the map is reachable from the keyboard and described for a screen reader.

axe-core comes from the npm registry (`.ci/ui-setup` installs it into
`~/.cache/sage-mem-ci/axe`, or `$SAGE_MEM_AXE_PREFIX`); it is put into the page
through the DevTools protocol, which the page's Content-Security-Policy does
not govern, so the page is checked with its real policy on. Without axe-core
(or Chromium) the tests skip and say why; under CI=true they fail instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from support import missing_tool, write_memory
from test_ui_browser import TIMEOUT, expect, memory_file

from sage_mem.dream import run_dream
from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser

AXE_PREFIX = Path(os.environ.get("SAGE_MEM_AXE_PREFIX") or Path(
    os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sage-mem-ci" / "axe")
AXE = AXE_PREFIX / "node_modules" / "axe-core" / "axe.min.js"

browser = test_ui_browser.browser
folder = test_ui_browser.folder
server = test_ui_browser.server
dreamy = test_ui_browser.dreamy


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.is_file():
        missing_tool(f"axe-core is missing at {AXE}: run .ci/ui-setup")
    return AXE.read_text(encoding="utf-8")


def violations(page: Any, axe_source: str) -> list[str]:
    """axe-core's violations on the page as it is now, one line per rule with where it fails."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source + "\n;0")
    found = page.evaluate("""async () => {
        const result = await axe.run(document, { resultTypes: ['violations'] });
        return result.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' +
            v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ') +
            (v.nodes.length > 3 ? ' and ' + (v.nodes.length - 3) + ' more' : ''));
    }""")
    return list(found)


def go(page: Any, hash_: str) -> None:
    page.evaluate(f"() => {{ location.hash = {hash_!r}; }}")


# Each view, and what shows that it has drawn what it shows.
VIEWS = [
    ("list", "#/", "#results li.result"),
    ("empty archive", "#/archive", "#archive-count:has-text('empty')"),
]
VIEWS_WITH_DATA = [
    ("memory", "#/m/project/api/auth_flow", "#backlinks"),
    ("archived memory", "#/m/archive/user_old_editor", "#archived-note"),
    ("editor", "#/edit/project/api/auth_flow", "#f-description"),
    ("new memory", "#/new", "#f-id"),
    ("raw editor", "#/raw/project/api/auth_flow", "#raw-text"),
    ("star map", "#/stars", "#starmap[data-draws]:not([data-draws='0'])"),
    ("archive", "#/archive", "#archive-rows tr"),
    ("audit", "#/audit", "#findings tbody tr"),
    ("dream runs", "#/runs", "#runs tbody tr"),
    ("a run", "#/runs/{run}", "#run-changes"),
    ("dream settings", "#/dream-settings", "#s-minHours"),
    ("no such page", "#/nowhere", "#not-found"),
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_view_has_an_accessibility_violation(
    browser: Any, dreamy: Path, server: UiServer, axe_source: str, scheme: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, color_scheme=scheme)
    context.set_default_timeout(TIMEOUT)
    try:
        page = context.new_page()
        page.goto(server.url)
        found: dict[str, list[str]] = {}
        for name, hash_, ready in VIEWS:
            go(page, hash_)
            expect(page.locator(ready).first).to_be_attached()
            found[name] = violations(page, axe_source)
        store = server.store
        store.reconcile()
        store.archive("user_old_editor", "replaced by helix")
        write_memory(dreamy, "feedback_misfiled", memory_file("Misfiled", category="user"))
        store.reconcile()
        run = run_dream(store, mode="report")
        for name, hash_, ready in VIEWS_WITH_DATA:
            go(page, hash_.format(run=run.run_id))
            expect(page.locator(ready).first).to_be_attached()
            found[name] = violations(page, axe_source)
        said = [f"{name}: {line}" for name, lines in found.items() for line in lines]
        assert said == [], "\n".join(said)
    finally:
        context.close()


def test_a_phone_view_has_no_accessibility_violation(
    browser: Any, folder: Path, server: UiServer, axe_source: str
) -> None:
    context = browser.new_context(viewport=test_ui_browser.PHONE, is_mobile=True)
    context.set_default_timeout(TIMEOUT)
    try:
        page = context.new_page()
        page.goto(server.url)
        expect(page.locator("#results li.result").first).to_be_visible()
        assert violations(page, axe_source) == []
        go(page, "#/stars")
        expect(page.locator("#starmap[data-draws]:not([data-draws='0'])")).to_be_attached()
        assert violations(page, axe_source) == []
    finally:
        context.close()


def test_every_star_is_reachable_from_the_keyboard_and_named(
    browser: Any, folder: Path
) -> None:
    write_memory(folder, "user_linked", memory_file(
        "Links to the profile", "See [[user_profile]].", category="user"))
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.set_default_timeout(TIMEOUT)
        try:
            page = context.new_page()
            page.goto(running.url)
            expect(page.locator("#results li.result").first).to_be_visible()
            go(page, "#/stars")
            canvas = page.locator("#starmap")
            expect(canvas).to_have_attribute("data-star-count", str(len(store.list())))
            # The canvas is one Tab stop; the arrow keys go from star to star, each said aloud.
            canvas.focus()
            page.keyboard.press("ArrowRight")
            said = page.locator("#star-focus")
            expect(said).not_to_be_empty()
            reached: set[str] = set()
            for _ in range(len(store.list()) * 2):
                reached.add(canvas.get_attribute("data-focus") or "")
                page.keyboard.press("n")  # the next star, in reading order
            assert reached >= {m.id for m in store.list()}
            go(page, "#/stars")
            # The same stars as a list a screen reader can read: each a link with its relations.
            page.locator("#star-list summary").click()
            items = page.locator("#star-list li[data-id]")
            expect(items).to_have_count(len(store.list()))
            linked = page.locator('#star-list li[data-id="user_linked"]')
            expect(linked).to_contain_text("Links to the profile")
            expect(linked).to_contain_text("links to user_profile")
            expect(page.locator('#star-list li[data-id="user_profile"]')).to_contain_text(
                re.compile(r"linked from [^;]*\buser_linked\b"))
            linked.locator("a").first.click()
            expect(page.locator("#memory-title")).to_have_text("Links to the profile")
        finally:
            context.close()
