"""The first memory page of a new launch of `sage-mem ui`, without a browser.

    python benchmarks/ui_first_page.py --size 20000 --runs 3

For a synthetic folder (`benchmarks/ui.py`'s), each run starts a new `UiServer` on the same
loaded store (as `benchmarks/ui.py`'s "a new launch" does), sends the requests the page sends
at once as it opens (the list, the footer, the audit for the badge), and asks for a memory's
page as soon as the list is answered: the wall-clock time of that page, of the list, and the
server's CPU for the whole run. The link graph is kept with the open store, so a launch after
the first finds it made; `--fresh` forgets it before each launch, as a new process starts
without it (it then reads the one the last launch saved in the state folder); `--unsaved`
also deletes that file, as at the very first launch on a folder; `--direct` asks for the
memory's page at once with the footer and the audit's badge (no list), as a page opened at a
memory's address does: it then comes while the saved graph is still being read. Say the load
(`uptime`) with the figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _get(server: Any, path: str) -> float:
    request = urllib.request.Request(server.origin + path, headers={"X-Sage-Token": server.token})
    started = time.perf_counter()
    with urllib.request.urlopen(request) as answer:
        answer.read()
    return (time.perf_counter() - started) * 1000


def _ask(took: dict[str, float], server: Any, path: str) -> None:
    took[path] = _get(server, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "sage-mem-bench")
    parser.add_argument("--fresh", action="store_true",
                        help="forget the link graph kept with the open store before each launch, "
                             "as a new `sage-mem ui` process starts without it")
    parser.add_argument("--unsaved", action="store_true",
                        help="with --fresh: delete the graph saved in the state folder too")
    parser.add_argument("--direct", action="store_true",
                        help="ask for the memory page at once (no list), as a page opened at "
                             "its address does")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ui import make_folder

    from sage_mem.store import MemoryStore
    from sage_mem.ui import UiServer

    folder = args.work / f"memory-{args.size}"
    if not folder.exists():
        make_folder(folder, args.size)
    ids = sorted(p.stem for p in folder.glob("project_*.md"))
    with MemoryStore(folder, watch=True) as store:
        store.list()
        for n in range(args.runs):
            if args.fresh:
                from sage_mem.ui import links

                getattr(links, "_KEPT", {}).pop(store, None)
                if args.unsaved:
                    from sage_mem.ui.saved_graph import GRAPH_FILE

                    store.folder.state_path(*GRAPH_FILE).unlink(missing_ok=True)
            with UiServer(store, port=0, keep_catalog=True).start() as server:
                took: dict[str, float] = {}
                cpu = time.process_time()
                started = time.perf_counter()
                memory = "/api/memory?id=" + ids[(n * 11) % len(ids)]
                first = memory if args.direct else "/api/memories?limit=100"
                asking = [threading.Thread(target=_ask, args=(took, server, p))
                          for p in (first, "/api/info", "/api/audit")]
                for each in asking:
                    each.start()
                asking[0].join()
                listed = (time.perf_counter() - started) * 1000
                page = took[memory] if args.direct else _get(server, memory)
                for each in asking:
                    each.join()
                said = f"the memory page at once {page:.0f} ms" if args.direct else \
                    f"the list {listed:.0f} ms, then the memory page {page:.0f} ms"
                print(f"run {n}: {said}; "
                      f"the audit {took['/api/audit']:.0f} ms; server CPU "
                      f"{(time.process_time() - cpu) * 1000:.0f} ms", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
