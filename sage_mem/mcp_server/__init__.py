"""The MCP servers: the memory tools on stdio, and a dream run's restricted server.

Modules: `server` (`sage-mem serve`: the wiring of tools and resources; the one
module that imports `mcp`), `memory_tools` (what each tool does, as plain
functions over a store, results JSON-ready), `limits` (the paging limits the
schemas name before the store is imported), `dream_server` (`sage-mem serve
--dream-run RUN_ID`: only the tools one dream run may use).

May import the store, `agents.context`, `checks`, `memory`, `search` and the
dream; nothing on the hook's or the CLI's start-up path may import this room.
"""
