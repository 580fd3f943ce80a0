"""What MEMORY.md shows of a memory, read the short way (`memory.listing.listed_of`), is what
the long way gives: `parse_bytes` then `value.listed_fields`, or the same InvalidMemory.

The short way reads the flat `key: value` frontmatter sage-mem writes and remembers what a
repeated key or scalar resolved to; anything it does not fully recognise goes the long way.
Generated files, hostile and edge values included (quotes, colons, `#`, dates, numbers,
booleans, null, unicode, CRLF, a BOM, several lines, tabs, NUL, bytes that are not UTF-8),
are read both ways; the files sage-mem writes must take the short way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sage_mem.errors import InvalidMemory
from sage_mem.memory import file_format, yaml_plain
from sage_mem.memory.file_format import parse_bytes, render_new
from sage_mem.memory.listing import listed_fast, listed_of
from sage_mem.memory.value import listed_fields

MEMORY_ID = "project/note"


def long_way(raw: bytes, memory_id: str = MEMORY_ID) -> object:
    try:
        parsed = parse_bytes(raw, "note.md")
    except InvalidMemory as exc:
        return ("refused", str(exc))
    return listed_fields(memory_id, parsed.meta, parsed.body)


def short_way(raw: bytes, memory_id: str = MEMORY_ID) -> object:
    try:
        return listed_of(raw, memory_id, "note.md")
    except InvalidMemory as exc:
        return ("refused", str(exc))


def typed(value: object) -> object:
    """`value` with each part's type spelled out (True is not 1, "1" is not 1)."""
    if isinstance(value, tuple):
        return tuple(typed(item) for item in value)
    return (type(value).__name__, value)


def agree(raw: bytes, memory_id: str = MEMORY_ID) -> bool:
    """Both ways give the same; True when the short way took the file itself."""
    expected = long_way(raw, memory_id)
    assert typed(short_way(raw, memory_id)) == typed(expected), raw
    fast = listed_fast(raw, memory_id)
    if fast is not None:
        assert typed(fast) == typed(expected), raw
    # Read again: what was remembered of the first reading gives the same.
    assert typed(short_way(raw, memory_id)) == typed(expected), raw
    return fast is not None


KEYS = ["description", "name", "summary", "category", "type", "baseline", "baselinePriority",
        "metadata", "tags", "trust", "created", "updated", "yes", "null", "on", "True", "a-b",
        "_k", "Description"]
VALUES = [
    "", "a", "hello world", "  spaced  ", "0.5", "1e3", "1.0e+3", "0x1F", "0b101", "017", "09",
    "1_000", "1:30", "1:70", "+1", "-1", ".", ".inf", "-.inf", ".NaN", "yes", "Yes", "no", "on",
    "OFF", "True", "false", "y", "n", "~", "null", "Null", "nULL", "a:b", "a: b", "a:", ":a",
    "a #b", "a#b", "#b", "a ## b", "https://example.com/a?b=c#d", "2026-11-29",
    "2026-11-29T18:00:00Z", "2026-11-29 18:00:00", "2026-11-29t18:00:00.5+01:00",
    "2026-13-45", "2026-02-30", "2026-1-2", "'a'", "'it''s'", "''", "'a' #c", "'a'#c",
    "'a' b", "'a", '"a"', '""', '"a\\nb"', '"a', '"a\'b"', "[a, b]", "[a,b]", "[]", "[ ]",
    "[1, yes, null, ~, 0.5, 2026-01-01]", "[a,]", "[a, [b]]", "['a', b]", "[a: b]", "{a: b}",
    "- a", "-a", "? a", "=", "<<", "!tag x", "!!str 1", "&a x", "*a", "|", ">", "%x", "@x",
    "`x", "用户的猫，喜欢晒太阳", "café", "\xa0a\xa0", "a\u3000b", "a\tb", "a\x85b", "a\u2028b",
    "a\ufeffb", "a\x01b", "a\rb", "1" * 30, "9" * 5000, "x" * 300, "密码: hunter2",
    "a \U0001f600 b", "a\\b", "a - b -c -- d", "a`b%c@d!e&f*g|h>i?j",
]
CHARACTERS = list("abz09 .,:;#'\"[]{}-?!&*|>%@`~=<+_\\\t\r\n") + [
    "\xa0", "猫", "，", "\u3000", "é", "\U0001f600", "\x85", "\u2028", "\ufeff", "\x7f", "\x01",
]
value_text = st.one_of(
    st.sampled_from(VALUES),
    st.text(alphabet=st.sampled_from(CHARACTERS), max_size=14),
    st.lists(st.sampled_from(VALUES[:70]), max_size=3).map(lambda items: f"[{', '.join(items)}]"),
)
key_line = st.builds(
    lambda key, sep, value, tail: key + sep + value + tail,
    st.one_of(st.sampled_from(KEYS), st.text(alphabet=st.sampled_from(CHARACTERS), min_size=1,
                                             max_size=6)),
    st.sampled_from([": ", ": ", ":  ", ":", ":\t", " : "]),
    value_text,
    st.sampled_from(["", "", " ", " # c", "#c"]),
)
other_line = st.sampled_from(["", "  ", "# c", "  - a", "- a", "  more", "  type: user", "---",
                              "...", "? k", "\t", "%YAML 1.1"])
