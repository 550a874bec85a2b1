"""Listing backends: the scheme registry, the pre-listed filesystem, and the SFTP command run by a local shell."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines.crawl.backends import BACKENDS, backend_for, backend_name, generic, local, register_backend, sftp
from pipelines.crawl.backends.ssh_options import ssh_target
from pipelines.crawl.listing import ListedEntry, Listing
from pipelines.errors import ConfigError
from tests.crawl.prelisted_fs import PrelistedFileSystem


def test_registry_by_scheme_lazy_read_only_no_silent_overwrite() -> None:
    assert backend_name("/var/lib/kafka") == "local"
    assert backend_name("file:///x") == "file" and backend_name("sftp://h/x") == "sftp"
    assert backend_name("memory://x") == "generic"
    assert backend_for("/x") is local.list_log_dir
    with pytest.raises(TypeError):
        BACKENDS["s3"] = "x:y"  # type: ignore[index]
    with pytest.raises(ValueError, match="already served"):
        register_backend("sftp", "somewhere.else:list_log_dir")
    register_backend("sftp", BACKENDS["sftp"])  # same target again: allowed, nothing changes


def test_sftp_command_output_parses_like_the_local_listing(cluster: dict[str, Path]) -> None:
    """The remote command, run by a local /bin/sh (no SSH needed), lists exactly what the local backend lists."""
    root = cluster["b1-d0"]
    os.symlink("missing", root / "broken")
    os.symlink("orders-0", root / "alias-0")
    os.mkfifo(root / "orders-1" / "fifo")
    done = subprocess.run(["sh", "-c", sftp.remote_command(str(root))], capture_output=True, check=False)
    remote = sftp.parse_output(str(root), done.stdout, done.stderr.decode())
    mine = local.list_log_dir(str(root))
    assert remote.entries == mine.entries
    assert remote.errors == mine.errors and len(mine.errors) == 1
    assert remote.entries["alias-0"].islink and remote.entries["alias-0"].kind == "directory"
    assert remote.contents["orders-0/partition.metadata"] == (root / "orders-0" / "partition.metadata").read_bytes()
    assert remote.contents["alias-0/partition.metadata"] == remote.contents["orders-0/partition.metadata"]
    assert "orders-0/00000000000000000000.log" not in remote.contents  # only small metadata files are fetched


def test_sftp_stderr_becomes_errors() -> None:
    out = b"0\td\t0\t1700000000.5000000000\tx-0\x00\x00" + b"4096 10 5 4\x00"
    listing = sftp.parse_output("/r", out, "find: './x-0': Permission denied\ntar: ./y: Cannot open: No such file\n")
    assert [(e.rel, e.error_class) for e in listing.errors] == [("x-0", "PermissionError")]
    assert isinstance(listing.failed_dirs["x-0"], PermissionError)
    assert listing.entries["x-0"].mtime_ns == 1_700_000_000_500_000_000
    assert listing.totals is not None and listing.totals.total_bytes == 40960


def test_prelisted_fs_is_read_only_and_never_reads_non_regular_files() -> None:
    listing = Listing(root="/r", reader=lambda p: b"from-reader:" + p.encode())
    for e in (ListedEntry("a-0", "directory", 0, 1), ListedEntry("a-0/f", "file", 3, 2),
              ListedEntry("a-0/pipe", "other", 0, 3)):  # fmt: skip
        listing.add(e)
    listing.contents["a-0/f"] = b"abc"
    fs = PrelistedFileSystem(listing)
    assert [i["name"] for i in fs.ls("/r/a-0")] == ["/r/a-0/f", "/r/a-0/pipe"]
    assert fs.cat_file("/r/a-0/f") == b"abc"
    with pytest.raises(OSError, match="not a regular file"):
        fs.cat_file("/r/a-0/pipe")
    with pytest.raises(FileNotFoundError):
        fs.info("/elsewhere/x")
    with pytest.raises(PermissionError):
        fs.rm("/r/a-0/f")
    assert set(fs.failed_reads) == {"a-0/pipe"}


def test_generic_backend_over_memory_fs() -> None:
    import fsspec

    mem = fsspec.filesystem("memory")
    content = b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg"
    mem.pipe("/gen/t-0/partition.metadata", content)
    mem.pipe("/gen/meta.properties", b"version=1\n")
    listing = generic.list_log_dir("memory:///gen")
    assert listing.entries["t-0"].kind == "directory"
    assert listing.entries["t-0/partition.metadata"].size == len(content)
    assert listing.reader is not None and listing.reader("/gen/meta.properties") == b"version=1\n"


def test_ssh_options_merge_url_and_config() -> None:
    t = ssh_target("sftp://kafka@h1:2222/var/lib/kafka/", {"key_filename": "/k", "known_hosts": "/kh"})
    assert (t.host, t.port, t.username, t.path, t.key_filenames) == ("h1", 2222, "kafka", "/var/lib/kafka", ("/k",))
    assert t.sshfs_kwargs()["client_keys"] == ["/k"] and t.sshfs_kwargs()["known_hosts"] == "/kh"
    assert ssh_target("sftp://h/x", {"port": 22022}).port == 22022
    with pytest.raises(ConfigError, match="unknown sftp storage option"):
        ssh_target("sftp://h/x", {"hostname": "typo"})


def test_sftp_command_without_gzip_sends_the_plain_stream(cluster: dict[str, Path], tmp_path: Path) -> None:
    """A host without gzip: the same listing, uncompressed; with gzip the stream is compressed."""
    root = cluster["b1-d0"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("find", "tar", "stat", "cat"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    command = sftp.remote_command(str(root))
    plain = subprocess.run(["/bin/sh", "-c", command], capture_output=True, env={"PATH": str(bin_dir)}, check=True)
    packed = subprocess.run(["/bin/sh", "-c", command], capture_output=True, check=True)
    assert plain.stdout.startswith(b"0\t") and packed.stdout.startswith(b"\x1f\x8b")
    a = sftp.parse_output(str(root), plain.stdout, "")
    b = sftp.parse_output(str(root), packed.stdout, "")
    assert a.entries == b.entries and a.contents == b.contents and a.contents


def test_sftp_cut_gzip_stream_reports_the_truncated_listing(cluster: dict[str, Path]) -> None:
    root = cluster["b1-d0"]
    packed = subprocess.run(["sh", "-c", sftp.remote_command(str(root))], capture_output=True, check=True).stdout
    with pytest.raises(OSError, match="truncated listing"):
        sftp.parse_output(str(root), packed[:40], "")
    with pytest.raises(OSError, match="corrupt gzip stream"):
        sftp.parse_output(str(root), packed[:2] + b"\x09" + packed[3:], "")  # compression method 9: no such
