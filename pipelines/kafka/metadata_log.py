"""Iterate the records of a KRaft metadata log segment or snapshot (``.log``, ``.checkpoint``, bootstrap).

:class:`MetadataLog` yields one :class:`LogEntry` per record, in file order, and keeps a summary
(last offset, valid bytes, trailing invalid bytes, errors) that is final once iteration ends.

Error policy (``on_error``):

- ``"stop"`` (default): at the first bad batch (CRC, magic, corrupt size) or undecodable record, record a
  :class:`LogError` and end iteration. An image replayed up to there is then *incomplete*, not wrong.
- ``"skip"``: record the error and go on with the next record or batch (records after a bad one in the same
  uncompressed batch are still framed correctly, so only the bad record is lost).
- ``"raise"``: raise :class:`DecodeError`.

A truncated tail (a batch that does not fit in the file) is never an error: iteration ends and
:attr:`MetadataLog.trailing_invalid_bytes` says how many bytes were left, as kafka-dump-log reports.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from crc32c import crc32c

from pipelines.errors import DecodeError
from pipelines.kafka.compression import DEFAULT_MAX_DECOMPRESSED
from pipelines.kafka.metadata_codec import (
    ControlRecord,
    MetadataRecord,
    _decoder,
    _decoders,
    _fast_constructor,
    _new_metadata_record,
    decode_control_record,
    decode_metadata_record,
)
from pipelines.kafka.metadata_native import scan_context
from pipelines.kafka.record_batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    HEADER_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    RecordBatch,
    _bare,
    _read_headers,
    iter_raw_records,
    open_buffer,
)
from pipelines.kafka.varint import read_varint, read_varlong

_PROLOGUE = struct.Struct(">qii")

__all__ = ["LogEntry", "LogError", "MetadataLog", "iter_metadata_log"]


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of a metadata log with where it came from. ``epoch`` is the batch's leader epoch."""

    offset: int
    batch_timestamp_ms: int
    epoch: int
    is_control: bool
    record: MetadataRecord | ControlRecord
    batch_base_offset: int


_new_entry = _fast_constructor(LogEntry)


class FieldsRecord(tuple):
    """``(name, fields)`` of a decoded metadata record, for replay inside this package's consumers only.

    What :meth:`MetadataLog.iter_raw` hands out instead of a :class:`MetadataRecord`: ``fields`` is the
    decoder's own dict (not a read-only view), so it must not escape to callers of the public API.
    """

    __slots__ = ()
    name: str = property(itemgetter(0))  # type: ignore[assignment]
    fields: dict[str, Any] = property(itemgetter(1))  # type: ignore[assignment]


def _raw_entry(offset: int, batch_timestamp_ms: int, epoch: int, is_control: bool, record: Any,
               batch_base_offset: int) -> tuple:
    return (offset, batch_timestamp_ms, epoch, is_control, record, batch_base_offset)
_tiny_records: dict[bytes, MetadataRecord] = {}
"""Decoded records of at most 4 bytes (NoOpRecord, EndTransactionRecord, ...) shared as immutable values."""


@dataclass(frozen=True, slots=True)
class LogError:
    """A problem: ``offset`` is the record/batch offset when known, ``position`` the file byte position."""

    offset: int | None
    position: int | None
    message: str


