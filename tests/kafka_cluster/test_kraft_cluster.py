"""Apache Kafka itself in the loop: a KRaft cluster (1 controller, 3 brokers x 2 log dirs) from Kafka's own jars,
operated the way operators do, and the project's crawl + metadata replay + classifier run on what Kafka left.

One cluster per Kafka version (module scope); the tests run in file order and each makes its own topics.
Broker 3 keeps ``-delete`` dirs for 10 minutes (``log.segment.delete.delay.ms``) so they can be read.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster import KafkaCluster, wait_for
from jars import KAFKA_3, KAFKA_4, resolve_or_skip
from kafka import TopicPartition
from kafka.admin import NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "signing"))

from ssh_keys import Keyring

from pipelines.config.load import load_config
from pipelines.config.models import BrokerConfig, DetectConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.detect import classes as C
from pipelines.execute import apply_plan, purge
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import MetadataImage
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.plan.recheck import DirFacts, assigned_here, classify, live_copies
from pipelines.tables import open_store

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DELETE_DELAY_MS = 600_000


# the newest Kafka in ``make test``; the older line too in the second tier (CI budget)
@pytest.fixture(scope="module", params=[KAFKA_4, pytest.param(KAFKA_3, marks=pytest.mark.second_tier)],
                ids=lambda v: f"kafka-{v}")
def kafka(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    jars = resolve_or_skip(request.param)
    cluster = KafkaCluster(
        tmp_path_factory.mktemp(f"kraft-{request.param}"), jars,
        per_broker={3: {"log.segment.delete.delay.ms": str(DELETE_DELAY_MS)}},
    )
    with cluster.running():
        yield cluster


# ------------------------------------------------------------------------------------------------ helpers


@pytest.fixture(autouse=True)
def _all_brokers_up(kafka: KafkaCluster) -> None:
    """A test that failed with a broker stopped must not leave the next test a different cluster."""
    for broker_id in kafka.brokers:
        kafka.start_broker(broker_id)


def replicas(image: MetadataImage, topic: str, partition: int) -> set[int] | None:
    t = image.topics.by_name.get(topic)
    p = None if t is None else t.partitions.get(partition)
    return None if p is None else set(p.replicas)


def crawl(kafka: KafkaCluster, broker_id: int) -> tuple[list[DirFacts], list[dict[str, Any]]]:
    node = kafka.brokers[broker_id]
    result = crawl_local([BrokerConfig(broker_id=broker_id, log_dirs=tuple(str(d) for d in node.log_dirs))],
                         run_id=f"it-{uuid.uuid4().hex[:8]}", cluster="it")
    assert not result.errors, result.errors
    dir_ids = {r["log_dir"]: r["directory_id"] for r in result.log_dirs}
    return [DirFacts.from_partition_dir(r, dir_ids[r["log_dir"]]) for r in result.partition_dirs], \
        result.partition_dirs


def classify_broker(kafka: KafkaCluster, broker_id: int, *, now: datetime | None = None,
                    image: MetadataImage | None = None) -> dict[tuple[str, int, str], list[str]]:
    """(topic, partition, kind) → classes of the broker's dirs with that name (several ``-stray``/``-delete`` may)."""
    facts, _ = crawl(kafka, broker_id)
    image = image or kafka.replayed_image()
    copies = live_copies(facts)
    out: dict[tuple[str, int, str], list[str]] = {}
    for f in facts:
        cls, _why = classify(f, image, copies=copies, config=DetectConfig(), now=now or datetime.now(timezone.utc))
        out.setdefault((f.topic or "", f.partition if f.partition is not None else -1, f.kind), []).append(cls)
    return out


def create(kafka: KafkaCluster, topic: str, assignment: dict[int, list[int]], values: int = 20) -> None:
    admin = kafka.admin()
    try:
        admin.create_topics([NewTopic(topic, replica_assignments=assignment)])
        wait_for(f"topic {topic}", lambda: _described(admin, topic) is not None)
    finally:
        admin.close()
    for p in assignment:
        kafka.produce(topic, [f"{topic}-{p}-{i}".encode() * 20 for i in range(values)], partition=p)


