"""The tools' paging limits, in a module of their own: the server's schemas name them before
anything of the store is imported (`serve` answers `initialize` first)."""

SEARCH_LIMIT_MAX = 20
LIST_LIMIT_MAX = 100
