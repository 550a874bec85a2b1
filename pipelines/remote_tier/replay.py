"""Replay ``__remote_log_metadata`` events to each segment's latest state, the way the broker's cache does.

Kafka's ``RemoteLogMetadataCache`` accepts a segment event only along ``RemoteLogSegmentState.isValidTransition``::

    (none) -> COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED
                                   \\________________________/
    (and a state to itself: retries)

and drops every other event with an error in its log: a full ``RemoteLogSegmentMetadataRecord`` in any state but
``COPY_SEGMENT_STARTED``, an update to ``COPY_SEGMENT_STARTED``, an update after ``DELETE_SEGMENT_FINISHED`` (the
segment is gone from its cache; a new ``COPY_SEGMENT_STARTED`` of the same id starts over). Replay here follows the
same rules, so "latest state" means the state Kafka itself holds, never a stale event read last: a stray
``COPY_SEGMENT_STARTED`` after ``COPY_SEGMENT_FINISHED`` leaves the segment finished (and live).

One deliberate difference: an update whose segment has no earlier record (its ``RemoteLogSegmentMetadataRecord``
was lost to retention or to a gap) is dropped by Kafka but kept here with ``base_missing``: a record still names
the segment, so it is not "untracked", and its state says what the broker last did with it.

Partition delete events (``DELETE_PARTITION_*``) are kept per topic partition, latest first; unknown state ids are
dropped and counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import (
    PartitionDeleteEvent,
    PartitionDeleteState,
    SegmentEvent,
    SegmentKey,
    SegmentState,
)

__all__ = ["PartitionDeleteStatus", "RemoteMetadataImage", "ReplayedSegment", "is_valid_transition", "replay"]

_MAX_NOTES = 100
_S = SegmentState
_NEXT = {
    _S.COPY_SEGMENT_STARTED: {_S.COPY_SEGMENT_STARTED, _S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED},
    _S.COPY_SEGMENT_FINISHED: {_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED},
    _S.DELETE_SEGMENT_STARTED: {_S.DELETE_SEGMENT_STARTED, _S.DELETE_SEGMENT_FINISHED},
    _S.DELETE_SEGMENT_FINISHED: {_S.DELETE_SEGMENT_FINISHED},
}


def is_valid_transition(current: SegmentState | None, target: SegmentState) -> bool:
    """``RemoteLogSegmentState.isValidTransition``: from nothing only to COPY_SEGMENT_STARTED."""
    if current is None:
        return target == _S.COPY_SEGMENT_STARTED
    return target in _NEXT[current]


@dataclass(frozen=True, slots=True)
class ReplayedSegment:
    """A segment's latest accepted state, with the fields of its latest full record and of its latest event.

    ``metadata_partition``/``offset`` locate the latest accepted event; ``first_event_ms`` is the time of the first
    accepted one; ``dropped`` counts this segment's events Kafka would have dropped.
    """

    topic: str
    topic_id: Uuid
    partition: int
    segment_id: Uuid
    state: SegmentState
    event_timestamp_ms: int
    broker_id: int
    first_event_ms: int
    start_offset: int | None
    end_offset: int | None
    size: int | None
    max_timestamp_ms: int | None
    leader_epochs: tuple[tuple[int, int], ...]
    metadata_partition: int
    offset: int
    base_missing: bool
    metadata_partitions: frozenset[int]
    dropped: int = 0

    @property
    def key(self) -> SegmentKey:
        return (self.topic_id, self.partition, self.segment_id)


@dataclass(frozen=True, slots=True)
class PartitionDeleteStatus:
    """The latest ``DELETE_PARTITION_*`` event of a topic partition."""

    topic: str
    topic_id: Uuid
    partition: int
    state: PartitionDeleteState
    event_timestamp_ms: int
    broker_id: int


@dataclass(frozen=True)
class RemoteMetadataImage:
    """The replayed metadata: segments by ``(topic_id, partition, segment_id)``, partition deletes by
    ``(topic_id, partition)``, the number of events dropped and the first notes about them."""

    segments: Mapping[SegmentKey, ReplayedSegment]
    partition_deletes: Mapping[tuple[Uuid, int], PartitionDeleteStatus]
    dropped: int
    notes: tuple[str, ...]


def _new(e: SegmentEvent, state: SegmentState, base_missing: bool) -> ReplayedSegment:
    return ReplayedSegment(
        e.topic, e.topic_id, e.partition, e.segment_id, state, e.event_timestamp_ms, e.broker_id,
        e.event_timestamp_ms, e.start_offset, e.end_offset, e.size, e.max_timestamp_ms, e.leader_epochs,
        e.metadata_partition, e.offset, base_missing, frozenset({e.metadata_partition}),
    )  # fmt: skip


class _Replay:
    def __init__(self) -> None:
        self.segments: dict[SegmentKey, ReplayedSegment] = {}
        self.deletes: dict[tuple[Uuid, int], PartitionDeleteStatus] = {}
        self.dropped = 0
        self.notes: list[str] = []

    def drop(self, e: SegmentEvent | PartitionDeleteEvent, why: str) -> None:
        self.dropped += 1
        if len(self.notes) < _MAX_NOTES:
            self.notes.append(f"{why} (metadata partition {e.metadata_partition}, offset {e.offset})")
        if isinstance(e, SegmentEvent) and e.key in self.segments:
            cur = self.segments[e.key]
            self.segments[e.key] = replace(cur, dropped=cur.dropped + 1,
                                           metadata_partitions=cur.metadata_partitions | {e.metadata_partition})

    def segment(self, e: SegmentEvent) -> None:
        if e.state not in _S._value2member_map_:
            self.drop(e, f"segment {e.segment_id}: unknown state id {e.state}")
            return
        target = _S(e.state)
        cur = self.segments.get(e.key)
        if e.full:
            if target != _S.COPY_SEGMENT_STARTED:
                self.drop(e, f"segment {e.segment_id}: a full record in state {target.name}")
                return
            if cur is None or cur.state in (_S.COPY_SEGMENT_STARTED, _S.DELETE_SEGMENT_FINISHED):
                fresh = _new(e, target, False)
                if cur is not None:
                    fresh = replace(fresh, dropped=cur.dropped,
                                    metadata_partitions=cur.metadata_partitions | fresh.metadata_partitions)
                self.segments[e.key] = fresh
            else:
                self.drop(e, f"segment {e.segment_id}: {cur.state.name} cannot go back to {target.name}")
            return
        if target == _S.COPY_SEGMENT_STARTED:
            self.drop(e, f"segment {e.segment_id}: an update to COPY_SEGMENT_STARTED")
            return
        if cur is None:
            self.segments[e.key] = _new(e, target, True)
            return
        if not is_valid_transition(cur.state, target):
            self.drop(e, f"segment {e.segment_id}: {cur.state.name} cannot go to {target.name}")
            return
        self.segments[e.key] = replace(
            cur, state=target, event_timestamp_ms=e.event_timestamp_ms, broker_id=e.broker_id,
            metadata_partition=e.metadata_partition, offset=e.offset,
            metadata_partitions=cur.metadata_partitions | {e.metadata_partition},
        )

    def partition_delete(self, e: PartitionDeleteEvent) -> None:
        if e.state not in PartitionDeleteState._value2member_map_:
            self.drop(e, f"partition {e.topic_id}/{e.partition}: unknown partition delete state id {e.state}")
            return
        self.deletes[(e.topic_id, e.partition)] = PartitionDeleteStatus(
            e.topic, e.topic_id, e.partition, PartitionDeleteState(e.state), e.event_timestamp_ms, e.broker_id)


def replay(events: Iterable[SegmentEvent | PartitionDeleteEvent]) -> RemoteMetadataImage:
    """Replay events in the order given: within one metadata partition that must be offset order (as
    :meth:`~pipelines.remote_tier.metadata_topic.MetadataCoverage.events` returns them)."""
    r = _Replay()
    for e in events:
        if isinstance(e, PartitionDeleteEvent):
            r.partition_delete(e)
        else:
            r.segment(e)
    return RemoteMetadataImage(MappingProxyType(r.segments), MappingProxyType(r.deletes), r.dropped, tuple(r.notes))
