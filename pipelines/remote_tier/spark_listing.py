"""The remote tier's listing as Spark tasks: ``remote_objects`` rows of one run.

Two ways, as ``remote_tier`` says:

* **listing** (fsspec): the driver makes ONE delimiter listing of the tier's area (:func:`topic_prefixes`) and lists
  the loose objects at its own level; each task then lists its share of the topic-level folders recursively
  (:func:`list_prefix`, one folder's keys in memory at a time);
* **S3 Inventory**: the driver reads ``manifest.json``; each task reads ONE data file (:func:`read_inventory_file`).

Every task parses its keys (:func:`listing_rows`, pure) and hands Arrow batches to Spark. A folder or a data file
that cannot be read is one row with ``object_kind`` = ``listing_failure`` (key: the folder, or ``inventory:`` and
the data file): the listing is then incomplete and nothing of the run is plannable (:mod:`.spark_classify`). The
quarantine folder is never listed. pyspark is imported inside the functions only (this package stays Spark-free at
import).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pipelines.config.remote_tier import RemoteTierConfig
from pipelines.remote_tier.listing import ListedObject, RemoteObjectRow
from pipelines.remote_tier.object_listing import ListingProblem
from pipelines.tables.schemas import REMOTE_OBJECTS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LISTING_FAILURE", "MAX_LISTING_TASKS", "folder_batches", "objects_batch", "objects_frame", "rows_batch"]

LISTING_FAILURE = "listing_failure"
"""``object_kind`` of a row that stands for a folder or an inventory data file that could not be read."""
MAX_LISTING_TASKS = 256
"""Topic folders are dealt to at most this many tasks."""
_BATCH = 50_000


def rows_batch(rows: Sequence[RemoteObjectRow], cluster: str, run_id: str) -> pa.RecordBatch:
    """``remote_objects`` rows as one Arrow batch (``last_modified`` -1: unknown, null)."""
    import pyarrow as pa

    schema = REMOTE_OBJECTS.to_arrow()
    n = len(rows)
    modified = pa.array([r.last_modified_ms * 1000 if r.last_modified_ms >= 0 else None for r in rows], pa.int64())
    columns = {
        "run_id": pa.array([run_id] * n, pa.string()), "cluster": pa.array([cluster] * n, pa.string()),
        "key": pa.array([r.key for r in rows], pa.string()), "size": pa.array([r.size for r in rows], pa.int64()),
        "last_modified": modified.cast(pa.timestamp("us", tz="UTC")),
        "etag": pa.array([r.etag for r in rows], pa.string()),
        "topic": pa.array([r.topic for r in rows], pa.string()),
        "topic_id": pa.array([None if r.topic_id is None else str(r.topic_id) for r in rows], pa.string()),
        "partition": pa.array([r.partition for r in rows], pa.int32()),
        "segment_id": pa.array([None if r.segment_id is None else str(r.segment_id) for r in rows], pa.string()),
        "start_offset": pa.array([r.start_offset for r in rows], pa.int64()),
        "object_kind": pa.array([r.object_kind for r in rows], pa.string()),
        "error": pa.array([r.error for r in rows], pa.string()),
    }
    return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


def failure_row(key: str, exc: BaseException) -> RemoteObjectRow:
    """A row standing for what could not be listed (never planned; makes the run's listing incomplete)."""
    message = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
    return RemoteObjectRow(key, 0, -1, None, None, None, None, None, None, LISTING_FAILURE,
                           f"could not be listed: {message}")


def _prefix_batches(tier: RemoteTierConfig, folders: Iterable[str], cluster: str, run_id: str
                    ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """In a task: every object of ``folders``, parsed, as Arrow batches."""
    from pipelines.remote_tier.object_listing import list_prefix, open_location

    loc = open_location(tier.location, tier.storage_options)
    exclude = tier.relative_quarantine()
    for folder in folders:
        try:  # a folder is listed whole before its rows go out: a failure half-way leaves no partial folder
            listed = list(list_prefix(loc, folder, exclude))
        except (OSError, ValueError) as exc:
            yield rows_batch([failure_row(folder, exc)], cluster, run_id)
            continue
        yield from folder_batches(listed, tier.layout, tier.prefix, cluster, run_id)


def folder_batches(listed: Sequence[ListedObject | ListingProblem], layout: str, prefix: str, cluster: str,
                   run_id: str) -> Iterator[pa.RecordBatch]:
    """``remote_objects`` rows of one folder's listing: its objects' keys parsed an array at a time
    (:func:`objects_batch`), its problems as :func:`~pipelines.remote_tier.object_listing.listing_rows` makes them
    (the same rows as ``rows_batch(list(listing_rows(listed)))``, objects first)."""
    from pipelines.remote_tier.object_listing import listing_rows
    from pipelines.remote_tier.s3_inventory import listed_batches

    objects = [o for o in listed if isinstance(o, ListedObject)]
    problems = [p for p in listed if not isinstance(p, ListedObject)]
    for batch in listed_batches(objects, _BATCH):
        yield objects_batch(batch, layout, prefix, cluster, run_id)
    if problems:
        yield rows_batch(list(listing_rows(problems, layout, prefix)), cluster, run_id)


def objects_batch(listed: pa.RecordBatch, layout: str, prefix: str, cluster: str, run_id: str) -> pa.RecordBatch:
    """``remote_objects`` rows of listed objects (:data:`~pipelines.remote_tier.s3_inventory.LISTED_SCHEMA_FIELDS`),
    their keys parsed an array at a time (:func:`~pipelines.remote_tier.arrow_keys.parse_keys`): the rows
    :func:`rows_batch` makes of the same objects' :func:`~pipelines.remote_tier.listing.parse_listing` rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipelines.remote_tier.arrow_keys import KEY_COLUMNS, parse_keys

    schema = REMOTE_OBJECTS.to_arrow()
    n = listed.num_rows
    ms = listed.column("last_modified_ms")
    micros = pc.if_else(pc.greater_equal(ms, 0), pc.multiply(ms, 1000), pa.scalar(None, pa.int64()))
    columns = {"run_id": pa.array([run_id] * n, pa.string()), "cluster": pa.array([cluster] * n, pa.string()),
               "key": listed.column("key"), "size": listed.column("size"),
               "last_modified": micros.cast(pa.timestamp("us", tz="UTC")), "etag": listed.column("etag"),
               **dict(zip(KEY_COLUMNS, parse_keys(listed.column("key"), layout, prefix), strict=True))}
    return pa.RecordBatch.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)


def _inventory_batches(tier: RemoteTierConfig, report: Any, files: Iterable[str], cluster: str, run_id: str
                       ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """In a task: every object of the tier's area in the inventory data ``files``, parsed, as Arrow batches (no
    Python object per key); a file that cannot be read ends with its failure row, after the rows read before."""
    from pipelines.remote_tier.s3_inventory import InventoryError, inventory_batches

    exclude = tier.relative_quarantine()
    for key in files:
        try:
            for listed in inventory_batches(report, key, exclude=exclude, batch_rows=_BATCH):
                yield objects_batch(listed, tier.layout, tier.prefix, cluster, run_id)
        except (InventoryError, OSError) as exc:
            yield rows_batch([failure_row(f"inventory:{key}", exc)], cluster, run_id)


def _task(batches_of: Any, work: Sequence[str]) -> Any:
    """The ``mapInArrow`` body: ``batches_of`` the work items whose indexes arrive in the batches."""

    def body(ids: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in ids:
            yield from batches_of([work[i] for i in batch.column(0).to_pylist()])

    return body


def objects_frame(spark: SparkSession, tier: RemoteTierConfig, *, cluster: str, run_id: str,
                  max_tasks: int = MAX_LISTING_TASKS) -> tuple[DataFrame, dict[str, int]]:
    """The run's ``remote_objects`` rows (lazily: the listing runs when the frame is first computed), and what the
    driver saw (``topic_folders`` or ``inventory_files``, ``loose_objects``).

    Raises:
        InventoryError: the inventory's manifest is unusable or of another bucket.
        OSError: the tier's area cannot be listed at all.
    """
    from pipelines.remote_tier.object_listing import listing_rows, loose_objects, open_location, topic_prefixes
    from pipelines.remote_tier.s3_inventory import open_inventory

    spark_schema = REMOTE_OBJECTS.to_spark()
    if tier.inventory_manifest is not None:
        report = open_inventory(tier.inventory_manifest, tier.location, tier.layout, tier.prefix,
                                storage_options=tier.storage_options, data_root=tier.inventory_data_root)
        work = list(report.manifest.files)

        def batches_of(items: Sequence[str]) -> Iterator[pa.RecordBatch]:
            return _inventory_batches(tier, report, items, cluster, run_id)

        seen = {"inventory_files": len(work)}
        loose: list[RemoteObjectRow] = []
    else:
        loc = open_location(tier.location, tier.storage_options)
        loose = list(listing_rows(loose_objects(loc, tier.layout, tier.prefix), tier.layout, tier.prefix))
        work = topic_prefixes(loc, tier.layout, tier.prefix, tier.relative_quarantine())

        def batches_of(items: Sequence[str]) -> Iterator[pa.RecordBatch]:
            return _prefix_batches(tier, items, cluster, run_id)

        seen = {"topic_folders": len(work), "loose_objects": len(loose)}
    tasks = max(1, min(len(work), max_tasks))
    ids = spark.range(0, len(work), numPartitions=tasks)
    frame = ids.mapInArrow(_task(batches_of, work), spark_schema)
    if loose:
        import pyarrow as pa

        frame = frame.unionByName(spark.createDataFrame(pa.Table.from_batches([rows_batch(loose, cluster, run_id)]),
                                                        spark_schema))
    return frame, seen


def listing_incomplete(counts: Mapping[str, int]) -> bool:
    """Whether a folder or a data file could not be read (``counts`` from the objects' summary)."""
    return counts.get(LISTING_FAILURE, 0) > 0
