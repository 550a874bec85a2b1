"""Read-only access to a warehouse's Delta tables as pandas DataFrames, through delta-rs (no JVM).

Every analytics function takes a :class:`Warehouse`: the table store plus the one cluster it looks at. A missing
table reads as an empty frame with the table's columns, so a fresh warehouse gives empty answers, not errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from pipelines.errors import ConfigError
from pipelines.tables.object_store import warehouse_storage
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import ALL_TABLES

__all__ = ["Warehouse", "clusters_in", "open_warehouse"]

#: Tables with a ``cluster`` column that name the clusters of a warehouse, most telling first.
_CLUSTER_TABLES = ("crawl_runs", "log_dirs", "findings", "gc_plans")


@dataclass
class Warehouse:
    """One cluster's view of a warehouse. ``frame`` results are cached per (table, filter, version)."""

    store: RustTableStore
    cluster: str
    _cache: dict[tuple[Any, ...], pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> str:
        return self.store.warehouse

    def frame(self, table: str, where: Mapping[str, Any] | None = None, *, version: int | None = None,
              all_clusters: bool = False) -> pd.DataFrame:
        """Rows of ``table`` for this cluster (``where`` is an equality map), optionally at a Delta version."""
        columns = ALL_TABLES[table].column_names
        filters = dict(where or {})
        if not all_clusters and "cluster" in columns:
            filters.setdefault("cluster", self.cluster)
        key = (table, tuple(sorted((k, repr(v)) for k, v in filters.items())), version)
        if key not in self._cache:
            if not self.store.exists(table):
                self._cache[key] = pd.DataFrame({c: [] for c in columns})
            else:
                self._cache[key] = self.store.read_arrow(table, filters or None, version=version).to_pandas()
        return self._cache[key].copy()

    def runs(self) -> pd.DataFrame:
        """This cluster's crawl runs, oldest first: ``run_id``, ``crawled_at`` (newest log-dir crawl time)."""
        ld = self.frame("log_dirs")
        if ld.empty:
            return pd.DataFrame({"run_id": pd.Series(dtype=str), "crawled_at": pd.Series(dtype="datetime64[us, UTC]")})
        runs = ld.groupby("run_id", as_index=False)["crawled_at"].max()
        return runs.sort_values(["crawled_at", "run_id"]).reset_index(drop=True)

    def latest_run(self) -> str | None:
        runs = self.runs()
        return None if runs.empty else str(runs["run_id"].iloc[-1])

    def run_or_latest(self, run_id: str | None) -> str | None:
        return run_id if run_id is not None else self.latest_run()


def clusters_in(store: RustTableStore) -> list[str]:
    """Cluster names found in the warehouse's run, log-dir, findings and plan tables."""
    names: set[str] = set()
    for table in _CLUSTER_TABLES:
        if store.exists(table):  # only the one column, made distinct by delta-rs (a fleet's tables are large)
            def distinct(table: str = table) -> pa.Table:
                dt = DeltaTable(store.table_uri(table), storage_options=store.storage_options)
                return pa.table(QueryBuilder().register("t", dt).execute("SELECT DISTINCT cluster FROM t").read_all())

            names |= {n for n in store._guarded(distinct).column("cluster").to_pylist() if n}
    return sorted(names)


def open_warehouse(warehouse: str, cluster: str | None = None, *,
                   storage_options: Mapping[str, str] | None = None) -> Warehouse:
    """Open ``warehouse`` for ``cluster``; without a name, the warehouse must hold exactly one cluster.

    Raises:
        ConfigError: no cluster given and the warehouse holds none or several.
    """
    if storage_options is None:  # the standard AWS variables for an s3:// warehouse (pipelines.tables.object_store)
        storage_options = warehouse_storage(warehouse).delta_rs or None
    store = RustTableStore(warehouse, storage_options=storage_options)
    if cluster is None:
        names = clusters_in(store)
        if not names:
            raise ConfigError(f"{store.warehouse}: no cluster in this warehouse (no crawl run, log dir, finding or "
                              "plan): check --warehouse, or run `logdir-gc run` first; then name a cluster if several")
        if len(names) > 1:
            raise ConfigError(f"{store.warehouse}: name a cluster (found: {', '.join(names)})")
        cluster = names[0]
    return Warehouse(store, cluster)
