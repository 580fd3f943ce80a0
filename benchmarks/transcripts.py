"""Speed of `search_sessions` (the dream's search over session transcripts) at its read bound.

    python benchmarks/transcripts.py                 # 96 MB of transcripts: the 64 MB bound bites
    python benchmarks/transcripts.py --mb 8 --runs 3 # smaller, quicker

Writes synthetic Claude Code transcripts (fixed seed; English and Chinese
messages in the JSONL records Claude Code writes: user strings, assistant
text blocks, tool results) under a temp folder, then times searches that
match many lines, few lines and none, in English and Chinese; prints the
median of `--runs` each, with the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sage_mem.dream.transcripts import MAX_BYTES_READ, search_sessions  # noqa: E402

WORDS_EN = "the deploy window release database migration staging tests review plan".split()
WORDS_ZH = "数据库 迁移 周会 发布 测试 上线 回滚 评审 计划 需求".split()
QUERIES = ["deploy window", "数据库 迁移", "rollback quokka", "从来没有的词", "nothingmatches"]


def write_corpus(root: Path, megabytes: float, seed: int = 7) -> int:
    rng = random.Random(seed)
    total, project, session = 0, 0, 0
    while total < megabytes * 1_000_000:
        folder = root / f"-home-dev-project{project % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for n in range(1000):
            words = WORDS_ZH if n % 3 == 0 else WORDS_EN
            text = " ".join(rng.choice(words) for _ in range(25))
            stamp = f"2026-11-{1 + n % 28:02d}T{n % 24:02d}:00:00.000Z"
            base = {"parentUuid": None, "isSidechain": False, "userType": "external",
                    "cwd": "/home/dev/project", "sessionId": f"s{session}", "version": "2.1.37",
                    "uuid": f"u{session}-{n}", "timestamp": stamp}
            if n % 4 == 0:
                message = {"role": "user", "content": text}
                kind = "user"
            elif n % 4 == 3:
                message = {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": text * 6}]}
                kind = "user"
            else:
                message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
                kind = "assistant"
            lines.append(json.dumps({**base, "type": kind, "message": message},
                                    ensure_ascii=False))
        data = ("\n".join(lines) + "\n").encode("utf-8")
        (folder / f"s{session}.jsonl").write_bytes(data)
        total += len(data)
        session += 1
        project += 1
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=96.0, help="megabytes of transcripts")
    parser.add_argument("--runs", type=int, default=5, help="searches per query")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "projects"
        size = write_corpus(root, args.mb)
        print(f"transcripts: {size / 1e6:.0f} MB; read bound {MAX_BYTES_READ / 2**20:.0f} MiB "
              f"a search; load average {os.getloadavg()[0]:.1f}")
        for query in QUERIES:
            times, found = [], None
            for _ in range(args.runs):
                started = time.perf_counter()
                found = search_sessions(root, query, limit=8)
                times.append(time.perf_counter() - started)
            assert found is not None
            scanned = found["scanned"]
            print(f"{query!r:>20}: median {statistics.median(times):.2f} s, "
                  f"{len(found['hits'])} hits, {scanned['files']} files, "
                  f"{scanned['messages']} messages{', truncated' if scanned['truncated'] else ''}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
