"""The socket, uvicorn and the browser: `sage-mem ui` end to end.

The socket is bound here, on 127.0.0.1 only, before uvicorn starts: the port
is known (also when it is 0, "any free port") when the URL is printed and
the Host check is armed, and there is no moment when a wrong address is bound.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import SageMemError
from ..store import MemoryStore
from .app import create_app
from .live import ChangeFeed
from .security import new_token

if TYPE_CHECKING:
    from ..folders import Folders

HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:`port` (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def bind_default(port: int | None) -> socket.socket:
    """Bind `port`; with None, the default port, or any free one when it is taken."""
    try:
        return bind(DEFAULT_PORT if port is None else port)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise SageMemError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
        if port is None:
            return bind(0)
        raise SageMemError(
            f"port {port} on {HOST} is in use: choose another with --port, "
            "or --port 0 for any free one"
        ) from None


class UiServer:
    """The web UI for one store: bound at construction, served by `serve()` or `start()`."""

    def __init__(self, store: MemoryStore, *, port: int | None = None,
                 folders: Folders | None = None, keep_catalog: bool = False) -> None:
        import uvicorn

        self.store = store
        self.token = new_token()
        self.socket = bind_default(port)
        self.port: int = self.socket.getsockname()[1]
        # The default port was taken (another `sage-mem ui`, most often): said when printed.
        self.moved = port is None and self.port != DEFAULT_PORT
        self.feed = ChangeFeed()
        self.app = create_app(store, token=self.token, port=lambda: self.port, feed=self.feed,
                              folders=folders, keep_catalog=keep_catalog)
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="on", ws="none",
            http="h11", loop="asyncio", timeout_graceful_shutdown=2,
        )
        self._server: Any = _uvicorn_server(config, self.feed)
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The page's address with the token in its fragment (never sent to any server)."""
        return f"{self.origin}/#token={self.token}"

    def serve(self) -> None:
        """Serve until Ctrl-C or `stop()`."""
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def start(self, timeout: float = 10.0) -> UiServer:
        """Serve from a background thread; returns once requests are answered."""
        self._thread = threading.Thread(target=self.serve, name="sage-mem-ui", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise SageMemError("the web UI did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (from another thread) and wait for the server to finish."""
        self.feed.close()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> UiServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _uvicorn_server(config: object, feed: ChangeFeed) -> object:
    """uvicorn's server, made to end the open event streams first on Ctrl-C."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:  # type: ignore[override]
            feed.close()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    return Server(config)  # type: ignore[arg-type]


def run_ui(
    folder: Path, *, port: int | None, open_browser: bool, poll: bool, out: TextIO,
    shared: Sequence[str] = (),
) -> int:
    """`sage-mem ui`: open the store with its watcher, print the URL, serve until Ctrl-C.

    With shared folders (`shared`, further `--dir`, and the config's: `sage_mem.folders`),
    the page lists and searches them too, each memory labelled with its folder; it changes
    only the personal folder (a shared folder's page: `sage-mem --dir THAT ui`)."""
    from ..agents.daemon import listen_for_hooks
    from ..folders import Folders, folders_for

    with MemoryStore(folder, watch=True, poll=poll) as store:
        hooks = listen_for_hooks(store)  # the folder's hooks answered from this live index
        # With the semantic extra: vectors made in the background, progress on stderr.
        store.keep_vectors(lambda line: print(f"sage-mem ui: {line}", file=sys.stderr, flush=True))
        specs = folders_for([str(store.root), *shared])
        folders = Folders(specs, store=store, watch=True, poll=poll) if len(specs) > 1 else None
        for note in folders.missing_notes() if folders is not None else ():
            out.write(f"sage-mem ui: {note}\n")
        if folders is not None:  # the shared folders' vectors too, with the semantic extra
            folders.keep_vectors(lambda line: print(f"sage-mem ui: {line}", file=sys.stderr,
                                                    flush=True))
        # A memory made by hand meanwhile is listed in MEMORY.md: by the page, once the list
        # shows the change (`catalog.py`), not by the watcher before it.
        server = UiServer(store, port=port, folders=folders, keep_catalog=True)
        if server.moved:
            out.write(f"sage-mem ui: port {DEFAULT_PORT} is taken (another sage-mem ui, or "
                      f"another program), so this page is on port {server.port}\n")
        out.write(
            f"sage-mem ui: {store.root} ({len(store.list())} memories)\n"
            f"open {server.url}\n"
            "(the link carries this launch's token; only 127.0.0.1 can connect; Ctrl-C stops)\n"
        )
        out.flush()
        if open_browser:
            with contextlib.suppress(webbrowser.Error):
                webbrowser.open(server.url)
        # uvicorn shuts down cleanly on Ctrl-C, then raises the signal again.
        with contextlib.suppress(KeyboardInterrupt):
            try:
                server.serve()
            finally:
                if hooks is not None:
                    hooks.stop()
                if folders is not None:
                    folders.close()
    out.write("sage-mem ui: stopped\n")
    return 0
