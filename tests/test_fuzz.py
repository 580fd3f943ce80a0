"""Fuzzing with hypothesis: the parser, the id resolver, the hook input and the write path.

Each property says what must hold for *any* input, not just the corpus in
`test_bad_input.py`: a clear error of the right type or a correct result,
never a crash, never a path outside the folder. Quick by default (CI);
`SAGE_MEM_SLOW=1` runs many more examples.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import SLOW
from support import TEMPLATE

from sage_mem.agents.hooks import run_hook
from sage_mem.checks.credentials import find_secrets, redact
from sage_mem.checks.prompt_injection import find_injections
from sage_mem.disk.folder import MemoryFolder
from sage_mem.errors import InvalidId, InvalidMemory, SageMemError
from sage_mem.memory.file_format import parse_bytes
from sage_mem.memory.value import memory_from_meta
from sage_mem.store import MemoryStore

pytestmark = pytest.mark.property

FUZZ = settings(
    max_examples=2_000 if SLOW else 60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
FEW = settings(FUZZ, max_examples=500 if SLOW else 25)

# Pieces that make the parser and the resolver take their rarer paths.
YAML_PIECES = [
    "---\n", "...\n", "description: ", "category: user\n", "tags: [", "]", "&a ", "*a", "<<: ",
    "? ", ": ", "- ", "  ", "\t", "#", " #", "'", '"', "|\n", ">-\n", "!!python/object:os.system",
    "!!binary ", "2026-13-45", ".nan", "1e400", "\r\n", "\ufeff", "\x00", "\x85", "\u2028", "猫",
    "<<<<<<< HEAD\n", "=======\n", ">>>>>>> b\n", "{", "}", "[", ",", "%YAML 1.1\n", "\n",
]
ID_PIECES = [
    "..", ".", "/", "\\", "%2e", "%2f", "%252e", "%25", "%", "~", "C:", ":", "*", "?", "<", ">",
    "|", " ", "\x00", "\n", "\t", "MEMORY", "archive", "autodream", ".md", "user_cat", "用户", "猫",
    "é", "e\u0301", "\u202e", "#", "-", "a", "b",
]


def joined(pieces: list[str], alphabet: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(pieces), alphabet), max_size=30).map("".join)


# A frontmatter of `key: !!tag scalar` lines: PyYAML never checks an explicit tag against its
# text, and its constructors fail on a misfit with errors that are not YAML errors.
TAGS = ["", "!!timestamp ", "!!int ", "!!float ", "!!bool ", "!!null ", "!!str ", "!!binary ",
        "!!set ", "!!omap ", "!!pairs ", "!!seq ", "!!map ", "!<tag:yaml.org,2002:int> ", "! "]
SCALARS = ["", "x", "+", "-", ".", "0x", "0b", "1:2", "1_", "maybe", "yes", "~", ".inf", "1e400",
           "2026-01-01", "2026-01-01T", "2026-13-45", "9999-12-31T23:59:59-23:59", "aGk=",
           "[a]", "{a: 1}", "[{a: 1}]", "&a x", "*a"]
KEYS = ["description", "category", "trust", "tags", "aliases", "updated", "created", "modified",
        "baseline", "baselinePriority", "project", "locked", "supersedes", "summary", "other"]
TAGGED_LINES = st.lists(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(TAGS), st.sampled_from(SCALARS)).map(
        lambda kts: f"{kts[0]}: {kts[1]}{kts[2]}\n"),
    min_size=1, max_size=6,
).map(lambda lines: ("---\n" + "".join(lines) + "---\nbody\n").encode("utf-8"))

MEMORY_BYTES = st.one_of(
    st.binary(max_size=400),
    TAGGED_LINES,
    joined(YAML_PIECES, st.text(max_size=8)).map(lambda t: t.encode("utf-8", "surrogatepass")),
    joined(YAML_PIECES, st.text(max_size=8)).map(lambda t: ("---\n" + t + "\n---\n").encode(
        "utf-8", "surrogatepass")),
)


@FUZZ
@given(raw=MEMORY_BYTES)
def test_any_bytes_parse_or_raise_one_clear_invalid_memory(raw: bytes) -> None:
    try:
        parsed = parse_bytes(raw, "user_fuzz.md")
    except InvalidMemory as exc:
        assert str(exc).startswith("user_fuzz.md") and "\n" not in str(exc)
        return
    memory = memory_from_meta("user_fuzz", Path("user_fuzz.md"), parsed.meta, parsed.body)
    assert isinstance(memory.description, str) and 0.0 <= memory.trust <= 1.0
    json.dumps(memory.to_dict())  # what every interface prints must be serialisable
    find_secrets(parsed.body)
    find_injections(parsed.body)


ID_TEXT = st.one_of(
    joined(ID_PIECES, st.text(max_size=4)),
    st.text(max_size=60),
)


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory: pytest.TempPathFactory) -> MemoryFolder:
    root = tmp_path_factory.mktemp("fuzz") / "memory"
    shutil.copytree(TEMPLATE, root)
    (root / "project").mkdir()
    (root.parent / "outside.md").write_text("outside")
    (root / "project" / "escape").symlink_to(root.parent, target_is_directory=True)
    return MemoryFolder(root)


@FUZZ
@given(memory_id=ID_TEXT, archived=st.booleans())
def test_any_id_resolves_inside_the_folder_or_is_refused(
    fuzz_folder: MemoryFolder, memory_id: str, archived: bool
) -> None:
    try:
        canonical = fuzz_folder.normalize_id(memory_id, allow_archived=archived)
        path = fuzz_folder.path_for(memory_id, allow_archived=archived)
    except InvalidId as exc:
        assert "\n" not in str(exc)
        return
    root = os.path.realpath(fuzz_folder.root)
    assert os.path.realpath(path).startswith(root + os.sep)
    assert str(path).startswith(str(fuzz_folder.root) + os.sep)
    assert path.name.endswith(".md") and ".." not in canonical.split("/")
    found = fuzz_folder.id_for(path) or fuzz_folder.archived_id_for(path)
    assert found == canonical
    assert fuzz_folder.normalize_id(canonical, allow_archived=archived) == canonical


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
HOOK_PAYLOAD = st.one_of(
    st.text(max_size=200),
    JSON.map(json.dumps),
    st.fixed_dictionaries(
        {},
        optional={
            "session_id": JSON | joined(ID_PIECES, st.text(max_size=4)),
            "prompt": JSON | st.text(max_size=200) | st.sampled_from(["猫", "cat tests", "芝麻"]),
            "cwd": JSON | joined(ID_PIECES, st.text(max_size=4)),
            "source": JSON | st.sampled_from(["startup", "resume", "clear", "compact"]),
            "hook_event_name": JSON,
        },
    ).map(json.dumps),
)


@pytest.fixture(scope="module")
def hook_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hookfuzz") / "memory"
    shutil.copytree(TEMPLATE, root)
    return root


@FEW
@given(stdin=HOOK_PAYLOAD, event=st.sampled_from(["session-start", "user-prompt-submit", "x"]))
def test_any_hook_input_exits_0_with_a_valid_answer_or_none(
    hook_folder: Path, stdin: str, event: str
) -> None:
    before = sorted(p.name for p in hook_folder.parent.iterdir())
    out, err = io.StringIO(), io.StringIO()
    assert run_hook(event, io.StringIO(stdin), out, err, folder=hook_folder) == 0
    assert "Traceback" not in err.getvalue()
    if out.getvalue():
        answer = json.loads(out.getvalue())["hookSpecificOutput"]
        assert answer["hookEventName"] in ("SessionStart", "UserPromptSubmit")
        assert 0 < len(answer["additionalContext"]) < 10_000
    assert set(p.name for p in hook_folder.parent.iterdir()) <= set(before) | {".memory.sage-mem"}
    sessions = hook_folder.parent / ".memory.sage-mem" / "sessions"
    if sessions.exists():
        assert all(p.parent == sessions for p in sessions.iterdir())


TEXT = st.text(
    st.characters(blacklist_categories=("Cs",))
    | st.sampled_from(list("\n\r\t #:-'\"[]{}&*!|>%@`")),
    max_size=80,
)


@pytest.fixture(scope="module")
def write_store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    root = tmp_path_factory.mktemp("writefuzz") / "memory"
    root.mkdir()
    return MemoryStore(root)


@FEW
@given(description=TEXT, body=TEXT, tags=st.lists(TEXT, max_size=3),
       name=st.text(string.ascii_lowercase, min_size=1, max_size=12))
def test_any_text_written_reads_back_or_is_refused_before_writing(
    write_store: MemoryStore, description: str, body: str, tags: list[str], name: str
) -> None:
    memory_id = f"user_{name}"
    path = write_store.root / f"{memory_id}.md"
    before = path.read_bytes() if path.exists() else None
    try:
        memory = write_store.write(memory_id, description=description, body=body, tags=tags,
                                   category="user")
    except SageMemError as exc:
        assert "\n" not in str(exc)
        assert (path.read_bytes() if path.exists() else None) == before
        return
    again = write_store.read(memory_id)
    assert again.description == " ".join(description.split())
    assert again.body.strip("\r\n") == body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    assert list(again.tags) == list(dict.fromkeys(" ".join(t.split()) for t in tags if t.strip()))
    assert memory.sha256 == again.sha256


@FUZZ
@given(text=TEXT)
def test_secret_and_injection_finders_never_fail_and_redact_keeps_the_rest(text: str) -> None:
    masked = redact(text)
    assert masked.count("\n") == text.count("\n")
    for match in find_secrets(text):
        assert 1 <= match.line <= text.count("\n") + 1
    for match in find_injections(text):
        assert 1 <= match.line <= text.count("\n") + 1
