"""A small cluster on a local master is crawled in the driver: the same rows as the Spark crawl, and it gives up
(None: the Spark crawl runs) on anything that is not small."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.crawl.driver_crawl import crawl_in_driver, runs_in_driver
from pipelines.crawl.local_crawl import crawl_local
from tests.crawl.conftest import Broker, assert_same_rows

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

def test_driver_crawl_gives_the_rows_of_the_crawl(spark, brokers: list[Broker],  # type: ignore[no-untyped-def]
                                                  cluster: dict[str, Path]) -> None:
    from pipelines.tables.schemas import CRAWL_ERRORS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES

    os.symlink("nowhere", cluster["b1-d0"] / "orders-0" / "dangling")  # an error row
    brokers = [*brokers, Broker(9, (str(cluster["b1-d0"].parent / "missing"),), {})]
    expected = crawl_local(brokers, run_id="r", cluster="c", include_segments=True)
    assert runs_in_driver(spark, brokers)
    frames = crawl_in_driver(spark, brokers, run_id="r", cluster="c", include_segments=True)
    assert frames is not None
    for df, rows, schema in ((frames.log_dirs, expected.log_dirs, LOG_DIRS),
                             (frames.partition_dirs, expected.partition_dirs, PARTITION_DIRS),
                             (frames.segment_files, expected.segment_files, SEGMENT_FILES),
                             (frames.errors, expected.errors, CRAWL_ERRORS)):
        assert df.schema == schema.to_spark()
        assert_same_rows(spark, df, rows, schema)
    assert expected.errors and expected.segment_files  # the comparison covered every table
    for key in ("status", "log_dirs", "partition_dirs", "files", "bytes", "errors", "source", "brokers"):
        assert frames.run_row[key] == expected.run_row[key], key
    assert frames.cluster_ids == tuple(sorted({r["meta_cluster_id"] for r in expected.log_dirs} - {None}))


def test_driver_crawl_gives_up_past_its_bound(spark, brokers: list[Broker]) -> None:  # type: ignore[no-untyped-def]
    total = crawl_local(brokers, run_id="r", cluster="c").run_row["partition_dirs"]
    assert crawl_in_driver(spark, brokers, run_id="r", cluster="c", max_dirs=total) is not None
    assert crawl_in_driver(spark, brokers, run_id="r", cluster="c", max_dirs=total - 1) is None


def test_driver_crawl_gives_up_on_a_log_dir_that_fans_out(spark, brokers: list[Broker],  # type: ignore[no-untyped-def]
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import pipelines.crawl.driver_crawl as driver_crawl

    monkeypatch.setattr(driver_crawl, "DEFAULT_FANOUT_DIRS", 1)  # every log dir of two partition dirs fans out
    assert driver_crawl.crawl_in_driver(spark, brokers, run_id="r", cluster="c") is None


def test_only_small_local_listings_on_a_local_master_run_in_the_driver(spark, brokers: list[Broker],  # type: ignore[no-untyped-def]
                                                                 tmp_path: Path) -> None:
    assert runs_in_driver(spark, brokers)
    assert not runs_in_driver(spark, brokers, include_segments=True)  # segment rows: no bound on their number
    assert not runs_in_driver(spark, [*brokers, Broker(3, (), {}, inventory=str(tmp_path / "inv.jsonl"))])
    # a backend that does not fan out would be read whole before the crawl could give up on it
    assert not runs_in_driver(spark, [*brokers, Broker(3, ("sftp://kafka@broker-3/var/lib/kafka",), {})])
    assert not runs_in_driver(spark, brokers, max_jobs=2)  # three log dirs
    assert not runs_in_driver(spark, [])

    # a session on a standalone master runs in the second tier (tests/cluster, which then crawls with Spark tasks);
    # here only its master URL matters, so a stand-in carries it
    class Remote:
        class sparkContext:
            master = "spark://spark-master:7077"

    assert not runs_in_driver(Remote(), brokers)  # type: ignore[arg-type]
