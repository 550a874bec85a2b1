"""What a listing backend hands to the inventory scan: every entry of a log dir down to depth 2, plus read errors.

A ``Listing`` is the result of ONE pass over a log dir (one ``os.scandir`` or compiled ``scan_dir`` per directory
locally, one remote ``find`` over SSH); :class:`~pipelines.crawl.listing_lister.ListingLister` serves it to
``pipelines.kafka.logdir.scan_log_dir``, so the scan itself never lists again.

Symbolic links are followed, as Kafka does (``java.io.File.isDirectory``): a link to a directory is a directory; a
link whose target is missing is an entry of kind ``other`` and a ``ListingError``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pipelines.kafka.checkpoints import LEADER_EPOCH, ROOT_CHECKPOINTS
from pipelines.kafka.dir_summary import DirSummary
from pipelines.kafka.partition_metadata import FILE_NAME as PARTITION_METADATA
from pipelines.kafka.root_files import CLEAN_SHUTDOWN, META_PROPERTIES, QUORUM_STATE

EntryKind = Literal["file", "directory", "other"]

#: Small root files whose CONTENT the inventory needs (prefetched by remote backends).
ROOT_SMALL_FILES: tuple[str, ...] = (META_PROPERTIES, CLEAN_SHUTDOWN, *ROOT_CHECKPOINTS)
#: Small files inside a partition dir whose content the inventory needs.
PARTITION_SMALL_FILES: tuple[str, ...] = (PARTITION_METADATA, LEADER_EPOCH, QUORUM_STATE)
#: Files larger than this are never prefetched (a checkpoint of 100k partitions is ~5 MB; read lazily then).
SMALL_FILE_LIMIT = 1 << 20

BROKEN_LINK = "broken symbolic link"


@dataclass(frozen=True, slots=True)
class ListedEntry:
    """One entry; ``rel`` is relative to the log dir, ``/``-separated (``orders-0/00000000000000000000.log``)."""

    rel: str
    kind: EntryKind
    size: int
    mtime_ns: int
    islink: bool = False


@dataclass(frozen=True, slots=True)
class ListingError:
    """Something the backend could not list or read. ``rel`` is ``""`` for the log dir itself."""

    rel: str
    stage: str  # list | read | statvfs
    error_class: str
    reason: str


@dataclass(frozen=True, slots=True)
class FsTotals:
    """Filesystem totals of the log dir's mount (``statvfs``; free = available to unprivileged users)."""

    total_bytes: int
    used_bytes: int
    free_bytes: int

    @classmethod
    def from_blocks(cls, frsize: int, blocks: int, bfree: int, bavail: int) -> FsTotals:
        return cls(blocks * frsize, (blocks - bfree) * frsize, bavail * frsize)


@dataclass(slots=True)
class Listing:
    """A log dir listed once.

    Attributes:
        root: the log dir's path as the served filesystem names it (no scheme, no trailing ``/``).
        entries: by ``rel``; parents always precede children in insertion order.
        contents: prefetched bytes by ``rel`` (remote backends); other files go through ``reader``.
        read_errors: files whose prefetch failed, by ``rel``: reading them raises this error, no second attempt.
        failed_dirs: directories that could not be listed, by ``rel``: listing them raises this error.
        reader: reads a whole file by absolute path on demand; None means "only prefetched content exists".
        errors: listing errors (unreadable dirs, broken links), each reported once as a crawl error.
        totals: filesystem totals, when the backend could get them.
        closers: called by ``close()`` once the scan is done (SSH connections).
        descended: False when the backend listed the root only (``fanout_above`` exceeded, or ``only`` given).
        summaries: directories the backend summed up while listing them (``summarize=True``, compiled lister), by
            ``rel``: ``entries`` then holds only their ``summary.others`` (no segment files), and the scan takes
            the summary instead of listing them.
    """

    root: str
    entries: dict[str, ListedEntry] = field(default_factory=dict)
    contents: dict[str, bytes] = field(default_factory=dict)
    read_errors: dict[str, OSError] = field(default_factory=dict)
    failed_dirs: dict[str, OSError] = field(default_factory=dict)
    reader: Callable[[str], bytes] | None = None
    errors: list[ListingError] = field(default_factory=list)
    totals: FsTotals | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    descended: bool = True
    summaries: dict[str, DirSummary] = field(default_factory=dict)

    def close(self) -> None:
        """Release what the reader holds (an SSH connection); safe to call twice."""
        closers, self.closers = self.closers, []
        for close in closers:
            with contextlib.suppress(OSError):
                close()

    def descend_only(self, dirs: frozenset[str]) -> None:
        """Keep every root entry but the contents of only the root directories in ``dirs``."""

        def keep(rel: str) -> bool:
            top, sep, _ = rel.partition("/")
            return not sep or top in dirs

        self.descended = False
        self.entries = {r: e for r, e in self.entries.items() if keep(r)}
        self.contents = {r: c for r, c in self.contents.items() if keep(r)}
        self.read_errors = {r: c for r, c in self.read_errors.items() if keep(r)}
        self.failed_dirs = {r: c for r, c in self.failed_dirs.items() if keep(r) and (r in dirs or "/" in r)}
        self.summaries = {r: s for r, s in self.summaries.items() if r in dirs}
        self.errors = [
            e for e in self.errors if keep(e.rel) and ("/" in e.rel or e.rel in dirs or self._is_root_file(e.rel))
        ]

    def _is_root_file(self, rel: str) -> bool:
        entry = self.entries.get(rel)
        return "/" not in rel and (entry is None or entry.kind != "directory")

    def add(self, entry: ListedEntry) -> None:
        self.entries[entry.rel] = entry

    def abs_path(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    @property
    def partition_dir_names(self) -> list[str]:
        """Names of the directories directly under the root, sorted."""
        return sorted(e.rel for e in self.entries.values() if e.kind == "directory" and "/" not in e.rel)


def wanted_content(rel: str) -> bool:
    """True for the small files whose content the inventory reads (root files and per-partition files)."""
    parent, _, name = rel.rpartition("/")
    if not parent:
        return name in ROOT_SMALL_FILES
    return "/" not in parent and name in PARTITION_SMALL_FILES


def error_class_for_reason(reason: str) -> str:
    """Map a ``strerror`` text (from ``find``/``tar`` stderr) to the Python exception class name."""
    lowered = reason.lower()
    for needle, name in (
        ("permission denied", "PermissionError"),
        ("no such file", "FileNotFoundError"),
        ("not a directory", "NotADirectoryError"),
        ("is a directory", "IsADirectoryError"),
        ("loop", "OSError"),
    ):
        if needle in lowered:
            return name
    return "OSError"
