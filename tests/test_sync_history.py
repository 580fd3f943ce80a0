"""A memory's history through renames and the archive (`log ID`, `show ID@REV`), real git."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import write_memory
from sync_support import git, memory, sm, sync, use_private_git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """`user_cat` in three versions: written, edited, then renamed to `user_pet` and edited."""
    folder = tmp_path / "memory"
    status, _, err = sm(folder, "init", "--git")
    assert status == 0, err
    write_memory(folder, "user_cat", memory("The cat is Sesame", "She is three."))
    sync(folder, online=False)
    write_memory(folder, "user_cat", memory("The cat is Sesame", "She is four."))
    sync(folder, online=False)
    assert sm(folder, "mv", "user_cat", "user_pet")[0] == 0
    sync(folder, online=False)
    return folder


def versions(folder: Path, memory_id: str) -> list[dict[str, str]]:
    status, out, err = sm(folder, "log", memory_id, "--json")
    assert status == 0, err
    found: list[dict[str, str]] = json.loads(out)
    return found


def shown(folder: Path, name: str) -> dict[str, str]:
    status, out, err = sm(folder, "show", name, "--json")
    assert status == 0, err
    found: dict[str, str] = json.loads(out)
    return found


def test_log_names_the_path_each_version_had(folder: Path) -> None:
    found = versions(folder, "user_pet")
    assert [v["path"] for v in found] == ["user_pet.md", "user_cat.md", "user_cat.md"]


def test_show_reads_a_version_from_before_a_rename(folder: Path) -> None:
    found = versions(folder, "user_pet")
    old = shown(folder, f"user_pet@{found[1]['rev']}")
    assert "She is four." in old["body"] and old["id"] == "user_cat"
    first = shown(folder, f"user_pet@{found[2]['rev']}")
    assert "She is three." in first["body"]
    assert "She is four." in shown(folder, "user_pet@HEAD")["body"]


def test_show_reads_a_version_from_before_the_archive(folder: Path) -> None:
    assert sm(folder, "archive", "user_pet", "--reason", "moved away")[0] == 0
    sync(folder, online=False)
    found = versions(folder, "user_pet")
    assert [v["path"] for v in found][:2] == ["archive/user_pet.md", "user_pet.md"]
    before = shown(folder, "user_pet@HEAD~1")
    assert "She is four." in before["body"] and before["id"] == "user_pet"
    assert shown(folder, f"archive/user_pet@{found[2]['rev']}")["id"] == "user_cat"


def test_show_never_reads_another_memory_that_took_the_old_name(folder: Path) -> None:
    write_memory(folder, "user_cat", memory("A new cat, Pepper", "Someone else."))
    sync(folder, online=False)
    found = versions(folder, "user_pet")
    at_rename = shown(folder, f"user_pet@{found[0]['rev']}")
    assert "She is four." in at_rename["body"]
    assert "She is four." in shown(folder, "user_pet@HEAD")["body"]  # not Pepper
    root = git(folder, "rev-list", "--max-parents=0", "HEAD").strip()
    status, _, err = sm(folder, "show", f"user_pet@{root}")
    assert status == 1 and "not in" in err  # before it was written


def test_log_and_show_of_a_shared_folder_by_its_name(tmp_path: Path, folder: Path) -> None:
    config = tmp_path / "home" / ".config" / "sage-mem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    personal = tmp_path / "personal"
    assert sm(personal, "init")[0] == 0
    config.write_text(f'[personal]\npath = "{personal}"\n\n[shared.team]\npath = "{folder}"\n',
                      encoding="utf-8")
    assert versions(personal, "team:user_pet") == versions(folder, "user_pet")
    rev = versions(folder, "user_pet")[1]["rev"]
    assert "She is four." in shown(personal, f"team:user_pet@{rev}")["body"]
    status, _, err = sm(personal, "log", "user_pet")
    assert status == 1 and "not a git repository" in err
