"""The Spark detector and the re-check side by side: agreement on every class, and a wrong join caught."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detect"))
from gc_cluster import NOW, RUN
from mixed_cluster import C1, ORD, mixed_cluster

from pipelines.config.models import DetectConfig, PolicyConfig
from pipelines.errors import PlanError
from pipelines.plan.emit import emit_plan
from pipelines.plan.recheck import DirFacts, classify, live_copies

pytestmark = pytest.mark.spark
CONFIG = DetectConfig()


def detect_rows(spark, dfs):
    from pipelines.detect.spark_detect import detect

    return detect(spark, **dfs, config=CONFIG, now=NOW).collect()


def test_recheck_agrees_with_spark_on_every_row_and_the_plan_is_emitted(spark, tmp_path: Path) -> None:
    c = mixed_cluster()
    rows = detect_rows(spark, c.dataframes(spark))
    image = c.image()
    facts = [DirFacts.from_finding(r.asDict()) for r in rows]
    copies = live_copies(facts)
    for row, f in zip(rows, facts, strict=True):
        assert classify(f, image, copies=copies, config=CONFIG, now=NOW)[0] == row["class"], row.dir_name
    plan = emit_plan(rows, image, cluster="c1", run_id=RUN, created_by="t", policy=PolicyConfig(),
                     out_dir=str(tmp_path), config=CONFIG, now=NOW)
    assert {i.dir_name for i in plan.items} == {r.dir_name for r in rows if r.plannable}


def test_an_inverted_join_never_reaches_a_reviewer(spark, tmp_path: Path) -> None:
    """Swap topic ids in the Spark input only (orders gets the old clicks id): live replicas look recreated."""
    c = mixed_cluster()
    dfs = c.dataframes(spark)
    swap = F.when(F.col("topic_id") == ORD, F.lit(C1)).when(F.col("topic_id") == C1, F.lit(ORD)).otherwise(
        F.col("topic_id"))
    for table in ("controller_topics", "controller_partitions"):
        dfs[table] = dfs[table].withColumn("topic_id", swap)
    rows = detect_rows(spark, dfs)
    wrongly = {(r.broker_id, r.dir_name) for r in rows if r.plannable and r["class"] == "recreated_topic"}
    assert (1, "orders-0") in wrongly  # the corrupted join did call a live replica garbage
    with pytest.raises(PlanError, match="re-check refused"):
        emit_plan(rows, c.image(), cluster="c1", run_id=RUN, created_by="t", policy=PolicyConfig(),
                  out_dir=str(tmp_path), config=CONFIG, now=NOW)
    [report] = tmp_path.glob("*.disagreements.json")
    refused = {(d["broker_id"], d["dir_name"]): d["recheck_class"] for d in json.loads(report.read_text())[
        "disagreements"]}
    assert refused[(1, "orders-0")] == "assigned_replica"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".json") and "disagreements" not in p.name]
