"""The crawl on Spark: (broker, log dir) pairs are tasks; big log dirs fan out over partition dirs.

Stage 1 runs the (broker, log dir) jobs (``tasks.root_task``), one per task up to four tasks per core (then several
per task: a fleet's 1,000 inventories). A log dir with more partition dirs than ``fanout_dirs`` returns chunks of
partition-dir names instead of rows; stage 2 gives each chunk its own Spark partition (``tasks.chunk_task``), so a
million files over two log dirs still keeps every core busy. Tasks emit ``(table, row tuple)`` records; each
table's DataFrame is built from them with the schema's ``to_spark()``.

Driver memory stays flat: rows never come to the driver. The driver receives only counts and sums (for the
``crawl_runs`` row), the number of chunks and the log dirs' cluster ids. The records are persisted (memory and
disk) so writing the four DataFrames does not list the log dirs again; call ``CrawlFrames.unpersist()`` when done.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pipelines import native
from pipelines.crawl.local_crawl import CrawlResult, crawl_local, run_code_path, run_row
from pipelines.crawl.rows import LogDirRows, utc_now
from pipelines.crawl.tasks import DEFAULT_FANOUT_DIRS, BrokerLike, Chunk, LogDirJob, chunk_task, jobs_for, root_task
from pipelines.tables.schemas import CRAWL_ERRORS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES, TableSchema

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CrawlFrames", "CrawlResult", "crawl", "crawl_local"]

_TABLES: dict[str, TableSchema] = {
    t.name: t for t in (LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES, CRAWL_ERRORS)
}
_COLUMNS = {name: t.column_names for name, t in _TABLES.items()}
_CHUNK = "chunk"
_BYTES = "chunk_bytes"
_CODE_PATH = "code_path"  # one record per task: did it run the compiled speed-ups
_CLUSTER_ID = "cluster_id"  # summary key per distinct meta.properties cluster.id of the log dirs
MAX_CHUNK_PARTITIONS = 10_000
ROOT_TASKS_PER_CORE = 4


def root_slices(jobs: int, parallelism: int) -> int:
    """Stage-1 tasks: one per job up to ``ROOT_TASKS_PER_CORE`` per core, then several jobs per task (a fleet's
    1,000 inventories as 1,000 tasks pay Spark's per-task cost 1,000 times for a few ms of work each)."""
    return max(1, min(jobs, ROOT_TASKS_PER_CORE * max(parallelism, 1)))


@dataclass(frozen=True)
class CrawlFrames:
    log_dirs: DataFrame
    partition_dirs: DataFrame
    segment_files: DataFrame
    errors: DataFrame
    run_row: dict[str, Any]
    #: the distinct ``meta_cluster_id`` values of the ``log_dirs`` rows (sorted), known without reading them back
    cluster_ids: tuple[str, ...] = ()
    _persisted: tuple[Any, ...] = ()

    def unpersist(self) -> None:
        for rdd in self._persisted:
            rdd.unpersist()


def _records(rows: LogDirRows, job: LogDirJob | None) -> Iterator[tuple[str, Any]]:
    for name, table_rows in (
        ("log_dirs", rows.log_dirs), ("partition_dirs", rows.partition_dirs),
        ("segment_files", rows.segment_files), ("crawl_errors", rows.errors),
    ):  # fmt: skip
        cols = _COLUMNS[name]
        for r in table_rows:
            yield name, tuple(r[c] for c in cols)
    if job is not None and rows.partition_dirs:
        yield _BYTES, (job.broker_id, job.log_dir, rows.partition_bytes)


def _root_records(job: LogDirJob, at: datetime, include_segments: bool, fanout: int | None) -> Iterator[Any]:
    rows, chunks = root_task(job, at, include_segments=include_segments, fanout_dirs=fanout)
    yield _CODE_PATH, native.code_path()
    yield from _records(rows, None)
    for chunk in chunks:
        yield _CHUNK, chunk


def _chunk_records(chunk: Chunk, include_segments: bool) -> Iterator[Any]:
    yield _CODE_PATH, native.code_path()
    yield from _records(chunk_task(chunk, include_segments=include_segments), chunk.job)


def _frame(spark: SparkSession, records: RDD[Any], name: str) -> DataFrame:
    rdd = records.filter(lambda r, n=name: r[0] == n).map(lambda r: r[1])
    return spark.createDataFrame(rdd, _TABLES[name].to_spark(), verifySchema=False)


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


def _summary(records: RDD[Any]) -> dict[str, int]:
    """Counts per table, partition-dir files and bytes, tasks per code path, the log dirs' cluster ids, chunks
    handed out: the only data brought to the driver, in one job."""
    cluster_id_at = _COLUMNS["log_dirs"].index("meta_cluster_id")

    def one(r: Any) -> dict[str, int]:
        tag, row = r
        out = {f"{_CODE_PATH}:{row}" if tag == _CODE_PATH else tag: 1}
        if tag == "partition_dirs":
            out["files"] = row[_COLUMNS["partition_dirs"].index("files")] or 0
            out["bytes"] = row[_COLUMNS["partition_dirs"].index("bytes")] or 0
        elif tag == "log_dirs" and row[cluster_id_at] is not None:
            out[f"{_CLUSTER_ID}:{row[cluster_id_at]}"] = 1
        return out

    return records.filter(lambda r: r[0] in _TABLES or r[0] in (_CODE_PATH, _CHUNK)).map(one).fold({}, _add)


def crawl(
    spark: SparkSession,
    brokers: Sequence[BrokerLike],
    *,
    run_id: str,
    cluster: str,
    include_segments: bool = False,
    fanout_dirs: int | None = DEFAULT_FANOUT_DIRS,
) -> CrawlFrames:
    """Crawl every broker's log dirs (or inventory files) as Spark tasks; see the module docstring.

    The crawl itself runs inside this call (the run row needs its counts); the DataFrames read persisted records.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = utc_now()
    sc = spark.sparkContext
    jobs = jobs_for(brokers, run_id=run_id, cluster=cluster)
    inc, fan = include_segments, fanout_dirs
    roots = sc.parallelize(jobs, root_slices(len(jobs), sc.defaultParallelism)).flatMap(
        lambda job: _root_records(job, started, inc, fan)
    ).persist(StorageLevel.MEMORY_AND_DISK)
    counts = _summary(roots)  # the root tasks run here, once; their records stay cached for the writes
    n_chunks = counts.pop(_CHUNK, 0)
    records = roots.filter(lambda r: r[0] != _CHUNK)
    persisted: tuple[Any, ...] = (roots,)
    if n_chunks:
        parts = min(n_chunks, MAX_CHUNK_PARTITIONS)
        chunks = roots.filter(lambda r: r[0] == _CHUNK).map(lambda r: r[1])
        spread = chunks.zipWithIndex().map(lambda t: (t[1], t[0])).partitionBy(parts, lambda k: k % parts).values()
        fanned = spread.flatMap(lambda c: _chunk_records(c, inc)).persist(StorageLevel.MEMORY_AND_DISK)
        counts = _add(counts, _summary(fanned))
        records = records.union(fanned)
        persisted += (fanned,)

    log_dirs = _frame(spark, records, "log_dirs")
    if n_chunks:
        extra = (
            spark.createDataFrame(records.filter(lambda r: r[0] == _BYTES).map(lambda r: r[1]),
                                  "broker_id int, log_dir string, extra long")
            .groupBy("broker_id", "log_dir")
            .agg(F.sum("extra").alias("extra"))
        )
        log_dirs = (
            log_dirs.join(extra, ["broker_id", "log_dir"], "left")
            .withColumn("attributed_bytes", F.col("attributed_bytes") + F.coalesce(F.col("extra"), F.lit(0)))
            .select(*LOG_DIRS.column_names)
        )
    row = run_row(
        run_id=run_id, cluster=cluster, started_at=started, finished_at=utc_now(), brokers=brokers,
        log_dirs=counts.get("log_dirs", 0), partition_dirs=counts.get("partition_dirs", 0),
        files=counts.get("files", 0), bytes_=counts.get("bytes", 0), errors=counts.get("crawl_errors", 0),
        jobs=len(jobs), code_path=run_code_path({k.partition(":")[2] for k in counts if k.startswith(_CODE_PATH)}),
    )  # fmt: skip
    return CrawlFrames(
        log_dirs=log_dirs,
        partition_dirs=_frame(spark, records, "partition_dirs"),
        segment_files=_frame(spark, records, "segment_files"),
        errors=_frame(spark, records, "crawl_errors"),
        run_row=row,
        cluster_ids=tuple(sorted(k.partition(":")[2] for k in counts if k.startswith(f"{_CLUSTER_ID}:"))),
        _persisted=persisted,
    )
