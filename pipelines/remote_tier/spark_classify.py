"""``__remote_log_metadata`` read and replayed, and every remote segment classified, as Spark tasks.

1. **Read**: one task per replica directory (:mod:`.metadata_sources`) emits its events as rows and one summary
   row; the driver keeps, per metadata partition, the most complete replica (``choose_replica``, as the pure path
   does) and builds the :class:`MetadataCoverage` from the summaries only (no event reaches the driver).
2. **Replay and classify**: the objects and the chosen replicas' events are co-grouped by ``(topic_id,
   partition)``. A segment's events and its partition's delete events all carry that key, and replay keeps state
   per segment and per partition only, so replaying each group alone gives exactly the states of one replay of
   everything (in (metadata partition, offset) order within the group). Each group is then classified by the ONE
   implementation, :func:`~pipelines.remote_tier.classify.classify_remote`, and the run's limits are applied
   (:func:`~pipelines.remote_tier.run_limits.limit_findings`).
3. **Witnesses** (in the same task): the partition's leader-epoch lineage travels with its events as one
   ``lineage`` row (:func:`lineage_row`); and for the ``aiven`` layout the ``.rsm-manifest`` of each segment that
   came out plannable is read (:func:`~pipelines.remote_tier.manifest_reads.read_manifests`) and that segment is
   classified again with it. Only those: a manifest can add a contradiction or an unreadable-witness blocker, never
   take one away, so it cannot change the plannability of a segment that is not plannable without it, and a tier of
   10M objects costs one GET per plannable segment instead of one per segment.

The result is one frame holding both tables' rows, tagged by table name. pyspark is imported inside functions only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipelines.remote_tier.classify import ControllerTopics, Lineage, RemoteFinding, classify_remote
from pipelines.remote_tier.metadata_sources import (
    ReplicaSource,
    event_row,
    events_in_order,
    read_replica_at,
    summary_of_row,
    summary_row,
)
from pipelines.remote_tier.metadata_topic import MetadataCoverage, PartitionRead, choose_replica
from pipelines.remote_tier.replay import PartitionDeleteStatus, ReplayedSegment, replay
from pipelines.remote_tier.run_limits import limit_findings
from pipelines.tables.schemas import REMOTE_FINDINGS, REMOTE_LOG_SEGMENTS, Column, TableSchema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LINEAGE_KIND", "ClassifyParams", "choose_sources", "classified_frame", "classify_group", "lineage_row",
           "metadata_frame", "segment_rows", "table_of"]

TAG = "_table"
LINEAGE_KIND = "lineage"
"""``_kind`` of the row that carries a partition leader's epoch lineage among the partition's events."""
_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: a later (lying) time is stored as null
_BATCH = 50_000

_EVENT_COLUMNS = (("_kind", "string"), ("source", "string"), ("metadata_partition", "int"), ("offset", "long"),
                  ("topic", "string"), ("topic_id", "string"), ("partition", "int"), ("segment_id", "string"),
                  ("state", "int"), ("broker_id", "int"), ("event_ms", "long"), ("full", "bool"),
                  ("start_offset", "long"), ("end_offset", "long"), ("size", "long"), ("max_timestamp_ms", "long"),
                  ("leader_epochs", "string"), ("first_offset", "long"), ("last_offset", "long"),
                  ("unreliable_from", "long"), ("unreliable_last", "long"), ("as_of_ms", "long"),
                  ("events_read", "long"), ("problems", "string"), ("read_error", "string"))
METADATA_ROWS = TableSchema("remote_metadata_rows", tuple(Column(n, t) for n, t in _EVENT_COLUMNS))
"""What the read tasks emit: event rows (``_kind`` ``event``) and one summary row per replica (``read``)."""


def _union(*schemas: TableSchema) -> TableSchema:
    seen: dict[str, Column] = {}
    for schema in schemas:
        for c in schema.columns:
            seen.setdefault(c.name, Column(c.name, c.type))
    return TableSchema("remote_classified", (*seen.values(), Column(TAG, "string")))


CLASSIFIED = _union(REMOTE_FINDINGS, REMOTE_LOG_SEGMENTS)
"""Rows of both tables in one frame, tagged by table name."""


# -- read (in the tasks) ---------------------------------------------------------------------------------------


def _read_batches(sources: Sequence[ReplicaSource], ids: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    from pipelines.errors import DecodeError

    schema = METADATA_ROWS.to_arrow()
    for batch in ids:
        for index in batch.column(0).to_pylist():
            source = sources[index]
            try:
                read = read_replica_at(source)
            except (OSError, DecodeError, ValueError) as exc:
                error = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
                row = {"_kind": "read", "source": source.url, "metadata_partition": source.metadata_partition,
                       "problems": "[]", "read_error": error, "events_read": 0}
                yield pa.RecordBatch.from_pylist([row], schema=schema)
                continue
            yield pa.RecordBatch.from_pylist([{"_kind": "read", **summary_row(read)}], schema=schema)
            for start in range(0, len(read.events), _BATCH):
                rows = [{"_kind": "event", "source": source.url, **event_row(e)}
                        for e in read.events[start:start + _BATCH]]
                yield pa.RecordBatch.from_pylist(rows, schema=schema)


def metadata_frame(spark: SparkSession, sources: Sequence[ReplicaSource]) -> DataFrame:
    """Every replica's rows (lazily). One task per replica."""
    work = list(sources)
    ids = spark.range(0, len(work), numPartitions=max(1, len(work)))
    return ids.mapInArrow(lambda batches: _read_batches(work, batches), METADATA_ROWS.to_spark())


