"""A dream run takes time linear in its input: one long line never makes it run for minutes.

A memory whose body was one 90 KB line made `dream` run for 151 s, a 400 KB one for
over 11 minutes (issue 29): a pattern of the contradiction rule tried an unbounded
`[^\\s,.;]+` at every character of a run without spaces. The runs below go in a
subprocess with a timeout, so that a quadratic rule fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_dream_support import add

from sage_mem.dream.rules import contradictions
from sage_mem.dream.rules.dedupe import contradicting_part
from sage_mem.memory.value import Memory

LINE = 400_000
# Generous: the run takes about 1.5 s of CPU on a busy 2-core machine; a quadratic
# pattern took minutes at 20 KB and hours at 400 KB.
TIMEOUT = 90


def _long_lines() -> list[tuple[str, str]]:
    digest = "".join(f"{i:08x}" for i in range(LINE // 8))  # a digest, base64-like: no spaces
    chinese = "日志摘要没有空格也没有标点" * (LINE // 13 // 3)  # 3 bytes a character: under 512 KB
    words = "the nightly digest of the logs says word " * (LINE // 41)
    return [("digest", digest), ("chinese", chinese), ("words", words)]


@pytest.mark.parametrize(("kind", "body"), _long_lines(), ids=lambda v: v if len(v) < 20 else "")
def test_a_report_run_over_a_400_kb_line_finishes_in_seconds(
    tmp_path: Path, kind: str, body: str
) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    add(folder, "project_digest", "A digest of the nightly logs", body,
        created="2026-11-20", updated="2026-11-20T10:00:00Z")
    add(folder, "project_digest_copy", "A digest of the nightly logs, copied", body[: LINE // 2],
        created="2026-11-21", updated="2026-11-21T10:00:00Z")
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "") or str(Path.cwd())}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "dream"],
        env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "dream" in done.stdout
    assert time.monotonic() - started < TIMEOUT


def _memory(memory_id: str, description: str, body: str) -> Memory:
    return Memory(id=memory_id, path=Path(f"{memory_id}.md"), description=description, body=body)


@pytest.mark.parametrize("size", [20_000, 40_000])
def test_the_change_patterns_take_time_linear_in_the_text(size: int) -> None:
    """Twice the text, about twice the time (a quadratic pattern takes four times)."""
    def cost(n: int) -> float:
        memory = _memory("project_x", "A digest", "x" * n + " moved from Jenkins to Buildkite")
        started = time.process_time()
        for _ in range(3):
            found = contradictions.changes_of(memory)
        assert found == [("Jenkins", "Buildkite")]
        return time.process_time() - started

    small, large = cost(size), cost(size * 4)
    # linear: about 4x; quadratic: about 16x. 10x leaves room for a loaded machine.
    assert large < max(10 * small, 0.2), (small, large)


def test_a_clash_between_two_long_bodies_is_looked_for_in_linear_time() -> None:
    """Two twins of thousands of sentences each: not every sentence against every other."""
    def word(i: int) -> str:
        return "".join(chr(97 + int(c)) for c in str(i)) + "x"

    def cost(n: int) -> float:
        # sentences of words no other sentence has: no clash ends the search early
        sentences = [f"{word(i)} {word(i + 7)} {word(i * 3)} {word(i * 11)}." for i in range(n)]
        started = time.process_time()
        assert contradicting_part(" ".join(sentences), " ".join(reversed(sentences))) is None
        return time.process_time() - started

    small, large = cost(1000), cost(4000)
    assert large < max(10 * small, 0.5), (small, large)