class MetadataLog:
    """Iterable over the records of one file or buffer; see the module docstring for ``on_error``.

    A path is memory-mapped for the duration of one iteration. Summary attributes (``last_offset``,
    ``records``, ``batches``, ``valid_bytes``, ``trailing_invalid_bytes``, ``errors``, ``stopped_early``) are
    final when iteration ends (also when the consumer stops early).
    """

    def __init__(self, source, *, verify_crc: bool = True, on_error: str = "stop") -> None:
        if on_error not in ("stop", "skip", "raise"):
            raise ValueError(f"on_error must be stop, skip or raise, not {on_error!r}")
        self._source = source
        self._verify = verify_crc
        self._on_error = on_error
        self.last_offset: int | None = None
        self.records = 0
        self.batches = 0
        self.valid_bytes = 0
        self.trailing_invalid_bytes = 0
        self.errors: list[LogError] = []
        self.stopped_early = False

    @property
    def ok(self) -> bool:
        return not self.errors and not self.trailing_invalid_bytes

    def _problem(self, offset: int | None, position: int | None, message: str) -> bool:
        """Apply the error policy; True means stop iterating."""
        if self._on_error == "raise":
            raise DecodeError(message, position)
        self.errors.append(LogError(offset, position, message))
        if self._on_error == "stop":
            self.stopped_early = True
            return True
        return False

    def __iter__(self) -> Iterator[LogEntry]:
        return self._scan(False)

    def iter_raw(self) -> Iterator[tuple]:
        """Like iterating, but each entry is a plain tuple in :class:`LogEntry` field order and the records of
        uncompressed data batches are :class:`FieldsRecord` over a plain dict (no read-only view, no objects).

        For the metadata loader's hot loop only; the summary attributes and error policy are identical.
        """
        return self._scan(True)

    def _scan(self, raw_mode: bool) -> Iterator[LogEntry]:
        """One fused loop over batches and records: uncompressed data batches are parsed in place.

        The buffer is opened here rather than by a wrapping generator: one generator hop per record less.
        """
        verify = self._verify
        decoders = _decoders
        tiny = _tiny_records
        new_entry = _raw_entry if raw_mode else _new_entry
        tnew = tuple.__new__
        fields_record = FieldsRecord
        new_record = _new_metadata_record
        mp = MappingProxyType
        rv = read_varint
        pos = 0
        truncated_tail = True
        last = self.last_offset
        n_records = 0
        n_batches = 0
        valid = 0
        fast = scan_context(tiny, fields_record, new_entry, new_record)
        opened = open_buffer(self._source)
        buf = opened.__enter__()
        try:
            view = memoryview(buf)
        except BaseException:
            opened.__exit__(None, None, None)
            raise
        end = len(buf)
        try:
            while end - pos >= HEADER_UP_TO_MAGIC:
                if fast is not None:  # the compiled twin of the loop below takes every plain batch it can
                    entries, fast_pos, fast_batches, fast_valid, fast_records, fast_last = fast[0](
                        buf, pos, end, fast[1], raw_mode, verify, _FAST_CHUNK)
                    if fast_batches:
                        it = iter(entries)
                        try:
                            yield from it
                        finally:
                            left = it.__length_hint__()
                            if left:  # the consumer stopped inside the chunk: count what the Python loop would
                                pos, fast_batches, fast_valid, fast_records = _partial_chunk(
                                    buf, pos, len(entries) - left)
                                fast_last = _entry_offset(entries[len(entries) - left - 1])
                            else:
                                pos = fast_pos
                            valid += fast_valid
                            n_batches += fast_batches
                            n_records += fast_records
                            if fast_records:
                                last = fast_last
                        continue
                base, batch_length, epoch = _PROLOGUE.unpack_from(buf, pos)
                if batch_length < MIN_BATCH_LENGTH:
                    truncated_tail = False
                    self._problem(base, pos, f"record batch size {batch_length} is below {MIN_BATCH_LENGTH}")
                    self.stopped_early = True  # no way to find the next batch
                    return
                size = LOG_OVERHEAD + batch_length
                if size > end - pos:
                    break
                batch_pos = pos
                pos += size
                magic = buf[batch_pos + 16]
                if magic != 2 or size < HEADER_SIZE:
                    what = f"unsupported magic {magic}" if magic != 2 else f"size {size} below the v2 header"
                    if self._problem(base, batch_pos, f"record batch at offset {base}: {what}"):
                        truncated_tail = False
                        return
                    continue
                header = HEADER.unpack_from(buf, batch_pos)
                if verify:
                    crc = crc32c(view[batch_pos + CRC_START : pos])
                    if crc != header[4]:
                        message = f"record batch at offset {base} is corrupt (stored crc {header[4]}, computed {crc})"
                        if self._problem(base, batch_pos, message):
                            truncated_tail = False
                            return
                        continue
                valid += size
                n_batches += 1
                attributes = header[5]
                count = header[12]
                base_ts = header[7]
                if attributes & 0x27 or count < 0:  # compressed or control: general path
                    if size - HEADER_SIZE > DEFAULT_MAX_DECOMPRESSED:  # its payload would be copied whole
                        message = (f"record batch at offset {base}: {size - HEADER_SIZE} bytes of records to decode, "
                                   f"beyond the {DEFAULT_MAX_DECOMPRESSED}-byte limit")
                        if self._problem(base, batch_pos, message):
                            truncated_tail = False
                            return
                        continue
                    batch = RecordBatch(*header, batch_pos, bytes(buf[batch_pos + HEADER_SIZE : pos]))
                    control = bool(attributes & 0x20)
                    try:
                        for offset_delta, _t, key, value, _h in iter_raw_records(batch):
                            offset = base + offset_delta
                            try:
                                if control:
                                    record = decode_control_record(key, value)
                                elif value is None:
                                    raise DecodeError("metadata record without a value", 0)
                                else:
                                    record = decode_metadata_record(value)
                            except DecodeError as exc:
                                if self._problem(offset, batch_pos, f"record at offset {offset}: {exc}"):
                                    truncated_tail = False
                                    return
                                continue
                            n_records += 1
                            last = offset
                            yield new_entry(offset, base_ts, epoch, control, record, base)
                    except DecodeError as exc:
                        if self._problem(base, exc.offset, str(exc)):
                            truncated_tail = False
                            return
                    continue
                # Uncompressed data batch: the fused fast path, parsing in place.
                payload = buf
                p = batch_pos + HEADER_SIZE
                pend = pos
                for _ in range(count):
                    rec_start = p
                    try:
                        b = payload[p]
                        if b < 0x80:
                            length = (b >> 1) ^ -(b & 1)
                            p += 1
                        elif payload[p + 1] < 0x80:
                            b = (b & 0x7F) | (payload[p + 1] << 7)
                            length = (b >> 1) ^ -(b & 1)
                            p += 2
                        else:
                            length, p = rv(payload, p)
                        if length < 0 or length > pend - p:
                            raise DecodeError(f"record length {length} does not fit in the batch", rec_start)
                        rend = p + length
                        p += 1  # attributes
                        b = payload[p]
                        if b < 0x80:
                            p += 1
                        else:
                            _ts, p = read_varlong(payload, p)
                        b = payload[p]
                        if b < 0x80:
                            offset_delta = (b >> 1) ^ -(b & 1)
                            p += 1
                        elif payload[p + 1] < 0x80:
                            b = (b & 0x7F) | (payload[p + 1] << 7)
                            offset_delta = (b >> 1) ^ -(b & 1)
                            p += 2
                        else:
                            offset_delta, p = rv(payload, p)
                        if payload[p] == 1:
                            p += 1
                        else:
                            n, p = rv(payload, p)
                            if n < -1 or n > pend - p:
                                raise DecodeError(f"invalid key length {n}", p)
                            if n > 0:
                                p += n
                        b = payload[p]
                        if b < 0x80:
                            vlen = (b >> 1) ^ -(b & 1)
                            p += 1
                        elif payload[p + 1] < 0x80:
                            b = (b & 0x7F) | (payload[p + 1] << 7)
                            vlen = (b >> 1) ^ -(b & 1)
                            p += 2
                        else:
                            vlen, p = rv(payload, p)
                        if vlen < -1 or vlen > pend - p:
                            raise DecodeError(f"invalid value length {vlen}", p)
                        vpos = p
                        if vlen > 0:
                            p += vlen
                        vend = p
                        if payload[p] == 0:
                            p += 1
                        else:
                            _h, p = _read_headers(payload, p, pend)
                        if p != rend:
                            raise DecodeError(f"record size {length} does not match its content", rec_start)
                    except (DecodeError, IndexError) as exc:
                        detail = _bare(exc) if isinstance(exc, DecodeError) else "truncated record"
                        at = rec_start
                        if self._problem(base, at, f"batch at offset {base}: {detail}"):
                            truncated_tail = False
                            return
                        p = -1
                        break
                    offset = base + offset_delta
                    try:
                        if vlen <= 4:
                            if vlen < 0:
                                raise DecodeError("metadata record without a value", 0)
                            raw = payload[vpos:vend]
                            record = tiny.get(raw)
                            if record is None:
                                record = decode_metadata_record(raw)
                                if len(tiny) < 1024:
                                    tiny[raw] = record
                        elif payload[vpos] == 1 and (api_key := payload[vpos + 1]) < 0x80 and (
                            (version := payload[vpos + 2]) < 0x80
                        ):
                            found = decoders.get((api_key << 16) | version)
                            if found is None:
                                found = _decoder(api_key, version)
                            fields, unknown, q = found[0](payload, vpos + 3, vend)
                            if q != vend:
                                raise DecodeError(f"{vend - q} byte(s) of garbage after {found[1]}", q - vpos)
                            if raw_mode:
                                record = tnew(fields_record, (found[1], fields))
                            else:
                                record = new_record(api_key, version, found[1], mp(fields), unknown)
                        else:
                            record = decode_metadata_record(payload[vpos:vend])
                    except (DecodeError, IndexError, struct.error) as exc:
                        detail = _bare(exc) if isinstance(exc, DecodeError) else "truncated metadata record"
                        if self._problem(offset, batch_pos, f"record at offset {offset}: {detail}"):
                            truncated_tail = False
                            return
                        continue
                    n_records += 1
                    last = offset
                    if raw_mode:
                        yield (offset, base_ts, epoch, False, record, base)
                    else:
                        yield new_entry(offset, base_ts, epoch, False, record, base)
                if p != pend and p != -1:
                    message = f"batch at offset {base}: {pend - p} byte(s) after its {count} records"
                    p = -1
                    if self._problem(base, batch_pos, message):
                        truncated_tail = False
                        return
        finally:
            view.release()
            opened.__exit__(None, None, None)
            self.valid_bytes += valid
            self.batches += n_batches
            self.last_offset = last
            self.records += n_records
            if truncated_tail:
                self.trailing_invalid_bytes = end - pos


