"""What the prompt hook injects, measured on the dev sets (issue 16, item 5).

    python benchmarks/injection.py [--data-root DIR] [--sets NAME,...] [--sample N]
                                   [--styles plain,chat,pasted] [--sweep] [--semantic] [--json]

Finding the right memory in the top 10 is not the job; putting it in the
agent's context, within the budget, is. Each dev question (locomo-dev,
cmrc-sent, dulemon-utterance; `retrieval.py` says where they are read from)
is replayed as a realistic prompt in three styles:

- `plain`: the question as typed;
- `chat`: the question inside two sentences of chat about other work ("Morning!
  Before we go back to the migration, ... Keep it short, I'm in a meeting."),
  in the set's language;
- `pasted`: the question after a pasted traceback and config file, the kind of
  text that fills real prompts and shares words with many memories.

Each prompt goes through the real hook entry, `sage-mem hook
user-prompt-submit` (`agents.hooks.run_hook`, in process, with the hook's JSON
on stdin and its JSON answer read back), against a state folder whose index
cache was built first, as a long-lived store leaves it. Every prompt is its own
session, so nothing is held back as already injected. Reported per set and
style:

- `injected`: the share of prompts for which a relevant memory was injected;
- `of top 5`: the same share among the prompts whose relevant memory is in the
  top 5 of a search for that prompt (what the hook could have injected);
- `precision`: the share of injected memories that are relevant;
- `chars`: characters injected per prompt, on average (0 when nothing is);
- `empty`: the share of prompts for which nothing at all was injected (every
  dev question has a relevant memory);
- `memories`: memories injected per prompt, on average.

`--semantic` also answers every prompt as a long-lived process with the
semantic extra answers a hook over its socket (`hooks.serve_request` on a
store with vectors, as `retrieval.py`'s "sage-mem + semantic" row makes them):
rows `STYLE + semantic`. (A hook on its own path never uses the model.)

`--sample N` keeps N questions of each set, evenly spaced (default 300; 0 for
all). `--sweep` scores, on the same prompts, a grid of the relevance floor's
two constants and the per-prompt count through `agents.context.prompt_context`
(the function the hook calls), to choose them. The data is read in place, never
copied into the project.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from retrieval import (  # noqa: E402
    SETS,
    find_data_root,
    load_queries,
    parse_sets,
    semantic_store,
)

from sage_mem import MemoryStore  # noqa: E402
from sage_mem.agents import context  # noqa: E402
from sage_mem.agents.hooks import run_hook  # noqa: E402

STYLES = ("plain", "chat", "pasted")
CHINESE_SETS = frozenset({"cmrc-sent", "dulemon-utterance"})

# Two sentences of chat around the question, rotated over the questions.
CHAT_EN = [
    ("Morning! Before we go back to the migration script, one thing.",
     "Keep it short, I'm in a meeting in ten minutes."),
    ("Quick question while the tests run.",
     "After that, let's continue with the refactor of the parser."),
    ("Hey, I was going through my notes and got stuck.",
     "Thanks, and remind me to push the branch later."),
    ("Can you help me remember something?",
     "No need for code here, just tell me what you know."),
]
CHAT_ZH = [
    ("早上好！回到迁移脚本之前，先问一件事。", "简单说就行，我十分钟后要开会。"),
    ("测试还在跑，顺便问一下。", "问完我们继续重构解析器。"),
    ("我在翻以前的笔记，卡住了。", "谢谢，待会儿提醒我推一下分支。"),
    ("你能帮我回忆一下吗？", "这里不用写代码，告诉我你知道的就好。"),
]
PASTED = '''I get this when I run the importer:

```
Traceback (most recent call last):
  File "/srv/app/importer/run.py", line 88, in main
    rows = load_rows(config["source"], limit=config.get("limit", 500))
  File "/srv/app/importer/rows.py", line 41, in load_rows
    raise ValueError(f"unexpected column {name!r} in {path}")
ValueError: unexpected column 'updated_at' in exports/2024-03/customers.csv
```

config.yaml:

```yaml
source: exports/2024-03/customers.csv
limit: 500
retry: {attempts: 3, backoff_seconds: 2}
columns: [id, name, email, created_at]
```
'''
PASTED_ZH = "运行导入脚本时报错：\n\n" + PASTED.split("\n", 2)[2]

_INJECTED = re.compile(r"^memory (`+)(.+?)\1 \(", re.MULTILINE)


def prompt_for(question: str, style: str, number: int, chinese: bool) -> str:
    """`question` as a prompt of the given style (the number picks the chat sentences)."""
    if style == "plain":
        return question
    if style == "chat":
        before, after = (CHAT_ZH if chinese else CHAT_EN)[number % len(CHAT_EN)]
        joint = "" if chinese else " "
        return joint.join((before, question, after))
    pasted = PASTED_ZH if chinese else PASTED
    question_line = f"另外，{question}" if chinese else f"Also, unrelated: {question}"
    return f"{pasted}\n{question_line}"


def sample(queries: list[dict], size: int) -> list[dict]:
    """`size` queries evenly spaced over the list (all of them when size is 0 or more)."""
    if size <= 0 or size >= len(queries):
        return queries
    step = len(queries) / size
    return [queries[int(i * step)] for i in range(size)]


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def hook_injects(memories: Path, prompt: str, cwd: str) -> tuple[list[str], int]:
    """The ids the real prompt hook injects for `prompt`, and the characters it injects."""
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": cwd}
    out, err = io.StringIO(), io.StringIO()
    run_hook("user-prompt-submit", io.StringIO(json.dumps(payload)), out, err, folder=memories)
    if not out.getvalue().strip():
        return [], 0
    text = json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]
    return [found[1] for found in _INJECTED.findall(text)], len(text)


def server_injects(store: MemoryStore, prompt: str, cwd: str) -> tuple[list[str], int]:
    """What a long-lived process answering over the hook socket injects (`serve_request`)."""
    from sage_mem.agents.hooks import serve_request

    payload = {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": cwd}
    reply, _ = serve_request(store, {"event": "UserPromptSubmit", "payload": payload,
                                     "env": {}, "cwd": cwd})
    answer = reply.get("answer")
    if not answer:
        return [], 0
    text = answer["hookSpecificOutput"]["additionalContext"]
    return [found[1] for found in _INJECTED.findall(text)], len(text)


def score(rows: list[dict]) -> dict[str, float]:
    """The figures of the module docstring over rows of (relevant, injected, chars, top5)."""
    n = len(rows) or 1
    injected = sum(len(row["injected"]) for row in rows)
    relevant_injected = sum(len(set(row["injected"]) & row["relevant"]) for row in rows)
    in_top = [row for row in rows if row["top5"]]
    return {
        "n": len(rows),
        "injected": sum(1 for row in rows if set(row["injected"]) & row["relevant"]) / n,
        "of_top5": (sum(1 for row in in_top if set(row["injected"]) & row["relevant"])
                    / (len(in_top) or 1)),
        "top5": len(in_top) / n,
        "precision": relevant_injected / (injected or 1),
        "chars": sum(row["chars"] for row in rows) / n,
        "empty": sum(1 for row in rows if not row["injected"]) / n,
        "memories": injected / n,
    }


def prompts_of(name: str, queries: list[dict], styles: list[str]) -> list[dict]:
    chinese = name in CHINESE_SETS
    return [
        {"style": style, "prompt": prompt_for(query["question"], style, number, chinese),
         "relevant": set(query["relevant"])}
        for style in styles
        for number, query in enumerate(queries)
    ]


def run_set(name: str, folder: Path, args: argparse.Namespace) -> dict:
    queries = sample(load_queries(folder / "queries.jsonl"), args.sample)
    prompts = prompts_of(name, queries, args.styles)
    memories = folder / "memories"
    with tempfile.TemporaryDirectory() as tmp, environment(
        SAGE_MEM_STATE_DIR=str(Path(tmp) / "state"), SAGE_MEM_HOOK_LIMIT=None,
        # The hook answers in this process: no daemon started or asked (one would write
        # into the state folder after it is gone, and answer later prompts itself).
        SAGE_MEM_AUTODREAM="0", SAGE_MEM_DAEMON="off",
    ):
        cwd = str(Path(tmp) / "work")  # a folder of no project: every memory is global anyway
        store = MemoryStore(memories, watch=False)  # builds the index and writes its cache
        for item in prompts:
            query = item["prompt"][: context.MAX_QUERY_CHARS]
            item["top5"] = bool(
                {hit.id for hit in store.search(query, limit=5)} & item["relevant"])
        sweep = run_sweep(store, prompts) if args.sweep else None
        for item in prompts:
            item["injected"], item["chars"] = hook_injects(memories, item["prompt"], cwd)
        fused = []
        semantic = semantic_store(memories, Path(tmp) / "semantic", args.dense_cache, name) \
            if args.semantic else None
        if semantic is not None:
            for item in prompts:
                query = item["prompt"][: context.MAX_QUERY_CHARS]
                injected, chars = server_injects(semantic, item["prompt"], cwd)
                fused.append({**item, "style": item["style"] + " + semantic", "injected": injected,
                              "chars": chars, "top5": bool({
                                  hit.id for hit in semantic.search(query, limit=5)
                              } & item["relevant"])})
            if args.sweep:
                sweep = (sweep or []) + run_sweep(semantic, fused)
    by_style = {
        style: score([item for item in prompts + fused if item["style"] == style])
        for style in args.styles + [f"{style} + semantic" for style in args.styles if fused]
    }
    return {"questions": len(queries), "styles": by_style, "sweep": sweep}


SWEEP: dict[str, tuple[float, ...]] = {
    "unique": (0.15, 0.25, 0.35, 0.5),
    "top": (0.3, 0.4, 0.5, 0.6),
    "limit": (3, 4, 5),
}


def run_sweep(store: MemoryStore, prompts: list[dict]) -> list[dict]:
    """Each grid point's figures, through `context.prompt_context` (what the hook calls)."""
    now = datetime.now(UTC)
    saved = context.FLOOR_UNIQUE_FRACTION, context.FLOOR_TOP_FRACTION
    points = []
    try:
        for unique, top, limit in itertools.product(*SWEEP.values()):
            context.FLOOR_UNIQUE_FRACTION, context.FLOOR_TOP_FRACTION = unique, top
            rows = []
            for item in prompts:
                session = context.SessionLog(None)
                text, chosen = context.prompt_context(
                    store, item["prompt"], project="", session=session, limit=limit, now=now)
                rows.append({**item, "injected": [m.id for m in chosen], "chars": len(text)})
            points.append({
                "unique": unique, "top": top, "limit": limit,
                "styles": {style: score([r for r in rows if r["style"] == style])
                           for style in sorted({r["style"] for r in rows})},
            })
    finally:
        context.FLOOR_UNIQUE_FRACTION, context.FLOOR_TOP_FRACTION = saved
    return points


