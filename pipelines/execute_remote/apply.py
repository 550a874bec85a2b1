"""``apply PLAN --remote``: quarantine a plan's remote segments by verified server-side copy, then delete.

Order of an ``--execute`` run: load the plan as the local executor does (the ``gc_plans`` row re-hashed, an optional
plan file hashing to it, signatures judged by this host's trust files for broker
:data:`~pipelines.plan.model.REMOTE_BROKER_ID`), check it against the host's policy, re-read the controller and the
configured ``__remote_log_metadata`` copy, take the remote executor's lock, check the host's budgets on what the
re-listing MEASURED, record the remote part as ``applying``, and per segment (:mod:`.remote_journal` lists the
journal steps): re-check it (:func:`.recheck.verify_segment`), copy every key to
``<quarantine folder>/<plan_id>/<key>``, verify each copy (size and ETag, or sha256), and only when every copy is
verified delete the originals, each after a last look that it is still the object the crawl listed. A dry run (the
default) loads, re-checks and changes nothing.

Crash recovery: a key whose ``delete.intent`` has no ``delete.done`` is looked at (gone: journalled as deleted); a
key journalled deleted must not exist again; copies journalled verified are verified again before any delete. So a
key is never deleted without a verified copy, and each is copied and deleted at most once per plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipelines.config.models import AppConfig
from pipelines.errors import HostIOError, PlanError, PolicyViolation
from pipelines.execute.apply import ApplyReport, ItemOutcome, mirror_best_effort
from pipelines.execute.controller_check import ControllerCheck, load_controller_check
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, FAILED, INTENT, SKIPPED, Journal
from pipelines.execute.observe import ItemSkipped
from pipelines.execute.plan_source import recorded_plan, refusal_of
from pipelines.execute.preconditions import HostRules
from pipelines.execute_remote.recheck import load_remote_metadata, planned, verify_segment
from pipelines.execute_remote.remote_journal import (
    QUARANTINED,
    SegmentHistory,
    histories,
    open_journal,
    remote_lock,
)
from pipelines.execute_remote.target import RemoteTarget, target_from_config
from pipelines.execute_remote.tier_store import ObjectChanged, ObjectInfo, TierStore, copy_verdict
from pipelines.plan import approval, broker_status
from pipelines.plan import policy as rules
from pipelines.plan.model import REMOTE_BROKER_ID, GcPlan, PlanItem
from pipelines.remote_tier.replay import RemoteMetadataImage
from pipelines.signing.decision import HostFacts
from pipelines.tables.base import TableStore

__all__ = ["RemoteTools", "apply_remote", "load_remote_plan", "remote_items"]


@dataclass
class RemoteTools:
    """What a remote run works with; each defaults to what the host's config names (tests pass their own)."""

    target: RemoteTarget
    tier: TierStore

    @classmethod
    def of(cls, config: AppConfig, target: RemoteTarget | None = None, tier: TierStore | None = None) -> RemoteTools:
        target = target or target_from_config(config)
        return cls(target, tier or TierStore.open(target.location, target.storage_options))


def load_remote_plan(config: AppConfig, store: TableStore, plan_id: str, *, plan_file: str | Path | None = None,
                     now: datetime | None = None) -> tuple[GcPlan, approval.PlanRecord]:
    """The plan, re-verified as :func:`pipelines.execute.plan_source.load_executable_plan` does, for the remote
    part: signatures must cover broker :data:`REMOTE_BROKER_ID`; the cluster id is the signed plan's (there is no
    ``meta.properties`` here), the cluster name this host's. Raises PlanError / PolicyViolation naming the rule."""
    record, plan = recorded_plan(store, plan_id, plan_file)
    host = HostFacts(config.cluster, None, REMOTE_BROKER_ID)
    refusal = refusal_of(config, store, record, plan, host, now or datetime.now(timezone.utc))
    if refusal is not None:
        raise PolicyViolation(refusal)
    return plan, record


def remote_items(plan: GcPlan) -> list[PlanItem]:
    return sorted((i for i in plan.items if i.is_remote), key=lambda i: i.item_id)


def _path(item: PlanItem) -> str:
    keys = planned(item)
    first = min(keys) if keys else ""
    return f"{first}" + (f" (+{len(keys) - 1} keys)" if len(keys) > 1 else "")


def _info(k) -> ObjectInfo:  # a RemoteKey as the facts a copy is verified against
    return ObjectInfo(k.size, k.etag, k.last_modified_ms)


