"""Generated cluster → local crawl → metadata replay → Spark detection → plan; checked against truth.json."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_pipeline import SIZES, simulate, truth_classes

from pipelines.detect import classes as C
from pipelines.plan.emit import emit_plan
from pipelines.tables.schemas import ALL_TABLES

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("size", sorted(SIZES))
def test_detection_reproduces_truth_and_plans_only_garbage(spark, tmp_path: Path, size: str) -> None:
    from pipelines.detect.spark_detect import detect

    sim = simulate(size, tmp_path / "cluster")
    dfs = {name: spark.createDataFrame(rows, schema=ALL_TABLES[name].to_spark()) for name, rows in sim.tables.items()}
    findings = detect(spark, **dfs, config=sim.config.detect, now=sim.now).collect()

    got = {(r.broker_id, r.log_dir, r.dir_name): (r["class"], r.protected) for r in findings}
    assert got == truth_classes(sim)

    plan = emit_plan(findings, sim.image, cluster=sim.config.cluster, run_id="e2e-run", created_by="test",
                     policy=sim.config.policy, out_dir=str(tmp_path / "plans"), config=sim.config.detect, now=sim.now)
    planned = {(i.broker_id, i.log_dir, i.dir_name) for i in plan.items}
    garbage = {(i.broker_id, i.log_dir, i.dir_name) for i in sim.truth.items
               if i.cls in C.GARBAGE_CLASSES and not i.protected}
    assert planned == garbage  # every story is older than the 1-day grace: all of it, and nothing else
    assert (tmp_path / "plans" / f"{plan.plan_id}.json").is_file()
