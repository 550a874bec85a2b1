"""How delta-rs' allocator gives freed memory back to the OS; applied before ``deltalake`` is first imported.

The ``deltalake`` wheel allocates with its own jemalloc, which by default keeps freed pages and purges them only as
later allocations come along. The plan step registers a fleet's plan in a burst of writes: each write's pages stayed
resident under the next (75 MiB after ``gc_plan_items``' 100k rows, under the 51 MB ``gc_plans`` document). With a
background purging thread and a 1 s decay they go back within about a second: the 2M-dir fleet's plan step peaked
~70 MiB lower. A 0 s decay returned them at once but made delta-rs writes and reads 1.8x slower (1 s: ~1.05x).

A value already in the environment (``_RJEM_MALLOC_CONF``, jemalloc's ``MALLOC_CONF`` under the prefix delta-rs'
build gives it) is kept; jemalloc reads it once, when the library loads.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ALLOCATOR_ENV", "RETURN_FREED_PAGES", "configure_allocator"]

ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"
RETURN_FREED_PAGES = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0"


def configure_allocator() -> None:
    """Set ``RETURN_FREED_PAGES`` unless the environment has a value (Linux only: jemalloc's background threads
    need it)."""
    if sys.platform.startswith("linux"):
        os.environ.setdefault(ALLOCATOR_ENV, RETURN_FREED_PAGES)
