"""The memory file format: tolerant reading, edits that touch only what they mean to.

Every parsing quirk is a `pytest.param` with an id; the round-trip table checks
bytes, not parsed values, because a user's diff is made of bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sage_mem.errors import InvalidMemory
from sage_mem.memory.file_format import (
    DELETE,
    dump_value,
    edit_frontmatter,
    parse_bytes,
    render_new,
    sha256_bytes,
    split_lines,
)
from sage_mem.memory.value import memory_from_meta

SIMPLE = "---\nname: cat\ndescription: the cat\ncategory: user\n---\n\nBody.\n"


def parse(text: str | bytes):
    return parse_bytes(text.encode("utf-8") if isinstance(text, str) else text, "m.md")


def memory_of(text: str | bytes):
    parsed = parse(text)
    return memory_from_meta("m", Path("m.md"), parsed.meta, parsed.body, problems=parsed.problems)


# reading


@pytest.mark.parametrize(
    ("raw", "description", "body", "problem"),
    [
        pytest.param(SIMPLE.encode(), "the cat", "\nBody.\n", None, id="plain"),
        pytest.param(
            b"\xef\xbb\xbf" + SIMPLE.encode(), "the cat", "\nBody.\n", "byte order mark", id="bom"
        ),
        pytest.param(
            SIMPLE.replace("\n", "\r\n").encode(), "the cat", "\r\nBody.\r\n", "CRLF", id="crlf"
        ),
        pytest.param(
            b"\xef\xbb\xbf" + SIMPLE.replace("\n", "\r\n").encode(),
            "the cat", "\r\nBody.\r\n", "CRLF", id="bom-crlf",
        ),
        pytest.param(
            b"---\ndescription: the cat\ncategory: user\n\nBody.\n",
            "the cat", "\nBody.\n", "no closing ---", id="no-closing-blank-line",
        ),
        pytest.param(
            b"---\ndescription: the cat\ncategory: user\n# Heading\nBody.\n",
            "the cat", "# Heading\nBody.\n", "no closing ---", id="no-closing-heading",
        ),
        pytest.param(
            b"---\ndescription: the cat\n...\nBody.\n", "the cat", "Body.\n", None,
            id="dots-closing",
        ),
        pytest.param(
            b"---  \ndescription: the cat\n--- \nBody.\n",
            "the cat", "Body.\n", None, id="delimiters-with-trailing-spaces",
        ),
        pytest.param(
            b"---\ndescription: the cat\n---", "the cat", "", None, id="no-trailing-newline"
        ),
        pytest.param(b"# The cat\n\nIs orange.\n", "The cat", "# The cat\n\nIs orange.\n",
                     "no frontmatter", id="no-frontmatter"),
        pytest.param(b"", "m", "", "no frontmatter", id="empty-file"),
        pytest.param(b"---\n---\nthe cat\n", "the cat", "the cat\n", "no description",
                     id="empty-frontmatter"),
        pytest.param(b"---\n- a\n- b\n---\nthe cat\n", "the cat", "the cat\n", "not a mapping",
                     id="frontmatter-is-a-list"),
        pytest.param(b"---\njust words\n---\nthe cat\n", "the cat", "the cat\n", "not a mapping",
                     id="frontmatter-is-a-scalar"),
        pytest.param(
            "---\ndescription: 用户的猫叫芝麻\n---\n\n芝麻\n".encode(),
            "用户的猫叫芝麻", "\n芝麻\n", None, id="chinese",
        ),
    ],
)
def test_tolerant_reading_loads_every_quirk(
    raw: bytes, description: str, body: str, problem: str | None
) -> None:
    parsed = parse(raw)
    memory = memory_from_meta("m", Path("m.md"), parsed.meta, parsed.body, problems=parsed.problems)
    assert memory.description == description
    assert parsed.body == body
    if problem is None:
        assert not [p for p in memory.problems if p != "no description"]
    else:
        assert any(problem in p for p in memory.problems), memory.problems
    assert parsed.sha256 == sha256_bytes(raw)


@pytest.mark.parametrize(
    ("raw", "line", "column"),
    [
        pytest.param(b"---\nname: x\nbad: : :\n---\n", 3, 6, id="mapping-in-value"),
        pytest.param(b"---\nname: x\n  indented: 2\n---\n", 3, 11, id="bad-indent"),
        pytest.param(b"---\nname: x\n\tbad: tab\n---\n", 3, 1, id="tab-indent"),
        pytest.param(b"\xef\xbb\xbf---\r\nname: x\r\nbad: : :\r\n---\r\n", 3, 6, id="bom-crlf"),
        pytest.param(
            "---\nname: 猫\ndescription: 用户: 猫\n---\n".encode(), 3, 16, id="chinese-columns"
        ),
        pytest.param(b'---\nname: x\ndescription: "unterminated\n---\nbody\n', 3, 14,
                     id="unterminated-quote-points-at-its-start"),
        pytest.param(b"---\ntags: [a, b\n---\n", 2, 7, id="unclosed-flow-list"),
        pytest.param(b"---\nname: x\nname2: [a\n\n", 3, 8, id="no-closing-and-broken"),
    ],
)
def test_invalid_yaml_reports_path_line_and_column_counted_from_the_first_line(
    raw: bytes, line: int, column: int
) -> None:
    with pytest.raises(InvalidMemory) as caught:
        parse_bytes(raw, "notes/broken.md")
    error = caught.value
    assert (error.line, error.column) == (line, column)
    assert error.path == Path("notes/broken.md")
    assert str(error).startswith(f"notes/broken.md:{line}:{column}: invalid YAML")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"---\ndescription: x\n---\n\x00\x01", id="nul-bytes"),
        pytest.param(b"---\ndescription: caf\xe9\n---\n", id="latin-1"),
    ],
)
def test_unreadable_bytes_raise_invalid_memory_with_the_path(raw: bytes) -> None:
    with pytest.raises(InvalidMemory) as caught:
        parse_bytes(raw, "x.md")
    assert caught.value.path == Path("x.md")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("2026-11-29", "2026-11-29", id="date"),
        pytest.param("2026-11-29T18:00:00Z", "2026-11-29T18:00:00Z", id="datetime-z"),
        pytest.param("2026-11-29T18:00:00+08:00", "2026-11-29T18:00:00+08:00", id="offset"),
        pytest.param(
            "2026-11-29T18:00:00-05:30", "2026-11-29T18:00:00-05:30", id="negative-offset"
        ),
        pytest.param("2026-11-29T18:00:00+00:00", "2026-11-29T18:00:00Z", id="zero-offset-as-z"),
        pytest.param("2026-11-29 18:00:00", "2026-11-29T18:00:00", id="space-separated"),
        pytest.param("2026-11-29T18:00:00.5Z", "2026-11-29T18:00:00.500000Z", id="fraction"),
        pytest.param("'2026-11-29'", "2026-11-29", id="quoted-stays-text"),
    ],
)
def test_yaml_dates_are_read_as_iso_strings(value: str, expected: str) -> None:
    parsed = parse(f"---\ndescription: d\ncreated: {value}\nupdated: {value}\n"
                   f"metadata:\n  modified: {value}\n---\n")
    assert parsed.meta["created"] == expected
    assert parsed.meta["metadata"]["modified"] == expected
    assert memory_of(f"---\ndescription: d\nupdated: {value}\n---\n").updated == expected


def test_claude_code_modified_is_read_as_updated() -> None:
    memory = memory_of("---\ndescription: d\nmodified: 2026-11-29T18:00:00Z\n---\n")
    assert memory.updated == "2026-11-29T18:00:00Z"


@pytest.mark.parametrize(
    ("frontmatter", "category", "key"),
    [
        pytest.param("category: user", "user", "category", id="category"),
        pytest.param("type: feedback", "feedback", "type", id="type"),
        pytest.param("metadata:\n  type: project", "project", "metadata.type", id="metadata-type"),
        pytest.param("type: Reference", "reference", "type", id="type-capitalized"),
        pytest.param("category: user\ntype: project", "user", "category", id="category-wins"),
        pytest.param("name: x", None, None, id="none"),
    ],
)
def test_type_and_metadata_type_are_read_as_the_category(
    frontmatter: str, category: str | None, key: str | None
) -> None:
    memory = memory_of(f"---\ndescription: d\n{frontmatter}\n---\n")
    assert (memory.category, memory.category_key) == (category, key)


# rewriting: only the keys meant to change


ROUND_TRIP = [
    pytest.param(SIMPLE, id="plain"),
    pytest.param(SIMPLE.replace("\n", "\r\n"), id="crlf"),
    pytest.param("\ufeff" + SIMPLE, id="bom"),
    pytest.param("\ufeff" + SIMPLE.replace("\n", "\r\n"), id="bom-crlf"),
    pytest.param(
        "---\n# who the user is\nname: cat  # short\n\ndescription:   the cat\n# the end\n---\nB\n",
        id="comments-and-odd-spacing",
    ),
    pytest.param(
        "---\ndescription: d\nextra:\n  nested:\n    deep: [1, 2]\n  other: {a: b}\nz: 1\n---\nB\n",
        id="nested-unknown-mappings",
    ),
    pytest.param(
        "---\ndescription: d\ntags: [a, b]\naliases:\n  - x\n  - y\nsupersedes:\n- old\n---\nB\n",
        id="flow-and-block-lists",
    ),
    pytest.param(
        "---\nname: 猫\ndescription: 用户的猫叫芝麻，喜欢晒太阳\n---\n\n芝麻三岁。\n", id="chinese"
    ),
    pytest.param("---\ndescription: d\n---\nno trailing newline", id="no-trailing-newline"),
    pytest.param("---\ndescription: d\n---", id="ends-at-closing-delimiter"),
    pytest.param(
        "---\ndescription: |\n  line one\n  # not a comment\n\nname: n\n---\nB\n",
        id="block-scalar",
    ),
    pytest.param("---\n\"quoted key\": 1\n'single': 2\ndescription: d\n---\nB\n", id="quoted-keys"),
    pytest.param("---\ndescription: d\nsource: https://example.com/a:b\n---\nB\n", id="url-value"),
    pytest.param("---  \ndescription: d\n...\nB\n", id="unusual-delimiters"),
    pytest.param("---\ndescription: d\n---\n\n\x0cpage\u2028break\n", id="form-feed-and-u2028"),
    pytest.param("---\ndescription: d\nanchor: &a [1]\nuse: *a\n---\nB\n", id="anchor-and-alias"),
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_a_rewrite_without_changes_is_byte_exact(text: str) -> None:
    assert edit_frontmatter(parse(text), {}) == text


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_changing_one_key_adds_one_line_and_keeps_every_other_byte(text: str) -> None:
    parsed = parse(text)
    nl = parsed.newline
    edited = edit_frontmatter(parsed, {"trust": 0.7})
    assert edited.count("trust: 0.7" + nl) == 1
    assert edited.replace("trust: 0.7" + nl, "", 1) == text
    assert parse(edited).meta == {**parsed.meta, "trust": 0.7}


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_changing_the_description_rewrites_only_its_lines(text: str) -> None:
    parsed = parse(text)
    edited = edit_frontmatter(parsed, {"description": "新的描述: with a colon"})
    after = parse(edited)
    assert after.meta == {**parsed.meta, "description": "新的描述: with a colon"}
    assert after.body == parsed.body
    old_lines, new_lines = split_lines(text), split_lines(edited)
    changed = [line for line in new_lines if line not in old_lines]
    assert len(changed) == 1 and changed[0].startswith("description: ")


@pytest.mark.parametrize(
    ("text", "changes", "expected"),
    [
        pytest.param(
            "---\nname: x\n\ndescription: y\n---\nB\n", {"name": "z"},
            "---\nname: z\n\ndescription: y\n---\nB\n", id="blank-line-after-key-kept",
        ),
        pytest.param(
            "---\nname: x\n# about the description\ndescription: y\n---\nB\n", {"name": "z"},
            "---\nname: z\n# about the description\ndescription: y\n---\nB\n",
            id="comment-before-next-key-kept",
        ),
        pytest.param(
            "---\ndescription: |\n  one\n  # two\nname: n\n---\nB\n", {"description": "new"},
            "---\ndescription: new\nname: n\n---\nB\n", id="block-scalar-replaced-whole",
        ),
        pytest.param(
            "---\ndescription: >-\n  folded\n  text\n\n# c\nname: n\n---\nB\n",
            {"description": "new"},
            "---\ndescription: new\n\n# c\nname: n\n---\nB\n", id="folded-scalar",
        ),
        pytest.param(
            "---\ntags:\n- a\n- b\ndescription: d\n---\nB\n", {"tags": ["c"]},
            "---\ntags: [c]\ndescription: d\n---\nB\n", id="list-at-column-0",
        ),
        pytest.param(
            "---\ntags:\n  # comment inside\n  - a\ndescription: d\n---\nB\n", {"tags": ["c"]},
            "---\ntags: [c]\ndescription: d\n---\nB\n", id="comment-inside-list",
        ),
        pytest.param(
            "---\ndescription: d\ntrust: 0.5 # default\n---\nB\n", {"trust": 0.9},
            "---\ndescription: d\ntrust: 0.9\n---\nB\n", id="trailing-comment-on-changed-key",
        ),
        pytest.param(
            "---\n\"description\": d\n---\nB\n", {"description": "e"},
            "---\ndescription: e\n---\nB\n", id="quoted-key",
        ),
        pytest.param(
            "---\nname: n\ndescription: d\nlocked: false\n---\nB\n", {"locked": DELETE},
            "---\nname: n\ndescription: d\n---\nB\n", id="delete-last-key",
        ),
        pytest.param(
            "---\nname: n\naliases:\n  - a\ndescription: d\n---\nB\n", {"aliases": DELETE},
            "---\nname: n\ndescription: d\n---\nB\n", id="delete-block-list",
        ),
        pytest.param(
            "---\ndescription: d\n---\nB\n", {"missing": DELETE},
            "---\ndescription: d\n---\nB\n", id="delete-absent-key",
        ),
        pytest.param(
            "---\ndescription: d\nmetadata:\n  type: user\n  other: 1\n---\nB\n",
            {"metadata": {"type": "project", "other": 1}},
            "---\ndescription: d\nmetadata:\n  type: project\n  other: 1\n---\nB\n",
            id="nested-mapping",
        ),
        pytest.param(
            "---\ndescription: d\n---", {"trust": 0.7},
            "---\ndescription: d\ntrust: 0.7\n---", id="file-ending-at-closing",
        ),
    ],
)
def test_edits_touch_only_the_lines_of_changed_keys(
    text: str, changes: dict[str, object], expected: str
) -> None:
    assert edit_frontmatter(parse(text), changes) == expected


@pytest.mark.parametrize(
    ("text", "body", "expected"),
    [
        pytest.param("---\nd: 1\n---\n\nold\n", "new\n", "---\nd: 1\n---\nnew\n", id="lf"),
        pytest.param(
            "---\nd: 1\n---", "new\n", "---\nd: 1\n---\nnew\n", id="closing-without-newline"
        ),
        pytest.param("---\r\nd: 1\r\n---\r\nold\r\n", "new\r\n", "---\r\nd: 1\r\n---\r\nnew\r\n",
                     id="crlf"),
    ],
)
def test_a_new_body_replaces_only_the_body(text: str, body: str, expected: str) -> None:
    assert edit_frontmatter(parse(text), {}, body) == expected


def test_a_file_without_frontmatter_gets_one_above_its_unchanged_text() -> None:
    text = "# Title\n\nSome notes.\n"
    edited = edit_frontmatter(parse(text), {"description": "notes", "trust": 0.6})
    assert edited == "---\ndescription: notes\ntrust: 0.6\n---\n\n# Title\n\nSome notes.\n"
    assert edit_frontmatter(parse(text), {"gone": DELETE}) == text


def test_a_crlf_file_without_frontmatter_gets_crlf_frontmatter() -> None:
    text = "\ufeffnotes\r\n"
    edited = edit_frontmatter(parse(text), {"description": "n"})
    assert edited == "\ufeff---\r\ndescription: n\r\n---\r\n\r\nnotes\r\n"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("---\ndescription: d\n\nbody\n", id="no-closing"),
        pytest.param("---\n- a\n---\nbody\n", id="not-a-mapping"),
        pytest.param("---\njust text\n---\nbody\n", id="scalar"),
    ],
)
def test_a_file_read_with_guesses_is_never_rewritten(text: str) -> None:
    parsed = parse(text)
    assert not parsed.rewritable
    with pytest.raises(InvalidMemory, match="cannot be rewritten"):
        edit_frontmatter(parsed, {"trust": 0.7}, path="x.md")


def test_a_quoted_value_continued_at_column_0_is_edited_in_place() -> None:
    text = '---\n# keep me\ndescription: "two\nlines"\nname: n\n---\nB\n'
    edited = edit_frontmatter(parse(text), {"description": "one"})
    assert edited == "---\n# keep me\ndescription: one\nname: n\n---\nB\n"


# A continuation line that looks like a key defeats the line editor.
TRICKY = '---\ndescription: "two\nfake: lines"\nname: n\n---\nB\n'


def test_a_layout_too_unusual_for_line_edits_is_redumped_when_nothing_is_lost() -> None:
    edited = edit_frontmatter(parse(TRICKY), {"description": "one"})
    assert edited == "---\ndescription: one\nname: n\n---\nB\n"


def test_a_layout_too_unusual_for_line_edits_is_refused_when_it_has_comments() -> None:
    text = TRICKY.replace("name: n", "name: n  # a comment")
    with pytest.raises(InvalidMemory, match="comments"):
        edit_frontmatter(parse(text), {"description": "one"})


def test_changing_an_anchored_value_keeps_its_aliases_meaning() -> None:
    text = "---\ndescription: d\nanchor: &a [1]\nuse: *a\n---\nB\n"
    edited = edit_frontmatter(parse(text), {"anchor": [2]})
    assert parse(edited).meta == {"description": "d", "anchor": [2], "use": [1]}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("2026-11-29 18:00:00", id="timestamp-with-space"),
        pytest.param("2026-11-29T18:00:00.5Z", id="timestamp-with-fraction"),
        pytest.param("2026-11-29", id="date"),
        pytest.param("2026-11-29T18:00:00Z", id="timestamp-z"),
        pytest.param("yes", id="yaml-1.1-bool"),
        pytest.param("0.5", id="number-like"),
        pytest.param("# not a comment", id="hash"),
        pytest.param("a: b", id="colon-space"),
        pytest.param("null", id="null-word"),
        pytest.param("[x]", id="flow-like"),
        pytest.param("用户的猫", id="chinese"),
    ],
)
def test_text_values_read_back_as_the_same_text(value: str) -> None:
    edited = edit_frontmatter(parse(SIMPLE), {"summary": value})
    assert parse(edited).meta["summary"] == value


def test_dates_the_tool_writes_stay_unquoted() -> None:
    assert dump_value("updated", "2026-11-29T18:00:00Z") == "updated: 2026-11-29T18:00:00Z\n"
    assert dump_value("created", "2026-11-29") == "created: 2026-11-29\n"


@settings(max_examples=150, deadline=None)
@given(value=st.one_of(
    st.text(max_size=40),
    st.lists(st.text(max_size=10), max_size=4),
    st.floats(allow_nan=False),
    st.integers(),
    st.booleans(),
))
def test_any_value_written_reads_back_equal(value: object) -> None:
    text = "---\n# comment\nname: n\ndescription: d  # trailing\n---\nbody\n"
    edited = edit_frontmatter(parse(text), {"description": value})
    assert parse(edited).meta == {"name": "n", "description": value}
    assert parse(edited).body == "body\n"


def test_render_new_writes_keys_in_the_given_order() -> None:
    text = render_new({"name": "n", "description": "d", "tags": ["a", "b"]}, "Body")
    assert text == "---\nname: n\ndescription: d\ntags: [a, b]\n---\n\nBody\n"
    assert render_new({"description": "d"}, "") == "---\ndescription: d\n---\n"


def test_lines_split_only_at_newlines() -> None:
    assert split_lines("a\x0cb\u2028c\r\nd") == ["a\x0cb\u2028c\r\n", "d"]
    assert split_lines("") == []
