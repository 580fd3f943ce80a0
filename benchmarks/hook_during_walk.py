"""A hook a server answers while the server's watcher walks the folder (issue 13).

    python benchmarks/hook_during_walk.py FOLDER [--state DIR] [--hooks 10] [--passes 3]

The watcher's reconcile (`store.reconcile`, a stat walk of the whole folder
every 30 s or more) shares the server's interpreter, and on a loaded machine
a core, with the hooks it answers. This opens the folder as `sage-mem daemon`
does (from its cache, watching), times a few reconciles of the unchanged
folder (wall and CPU time of the walking thread), then answers hooks on its
socket from a thread (holding the walk off while it answers, as
`daemon.listen_for_hooks` does, where the code has `hold_walks`), keeps a
reconcile running all along in another, and times hook processes against
it: how long each took (whole process) and its own CPU time, whether the
server answered it, the server's own time per request, and the walks made
meanwhile. Every other hook runs with no walk at all (the walker waits for
it to end), the same minutes' control on a loaded machine. Build the folder's cache first
(`sage-mem --dir FOLDER daemon --build-only`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    parser.add_argument("--passes", type=int, default=3, help="reconciles timed before the hooks")
    args = parser.parse_args(argv)
    os.environ["SAGE_MEM_SEMANTIC"] = "0"
    if args.state:
        os.environ["SAGE_MEM_STATE_DIR"] = str(args.state)

    from sage_mem.agents import hooks
    from sage_mem.agents.hook_socket import Listener
    from sage_mem.store import MemoryStore

    store = MemoryStore(args.folder, state_dir=args.state, watch=True)
    print(f"code: {Path(sys.modules['sage_mem'].__file__ or '').parent}; "
          f"{len(store.index)} memories; load average {os.getloadavg()[0]:.1f}")
    walls, cpus = [], []
    for _ in range(max(args.passes, 1)):
        started, used = time.perf_counter(), time.thread_time()
        store.reconcile()
        cpus.append(time.thread_time() - used)
        walls.append(time.perf_counter() - started)
    print(f"a reconcile of the unchanged folder, {len(cpus)} passes: CPU median "
          f"{statistics.median(cpus):.3f} s (min {min(cpus):.3f}), wall median "
          f"{statistics.median(walls):.3f} s")
    served: list[float] = []

    def handle(request):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return hooks.serve_request(store, request)
        finally:
            served.append((time.perf_counter() - started) * 1000)

    hold = getattr(store, "hold_walks", None)
    try:
        listener = Listener(str(store.root), store.folder.state_dir, handle, hold=hold)
    except TypeError:  # code from before `hold`
        hold = None
        listener = Listener(str(store.root), store.folder.state_dir, handle)
    if not listener.start():
        print("another process answers this folder's hooks", file=sys.stderr)
        return 1
    print(f"the walk held off while a hook is answered: {'yes' if hold else 'no'}")
    stop = threading.Event()
    walked: list[float] = []
    walking = threading.Lock()  # held by the walker during each walk, by the control's hooks

    def walk() -> None:
        while not stop.is_set():
            with walking:
                used = time.thread_time()
                store.reconcile()
                walked.append(time.thread_time() - used)
            time.sleep(0.001)  # lets a control hook take the lock

    walker = threading.Thread(target=walk, daemon=True)
    walker.start()
    env = dict(os.environ, SAGE_MEM_DIR=str(args.folder), SAGE_MEM_DAEMON="0",
               PYTHONPATH=str(ROOT))
    times, own_cpu, fell_back = [], [], 0
    quiet, quiet_cpu = [], []
    for n in range(2 * args.hooks):
        control = n % 2 == 1
        if control:
            walking.acquire()
        payload = json.dumps({"session_id": f"walk-{n}-{time.time()}", "cwd": str(ROOT),
                              "prompt": "how do I run the deploy script on staging?"})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "sage_mem", "hook", "user-prompt-submit"],
                                input=payload, capture_output=True, text=True, env=env,
                                check=True)
        took = (time.perf_counter() - started) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        if control:
            walking.release()
            quiet.append(took)
            quiet_cpu.append(cpu)
        else:
            times.append(took)
            own_cpu.append(cpu)
        fell_back += "answering here" in result.stderr or "budget" in result.stderr
        time.sleep(0.1 + 0.05 * (n % 5))  # hooks at varied points of the walk
    stop.set()
    walker.join()
    listener.stop()
    store.close()
    for what, taken, cpus in (("during walks", times, own_cpu), ("with no walk", quiet,
                                                                     quiet_cpu)):
        ordered = sorted(taken)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"{len(taken)} hooks {what}: whole process median "
              f"{statistics.median(taken):.0f} ms, p95 {p95:.0f} ms, max {max(taken):.0f} ms; "
              f"their own CPU median {statistics.median(cpus):.0f} ms")
    print(f"answered on their own path: {fell_back} of {2 * args.hooks}")
    if served:
        print(f"the server's time per request: median {statistics.median(served):.1f} ms, "
              f"max {max(served):.0f} ms")
    if walked:
        print(f"walks meanwhile: {len(walked)}, CPU median {statistics.median(walked):.3f} s; "
              f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
