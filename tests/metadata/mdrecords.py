"""Builders for metadata records and log entries used by the tests in this directory (real codec classes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pipelines.kafka.metadata_codec import MetadataRecord, make_control_record, make_record
from pipelines.kafka.metadata_log import LogEntry
from pipelines.kafka.uuid import Uuid


def tid(n: int) -> Uuid:
    """A topic id that is never reserved."""
    return Uuid(0x1000 + n, 0x2000 + n)


def did(n: int) -> Uuid:
    """A directory id outside the reserved range."""
    return Uuid(0x3000 + n, 0x4000 + n)


def topic(name: str, topic_id: Uuid) -> MetadataRecord:
    return make_record("TopicRecord", name=name, topic_id=topic_id)


def partition(topic_id: Uuid, p: int, replicas: Sequence[int], *, isr: Sequence[int] | None = None,
              leader: int | None = None, dirs: Sequence[Uuid] = (), version: int | None = None,
              leader_epoch: int = 0, partition_epoch: int = 0, **extra: Any) -> MetadataRecord:
    return make_record(
        "PartitionRecord", version, partition_id=p, topic_id=topic_id, replicas=tuple(replicas),
        isr=tuple(replicas if isr is None else isr), leader=replicas[0] if leader is None else leader,
        leader_epoch=leader_epoch, partition_epoch=partition_epoch, directories=tuple(dirs), **extra,
    )


def change(topic_id: Uuid, p: int, **fields: Any) -> MetadataRecord:
    fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in fields.items()}
    return make_record("PartitionChangeRecord", partition_id=p, topic_id=topic_id, **fields)


def remove(topic_id: Uuid) -> MetadataRecord:
    return make_record("RemoveTopicRecord", topic_id=topic_id)


def config(resource_type: int, resource_name: str, key: str, value: str | None) -> MetadataRecord:
    return make_record("ConfigRecord", resource_type=resource_type, resource_name=resource_name, name=key,
                       value=value)


def broker(broker_id: int, epoch: int, *, log_dirs: Sequence[Uuid] = (), fenced: bool = True,
           rack: str | None = None) -> MetadataRecord:
    return make_record("RegisterBrokerRecord", broker_id=broker_id, broker_epoch=epoch, log_dirs=tuple(log_dirs),
                       fenced=fenced, rack=rack, incarnation_id=Uuid(9, broker_id))


def broker_change(broker_id: int, epoch: int, **fields: Any) -> MetadataRecord:
    return make_record("BrokerRegistrationChangeRecord", broker_id=broker_id, broker_epoch=epoch, **fields)


def feature(name: str, level: int) -> MetadataRecord:
    return make_record("FeatureLevelRecord", name=name, feature_level=level)


def named(record_name: str, /, **fields: Any) -> MetadataRecord:
    return make_record(record_name, **fields)


def entries(records: Iterable[Any], *, start: int = 0, batch_sizes: Iterable[int] | None = None,
            timestamp_ms: int = 1_700_000_000_000, epoch: int = 1) -> list[LogEntry]:
    """Log entries with consecutive offsets from ``start``; batches cut by ``batch_sizes`` (default: one batch)."""
    out: list[LogEntry] = []
    sizes = iter(batch_sizes or ())
    base, left = start, next(sizes, 1 << 30)
    for i, rec in enumerate(records):
        offset = start + i
        if left == 0:
            base, left = offset, next(sizes, 1 << 30)
        control = not isinstance(rec, MetadataRecord)
        out.append(LogEntry(offset, timestamp_ms + (base - start), epoch, control, rec, base))
        left -= 1
    return out


def snapshot_entries(records: Iterable[MetadataRecord], *, timestamp_ms: int = 1_600_000_000_000) -> list[LogEntry]:
    header = make_control_record("SNAPSHOT_HEADER", last_contained_log_timestamp=timestamp_ms)
    footer = make_control_record("SNAPSHOT_FOOTER")
    return entries([header, *records, footer], timestamp_ms=timestamp_ms + 5)


def encode_log(records: Sequence[Any], *, start: int = 0, batch_size: int = 3, epoch: int = 1,
               timestamp_ms: int = 1_700_000_000_000) -> bytes:
    """A metadata log segment: data records in batches of ``batch_size``; control records get their own batch."""
    from pipelines.kafka.metadata_codec import encode_control_record, encode_metadata_record
    from pipelines.kafka.record_batch import encode_batch

    out = bytearray()
    offset = start
    pending: list[bytes] = []

    def flush() -> None:
        nonlocal offset
        if pending:
            out.extend(encode_batch(pending, offset, epoch=epoch, timestamp_ms=timestamp_ms + offset))
            offset += len(pending)
            pending.clear()

    for rec in records:
        if isinstance(rec, MetadataRecord):
            pending.append(encode_metadata_record(rec))
            if len(pending) >= batch_size:
                flush()
        else:
            flush()
            out.extend(encode_batch([encode_control_record(rec)], offset, epoch=epoch,
                                    timestamp_ms=timestamp_ms + offset, is_control=True))
            offset += 1
    flush()
    return bytes(out)


def encode_snapshot(records: Sequence[MetadataRecord], *, timestamp_ms: int = 1_600_000_000_000,
                    epoch: int = 1) -> bytes:
    header = make_control_record("SNAPSHOT_HEADER", last_contained_log_timestamp=timestamp_ms)
    footer = make_control_record("SNAPSHOT_FOOTER")
    return encode_log([header, *records, footer], epoch=epoch, timestamp_ms=timestamp_ms, batch_size=100)
