"""Small per-cluster warehouses for the fleet tests, built like the demo warehouse (simulate → crawl → metadata →
findings → plan, no Spark), each cluster from its own simulated cluster and seed."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pipelines.config.models import DetectConfig
from pipelines.simulate import ClusterSpec, generate
from tests.analytics.demo_warehouse import DemoWarehouse, ingest_run


def add_cluster(root: Path, warehouse: Path, cluster: str, *, seed: int, runs: tuple[str, ...],
                brokers: int = 2) -> DemoWarehouse:
    """Simulate ``cluster`` under ``root/<cluster>`` and crawl it once per run id into ``warehouse`` (a day apart,
    the last one at the simulation's now)."""
    spec = ClusterSpec(brokers=brokers, topics=3, partitions_per_topic=2, jbod_dirs=2, seed=seed)
    result = generate(spec, root / cluster, cluster=cluster, warehouse=str(warehouse))
    demo = DemoWarehouse(root=root, sim=root / cluster, warehouse=warehouse, cluster=cluster)
    truth = json.loads(result.truth_path.read_text())
    now = datetime.fromtimestamp(truth["now_ms"] / 1000, tz=timezone.utc)
    detect = DetectConfig(file_delete_delay_ms=truth["file_delete_delay_ms"])
    for back, run_id in zip(range(len(runs) - 1, -1, -1), runs, strict=True):
        ingest_run(demo, run_id, now - timedelta(days=back), result.config_path, detect)
    return demo
