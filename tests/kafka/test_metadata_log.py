"""iter_metadata_log over generated snapshot-shaped files: order, control records, error policies."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from pipelines.errors import DecodeError
from pipelines.kafka.compression import Compression
from pipelines.kafka.metadata_codec import (
    ControlRecord,
    MetadataRecord,
    encode_control_record,
    encode_metadata_record,
    make_control_record,
    make_record,
)
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.record_batch import encode_batch
from pipelines.kafka.uuid import Uuid

TS = 1_700_000_000_000
T1 = Uuid(7, 8)


def _snapshot(compression: Compression = Compression.NONE) -> tuple[bytes, list[MetadataRecord]]:
    header = make_control_record("SNAPSHOT_HEADER", last_contained_log_timestamp=TS)
    footer = make_control_record("SNAPSHOT_FOOTER")
    data = [
        make_record("FeatureLevelRecord", name="metadata.version", feature_level=21),
        make_record("TopicRecord", name="t", topic_id=T1),
        *[make_record("PartitionRecord", 0, partition_id=p, topic_id=T1, replicas=(1,), isr=(1,)) for p in range(3)],
        make_record("NoOpRecord"),
    ]
    buf = encode_batch([encode_control_record(header)], 0, epoch=2, timestamp_ms=TS, is_control=True)
    buf += encode_batch([encode_metadata_record(r) for r in data[:4]], 1, epoch=2, timestamp_ms=TS)
    buf += encode_batch(
        [encode_metadata_record(r) for r in data[4:]], 5, epoch=3, timestamp_ms=TS + 1, compression=compression
    )
    buf += encode_batch([encode_control_record(footer)], 7, epoch=3, timestamp_ms=TS + 1, is_control=True)
    return buf, data


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZSTD])
def test_entries_in_order_with_provenance(compression: Compression) -> None:
    buf, data = _snapshot(compression)
    log = iter_metadata_log(buf)
    entries = list(log)
    assert [e.offset for e in entries] == list(range(8))
    assert [e.is_control for e in entries] == [True] + [False] * 6 + [True]
    assert [e.record for e in entries[1:7]] == data
    assert isinstance(entries[0].record, ControlRecord) and entries[0].record.type_name == "SNAPSHOT_HEADER"
    assert entries[7].record.type_name == "SNAPSHOT_FOOTER"
    assert [(e.epoch, e.batch_base_offset, e.batch_timestamp_ms) for e in (entries[1], entries[6])] == [
        (2, 1, TS),
        (3, 5, TS + 1),
    ]
    assert log.ok and log.last_offset == 7 and log.records == 8 and log.batches == 4 and log.valid_bytes == len(buf)


def test_path_input_and_truncated_tail(tmp_path) -> None:
    buf, _ = _snapshot()
    path = tmp_path / "00000000000000000008-0000000003.checkpoint"
    path.write_bytes(buf[:-10])
    log = iter_metadata_log(path)
    assert len(list(log)) == 7 and log.trailing_invalid_bytes == len(buf[:-10]) - log.valid_bytes > 0
    assert not log.errors and not log.stopped_early


def _with_bad_record() -> bytes:
    good = encode_metadata_record(make_record("TopicRecord", name="t", topic_id=T1))
    return encode_batch([good, b"\x01\x02\x00\x99", good], 0, epoch=1, timestamp_ms=TS) + encode_batch(
        [good], 3, epoch=1, timestamp_ms=TS
    )


def test_error_policies() -> None:
    stop = iter_metadata_log(_with_bad_record())
    assert [e.offset for e in stop] == [0]
    assert stop.stopped_early and stop.errors[0].offset == 1 and "offset 1" in stop.errors[0].message
    skip = iter_metadata_log(_with_bad_record(), on_error="skip")
    assert [e.offset for e in skip] == [0, 2, 3] and len(skip.errors) == 1 and skip.last_offset == 3
    with pytest.raises(DecodeError, match="offset 1"):
        list(iter_metadata_log(_with_bad_record(), on_error="raise"))


def test_crc_error_policies() -> None:
    buf, _ = _snapshot()
    bad = bytearray(buf)
    bad[-3] ^= 0x40  # inside the footer batch
    stop = iter_metadata_log(bytes(bad))
    assert len(list(stop)) == 7 and stop.stopped_early and "corrupt" in stop.errors[0].message
    assert len(list(iter_metadata_log(bytes(bad), verify_crc=False))) == 8


def test_bit_flips_and_truncations_never_crash() -> None:
    buf, _ = _snapshot()
    for i in range(0, len(buf), 3):
        flipped = bytearray(buf)
        flipped[i] ^= 0xFF
        for policy in ("stop", "skip"):
            list(iter_metadata_log(bytes(flipped), on_error=policy, verify_crc=False))
        list(iter_metadata_log(buf[:i]))


def test_record_framing_error_inside_batch_reports_position() -> None:
    raw = bytearray(encode_batch([b"\x01\x14\x00\x00"], 0, epoch=1, timestamp_ms=TS))
    raw[61] = 0x7E  # record length 63 > batch
    raw[17:21] = struct.pack(">I", crc32c(bytes(raw[21:])))
    log = iter_metadata_log(bytes(raw))
    assert list(log) == [] and log.errors[0].position == 61
