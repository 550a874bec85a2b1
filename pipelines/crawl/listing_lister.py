"""A :class:`~pipelines.kafka.listing.Lister` answering from a :class:`~pipelines.crawl.listing.Listing`.

What the crawl hands to ``scan_log_dir(..., lister=...)``: the answers a read-only fsspec filesystem over the
listing would give through ``FsspecLister`` (``tests/crawl/prelisted_fs.py`` is that filesystem, and the tests hold
the two to the same scan), without the fsspec round trip (no info dicts, no time-key guessing, no instance
tokenising of the whole listing). Entries become ``FileEntry`` objects once, grouped by directory, in listing order.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping

from pipelines.crawl.listing import Listing
from pipelines.kafka import bounded_read
from pipelines.kafka.dir_summary import DirSummary
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.listing import FileEntry

_new_file = fast_constructor(FileEntry)  # every field, in order; one per listed entry


class ListingLister:
    """Read-only view of one listing. ``failed_reads``: every read that failed, by ``rel`` (reported once)."""

    def __init__(self, listing: Listing, *, visible_dirs: frozenset[str] | None = None) -> None:
        """``visible_dirs``: when given, the root shows its files and only these directories (fan-out chunks)."""
        self.listing = listing
        self.failed_reads: dict[str, OSError] = {}
        self._prefix = listing.root.rstrip("/") + "/"
        children: dict[str, list[FileEntry]] = {"": []}
        summarized = listing.summaries
        for rel, e in listing.entries.items():
            parent, _, name = rel.rpartition("/")
            if parent in summarized:  # its entries are in the summary (list_dir refuses it)
                continue
            is_dir = e.kind == "directory"
            if parent or not is_dir or visible_dirs is None or rel in visible_dirs:
                entry = _new_file(name, e.size, e.mtime_ns, is_dir, e.islink)
                kids = children.get(parent)
                if kids is None:
                    children[parent] = [entry]
                else:
                    kids.append(entry)
            if is_dir and rel not in children:
                children[rel] = []
        self._children = children

    def _rel(self, path: str) -> str:
        if path.startswith(self._prefix):
            return path[len(self._prefix) :]
        if path == self.listing.root:
            return ""
        raise FileNotFoundError(errno.ENOENT, "outside the listed log dir", path)

    def join(self, parent: str, name: str) -> str:
        return parent + name if parent.endswith("/") else f"{parent}/{name}"

    def list_dir(self, path: str) -> list[FileEntry]:
        rel = self._rel(path)
        failed = self.listing.failed_dirs.get(rel)
        if failed is not None:
            raise failed
        if rel in self.listing.summaries:  # only its non-segment entries were kept
            raise OSError(errno.EOPNOTSUPP, "summarized while listed: no per-file entries", path)
        kids = self._children.get(rel)
        if kids is None:
            if rel in self.listing.entries:
                raise NotADirectoryError(path)
            raise FileNotFoundError(errno.ENOENT, "not listed", path)
        return kids

    def summaries_under(self, path: str) -> Mapping[str, DirSummary]:
        """The directories directly under ``path`` (the root) that the backend summed up while listing them, by
        name: ``list_dir`` refuses those, and the scan takes their summaries instead."""
        return self.listing.summaries if self._rel(path) == "" else {}

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        rel = self._rel(path)
        try:
            return self._read_rel(rel, path, bounded_read.DEFAULT_LIMIT if limit is None else limit)
        except OSError as exc:
            self.failed_reads.setdefault(rel, exc)
            raise

    def _read_rel(self, rel: str, full: str, limit: int) -> bytes:
        """The prefetched or read content; a file listed, prefetched or read larger than ``limit`` is refused before
        the reader is asked for it when the listing says so (``FileTooLarge``)."""
        listing = self.listing
        entry = listing.entries.get(rel)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, "not listed", full)
        if entry.kind == "directory":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), full)
        if entry.kind != "file":
            raise OSError(errno.EINVAL, "not a regular file (FIFO, socket, device or broken link)", full)
        data = listing.contents.get(rel)
        if data is None:
            if rel in listing.read_errors:
                raise listing.read_errors[rel]
            if listing.reader is None:
                raise FileNotFoundError(errno.ENOENT, "content was not prefetched", full)
            if entry.size > limit:
                raise bounded_read.FileTooLarge(full, limit, bounded_read.kind_of(full))
            data = listing.reader(full)
        if len(data) > limit:
            raise bounded_read.FileTooLarge(full, limit, bounded_read.kind_of(full))
        return data

    def dir_mtime_ns(self, path: str) -> int | None:
        """None for the root (a listing holds its entries' times, not the root's own)."""
        rel = self._rel(path)
        entry = self.listing.entries.get(rel) if rel else None
        return entry.mtime_ns or None if entry is not None else None
