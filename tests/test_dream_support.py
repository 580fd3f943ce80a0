"""Builders for the dream tests (no tests here): memories by hand, folders, a run's manifest."""

from __future__ import annotations

import io
import json
import os
import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from support import write_memory

from sage_mem.memory.file_format import dump_value


def memory_text(description: str, body: str = "", **meta: object) -> str:
    """A memory file as a person writes it: frontmatter in the given order, blank line, body."""
    fields = {"description": description, **meta}
    front = "".join(dump_value(key, value) for key, value in fields.items())
    return f"---\n{front}---\n\n{body}\n" if body else f"---\n{front}---\n"


def add(folder: Path, memory_id: str, description: str, body: str = "", **meta: object) -> Path:
    """Write one memory file by hand (created/updated only when given)."""
    return write_memory(folder, memory_id, memory_text(description, body, **meta))


def folder_bytes(folder: Path, *, skip: tuple[str, ...] = ("autodream",)) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes), but for top-level folders in `skip`."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        rel_dir = os.path.relpath(dirpath, folder)
        if rel_dir.split(os.sep)[0] in skip:
            dirnames[:] = []
            continue
        for name in filenames:
            path = Path(dirpath) / name
            found[os.path.relpath(path, folder).replace(os.sep, "/")] = path.read_bytes()
    return found


def live_bytes(folder: Path) -> dict[str, bytes]:
    """The files in service: everything but archive/ and autodream/."""
    return folder_bytes(folder, skip=("autodream", "archive"))


def read_manifest(result: Any) -> dict[str, Any]:
    """The manifest.json a dream run wrote (`result` is what `run_dream` returned)."""
    return json.loads(Path(result.manifest).read_text(encoding="utf-8"))


def corpus_run(build: Callable[[Path], None], folder: Path, mode: str,
               now: datetime) -> dict[str, Any]:
    """`build` the corpus in `folder`, run the dream over it, and its manifest."""
    from sage_mem.dream import run_dream
    from sage_mem.store import MemoryStore

    build(folder)
    return read_manifest(run_dream(MemoryStore(folder, watch=False), mode=mode, now=now))


def assert_stamps_kept(run: dict[str, Any]) -> None:
    """Every memory of a `cli_rewrite_and_rollback` run, archived or not, kept its `created`,
    `updated` and `modified` lines."""
    for name, data in run["before"].items():
        if name == "MEMORY.md":
            continue
        now = run["after"].get(name) or run["after"][f"archive/{name}"]
        assert stamps(now) == stamps(data), name


def stamps(data: bytes) -> list[str]:
    """The `created`, `updated` and `modified` lines of a memory file's frontmatter."""
    head = data.decode("utf-8").split("\n---", 1)[0]
    return re.findall(r"^(?:created|updated|modified):.*$", head, re.M)


