"""The crawl in plain Python: the same tasks as the Spark job, run one after the other.

Used by tests (as the reference the Spark crawl must equal), by ``logdir-gc inventory`` and by anything on a
broker host that has no JVM. Rows are held in memory: fine for one broker, not meant for a fleet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pipelines import native
from pipelines.crawl.rows import LogDirRows, Row, utc_now
from pipelines.crawl.tasks import (
    DEFAULT_FANOUT_DIRS,
    BrokerLike,
    chunk_task,
    jobs_for,
    redacted_config_json,
    root_task,
)


@dataclass(slots=True)
class CrawlResult:
    log_dirs: list[Row] = field(default_factory=list)
    partition_dirs: list[Row] = field(default_factory=list)
    segment_files: list[Row] = field(default_factory=list)
    errors: list[Row] = field(default_factory=list)
    run_row: Row = field(default_factory=dict)


def run_status(log_dir_rows: int, jobs: int, errors: int) -> str:
    """``failed``: nothing listed although something was configured; ``partial``: errors; else ``succeeded``."""
    if jobs and not log_dir_rows:
        return "failed"
    return "partial" if errors else "succeeded"


def run_code_path(paths: set[str]) -> str:
    """The run's ``code_path`` from its tasks' (``native.code_path``): one of them, or ``mixed``."""
    return paths.pop() if len(paths) == 1 else ("mixed" if paths else native.code_path())


def run_row(
    *, run_id: str, cluster: str, started_at: datetime, finished_at: datetime | None, brokers: Sequence[BrokerLike],
    log_dirs: int, partition_dirs: int, files: int, bytes_: int, errors: int, jobs: int, code_path: str | None,
) -> Row:  # fmt: skip
    """The ``crawl_runs`` row. ``source`` is ``listing``, ``inventory`` or ``mixed``."""
    kinds = {"inventory" if b.inventory else "listing" for b in brokers}
    source = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "listing")
    return {
        "run_id": run_id, "cluster": cluster, "started_at": started_at, "finished_at": finished_at,
        "status": run_status(log_dirs, jobs, errors), "source": source, "brokers": len(brokers),
        "log_dirs": log_dirs, "partition_dirs": partition_dirs, "files": files, "bytes": bytes_, "errors": errors,
        "config_json": redacted_config_json(brokers), "code_path": code_path,
    }  # fmt: skip


def crawl_local(
    brokers: Sequence[BrokerLike],
    *,
    run_id: str,
    cluster: str,
    include_segments: bool = False,
    fanout_dirs: int | None = DEFAULT_FANOUT_DIRS,
    crawled_at: datetime | None = None,
) -> CrawlResult:
    """Crawl every broker's log dirs (or inventory files) in this process."""
    started = utc_now()
    at = crawled_at or started
    extra_bytes: dict[tuple[int, str], int] = defaultdict(int)
    jobs = jobs_for(brokers, run_id=run_id, cluster=cluster)
    rows = LogDirRows()
    for job in jobs:
        root, chunks = root_task(job, at, include_segments=include_segments, fanout_dirs=fanout_dirs)
        parts = [root] + [chunk_task(c, include_segments=include_segments) for c in chunks]
        for part in parts:
            rows.extend(part)
        if chunks:
            extra_bytes[(job.broker_id, job.log_dir)] += sum(p.partition_bytes for p in parts[1:])
    for row in rows.log_dirs:
        row["attributed_bytes"] += extra_bytes.get((row["broker_id"], row["log_dir"]), 0)
    return CrawlResult(rows.log_dirs, rows.partition_dirs, rows.segment_files, rows.errors,
                       in_process_run_row(rows, run_id=run_id, cluster=cluster, started_at=started,
                                          brokers=brokers, jobs=len(jobs)))


def in_process_run_row(rows: LogDirRows, *, run_id: str, cluster: str, started_at: datetime,
                       brokers: Sequence[BrokerLike], jobs: int) -> Row:
    """The ``crawl_runs`` row of a crawl that ran in this process and gathered ``rows``, finished now."""
    return run_row(
        run_id=run_id, cluster=cluster, started_at=started_at, finished_at=utc_now(), brokers=brokers,
        log_dirs=len(rows.log_dirs), partition_dirs=len(rows.partition_dirs),
        files=sum(r["files"] or 0 for r in rows.partition_dirs), bytes_=rows.partition_bytes,
        errors=len(rows.errors), jobs=jobs, code_path=native.code_path(),
    )  # fmt: skip
