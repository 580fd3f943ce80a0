"""Markdown as the audit and the dream read it: what is code, what is a link."""

from __future__ import annotations

import pytest

from sage_mem.memory.markdown import (
    MARKDOWN_LINK,
    WIKI_LINK,
    code_content,
    code_ranges,
    linked_file,
    mask_code,
    outside_code,
)


def code(text: str) -> list[tuple[str, str]]:
    return [(c.kind, text[c.start : c.end]) for c in code_ranges(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("```\nx\n```\nprose\n", [("fence", "```\nx\n```\n")], id="backticks"),
        pytest.param("~~~\nx\n~~~\n", [("fence", "~~~\nx\n~~~\n")], id="tildes"),
        pytest.param("   ```\nx\n   ```\n", [("fence", "```\nx\n   ```\n")], id="indented-3"),
        pytest.param(
            "````\n```\nx\n````\nprose\n", [("fence", "````\n```\nx\n````\n")],
            id="closed-only-by-a-run-as-long",
        ),
        pytest.param(
            "~~~\n```\nx\n~~~\nprose\n", [("fence", "~~~\n```\nx\n~~~\n")],
            id="closed-only-by-the-same-character",
        ),
        pytest.param(
            "```\nx\n``` not a close\ny\n", [("fence", "```\nx\n``` not a close\ny\n")],
            id="a-closing-fence-has-nothing-after-it",
        ),
        pytest.param("```python\nx\n", [("fence", "```python\nx\n")], id="unclosed-runs-to-end"),
        pytest.param(
            "```\r\nx\r\n```\r\nprose", [("fence", "```\r\nx\r\n```\r\n")], id="crlf"
        ),
        pytest.param("``` a`b\nprose\n", [], id="backtick-in-info-string-is-no-fence"),
        pytest.param(
            "~~~ a`b\nx\n", [("fence", "~~~ a`b\nx\n")], id="tilde-info-may-hold-backticks"
        ),
        pytest.param("``\nprose\n", [], id="two-backticks-are-no-fence"),
        pytest.param("    x\n    y\n", [("indented", "    x\n    y\n")], id="indented-at-start"),
        pytest.param("p\n\n\tx\n", [("indented", "\tx\n")], id="tab-after-blank-line"),
        pytest.param("# Title\n    x\n", [("indented", "    x\n")], id="indented-after-heading"),
        pytest.param("p\n    x\n", [], id="indented-continuation-is-prose"),
        pytest.param("- item\n\n    x\n", [], id="indented-paragraph-of-a-list-item"),
        pytest.param(
            "- item\n\n      x\n", [("indented", "      x\n")], id="indented-code-in-a-list"
        ),
        pytest.param("- item\n\nx\n\n    y\n", [("indented", "    y\n")], id="the-list-ended"),
        pytest.param(
            "1. run:\n   ```sh\n   make\n   ```\n", [("fence", "```sh\n   make\n   ```\n")],
            id="fence-in-a-list-item",
        ),
        pytest.param(
            "- ```\n  x\n  ```\n", [("fence", "```\n  x\n  ```\n")], id="fence-opening-an-item"
        ),
        pytest.param(
            "- step\n  ```\nx\n", [("fence", "```\n")], id="a-fence-ends-with-its-list-item"
        ),
        pytest.param(
            "> ```\n> x\n> ```\n", [("fence", "```\n"), ("fence", "x\n"), ("fence", "```\n")],
            id="fence-in-a-quote",
        ),
        pytest.param("> ```\n> x\ny\n", [("fence", "```\n"), ("fence", "x\n")],
                     id="a-fence-ends-with-its-quote"),
        pytest.param("a `b` c", [("span", "`b`")], id="span"),
        pytest.param("a ``b ` c`` d", [("span", "``b ` c``")], id="span-with-a-shorter-run"),
        pytest.param("a ``b``` c", [], id="runs-of-other-lengths-close-nothing"),
        pytest.param("a `b\nc` d", [("span", "`b\nc`")], id="span-over-a-line-break"),
        pytest.param("a `b\n\nc` d", [], id="no-span-over-a-blank-line"),
        pytest.param("- a `b\n- c` d", [], id="no-span-over-list-items"),
        pytest.param("# a `b\nc` d", [], id="no-span-out-of-a-heading"),
        pytest.param("> a `b\n> c` d", [("span", "`b\n> c`")], id="span-over-quoted-lines"),
        pytest.param("a \\`b` c`", [("span", "` c`")], id="escaped-backtick"),
        pytest.param("a \\\\`b` c", [("span", "`b`")], id="escaped-backslash"),
        pytest.param("a <code>b</code> c", [("html-code", "<code>b</code>")], id="html-code"),
        pytest.param('<CODE class="x">b</Code >', [("html-code", '<CODE class="x">b</Code >')],
                     id="html-code-any-case"),
        pytest.param(
            "<pre>\nb\n\nc\n</pre>\n", [("html-pre", "<pre>\nb\n\nc\n</pre>")], id="html-pre"
        ),
        pytest.param("a <code>b\n\nc</code>", [], id="html-code-ends-with-its-paragraph"),
        pytest.param("use <code> tags", [], id="unclosed-html-code-is-prose"),
        pytest.param("a <codex>b</codex>", [], id="other-tags-are-prose"),
        pytest.param("`<code>`x</code>", [("span", "`<code>`")], id="span-before-tag"),
    ],
)
def test_what_is_code(text: str, expected: list[tuple[str, str]]) -> None:
    assert code(text) == expected


