"""The ZooKeeper source on described trees (no server): image, events, completeness, the dump format, config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.config.load import config_from_dict
from pipelines.config.models import MetadataConfig, ZooKeeperAuthConfig, ZooKeeperTlsConfig
from pipelines.errors import ConfigError, DecodeError
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from pipelines.metadata.rows import file_delete_delay_ms, image_rows
from pipelines.metadata.source import ControllerView, open_source, removed_topic_events
from pipelines.metadata.zookeeper_source import ZooKeeperSource, image_from_znodes
from pipelines.metadata.zookeeper_znodes import ZnodeSnapshot, client_options, load_dump
from tests.metadata.zk_tree import T0, ZkTree

ORDERS, GONE, NEW = Uuid(0x11, 0x21), Uuid(0x12, 0x22), Uuid(0x13, 0x23)
HOUR = 3_600_000


def cluster() -> ZkTree:
    return (ZkTree().broker(1, rack="r1").broker(2).broker(3)
            .topic("orders", ORDERS, {0: [1, 2], 1: [2, 3]}, ctime=T0, mtime=T0 + HOUR)
            .topic("gone", GONE, {0: [2, 3]}, ctime=T0 + 2 * HOUR)
            .delete_queued("gone", ctime=T0 + 5 * HOUR)
            .topic("legacy", None, {0: [1, 3]})
            .config("brokers", "<default>", {"log.segment.delete.delay.ms": "120000"})
            .config("brokers", "2", {"log.segment.delete.delay.ms": "900000"})
            .config("topics", "orders", {"retention.ms": "1000"}))


def test_image_of_a_kafka_tree() -> None:
    image, events, notes = image_from_znodes(cluster().snapshot())
    assert image.complete, image.incomplete_reasons
    assert set(image.topics.by_name) == {"orders", "gone"} and image.topics.by_name["orders"].topic_id == ORDERS
    p1 = image.topics.by_name["orders"].partitions[1]
    assert (p1.replicas, p1.isr, p1.leader, p1.leader_epoch) == ((2, 3), (2, 3), 2, 2)
    assert set(image.brokers) == {1, 2, 3} and image.brokers[1].rack == "r1"
    assert image.brokers[1].epoch > 0  # the registration znode's czxid, Kafka's broker epoch in ZooKeeper mode
    assert file_delete_delay_ms(image, 2) == 900_000 and file_delete_delay_ms(image, 1) == 120_000
    assert image.configs.get(TOPIC_RESOURCE, "orders", "retention.ms") == "1000"
    assert image.configs.get(BROKER_RESOURCE, "", "log.segment.delete.delay.ms") == "120000"
    assert dict(image.topic_deletions) == {"gone": image.topic_deletions["gone"]}
    assert image.topic_deletions["gone"].queued_ms == T0 + 5 * HOUR
    assert set(image.topics_without_id) == {"legacy"}  # not in ``topics``: its dirs are unknown, the image complete
    assert image.topics_without_id["legacy"].partitions[0].replicas == (1, 3)
    assert any("legacy" in n for n in notes)
    assert image.provenance.source == "zookeeper:zk1:2181/kafka" and image.last_offset > 1000

    by = {(e.event, e.topic): e for e in events}
    assert by[(ev.TOPIC_CREATED, "orders")].timestamp_ms == T0
    assert by[(ev.REPLICAS_CHANGED, "orders")].timestamp_ms == T0 + HOUR  # the topic znode's mtime
    assert (ev.REPLICAS_CHANGED, "gone") not in by  # never rewritten
    assert by[(ev.TOPIC_DELETION_QUEUED, "gone")].timestamp_ms == T0 + 5 * HOUR
    assert by[(ev.TOPIC_DELETION_QUEUED, "gone")].topic_id == GONE
    assert not any(e.topic == "legacy" for e in events)  # no id, nothing to key an event by
    assert len({e.offset for e in events}) == len(events)  # zxids: distinct and stable keys

    rows = image_rows(image, run_id="r", cluster="c", source=image.provenance.source)
    topics = {r["topic"]: r for r in rows["controller_topics"]}
    assert topics["legacy"]["topic_id"] is None and topics["legacy"]["partition_count"] == 1
    assert topics["gone"]["deletion_queued_at"].timestamp() * 1000 == T0 + 5 * HOUR
    assert topics["orders"]["deletion_queued_at"] is None


def test_a_reassignment_not_yet_picked_up_counts_its_targets_as_assigned() -> None:
    tree = cluster().reassign({("orders", 0): [3, 2]})
    part = image_from_znodes(tree.snapshot())[0].topics.by_name["orders"].partitions[0]
    assert (part.replicas, part.adding_replicas, part.removing_replicas) == ((1, 2, 3), (3,), (1,))
    # the controller's own form (2.4+): adding/removing in the topic znode win
    tree = ZkTree().broker(1).topic("t", NEW, {0: [1, 2, 3]}, adding={0: [3]}, removing={0: [1]})
    part = image_from_znodes(tree.reassign({("t", 0): [2, 3]}).snapshot())[0].topics.by_name["t"].partitions[0]
    assert (part.replicas, part.adding_replicas, part.removing_replicas) == ((1, 2, 3), (3,), (1,))


@pytest.mark.parametrize(("tree", "reason"), [
    (ZkTree().raw("/other", b"{}"), "no /brokers/topics"),
    (ZkTree().broker(1).raw("/brokers/topics/bad", b"not json"), "topic bad"),
    (ZkTree().broker(1).raw("/brokers/topics/bad", b'{"partitions": {"0": [1, "x"]}}'), "topic bad"),
    (ZkTree().broker(1).raw("/brokers/topics/bad", b'{"partitions": {"0": [1]}, "topic_id": "nope"}'), "topic bad"),
    (ZkTree().broker(1).topic("a", NEW, {0: [1]}).topic("b", NEW, {0: [1]}), "share topic id"),
])
def test_what_makes_the_image_incomplete(tree: ZkTree, reason: str) -> None:
    """A wrong chroot or an unreadable topic znode must never read as "these topics were deleted"."""
    image, _, _ = image_from_znodes(tree.snapshot())
    assert not image.complete and any(reason in r for r in image.incomplete_reasons), image.incomplete_reasons


def test_dump_round_trip_and_source(tmp_path: Path) -> None:
    snap = cluster().raw("/brokers/ids/9", b"\xff\xfe binary").snapshot()
    path = tmp_path / "zk.json"
    path.write_text(snap.to_json())
    doc = json.loads(path.read_text())
    assert doc["format"] == "kafka-logdir-gc/zookeeper-dump" and doc["version"] == 1
    assert doc["znodes"]["/brokers/ids/9"]["data_base64"] and "children" in doc["znodes"]["/brokers/topics"]
    assert load_dump(str(path)) == snap
    view = open_source(MetadataConfig(kind="zookeeper", source=str(path))).load()
    assert isinstance(view, ControllerView) and view.image == image_from_znodes(snap)[0]
    assert view.removals_seen_at_ms == snap.taken_at_ms
    assert isinstance(open_source(MetadataConfig(kind="zookeeper", source=str(path))), ZooKeeperSource)


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not JSON"),
    ('{"format": "x"}', "not a ZooKeeper dump"),
    ('{"format": "kafka-logdir-gc/zookeeper-dump", "version": 9}', "dump version 9"),
    ('{"format": "kafka-logdir-gc/zookeeper-dump", "version": 1, "znodes": []}', "'znodes' is not an object"),
    ('{"format": "kafka-logdir-gc/zookeeper-dump", "version": 1, "znodes": {"/a": {"ctime": "x"}}}', "znode /a"),
])
def test_a_bad_dump_is_a_one_line_decode_error(text: str, message: str) -> None:
    with pytest.raises(DecodeError, match=message) as info:
        ZnodeSnapshot.from_json(text)
    assert "\n" not in str(info.value)


def test_removed_topics_are_stamped_by_the_run_that_first_sees_them_gone() -> None:
    first = image_from_znodes(cluster().snapshot())
    history = [{"event": e.event, "topic_id": str(e.topic_id), "topic": e.topic} for e in first[1]]
    later = ZkTree(taken_at_ms=T0 + 20 * 86_400_000).broker(1).topic("orders", ORDERS, {0: [1]})
    image, events, _ = image_from_znodes(later.snapshot())
    view = ControllerView(image, events, "zk", removals_seen_at_ms=later.taken_at_ms)
    (removed,) = removed_topic_events(history, view)
    assert (removed.event, removed.topic, removed.topic_id, removed.timestamp_ms) == (
        ev.TOPIC_REMOVED, "gone", GONE, T0 + 20 * 86_400_000)
    history.append({"event": ev.TOPIC_REMOVED, "topic_id": str(GONE), "topic": "gone"})
    assert removed_topic_events(history, view) == ()  # once only
    incomplete = ControllerView(image.with_completeness(False, ("x",)), events, "zk", removals_seen_at_ms=1)
    assert removed_topic_events(history[:-1], incomplete) == ()  # absence from an incomplete image proves nothing
    assert removed_topic_events(history[:-1], ControllerView(image, events, "log")) == ()  # a source with history


@pytest.mark.parametrize(("metadata", "message"), [
    ({"kind": "zookeeper"}, "exactly one of zookeeper_connect"),
    ({"kind": "zookeeper", "zookeeper_connect": "zk:2181", "source": "d.json"}, "exactly one of zookeeper_connect"),
    ({"kind": "zookeeper", "zookeeper_connect": "zk"}, "is not host:port"),
    ({"kind": "zookeeper", "zookeeper_connect": "zk:2181", "zookeeper_timeout_ms": "soon"}, "zookeeper_timeout_ms"),
    ({"kind": "zookeeper", "zookeeper_connect": "zk:2181", "zookeeper_auth": {"mechanism": "digest"}},
     "needs username and password_env"),
    ({"kind": "zookeeper", "zookeeper_connect": "zk:2181", "zookeeper_tls": {"ca": "x"}}, "ca"),
])
def test_bad_zookeeper_config_is_one_line(metadata: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        config_from_dict({"cluster": "c", "warehouse": "w", "metadata": metadata})
    assert "\n" not in str(info.value)


def test_client_options_map_tls_and_authentication(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZK_PW", "pw")
    monkeypatch.setenv("ZK_KEY_PW", "kpw")
    base = {"kind": "zookeeper", "zookeeper_connect": "zk1:2281,zk2:2281/kafka", "zookeeper_timeout_ms": "5s"}
    tls = ZooKeeperTlsConfig(ca_file="ca.pem", cert_file="c.pem", key_file="k.pem", key_password_env="ZK_KEY_PW")
    opts = client_options(MetadataConfig(**base, zookeeper_tls=tls,
                                         zookeeper_auth=ZooKeeperAuthConfig(mechanism="digest", username="u",
                                                                            password_env="ZK_PW")))
    assert opts["hosts"] == "zk1:2281,zk2:2281/kafka" and opts["timeout"] == 5.0 and opts["read_only"] is True
    assert (opts["use_ssl"], opts["ca"], opts["certfile"], opts["keyfile"], opts["keyfile_password"]) == (
        True, "ca.pem", "c.pem", "k.pem", "kpw")
    assert opts["verify_certs"] is True and opts["check_hostname"] is True
    assert opts["auth_data"] == [("digest", "u:pw")] and "sasl_options" not in opts
    sasl = client_options(MetadataConfig(**base, zookeeper_auth=ZooKeeperAuthConfig(
        mechanism="DIGEST-MD5", username="u", password_env="ZK_PW")))
    assert sasl["sasl_options"] == {"mechanism": "DIGEST-MD5", "username": "u", "password": "pw"}
    assert "use_ssl" not in sasl
    monkeypatch.delenv("ZK_PW")
    with pytest.raises(ConfigError, match="ZK_PW is not set"):
        client_options(MetadataConfig(**base, zookeeper_auth=ZooKeeperAuthConfig(
            mechanism="digest", username="u", password_env="ZK_PW")))
