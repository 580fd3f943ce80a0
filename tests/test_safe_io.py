"""safe_io: the checked read, and writes that never replace bytes they have not read."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from sage_mem.disk import safe_io
from sage_mem.disk.safe_io import (
    Seen,
    atomic_write,
    commit,
    create,
    file_mode,
    free_name,
    make_private_dirs,
    move,
    read_file,
    rewrite,
)
from sage_mem.errors import FileChanged, InvalidMemory

LIMIT = 512 * 1024


def read(path: Path) -> Seen:
    return safe_io.read_or_absent(path, limit=LIMIT)


# the checked read


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "m.md"
    os.mkfifo(fifo)
    with pytest.raises(InvalidMemory, match="not a regular file"):
        read_file(fifo, limit=LIMIT)


def test_a_device_is_refused_and_never_read_past_the_limit(tmp_path: Path) -> None:
    link = tmp_path / "zero.md"
    link.symlink_to("/dev/zero")
    with pytest.raises(InvalidMemory, match="not a regular file"):
        read_file(link, limit=LIMIT)


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (LIMIT + 1))
    with pytest.raises(InvalidMemory, match="limit"):
        read_file(big, limit=LIMIT)


# commit: never over bytes it has not read


def test_commit_replaces_the_file_it_read(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    commit(path, b"new", read(path), mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["m.md"]


@pytest.mark.parametrize("save", [pytest.param("rename", id="rename-save"),
                                  pytest.param("in-place", id="in-place-save"),
                                  pytest.param("delete", id="delete")])
def test_commit_refuses_when_the_file_changed_since_it_was_read(
    tmp_path: Path, save: str
) -> None:
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    seen = read(path)
    if save == "rename":
        (tmp_path / "m.md.swp").write_bytes(b"the editor's")
        os.replace(tmp_path / "m.md.swp", path)
    elif save == "in-place":
        path.write_bytes(b"the editor's")
    else:
        path.unlink()
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert (path.read_bytes() if save != "delete" else None) == (
        None if save == "delete" else b"the editor's"
    )
    assert sorted(os.listdir(tmp_path)) == ([] if save == "delete" else ["m.md"])


def test_an_in_place_save_keeping_size_and_mtime_is_still_caught(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    path.write_bytes(b"aaaa")
    seen = read(path)
    st = path.stat()
    path.write_bytes(b"bbbb")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"bbbb"


def test_a_save_between_the_check_and_the_swap_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last instant: an editor saves after the identity check, before the rename."""
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    seen = read(path)
    real_swap = safe_io._swap
    calls = []

    def editor_saves_first(first: Path, second: Path) -> bool:
        if not calls:
            path.write_bytes(b"the editor's save")  # in place, same inode
        calls.append(first)
        return real_swap(first, second)

    monkeypatch.setattr(safe_io, "_swap", editor_saves_first)
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"the editor's save"
    assert sorted(os.listdir(tmp_path)) == ["m.md"]


def test_a_save_into_our_file_while_it_stood_at_the_path_stays_and_the_other_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two saves cross ours: one into the file we swapped out, one into ours at the path.

    Putting the swapped-out file back would drop the second (our file is then
    removed); the second stays where it was saved, the first beside it.
    """
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    seen = read(path)
    real_swap = safe_io._swap
    calls = []

    def two_saves(first: Path, second: Path) -> bool:
        if not calls:
            path.write_bytes(b"editor save 1")  # in place, into the file we swap out
        elif len(calls) == 1:
            path.write_bytes(b"editor save 2")  # in place, into ours, standing at the path
        calls.append(first)
        return real_swap(first, second)

    monkeypatch.setattr(safe_io, "_swap", two_saves)
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"editor save 2"
    assert (tmp_path / "m.conflict-local.md").read_bytes() == b"editor save 1"
    assert sorted(os.listdir(tmp_path)) == ["m.conflict-local.md", "m.md"]


def test_a_file_renamed_over_ours_stays_and_the_save_we_swapped_out_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save into the file we swapped out, then a save by rename over ours: both kept."""
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    (tmp_path / "m.conflict-local.md").write_bytes(b"an earlier sibling")
    seen = read(path)
    real_swap = safe_io._swap
    calls = []

    def save_then_rename(first: Path, second: Path) -> bool:
        if not calls:
            path.write_bytes(b"editor save 1")  # in place, into the file we swap out
        calls.append(first)
        swapped = real_swap(first, second)
        if len(calls) == 1:
            new = tmp_path / ".m.md.swp"
            new.write_bytes(b"editor save 2")
            os.replace(new, path)  # by rename, over ours
        return swapped

    monkeypatch.setattr(safe_io, "_swap", save_then_rename)
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"editor save 2"
    assert (tmp_path / "m.conflict-local.2.md").read_bytes() == b"editor save 1"
    assert (tmp_path / "m.conflict-local.md").read_bytes() == b"an earlier sibling"
    assert len(os.listdir(tmp_path)) == 3


