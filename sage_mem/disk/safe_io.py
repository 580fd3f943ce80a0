"""Checked reads, and writes that never replace bytes they have not read.

Every file-system step that could lose or leak what a person wrote lives here:

- `read_file`: the one checked read of a file in the memory folder: a regular
  file (never a FIFO or a device), opened without blocking, capped in size.
  It returns a `Seen`: the bytes and the identity of the file they came from.
- `commit`: put new bytes in place of what a `Seen` saw, or refuse with
  `FileChanged`. An editor, `git pull` or another agent may save the same file
  at any moment, so the file is checked again right before the rename, and,
  where the kernel can swap two names atomically (`renameat2` with
  `RENAME_EXCHANGE`, `renamex_np` with `RENAME_SWAP`), checked once more after
  the swap, and swapped back when it had changed. A new file is created only
  where no file is (`RENAME_NOREPLACE`, or a hard link).
- `rewrite`: read, transform, commit, and redo from a fresh read when the
  file changed meanwhile.
- `move`: a rename that never replaces a file, to the next free name.
- `remove`: delete a file only if it still holds the bytes read (a person's
  `sage-mem delete`, never the tool on its own).
- `atomic_write`: the tool's own files (state folder, reports): temp file,
  fsync, rename, folder fsync.
- `leftover_temps`: the temp files of writes whose process was killed before
  its rename (copies of bytes never acknowledged), for the next sync to clear.
- The permission policy: a memory folder is private by default (new files
  0600, new folders 0700, whatever the umask); a folder its owner made
  group-writable or setgid is shared with that group (0660, 0770), never with
  everyone (`file_mode`, `dir_mode`). A file that exists keeps its mode. The
  state folder, snapshots and exports are always private.

A writer that has the file open is the last case: an editor that truncated
the file and has yet to write, or one that keeps it open and writes in place.
Our read may see its half-done file, and its write lands in whichever inode it
opened. On Linux, a read lease (`F_SETLEASE`), which the kernel refuses while
any process holds the file open for writing, tells: the file is not replaced
while a writer holds it, and the swapped-out file is given back when one held
it across the swap (`CAN_TELL_WRITERS`). Where leases cannot be taken (another
platform, a file owned by someone else) that case stays open, as
docs/reliability.md says.

May import only `errors` from sage-mem (and `disk/processes`, inside
`leftover_temps`): the hook path imports this module.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import re
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, cast

from ..errors import FileChanged, InvalidMemory

# A transform asked to redo this many times has lost to another writer each time.
REWRITE_ATTEMPTS = 20
# Waits between attempts grow from 1 ms to this, so that a writer that holds the
# file for a moment is waited out, not raced.
_REWRITE_PAUSE_MAX = 0.05
_F_SETLEASE = getattr(fcntl, "F_SETLEASE", None)
_F_SETSIG = getattr(fcntl, "F_SETSIG", None)
_F_GETLEASE = getattr(fcntl, "F_GETLEASE", None)
# Whether this platform can tell that another program holds a file open for writing.
CAN_TELL_WRITERS = _F_SETLEASE is not None and _F_SETSIG is not None
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_MAC_RENAME_SWAP = 0x2
_MAC_RENAME_EXCL = 0x4


class Seen(NamedTuple):
    """What a read found at a path: its bytes (None: no file) and that file's identity."""

    raw: bytes | None
    identity: tuple[int, int, int, int, int] | None = None
    mode: int | None = None

    @classmethod
    def absent(cls) -> Seen:
        return cls(None)


def identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """Device, inode, size, mtime and ctime: any write or rename changes one of them."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# reading


def read_file(path: Path, *, limit: int, what: str = "") -> Seen:
    """The bytes of the regular file at `path`, never blocking and never past `limit` bytes.

    Raises FileNotFoundError when there is no file, InvalidMemory when it is
    not one that can be read (no permission, a folder, a FIFO or device, too big).
    Containment in the memory folder is the caller's check (`folder.read_memory`).
    """
    too_big = f"over the {limit // 1024} KB limit{what}"
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except PermissionError:
        raise InvalidMemory(f"{path}: no permission to read", path=path) from None
    except IsADirectoryError:
        raise InvalidMemory(f"{path}: is a folder", path=path) from None
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError as exc:  # a symlink loop, a name too long, an I/O error
        raise InvalidMemory(f"{path}: cannot read: {exc.strerror or exc}", path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidMemory(f"{path}: not a regular file", path=path)
        if st.st_size > limit:
            raise InvalidMemory(f"{path}: {st.st_size} bytes, {too_big}", path=path)
        raw = _read_fd(fd, limit + 1)
        after = os.fstat(fd)
    except OSError as exc:
        raise InvalidMemory(f"{path}: cannot read: {exc.strerror or exc}", path=path) from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise InvalidMemory(f"{path}: grew past the limit while read, {too_big}", path=path)
    return Seen(raw, identity(after), stat.S_IMODE(after.st_mode))


def read_or_absent(path: Path, *, limit: int, what: str = "") -> Seen:
    """`read_file`, with a missing file read as `Seen.absent()`."""
    try:
        return read_file(path, limit=limit, what=what)
    except (FileNotFoundError, NotADirectoryError):
        return Seen.absent()


def _read_fd(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# writing over what was read


def commit(path: Path, data: bytes, seen: Seen, *, mode: int, limit: int) -> None:
    """Put `data` at `path` if the file there is still what `seen` saw; else raise FileChanged.

    `seen.raw is None` means no file was there: `data` is then created only if
    none appeared. An existing file keeps its mode; `mode` is for a new one.
    Nothing is changed when FileChanged is raised.
    """
    if seen.raw is None:
        create(path, data, mode=mode)
        return
    tmp, ours = _temp_file(path, data, seen.mode if seen.mode is not None else mode)
    kept = True  # False: `tmp` names someone's save that could not be kept elsewhere
    try:
        # Same identity, or the same bytes under a new one (a `touch`): unchanged so far.
        if not _same_identity(path, seen) and _bytes_at(path, limit) != seen.raw:
            raise FileChanged(f"{path.name}: changed on disk since it was read", path=path)
        if _held_for_writing(path):
            raise FileChanged(
                f"{path.name}: another program has it open for writing", path=path
            )
        if _swap(tmp, path):
            # `tmp` now names the file that was at `path`: it goes only if it is still what
            # we read and no one holds it open, or is opening it, to write into it later. A
            # save in the instant between the check and the swap is put back.
            if not _unlink_if_unchanged(tmp, seen.raw, limit):
                kept = _put_back(path, tmp, ours, data, limit)
                raise FileChanged(f"{path.name}: changed on disk while it was written", path=path)
        else:
            # No atomic swap here: compare the bytes themselves (an identity can hide an
            # edit within the clock's tick), just before the rename, as close as this
            # platform allows.
            if _bytes_at(path, limit) != seen.raw:
                raise FileChanged(f"{path.name}: changed on disk since it was read", path=path)
            os.replace(tmp, path)
    finally:
        if kept:
            _remove_quietly(tmp)
    fsync_dir(path.parent)


def _put_back(path: Path, swapped_out: Path, ours: int, data: bytes, limit: int) -> bool:
    """Give `path` back the file our swap took from it, which someone saved into meanwhile.

    Two saves may cross ours in that instant (a machine starved of CPU widens
    it): one into the file we swapped out, one into ours while it stood at
    `path`, or a file renamed over ours. Whatever stands at `path` then is the
    newest save and stays; the file we swapped out, if it is not put back, is
    kept beside it as a conflict sibling (`m.conflict-local.md`), never removed.
    False when it could not be moved there: it then stays under its temp name.
    """
    if _inode_at(path) == ours:
        _swap(swapped_out, path)
        if _unlink_if_unchanged(swapped_out, data, limit):
            return True  # put back; `swapped_out` was our own file again and is gone
        _swap(swapped_out, path)  # ours was saved into at `path`: that save stays there
    number = 1
    while os.path.lexists(conflict_sibling(path, "local", number)) and number < 1000:
        number += 1
    try:
        move(swapped_out, conflict_sibling(path, "local", number))
    except (OSError, InvalidMemory):
        return False
    return True


def conflict_sibling(target: Path, label: str, number: int = 1) -> Path:
    """`<id>.conflict-<label>.md` beside `target` (`.conflict-<label>.<number>.md` after the
    first): where a version kept beside a memory goes, by `sage-mem sync` or a crossed save."""
    stem = target.name[:-3] if target.name.endswith(".md") else target.name
    return target.with_name(
        f"{stem}.conflict-{label}" + (f".{number}" if number > 1 else "") + ".md"
    )


def _same_identity(path: Path, seen: Seen) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and identity(st) == seen.identity


def _held_for_writing(path: Path) -> bool:
    """Whether another program holds the file at `path` open for writing (False: not known to).

    Linux refuses a read lease (EAGAIN) while any process has the file open for
    writing. A lease taken is let go at once; while held, a program opening the
    file would break it, which signals the holder: SIGURG, ignored by default,
    rather than SIGIO, which would end this process.
    """
    if _F_SETLEASE is None or _F_SETSIG is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        try:
            fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG)
            fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_RDLCK)
        except OSError as exc:
            # EACCES: not the owner (no CAP_LEASE); EINVAL: a file system without leases.
            return exc.errno == errno.EAGAIN
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_UNLCK)
        return False
    finally:
        os.close(fd)


def _unlink_if_unchanged(path: Path, expected: bytes, limit: int) -> bool:
    """Unlink the file at `path` if it holds `expected` and no program holds it open for
    writing or is opening it to write; else change nothing and say False.

    Checked under a read lease held until the unlink: a program that opens the file
    to write meanwhile waits for the lease, and its wait shows (a lease break is
    pending), so the file it is about to write into stays. A lease let go before the
    bytes are compared would not do: the program it held off opens the file the
    moment the check has said that no one had it, and saves into a file about to be
    unlinked (an editor's save lost under load). Without leases: the bytes alone.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        leased = _take_read_lease(fd)
        if leased is False:
            return False  # open for writing now
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return False
            if _read_fd(fd, limit + 1) != expected:
                return False
            if leased and fcntl.fcntl(fd, cast(int, _F_GETLEASE)) != fcntl.F_RDLCK:
                return False  # a program waits to open it for writing
            if _inode_at(path) != st.st_ino:
                return False
            os.unlink(path)
            return True
        finally:
            if leased:
                fcntl.fcntl(fd, cast(int, _F_SETLEASE), fcntl.F_UNLCK)
    finally:
        os.close(fd)


def _take_read_lease(fd: int) -> bool | None:
    """A read lease on `fd`: True when taken, False when refused because the file is open
    for writing, None when this platform or file system gives none (or not to us)."""
    if _F_SETLEASE is None or _F_SETSIG is None or _F_GETLEASE is None:
        return None
    try:
        fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG)  # a break signals SIGURG, ignored by default
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        # EACCES: not the owner (no CAP_LEASE); EINVAL: a file system without leases.
        return False if exc.errno == errno.EAGAIN else None
    return True