def parse_fractions(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None


def parse_styles(text: str) -> list[str]:
    styles = [part.strip() for part in text.split(",") if part.strip()]
    if not styles or any(style not in STYLES for style in styles):
        raise argparse.ArgumentTypeError(f"styles are {', '.join(STYLES)}; not {text!r}")
    return styles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=find_data_root(),
                        help="the folder holding locomo-dev/ and zh-dev/")
    parser.add_argument("--sets", type=parse_sets, default=list(SETS),
                        help="which sets, e.g. locomo-dev,cmrc-sent (default: all three)")
    parser.add_argument("--sample", type=int, default=300,
                        help="questions per set, evenly spaced (0: all)")
    parser.add_argument("--styles", type=parse_styles, default=list(STYLES),
                        help="prompt styles: plain,chat,pasted")
    parser.add_argument("--sweep", action="store_true",
                        help="also score a grid of the floor constants and the count")
    parser.add_argument("--sweep-top", type=parse_fractions,
                        help="with --sweep: these top-hit fractions instead of the grid's")
    parser.add_argument("--sweep-limit", type=parse_fractions,
                        help="with --sweep: these counts a prompt instead of the grid's")
    parser.add_argument("--semantic", action="store_true",
                        help="also answer each prompt as a long-lived process with the "
                             "semantic extra does over the hook socket")
    parser.add_argument("--dense-cache", type=Path,
                        default=Path.home() / ".cache" / "sage-mem-bench",
                        help="where the semantic row's vectors are kept between runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.sweep_top:
        SWEEP["top"] = tuple(args.sweep_top)
    if args.sweep_limit:
        SWEEP["limit"] = tuple(int(n) for n in args.sweep_limit)
    folders = {name: args.data_root / SETS[name] for name in args.sets}
    for folder in folders.values():
        if not (folder / "memories").is_dir():
            print(f"error: {folder / 'memories'} not found (pass --data-root)", file=sys.stderr)
            return 1
    figures = {name: run_set(name, folder, args) for name, folder in folders.items()}
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"relevance floor: {context.FLOOR_UNIQUE_FRACTION} of a unique term's idf and "
          f"{context.FLOOR_TOP_FRACTION} of the top hit; at most "
          f"{context.DEFAULT_PROMPT_LIMIT} memories a prompt\n")
    print("| set | style | prompts | injected | of top 5 | precision | chars | empty | memories |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, found in figures.items():
        for style, s in found["styles"].items():
            print(f"| {name} | {style} | {s['n']} | {s['injected']:.3f} | {s['of_top5']:.3f} | "
                  f"{s['precision']:.3f} | {s['chars']:.0f} | {s['empty']:.3f} | "
                  f"{s['memories']:.2f} |")
    for name, found in figures.items():
        if found["sweep"]:
            print_sweep(name, found["sweep"])
    return 0


def print_sweep(name: str, points: list[dict]) -> None:
    """One table per kind of answer (lexical, and `+ semantic` with --semantic)."""
    for kind in dict.fromkeys(tuple(p["styles"]) for p in points):
        print_sweep_table(name, [p for p in points if tuple(p["styles"]) == kind])


def print_sweep_table(name: str, points: list[dict]) -> None:
    styles = list(points[0]["styles"])
    print(f"\n### sweep on {name} (injected / of top 5 / precision / chars per style)\n")
    print("| unique | top | limit | " + " | ".join(styles) + " |")
    print("| --- | --- | --- |" + " --- |" * len(styles))
    for p in points:
        cells = [
            f"{s['injected']:.3f} / {s['of_top5']:.3f} / {s['precision']:.3f} / {s['chars']:.0f}"
            for s in (p["styles"][style] for style in styles)
        ]
        print(f"| {p['unique']} | {p['top']} | {p['limit']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
