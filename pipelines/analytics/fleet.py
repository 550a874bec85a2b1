"""The fleet view: every cluster of one warehouse side by side, aggregated inside delta-rs's query engine.

A fleet warehouse holds millions of partition-dir rows; these functions never bring them into Python. Each one
runs a ``GROUP BY`` in DataFusion (through ``deltalake.QueryBuilder``) over the few columns it needs, filtered by
(cluster, run id) so that files of other runs are pruned, and returns a small pandas frame: one row per cluster,
class, run or topic. Figures follow the single-cluster functions exactly (``capacity``, ``reclaim``, ``ledger``,
``trends``): a cluster's row here equals that cluster's :func:`~pipelines.analytics.report.key_figures`.

A cluster's *newest run* is its run with the latest ``log_dirs.crawled_at`` (ties: the greater run id), as
:meth:`~pipelines.analytics.warehouse.Warehouse.runs` orders them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

from pipelines.detect.classes import ALL_CLASSES, GARBAGE_CLASSES
from pipelines.tables.base import quote_ident, sql_literal
from pipelines.tables.object_store import warehouse_storage
from pipelines.tables.rust_engine import RustTableStore

__all__ = [
    "Fleet",
    "fleet_by_class",
    "fleet_by_cluster",
    "fleet_growth",
    "fleet_plans",
    "fleet_reclaimable_over_time",
    "fleet_runs",
    "fleet_top_topics",
    "open_fleet",
]

_GARBAGE = ", ".join(sql_literal(c, "datafusion") for c in sorted(GARBAGE_CLASSES))
#: reclaimable = a garbage class and not protected (``reclaim.garbage_dirs``)
_RECLAIMABLE = f"class IN ({_GARBAGE}) AND NOT coalesce(protected, FALSE)"


@dataclass
class Fleet:
    """Every cluster of a warehouse and each one's newest run. Query results are cached per SQL text."""

    store: RustTableStore
    _cache: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> str:
        return self.store.warehouse

    def sql(self, query: str, *tables: str) -> pd.DataFrame | None:
        """``query`` over ``tables`` (registered under their own names); None when one of them does not exist."""
        if query not in self._cache:
            if not all(self.store.exists(t) for t in tables):
                return None
            from deltalake import DeltaTable, QueryBuilder

            def run() -> pa.Table:
                qb = QueryBuilder()
                for t in tables:
                    qb.register(t, DeltaTable(self.store.table_uri(t), storage_options=self.store.storage_options))
                return pa.table(qb.execute(query).read_all())

            # the store's own guard: an unreachable store is retried, then one StorageUnavailable line (exit 10)
            self._cache[query] = self.store._guarded(run).to_pandas()
        return self._cache[query].copy()

    @property
    def clusters(self) -> list[str]:
        """Clusters with at least one crawl run (a log-dirs row), sorted."""
        return sorted(self.newest_runs())

    def newest_runs(self) -> dict[str, str]:
        """cluster → its newest run id."""
        runs = fleet_runs(self)
        newest = runs.sort_values(["cluster", "crawled_at", "run_id"]).groupby("cluster").tail(1)
        return dict(zip(newest["cluster"], newest["run_id"], strict=True))

    def newest_filter(self) -> str:
        """A DataFusion predicate selecting each cluster's newest run: ``run_id IN (...)``, which prunes the
        run-partitioned files (an OR of (cluster, run id) pairs alone does not, and costs 4x); the pairs are added
        only when one of those run ids also names another cluster's run (ids from before they were unique)."""
        newest = self.newest_runs()
        if not newest:
            return "FALSE"
        ids = sorted(set(newest.values()))
        where = f"run_id IN ({', '.join(sql_literal(r, 'datafusion') for r in ids)})"
        runs = fleet_runs(self)
        if not runs[runs["run_id"].isin(ids)].duplicated("run_id").any():
            return where
        either = " OR ".join(f"(run_id = {sql_literal(r, 'datafusion')} AND cluster = {sql_literal(c, 'datafusion')})"
                             for c, r in sorted(newest.items()))
        return f"{where} AND ({either})"


