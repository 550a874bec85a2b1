"""The remote tier (KIP-405) of the fleet view: every cluster's remote bytes beside its local ones, aggregated
inside delta-rs like the rest of :mod:`pipelines.analytics.fleet`.

Figures come from each cluster's newest crawl run's ``remote_findings`` (bytes as listed in the tier,
``remote_ok`` included, so a tier's whole size shows), exactly as :func:`~pipelines.analytics.remote_bytes.
remote_view` computes them for one cluster. A cluster whose newest run has no ``remote_findings`` row has *no*
remote figure (NULL / None), not 0: an older run's rows are never shown as current, and a tier that was not listed
is not an empty tier.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipelines.analytics.fleet import Fleet, fleet_by_cluster
from pipelines.analytics.remote_bytes import (
    BY_CLUSTER_COLUMNS,
    CLASS_COLUMNS,
    TOPIC_COLUMNS,
    RemoteView,
    not_configured,
)
from pipelines.tables.base import sql_literal

__all__ = ["fleet_remote_figures", "fleet_remote_view"]

_SUMS = ("count(*) AS segments, sum(coalesce(bytes, 0)) AS bytes, "
         "sum(CASE WHEN coalesce(plannable, FALSE) THEN coalesce(bytes, 0) ELSE 0 END) AS plannable_bytes")


def _newest_only(fleet: Fleet) -> str:
    """Rows of each cluster's newest run and no other: ``newest_filter`` (which prunes files by run id) AND the
    (cluster, run id) pairs, so that a run id of one cluster never brings another cluster's rows."""
    newest = fleet.newest_runs()
    if not newest:
        return "FALSE"
    pairs = " OR ".join(f"(cluster = {sql_literal(c, 'datafusion')} AND run_id = {sql_literal(r, 'datafusion')})"
                        for c, r in sorted(newest.items()))
    return f"({fleet.newest_filter()}) AND ({pairs})"


