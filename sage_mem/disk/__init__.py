"""The memory folder on disk: paths, checked reads and writes, locks, the watcher.

Modules: `folder` (ids <-> paths, reserved names, the one folder walk, the state
folder beside it, `read_memory`), `safe_io` (checked reads; writes that never
replace bytes they have not read; no-clobber moves; the permission policy),
`home` (where `~` and the default folder lead), `locks` (the write lock and its
generation count), `processes` (whether the process behind a run, a lock or a
temp file still runs), `stats` (usage counts in the state folder), `watch`
(keeps a store's index current), `template` (`sage-mem init`).

May import `sage_mem.errors` and `sage_mem.memory`. `watch` and `template`
are handed a store (they import it for types and, `template`, to open the new
folder's store; `template` also makes `init --git`'s repository through
`sage_mem.sync`); nothing else here knows the store, the index or any interface.
"""
