"""Aiven's manifest as a witness, the leader-epoch lineage check, and the metadata partitioner."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.aiven_manifest import MAX_MANIFEST_BYTES, manifest_mismatch, parse_manifest
from pipelines.remote_tier.keys import RemoteObjectKey
from pipelines.remote_tier.lineage import filtered_epochs, within_lineage
from pipelines.remote_tier.partitioner import metadata_partition, murmur2, topic_partition_hash

TID = Uuid.from_string("lZ6vvmajTWKDBUTV6SQAtQ")
SID = Uuid.from_string("adh9f8BMS4anaUnD8KWfWg")


def manifest(meta: dict | None = None, **extra) -> bytes:
    doc = {"version": "1",
           "chunkIndex": {"type": "fixed", "originalChunkSize": 64, "originalFileSize": 640,
                          "transformedChunkSize": 70, "finalTransformedChunkSize": 70},
           "segmentIndexes": {"offset": {"position": 0, "size": 8}, "timestamp": {"position": 8, "size": 12},
                              "producerSnapshot": {"position": 20, "size": 0},
                              "leaderEpoch": {"position": 20, "size": 3}, "transaction": None},
           "compression": True, **extra}
    if meta is not None:
        doc["remoteLogSegmentMetadata"] = meta
    return json.dumps(doc).encode()


META = {"remoteLogSegmentId": {"topicIdPartition": {"topicId": str(TID),
                                                    "topicPartition": {"topic": "pay-ments", "partition": 4}},
                               "id": str(SID)},
        "startOffset": 1200, "endOffset": 1299, "maxTimestampMs": 5, "brokerId": 2, "eventTimestampMs": 6,
        "segmentLeaderEpochs": {"3": 1200, "4": 1250}}


def test_manifest_with_segment_metadata() -> None:
    w = parse_manifest(manifest(META, encryption={"dataKey": "wrapped", "aad": "AAAA"}))
    assert (w.topic, w.topic_id, w.partition, w.segment_id, w.start_offset, w.end_offset) == (
        "pay-ments", TID, 4, SID, 1200, 1299)
    assert (w.broker_id, w.event_timestamp_ms, w.leader_epochs, w.compression, w.encrypted) == (
        2, 6, ((3, 1200), (4, 1250)), True, True)
    key = RemoteObjectKey("pay-ments", TID, 4, SID, 1200, "rsm-manifest")
    assert manifest_mismatch(w, key) is None
    assert "start offset 1200 (key says 1300)" in manifest_mismatch(w, RemoteObjectKey(
        "pay-ments", TID, 4, SID, 1300, "rsm-manifest"))


def test_old_manifest_without_metadata_is_silent() -> None:
    w = parse_manifest(manifest())
    assert w.segment_id is None and not w.encrypted
    assert manifest_mismatch(w, RemoteObjectKey("x", TID, 0, SID, 0, "rsm-manifest")) is None


@pytest.mark.parametrize(("data", "message"), [
    (b"\x00\x01 not json", "not JSON"),
    (b"[]", "not a JSON object"),
    (json.dumps({"version": "2", "compression": False}).encode(), "version '2'"),
    (json.dumps({"version": 1, "compression": False}).encode(), "version 1"),
    (manifest(dict(META, startOffset="1200")), "startOffset is not of type int"),
    (manifest(dict(META, brokerId=True)), "brokerId"),
    (manifest(dict(META, remoteLogSegmentId={"id": str(SID)})), "topicIdPartition is missing"),
    (manifest(dict(META, segmentLeaderEpochs={"x": 1})), "segmentLeaderEpochs"),
    (json.dumps({"version": "1"}).encode(), "compression is missing"),
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
    (b" " * (MAX_MANIFEST_BYTES + 1), "larger than"),
])
def test_bad_manifests_are_decode_errors(data: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        parse_manifest(data)


@settings(deadline=None)
@given(st.binary(max_size=300))
def test_manifest_garbage_never_crashes(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        parse_manifest(data)


# Kafka's own example in RemoteLogManager's comment: leader epochs {(5, 10), (7, 15), (9, 100)}.
LINEAGE = {5: 10, 7: 15, 9: 100}


@pytest.mark.parametrize(("epochs", "end", "lineage", "leo", "inside"), [
    (((5, 10), (7, 15)), 50, LINEAGE, 200, True),  # segment1 of Kafka's comment
    (((5, 10), (7, 15)), 120, LINEAGE, 200, False),  # ends after epoch 7 ended (99)
    (((5, 14), (7, 15), (9, 100)), 150, LINEAGE, 200, True),
    (((5, 14), (7, 15), (9, 100)), 150, {7: 51, 9: 100}, 200, True),  # epoch 5 trimmed from the cache
    (((5, 10), (7, 16)), 50, LINEAGE, 200, False),  # epoch 7 starts elsewhere: another lineage
    (((5, 10), (6, 12)), 50, LINEAGE, 200, False),  # epoch 6 never in the lineage
    (((9, 100),), 250, LINEAGE, 200, False),  # beyond the log end offset
    (((10, 300),), 350, LINEAGE, 500, False),  # newer than the lineage
    (((3, 0),), 5, LINEAGE, 200, False),  # older than the lineage
    (((5, 10), (6, 15), (7, 15)), 40, LINEAGE, 200, True),  # epoch 6 holds no record: filtered
])
def test_within_lineage(epochs, end, lineage, leo, inside) -> None:
    assert within_lineage(epochs, end, lineage, leo) is inside


def test_filtered_epochs() -> None:
    assert filtered_epochs([(6, 15), (5, 10), (7, 15)]) == [(5, 10), (7, 15)]


# Objects.hash(lsb, msb, partition) computed by a JDK (java.util.Objects.hash), for (msb, lsb, partition):
JDK_HASHES = [
    (0, 0, 0, 29791), (0, 0, 7, 29798), (0, 0, 2147483647, -2147453858), (1, 2, 0, 31744),
    (2**64 - 1, 2**64 - 2, 1, 30753), (0x123456789ABCDEF0, 0x0FEDCBA987654321, 7, 286360422),
    (0x123456789ABCDEF0, 0x0FEDCBA987654321, 2147483647, -1861123234), (2**63, 2**63 - 1, 0, 29791),
]


@pytest.mark.parametrize(("msb", "lsb", "partition", "java"), JDK_HASHES)
def test_topic_partition_hash_is_javas_objects_hash(msb: int, lsb: int, partition: int, java: int) -> None:
    assert topic_partition_hash(Uuid(msb, lsb), partition) == java & 0xFFFFFFFF


def test_murmur2_agrees_with_kafka_python() -> None:
    kafka = pytest.importorskip("kafka.partitioner.default")
    for n in range(0, 40):
        data = bytes((i * 37 + n) & 0xFF for i in range(n))
        assert murmur2(data) == kafka.murmur2(data) & 0xFFFFFFFF


def test_metadata_partition_spreads_and_is_in_range() -> None:
    seen = {metadata_partition(Uuid(i * 7919, i * 104729), p, 50) for i in range(40) for p in range(5)}
    assert seen <= set(range(50)) and len(seen) > 30
    with pytest.raises(ValueError):
        metadata_partition(TID, 0, 0)


def test_remote_tier_imports_no_spark() -> None:
    probe = ("import importlib, pkgutil, sys, pipelines.remote_tier as p\n"
             "for m in pkgutil.walk_packages(p.__path__, 'pipelines.remote_tier.'):\n"
             "    importlib.import_module(m.name)\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
