"""Several memory folders at once: a person's own folder and shared ones (a team's, a project's).

Modules: `config_path` (where the config file is: `config_file`, `has_config`,
all a hook needs before it knows there are shared folders, so it imports
nothing but `os`, `pathlib` and `disk/home`; this one re-exports it and reaches
`several` only when one of its names is asked for), `several` (the config read and checked,
which folders a command line means: `folders_for`, and `Folders`: one
`MemoryStore` per folder, merged search, qualified ids, checked writes).
Sits above the store: may import `sage_mem.errors`, `memory`, `disk`,
`search`, `checks` and `store`; the agents, the MCP tools, the page and the
commands import it.

Which folders: `folders_for(dirs)`.

- `--dir` repeated: the first is the personal folder, the only one written to
  unless a folder is named; each further one is a shared folder, named and
  flagged as the config names the same path, else by its folder's own name
  (`team-memory`, made unique with `-2`, `-3`), and writable.
- No `--dir`: the personal folder is `$SAGE_MEM_DIR`, else `~/.sage-mem/memory`,
  as always (the config does not move it).
- The config's shared folders join whenever the personal folder in use is the
  config's personal one (its `[personal] path`, or the default when it names
  none): the config says "my folder, and what is shared with it". A `--dir`
  pointing at some other folder is that folder alone, as it always was.

The config is one TOML file (read with the standard library's `tomllib`),
`$SAGE_MEM_CONFIG`, else `$XDG_CONFIG_HOME/sage-mem/config.toml`, else
`~/.config/sage-mem/config.toml`; `SAGE_MEM_CONFIG=` (empty) reads none:

    [personal]
    name = "me"                      # optional, default "personal"
    path = "~/.sage-mem/memory"      # the folder these join; default $SAGE_MEM_DIR or that

    [shared.team]
    path = "~/team-memory"           # `~` expanded; relative to the config file's folder
    read-only = true                 # optional, default false

A name is letters, digits, `_` and `-` (any script), at most 40 characters.
Anything else in the file is refused in one line naming the file and the
line (TOML syntax) or the key (`shared.team.path`), never half read.

Each folder is a `MemoryStore` of its own, with its own state folder beside
it: two folders never share state (`SAGE_MEM_STATE_DIR`, when set, is the
personal folder's). A shared folder that cannot be opened (gone, not a
folder) is reported in `Folders.missing` and the others answer.

Ids: a memory of the personal folder keeps its plain id; one of a shared
folder is `NAME:ID` (`team:project/deploy`), which every reader accepts back.
A bare id means the personal folder. (`:` is not allowed in new memory ids,
so `NAME:` is never part of one sage-mem made.)

Ranking across folders: BM25 scores are not comparable between folders, each
folder's idf and lengths being its own. Measured (tests/test_folders.py,
`test_scores_of_two_folders_are_made_comparable`): one memory, byte for byte
the same, in a folder of 6 memories and one of 58 scored 0.822 and 1.134 for
"postgres" (which 13 of the 58 mention); for "database", a word all 58 hold,
the big folder's best scored 0.006 and the small folder's copy 0.804, so a
merge by rank (reciprocal rank fusion) would put that 0.006 second, above a
real match. So each hit's score is divided by what one query term that only
one memory has weighs in its folder (the idf at df = 1, `search/scoring.py` `unique_idf`: 1.54
for 6 memories, 3.67 for 58, the scale the hook's relevance floor uses too):
the big folder's near-matches of "database" fall to 0.002, below the small
folder's real ones (0.52, 0.51). Hits are ranked by that score, which is the
`score` a merged hit carries (each folder's own order is kept); `folder`
names its folder. Two copies of one memory need not sit side by side: a term
most of a folder's memories hold weighs less there, as it does within one
folder.
"""

from __future__ import annotations

from .config_path import CONFIG_ENV, config_file, has_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .several import (
        Config,
        Folders,
        FolderSpec,
        check_writable,
        folders_for,
        merge,
        read_config,
        read_only_spec,
        shared_state,
        split_id,
    )

__all__ = [
    "CONFIG_ENV", "Config", "FolderSpec", "Folders", "check_writable", "config_file",
    "folders_for", "has_config", "merge", "read_config", "read_only_spec", "shared_state",
    "split_id",
]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import several

    return getattr(several, name)
