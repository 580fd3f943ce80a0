"""The memory folder on disk: paths, checked reads and writes, locks, the watcher.

Modules: `folder` (ids <-> paths, reserved names, the one folder walk, the state
folder beside it, `read_memory`), `safe_io` (checked reads; writes that never
replace bytes they have not read; no-clobber moves; the permission policy),
`home` (where `~` and the default folder lead), `locks` (the write lock and its
generation count), `processes` (whether the process behind a run, a lock or a
temp file still runs), `bulk` (garbage collection paused while millions of objects
are made), `stats` (usage counts in the state folder), `watch`
(keeps a store's index current), `template` (`sage-mem init`).

May import `sage_mem.errors` and `sage_mem.memory`. `watch` is handed a store
and knows it only as its `Watched` protocol (the root, three calls); `template` is
handed how to open the new folder's store and knows it as its `NewFolderStore`
(`init --git`'s repository is `sage_mem.sync`'s, called from the command);
nothing here imports the store, the index or any interface.
"""
