"""Any fsspec URL (``s3://``, ``memory://``, ``sftp://`` via sshfs as a fallback, ...): one ``ls`` per directory.

Times come from whatever the filesystem reports (``mtime_ns``, ``mtime`` as seconds or a datetime,
``LastModified``), converted without moving them into another second; SFTP v3 has whole seconds only, which is
why fingerprints count whole seconds. Content is read lazily with ``cat_file``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from pipelines.crawl.listing import BROKEN_LINK, ListedEntry, Listing, ListingError
from pipelines.kafka.listing import datetime_to_ns, seconds_to_ns

SCHEMES: tuple[str, ...] = ()  # the fallback for every scheme without its own backend


def _mtime_ns(info: Mapping[str, Any]) -> int:
    if isinstance(info.get("mtime_ns"), int):
        return int(info["mtime_ns"])
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified"):
        value = info.get(key)
        if isinstance(value, datetime):
            return datetime_to_ns(value)
        if isinstance(value, int | float):
            return seconds_to_ns(value)  # never rounded into the next second: fingerprints count whole seconds
    return 0


def _entry(fs: Any, listing: Listing, rel: str, info: Mapping[str, Any]) -> ListedEntry:
    kind = info.get("type")
    islink = kind in ("link", "symlink") or bool(info.get("islink"))
    if islink:
        try:
            info = fs.info(info["name"])  # follow the link, as Kafka does
            kind = info.get("type")
        except OSError:
            listing.errors.append(ListingError(rel, "list", "FileNotFoundError", BROKEN_LINK))
            return ListedEntry(rel, "other", 0, 0, True)
    if kind == "directory":
        return ListedEntry(rel, "directory", 0, _mtime_ns(info), islink)
    if kind == "file":
        return ListedEntry(rel, "file", int(info.get("size") or 0), _mtime_ns(info), islink)
    return ListedEntry(rel, "other", 0, _mtime_ns(info), islink)


def _ls(fs: Any, listing: Listing, path: str, rel_prefix: str) -> list[ListedEntry] | None:
    try:
        infos = fs.ls(path, detail=True)
    except OSError as exc:
        rel = rel_prefix.rstrip("/")
        listing.errors.append(ListingError(rel, "list", type(exc).__name__, str(exc)))
        listing.failed_dirs[rel] = exc
        return None
    return [_entry(fs, listing, rel_prefix + posixpath.basename(i["name"].rstrip("/")), i) for i in infos]


def open_fs(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(url, **dict(storage_options or {}))
    return fs, path.rstrip("/") or "/"


def list_log_dir(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    only: Collection[str] | None = None,
    fanout_above: int | None = None,
    fs: Any = None,
) -> Listing:
    """List a log dir through fsspec (``fs`` given: use it with ``url`` as its path); see ``local.list_log_dir``.

    Raises:
        OSError: the log dir itself cannot be listed.
    """
    if fs is None:
        fs, root = open_fs(url, storage_options)
    else:
        root = fs._strip_protocol(url).rstrip("/") or "/"
    listing = Listing(root=root, reader=fs.cat_file)
    top = [_entry(fs, listing, posixpath.basename(i["name"].rstrip("/")), i) for i in fs.ls(root, detail=True)]
    wanted = None if only is None else frozenset(only)
    n_dirs = sum(1 for e in top if e.kind == "directory")
    if wanted is None and fanout_above is not None and n_dirs > fanout_above:
        wanted = frozenset()  # too big for one task: root only, the caller fans out
    listing.descended = wanted is None
    for entry in top:
        listing.add(entry)
        if entry.kind == "directory" and (wanted is None or entry.rel in wanted):
            for child in _ls(fs, listing, f"{root}/{entry.rel}", entry.rel + "/") or ():
                listing.add(child)
    return listing
