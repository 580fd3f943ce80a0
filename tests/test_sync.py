"""`sage-mem sync` with real git: clones of a bare remote on local disk, every conflict shape."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from support import write_memory
from sync_support import (
    bare_remote,
    files,
    git,
    index_is_current,
    machine,
    memory,
    no_markers,
    sm,
    sm_process,
    sync,
    use_private_git,
)

from sage_mem.memory.file_format import parse_bytes

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two machines sharing a remote, both holding `user_cat` (committed and pushed)."""
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    write_memory(laptop, "user_cat", memory(
        "The cat is Sesame", "Sesame is orange.\n\nShe is three.",
        tags=["pet"], trust="0.5", updated="2026-01-01T00:00:00Z",
    ))
    sync(laptop)
    desktop = machine(tmp_path / "desktop", remote, "desktop")
    assert (desktop / "user_cat.md").read_bytes() == (laptop / "user_cat.md").read_bytes()
    return laptop, desktop


def meta(folder: Path, memory_id: str) -> dict[str, object]:
    return parse_bytes((folder / f"{memory_id}.md").read_bytes()).meta


def body(folder: Path, memory_id: str) -> str:
    return parse_bytes((folder / f"{memory_id}.md").read_bytes()).body.strip()


def edit(folder: Path, memory_id: str, old: str, new: str) -> None:
    path = folder / f"{memory_id}.md"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def converged(*folders: Path) -> None:
    """Both machines end with the same files, no markers, a current MEMORY.md."""
    for folder in folders:
        no_markers(folder)
        index_is_current(folder)
        assert git(folder, "status", "--porcelain") == ""
    first = files(folders[0])
    for folder in folders[1:]:
        assert files(folder) == first


# init --git


