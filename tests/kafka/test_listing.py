"""The scanner's listers (pipelines/kafka/listing.py): exact times, and only regular files are ever read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fsspec.implementations.local import LocalFileSystem

from pipelines.kafka.listing import FsspecLister, LocalLister

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
