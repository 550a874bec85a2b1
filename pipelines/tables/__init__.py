"""Delta tables: one interface (``TableStore``), two engines (delta-spark, delta-rs), chosen by name.

Importing this package loads neither pyspark nor deltalake; engines are imported by ``open_store``/``get_engine``.
It sets how delta-rs' allocator returns memory (``rust_allocator``), which must happen before deltalake loads.
"""

from pipelines.tables.base import HistoryEntry, MergeCounts, RetryPolicy, TableStore
from pipelines.tables.registry import get_engine, known_engines, open_store, register_engine
from pipelines.tables.rust_allocator import configure_allocator

configure_allocator()

__all__ = [
    "HistoryEntry",
    "MergeCounts",
    "RetryPolicy",
    "TableStore",
    "get_engine",
    "known_engines",
    "open_store",
    "register_engine",
]
