"""Claude Code hook commands: JSON in on stdin, JSON out on stdout, and always exit 0.

Most tests call `run_hook` in-process; the ones about the process itself
(exit status, bytes on stdin, what gets imported) run it as Claude Code does.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support import injected_blocks, injected_ids, write_memory

from sage_mem.agents.context import BASELINE_HEADER, PROMPT_HEADER, TOOLS_GUIDE, TRUNCATED
from sage_mem.agents.hooks import run_hook
from sage_mem.disk.stats import Stats
from sage_mem.errors import StoreLocked

# The hook as Claude Code runs it: the real CLI entry point.
HOOK_PROGRAM = ["-m", "sage_mem", "hook"]

EVENT_NAMES = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}


def hook_input(
    event: str,
    session: str = "3f1c9a2e-0b7d-4e5a-9c61-8d2f4b7e1a05",
    *,
    cwd: str = "/home/dev/shop",
    **extra: Any,
) -> dict[str, Any]:
    """The JSON Claude Code sends to a hook."""
    data = {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-shop/{session}.jsonl",
        "cwd": cwd,
        "hook_event_name": EVENT_NAMES[event],
    }
    if event == "session-start":
        data["source"] = "startup"
    data.update(extra)
    return data


def hook_process(
    event: str, stdin: str | bytes, *python_flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the hook as a separate process, as Claude Code does."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, *python_flags, *HOOK_PROGRAM, event],
        input=data,
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def call(event: str, payload: Any, folder: Path | None = None) -> tuple[int, str, str]:
    """Run the hook in-process; `payload` is sent as JSON unless it is already text."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(event, io.StringIO(text), out, err, folder=folder)
    return code, out.getvalue(), err.getvalue()


def context_of(event: str, stdout: str | bytes) -> str:
    """The additionalContext of a hook answer, after checking the answer's shape."""
    answer = json.loads(stdout)
    assert list(answer) == ["hookSpecificOutput"]
    assert answer["hookSpecificOutput"]["hookEventName"] == EVENT_NAMES[event]
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert isinstance(context, str) and context
    return context


def prompt(
    text: str, folder: Path, session: str = "s-1", **extra: Any
) -> tuple[list[str], str, str]:
    """Submit a prompt in-process; the ids injected (in order), the context, and stderr."""
    code, out, err = call(
        "user-prompt-submit",
        hook_input("user-prompt-submit", session, prompt=text, **extra),
        folder,
    )
    assert code == 0
    if not out:
        return [], "", err
    context = context_of("user-prompt-submit", out)
    return injected_ids(context), context, err


def start(folder: Path, session: str = "s-1", source: str = "startup") -> tuple[list[str], str]:
    code, out, err = call(
        "session-start", hook_input("session-start", session, source=source), folder
    )
    assert code == 0 and err == ""
    context = context_of("session-start", out)
    return injected_ids(context), context


def memory_text(description: str, body: str = "", **meta: object) -> str:
    lines = ["---", f"description: {description}"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in meta.items()]
    return "\n".join(lines) + "\n---\n\n" + body + "\n"


# as Claude Code runs them: a process, JSON in, JSON out, exit 0


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_session_start_process_injects_baselines_and_the_tools_guide(
    memory_dir: Path, source: str
) -> None:
    result = hook_process("session-start", json.dumps(hook_input("session-start", source=source)))
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    context = context_of("session-start", result.stdout)
    assert context.startswith(BASELINE_HEADER)
    assert injected_ids(context) == ["user_profile"]
    assert context.endswith(TOOLS_GUIDE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "How do I run the tests?",
            {"reference_test_command", "feedback_tests_first"},
            id="english",
        ),
        pytest.param("我的猫叫什么名字？", {"user_cat_zh"}, id="chinese"),
        pytest.param(
            "下个版本什么时候发布？发布前要做什么", {"project_release_zh"}, id="chinese-release"
        ),
    ],
)
def test_prompt_process_injects_relevant_memories(
    memory_dir: Path, text: str, expected: set[str]
) -> None:
    payload = json.dumps(hook_input("user-prompt-submit", prompt=text), ensure_ascii=False)
    result = hook_process("user-prompt-submit", payload.encode("utf-8"))
    assert result.returncode == 0, result.stderr
    context = context_of("user-prompt-submit", result.stdout)
    assert context.startswith(PROMPT_HEADER)
    assert set(injected_ids(context)) == expected


