"""``gc_paused()``: the cyclic garbage collector off for a block, then back as it was found."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic GC off while a block builds many objects that hold no reference cycles, then restored.

    Reference counting frees such objects all the same; without the pause, every ~700 new container objects
    trigger a collection that walks the youngest objects, and every few of those an older generation too:
    ~13% of a crawl's CPU (bench/crawl.py), ~15-20% of a 1M-record metadata replay (bench/metadata_replay.py).
    A caller that had already disabled GC keeps it disabled; nesting is fine.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
