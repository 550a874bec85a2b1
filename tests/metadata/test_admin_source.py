"""The admin-API answers → image mapping, on kafka-python's own response objects (no broker runs here).

Topic listings are real ``MetadataResponse`` objects encoded to wire bytes and decoded back by kafka-python, then
``to_dict()``-ed as ``KafkaAdminClient.describe_topics()`` does; the cluster and config answers are dicts of the
shape ``describe_cluster()`` / ``describe_configs()`` return. The integration test against a real cluster is
``tests/kafka_cluster/test_admin_source.py``.
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from typing import Any

import pytest

pytest.importorskip("kafka")

from kafka.protocol.metadata import MetadataResponse

from pipelines.errors import ConfigError
from pipelines.kafka.uuid import MIGRATING, Uuid
from pipelines.metadata import parse_topics_describe
from pipelines.metadata.admin_source import image_from_admin, image_from_admin_responses

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition
SOURCE = "admin:127.0.0.1:9092"


def listing(topics: list[tuple[str, uuid.UUID | None, bool, list[tuple[int, int, list[int], list[int], int]]]],
            *, topic_error: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """``describe_topics()`` output for (name, id, internal, [(partition, leader, replicas, isr, error)])."""
    response = MetadataResponse(
        version=12, throttle_time_ms=0, cluster_id="c", controller_id=1,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092, rack=None)],
        topics=[
            _Topic(error_code=(topic_error or {}).get(name, 0), name=name,
                   topic_id=tid or uuid.UUID(int=0), is_internal=internal,
                   partitions=[_Partition(error_code=err, partition_index=p, leader_id=leader, leader_epoch=7,
                                          replica_nodes=replicas, isr_nodes=isr, offline_replicas=[])
                               for p, leader, replicas, isr, err in parts])
            for name, tid, internal, parts in topics
        ],
    )
    decoded = MetadataResponse.decode(response.encode(version=12), version=12)
    return decoded.to_dict()["topics"]


def cluster(*brokers: tuple[int, bool]) -> dict[str, Any]:
    return {"cluster_id": "c", "controller_id": brokers[0][0], "authorized_operations": None,
            "brokers": [{"broker_id": b, "host": "127.0.0.1", "port": 9000 + b, "rack": None, "is_fenced": fenced}
                        for b, fenced in brokers]}


def delay_configs(**values: tuple[str, str]) -> dict[str, Any]:
    """``describe_configs(..., config_filter="all")`` for log.segment.delete.delay.ms: broker → (value, source)."""
    return {"broker": {b[1:]: {"log.segment.delete.delay.ms": {"value": v, "config_source": src, "read_only": False}}
                       for b, (v, src) in values.items()}}


T1, T2 = uuid.uuid4(), uuid.uuid4()
TOPICS = [
    ("orders", T1, False, [(0, 1, [1, 2], [1, 2], 0), (1, -1, [2, 3], [], 5)]),
    ("__consumer_offsets", T2, True, [(0, 3, [3], [3], 0)]),
]


def test_listing_becomes_a_complete_image_through_replay() -> None:
    configs = delay_configs(b1=("60000", "DEFAULT_CONFIG"), b2=("600000", "STATIC_BROKER_CONFIG"))
    image = image_from_admin_responses(SOURCE, listing(TOPICS), cluster((1, False), (2, False), (3, True)), configs)
    assert image.complete and image.incomplete_reasons == () and image.replay_errors == ()
    assert image.provenance.source == SOURCE
    orders = image.topics.by_id[Uuid.from_bytes(T1.bytes)]
    assert orders.name == "orders" and image.topics.by_name["orders"] is orders
    p0, p1 = orders.partitions[0], orders.partitions[1]
    assert (p0.replicas, p0.isr, p0.leader, p0.leader_epoch) == ((1, 2), (1, 2), 1, 7)
    assert (p1.replicas, p1.isr, p1.leader) == ((2, 3), (), -1)  # LEADER_NOT_AVAILABLE still lists the replicas
    assert p0.directories == (MIGRATING, MIGRATING) and p0.partition_epoch == 0
    assert image.topics.by_name["__consumer_offsets"].topic_id == Uuid.from_bytes(T2.bytes)
    assert {b: image.brokers[b].fenced for b in image.brokers} == {1: False, 2: False, 3: True}
    assert image.broker_config(2, "log.segment.delete.delay.ms") == "600000"
    assert image.broker_config(1, "log.segment.delete.delay.ms") == "60000"
    assert image.broker_config(3, "log.segment.delete.delay.ms") is None


def test_same_topics_as_the_equivalent_topics_describe_output() -> None:
    """An independent path to the same state: the text ``kafka-topics --describe`` prints for that cluster."""
    lines = []
    for name, tid, _internal, parts in TOPICS:
        lines.append(f"Topic: {name}\tTopicId: {Uuid.from_bytes(tid.bytes)}\tPartitionCount: {len(parts)}\t"
                     f"ReplicationFactor: {len(parts[0][2])}\tConfigs: ")
        for p, leader, replicas, isr, _err in parts:
            lines.append(f"\tTopic: {name}\tPartition: {p}\tLeader: {leader if leader >= 0 else 'none'}\t"
                         f"Replicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}")
    described, problems = parse_topics_describe("\n".join(lines), complete=True)
    assert problems == ()
    admin = image_from_admin_responses(SOURCE, listing(TOPICS), cluster((1, False)))

    def shape(image: Any) -> dict[Any, Any]:
        return {(t.topic_id, t.name): {n: (p.replicas, p.isr, p.leader) for n, p in t.partitions.items()}
                for t in image.topics.by_id.values()}

    assert shape(admin) == shape(described)


@pytest.mark.parametrize(("topics", "errors", "failures", "expected"), [
    pytest.param([("a", T1, False, [(0, 1, [1], [1], 0)])], {"a": 29}, (), "topic 'a': error code 29",
                 id="topic-error"),
    pytest.param([("a", None, False, [(0, 1, [1], [1], 0)])], {}, (), "no topic id", id="no-topic-id"),
    pytest.param([("a", T1, False, [(0, 1, [1], [1], 0), (2, 1, [1], [1], 0)])], {}, (), "not 0..1",
                 id="partition-gap"),
    pytest.param([("a", T1, False, [(0, 1, [1], [1], 3)])], {}, (), "partition 0: error code 3",
                 id="partition-error"),
    pytest.param([("a", T1, False, [(0, 1, [1], [1], 0)])], {}, ("describe_configs failed: X",),
                 "describe_configs failed", id="call-failed"),
])
def test_anything_short_of_a_full_listing_is_incomplete(topics: list[Any], errors: dict[str, int],
                                                        failures: tuple[str, ...], expected: str) -> None:
    image = image_from_admin_responses(SOURCE, listing(topics, topic_error=errors), cluster((1, False)),
                                       None, failures)
    assert not image.complete
    assert any(expected in r for r in image.incomplete_reasons), image.incomplete_reasons


def test_no_listing_at_all_is_incomplete_and_empty() -> None:
    image = image_from_admin_responses(SOURCE, None, None, None, ("connecting failed: timeout",))
    assert not image.complete and len(image.topics) == 0
    assert image.incomplete_reasons[0] == "connecting failed: timeout"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_cluster_gives_an_incomplete_view_not_a_crash() -> None:
    image = image_from_admin(f"127.0.0.1:{_closed_port()}", bootstrap_timeout_ms=500, request_timeout_ms=500)
    assert not image.complete and len(image.topics) == 0
    assert any(r.startswith("connecting failed") for r in image.incomplete_reasons)


def test_bad_client_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="admin client options"):
        image_from_admin(f"127.0.0.1:{_closed_port()}", no_such_option=1)




def _first_bytes_server() -> tuple[int, list[bytes]]:
    """A TCP port that records the first bytes each client sends, then hangs up."""
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            conn, _ = srv.accept()
            conn.settimeout(2)
            with contextlib.suppress(OSError):
                seen.append(conn.recv(5))
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(srv.getsockname()[1]), seen


def test_the_admin_source_connects_with_metadata_kafka_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """``metadata.kafka_client`` reaches the admin client: TLS is spoken (the first byte on the wire is a TLS
    handshake record, 0x16, not a Kafka request), and a SASL secret is read from the environment when the source
    loads (unset: one config line naming the key) and never shows in the view."""
    from pipelines.config.models import MetadataConfig
    from pipelines.metadata.source import open_source

    port, seen = _first_bytes_server()
    tls = {"security_protocol": "SSL", "ssl_check_hostname": False, "request_timeout_ms": 1000}
    view = open_source(MetadataConfig(kind="admin", bootstrap_servers=f"127.0.0.1:{port}", kafka_client=tls)).load()
    assert not view.image.complete and seen and all(first[:1] == b"\x16" for first in seen), seen

    servers = f"127.0.0.1:{_closed_port()}"
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "gc",
            "sasl_password_env": "KLGC_TEST_ADMIN_PASSWORD", "request_timeout_ms": 1000}
    monkeypatch.delenv("KLGC_TEST_ADMIN_PASSWORD", raising=False)
    source = open_source(MetadataConfig(kind="admin", bootstrap_servers=servers, kafka_client=sasl))
    with pytest.raises(ConfigError, match=r"metadata\.kafka_client\.sasl_password_env: .*KLGC_TEST_ADMIN_PASSWORD"):
        source.load()
    monkeypatch.setenv("KLGC_TEST_ADMIN_PASSWORD", "s3cret")
    view = source.load()  # the closed port: an incomplete view, as without kafka_client
    assert not view.image.complete and "s3cret" not in repr(view)
    with pytest.raises(ValueError, match=r"needs metadata\.kind admin"):
        MetadataConfig(kind="metadata_log", source="/x", kafka_client=sasl)
