"""The few JDK text primitives Kafka's text formats rely on, reproduced with Java's exact semantics.

Python's own helpers differ in small ways that matter for byte-exact parsing: ``str.splitlines`` splits on
``\\x0b``, ``\\x1c`` and ``\\u2028``; ``int()`` accepts ``1_0`` and surrounding blanks; the ``\\s`` of ``re`` is
Unicode-aware. Java's ``\\s`` is exactly ``[ \\t\\n\\x0B\\f\\r]``.
"""

from __future__ import annotations

import re
import unicodedata

from pipelines.kafka.bounded_read import clip

JAVA_WS = " \t\n\x0b\f\r"
"""The characters of Java regex ``\\s`` (without ``UNICODE_CHARACTER_CLASS``)."""

JAVA_NON_WS = "[^ \t\n\x0b\f\r]"
"""Java regex ``\\S`` as a Python character class."""

_WS_RUN = re.compile("[ \t\n\x0b\f\r]+")

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def read_lines(text: str) -> list[str]:
    """Split like repeated ``BufferedReader.readLine``: terminators ``\\n``, ``\\r``, ``\\r\\n``.

    A terminator at the very end does not start another (empty) line; an empty text has no lines.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _digit(ch: str) -> int:
    """``Character.digit(ch, 10)``: any BMP Unicode decimal digit (category Nd), else -1."""
    if "0" <= ch <= "9":
        return ord(ch) - 48
    if ord(ch) > 0xFFFF:  # a Java char is one UTF-16 unit; a surrogate half is never a digit
        return -1
    return unicodedata.decimal(ch, -1)


def parse_java_integer(text: str, *, bits: int = 32) -> int:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64) with radix 10.

    Accepts one optional leading ``+`` or ``-`` followed by at least one digit. No blanks, no underscores.

    Raises:
        ValueError: anything ``NumberFormatException`` would reject, including overflow.
    """
    if len(text) < 10 and bits >= 32 and text.isdigit() and text.isascii():  # common: in range, no sign
        return int(text)
    if not text:
        raise ValueError("empty number")
    sign, start = 1, 0
    if text[0] in "+-":
        if len(text) == 1:
            raise ValueError(f"lone sign: {clip(text)}")
        sign, start = (-1 if text[0] == "-" else 1), 1
    value = 0
    for ch in text[start:]:
        d = _digit(ch)
        if d < 0:
            raise ValueError(f"not a decimal digit {clip(ch)} in {clip(text)}")
        value = value * 10 + d
    value *= sign
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= value <= hi:
        raise ValueError(f"out of range for a {bits}-bit integer: {clip(text)}")
    return value


def split_whitespace(line: str) -> list[str]:
    """``line.split("\\\\s+")`` in Java: a leading blank run yields a leading ``""``; trailing empties are dropped.

    An empty line gives ``[""]`` (no match found returns the input itself); an all-blank line gives ``[]``.
    """
    if not _WS_RUN.search(line):
        return [line]
    parts = _WS_RUN.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts
