"""The commands a person uses on their memory (issue 17, item 4), run as a person runs them.

`edit` with a real editor process ($EDITOR is a small script), `restore`,
`mv`, `delete` (confirmation on stdin or `--yes`), `export` then `import
jsonl` (a round trip, byte for byte), `list --archived` with the reasons, and
`runs --json` in the order the text lists. Every command runs as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import write_memory


def sage(folder: Path, *argv: str, stdin: str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), *argv],
        input=stdin if stdin is not None else "", capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


AWS_KEY = "AK" + "IA" + "Q7ZK3M2XW5RT9PLB"  # split so that no scanner takes this file for one
CAT = "---\ndescription: The cat is called Sesame\ncategory: user\n---\n\nOrange, loud.\n"


@pytest.fixture
def folder(empty_dir: Path) -> Path:
    write_memory(empty_dir, "user_cat", CAT)
    write_memory(empty_dir, "user_home", (
        "---\ndescription: Where the user lives\ncategory: user\n---\n\n"
        "Lives with [[user_cat]] and [the cat](user_cat.md).\n"
    ))
    write_memory(empty_dir, "user_猫",
                 "---\ndescription: 猫叫芝麻\ncategory: user\n---\n\n橘猫。\n")
    return empty_dir


def editor(tmp_path: Path, code: str) -> dict[str, str]:
    """$EDITOR as a script: `code` runs with `path` (the file to edit) and `memory` (the folder)."""
    script = tmp_path / "editor.py"
    script.write_text("import sys, pathlib\npath = pathlib.Path(sys.argv[1])\n"
                      + textwrap.dedent(code), encoding="utf-8")
    return {"EDITOR": f"{sys.executable} {script}", "VISUAL": ""}


def drafts(folder: Path) -> list[Path]:
    state = folder.parent / f".{folder.name}.sage-mem" / "edits"
    return sorted(state.iterdir()) if state.is_dir() else []


# edit


def test_edit_saves_what_the_editor_wrote(folder: Path, tmp_path: Path) -> None:
    env = editor(tmp_path, """
        path.write_text(path.read_text().replace("Orange, loud.", "Orange, loud. 很吵。"))
    """)
    done = sage(folder, "edit", "user_cat", env=env)
    assert done.returncode == 0, done.stderr
    assert "Saved user_cat" in done.stdout
    assert (folder / "user_cat.md").read_text() == CAT.replace("loud.", "loud. 很吵。")
    assert drafts(folder) == []  # the draft is gone once saved
    assert "user_cat" in sage(folder, "search", "很吵").stdout


def test_edit_that_no_longer_parses_is_reported_and_kept(folder: Path, tmp_path: Path) -> None:
    env = editor(tmp_path, """
        path.write_text("---\\ndescription: [unclosed\\ncategory: user\\n---\\n\\nMy long edit.\\n")
    """)
    done = sage(folder, "edit", "user_cat", env=env)
    assert done.returncode == 1
    assert "not saved" in done.stderr and "would not read back" in done.stderr
    assert (folder / "user_cat.md").read_text() == CAT  # the memory as it was
    (draft,) = drafts(folder)
    assert str(draft) in done.stderr
    assert draft.read_text().endswith("My long edit.\n")  # the person's text, never lost
    assert oct(draft.stat().st_mode & 0o777) == "0o600"


def test_edit_never_overwrites_a_change_made_while_the_editor_was_open(
    folder: Path, tmp_path: Path
) -> None:
    env = editor(tmp_path, f"""
        pathlib.Path({str(folder / "user_cat.md")!r}).write_text({CAT!r} + "An agent's line.\\n")
        path.write_text(path.read_text() + "My line.\\n")
    """)
    done = sage(folder, "edit", "user_cat", env=env)
    assert done.returncode == 1 and "changed on disk" in done.stderr
    assert (folder / "user_cat.md").read_text().endswith("An agent's line.\n")
    (draft,) = drafts(folder)
    assert draft.read_text().endswith("My line.\n")


def test_edit_without_changes_and_with_a_failing_editor(folder: Path, tmp_path: Path) -> None:
    done = sage(folder, "edit", "user_cat", env=editor(tmp_path, "pass\n"))
    assert done.returncode == 0 and "No changes" in done.stdout and drafts(folder) == []
    done = sage(folder, "edit", "user_cat", env=editor(tmp_path, "sys.exit(3)\n"))
    assert done.returncode == 1 and "status 3" in done.stderr
    done = sage(folder, "edit", "user_nobody", env=editor(tmp_path, "pass\n"))
    assert done.returncode == 1 and "no memory 'user_nobody'" in done.stderr
    missing = sage(folder, "edit", "user_cat", env={"EDITOR": "no-such-editor-here", "VISUAL": ""})
    assert missing.returncode == 1 and "cannot start the editor" in missing.stderr
    assert (folder / "user_cat.md").read_text() == CAT



def test_what_the_editor_left_is_read_through_the_checked_read(
    folder: Path, tmp_path: Path
) -> None:
    """An editor (or a script as $EDITOR) that leaves a FIFO where the draft was: its read
    waited for a writer for ever. One line now, the memory as it was."""
    env = editor(tmp_path, """
        import os
        path.unlink()
        os.mkfifo(path)
    """)
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "edit", "user_cat"],
        input="", capture_output=True, text=True, timeout=30, env={**os.environ, **env},
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "not saved" in done.stderr and "not a regular file" in done.stderr, done.stderr
    assert (folder / "user_cat.md").read_text() == CAT


# archive, list --archived, restore, delete


def test_list_archived_shows_each_reason_and_restore_brings_it_back(folder: Path) -> None:
    assert sage(folder, "archive", "user_cat", "--reason", "the cat moved out").returncode == 0
    text = sage(folder, "list", "--archived").stdout
    (line,) = [line for line in text.splitlines() if line.startswith("archive/user_cat")]
    assert line.endswith(": the cat moved out") and "archived 20" in line
    listed = json.loads(sage(folder, "list", "--archived", "--json").stdout)["memories"]
    (entry,) = [m for m in listed if m["id"] == "archive/user_cat"]
    assert entry["archiveReason"] == "the cat moved out" and entry["archived"]
    assert "archiveReason" not in next(m for m in listed if m["id"] == "user_home")

    done = sage(folder, "restore", "archive/user_cat")
    assert done.returncode == 0 and "Restored user_cat" in done.stdout
    assert (folder / "user_cat.md").exists() and not (folder / "archive" / "user_cat.md").exists()
    again = sage(folder, "restore", "user_cat")
    assert again.returncode == 1 and "no archived memory" in again.stderr


def test_delete_asks_first_and_deletes_only_on_yes(folder: Path) -> None:
    sage(folder, "archive", "user_cat", "--reason", "the cat moved out")
    archived = folder / "archive" / "user_cat.md"
    no = sage(folder, "delete", "archive/user_cat", stdin="n\n")
    assert no.returncode == 1 and "Not deleted" in no.stderr and archived.exists()
    assert "the cat moved out" in no.stderr  # what is about to go is shown first
    silent = sage(folder, "delete", "archive/user_cat")  # no answer at all: not deleted
    assert silent.returncode == 1 and archived.exists()
    yes = sage(folder, "delete", "user_cat", stdin="y\n")
    assert yes.returncode == 0 and "Deleted archive/user_cat" in yes.stdout
    assert not archived.exists()


def test_delete_with_yes_and_its_refusals(folder: Path) -> None:
    refused = sage(folder, "delete", "user_cat", "--yes")
    assert refused.returncode == 1 and "archive it first" in refused.stderr
    assert (folder / "user_cat.md").read_text() == CAT
    sage(folder, "archive", "user_猫", "--reason", "送人了")
    done = sage(folder, "delete", "archive/user_猫", "--yes", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["id"] == "archive/user_猫"
    gone = sage(folder, "delete", "archive/user_猫", "--yes")
    assert gone.returncode == 1 and "no memory" in gone.stderr


# mv


def test_mv_renames_and_links_follow(folder: Path) -> None:
    done = sage(folder, "mv", "user_cat", "pets/cat", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["id"], result["oldId"], result["relinked"]) == (
        "pets/cat", "user_cat", ["user_home"]
    )
    assert (folder / "user_home.md").read_text().endswith(
        "Lives with [[pets/cat]] and [the cat](pets/cat.md).\n"
    )
    assert (folder / "pets" / "cat.md").read_text() == CAT
    taken = sage(folder, "mv", "pets/cat", "user_猫")
    assert taken.returncode == 1 and "not overwritten" in taken.stderr
    assert sage(folder, "audit").returncode == 0


# export and import jsonl


def memory_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*.md")) if p.name != "MEMORY.md"}


def test_export_then_import_jsonl_makes_the_same_files(folder: Path, tmp_path: Path) -> None:
    write_memory(folder, "project/odd", (
        "---\n# a comment the export must keep\ndescription: Odd layout\ncategory: project\n"
        "customKey: kept\n---\nNo blank line, and the body keeps its bytes.\n"
    ))
    sage(folder, "archive", "user_猫", "--reason", "送人了")
    export = tmp_path / "memories.jsonl"
    done = sage(folder, "export", "--archived", "-o", str(export))
    assert done.returncode == 0, done.stderr
    lines = export.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and all(json.loads(line)["file"] for line in lines)

    copy = tmp_path / "copy"
    copy.mkdir()
    dry = sage(copy, "import", "jsonl", str(export), "--dry-run")
    assert dry.returncode == 0 and "4 would import" in dry.stdout and memory_files(copy) == {}
    done = sage(copy, "import", "jsonl", str(export))
    assert done.returncode == 0 and "4 imported" in done.stdout, done.stdout
    assert memory_files(copy) == memory_files(folder)
    assert "user_home.md" in (copy / "MEMORY.md").read_text()
    again = sage(copy, "import", "jsonl", str(export))
    assert "4 already present" in again.stdout and memory_files(copy) == memory_files(folder)

    # stdout by default, JSON lines without --jsonl; the same lines
    streamed = sage(folder, "export", "--archived")
    assert streamed.returncode == 0 and streamed.stdout.splitlines() == lines


def test_import_jsonl_from_another_tool_and_bad_lines(empty_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "other.jsonl"
    source.write_text("\n".join([
        json.dumps({"id": "user_tea", "description": "Drinks green tea", "category": "user",
                    "body": "Every morning.", "tags": ["drink"], "created": "2025-03-01",
                    "updated": "2025-03-02T08:00:00Z"}),
        "not json",
        json.dumps({"description": "no id"}),
        json.dumps({"id": "../escape", "description": "x"}),
        json.dumps({"id": "user_key", "description": "A key",
                    "body": "key: " + AWS_KEY}),
        json.dumps({"id": "user_tea", "description": "Someone else's tea"}),
    ]) + "\n", encoding="utf-8")
    done = sage(empty_dir, "import", "jsonl", str(source), "--json")
    # A partial import fails, saying in one line how many lines and which; what it
    # imported stays.
    assert done.returncode == 1, done.stderr
    assert done.stderr == ("sage-mem: error: 4 of 6 lines could not be imported (line 2, "
                           "line 3, line 4, line 5); what was imported is kept\n")
    items = json.loads(done.stdout)["items"]
    assert [item["status"] for item in items] == [
        "imported", "invalid", "invalid", "invalid", "invalid", "skipped",
    ]
    assert "--allow-secret" in items[4]["detail"]
    tea = json.loads(sage(empty_dir, "show", "user_tea", "--json").stdout)
    assert (tea["created"], tea["updated"], tea["tags"]) == (
        "2025-03-01", "2025-03-02T08:00:00Z", ["drink"]
    )
    allowed = sage(empty_dir, "import", "jsonl", "-", "--allow-secret",
                   stdin=source.read_text(encoding="utf-8").splitlines()[4] + "\n")
    assert "1 imported" in allowed.stdout and (empty_dir / "user_key.md").exists()
    assert allowed.returncode == 0 and allowed.stderr == ""


def test_import_jsonl_says_a_date_it_could_not_use(empty_dir: Path) -> None:
    """A `created` at the calendar's edge (no time sage-mem can hold) was replaced by today
    without a word; the line is imported and its item says what was not used."""
    line = json.dumps({"id": "user_edge", "description": "At the edge", "category": "user",
                       "created": "9999-12-31T23:59:59-23:59", "updated": "不是日期"})
    done = sage(empty_dir, "import", "jsonl", "-", "--json", stdin=line + "\n")
    assert done.returncode == 0, done.stderr
    [item] = json.loads(done.stdout)["items"]
    assert item["status"] == "imported"
    assert "created '9999-12-31T23:59:59-23:59' is not a time" in item["detail"]
    assert "updated '不是日期' is not a time" in item["detail"]


# runs --json


def test_runs_json_lists_runs_in_the_order_of_the_text(memory_dir: Path) -> None:
    for _ in range(3):
        assert sage(memory_dir, "dream").returncode == 0
    text = sage(memory_dir, "runs").stdout
    listed = json.loads(sage(memory_dir, "runs", "--json").stdout)["runs"]
    assert len(listed) == 3
    positions = [text.index(run["runId"]) for run in listed]
    assert positions == sorted(positions)
    assert listed[0]["runId"] == max(run["runId"] for run in listed)  # newest first


def test_edit_refuses_a_locked_memory_before_opening_the_editor(
    folder: Path, tmp_path: Path
) -> None:
    locked = CAT.replace("category: user\n", "category: user\nlocked: true\n")
    write_memory(folder, "user_cat", locked)
    env = editor(tmp_path, "path.write_text('changed')\n")
    done = sage(folder, "edit", "user_cat", env=env)
    assert done.returncode == 1 and "locked" in done.stderr
    assert (folder / "user_cat.md").read_text() == locked and drafts(folder) == []


@pytest.mark.parametrize("argv", [
    pytest.param(["--dir", "", "add", "user_dog", "--description", "A dog"], id="add-before"),
    pytest.param(["add", "user_dog", "--description", "一只狗", "--dir="], id="add-after"),
    pytest.param(["--dir", "", "archive", "user_cat", "--reason", "old"], id="archive"),
    pytest.param(["--dir=", "delete", "user_cat", "--yes"], id="delete"),
    pytest.param(["--dir", "", "list"], id="list"),
    pytest.param(["--dir", "", "install", "cursor", "--dry-run"], id="install"),
])
def test_an_empty_dir_is_a_one_line_error_for_a_person(folder: Path, tmp_path: Path,
                                                       argv: list[str]) -> None:
    """`--dir ""` (an unset shell variable, `--dir "$DIR"`) names no folder: a person's
    command says so and changes nothing, rather than acting on the default folder."""
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    done = subprocess.run([sys.executable, "-m", "sage_mem", *argv], input="",
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "SAGE_MEM_DIR": str(folder), "HOME": str(tmp_path)})
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("sage-mem: error: --dir is empty"), done.stderr
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before


def test_an_empty_dir_on_the_hook_path_still_means_the_default_folder(folder: Path,
                                                                     tmp_path: Path) -> None:
    """A hook exits 0 whatever its command line, and reads `--dir ""` as the default folder:
    an agent's config with an empty variable still gets its memories."""
    for argv in (["--dir", "", "hook", "session-start"], ["hook", "session-start", "--dir="],
                 ["--dir", "", "--json", "hook", "session-start"]):
        done = subprocess.run([sys.executable, "-m", "sage_mem", *argv], input="{}",
                              capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env={**os.environ, "SAGE_MEM_DIR": str(folder),
                                   "HOME": str(tmp_path)})
        assert done.returncode == 0 and "Traceback" not in done.stderr, (argv, done.stderr)
