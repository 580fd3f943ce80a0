"""Checks over memory text: the audit, secrets, and text that gives an agent orders.

Modules: `audit` (`sage-mem audit`: reports, never changes a byte),
`agent_safety` (the audit's checks of what reaches an agent), `credentials`
(secret detection, used by every write and by the hook's output),
`prompt_injection` (orders hidden in memory text; visible forms of names).

`credentials` and `prompt_injection` are pure (text in, findings out) and
cheap to import: of sage-mem they import only `memory/json_view` (and
`disk/folder`'s name check), so the hooks use them; the audit reads the folder
through `sage_mem.disk` and is handed a store. Never imports an interface
(agents, MCP, page, CLI).
"""

# A finding's excerpt, for secrets and orders alike: at most EXCERPT_CHARS of its line,
# from EXCERPT_LEAD characters before the match, so every line of the audit reads the same.
# Here, not in either module, so that neither check imports the other.
EXCERPT_CHARS = 80
EXCERPT_LEAD = 20
