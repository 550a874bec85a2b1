"""``parse_java_integer``'s shortcut for short ASCII digit strings against ``Integer.parseInt``'s rules written
out here: an optional sign, then Unicode decimal digits, in range for the width, else an error."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.kafka.javatext import parse_java_integer


def _reference(text: str, bits: int) -> int | None:
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(len(ch.encode("utf-16-le")) != 2 or unicodedata.decimal(ch, -1) < 0 for ch in body):
        return None
    value = int("".join(str(unicodedata.decimal(ch)) for ch in body)) * (-1 if text[:1] == "-" else 1)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


@given(st.text(st.sampled_from("0123456789+-\u0663 x"), max_size=21), st.sampled_from([32, 64]))
def test_parse_java_integer_matches_the_rules(text: str, bits: int) -> None:
    expected = _reference(text, bits)
    if expected is None:
        with pytest.raises(ValueError):
            parse_java_integer(text, bits=bits)
    else:
        assert parse_java_integer(text, bits=bits) == expected