def _bytes_at(path: Path, limit: int) -> bytes | None:
    try:
        return read_file(path, limit=limit).raw
    except (OSError, InvalidMemory):
        return None


def _inode_at(path: Path) -> int | None:
    try:
        return os.lstat(path).st_ino
    except OSError:
        return None


def create(path: Path, data: bytes, *, mode: int) -> None:
    """Write a new file at `path`, whole, never replacing one; FileChanged when one is there."""
    tmp, _ = _temp_file(path, data, mode)
    try:
        try:
            _rename_without_replacing(tmp, path)
        except FileExistsError:
            raise FileChanged(
                f"{path.name}: a file of that name appeared; not overwritten", path=path
            ) from None
    finally:
        _remove_quietly(tmp)
    fsync_dir(path.parent)


def rewrite(
    path: Path,
    transform: Callable[[Seen], bytes | None],
    *,
    read: Callable[[Path], Seen],
    mode: int,
    limit: int,
    attempts: int = REWRITE_ATTEMPTS,
) -> tuple[Seen, bytes | None]:
    """Read `path`, `transform` what was read, commit the result; redo when the file changed.

    `transform` returns the new bytes, or None for "nothing to write"; it may
    raise to refuse. Returns what the last read saw and what was written.
    """
    for attempt in range(attempts):
        seen = read(path)
        data = transform(seen)
        if data is None or data == seen.raw:
            return seen, None
        try:
            commit(path, data, seen, mode=mode, limit=limit)
            return seen, data
        except FileChanged:
            if attempt == attempts - 1:
                raise
            time.sleep(min(_REWRITE_PAUSE_MAX, 0.001 * 2**attempt))
    raise AssertionError("unreachable")


# moving


def free_name(target: Path) -> Path:
    """`target`, or `name-2.md`, `name-3.md`, …: the first name nothing (not even a link) has."""
    if not os.path.lexists(target):
        return target
    stem, dot, suffix = target.name.rpartition(".")
    if not dot:
        stem, suffix = target.name, ""
    n = 2
    while True:
        name = f"{stem}-{n}.{suffix}" if suffix else f"{stem}-{n}"
        candidate = target.with_name(name)
        if not os.path.lexists(candidate):
            return candidate
        n += 1


