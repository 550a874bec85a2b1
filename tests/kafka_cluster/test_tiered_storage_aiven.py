"""The Aiven layout on moto's standalone S3 server: a tier recorded in the plugin's own formats, listed and classed
through ``s3://``.

Aiven's tiered-storage-for-apache-kafka jars are not served here (Maven Central has no release of its core, GitHub
release archives cannot be downloaded), so a broker cannot run it: the test records what the plugin writes instead,
byte for byte from its sources (:mod:`tests.remote_tier.aiven_objects`: keys, ``.log``/``.indexes``/
``.rsm-manifest`` objects, the manifest JSON, the ``CustomMetadata`` Kafka stores for it), and a
``__remote_log_metadata`` replica of two partitions written as Kafka's producer writes it
(:func:`~pipelines.remote_tier.metadata_writer.write_metadata_replica`; its bytes are checked against Kafka's own
serde in ``test_remote_kafka_vectors``).

The planted leaks are the plugin's known ones: a broker killed between ``.log`` and ``.rsm-manifest`` (no manifest,
``COPY_SEGMENT_STARTED`` only), a delete that failed midway (``DELETE_SEGMENT_STARTED``, objects left), a changed
``key.prefix`` (the plugin builds delete keys from the current prefix: the segment is ``DELETE_SEGMENT_FINISHED``
but its objects stay under the old one), a topic deleted while nobody led it, and objects no record names. Beside
them: a live segment, a deleted topic's segment whose manifest names another segment (a lying witness) and a key in
the plugin's pre-``.indexes`` format.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.aiven_manifest import parse_manifest
from pipelines.remote_tier.classify import ControllerTopics, RemoteFinding, classify_remote
from pipelines.remote_tier.events import SegmentEvent, SegmentState
from pipelines.remote_tier.listing import RemoteObjectRow
from pipelines.remote_tier.metadata_topic import MetadataCoverage, read_replica
from pipelines.remote_tier.metadata_writer import write_metadata_replica
from pipelines.remote_tier.object_listing import list_location, listing_rows, open_location
from pipelines.remote_tier.partitioner import metadata_partition
from pipelines.remote_tier.replay import replay
from tests.objectstore.conftest import Bucket, aws, bucket, moto  # noqa: F401 - the object-store fixtures
from tests.remote_tier.aiven_objects import AivenSegment

S = SegmentState
DAY = 86_400_000
NEW, OLD = "kafka/v2/", "kafka/v1/"  # the plugin's key.prefix now, and before the operator changed it
LIVE, GONE = Uuid(0x4F52444552530001, 0x0000000000000001), Uuid(0x5041594D454E5402, 0x0000000000000002)
METADATA_PARTITIONS = 2


def _sid(n: int) -> Uuid:
    return Uuid(0x5E6D000000000000 + n, 0x1000 + n)


def _segment(name: str, topic: str, tid: Uuid, partition: int, start: int, at: int) -> AivenSegment:
    n = sum(name.encode())
    return AivenSegment(topic, tid, partition, _sid(n), start, start + 99, 1, at, name.encode() * (300 + n % 50))


def _life(seg: AivenSegment, prefix: str, *states: int) -> list[SegmentEvent]:
    """The segment's events as the broker publishes them, the plugin's custom metadata on the first record."""
    first = SegmentEvent(seg.topic, seg.topic_id, seg.partition, seg.segment_id, S.COPY_SEGMENT_STARTED, 1,
                         seg.event_timestamp_ms, True, start_offset=seg.start_offset, end_offset=seg.end_offset,
                         size=len(seg.log), max_timestamp_ms=seg.event_timestamp_ms - 1,
                         leader_epochs=((0, seg.start_offset),), custom_metadata=seg.custom_metadata(prefix))
    return [first] + [SegmentEvent(seg.topic, seg.topic_id, seg.partition, seg.segment_id, s, 1,
                                   seg.event_timestamp_ms + i + 1, False) for i, s in enumerate(states)]


def _classify(aws: Bucket, replicas: Path, prefix: str, now_ms: int, deleted_at: int,  # noqa: F811
              ) -> tuple[list[RemoteFinding], list[RemoteObjectRow]]:
    """The product's path: the tier listed through ``s3://``, manifests read from it, the replica replayed."""
    coverage = MetadataCoverage.from_replicas(
        [read_replica(p) for p in sorted(replicas.iterdir())], METADATA_PARTITIONS, True)
    loc = open_location(f"s3://{aws.name}")
    rows = list(listing_rows(list_location(loc, "aiven", prefix), "aiven", prefix))
    manifests = {r.segment: parse_manifest(loc.fs.cat(loc.path(r.key)))
                 for r in rows if r.object_kind == "rsm-manifest"}
    controller = ControllerTopics(frozenset({LIVE}), True, {GONE: deleted_at})
    findings = classify_remote(replay(coverage.events()), rows, controller, coverage, now_ms=now_ms, grace_ms=DAY,
                               manifests=manifests)
    return findings, rows


