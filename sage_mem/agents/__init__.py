"""What sage-mem gives agent clients: their context, their hooks, their config files.

Modules: `context` (the text injected into an agent's context: baselines,
relevant memories, per-session dedup, budgets), `hooks` (`sage-mem hook …`, a
new process for every prompt; `hook_command`, its command line, shared by
`cli.py` and `commands/`), `sync_command` (`sage-mem sync` run and printed, the
index built in the background after a join; shared by `cli.py`, which runs a plain
sync line without click, and `commands/`), `install` (`sage-mem install`: the clients'
own config files: planned, backed up, written; `client_config`, what it writes in
them and how it finds its own entries again; `json_edit`, the minimal JSON edits),
`reflection` (the Stop and PreCompact hooks' question), `importers` (memories in
from other tools and from JSON lines), `export` (JSON lines out), `hook_socket`,
`daemon` and `daemon_start` (below). `claude_plugin/` is data, not code: a Claude
Code plugin marketplace registering the same server and hooks as `install claude-code`.

`hooks` runs on the prompt's path: it imports only `hook_socket` to ask a
running server, and `context`, the store and what they need to answer by
itself (`tests/test_hook_imports.py`); never `mcp`, click, the dream (except
to start an automatic run), the page or the MCP server. `hook_socket` (the
socket both sides of that question use) and `daemon` (`sage-mem daemon`: the
background build and hook server, and the listener `serve` and `ui` start)
may import the store and `hooks`, never an interface; `hooks` starts a daemon
through `daemon_start` (the build lock, `start_detached`), never `daemon`.
"""