@pytest.mark.parametrize(
    ("event", "stdin", "logged"),
    [
        pytest.param("user-prompt-submit", b"not json {", "not JSON", id="not-json"),
        pytest.param("user-prompt-submit", b'["a", "list"]', "JSON list", id="json-list"),
        pytest.param("user-prompt-submit", b'"a string"', "JSON str", id="json-string"),
        pytest.param("user-prompt-submit", b"", "empty hook input", id="empty-stdin"),
        pytest.param("user-prompt-submit", b"\xff\xfe\x00garbage", "not JSON", id="invalid-utf8"),
        pytest.param(
            "user-prompt-submit",
            json.dumps(hook_input("user-prompt-submit")).encode(),
            "no prompt",
            id="missing-prompt",
        ),
        pytest.param(
            "user-prompt-submit",
            json.dumps(hook_input("user-prompt-submit", prompt=42)).encode(),
            "no prompt",
            id="prompt-not-text",
        ),
        pytest.param(
            "user-prompt-submit",
            json.dumps(hook_input("user-prompt-submit", prompt="")).encode(),
            None,
            id="empty-prompt",
        ),
        pytest.param(
            "user-prompt-submit",
            json.dumps(hook_input("user-prompt-submit", prompt="   \n ")).encode(),
            None,
            id="blank-prompt",
        ),
        pytest.param("no-such-event", b"{}", "unknown hook event", id="unknown-event"),
    ],
)
def test_bad_input_injects_nothing_logs_one_line_and_exits_0(
    memory_dir: Path, event: str, stdin: bytes, logged: str | None
) -> None:
    result = hook_process(event, stdin)
    assert result.returncode == 0
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    if logged is None:
        assert lines == []
    else:
        assert len(lines) == 1 and logged in lines[0]
        assert lines[0].startswith("sage-mem hook ")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["hook"], id="no-event"),
        pytest.param(["--dir", "/nowhere", "hook"], id="dir-no-event"),
        pytest.param(["hook", "user-prompt-submit", "extra"], id="extra-argument"),
        pytest.param(["hook", "--bogus", "user-prompt-submit"], id="unknown-option"),
        pytest.param(["hook", "user-prompt-submit", "--dir"], id="dir-without-value"),
        pytest.param(["--bogus", "hook", "session-start"], id="unknown-option-before"),
        pytest.param(["hook", "用户提示", "多余"], id="extra-argument-chinese"),
    ],
)
def test_hook_command_line_misuse_says_one_line_and_exits_0(argv: list[str]) -> None:
    # DESIGN section 5: a hook always exits 0 and never blocks the prompt, even misconfigured.
    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", *argv], input=b"{}", capture_output=True, timeout=60
    )
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert result.stdout == b""  # nothing an agent would inject
    assert "Traceback" not in err and err.endswith("\n") and err.count("\n") == 1, err


def test_misuse_of_another_command_still_exits_1() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sage_mem", "--bogus", "search", "hook"],
        capture_output=True, timeout=60,
    )
    assert result.returncode == 1 and result.stdout == b"", result.stderr


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b"[]", id="json-list"),
        pytest.param(b'{"hook_event_name": "SessionStart"}', id="missing-fields"),
    ],
)
def test_session_start_with_bad_input_still_injects_what_it_can(
    memory_dir: Path, stdin: bytes
) -> None:
    result = hook_process("session-start", stdin)
    assert result.returncode == 0
    context = context_of("session-start", result.stdout)
    assert injected_ids(context) == ["user_profile"]
    assert len(result.stderr.decode().splitlines()) <= 1


def test_huge_prompt_is_answered(memory_dir: Path) -> None:
    text = "how do I run the tests? " + "lorem ipsum dolor sit amet " * 40_000
    result = hook_process(
        "user-prompt-submit", json.dumps(hook_input("user-prompt-submit", prompt=text))
    )
    assert result.returncode == 0, result.stderr
    assert "reference_test_command" in injected_ids(context_of("user-prompt-submit", result.stdout))


