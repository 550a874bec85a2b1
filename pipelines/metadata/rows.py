"""Rows for the ``controller_*`` and ``metadata_events`` Delta tables (``pipelines.tables.schemas``).

Ids are base64url strings, timestamps tz-aware UTC ``datetime``s, ``detail`` a JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import MetadataImage

#: Broker-level name of the topic config ``file.delete.delay.ms`` (ServerTopicConfigSynonyms).
DELETE_DELAY_KEY = "log.segment.delete.delay.ms"


def ms_to_datetime(ms: int | None) -> datetime | None:
    if ms is None or ms < 0:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def file_delete_delay_ms(image: MetadataImage, broker_id: int | None) -> int | None:
    """Effective dynamic ``log.segment.delete.delay.ms`` (broker, then cluster default); None when not set."""
    value = image.broker_config(broker_id, DELETE_DELAY_KEY)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def image_rows(image: MetadataImage, *, run_id: str, cluster: str, source: str) -> dict[str, list[dict[str, Any]]]:
    """``{"controller_topics": [...], "controller_partitions": [...], "controller_brokers": [...]}``.

    Topics without a topic id (ZooKeeper mode) get rows with a null ``topic_id``.
    """
    meta = {"metadata_offset": image.last_offset, "image_complete": image.complete, "source": source}
    run = {"run_id": run_id, "cluster": cluster}
    topics: list[dict[str, Any]] = []
    partitions: list[dict[str, Any]] = []
    with_id = [(str(t.topic_id), t) for t in image.topics.by_id.values()]
    without_id = [(None, t) for t in image.topics_without_id.values()]
    for topic_id, topic in sorted(with_id + without_id, key=lambda pair: pair[1].name):
        deletion = image.topic_deletions.get(topic.name)
        topics.append({**run, "topic_id": topic_id, "topic": topic.name, "partition_count": len(topic.partitions),
                       **meta, "deletion_queued_at": None if deletion is None else ms_to_datetime(deletion.queued_ms)})
        for p in sorted(topic.partitions.values(), key=lambda x: x.partition):
            partitions.append({
                **run, "topic_id": topic_id, "topic": topic.name, "partition": p.partition,
                "replicas": list(p.replicas), "isr": list(p.isr), "leader": p.leader, "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch, "adding_replicas": list(p.adding_replicas),
                "removing_replicas": list(p.removing_replicas), "directories": [str(d) for d in p.directories],
                **meta,
            })
    brokers = [
        {
            **run, "broker_id": b.broker_id, "broker_epoch": b.epoch, "fenced": b.fenced,
            "in_controlled_shutdown": b.in_controlled_shutdown, "log_dirs": [str(d) for d in b.log_dirs],
            "rack": b.rack, "file_delete_delay_ms": file_delete_delay_ms(image, b.broker_id), **meta,
        }
        for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
    ]
    return {"controller_topics": topics, "controller_partitions": partitions, "controller_brokers": brokers}


def event_rows(events: Iterable[MetadataEvent], *, cluster: str, source: str, run_id: str) -> list[dict[str, Any]]:
    return [
        {
            "cluster": cluster, "offset": e.offset, "timestamp": ms_to_datetime(e.timestamp_ms), "event": e.event,
            "topic_id": None if e.topic_id is None else str(e.topic_id), "topic": e.topic, "partition": e.partition,
            "detail": json.dumps(dict(e.detail or {}), sort_keys=True), "source": source, "run_id": run_id,
        }
        for e in events
    ]