openings = st.sampled_from(["---\n", "---\n", "---\n", "--- \n", "---\r\n", "---", "",
                            "\ufeff---\n", "# Title\n", "---\r"])
closings = st.sampled_from(["---\n", "---\n", "---\n", "...\n", "--- \n", "---", "---\r\n", "",
                            "----\n"])
bodies = st.one_of(
    st.sampled_from(["", "\n", "Body.\n", "\n# Heading\n\nText.\n", "\n\n   \n", "# 标题\n正文\n",
                     "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n", "---\nmore: yaml\n---\n"]),
    st.text(alphabet=st.sampled_from(CHARACTERS), max_size=30),
)


@st.composite
def memory_file(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.one_of(key_line, key_line, key_line, other_line), max_size=7))
    newline = draw(st.sampled_from(["\n", "\n", "\n", "\r\n"]))
    text = (draw(openings) + newline.join(lines) + (newline if lines else "")
            + draw(closings) + draw(bodies))
    raw = text.encode("utf-8")
    spoil = draw(st.sampled_from(["", "", "", "", "", "nul", "latin1", "cut"]))
    if spoil == "nul":
        raw = raw.replace(b"a", b"\x00", 1) + b"\x00"
    elif spoil == "latin1":
        raw += b"caf\xe9"
    elif spoil == "cut" and len(raw) > 3:
        raw = raw[:-1] + b"\xe7"
    return raw


@pytest.mark.property
@settings(max_examples=1500, deadline=None)
@given(raw=memory_file(), memory_id=st.sampled_from([MEMORY_ID, "user_猫", "a"]))
def test_generated_files_list_as_the_long_way_lists_them(raw: bytes, memory_id: str) -> None:
    agree(raw, memory_id)


# Mostly the flat shape, LF, `---` lines: the hostile values inside the lines the short way
# takes (the generator above sends most files the long way, spoilt somewhere).
FLAT_VALUES = [v for v in VALUES if not any(c in v for c in "\t\r\n\x85\u2028\ufeff\x01")]
flat_line = st.builds(
    lambda key, value, tail: f"{key}: {value}{tail}",
    st.sampled_from(KEYS),
    st.one_of(st.sampled_from(FLAT_VALUES), st.text(
        alphabet=st.sampled_from(list("abz09 .,:#'\"[]-~猫é") + ["\xa0", "\U0001f600"]),
        max_size=16)),
    st.sampled_from(["", "", " # c", "  #: c"]),
)
flat_file = st.builds(
    lambda lines, body: ("---\n" + "".join(line + "\n" for line in lines) + "---\n"
                         + body).encode("utf-8"),
    st.lists(st.one_of(flat_line, flat_line, flat_line, st.sampled_from(["", "# c"])),
             min_size=1, max_size=8),
    bodies,
)


@pytest.mark.property
@settings(max_examples=1500, deadline=None)
@given(raw=flat_file)
def test_generated_flat_frontmatter_lists_as_the_long_way_lists_it(raw: bytes) -> None:
    agree(raw)


# The shape sage-mem writes: flat `key: value` lines of the values it writes.
written_value = st.one_of(
    st.text(alphabet=st.sampled_from(CHARACTERS[:-4]), max_size=40),
    st.sampled_from(VALUES),
    st.integers(-10**6, 10**6), st.floats(0, 1), st.booleans(), st.none(),
    st.lists(st.text(alphabet=st.sampled_from(list("abc猫é -")), min_size=1, max_size=8),
             max_size=4),
)


@pytest.mark.property
@settings(max_examples=800, deadline=None)
@given(
    meta=st.dictionaries(st.sampled_from(KEYS[:12] + ["project", "supersedes", "locked"]),
                         written_value, min_size=1, max_size=8),
    body=bodies,
)
def test_files_as_sage_mem_writes_them_list_as_the_long_way_lists_them(
    meta: dict[str, object], body: str
) -> None:
    agree(render_new(meta, body).encode("utf-8"))


