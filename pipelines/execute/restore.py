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

from pipelines.config.models import AppConfig
from pipelines.execute.apply import broker_config, local_path, state_dir
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, INTENT, SKIPPED, Journal, fsync_dir
from pipelines.execute.locks import executor_lock, kafka_dir_lock
from pipelines.execute.quarantine import MANIFEST_NAME, iter_manifests
from pipelines.kafka.listing import LocalLister
from pipelines.kafka.logdir import fingerprint_entries, fingerprint_triples


@dataclass
class RestoreReport:
    plan_id: str
    broker_id: int
    restored: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def restore(config: AppConfig, broker_id: int, plan_id: str, *, item_id: str | None = None) -> RestoreReport:
    broker = broker_config(config, broker_id)
    report = RestoreReport(plan_id, broker_id)
    found = []
    for url in broker.log_dirs:
        log_dir = local_path(url)
        for directory, manifest in iter_manifests(log_dir, config.executor.quarantine_dir_name):
            if manifest.plan_id == plan_id and item_id in (None, manifest.item_id):
                found.append((log_dir, directory, manifest))
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
                if not os.path.lexists(src):
                    if os.path.isdir(dst) and _fp(dst) == m.fingerprint:  # renamed back before a crash
                        _finish(journal, directory, m.plan_id, m.item_id)
                        report.restored.append(m.item_id)
                    else:
                        report.skipped[m.item_id] = f"{src} is gone (purged?)"
                    continue
                if os.path.lexists(dst):
                    report.skipped[m.item_id] = f"original path {dst} is taken"
                    journal.write(m.plan_id, m.item_id, "restore", SKIPPED, reason=report.skipped[m.item_id])
                    continue
                if _fp(src) != m.fingerprint:
                    report.skipped[m.item_id] = f"{src} no longer matches its manifest fingerprint"
                    journal.write(m.plan_id, m.item_id, "restore", SKIPPED, reason=report.skipped[m.item_id])
                    continue
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
