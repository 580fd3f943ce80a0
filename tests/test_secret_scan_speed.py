"""The secret scan does work in proportion to the text, whatever the text holds.

A write, the audit and every hook answer scan whole memories, so one memory
holding a long hex line or a base64 blob must not stall them. No timing is
asserted in-process: each check runs as a real process with a timeout many
times what a linear scan needs (well under a second here), and far below what
a scan that restarts at every position of a long run took (minutes).
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ROOT, write_memory

TIMEOUT = 20.0
"""Seconds a process may take: a linear scan of these texts needs well under one."""

SCAN = (
    "import sys\n"
    "from sage_mem.checks.credentials import find_secrets, has_secrets, redact\n"
    "text = sys.stdin.read()\n"
    "print(len(find_secrets(text)), has_secrets(text), len(redact(text)))\n"
)


def _run(argv: list[str], stdin: bytes = b"", env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[bytes]:
    """`python ARGV` as a process; the test fails if it runs past TIMEOUT."""
    try:
        return subprocess.run(
            [sys.executable, *argv], input=stdin, capture_output=True, timeout=TIMEOUT,
            cwd=ROOT, env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
        )
    except subprocess.TimeoutExpired:
        what = "the secret scan" if argv[0] == "-c" else "sage-mem " + " ".join(argv[2:5])
        pytest.fail(f"{what} did not finish within {TIMEOUT:.0f} s")


def _run_of(alphabet: str, length: int, seed: int = 11) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(length))


WORD = string.ascii_letters + string.digits + "_"
HEX = "0123456789abcdef"
BASE64 = string.ascii_letters + string.digits + "+/"


def _mixed_text(size: int) -> str:
    """Memory-like text of every sort the scanner weighs, with a few real-looking secrets."""
    rnd = random.Random(5)
    pieces = [
        "The deploy runs on Fridays; reset the password in the admin panel.\n",
        "用户的猫叫芝麻，喜欢晒太阳。密码在 1Password 里。\n",
        f"commit {_run_of(HEX, 40, 1)} fixed the token refresh\n",
        f"sha256: {_run_of(HEX, 64, 2)}\n",
        "request id 123e4567-e89b-12d3-a456-426614174000\n",
        f"![logo](data:image/png;base64,{_run_of(BASE64, 400, 3)}=)\n",
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_run_of(BASE64, 43, 4)} dev@laptop\n",
        "see https://github.com/owner/repo/issues/11 and postgres://user:password@localhost/app\n",
        "max_tokens=4096, tokenizer: bert-base-multilingual-cased, secret: true\n",
        "api_key: ${OPENAI_API_KEY}; passwd: $DB_PASSWORD; token: <paste-your-token>\n",
        f"api_key: {_run_of(HEX, 32, 6)}\n",
        f"password = '{_run_of(WORD, 12, 7)}'\n",
        "the password is " + _run_of(WORD, 14, 8) + ".\n",
        "a=b=c=d=e=f: g: h: i=\n",
        "-----BEGIN RSA PRIVATE KEY-----\n" + _run_of(BASE64, 64, 9)
        + "\n-----END RSA PRIVATE KEY-----\n",
        "x\u200by\u200cz\u200d ghp_" + _run_of(WORD[:62], 36, 10) + "\n",
        "build digest: " + _run_of(HEX, 8_000, 12) + "\n",
    ]
    out: list[str] = []
    total = 0
    while total < size:
        piece = rnd.choice(pieces)
        out.append(piece)
        total += len(piece)
    return "".join(out)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _run_of(WORD, 200_000), id="word-run-200k"),
        pytest.param(lambda: _run_of(HEX, 200_000), id="hex-run-200k"),
        pytest.param(lambda: _run_of(BASE64, 200_000), id="base64-run-200k"),
        pytest.param(lambda: "a" * 200_000, id="one-letter-200k"),
        pytest.param(lambda: "密" * 200_000, id="cjk-run-200k"),
        pytest.param(lambda: "password" * 25_000, id="password-word-repeated"),
        pytest.param(lambda: "api_key" + "_x" * 100_000 + ": v", id="long-name-then-colon"),
        pytest.param(lambda: "token=" + _run_of(WORD, 200_000), id="long-value"),
        pytest.param(lambda: "a=" * 100_000, id="assignments-chained"),
        pytest.param(lambda: "a: " * 70_000, id="colons-chained"),
        pytest.param(lambda: "xoxb-1-" + "a" * 200_000 + "_", id="slack-prefix-then-long-run"),
        pytest.param(lambda: "eyJ" + "aaaaaaaaa.eyJ" * 20_000, id="jwt-chain"),
        pytest.param(lambda: "https://" + "a" * 200_000 + ":b@c", id="url-long-authority"),
        pytest.param(lambda: "x://" * 60_000, id="url-schemes-chained"),
        pytest.param(lambda: "https://u:" + "p" * 200_000 + "@host", id="url-long-password"),
        pytest.param(lambda: "hooks.slack.com/services/" * 8_000, id="webhook-prefix-repeated"),
        pytest.param(lambda: "-----BEGIN PRIVATE KEY-----" * 8_000, id="pem-headers-repeated"),
        pytest.param(lambda: "-----BEGIN PRIVATE KEY-----\\n" + "A" * 200_000,
                     id="pem-escaped-long"),
        pytest.param(lambda: "the password is " * 12_000, id="prose-password-repeated"),
        pytest.param(lambda: "密码是" * 60_000, id="prose-chinese-password-repeated"),
        pytest.param(lambda: "password for the staging db " * 7_000, id="prose-password-for-words"),
        pytest.param(lambda: "password for " + "a " * 100_000, id="prose-password-for-many-words"),
        pytest.param(lambda: "PIN " * 50_000, id="pin-word-repeated"),
        pytest.param(lambda: "-----BEGIN PRIVATE KEY-----\n" * 7_000,
                     id="pem-header-lines-repeated"),
        pytest.param(lambda: "\u200b".join(_run_of(WORD, 100_000)),
                     id="zero-width-between-every-char"),
        pytest.param(lambda: "pypi-" + "AgE" * 60_000, id="pypi-prefix-long"),
        # a value read on to the end of the text after every operator was quadratic
        pytest.param(lambda: "密码：" * 70_000, id="chinese-colons-chained"),
        pytest.param(lambda: "token：" * 35_000, id="name-and-chinese-colon-chained"),
        pytest.param(lambda: "token是" * 35_000, id="name-and-chinese-is-chained"),
        pytest.param(lambda: ("sig=" + "a" * 10) * 15_000 + "_", id="signature-prefix-chain"),
        pytest.param(lambda: "curl -u " * 25_000, id="curl-user-repeated"),
        pytest.param(lambda: "sshpass -p " * 20_000, id="sshpass-repeated"),
        pytest.param(lambda: "123456789:AA" * 17_000, id="telegram-shape-repeated"),
        pytest.param(lambda: "discord.com/api/webhooks/" * 8_000, id="webhook-paths-repeated"),
        pytest.param(lambda: "A" * 200_000 + "%3D", id="twitter-a-run-200k"),
        pytest.param(lambda: "EAA" * 60_000 + "9", id="facebook-prefix-repeated"),
        pytest.param(lambda: "ab8Q~" * 40_000, id="azure-secret-marks-repeated"),
        pytest.param(lambda: "AK x SK " * 25_000, id="ak-sk-words-repeated"),
        pytest.param(lambda: "PuTTY-User-Key-File-2: x\n" * 8_000, id="putty-headers-repeated"),
        pytest.param(lambda: "the secret key " * 13_000, id="secret-key-words-repeated"),
        pytest.param(lambda: "ｐａｓｓｗｏｒｄ＝" * 10_000, id="full-width-assignments-chained"),
        pytest.param(lambda: "パスワードは " * 28_000, id="japanese-password-is-repeated"),
        pytest.param(lambda: "🙂𝐩" * 100_000, id="astral-characters-200k"),
        pytest.param(lambda: _mixed_text(500_000), id="mixed-500k"),
        pytest.param(lambda: _mixed_text(500_000).replace("\n", " "), id="mixed-500k-one-line"),
    ],
)
def test_scan_of_a_long_text_finishes_quickly(make: Callable[[], str]) -> None:
    # Each text is made by the test that scans it: made at collection they cost every
    # worker half a second of CPU (a million random choices) for texts only one scans.
    result = _run(["-c", SCAN], make().encode("utf-8"))
    assert result.returncode == 0, result.stderr.decode()


def test_add_of_a_body_with_a_90kb_hex_line_finishes(memory_dir: Path) -> None:
    body = "build artefact digest:\n" + _run_of(HEX, 90_000) + "\n"
    result = _run(["-m", "sage_mem", "--dir", str(memory_dir), "add", "reference_digest",
                   "--description", "digest of the build artefact", "--category", "reference",
                   "--body", "-"], body.encode())
    assert result.returncode == 0, result.stderr.decode()
    assert (memory_dir / "reference_digest.md").exists()


def test_audit_of_a_memory_with_a_90kb_hex_line_finishes(memory_dir: Path) -> None:
    write_memory(memory_dir, "reference_digest",
                 "---\ndescription: digest of the build artefact\ncategory: reference\n---\n\n"
                 + _run_of(HEX, 90_000) + "\n")
    result = _run(["-m", "sage_mem", "--dir", str(memory_dir), "audit", "--json"])
    report = json.loads(result.stdout)
    assert [f for f in report["findings"] if f["check"] == "secret"] == []


def test_prompt_hook_with_a_90kb_hex_memory_finishes(memory_dir: Path) -> None:
    write_memory(memory_dir, "reference_digest",
                 "---\ndescription: digest of the build artefact\ncategory: reference\n---\n\n"
                 + _run_of(HEX, 90_000) + "\n")
    payload = {"session_id": "s1", "prompt": "what is the digest of the build artefact?",
               "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    result = _run(["-m", "sage_mem", "hook", "user-prompt-submit"], json.dumps(payload).encode(),
                  env={"SAGE_MEM_DIR": str(memory_dir)})
    assert result.returncode == 0, result.stderr.decode()
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "reference_digest" in context
