"""Specs shared by the simulator tests."""

from __future__ import annotations

from pipelines.simulate import PRESETS, ClusterSpec

NOW_MS = 1_763_700_000_000  # fixed clock: 2025-11-21T04:40Z

ALL_SPEC = ClusterSpec(brokers=4, topics=3, partitions_per_topic=5, replication=3, jbod_dirs=2, seed=7,
                       anomalies=PRESETS["all"], files_per_partition=6, segment_bytes=1 << 20,
                       internal_partitions=3, now_ms=NOW_MS)
