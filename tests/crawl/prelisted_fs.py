"""A read-only fsspec filesystem answering from a :class:`~pipelines.crawl.listing.Listing`: the reference the
crawl's :class:`~pipelines.crawl.listing_lister.ListingLister` is held to (``scan_log_dir`` through either gives the
same inventory).

``ls``/``info`` never touch storage; ``cat_file``/``open`` return prefetched bytes or call the listing's reader.
Only regular files are read: a FIFO or socket named ``partition.metadata`` raises instead of blocking the crawl.
Every failed read is remembered in ``failed_reads`` so the crawl reports it once, whatever the scan did with it.
Paths outside the listed root do not exist.
"""

from __future__ import annotations

import errno
import io
import os
from typing import Any

from fsspec.spec import AbstractFileSystem

from pipelines.crawl.listing import ListedEntry, Listing


class PrelistedFileSystem(AbstractFileSystem):
    protocol = "prelisted"
    cachable = False
    root_marker = "/"

    def __init__(self, listing: Listing, *, visible_dirs: frozenset[str] | None = None, **kwargs: Any) -> None:
        """``visible_dirs``: when given, the root shows its files and only these directories (fan-out chunks)."""
        super().__init__(**kwargs)
        self.listing = listing
        self.failed_reads: dict[str, OSError] = {}
        self._children: dict[str, list[str]] = {"": []}
        for rel, entry in listing.entries.items():
            parent = rel.rpartition("/")[0]
            self._children.setdefault(parent, []).append(rel)
            if entry.kind == "directory":
                self._children.setdefault(rel, [])
        if visible_dirs is not None:
            entries = listing.entries
            self._children[""] = [
                r for r in self._children[""] if entries[r].kind != "directory" or r in visible_dirs
            ]

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path)
        if text.startswith("prelisted://"):
            text = text[len("prelisted://") :]
        return text.rstrip("/") or "/"

    # -- path mapping ---------------------------------------------------------------------------------

    def _rel(self, path: str) -> str:
        path = self._strip_protocol(path)
        root = self.listing.root
        if path == root:
            return ""
        prefix = root.rstrip("/") + "/"
        if not path.startswith(prefix):
            raise FileNotFoundError(errno.ENOENT, "outside the listed log dir", path)
        return path[len(prefix) :]

    def _entry_info(self, entry: ListedEntry) -> dict[str, Any]:
        return {
            "name": self.listing.abs_path(entry.rel),
            "size": entry.size,
            "type": entry.kind,
            # integer nanoseconds: pipelines.kafka.listing reads a value >= 1e12 as ns, keeping full precision
            "mtime": entry.mtime_ns,
            "mtime_ns": entry.mtime_ns,
            "islink": entry.islink,
        }

    # -- fsspec API -----------------------------------------------------------------------------------

    def info(self, path: Any, **kwargs: Any) -> dict[str, Any]:
        rel = self._rel(path)
        if rel == "":
            return {"name": self.listing.root, "size": 0, "type": "directory"}
        entry = self.listing.entries.get(rel)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, "not listed", self.listing.abs_path(rel))
        return self._entry_info(entry)

    def ls(self, path: Any, detail: bool = True, **kwargs: Any) -> list[Any]:
        rel = self._rel(path)
        if rel in self.listing.failed_dirs:
            raise self.listing.failed_dirs[rel]
        children = self._children.get(rel)
        if children is None:
            info = self.info(path)  # raises FileNotFoundError when absent
            return [info if detail else info["name"]]
        if detail:
            return [self._entry_info(self.listing.entries[c]) for c in children]
        return [self.listing.abs_path(c) for c in children]

    def cat_file(self, path: Any, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        data = self._read(path)
        return data[start:end] if start is not None or end is not None else data

    def _open(self, path: Any, mode: str = "rb", **kwargs: Any) -> io.BytesIO:
        if "r" not in mode or "+" in mode:
            raise PermissionError(errno.EROFS, "prelisted filesystem is read-only", str(path))
        return io.BytesIO(self._read(path))

    def _read(self, path: Any) -> bytes:
        rel = self._rel(path)
        full = self.listing.abs_path(rel)
        try:
            return self._read_rel(rel, full)
        except OSError as exc:
            self.failed_reads.setdefault(rel, exc)
            raise

    def _read_rel(self, rel: str, full: str) -> bytes:
        entry = self.listing.entries.get(rel)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, "not listed", full)
        if entry.kind == "directory":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), full)
        if entry.kind != "file":
            raise OSError(errno.EINVAL, "not a regular file (FIFO, socket, device or broken link)", full)
        if rel in self.listing.contents:
            return self.listing.contents[rel]
        if rel in self.listing.read_errors:
            raise self.listing.read_errors[rel]
        if self.listing.reader is None:
            raise FileNotFoundError(errno.ENOENT, "content was not prefetched", full)
        return self.listing.reader(full)

    # read-only: every mutation is refused
    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EROFS, "prelisted filesystem is read-only")

    mkdir = makedirs = rm = rm_file = rmdir = mv = cp_file = put_file = pipe_file = touch = _refuse  # type: ignore[assignment]
