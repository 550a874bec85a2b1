"""The executor's ZooKeeper re-check (``metadata.kind: zookeeper`` with a dump file) against inputs that lie: an
approved plan whose item ZooKeeper says is assigned here is never touched; a topic ZooKeeper has without an id is
never touched; an unreadable dump refuses the whole run. The live-ZooKeeper twin of these is in
``tests/kafka_cluster/test_zookeeper_live.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from exec_world import BROKER, GARBAGE, build_world

from pipelines.errors import PreconditionFailed
from pipelines.execute.apply import apply_plan
from pipelines.kafka.uuid import Uuid
from tests.metadata.zk_tree import ZkTree


def _dump(tmp_path: Path, tree: ZkTree) -> str:
    path = tmp_path / "zk-dump.json"
    path.write_text(tree.snapshot().to_json())
    return str(path)


def _tree(**assigned: list[int]) -> ZkTree:
    """Topics of the world's garbage (gone-0, gone-1) and ``old`` with the given replicas; brokers 1..3 live."""
    tree = ZkTree().broker(1).broker(2).broker(3)
    for spec in GARBAGE:
        tree.topic(f"{spec.topic}", Uuid.from_string(str(spec.resolved_topic_id)),
                   {0: assigned.get(spec.topic, [2, 3]), 1: assigned.get(spec.topic, [2, 3]),
                    3: assigned.get(spec.topic, [2, 3])})
    return tree


def _actions(report) -> dict[str, str]:
    return {i.item_id: i.action for i in report.items}


def test_a_dump_saying_the_replica_is_assigned_here_protects_it(tmp_path: Path) -> None:
    dump = _dump(tmp_path, _tree(gone=[BROKER, 2]))
    w = build_world(tmp_path, metadata={"kind": "zookeeper", "source": dump})
    report = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True)
    gone = {i: a for i, a in _actions(report).items() if i.startswith("gone")}
    assert set(gone.values()) == {"skipped"}, report.items
    assert all(p.exists() for i, p in w.garbage.items() if i.startswith("gone"))
    assert "live replica" in next(i.reason for i in report.items if i.item_id.startswith("gone"))


def test_a_dump_that_does_not_assign_them_lets_the_plan_apply(tmp_path: Path) -> None:
    """The same world with ZooKeeper assigning the topics elsewhere: applied (so the test above can fail)."""
    dump = _dump(tmp_path, _tree())
    w = build_world(tmp_path, metadata={"kind": "zookeeper", "source": dump})
    report = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True)
    assert set(_actions(report).values()) == {"quarantined"}, report.items
    assert not any(p.exists() for p in w.garbage.values())


def test_a_topic_zookeeper_has_without_an_id_is_never_touched(tmp_path: Path) -> None:
    tree = _tree()
    tree.topic("gone", None, {0: [2, 3], 1: [2, 3]})  # the same name, now without a topic id
    w = build_world(tmp_path, metadata={"kind": "zookeeper", "source": _dump(tmp_path, tree)})
    report = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True)
    gone = [i for i in report.items if i.item_id.startswith("gone")]
    assert gone and all(i.action == "skipped" and "without a topic id" in i.reason for i in gone)


@pytest.mark.parametrize("damage", ["missing", "not json", "wrong chroot"])
def test_an_unreadable_or_foreign_dump_refuses_or_protects_everything(tmp_path: Path, damage: str) -> None:
    """Missing or corrupt: the run is refused (PreconditionFailed), nothing moves. A dump of another tree (no
    ``/brokers/topics``) is an incomplete image: every item is unknown to it, so every item is skipped."""
    path = tmp_path / "zk-dump.json"
    if damage == "not json":
        path.write_text("{")
    elif damage == "wrong chroot":
        path.write_text(ZkTree().raw("/zookeeper", None).snapshot().to_json())
    w = build_world(tmp_path, metadata={"kind": "zookeeper", "source": str(path)})
    if damage == "wrong chroot":
        report = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True)
        assert set(_actions(report).values()) == {"skipped"}
    else:
        with pytest.raises(PreconditionFailed, match="cannot re-read controller metadata from ZooKeeper"):
            apply_plan(w.config, w.store, "plan-1", BROKER, execute=True)
    assert all(p.exists() for p in w.garbage.values())


def test_a_topic_zookeeper_no_longer_has_is_dated_by_the_executors_own_first_sight(tmp_path: Path) -> None:
    """ZooKeeper keeps no deletion time: the first ``apply --execute`` that finds the topic id absent skips its
    dirs and writes the time to its absence log; an apply past the grace floor from then may move them. A dry run
    records nothing, and a clock past the floor alone does not help without that first sight."""
    from datetime import datetime, timedelta, timezone

    from pipelines.execute.absence_log import AbsenceLog

    tree = ZkTree().broker(1).broker(2).broker(3)  # the garbage topics are gone from ZooKeeper altogether
    w = build_world(tmp_path, metadata={"kind": "zookeeper", "source": _dump(tmp_path, tree)})
    gone = [i.item_id for i in w.plan.items if i.topic == "gone"]
    far = datetime.now(timezone.utc) + timedelta(days=5)  # before the plan expires (7 days)
    dry = apply_plan(w.config, w.store, "plan-1", BROKER, now=far)
    assert {i.rule for i in dry.items if i.item_id in gone} == {"min_grace"}
    assert not AbsenceLog(w.state_dir, BROKER).path.exists()
    first = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True)
    assert {i.rule for i in first.items if i.item_id in gone} == {"min_grace"}
    assert all(w.garbage[i].exists() for i in gone)
    assert set(map(str, AbsenceLog(w.state_dir, BROKER).read())) == {str(GARBAGE[0].resolved_topic_id)}
    soon = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True,
                      now=datetime.now(timezone.utc) + timedelta(hours=2))
    assert {i.rule for i in soon.items if i.item_id in gone} == {"min_grace"}
    later = apply_plan(w.config, w.store, "plan-1", BROKER, execute=True,
                       now=datetime.now(timezone.utc) + timedelta(days=2))
    assert {i.action for i in later.items if i.item_id in gone} == {"quarantined"}
