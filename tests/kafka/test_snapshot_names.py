"""KRaft snapshot file names (facts 5.2)."""

from __future__ import annotations

import pytest

from pipelines.errors import DecodeError
from pipelines.kafka.snapshot_names import format_snapshot_name, parse_snapshot_file, parse_snapshot_name


def test_parse_and_format() -> None:
    assert parse_snapshot_name("00000000000000000100-0000000001.checkpoint") == (100, 1)
    assert format_snapshot_name(100, 1) == "00000000000000000100-0000000001.checkpoint"
    assert parse_snapshot_file("00000000000000000100-0000000001.checkpoint").last_contained_offset == 99


def test_partial_and_deleted() -> None:
    part = parse_snapshot_file("00000000000000000100-0000000001-1234567890.checkpoint.part")
    assert (part.end_offset, part.epoch, part.partial, part.deleted) == (100, 1, True, False)
    deleted = parse_snapshot_file("00000000000000835259-0000000002.checkpoint.deleted")
    assert (deleted.end_offset, deleted.epoch, deleted.partial, deleted.deleted) == (835259, 2, False, True)


@pytest.mark.parametrize(
    "name",
    [
        "bootstrap.checkpoint",
        "0000000000000000100-0000000001.checkpoint",  # 19 digits
        "00000000000000000100-0000000001.log",
        "00000000000000000100-0000000001-x.checkpoint",  # random part only on .part files
        "00000000000000000100-9999999999.checkpoint",  # epoch beyond int32
        "replication-offset-checkpoint",
    ],
)
def test_rejects_non_snapshot_names(name: str) -> None:
    with pytest.raises(DecodeError):
        parse_snapshot_file(name)
