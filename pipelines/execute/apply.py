"""Applying an approved plan on one broker host: verify, lock, journal, quarantine by one rename per item.

Order of an ``--execute`` run: load the approved plan (``plan_source``), check its claims against the host's policy,
bind it to this host (``meta.properties``), re-read the controller, take the executor lock, then Kafka's ``.lock``
of every log dir involved (held until the end), verify every pending item and check the host's per-broker budgets
on what was MEASURED, validate the quarantine areas, record the broker as ``applying``, and for each item: journal
``item.intent``, re-verify every precondition (``preconditions.verify_item``: facts from the disk and the
controller only, read through one descriptor of the directory, whose identity ``(st_dev, st_ino)`` is kept), write
the manifest (with that identity), journal ``rename.intent``, check that the name still points at the verified
directory, rename (never replacing anything), check that what arrived is the verified directory, fsync both
parents, journal ``rename.done`` (with the fingerprint and identity it moved) and ``item.done``. A directory
exchanged for the verified one under its name before the rename is never moved (``identity_changed``); one
exchanged between the check and the rename is moved back at once (``RENAME_NOREPLACE``) and the item fails with
the same rule. A dry run (the default) does the loading, binding and verification only and changes nothing.

Crash recovery: an item whose journal ends in ``rename.intent`` is finished by looking at the disk. If the
quarantine destination exists and is the directory the manifest recorded (identity, topic id, fingerprint), the
rename happened: it is journalled as done; if it is another directory it is moved back and the item fails.
Otherwise the rename did not happen and the item is processed again from scratch (re-verified). An item journalled
``done`` is never touched again, so each item is moved exactly once or not at all. A failed write on the host
(disk full) stops the run with :class:`~pipelines.errors.HostIOError`; a rerun resumes.
"""

from __future__ import annotations

import errno
import os
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig, BrokerConfig
from pipelines.errors import HostIOError, PipelinesError, PreconditionFailed
from pipelines.execute.absence_log import AbsenceLog
from pipelines.execute.broker_entry import broker_config
from pipelines.execute.confine import ConfinementError, check_log_dir
from pipelines.execute.controller_check import ControllerCheck, load_controller_check
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, FAILED, INTENT, SKIPPED, Journal, JournalRecord, item_state
from pipelines.execute.locks import executor_lock, kafka_dir_lock
from pipelines.execute.plan_source import load_executable_plan
from pipelines.execute.preconditions import (
    HostRules,
    ItemSkipped,
    VerifiedItem,
    check_budgets,
    check_host,
    verify_item,
)
from pipelines.execute.quarantine import (
    ManifestFile,
    QuarantineArea,
    QuarantineManifest,
    copy_mismatch,
    write_manifest,
)
from pipelines.execute.safe_fs import Identity, identity, is_real_dir, lstat_at, open_dir, rename_noreplace
from pipelines.plan import approval, broker_status
from pipelines.plan import policy as rules
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.progress import advance
from pipelines.tables.base import TableStore


@dataclass
class ItemOutcome:
    item_id: str
    path: str
    action: str  # quarantined | would_quarantine | already_done | skipped | failed | not_reached
    reason: str = ""
    bytes: int = 0
    quarantined_path: str | None = None
    rule: str = ""


@dataclass
class ApplyReport:
    plan_id: str
    broker_id: int
    executed: bool
    status: str | None = None
    items: list[ItemOutcome] = field(default_factory=list)
    journal_mirrored: str = ""
    problems: list[str] = field(default_factory=list)

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


def host_log_dirs(config: AppConfig) -> list[str]:
    """Every local log dir the config registers, of any broker (a quarantine root may contain none of them)."""
    return [os.path.normpath(d[len("file://"):] if d.startswith("file://") else d)
            for b in config.brokers for d in b.log_dirs if "://" not in d or d.startswith("file://")]


def state_dir(config: AppConfig, broker: BrokerConfig) -> Path:
    """``executor.state_dir``, or ``<first log dir's parent>/.logdir-gc``."""
    if config.executor.state_dir:
        return Path(config.executor.state_dir)
    return Path(local_path(broker.log_dirs[0])).parent / ".logdir-gc"