def test_missing_memory_folder_injects_nothing_and_exits_0(tmp_path: Path) -> None:
    for event in ("session-start", "user-prompt-submit"):
        result = hook_process(
            event,
            json.dumps(hook_input(event, prompt="how do I run the tests")),
            env={"SAGE_MEM_DIR": str(tmp_path / "nowhere")},
        )
        assert result.returncode == 0
        assert result.stdout == b""
        (line,) = result.stderr.decode().splitlines()
        assert "no memory folder" in line


def test_hook_never_imports_mcp_or_watchdog(memory_dir: Path) -> None:
    for event in ("session-start", "user-prompt-submit"):
        payload = json.dumps(hook_input(event, prompt="how do I run the tests"))
        result = hook_process(event, payload, "-X", "importtime")
        assert result.returncode == 0
        assert result.stdout, result.stderr
        imported = {
            line.rsplit("|", 1)[-1].strip()
            for line in result.stderr.decode().splitlines()
            if line.startswith("import time:")
        }
        assert "sage_mem.agents.hooks" in imported
        assert not {name for name in imported if name.split(".")[0] in ("mcp", "watchdog")}


# degrading: a broken file, a state folder that cannot be written


def test_broken_memory_file_is_skipped_and_logged(memory_dir: Path) -> None:
    write_memory(memory_dir, "broken_tests", "---\ndescription: [unclosed\n---\nrun the tests\n")
    ids, _, err = prompt("how do I run the tests", memory_dir)
    assert "reference_test_command" in ids and "broken_tests" not in ids
    (line,) = err.splitlines()
    assert "broken_tests.md" in line


