"""Record batch v2 reader/writer (facts 5.4): layout, CRC, compression, truncation, cross-check with kafka-python."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from pipelines.errors import DecodeError
from pipelines.kafka.compression import Compression, compress, decompress
from pipelines.kafka.record_batch import (
    HEADER_SIZE,
    BatchIterator,
    Record,
    TimestampType,
    encode_batch,
    read_batches,
)

TS = 1_700_000_000_000


def _hand_built_batch() -> bytes:
    """One KRaft-style record (null key, value b'abc') laid out byte by byte from the spec table."""
    record_body = bytes([0x00, 0x00, 0x00, 0x01, 0x06]) + b"abc" + bytes([0x00])  # attrs, tsΔ, offΔ, key -1, len 3
    record = bytes([len(record_body) << 1]) + record_body
    after_crc = struct.pack(">hiqqqhii", 0, 0, TS, TS, -1, -1, -1, 1) + record
    crc = crc32c(after_crc)
    return struct.pack(">qiibI", 42, 4 + 1 + 4 + len(after_crc), 7, 2, crc) + after_crc


def test_writer_matches_hand_built_bytes() -> None:
    assert encode_batch([b"abc"], 42, epoch=7, timestamp_ms=TS) == _hand_built_batch()


def test_reader_fields() -> None:
    scan = read_batches(_hand_built_batch() * 2)
    assert scan.ok and len(scan.batches) == 2 and scan.valid_bytes == 2 * len(_hand_built_batch())
    b = scan.batches[0]
    assert (b.base_offset, b.partition_leader_epoch, b.magic, b.records_count, b.last_offset) == (42, 7, 2, 1, 42)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
    assert b.compression is Compression.NONE and b.timestamp_type is TimestampType.CREATE_TIME
    assert not (b.is_control or b.is_transactional or b.has_delete_horizon)
    assert list(b.records()) == [Record(42, TS, None, b"abc", ())]
    assert scan.batches[1].position == len(_hand_built_batch())


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip_every_codec(codec: Compression) -> None:
    records = [Record(100 + i, TS + i, f"k{i}".encode() if i % 2 else None, bytes([i]) * i, ()) for i in range(50)]
    records.append(Record(150, TS, b"k", None, (("h", b"v"), ("n", None))))
    raw = encode_batch(records, 100, epoch=3, timestamp_ms=TS, compression=codec)
    (batch,) = read_batches(raw, strict=True).batches
    assert batch.compression is codec
    assert list(batch.records()) == records


def test_snappy_accepts_raw_and_xerial_framing() -> None:
    import cramjam

    data = b"metadata" * 10_000
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert decompress(Compression.SNAPPY, framed) == data
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_corrupt_compressed_stream_is_decode_error(codec: Compression) -> None:
    with pytest.raises(DecodeError):
        decompress(codec, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x7f\xff\xff\xff" if codec == 2 else b"junk!")


def test_crc_mismatch_strict_and_reported() -> None:
    good = _hand_built_batch()
    bad = bytearray(good)
    bad[-2] ^= 0x01  # flip a bit inside the value
    with pytest.raises(DecodeError, match="crc"):
        list(BatchIterator(bytes(bad)))
    scan = read_batches(bytes(bad) + good)  # non-strict: report and carry on
    assert len(scan.batches) == 1 and scan.batches[0].position == len(good)
    (err,) = scan.errors
    assert err.position == 0 and err.batch is not None and err.batch.base_offset == 42
    assert read_batches(bytes(bad), verify_crc=False).ok  # partitionLeaderEpoch etc. untouched


def test_partition_leader_epoch_is_outside_the_crc() -> None:
    raw = bytearray(_hand_built_batch())
    raw[12:16] = struct.pack(">i", 99)
    assert read_batches(bytes(raw), strict=True).batches[0].partition_leader_epoch == 99


def test_truncation_at_every_position_is_reported_not_raised() -> None:
    full = _hand_built_batch() + encode_batch([b"x" * 30, b"y"], 43, epoch=7, timestamp_ms=TS)
    first = len(_hand_built_batch())
    for cut in range(len(full)):
        scan = read_batches(full[:cut], strict=True)
        assert len(scan.batches) == (1 if cut >= first else 0)
        assert scan.trailing_invalid_bytes == cut - (first if cut >= first else 0)


def test_corrupt_size_and_old_magic() -> None:
    tiny = struct.pack(">qi", 0, 13) + b"\x00" * 10
    with pytest.raises(DecodeError, match="smaller"):
        read_batches(tiny, strict=True)
    assert read_batches(tiny).errors  # reported
    legacy = bytearray(_hand_built_batch())
    legacy[16] = 1  # magic v1 (ZooKeeper-era segment)
    scan = read_batches(bytes(legacy) + _hand_built_batch())
    assert "magic 1" in scan.errors[0].message and len(scan.batches) == 1


def test_record_level_corruption_is_decode_error() -> None:
    raw = bytearray(_hand_built_batch())
    raw[HEADER_SIZE] = 0x7E  # record length 63: more than the batch holds
    raw[17:21] = struct.pack(">I", crc32c(bytes(raw[21:])))
    (batch,) = read_batches(bytes(raw), strict=True).batches
    with pytest.raises(DecodeError):
        list(batch.records())


def test_file_path_input(tmp_path) -> None:
    path = tmp_path / "00000000000000000042.log"
    path.write_bytes(_hand_built_batch() + b"\x00" * 5)
    scan = read_batches(path)
    assert len(scan.batches) == 1 and scan.trailing_invalid_bytes == 5
    (tmp_path / "empty.log").write_bytes(b"")
    assert read_batches(tmp_path / "empty.log").ok


def test_kafka_python_reads_our_batches_and_builds_identical_bytes() -> None:
    """kafka-python is an independent implementation of the same format."""
    dr = pytest.importorskip("kafka.record.default_records")
    records = [Record(10 + i, TS + 3 * i, None if i % 3 else b"key", b"v%d" % i, ()) for i in range(5)]
    ours = encode_batch(records, 10, epoch=0, timestamp_ms=TS)
    theirs = dr.DefaultRecordBatch(bytearray(ours))
    assert theirs.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]
    builder = dr.DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for r in records:
        builder.append(r.offset - 10, r.timestamp, r.key, r.value, [])
    built = bytes(builder.build())
    assert built[8:] == ours[8:]  # kafka-python leaves baseOffset 0 for the broker to assign
