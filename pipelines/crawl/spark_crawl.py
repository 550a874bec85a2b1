"""The crawl on Spark: (broker, log dir) pairs are tasks; big log dirs fan out over partition dirs.

Stage 1 runs the (broker, log dir) jobs (``tasks.root_task``), one per task up to four tasks per core (then several
per task: a fleet's 1,000 inventories). A log dir with more partition dirs than ``fanout_dirs`` returns chunks of
partition-dir names instead of rows; stage 2 gives each chunk its own Spark partition (``tasks.chunk_task``), so a
million files over two log dirs still keeps every core busy.

Tasks run in ``mapInArrow`` and hand their rows to the JVM as Arrow record batches (no pickled tuple per row): ONE
frame of records, a ``tag`` column naming what each row is and one struct column per table (``log_dirs``,
``partition_dirs``, ``segment_files``, ``crawl_errors``) plus the fan-out's ``chunk`` (a pickled ``Chunk``) and
``chunk_bytes``. That frame is persisted (memory and disk, Spark's columnar cache), so the crawl runs once: the
summary and each table's DataFrame (``where tag = table``, the struct's fields) read the cache, not Python.

Driver memory stays flat: rows never come to the driver. The driver receives only counts and sums (for the
``crawl_runs`` row), the number of chunks and the log dirs' cluster ids, from one aggregation. Call
``CrawlFrames.unpersist()`` when done.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pipelines import native
from pipelines.crawl.local_crawl import CrawlResult, crawl_local, run_code_path, run_row
from pipelines.crawl.rows import LogDirRows, utc_now
from pipelines.crawl.tasks import DEFAULT_FANOUT_DIRS, BrokerLike, Chunk, LogDirJob, chunk_task, jobs_for, root_task
from pipelines.tables.schemas import CRAWL_ERRORS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES, Column, TableSchema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["CrawlFrames", "CrawlResult", "crawl", "crawl_local"]

_TABLES: dict[str, TableSchema] = {
    t.name: t for t in (LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES, CRAWL_ERRORS)
}
_TAG = "tag"
_CHUNK = "chunk"
_BYTES = "chunk_bytes"
_BYTES_SCHEMA = TableSchema(_BYTES, (Column("broker_id", "int"), Column("log_dir", "string"), Column("extra", "long")))
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
        for frame in self._persisted:
            frame.unpersist()


# -- the records' schema ---------------------------------------------------------------------------------------


def records_arrow_schema() -> pa.Schema:
    """The records' columns as Arrow: ``tag``, ``code_path``, ``chunk``, then one struct per table (every field
    nullable: a struct is null on the rows of other tables)."""
    import pyarrow as pa

    def struct(schema: TableSchema) -> pa.DataType:
        return pa.struct([f.with_nullable(True) for f in schema.to_arrow()])

    return pa.schema([(_TAG, pa.string()), (_CODE_PATH, pa.string()), (_CHUNK, pa.binary()),
                      (_BYTES, struct(_BYTES_SCHEMA)),
                      *((name, struct(schema)) for name, schema in _TABLES.items())])  # fmt: skip


def records_spark_schema() -> StructType:
    """``records_arrow_schema`` as Spark types (the ``mapInArrow`` output schema)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(records_arrow_schema())


# -- in the tasks: rows to Arrow -------------------------------------------------------------------------------


def _batch(schema: pa.Schema, tag: str, column: str, values: pa.Array) -> pa.RecordBatch:
    """``values`` as the ``column`` of a batch whose other columns are null."""
    import pyarrow as pa

    n = len(values)
    arrays = [pa.array([tag] * n, pa.string()) if f.name == _TAG else values if f.name == column
              else pa.nulls(n, f.type) for f in schema]  # fmt: skip
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _rows_batches(schema: pa.Schema, rows: LogDirRows, job: LogDirJob | None) -> Iterator[pa.RecordBatch]:
    """One batch per table that has rows (and the fan-out chunk's partition bytes, for its log-dir row)."""
    import pyarrow as pa

    for name, table_rows in (
        ("log_dirs", rows.log_dirs), ("partition_dirs", rows.partition_dirs),
        ("segment_files", rows.segment_files), ("crawl_errors", rows.errors),
    ):  # fmt: skip
        if table_rows:
            yield _batch(schema, name, name, pa.array(table_rows, type=schema.field(name).type))
    if job is not None and rows.partition_dirs:
        extra = [{"broker_id": job.broker_id, "log_dir": job.log_dir, "extra": rows.partition_bytes}]
        yield _batch(schema, _BYTES, _BYTES, pa.array(extra, type=schema.field(_BYTES).type))


def _code_path_batch(schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    return _batch(schema, _CODE_PATH, _CODE_PATH, pa.array([native.code_path()], pa.string()))


def _root_batches(jobs: Sequence[LogDirJob], ids: Iterable[pa.RecordBatch], at: datetime, include_segments: bool,
                  fanout: int | None) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """``mapInArrow`` body of stage 1: the root tasks of the job indexes in ``ids``."""
    import pyarrow as pa

    schema = records_arrow_schema()
    yield _code_path_batch(schema)
    for batch in ids:
        for index in batch.column(0).to_pylist():
            rows, chunks = root_task(jobs[index], at, include_segments=include_segments, fanout_dirs=fanout)
            yield from _rows_batches(schema, rows, None)
            if chunks:
                blobs = pa.array([pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL) for c in chunks], pa.binary())
                yield _batch(schema, _CHUNK, _CHUNK, blobs)


