"""Typed ``__remote_log_metadata`` events: what replay consumes, and what the test-support writer encodes.

A :class:`SegmentEvent` is one ``RemoteLogSegmentMetadataRecord`` (apiKey 0: a full segment description, always
``COPY_SEGMENT_STARTED`` when a broker writes it) or one ``RemoteLogSegmentMetadataUpdateRecord`` (apiKey 1: a state
change of a segment named by ``RemoteLogSegmentId``). A :class:`PartitionDeleteEvent` is one
``RemotePartitionDeleteMetadataRecord`` (apiKey 2; stock Kafka never writes it, plugins or tools may). Each event
keeps where it was read: the metadata topic's partition and the record's offset.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.metadata_codec import RemoteMetadataRecord, make_remote_record
from pipelines.remote_tier.metadata_schema import PARTITION_DELETE, SEGMENT_METADATA, SEGMENT_UPDATE

__all__ = ["PartitionDeleteEvent", "PartitionDeleteState", "SegmentEvent", "SegmentKey", "SegmentState",
           "event_from_record", "event_to_record"]


class SegmentState(enum.IntEnum):
    """``RemoteLogSegmentState`` ids."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class PartitionDeleteState(enum.IntEnum):
    """``RemotePartitionDeleteState`` ids."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


SegmentKey = tuple[Uuid, int, Uuid]
"""``(topic_id, partition, segment_id)``: Kafka's ``RemoteLogSegmentId`` without the topic name."""


@dataclass(frozen=True, slots=True)
class SegmentEvent:
    """One segment record. ``full`` is True for apiKey 0 (offsets, size and epochs given), False for an update."""

    topic: str
    topic_id: Uuid
    partition: int
    segment_id: Uuid
    state: int
    broker_id: int
    event_timestamp_ms: int
    full: bool
    start_offset: int | None = None
    end_offset: int | None = None
    size: int | None = None
    max_timestamp_ms: int | None = None
    leader_epochs: tuple[tuple[int, int], ...] = ()
    custom_metadata: bytes | None = None
    metadata_partition: int = -1
    offset: int = -1

    @property
    def key(self) -> SegmentKey:
        return (self.topic_id, self.partition, self.segment_id)


@dataclass(frozen=True, slots=True)
class PartitionDeleteEvent:
    """One partition delete record."""

    topic: str
    topic_id: Uuid
    partition: int
    state: int
    broker_id: int
    event_timestamp_ms: int
    metadata_partition: int = -1
    offset: int = -1


def event_from_record(record: RemoteMetadataRecord, metadata_partition: int = -1,
                      offset: int = -1) -> SegmentEvent | PartitionDeleteEvent:
    """The event a decoded record states.

    Raises:
        DecodeError: a snapshot record (apiKey 3), which belongs in a ``remote_log_snapshot`` file, not the topic.
    """
    f = record.fields
    if record.api_key == PARTITION_DELETE:
        tip = f["topic_id_partition"]
        return PartitionDeleteEvent(tip["name"], tip["id"], tip["partition"], f["remote_partition_delete_state"],
                                    f["broker_id"], f["event_timestamp_ms"], metadata_partition, offset)
    if record.api_key not in (SEGMENT_METADATA, SEGMENT_UPDATE):
        raise DecodeError(f"{record.name} (apiKey {record.api_key}) is not an event of the metadata topic")
    sid = f["remote_log_segment_id"]
    tip = sid["topic_id_partition"]
    common: dict[str, Any] = dict(
        topic=tip["name"], topic_id=tip["id"], partition=tip["partition"], segment_id=sid["id"],
        state=f["remote_log_segment_state"], broker_id=f["broker_id"], event_timestamp_ms=f["event_timestamp_ms"],
        custom_metadata=f["custom_metadata"], metadata_partition=metadata_partition, offset=offset,
    )
    if record.api_key == SEGMENT_UPDATE:
        return SegmentEvent(full=False, **common)
    epochs = tuple((e["leader_epoch"], e["offset"]) for e in f["segment_leader_epochs"])
    return SegmentEvent(full=True, start_offset=f["start_offset"], end_offset=f["end_offset"],
                        size=f["segment_size_in_bytes"], max_timestamp_ms=f["max_timestamp_ms"],
                        leader_epochs=epochs, **common)


def event_to_record(event: SegmentEvent | PartitionDeleteEvent, version: int = 0) -> RemoteMetadataRecord:
    """The record Kafka's transforms would build for ``event`` (test support: fields Kafka leaves out stay default)."""
    if isinstance(event, PartitionDeleteEvent):
        tip = {"name": event.topic, "id": event.topic_id, "partition": event.partition}
        return make_remote_record(PARTITION_DELETE, version, topic_id_partition=tip, broker_id=event.broker_id,
                                  event_timestamp_ms=event.event_timestamp_ms,
                                  remote_partition_delete_state=event.state)
    sid = {"topic_id_partition": {"name": event.topic, "id": event.topic_id, "partition": event.partition},
           "id": event.segment_id}
    common = dict(remote_log_segment_id=sid, broker_id=event.broker_id, event_timestamp_ms=event.event_timestamp_ms,
                  custom_metadata=event.custom_metadata, remote_log_segment_state=event.state)
    if not event.full:
        return make_remote_record(SEGMENT_UPDATE, version, **common)
    epochs = tuple({"leader_epoch": e, "offset": o} for e, o in event.leader_epochs)
    return make_remote_record(SEGMENT_METADATA, version, start_offset=event.start_offset or 0,
                              end_offset=event.end_offset or 0, max_timestamp_ms=event.max_timestamp_ms or 0,
                              segment_leader_epochs=epochs, segment_size_in_bytes=event.size or 0, **common)
