"""Peak RSS and CPU time of a cold build, and of the cache's rewrite after N files changed.

    python benchmarks/build_memory.py FOLDER --state DIR
    python benchmarks/build_memory.py FOLDER --state DIR --rewrite 1000 --work DIR

Each measurement runs in a new process (`MemoryStore(FOLDER, state_dir=DIR,
watch=False)`, as `benchmarks/speed.py`'s cold worker) and prints one JSON
line: wall and CPU (user + sys) seconds, and peak RSS (`ru_maxrss`). The
state folder is emptied first. `--rewrite N` copies FOLDER into `--work`
(FOLDER itself is never written), builds its cache, appends a line to N of its
files and measures the warm start that then rewrites the cache (a store that
may build: the daemon's path after a checkout). Run it under `nice` on a
shared machine; figures are in docs/speed.md ("The build's memory").
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path


def measure(folder: Path, state: Path) -> dict:
    """Open a store on `folder` in this process; what it cost."""
    from sage_mem.store import MemoryStore

    wall, cpu = time.perf_counter(), time.process_time()
    store = MemoryStore(folder, state_dir=state, watch=False)
    used = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "memories": len(store.index),
        "how": store.loaded.how if store.loaded else None,
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
        "peak_rss_mb": round(used.ru_maxrss / 1024, 1),
    }


def run(folder: Path, state: Path) -> dict:
    """`measure` in a new process."""
    result = subprocess.run(
        [sys.executable, __file__, str(folder), "--state", str(state), "--in-process"],
        capture_output=True, text=True, check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--rewrite", type=int, default=0, metavar="N")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_process:
        print(json.dumps(measure(args.folder, args.state)))
        return 0
    if not args.rewrite:
        shutil.rmtree(args.state, ignore_errors=True)
        print(json.dumps({"cold": run(args.folder, args.state)}))
        return 0
    if args.work is None:
        parser.error("--rewrite needs --work (FOLDER is copied there, never written)")
    copy = args.work / "memory"
    shutil.rmtree(args.work, ignore_errors=True)
    shutil.copytree(args.folder, copy, symlinks=True)  # copy2: times kept, no racy files
    shutil.rmtree(args.state, ignore_errors=True)
    cold = run(copy, args.state)
    for path in sorted(copy.glob("*.md"))[: args.rewrite]:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\nOne more line, 又一行, for the rewrite.\n")
    time.sleep(2.1)  # past the racy window of the files just changed
    print(json.dumps({"cold": cold, "rewrite": run(copy, args.state)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