def open_fleet(warehouse: str, *, storage_options: Mapping[str, str] | None = None) -> Fleet:
    """The fleet view of ``warehouse`` (a directory or an object-store URL)."""
    if storage_options is None:  # the standard AWS variables for an s3:// warehouse (pipelines.tables.object_store)
        storage_options = warehouse_storage(warehouse).delta_rs or None
    return Fleet(RustTableStore(warehouse, storage_options=storage_options))


def _empty(columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()})


def fleet_runs(fleet: Fleet) -> pd.DataFrame:
    """Every crawl run of every cluster: ``cluster, run_id, crawled_at, brokers, log_dirs``, oldest first."""
    df = fleet.sql("SELECT cluster, run_id, max(crawled_at) AS crawled_at, count(DISTINCT broker_id) AS brokers, "
                   "count(*) AS log_dirs FROM log_dirs WHERE cluster IS NOT NULL GROUP BY cluster, run_id",
                   "log_dirs")
    if df is None:
        return _empty({"cluster": "object", "run_id": "object", "crawled_at": "datetime64[us, UTC]",
                       "brokers": "int64", "log_dirs": "int64"})
    return df.sort_values(["crawled_at", "cluster", "run_id"]).reset_index(drop=True)


def _garbage_by(fleet: Fleet, keys: str, where: str) -> pd.DataFrame | None:
    return fleet.sql(
        f"SELECT {keys}, count(*) AS dirs, sum(coalesce(bytes, 0)) AS bytes, "
        "sum(CASE WHEN coalesce(plannable, FALSE) THEN 1 ELSE 0 END) AS plannable_dirs, "
        "sum(CASE WHEN coalesce(plannable, FALSE) THEN coalesce(bytes, 0) ELSE 0 END) AS plannable_bytes "
        f"FROM findings WHERE ({where}) AND {_RECLAIMABLE} GROUP BY {keys}", "findings")


def _unexplained(fleet: Fleet) -> pd.Series:
    """cluster → unexplained bytes of its newest run, each filesystem counted once (``ledger.filesystem_ledger``)."""
    fs = fleet.sql(
        "SELECT cluster, broker_id, fs_used_bytes, sum(coalesce(attributed_bytes, 0)) AS attributed "
        f"FROM log_dirs WHERE ({fleet.newest_filter()}) AND fs_used_bytes IS NOT NULL "
        "GROUP BY cluster, broker_id, fs_total_bytes, fs_used_bytes, fs_free_bytes", "log_dirs")
    if fs is None or fs.empty:
        return pd.Series(dtype="Int64")
    fs["unexplained"] = fs["fs_used_bytes"] - fs["attributed"]
    return fs.groupby("cluster")["unexplained"].sum()


