"""The unexplained-bytes ledger and the trends across runs, against arithmetic on the stored rows."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from pipelines.analytics import (
    bytes_by_version,
    filesystem_ledger,
    growth_by_broker,
    growth_by_topic,
    open_warehouse,
    reclaimable_over_time,
    table_history,
    unexplained_ledger,
)
from pipelines.detect.classes import GARBAGE_CLASSES
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import LOG_DIRS, PARTITION_DIRS
from tests.analytics.demo_warehouse import GROWN_TOPIC_BYTES, per_key

AT = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def wh(demo):
    return open_warehouse(str(demo.warehouse))


def test_ledger_per_log_dir(demo, wh) -> None:
    store = demo.store()
    dirs = store.read_rows("log_dirs", {"run_id": "run-2"})
    parts = per_key([{**r, "k": (r["broker_id"], r["log_dir"])}
                     for r in store.read_rows("partition_dirs", {"run_id": "run-2"})], "k")
    df = unexplained_ledger(wh).set_index(["broker_id", "log_dir"])
    assert len(df) == len(dirs)
    for r in dirs:
        row = df.loc[(r["broker_id"], r["log_dir"])]
        assert r["fs_used_bytes"] is not None  # local crawl records statvfs
        assert row["unexplained_bytes"] == r["fs_used_bytes"] - r["attributed_bytes"]
        assert row["partition_bytes"] == parts[(r["broker_id"], r["log_dir"])]
        assert row["root_bytes"] == r["attributed_bytes"] - parts[(r["broker_id"], r["log_dir"])]
        assert 0 < row["root_bytes"] < 64 * 1024  # meta.properties, checkpoints: small known files


def _log_dir(broker: int, path: str, used: int | None, attributed: int) -> dict:
    totals = (None, None, None) if used is None else (1000_000, used, 1000_000 - used)
    row = {c: None for c in LOG_DIRS.column_names}
    row.update(run_id="r1", cluster="c", broker_id=broker, log_dir=path, attributed_bytes=attributed,
               fs_total_bytes=totals[0], fs_used_bytes=totals[1], fs_free_bytes=totals[2], crawled_at=AT)
    return row


def test_filesystem_ledger_counts_a_shared_filesystem_once(tmp_path: Path) -> None:
    store = RustTableStore(str(tmp_path), allow_foreign_tables=True)  # a fixture built without Spark
    store.create_if_missing(LOG_DIRS)
    store.create_if_missing(PARTITION_DIRS)
    store.append("log_dirs", [
        _log_dir(1, "/d0", 600_000, 100_000), _log_dir(1, "/d1", 600_000, 150_000),  # one disk, two log dirs
        _log_dir(1, "/d2", 300_000, 250_000), _log_dir(2, "/d0", None, 5_000),  # no statvfs on broker 2
    ])
    wh = open_warehouse(str(tmp_path))
    led = unexplained_ledger(wh).set_index(["broker_id", "log_dir"])
    assert led.loc[(1, "/d0"), "shared_fs"] and led.loc[(1, "/d1"), "shared_fs"]
    assert not led.loc[(1, "/d2"), "shared_fs"]
    assert led.loc[(1, "/d1"), "unexplained_bytes"] == 450_000
    assert pd.isna(led.loc[(2, "/d0"), "unexplained_bytes"])
    fs = filesystem_ledger(wh)
    assert sorted(map(tuple, fs["log_dirs"])) == [("/d0", "/d1"), ("/d2",)]
    shared = fs[fs["log_dirs"].map(len) == 2].iloc[0]
    assert shared["unexplained_bytes"] == 600_000 - 250_000
    assert fs["unexplained_bytes"].sum() == (600_000 - 250_000) + (300_000 - 250_000)


def test_growth_per_topic_and_broker(demo, wh) -> None:
    store = demo.store()
    before = per_key(store.read_rows("partition_dirs", {"run_id": "run-1"}), "topic")
    after = per_key(store.read_rows("partition_dirs", {"run_id": "run-2"}), "topic")
    topics = growth_by_topic(wh).set_index("topic")
    for t in (t for t in after if t is not None):
        assert topics.loc[t, "growth_bytes"] == after[t] - before.get(t, 0)
        assert topics.loc[t, "run-1"] == before.get(t, 0)
    grown_logs = [p for p in (demo.sim / "broker-1").glob(f"data-*/{demo.grown_topic}-*/*.log")]
    assert grown_logs
    assert topics.loc[demo.grown_topic, "growth_bytes"] == GROWN_TOPIC_BYTES * len(grown_logs)
    assert growth_by_topic(wh)["topic"].iloc[0] == demo.grown_topic
    brokers = growth_by_broker(wh).set_index("broker_id")
    b_before = per_key(store.read_rows("partition_dirs", {"run_id": "run-1"}), "broker_id")
    b_after = per_key(store.read_rows("partition_dirs", {"run_id": "run-2"}), "broker_id")
    assert brokers["growth_bytes"].to_dict() == {b: b_after[b] - b_before[b] for b in b_after}


def test_reclaimable_over_time(demo, wh) -> None:
    df = reclaimable_over_time(wh).set_index("run_id")
    for run in demo.runs:
        rows = [r for r in demo.store().read_rows("findings", {"run_id": run})
                if r["class"] in GARBAGE_CLASSES and not r["protected"]]
        assert df.loc[run, "reclaimable_bytes"] == sum(r["bytes"] for r in rows)
        assert df.loc[run, "plannable_bytes"] == sum(r["bytes"] for r in rows if r["plannable"])
    removed = demo.removed_dir
    assert df.loc["run-1", "reclaimable_dirs"] == df.loc["run-2", "reclaimable_dirs"] + 1, removed


def test_delta_history_and_time_travel(demo, wh) -> None:
    store = demo.store()
    hist = table_history(wh, "partition_dirs")
    assert hist["version"].tolist() == list(range(store.version("partition_dirs") + 1))
    by_version = bytes_by_version(wh, "partition_dirs").set_index("version")
    every = store.read_rows("partition_dirs")
    assert by_version["bytes"].iloc[-1] == sum(r["bytes"] for r in every)
    assert by_version["runs"].iloc[-1] == 2
    first_run = store.read_rows("partition_dirs", {"run_id": "run-1"})
    assert sum(r["bytes"] for r in first_run) in set(by_version["bytes"])
