"""Restore: move quarantined items back to where they came from, and only there.

An item comes back only when everything agrees: it was found by walking this broker's validated quarantine areas
(never by a path a manifest names), its manifest is bound to the content hash of the plan in the warehouse, this
broker's journal records that the executor moved exactly this item there (``rename.done``, same destination, same
fingerprint), the plan lists the item for this broker with the same dir and fingerprint, the copy still matches its
manifest (no symlink inside), and the original name is free in the log dir it came from. "Matches its manifest"
is :func:`~pipelines.execute.quarantine.copy_mismatch`, read through a descriptor of the copy: the recorded identity
(inode; version 1 manifests recorded none and are restored without it), the topic id in its ``partition.metadata``,
the topic and partition, the fingerprint; any difference fails the item naming its rule (``identity_changed``,
``topic_id_changed``, ...). The rename back is bound to the directory checked: the name must still point at it
before the rename, and what arrives in the log dir must be it, else it goes back into the quarantine. The rename
back never replaces anything (``RENAME_NOREPLACE``). Needs the same locks as an apply: the broker must be down (Kafka's
``.lock``) and no other executor running. Journalled ``restore.intent`` / ``restore.done``; the manifest is removed
last. A rerun after a crash sees the dir back in place (restore done) or still quarantined (redo).

An item that fails a check is reported with its reason and left where it is; the others proceed.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.errors import PipelinesError
from pipelines.execute.apply import broker_config, close_areas, local_path, quarantine_areas, state_dir
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import (
    DONE,
    FAILED,
    INTENT,
    QUARANTINED,
    RESTORED,
    Journal,
    JournalRecord,
    item_state,
)
from pipelines.execute.locks import executor_lock, kafka_dir_lock
from pipelines.execute.preconditions import normalise_fingerprint
from pipelines.execute.quarantine import (
    QuarantineArea,
    QuarantinedItem,
    copy_mismatch,
    journal_disagrees,
    remove_item_dir,
)
from pipelines.execute.safe_fs import identity, is_real_dir, lstat_at, open_child_dir, open_dir, rename_noreplace
from pipelines.plan import approval, broker_status
from pipelines.plan.model import GcPlan
from pipelines.tables.base import TableStore


@dataclass
class RestoreReport:
    """Per broker: items restored (dry run: that would be), skipped (a state that may change: the name is taken,
    already purged), failed (a check refused the item), and each item's original path."""

    plan_id: str
    broker_id: int
    restored: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    executed: bool = True
    status: str | None = None
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mismatch_at(q: QuarantinedItem, dir_fd: int, name: str) -> str | None:
    """``[rule] why`` when ``name`` under ``dir_fd`` is not the copy the manifest recorded, None when it is."""
    try:
        fd = open_child_dir(dir_fd, name)
    except OSError as exc:
        return f"[identity_changed] {name} cannot be opened as a directory without following links: {exc.strerror}"
    try:
        found = copy_mismatch(q, data_fd=fd)
    except OSError as exc:
        return f"[unreadable] {name}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    return None if found is None else f"[{found[0]}] {found[1]}"


