"""Remote-tier leaks made by Apache Kafka itself, found by the product (issue 28 point 6).

A real Kafka 4.x KRaft cluster on loopback (1 controller, brokers 1 and 2, one log dir each) with tiered storage on:
the remote tier is Kafka's own ``LocalTieredStorage`` (its test jars) under one shared ``rsm.config.dir``, the
metadata manager Kafka's default ``TopicBasedRemoteLogMetadataManager`` (``__remote_log_metadata``, 3 partitions,
replicated on both brokers). Broker 2 runs the RSM with ``rsm.config.delete.enable=false``: its deletes are
no-ops, as on a store whose deletes do not take (the plugin says so itself, Kafka records them as done).

Five tiered topics, one partition each, get segments rolled by ``segment.ms`` until Kafka has copied them to the
tier and dropped their local copies (``local.retention.ms``); then Kafka makes the leaks, the test writes nothing
remote itself:

* ``tiered-live`` (broker 1) stays: its segments are live;
* ``tiered-nodelete`` (broker 2) is deleted while its leader runs: Kafka publishes ``DELETE_SEGMENT_FINISHED`` for
  every segment, its RSM deleted nothing (``remote_delete_leaked``);
* ``tiered-down`` (broker 1) is deleted while broker 1, its only replica and leader, is down: no broker is the
  leader when the deletion is applied, so nobody deletes its remote data, and the returning broker treats the
  partition as a stray (``remote_deleted_topic``);
* ``tiered-expired`` (broker 1) keeps remote data 4 s: Kafka deletes its segments for real (the control: an
  honest delete leaves an empty folder and nothing to find);
* ``tiered-stalled`` (broker 1) stays, but broker 1 is killed (SIGKILL) while uploading its first segment: the
  store is slowed by ``LocalTieredStorage``'s own ``transferer.class`` hook (:mod:`stalling_transferer`), Kafka
  published ``COPY_SEGMENT_STARTED`` and never more; after the restart Kafka copies the same offsets again under a
  new segment id and leaves the cut one with half a ``.log`` (``remote_copy_incomplete``, too recent to plan).

The product then reads what Kafka left: the brokers' real ``__remote_log_metadata-N`` replicas
(:mod:`pipelines.remote_tier.metadata_topic`, :func:`~pipelines.remote_tier.replay.replay`), the real remote
directory listed through fsspec (``local_tiered_storage`` layout) and the controller's replayed metadata log, and
:func:`~pipelines.remote_tier.classify.classify_remote` classes every segment.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cluster import KafkaCluster, wait_for
from jars import KAFKA_4, JarsUnavailable
from kafka.admin import NewTopic
from stalling_transferer import CLASS_NAME as TRANSFERER
from stalling_transferer import MARKER_ENV, TOPIC_ENV, compile_transferer
from tiered_cluster import (
    METADATA_PARTITIONS,
    TieredKafkaCluster,
    tiered_broker_config,
    tiered_or_skip,
    tiered_topic_config,
)

from pipelines.config.remote_tier import RemoteMetadataConfig
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import load_metadata
from pipelines.metadata.events import TOPIC_REMOVED
from pipelines.remote_tier.classify import ControllerTopics, RemoteFinding, classify_remote
from pipelines.remote_tier.events import SegmentEvent, SegmentState, event_to_record
from pipelines.remote_tier.listing import RemoteObjectRow
from pipelines.remote_tier.metadata_codec import encode_remote_record
from pipelines.remote_tier.metadata_consumer import LiveSource, live_coverage_facts, live_sources
from pipelines.remote_tier.metadata_sources import read_replica_at
from pipelines.remote_tier.metadata_topic import METADATA_TOPIC, MetadataCoverage, read_replicas_under
from pipelines.remote_tier.object_listing import list_location, listing_rows, open_location
from pipelines.remote_tier.replay import RemoteMetadataImage, replay

# ~90 s (a 3-JVM cluster, segments rolled by time, a broker killed and restarted): the second tier (CI budget)
pytestmark = [pytest.mark.integration, pytest.mark.second_tier]

LAYOUT = "local_tiered_storage"
SEGMENT_MS = 1500
ROUNDS = 4  # produce rounds, one segment each: ROUNDS - 1 closed (tiered) segments per topic, the last one active
PER_ROUND = 25
LIVE, NODELETE, DOWN, STALLED = "tiered-live", "tiered-nodelete", "tiered-down", "tiered-stalled"
EXPIRED = "tiered-expired"  # remote retention of 4 s: Kafka deletes its segments for real (broker 1 deletes)
LEADER = {LIVE: 1, NODELETE: 2, DOWN: 1, STALLED: 1, EXPIRED: 1}
EXTRA_CONFIG = {EXPIRED: {"retention.ms": "4000"}}
HOUR = 3_600_000


@dataclass
class Tiered:
    """The running cluster after Kafka made its leaks, and what the test knows independently of the product."""

    kafka: KafkaCluster
    rsm_dir: Path
    topic_ids: dict[str, Uuid]
    values: dict[str, list[bytes]]


def _values(topic: str, rnd: int) -> list[bytes]:
    return [f"{topic}-{rnd}-{i}".encode() * 8 for i in range(PER_ROUND)]


def _produce_rounds(kafka: KafkaCluster, topics: list[str]) -> dict[str, list[bytes]]:
    """``ROUNDS`` rounds of records, ``SEGMENT_MS`` apart: each round's first append rolls a new segment."""
    from kafka import KafkaProducer

    sent: dict[str, list[bytes]] = {t: [] for t in topics}
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", linger_ms=0, retries=5,
                             request_timeout_ms=30000)
    try:
        for rnd in range(ROUNDS):
            for t in topics:
                for v in _values(t, rnd):
                    producer.send(t, v, partition=0)
                    sent[t].append(v)
            producer.flush(90)
            if rnd < ROUNDS - 1:
                time.sleep(SEGMENT_MS / 1000 + 0.5)  # pacing the producer, not an assertion
    finally:
        producer.close(5)
    return sent