@pytest.mark.parametrize("text", [
    pytest.param("---\ndescription: The cat is Sesame\ncategory: user\ncreated: 2026-05-03\n"
                 "updated: 2026-05-03T10:00:00Z\ntags: [pet, cat]\ntrust: 0.5\n---\n\nBody.\n",
                 id="as-written"),
    pytest.param("---\nname: 猫\ndescription: '它叫 Sesame: 橘色'\nbaseline: true\n"
                 "baselinePriority: 3\n---\nBody.\n", id="quoted-chinese-baseline"),
    pytest.param("---\ndescription:\nname: build\ntype: Project\n---\n# Title\n", id="empty-value"),
    pytest.param("---\ndescription: d # a comment\n# a comment line\n\ncategory: user\n---\n",
                 id="comments"),
    pytest.param("---\ndescription: first\ndescription: second\n---\n", id="duplicate-key"),
    pytest.param("---\nsummary: s\n---\n\n## Heading\n", id="summary-only"),
    pytest.param("---\ntags: []\n---\n\n\n  First line of the body  \n", id="body-line"),
])
def test_the_frontmatter_sage_mem_writes_takes_the_short_way(text: str) -> None:
    assert agree(text.encode("utf-8"))


@pytest.mark.parametrize("text", [
    pytest.param("---\r\ndescription: d\r\n---\r\n", id="crlf"),
    pytest.param("\ufeff---\ndescription: d\n---\n", id="bom"),
    pytest.param("---\nmetadata:\n  type: user\n---\n", id="nested"),
    pytest.param("---\ntags:\n- a\n---\n", id="block-list"),
    pytest.param("---\ndescription: |\n  two\n  lines\n---\n", id="block-scalar"),
    pytest.param("---\ndescription: a\tb\n---\n", id="tab"),
    pytest.param("---\nyes: 1\ndescription: d\n---\n", id="bool-key"),
    pytest.param("---\ndescription: =\n---\n", id="value-tag"),
    pytest.param("---\ntrust: <<\ndescription: d\n---\n", id="merge-tag-elsewhere"),
    pytest.param("---\ndescription: d\n", id="no-closing"),
    pytest.param("description: d\n", id="no-frontmatter"),
    pytest.param("---\n# only a comment\n---\n", id="no-keys"),
    pytest.param("---\ndescription: d\x00\n---\n", id="nul"),
    pytest.param("---\nbaselinePriority: " + "9" * 5000 + "\n---\n", id="huge-integer"),
])
def test_what_the_short_way_does_not_know_goes_the_long_way(text: str) -> None:
    assert not agree(text.encode("utf-8"))


def test_not_utf8_and_bad_yaml_are_refused_as_the_long_way_refuses_them() -> None:
    for raw in (b"---\ndescription: caf\xe9\n---\n", b"---\ndescription: [a\n---\n",
                b"---\ndescription: d\ntrust: =\n---\n"):
        assert agree(raw) is False
        assert isinstance(long_way(raw), tuple) and long_way(raw)[0] == "refused"


def test_what_is_remembered_is_emptied_when_full_and_reads_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(file_format, "_REMEMBERED", 8)
    for number in range(40):
        raw = (f"---\ndescription: note {number}\ncreated: 2026-01-{number % 28 + 1:02d}\n"
               f"trust: 0.{number}\ntags: [t{number}]\nx{number}: y\n---\n").encode()
        assert agree(raw)
        assert max(len(file_format._plains), len(file_format._values),
                   len(file_format._keys)) <= 20


def test_a_flow_list_read_twice_is_two_lists() -> None:
    raw = b"---\ndescription: d\ntags: [a, b]\n---\n"
    listed_fast(raw, MEMORY_ID)
    remembered = file_format._values["[a, b]"]
    assert remembered == ["a", "b"]
    # What a caller gets is its own: changing it changes nothing remembered.
    mapping = file_format._simple_mapping("tags: [a, b]\n")
    assert mapping is not None and mapping["tags"] is not remembered


# The short read of a memory file (`index_file._Files`) against the checked one alone.


def test_the_short_read_lists_a_folder_as_the_checked_read_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.memory.value import MAX_FILE_BYTES
    from sage_mem.sync import index_file

    root = tmp_path / "memory"
    (root / "project").mkdir(parents=True)
    note = "---\ndescription: {}\ncategory: project\n---\n\nBody.\n"
    (root / "user_cat.md").write_text(note.format("The cat"), encoding="utf-8")
    (root / "project" / "build.md").write_text(note.format("The build"), encoding="utf-8")
    (root / "crlf.md").write_bytes(note.format("Windows").replace("\n", "\r\n").encode())
    (root / "broken.md").write_text("---\ndescription: [unclosed\n---\n", encoding="utf-8")
    (root / "big.md").write_text(note.format("x" * MAX_FILE_BYTES), encoding="utf-8")
    os.symlink(root / "user_cat.md", root / "linked_inside.md")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(note.format("Never listed"), encoding="utf-8")
    os.symlink(outside / "secret.md", root / "linked_outside.md")
    os.symlink(outside, root / "linked_folder")
    os.mkfifo(root / "fifo.md")
    folder = MemoryFolder(root)

    def listed() -> tuple[object, ...]:
        kept: dict[str, object] = {}
        inputs: dict[str, str] = {}
        memories, vouched = index_file._memories(folder, {}, {}, kept, inputs)  # type: ignore[arg-type]
        return memories, vouched, kept, inputs

    short = listed()
    monkeypatch.setattr(index_file._Files, "read", lambda self, path: None)
    assert short == listed()
    names = [m.id for m in short[0]]  # type: ignore[attr-defined]
    assert names == ["crlf", "linked_inside", "project/build", "user_cat"]
    assert short[1] is False  # a link's bytes are not vouched for


