"""No-server hooks of two or more checkouts alternated with `python -c pass`, in one run.

On a shared machine two `speed.py` runs a minute apart see different loads;
this alternates the checkouts batch by batch (and `python -c pass` with them),
so each figure has its floor measured beside it. Every hook is a process as
Claude Code starts it (`python -m sage_mem hook user-prompt-submit`, the
benchmark's realistic prompts, a new session each, `SAGE_MEM_DAEMON=off`: no
server asked or started), on the corpus and state folder `speed.py --work DIR`
left (its cache: run `speed.py` with the newest checkout last, so that every
checkout reads a cache it accepts). Prints CPU (user + sys) and wall medians,
their ratios to `python -c pass`, CPU split by English-only prompts and the
others, and whether the checkouts injected the same text.

    python benchmarks/hook_alternated.py --work /tmp/work --size 10000 \\
        /path/to/main /path/to/branch --rounds 6 --batch 15
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import CORPUS_VERSION, Corpus, hook_env, server_answers  # noqa: E402


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkouts", nargs="+", type=Path, help="folders holding sage_mem/")
    parser.add_argument("--work", type=Path, required=True, help="speed.py's --work folder")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=15)
    args = parser.parse_args()
    folder = args.work / f"corpus-v{CORPUS_VERSION}-seed{args.seed}-{args.size}" / "memory"
    state = args.work / f"state-{args.size}"
    if server_answers(folder, state):
        raise SystemExit(f"a sage-mem server answers for {folder}: stop it first")
    prompts = Corpus(args.seed).prompts(300, args.size)
    names = [str(path) for path in args.checkouts] + ["python -c pass"]
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    english: dict[str, list[bool]] = {name: [] for name in names}
    answers: dict[str, list[str]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        for name in names:
            checkout = args.checkouts[0] if name == "python -c pass" else Path(name)
            env = dict(hook_env(folder, state, args.work / "home", "off"),
                       PYTHONPATH=str(checkout))
            for n in range(args.batch):
                prompt = prompts[n % len(prompts)][1]
                if name == "python -c pass":
                    argv, payload = [sys.executable, "-c", "pass"], ""
                else:
                    argv = [sys.executable, "-m", "sage_mem", "hook", "user-prompt-submit"]
                    payload = json.dumps({"session_id": f"alt-{uuid.uuid4().hex}",
                                          "prompt": prompt, "cwd": str(args.work / "home"),
                                          "hook_event_name": "UserPromptSubmit"})
                started, before = time.perf_counter(), _children_cpu()
                done = subprocess.run(argv, input=payload, capture_output=True, text=True,
                                      env=env, cwd=str(checkout), check=True)
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append(_children_cpu() - before)
                english[name].append(prompt.isascii())
                if round_number == 0:
                    answers[name].append(done.stdout)
    floor_cpu = statistics.median(cpu["python -c pass"])
    floor_wall = statistics.median(wall["python -c pass"])
    print(f"load average at the end {os.getloadavg()[0]:.1f}; {args.rounds} rounds of "
          f"{args.batch} a checkout")
    for name in names:
        line = (f"{name}: CPU {statistics.median(cpu[name]):.1f} ms "
                f"({statistics.median(cpu[name]) / floor_cpu:.2f}x), wall "
                f"{statistics.median(wall[name]):.1f} ms "
                f"({statistics.median(wall[name]) / floor_wall:.2f}x)")
        if name != "python -c pass":
            split = [[c for c, e in zip(cpu[name], english[name], strict=True) if e == want]
                     for want in (True, False)]
            line += "; CPU English / other " + " / ".join(
                f"{statistics.median(part):.1f}" if part else "n/a" for part in split)
        print(line)
    hooks = names[:-1]
    print("same answers:", all(answers[name] == answers[hooks[0]] for name in hooks),
          f"({sum(bool(text.strip()) for text in answers[hooks[0]])} of {args.batch} injected)")


if __name__ == "__main__":
    main()