def _partition_dir(kafka: KafkaCluster, broker: int, topic: str) -> Path:
    return kafka.brokers[broker].log_dirs[0] / f"{topic}-0"


def _local_segments(kafka: KafkaCluster, broker: int, topic: str) -> list[str]:
    d = _partition_dir(kafka, broker, topic)
    return sorted(p.name for p in d.glob("*.log")) if d.is_dir() else []


def _remote_dir(rsm_dir: Path, topic: str, tid: Uuid) -> Path:
    return rsm_dir / "kafka-tiered-storage" / f"{topic}-0-{tid}"


def _remote_logs(rsm_dir: Path, topic: str, tid: Uuid) -> list[str]:
    d = _remote_dir(rsm_dir, topic, tid)
    return sorted(p.name for p in d.glob("*.log")) if d.is_dir() else []


def _metadata_image(kafka: KafkaCluster, as_of_ms: int | None = None
                    ) -> tuple[MetadataCoverage, RemoteMetadataImage, Any]:  # fmt: skip
    """The product's view of ``__remote_log_metadata``: every broker's replicas, the most complete per partition
    (``as_of_ms``: the replicas' time when it is known better than their files' mtime, see ``read_replica``)."""
    result = load_metadata(str(kafka.metadata_dir))
    image = result.image
    meta_topic = image.topics.by_name.get(METADATA_TOPIC)
    num = None if meta_topic is None else len(meta_topic.partitions)
    infinite = image.topic_config(METADATA_TOPIC, "retention.ms") == "-1" and \
        image.topic_config(METADATA_TOPIC, "retention.bytes") in (None, "-1")
    reads = [r for b in kafka.brokers.values() for d in b.log_dirs for r in read_replicas_under(d)]
    if as_of_ms is not None:
        reads = [replace(r, as_of_ms=as_of_ms) for r in reads]
    coverage = MetadataCoverage.from_replicas(reads, num, infinite)
    return coverage, replay(coverage.events()), result


def _states(kafka: KafkaCluster, tid: Uuid) -> dict[Uuid, SegmentState]:
    _cov, rimage, _res = _metadata_image(kafka)
    return {k[2]: s.state for k, s in rimage.segments.items() if k[0] == tid}


def _create(kafka: KafkaCluster, topics: list[str]) -> None:
    admin = kafka.admin()
    try:
        admin.create_topics([NewTopic(t, replica_assignments={0: [LEADER[t]]},
                                      topic_configs=tiered_topic_config(SEGMENT_MS, EXTRA_CONFIG.get(t)))
                             for t in topics])
        for t in topics:
            wait_for(f"topic {t} with a leader", lambda t=t: _led(admin, t))
    finally:
        admin.close()


def _led(admin: Any, topic: str) -> bool:
    (t,) = admin.describe_topics([topic])
    return t["error_code"] == 0 and bool(t["partitions"]) and all(p["leader_id"] >= 0 for p in t["partitions"])


def _delete(kafka: KafkaCluster, topic: str) -> None:
    """Delete ``topic``, retried: the admin client may first try a broker that was just killed."""
    def deleted() -> bool:
        admin = kafka.admin()
        try:
            if topic in admin.list_topics():
                admin.delete_topics([topic])
            return topic not in admin.list_topics()
        finally:
            admin.close()

    wait_for(f"deletion of {topic}", deleted, timeout=120, interval=1.0)


def _copy_started(kafka: KafkaCluster, tid: Uuid) -> bool:
    return SegmentState.COPY_SEGMENT_STARTED in _states(kafka, tid).values()


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tiered]:
    jars = tiered_or_skip(KAFKA_4)
    try:
        jars = replace(jars, classes=(compile_transferer(jars.version, jars.test_lib),))
    except JarsUnavailable as exc:
        pytest.skip(f"the stalling transferer cannot be compiled: {exc}")
    root = tmp_path_factory.mktemp("tiered-kraft")
    rsm_dir, marker = root / "remote", root / "stall-uploads"
    kafka = TieredKafkaCluster(root, jars, brokers=2, dirs_per_broker=1,
                               broker_config=tiered_broker_config(rsm_dir, metadata_replication=2),
                               per_broker={1: {"rsm.config.transferer.class": TRANSFERER},
                                           2: {"rsm.config.delete.enable": "false"}})
    marker.touch()
    with pytest.MonkeyPatch.context() as env:
        env.setenv(MARKER_ENV, str(marker))  # read by the brokers' JVMs, which inherit this environment
        env.setenv(TOPIC_ENV, STALLED)
        with kafka.running():
            yield _make_leaks(kafka, rsm_dir, marker)


