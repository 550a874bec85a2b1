"""Kafka ``Uuid``: text/wire forms, reserved ids, and value semantics (hash, equality, ordering, immutability)."""

from __future__ import annotations

import base64
import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.uuid import LOST, METADATA_TOPIC_ID, MIGRATING, ONE, UNASSIGNED, ZERO, Uuid

SAMPLE = Uuid(0x0123456789ABCDEF, 0xFEDCBA9876543210)


def test_halves_and_wire_form_round_trip() -> None:
    raw = bytes(range(16))
    u = Uuid.from_bytes(raw)
    assert (u.msb, u.lsb) == (int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big"))
    assert u.to_bytes() == raw
    assert Uuid.from_hex(u.hex()) == u
    assert Uuid.from_hex(u.dashed()) == u
    assert u.dashed() == "00010203-0405-0607-0809-0a0b0c0d0e0f"


def test_text_form_is_22_char_base64url_and_round_trips() -> None:
    text = str(SAMPLE)
    assert len(text) == 22 and "=" not in text
    assert Uuid.from_string(text) == SAMPLE
    assert Uuid.from_string(text + "==") == SAMPLE
    assert f"{SAMPLE}" == text


@given(raw=st.binary(min_size=16, max_size=16))
def test_text_and_wire_forms_match_the_standard_library(raw: bytes) -> None:
    u = Uuid.from_bytes(raw)
    assert u.to_bytes() == raw
    assert str(u) == base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")  # Kafka: unpadded base64url
    assert Uuid.from_string(str(u)) == u
    assert Uuid.from_canonical_text(str(u).encode()) == u  # the crawl's shortcut for Kafka-written ids


@pytest.mark.parametrize("bad", ["", "abc", "A" * 23, "A" * 21 + "!", "00010203-0405-0607-0809-0a0b0c0d0e0f"])
def test_from_string_rejects_non_kafka_forms(bad: str) -> None:
    with pytest.raises(DecodeError):
        Uuid.from_string(bad)


@pytest.mark.parametrize("msb,lsb", [(-1, 0), (0, -1), (1 << 64, 0), (0, 1 << 64)])
def test_halves_must_be_unsigned_64_bit(msb: int, lsb: int) -> None:
    with pytest.raises(ValueError):
        Uuid(msb, lsb)


def test_from_bytes_needs_16_bytes() -> None:
    with pytest.raises(DecodeError):
        Uuid.from_bytes(b"\x00" * 15)


def test_value_semantics() -> None:
    a, b = Uuid(5, 7), Uuid(5, 7)
    assert a == b and hash(a) == hash(b) and a is not b
    assert {a: 1}[b] == 1
    assert Uuid(1, 9) < Uuid(2, 0) < Uuid(2, 1)
    assert sorted([Uuid(3, 0), Uuid(1, 5), Uuid(1, 2)]) == [Uuid(1, 2), Uuid(1, 5), Uuid(3, 0)]
    assert a != Uuid(5, 8)
    assert repr(a) == "Uuid(msb=5, lsb=7)"
    match a:
        case Uuid(msb, lsb):
            assert (msb, lsb) == (5, 7)


def test_immutable_and_copyable() -> None:
    with pytest.raises(AttributeError):
        SAMPLE.msb = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        SAMPLE.extra = 1  # type: ignore[attr-defined]
    for clone in (pickle.loads(pickle.dumps(SAMPLE)), copy.deepcopy(SAMPLE), copy.copy(SAMPLE)):
        assert clone == SAMPLE and type(clone) is Uuid


def test_reserved_ids() -> None:
    assert ZERO.is_reserved and ONE.is_reserved and not LOST.is_reserved
    assert METADATA_TOPIC_ID == ONE == UNASSIGNED and MIGRATING == ZERO
    assert LOST.is_reserved_directory_id and Uuid(0, 99).is_reserved_directory_id
    assert not Uuid(0, 100).is_reserved_directory_id and not Uuid(1, 0).is_reserved_directory_id
    assert str(ZERO) == "AAAAAAAAAAAAAAAAAAAAAA"
