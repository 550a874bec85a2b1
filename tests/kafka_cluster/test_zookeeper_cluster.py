"""A ZooKeeper-mode Kafka 3.9 cluster (3 brokers x 2 log dirs, one real ZooKeeper) from Kafka's own jars, operated
the way operators do; the project reads its controller state from ZooKeeper (``metadata.kind: zookeeper``),
crawls the brokers' disks and classifies what Kafka left.

One cluster for the module; the scenarios run in file order and build on each other (broker 3 is replaced by
broker 4 near the end). Broker 1 keeps ``-delete`` dirs for 10 minutes so they can be read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import KafkaCluster, wait_for
from jars import KAFKA_3, resolve_or_skip, zookeeper_or_skip
from kafka.errors import KafkaError
from test_kraft_cluster import (
    _all_brokers_up,  # noqa: F401  (autouse: no scenario starts with a broker down)
    _described,
    _plan_for,
    cli,
    crawl,
    create,
    dirs_of,
)
from zookeeper_server import ZooKeeperServer

from pipelines.config.load import load_config
from pipelines.config.models import DetectConfig, MetadataConfig
from pipelines.detect import classes as C
from pipelines.execute import apply_plan
from pipelines.metadata import MetadataImage
from pipelines.metadata.source import removed_topic_events
from pipelines.metadata.zookeeper_source import ZooKeeperSource
from pipelines.metadata.zookeeper_znodes import read_live
from pipelines.plan.model import GcPlan
from pipelines.plan.recheck import classify, live_copies
from pipelines.tables import open_store
from tests.signing.ssh_keys import Keyring

pytestmark = pytest.mark.integration

CHROOT = "/kafka"
DELETE_DELAY_MS = 600_000


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), zookeeper_or_skip())
    with server.running_server():
        yield server


@pytest.fixture(scope="module")
def kafka(zk: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(tmp_path_factory.mktemp("zk-kafka"), resolve_or_skip(KAFKA_3), zookeeper=zk.connect + CHROOT,
                           per_broker={1: {"log.segment.delete.delay.ms": str(DELETE_DELAY_MS)}})
    with cluster.running():
        yield cluster


def zk_config(zk: ZooKeeperServer) -> MetadataConfig:
    return MetadataConfig(kind="zookeeper", zookeeper_connect=zk.connect + CHROOT)


def zk_image(zk: ZooKeeperServer, until: Any = lambda _: True, timeout: float = 90.0) -> MetadataImage:
    """The image read from ZooKeeper, once complete and showing ``until``."""
    def read() -> MetadataImage | None:
        image = ZooKeeperSource(zk_config(zk)).load().image
        return image if image.complete and until(image) else None

    return wait_for("ZooKeeper to show the expected state", read, timeout=timeout)


def classes_of(kafka: KafkaCluster, broker_id: int, image: MetadataImage, *, now: datetime | None = None,
               topic: str | None = None) -> dict[tuple[str, int, str], list[tuple[str, str]]]:
    """(topic, partition, kind) → (class, reason) of the broker's dirs, by the plain-Python classifier."""
    facts, _ = crawl(kafka, broker_id)
    copies = live_copies(facts)
    out: dict[tuple[str, int, str], list[tuple[str, str]]] = {}
    for f in facts:
        if topic is not None and f.topic != topic:
            continue
        verdict = classify(f, image, copies=copies, config=DetectConfig(), now=now or datetime.now(timezone.utc))
        out.setdefault((f.topic or "", -1 if f.partition is None else f.partition, f.kind), []).append(verdict)
    return out


def request_delete(kafka: KafkaCluster, topic: str) -> None:
    """Ask for a deletion without waiting for it (a deletion blocked by a down broker times out the request)."""
    admin = kafka.admin()
    try:
        admin.delete_topics([topic], timeout_ms=2000)
    except KafkaError:
        pass  # REQUEST_TIMED_OUT: queued in /admin/delete_topics, the controller finishes it later
    finally:
        admin.close()


