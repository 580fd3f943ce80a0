"""Several folders at once: the config, which folders, and `Folders` (see `__init__`)."""

from __future__ import annotations

import builtins
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..disk.home import default_folder, expand_home
from ..errors import FolderError, InvalidMemory
from ..search.index import unique_idf
from .config_path import config_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..memory.value import Memory
    from ..search.index import Hit
    from ..store import MemoryStore

PERSONAL_NAME = "personal"
CONFIG_LIMIT = 1 << 20
"""A config file over this many bytes is refused (a mistake: it holds a few lines)."""
_NAME = re.compile(r"[^\W][\w-]{0,39}")
_READ: Any = object()


@dataclass(frozen=True)
class FolderSpec:
    """One folder to read: its short name, where it is, whether sage-mem may write to it."""

    name: str
    path: Path
    read_only: bool = False
    personal: bool = False


@dataclass(frozen=True)
class Config:
    """What the config file says: the personal folder (its path may be unsaid) and the shared."""

    file: Path
    personal_name: str
    personal_path: Path | None
    shared: tuple[FolderSpec, ...]


# the config file


def read_config(file: Path | None = None) -> Config | None:
    """The config, or None when there is no file; FolderError (one line) when it is wrong."""
    file = config_file() if file is None else file
    if file is None or not os.path.lexists(file):  # a stat: no config, nothing opened
        return None
    from ..disk.safe_io import read_file

    try:  # never waits on a FIFO, never reads /dev/zero for ever
        data = read_file(file, limit=CONFIG_LIMIT).raw or b""
    except FileNotFoundError:
        return None
    except InvalidMemory as exc:
        raise FolderError(f"cannot read the config: {exc}") from None
    except OSError as exc:
        raise FolderError(f"{file}: cannot read the config: {exc.strerror or exc}") from None
    import tomllib

    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FolderError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise FolderError(f"{file}: {_first_line(str(exc))}") from None
    except RecursionError:  # arrays or tables nested past Python's recursion limit
        raise FolderError(f"{file}: not TOML sage-mem can read (nested too deeply)") from None
    return _config(file, table)


def _config(file: Path, table: dict[str, Any]) -> Config:
    def fail(key: str, what: str) -> FolderError:
        return FolderError(f"{file}: {key}: {what}")

    for key in table:
        if key not in ("personal", "shared"):
            raise fail(key, "unknown key (the config has [personal] and [shared.NAME] tables)")
    personal = table.get("personal", {})
    if not isinstance(personal, dict):
        raise fail("personal", "must be a table ([personal])")
    for key in personal:
        if key not in ("name", "path"):
            hint = " (the personal folder is always writable)" if key == "read-only" else ""
            raise fail(f"personal.{key}", f"unknown key (expected name, path){hint}")
    name = personal.get("name", PERSONAL_NAME)
    _check_name(name, "personal.name", fail)
    path = _path(file, personal["path"], "personal.path", fail) if "path" in personal else None
    shared_table = table.get("shared", {})
    if not isinstance(shared_table, dict):
        raise fail("shared", "must be tables of folders ([shared.NAME] with a path)")
    shared: list[FolderSpec] = []
    names = {name}
    for folder_name, entry in shared_table.items():
        key = f"shared.{folder_name}"
        _check_name(folder_name, key, fail)
        if folder_name in names:
            raise fail(key, f"the name {folder_name!r} is taken (names must differ)")
        names.add(folder_name)
        if not isinstance(entry, dict):
            raise fail(key, "must be a table with a path")
        for item in entry:
            if item not in ("path", "read-only"):
                raise fail(f"{key}.{item}", "unknown key (expected path, read-only)")
        if "path" not in entry:
            raise fail(f"{key}.path", "missing: where the folder is")
        read_only = entry.get("read-only", False)
        if not isinstance(read_only, bool):
            raise fail(f"{key}.read-only", f"must be true or false, not {read_only!r}")
        shared.append(FolderSpec(folder_name, _path(file, entry["path"], f"{key}.path", fail),
                                 read_only=read_only))
    return Config(file, name, path, tuple(shared))


