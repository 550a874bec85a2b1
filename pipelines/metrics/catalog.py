"""Every metric the product writes. Names follow Prometheus' conventions as Kafka and Spark exporters use them:
a ``logdir_gc_`` prefix, base units in the name (``_bytes``, ``_seconds``), ``_total`` on counters, and the labels
``cluster``, ``broker``, ``class``, ``stage``, ``step``, ``outcome``, ``action``, ``reason``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    """As exposed: counters end in ``_total``."""
    kind: Literal["gauge", "counter"]
    help: str
    labels: tuple[str, ...]


def _g(name: str, help_: str, *labels: str) -> MetricSpec:
    return MetricSpec(name, "gauge", help_, ("cluster", *labels))


def _c(name: str, help_: str, *labels: str) -> MetricSpec:
    return MetricSpec(name, "counter", help_, ("cluster", *labels))


# -- a Spark run (logdir-gc run / demo): one file per run, pushed when configured ----------------------
RECLAIMABLE_BYTES = _g("logdir_gc_reclaimable_bytes", "Bytes in garbage partition dirs (not protected), this run",
                       "broker", "class")
RECLAIMABLE_DIRS = _g("logdir_gc_reclaimable_dirs", "Garbage partition dirs (not protected), this run",
                      "broker", "class")
PLANNABLE_BYTES = _g("logdir_gc_plannable_bytes", "Reclaimable bytes whose grace period has elapsed, this run",
                     "broker", "class")
UNEXPLAINED_BYTES = _g("logdir_gc_unexplained_bytes", "Filesystem used bytes no partition dir or known file "
                       "explains (statvfs used minus attributed; each filesystem once)", "broker")
CRAWL_ERRORS = _g("logdir_gc_crawl_errors", "crawl_errors rows of this run", "stage")
STEP_DURATION = _g("logdir_gc_step_duration_seconds", "Wall time of each pipeline step, this run", "step")
PLAN_ITEMS = _g("logdir_gc_plan_items", "Items in the plan this run emitted (0: no plan)", "class")
PLAN_BYTES = _g("logdir_gc_plan_bytes", "Bytes in the plan this run emitted (0: no plan)", "class")
REMOTE_BYTES = _g("logdir_gc_remote_bytes", "Remote-tier (KIP-405) bytes per class of remote segment, this run "
                  "(the listing's sizes; remote_ok included)", "class")
REMOTE_PLANNABLE_BYTES = _g("logdir_gc_remote_plannable_bytes", "Remote-tier bytes of plannable segments, this "
                            "run", "class")
CRAWLED_PARTITION_DIRS = _g("logdir_gc_crawled_partition_dirs", "Partition dirs the crawl listed, this run")
RUN_TIMESTAMP = _g("logdir_gc_run_timestamp_seconds", "When the last run ended (Unix time)")
RUN_SUCCESS = _g("logdir_gc_run_success", "1 when the last run completed every step and its crawl did not "
                  "fail, else 0")
LAST_SUCCESS = _g("logdir_gc_last_success_timestamp_seconds", "When a run last completed every step with a "
                  "crawl that was not failed (Unix time)")

PLANS = _g("logdir_gc_plans", "The cluster's plans by review status, as `plans list` shows it (with "
           "require_signatures: from the signatures that verify under the reviewers' allowed_signers)", "status")
UNVERIFIED_DECISIONS = _g("logdir_gc_plan_unverified_decisions", "Decisions recorded on the cluster's plans that no "
                          "signature verifying under the reviewers' allowed_signers bears out (forged or unsigned)")

RUN = (RECLAIMABLE_BYTES, RECLAIMABLE_DIRS, PLANNABLE_BYTES, UNEXPLAINED_BYTES, CRAWL_ERRORS, STEP_DURATION,
       REMOTE_BYTES, REMOTE_PLANNABLE_BYTES,
       PLAN_ITEMS, PLAN_BYTES, CRAWLED_PARTITION_DIRS, RUN_TIMESTAMP, RUN_SUCCESS, LAST_SUCCESS, PLANS,
       UNVERIFIED_DECISIONS)
PLAN_STATUSES = ("proposed", "approved", "rejected", "expired", "superseded", "applying", "applied",
                 "partially_applied", "failed", "partially_restored", "restored", "purged")
"""``logdir_gc_plans`` ``status`` values; each is written (0 when none)."""

# -- the executor on a broker host: a node_exporter textfile, counters kept across runs ------------------
EXEC_ITEMS = _c("logdir_gc_executor_items_total", "Plan items the executor handled, by outcome "
                "(quarantined, skipped, failed, purged, restored)", "broker", "outcome")
EXEC_BYTES = _c("logdir_gc_executor_bytes_total", "Bytes the executor moved or deleted, by action "
                "(quarantined, purged, restored)", "broker", "action")
EXEC_REFUSALS = _c("logdir_gc_executor_refusals_total", "Applies the executor refused as a whole "
                   "(reason: lock_held, policy, precondition, error)", "broker", "reason")
EXEC_LAST_APPLY = _g("logdir_gc_executor_last_apply_timestamp_seconds", "When the executor last applied a plan "
                     "(--execute; Unix time)", "broker")
EXEC_LAST_OUTCOME = _g("logdir_gc_executor_last_apply_outcome", "1 for the outcome of the last apply "
                       "(applied, partial, refused, failed), 0 for the others", "broker", "outcome")

EXECUTOR = (EXEC_ITEMS, EXEC_BYTES, EXEC_REFUSALS, EXEC_LAST_APPLY, EXEC_LAST_OUTCOME)
APPLY_OUTCOMES = ("applied", "partial", "refused", "failed")
CRAWL_STAGES = ("list", "read", "parse", "statvfs", "inventory")
"""``crawl_errors.stage`` values; each is written (0 when none) so an alert sees the series."""

ALL = RUN + EXECUTOR