def choose_sources(summaries: Iterable[Mapping[str, Any]]) -> dict[int, PartitionRead]:
    """The most complete replica of each metadata partition (``choose_replica``), from the summary rows. A replica
    that could not be read is chosen only when no replica of its partition was read."""
    by_partition: dict[int, list[PartitionRead]] = {}
    for row in summaries:
        by_partition.setdefault(row["metadata_partition"], []).append(summary_of_row(row))
    chosen = {}
    for mp, reads in by_partition.items():
        ok = [r for r in reads if not any(p.startswith("not read: ") for p in r.problems)]
        chosen[mp] = choose_replica(ok) if ok else _unreliable(reads[0])
    return chosen


def _unreliable(read: PartitionRead) -> PartitionRead:
    """A partition no replica of which could be read: nothing in it is reliable, from offset 0 on."""
    return PartitionRead(read.metadata_partition, read.source, None, None, (), 0, 2**63 - 1, read.problems, None)


# -- replay and classify (in the tasks) ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassifyParams:
    """Everything a group needs besides its rows (picklable: no mapping proxies)."""

    cluster: str
    run_id: str
    reads: dict[int, PartitionRead]
    num_partitions: int | None
    retention_infinite: bool
    controller: ControllerTopics
    now_ms: int
    grace_ms: int
    plan_untracked: bool
    owned_prefix: str | None
    incomplete: str | None
    layout: str = ""
    location: str = ""
    storage_options: dict[str, Any] = field(default_factory=dict)
    """The tier, to read the ``.rsm-manifest`` of plannable segments (``aiven`` layout only)."""

    def coverage(self) -> MetadataCoverage:
        return MetadataCoverage(self.reads, self.num_partitions, self.retention_infinite)


def _ts(ms: int | None) -> int | None:
    """Epoch ms as the microseconds of a timestamp column; null when out of the timestamp range."""
    return None if ms is None or not -_MAX_MS <= ms <= _MAX_MS else ms * 1000


def segment_rows(segments: Iterable[ReplayedSegment], deletes: Iterable[PartitionDeleteStatus], cluster: str,
                 run_id: str) -> Iterator[dict[str, Any]]:
    """``remote_log_segments`` rows of a replayed image (timestamps as microseconds)."""
    for s in segments:
        yield {"cluster": cluster, "run_id": run_id, "topic": s.topic, "topic_id": str(s.topic_id),
               "partition": s.partition, "segment_id": str(s.segment_id), "state": s.state.name,
               "event_time": _ts(s.event_timestamp_ms), "first_event_time": _ts(s.first_event_ms),
               "start_offset": s.start_offset, "end_offset": s.end_offset, "segment_bytes": s.size,
               "broker_id": s.broker_id, "max_timestamp": _ts(s.max_timestamp_ms),
               "leader_epochs": json.dumps([list(p) for p in s.leader_epochs]),
               "metadata_partition": s.metadata_partition, "metadata_offset": s.offset,
               "metadata_partitions": sorted(s.metadata_partitions), "base_missing": s.base_missing,
               "dropped_events": s.dropped}
    for d in deletes:
        yield {"cluster": cluster, "run_id": run_id, "topic": d.topic, "topic_id": str(d.topic_id),
               "partition": d.partition, "segment_id": None, "state": d.state.name,
               "event_time": _ts(d.event_timestamp_ms), "broker_id": d.broker_id}


def _finding_row(f: RemoteFinding, cluster: str, run_id: str) -> dict[str, Any]:
    row = f.as_row(cluster, run_id)
    row["garbage_since"] = _ts(f.garbage_since_ms)
    return row


def _object_rows(table: pa.Table) -> list[Any]:
    import pyarrow as pa

    from pipelines.kafka.uuid import Uuid
    from pipelines.remote_tier.listing import RemoteObjectRow

    micros = table.column("last_modified").cast(pa.int64()).to_pylist()  # exact (no float seconds)
    ids: dict[str | None, Uuid | None] = {None: None}  # a group shares one topic id; a segment's keys one id

    def uuid(text: str | None) -> Uuid | None:
        if text not in ids:
            ids[text] = Uuid.from_string(text)  # type: ignore[arg-type]
        return ids[text]

    rows = []
    for r, us in zip(table.drop_columns(["last_modified"]).to_pylist(), micros, strict=True):
        ms = -1 if us is None else us // 1000
        rows.append(RemoteObjectRow(r["key"], r["size"], ms, r["etag"], r["topic"], uuid(r["topic_id"]),
                                    r["partition"], uuid(r["segment_id"]), r["start_offset"], r["object_kind"],
                                    r["error"]))
    return rows


