"""Containment: nothing outside the memory and state folders is read or written, by any interface.

An audit hook (`sys.addaudithook`) records every path the process opens,
creates, renames, removes, links, lists or chmods while the API, the CLI, the
MCP server (with its watcher) and the hooks run their commands over a folder
that holds symlinks leading out of it (a file, a folder, MEMORY.md itself)
and a sentinel file beside it. Each path is resolved as it is used: a path
inside the folder that leads outside through a symlink counts as outside.

Also: what the tool creates is private, whatever the umask: files 0600,
folders 0700. Paths a user names on purpose (`export --output`, `import`,
`init DIR`, `install`) are outside this rule and not exercised here.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from reliability_support import cli, hook, hook_context, mcp_call, mcp_client, prompt_input, tree
from support import TEMPLATE

from sage_mem.checks.audit import audit
from sage_mem.errors import InvalidId, InvalidMemory, SageMemError
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.anyio

SENTINEL = "SENTINEL-outside-pangolin"


class _Recorder:
    """Paths used by this process while recording, resolved through symlinks when used."""

    def __init__(self) -> None:
        self.active = False
        self.paths: list[tuple[str, str]] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or not (event == "open" or event.startswith(("os.", "shutil."))):
            return
        self.active = False  # realpath must not record itself
        try:
            for arg in args:
                if isinstance(arg, (str, bytes, os.PathLike)):
                    path = os.path.abspath(os.fsdecode(arg))
                    if event in _NOT_FOLLOWING:  # the last part is the link itself, not its target
                        path = os.path.join(os.path.realpath(os.path.dirname(path)),
                                            os.path.basename(path))
                    else:
                        path = os.path.realpath(path)
                    self.paths.append((event, path))
        finally:
            self.active = True


# Calls that act on a symlink itself rather than on what it points to.
_NOT_FOLLOWING = frozenset({"os.rename", "os.remove", "os.rmdir", "os.link", "os.symlink",
                            "os.mkdir"})


RECORDER = _Recorder()
sys.addaudithook(RECORDER)


@contextmanager
def recording() -> Iterator[list[tuple[str, str]]]:
    RECORDER.paths = []
    RECORDER.active = True
    try:
        yield RECORDER.paths
    finally:
        RECORDER.active = False


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A memory folder with symlinks leading out of it, and a sentinel folder beside it."""
    outside = tmp_path / "outside"
    (outside / "notes").mkdir(parents=True)
    for path in (outside / "secret.md", outside / "notes" / "secret_note.md", outside / "index.md"):
        path.write_text(f"---\ndescription: {SENTINEL}\n---\n\n{SENTINEL}\n", encoding="utf-8")
    memory = tmp_path / "memory"
    shutil.copytree(TEMPLATE, memory)
    (memory / "user_link_out.md").symlink_to(outside / "secret.md")
    (memory / "project_linked").symlink_to(outside / "notes", target_is_directory=True)
    (memory / "MEMORY.md").symlink_to(outside / "index.md")
    (memory / "user_alias.md").symlink_to(memory / "user_profile.md")  # inside: allowed
    return {"memory": memory, "state": tmp_path / ".memory.sage-mem", "outside": outside,
            "root": tmp_path}


def violations(paths: list[tuple[str, str]], layout: dict[str, Path]) -> list[tuple[str, str]]:
    """The recorded paths inside the test's folder but outside the memory and state folders."""
    root = os.path.realpath(layout["root"])
    allowed = [os.path.realpath(layout["memory"]), os.path.realpath(layout["state"])]

    def within(path: str, folder: str) -> bool:
        return path == folder or path.startswith(folder + os.sep)

    return sorted({
        (event, path) for event, path in paths
        if within(path, root) and not any(within(path, folder) for folder in allowed)
    })


