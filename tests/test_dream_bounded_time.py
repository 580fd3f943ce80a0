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
from datetime import date
from pathlib import Path

import pytest
from test_dream_support import add

from sage_mem.dream.rules import contradictions
from sage_mem.dream.rules.dedupe import contradicting_part
from sage_mem.memory.value import Memory

# Long lines through whole runs, and CPU-time ratios: the scale tier, not the default run.
pytestmark = pytest.mark.scale

LINE = 400_000
# Generous: the run takes about 1.5 s of CPU on a busy 2-core machine; a quadratic
# pattern took minutes at 20 KB and hours at 400 KB.
TIMEOUT = 90


def _long_lines() -> list[tuple[str, str]]:
    digest = "".join(f"{i:08x}" for i in range(LINE // 8))  # a digest, base64-like: no spaces
    chinese = "日志摘要没有空格也没有标点" * (LINE // 13 // 3)  # 3 bytes a character: under 512 KB
    words = "the nightly digest of the logs says word " * (LINE // 41)
    # Marks with no closing one (emphasis read on to the line's end for one), a run of date
    # words that are word characters (an address's user read on to the run's end), comment
    # openings with no close: each was quadratic (35 s for 60 KB of `*a `).
    stars, underscores, tildes = ("*a " * (LINE // 3), "_a " * (LINE // 3), "~~a " * (LINE // 4))
    weeks = "上周" * (LINE // 3 // 2)
    comments = "<!--" * (LINE // 4)
    return [("digest", digest), ("chinese", chinese), ("words", words), ("stars", stars),
            ("underscores", underscores), ("tildes", tildes), ("weeks", weeks),
            ("comments", comments)]


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
        times = []
        for _ in range(3):  # the best of three: one run may meet a pause of the machine's
            started = time.process_time()
            for _ in range(3):
                found = contradictions.changes_of(memory)
            assert found == [("Jenkins", "Buildkite")]
            times.append(time.process_time() - started)
        return min(times)

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
        times = []
        for _ in range(3):  # the best of three: one run may meet a pause of the machine's
            started = time.process_time()
            assert contradicting_part(" ".join(sentences), " ".join(reversed(sentences))) is None
            times.append(time.process_time() - started)
        return min(times)

    small, large = cost(1000), cost(4000)
    assert large < max(10 * small, 0.5), (small, large)


def _dated_lines() -> list[tuple[str, str]]:
    """100 KB lines full of date words: one sentence, and many short sentences."""
    size = 100_000
    one_en = "yesterday we met, tomorrow we ship, last week it broke, next Friday we rest "
    one_zh = "昨天开会，明天发布，上周坏了，下周五休息，"
    many_en = "Yesterday we met. Tomorrow we ship. Last week it broke. Next Friday we rest. "
    many_zh = "昨天开会。明天发布。上周坏了。下周五休息。"
    few = "We met the team and talked the plan through for a while. " * 30 + "It broke yesterday. "
    return [
        (kind, (unit * (size // len(unit) + 1))[:size])
        for kind, unit in [("one_en", one_en), ("one_zh", one_zh), ("many_en", many_en),
                           ("many_zh", many_zh), ("few", few)]
    ]


@pytest.mark.parametrize(("kind", "body"), _dated_lines(), ids=lambda v: v if len(v) < 20 else "")
def test_a_report_run_over_a_100_kb_line_of_date_words_finishes_in_seconds(
    tmp_path: Path, kind: str, body: str
) -> None:
    """The dates rule read each phrase's whole sentence and line again: a 5 KB line of
    "yesterday" took 14 s, a 100 KB one did not finish in 10 minutes (issue 29)."""
    folder = tmp_path / "memory"
    folder.mkdir()
    add(folder, "project_log", "Notes of the week", body,
        created="2026-11-25", updated="2026-11-25T10:00:00Z")
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "") or str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--dir", str(folder), "dream"],
        env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 0, done.stderr
    # every phrase is dated or listed, never skipped in silence
    report = Path(done.stdout.split("report: ")[1].strip()).read_text(encoding="utf-8")
    if kind.startswith("one"):  # one sentence of 100 KB: too long to read, and listed
        assert "too long to read for dates" in report, report
        assert ("'yesterday'" if kind == "one_en" else "'昨天'") in report
    else:
        assert "relative-dates" in done.stdout, done.stdout


def test_a_sentence_too_long_to_read_for_dates_is_listed() -> None:
    from sage_mem.dream.rules.dates import LONGEST_SENTENCE, absolutize

    body = "yesterday we met, tomorrow we ship " * (LONGEST_SENTENCE // 30)
    unsure: list[str] = []
    too_long: list[str] = []
    new, changes = absolutize(body, date(2026, 11, 25), unsure, too_long=too_long)
    assert new == body and changes == [] and unsure == []
    assert set(too_long) == {"yesterday", "tomorrow"}
    # a short sentence beside it is read as always
    new, changes = absolutize(body + ". It broke yesterday.", date(2026, 11, 25), [], too_long=[])
    assert changes == [("yesterday", "yesterday (2026-11-24)")]


@pytest.mark.parametrize("unit", [
    "Yesterday we met. Tomorrow we ship. Last week it broke. ",
    "昨天开会。明天发布。上周坏了。",
    "yesterday's run, tomorrow's plan, the nightly job ",  # one long sentence: left, listed
    'he said "tomorrow" and \'today\' it broke, [x](http://a.b/today) yesterday ',
])
def test_the_dates_rule_takes_time_linear_in_the_text(unit: str) -> None:
    """Twice the text, about twice the time (the old rule took four times and more)."""
    def cost(n: int) -> float:
        text = (unit * (n // len(unit) + 1))[:n]
        times = []
        for _ in range(3):  # the best of three: one run may meet a pause of the machine's
            started = time.process_time()
            absolutize(text, date(2026, 11, 25), [], habits=True)
            times.append(time.process_time() - started)
        return min(times)

    from sage_mem.dream.rules.dates import absolutize

    cost(2_000)  # warm the patterns' caches
    small, large = cost(20_000), cost(40_000)
    # linear: about 2x; quadratic: about 4x. 3x leaves room for a loaded machine.
    assert large < max(3 * small, 0.1), (small, large)
