"""Values written by Kafka itself: ``RemoteLogMetadataSerde.serialize`` of kafka-storage 4.3.1 (run once on a JVM
here; the inputs are the ones below), decoded by this project and re-encoded byte for byte."""

from __future__ import annotations

import pytest

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import (
    PartitionDeleteEvent,
    PartitionDeleteState,
    SegmentEvent,
    SegmentState,
    event_from_record,
    event_to_record,
)
from pipelines.remote_tier.metadata_codec import decode_remote_record, encode_remote_record

TID = Uuid(0x0123456789ABCDEF, 0xFEDCBA9876543210)
SID = Uuid(1, 2)
# Field by field (flexible v0): compact string N+1, uuid 16 bytes, int32, empty tag section "00" per struct.
TIP = "0a" + b"pay-ments".hex() + TID.hex() + "00000005" + "00"  # TopicIdPartitionEntry
SEG_ID = TIP + SID.hex() + "00"  # RemoteLogSegmentIdEntry
EPOCHS = "03" + "00000004" + "0000000000000064" + "00" + "00000005" + "0000000000000096" + "00"  # 2 entries
OFFSETS = "0000000000000064" + "00000000000000c7" + "00000003" + "0000018bcfe5687b" + "0000018bcfe569c8"
# new RemoteLogSegmentMetadata(id, start 100, end 199, maxTs 1700000000123L, broker 3, eventTs 1700000000456L,
#     size 4096, Optional.of(custom {1, 2}), COPY_SEGMENT_STARTED, {4: 100, 5: 150}, txnIdxEmpty=false)
METADATA = "010000" + SEG_ID + OFFSETS + EPOCHS + "00001000" + "030102" + "00" + "00"
# the same with Optional.empty() and txnIdxEmpty=true: a null custom metadata and tagged field 0 = true
METADATA_TXN_EMPTY = "010000" + SEG_ID + OFFSETS + EPOCHS + "00001000" + "00" + "00" + "01" + "00" + "01" + "01"
# new RemoteLogSegmentMetadataUpdate(id, 1700000001000L, Optional.empty(), COPY_SEGMENT_FINISHED, broker 2)
UPDATE = "010100" + SEG_ID + "00000002" + "0000018bcfe56be8" + "00" + "01" + "00"
# new RemotePartitionDeleteMetadata(tip, DELETE_PARTITION_FINISHED, 1700000002000L, broker 1)
DELETE = "010200" + TIP + "00000001" + "0000018bcfe56fd0" + "02" + "00"

KAFKA_OUTPUT = {  # the JVM's printed hex, verbatim
    "metadata": "0100000a7061792d6d656e74730123456789abcdeffedcba987654321000000005000000000000000001000000000000000200000000000000006400000000000000c7000000030000018bcfe5687b0000018bcfe569c8030000000400000000000000640000000005000000000000009600000010000301020000",  # noqa: E501
    "metadata_txn_empty": "0100000a7061792d6d656e74730123456789abcdeffedcba987654321000000005000000000000000001000000000000000200000000000000006400000000000000c7000000030000018bcfe5687b0000018bcfe569c803000000040000000000000064000000000500000000000000960000001000000001000101",  # noqa: E501
    "update": "0101000a7061792d6d656e74730123456789abcdeffedcba987654321000000005000000000000000001000000000000000200000000020000018bcfe56be8000100",  # noqa: E501
    "delete": "0102000a7061792d6d656e74730123456789abcdeffedcba98765432100000000500000000010000018bcfe56fd00200",
}


def test_readable_layouts_spell_kafkas_bytes() -> None:
    assert {"metadata": METADATA, "metadata_txn_empty": METADATA_TXN_EMPTY, "update": UPDATE,
            "delete": DELETE} == KAFKA_OUTPUT


FULL = SegmentEvent("pay-ments", TID, 5, SID, SegmentState.COPY_SEGMENT_STARTED, 3, 1_700_000_000_456, True,
                    start_offset=100, end_offset=199, size=4096, max_timestamp_ms=1_700_000_000_123,
                    leader_epochs=((4, 100), (5, 150)), custom_metadata=b"\x01\x02")


@pytest.mark.parametrize(("name", "event"), [
    ("metadata", FULL),
    ("update", SegmentEvent("pay-ments", TID, 5, SID, SegmentState.COPY_SEGMENT_FINISHED, 2, 1_700_000_001_000,
                            False)),
    ("delete", PartitionDeleteEvent("pay-ments", TID, 5, PartitionDeleteState.DELETE_PARTITION_FINISHED, 1,
                                    1_700_000_002_000)),
])
def test_kafka_values_decode_to_the_event_and_encode_back(name: str, event) -> None:
    raw = bytes.fromhex(KAFKA_OUTPUT[name])
    record = decode_remote_record(raw)
    assert record.version == 0 and record.unknown_tags == ()
    assert event_from_record(record) == event
    assert encode_remote_record(event_to_record(event, 0)) == raw


def test_kafka_txn_index_empty_tag() -> None:
    record = decode_remote_record(bytes.fromhex(KAFKA_OUTPUT["metadata_txn_empty"]))
    assert record.fields["txn_index_empty"] is True and record.fields["custom_metadata"] is None
    assert encode_remote_record(record) == bytes.fromhex(KAFKA_OUTPUT["metadata_txn_empty"])
