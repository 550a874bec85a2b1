"""Local log dirs: one ``os.scandir`` per directory, sizes and times from the ``DirEntry`` stat.

The walk goes to depth 2 (root entries, then the entries of each root directory), follows symbolic links as Kafka
does, and reads file contents only when the scan asks for them (regular files only: a FIFO never blocks a read).
``statvfs`` of the root gives the filesystem totals. Nothing here raises for one bad entry: it becomes a
``ListingError``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pipelines.crawl.listing import BROKEN_LINK, FsTotals, ListedEntry, Listing, ListingError
from pipelines.kafka.listing import read_regular_file

SCHEMES: tuple[str, ...] = ("", "file", "local")


def local_path(url: str) -> str:
    """``file:///a/b`` or ``local:///a/b`` or ``/a/b`` → ``/a/b`` (no trailing slash)."""
    for prefix in ("file://", "local://"):
        if url.startswith(prefix):
            url = url[len(prefix) :]
            break
    return os.path.abspath(url)


def _odd_entry(listing: Listing, rel: str, dirent: os.DirEntry[str], exc: OSError) -> ListedEntry:
    """An entry whose stat failed: a broken link, a vanished file, or an error; reported once."""
    if isinstance(exc, FileNotFoundError):
        if dirent.is_symlink():
            listing.errors.append(ListingError(rel, "list", "FileNotFoundError", BROKEN_LINK))
            return ListedEntry(rel, "other", 0, 0, True)
        # vanished between readdir and stat
        listing.errors.append(ListingError(rel, "list", "FileNotFoundError", str(exc.strerror)))
        return ListedEntry(rel, "other", 0, 0)
    listing.errors.append(ListingError(rel, "list", type(exc).__name__, str(exc.strerror or exc)))
    return ListedEntry(rel, "other", 0, 0)


def _entries(listing: Listing, it: Iterable[os.DirEntry[str]], prefix: str) -> list[ListedEntry]:
    """One ListedEntry per directory entry; this loop runs once per file of the crawl."""
    out: list[ListedEntry] = []
    append = out.append
    for dirent in it:
        rel = prefix + dirent.name
        try:
            st = dirent.stat()  # follows links; one fstatat, cached on the DirEntry
        except OSError as exc:
            append(_odd_entry(listing, rel, dirent, exc))
            continue
        fmt = st.st_mode & 0o170000
        if fmt == 0o100000:
            append(ListedEntry(rel, "file", st.st_size, st.st_mtime_ns, dirent.is_symlink()))
        else:
            kind = "directory" if fmt == 0o040000 else "other"
            append(ListedEntry(rel, kind, 0, st.st_mtime_ns, dirent.is_symlink()))
    return out


def _scan(listing: Listing, path: str, prefix: str) -> list[ListedEntry]:
    """All entries of one directory, or [] with a ListingError when it cannot be read."""
    try:
        with os.scandir(path) as it:
            return _entries(listing, it, prefix)
    except OSError as exc:
        rel = prefix.rstrip("/")
        listing.errors.append(ListingError(rel, "list", type(exc).__name__, str(exc.strerror or exc)))
        listing.failed_dirs[rel] = exc
        return []


def statvfs_totals(path: str) -> FsTotals | None:
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return FsTotals.from_blocks(st.f_frsize, st.f_blocks, st.f_bfree, st.f_bavail)


def list_log_dir(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    only: Collection[str] | None = None,
    fanout_above: int | None = None,
) -> Listing:
    """List a local log dir.

    Args:
        url: a plain path or ``file://`` URL.
        only: when given, only these root directories are descended into (fan-out); every root entry is listed.
        fanout_above: with more root directories than this, descend into none (``listing.descended`` is False).

    Raises:
        OSError: the log dir itself cannot be listed (the caller turns it into one crawl error).
    """
    root = local_path(url)
    listing = Listing(root=root, reader=read_regular_file)
    with os.scandir(root) as it:
        top = _entries(listing, it, "")
    wanted = None if only is None else frozenset(only)
    n_dirs = sum(1 for e in top if e.kind == "directory")
    if wanted is None and fanout_above is not None and n_dirs > fanout_above:
        wanted = frozenset()  # too big for one task: root only, the caller fans out
    listing.descended = wanted is None
    entries = listing.entries
    for entry in top:
        entries[entry.rel] = entry
        if entry.kind == "directory" and (wanted is None or entry.rel in wanted):
            for child in _scan(listing, f"{root}/{entry.rel}", entry.rel + "/"):
                entries[child.rel] = child
    listing.totals = statvfs_totals(root)
    if listing.totals is None:
        listing.errors.append(ListingError("", "statvfs", "OSError", "statvfs not supported here"))
    return listing
