"""Many writers at once on a large folder: how many land, how many are refused, how long.

Each writer is a whole `sage-mem add` process, as an agent's hook-less CLI
call or a script starts it, all started together on a copy of `speed.py`'s
synthetic folder (its cache made first by one search, no server: every
writer takes the folder's write lock itself). A change refused is a
`StoreLocked` line and exit 1, nothing written; a change that lands is its
file. Each checkout gets a fresh copy, one after the other.

    python benchmarks/write_storm.py --size 10000 --writers 32 /path/to/main [/path/to/branch]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import CORPUS_VERSION, Corpus  # noqa: E402


def storm(checkout: Path, source: Path, writers: int, work: Path) -> dict[str, object]:
    """Copy `source`, warm its cache, start `writers` adds at once; what became of them."""
    folder, state = work / "memory", work / "state"
    shutil.copytree(source, folder)
    env = dict(os.environ, PYTHONPATH=str(checkout), SAGE_MEM_STATE_DIR=str(state),
               SAGE_MEM_DAEMON="off", SAGE_MEM_SEMANTIC="0")
    command = [sys.executable, "-m", "sage_mem", "--dir", str(folder)]
    # cwd: `python -m` puts it first on the path, ahead of PYTHONPATH's checkout.
    subprocess.run([*command, "search", "warm"], env=env, capture_output=True, check=True,
                   cwd=work)
    started = time.monotonic()
    processes = [
        subprocess.Popen([*command, "add", f"storm_{number}", "--description",
                          f"written by writer {number} of a storm"],
                         env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for number in range(writers)
    ]
    errors = [process.communicate()[1] for process in processes]
    wall = time.monotonic() - started
    refused = [(error.strip().splitlines() or ["(nothing said)"])[-1]
               for process, error in zip(processes, errors, strict=True) if process.returncode]
    landed = sum((folder / f"storm_{number}.md").exists() for number in range(writers))
    return {"landed": landed, "refused": len(refused), "wall": wall,
            "first refusal": refused[0] if refused else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkouts", nargs="+", type=Path, help="folders holding sage_mem/")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, help="speed.py's --work folder (its corpus reused)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sage-mem-storm-") as temporary:
        work = args.work or Path(temporary)
        source = work / f"corpus-v{CORPUS_VERSION}-seed{args.seed}-{args.size}" / "memory"
        if not source.is_dir():
            Corpus(args.seed).write(source, args.size)
        print(f"{args.writers} writers at once, {args.size:,} memories, load "
              f"{os.getloadavg()[0]:.1f}")
        for number, checkout in enumerate(args.checkouts):
            run = Path(temporary) / f"run-{number}"
            result = storm(checkout.resolve(), source, args.writers, run)
            print(f"{checkout}: {result['landed']} landed, {result['refused']} refused, "
                  f"{result['wall']:.1f} s wall, load {os.getloadavg()[0]:.1f}"
                  + (f"; {result['first refusal']}" if result["refused"] else ""))
            shutil.rmtree(run)


if __name__ == "__main__":
    main()