def _ints(df: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    for c in columns:
        df[c] = df[c].fillna(0).astype("int64")
    return df


def _by_cluster_class(fleet: Fleet) -> pd.DataFrame | None:
    """``cluster, class, segments, bytes, plannable_bytes`` of every cluster's newest run; None without the table."""
    df = fleet.sql(f"SELECT cluster, class, {_SUMS} FROM remote_findings WHERE {_newest_only(fleet)} "
                   "GROUP BY cluster, class", "remote_findings")
    if df is None:
        return None
    df = _ints(df, ("segments", "bytes", "plannable_bytes"))
    return df.sort_values(["cluster", "bytes", "class"], ascending=[True, False, True]).reset_index(drop=True)


def _top_topics(fleet: Fleet, n: int) -> pd.DataFrame:
    if n <= 0:
        return pd.DataFrame(columns=["cluster", *TOPIC_COLUMNS])
    top = fleet.sql(
        f"SELECT cluster, coalesce(topic, '(unknown)') AS topic, {_SUMS} FROM remote_findings "
        f"WHERE {_newest_only(fleet)} GROUP BY cluster, coalesce(topic, '(unknown)') "
        f"ORDER BY bytes DESC, cluster, topic LIMIT {int(n)}", "remote_findings")
    if top is None or top.empty:
        return pd.DataFrame(columns=["cluster", *TOPIC_COLUMNS])
    top = _ints(top, ("segments", "bytes", "plannable_bytes"))
    names = ", ".join(sql_literal(t, "datafusion") for t in sorted(set(top["topic"])))
    local = fleet.sql(
        "SELECT cluster, topic, sum(coalesce(bytes, 0)) AS local_bytes FROM partition_dirs "
        f"WHERE ({_newest_only(fleet)}) AND topic IN ({names}) GROUP BY cluster, topic", "partition_dirs")
    if local is not None:
        top = top.merge(local, how="left", on=["cluster", "topic"])
    top["local_bytes"] = top["local_bytes"].fillna(0).astype("int64") if "local_bytes" in top else 0
    return top[["cluster", *TOPIC_COLUMNS]].reset_index(drop=True)


def fleet_remote_view(fleet: Fleet, n: int = 10) -> RemoteView:
    """The remote tier of every cluster's newest run beside its local bytes: ``by_cluster`` (every cluster with a
    crawl run; remote columns NULL where its newest run has no remote row), ``by_class`` (fleet totals, with how
    many ``clusters`` hold each class), ``by_cluster_class`` and the ``n`` (cluster, topic) pairs with the most
    remote bytes (``top_topics``, with the pair's local partition-dir bytes)."""
    groups = _by_cluster_class(fleet)
    if groups is None:
        return not_configured("this warehouse has no remote_findings table")
    local = fleet_by_cluster(fleet)
    per_cluster = groups.groupby("cluster", as_index=False)[["segments", "bytes", "plannable_bytes"]].sum()
    per_cluster = per_cluster.rename(columns={"segments": "remote_segments", "bytes": "remote_bytes",
                                              "plannable_bytes": "remote_plannable_bytes"})
    by_cluster = local[["cluster", "run_id", "bytes", "reclaimable_bytes"]].rename(
        columns={"bytes": "local_bytes", "reclaimable_bytes": "local_reclaimable_bytes"})
    by_cluster = by_cluster.merge(per_cluster, how="left", on="cluster")
    for c in ("remote_segments", "remote_bytes", "remote_plannable_bytes"):
        by_cluster[c] = by_cluster[c].astype("Int64")
    if groups.empty:
        return RemoteView(False, "The remote tier is not configured, or was not listed: no cluster's newest crawl run "
                                 "has remote_findings rows.", by_cluster[list(BY_CLUSTER_COLUMNS)],
                          pd.DataFrame(columns=[*CLASS_COLUMNS, "clusters"]),
                          pd.DataFrame(columns=["cluster", *CLASS_COLUMNS]),
                          pd.DataFrame(columns=["cluster", *TOPIC_COLUMNS]))
    by_class = groups.groupby("class", as_index=False).agg(
        segments=("segments", "sum"), bytes=("bytes", "sum"), plannable_bytes=("plannable_bytes", "sum"),
        clusters=("cluster", "nunique"))
    by_class = by_class.sort_values(["bytes", "class"], ascending=[False, True]).reset_index(drop=True)
    tiered = int(by_cluster["remote_bytes"].notna().sum())
    note = (f"{tiered} of {len(by_cluster)} clusters have remote segments in their newest run; bytes as listed in "
            "the tier (remote_ok included); plannable_bytes: segments a plan may hold; a blank remote figure: no "
            "remote_findings row in that cluster's newest run.")
    return RemoteView(True, note, by_cluster[list(BY_CLUSTER_COLUMNS)].reset_index(drop=True), by_class,
                      groups[["cluster", *CLASS_COLUMNS]], _top_topics(fleet, n))


def fleet_remote_figures(fleet: Fleet, view: RemoteView | None = None) -> dict[str, Any]:
    """The remote keys of :func:`~pipelines.analytics.fleet_figures.fleet_figures`: the fleet's ``remote_bytes``,
    ``remote_plannable_bytes``, ``remote_bytes_by_class`` (None, None, {} when no cluster has remote rows) and, per
    cluster, the same three keys. ``view``: the fleet's view when the caller already has it (the report)."""
    view = view if view is not None else fleet_remote_view(fleet, 0)
    rows = view.by_cluster.set_index("cluster") if len(view.by_cluster) else None
    per_cluster: dict[str, dict[str, Any]] = {}
    for cluster in [] if rows is None else rows.index:
        r = rows.loc[cluster]
        remote, plannable = r["remote_bytes"], r["remote_plannable_bytes"]
        classes = view.by_cluster_class[view.by_cluster_class["cluster"] == cluster]
        per_cluster[str(cluster)] = {
            "remote_bytes": None if pd.isna(remote) else int(remote),
            "remote_plannable_bytes": None if pd.isna(plannable) else int(plannable),
            "remote_bytes_by_class": {str(k): int(v) for k, v in zip(classes["class"], classes["bytes"], strict=True)},
        }
    known = view.by_cluster["remote_bytes"].dropna() if len(view.by_cluster) else pd.Series(dtype="Int64")
    return {
        "remote_bytes": int(known.sum()) if len(known) else None,
        "remote_plannable_bytes": (int(view.by_cluster["remote_plannable_bytes"].dropna().sum()) if len(known)
                                   else None),
        "remote_bytes_by_class": {str(k): int(v) for k, v in zip(view.by_class["class"], view.by_class["bytes"],
                                                                  strict=True)},
        "by_cluster": per_cluster,
    }