def never_plannable(seen: dict[Any, list[tuple[str, str]]]) -> bool:
    return not any(C.is_plannable(cls, False) for verdicts in seen.values() for cls, _ in verdicts)


# ------------------------------------------------------------------------------------------------ scenarios


def test_topic_deleted_while_a_jbod_dir_was_offline(kafka: KafkaCluster, zk: ZooKeeperServer) -> None:
    """Broker 3's first log dir (holding only ``zjbod-0``) is offline while the topic is deleted: Kafka cannot
    delete that replica, so ZooKeeper keeps the deletion queued; the disk back in place, the dir is a pending (later
    stuck) topic deletion, never planned, and Kafka finishes the deletion once the broker loads the disk again."""
    create(kafka, "zjbod", {0: [3, 2]})
    (held,) = dirs_of(kafka, 3, "zjbod")
    disk = held.parent
    assert {p.name for p in disk.iterdir() if p.is_dir()} == {"zjbod-0"}, "the disk must hold only this replica"
    kafka.stop_broker(3)
    away = disk.with_name(disk.name + ".away")
    disk.rename(away)
    disk.write_text("a failed disk\n")  # a configured log dir Kafka cannot use: offline (KIP-112)
    kafka.start_broker(3)
    request_delete(kafka, "zjbod")
    image = zk_image(zk, lambda i: "zjbod" in i.topic_deletions)
    assert "zjbod" in image.topics.by_name, "the deletion cannot finish while the replica's disk is offline"

    kafka.stop_broker(3)
    disk.unlink()
    away.rename(disk)
    image = zk_image(zk, lambda i: "zjbod" in i.topic_deletions)
    seen = classes_of(kafka, 3, image, topic="zjbod")
    assert [c for c, _ in seen[("zjbod", 0, "live")]] == [C.PENDING_TOPIC_DELETION], seen
    later = classes_of(kafka, 3, image, topic="zjbod", now=datetime.now(timezone.utc) + timedelta(hours=2))
    ((cls, reason),) = later[("zjbod", 0, "live")]
    assert cls == C.STUCK_TOPIC_DELETION and "not registered: [3]" in reason, reason
    assert never_plannable(seen) and never_plannable(later)

    kafka.start_broker(3)
    zk_image(zk, lambda i: "zjbod" not in i.topics.by_name and "zjbod" not in i.topic_deletions)
    wait_for("broker 3 to delete zjbod-0", lambda: not [p for p in dirs_of(kafka, 3, "zjbod")
                                                        if not p.name.endswith("-delete")])


def test_topic_deleted_while_a_broker_is_down_is_pending_then_completed_never_planned(
        kafka: KafkaCluster, zk: ZooKeeperServer) -> None:
    """KAFKA-330's halted deletion: broker 2 is down, so the deletion stays queued (pending, then stuck with the
    reason), the live brokers' copies become ``-delete`` dirs; broker 2 back, Kafka completes it. The run that first
    sees the topic gone stamps its ``topic_removed`` event (ZooKeeper keeps no history)."""
    create(kafka, "zdown", {0: [1, 2], 1: [2, 3]})
    before = ZooKeeperSource(zk_config(zk)).load()
    kafka.stop_broker(2)
    request_delete(kafka, "zdown")
    image = zk_image(zk, lambda i: "zdown" in i.topic_deletions and 2 not in i.brokers)
    assert image.topics.by_name["zdown"].topic_id == before.image.topics.by_name["zdown"].topic_id

    on_2 = classes_of(kafka, 2, image, topic="zdown")
    assert {k: [c for c, _ in v] for k, v in on_2.items()} == {
        ("zdown", 0, "live"): [C.PENDING_TOPIC_DELETION], ("zdown", 1, "live"): [C.PENDING_TOPIC_DELETION]}
    stuck = classes_of(kafka, 2, image, topic="zdown", now=datetime.now(timezone.utc) + timedelta(hours=2))
    assert all(c == C.STUCK_TOPIC_DELETION and "replicas on brokers [1,2,3], not registered: [2]" in r
               for v in stuck.values() for c, r in v), stuck
    wait_for("broker 1 to rename zdown-0 to -delete",
             lambda: [p for p in dirs_of(kafka, 1, "zdown") if p.name.endswith("-delete")])
    on_1 = classes_of(kafka, 1, image, topic="zdown")
    assert [c for c, _ in on_1[("zdown", 0, "delete")]] == [C.PENDING_DELETE]
    assert never_plannable(on_2) and never_plannable(stuck) and never_plannable(on_1)

    kafka.start_broker(2)
    after = zk_image(zk, lambda i: "zdown" not in i.topics.by_name and "zdown" not in i.topic_deletions)
    wait_for("broker 2 to delete its zdown dirs",
             lambda: not [p for p in dirs_of(kafka, 2, "zdown") if not p.name.endswith("-delete")])
    assert never_plannable(classes_of(kafka, 2, after, topic="zdown"))

    history = [{"event": e.event, "topic_id": str(e.topic_id), "topic": e.topic} for e in before.events
               if e.topic_id is not None]
    view = ZooKeeperSource(zk_config(zk)).load()
    removed = removed_topic_events(history, view)
    assert [(e.event, e.topic) for e in removed] == [("topic_removed", "zdown")]
    assert removed[0].topic_id == before.image.topics.by_name["zdown"].topic_id
    assert removed[0].timestamp_ms == view.removals_seen_at_ms


def test_partition_metadata_topic_ids_equal_zookeepers(kafka: KafkaCluster, zk: ZooKeeperServer) -> None:
    """Every live partition dir's ``partition.metadata`` id equals ``topic_id`` in its ``/brokers/topics`` znode,
    read raw and through the image."""
    create(kafka, "zids", {0: [1, 2], 1: [3, 1], 2: [2, 3]})
    raw = read_live(zk_config(zk))
    image = zk_image(zk, lambda i: "zids" in i.topics.by_name)
    compared = 0
    for broker_id in kafka.brokers:
        facts, _ = crawl(kafka, broker_id)
        for f in facts:
            if f.kind != "live" or f.topic_id is None:
                continue
            znode = raw.get(f"/brokers/topics/{f.topic}")
            assert znode is not None and znode.json()["topic_id"] == f.topic_id, f
            assert str(image.topics.by_name[f.topic].topic_id) == f.topic_id
            compared += 1
    assert compared >= 6


def test_replaced_broker_finds_the_old_brokers_dirs(kafka: KafkaCluster, zk: ZooKeeperServer) -> None:
    """Broker 3's host is replaced by broker 4 on the same disks: ZooKeeper still assigns the replicas to 3, so
    the dirs broker 4 loaded are ``not_a_replica`` (with the topic's ids: the old broker's data, found)."""
    create(kafka, "zmoved", {0: [3, 1], 1: [1, 3]})
    kafka.stop_broker(3)
    kafka.renumber_broker(3, 4)
    kafka.start_broker(4)
    image = zk_image(zk, lambda i: 4 in i.brokers and 3 not in i.brokers)
    seen = classes_of(kafka, 4, image, topic="zmoved")
    assert {k: [c for c, _ in v] for k, v in seen.items()} == {
        ("zmoved", 0, "live"): [C.NOT_A_REPLICA], ("zmoved", 1, "live"): [C.NOT_A_REPLICA]}
    assert all(C.is_plannable(c, False) for v in seen.values() for c, _ in v)


def _plan(kafka: KafkaCluster, zk: ZooKeeperServer, broker_id: int) -> GcPlan:
    """The KRaft test's plan builder against the ZooKeeper image; the cluster id from the broker's meta.properties
    (ZooKeeper mode: Kafka writes it there on first start)."""
    meta = (kafka.brokers[broker_id].log_dirs[0] / "meta.properties").read_text()
    cluster_id = next(line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("cluster.id="))
    return _plan_for(kafka, broker_id, image=zk_image(zk), cluster_id=cluster_id)


