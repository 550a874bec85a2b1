"""Inventory of one Kafka log directory: root files, checkpoints, and every partition directory.

``scan_log_dir`` reads what Kafka reads at startup and reports, as ``Problem``s, everything Kafka would choke on
(severity ``fatal``: an unparseable directory name or two directories for one partition make ``LogManager.loadLogs``
throw), refuse (``error``), or merely tolerate. It never raises for a file or directory below the root: each one
that cannot be read becomes a problem with its path and the reason.

Raises only when the root itself cannot be listed (``OSError``: missing, not a directory, no permission).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pipelines.kafka.bounded_read import FileTooLarge, limit_for
from pipelines.kafka.checkpoints import (
    LEADER_EPOCH,
    LOG_START_OFFSET,
    RECOVERY_POINT,
    REPLICATION_OFFSET,
    ROOT_CHECKPOINTS,
    CheckpointError,
    EpochEntry,
    OffsetEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from pipelines.kafka.dir_summary import DirSummary, summarize_entries
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.fingerprint import fingerprint_entries, fingerprint_topic_id, fingerprint_triples, with_topic_id
from pipelines.kafka.listing import FileEntry, Lister, lister_for
from pipelines.kafka.meta_properties import MetaProperties, read_meta_properties
from pipelines.kafka.partition_metadata import FILE_NAME as PARTITION_METADATA
from pipelines.kafka.partition_metadata import (
    PartitionMetadataError,
    kafka_written_topic_id,
    read_partition_metadata,
)
from pipelines.kafka.partition_name import (
    CLUSTER_METADATA_TOPIC,
    DirKind,
    is_special_dir,
    kafka_startup_message,
    parse_partition_dir_name,
)
from pipelines.kafka.problems import Problem
from pipelines.kafka.root_files import (
    BOOTSTRAP_CHECKPOINT,
    CLEAN_SHUTDOWN,
    KNOWN_ROOT_FILES,
    LOCK,
    META_PROPERTIES,
    QUORUM_STATE,
    CleanShutdown,
    MalformedQuorumState,
    QuorumState,
    is_tmp_leftover,
    read_clean_shutdown,
    read_quorum_state,
)
from pipelines.kafka.segment_files import FileName, classify_file
from pipelines.kafka.uuid import METADATA_TOPIC_ID

METADATA_TOPIC_TEXT = str(METADATA_TOPIC_ID)

CROSS_CHECKED = (RECOVERY_POINT, LOG_START_OFFSET, REPLICATION_OFFSET)
"""Checkpoints compared with the partition dirs (the cleaner checkpoint only lists compacted partitions)."""


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """One root checkpoint: ``status`` is ok | empty_file | missing | malformed | version_mismatch |
    count_mismatch | unreadable."""

    name: str
    status: str
    version: int | None = None
    declared_count: int | None = None
    entries: tuple[OffsetEntry, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionDirInventory:
    """One subdirectory of the log dir that Kafka would treat as a partition directory (or fail on)."""

    name: str
    path: str
    kind: DirKind
    topic: str | None
    partition: int | None
    unique_id: str | None
    topic_may_be_truncated: bool
    topic_id: str | None
    partition_metadata_status: str
    files: int
    bytes: int
    log_bytes: int
    index_bytes: int
    segment_count: int
    min_base_offset: int | None
    max_base_offset: int | None
    oldest_mtime_ms: int | None
    newest_mtime_ms: int | None
    dir_mtime_ms: int | None
    fingerprint: str
    entries: tuple[FileEntry, ...] = ()
    leader_epochs: tuple[EpochEntry, ...] = ()
    quorum_state: QuorumState | None = None
    problems: tuple[Problem, ...] = ()

    def classified_files(self) -> list[tuple[FileEntry, FileName]]:
        """Every file entry with its parsed name (for per-file detail rows)."""
        return [(e, classify_file(e.name)) for e in self.entries if not e.is_dir]


_new_dir_inventory = fast_constructor(PartitionDirInventory)


@dataclass(frozen=True, slots=True)
class LogDirInventory:
    log_dir: str
    dir_mtime_ms: int | None
    meta_properties: MetaProperties | None
    meta_properties_status: str  # ok | missing | unreadable | invalid
    checkpoints: Mapping[str, CheckpointInfo]
    clean_shutdown: CleanShutdown | None
    has_lock_file: bool
    bootstrap_checkpoint_bytes: int | None
    tmp_leftovers: tuple[str, ...]
    special_dirs: tuple[str, ...]
    unknown_root_files: tuple[str, ...]
    root_files: tuple[FileEntry, ...]
    partition_dirs: tuple[PartitionDirInventory, ...]
    problems: tuple[Problem, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def has_cluster_metadata(self) -> bool:
        return any(d.kind == "metadata" and d.topic == CLUSTER_METADATA_TOPIC for d in self.partition_dirs)

    @property
    def has_bootstrap_checkpoint(self) -> bool:
        return self.bootstrap_checkpoint_bytes is not None

    @property
    def all_problems(self) -> tuple[Problem, ...]:
        """Root problems followed by every partition dir's problems."""
        return self.problems + tuple(p for d in self.partition_dirs for p in d.problems)


