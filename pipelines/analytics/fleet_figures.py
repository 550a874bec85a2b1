"""The fleet's key figures (the capacity notebook's JSON for ``cluster = None``): local figures from
:mod:`.fleet`, the remote tier's beside them from :mod:`.fleet_remote`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipelines.analytics.fleet import Fleet, fleet_by_class, fleet_by_cluster
from pipelines.analytics.fleet_remote import fleet_remote_figures
from pipelines.analytics.remote_bytes import RemoteView

__all__ = ["fleet_figures"]

#: A cluster's remote keys when the warehouse has no remote tier at all.
_NO_REMOTE: dict[str, Any] = {"remote_bytes": None, "remote_plannable_bytes": None, "remote_bytes_by_class": {}}


def fleet_figures(fleet: Fleet, remote_view: RemoteView | None = None) -> dict[str, Any]:
    """The fleet's headline numbers (sums over each cluster's newest run) and each cluster's, JSON-ready."""
    by = fleet_by_cluster(fleet)
    by_class = fleet_by_class(fleet)
    known = by["unexplained_bytes"].dropna()

    def cluster_row(r: Any) -> dict[str, Any]:
        return {"run_id": r.run_id, "partition_dirs": int(r.partition_dirs), "total_bytes": int(r.bytes),
                "brokers": int(r.brokers), "log_dirs": int(r.log_dirs), "reclaimable_dirs": int(r.reclaimable_dirs),
                "reclaimable_bytes": int(r.reclaimable_bytes), "plannable_bytes": int(r.plannable_bytes),
                "unexplained_bytes": None if pd.isna(r.unexplained_bytes) else int(r.unexplained_bytes)}

    remote = fleet_remote_figures(fleet, remote_view)
    return {
        "clusters": len(by),
        "runs": int(by["runs"].sum()) if len(by) else 0,
        "brokers": int(by["brokers"].sum()) if len(by) else 0,
        "log_dirs": int(by["log_dirs"].sum()) if len(by) else 0,
        "partition_dirs": int(by["partition_dirs"].sum()) if len(by) else 0,
        "total_bytes": int(by["bytes"].sum()) if len(by) else 0,
        "reclaimable_dirs": int(by["reclaimable_dirs"].sum()) if len(by) else 0,
        "reclaimable_bytes": int(by["reclaimable_bytes"].sum()) if len(by) else 0,
        "plannable_bytes": int(by["plannable_bytes"].sum()) if len(by) else 0,
        "reclaimable_by_class": {str(k): int(v) for k, v in zip(by_class["class"], by_class["bytes"], strict=True)},
        "unexplained_bytes": int(known.sum()) if len(known) else None,
        "remote_bytes": remote["remote_bytes"],
        "remote_plannable_bytes": remote["remote_plannable_bytes"],
        "remote_bytes_by_class": remote["remote_bytes_by_class"],
        "by_cluster": {str(r.cluster): {**cluster_row(r), **remote["by_cluster"].get(str(r.cluster), _NO_REMOTE)}
                       for r in by.itertuples(index=False)},
    }