def test_apply_is_refused_while_the_broker_runs_then_applied_with_a_live_zookeeper_recheck(
        kafka: KafkaCluster, zk: ZooKeeperServer, tmp_path: Path) -> None:
    """crawl → classify (ZooKeeper) → plan → approve → ``apply`` exits 7 while broker 4 holds ``.lock``. In
    ZooKeeper mode the broker keeps logs it is not assigned OPEN (no stray handling), and its clean shutdown trims
    their index files: the plan crawled while it ran no longer matches and every item is skipped, never forced. A
    plan crawled from the stopped broker applies, with the executor re-reading ZooKeeper; broker 4 restarts cleanly
    and its live replica still serves."""
    create(kafka, "zlive", {0: [4, 1]}, values=30)
    node = kafka.brokers[4]
    keys = Keyring(tmp_path / "trust")  # the reviewer signs; the broker host trusts that key
    for name in ("reviewer", "planner"):  # the planner signs the proposal (the plan's author), the reviewer approves
        keys.key(name)
        keys.allow(name, name)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "cluster": "it", "warehouse": str(tmp_path / "warehouse"),  # the cluster name the shared plan builder uses
        "brokers": [{"broker_id": 4, "log_dirs": [str(d) for d in node.log_dirs]}],
        "metadata": {"kind": "zookeeper", "zookeeper_connect": zk.connect + CHROOT},
        "executor": {"state_dir": str(tmp_path / "state"), "allowed_signers": str(keys.allowed_signers)},
    }))
    c = ("--config", str(config))

    def approved_plan() -> GcPlan:
        plan = _plan(kafka, zk, 4)
        (tmp_path / f"{plan.plan_id}.json").write_text(plan.to_json())
        assert cli("plans", "register", str(tmp_path / f"{plan.plan_id}.json"), "--by", "planner",
                   "--key", str(keys.key("planner")), *c)[0] == 0  # the planner signs the proposal: the author
        code, _, err = cli("plans", "approve", plan.plan_id, "--by", "reviewer", "--key", str(keys.key("reviewer")), *c)
        assert code == 0, err
        # broker 3's replicas of the earlier scenarios' topics, now on broker 4's disks: all of them, nothing else
        assert {(i.topic, i.partition) for i in plan.items} == {("zmoved", 0), ("zmoved", 1), ("zids", 1),
                                                                  ("zids", 2)}
        assert {i.class_ for i in plan.items} == {C.NOT_A_REPLICA}
        return plan

    live_before = {p.name for p in dirs_of(kafka, 4, "zlive")}
    stale = approved_plan()
    code, _, err = cli("apply", stale.plan_id, "--broker", "4", "--execute", *c)
    assert code == 7, err  # Kafka holds the log dirs' .lock
    kafka.stop_broker(4)
    code, out, err = cli("apply", stale.plan_id, "--broker", "4", "--execute", *c, "--json")
    report = json.loads(out)
    assert {i["action"] for i in report["items"]} == {"skipped"}, out
    assert all("changed since the crawl" in i["reason"] for i in report["items"])
    assert all((Path(i.log_dir) / i.dir_name).exists() for i in stale.items)

    plan = approved_plan()
    code, out, err = cli("apply", plan.plan_id, "--broker", "4", "--execute", *c, "--json")
    assert code == 6, err  # the reassignments are minutes old by ZooKeeper's mtimes: under the 24 h grace floor
    assert {i["rule"] for i in json.loads(out)["items"]} == {"min_grace"}, out
    later = datetime.now(timezone.utc) + timedelta(days=2)  # the API takes the clock; the CLI never does
    report = apply_plan(load_config(config), open_store("rust", str(tmp_path / "warehouse")), plan.plan_id, 4,
                        execute=True, now=later)
    assert report.status == "applied", report
    assert not any((Path(i.log_dir) / i.dir_name).exists() for i in plan.items)

    kafka.start_broker(4)
    admin = kafka.admin()
    try:
        wait_for("broker 4 back in zlive's ISR",
                 lambda: 4 in ((_described(admin, "zlive") or {"partitions": [{"isr_nodes": []}]})
                               ["partitions"][0]["isr_nodes"]))
    finally:
        admin.close()
    assert {p.name for p in dirs_of(kafka, 4, "zlive")} == live_before
    kafka.produce("zlive", [b"after"], partition=0)
    values = kafka.consume("zlive", [0], expected=31)
    assert len(values) == 31 and values[-1] == b"after"


