"""Small runs take fewer Spark jobs: detect reads each input once into a cache, the plan collects its inputs.

Counted with a job group and Spark's status tracker (jobs, not seconds); the rows must be the same either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import load_config
from pipelines.orchestrate import run_pipeline
from pipelines.orchestrate.steps import (
    SMALL_PLAN_ROWS,
    SMALL_RUN_ROWS,
    StepReport,
    detect_inputs,
    detect_step,
    is_small_run,
    plan_inputs,
)
from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.tables.warehouse_store import warehouse_store

NOW = datetime.fromtimestamp(1_780_000_000, tz=timezone.utc)


def jobs_run_by(spark: Any, fn: Callable[[], Any]) -> tuple[Any, int]:
    """``fn()`` and the number of Spark jobs it started (its own job group)."""
    sc = spark.sparkContext
    group = f"test-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "counted")
    try:
        out = fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


def test_small_run_is_judged_by_what_detect_joins() -> None:
    crawled = StepReport("crawl", {"partition_dirs": 900})
    assert is_small_run(crawled, StepReport("ingest_metadata", {"partitions": 300, "events": 400}))
    assert not is_small_run(crawled, StepReport("ingest_metadata", {"partitions": 633_000, "events": 0}))
    assert not is_small_run(StepReport("crawl", {"partition_dirs": SMALL_RUN_ROWS + 1}),
                            StepReport("ingest_metadata", {"partitions": 0, "events": 0}))


@pytest.mark.spark
def test_plan_inputs_collect_a_small_plan_in_one_job_each_and_stream_a_large_one(spark) -> None:
    rows = [(b, "t", p, kind, kind != "live" and p % 2 == 0) for b in range(3) for p in range(20)
            for kind in ("live", "stray")]
    findings = spark.createDataFrame(rows, "broker_id int, topic string, partition int, kind string, "
                                           "plannable boolean").repartition(6)

    def consumed(plannable: int | None) -> Callable[[], Any]:
        def run() -> Any:
            live, candidates, cluster_id = plan_inputs(spark, None, "r1", findings, ("c1",), plannable)
            return [r.asDict() for r in live], [r.asDict() for r in candidates], cluster_id
        return run

    small, small_jobs = jobs_run_by(spark, consumed(30))
    streamed, streamed_jobs = jobs_run_by(spark, consumed(None))
    large, _ = jobs_run_by(spark, consumed(SMALL_PLAN_ROWS + 1))
    assert small == streamed == large, "the same rows in the same order either way"
    assert len(small[1]) == 30 and len(small[0]) == 30 and small[2] == "c1"
    assert small_jobs <= 2 < streamed_jobs


@pytest.mark.spark
@pytest.mark.second_tier  # ~47 s in CI: a speed-up, not a rule (the findings themselves: test_pipeline)
def test_detect_with_cached_inputs_writes_the_same_findings_with_fewer_jobs(spark, tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=3, jbod_dirs=2, anomalies=PRESETS["small"], now_ms=int(NOW.timestamp() * 1000),
                       seed=11)
    generate(spec, tmp_path, warehouse=str(tmp_path / "warehouse"), force=True)
    config = load_config(tmp_path / "cluster.yaml")
    run_pipeline(config, "r1", created_by="t", now=NOW)
    store = warehouse_store(config.warehouse, config.warehouse_storage_options, engine="spark", spark=spark)

    def findings(cache_inputs: bool) -> Callable[[], list[dict[str, Any]]]:
        def run() -> list[dict[str, Any]]:
            detect_step(spark, store, config, "r1", now=NOW, cache_inputs=cache_inputs)
            return sorted((r.asDict() for r in store.read("findings", {"run_id": "r1"}).collect()),
                          key=lambda r: (r["broker_id"], r["log_dir"], r["dir_name"]))
        return run

    read, read_jobs = jobs_run_by(spark, findings(False))
    cached, cached_jobs = jobs_run_by(spark, findings(True))
    assert cached == read
    assert cached_jobs < read_jobs
    levels = [df.storageLevel for df in detect_inputs(store, config.cluster, "r1").values()]
    assert not any(level.useMemory or level.useDisk for level in levels), "detect unpersists what it cached"


@pytest.mark.spark
@pytest.mark.parametrize("crawled_by", [
    "driver",
    # ~36 s in CI; Spark-task crawls keep their rows in test_spark_crawl and test_pipeline under make test
    pytest.param("spark tasks", marks=pytest.mark.second_tier),
])
def test_a_small_run_detects_from_what_crawl_and_ingest_kept_as_from_the_tables(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crawled_by: str) -> None:
    """Crawl and ingest of a small run keep the rows they wrote; detect given them writes the findings it writes
    from the tables, with fewer Spark jobs (the tables are not read back), and the crawl's cache is released.
    A crawl in the driver (``driver_crawl``: a small cluster on a local master) keeps its rows without a cache."""
    import pipelines.crawl.driver_crawl as driver_crawl
    from pipelines.orchestrate.run_status import SUCCEEDED, Statuses
    from pipelines.orchestrate.steps import crawl_step, ingest_metadata_step

    if crawled_by == "spark tasks":
        monkeypatch.setattr(driver_crawl, "runs_in_driver", lambda *_args, **_kw: False)

    spec = ClusterSpec(brokers=3, jbod_dirs=2, anomalies=PRESETS["small"], now_ms=int(NOW.timestamp() * 1000),
                       seed=12)
    generate(spec, tmp_path, warehouse=str(tmp_path / "warehouse"), force=True)
    config = load_config(tmp_path / "cluster.yaml")
    store = warehouse_store(config.warehouse, config.warehouse_storage_options, engine="spark", spark=spark)
    store.ensure_tables()
    def cached() -> int:  # cached by us, not the Delta log states delta-spark keeps for itself
        rdds = spark.sparkContext._jsc.getPersistentRDDs().values()
        return sum(not str(rdd.name() or "").startswith("Delta Table State") for rdd in rdds)

    before = cached()
    crawled = crawl_step(spark, store, config, "r1", keep_small=True)
    assert cached() > before if crawled_by == "spark tasks" else cached() == before
    ingested, _ = ingest_metadata_step(store, config, "r1", keep_small=True)
    given = {**crawled.frames["detect_inputs"], **ingested.frames["detect_inputs"]}
    assert set(given) == {"log_dirs", "partition_dirs", "controller_topics", "controller_partitions",
                          "controller_brokers", "controller_broker_configs"}
    known = Statuses(crawl=crawled.counts["status"], ingest=SUCCEEDED)

    def findings(inputs: dict[str, Any] | None) -> Callable[[], list[dict[str, Any]]]:
        def run() -> list[dict[str, Any]]:
            detect_step(spark, store, config, "r1", now=NOW, known=known, cache_inputs=True, given=inputs)
            return sorted((r.asDict() for r in store.read("findings", {"run_id": "r1"}).collect()),
                          key=lambda r: (r["broker_id"], r["log_dir"], r["dir_name"]))
        return run

    from_tables, table_jobs = jobs_run_by(spark, findings(None))
    from_kept, kept_jobs = jobs_run_by(spark, findings(given))
    assert from_kept == from_tables and {r["class"] for r in from_kept} > {"ok"}
    assert kept_jobs < table_jobs
    crawled.frames["release"]()
    assert cached() == before, "the crawl's cached records are released"
    big, _ = ingest_metadata_step(store, config, "r2", keep_small=False)
    assert "detect_inputs" not in big.frames
