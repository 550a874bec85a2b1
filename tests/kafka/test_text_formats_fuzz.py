"""Fuzz every text-format parser: arbitrary or mutated input either parses or raises the typed DecodeError family.

A quick run (~200 examples each) is part of the normal suite; ``-m slow`` runs 10,000 examples each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.errors import DecodeError
from pipelines.kafka.checkpoints import (
    EpochEntry,
    OffsetEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from pipelines.kafka.java_properties import load_properties
from pipelines.kafka.meta_properties import read_meta_properties, write_meta_properties
from pipelines.kafka.partition_metadata import read_partition_metadata, write_partition_metadata
from pipelines.kafka.partition_name import parse_partition_dir_name, would_block_startup
from pipelines.kafka.root_files import read_clean_shutdown, read_quorum_state
from pipelines.kafka.segment_files import classify_file
from pipelines.kafka.uuid import Uuid

SEEDS = [
    write_partition_metadata(Uuid.from_string("pIhP9W5fTCihm74ejvDi1g")),
    write_offset_checkpoint([OffsetEntry("orders", 3, 12), OffsetEntry("t", 0, 0)]),
    write_leader_epoch_checkpoint([EpochEntry(0, 0), EpochEntry(4, 99)]),
    write_meta_properties(version=1, cluster_id="EpwKlK0lR6qKZW0cGwZz8w", node_id=1, directory_id=Uuid(5, 6)),
    b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
    b'{"version":0,"brokerEpoch":428}',
]
TEXT_BYTES = st.sampled_from(list(b"0123456789 :\t\n\r-_=!#\\uabcdefAQ.x"))


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A seed with random byte edits: flips, deletions, insertions of format-significant bytes, truncation."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete" and data:
            del data[pos]
        elif op == "insert":
            data.insert(pos, draw(TEXT_BYTES))
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


INPUTS = st.one_of(
    st.binary(max_size=200), mutated(), st.text(max_size=100).map(lambda s: s.encode("utf-8", "replace"))
)

PARSERS: dict[str, Callable[[bytes], object]] = {
    "partition_metadata": read_partition_metadata,
    "partition_metadata_strict": lambda b: read_partition_metadata(b, strict=True),
    "offset_checkpoint": read_offset_checkpoint,
    "leader_epoch_checkpoint": read_leader_epoch_checkpoint,
    "java_properties": load_properties,
    "quorum_state": read_quorum_state,
}
NEVER_RAISE: dict[str, Callable[[bytes], object]] = {
    "meta_properties": read_meta_properties,
    "clean_shutdown": read_clean_shutdown,
    "partition_dir_name": lambda b: parse_partition_dir_name(b.decode("utf-8", "surrogateescape")),
    "would_block_startup": lambda b: would_block_startup(b.decode("utf-8", "surrogateescape")),
    "file_name": lambda b: classify_file(b.decode("utf-8", "surrogateescape")),
}


def _exercise(name: str, data: bytes) -> None:
    if name in PARSERS:
        with contextlib.suppress(DecodeError):  # the typed family is allowed; anything else fails the test
            PARSERS[name](data)
    else:
        NEVER_RAISE[name](data)  # any exception fails the test


ALL = sorted(PARSERS) + sorted(NEVER_RAISE)
_FUZZ = {"deadline": None, "suppress_health_check": list(HealthCheck), "database": None}


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=200, **_FUZZ)
@given(data=INPUTS)
def test_fuzz_quick(name: str, data: bytes) -> None:
    _exercise(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
@settings(max_examples=10_000, **_FUZZ)
@given(data=INPUTS)
def test_fuzz_long(name: str, data: bytes) -> None:
    _exercise(name, data)


@given(mutated())
@settings(max_examples=200, deadline=None)
def test_mutated_partition_metadata_keeps_or_rejects(data: bytes) -> None:
    """A mutated file either still names a valid id or is rejected with a status the inventory knows."""
    try:
        pm = read_partition_metadata(data)
    except DecodeError as exc:
        assert getattr(exc, "status", None) in {"empty", "malformed", "zero_id", "invalid_id"}
    else:
        assert len(str(pm.topic_id)) == 22
