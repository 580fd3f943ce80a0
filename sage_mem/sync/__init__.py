"""Memory over git (DESIGN §9): `sage-mem sync`, the merge driver, a memory's history.

Modules: `git` (running git in a memory folder: one-line errors, an identity
when none is configured, the machine's name, the setup `init`/`sync` write:
`.gitattributes` and the merge driver's config), `merge_driver` (what git calls
to merge two versions of a memory file: by rule, or both kept, the other as a
conflict sibling; never conflict markers), `batch_merge` (every file a
sync's merge leaves unmerged, merged by the same rules in the sync's own
process), `merge_later` (while sync's merge runs, git starts no process for a
memory file), `index_file` (MEMORY.md made from each memory's frontmatter,
without a search index, and the record of what was read), `steps` (`sync`: commit, fetch,
integrate, push, and finishing a sync that was killed; making a folder a
repository, `init --git`), `history` (`log ID`,
`show ID@REV`), `auto` (the opt-in autosync: a background sync at session
start, a debounced one after writes).

May import `sage_mem.errors`, `sage_mem.memory`, `sage_mem.disk` and
`sage_mem.checks` (the secret scan); `steps` opens a store to regenerate
MEMORY.md and to restore an archived memory that the other side edited.
Only `auto`, which imports nothing of sage-mem, is on the hook's path (the
session-start hook asks it whether to start a background sync).
"""
