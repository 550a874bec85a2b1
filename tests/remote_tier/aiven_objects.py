"""Objects of Aiven's tiered-storage-for-apache-kafka plugin, built byte for byte in its formats (its jars are not
served here, so the tests record what it would write instead of running it).

From the plugin's sources (``ObjectKeyFactory``, ``SegmentManifestV1`` with its Jackson mix-ins,
``SegmentCustomMetadataField``/``Serde``), as of its ``.indexes`` format (Oct 2023 on):

* keys ``<key.prefix><topic>-<topicId>/<partition>/<start offset, 20 digits>-<segmentId>.<suffix>``, suffixes
  ``log`` (the segment, chunk by chunk), ``indexes`` (the five indexes in one blob, positions in the manifest) and
  ``rsm-manifest`` (uploaded last);
* the manifest: JSON with the type id ``version`` first, a ``chunkIndex`` typed ``fixed``/``variable``,
  ``segmentIndexes`` (``offset``, ``timestamp``, ``producerSnapshot``, ``leaderEpoch``, ``transaction`` as
  ``{"position", "size"}`` or null), ``compression``, ``encryption`` only when encrypted, and the segment's
  ``remoteLogSegmentMetadata`` (``remoteLogSegmentId{topicIdPartition{topicId, topicPartition{topic, partition}},
  id}``, ``startOffset``, ``endOffset``, ``maxTimestampMs``, ``brokerId``, ``eventTimestampMs``,
  ``segmentLeaderEpochs`` as an object epoch -> offset);
* the ``CustomMetadata`` Kafka stores in ``__remote_log_metadata``: a struct holding only a tagged-fields section,
  tag 0 ``remote_size`` (varlong), 1 ``object_prefix`` and 2 ``object_key`` (compact strings; the key is the main
  path, without prefix and suffix).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pipelines.kafka.uuid import Uuid
from pipelines.kafka.varint import write_uvarint, write_varlong

INDEX_NAMES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
CHUNK = 4096


def main_path(topic: str, topic_id: Uuid, partition: int, start_offset: int, segment_id: Uuid) -> str:
    """``ObjectKeyFactory.mainPath``: ``<topic>-<topicId>/<partition>/<offset 20>-<segmentId>``."""
    return f"{topic}-{topic_id}/{partition}/{start_offset:020d}-{segment_id}"


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return write_uvarint(len(data) + 1) + data


def custom_metadata(remote_size: int | None, object_prefix: str | None, object_key: str | None) -> bytes:
    """``SegmentCustomMetadataSerde.serialize``: the fields given, in tag order (empty bytes when none)."""
    fields = [(0, None if remote_size is None else write_varlong(remote_size)),
              (1, None if object_prefix is None else _compact_string(object_prefix)),
              (2, None if object_key is None else _compact_string(object_key))]
    present = [(tag, value) for tag, value in fields if value is not None]
    if not present:
        return b""
    out = bytearray(write_uvarint(len(present)))
    for tag, value in present:
        out += write_uvarint(tag) + write_uvarint(len(value)) + value
    return bytes(out)


@dataclass(frozen=True)
class AivenSegment:
    """One segment as the plugin uploads it."""

    topic: str
    topic_id: Uuid
    partition: int
    segment_id: Uuid
    start_offset: int
    end_offset: int
    broker_id: int
    event_timestamp_ms: int
    log: bytes
    index_sizes: tuple[int, int, int, int, int | None] = (80, 120, 10, 22, None)  # no transaction index

    @property
    def main(self) -> str:
        return main_path(self.topic, self.topic_id, self.partition, self.start_offset, self.segment_id)

    def key(self, prefix: str, suffix: str) -> str:
        return f"{prefix}{self.main}.{suffix}"

    def indexes(self) -> bytes:
        return b"".join(bytes([i + 1]) * size for i, size in enumerate(self.index_sizes) if size)

    def manifest(self) -> bytes:
        """``SegmentManifestV1`` as the plugin's object mapper writes it (no compression, no encryption)."""
        position, segment_indexes = 0, {}
        for name, size in zip(INDEX_NAMES, self.index_sizes, strict=True):
            segment_indexes[name] = None if size is None else {"position": position, "size": size}
            position += size or 0
        size = len(self.log)
        final = size - (size - 1) // CHUNK * CHUNK if size else 0
        doc = {
            "version": "1",
            "chunkIndex": {"type": "fixed", "originalChunkSize": CHUNK, "originalFileSize": size,
                           "transformedChunkSize": CHUNK, "finalTransformedChunkSize": final},
            "segmentIndexes": segment_indexes,
            "compression": False,
            "remoteLogSegmentMetadata": {
                "remoteLogSegmentId": {"topicIdPartition": {"topicId": str(self.topic_id), "topicPartition": {
                    "topic": self.topic, "partition": self.partition}}, "id": str(self.segment_id)},
                "startOffset": self.start_offset, "endOffset": self.end_offset,
                "maxTimestampMs": self.event_timestamp_ms - 1, "brokerId": self.broker_id,
                "eventTimestampMs": self.event_timestamp_ms,
                "segmentLeaderEpochs": {"0": self.start_offset}},
        }
        return json.dumps(doc, separators=(",", ":")).encode()

    def objects(self, prefix: str, kinds: tuple[str, ...] = ("log", "indexes", "rsm-manifest")) -> dict[str, bytes]:
        """key -> bytes of the objects of ``kinds``, in the plugin's upload order (log, indexes, manifest last)."""
        data = {"log": self.log, "indexes": self.indexes(), "rsm-manifest": self.manifest()}
        return {self.key(prefix, k): data[k] for k in ("log", "indexes", "rsm-manifest") if k in kinds}

    def custom_metadata(self, prefix: str) -> bytes:
        """What the plugin returns from ``copyLogSegmentData`` with every field included."""
        return custom_metadata(len(self.log) + len(self.indexes()) + len(self.manifest()), prefix, self.main)