def fleet_by_cluster(fleet: Fleet) -> pd.DataFrame:
    """One row per cluster, from its newest run: ``cluster, run_id, crawled_at, runs, brokers, log_dirs,
    partition_dirs, bytes, live_bytes, share`` (of the fleet's bytes), ``reclaimable_dirs, reclaimable_bytes,
    plannable_dirs, plannable_bytes, unexplained_bytes`` (NULL where no filesystem totals were recorded)."""
    runs = fleet_runs(fleet)
    newest = fleet.newest_runs()
    columns = ["cluster", "run_id", "crawled_at", "runs", "brokers", "log_dirs", "partition_dirs", "bytes",
               "live_bytes", "share", "reclaimable_dirs", "reclaimable_bytes", "plannable_dirs", "plannable_bytes",
               "unexplained_bytes"]
    if not newest:
        return pd.DataFrame(columns=columns)
    out = runs[runs["run_id"] == runs["cluster"].map(newest)].copy()
    out["runs"] = out["cluster"].map(runs.groupby("cluster").size())
    where = fleet.newest_filter()
    dirs = fleet.sql("SELECT cluster, count(*) AS partition_dirs, sum(coalesce(bytes, 0)) AS bytes, "
                     "sum(CASE WHEN kind = 'live' THEN coalesce(bytes, 0) ELSE 0 END) AS live_bytes "
                     f"FROM partition_dirs WHERE {where} GROUP BY cluster", "partition_dirs")
    garbage = _garbage_by(fleet, "cluster", where)
    out = out.merge(dirs if dirs is not None else pd.DataFrame(columns=["cluster"]), how="left", on="cluster")
    if garbage is not None:
        garbage = garbage.rename(columns={"dirs": "reclaimable_dirs", "bytes": "reclaimable_bytes"})
        out = out.merge(garbage, how="left", on="cluster")
    counts = ["partition_dirs", "bytes", "live_bytes", "reclaimable_dirs", "reclaimable_bytes", "plannable_dirs",
              "plannable_bytes"]
    for c in counts:
        out[c] = out[c].fillna(0).astype("int64") if c in out else 0
    total = out["bytes"].sum()
    out["share"] = out["bytes"] / total if total else 0.0
    out["unexplained_bytes"] = out["cluster"].map(_unexplained(fleet)).astype("Int64")
    return out[columns].sort_values("cluster").reset_index(drop=True)


def fleet_by_class(fleet: Fleet) -> pd.DataFrame:
    """Reclaimable dirs and bytes per garbage class over every cluster's newest run: ``class, dirs, bytes,
    plannable_dirs, plannable_bytes, clusters, share``; classes in ``ALL_CLASSES`` order."""
    g = _garbage_by(fleet, "cluster, class", fleet.newest_filter())
    if g is None or g.empty:
        return pd.DataFrame(columns=["class", "dirs", "bytes", "plannable_dirs", "plannable_bytes", "clusters",
                                     "share"])
    out = g.groupby("class", as_index=False).agg(
        dirs=("dirs", "sum"), bytes=("bytes", "sum"), plannable_dirs=("plannable_dirs", "sum"),
        plannable_bytes=("plannable_bytes", "sum"), clusters=("cluster", "nunique"))
    total = out["bytes"].sum()
    out["share"] = out["bytes"] / total if total else 0.0
    order = {c: i for i, c in enumerate(ALL_CLASSES)}
    return out.sort_values("class", key=lambda s: s.map(order)).reset_index(drop=True)


def fleet_top_topics(fleet: Fleet, n: int = 10) -> pd.DataFrame:
    """The ``n`` (cluster, topic) pairs with the most bytes in their cluster's newest run: ``cluster, topic,
    partition_dirs, brokers, bytes, share`` (of the fleet's partition-dir bytes)."""
    top = fleet.sql(
        "SELECT cluster, topic, count(*) AS partition_dirs, count(DISTINCT broker_id) AS brokers, "
        f"sum(coalesce(bytes, 0)) AS bytes FROM partition_dirs WHERE ({fleet.newest_filter()}) AND topic IS NOT NULL "
        f"GROUP BY cluster, topic ORDER BY bytes DESC, cluster, topic LIMIT {int(n)}", "partition_dirs")
    if top is None or top.empty:
        return pd.DataFrame(columns=["cluster", "topic", "partition_dirs", "brokers", "bytes", "share"])
    total = int(fleet_by_cluster(fleet)["bytes"].sum())
    top["share"] = top["bytes"] / total if total else 0.0
    return top.reset_index(drop=True)


