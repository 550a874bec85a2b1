"""Reclaimable bytes, former topic names and the grace clock against the fixture's findings and events."""

from __future__ import annotations

from collections import defaultdict

import pytest

from pipelines.analytics import (
    former_topic_names,
    garbage_dirs,
    open_warehouse,
    reclaimable_by_broker,
    reclaimable_by_class,
)
from pipelines.detect.classes import DELETED_TOPIC, GARBAGE_CLASSES, RECREATED_TOPIC


@pytest.fixture(scope="module")
def wh(demo):
    return open_warehouse(str(demo.warehouse))


def _garbage(demo, run: str) -> list[dict]:
    return [r for r in demo.store().read_rows("findings", {"run_id": run})
            if r["class"] in GARBAGE_CLASSES and not r["protected"]]


def test_reclaimable_by_class_and_broker(demo, wh) -> None:
    rows = _garbage(demo, "run-2")
    assert rows, "the demo cluster must have garbage"
    by_class: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in rows:
        by_class[r["class"]][0] += 1
        by_class[r["class"]][1] += r["bytes"]
        by_class[r["class"]][2] += r["bytes"] if r["plannable"] else 0
    df = reclaimable_by_class(wh).set_index("class")
    assert {c: [int(df.loc[c, "dirs"]), int(df.loc[c, "bytes"]), int(df.loc[c, "plannable_bytes"])]
            for c in df.index} == dict(by_class)
    brokers = reclaimable_by_broker(wh).set_index("broker_id")
    assert brokers["bytes"].sum() == sum(r["bytes"] for r in rows)
    for b in brokers.index:
        assert brokers.loc[b, "classes"] == sorted({r["class"] for r in rows if r["broker_id"] == b})


def test_removed_dir_is_garbage_in_run_1_only(demo, wh) -> None:
    name = demo.removed_dir[2]
    assert name in set(garbage_dirs(wh, "run-1")["dir_name"])
    assert name not in set(garbage_dirs(wh, "run-2")["dir_name"])


def test_orphaned_ids_carry_the_names_they_had(demo, wh) -> None:
    events = demo.store().read_rows("metadata_events", {"cluster": demo.cluster})
    g = garbage_dirs(wh)
    orphaned = g[g["class"].isin([DELETED_TOPIC, RECREATED_TOPIC])]
    assert len(orphaned) >= 2
    for row in orphaned.itertuples():
        mine = sorted((e for e in events if e["topic_id"] == row.topic_id), key=lambda e: e["offset"])
        assert row.former_names == list(dict.fromkeys(e["topic"] for e in mine if e["topic"]))
        removed = [e["timestamp"] for e in mine if e["event"] == "topic_removed"]
        assert row.removed_at == max(removed)
    names = former_topic_names(wh).set_index("topic_id")
    deleted = orphaned[orphaned["class"] == DELETED_TOPIC].iloc[0]
    assert names.loc[deleted["topic_id"], "last_event"] == "topic_removed"


def test_garbage_days_is_the_grace_clock(demo, wh) -> None:
    rows = {(r["broker_id"], r["dir_name"]): r for r in _garbage(demo, "run-2")}
    g = garbage_dirs(wh)
    for row in g.itertuples():
        src = rows[(row.broker_id, row.dir_name)]
        expected = (src["detected_at"] - src["garbage_since"]).total_seconds() / 86400
        assert row.garbage_days == pytest.approx(expected)
    assert g["bytes"].is_monotonic_decreasing
