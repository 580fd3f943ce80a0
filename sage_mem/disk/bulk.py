"""Bulk work in this process: reading or making millions of objects at once.

The index's build and cache, the page's saved link graph and the audit's cache
each make hundreds of thousands of containers in one go, none of them garbage.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(*, keep: bool = False) -> Iterator[None]:
    """No garbage collection inside: for work that makes millions of objects, none garbage.

    Each generation-0 collection would also walk the older generations now and
    then, which for a build of 100,000 memories costs whole seconds.

    `keep`: what the process holds then is kept for good (`gc.freeze`), for a load
    that lives as long as the process (a launch's): no collection walks it again.
    The objects made inside are all still young, so the first collection after
    would walk every one (tens of milliseconds at 50,000 memories), the next
    older ones again, and a full one some 0.2 s of CPU over half a million
    objects, each a stall of whatever the page is answering then. (Only cyclic
    garbage held at that moment is never freed: a launch holds little.)
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if collecting:
            gc.enable()
