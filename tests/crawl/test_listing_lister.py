"""ListingLister (the crawl's direct lister) answers exactly as the pre-listed fsspec filesystem does."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pipelines.crawl.backends import local
from pipelines.crawl.listing import Listing
from pipelines.crawl.listing_lister import ListingLister
from pipelines.kafka.logdir import LogDirInventory, scan_log_dir
from tests.crawl.prelisted_fs import PrelistedFileSystem


def _odd_listing(cluster: dict[str, Path]) -> Listing:
    d0 = cluster["b1-d0"]
    os.symlink("no-such-target", d0 / "orders-0" / "dangling.log")
    (d0 / "orders-1" / "partition.metadata").unlink()
    os.mkfifo(d0 / "orders-1" / "partition.metadata")
    (d0 / "orders-0" / "sub").mkdir()
    (d0 / "orders-0" / "00000000000000000000.index.swap").write_bytes(b"")
    (d0 / "stray.tmp").write_bytes(b"")
    (d0 / "extra-7").mkdir()
    (d0 / "gone-3.0123456789abcdef0123456789abcdef-delete").mkdir()
    (d0 / "gone-3.0123456789abcdef0123456789abcdef-delete" / "leader-epoch-checkpoint").write_bytes(b"0\n1\n5 x\n")
    listing = local.list_log_dir(str(d0))
    # Listing errors cannot be produced for real when tests run as root: one dir is marked unlistable by hand.
    listing.failed_dirs["extra-7"] = PermissionError(errno.EACCES, "Permission denied", f"{listing.root}/extra-7")
    return listing


def _both(listing: Listing, visible: frozenset[str] | None) -> tuple[tuple[LogDirInventory, dict], ...]:
    fs = PrelistedFileSystem(listing, visible_dirs=visible)
    via_fs = scan_log_dir(listing.root, fs=fs)
    lister = ListingLister(listing, visible_dirs=visible)
    direct = scan_log_dir(listing.root, lister=lister)
    return (via_fs, fs.failed_reads), (direct, lister.failed_reads)


def _errors(failed: dict[str, OSError]) -> dict[str, tuple[str, str]]:
    return {rel: (type(e).__name__, str(e)) for rel, e in failed.items()}


@pytest.mark.parametrize("visible", [None, frozenset(), frozenset({"orders-1", "extra-7"})])
def test_direct_lister_scans_like_the_prelisted_filesystem(cluster: dict[str, Path],
                                                           visible: frozenset[str] | None) -> None:  # fmt: skip
    listing = _odd_listing(cluster)
    (via_fs, fs_failed), (direct, failed) = _both(listing, visible)
    assert direct == via_fs
    assert _errors(failed) == _errors(fs_failed)
    if visible is None:
        assert "orders-1/partition.metadata" in failed  # the FIFO: refused, remembered
        assert {d.name for d in direct.partition_dirs} >= {"orders-0", "orders-1", "extra-7"}
        (extra,) = [d for d in direct.partition_dirs if d.name == "extra-7"]
        assert [p.code for p in extra.problems if p.code == "dir_unreadable"] == ["dir_unreadable"]


def test_direct_lister_paths_outside_the_listing(cluster: dict[str, Path]) -> None:
    listing = local.list_log_dir(str(cluster["b2-d0"]))
    lister = ListingLister(listing)
    with pytest.raises(FileNotFoundError):
        lister.list_dir("/elsewhere")
    with pytest.raises(NotADirectoryError):
        lister.list_dir(lister.join(listing.root, "meta.properties"))
    with pytest.raises(IsADirectoryError):
        lister.read_bytes(lister.join(listing.root, "orders-0"))
    meta = lister.join(listing.root, "meta.properties")
    assert lister.read_bytes(meta) == Path(meta).read_bytes()
    assert lister.dir_mtime_ns(listing.root) is None
    assert lister.join("/", "x") == "/x"
    assert set(lister.failed_reads) == {"orders-0"}
