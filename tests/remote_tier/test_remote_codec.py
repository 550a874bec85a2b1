"""``__remote_log_metadata`` values: Kafka's byte layout field by field, round trips, unknown tags, hostile bytes."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import (
    PartitionDeleteEvent,
    SegmentEvent,
    SegmentState,
    event_from_record,
    event_to_record,
)
from pipelines.remote_tier.metadata_codec import (
    decode_remote_record,
    encode_remote_record,
    make_remote_record,
)
from pipelines.remote_tier.metadata_schema import REMOTE_RECORD_TYPES

TID = Uuid(0x0123456789ABCDEF, 0xFEDCBA9876543210)
SID = Uuid(1, 2)


def uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact(raw: bytes | None) -> bytes:
    return b"\x00" if raw is None else uv(len(raw) + 1) + raw


def tip(name: str, tid: Uuid, partition: int) -> bytes:
    """TopicIdPartitionEntry: compact string, uuid, int32, empty tag section."""
    return compact(name.encode()) + tid.to_bytes() + struct.pack(">i", partition) + b"\x00"


def segment_id(name: str, tid: Uuid, partition: int, sid: Uuid) -> bytes:
    return tip(name, tid, partition) + sid.to_bytes() + b"\x00"


def hand_built_segment_metadata(tags: bytes = b"\x00", version: int = 0) -> bytes:
    """apiKey 0 written from the schema JSON by hand (not by the encoder under test)."""
    body = segment_id("orders", TID, 5, SID)
    body += struct.pack(">qqiqq", 100, 199, 3, 1_700_000_000_123, 1_700_000_000_456)  # start, end, broker, maxTs, evTs
    body += uv(2 + 1) + struct.pack(">iq", 4, 100) + b"\x00" + struct.pack(">iq", 5, 150) + b"\x00"  # leader epochs
    body += struct.pack(">i", 4096)  # SegmentSizeInBytes (int32)
    body += compact(b"\x01\x02")  # CustomMetadata
    body += struct.pack(">b", 1)  # COPY_SEGMENT_FINISHED
    return b"\x01" + uv(0) + uv(version) + body + tags


def test_segment_metadata_layout_matches_kafkas_schema() -> None:
    rec = decode_remote_record(hand_built_segment_metadata())
    f = rec.fields
    assert (rec.api_key, rec.version, rec.name) == (0, 0, "RemoteLogSegmentMetadataRecord")
    assert f["remote_log_segment_id"]["topic_id_partition"]["name"] == "orders"
    assert f["remote_log_segment_id"]["topic_id_partition"]["id"] == TID
    assert f["remote_log_segment_id"]["topic_id_partition"]["partition"] == 5
    assert f["remote_log_segment_id"]["id"] == SID
    assert (f["start_offset"], f["end_offset"], f["broker_id"]) == (100, 199, 3)
    assert (f["max_timestamp_ms"], f["event_timestamp_ms"]) == (1_700_000_000_123, 1_700_000_000_456)
    assert [(e["leader_epoch"], e["offset"]) for e in f["segment_leader_epochs"]] == [(4, 100), (5, 150)]
    assert (f["segment_size_in_bytes"], f["custom_metadata"], f["remote_log_segment_state"]) == (4096, b"\x01\x02", 1)
    assert f["txn_index_empty"] is False
    # and the encoder writes exactly those bytes back
    assert encode_remote_record(rec) == hand_built_segment_metadata()


def test_tagged_fields_of_each_version() -> None:
    # v0: TxnIndexEmpty is tag 0; tag 1 is unknown in v0 (BrokerLeaderEpoch exists from v1) and is kept raw
    tags = uv(2) + uv(0) + uv(1) + b"\x01" + uv(1) + uv(4) + struct.pack(">i", 9)
    v0 = decode_remote_record(hand_built_segment_metadata(tags, 0))
    assert v0.fields["txn_index_empty"] is True and v0.fields["broker_leader_epoch"] == 0
    assert v0.unknown_tags == ((1, struct.pack(">i", 9)),)
    v1 = decode_remote_record(hand_built_segment_metadata(tags, 1))
    assert v1.fields["broker_leader_epoch"] == 9 and v1.unknown_tags == ()
    assert encode_remote_record(v0) == hand_built_segment_metadata(tags, 0)
    assert encode_remote_record(v1) == hand_built_segment_metadata(tags, 1)


def hand_built_update(version: int, tags: bytes = b"\x00") -> bytes:
    body = segment_id("orders", TID, 5, SID) + struct.pack(">iq", 2, 1_700_000_001_000) + compact(None)
    body += struct.pack(">b", 3)
    return b"\x01" + uv(1) + uv(version) + body + tags


def test_update_record_layout_and_its_v1_defaults() -> None:
    rec = decode_remote_record(hand_built_update(1))
    f = rec.fields
    assert (f["broker_id"], f["event_timestamp_ms"], f["custom_metadata"], f["remote_log_segment_state"]) == (
        2, 1_700_000_001_000, None, 3)
    assert (f["broker_leader_epoch"], f["end_offset"]) == (-1, -1)  # the schema's declared defaults
    tags = uv(2) + uv(0) + uv(4) + struct.pack(">i", 7) + uv(1) + uv(8) + struct.pack(">q", 199)
    rec = decode_remote_record(hand_built_update(1, tags))
    assert (rec.fields["broker_leader_epoch"], rec.fields["end_offset"]) == (7, 199)
    assert encode_remote_record(rec) == hand_built_update(1, tags)


def test_partition_delete_record_layout() -> None:
    raw = b"\x01" + uv(2) + uv(0) + tip("orders", TID, 5) + struct.pack(">iqb", 1, 1_700_000_002_000, 2) + b"\x00"
    rec = decode_remote_record(raw)
    assert rec.fields["topic_id_partition"]["partition"] == 5 and rec.fields["remote_partition_delete_state"] == 2
    event = event_from_record(rec, 7, 99)
    assert isinstance(event, PartitionDeleteEvent)
    assert (event.topic, event.topic_id, event.broker_id, event.metadata_partition, event.offset) == (
        "orders", TID, 1, 7, 99)


def test_snapshot_record_decodes_but_is_no_topic_event() -> None:
    body = SID.to_bytes() + struct.pack(">qqiqq", 0, 9, 1, 2, 3) + uv(1) + struct.pack(">i", 10) + compact(None)
    body += b"\x00" + b"\x00"
    rec = decode_remote_record(b"\x01" + uv(3) + uv(0) + body)
    assert rec.fields["segment_id"] == SID and rec.fields["end_offset"] == 9
    with pytest.raises(DecodeError, match="not an event"):
        event_from_record(rec)


@pytest.mark.parametrize("api_key", sorted(REMOTE_RECORD_TYPES))
@pytest.mark.parametrize("version", [0, 1])
def test_round_trip_every_type_and_version_with_unknown_tags(api_key: int, version: int) -> None:
    spec = REMOTE_RECORD_TYPES[api_key]
    values = {}
    for f in spec.fields:
        if not f.in_version(version):
            continue
        values[f.name] = {
            "int8": 2, "int32": 77, "int64": 1 << 40, "bool": True, "uuid": SID, "bytes": b"meta",
        }.get(f.type, f.default)
    if "remote_log_segment_id" in values:
        values["remote_log_segment_id"] = {"topic_id_partition": {"name": "t-1", "id": TID, "partition": 4},
                                           "id": SID}
    if "topic_id_partition" in values:
        values["topic_id_partition"] = {"name": "t-1", "id": TID, "partition": 4}
    rec = make_remote_record(api_key, version, **values)
    rec = type(rec)(rec.api_key, rec.version, rec.name, rec.fields, ((90, b"future"), (91, b"")))
    raw = encode_remote_record(rec)
    back = decode_remote_record(raw)
    assert back.unknown_tags == ((90, b"future"), (91, b""))
    for name, value in values.items():
        got = back.fields[name]
        if isinstance(value, dict):
            assert got["topic_id_partition" if "topic_id_partition" in value else "id"] is not None
        else:
            assert got == value, name
    assert encode_remote_record(back) == raw


def test_event_round_trip_through_record() -> None:
    e = SegmentEvent("a-b", TID, 3, SID, SegmentState.COPY_SEGMENT_STARTED, 2, 123, True, start_offset=10,
                     end_offset=20, size=300, max_timestamp_ms=99, leader_epochs=((1, 10), (2, 15)),
                     custom_metadata=b"x", metadata_partition=4, offset=8)
    for version in (0, 1):
        assert event_from_record(decode_remote_record(encode_remote_record(event_to_record(e, version))), 4, 8) == e
    u = SegmentEvent("a-b", TID, 3, SID, SegmentState.DELETE_SEGMENT_FINISHED, 2, 124, False)
    assert event_from_record(decode_remote_record(encode_remote_record(event_to_record(u)))) == u


GOOD = hand_built_segment_metadata()
HOSTILE = [
    (b"", "truncated"),
    (b"\x00" + GOOD[1:], "frame version 0"),
    (b"\x02" + GOOD[1:], "frame version 2"),
    (b"\x01\x04\x00", "apiKey 4"),
    (b"\x01\x00\x02" + GOOD[3:], "version 2"),
    (b"\x01\xff\xff\x03\x00", "above 32767"),
    (GOOD + b"\x00", "garbage after"),
    (GOOD[:-5], "truncated"),
    # a topic name declaring 2**31 bytes: refused before any read or allocation
    (b"\x01\x00\x00" + uv(1 << 31) + b"x" * 10, "runs past the end"),
    (b"\x01\x00\x00" + b"\x00", "null"),  # null topic name
    # an epoch array declaring 2**30 entries
    (GOOD[: GOOD.index(struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_456)) + 16] + uv(1 << 30), "past the end"),
    (hand_built_segment_metadata(uv(1) + uv(0) + uv(200) + b"\x01"), "tagged field"),  # tag size beyond the end
    (hand_built_segment_metadata(uv(1) + uv(0) + uv(2) + b"\x01\x01"), "is not 2 bytes"),
]


@pytest.mark.parametrize(("raw", "message"), HOSTILE)
def test_hostile_values_are_decode_errors(raw: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_remote_record(raw)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_truncated_or_flipped_values_never_crash(data: st.DataObject) -> None:
    raw = bytearray(hand_built_segment_metadata(uv(1) + uv(1) + uv(4) + b"\x00\x00\x00\x09", 1))
    cut = data.draw(st.integers(0, len(raw)))
    raw = raw[:cut]
    for _ in range(data.draw(st.integers(0, 3))):
        if raw:
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        decode_remote_record(bytes(raw))
