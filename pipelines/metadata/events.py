"""Metadata events: the durable history of topic ids and assignments, emitted while replaying.

Kafka truncates its own metadata log behind snapshots, so the history of "topic X had id Y until offset Z" is lost
there; the ``metadata_events`` table keeps it. Events from a snapshot describe state, not the moment it arose:
they carry ``detail["from_snapshot"] = True`` and the snapshot's ``LastContainedLogTimestamp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipelines.kafka.uuid import Uuid

TOPIC_CREATED = "topic_created"
TOPIC_REMOVED = "topic_removed"
PARTITION_ADDED = "partition_added"
REPLICAS_CHANGED = "replicas_changed"
DIRECTORIES_CHANGED = "directories_changed"
BROKER_REGISTERED = "broker_registered"
BROKER_UNREGISTERED = "broker_unregistered"
BROKER_LOG_DIRS_CHANGED = "broker_log_dirs_changed"
TOPIC_DELETION_QUEUED = "topic_deletion_queued"
"""ZooKeeper mode: the topic was queued in ``/admin/delete_topics`` (KRaft deletes at once, with no queue)."""

EVENT_TYPES = (
    TOPIC_CREATED, TOPIC_REMOVED, PARTITION_ADDED, REPLICAS_CHANGED, DIRECTORIES_CHANGED,
    BROKER_REGISTERED, BROKER_UNREGISTERED, BROKER_LOG_DIRS_CHANGED, TOPIC_DELETION_QUEUED,
)


@dataclass(frozen=True, slots=True)
class MetadataEvent:
    """One change seen in the log. ``offset`` is the record's log offset (for a snapshot: its offset in the file).

    ``detail`` holds JSON-ready values (ints, strings, lists, bools); broker events put the broker id there.
    """

    offset: int
    timestamp_ms: int
    event: str
    topic_id: Uuid | None = None
    topic: str | None = None
    partition: int | None = None
    detail: Mapping[str, Any] | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "timestamp_ms": self.timestamp_ms,
            "event": self.event,
            "topic_id": None if self.topic_id is None else str(self.topic_id),
            "topic": self.topic,
            "partition": self.partition,
            "detail": dict(self.detail or {}),
        }