# -- fingerprint ----------------------------------------------------------------------------------


def fingerprint_dir(path: str, storage_options: dict[str, Any] | None = None, *, fs: Any = None) -> str:
    """List ``path`` (one listing), read its ``partition.metadata`` and fingerprint it as the scan does. Raises
    ``OSError`` when it cannot be listed."""
    lister, native = lister_for(path, storage_options, fs)
    entries = lister.list_dir(native)
    data = None
    if any(e.name == PARTITION_METADATA and not e.is_dir for e in entries):
        try:
            data = lister.read_bytes(lister.join(native, PARTITION_METADATA))
        except OSError:
            data = None  # the scan's "unreadable": no topic id
    return with_topic_id(fingerprint_entries(fingerprint_triples(entries)), fingerprint_topic_id(data))


# -- scanning -------------------------------------------------------------------------------------


def _ms(ns: int | None) -> int | None:
    return ns // 1_000_000 if ns is not None and ns > 0 else None


def _read(lister: Lister, path: str, problems: list[Problem], what: str) -> bytes | None:
    """The file's bytes, or None with an ``{what}_unreadable`` problem (also when it is above the limit for
    ``what``: :mod:`pipelines.kafka.bounded_read`; it is then never read whole)."""
    limit = limit_for(what)
    try:
        return lister.read_bytes(path, limit)
    except FileTooLarge:
        problems.append(_too_large(what, limit, path))
        return None
    except OSError as exc:
        problems.append(Problem("error", f"{what}_unreadable", f"{type(exc).__name__}: {exc}", path))
        return None


def _too_large(what: str, limit: int, path: str) -> Problem:
    return Problem("error", f"{what}_unreadable", f"FileTooLarge: larger than the {limit}-byte limit for {what}", path)


def _summary(
    lister: Lister, path: str, summary: DirSummary | None, keep_entries: bool
) -> tuple[DirSummary, tuple[FileEntry, ...]]:
    """The dir's summary: the lister's, when it summed the dir up while listing (then no per-file entries)."""
    if summary is not None:
        return summary, ()
    entries = tuple(lister.list_dir(path))
    return summarize_entries(entries), entries if keep_entries else ()


def _read_small(lister: Lister, path: str, contents: Mapping[str, bytes], name: str, problems: list[Problem],
                what: str) -> bytes | None:  # fmt: skip
    """File ``name`` of partition dir ``path``: as the lister read it while listing (``contents``), else now."""
    data = contents.get(name)
    if data is None or len(data) > limit_for(what):  # above its limit: refused by the lister, as when not read
        return _read(lister, lister.join(path, name), problems, what)
    return data


