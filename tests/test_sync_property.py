"""Random edits and syncs across three clones never lose a version and never leave markers.

Hypothesis draws a sequence of steps over three machines sharing a bare
remote: a machine writes one of three memories (through `sage-mem add` or by
hand, a new version each time, English and Chinese), archives one, or syncs. Afterwards
every machine syncs twice in turn, and then:

- every version ever written is in a live memory, a conflict sibling or the
  archive, unless a later write on a machine that showed it replaced it (a
  person editing what they saw);
- the machines hold the same files, none with conflict markers;
- MEMORY.md is what `sage-mem index` writes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support import write_memory
from sync_support import (
    bare_remote,
    files,
    index_is_current,
    machine,
    memory,
    no_markers,
    sm,
    sync,
    use_private_git,
)

from sage_mem.memory.file_format import parse_bytes

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.property,
]

MACHINES = ("a", "b", "c")
MEMORIES = 3

write_step = st.tuples(st.just("write"), st.integers(0, 2), st.integers(0, MEMORIES - 1),
                       st.sampled_from(["cli", "hand"]))
sync_step = st.tuples(st.just("sync"), st.integers(0, 2), st.just(0), st.just(""))
archive_step = st.tuples(st.just("archive"), st.integers(0, 2), st.integers(0, MEMORIES - 1),
                         st.just(""))


@pytest.fixture(autouse=True)
def private_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_private_git(tmp_path, monkeypatch)


def live_body(folder: Path, memory_id: str) -> str | None:
    path = folder / f"{memory_id}.md"
    return parse_bytes(path.read_bytes()).body.strip() if path.exists() else None


def versions_kept(folder: Path, memory_id: str) -> set[str]:
    """The bodies of the memory, of each conflict sibling of it (siblings of siblings too),
    and of its archived copies (`archive/user_m0.md`, `archive/user_m0-2.md`, their siblings)."""
    kept = set()
    for where in (folder, folder / "archive"):
        for path in where.glob(f"{memory_id}*.md"):
            rest = path.name[len(memory_id):]
            if rest == ".md" or rest.startswith((".conflict-", "-")):
                kept.add(parse_bytes(path.read_bytes()).body.strip())
    return kept


# Each example runs real git on three clones (seconds): few examples, and no shrinking,
# which would rerun it hundreds of times; a failure prints the steps as drawn.
@settings(max_examples=8, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(st.one_of(write_step, sync_step, archive_step), min_size=4, max_size=12))
def test_random_edits_and_syncs_lose_nothing(
    tmp_path: Path, steps: list[tuple[str, int, int, str]]
) -> None:
    top = Path(tempfile.mkdtemp(dir=tmp_path))
    remote = bare_remote(top)
    clones = [machine(top / MACHINES[0], remote, MACHINES[0], first=True)]
    clones += [machine(top / name, remote, name) for name in MACHINES[1:]]
    written: dict[str, set[str]] = {f"user_m{m}": set() for m in range(MEMORIES)}
    replaced: set[str] = set()

    for number, (kind, who, which, how) in enumerate(steps):
        folder = clones[who]
        if kind == "sync":
            sync(folder)
            continue
        memory_id = f"user_m{which}"
        seen = live_body(folder, memory_id)
        if kind == "archive":
            if seen is not None:
                status, _, err = sm(folder, "archive", memory_id, "--reason", "done 完成")
                assert status == 0, err
            continue
        if seen is not None:
            replaced.add(seen)  # the person edits the version this machine shows
        version = f"v{number} {MACHINES[who]} 版本{number}"
        written[memory_id].add(version)
        if how == "cli":
            status, _, err = sm(folder, "add", memory_id, "--category", "user",
                                "--description", f"Memory {which} {version}", "--body", version)
            assert status == 0, err
        else:
            write_memory(folder, memory_id, memory(f"Memory {which} {version}", version))

    for _ in range(2):
        for folder in clones:
            sync(folder)

    first = files(clones[0])
    for folder in clones:
        no_markers(folder)
        index_is_current(folder)
        assert files(folder) == first, f"{folder.name} differs from {clones[0].name}"
    for memory_id, versions in written.items():
        missing = versions - replaced - versions_kept(clones[0], memory_id)
        assert not missing, f"{memory_id}: lost {sorted(missing)}"
