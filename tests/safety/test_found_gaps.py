"""Gaps found while writing the safety property test: fixed ones as regression tests, open ones as strict xfails."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

from pipelines.config.models import PolicyConfig
from pipelines.detect import classes as C
from pipelines.detect.params import ASSIGNED_DELETE_REASON
from pipelines.plan.emit import emit_plan
from pipelines.simulate import PRESETS, ClusterSpec, generate, load_truth
from tests.safety import gc_world as W

NOW_MS = 1_763_700_000_000


def test_replication_one_with_partition_out_of_range_generates(tmp_path: Path) -> None:
    """Was a StopIteration: the holder was the first replica of partition 0 other than the down broker, and with
    replication 1 that partition can live on the down broker alone. Detection of such a cluster against its
    truth.json is covered by the ``replication_one`` size of tests/detect/sim_pipeline.py."""
    spec = ClusterSpec(brokers=3, topics=1, partitions_per_topic=1, replication=1, seed=0,
                       anomalies={"partition_out_of_range": 1}, files_per_partition=1, segment_bytes=0,
                       internal_partitions=0, now_ms=NOW_MS)
    result = generate(spec, tmp_path / "sim")
    assert result.dirs_per_class.get("partition_out_of_range") == 1
    truth = load_truth(result.truth_path)
    [item] = [i for i in truth.items if i.cls == C.PARTITION_OUT_OF_RANGE]
    assert item.broker_id not in {b.broker_id for b in truth.brokers if b.down}
    assert truth.skipped_anomalies == ()


def test_an_old_delete_copy_of_an_assigned_replica_is_reported_not_planned(tmp_path: Path) -> None:
    """Found by the property test: such a copy was planned as stuck_delete, then always refused by the executor.

    Both classifiers now call it pending_delete (Kafka deletes it at the next start), so plan and executor agree.
    """
    spec = ClusterSpec(brokers=3, topics=1, partitions_per_topic=1, replication=2, seed=1, anomalies=PRESETS["none"],
                       files_per_partition=1, segment_bytes=0, internal_partitions=0, now_ms=NOW_MS)
    result = generate(spec, tmp_path / "sim", warehouse=str(tmp_path / "warehouse"))
    now, cluster_id = W.now_of(result.truth_path)
    c = W.crawl(result.config_path, now, cluster_id)
    (_, log_dir, name), _ = next(iter(sorted(W.assigned_dirs(c.config, c.image).items())))
    # What alter-log-dirs leaves behind when the broker is stopped before its delayed delete runs.
    copy = Path(log_dir) / f"{name}.{'ab' * 16}-delete"
    shutil.copytree(Path(log_dir) / name, copy)
    old = (now - timedelta(days=30)).timestamp()
    os.utime(copy, (old, old))
    c = W.crawl(result.config_path, now, cluster_id)
    policy = PolicyConfig()
    plan = emit_plan(W.honest_findings(c), c.image, cluster=c.config.cluster, run_id=W.RUN_ID, created_by="gen",
                     policy=policy, out_dir=str(tmp_path / "plans"), config=c.config.detect, now=now,
                     cluster_id=cluster_id)
    assert copy.name not in {i.dir_name for i in plan.items}
    [finding] = [f for f in W.honest_findings(c) if f["dir_name"] == copy.name]
    assert (finding["class"], finding["plannable"]) == (C.PENDING_DELETE, False)
    assert finding["reason"] == ASSIGNED_DELETE_REASON
