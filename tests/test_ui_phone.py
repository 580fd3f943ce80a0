"""`sage-mem ui` on a phone, 390 x 844 (issue 30, item 8): every tab on screen with its badge,
the one shown marked, and a star map whose labels sit on their clusters, whose legend covers no
star and whose timeline is above the fold.

The browser, the folder and its server come from test_ui_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from support import write_memory
from test_ui_browser import PHONE, TIMEOUT, expect, memory_file, settle, shot

from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser

browser = test_ui_browser.browser
folder = test_ui_browser.folder
server = test_ui_browser.server

TABS = ["list", "stars", "archive", "audit", "runs"]


@pytest.fixture
def phone(browser: Any, server: UiServer) -> Iterator[Any]:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(TIMEOUT)
    shown = context.new_page()
    shown.goto(server.url)
    expect(shown.locator("#results li.result").first).to_be_visible()
    yield shown
    context.close()


def go(page: Any, hash_: str) -> None:
    page.evaluate(f"() => {{ location.hash = {hash_!r}; }}")


def on_screen(page: Any, selector: str) -> dict[str, Any]:
    """Where a node is, and whether all of it is inside the viewport and nothing covers it."""
    return page.evaluate("""(selector) => {
        const node = document.querySelector(selector);
        const box = node.getBoundingClientRect();
        const x = box.left + box.width / 2, y = box.top + box.height / 2;
        const top = document.elementFromPoint(x, y);
        return { left: box.left, right: box.right, top: box.top, bottom: box.bottom,
                 width: box.width, height: box.height,
                 inside: box.width > 0 && box.height > 0 && box.left >= 0 && box.top >= 0 &&
                         box.right <= innerWidth + 0.5 && box.bottom <= innerHeight + 0.5,
                 uncovered: !!top && (node === top || node.contains(top)) };
    }""", selector)


def test_on_a_phone_every_tab_and_the_audit_badge_are_on_screen(
    phone: Any, folder: Path, server: UiServer
) -> None:
    write_memory(folder, "feedback_misfiled", memory_file("Misfiled", category="user"))
    server.store.reconcile()
    expect(phone.locator("#audit-badge")).to_be_visible()
    for tab in TABS:
        where = on_screen(phone, f'[data-nav="{tab}"]')
        assert where["inside"] and where["uncovered"], (tab, where)
    badge = on_screen(phone, "#audit-badge")
    assert badge["inside"] and badge["uncovered"] and badge["width"] >= 12, badge
    first = on_screen(phone, "#results li.result")
    assert first["inside"] and first["uncovered"], first  # above the fold, under no bar
    assert phone.locator("header.top").bounding_box()["height"] <= 60
    shot(phone, "phone-tabs")
    for tab, hash_ in zip(TABS, ["#/", "#/stars", "#/archive", "#/audit", "#/runs"], strict=True):
        go(phone, hash_)
        active = phone.locator(f'[data-nav="{tab}"]')
        expect(active).to_have_class("active")
        expect(active).to_have_attribute("aria-current", "page")
        where = on_screen(phone, f'[data-nav="{tab}"]')
        assert where["inside"] and where["uncovered"], (tab, where)


def test_on_a_phone_the_star_map_labels_its_clusters_and_shows_its_timeline(
    phone: Any, folder: Path, server: UiServer
) -> None:
    for n in range(40):
        category = ["user", "feedback", "project", "reference"][n % 4]
        write_memory(folder, f"{category}_phone_{n:02d}", memory_file(
            f"Phone note {n}", "word " * (n * 5) + f"[[{category}_phone_{(n + 4) % 40:02d}]]",
            category=category, created=f"2026-{1 + n % 12:02d}-01"))
    server.store.reconcile()
    go(phone, "#/stars")
    canvas = phone.locator("#starmap")
    expect(canvas).to_have_attribute("data-star-count", str(len(server.store.list())))
    settle(phone)
    timeline = on_screen(phone, "#timeline")
    assert timeline["inside"] and timeline["uncovered"], timeline
    sky = canvas.evaluate("""c => {
        const m = c.starmap;
        const box = c.getBoundingClientRect();
        return { labels: m.labels, width: m.w, height: m.h, left: box.left, top: box.top,
                 stars: m.stars.filter(s => m.isVisible(s))
                               .map(s => ({ g: s.group, x: s.x, y: s.y })) };
    }""")
    assert sky["labels"]
    for label in sky["labels"]:
        own = [s for s in sky["stars"] if s["g"] == label["group"]]
        left, right = min(s["x"] for s in own), max(s["x"] for s in own)
        top = min(s["y"] for s in own)
        middle = (label["left"] + label["right"]) / 2
        # On its cluster: over its stars' span, and just above (or among) its highest ones.
        assert left - 20 <= middle <= right + 20, label
        assert top - 40 <= label["bottom"] <= top + 40, label
        assert 0 <= label["left"] and label["right"] <= sky["width"] and label["top"] >= 0, label
    legend = phone.locator("#star-legend").bounding_box()
    for star in sky["stars"]:
        x, y = sky["left"] + star["x"], sky["top"] + star["y"]
        inside = (legend["x"] - 4 <= x <= legend["x"] + legend["width"] + 4
                  and legend["y"] - 4 <= y <= legend["y"] + legend["height"] + 4)
        assert not inside, star
    shot(phone, "phone-starmap")