def test_unwritable_state_folder_still_injects_and_logs(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("SAGE_MEM_STATE_DIR", str(blocker))
    ids, _, err = prompt("how do I run the tests", memory_dir)
    assert "reference_test_command" in ids
    (line,) = err.splitlines()
    assert "cannot record what was injected" in line
    result = hook_process(
        "user-prompt-submit",
        json.dumps(hook_input("user-prompt-submit", prompt="how do I run the tests")),
    )
    assert result.returncode == 0
    assert "reference_test_command" in injected_ids(context_of("user-prompt-submit", result.stdout))


def test_stats_lock_held_elsewhere_still_injects_and_logs(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def locked(self: Stats, ids: object, *, event: str = "retrievals") -> None:
        raise StoreLocked(f"{self.path}.lock: another sage-mem process has held this lock")

    monkeypatch.setattr(Stats, "record", locked)
    ids, _, err = prompt("how do I run the tests", memory_dir)
    assert "reference_test_command" in ids
    (line,) = err.splitlines()
    assert "retrievals not counted" in line


# what is injected, and when it is not


def test_prompt_matching_nothing_prints_nothing(memory_dir: Path) -> None:
    code, out, err = call(
        "user-prompt-submit", hook_input("user-prompt-submit", prompt="hello there"), memory_dir
    )
    assert (code, out, err) == (0, "", "")


def test_prompt_sharing_only_a_word_every_memory_has_prints_nothing(memory_dir: Path) -> None:
    ids, _, _ = prompt("Can you give me an example?", memory_dir)
    assert ids == []


def test_memory_age_is_spelled_out(memory_dir: Path) -> None:
    updated = (datetime.now(UTC) - timedelta(days=12)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_memory(
        memory_dir,
        "project_freeze",
        memory_text("the code freeze starts on Friday", updated=updated),
    )
    _, context, _ = prompt("when is the code freeze", memory_dir)
    assert re.fullmatch(r"memory \(updated 1[23] days ago\):",
                        injected_blocks(context)["project_freeze"][0])


def test_long_bodies_are_cut_and_the_context_stays_under_budget(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGE_MEM_HOOK_LIMIT", "10")
    for i in range(15):
        body = f"Step {i} of the kubernetes rollout.\n" + ("The rollout waits for the pods. " * 200)
        write_memory(
            memory_dir, f"project_rollout_{i:02}", memory_text(f"kubernetes rollout step {i}", body)
        )
    ids, context, _ = prompt("explain the kubernetes rollout", memory_dir)
    assert len(context) < 10_000
    assert all(memory_id.startswith("project_rollout_") for memory_id in ids)
    assert 4 <= len(ids) < 10  # the budget stopped it, not the limit
    assert context.count(TRUNCATED) == len(ids)
    blocks = context.split("\n\nmemory (")[1:]
    assert len(blocks) == len(ids)
    assert all(block.rstrip().endswith(TRUNCATED) for block in blocks)


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        pytest.param("1", 1, id="one"),
        pytest.param("99", 10, id="clamped"),
        pytest.param("0", 0, id="off"),
    ],
)
def test_hook_limit_comes_from_the_environment(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, limit: str, expected: int
) -> None:
    monkeypatch.setenv("SAGE_MEM_HOOK_LIMIT", limit)
    for i in range(14):
        write_memory(
            memory_dir,
            f"reference_queue_{i:02}",
            memory_text(f"the job queue runs on redis, shard {i}"),
        )
    ids, _, _ = prompt("where does the job queue run", memory_dir)
    assert len(ids) == expected


def test_injected_memories_are_counted_as_retrievals(memory_dir: Path) -> None:
    ids, _, _ = prompt("how do I run the tests", memory_dir)
    stats_file = memory_dir.parent / ".memory.sage-mem" / "stats.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    assert {memory_id for memory_id, entry in stats.items() if entry.get("retrievals") == 1} == set(
        ids
    )


def test_memories_of_another_project_are_not_injected(memory_dir: Path, tmp_path: Path) -> None:
    write_memory(
        memory_dir,
        "project_shop_deploy",
        memory_text("deploy the shop with make ship", project="shop"),
    )
    write_memory(
        memory_dir,
        "project_blog_deploy",
        memory_text("deploy the blog with make ship", project="blog"),
    )
    repo = tmp_path / "code" / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    ids, _, _ = prompt("how do I deploy with make ship", memory_dir, cwd=str(repo / "src"))
    assert ids == ["project_shop_deploy"]


# the session's "already injected" set


def test_memory_is_not_injected_twice_in_one_session(memory_dir: Path) -> None:
    first, _, _ = prompt("how do I run the tests", memory_dir)
    second, _, _ = prompt("how do I run the tests, again?", memory_dir)
    other_session, _, _ = prompt("how do I run the tests", memory_dir, session="s-2")
    assert set(first) == {"reference_test_command", "feedback_tests_first"}
    assert second == []
    assert set(other_session) == set(first)


def test_baseline_from_session_start_is_not_repeated_by_a_prompt(memory_dir: Path) -> None:
    start(memory_dir)
    ids, _, _ = prompt("what kind of developer is the user, python?", memory_dir)
    assert "user_profile" not in ids


def test_edited_memory_is_injected_again(memory_dir: Path) -> None:
    prompt("how do I run the tests", memory_dir)
    path = memory_dir / "reference_test_command.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("python -m pytest", "make test"), encoding="utf-8"
    )
    ids, context, _ = prompt("how do I run the tests", memory_dir)
    assert ids == ["reference_test_command"]
    assert "make test" in context


@pytest.mark.parametrize(
    ("source", "released"),
    [
        pytest.param("compact", True, id="compact"),
        pytest.param("clear", True, id="clear"),
        pytest.param("resume", False, id="resume"),
        pytest.param("startup", False, id="startup"),
    ],
)
def test_compact_and_clear_release_the_session_set(
    memory_dir: Path, source: str, released: bool
) -> None:
    assert start(memory_dir)[0] == ["user_profile"]
    first, _, _ = prompt("how do I run the tests", memory_dir)
    assert first
    baselines, context = start(memory_dir, source=source)
    again, _, _ = prompt("how do I run the tests", memory_dir)
    assert baselines == (["user_profile"] if released else [])
    assert set(again) == (set(first) if released else set())
    assert context.endswith(TOOLS_GUIDE)


