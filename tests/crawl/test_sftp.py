"""SFTP crawl against a REAL OpenSSH server on 127.0.0.1 (no mocks): same rows as the local crawl."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.crawl.backends import sftp
from pipelines.crawl.local_crawl import crawl_local
from tests.crawl.conftest import Broker, Sshd, build_cluster

pytestmark = [pytest.mark.sftp, pytest.mark.timeout(120)]

_VOLATILE = {"log_dir", "path", "fs_total_bytes", "fs_used_bytes", "fs_free_bytes", "crawled_at", "at"}


def _canon(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items() if k not in _VOLATILE)) for r in rows)


def test_sftp_crawl_equals_local_crawl(sshd_server: Sshd, tmp_path: Path) -> None:
    dirs = build_cluster(tmp_path / "c")
    os.symlink("/nonexistent-target", dirs["b1-d0"] / "orders-0" / "dangling")
    (dirs["b1-d0"] / "orders-1" / "partition.metadata").write_bytes(b"\xff not utf-8")
    local = [Broker(1, (str(dirs["b1-d0"]), str(dirs["b1-d1"])), {})]
    remote = [Broker(1, tuple(sshd_server.url(dirs[k]) for k in ("b1-d0", "b1-d1")), sshd_server.storage_options)]
    a = crawl_local(local, run_id="r", cluster="c", include_segments=True)
    b = crawl_local(remote, run_id="r", cluster="c", include_segments=True)

    assert b.run_row["status"] == "partial"  # the dangling link and the bad partition.metadata
    for table in ("log_dirs", "partition_dirs", "segment_files", "errors"):
        assert _canon(getattr(b, table)) == _canon(getattr(a, table)), table
    assert {r["log_dir"] for r in b.partition_dirs} == set(remote[0].log_dirs)
    assert all(r["fs_total_bytes"] and r["fs_total_bytes"] > 0 for r in b.log_dirs)
    assert {(e["stage"], e["path"].rsplit("/", 1)[-1]) for e in b.errors} == {
        ("list", "dangling"), ("parse", "partition.metadata")
    }


def test_sftp_one_remote_command_prefetches_small_files(sshd_server: Sshd, tmp_path: Path) -> None:
    dirs = build_cluster(tmp_path / "c")
    listing = sftp.list_log_dir(sshd_server.url(dirs["b1-d0"]), sshd_server.storage_options)
    try:
        assert "meta.properties" in listing.contents
        assert "orders-0/partition.metadata" in listing.contents
        assert listing.totals is not None
        assert listing.entries["orders-0/00000000000000000100.log"].kind == "file"
    finally:
        listing.close()


def test_sftp_missing_log_dir_is_one_error_row(sshd_server: Sshd, tmp_path: Path) -> None:
    dirs = build_cluster(tmp_path / "c")
    urls = (sshd_server.url(tmp_path / "nope"), sshd_server.url(dirs["b2-d0"]))
    remote = [Broker(3, urls, sshd_server.storage_options)]
    result = crawl_local(remote, run_id="r", cluster="c")
    assert [(e["stage"], e["error_class"]) for e in result.errors] == [("list", "FileNotFoundError")]
    assert len(result.log_dirs) == 1 and result.partition_dirs


def test_unknown_host_key_is_refused(sshd_server: Sshd, tmp_path: Path) -> None:
    empty_known = tmp_path / "known_hosts"
    empty_known.write_text("")
    opts = {**sshd_server.storage_options, "known_hosts": str(empty_known)}
    result = crawl_local([Broker(1, (sshd_server.url(tmp_path),), opts)], run_id="r", cluster="c")
    assert result.run_row["status"] == "failed"
    assert result.errors[0]["error_class"] == "SSHException"