def _make_leaks(kafka: KafkaCluster, rsm_dir: Path, marker: Path) -> Tiered:
    """Produce, let Kafka tier the segments, then have Kafka make the leaks; the tier is never written here."""
    topics = [LIVE, NODELETE, DOWN, STALLED, EXPIRED]
    _create(kafka, topics)
    image = kafka.replayed_image(lambda im: all(t in im.topics.by_name for t in topics))
    tids = {t: image.topics.by_name[t].topic_id for t in topics}
    values = _produce_rounds(kafka, topics)
    for t in (LIVE, NODELETE, DOWN):  # a local segment goes only once it is in the tier: one left = all copied
        wait_for(f"{t}'s closed segments copied and dropped locally",
                 lambda t=t: len(_local_segments(kafka, LEADER[t], t)) == 1
                 and len(_remote_logs(rsm_dir, t, tids[t])) >= ROUNDS - 1, timeout=180, interval=1.0)
        wait_for(f"{t}'s segments COPY_SEGMENT_FINISHED in {METADATA_TOPIC}",
                 lambda t=t: len(_states(kafka, tids[t])) >= ROUNDS - 1 and set(
                     _states(kafka, tids[t]).values()) == {SegmentState.COPY_SEGMENT_FINISHED},
                 timeout=120, interval=1.0)
    wait_for(f"{EXPIRED}'s segments deleted by remote retention",
             lambda: len(_states(kafka, tids[EXPIRED])) >= ROUNDS - 1
             and set(_states(kafka, tids[EXPIRED]).values()) == {SegmentState.DELETE_SEGMENT_FINISHED}
             and not _remote_logs(rsm_dir, EXPIRED, tids[EXPIRED]), timeout=120, interval=1.0)
    wait_for(f"{STALLED}'s first upload in flight", lambda: _remote_logs(rsm_dir, STALLED, tids[STALLED])
             and _copy_started(kafka, tids[STALLED]), timeout=120, interval=1.0)

    # (b) deleted by its running leader, whose RSM deletes nothing
    _delete(kafka, NODELETE)
    wait_for(f"{NODELETE}'s segments DELETE_SEGMENT_FINISHED", lambda: set(
        _states(kafka, tids[NODELETE]).values()) == {SegmentState.DELETE_SEGMENT_FINISHED}, timeout=120,
        interval=1.0)

    # (c) broker 1 killed while uploading a segment of STALLED; (a) DOWN deleted while broker 1, its only
    # replica and leader, is down
    node = kafka.brokers[LEADER[DOWN]]
    assert node.proc is not None
    os.killpg(node.proc.pid, signal.SIGKILL)
    node.proc.wait(30)
    _delete(kafka, DOWN)
    kafka.replayed_image(lambda im: DOWN not in im.topics.by_name)
    marker.unlink()  # the store is fast again once the broker is back
    kafka.start_broker(LEADER[DOWN])
    wait_for(f"broker {LEADER[DOWN]} done with {DOWN}'s partition dir",
             lambda: not _partition_dir(kafka, LEADER[DOWN], DOWN).exists(), timeout=120, interval=1.0)
    wait_for(f"{STALLED}'s segments copied again after the restart",
             lambda: len(_local_segments(kafka, LEADER[STALLED], STALLED)) == 1
             and list(_states(kafka, tids[STALLED]).values()).count(SegmentState.COPY_SEGMENT_FINISHED)
             >= ROUNDS - 1, timeout=180, interval=1.0)
    return Tiered(kafka, rsm_dir, tids, values)


def _findings(t: Tiered, now_ms: int, replicas_as_of_ms: int | None = None
              ) -> tuple[list[RemoteFinding], list[RemoteObjectRow]]:  # fmt: skip
    coverage, rimage, result = _metadata_image(t.kafka, replicas_as_of_ms)
    loc = open_location(t.rsm_dir.as_uri())
    rows = list(listing_rows(list_location(loc, LAYOUT), LAYOUT))
    removed = {e.topic_id: e.timestamp_ms for e in result.events if e.event == TOPIC_REMOVED}
    controller = ControllerTopics(frozenset(result.image.topics.by_id), result.image.complete, removed)
    return classify_remote(rimage, rows, controller, coverage, now_ms=now_ms, grace_ms=HOUR), rows


def _remote_files(rsm_dir: Path) -> dict[str, dict[str, int]]:
    """Independently of the product: topic -> segment id -> bytes of its files, from the tier's directory names
    (``<topic>-0-<22-char id>/<20-digit offset>-<22-char segment id>.<suffix>``)."""
    out: dict[str, dict[str, int]] = {}
    for part in (rsm_dir / "kafka-tiered-storage").iterdir():
        topic = part.name[: -len("-0-") - 22]
        for f in part.iterdir():
            sid = f.name[21:43]
            out.setdefault(topic, {})[sid] = out.get(topic, {}).get(sid, 0) + f.stat().st_size
    return out