def _check_name(name: Any, key: str, fail: Any) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise fail(key, f"{name!r} is not a folder name (letters, digits, _ and -, "
                        f"at most 40, not starting with - or _)")


def _path(file: Path, value: Any, key: str, fail: Any) -> Path:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise fail(key, f"must be a folder's path, not {value!r}")
    try:
        path = expand_home(value)
    except FolderError as exc:
        raise fail(key, str(exc)) from None
    return Path(os.path.abspath(path if path.is_absolute() else file.parent / path))


def _first_line(text: str) -> str:
    return " ".join(text.split())


# which folders


def folders_for(dirs: Sequence[str | Path] = (), *, config: Any = _READ) -> list[FolderSpec]:
    """The folders to open for `--dir` values `dirs` (the module docstring says how); the
    config read from its file unless given (None: no config)."""
    if config is _READ:
        config = read_config()
    personal = _absolute(dirs[0] if dirs else default_folder())
    chosen = [FolderSpec(PERSONAL_NAME, personal, personal=True)]
    if config is not None:
        # The config's personal folder: the one it names, else the default (looked up only
        # then: a `--dir` needs no home folder).
        mine = config.personal_path or (_absolute(default_folder()) if dirs else personal)
        if _same(mine, personal):
            chosen = [FolderSpec(config.personal_name, personal, personal=True)]
            chosen += [spec for spec in config.shared if not _same(spec.path, personal)]
    known = {_real(spec.path): spec for spec in (config.shared if config is not None else ())}
    for value in dirs[1:]:
        path = _absolute(value)
        if any(_same(path, spec.path) for spec in chosen):
            continue
        spec = known.get(_real(path))
        if spec is None:
            spec = FolderSpec(_unique(path.name, {s.name for s in chosen}), path)
        elif spec.name in {s.name for s in chosen}:
            spec = replace(spec, name=_unique(spec.name, {s.name for s in chosen}))
        chosen.append(spec)
    return chosen


def _prefixed(log: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: log(f"{name}: {line}")


def shared_state(path: Path) -> Path | None:
    """The state folder to open a shared folder with: its own, never the personal folder's
    `SAGE_MEM_STATE_DIR` (None: the store finds its own, as always)."""
    if not os.environ.get("SAGE_MEM_STATE_DIR"):
        return None
    from ..disk.folder import default_state_dir

    return default_state_dir(path)


def read_only_spec(root: str | Path) -> FolderSpec | None:
    """The config's read-only shared folder at `root`, if it is one (a bad config: FolderError,
    so that nothing is changed in a folder whose flag cannot be read)."""
    config = read_config()
    if config is None:
        return None
    return next(
        (spec for spec in config.shared if spec.read_only and _same(spec.path, Path(root))), None
    )


def _absolute(value: str | Path) -> Path:
    return Path(os.path.abspath(expand_home(value)))


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _same(a: Path, b: Path) -> bool:
    return _real(a) == _real(b)


def _unique(name: str, taken: set[str]) -> str:
    name = name if _NAME.fullmatch(name) else "folder"
    if name not in taken:
        return name
    number = 2
    while f"{name}-{number}" in taken:
        number += 1
    return f"{name}-{number}"


# the stores


class Folders:
    """One `MemoryStore` per folder, read as one: merged search, qualified ids, checked writes.

    >>> with Folders.open(["~/.sage-mem/memory", "~/team-memory"]) as folders:
    ...     for hit in folders.search("how do we deploy"):
    ...         print(hit.folder, hit.id, hit.description)
    """

    def __init__(self, specs: Sequence[FolderSpec], *, watch: bool = False, poll: bool = False,
                 build: bool = True, state_dir: Path | str | None = None,
                 store: MemoryStore | None = None) -> None:
        """Open every folder in `specs` (the first is the personal one, which must open; a
        shared one that cannot is in `missing`). `store`: the personal folder, already open."""
        from ..store import MemoryStore

        if not specs:
            raise FolderError("no memory folder to open")
        self.specs = list(specs)
        self.personal_name = self.specs[0].name
        self.stores: dict[str, MemoryStore] = {}
        self.missing: list[tuple[FolderSpec, str]] = []
        self.stores[self.personal_name] = store if store is not None else MemoryStore(
            self.specs[0].path, watch=watch, poll=poll, build=build, state_dir=state_dir)
        for spec in self.specs[1:]:
            if not spec.path.is_dir():
                self.missing.append((spec, f"{spec.path}: no such folder"))
                continue
            try:
                self.stores[spec.name] = MemoryStore(spec.path, watch=watch, poll=poll,
                                                     build=build, state_dir=shared_state(spec.path))
                self.stores[spec.name].id_prefix = f"{spec.name}:"
            except (FolderError, OSError) as exc:
                self.missing.append((spec, str(exc)))

    @classmethod
    def open(cls, dirs: Sequence[str | Path] = (), **options: Any) -> Folders:
        """The folders `--dir` values `dirs` and the config name (see `folders_for`)."""
        return cls(folders_for(dirs), **options)

    def __enter__(self) -> Folders:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for store in self.stores.values():
            store.close()

    def keep_vectors(self, log: Callable[[str], None], *, embedder: Any = None) -> list[str]:
        """With the semantic extra, keep every folder's vectors current in the background.

        For a long-lived process (`serve`, `ui`): each store's `keep_vectors`,
        its lines in `log` prefixed by the folder's name; the shared folders
        share one model (loaded once, when the first vector is to be made),
        the personal folder keeps its own (started by the process already).
        A read-only folder's vectors are state, beside its index cache, not
        memories. Returns the names of the folders kept current (none
        without the extra).
        """
        from ..search import embedder as embedders

        shared = embedder if embedder is not None else embedders.load()
        kept = []
        for name, store in self.stores.items():
            chosen = embedder if name == self.personal_name else shared
            if chosen is None and name != self.personal_name:
                continue
            if store.keep_vectors(_prefixed(log, name), embedder=chosen):
                kept.append(name)
        return kept

    @property
    def personal(self) -> MemoryStore:
        return self.stores[self.personal_name]

    @property
    def several(self) -> bool:
        """More than one folder configured (the merged answers name folders only then)."""
        return len(self.specs) > 1

    def spec(self, name: str) -> FolderSpec:
        for spec in self.specs:
            if spec.name == name:
                return spec
        names = ", ".join(repr(spec.name) for spec in self.specs)
        raise FolderError(f"no folder named {name!r} (the folders are {names})")

    def missing_notes(self) -> list[str]:
        return [f"folder {spec.name!r} left out: {why}" for spec, why in self.missing]

    # ids

    def qualify(self, name: str, memory_id: str) -> str:
        return memory_id if name == self.personal_name else f"{name}:{memory_id}"

    def split(self, memory_id: str) -> tuple[str, str]:
        """(folder name, id in that folder) of a possibly qualified id; bare: the personal one."""
        spec, plain = split_id(self.specs, memory_id)
        return spec.name, plain

    def store(self, name: str) -> MemoryStore:
        """The open store of the folder `name` (FolderError when it is unknown or left out)."""
        store = self.stores.get(name)
        if store is not None:
            return store
        spec = self.spec(name)
        why = next((why for gone, why in self.missing if gone is spec), "")
        raise FolderError(f"folder {name!r} is not available: {why}")

    def writable(self, name: str | None = None) -> MemoryStore:
        """The store writes go to: the personal folder, or `name`; refused when read-only."""
        name = name or self.personal_name
        check_writable(self.specs, self.spec(name))
        return self.store(name)

    def for_write(self, memory_id: str, folder: str | None = None) -> tuple[MemoryStore, str]:
        """The store and plain id a write of `memory_id` goes to (`folder` or its `NAME:`)."""
        name, plain = self.split(memory_id)
        if folder and name != self.personal_name and folder != name:
            raise FolderError(f"{memory_id!r} is in folder {name!r}, not {folder!r}")
        return self.writable(folder or name), plain

    # reading

    def search(self, query: str, *, limit: int = 10, offset: int = 0,
               folder: str | None = None, **filters: Any) -> list[Hit]:
        """Hits of every folder (or of `folder`) in one ranking, each naming its folder."""
        stores = [(folder, self.store(folder))] if folder else list(self.stores.items())
        ranked = [
            (name, store.search(query, limit=limit + offset, **filters)) for name, store in stores
        ]
        return merge(self, ranked)[offset:offset + limit]

    def read(self, memory_id: str) -> Memory:
        """One memory in full, from disk; its id qualified by its folder where needed."""
        name, plain = self.split(memory_id)
        memory = self.store(name).read(plain)
        return self.labelled(name, memory)

    def list(self, **filters: Any) -> builtins.list[Memory]:
        """Every folder's memories passing the filters: the personal folder's, then each shared
        one's in order, each by id; ids qualified."""
        out: list[Memory] = []
        for name, store in self.stores.items():
            out.extend(self.labelled(name, memory) for memory in store.list(**filters))
        return out

    def baselines(self, *, project: str | None = None,
                  limit: int = 8) -> builtins.list[Memory]:
        """Baselines of every folder by priority (higher first), then folder order, then id."""
        order = {name: number for number, name in enumerate(self.stores)}
        chosen = [
            (name, memory) for name, store in self.stores.items()
            for memory in store.baselines(project=project, limit=limit)
        ]
        chosen.sort(key=lambda pair: (-pair[1].baseline_priority, order[pair[0]], pair[1].id))
        return [self.labelled(name, memory) for name, memory in chosen[:limit]]

    def get(self, memory_id: str) -> Memory | None:
        """A memory from its folder's index (no disk read), labelled; None when there is none."""
        name, plain = self.split(memory_id)
        store = self.stores.get(name)
        memory = store.index.get(plain) if store is not None else None
        return self.labelled(name, memory) if memory is not None else None

    def labelled(self, name: str, memory: Memory) -> Memory:
        """`memory` as the other folders' readers see it: its id qualified (its path its own)."""
        qualified = self.qualify(name, memory.id)
        return memory if qualified == memory.id else replace(memory, id=qualified)

    def items(self) -> Iterator[tuple[FolderSpec, MemoryStore]]:
        for spec in self.specs:
            store = self.stores.get(spec.name)
            if store is not None:
                yield spec, store


def split_id(specs: Sequence[FolderSpec], memory_id: str) -> tuple[FolderSpec, str]:
    """The folder of a possibly qualified id (`team:x`) and the id in it; bare: the personal."""
    head, colon, rest = memory_id.partition(":")
    if colon and rest:
        for spec in specs[1:]:
            if spec.name == head:
                return spec, rest
    return specs[0], memory_id


def check_writable(specs: Sequence[FolderSpec], spec: FolderSpec) -> None:
    """Refuse (one line) a write to a read-only folder."""
    if spec.read_only:
        raise FolderError(f"folder {spec.name!r} ({spec.path}) is read-only: nothing is written "
                          f"to it (writes go to {specs[0].name!r} unless a folder is named)",
                          path=spec.path)


def merge(folders: Folders, ranked: Iterable[tuple[str, list[Hit]]]) -> list[Hit]:
    """Each folder's hits in one ranking, each score divided by its folder's `unique_idf`
    (see the package docstring); each folder's own order is kept."""
    order = {spec.name: number for number, spec in enumerate(folders.specs)}
    scored: list[tuple[float, int, int, Hit]] = []
    for name, hits in ranked:
        scale = unique_idf(len(folders.stores[name].index))
        for rank, hit in enumerate(hits):
            labelled = replace(hit, id=folders.qualify(name, hit.id), folder=name,
                               score=round(hit.score / scale, 4))
            scored.append((labelled.score, order[name], rank, labelled))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [item[3] for item in scored]
