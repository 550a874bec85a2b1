"""Inventory → table rows (``log_dirs``, ``partition_dirs``, ``segment_files``, ``crawl_errors``).

Rows are dicts with exactly the columns of ``pipelines.tables.schemas``; timestamps are tz-aware UTC datetimes;
problems are ``str(Problem)`` with paths made relative to the log dir (so the same dir crawled over two backends
gives the same strings). Nothing here raises for a bad file: read failures are ``crawl_errors`` rows (stage
``list``/``read``/``statvfs``), files that were read but could not be decoded are ``crawl_errors`` rows with stage
``parse`` (and stay problems of their row).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pipelines.crawl.listing import Listing
from pipelines.crawl.listing_lister import ListingLister
from pipelines.kafka.logdir import LogDirInventory, PartitionDirInventory, scan_log_dir
from pipelines.kafka.problems import Problem
from pipelines.kafka.root_files import KNOWN_ROOT_FILES

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RowContext:
    """Where rows come from: ``log_dir`` is the URL as configured (the ``log_dir`` column)."""

    run_id: str
    cluster: str
    broker_id: int
    log_dir: str
    crawled_at: datetime

    def base(self) -> Row:
        return {"run_id": self.run_id, "cluster": self.cluster, "broker_id": self.broker_id, "log_dir": self.log_dir}

    def url_of(self, rel: str) -> str:
        return f"{self.log_dir.rstrip('/')}/{rel}" if rel else self.log_dir


@dataclass(slots=True)
class LogDirRows:
    """Rows of one task: a log dir, several (an inventory file), or one fan-out chunk (then no log-dir row)."""

    log_dirs: list[Row] = field(default_factory=list)
    partition_dirs: list[Row] = field(default_factory=list)
    segment_files: list[Row] = field(default_factory=list)
    errors: list[Row] = field(default_factory=list)

    def extend(self, other: LogDirRows) -> None:
        """Add ``other``'s rows to these, table by table."""
        self.log_dirs += other.log_dirs
        self.partition_dirs += other.partition_dirs
        self.segment_files += other.segment_files
        self.errors += other.errors

    @property
    def partition_bytes(self) -> int:
        """Sum of the partition dirs' bytes (what a log-dir row attributes besides its root files)."""
        return sum(r["bytes"] or 0 for r in self.partition_dirs)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def from_ms(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, timezone.utc)


