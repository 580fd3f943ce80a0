"""What the page's views need, made ahead of them: the folder's summary and link graph at start-up
and after each change to the memories, in one background thread.

Without it the first memory page after a launch or a change pays for the link graph (0.2 s of
CPU at 5,000 memories, seconds on a loaded machine). The work is the same the views would do
(the same caches, keyed by the live feed's generation), so a view that comes first simply
does it itself and the thread finds it done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

SETTLE_SECONDS = 0.05  # a burst of changes (a git pull) is one warming, not one per file


class Warmer:
    """One daemon thread that runs `work` after each `poke` (coalesced), until `stop`."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self._poked = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="sage-mem-ui-warm", daemon=True)

    def start(self) -> Warmer:
        self._thread.start()
        self.poke()
        return self

    def poke(self) -> None:
        self._poked.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped = True
        self._poked.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stopped:
            self._poked.wait()
            if self._stopped:
                return
            # Let a burst settle, then warm once for what it left.
            while self._poked.wait(SETTLE_SECONDS) and not self._stopped:
                self._poked.clear()
            self._poked.clear()
            if self._stopped:
                return
            try:
                self._work()
            except Exception:  # noqa: BLE001 (ahead of time only: the view that needs it says)
                continue
