"""Where the bytes are: by broker, by log dir (JBOD skew), by topic; partition counts per broker.

Bytes are the apparent sizes the crawl summed per partition directory (``partition_dirs.bytes``) in one run
(default: the newest). Topic names are the ones parsed from directory names.
"""

from __future__ import annotations

import pandas as pd

from pipelines.analytics.warehouse import Warehouse

__all__ = ["disk_by_broker", "disk_by_log_dir", "disk_by_topic", "partitions_per_broker", "top_topics"]


def _dirs(wh: Warehouse, run_id: str | None) -> pd.DataFrame:
    run = wh.run_or_latest(run_id)
    df = wh.frame("partition_dirs", {"run_id": run}) if run else wh.frame("partition_dirs")
    df["bytes"] = df["bytes"].fillna(0).astype("int64")
    return df


def disk_by_broker(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """``broker_id, log_dirs, partition_dirs, live_dirs, bytes, live_bytes, share`` (share of the cluster's bytes)."""
    df = _dirs(wh, run_id)
    df["live_bytes"] = df["bytes"].where(df["kind"] == "live", 0)
    out = df.groupby("broker_id", as_index=False).agg(
        log_dirs=("log_dir", "nunique"), partition_dirs=("dir_name", "size"),
        live_dirs=("kind", lambda k: int((k == "live").sum())), bytes=("bytes", "sum"),
        live_bytes=("live_bytes", "sum"))
    total = out["bytes"].sum()
    out["share"] = out["bytes"] / total if total else 0.0
    return out.sort_values("broker_id").reset_index(drop=True)


def disk_by_log_dir(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per log dir: ``bytes``, ``partition_dirs``, ``share_of_broker`` and ``skew`` (bytes / the broker's mean).

    A skew well above 1 on one log dir means JBOD placement is uneven: that disk fills first.
    """
    df = _dirs(wh, run_id)
    out = df.groupby(["broker_id", "log_dir"], as_index=False).agg(
        partition_dirs=("dir_name", "size"), bytes=("bytes", "sum"))
    # log dirs the crawl saw without any partition dir still count (they pull the mean down)
    run = wh.run_or_latest(run_id)
    ld = wh.frame("log_dirs", {"run_id": run}) if run else wh.frame("log_dirs")
    if not ld.empty:
        out = ld[["broker_id", "log_dir"]].drop_duplicates().merge(out, how="left", on=["broker_id", "log_dir"])
        out[["partition_dirs", "bytes"]] = out[["partition_dirs", "bytes"]].fillna(0).astype("int64")
    broker_total = out.groupby("broker_id")["bytes"].transform("sum")
    broker_mean = out.groupby("broker_id")["bytes"].transform("mean")
    out["share_of_broker"] = (out["bytes"] / broker_total).where(broker_total > 0, 0.0)
    out["skew"] = (out["bytes"] / broker_mean).where(broker_mean > 0, 0.0)
    return out.sort_values(["broker_id", "log_dir"]).reset_index(drop=True)


def disk_by_topic(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per topic (as parsed from dir names): ``partition_dirs, live_dirs, brokers, bytes, live_bytes``."""
    df = _dirs(wh, run_id)
    df = df[df["topic"].notna()].copy()
    df["live_bytes"] = df["bytes"].where(df["kind"] == "live", 0)
    out = df.groupby("topic", as_index=False).agg(
        partition_dirs=("dir_name", "size"), live_dirs=("kind", lambda k: int((k == "live").sum())),
        brokers=("broker_id", "nunique"), bytes=("bytes", "sum"), live_bytes=("live_bytes", "sum"))
    return out.sort_values(["bytes", "topic"], ascending=[False, True]).reset_index(drop=True)


def top_topics(wh: Warehouse, n: int = 10, run_id: str | None = None) -> pd.DataFrame:
    """The ``n`` topics with the most bytes, with their ``share`` of all partition-dir bytes."""
    out = disk_by_topic(wh, run_id)
    total = out["bytes"].sum()
    out["share"] = out["bytes"] / total if total else 0.0
    return out.head(n).reset_index(drop=True)


def partitions_per_broker(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per broker: dirs on disk by kind (``live, delete, future, stray, other``) and ``assigned`` replicas.

    ``assigned`` counts the controller's replica assignments to the broker in the same run; ``live - assigned``
    is the number of live dirs the controller does not account for.
    """
    df = _dirs(wh, run_id)
    kinds = ["live", "delete", "future", "stray"]
    df["kind_group"] = df["kind"].where(df["kind"].isin(kinds), "other")
    counts = pd.crosstab(df["broker_id"], df["kind_group"]).reindex(columns=[*kinds, "other"], fill_value=0)
    out = counts.reset_index()
    out.columns.name = None
    run = wh.run_or_latest(run_id)
    parts = wh.frame("controller_partitions", {"run_id": run}) if run else wh.frame("controller_partitions")
    assigned = parts.explode("replicas").groupby("replicas").size() if not parts.empty else pd.Series(dtype=int)
    out["assigned"] = out["broker_id"].map(lambda b: int(assigned.get(b, 0)))
    out["unaccounted_live"] = out["live"] - out["assigned"]
    return out.sort_values("broker_id").reset_index(drop=True)