@pytest.mark.second_tier  # a whole Spark run against the module's cluster: minutes on the CI machine
def test_a_stopped_brokers_dynamic_delete_delay_is_read_and_the_cluster_is_planned(
        kafka: KafkaCluster, zk: ZooKeeperServer, tmp_path: Path) -> None:
    """Broker 2 sets ``log.segment.delete.delay.ms`` to 24 h as a dynamic per-broker config (``/config/brokers/2``),
    keeps the ``-delete`` dirs of a deleted topic, and is stopped, so ZooKeeper no longer registers it (what the
    docs advise before crawling a ZooKeeper-mode broker). ``logdir-gc run`` three hours later (grace 1 h): detect
    and the plan's re-check both judge those dirs by broker 2's own 24 h, so they are ``pending_delete``, the
    re-check agrees and the run succeeds. Judged by the default delay they were ``stuck_delete`` and plannable, the
    re-check disagreed and no plan was written for the whole cluster."""
    from deltalake import DeltaTable
    from kafka.admin import ConfigResource, ConfigResourceType

    day_ms = str(24 * 3600 * 1000)
    admin = kafka.admin()
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "2",
                                            configs={"log.segment.delete.delay.ms": day_ms})])
    finally:
        admin.close()
    zk_image(zk, lambda i: i.broker_config(2, "log.segment.delete.delay.ms") == day_ms)
    create(kafka, "zdelay", {0: [2], 1: [2]})
    admin = kafka.admin()
    try:
        admin.delete_topics(["zdelay"])
        wait_for("zdelay deleted", lambda: "zdelay" not in admin.list_topics())
    finally:
        admin.close()
    wait_for("broker 2's -delete dirs", lambda: len(dirs_of(kafka, 2, "zdelay")) == 2
             and all(p.name.endswith("-delete") for p in dirs_of(kafka, 2, "zdelay")))
    kafka.stop_broker(2)
    zk_image(zk, lambda i: 2 not in i.brokers)
    warehouse = tmp_path / "warehouse"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "cluster": "zk-delays", "warehouse": str(warehouse),
        "brokers": [{"broker_id": 2, "log_dirs": [str(d) for d in kafka.brokers[2].log_dirs]}],
        "metadata": {"kind": "zookeeper", "zookeeper_connect": zk.connect + CHROOT},
        "detect": {"grace_ms": "1h"}, "policy": {"min_grace_ms": "1h"},
    }))
    later = (datetime.now(timezone.utc) + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    run = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "run", "--config", str(config), "--now", later],
                         capture_output=True, text=True, timeout=1200, check=False)  # a whole Spark run
    rejected = [p.read_text() for p in warehouse.rglob("*disagreements.json")]
    assert run.returncode == 0 and not rejected, run.stdout + run.stderr + "".join(rejected)
    findings = DeltaTable(str(warehouse / "findings")).to_pyarrow_table().to_pylist()
    ours = [f for f in findings if f["broker_id"] == 2 and f["dir_name"].startswith("zdelay-")]
    assert len(ours) == 2 and {f["class"] for f in ours} == {C.PENDING_DELETE}, ours
