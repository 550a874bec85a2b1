"""kafka-topics.sh --describe output → MetadataImage."""

from __future__ import annotations

from pipelines.kafka.uuid import MIGRATING, Uuid
from pipelines.metadata.topics_describe import parse_topics_describe

TID = Uuid(0x1234, 0x5678)
TEXT = (
    f"Topic: orders\tTopicId: {TID}\tPartitionCount: 2\tReplicationFactor: 2\t"
    "Configs: retention.ms=1000,cleanup.policy=delete\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tElr: \tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3\tIsr: \tElr: 3\tLastKnownElr: 2\n"
)


def test_parse_describe() -> None:
    image, problems = parse_topics_describe(TEXT, complete=True)
    assert problems == () and image.complete and image.provenance.source == "topics_describe"
    topic = image.topics.by_name["orders"]
    assert topic.topic_id == TID
    p0, p1 = topic.partitions[0], topic.partitions[1]
    assert (p0.replicas, p0.isr, p0.leader, p0.directories) == ((1, 2), (1, 2), 1, (MIGRATING, MIGRATING))
    assert (p1.leader, p1.isr, p1.elr, p1.last_known_elr) == (-1, (), (3,), (2,))
    assert image.topic_config("orders", "retention.ms") == "1000"


def test_incomplete_unless_caller_vouches_and_bad_lines_reported() -> None:
    image, _ = parse_topics_describe(TEXT)
    assert not image.complete and image.incomplete_reasons
    image, problems = parse_topics_describe(TEXT + "garbage line\n\tTopic: x\tPartition: 0\tLeader: 1\n",
                                            complete=True)
    assert not image.complete and len(problems) == 2
