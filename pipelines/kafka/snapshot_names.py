"""KRaft snapshot file names (``raft/src/main/java/org/apache/kafka/snapshot/Snapshots.java``).

``<endOffset: 20 digits>-<epoch: 10 digits>.checkpoint``; the end offset is exclusive (the snapshot holds
state up to ``endOffset - 1``). A snapshot being written is ``<offset>-<epoch>-<random>.checkpoint.part``;
one marked for deletion is ``<offset>-<epoch>.checkpoint.deleted``. ``bootstrap.checkpoint`` is not a
snapshot name (it has the snapshot format but lives in the log-dir root).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.errors import DecodeError

__all__ = ["SnapshotName", "format_snapshot_name", "parse_snapshot_file", "parse_snapshot_name"]

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".checkpoint.part"
DELETED_SUFFIX = ".checkpoint.deleted"
_NAME = re.compile(r"(\d{20})-(\d{10})(-[^/]*)?\.checkpoint(\.part|\.deleted)?")


@dataclass(frozen=True, slots=True)
class SnapshotName:
    end_offset: int
    epoch: int
    partial: bool = False
    deleted: bool = False

    @property
    def last_contained_offset(self) -> int:
        return self.end_offset - 1


def parse_snapshot_file(name: str) -> SnapshotName:
    """Parse any snapshot file name, partial and deleted ones included.

    Raises:
        DecodeError: not a snapshot file name, or an epoch beyond int32.
    """
    m = _NAME.fullmatch(name)
    if m is None or (m.group(3) and m.group(4) != ".part"):
        raise DecodeError(f"not a KRaft snapshot file name: {name!r}")
    epoch = int(m.group(2))
    if epoch > 0x7FFFFFFF or int(m.group(1)) > 0x7FFFFFFFFFFFFFFF:
        raise DecodeError(f"snapshot offset or epoch out of range: {name!r}")
    return SnapshotName(int(m.group(1)), epoch, m.group(4) == ".part", m.group(4) == ".deleted")


def parse_snapshot_name(name: str) -> tuple[int, int]:
    """``"00000000000000000100-0000000001.checkpoint"`` -> ``(100, 1)`` (also accepts .part/.deleted names)."""
    parsed = parse_snapshot_file(name)
    return parsed.end_offset, parsed.epoch


def format_snapshot_name(end_offset: int, epoch: int) -> str:
    """The immutable snapshot file name for ``(end_offset, epoch)``."""
    if end_offset < 0 or epoch < 0:
        raise ValueError("snapshot offset and epoch are non-negative")
    return f"{end_offset:020d}-{epoch:010d}{SUFFIX}"
