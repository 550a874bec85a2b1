"""A Spark run's metrics: what ``logdir-gc run`` found, written to a file per run and pushed when configured.

Figures come from the run's rows in the warehouse, read with delta-rs (``pipelines.analytics``: the same
definitions the notebooks and ``logdir-gc report`` use), plus the run report (plan, crawl counts) and the step
durations the CLI measured. Writing or pushing metrics never fails a run: problems come back as notes (one line
each, secrets masked).

The warehouse is read, and a run's file written under it, with the warehouse's own settings (the environment, then
``warehouse_storage_options`` on top: ``pipelines.tables.object_store``), so credentials given only in the config
reach the metrics as they reach the tables.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipelines.config.models import AppConfig
from pipelines.metrics import catalog as m
from pipelines.metrics.families import Families
from pipelines.metrics.push import PushFailed, push
from pipelines.metrics.textfile import write_url
from pipelines.redaction import redact_text
from pipelines.tables.base import TableStore
from pipelines.tables.object_store import WarehouseStorage, warehouse_storage


@dataclass
class MetricsOutcome:
    file: str | None = None
    pushed_to: str | None = None
    notes: list[str] = field(default_factory=list)


def metrics_dir(config: AppConfig) -> str:
    return config.metrics.dir or config.warehouse.rstrip("/") + "/_metrics"


def run_file(config: AppConfig, run_id: str) -> str:
    return f"{metrics_dir(config).rstrip('/')}/logdir_gc_run_{config.cluster}_{run_id}.prom"


def _storage(config: AppConfig) -> WarehouseStorage:
    return warehouse_storage(config.warehouse, config.warehouse_storage_options)


def _file_options(config: AppConfig, path: str, storage: WarehouseStorage) -> dict | None:
    """fsspec options for the run's file: the warehouse's when the file is in the warehouse's store."""
    from urllib.parse import urlparse

    scheme = urlparse(path).scheme.lower()
    return dict(storage.fsspec) if storage.is_object_store and scheme == storage.scheme else None


def warehouse_figures(families: Families, config: AppConfig, run_id: str, plan_id: str | None) -> bool:
    """Reclaimable and plannable bytes/dirs by broker and class, unexplained bytes per broker, crawl errors by
    stage, crawled dirs, plan items and bytes by class, from the run's (and its plan's) rows; returns whether the
    run's crawl (``crawl_runs.status``) did not fail."""
    from pipelines.analytics.ledger import filesystem_ledger
    from pipelines.analytics.reclaim import garbage_dirs
    from pipelines.analytics.warehouse import open_warehouse

    cluster = config.cluster
    wh = open_warehouse(config.warehouse, cluster, storage_options=_storage(config).delta_rs or None)
    crawl = wh.frame("crawl_runs", {"run_id": run_id})
    if crawl.empty:
        raise LookupError(f"no crawl_runs row for run {run_id}")
    families.set(m.CRAWLED_PARTITION_DIRS, int(crawl["partition_dirs"].iloc[0] or 0), cluster=cluster)
    garbage = garbage_dirs(wh, run_id)
    for (broker, cls), g in garbage.groupby(["broker_id", "class"]):
        labels = {"cluster": cluster, "broker": int(broker), "class": cls}
        families.set(m.RECLAIMABLE_BYTES, int(g["bytes"].sum()), **labels)
        families.set(m.RECLAIMABLE_DIRS, len(g), **labels)
        families.set(m.PLANNABLE_BYTES, int(g["bytes"].where(g["plannable"], 0).sum()), **labels)
    for broker, g in filesystem_ledger(wh, run_id).groupby("broker_id"):
        families.set(m.UNEXPLAINED_BYTES, int(g["unexplained_bytes"].sum()), cluster=cluster, broker=int(broker))
    errors = wh.frame("crawl_errors", {"run_id": run_id})
    counts = errors.groupby("stage").size().to_dict() if not errors.empty else {}
    for stage in sorted(set(m.CRAWL_STAGES) | set(counts)):
        families.set(m.CRAWL_ERRORS, int(counts.get(stage, 0)), cluster=cluster, stage=stage)
    remote = wh.frame("remote_findings", {"run_id": run_id})  # none unless remote_tier is configured
    if remote.empty:
        families.set(m.REMOTE_BYTES, 0, cluster=cluster, **{"class": "none"})
        families.set(m.REMOTE_PLANNABLE_BYTES, 0, cluster=cluster, **{"class": "none"})
    for cls, g in remote.groupby("class"):
        sizes = g["bytes"].fillna(0).astype("int64")
        families.set(m.REMOTE_BYTES, int(sizes.sum()), cluster=cluster, **{"class": cls})
        families.set(m.REMOTE_PLANNABLE_BYTES, int(sizes.where(g["plannable"].eq(True), 0).sum()),
                     cluster=cluster, **{"class": cls})
    items = wh.frame("gc_plan_items", {"plan_id": plan_id}) if plan_id else None
    if items is None or items.empty:
        families.set(m.PLAN_ITEMS, 0, cluster=cluster, **{"class": "none"})
        families.set(m.PLAN_BYTES, 0, cluster=cluster, **{"class": "none"})
    else:
        for cls, g in items.groupby("class"):
            families.set(m.PLAN_ITEMS, len(g), cluster=cluster, **{"class": cls})
            families.set(m.PLAN_BYTES, int(g["bytes"].sum()), cluster=cluster, **{"class": cls})
    return crawl["status"].iloc[0] != "failed"


