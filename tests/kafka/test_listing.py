"""The scanner's listers (pipelines/kafka/listing.py): exact times, and only regular files are ever read."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from fsspec.implementations.local import LocalFileSystem
from logdir_factory import PartitionSpec, make_log_dir

from pipelines.kafka.listing import FsspecLister, LocalLister, read_regular_file
from pipelines.kafka.logdir import scan_log_dir

# 1_700_000_005.999999999 s: a float cannot hold it (it rounds up to the next whole second)
AWKWARD_NS = 1_700_000_005_999_999_999


class _LocalFsWithNs(LocalFileSystem):
    """fsspec's local filesystem reporting ``mtime_ns`` next to its float ``mtime``, as some backends do.

    A subclass rather than a mock: every call reaches the real disk, only one key is added to each info dict.
    """

    cachable = False

    def info(self, path: Any, **kwargs: Any) -> dict[str, Any]:
        out = super().info(path, **kwargs)
        out["mtime_ns"] = os.stat(self._strip_protocol(path), follow_symlinks=False).st_mtime_ns
        return out

    def ls(self, path: Any, detail: bool = False, **kwargs: Any) -> list[Any]:
        out = super().ls(path, detail=detail, **kwargs)
        if detail:
            for info in out:
                info["mtime_ns"] = os.stat(info["name"], follow_symlinks=False).st_mtime_ns
        return out


def test_fsspec_lister_prefers_mtime_ns_over_float_seconds(tmp_path: Path) -> None:
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"abc")
    os.utime(f, ns=(AWKWARD_NS, AWKWARD_NS))
    os.utime(tmp_path, ns=(AWKWARD_NS, AWKWARD_NS))
    assert float(AWKWARD_NS) / 1e9 != AWKWARD_NS // 10**9, "the float really rounds up"
    lister = FsspecLister(_LocalFsWithNs())
    (entry,) = lister.list_dir(str(tmp_path))
    assert entry.mtime_ns == AWKWARD_NS == os.stat(f).st_mtime_ns
    assert lister.list_dir(str(tmp_path)) == LocalLister().list_dir(str(tmp_path))
    assert lister.dir_mtime_ns(str(tmp_path)) == AWKWARD_NS


def test_fsspec_lister_float_seconds_keep_their_whole_second(tmp_path: Path) -> None:
    """Without ``mtime_ns`` the float is all there is; converting it must not move it into another second."""
    f = tmp_path / "a"
    f.write_bytes(b"")
    os.utime(f, (1_700_000_005.9999997, 1_700_000_005.9999997))
    (entry,) = FsspecLister(LocalFileSystem()).list_dir(str(tmp_path))
    assert entry.mtime_ns // 10**9 == int(os.stat(f).st_mtime)


class _FifoWatcher:
    """Notices anyone opening a FIFO for reading, then releases them with an EOF (so a regression fails, not hangs).

    Opening a FIFO for writing with ``O_NONBLOCK`` succeeds only while a reader has it open.
    """

    def __init__(self, fifo: Path) -> None:
        self.fifo, self.reader_seen, self._stop = fifo, False, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader
                continue
            self.reader_seen = True
            os.close(fd)  # the reader sees EOF and goes on

    def __enter__(self) -> _FifoWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_local_lister_never_opens_a_fifo_for_reading(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "d", partitions=[PartitionSpec("t", 0, partition_metadata=False)])
    fifo = root / "t-0" / "partition.metadata"
    os.mkfifo(fifo)
    with _FifoWatcher(fifo) as watcher:
        with pytest.raises(OSError, match="not a regular file"):
            LocalLister().read_bytes(str(fifo))
        (d,) = scan_log_dir(str(root)).partition_dirs
    assert not watcher.reader_seen, "the FIFO was opened for reading (a real broker dir would hang here)"
    assert d.partition_metadata_status == "unreadable"
    (problem,) = [p for p in d.problems if p.code == "partition_metadata_unreadable"]
    assert problem.path == str(fifo) and "not a regular file" in problem.message


def test_local_lister_reads_regular_files_whole_and_refuses_directories(tmp_path: Path) -> None:
    data = bytes(range(256)) * 300  # more than one read() of a small buffer
    (tmp_path / "f").write_bytes(data)
    assert LocalLister().read_bytes(str(tmp_path / "f")) == data
    with pytest.raises(IsADirectoryError):
        LocalLister().read_bytes(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        LocalLister().read_bytes(str(tmp_path / "missing"))


@pytest.mark.skipif(not os.path.exists("/proc/self/cmdline"), reason="needs Linux /proc")
def test_read_regular_file_reads_past_a_stale_size() -> None:
    """/proc files stat as 0 bytes but have content: the same path as a file that grew since the fstat."""
    with open("/proc/self/cmdline", "rb") as fh:
        expected = fh.read()
    assert os.stat("/proc/self/cmdline").st_size == 0 and len(expected) > 1
    assert read_regular_file("/proc/self/cmdline") == expected
