"""Test support: write a realistic ``__remote_log_metadata-N`` replica directory from events.

Records are laid out as Kafka's ``ProducerManager`` sends them: null key, the serde's framed value, one partition of
the topic per call; batches are record batch v2 (as a producer writes them, optionally compressed and with a
producer id), segment files are ``<base offset, 20 digits>.log``. No index files are written (the reader needs none).
Not used by the product itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pipelines.kafka.record_batch import Compression, encode_batch
from pipelines.remote_tier.events import PartitionDeleteEvent, SegmentEvent, event_to_record
from pipelines.remote_tier.metadata_codec import RemoteMetadataRecord, encode_remote_record
from pipelines.remote_tier.metadata_topic import METADATA_TOPIC

__all__ = ["encode_metadata_segments", "write_metadata_replica"]


def encode_metadata_segments(
    items: Sequence[SegmentEvent | PartitionDeleteEvent | RemoteMetadataRecord | bytes],
    *,
    version: int = 0,
    batch_records: int = 3,
    segment_batches: int = 4,
    compression: Compression = Compression.NONE,
    producer_id: int = 1000,
    base_offset: int = 0,
) -> list[tuple[int, bytes]]:
    """``(base offset, file bytes)`` of the segment files holding ``items`` from ``base_offset`` on.

    An item is an event (encoded at ``version``), a record, or raw value bytes (to plant a bad record).
    """
    values = []
    for item in items:
        if isinstance(item, bytes):
            values.append(item)
        elif isinstance(item, RemoteMetadataRecord):
            values.append(encode_remote_record(item))
        else:
            values.append(encode_remote_record(event_to_record(item, version)))
    segments: list[tuple[int, bytes]] = []
    offset = base_offset
    current = bytearray()
    current_base = offset
    batches = 0
    for i in range(0, len(values), batch_records):
        chunk = values[i : i + batch_records]
        ts = _timestamp(items[i])
        current += encode_batch([(None, v) for v in chunk], offset, epoch=0, timestamp_ms=ts, compression=compression,
                                producer_id=producer_id, producer_epoch=0, base_sequence=offset - base_offset)
        offset += len(chunk)
        batches += 1
        if batches == segment_batches:
            segments.append((current_base, bytes(current)))
            current, current_base, batches = bytearray(), offset, 0
    if current or not segments:
        segments.append((current_base, bytes(current)))
    return segments


def _timestamp(item: object) -> int:
    return getattr(item, "event_timestamp_ms", 0)


def write_metadata_replica(parent: str | os.PathLike[str], metadata_partition: int,
                           items: Sequence[SegmentEvent | PartitionDeleteEvent | RemoteMetadataRecord | bytes],
                           **options) -> Path:
    """Write ``<parent>/__remote_log_metadata-<partition>/`` with the segments of :func:`encode_metadata_segments`."""
    d = Path(parent) / f"{METADATA_TOPIC}-{metadata_partition}"
    d.mkdir(parents=True, exist_ok=True)
    for base, data in encode_metadata_segments(items, **options):
        (d / f"{base:020d}.log").write_bytes(data)
    return d
