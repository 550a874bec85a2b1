"""Random bytes into the binary decoders: only DecodeError may come out (never IndexError, struct.error...)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.metadata_codec import decode_control_record, decode_metadata_record
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.record_batch import encode_batch, read_batches

# Valid prefixes make the fuzzer reach deep into bodies instead of failing on the frame byte.
PREFIXES = [bytes([1, k, v]) for k, v in ((0, 3), (3, 2), (5, 2), (14, 0), (17, 2), (27, 0), (10, 0))]
fuzz_bytes = st.one_of(st.binary(max_size=80), st.tuples(st.sampled_from(PREFIXES), st.binary(max_size=80)).map(
    lambda t: t[0] + t[1]
))


def _metadata(value: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_metadata_record(value)


def _control(key: bytes, value: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_control_record(key, value)


def _log(buf: bytes) -> None:
    scan = read_batches(buf, verify_crc=False)
    for batch in scan.batches:
        with contextlib.suppress(DecodeError):
            list(batch.records())
    for policy in ("skip", "stop"):
        list(iter_metadata_log(buf, verify_crc=False, on_error=policy))


@given(fuzz_bytes)
@settings(max_examples=300, deadline=None)
def test_metadata_values_quick(value: bytes) -> None:
    _metadata(value)


@given(st.binary(min_size=4, max_size=4).map(lambda k: b"\x00\x00" + k[2:4]), st.binary(max_size=60))
@settings(max_examples=200, deadline=None)
def test_control_values_quick(key: bytes, value: bytes) -> None:
    _control(key, value)


@given(st.lists(fuzz_bytes, min_size=1, max_size=4), st.binary(max_size=8))
@settings(max_examples=100, deadline=None)
def test_logs_of_random_values_quick(values: list[bytes], tail: bytes) -> None:
    _log(encode_batch(values, 0, epoch=1, timestamp_ms=0) + tail)


@pytest.mark.slow
@given(fuzz_bytes)
@settings(max_examples=10_000, deadline=None)
def test_metadata_values_slow(value: bytes) -> None:
    _metadata(value)


@pytest.mark.slow
@given(st.binary(max_size=300))
@settings(max_examples=10_000, deadline=None)
def test_batch_reader_random_bytes_slow(buf: bytes) -> None:
    _log(buf)