def quarantine_areas(config: AppConfig, log_dirs: list[str], *, create: bool) -> dict[str, QuarantineArea | None]:
    """log dir → its validated area, holding its descriptor (None: absent and not created); release them with
    :func:`close_areas`. Raises QuarantineError when one is unsafe."""
    registered = host_log_dirs(config)
    out: dict[str, QuarantineArea | None] = {}
    try:
        for d in log_dirs:
            area = QuarantineArea.of(d, config.executor.quarantine_dir_name)
            out[d] = area if area.validate(registered, create=create) else None
    except BaseException:
        close_areas(out)
        raise
    return out


def close_areas(areas: dict[str, QuarantineArea | None]) -> None:
    for area in areas.values():
        if area is not None:
            area.close()


def apply_plan(config: AppConfig, store: TableStore, plan_id: str, broker_id: int, *, execute: bool = False,
               plan_file: str | Path | None = None, now: datetime | None = None, deadline: float | None = None,
               controller: ControllerCheck | None = None) -> ApplyReport:
    """Apply (or, by default, dry-run) the broker's items of an approved plan.

    ``deadline`` is a ``time.monotonic()`` value after which no new item is started (pre-start hook budget).
    ``controller`` defaults to re-reading ``config.metadata`` now.

    Raises:
        PlanError / PolicyViolation: the plan is not executable (not approved, expired, hash mismatch, over the
            host's budgets or protections).
        PreconditionFailed: the host is not the one the plan was made for, the controller cannot be re-read, or
            a quarantine area is unsafe.
        ExecutorBusy: the broker is running or another executor holds the broker's executor lock.
        HostIOError: a write on the host failed mid-run (a rerun resumes).
    """
    plan, record = load_executable_plan(config, store, plan_id, broker_id, plan_file=plan_file, now=now)
    host = HostRules.from_config(config, now or datetime.now(timezone.utc))
    rules.check_plan(plan, config.policy)
    broker = broker_config(config, broker_id)
    registered = {local_path(d) for d in broker.log_dirs}
    report = ApplyReport(plan_id, broker_id, execute)
    items: list[PlanItem] = []
    for item in sorted((i for i in plan.items if i.broker_id == broker_id), key=lambda i: i.item_id):
        if os.path.normpath(item.log_dir) != item.log_dir.rstrip("/") or item.log_dir.rstrip("/") not in registered:
            report.items.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}", "skipped",
                                            f"log dir {item.log_dir} is not registered for broker {broker_id}",
                                            rule="confinement"))
            continue
        try:  # a log dir reached through a link: its items are skipped, its quarantine never opened
            check_log_dir(item.log_dir.rstrip("/"))
        except ConfinementError as exc:
            report.items.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}", "skipped", str(exc),
                                            rule="confinement"))
            continue
        except OSError:
            pass  # a log dir that cannot be looked at: the host binding refuses the run, as before
        items.append(item)
    log_dirs = sorted({i.log_dir.rstrip("/") for i in items})
    for d in log_dirs:
        check_host(plan, broker_id, d, [i for i in items if i.log_dir.rstrip("/") == d])
    sdir = state_dir(config, broker)
    absences = AbsenceLog(sdir, broker_id)
    if controller is None:
        controller = load_controller_check(config.metadata, absences.read())
    report.problems += absences.problems
    if not execute:
        journal = Journal(sdir, plan.cluster, broker_id)
        history = journal.last_by_item(plan_id)
        close_areas(quarantine_areas(config, log_dirs, create=False))
        report.items += _survey(items, history, broker_id, controller, host)
        report.problems += journal.problems
        return report
    with executor_lock(sdir, broker_id):
        locks = []
        areas: dict[str, QuarantineArea | None] = {}
        try:
            for d in log_dirs:
                locks.append(kafka_dir_lock(d).acquire())
            journal = Journal(sdir, plan.cluster, broker_id)
            history = journal.last_by_item(plan_id)
            report.problems += journal.problems
            if host.max_broker_items is not None or host.max_broker_bytes is not None:
                _survey(items, history, broker_id, controller, host)  # refuses over budget before anything moves
            areas = quarantine_areas(config, log_dirs, create=True)
            broker_status.record(store, plan_id, broker_id, approval.APPLYING)
            journal.write(plan_id, "", "run", INTENT, content_hash=record.content_hash, items=len(items))
            moved = 0
            for item in items:
                if deadline is not None and time.monotonic() > deadline:
                    report.items.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}",
                                                    "not_reached", "time budget exhausted"))
                    continue
                area = areas[item.log_dir.rstrip("/")]
                assert area is not None
                report.items.append(_apply_item(item, plan, record.content_hash, history.get(item.item_id, []),
                                                journal, area, broker_id, controller, host))
                moved += report.items[-1].bytes if report.items[-1].action == "quarantined" else 0
                advance(len(report.items), len(items), unit="items applied", size=moved)
            journal.write(plan_id, "", "run", DONE, done=report.count("quarantined", "already_done"),
                          skipped=report.count("skipped"), failed=report.count("failed"))
            absences.add(controller.noticed_absent)
        except OSError as exc:
            raise HostIOError(f"broker {broker_id}: a write on this host failed ({exc.strerror or exc}: "
                              f"{exc.filename or ''}); every completed step is journalled in {sdir}, rerun to "
                              "resume") from None
        finally:
            close_areas(areas)
            for lock in reversed(locks):
                lock.release()
        report.status = _record_final(store, report)
        report.journal_mirrored = mirror_best_effort(journal, store)
    return report


