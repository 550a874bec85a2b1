"""Decompression is bounded as the bytes come out (issue 27 point 4): a small batch that expands to gigabytes, or
declares that it will, costs at most the cap and is a DecodeError; the fuzz test holds every codec to "at most the
cap, else the product's own error"."""

from __future__ import annotations

import subprocess
import sys
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.compression import Compression, compress, decompress

CODECS = [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]


def _zeros_bomb(codec: Compression, size: int) -> bytes:
    """``size`` zero bytes, compressed by ``codec`` in pieces (never holding ``size`` bytes at once)."""
    piece = b"\0" * (1 << 20)
    if codec == Compression.GZIP:
        obj = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(obj.compress(piece) for _ in range(size >> 20)) + obj.flush()
    if codec == Compression.ZSTD:
        obj = zstandard.ZstdCompressor(level=3).compressobj(size=size)
        return b"".join(obj.compress(piece) for _ in range(size >> 20)) + obj.flush()
    if codec == Compression.LZ4:
        comp = lz4.frame.LZ4FrameCompressor()
        return comp.begin() + b"".join(comp.compress(piece) for _ in range(size >> 20)) + comp.flush()
    return compress(Compression.SNAPPY, b"\0" * size)  # xerial blocks of 32 KiB


_CHILD = """
import resource, sys
from pipelines.errors import DecodeError
from pipelines.kafka.compression import decompress
data = sys.stdin.buffer.read()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    decompress(int(sys.argv[1]), data, max_size=int(sys.argv[2]))
    print("decoded")
except DecodeError as exc:
    print("DecodeError", exc)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.lower())
def test_a_bomb_costs_at_most_the_cap(codec: Compression) -> None:
    """512 MiB of zeros from a few KiB, decoded under a 4 MiB cap in a fresh process: refused, and the process grew
    by far less than the expansion (a decoder that expands first and checks after grows by 512 MiB)."""
    bomb = _zeros_bomb(codec, 512 << 20)
    assert len(bomb) < 32 << 20
    out = subprocess.run([sys.executable, "-c", _CHILD, str(int(codec)), str(4 << 20)], input=bomb,
                         capture_output=True, check=True, timeout=300)  # fmt: skip
    verdict, grown_mib = out.stdout.decode().splitlines()
    assert verdict.startswith("DecodeError") and "expands beyond 4194304 bytes" in verdict
    assert int(grown_mib) < 64, f"{codec.name} grew by {grown_mib} MiB to refuse a 4 MiB cap"


def test_a_raw_snappy_length_header_above_the_cap_is_refused_before_decoding() -> None:
    block = bytes(cramjam.snappy.compress_raw(b"x" * 1000))
    lying = b"\xff\xff\xff\xff\x0f" + block[2:]  # declares 4 GiB - 1
    with pytest.raises(DecodeError, match="declares 4294967295"):
        decompress(Compression.SNAPPY, lying)
    framed = compress(Compression.SNAPPY, b"y" * 100_000)  # 4 xerial blocks of 32 KiB
    with pytest.raises(DecodeError, match="expands beyond 70000 bytes"):
        decompress(Compression.SNAPPY, framed, max_size=70_000)


def test_a_zstd_frame_declaring_a_window_beyond_kafkas_limit_is_refused() -> None:
    params = zstandard.ZstdCompressionParameters(window_log=28, write_content_size=False)
    obj = zstandard.ZstdCompressor(compression_params=params).compressobj()
    frame = obj.compress(b"z" * 1000) + obj.flush()  # no size known: the header keeps the 256 MiB window
    with pytest.raises(DecodeError, match="zstd decompression failed"):
        decompress(Compression.ZSTD, frame)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    codec=st.sampled_from(CODECS),
    actual=st.integers(0, 300_000),
    cap=st.integers(0, 200_000),
    cut=st.one_of(st.none(), st.integers(0, 4096)),
    lie=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
    flip=st.one_of(st.none(), st.tuples(st.integers(0, 10_000), st.integers(1, 255))),
)
def test_fuzz_decoding_returns_at_most_the_cap_or_raises_decode_error(codec, actual, cap, cut, lie, flip) -> None:
    """codec x actual size x cap x truncation x a lying declared size (snappy's header, zstd's content size) x a
    flipped byte: the decoder returns the exact bytes within the cap, or raises DecodeError; nothing else."""
    data = (b"kafka-metadata-" * (actual // 15 + 1))[:actual]
    stream = bytearray(compress(codec, data))
    if lie is not None:
        if codec == Compression.SNAPPY:
            stream = bytearray(_varint(lie) + bytes(cramjam.snappy.compress_raw(data))[len(_varint(actual)):])
        elif codec == Compression.ZSTD:
            stream = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(data))
            if len(stream) > 13:
                stream[5:13] = lie.to_bytes(8, "little")  # frame content size field, when present
    if flip is not None and stream:
        stream[flip[0] % len(stream)] ^= flip[1]
    if cut is not None:
        del stream[len(stream) - min(cut, len(stream)) :]
    try:
        out = decompress(codec, bytes(stream), max_size=cap)
    except DecodeError:
        return
    assert len(out) <= cap
    if lie is None and flip is None and cut is None:
        assert out == data


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7



def test_a_compressed_batch_larger_than_the_cap_is_an_error_without_copying_it(tmp_path) -> None:
    """A CRC-valid zstd batch of 100 MiB (sparse on disk) in a metadata segment: an error naming its offset; the
    payload is never copied out of the memory map (a copy costs 100 MiB of Python memory)."""
    import struct
    import tracemalloc

    from crc32c import crc32c

    from pipelines.kafka.compression import DEFAULT_MAX_DECOMPRESSED
    from pipelines.kafka.metadata_log import iter_metadata_log
    from pipelines.kafka.record_batch import HEADER, HEADER_SIZE, LOG_OVERHEAD

    payload_size = DEFAULT_MAX_DECOMPRESSED + (36 << 20)
    header = bytearray(HEADER.pack(5, HEADER_SIZE - LOG_OVERHEAD + payload_size, 1, 2, 0, int(Compression.ZSTD),
                                   0, 0, 0, -1, -1, -1, 1))  # fmt: skip
    crc = crc32c(bytes(header[21:]))
    zeros = b"\0" * (1 << 20)
    for _ in range(payload_size >> 20):
        crc = crc32c(zeros, crc)
    struct.pack_into(">I", header, 17, crc)
    segment = tmp_path / "00000000000000000005.log"
    with open(segment, "wb") as f:
        f.write(header)
        f.truncate(len(header) + payload_size)
    log = iter_metadata_log(str(segment))
    tracemalloc.start()
    try:
        assert list(log) == []
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (error,) = log.errors
    assert error.position == 0 and f"beyond the {DEFAULT_MAX_DECOMPRESSED}-byte limit" in error.message
    assert peak < 16 << 20, peak