def lineage_row(topic_id: str, partition: int, epochs_json: str, as_of_ms: int | None, source: str
                ) -> dict[str, Any]:  # fmt: skip
    """The row that carries a partition leader's lineage among the partition's events (``METADATA_ROWS`` columns:
    ``leader_epochs`` the crawl's JSON, ``end_offset`` the log end offset, never known from a crawl)."""
    return {"_kind": LINEAGE_KIND, "source": source, "topic_id": topic_id, "partition": partition,
            "leader_epochs": epochs_json, "end_offset": None, "as_of_ms": as_of_ms}


def _lineage_of(row: Mapping[str, Any]) -> Lineage | None:
    """The row's lineage; None when its epochs are not a non-empty list of [epoch, start offset] pairs."""
    try:
        pairs = json.loads(row["leader_epochs"] or "null")
        epochs = {int(e): int(o) for e, o in pairs}
    except (TypeError, ValueError):
        return None
    return Lineage(epochs, row.get("end_offset"), row.get("as_of_ms")) if epochs and len(epochs) == len(pairs) \
        else None


def _split(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], dict[tuple[Any, int], Lineage]]:
    """The group's event rows, and its lineage by ``(topic_id, partition)`` (two lineage rows: none is trusted)."""
    from pipelines.kafka.uuid import Uuid

    events, found = [], []
    for row in rows:
        (found if row.get("_kind") == LINEAGE_KIND else events).append(row)
    lineages = {}
    if len(found) == 1 and (lineage := _lineage_of(found[0])) is not None:
        lineages[(Uuid.from_string(found[0]["topic_id"]), found[0]["partition"])] = lineage
    return events, lineages


def classify_group(params: ClassifyParams, objects: Sequence[Any], event_rows: Iterable[Mapping[str, Any]]
                   ) -> Iterator[dict[str, Any]]:  # fmt: skip
    """One ``(topic_id, partition)``: replay its events, classify its objects with its lineage, apply the run's
    limits, then read the manifests of the plannable segments and classify those again with them; rows of both
    tables, tagged."""
    events, lineages = _split(event_rows)
    image = replay(events_in_order(events))

    def classify(rows: Sequence[Any], manifests: Mapping[Any, Any] | None) -> list[RemoteFinding]:
        found = classify_remote(image, rows, params.controller, params.coverage(), now_ms=params.now_ms,
                                grace_ms=params.grace_ms, plan_untracked=params.plan_untracked, manifests=manifests,
                                lineages=lineages)
        return list(limit_findings(found, owned_prefix=params.owned_prefix, incomplete=params.incomplete))

    findings = classify(objects, None)
    if params.layout == "aiven" and params.location:
        from pipelines.remote_tier.manifest_reads import read_manifests

        manifests = read_manifests(params.location, params.storage_options, objects,
                                   [(f.topic_id, f.partition, f.segment_id) for f in findings if f.plannable])
        if manifests:
            again = {(f.topic_id, f.partition, f.segment_id): f
                     for f in classify([o for o in objects if o.named_segment in manifests], manifests)}
            findings = [again.get((f.topic_id, f.partition, f.segment_id), f) for f in findings]
    for f in findings:
        yield {**_finding_row(f, params.cluster, params.run_id), TAG: REMOTE_FINDINGS.name}
    for row in segment_rows(image.segments.values(), image.partition_deletes.values(), params.cluster,
                            params.run_id):
        yield {**row, TAG: REMOTE_LOG_SEGMENTS.name}


def _group_fn(params: ClassifyParams) -> Any:
    def fn(objects: pa.Table, events: pa.Table) -> pa.Table:
        import pyarrow as pa

        rows = list(classify_group(params, _object_rows(objects), events.to_pylist()))
        return pa.Table.from_pylist(rows, schema=CLASSIFIED.to_arrow())

    return fn


def classified_frame(objects: DataFrame, events: DataFrame, params: ClassifyParams) -> DataFrame:
    """Both tables' rows of the run (lazily), tagged ``_table``: the objects and events co-grouped by
    ``(topic_id, partition)``. Objects with no parsed segment are error rows and take no part."""
    from pyspark.sql import functions as F

    keyed = objects.where(F.col("topic_id").isNotNull() & F.col("partition").isNotNull())
    return (keyed.groupBy("topic_id", "partition")
            .cogroup(events.groupBy("topic_id", "partition"))
            .applyInArrow(_group_fn(params), CLASSIFIED.to_spark()))


def table_of(classified: DataFrame, table: TableSchema) -> DataFrame:
    """One table's rows of a :func:`classified_frame`."""
    from pyspark.sql import functions as F

    return classified.where(F.col(TAG) == table.name).select(*table.column_names)
