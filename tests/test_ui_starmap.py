"""`sage-mem ui`'s star map to read (issue 30, item 7): linked memories sit near each other,
zoom and pan, and a star lights its relations on hover or keyboard focus, drawing only on change.

The browser and the folder's server come from test_ui_browser.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from support import write_memory
from test_ui_browser import TIMEOUT, expect, memory_file, settle, shot

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser

browser = test_ui_browser.browser


def go(page: Any, hash_: str) -> None:
    page.evaluate(f"() => {{ location.hash = {hash_!r}; }}")


@pytest.fixture
def linked_folder(empty_dir: Path) -> Path:
    """Small groups of memories linked in chains, in each category, and many loose ones."""
    categories = ["user", "feedback", "project", "reference"]
    for n in range(400):
        category = categories[n % 4]
        group = (n // 4) // 5  # five memories of a category per chain
        body = "Loose."
        if group < 10 and (n // 4) % 5:
            body = f"Follows [[{category}_{n - 4:03d}]]."
        write_memory(empty_dir, f"{category}_{n:03d}", memory_file(
            f"Memory {n}", body, category=category, created=f"2026-{1 + n % 12:02d}-01"))
    return empty_dir


def test_linked_memories_sit_together_and_a_star_lights_its_relations(
    browser: Any, linked_folder: Path
) -> None:
    with MemoryStore(linked_folder, watch=False) as store, \
            UiServer(store, port=0).start() as running:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.set_default_timeout(TIMEOUT)
        try:
            page = context.new_page()
            page.goto(running.url)
            expect(page.locator("#results li.result").first).to_be_visible()
            go(page, "#/stars")
            canvas = page.locator("#starmap")
            expect(canvas).to_have_attribute("data-star-count", "400")
            sky = canvas.evaluate("""c => {
                const m = c.starmap;
                const far = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);
                const linked = m.relations.map(([a, b]) => far(a, b));
                const loose = [];
                for (const a of m.stars) for (const b of m.stars)
                    if (a.group === b.group && a.id < b.id) loose.push(far(a, b));
                return { linked, loose };
            }""")
            linked = sum(sky["linked"]) / len(sky["linked"])
            anyone = sum(sky["loose"]) / len(sky["loose"])
            assert len(sky["linked"]) == 160 and linked < 0.5 * anyone, (linked, anyone)

            where = canvas.evaluate("c => c.starmap.positionOf('user_012')")
            box = canvas.bounding_box()
            page.mouse.move(box["x"] + where["x"], box["y"] + where["y"])
            expect(canvas).to_have_attribute("data-lit", "2")  # user_008 and user_016
            shot(page, "ui-starmap-lit")
            settle(page)
            draws = canvas.get_attribute("data-draws")
            settle(page)
            assert canvas.get_attribute("data-draws") == draws  # still: no drawing while idle

            page.locator("#zoom-in").click()
            expect(canvas).to_have_attribute("data-zoom", "1.5")
            after = canvas.evaluate("c => c.starmap.positionOf('user_012')")
            middle = {"x": box["width"] / 2, "y": box["height"] / 2}
            assert math.isclose(after["x"] - middle["x"], 1.5 * (where["x"] - middle["x"]),
                                abs_tol=1)
            page.mouse.move(box["x"] + 200, box["y"] + 200)
            page.mouse.down()
            page.mouse.move(box["x"] + 260, box["y"] + 230, steps=4)
            page.mouse.up()
            moved = canvas.evaluate("c => c.starmap.positionOf('user_012')")
            assert math.isclose(moved["x"] - after["x"], 60, abs_tol=1)
            assert math.isclose(moved["y"] - after["y"], 30, abs_tol=1)
            assert "#/m/" not in page.url  # a drag is not a click
            canvas.focus()
            page.keyboard.press("0")
            expect(canvas).to_have_attribute("data-zoom", "1")
            page.keyboard.press("Home")
            focused = canvas.get_attribute("data-focus")
            assert focused
            expect(page.locator("#star-focus")).to_contain_text(focused)
        finally:
            context.close()