S = SegmentState
#: per topic: segment state in Kafka's records -> (class, plannable once the grace has elapsed)
EXPECTED = {
    LIVE: {S.COPY_SEGMENT_FINISHED: ("remote_ok", False)},
    NODELETE: {S.DELETE_SEGMENT_FINISHED: ("remote_delete_leaked", True)},
    DOWN: {S.COPY_SEGMENT_FINISHED: ("remote_deleted_topic", True)},
    # the killed upload: never planned while the metadata replica is not a grace period newer than its event
    STALLED: {S.COPY_SEGMENT_FINISHED: ("remote_ok", False), S.COPY_SEGMENT_STARTED: ("remote_copy_incomplete", False)},
}


def test_kafka_made_leaks_are_found_exactly(tiered: Tiered) -> None:
    """Every segment Kafka left in the tier gets the class of what Kafka did to it; only the two leaks of deleted
    topics are plannable, and only once the grace has elapsed; no live segment is ever garbage."""
    on_disk = _remote_files(tiered.rsm_dir)
    assert set(on_disk) == set(EXPECTED)  # Kafka's leaks are there: both deleted topics' segments are still stored
    coverage, rimage, result = _metadata_image(tiered.kafka)
    assert not {NODELETE, DOWN} & set(result.image.topics.by_name)
    assert {LIVE, STALLED, EXPIRED} <= set(result.image.topics.by_name)
    # an honest delete (remote retention, the RSM deleting) leaves its folder empty, and nothing to find
    assert _remote_dir(tiered.rsm_dir, EXPIRED, tiered.topic_ids[EXPIRED]).is_dir() and EXPIRED not in on_disk
    recorded = {t: {str(k[2]): s for k, s in rimage.segments.items() if k[0] == tid}
                for t, tid in tiered.topic_ids.items()}
    # what Kafka recorded: the running leader's deletes as done (its RSM did nothing), the downed leader's as
    # nothing, the killed upload as started and never finished (and the same offsets copied again after restart)
    states = {t: [s.state for s in segs.values()] for t, segs in recorded.items()}
    assert set(states[NODELETE]) == {S.DELETE_SEGMENT_FINISHED}
    assert {s.broker_id for s in recorded[NODELETE].values()} == {LEADER[NODELETE]}
    assert set(states[DOWN]) == set(states[LIVE]) == {S.COPY_SEGMENT_FINISHED}
    assert states[STALLED].count(S.COPY_SEGMENT_STARTED) == 1
    (cut,) = [s for s in recorded[STALLED].values() if s.state == S.COPY_SEGMENT_STARTED]
    assert [s.start_offset for s in recorded[STALLED].values()].count(cut.start_offset) == 2
    # the real replicas: retention -1 read from the topic's config, every event in the partition the product's
    # partitioner names, each tiered partition's metadata partition read whole
    assert coverage.retention_infinite and coverage.num_partitions == METADATA_PARTITIONS
    for seg in rimage.segments.values():
        assert seg.metadata_partition == coverage.partition_for(seg.topic_id, seg.partition)
    assert all(coverage.unrecorded_reason(tid, 0) is None for tid in tiered.topic_ids.values())

    later = int(time.time() * 1000) + 2 * HOUR  # a run two hours on: the grace (1 h) has elapsed
    findings, rows = _findings(tiered, later)
    assert rows and not [r for r in rows if r.error]
    by_topic: dict[str, dict[str, RemoteFinding]] = {}
    for f in findings:
        assert f.topic_id == tiered.topic_ids[f.topic]
        by_topic.setdefault(f.topic, {})[str(f.segment_id)] = f
    for topic, classes in EXPECTED.items():
        segs = by_topic[topic]
        assert len(segs) >= ROUNDS - 1
        assert set(segs) == set(on_disk[topic]) == set(recorded[topic])  # exactly Kafka's segments, each once
        for sid, f in segs.items():
            assert (f.class_name, f.plannable) == classes[recorded[topic][sid].state], f.reason
            assert f.bytes == on_disk[topic][sid]
            assert all(k.startswith(f"kafka-tiered-storage/{topic}-0-{f.topic_id}/") for k in f.keys)
    assert {f.topic for f in findings if f.plannable} == {NODELETE, DOWN} and EXPIRED not in by_topic
    for f in by_topic[NODELETE].values():  # the state decides, the reason names both facts
        assert "DELETE_SEGMENT_FINISHED" in f.reason and "not a topic of the controller's image" in f.reason
    for f in by_topic[LIVE].values():
        assert f.reason.endswith("not plannable: report only") and f.garbage_since_ms is None
    cut_finding = by_topic[STALLED][str(cut.segment_id)]
    assert cut_finding.objects == 1 and cut_finding.keys[0].endswith(".log")  # cut after half of its .log
    assert "is not a grace period newer than the event" in cut_finding.reason

    findings_now, _ = _findings(tiered, int(time.time() * 1000))
    assert {str(f.segment_id) for f in findings_now} == {str(f.segment_id) for f in findings}
    assert not [f for f in findings_now if f.plannable]  # Kafka's deletes happened seconds ago: grace not elapsed
    assert all("grace not elapsed" in f.reason for f in findings_now if f.topic in (NODELETE, DOWN))


