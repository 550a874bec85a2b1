"""What the inventory scan keeps of one partition dir's files: counts, bytes, segment offsets, times, fingerprint.

``summarize_entries`` is the reference; the crawl's compiled lister (``pipelines/crawl/_native_dirscan.c``)
computes the same ``DirSummary`` while it lists, from the segment-name table ``SEGMENT_TAIL_CODES`` built here, so
Kafka's naming rules live in ``segment_files`` only. Segment files are summed up; every other entry (subdirectories,
fixed-name files, ``.tmp`` leftovers, raft snapshots, unknown names) is kept in ``others`` for the scan's checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from pipelines.kafka.fingerprint import fingerprint_entries, fingerprint_triples
from pipelines.kafka.listing import FileEntry
from pipelines.kafka.segment_files import _SEGMENT_TAILS, INDEX_SUFFIXES, classify_file

SEG_TRANSIENT, SEG_LOG, SEG_INDEX, SEG_OTHER = 0, 1, 2, 3
"""What a segment file counts for: a transient state, a ``.log``, an index, or nothing (``.snapshot``)."""


def _tail_code(suffix: str, state: str) -> int:
    if state:
        return SEG_TRANSIENT
    if suffix == ".log":
        return SEG_LOG
    return SEG_INDEX if suffix in INDEX_SUFFIXES else SEG_OTHER


SEGMENT_TAIL_CODES: tuple[tuple[bytes, int], ...] = tuple(
    (tail.encode("ascii"), _tail_code(suffix, state)) for tail, (suffix, state) in _SEGMENT_TAILS.items()
)
"""What may follow a segment file's 20 digits, with its code (for the compiled lister)."""


@dataclass(frozen=True, slots=True)
class DirSummary:
    """One partition dir's entries, summed up. Times are ns (0 when no file had a positive time).

    ``contents``: small files (``partition.metadata``, ...) the lister read while listing, by name; the scan
    reads any other through the lister."""

    files: int
    bytes: int
    log_bytes: int
    index_bytes: int
    segment_count: int
    min_base_offset: int | None
    max_base_offset: int | None
    index_sets: int
    orphan_index_sets: int
    transient: int
    oldest_ns: int
    newest_ns: int
    fingerprint: str
    others: tuple[FileEntry, ...]
    contents: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))


def summarize_entries(entries: Sequence[FileEntry]) -> DirSummary:
    """The reference summary; this loop runs once per file of every partition dir of a pure-Python crawl."""
    n_files = log_bytes = index_bytes = total_bytes = transient = 0
    log_offsets: list[int] = []
    index_offsets: set[int] = set()
    others: list[FileEntry] = []
    oldest = newest = 0
    for e in entries:
        if e.is_dir:
            others.append(e)
            continue
        n_files += 1
        total_bytes += e.size
        mtime = e.mtime_ns
        if mtime > 0:
            if not oldest or mtime < oldest:
                oldest = mtime
            if mtime > newest:
                newest = mtime
        fn = classify_file(e.name)
        if fn.kind != "segment":
            others.append(e)
        elif fn.state:
            transient += 1
        elif fn.suffix == ".log":
            log_bytes += e.size
            log_offsets.append(fn.base_offset or 0)
        elif fn.suffix in INDEX_SUFFIXES:
            index_bytes += e.size
            index_offsets.add(fn.base_offset or 0)
    return DirSummary(
        files=n_files, bytes=total_bytes, log_bytes=log_bytes, index_bytes=index_bytes,
        segment_count=len(log_offsets), min_base_offset=min(log_offsets) if log_offsets else None,
        max_base_offset=max(log_offsets) if log_offsets else None, index_sets=len(index_offsets),
        orphan_index_sets=len(index_offsets.difference(log_offsets)), transient=transient,
        oldest_ns=oldest, newest_ns=newest, fingerprint=fingerprint_entries(fingerprint_triples(entries)),
        others=tuple(others),
    )  # fmt: skip


__all__ = ["SEGMENT_TAIL_CODES", "DirSummary", "summarize_entries"]
