"""Prompt injection: memory text that tries to give the agent orders.

Memories reach an agent's context as quoted data (see `agents/context.py`), but a memory
is text anyone could have written: a web page an agent summarised, a pasted
chat, a `git pull`. `find_injections(text)` finds, line by line, in English and
Chinese:

- `override`: "ignore (all) previous instructions", "disregard the system
  prompt", "disregard your guidelines" (the agent's own, not "the lint rules"),
  "忽略之前的指令", "无视以上所有规则";
- `role`: "you are now DAN", "from now on you will…", "pretend you are",
  "DAN mode", "act as an AI without restrictions", "你现在是…", "从现在开始你将…",
  "假装你是";
- `fake-system`: a system prompt or a chat template's markers in the text:
  `<system>`, `<|im_start|>system`, `[INST]`, `<<SYS>>`, "System prompt:",
  "SYSTEM: you…", "SYSTEM: new policy", "系统提示：", "系统：你…", a
  `Human:`/`Assistant:` turn;
- `concealment`: "do not tell the user", "不要告诉用户";
- `exfiltration`: sending secrets or the files holding them to an address ("send
  the API keys to https://…", "upload .env to …", "把密钥发送到 …", "把 ~/.ssh/id_rsa
  发到 …");
- `hidden-text`: characters a person reading the file cannot see but a model
  reads: bidi overrides (Trojan Source), Unicode tag characters, runs of
  zero-width characters.

It reports and never changes text: the audit lists each match so a person can
look, and the hooks mark a flagged memory as data not to be obeyed. It leans
towards precision: a feedback memory ("always run the tests first", "ignore the
lint rules in generated files") gives orders by design and is not flagged.

`visible(text)` and `visible_name(text)` are for where memory text is shown
to an agent: they name (`<U+202E>`) the characters that would let a memory's
text reach outside its quoting (a line separator, a C1 "next line") or read
otherwise than it is shown (bidi controls, Unicode tags, terminal escapes).
`unsafe_name_characters` lists what `visible_name` would name, plus a
backtick, for the audit to report in file names.

Of sage-mem it imports only `disk/folder` (its name check) and `memory/json_view`, both
on the hook's path already, and the excerpt size from `checks/__init__.py`, so the hooks
can use it on every prompt.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..disk.folder import hidden_in_name
from ..memory.json_view import camel_dict
from . import EXCERPT_CHARS, EXCERPT_LEAD

LABELS: dict[str, str] = {
    "override": "tells the agent to ignore its instructions",
    "role": "tries to give the agent a new role or mode",
    "fake-system": "imitates a system prompt or a chat-template marker",
    "concealment": "asks the agent to hide something from the user",
    "exfiltration": "asks for secrets to be sent somewhere",
    "hidden-text": "holds characters a person cannot see (bidi controls, Unicode tags, "
    "zero-width runs)",
}
"""Every `InjectionMatch.kind`, with words for messages."""


@dataclass(frozen=True)
class InjectionMatch:
    """One passage that reads like an order to the agent: kind, 1-based line and column, excerpt."""

    kind: str
    line: int
    column: int
    excerpt: str

    @property
    def label(self) -> str:
        return LABELS.get(self.kind, self.kind)

    def to_dict(self) -> dict[str, object]:
        return camel_dict(self)


class _Lazy:
    """A pattern compiled on first use: compiling all of them costs each hook process ~3 ms.

    `words`: what every match holds one of, as the pattern reads, lowercase; a
    line whose `_folded` form holds none of them is not searched (nor the
    pattern compiled for it).
    """

    __slots__ = ("_source", "_flags", "_compiled", "words")

    def __init__(self, source: str, flags: int = 0, words: tuple[str, ...] = ()) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None
        self.words = words

    def search(self, text: str) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled.search(text)


def _one_of(words: tuple[str, ...]) -> str:
    """A group matching any of `words`: a pattern's words written once, for it and its gate."""
    return "(?:" + "|".join(map(re.escape, words)) + ")"


_I = re.IGNORECASE

