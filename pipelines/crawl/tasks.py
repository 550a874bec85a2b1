"""The units of crawl work, shared by the Spark job and the pure-Python crawl.

- ``root_task``: one (broker, log dir). Lists it; a small log dir is scanned whole; a big one (more partition dirs
  than ``fanout_dirs``, on a backend that can list a subset) yields its log-dir row plus ``Chunk``s of partition
  dir names for ``chunk_task``.
- ``chunk_task``: the partition dirs of one chunk.
- ``inventory_task``: one broker whose listing comes from a ``logdir-gc inventory`` file.

No task raises for storage trouble: a log dir that cannot be listed, a bad inventory file or an SSH failure
becomes one ``crawl_errors`` row and the crawl goes on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pipelines.crawl.backends.registry import SUMMARIZING_BACKENDS, backend_for, backend_name
from pipelines.crawl.rows import (
    LogDirRows,
    RowContext,
    chunk_rows,
    error_row,
    log_dir_failed,
    root_rows,
    rows_for_listing,
)
from pipelines.errors import PipelinesError
from pipelines.kafka.gc_pause import gc_paused
from pipelines.redaction import redact_config, redact_text, secret_values

#: A log dir with more partition dirs than this is fanned out in chunks of this many.
DEFAULT_FANOUT_DIRS = 2000
#: Backends that can list a subset of partition dirs cheaply (SFTP lists a log dir in one command instead).
FANOUT_BACKENDS = frozenset({"local", "file", "generic"})


def storage_errors() -> tuple[type[BaseException], ...]:
    """What a backend may raise for a log dir it cannot reach (stdlib, ours, paramiko's, asyncssh's)."""
    errors: list[type[BaseException]] = [OSError, EOFError, PipelinesError]
    try:
        from paramiko.ssh_exception import SSHException

        errors.append(SSHException)
    except ImportError:
        pass
    try:
        from asyncssh import Error as AsyncSshError

        errors.append(AsyncSshError)
    except ImportError:
        pass
    return tuple(errors)


class BrokerLike(Protocol):
    broker_id: int
    log_dirs: Sequence[str]
    storage_options: Mapping[str, Any]
    inventory: str | None


@dataclass(frozen=True, slots=True)
class LogDirJob:
    """One root task's input (picklable, small)."""

    run_id: str
    cluster: str
    broker_id: int
    log_dir: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    inventory: str | None = None
    configured_log_dirs: tuple[str, ...] = ()
    #: the URL to list when ``log_dir`` (the name the rows record) had a password masked (``redaction``)
    url: str = ""

    def ctx(self, crawled_at: datetime, log_dir: str | None = None) -> RowContext:
        return RowContext(self.run_id, self.cluster, self.broker_id, log_dir or self.log_dir, crawled_at)

    @property
    def target(self) -> str:
        """What the backend opens: the configured URL, credentials included."""
        return self.url or self.log_dir

    def secrets(self) -> set[str]:
        """The credentials of this job's URL and storage options (masked in its error rows)."""
        return secret_values(self.storage_options, under_secret=False) | secret_values(
            [self.target, self.inventory or ""])


def _redacted_errors(job: LogDirJob, rows: LogDirRows) -> LogDirRows:
    """``rows`` with the job's credentials masked in every error reason (a backend's message may quote them)."""
    if rows.errors:
        secrets = job.secrets()
        for row in rows.errors:
            row["reason"] = redact_text(str(row.get("reason") or ""), secrets)
    return rows


@dataclass(frozen=True, slots=True)
class Chunk:
    job: LogDirJob
    dirs: tuple[str, ...]
    crawled_at: datetime


def jobs_for(brokers: Sequence[BrokerLike], *, run_id: str, cluster: str) -> list[LogDirJob]:
    """One job per configured log dir, or one per broker that has an inventory file."""
    jobs: list[LogDirJob] = []
    for b in brokers:
        opts = dict(b.storage_options or {})
        if b.inventory:  # the rows name the configured log dirs and the inventory without their passwords
            jobs.append(LogDirJob(run_id, cluster, b.broker_id, redact_text(b.inventory), opts, b.inventory,
                                  tuple(redact_text(d) for d in b.log_dirs)))
        else:
            jobs.extend(LogDirJob(run_id, cluster, b.broker_id, redact_text(url), opts, url=url) for url in b.log_dirs)
    return jobs


def _summarize(log_dir: str, include_segments: bool) -> dict[str, bool]:
    """Ask the backends that can for partition-dir summaries instead of per-file entries (no segment rows)."""
    return {"summarize": True} if not include_segments and backend_name(log_dir) in SUMMARIZING_BACKENDS else {}


