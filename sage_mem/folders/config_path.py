"""Where the folders config is read from: all a hook needs before it knows there are shared folders.

Imports nothing but `os`, `pathlib` and `disk/home` (inside the call): the hook
stats the config on every prompt and must not pay for `folders/several`.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_ENV = "SAGE_MEM_CONFIG"


def config_file() -> Path | None:
    """Where the config is read from (see the module docstring); None: read none."""
    from ..disk.home import expand_home, home

    env = os.environ.get(CONFIG_ENV)
    if env is not None:
        return expand_home(env) if env.strip() else None
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sage-mem" / "config.toml"
    found = home()  # no home folder (a bare uid in a container): no config to read
    return found / ".config" / "sage-mem" / "config.toml" if found is not None else None


def has_config() -> bool:
    """Whether there is a config file to read (a stat: what a hook checks on every prompt)."""
    file = config_file()
    return file is not None and file.is_file()