def _survey(items: list[PlanItem], history: dict[str, list[JournalRecord]], broker_id: int,
            controller: ControllerCheck, host: HostRules) -> list[ItemOutcome]:
    """What a run would do to each item now (nothing is changed), checked against the host's budgets over what is
    already quarantined plus what would be, measured on disk. Raises PolicyViolation over budget."""
    outcomes: list[ItemOutcome] = []
    verified: list[VerifiedItem] = []
    for item in items:
        state, moved = item_state(history.get(item.item_id, []))
        if state is not None:
            done = state == "quarantined"
            outcomes.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}",
                                        "already_done" if done else "skipped", "" if done else f"{state} earlier",
                                        int(moved.detail.get("bytes", item.bytes)) if done and moved else 0,
                                        moved.detail.get("dst") if moved else None, "" if done else "journal"))
            continue
        try:
            v = verify_item(item, broker_id, controller, host)
        except ItemSkipped as exc:
            outcomes.append(ItemOutcome(item.item_id, f"{item.log_dir}/{item.dir_name}", "skipped", str(exc),
                                        rule=exc.rule))
            continue
        verified.append(v)
        outcomes.append(ItemOutcome(item.item_id, str(v.path), "would_quarantine", bytes=v.bytes))
    done = [o for o in outcomes if o.action == "already_done"]
    check_budgets(host, broker_id, verified, sum(o.bytes for o in done), len(done))
    return outcomes


def _record_final(store: TableStore, report: ApplyReport) -> str:
    """This broker's state after the run (recorded in the warehouse); a failure to record is reported, not raised:
    the disk has changed and the journal says how."""
    done = report.count("quarantined", "already_done")
    state = (approval.APPLIED if done == len(report.items) else approval.PARTIALLY_APPLIED if done
             else approval.FAILED)
    try:
        broker_status.record(store, report.plan_id, report.broker_id, state, comment=_summary(report))
    except (OSError, PipelinesError) as exc:
        return f"{state} (not recorded in the warehouse: {exc})"
    return state


def _summary(report: ApplyReport) -> str:
    return (f"broker {report.broker_id}: {report.count('quarantined', 'already_done')} done, "
            f"{report.count('skipped')} skipped, {report.count('failed')} failed, "
            f"{report.count('not_reached')} not reached")