def root_task(
    job: LogDirJob, crawled_at: datetime, *, include_segments: bool, fanout_dirs: int | None
) -> tuple[LogDirRows, list[Chunk]]:
    with gc_paused():
        rows, chunks = _root_task(job, crawled_at, include_segments=include_segments, fanout_dirs=fanout_dirs)
        return _redacted_errors(job, rows), chunks


def _root_task(
    job: LogDirJob, crawled_at: datetime, *, include_segments: bool, fanout_dirs: int | None
) -> tuple[LogDirRows, list[Chunk]]:
    if job.inventory is not None:
        return inventory_task(job, crawled_at, include_segments=include_segments), []
    ctx = job.ctx(crawled_at)
    list_log_dir = backend_for(job.target)
    can_fan_out = fanout_dirs is not None and backend_name(job.target) in FANOUT_BACKENDS
    try:
        listing = list_log_dir(
            job.target, job.storage_options, fanout_above=fanout_dirs if can_fan_out else None,
            **_summarize(job.target, include_segments),
        )  # fmt: skip
    except storage_errors() as exc:
        return log_dir_failed(ctx, exc), []
    try:
        if listing.descended or fanout_dirs is None:
            return rows_for_listing(ctx, listing, include_segments=include_segments), []
        names = listing.partition_dir_names
        chunks = [Chunk(job, tuple(names[i : i + fanout_dirs]), crawled_at) for i in range(0, len(names), fanout_dirs)]
        return root_rows(ctx, listing), chunks
    except storage_errors() as exc:
        return log_dir_failed(ctx, exc), []
    finally:
        listing.close()


def chunk_task(chunk: Chunk, *, include_segments: bool) -> LogDirRows:
    with gc_paused():
        return _redacted_errors(chunk.job, _chunk_task(chunk, include_segments=include_segments))


def _chunk_task(chunk: Chunk, *, include_segments: bool) -> LogDirRows:
    job = chunk.job
    ctx = job.ctx(chunk.crawled_at)
    dirs = frozenset(chunk.dirs)
    try:
        listing = backend_for(job.target)(
            job.target, job.storage_options, only=dirs, **_summarize(job.target, include_segments)
        )
    except storage_errors() as exc:
        out = log_dir_failed(ctx, exc)
        out.errors[0]["reason"] += f" (fan-out chunk of {len(dirs)} partition dirs)"
        return out
    try:
        return chunk_rows(ctx, listing, dirs, include_segments=include_segments)
    finally:
        listing.close()


def _configured_name(root: str, configured: Sequence[str]) -> str:
    """The configured log-dir string naming ``root`` (a path recorded on the broker), else ``root`` itself."""
    from urllib.parse import urlsplit

    for url in configured:
        path = urlsplit(url).path if "://" in url else url
        if os.path.normpath(path) == os.path.normpath(root):
            return url
    return root


def inventory_task(job: LogDirJob, crawled_at: datetime, *, include_segments: bool) -> LogDirRows:
    from pipelines.crawl.inventory_file import read_inventory

    assert job.inventory is not None
    ctx = job.ctx(crawled_at)
    try:
        inventory = read_inventory(job.inventory, job.storage_options)
    except storage_errors() as exc:
        return log_dir_failed(ctx, exc, stage="inventory")
    if inventory.header.broker_id is not None and inventory.header.broker_id != job.broker_id:
        reason = f"inventory is for broker {inventory.header.broker_id}, configured for broker {job.broker_id}"
        return LogDirRows(errors=[error_row(ctx, "", "inventory", "BrokerMismatch", reason)])
    out = LogDirRows()
    for section in inventory.sections:
        sctx = job.ctx(crawled_at, _configured_name(section.root, job.configured_log_dirs))
        if section.listing is None:
            error_class, reason = section.error or ("OSError", "not listed")
            out.errors.append(error_row(sctx, "", "list", error_class, reason))
            continue
        rows = rows_for_listing(sctx, section.listing, include_segments=include_segments)
        out.log_dirs += rows.log_dirs
        out.partition_dirs += rows.partition_dirs
        out.segment_files += rows.segment_files
        out.errors += rows.errors
    return out


def redacted_config_json(brokers: Sequence[BrokerLike]) -> str:
    """The brokers' crawl settings as JSON, every credential replaced by ``***``: values under a credential's name
    at any depth of ``storage_options`` (lists included) and passwords in the log dir and inventory URLs
    (``pipelines.redaction``)."""
    return json.dumps(
        redact_config([
            {
                "broker_id": b.broker_id,
                "log_dirs": list(b.log_dirs),
                "storage_options": dict(sorted((b.storage_options or {}).items())),
                "inventory": b.inventory,
            }
            for b in brokers
        ]),
        sort_keys=True,
        default=str,
    )