def _verdict(q: QuarantinedItem, plan: GcPlan, content_hash: str, broker_id: int,
             history: list[JournalRecord]) -> tuple[str, str]:
    """``("rename", "")``, ``("finish", "")`` (renamed back before a crash), ``("cleanup", "")`` (journalled back
    before a crash), ``("skip", why)`` or ``("fail", why)``."""
    m = q.manifest
    if m is None:
        return "fail", str(q.error)
    if m.content_hash != content_hash:
        return "fail", f"manifest is bound to content {m.content_hash}, the plan is {content_hash}"
    item = next((i for i in plan.items if i.item_id == m.item_id), None)
    if item is None or item.broker_id != broker_id or item.dir_name != m.dir_name \
            or item.log_dir.rstrip("/") != str(q.area.log_dir):
        return "fail", "the plan lists no such item for this broker, log dir and dir name"
    if m.broker_id != broker_id or normalise_fingerprint(item.fingerprint) != m.fingerprint:
        return "fail", "manifest disagrees with the plan item (broker or fingerprint)"
    state, moved = item_state(history)
    if moved is None or moved.detail.get("dst") != str(q.data_path) \
            or moved.detail.get("fingerprint", m.fingerprint) != m.fingerprint:
        return "fail", "this broker's journal records no such move by the executor"
    if journal_disagrees(m, moved.detail):
        return "fail", f"[identity_changed] {journal_disagrees(m, moved.detail)}"
    with q.open_item_dir() as qfd, open_dir(q.area.log_dir) as lfd:
        data, original = lstat_at(qfd, m.dir_name), lstat_at(lfd, m.dir_name)
        if state == RESTORED:  # moved back before a crash; only the manifest is left to remove
            return ("cleanup", "") if data is None else ("fail", f"restored earlier, yet {q.data_path} exists")
        if state != QUARANTINED:
            return "skip", f"{state} earlier"
        if data is None:
            if is_real_dir(original) and _mismatch_at(q, lfd, m.dir_name) is None:
                return "finish", ""
            return "skip", f"{q.data_path} is gone (purged?)"
        if not is_real_dir(data):
            return "fail", f"{q.data_path} is not a directory"
        if original is not None:
            return "skip", f"original path {q.original_path} is taken"
        why = _mismatch_at(q, qfd, m.dir_name)
    if why is not None:
        return "fail", f"{q.data_path} no longer matches its manifest: {why}"
    return "rename", ""


def restore(config: AppConfig, store: TableStore, plan_id: str, broker_id: int, *, item_id: str | None = None,
            execute: bool = False) -> RestoreReport:
    """Move (``execute=True``) the plan's quarantined items on ``broker_id`` back, or by default, like ``apply_plan``
    and ``purge``, only report what would happen (no locks, no journal, nothing changed).

    Raises:
        PlanError: no such plan in the warehouse (or its stored content does not match its hash).
        QuarantineError: a quarantine area is unsafe (symlinked, foreign owner, writable by others ...).
    """
    record = approval.get_plan(store, plan_id)
    record.plan()
    broker = broker_config(config, broker_id)
    report = RestoreReport(plan_id, broker_id, executed=execute)
    sdir = state_dir(config, broker)
    areas = quarantine_areas(config, [local_path(d) for d in broker.log_dirs], create=False)
    try:
        return _restore(config, store, areas, record, sdir, item_id, report)
    finally:
        close_areas(areas)


def _restore(config: AppConfig, store: TableStore, areas: dict[str, QuarantineArea | None],
             record: approval.PlanRecord, sdir: Path, item_id: str | None, report: RestoreReport) -> RestoreReport:
    plan, plan_id, broker_id, execute = record.plan(), report.plan_id, report.broker_id, report.executed
    found = [q for area in areas.values() if area is not None for q in area.scan(plan_id)
             if item_id in (None, q.item_id)]
    for q in found:
        report.paths[q.item_id] = str(q.original_path) if q.manifest else str(q.item_dir)
    if not execute:
        journal = Journal(sdir, config.cluster, broker_id)
        history = journal.last_by_item(plan_id)
        for q in found:
            _note(report, q.item_id, *_verdict(q, plan, record.content_hash, broker_id, history.get(q.item_id, [])))
        report.problems += journal.problems
        return report
    if not found:
        return report
    with executor_lock(sdir, broker_id):
        locks = []
        try:
            for d in sorted({str(q.area.log_dir) for q in found}):
                locks.append(kafka_dir_lock(d).acquire())
            journal = Journal(sdir, config.cluster, broker_id)
            history = journal.last_by_item(plan_id)
            report.problems += journal.problems
            for q in found:
                verdict, reason = _verdict(q, plan, record.content_hash, broker_id, history.get(q.item_id, []))
                if verdict in ("rename", "finish", "cleanup"):
                    changed = _move_back(journal, q, verdict)
                    if changed is not None:
                        verdict, reason = "fail", changed
                _note(report, q.item_id, verdict, reason)
        finally:
            for lock in reversed(locks):
                lock.release()
        still = any(area.scan(plan_id) for area in areas.values() if area is not None)
        report.status = None if still else _record_state(store, report, Journal(sdir, config.cluster, broker_id),
                                                         plan)
    return report