def _apply_item(item: PlanItem, plan: GcPlan, content_hash: str, history: list[JournalRecord], journal: Journal,
                area: QuarantineArea, broker_id: int, controller: ControllerCheck, host: HostRules) -> ItemOutcome:
    log_dir = item.log_dir.rstrip("/")
    src = Path(log_dir) / item.dir_name
    pid, iid = plan.plan_id, item.item_id
    qdir = area.path / pid / iid
    dst = qdir / item.dir_name
    seen = {(r.step, r.state) for r in history}
    if any(step in ("restore", "purge") for step, _ in seen):
        return ItemOutcome(iid, str(src), "skipped", "restored or purged earlier; never re-applied", rule="journal")
    if ("rename", DONE) in seen:
        if ("item", DONE) not in seen:
            journal.write(pid, iid, "item", DONE, recovered=True)
        return ItemOutcome(iid, str(src), "already_done", bytes=item.bytes, quarantined_path=str(dst))
    if ("rename", INTENT) in seen and _quarantined_exists(area, pid, iid, item.dir_name):
        return _recover_renamed(area, item, pid, src, dst, journal)
    journal.write(pid, iid, "item", INTENT, src=str(src))
    try:
        verified = verify_item(item, broker_id, controller, host)
    except ItemSkipped as exc:
        journal.write(pid, iid, "item", SKIPPED, reason=str(exc), rule=exc.rule)
        return ItemOutcome(iid, str(src), "skipped", str(exc), rule=exc.rule)
    try:
        area.prepare_item_dir(pid, iid)
    except PreconditionFailed as exc:
        journal.write(pid, iid, "item", SKIPPED, reason=str(exc), rule="quarantine")
        return ItemOutcome(iid, str(src), "skipped", str(exc), rule="quarantine")
    d = verified.observed
    device, inode = verified.identity
    with ExitStack() as stack:
        try:
            qfd = stack.enter_context(area.open_at([pid, iid]))
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            reason = f"{qdir} is no longer a directory of the quarantine ({exc.strerror})"
            journal.write(pid, iid, "item", SKIPPED, reason=reason, rule="quarantine")
            return ItemOutcome(iid, str(src), "skipped", reason, rule="quarantine")
        if lstat_at(qfd, item.dir_name) is not None:
            reason = f"quarantine destination {dst} already exists"
            journal.write(pid, iid, "item", FAILED, reason=reason)
            return ItemOutcome(iid, str(src), "failed", reason)
        manifest = QuarantineManifest(
            cluster=plan.cluster, plan_id=pid, content_hash=content_hash, item_id=iid, broker_id=broker_id,
            log_dir=log_dir, dir_name=item.dir_name, original_path=str(src), quarantined_path=str(dst),
            topic=d.topic, partition=d.partition, topic_id=d.topic_id, fingerprint=d.fingerprint,
            files=tuple(ManifestFile(name=e.name, size=e.size, mtime_ns=e.mtime_ns, is_dir=e.is_dir)
                        for e in sorted(d.entries, key=lambda e: e.name)),
            bytes=d.bytes, quarantined_at=datetime.now(timezone.utc), device=device, inode=inode,
        )
        write_manifest(qfd, manifest)
    journal.write(pid, iid, "manifest", DONE, path=str(qdir))
    journal.write(pid, iid, "rename", INTENT, src=str(src), dst=str(dst), device=device, inode=inode)
    try:
        with open_dir(log_dir) as src_fd, area.open_at([pid, iid]) as dst_fd:
            changed = _rename_verified(src_fd, dst_fd, item.dir_name, verified.identity)
            if changed is None:
                os.fsync(src_fd)
                os.fsync(dst_fd)
    except OSError as exc:  # e.g. the dir vanished, EXDEV, or dst appeared: nothing moved, the item fails
        reason = f"rename {src} -> {dst} failed: {exc.strerror or exc}"
        journal.write(pid, iid, "item", FAILED, reason=reason)
        return ItemOutcome(iid, str(src), "failed", reason)
    if changed is not None:
        reason, moved_back = changed
        journal.write(pid, iid, "rename", FAILED, rule="identity_changed", reason=reason, moved_back=moved_back)
        journal.write(pid, iid, "item", FAILED, reason=reason, rule="identity_changed")
        return ItemOutcome(iid, str(src), "failed", reason, rule="identity_changed")
    journal.write(pid, iid, "rename", DONE, src=str(src), dst=str(dst), fingerprint=d.fingerprint, bytes=d.bytes,
                  device=device, inode=inode)
    journal.write(pid, iid, "item", DONE, bytes=d.bytes)
    return ItemOutcome(iid, str(src), "quarantined", bytes=d.bytes, quarantined_path=str(dst))