def test_a_folder_swapped_for_a_link_after_the_walk_is_read_the_checked_way(
    tmp_path: Path,
) -> None:
    from sage_mem.sync import index_file

    root = tmp_path / "memory"
    (root / "project").mkdir(parents=True)
    (root / "project" / "build.md").write_text("---\ndescription: d\n---\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "build.md").write_text("---\ndescription: outside\n---\n", encoding="utf-8")
    with index_file._Files(root) as files:
        assert files.read(root / "project" / "build.md") is not None
    (root / "project").rename(tmp_path / "moved")
    os.symlink(outside, root / "project")
    with index_file._Files(root) as files:
        assert files.read(root / "project" / "build.md") is None


# The commonest plain values made without PyYAML (`yaml_plain.common_value`), their tags
# decided by a copy of PyYAML's resolvers while yaml is not imported: a receive of a few
# files reads them without importing yaml (~15 ms).

PLAIN_VALUES = [
    "~", "null", "Null", "NULL", "", "yes", "No", "TRUE", "off", "On", "y", "nULL",
    "0", "12", "+12", "-12", "-0", "123456789012345678", "1234567890123456789", "1" * 30,
    "0.46", "+1.5", "-0.0", "1.", "00.5", "10.250", "12345678901234567.12345678901234567",
    "1" * 20 + ".5", "007", "08", "0x1F", "0b101", "1_000", "1_0.5", "1e5", "1.5e+3", ".5",
    "1:30", "1:30.5", ".inf", "-.inf", ".NaN", "2026-11-29", "2026-11-29T18:00:00Z",
    "2026-11-29 18:00:00", "2026-02-30", "word", "true story",
]


@pytest.mark.parametrize("text", PLAIN_VALUES)
def test_a_plain_value_is_what_pyyaml_makes_of_it(text: str) -> None:
    import math

    import yaml

    try:
        made = file_format._plain(text, yaml_plain.copied_resolvers())
    except file_format._NotSimple:
        return  # left to PyYAML (the fast path reads no such file)
    loaded = yaml.load(f"k: {text}\n", Loader=file_format._yaml().loader)["k"]  # noqa: S506
    if isinstance(loaded, float) and math.isnan(loaded):
        assert isinstance(made, float) and math.isnan(made)
        return
    assert (type(made), made) == (type(loaded), loaded)
    if isinstance(made, float):
        assert math.copysign(1, made) == math.copysign(1, loaded)  # -0.0 is not 0.0


def test_the_copy_of_pyyamls_resolvers_is_pyyamls() -> None:
    import yaml

    def shown(table: dict) -> list:  # type: ignore[type-arg]
        return [(first, [(tag, " ".join(regexp.pattern.split()), regexp.flags)
                         for tag, regexp in resolvers]) for first, resolvers in table.items()]

    assert shown(yaml_plain.copied_resolvers()) == shown(
        yaml.SafeLoader.yaml_implicit_resolvers)
    assert not yaml.SafeLoader.yaml_path_resolvers


def test_the_short_way_reads_common_values_without_importing_yaml() -> None:
    import json
    import subprocess
    import sys

    raw = ("---\nname: 备份配置\ndescription: A note\ncategory: project\ntags: [a, b]\n"
           "trust: 0.46\nbaselinePriority: 3\nbaseline: true\nsupersedes: ~\nflag: off\n"
           "created: 2026-03-10\nupdated: 2026-03-10T10:00:00Z\n---\n\nBody.\n").encode()
    code = ("import json, sys\nfrom sage_mem.memory.listing import listed_fast\n"
            f"fields = listed_fast(sys.stdin.buffer.read(), {MEMORY_ID!r})\n"
            "print(json.dumps([fields, 'yaml' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], input=raw, capture_output=True,
                          check=True, timeout=60)
    fields, imported = json.loads(done.stdout)
    assert fields is not None and tuple(fields) == long_way(raw)
    assert imported is False
