"""`MEMORY.md` kept in line with the memories by the page (`sage-mem ui`), after a change's list
is answered rather than before it.

The store's watcher can bring `MEMORY.md` in line itself after each change it sees
(`MemoryStore.follow_hand_edits`, as `sage-mem serve` asks), but it does so in its own thread
right after the refresh, while the page asks for the list again: at 50,000 memories the two
shared the interpreter (some 40 ms of CPU for `MEMORY.md`, 0.2 s and more on two busy cores)
and the list showed the change that much later. The page does it instead once the list's
request for the change is answered (`Answering.pause`), and before an audit looks at it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


class Catalog:
    """Brings `MEMORY.md` in line once per generation of the memories that changed on disk."""

    def __init__(self, store: Any, keep: bool) -> None:
        self._store = store
        self._keep = keep
        self._lock = threading.Lock()
        self._done = 0  # the live feed's generation it was last brought in line at

    def bring_in_line(self, generation: int, pause: Callable[[], None] | None = None) -> None:
        """After the request the change is waited for (`pause`), when the memories changed since
        the last time (a generation of 0 is the launch's: nothing changed yet)."""
        if not self._keep or generation <= self._done:
            return
        if pause is not None:
            pause()
        from ..errors import SageMemError

        with self._lock:
            if generation <= self._done:
                return
            self._done = generation
            try:
                self._store.regenerate_index()
            except (SageMemError, OSError) as exc:  # (as the watcher's: left for the next change)
                logger.info("sage-mem ui: MEMORY.md of %s not brought up to date: %s",
                            self._store.root, exc)