def test_aiven_layout_leaks_found_through_s3(aws: Bucket, tmp_path: Path) -> None:  # noqa: F811
    now = int(time.time() * 1000)
    at = now - 10 * DAY
    seg = {
        "ok": _segment("ok", "orders", LIVE, 0, 0, at),
        "copy": _segment("copy", "orders", LIVE, 0, 100, at),
        "deleting": _segment("deleting", "orders", LIVE, 0, 200, at),
        "moved": _segment("moved", "orders", LIVE, 1, 0, at),
        "untracked": _segment("untracked", "orders", LIVE, 1, 500, at),
        "gone": _segment("gone", "pay-ments", GONE, 0, 0, at),
        "gone_lying": _segment("gone_lying", "pay-ments", GONE, 0, 100, at),
    }
    events = (_life(seg["ok"], NEW, S.COPY_SEGMENT_FINISHED) + _life(seg["copy"], NEW)
              + _life(seg["deleting"], NEW, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)
              + _life(seg["moved"], OLD, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED)
              + _life(seg["gone"], NEW, S.COPY_SEGMENT_FINISHED) + _life(seg["gone_lying"], NEW,
                                                                         S.COPY_SEGMENT_FINISHED))
    by_mp: dict[int, list[SegmentEvent]] = {p: [] for p in range(METADATA_PARTITIONS)}
    for e in events:
        by_mp[metadata_partition(e.topic_id, e.partition, METADATA_PARTITIONS)].append(e)
    replicas = tmp_path / "metadata-copy"
    for mp, evs in by_mp.items():
        write_metadata_replica(replicas, mp, evs)

    objects = {**seg["ok"].objects(NEW), **seg["copy"].objects(NEW, ("log", "indexes")),
               **seg["deleting"].objects(NEW, ("log", "rsm-manifest")), **seg["moved"].objects(OLD),
               **seg["untracked"].objects(NEW), **seg["gone"].objects(NEW),
               **seg["gone_lying"].objects(NEW, ("log", "indexes"))}
    objects[seg["gone_lying"].key(NEW, "rsm-manifest")] = seg["gone"].manifest()  # a witness naming another one
    legacy = f"{NEW}{seg['ok'].main}.timeindex"  # the plugin's per-index keys before its .indexes format
    objects[legacy] = b"t" * 40
    for key, data in objects.items():
        aws.put(key, data)

    later = now + 2 * DAY  # the grace (1 day) elapsed on every clock, the objects' upload time included
    findings, rows = _classify(aws, replicas, NEW, later, now - 5 * DAY)
    assert [r.key for r in rows if r.error] == [legacy]
    got = {f.segment_id: (f.class_name, f.plannable) for f in findings}
    assert got == {
        seg["ok"].segment_id: ("remote_ok", False),
        seg["copy"].segment_id: ("remote_copy_incomplete", True),
        seg["deleting"].segment_id: ("remote_delete_incomplete", True),
        seg["untracked"].segment_id: ("remote_untracked", False),
        seg["gone"].segment_id: ("remote_deleted_topic", True),
        seg["gone_lying"].segment_id: ("remote_deleted_topic", False),
    }
    by_id = {f.segment_id: f for f in findings}
    assert "manifest names another segment" in by_id[seg["gone_lying"].segment_id].reason
    assert "remote_tier.plan_untracked is off" in by_id[seg["untracked"].segment_id].reason
    for f in findings:  # bytes and keys from the listing, never from the metadata
        mine = {k: v for k, v in objects.items() if f"-{f.segment_id}." in k and k != legacy}
        assert f.bytes == sum(len(v) for v in mine.values()) and set(f.keys) == set(mine)

    old_findings, old_rows = _classify(aws, replicas, OLD, later, now - 5 * DAY)
    assert not [r for r in old_rows if r.error]
    assert [(f.segment_id, f.class_name, f.plannable) for f in old_findings] == [
        (seg["moved"].segment_id, "remote_delete_leaked", True)]
    assert old_findings[0].keys == tuple(sorted(seg["moved"].objects(OLD)))

    # the metadata is ten days old, the objects were written just now (a key reused, a late upload): the objects'
    # last-modified time holds every grace clock
    fresh, _ = _classify(aws, replicas, NEW, now + DAY // 2, now - 5 * DAY)
    assert not [f for f in fresh if f.plannable]
    assert all("grace not elapsed" in f.reason for f in fresh if f.class_name != "remote_ok")


@pytest.mark.parametrize("prefix", [NEW, OLD])
def test_recorded_formats_parse_as_the_plugin_means_them(prefix: str) -> None:
    """The recorded objects are the plugin's: keys parse to the segment, the manifest names it, and the custom
    metadata carries the prefix and main path as compact strings after the varlong size."""
    from pipelines.remote_tier.listing import ListedObject, parse_listing

    s = _segment("ok", "orders", LIVE, 3, 1234, 1)
    rows = list(parse_listing([ListedObject(k, len(v), 1) for k, v in s.objects(prefix).items()], "aiven", prefix))
    assert {(r.topic, r.topic_id, r.partition, r.segment_id, r.start_offset) for r in rows} == {
        ("orders", LIVE, 3, s.segment_id, 1234)}
    assert [r.object_kind for r in rows] == ["log", "indexes", "rsm-manifest"]
    witness = parse_manifest(s.manifest())
    assert (witness.topic_id, witness.segment_id, witness.start_offset) == (LIVE, s.segment_id, 1234)
    meta = s.custom_metadata(prefix)
    assert meta[0] == 3 and prefix.encode() in meta and s.main.encode() in meta
