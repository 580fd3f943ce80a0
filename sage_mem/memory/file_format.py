"""Reading and writing one memory file.

Owns the on-disk format: tolerant parsing (BOM, CRLF, a missing closing `---`,
YAML that is not a mapping, invalid YAML with its line and column, YAML dates as
ISO strings), and frontmatter edits that touch only the keys they mean to change
(key order, unknown keys, comments and the body's exact bytes survive).

PyYAML is used directly rather than through python-frontmatter: that library
strips the body and re-sorts keys on every dump, which would rewrite bytes the
user never asked us to touch. Writing files is `safe_io`'s.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InvalidMemory
from .coercion import iso_datetime
from .patterns import on_use
from .yaml_plain import NOT_COMMON, common_value, copied_resolvers
from .yaml_plain import Resolvers as _Resolvers

try:  # the builtin SHA-256: hashlib's import loads OpenSSL, some 2 ms of every hook process
    from _sha256 import sha256  # CPython 3.11
except ImportError:  # pragma: no cover - other versions and interpreters
    try:
        from _sha2 import sha256  # type: ignore[import-not-found, no-redef]  # CPython 3.12+
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment]

if TYPE_CHECKING:
    import yaml

DELETE = object()
"""Sentinel for `edit_frontmatter`: remove this key."""

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_FLOAT_TAG = "tag:yaml.org,2002:float"
# Python converts int <-> decimal text up to 4,300 digits by default; a YAML integer
# over 13,000 bits (~3,900 digits) is kept as its text (see `_int_or_text`).
_MAX_INT_BITS = 13_000
_STR_TAG = "tag:yaml.org,2002:str"
_LINE_BREAKS = "\n\r\x85\u2028\u2029"
# A frontmatter holds a few dozen values; YAML aliases let a few lines stand for
# billions ("billion laughs"). Shared, they cost nothing to load, but any code
# that walks or compares the values would run for ever: such a file is refused.
MAX_EXPANDED_VALUES = 100_000


class _Yaml(NamedTuple):
    loader: type[yaml.SafeLoader]
    dumper: type[yaml.SafeDumper]
    timestamp: re.Pattern[str]
    constructing: yaml.SafeLoader
    """A loader instance whose scalar constructors the fast path calls (they keep no state)."""


@functools.cache
def _yaml() -> _Yaml:
    """Our PyYAML loader and dumper, made on first use: importing yaml costs ~10 ms."""
    import yaml

    # Made with type(): Any, as the stubs cannot see the class methods on a dynamic class.
    loader: Any = type("_Loader", (getattr(yaml, "CSafeLoader", yaml.SafeLoader),), {})
    loader.add_constructor(_TIMESTAMP_TAG, _timestamp_as_iso)
    loader.add_constructor(_INT_TAG, _int_or_text)
    for tag in (_BOOL_TAG, _FLOAT_TAG):
        loader.add_constructor(tag, _or_text(yaml.SafeLoader.yaml_constructors[tag]))
    timestamp = next(
        regexp for regexp_list in yaml.SafeLoader.yaml_implicit_resolvers.values()
        for tag, regexp in regexp_list if tag == _TIMESTAMP_TAG
    )
    dumper: Any = type("_Dumper", (yaml.SafeDumper,), {})
    dumper.add_representer(str, _represent_str)
    dumper.add_representer(list, _represent_list)
    dumper.add_representer(tuple, _represent_list)
    dumper.add_representer(dict, _represent_dict)
    # ISO dates are written as plain scalars: our loader reads them back as the same text.
    dumper.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items()
    }
    return _Yaml(loader, dumper, timestamp, loader(""))


# What PyYAML's scalar constructors raise for a text their tag does not fit: an explicit
# tag is never checked against the text (`!!timestamp soon`, `!!bool maybe`, `!!int +`).
_UNFIT = (ValueError, OverflowError, AttributeError, KeyError, IndexError, TypeError)


def _or_text(construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`construct`, or the scalar's own text when its tag does not fit it (`!!float high`):
    kept as written, the value is then reported like any other of the wrong type."""

    def construct_or_text(loader: Any, node: Any) -> Any:
        try:
            return construct(loader, node)
        except _UNFIT:
            return str(node.value)

    return construct_or_text