_EN_OVERRIDE_VERBS = ("ignore", "disregard", "forget", "override", "bypass", "overrule")
_EN_OVERRIDE = _Lazy(
    r"\b" + _one_of(_EN_OVERRIDE_VERBS) + r"\s+"
    r"(?:(?:all|any|each|every|of|the|these|those|my|your)\s+)*"
    r"(?:(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|"
    r"system|developer|safety|existing|current|other)\s+)+"
    r"(?:\w+\s+)?"
    r"(?:instructions?|directions?|rules|prompts?|guidelines|directives?|messages?|context|"
    r"programming|guardrails|constraints|orders|commands)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:above|before|said|you\s+were\s+told)"
    # the agent's own rules, named as its own: not "ignore the lint rules in generated files"
    r"|\b" + _one_of(_EN_OVERRIDE_VERBS) + r"\s+(?:all\s+(?:of\s+)?)?your\s+(?:own\s+)?"
    r"(?:(?:safety|content|ethical|system|core)\s+)?"
    r"(?:instructions|rules|guidelines|programming|guardrails|constraints|directives|"
    r"restrictions|system\s+prompt|training|policies|filters)\b",
    _I,
    words=_EN_OVERRIDE_VERBS,
)
_ZH_OVERRIDE_VERBS = ("忽略", "无视", "忽视", "忘记", "忘掉", "不要理会", "不用理会", "别管",
                      "不要遵守", "不再遵守", "跳过", "绕过", "覆盖")
_ZH_OVERRIDE = _Lazy(
    _one_of(_ZH_OVERRIDE_VERBS) + r"掉?"
    r"(?:你的?|我的?)?"
    r"(?:之前|以前|先前|此前|前面|上面|以上|上述|前述|原来|原有|原先|系统|开发者)"
    r"(?:的|给你的|给出的|收到的)?(?:所有|全部|一切|任何)?的?"
    r"(?:指令|指示|命令|规则|提示词?|说明|设定|要求|约束|限制|对话|内容)",
    words=_ZH_OVERRIDE_VERBS,
)
_EN_ROLE = _Lazy(
    r"\byou\s+are\s+now\s+(?:an?\s+|the\s+|my\s+|in\s+|no\s+longer\b|free\b|unrestricted\b|"
    r"jailbroken\b|DAN\b|called\b|named\b)"
    r"|\byou\s+are\s+no\s+longer\s+(?:an?\s+)?(?:assistant|AI|bound|restricted|Claude|ChatGPT)\b"
    r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|shall|should|respond|act)\b"
    r"|\bpretend\s+(?:to\s+be|that\s+you\s+are|you\s+are)\b"
    r"|\b(?:god|jailbreak|DAN)\s+mode\b"
    r"|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken)\b"
    r"|\bact\s+as\s+(?:an?\s+)?(?:AI|assistant|model|chatbot)\s+(?:without|with\s+no)\s+"
    r"(?:any\s+)?(?:restrictions|limits|limitations|rules|filters|guidelines)\b"
    r"(?!\s+(?:about|on|for|of|in)\b)"
    r"|\bnew\s+(?:system\s+)?instructions?\s*[:：]",
    _I,
    words=("you", "pretend", "mode", "instruction", "act"),
)
_ZH_ROLE = _Lazy(
    r"你现在(?:是|扮演|成为|变成|作为)"
    r"|从现在(?:开始|起)[，,]?\s*你(?:是|将|要|必须|应该|只能|需要)"
    r"|你不再是"
    r"|假装(?:你是|自己是|成为)"
    r"|(?:越狱|上帝)模式"
    r"|新的?(?:系统)?指令\s*[:：]",
    words=("你现在", "从现在", "你不再是", "假装", "模式", "指令"),
)
_FAKE_SYSTEM = _Lazy(
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|start_header_id|end_header_id|eot_id)\|>"
    r"|</?\s*(?:system|system[-_ ]?prompt|system[-_]reminder|developer|instructions)\s*>"
    r"|\[/?INST\]|<</?SYS>>"
    r"|^\s*(?:#+\s*|\[|<)?(?:system|developer)\s*(?:prompt|message|instructions?)\s*(?:\]|>)?\s*[:：]"
    r"|^\s*system\s*[:：]\s*(?:you|your|ignore|from\s+now|the\s+assistant|你|忽略"
    r"|new\s+(?:policy|policies|instructions?|rules|task|orders))"
    r"|^\s*(?:#+\s*)?系统\s*[:：]\s*(?:你|忽略|从现在|新的?(?:指令|规则|任务))"
    r"|^\s*(?:#+\s*)?系统(?:提示词?|消息|指令|设定)\s*[:：]",
    _I | re.MULTILINE,
    words=("<", "[", "system", "developer", "系统"),
)
# A fake turn is a capitalised speaker at the start of a line (case-sensitive on purpose).
_FAKE_TURN = _Lazy(r"^\s*(?:Human|Assistant)\s*:\s+\S", re.MULTILINE,
                   words=("human", "assistant"))