def _scan_partition_dir(
    lister: Lister, path: str, entry: FileEntry, summary: DirSummary | None, keep_entries: bool
) -> PartitionDirInventory:
    """One partition dir; ``summary``: the lister's, when it summed the dir up while listing it."""
    parsed = parse_partition_dir_name(entry.name)
    problems: list[Problem] = []
    if not parsed.parsed:
        problems.append(
            Problem("fatal", "unparseable_dir_name", f"{kafka_startup_message(entry.name)} ({parsed.reason})", path)
        )
    truncated = parsed.unique_id is not None and parsed.topic_may_be_truncated  # only suffixed names are cut
    if truncated:
        problems.append(Problem("info", "topic_may_be_truncated", "name is 255 chars: the topic may be cut", path))
    try:
        summary, entries = _summary(lister, path, summary, keep_entries)
    except OSError as exc:
        problems.append(Problem("error", "dir_unreadable", f"{type(exc).__name__}: {exc}", path))
        return PartitionDirInventory(
            entry.name, path, parsed.kind, parsed.topic, parsed.partition, parsed.unique_id,
            truncated, None, "unreadable", 0, 0, 0, 0, 0, None, None, None, None,
            _ms(entry.mtime_ns), "", problems=tuple(problems),
        )  # fmt: skip
    transient = summary.transient
    contents = summary.contents
    unknown: list[str] = []
    tmp_problems: list[Problem] = []
    present: set[str] = set()  # names of the files with fixed names (partition.metadata, ...)
    for e in summary.others:  # subdirectories and files that are not segment files, in listing order
        if e.is_dir:
            problems.append(Problem("warning", "subdirectory", f"unexpected subdirectory {e.name!r}", path))
            continue
        kind = classify_file(e.name).kind
        if kind == "unknown":
            unknown.append(e.name)
        elif kind == "tmp":
            tmp_problems.append(Problem("warning", "tmp_leftover", f"interrupted atomic write: {e.name}", path))
        elif kind == "raft_snapshot_partial" or kind == "raft_snapshot_deleted":
            transient += 1
        else:
            present.add(e.name)
    problems.extend(tmp_problems)
    if transient:
        problems.append(Problem("info", "transient_files", f"{transient} .deleted/.cleaned/.swap/.part file(s)", path))
    if unknown:
        problems.append(Problem("info", "unknown_files", f"unknown file(s): {', '.join(sorted(unknown)[:10])}", path))
    if summary.orphan_index_sets:
        problems.append(
            Problem("info", "index_without_log", f"{summary.orphan_index_sets} index file set(s) without their .log",
                    path)
        )  # fmt: skip
    if not summary.segment_count and not summary.index_sets and parsed.kind != "unparseable":
        problems.append(Problem("info", "no_segment_files", "no segment files", path))

    topic_id: str | None = None
    pm_status = "missing"
    if PARTITION_METADATA in present:
        data = _read_small(lister, path, contents, PARTITION_METADATA, problems, "partition_metadata")
        pm_status = "unreadable" if data is None else "ok"
        topic_id = None if data is None else kafka_written_topic_id(data)
        if data is not None and topic_id is None:
            pm_path = lister.join(path, PARTITION_METADATA)
            try:
                pm = read_partition_metadata(data)
            except PartitionMetadataError as exc:
                pm_status = exc.status
                problems.append(Problem("error", f"partition_metadata_{exc.status}", str(exc), pm_path))
            else:
                topic_id = str(pm.topic_id)
                problems.extend(p.at(pm_path) for p in pm.problems)
        if topic_id is not None and (topic_id == METADATA_TOPIC_TEXT) != (parsed.kind == "metadata"):
            problems.append(
                Problem("warning", "unexpected_topic_id", f"topic_id {topic_id} for {parsed.kind} dir",
                        lister.join(path, PARTITION_METADATA))
            )  # fmt: skip
    elif parsed.kind != "unparseable":
        problems.append(Problem("warning", "partition_metadata_missing", "no partition.metadata", path))

    epochs: tuple[EpochEntry, ...] = ()
    if LEADER_EPOCH in present:
        data = _read_small(lister, path, contents, LEADER_EPOCH, problems, "leader_epoch_checkpoint")
        if data is not None:
            try:
                epochs = read_leader_epoch_checkpoint(data).entries
            except CheckpointError as exc:
                problems.append(
                    Problem("error", "leader_epoch_checkpoint_malformed", str(exc), lister.join(path, LEADER_EPOCH))
                )

    quorum: QuorumState | None = None
    if QUORUM_STATE in present:
        data = _read_small(lister, path, contents, QUORUM_STATE, problems, "quorum_state")
        if data is not None:
            try:
                quorum = read_quorum_state(data)
            except MalformedQuorumState as exc:
                problems.append(Problem("error", "quorum_state_malformed", str(exc), lister.join(path, QUORUM_STATE)))

    return _new_dir_inventory(  # every field, in declaration order (a frozen __init__ costs ~2 us per dir)
        entry.name, path, parsed.kind, parsed.topic, parsed.partition, parsed.unique_id, truncated, topic_id,
        pm_status, summary.files, summary.bytes, summary.log_bytes, summary.index_bytes, summary.segment_count,
        summary.min_base_offset, summary.max_base_offset, _ms(summary.oldest_ns), _ms(summary.newest_ns),
        _ms(entry.mtime_ns), with_topic_id(summary.fingerprint, topic_id), entries,
        epochs, quorum, tuple(problems),
    )  # fmt: skip