def from_ns(ns: int) -> datetime | None:
    return None if ns <= 0 else datetime.fromtimestamp(ns // 1000 / 1_000_000, timezone.utc)


def _relative(root: str, path: str) -> str:
    if path == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def problem_strings(problems: Iterable[Problem], root: str) -> list[str]:
    return [p.text_at(_relative(root, p.path)) for p in problems]


def error_row(ctx: RowContext, rel: str, stage: str, error_class: str, reason: str) -> Row:
    return {**ctx.base(), "path": ctx.url_of(rel), "stage": stage, "error_class": error_class, "reason": reason,
            "at": ctx.crawled_at}  # fmt: skip


def log_dir_failed(ctx: RowContext, exc: BaseException, stage: str = "list") -> LogDirRows:
    """The log dir could not be listed at all: one error row, no other rows."""
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return LogDirRows(errors=[error_row(ctx, "", stage, type(exc).__name__, str(reason))])


# -- scanning a listing -----------------------------------------------------------------------------


def scan_listing(
    listing: Listing, *, visible_dirs: frozenset[str] | None = None, keep_entries: bool = True
) -> tuple[LogDirInventory, dict[str, OSError]]:
    """Run ``scan_log_dir`` over the listing; returns the inventory and the reads that failed, by ``rel``.

    ``keep_entries`` False: no per-file entries in the inventory (the listing may hold summaries instead)."""
    lister = ListingLister(listing, visible_dirs=visible_dirs)
    inventory = scan_log_dir(listing.root, lister=lister, keep_entries=keep_entries)
    return inventory, lister.failed_reads


def partition_dir_row(ctx: RowContext, base: Row, root: str, d: PartitionDirInventory) -> Row:
    """``base``: ``ctx.base()``, made once for all rows of a task."""
    return {
        **base,
        "dir_name": d.name, "kind": d.kind, "topic": d.topic, "partition": d.partition, "unique_id": d.unique_id,
        "topic_id": d.topic_id, "partition_metadata_status": d.partition_metadata_status,
        "files": d.files, "bytes": d.bytes, "log_bytes": d.log_bytes, "index_bytes": d.index_bytes,
        "segment_count": d.segment_count, "min_base_offset": d.min_base_offset, "max_base_offset": d.max_base_offset,
        "oldest_mtime": from_ms(d.oldest_mtime_ms), "newest_mtime": from_ms(d.newest_mtime_ms),
        "dir_mtime": from_ms(d.dir_mtime_ms), "fingerprint": d.fingerprint,
        "problems": problem_strings(d.problems, root), "crawled_at": ctx.crawled_at,
        "leader_epochs": _epochs_json(d),
    }  # fmt: skip


def _epochs_json(d: PartitionDirInventory) -> str | None:
    """The parsed ``leader-epoch-checkpoint`` as JSON ``[[epoch, start offset], ...]``; None without entries."""
    if not d.leader_epochs:
        return None
    return "[" + ",".join(f"[{e.epoch},{e.start_offset}]" for e in d.leader_epochs) + "]"


def segment_file_rows(ctx: RowContext, d: PartitionDirInventory) -> list[Row]:
    return [
        {
            **ctx.base(),
            "dir_name": d.name,
            "file_name": entry.name,
            "base_offset": name.base_offset,
            "suffix": name.suffix or "",
            "state": name.state,
            "bytes": entry.size,
            "mtime": from_ns(entry.mtime_ns),
        }
        for entry, name in d.classified_files()
    ]


def root_attributed_bytes(inventory: LogDirInventory) -> int:
    """Bytes of the root files Kafka knows (meta.properties, checkpoints, ...)."""
    return sum(f.size for f in inventory.root_files if f.name in KNOWN_ROOT_FILES)


def log_dir_row(ctx: RowContext, listing: Listing, inventory: LogDirInventory, partition_bytes: int) -> Row:
    meta = inventory.meta_properties
    clean = inventory.clean_shutdown
    totals = listing.totals
    return {
        **ctx.base(),
        "meta_version": meta.version if meta else None,
        "meta_cluster_id": meta.cluster_id if meta else None,
        "meta_node_id": meta.node_id if meta else None,
        "directory_id": str(meta.directory_id) if meta and meta.directory_id else None,
        "has_lock_file": inventory.has_lock_file,
        "clean_shutdown": clean is not None,
        "clean_shutdown_broker_epoch": clean.broker_epoch if clean else None,
        "is_metadata_log_dir": inventory.has_cluster_metadata,
        "fs_total_bytes": totals.total_bytes if totals else None,
        "fs_used_bytes": totals.used_bytes if totals else None,
        "fs_free_bytes": totals.free_bytes if totals else None,
        "attributed_bytes": root_attributed_bytes(inventory) + partition_bytes,
        "partition_dirs": len(inventory.partition_dirs),
        "problems": problem_strings(inventory.problems, listing.root),
        "crawled_at": ctx.crawled_at,
    }


def _decode_errors(ctx: RowContext, listing: Listing, problems: Iterable[Problem]) -> list[Row]:
    """Files that were read but are not what they claim to be (malformed partition.metadata, checkpoints)."""
    rows = []
    for p in problems:
        if p.severity not in ("error", "fatal") or p.code.endswith("_unreadable"):
            continue
        rel = _relative(listing.root, p.path)
        entry = listing.entries.get(rel)
        if entry is not None and entry.kind == "file":
            rows.append(error_row(ctx, rel, "parse", p.code, p.message))
    return rows


def io_error_rows(ctx: RowContext, listing: Listing, failed_reads: dict[str, OSError], *, root_level: bool,
                  dirs: frozenset[str] | None) -> list[Row]:  # fmt: skip
    """Listing errors and failed reads; ``root_level`` selects root entries, ``dirs`` the partition dirs'."""

    def mine(rel: str) -> bool:
        top = rel.partition("/")[0]
        entry = listing.entries.get(top)
        is_dir_part = "/" in rel or (entry is not None and entry.kind == "directory")
        if not is_dir_part:
            return root_level
        return dirs is None or top in dirs

    rows = [error_row(ctx, e.rel, e.stage, e.error_class, e.reason) for e in listing.errors if mine(e.rel)]
    for rel, exc in sorted(failed_reads.items()):
        if mine(rel) and rel not in listing.read_errors:
            rows.append(error_row(ctx, rel, "read", type(exc).__name__, str(exc.strerror or exc)))
    for rel, exc in sorted(listing.read_errors.items()):
        if mine(rel):
            rows.append(error_row(ctx, rel, "read", type(exc).__name__, str(exc.strerror or exc)))
    return rows


def rows_for_listing(ctx: RowContext, listing: Listing, *, include_segments: bool = False) -> LogDirRows:
    """Every row of one fully listed log dir."""
    inventory, failed = scan_listing(listing, keep_entries=include_segments)
    out = LogDirRows()
    base = ctx.base()
    for d in inventory.partition_dirs:
        out.partition_dirs.append(partition_dir_row(ctx, base, listing.root, d))
        if include_segments:
            out.segment_files.extend(segment_file_rows(ctx, d))
    out.log_dirs.append(log_dir_row(ctx, listing, inventory, out.partition_bytes))
    out.errors = io_error_rows(ctx, listing, failed, root_level=True, dirs=None)
    out.errors += _decode_errors(ctx, listing, inventory.all_problems)
    return out


def root_rows(ctx: RowContext, listing: Listing) -> LogDirRows:
    """Fan-out, first task: the log dir row (partition bytes still to add) and root-level errors.

    ``listing`` has every root entry but no directory contents: the scan sees the partition dirs as empty, which
    is enough for root-level checks (names, duplicates, checkpoint cross-checks); their rows come from chunks.
    """
    inventory, failed = scan_listing(listing, keep_entries=False)
    out = LogDirRows(log_dirs=[log_dir_row(ctx, listing, inventory, 0)])
    out.errors = io_error_rows(ctx, listing, failed, root_level=True, dirs=frozenset())
    out.errors += _decode_errors(ctx, listing, inventory.problems)
    return out


def chunk_rows(
    ctx: RowContext, listing: Listing, dirs: frozenset[str], *, include_segments: bool = False
) -> LogDirRows:
    """Fan-out, later tasks: rows of the partition dirs in ``dirs`` (listing descended into exactly those)."""
    inventory, failed = scan_listing(listing, visible_dirs=dirs, keep_entries=include_segments)
    out = LogDirRows()
    base = ctx.base()
    for d in inventory.partition_dirs:
        out.partition_dirs.append(partition_dir_row(ctx, base, listing.root, d))
        if include_segments:
            out.segment_files.extend(segment_file_rows(ctx, d))
        out.errors += _decode_errors(ctx, listing, d.problems)
    out.errors = io_error_rows(ctx, listing, failed, root_level=False, dirs=dirs) + out.errors
    return out