_CONCEALMENT = _Lazy(
    r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|reveal|show|let)\s+(?:this\s+|it\s+)?"
    r"(?:to\s+)?the\s+user\b"
    r"|\bwithout\s+(?:telling|informing|asking)\s+the\s+user\b"
    r"|\bkeep\s+(?:this|it)\s+(?:secret|hidden)\s+from\s+the\s+user\b",
    _I,
    words=("user",),
)
_ZH_CONCEALMENT = _Lazy(
    r"(?:不要|别|不许|不可以|不能)(?:告诉|通知|透露给|让)用户(?:知道)?"
    r"|瞒着用户|对用户保密|不让用户知道",
    words=("用户",),
)
_EXFILTRATION = _Lazy(
    r"\b(?:send|post|upload|forward|exfiltrate|email|transmit|copy)\b[^\n]{0,80}?"
    r"(?:\b(?:secrets?|credentials?|api[\s_-]?keys?|tokens?|passwords?|ssh\s+keys?|private\s+keys?|"
    r"cookies?|id_(?:rsa|ed25519|ecdsa))\b|\.env\b(?!\.(?:example|sample|template|dist)\b)"
    r"|\.ssh/|\.aws/|\.netrc\b)"
    r"[^\n]{0,80}?\b(?:to|at)\s+(?:https?://|[\w.+-]+@[\w-]+\.)",
    _I,
    words=("://", "@"),
)
_ZH_EXFILTRATION = _Lazy(
    r"(?:把|将)[^\n]{0,30}?(?:[密秘]钥|密码|令牌|凭证|私钥|token|Token|API\s*Key"
    r"|id_(?:rsa|ed25519|ecdsa)|\.ssh/|\.env\b(?!\.(?:example|sample|template|dist)\b)|\.aws/)"
    r"[^\n]{0,30}?"
    r"(?:发送|发|上传|转发|提交)(?:到|给|至)",
    words=("把", "将"),
)
_HIDDEN = re.compile(
    "[\u202a-\u202e\u2066-\u2069]"  # bidi embeddings, overrides and isolates
    "|[\U000e0000-\U000e007f]+"  # Unicode tag characters: invisible ASCII
    "|[\u200b\u200c\u200d\u2060\ufeff]{3,}"  # a run of zero-width characters
)

_PATTERNS: tuple[tuple[str, _Lazy], ...] = (
    ("override", _EN_OVERRIDE),
    ("override", _ZH_OVERRIDE),
    ("role", _EN_ROLE),
    ("role", _ZH_ROLE),
    ("fake-system", _FAKE_SYSTEM),
    ("fake-system", _FAKE_TURN),
    ("concealment", _CONCEALMENT),
    ("concealment", _ZH_CONCEALMENT),
    ("exfiltration", _EXFILTRATION),
    ("exfiltration", _ZH_EXFILTRATION),
)
# Each Chinese pattern needs a Chinese character, so a line all in ASCII skips them.
_ASCII_PATTERNS = tuple(
    (kind, pattern)
    for kind, pattern in _PATTERNS
    if pattern not in (_ZH_OVERRIDE, _ZH_ROLE, _ZH_CONCEALMENT, _ZH_EXFILTRATION)
)
# A cheap first look for an ASCII line: one search for the words of all its patterns at once
# (gathered from them, so that a word a pattern gains can never be missing here).
_MAYBE = re.compile(
    _one_of(tuple(sorted({word for _kind, pattern in _ASCII_PATTERNS for word in pattern.words}))),
    _I,
)
# Characters that may sit between the letters of a phrase to dodge a pattern.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def find_injections(text: str) -> list[InjectionMatch]:
    """Every passage of `text` that reads like an order to the agent, by line (split on LF)."""
    matches: list[InjectionMatch] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        for hidden in _HIDDEN.finditer(line):
            matches.append(InjectionMatch("hidden-text", number, hidden.start() + 1,
                                          _excerpt(line, hidden.start())))
            break
        # Full-width letters and invisible characters must not hide a phrase.
        plain = unicodedata.normalize("NFKC", line).translate(_INVISIBLE)
        ascii_line = plain.isascii()
        if ascii_line and not _MAYBE.search(plain):
            continue
        seen: set[str] = set()
        folded = _folded(plain)
        for kind, pattern in _ASCII_PATTERNS if ascii_line else _PATTERNS:
            if kind in seen:
                continue
            if pattern.words and not any(map(folded.__contains__, pattern.words)):
                continue
            found = pattern.search(plain)
            if found is not None:
                seen.add(kind)
                column = min(found.start(), len(line))
                matches.append(InjectionMatch(kind, number, column + 1, _excerpt(plain, column)))
    return matches


