"""`sage-mem ui`: a local web page to browse, edit and review the memory folder.

    from sage_mem.ui import UiServer
    server = UiServer(store, port=0)   # binds 127.0.0.1 at once; server.url has the token
    server.serve()                     # until Ctrl-C (or server.stop() from another thread)

Modules: `security` (Host check, per-launch token, response headers), `live`
(change feed behind the server-sent events), `api` (memories, the raw file,
rename, archive, delete), `listing` (the memories of one change, and what
differs from the last), `audit` (the Audit tab's runs, cached and shown as they
go), `overview` (the star map's data, the footer's counts), `links` (links,
supersedes and backlinks, resolved), `dreams` (runs, reports, diffs, rollback, dream now),
`run_lines` (the list of runs, kept while each run's files are unchanged),
`settings` (the dream's settings, from DreamConfig), `warm` (what the views
need, made ahead of them after each change), `app` (the Starlette app),
`server` (the socket, uvicorn, the browser). The page itself is plain
HTML, CSS and JavaScript under `static/`, with no build step.

Imports starlette and uvicorn (declared dependencies, which `mcp` needs too);
the CLI imports this package only for `sage-mem ui`.
"""

from __future__ import annotations

from .server import UiServer, run_ui

__all__ = ["UiServer", "run_ui"]
