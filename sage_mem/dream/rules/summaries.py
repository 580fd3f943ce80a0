"""A summary for every long body that has none: its first sentences, at most 150 characters.

The body is read as a person would skim it: code blocks (fenced, indented,
`<pre>`), headings, tables and HTML comments are skipped; list markers,
emphasis and link syntax are dropped (the link text stays), and inline code
stays inline code, in backticks (so `date -d tomorrow` is code in the summary too, where
the date rule leaves it) (what is code and what is a link is `sage_mem.memory.markdown`'s).
Sentences end at 。！？ (no space needed after them) and at . ! ? followed by a
space, except after an abbreviation ("e.g.", "Dr.") or inside a number. Whole
sentences are taken while they fit; a first sentence longer than the limit is
cut at a word (or, in Chinese, at a character) and ends with "…" — unless the cut
drops a turn ("but…", "unless…", 但是…), or the body elsewhere (a heading too) says
the opening no longer holds ("cancelled", "overturned", "rejected", 取消, 否决, 拒绝): then it
gets no summary, since one would say what the body takes back. A sentence that opens with
someone's words ('"Just use MongoDB," the contractor suggested') is what was said, not what
holds: it is never quoted. A sentence
that mostly repeats the description is skipped, as is one holding something that
looks like a credential (a summary shows in search results, and a write that adds a
credential is refused: a report would propose what a rewrite cannot do); a body whose prose adds
nothing to the description gets no summary: the summary is shown beside the
description, never instead of it.
"""

from __future__ import annotations

import re

from ...checks.credentials import has_secrets
from ...memory.markdown import (
    BLOCK_KINDS,
    MARKDOWN_LINK,
    WIKI_LINK,
    Code,
    code_content,
    code_ranges,
    without_html_comments,
)
from ..similarity import terms
from .context import RuleContext

NAME = "summaries"
BODY_MIN_CHARS = 200
SUMMARY_MAX_CHARS = 150
REPEATS_SHARE = 0.7
"""A sentence whose terms are this share or more in the description repeats it."""
MIN_NEW_TERMS = 2
"""A summary says something the description does not: at least this many terms of its own."""

_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
# Emphasis spans at most MAX_EMPHASIS characters: each mark with no closing one read on to
# the end of its line for one, and a line of `*a *a *a …` took quadratic time.
MAX_EMPHASIS = 500
_EMPHASIS = re.compile(
    rf"(\*\*|\*|~~)(?=\S)(.{{1,{MAX_EMPHASIS}}}?)(?<=\S)\1"
    # `_` emphasises only from outside a word: snake_case and [[project_api_v3]] stay whole
    rf"|(?<![^\W_])(__|_)(?=\S)(.{{1,{MAX_EMPHASIS}}}?)(?<=\S)\3(?![^\W_])"
)
_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use characters, dropped from the body first
_PLACEHOLDER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
)
_SENTENCE_END = re.compile(r"[。！？!?][”」』）)\"']*|\.(?=[”」』）)\"']*(?:\s|$))[”」』）)\"']*")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf mr mrs ms dr prof st jr sr no fig approx dept est inc ltd co".split()
)


def plain_paragraphs(body: str) -> list[str]:
    """The body's prose as plain text, one string per paragraph or list item."""
    paragraphs: list[str] = []
    current: list[str] = []
    text, shown = _readable(without_html_comments(body.replace(_OPEN, "").replace(_CLOSE, "")))

    def flush() -> None:
        if current:
            paragraphs.append(_join(current))
            current.clear()

    for raw in text.splitlines():
        if (
            not raw.strip()
            or _HEADING.match(raw)
            or _RULE.match(raw)
            or raw.lstrip().startswith("|")
        ):
            flush()
            continue
        line = _QUOTE.sub("", raw)
        if _LIST_MARK.match(line):
            flush()
            line = _LIST_MARK.sub("", line)
        current.append(_inline(line.strip(), shown))
    flush()
    return [p for p in paragraphs if p]


def _readable(text: str) -> tuple[str, list[str]]:
    """Code blocks as blank lines (they end a paragraph), each piece of inline code as a
    placeholder, and what those pieces show: link and emphasis syntax in code stays."""
    out: list[str] = []
    shown: list[str] = []
    last = 0
    for code in code_ranges(text):
        out.append(text[last : code.start])
        if code.kind in BLOCK_KINDS:
            out.append("\n" * max(text.count("\n", code.start, code.end), 1))
        else:
            out.append(f"{_OPEN}{len(shown)}{_CLOSE}")
            shown.append(_code_span(text, code))
        last = code.end
    out.append(text[last:])
    return "".join(out), shown


def _code_span(text: str, code: Code) -> str:
    """Inline code as the summary shows it: still code (`date -d tomorrow` stays in backticks,
    so the next run's date rule leaves it as code), on one line."""
    content = " ".join(code_content(text, code).split())
    if not content:
        return content
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", content)), default=0) + 1)
    pad = " " if content.startswith("`") or content.endswith("`") else ""
    return f"{ticks}{pad}{content}{pad}{ticks}"


def _inline(text: str, shown: list[str]) -> str:
    text = MARKDOWN_LINK.sub(lambda m: m.group("text"), text)
    text = WIKI_LINK.sub(lambda m: m.group("text") or m.group("target"), text)
    for _ in range(2):
        text = _EMPHASIS.sub(lambda m: m.group(2) if m.group(1) else m.group(4), text)
    text = _PLACEHOLDER.sub(lambda m: shown[int(m.group(1))], text)
    return " ".join(text.split())