def _per_run(fleet: Fleet) -> pd.DataFrame:
    """Every run's ``total_bytes``, ``reclaimable_bytes``, ``plannable_bytes`` (all runs, all clusters)."""
    runs = fleet_runs(fleet)[["cluster", "run_id", "crawled_at"]]
    totals = fleet.sql("SELECT cluster, run_id, sum(coalesce(bytes, 0)) AS total_bytes FROM partition_dirs "
                       "GROUP BY cluster, run_id", "partition_dirs")
    garbage = _garbage_by(fleet, "cluster, run_id", "TRUE")
    for part in (totals, garbage):
        if part is not None:
            runs = runs.merge(part, how="left", on=["cluster", "run_id"])
    garbage_columns = {"dirs": "reclaimable_dirs", "bytes": "reclaimable_bytes"}
    runs = runs.rename(columns=garbage_columns)
    for c in ("total_bytes", "reclaimable_dirs", "reclaimable_bytes", "plannable_bytes"):
        runs[c] = runs[c].fillna(0).astype("int64") if c in runs else 0
    return runs


def fleet_reclaimable_over_time(fleet: Fleet) -> pd.DataFrame:
    """Per crawl day (UTC), the fleet's sum over clusters of each one's last run that day: ``day, clusters,
    total_bytes, reclaimable_bytes, plannable_bytes, reclaimable_share``, oldest first. A cluster without a run
    that day counts with its latest earlier run (its disks did not empty because it was not crawled)."""
    runs = _per_run(fleet)
    columns = ["day", "clusters", "total_bytes", "reclaimable_bytes", "plannable_bytes", "reclaimable_share"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    runs["day"] = runs["crawled_at"].dt.tz_convert("UTC").dt.normalize()
    last = runs.sort_values(["crawled_at", "run_id"]).groupby(["cluster", "day"]).tail(1)
    days = sorted(last["day"].unique())
    wide = last.pivot(index="day", columns="cluster", values=["total_bytes", "reclaimable_bytes", "plannable_bytes"])
    wide = wide.reindex(days).ffill()
    rows = []
    for day in days:
        row = wide.loc[day]
        total = int(row["total_bytes"].sum())
        reclaimable = int(row["reclaimable_bytes"].sum())
        rows.append({"day": day, "clusters": int(row["total_bytes"].notna().sum()), "total_bytes": total,
                     "reclaimable_bytes": reclaimable, "plannable_bytes": int(row["plannable_bytes"].sum()),
                     "reclaimable_share": reclaimable / total if total else 0.0})
    return pd.DataFrame(rows, columns=columns)


def fleet_growth(fleet: Fleet) -> pd.DataFrame:
    """Per cluster: partition-dir bytes of its first and newest run, ``growth_bytes`` and ``growth_pct``;
    fastest growing first."""
    runs = _per_run(fleet).sort_values(["crawled_at", "run_id"])
    columns = ["cluster", "runs", "first_run", "last_run", "first_bytes", "last_bytes", "growth_bytes", "growth_pct"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    g = runs.groupby("cluster")
    out = pd.DataFrame({"runs": g.size(), "first_run": g["run_id"].first(), "last_run": g["run_id"].last(),
                        "first_bytes": g["total_bytes"].first(), "last_bytes": g["total_bytes"].last()})
    out["growth_bytes"] = out["last_bytes"] - out["first_bytes"]
    out["growth_pct"] = out["growth_bytes"] / out["first_bytes"].where(out["first_bytes"] > 0) * 100
    out = out.reset_index()
    return out[columns].sort_values(["growth_bytes", "cluster"], ascending=[False, True]).reset_index(drop=True)


def fleet_plans(fleet: Fleet) -> pd.DataFrame:
    """Each cluster's newest GC plan (its JSON is not read): ``cluster, plan_id, status, created_at, item_count,
    total_bytes, plans`` (how many the cluster has)."""
    columns = ["cluster", "plan_id", "status", "created_at", "item_count", "total_bytes", "plans"]
    listed = ", ".join(quote_ident(c) for c in columns[:-1])
    df = fleet.sql(f"SELECT {listed} FROM gc_plans", "gc_plans")
    if df is None or df.empty:
        return pd.DataFrame(columns=columns)
    df["plans"] = df["cluster"].map(df.groupby("cluster").size())
    newest = df.sort_values(["created_at", "plan_id"]).groupby("cluster").tail(1)
    return newest[columns].sort_values("cluster").reset_index(drop=True)
