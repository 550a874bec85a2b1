"""Read ``__remote_log_metadata-N`` replicas (ordinary Kafka log dirs) into events, and say how complete they are.

Each replica dir is read with the project's record-batch reader, segment files (``<20 digits>.log``) in base-offset
order. The topic is not compacted, so its offsets run without a hole from the log start: a batch that does not
start where the previous one ended, a segment file that does not start where the previous one ended, a batch with
fewer records than its offset span, a batch the reader refuses (CRC, size, magic), or a record that does not decode
makes everything from that offset on *unreliable*: a record there may be missing. A partial batch at the very end of
the last segment is the tail being written and only noted.

Per metadata partition the most complete replica is kept (:func:`choose_replica`), and :class:`MetadataCoverage`
answers the two questions classification asks:

* may a segment of topic partition P be *unrecorded* (its events lost)? yes unless the topic's retention is
  infinite, the partition count is known, and P's metadata partition was read from offset 0 with nothing
  unreliable;
* may an event *later* than offset O of metadata partition M be missing? yes when something from O on is
  unreliable.

``as_of_ms`` of a replica is the newest modification time of its segment files: no event in the replica is newer,
so a grace clock measured up to it can never run past events that the replica had not received yet.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from pipelines.errors import DecodeError
from pipelines.kafka.record_batch import BatchIterator, iter_raw_records, open_buffer
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import PartitionDeleteEvent, SegmentEvent, event_from_record
from pipelines.remote_tier.metadata_codec import decode_remote_record
from pipelines.remote_tier.partitioner import metadata_partition

__all__ = ["METADATA_TOPIC", "MetadataCoverage", "PartitionRead", "choose_replica", "read_replica",
           "read_replica_segments", "read_replicas_under"]

METADATA_TOPIC = "__remote_log_metadata"
_SEGMENT = re.compile(r"(\d{20})\.log")
_DIR = re.compile(re.escape(METADATA_TOPIC) + r"-(0|[1-9]\d{0,9})")
Event = SegmentEvent | PartitionDeleteEvent


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """One replica of one metadata partition, read. ``unreliable_from``/``unreliable_last`` are the lowest and the
    highest offset at which a run of missing or unreadable records starts (``None``: there is none)."""

    metadata_partition: int
    source: str
    first_offset: int | None
    last_offset: int | None
    events: tuple[Event, ...] = field(repr=False)
    unreliable_from: int | None
    unreliable_last: int | None
    problems: tuple[str, ...]
    as_of_ms: int | None
    events_read: int = 0
    """How many events were read, when ``events`` was left out (a summary shipped from a Spark task)."""

    @property
    def event_count(self) -> int:
        return max(len(self.events), self.events_read)

    @property
    def starts_at_zero(self) -> bool:
        return self.first_offset == 0

    @property
    def whole(self) -> bool:
        """Read from offset 0 with nothing unreliable."""
        return self.starts_at_zero and self.unreliable_from is None


class PartitionReader:
    """One ``__remote_log_metadata`` partition read batch by batch (from segment files or fetch responses): its
    events, the first offset, and from which offset it is unreliable, with the problems."""

    def __init__(self, metadata_partition: int, source: str) -> None:
        self.partition = metadata_partition
        self.source = source
        self.first: int | None = None
        self.expected: int | None = None
        self.events: list[Event] = []
        self.unreliable: int | None = None
        self.unreliable_last: int | None = None
        self.problems: list[str] = []

    def bad(self, offset: int | None, message: str) -> None:
        self.problems.append(message)
        at = offset if offset is not None else (self.expected if self.expected is not None else 0)
        self.unreliable = at if self.unreliable is None else min(self.unreliable, at)
        self.unreliable_last = at if self.unreliable_last is None else max(self.unreliable_last, at)

    def segment(self, base: int, buf, last: bool) -> None:
        if self.expected is not None and base != self.expected:
            self.bad(min(base, self.expected), f"segment {base:020d}.log starts at {base}, expected {self.expected}")
            self.expected = base
        it = self.batches(buf, f"segment {base:020d}.log", None)
        if it.trailing_invalid_bytes:
            note = f"segment {base:020d}.log: {it.trailing_invalid_bytes} byte(s) of partial batch at its end"
            if last:
                self.problems.append(note + " (the tail being written)")
            else:
                self.bad(self.expected, note)

    def batches(self, buf, where: str, error_offset: int | None) -> BatchIterator:
        """Every batch of ``buf`` checked (CRC, offsets following on) and its records decoded; a batch that does
        not parse is a problem of ``where`` (at ``error_offset`` when the batch itself is unknown). Returns the
        exhausted iterator (its trailing bytes say whether ``buf`` ended in a partial batch)."""
        it = BatchIterator(buf, verify_crc=True, strict=False)
        for batch in it:
            if self.first is None:
                self.first = batch.base_offset
            if self.expected is not None and batch.base_offset != self.expected:
                self.bad(min(batch.base_offset, self.expected),
                         f"batch at offset {batch.base_offset} follows offset {self.expected - 1}")
            self.expected = batch.next_offset
            if not batch.is_control:
                self._records(batch)
        for err in it.errors:
            self.bad(err.batch.base_offset if err.batch is not None else error_offset, f"{where}: {err.message}")
        return it

    def _records(self, batch) -> None:
        count = 0
        try:
            for delta, _ts, _key, value, _headers in iter_raw_records(batch):
                count += 1
                offset = batch.base_offset + delta
                try:
                    if value is None:
                        raise DecodeError("record without a value")
                    event = event_from_record(decode_remote_record(value), self.partition, offset)
                except DecodeError as exc:
                    self.bad(offset, f"record at offset {offset}: {exc}")
                    continue
                self.events.append(event)
        except DecodeError as exc:
            self.bad(batch.base_offset, f"batch at offset {batch.base_offset}: {exc}")
            return
        if count != batch.last_offset_delta + 1:
            self.bad(batch.base_offset, f"batch at offset {batch.base_offset} holds {count} records for "
                                        f"{batch.last_offset_delta + 1} offsets")

    def result(self, as_of_ms: int | None) -> PartitionRead:
        last = None if self.expected is None else self.expected - 1
        return PartitionRead(self.partition, self.source, self.first, last, tuple(self.events), self.unreliable,
                             self.unreliable_last, tuple(self.problems), as_of_ms)


def read_replica_segments(metadata_partition: int, segments: Sequence[tuple[int, object]], *, source: str = "",
                          as_of_ms: int | None = None) -> PartitionRead:
    """Read ``(base offset, bytes or path)`` segment files of one replica (any order; sorted by base offset)."""
    reader = PartitionReader(metadata_partition, source)
    ordered = sorted(segments, key=lambda item: item[0])
    for i, (base, src) in enumerate(ordered):
        with open_buffer(src) as buf:
            reader.segment(base, buf, i == len(ordered) - 1)
    return reader.result(as_of_ms)


def read_replica(path: str | os.PathLike[str], *, as_of_ms: int | None = None) -> PartitionRead:
    """Read one ``__remote_log_metadata-N`` directory.

    ``as_of_ms`` overrides the replica's time (the newest segment-file mtime) for a caller that knows better, e.g.
    the crawl time of the partition leader's replica on a live broker; never pass a time the replica may lag.

    Raises:
        ValueError: the directory's name is not ``__remote_log_metadata-<partition>``.
        OSError: the directory or a segment file cannot be read.
    """
    name = os.path.basename(os.fspath(path).rstrip("/"))
    m = _DIR.fullmatch(name)
    if m is None:
        raise ValueError(f"{name!r} is not a {METADATA_TOPIC}-<partition> directory")
    segments = []
    newest = None
    with os.scandir(path) as entries:
        for entry in entries:
            found = _SEGMENT.fullmatch(entry.name)
            if found is None or not entry.is_file(follow_symlinks=False):
                continue
            segments.append((int(found.group(1)), entry.path))
            mtime = entry.stat(follow_symlinks=False).st_mtime_ns // 1_000_000
            newest = mtime if newest is None else max(newest, mtime)
    return read_replica_segments(int(m.group(1)), segments, source=os.fspath(path),
                                 as_of_ms=newest if as_of_ms is None else as_of_ms)


def read_replicas_under(root: str | os.PathLike[str]) -> list[PartitionRead]:
    """Read every ``__remote_log_metadata-N`` directory directly under ``root`` (a log dir, or a copied directory
    holding replicas), in name order. Other entries are ignored; a symlinked replica dir is not followed."""
    found = []
    with os.scandir(root) as entries:
        for entry in entries:
            if _DIR.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                found.append(entry.path)
    return [read_replica(p) for p in sorted(found)]


def choose_replica(reads: Iterable[PartitionRead]) -> PartitionRead:
    """The most complete replica: read from offset 0, then nothing unreliable, then the highest last offset, then the
    most events; ties go to the first source in name order."""
    ordered = sorted(reads, key=lambda r: r.source)
    if not ordered:
        raise ValueError("no replica to choose from")
    return max(ordered, key=lambda r: (r.starts_at_zero, r.unreliable_from is None,
                                       -1 if r.last_offset is None else r.last_offset, r.event_count))


@dataclass(frozen=True)
class MetadataCoverage:
    """What was read of the metadata topic: one chosen replica per partition, the partition count and retention.

    ``num_partitions`` is the topic's partition count in the controller image (``None``: unknown);
    ``retention_infinite`` says that both ``retention.ms`` and ``retention.bytes`` are -1 (Kafka's default for this
    topic), so nothing was ever removed from it on purpose.
    """

    partitions: Mapping[int, PartitionRead]
    num_partitions: int | None
    retention_infinite: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", MappingProxyType(dict(self.partitions)))

    @classmethod
    def from_replicas(cls, reads: Iterable[PartitionRead], num_partitions: int | None,
                      retention_infinite: bool) -> MetadataCoverage:
        by_partition: dict[int, list[PartitionRead]] = {}
        for read in reads:
            by_partition.setdefault(read.metadata_partition, []).append(read)
        chosen = {p: choose_replica(rs) for p, rs in by_partition.items()}
        return cls(chosen, num_partitions, retention_infinite)

    def events(self) -> list[Event]:
        """Every event of the chosen replicas, in (metadata partition, offset) order."""
        out: list[Event] = []
        for p in sorted(self.partitions):
            out.extend(self.partitions[p].events)
        return out

    def partition_for(self, topic_id: Uuid, partition: int) -> int | None:
        if self.num_partitions is None:
            return None
        return metadata_partition(topic_id, partition, self.num_partitions)

    def unrecorded_reason(self, topic_id: Uuid, partition: int) -> str | None:
        """Why events of ``(topic_id, partition)`` may be missing from what was read, or ``None`` if none can be."""
        if not self.retention_infinite:
            return f"{METADATA_TOPIC} retention is not infinite"
        mp = self.partition_for(topic_id, partition)
        if mp is None:
            return f"the partition count of {METADATA_TOPIC} is unknown"
        read = self.partitions.get(mp)
        if read is None:
            return f"{METADATA_TOPIC}-{mp} was not read"
        if read.first_offset is None:
            return f"{METADATA_TOPIC}-{mp} holds no record (its replica may have been emptied)"
        if not read.starts_at_zero:
            return f"{METADATA_TOPIC}-{mp} was read from offset {read.first_offset}, not 0"
        if read.unreliable_from is not None:
            return f"{METADATA_TOPIC}-{mp} may miss records from offset {read.unreliable_from}"
        return None

    def later_events_reason(self, metadata_partition: int, offset: int) -> str | None:
        """Why an event after ``offset`` of that metadata partition may be missing, or ``None``."""
        read = self.partitions.get(metadata_partition)
        if read is None:
            return f"{METADATA_TOPIC}-{metadata_partition} was not read"
        if read.unreliable_last is not None and read.unreliable_last > offset:
            return f"{METADATA_TOPIC}-{metadata_partition} may miss records from offset {read.unreliable_last}"
        return None

    def as_of_ms(self, metadata_partition: int | None) -> int | None:
        """The time up to which a partition's replica is known current (``None``: not known)."""
        if metadata_partition is None:
            known = [r.as_of_ms for r in self.partitions.values()]
            return None if not known or None in known else min(known)  # type: ignore[type-var]
        read = self.partitions.get(metadata_partition)
        return None if read is None else read.as_of_ms
