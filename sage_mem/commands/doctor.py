"""`sage-mem doctor`: what is in use and what runs, one line each, and what to do about each
problem."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..disk.home import default_folder, expand_home, home_folder
from .base import Session, folder_command, json_option


@folder_command(
    "doctor",
    "what is in use and what runs (the folder and its state, clients, daemon, index, the "
    "semantic extra, sync, the dream), one line each with what to do; exit 1 when a problem "
    "is found, 0 when none",
    "sage-mem doctor --json",
)
@click.option("--offline", is_flag=True,
              help="do not ask the sync remote whether it answers (git ls-remote)")
@json_option
@click.pass_obj
def doctor(session: Session, offline: bool, as_json: bool) -> int:
    from ..agents.doctor import checkup

    # The folder as named, not `session.folder`: a misnamed folder is a finding here.
    if session.dir:
        folder, named_by = expand_home(session.dir), "--dir"
    elif os.environ.get("SAGE_MEM_DIR"):
        folder, named_by = default_folder(), "$SAGE_MEM_DIR"
    else:
        folder, named_by = default_folder(), "the default"
    codex_home = os.environ.get("CODEX_HOME")
    result = checkup(
        folder, named_by=named_by, project_dir=Path.cwd(),
        home=home_folder("a client's config"),
        codex_home=expand_home(codex_home) if codex_home else None, remote=not offline,
    )
    session.print_result(result, as_json)
    return result.exit_status
