"""Server CPU a change on disk costs the page (`sage-mem ui`), step by step, without a browser.

    python benchmarks/ui_change_cpu.py --size 5000
    python benchmarks/ui_change_cpu.py --size 50000 --tree /path/to/an/older/checkout

For a synthetic folder (`benchmarks/ui.py`'s), one memory is edited on disk at a time and
the work that follows it in the server is timed (CPU, median of 7 changes): the store's
refresh of that file and MEMORY.md brought in line (the watcher's), the list's summary and
its first page as JSON (what the open list asks for), the link graph (made ahead for a
memory's page), the footer's counts and size, and the audit the badge asks for (its first,
at start-up, left out). `--tree` runs an older checkout's code on the same folder, for a
same-run comparison.
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


def measure(size: int, work: Path) -> dict[str, float]:
    from sage_mem.store import MemoryStore
    from sage_mem.ui import api, overview
    from sage_mem.ui.links import LinkGraph

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ui import make_folder

    folder = work / f"memory-{size}"
    if not folder.exists():
        make_folder(folder, size)
    store = MemoryStore(folder)
    store.list()
    summary: Any
    # One listing a change, shared (since 7111fc5); `FolderSize` moved from api to overview.
    folder_size = getattr(overview, "FolderSize", None) or getattr(api, "FolderSize", None)
    if folder_size is not None:
        from sage_mem.ui.listing import Listings

        listings = Listings()
        summary, graph = api.FolderSummary(listings), LinkGraph(listings)
        size_of = folder_size(listings)

        def footer(generation: int) -> Any:
            return overview.info_data(store, size_of.get(store, generation))
    else:
        summary, graph = api.FolderSummary(), LinkGraph()

        def footer(generation: int) -> Any:
            return overview.info_data(store)

    from sage_mem.ui import audit as ui_audit

    try:  # the badge's audit: after a change, only the changed files (since page3)
        auditing = ui_audit.AuditState(listings)
    except (TypeError, NameError):
        auditing = ui_audit.AuditState()

    paths = sorted(folder.glob("user_*.md"))
    rows: list[dict[str, float]] = []
    for generation in range(8):
        path = paths[(generation * 37) % len(paths)]
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("See [[", f"Edit {generation}. See [[", 1), encoding="utf-8")
        steps = {
            "refresh and MEMORY.md": lambda path=path: (store.refresh([str(path)]),
                                                        store.regenerate_index()),
            "the list's summary and first page": lambda g=generation: json.dumps(
                api.list_memories(store, "", [], [], 100, summary.get(store, g),
                                  folder_summary=summary)),
            "the link graph": lambda g=generation: graph.get(store, g),
            "the footer": lambda g=generation: footer(g),
            "the audit the badge asks for": lambda g=generation: auditing.get(store, g),
        }
        row = {}
        for label, step in steps.items():
            started = time.process_time()
            step()
            row[label] = (time.process_time() - started) * 1000
        if generation:  # the first builds what the next ones update
            rows.append(row)
    out = {label: statistics.median(r[label] for r in rows) for label in rows[0]}
    out["in all"] = sum(out.values())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--tree", help="a checkout whose sage_mem to measure instead")
    parser.add_argument("--work", help="where to keep the folder (made once; default: a temp)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tree).resolve() if args.tree else ROOT))
    with tempfile.TemporaryDirectory(prefix="sage-mem-ui-cpu-") as temporary:
        work = Path(args.work) if args.work else Path(temporary)
        os.environ["HOME"] = str(work / "home")
        result = measure(args.size, work)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    for label, value in result.items():
        print(f"{label:40s} {value:8.1f} ms CPU")
    print(f"({args.size:,} memories, median of 7 changes; load average {load:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
