"""A file sync holds back (a secret, or a false alarm) never blocks the rest of the folder.

MEMORY.md is made from the memories: a line of it that reads as a secret holds
back that memory alone, and the index is committed without it. A held-back
memory that another machine edits is merged around: everything else is pulled
and pushed, the held-back one keeps the local edit with the other machine's
merged in, still uncommitted, and is named in the result.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import write_memory
from sync_support import bare_remote, git, machine, memory, no_markers, sm, sync, use_private_git

from sage_mem.memory.file_format import parse_bytes

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

TOKEN = "ghp_" + "k3Jd9QmZx7Lw2Vb8Nc4Rt6Yh1Pf5Gs0Ua2Ei"


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def remote_text(remote: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True).stdout.decode("utf-8", "replace")


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "user_cat", memory("The cat is Sesame", "Sesame is orange."))
    write_memory(laptop, "project_deploy", memory("Deploys go out on Tuesdays", "Tuesdays."))
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    return laptop, desktop, remote


def test_a_title_ending_in_a_password_word_before_its_link_blocks_nothing(
    tmp_path: Path
) -> None:
    """`- [数据库密码](reference_db-2.md)`: the link's target is no password."""
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "reference_db-2", memory("在 1Password 的运维库里", "找运维要。",
                                                  name="数据库密码"))
    first = sync(laptop)
    assert first["heldBack"] == [] and first["pushed"] == ["reference_db-2"]
    assert "reference_db-2.md" in git(remote, "show", "main:MEMORY.md")
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    write_memory(desktop, "user_cat", memory("The cat is Sesame", "Sesame is orange."))
    sync(desktop)
    for folder in (laptop, desktop, laptop):
        assert sync(folder)["heldBack"] == []
    assert (laptop / "user_cat.md").exists()


def test_a_memory_whose_index_line_alone_is_flagged_is_held_back_alone(
    pair: tuple[Path, Path, Path]
) -> None:
    """A description folded over two lines reads as `the password is …` once MEMORY.md
    joins it on one line: that memory is held back, not the whole index."""
    laptop, desktop, remote = pair
    write_memory(laptop, "reference_wifi", "---\ndescription: >-\n  the wifi password\n"
                 "  is Xk9#mP2qLw7\ncategory: reference\n---\n\nAsk at the desk.\n")
    write_memory(laptop, "user_dog", memory("The dog is Rex", "Rex barks."))
    result = sync(laptop)
    assert [h["path"] for h in result["heldBack"]] == ["reference_wifi.md"]
    assert "MEMORY.md" in result["heldBack"][0]["reason"]
    assert result["pushed"] == ["user_dog"]
    index = git(remote, "show", "main:MEMORY.md")
    assert "user_dog.md" in index and "reference_wifi" not in index
    assert "Xk9#mP2qLw7" not in remote_text(remote)
    assert sync(desktop)["pulled"] == ["user_dog"]


def test_a_held_back_memory_edited_on_another_machine_stalls_nothing(
    pair: tuple[Path, Path, Path]
) -> None:
    laptop, desktop, remote = pair
    write_memory(desktop, "user_cat", memory("The cat is Sesame, a tabby", "Sesame is orange."))
    write_memory(desktop, "project_deploy", memory("Deploys go out on Wednesdays", "Wed."))
    sync(desktop)
    write_memory(laptop, "user_cat", memory("The cat is Sesame", f"Sesame is orange.\n\n"
                                            f"The vet portal token is {TOKEN}"))
    write_memory(laptop, "user_dog", memory("The dog is Rex", "Rex barks."))
    result = sync(laptop)
    assert [h["path"] for h in result["heldBack"]] == ["user_cat.md"]
    assert result["pulled"] == ["project_deploy", "user_cat"]
    assert result["pushed"] == ["user_dog"]
    assert any("user_cat.md: changed on origin too" in note for note in result["notes"])
    mine = parse_bytes((laptop / "user_cat.md").read_bytes())
    assert mine.meta["description"] == "The cat is Sesame, a tabby"  # theirs, merged in
    assert TOKEN in mine.body  # mine, kept, still uncommitted
    assert "Wednesdays" in (laptop / "project_deploy.md").read_text(encoding="utf-8")
    assert not list(laptop.glob("*.conflict-held*"))
    assert TOKEN not in remote_text(remote)
    no_markers(laptop)
    assert sync(laptop)["heldBack"][0]["path"] == "user_cat.md"  # and again: no stall
    # Once the secret is out, the memory goes with both machines' edits.
    write_memory(laptop, "user_cat", memory("The cat is Sesame, a tabby",
                                            "Sesame is orange.\n\nThe vet portal is in 1Password."))
    assert sync(laptop)["pushed"] == ["user_cat"]
    sync(desktop)
    assert "1Password" in (desktop / "user_cat.md").read_text(encoding="utf-8")


