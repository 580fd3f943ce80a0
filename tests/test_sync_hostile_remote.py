"""A hostile remote: whoever can push to it must not make `sync` read a file outside the folder.

An attacker's plain clone commits `.gitattributes`, `.gitignore`, `MEMORY.md`, a
memory or a folder as symbolic links to a file outside the folder (a fake
`~/.bash_history` holding a marker). After the victim's syncs the marker is
nowhere in the remote (no object, no `git log -p --all`), the outside file is
unchanged, and sync says in one line why it did not merge.
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
    sm,
    sm_process,
    sync,
    use_private_git,
)

from sage_mem.disk.folder import MemoryFolder
from sage_mem.sync.git import LinkRefused, read_in_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

MARKER = "MARKER-7f3a-bash-history-do-not-leak"


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The victim's private file, outside every memory folder."""
    home = tmp_path / "victim-home"
    home.mkdir()
    secret = home / ".bash_history"
    secret.write_text(f"ssh prod\nexport TOKEN=hunter2\n{MARKER}\n", encoding="utf-8")
    return secret


def remote_text(remote: Path) -> str:
    """Everything the remote holds: every object's bytes, and the whole history's patches."""
    objects = subprocess.run(
        ["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")
    return objects + git(remote, "log", "-p", "--all", "--binary")


def clone(remote: Path, folder: Path) -> None:
    """A plain `git clone`, as an attacker or a teammate makes one (links checked out as links)."""
    subprocess.run(["git", "clone", "--quiet", "--branch", "main", str(remote), str(folder)],
                   check=True)


def attack(tmp_path: Path, remote: Path, outside: Path, links: list[str]) -> Path:
    """A plain clone that replaces (or adds) each of `links` by a link to `outside`, and pushes."""
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    for rel in links:
        path = attacker / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
        path.symlink_to(outside.parent if rel.endswith("/") or "." not in rel else outside)
    git(attacker, "add", "-A")
    git(attacker, "commit", "--quiet", "-m", "tidy up")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    return attacker


def victim_folder(tmp_path: Path, remote: Path) -> Path:
    victim = machine(tmp_path / "victim", remote, "victim", first=True)
    write_memory(victim, "user_cat", memory("The cat is Sesame", "Sesame is orange."))
    write_memory(victim, "project_deploy", memory("Deploys go out on Tuesdays", "Tuesdays."))
    sync(victim)
    return victim


def reshaped_by_a_remote(tmp_path: Path, named: str) -> Path:
    """A victim synced with a remote to which a plain clone pushed `named` (a path inside one
    of sage-mem's own files, or one of its own folders written as a file)."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    if "/" in named:  # the file it replaces goes first
        git(attacker, "rm", "--quiet", named.split("/")[0])
        (attacker / named).parent.mkdir()
    (attacker / named).write_text(memory("x", "x"), encoding="utf-8")
    git(attacker, "add", "-A")
    git(attacker, "commit", "--quiet", "-m", "reshape")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    return victim


def ignoring_by_a_remote(tmp_path: Path, rule: str) -> Path:
    """A victim synced with a remote to which a plain clone pushed a `.gitignore` `rule`."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    with (attacker / ".gitignore").open("a", encoding="utf-8") as ignore:
        ignore.write(rule + "\n")
    git(attacker, "add", "-f", ".gitignore")
    git(attacker, "commit", "--quiet", "-m", "tidy")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    sync(victim)
    return victim


def assert_nothing_leaked(remote: Path, outside: Path, before: bytes) -> None:
    assert MARKER not in remote_text(remote)
    assert outside.read_bytes() == before


LINKS = [
    pytest.param([".gitattributes"], id="gitattributes"),
    pytest.param([".gitignore"], id="gitignore"),
    pytest.param(["MEMORY.md"], id="memory-md"),
    pytest.param(["user_cat.md"], id="a-memory"),
    pytest.param(["user_new.md"], id="a-new-memory"),
    pytest.param(["project"], id="a-folder"),
    pytest.param([".gitattributes", ".gitignore", "MEMORY.md", "user_cat.md"], id="all-at-once"),
]


@pytest.mark.parametrize("links", LINKS)
def test_a_link_from_the_remote_is_refused_in_one_line_and_never_read(
    tmp_path: Path, outside: Path, links: list[str]
) -> None:
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    before = outside.read_bytes()
    attack(tmp_path, remote, outside, links)
    write_memory(victim, "user_cat", memory("The cat is Sesame", "Sesame is orange and old."))
    for _ in range(2):  # the leak came on the second sync
        status, out, err = sm(victim, "sync")
        assert status == 1, (out, err)
        lines = [line for line in err.splitlines() if "error" in line]
        assert len(lines) == 1, err
        assert "symbolic link" in lines[0] and links[0].rstrip("/") in lines[0], lines[0]
        assert "Traceback" not in err
    for rel in links:
        assert not (victim / rel).is_symlink(), f"{rel} checked out as a link"
    assert_nothing_leaked(remote, outside, before)
    assert MARKER.encode() not in b"".join(
        p.read_bytes() for p in victim.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_machine_joining_a_hostile_remote_refuses_it_and_checks_out_no_link(
    tmp_path: Path, outside: Path
) -> None:
    remote = bare_remote(tmp_path)
    victim_folder(tmp_path, remote)
    before = outside.read_bytes()
    attack(tmp_path, remote, outside, [".gitattributes", "MEMORY.md", "user_cat.md"])
    joiner = tmp_path / "joiner"
    status, out, err = sm(joiner, "sync", "--remote", str(remote))
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1 and "symbolic link" in errors[0], err
    assert not any(p.is_symlink() for p in joiner.rglob("*"))
    assert_nothing_leaked(remote, outside, before)


@pytest.mark.parametrize("links", LINKS)
def test_sync_in_a_plain_clone_holding_links_follows_none(
    tmp_path: Path, outside: Path, links: list[str]
) -> None:
    """A teammate's plain `git clone` checks the links out as links; their `sage-mem sync`
    then reads none of them, and pushes nothing of what they lead to."""
    remote = bare_remote(tmp_path)
    victim_folder(tmp_path, remote)
    before = outside.read_bytes()
    attack(tmp_path, remote, outside, links)
    teammate = tmp_path / "teammate"
    clone(remote, teammate)
    assert all((teammate / rel).is_symlink() for rel in links)
    write_memory(teammate, "user_dog", memory("The dog is Rex", "Rex barks."))
    for _ in range(2):
        status, out, err = sm(teammate, "sync")
        assert "Traceback" not in err
        if ".gitattributes" in links:
            errors = [line for line in err.splitlines() if "error" in line]
            assert status == 1 and len(errors) == 1, err
            assert ".gitattributes: a symbolic link" in errors[0]
        else:
            assert status == 0, err
    if links == ["MEMORY.md"]:  # sage-mem's own file: the link replaced, its target untouched
        assert not (teammate / "MEMORY.md").is_symlink()
    status, out, err = sm(teammate, "show", "user_cat@HEAD")
    assert MARKER not in out + err and "Traceback" not in err
    status, out, err = sm(teammate, "log", "user_cat")
    assert MARKER not in out + err and "Traceback" not in err
    assert_nothing_leaked(remote, outside, before)


def test_a_link_made_in_the_folder_is_held_back_not_committed(
    tmp_path: Path, outside: Path
) -> None:
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    (victim / "user_history.md").symlink_to(outside)
    result = sync(victim)
    assert [h["path"] for h in result["heldBack"]] == ["user_history.md"]
    assert "symbolic link" in result["heldBack"][0]["reason"]
    assert "user_history.md" not in git(remote, "ls-tree", "-r", "--name-only", "main")
    assert str(outside) not in remote_text(remote)


def test_sync_sets_the_repository_to_check_links_out_as_files(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    assert git(victim, "config", "--local", "core.symlinks").strip() == "false"
    assert git(victim, "config", "--local", "fetch.fsckObjects").strip() == "true"


def test_a_path_outside_the_folder_from_the_remote_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    """A tree naming `..` (made with git's plumbing, which checks nothing) never reaches the
    work tree: refused when fetched, said in the summary, the remote unchanged by us."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    blob = subprocess.run(["git", "-C", str(attacker), "hash-object", "-w", "--stdin"],
                          input=b"pwned\n", capture_output=True, check=True).stdout.decode().strip()
    head_tree = git(attacker, "ls-tree", "HEAD")
    tree = subprocess.run(["git", "-C", str(attacker), "mktree"],
                          input=(head_tree + f"100644 blob {blob}\t..\n").encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    commit = git(attacker, "commit-tree", tree, "-p", "HEAD", "-m", "escape").strip()
    git(attacker, "push", "--quiet", "origin", f"{commit}:refs/heads/main")
    status, out, err = sm(victim, "sync")
    assert "Traceback" not in err
    assert "not synced" in out or status == 1, (out, err)
    assert not (tmp_path / "pwned").exists()
    assert git(remote, "rev-parse", "main").strip() == commit


def test_read_in_tree_refuses_a_link_at_any_depth(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "folder"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.md").write_text("a", encoding="utf-8")
    (root / "through").symlink_to(outside.parent)
    (root / "file.md").symlink_to(outside)
    assert read_in_tree(root, "real/a.md", limit=100).raw == b"a"
    assert read_in_tree(root, "real/missing.md", limit=100).raw is None
    for rel in ("through/.bash_history", "file.md"):
        with pytest.raises(LinkRefused, match="symbolic link"):
            read_in_tree(root, rel, limit=1 << 20)


def push_entry(attacker: Path, entry: bytes) -> None:
    """Commit HEAD's tree plus one raw `mktree -z` entry (any bytes for a name), and push it."""
    listed = subprocess.run(["git", "-C", str(attacker), "ls-tree", "-z", "HEAD"],
                            capture_output=True, check=True).stdout
    tree = subprocess.run(["git", "-C", str(attacker), "mktree", "-z"], input=listed + entry,
                          capture_output=True, check=True).stdout.decode().strip()
    commit = git(attacker, "commit-tree", tree, "-p", "HEAD", "-m", "add").strip()
    git(attacker, "push", "--quiet", "origin", f"{commit}:refs/heads/main")


def test_a_remote_file_name_that_is_not_utf8_is_synced_but_never_indexed(
    tmp_path: Path,
) -> None:
    """A name holding bytes that are not UTF-8 (Latin-1 `café`) made MEMORY.md's
    regeneration end in a UnicodeEncodeError traceback on every sync. It is no memory any id
    reaches: synced as git's file, left out of MEMORY.md and search, reported by the audit."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    blob = subprocess.run(["git", "-C", str(attacker), "hash-object", "-w", "--stdin"],
                          input=memory("The cafe opens at nine", "Nine sharp.").encode(),
                          capture_output=True, check=True).stdout.strip()
    push_entry(attacker, b"100644 blob " + blob + b"\tuser_caf\xe9.md\0")
    write_memory(victim, "user_dog", memory("The dog is Rex", "Rex barks."))
    status, out, err = sm(victim, "sync")
    assert status == 0 and "Traceback" not in err, (out, err)
    assert os.path.exists(os.fsencode(victim) + b"/user_caf\xe9.md")
    assert "user_dog" in git(remote, "ls-tree", "--name-only", "main")
    index = (victim / "MEMORY.md").read_bytes()
    assert b"user_dog" in index and b"caf" not in index
    status, out, err = sm(victim, "search", "cafe opens nine")
    assert status == 0 and "caf" not in out, (out, err)
    status, out, err = sm(victim, "audit")
    assert "unaddressable-name" in out, out


def test_a_folder_the_remote_made_where_a_memory_was_edited_keeps_the_edit_as_a_sibling(
    tmp_path: Path,
) -> None:
    """The remote replaces `user_cat.md` by a folder of that name while this machine edits
    it: git moves the edit aside as `user_cat.md~HEAD`, a name no walk reads, and sync
    committed it so (the edit out of every list and search, said nowhere). The edit is
    kept as a conflict sibling, a memory, and the summary names it."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    (attacker / "user_cat.md").unlink()
    (attacker / "user_cat.md").mkdir()
    (attacker / "user_cat.md" / "notes.md").write_text(memory("Cat notes", "Notes."),
                                                       encoding="utf-8")
    git(attacker, "add", "-A")
    git(attacker, "commit", "--quiet", "-m", "a folder")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    edited = victim / "user_cat.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nSesame likes the window.\n",
                      encoding="utf-8")
    result = sync(victim)
    assert result["conflicts"] == ["user_cat.conflict-victim"], result
    sibling = victim / "user_cat.conflict-victim.md"
    assert b"Sesame likes the window." in sibling.read_bytes()
    assert not any("~" in name for name in os.listdir(victim))
    assert "user_cat.conflict-victim.md" in git(remote, "ls-tree", "--name-only", "main")
    status, out, _ = sm(victim, "search", "Sesame window")
    assert "user_cat.conflict-victim" in out


def push_gitlink(tmp_path: Path, remote: Path, path: str) -> str:
    """An attacker's plain clone commits a submodule entry (a gitlink, mode 160000) at
    `path`, with a `.gitmodules` naming a repository on the victim's disk; pushes it."""
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    head = git(attacker, "rev-parse", "HEAD").strip()
    git(attacker, "update-index", "--add", "--cacheinfo", f"160000,{head},{path}")
    (attacker / ".gitmodules").write_text(
        f'[submodule "x"]\n\tpath = {path}\n\turl = {tmp_path / "victim-home"}\n',
        encoding="utf-8")
    git(attacker, "add", ".gitmodules")
    git(attacker, "commit", "--quiet", "-m", "vendor a module")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    return git(attacker, "rev-parse", "--short", "HEAD").strip()


def test_a_gitlink_from_the_remote_is_refused_and_an_archived_memory_still_travels(
    tmp_path: Path, outside: Path
) -> None:
    """A submodule entry at `archive` made git see every file below it as another
    repository's: the memory archived next went into no commit, gone from the remote and
    every other machine, said nowhere. A gitlink is refused as a link is, in one line."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    commit = push_gitlink(tmp_path, remote, "archive")
    for _ in range(2):
        status, out, err = sm(victim, "sync")
        errors = [line for line in err.splitlines() if "error" in line]
        assert status == 1 and len(errors) == 1, (out, err)
        assert "archive is a submodule" in errors[0] and commit in errors[0], errors[0]
    assert "160000" not in git(victim, "ls-files", "-s")
    status, out, err = sm(victim, "archive", "user_cat", "--reason", "moved away")
    assert status == 0, (out, err)
    sm(victim, "sync")
    assert "archive/user_cat.md" in git(victim, "ls-files")
    assert not (victim / "archive" / ".git").exists()


def test_a_joiner_checks_out_no_gitlink(tmp_path: Path, outside: Path) -> None:
    remote = bare_remote(tmp_path)
    victim_folder(tmp_path, remote)
    push_gitlink(tmp_path, remote, "project")
    joiner = tmp_path / "joiner"
    status, out, err = sm(joiner, "sync", "--remote", str(remote))
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1 and "submodule" in errors[0], (out, err)
    assert "160000" not in git(joiner, "ls-files", "-s", check=False)


def test_a_repository_inside_the_folder_is_held_back_and_named_as_one(tmp_path: Path) -> None:
    """A folder holding a `.git` of its own (a clone made inside the memory folder) is not
    committed, as git would commit it: a gitlink, none of its memories. Sync names it as
    what it is, not as a symbolic link."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    nested = victim / "project"
    nested.mkdir()
    git(nested, "init", "--quiet")
    write_memory(victim, "project/project_x", memory("Nested", "In a repository."))
    git(nested, "add", "-A")
    git(nested, "commit", "--quiet", "-m", "x")
    status, out, err = sm(victim, "sync")
    assert status == 0, (out, err)
    said = out + err
    assert "project/: a git repository of its own" in said and "symbolic link" not in said, said
    assert "160000" not in git(remote, "ls-tree", "-r", "main")


def test_a_remote_name_too_long_for_the_disk_is_refused_naming_its_commit(
    tmp_path: Path,
) -> None:
    """A file name of 300 bytes (made with git's plumbing) stopped every sync with the
    whole name and "cannot read: File name too long", no word of where it came from."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    blob = subprocess.run(["git", "-C", str(attacker), "hash-object", "-w", "--stdin"],
                          input=memory("Long", "Long.").encode(), capture_output=True,
                          check=True).stdout.decode().strip()
    name = "user_" + "a" * 300 + ".md"
    tree = subprocess.run(["git", "-C", str(attacker), "mktree"],
                          input=(git(attacker, "ls-tree", "HEAD")
                                 + f"100644 blob {blob}\t{name}\n").encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    commit = git(attacker, "commit-tree", tree, "-p", "HEAD", "-m", "long").strip()
    git(attacker, "push", "--quiet", "origin", f"{commit}:refs/heads/main")
    write_memory(victim, "user_cat", memory("The cat is Sesame", "Sesame is old."))
    status, out, err = sm(victim, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1, (out, err)
    assert "too long" in errors[0] and commit[:7] in errors[0], errors[0]
    assert len(errors[0]) < 500, errors[0]
    assert b"Sesame is old." in (victim / "user_cat.md").read_bytes()


def test_a_plain_clone_holding_a_gitlink_is_told_to_remove_it_and_loses_no_memory(
    tmp_path: Path, outside: Path
) -> None:
    """A teammate's plain `git clone` already holds the gitlink (no merge for sync to
    refuse): a memory archived there went into no commit, said nowhere. Sync refuses in
    one line naming it; once it is removed, the archived memory travels."""
    remote = bare_remote(tmp_path)
    victim_folder(tmp_path, remote)
    push_gitlink(tmp_path, remote, "archive")
    teammate = tmp_path / "teammate"
    clone(remote, teammate)
    status, out, err = sm(teammate, "archive", "user_cat", "--reason", "moved away")
    assert status == 0, (out, err)
    status, out, err = sm(teammate, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1, (out, err)
    assert "archive is a submodule" in errors[0], errors[0]
    assert "git rm --cached archive && git commit" in errors[0], errors[0]
    git(teammate, "rm", "--quiet", "--cached", "archive")
    git(teammate, "commit", "--quiet", "-m", "no submodule")
    status, out, err = sm(teammate, "sync")
    assert status == 0, (out, err)
    assert "archive/user_cat.md" in git(remote, "ls-tree", "-r", "--name-only", "main")


def test_a_remote_gitattributes_that_reencodes_memories_is_refused_naming_its_commit(
    tmp_path: Path,
) -> None:
    """`*.md working-tree-encoding=UTF-16` from the remote made git re-encode every memory
    on checkout; sync's merge then failed on git's own words ("BOM is required …"), every
    sync, naming neither the attribute nor the commit. Refused before the merge, in one
    line; this machine's edit stays committed here."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    attributes = (attacker / ".gitattributes").read_bytes() + b"*.md working-tree-encoding=UTF-16\n"
    blob = subprocess.run(["git", "-C", str(attacker), "hash-object", "-w", "--stdin"],
                          input=attributes, capture_output=True, check=True).stdout.decode().strip()
    git(attacker, "update-index", "--cacheinfo", f"100644,{blob},.gitattributes")
    git(attacker, "commit", "--quiet", "-m", "encodings")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    commit = git(attacker, "rev-parse", "--short", "HEAD").strip()
    write_memory(victim, "user_cat", memory("The cat is Sesame", "Sesame is old."))
    status, out, err = sm(victim, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1, (out, err)
    assert "working-tree-encoding" in errors[0] and commit in errors[0], errors[0]
    assert "BOM" not in err, err
    assert "Sesame is old." in git(victim, "show", "HEAD:user_cat.md")
    assert (victim / "user_cat.md").read_bytes().startswith(b"---")


def test_a_memory_a_remote_gitignore_hides_is_named_not_dropped_in_silence(
    tmp_path: Path,
) -> None:
    """A remote `.gitignore` of `*.md` (careless or hostile) made git ignore every new
    memory: sync said `pushed 0`, exit 0, and the memory never left the machine, named
    nowhere. Each memory git ignores is named with the rule that hides it."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    with (attacker / ".gitignore").open("a", encoding="utf-8") as ignore:
        ignore.write("*.md\n!MEMORY.md\n")
    git(attacker, "commit", "--quiet", "-am", "tidy")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    sync(victim)
    write_memory(victim, "user_dog", memory("The dog is Rex", "Rex barks."))
    status, out, err = sm(victim, "sync", "--json")
    assert status == 0, (out, err)
    held = {h["path"]: h["reason"] for h in json.loads(out)["heldBack"]}
    assert "user_dog.md" in held, out
    assert ".gitignore" in held["user_dog.md"] and "*.md" in held["user_dog.md"], held
    assert "user_dog.md" in sm(victim, "sync")[1]


@pytest.mark.parametrize("rule", ["archive/", "*\n!.gitignore"])
def test_an_archived_memory_a_remote_gitignore_hides_is_named_not_dropped_in_silence(
    tmp_path: Path, rule: str,
) -> None:
    """A remote `.gitignore` hiding `archive/`: the victim's `archive` of a memory pushed its
    deletion and never the archived file, said nowhere (`pushed 1`, exit 0): every other
    machine lost the memory, archive and all. The archived memory is named with the rule, at
    every sync, as a memory git ignores is."""
    victim = ignoring_by_a_remote(tmp_path, rule)
    status, _, err = sm_process(victim, "archive", "user_cat", "--reason", "moved away")
    assert status == 0, err
    for _ in range(2):
        status, out, err = sm_process(victim, "sync")
        assert status == 0, err
        named = [line for line in out.splitlines() if line.startswith("not committed: archive")]
        assert len(named) == 1 and "ignored by git (.gitignore:" in named[0], out
        assert "repository of its own" not in named[0], named[0]


@pytest.mark.parametrize("rule", ["*", "team/", "/team"])
def test_a_folder_a_remote_gitignore_hides_whole_is_named_in_one_line(
    tmp_path: Path, rule: str,
) -> None:
    """A folder of memories that is a git repository of its own is named by sync (`a git
    repository of its own`); once a remote `.gitignore` rule ignores it whole, git names
    only the folder (`team/`), which is no memory's path, and sync said nothing: `pushed 0`,
    exit 0. It is named once, with the rule, as a memory git ignores is."""
    victim = ignoring_by_a_remote(tmp_path, rule)
    team = victim / "team"
    team.mkdir()
    subprocess.run(["git", "init", "--quiet", str(team)], check=True)
    write_memory(victim, "team/project_deploy", memory("Deploys on Tuesdays", "Tuesdays."))
    write_memory(victim, "team/notes/user_dog", memory("The dog is Rex", "Rex barks."))
    status, out, err = sm(victim, "sync", "--json")
    assert status == 0, (out, err)
    import json

    held = {h["path"]: h["reason"] for h in json.loads(out)["heldBack"]}
    assert list(held) == ["team/"], held
    assert f".gitignore:3: {rule}" in held["team/"] and "repository of its own" in held["team/"]
    lines = [line for line in sm(victim, "sync")[1].splitlines() if "team/" in line]
    assert len(lines) == 2 and lines[0].startswith("not committed: team/: ignored by git")


@pytest.mark.parametrize("name", [".GIT", ".git ", "GIT~1"])
def test_a_git_path_refused_when_fetched_is_named_with_its_commit(
    tmp_path: Path, name: str,
) -> None:
    """A tree holding `.GIT/config` (git's plumbing checks nothing) is refused by the fetch
    (`fetch.fsckObjects`), whose line named only an object id: `not synced: fetching origin
    failed: error: object 8013362…: hasDotgit: contains '.git'`. The summary names the
    path, why and the commit that brought it, for a machine that syncs and one that joins
    (whose summary said `no remote`); exit 0 as offline; nothing of it is kept."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    blob = subprocess.run(["git", "-C", str(attacker), "hash-object", "-w", "--stdin"],
                          input=b"[core]\n\tfsmonitor = touch pwned\n", capture_output=True,
                          check=True).stdout.decode().strip()
    inner = subprocess.run(["git", "-C", str(attacker), "mktree"],
                           input=f"100644 blob {blob}\tconfig\n".encode(), capture_output=True,
                           check=True).stdout.decode().strip()
    push_entry(attacker, f"040000 tree {inner}\t{name}\0".encode())
    commit = git(remote, "rev-parse", "--short", "main").strip()
    for folder in (victim, tmp_path / "joiner"):
        argv = ("sync",) if folder == victim else ("sync", "--remote", str(remote))
        status, out, err = sm(folder, *argv)
        assert status == 0 and "Traceback" not in err, (out, err)
        summary = out.splitlines()[-1]
        assert f"not synced: origin/main refused when fetched: {name} is a path" in summary, out
        assert "hasDotgit" in summary and f"from commit {commit} by Tester" in summary, out
        assert not (folder / name).exists() and not (tmp_path / "pwned").exists()
        state = MemoryFolder(folder).state_dir
        assert not [p for p in state.iterdir() if p.name.startswith("refused-")]


def test_log_names_the_terminal_escapes_a_remote_commit_holds_never_sends_them(
    tmp_path: Path,
) -> None:
    """A pushed commit's author, machine trailer and subject are the pusher's bytes: `log`
    printed an OSC title change, a screen clear and a hyperlink to the victim's terminal.
    Each control is named (`<U+001B>`); `--json` keeps the bytes, escaped by JSON."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    write_memory(attacker, "user_cat", memory("The cat is Sesame", "Sesame is orange, old."))
    subprocess.run(
        ["git", "-C", str(attacker), "commit", "--quiet", "-am",
         "edit\x1b[31mRED\x1b]8;;http://x.example\x07\n\nSage-Mem-Machine: lap\x1b[2Jtop"],
        check=True, env={**os.environ, "GIT_AUTHOR_NAME": "Mal\x1b]0;pwned\x07\x1b[2J"})
    git(attacker, "push", "--quiet", "origin", "HEAD")
    sync(victim)
    status, out, err = sm(victim, "log", "user_cat")
    assert status == 0, err
    newest = out.splitlines()[0]
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert "<U+001B>" in newest and "RED" in newest, newest
    status, out, err = sm(victim, "log", "user_cat", "--json")
    assert "Mal\x1b]0;pwned" in json.loads(out)[0]["author"]


@pytest.mark.parametrize(("change", "named"), [
    pytest.param("memory-md-a-folder", "MEMORY.md/user_x.md", id="memory-md-a-folder"),
    pytest.param("archive-a-file", "archive", id="archive-a-file"),
    pytest.param("gitignore-a-folder", ".gitignore/x", id="gitignore-a-folder"),
])
def test_a_remote_making_an_own_file_a_folder_or_the_archive_a_file_is_refused(
    tmp_path: Path, change: str, named: str
) -> None:
    """A pushed commit turning `MEMORY.md` into a folder was merged in silence (`pulled 1`,
    exit 0): from then on every `add` and `index` on every machine exited 1 and MEMORY.md
    was never written again; a file `archive` made every archive fail. Refused in one line
    naming the path and the commit, as a link is; the victim's index and archive still work."""
    victim = reshaped_by_a_remote(tmp_path, named)
    status, out, err = sm(victim, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1, (out, err)
    assert named in errors[0] and "undo that commit" in errors[0], errors[0]
    assert (victim / "MEMORY.md").is_file() and not (victim / "archive").is_file()
    status, _, err = sm(victim, "add", "user_fox", "--category", "user", "--description",
                        "The fox is Red", "--body", "Red is quick.")
    assert status == 0, err
    assert "user_fox" in (victim / "MEMORY.md").read_text(encoding="utf-8")
    status, _, err = sm(victim, "archive", "user_cat", "--reason", "moved away")
    assert status == 0, err


@pytest.mark.parametrize("attributes", [
    pytest.param("", id="sage-mem-s-attributes"),
    pytest.param("* merge=sage-mem diff=sage-mem\n", id="a-remote-routing-all-to-the-driver"),
])
def test_a_file_that_is_no_memory_changed_on_both_sides_keeps_both_sides_lines(
    tmp_path: Path, attributes: str
) -> None:
    """`.gitignore` changed here and by a plain clone was merged by the memory rules: this
    side's file kept, the other's lines only in `.gitignore.conflict-<machine>.md`, a file
    nothing reports (the audit said no problems). A file that is no memory is merged by
    lines, both sides' kept; no sibling is made for it."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    with (attacker / ".gitattributes").open("a", encoding="utf-8") as lines:
        lines.write(attributes)
    with (attacker / ".gitignore").open("a", encoding="utf-8") as lines:
        lines.write("theirs.log\n")
    git(attacker, "commit", "--quiet", "-am", "ignore a log")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    with (victim / ".gitignore").open("a", encoding="utf-8") as lines:
        lines.write("ours.log\n")
    result = sync(victim)
    assert result["conflicts"] == [], result
    ignore = (victim / ".gitignore").read_text(encoding="utf-8")
    assert "ours.log" in ignore and "theirs.log" in ignore and "<<<<<<<" not in ignore
    assert not list(victim.glob(".gitignore.conflict*"))
    assert "theirs.log" in git(remote, "show", "main:.gitignore")


def test_memory_md_names_the_terminal_escapes_a_remote_description_holds(
    tmp_path: Path,
) -> None:
    """A pushed memory whose description holds an OSC title change (`\\e]0;…\\a`, a YAML
    escape) put the raw bytes into MEMORY.md, the index agents load and people `cat`
    (`list` and `show` already named them). Named there too: `<U+001B>`."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    (attacker / "user_cat.md").write_text(
        '---\ndescription: "The cat \\e]0;pwned\\a\\u202e is Sesame"\ncategory: user\n---\n\n'
        "Sesame is orange.\n", encoding="utf-8")
    git(attacker, "commit", "--quiet", "-am", "retitle")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    sync(victim)
    index = (victim / "MEMORY.md").read_text(encoding="utf-8")
    assert "\x1b" not in index and "\x07" not in index and "\u202e" not in index, index
    assert "The cat <U+001B>]0;pwned<U+0007><U+202E> is Sesame" in index, index
    assert "\x1b" not in git(remote, "show", "main:MEMORY.md")


def test_a_remote_file_over_what_sync_reads_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    """A memory grown past 8 MB by a plain clone was read whole by the merge: a 230 MB one
    took 1.4 GB of memory and 10 s of CPU, a 2 GB one all the machine has. Refused from its
    size (`git cat-file --batch-check`, nothing read), in one line naming it and its commit;
    the victim's own edit of it stays."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    (attacker / "user_cat.md").write_text(
        memory("The cat is Sesame", "Sesame.\n" + "x" * 80 + "\n") + "y" * (9 << 20),
        encoding="utf-8")
    git(attacker, "commit", "--quiet", "-am", "grow")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    write_memory(victim, "user_cat", memory("The cat is Sesame", "Sesame is old."))
    status, out, err = sm(victim, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1, (out, err)
    assert "user_cat.md is 9 MB, over what sync reads (8 MB)" in errors[0], errors[0]
    assert "undo that commit" in errors[0]
    assert (victim / "user_cat.md").stat().st_size < 1000
    assert not list(victim.glob("user_cat.conflict*"))


@pytest.mark.parametrize(("change", "named"), [
    pytest.param("memory-md-a-folder", "MEMORY.md/user_x.md", id="memory-md-a-folder"),
    pytest.param("archive-a-file", "archive", id="archive-a-file"),
])
def test_an_own_file_reshaped_by_a_plain_git_pull_stops_sync_saying_what_to_run(
    tmp_path: Path, change: str, named: str
) -> None:
    """The same reshaping brought by a plain `git pull` (never through sync's check of what
    it merges): sync said `pulled 0, pushed 0`, exit 0, while every `add` failed ("a folder
    and a file would share this name"). Sync stops, in one line naming the path and what to
    run, as it does for a gitlink already in the branch."""
    victim = reshaped_by_a_remote(tmp_path, named)
    git(victim, "pull", "--quiet", "--no-rebase", "origin", "main")
    top = named.split("/")[0]
    status, out, err = sm(victim, "sync")
    errors = [line for line in err.splitlines() if "error" in line]
    assert status == 1 and len(errors) == 1 and "Traceback" not in err, (out, err)
    assert f"{top} is a" in errors[0] and "git mv" in errors[0], errors[0]


def test_a_tag_named_head_from_the_remote_never_stands_for_this_branch(tmp_path: Path) -> None:
    """Anyone who can push a tag named `HEAD` to the remote (fetched with the commits it
    points at) made `git push origin HEAD:refs/heads/main` push the tag's commit, not the
    branch: at the remote's own commit, sync said `pushed 1` and pushed nothing, at every
    sync of every machine (behind it, every sync `lost the race with another machine 3
    times`). Sync pushes its branch by its full name."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    write_memory(attacker, "user_dog", memory("The dog is Rex", "Rex barks."))
    git(attacker, "add", "-A")
    git(attacker, "commit", "--quiet", "-m", "a dog")
    git(attacker, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    git(attacker, "push", "--quiet", "origin", "main:refs/tags/HEAD")
    write_memory(victim, "user_fox", memory("The fox is Vixen", "Vixen runs."))
    status, out, err = sm_process(victim, "sync", "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["offline"] is None, result["offline"]
    assert "user_fox" in result["pushed"], result
    assert git(remote, "rev-parse", "refs/heads/main") == git(victim, "rev-parse", "HEAD")
    assert "user_fox.md" in git(remote, "ls-tree", "--name-only", "main")


@pytest.mark.parametrize("theirs_edits", [
    pytest.param((-3,), id="near-the-end"),
    pytest.param((2, -3), id="first-and-last"),
])
def test_a_memory_of_many_repeated_lines_changed_on_both_sides_merges_in_bounded_time(
    tmp_path: Path, theirs_edits: tuple[int, ...]
) -> None:
    """A body of 40,000 lines repeating two texts (`x` and a blank line: 80 KB, a tenth of
    what `add` takes) changed here and by the remote: the line merge compared every line
    with every line equal to it (difflib without its junk heuristic), 35 s of CPU at
    20,000 lines and four times that at twice as many: the sync hung. Merged in bounded
    time; where the changes cannot be lined up cheaply, both versions are kept (theirs as
    the conflict sibling), nothing lost."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    lines = ["x", ""] * 20_000
    write_memory(victim, "user_log", memory("A long log", "\n".join(lines)))
    sync(victim)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    path = attacker / "user_log.md"
    theirs = path.read_text(encoding="utf-8").split("\n")
    body = theirs.index("x")
    for at in theirs_edits:
        theirs[body + at if at > 0 else at] = "theirs"
    path.write_text("\n".join(theirs), encoding="utf-8")
    git(attacker, "commit", "--quiet", "-am", "theirs")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    ours = (victim / "user_log.md").read_text(encoding="utf-8").split("\n")
    ours[body + 20_000] = "ours"  # the middle
    (victim / "user_log.md").write_text("\n".join(ours), encoding="utf-8")
    status, out, err = sm_process(victim, "sync")  # times out (120 s) without the bound
    assert status == 0, err
    merged = (victim / "user_log.md").read_text(encoding="utf-8")
    assert "ours" in merged
    siblings = list(victim.glob("user_log.conflict-*.md"))
    if theirs_edits == (-3,):
        assert "theirs" in merged and not siblings
    else:
        assert len(siblings) == 1 and siblings[0].read_text(encoding="utf-8").count("theirs") == 2


def test_a_memory_given_many_keys_by_the_remote_merges_in_bounded_time(
    tmp_path: Path,
) -> None:
    """A memory the remote gave 20,000 frontmatter keys (200 KB) while this machine changed
    its description: the merge wrote each key by finding every key's lines again, and put
    each one in order by searching the list of keys (4,000 keys: 10 s of CPU, 40,000: over
    ten minutes), and the sync hung. Both are one pass now; both changes are kept."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    keys = "".join(f"k{i}: {i}\n" for i in range(20_000))
    (attacker / "user_cat.md").write_text(
        f"---\ndescription: The cat is Sesame\ncategory: user\n{keys}---\n\nSesame is orange.\n",
        encoding="utf-8")
    git(attacker, "commit", "--quiet", "-am", "many keys")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    status, _, err = sm(victim, "add", "user_cat", "--description", "The cat is Sesame, 4")
    assert status == 0, err
    status, out, err = sm_process(victim, "sync")  # times out (120 s) before
    assert status == 0, err
    merged = (victim / "user_cat.md").read_text(encoding="utf-8")
    assert "description: The cat is Sesame, 4\n" in merged and "\nk19999: 19999\n" in merged
    assert not list(victim.glob("user_cat.conflict-*"))


def test_a_memory_nested_deep_changed_on_both_sides_is_kept_both_ways_not_a_traceback(
    tmp_path: Path,
) -> None:
    """A frontmatter value nested 600 mappings deep (the parser takes up to ~1,000) changed by
    the remote while this machine changed the description: comparing the two values key by
    key recursed past Python's limit and every sync ended in a RecursionError's traceback.
    The memory is merged as text instead, both versions kept."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    deep = "x: " + "{a: " * 600 + "1" + "}" * 600 + "\n"
    write_memory(victim, "user_cat", "---\ndescription: The cat is Sesame\ncategory: user\n"
                 + deep + "---\n\nSesame is orange.\n")
    sync(victim)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    path = attacker / "user_cat.md"
    path.write_text(path.read_text(encoding="utf-8").replace("{a: 1}", "{a: 2}"),
                    encoding="utf-8")
    git(attacker, "commit", "--quiet", "-am", "deeper")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    path = victim / "user_cat.md"
    path.write_text(path.read_text(encoding="utf-8").replace("is Sesame", "is Sesame, 4"),
                    encoding="utf-8")
    status, out, err = sm_process(victim, "sync")
    assert status == 0, err
    assert "is Sesame, 4" in path.read_text(encoding="utf-8")
    kept = "".join(p.read_text(encoding="utf-8") for p in victim.glob("user_cat*.md"))
    assert "{a: 2}" in kept
    assert git(victim, "status", "--porcelain") == ""


def test_a_remote_gitattributes_that_filters_memories_is_refused_and_wedges_nothing(
    tmp_path: Path,
) -> None:
    """`filter=lfs` from the remote runs a program of this machine's git config (git-lfs's,
    set up once for other work) on every memory checked out or committed: installed, it
    stores the memories as pointer files that a machine without it reads as its memories;
    gone, with `required` set, sync's checkout failed, and then `git status` too, at every
    sync after (the folder wedged). Refused before the merge, in one line, as a re-encoding
    is; the folder's own syncs go on."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    with Path(os.environ["GIT_CONFIG_GLOBAL"]).open("a", encoding="utf-8") as config:
        config.write('[filter "lfs"]\n\tclean = git-lfs-gone clean -- %f\n'
                     "\tsmudge = git-lfs-gone smudge -- %f\n\trequired = true\n")
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    with (attacker / ".gitattributes").open("a", encoding="utf-8") as lines:
        lines.write("*.md filter=lfs diff=lfs merge=lfs -text\n")
    git(attacker, "-c", "filter.lfs.required=false", "commit", "--quiet", "-am", "lfs")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    write_memory(victim, "user_fox", memory("The fox is Vixen", "Vixen runs."))
    for _ in range(2):
        status, out, err = sm_process(victim, "sync")
        errors = [line for line in err.splitlines() if "error" in line]
        assert status == 1 and len(errors) == 1, (out, err)
        assert ".gitattributes sets filter" in errors[0], errors[0]
        assert "remove that line" in errors[0] and "not found" not in errors[0], errors[0]
    assert "user_fox.md" in git(victim, "ls-tree", "--name-only", "HEAD")
    assert git(victim, "status", "--porcelain") == ""


def test_a_file_name_holding_terminal_escapes_from_the_remote_is_named_where_shown(
    tmp_path: Path,
) -> None:
    """A memory file named `user_\\e]0;pwned\\a.md` (an escape that sets the terminal's title;
    others write its clipboard) came in by sync and was printed raw by `audit` (the path
    before each finding), `index` (`skipped: …`) and `doctor`: `list`, `log` and MEMORY.md
    already named its controls. Named there too (`<U+001B>`)."""
    remote = bare_remote(tmp_path)
    victim = victim_folder(tmp_path, remote)
    attacker = tmp_path / "attacker"
    clone(remote, attacker)
    (attacker / "user_\x1b]0;pwned\x07.md").write_text(memory("A title", "x"), encoding="utf-8")
    git(attacker, "add", "-A")
    git(attacker, "commit", "--quiet", "-m", "a name")
    git(attacker, "push", "--quiet", "origin", "HEAD")
    assert sm_process(victim, "sync")[0] == 0
    for command in (["audit"], ["index"], ["doctor"], ["search", "title"], ["list"]):
        _, out, err = sm_process(victim, *command)
        assert "\x1b" not in out + err and "\x07" not in out + err, (command, out + err)
    _, out, _ = sm_process(victim, "audit")
    assert "user_<U+001B>]0;pwned<U+0007>.md: unsafe-name" in out, out