def _chunk_batches(blobs: Iterable[pa.RecordBatch], include_segments: bool) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of stage 2: the chunk tasks of the pickled chunks in ``blobs``."""
    schema = records_arrow_schema()
    yield _code_path_batch(schema)
    for batch in blobs:
        for blob in batch.column(0).to_pylist():
            chunk: Chunk = pickle.loads(blob)
            yield from _rows_batches(schema, chunk_task(chunk, include_segments=include_segments), chunk.job)


# -- on the driver ---------------------------------------------------------------------------------------------


def _table(records: DataFrame, name: str) -> DataFrame:
    from pyspark.sql import functions as F

    return records.where(F.col(_TAG) == name).select(f"{name}.*")


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


def _summary(records: DataFrame) -> dict[str, int]:
    """Counts per table, partition-dir files and bytes, tasks per code path, the log dirs' cluster ids, chunks
    handed out: the only data brought to the driver, in one job (which also fills the records' cache)."""
    from pyspark.sql import functions as F

    groups = records.groupBy(_TAG, _CODE_PATH, F.col("log_dirs.meta_cluster_id").alias("cid")).agg(
        F.count(F.lit(1)).alias("n"), F.sum("partition_dirs.files").alias("files"),
        F.sum("partition_dirs.bytes").alias("bytes"))
    out: dict[str, int] = {}
    for tag, code_path, cid, n, files, bytes_ in groups.collect():
        if tag == _BYTES:
            continue
        key = f"{_CODE_PATH}:{code_path}" if tag == _CODE_PATH else tag
        part = {key: n}
        if tag == "partition_dirs":
            part |= {"files": files or 0, "bytes": bytes_ or 0}
        elif tag == "log_dirs" and cid is not None:
            part[f"{_CLUSTER_ID}:{cid}"] = n
        out = _add(out, part)
    return out


def _with_chunk_bytes(log_dirs: DataFrame, records: DataFrame) -> DataFrame:
    """The fanned-out log dirs' rows with their chunks' partition bytes added to ``attributed_bytes``."""
    from pyspark.sql import functions as F

    extra = _table(records, _BYTES).groupBy("broker_id", "log_dir").agg(F.sum("extra").alias("extra"))
    return (
        log_dirs.join(extra, ["broker_id", "log_dir"], "left")
        .withColumn("attributed_bytes", F.col("attributed_bytes") + F.coalesce(F.col("extra"), F.lit(0)))
        .select(*LOG_DIRS.column_names)
    )


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
    jobs = jobs_for(brokers, run_id=run_id, cluster=cluster)
    inc, fan = include_segments, fanout_dirs
    schema = records_spark_schema()
    ids = spark.range(0, len(jobs), numPartitions=root_slices(len(jobs), spark.sparkContext.defaultParallelism))
    roots = ids.mapInArrow(lambda batches: _root_batches(jobs, batches, started, inc, fan), schema)
    roots = roots.persist(StorageLevel.MEMORY_AND_DISK)
    counts = _summary(roots)  # the root tasks run here, once; their records stay cached for the writes
    n_chunks = counts.pop(_CHUNK, 0)
    records = roots.where(F.col(_TAG) != _CHUNK)
    persisted: tuple[Any, ...] = (roots,)
    if n_chunks:
        parts = min(n_chunks, MAX_CHUNK_PARTITIONS)
        chunks = roots.where(F.col(_TAG) == _CHUNK).select(_CHUNK).repartition(parts)
        fanned = chunks.mapInArrow(lambda batches: _chunk_batches(batches, inc), schema)
        fanned = fanned.persist(StorageLevel.MEMORY_AND_DISK)
        counts = _add(counts, _summary(fanned))
        records = records.unionByName(fanned)
        persisted += (fanned,)

    log_dirs = _table(records, "log_dirs")
    if n_chunks:
        log_dirs = _with_chunk_bytes(log_dirs, records)
    row = run_row(
        run_id=run_id, cluster=cluster, started_at=started, finished_at=utc_now(), brokers=brokers,
        log_dirs=counts.get("log_dirs", 0), partition_dirs=counts.get("partition_dirs", 0),
        files=counts.get("files", 0), bytes_=counts.get("bytes", 0), errors=counts.get("crawl_errors", 0),
        jobs=len(jobs), code_path=run_code_path({k.partition(":")[2] for k in counts if k.startswith(_CODE_PATH)}),
    )  # fmt: skip
    return CrawlFrames(
        log_dirs=log_dirs,
        partition_dirs=_table(records, "partition_dirs"),
        segment_files=_table(records, "segment_files"),
        errors=_table(records, "crawl_errors"),
        run_row=row,
        cluster_ids=tuple(sorted(k.partition(":")[2] for k in counts if k.startswith(f"{_CLUSTER_ID}:"))),
        _persisted=persisted,
    )
