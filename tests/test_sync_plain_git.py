"""sage-mem beside plain git: a teammate who only clones and pulls never gets less.

A bare remote made with git's defaults (`git init --bare`: HEAD names
`master`) that sync pushes `main` to still gives a plain `git clone` the
memories; a merge plain git left half done (no driver configured in a fresh
clone, or a driver whose Python moved) is finished by the next sync, by the
merge driver's rules, never with conflict markers in a memory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import write_memory
from sync_support import (
    bare_remote,
    git,
    machine,
    memory,
    no_markers,
    sm,
    sm_process,
    sync,
    use_private_git,
)

from sage_mem.memory.file_format import parse_bytes
from sage_mem.sync.git import PRE_PUSH_MARK

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def test_a_plain_clone_of_a_remote_made_on_master_checks_out_the_memories(
    tmp_path: Path
) -> None:
    remote = bare_remote(tmp_path)  # HEAD -> master, as `git init --bare` makes it
    assert git(remote, "symbolic-ref", "HEAD").strip() == "refs/heads/master"
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "user_cat", memory("The cat is Sesame", "Sesame is orange."))
    sync(laptop)
    teammate = tmp_path / "teammate"
    done = subprocess.run(["git", "clone", "--quiet", str(remote), str(teammate)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (teammate / "user_cat.md").read_bytes() == (laptop / "user_cat.md").read_bytes()
    assert git(teammate, "symbolic-ref", "--short", "HEAD").strip() == "main"
    write_memory(teammate, "user_dog", memory("The dog is Rex", "Rex barks."))
    assert sync(teammate)["pushed"] == ["user_dog"]
    assert sync(laptop)["pulled"] == ["user_dog"]


def test_the_docs_team_recipe_works_for_a_teammate_who_clones_with_plain_git(
    tmp_path: Path
) -> None:
    """docs/git.md's "A team folder", command for command: the shared bare remote, the
    first person's `sync --remote`, `add` and `sync`; then a teammate's plain `git clone`,
    their one `sage-mem sync` (driver and pre-push hook registered), an edit each way."""
    remote = tmp_path / "team-memory.git"
    git(tmp_path, "init", "--quiet", "--bare", "--shared=group", "--initial-branch=main",
        str(remote))
    mine = tmp_path / "me" / "team-memory"
    mine.parent.mkdir()
    for argv in (["sync", "--remote", str(remote)],
                 ["add", "project_deploy", "--category", "project",
                  "--description", "Deploys go out on Tuesdays", "--body", "…"],
                 ["sync"]):
        status, out, err = sm(mine, *argv)
        assert status == 0, (argv, out, err)
    teammate = tmp_path / "teammate" / "team-memory"
    done = subprocess.run(["git", "clone", "--quiet", str(remote), str(teammate)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (teammate / "project_deploy.md").read_bytes() == (
        mine / "project_deploy.md").read_bytes()
    assert sync(teammate)["pulled"] == []
    assert "merge-driver" in git(teammate, "config", "merge.sage-mem.driver")
    assert PRE_PUSH_MARK in (teammate / ".git" / "hooks" / "pre-push").read_text(
        encoding="utf-8")
    write_memory(teammate, "project_release", memory("Releases on Fridays", "Fridays."))
    assert sync(teammate)["pushed"] == ["project_release"]
    assert sync(mine)["pulled"] == ["project_release"]
    assert "project_release.md" in (mine / "MEMORY.md").read_text(encoding="utf-8")


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "user_cat", memory("The cat is Sesame", "Sesame is orange.",
                                            tags=["pet"]))
    sync(laptop)
    teammate = tmp_path / "teammate"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(teammate)], check=True)
    return laptop, teammate


def both_edit(laptop: Path, teammate: Path) -> None:
    """The same field changed on both sides (a conflict), and different fields too."""
    write_memory(laptop, "user_cat", memory("The cat is Sesame, a tabby", "Sesame is orange.",
                                            tags=["pet", "tabby"]))
    sync(laptop)
    write_memory(teammate, "user_cat", memory("The cat is Sesame, a calico", "Sesame is orange.",
                                              tags=["pet", "calico"]))
    git(teammate, "commit", "--quiet", "-am", "calico")


@pytest.mark.parametrize("driver", [
    pytest.param(None, id="fresh-clone-no-driver"),
    pytest.param("/gone/python3 -m sage_mem merge-driver %O %A %B %P", id="driver-moved"),
])
def test_sync_finishes_the_merge_a_plain_git_pull_left(
    pair: tuple[Path, Path], driver: str | None
) -> None:
    laptop, teammate = pair
    if driver is not None:
        git(teammate, "config", "merge.sage-mem.driver", driver)
    both_edit(laptop, teammate)
    pulled = subprocess.run(["git", "-C", str(teammate), "pull", "--no-rebase", "--quiet"],
                            capture_output=True, text=True)
    assert pulled.returncode != 0  # plain git left it half done
    status, out, err = sm(teammate, "sync")
    assert status == 0, err
    assert not os.path.exists(teammate / ".git" / "MERGE_HEAD")
    no_markers(teammate)
    mine = parse_bytes((teammate / "user_cat.md").read_bytes()).meta
    assert mine["description"] == "The cat is Sesame, a calico"
    assert set(mine["tags"]) == {"pet", "tabby", "calico"}
    siblings = list(teammate.glob("user_cat.conflict-*.md"))
    assert len(siblings) == 1 and "tabby" in siblings[0].read_text(encoding="utf-8")
    assert "laptop" in siblings[0].name
    assert siblings[0].name in git(teammate, "ls-files")
    assert git(teammate, "status", "--porcelain").strip() == ""
    sync(laptop)
    no_markers(laptop)


def _merge_head_cut_short(laptop: Path, teammate: Path) -> None:
    """A merge left as git leaves one killed while writing MERGE_HEAD: the index and the
    files merged, MERGE_HEAD empty (the kill tier met it: `test_sync_crash`)."""
    both_edit(laptop, teammate)
    subprocess.run(["git", "-C", str(teammate), "-c", "merge.sage-mem.driver=false", "pull",
                    "--no-rebase", "--quiet"], capture_output=True)
    merge_head = teammate / ".git" / "MERGE_HEAD"
    assert merge_head.exists() and "UU" in git(teammate, "status", "--porcelain")
    merge_head.write_bytes(b"")


def test_a_merge_whose_merge_head_was_cut_short_is_undone_and_merged_again(
    pair: tuple[Path, Path]
) -> None:
    laptop, teammate = pair
    _merge_head_cut_short(laptop, teammate)
    status, out, err = sm(teammate, "sync", "--json")
    assert status == 0, err
    assert "undid a merge" in " ".join(json.loads(out)["notes"])
    assert not os.path.exists(teammate / ".git" / "MERGE_HEAD")
    no_markers(teammate)
    mine = parse_bytes((teammate / "user_cat.md").read_bytes()).meta
    assert mine["description"] == "The cat is Sesame, a calico"
    assert set(mine["tags"]) == {"pet", "tabby", "calico"}
    assert git(teammate, "status", "--porcelain").strip() == ""
    sync(laptop)
    assert parse_bytes((laptop / "user_cat.md").read_bytes()).meta["description"] == (
        "The cat is Sesame, a calico")


def test_a_cut_short_merge_a_person_typed_into_is_left_for_them(
    pair: tuple[Path, Path]
) -> None:
    laptop, teammate = pair
    _merge_head_cut_short(laptop, teammate)
    resolved = memory("The cat is Sesame, a tabby calico", "Sesame is orange.", tags=["pet"])
    write_memory(teammate, "user_cat", resolved)  # typed into the merge's file
    status, out, err = sm(teammate, "sync")
    assert status == 1 and "MERGE_HEAD names no commit" in err and err.count("\n") == 1
    assert (teammate / "user_cat.md").read_text(encoding="utf-8") == resolved


def test_a_merge_whose_conflict_a_person_resolved_by_hand_is_still_theirs(
    pair: tuple[Path, Path]
) -> None:
    laptop, teammate = pair
    both_edit(laptop, teammate)
    subprocess.run(["git", "-C", str(teammate), "pull", "--no-rebase", "--quiet"],
                   capture_output=True)
    resolved = memory("The cat is Sesame, a tabby calico", "Sesame is orange.", tags=["pet"])
    write_memory(teammate, "user_cat", resolved)  # typed, not yet added
    status, out, err = sm(teammate, "sync")
    assert status == 1 and "merge is in progress" in err
    assert (teammate / "user_cat.md").read_text(encoding="utf-8") == resolved


def test_a_plain_git_pull_with_the_driver_names_the_sibling_for_the_other_machine(
    pair: tuple[Path, Path]
) -> None:
    """A clone sync has run in has the driver: a plain `git pull` merges by its rules, and
    the sibling it keeps is named for the machine whose version it is, not `other`; the
    next sync commits it."""
    laptop, teammate = pair
    sync(teammate)  # the driver is configured in this clone now
    both_edit(laptop, teammate)
    pulled = subprocess.run(["git", "-C", str(teammate), "pull", "--no-rebase", "--quiet"],
                            capture_output=True, text=True)
    assert pulled.returncode == 0, pulled.stderr
    no_markers(teammate)
    siblings = [p.name for p in teammate.glob("user_cat.conflict-*.md")]
    assert siblings == ["user_cat.conflict-laptop.md"]
    sync(teammate)
    assert "user_cat.conflict-laptop.md" in git(teammate, "ls-files")


def test_a_plain_git_pull_after_a_restore_emptied_archive_keeps_an_archived_edit(
    pair: tuple[Path, Path]
) -> None:
    """The teammate restores the one archived memory (its `archive/` empty after) and edits
    `user_cat`; the laptop archives `user_cat`. With git's own settings a plain `git pull`
    took `archive/` for a folder renamed to the top, ended with `Merge made` and exit 0, and
    `user_cat` was under no name, its edit in no file (git 2.39). A clone sync has run in
    follows no folder renames (`merge.directoryRenames=false`, as sync's own merges)."""
    laptop, teammate = pair
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    assert sm(laptop, "archive", "user_dog", "--reason", "old")[0] == 0
    sync(laptop)
    sync(teammate)  # the driver and the settings are configured in this clone now
    assert sm(teammate, "restore", "archive/user_dog")[0] == 0
    text = (teammate / "user_cat.md").read_text(encoding="utf-8")
    (teammate / "user_cat.md").write_text(text + "\nThe teammate's line.\n", encoding="utf-8")
    git(teammate, "add", "-A")
    git(teammate, "commit", "--quiet", "-m", "restored the dog, a line on the cat")
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    sync(laptop)
    pulled = subprocess.run(["git", "-C", str(teammate), "pull", "--no-rebase", "--no-edit",
                             "--quiet"], capture_output=True, text=True)
    assert pulled.returncode == 0, pulled.stderr
    kept = "\n".join(p.read_text(encoding="utf-8") for p in teammate.rglob("user_cat*.md"))
    assert "The teammate's line." in kept
    sync(teammate)
    kept = "\n".join(p.read_text(encoding="utf-8") for p in teammate.rglob("user_cat*.md"))
    assert "The teammate's line." in kept


def test_a_worktree_on_a_new_branch_is_told_in_one_line_what_to_do(tmp_path: Path) -> None:
    """A teammate's `git worktree add ../wt -b mine` of the folder (its `.git` a file) on a
    branch the remote lacks: sync went to take the remote's `main` by renaming the branch,
    which `main` beside it forbids, and ended in git's own words ("git branch failed:
    fatal: a branch named 'main' already exists"). One line says what to do; the memory
    written there stays, committed on that branch."""
    remote = bare_remote(tmp_path)
    first = machine(tmp_path / "first", remote, "first", first=True)
    write_memory(first, "user_cat", memory("The cat is Sesame", "Sesame is orange."))
    sync(first)
    tree = tmp_path / "wt"
    git(first, "worktree", "add", "--quiet", str(tree), "-b", "mine")
    assert (tree / ".git").is_file()
    write_memory(tree, "user_dog", memory("The dog is Rex", "Rex barks."))
    status, out, err = sm(tree, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1, (out, err)
    assert "'mine'" in errors[0] and "git switch main" in errors[0], errors[0]
    assert "fatal" not in err and "Traceback" not in err, err
    assert git(tree, "branch", "--show-current").strip() == "mine"
    assert "user_dog.md" in git(tree, "ls-files")


def test_a_memory_a_teammate_made_executable_keeps_its_mode_and_is_not_pushed_back(
    pair: tuple[Path, Path], tmp_path: Path,
) -> None:
    """A teammate's plain git made a memory executable (`chmod +x`, or a checkout from a
    file system without modes) and added another so: sync wrote both itself, without the
    mode, staged that, and its next commit set them back to 100644 and pushed them as this
    machine's changes (`pushed 2`, the teammate's change undone). Git writes a change of
    mode; sync pushes nothing it did not change."""
    laptop, teammate = pair
    (teammate / "user_cat.md").chmod(0o755)
    write_memory(teammate, "user_dog", memory("The dog is Rex", "Rex barks."))
    (teammate / "user_dog.md").chmod(0o755)
    git(teammate, "add", "-A")
    git(teammate, "commit", "--quiet", "-m", "modes")
    git(teammate, "push", "--quiet", "origin", "HEAD")
    for _ in range(2):
        status, out, err = sm_process(laptop, "sync", "--json")
        assert status == 0, err
        assert json.loads(out)["pushed"] == [], out
    assert git(laptop, "status", "--porcelain") == ""
    modes = {line.split()[3]: line.split()[0]
             for line in git(tmp_path / "remote.git", "ls-tree", "main").splitlines()}
    assert modes["user_cat.md"] == modes["user_dog.md"] == "100755", modes
    git(teammate, "pull", "--quiet", "--no-rebase", "origin", "main")
    (teammate / "user_cat.md").chmod(0o644)  # and back
    git(teammate, "commit", "--quiet", "-am", "a plain file again")
    git(teammate, "push", "--quiet", "origin", "HEAD")
    status, out, err = sm_process(laptop, "sync", "--json")
    assert status == 0 and json.loads(out)["pushed"] == [], (out, err)
    assert git(tmp_path / "remote.git", "ls-tree", "main", "user_cat.md").startswith("100644")
    assert git(laptop, "status", "--porcelain") == ""