def _live_image(t: Tiered, topic: str = METADATA_TOPIC
                ) -> tuple[MetadataCoverage, RemoteMetadataImage, list[LiveSource]]:  # fmt: skip
    """The product's view of the metadata topic read from the LIVE cluster (``remote_tier.metadata.bootstrap_servers``):
    one read per partition up to the end offsets taken at the start, retention from the topic's config."""
    sources, notes = live_sources(RemoteMetadataConfig(bootstrap_servers=t.kafka.bootstrap), topic=topic)
    assert sources and not notes
    facts = live_coverage_facts(sources)
    assert facts is not None
    coverage = MetadataCoverage.from_replicas([read_replica_at(s) for s in sources], *facts)
    return coverage, replay(coverage.events()), sources


def test_the_live_consumer_finds_the_same_leaks_as_the_replicas(tiered: Tiered) -> None:
    """Issue 28 point 2, the live source: ``__remote_log_metadata`` consumed from the running brokers gives the very
    records the replica directories hold (same offsets, same decoded events) and the same ``remote_findings`` rows,
    Kafka's leaks found exactly as from the copied dirs."""
    live_cov, live_img, sources = _live_image(tiered)  # before the dirs: they hold at least the snapshot's records
    dir_cov, dir_img, result = _metadata_image(tiered.kafka)
    assert [s.metadata_partition for s in sources] == list(range(METADATA_PARTITIONS))
    assert live_cov.retention_infinite and live_cov.num_partitions == METADATA_PARTITIONS  # read from the cluster
    assert all(r.whole for r in live_cov.partitions.values())
    assert sum(r.event_count for r in live_cov.partitions.values()) > 0
    for s in sources:  # the snapshot: every record below the end offset, nothing missing, nothing else
        from_dirs = [e for e in dir_cov.partitions[s.metadata_partition].events if e.offset < s.end_offset]
        assert list(live_cov.partitions[s.metadata_partition].events) == from_dirs
    assert live_img.segments == {k: v for k, v in dir_img.segments.items() if k in live_img.segments}

    later = int(time.time() * 1000) + 2 * HOUR
    loc = open_location(tiered.rsm_dir.as_uri())
    rows = list(listing_rows(list_location(loc, LAYOUT), LAYOUT))
    removed = {e.topic_id: e.timestamp_ms for e in result.events if e.event == TOPIC_REMOVED}
    controller = ControllerTopics(frozenset(result.image.topics.by_id), result.image.complete, removed)
    live = classify_remote(live_img, rows, controller, live_cov, now_ms=later, grace_ms=HOUR)
    from_dirs = classify_remote(dir_img, rows, controller, dir_cov, now_ms=later, grace_ms=HOUR)
    def rows_of(findings: list[RemoteFinding]) -> list[dict[str, Any]]:
        """Rows, the replica's own time left out of the reasons (the files' mtime, or the live snapshot's time)."""
        rows = [{**r, "reason": re.sub(r"current up to [^)]*", "current up to T", r["reason"])}
                for r in (f.as_row("it", "r") for f in findings)]
        return sorted(rows, key=lambda r: (r["topic"], str(r["segment_id"])))

    assert rows_of(live) == rows_of(from_dirs) and len(live) >= 4 * (ROUNDS - 1)
    assert {(f.topic, f.class_name) for f in live if f.plannable} == {
        (NODELETE, "remote_delete_leaked"), (DOWN, "remote_deleted_topic")}
    on_disk = _remote_files(tiered.rsm_dir)
    assert {str(f.segment_id) for f in live if f.plannable} == set(on_disk[NODELETE]) | set(on_disk[DOWN])


def test_the_live_read_runs_in_spark_tasks(tiered: Tiered, spark: Any) -> None:
    """The step's read (one Spark task per partition, the live source pickled into it) ships the same events and
    summaries as the pure read."""
    from pipelines.remote_tier.spark_classify import choose_sources, metadata_frame

    sources, _notes = live_sources(RemoteMetadataConfig(bootstrap_servers=tiered.kafka.bootstrap))
    pure = {s.metadata_partition: read_replica_at(s) for s in sources}
    rows = [r.asDict() for r in metadata_frame(spark, sources).collect()]
    chosen = choose_sources(r for r in rows if r["_kind"] == "read")
    assert {mp: (r.source, r.first_offset, r.last_offset, r.event_count, r.whole) for mp, r in chosen.items()} == {
        mp: (r.source, r.first_offset, r.last_offset, len(r.events), r.whole) for mp, r in pure.items()}
    events = [r for r in rows if r["_kind"] == "event"]
    assert sorted((r["metadata_partition"], r["offset"], r["segment_id"], r["state"]) for r in events) == sorted(
        (e.metadata_partition, e.offset, str(e.segment_id), e.state) for r in pure.values() for e in r.events)


