"""``load_metadata``: replay a ``__cluster_metadata-0`` directory, one snapshot, or one segment (via fsspec).

Directory: the newest VALID ``<end>-<epoch>.checkpoint`` (``.checkpoint.part`` and ``.checkpoint.deleted`` are
ignored; a snapshot that fails to decode falls back to the next older one, reported), then the ``.log`` segments
from the snapshot's end offset (records below it are skipped). Completeness is judged as described in
``pipelines.metadata.completeness``; every reason is one line in ``image.incomplete_reasons``.

A lone ``.checkpoint`` is complete when it decodes fully (it is a full image); a lone ``.log`` is complete only if it
starts at offset 0 and reads cleanly.

Not guaranteed: the on-disk log may hold records beyond the Raft high watermark that Kafka later truncates; nothing
in the directory tells them apart.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.checkpoints import read_leader_epoch_checkpoint
from pipelines.kafka.gc_pause import gc_paused
from pipelines.kafka.listing import read_regular_file
from pipelines.kafka.metadata_log import MetadataLog, iter_metadata_log
from pipelines.kafka.segment_files import classify_file
from pipelines.kafka.snapshot_names import parse_snapshot_file
from pipelines.metadata import completeness
from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import MetadataImage
from pipelines.metadata.image_delta import FaultHandler
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.source import ControllerSource, ControllerView
from pipelines.progress import advance

__all__ = ["FileUse", "MetadataLogSource", "ReplayResult", "load_metadata"]


@dataclass(frozen=True, slots=True)
class FileUse:
    """One file of the source and what the loader did with it."""

    name: str
    kind: str  # checkpoint | log | ignored
    used: bool
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    note: str = ""
    first_timestamp_ms: int | None = None
    """Append time of the first record used (a snapshot: its LastContainedLogTimestamp)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    image: MetadataImage
    events: tuple[MetadataEvent, ...]
    errors: tuple[str, ...]
    files: tuple[FileUse, ...]
    notes: tuple[str, ...] = ()
    snapshot_timestamp_ms: int | None = None
    """``LastContainedLogTimestamp`` of the snapshot the replay started from (None: no snapshot used)."""
    events_not_kept: int = 0
    """Events replayed but not in ``events`` (``load_metadata(keep_partition_added=False)``)."""

    @property
    def event_count(self) -> int:
        """Every event the replay emitted, kept or not."""
        return len(self.events) + self.events_not_kept

    @property
    def complete(self) -> bool:
        return self.image.complete


