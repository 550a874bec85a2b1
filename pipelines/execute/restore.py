"""Restore: move quarantined items back to their original path (only if it is free and the copy is intact).

Needs the same locks as an apply: the broker must be down (Kafka's ``.lock``) and no other executor running.
The quarantined dir's fingerprint must still equal its manifest's; the original path must not exist. One
``os.rename`` back, both parents fsynced, journalled ``restore.intent`` / ``restore.done``; the manifest is
removed last. A rerun after a crash sees the dir back in place (restore done) or still quarantined (redo).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig, BrokerConfig
from pipelines.execute.apply import broker_config, local_path, state_dir
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, INTENT, SKIPPED, Journal, fsync_dir
from pipelines.execute.locks import executor_lock, kafka_dir_lock
from pipelines.execute.quarantine import MANIFEST_NAME, QuarantineManifest, iter_manifests
from pipelines.kafka.listing import LocalLister
from pipelines.kafka.logdir import fingerprint_entries, fingerprint_triples


@dataclass
class RestoreReport:
    """Per broker: items restored (dry run: that would be), items skipped with the reason, and each item's
    original path."""

    plan_id: str
    broker_id: int
    restored: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    executed: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quarantined(config: AppConfig, broker: BrokerConfig, plan_id: str,
                 item_id: str | None) -> list[tuple[str, Path, QuarantineManifest]]:
    """(log dir, quarantine dir, manifest) of each quarantined item of ``plan_id`` (only ``item_id`` if given)."""
    found = []
    for url in broker.log_dirs:
        log_dir = local_path(url)
        for directory, manifest in iter_manifests(log_dir, config.executor.quarantine_dir_name):
            if manifest.plan_id == plan_id and item_id in (None, manifest.item_id):
                found.append((log_dir, directory, manifest))
    return found


def _verdict(src: Path, dst: Path, m: QuarantineManifest) -> tuple[str, str]:
    """``("rename", "")``, ``("finish", "")`` (renamed back before a crash) or ``("skip", reason)``."""
    if not os.path.lexists(src):
        if os.path.isdir(dst) and _fp(dst) == m.fingerprint:
            return "finish", ""
        return "skip", f"{src} is gone (purged?)"
    if os.path.lexists(dst):
        return "skip", f"original path {dst} is taken"
    if _fp(src) != m.fingerprint:
        return "skip", f"{src} no longer matches its manifest fingerprint"
    return "rename", ""


def restore(config: AppConfig, broker_id: int, plan_id: str, *, item_id: str | None = None,
            execute: bool = False) -> RestoreReport:
    """Move (``execute=True``) the plan's quarantined items on ``broker_id`` back, or by default, like ``apply_plan``
    and ``purge``, only report what would happen (no locks, no journal, nothing changed)."""
    broker = broker_config(config, broker_id)
    report = RestoreReport(plan_id, broker_id, executed=execute)
    found = _quarantined(config, broker, plan_id, item_id)
    for _, _, m in found:
        report.paths[m.item_id] = m.original_path
    if not execute:
        for _, directory, m in found:
            verdict, reason = _verdict(directory / m.dir_name, Path(m.original_path), m)
            if verdict == "skip":
                report.skipped[m.item_id] = reason
            else:
                report.restored.append(m.item_id)
        return report
    if not found:
        return report
    sdir = state_dir(config, broker)
    with executor_lock(sdir, broker_id):
        locks = []
        try:
            for d in sorted({log_dir for log_dir, _, _ in found}):
                locks.append(kafka_dir_lock(d).acquire())
            journal = Journal(sdir, config.cluster, broker_id)
            for _log_dir, directory, m in found:
                src = directory / m.dir_name
                dst = Path(m.original_path)
                verdict, reason = _verdict(src, dst, m)
                if verdict == "skip":
                    report.skipped[m.item_id] = reason
                    if os.path.lexists(src):
                        journal.write(m.plan_id, m.item_id, "restore", SKIPPED, reason=reason)
                    continue
                if verdict == "rename":
                    journal.write(m.plan_id, m.item_id, "restore", INTENT, src=str(src), dst=str(dst))
                    os.rename(src, dst)
                    fault_point("restore.performed")
                    fsync_dir(dst.parent)
                    fsync_dir(directory)
                _finish(journal, directory, m.plan_id, m.item_id)
                report.restored.append(m.item_id)
        finally:
            for lock in reversed(locks):
                lock.release()
    return report


def _fp(path: Path) -> str:
    return fingerprint_entries(fingerprint_triples(LocalLister().list_dir(str(path))))


def _finish(journal: Journal, directory: Path, plan_id: str, item_id: str) -> None:
    journal.write(plan_id, item_id, "restore", DONE)
    (directory / MANIFEST_NAME).unlink(missing_ok=True)
    for leftover in directory.iterdir():
        leftover.unlink()
    directory.rmdir()
    fsync_dir(directory.parent)
