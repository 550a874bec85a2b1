"""ZooKeeper-mode classes in BOTH classifiers (the Spark detector and the plain-Python re-check), on one cluster:
topics queued in ``/admin/delete_topics`` (pending, stuck with the reason), topics without a topic id (unknown),
and the ordinary classes beside them unchanged."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gc_cluster import DAY, NOW, Cluster, Part, uid

from pipelines.config.models import DetectConfig
from pipelines.detect import classes as C
from pipelines.plan.recheck import DirFacts, classify, live_copies

MINUTE = timedelta(minutes=1)
CONFIG = DetectConfig(grace_ms=86_400_000, stuck_topic_deletion_ms=3_600_000)
DOOMED, STALE, ORDERS, GONE, OTHER = uid(1), uid(2), uid(3), uid(4), uid(5)
HEX = "0123456789abcdef0123456789abcdef"


def zk_cluster() -> Cluster:
    """Brokers 1 and 2 registered; broker 3 holds replicas but is down (not in /brokers/ids)."""
    c = Cluster().broker(1, ("/a", None)).broker(2, ("/b", None))
    c.topic("doomed", DOOMED, p0=Part((1, 3))).queue_deletion("doomed", NOW - 10 * MINUTE)
    c.topic("stale", STALE, p0=Part((2, 3, 1), adding=(1,), removing=(3,))).queue_deletion("stale", NOW - 2 * DAY)
    c.topic("legacy", None, p0=Part((1, 2)), p1=Part((1, 2)))
    c.topic("orders", ORDERS, p0=Part((1, 2)))
    c.dir(1, "/a", "doomed-0", topic_id=DOOMED)
    c.dir(2, "/b", "stale-0", topic_id=STALE)
    c.dir(1, "/a", "legacy-0", pm="missing")  # written before Kafka 2.8: no partition.metadata
    c.dir(1, "/a", "legacy-1", topic_id=OTHER)  # an id the controller cannot confirm
    c.dir(2, "/b", f"legacy-0.{HEX}-delete", kind="delete", pm="missing", mtime=NOW - 30 * DAY)
    c.dir(1, "/a", "orders-0", topic_id=ORDERS)
    c.dir(2, "/b", "gone-0", topic_id=GONE)
    c.event(7, NOW - 5 * DAY, "topic_created", GONE, "gone").event(9, NOW - 3 * DAY, "topic_removed", GONE, "gone")
    return c


EXPECTED = {  # (broker, log dir, dir) -> (class, plannable)
    (1, "/a", "doomed-0"): (C.PENDING_TOPIC_DELETION, False),
    (2, "/b", "stale-0"): (C.STUCK_TOPIC_DELETION, False),
    (1, "/a", "legacy-0"): (C.UNKNOWN, False),
    (1, "/a", "legacy-1"): (C.UNKNOWN, False),
    (2, "/b", f"legacy-0.{HEX}-delete"): (C.UNKNOWN, False),
    (1, "/a", "orders-0"): (C.OK, False),
    (2, "/b", "gone-0"): (C.DELETED_TOPIC, True),
}


def _reasons_hold(reasons: dict[tuple[int, str, str], str]) -> None:
    stale = reasons[(2, "/b", "stale-0")]
    assert "replicas on brokers [1,2,3], not registered: [3]" in stale and "reassignment in progress" in stale
    doomed = reasons[(1, "/a", "doomed-0")]
    assert "queued for deletion 600000 ms ago" in doomed and "not registered: [3]" in doomed
    assert "reassignment" not in doomed
    assert "without a topic id" in reasons[(1, "/a", "legacy-1")]


def test_recheck_classifies_zookeeper_states() -> None:
    c = zk_cluster()
    image = c.image()
    facts = [DirFacts.from_partition_dir(r, None) for r in c.dirs]
    copies = live_copies(facts)
    got = {(f.broker_id, f.log_dir, f.dir_name): classify(f, image, copies=copies, config=CONFIG, now=NOW)
           for f in facts}
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in EXPECTED.items()}
    _reasons_hold({k: v[1] for k, v in got.items()})
    assert not any(C.is_plannable(cls, False) for key, (cls, _) in got.items() if key != (2, "/b", "gone-0"))


def test_a_deletion_becomes_stuck_at_the_threshold() -> None:
    c = zk_cluster()
    (f,) = [DirFacts.from_partition_dir(r, None) for r in c.dirs if r["dir_name"] == "doomed-0"]
    for age_minutes, want in ((59, C.PENDING_TOPIC_DELETION), (60, C.STUCK_TOPIC_DELETION)):
        cls, _ = classify(f, c.image(), copies={}, config=CONFIG, now=NOW + (age_minutes - 10) * MINUTE)
        assert cls == want, age_minutes


@pytest.mark.spark
def test_spark_detector_classifies_zookeeper_states(spark) -> None:
    from pipelines.detect.spark_detect import detect

    c = zk_cluster()
    rows = detect(spark, **c.dataframes(spark), config=CONFIG, now=NOW).collect()
    got = {(r.broker_id, r.log_dir, r.dir_name): (r["class"], r.plannable) for r in rows}
    assert got == EXPECTED
    _reasons_hold({(r.broker_id, r.log_dir, r.dir_name): r.reason for r in rows})
