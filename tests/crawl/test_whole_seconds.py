"""Fingerprints count whole seconds: every listing path must agree with a local stat on the second."""

from __future__ import annotations

import os
from pathlib import Path

from fsspec.implementations.local import LocalFileSystem

from pipelines.crawl.backends import generic, local
from pipelines.crawl.rows import RowContext, rows_for_listing, utc_now

# As a float, 1_700_000_005.9999998 s; times 1e6 and rounded, it would land in the next second.
LATE_NS = 1_700_000_005_999_999_800


def test_generic_backend_float_times_stay_in_their_second(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    f = pdir / "00000000000000000000.log"
    f.write_bytes(b"x")
    os.utime(f, ns=(LATE_NS, LATE_NS))
    listing = generic.list_log_dir(str(tmp_path), fs=LocalFileSystem())
    assert listing.entries["t-0/00000000000000000000.log"].mtime_ns // 10**9 == LATE_NS // 10**9


def test_generic_and_local_listings_give_the_same_fingerprints(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    for i, name in enumerate(("00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint")):
        (pdir / name).write_bytes(b"x" * i)
        os.utime(pdir / name, ns=(LATE_NS, LATE_NS))
    ctx = RowContext("r", "c", 1, str(tmp_path), utc_now())
    via_local = rows_for_listing(ctx, local.list_log_dir(str(tmp_path))).partition_dirs
    via_fsspec = rows_for_listing(ctx, generic.list_log_dir(str(tmp_path), fs=LocalFileSystem())).partition_dirs
    assert [r["fingerprint"] for r in via_fsspec] == [r["fingerprint"] for r in via_local]
