"""Trends across crawl runs: growth per topic and per broker, reclaimable bytes over time, Delta history.

Runs are read from the run-partitioned tables (every run's rows stay in ``partition_dirs`` and ``findings``) and
ordered by crawl time. :func:`table_history` and :func:`bytes_by_version` use Delta's own history and time
travel instead: they also show what a table looked like before a run's rows were replaced.
"""

from __future__ import annotations

import pandas as pd

from pipelines.analytics.reclaim import garbage_dirs
from pipelines.analytics.warehouse import Warehouse

__all__ = ["bytes_by_version", "growth_by_broker", "growth_by_topic", "reclaimable_over_time", "table_history"]


def _bytes_per_run(wh: Warehouse, key: str) -> pd.DataFrame:
    """``key`` × run_id matrix of partition-dir bytes, runs as columns in crawl order."""
    runs = wh.runs()["run_id"].tolist()
    df = wh.frame("partition_dirs")
    df = df[df[key].notna() & df["run_id"].isin(runs)]
    wide = df.pivot_table(index=key, columns="run_id", values="bytes", aggfunc="sum", fill_value=0)
    return wide.reindex(columns=runs, fill_value=0).astype("int64")


def _growth(wide: pd.DataFrame, key: str) -> pd.DataFrame:
    out = wide.copy()
    out.columns = [str(c) for c in out.columns]
    runs = list(out.columns)
    if runs:
        out["first_bytes"] = out[runs[0]]
        out["last_bytes"] = out[runs[-1]]
        out["growth_bytes"] = out["last_bytes"] - out["first_bytes"]
        out["last_step_bytes"] = out[runs[-1]] - out[runs[-2]] if len(runs) > 1 else 0
        out["growth_pct"] = (out["growth_bytes"] / out["first_bytes"].where(out["first_bytes"] > 0)) * 100
    out = out.reset_index().rename(columns={"index": key})
    if runs:
        out = out.sort_values(["growth_bytes", key], ascending=[False, True])
    return out.reset_index(drop=True)


def growth_by_topic(wh: Warehouse) -> pd.DataFrame:
    """Per topic: bytes in every run (one column per run id, oldest first), ``first_bytes``, ``last_bytes``,
    ``growth_bytes``, ``last_step_bytes`` (last run minus the one before) and ``growth_pct``; fastest first."""
    return _growth(_bytes_per_run(wh, "topic"), "topic")


def growth_by_broker(wh: Warehouse) -> pd.DataFrame:
    """Like :func:`growth_by_topic`, per broker."""
    return _growth(_bytes_per_run(wh, "broker_id"), "broker_id")


def reclaimable_over_time(wh: Warehouse) -> pd.DataFrame:
    """Per run (oldest first): ``crawled_at, total_bytes, reclaimable_dirs, reclaimable_bytes, plannable_bytes,
    reclaimable_share`` (of all partition-dir bytes in that run)."""
    rows = []
    totals = wh.frame("partition_dirs").groupby("run_id")["bytes"].sum()
    for run_id, at in zip(wh.runs()["run_id"], wh.runs()["crawled_at"], strict=True):
        g = garbage_dirs(wh, run_id)
        total = int(totals.get(run_id, 0))
        reclaimable = int(g["bytes"].sum())
        rows.append({"run_id": run_id, "crawled_at": at, "total_bytes": total, "reclaimable_dirs": len(g),
                     "reclaimable_bytes": reclaimable, "plannable_bytes": int(g.loc[g["plannable"], "bytes"].sum()),
                     "reclaimable_share": reclaimable / total if total else 0.0})
    return pd.DataFrame(rows, columns=["run_id", "crawled_at", "total_bytes", "reclaimable_dirs",
                                       "reclaimable_bytes", "plannable_bytes", "reclaimable_share"])


def table_history(wh: Warehouse, table: str, limit: int | None = None) -> pd.DataFrame:
    """Delta commits of ``table`` (all clusters), oldest first: ``version, timestamp, operation, rows_added``."""
    if not wh.store.exists(table):
        return pd.DataFrame(columns=["version", "timestamp", "operation", "rows_added"])
    rows = []
    for e in reversed(wh.store.history(table, limit)):
        added = e.metrics.get("num_added_rows") or e.metrics.get("numOutputRows")
        rows.append({"version": e.version, "timestamp": e.timestamp, "operation": e.operation,
                     "rows_added": int(added) if added not in (None, "", "None") else None})
    return pd.DataFrame(rows)


def bytes_by_version(wh: Warehouse, table: str = "partition_dirs", last: int = 10) -> pd.DataFrame:
    """Time travel: this cluster's total ``bytes`` and row count in ``table`` at each of its ``last`` versions.

    Shows how the table's content moved commit by commit (a run's rows appearing, or being replaced by a rerun).
    """
    if not wh.store.exists(table):
        return pd.DataFrame(columns=["version", "timestamp", "rows", "bytes", "runs"])
    history = table_history(wh, table).tail(last)
    rows = []
    for version, at in zip(history["version"], history["timestamp"], strict=True):
        df = wh.frame(table, version=int(version))
        rows.append({"version": int(version), "timestamp": at, "rows": len(df),
                     "bytes": int(df["bytes"].fillna(0).sum()) if len(df) else 0,
                     "runs": int(df["run_id"].nunique()) if len(df) else 0})
    return pd.DataFrame(rows)
