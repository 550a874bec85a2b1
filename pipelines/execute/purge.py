"""Purge: delete quarantined items older than the retention, paced, and measure what the filesystem got back.

Only what the executor itself put in quarantine is ever deleted: an item dir found by walking this broker's validated
quarantine areas (``O_NOFOLLOW`` at every step), whose manifest agrees with its location, and which this broker's
journal records as moved there by the executor (``rename.done``: same destination, same fingerprint). Its age is the
journal's time of that move, and the copy must still be what its manifest recorded
(:func:`~pipelines.execute.quarantine.copy_mismatch`: the directory's identity, the topic id in its
``partition.metadata``, its topic and partition, its fingerprint), each difference a failure naming its rule
(``identity_changed``, ``topic_id_changed``, ``partition_changed``, ``fingerprint_changed``). A manifest of version 1
records no identity: purge refuses it (``manifest_without_identity``; restore it, or remove it by hand). Removal
opens the data dir from the area's descriptor, deletes only if it is still the directory checked, and never follows
a symlink (a planted link is removed, its target never touched); the data dir goes first, then the manifest, so a
crash mid-purge leaves a manifest whose data dir is (partly) gone, and the journal's ``purge.intent`` lets the next
purge finish it. The retention can be shortened with ``--older-than`` but never below
``executor.purge_retention_floor_ms`` of the host's config. Pacing sleeps between files to stay under
``purge_bytes_per_second`` / ``purge_files_per_second``. Reclaimed bytes are measured per filesystem as the change
in ``statvfs`` free space before and after; other writers disturb that number, so the expected bytes (manifest
sizes) are reported beside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.errors import PipelinesError
from pipelines.execute.apply import broker_config, close_areas, local_path, quarantine_areas, state_dir
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, INTENT, QUARANTINED, Journal, JournalRecord, item_state
from pipelines.execute.locks import executor_lock
from pipelines.execute.quarantine import (
    QuarantineArea,
    QuarantinedItem,
    copy_mismatch,
    journal_disagrees,
    remove_item_dir,
)
from pipelines.execute.safe_fs import is_real_dir, lstat_at, remove_tree_at
from pipelines.plan import approval, broker_status
from pipelines.plan import policy as rules
from pipelines.progress import advance
from pipelines.tables.base import TableStore


@dataclass
class PurgedItem:
    plan_id: str
    item_id: str
    path: str
    expected_bytes: int
    files: int


@dataclass
class PurgeReport:
    broker_id: int
    executed: bool
    items: list[PurgedItem] = field(default_factory=list)
    kept: int = 0
    expected_bytes: int = 0
    measured_bytes: dict[str, int] = field(default_factory=dict)  # per filesystem (a log dir naming it)
    failed: dict[str, str] = field(default_factory=dict)  # "<plan>/<item>" → why it was left alone
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def free_bytes(path: str | os.PathLike[str]) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class Pacer:
    """Sleeps so that bytes/s and files/s stay under their limits (None: unlimited)."""

    def __init__(self, bytes_per_s: int | None, files_per_s: int | None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.bytes_per_s, self.files_per_s = bytes_per_s, files_per_s
        self.sleep, self.clock = sleep, clock
        self.start = clock()
        self.bytes = self.files = 0

    def account(self, size: int) -> None:
        self.bytes += size
        self.files += 1
        need = 0.0
        if self.bytes_per_s:
            need = max(need, self.bytes / self.bytes_per_s)
        if self.files_per_s:
            need = max(need, self.files / self.files_per_s)
        ahead = need - (self.clock() - self.start)
        if ahead > 0:
            self.sleep(ahead)


def _check(q: QuarantinedItem, broker_id: int, history: list[JournalRecord], cutoff: datetime) -> tuple[str, str]:
    """``("purge" | "finish" | "keep" | "fail", why)`` for one item dir."""
    m = q.manifest
    if m is None:
        return "fail", str(q.error)
    if m.broker_id != broker_id:
        return "fail", f"manifest names broker {m.broker_id}; not this broker's to purge"
    state, moved = item_state(history)
    if moved is None or moved.detail.get("dst") != str(q.data_path) \
            or moved.detail.get("fingerprint", m.fingerprint) != m.fingerprint:
        return "fail", "this broker's journal records no such move by the executor"
    if state != QUARANTINED:
        return "fail", f"{state} earlier, yet still in quarantine"
    if datetime.fromisoformat(moved.at) > cutoff:
        return "keep", ""
    if not m.has_identity:
        return "fail", (f"[manifest_without_identity] manifest version {m.version} of {q.item_dir} records no "
                        "directory identity, so purge cannot prove it deletes what the executor moved; restore the "
                        "item, or check and remove it by hand")
    disagreement = journal_disagrees(m, moved.detail)
    if disagreement:
        return "fail", f"[identity_changed] {disagreement}"
    with q.open_item_dir() as fd:
        data = lstat_at(fd, m.dir_name)
    interrupted = any(r.step == "purge" and r.state == INTENT for r in history)
    if data is None:
        return ("finish", "") if interrupted else ("fail", f"{q.data_path} is missing")
    if not is_real_dir(data):
        return "fail", f"{q.data_path} is not a directory"
    try:
        mismatch = copy_mismatch(q, check_content=not interrupted)  # a half-deleted copy keeps its identity
    except OSError as exc:
        return "fail", f"[unreadable] {q.data_path}: {exc.strerror or exc}; left for an operator"
    if mismatch is not None:
        return "fail", f"[{mismatch[0]}] {mismatch[1]}; left for an operator"
    return "purge", ""


def purge(config: AppConfig, broker_id: int, *, older_than_ms: int | None = None, execute: bool = False,
          now: datetime | None = None, sleep: Callable[[float], None] = time.sleep,
          store: TableStore | None = None) -> PurgeReport:
    """Delete (``execute=True``) or list quarantined items of ``broker_id`` older than the retention.

    ``store``: where to record the broker's ``purged`` state for each plan it no longer holds anything of.

    Raises:
        PolicyViolation: ``older_than_ms`` is below the host's retention floor.
        QuarantineError: a quarantine area is unsafe.
    """
    floor = config.executor.purge_retention_floor_ms
    retention_ms = config.executor.purge_retention_ms if older_than_ms is None else older_than_ms
    if retention_ms < floor:
        raise rules.refuse("purge_retention_floor", f"retention {retention_ms} ms is below the host's floor "
                           f"executor.purge_retention_floor_ms = {floor} ms")
    broker = broker_config(config, broker_id)
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(milliseconds=retention_ms)
    report = PurgeReport(broker_id, execute)
    sdir = state_dir(config, broker)
    areas = quarantine_areas(config, [local_path(d) for d in broker.log_dirs], create=False)
    try:
        return _purge(config, areas, report, sdir, cutoff, sleep, store)
    finally:
        close_areas(areas)


def _purge(config: AppConfig, areas: dict[str, QuarantineArea | None], report: PurgeReport, sdir: Path,
           cutoff: datetime, sleep: Callable[[float], None], store: TableStore | None) -> PurgeReport:
    broker_id, execute = report.broker_id, report.executed
    found = [q for area in areas.values() if area is not None for q in area.scan()]
    if not found:
        return report
    with executor_lock(sdir, broker_id) if execute else nullcontext():
        journal = Journal(sdir, config.cluster, broker_id)
        histories = {pid: journal.last_by_item(pid) for pid in {q.plan_id for q in found}}
        report.problems += journal.problems
        due: list[tuple[QuarantinedItem, str]] = []
        for q in found:
            verdict, why = _check(q, broker_id, histories[q.plan_id].get(q.item_id, []), cutoff)
            if verdict == "keep":
                report.kept += 1
            elif verdict == "fail":
                report.failed[f"{q.plan_id}/{q.item_id}"] = why
            else:
                m = q.manifest
                assert m is not None
                due.append((q, verdict))
                report.items.append(PurgedItem(q.plan_id, q.item_id, str(q.item_dir), m.bytes, len(m.files)))
                report.expected_bytes += m.bytes
        if not execute or not due:
            return report
        pacer = Pacer(config.executor.purge_bytes_per_second, config.executor.purge_files_per_second, sleep=sleep)
        before = {str(q.area.log_dir): free_bytes(q.area.log_dir) for q, _ in due}
        purged = purged_bytes = 0
        for q, verdict in due:
            m = q.manifest
            assert m is not None
            if verdict == "purge":
                journal.write(q.plan_id, q.item_id, "purge", INTENT, path=str(q.item_dir))
            try:
                with q.open_item_dir() as fd:
                    if lstat_at(fd, m.dir_name) is not None:
                        remove_tree_at(fd, m.dir_name, pacer.account, (q.area.device, m.inode or 0))
                fault_point("purge.performed")
                remove_item_dir(q)
            except (OSError, PipelinesError) as exc:
                report.failed[f"{q.plan_id}/{q.item_id}"] = f"removal stopped: {exc}"
                continue
            journal.write(q.plan_id, q.item_id, "purge", DONE, bytes=m.bytes)
            purged += 1
            purged_bytes += m.bytes
            advance(purged, len(due), unit="items purged", size=purged_bytes)
        os.sync()
        report.measured_bytes = {d: free_bytes(d) - b for d, b in before.items()}
        if store is not None:
            left = {q.plan_id for area in areas.values() if area is not None for q in area.scan()}
            _record_states(store, broker_id, {q.plan_id for q, _ in due} - left, report)
    return report


def _record_states(store: TableStore, broker_id: int, plan_ids: set[str],
                   report: PurgeReport) -> None:
    """``purged`` for this broker in each plan of which nothing is left in its quarantine."""
    for plan_id in sorted(plan_ids):
        try:
            broker_status.record(store, plan_id, broker_id, approval.PURGED,
                                 comment=f"broker {broker_id}: purged")
        except (OSError, PipelinesError) as exc:
            report.problems.append(f"plan {plan_id}: purged state not recorded in the warehouse: {exc}")
