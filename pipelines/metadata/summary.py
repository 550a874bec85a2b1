"""What an operator asks of a replayed controller log first, in figures that fit one screen.

``summarize(result)`` reduces a :class:`~pipelines.metadata.metadata_log_source.ReplayResult` to: the offsets
and append times covered, the snapshot used, completeness, brokers, topic and partition counts with the partitions
that need attention, the largest topics, and the most recent topic deletions and recreations (a ``topic_created``
whose name an earlier topic id had). Only the topic events are walked; the image is read, never copied.

The partition counts are one pass over the image's partitions (:func:`topic_counts`), in C when
``_native_summary.c`` is built (:func:`topic_counts_python` is its twin and the reference).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from operator import attrgetter

from pipelines import native
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.metadata_log_source import ReplayResult

__all__ = ["MetadataSummary", "TopicChange", "summarize", "topic_counts", "topic_counts_python"]

MODULE = "pipelines.metadata._native_summary"

_REPLICAS = attrgetter("replicas")
_ISR = attrgetter("isr")
_LEADER = attrgetter("leader")
_ADDING = attrgetter("adding_replicas")
_REMOVING = attrgetter("removing_replicas")


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
    partitions, replicas, under, offline, moving, sizes = topic_counts(list(image.topics.by_id.values()))
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


Counts = tuple[int, int, int, int, int, list[tuple[int, str, int]]]


def topic_counts(topics: list) -> Counts:
    """``(partitions, replicas, under-replicated, without leader, reassigning, sizes)`` of ``topics`` (TopicImages),
    ``sizes`` holding ``(partitions, name, replication factor)`` per topic in the order given: the compiled pass
    when built and when it takes the values (it declines anything but the types an image holds), else
    :func:`topic_counts_python`."""
    compiled = native.load(MODULE)
    counts = None if compiled is None else compiled.topic_counts(topics)
    return topic_counts_python(topics) if counts is None else counts


def topic_counts_python(topics: list) -> Counts:
    """The pure-Python :func:`topic_counts` (the reference)."""
    parts = [p for topic in topics for p in topic.partitions.values()]
    # map() over attribute getters keeps the per-partition work in C: 100k+ partitions on a large cluster
    replica_counts = list(map(len, map(_REPLICAS, parts)))
    isr_counts = map(len, map(_ISR, parts))
    under = sum(map(int.__lt__, isr_counts, replica_counts))
    offline = sum(map((0).__gt__, map(_LEADER, parts)))
    moving = sum(map(bool.__or__, map(bool, map(_ADDING, parts)), map(bool, map(_REMOVING, parts))))
    sizes = [(len(t.partitions), t.name, max(map(len, map(_REPLICAS, t.partitions.values())), default=0))
             for t in topics]
    return len(parts), sum(replica_counts), under, offline, moving, sizes


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
