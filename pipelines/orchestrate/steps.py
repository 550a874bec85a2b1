"""The pipeline's scheduled steps, each one function the jobs in ``jobs/`` and ``logdir-gc run`` share.

crawl → ingest metadata → detect → plan. Every step writes the rows of ONE run (``run_id``) with
``overwrite_partition``, so rerunning a step with the same run id replaces its rows and never duplicates them;
``metadata_events`` is merged on its natural key instead, because it is the durable history across runs: a log
event on (cluster, offset, event, topic id, partition); an event read from a snapshot, which states what the snapshot
holds rather than when it happened, on what it says (cluster, event, topic id, partition, detail), so the next
snapshot restating the same topic does not add it again (its offset within the snapshot may differ).
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from pipelines.config.models import AppConfig
from pipelines.orchestrate.controller import ControllerView, load_controller_view
from pipelines.orchestrate.run_status import Statuses, now_utc, require_predecessors, tracked
from pipelines.redaction import redact_text
from pipelines.tables.base import TableStore
from pipelines.tables.concurrent_writes import run_writes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.plan.model import GcPlan

EVENT_KEYS = ["cluster", "offset", "event", "topic_id", "partition"]
SNAPSHOT_EVENT_KEYS = ["cluster", "event", "topic_id", "partition", "detail"]
LARGE_IMAGE_EVENTS = 100_000
"""Above this many metadata events the ingest writes its tables one at a time, not in threads (driver memory)."""
SMALL_RUN_ROWS = 200_000
"""Up to this many partition dirs, partitions and events together, detect caches its inputs (``is_small_run``)."""
SMALL_PLAN_ROWS = 10_000
"""Up to this many plannable findings the plan collects its inputs in one Spark job each instead of streaming them
partition by partition (``plan_inputs``)."""


def new_run_id(now: datetime | None = None) -> str:
    """A run id that sorts by time and is unique across the clusters of one warehouse: the clock to the second and
    32 random bits, ``20240601T120000Z-3f2a9c1e`` (two clusters' runs starting in the same second differ)."""
    return f"{(now or datetime.now(timezone.utc)):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def run_key(config: AppConfig, run_id: str) -> dict[str, str]:
    """What a run's rows are written, replaced and read by: (cluster, run id); one warehouse holds a fleet."""
    return {"cluster": config.cluster, "run_id": run_id}


def of_run(store: TableStore, table: str, cluster: str | None, run_id: str) -> Any:
    """``table``'s rows of the run, by (cluster, run id); of any cluster's run with that id when ``cluster`` is None."""
    from pyspark.sql import functions as F

    df = store.read(table).where(F.col("run_id") == run_id)
    return df if cluster is None else df.where(F.col("cluster") == cluster)


def plans_dir(config: AppConfig) -> str:
    """Where plan JSON/Markdown files go (a path or fsspec URL): ``plans_dir``, else ``<warehouse>/_plans``."""
    return config.plans_dir or config.warehouse.rstrip("/") + "/_plans"


@dataclass
class StepReport:
    """What a step did, for progress lines and ``--json``."""

    step: str
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: what a later step of the same process may reuse instead of reading it back (not part of any output)
    frames: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def crawl_step(spark: SparkSession, store: TableStore, config: AppConfig, run_id: str, *,
               include_segments: bool = False, keep_small: bool = False) -> StepReport:
    """Crawl every broker's log dirs into crawl_runs, log_dirs, partition_dirs, crawl_errors.

    Spark tasks crawl them, except a small cluster on a local master, which the driver crawls
    (``pipelines.crawl.driver_crawl``).

    ``crawl_runs`` gets the outcome last (``run_status``). ``keep_small``: a crawl of at most ``SMALL_RUN_ROWS``
    partition dirs keeps its cached rows for detect (``report.frames["detect_inputs"]``: the ``log_dirs`` and
    ``partition_dirs`` DataFrames as written; call ``report.frames["release"]()`` when done).
    """
    from pipelines.crawl.driver_crawl import crawl_in_driver, runs_in_driver
    from pipelines.crawl.local_crawl import run_row
    from pipelines.crawl.spark_crawl import crawl

    run = run_key(config, run_id)
    kept: dict[str, Any] = {"cluster_ids": ()}

    def body() -> tuple[dict[str, Any], dict[str, Any]]:
        frames = None
        if runs_in_driver(spark, config.brokers, include_segments=include_segments):
            frames = crawl_in_driver(spark, config.brokers, run_id=run_id, cluster=config.cluster,
                                     include_segments=include_segments)
        if frames is None:
            frames = crawl(spark, config.brokers, run_id=run_id, cluster=config.cluster,
                           include_segments=include_segments)
        kept["cluster_ids"] = frames.cluster_ids
        counted = frames.run_row
        # a table the crawl wrote no row to is given as no rows: the store then knows without a Spark job
        tables = [("log_dirs", frames.log_dirs if counted["log_dirs"] else []),
                  ("partition_dirs", frames.partition_dirs if counted["partition_dirs"] else []),
                  ("crawl_errors", frames.errors if counted["errors"] else [])]
        if include_segments:
            tables.append(("segment_files", frames.segment_files))
        keep = keep_small and frames.run_row["partition_dirs"] <= SMALL_RUN_ROWS
        try:
            run_writes([partial(store.overwrite_partition, table, run, rows) for table, rows in tables], spark=spark)
        except BaseException:
            frames.unpersist()
            raise
        if keep:
            kept["detect_inputs"] = {name: store.as_frame(name, rows) for name, rows in tables[:2]}
            kept["release"] = frames.unpersist
        else:
            frames.unpersist()
        return frames.run_row, frames.run_row

    running = run_row(run_id=run_id, cluster=config.cluster, started_at=now_utc(), finished_at=None,
                      brokers=config.brokers, log_dirs=0, partition_dirs=0, files=0, bytes_=0, errors=0, jobs=0,
                      code_path=None)
    try:
        row = tracked(store, "crawl_runs", running, body, reader=status_reader(store, config))
    except BaseException:
        kept.get("release", lambda: None)()
        raise
    keys = ("status", "log_dirs", "partition_dirs", "files", "bytes", "errors", "code_path")
    return StepReport("crawl", {k: row[k] for k in keys}, frames=kept)


def ingest_metadata_step(store: TableStore, config: AppConfig, run_id: str,
                         view: ControllerView | None = None, keep_small: bool = False
                         ) -> tuple[StepReport, ControllerView]:
    """Controller image → controller_* tables of this run; its events merged into the durable history.

    ``ingest_runs`` gets the outcome last (``run_status``). ``keep_small``: an image of at most ``SMALL_RUN_ROWS``
    partitions and events together keeps its controller tables for detect (``report.frames["detect_inputs"]``:
    DataFrames of the rows as written).
    """
    import pyarrow.compute as pc

    from pipelines.metadata import event_table, image_tables

    started = now_utc()

    def body() -> tuple[tuple[StepReport, ControllerView], dict[str, Any]]:
        loaded = view or load_controller_view(config.metadata)
        if loaded.removals_seen_at_ms is not None and store.exists("metadata_events"):  # ZooKeeper keeps no history
            from pipelines.metadata.source import removed_topic_events

            history = store.read_rows("metadata_events", {"cluster": config.cluster,
                                                          "event": ["topic_created", "topic_removed"]})
            loaded = loaded.with_events(removed_topic_events(history, loaded))
        image = loaded.image
        source = redact_text(loaded.source)  # a URL's password never reaches a table (pipelines.redaction)
        # Each write builds its Arrow rows itself and lets go of them once written. A large image's writes run one
        # after the other, so one table's rows are alive at a time (633k partitions: ~150 MB of Arrow each).
        threads = None if len(loaded.events) > LARGE_IMAGE_EVENTS else getattr(store, "spark", None)
        counts: dict[str, Any] = {}
        kept: dict[str, Any] = {}

        def write_image() -> None:
            tables = image_tables(image, run_id=run_id, cluster=config.cluster, source=source)
            counts.update({name.removeprefix("controller_"): rows.num_rows for name, rows in tables.items()})
            run_writes([partial(store.overwrite_partition, name, run_key(config, run_id), rows)
                        for name, rows in tables.items()], spark=threads)
            if keep_small and counts["partitions"] + len(loaded.events) <= SMALL_RUN_ROWS:
                kept["detect_inputs"] = {name: store.as_frame(name, rows) for name, rows in tables.items()}

        def merge_events() -> None:  # both merges write metadata_events: one after the other
            events = event_table(loaded.events, cluster=config.cluster, source=source, run_id=run_id)
            counts["events"] = events.num_rows
            # the key as JSON writes it: a string value holding it would have its quotes escaped
            from_snapshot = pc.match_substring(events["detail"], '"from_snapshot": true')
            snapshot_rows = pc.sum(from_snapshot).as_py() or 0
            if snapshot_rows in (0, events.num_rows):  # all of one kind: no filtered copy of a large table
                parts = [(SNAPSHOT_EVENT_KEYS if snapshot_rows else EVENT_KEYS, events)]
            else:
                parts = [(EVENT_KEYS, events.filter(pc.invert(from_snapshot))),
                         (SNAPSHOT_EVENT_KEYS, events.filter(from_snapshot))]
            for keys, part in parts:
                if part.num_rows:
                    store.merge("metadata_events", part, keys=keys, update_columns=[])

        run_writes([write_image, merge_events], spark=threads)
        counts = {**{k: counts[k] for k in ("topics", "partitions", "brokers", "events")},
                  "metadata_offset": image.last_offset, "complete": image.complete}
        report = StepReport("ingest_metadata", counts, frames=kept)
        report.notes += [f"controller image incomplete: {r}" for r in image.incomplete_reasons]
        row = {"run_id": run_id, "cluster": config.cluster, "started_at": started, "finished_at": now_utc(),
               "status": "succeeded", "source": source, "metadata_offset": image.last_offset,
               "image_complete": image.complete, "topics": counts["topics"], "partitions": counts["partitions"],
               "brokers": counts["brokers"], "events": counts["events"]}
        return (report, loaded), row

    running = {"run_id": run_id, "cluster": config.cluster, "started_at": started}
    return tracked(store, "ingest_runs", running, body, reader=status_reader(store, config))


def is_small_run(crawled: StepReport, ingested: StepReport) -> bool:
    """True when the run's crawl and ingest wrote at most ``SMALL_RUN_ROWS`` partition dirs, controller partitions
    and metadata events together (what detect joins)."""
    rows = (crawled.counts.get("partition_dirs", 0) + ingested.counts.get("partitions", 0)
            + ingested.counts.get("events", 0))
    return rows <= SMALL_RUN_ROWS


def detect_inputs(store: TableStore, cluster: str, run_id: str) -> dict[str, Any]:
    """What ``detect`` reads, one DataFrame per table: the run's partition dirs, log dirs and controller tables, and
    the cluster's event history (keyword names of ``pipelines.detect.spark_detect.detect``)."""
    from pyspark.sql import functions as F

    per_run = ("partition_dirs", "controller_topics", "controller_partitions", "controller_brokers",
               "controller_broker_configs", "log_dirs")
    return {
        **{table: of_run(store, table, cluster, run_id) for table in per_run},
        "metadata_events": store.read("metadata_events").where(F.col("cluster") == cluster),
    }


def detect_step(spark: SparkSession, store: TableStore, config: AppConfig, run_id: str,
                now: datetime | None = None, known: Statuses | None = None, keep: bool = False,
                cache_inputs: bool = False, given: Mapping[str, Any] | None = None) -> StepReport:
    """Classify every partition dir of the run against the controller tables of the same run → findings.

    ``known``: the crawl and ingest outcomes when this process ran them (they are not read back). ``keep``: the
    findings written stay cached for the plan step, in ``report.frames["findings"]`` (unpersist when done); the
    summary is taken from that cache instead of the table. ``cache_inputs``: each input table is read once into a
    cache (memory, spilling to disk) for the step, instead of Delta listing its files for every reference and
    filter the detect query makes of it (one Spark job each, ~18 in all); for small runs (``is_small_run``).
    ``given``: inputs this process still holds as it wrote them (``detect_inputs`` names: the kept frames of
    ``crawl_step`` and ``ingest_metadata_step``), used instead of reading those tables back.

    Raises:
        StepRefused: the run's crawl or ingest did not succeed.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from pipelines.detect.spark_detect import detect

    require_predecessors(store, run_id, "detect", known, reader=status_reader(store, config), cluster=config.cluster)
    inputs = {**detect_inputs(store, config.cluster, run_id), **(given or {})}
    if cache_inputs:
        inputs = {name: df.persist(StorageLevel.MEMORY_AND_DISK) for name, df in inputs.items()}
    try:
        findings = detect(spark, **inputs, config=config.detect, now=now or datetime.now(timezone.utc))
        if keep:
            findings = findings.persist(StorageLevel.MEMORY_AND_DISK)
        store.overwrite_partition("findings", run_key(config, run_id), findings)
        written = findings if keep else of_run(store, "findings", config.cluster, run_id)
        summary = (
            written
            .groupBy("class").agg(F.count("*").alias("dirs"), F.sum("bytes").alias("bytes"),
                                  F.sum(F.col("plannable").cast("int")).alias("plannable"))
            .collect()
        )
    finally:
        if cache_inputs:  # the kept findings are loaded whole by now: they no longer read the inputs
            for df in inputs.values():
                df.unpersist()
    by_class = {r["class"]: {"dirs": r["dirs"], "bytes": r["bytes"] or 0, "plannable": r["plannable"] or 0}
                for r in summary}
    return StepReport("detect", {
        "dirs": sum(c["dirs"] for c in by_class.values()),
        "plannable": sum(c["plannable"] for c in by_class.values()),
        "by_class": dict(sorted(by_class.items())),
    }, frames={"findings": findings} if keep else {})


def status_reader(store: TableStore, config: AppConfig) -> TableStore | None:
    """A delta-rs store over ``store``'s warehouse when ``store`` is Spark's: a run-status row is found without a
    Spark job (``run_status.tracked``). The Spark store's own ``probe`` when it has one."""
    if store.engine != "spark":
        return None
    probe = getattr(store, "probe", None)
    if probe is not None:
        return probe
    from pipelines.tables.warehouse_store import warehouse_store

    return warehouse_store(store.warehouse, config.warehouse_storage_options)


def plan_store(config: AppConfig) -> TableStore:
    """The delta-rs store the plan step registers plans with (it owns the plan tables)."""
    from pipelines.tables.warehouse_store import warehouse_store

    return warehouse_store(config.warehouse, config.warehouse_storage_options)


def plan_inputs(spark: SparkSession, store: TableStore, run_id: str, findings: Any = None,
                cluster_ids: tuple[str, ...] | None = None, plannable: int | None = None, *,
                cluster: str | None = None) -> tuple[Iterator[Any], Iterator[Any], str | None]:
    """The findings ``emit_plan`` needs, streamed to the driver: the live rows of the (broker, topic, partition)s
    that have plannable rows (the JBOD rules compare candidates with them; read first, small facts kept), then the
    plannable rows themselves (each re-checked as it arrives, never all held); and the one cluster.id the crawl saw.

    ``findings``: the run's findings as the detect step of this process kept them, else read from the table.
    ``cluster_ids``: the distinct cluster ids of the run's ``log_dirs`` as the crawl of this process saw them
    (``crawl_step``'s ``frames["cluster_ids"]``), else read from the table. ``plannable``: the run's count of
    plannable findings when known (detect's report); up to ``SMALL_PLAN_ROWS`` both inputs are collected in one
    Spark job each (the same rows in the same order), else streamed (one job per partition).
    """
    from pyspark.sql import functions as F

    if findings is None:
        findings = of_run(store, "findings", cluster, run_id)
    candidates = findings.where(F.col("plannable"))
    keys = candidates.select("broker_id", "topic", "partition").distinct()
    live = findings.where(F.col("kind") == "live").join(keys, ["broker_id", "topic", "partition"], "left_semi")
    if cluster_ids is None:
        ids = [r[0] for r in of_run(store, "log_dirs", cluster, run_id)
               .where(F.col("meta_cluster_id").isNotNull()).select("meta_cluster_id").distinct().limit(2).collect()]
    else:
        ids = list(dict.fromkeys(cluster_ids))[:2]
    collect = plannable is not None and plannable <= SMALL_PLAN_ROWS
    return _rows(live, collect), _rows(candidates, collect), ids[0] if len(ids) == 1 else None


def _rows(df: Any, collect: bool) -> Iterator[Any]:
    """``df``'s rows: collected in one job, or streamed to the driver one partition (one job) at a time."""
    return iter(df.collect()) if collect else df.toLocalIterator()


def plan_step(spark: SparkSession, store: TableStore, config: AppConfig, run_id: str, *, created_by: str,
              view: ControllerView | None = None, now: datetime | None = None, known: Statuses | None = None,
              findings: Any = None, cluster_ids: tuple[str, ...] | None = None, plannable: int | None = None,
              ) -> tuple[StepReport, GcPlan | None]:
    """Plannable findings → a GC plan, each item re-checked in plain Python against the controller image.

    The findings are read with ``store`` (Spark), or taken from ``findings`` (the detect step's cache of the rows it
    wrote); the plan is registered with delta-rs, the engine that writes the plan tables
    (``pipelines.tables.ownership``). A run with nothing plannable writes no plan. ``known`` as in ``detect_step``,
    ``cluster_ids`` and ``plannable`` as in ``plan_inputs``.

    Raises:
        StepRefused: the run's crawl or ingest did not succeed.
    """
    from pipelines.plan.approval import register_plan
    from pipelines.plan.emit import emit_plan
    from pipelines.tables.object_store import warehouse_storage

    require_predecessors(store, run_id, "plan", known, reader=status_reader(store, config), cluster=config.cluster)
    view = view or load_controller_view(config.metadata)
    live, candidates, cluster_id = plan_inputs(spark, store, run_id, findings, cluster_ids, plannable,
                                               cluster=config.cluster)
    out_dir = plans_dir(config)
    plan = emit_plan(candidates, view.image, live_rows=live, cluster=config.cluster, run_id=run_id,
                     created_by=created_by, policy=config.policy, out_dir=out_dir, config=config.detect, now=now,
                     cluster_id=cluster_id,
                     storage_options=warehouse_storage(out_dir, config.warehouse_storage_options).fsspec)
    if not plan.items:
        return StepReport("plan", {"plan_id": None, "items": 0, "bytes": 0}, ["nothing plannable in this run"]), None
    store = plan_store(config)
    record = register_plan(store, plan, actor=created_by, policy=config.policy)
    if config.signing.service_key and record.status == "proposed":  # the job signs as the plan's author
        from pipelines.signing.workflow import propose_signed

        propose_signed(store, plan.plan_id, policy=config.policy, key=config.signing.service_key)
    by_class = Counter(i.class_ for i in plan.items)
    report = StepReport("plan", {
        "plan_id": plan.plan_id, "items": len(plan.items), "bytes": plan.total_bytes,
        "content_hash": plan.content_hash, "by_class": dict(sorted(by_class.items())),
        "file": f"{plans_dir(config).rstrip('/')}/{plan.plan_id}.json",
    })
    return report, plan
