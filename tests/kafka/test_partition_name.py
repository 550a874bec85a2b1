"""Partition directory names, parsed with Kafka's LocalLog.parseTopicPartitionName rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.kafka.partition_name import (
    MAX_DIR_NAME_LENGTH,
    delete_dir_name,
    future_dir_name,
    is_special_dir,
    live_dir_name,
    parse_partition_dir_name,
    stray_dir_name,
    would_block_startup,
)

UID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("name", "kind", "topic", "partition", "unique_id"),
    [
        ("orders-3", "live", "orders", 3, None),
        ("my-topic-with-dashes-12", "live", "my-topic-with-dashes", 12, None),
        ("a.b.c-0", "live", "a.b.c", 0, None),
        ("__consumer_offsets-49", "live", "__consumer_offsets", 49, None),
        (f"orders-3.{UID}-delete", "delete", "orders", 3, UID),
        (f"orders-3.{UID}-future", "future", "orders", 3, UID),
        (f"orders-3.{UID}-stray", "stray", "orders", 3, UID),
        (f"my.dotted-topic-7.{UID}-delete", "delete", "my.dotted-topic", 7, UID),
        ("__cluster_metadata-0", "metadata", "__cluster_metadata", 0, None),
        ("@metadata-0", "metadata", "@metadata", 0, None),
        (f"__cluster_metadata-0.{UID}-delete", "metadata", "__cluster_metadata", 0, UID),
        # Java Integer.parseInt accepts an explicit '+' sign and leading zeros
        ("orders-+3", "live", "orders", 3, None),
        ("orders-007", "live", "orders", 7, None),
        ("orders--1", "live", "orders-", 1, None),  # split at the LAST '-'
        ("orders-2147483647", "live", "orders", 2**31 - 1, None),
        ("x-\u0663", "live", "x", 3, None),  # Character.digit accepts any Unicode decimal digit
        ("t-1.not-hex-delete", "delete", "t", 1, "not-hex"),  # any \S+ after the LAST '.' is a unique id
    ],
)
def test_parse_accepts(name: str, kind: str, topic: str, partition: int, unique_id: str | None) -> None:
    parsed = parse_partition_dir_name(name)
    assert (parsed.kind, parsed.topic, parsed.partition, parsed.unique_id) == (kind, topic, partition, unique_id)
    assert parsed.reason is None


@pytest.mark.parametrize(
    "name",
    [
        "",
        "lost+found",
        ".snapshot",
        "data",
        "foo-bar",
        "orders-",
        "-3",
        "orders-2147483648",  # overflows a Java int
        "orders--2147483649",
        "orders-1_0",  # Python int() would accept this
        "orders- 1",
        "orders-1 ",
        "orders-+",
        "orders-0x1",
        "orders-3-delete",  # suffix without .uniqueId
        f"orders-3.{UID}-delete.bak",
        "orders-3.-delete",  # empty unique id
        f"orders 1-3.{UID}-delete",  # \S+ excludes blanks
        f"orders-3.{UID}\n-delete",
        f"-3.{UID}-future",
        "x-\U0001d7d9",  # a non-BMP digit is two UTF-16 units for Java: not a digit
        "t-1.not.hex-delete",  # cut at the LAST '.': "t-1.not" -> partition "1.not"
        "remote-log-index-cache",  # unparseable, but skipped by Kafka (see below)
    ],
)
def test_parse_rejects(name: str) -> None:
    parsed = parse_partition_dir_name(name)
    assert parsed.kind == "unparseable"
    assert parsed.topic is None and parsed.partition is None
    assert parsed.reason


def test_startup_blocking() -> None:
    assert would_block_startup("lost+found")
    assert would_block_startup(".snapshot")
    assert would_block_startup("foo-bar")
    assert not would_block_startup("remote-log-index-cache")
    assert is_special_dir("remote-log-index-cache")
    assert not would_block_startup("orders-0")
    assert not would_block_startup(".hidden-0")  # hidden but parseable: Kafka loads it as topic ".hidden"


def test_writers_round_trip() -> None:
    assert live_dir_name("orders", 3) == "orders-3"
    for writer, kind in ((delete_dir_name, "delete"), (future_dir_name, "future"), (stray_dir_name, "stray")):
        name = writer("orders", 3, UID)
        assert name == f"orders-3.{UID}-{kind}"
        parsed = parse_partition_dir_name(name)
        assert (parsed.kind, parsed.topic, parsed.partition, parsed.unique_id) == (kind, "orders", 3, UID)
        assert not parsed.topic_may_be_truncated


def test_default_unique_id_is_32_hex() -> None:
    parsed = parse_partition_dir_name(delete_dir_name("t", 0))
    assert parsed.unique_id is not None and len(parsed.unique_id) == 32
    assert int(parsed.unique_id, 16) >= 0


def test_delete_and_stray_are_capped_future_is_not() -> None:
    topic = "t" * 249
    suffix_len = len(f"-12.{UID}-delete")
    for writer in (delete_dir_name, stray_dir_name):
        name = writer(topic, 12, UID)
        assert len(name) == MAX_DIR_NAME_LENGTH
        parsed = parse_partition_dir_name(name)
        assert parsed.partition == 12 and parsed.unique_id == UID
        assert parsed.topic is not None and topic.startswith(parsed.topic)
        assert parsed.topic_may_be_truncated
    assert len(delete_dir_name(topic, 12, UID)) - suffix_len == MAX_DIR_NAME_LENGTH - suffix_len
    future = future_dir_name(topic, 12, UID)
    assert len(future) > MAX_DIR_NAME_LENGTH
    assert parse_partition_dir_name(future).topic == topic


def test_cap_boundary_exact_fit_is_not_cut() -> None:
    tail = f"-0.{UID}-delete"
    topic = "t" * (MAX_DIR_NAME_LENGTH - len(tail))
    name = delete_dir_name(topic, 0, UID)
    assert len(name) == MAX_DIR_NAME_LENGTH
    assert parse_partition_dir_name(name).topic == topic  # fits exactly; flagged "may be" truncated
    assert parse_partition_dir_name(delete_dir_name(topic[:-1], 0, UID)).topic_may_be_truncated is False


TOPIC_CHARS = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=249
)


@given(topic=TOPIC_CHARS, partition=st.integers(0, 2**31 - 1), uid=st.uuids())
def test_writer_reader_round_trip_property(topic: str, partition: int, uid: object) -> None:
    hex_id = uid.hex  # type: ignore[attr-defined]
    assert parse_partition_dir_name(live_dir_name(topic, partition)).partition == partition
    assert parse_partition_dir_name(live_dir_name(topic, partition)).topic == topic
    for writer in (delete_dir_name, stray_dir_name, future_dir_name):
        parsed = parse_partition_dir_name(writer(topic, partition, hex_id))
        assert parsed.partition == partition and parsed.unique_id == hex_id
        assert parsed.topic is not None and topic.startswith(parsed.topic)
        if parsed.topic != topic:
            assert parsed.topic_may_be_truncated
