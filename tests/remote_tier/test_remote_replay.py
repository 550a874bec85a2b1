"""Replay follows the broker cache's transition rules: the latest ACCEPTED event wins, never a stale one."""

from __future__ import annotations

from dataclasses import replace

import pytest
from remote_builders import copy_started, uid, update

from pipelines.remote_tier.events import PartitionDeleteEvent, PartitionDeleteState, SegmentState
from pipelines.remote_tier.replay import is_valid_transition, replay

S = SegmentState
T, SID = uid(1), uid(2)


def state_after(*events) -> SegmentState:
    return replay(events).segments[(T, 0, SID)].state


def test_full_lifecycle_in_order() -> None:
    evs = [copy_started("t", T, 0, SID, 10), update("t", T, 0, SID, S.COPY_SEGMENT_FINISHED, 20),
           update("t", T, 0, SID, S.DELETE_SEGMENT_STARTED, 30), update("t", T, 0, SID, S.DELETE_SEGMENT_FINISHED, 40)]
    for n, expected in zip(range(1, 5), S, strict=True):
        seg = replay(evs[:n]).segments[(T, 0, SID)]
        assert seg.state == expected and seg.event_timestamp_ms == n * 10 and seg.first_event_ms == 10
        assert (seg.start_offset, seg.end_offset, seg.size) == (0, 99, 1000)


def test_stray_copy_started_after_finished_leaves_it_finished() -> None:
    """A re-sent or replayed COPY_SEGMENT_STARTED read last must not make a live segment look half-copied."""
    img = replay([copy_started("t", T, 0, SID, 10), update("t", T, 0, SID, S.COPY_SEGMENT_FINISHED, 20),
                  copy_started("t", T, 0, SID, 30)])
    seg = img.segments[(T, 0, SID)]
    assert seg.state == S.COPY_SEGMENT_FINISHED and seg.event_timestamp_ms == 20 and seg.dropped == 1
    assert img.dropped == 1 and "cannot go back" in img.notes[0]


@pytest.mark.parametrize(("current", "target"), [
    (S.DELETE_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED),
])
def test_invalid_updates_are_dropped(current: SegmentState, target: SegmentState) -> None:
    path = {S.COPY_SEGMENT_FINISHED: [S.COPY_SEGMENT_FINISHED],
            S.DELETE_SEGMENT_STARTED: [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED],
            S.COPY_SEGMENT_STARTED: []}[current]
    evs = [copy_started("t", T, 0, SID, 1)] + [update("t", T, 0, SID, s, 2 + i) for i, s in enumerate(path)]
    assert state_after(*evs) == current
    assert state_after(*evs, update("t", T, 0, SID, target, 99)) == current


def test_update_to_copy_started_and_full_record_in_another_state_are_dropped() -> None:
    finished_full = replace(copy_started("t", T, 0, SID, 5), state=S.COPY_SEGMENT_FINISHED)
    img = replay([finished_full])
    assert img.segments == {} and img.dropped == 1
    img = replay([copy_started("t", T, 0, SID, 1), update("t", T, 0, SID, S.COPY_SEGMENT_STARTED, 2)])
    assert img.segments[(T, 0, SID)].event_timestamp_ms == 1 and img.dropped == 1


def test_update_without_its_first_record_is_kept_with_base_missing() -> None:
    img = replay([update("t", T, 0, SID, S.DELETE_SEGMENT_STARTED, 7)])
    seg = img.segments[(T, 0, SID)]
    assert seg.base_missing and seg.state == S.DELETE_SEGMENT_STARTED and seg.start_offset is None
    assert replay([update("t", T, 0, SID, S.DELETE_SEGMENT_STARTED, 7),
                   update("t", T, 0, SID, S.DELETE_SEGMENT_FINISHED, 8)]).segments[(T, 0, SID)].state == \
        S.DELETE_SEGMENT_FINISHED


def test_copy_started_after_delete_finished_starts_over_as_kafka_does() -> None:
    evs = [copy_started("t", T, 0, SID, 1), update("t", T, 0, SID, S.DELETE_SEGMENT_STARTED, 2),
           update("t", T, 0, SID, S.DELETE_SEGMENT_FINISHED, 3)]
    assert state_after(*evs, update("t", T, 0, SID, S.COPY_SEGMENT_FINISHED, 4)) == S.DELETE_SEGMENT_FINISHED
    assert state_after(*evs, copy_started("t", T, 0, SID, 5)) == S.COPY_SEGMENT_STARTED


def test_self_transitions_refresh_the_event_time() -> None:
    seg = replay([copy_started("t", T, 0, SID, 1), update("t", T, 0, SID, S.DELETE_SEGMENT_STARTED, 2),
                  update("t", T, 0, SID, S.DELETE_SEGMENT_STARTED, 9)]).segments[(T, 0, SID)]
    assert seg.state == S.DELETE_SEGMENT_STARTED and seg.event_timestamp_ms == 9


def test_unknown_state_ids_are_dropped() -> None:
    img = replay([copy_started("t", T, 0, SID, 1), update("t", T, 0, SID, 7, 2),
                  PartitionDeleteEvent("t", T, 0, 9, 1, 3)])
    assert img.segments[(T, 0, SID)].state == S.COPY_SEGMENT_STARTED and img.dropped == 2
    assert img.partition_deletes == {}


def test_segments_are_keyed_by_topic_id_partition_and_segment() -> None:
    other_topic, other_seg = uid(8), uid(9)
    img = replay([copy_started("t", T, 0, SID, 1), copy_started("t", T, 1, SID, 1),
                  copy_started("t", other_topic, 0, SID, 1), copy_started("t", T, 0, other_seg, 1),
                  update("t", T, 1, SID, S.COPY_SEGMENT_FINISHED, 2)])
    assert len(img.segments) == 4
    assert img.segments[(T, 1, SID)].state == S.COPY_SEGMENT_FINISHED
    assert img.segments[(T, 0, SID)].state == S.COPY_SEGMENT_STARTED


def test_partition_delete_latest_state() -> None:
    img = replay([PartitionDeleteEvent("t", T, 0, PartitionDeleteState.DELETE_PARTITION_MARKED, 1, 1),
                  PartitionDeleteEvent("t", T, 0, PartitionDeleteState.DELETE_PARTITION_STARTED, 1, 2)])
    assert img.partition_deletes[(T, 0)].state == PartitionDeleteState.DELETE_PARTITION_STARTED


def test_transition_table_is_kafkas() -> None:
    allowed = {(None, S.COPY_SEGMENT_STARTED)} | {(s, s) for s in S} | {
        (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED), (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
        (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED), (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED)}
    for current in (None, *S):
        for target in S:
            assert is_valid_transition(current, target) == ((current, target) in allowed)
