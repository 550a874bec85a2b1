"""Names of the files inside a partition directory.

- Segment files (``storage/.../log/LogFileUtils.java``): ``<20-digit base offset><suffix>`` with suffix ``.log``,
  ``.index``, ``.timeindex``, ``.txnindex`` or ``.snapshot`` (producer state), optionally followed by one of the
  transient states ``.deleted``, ``.cleaned``, ``.swap``.
- KRaft snapshots (``raft/.../snapshot/Snapshots.java``, only in ``__cluster_metadata-0``):
  ``<20-digit end offset>-<10-digit epoch>.checkpoint``, ``....checkpoint.deleted``, and partial
  ``<offset>-<epoch>-<random>.checkpoint.part``.
- Fixed names: ``leader-epoch-checkpoint``, ``partition.metadata``, ``quorum-state``; ``<any>.tmp`` leftovers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

FileKind = Literal[
    "segment",
    "raft_snapshot",
    "raft_snapshot_partial",
    "raft_snapshot_deleted",
    "leader_epoch_checkpoint",
    "partition_metadata",
    "quorum_state",
    "tmp",
    "unknown",
]

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
STATES = (".deleted", ".cleaned", ".swap")

_SEGMENT_TAILS: dict[str, tuple[str, str]] = {
    suffix + state: (suffix, state[1:]) for suffix in SEGMENT_SUFFIXES for state in ("", *STATES)
}
"""Everything a segment file name may have after its 20 digits, to (suffix, state)."""
_RAFT_SNAPSHOT = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint(\.deleted)?")
_RAFT_PARTIAL = re.compile(r"([0-9]{20})-([0-9]{10})(?:-.*)?\.checkpoint\.part", re.DOTALL)
_FIXED: dict[str, FileKind] = {
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "partition.metadata": "partition_metadata",
    "quorum-state": "quorum_state",
}


@dataclass(frozen=True, slots=True)
class FileName:
    """A classified file name. ``suffix`` is ``.log``/``.index``/... or ``.checkpoint``; ``state`` is ``''``,
    ``deleted``, ``cleaned``, ``swap`` (segments) or ``deleted``/``partial`` (raft snapshots)."""

    name: str
    kind: FileKind
    base_offset: int | None = None
    suffix: str | None = None
    state: str = ""
    epoch: int | None = None

    @property
    def is_live_segment_data(self) -> bool:
        """A ``.log`` Kafka would load as a segment (no transient state)."""
        return self.kind == "segment" and self.suffix == ".log" and not self.state

    @property
    def is_index(self) -> bool:
        return self.kind == "segment" and self.suffix in INDEX_SUFFIXES


@lru_cache(maxsize=1 << 14)
def classify_file(name: str) -> FileName:
    """Classify one file name; never raises. Cached: partition dirs repeat names (``00000000000000000000.log``)."""
    tail = _SEGMENT_TAILS.get(name[20:])
    if tail is not None:
        digits = name[:20]
        if digits.isascii() and digits.isdigit():
            return FileName(name, "segment", int(digits), tail[0], tail[1])
    m = _RAFT_SNAPSHOT.fullmatch(name)
    if m:
        kind: FileKind = "raft_snapshot_deleted" if m.group(3) else "raft_snapshot"
        return FileName(name, kind, int(m.group(1)), ".checkpoint", "deleted" if m.group(3) else "", int(m.group(2)))
    m = _RAFT_PARTIAL.fullmatch(name)
    if m:
        return FileName(name, "raft_snapshot_partial", int(m.group(1)), ".checkpoint", "partial", int(m.group(2)))
    if name in _FIXED:
        return FileName(name, _FIXED[name])
    if name.endswith(".tmp"):
        return FileName(name, "tmp")
    return FileName(name, "unknown")
