"""The page with several folders (issue 15, item 5), in a real headless Chromium.

The list and the search read the personal folder and the shared ones, each
memory labelled with its folder; a shared folder's memory is shown, never
changed from the page (its Edit is disabled, its editor says why, a write
naming it is refused by the server). With one folder nothing of this shows
(tests/test_ui_browser.py runs unchanged).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import missing_tool, write_memory

from sage_mem.folders import Folders, FolderSpec
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
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def memory_file(description: str, body: str = "", **meta: Any) -> str:
    lines = [f"description: {json.dumps(description, ensure_ascii=False)}"]
    lines += [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body + "\n"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    mine, team = tmp_path / "memory", tmp_path / "team-memory"
    write_memory(mine, "project_deploy", memory_file("My side project deploys on Fridays",
                                                     category="project"))
    write_memory(mine, "user_tea_zh", memory_file("用户每天下午喝乌龙茶", category="user"))
    write_memory(team, "project_deploy", memory_file("Team deploys go out on Tuesdays",
                                                     "See [[reference_runbook_zh]].",
                                                     category="project"))
    write_memory(team, "reference_runbook_zh", memory_file("部署手册在共享盘的运维目录里",
                                                           category="reference"))
    return mine, team


@pytest.fixture
def page(folders: tuple[Path, Path]) -> Iterator[tuple[Any, UiServer]]:
    mine, team = folders
    specs = [FolderSpec("me", mine, personal=True), FolderSpec("team", team, read_only=True)]
    with MemoryStore(mine, watch=True) as store, \
            Folders(specs, store=store, watch=True) as several, \
            UiServer(store, port=0, folders=several).start() as server, \
            sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        opened = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
        opened.set_default_timeout(10_000)
        errors: list[str] = []
        opened.on("pageerror", lambda error: errors.append(str(error)))
        opened.goto(server.url)
        expect(opened.locator("#results li.result").first).to_be_visible()
        yield opened, server
        browser.close()
        assert errors == []


def test_the_list_and_the_search_label_each_memory_with_its_folder(
    page: tuple[Any, UiServer],
) -> None:
    opened, _ = page
    expect(opened.locator("#results li.result")).to_have_count(4)
    shared = opened.locator('li.result[data-id="team:project_deploy"]')
    expect(shared.locator(".flag.folder")).to_have_text("team · read-only")
    expect(opened.locator('li.result[data-id="project_deploy"] .flag.folder')).to_have_text("me")
    opened.locator("#search").fill("部署手册")
    expect(opened.locator("#results li.result").first).to_have_attribute(
        "data-id", "team:reference_runbook_zh")
    opened.locator("#search").fill("deploys")
    expect(opened.locator('li.result[data-id="team:project_deploy"]')).to_be_visible()
    expect(opened.locator('li.result[data-id="project_deploy"]')).to_be_visible()


def test_a_shared_memory_is_shown_but_not_editable(
    page: tuple[Any, UiServer], folders: tuple[Path, Path]
) -> None:
    opened, server = page
    team_file = folders[1] / "project_deploy.md"
    before = team_file.read_bytes()
    opened.locator('li.result[data-id="team:project_deploy"] a').click()
    expect(opened.locator("#memory-title")).to_have_text("Team deploys go out on Tuesdays")
    expect(opened.locator("#memory-id")).to_have_text("team:project_deploy")
    expect(opened.locator("#shared-note")).to_contain_text("team")
    expect(opened.locator("#edit")).to_be_disabled()
    assert opened.locator("#rename, #archive").count() == 0
    # its link resolves within its own folder
    expect(opened.locator("#memory-body a")).to_have_attribute(
        "href", re.compile("team%3Areference_runbook_zh"))
    # the editor's address refuses it too
    opened.goto(server.url.split("#")[0] + "#/edit/" + "team%3Aproject_deploy")
    expect(opened.locator("#shared-note")).to_be_visible()
    # and the server refuses a write naming it, whatever sends it
    token = opened.evaluate("() => localStorage.getItem('sage-mem-token:' + location.port)")
    answer = opened.evaluate(
        """async (token) => {
            const r = await fetch('/api/memory', {method: 'POST', headers: {
              'Content-Type': 'application/json', 'X-Sage-Token': token},
              body: JSON.stringify({id: 'team:project_deploy', description: 'Changed'})});
            return [r.status, await r.json()];
        }""", token)
    assert answer[0] == 400 and "read-only" in answer[1]["error"]
    assert team_file.read_bytes() == before
    # the personal folder's memory of the same id is still edited as before
    opened.goto(server.url.split("#")[0] + "#/m/project_deploy")
    expect(opened.locator("#memory-title")).to_have_text("My side project deploys on Fridays")
    expect(opened.locator("a#edit")).to_be_visible()
