"""Schemas of the ``__remote_log_metadata`` records, as data for the project's schema compiler and encoder.

Checked field by field against ``storage/src/main/resources/message/`` of apache/kafka (the four ``*Record.json``
files): all four types are flexible from version 0.

==  =======================================  ==========  ===============================================================
key record                                    versions    changes
==  =======================================  ==========  ===============================================================
0   RemoteLogSegmentMetadataRecord           0-1         tagged ``TxnIndexEmpty`` (tag 0, added to v0 in 4.0);
                                                         v1 (KIP-1266): tagged ``BrokerLeaderEpoch`` (tag 1)
1   RemoteLogSegmentMetadataUpdateRecord     0-1         v1: tagged ``BrokerLeaderEpoch`` (tag 0, default -1) and
                                                         ``EndOffset`` (tag 1, default -1)
2   RemotePartitionDeleteMetadataRecord      0-1         v1: tagged ``BrokerLeaderEpoch`` (tag 0), ``EndOffset`` (tag 1)
3   RemoteLogSegmentMetadataSnapshotRecord   0-1         as 0 with a bare ``SegmentId``; only in the 3.6-3.7
                                                         ``remote_log_snapshot`` files, never in the topic
==  =======================================  ==========  ===============================================================

Tags a version does not declare are kept as unknown tags and skipped by replay (newer Kafka adds tags).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pipelines.kafka.metadata_schema import F, FieldSpec, RecordTypeSpec

__all__ = [
    "PARTITION_DELETE",
    "REMOTE_RECORD_TYPES",
    "SEGMENT_METADATA",
    "SEGMENT_SNAPSHOT",
    "SEGMENT_UPDATE",
]

SEGMENT_METADATA = 0
SEGMENT_UPDATE = 1
PARTITION_DELETE = 2
SEGMENT_SNAPSHOT = 3

_TOPIC_ID_PARTITION = (F("Name", "string"), F("Id", "uuid"), F("Partition", "int32"))
_SEGMENT_ID = (F("TopicIdPartition", "struct", fields=_TOPIC_ID_PARTITION), F("Id", "uuid"))
_LEADER_EPOCH = (F("LeaderEpoch", "int32"), F("Offset", "int64"))
_SEGMENT_BODY = (
    F("StartOffset", "int64"),
    F("EndOffset", "int64"),
    F("BrokerId", "int32"),
    F("MaxTimestampMs", "int64"),
    F("EventTimestampMs", "int64"),
    F("SegmentLeaderEpochs", "[]struct", fields=_LEADER_EPOCH),
    F("SegmentSizeInBytes", "int32"),
    F("CustomMetadata", "bytes", nullable="0+", default=None),
    F("RemoteLogSegmentState", "int8"),
    F("TxnIndexEmpty", "bool", tag=0),
    F("BrokerLeaderEpoch", "int32", "1+", tag=1),
)


def _record(api_key: int, name: str, *fields: FieldSpec) -> RecordTypeSpec:
    by_name = MappingProxyType({f.name: f for f in fields})
    return RecordTypeSpec(name, (0, 1), tuple(fields), api_key, None, True, by_name)


REMOTE_RECORD_TYPES: Mapping[int, RecordTypeSpec] = MappingProxyType({
    SEGMENT_METADATA: _record(
        SEGMENT_METADATA, "RemoteLogSegmentMetadataRecord",
        F("RemoteLogSegmentId", "struct", fields=_SEGMENT_ID),
        *_SEGMENT_BODY,
    ),
    SEGMENT_UPDATE: _record(
        SEGMENT_UPDATE, "RemoteLogSegmentMetadataUpdateRecord",
        F("RemoteLogSegmentId", "struct", fields=_SEGMENT_ID),
        F("BrokerId", "int32"),
        F("EventTimestampMs", "int64"),
        F("CustomMetadata", "bytes", nullable="0+", default=None),
        F("RemoteLogSegmentState", "int8"),
        F("BrokerLeaderEpoch", "int32", "1+", tag=0, default=-1),
        F("EndOffset", "int64", "1+", tag=1, default=-1),
    ),
    PARTITION_DELETE: _record(
        PARTITION_DELETE, "RemotePartitionDeleteMetadataRecord",
        F("TopicIdPartition", "struct", fields=_TOPIC_ID_PARTITION),
        F("BrokerId", "int32"),
        F("EventTimestampMs", "int64"),
        F("RemotePartitionDeleteState", "int8"),
        F("BrokerLeaderEpoch", "int32", "1+", tag=0),
        F("EndOffset", "int64", "1+", tag=1),
    ),
    SEGMENT_SNAPSHOT: _record(
        SEGMENT_SNAPSHOT, "RemoteLogSegmentMetadataSnapshotRecord",
        F("SegmentId", "uuid"),
        *_SEGMENT_BODY,
    ),
})  # fmt: skip
"""apiKey -> schema (read-only)."""
