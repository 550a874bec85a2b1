"""JBOD in a real Kafka 4.x cluster: a replica moved between one broker's two log dirs (``AlterReplicaLogDirs``).

While the move runs Kafka copies the replica into ``<topic>-<p>.<uuid>-future`` in the target dir; when it has
caught up, the future log is promoted (renamed to ``<topic>-<p>``) and the old copy is renamed ``-delete``. The
crawl + classifier must see: the promoted dir ``ok`` (and the controller's directory assignment following it), the
old copy at most a pending ``-delete`` (never garbage, even when made old), and a ``-future`` caught in flight
``future_in_progress``. One broker with 2 log dirs; the in-flight move is held by a tiny
``replica.alter.log.dirs.io.max.bytes.per.second`` and a small ``replica.fetch.max.bytes``.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from cluster import KafkaCluster, wait_for
from jars import KAFKA_4, resolve_or_skip
from kafka import TopicPartitionReplica
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from pipelines.config.models import BrokerConfig, DetectConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.detect import classes as C
from pipelines.metadata import MetadataImage
from pipelines.plan.recheck import DirFacts, assigned_here, classify, live_copies

pytestmark = pytest.mark.integration

BROKER = 1
THROTTLE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    jars = resolve_or_skip(KAFKA_4)
    cluster = KafkaCluster(tmp_path_factory.mktemp("jbod"), jars, brokers=1,
                           broker_config={"replica.fetch.max.bytes": "16384"})
    with cluster.running():
        yield cluster


# ------------------------------------------------------------------------------------------------ helpers


def crawl(kafka: KafkaCluster) -> tuple[list[DirFacts], dict[str, str]]:
    """The broker's partition dirs as the classifier sees them, and log dir → its ``directory.id``."""
    node = kafka.brokers[BROKER]
    result = crawl_local([BrokerConfig(broker_id=BROKER, log_dirs=tuple(str(d) for d in node.log_dirs))],
                         run_id=f"it-{uuid.uuid4().hex[:8]}", cluster="it")
    assert not result.errors, result.errors
    dir_ids = {r["log_dir"]: r["directory_id"] for r in result.log_dirs}
    return [DirFacts.from_partition_dir(r, dir_ids[r["log_dir"]]) for r in result.partition_dirs], dir_ids


def classified(kafka: KafkaCluster, topic: str, image: MetadataImage,
               now: datetime | None = None) -> list[tuple[DirFacts, str]]:
    """Every dir of ``topic`` on the broker with its class."""
    facts, _ = crawl(kafka)
    copies = live_copies(facts)
    now = now or datetime.now(timezone.utc)
    return [(f, classify(f, image, copies=copies, config=DetectConfig(), now=now)[0])
            for f in facts if f.topic == topic]


def dirs_of(kafka: KafkaCluster, topic: str) -> list[Path]:
    pattern = re.compile(rf"{re.escape(topic)}-\d+(\.[0-9a-f]{{32}}-(delete|stray|future))?")
    return sorted(p for d in kafka.brokers[BROKER].log_dirs for p in d.iterdir() if pattern.fullmatch(p.name))


def create(kafka: KafkaCluster, topic: str, values: int, size: int) -> Path:
    """A one-partition topic on the broker with ``values`` records of ``size`` bytes; returns its live dir."""
    admin = kafka.admin()
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [BROKER]})])
        wait_for(f"topic {topic}", lambda: [p for p in dirs_of(kafka, topic) if p.name == f"{topic}-0"])
    finally:
        admin.close()
    kafka.produce(topic, [os.urandom(size) for _ in range(values)], partition=0)
    (live,) = dirs_of(kafka, topic)
    return live


def move(kafka: KafkaCluster, topic: str, target: Path) -> None:
    admin = kafka.admin()
    try:
        result = admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, BROKER): str(target)})
    finally:
        admin.close()
    assert [e.__name__ for e in result.values()] == ["NoError"], result


def set_throttle(kafka: KafkaCluster, value: str | None) -> None:
    """Set (or, with None, delete) the broker's dynamic alter-log-dirs throughput limit (incremental alter)."""
    admin = kafka.admin()
    try:
        op = ("SET", value) if value is not None else ("DELETE", None)
        resource = ConfigResource(ConfigResourceType.BROKER, str(BROKER), configs={THROTTLE_KEY: op})
        # kafka-python checks keys against the broker's *currently* dynamic ones unless told not to
        result = admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
    finally:
        admin.close()
    assert result == {"broker": {str(BROKER): "OK"}}, result


