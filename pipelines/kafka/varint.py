"""Kafka's variable-length integers (``clients/.../common/utils/ByteUtils.java``).

Three encodings, all base-128 little-endian (7 payload bits a byte, high bit = "more bytes follow"):

- unsigned varint: a non-negative 32-bit value in at most 5 bytes (message framing, compact lengths, tags);
- varint: a signed 32-bit value, ZigZag-mapped (``(n << 1) ^ (n >> 31)``) then written as above (record fields);
- varlong: a signed 64-bit value, ZigZag-mapped, at most 10 bytes (record timestamp delta).

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; they raise :class:`DecodeError` with the byte offset
on a short buffer, on an encoding longer than the cap, and on a value that overflows the width. ``buf`` may be
``bytes``, ``bytearray``, ``memoryview`` or ``mmap``: anything where ``buf[i]`` is an ``int``.
Callers on hot paths inline the one-byte case (``b < 0x80``) and call these only for longer encodings.
"""

from __future__ import annotations

from pipelines.errors import DecodeError

__all__ = [
    "read_uvarint",
    "read_varint",
    "read_varlong",
    "size_of_uvarint",
    "write_uvarint",
    "write_varint",
    "write_varlong",
    "zigzag32",
    "zigzag64",
]

_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF


def _read_base128(buf, pos: int, max_bytes: int, limit: int, what: str) -> tuple[int, int]:
    start = pos
    value = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise DecodeError(f"truncated {what}", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value > limit:
                raise DecodeError(f"{what} overflows {limit.bit_length()} bits", start)
            return value, pos
        shift += 7
    raise DecodeError(f"{what} longer than {max_bytes} bytes", start)


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (at most 5 bytes, value < 2**32)."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    return _read_base128(buf, pos, 5, _U32, "unsigned varint")


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Read a ZigZag varint (at most 5 bytes) as a signed 32-bit int."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _read_base128(buf, pos, 5, _U32, "varint")
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Read a ZigZag varlong (at most 10 bytes) as a signed 64-bit int."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _read_base128(buf, pos, 10, _U64, "varlong")
    return (raw >> 1) ^ -(raw & 1), pos


def zigzag32(n: int) -> int:
    """Map a signed 32-bit int to its ZigZag unsigned form."""
    if not -(1 << 31) <= n < (1 << 31):
        raise ValueError(f"varint out of int32 range: {n}")
    return ((n << 1) ^ (n >> 31)) & _U32


def zigzag64(n: int) -> int:
    """Map a signed 64-bit int to its ZigZag unsigned form."""
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(f"varlong out of int64 range: {n}")
    return ((n << 1) ^ (n >> 63)) & _U64


def write_uvarint(n: int) -> bytes:
    """Encode a non-negative value below 2**32 as an unsigned varint."""
    if n < 0x80:
        if n < 0:
            raise ValueError(f"unsigned varint cannot be negative: {n}")
        return bytes((n,))
    if n > _U32:
        raise ValueError(f"unsigned varint out of range: {n}")
    return _write_base128(n)


def _write_base128(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_varint(n: int) -> bytes:
    """Encode a signed 32-bit int as a ZigZag varint."""
    return _write_base128(zigzag32(n))


def write_varlong(n: int) -> bytes:
    """Encode a signed 64-bit int as a ZigZag varlong."""
    return _write_base128(zigzag64(n))


def size_of_uvarint(n: int) -> int:
    """Bytes an unsigned varint of ``n`` takes."""
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size