def test_the_run_step_reads_the_live_cluster(tiered: Tiered, spark: Any, tmp_path: Path) -> None:
    """``logdir-gc run``'s remote step configured with ``remote_tier.metadata.bootstrap_servers`` (its
    ``metadata_sources``, the coverage facts from the live cluster, one Spark task per partition) writes the
    ``remote_findings`` the copied replicas give: Kafka's two leaks plannable, every other segment not."""
    from pipelines.config.load import config_from_dict
    from pipelines.metadata.source import ControllerView
    from pipelines.orchestrate.remote_tier_step import remote_tier_step
    from pipelines.orchestrate.steps import of_run
    from pipelines.tables.schemas import ALL_TABLES
    from pipelines.tables.warehouse_store import warehouse_store

    result = load_metadata(str(tiered.kafka.metadata_dir))
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    config = config_from_dict({
        "cluster": "it", "warehouse": str(tmp_path / "warehouse"), "detect": {"grace_ms": HOUR},
        "remote_tier": {"layout": LAYOUT, "location": tiered.rsm_dir.as_uri(), "owned_prefix": "kafka-tiered-storage/",
                        "metadata": {"bootstrap_servers": tiered.kafka.bootstrap}}})
    store = warehouse_store(config.warehouse, engine="spark", spark=spark)
    for name in ("metadata_events", "remote_objects", "remote_log_segments", "remote_findings"):
        store.create_if_missing(ALL_TABLES[name])
    store.append("metadata_events", [
        {"cluster": "it", "offset": e.offset, "event": e.event, "topic_id": str(e.topic_id), "topic": e.topic,
         "timestamp": datetime.fromtimestamp(e.timestamp_ms / 1000, tz=timezone.utc), "source": "test", "run_id": "r"}
        for e in result.events if e.event == TOPIC_REMOVED])
    report = remote_tier_step(spark, store, config, "r", ControllerView(result.image, (), "test"), now=later)
    assert report.counts["metadata_partitions"] == report.counts["metadata_replicas"] == METADATA_PARTITIONS
    assert not [n for n in report.notes if METADATA_TOPIC in n]  # every partition read whole, retention -1
    rows = {r["segment_id"]: r for r in (x.asDict() for x in of_run(store, "remote_findings", "it", "r").collect())}
    pure, _objects = _findings(tiered, int(later.timestamp() * 1000))
    assert {sid: (r["class"], r["plannable"], r["bytes"]) for sid, r in rows.items()} == {
        str(f.segment_id): (f.class_name, f.plannable, f.bytes) for f in pure}
    assert {r["topic"] for r in rows.values() if r["plannable"]} == {NODELETE, DOWN}


BOMB_BYTES = 80 * 1024 * 1024
"""A record that zstd shrinks to a few KiB and that expands past the reader's 64 MiB bound."""


def _plant(t: Tiered, topic: str, config: dict[str, str], values: list[bytes]) -> None:
    """A topic holding ``values`` (zstd, one batch per value), produced by a real client through the real broker."""
    from kafka import KafkaProducer

    admin = t.kafka.admin()
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1]}, topic_configs=config)])
        wait_for(f"topic {topic} with a leader", lambda: _led(admin, topic))
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=t.kafka.bootstrap, compression_type="zstd", linger_ms=0,
                             max_request_size=BOMB_BYTES + (1 << 20), acks="all")
    try:
        for v in values:
            producer.send(topic, v, partition=0).get(90)
    finally:
        producer.close(5)