def _described(admin: Any, topic: str) -> dict[str, Any] | None:
    (t,) = admin.describe_topics([topic])
    return t if t["error_code"] == 0 and t["partitions"] and all(p["leader_id"] >= 0 for p in t["partitions"]) \
        else None


def delete(kafka: KafkaCluster, *topics: str) -> None:
    admin = kafka.admin()
    try:
        admin.delete_topics(list(topics))
        wait_for(f"deletion of {topics}", lambda: not set(topics) & set(admin.list_topics()))
    finally:
        admin.close()


def reassign(kafka: KafkaCluster, topic: str, partition: int, replicas: list[int]) -> None:
    admin = kafka.admin()
    try:
        errors = admin.alter_partition_reassignments({TopicPartition(topic, partition): replicas})
        assert all(e is None for e in errors.values()), errors
    finally:
        admin.close()


def ongoing(kafka: KafkaCluster) -> dict[Any, Any]:
    admin = kafka.admin()
    try:
        return admin.list_partition_reassignments()
    finally:
        admin.close()


def dirs_of(kafka: KafkaCluster, broker_id: int, topic: str) -> list[Path]:
    pattern = re.compile(rf"{re.escape(topic)}-\d+(\.[0-9a-f]{{32}}-(delete|stray|future))?")
    return sorted(p for d in kafka.brokers[broker_id].log_dirs for p in d.iterdir() if pattern.fullmatch(p.name))


def cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def kafka_dump(kafka: KafkaCluster, path: Path) -> tuple[dict[int, Any], dict[int, Any]]:
    """Kafka's ``DumpLogSegments --cluster-metadata-decoder``: offset → payload JSON (data / control records)."""
    out = kafka.java(kafka.jars.dump_log, "--cluster-metadata-decoder", "--files", str(path)).stdout
    data: dict[int, Any] = {}
    control: dict[int, Any] = {}
    for line in out.splitlines():
        if not line.startswith("| offset: "):
            continue
        offset = int(line.split()[2])
        if " payload: " in line:
            data[offset] = json.loads(line.split(" payload: ", 1)[1])
        else:  # control record: "... headerKeys: [] LeaderChange: {...}"
            name, _, body = line.split("headerKeys: [] ", 1)[1].partition(": ")
            control[offset] = (name, json.loads(body) if body.startswith("{") else body)
    return data, control


# ------------------------------------------------------------------------------------------------ scenarios


def test_broker_down_during_delete_recreate_and_reassign(kafka: KafkaCluster) -> None:
    """KIP-516 stale state: broker 3 misses a delete+recreate, a plain delete and a reassignment away from it."""
    create(kafka, "t", {0: [1, 2, 3], 1: [3, 1, 2]})
    create(kafka, "gone", {0: [3, 1]})
    create(kafka, "moved", {0: [3, 1]})
    kafka.stop_broker(3)
    delete(kafka, "t", "gone")
    create(kafka, "t", {0: [1, 2], 1: [2, 1]})
    reassign(kafka, "moved", 0, [1, 2])
    wait_for("the reassignment of moved-0 to complete", lambda: not ongoing(kafka))
    image = kafka.replayed_image(until=lambda i: "gone" not in i.topics.by_name and replicas(i, "moved", 0) == {1, 2}
                     and replicas(i, "t", 0) == {1, 2} and replicas(i, "t", 1) == {1, 2})

    seen = classify_broker(kafka, 3, image=image)
    assert seen[("t", 0, "live")] == [C.RECREATED_TOPIC]
    assert seen[("t", 1, "live")] == [C.RECREATED_TOPIC]
    assert seen[("gone", 0, "live")] == [C.DELETED_TOPIC]
    assert seen[("moved", 0, "live")] == [C.NOT_A_REPLICA]
    # the same topics on the brokers that were up are live replicas (the new t) and nothing else
    on_1 = classify_broker(kafka, 1, image=image)
    assert on_1[("t", 0, "live")] == [C.OK] and on_1[("moved", 0, "live")] == [C.OK]
    assert ("gone", 0, "live") not in on_1

    kafka.start_broker(3)
    names = ("t-0", "t-1", "gone-0", "moved-0")
    wait_for("Kafka to rename broker 3's stale dirs to -stray",
             lambda: sorted(p.name.split(".")[0] for t in ("t", "gone", "moved") for p in dirs_of(kafka, 3, t)
                            if p.name.endswith("-stray")) == sorted(names))
    seen = classify_broker(kafka, 3)
    for name in names:
        topic, _, p = name.rpartition("-")
        assert seen[(topic, int(p), "stray")] == [C.STRAY], (name, seen)
        assert (topic, int(p), "live") not in seen
    assert all(C.is_plannable(c, False) for k, v in seen.items() if k[2] == "stray" for c in v)


