"""The remote tier's bytes (KIP-405) of one run, beside the local ones: per class and per topic, from
``remote_findings`` (bytes are the listing's sizes; ``remote_ok`` included, so the tier's whole size shows)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipelines.analytics.warehouse import Warehouse

__all__ = ["RemoteView", "not_configured", "remote_by_class", "remote_by_topic", "remote_figures", "remote_view"]

#: Columns of :class:`RemoteView`'s tables (the fleet's ``by_class`` adds ``clusters``; its ``by_cluster_class`` and
#: ``top_topics`` start with ``cluster``).
BY_CLUSTER_COLUMNS = ("cluster", "run_id", "local_bytes", "local_reclaimable_bytes", "remote_segments",
                      "remote_bytes", "remote_plannable_bytes")
CLASS_COLUMNS = ("class", "segments", "bytes", "plannable_bytes")
TOPIC_COLUMNS = ("topic", "segments", "bytes", "plannable_bytes", "local_bytes")


@dataclass(frozen=True)
class RemoteView:
    """The remote tier beside the local bytes, for one cluster or the fleet. ``configured`` is False when there is
    nothing remote to show (``note`` says why); the tables are then empty but for ``by_cluster``, whose remote
    columns are NULL."""

    configured: bool
    note: str
    by_cluster: pd.DataFrame
    by_class: pd.DataFrame
    by_cluster_class: pd.DataFrame
    top_topics: pd.DataFrame


def not_configured(why: str) -> RemoteView:
    """A view saying the remote tier is not configured (``why``), with empty tables."""
    return RemoteView(False, f"The remote tier is not configured: {why}.", pd.DataFrame(columns=BY_CLUSTER_COLUMNS),
                      pd.DataFrame(columns=CLASS_COLUMNS), pd.DataFrame(columns=["cluster", *CLASS_COLUMNS]),
                      pd.DataFrame(columns=TOPIC_COLUMNS))


def _findings(wh: Warehouse, run_id: str | None) -> pd.DataFrame:
    run = wh.run_or_latest(run_id)
    f = wh.frame("remote_findings", {"run_id": run}) if run else wh.frame("remote_findings").iloc[0:0]
    return f.assign(bytes=f["bytes"].fillna(0).astype("int64"), plannable=f["plannable"].eq(True))


def _summary(f: pd.DataFrame, key: str) -> pd.DataFrame:
    f = f.assign(plannable_bytes=f["bytes"].where(f["plannable"], 0))
    out = f.groupby(key, as_index=False).agg(segments=("segment_id", "size"), bytes=("bytes", "sum"),
                                             plannable_bytes=("plannable_bytes", "sum"))
    return out.sort_values(["bytes", key], ascending=[False, True]).reset_index(drop=True)


def remote_by_class(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """``class``, ``segments``, ``bytes``, ``plannable_bytes`` of the run's remote segments (empty without any)."""
    return _summary(_findings(wh, run_id), "class")


def remote_by_topic(wh: Warehouse, run_id: str | None = None, n: int = 10) -> pd.DataFrame:
    """The ``n`` topics with the most remote bytes: ``topic``, ``segments``, ``bytes``, ``plannable_bytes``."""
    f = _findings(wh, run_id)
    return _summary(f.assign(topic=f["topic"].fillna("(unknown)")), "topic").head(n)


def remote_view(wh: Warehouse, run_id: str | None = None, n: int = 10) -> RemoteView:
    """One cluster's :class:`RemoteView` for the run (default: the newest): ``by_cluster`` is its one row (remote
    columns NULL when the run has no ``remote_findings`` row), ``top_topics`` carries each topic's local bytes."""
    from pipelines.analytics import capacity, reclaim

    run = wh.run_or_latest(run_id)
    if not wh.store.exists("remote_findings"):
        return not_configured("this warehouse has no remote_findings table")
    f = _findings(wh, run)
    local = capacity.disk_by_topic(wh, run) if run else pd.DataFrame(columns=["topic", "bytes"])
    row = {"cluster": wh.cluster, "run_id": run,
           "local_bytes": int(capacity.disk_by_broker(wh, run)["bytes"].sum()) if run else 0,
           "local_reclaimable_bytes": int(reclaim.reclaimable_by_class(wh, run)["bytes"].sum()) if run else 0,
           "remote_segments": len(f) if len(f) else None, "remote_bytes": int(f["bytes"].sum()) if len(f) else None,
           "remote_plannable_bytes": int(f["bytes"].where(f["plannable"], 0).sum()) if len(f) else None}
    by_cluster = pd.DataFrame([row], columns=BY_CLUSTER_COLUMNS)
    for c in ("remote_segments", "remote_bytes", "remote_plannable_bytes"):
        by_cluster[c] = by_cluster[c].astype("Int64")
    if f.empty:
        return RemoteView(False, f"The remote tier is not configured, or was not listed: run {run} of {wh.cluster} "
                                 "has no remote_findings rows.", by_cluster,
                          pd.DataFrame(columns=CLASS_COLUMNS), pd.DataFrame(columns=["cluster", *CLASS_COLUMNS]),
                          pd.DataFrame(columns=TOPIC_COLUMNS))
    by_class = remote_by_class(wh, run)
    topics = remote_by_topic(wh, run, n).merge(local[["topic", "bytes"]].rename(columns={"bytes": "local_bytes"}),
                                               how="left", on="topic")
    topics["local_bytes"] = topics["local_bytes"].fillna(0).astype("int64")
    note = ("Bytes as listed in the tier (remote_ok included); plannable_bytes: segments a plan may hold; "
            "local_bytes: the crawl's partition-dir bytes.")
    return RemoteView(True, note, by_cluster, by_class, by_class.assign(cluster=wh.cluster)[["cluster",
                                                                                             *CLASS_COLUMNS]],
                      topics[list(TOPIC_COLUMNS)])


def remote_figures(wh: Warehouse, run_id: str | None = None) -> dict[str, object]:
    """The remote keys of :func:`~pipelines.analytics.report.key_figures`: ``remote_bytes``,
    ``remote_plannable_bytes`` (None when the run has no ``remote_findings`` row) and ``remote_bytes_by_class``."""
    f = _findings(wh, run_id)
    by_class = _summary(f, "class")
    return {"remote_bytes": int(f["bytes"].sum()) if len(f) else None,
            "remote_plannable_bytes": int(f["bytes"].where(f["plannable"], 0).sum()) if len(f) else None,
            "remote_bytes_by_class": {str(k): int(v) for k, v in zip(by_class["class"], by_class["bytes"],
                                                                      strict=True)}}
