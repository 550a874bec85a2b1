"""Encode the simulated controller log into Kafka's files: ``__cluster_metadata-0`` and ``bootstrap.checkpoint``.

All bytes come from the project's own writers (``record_batch.encode_batch``, ``metadata_codec``). Layout of the
metadata dir (facts sheet section 5):

- segments ``<base>.log`` rolled daily (``metadata.log.segment.ms`` = 1 day; Kafka's default is 7) with empty
  ``.index`` / ``.timeindex`` companions (the active segment's preallocated to Kafka's 10 MiB, sparse);
- segments wholly below the snapshot and older than ``metadata.max.retention.ms`` (7 days) are gone, as Kafka's
  snapshot-aware cleaner would have removed them;
- the snapshot ``<endOffset>-<epoch>.checkpoint``: SnapshotHeader control batch, the full image, SnapshotFooter;
- ``partition.metadata`` (the metadata topic id), ``leader-epoch-checkpoint`` and ``quorum-state``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pipelines.kafka.checkpoints import EpochEntry, write_leader_epoch_checkpoint
from pipelines.kafka.metadata_codec import (
    MetadataRecord,
    encode_control_record,
    encode_metadata_record,
    make_control_record,
    record_type,
)
from pipelines.kafka.partition_metadata import write_partition_metadata
from pipelines.kafka.record_batch import encode_batch
from pipelines.kafka.snapshot_names import format_snapshot_name
from pipelines.kafka.uuid import METADATA_TOPIC_ID
from pipelines.simulate.controller import MAX_RECORDS_PER_BATCH, METADATA_VERSION, Batch, Rec, Snapshot

SEGMENT_MS = 86_400_000
"""Simulated ``metadata.log.segment.ms``: a new segment every day, so that old ones can be cleaned."""
RETENTION_MS = 7 * 86_400_000
"""``metadata.max.retention.ms`` default."""
MAX_INDEX_BYTES = 10 * 1024 * 1024
MAX_TIMEINDEX_BYTES = MAX_INDEX_BYTES // 12 * 12


def encode_value(rec: Rec) -> bytes | tuple[bytes, bytes]:
    """A metadata record's value, or a control record's (key, value)."""
    if rec.control:
        return encode_control_record(make_control_record(rec.name, **rec.fields))
    # fields left out take their schema defaults in the encoder; make_record would only add them first
    return encode_metadata_record(MetadataRecord(record_type(rec.name).api_key, rec.version, rec.name, rec.fields))


def encode_log_batch(batch: Batch) -> bytes:
    return encode_batch([encode_value(r) for r in batch.records], batch.base_offset, epoch=batch.epoch,
                        timestamp_ms=batch.timestamp_ms, is_control=batch.is_control)


def snapshot_bytes(records: Sequence[Rec], *, epoch: int, last_timestamp_ms: int) -> bytes:
    """A KRaft snapshot file (also the ``bootstrap.checkpoint`` layout): header, data batches, footer.

    Offsets restart at 0 inside the file; every batch carries the snapshot epoch and the header's timestamp.
    """
    header = Rec("SNAPSHOT_HEADER", 0, {"version": 0, "last_contained_log_timestamp": last_timestamp_ms}, True)
    out = [encode_batch([encode_value(header)], 0, epoch=epoch, timestamp_ms=last_timestamp_ms,
                        is_control=True)]
    offset = 1
    for start in range(0, len(records), MAX_RECORDS_PER_BATCH):
        chunk = records[start : start + MAX_RECORDS_PER_BATCH]
        out.append(encode_batch([encode_value(r) for r in chunk], offset, epoch=epoch,
                                timestamp_ms=last_timestamp_ms))
        offset += len(chunk)
    footer = Rec("SNAPSHOT_FOOTER", 0, {"version": 0}, True)
    out.append(encode_batch([encode_value(footer)], offset, epoch=epoch, timestamp_ms=last_timestamp_ms,
                            is_control=True))
    return b"".join(out)


def bootstrap_checkpoint_bytes(format_time_ms: int, metadata_version: int = METADATA_VERSION) -> bytes:
    """What ``kafka-storage.sh format`` writes: epoch 0, offsets from 0, the metadata.version FeatureLevelRecord."""
    level = Rec("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": metadata_version})
    return snapshot_bytes([level], epoch=0, last_timestamp_ms=format_time_ms)


def _segments(batches: Sequence[Batch]) -> list[list[Batch]]:
    segments: list[list[Batch]] = []
    start_ts = None
    for batch in batches:
        if start_ts is None or batch.timestamp_ms - start_ts >= SEGMENT_MS:
            segments.append([])
            start_ts = batch.timestamp_ms
        segments[-1].append(batch)
    return segments


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _sparse(path: Path, size: int, sparse: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if sparse and size:
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


def write_metadata_dir(
    target: Path,
    batches: Sequence[Batch],
    snapshot: Snapshot | None,
    *,
    now_ms: int,
    leader_id: int,
    voters: Iterable[int],
    sparse: bool = True,
) -> list[Path]:
    """Write ``target`` (``.../__cluster_metadata-0``); returns the files written."""
    target.mkdir(parents=True, exist_ok=False)
    segments = _segments(batches)
    if snapshot is not None:
        kept = [
            seg for i, seg in enumerate(segments)
            if i == len(segments) - 1
            or segments[i + 1][0].base_offset > snapshot.end_offset
            or now_ms - seg[-1].timestamp_ms < RETENTION_MS
        ]
        segments = kept
    files: list[Path] = []
    for i, seg in enumerate(segments):
        base = seg[0].base_offset
        log = target / f"{base:020d}.log"
        _write(log, b"".join(encode_log_batch(b) for b in seg))
        active = i == len(segments) - 1
        _sparse(target / f"{base:020d}.index", MAX_INDEX_BYTES if active else 0, sparse)
        _sparse(target / f"{base:020d}.timeindex", MAX_TIMEINDEX_BYTES if active else 0, sparse)
        files += [log, target / f"{base:020d}.index", target / f"{base:020d}.timeindex"]
    if snapshot is not None:
        snap = target / format_snapshot_name(snapshot.end_offset, snapshot.epoch)
        _write(snap, snapshot_bytes(snapshot.records, epoch=snapshot.epoch,
                                    last_timestamp_ms=snapshot.last_timestamp_ms))
        files.append(snap)
    log_start = segments[0][0].base_offset if segments else 0
    epoch = batches[-1].epoch if batches else 0
    extras = {
        "partition.metadata": write_partition_metadata(METADATA_TOPIC_ID),
        "leader-epoch-checkpoint": write_leader_epoch_checkpoint([EpochEntry(epoch, log_start)]),
        "quorum-state": json.dumps({
            "clusterId": "", "leaderId": leader_id, "leaderEpoch": epoch, "votedId": -1,
            "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in voters], "data_version": 0,
        }, separators=(",", ":")).encode(),
    }
    for name, data in extras.items():
        _write(target / name, data)
        files.append(target / name)
    return files
