"""scan_log_dir over synthetic log dirs built with the project's writers (tests/kafka/logdir_factory.py)."""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from logdir_factory import CLUSTER_ID, PartitionSpec, make_log_dir, uuid_for

from pipelines.kafka.checkpoints import RECOVERY_POINT, REPLICATION_OFFSET, OffsetEntry, write_offset_checkpoint
from pipelines.kafka.logdir import fingerprint_dir, fingerprint_entries, scan_log_dir
from pipelines.kafka.partition_metadata import write_partition_metadata
from pipelines.kafka.uuid import ZERO

DIR_ID = uuid_for("dir-a")


def _codes(problems: tuple) -> list[str]:
    return [p.code for p in problems]


def _by_name(inv):
    return {d.name: d for d in inv.partition_dirs}


@pytest.fixture
def healthy(tmp_path: Path) -> tuple[Path, list[PartitionSpec]]:
    specs = [
        PartitionSpec("orders", 0, segments=(0, 100, 250), log_content=b"x" * 10),
        PartitionSpec("orders", 1, segments=(0,), log_content=b"y" * 3),
        PartitionSpec("gone", 0, kind="delete"),
        PartitionSpec("moving", 2, kind="future"),
        PartitionSpec("lost", 5, kind="stray"),
    ]
    root = make_log_dir(
        tmp_path / "kafka-logs",
        node_id=1,
        directory_id=DIR_ID,
        partitions=specs,
        cluster_metadata=True,
        clean_shutdown=b'{"version":0,"brokerEpoch":77}',
        bootstrap=True,
        extra_dirs=["remote-log-index-cache"],
    )
    return root, specs


def test_healthy_kraft_dir(healthy: tuple[Path, list[PartitionSpec]]) -> None:
    root, specs = healthy
    inv = scan_log_dir(str(root))
    assert inv.log_dir == str(root)
    mp = inv.meta_properties
    assert mp is not None and (mp.version, mp.node_id, mp.cluster_id, mp.directory_id) == (1, 1, CLUSTER_ID, DIR_ID)
    assert inv.meta_properties_status == "ok"
    assert inv.has_lock_file and inv.has_bootstrap_checkpoint and inv.has_cluster_metadata
    assert inv.clean_shutdown is not None and inv.clean_shutdown.broker_epoch == 77
    assert inv.special_dirs == ("remote-log-index-cache",)
    assert inv.checkpoints[RECOVERY_POINT].status == "ok"
    assert {e.dir_name for e in inv.checkpoints[RECOVERY_POINT].entries} == {"orders-0", "orders-1"}
    assert inv.checkpoints["cleaner-offset-checkpoint"].status == "empty_file"
    assert not [p for p in inv.all_problems if p.severity in ("fatal", "error", "warning")]

    dirs = _by_name(inv)
    assert set(dirs) == {s.dir_name for s in specs} | {"__cluster_metadata-0"}
    for spec in specs:
        d = dirs[spec.dir_name]
        assert (d.kind, d.topic, d.partition) == (spec.kind, spec.topic, spec.partition)
        assert d.topic_id == str(spec.resolved_topic_id)
        assert d.partition_metadata_status == "ok"
        if spec.kind != "live":
            assert d.unique_id == spec.resolved_unique_id
    o0 = dirs["orders-0"]
    assert (o0.segment_count, o0.min_base_offset, o0.max_base_offset) == (3, 0, 250)
    assert o0.log_bytes == 30 and o0.index_bytes == 0
    # 3 x (.log, .index, .timeindex) + partition.metadata + leader-epoch-checkpoint
    assert o0.files == 11
    assert o0.bytes == sum(e.size for e in o0.entries)
    assert o0.oldest_mtime_ms is not None and o0.newest_mtime_ms is not None and o0.dir_mtime_ms is not None
    meta = dirs["__cluster_metadata-0"]
    assert meta.kind == "metadata" and meta.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert meta.quorum_state is not None and meta.quorum_state.data_version == 1


def test_fingerprint(healthy: tuple[Path, list[PartitionSpec]]) -> None:
    root, _ = healthy
    d = _by_name(scan_log_dir(root.as_posix()))["orders-1"]
    assert len(d.fingerprint) == 64
    assert fingerprint_dir(d.path) == d.fingerprint
    log = Path(d.path) / "00000000000000000000.log"
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert fingerprint_dir(d.path) == d.fingerprint, "sub-second changes are below the fingerprint's resolution"
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert fingerprint_dir(d.path) != d.fingerprint
    with log.open("ab") as f:
        f.write(b"x")
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fingerprint_dir(d.path) != d.fingerprint, "a size change alone changes the fingerprint"
    assert fingerprint_entries([("a", 1, 2), ("b", 3, 4)]) == fingerprint_entries([("b", 3, 4), ("a", 1, 2)])
    assert fingerprint_entries([("a", 1, 2)]) != fingerprint_entries([("a", 2, 2)])
    # SFTP listings carry whole seconds, local stats nanoseconds: both must give the same fingerprint.
    assert fingerprint_entries([("a", 1, 5_123_456_789)]) == fingerprint_entries([("a", 1, 5_000_000_000)])