def _note(report: RestoreReport, item_id: str, verdict: str, reason: str) -> None:
    if verdict in ("rename", "finish", "cleanup"):
        report.restored.append(item_id)
    elif verdict == "skip":
        report.skipped[item_id] = reason
    else:
        report.failed[item_id] = reason


def _move_back(journal: Journal, q: QuarantinedItem, verdict: str) -> str | None:
    """Move the checked copy back (bound to its identity); None when done, else why it stayed in quarantine."""
    m = q.manifest
    assert m is not None
    if verdict == "rename":
        journal.write(m.plan_id, m.item_id, "restore", INTENT, src=str(q.data_path), dst=str(q.original_path))
        with q.open_item_dir() as qfd, open_dir(q.area.log_dir) as lfd:
            changed = _rename_checked(q, qfd, lfd)
            if changed is not None:
                journal.write(m.plan_id, m.item_id, "restore", FAILED, rule="identity_changed", reason=changed)
                return changed
            fault_point("restore.performed")
            os.fsync(lfd)
            os.fsync(qfd)
    if verdict != "cleanup":
        journal.write(m.plan_id, m.item_id, "restore", DONE)
    remove_item_dir(q)
    return None


def _rename_checked(q: QuarantinedItem, qfd: int, lfd: int) -> str | None:
    """Rename the copy into the log dir only if its name still points at a copy that matches the manifest, and
    check that what arrived is that copy (else it goes back into the quarantine)."""
    m = q.manifest
    assert m is not None
    name = m.dir_name
    fd = open_child_dir(qfd, name)
    try:
        checked = identity(os.fstat(fd))
        found = copy_mismatch(q, data_fd=fd)
    finally:
        os.close(fd)
    if found is not None:
        return f"[{found[0]}] {found[1]}"
    st = lstat_at(qfd, name)
    if st is None or identity(st) != checked:
        return f"[identity_changed] {q.data_path} was exchanged after it was checked; nothing moved"
    fault_point("restore.checked")
    rename_noreplace(qfd, name, lfd, name)
    arrived = lstat_at(lfd, name)
    if arrived is not None and identity(arrived) == checked:
        return None
    why = f"[identity_changed] {q.original_path} was exchanged during the rename back"
    if arrived is None:
        return why
    try:
        rename_noreplace(lfd, name, qfd, name)
    except OSError as exc:
        return f"{why}; what arrived could not be put back into the quarantine: {exc.strerror or exc}"
    return f"{why}; what arrived was put back into the quarantine"


def _record_state(store: TableStore, report: RestoreReport, journal: Journal, plan: GcPlan) -> str | None:
    """``restored`` (or ``purged``, when some items were purged) for this broker, called once nothing of the plan is
    left in its quarantine areas; reported, not raised, when the warehouse cannot record it."""
    history = journal.last_by_item(plan.plan_id)
    states = [item_state(history.get(i.item_id, []))[0] for i in plan.items if i.broker_id == report.broker_id]
    if QUARANTINED in states or RESTORED not in states:
        return None
    state = approval.RESTORED if all(s in (RESTORED, None) for s in states) else approval.PURGED
    try:
        return broker_status.record(store, plan.plan_id, report.broker_id, state,
                                    comment=f"broker {report.broker_id}: {len(report.restored)} restored").status
    except (OSError, PipelinesError) as exc:
        return f"not recorded in the warehouse: {exc}"
