"""The unexplained-bytes ledger: what the filesystem says is used against what the crawl can account for.

Per log dir: ``fs_used_bytes`` (``statvfs`` during the crawl; NULL where the backend cannot tell) minus
``attributed_bytes`` (partition dirs + Kafka's known root files). A positive gap is space no partition explains:
other files on the disk, deleted-but-open segments, filesystem overhead. A negative gap means the attributed
apparent sizes exceed the blocks in use (sparse or compressed files).

Several log dirs on ONE filesystem report the same statvfs totals; :func:`filesystem_ledger` counts such a
filesystem once (log dirs of a broker reporting identical total, used and free bytes are taken to share it).
"""

from __future__ import annotations

import pandas as pd

from pipelines.analytics.warehouse import Warehouse

__all__ = ["filesystem_ledger", "unexplained_ledger"]

_FS_KEY = ["fs_total_bytes", "fs_used_bytes", "fs_free_bytes"]


def unexplained_ledger(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per log dir: ``fs_total_bytes, fs_used_bytes, attributed_bytes, partition_bytes, root_bytes,
    unexplained_bytes, unexplained_share, shared_fs`` (another log dir of the broker reports the same totals)."""
    run = wh.run_or_latest(run_id)
    ld = wh.frame("log_dirs", {"run_id": run}) if run else wh.frame("log_dirs")
    pdirs = wh.frame("partition_dirs", {"run_id": run}) if run else wh.frame("partition_dirs")
    part = pdirs.groupby(["broker_id", "log_dir"])["bytes"].sum()
    out = ld[["broker_id", "log_dir", *_FS_KEY, "attributed_bytes"]].copy()
    out["partition_bytes"] = [int(part.get((b, d), 0)) for b, d in zip(out["broker_id"], out["log_dir"], strict=True)]
    out["attributed_bytes"] = out["attributed_bytes"].fillna(0).astype("int64")
    out["root_bytes"] = out["attributed_bytes"] - out["partition_bytes"]
    used = out["fs_used_bytes"].astype("Float64")
    out["unexplained_bytes"] = (used - out["attributed_bytes"]).astype("Int64")
    out["unexplained_share"] = (out["unexplained_bytes"] / used).where(used > 0).astype("Float64")
    same = out.groupby(["broker_id", *_FS_KEY], dropna=False)["log_dir"].transform("size")
    out["shared_fs"] = (same > 1) & out["fs_used_bytes"].notna()
    return out.sort_values(["broker_id", "log_dir"]).reset_index(drop=True)


def filesystem_ledger(wh: Warehouse, run_id: str | None = None) -> pd.DataFrame:
    """Per broker filesystem (log dirs with identical statvfs totals): ``log_dirs`` (names), ``fs_used_bytes``
    counted once, ``attributed_bytes`` summed, ``unexplained_bytes``. Log dirs without totals are left out."""
    led = unexplained_ledger(wh, run_id)
    led = led[led["fs_used_bytes"].notna()]
    out = led.groupby(["broker_id", *_FS_KEY], as_index=False).agg(
        log_dirs=("log_dir", lambda s: sorted(s)), attributed_bytes=("attributed_bytes", "sum"))
    out["unexplained_bytes"] = (out["fs_used_bytes"] - out["attributed_bytes"]).astype("int64")
    return out.sort_values(["broker_id", "unexplained_bytes"], ascending=[True, False]).reset_index(drop=True)
