"""Checks over memory text: the audit, secrets, and text that gives an agent orders.

Modules: `audit` (`sage-mem audit`: reports, never changes a byte),
`agent_safety` (the audit's checks of what reaches an agent), `credentials`
(secret detection, used by every write and by the hook's output),
`prompt_injection` (orders hidden in memory text; visible forms of names).

`credentials` and `prompt_injection` are pure (text in, findings out) and
import nothing of sage-mem; the audit reads the folder through `sage_mem.disk`
and is handed a store. Never imports an interface (agents, MCP, page, CLI).
"""
