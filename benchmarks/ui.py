"""Speed of the page (`sage-mem ui`) in Chromium, at 200 and 5,000 memories, or any sizes.

    python benchmarks/ui.py                       # 200 and 5,000 memories
    python benchmarks/ui.py --sizes 5000,20000 --runs 2
    python benchmarks/ui.py --sizes 50000 --runs 2 --no-dream
    python benchmarks/ui.py --sizes 20000,50000 --no-dream --work /tmp/ui-bench  # made once
    python benchmarks/ui.py --sizes 200 --runs 5  # smaller, quicker
    python benchmarks/ui.py --json

For each size, a synthetic folder (fixed seed; English, Chinese and mixed
descriptions and bodies, four categories, tags, [[links]] between memories)
is served by a real `UiServer` over a `MemoryStore` with its watcher, and
driven in Debian's Chromium (/usr/bin/chromium) through Playwright, as the
browser tests do. Measured in the page itself (`performance.now()`):

- page load: navigation start until the first result is on screen (median
  of `--runs` loads);
- keystroke to results: from the `input` event of the last character of a query
  until the result list shows that query's results, for queries in both
  languages typed key by key (median and p90 over the queries and runs);
- chip click: from the click on a category chip until the list shows its
  results;
- star map redraw: one full redraw of the sky (what a timeline step, a
  change of data or a resize costs), and one hover redraw (the drawn sky
  copied back plus the ring), each timed until a one-pixel read of the
  canvas returns (so that drawing the canvas defers is counted too).

- at real size (issue 30): the Audit tab and the first memory page of a
  new launch on the same folder (its state folder kept, as between two
  `sage-mem ui`s), and the server's CPU for that audit; a folder's first audit
  ever (its state folder emptied) until the Audit tab shows how far it got, and
  until its whole result, and its CPU; a change on disk (an editor's save, one
  every 0.3 s or so) until the open list shows it (median and worst of 15+);
  the list ordered oldest first; a report run started from the page (the
  rules only) until its progress shows, and its page until its first
  changes show, with the bytes of that answer against all changes at once.

Targets: keystroke to results at most 100 ms, a redraw at most 16 ms, the
Audit tab 1 s, the first memory page 150 ms, a change on disk 300 ms
(median) and 1 s (worst), at 5,000 memories, and holding at 20,000 and
50,000. Wall-clock on whatever else the machine is doing: the output
names the machine and its load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CATEGORIES = ["user", "feedback", "project", "reference"]
EN = ("release deploy tests python rust api token cache watcher editor merge link review "
      "friday staging postgres dashboard runbook commit branch search index memory").split()
ZH = "猫 芝麻 发布 测试 部署 记忆 索引 搜索 用户 项目 周五 缓存 审查 分支 数据库".split()
CHANGES = 15  # changes on disk measured (at least)
QUERIES = ["release friday", "芝麻", "python tests", "部署 周五", "token cache", "记忆 索引"]

# In the page: when the first result appeared; when the result list last changed.
PROBE = """
(() => {
  window.__bench = { firstResult: null, listChanged: 0, keydown: 0 };
  const watch = () => {
    const list = document.getElementById('results');
    if (!list) return false;
    new MutationObserver(() => {
      window.__bench.listChanged = performance.now();
      if (window.__bench.firstResult === null && list.querySelector('li.result')) {
        window.__bench.firstResult = performance.now();
      }
    }).observe(list, { childList: true, subtree: true, characterData: true });
    return true;
  };
  new MutationObserver((_, observer) => { if (watch()) observer.disconnect(); })
    .observe(document, { childList: true, subtree: true });
  // The input event, not keydown: a character typed through an IME (Chinese) has no keydown.
  document.addEventListener('input', () => { window.__bench.keydown = performance.now(); }, true);
})();
"""


def make_folder(folder: Path, size: int, seed: int = 18) -> Path:
    """`size` memories in both languages, with tags and links, deterministic for a seed."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(size):
        category = CATEGORIES[n % 4]
        words = [rng.choice(EN) for _ in range(4)]
        hanzi = "".join(rng.choice(ZH) for _ in range(3))
        kind = n % 3
        description = (" ".join(words) if kind == 0 else hanzi + "，" + hanzi[::-1] if kind == 1
                       else " ".join(words[:2]) + " " + hanzi)
        body = " ".join(rng.choice(EN + ZH) for _ in range(rng.randint(10, 200)))
        target = f"{CATEGORIES[(n * 7) % 4]}_{(n * 7919) % size:05d}"
        tags = sorted({rng.choice(EN[:8]) for _ in range(2)})
        day = 1 + n % 28
        text = (f"---\ndescription: {json.dumps(description, ensure_ascii=False)}\n"
                f"category: {category}\ntags: [{', '.join(tags)}]\n"
                f"created: 2025-{1 + n % 12:02d}-{day:02d}\n"
                f"updated: 2026-{1 + n % 11:02d}-{day:02d}T10:00:00Z\n---\n\n"
                f"{body}\n\nSee [[{target}]].\n")
        (folder / f"{category}_{n:05d}.md").write_text(text, encoding="utf-8")
    return folder


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _p90(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def _wait_quiet(
    page: Any, after: float | None = None, quiet_ms: float = 200, timeout_ms: float = 60_000
) -> None:
    """Until the result list changed after `after` (a page time) and then stayed as it is."""
    page.wait_for_function(
        """([after, quiet]) => window.__bench.listChanged > after
            && performance.now() - window.__bench.listChanged > quiet""",
        arg=[-1 if after is None else after, quiet_ms], timeout=timeout_ms, polling=10,
    )


def measure(size: int, runs: int, work: Path, dream: bool = True) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from sage_mem.store import MemoryStore
    from sage_mem.ui import UiServer

    folder = work / f"memory-{size}"
    if not (folder / "user_00000.md").is_file() or len(list(folder.glob("*.md"))) < size:
        make_folder(folder, size)  # (kept in `--work`: made once, its index built once)
    out: dict[str, Any] = {"memories": size}
    # As `sage-mem ui` does: MEMORY.md follows a hand edit (`keep_catalog`).
    with MemoryStore(folder, watch=True) as store, \
            UiServer(store, port=0, keep_catalog=True).start() as server, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.add_init_script(PROBE)
        page = context.new_page()
        page.goto(server.url)  # takes the token
        page.wait_for_selector("#results li.result")
        loads = []
        for _ in range(runs):
            page.reload()
            page.wait_for_selector("#results li.result")
            page.wait_for_function("() => window.__bench.firstResult !== null")
            loads.append(page.evaluate("() => window.__bench.firstResult"))
        out["page_load_ms"] = _median(loads)

        keystrokes = []
        search = page.locator("#search")
        for _ in range(runs):
            for query in QUERIES:
                if search.input_value():
                    mark = page.evaluate("() => performance.now()")
                    search.fill("")
                    _wait_quiet(page, mark)
                search.focus()
                page.keyboard.type(query, delay=60)
                last = page.evaluate("() => window.__bench.keydown")
                _wait_quiet(page, last)
                keystrokes.append(page.evaluate("() => window.__bench.listChanged") - last)
        out["keystroke_ms"] = _median(keystrokes)
        out["keystroke_p90_ms"] = _p90(keystrokes)

        if search.input_value():
            mark = page.evaluate("() => performance.now()")
            search.fill("")
            _wait_quiet(page, mark)
        chips = []
        for _ in range(runs):
            for category in CATEGORIES:
                chip = page.locator(f'#category-chips [data-category="{category}"]')
                chip.evaluate("c => { c.addEventListener('pointerdown', () => {"
                              " window.__bench.pressed = performance.now(); }, { once: true }); }")
                chip.click()
                started = page.evaluate("() => window.__bench.pressed")
                _wait_quiet(page, started)
                chips.append(page.evaluate("() => window.__bench.listChanged") - started)
                mark = page.evaluate("() => performance.now()")
                chip.click()
                _wait_quiet(page, mark)
        out["chip_click_ms"] = _median(chips)

        out.update(measure_live(page, folder, runs))
        out.update(measure_first_audit(browser, store))
        out.update(measure_first_views(browser, store, folder, runs))
        out.update(measure_oldest(page))
        if dream:
            out.update(measure_dream(page, server))

        out["star_first_draw_ms"] = _first_star_draw(page, size)
        # Each draw is timed to a one-pixel read of the canvas, which waits for the drawing
        # to be done (a canvas may defer its work to the next frame otherwise).
        full, hover = [], []
        for _ in range(runs * 10):
            full.append(page.evaluate("""() => {
                const map = document.getElementById('starmap').starmap;
                const started = performance.now();
                map.layerKey = null; map.draw();
                map.canvas.getContext('2d').getImageData(0, 0, 1, 1);
                return performance.now() - started;
            }"""))
            hover.append(page.evaluate("""() => {
                const map = document.getElementById('starmap').starmap;
                map.hover = map.stars[Math.floor(Math.random() * map.stars.length)];
                const started = performance.now();
                map.draw();
                map.canvas.getContext('2d').getImageData(0, 0, 1, 1);
                return performance.now() - started;
            }"""))
        out["redraw_ms"] = _median(full)
        out["redraw_p90_ms"] = _p90(full)
        out["hover_redraw_ms"] = _median(hover)
        browser.close()
    return out


def _first_star_draw(page: Any, size: int) -> float:
    """The star map opened from the list: from setting its address until every star is drawn
    (the canvas says how many it drew, then a one-pixel read waits for the drawing)."""
    page.evaluate("() => { location.hash = '#/'; }")
    page.wait_for_selector("#results li.result")
    return float(page.evaluate("""(size) => new Promise((done, fail) => {
        const started = performance.now();
        const look = () => {
            const map = document.getElementById('starmap');
            if (map && map.dataset.starCount === String(size)) {
                map.getContext('2d').getImageData(0, 0, 1, 1);
                done(performance.now() - started);
                return;
            }
            if (performance.now() - started > 600000) { fail(new Error('no star map')); return; }
            setTimeout(look, 2);
        };
        location.hash = '#/stars';
        look();
    })""", size))


def _timed_view(page: Any, hash_: str, ready: str, timeout_ms: float = 60_000) -> float:
    """Milliseconds from setting the address to `ready` being on the page (measured in it)."""
    return page.evaluate("""([hash, ready, timeout]) => new Promise((done, fail) => {
        const started = performance.now();
        const look = () => {
            if (document.querySelector(ready)) { done(performance.now() - started); return true; }
            return false;
        };
        const observer = new MutationObserver(() => { if (look()) observer.disconnect(); });
        observer.observe(document.body, { childList: true, subtree: true });
        setTimeout(() => { observer.disconnect(); fail(new Error('no ' + ready)); }, timeout);
        location.hash = hash;
    })""", [hash_, ready, timeout_ms])


def measure_live(page: Any, folder: Path, runs: int) -> dict[str, Any]:
    """A change on disk (an editor's save of one memory) until the open list shows it."""
    page.evaluate("() => { location.hash = '#/'; }")
    page.wait_for_selector("#results li.result")
    delays = []
    paths = sorted(folder.glob("user_*.md"))
    for n in range(max(CHANGES, runs * 5)):
        path = paths[(n * 37) % len(paths)]
        marker = f"Edited on disk {n} {time.time_ns()}"
        text = path.read_text(encoding="utf-8")
        head, rest = text.split("\ndescription: ", 1)
        rest = rest.split("\n", 1)[1]
        stamp = f"2027-01-01T00:{n // 60:02d}:{n % 60:02d}Z"
        rest = "\n".join(f"updated: {stamp}" if line.startswith("updated:") else line
                         for line in rest.split("\n"))
        started = time.perf_counter()
        path.write_text(f"{head}\ndescription: {json.dumps(marker)}\n{rest}", encoding="utf-8")
        page.wait_for_function("(marker) => document.getElementById('results')"
                               "?.textContent.includes(marker)", arg=marker, polling=5,
                               timeout=30_000)
        delays.append((time.perf_counter() - started) * 1000)
        time.sleep(0.3)
    return {"disk_to_list_ms": _median(delays), "disk_to_list_max_ms": max(delays)}


def measure_first_audit(browser: Any, store: Any) -> dict[str, Any]:
    """A folder's first audit ever (no results kept in its state folder): a new launch's Audit
    tab until it shows how far the audit got and what the files read so far hold, and until
    the whole result; and that audit's server CPU, alone."""
    from sage_mem.ui import UiServer
    from sage_mem.ui.audit import AUDIT_CACHE, AUDIT_LAST, AuditState

    def forget() -> None:
        # The audit's results only: the link graph saved beside them (`ui/links-graph.bin`) is
        # what the next launches' first memory page reads (`measure_first_views`).
        for kept in (AUDIT_CACHE, AUDIT_LAST):
            store.folder.state_path(*kept).unlink(missing_ok=True)

    forget()
    with UiServer(store, port=0).start() as server:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        page.goto(server.url)
        page.wait_for_selector("#results li.result")
        started = page.evaluate("() => performance.now()")
        # What it found so far and how far it got (`#audit-checking`), or its whole result.
        first = _timed_view(page, "#/audit", "#audit-checking, #findings, #audit .notice.ok",
                            1_800_000)
        page.wait_for_function("() => document.querySelector('#findings, #audit .notice.ok')"
                               " && !document.getElementById('audit-checking')",
                               polling=50, timeout=1_800_000)
        whole = page.evaluate("() => performance.now()") - started
        context.close()
    forget()
    started = time.process_time()
    AuditState().get(store, 0)
    cpu = (time.process_time() - started) * 1000
    return {"first_audit_shows_ms": first, "first_audit_whole_ms": whole,
            "first_audit_cpu_ms": cpu}


def measure_first_views(browser: Any, store: Any, folder: Path, runs: int) -> dict[str, Any]:
    """A new launch of the page on the same folder (its state folder kept, as between two
    `sage-mem ui`s): the Audit tab to its results, and the first memory page. What a process
    keeps with its open store (the link graph) is forgotten before each launch, as a new
    process starts without it."""
    from sage_mem.ui import UiServer, links

    audits, memories = [], []
    ids = sorted(p.stem for p in folder.glob("project_*.md"))
    for n in range(runs):
        getattr(links, "_KEPT", {}).pop(store, None)
        with UiServer(store, port=0).start() as server:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            page = context.new_page()
            page.goto(server.url)
            page.wait_for_selector("#results li.result")
            memories.append(_timed_view(page, f"#/m/{ids[(n * 11) % len(ids)]}",
                                        "#memory-title"))
            audits.append(_timed_view(page, "#/audit", "#findings, #audit .notice.ok"))
            context.close()
    started = time.process_time()
    from sage_mem.ui.audit import AuditState

    AuditState().get(store, 0)
    audit_cpu = (time.process_time() - started) * 1000
    return {"audit_tab_ms": _median(audits), "audit_cpu_ms": audit_cpu,
            "first_memory_ms": _median(memories)}


def measure_oldest(page: Any) -> dict[str, Any]:
    """The list ordered oldest first, until its first row is there (was: 50 clicks of Show more)."""
    page.evaluate("() => { location.hash = '#/'; }")
    page.wait_for_selector("#results li.result")
    taken = page.evaluate("""() => new Promise((done) => {
        const list = document.getElementById('results');
        const first = list.querySelector('li.result')?.dataset.id;
        const started = performance.now();
        new MutationObserver((_, observer) => {
            const now = list.querySelector('li.result')?.dataset.id;
            if (now && now !== first) { observer.disconnect(); done(performance.now() - started); }
        }).observe(list, { childList: true, subtree: true });
        const sort = document.getElementById('sort');
        sort.value = 'oldest';
        sort.dispatchEvent(new Event('change'));
    })""")
    page.evaluate("() => { const s = document.getElementById('sort'); s.value = 'newest';"
                  " s.dispatchEvent(new Event('change')); }")
    return {"oldest_ms": taken}


def measure_dream(page: Any, server: Any) -> dict[str, Any]:
    """A report run started from the page (the rules only: no agent command is set): how soon
    its progress shows and how long it runs; then its page: the first page of its changes,
    and the bytes of that answer against all of its changes at once."""
    import http.client

    page.evaluate("() => { location.hash = '#/runs'; }")
    page.wait_for_selector("#dream-report")
    started = time.perf_counter()
    page.click("#dream-report")
    page.wait_for_function("() => /so far/.test(document.getElementById('dream-progress')"
                           "?.textContent || '')", polling=50, timeout=600_000)
    progress = (time.perf_counter() - started) * 1000
    page.wait_for_selector("#run-changes, #run-title", timeout=3_600_000)
    run_seconds = time.perf_counter() - started
    run_id = page.evaluate("() => decodeURIComponent(location.hash.replace('#/runs/', ''))")
    shown = _timed_view(page, "#/runs", "#runs tbody tr")
    page_ms = _timed_view(page, f"#/runs/{run_id}", "#run-changes details.change, #run-title")
    # Narrowed to one kind (the last the menu offers): until the list holds only that kind.
    page.wait_for_selector("#run-changes details.change", timeout=600_000)
    filtered = page.evaluate("""() => new Promise((done) => {
        const select = document.getElementById('change-kind');
        if (!select || select.options.length < 2) { done(null); return; }
        const kind = select.options[select.options.length - 1].value;
        const started = performance.now();
        const look = () => {
            const shown = Array.from(document.querySelectorAll('#run-changes details.change'));
            if (shown.length && shown.every((d) => d.dataset.kind === kind)) {
                done(performance.now() - started); return;
            }
            setTimeout(look, 2);
        };
        select.value = kind;
        select.dispatchEvent(new Event('change'));
        look();
    })""")

    def size(query: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
        conn.request("GET", f"/api/runs/{run_id}{query}", headers={
            "X-Sage-Token": server.token, "Host": f"127.0.0.1:{server.port}"})
        body = conn.getresponse().read()
        conn.close()
        return len(body)

    return {"dream_progress_ms": progress, "dream_run_s": run_seconds, "runs_list_ms": shown,
            "run_page_ms": page_ms, **({"run_kind_ms": filtered} if filtered is not None else {}),
            "run_page_bytes": size(""),
            "run_all_bytes": size("?limit=100000")}


def machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, load average {load[0]:.2f}")


def table(results: list[dict[str, Any]]) -> str:
    rows = [
        ("page load (to the first result)", "page_load_ms", None),
        ("Audit tab to its results, a new launch", "audit_tab_ms", 1000),
        ("the audit of a new launch, server CPU", "audit_cpu_ms", None),
        ("a first audit ever: its progress shows", "first_audit_shows_ms", None),
        ("a first audit ever: its whole result shows", "first_audit_whole_ms", None),
        ("a first audit ever, server CPU", "first_audit_cpu_ms", None),
        ("first memory page, a new launch (a new process's graph)", "first_memory_ms", 150),
        ("change on disk to the open list, median", "disk_to_list_ms", 300),
        ("change on disk to the open list, worst", "disk_to_list_max_ms", 1000),
        ("the list ordered oldest first, to its first row", "oldest_ms", None),
        ("a dream run from the page: its progress shows", "dream_progress_ms", None),
        ("a dream run's page, to its first changes", "run_page_ms", None),
        ("a dream run's page, narrowed to one kind", "run_kind_ms", None),
        ("keystroke to results, median", "keystroke_ms", 100),
        ("keystroke to results, p90", "keystroke_p90_ms", None),
        ("chip click to results", "chip_click_ms", None),
        ("star map, first draw (from the list)", "star_first_draw_ms", None),
        ("star map redraw (whole sky), median", "redraw_ms", 16),
        ("star map redraw (whole sky), p90", "redraw_p90_ms", None),
        ("star map hover redraw", "hover_redraw_ms", None),
    ]
    head = "| | " + " | ".join(f"{r['memories']:,} memories" for r in results) + " | target |"
    lines = [head, "| --- | " + " | ".join("---:" for _ in results) + " | --- |"]
    rows = [row for row in rows if any(row[1] in r for r in results)]
    for label, key, target in rows:
        cells = " | ".join(f"{r[key]:.1f} ms" if key in r else "–" for r in results)
        lines.append(f"| {label} | {cells} | {f'≤ {target:,} ms' if target else ''} |")
    extra = [("a dream run (report, the rules only), whole", "dream_run_s", "s"),
             ("its page's first answer (50 changes)", "run_page_bytes", "bytes"),
             ("all of its changes at once (as before)", "run_all_bytes", "bytes")]
    for label, key, unit in extra:
        if any(key in r for r in results):
            cells = " | ".join("–" if key not in r else f"{r[key]:,.1f} s" if unit == "s"
                               else f"{r[key]:,} B" for r in results)
            lines.append(f"| {label} | {cells} | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,5000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-dream", action="store_true",
                        help="leave out the dream run from the page (a minute or more at 5,000)")
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the folders (and their state: the index, the saved graph) "
                             "here and use them again next time (a folder of 50,000 takes "
                             "minutes to make and index; a dream run changes it); default a "
                             "temporary folder")
    parser.add_argument("--dream-sizes", default=None,
                        help="run the dream only at these sizes (e.g. 5000,20000: the rules "
                             "take many minutes at 50,000); default every size")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: run .ci/ui-setup", file=sys.stderr)
        return 1
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    before = machine()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sage-mem-ui-bench-") as temporary:
        work = args.work or Path(temporary)
        os.environ["HOME"] = str(Path(work) / "home")
        results = []
        dreams = ({int(s) for s in args.dream_sizes.split(",") if s.strip()}
                  if args.dream_sizes is not None else set(sizes))
        for size in sizes:
            results.append(measure(size, args.runs, Path(work),
                                   dream=not args.no_dream and size in dreams))
            # Each size as it is done (a run at 50,000 takes a while): kept if a later one fails.
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"machine": before, "results": results}, indent=2))
        return 0
    print(table(results))
    print(f"\n{before}; after: {machine().rsplit(', ', 1)[-1]}; "
          f"{time.monotonic() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