def test_inflight_reassignment_is_never_garbage_then_delete_dir_is_pending(kafka: KafkaCluster) -> None:
    """A replica being moved away from broker 3 while the target broker is down stays assigned (never garbage);
    once the move completes, Kafka renames it ``-delete``: pending, then stuck when made old."""
    kafka.stop_broker(2)
    create(kafka, "inflight", {0: [1, 3]})
    reassign(kafka, "inflight", 0, [1, 2])
    moving = ongoing(kafka)
    assert TopicPartition("inflight", 0) in moving, moving

    image = kafka.replayed_image(until=lambda i: replicas(i, "inflight", 0) == {1, 2, 3})
    part = image.topics.by_name["inflight"].partitions[0]
    assert set(part.adding_replicas) == {2} and set(part.removing_replicas) == {3}
    facts, _ = crawl(kafka, 3)
    (f,) = [f for f in facts if f.topic == "inflight"]
    cls, _ = classify(f, image, copies=live_copies(facts), config=DetectConfig(), now=datetime.now(timezone.utc))
    assert cls == C.OK and cls not in C.GARBAGE_CLASSES
    assert assigned_here(f, image) is not None

    kafka.start_broker(2)
    wait_for("the reassignment of inflight-0 to complete", lambda: not ongoing(kafka))
    (deleted,) = wait_for("broker 3 to rename inflight-0 to -delete",
                          lambda: [p for p in dirs_of(kafka, 3, "inflight") if p.name.endswith("-delete")] or None)
    assert not [p for p in dirs_of(kafka, 3, "inflight") if not p.name.endswith("-delete")]
    assert classify_broker(kafka, 3)[("inflight", 0, "delete")] == [C.PENDING_DELETE]
    old = time.time() - 2 * 3600 - DELETE_DELAY_MS / 1000
    os.utime(deleted, (old, old))
    assert classify_broker(kafka, 3)[("inflight", 0, "delete")] == [C.STUCK_DELETE]


def test_metadata_decoding_agrees_with_kafkas_dump_log(kafka: KafkaCluster) -> None:
    """Every record of the controller's metadata log, as ``logdir-gc metadata show --records`` decodes it, equals
    Kafka's ``DumpLogSegments --cluster-metadata-decoder`` (data records by payload, control records by JSON)."""
    files = sorted(p for p in kafka.metadata_dir.iterdir() if p.suffix in (".log", ".checkpoint"))
    assert files
    compared = 0
    for path in files:
        theirs, their_control = kafka_dump(kafka, path)
        code, out, err = cli("metadata", "show", str(path), "--records")
        assert code == 0, err
        ours: dict[int, Any] = {}
        our_control: dict[int, Any] = {}
        for line in out.splitlines():
            rec = json.loads(line)
            if rec["isControl"]:
                our_control[rec["offset"]] = rec["payload"]["data"]
            else:
                ours[rec["offset"]] = rec["payload"]
        # the active segment grows between the two reads: compare up to the last offset both have seen
        last = min(max([*theirs, *their_control], default=-1), max([*ours, *our_control], default=-1))
        theirs = {o: v for o, v in theirs.items() if o <= last}
        ours_cut = {o: v for o, v in ours.items() if o <= last}
        assert ours_cut == theirs, path.name
        assert {o: v[1] for o, v in their_control.items() if o <= last and isinstance(v[1], dict)} == \
            {o: v for o, v in our_control.items() if o <= last and o in their_control
             and isinstance(their_control[o][1], dict)}
        assert {o for o in their_control if o <= last} == {o for o in our_control if o <= last}
        compared += len(theirs)
    assert compared > 50
    types = {v["type"] for p in files for v in kafka_dump(kafka, p)[0].values()}
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REMOVE_TOPIC_RECORD",
            "REGISTER_BROKER_RECORD"} <= types


