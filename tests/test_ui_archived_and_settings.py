"""`sage-mem ui` (issue 30, item 10): an archived memory is deleted from its own page after
confirming; an empty archive draws no table; every dream setting has its help, written as text
(code as code, never a literal backtick), with a default that says something; the agent command
offers the agents found on PATH.

The browser, the folder, its server and the page come from test_ui_browser.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import test_ui_browser
from test_ui import fake_agent
from test_ui_browser import expect

from sage_mem.ui import UiServer

pytestmark = pytest.mark.browser

browser = test_ui_browser.browser
folder = test_ui_browser.folder
server = test_ui_browser.server
page = test_ui_browser.page


def go(page: Any, hash_: str) -> None:
    page.evaluate(f"() => {{ location.hash = {hash_!r}; }}")


def test_an_archived_memory_is_deleted_from_its_own_page_after_confirming(
    page: Any, folder: Path, server: UiServer
) -> None:
    server.store.archive("user_cat_zh", reason="the cat moved out")
    server.store.archive("feedback_tests_first", reason="written into CONTRIBUTING")
    go(page, "#/m/archive/user_cat_zh")
    expect(page.locator("#archived-note")).to_contain_text("the cat moved out")
    page.locator("#delete").click()
    confirm = page.locator("#delete-confirm")
    expect(confirm).to_contain_text("archive/user_cat_zh")
    expect(confirm).to_contain_text("for good")
    expect(page.locator("#delete-cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(confirm).to_be_hidden()
    assert (folder / "archive/user_cat_zh.md").exists()
    page.locator("#delete").click()
    page.locator("#delete-go").click()
    expect(page.locator("#toast")).to_contain_text("Deleted archive/user_cat_zh")
    expect(page).to_have_url(re.compile(r"#/archive$"))
    expect(page.locator("#archive-rows tr[data-id]")).to_have_count(1)
    assert not (folder / "archive/user_cat_zh.md").exists()
    assert (folder / "archive/feedback_tests_first.md").exists()


def test_an_archived_memory_changed_on_disk_is_not_deleted_from_its_page(
    page: Any, folder: Path, server: UiServer
) -> None:
    server.store.archive("user_cat_zh", reason="the cat moved out")
    go(page, "#/m/archive/user_cat_zh")
    page.locator("#delete").click()
    expect(page.locator("#delete-confirm")).to_be_visible()
    path = folder / "archive/user_cat_zh.md"
    # Changed on disk after the page showed it: the delete is refused, nothing is lost.
    page.route("**/api/delete", lambda route: (
        path.write_bytes(path.read_bytes() + b"\nA line added meanwhile.\n"), route.continue_()))
    page.locator("#delete-go").click()
    expect(page.locator("#toast")).to_contain_text("changed on disk")
    assert path.read_bytes().endswith(b"A line added meanwhile.\n")


def test_an_empty_archive_draws_no_table(page: Any, server: UiServer) -> None:
    go(page, "#/archive")
    expect(page.locator("#archive-count")).to_have_text("The archive is empty.")
    expect(page.locator("#archive-table")).to_be_hidden()
    expect(page.locator("main th:visible")).to_have_count(0)
    expect(page.locator("#archive-filter")).to_be_hidden()
    server.store.archive("user_cat_zh", reason="the cat moved out")
    expect(page.locator("#archive-table")).to_be_visible()
    expect(page.locator("#archive-filter")).to_be_visible()


def test_every_setting_has_help_shown_as_text_with_a_default_that_says_something(
    page: Any
) -> None:
    go(page, "#/dream-settings")
    expect(page.locator("#s-autoFromHook")).to_be_visible()
    described = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#dream-settings [name]')).map(input => {
            const field = input.closest('.setting');
            return { key: input.name, help: field ? field.querySelector('.help')?.innerText : null,
                     code: field ? field.querySelectorAll('.help code').length : 0 };
        })""")
    keys = {item["key"] for item in described}
    assert {"autoFromHook", "sessionsDir", "autoMode", "agentCommand"} <= keys
    for item in described:
        assert item["help"], item
        assert "`" not in item["help"], item
        assert not re.search(r"Default:\s*$", item["help"]), item
    by_key = {item["key"]: item for item in described}
    assert "session-start hook" in by_key["autoFromHook"]["help"]
    assert by_key["autoMode"]["code"] >= 1  # `dream --auto`, as code
    assert re.search(r"Default: (empty|none)", by_key["sessionsDir"]["help"])


def test_choosing_an_agent_found_on_path_fills_the_command_and_saves_it(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: UiServer
) -> None:
    from sage_mem.dream.paths import DreamPaths

    bin_dir = tmp_path / "bin"
    claude = fake_agent(bin_dir, "claude")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    go(page, "#/dream-settings")
    choices = page.locator("#s-agentCommand-agent")
    expect(choices.locator("option")).to_contain_text(["", "claude"])
    expect(choices).to_contain_text(str(claude))
    choices.select_option("claude")
    expect(page.locator("#s-agentCommand")).to_have_value(re.compile(r"^claude -p \{prompt\}"))
    page.locator("#settings-save").click()
    expect(page.locator("#toast")).to_contain_text("Saved the dream settings")
    saved = json.loads(DreamPaths(server.store.folder).config_file.read_text())
    assert saved["agentCommand"][:3] == ["claude", "-p", "{prompt}"]
    expect(page.locator("#agent-command")).to_contain_text(str(claude))
    expect(page.locator("#s-agentCommand-agent")).to_have_value("claude")
