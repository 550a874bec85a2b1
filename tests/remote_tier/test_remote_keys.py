"""Object keys of both layouts: Uuids cut from the right, exact forms only, anything else an error row."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.keys import RemoteKeyError, uuid_from_right
from pipelines.remote_tier.listing import ListedObject, parse_key, parse_listing

# Ids whose text holds "-" and "_" (and one that starts with "-"): a split at "-" would cut them.
DASHED = Uuid.from_string("ab-cd_ef-gh_ij-kl_mnAA")
LEADING_DASH = Uuid.from_string("-_-_-_-_-_-_-_-_-_-_-A")
SEG = Uuid.from_string("tqimKeZwStOEOwRzT3L5oQ")


def aiven(topic: str, tid: Uuid, partition: int, offset: int, sid: Uuid, suffix: str, prefix: str = "") -> str:
    return f"{prefix}{topic}-{tid}/{partition}/{offset:020d}-{sid}.{suffix}"


def local(topic: str, tid: Uuid, partition: int, offset: int, sid: Uuid, suffix: str) -> str:
    return f"kafka-tiered-storage/{topic}-{partition}-{tid}/{offset:020d}-{sid}.{suffix}"


def test_ids_with_dashes_and_underscores_are_texts_kafka_prints() -> None:
    assert str(DASHED) == "ab-cd_ef-gh_ij-kl_mnAA" and str(LEADING_DASH) == "-_-_-_-_-_-_-_-_-_-_-A"


@pytest.mark.parametrize("topic", ["orders", "a-b-c", "x-1-2", "t.with.dots", "_under", "-", "0"])
@pytest.mark.parametrize("tid", [DASHED, LEADING_DASH])
def test_aiven_key_round_trip(topic: str, tid: Uuid) -> None:
    k = parse_key(aiven(topic, tid, 7, 1234, LEADING_DASH, "log", "some/prefix-"), "aiven", "some/prefix-")
    assert (k.topic, k.topic_id, k.partition, k.segment_id, k.start_offset, k.kind) == (
        topic, tid, 7, LEADING_DASH, 1234, "log")


@pytest.mark.parametrize("topic", ["orders", "a-b-c", "x-1-2", "t.with.dots", "9-9"])
@pytest.mark.parametrize("tid", [DASHED, LEADING_DASH])
def test_local_key_round_trip(topic: str, tid: Uuid) -> None:
    k = parse_key(local(topic, tid, 12, 2**63 - 1, DASHED, "leader_epoch_checkpoint"), "local_tiered_storage")
    assert (k.topic, k.topic_id, k.partition, k.segment_id, k.start_offset, k.kind) == (
        topic, tid, 12, DASHED, 2**63 - 1, "leader_epoch_checkpoint")


@pytest.mark.parametrize("suffix", ["log", "indexes", "rsm-manifest"])
def test_aiven_suffixes(suffix: str) -> None:
    assert parse_key(aiven("t", DASHED, 0, 0, SEG, suffix), "aiven").kind == suffix


@pytest.mark.parametrize("suffix", ["log", "index", "timeindex", "snapshot", "txnindex", "leader_epoch_checkpoint"])
def test_local_suffixes(suffix: str) -> None:
    assert parse_key(local("t", DASHED, 0, 0, SEG, suffix), "local_tiered_storage").kind == suffix


GOOD_AIVEN = aiven("orders", DASHED, 3, 42, SEG, "log")
BAD_AIVEN = [
    aiven("orders", DASHED, 3, 42, SEG, "index"),  # the pre-release per-index suffixes
    aiven("orders", DASHED, 3, 42, SEG, "leader-epoch-checkpoint"),
    aiven("orders", DASHED, 3, 42, SEG, "log.tmp"),
    aiven("orders", DASHED, 3, 42, SEG, "LOG"),
    GOOD_AIVEN.replace("/00000000000000000042-", "/0000000000000000042-"),  # 19 digits
    GOOD_AIVEN.replace("/00000000000000000042-", "/000000000000000000042-"),  # 21 digits
    GOOD_AIVEN.replace("/00000000000000000042-", "/99999999999999999999-"),  # beyond int64
    GOOD_AIVEN.replace(f"00042-{SEG}", f"00042_{SEG}"),  # offset and id not joined by "-"
    GOOD_AIVEN.replace(f"{SEG}.log", f"{SEG}_log"),  # no "." before the suffix
    GOOD_AIVEN.replace("/3/", "/03/"),  # Kafka never pads a partition
    GOOD_AIVEN.replace("/3/", "/-3/"),
    GOOD_AIVEN.replace("/3/", "/2147483648/"),
    GOOD_AIVEN.replace("/3/", "//"),
    GOOD_AIVEN.replace(f"-{DASHED}/", f"_{DASHED}/"),  # no "-" before the topic id
    GOOD_AIVEN.replace(f"orders-{DASHED}", f"-{DASHED}"),  # empty topic
    GOOD_AIVEN.replace(f"orders-{DASHED}", f"or ders-{DASHED}"),  # illegal topic character
    GOOD_AIVEN.replace(str(SEG), "tqimKeZwStOEOwRzT3L5oR"),  # not a text Kafka prints (unused bits set)
    GOOD_AIVEN.replace(str(SEG), "tqimKeZwStOEOwRzT3L5o"),  # 21 characters
    GOOD_AIVEN.replace(str(SEG), "tqimKeZwStOEOwRzT3L5o!"),
    GOOD_AIVEN.replace(str(DASHED), "ab-cd_ef-gh_ij-kl_mnA="),
    "orders/3/x.log",
    f"orders-{DASHED}/3/",  # a folder marker
    f"orders-{DASHED}/3",
    f"extra/{GOOD_AIVEN}",
    "",
    "\x1b[2J",
]


@pytest.mark.parametrize("key", BAD_AIVEN)
def test_aiven_refuses(key: str) -> None:
    with pytest.raises(RemoteKeyError):
        parse_key(key, "aiven")


GOOD_LOCAL = local("orders", DASHED, 3, 42, SEG, "log")
BAD_LOCAL = [
    local("orders", DASHED, 3, 42, SEG, "indexes"),
    local("orders", DASHED, 3, 42, SEG, "leader-epoch-checkpoint"),  # a log dir's name, not the RSM's
    local("orders", DASHED, 3, 42, SEG, "deleted"),
    GOOD_LOCAL.replace("kafka-tiered-storage/", ""),
    GOOD_LOCAL.replace("kafka-tiered-storage/", "other-root/"),
    GOOD_LOCAL.replace("orders-3-", "orders-"),  # no partition
    GOOD_LOCAL.replace("orders-3-", "orders-x-"),
    GOOD_LOCAL.replace("orders-3-", "-3-"),
    GOOD_LOCAL.replace("orders-3-", "orders-03-"),
    f"kafka-tiered-storage/orders-3-{DASHED}/",
    f"kafka-tiered-storage/orders-3-{DASHED}/sub/{42:020d}-{SEG}.log",
]


@pytest.mark.parametrize("key", BAD_LOCAL)
def test_local_refuses(key: str) -> None:
    with pytest.raises(RemoteKeyError):
        parse_key(key, "local_tiered_storage")


def test_aiven_prefix_is_required_and_stripped() -> None:
    with pytest.raises(RemoteKeyError, match="outside the layout prefix"):
        parse_key(GOOD_AIVEN, "aiven", "tiered/")
    assert parse_key("tiered/" + GOOD_AIVEN, "aiven", "tiered/").partition == 3


def test_unknown_layout_and_local_prefix_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown remote_tier layout"):
        parse_key(GOOD_AIVEN, "iceberg")
    with pytest.raises(ValueError, match="no key prefix"):
        parse_key(GOOD_LOCAL, "local_tiered_storage", "x/")


def test_listing_keeps_every_key_and_marks_errors() -> None:
    listed = [ListedObject(GOOD_AIVEN, 10, 1, "e1"), ListedObject("garbage", 5, 2, "e2"),
              ListedObject(aiven("orders", DASHED, 3, 42, SEG, "indexes"), 7, 3)]
    rows = list(parse_listing(listed, "aiven"))
    assert [r.key for r in rows] == [o.key for o in listed]
    assert [r.error is None for r in rows] == [True, False, True]
    bad = rows[1]
    assert bad.segment is None and bad.topic is None and bad.size == 5 and bad.etag == "e2"
    assert rows[0].segment == rows[2].segment == (DASHED, 3, SEG)
    assert rows[2].object_kind == "indexes"


def test_error_message_shows_controls_escaped() -> None:
    with pytest.raises(RemoteKeyError) as info:
        parse_key("a\x1b[2J-b/0/x", "aiven")
    assert "\x1b" not in str(info.value)


@settings(deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=60)
       .filter(lambda t: t not in (".", "..")),
       st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1))
def test_uuid_from_the_right_whatever_the_topic(topic: str, hi: int, lo: int, partition: int, offset: int) -> None:
    tid = Uuid(hi, lo)
    head, parsed = uuid_from_right(f"{topic}-{tid}", "t")
    assert (head, parsed) == (topic, tid)
    k = parse_key(local(topic, tid, partition, offset, tid, "log"), "local_tiered_storage")
    assert (k.topic, k.topic_id, k.partition, k.start_offset) == (topic, tid, partition, offset)
    k = parse_key(aiven(topic, tid, partition, offset, tid, "log"), "aiven")
    assert (k.topic, k.topic_id, k.partition, k.start_offset) == (topic, tid, partition, offset)


@settings(deadline=None)
@given(st.text(max_size=120))
def test_garbage_is_an_error_never_a_crash(key: str) -> None:
    for layout in ("aiven", "local_tiered_storage"):
        with contextlib.suppress(RemoteKeyError):
            parse_key(key, layout)
