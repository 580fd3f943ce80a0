"""Seven credential shapes sync once pushed, held back by the one rule everywhere it applies.

Hugging Face `hf_…`, npm `npm_…`, an Azure storage connection string's
`AccountKey=…`, `Authorization: Basic …`, SendGrid `SG.….…`, DigitalOcean
`dop_v1_…` and `mysql -p<password>`: `checks/credentials.find_secrets` is the
one rule, and each shape is pinned through each of its four uses: a write
refused (`add`, with `--allow-secret` as the override), the audit, the
injection's masking (`agents/context.render_memory`, what every hook sends) and
sync's hold-back (a hand-written file never committed, never pushed). None of
them may be found in the project's own text (memory_template/, the dev sets).
"""

from __future__ import annotations

import base64
import json
import random
import shutil
import string
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import ROOT, write_memory
from sync_support import bare_remote, git, machine, sm, sync, use_private_git

from sage_mem.agents.context import render_memory
from sage_mem.checks.credentials import LABELS, find_secrets, redact
from sage_mem.store import MemoryStore

_RANDOM = random.Random(28)
_ALNUM = string.ascii_letters + string.digits


def _random(length: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(length))


HF = "hf_" + _random(34)
NPM = "npm_" + _random(36)
AZURE_KEY = base64.b64encode(bytes(_RANDOM.randrange(256) for _ in range(64))).decode()
BASIC = base64.b64encode(b"deploy:" + _random(18).encode()).decode()
SENDGRID = "SG." + _random(22, _ALNUM + "-_") + "." + _random(43, _ALNUM + "-_")
DIGITALOCEAN = "dop_v1_" + _random(64, "0123456789abcdef")
MYSQL = "Xq7#" + _random(10)

# (id, the text a memory holds, the kind, what must never be shown)
SHAPES = [
    pytest.param("huggingface-token", f"Pull the gated model after pasting {HF} at the prompt.",
                 HF[3:], id="huggingface"),
    pytest.param("npm-token", f"The release job publishes with {NPM} from the vault.",
                 NPM[4:], id="npm"),
    pytest.param("azure-storage-key",
                 "DefaultEndpointsProtocol=https;AccountName=acmelogs;"
                 f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
                 AZURE_KEY[:40], id="azure-connection-string"),
    pytest.param("basic-auth",
                 f'curl -H "Authorization: Basic {BASIC}" https://ci.example.com/api',
                 BASIC, id="authorization-basic"),
    pytest.param("sendgrid-key", f"Mail goes out through SendGrid, {SENDGRID} in prod.",
                 SENDGRID[3:], id="sendgrid"),
    pytest.param("digitalocean-token", f"doctl auth init with {DIGITALOCEAN} on the droplet.",
                 DIGITALOCEAN[7:], id="digitalocean"),
    pytest.param("mysql-password", f"Connect with mysql -h db.internal -u root -p{MYSQL} app",
                 MYSQL, id="mysql-p"),
]
_TEXTS = {param.id: param.values for param in SHAPES}


def _memory(text: str) -> str:
    return f"---\ndescription: how the service connects\ncategory: reference\n---\n\n{text}\n"


@pytest.mark.parametrize(("kind", "text", "secret"), SHAPES)
def test_the_scan_finds_each_shape_and_masks_it(kind: str, text: str, secret: str) -> None:
    assert [match.kind for match in find_secrets(text)] == [kind]
    assert secret not in redact(text) and "****" in redact(text)
    assert secret not in find_secrets(text)[0].excerpt_redacted


@pytest.mark.parametrize(("kind", "text", "secret"), SHAPES)
def test_add_refuses_each_shape_unless_allowed(
    tmp_path: Path, kind: str, text: str, secret: str
) -> None:
    folder = tmp_path / "memory"
    sm(folder, "init")
    argv = ("add", "reference_conn", "--category", "reference", "--description",
            "how the service connects", "--body", text)
    status, out, err = sm(folder, *argv)
    assert status == 1 and err.count("\n") == 1 and err.startswith("sage-mem: error:"), err
    assert LABELS[kind] in err and secret not in err
    assert not (folder / "reference_conn.md").exists()
    status, out, err = sm(folder, *argv, "--allow-secret")
    assert status == 0, err
    assert secret in (folder / "reference_conn.md").read_text(encoding="utf-8")


