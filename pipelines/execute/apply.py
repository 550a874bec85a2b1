"""Applying an approved plan on one broker host: verify, lock, journal, quarantine by one rename per item.

Order of an ``--execute`` run: load the approved plan (``plan_source``), bind it to this host
(``meta.properties``), take the executor lock, then Kafka's ``.lock`` of every log dir involved (held until the
end), mark the plan ``applying``, and for each item: journal ``item.intent``, re-verify every precondition,
write the manifest, journal ``rename.intent``, rename, fsync both parents, journal ``rename.done`` and
``item.done``. A dry run (the default) does the loading, binding and verification only and changes nothing.

Crash recovery: an item whose journal ends in ``rename.intent`` is finished by looking at the disk. If the
quarantine destination exists and its fingerprint equals the manifest's, the rename happened: it is journalled
as done. Otherwise the rename did not happen and the item is processed again from scratch (re-verified). An
item journalled ``done`` is never touched again, so each item is moved exactly once or not at all.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig, BrokerConfig
from pipelines.errors import PipelinesError, PreconditionFailed
from pipelines.execute.assignment import load_assignment_check
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, FAILED, INTENT, SKIPPED, Journal, JournalRecord, fsync_dir
from pipelines.execute.locks import executor_lock, kafka_dir_lock
from pipelines.execute.plan_source import load_executable_plan
from pipelines.execute.preconditions import AssignmentCheck, ItemSkipped, check_host, verify_item
from pipelines.execute.quarantine import (
    ManifestFile,
    QuarantineManifest,
    item_dir,
    prepare_item_dir,
    read_manifest,
    write_manifest,
)
from pipelines.kafka.listing import LocalLister
from pipelines.kafka.logdir import fingerprint_entries, fingerprint_triples
from pipelines.plan import approval
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.tables.base import TableStore

_FROM_CONFIG: Any = object()


@dataclass
class ItemOutcome:
    item_id: str
    path: str
    action: str  # quarantined | would_quarantine | already_done | skipped | failed | not_reached
    reason: str = ""
    bytes: int = 0
    quarantined_path: str | None = None


@dataclass
class ApplyReport:
    plan_id: str
    broker_id: int
    executed: bool
    status: str | None = None
    items: list[ItemOutcome] = field(default_factory=list)
    journal_mirrored: str = ""

    def count(self, *actions: str) -> int:
        return sum(1 for i in self.items if i.action in actions)

    @property
    def bytes_quarantined(self) -> int:
        return sum(i.bytes for i in self.items if i.action in ("quarantined", "already_done"))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bytes_quarantined": self.bytes_quarantined}


def local_path(url: str) -> str:
    """A registered log dir as a local path; the executor works on local disks only."""
    if url.startswith("file://"):
        url = url[len("file://"):]
    if "://" in url:
        raise PreconditionFailed(f"log dir {url} is not local; run the executor on the broker host")
    return os.path.normpath(url)


def broker_config(config: AppConfig, broker_id: int) -> BrokerConfig:
    for b in config.brokers:
        if b.broker_id == broker_id:
            return b
    raise PreconditionFailed(f"broker {broker_id} is not in the config's brokers")


def state_dir(config: AppConfig, broker: BrokerConfig) -> Path:
    """``executor.state_dir``, or ``<first log dir's parent>/.logdir-gc``."""
    if config.executor.state_dir:
        return Path(config.executor.state_dir)
    return Path(local_path(broker.log_dirs[0])).parent / ".logdir-gc"


