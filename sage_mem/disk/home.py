"""Where `~` leads: the home folder, paths given with a leading `~`, and the default folder.

`Path.expanduser()` and `Path.home()` raise RuntimeError when `~` leads
nowhere: HOME is not set and the user id has no entry in the password
database (a container run as a bare uid, a service with a cleared
environment), or `~name` names no user. Every path a person, the
environment or a config gives goes through `expand_home`, which says so in
one line (`FolderError`) instead; `home()` is None then, for what can do
without one (the config file: there is none to read).

Imports only `os`, `pathlib` and the error tree: the hook's path uses it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import FolderError


def home() -> Path | None:
    """The user's home folder ($HOME, else the password database's), or None when neither says."""
    try:
        return Path.home()
    except RuntimeError:
        return None


def home_folder(what: str, fix: str = "set HOME") -> Path:
    """The home folder, or FolderError saying that `what` needs one, and `fix`."""
    found = home()
    if found is None:
        raise FolderError(f"no home folder for {what}: {_no_home()}; {fix}")
    return found


def expand_home(path: str | os.PathLike[str]) -> Path:
    """`path` with a leading `~` or `~name` expanded; FolderError when that leads nowhere."""
    given = Path(path)
    try:
        return given.expanduser()
    except RuntimeError:
        first = given.parts[0]
        if first == "~":
            raise FolderError(
                f"{path}: cannot expand `~`: {_no_home()}; set HOME or give the full path"
            ) from None
        raise FolderError(
            f"{path}: cannot expand `{first}`: no user {first[1:]!r} here; give the full path"
        ) from None


def default_folder() -> Path:
    """`SAGE_MEM_DIR`, else `~/.sage-mem/memory`."""
    env = os.environ.get("SAGE_MEM_DIR")
    if env:
        return expand_home(env)
    found = home_folder("the default memory folder", "set SAGE_MEM_DIR or give --dir")
    return found / ".sage-mem" / "memory"


def _no_home() -> str:
    uid = os.getuid() if hasattr(os, "getuid") else None
    who = f"user id {uid}" if uid is not None else "this user"
    return f"HOME is not set and {who} has no home in the password database"
