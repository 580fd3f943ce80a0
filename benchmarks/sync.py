"""Speed of `sage-mem sync` against plain git, side by side in one run, on a folder of N memories.

    python benchmarks/sync.py                   # 1,000 memories, about a minute
    python benchmarks/sync.py --size 10000      # the docs' figures (a few minutes)
    python benchmarks/sync.py --size 2000 --rounds 7 --work DIR [--keep] [--json]
    python benchmarks/sync.py --size 10000 --only join   # the join and the first searches

A generated folder of N memories (`benchmarks/speed.py`'s bilingual corpus:
English, Chinese and mixed notes of realistic length, some in topic
subfolders) is pushed to a real bare remote by a first machine, A. Then, each
case timed as whole processes (wall and CPU time: user + system of the
process and every child it waited for, git and merge drivers included):

- **join**: `sage-mem sync --remote URL` into a new folder on machine B,
  against `git clone URL` on machine C: three times each in turn, the median
  (`--join-rounds`; creating 10,000 files is most of both and its CPU swings
  between runs on a shared disk). A clone of a path on the same disk
  hard-links the remote's pack rather than copy it (git's local shortcut,
  which sync's fetch cannot take: its objects are made as private as the
  folder, and checked, `fetch.fsckObjects`), so `git clone --no-local` is
  timed beside it: the pack sent and indexed as from a server;
- **idle**: nothing changed anywhere: B's `sage-mem sync`, against C's
  `git fetch` + `git status` (each run once untimed first: the first run
  after the searches took up to twice a steady one, on either side);
- **receive 10**: A changed 10 memories and synced; B's `sage-mem sync`,
  against C's `git pull` (fetch + merge);
- **both 100**: A changed the description of 100 memories and synced; B and C
  each added a line to the body of the same 100; B's `sage-mem sync`
  (commit, fetch, merge every one of the 100 field by field, push), against
  C's `git add -A` + `git commit` + `git pull --no-rebase` + `git push` to a
  copy of the remote as A left it (git's own line merge: C has no merge
  driver configured, as a plain clone has none); C is first set back to the
  commit B is on, so that both start each round from one state;
- **first search** on B, each a whole `sage-mem search` process: right after
  its join returns (the join started the index's build in the background as
  soon as its files were checked out, `daemon --build-only`, whose CPU is not
  in the join's, being no child of it); once that build has ended (its wall
  time printed); the next one (the cache's time); and the first search in a
  copy of B's memory files that did not come by sync (no cache: a cold start,
  the index built by the search). The search right after the join is given
  against the next one (the cache's time) and against the cold start (the
  most it may take: `ratio`).

Every machine has its own HOME and git config (no user config is read), the
semantic extra and autosync are off.

The machine may be shared: one run of a case moves by ±20 % with what else
runs. So idle, receive 10 and both 100 are each timed over `--rounds`
rounds (default 5), sage-mem and git in turn within a round, the order
swapped every round (sage-mem first, then git first, ...), each round's
change made anew; the join over `--join-rounds` (default 3) the same way.
Each row gives each side's median, the ratio of the two medians (CPU: the
figure to trust on a shared machine, wall beside it), and the spread of the
rounds' own ratios (each round's sage-mem CPU over its git CPU: their
median, min and max). CPU is user + system of every process run and every
child it waited for (`RUSAGE_CHILDREN` taken before and after). The first
searches are one run each. The load average is printed at the start and the
end, and each case's at its start.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed import Corpus  # noqa: E402


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


class Machines:
    """The bare remote and the machines' folders under one work folder, with their git config."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.remote = work / "remote.git"
        self.home = work / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        config = self.home / "gitconfig"
        config.write_text("[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n", encoding="utf-8")
        path = os.environ.get("PYTHONPATH")
        self.env = dict(
            os.environ, HOME=str(self.home), GIT_CONFIG_GLOBAL=str(config),
            GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
            GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com",
            PYTHONPATH=str(ROOT) + (os.pathsep + path if path else ""),
            SAGE_MEM_SEMANTIC="0", SAGE_MEM_AUTOSYNC="0",
        )
        self.env.pop("SAGE_MEM_DAEMON", None)  # a join builds the index in the background
        self.env.pop("SAGE_MEM_DIR", None)
        self.env.pop("SAGE_MEM_STATE_DIR", None)

    def folder(self, name: str) -> Path:
        return self.work / f"machine-{name}" / "memory"

    def run(self, command: Sequence[str], *, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> tuple[float, float]:
        """Run one process to its end: (wall seconds, CPU seconds of it and its children)."""
        started, before = time.perf_counter(), _children_cpu()
        done = subprocess.run(list(command), cwd=cwd, env={**self.env, **(env or {})},
                              capture_output=True)
        wall, cpu = time.perf_counter() - started, _children_cpu() - before
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n"
                             + done.stderr.decode("utf-8", "replace")[-2000:])
        return wall, cpu

    def timed(self, *commands: Sequence[str], cwd: Path | None = None,
              env: dict[str, str] | None = None) -> dict[str, float]:
        wall = cpu = 0.0
        for command in commands:
            w, c = self.run(command, cwd=cwd, env=env)
            wall, cpu = wall + w, cpu + c
        return {"wall": wall, "cpu": cpu}

    def sage(self, folder: Path, *argv: str) -> list[str]:
        return [sys.executable, "-m", "sage_mem", "--dir", str(folder), *argv]

    def git(self, folder: Path, *argv: str) -> list[str]:
        return ["git", "-C", str(folder), *argv]

    def git_text(self, folder: Path, *argv: str) -> str:
        return subprocess.run(self.git(folder, *argv), env=self.env, capture_output=True,
                              text=True, check=True).stdout.strip()


def edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")


def new_description(text: str) -> str:
    return text.replace("\ndescription: ", "\ndescription: (revised on A) ", 1)


def added_line(text: str) -> str:
    return text.rstrip("\n") + "\n\nA line added on the second machine.\n"


def picked(folder: Path, count: int, skip: int = 0) -> list[str]:
    """`count` memory paths spread over the folder (every k-th in path order)."""
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md")
                   if p.name != "MEMORY.md" and ".git" not in p.parts)
    step = max(1, len(paths) // (count + skip))
    return paths[skip * step::step][:count]


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


Run = dict[str, float]


def alternated(rounds: int, sides: dict[str, Callable[[int], Run]],
               prepare: Callable[[int], None] | None = None) -> dict[str, list[Run]]:
    """Each side timed once a round (`side(round)`), `rounds` rounds, in the order given on
    even rounds and the reverse on odd ones (what runs first meets a colder cache or a
    busier CPU: each side takes that turn as often), `prepare(round)` run untimed before
    each round."""
    runs: dict[str, list[Run]] = {side: [] for side in sides}
    order = list(sides)
    for number in range(rounds):
        if prepare is not None:
            prepare(number)
        for side in order[::-1] if number % 2 else order:
            runs[side].append(sides[side](number))
    return runs


def compared(ours: list[Run], theirs: list[Run]) -> dict:
    """sage-mem's runs against git's of the same rounds (`ours[n]` beside `theirs[n]`):
    each side's median CPU and wall time (and its runs), the ratio of the medians (CPU,
    wall), and each round's own CPU ratio with their median, min and max."""
    if not ours or len(ours) != len(theirs):
        raise ValueError("each round needs a run of each side")
    mine, other = median_of(ours), median_of(theirs)
    per_round = [run["cpu"] / max(git["cpu"], 1e-6) for run, git in zip(ours, theirs, strict=True)]
    return {
        "sage-mem": {**mine, "runs": ours}, "git": {**other, "runs": theirs},
        "ratio": {"cpu": mine["cpu"] / max(other["cpu"], 1e-6),
                  "wall": mine["wall"] / max(other["wall"], 1e-6),
                  "rounds": per_round, "median": statistics.median(per_round),
                  "min": min(per_round), "max": max(per_round)},
    }


def joins(m: Machines, b: Path, c: Path, rounds: int) -> dict:
    """A join against `git clone` and `git clone --no-local`, `rounds` rounds (`alternated`),
    each into a new folder: sage-mem against each clone (`compared`).

    Creating 10,000 files is most of both, and on a disk other work shares its
    CPU (the kernel's, charged to the process) swings from one run to the next
    (`git clone` from 0.4 to 4.8 s): one run of each says little. The last
    join is machine B's, its index build left to run in the background; the
    others start none (they would load the machine under the next round)."""
    def join(number: int) -> Run:
        last = number == rounds - 1
        ours = b if last else m.work / f"join-{number}" / "memory"
        ours.parent.mkdir(parents=True, exist_ok=True)
        return m.timed(m.sage(ours, "sync", "--remote", str(m.remote)),
                       env=None if last else {"SAGE_MEM_DAEMON": "off"})

    def clone(number: int) -> Run:
        theirs = c if number == rounds - 1 else m.work / f"clone-{number}"
        return m.timed(["git", "clone", "--quiet", str(m.remote), str(theirs)])

    def clone_no_local(number: int) -> Run:
        return m.timed(["git", "clone", "--quiet", "--no-local", str(m.remote),
                        str(m.work / f"clone-no-local-{number}")])

    runs = alternated(rounds, {"sage-mem": join, "git": clone, "git --no-local": clone_no_local})
    return {"git": compared(runs["sage-mem"], runs["git"]),
            "git --no-local": compared(runs["sage-mem"], runs["git --no-local"])}


def measure(size: int, work: Path, seed: int, log: Callable[[str], None],
            join_rounds: int = 3, rounds: int = 5, only: str | None = None) -> dict:
    # Bytecode first, as `pip install` leaves it (PYTHONDONTWRITEBYTECODE would have every
    # process compile sage-mem again).
    compileall.compile_dir(str(ROOT / "sage_mem"), quiet=1)
    m = Machines(work)
    a, b, c = m.folder("a"), m.folder("b"), m.folder("c")
    log(f"[{size}] writing the corpus")
    Corpus(seed).write(a, size)
    subprocess.run(["git", "init", "--quiet", "--bare", str(m.remote)], check=True, env=m.env)
    results: dict[str, dict] = {}
    loads: dict[str, float] = {}

    def case(name: str, what: str) -> None:
        loads[name] = os.getloadavg()[0]
        log(f"[{size}] {what} (load {loads[name]:.1f})")

    log(f"[{size}] machine A: the first sync (init, commit, push)")
    first = m.timed(m.sage(a, "sync", "--remote", str(m.remote)))
    m.run(m.git(a, "config", "sage-mem.machine", "a"))
    megabytes = sum(p.stat().st_size for p in a.rglob("*.md")) / 1e6

    case("join", f"join, {join_rounds} rounds")
    c.parent.mkdir(parents=True)
    results["join"] = joins(m, b, c, join_rounds)
    m.run(m.git(b, "config", "sage-mem.machine", "b"))

    case("first search", "first search after the join")
    query = Corpus(seed).queries(3, size)[0][1]
    right_after = m.timed(m.sage(b, "search", query))
    background = wait_for_background_build(b, m.env)
    after_build = m.timed(m.sage(b, "search", query))
    warm = m.timed(m.sage(b, "search", query))
    copied = work / "machine-d" / "memory"  # the same memories, not by sync: no cache
    shutil.copytree(b, copied, ignore=shutil.ignore_patterns(".git"))
    cold = m.timed(m.sage(copied, "search", query))
    results["first search"] = {"right after": right_after, "sage-mem": after_build,
                               "warm": warm, "cold": cold,
                               "ratio": {against: {key: right_after[key] / max(run[key], 1e-6)
                                                   for key in ("cpu", "wall")}
                                         for against, run in (("warm", warm), ("cold", cold))}}
    if only == "join":
        return {"size": size, "megabytes": megabytes, "first sync": first,
                "background build": background, "rounds": rounds, "join rounds": join_rounds,
                "loads": loads, "cases": results}

    case("idle", f"nothing changed, {rounds} rounds")
    # Each side once untimed: the first run after the searches and the cold start's copy of
    # the folder took up to twice a steady one, on either side (a case of its own).
    m.run(m.sage(b, "sync"))
    m.run(m.git(c, "fetch", "--quiet"))
    m.run(m.git(c, "status", "--porcelain"))
    runs = alternated(rounds, {
        "sage-mem": lambda _: m.timed(m.sage(b, "sync")),
        "git": lambda _: m.timed(m.git(c, "fetch", "--quiet"), m.git(c, "status", "--porcelain")),
    })
    results["idle"] = compared(runs["sage-mem"], runs["git"])

    case("receive 10", f"receive 10, {rounds} rounds")

    def changed_on_a(number: int) -> None:  # 10 memories changed on A, pushed by its sync
        for path in picked(a, 10, skip=number):
            edit(a / path, new_description)
        m.run(m.sage(a, "sync"))

    runs = alternated(rounds, {
        "sage-mem": lambda _: m.timed(m.sage(b, "sync")),
        "git": lambda _: m.timed(m.git(c, "pull", "--quiet", "--no-rebase")),
    }, changed_on_a)
    results["receive 10"] = compared(runs["sage-mem"], runs["git"])

    case("both 100", f"both 100, {rounds} rounds")
    chosen: list[list[str]] = []

    def changed_on_both(number: int) -> None:
        # C set back to the commit B is on (B pushed it: the remote's branch), so that both
        # merge from one state; then A's 100 changes pushed, C's remote a copy of that.
        head = m.git_text(b, "rev-parse", "HEAD")
        m.run(m.git(c, "fetch", "--quiet", str(m.remote)))
        m.run(m.git(c, "reset", "--quiet", "--hard", head))
        both = picked(a, 100, skip=10 + number)
        chosen.append(both)
        for path in both:
            edit(a / path, new_description)
        m.run(m.sage(a, "sync"))
        plain = work / f"remote-plain-{number}.git"
        shutil.copytree(m.remote, plain)
        m.run(m.git(c, "remote", "set-url", "origin", str(plain)))
        for path in both:
            edit(b / path, added_line)
            edit(c / path, added_line)

    runs = alternated(rounds, {
        "sage-mem": lambda number: merged(m.timed(m.sage(b, "sync")), b, chosen[number]),
        "git": lambda _: m.timed(m.git(c, "add", "-A"),
                                 m.git(c, "commit", "--quiet", "-m", "edits"),
                                 m.git(c, "pull", "--quiet", "--no-rebase", "--no-edit"),
                                 m.git(c, "push", "--quiet")),
    }, changed_on_both)
    results["both 100"] = compared(runs["sage-mem"], runs["git"])
    return {"size": size, "megabytes": megabytes, "first sync": first,
            "background build": background, "rounds": rounds, "join rounds": join_rounds,
            "loads": loads, "cases": results}


def merged(run: Run, folder: Path, paths: list[str]) -> Run:
    """`run`, once each of `paths` in `folder` is checked to hold both sides' edits."""
    for path in paths:
        text = (folder / path).read_text(encoding="utf-8")
        if "(revised on A)" not in text or "added on the second machine" not in text:
            raise SystemExit(f"{path}: the merge lost an edit")
    return run


def wait_for_background_build(folder: Path, env: dict[str, str]) -> float | None:
    """Seconds from now until the build the join started in the background has written the
    cache (its line in daemon.log; its CPU time is not this process's children's). None when
    no build started, or one ended without its line, within 20 s (a sage-mem that starts
    none: the first search builds). A build still running is waited for: on a busy machine
    it takes longer than 20 s, and a search started beside it would build too."""
    from sage_mem.disk.folder import MemoryFolder

    log = MemoryFolder(folder).state_path("daemon.log")
    started = time.perf_counter()
    while time.perf_counter() - started < 900:
        try:
            if "the index" in log.read_text(encoding="utf-8"):
                return time.perf_counter() - started
        except FileNotFoundError:
            pass
        if time.perf_counter() - started > 20 and not build_process(folder):
            return None
        time.sleep(0.05)
    raise SystemExit("the background build never ended")


def build_process(folder: Path) -> bool:
    """Whether a `daemon --build-only` for this folder runs (its command line, in /proc:
    asking for its lock might take it from the daemon as it starts)."""
    wanted = (b"--build-only", os.fsencode(folder))
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if all(part in line.split(b"\0") for part in wanted):
            return True
    return False


ROWS = [
    (("join", "git"), "join: `sync --remote` on a new machine / `git clone`"),
    (("join", "git --no-local"),
     "join / `git clone --no-local` (the pack sent as by a server)"),
    (("idle",), "nothing changed: `sync` / `git fetch` + `git status`"),
    (("receive 10",), "10 changed, receive: `sync` / `git pull`"),
    (("both 100",), "100 files changed on both sides: `sync` / commit + `git pull` + `git push`"),
]


def row(label: str, found: dict) -> str:
    """One case's line: each side's medians, the ratio of the medians, the rounds' ratios."""
    ours, theirs, ratio = found["sage-mem"], found["git"], found["ratio"]
    return (f"| {label} | {len(ratio['rounds'])} | {ours['cpu']:.3f} s ({ours['wall']:.3f} s) | "
            f"{theirs['cpu']:.3f} s ({theirs['wall']:.3f} s) | "
            f"**{ratio['cpu']:.2f}×** ({ratio['wall']:.2f}×) | "
            f"{ratio['median']:.2f}× ({ratio['min']:.2f}–{ratio['max']:.2f}×) |")


def table(result: dict) -> str:
    cases = result["cases"]
    lines = ["| case | rounds | sage-mem CPU (wall), median | git CPU (wall), median | "
             "ratio of the medians, CPU (wall) | each round's CPU ratio: median (min–max) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for keys, label in ROWS:
        if keys[0] not in cases:  # --only join
            continue
        found = cases[keys[0]]
        lines.append(row(label, found[keys[1]] if len(keys) > 1 else found))
    lines += ["", "| first search (one run each) | CPU (wall) | the next one, CPU (wall) | "
              "ratio to the next one, CPU (wall) | ratio to the cold start, wall (CPU) |",
              "| --- | --- | --- | --- | --- |"]
    searches = cases["first search"]
    warm, cold = searches["warm"], searches["cold"]
    for key, label in (("right after", "right after the join"),
                       ("sage-mem", "once the background build ended"),
                       ("cold", "in a copy not made by sync (cold start)")):
        first = searches[key]
        lines.append(f"| {label} | {first['cpu']:.2f} s ({first['wall']:.2f} s) | "
                     f"{warm['cpu']:.2f} s ({warm['wall']:.2f} s) | "
                     f"{first['cpu'] / max(warm['cpu'], 1e-3):.1f}× "
                     f"({first['wall'] / max(warm['wall'], 1e-3):.1f}×) | "
                     f"**{first['wall'] / max(cold['wall'], 1e-3):.2f}×** "
                     f"({first['cpu'] / max(cold['cpu'], 1e-3):.2f}×) |")
    if result["background build"] is None:
        lines.append("\nNo index build started in the background after the join.")
    else:
        lines.append(f"\nThe index built in the background after the join: done "
                     f"{result['background build']:.2f} s after the join returned.")
    loads = ", ".join(f"{name} {load:.1f}" for name, load in result.get("loads", {}).items())
    if loads:
        lines.append(f"Load average at the start of each case: {loads}.")
    return "\n".join(lines)


def machine() -> str:
    load = os.getloadavg()
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{platform.python_implementation()} {platform.python_version()}, {git}, "
            f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs; "
            f"load average {load[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000, help="memories (default 1,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--join-rounds", type=int, default=3,
                        help="joins and clones timed in turn, the median taken (default 3)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of each other case, sage-mem and git in turn (default 5)")
    parser.add_argument("--only", choices=["join"],
                        help="only the join and the first searches after it")
    parser.add_argument("--work", type=Path, help="work here (emptied first) instead of a temp")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    if args.work is not None:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        work = args.work
    else:
        work = Path(tempfile.mkdtemp(prefix="sage-mem-sync-"))
    log = (lambda text: None) if args.quiet else (
        lambda text: print(text, file=sys.stderr, flush=True))
    try:
        before = machine()
        result = measure(args.size, work, args.seed, log, max(1, args.join_rounds),
                         max(1, args.rounds), args.only)
        after = os.getloadavg()[0]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps({"machine": before, "loadAfter": after, **result}, indent=1))
        return 0
    print(f"`python benchmarks/sync.py {' '.join(sys.argv[1:])}`".replace(" `", "`"))
    print(f"on {before} (at the end {after:.1f}); {result['size']:,} memories, "
          f"{result['megabytes']:.1f} MB\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