def _rename_verified(src_fd: int, dst_fd: int, name: str, verified: Identity) -> tuple[str, bool] | None:
    """Rename ``name`` from ``src_fd`` to ``dst_fd`` only if it is the verified directory, and check what arrived.

    Returns None when the verified directory was moved; else why not, and whether a directory that arrived
    instead of it was moved back (False: nothing was moved, or it could not be moved back and is left in the
    quarantine, where restore and purge refuse it)."""
    st = lstat_at(src_fd, name)
    if st is None or not is_real_dir(st) or identity(st) != verified:
        seen = "gone" if st is None else f"device {st.st_dev} inode {st.st_ino}"
        return (f"{name} is no longer the directory that was verified (device {verified[0]} inode {verified[1]}, "
                f"now {seen}); nothing moved", False)
    fault_point("rename.checked")
    rename_noreplace(src_fd, name, dst_fd, name)
    fault_point("rename.performed")
    arrived = lstat_at(dst_fd, name)
    if arrived is not None and identity(arrived) == verified:
        return None
    got = "nothing" if arrived is None else f"device {arrived.st_dev} inode {arrived.st_ino}"
    reason = (f"{name} was exchanged during the rename: moved {got}, not the verified directory (device "
              f"{verified[0]} inode {verified[1]})")
    return _move_back(src_fd, dst_fd, name, reason) if arrived is not None else (reason, False)


def _move_back(src_fd: int, dst_fd: int, name: str, reason: str) -> tuple[str, bool]:
    """Put a directory that arrived in the quarantine by mistake back under its name (never replacing anything)."""
    try:
        rename_noreplace(dst_fd, name, src_fd, name)
    except OSError as exc:
        return f"{reason}; it could not be moved back ({exc.strerror or exc}) and is left in the quarantine", False
    os.fsync(src_fd)
    os.fsync(dst_fd)
    return f"{reason}; it was moved back", True


def _quarantined_exists(area: QuarantineArea, pid: str, iid: str, name: str) -> bool:
    """Whether ``<pid>/<iid>/<name>`` exists in the area (a component that is not a directory counts as existing:
    recovery then fails the item on it)."""
    try:
        with area.open_at([pid, iid]) as qfd:
            return lstat_at(qfd, name) is not None
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return True
        raise


def _recover_renamed(area: QuarantineArea, item: PlanItem, pid: str, src: Path, dst: Path,
                     journal: Journal) -> ItemOutcome:
    """The journal says a rename was about to happen and the destination exists: did it, completely, and was it
    the verified directory?"""
    found = area.item(pid, item.item_id)
    rule = ""
    if found.manifest is None:
        reason = f"cannot check quarantined copy {dst}: {found.error}"
    else:
        m = found.manifest
        try:
            mismatch = copy_mismatch(found)
        except OSError as exc:
            mismatch = ("unreadable", f"{dst} cannot be read as a directory: {exc.strerror or exc}")
        if mismatch is None:
            journal.write(pid, item.item_id, "rename", DONE, recovered=True, src=str(src), dst=str(dst),
                          fingerprint=m.fingerprint, bytes=m.bytes, device=m.device, inode=m.inode)
            journal.write(pid, item.item_id, "item", DONE, recovered=True)
            return ItemOutcome(item.item_id, str(src), "quarantined", "recovered after a crash", m.bytes, str(dst))
        rule, why = mismatch
        reason = f"{dst} exists but does not match its manifest: [{rule}] {why}"
        if rule == "identity_changed":
            with open_dir(src.parent) as src_fd, area.open_at([pid, item.item_id]) as dst_fd:
                reason, moved_back = _move_back(src_fd, dst_fd, item.dir_name, reason)
            journal.write(pid, item.item_id, "rename", FAILED, rule=rule, reason=reason, moved_back=moved_back)
    journal.write(pid, item.item_id, "item", FAILED, reason=reason, **({"rule": rule} if rule else {}))
    return ItemOutcome(item.item_id, str(src), "failed", reason, rule=rule)


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
