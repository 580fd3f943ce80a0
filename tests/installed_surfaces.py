"""Drive every surface a user starts, as installed: `installed_surfaces.py [--semantic] CMD…`.

`.ci/run` runs it with a virtualenv's `sage-mem` made from the wheel, once
without extras (the README's plain `pip install .`) and once with
`[semantic]`; `tests/test_plain_install.py` runs it against this checkout with
the optional packages hidden. It needs only what the plain install brings (the
official `mcp` client among them), no pytest, and runs each surface the way a
person or a client starts it, as a process:

the MCP server over stdio (initialize, tools/list, a write, a search, a read),
the page (GET / and an API call with its token, one without), each hook event,
the daemon answering a hook, `dream` report and rewrite and `rollback`, `sync`
between two clones of a local bare remote, `export` / `import jsonl`, and
`embed`: with `--semantic` it must make vectors and the search must use them;
without, it must say in one line what to install, with no traceback.

Prints one line a surface and exits 1 on the first that fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

TOOLS = {"memory_search", "memory_read", "memory_write", "memory_list", "memory_archive"}
HOOK_EVENTS = ("session-start", "user-prompt-submit", "stop", "pre-compact")
WAIT = 60.0


class Failed(Exception):
    """A surface did not do what a user would expect of it."""


class Driver:
    def __init__(self, command: Sequence[str], work: Path, semantic: bool) -> None:
        self.command = list(command)
        self.work = work
        self.semantic = semantic
        self.home = work / "home"
        self.home.mkdir()
        self.folder = work / "memory"
        self.env = {
            **os.environ,
            "HOME": str(self.home),
            "SAGE_MEM_DIR": str(self.folder),
            # A hook answers on its own path unless a step starts a daemon itself.
            "SAGE_MEM_DAEMON": "0",
            "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
            "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid",
        }
        for name in ("SAGE_MEM_STATE_DIR", "SAGE_MEM_CONFIG", "XDG_CONFIG_HOME",
                     "SAGE_MEM_SEMANTIC", "SAGE_MEM_AUTODREAM"):
            self.env.pop(name, None)

    def run(self, *args: str, stdin: str | None = None, ok: bool = True,
            folder: Path | None = None, timeout: float = WAIT) -> subprocess.CompletedProcess[str]:
        argv = [*self.command, *(("--dir", str(folder)) if folder else ()), *args]
        done = subprocess.run(argv, input=stdin if stdin is not None else "", text=True,
                              capture_output=True, env=self.env, cwd=self.work, timeout=timeout)
        no_traceback(done.stderr, argv)
        if ok and done.returncode != 0:
            raise Failed(f"{shlex.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done

    def start(self, *args: str, **kwargs: object) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.command, *args], text=True, env=self.env, cwd=self.work,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)  # type: ignore[call-overload]


def no_traceback(stderr: str, argv: Sequence[str]) -> None:
    if "Traceback (most recent call last)" in stderr:
        raise Failed(f"{shlex.join(argv)} printed a traceback:\n{stderr}")


def until(predicate: Callable[[], object], what: str, timeout: float = WAIT) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise Failed(f"timed out waiting for {what}")


def memory_bytes(folder: Path) -> dict[str, str]:
    """Every memory file's sha256 by path (MEMORY.md and the dream's reports left out)."""
    found = {}
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder).as_posix()
        if rel == "MEMORY.md" or rel.startswith(("autodream/", ".git/")):
            continue
        found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# the surfaces, in the order a person meets them


README = Path(__file__).resolve().parent.parent / "README.md"


def readme_first_command() -> list[list[str]]:
    """The README's first command (`pip install . && sage-mem … && sage-mem …`), its
    sage-mem steps as argument lists: what a person types first, run as written."""
    block = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    if block is None:
        raise Failed("the README has no bash block")
    install, *steps = [shlex.split(step) for step in block.group(1).strip().split("&&")]
    if install != ["pip", "install", "."] or not all(s[:1] == ["sage-mem"] for s in steps):
        raise Failed(f"the README's first command is not `pip install . && sage-mem …`: {block}")
    return [step[1:] for step in steps]


def init(d: Driver) -> str:
    for step in readme_first_command():
        said = d.run(*step).stdout
    if "reference_test_command" not in said and "feedback_tests_first" not in said:
        raise Failed(f"the README's first command found no example memory: {said!r}")
    d.run("add", "project_launch", "--category", "project",
          "--description", "The beta launch review and its new date",
          "--body", "We reviewed the beta launch yesterday and moved it to Friday.")
    if "user_cat_zh" not in d.run("search", "我的猫叫什么").stdout:
        raise Failed("a Chinese search found no Chinese example")
    return f"{len(memory_bytes(d.folder))} memories"


def mcp_server(d: Driver) -> str:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=d.command[0], args=[*d.command[1:], "serve"],
                                   cwd=str(d.work), env=d.env)

    async def session() -> str:
        started = time.monotonic()
        async with Client(params, mode="legacy", read_timeout_seconds=WAIT) as client:
            answered = time.monotonic() - started
            names = {tool.name for tool in (await client.list_tools()).tools}
            if not TOOLS <= names:
                raise Failed(f"tools/list lacks {sorted(TOOLS - names)}")

            async def call(tool: str, **arguments: object) -> dict[str, object]:
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    raise Failed(f"{tool}: {result.content[0].text}")
                return result.structured_content or {}

            await call("memory_write", id="user_tea_zh", category="user",
                       description="用户每天下午喝乌龙茶", body="偏好冻顶乌龙，不加糖。")
            hits = (await call("memory_search", query="用户喝什么茶"))["hits"]
            if not hits or hits[0]["id"] != "user_tea_zh":  # type: ignore[index]
                raise Failed(f"memory_search did not find the memory just written: {hits}")
            read = await call("memory_read", id="user_tea_zh")
            if "冻顶乌龙" not in json.dumps(read, ensure_ascii=False):
                raise Failed(f"memory_read lacks the body: {read}")
        return f"initialize answered in {answered:.1f} s, {len(names)} tools"

    return anyio.run(session)


def page(d: Driver) -> str:
    process = d.start("ui", "--port", "0")
    try:
        assert process.stdout is not None
        url = ""
        deadline = time.monotonic() + WAIT
        while not url and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                raise Failed(f"ui exited: {process.stderr.read() if process.stderr else ''}")
            found = re.search(r"(http://127\.0\.0\.1:\d+)/#token=(\S+)", line)
            if found:
                url, token = found.groups()
        if not url:
            raise Failed("ui printed no address")
        with urllib.request.urlopen(url + "/", timeout=WAIT) as answer:
            if answer.status != 200 or b"<html" not in answer.read().lower():
                raise Failed("GET / is not the page")
        request = urllib.request.Request(url + "/api/memories", headers={"X-Sage-Token": token})
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            listed = json.loads(answer.read())
        if "user_tea_zh" not in json.dumps(listed):
            raise Failed("/api/memories does not list the memory the MCP server wrote")
        try:
            urllib.request.urlopen(url + "/api/memories", timeout=WAIT)
            raise Failed("/api/memories answered without the token")
        except urllib.error.HTTPError as refused:
            if refused.code not in (401, 403):
                raise Failed(f"/api/memories without the token: {refused.code}") from None
        info = urllib.request.Request(url + "/api/info", headers={"X-Sage-Token": token})
        with urllib.request.urlopen(info, timeout=WAIT) as answer:
            why = json.loads(answer.read())["semanticUnavailable"]
        if (why is None) != d.semantic:
            raise Failed(f"/api/info says of semantic search: {why!r}")
        return f"{url}, semantic search: {why or 'on'}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            raise Failed("ui did not stop on Ctrl-C") from None
        no_traceback(err, ["sage-mem", "ui"])


def hook_input(d: Driver, event: str, session: str = "ci-session") -> str:
    transcript = d.work / "transcript.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {
        "role": "user", "content": "remember that tests run with make test"}}) + "\n")
    names = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit",
             "stop": "Stop", "pre-compact": "PreCompact"}
    payload = {"session_id": session, "transcript_path": str(transcript),
               "cwd": str(d.work), "hook_event_name": names[event]}
    if event == "user-prompt-submit":
        payload["prompt"] = "我的猫叫什么名字？"
    return json.dumps(payload)


def hooks(d: Driver) -> str:
    said = []
    for event in HOOK_EVENTS:
        done = d.run("hook", event, stdin=hook_input(d, event))
        if done.stdout.strip():
            json.loads(done.stdout)
        said.append(f"{event} {len(done.stdout)} B")
        if event == "user-prompt-submit" and "user_cat_zh" not in done.stdout:
            raise Failed(f"user-prompt-submit injected no memory: {done.stdout!r}")
    return ", ".join(said)


def daemon(d: Driver) -> str:
    process = d.start("daemon", "--idle", "120")
    log = next(iter(d.work.glob(".memory.sage-mem")), d.work / ".memory.sage-mem") / "daemon.log"
    try:
        until(lambda: log.is_file() and "answering hooks" in log.read_text(), "the daemon")
        # A new session: a memory is injected once a session, and `hooks` had this one.
        asked = hook_input(d, "user-prompt-submit", session="ci-daemon")
        done = d.run("hook", "user-prompt-submit", stdin=asked)
        if "user_cat_zh" not in done.stdout:
            raise Failed(f"the daemon's answer injected no memory: {done.stdout!r}")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, err = process.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            raise Failed("the daemon did not stop on SIGTERM") from None
        no_traceback(err, ["sage-mem", "daemon"])
    said = log.read_text()
    answered = re.search(r"ending: answered (\d+) hooks", said)
    if not answered or int(answered.group(1)) < 1:
        raise Failed(f"the hook was not answered by the daemon: {said!r}")
    return answered.group(0)


def dream(d: Driver) -> str:
    before = memory_bytes(d.folder)
    report = json.loads(d.run("dream", "--mode", "report", "--json").stdout)
    if memory_bytes(d.folder) != before:
        raise Failed("dream --mode report changed a memory")
    rewrite = json.loads(d.run("dream", "--mode", "rewrite", "--json").stdout)
    if not rewrite["changes"] or memory_bytes(d.folder) == before:
        raise Failed(f"dream --mode rewrite changed nothing: {rewrite}")
    d.run("rollback", rewrite["runId"])
    if memory_bytes(d.folder) != before:
        raise Failed("rollback did not restore every memory byte for byte")
    return f"report {report['changes']} changes, rewrite {rewrite['changes']}, rolled back"


def sync(d: Driver) -> str:
    remote = d.work / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    mine, theirs = d.work / "sync-mine", d.work / "sync-theirs"
    d.run("init", str(mine), "--examples", "--git", "--remote", str(remote))
    d.run("add", "project_sync", "--description", "Written on the first machine", folder=mine)
    d.run("sync", folder=mine)
    d.run("sync", "--remote", str(remote), folder=theirs)
    if not (theirs / "project_sync.md").is_file():
        raise Failed("the second machine did not receive the memory")
    d.run("add", "project_sync", "--description", "Changed on the second machine", folder=theirs)
    d.run("sync", folder=theirs)
    d.run("sync", folder=mine)
    if "second machine" not in (mine / "project_sync.md").read_text():
        raise Failed("the first machine did not receive the change")
    return "two clones of a bare remote agree"


def export_import(d: Driver) -> str:
    exported = d.work / "export.jsonl"
    d.run("export", "-o", str(exported))
    other = d.work / "imported"
    d.run("init", str(other))
    d.run("import", "jsonl", str(exported), folder=other)
    mine, theirs = memory_bytes(d.folder), memory_bytes(other)
    if mine != theirs:
        raise Failed(f"import jsonl did not make the same files: {sorted(set(mine) ^ set(theirs))}")
    return f"{len(theirs)} memories, byte for byte"


def embed(d: Driver) -> str:
    done = d.run("embed", ok=d.semantic)
    if d.semantic:
        hits = d.run("search", "which drink does the user like in the afternoon").stdout
        if "user_tea_zh" not in hits:
            raise Failed(f"a search with the vectors missed a cross-language memory: {hits!r}")
        return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "vectors made"
    lines = done.stderr.strip().splitlines()
    if done.returncode == 0 or len(lines) != 1 or "semantic" not in lines[0]:
        raise Failed(f"embed without the extra should fail in one line: {done.stderr!r}")
    return lines[0]


SURFACES: dict[str, Callable[[Driver], str]] = {
    "the README's first command": init, "MCP server": mcp_server, "page": page, "hooks": hooks,
    "daemon": daemon, "dream + rollback": dream, "sync": sync,
    "export + import": export_import, "embed": embed,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="how to start sage-mem, e.g. venv/bin/sage-mem or python -m sage_mem")
    parser.add_argument("--semantic", action="store_true",
                        help="the semantic extra is installed: embed must work")
    args = parser.parse_args(argv)
    if not args.command:
        parser.error("say how to start sage-mem")
    work = Path(tempfile.mkdtemp(prefix="sage-mem-surfaces-"))
    try:
        driver = Driver(args.command, work, args.semantic)
        for name, surface in SURFACES.items():
            started = time.monotonic()
            try:
                said = surface(driver)
            except (Failed, subprocess.TimeoutExpired, OSError) as failure:
                print(f"FAILED {name}: {failure}", flush=True)
                return 1
            print(f"ok {name} ({time.monotonic() - started:.1f} s): {said}", flush=True)
        print(f"every surface works ({len(SURFACES)})", flush=True)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