def test_the_audit_reports_each_shape_in_a_hand_written_file(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    sm(folder, "init")
    for number, param in enumerate(SHAPES):
        write_memory(folder, f"reference_shape{number}", _memory(param.values[1]))
    status, out, err = sm(folder, "audit", "--json")
    assert status == 1, err
    findings = {f["path"]: f["message"] for f in json.loads(out)["findings"]
                if f["check"] == "secret"}
    for number, param in enumerate(SHAPES):
        kind, _text, secret = param.values
        assert LABELS[kind] in findings[f"reference_shape{number}.md"], param.id
        assert secret not in out


def test_injection_masks_each_shape(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    sm(folder, "init")
    for number, param in enumerate(SHAPES):
        write_memory(folder, f"reference_shape{number}", _memory(param.values[1]))
    now = datetime.now(UTC)
    with MemoryStore(folder, watch=False) as store:
        for number, param in enumerate(SHAPES):
            shown = render_memory(store.read(f"reference_shape{number}"), now)
            assert param.values[2] not in shown and "****" in shown, param.id


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_sync_holds_back_each_shape_and_pushes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_private_git(tmp_path, monkeypatch)
    remote = bare_remote(tmp_path)
    laptop = machine(tmp_path / "laptop", remote, "laptop", first=True)
    for number, param in enumerate(SHAPES):
        write_memory(laptop, f"reference_shape{number}", _memory(param.values[1]))
    write_memory(laptop, "user_cat", _memory("The cat is Sesame."))
    result = sync(laptop)
    held = {h["path"]: h["reason"] for h in result["heldBack"]}
    assert sorted(held) == sorted(f"reference_shape{n}.md" for n in range(len(SHAPES)))
    assert result["pushed"] == ["user_cat"]
    everything = subprocess.run(
        ["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True).stdout.decode("utf-8", "replace")
    for number, param in enumerate(SHAPES):
        kind, _text, secret = param.values
        assert LABELS[kind] in held[f"reference_shape{number}.md"]
        assert secret not in everything and secret not in json.dumps(result), param.id
        assert f"reference_shape{number}" not in git(remote, "show", "main:MEMORY.md")


NOT_SECRETS = [
    pytest.param("export HF_HOME=~/.cache/huggingface; hf_hub_download(repo_id)", id="hf-names"),
    pytest.param("HF token: hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", id="hf-placeholder"),
    pytest.param("set NPM_TOKEN=npm_<your token here> in CI", id="npm-placeholder"),
    pytest.param("AccountKey=<storage-account-key>;EndpointSuffix=core.windows.net",
                 id="azure-placeholder"),
    pytest.param("AccountKey=${AZURE_STORAGE_KEY}", id="azure-lookup"),
    pytest.param("send `Authorization: Basic <base64 of user:pass>`", id="basic-placeholder"),
    pytest.param("Authorization: Basic dXNlcjpwYXNzd29yZA==", id="basic-user-password"),
    pytest.param("a basic understanding of authorization basics", id="basic-prose"),
    pytest.param("SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                 id="sendgrid-placeholder"),
    pytest.param("Singapore (SG.) office opens at 9.", id="sg-abbreviation"),
    pytest.param("mysql -u root -p app   # asks for the password", id="mysql-prompt"),
    pytest.param('mysql -u root -p"$MYSQL_PWD" app', id="mysql-lookup"),
    pytest.param("mysql -u root -p<password> app", id="mysql-placeholder"),
    pytest.param("mysqldump -u root -ppassword app", id="mysql-word-password"),
    pytest.param("mysql --port 3306 -P3306 -h db", id="mysql-port"),
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_near_misses_of_the_shapes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_the_project_s_own_memories_hold_none_of_the_shapes() -> None:
    """memory_template/ and the docs: text about credentials, none of them one."""
    paths = [*sorted((ROOT / "memory_template").rglob("*.md")), *sorted(
        (ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    assert len(paths) > 10
    new_kinds = {param.values[0] for param in SHAPES}
    found = [(path.name, match.kind, match.excerpt_redacted) for path in paths
             for match in find_secrets(path.read_text(encoding="utf-8"))
             if match.kind in new_kinds]
    assert found == []
