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

from collections.abc import Iterator
from dataclasses import dataclass

from pipelines.errors import DecodeError
from pipelines.kafka.metadata_codec import (
    ControlRecord,
    MetadataRecord,
    decode_control_record,
    decode_metadata_record,
)
from pipelines.kafka.record_batch import BatchIterator, iter_raw_records, open_buffer

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


@dataclass(frozen=True, slots=True)
class LogError:
    """A problem: ``offset`` is the record/batch offset when known, ``position`` the file byte position."""

    offset: int | None
    position: int | None
    message: str


class MetadataLog:
    """Iterable over the records of one file or buffer; see the module docstring for ``on_error``.

    A path is memory-mapped for the duration of one iteration.
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

    def __iter__(self) -> Iterator[LogEntry]:
        raising = self._on_error == "raise"
        with open_buffer(self._source) as buf:
            batches = BatchIterator(buf, verify_crc=self._verify, strict=raising)
            try:
                yield from self._entries(batches, raising)
            finally:
                self.valid_bytes = batches.valid_bytes
                self.trailing_invalid_bytes = batches.trailing_invalid_bytes
                for err in batches.errors:
                    offset = err.batch.base_offset if err.batch else None
                    self.errors.append(LogError(offset, err.position, err.message))
                if batches.errors and self._on_error == "stop":
                    self.stopped_early = True

    def _entries(self, batches: BatchIterator, raising: bool) -> Iterator[LogEntry]:
        stop = self._on_error == "stop"
        for batch in batches:
            if stop and batches.errors:
                return
            self.batches += 1
            base = batch.base_offset
            ts = batch.base_timestamp
            epoch = batch.partition_leader_epoch
            control = batch.is_control
            try:
                for offset_delta, _ts_delta, key, value, _headers in iter_raw_records(batch):
                    offset = base + offset_delta
                    try:
                        record = decode_control_record(key, value) if control else decode_metadata_record(value)
                    except DecodeError as exc:
                        message = f"record at offset {offset}: {exc}"
                        if raising:
                            raise DecodeError(message, batch.position) from None
                        self.errors.append(LogError(offset, batch.position, message))
                        if stop:
                            self.stopped_early = True
                            return
                        continue
                    self.records += 1
                    self.last_offset = offset
                    yield LogEntry(offset, ts, epoch, control, record, base)
            except DecodeError as exc:  # framing error inside the batch
                if raising:
                    raise
                self.errors.append(LogError(base, exc.offset, str(exc)))
                if stop:
                    self.stopped_early = True
                    return


def iter_metadata_log(source, *, verify_crc: bool = True, on_error: str = "stop") -> MetadataLog:
    """Records of a metadata ``.log``/``.checkpoint`` file (path) or buffer; iterate the returned object,
    then read its summary attributes (``last_offset``, ``trailing_invalid_bytes``, ``errors``, ...)."""
    return MetadataLog(source, verify_crc=verify_crc, on_error=on_error)