def apply_plan(config: AppConfig, store: TableStore, plan_id: str, broker_id: int, *, execute: bool = False,
               plan_file: str | Path | None = None, now: datetime | None = None, deadline: float | None = None,
               assignment: AssignmentCheck | None = _FROM_CONFIG) -> ApplyReport:
    """Apply (or, by default, dry-run) the broker's items of an approved plan.

    ``deadline`` is a ``time.monotonic()`` value after which no new item is started (pre-start hook budget).
    ``assignment`` defaults to re-reading ``config.metadata``.

    Raises:
        PlanError / PolicyViolation: the plan is not executable (not approved, expired, hash mismatch).
        PreconditionFailed: the host is not the one the plan was made for.
        ExecutorBusy: the broker is running or another executor holds the broker's executor lock.
    """
    plan, record = load_executable_plan(config, store, plan_id, broker_id, plan_file=plan_file, now=now)
    broker = broker_config(config, broker_id)
    registered = {local_path(d) for d in broker.log_dirs}
    report = ApplyReport(plan_id, broker_id, execute)
    items: list[PlanItem] = []
    for item in sorted((i for i in plan.items if i.broker_id == broker_id), key=lambda i: i.item_id):
        if os.path.normpath(item.log_dir) != item.log_dir.rstrip("/") or item.log_dir.rstrip("/") not in registered:
            report.items.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}", "skipped",
                                            f"log dir {item.log_dir} is not registered for broker {broker_id}"))
        else:
            items.append(item)
    log_dirs = sorted({i.log_dir.rstrip("/") for i in items})
    for d in log_dirs:
        check_host(plan, broker_id, d, [i for i in items if i.log_dir.rstrip("/") == d])
    if assignment is _FROM_CONFIG:
        assignment = load_assignment_check(config.metadata)
    if not execute:
        for item in items:
            try:
                v = verify_item(item, broker_id, assignment)
                report.items.append(ItemOutcome(item.item_id, str(v.path), "would_quarantine", bytes=v.bytes))
            except ItemSkipped as exc:
                report.items.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}", "skipped",
                                                str(exc)))
        return report
    sdir = state_dir(config, broker)
    actor = f"executor@broker-{broker_id}"
    with executor_lock(sdir, broker_id):
        locks = []
        try:
            for d in log_dirs:
                locks.append(kafka_dir_lock(d).acquire())
            journal = Journal(sdir, plan.cluster, broker_id)
            history = journal.last_by_item(plan_id)
            approval.set_status(store, plan_id, approval.APPLYING, actor=actor, allowed_from=approval.EXECUTABLE)
            journal.write(plan_id, "", "run", INTENT, content_hash=record.content_hash, items=len(items))
            for item in items:
                if deadline is not None and time.monotonic() > deadline:
                    report.items.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}",
                                                    "not_reached", "time budget exhausted"))
                    continue
                report.items.append(_apply_item(item, plan, record.content_hash, history.get(item.item_id, []),
                                                journal, config, broker_id, assignment))
            journal.write(plan_id, "", "run", DONE, done=report.count("quarantined", "already_done"),
                          skipped=report.count("skipped"), failed=report.count("failed"))
        finally:
            for lock in reversed(locks):
                lock.release()
        report.status = _final_status(plan, broker_id, report)
        approval.set_status(store, plan_id, report.status, actor=actor, comment=_summary(report))
        report.journal_mirrored = mirror_best_effort(journal, store)
    return report


def _summary(report: ApplyReport) -> str:
    return (f"broker {report.broker_id}: {report.count('quarantined', 'already_done')} done, "
            f"{report.count('skipped')} skipped, {report.count('failed')} failed, "
            f"{report.count('not_reached')} not reached")


def _final_status(plan: GcPlan, broker_id: int, report: ApplyReport) -> str:
    done = report.count("quarantined", "already_done")
    others = any(i.broker_id != broker_id for i in plan.items)
    if done == 0 and report.items:
        return approval.FAILED
    if done == len(report.items) and not others:
        return approval.APPLIED
    return approval.PARTIALLY_APPLIED


def _fingerprint(path: Path) -> str:
    return fingerprint_entries(fingerprint_triples(LocalLister().list_dir(str(path))))


