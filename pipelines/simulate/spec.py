"""What cluster to simulate: sizes, layout options and how many of each anomaly to inject.

An anomaly name is the class it produces in ``truth.json`` (see ``pipelines.detect.classes``), plus
``reassignment_in_flight``, which injects partitions being moved right now: their dirs on the adding broker are
``ok`` and must never be planned. Counts are cases, not dirs: one ``duplicate_replica`` case yields two dirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pipelines.detect import classes as c

REASSIGNMENT_IN_FLIGHT = "reassignment_in_flight"

ANOMALIES: tuple[str, ...] = (
    c.DELETED_TOPIC,
    c.RECREATED_TOPIC,
    c.PARTITION_OUT_OF_RANGE,
    c.NOT_A_REPLICA,
    REASSIGNMENT_IN_FLIGHT,
    c.WRONG_LOG_DIR,
    c.DUPLICATE_REPLICA,
    c.PENDING_DELETE,
    c.STUCK_DELETE,
    c.STRAY,
    c.FUTURE_IN_PROGRESS,
    c.ABANDONED_FUTURE,
    c.MISSING_PARTITION_METADATA,
    c.CORRUPT_PARTITION_METADATA,
    c.UNPARSEABLE_DIR,
)
"""Every anomaly the simulator can inject, in injection order."""

JBOD_ONLY: frozenset[str] = frozenset({c.WRONG_LOG_DIR, c.DUPLICATE_REPLICA, c.FUTURE_IN_PROGRESS})
"""Anomalies that need at least two log dirs per broker; skipped (and reported) otherwise."""

PRESETS: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        "none": MappingProxyType({}),
        "small": MappingProxyType({name: 1 for name in ANOMALIES}),
        "all": MappingProxyType({name: 3 for name in ANOMALIES}),
    }
)
"""``--anomalies`` presets: a clean cluster, one case of each anomaly, three of each."""

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A simulated KRaft cluster.

    Brokers are numbered ``1..brokers``; broker 1 is also the (combined-mode) controller and keeps
    ``__cluster_metadata-0`` in its first log dir unless ``separate_controller`` is set (then node
    ``brokers + 1`` is a controller-only node with its own metadata dir). ``now_ms`` fixes the clock: the same spec
    and seed give the same bytes; ``None`` means the wall clock at generation time.
    """

    brokers: int = 3
    topics: int = 4
    partitions_per_topic: int = 6
    replication: int = 3
    jbod_dirs: int = 1
    seed: int = 1
    anomalies: Mapping[str, int] = field(default_factory=lambda: PRESETS["small"])
    files_per_partition: int = 5
    segment_bytes: int = 64 * 1024 * 1024
    sparse: bool = True
    internal_partitions: int = 10
    separate_controller: bool = False
    snapshot: bool = True
    history_days: int = 14
    file_delete_delay_ms: int = DAY_MS
    now_ms: int | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.brokers < 1:
            problems.append("brokers must be >= 1")
        if self.topics < 0 or self.partitions_per_topic < 1:
            problems.append("topics must be >= 0 and partitions >= 1")
        if self.replication < 1:
            problems.append("replication must be >= 1")
        if self.jbod_dirs < 1:
            problems.append("jbod dirs must be >= 1")
        if self.files_per_partition < 1:
            problems.append("files per partition must be >= 1 (partition.metadata is always written)")
        if self.segment_bytes < 0 or self.internal_partitions < 0:
            problems.append("segment bytes and internal partitions must be >= 0")
        if self.history_days < 8:
            problems.append("history_days must be >= 8 (the anomaly stories span a week)")
        unknown = sorted(set(self.anomalies) - set(ANOMALIES))
        if unknown:
            problems.append(f"unknown anomalies {unknown}; known: {', '.join(ANOMALIES)}")
        if any(n < 0 for n in self.anomalies.values()):
            problems.append("anomaly counts must be >= 0")
        if any(self.anomalies.values()) and self.brokers < 2:
            problems.append("anomalies need at least 2 brokers (one of them is down)")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def effective_replication(self) -> int:
        return min(self.replication, self.brokers)

    def count(self, anomaly: str) -> int:
        """How many cases of ``anomaly`` will be injected (0 for JBOD-only ones without JBOD)."""
        if anomaly in JBOD_ONLY and self.jbod_dirs < 2:
            return 0
        return self.anomalies.get(anomaly, 0)

    def skipped(self) -> tuple[str, ...]:
        """Requested anomalies that cannot be injected with this layout."""
        return tuple(a for a in ANOMALIES if self.anomalies.get(a, 0) and not self.count(a))