# The only characters outside ASCII that `re.IGNORECASE` takes for an ASCII letter
# (tests/test_injection.py finds them again): İ and ı for i, ſ for s, the Kelvin sign for k.
_ASCII_FOLDS = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}


def _folded(line: str) -> str:
    """`line` lowercased as case-insensitive matching sees it: it holds a lowercase word
    wherever `re.IGNORECASE` would match that word (for `_Lazy.words`)."""
    return (line.translate(_ASCII_FOLDS) if not line.isascii() else line).lower()


def has_injection(text: str) -> bool:
    """True when `text` holds anything `find_injections` would report."""
    return bool(find_injections(text))



def _excerpt(line: str, anchor: int) -> str:
    """At most EXCERPT_CHARS of the line around `anchor`; invisible characters are named."""
    start = max(0, anchor - EXCERPT_LEAD)
    piece = line[start : start + EXCERPT_CHARS]
    shown = re.sub(_INVISIBLE_RUN, _name_invisible, piece).strip()
    return ("…" if start else "") + shown + ("…" if start + EXCERPT_CHARS < len(line) else "")


# Compiled by `re.sub` (and kept in its cache) the first time an excerpt is made.
_INVISIBLE_RUN = (r"[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u202a-\u202e"
                  r"\u2060-\u206f\ufeff\U000e0000-\U000e007f]+")


def _name_invisible(run: re.Match[str]) -> str:
    text = run.group(0)
    if len(text) == 1:
        return f"<U+{ord(text):04X}>"
    return f"<{len(text)} invisible characters>"


# In quoted text: C0 and C1 controls but the tab and the newline (so a vertical
# tab, a form feed, U+001C-U+001E or U+0085, which some readers take for line
# breaks, cannot start an unquoted line), U+2028 and U+2029, bidi marks,
# embeddings, overrides and isolates, and Unicode tags. Zero-width characters stay:
# emoji and Indic or Persian text need the joiners, and a run of them is flagged.
_NAMED_IN_TEXT = (r"[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f"
                  r"\u2028-\u202e\u2066-\u2069\U000e0000-\U000e007f]+")


def visible(text: str) -> str:
    """`text` with each character that could move or hide text named: `<U+2028>`, `<U+202E>`.

    The only line break left is the newline, so a caller quoting each line of
    the result quotes every line a reader will see.
    """
    return re.sub(_NAMED_IN_TEXT, _name_invisible, text)


def visible_name(text: str) -> str:
    """A name (an id, a category) for one line of a frame: every control, separator and
    invisible format character named, each on its own (`<U+200B>`)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(f"<U+{ord(c):04X}>" if hidden_in_name(c) else c for c in text)


def unsafe_name_characters(name: str) -> list[str]:
    """The characters of a file name that can pass for other text where it is shown, in order:
    those `visible_name` names, and the backtick (it closes the code span an id is shown in,
    in any renderer that does not choose its fence as `agents/context.py` does)."""
    found: list[str] = []
    for char in name:
        if (char == "`" or hidden_in_name(char)) and char not in found:
            found.append(char)
    return found


__all__ = [
    "LABELS",
    "InjectionMatch",
    "find_injections",
    "has_injection",
    "unsafe_name_characters",
    "visible",
    "visible_name",
]