def other_dir(kafka: KafkaCluster, live: Path) -> Path:
    (target,) = [d for d in kafka.brokers[BROKER].log_dirs if d != live.parent]
    return target


def wait_promoted(kafka: KafkaCluster, topic: str, target: Path, timeout: float = 120) -> None:
    """Until the ``-future`` dir is gone and the live dir sits in ``target``."""
    wait_for(f"{topic}-0 promoted into {target}",
             lambda: (target / f"{topic}-0").is_dir()
             and not [p for p in dirs_of(kafka, topic) if p.name.endswith("-future")]
             and [p for p in dirs_of(kafka, topic) if "." not in p.name] == [target / f"{topic}-0"],
             timeout=timeout)


def assert_after_move(kafka: KafkaCluster, topic: str, target: Path) -> None:
    """The promoted dir is ok and assigned to its new log dir; nothing of the partition is plannable; an old
    copy still on disk is a ``-delete`` that stays pending even when made old (the replica is assigned here)."""
    _, dir_ids = crawl(kafka)
    new_id = dir_ids[str(target)]
    image = kafka.replayed_image(until=lambda i: str(i.topics.by_name[topic].partitions[0].directory_of(BROKER))
                     == new_id)
    seen = classified(kafka, topic, image)
    live = [(f, c) for f, c in seen if f.kind == "live"]
    assert [(f.log_dir, f.dir_name, c) for f, c in live] == [(str(target), f"{topic}-0", C.OK)], seen
    assert assigned_here(live[0][0], image) is not None
    for f, c in seen:
        assert not C.is_plannable(c, False), (f, c)
        assert f.kind in ("live", "delete"), f
    later = datetime.fromtimestamp(time.time() + 30 * 24 * 3600, timezone.utc)
    for f, c in classified(kafka, topic, image, now=later):
        assert not C.is_plannable(c, False), (f, c)
        if f.kind == "delete":
            assert c == C.PENDING_DELETE, (f, c)


# ------------------------------------------------------------------------------------------------ scenarios


def test_completed_move_between_log_dirs(kafka: KafkaCluster) -> None:
    live = create(kafka, "jbod_done", values=50, size=200)
    target = other_dir(kafka, live)
    before = kafka.replayed_image(until=lambda i: "jbod_done" in i.topics.by_name)
    _, dir_ids = crawl(kafka)
    assert str(before.topics.by_name["jbod_done"].partitions[0].directory_of(BROKER)) == dir_ids[str(live.parent)]

    move(kafka, "jbod_done", target)
    wait_promoted(kafka, "jbod_done", target)
    assert_after_move(kafka, "jbod_done", target)
    values = kafka.consume("jbod_done", [0], expected=50)
    assert len(values) == 50


def test_future_dir_in_flight_is_never_garbage(kafka: KafkaCluster) -> None:
    live = create(kafka, "jbod_slow", values=400, size=1000)
    target = other_dir(kafka, live)
    set_throttle(kafka, "1024")
    try:
        move(kafka, "jbod_slow", target)
        (future,) = wait_for("the -future dir in the target log dir",
                             lambda: [p for p in dirs_of(kafka, "jbod_slow") if p.name.endswith("-future")])
        assert future.parent == target
        image = kafka.replayed_image(until=lambda i: "jbod_slow" in i.topics.by_name)
        # Kafka creates the -future dir first and writes its partition.metadata a moment later (the file is
        # flushed lazily); in that window the dir is missing_partition_metadata, never plannable either
        for f, c in classified(kafka, "jbod_slow", image):
            assert not C.is_plannable(c, False), (f, c)
            assert c in ((C.FUTURE_IN_PROGRESS, C.MISSING_PARTITION_METADATA) if f.kind == "future" else (C.OK,))
        wait_for("partition.metadata in the -future dir", (future / "partition.metadata").is_file)
        seen = classified(kafka, "jbod_slow", image)
        in_flight = [(f.kind, f.log_dir) for f, _ in seen]
        # the move is still held by the throttle: the original dir and the future copy are both there
        assert sorted(in_flight) == sorted([("live", str(live.parent)), ("future", str(target))]), seen
        for f, c in seen:
            assert not C.is_plannable(c, False), (f, c)
            assert c == (C.FUTURE_IN_PROGRESS if f.kind == "future" else C.OK), (f, c)
            assert assigned_here(f, image) is not None
    finally:
        set_throttle(kafka, None)
    wait_promoted(kafka, "jbod_slow", target, timeout=180)
    assert_after_move(kafka, "jbod_slow", target)
