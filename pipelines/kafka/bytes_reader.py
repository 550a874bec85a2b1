"""A bounded big-endian byte reader over a ``memoryview`` that fails with :class:`DecodeError`.

Every read checks the bound first, so a short buffer never yields partial data, ``IndexError`` or
``struct.error``: the error carries the absolute byte offset (``base`` + position) where the read started.
Lengths are checked before any allocation; negative lengths are rejected except the documented null
sentinels (``-1`` for nullable bytes/strings, compact length ``0``).

Hot paths (record and metadata decoding) do not go through this class; they use compiled readers
(:mod:`pipelines.kafka.metadata_compiler`) with the same rules. This class serves the cooler paths and tests.
"""

from __future__ import annotations

import struct

from pipelines.errors import DecodeError
from pipelines.kafka import varint
from pipelines.kafka.uuid import Uuid

__all__ = ["ByteReader"]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
_UUID = struct.Struct(">QQ")


class ByteReader:
    """Sequential reader of ``data[start:end]``; ``pos`` is relative to ``start``.

    Args:
        data: any buffer (``bytes``, ``bytearray``, ``mmap``, ``memoryview``); it is not copied.
        base: absolute offset of ``data[0]`` in the enclosing file, added to error offsets.
    """

    __slots__ = ("_base", "_end", "_mv", "pos")

    def __init__(self, data, base: int = 0) -> None:
        self._mv = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
        self._end = len(self._mv)
        self._base = base
        self.pos = 0

    # -- bookkeeping --------------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self._end - self.pos

    def offset(self) -> int:
        """Absolute offset of the next byte."""
        return self._base + self.pos

    def _need(self, n: int, what: str) -> int:
        start = self.pos
        if n < 0:
            raise DecodeError(f"negative length {n} for {what}", self._base + start)
        if n > self._end - start:
            raise DecodeError(f"truncated {what}: need {n} bytes, {self._end - start} left", self._base + start)
        self.pos = start + n
        return start

    def expect_end(self, what: str) -> None:
        """Raise unless every byte was consumed."""
        if self.pos != self._end:
            raise DecodeError(f"{self._end - self.pos} byte(s) of garbage after {what}", self._base + self.pos)

    # -- fixed width --------------------------------------------------------------------------
    def int8(self) -> int:
        return _I8.unpack_from(self._mv, self._need(1, "int8"))[0]

    def int16(self) -> int:
        return _I16.unpack_from(self._mv, self._need(2, "int16"))[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self._mv, self._need(2, "uint16"))[0]

    def int32(self) -> int:
        return _I32.unpack_from(self._mv, self._need(4, "int32"))[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self._mv, self._need(4, "uint32"))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self._mv, self._need(8, "int64"))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self._mv, self._need(8, "float64"))[0]

    def boolean(self) -> bool:
        return self._mv[self._need(1, "bool")] != 0

    def uuid(self) -> Uuid:
        msb, lsb = _UUID.unpack_from(self._mv, self._need(16, "uuid"))
        return Uuid(msb, lsb)

    def raw(self, n: int, what: str = "bytes") -> bytes:
        start = self._need(n, what)
        return bytes(self._mv[start : start + n])

    def view(self, n: int, what: str = "bytes") -> memoryview:
        """A zero-copy view of the next ``n`` bytes."""
        start = self._need(n, what)
        return self._mv[start : start + n]

    # -- variable width -----------------------------------------------------------------------
    def _varnum(self, fn) -> int:
        try:
            value, pos = fn(self._mv, self.pos)
        except DecodeError as exc:
            raise DecodeError(str(exc).split(" (at offset")[0], self._base + self.pos) from None
        if pos > self._end:  # pragma: no cover - fn checks len(buf) which equals _end
            raise DecodeError("truncated varint", self._base + self.pos)
        self.pos = pos
        return value

    def uvarint(self) -> int:
        return self._varnum(varint.read_uvarint)

    def varint(self) -> int:
        return self._varnum(varint.read_varint)

    def varlong(self) -> int:
        return self._varnum(varint.read_varlong)

    def compact_length(self, what: str, nullable: bool) -> int | None:
        """Read an unsigned varint ``N+1`` length; ``0`` is null (allowed only when ``nullable``)."""
        at = self.offset()
        n = self.uvarint() - 1
        if n < 0:
            if not nullable:
                raise DecodeError(f"null {what} where not nullable", at)
            return None
        if n > self.remaining:
            raise DecodeError(f"{what} length {n} exceeds the {self.remaining} bytes left", at)
        return n

    def compact_bytes(self, nullable: bool = False) -> bytes | None:
        n = self.compact_length("bytes", nullable)
        return None if n is None else self.raw(n)

    def compact_string(self, nullable: bool = False) -> str | None:
        n = self.compact_length("string", nullable)
        return None if n is None else self.raw(n, "string").decode("utf-8", "surrogateescape")

    def varint_bytes(self, what: str = "bytes") -> bytes | None:
        """Record-style bytes: zigzag varint length, ``-1`` = null."""
        at = self.offset()
        n = self.varint()
        if n == -1:
            return None
        if n < 0:
            raise DecodeError(f"negative {what} length {n}", at)
        return self.raw(n, what)
