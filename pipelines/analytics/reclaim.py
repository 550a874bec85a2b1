"""Reclaimable bytes: garbage findings by class and by broker, the names orphaned ids used to have, grace age.

*Reclaimable* = a garbage class (``pipelines.detect.classes.GARBAGE_CLASSES``) and not protected; *plannable* is
the detector's verdict (grace elapsed, complete image) and is what a plan may contain today. The former names of
a topic id come from the durable ``metadata_events`` history, which outlives Kafka's own log truncation.
"""

from __future__ import annotations

import pandas as pd

from pipelines.analytics.warehouse import Warehouse
from pipelines.detect.classes import ALL_CLASSES, GARBAGE_CLASSES

__all__ = ["former_topic_names", "garbage_dirs", "reclaimable_by_broker", "reclaimable_by_class"]

_DAY_S = 86_400.0


def former_topic_names(wh: Warehouse) -> pd.DataFrame:
    """Per topic id ever seen in ``metadata_events``: ``former_names`` (oldest first), ``created_at``,
    ``removed_at`` (None while it exists) and ``last_event``."""
    ev = wh.frame("metadata_events")
    ev = ev[ev["topic_id"].notna()].sort_values("offset")
    if ev.empty:
        return pd.DataFrame(columns=["topic_id", "former_names", "created_at", "removed_at", "last_event"])

    def names(s: pd.Series) -> list[str]:
        return list(dict.fromkeys(n for n in s if isinstance(n, str)))

    out = ev.groupby("topic_id", as_index=False).agg(former_names=("topic", names), last_event=("event", "last"))
    created = ev[ev["event"] == "topic_created"].groupby("topic_id")["timestamp"].min()
    removed = ev[ev["event"] == "topic_removed"].groupby("topic_id")["timestamp"].max()
    out["created_at"] = out["topic_id"].map(created)
    out["removed_at"] = out["topic_id"].map(removed)
    return out


def garbage_dirs(wh: Warehouse, run_id: str | None = None, *, include_protected: bool = False) -> pd.DataFrame:
    """Every reclaimable dir of a run, largest first, with ``former_names``, ``removed_at`` and ``garbage_days``.

    ``garbage_days`` = days from ``garbage_since`` (the grace clock's start) to the detection time; NaN when the
    clock is unknown (such a dir is never plannable).
    """
    run = wh.run_or_latest(run_id)
    f = wh.frame("findings", {"run_id": run}) if run else wh.frame("findings")
    keep = f["class"].isin(sorted(GARBAGE_CLASSES))
    if not include_protected:
        keep &= ~f["protected"].fillna(False).astype(bool)
    g = f[keep].copy()
    g["bytes"] = g["bytes"].fillna(0).astype("int64")
    g["plannable"] = g["plannable"].fillna(False).astype(bool)
    g["partition"] = g["partition"].astype("Int64")
    names = former_topic_names(wh)[["topic_id", "former_names", "removed_at"]]
    # an empty side reads its ids as float64 (a warehouse with plans but no crawl run): ids are text on both sides
    g["topic_id"], names["topic_id"] = g["topic_id"].astype(object), names["topic_id"].astype(object)
    g = g.merge(names, how="left", on="topic_id")
    g["former_names"] = g["former_names"].map(lambda v: v if isinstance(v, list) else [])
    since = pd.to_datetime(g["garbage_since"], utc=True)
    at = pd.to_datetime(g["detected_at"], utc=True)
    g["garbage_days"] = (at - since).dt.total_seconds() / _DAY_S
    cols = ["broker_id", "log_dir", "dir_name", "class", "bytes", "plannable", "protected", "topic", "partition",
            "topic_id", "controller_topic_id", "former_names", "removed_at", "garbage_since", "garbage_days",
            "reason", "metadata_offset"]
    return g[cols].sort_values(["bytes", "broker_id", "dir_name"], ascending=[False, True, True]).reset_index(
        drop=True)


def _summary(g: pd.DataFrame, key: str) -> pd.DataFrame:
    g = g.assign(plannable_bytes=g["bytes"].where(g["plannable"], 0), plannable_dirs=g["plannable"].astype(int))
    out = g.groupby(key, as_index=False).agg(
        dirs=("dir_name", "size"), bytes=("bytes", "sum"), plannable_dirs=("plannable_dirs", "sum"),
        plannable_bytes=("plannable_bytes", "sum"), oldest_garbage_since=("garbage_since", "min"),
        max_garbage_days=("garbage_days", "max"))
    total = out["bytes"].sum()
    out["share"] = out["bytes"] / total if total else 0.0
    return out


def reclaimable_by_class(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per garbage class: ``dirs, bytes, plannable_dirs, plannable_bytes, oldest_garbage_since,
    max_garbage_days, share``; classes in ``ALL_CLASSES`` order."""
    out = _summary(garbage_dirs(wh, run_id), "class")
    order = {c: i for i, c in enumerate(ALL_CLASSES)}
    return out.sort_values("class", key=lambda s: s.map(order)).reset_index(drop=True)


def reclaimable_by_broker(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per broker: the same columns as :func:`reclaimable_by_class`, plus ``classes`` (distinct, sorted)."""
    g = garbage_dirs(wh, run_id)
    out = _summary(g, "broker_id")
    classes = g.groupby("broker_id")["class"].agg(lambda s: sorted(set(s)))
    out["classes"] = out["broker_id"].map(classes)
    return out.sort_values("broker_id").reset_index(drop=True)