def _read_checkpoint(lister: Lister, root: str, name: str, present: bool, problems: list[Problem]) -> CheckpointInfo:
    if not present:
        return CheckpointInfo(name, "missing")
    path = lister.join(root, name)
    data = _read(lister, path, problems, "checkpoint")
    if data is None:
        return CheckpointInfo(name, "unreadable")
    try:
        cp = read_offset_checkpoint(data)
    except CheckpointError as exc:
        problems.append(Problem("error", f"checkpoint_{exc.status}", str(exc), path))
        return CheckpointInfo(name, exc.status, error=str(exc))
    return CheckpointInfo(name, cp.status, cp.version, cp.declared_count, cp.entries)


def _cross_check(
    root: str, checkpoints: Mapping[str, CheckpointInfo], dirs: list[PartitionDirInventory]
) -> list[Problem]:
    """Checkpoint entries without a partition dir, and live dirs a checkpoint does not list (both normal-ish)."""
    problems: list[Problem] = []
    live: set[tuple[str | None, int | None]] | None = None
    for name in CROSS_CHECKED:
        cp = checkpoints[name]
        if cp.status not in ("ok", "empty_file"):
            continue
        if live is None:
            live = {(d.topic, d.partition) for d in dirs if d.kind == "live"}
        listed = {(e.topic, e.partition) for e in cp.entries}
        absent = sorted(f"{t}-{p}" for t, p in listed - live)
        if absent:
            problems.append(
                Problem("info", "checkpoint_entry_without_dir", f"{name}: {len(absent)}: {', '.join(absent)}", root)
            )
        unlisted = sorted(f"{t}-{p}" for t, p in live - listed)
        # log-start-offset-checkpoint only lists logs whose start moved past their first segment: absence is normal
        if unlisted and cp.status == "ok" and name != LOG_START_OFFSET:
            problems.append(
                Problem("info", "dir_absent_from_checkpoint", f"{name}: {len(unlisted)}: {', '.join(unlisted)}", root)
            )
    return problems


def _duplicates(dirs: list[PartitionDirInventory]) -> list[Problem]:
    """Two live (or two future) dirs for one partition: Kafka throws "Duplicate log directories" at startup."""
    seen: set[tuple[str, str | None, int | None]] = set()
    twice: set[tuple[str, str | None, int | None]] = set()
    for d in dirs:
        if d.kind == "live" or d.kind == "future":
            key = (d.kind, d.topic, d.partition)
            if key in seen:
                twice.add(key)
            else:
                seen.add(key)
    if not twice:
        return []
    groups: dict[tuple[str, str | None, int | None], list[str]] = defaultdict(list)
    for d in dirs:
        key = (d.kind, d.topic, d.partition)
        if key in twice:
            groups[key].append(d.name)
    return [
        Problem("fatal", "duplicate_log_dirs", f"{kind} dirs {sorted(names)} are all {topic}-{partition}", "")
        for (kind, topic, partition), names in sorted(groups.items(), key=str)
    ]