def test_init_git_makes_a_first_commit_on_main_whatever_the_default_branch(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    assert sm(folder, "init", "--git")[0] == 0
    assert git(folder, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(folder, "log", "--format=%s").strip() == "sage-mem: a new memory folder"
    assert git(folder, "status", "--porcelain") == ""
    assert "merge=sage-mem" in (folder / ".gitattributes").read_text(encoding="utf-8")
    assert "merge-driver" in git(folder, "config", "--local", "merge.sage-mem.driver")
    # The README's instructions, as written.
    remote = bare_remote(tmp_path)
    git(folder, "remote", "add", "origin", str(remote))
    git(folder, "push", "-u", "origin", "main")
    assert git(remote, "log", "--format=%s", "main").strip() == "sage-mem: a new memory folder"


def test_init_remote_sets_origin_and_a_second_machine_joins_with_sync(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    laptop = tmp_path / "laptop"
    status, out, _ = sm(laptop, "init", "--examples", "--remote", str(remote))
    assert status == 0 and "sync" in out
    assert git(laptop, "remote", "get-url", "origin").strip() == str(remote)
    first = sync(laptop)
    assert len(first["pushed"]) == 8 and first["summary"].startswith("pulled 0, pushed 8")
    desktop = tmp_path / "desktop"  # does not exist yet
    joined = sync(desktop, "--remote", str(remote))
    assert len(joined["pulled"]) == 8
    sync(laptop)
    converged(laptop, desktop)


# both ways, by sage-mem and by hand


def test_a_machine_joining_takes_the_remotes_branch_whatever_its_name(tmp_path: Path) -> None:
    """The first machine's folder was made in a repository of its own on `master` (sage-mem
    leaves a repository's branch alone); a second machine joining with `sync --remote` works
    on that branch, not on a `main` of its own that nobody else would ever merge."""
    remote = bare_remote(tmp_path)
    first = tmp_path / "laptop"
    git(tmp_path, "init", "-q", str(first))  # init.defaultBranch is master here
    assert sm(first, "init")[0] == 0
    git(first, "remote", "add", "origin", str(remote))
    write_memory(first, "user_cat", memory("The cat is Sesame", "Sesame 是一只橘猫。"))
    assert sync(first)["pushed"] == ["user_cat"]
    second = machine(tmp_path / "desktop", remote, "desktop")
    assert (second / "user_cat.md").read_bytes() == (first / "user_cat.md").read_bytes()
    assert git(second, "branch", "--show-current") == "master\n"
    write_memory(second, "user_dog", memory("The dog is Mochi", "Mochi."))
    assert sync(second)["pushed"] == ["user_dog"]
    assert sync(first)["pulled"] == ["user_dog"]
    assert git(remote, "branch", "--format=%(refname:short)") == "master\n"
    # A third made with `init --git --remote` (on main, never synced) joins master too.
    third = tmp_path / "server"
    assert sm(third, "init", "--git", "--remote", str(remote))[0] == 0
    assert sync(third)["pulled"] == ["user_cat", "user_dog"]
    assert git(third, "branch", "--show-current") == "master\n"
    assert git(remote, "branch", "--format=%(refname:short)") == "master\n"


def test_edits_by_sage_mem_and_by_hand_travel_both_ways(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    assert sm(laptop, "add", "feedback_short", "--category", "feedback",
              "--description", "Answers short, 回答要简短", "--body", "简短。")[0] == 0
    write_memory(desktop, "project_api", memory("The API uses OAuth", "Tokens last an hour."))
    edit(desktop, "user_cat", "She is three.", "She is three. 她三岁。")
    status, out, err = sm(laptop, "sync")
    assert status == 0 and out.strip() == "pulled 0, pushed 1", (out, err)
    assert "fetching origin" in err and "pushing" in err  # progress on stderr
    second = sync(desktop)
    assert second["pulled"] == ["feedback_short"]
    assert second["pushed"] == ["project_api", "user_cat"]
    assert "project_api" in git(desktop, "log", "-1", "--format=%B", "HEAD~1") or \
        "project_api" in git(desktop, "log", "--format=%B")
    third = sync(laptop)
    assert third["pulled"] == ["project_api", "user_cat"]
    assert "她三岁" in body(laptop, "user_cat")
    converged(laptop, desktop)


def test_the_commit_message_names_the_memories_and_the_machine(pair: tuple[Path, Path]) -> None:
    laptop, _ = pair
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    sync(laptop)
    message = git(laptop, "log", "-1", "--format=%B", "--", "user_dog.md")
    assert message.startswith("sync: user_dog")
    assert "Sage-Mem-Machine: laptop" in message


def test_sync_is_safe_to_run_when_nothing_changed(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    sync(laptop)  # takes the desktop's joining merge
    heads = [git(folder, "rev-parse", "HEAD") for folder in pair]
    for folder in pair:
        assert sync(folder)["summary"] == "pulled 0, pushed 0"
    assert [git(folder, "rev-parse", "HEAD") for folder in pair] == heads


# merging by rule


def test_fields_merge_by_rule_and_bodies_by_lines(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    edit(laptop, "user_cat", "tags: [pet]", "tags: [pet, orange]")
    edit(laptop, "user_cat", "trust: 0.5", "trust: 0.8")
    edit(laptop, "user_cat", "Sesame is orange.", "Sesame is orange. 芝麻是橘猫。")
    edit(laptop, "user_cat", "updated: 2026-01-01T00:00:00Z", "updated: 2026-03-01T00:00:00Z")
    edit(desktop, "user_cat", "tags: [pet]", "tags: [pet, 猫]")
    edit(desktop, "user_cat", "She is three.", "She is three and likes the sun.")
    edit(desktop, "user_cat", "updated: 2026-01-01T00:00:00Z", "updated: 2026-02-01T00:00:00Z")
    sync(laptop)
    result = sync(desktop)
    assert result["conflicts"] == []
    merged = meta(desktop, "user_cat")
    assert merged["tags"] == ["pet", "猫", "orange"]
    assert merged["trust"] == 0.8  # only the laptop changed it
    assert merged["updated"] == "2026-03-01T00:00:00Z"  # the newest
    assert body(desktop, "user_cat") == (
        "Sesame is orange. 芝麻是橘猫。\n\nShe is three and likes the sun."
    )
    sync(laptop)
    converged(laptop, desktop)


def test_feedback_on_both_machines_adds_up_without_a_conflict(pair: tuple[Path, Path]) -> None:
    """`sage-mem feedback` on one memory on two machines moved trust on both sides: a whole
    conflict sibling, the memory twice in every search, for a counter. Both moves count."""
    laptop, desktop = pair
    sync(laptop)
    for folder, said in ((laptop, "helpful"), (desktop, "helpful"), (desktop, "unhelpful")):
        status, _, err = sm(folder, "feedback", "user_cat", said)
        assert status == 0, err
    laptop_trust, desktop_trust = (meta(folder, "user_cat")["trust"] for folder in pair)
    sync(laptop)
    result = sync(desktop)
    assert result["conflicts"] == []
    assert not list(desktop.glob("*.conflict-*"))
    assert meta(desktop, "user_cat")["trust"] == round(laptop_trust + desktop_trust - 0.5, 3)
    sync(laptop)
    converged(laptop, desktop)


def test_both_changed_one_field_keeps_both_the_other_as_a_sibling(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    edit(laptop, "user_cat", "The cat is Sesame", "The cat is Sesame, 芝麻")
    edit(desktop, "user_cat", "The cat is Sesame", "The cat is called Sesame")
    edit(desktop, "user_cat", "tags: [pet]", "tags: [pet, cat]")
    laptop_version = (laptop / "user_cat.md").read_bytes()
    sync(laptop)
    status, out, _ = sm(desktop, "sync")
    assert status == 0
    assert out.strip() == "pulled 0, pushed 2, 1 conflict kept as user_cat.conflict-laptop"
    # Ours stays the memory; theirs is kept whole, byte for byte, beside it.
    assert meta(desktop, "user_cat")["description"] == "The cat is called Sesame"
    assert (desktop / "user_cat.conflict-laptop.md").read_bytes() == laptop_version
    status, out, _ = sm(desktop, "audit", "--json")
    findings = [f for f in json.loads(out)["findings"] if f["check"] == "conflict-sibling"]
    assert [f["path"] for f in findings] == ["user_cat.conflict-laptop.md"]
    assert "user_cat" in findings[0]["message"] and "laptop" in findings[0]["message"]
    assert sync(laptop)["pulled"] == ["user_cat", "user_cat.conflict-laptop"]
    converged(laptop, desktop)


def test_a_save_while_sync_merges_a_file_is_merged_in_not_written_over(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person saves a memory in the instant after git's merge checked the work tree and
    before sync wrote its merge of that file: the save was written over (16 of 800 saves
    lost in a run of two machines syncing while an editor typed). Now their change is
    merged into sync's result, by the same rules as the other side's."""
    from sage_mem.sync import batch_merge

    laptop, desktop = pair
    edit(laptop, "user_cat", "Sesame is orange.", "Sesame is orange, 橘色。")
    sync(laptop)
    edit(desktop, "user_cat", "tags: [pet]", "tags: [pet, cat]")
    real = batch_merge.merge_versions

    def saved_meanwhile(*args: object, **kwargs: object) -> object:
        path = desktop / "user_cat.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nShe sleeps on the piano.\n",
                        encoding="utf-8")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(batch_merge, "merge_versions", saved_meanwhile)
    result = sync(desktop)
    monkeypatch.undo()
    text = (desktop / "user_cat.md").read_text(encoding="utf-8")
    assert "She sleeps on the piano." in text and "橘色" in text, text
    assert meta(desktop, "user_cat")["tags"] == ["pet", "cat"]
    assert result["conflicts"] == []
    sync(desktop)
    sync(laptop)
    converged(laptop, desktop)


def test_a_save_while_sync_merges_that_clashes_with_the_merge_keeps_both(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same instant, but the person changes the description the other machine changed:
    their save stays at the path, sync's merge is kept beside it as a sibling."""
    from sage_mem.sync import batch_merge

    laptop, desktop = pair
    edit(laptop, "user_cat", "The cat is Sesame", "The cat is Sesame, a calico")
    sync(laptop)
    edit(desktop, "user_cat", "tags: [pet]", "tags: [pet, cat]")
    real = batch_merge.merge_versions

    def saved_meanwhile(*args: object, **kwargs: object) -> object:
        edit(desktop, "user_cat", "The cat is Sesame", "The cat is Sesame, 芝麻")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(batch_merge, "merge_versions", saved_meanwhile)
    result = sync(desktop)
    monkeypatch.undo()
    assert meta(desktop, "user_cat")["description"] == "The cat is Sesame, 芝麻"
    assert result["conflicts"] == ["user_cat.conflict-laptop"], result
    sibling = parse_bytes((desktop / "user_cat.conflict-laptop.md").read_bytes()).meta
    assert sibling["description"] == "The cat is Sesame, a calico"
    assert sibling["tags"] == ["pet", "cat"]


def saving_while_receiving(monkeypatch: pytest.MonkeyPatch, path: Path, line: str) -> None:
    """A person's save into `path` in the instant after sync read what a fast-forward
    brings and before it writes it (git's `read-tree -u` had the same instant inside it)."""
    saving_meanwhile(monkeypatch, lambda: path.write_text(
        path.read_text(encoding="utf-8") + line, encoding="utf-8"))


def saving_meanwhile(monkeypatch: pytest.MonkeyPatch, save: Callable[[], object]) -> None:
    """`save` run in that instant."""
    from sage_mem.sync.git import Git

    real = Git.blobs

    def blobs(self: Git, ids: object) -> dict[str, bytes]:
        found = real(self, ids)  # type: ignore[arg-type]
        save()
        return found

    monkeypatch.setattr(Git, "blobs", blobs)


def test_a_save_while_a_receive_writes_the_file_is_merged_in(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = pair
    edit(laptop, "user_cat", "tags: [pet]", "tags: [pet, cat]")
    sync(laptop)
    saving_while_receiving(monkeypatch, desktop / "user_cat.md", "\n她睡在钢琴上。\n")
    assert sync(desktop)["pulled"] == ["user_cat"]
    monkeypatch.undo()
    assert "她睡在钢琴上。" in body(desktop, "user_cat")
    assert meta(desktop, "user_cat")["tags"] == ["pet", "cat"]
    sync(desktop)
    sync(laptop)
    converged(laptop, desktop)


def test_a_save_while_a_receive_deletes_the_file_keeps_it(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = pair
    (laptop / "user_cat.md").unlink()  # a person's deletion (sage-mem itself only archives)
    sync(laptop)
    saving_while_receiving(monkeypatch, desktop / "user_cat.md", "\nShe sleeps on the piano.\n")
    sync(desktop)
    monkeypatch.undo()
    assert "She sleeps on the piano." in body(desktop, "user_cat")
    sync(desktop)  # the edit outlives the deletion, as an edit against a deletion does
    sync(laptop)
    assert "She sleeps on the piano." in body(laptop, "user_cat")


def test_a_file_made_while_a_receive_adds_one_of_that_name_keeps_both(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = pair
    write_memory(laptop, "user_dog", memory("The dog is Rex", "Rex barks."))
    sync(laptop)
    saving_meanwhile(monkeypatch, lambda: write_memory(
        desktop, "user_dog", memory("The dog is Mochi", "Mochi sleeps.")))
    result = sync(desktop)
    monkeypatch.undo()
    assert meta(desktop, "user_dog")["description"] == "The dog is Mochi"
    siblings = list(desktop.glob("user_dog.conflict-*.md"))
    assert len(siblings) == 1 and b"Rex barks." in siblings[0].read_bytes(), result


def test_a_save_while_a_merge_of_both_sides_writes_the_file_is_merged_in(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both machines changed something (a merge, not a fast-forward): the files only the other
    side changed were written by `git merge`, which unlinks each after its check; a save
    in between was lost. The merge is made outside the work tree and written by sync."""
    laptop, desktop = pair
    edit(laptop, "user_cat", "tags: [pet]", "tags: [pet, cat]")
    sync(laptop)
    write_memory(desktop, "user_dog", memory("The dog is Rex", "Rex barks."))
    saving_while_receiving(monkeypatch, desktop / "user_cat.md", "\nShe sleeps on the piano.\n")
    result = sync(desktop)
    monkeypatch.undo()
    # The save went into the merge commit with the other side's change: pushed with it.
    assert result["pulled"] == ["user_cat"] and "user_dog" in result["pushed"], result
    assert "She sleeps on the piano." in body(desktop, "user_cat")
    assert meta(desktop, "user_cat")["tags"] == ["pet", "cat"]
    merges = git(desktop, "log", "--merges", "--format=%s%n%b", f"-{2}")
    assert "sync: merge origin into desktop" in merges and "Sage-Mem-Machine" in merges
    sync(desktop)
    sync(laptop)
    converged(laptop, desktop)


def test_both_changed_the_same_lines_of_the_body_keeps_both(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    edit(laptop, "user_cat", "She is three.", "She is four.")
    edit(desktop, "user_cat", "She is three.", "她三岁。")
    edit(desktop, "user_cat", "trust: 0.5", "trust: 0.9")
    sync(laptop)
    result = sync(desktop)
    assert result["conflicts"] == ["user_cat.conflict-laptop"]
    assert "她三岁。" in body(desktop, "user_cat")
    assert "She is four." in body(desktop, "user_cat.conflict-laptop")
    sync(laptop)
    converged(laptop, desktop)


def test_a_second_conflict_from_the_same_machine_gets_a_new_name(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    for mine, theirs in (("four", "five"), ("six", "seven")):
        edit(laptop, "user_cat", "Sesame is orange.", f"Sesame is orange {mine}.")
        edit(desktop, "user_cat", "Sesame is orange.", f"Sesame is orange {theirs}.")
        sync(laptop)
        sync(desktop)
        sync(laptop)
        for folder in (laptop, desktop):  # back to the shared first line for the next round
            text = (folder / "user_cat.md").read_text(encoding="utf-8")
            (folder / "user_cat.md").write_text(
                text.replace(f"Sesame is orange {theirs}.", "Sesame is orange."), encoding="utf-8")
        sync(desktop)
        sync(laptop)
    assert (desktop / "user_cat.conflict-laptop.md").is_file()
    assert (desktop / "user_cat.conflict-laptop.2.md").is_file()
    converged(laptop, desktop)


def test_archive_on_one_side_and_an_edit_on_the_other_keeps_the_edit(
    pair: tuple[Path, Path]
) -> None:
    laptop, desktop = pair
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    edit(desktop, "user_cat", "She is three.", "She is three and came back.")
    sync(laptop)
    result = sync(desktop)
    assert result["restored"] == ["user_cat"]
    assert "came back" in body(desktop, "user_cat")
    assert "archived" not in meta(desktop, "user_cat")
    assert not (desktop / "archive" / "user_cat.md").exists()
    sync(laptop)
    converged(laptop, desktop)


def test_an_archive_of_an_edited_memory_against_an_edit_of_the_same_line_keeps_both(
    pair: tuple[Path, Path]
) -> None:
    """The laptop edits a line and archives the memory; the desktop, with no `archive/` yet,
    edits the same line: the clash's other version goes beside the archived one, in an
    `archive/` made for it. (Until 2026-12 the sync failed writing that sibling into a
    folder not there yet, after it had deleted `user_cat.md`: the next sync committed the
    deletion, and the desktop's edit was in no file.)"""
    laptop, desktop = pair
    edit(laptop, "user_cat", "She is three.", "She is four.")
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    edit(desktop, "user_cat", "She is three.", "她三岁。")
    assert not (desktop / "archive").exists()
    sync(laptop)
    sync(desktop)
    sync(laptop)
    for folder in (laptop, desktop):
        kept = "\n".join(p.read_text(encoding="utf-8") for p in folder.rglob("user_cat*.md"))
        assert "She is four." in kept and "她三岁。" in kept, folder.name
    converged(laptop, desktop)


def test_an_archive_against_an_edit_while_the_other_side_emptied_archive_keeps_the_edit(
    pair: tuple[Path, Path]
) -> None:
    """The desktop restores the one archived memory (its `archive/` is empty after) and
    edits `user_cat`; the laptop archives `user_cat`. git took the emptied `archive/` for a
    folder renamed to the top (directory rename detection), moved the laptop's
    `archive/user_cat.md` there onto the desktop's edit, and the merge held `user_cat`
    under no name (until 2026-12; seen in a kill probe of renames and archives)."""
    laptop, desktop = pair
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    assert sm(laptop, "archive", "user_dog", "--reason", "old")[0] == 0
    sync(laptop)
    sync(desktop)
    assert sm(desktop, "restore", "archive/user_dog")[0] == 0
    assert not list((desktop / "archive").glob("*.md"))
    edit(desktop, "user_cat", "She is three.", "She is three and came back.")
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    sync(laptop)
    sync(desktop)
    sync(laptop)
    for folder in (laptop, desktop):
        kept = "\n".join(p.read_text(encoding="utf-8") for p in folder.rglob("user_cat*.md"))
        assert "came back" in kept, folder.name
        assert (folder / "user_dog.md").is_file()
    converged(laptop, desktop)


def test_a_folder_a_sync_brings_is_as_private_as_the_memory_folder(
    pair: tuple[Path, Path]
) -> None:
    """`archive/` and a nested folder made on the laptop arrive on the desktop 0700, as the
    folder is, whatever the umask (until 2026-12, `mkdir` with the umask's 0755: the names of
    the archived memories listed to every user of the machine)."""
    laptop, desktop = pair
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    write_memory(laptop, "project/garden/user_dog", memory("The dog is Mochi", "Mochi."))
    sync(laptop)
    old = os.umask(0o022)
    try:
        sync(desktop)
    finally:
        os.umask(old)
    for folder in ("archive", "project", "project/garden"):
        assert stat.S_IMODE((desktop / folder).stat().st_mode) == 0o700, folder


def test_an_edit_pushed_first_then_an_archive_elsewhere_keeps_the_edit(
    pair: tuple[Path, Path]
) -> None:
    laptop, desktop = pair
    edit(desktop, "user_cat", "She is three.", "She is three and came back.")
    sync(desktop)
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    result = sync(laptop)
    assert result["restored"] == ["user_cat"]
    assert "came back" in body(laptop, "user_cat")
    sync(desktop)
    converged(laptop, desktop)


def test_an_archive_nobody_edited_elsewhere_stays_archived(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    assert sm(laptop, "archive", "user_cat", "--reason", "moved away")[0] == 0
    write_memory(desktop, "user_dog", memory("The dog is Mochi", "Mochi."))
    sync(laptop)
    assert sync(desktop)["restored"] == []
    assert (desktop / "archive" / "user_cat.md").is_file()
    assert not (desktop / "user_cat.md").exists()
    sync(laptop)
    converged(laptop, desktop)


def test_a_rename_on_one_side_and_an_edit_on_the_other_follows_the_rename(
    pair: tuple[Path, Path]
) -> None:
    laptop, desktop = pair
    (laptop / "pets").mkdir()
    git(laptop, "mv", "user_cat.md", "pets/user_cat.md")
    edit(desktop, "user_cat", "trust: 0.5", "trust: 0.9")
    edit(desktop, "user_cat", "She is three.", "She is three. 她三岁。")
    sync(laptop)
    result = sync(desktop)
    assert result["conflicts"] == []
    assert not (desktop / "user_cat.md").exists()
    assert meta(desktop, "pets/user_cat")["trust"] == 0.9
    assert "她三岁" in body(desktop, "pets/user_cat")
    sync(laptop)
    converged(laptop, desktop)


def test_a_deletion_on_one_side_and_an_edit_on_the_other_keeps_the_edit(
    pair: tuple[Path, Path]
) -> None:
    laptop, desktop = pair
    (laptop / "user_cat.md").unlink()
    edit(desktop, "user_cat", "She is three.", "She is three and still here.")
    sync(laptop)
    sync(desktop)
    assert "still here" in body(desktop, "user_cat")
    sync(laptop)
    assert "still here" in body(laptop, "user_cat")
    converged(laptop, desktop)


def test_the_same_new_id_on_both_sides_keeps_both(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    write_memory(laptop, "project_db", memory("The database is Postgres", "Postgres 16."))
    write_memory(desktop, "project_db", memory("The database is SQLite", "SQLite 3. 数据库。"))
    laptop_version = (laptop / "project_db.md").read_bytes()
    sync(laptop)
    assert sync(desktop)["conflicts"] == ["project_db.conflict-laptop"]
    assert "SQLite" in body(desktop, "project_db")
    assert (desktop / "project_db.conflict-laptop.md").read_bytes() == laptop_version
    sync(laptop)
    converged(laptop, desktop)


def test_the_same_new_memory_on_both_sides_is_one_memory(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    for folder in pair:
        write_memory(folder, "project_db", memory("The database is Postgres", "Postgres 16."))
    sync(laptop)
    assert sync(desktop)["conflicts"] == []
    sync(laptop)
    converged(laptop, desktop)


def test_memory_md_changed_on_both_sides_is_regenerated_not_merged(
    pair: tuple[Path, Path]
) -> None:
    laptop, desktop = pair
    assert sm(laptop, "add", "user_dog", "--category", "user", "--description",
              "The dog is Mochi", "--body", "Mochi.")[0] == 0
    assert sm(desktop, "add", "user_bird", "--category", "user", "--description",
              "The bird is 小蓝", "--body", "小蓝。")[0] == 0
    sync(laptop)
    sync(desktop)
    text = (desktop / "MEMORY.md").read_text(encoding="utf-8")
    assert "user_dog.md" in text and "user_bird.md" in text
    sync(laptop)
    converged(laptop, desktop)


def test_a_plain_git_pull_uses_the_driver_too(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    edit(laptop, "user_cat", "tags: [pet]", "tags: [pet, a]")
    edit(desktop, "user_cat", "tags: [pet]", "tags: [pet, b]")
    sync(laptop)
    git(desktop, "commit", "-qam", "by hand")
    git(desktop, "pull", "--no-rebase", "--no-edit", "origin", "main")
    assert meta(desktop, "user_cat")["tags"] == ["pet", "b", "a"]
    no_markers(desktop)


# what is never pushed


def test_a_memory_with_a_secret_is_not_pushed_and_the_rest_is(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    write_memory(desktop, "reference_ci", memory("The CI token", f"token: {token}"))
    write_memory(desktop, "project_ci", memory("CI runs on push", "On every push."))
    status, out, _ = sm(desktop, "sync")
    assert status == 0
    assert "reference_ci.md" in out and "secret" in out
    result = sync(desktop)
    assert result["heldBack"][0]["path"] == "reference_ci.md"
    assert token not in json.dumps(result)
    remote_files = git(desktop, "ls-tree", "-r", "--name-only", "origin/main")
    assert "project_ci.md" in remote_files and "reference_ci.md" not in remote_files
    assert (desktop / "reference_ci.md").is_file()  # still here, on this machine only
    sync(laptop)
    assert not (laptop / "reference_ci.md").exists()


def test_a_memory_whose_file_name_holds_a_secret_is_not_pushed_nor_named(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, desktop = pair
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    write_memory(desktop, f"reference_{token}", memory("The CI notes", "Nothing secret."))
    status, out, _ = sm(desktop, "sync")
    assert status == 0 and "secret" in out and token not in out
    result = sync(desktop)
    assert [h["path"] for h in result["heldBack"]] == ["reference_ghp_****.md"]
    assert token not in json.dumps(result)
    pushed = git(tmp_path / "remote.git", "ls-tree", "-r", "--name-only", "main")
    assert token not in pushed and token not in git(tmp_path / "remote.git", "show",
                                                    "main:MEMORY.md")
    # Committed by hand, it stops the push.
    git(desktop, "add", "--", f"reference_{token}.md")
    git(desktop, "commit", "-qm", "by hand")
    status, out, _ = sm(desktop, "sync", "--json")
    assert status == 1 and token not in out
    assert token not in git(tmp_path / "remote.git", "ls-tree", "-r", "--name-only", "main")


def test_a_held_back_memory_is_not_named_in_the_pushed_index_and_makes_no_churn(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, desktop = pair
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    write_memory(desktop, "reference_ci", memory("The CI deploy key", f"token: {token}"))
    sync(desktop)
    assert "reference_ci" in (desktop / "MEMORY.md").read_text(encoding="utf-8")
    remote = tmp_path / "remote.git"
    pushed_index = git(remote, "show", "main:MEMORY.md")
    assert "reference_ci" not in pushed_index and "CI deploy key" not in pushed_index
    sync(laptop)
    head = git(remote, "rev-parse", "main")
    for _ in range(2):  # nothing changed: no commit either way
        write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
        sync(laptop)
        head = git(remote, "rev-parse", "main")
        sync(desktop)
        sync(laptop)
        assert git(remote, "rev-parse", "main") == head
    assert "user_dog" in (desktop / "MEMORY.md").read_text(encoding="utf-8")
    assert "reference_ci" in (desktop / "MEMORY.md").read_text(encoding="utf-8")


def test_a_secret_in_a_description_holds_back_the_memory_not_memory_md(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """A token in a memory's description is in MEMORY.md's line for it too: the memory is
    held back, MEMORY.md is committed without that line (not held back whole, which left
    the index stale everywhere), and the other side's changes still merge."""
    laptop, desktop = pair
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    write_memory(laptop, "reference_ci", memory(f"CI 令牌 {token}", "The CI token."))
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop)
    assert [h["path"] for h in result["heldBack"]] == ["reference_ci.md"]
    pushed_index = git(tmp_path / "remote.git", "show", "main:MEMORY.md")
    assert "user_dog" in pushed_index and "reference_ci" not in pushed_index
    assert token not in git(tmp_path / "remote.git", "log", "-p", "--all")
    write_memory(desktop, "user_fish", memory("The fish is Bubbles", "Bubbles 是一条鱼。"))
    sync(desktop)
    assert sync(laptop)["pulled"] == ["user_fish"]
    assert "reference_ci" in (laptop / "MEMORY.md").read_text(encoding="utf-8")


def test_a_secret_committed_by_hand_stops_the_push(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, _ = pair
    token = "ghp_" + "Z1y2X3w4V5u6T7s8R9q0P1o2N3m4L5k6J7i8"
    write_memory(laptop, "reference_ci", memory("The CI token", f"token: {token}"))
    git(laptop, "add", "reference_ci.md")
    git(laptop, "commit", "-qm", "by hand")
    status, out, _ = sm(laptop, "sync", "--json")
    assert status == 1
    result = json.loads(out)
    assert result["pushRefused"][0]["path"] == "reference_ci.md"
    assert token not in out
    remote_files = git(tmp_path / "remote.git", "ls-tree", "-r", "--name-only", "main")
    assert "reference_ci.md" not in remote_files


def test_a_held_back_memory_changed_on_the_remote_too_stalls_nothing(
    pair: tuple[Path, Path],
) -> None:
    """A memory held back for a secret stays changed in the work tree; when the other
    machine changed it too, the rest still syncs (issue 28): the other machine's edit is
    merged into this machine's uncommitted version, which stays held back and named, and
    neither version is lost; the token never leaves."""
    laptop, desktop = pair
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    edit(laptop, "user_cat", "She is three.", f"She is three. 门禁令牌 {token}")
    edit(desktop, "user_cat", "Sesame is orange.", "Sesame is ginger.")
    sync(desktop)
    status, out, err = sm(laptop, "sync", "--json")
    assert status == 0, err
    result = json.loads(out)
    assert [h["path"] for h in result["heldBack"]] == ["user_cat.md"]
    assert "user_cat" in result["pulled"]
    assert token not in err and token not in out
    assert "ginger" in body(laptop, "user_cat") and token in body(laptop, "user_cat")
    assert not (laptop / ".git" / "MERGE_HEAD").exists()
    assert token not in git(laptop, "log", "-p", "--all")
    edit(laptop, "user_cat", f" 门禁令牌 {token}", " 门禁令牌在保险库里")
    sync(laptop)
    assert "ginger" in body(laptop, "user_cat") and "保险库" in body(laptop, "user_cat")
    sync(desktop)
    assert "保险库" in body(desktop, "user_cat")


# offline, setup errors


def test_an_unreachable_remote_is_reported_and_the_change_is_committed(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    laptop, _ = pair
    (tmp_path / "remote.git").rename(tmp_path / "gone.git")
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    status, out, _ = sm(laptop, "sync")
    assert status == 0
    assert "committed 1, not synced: fetching origin failed" in out
    assert "gone" not in out and "remote.git' does not appear to be a git repository" in out
    assert git(laptop, "status", "--porcelain") == ""
    (tmp_path / "gone.git").rename(tmp_path / "remote.git")
    assert sync(laptop)["pushed"] == ["user_dog"]


def test_a_push_the_remote_refuses_is_reported_not_taken_for_a_race(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """A remote that refuses the push (its hook, a protected branch) is said, with the
    remote's own words; not retried as a race and then reported as a quiet success."""
    laptop, _ = pair
    hook = tmp_path / "remote.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop, online=False)
    assert result["pushed"] == []
    assert result["offline"] and "main is protected" in result["offline"], result
    assert "not synced: pushing to origin failed" in result["summary"]
    hook.unlink()
    assert sync(laptop)["pushed"] == ["user_dog"]


@pytest.mark.parametrize("gone", ["renamed", "emptied"])
def test_a_branch_the_remote_lost_is_pushed_again_and_a_new_machine_meets_it(
    pair: tuple[Path, Path], tmp_path: Path, gone: str
) -> None:
    """The remote's branch renamed (`git branch -m main other` there, HEAD moved with it) or
    the remote made anew, empty, at its URL: sync kept the last fetched `origin/main`, said
    `pulled 0, pushed 0` and pushed nothing while the remote lacked every memory; a machine
    joining then took `other` (or pushed a folder of its own), and the two machines synced
    forever without meeting. The branch is pushed again, and said."""
    laptop, desktop = pair
    remote = tmp_path / "remote.git"
    if gone == "renamed":
        git(remote, "branch", "-m", "main", "other")
        git(remote, "symbolic-ref", "HEAD", "refs/heads/other")
    else:
        shutil.rmtree(remote)
        bare_remote(tmp_path)
    status, out, err = sm_process(laptop, "sync")
    assert status == 0, err
    assert "origin had no branch 'main'" in out and "pushed 1" in out, out
    assert git(remote, "rev-parse", "main") == git(laptop, "rev-parse", "HEAD")
    joiner = tmp_path / "joiner"
    status, out, err = sm_process(joiner, "sync", "--remote", str(remote))
    assert status == 0, err
    assert git(joiner, "branch", "--show-current").strip() == "main"
    write_memory(joiner, "user_dog", memory("The dog is Mochi", "Mochi."))
    assert sm_process(joiner, "sync")[0] == 0
    for folder in (laptop, desktop):
        assert sm_process(folder, "sync")[0] == 0
        assert (folder / "user_dog.md").exists()


def test_a_push_that_lost_a_race_merges_and_pushes_again(pair: tuple[Path, Path]) -> None:
    """Another machine pushes between this one's fetch and its push (here from this clone's
    own pre-push hook, once): the push is rejected as not a fast-forward, and sync fetches,
    merges and pushes again."""
    laptop, desktop = pair
    write_memory(desktop, "user_fish", memory("The fish is Bubbles", "Bubbles 是一条鱼。"))
    sync(desktop, "--no-push")
    flag = laptop.parent / "raced"
    hook = laptop / ".git" / "hooks" / "pre-push"
    hook.write_text(
        f"#!/bin/sh\n[ -e '{flag}' ] && exit 0\ntouch '{flag}'\n"
        f"env -u GIT_DIR -u GIT_INDEX_FILE git -C '{desktop}' push -q origin main\n",
        encoding="utf-8")
    hook.chmod(0o755)
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop)
    assert flag.exists()
    assert result["pulled"] == ["user_fish"] and result["pushed"] == ["user_dog"]
    sync(desktop)
    converged(laptop, desktop)


def test_a_push_that_keeps_losing_the_race_is_said(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.sync import steps

    laptop, _ = pair
    monkeypatch.setattr(steps._Sync, "push", lambda self: False)  # the remote moved each time
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop, online=False)
    assert "lost the race" in result["offline"] and "not synced" in result["summary"]


def test_a_remote_branch_a_killed_push_left_locked_is_said_with_the_file_to_remove(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """A push killed inside the remote's ref update (a local remote's receive-pack killed
    with it) leaves the branch's lock file there, and git refuses every later push: not a
    race to retry, said as what it is, with the file a person may remove."""
    laptop, _ = pair
    lock = tmp_path / "remote.git" / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop, online=False)
    offline = result["offline"]
    assert "lost the race" not in offline and "could not update its branch" in offline, offline
    assert "refs/heads/main.lock" in offline and "\n" not in offline
    lock.unlink()  # as the person does
    assert sync(laptop)["pushed"] == ["user_dog"]


def test_sync_run_from_another_repositorys_git_hook_works_on_the_memory_folder(
    pair: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git hook of another repository (a person's `sage-mem sync` in their project's
    pre-commit) runs with GIT_DIR, GIT_INDEX_FILE and GIT_WORK_TREE naming that repository:
    sync must not take them for the memory folder's, nor touch that repository; `init --git`
    neither."""
    laptop, desktop = pair
    project = tmp_path / "project"
    git(tmp_path, "init", "-q", str(project))
    (project / "app.py").write_text("print('hi')\n", encoding="utf-8")
    git(project, "add", "app.py")
    index = (project / ".git" / "index").read_bytes()
    for name, value in (("GIT_DIR", project / ".git"), ("GIT_WORK_TREE", project),
                        ("GIT_INDEX_FILE", project / ".git" / "index"),
                        ("GIT_OBJECT_DIRECTORY", project / ".git" / "objects")):
        monkeypatch.setenv(name, str(value))
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi 是一只狗。"))
    assert sync(laptop)["pushed"] == ["user_dog"]
    assert sm(tmp_path / "fresh", "init", "--git")[0] == 0
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name)
    assert (project / ".git" / "index").read_bytes() == index
    assert git(project, "rev-parse", "-q", "--verify", "HEAD", check=False) == ""
    assert git(laptop, "status", "--porcelain") == ""
    assert git(tmp_path / "fresh", "log", "--format=%s") == "sage-mem: a new memory folder\n"
    assert sync(desktop)["pulled"] == ["user_dog"]


def test_a_token_in_the_remote_url_is_never_printed(tmp_path: Path) -> None:
    """`https://me:TOKEN@host/…` as the remote: init and sync print it (text and --json)
    with the password masked; git's own messages already mask it."""
    token = "ghp_" + "Z1y2X3w4V5u6T7s8R9q0P1o2N3m4L5k6J7i8"
    url = f"https://me:{token}@127.0.0.1:9/memory.git"
    folder = tmp_path / "memory"
    status, out, err = sm(folder, "init", "--git", "--remote", url)
    assert status == 0 and token not in out + err
    assert "https://me:****@127.0.0.1:9/memory.git" in out
    status, out, err = sm(folder, "init", "--git", "--remote", url, "--json")
    assert token not in out + err
    for argv in (("sync",), ("sync", "--json")):
        status, out, err = sm(folder, *argv)
        assert status == 0 and token not in out + err, out
    assert json.loads(out)["remote"] == "https://me:****@127.0.0.1:9/memory.git"
    assert git(folder, "config", "remote.origin.url").strip() == url  # git's, unchanged


def test_a_remote_given_as_a_relative_path_is_read_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sage-mem --dir mem init --git --remote ../remote.git`, as `git clone ../remote.git`
    reads it: git, run in the memory folder, read it from there (`mem/../remote.git`, no
    such repository), and the push said only that fetching failed."""
    remote = bare_remote(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status, out, err = sm(Path("mem"), "init", "--git", "--remote", "../remote.git")
    assert status == 0, err
    write_memory(work / "mem", "user_dog", memory("The dog is Mochi", "Mochi."))
    assert sync(work / "mem")["pushed"]
    status, out, err = sm(Path("other"), "sync", "--remote", "../remote.git")  # a join
    assert status == 0, err
    assert (work / "other" / "user_dog.md").is_file()
    for folder in ("mem", "other"):
        assert git(work / folder, "remote", "get-url", "origin").strip() == str(remote)


def test_sync_without_a_repository_says_how_to_set_one_up(tmp_path: Path) -> None:
    sm(tmp_path / "plain", "init")
    status, _, err = sm(tmp_path / "plain", "sync")
    assert status == 1
    assert err.count("\n") == 1 and "sync --remote URL" in err


def test_sync_without_a_remote_commits(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    sm(folder, "init", "--git")
    write_memory(folder, "user_dog", memory("The dog is Mochi", "Mochi."))
    status, out, _ = sm(folder, "sync")
    assert status == 0 and "committed 1, no remote" in out
    assert git(folder, "status", "--porcelain") == ""


# history


def test_log_lists_a_memorys_versions_and_show_reads_one(pair: tuple[Path, Path]) -> None:
    laptop, _ = pair
    edit(laptop, "user_cat", "She is three.", "She is four.")
    sync(laptop)
    status, out, _ = sm(laptop, "log", "user_cat", "--json")
    assert status == 0
    versions = json.loads(out)
    assert len(versions) == 2 and versions[0]["machine"] == "laptop"
    status, out, _ = sm(laptop, "show", f"user_cat@{versions[1]['rev']}", "--json")
    assert status == 0
    assert "She is three." in json.loads(out)["body"]
    status, out, _ = sm(laptop, "show", "user_cat@HEAD")
    assert status == 0 and "She is four." in out
    status, _, err = sm(laptop, "show", "user_cat@nope")
    assert status == 1 and "no such revision" in err


def test_log_follows_a_memory_into_the_archive(pair: tuple[Path, Path]) -> None:
    laptop, _ = pair
    sm(laptop, "archive", "user_cat", "--reason", "gone")
    sync(laptop)
    status, out, _ = sm(laptop, "log", "user_cat")
    assert status == 0 and out.count("\n") == 3  # two versions and the hint


# what a killed sync leaves (tests/test_sync_crash.py kills real ones)


def half_done_merge(laptop: Path, desktop: Path) -> None:
    """Both changed the same lines; desktop's `git merge` failed in its driver, so git left
    `user_cat` unmerged (ours in the work tree) and MERGE_HEAD behind."""
    edit(laptop, "user_cat", "She is three.", "She is four.")
    edit(desktop, "user_cat", "She is three.", "她三岁。")
    sync(laptop)
    git(desktop, "commit", "-qam", "by hand")
    git(desktop, "fetch", "-q", "origin")
    git(desktop, "-c", "merge.sage-mem.driver=false", "merge", "origin/main", check=False)
    assert (desktop / ".git" / "MERGE_HEAD").exists()


def test_a_merge_left_half_done_by_a_killed_sync_is_finished(pair: tuple[Path, Path]) -> None:
    import subprocess
    import sys

    laptop, desktop = pair
    half_done_merge(laptop, desktop)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    # What a sync killed inside its merge leaves in its record: the commit it was merging.
    merging = git(desktop, "rev-parse", "MERGE_HEAD").strip()
    record = desktop.parent / ".desktop.sage-mem" / "sync.json"
    record.write_text(json.dumps({"pid": gone.pid, "merge": merging}), encoding="utf-8")
    result = sync(desktop)
    assert any("merge" in note for note in result["notes"])
    assert result["conflicts"] == ["user_cat.conflict-laptop"]
    assert "她三岁。" in body(desktop, "user_cat")
    assert "She is four." in body(desktop, "user_cat.conflict-laptop")
    assert not record.exists()
    sync(laptop)
    converged(laptop, desktop)


def test_a_persons_own_merge_in_progress_is_left_to_them(pair: tuple[Path, Path]) -> None:
    """A merge a person started (no sync's record names it) is theirs, like a rebase: sync
    refuses in one line and changes nothing, so a resolution they typed is never replaced."""
    laptop, desktop = pair
    half_done_merge(laptop, desktop)
    mine = memory("The cat is Sesame", "Sesame is orange.\n\nShe is four, 她四岁。")
    (desktop / "user_cat.md").write_text(mine, encoding="utf-8")  # resolved by hand, not added
    before = (files(desktop), git(desktop, "status", "--porcelain"))
    status, _, err = sm(desktop, "sync")
    assert status == 1 and "merge is in progress" in err and err.count("\n") == 1, err
    assert (files(desktop), git(desktop, "status", "--porcelain")) == before
    assert (desktop / ".git" / "MERGE_HEAD").exists()
    git(desktop, "add", "user_cat.md")
    git(desktop, "commit", "-q", "--no-edit")
    sync(desktop)
    sync(laptop)
    assert (laptop / "user_cat.md").read_text(encoding="utf-8") == mine
    converged(laptop, desktop)


def test_git_locks_left_by_a_killed_sync_are_removed(pair: tuple[Path, Path]) -> None:
    import subprocess
    import sys

    laptop, _ = pair
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    state = laptop.parent / ".laptop.sage-mem"
    (state / "sync.json").write_text(json.dumps({"pid": gone.pid}), encoding="utf-8")
    (laptop / ".git" / "index.lock").write_bytes(b"")
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop)
    assert any("index.lock" in note for note in result["notes"])
    assert result["pushed"] == ["user_dog"]


def test_temp_files_of_killed_writes_are_cleared_and_live_ones_kept(
    pair: tuple[Path, Path],
) -> None:
    """A write killed before its rename (a merge driver's, an agent's) leaves a temp
    file: the next sync removes it; a running writer's, and a person's own dot-files,
    stay."""
    import os
    import subprocess
    import sys

    laptop, _ = pair
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (laptop / "project").mkdir()
    killed = [laptop / f".user_cat.conflict-desktop.md.{gone.pid}.9ac48f10.tmp",
              laptop / "project" / f".project_x.md.{gone.pid}.00ff00ff.tmp"]
    kept = [laptop / f".user_cat.md.{os.getpid()}.12345678.tmp",  # this process runs
            laptop / ".my-notes.tmp", laptop / ".obsidian" / f".x.md.{gone.pid}.9ac48f10.tmp"]
    (laptop / ".obsidian").mkdir()
    for path in killed + kept:
        path.write_bytes(b"---\ndescription: half\n---\n")
    result = sync(laptop)
    assert "removed 2 temporary files left by killed writes" in result["notes"]
    assert [path.exists() for path in killed + kept] == [False, False, True, True, True]


def test_a_lock_of_a_git_still_running_is_not_taken_away(pair: tuple[Path, Path]) -> None:
    laptop, _ = pair
    (laptop / ".git" / "index.lock").write_bytes(b"")  # no killed sync on record: someone's git
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    status, _, err = sm(laptop, "sync")
    assert status == 1 and err.count("\n") == 1 and "index.lock" in err
    assert (laptop / ".git" / "index.lock").exists()


def test_sync_leaves_a_rebase_or_a_detached_head_to_the_person(pair: tuple[Path, Path]) -> None:
    laptop, _ = pair
    head = git(laptop, "rev-parse", "HEAD").strip()
    git(laptop, "checkout", "-q", "--detach", head)
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    status, _, err = sm(laptop, "sync")
    assert status == 1 and "detached" in err and err.count("\n") == 1
    assert git(laptop, "rev-parse", "HEAD").strip() == head
    git(laptop, "checkout", "-q", "main")
    (laptop / ".git" / "rebase-merge").mkdir()
    status, _, err = sm(laptop, "sync")
    assert status == 1 and "rebase" in err
    (laptop / ".git" / "rebase-merge").rmdir()
    assert sync(laptop)["pushed"] == ["user_dog"]


def error_line(err: str) -> str:
    """The one error line of a failed sync (its progress lines aside)."""
    errors = [line for line in err.splitlines() if line.startswith("sage-mem: error:")]
    assert len(errors) == 1, err
    return errors[0]


def test_a_commit_signing_that_fails_is_named_in_one_line(pair: tuple[Path, Path]) -> None:
    """The person's own `commit.gpgsign` is honoured; when the signing fails, the line says
    so (git's cause), not only git's consequence ("failed to write commit object")."""
    laptop, _ = pair
    git(laptop, "config", "commit.gpgsign", "true")
    git(laptop, "config", "gpg.program", "false")
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    status, _, err = sm(laptop, "sync")
    assert status == 1
    assert "gpg failed to sign" in error_line(err)
    assert "git commit failed" in error_line(err)


@pytest.mark.parametrize("key,value", [
    ("merge.ff", "only"), ("branch.main.mergeoptions", "--ff-only"),
    ("branch.main.mergeoptions", "--squash"),
])
def test_the_persons_own_merge_settings_do_not_stop_syncs_merge(
    pair: tuple[Path, Path], key: str, value: str,
) -> None:
    """Settings a person chose for their own `git merge` (fast-forward only, squash) do not
    apply to sync's: once both machines committed, it still merges and pushes a merge."""
    laptop, desktop = pair
    git(laptop, "config", key, value)
    write_memory(desktop, "user_fish", memory("The fish is Bubbles", "Bubbles 是一条鱼。"))
    sync(desktop)
    write_memory(laptop, "user_dog", memory("The dog is Mochi", "Mochi."))
    result = sync(laptop)
    assert result["pulled"] == ["user_fish"] and result["pushed"] == ["user_dog"]
    assert git(laptop, "log", "--merges", "--format=%H")  # a merge commit, not a squash
    sync(desktop)
    converged(laptop, desktop)


def test_a_merge_that_fails_is_undone_not_left_half_done(pair: tuple[Path, Path]) -> None:
    """git fails inside sync's merge (here the merge commit's signing): sync says why in one
    line and leaves the folder as before the merge, not mid-merge; nothing is lost, and once
    the cause is gone a sync merges as usual."""
    laptop, desktop = pair
    edit(laptop, "user_cat", "She is three.", "She is four.")
    sync(laptop)
    write_memory(desktop, "user_dog", memory("The dog is Mochi", "Mochi 是一只狗。"))
    assert sm(desktop, "index")[0] == 0
    git(desktop, "add", "user_dog.md", "MEMORY.md")
    git(desktop, "commit", "-qm", "by hand")
    head = git(desktop, "rev-parse", "HEAD").strip()
    before = files(desktop)
    git(desktop, "config", "commit.gpgsign", "true")
    git(desktop, "config", "gpg.program", "false")
    status, _, err = sm(desktop, "sync")
    assert status == 1 and "gpg failed to sign" in error_line(err)
    assert "merging origin failed, undone" in error_line(err)
    assert not (desktop / ".git" / "MERGE_HEAD").exists()
    assert git(desktop, "rev-parse", "HEAD").strip() == head
    assert files(desktop) == before
    assert git(desktop, "status", "--porcelain") == ""
    git(desktop, "config", "--unset", "commit.gpgsign")
    assert sync(desktop)["pulled"] == ["user_cat"]
    sync(laptop)
    converged(laptop, desktop)
