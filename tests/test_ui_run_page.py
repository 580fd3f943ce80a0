"""`sage-mem ui`'s page of a dream run at size (issue 30, items 5 and 6): its changes a page at a
time and by kind, and a run started from the page shows its progress while it runs.

The browser, the folder, its server and the page come from test_ui_browser.py.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from support import write_memory
from test_ui_browser import expect, memory_file

from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser

browser = test_ui_browser.browser
folder = test_ui_browser.folder
server = test_ui_browser.server
page = test_ui_browser.page


def go(page: Any, hash_: str) -> None:
    page.evaluate(f"() => {{ location.hash = {hash_!r}; }}")


def busy_folder(folder: Path, count: int) -> None:
    for n in range(count):
        write_memory(folder, f"project_note_{n:02d}", memory_file(
            f"Note {n}", f"Yesterday we moved deploy {n} to Fridays.", category="project",
            created="2026-01-10", updated="2026-01-10T09:00:00Z"))
    write_memory(folder, "user_old_editor", memory_file("Old editor: vim", "vim", category="user"))
    write_memory(folder, "user_new_editor", memory_file(
        "New editor: helix", "helix", category="user", supersedes=["user_old_editor"]))


def test_a_runs_changes_come_a_page_at_a_time_and_by_kind(
    page: Any, folder: Path, server: UiServer
) -> None:
    from sage_mem.dream import run_dream

    busy_folder(folder, 70)
    server.store.reconcile()
    run = run_dream(server.store, mode="rewrite")
    go(page, f"#/runs/{run.run_id}")
    changes = page.locator("#run-changes details.change")
    expect(changes).to_have_count(50)
    total = int(re.search(r"of (\d+)", page.locator("#changes-count").inner_text()).group(1))
    assert total > 70
    page.locator("#changes-more").click()
    expect(changes).to_have_count(total)
    expect(page.locator("#changes-more")).to_have_count(0)
    page.locator("#change-kind").select_option("supersedes")
    expect(changes).to_have_count(1)
    expect(changes.first).to_have_attribute("data-file", "user_old_editor.md")
    expect(page.locator("#changes-count")).to_contain_text(f"Showing 1 of 1 (of {total} in all)")
    page.locator("#change-kind").select_option("")
    expect(changes).to_have_count(50)


def test_a_dream_started_from_the_page_shows_its_progress_while_it_runs(
    page: Any, folder: Path, server: UiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.dream.manifest import Manifest

    busy_folder(folder, 40)
    server.store.reconcile()
    # Each change the run journals waits a moment, so that the run lasts long enough to watch.
    add_change = Manifest.add_change

    def slowly(self: Manifest, entry: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.1)
        return add_change(self, entry)

    monkeypatch.setattr(Manifest, "add_change", slowly)
    go(page, "#/runs")
    page.locator("#dream-report").click()
    progress = page.locator("#dream-progress")
    expect(progress).to_contain_text(
        re.compile(r"Dream run \d{8}T\S+ \(report\): running for \d+ s; \d+ changes? so far"))
    expect(progress).to_have_attribute("role", "status")
    expect(page.locator('#runs tr[data-run] .status.running')).to_have_count(1)
    expect(page.locator("#run-title")).to_contain_text("Dream run", timeout=60_000)
    expect(page.locator("#dream-progress")).to_have_count(0)
