"""`sage-mem init` and `sage-mem export` as a person runs them: real processes, real files.

`init` makes an empty memory folder: example memories only with `--examples`,
and then marked as examples and never injected as facts about the user.
`export` names every file it leaves out and writes a private file. Nothing
`init`, `import` or `export` creates can be read by others, whatever the umask,
unless the owner made the memory folder shared with a group.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "memory_template"
TEMPLATE_IDS = sorted(p.stem for p in TEMPLATE.glob("*.md"))


def sage_mem(*argv: object, stdin: str | None = None, umask: int | None = None
             ) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process (with `umask`, under that umask)."""

    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", *map(str, argv)],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=dict(os.environ), preexec_fn=set_umask,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


# export


def broken_files(folder: Path) -> dict[str, bytes]:
    files = {
        "broken.md": b"---\ndescription: [unclosed\n---\nbody\n",
        "latin1.md": b"---\ndescription: caf\xe9\n---\n",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def test_export_names_each_file_it_cannot_parse_and_exits_1(memory_dir: Path) -> None:
    broken_files(memory_dir)

    result = sage_mem("--dir", memory_dir, "export", "--jsonl")

    assert result.returncode == 1
    exported = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert exported == TEMPLATE_IDS
    for name in ("broken.md", "latin1.md"):
        (line,) = [line for line in result.stderr.splitlines() if name in line]
        assert "not exported" in line
    assert "2 files" in result.stderr


def test_export_without_problems_exits_0_and_says_nothing(memory_dir: Path) -> None:
    result = sage_mem("--dir", memory_dir, "export", "--jsonl")

    assert result.returncode == 0 and result.stderr == ""
    assert len(result.stdout.splitlines()) == len(TEMPLATE_IDS)


@pytest.mark.parametrize("to_file", [
    pytest.param(False, id="stdout"),
    pytest.param(True, id="output-file"),
])
def test_export_json_report_lists_what_was_left_out(
    memory_dir: Path, tmp_path: Path, to_file: bool
) -> None:
    broken_files(memory_dir)
    target = tmp_path / "export.jsonl"

    result = sage_mem("--dir", memory_dir, "export", "--jsonl", "--json",
                      *(["-o", target] if to_file else []))

    assert result.returncode == 1
    report = json.loads(result.stdout if to_file else result.stderr)
    exported = (target.read_text(encoding="utf-8") if to_file else result.stdout).splitlines()
    assert report["exported"] == len(exported) == len(TEMPLATE_IDS)
    assert report["output"] == (str(target) if to_file else None)
    assert [item["path"] for item in report["leftOut"]] == ["broken.md", "latin1.md"]
    assert all(item["problem"] for item in report["leftOut"])


@pytest.mark.parametrize("archived", [
    pytest.param(False, id="plain"),
    pytest.param(True, id="archived"),
])
def test_export_reports_an_unparseable_archived_file_only_with_archived(
    memory_dir: Path, archived: bool
) -> None:
    (memory_dir / "archive").mkdir()
    (memory_dir / "archive" / "old.md").write_bytes(b"---\ndescription: [unclosed\n---\n")

    result = sage_mem("--dir", memory_dir, "export", "--jsonl",
                      *(["--archived"] if archived else []))

    assert result.returncode == (1 if archived else 0)
    assert ("archive/old.md" in result.stderr) == archived


def test_export_file_is_private_whatever_the_umask(memory_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"

    result = sage_mem("--dir", memory_dir, "export", "--jsonl", "-o", target, umask=0)

    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert len(target.read_text(encoding="utf-8").splitlines()) == len(TEMPLATE_IDS)
    assert f"Exported {len(TEMPLATE_IDS)} memories to {target}" in result.stderr


def test_export_never_replaces_an_existing_file(memory_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("keep me\n", encoding="utf-8")

    result = sage_mem("--dir", memory_dir, "export", "--jsonl", "-o", target)

    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "exists" in result.stderr
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert list(tmp_path.glob(".export.jsonl*")) == []  # no temp file left either
