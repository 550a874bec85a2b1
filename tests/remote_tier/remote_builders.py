"""Shared builders for the remote-tier tests: ids, events and replica directories."""

from __future__ import annotations

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import SegmentEvent, SegmentState

HOUR = 3_600_000
DAY = 24 * HOUR


def uid(n: int) -> Uuid:
    return Uuid(0x1000 + n, 0x2000 + n)


def copy_started(topic: str, tid: Uuid, partition: int, sid: Uuid, at: int, start: int = 0, **kw) -> SegmentEvent:
    return SegmentEvent(topic, tid, partition, sid, SegmentState.COPY_SEGMENT_STARTED, 1, at, True, start_offset=start,
                        end_offset=start + 99, size=1000, max_timestamp_ms=at, leader_epochs=((0, start),), **kw)


def update(topic: str, tid: Uuid, partition: int, sid: Uuid, state: int, at: int, **kw) -> SegmentEvent:
    return SegmentEvent(topic, tid, partition, sid, state, 1, at, False, **kw)