def move(source: Path, target: Path, *, attempts: int = 100) -> Path:
    """Move `source` to `target`, or to the next free name when `target` is taken; never replaces.

    Returns where the file went. Where there is no atomic no-clobber rename,
    link then unlink: a crash between the two leaves the file under both names,
    never under none.
    """
    target = free_name(target)
    for _ in range(attempts):
        try:
            _rename_without_replacing(source, target)
            break
        except FileExistsError:
            target = free_name(target)
    else:
        raise InvalidMemory(f"{target}: no free name found; nothing moved", path=target)
    fsync_dir(target.parent)
    if target.parent != source.parent:
        fsync_dir(source.parent)
    return target


def move_back(source: Path, target: Path) -> bool:
    """Move `source` to exactly `target` (undoing a `move`); False, with nothing moved, when
    `target` is taken again or the rename fails. A rename needs no room on a full disk."""
    try:
        _rename_without_replacing(source, target)
        fsync_dir(target.parent)
        if target.parent != source.parent:
            fsync_dir(source.parent)
    except OSError:
        return target.exists() and not source.exists()
    return True


def _rename_without_replacing(source: Path, target: Path) -> None:
    """Rename `source` to `target`, or raise FileExistsError: never replaces a file.

    An atomic no-clobber rename where the kernel has one; else a hard link
    (which refuses an existing name) and an unlink of the old name, so a crash
    between the two leaves the file under both names, never under none; else
    (no hard links: some network or FUSE file systems) a checked rename, which
    can lose only a race.
    """
    if _rename_noreplace(source, target):
        return
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        os.rename(source, target)
        return
    os.unlink(source)


PARKED = re.compile(r"\.(?P<name>.+)\.\d+\.[0-9a-f]{8}\.deleting")
"""The name `remove` parks a file under before unlinking it: `.NAME.PID.HEX.deleting`."""


def parked_original(name: str) -> str | None:
    """The file name a parked file (`PARKED`) had, or None for any other name."""
    match = PARKED.fullmatch(name)
    return match["name"] if match else None


