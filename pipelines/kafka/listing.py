"""Directory listing and small-file reads for the log-dir scanner: ``os.scandir`` locally, fsspec elsewhere.

One listing call per directory; sizes and modification times come from that listing (``DirEntry.stat`` locally,
the ``ls(detail=True)`` dicts for fsspec), never from one ``stat`` per file.

Modification-time precision depends on the backend (nanoseconds locally, often whole seconds over SFTP):
fingerprints count whole seconds, so every conversion here keeps the whole second exact (``mtime_ns`` when the
backend has it; float seconds never rounded up into the next second).
"""

from __future__ import annotations

import contextlib
import math
import os
import posixpath
import stat as stat_mod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from pipelines.kafka import bounded_read


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One directory entry. ``is_dir`` follows symlinks (as Kafka's ``File.isDirectory`` does)."""

    name: str
    size: int
    mtime_ns: int
    is_dir: bool
    is_symlink: bool = False


class Lister(Protocol):
    """What the scanner needs from a filesystem. Every method raises ``OSError`` on failure."""

    def join(self, parent: str, name: str) -> str: ...

    def list_dir(self, path: str) -> list[FileEntry]: ...

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        """The file's bytes; more than ``limit`` (default :data:`bounded_read.DEFAULT_LIMIT`) is ``FileTooLarge``."""
        ...

    def dir_mtime_ns(self, path: str) -> int | None: ...


def read_regular_file(path: str, limit: int | None = None, kind: str | None = None) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes (default: the limit for ``kind``, by default
    the kind the file's name tells: :mod:`pipelines.kafka.bounded_read`).

    Anything else raises ``OSError`` without blocking (a FIFO, a socket, a device), or before reading a byte
    (``FileTooLarge``, ``EFBIG``: an 8 GiB sparse file costs nothing).
    """
    return bounded_read.read_regular_file(path, kind, limit)


def scanned_entries(it: Iterator[os.DirEntry[str]]) -> list[FileEntry]:
    """``FileEntry``s of one ``os.scandir`` (of a path or of a directory descriptor): a link is followed like Java's
    ``File`` and marked ``is_symlink`` (a dangling one keeps its own stat); an entry that vanished between listing
    and stat has unknown size and time."""
    out: list[FileEntry] = []
    for e in it:
        try:
            st = e.stat(follow_symlinks=False)
            is_link = stat_mod.S_ISLNK(st.st_mode)
            if is_link:
                with contextlib.suppress(OSError):
                    st = e.stat()
            is_dir = stat_mod.S_ISDIR(st.st_mode)
        except OSError:
            out.append(FileEntry(e.name, 0, 0, False))
            continue
        out.append(FileEntry(e.name, 0 if is_dir else st.st_size, st.st_mtime_ns, is_dir, is_link))
    return out


class LocalLister:
    """The fast path: one ``os.scandir`` per directory."""

    def join(self, parent: str, name: str) -> str:
        return os.path.join(parent, name)

    def list_dir(self, path: str) -> list[FileEntry]:
        with os.scandir(path) as it:
            return scanned_entries(it)

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        return read_regular_file(path, limit)

    def dir_mtime_ns(self, path: str) -> int | None:
        return os.stat(path).st_mtime_ns


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def seconds_to_ns(value: float) -> int:
    """Seconds since the epoch (a float, as ``stat().st_mtime``) to integer nanoseconds.

    The whole second is kept exact: ``int(value * 1e9)`` can round ``...5.9999999`` up into the next second,
    and fingerprints count whole seconds.
    """
    if isinstance(value, int):
        return value * 1_000_000_000
    whole = math.floor(value)
    return whole * 1_000_000_000 + min(int((value - whole) * 1_000_000_000), 999_999_999)


def datetime_to_ns(value: datetime) -> int:
    """A datetime (naive = local time, as ``datetime.timestamp`` assumes) to integer nanoseconds, exactly."""
    aware = value if value.tzinfo is not None else value.astimezone()
    return (aware - _EPOCH) // timedelta(microseconds=1) * 1000


def _mtime_ns(info: dict[str, Any]) -> int:
    exact = info.get("mtime_ns")
    if isinstance(exact, int) and not isinstance(exact, bool):
        return exact
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return datetime_to_ns(value)
        if isinstance(value, (int, float)):
            return seconds_to_ns(value) if value < 1e12 else int(value)
        try:
            return datetime_to_ns(datetime.fromisoformat(str(value)))
        except ValueError:
            continue
    return 0


class FsspecLister:
    """Any fsspec filesystem (including a crawl backend's pre-listed one)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def join(self, parent: str, name: str) -> str:
        return posixpath.join(parent, name)

    def list_dir(self, path: str) -> list[FileEntry]:
        try:
            infos: Iterable[dict[str, Any]] = self.fs.ls(path, detail=True)
        except OSError:
            raise
        except Exception as exc:  # some backends raise their own types; present them as storage errors
            raise OSError(f"cannot list {path}: {exc}") from exc
        infos = list(infos)
        only = infos[0] if len(infos) == 1 else {}
        if only and only.get("type") != "directory" and str(only.get("name", "")).rstrip("/") == path.rstrip("/"):
            raise NotADirectoryError(path)  # fsspec lists a file as itself
        out: list[FileEntry] = []
        for info in infos:
            name = posixpath.basename(str(info.get("name", "")).rstrip("/"))
            if not name or name in (".", ".."):
                continue
            is_dir = info.get("type") == "directory"
            size = 0 if is_dir else int(info.get("size") or 0)
            out.append(FileEntry(name, size, _mtime_ns(info), is_dir, bool(info.get("islink", False))))
        return out

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        cap = bounded_read.DEFAULT_LIMIT if limit is None else limit
        try:
            data = self.fs.cat_file(path, start=0, end=cap + 1)  # one byte past the limit tells it was passed
        except OSError:
            raise
        except Exception as exc:
            raise OSError(f"cannot read {path}: {exc}") from exc
        if len(data) > cap:
            raise bounded_read.FileTooLarge(path, cap, "file")
        return bytes(data)

    def dir_mtime_ns(self, path: str) -> int | None:
        return _mtime_ns(self.fs.info(path)) or None


def lister_for(url_or_path: str, storage_options: dict[str, Any] | None = None, fs: Any = None) -> tuple[Lister, str]:
    """Pick the lister and the backend-native path for a URL or plain path."""
    if fs is None:
        import fsspec.core

        fs, path = fsspec.core.url_to_fs(url_or_path, **(storage_options or {}))
    else:
        path = fs._strip_protocol(url_or_path)
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(fs, LocalFileSystem):
        return LocalLister(), os.path.normpath(path)
    return FsspecLister(fs), str(path).rstrip("/") or "/"
