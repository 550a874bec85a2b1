"""What an operator asks of a replayed controller log first, in figures that fit one screen.

``summarize(result)`` reduces a :class:`~pipelines.metadata.metadata_log_source.ReplayResult` to: the offsets
and append times covered, the snapshot used, completeness, brokers, topic and partition counts with the partitions
that need attention, the largest topics, and the most recent topic deletions and recreations (a ``topic_created``
whose name an earlier topic id had). Only the topic events are walked; the image is read, never copied.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from pipelines.kafka.uuid import Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.metadata_log_source import ReplayResult

__all__ = ["MetadataSummary", "TopicChange", "summarize"]


@dataclass(frozen=True, slots=True)
class TopicChange:
    """A topic deletion (``previous_id`` None) or recreation (the id the name had before)."""

    offset: int
    timestamp_ms: int
    topic: str | None
    topic_id: Uuid | None
    previous_id: Uuid | None = None
    from_snapshot: bool = False


@dataclass(frozen=True, slots=True)
class MetadataSummary:
    first_offset: int | None
    last_offset: int
    first_timestamp_ms: int | None
    last_timestamp_ms: int
    snapshot: str | None
    segments: int
    topics: int
    partitions: int
    replicas: int
    under_replicated: int
    offline: int
    reassigning: int
    largest: tuple[tuple[str, int, int], ...]
    """(topic, partitions, replication factor), most partitions first."""
    deletions: int
    recreations: int
    recent_deletions: tuple[TopicChange, ...]
    recent_recreations: tuple[TopicChange, ...]


def summarize(result: ReplayResult, *, largest: int = 5, recent: int = 3) -> MetadataSummary:
    image = result.image
    used = [f for f in result.files if f.used]
    snapshot = next((f.name for f in used if f.kind == "checkpoint"), None)
    partitions = replicas = under = offline = moving = 0
    sizes: list[tuple[int, str, int]] = []
    for topic in image.topics.by_id.values():
        rf = 0
        for p in topic.partitions.values():
            n = len(p.replicas)
            rf = max(rf, n)
            replicas += n
            if len(p.isr) < n:
                under += 1
            if p.leader < 0:
                offline += 1
            if p.adding_replicas or p.removing_replicas:
                moving += 1
        partitions += len(topic.partitions)
        sizes.append((len(topic.partitions), topic.name, rf))
    top = heapq.nsmallest(largest, sizes, key=lambda s: (-s[0], s[1]))
    deletions, recreations = _topic_changes(result)
    return MetadataSummary(
        first_offset=min((f.first_offset for f in used if f.first_offset is not None), default=None),
        last_offset=image.provenance.last_offset,
        first_timestamp_ms=next((f.first_timestamp_ms for f in used if f.first_timestamp_ms is not None), None),
        last_timestamp_ms=image.provenance.last_timestamp_ms,
        snapshot=snapshot,
        segments=sum(1 for f in used if f.kind == "log"),
        topics=len(image.topics.by_id),
        partitions=partitions,
        replicas=replicas,
        under_replicated=under,
        offline=offline,
        reassigning=moving,
        largest=tuple((name, n, rf) for n, name, rf in top),
        deletions=len(deletions),
        recreations=len(recreations),
        recent_deletions=tuple(deletions[-recent:][::-1]),
        recent_recreations=tuple(recreations[-recent:][::-1]),
    )


def _topic_changes(result: ReplayResult) -> tuple[list[TopicChange], list[TopicChange]]:
    """Every deletion and recreation in log order."""
    names: dict[str, Uuid | None] = {}
    deletions: list[TopicChange] = []
    recreations: list[TopicChange] = []
    created, removed = ev.TOPIC_CREATED, ev.TOPIC_REMOVED
    for e in result.events:
        kind = e.event
        if kind != created and kind != removed:
            continue
        snap = bool(e.detail and e.detail.get("from_snapshot"))
        if kind == removed:
            deletions.append(TopicChange(e.offset, e.timestamp_ms, e.topic, e.topic_id, None, snap))
        elif e.topic is not None:
            before = names.get(e.topic)
            if before is not None and before != e.topic_id:
                recreations.append(TopicChange(e.offset, e.timestamp_ms, e.topic, e.topic_id, before, snap))
            names[e.topic] = e.topic_id
    return deletions, recreations
