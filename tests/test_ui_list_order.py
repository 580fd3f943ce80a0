"""`sage-mem ui`'s list at any size (issue 30, item 4): newest first, oldest first or by id, so
that the oldest memory is one choice away, not 50 clicks on "Show more".

The browser, the folder, its server and the page come from test_ui_browser.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from test_ui_browser import expect
from test_ui_page import many

from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser

browser = test_ui_browser.browser
folder = test_ui_browser.folder
server = test_ui_browser.server
page = test_ui_browser.page


def test_the_oldest_memory_is_one_choice_away(page: Any, folder: Path, server: UiServer) -> None:
    many(folder, 250)
    server.store.reconcile()
    results = page.locator("#results li.result")
    expect(page.locator("#result-count")).to_contain_text("260 memories")
    oldest = min(server.store.list(), key=lambda m: (m.updated or "", m.id)).id
    page.locator("#sort").select_option("oldest")
    expect(results.first).to_have_attribute("data-id", oldest)
    expect(results).to_have_count(100)
    page.locator("#sort").select_option("id")
    expect(results.first).to_have_attribute("data-id", "feedback_concise_zh")
    page.locator("#load-more").click()
    expect(results).to_have_count(200)
    page.locator("#search").press_sequentially("release", delay=10)
    expect(page.locator("#sort")).to_be_hidden()  # a search is best match first