_FAST_CHUNK = 2048
"""Records per call of the compiled scan (it stops after the batch that reaches this many)."""


def _entry_offset(entry: Any) -> int:
    return entry[0] if type(entry) is tuple else entry.offset


def _partial_chunk(buf, pos: int, consumed: int) -> tuple[int, int, int, int]:
    """``(end of the batch holding record number consumed, batches, bytes, records)`` of the plain batches from
    ``pos`` that the compiled scan read, as the Python loop counts them when its consumer stops after ``consumed``
    records (a batch counts before its first record is yielded)."""
    batches = valid = records = 0
    while records < consumed:
        _base, batch_length, _epoch = _PROLOGUE.unpack_from(buf, pos)
        size = LOG_OVERHEAD + batch_length
        pos += size
        batches += 1
        valid += size
        records += HEADER.unpack_from(buf, pos - size)[12]
    return pos, batches, valid, consumed


def iter_metadata_log(source, *, verify_crc: bool = True, on_error: str = "stop") -> MetadataLog:
    """Records of a metadata ``.log``/``.checkpoint`` file (path) or buffer; iterate the returned object,
    then read its summary attributes (``last_offset``, ``trailing_invalid_bytes``, ``errors``, ...)."""
    return MetadataLog(source, verify_crc=verify_crc, on_error=on_error)
