"""Record-batch compression codecs (attributes bits 0-2; ``clients/.../common/compress/*``).

Formats, as Kafka writes them for magic v2:

- gzip (1): one or more gzip members (``GZIPOutputStream``); decoded with ``zlib`` in gzip mode.
- snappy (2): xerial ``SnappyOutputStream`` framing: an 8-byte magic ``\\x82SNAPPY\\x00``, int32 version and
  int32 compatible-version, then blocks of ``int32 length + raw snappy block``. Raw (unframed) snappy is also
  accepted when the magic is absent, as some non-Java producers write it.
- lz4 (3): the LZ4 *frame* format (``Lz4BlockOutputStream``: 64 KiB independent blocks).
- zstd (4): one or more zstd frames, content size not necessarily in the header.

Decoding is bounded: the output cap (``max_size``) is applied as bytes come out of the decoder, never after the
fact, so a 32 KiB batch that expands to gigabytes costs at most ``max_size`` bytes before it is refused. A size a
stream *declares* (snappy's length header, a zstd frame's content size) never decides an allocation: a declared
snappy length above what is left of the cap is refused before decoding, and zstd/lz4/gzip are decoded piecewise.
Libraries: ``zlib`` for gzip, ``zstandard`` (``decompressobj`` fed so that one call cannot overshoot the cap by
more than one block) for zstd, ``lz4.frame`` (``LZ4FrameDecompressor.decompress(max_length=...)``) for lz4, and
cramjam's raw snappy block decoder behind the length check. Every failure, exceeding the cap included, is a
:class:`DecodeError`.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Callable

import cramjam
import lz4.frame
import zstandard

from pipelines.errors import DecodeError

__all__ = ["DEFAULT_MAX_DECOMPRESSED", "ZSTD_MAX_WINDOW", "Compression", "compress", "decompress"]

DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024
"""Bytes one batch may decompress to; more is a :class:`DecodeError`. Eight times KRaft's largest batch
(``MAX_BATCH_SIZE_BYTES``, 8 MiB), which Kafka itself writes uncompressed: a compressed metadata batch expanding
further is hostile, and the cap keeps a broker-host command within its memory (issue 27; it was 256 MiB)."""

ZSTD_MAX_WINDOW = 1 << 27
"""Largest zstd window accepted: zstd's own default limit (``ZSTD_WINDOWLOG_LIMIT_DEFAULT``), which zstd-jni and so
Kafka's brokers apply too. It bounds the decoder's own buffer whatever a frame header declares."""

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_I32 = struct.Struct(">i")
_CHUNK = 1 << 20  # output bytes asked of a streaming decoder at a time
_ZSTD_MAX_RATIO = 32 * 1024  # a 4-byte RLE block (3-byte header + 1 byte) stands for 128 KiB: at most this per byte
_GZIP_MAGIC = b"\x1f\x8b"


class Compression(enum.IntEnum):
    """Codec ids of ``CompressionType.java`` (attribute bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress ``data`` the way a Kafka producer would for ``codec``."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        obj = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 31)
        return obj.compress(data) + obj.flush()
    if codec == Compression.SNAPPY:
        out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(bytes(data[i : i + _XERIAL_BLOCK])))
            out += _I32.pack(len(block)) + block
        return bytes(out)
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.compress(bytes(data)))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(bytes(data)))
    raise ValueError(f"unknown compression codec {codec!r}")


