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

from pipelines.crawl.backends.registry import local_path
from pipelines.crawl.listing import (
    BROKEN_LINK,
    PARTITION_SMALL_FILES,
    ROOT_SMALL_FILES,
    SMALL_FILE_LIMIT,
    FsTotals,
    ListedEntry,
    Listing,
    ListingError,
)
from pipelines.kafka.bounded_read import kind_of, read_regular_file
from pipelines.kafka.dir_summary import SEGMENT_TAIL_CODES, DirSummary
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.fingerprint import fingerprint_of_text
from pipelines.kafka.listing import FileEntry
from pipelines.native import load

SCHEMES: tuple[str, ...] = ("", "file", "local")


def _read_bounded(path: str) -> bytes:
    """A file the listing did not read, refused unread above the limit for its name's kind."""
    return read_regular_file(path, kind_of(path))

_native = load("pipelines.crawl._native_dirscan")
_KINDS = ("file", "directory", "other")  # the compiled lister's kind codes
_READS = tuple(name.encode() for name in PARTITION_SMALL_FILES)
_ROOT_READS = tuple(name.encode() for name in ROOT_SMALL_FILES)
# every field, in order: a frozen dataclass's __init__ costs more than the rest of the glue per partition dir
_new_listed = fast_constructor(ListedEntry)
_new_file = fast_constructor(FileEntry)
_new_summary = fast_constructor(DirSummary)


def _odd_entry(listing: Listing, rel: str, dirent: os.DirEntry[str] | bool, exc: OSError) -> ListedEntry:
    """An entry whose stat failed: a broken link, a vanished file, or an error; reported once.

    ``dirent``: the entry, or (compiled lister) whether it is a symbolic link."""
    if isinstance(exc, FileNotFoundError):
        if dirent if isinstance(dirent, bool) else dirent.is_symlink():
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
            append(_new_listed(rel, "file", st.st_size, st.st_mtime_ns, dirent.is_symlink()))
        else:
            kind = "directory" if fmt == 0o040000 else "other"
            append(_new_listed(rel, kind, 0, st.st_mtime_ns, dirent.is_symlink()))
    return out


def _scan(listing: Listing, path: str, prefix: str) -> list[ListedEntry]:
    """All entries of one directory, or [] with a ListingError when it cannot be read."""
    try:
        with os.scandir(path) as it:
            return _entries(listing, it, prefix)
    except OSError as exc:
        _failed_dir(listing, prefix.rstrip("/"), exc)
        return []


def _failed_dir(listing: Listing, rel: str, exc: OSError) -> None:
    listing.errors.append(ListingError(rel, "list", type(exc).__name__, str(exc.strerror or exc)))
    listing.failed_dirs[rel] = exc


def _native_root(listing: Listing, root: str) -> list[ListedEntry] | None:
    """The root's entries as ``_entries`` gives them, listed by the compiled lister (which also reads the small
    root files on the way); None when the root must be listed in Python. Raises ``OSError`` like ``os.scandir``."""
    assert _native is not None
    got = _native.scan_dir(root, (), _ROOT_READS, SMALL_FILE_LIMIT)
    if got is None:
        return None
    others, errors, contents = got[-3:]
    for name, err, islink in errors:
        _odd_entry(listing, name, islink, OSError(err, os.strerror(err)))
    listing.contents.update(contents)
    return [_new_listed(name, _KINDS[kind], size, mtime, islink) for name, kind, size, mtime, islink in others]


def _summarize(listing: Listing, path: str, rel: str, root_fd: int) -> bool:
    """List and sum up one partition dir with the compiled lister; False when it must be listed in Python.

    Keeps in ``listing`` what ``_scan`` would have kept, less the segment files' entries: the summary, the
    other entries, their listing errors (in listing order) and the small files read on the way. ``root_fd``: the
    log dir, open (the dir is opened by its name there), or -1 (by ``path``).
    """
    assert _native is not None
    try:
        got = _native.scan_dir(path, SEGMENT_TAIL_CODES, _READS, SMALL_FILE_LIMIT, root_fd, rel)
    except OSError as exc:
        _failed_dir(listing, rel, exc)
        return True
    if got is None:
        return False
    *counts, text, others, errors, contents = got
    prefix = rel + "/"
    for name, err, islink in errors:
        _odd_entry(listing, prefix + name, islink, OSError(err, os.strerror(err)))
    kept = []
    entries = listing.entries
    for name, kind, size, mtime, islink in others:
        rel_name = prefix + name
        entries[rel_name] = _new_listed(rel_name, _KINDS[kind], size, mtime, islink)
        kept.append(_new_file(name, size, mtime, kind == 1, islink))
    for name, data in contents.items():
        listing.contents[prefix + name] = data
    listing.summaries[rel] = _new_summary(*counts, fingerprint_of_text(text), tuple(kept), contents)
    return True


def _open_dir(path: str) -> int:
    """``path`` opened as a directory, or -1 (then each partition dir is opened by its whole path)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1


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
    summarize: bool = False,
) -> Listing:
    """List a local log dir.

    Args:
        url: a plain path or ``file://`` URL.
        only: when given, only these root directories are descended into (fan-out); every root entry is listed.
        fanout_above: with more root directories than this, descend into none (``listing.descended`` is False).
        summarize: sum the root directories up while listing them (``listing.summaries``) when the compiled
            lister is built; their segment files then have no entries (for a scan without per-file detail).

    Raises:
        OSError: the log dir itself cannot be listed (the caller turns it into one crawl error).
    """
    root = local_path(url)
    listing = Listing(root=root, reader=_read_bounded)
    summarize = summarize and _native is not None
    top = _native_root(listing, root) if summarize else None
    if top is None:
        with os.scandir(root) as it:
            top = _entries(listing, it, "")
    wanted = None if only is None else frozenset(only)
    n_dirs = sum(1 for e in top if e.kind == "directory")
    if wanted is None and fanout_above is not None and n_dirs > fanout_above:
        wanted = frozenset()  # too big for one task: root only, the caller fans out
    listing.descended = wanted is None
    entries = listing.entries
    root_fd = _open_dir(root) if summarize else -1
    try:
        for entry in top:
            entries[entry.rel] = entry
            if entry.kind == "directory" and (wanted is None or entry.rel in wanted):
                if summarize and _summarize(listing, f"{root}/{entry.rel}", entry.rel, root_fd):
                    continue
                for child in _scan(listing, f"{root}/{entry.rel}", entry.rel + "/"):
                    entries[child.rel] = child
    finally:
        if root_fd >= 0:
            os.close(root_fd)
    listing.totals = statvfs_totals(root)
    if listing.totals is None:
        listing.errors.append(ListingError("", "statvfs", "OSError", "statvfs not supported here"))
    return listing
