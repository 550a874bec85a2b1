"""crawl → ingest metadata → detect → (remote tier) → plan, in one Spark session: what ``logdir-gc run`` and ``demo``
do. The remote tier's step runs only when ``remote_tier`` is configured."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.deploy.executor_check import as_missing_module, check_executors, crawl_modules
from pipelines.errors import StorageUnavailable
from pipelines.orchestrate.driver_stopped import as_driver_stopped
from pipelines.orchestrate.fleet import with_fleet
from pipelines.orchestrate.memory import release_unused_memory
from pipelines.orchestrate.run_status import SUCCEEDED, Statuses
from pipelines.orchestrate.steps import (
    StepReport,
    crawl_step,
    detect_step,
    ingest_metadata_step,
    is_small_run,
    plan_step,
)
from pipelines.progress import step as progress_step
from pipelines.tables.base import TableStore
from pipelines.tables.object_store import redact
from pipelines.tables.storage_retry import is_transient, one_line

Progress = Callable[[str], None]


@dataclass
class RunReport:
    run_id: str
    cluster: str
    warehouse: str
    steps: list[StepReport] = field(default_factory=list)
    plan_id: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "cluster": self.cluster, "warehouse": self.warehouse, "plan_id": self.plan_id,
            "steps": {s.step: {"counts": s.counts, "notes": s.notes} for s in self.steps},
        }


def spark_log_path(config: AppConfig, run_id: str) -> Path:
    """Where the Spark JVM's output goes: ``<warehouse>/_logs/`` for a local warehouse, else the cache's ``logs/``."""
    from pipelines.tables.spark_session import cache_dir

    warehouse = config.warehouse.removeprefix("file://")
    root = Path(warehouse) / "_logs" if "://" not in warehouse else cache_dir() / "logs"
    return root / f"spark-{run_id}.log"


def run_pipeline(config: AppConfig, run_id: str, *, created_by: str, progress: Progress = lambda _: None,
                 include_segments: bool = False, now: datetime | None = None,
                 spark_log: Path | None = None) -> RunReport:
    """Run every step for ``run_id``; a rerun with the same id replaces that run's rows.

    ``spark_log``: a file for the Spark JVM's output (log4j, Ivy) when this call starts Spark; None leaves it on
    the terminal. A failure caused by a module the cluster's executors lack is one ``ExecutorsLackModule`` line.
    """
    try:
        return _run_steps(config, run_id, created_by=created_by, progress=progress,
                          include_segments=include_segments, now=now, spark_log=spark_log)
    except Exception as exc:
        missing = as_missing_module(exc)
        if missing is None:
            raise
        raise missing from None


def _run_steps(config: AppConfig, run_id: str, *, created_by: str, progress: Progress, include_segments: bool,
               now: datetime | None, spark_log: Path | None) -> RunReport:
    from pipelines.tables.spark_session import build_spark, under_spark_submit
    from pipelines.tables.warehouse_store import warehouse_store

    now = now or datetime.now(timezone.utc)
    if under_spark_submit() and config.spark.master is None:
        spark_log = None  # the submitter's JVM is running already: its output is the submitter's
    config, fleet_view = with_fleet(config)
    report = RunReport(run_id, config.cluster, config.warehouse)
    progress(f"starting Spark ({config.spark.master or 'local'})"
             + (f"; its output goes to {spark_log} (-v shows it here)" if spark_log else ""))
    spark = build_spark(master=config.spark.master, conf=config.spark.conf, log_file=spark_log)
    check_executors(spark, crawl_modules([url for b in config.brokers for url in b.log_dirs]))
    store = warehouse_store(config.warehouse, config.warehouse_storage_options, engine="spark", spark=spark)
    store.ensure_tables()

    steps = 4 + (config.remote_tier is not None)

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        with progress_step(name, len(report.steps) + 1, steps, progress) as done, spark_step(spark, name):
            out = fn()
            step = out[0] if isinstance(out, tuple) else out
            report.steps.append(step)
            done(_brief(step))
        return out

    def release_crawl() -> None:  # until the crawl kept its frames for detect: nothing to release
        pass

    try:
        crawled = timed("crawl", lambda: crawl_step(spark, store, config, run_id, include_segments=include_segments,
                                                    keep_small=True))
        release_crawl = crawled.frames.get("release", release_crawl)
        ingested, view = timed("ingest metadata",
                               lambda: ingest_metadata_step(store, config, run_id, view=fleet_view, keep_small=True))
        # the events are in metadata_events now; the plan needs only the image (their ~90 MB of Python objects at
        # fleet size go to the plan's items): no reference to the view that holds them is kept
        view, fleet_view = view.without_events(), None
        release_unused_memory()  # the ingest's Arrow rows: the plan's items and writes are not Arrow's to reuse them
        known = Statuses(crawl=crawled.counts["status"], ingest=SUCCEEDED)  # this process wrote both rows
        small = is_small_run(crawled, ingested)
        # a small run's crawl and ingest kept what they wrote: detect starts from it instead of reading it back
        given = {**crawled.frames.get("detect_inputs", {}), **ingested.frames.get("detect_inputs", {})}
        detected = timed("detect", lambda: detect_step(spark, store, config, run_id, now=now, known=known, keep=True,
                                                       cache_inputs=small, given=given))
        release_crawl()
        findings = detected.frames["findings"]
        if config.remote_tier is not None:  # issue 28: the remote tier, after detect
            from pipelines.orchestrate.remote_tier_step import remote_tier_step

            try:
                timed("remote tier", lambda: remote_tier_step(spark, store, config, run_id, view, now=now))
            except BaseException:
                findings.unpersist()
                raise
        try:
            _, plan = timed("plan", lambda: plan_step(spark, store, config, run_id, created_by=created_by, view=view,
                                                      now=now, known=known, findings=findings,
                                                      cluster_ids=crawled.frames["cluster_ids"],
                                                      plannable=detected.counts["plannable"]))
        finally:
            findings.unpersist()
    except Exception as exc:
        with contextlib.suppress(Exception):  # the error to report is exc (a stopped JVM cannot unpersist)
            release_crawl()
        stopped = as_driver_stopped(exc, spark, spark_log)
        if stopped is not None:  # nothing can be written without the JVM: crawl_runs gets no outcome (not succeeded)
            raise stopped from None
        progress(f"run {run_id} failed; marking it failed in crawl_runs")
        mark_run_failed(store, config.cluster, run_id, progress)
        if is_transient(exc):
            raise as_storage_error(exc, store) from None
        raise
    report.plan_id = plan.plan_id if plan is not None else None
    return report


#: The Spark local property each step's jobs carry (the Spark UI and event log show which step ran a job).
STEP_PROPERTY = "logdir_gc.step"


@contextmanager
def spark_step(spark: Any, name: str) -> Iterator[None]:
    """Tag the Spark jobs started inside the block with ``name`` (local property ``STEP_PROPERTY``)."""
    sc = spark.sparkContext
    sc.setLocalProperty(STEP_PROPERTY, name)
    try:
        yield
    finally:
        sc.setLocalProperty(STEP_PROPERTY, None)


def mark_run_failed(store: TableStore, cluster: str, run_id: str, progress: Progress) -> None:
    """Best effort: ``crawl_runs.status = failed`` for the run (the store may still be unreachable)."""
    try:
        if store.exists("crawl_runs"):
            store.update("crawl_runs", {"cluster": cluster, "run_id": run_id}, {"status": "failed"})
    except Exception as exc:
        progress(f"could not mark run {run_id} failed: {one_line(exc)}")


def as_storage_error(exc: BaseException, store: TableStore) -> BaseException:
    """A transient store failure raised by Spark outside the table store, as one ``StorageUnavailable`` line."""
    if isinstance(exc, StorageUnavailable):
        return exc
    return StorageUnavailable(redact(f"object store unreachable or throttling at {store.warehouse}: "
                                     f"{one_line(exc)}", store.secrets))


def _brief(step: StepReport) -> str:
    counts = {k: v for k, v in step.counts.items() if not isinstance(v, dict | list)}
    return ", ".join(f"{k}={v}" for k, v in counts.items())