def cli_rewrite_and_rollback(root: Path, folder: Path) -> dict[str, Any]:
    """`sage-mem dream --mode rewrite --json` on `folder` through the CLI (in this process,
    words only, the state under `root`), then `sage-mem rollback` of that run: the folder's
    bytes before, after and restored, the run's manifest and report."""
    import pytest

    from sage_mem.cli import main

    def run(*argv: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        code = main(["--dir", str(folder), *argv], out=out, err=err)
        assert code == 0, err.getvalue()
        return out.getvalue()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SAGE_MEM_STATE_DIR", str(root / "state"))
        patch.setenv("HOME", str(root / "home"))
        patch.setenv("TZ", "UTC")
        patch.setenv("SAGE_MEM_SEMANTIC", "0")
        patch.setenv("SAGE_MEM_DAEMON", "0")
        before = folder_bytes(folder)
        run_id = json.loads(run("dream", "--mode", "rewrite", "--json"))["runId"]
        manifest = json.loads(
            (root / "state" / "autodream" / "runs" / run_id / "manifest.json").read_text(
                encoding="utf-8"))
        after = folder_bytes(folder)
        report = (folder / "autodream" / f"{run_id}.md").read_text(encoding="utf-8")
        run("rollback", run_id)
        return {"before": before, "after": after, "manifest": manifest, "report": report,
                "restored": folder_bytes(folder), "run_id": run_id}


def _proposal(change: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        change.get(key) if not isinstance(change.get(key), list) else tuple(change[key])
        for key in ("file", "operation", "rule", "reason", "fields", "supersededBy")
    )


def assert_report_shows_rewrite(build: Callable[[Path], None], tmp_path: Path,
                                now: datetime) -> None:
    """A report run over the corpus proposes, notes and refuses what a rewrite run does."""
    report = corpus_run(build, tmp_path / "a" / "memory", "report", now)
    rewrite = corpus_run(build, tmp_path / "b" / "memory", "rewrite", now)
    assert [_proposal(c) for c in report["changes"] if c.get("rule") != "index"] == [
        _proposal(c) for c in rewrite["changes"] if c.get("rule") != "index"
    ]
    assert [n["message"] for n in report["notes"]] == [n["message"] for n in rewrite["notes"]]
    assert [(r["id"], r["refusedBecause"]) for r in report["refused"]] == [
        (r["id"], r["refusedBecause"]) for r in rewrite["refused"]
    ]


def assert_second_rewrite_changes_nothing(build: Callable[[Path], None], folder: Path,
                                          now: datetime) -> None:
    """A rewrite over what a rewrite left, three days on, changes nothing but MEMORY.md."""
    from sage_mem.dream import run_dream
    from sage_mem.store import MemoryStore

    corpus_run(build, folder, "rewrite", now)
    again = run_dream(MemoryStore(folder, watch=False), mode="rewrite", now=now + timedelta(days=3))
    assert [c for c in read_manifest(again)["changes"] if c["rule"] != "index"] == []


TOPICS_EN = [
    ("pytest", "The user prefers pytest over unittest for all Python tests"),
    ("deploy", "Deploy the web app with make deploy from the repository root"),
    ("ci", "CI runs on GitHub Actions and the workflow lives in ci.yml"),
    ("db", "The staging database is Postgres on db-staging.internal"),
    ("style", "Answers should lead with the conclusion and stay short"),
    ("review", "Every pull request needs one approving review before merging"),
]
TOPICS_ZH = [
    ("cat", "用户的猫叫芝麻，喜欢在窗台上晒太阳"),
    ("release", "发布前必须运行全部测试并更新说明文档"),
    ("coffee", "用户每天早上喝一杯不加糖的黑咖啡"),
    ("beijing", "用户在北京工作，时区是东八区"),
]
SENTENCES_EN = [
    "This came up while fixing the flaky build.",
    "The team agreed on it in the planning meeting.",
    "Keep it in mind when touching the release scripts.",
    "It saves a round of review comments.",
    "The reason is that the old way broke twice last quarter.",
    "Ask before changing it.",
]
SENTENCES_ZH = [
    "这是在修复构建问题时发现的。",
    "团队在计划会议上达成了一致。",
    "修改发布脚本时要注意这一点。",
    "这样可以少一轮评审意见。",
    "改之前先问一下。",
]
RELATIVE = [
    "yesterday",
    "last week",
    "next Monday",
    "two days ago",
    "昨天",
    "上周",
    "下周一",
    "上个月",
]


def messy_folder(folder: Path, count: int, *, seed: int = 0) -> None:
    """A folder of `count` memories with everything a dream run tidies, in English and Chinese.

    About one in eight is a near-twin of another, one in five has a long body
    without a summary, one in six a relative date, one in ten a link to a
    memory that gets archived; a few say what they supersede, a few are locked.
    """
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    made: list[str] = []
    for i in range(count):
        zh = rng.random() < 0.4
        topic, text = rng.choice(TOPICS_ZH if zh else TOPICS_EN)
        category = rng.choice(["user", "feedback", "project", "reference"])
        memory_id = f"{category}_{topic}_{i}"
        description = f"{text} {'第' if zh else 'case '}{i}{'条' if zh else ''}"
        twin_of = None
        if made and rng.random() < 0.12:
            twin_of = rng.choice(made)
        sentences = SENTENCES_ZH if zh else SENTENCES_EN
        body_parts = [rng.choice(sentences) for _ in range(rng.choice([1, 2, 8]))]
        if rng.random() < 0.17:
            body_parts.insert(
                0, f"{'团队' if zh else 'The team decided this'} {rng.choice(RELATIVE)}."
            )
        if made and rng.random() < 0.1:
            body_parts.append(f"See [[{rng.choice(made)}]].")
        body = ("" if zh else " ").join(body_parts)
        meta: dict[str, object] = {"category": category, "trust": round(rng.uniform(0.3, 0.9), 2)}
        if rng.random() < 0.05:
            meta["locked"] = True
        if made and rng.random() < 0.03:
            meta["supersedes"] = [rng.choice(made)]
        meta["created"] = "2026-11-20"
        if rng.random() < 0.8:
            meta["updated"] = "2026-11-20T10:00:00Z"
        if twin_of is not None:
            path = folder / f"{twin_of}.md"
            text = path.read_text(encoding="utf-8")
            memory_id = f"{twin_of.split('_', 1)[0]}_copy_{i}"
            write_memory(
                folder, memory_id, text.replace("\n\n", "\n\nAlso noted. " if not zh else "\n\n", 1)
            )
        else:
            add(folder, memory_id, description, body, **meta)
        made.append(memory_id)