class LocalFs:
    """The few filesystem calls a metadata load makes, on a plain local path, without importing fsspec (a third
    of ``metadata show``'s start-up)."""

    protocol = ("file", "local")

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def ls(self, path: str, detail: bool = False) -> list[str]:
        return [os.path.join(path, name) for name in os.listdir(path)]

    def cat_file(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()


def url_to_fs(url: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """``fsspec.core.url_to_fs``, or :class:`LocalFs` for a plain path (no scheme) without storage options."""
    if "://" not in url and "::" not in url and not storage_options:
        return LocalFs(), os.path.abspath(url)
    import fsspec

    return fsspec.core.url_to_fs(url, **(storage_options or {}))


class _Source:
    """Reads files through fsspec; local files are memory-mapped by the codec instead of copied."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None) -> None:
        self.fs, self.path = url_to_fs(url, storage_options)
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))

    def data(self, path: str) -> Any:
        return path if self.local else self.fs.cat_file(path)

    def text(self, path: str) -> bytes:
        return read_regular_file(path) if self.local else self.fs.cat_file(path)  # a FIFO must not block a read


class _Run:
    """Mutable bookkeeping of one load."""

    def __init__(self, source: str, fault_handler: FaultHandler | None, keep_partition_added: bool = True) -> None:
        self.loader = MetadataLoader(source=source, fault_handler=fault_handler,
                                     keep_partition_added=keep_partition_added)
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.reasons: list[str] = []
        self.files: list[FileUse] = []
        self.expected: int | None = None  # next offset we need
        self.read_any = False
        self.snapshot_timestamp_ms: int | None = None

    def raw_entries(self, log: MetadataLog, name: str, start: int, first: list[tuple[int, int]]) -> Iterator[tuple]:
        """``log.iter_raw()`` items at or after ``start``, checking that offsets are contiguous; ``first`` gets
        the first (offset, batch timestamp) passed on. Needs ``expected >= start`` (set by the callers)."""
        items = log.iter_raw()
        for item in items:  # up to the first item passed on
            offset = item[0]
            if offset != self.expected and not self._accept(offset, name, start):
                continue
            first.append((offset, item[1]))
            self.read_any = True
            self.expected = offset + 1
            yield item
            break
        expected = self.expected  # kept in a local on the hot path, written back before anything reads it
        try:
            for item in items:
                offset = item[0]
                if offset != expected:
                    self.expected = expected
                    if not self._accept(offset, name, start):
                        continue
                expected = offset + 1
                yield item
        finally:
            self.expected = expected

    def _accept(self, offset: int, name: str, start: int) -> bool:
        """An offset other than the next expected one: below ``start`` or repeated (skipped), or after a gap."""
        if offset < start:
            return False
        expected = self.expected
        if expected is not None:
            if offset < expected:
                self.errors.append(f"{name}: offset {offset} repeats an offset already replayed; skipped")
                return False
            self.reasons.append(f"gap in the metadata log: offsets {expected} to {offset - 1} are missing "
                                f"(before {name})")
        return True

    def log_problems(self, log: MetadataLog, name: str) -> None:
        for err in log.errors:
            self.errors.append(f"{name}: {err.message}")
            self.reasons.append(f"{name}: could not decode past offset {log.last_offset} ({err.message})")
        if log.trailing_invalid_bytes:
            self.reasons.append(f"{name}: {log.trailing_invalid_bytes} trailing invalid bytes (truncated batch)")

    def result(self, complete_ok: bool) -> ReplayResult:
        loader = self.loader
        image = loader.finish()
        if loader.open_transaction is not None:
            self.reasons.append(f"metadata transaction begun at offset {loader.open_transaction} is still open "
                                "at the end of the log; its records were not applied")
        if image.replay_errors:
            first = image.replay_errors[0]
            self.reasons.append(f"{len(image.replay_errors)} record(s) could not be replayed (first: {first})")
            self.errors.extend(str(p) for p in image.replay_errors)
        reasons = tuple(dict.fromkeys(self.reasons))
        image = image.with_completeness(complete_ok and not reasons, reasons)
        return ReplayResult(image, tuple(loader.events), tuple(self.errors), tuple(self.files), tuple(self.notes),
                            self.snapshot_timestamp_ms, loader.events_not_kept)


def _load_snapshot(run: _Run, src: _Source, path: str) -> bool:
    name = posixpath.basename(path)
    try:
        parsed = parse_snapshot_file(name)
        end, epoch = parsed.end_offset, parsed.epoch
    except DecodeError:
        end, epoch = 0, 0  # e.g. bootstrap.checkpoint: offsets (0, 0)
    try:
        log = iter_metadata_log(src.data(path), on_error="stop")
        entries = list(log.iter_raw())
    except (OSError, DecodeError) as exc:
        run.errors.append(f"{name}: unreadable snapshot ({exc})")
        run.files.append(FileUse(name, "checkpoint", False, note=f"unreadable: {exc}"))
        return False
    problems = [e.message for e in log.errors]
    if log.trailing_invalid_bytes:
        problems.append(f"{log.trailing_invalid_bytes} trailing invalid bytes")
    if not problems:
        outcome = run.loader.load_snapshot_raw(entries, last_offset=end - 1, epoch=epoch)
        problems = list(outcome.problems)
    if problems:
        run.errors.append(f"{name}: invalid snapshot, not used: {'; '.join(problems)}")
        run.files.append(FileUse(name, "checkpoint", False, note="invalid: " + "; ".join(problems)))
        return False
    run.files.append(FileUse(name, "checkpoint", True, outcome.records, 0, log.last_offset,
                             note=f"end offset {end}, epoch {epoch}", first_timestamp_ms=outcome.timestamp_ms))
    run.expected = end
    run.snapshot_timestamp_ms = outcome.timestamp_ms
    advance(outcome.records, unit="records replayed")
    return True


def _replay_segment(run: _Run, src: _Source, path: str, start: int) -> None:
    name = posixpath.basename(path)
    try:
        log = iter_metadata_log(src.data(path), on_error="stop")
        before = run.loader.records_seen
        first_seen: list[tuple[int, int]] = []
        run.loader.replay_raw(run.raw_entries(log, name, start, first_seen))
    except OSError as exc:
        run.errors.append(f"{name}: unreadable segment ({exc})")
        run.reasons.append(f"{name}: unreadable segment ({exc})")
        run.files.append(FileUse(name, "log", False, note=f"unreadable: {exc}"))
        return
    run.log_problems(log, name)
    advance(run.loader.records_seen, unit="records replayed")
    count = run.loader.records_seen - before
    first_offset, first_ts = first_seen[0] if first_seen else (None, None)
    run.files.append(FileUse(name, "log", True, count, first_offset, log.last_offset if count else None,
                             first_timestamp_ms=first_ts))


def _load_dir(run: _Run, src: _Source, snapshot: str) -> ReplayResult:
    listing = sorted(posixpath.basename(p.rstrip("/")) for p in src.fs.ls(src.path, detail=False))
    snapshots: list[tuple[int, int, str]] = []
    logs: dict[int, str] = {}
    indexes: set[int] = set()
    producer_snapshots: list[int] = []
    for name in listing:
        info = classify_file(name)
        if info.kind == "raft_snapshot":
            snapshots.append((info.base_offset or 0, info.epoch or 0, name))
        elif info.kind in ("raft_snapshot_partial", "raft_snapshot_deleted"):
            run.files.append(FileUse(name, "ignored", False, note=info.kind))
        elif info.kind == "segment" and not info.state and info.base_offset is not None:
            if info.suffix == ".log":
                logs[info.base_offset] = name
            elif info.suffix in (".index", ".timeindex"):
                indexes.add(info.base_offset)
            elif info.suffix == ".snapshot":
                producer_snapshots.append(info.base_offset)
    join = posixpath.join
    snapshot_ok = False
    for _end, _epoch, name in sorted(snapshots, reverse=snapshot == "newest"):
        if _load_snapshot(run, src, join(src.path, name)):
            snapshot_ok = True
            break
        run.notes.append(f"fell back from invalid snapshot {name}")
    start = run.expected if snapshot_ok and run.expected is not None else 0
    run.expected = start
    bases = sorted(logs)
    if not bases:
        run.reasons.append("no .log segment in the directory (Kafka always keeps an active segment): records after "
                           + (f"the snapshot end offset {start}" if snapshot_ok else "offset 0") + " may be missing")
    first = max((i for i, b in enumerate(bases) if b <= start), default=0)
    for i, base in enumerate(bases):
        if i < first:
            run.files.append(FileUse(logs[base], "log", False, note=f"entirely below the replay start {start}"))
            continue
        _replay_segment(run, src, join(src.path, logs[base]), start)
    last = (run.expected or 0) - 1
    reasons, notes = completeness.missing_segment_reasons(indexes, bases, start)
    run.reasons.extend(reasons)
    run.notes.extend(notes)
    run.reasons.extend(completeness.producer_snapshot_reasons(producer_snapshots, last))
    if "leader-epoch-checkpoint" in listing:
        try:
            checkpoint = read_leader_epoch_checkpoint(src.text(join(src.path, "leader-epoch-checkpoint")))
            entries = [(e.epoch, e.start_offset) for e in checkpoint.entries]
            run.reasons.extend(completeness.leader_epoch_reasons(entries, last))
        except (OSError, DecodeError) as exc:
            run.notes.append(f"leader-epoch-checkpoint unreadable: {exc}")
    return run.result(complete_ok=True)


def load_metadata(url_or_path: str, storage_options: dict[str, Any] | None = None, *,
                  fault_handler: FaultHandler | None = None, snapshot: str = "newest",
                  keep_partition_added: bool = True) -> ReplayResult:
    """Replay a ``__cluster_metadata-0`` directory, a snapshot ``.checkpoint`` or a ``.log`` segment.

    ``snapshot="oldest"`` starts a directory's replay from its oldest valid snapshot instead of the newest: the
    same image, but the events of every record still on disk (what the executor dates garbage by).

    ``keep_partition_added=False`` (for a caller that only counts events, like ``metadata show``'s summary): the
    ``partition_added`` events of new partitions (of snapshots and segments) are counted in ``events_not_kept`` instead
    of kept in ``events`` (see :class:`MetadataLoader`); the image, the other events and the errors are the same.

    Raises:
        FileNotFoundError: the path does not exist.
        ReplayError: only with a raising ``fault_handler`` (strict mode).
    """
    src = _Source(str(url_or_path), storage_options)
    if not src.fs.exists(src.path):
        raise FileNotFoundError(f"no such file or directory: {url_or_path}")
    with gc_paused():  # the image's objects hold no cycles; collections cost ~15-20% of a 1M-record replay
        return _load(_Run(str(url_or_path), fault_handler, keep_partition_added), src, url_or_path, snapshot)


def _load(run: _Run, src: _Source, url_or_path: str, snapshot: str) -> ReplayResult:
    if src.fs.isdir(src.path):
        return _load_dir(run, src, snapshot)
    name = posixpath.basename(src.path)
    if name.endswith(".checkpoint"):
        ok = _load_snapshot(run, src, src.path)
        if not ok:
            run.reasons.append(f"{name} is not a valid snapshot")
        return run.result(complete_ok=ok)
    info = classify_file(name)
    start = info.base_offset if info.kind == "segment" and info.base_offset is not None else 0
    run.expected = start
    _replay_segment(run, src, src.path, start)
    if start != 0:
        run.reasons.append(f"a lone segment starting at offset {start}: the state before it is unknown")
    if not run.read_any:
        run.reasons.append(f"{name}: no records")
    return run.result(complete_ok=start == 0)


class MetadataLogSource(ControllerSource):
    """``metadata.kind: metadata_log``: a copy of a controller's ``__cluster_metadata-0`` (any fsspec URL)."""

    kind = "metadata_log"

    def load(self) -> ControllerView:
        assert self.config.source is not None
        result = load_metadata(self.config.source, self.config.storage_options or None)
        return ControllerView(result.image, result.events, self.config.source, result.notes + result.errors)