def test_session_without_baselines_gets_the_tools_guide_alone(empty_dir: Path) -> None:
    write_memory(empty_dir, "user_cat", memory_text("the cat is called Sesame"))
    ids, context = start(empty_dir)
    assert ids == []
    assert context == TOOLS_GUIDE


def test_session_file_stays_inside_the_sessions_folder(memory_dir: Path) -> None:
    prompt("how do I run the tests", memory_dir, session="../../../escaped")
    sessions = memory_dir.parent / ".memory.sage-mem" / "sessions"
    assert (
        [p.name for p in sessions.glob("*.json")]
        == [p.name for p in sessions.glob("h-*.json")]
        != []
    )
    assert not list(memory_dir.parent.parent.glob("escaped*"))
    assert not list(memory_dir.glob("**/*.json"))


def test_missing_session_id_injects_without_remembering(memory_dir: Path) -> None:
    payload = {"prompt": "how do I run the tests", "cwd": "/home/dev/shop"}
    for _ in range(2):
        code, out, _ = call("user-prompt-submit", payload, memory_dir)
        assert code == 0
        assert "reference_test_command" in injected_ids(context_of("user-prompt-submit", out))


SECRET_MEMORIES = {
    # English: a token find_secrets knows by its prefix; Chinese: a password stated in prose.
    "staging_deploy_key": ("the staging deployment uses the billing service key",
                           "staging deployment billing key: sk-proj-{secret}", "billing key"),
    "数据库密码": ("订单数据库的连接方式", "订单数据库的密码是 {secret}，连接前先开隧道",
                   "订单数据库"),
}


@pytest.mark.parametrize("memory_id", list(SECRET_MEMORIES))
def test_a_memory_holding_a_secret_is_never_injected_with_it_from_the_cache_or_a_changed_file(
    empty_dir: Path, memory_id: str
) -> None:
    # The hook without a server answers from the index cache, and from the files changed
    # since that it reads itself: either way the secret is masked, in English and Chinese.
    from sage_mem import MemoryStore
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search import cache
    from sage_mem.search.scoring import Scoring

    description, body, prompt = SECRET_MEMORIES[memory_id]
    secrets = ["Q7f2Kx9LmP4vT8wZr3Nc6Hb1Yd5Gs0Je", "Z4n8Wq2Rt6Yp1Lk5Hj9Fd3Sa7Gm0Xc2V"]
    path = write_memory(empty_dir, memory_id, (
        f"---\ndescription: {description}\ncategory: project\n---\n\n"
        f"{body.format(secret=secrets[0])}\n"
    ))
    for n in range(6):  # others, so that the memory stands out
        write_memory(empty_dir, f"other_{n}", f"---\ndescription: note {n}\n---\n\nbody {n}\n")
    hour_ago = datetime.now(UTC).timestamp() - 3600
    for each in empty_dir.glob("*.md"):
        os.utime(each, (hour_ago, hour_ago))  # not within the racy window of the build
    MemoryStore(empty_dir, watch=False)  # the cache (a hook never writes it)
    folder = MemoryFolder(empty_dir)

    def injected(session: str) -> str:
        payload = hook_input("user-prompt-submit", session, prompt=prompt)
        result = hook_process("user-prompt-submit", json.dumps(payload),
                              env={"SAGE_MEM_DIR": str(empty_dir)})
        assert result.returncode == 0, result.stderr.decode()
        return context_of("user-prompt-submit", result.stdout)

    found = cache.load(folder, scoring=Scoring())
    assert found is not None and not found.compare(cache.scan(folder)).again  # from the cache
    text = injected("s-cache")
    assert memory_id in text and "****" in text
    assert secrets[0] not in text and secrets[0][:8] not in text

    path.write_text(path.read_text(encoding="utf-8").replace(secrets[0], secrets[1]), "utf-8")
    found = cache.load(folder, scoring=Scoring())
    assert found is not None
    assert path.name in found.compare(cache.scan(folder)).again  # read by the hook itself
    text = injected("s-changed")
    assert memory_id in text and "****" in text
    assert secrets[1] not in text and secrets[1][:8] not in text and secrets[0] not in text
