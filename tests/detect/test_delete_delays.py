"""Both classifiers (the Spark detector and the plan's plain-Python re-check) judge a `-delete` dir by the same
``log.segment.delete.delay.ms``: the broker's own dynamic value whether or not the broker is registered (a stopped
ZooKeeper-mode broker is not, yet keeps ``/config/brokers/<id>``), else the cluster-wide default, else the config's;
a value Kafka would not read as a LONG falls to the config's, as the re-check always did. Any disagreement would
stop the plan of the whole cluster (``PlanRecheckFailed``)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from gc_cluster import NOW, Cluster

from pipelines.config.models import DetectConfig
from pipelines.detect import classes as C
from pipelines.metadata.rows import kafka_long
from pipelines.plan.recheck import DirFacts, classify, live_copies

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
CONFIG = DetectConfig()  # delay 60 s, margin 1 h: a 2-hour-old -delete dir is stuck unless a dynamic delay says more
HEX = "0123456789abcdef0123456789abcdef"


def cluster() -> Cluster:
    c = Cluster(cluster_delete_delay_ms=str(DAY_MS))
    c.broker(1, ("/a", None))  # registered; the cluster default applies
    c.broker(2, ("/b", None), delete_delay_ms=" +1800000 ")  # registered; its own 30 min, as Kafka reads it
    c.broker(3, ("/c", None), delete_delay_ms=DAY_MS, running=False)  # stopped, its own 24 h
    c.broker(4, ("/d", None), running=False)  # stopped, no value of its own: the cluster's 24 h
    c.broker(5, ("/e", None), delete_delay_ms="1_000", running=False)  # not a LONG to Kafka: the config's 60 s
    for broker, log_dir in ((1, "/a"), (2, "/b"), (3, "/c"), (4, "/d"), (5, "/e")):
        c.dir(broker, log_dir, f"orders-{broker}.{HEX}-delete", kind="delete", pm="missing",
              mtime=NOW - timedelta(hours=2))
    return c


EXPECTED = {1: C.PENDING_DELETE, 2: C.STUCK_DELETE, 3: C.PENDING_DELETE, 4: C.PENDING_DELETE, 5: C.STUCK_DELETE}


def test_kafka_long_reads_a_config_as_kafka_does() -> None:
    assert [kafka_long(v) for v in ("86400000", " 5 ", "+7", "-1", "1_000", "1e3", "", "x", None)] == [
        86_400_000, 5, 7, -1, None, None, None, None, None]
    assert kafka_long(str(2**63)) is None and kafka_long(str(2**63 - 1)) == 2**63 - 1


def test_the_recheck_reads_a_stopped_brokers_own_delay_and_the_cluster_default() -> None:
    c = cluster()
    facts = [DirFacts.from_partition_dir(r, None) for r in c.dirs]
    copies = live_copies(facts)
    got = {f.broker_id: classify(f, c.image(), copies=copies, config=CONFIG, now=NOW)[0] for f in facts}
    assert got == EXPECTED


@pytest.mark.spark
def test_the_spark_detector_agrees_for_stopped_brokers(spark) -> None:
    from pipelines.detect.spark_detect import detect

    c = cluster()
    rows = detect(spark, **c.dataframes(spark), config=CONFIG, now=NOW).collect()
    assert {r.broker_id: r["class"] for r in rows} == EXPECTED
    assert {r.broker_id: json.loads(r.evidence)["controller"]["delete_delay_ms"] for r in rows} == {
        1: DAY_MS, 2: 1_800_000, 3: DAY_MS, 4: DAY_MS, 5: CONFIG.file_delete_delay_ms}
