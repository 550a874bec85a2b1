"""``restore PLAN --remote`` and ``purge --remote``: act only on what this executor's journal says it quarantined.

Restore, per segment the journal records as quarantined: every key's quarantined copy must still be the copy that
was verified (size and ETag as journalled, else ``copy_changed``); a key whose original name is taken again is
never replaced (``occupied``); each key is copied back, the restored object verified against the quarantined copy,
and only then the quarantined copy removed. Purge deletes the quarantined copies of segments quarantined longer
than the retention (``--older-than`` never below ``executor.purge_retention_floor_ms``), each checked the same way
first. Both are journalled step by step, take the remote executor's lock and record the remote part's state.
"""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime, timedelta, timezone
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.execute.apply import mirror_best_effort
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, INTENT, Journal
from pipelines.execute.purge import PurgedItem, PurgeReport
from pipelines.execute.restore import RestoreReport
from pipelines.execute_remote.apply import RemoteTools, _versioning_note
from pipelines.execute_remote.remote_journal import (
    PURGED,
    QUARANTINED,
    SegmentHistory,
    histories,
    open_journal,
    remote_lock,
)
from pipelines.execute_remote.tier_store import ObjectChanged, TierStore, copy_verdict
from pipelines.plan import approval, broker_status
from pipelines.plan import policy as rules
from pipelines.plan.model import REMOTE_BROKER_ID
from pipelines.tables.base import TableStore

__all__ = ["purge_remote", "restore_remote"]


def _copy_problem(tier: TierStore, key: str, facts: dict[str, Any]) -> str | None:
    """Why the quarantined copy of ``key`` is not the one that was verified (``facts`` from ``copy.done``)."""
    dst = str(facts.get("dst", ""))
    got = tier.head(dst)
    if got is None:
        return f"the quarantined copy {dst!r} of {key!r} is gone"
    if got.size != facts.get("size") or got.etag != facts.get("etag"):
        return (f"the quarantined copy {dst!r} changed: {got.size} bytes, ETag {got.etag}; verified "
                f"{facts.get('size')} bytes, ETag {facts.get('etag')}")
    if facts.get("sha256") and tier.digest(dst) != facts["sha256"]:
        return f"the quarantined copy {dst!r} no longer has the verified sha256"
    return None


def restore_remote(config: AppConfig, store: TableStore, plan_id: str, *, item_id: str | None = None,
                   execute: bool = False, tools: RemoteTools | None = None) -> RestoreReport:
    """Restore (or, by default, dry-run) the plan's quarantined remote segments. Raises PlanError (exit 5) for an
    unknown plan."""
    plan = approval.get_plan(store, plan_id).plan()
    tools = tools or RemoteTools.of(config)
    journal = open_journal(config, plan.cluster)
    report = RestoreReport(plan_id, REMOTE_BROKER_ID, executed=execute)
    items = {i.item_id: i for i in plan.items if i.is_remote and (item_id is None or i.item_id == item_id)}
    if not execute:
        for iid, h in sorted(histories(journal, plan_id).items()):
            if iid[1] in items and h.state == QUARANTINED:
                report.paths[iid[1]] = min(h.copied(), default=iid[1])
                why = _restore_blocker(tools.tier, h)
                if why is None:
                    report.restored.append(iid[1])
                else:
                    report.skipped[iid[1]] = why
        report.problems += journal.problems
        return report
    with remote_lock(config, tools.tier, tools.target, "restore"):
        history = histories(journal, plan_id)
        report.problems += journal.problems
        for (_, iid), h in sorted(history.items()):
            if iid not in items or h.state != QUARANTINED:
                continue
            report.paths[iid] = min(h.copied(), default=iid)
            _restore_segment(journal, plan_id, iid, h, tools.tier, report)
        now = histories(journal, plan_id)
        states = [now.get((plan_id, i.item_id), SegmentHistory()).state for i in plan.items if i.is_remote]
        if report.restored and QUARANTINED not in states:
            report.status = _record(store, plan_id, approval.RESTORED)
    report.problems.append(f"journal mirror: {mirror_best_effort(journal, store)}")
    return report


def _record(store: TableStore, plan_id: str, state: str) -> str:
    try:
        return broker_status.record(store, plan_id, REMOTE_BROKER_ID, state).status
    except Exception as exc:  # the store changed; the journal says how
        return f"{state} (not recorded in the warehouse: {exc})"


def _restore_blocker(tier: TierStore, h: SegmentHistory) -> str | None:
    """Why a segment cannot be restored now (checked for every key before any is copied back)."""
    restored = h.done("restore_copy")
    for key, facts in sorted(h.copied().items()):
        if key in h.done("restore_delete"):
            continue
        problem = _copy_problem(tier, key, facts)
        if problem is not None:
            return f"[copy_changed] {problem}"
        if key in restored or tier.head(key) is None:
            continue
        if key not in h.intended("restore_copy"):
            return f"[occupied] {key!r} exists again; a restore never replaces an object"
        # An interrupted copy back: the object there is ours only if it is the quarantined copy's twin.
        src = tier.head(str(facts["dst"]))
        if src is None or copy_verdict(tier, str(facts["dst"]), src, key)[0] is not None:
            return (f"[occupied] {key!r} is not the quarantined copy an interrupted restore began to copy back "
                    "(another writer, or a partial copy): a restore never replaces an object")
    return None