def _apply_item(item: PlanItem, plan: GcPlan, content_hash: str, history: list[JournalRecord], journal: Journal,
                config: AppConfig, broker_id: int, assignment: AssignmentCheck | None) -> ItemOutcome:
    src = Path(item.log_dir.rstrip("/")) / item.dir_name
    qdir = item_dir(item.log_dir.rstrip("/"), config.executor.quarantine_dir_name, plan.plan_id, item.item_id)
    dst = qdir / item.dir_name
    seen = {(r.step, r.state) for r in history}
    pid = plan.plan_id
    if any(step.startswith("restore") for step, _ in seen):
        return ItemOutcome(item.item_id, str(src), "skipped", "restored by an operator earlier; not re-applied")
    if ("rename", DONE) in seen:
        if ("item", DONE) not in seen:
            journal.write(pid, item.item_id, "item", DONE, recovered=True)
        return ItemOutcome(item.item_id, str(src), "already_done", bytes=item.bytes, quarantined_path=str(dst))
    if ("rename", INTENT) in seen and os.path.lexists(dst):
        return _recover_renamed(item, pid, src, qdir, dst, journal)
    journal.write(pid, item.item_id, "item", INTENT, src=str(src))
    try:
        verified = verify_item(item, broker_id, assignment)
    except ItemSkipped as exc:
        journal.write(pid, item.item_id, "item", SKIPPED, reason=str(exc))
        return ItemOutcome(item.item_id, str(src), "skipped", str(exc))
    try:
        prepare_item_dir(item.log_dir.rstrip("/"), qdir)
    except PreconditionFailed as exc:
        journal.write(pid, item.item_id, "item", SKIPPED, reason=str(exc))
        return ItemOutcome(item.item_id, str(src), "skipped", str(exc))
    if os.path.lexists(dst):
        reason = f"quarantine destination {dst} already exists"
        journal.write(pid, item.item_id, "item", FAILED, reason=reason)
        return ItemOutcome(item.item_id, str(src), "failed", reason)
    manifest = QuarantineManifest(
        cluster=plan.cluster, plan_id=pid, content_hash=content_hash, item_id=item.item_id, broker_id=broker_id,
        log_dir=item.log_dir.rstrip("/"), dir_name=item.dir_name, original_path=str(src), quarantined_path=str(dst),
        topic=item.topic, partition=item.partition, topic_id=item.topic_id, fingerprint=verified.fingerprint,
        files=tuple(ManifestFile(name=e.name, size=e.size, mtime_ns=e.mtime_ns, is_dir=e.is_dir)
                    for e in sorted(verified.entries, key=lambda e: e.name)),
        bytes=verified.bytes, quarantined_at=datetime.now(timezone.utc),
    )
    write_manifest(qdir, manifest)
    journal.write(pid, item.item_id, "manifest", DONE, path=str(qdir))
    journal.write(pid, item.item_id, "rename", INTENT, src=str(src), dst=str(dst))
    try:
        os.rename(src, dst)
    except OSError as exc:  # e.g. the dir vanished or EXDEV: nothing moved, the item fails, the plan goes on
        reason = f"rename {src} -> {dst} failed: {exc.strerror or exc}"
        journal.write(pid, item.item_id, "item", FAILED, reason=reason)
        return ItemOutcome(item.item_id, str(src), "failed", reason)
    fault_point("rename.performed")
    fsync_dir(src.parent)
    fsync_dir(qdir)
    journal.write(pid, item.item_id, "rename", DONE, src=str(src), dst=str(dst))
    journal.write(pid, item.item_id, "item", DONE, bytes=verified.bytes)
    return ItemOutcome(item.item_id, str(src), "quarantined", bytes=verified.bytes, quarantined_path=str(dst))


def _recover_renamed(item: PlanItem, pid: str, src: Path, qdir: Path, dst: Path, journal: Journal) -> ItemOutcome:
    """The journal says a rename was about to happen and the destination exists: did it, completely?"""
    try:
        manifest = read_manifest(qdir)
        same = _fingerprint(dst) == manifest.fingerprint
    except (OSError, ValueError) as exc:
        reason = f"cannot check quarantined copy {dst}: {exc}"
    else:
        if same:
            journal.write(pid, item.item_id, "rename", DONE, recovered=True, src=str(src), dst=str(dst))
            journal.write(pid, item.item_id, "item", DONE, recovered=True)
            return ItemOutcome(item.item_id, str(src), "quarantined", "recovered after a crash", manifest.bytes,
                               str(dst))
        reason = f"{dst} exists but does not match its manifest"
    journal.write(pid, item.item_id, "item", FAILED, reason=reason)
    return ItemOutcome(item.item_id, str(src), "failed", reason)


def mirror_best_effort(journal: Journal, store: TableStore | None) -> str:
    """Mirror the journal into ``gc_journal``; a failure is reported, never raised (the file is the authority)."""
    if store is None:
        return "no warehouse"
    from deltalake.exceptions import DeltaError

    from pipelines.execute.journal import mirror_to_store

    try:
        return f"{mirror_to_store(journal, store)} rows"
    except (OSError, DeltaError, PipelinesError) as exc:
        return f"mirror failed: {type(exc).__name__}: {exc}"