def plan_state_figures(families: Families, config: AppConfig, store: TableStore | None = None) -> None:
    """The cluster's plans per review status and its unverified decisions, derived as ``plans list`` derives them
    (:mod:`pipelines.signing.review_state`: from verified signatures when ``executor.require_signatures`` is on)."""
    from pipelines.plan import approval
    from pipelines.signing.review_state import load_review_trust, plan_states

    if store is None:
        from pipelines.tables.warehouse_store import warehouse_store

        store = warehouse_store(config.warehouse, config.warehouse_storage_options)
    records = approval.list_plans(store, config.cluster)
    states = plan_states(store, records, load_review_trust(config) if records else None, config.policy)
    counts = Counter(s.status for s in states)
    for status in sorted(set(m.PLAN_STATUSES) | set(counts)):
        families.set(m.PLANS, counts.get(status, 0), cluster=config.cluster, status=status)
    families.set(m.UNVERIFIED_DECISIONS, sum(len(s.unverified) for s in states), cluster=config.cluster)


def record_run(config: AppConfig, run_id: str, durations: Mapping[str, float], *, plan_id: str | None,
               now: float | None = None) -> MetricsOutcome:
    """Metrics of a run that completed every step (``durations``: seconds per step, when measured): written to
    its file, then pushed (replacing the group). A run whose crawl failed, or whose rows cannot be read, is not a
    success."""
    now = time.time() if now is None else now
    cluster = config.cluster
    families = Families()
    outcome = MetricsOutcome()
    try:
        crawl_ok = warehouse_figures(families, config, run_id, plan_id)
    except Exception as exc:  # metrics never fail a run; the note says what is missing
        outcome.notes.append(_note(config, f"warehouse figures left out ({type(exc).__name__}: {exc})"))
        crawl_ok = False
    try:
        plan_state_figures(families, config)
    except Exception as exc:  # metrics never fail a run
        outcome.notes.append(_note(config, f"plan states left out ({type(exc).__name__}: {exc})"))
    for step, seconds in durations.items():
        families.set(m.STEP_DURATION, seconds, cluster=cluster, step=step)
    families.set(m.RUN_TIMESTAMP, now, cluster=cluster)
    families.set(m.RUN_SUCCESS, 1 if crawl_ok else 0, cluster=cluster)
    if crawl_ok:
        families.set(m.LAST_SUCCESS, now, cluster=cluster)
    _emit(config, run_id, families, outcome, replace=crawl_ok)
    return outcome


def record_failed_run(config: AppConfig, run_id: str, *, now: float | None = None) -> MetricsOutcome:
    """A run that stopped with an error: its file says so; the push keeps the group's last success time."""
    now = time.time() if now is None else now
    families = Families()
    families.set(m.RUN_TIMESTAMP, now, cluster=config.cluster)
    families.set(m.RUN_SUCCESS, 0, cluster=config.cluster)
    outcome = MetricsOutcome()
    _emit(config, run_id, families, outcome, replace=False)
    return outcome


def _note(config: AppConfig, text: str) -> str:
    """``metrics: text`` on one line, the warehouse's secrets and URL passwords masked."""
    return "metrics: " + " ".join(redact_text(text, _storage(config).secrets).split())


def _emit(config: AppConfig, run_id: str, families: Families, outcome: MetricsOutcome, *, replace: bool) -> None:
    path = run_file(config, run_id)
    try:
        write_url(path, families.text(), _file_options(config, path, _storage(config)))
        outcome.file = path
    except Exception as exc:  # an object store's client raises its own types (botocore's NoCredentialsError...)
        outcome.notes.append(_note(config, f"cannot write {path}: {type(exc).__name__}: {exc}"))
    if config.metrics.pushgateway_url:
        try:
            outcome.pushed_to = push(config.metrics, config.cluster, families, replace=replace)
        except PushFailed as exc:
            outcome.notes.append(_note(config, str(exc)))
