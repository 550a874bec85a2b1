"""Write broker log dirs to disk fast: partition dirs from one file template, root files per log dir.

Every partition dir gets the same file list (only ``partition.metadata`` differs), built once by
``partition_template``: ``partition.metadata``, ``leader-epoch-checkpoint``, then segments ``<base>.log`` /
``.index`` / ``.timeindex``; a remainder of one or two files adds a producer-state ``.snapshot`` and a ``.txnindex``.
Segment files are sparse (``ftruncate`` to the size, no data written) or, with ``sparse=False``, empty. Their
content is NOT valid record data; only the small text/binary files are real Kafka formats.

Per file the writer makes three system calls (``open`` relative to the dir fd, ``ftruncate`` or ``write``,
``close``); no Python object is built per file.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from crc32c import crc32c

from pipelines.kafka.checkpoints import (
    CLEANER_OFFSET,
    LOG_START_OFFSET,
    RECOVERY_POINT,
    REPLICATION_OFFSET,
    EpochEntry,
    OffsetEntry,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from pipelines.kafka.meta_properties import write_meta_properties
from pipelines.kafka.partition_metadata import write_partition_metadata
from pipelines.kafka.root_files import BOOTSTRAP_CHECKPOINT, CLEAN_SHUTDOWN, LOCK, META_PROPERTIES
from pipelines.kafka.uuid import Uuid
from pipelines.simulate.scenario import DirPlan

OFFSETS_PER_SEGMENT = 100_000
INDEX_INTERVAL_BYTES = 4096
MAX_INDEX_BYTES = 10 * 1024 * 1024
MAX_TIMEINDEX_BYTES = MAX_INDEX_BYTES // 12 * 12
COMPACTED_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL
_DIR = os.O_RDONLY | os.O_DIRECTORY


@dataclass(frozen=True, slots=True)
class PartitionTemplate:
    """The files of one partition dir besides ``partition.metadata``: (name, apparent size, content or None)."""

    files: tuple[tuple[str, int, bytes | None], ...]
    log_end_offset: int
    with_partition_metadata: bool

    @property
    def apparent_bytes(self) -> int:
        return sum(size for _, size, _ in self.files)


def producer_snapshot_bytes() -> bytes:
    """An empty producer-state snapshot: version 1, CRC-32C of the rest, zero entries."""
    body = struct.pack(">i", 0)
    return struct.pack(">hI", 1, crc32c(body)) + body


def partition_template(files_per_partition: int, segment_bytes: int, sparse: bool = True) -> PartitionTemplate:
    """The file list for ``files_per_partition`` files in total (``partition.metadata`` included)."""
    n = files_per_partition
    segments, rest = divmod(max(n - 2, 0), 3)
    leo = segments * OFFSETS_PER_SEGMENT - OFFSETS_PER_SEGMENT // 2 if segments else 0
    files: list[tuple[str, int, bytes | None]] = []
    if n >= 2:
        files.append(("leader-epoch-checkpoint", 0, write_leader_epoch_checkpoint([EpochEntry(0, 0)])))
    full_index = min(MAX_INDEX_BYTES, segment_bytes // INDEX_INTERVAL_BYTES * 8)
    full_timeindex = min(MAX_TIMEINDEX_BYTES, segment_bytes // INDEX_INTERVAL_BYTES * 12)
    for j in range(segments):
        base = f"{j * OFFSETS_PER_SEGMENT:020d}"
        active = j == segments - 1
        sizes = ((segment_bytes // 2, MAX_INDEX_BYTES, MAX_TIMEINDEX_BYTES) if active
                 else (segment_bytes, full_index, full_timeindex))
        for suffix, size in zip((".log", ".index", ".timeindex"), sizes, strict=True):
            files.append((base + suffix, size if sparse else 0, None))
    if rest >= 1:
        files.append((f"{leo:020d}.snapshot", 0, producer_snapshot_bytes()))
    if rest == 2:
        last = f"{max(segments - 1, 0) * OFFSETS_PER_SEGMENT:020d}"
        files.append((last + (".txnindex" if segments else ".log"), 0, None))
    files = [(name, len(data) if data is not None else size, data) for name, size, data in files]
    return PartitionTemplate(tuple(files), leo, n >= 1)


def corrupt_partition_metadata(topic_id: Uuid) -> bytes:
    """A file Kafka refuses: the dashed UUID form (``Uuid.fromString`` accepts only base64url)."""
    return f"version: 0\ntopic_id: {topic_id.dashed()}".encode()


def write_partition_dirs(log_dir: Path, dirs: Sequence[DirPlan], template: PartitionTemplate) -> tuple[int, int]:
    """Create every dir of ``dirs`` under ``log_dir`` with the template's files; returns (files, apparent bytes).

    Directory mtimes are set last (creating files inside a dir changes its mtime).
    """
    files = 0
    size = 0
    pm_cache: dict[Uuid, bytes] = {}
    for d in dirs:
        path = os.path.join(log_dir, d.name)
        os.mkdir(path)
        if d.pm == "none":
            continue
        dfd = os.open(path, _DIR)
        try:
            if d.pm != "missing" and template.with_partition_metadata and d.topic_id is not None:
                if d.pm == "corrupt":
                    data = corrupt_partition_metadata(d.topic_id)
                else:
                    data = pm_cache.get(d.topic_id) or pm_cache.setdefault(d.topic_id,
                                                                           write_partition_metadata(d.topic_id))
                fd = os.open("partition.metadata", _CREATE, 0o644, dir_fd=dfd)
                os.write(fd, data)
                os.close(fd)
                files += 1
                size += len(data)
            for name, apparent, content in template.files:
                fd = os.open(name, _CREATE, 0o644, dir_fd=dfd)
                if content is not None:
                    os.write(fd, content)
                elif apparent:
                    os.ftruncate(fd, apparent)
                os.close(fd)
            files += len(template.files)
            size += template.apparent_bytes
        finally:
            os.close(dfd)
    for d in dirs:
        mtime_ns = d.mtime_ms * 1_000_000
        os.utime(os.path.join(log_dir, d.name), ns=(mtime_ns, mtime_ns))
    return files, size


def checkpoint_files(dirs: Iterable[DirPlan], log_end_offset: int) -> dict[str, bytes]:
    """The four root checkpoints for the current logs among ``dirs`` (``live`` ones), sorted by name."""
    live = sorted((d for d in dirs if d.live and d.topic is not None and d.partition is not None),
                  key=lambda d: (d.topic, d.partition))
    leo = [OffsetEntry(d.topic, d.partition, log_end_offset) for d in live]  # type: ignore[arg-type]
    return {
        RECOVERY_POINT: write_offset_checkpoint(leo),
        LOG_START_OFFSET: write_offset_checkpoint(OffsetEntry(e.topic, e.partition, 0) for e in leo),
        REPLICATION_OFFSET: write_offset_checkpoint(leo),
        CLEANER_OFFSET: write_offset_checkpoint(
            OffsetEntry(e.topic, e.partition, log_end_offset // 2) for e in leo if e.topic in COMPACTED_TOPICS
        ),
    }


def write_root_files(
    log_dir: Path,
    *,
    cluster_id: str,
    node_id: int,
    directory_id: Uuid,
    format_time_ms: int,
    bootstrap: bytes,
    checkpoints: dict[str, bytes] | None,
    clean_shutdown_epoch: int | None,
) -> int:
    """meta.properties (v1), ``.lock``, ``bootstrap.checkpoint``, the checkpoints and ``.kafka_cleanshutdown``.

    ``checkpoints=None`` is a controller-only metadata dir (no LogManager files). Returns the number of files.
    """
    moment = datetime.fromtimestamp(format_time_ms / 1000, tz=timezone.utc)
    out: dict[str, bytes] = {
        META_PROPERTIES: write_meta_properties(version=1, cluster_id=cluster_id, node_id=node_id,
                                               directory_id=directory_id, moment=moment),
        LOCK: b"",
        BOOTSTRAP_CHECKPOINT: bootstrap,
    }
    if checkpoints is not None:
        out.update(checkpoints)
    if clean_shutdown_epoch is not None:
        out[CLEAN_SHUTDOWN] = f'{{"version":0,"brokerEpoch":{clean_shutdown_epoch}}}'.encode()
    for name, data in out.items():
        (log_dir / name).write_bytes(data)
    return len(out)
