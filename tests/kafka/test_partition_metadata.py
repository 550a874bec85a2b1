"""partition.metadata: Kafka's exact bytes on write; PartitionMetadataReadBuffer's rules on read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.partition_metadata import (
    EmptyPartitionMetadata,
    InvalidTopicId,
    MalformedPartitionMetadataLine,
    PartitionMetadata,
    ZeroTopicId,
    kafka_written_topic_id,
    read_partition_metadata,
    write_partition_metadata,
)
from pipelines.kafka.uuid import ONE, Uuid

TID = "pIhP9W5fTCihm74ejvDi1g"


def test_writer_is_byte_exact() -> None:
    assert write_partition_metadata(Uuid.from_string(TID)) == b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvDi1g"


@pytest.mark.parametrize(
    "data",
    [
        b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvDi1g",
        b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvDi1g\n",
        b"version: 0\r\ntopic_id: pIhP9W5fTCihm74ejvDi1g\r\n",
        b"version:\t0\ntopic_id:   pIhP9W5fTCihm74ejvDi1g",  # ":\s+" is any blank run
        b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvDi1g==",  # Uuid.fromString accepts padding
        b"version: +0\ntopic_id: pIhP9W5fTCihm74ejvDi1g",
    ],
)
def test_accepts(data: bytes) -> None:
    pm = read_partition_metadata(data)
    assert pm.version == 0
    assert str(pm.topic_id) == TID
    assert pm.problems == ()


def test_higher_version_accepted_with_note() -> None:
    pm = read_partition_metadata(b"version: 3\ntopic_id: " + TID.encode())
    assert pm.version == 3
    assert [p.code for p in pm.problems] == ["partition_metadata_future_version"]


def test_extra_lines_ignored_like_kafka() -> None:
    pm = read_partition_metadata(b"version: 0\ntopic_id: " + TID.encode() + b"\ngarbage")
    assert str(pm.topic_id) == TID
    assert [p.code for p in pm.problems] == ["partition_metadata_extra_lines"]


def test_metadata_topic_id() -> None:
    assert read_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ").topic_id == ONE


def test_noncanonical_key_lenient_vs_strict() -> None:
    data = b"Version: 0\ntopic-id: " + TID.encode()
    pm = read_partition_metadata(data)
    assert str(pm.topic_id) == TID
    assert [p.code for p in pm.problems] == ["partition_metadata_noncanonical_key"] * 2
    assert all(p.severity == "error" for p in pm.problems)
    with pytest.raises(MalformedPartitionMetadataLine):
        read_partition_metadata(data, strict=True)


@pytest.mark.parametrize(
    ("data", "error", "status"),
    [
        (b"", EmptyPartitionMetadata, "empty"),
        (b"\n", MalformedPartitionMetadataLine, "malformed"),  # one empty line: no separator
        (b"version: 0", MalformedPartitionMetadataLine, "malformed"),  # no topic_id line
        (b"version: 0\n", MalformedPartitionMetadataLine, "malformed"),
        (b"version:0\ntopic_id: " + TID.encode(), MalformedPartitionMetadataLine, "malformed"),  # no blank after ':'
        (b"version 0\ntopic_id: " + TID.encode(), MalformedPartitionMetadataLine, "malformed"),
        (b"version: -1\ntopic_id: " + TID.encode(), MalformedPartitionMetadataLine, "malformed"),
        (b"version: zero\ntopic_id: " + TID.encode(), MalformedPartitionMetadataLine, "malformed"),
        (b"version: 0 \ntopic_id: " + TID.encode(), MalformedPartitionMetadataLine, "malformed"),  # parseInt("0 ")
        (b"version: 0\ntopic_id:", MalformedPartitionMetadataLine, "malformed"),
        (b"version: 0\ntopic_id: ", InvalidTopicId, "invalid_id"),  # splits into ["topic_id", ""]
        (b"\xff\xfe", MalformedPartitionMetadataLine, "malformed"),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", ZeroTopicId, "zero_id"),
        (b"version: 0\ntopic_id: a4885ff5-6e5f-4c28-a19b-be1e7af0e2d6", InvalidTopicId, "invalid_id"),
        (b"version: 0\ntopic_id: a4885ff56e5f4c28a19bbe1e7af0e2d6", InvalidTopicId, "invalid_id"),
        (b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvDi1", InvalidTopicId, "invalid_id"),
        (b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvDi1g ", InvalidTopicId, "invalid_id"),
        (b"version: 0\ntopic_id: pIhP9W5fTCihm74ejvD!1g", InvalidTopicId, "invalid_id"),
    ],
)
def test_rejects(data: bytes, error: type[DecodeError], status: str) -> None:
    with pytest.raises(error) as info:
        read_partition_metadata(data)
    assert info.value.status == status  # type: ignore[attr-defined]
    assert isinstance(info.value, DecodeError)


def test_empty_topic_id_after_separator_is_invalid_id() -> None:
    # "topic_id: " splits into ["topic_id", ""]; Uuid.fromString("") fails
    with pytest.raises(InvalidTopicId):
        read_partition_metadata(b"version: 0\ntopic_id:  \tx")


@given(st.binary(min_size=16, max_size=16))
def test_round_trip(raw: bytes) -> None:
    uid = Uuid.from_bytes(raw)
    if uid.msb == 0 and uid.lsb == 0:
        with pytest.raises(ZeroTopicId):
            read_partition_metadata(write_partition_metadata(uid))
        return
    assert read_partition_metadata(write_partition_metadata(uid)).topic_id == uid


def _outcome(data: bytes | str) -> object:
    try:
        return read_partition_metadata(data)
    except DecodeError as exc:
        return (type(exc), str(exc), exc.offset)


_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@given(
    st.one_of(
        st.text(st.sampled_from(_B64URL), min_size=22, max_size=22),  # valid (or the zero id, or odd pad bits)
        st.just("A" * 22),
        st.text(st.sampled_from(_B64URL + "=+/ \n\r:\u00e9\x00"), min_size=20, max_size=24),
    )
)
def test_canonical_fast_path_equals_the_line_rules(id_text: str) -> None:
    """Files shaped like Kafka's (``version: 0\\ntopic_id: `` + 22 chars) skip the line rules; a str input never
    takes that shortcut, so it is the reference (the bytes are UTF-8 here, so both decode alike)."""
    data = f"version: 0\ntopic_id: {id_text}".encode()
    outcome = _outcome(data)
    assert outcome == _outcome(data.decode())
    # the crawl's shortcut: the id text of exactly what Kafka writes, otherwise no answer (never a wrong one)
    text = kafka_written_topic_id(data)
    if isinstance(outcome, PartitionMetadata) and str(outcome.topic_id) == id_text:
        assert text == id_text
    else:
        assert text is None