def _timestamp_as_iso(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    import yaml

    try:
        value = yaml.SafeLoader.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    except _UNFIT:
        # `2026-13-45` has a date's shape but is none, `!!timestamp soon` not even that:
        # keep the text as written.
        return str(node.value)
    return _iso(value)


def _int_or_text(loader: yaml.SafeLoader, node: yaml.Node) -> int | str:
    """An integer, or the scalar's own text when Python cannot write the integer as text.

    Python refuses to convert between int and decimal text past 4,300 digits
    (a ValueError): `int()` of a longer decimal, and `str()` of a value that
    hex (`0xfff…`), octal or sexagesimal (`59:59:…`) YAML made that large.
    Such a value is kept as written, so that nothing reading the memory later
    meets an integer it cannot print.
    """
    import yaml

    try:
        value = yaml.SafeLoader.construct_yaml_int(loader, node)  # type: ignore[arg-type]
    except _UNFIT:
        return str(node.value)
    if value.bit_length() > _MAX_INT_BITS:
        return str(node.value)
    return value


def _timestamp_text(text: str) -> str:
    """The string our loader makes of `text` written as a plain timestamp scalar."""
    import yaml

    node = yaml.ScalarNode(_TIMESTAMP_TAG, text)
    try:
        return _iso(yaml.SafeLoader.construct_yaml_timestamp(yaml.SafeLoader(""), node))
    except ValueError:
        return ""


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return iso_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    scalars = all(isinstance(item, (str, int, float, bool)) or item is None for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=scalars)


def _represent_dict(dumper: yaml.SafeDumper, data: dict[Any, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    # Timestamps are written plain (our loader reads `2026-11-29T18:00:00Z` back as
    # the same text), but a string such as "2026-11-29 18:00:00" would come back
    # as "2026-11-29T18:00:00": quote exactly the strings that would not survive.
    if _yaml().timestamp.match(data) and _timestamp_text(data) != data:
        return dumper.represent_scalar(_STR_TAG, data, style="'")
    if any(ch in data for ch in _LINE_BREAKS):
        # Escaped in double quotes, the value stays on one line (PyYAML would
        # otherwise fold it over several, mangling YAML 1.1 breaks like U+0085).
        return dumper.represent_scalar(_STR_TAG, data, style='"')
    return dumper.represent_str(data)


_DELIMITER = on_use(r"^---[ \t]*\r?\n?$")
_CONFLICT_PROBLEM = "git conflict markers (<<<<<<< … >>>>>>>): resolve the conflict first"
_CONFLICT_OPEN = on_use(r"^<{7}(?: |$)")
_CONFLICT_CLOSE = on_use(r"^>{7}(?: |$)")
# A first line `---` ended by a lone CR: a frontmatter written with old-Mac line breaks.
_CR_DELIMITER = on_use(r"---[ \t]*\r(?!\n)")
# A closing line (`---` or `...`), searched for in the whole text.
_CLOSING_LINE = on_use(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
_TOP_KEY = on_use(
    r"""^(?:"[^"]*"|'[^']*'|[^\s#'"\-?:][^:]*?|-[^\s:][^:]*?)[ \t]*:(?:[ \t]|\r?\n|$)"""
)
_BLOCK_SCALAR = on_use(r"^[ \t]*(?:[!&]\S*[ \t]+)*[|>][-+1-9]*[ \t]*(?:#.*)?\r?\n?$")
_COMMENT_LINE = on_use(r"^[ \t]*#")
_LINE = on_use(r"[^\n]*\n|[^\n]+$")


class ParsedFile(NamedTuple):
    """A memory file split into its parts, exactly as read.

    `opening` and `closing` are the delimiter lines as written (`--- ` with a
    trailing space, `...`), kept so that a rewrite does not touch them.
    """

    meta: dict[str, Any]
    body: str
    frontmatter: str | None
    newline: str
    bom: bool
    problems: tuple[str, ...]
    rewritable: bool
    sha256: str
    opening: str = "---\n"
    closing: str = "---\n"


def sha256_bytes(data: bytes) -> str:
    return sha256(data).hexdigest()


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split at `\\n` only.

    `str.splitlines` also splits at form feeds, U+2028 and other characters a
    memory may legitimately contain, which would misplace key boundaries.
    """
    return _LINE.findall(text)


def memory_text(raw: bytes, path: Path | str, shown: str, advice: str = "") -> str:
    """A memory's bytes as text; else InvalidMemory `{shown}: not valid UTF-8 (byte N){advice}`."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(f"{shown}: not valid UTF-8 (byte {exc.start}){advice}",
                            path=path) from None


def parsed_or_none(raw: bytes, path: Path | str = "<memory>") -> ParsedFile | None:
    """`parse_bytes(raw, path)`, or None for bytes that do not parse: where a file that cannot
    be read is judged by other means (a conflict, a lock, a secret already there)."""
    try:
        return parse_bytes(raw, path)
    except InvalidMemory:
        return None


def parse_bytes(raw: bytes, path: Path | str = "<memory>") -> ParsedFile:
    """Parse a memory file's bytes. Raises InvalidMemory when it cannot be read at all."""
    digest = sha256_bytes(raw)
    if b"\x00" in raw:
        raise InvalidMemory(f"{path}: binary file (contains NUL bytes)", path=path)
    text = memory_text(raw, path, str(path))
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    problems: list[str] = []
    if bom:
        problems.append("starts with a UTF-8 byte order mark")
    if "\r\n" in text:
        problems.append("CRLF line endings")

    # The first line, then the first closing line after it, found in the text
    # itself rather than in a list of all its lines: the body is never split.
    first_end = text.find("\n") + 1 or len(text)
    opening = text[:first_end]
    if not opening or not _DELIMITER.match(opening):
        problems.append("no frontmatter")
        if _CR_DELIMITER.match(text):
            # A frontmatter behind old-Mac CR line breaks: an edit would add a second one
            # above it, and the fields the person wrote would be read as body from then on.
            problems.append("CR line breaks (no LF): cannot be rewritten safely; save it with "
                            "LF line endings")
            return ParsedFile({}, text, None, newline, bom, tuple(problems), False, digest)
        # Rewritable: a tool edit adds a frontmatter block above the untouched text.
        rewritable = conflict_marker_line(text) is None
        if not rewritable:
            problems.append(_CONFLICT_PROBLEM)
        return ParsedFile({}, text, None, newline, bom, tuple(problems), rewritable, digest)

    closing = _CLOSING_LINE.search(text, first_end)
    rewritable = True
    if closing is None:
        problems.append("frontmatter has no closing ---")
        rewritable = False
        lines = split_lines(text)
        end = next(
            (i for i in range(1, len(lines)) if not _may_be_frontmatter(lines[i])), len(lines)
        )
        fm_text, body, closing_line = "".join(lines[1:end]), "".join(lines[end:]), ""
    else:
        closing_end = text.find("\n", closing.start()) + 1 or len(text)
        fm_text, body = text[first_end : closing.start()], text[closing_end:]
        closing_line = text[closing.start() : closing_end]

    meta = _load_yaml(fm_text, path)
    _check_expansion(meta, path)
    if not isinstance(meta, dict):
        if meta is not None:
            problems.append(f"frontmatter is not a mapping (it is a {type(meta).__name__})")
            rewritable = False
        meta = {}
    meta = {str(key): value for key, value in meta.items()}
    if conflict_marker_line(text) is not None:
        problems.append(_CONFLICT_PROBLEM)
        rewritable = False
    return ParsedFile(
        meta, body, fm_text, newline, bom, tuple(problems), rewritable, digest,
        opening=opening, closing=closing_line,
    )


def conflict_marker_line(text: str) -> int | None:
    """The 1-based line where git conflict markers begin (`<<<<<<<`, then `=======` or
    `>>>>>>>`), or None. A file holding them is two versions a person has yet to choose
    between: read, reported by the audit, never rewritten by the tool."""
    if "<<<<<<<" not in text:
        return None
    opened: int | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if _CONFLICT_OPEN.match(line):
            opened = opened or number
        elif opened is not None and (line == "=======" or _CONFLICT_CLOSE.match(line)):
            return opened
    return None


def _may_be_frontmatter(line: str) -> bool:
    # Without a closing `---` the frontmatter ends where the text stops looking
    # like YAML keys: at a blank line, or at a markdown heading or paragraph.
    if not line.strip():
        return False
    return bool(_TOP_KEY.match(line)) or line[:1] in (" ", "\t") or line.startswith("- ")


def _load_yaml(fm_text: str, path: Path | str) -> Any:
    if not fm_text.strip():
        return None
    simple = _simple_mapping(fm_text)
    if simple is not None:
        return simple
    import yaml

    try:
        return yaml.load(fm_text, Loader=_yaml().loader)  # noqa: S506 - a safe loader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and mark is not None and mark.line >= fm_text.count("\n"):
            # Past the last line ("unexpected end of stream"): the place where the
            # unclosed quote or bracket opened is the one worth pointing at.
            mark = exc.context_mark
        line = mark.line + 2 if mark else None  # +1 for 1-based, +1 for the opening ---
        column = mark.column + 1 if mark else None
        where = f"line {line}, column {column}" if mark else "frontmatter"
        problem = exc.problem or exc.context or "invalid YAML"
        raise InvalidMemory(
            f"{path}:{line}:{column}: invalid YAML at {where}: {problem}",
            path=path, line=line, column=column,
        ) from None
    except yaml.YAMLError as exc:  # e.g. a ReaderError (a control character), on several lines
        problem = " ".join(str(exc).split())
        raise InvalidMemory(f"{path}: invalid YAML: {problem}", path=path) from None
    except RecursionError:
        raise InvalidMemory(f"{path}: frontmatter nested too deeply", path=path) from None


# Most frontmatter is a column of `key: value` lines with one-line values. Read
# by PyYAML, each costs a node, a resolver pass and a constructor call made in
# Python; `_simple_mapping` reads exactly that shape itself and hands anything
# else to PyYAML. It only splits lines into keys and scalar texts: which value
# a scalar stands for (`yes`, `0x1F`, `2026-11-29`, `~`) is still decided by
# PyYAML's resolvers (a copy of them while yaml is not imported: `yaml_plain`) and
# constructors (but for the commonest spellings of a null, a bool, a decimal
# number, made by the same rule, `yaml_plain.common_value`: a process that reads a few
# files imports no yaml). tests/test_parse_speed_equivalence.py and
# tests/test_listing_fast_path.py compare the two readings on tricky and on
# generated frontmatter.

# Printable characters but the tab, CR (CRLF is made LF first), the YAML 1.1
# line breaks U+0085, U+2028, U+2029, and a byte order mark: the C parser has
# rules for each, which the fast path does not copy.
# Compiled on first parse: its class costs ~2 ms, and a hook process that answers
# from the cache parses nothing.
@functools.cache
def _simple_text() -> re.Pattern[str]:
    return re.compile(
        "[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*"
    )


_SIMPLE_LINE = on_use(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: +|$)(.*)")
# Characters that cannot start a plain scalar, or start one only in some contexts.
_NOT_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@`")
_SINGLE_QUOTED = on_use(r"'((?:[^']|'')*)' *(?: #.*)?")
_DOUBLE_QUOTED = on_use(r'"([^"\\]*)" *(?: #.*)?')
_FLOW_SEQUENCE = on_use(r"\[([^\[\]{}#'\":]*)\] *(?: #.*)?")
# Tags whose constructors turn a plain scalar into a value without raising an
# error of their own design (the others are left to PyYAML to refuse).
_SIMPLE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp")
)
# The two timestamps the tool writes. `_timestamp_as_iso` gives back such a text
# unchanged: as the ISO form of the date or UTC time it names, or, when it names
# none (`2026-02-30`), as written.
_ISO_AS_WRITTEN = on_use(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)?")


class _NotSimple(Exception):
    """Raised inside the fast path for anything it leaves to PyYAML."""


# What repeats from file to file is resolved once (a folder's dates, categories and keys): a
# plain scalar's value by its text (_LEFT: one `_plain` leaves to PyYAML), a quoted or flow
# value's (the text after `key: `), and a key, as the one object every file's mapping holds
# (None: PyYAML reads it as no string). One object a key, whatever was read before: the index
# cache marshals a memory's frontmatter, and marshal flags an object held twice, so a key held
# by the first file only would make the file's bytes depend on what the process read first.
# The resolution depends on the text alone, and its values are immutable but a flow list,
# which each file gets a copy of. Each table emptied when full.
_LEFT = object()
_plains: dict[str, Any] = {}
_values: dict[str, Any] = {}
_keys: dict[str, str | None] = {}
_REMEMBERED = 4096


def _simple_mapping(fm_text: str) -> dict[str, Any] | None:
    """`fm_text` as PyYAML reads it, when it is only `key: value` lines; else None."""
    if "\r" in fm_text:
        fm_text = fm_text.replace("\r\n", "\n")
    if _simple_text().fullmatch(fm_text) is None:
        return None
    resolvers = _fast_resolvers()
    if resolvers is None:
        return None
    for table in (_plains, _values, _keys):  # each on its own: a folder's many different
        if len(table) > _REMEMBERED:  # tag lists empty no table of its dates or keys
            table.clear()
    mapping: dict[str, Any] = {}
    for line in fm_text.split("\n"):
        if not line.strip(" ") or line[0] == "#":  # blank, or a comment
            continue
        match = _SIMPLE_LINE.match(line)
        if match is None:
            return None
        key, text = match.groups()
        known = _keys.get(key, "")  # "": not met yet (a key is never empty)
        if known == "":
            known = _keys[key] = (
                key if key[0] not in resolvers or _resolve(resolvers, key) == _STR_TAG
                else None)  # `yes:`, `null:`
        if known is None:
            return None
        key = known
        first = text[:1]
        if first and first not in _NOT_PLAIN_START:
            # A plain scalar, the common case: up to a comment, without trailing spaces.
            cut = text.find(" #")
            scalar = (text if cut < 0 else text[:cut]).rstrip(" ")
            if ": " in scalar or scalar[-1] == ":":
                return None
            if first in resolvers:
                value = _plains.get(scalar, _LEFT) if len(scalar) <= 64 else _LEFT
                if value is _LEFT:
                    value = _remember(_plains, scalar, 64, _plain, resolvers)
                    if value is _LEFT:
                        return None
                mapping[key] = value
            else:
                mapping[key] = scalar
        else:
            value = _values.get(text, _LEFT) if len(text) <= 128 else _LEFT
            if value is _LEFT:
                value = _remember(_values, text, 128, _simple_value, resolvers)
                if value is _LEFT:
                    return None
            mapping[key] = list(value) if isinstance(value, list) else value
    return mapping or None


def _remember(table: dict[str, Any], text: str, longest: int,
              make: Callable[[str, _Resolvers], Any], resolvers: _Resolvers) -> Any:
    """`make(text, resolvers)`, or _LEFT where it leaves `text` to PyYAML; kept in `table` when
    `text` is at most `longest` characters (a long one rarely repeats)."""
    try:
        value = make(text, resolvers)
    except _NotSimple:
        value = _LEFT
    if len(text) <= longest:
        table[text] = value
    return value


def _simple_value(text: str, resolvers: _Resolvers) -> Any:
    """The value written as `text` after `key: `, other than a plain scalar; or _NotSimple."""
    first = text[:1]
    if not first or first == "#":  # `key:`, `key: # comment`
        return _plain("", resolvers)
    if first == "'":
        match = _SINGLE_QUOTED.fullmatch(text)
        if match is None:
            raise _NotSimple
        return match.group(1).replace("''", "'")
    if first == '"':
        match = _DOUBLE_QUOTED.fullmatch(text)
        if match is None:
            raise _NotSimple
        return match.group(1)
    if first == "[":
        match = _FLOW_SEQUENCE.fullmatch(text)
        if match is None:
            raise _NotSimple
        inside = match.group(1)
        if not inside.strip(" "):
            return []
        items = [item.strip(" ") for item in inside.split(",")]
        if any(not item or item[0] in _NOT_PLAIN_START for item in items):
            raise _NotSimple
        # Each item by itself as a plain scalar is (a folder's tags repeat, their lists less).
        values = [_plains.get(item, _LEFT) if len(item) <= 64 else _LEFT for item in items]
        for number, value in enumerate(values):
            if value is _LEFT:
                value = values[number] = _remember(_plains, items[number], 64, _plain, resolvers)
                if value is _LEFT:
                    raise _NotSimple
        return values
    raise _NotSimple


def _resolve(resolvers: _Resolvers, text: str) -> str:
    """The tag of a plain scalar, as `yaml.resolver.Resolver.resolve` decides it."""
    for tag, regexp in resolvers.get(text[:1], []) + resolvers.get(None, []):
        if regexp.match(text):
            return tag
    return _STR_TAG


def _plain(text: str, resolvers: _Resolvers) -> Any:
    """A plain scalar's value, made by the constructor PyYAML would call."""
    tag = _resolve(resolvers, text)
    if tag == _STR_TAG:
        return text
    if tag not in _SIMPLE_TAGS:
        raise _NotSimple
    if tag == _TIMESTAMP_TAG and _ISO_AS_WRITTEN.fullmatch(text):
        return text  # what our constructor, `_timestamp_as_iso`, gives back
    value = common_value(tag, text)
    if value is not NOT_COMMON:
        return value
    import yaml

    kit = _yaml()
    constructor = kit.loader.yaml_constructors[tag]
    try:
        value = constructor(kit.constructing, yaml.ScalarNode(tag, text))
    except Exception:  # noqa: BLE001 - PyYAML raises it again, as the caller expects
        raise _NotSimple from None
    if constructor is _int_or_text and isinstance(value, str):
        raise _NotSimple  # an integer kept as its text: rare, and PyYAML reads it so too
    return value


def _fast_resolvers() -> _Resolvers | None:
    """The implicit resolvers the fast path decides a plain scalar's tag by: our loader's
    once yaml is imported (whatever was added to them since), else the copy of PyYAML's,
    which they then are. None when the loader has some the fast path does not follow (by
    path, or for any first character)."""
    if "yaml" not in sys.modules:
        return copied_resolvers()
    loader = _yaml().loader
    resolvers: _Resolvers = loader.yaml_implicit_resolvers
    return None if loader.yaml_path_resolvers or None in resolvers else resolvers


def _check_expansion(value: Any, path: Path | str) -> None:
    """Raise InvalidMemory for frontmatter that expands past MAX_EXPANDED_VALUES or into itself."""
    if isinstance(value, dict):
        # Flat, as nearly all frontmatter is (scalars, lists of scalars): no walk needed.
        total = 1 + len(value)
        for child in value.values():
            if isinstance(child, list) and not any(isinstance(x, (list, dict)) for x in child):
                total += len(child)
            elif isinstance(child, (list, dict)):
                break
        else:
            if total <= MAX_EXPANDED_VALUES:
                return
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(item: Any) -> int:
        if not isinstance(item, (list, dict)):
            return 1
        key = id(item)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise InvalidMemory(
                f"{path}: frontmatter contains itself (a recursive YAML alias)", path=path
            )
        open_.add(key)
        total = 1
        for child in item.values() if isinstance(item, dict) else item:
            total += size(child)
            if total > MAX_EXPANDED_VALUES:
                raise InvalidMemory(
                    f"{path}: frontmatter expands to over {MAX_EXPANDED_VALUES:,} values "
                    "through YAML aliases (an alias bomb?)",
                    path=path,
                )
        open_.discard(key)
        sizes[key] = total
        return total

    try:
        size(value)
    except RecursionError:
        raise InvalidMemory(f"{path}: frontmatter nested too deeply", path=path) from None


def dump_value(key: str, value: Any) -> str:
    """One top-level `key: value` entry as YAML text, ending with a newline."""
    import yaml

    return yaml.dump(
        {key: value}, Dumper=_yaml().dumper, allow_unicode=True, sort_keys=False,
        width=1_000_000,
    )


def render_new(meta: Mapping[str, Any], body: str) -> str:
    """The text of a new memory file: frontmatter in the given key order, a blank line, the body."""
    fm = "".join(dump_value(key, value) for key, value in meta.items())
    if body and not body.endswith("\n"):
        body += "\n"
    return f"---\n{fm}---\n" + (f"\n{body}" if body else "")


def edit_frontmatter(
    parsed: ParsedFile,
    changes: Mapping[str, Any],
    body: str | None = None,
    *,
    path: Path | str | None = None,
) -> str:
    """The file's new text with `changes` applied (DELETE removes a key).

    Only the lines of changed keys are rewritten; every other byte (order,
    comments, unknown keys, the delimiters, the body) is kept. A file without
    frontmatter gets one above its unchanged text. When the frontmatter's
    layout is too unusual to edit line by line (a multi-line quoted value at
    column 0, an anchor used elsewhere), it is re-dumped whole in its own key
    order, but only when it has no comments to lose and the result reads back
    as intended; otherwise InvalidMemory is raised and nothing is written.
    """
    where = f"{path}: " if path is not None else ""
    if not parsed.rewritable:
        raise InvalidMemory(
            f"{where}file cannot be rewritten safely: fix it first "
            f"({'; '.join(parsed.problems) or 'unreadable frontmatter'})",
            path=path,
        )
    nl = parsed.newline
    bom = "\ufeff" if parsed.bom else ""
    new_body = parsed.body if body is None else body
    if parsed.frontmatter is None:
        added = [v for v in changes.values() if v is not DELETE]
        if not added:
            return bom + new_body
        fm_text = _dump_lines({k: v for k, v in changes.items() if v is not DELETE}, nl)
        return f"{bom}---{nl}{fm_text}---{nl}" + (nl + new_body if new_body else "")

    lines = split_lines(parsed.frontmatter)
    # Each changed key's lines replaced where they are, a new key's added at the end: the
    # spans are found once (once per change made a merge bringing 40,000 keys quadratic).
    spans = _key_spans(lines)
    replaced: dict[int, tuple[int, list[str]]] = {}
    appended: list[str] = []
    for key, value in changes.items():
        new = [] if value is DELETE else _with_newline(dump_value(key, value), nl)
        if key in spans:
            start, end = spans[key]
            replaced[start] = (end, new)
        else:
            appended.extend(new)
    edited: list[str] = []
    at = 0
    for start in sorted(replaced):
        end, new = replaced[start]
        edited.extend(lines[at:start])
        edited.extend(new)
        at = end
    edited.extend(lines[at:])
    if appended and edited and not edited[-1].endswith("\n"):
        edited[-1] += nl
    fm_text = "".join(edited + appended)
    expected = {k: v for k, v in parsed.meta.items() if k not in changes}
    expected.update({k: v for k, v in changes.items() if v is not DELETE})
    if not _reads_as(fm_text, expected):
        fm_text = _redumped(parsed, changes, expected, where, path)
    closing = parsed.closing
    if new_body and not closing.endswith("\n"):
        closing += nl
    return bom + parsed.opening + fm_text + closing + new_body


def _redumped(
    parsed: ParsedFile, changes: Mapping[str, Any], expected: dict[str, Any],
    where: str, path: Path | str | None,
) -> str:
    assert parsed.frontmatter is not None
    if any(_COMMENT_LINE.match(line) or " #" in line for line in split_lines(parsed.frontmatter)):
        raise InvalidMemory(
            f"{where}frontmatter is laid out in a way the tool cannot edit without losing "
            "its comments; edit the file by hand",
            path=path,
        )
    ordered = dict(parsed.meta)
    for key, value in changes.items():
        if value is DELETE:
            ordered.pop(key, None)
        else:
            ordered[key] = value
    fm_text = _dump_lines(ordered, parsed.newline)
    if not _reads_as(fm_text, expected):
        raise InvalidMemory(
            f"{where}frontmatter cannot be rewritten faithfully; edit it by hand", path=path
        )
    return fm_text


def _with_newline(text: str, nl: str) -> list[str]:
    return [line.rstrip("\n") + nl for line in split_lines(text)]


def _key_spans(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Top-level key -> (first line, line after its last value line) in the frontmatter.

    Blank and comment lines after a value belong to no key (a comment usually
    introduces the key below it) unless more of the same value follows them.
    Inside a block scalar (`key: |`) an indented `#` line is text, not a comment.
    """
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = last = 0
    block = False
    for i, line in enumerate(lines):
        if block and line[:1] in (" ", "\t") and line.strip():
            last = i + 1
            continue
        if not line.strip() or _COMMENT_LINE.match(line):
            continue
        match = _TOP_KEY.match(line)
        if match:
            if current is not None:
                spans[current] = (start, last)
            current, start, last = _key_name(line), i, i + 1
            block = bool(_BLOCK_SCALAR.match(line[match.end() - 1 :].lstrip(":")))
        elif current is not None:
            # Indented lines, list items at column 0 and the rest of a multi-line
            # flow or quoted value all continue the current key.
            last = i + 1
    if current is not None:
        spans[current] = (start, last)
    return spans


def _key_name(line: str) -> str:
    if line[:1] in "\"'":
        return line[1 : line.index(line[0], 1)]
    return line.split(":", 1)[0].strip()


def _dump_lines(items: Mapping[str, Any], nl: str) -> str:
    return "".join(line for k, v in items.items() for line in _with_newline(dump_value(k, v), nl))


def _reads_as(fm_text: str, expected: Mapping[str, Any]) -> bool:
    import yaml

    try:
        data = yaml.load(fm_text, Loader=_yaml().loader)  # noqa: S506
    except (yaml.YAMLError, RecursionError):
        return False
    if data is None:
        data = {}
    return isinstance(data, dict) and {str(k): v for k, v in data.items()} == expected