def test_startup_blockers_are_fatal(tmp_path: Path) -> None:
    root = make_log_dir(
        tmp_path / "d",
        partitions=[PartitionSpec("orders", 3)],
        extra_dirs=["lost+found", ".snapshot", "foo-bar", "remote-log-index-cache", ".hidden-0"],
    )
    inv = scan_log_dir(str(root))
    dirs = _by_name(inv)
    fatal = {Path(p.path).name for p in inv.all_problems if p.severity == "fatal"}
    assert fatal == {"lost+found", ".snapshot", "foo-bar"}
    for name in ("lost+found", ".snapshot", "foo-bar"):
        assert dirs[name].kind == "unparseable"
    assert "remote-log-index-cache" not in dirs
    hidden = {Path(p.path).name for p in inv.problems if p.code == "hidden_dir"}
    assert hidden == {".snapshot", ".hidden-0"}
    assert dirs[".hidden-0"].kind == "live" and dirs[".hidden-0"].topic == ".hidden"


def test_duplicate_partition_dirs_are_fatal(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "d", partitions=[PartitionSpec("orders", 3)], extra_dirs=["orders-03", "orders-+3"])
    inv = scan_log_dir(str(root))
    dup = [p for p in inv.problems if p.code == "duplicate_log_dirs"]
    assert len(dup) == 1 and dup[0].severity == "fatal"
    assert all(n in dup[0].message for n in ("orders-3", "orders-03", "orders-+3"))


@pytest.mark.parametrize(
    ("content", "status", "code"),
    [
        (False, "missing", "partition_metadata_missing"),
        (b"", "empty", "partition_metadata_empty"),
        (b"version 0", "malformed", "partition_metadata_malformed"),
        (write_partition_metadata(ZERO), "zero_id", "partition_metadata_zero_id"),
        (b"version: 0\ntopic_id: a4885ff5-6e5f-4c28-a19b-be1e7af0e2d6", "invalid_id", "partition_metadata_invalid_id"),
    ],
)
def test_partition_metadata_statuses(tmp_path: Path, content: bytes | bool, status: str, code: str) -> None:
    root = make_log_dir(tmp_path / "d", partitions=[PartitionSpec("t", 0, partition_metadata=content)])
    d = _by_name(scan_log_dir(str(root)))["t-0"]
    assert d.partition_metadata_status == status
    assert d.topic_id is None
    assert code in _codes(d.problems)


def test_unreadable_partition_metadata_is_a_problem(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "d", partitions=[PartitionSpec("t", 0, partition_metadata=False)])
    (root / "t-0" / "partition.metadata").symlink_to(tmp_path / "nowhere")  # dangling: listed, cannot be opened
    d = _by_name(scan_log_dir(str(root)))["t-0"]
    assert d.partition_metadata_status == "unreadable"
    (problem,) = [p for p in d.problems if p.code == "partition_metadata_unreadable"]
    assert problem.path.endswith("t-0/partition.metadata") and "FileNotFoundError" in problem.message


def test_root_checkpoint_problems(tmp_path: Path) -> None:
    root = make_log_dir(
        tmp_path / "d",
        partitions=[PartitionSpec("a", 0), PartitionSpec("b", 0)],
        checkpoint_overrides={
            RECOVERY_POINT: b"0\n3\na 0 1\n",
            REPLICATION_OFFSET: write_offset_checkpoint([OffsetEntry("a", 0, 1), OffsetEntry("old", 1, 9)]),
            "log-start-offset-checkpoint": b"7\n0\n",
        },
    )
    (root / "cleaner-offset-checkpoint").unlink()
    inv = scan_log_dir(str(root))
    assert inv.checkpoints[RECOVERY_POINT].status == "count_mismatch"
    assert inv.checkpoints["log-start-offset-checkpoint"].status == "version_mismatch"
    assert inv.checkpoints["cleaner-offset-checkpoint"].status == "missing"
    codes = _codes(inv.problems)
    assert codes.count("checkpoint_count_mismatch") == 1 and codes.count("checkpoint_version_mismatch") == 1
    info = {p.code: p.message for p in inv.problems if p.severity == "info"}
    assert info["checkpoint_entry_without_dir"] == f"{REPLICATION_OFFSET}: 1: old-1"
    assert info["dir_absent_from_checkpoint"] == f"{REPLICATION_OFFSET}: 1: b-0"