class _Sink:
    """Decoded chunks, refused as soon as they add up to more than ``cap`` bytes."""

    __slots__ = ("cap", "chunks", "codec", "size")

    def __init__(self, codec: str, cap: int) -> None:
        self.codec = codec
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0

    @property
    def left(self) -> int:
        return self.cap - self.size

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.cap:
            self.chunks.clear()
            raise self.too_large()
        if chunk:
            self.chunks.append(chunk)

    def too_large(self) -> DecodeError:
        return DecodeError(f"{self.codec} stream expands beyond {self.cap} bytes")

    def result(self) -> bytes:
        chunks = self.chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def decompress(codec: int, data, *, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress a record stream into at most ``max_size`` bytes.

    Raises:
        DecodeError: (offset None) an unknown codec, a stream the codec cannot decode, a truncated stream, or one
            that expands beyond ``max_size`` bytes (noticed as the bytes come out, before more are made).
    """
    try:
        codec = Compression(codec)
    except ValueError:
        raise DecodeError(f"unknown compression codec id {codec}") from None
    if codec == Compression.NONE:
        out = bytes(data)
        if len(out) > max_size:
            raise _Sink("none", max_size).too_large()
        return out
    name = codec.name.lower()
    sink = _Sink(name, max_size)
    try:
        _DECODERS[codec](memoryview(data).cast("B"), sink)
    except DecodeError:
        raise
    except (zlib.error, cramjam.DecompressionError, zstandard.ZstdError, RuntimeError, ValueError, OSError,
            MemoryError) as exc:  # fmt: skip
        raise DecodeError(f"{name} decompression failed: {_first_line(exc)}") from None
    return sink.result()


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _gzip(data: memoryview, sink: _Sink) -> None:
    """Every gzip member in turn (``GZIPInputStream`` reads concatenated members; bytes after the last are ignored
    as it ignores them)."""
    rest = bytes(data)
    while True:
        obj = zlib.decompressobj(31)
        pending = rest
        while not obj.eof:
            chunk = obj.decompress(pending, min(_CHUNK, sink.left + 1))
            sink.add(chunk)
            pending = obj.unconsumed_tail
            if not pending and not chunk and not obj.eof:
                raise DecodeError("truncated gzip stream")
        rest = obj.unused_data
        if not rest.startswith(_GZIP_MAGIC):
            return


def _snappy(data: memoryview, sink: _Sink) -> None:
    if bytes(data[: len(_XERIAL_MAGIC)]) != _XERIAL_MAGIC:
        _snappy_block(data, sink, 0)
        return
    if len(data) < _XERIAL_HEADER.size:
        raise DecodeError("truncated xerial snappy header")
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecodeError("truncated xerial snappy block length", pos)
        (n,) = _I32.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise DecodeError(f"xerial snappy block of {n} bytes overruns the stream", pos - 4)
        _snappy_block(data[pos : pos + n], sink, pos)
        pos += n


def _snappy_block(block: memoryview, sink: _Sink, at: int) -> None:
    """One raw snappy block: its declared length (a varint header) is checked against the cap before decoding."""
    declared, shift, i = 0, 0, 0
    while True:
        if i >= len(block) or i >= 5:
            raise DecodeError("snappy block without a valid length header", at)
        b = block[i]
        declared |= (b & 0x7F) << shift
        shift += 7
        i += 1
        if b < 0x80:
            break
    if declared > sink.left:
        message = f"snappy stream expands beyond {sink.cap} bytes (a block declares {declared}, {sink.left} left)"
        raise DecodeError(message, at)
    sink.add(bytes(cramjam.snappy.decompress_raw(bytes(block))))


def _lz4(data: memoryview, sink: _Sink) -> None:
    rest = bytes(data)
    while True:
        obj = lz4.frame.LZ4FrameDecompressor()
        out = obj.decompress(rest, max_length=min(_CHUNK, sink.left + 1))
        sink.add(out)
        while not obj.eof:
            if obj.needs_input:
                raise DecodeError("truncated lz4 frame")
            sink.add(obj.decompress(b"", max_length=min(_CHUNK, sink.left + 1)))
        rest = obj.unused_data or b""
        if not rest:
            return


def _zstd(data: memoryview, sink: _Sink) -> None:
    """Each frame with a ``decompressobj`` fed only as many bytes as, at zstd's largest expansion (an RLE block of
    4 bytes for 128 KiB), can stay within what is left of the cap plus one block."""
    dctx = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    rest = bytes(data)
    while rest:
        obj = dctx.decompressobj()
        pos = 0
        while not obj.eof:
            if pos >= len(rest):
                raise DecodeError("truncated zstd stream")
            step = max(1, sink.left // _ZSTD_MAX_RATIO)
            sink.add(obj.decompress(rest[pos : pos + step]))
            pos += step
        rest = obj.unused_data + rest[pos:]


_DECODERS: dict[Compression, Callable[[memoryview, _Sink], None]] = {
    Compression.GZIP: _gzip,
    Compression.SNAPPY: _snappy,
    Compression.LZ4: _lz4,
    Compression.ZSTD: _zstd,
}
