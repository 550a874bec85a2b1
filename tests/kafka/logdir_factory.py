"""Build synthetic Kafka log dirs in a temp directory with the project's own writers.

Reusable by any test (``from logdir_factory import make_log_dir, PartitionSpec`` from ``tests/kafka``; other test
dirs can add ``tests/kafka`` to ``sys.path`` or import ``tests.kafka.logdir_factory`` under ``python -m pytest``)::

    root = make_log_dir(
        tmp_path / "kafka-logs", node_id=1, cluster_id=CLUSTER, directory_id=DIR_ID,
        partitions=[PartitionSpec("orders", 0), PartitionSpec("orders", 1, kind="delete")],
    )

Everything is deterministic (ids derive from names) unless given explicitly; file mtimes are whatever the OS sets
unless ``mtime_ns`` is given.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

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
from pipelines.kafka.partition_name import delete_dir_name, future_dir_name, live_dir_name, stray_dir_name
from pipelines.kafka.uuid import METADATA_TOPIC_ID, Uuid

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
FIXED_MOMENT = datetime(2024, 10, 24, 12, 0, 0, tzinfo=timezone.utc)


def uuid_for(text: str) -> Uuid:
    """A deterministic, non-reserved Uuid derived from ``text``."""
    raw = bytearray(hashlib.sha256(text.encode()).digest()[:16])
    raw[0] |= 0x01  # MSB != 0: never in the reserved range
    u = Uuid.from_bytes(bytes(raw))
    return u if not str(u).startswith("-") else Uuid(u.msb ^ (1 << 62), u.lsb)


@dataclass(frozen=True)
class PartitionSpec:
    """One partition dir. ``partition_metadata=None`` writes Kafka's bytes for ``topic_id``; ``b""`` writes an empty
    file; ``False`` writes none; any other bytes are written as given."""

    topic: str
    partition: int
    kind: str = "live"  # live | delete | future | stray
    topic_id: Uuid | None = None  # default: uuid_for(topic)
    unique_id: str | None = None  # default: derived from the name
    segments: Sequence[int] = (0,)
    log_content: bytes = b""
    with_indexes: bool = True
    partition_metadata: bytes | bool | None = None
    leader_epochs: Sequence[tuple[int, int]] = ((0, 0),)
    extra_files: Mapping[str, bytes] = field(default_factory=dict)
    mtime_ns: int | None = None

    @property
    def resolved_topic_id(self) -> Uuid:
        return self.topic_id or uuid_for(self.topic)

    @property
    def resolved_unique_id(self) -> str:
        return self.unique_id or hashlib.md5(f"{self.topic}|{self.partition}|{self.kind}".encode()).hexdigest()

    @property
    def dir_name(self) -> str:
        writer = {"delete": delete_dir_name, "future": future_dir_name, "stray": stray_dir_name}.get(self.kind)
        if writer is None:
            return live_dir_name(self.topic, self.partition)
        return writer(self.topic, self.partition, self.resolved_unique_id)


def _write(path: Path, data: bytes, mtime_ns: int | None) -> None:
    path.write_bytes(data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def write_partition_dir(root: Path, spec: PartitionSpec) -> Path:
    d = root / spec.dir_name
    d.mkdir(parents=True)
    for base in spec.segments:
        stem = f"{base:020d}"
        _write(d / f"{stem}.log", spec.log_content, spec.mtime_ns)
        if spec.with_indexes:
            _write(d / f"{stem}.index", b"", spec.mtime_ns)
            _write(d / f"{stem}.timeindex", b"", spec.mtime_ns)
    pm = spec.partition_metadata
    if pm is None:
        _write(d / "partition.metadata", write_partition_metadata(spec.resolved_topic_id), spec.mtime_ns)
    elif pm is not False and pm is not True:
        _write(d / "partition.metadata", pm, spec.mtime_ns)
    if spec.leader_epochs:
        entries = [EpochEntry(e, o) for e, o in spec.leader_epochs]
        _write(d / "leader-epoch-checkpoint", write_leader_epoch_checkpoint(entries), spec.mtime_ns)
    for name, data in spec.extra_files.items():
        _write(d / name, data, spec.mtime_ns)
    return d


def write_cluster_metadata_dir(root: Path, *, quorum_state: bytes | None = None) -> Path:
    """A minimal ``__cluster_metadata-0`` (no segment content; the binary formats are built elsewhere)."""
    d = root / "__cluster_metadata-0"
    d.mkdir(parents=True)
    (d / "partition.metadata").write_bytes(write_partition_metadata(METADATA_TOPIC_ID))
    (d / "00000000000000000000.log").write_bytes(b"")
    (d / "leader-epoch-checkpoint").write_bytes(write_leader_epoch_checkpoint([EpochEntry(1, 0)]))
    state = b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    (d / "quorum-state").write_bytes(state if quorum_state is None else quorum_state)
    return d


def make_log_dir(
    root: Path | str,
    *,
    node_id: int = 1,
    cluster_id: str | None = CLUSTER_ID,
    directory_id: Uuid | None = None,
    meta_version: int = 1,
    meta_properties: bytes | bool | None = None,
    partitions: Iterable[PartitionSpec] = (),
    checkpoints: bool = True,
    checkpoint_overrides: Mapping[str, bytes] | None = None,
    clean_shutdown: bytes | None = None,
    lock: bool = True,
    bootstrap: bool = False,
    cluster_metadata: bool = False,
    extra_dirs: Iterable[str] = (),
    extra_files: Mapping[str, bytes] | None = None,
) -> Path:
    """Create a log dir at ``root`` and return its path.

    Args:
        meta_properties: None writes one from ``meta_version``/``cluster_id``/``node_id``/``directory_id``;
            ``False`` writes none; bytes are written as given.
        checkpoints: write the four root checkpoints listing the live partitions (cleaner: empty file).
        checkpoint_overrides: file name → raw bytes, replacing a generated checkpoint.
        clean_shutdown: bytes of ``.kafka_cleanshutdown`` (None: no file).
        extra_dirs: additional (e.g. odd) directory names, created empty.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    specs = list(partitions)
    if meta_properties is None:
        data = write_meta_properties(
            version=meta_version,
            cluster_id=cluster_id,
            node_id=node_id,
            directory_id=directory_id if directory_id is not None else uuid_for(f"dir-{root.name}"),
            moment=FIXED_MOMENT,
        )
        (root / "meta.properties").write_bytes(data)
    elif meta_properties is not False and meta_properties is not True:
        (root / "meta.properties").write_bytes(meta_properties)
    for spec in specs:
        write_partition_dir(root, spec)
    if cluster_metadata:
        write_cluster_metadata_dir(root)
    if checkpoints:
        live = [OffsetEntry(s.topic, s.partition, len(s.log_content)) for s in specs if s.kind == "live"]
        files = {
            RECOVERY_POINT: write_offset_checkpoint(live),
            LOG_START_OFFSET: write_offset_checkpoint([]),
            REPLICATION_OFFSET: write_offset_checkpoint(live),
            CLEANER_OFFSET: b"",
        }
        files.update(checkpoint_overrides or {})
        for name, data in files.items():
            (root / name).write_bytes(data)
    if clean_shutdown is not None:
        (root / ".kafka_cleanshutdown").write_bytes(clean_shutdown)
    if lock:
        (root / ".lock").write_bytes(b"")
    if bootstrap:
        (root / "bootstrap.checkpoint").write_bytes(b"\0" * 16)  # presence only; content is a binary format
    for name in extra_dirs:
        (root / name).mkdir()
    for name, data in (extra_files or {}).items():
        (root / name).write_bytes(data)
    return root
