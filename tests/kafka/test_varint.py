"""Varint encodings (facts 5.4 'Varint encodings')."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka import varint

# Hand-computed from the ZigZag + base-128 rules.
VARINT_CASES = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2**31 - 1, "feffffff0f"),
    (-(2**31), "ffffffff0f"),
]
UVARINT_CASES = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (2**32 - 1, "ffffffff0f")]


@pytest.mark.parametrize(("value", "hexed"), VARINT_CASES)
def test_varint_golden(value: int, hexed: str) -> None:
    assert varint.write_varint(value).hex() == hexed
    assert varint.read_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)


@pytest.mark.parametrize(("value", "hexed"), UVARINT_CASES)
def test_uvarint_golden(value: int, hexed: str) -> None:
    assert varint.write_uvarint(value).hex() == hexed
    assert varint.read_uvarint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)
    assert varint.size_of_uvarint(value) == len(hexed) // 2


def test_varlong_extremes() -> None:
    for value in (-(2**63), 2**63 - 1, 0, -1, 1 << 40):
        raw = varint.write_varlong(value)
        assert varint.read_varlong(raw, 0) == (value, len(raw))
    assert len(varint.write_varlong(-(2**63))) == 10


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    raw = varint.write_varint(value)
    assert varint.read_varint(raw + b"\xff", 0) == (value, len(raw))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    raw = varint.write_varlong(value)
    assert varint.read_varlong(raw, 0) == (value, len(raw))


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        (varint.read_uvarint, b"\x80\x80\x80\x80\x80\x01"),  # 6 bytes: over the 5-byte cap
        (varint.read_varint, b"\xff\xff\xff\xff\xff\x01"),
        (varint.read_varlong, b"\xff" * 10 + b"\x01"),  # 11 bytes
        (varint.read_uvarint, b"\x80\x80"),  # truncated
        (varint.read_varlong, b""),
        (varint.read_uvarint, b"\xff\xff\xff\xff\x7f"),  # 35 bits: overflows 32
    ],
)
def test_bad_varints_raise_decode_error(reader, data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        reader(data, 0)
    assert info.value.offset == 0


def test_writers_reject_out_of_range() -> None:
    bad_calls = (
        lambda: varint.write_varint(2**31),
        lambda: varint.write_uvarint(-1),
        lambda: varint.write_varlong(2**63),
    )
    for bad in bad_calls:
        with pytest.raises(ValueError):
            bad()
