"""How long `sage-mem serve` takes from spawn to its `initialize` answer, against a baseline.

    python benchmarks/serve_start.py [--runs 7] [--memories 200] [--cold] [--before CHECKOUT]

Each run spawns the server, writes MCP's `initialize` request on its stdin at
once (as a client does) and times the answer's first line: wall time, and the
server's CPU time (user + sys, read from /proc at that moment, Linux only).
The same run measures the smallest server on the same `mcp` SDK (an
`MCPServer` with one tool, on stdio) and `python -c pass`, so that a loaded
machine's figures can be compared as ratios. Prints medians and the ratio
serve ÷ smallest server (issue 32's target: at most 1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALLEST = """
from mcp.server import MCPServer

server = MCPServer("smallest")


@server.tool()
def echo(text: str) -> str:
    \"\"\"Echo the text.\"\"\"
    return text


server.run("stdio")
"""

INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "serve_start", "version": "1"}},
}) + "\n"


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + sys), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_answer(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Spawn `argv`, send initialize, return (wall, cpu) seconds at its first line of answer."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE.encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    wall = time.perf_counter() - start
    cpu = cpu_seconds(proc.pid)
    proc.kill()
    proc.wait()
    if b'"result"' not in line:
        raise SystemExit(f"{argv}: no initialize answer: {line[:200]!r}")
    return wall, cpu


def first_search(argv: list[str], env: dict[str, str], tool: str,
                 arguments: dict[str, object]) -> tuple[float, float, float, float]:
    """Spawn `argv`, then as a client does: `initialize`, and once it is answered
    `notifications/initialized` and a `tools/call` of `tool`. Returns (wall, cpu) seconds
    at the initialize answer and (wall, cpu) at the tool's answer (its first answer with
    data from the folder, for `serve`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}) + "\n"
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
    times: dict[int, tuple[float, float]] = {}
    try:
        proc.stdin.write(INITIALIZE.encode())
        proc.stdin.flush()
        while len(times) < 2:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"{argv}: closed before answering {tool}")
            answer = json.loads(line)
            if answer.get("id") not in (1, 2):
                continue  # a notification or a log line
            if "result" not in answer:
                raise SystemExit(f"{argv}: {line[:300]!r}")
            times[answer["id"]] = (time.perf_counter() - start, cpu_seconds(proc.pid))
            if answer["id"] == 1:
                proc.stdin.write((initialized + call).encode())
                proc.stdin.flush()
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    return (*times[1], *times[2])


def pass_only(env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    before = os.times()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    after = os.times()
    return (time.perf_counter() - start,
            after.children_user + after.children_system
            - before.children_user - before.children_system)


def make_folder(root: Path, count: int) -> Path:
    folder = root / "memory"
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"reference_note_{n}.md").write_text(
            f"---\ndescription: Note {n} about the build\ncategory: reference\n---\n"
            f"Body of note {n}: run make check.\n", encoding="utf-8")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--cold", action="store_true",
                        help="no index cache: the state folder removed before each serve")
    parser.add_argument("--before", metavar="CHECKOUT",
                        help="also time the serve of another sage-mem checkout (PYTHONPATH)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = make_folder(root, args.memories)
        smallest = root / "smallest.py"
        smallest.write_text(SMALLEST, encoding="utf-8")
        env = {**os.environ, "HOME": str(root), "SAGE_MEM_DIR": str(folder)}
        cases = {
            "sage-mem serve": [sys.executable, "-m", "sage_mem", "serve"],
            "smallest MCPServer": [sys.executable, str(smallest)],
        }
        envs = {name: env for name in cases}
        if args.before:
            cases["serve, --before"] = cases["sage-mem serve"]
            envs["serve, --before"] = {**env, "PYTHONPATH": args.before}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        results["python -c pass"] = []
        for _ in range(args.runs):  # interleaved, so load changes hit every case alike
            for name, argv in cases.items():
                if args.cold:
                    shutil.rmtree(root / ".memory.sage-mem", ignore_errors=True)
                results[name].append(first_answer(argv, envs[name]))
            results["python -c pass"].append(pass_only(env))
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores, "
          f"{args.runs} runs, {args.memories} memories{', cold' if args.cold else ''}")
    medians = {}
    for name, runs in results.items():
        wall = statistics.median(run[0] for run in runs)
        cpu = statistics.median(run[1] for run in runs)
        medians[name] = (wall, cpu)
        print(f"{name:20} wall {wall * 1000:6.0f} ms   cpu {cpu * 1000:6.0f} ms")
    serve, small = medians["sage-mem serve"], medians["smallest MCPServer"]
    print(f"serve ÷ smallest: wall {serve[0] / small[0]:.2f}×, cpu {serve[1] / small[1]:.2f}×")
    if args.before:
        old = medians["serve, --before"]
        print(f"--before ÷ smallest: wall {old[0] / small[0]:.2f}×, cpu {old[1] / small[1]:.2f}×")


if __name__ == "__main__":
    main()