def remove(path: Path, seen: Seen, *, limit: int) -> None:
    """Delete the file at `path` if it still holds what `seen` saw; else raise FileChanged.

    The file is first renamed to a dot-name beside it (which no walk takes for
    a memory), then its bytes are compared with `seen.raw`: a file saved in the
    meantime is renamed back (to the next free name if its own was taken
    meanwhile) and kept. Only then is it unlinked. A crash in between leaves
    the file under the dot-name, never lost.
    """
    if seen.raw is None:
        raise FileChanged(f"{path.name}: nothing was read to delete", path=path)
    stem = path.name.encode("utf-8", "surrogateescape")[:200].decode("utf-8", "ignore")
    parked = path.with_name(f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.deleting")  # PARKED
    try:
        _rename_without_replacing(path, parked)
    except FileNotFoundError:
        raise FileChanged(f"{path.name}: removed on disk since it was read", path=path) from None
    if not _unlink_if_unchanged(parked, seen.raw, limit):
        move(parked, path)
        raise FileChanged(f"{path.name}: changed on disk since it was read; not deleted",
                          path=path)
    fsync_dir(path.parent)


# the tool's own files


def text_bytes(text: str) -> bytes:
    """UTF-8 for text the tool writes for itself (state, manifests, reports, their JSON).

    A path under a folder whose name is not UTF-8 arrives as a lone surrogate
    (`caf\\udce9`), which UTF-8 cannot hold: it is written as the escape
    `\\udce9`, which is also JSON's, so a JSON file reads back the very same path.
    """
    return text.encode("utf-8", "backslashreplace")


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600, durable: bool = True) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a mix.

    For files the tool owns (state, reports, configuration it was asked to
    edit): it replaces whatever is there. Memories go through `commit`.
    An existing file keeps its mode. `durable=False` skips the two fsyncs
    (some milliseconds on a prompt's path): only for a file that holds
    nothing but what a power cut may cost, whose reader takes a damaged one
    for an empty one (a session's log of what was injected).
    """
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        pass
    tmp, _ = _temp_file(path, data, mode) if durable else _temp_file(path, data, mode, sync=False)
    try:
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


def _temp_file(path: Path, data: bytes, mode: int, *, sync: bool = True) -> tuple[Path, int]:
    """A complete, fsynced dot-file beside `path` (never taken for a memory), and its inode."""
    # Cut so that a long memory name plus the suffix stays under 255 bytes.
    stem = path.name.encode("utf-8", "surrogateescape")[:200].decode("utf-8", "ignore")
    tmp = path.with_name(f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except OSError as exc:  # said of the file being written: the temp name means nothing to anyone
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
            os.fchmod(fd, mode)
            inode = os.fstat(fd).st_ino
        finally:
            os.close(fd)
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp, inode


# `_temp_file`'s names: ".<file name>.<pid>.<8 hex>.tmp".
_TEMP_NAME = re.compile(r"\..+\.(\d{1,10})\.[0-9a-f]{8}\.tmp")


def leftover_temps(root: Path) -> list[Path]:
    """The temp files under `root` (dot-folders skipped) whose writing process is gone.

    A write killed between making its temp file and the rename leaves one: a
    copy of bytes that no caller was told were written (the file it was for is
    as before), so removing it loses nothing. A temp file of a process that
    still runs is its writer's, and is left alone.
    """
    from .processes import process_alive

    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in files:
            match = _TEMP_NAME.fullmatch(name)
            if match and not process_alive(int(match.group(1))):
                found.append(Path(folder, name))
    return sorted(found)


def _remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# the permission policy


def file_mode(folder: Path) -> int:
    """The mode of a new file in the memory folder `folder`: 0600, or 0660 when it is shared."""
    return 0o660 if _is_shared(folder) else 0o600


def dir_mode(folder: Path) -> int:
    """The mode of a new subfolder of the memory folder `folder`: 0700, or 0770 when shared."""
    return 0o770 if _is_shared(folder) else 0o700


def _is_shared(folder: Path) -> bool:
    """A folder its owner shared with a group on purpose: group-writable, or setgid.

    Readable by others is no sign (every folder made under the usual umask 022
    is 0755); making a folder group-writable or setgid is what a person does to
    share it with a team. Nobody else but the group is ever given access.
    """
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IWGRP or mode & stat.S_ISGID)


def make_dirs(folder: Path, *, root: Path) -> None:
    """Create `folder` (inside `root`) and its missing parents, with the modes `root` shares."""
    missing: list[Path] = []
    current = folder
    while not current.exists() and current != root and current.parent != current:
        missing.append(current)
        current = current.parent
    mode = dir_mode(root)
    for path in reversed(missing):
        try:
            path.mkdir(mode=mode)
        except FileExistsError:
            continue
        os.chmod(path, mode)


def make_private_dirs(folder: Path) -> None:
    """Create `folder` and any missing parents, each with mode 0700 (unlike `mkdir -p`)."""
    missing: list[Path] = []
    current = folder
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(path, 0o700)
    if not folder.is_dir():  # a file (or a link to one) where the folder goes
        raise NotADirectoryError(errno.ENOTDIR, "a file is where this folder goes", str(folder))


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# the kernel's atomic renames


@functools.cache
def _libc() -> Any:
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _rename_call(source: Path, target: Path, *, linux: int, mac: int) -> bool:
    """renameat2 / renamex_np with the given flags; False where unsupported (nothing done)."""
    import ctypes

    libc = _libc()
    if libc is None:
        return False
    src, dst = os.fsencode(source), os.fsencode(target)
    if hasattr(libc, "renameat2"):
        result = libc.renameat2(-100, src, -100, dst, linux)  # AT_FDCWD
    elif hasattr(libc, "renamex_np"):
        result = libc.renamex_np(src, dst, mac)
    else:
        return False
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error == errno.EEXIST:
        raise FileExistsError(error, os.strerror(error), str(target))
    if error == errno.ENOENT:
        raise FileNotFoundError(error, os.strerror(error), str(target))
    if error in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EPERM):
        return False  # not supported by this kernel or file system: the caller falls back
    raise OSError(error, os.strerror(error), str(source))


def _rename_noreplace(source: Path, target: Path) -> bool:
    """rename(2) that refuses an existing target; False where unsupported."""
    return _rename_call(source, target, linux=_RENAME_NOREPLACE, mac=_MAC_RENAME_EXCL)


def _swap(first: Path, second: Path) -> bool:
    """Exchange two names atomically; False where unsupported (nothing done)."""
    try:
        return _rename_call(first, second, linux=_RENAME_EXCHANGE, mac=_MAC_RENAME_SWAP)
    except FileNotFoundError:
        raise FileChanged(
            f"{second.name}: removed on disk since it was read", path=second
        ) from None
