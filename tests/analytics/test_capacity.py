"""Capacity figures against sums computed here from the rows the demo fixture wrote."""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import mean

import pytest

from pipelines.analytics import (
    disk_by_broker,
    disk_by_log_dir,
    disk_by_topic,
    open_warehouse,
    partitions_per_broker,
    top_topics,
)
from tests.analytics.demo_warehouse import per_key


@pytest.fixture(scope="module")
def wh(demo):
    return open_warehouse(str(demo.warehouse))


def test_open_warehouse_finds_the_only_cluster_and_orders_runs(demo, wh) -> None:
    assert wh.cluster == demo.cluster
    assert wh.runs()["run_id"].tolist() == demo.runs
    assert wh.latest_run() == demo.runs[-1]


def test_disk_by_broker_sums_partition_dir_bytes(demo, wh) -> None:
    rows = demo.store().read_rows("partition_dirs", {"run_id": "run-2"})
    df = disk_by_broker(wh).set_index("broker_id")
    assert df["bytes"].to_dict() == per_key(rows, "broker_id")
    live = Counter(r["broker_id"] for r in rows if r["kind"] == "live")
    assert df["live_dirs"].to_dict() == dict(live)
    assert df["partition_dirs"].to_dict() == dict(Counter(r["broker_id"] for r in rows))
    assert df["share"].sum() == pytest.approx(1.0)


def test_earlier_run_is_reported_when_asked(demo, wh) -> None:
    rows = demo.store().read_rows("partition_dirs", {"run_id": "run-1"})
    assert disk_by_broker(wh, "run-1").set_index("broker_id")["bytes"].to_dict() == per_key(rows, "broker_id")
    assert disk_by_broker(wh, "run-1")["bytes"].sum() != disk_by_broker(wh, "run-2")["bytes"].sum()


def test_jbod_skew_is_bytes_over_the_broker_mean(demo, wh) -> None:
    rows = demo.store().read_rows("partition_dirs", {"run_id": "run-2"})
    per_dir: dict[tuple[int, str], int] = defaultdict(int)
    for r in rows:
        per_dir[(r["broker_id"], r["log_dir"])] += r["bytes"]
    df = disk_by_log_dir(wh)
    assert len(df) == 6
    for row in df.itertuples():
        mine = [v for (b, _), v in per_dir.items() if b == row.broker_id]
        assert row.bytes == per_dir[(row.broker_id, row.log_dir)]
        assert row.skew == pytest.approx(row.bytes / mean(mine))
        assert row.share_of_broker == pytest.approx(row.bytes / sum(mine))


def test_topics_ranked_by_bytes(demo, wh) -> None:
    rows = demo.store().read_rows("partition_dirs", {"run_id": "run-2"})
    expected = per_key([r for r in rows if r["topic"]], "topic")
    df = disk_by_topic(wh)
    assert df.set_index("topic")["bytes"].to_dict() == expected
    top = top_topics(wh, 3)
    assert top["topic"].tolist() == sorted(expected, key=lambda t: (-expected[t], t))[:3]
    assert top["share"].iloc[0] == pytest.approx(expected[top["topic"].iloc[0]] / sum(expected.values()))


def test_partitions_per_broker_compares_disk_with_assignment(demo, wh) -> None:
    store = demo.store()
    rows = store.read_rows("partition_dirs", {"run_id": "run-2"})
    parts = store.read_rows("controller_partitions", {"run_id": "run-2"})
    assigned = Counter(b for p in parts for b in p["replicas"])
    df = partitions_per_broker(wh).set_index("broker_id")
    for broker in df.index:
        live = sum(1 for r in rows if r["broker_id"] == broker and r["kind"] == "live")
        assert df.loc[broker, "live"] == live
        assert df.loc[broker, "assigned"] == assigned[broker]
        assert df.loc[broker, "unaccounted_live"] == live - assigned[broker]
    assert df[["live", "delete", "future", "stray", "other"]].to_numpy().sum() == len(rows)
