"""Registrations hold one object per distinct replica list, ISR, leader and directory list
(``pipelines.metadata.shared_values``), whichever replay made them: a log's PartitionRecords and
PartitionChangeRecords, the summary's hot path (compiled and pure Python), a snapshot, ZooKeeper's znodes. Broker ids
above 256 are used on purpose: Python caches smaller ints, so only sharing makes those replicas one object."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from pipelines import native
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import shared_values
from pipelines.metadata.image import MetadataImage, PartitionImage
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.metadata.zookeeper_source import image_from_znodes
from tests.metadata.mdrecords import change, did, encode_log, encode_snapshot, feature, partition, tid, topic
from tests.metadata.zk_tree import ZkTree

REPLICAS = [1001, 1002, 1003]
DIRS = [did(1), did(2), did(3)]


def _partitions(image: MetadataImage) -> list[PartitionImage]:
    return [p for t in sorted(image.topics.by_id.values(), key=lambda t: t.name) for p in t.partitions.values()]


def _one_object_each(parts: list[PartitionImage], *fields: str) -> None:
    for name in fields:
        assert len({id(getattr(p, name)) for p in parts}) == 1, name
        assert len({getattr(p, name) for p in parts}) == 1, name


def _log() -> list:
    records = [feature("metadata.version", 21)]
    for t in range(3):
        records.append(topic(f"t{t}", tid(t)))
        # fresh lists per record: the decoder makes new tuples and ints for every record either way
        records += [partition(tid(t), p, list(REPLICAS), dirs=list(DIRS)) for p in range(4)]
    return records


@pytest.mark.parametrize("keep_partition_added", [True, False], ids=["full replay", "summary replay"])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "pure python"])
def test_partitions_of_a_log_share_their_values(tmp_path: Path, keep_partition_added: bool, compiled: bool) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(encode_log(_log()))
    with contextlib.nullcontext() if compiled else native.pure_python():
        parts = _partitions(load_metadata(str(tmp_path), keep_partition_added=keep_partition_added).image)
    assert len(parts) == 12 and parts[0].replicas == tuple(REPLICAS) and parts[0].directories == tuple(DIRS)
    _one_object_each(parts, "replicas", "isr", "leader", "directories")
    assert parts[0].isr is parts[0].replicas
    assert parts[0].replicas[0] is parts[5].replicas[0]  # the broker ids inside them too


def test_changes_and_a_snapshot_share_what_they_set(tmp_path: Path) -> None:
    snapshot = [feature("metadata.version", 21), topic("a", tid(1))]
    snapshot += [partition(tid(1), p, [1001, 1002], isr=[1001], dirs=[did(1), did(2)]) for p in range(3)]
    (tmp_path / "00000000000000000004-0000000001.checkpoint").write_bytes(encode_snapshot(snapshot))
    log = [change(tid(1), p, isr=[1001, 1002], leader=1002) for p in range(3)]  # folded ISR/leader changes
    log += [change(tid(1), p, replicas=[1003, 1004], isr=[1003, 1004], directories=[did(3), did(4)])
            for p in range(3)]  # replica moves: the merge path
    (tmp_path / "00000000000000000004.log").write_bytes(encode_log(log, start=4, batch_size=2))
    parts = _partitions(load_metadata(str(tmp_path)).image)
    assert [p.replicas for p in parts] == [(1003, 1004)] * 3 and parts[0].directories == (did(3), did(4))
    _one_object_each(parts, "replicas", "isr", "leader", "directories")


def test_isr_changes_share_the_settled_isr(tmp_path: Path) -> None:
    log = [feature("metadata.version", 21), topic("a", tid(1))]
    log += [partition(tid(1), p, [1001, 1002], isr=[1001]) for p in range(3)]
    log += [change(tid(1), p, isr=[1001, 1002], leader=1002) for p in range(3)]
    (tmp_path / "00000000000000000000.log").write_bytes(encode_log(log, batch_size=1))
    parts = _partitions(load_metadata(str(tmp_path)).image)
    assert parts[0].isr == (1001, 1002) and parts[0].leader == 1002
    _one_object_each(parts, "isr", "leader")


def test_a_two_replica_list_is_never_given_a_directory_id_equal_to_it() -> None:
    dirs = shared_values.shared_dirs((Uuid(1001, 1002),))
    replicas = shared_values.shared((1001, 1002))
    assert type(replicas) is tuple and type(dirs[0]) is Uuid  # Uuid(1001, 1002) == (1001, 1002): kept apart


def test_the_table_starts_over_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_values, "SHARED_VALUES", {})
    monkeypatch.setattr(shared_values, "SHARED_MAX", 3)
    for n in range(4):
        shared_values.shared((n + 5000,))
    assert len(shared_values.SHARED_VALUES) == 4
    first = (5000,)
    assert shared_values.shared(first) is first  # emptied before this one: the earlier object is no longer kept
    assert len(shared_values.SHARED_VALUES) == 1


def test_zookeeper_partitions_share_their_values() -> None:
    tree = ZkTree().broker(1001).broker(1002)
    for t in range(3):
        tree = tree.topic(f"t{t}", Uuid(0x50 + t, 0x60 + t), {p: [1001, 1002] for p in range(3)})
    image, _, _ = image_from_znodes(tree.snapshot())
    parts = _partitions(image)
    assert len(parts) == 9 and parts[0].replicas == (1001, 1002)
    _one_object_each(parts, "replicas", "isr", "leader", "directories")
