"""Record batch v2 (magic 2): reader and writer (``clients/.../common/record/DefaultRecordBatch.java``).

Batch header, big-endian, 61 bytes::

    0  baseOffset int64          21 attributes int16          43 producerId int64
    8  batchLength int32         23 lastOffsetDelta int32      51 producerEpoch int16
    12 partitionLeaderEpoch i32  27 baseTimestamp int64        53 baseSequence int32
    16 magic int8 (= 2)          35 maxTimestamp int64         57 recordsCount int32
    17 crc uint32 = CRC-32C of bytes [21, 12 + batchLength)    61 records (one compressed stream if compressed)

Record (``DefaultRecord.java``): varint length, int8 attributes, varlong timestampDelta, varint offsetDelta,
varint keyLength (-1 null) + key, varint valueLength (-1 null) + value, varint headerCount, then headers
(varint key length >= 0 + UTF-8 key, varint value length (-1 null) + value).

Reading a file follows ``FileLogInputStream.nextBatch``: stop when fewer than 17 bytes remain, a declared
``batchLength`` below 14 is corruption, and a batch that does not fit is a truncated tail ("N invalid bytes at
the end", as kafka-dump-log says). CRC-32C comes from the ``crc32c`` package (hardware-accelerated, a core
dependency); codecs are in :mod:`pipelines.kafka.compression`.
"""

from __future__ import annotations

import enum
import errno
import mmap
import os
import stat
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from crc32c import crc32c

from pipelines.errors import DecodeError
from pipelines.kafka import varint
from pipelines.kafka.compression import Compression, compress, decompress

__all__ = [
    "HEADER_SIZE",
    "BatchError",
    "BatchIterator",
    "BatchScan",
    "Compression",
    "Record",
    "RecordBatch",
    "TimestampType",
    "encode_batch",
    "encode_record",
    "iter_raw_records",
    "open_buffer",
    "read_batches",
]

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
HEADER_UP_TO_MAGIC = 17
MIN_BATCH_LENGTH = 14  # LegacyRecord.RECORD_OVERHEAD_V0: below this the size field is corrupt
CRC_START = 21
_CRC = struct.Struct(">I")
_PROLOGUE = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_MAGIC_AT = 16

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp. ``headers`` is a tuple of ``(key, value|None)``."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A v2 batch header plus its (still encoded, maybe compressed) record payload.

    ``position`` is the byte offset of the batch in its file/buffer. Records are decoded on demand by
    :meth:`records`.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int
    payload: bytes = field(repr=False, compare=False)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    def decompressed_payload(self) -> bytes:
        """The record bytes after decompression (the payload itself when uncompressed)."""
        codec = self.attributes & ATTR_COMPRESSION_MASK
        if codec == 0:
            return self.payload
        try:
            return decompress(codec, self.payload)
        except DecodeError as exc:
            raise DecodeError(f"batch at offset {self.base_offset}: {exc}", self.position) from None

    def records(self) -> Iterator[Record]:
        """Decode the records (lazily). Raises :class:`DecodeError` on a malformed record."""
        log_append = bool(self.attributes & ATTR_TIMESTAMP_TYPE)
        for offset_delta, ts_delta, key, value, headers in iter_raw_records(self):
            ts = self.max_timestamp if log_append else self.base_timestamp + ts_delta
            yield Record(self.base_offset + offset_delta, ts, key, value, headers)