def apply_remote(config: AppConfig, store: TableStore, plan_id: str, *, execute: bool = False,
                 plan_file: str | Path | None = None, now: datetime | None = None,
                 tools: RemoteTools | None = None, controller: ControllerCheck | None = None,
                 metadata: RemoteMetadataImage | None = None) -> ApplyReport:
    """Apply (or, by default, dry-run) the remote items of an approved plan; the report is for broker
    :data:`REMOTE_BROKER_ID`. Raises as :func:`pipelines.execute.apply.apply_plan` does."""
    clock = now or datetime.now(timezone.utc)
    plan, record = load_remote_plan(config, store, plan_id, plan_file=plan_file, now=clock)
    rules.check_plan(plan, config.policy)
    tools = tools or RemoteTools.of(config)
    host = HostRules.from_config(config, clock)
    items = remote_items(plan)
    report = ApplyReport(plan_id, REMOTE_BROKER_ID, execute)
    if controller is None:
        controller = load_controller_check(config.metadata)
    if metadata is None:
        metadata = load_remote_metadata(tools.target)
    journal = open_journal(config, plan.cluster)
    if not execute:
        report.items += _survey(items, histories(journal, plan_id), plan, tools, controller, metadata, host)
        report.problems += journal.problems
        return report
    try:
        with remote_lock(config, tools.tier, tools.target, "apply"):
            history = histories(journal, plan_id)
            report.problems += journal.problems
            _survey(items, history, plan, tools, controller, metadata, host)  # budgets, before anything moves
            broker_status.record(store, plan_id, REMOTE_BROKER_ID, approval.APPLYING)
            journal.write(plan_id, "", "run", INTENT, content_hash=record.content_hash, items=len(items))
            for item in items:
                report.items.append(_apply_segment(item, plan, history.get((plan_id, item.item_id),
                                                                           SegmentHistory()),
                                                   journal, tools, controller, metadata, host))
            journal.write(plan_id, "", "run", DONE, done=report.count("quarantined", "already_done"),
                          skipped=report.count("skipped"), failed=report.count("failed"))
    except OSError as exc:
        raise HostIOError(f"remote executor: a write failed ({exc.strerror or exc}: {exc.filename or ''}); every "
                          f"completed step is journalled in {journal.path}, rerun to resume") from None
    report.problems += _versioning_note(tools.tier, report.bytes_quarantined)
    report.status = _record_final(store, report)
    report.journal_mirrored = mirror_best_effort(journal, store)
    return report


def _versioning_note(tier: TierStore, deleted: int) -> list[str]:
    if not deleted:
        return []
    try:
        status = tier.versioning()
    except Exception as exc:  # any store error: the note says we could not tell
        return [f"could not tell whether the bucket is versioned ({type(exc).__name__}): if it is, the deleted "
                f"originals ({deleted:,} bytes) remain as noncurrent versions, not freed"]
    if status is None:
        return []
    return [f"the bucket's versioning is {status}: the deleted originals ({deleted:,} bytes) remain as noncurrent "
            "versions and are not freed until a lifecycle rule expires them"]


def _record_final(store: TableStore, report: ApplyReport) -> str:
    done = report.count("quarantined", "already_done")
    state = (approval.APPLIED if done == len(report.items) else approval.PARTIALLY_APPLIED if done
             else approval.FAILED)
    try:
        broker_status.record(store, report.plan_id, REMOTE_BROKER_ID, state,
                             comment=f"remote: {done} done, {report.count('skipped')} skipped, "
                                     f"{report.count('failed')} failed")
    except (OSError, PlanError, PolicyViolation) as exc:
        return f"{state} (not recorded in the warehouse: {exc})"
    return state