def created_modes(folder: Path, before: set[str]) -> dict[str, int]:
    """The permission bits of every file and folder under `folder` not in `before`."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if rel not in before and not path.is_symlink():
                out[rel] = stat.S_IMODE(path.lstat().st_mode)
    return out


@contextmanager
def umask(value: int) -> Iterator[None]:
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def check_private(folder: Path, before: set[str]) -> None:
    for rel, mode in created_modes(folder, before).items():
        if rel.startswith("archive/") and rel.removeprefix("archive/") in before:
            continue  # an archived file is the user's file, moved: it keeps its mode
        expected = 0o700 if (folder / rel).is_dir() else 0o600
        assert mode == expected, f"{rel}: {oct(mode)}"


def test_the_recorder_sees_a_read_through_a_symlink(layout: dict[str, Path]) -> None:
    with recording() as paths:
        (layout["memory"] / "user_link_out.md").read_bytes()  # what the tool must never do
    assert violations(paths, layout) == [("open", str(layout["outside"] / "secret.md"))]


def test_the_api_and_its_watcher_stay_inside(layout: dict[str, Path]) -> None:
    memory, outside = layout["memory"], layout["outside"]
    before, outside_before = set(tree(memory)), tree(outside)
    with umask(0), recording() as paths:
        store = MemoryStore(memory, watch=True)
        try:
            assert "user_link_out" not in store.index and "user_alias" in store.index
            for hit in store.search(SENTINEL) + store.search("pangolin"):
                assert "SENTINEL" not in hit.description
            for memory_id in ("user_link_out", "project_linked/secret_note"):
                with pytest.raises(InvalidId, match="outside"):
                    store.read(memory_id)
                with pytest.raises(InvalidId, match="outside"):
                    store.write(memory_id, description="through the link", category="user")
                with pytest.raises(SageMemError):
                    store.archive(memory_id, reason="through the link")
            store.write("project/new/deep_note", description="a nested new note",
                        category="project", body="body")
            assert store.read("user_alias").body == store.read("user_profile").body
            with pytest.raises(InvalidMemory, match="symlink"):  # never written through
                store.write("user_alias", summary="written through an inside link")
            store.feedback("user_cat_zh", helpful=True)
            store.note_used(["user_cat_zh"])
            store.archive("project_release_zh", reason="shipped")
            store.regenerate_index()
            report = audit(store)
            store.reconcile()
        finally:
            store.close()
    assert violations(paths, layout) == []
    assert tree(outside) == outside_before
    assert all(SENTINEL not in f.message for f in report.findings)
    assert (memory / "MEMORY.md").is_file() and not (memory / "MEMORY.md").is_symlink()
    check_private(memory, before)
    check_private(layout["state"], set())


def test_the_cli_stays_inside(layout: dict[str, Path]) -> None:
    memory, outside = layout["memory"], layout["outside"]
    before, outside_before = set(tree(memory)), tree(outside)
    folder = str(memory)
    with umask(0), recording() as paths:
        outputs = [
            cli("--dir", folder, "list", "--json"),
            cli("--dir", folder, "search", "pangolin"),
            cli("--dir", folder, "show", "user_link_out"),
            cli("--dir", folder, "show", "project_linked/secret_note"),
            cli("--dir", folder, "add", "project_linked/evil", "--description", "x"),
            cli("--dir", folder, "add", "project/cli/note", "--description", "cli note",
                "--category", "project"),
            cli("--dir", folder, "feedback", "user_cat_zh", "helpful"),
            cli("--dir", folder, "archive", "user_profile", "--reason", "moved"),
            cli("--dir", folder, "index"),
            cli("--dir", folder, "audit"),
            cli("--dir", folder, "export", "--jsonl"),
        ]
    assert violations(paths, layout) == []
    assert tree(outside) == outside_before
    for _, out, err in outputs:
        assert SENTINEL not in out + err
    assert [code for code, _, _ in outputs[2:5]] == [1, 1, 1]
    check_private(memory, before)
    check_private(layout["state"], set())


async def test_the_mcp_server_stays_inside(layout: dict[str, Path]) -> None:
    memory, outside = layout["memory"], layout["outside"]
    before, outside_before = set(tree(memory)), tree(outside)
    answers: list[Any] = []
    with umask(0), recording() as paths:
        store = MemoryStore(memory, watch=True)
        try:
            async with mcp_client(store) as client:
                for tool, arguments in (
                    ("memory_search", {"query": "pangolin"}),
                    ("memory_list", {"limit": 100}),
                    ("memory_read", {"id": "user_link_out"}),
                    ("memory_read", {"id": "project_linked/secret_note"}),
                    ("memory_write", {"id": "project_linked/evil", "description": "x"}),
                    ("memory_write", {"id": "project/mcp/note", "description": "mcp note",
                                      "category": "project"}),
                    ("memory_find_similar", {"id": "user_cat_zh"}),
                    ("memory_feedback", {"id": "user_cat_zh", "helpful": False}),
                    ("memory_archive", {"id": "user_link_out", "reason": "escape"}),
                    ("memory_archive", {"id": "feedback_tests_first", "reason": "merged"}),
                    ("memory_audit", {}),
                ):
                    answers.append(await mcp_call(client, tool, **arguments))
                for uri in ("sage-mem://baseline", "sage-mem://index", "memory://user_cat_zh"):
                    answers.append((await client.read_resource(uri)).contents[0].text)
                for uri in ("memory://user_link_out", "memory://project_linked/secret_note"):
                    with pytest.raises(Exception):  # noqa: B017 - MCPError, a resource error
                        await client.read_resource(uri)
        finally:
            store.close()
    assert violations(paths, layout) == []
    assert tree(outside) == outside_before
    assert SENTINEL not in json.dumps(answers, ensure_ascii=False)
    assert [ok for ok, _ in answers[2:5]] == [False, False, False]
    check_private(memory, before)
    check_private(layout["state"], set())


def test_the_hooks_stay_inside(layout: dict[str, Path]) -> None:
    memory, outside = layout["memory"], layout["outside"]
    outside_before = tree(outside)
    start = json.dumps({"session_id": "s-1", "cwd": str(outside), "source": "startup",
                        "hook_event_name": "SessionStart"})
    with umask(0), recording() as paths:
        code, out, err = hook("session-start", start, memory)
        assert code == 0 and hook_context(out)
        code, out, err = hook("user-prompt-submit", prompt_input("pangolin 猫", session="s-1",
                                                                 cwd=str(outside)), memory)
        assert code == 0 and SENTINEL not in out
        code, out, err = hook("user-prompt-submit", prompt_input(
            "猫", session="../../outside/notes/evil"), memory)
        assert code == 0
    assert violations(paths, layout) == []
    assert tree(outside) == outside_before
    check_private(layout["state"], set())


def test_an_archive_folder_that_leads_outside_is_refused(layout: dict[str, Path]) -> None:
    memory, outside = layout["memory"], layout["outside"]
    (outside / "elsewhere").mkdir()
    (memory / "archive").symlink_to(outside / "elsewhere", target_is_directory=True)
    outside_before = tree(outside)
    store = MemoryStore(memory)
    with recording() as paths:
        # The link named is the folder, not the memory (which is no link).
        with pytest.raises(InvalidId, match=r"^archive: a symlink that leads outside .*"
                                            r"on the way to archive/user_cat_zh\.md"):
            store.archive("user_cat_zh", reason="to the outside")
    assert violations(paths, layout) == []
    assert tree(outside) == outside_before
    assert (memory / "user_cat_zh.md").is_file()


def test_a_nested_folder_symlinked_outside_is_never_written_through(
    layout: dict[str, Path],
) -> None:
    memory, outside = layout["memory"], layout["outside"]
    (memory / "project").mkdir()
    (memory / "project" / "api").symlink_to(outside / "notes", target_is_directory=True)
    outside_before = tree(outside)
    with recording() as paths:
        for argv in (["add", "project/api/deeper/x", "--description", "x"],
                     ["show", "project/api/secret_note"]):
            code, out, err = cli("--dir", str(memory), *argv)
            assert code == 1 and "project/api: a symlink that leads outside" in err
    assert violations(paths, layout) == []
    assert tree(outside) == outside_before


def test_the_state_folder_and_what_it_holds_are_private(memory_dir: Path, tmp_path: Path) -> None:
    with umask(0o022):
        store = MemoryStore(memory_dir)
        store.write("user_new", description="a new memory", category="user")
        store.feedback("user_new", helpful=True)
        hook("user-prompt-submit", prompt_input("new memory"), memory_dir)
    state = tmp_path / ".memory.sage-mem"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    check_private(state, set())
    assert stat.S_IMODE((memory_dir / "user_new.md").stat().st_mode) == 0o600
    assert stat.S_IMODE((memory_dir / "MEMORY.md").stat().st_mode) == 0o600
