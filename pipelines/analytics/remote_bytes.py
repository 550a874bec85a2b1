"""The remote tier's bytes (KIP-405) of one run, beside the local ones: per class and per topic, from
``remote_findings`` (bytes are the listing's sizes; ``remote_ok`` included, so the tier's whole size shows)."""

from __future__ import annotations

import pandas as pd

from pipelines.analytics.warehouse import Warehouse

__all__ = ["remote_by_class", "remote_by_topic"]


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