def test_masking_keeps_every_offset_and_line_break() -> None:
    text = "a `[[x]]` b\n```\n[[y]]\r\n```\nc <code>[[z]]</code>\n\n    [[w]]\n[[v]]"
    masked = mask_code(text)
    assert len(masked) == len(text)
    assert [i for i, ch in enumerate(masked) if ch in "\r\n"] == [
        i for i, ch in enumerate(text) if ch in "\r\n"
    ]
    assert [m.group("target") for m in WIKI_LINK.finditer(masked)] == ["v"]
    assert masked.index("[[v]]") == text.index("[[v]]")


def test_outside_code_rewrites_only_prose() -> None:
    text = "one `one`\n```\none\n```\none <code>one</code>\n\n    one\n"
    assert outside_code(text, lambda s: s.replace("one", "1")) == (
        "1 `one`\n```\none\n```\n1 <code>one</code>\n\n    one\n"
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("`x`", "x", id="span"),
        pytest.param("`` `x` ``", "`x`", id="one-space-each-side-dropped"),
        pytest.param("`a\nb`", "a b", id="line-break-becomes-a-space"),
        pytest.param("<code>x</code>", "x", id="html"),
    ],
)
def test_what_a_reader_sees_of_inline_code(text: str, shown: str) -> None:
    (found,) = code_ranges(text)
    assert code_content(text, found) == shown


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        pytest.param("[[user_cat]]", ("user_cat", None, None), id="id"),
        pytest.param("[[user_cat|the cat]]", ("user_cat", None, "the cat"), id="text"),
        pytest.param("[[user_cat#name]]", ("user_cat", "name", None), id="anchor"),
        pytest.param("[[user_cat#name|x]]", ("user_cat", "name", "x"), id="anchor-and-text"),
        pytest.param("[[project/api]]", ("project/api", None, None), id="path"),
    ],
)
def test_wiki_links(text: str, groups: tuple[str | None, ...]) -> None:
    match = WIKI_LINK.fullmatch(text)
    assert match is not None
    assert match.group("target", "anchor", "text") == groups


@pytest.mark.parametrize(
    ("text", "destination", "title"),
    [
        pytest.param("[a](x.md)", "x.md", None, id="plain"),
        pytest.param("[a](<my notes.md>)", "<my notes.md>", None, id="angle-brackets"),
        pytest.param('[a](x.md "The title")', "x.md", '"The title"', id="double-quoted-title"),
        pytest.param("[a](x.md 'The title')", "x.md", "'The title'", id="single-quoted-title"),
        pytest.param("[a](x.md (The title))", "x.md", "(The title)", id="parenthesised-title"),
        pytest.param("[a]( x.md )", "x.md", None, id="spaces-inside"),
        pytest.param("[a](x_(1).md)", "x_(1).md", None, id="balanced-parentheses"),
        pytest.param("![a](x.png)", "x.png", None, id="image"),
        pytest.param("[a](x.md#part)", "x.md#part", None, id="fragment"),
    ],
)
def test_markdown_links(text: str, destination: str, title: str | None) -> None:
    match = MARKDOWN_LINK.fullmatch(text)
    assert match is not None
    assert match.group("destination", "title") == (destination, title)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[a](x y)", id="space-without-brackets"),
        pytest.param("[a]x.md", id="no-parentheses"),
    ],
)
def test_what_is_no_markdown_link(text: str) -> None:
    assert MARKDOWN_LINK.search(text) is None


@pytest.mark.parametrize(
    ("destination", "file"),
    [
        pytest.param("x.md", "x.md", id="plain"),
        pytest.param("<my notes.md>", "my notes.md", id="angle-brackets"),
        pytest.param("my%20notes.md", "my notes.md", id="percent-encoded"),
        pytest.param("../x.md#part", "../x.md", id="fragment"),
        pytest.param("x.md?plain=1", "x.md", id="query"),
        pytest.param("cafe\u0301.md", "café.md", id="nfc"),
        pytest.param("https://example.com/x.md", None, id="web"),
        pytest.param("mailto:x.md", None, id="scheme"),
        pytest.param("/etc/x.md", None, id="absolute"),
        pytest.param("x.png", None, id="not-markdown"),
        pytest.param("", None, id="empty"),
    ],
)
def test_the_file_a_link_names(destination: str, file: str | None) -> None:
    assert linked_file(destination) == file
