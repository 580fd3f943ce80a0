"""Where the time of a change on disk goes, from an editor's save to the open list showing it.

    python benchmarks/ui_change_timeline.py --size 20000 --work /tmp/sage-mem-bench

For a synthetic folder (`benchmarks/ui.py`'s, made once in `--work`), a real `UiServer` over a
watched store, the list open in Chromium; each of 15 saves (one every 0.3 s or so, moving the
memory to the top of the list, as `benchmarks/ui.py` saves) is timed in milliseconds from the
save: the watcher's refresh of the store starting and ending, the live feed's event, `MEMORY.md`
made again, the list's request answered in the server, and the list showing the change. The
steps are marked by wrapping the functions that do them, in this process. Say the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--changes", type=int, default=15)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "sage-mem-bench")
    parser.add_argument("--settle", type=float, default=8.0,
                        help="seconds between the page's load and the first save (0: the saves "
                             "come while the launch's own audit and graph are being made)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT))
    os.environ["HOME"] = str(args.work / "home")
    import ui as bench
    from playwright.sync_api import sync_playwright

    from sage_mem.store import MemoryStore
    from sage_mem.ui import UiServer, api, live

    marks: dict[str, float] = {}

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def marked(*a: Any, **k: Any) -> Any:
            marks.setdefault(label + " starts", time.perf_counter())
            try:
                return original(*a, **k)
            finally:
                marks.setdefault(label + " ends", time.perf_counter())

        setattr(owner, name, marked)

    wrap(MemoryStore, "refresh", "refresh")
    wrap(MemoryStore, "regenerate_index", "MEMORY.md")
    wrap(live.ChangeFeed, "bump", "event")
    wrap(api, "list_memories", "list")
    from sage_mem.ui import audit

    wrap(audit.AuditState, "get", "audit")

    folder = args.work / f"memory-{args.size}"
    if not folder.exists():
        bench.make_folder(folder, args.size)
    rows = []
    import inspect

    # As `sage-mem ui` does: MEMORY.md follows a hand edit (before `keep_catalog`, the
    # watcher's `follow_hand_edits`: so that the commit before can be timed by the same script).
    catalog = "keep_catalog" in inspect.signature(UiServer).parameters
    with MemoryStore(folder, watch=True) as store, \
            UiServer(store, port=0, **({"keep_catalog": True} if catalog else {})).start() \
            as server, sync_playwright() as playwright:
        if not catalog:
            store.follow_hand_edits()
        browser = playwright.chromium.launch(executable_path=bench.CHROMIUM, args=bench.ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
        page.goto(server.url)
        page.wait_for_selector("#results li.result")
        time.sleep(args.settle)  # the launch's audit and graph (by default)
        paths = sorted(folder.glob("user_*.md"))
        for n in range(args.changes):
            path = paths[(n * 37 + 5) % len(paths)]
            marker = f"Timed on disk {n} {time.time_ns()}"
            head, rest = path.read_text(encoding="utf-8").split("\ndescription: ", 1)
            stamp = f"2027-03-01T00:{n // 60:02d}:{n % 60:02d}Z"
            rest = "\n".join(f"updated: {stamp}" if line.startswith("updated:") else line
                             for line in rest.split("\n", 1)[1].split("\n"))
            marks.clear()
            started = time.perf_counter()
            path.write_text(f"{head}\ndescription: {json.dumps(marker)}\n{rest}", encoding="utf-8")
            page.wait_for_function("(m) => document.getElementById('results')"
                                   "?.textContent.includes(m)", arg=marker, polling=5,
                                   timeout=30_000)
            marks["shown"] = time.perf_counter()
            rows.append({k: (v - started) * 1000 for k, v in marks.items()})
            time.sleep(0.3)
        browser.close()
    for label in rows[0]:
        values = [row[label] for row in rows if label in row]
        print(f"{label:20s} median {statistics.median(values):6.0f} ms, "
              f"{min(values):4.0f}–{max(values):4.0f} ms after the save")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(f"({args.size:,} memories, {len(rows)} saves; load average {load:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