def test_root_oddities(tmp_path: Path) -> None:
    root = make_log_dir(
        tmp_path / "d",
        meta_properties=False,
        partitions=[PartitionSpec("t", 0, extra_files={"partition.metadata.tmp": b"", "notes.txt": b"hi"})],
        extra_files={"recovery-point-offset-checkpoint.tmp": b"0\n", "README": b"x"},
        clean_shutdown=b"",
    )
    inv = scan_log_dir(str(root))
    assert inv.meta_properties is None and inv.meta_properties_status == "missing"
    assert inv.tmp_leftovers == ("recovery-point-offset-checkpoint.tmp",)
    assert inv.unknown_root_files == ("README",)
    assert inv.clean_shutdown is not None and inv.clean_shutdown.broker_epoch is None
    assert {"meta_properties_missing", "tmp_leftover", "unknown_root_file"} <= set(_codes(inv.problems))
    d = _by_name(inv)["t-0"]
    assert {"tmp_leftover", "unknown_files"} <= set(_codes(d.problems))


def test_truncated_delete_dir(tmp_path: Path) -> None:
    spec = PartitionSpec("t" * 249, 0, kind="delete")
    d = _by_name(scan_log_dir(str(make_log_dir(tmp_path / "d", partitions=[spec]))))[spec.dir_name]
    assert len(d.name) == 255 and d.topic_may_be_truncated
    assert "topic_may_be_truncated" in _codes(d.problems)
    assert d.topic_id == str(spec.resolved_topic_id)  # partition.metadata still names the real topic


def test_missing_or_file_root_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        scan_log_dir(str(tmp_path / "absent"))
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        scan_log_dir(str(tmp_path / "f"))


def test_file_url_equals_plain_path(healthy: tuple[Path, list[PartitionSpec]]) -> None:
    root, _ = healthy
    a, b = scan_log_dir(str(root)), scan_log_dir(root.as_uri())
    assert [(d.name, d.fingerprint, d.topic_id) for d in a.partition_dirs] == [
        (d.name, d.fingerprint, d.topic_id) for d in b.partition_dirs
    ]


def _copy_to_memory(src: Path, fs: MemoryFileSystem, dest: str) -> None:
    for dirpath, _dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        target = dest if rel == "." else f"{dest}/{rel}"
        fs.makedirs(target, exist_ok=True)
        for name in files:
            fs.pipe_file(f"{target}/{name}", (Path(dirpath) / name).read_bytes())


def test_generic_fsspec_backend(healthy: tuple[Path, list[PartitionSpec]]) -> None:
    """The in-memory fsspec filesystem is a real backend: the non-local code path runs unmocked."""
    root, _ = healthy
    fs = fsspec.filesystem("memory")
    _copy_to_memory(root, fs, "/logs-a")
    try:
        inv = scan_log_dir("memory://logs-a")
        local = scan_log_dir(str(root))
        assert [(d.name, d.kind, d.topic_id, d.files, d.bytes, d.segment_count) for d in inv.partition_dirs] == [
            (d.name, d.kind, d.topic_id, d.files, d.bytes, d.segment_count) for d in local.partition_dirs
        ]
        assert inv.meta_properties == local.meta_properties
        assert inv.checkpoints == local.checkpoints
        assert scan_log_dir("/logs-a", fs=fs).partition_dirs == inv.partition_dirs
        with pytest.raises(FileNotFoundError):
            scan_log_dir("memory://nope")
    finally:
        fs.rm("/logs-a", recursive=True)


class _FailingMemoryFS(MemoryFileSystem):
    """A fake (listing errors cannot be produced for real when tests run as root): one dir refuses listing."""

    failing = True

    def ls(self, path, detail=True, **kwargs):
        if self.failing and path.rstrip("/").endswith("/t-1"):
            raise PermissionError(13, "Permission denied", path)
        return super().ls(path, detail=detail, **kwargs)


def test_unreadable_partition_dir_is_a_problem(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "d", partitions=[PartitionSpec("t", 0), PartitionSpec("t", 1)])
    fs = _FailingMemoryFS()
    _copy_to_memory(root, fs, "/failing")
    try:
        inv = scan_log_dir("/failing", fs=fs)
        d = _by_name(inv)["t-1"]
        assert d.partition_metadata_status == "unreadable" and d.files == 0
        (p,) = [p for p in d.problems if p.code == "dir_unreadable"]
        assert p.severity == "error" and "PermissionError" in p.message and p.path.endswith("/t-1")
        assert _by_name(inv)["t-0"].partition_metadata_status == "ok"
    finally:
        fs.failing = False
        fs.rm("/failing", recursive=True)