def test_admin_view_equals_the_replayed_image(kafka: KafkaCluster) -> None:
    """Topic ids, partitions and replica lists read over the admin API equal the replayed controller image."""
    def admin_view() -> dict[str, tuple[str, dict[int, tuple[int, ...]]]]:
        admin = kafka.admin()
        try:
            return {t["name"]: (str(Uuid.from_bytes(uuid.UUID(t["topic_id"]).bytes)),
                                {p["partition_index"]: tuple(p["replica_nodes"]) for p in t["partitions"]})
                    for t in admin.describe_topics()}
        finally:
            admin.close()

    def replayed() -> dict[str, tuple[str, dict[int, tuple[int, ...]]]]:
        image = kafka.replayed_image()
        return {name: (str(t.topic_id), {p: tuple(part.replicas) for p, part in t.partitions.items()})
                for name, t in image.topics.by_name.items()}

    assert admin_view()
    wait_for("the admin view to equal the replayed image", lambda: admin_view() == replayed(), timeout=90)
    image = kafka.replayed_image()
    assert set(image.brokers) == {1, 2, 3}
    assert all(len(b.log_dirs) == 2 for b in image.brokers.values())


def _plan_for(kafka: KafkaCluster, broker_id: int, *, image: MetadataImage | None = None,
              cluster_id: str | None = None) -> GcPlan:
    """A GC plan of every plannable dir on the broker, built from the crawl rows and the classifier's verdicts
    against ``image`` (default: the replayed metadata log)."""
    facts, rows = crawl(kafka, broker_id)
    image = image or kafka.replayed_image()
    copies = live_copies(facts)
    now = datetime.now(timezone.utc)
    items = []
    for f, row in zip(facts, rows, strict=True):
        cls, why = classify(f, image, copies=copies, config=DetectConfig(), now=now)
        if not C.is_plannable(cls, C.is_protected(f.topic, None)):
            continue
        items.append(PlanItem.model_validate({
            "item_id": f"b{broker_id}-{f.dir_name}", "broker_id": broker_id, "log_dir": f.log_dir,
            "dir_name": f.dir_name, "topic": f.topic, "partition": f.partition, "topic_id": f.topic_id,
            "class": cls, "bytes": row["bytes"], "fingerprint": row["fingerprint"], "directory_id": f.directory_id,
            "reason": why,
        }))
    return GcPlan(plan_id=f"it-{uuid.uuid4().hex[:8]}", cluster="it", cluster_id=cluster_id or kafka.cluster_id,
                  created_at=now - timedelta(minutes=1), created_by="detector", run_id="it",
                  metadata_offset=image.provenance.last_offset, items=tuple(items)).with_hash()