def test_a_held_back_new_file_the_other_machine_also_made_stalls_nothing(
    pair: tuple[Path, Path, Path]
) -> None:
    laptop, desktop, remote = pair
    write_memory(desktop, "reference_api", memory("The API lives at api.example.com", "v2."))
    sync(desktop)
    write_memory(laptop, "reference_api", memory("The API", f"token {TOKEN}"))
    result = sync(laptop)
    assert [h["path"] for h in result["heldBack"]] == ["reference_api.md"]
    assert "reference_api" in result["pulled"]
    assert TOKEN in (laptop / "reference_api.md").read_text(encoding="utf-8")
    theirs = [p for p in laptop.glob("reference_api*.md")
              if "api.example.com" in p.read_text(encoding="utf-8")]
    assert theirs or "api.example.com" in git(laptop, "show", "HEAD:reference_api.md")
    assert TOKEN not in remote_text(remote)
    status, _, err = sm(laptop, "sync")
    assert status == 0, err


def test_a_secret_typed_into_a_file_the_merge_took_from_the_remote_is_held_back(
    pair: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files a merge brought in unchanged are not scanned again (the remote has their
    bytes); which those are is asked of the index (`git diff-index --cached MERGE_HEAD`),
    and a file whose work tree differs from the index is scanned whatever the index holds:
    a secret saved into one while the merge ran (here: while MEMORY.md is made) stays
    home."""
    from sage_mem.sync import steps

    laptop, desktop, remote = pair
    sync(desktop)
    write_memory(laptop, "project_deploy", memory("Deploys go out on Wednesdays", "Weds."))
    write_memory(laptop, "user_dog", memory("The dog is Rex", "Rex barks."))
    sync(laptop)
    write_memory(desktop, "user_cat", memory("The cat is Sesame, from the desktop", "Orange."))
    regenerate = steps._Sync.regenerate_index

    def typed_meanwhile(self: steps._Sync, *args: object, **kwargs: object) -> None:
        if (self.git.git_dir / "MERGE_HEAD").exists():  # the merge's (not the local commit's)
            path = desktop / "project_deploy.md"
            path.write_text(path.read_text(encoding="utf-8") + f"\ntoken {TOKEN}\n",
                            encoding="utf-8")
        regenerate(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(steps._Sync, "regenerate_index", typed_meanwhile)
    result = sync(desktop)
    assert [h["path"] for h in result["heldBack"]] == ["project_deploy.md"]
    assert TOKEN not in remote_text(remote)
    assert TOKEN in (desktop / "project_deploy.md").read_text(encoding="utf-8")
    assert "user_dog" in result["pulled"] and "user_cat" in result["pushed"]


def test_a_memory_too_big_to_read_that_the_other_machine_edited_stalls_nothing(
    pair: tuple[Path, Path, Path]
) -> None:
    """A memory grown past the size sync reads (a paste, a log), edited on the other
    machine too: sync stopped whole (`over 8192 KB; not read`, exit 1), nothing pulled
    or pushed. It is moved aside, never read; the rest syncs; it stays, uncommitted."""
    laptop, desktop, remote = pair
    write_memory(desktop, "user_cat", memory("The cat is Sesame, a tabby", "Sesame is orange."))
    sync(desktop)
    huge = memory("The cat is Sesame", "Sesame is orange.\n\n" + "purr " * 1_900_000)
    write_memory(laptop, "user_cat", huge)
    write_memory(laptop, "user_dog", memory("The dog is Rex", "Rex barks."))
    status, out, err = sm(laptop, "sync")
    assert status == 0, (out, err)
    assert "user_dog.md" in git(remote, "ls-tree", "--name-only", "main")
    kept = laptop / "user_cat.conflict-held.md"
    assert kept.read_text(encoding="utf-8") == huge
    assert "tabby" in (laptop / "user_cat.md").read_text(encoding="utf-8")
    assert "user_cat.conflict-held.md" in out + err
    assert "purr" not in git(remote, "log", "-p", "--all")
    status, out, err = sm(laptop, "sync")  # and again: held back, no stall
    assert status == 0 and kept.exists(), (out, err)
