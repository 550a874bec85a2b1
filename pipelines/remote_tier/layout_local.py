"""Object keys of Kafka's own ``LocalTieredStorage`` (the RSM of Kafka's tests and of this project's real-broker tests).

Layout, relative to the plugin's ``rsm.config.dir``::

    kafka-tiered-storage/<topic>-<partition>-<topicId>/<startOffset, 20 digits>-<segmentId>.<suffix>

(``RemoteTopicPartitionDirectory``: ``(legal topic chars)+-(\\d+)-(22 Uuid chars)``; ``RemoteLogSegmentFileset``).
The suffixes are the segment's files: ``.log``, ``.index``, ``.timeindex``, ``.snapshot`` (producer snapshot),
``.leader_epoch_checkpoint`` (with an underscore, unlike a log dir's ``leader-epoch-checkpoint``) and an optional
``.txnindex``. A deleted segment's files go, its topic-partition folder stays (folders are not objects).
"""

from __future__ import annotations

from pipelines.remote_tier.keys import (
    RemoteKeyError,
    RemoteObjectKey,
    parse_partition,
    parse_segment_file,
    parse_topic,
    uuid_from_right,
)

__all__ = ["LOCAL_ROOT", "LOCAL_SUFFIXES", "parse_local_key"]

LOCAL_ROOT = "kafka-tiered-storage/"
"""``LocalTieredStorage``'s folder under ``rsm.config.dir``: the layout's fixed prefix."""
LOCAL_SUFFIXES = frozenset({"log", "index", "timeindex", "snapshot", "txnindex", "leader_epoch_checkpoint"})


def parse_local_key(relative_key: str) -> RemoteObjectKey:
    """Parse a key with ``kafka-tiered-storage/`` already removed: ``<topic>-<partition>-<topicId>/<file>``.

    Raises:
        RemoteKeyError: not exactly two ``/``-separated parts of the documented form.
    """
    parts = relative_key.split("/")
    if len(parts) != 2:
        raise RemoteKeyError(f"local_tiered_storage key {relative_key!r} is not <topic>-<partition>-<topicId>/<file>")
    folder, file_name = parts
    head, topic_id = uuid_from_right(folder, "local_tiered_storage folder")
    topic, dash, partition_text = head.rpartition("-")
    if not dash:
        raise RemoteKeyError(f"local_tiered_storage folder {folder!r} is not <topic>-<partition>-<topicId>")
    topic = parse_topic(topic, "local_tiered_storage folder")
    partition = parse_partition(partition_text, "local_tiered_storage folder")
    start_offset, segment_id, suffix = parse_segment_file(file_name, LOCAL_SUFFIXES, "local_tiered_storage file")
    return RemoteObjectKey(topic, topic_id, partition, segment_id, start_offset, suffix)
