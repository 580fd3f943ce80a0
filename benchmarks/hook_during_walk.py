"""A hook a server answers while the server's watcher walks the folder (issue 13).

    python benchmarks/hook_during_walk.py FOLDER [--state DIR] [--hooks 10]

The watcher's reconcile (`store.reconcile`, a stat walk of the whole folder
every 30 s or more) holds the store's refresh lock for its whole length:
1.2 s of CPU at 100,000 memories. This opens the folder as `sage-mem daemon`
does (from its cache, watching), answers hooks on its socket from a thread,
keeps a walk running in another, and times hook processes against it: how
long each took, whether the server answered it, and the server's own time.
Build the folder's cache first (`sage-mem --dir FOLDER daemon --build-only`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--state", type=Path, help="its state folder (SAGE_MEM_STATE_DIR)")
    parser.add_argument("--hooks", type=int, default=10)
    args = parser.parse_args(argv)
    os.environ["SAGE_MEM_SEMANTIC"] = "0"
    if args.state:
        os.environ["SAGE_MEM_STATE_DIR"] = str(args.state)

    from sage_mem.agents import hooks
    from sage_mem.agents.hook_socket import Listener
    from sage_mem.store import MemoryStore

    store = MemoryStore(args.folder, state_dir=args.state, watch=True)
    started, used = time.perf_counter(), time.process_time()
    store.reconcile()
    print(f"one walk: {time.perf_counter() - started:.2f} s, "
          f"{time.process_time() - used:.2f} s of CPU")
    served: list[float] = []

    def handle(request):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return hooks.serve_request(store, request)
        finally:
            served.append((time.perf_counter() - started) * 1000)

    listener = Listener(str(store.root), store.folder.state_dir, handle)
    if not listener.start():
        print("another process answers this folder's hooks", file=sys.stderr)
        return 1
    stop = threading.Event()

    def walk() -> None:
        while not stop.is_set():
            store.reconcile()

    walker = threading.Thread(target=walk, daemon=True)
    walker.start()
    env = dict(os.environ, SAGE_MEM_DIR=str(args.folder), SAGE_MEM_DAEMON="0",
               PYTHONPATH=str(ROOT))
    times, fell_back = [], 0
    for n in range(args.hooks):
        payload = json.dumps({"session_id": f"walk-{n}-{time.time()}", "cwd": str(ROOT),
                              "prompt": "how do I run the deploy script on staging?"})
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "sage_mem", "hook", "user-prompt-submit"],
                                input=payload, capture_output=True, text=True, env=env,
                                check=True)
        times.append((time.perf_counter() - started) * 1000)
        fell_back += "answering here" in result.stderr or "budget" in result.stderr
    stop.set()
    walker.join()
    listener.stop()
    store.close()
    print(f"{args.hooks} hooks during walks: median {statistics.median(times):.0f} ms, "
          f"max {max(times):.0f} ms; answered on their own path: {fell_back}")
    if served:
        print(f"the server's time per request: median {statistics.median(served):.1f} ms, "
              f"max {max(served):.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