def test_a_touched_file_is_still_swapped_and_checked_after_the_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same bytes under a new identity (a `touch`) take the checked swap too, not a bare rename."""
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    seen = read(path)
    os.utime(path, ns=(1, 1))  # a new identity, the same bytes
    real_swap, real_replace = safe_io._swap, safe_io.os.replace
    saved = []

    def editor_saves_first(save_then: object) -> object:
        def call(first: Path, second: Path) -> object:
            if not saved:
                path.write_bytes(b"the editor's save")
                saved.append(True)
            return save_then(first, second)  # type: ignore[operator]
        return call

    monkeypatch.setattr(safe_io, "_swap", editor_saves_first(real_swap))
    monkeypatch.setattr(safe_io.os, "replace", editor_saves_first(real_replace))
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"the editor's save"


@pytest.mark.skipif(not safe_io.CAN_TELL_WRITERS, reason="needs Linux file leases")
def test_a_file_another_program_holds_open_for_writing_is_not_replaced(tmp_path: Path) -> None:
    """An editor that truncated the file and has yet to write: its save must not be lost.

    Our read sees the empty file; without a check for open writers the swap puts
    our bytes in place and the editor's write lands in the file we swapped out.
    """
    path = tmp_path / "m.md"
    path.write_bytes(b"the person's note")
    with open(path, "wb") as editor:  # truncated, not yet written
        seen = read(path)
        assert seen.raw == b""
        with pytest.raises(FileChanged, match="open for writing"):
            commit(path, b"ours, from the empty read", seen, mode=0o600, limit=LIMIT)
        editor.write(b"the person's new note")
    assert path.read_bytes() == b"the person's new note"
    assert sorted(os.listdir(tmp_path)) == ["m.md"]


@pytest.mark.skipif(not safe_io.CAN_TELL_WRITERS, reason="needs Linux file leases")
def test_a_writer_holding_the_old_file_open_across_the_swap_gets_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer with the file open when we swap, writing after our check: swapped back."""
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    seen = read(path)
    real_swap = safe_io._swap
    writer: list[object] = []

    def writer_opens_first(first: Path, second: Path) -> bool:
        if not writer:
            writer.append(open(path, "r+b"))  # open, not truncated, nothing written yet
        return real_swap(first, second)

    monkeypatch.setattr(safe_io, "_swap", writer_opens_first)
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    handle = writer[0]
    handle.write(b"new")  # type: ignore[attr-defined]
    handle.close()  # type: ignore[attr-defined]
    assert path.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["m.md"]


