"""Open the warehouse with either engine, object-store settings included: the one place commands and jobs use.

``warehouse_store(url, options)`` gives the delta-rs store (CLI, plan step, executor); with ``engine="spark"`` and
a session it sets the session's s3a settings first and gives the delta-spark store, with a delta-rs store over the
same warehouse as its ``probe``. ``options`` are the config's
``warehouse_storage_options`` (they win over the standard AWS variables; see ``object_store``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pipelines.tables.object_store import warehouse_storage

if TYPE_CHECKING:
    from pipelines.tables.base import TableStore

__all__ = ["warehouse_store"]


def warehouse_store(url: str, options: Mapping[str, Any] | None = None, *, engine: str = "rust", spark: Any = None,
                    **kwargs: Any) -> TableStore:
    """The table store of ``engine`` over the warehouse at ``url``.

    Raises:
        ValueError: ``engine="spark"`` without a session.
    """
    storage = warehouse_storage(url, options)
    if engine == "spark":
        if spark is None:
            raise ValueError("the spark engine needs a session")
        from pipelines.tables.spark_engine import SparkTableStore

        storage.configure_spark(spark)
        probe = warehouse_store(url, options, storage_retry=kwargs.get("storage_retry"))
        return SparkTableStore(spark, url, secrets=storage.secrets, probe=probe, **kwargs)
    from pipelines.tables.rust_engine import RustTableStore

    return RustTableStore(url, storage_options=storage.delta_rs or None, secrets=storage.secrets, **kwargs)
