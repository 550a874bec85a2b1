"""The crawl of a small cluster in the driver, when Spark's executors are this machine anyway (a local master).

On a local master a Spark task runs on the driver's own machine, in a Python worker the JVM forks for it. For a few
hundred partition dirs that job (the worker started, the rows cached and summarised) costs seconds for what takes
tens of milliseconds in this process. ``crawl_in_driver`` runs the same root tasks as the Spark crawl, in as many
threads as Spark runs tasks at once, and hands the rows to Spark as Arrow: the DataFrames it returns
read those rows, so the writes and detect see exactly what the Spark crawl would have given them.

``runs_in_driver`` says when to try: a local master, at most ``max_jobs`` log dirs, every one of them on a backend
that fans out (local paths, ``file://``, generic fsspec: a large log dir is listed, not read, before the crawl
gives up on it), no inventory file (fleet scale) and no segment rows (their number has no bound here).
``crawl_in_driver`` gives up, returning None so the caller runs the Spark crawl instead, as soon as the cluster
proves not small: more than ``max_dirs`` partition dirs, or a log dir large enough to fan out. The work given up is
bounded by that: the listings, and at most ``max_dirs`` plus one log dir's worth of partition dirs read.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from pipelines.crawl.backends.registry import backend_name
from pipelines.crawl.local_crawl import in_process_run_row
from pipelines.crawl.rows import LogDirRows, utc_now
from pipelines.crawl.spark_crawl import CrawlFrames
from pipelines.crawl.tasks import DEFAULT_FANOUT_DIRS, FANOUT_BACKENDS, BrokerLike, jobs_for, root_task
from pipelines.kafka.gc_pause import gc_paused
from pipelines.tables.schemas import CRAWL_ERRORS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES, TableSchema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DRIVER_CRAWL_DIRS", "DRIVER_CRAWL_JOBS", "crawl_in_driver", "runs_in_driver"]

DRIVER_CRAWL_DIRS = 20_000
"""At most this many partition dirs are crawled in the driver (~1.5 s of work there at the most, then given up)."""
DRIVER_CRAWL_JOBS = 256
"""At most this many log dirs are crawled in the driver."""


def runs_in_driver(spark: SparkSession, brokers: Sequence[BrokerLike], *, include_segments: bool = False,
                   max_jobs: int = DRIVER_CRAWL_JOBS) -> bool:
    """True when the crawl may try the driver first (see the module docstring)."""
    if include_segments or not spark.sparkContext.master.startswith("local") or any(b.inventory for b in brokers):
        return False
    urls = [url for b in brokers for url in b.log_dirs]
    return 0 < len(urls) <= max_jobs and all(backend_name(url) in FANOUT_BACKENDS for url in urls)


def crawl_in_driver(spark: SparkSession, brokers: Sequence[BrokerLike], *, run_id: str, cluster: str,
                    include_segments: bool = False, max_dirs: int = DRIVER_CRAWL_DIRS) -> CrawlFrames | None:
    """The crawl's frames from root tasks run in this process, or None when the cluster proves not small."""
    started = utc_now()
    jobs = jobs_for(brokers, run_id=run_id, cluster=cluster)
    seen = 0
    too_big = threading.Event()
    lock = threading.Lock()

    def run(index: int) -> LogDirRows | None:
        nonlocal seen
        if too_big.is_set():
            return None
        rows, chunks = root_task(jobs[index], started, include_segments=include_segments,
                                 fanout_dirs=DEFAULT_FANOUT_DIRS)
        with lock:
            seen += len(rows.partition_dirs)
            if chunks or seen > max_dirs:
                too_big.set()
        return rows

    threads = max(1, min(len(jobs), spark.sparkContext.defaultParallelism))  # as many as Spark's tasks at once
    with gc_paused(), ThreadPoolExecutor(threads, "klgc-crawl") as pool:
        parts = list(pool.map(run, range(len(jobs))))
    if too_big.is_set():
        return None
    rows = LogDirRows()
    for part in parts:
        assert part is not None  # only a crawl given up has parts it skipped
        rows.extend(part)

    def frame(schema: TableSchema, table_rows: list[dict]) -> DataFrame:
        import pyarrow as pa

        return spark.createDataFrame(pa.Table.from_pylist(table_rows, schema=schema.to_arrow()),
                                     schema=schema.to_spark())

    row = in_process_run_row(rows, run_id=run_id, cluster=cluster, started_at=started, brokers=brokers,
                             jobs=len(jobs))
    return CrawlFrames(
        log_dirs=frame(LOG_DIRS, rows.log_dirs), partition_dirs=frame(PARTITION_DIRS, rows.partition_dirs),
        segment_files=frame(SEGMENT_FILES, rows.segment_files), errors=frame(CRAWL_ERRORS, rows.errors),
        run_row=row, cluster_ids=tuple(sorted({r["meta_cluster_id"] for r in rows.log_dirs
                                               if r["meta_cluster_id"] is not None})),
    )