def _survey(items: list[PlanItem], history: dict[tuple[str, str], SegmentHistory], plan: GcPlan,
            tools: RemoteTools, controller: ControllerCheck, metadata: RemoteMetadataImage | None,
            host: HostRules) -> list[ItemOutcome]:
    """What a run would do to each segment now, checked against the host's budgets on re-listed bytes."""
    out: list[ItemOutcome] = []
    for item in items:
        h = history.get((plan.plan_id, item.item_id), SegmentHistory())
        if h.state is not None:
            done = h.state == QUARANTINED
            out.append(ItemOutcome(item.item_id, _path(item), "already_done" if done else "skipped",
                                   "" if done else f"{h.state} earlier", item.bytes if done else 0,
                                   rule="" if done else "journal"))
            continue
        try:
            v = verify_segment(item, plan, tools.target, tools.tier, controller, metadata, host, h.deleted())
        except ItemSkipped as exc:
            out.append(ItemOutcome(item.item_id, _path(item), "skipped", str(exc), rule=exc.rule))
            continue
        out.append(ItemOutcome(item.item_id, _path(item), "would_quarantine",
                               bytes=sum(i.size for i in v.now.values())))
    counted = [o for o in out if o.action in ("would_quarantine", "already_done")]
    total = sum(o.bytes for o in counted)
    if host.max_broker_items is not None and len(counted) > host.max_broker_items:
        raise rules.refuse("max_broker_items", f"the remote part has {len(counted)} segments, this host's budget is "
                           f"{host.max_broker_items}")
    if host.max_broker_bytes is not None and total > host.max_broker_bytes:
        raise rules.refuse("max_broker_bytes", f"the remote part reclaims {total} bytes (re-listed), this host's "
                           f"budget is {host.max_broker_bytes}")
    return out


def _fail(journal: Journal, plan_id: str, item: PlanItem, rule: str, reason: str) -> ItemOutcome:
    journal.write(plan_id, item.item_id, "item", FAILED, rule=rule, reason=reason)
    return ItemOutcome(item.item_id, _path(item), "failed", reason, rule=rule)


def _apply_segment(item: PlanItem, plan: GcPlan, h: SegmentHistory, journal: Journal, tools: RemoteTools,
                   controller: ControllerCheck, metadata: RemoteMetadataImage | None,
                   host: HostRules) -> ItemOutcome:
    pid, iid = plan.plan_id, item.item_id
    target, tier = tools.target, tools.tier
    if h.state is not None:
        done = h.state == QUARANTINED
        return ItemOutcome(iid, _path(item), "already_done" if done else "skipped", "" if done else
                           f"{h.state} earlier", item.bytes if done else 0, rule="" if done else "journal")
    deleted = h.deleted()
    for key in sorted(h.delete_intended()):  # a crash between a delete's intent and its record
        if tier.head(key) is None:
            journal.write(pid, iid, "delete", DONE, key=key, recovered=True)
            deleted.add(key)
    journal.write(pid, iid, "item", INTENT, keys=len(planned(item)))
    try:
        verify_segment(item, plan, target, tier, controller, metadata, host, deleted)
    except ItemSkipped as exc:
        journal.write(pid, iid, "item", SKIPPED, rule=exc.rule, reason=str(exc))
        return ItemOutcome(iid, _path(item), "skipped", str(exc), rule=exc.rule)
    keys = planned(item)
    copied = h.copied()
    for key in sorted(keys):
        if key in deleted:
            if key not in copied:  # never: a delete is journalled only after its copy.done
                return _fail(journal, pid, item, "journal", f"key {key!r} is journalled deleted without a copy")
            continue
        dst = target.quarantine_key(pid, key)
        if key in copied and copy_verdict(tier, key, _info(keys[key]), dst)[0] is None:
            continue
        journal.write(pid, iid, "copy", INTENT, key=key, dst=dst)
        tier.copy(key, dst)
        fault_point("copy.performed")
        why, facts = copy_verdict(tier, key, _info(keys[key]), dst)
        if why is not None:
            journal.write(pid, iid, "copy", FAILED, key=key, dst=dst, reason=why)
            return _fail(journal, pid, item, "copy_unverified", f"{why}; the original is kept")
        journal.write(pid, iid, "copy", DONE, key=key, dst=dst, **facts)
    for key in sorted(keys):
        if key in deleted:
            continue
        now = tier.head(key)
        if now != _info(keys[key]):
            return _fail(journal, pid, item, "changed", f"key {key!r} changed after its copy was verified (now "
                         f"{now}); the original is kept, the copy stays in the quarantine")
        journal.write(pid, iid, "delete", INTENT, key=key)
        try:
            tier.delete(key, keys[key].etag)
        except ObjectChanged as exc:
            journal.write(pid, iid, "delete", FAILED, key=key, reason=str(exc))
            return _fail(journal, pid, item, "changed", f"{exc}; the original is kept, the copy stays in the "
                         "quarantine")
        fault_point("delete.performed")
        journal.write(pid, iid, "delete", DONE, key=key)
    journal.write(pid, iid, "item", DONE, bytes=item.bytes)
    return ItemOutcome(iid, _path(item), "quarantined", bytes=item.bytes,
                       quarantined_path=target.quarantine_key(pid, min(keys)))
