"""Git is how memory travels: init --git, no churn in the folder, MEMORY.md repaired by `index`.

`sage-mem sync` and its merges are tests/test_sync*.py.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from sync_support import use_private_git

from sage_mem import MemoryStore
from sage_mem.cli import main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git config of the test's own: the user's is never read or written."""
    use_private_git(tmp_path, monkeypatch)


def cli(*argv: str) -> int:
    return main(list(argv), out=io.StringIO(), err=io.StringIO())


def git(folder: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com", *argv],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(folder).parts
    }


def test_init_git_makes_a_repository_with_lf_attributes_and_commits_it(tmp_path: Path) -> None:
    assert cli("init", "--git") == 0
    folder = tmp_path / "memory"
    assert (folder / ".git").is_dir()
    assert "eol=lf" in (folder / ".gitattributes").read_text(encoding="utf-8")
    assert git(folder, "status", "--porcelain") == ""
    assert git(folder, "ls-files").split() == [".gitattributes", ".gitignore", "MEMORY.md"]


def test_init_git_commits_even_when_git_has_no_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{role}_NAME")
        monkeypatch.delenv(f"GIT_{role}_EMAIL")
    monkeypatch.setenv("EMAIL", "")
    assert cli("init", "--git") == 0
    folder = tmp_path / "memory"
    author = subprocess.run(["git", "-C", str(folder), "log", "--format=%an <%ae>"],
                            check=True, capture_output=True, text=True).stdout
    assert author.startswith("sage-mem <sage-mem@")


def test_init_git_leaves_an_existing_repository_s_history_alone(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(folder)], check=True)
    assert cli("init", "--git") == 0
    assert git(folder, "symbolic-ref", "--short", "HEAD").strip() == "trunk"
    assert subprocess.run(["git", "-C", str(folder), "rev-parse", "-q", "--verify", "HEAD"],
                          capture_output=True).returncode != 0
    assert "merge=sage-mem" in (folder / ".gitattributes").read_text(encoding="utf-8")


def test_reading_never_changes_the_folder(tmp_path: Path) -> None:
    cli("init", "--git", "--examples")
    folder = tmp_path / "memory"
    assert git(folder, "status", "--porcelain") == ""
    before = snapshot(folder)
    for argv in (
        ["search", "tests"],
        ["search", "猫"],
        ["list"],
        ["show", "user_cat_zh"],
        ["index"],
    ):
        assert cli(*argv) == 0, argv
    with MemoryStore(folder) as store:
        store.search("run the tests")
        store.note_used(["user_cat_zh"])
    assert snapshot(folder) == before
    assert git(folder, "status", "--porcelain") == ""
    assert (tmp_path / ".memory.sage-mem" / "stats.json").is_file()


def test_a_write_changes_only_that_memory_and_memory_md(tmp_path: Path) -> None:
    cli("init", "--git", "--examples")
    folder = tmp_path / "memory"
    assert git(folder, "status", "--porcelain") == ""
    assert cli("feedback", "user_cat_zh", "helpful") == 0
    changed = {line[3:] for line in git(folder, "status", "--porcelain").splitlines()}
    assert changed == {"user_cat_zh.md"}
    diff = git(folder, "diff", "--", "user_cat_zh.md")
    removed = [
        line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    assert all(line.startswith(("-trust", "-updated")) for line in removed)


def test_index_repairs_memory_md_left_with_conflict_markers(tmp_path: Path) -> None:
    cli("init", "--git", "--examples")
    folder = tmp_path / "memory"
    clean = (folder / "MEMORY.md").read_bytes()
    # As git leaves a merge of two versions of sage-mem's own file: a hunk among its lines.
    hunk = "<<<<<<< HEAD\n- [a](a.md) — mine\n=======\n- [b](b.md) — theirs\n>>>>>>> origin/main\n"
    text = clean.decode("utf-8")
    assert "\n## user\n" in text
    (folder / "MEMORY.md").write_text(text.replace("\n## user\n", "\n## user\n" + hunk, 1),
                                      encoding="utf-8")
    assert cli("index") == 0
    assert (folder / "MEMORY.md").read_bytes() == clean


def test_memory_md_is_deterministic(tmp_path: Path) -> None:
    cli("init", str(tmp_path / "a"))
    cli("init", str(tmp_path / "b"))
    assert (tmp_path / "a" / "MEMORY.md").read_bytes() == (
        tmp_path / "b" / "MEMORY.md"
    ).read_bytes()
    text = (tmp_path / "a" / "MEMORY.md").read_bytes()
    assert b"\r\n" not in text


def test_files_written_by_the_tool_use_lf(tmp_path: Path) -> None:
    cli("init")
    assert (
        cli("add", "project/notes", "--description", "两行", "--body", "line one\r\nline two\r\n")
        == 0
    )
    assert b"\r" not in (tmp_path / "memory" / "project" / "notes.md").read_bytes()