def test_without_an_atomic_swap_the_bytes_are_compared_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(safe_io, "_rename_call", lambda *a, **k: False)
    path = tmp_path / "m.md"
    path.write_bytes(b"old")
    seen = read(path)
    commit(path, b"new", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"new"
    seen = read(path)
    path.write_bytes(b"edit")
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"edit"


def test_create_never_replaces_a_file_that_appeared(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    seen = read(path)
    assert seen.raw is None
    path.write_bytes(b"someone else's")
    with pytest.raises(FileChanged):
        commit(path, b"ours", seen, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"someone else's"
    create(tmp_path / "n.md", b"new", mode=0o600)
    assert (tmp_path / "n.md").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["m.md", "n.md"]


def test_rewrite_redoes_the_transform_over_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    path.write_bytes(b"a")
    saves = iter([b"a+editor"])

    def append_ours(seen: Seen) -> bytes:
        data = (seen.raw or b"") + b"+ours"
        edit = next(saves, None)
        if edit is not None:
            path.write_bytes(edit)  # an editor saves while we transform
        return data

    seen, written = rewrite(path, append_ours, read=read, mode=0o600, limit=LIMIT)
    assert path.read_bytes() == b"a+editor+ours" == written
    assert seen.raw == b"a+editor"


def test_an_editor_saving_in_a_loop_loses_no_save(tmp_path: Path) -> None:
    """Each editor save is whole and blind; ours adds a line to what it read. None is lost."""
    path = tmp_path / "m.md"
    path.write_bytes(b"save 0\n")
    stop = threading.Event()
    last = {"n": 0}

    def editor() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            tmp = tmp_path / ".m.md.swp"
            if n % 2:
                tmp.write_bytes(f"save {n}\n".encode())
                os.replace(tmp, path)
            else:
                path.write_bytes(f"save {n}\n".encode())
            last["n"] = n

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        for _ in range(300):
            try:
                rewrite(path, lambda seen: (seen.raw or b"") + b"tagged\n", read=read,
                        mode=0o600, limit=LIMIT, attempts=3)
            except (FileChanged, InvalidMemory):
                pass
    finally:
        stop.set()
        thread.join()
    final = path.read_bytes().decode()
    # The editor's last save is there, alone or with our line on top of it: never replaced.
    assert final.splitlines()[0] == f"save {last['n']}", final


# moves


def test_move_takes_the_next_free_name_and_never_replaces(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"a")
    (tmp_path / "b.md").write_bytes(b"b")
    (tmp_path / "b-2.md").symlink_to("nowhere")  # a dangling link is a taken name too
    assert free_name(tmp_path / "b.md") == tmp_path / "b-3.md"
    assert move(tmp_path / "a.md", tmp_path / "b.md") == tmp_path / "b-3.md"
    assert (tmp_path / "b.md").read_bytes() == b"b"
    assert (tmp_path / "b-3.md").read_bytes() == b"a"


# the permission policy


@pytest.mark.parametrize(("folder_mode", "expected"), [
    pytest.param(0o700, 0o600, id="private"),
    pytest.param(0o755, 0o600, id="umask-022-folder-is-still-private"),
    pytest.param(0o775, 0o660, id="group-writable-is-shared"),
    pytest.param(0o2750, 0o660, id="setgid-is-shared"),
])
def test_new_files_follow_the_folders_sharing(
    tmp_path: Path, folder_mode: int, expected: int
) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    folder.chmod(folder_mode)
    assert file_mode(folder) == expected
    create(folder / "m.md", b"x", mode=file_mode(folder))
    assert stat.S_IMODE((folder / "m.md").stat().st_mode) == expected


# the tool's own files

def test_atomic_write_creates_a_private_file(tmp_path: Path) -> None:
    target = tmp_path / "m.md"
    atomic_write(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["m.md"]


def test_atomic_write_keeps_an_existing_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "m.md"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize("failing", [pytest.param("write", id="os-write"),
                                     pytest.param("fsync", id="os-fsync"),
                                     pytest.param("replace", id="os-replace")])
def test_a_failed_write_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    target = tmp_path / "m.md"
    target.write_bytes(b"old bytes")

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safe_io.os, failing, boom)
    with pytest.raises(OSError, match="No space"):
        atomic_write(target, b"new bytes" * 1000)
    monkeypatch.undo()
    assert target.read_bytes() == b"old bytes"
    assert os.listdir(tmp_path) == ["m.md"]


def test_a_write_cut_short_by_a_partial_os_write_still_writes_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, bytes(data[:7]))

    monkeypatch.setattr(safe_io.os, "write", short_write)
    atomic_write(tmp_path / "m.md", b"0123456789" * 10)
    assert (tmp_path / "m.md").read_bytes() == b"0123456789" * 10


def test_atomic_write_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret")
    link = tmp_path / "m.md"
    link.symlink_to(outside)
    atomic_write(link, b"new")
    assert outside.read_bytes() == b"secret"
    assert not link.is_symlink() and link.read_bytes() == b"new"


def test_make_private_dirs_gives_every_new_level_mode_0700(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        make_private_dirs(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    make_private_dirs(tmp_path / "a" / "b")


def test_a_write_that_need_not_outlive_a_power_cut_is_not_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`durable=False` (a hook's session log) replaces the file atomically without fsync."""
    from sage_mem.disk import safe_io as module

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(module.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    target = tmp_path / "log.json"
    module.atomic_write(target, b"first", durable=False)
    module.atomic_write(target, b"second", durable=False)
    assert target.read_bytes() == b"second" and synced == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    module.atomic_write(target, b"third")
    assert target.read_bytes() == b"third" and len(synced) >= 2  # the file and its folder


EDITOR_SAVE = b"---\ndescription: a\n---\n\neditor save\n"
SAVE_THROUGH = (
    "import sys\n"
    "with open(sys.argv[1], 'wb') as f:\n"  # the inode the editor resolved, opened to write
    "    f.write(sys.argv[2].encode())\n"
)


@pytest.mark.skipif(not safe_io.CAN_TELL_WRITERS, reason="needs read leases (Linux)")
@pytest.mark.parametrize("step", ["commit", "delete"])
def test_a_save_opened_while_the_file_is_checked_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """An editor that opens the file to save just as sage-mem checks it, before it goes.

    The editor's open reaches the file while the check reads it (the lease the
    check holds makes it wait); once the check is done, it writes. Checked and
    then unlinked, its save would go into a file that no longer has a name.
    """
    import subprocess
    import sys

    path = tmp_path / "m.md"
    path.write_bytes(b"---\ndescription: a\n---\n\nfirst\n")
    seen = read(path)
    real_read = safe_io._read_fd
    editors: list[subprocess.Popen[bytes]] = []

    def read_as_an_editor_opens(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        if not editors:
            editor = subprocess.Popen([sys.executable, "-c", SAVE_THROUGH,
                                       f"/proc/{os.getpid()}/fd/{fd}", EDITOR_SAVE.decode()])
            editors.append(editor)
            try:  # it saves now, or waits for a lease the check holds until it is done
                editor.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        return data

    monkeypatch.setattr(safe_io, "_read_fd", read_as_an_editor_opens)
    with pytest.raises(FileChanged):
        if step == "commit":
            safe_io.commit(path, b"---\ndescription: b\n---\n\nfirst\n", seen, mode=0o600,
                           limit=LIMIT)
        else:
            safe_io.remove(path, seen, limit=LIMIT)
    assert editors and editors[0].wait(timeout=60) == 0
    assert path.read_bytes() == EDITOR_SAVE