def scan_log_dir(
    url_or_path: str,
    storage_options: dict[str, Any] | None = None,
    *,
    fs: Any = None,
    lister: Lister | None = None,
    keep_entries: bool = True,
) -> LogDirInventory:
    """Inventory one log dir (a local path, ``file://`` URL, or any fsspec URL / filesystem).

    ``lister`` given: ``url_or_path`` is the root as that lister names it (the crawl's pre-listed data); a lister
    with a ``summaries_under(root) -> Mapping[name, DirSummary]`` method hands over partition dirs it summed up
    itself.
    ``keep_entries``: False leaves ``PartitionDirInventory.entries`` empty (nobody asked for per-file detail).

    Raises:
        OSError: the root cannot be listed. Nothing below the root raises.
    """
    if lister is None:
        lister, root = lister_for(url_or_path, storage_options, fs)
    else:
        root = url_or_path
    top = lister.list_dir(root)
    problems: list[Problem] = []
    try:
        dir_mtime = _ms(lister.dir_mtime_ns(root))
    except OSError:
        dir_mtime = None

    files = {e.name: e for e in top if not e.is_dir}
    subdirs = sorted((e for e in top if e.is_dir), key=lambda e: e.name)

    meta: MetaProperties | None = None
    meta_status = "missing"
    if META_PROPERTIES in files:
        mp_path = lister.join(root, META_PROPERTIES)
        data = _read(lister, mp_path, problems, "meta_properties")
        if data is None:
            meta_status = "unreadable"
        else:
            meta = read_meta_properties(data)
            meta_status = "ok" if meta.kafka_would_accept else "invalid"
            problems.extend(p.at(mp_path) for p in meta.problems)
    else:
        problems.append(
            Problem("error", "meta_properties_missing", "no meta.properties (KRaft refuses an unformatted dir)", root)
        )

    checkpoints = {name: _read_checkpoint(lister, root, name, name in files, problems) for name in ROOT_CHECKPOINTS}

    clean: CleanShutdown | None = None
    if CLEAN_SHUTDOWN in files:
        cs_path = lister.join(root, CLEAN_SHUTDOWN)
        data = _read(lister, cs_path, problems, "clean_shutdown")
        if data is not None:
            clean = read_clean_shutdown(data)
            problems.extend(p.at(cs_path) for p in clean.problems)

    tmp = tuple(sorted(n for n in files if is_tmp_leftover(n)))
    for name in tmp:
        problems.append(
            Problem("warning", "tmp_leftover", f"interrupted atomic write: {name}", lister.join(root, name))
        )
    unknown = tuple(sorted(n for n in files if n not in KNOWN_ROOT_FILES and not is_tmp_leftover(n)))
    for name in unknown:
        problems.append(
            Problem("info", "unknown_root_file", f"Kafka ignores files here: {name}", lister.join(root, name))
        )

    special: list[str] = []
    dirs: list[PartitionDirInventory] = []
    summaries_under = None if keep_entries else getattr(lister, "summaries_under", None)
    summaries = summaries_under(root) if summaries_under is not None else {}
    for e in subdirs:
        path = lister.join(root, e.name)
        if is_special_dir(e.name):
            special.append(e.name)
            continue
        if e.name.startswith("."):
            problems.append(Problem("warning", "hidden_dir", f"hidden directory {e.name!r}", path))
        if e.is_symlink:
            problems.append(Problem("warning", "symlinked_dir", f"{e.name!r} is a symbolic link", path))
        dirs.append(_scan_partition_dir(lister, path, e, summaries.get(e.name), keep_entries))
    for e in (f for f in files.values() if f.is_symlink):
        problems.append(Problem("info", "symlinked_file", f"{e.name!r} is a symbolic link", lister.join(root, e.name)))

    problems.extend(_duplicates(dirs))
    problems.extend(_cross_check(root, checkpoints, dirs))
    bootstrap = files.get(BOOTSTRAP_CHECKPOINT)
    return LogDirInventory(
        log_dir=root,
        dir_mtime_ms=dir_mtime,
        meta_properties=meta,
        meta_properties_status=meta_status,
        checkpoints=MappingProxyType(checkpoints),
        clean_shutdown=clean,
        has_lock_file=LOCK in files,
        bootstrap_checkpoint_bytes=bootstrap.size if bootstrap else None,
        tmp_leftovers=tmp,
        special_dirs=tuple(special),
        unknown_root_files=unknown,
        root_files=tuple(sorted(files.values(), key=lambda f: f.name)),
        partition_dirs=tuple(dirs),
        problems=tuple(problems),
    )


__all__ = [
    "CheckpointInfo",
    "LogDirInventory",
    "PartitionDirInventory",
    "fingerprint_dir",
    "fingerprint_entries",
    "fingerprint_triples",
    "scan_log_dir",
]
