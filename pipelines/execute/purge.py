"""Purge: delete quarantined items older than the retention, paced, and measure what the filesystem got back.

Only directories under the quarantine areas of this broker's log dirs that carry a valid manifest are ever
deleted; the data dir goes first, then the manifest, so a crash mid-purge leaves a manifest whose data dir is
(partly) gone and the next purge finishes it. Pacing sleeps between files to stay under
``purge_bytes_per_second`` / ``purge_files_per_second``. Reclaimed bytes are measured per filesystem as the change
in ``statvfs`` free space (blocks available × fragment size) before and after; other writers on the same
filesystem disturb that number, so the expected bytes (manifest sizes) are reported beside it.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig
from pipelines.execute.apply import broker_config, local_path, state_dir
from pipelines.execute.faults import fault_point
from pipelines.execute.journal import DONE, INTENT, Journal, fsync_dir
from pipelines.execute.locks import executor_lock
from pipelines.execute.quarantine import MANIFEST_NAME, iter_manifests


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


def _delete_tree(path: Path, pacer: Pacer) -> None:
    """Delete ``path`` file by file (never following symlinks), pacing each unlink."""
    if not os.path.lexists(path):
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            p = os.path.join(root, name)
            size = os.lstat(p).st_size
            os.unlink(p)
            pacer.account(size)
        for name in dirs:
            p = os.path.join(root, name)
            if stat.S_ISLNK(os.lstat(p).st_mode):
                os.unlink(p)
            else:
                os.rmdir(p)
    os.rmdir(path)


def purge(config: AppConfig, broker_id: int, *, older_than_ms: int | None = None, execute: bool = False,
          now: datetime | None = None, sleep: Callable[[float], None] = time.sleep) -> PurgeReport:
    """Delete (``execute=True``) or list quarantined items of ``broker_id`` older than the retention."""
    broker = broker_config(config, broker_id)
    retention = timedelta(milliseconds=config.executor.purge_retention_ms if older_than_ms is None else older_than_ms)
    cutoff = (now or datetime.now(timezone.utc)) - retention
    report = PurgeReport(broker_id, execute)
    due: list[tuple[str, Path, Any]] = []
    for url in broker.log_dirs:
        log_dir = local_path(url)
        for directory, manifest in iter_manifests(log_dir, config.executor.quarantine_dir_name):
            if manifest.broker_id != broker_id or manifest.quarantined_at > cutoff:
                report.kept += 1
                continue
            due.append((log_dir, directory, manifest))
            report.items.append(PurgedItem(manifest.plan_id, manifest.item_id, str(directory), manifest.bytes,
                                           len(manifest.files)))
            report.expected_bytes += manifest.bytes
    if not execute or not due:
        return report
    sdir = state_dir(config, broker)
    pacer = Pacer(config.executor.purge_bytes_per_second, config.executor.purge_files_per_second, sleep=sleep)
    with executor_lock(sdir, broker_id):
        journal = Journal(sdir, config.cluster, broker_id)
        before = {d: free_bytes(d) for d in {log_dir for log_dir, _, _ in due}}
        for _log_dir, directory, manifest in due:
            journal.write(manifest.plan_id, manifest.item_id, "purge", INTENT, path=str(directory))
            _delete_tree(directory / manifest.dir_name, pacer)
            fault_point("purge.performed")
            (directory / MANIFEST_NAME).unlink()
            for leftover in directory.iterdir():  # e.g. manifest.json.tmp of an interrupted write
                leftover.unlink()
            directory.rmdir()
            fsync_dir(directory.parent)
            journal.write(manifest.plan_id, manifest.item_id, "purge", DONE, bytes=manifest.bytes)
        os.sync()
        report.measured_bytes = {d: free_bytes(d) - b for d, b in before.items()}
    return report
