"""The remote tier's step (issue 28): list the tier, replay ``__remote_log_metadata``, classify every remote segment.

Runs after detect when ``remote_tier`` is configured, and writes the run's ``remote_objects``,
``remote_log_segments`` and ``remote_findings`` (replaced and read by (cluster, run id), like every per-run table).
The bucket is listed BEFORE the metadata replicas are read: an object listed then has its ``COPY_SEGMENT_STARTED``
in the replica unless the replica lags, which the replica-time rule of classification catches.

Each partition's leader-epoch lineage (for ``remote_outside_lineage``) comes from the run's own tables
(:func:`lineage_frame`): the controller's leader and leader epoch (``controller_partitions``) and the crawl's parse
of that broker's live replica's ``leader-epoch-checkpoint`` (``partition_dirs.leader_epochs``). A partition whose
leader's replica was not crawled, whose checkpoint was absent or unreadable, or whose checkpoint's last epoch is not
the controller's leader epoch (the crawl saw another leader's term) has no lineage: its finished segments stay
``remote_ok``, and their reason says the lineage was not checked.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError, DecodeError, SourceUnavailable
from pipelines.orchestrate.steps import StepReport, run_key
from pipelines.remote_tier.metadata_consumer import LiveSource, live_coverage_facts, live_sources
from pipelines.remote_tier.metadata_sources import ReplicaSource, find_replicas
from pipelines.remote_tier.metadata_topic import METADATA_TOPIC
from pipelines.tables.base import TableStore
from pipelines.tables.schemas import REMOTE_FINDINGS, REMOTE_LOG_SEGMENTS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.metadata.image import MetadataImage
    from pipelines.orchestrate.controller import ControllerView
    from pipelines.remote_tier.classify import ControllerTopics

__all__ = ["lineage_frame", "metadata_coverage_facts", "metadata_sources", "remote_tier_step"]


def metadata_sources(config: AppConfig) -> tuple[list[ReplicaSource | LiveSource], list[str]]:
    """The ``__remote_log_metadata-N`` replicas (or live partitions) to read, and notes about log dirs that could
    not be looked at.

    Raises:
        ConfigError: bad ``kafka_client`` settings of ``bootstrap_servers``.
        SourceUnavailable: ``metadata.source`` cannot be listed, or the live cluster cannot be reached.
    """
    meta = config.remote_tier.metadata  # type: ignore[union-attr]
    if meta.bootstrap_servers:
        return live_sources(meta)  # type: ignore[return-value]
    if meta.source:
        try:
            found = find_replicas(meta.source, meta.storage_options)
        except OSError as exc:
            raise SourceUnavailable(f"remote_tier.metadata.source {meta.source}: cannot be listed ({exc})") from None
        return found, [] if found else [f"no {METADATA_TOPIC}-N directory under remote_tier.metadata.source"]
    sources: list[ReplicaSource] = []
    notes = []
    for broker in config.brokers:
        for log_dir in broker.log_dirs:
            try:
                sources += find_replicas(log_dir, broker.storage_options)
            except (OSError, ValueError) as exc:
                notes.append(f"broker {broker.broker_id} log dir {log_dir}: not searched for {METADATA_TOPIC} ({exc})")
    if not sources:
        notes.append(f"no {METADATA_TOPIC}-N directory in the brokers' log dirs: every remote segment is untracked"
                     " and may be unrecorded (copy the replicas and set remote_tier.metadata.source)")
    return sources, notes


def metadata_coverage_facts(image: MetadataImage) -> tuple[int | None, bool]:
    """The metadata topic's partition count in the controller image (None: absent) and whether its retention is
    infinite (``retention.ms`` -1, ``retention.bytes`` -1 or unset: the topic the TBRLMM creates)."""
    topic = image.topics.by_name.get(METADATA_TOPIC)
    count = len(topic.partitions) if topic is not None and topic.partitions else None
    infinite = (image.topic_config(METADATA_TOPIC, "retention.ms") == "-1"
                and image.topic_config(METADATA_TOPIC, "retention.bytes") in (None, "-1"))
    return count, infinite


def _controller_topics(store: TableStore, config: AppConfig, image: MetadataImage) -> ControllerTopics:
    """The image's topic ids, its completeness, and each removed topic's latest ``topic_removed`` time (read with
    delta-rs when the store is Spark's: no Spark job for a few rows)."""
    from pipelines.kafka.uuid import Uuid
    from pipelines.orchestrate.steps import status_reader
    from pipelines.remote_tier.classify import ControllerTopics

    reader = status_reader(store, config) or store
    deleted: dict[Any, int] = {}
    if reader.exists("metadata_events"):
        rows = reader.read_arrow("metadata_events", {"cluster": config.cluster, "event": "topic_removed"},
                                 columns=["topic_id", "timestamp"])
        micros = rows.column("timestamp").cast("int64").to_pylist()
        for topic_id, at in zip(rows.column("topic_id").to_pylist(), micros, strict=True):
            if topic_id is not None and at is not None:
                tid = Uuid.from_string(topic_id)
                deleted[tid] = max(deleted.get(tid, at // 1000), at // 1000)
    return ControllerTopics(frozenset(image.topics.by_id), image.complete, deleted)


def lineage_frame(store: TableStore, config: AppConfig, run_id: str, partitions: DataFrame) -> DataFrame | None:
    """One ``lineage`` row (``spark_classify.lineage_row``'s columns) per ``(topic_id, partition)`` of
    ``partitions`` whose current leader's live replica this run crawled with a checkpoint that ends in the
    controller's leader epoch; None when the run has no crawl or no controller tables (a crawl table older than
    ``partition_dirs.leader_epochs`` reads it as null: no lineage)."""
    from pyspark.sql import functions as F

    from pipelines.orchestrate.steps import of_run
    from pipelines.remote_tier.spark_classify import LINEAGE_KIND

    if not (store.exists("partition_dirs") and store.exists("controller_partitions")):
        return None
    leaders = (of_run(store, "controller_partitions", config.cluster, run_id)
               .where(F.col("topic_id").isNotNull() & (F.col("leader") >= 0))
               .select("topic_id", "partition", "leader", "leader_epoch"))
    dirs = (of_run(store, "partition_dirs", config.cluster, run_id)
            .where((F.col("kind") == "live") & F.col("topic_id").isNotNull() & F.col("leader_epochs").isNotNull())
            .select("topic_id", "partition", F.col("broker_id").alias("leader"), "leader_epochs", "crawled_at",
                    "log_dir", "dir_name"))
    last_epoch = F.element_at(F.element_at(F.from_json("leader_epochs", "array<array<long>>"), -1), 1)
    joined = (leaders.join(partitions, ["topic_id", "partition"], "left_semi")
              .join(dirs, ["topic_id", "partition", "leader"])
              .groupBy("topic_id", "partition")  # one live replica per broker; two (JBOD damage): no lineage
              .agg(F.count(F.lit(1)).alias("n"), F.first("leader_epoch").alias("leader_epoch"),
                   F.first("leader_epochs").alias("leader_epochs"), F.first("crawled_at").alias("crawled_at"),
                   F.first(F.concat_ws("", F.lit("broker "), F.col("leader").cast("string"), F.lit(" "),
                                       F.col("log_dir"), F.lit("/"), F.col("dir_name"))).alias("source")))
    return (joined.where((F.col("n") == 1) & (last_epoch == F.col("leader_epoch").cast("long")))
            .select(F.lit(LINEAGE_KIND).alias("_kind"), "source", "topic_id", "partition", "leader_epochs",
                    F.lit(None).cast("long").alias("end_offset"),
                    F.unix_millis("crawled_at").alias("as_of_ms")))


def _not_whole(read: Any) -> str:
    """Why a replica read without problems is still not whole: it holds no record, or starts after offset 0."""
    return "it holds no record" if read.first_offset is None else f"read from offset {read.first_offset}, not 0"


def remote_tier_step(spark: SparkSession, store: TableStore, config: AppConfig, run_id: str, view: ControllerView,
                     now: datetime | None = None) -> StepReport:
    """List, replay and classify the configured remote tier into the run's three remote tables.

    Raises:
        ConfigError: ``remote_tier`` is not configured, or names a source not built.
        DecodeError: the inventory's manifest is unusable or of another bucket (exit 8).
        SourceUnavailable: the tier's location or the metadata source cannot be listed (exit 3).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from pipelines.remote_tier.s3_inventory import InventoryError
    from pipelines.remote_tier.spark_classify import (
        ClassifyParams,
        choose_sources,
        classified_frame,
        metadata_frame,
        table_of,
    )
    from pipelines.remote_tier.spark_listing import LISTING_FAILURE, objects_frame

    tier = config.remote_tier
    if tier is None:
        raise ConfigError("remote_tier is not configured")
    now = now or datetime.now(timezone.utc)
    run = run_key(config, run_id)
    notes: list[str] = []

    try:
        objects, seen = objects_frame(spark, tier, cluster=config.cluster, run_id=run_id)
    except InventoryError as exc:
        raise DecodeError(f"remote_tier.inventory_manifest: {exc}") from None
    except OSError as exc:
        raise SourceUnavailable(f"remote_tier.location {tier.location}: cannot be listed ({exc})") from None
    objects = objects.persist(StorageLevel.MEMORY_AND_DISK)
    persisted: list[Any] = [objects]
    try:
        listed = objects.agg(
            F.count(F.lit(1)).alias("objects"), F.coalesce(F.sum("size"), F.lit(0)).alias("bytes"),
            F.sum((F.col("error").isNotNull() & F.col("object_kind").eqNullSafe(F.lit(LISTING_FAILURE))).cast("int"))
            .alias("failures"),
            F.sum(F.col("error").isNotNull().cast("int")).alias("errors")).collect()[0]  # the listing runs here
        failures = listed["failures"] or 0
        store.overwrite_partition("remote_objects", run, objects)

        sources, more = metadata_sources(config)  # after the listing (see the module docstring)
        notes += more
        events = metadata_frame(spark, sources).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(events)
        reads = choose_sources(r.asDict() for r in events.where(F.col("_kind") == "read").drop("_kind").collect())
        chosen = [r.source for r in reads.values()]
        num_partitions, infinite = live_coverage_facts(sources) or metadata_coverage_facts(view.image)
        params = ClassifyParams(
            cluster=config.cluster, run_id=run_id, reads=reads, num_partitions=num_partitions,
            retention_infinite=infinite, controller=_controller_topics(store, config, view.image),
            now_ms=int(now.timestamp() * 1000), grace_ms=config.detect.grace_ms,
            plan_untracked=tier.plan_untracked, owned_prefix=tier.owned_prefix,
            incomplete=f"{failures} folder(s) or inventory file(s) could not be read" if failures else None,
            layout=tier.layout if tier.read_manifests else "", location=tier.location,
            storage_options=dict(tier.storage_options))
        chosen_events = events.where((F.col("_kind") == "event") & F.col("source").isin(chosen))
        lineages = lineage_frame(store, config, run_id, objects.select("topic_id", "partition").distinct())
        if lineages is None:
            notes.append("no crawl or controller tables for this run: no segment's leader-epoch lineage is checked")
        else:
            chosen_events = chosen_events.unionByName(lineages, allowMissingColumns=True)
        classified = classified_frame(objects, chosen_events, params).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(classified)
        findings = table_of(classified, REMOTE_FINDINGS)
        store.overwrite_partition("remote_log_segments", run, table_of(classified, REMOTE_LOG_SEGMENTS))
        store.overwrite_partition("remote_findings", run, findings)
        summary = (findings.groupBy("class")
                   .agg(F.count(F.lit(1)).alias("segments"), F.sum("bytes").alias("bytes"),
                        F.sum(F.col("plannable").cast("int")).alias("plannable")).collect())
    finally:
        for frame in persisted:
            frame.unpersist()
    by_class = {r["class"]: {"segments": r["segments"], "bytes": r["bytes"] or 0, "plannable": r["plannable"] or 0}
                for r in summary}
    if failures:
        notes.append(f"remote listing incomplete: {failures} folder(s) or inventory file(s) could not be read;"
                     " nothing remote is plannable in this run")
    if tier.owned_prefix is None:
        notes.append("remote_tier.owned_prefix is unset: nothing remote is plannable")
    if tier.layout == "aiven" and not tier.read_manifests:
        notes.append("remote_tier.read_manifests is off: no .rsm-manifest was read as a second witness")
    for mp, read in sorted(reads.items()):
        if not read.whole:
            notes.append(f"{METADATA_TOPIC}-{mp}: segments of its topic partitions may be unrecorded"
                         f" ({'; '.join(read.problems[:3]) or _not_whole(read)})")
    if num_partitions is None:
        notes.append(f"{METADATA_TOPIC} is not in the controller image: its partition count is unknown")
    elif not infinite:
        notes.append(f"{METADATA_TOPIC} retention is not infinite: untracked segments may be unrecorded")
    return StepReport("remote_tier", {
        "objects": listed["objects"], "bytes": listed["bytes"], "error_rows": listed["errors"] or 0,
        "listing_failures": failures, "metadata_replicas": len(sources), "metadata_partitions": len(reads),
        "segments": sum(c["segments"] for c in by_class.values()),
        "plannable": sum(c["plannable"] for c in by_class.values()), "by_class": dict(sorted(by_class.items())),
        **seen,
    }, notes)