def _join(lines: list[str]) -> str:
    out = lines[0]
    for line in lines[1:]:
        if not line:
            continue
        if out and _CJK.match(out[-1]) and _CJK.match(line[0]):
            out += line  # Chinese wraps without a space
        else:
            out += " " + line
    return out


def sentences(paragraph: str) -> list[str]:
    """Split a plain paragraph into sentences (Chinese and English punctuation)."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(paragraph):
        end = match.end()
        if match.group(0).startswith("."):
            word = re.search(r"([A-Za-z.]+)\.$", paragraph[start : match.start() + 1])
            token = word.group(1) if word else ""
            if token.lower().rstrip(".") in _ABBREVIATIONS or (len(token) == 1 and token.isupper()):
                continue  # "e.g.", "Dr.", an initial as in "J. Smith"
        piece = paragraph[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    rest = paragraph[start:].strip()
    if rest:
        out.append(rest)
    return out


def make_summary(
    body: str, limit: int = SUMMARY_MAX_CHARS, description: str = ""
) -> str | None:
    """The first sentences of `body` that fit in `limit` characters and add to `description`.

    A sentence that mostly repeats the description is skipped (the summary is shown
    beside it, so repeating it says nothing); None when no prose adds anything.
    """
    said = terms(description)
    parts = [
        s
        for p in plain_paragraphs(body)
        for s in sentences(p)
        if _adds(terms(s), said) and not has_secrets(s) and not _SPEECH.match(s)
    ]
    if not parts:
        return None
    summary = ""
    for sentence in parts:
        joined = _glue(summary, sentence)
        if len(joined) > limit:
            break
        summary = joined
    if not summary:
        summary = _cut(parts[0], limit)
        cut_at = len(summary) - 1
        if any(m.end() >= cut_at for m in _BUT.finditer(parts[0])):
            return None  # the cut drops a "but…", an "unless…", a 但是…: the half says the opposite
    if _TURNED.search(_prose(body)) and not _TURNED.search(summary):
        return None  # "## Status: cancelled", "…overturned the next day": no longer so
    return summary if len(terms(summary) - said) >= (MIN_NEW_TERMS if said else 1) else None


# Words that undo what a body's opening says, wherever they stand (a heading too): a summary
# of the opening alone would say what is no longer so.
_TURNED = re.compile(
    r"\b(?:cancel(?:l?ed|s)?|called\s+off|overturned|overruled|reverted|abandoned|scrapped"
    r"|postponed|on\s+hold|no\s+longer|superseded|obsolete|rejected|declined"
    r"|turned\s+(?:\w+\s+){0,2}down|vetoed|ruled\s+out|said\s+no|not\s+adopted"
    r"|did\s+not\s+(?:adopt|accept|agree)"
    r"|didn['’]t\s+(?:adopt|accept|agree))\b"
    r"|取消|作废|否决|推翻|撤销|撤回|放弃|搁置|暂停|延期|不再|废弃|拒绝|驳回|否掉|没采纳|未采纳"
    r"|不采纳|没有采纳|没同意|没有同意|不同意",
    re.IGNORECASE,
)
# A sentence that opens with someone's words ('"Just use MongoDB," the contractor suggested',
# “先上线再说”，他提议): what was said, not what holds; a summary never quotes it.
_QUOTED_OPENING = r"""\s*(?:"[^"]{1,300}"|“[^”]{1,300}”|「[^」]{1,300}」|『[^』]{1,300}』)"""
_SPEECH = re.compile(
    rf"""{_QUOTED_OPENING}\s*[,，.。!！?？]?\s*"""
    r"""[\w\s-]{0,40}?"""
    r"""\b(?:said|says|suggested|suggests|proposed|proposes|asked|argued|wanted|insisted"""
    r"""|recommended|pushed|offered)\b"""
    rf"""|{_QUOTED_OPENING}\s*[,，]?\s*\S{{0,12}}?(?:说|建议|提议|提出|认为|主张)""",
    re.IGNORECASE,
)
# Words that turn the rest of a sentence against its start.
_BUT = re.compile(
    r"\b(?:but|however|although|though|unless|except|instead|not|never)\b"
    r"|但|不过|然而|却|除非|否则",
    re.IGNORECASE,
)


def _prose(body: str) -> str:
    """`body` without its code: what a person wrote about the memory, headings too."""
    out, last = [], 0
    for code in code_ranges(body):
        out.append(body[last : code.start])
        last = code.end
    out.append(body[last:])
    return " ".join(out)


def _adds(sentence: frozenset[str], said: frozenset[str]) -> bool:
    if not sentence:
        return False
    return len(sentence & said) / len(sentence) < REPEATS_SHARE


def _glue(summary: str, sentence: str) -> str:
    if not summary:
        return sentence
    if _CJK.match(summary[-1]) and _CJK.match(sentence[0]):
        return summary + sentence
    return summary + " " + sentence


def _cut(sentence: str, limit: int) -> str:
    room = limit - 1
    head = sentence[:room]
    if not _CJK.search(head[-1:]) and len(sentence) > room and sentence[room : room + 1].strip():
        space = head.rfind(" ")
        if space > room // 2:
            head = head[:space]
    if head.count("`") % 2:
        head = head[: head.rfind("`")].rstrip("`")  # never cut inside code: it would read as prose
    return head.rstrip(" ,;:，；：、") + "…"


def run(ctx: RuleContext) -> None:
    for memory in ctx.live():
        if memory.summary or len(memory.body.strip()) <= BODY_MIN_CHARS:
            continue
        summary = make_summary(memory.body, description=memory.description)
        if not summary:
            continue
        ctx.applier.rewrite(
            memory,
            rule=NAME,
            summary=summary,
            reason=f"{len(memory.body.strip())}-character body had no summary; now “{summary}”",
        )
