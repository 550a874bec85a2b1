"""Record-batch compression codecs (attributes bits 0-2; ``clients/.../common/compress/*``).

Library choice: **cramjam** for snappy, lz4 and zstd, the stdlib ``zlib`` for gzip. cramjam is one
self-contained wheel (Rust, no system libraries) that covers all three codecs and is already a core
dependency of the project; ``lz4``, ``zstandard`` and ``python-snappy`` would be three more wheels for the
same work. Formats, as Kafka writes them for magic v2:

- gzip (1): a gzip member (``GZIPOutputStream``); decoded with ``zlib`` in gzip mode.
- snappy (2): xerial ``SnappyOutputStream`` framing: an 8-byte magic ``\\x82SNAPPY\\x00``, int32 version and
  int32 compatible-version, then blocks of ``int32 length + raw snappy block``. Raw (unframed) snappy is also
  accepted when the magic is absent, as some non-Java producers write it.
- lz4 (3): the LZ4 *frame* format (``Lz4BlockOutputStream``: 64 KiB independent blocks).
- zstd (4): one or more zstd frames, content size not necessarily in the header.

Decoding failures of any kind become :class:`DecodeError`; output is capped (``max_size``) so a corrupt or
hostile batch cannot exhaust memory through zlib (the cramjam codecs are checked after the fact).
"""

from __future__ import annotations

import enum
import struct
import zlib

import cramjam

from pipelines.errors import DecodeError

__all__ = ["DEFAULT_MAX_DECOMPRESSED", "Compression", "compress", "decompress"]

DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_I32 = struct.Struct(">i")


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


def decompress(codec: int, data, *, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress a record stream; raise :class:`DecodeError` (offset None) on any codec failure."""
    try:
        codec = Compression(codec)
    except ValueError:
        raise DecodeError(f"unknown compression codec id {codec}") from None
    try:
        if codec == Compression.NONE:
            out = bytes(data)
        elif codec == Compression.GZIP:
            obj = zlib.decompressobj(31)
            out = obj.decompress(bytes(data), max_size + 1)
            if not obj.eof and len(out) <= max_size:
                raise DecodeError("truncated gzip stream")
        elif codec == Compression.SNAPPY:
            out = _snappy_decompress(bytes(data))
        elif codec == Compression.LZ4:
            out = bytes(cramjam.lz4.decompress(bytes(data)))
        else:
            out = bytes(cramjam.zstd.decompress(bytes(data)))
    except DecodeError:
        raise
    except (zlib.error, cramjam.DecompressionError, ValueError, OSError) as exc:
        raise DecodeError(f"{codec.name.lower()} decompression failed: {exc}") from None
    if len(out) > max_size:
        raise DecodeError(f"{codec.name.lower()} stream expands beyond {max_size} bytes")
    return out


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    if len(data) < _XERIAL_HEADER.size:
        raise DecodeError("truncated xerial snappy header")
    pos = _XERIAL_HEADER.size
    parts: list[bytes] = []
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecodeError("truncated xerial snappy block length", pos)
        (n,) = _I32.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise DecodeError(f"xerial snappy block of {n} bytes overruns the stream", pos - 4)
        parts.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + n])))
        pos += n
    return b"".join(parts)
