"""Bulk work in this process: reading or making millions of objects at once.

The index's build and cache, the page's saved link graph and the audit's cache
each make hundreds of thousands of containers in one go, none of them garbage.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection inside: for work that makes millions of objects, none garbage.

    Each generation-0 collection would also walk the older generations now and
    then, which for a build of 100,000 memories costs whole seconds.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