def _restore_segment(journal: Journal, pid: str, iid: str, h: SegmentHistory, tier: TierStore,
                     report: RestoreReport) -> None:
    why = _restore_blocker(tier, h)
    if why is not None:
        report.failed[iid] = why
        return
    for key, facts in sorted(h.copied().items()):
        dst = str(facts["dst"])
        if key in h.done("restore_delete"):
            continue
        if key not in h.done("restore_copy"):
            journal.write(pid, iid, "restore_copy", INTENT, key=key, src=dst)
            tier.copy(dst, key)
            fault_point("restore_copy.performed")
            src = tier.head(dst)
            problem = "the quarantined copy is gone" if src is None else copy_verdict(tier, dst, src, key)[0]
            if problem is not None:
                report.failed[iid] = f"[restore_unverified] {problem}; the quarantined copy is kept"
                return
            journal.write(pid, iid, "restore_copy", DONE, key=key, src=dst)
        journal.write(pid, iid, "restore_delete", INTENT, key=dst)
        tier.delete(dst)
        fault_point("restore_delete.performed")
        journal.write(pid, iid, "restore_delete", DONE, key=key, dst=dst)
    journal.write(pid, iid, "restore", DONE)
    report.restored.append(iid)


def purge_remote(config: AppConfig, *, older_than_ms: int | None = None, execute: bool = False,
                 store: TableStore | None = None, now: datetime | None = None,
                 tools: RemoteTools | None = None) -> PurgeReport:
    """Delete quarantined remote copies past retention (dry run by default). Raises PolicyViolation when
    ``older_than_ms`` is below the host's floor."""
    ex = config.executor
    retention = ex.purge_retention_ms if older_than_ms is None else older_than_ms
    if retention < ex.purge_retention_floor_ms:
        raise rules.refuse("purge_retention_floor", f"--older-than {retention} ms is below this host's floor "
                           f"executor.purge_retention_floor_ms = {ex.purge_retention_floor_ms} ms")
    clock = now or datetime.now(timezone.utc)
    tools = tools or RemoteTools.of(config)
    journal = open_journal(config, config.cluster)
    report = PurgeReport(REMOTE_BROKER_ID, execute)
    with remote_lock(config, tools.tier, tools.target, "purge") if execute else nullcontext():
        due = []
        for (pid, iid), h in sorted(histories(journal).items()):
            at = h.quarantined_at
            if h.state != QUARANTINED or at is None:
                continue
            if clock - datetime.fromisoformat(at) < timedelta(milliseconds=retention):
                report.kept += 1
                continue
            due.append((pid, iid, h))
        report.problems += journal.problems
        for pid, iid, h in due:
            problem = next((p for k, f in sorted(h.copied().items()) if k not in h.done("purge_delete")
                            and (p := _copy_problem(tools.tier, k, f))), None)
            if problem is not None:
                report.failed[f"{pid}/{iid}"] = f"[copy_changed] {problem}"
                continue
            size = sum(int(f.get("size", 0)) for f in h.copied().values())
            if execute and not _purge_copies(journal, pid, iid, h, tools.tier, report):
                continue
            report.items.append(PurgedItem(pid, iid, min(h.copied(), default=iid), size, len(h.copied())))
            report.expected_bytes += size
    if execute and report.items:
        report.problems += _versioning_note(tools.tier, report.expected_bytes)
        if store is not None:
            for pid in sorted({i.plan_id for i in report.items}):
                left = [h.state for (p, _), h in histories(journal, pid).items() if p == pid]
                if QUARANTINED not in left and PURGED in left:
                    _record(store, pid, approval.PURGED)
            report.problems.append(f"journal mirror: {mirror_best_effort(journal, store)}")
    return report


def _purge_copies(journal: Journal, pid: str, iid: str, h: SegmentHistory, tier: TierStore,
                  report: PurgeReport) -> bool:
    """Delete a segment's quarantined copies (on S3 each only if it still has the verified ETag); False when one
    was refused (listed in ``report.failed``)."""
    for key, facts in sorted(h.copied().items()):
        if key in h.done("purge_delete"):
            continue
        journal.write(pid, iid, "purge_delete", INTENT, key=key, dst=facts["dst"])
        try:
            tier.delete(str(facts["dst"]), facts.get("etag"))
        except ObjectChanged as exc:
            report.failed[f"{pid}/{iid}"] = f"[copy_changed] {exc}"
            return False
        fault_point("purge_delete.performed")
        journal.write(pid, iid, "purge_delete", DONE, key=key, dst=facts["dst"])
    journal.write(pid, iid, "purge", DONE, bytes=sum(int(f.get("size", 0)) for f in h.copied().values()))
    return True
