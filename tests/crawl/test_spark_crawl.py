"""The Spark crawl equals the pure-Python crawl, fanned out or not; reruns of a run id never duplicate rows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.crawl.local_crawl import crawl_local
from tests.crawl.conftest import Broker, assert_same_rows

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

def test_spark_crawl_equals_local_crawl_with_and_without_fanout(spark, brokers: list[Broker],  # type: ignore[no-untyped-def]
                                                                cluster: dict[str, Path]) -> None:  # fmt: skip
    from pipelines.crawl.spark_crawl import crawl
    from pipelines.tables.schemas import CRAWL_ERRORS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES

    os.symlink("nowhere", cluster["b1-d0"] / "orders-0" / "dangling")
    brokers = [*brokers, Broker(9, (str(cluster["b1-d0"].parent / "missing"),), {})]
    expected = crawl_local(brokers, run_id="r", cluster="c", include_segments=True)
    for fanout in (None, 1):
        frames = crawl(spark, brokers, run_id="r", cluster="c", include_segments=True, fanout_dirs=fanout)
        try:
            assert_same_rows(spark, frames.log_dirs, expected.log_dirs, LOG_DIRS)
            assert_same_rows(spark, frames.partition_dirs, expected.partition_dirs, PARTITION_DIRS)
            assert_same_rows(spark, frames.segment_files, expected.segment_files, SEGMENT_FILES)
            assert_same_rows(spark, frames.errors, expected.errors, CRAWL_ERRORS)
            for key in ("status", "log_dirs", "partition_dirs", "files", "bytes", "errors", "source", "brokers"):
                assert frames.run_row[key] == expected.run_row[key], key
            # the plan step takes the cluster id from here instead of reading log_dirs back
            assert frames.cluster_ids == tuple(sorted({r["meta_cluster_id"] for r in expected.log_dirs} - {None}))
        finally:
            frames.unpersist()


def test_crawl_job_rerun_replaces_the_run(spark, brokers: list[Broker], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from pipelines.crawl.spark_crawl import crawl
    from pipelines.tables import open_store

    store = open_store("spark", str(tmp_path / "wh"), spark=spark)
    for _ in range(2):
        frames = crawl(spark, brokers, run_id="r1", cluster="c")
        store.overwrite_partition("partition_dirs", {"run_id": "r1"}, frames.partition_dirs)
        store.overwrite_partition("crawl_runs", {"run_id": "r1"}, [frames.run_row])
        frames.unpersist()
    assert store.read("partition_dirs").count() == frames.run_row["partition_dirs"]
    assert store.read("crawl_runs").count() == 1


def test_tables_read_the_cached_records_not_python(spark, brokers: list[Broker]) -> None:  # type: ignore[no-untyped-def]
    """The crawl tasks run once: every table's DataFrame (and the summary) reads the records Spark cached, so
    writing three tables does not send the rows through Python three more times."""
    from pipelines.crawl.spark_crawl import crawl

    frames = crawl(spark, brokers, run_id="r", cluster="c")
    try:
        for df in (frames.log_dirs, frames.partition_dirs, frames.errors):
            plan = df._jdf.queryExecution().withCachedData().toString()
            assert "InMemoryRelation" in plan, plan
            assert "LogicalRDD" not in plan.split("InMemoryRelation")[0], plan
    finally:
        frames.unpersist()
