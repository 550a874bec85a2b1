"""The ZooKeeper source against one real ZooKeeper server (no Kafka): a Kafka tree written by a separate client
with ACLs that let the project's user only READ, read live, through SASL and digest authentication, through
``logdir-gc metadata dump-zk``, and by the executor, whose re-check refuses when ZooKeeper is unreachable."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from jars import zookeeper_or_skip
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl
from zookeeper_server import SASL_PASSWORD, SASL_USER, ZooKeeperServer

from pipelines.config.models import MetadataConfig
from pipelines.errors import PreconditionFailed, SourceUnavailable
from pipelines.execute.controller_check import load_controller_check
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.source import removed_topic_events
from pipelines.metadata.zookeeper_source import ZooKeeperSource, image_from_znodes
from pipelines.metadata.zookeeper_znodes import load_dump, read_live
from tests.metadata.zk_tree import ZkTree

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CHROOT = "/kafka"
ORDERS, GONE = Uuid(0x31, 0x41), Uuid(0x32, 0x42)
WRITER, READER_PW = ("writer", "writer-secret"), "digest-secret"


def tree() -> ZkTree:
    return (ZkTree().broker(1).broker(2)
            .topic("orders", ORDERS, {0: [1, 2], 1: [2, 3]})
            .topic("gone", GONE, {0: [2, 3]}).delete_queued("gone", 0)
            .topic("legacy", None, {0: [1]})
            .config("brokers", "<default>", {"log.segment.delete.delay.ms": "120000"}))


def _acls() -> list:
    return [make_digest_acl(*WRITER, all=True), make_digest_acl("reader", READER_PW, read=True),
            make_acl("sasl", SASL_USER, read=True)]


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), zookeeper_or_skip())
    with server.running_server():
        writer = KazooClient(hosts=server.connect, auth_data=[("digest", ":".join(WRITER))], default_acl=_acls())
        writer.start(timeout=30)
        try:
            tree().write(writer, CHROOT)
        finally:
            writer.stop()
            writer.close()
        yield server


@pytest.fixture()
def writer(zk: ZooKeeperServer) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk.connect + CHROOT, auth_data=[("digest", ":".join(WRITER))], default_acl=_acls())
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


def config(zk: ZooKeeperServer, *, auth: dict | None = None, chroot: str = CHROOT, **extra) -> MetadataConfig:
    auth = auth or {"mechanism": "digest", "username": "reader", "password_env": "KLGC_TEST_ZK_PW"}
    return MetadataConfig.model_validate({"kind": "zookeeper", "zookeeper_connect": zk.connect + chroot,
                                          "zookeeper_auth": auth, **extra})


@pytest.fixture(autouse=True)
def _passwords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KLGC_TEST_ZK_PW", READER_PW)
    monkeypatch.setenv("KLGC_TEST_SASL_PW", SASL_PASSWORD)


def _stats(writer: KazooClient) -> dict[str, tuple]:
    """Every znode under the chroot with the stat fields a write would change."""
    out: dict[str, tuple] = {}

    def walk(path: str) -> None:
        _, stat = writer.get(path)
        out[path] = (stat.mzxid, stat.pzxid, stat.version, stat.cversion, stat.aversion)
        for child in writer.get_children(path):
            walk(f"{path.rstrip('/')}/{child}")

    walk("/")
    return out


@pytest.mark.parametrize("mechanism", ["digest", "DIGEST-MD5"])
def test_a_read_only_user_reads_the_whole_image_and_changes_nothing(zk: ZooKeeperServer, writer: KazooClient,
                                                                    mechanism: str) -> None:
    """The project's user may only READ (ACLs); it gets the full image, and no znode's stat moved."""
    auth = ({"mechanism": "digest", "username": "reader", "password_env": "KLGC_TEST_ZK_PW"} if mechanism == "digest"
            else {"mechanism": "DIGEST-MD5", "username": SASL_USER, "password_env": "KLGC_TEST_SASL_PW"})
    before = _stats(writer)
    view = ZooKeeperSource(config(zk, auth=auth)).load()
    assert _stats(writer) == before
    image = view.image
    assert image.complete, image.incomplete_reasons
    assert image.topics.by_name["orders"].topic_id == ORDERS and set(image.topics_without_id) == {"legacy"}
    assert "gone" in image.topic_deletions and set(image.brokers) == {1, 2}
    assert image.broker_config(1, "log.segment.delete.delay.ms") == "120000"
    assert image.same_state(image_from_znodes(read_live(config(zk, auth=auth)))[0])


def test_wrong_credentials_or_no_server_are_one_line_errors(zk: ZooKeeperServer) -> None:
    bad = {"mechanism": "digest", "username": "reader", "password_env": "KLGC_TEST_SASL_PW"}  # the wrong password
    with pytest.raises(SourceUnavailable, match="NoAuth") as info:
        ZooKeeperSource(config(zk, auth=bad)).load()
    assert "\n" not in str(info.value)
    gone = MetadataConfig(kind="zookeeper", zookeeper_connect="127.0.0.1:1/kafka", zookeeper_timeout_ms=1500)
    with pytest.raises(SourceUnavailable, match=r"cannot reach ZooKeeper 127\.0\.0\.1:1/kafka"):
        ZooKeeperSource(gone).load()


def test_a_wrong_chroot_is_an_incomplete_image_never_an_empty_cluster(zk: ZooKeeperServer) -> None:
    image = ZooKeeperSource(config(zk, chroot="/not-kafka")).load().image
    assert not image.complete and any("check the chroot" in r for r in image.incomplete_reasons)


def test_deletion_queue_and_removal_seen_between_two_reads(zk: ZooKeeperServer, writer: KazooClient) -> None:
    """What Kafka's controller does when it finishes a deletion (znodes removed) is seen by the next read only:
    ``topic_removed`` carries that read's time."""
    writer.create("/brokers/topics/brief", json.dumps({"version": 3, "partitions": {"0": [1]},
                                                      "topic_id": str(Uuid(0x33, 0x43))}).encode())
    writer.create("/admin/delete_topics/brief")
    first = ZooKeeperSource(config(zk)).load()
    queued = [e for e in first.events if e.topic == "brief"]
    assert {e.event for e in queued} == {"topic_created", "topic_deletion_queued"}
    assert first.image.topic_deletions["brief"].queued_ms > 0
    writer.delete("/brokers/topics/brief")
    writer.delete("/admin/delete_topics/brief")
    second = ZooKeeperSource(config(zk)).load()
    history = [{"event": e.event, "topic_id": str(e.topic_id), "topic": e.topic} for e in first.events]
    (removed,) = removed_topic_events(history, second)
    assert removed.topic == "brief" and removed.timestamp_ms == second.removals_seen_at_ms
    assert removed.timestamp_ms >= first.removals_seen_at_ms


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli.main", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False, env=env)


