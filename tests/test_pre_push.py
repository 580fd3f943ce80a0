"""The pre-push hook: a plain `git push` of a memory folder is held to sync's secret scan.

`init --git` and `sync` install `.git/hooks/pre-push`; a hook the person had is
kept (`pre-push.before-sage-mem`) and still runs. The override is the CLI's:
`SAGE_MEM_ALLOW_SECRET=1 git push`, and `sync --allow-secret`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import write_memory
from sync_support import bare_remote, git, machine, memory, sm, sync, use_private_git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

TOKEN = "ghp_" + "k3Jd9QmZx7Lw2Vb8Nc4Rt6Yh1Pf5Gs0Ua2Ei"


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def push(folder: Path, *argv: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(folder), "push", *argv], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})


def commit_by_hand(folder: Path, memory_id: str, body: str) -> None:
    write_memory(folder, memory_id, memory("CI notes", body))
    git(folder, "add", f"{memory_id}.md")
    git(folder, "commit", "--quiet", "-m", "by hand")


def remote_has(remote: Path, text: str) -> bool:
    objects = subprocess.run(
        ["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True).stdout.decode("utf-8", "replace")
    return text in objects


@pytest.fixture
def laptop(tmp_path: Path) -> tuple[Path, Path]:
    remote = bare_remote(tmp_path)
    return machine(tmp_path / "laptop", remote, "laptop", first=True), remote


def test_init_git_installs_the_hook_and_a_plain_push_of_a_secret_is_refused(
    laptop: tuple[Path, Path]
) -> None:
    folder, remote = laptop
    hook = folder / ".git" / "hooks" / "pre-push"
    assert os.access(hook, os.X_OK)
    before = git(remote, "rev-parse", "main")
    commit_by_hand(folder, "reference_ci", f"The CI token is {TOKEN}")
    done = push(folder, "origin", "main")
    assert done.returncode != 0
    assert "reference_ci.md" in done.stderr and "GitHub token" in done.stderr
    assert "SAGE_MEM_ALLOW_SECRET=1 git push" in done.stderr
    assert TOKEN not in done.stderr and TOKEN[4:] not in done.stderr
    assert git(remote, "rev-parse", "main") == before
    assert not remote_has(remote, TOKEN)


def test_the_override_lets_the_push_through(laptop: tuple[Path, Path]) -> None:
    folder, remote = laptop
    commit_by_hand(folder, "reference_ci", f"The CI token is {TOKEN}")
    done = push(folder, "origin", "main", env={"SAGE_MEM_ALLOW_SECRET": "1"})
    assert done.returncode == 0, done.stderr
    assert remote_has(remote, TOKEN)


def test_a_clean_plain_push_goes_through(laptop: tuple[Path, Path]) -> None:
    folder, remote = laptop
    commit_by_hand(folder, "user_cat", "The cat is Sesame.")
    done = push(folder, "origin", "main")
    assert done.returncode == 0, done.stderr
    assert git(remote, "rev-parse", "main") == git(folder, "rev-parse", "HEAD")


def test_a_secret_in_an_earlier_unpushed_commit_is_refused_though_later_removed(
    laptop: tuple[Path, Path]
) -> None:
    folder, remote = laptop
    commit_by_hand(folder, "reference_ci", f"The CI token is {TOKEN}")
    commit_by_hand(folder, "reference_ci", "The CI token is in the vault.")
    done = push(folder, "origin", "main")
    assert done.returncode != 0 and "reference_ci.md" in done.stderr
    assert not remote_has(remote, TOKEN)


def test_a_person_s_own_pre_push_hook_is_kept_and_still_runs(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    folder = tmp_path / "laptop"
    folder.mkdir()
    git(folder, "init", "--quiet", "--initial-branch=main")
    ran = tmp_path / "theirs-ran"
    theirs = folder / ".git" / "hooks" / "pre-push"
    theirs.parent.mkdir(parents=True, exist_ok=True)
    theirs.write_text(f"#!/bin/sh\ncat > {ran}\nexit \"${{THEIRS_EXIT:-0}}\"\n")
    theirs.chmod(0o755)
    own = theirs.read_bytes()
    status, _, err = sm(folder, "init", "--git", "--remote", str(remote))
    assert status == 0, err
    kept = folder / ".git" / "hooks" / "pre-push.before-sage-mem"
    assert kept.read_bytes() == own and os.access(kept, os.X_OK)
    assert b"sage-mem pre-push hook" in theirs.read_bytes()
    sync(folder)  # sync's own push runs the person's hook too, with the refs on stdin
    assert "refs/heads/main" in ran.read_text()
    ran.unlink()
    sync(folder)  # a second install changes nothing: theirs is not wrapped twice
    assert kept.read_bytes() == own
    commit_by_hand(folder, "user_cat", "The cat is Sesame.")
    done = push(folder, "origin", "main", env={"THEIRS_EXIT": "7"})
    assert done.returncode != 0 and "refs/heads/main" in ran.read_text()
    commit_by_hand(folder, "reference_ci", f"The CI token is {TOKEN}")
    ran.unlink()
    done = push(folder, "origin", "main")
    assert done.returncode != 0 and "GitHub token" in done.stderr
    assert not ran.exists()  # the check refused first
    assert not remote_has(remote, TOKEN)


def test_sync_installs_the_hook_in_a_plain_clone(laptop: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    _, remote = laptop
    teammate = tmp_path / "teammate"
    subprocess.run(["git", "clone", "--quiet", "--branch", "main", str(remote), str(teammate)],
                   check=True)
    assert not (teammate / ".git" / "hooks" / "pre-push").exists()
    sync(teammate)
    commit_by_hand(teammate, "reference_ci", f"The CI token is {TOKEN}")
    assert push(teammate, "origin", "main").returncode != 0
    assert not remote_has(remote, TOKEN)


def test_hooks_kept_outside_the_repository_are_not_touched_and_the_summary_says_so(
    laptop: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, _ = laptop
    shared_hooks = tmp_path / "shared-hooks"
    shared_hooks.mkdir()
    git(folder, "config", "core.hooksPath", str(shared_hooks))
    result = sync(folder)
    assert list(shared_hooks.iterdir()) == []
    assert any("no pre-push check installed" in note for note in result["notes"])


def test_sync_allow_secret_pushes_what_it_would_hold_back(laptop: tuple[Path, Path]) -> None:
    folder, remote = laptop
    write_memory(folder, "reference_ci", memory("CI notes", f"The CI token is {TOKEN}"))
    held = sync(folder)
    assert [h["path"] for h in held["heldBack"]] == ["reference_ci.md"]
    assert not remote_has(remote, TOKEN)
    allowed = sync(folder, "--allow-secret")
    assert allowed["heldBack"] == [] and allowed["pushed"] == ["reference_ci"]
    assert remote_has(remote, TOKEN)
