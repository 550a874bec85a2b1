"""``metadata.kind: admin`` against a real KRaft cluster: the admin API's image equals the controller's log replayed.

One small cluster per Kafka version (module scope: 1 controller, 2 brokers with one log dir each). Topics are
created, one deleted and recreated under the same name, one deleted for good, and a consumer group commits so the
internal ``__consumer_offsets`` exists. The replay of ``__cluster_metadata-0`` is the oracle for topic ids, names,
partitions and replicas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cluster import KafkaCluster, wait_for
from jars import KAFKA_3, KAFKA_4, resolve_or_skip

from pipelines.config.models import MetadataConfig
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import MetadataImage, load_metadata
from pipelines.metadata.admin_source import image_from_admin
from pipelines.orchestrate.controller import load_controller_view

pytestmark = pytest.mark.integration

DELAY_KEY = "log.segment.delete.delay.ms"
Shape = dict[tuple[Uuid, str], dict[int, tuple[int, ...]]]


# the newest Kafka in ``make test``; the older line too in the second tier (CI budget)
@pytest.fixture(scope="module", params=[KAFKA_4, pytest.param(KAFKA_3, marks=pytest.mark.second_tier)],
                ids=lambda v: f"kafka-{v}")
def kafka(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    jars = resolve_or_skip(request.param)
    cluster = KafkaCluster(
        tmp_path_factory.mktemp(f"kraft-admin-{request.param}"), jars, brokers=2, dirs_per_broker=1,
        broker_config={"offsets.topic.num.partitions": "3"}, per_broker={2: {DELAY_KEY: "600000"}},
    )
    with cluster.running():
        yield cluster


def shape(image: MetadataImage) -> Shape:
    """(topic id, name) → partition → replicas."""
    return {(t.topic_id, t.name): {n: p.replicas for n, p in t.partitions.items()}
            for t in image.topics.by_id.values()}


def replayed_matching(kafka: KafkaCluster, expected: Shape) -> MetadataImage:
    """The controller's log replayed, once complete and showing the state the admin API already reports
    (the controller appends its records a moment after it answers)."""
    def check() -> MetadataImage | None:
        result = load_metadata(str(kafka.metadata_dir))
        ok = result.image.complete and not result.errors and shape(result.image) == expected
        return result.image if ok else None

    return wait_for("the replayed metadata log to show what the admin API reports", check, timeout=90)


def admin_showing(kafka: KafkaCluster, names: set[str], partitions: dict[str, int]) -> MetadataImage:
    """``image_from_admin`` once complete, naming exactly ``names`` with the given partition counts."""
    def check() -> MetadataImage | None:
        image = image_from_admin(kafka.bootstrap, request_timeout_ms=30000)
        got = {n: len(t.partitions) for n, t in image.topics.by_name.items()}
        ok = image.complete and set(got) == names and all(got[n] == c for n, c in partitions.items())
        return image if ok else None

    return wait_for(f"the admin API to list {sorted(names)}", check, timeout=120, interval=1.0)


def create(admin: Any, topic: str, assignment: dict[int, list[int]]) -> None:
    admin.create_topics({topic: {"assignments": assignment}})

    def led() -> bool:
        (t,) = admin.describe_topics([topic])
        return t["error_code"] == 0 and len(t["partitions"]) == len(assignment) and \
            all(p["leader_id"] >= 0 for p in t["partitions"])

    wait_for(f"topic {topic} with leaders", led)


def delete(admin: Any, *topics: str) -> None:
    admin.delete_topics(list(topics))
    wait_for(f"deletion of {topics}", lambda: not set(topics) & set(admin.list_topics()))


def commit_offsets(kafka: KafkaCluster, topic: str) -> None:
    """A consumer group commit: the brokers create the internal ``__consumer_offsets``."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id="it-admin", enable_auto_commit=False,
                             request_timeout_ms=60000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        wait_for("an offset commit", lambda: consumer.commit({tp: OffsetAndMetadata(0, "", -1)}) or True,
                 timeout=120, interval=1.0)
    finally:
        consumer.close()


def test_admin_image_equals_the_replayed_log(kafka: KafkaCluster) -> None:
    admin = kafka.admin()
    try:
        create(admin, "kept", {0: [1, 2], 1: [2, 1], 2: [1, 2]})
        create(admin, "again", {0: [1, 2]})
        create(admin, "gone", {0: [1]})
        before = admin_showing(kafka, {"kept", "again", "gone"}, {"again": 1})
        old_again = before.topics.by_name["again"].topic_id
        gone_id = before.topics.by_name["gone"].topic_id
        delete(admin, "again", "gone")
        create(admin, "again", {0: [2], 1: [1]})
    finally:
        admin.close()
    commit_offsets(kafka, "kept")

    image = admin_showing(kafka, {"kept", "again", "__consumer_offsets"}, {"again": 2, "__consumer_offsets": 3})
    replayed = replayed_matching(kafka, shape(image))

    assert shape(image) == shape(replayed)  # ids, names, partitions, replicas (what the wait waited for)
    assert image.provenance.source == f"admin:{kafka.bootstrap}"
    new_again = image.topics.by_name["again"].topic_id
    assert new_again != old_again and old_again not in image.topics.by_id and gone_id not in image.topics.by_id
    assert {n: p.replicas for n, p in image.topics.by_name["again"].partitions.items()} == {0: (2,), 1: (1,)}
    assert set(image.brokers) == set(replayed.brokers) == {1, 2}
    assert not any(b.fenced for b in image.brokers.values())
    # a static broker setting is invisible to the log but the admin API reports the effective value
    assert image.broker_config(2, DELAY_KEY) == "600000" and replayed.broker_config(2, DELAY_KEY) is None
    assert image.broker_config(1, DELAY_KEY) == "60000"


def test_controller_view_of_kind_admin(kafka: KafkaCluster) -> None:
    admin = kafka.admin()
    try:
        create(admin, "viewed", {0: [2, 1]})
    finally:
        admin.close()
    config = MetadataConfig(kind="admin", bootstrap_servers=kafka.bootstrap)
    view = wait_for("a complete admin controller view listing 'viewed'",
                    lambda: (v := load_controller_view(config)).image.complete and "viewed" in v.image.topics.by_name
                    and v, timeout=120, interval=1.0)
    assert view.events == () and view.source == f"admin:{kafka.bootstrap}"
    assert any("no metadata events" in n for n in view.notes)
    replayed = replayed_matching(kafka, shape(view.image))
    assert shape(view.image) == shape(replayed) and "viewed" in view.image.topics.by_name
