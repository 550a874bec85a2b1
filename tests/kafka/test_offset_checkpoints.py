"""Checkpoint text files: CheckpointFile's reader rules, the offset and leader-epoch entry formats."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.kafka.checkpoints import (
    CheckpointCountMismatch,
    CheckpointError,
    CheckpointVersionMismatch,
    EpochEntry,
    MalformedCheckpointLine,
    OffsetEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from pipelines.kafka.javatext import read_lines, split_whitespace


def test_read_real_shape() -> None:
    cp = read_offset_checkpoint(b"0\n2\n__consumer_offsets 22 0\norders 3 1234\n")
    assert (cp.version, cp.declared_count, cp.status) == (0, 2, "ok")
    assert cp.entries == (OffsetEntry("__consumer_offsets", 22, 0), OffsetEntry("orders", 3, 1234))
    assert cp.entries[1].dir_name == "orders-3"


@pytest.mark.parametrize(
    ("data", "version", "count", "status"),
    [
        (b"", None, None, "empty_file"),
        (b"0", 0, None, "ok"),  # ends after the version line: no entries
        (b"0\n", 0, None, "ok"),
        (b"0\n0\n", 0, 0, "ok"),
        (b"0\r\n0\r\n", 0, 0, "ok"),
    ],
)
def test_no_entries(data: bytes, version: int | None, count: int | None, status: str) -> None:
    cp = read_offset_checkpoint(data)
    assert (cp.version, cp.declared_count, cp.entries, cp.status) == (version, count, (), status)


def test_entries_split_on_any_whitespace_run() -> None:
    cp = read_offset_checkpoint(b"0\n2\nt\t1   5\nu \x0b 2\x0c9\n")
    assert cp.entries == (OffsetEntry("t", 1, 5), OffsetEntry("u", 2, 9))


def test_trailing_blanks_are_fine_leading_are_not() -> None:
    assert read_offset_checkpoint(b"0\n1\nt 1 5   \n").entries == (OffsetEntry("t", 1, 5),)
    with pytest.raises(MalformedCheckpointLine):  # Java split keeps a leading empty token
        read_offset_checkpoint(b"0\n1\n t 1 5\n")


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"1\n0\n", CheckpointVersionMismatch),
        (b"-0\n0\n", None),  # parseInt("-0") == 0: accepted
        (b"x\n", MalformedCheckpointLine),
        (b"0 \n0\n", MalformedCheckpointLine),  # no trimming
        (b"0\nx\n", MalformedCheckpointLine),
        (b"0\n-1\n", MalformedCheckpointLine),
        (b"0\n2\nt 1 5\n", CheckpointCountMismatch),
        (b"0\n0\nt 1 5\n", CheckpointCountMismatch),
        (b"0\n1\nt 1\n", MalformedCheckpointLine),
        (b"0\n1\nt 1 5 6\n", MalformedCheckpointLine),
        (b"0\n1\n\n", MalformedCheckpointLine),  # an empty entry line
        (b"0\n1\nt x 5\n", MalformedCheckpointLine),
        (b"0\n1\nt 1 9223372036854775808\n", MalformedCheckpointLine),  # overflows a long
        (b"0\n1\nt 2147483648 0\n", MalformedCheckpointLine),  # overflows an int
        (b"0\n1\n\xff 1 0\n", MalformedCheckpointLine),  # not UTF-8
        (b"0\n3\nt 1 5\nbad\nt 2 6\n", MalformedCheckpointLine),  # the first problem wins
    ],
)
def test_offset_rejects(data: bytes, error: type[CheckpointError] | None) -> None:
    if error is None:
        assert read_offset_checkpoint(data).version == 0
        return
    with pytest.raises(error):
        read_offset_checkpoint(data)


def test_error_details() -> None:
    with pytest.raises(CheckpointVersionMismatch) as v:
        read_offset_checkpoint(b"2\n0\n")
    assert (v.value.found, v.value.expected, v.value.status) == (2, 0, "version_mismatch")
    with pytest.raises(CheckpointCountMismatch) as c:
        read_offset_checkpoint(b"0\n5\nt 1 2\n")
    assert (c.value.declared, c.value.found, c.value.status) == (5, 1, "count_mismatch")
    with pytest.raises(MalformedCheckpointLine) as m:
        read_offset_checkpoint(b"0\n2\nt 1 2\noops\n")
    assert m.value.offset == 4


def test_leader_epoch() -> None:
    cp = read_leader_epoch_checkpoint(b"0\n2\n0 0\n3 1200\n")
    assert cp.entries == (EpochEntry(0, 0), EpochEntry(3, 1200))
    with pytest.raises(MalformedCheckpointLine):
        read_leader_epoch_checkpoint(b"0\n1\n0 0 0\n")
    with pytest.raises(CheckpointVersionMismatch):
        read_leader_epoch_checkpoint(b"1\n0\n")


def test_writers_exact_bytes() -> None:
    assert write_offset_checkpoint([OffsetEntry("t", 1, 5)]) == b"0\n1\nt 1 5\n"
    assert write_offset_checkpoint([]) == b"0\n0\n"
    assert write_leader_epoch_checkpoint([EpochEntry(0, 0)]) == b"0\n1\n0 0\n"


def test_java_helpers() -> None:
    assert read_lines("a\r\nb\rc\n") == ["a", "b", "c"]
    assert read_lines("a\x0bb\u2028c") == ["a\x0bb\u2028c"]  # only \n, \r, \r\n end a line
    assert read_lines("") == []
    assert read_lines("\n") == [""]
    assert split_whitespace("") == [""]
    assert split_whitespace("   ") == []
    assert split_whitespace(" a b ") == ["", "a", "b"]
    assert split_whitespace("a\u00a0b") == ["a\u00a0b"]  # Java \s is ASCII-only


TOPICS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=40)
OFFSETS = st.lists(
    st.builds(OffsetEntry, TOPICS, st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1)), max_size=30
)


@given(OFFSETS)
def test_offset_round_trip(entries: list[OffsetEntry]) -> None:
    cp = read_offset_checkpoint(write_offset_checkpoint(entries))
    assert cp.entries == tuple(entries) and cp.declared_count == len(entries)


@given(st.lists(st.builds(EpochEntry, st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)), max_size=30))
def test_epoch_round_trip(entries: list[EpochEntry]) -> None:
    assert read_leader_epoch_checkpoint(write_leader_epoch_checkpoint(entries)).entries == tuple(entries)


def _outcome(data: bytes | str) -> object:
    try:
        return read_leader_epoch_checkpoint(data)
    except CheckpointError as exc:
        return (type(exc), str(exc), exc.offset)


EPOCH_TEXT = st.one_of(
    st.lists(st.integers(0, 2**63), max_size=7).map(lambda ns: " ".join(map(str, ns))),
    st.text(st.sampled_from("0123456789 \n\t+-"), max_size=40),
)


@given(st.sampled_from(["0", "1", "00"]), st.integers(0, 4).map(str) | st.just("+1"),
       st.lists(EPOCH_TEXT, max_size=4))  # fmt: skip
def test_epoch_shortcut_for_kafka_written_files_equals_the_line_rules(version: str, count: str,
                                                                       lines: list[str]) -> None:  # fmt: skip
    """Files shaped like Kafka's skip the line rules; a str input never takes that shortcut (the reference)."""
    data = "".join(f"{line}\n" for line in [version, count, *lines]).encode()
    assert _outcome(data) == _outcome(data.decode())