def test_dump_zk_writes_what_the_live_source_reads(zk: ZooKeeperServer, tmp_path: Path) -> None:
    import os

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"cluster": "c", "warehouse": str(tmp_path / "w"), "metadata": {
        "kind": "zookeeper", "zookeeper_connect": zk.connect + CHROOT,
        "zookeeper_auth": {"mechanism": "digest", "username": "reader", "password_env": "KLGC_TEST_ZK_PW"}}}))
    out = tmp_path / "dump.json"
    proc = _cli("metadata", "dump-zk", "--config", str(cfg), "--out", str(out),
                env={**os.environ, "KLGC_TEST_ZK_PW": READER_PW})
    assert proc.returncode == 0, proc.stderr
    assert "1 without a topic id" in proc.stdout and "1 deletions queued" in proc.stdout
    from_dump = ZooKeeperSource(MetadataConfig(kind="zookeeper", source=str(out))).load()
    live = ZooKeeperSource(config(zk)).load()
    assert from_dump.image.same_state(live.image) and from_dump.events == live.events
    assert load_dump(str(out)).zookeeper_connect == zk.connect + CHROOT
    cfg.write_text(yaml.safe_dump({"cluster": "c", "warehouse": str(tmp_path / "w"), "metadata": {
        "kind": "zookeeper", "zookeeper_connect": "127.0.0.1:1", "zookeeper_timeout_ms": "1s"}}))
    proc = _cli("metadata", "dump-zk", "--config", str(cfg), "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1 and "cannot reach ZooKeeper" in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_executor_recheck_reads_live_zookeeper_and_refuses_when_it_cannot(zk: ZooKeeperServer) -> None:
    from datetime import datetime, timezone

    from pipelines.execute.observe import ObservedDir

    check = load_controller_check(config(zk))

    def seen(topic: str, topic_id: Uuid | None, partition: int = 0) -> ObservedDir:
        return ObservedDir(Path("/d") / f"{topic}-{partition}", f"{topic}-{partition}", "live", topic, partition,
                           None if topic_id is None else str(topic_id), (), "f", datetime.now(timezone.utc))

    assert "live replica" in (check.assigned(seen("orders", ORDERS), 1) or "")  # ZooKeeper assigns orders-0 to 1
    assert check.assigned(seen("orders", ORDERS, 1), 1) is None  # orders-1 lives on 2 and 3
    assert "without a topic id" in (check.assigned(seen("legacy", Uuid(0x99, 0x99)), 1) or "")
    unreachable = MetadataConfig(kind="zookeeper", zookeeper_connect="127.0.0.1:1", zookeeper_timeout_ms=1500)
    with pytest.raises(PreconditionFailed, match="cannot re-read controller metadata from ZooKeeper"):
        load_controller_check(unreachable)
