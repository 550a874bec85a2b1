"""Render a ``LogDirInventory`` for ``logdir-gc inspect``: a JSON-ready dict and a human text report."""

from __future__ import annotations

from typing import Any

from pipelines.kafka.logdir import LogDirInventory, PartitionDirInventory
from pipelines.kafka.problems import SEVERITIES, Problem
from pipelines.terminal_text import shown


def _meta_json(inv: LogDirInventory) -> dict[str, Any]:
    mp = inv.meta_properties
    if mp is None:
        return {"status": inv.meta_properties_status}
    return {
        "status": inv.meta_properties_status,
        "version": mp.version,
        "cluster_id": mp.cluster_id,
        "node_id": mp.node_id,
        "directory_id": None if mp.directory_id is None else str(mp.directory_id),
        "raw": dict(mp.raw),
    }


def _checkpoints_json(inv: LogDirInventory) -> dict[str, Any]:
    return {
        name: {
            "status": cp.status,
            "version": cp.version,
            "count": cp.declared_count,
            "entries": len(cp.entries),
            "partitions": sorted(e.dir_name for e in cp.entries),
            "error": cp.error,
        }
        for name, cp in inv.checkpoints.items()
    }


def _dir_json(d: PartitionDirInventory) -> dict[str, Any]:
    return {
        "name": d.name,
        "kind": d.kind,
        "topic": d.topic,
        "partition": d.partition,
        "unique_id": d.unique_id,
        "topic_may_be_truncated": d.topic_may_be_truncated,
        "topic_id": d.topic_id,
        "partition_metadata": d.partition_metadata_status,
        "files": d.files,
        "bytes": d.bytes,
        "log_bytes": d.log_bytes,
        "index_bytes": d.index_bytes,
        "segment_count": d.segment_count,
        "min_base_offset": d.min_base_offset,
        "max_base_offset": d.max_base_offset,
        "oldest_mtime_ms": d.oldest_mtime_ms,
        "newest_mtime_ms": d.newest_mtime_ms,
        "dir_mtime_ms": d.dir_mtime_ms,
        "fingerprint": d.fingerprint,
        "problems": [p.to_json() for p in d.problems],
    }


def inspect_json(inv: LogDirInventory) -> dict[str, Any]:
    """A JSON-serialisable summary; ``problems`` holds the root-level problems, each dir carries its own."""
    cs = inv.clean_shutdown
    return {
        "log_dir": inv.log_dir,
        "meta_properties": _meta_json(inv),
        "checkpoints": _checkpoints_json(inv),
        "root": {
            "lock_file": inv.has_lock_file,
            "clean_shutdown": None if cs is None else {"broker_epoch": cs.broker_epoch},
            "bootstrap_checkpoint_bytes": inv.bootstrap_checkpoint_bytes,
            "cluster_metadata": inv.has_cluster_metadata,
            "special_dirs": list(inv.special_dirs),
            "tmp_leftovers": list(inv.tmp_leftovers),
            "unknown_files": list(inv.unknown_root_files),
        },
        "problems": [p.to_json() for p in inv.problems],
        "problem_counts": _counts(inv.all_problems),
        "would_block_startup": any(p.severity == "fatal" for p in inv.problems + _dir_problems(inv)),
        "partition_dirs": [_dir_json(d) for d in inv.partition_dirs],
    }


def _dir_problems(inv: LogDirInventory) -> tuple[Problem, ...]:
    return tuple(p for d in inv.partition_dirs for p in d.problems)


def _counts(problems: tuple[Problem, ...]) -> dict[str, int]:
    return {s: sum(1 for p in problems if p.severity == s) for s in SEVERITIES}


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


def render_text(inv: LogDirInventory, *, max_problems: int = 200) -> str:
    """A human report: fatal problems first and loud, then a table of partition dirs by kind.

    Every name read from the disk is escaped and cut (``terminal_text.shown``).
    """
    out: list[str] = [f"Log dir: {shown(inv.log_dir)}"]
    mp = inv.meta_properties
    if mp is None:
        out.append(f"  meta.properties: {inv.meta_properties_status}")
    else:
        out.append(
            f"  meta.properties: version={mp.version} cluster.id={shown(mp.cluster_id)} node={mp.node_id} "
            f"directory.id={shown(mp.directory_id or '-')} ({inv.meta_properties_status})"
        )
    for name, cp in inv.checkpoints.items():
        out.append(f"  {shown(name)}: {cp.status}, {len(cp.entries)} entries")
    extras = [
        ".lock" if inv.has_lock_file else "",
        ".kafka_cleanshutdown" if inv.clean_shutdown else "",
        "bootstrap.checkpoint" if inv.has_bootstrap_checkpoint else "",
        "__cluster_metadata-0" if inv.has_cluster_metadata else "",
        *(shown(d) for d in inv.special_dirs),
    ]
    out.append("  present: " + (", ".join(x for x in extras if x) or "-"))
    all_problems = inv.all_problems
    fatal = [p for p in all_problems if p.severity == "fatal"]
    if fatal:
        out.append("")
        out.append(f"!!! KAFKA WOULD FAIL TO START WITH THIS LOG DIR ({len(fatal)} fatal problem(s)) !!!")
        out.extend(f"!!! {shown(p, 1000)}" for p in fatal)
    by_kind: dict[str, list[PartitionDirInventory]] = {}
    for d in inv.partition_dirs:
        by_kind.setdefault(d.kind, []).append(d)
    out.append("")
    out.append(f"Partition dirs: {len(inv.partition_dirs)}")
    for kind in ("live", "future", "delete", "stray", "metadata", "unparseable"):
        dirs = by_kind.get(kind, [])
        if dirs:
            total = sum(d.bytes for d in dirs)
            out.append(f"  {kind:<12} {len(dirs):>6} dirs  {_size(total):>10}")
    for kind in ("delete", "stray", "future", "unparseable"):
        for d in by_kind.get(kind, []):
            out.append(f"    {kind}: {shown(d.name)}  topic_id={shown(d.topic_id or '-')}  {_size(d.bytes)}")
    rest = [p for p in all_problems if p.severity != "fatal"]
    if rest:
        out.append("")
        out.append(f"Problems: {', '.join(f'{n} {s}' for s, n in _counts(all_problems).items() if n)}")
        order = {s: i for i, s in enumerate(SEVERITIES)}
        for p in sorted(rest, key=lambda p: order[p.severity])[:max_problems]:
            out.append(f"  {shown(p, 1000)}")
        if len(rest) > max_problems:
            out.append(f"  ... {len(rest) - max_problems} more (use --json for all)")
    return "\n".join(out) + "\n"
