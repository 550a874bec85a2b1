"""Reading ``__remote_log_metadata-N`` replicas: offsets, holes, bad records, the chosen replica, coverage."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from remote_builders import DAY, copy_started, uid, update

from pipelines.kafka.record_batch import Compression, Record, encode_batch
from pipelines.remote_tier.events import SegmentState, event_to_record
from pipelines.remote_tier.metadata_codec import encode_remote_record
from pipelines.remote_tier.metadata_topic import MetadataCoverage, choose_replica, read_replica, read_replica_segments
from pipelines.remote_tier.metadata_writer import encode_metadata_segments, write_metadata_replica
from pipelines.remote_tier.partitioner import metadata_partition

T = uid(1)


def events(n: int) -> list:
    out = []
    for i in range(n):
        sid = uid(100 + i)
        out.append(copy_started("orders", T, 0, sid, DAY + i, start=i * 100))
        out.append(update("orders", T, 0, sid, SegmentState.COPY_SEGMENT_FINISHED, DAY + i + 1))
    return out


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP, Compression.ZSTD, Compression.LZ4])
def test_replica_read_whole_in_order(tmp_path, compression) -> None:
    evs = events(10)
    d = write_metadata_replica(tmp_path, 3, evs, compression=compression)
    assert len(list(d.glob("*.log"))) > 1
    read = read_replica(d)
    assert read.metadata_partition == 3 and read.whole and read.problems == ()
    assert (read.first_offset, read.last_offset) == (0, len(evs) - 1)
    assert [(e.segment_id, e.state) for e in read.events] == [(e.segment_id, e.state) for e in evs]
    assert [e.offset for e in read.events] == list(range(len(evs)))
    assert read.as_of_ms == max(p.stat().st_mtime_ns // 1_000_000 for p in d.glob("*.log"))
    assert read_replica(d, as_of_ms=123).as_of_ms == 123


def test_missing_segment_file_is_a_hole(tmp_path) -> None:
    segs = encode_metadata_segments(events(10), batch_records=2, segment_batches=2)
    del segs[1]
    read = read_replica_segments(0, segs)
    assert read.unreliable_from == 4 and not read.whole
    assert any("starts at 8, expected 4" in p for p in read.problems)


def test_bad_record_marks_its_offset_and_the_rest_is_read() -> None:
    evs = events(3)
    items = [*evs[:2], b"\x01\x09\x00", *evs[2:]]
    read = read_replica_segments(0, encode_metadata_segments(items))
    assert read.unreliable_from == read.unreliable_last == 2
    assert len(read.events) == len(evs)
    assert any("apiKey 9" in p for p in read.problems)


def test_null_value_is_a_bad_record() -> None:
    value = encode_remote_record(event_to_record(events(1)[0]))
    data = encode_batch([(None, value), (None, None)], 0, epoch=0, timestamp_ms=1)
    read = read_replica_segments(0, [(0, data)])
    assert read.unreliable_from == 1 and len(read.events) == 1


def test_crc_error_in_a_middle_batch() -> None:
    segs = encode_metadata_segments(events(6), batch_records=2, segment_batches=100)
    base, data = segs[0]
    raw = bytearray(data)
    # flip a byte inside the second batch's records
    first_len = int.from_bytes(raw[8:12], "big") + 12
    raw[first_len + 70] ^= 0xFF
    read = read_replica_segments(0, [(base, bytes(raw))])
    assert read.unreliable_from == 2 and any("corrupt" in p for p in read.problems)
    assert len(read.events) == 10


def test_partial_batch_at_the_end_is_the_tail_elsewhere_a_hole() -> None:
    segs = encode_metadata_segments(events(4), batch_records=2, segment_batches=2)
    assert len(segs) == 2
    cut_last = [segs[0], (segs[1][0], segs[1][1][:-5])]
    read = read_replica_segments(0, cut_last)
    assert read.unreliable_from is None and any("tail being written" in p for p in read.problems)
    cut_first = [(segs[0][0], segs[0][1][:-5]), segs[1]]
    read = read_replica_segments(0, cut_first)
    assert read.unreliable_from == 2


def test_batch_with_fewer_records_than_offsets() -> None:
    vals = [encode_remote_record(event_to_record(e)) for e in events(1)]
    data = encode_batch([Record(0, 1, None, vals[0]), Record(2, 1, None, vals[1])], 0, epoch=0, timestamp_ms=1)
    read = read_replica_segments(0, [(0, data)])
    assert read.unreliable_from == 0 and any("2 records for 3 offsets" in p for p in read.problems)


def test_replica_choice_and_coverage(tmp_path) -> None:
    evs = events(4)
    full = read_replica_segments(0, encode_metadata_segments(evs), source="b")
    behind = read_replica_segments(0, encode_metadata_segments(evs[:5]), source="a")
    late_start = read_replica_segments(0, encode_metadata_segments(evs[2:], base_offset=2), source="c")
    holed = encode_metadata_segments(evs, batch_records=1, segment_batches=1)
    del holed[3]
    holey = read_replica_segments(0, holed, source="d")
    assert choose_replica([behind, late_start, holey, full]) is full
    assert choose_replica([behind, late_start, holey]) is behind
    assert choose_replica([late_start, holey]) is holey

    part = metadata_partition(T, 0, 1)
    cov = MetadataCoverage.from_replicas([behind, full], 1, True)
    assert cov.partitions[part] is full and cov.unrecorded_reason(T, 0) is None
    assert "retention" in MetadataCoverage.from_replicas([full], 1, False).unrecorded_reason(T, 0)
    assert "partition count" in MetadataCoverage.from_replicas([full], None, True).unrecorded_reason(T, 0)
    assert "not read" in MetadataCoverage.from_replicas([], 1, True).unrecorded_reason(T, 0)
    assert "offset 2, not 0" in MetadataCoverage.from_replicas([late_start], 1, True).unrecorded_reason(T, 0)
    cov = MetadataCoverage.from_replicas([holey], 1, True)
    assert "from offset 3" in cov.unrecorded_reason(T, 0)
    assert cov.later_events_reason(0, 2) is not None and cov.later_events_reason(0, 4) is None


def test_read_replica_refuses_other_names_and_skips_other_files(tmp_path) -> None:
    with pytest.raises(ValueError, match="is not a __remote_log_metadata-<partition>"):
        read_replica(tmp_path / "orders-0")
    d = write_metadata_replica(tmp_path, 0, events(1))
    (d / "00000000000000000000.index").write_bytes(b"\x00" * 8)
    (d / "00000000000000000099.log.deleted").write_bytes(b"junk")
    os.mkdir(d / "00000000000000000050.log")
    assert read_replica(d).whole


def test_replicas_under_a_log_dir(tmp_path) -> None:
    write_metadata_replica(tmp_path, 0, events(1))
    write_metadata_replica(tmp_path, 12, events(2))
    (tmp_path / "orders-0").mkdir()
    (tmp_path / "__remote_log_metadata-01").mkdir()  # not a name Kafka writes
    os.symlink(tmp_path / "__remote_log_metadata-0", tmp_path / "__remote_log_metadata-7")
    from pipelines.remote_tier.metadata_topic import read_replicas_under

    reads = read_replicas_under(tmp_path)
    assert [(r.metadata_partition, len(r.events)) for r in reads] == [(0, 2), (12, 4)]


@settings(max_examples=60, deadline=None)
@given(batch_records=st.integers(1, 5), segment_batches=st.integers(1, 4),
       compression=st.sampled_from([Compression.NONE, Compression.ZSTD]))
def test_where_batches_and_segments_are_cut_changes_nothing(batch_records, segment_batches, compression) -> None:
    from pipelines.remote_tier.replay import replay

    evs = [*events(5), update("orders", T, 0, uid(100), SegmentState.DELETE_SEGMENT_STARTED, DAY + 50)]
    baseline = replay(read_replica_segments(0, encode_metadata_segments(evs)).events).segments
    read = read_replica_segments(0, encode_metadata_segments(evs, batch_records=batch_records,
                                                             segment_batches=segment_batches,
                                                             compression=compression))
    assert read.whole and replay(read.events).segments == baseline


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_damaged_replica_files_never_crash_and_invent_no_event(data) -> None:
    evs = events(4)
    segs = [(b, bytearray(d)) for b, d in encode_metadata_segments(evs, batch_records=2, segment_batches=2)]
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(segs) - 1))
        base, raw = segs[i]
        if data.draw(st.booleans()) and raw:
            raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
        elif raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
        segs[i] = (base, raw)
    read = read_replica_segments(0, [(b, bytes(d)) for b, d in segs])
    originals = {(e.segment_id, e.state, e.event_timestamp_ms) for e in evs}
    assert {(e.segment_id, e.state, e.event_timestamp_ms) for e in read.events} <= originals


def test_an_empty_metadata_partition_is_said_to_hold_no_record(tmp_path) -> None:
    """The wording users meet in ``remote_findings.reason``: an empty replica holds no record (never "offset None")."""
    from remote_builders import GRACE, NOW, objects_of, run_classify

    d = tmp_path / "__remote_log_metadata-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    empty = read_replica(d)
    assert empty.first_offset is None and not empty.whole
    reason = MetadataCoverage.from_replicas([empty], 1, True).unrecorded_reason(T, 0)
    assert reason == "__remote_log_metadata-0 holds no record (its replica may have been emptied)"
    finding, = run_classify([], objects_of("orders", T, 0, uid(7), modified=NOW - 3 * GRACE), live=frozenset({T}),
                            plan_untracked=True)
    assert not finding.plannable and "holds no record" in finding.reason and "None" not in finding.reason