def test_end_to_end_apply_interlock_and_clean_restart(kafka: KafkaCluster, tmp_path: Path) -> None:
    """crawl → classify → plan → register/approve → apply refused while broker 3 runs (Kafka's ``.lock``) →
    applied once it stops → broker 3 restarts cleanly, garbage gone, live partitions intact, bytes reclaimed."""
    create(kafka, "e2e_live", {0: [3, 1, 2]}, values=50)
    create(kafka, "e2e_gone", {0: [3, 1]}, values=50)
    kafka.stop_broker(3)
    delete(kafka, "e2e_gone")
    kafka.start_broker(3)
    wait_for("e2e_gone-0 to become -stray on broker 3",
             lambda: [p for p in dirs_of(kafka, 3, "e2e_gone") if p.name.endswith("-stray")])
    live_before = {p.name: sorted(f.name for f in p.iterdir()) for t in ("e2e_live", "t", "moved")
                   for p in dirs_of(kafka, 3, t) if "." not in p.name}

    plan = _plan_for(kafka, 3)
    assert any(i.topic == "e2e_gone" and i.class_ == C.STRAY for i in plan.items), plan.items
    assert not any(i.dir_name in live_before for i in plan.items)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json())
    node = kafka.brokers[3]
    keys = Keyring(tmp_path / "trust")  # the reviewer signs; the broker host trusts that key
    for name in ("reviewer", "planner"):  # the planner signs the proposal (the plan's author), the reviewer approves
        keys.key(name)
        keys.allow(name, name)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "cluster": "it", "warehouse": str(tmp_path / "warehouse"),
        "brokers": [{"broker_id": 3, "log_dirs": [str(d) for d in node.log_dirs]}],
        "metadata": {"kind": "metadata_log", "source": str(kafka.metadata_dir)},
        "executor": {"state_dir": str(tmp_path / "state"), "allowed_signers": str(keys.allowed_signers)},
    }))
    c = ("--config", str(config))
    assert cli("plans", "register", str(plan_file), "--by", "planner", "--key", str(keys.key("planner")), *c)[0] == 0
    code, _, err = cli("plans", "approve", plan.plan_id, "--by", "reviewer", "--key", str(keys.key("reviewer")), *c)
    assert code == 0, err

    code, _, err = cli("apply", plan.plan_id, "--broker", "3", "--execute", *c)
    assert code == 7, err  # exit_codes.BUSY: Kafka holds the log dirs' .lock
    assert all((Path(i.log_dir) / i.dir_name).exists() for i in plan.items)

    kafka.stop_broker(3)
    code, out, err = cli("apply", plan.plan_id, "--broker", "3", "--execute", *c, "--json")
    assert code == 6, err  # exit_codes.PRECONDITION: the deletion is minutes old, the host's grace floor is 24 h
    assert {i["rule"] for i in json.loads(out)["items"]} == {"min_grace"}
    assert all((Path(i.log_dir) / i.dir_name).exists() for i in plan.items)
    # Two days later (the API takes the clock; the CLI never does): the executor's own re-read of the controller's
    # log dates the deletion, the grace has passed.
    app = load_config(config)
    later = datetime.now(timezone.utc) + timedelta(days=2)
    report = apply_plan(app, open_store("rust", str(tmp_path / "warehouse")), plan.plan_id, 3, execute=True,
                        now=later)
    assert report.status == "applied", report
    assert not any((Path(i.log_dir) / i.dir_name).exists() for i in plan.items)

    kafka.start_broker(3)
    admin = kafka.admin()
    try:
        wait_for("broker 3 back in e2e_live's ISR",
                 lambda: 3 in (_described(admin, "e2e_live") or {"partitions": [{"isr_nodes": []}]})
                 ["partitions"][0]["isr_nodes"])
        (b3,) = admin.describe_log_dirs(brokers=[3])
        listed = {(t["name"], p["partition_index"]) for d in b3["log_dirs"] for t in d["topics"]
                  for p in t["partitions"]}
    finally:
        admin.close()
    assert ("e2e_live", 0) in listed and not any(t == "e2e_gone" for t, _ in listed)
    assert not any((Path(i.log_dir) / i.dir_name).exists() for i in plan.items)
    live_after = {p.name: sorted(f.name for f in p.iterdir()) for t in ("e2e_live", "t", "moved")
                  for p in dirs_of(kafka, 3, t) if "." not in p.name}
    assert set(live_after) == set(live_before)
    kafka.produce("e2e_live", [b"after"], partition=0)
    values = kafka.consume("e2e_live", [0], expected=51)
    assert len(values) == 51 and values[-1] == b"after"

    purged = purge(app, 3, execute=True, now=later + timedelta(days=8))
    assert purged.expected_bytes == plan.total_bytes > 0 and not purged.failed