def iter_raw_records(batch: RecordBatch) -> Iterator[tuple[int, int, bytes | None, bytes | None, tuple]]:
    """Yield ``(offset_delta, timestamp_delta, key, value, headers)`` for every record of ``batch``.

    The fast path behind :meth:`RecordBatch.records`; error offsets are absolute file positions for
    uncompressed batches and the batch position for compressed ones.
    """
    data = batch.decompressed_payload()
    count = batch.records_count
    if count < 0:
        raise DecodeError(f"invalid record count {count}", batch.position)
    compressed = batch.attributes & ATTR_COMPRESSION_MASK
    base_pos = batch.position + HEADER_SIZE
    end = len(data)
    pos = 0
    rv = varint.read_varint
    for _ in range(count):
        rec_start = pos
        try:
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = rv(data, pos)
            if length < 0 or length > end - pos:
                raise DecodeError(f"record length {length} does not fit in the batch", rec_start)
            body_start = pos
            pos += 1  # attributes, unused
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = varint.read_varlong(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = rv(data, pos)
            b = data[pos]
            if b == 1:  # -1: null key, the KRaft case
                key = None
                pos += 1
            else:
                n, pos = rv(data, pos)
                if n < -1 or n > end - pos:
                    raise DecodeError(f"invalid key length {n}", pos)
                key = None if n == -1 else data[pos : pos + n]
                pos += max(n, 0)
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = rv(data, pos)
            if n < -1 or n > end - pos:
                raise DecodeError(f"invalid value length {n}", pos)
            if n == -1:
                value = None
            else:
                value = data[pos : pos + n]
                pos += n
            b = data[pos]
            if b == 0:
                headers: tuple = ()
                pos += 1
            else:
                headers, pos = _read_headers(data, pos, end)
            if pos - body_start != length:
                raise DecodeError(
                    f"invalid record size: expected {length} bytes in record payload, read {pos - body_start}",
                    rec_start,
                )
        except DecodeError as exc:
            at = batch.position if compressed or exc.offset is None else base_pos + exc.offset
            raise DecodeError(f"record in batch at offset {batch.base_offset}: {_bare(exc)}", at) from None
        except IndexError:
            at = batch.position if compressed else base_pos + rec_start
            raise DecodeError(f"truncated record in batch at offset {batch.base_offset}", at) from None
        yield offset_delta, ts_delta, key, value, headers
    if pos != end:
        raise DecodeError(
            f"incorrect declared batch size: {end - pos} byte(s) after the last of {count} records",
            batch.position,
        )


def _read_headers(data: bytes, pos: int, end: int) -> tuple[tuple, int]:
    count, pos = varint.read_varint(data, pos)
    if count < 0 or count > end - pos:
        raise DecodeError(f"invalid header count {count}", pos)
    headers = []
    for _ in range(count):
        n, pos = varint.read_varint(data, pos)
        if n < 0 or n > end - pos:
            raise DecodeError(f"invalid header key length {n}", pos)
        hkey = data[pos : pos + n].decode("utf-8", "surrogateescape")
        pos += n
        n, pos = varint.read_varint(data, pos)
        if n < -1 or n > end - pos:
            raise DecodeError(f"invalid header value length {n}", pos)
        hval = None if n == -1 else data[pos : pos + n]
        pos += max(n, 0)
        headers.append((hkey, hval))
    return tuple(headers), pos


def _bare(exc: DecodeError) -> str:
    return str(exc).split(" (at offset")[0]


# -- reading batches ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchError:
    """A problem found while scanning: ``batch`` is the parsed header when one could be read."""

    position: int
    message: str
    batch: RecordBatch | None = None


@dataclass(frozen=True, slots=True)
class BatchScan:
    """Everything :func:`read_batches` found in one buffer."""

    batches: tuple[RecordBatch, ...]
    valid_bytes: int
    trailing_invalid_bytes: int
    errors: tuple[BatchError, ...]

    @property
    def ok(self) -> bool:
        return not self.errors and not self.trailing_invalid_bytes


class BatchIterator:
    """Iterate the batches of a buffer; after iteration the summary attributes are final.

    Args:
        buf: the whole file content (``bytes``, ``mmap``, ...).
        verify_crc: check CRC-32C of every v2 batch.
        strict: ``True`` raises :class:`DecodeError` at the first bad batch; ``False`` records a
            :class:`BatchError` in :attr:`errors` and goes on with the next batch when its size is known
            (bad CRC, unsupported magic), or stops (corrupt size field).

    A truncated tail never raises: it ends iteration and is counted in :attr:`trailing_invalid_bytes`.
    """

    def __init__(self, buf, *, verify_crc: bool = True, strict: bool = True) -> None:
        self._buf = buf
        self._verify = verify_crc
        self._strict = strict
        self.valid_bytes = 0
        self.trailing_invalid_bytes = 0
        self.errors: list[BatchError] = []

    def _fail(self, position: int, message: str, batch: RecordBatch | None = None) -> None:
        if self._strict:
            raise DecodeError(message, position)
        self.errors.append(BatchError(position, message, batch))

    def __iter__(self) -> Iterator[RecordBatch]:
        buf = self._buf
        end = len(buf)
        pos = 0
        while end - pos >= HEADER_UP_TO_MAGIC:
            base_offset, batch_length, _epoch = _PROLOGUE.unpack_from(buf, pos)
            if batch_length < MIN_BATCH_LENGTH:
                self._fail(pos, f"record batch size {batch_length} is smaller than the minimum {MIN_BATCH_LENGTH}")
                break  # cannot find the next batch
            size = LOG_OVERHEAD + batch_length
            if size > end - pos:
                break  # truncated tail
            magic = buf[pos + _MAGIC_AT]
            if magic != 2:
                self._fail(pos, f"unsupported record batch magic {magic} at batch offset {base_offset} (only v2)")
                self.valid_bytes += size
                pos += size
                continue
            if size < HEADER_SIZE:
                self._fail(pos, f"record batch size {size} is smaller than the v2 overhead {HEADER_SIZE}")
                pos += size
                continue
            payload = bytes(buf[pos + HEADER_SIZE : pos + size])
            batch = RecordBatch(*HEADER.unpack_from(buf, pos), pos, payload)
            if self._verify:
                actual = crc32c(payload, crc32c(bytes(buf[pos + CRC_START : pos + HEADER_SIZE])))
                if actual != batch.crc:
                    self._fail(
                        pos,
                        f"record batch at offset {base_offset} is corrupt (stored crc = {batch.crc}, "
                        f"computed crc = {actual})",
                        batch,
                    )
                    pos += size
                    continue
            self.valid_bytes += size
            pos += size
            yield batch
        self.trailing_invalid_bytes = end - pos


def read_batches(source, *, verify_crc: bool = True, strict: bool = False) -> BatchScan:
    """Read every batch of a buffer or file path into a :class:`BatchScan` (non-strict by default)."""
    with open_buffer(source) as buf:
        it = BatchIterator(buf, verify_crc=verify_crc, strict=strict)
        batches = tuple(it)
    return BatchScan(batches, it.valid_bytes, it.trailing_invalid_bytes, tuple(it.errors))


class open_buffer:
    """Context manager giving a read-only buffer for bytes-like input or a path (mmap'd; empty files ok)."""

    def __init__(self, source) -> None:
        self._source = source
        self._mmap: mmap.mmap | None = None
        self._file = None

    def __enter__(self):
        src = self._source
        if isinstance(src, (bytes, bytearray, memoryview, mmap.mmap)):
            return src
        path = os.fspath(src) if isinstance(src, (str, os.PathLike)) else None
        if path is None:
            raise TypeError(f"expected bytes or a path, got {type(src).__name__}")
        # O_NONBLOCK: a FIFO (or device) planted under a log file's name must not block the open; then only a
        # regular file is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file (FIFO, socket or device)", path)
        self._file = os.fdopen(fd, "rb")
        if st.st_size == 0:
            return b""
        self._mmap = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        return self._mmap

    def __exit__(self, *exc) -> None:
        if self._mmap is not None:
            self._mmap.close()
        if self._file is not None:
            self._file.close()


# -- writing ----------------------------------------------------------------------------------------


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    """One record in ``DefaultRecord`` layout, length prefix included."""
    body = bytearray(b"\x00")
    body += varint.write_varlong(timestamp_delta)
    body += varint.write_varint(offset_delta)
    for blob in (key, value):
        if blob is None:
            body += b"\x01"
        else:
            body += varint.write_varint(len(blob)) + blob
    body += varint.write_varint(len(headers))
    for hkey, hval in headers:
        raw = hkey.encode("utf-8", "surrogateescape")
        body += varint.write_varint(len(raw)) + raw
        body += b"\x01" if hval is None else varint.write_varint(len(hval)) + hval
    return varint.write_varint(len(body)) + bytes(body)


RecordInput = bytes | tuple[bytes | None, bytes | None] | Record


def encode_batch(
    records: Iterable[RecordInput],
    base_offset: int,
    *,
    epoch: int,
    timestamp_ms: int,
    is_control: bool = False,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode one v2 batch, byte-exact with Kafka's KRaft ``BatchBuilder`` for the defaults.

    Each item of ``records`` is a value (``bytes``: null key, offsets consecutive from ``base_offset``,
    timestampDelta 0, no headers, as KRaft writes), a ``(key, value)`` pair, or a :class:`Record` whose own
    offset and timestamp are kept. ``max_timestamp`` defaults to the largest record timestamp.
    """
    body = bytearray()
    count = 0
    last_delta = 0
    max_ts = timestamp_ms
    for i, item in enumerate(records):
        if isinstance(item, Record):
            delta, ts_delta = item.offset - base_offset, item.timestamp - timestamp_ms
            body += encode_record(delta, ts_delta, item.key, item.value, item.headers)
        else:
            key, value = (None, item) if isinstance(item, (bytes, bytearray)) else item
            delta, ts_delta = i, 0
            body += encode_record(delta, 0, key, value)
        count += 1
        last_delta = delta
        max_ts = max(max_ts, timestamp_ms + ts_delta)
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    payload = compress(compression, bytes(body))
    attributes = int(compression) | (ATTR_TIMESTAMP_TYPE if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
    attributes |= (ATTR_TRANSACTIONAL if is_transactional else 0) | (ATTR_CONTROL if is_control else 0)
    header = bytearray(
        HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            epoch,
            2,
            0,
            attributes,
            last_delta,
            timestamp_ms,
            max_ts if max_timestamp is None else max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    out = header + payload
    _CRC.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


