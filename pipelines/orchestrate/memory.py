"""Give memory a finished step no longer uses back to the OS before the next step allocates its own.

pyarrow's allocator (mimalloc) keeps the pages of freed Arrow tables for reuse by later Arrow allocations. The
ingest of a fleet's image builds ~300 MB of Arrow rows; the plan step then allocates through other allocators
(Python objects for its items, delta-rs for its writes), so without a release the driver's RSS carries both.
"""

from __future__ import annotations

import gc


def release_unused_memory() -> None:
    """Collect unreachable Python objects, then return the Arrow pool's unused pages to the OS."""
    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