def test_live_reads_are_bounded_and_tell_what_may_be_unrecorded(tiered: Tiered) -> None:
    """Lies a real broker serves (no mock): a record whose batch expands past the reader's bound (64 MiB) is an
    error at its offset, never an allocation of its size, and the records around it are read; a partition whose
    earliest offset is not 0 (DeleteRecords) and a topic whose retention is not infinite both say that segments
    may be unrecorded, as the directory path does."""
    import tracemalloc

    from kafka import TopicPartition

    tid = Uuid.from_bytes(bytes([1]) * 16)
    good = [encode_remote_record(event_to_record(SegmentEvent(
        "t", tid, 0, Uuid.from_bytes(bytes([i + 2]) * 16), 0, 1, 1_000 + i, True, 0, 9, 10))) for i in range(5)]
    planted = "planted-remote-metadata"
    _plant(tiered, planted, {"retention.ms": "-1", "retention.bytes": "-1"}, [*good[:3], bytes(BOMB_BYTES), *good[3:]])
    admin = tiered.kafka.admin()
    try:
        admin.delete_records({TopicPartition(planted, 0): 1})  # the log start moves to offset 1
    finally:
        admin.close()
    sources, _ = live_sources(RemoteMetadataConfig(bootstrap_servers=tiered.kafka.bootstrap), topic=planted)
    [source] = sources
    assert (source.start_offset, source.end_offset) == (1, 6)
    tracemalloc.start()
    try:
        read = read_replica_at(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BOMB_BYTES  # kafka-python's own consumer holds the expanded record (and more) here
    assert [e.offset for e in read.events] == [1, 2, 4, 5]  # offset 0 deleted, 3 refused, the rest read
    assert read.unreliable_from == 3 and any("expands beyond 67108864 bytes" in p for p in read.problems)
    coverage = MetadataCoverage.from_replicas([read], *live_coverage_facts(sources))
    assert coverage.retention_infinite
    assert coverage.unrecorded_reason(tid, 0) == f"{METADATA_TOPIC}-0 was read from offset 1, not 0"

    finite = "planted-remote-metadata-finite"
    _plant(tiered, finite, {"retention.ms": str(7 * 24 * HOUR)}, good[:1])
    sources, _ = live_sources(RemoteMetadataConfig(bootstrap_servers=tiered.kafka.bootstrap), topic=finite)
    assert live_coverage_facts(sources) == (1, False)
    coverage = MetadataCoverage.from_replicas([read_replica_at(s) for s in sources], *live_coverage_facts(sources))
    assert coverage.partitions[0].whole
    assert coverage.unrecorded_reason(tid, 0) == f"{METADATA_TOPIC} retention is not infinite"


def test_live_tiered_topic_reads_from_offset_zero(tiered: Tiered) -> None:
    """The live topic's first records are only in the tier (local copies dropped), and a consumer from offset 0
    gets every record, in order."""
    local = _local_segments(tiered.kafka, LEADER[LIVE], LIVE)
    assert local and int(local[0][:20]) > 0
    got = tiered.kafka.consume(LIVE, expected=len(tiered.values[LIVE]))
    assert got == tiered.values[LIVE]


def test_local_crawl_of_tiered_brokers(tiered: Tiered) -> None:
    """The local side on tiered brokers: the remote index cache is no partition dir and no error, the metadata
    topic's replicas and the live tiered partitions (local log start far past 0) are ``ok``, the downed leader's
    renamed dir of the deleted topic is ``stray``."""
    from pipelines.config.models import BrokerConfig, DetectConfig
    from pipelines.crawl.local_crawl import crawl_local
    from pipelines.plan.recheck import DirFacts, classify, live_copies

    image = tiered.kafka.replayed_image()
    got: dict[tuple[str, str], set[str]] = {}
    for b, node in tiered.kafka.brokers.items():
        assert (node.log_dirs[0] / "remote-log-index-cache").is_dir()
        res = crawl_local([BrokerConfig(broker_id=b, log_dirs=tuple(str(d) for d in node.log_dirs))],
                          run_id="tiered-local", cluster="it")
        assert not res.errors
        ids = {r["log_dir"]: r["directory_id"] for r in res.log_dirs}
        facts = [DirFacts.from_partition_dir(r, ids[r["log_dir"]]) for r in res.partition_dirs]
        for f in facts:
            cls, _why = classify(f, image, copies=live_copies(facts), config=DetectConfig(),
                                 now=datetime.now(timezone.utc))
            got.setdefault((f.topic or "", f.kind), set()).add(cls)
    assert not [k for k in got if "remote-log-index-cache" in k[0]]
    assert got[(METADATA_TOPIC, "live")] == {"ok"}
    assert all(got[(t, "live")] == {"ok"} for t in (LIVE, STALLED, EXPIRED))
    assert got[(DOWN, "stray")] == {"stray"}


def test_the_leaders_real_lineage_keeps_every_live_segment_inside(tiered: Tiered) -> None:
    """Real caches after a leader restart and local retention: the leader's checkpoint ends in the controller's
    leader epoch (the step's rule for trusting it), and no live finished segment is outside it."""
    from real_lineages import crawled_lineages

    live = [tiered.topic_ids[t] for t in (LIVE, STALLED)]
    lineages = crawled_lineages(tiered.kafka.brokers, tiered.kafka.replayed_image(), live)
    assert set(lineages) == {(tid, 0) for tid in live}
    assert all(max(lin.epochs) == epoch and len(lin.epochs) > 1 for lin, epoch in lineages.values())
    coverage, rimage, result = _metadata_image(tiered.kafka)
    rows = list(listing_rows(list_location(open_location(tiered.rsm_dir.as_uri()), LAYOUT), LAYOUT))
    controller = ControllerTopics(frozenset(result.image.topics.by_id), result.image.complete, {})
    found = [f for f in classify_remote(rimage, rows, controller, coverage, now_ms=int(time.time() * 1000),
                                        grace_ms=HOUR, lineages={k: v[0] for k, v in lineages.items()})
             if f.topic_id in live and f.state == "COPY_SEGMENT_FINISHED"]
    assert len(found) >= 2 * (ROUNDS - 1) and {f.class_name for f in found} == {"remote_ok"}


def _tier_bytes(rsm_dir: Path, under: str = "kafka-tiered-storage") -> dict[str, bytes]:
    return {p.relative_to(rsm_dir).as_posix(): p.read_bytes() for p in (rsm_dir / under).rglob("*") if p.is_file()}


def test_apply_and_restore_the_kafka_made_leaks(tiered: Tiered, tmp_path: Path) -> None:
    """The plannable findings become a signed plan of remote items; ``apply --remote --execute`` quarantines exactly
    them (the live topics' other objects untouched; both live topics, one of which lost Kafka's cut upload, still
    read completely from offset 0), ``restore --remote`` puts every object back byte for byte."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute_remote"))
    from remote_world import approve, config_of, make_plan

    from pipelines.execute_remote.apply import RemoteTools, apply_remote
    from pipelines.execute_remote.restore_purge import restore_remote
    from pipelines.execute_remote.target import RemoteTarget
    from pipelines.execute_remote.tier_store import TierStore
    from pipelines.plan.remote_items import plan_remote_items
    from pipelines.tables.rust_engine import RustTableStore

    owned = "kafka-tiered-storage/"
    location = tiered.rsm_dir.as_uri()
    replicas = tiered.kafka.brokers[LEADER[LIVE]].log_dirs[0]  # a broker's log dir: its __remote_log_metadata-N
    target = RemoteTarget(location=location, layout=LAYOUT, owned_prefix=owned, metadata_source=str(replicas))
    tools = RemoteTools(target, TierStore.open(location, {}))
    # a run two days on (the host's grace floor, 1 day by default, elapsed), the brokers still running with no event
    # since: their live replicas are as current as that clock, so Kafka's cut upload is plannable too
    later = datetime.now(timezone.utc) + timedelta(days=2)
    later_ms = int(later.timestamp() * 1000)
    findings, rows = _findings(tiered, later_ms, replicas_as_of_ms=later_ms)
    planning = plan_remote_items([f.as_row("it", "run-1") for f in findings],
                                 [{**r.as_row(), "cluster": "it", "run_id": "run-1"} for r in rows],
                                 owned_prefix=owned, quarantine_folder=target.quarantine_folder)
    garbage = {str(f.segment_id) for f in findings if f.plannable}
    assert {i.segment_id for i in planning.items} == garbage
    assert {(f.topic, f.class_name) for f in findings if f.plannable} == {
        (NODELETE, "remote_delete_leaked"), (DOWN, "remote_deleted_topic"), (STALLED, "remote_copy_incomplete")}
    plan = make_plan(tuple(planning.items), plan_id="plan-tiered", created_hours_ago=0)
    config = config_of(tmp_path)
    config = config.model_copy(update={"metadata": config.metadata.model_copy(
        update={"source": str(tiered.kafka.metadata_dir)})})
    store = RustTableStore(str(tmp_path / "warehouse"))
    approve(store, plan, config)
    before = _tier_bytes(tiered.rsm_dir)

    done = apply_remote(config, store, plan.plan_id, execute=True, tools=tools, now=later)
    assert {i.action for i in done.items} == {"quarantined"}, [(i.item_id, i.reason) for i in done.items]
    after = _tier_bytes(tiered.rsm_dir)
    gone = {k for k in before if k.split("/")[-1][21:43] in garbage}
    assert gone and set(after) == set(before) - gone
    assert all(after[k] == before[k] for k in after)  # live topics' objects untouched
    quarantined = _tier_bytes(tiered.rsm_dir, target.quarantine_folder.rstrip("/"))
    assert {k.split("/", 2)[2]: v for k, v in quarantined.items()} == {k: before[k] for k in gone}
    for topic in (LIVE, STALLED):
        assert tiered.kafka.consume(topic, expected=len(tiered.values[topic])) == tiered.values[topic]

    restored = restore_remote(config, store, plan.plan_id, execute=True, tools=tools)
    assert not restored.failed and not restored.skipped and sorted(restored.restored) == sorted(
        i.item_id for i in planning.items)
    assert _tier_bytes(tiered.rsm_dir) == before  # byte-identical, every key back
    assert tiered.kafka.consume(LIVE, expected=len(tiered.values[LIVE])) == tiered.values[LIVE]
    assert tiered.kafka.consume(STALLED, expected=len(tiered.values[STALLED])) == tiered.values[STALLED]


def test_the_remote_executor_rechecks_the_live_topic(tiered: Tiered) -> None:
    """The remote executor's metadata re-check with ``remote_tier.metadata.bootstrap_servers``: the live topic
    replays to the segment states a copy of the replica dirs gives (every segment the live snapshot holds)."""
    from pipelines.execute_remote.recheck import load_remote_metadata
    from pipelines.execute_remote.target import RemoteTarget

    location = tiered.rsm_dir.as_uri()
    live_config = RemoteMetadataConfig(bootstrap_servers=tiered.kafka.bootstrap)
    live = load_remote_metadata(RemoteTarget(location=location, layout=LAYOUT, owned_prefix="kafka-tiered-storage/",
                                             metadata_live=live_config))
    replicas = tiered.kafka.brokers[LEADER[LIVE]].log_dirs[0]
    copied = load_remote_metadata(RemoteTarget(location=location, layout=LAYOUT, owned_prefix="kafka-tiered-storage/",
                                               metadata_source=str(replicas)))
    assert live is not None and copied is not None and live.segments
    assert {k: v.state for k, v in live.segments.items()} == {
        k: v.state for k, v in copied.segments.items() if k in live.segments}
