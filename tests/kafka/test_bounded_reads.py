"""Every file read whole has a size bound, and what a message repeats of it is cut (issue 27 point 4)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from logdir_factory import PartitionSpec, make_log_dir

from pipelines.errors import DecodeError
from pipelines.kafka import bounded_read
from pipelines.kafka.bounded_read import FileTooLarge, json_depth, loads_json, read_regular_file
from pipelines.kafka.logdir import scan_log_dir
from pipelines.kafka.meta_properties import read_meta_properties
from pipelines.kafka.root_files import MalformedQuorumState, read_clean_shutdown, read_quorum_state

GIB = 1 << 30


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def test_a_file_above_its_kinds_limit_is_refused_before_a_byte_is_read(tmp_path: Path, monkeypatch) -> None:
    """8 GiB sparse meta.properties: refused from its fstat size (EFBIG); os.read is never called."""
    path = _sparse(tmp_path / "meta.properties", 8 * GIB, b"version=1\n")
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(bounded_read.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(FileTooLarge) as caught:
        read_regular_file(str(path))
    assert caught.value.errno == errno.EFBIG and isinstance(caught.value, OSError)
    assert "65536-byte limit for a meta properties file" in str(caught.value)
    assert reads == []


def test_a_file_that_grows_after_its_fstat_is_cut_at_the_limit(tmp_path: Path, monkeypatch) -> None:
    """The fstat says 10 bytes; the file holds 1 MiB: reading stops one chunk past the limit, never reads it all."""
    path = tmp_path / "plan.json"
    path.write_bytes(b"x" * (1 << 20))
    real_fstat = os.fstat

    class Small:
        def __init__(self, st: os.stat_result) -> None:
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(bounded_read.os, "fstat", lambda fd: Small(real_fstat(fd)))
    read_total: list[int] = []
    real_read = os.read
    monkeypatch.setattr(bounded_read.os, "read", lambda fd, n: read_total.append(len(b := real_read(fd, n))) or b)
    with pytest.raises(FileTooLarge):
        read_regular_file(str(path), limit=1000)
    assert sum(read_total) <= 1001


def test_the_crawl_turns_oversized_broker_files_into_error_rows(tmp_path: Path) -> None:
    """8 GiB sparse meta.properties and partition.metadata, a 100 MiB leader-epoch-checkpoint: each is an
    ``*_unreadable`` error naming the limit; the scan goes on and nothing is echoed."""
    root = make_log_dir(tmp_path / "logs", partitions=[PartitionSpec("orders", 0), PartitionSpec("orders", 1)])
    _sparse(root / "meta.properties", 8 * GIB, b"cluster.id=" + b"A" * 4096)
    _sparse(root / "orders-0" / "partition.metadata", 8 * GIB, b"version: 0\ntopic_id: ")
    _sparse(root / "orders-1" / "leader-epoch-checkpoint", 100 << 20, b"0\n1\n0 0\n")
    inv = scan_log_dir(str(root))
    codes = {p.code: p for p in inv.all_problems}
    assert "larger than the 65536-byte limit for meta_properties" in codes["meta_properties_unreadable"].message
    assert "limit for partition_metadata" in codes["partition_metadata_unreadable"].message
    assert "limit for leader_epoch_checkpoint" in codes["leader_epoch_checkpoint_unreadable"].message
    dirs = {d.name: d for d in inv.partition_dirs}
    assert dirs["orders-0"].partition_metadata_status == "unreadable" and dirs["orders-1"].topic_id is not None
    assert all(len(p.message) < 300 for p in inv.all_problems)


def test_a_long_value_is_cut_in_the_message_that_names_it() -> None:
    value = "Z" * 60_000
    meta = read_meta_properties(f"version=1\nnode.id=1\ncluster.id={value}\n".encode())
    (problem,) = [p for p in meta.problems if p.code == "meta_properties_cluster_id_not_uuid"]
    assert len(problem.message) < 300 and "(60002 chars)" in problem.message


def test_json_nested_deeper_than_the_limit_is_a_decode_error_not_a_recursion_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(DecodeError, match="nested deeper than 64 levels"):
        loads_json(deep, "plan")
    assert json_depth('{"a": "[[[[\\"[[", "b": [[{}]]}') == 4  # brackets in strings do not count
    with pytest.raises(MalformedQuorumState, match="nested deeper"):
        read_quorum_state(deep.encode())
    shutdown = read_clean_shutdown(deep.encode())
    assert shutdown.broker_epoch is None and shutdown.problems[0].code == "clean_shutdown_unparseable"
