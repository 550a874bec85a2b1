"""Each remote class with its reason, and every rule that keeps a segment out of a plan."""

from __future__ import annotations

import pytest
from remote_builders import DAY, GRACE, NOW, OLD, copy_started, objects_of, run_classify, uid, update

from pipelines.remote_tier.aiven_manifest import ManifestWitness
from pipelines.remote_tier.classify import Lineage, classify_remote
from pipelines.remote_tier.events import SegmentState
from pipelines.remote_tier.metadata_writer import encode_metadata_segments

S = SegmentState
T, SID, OTHER = uid(1), uid(2), uid(3)
LIVE = frozenset({T})


def lifecycle(*states: SegmentState, at: int = OLD, tid=T, sid=SID) -> list:
    evs = [copy_started("orders", tid, 0, sid, at)]
    evs += [update("orders", tid, 0, sid, s, at + i + 1) for i, s in enumerate(states)]
    return evs


def one(findings: list):
    assert len(findings) == 1
    return findings[0]


def test_delete_leaked() -> None:
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED),
                         objects_of("orders", T, 0, SID), live=LIVE))
    assert f.class_name == "remote_delete_leaked" and f.plannable
    assert "DELETE_SEGMENT_FINISHED" in f.reason and "3 object(s) are still listed" in f.reason
    assert (f.bytes, f.objects, f.state) == (300, 3, "DELETE_SEGMENT_FINISHED")
    assert f.garbage_since_ms == OLD + 3


def test_delete_incomplete() -> None:
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
                         objects_of("orders", T, 0, SID), live=LIVE))
    assert f.class_name == "remote_delete_incomplete" and f.plannable and "DELETE_SEGMENT_STARTED" in f.reason


def test_copy_incomplete_of_a_live_topic_after_grace() -> None:
    f = one(run_classify(lifecycle(), objects_of("orders", T, 0, SID, kinds=("log",)), live=LIVE))
    assert f.class_name == "remote_copy_incomplete" and f.plannable and "COPY_SEGMENT_STARTED" in f.reason


def test_live_segment_of_a_live_topic_is_ok_and_never_planned() -> None:
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED), objects_of("orders", T, 0, SID), live=LIVE))
    assert f.class_name == "remote_ok" and not f.plannable and f.garbage_since_ms is None


def test_stray_copy_started_read_last_keeps_a_live_segment_ok() -> None:
    evs = [*lifecycle(S.COPY_SEGMENT_FINISHED), copy_started("orders", T, 0, SID, OLD + 10)]
    f = one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE))
    assert f.class_name == "remote_ok" and not f.plannable and "dropped" in f.reason


def test_deleted_topic_names_both_facts_and_needs_a_deletion_time() -> None:
    evs = lifecycle(S.COPY_SEGMENT_FINISHED)
    f = one(run_classify(evs, objects_of("orders", T, 0, SID)))
    assert f.class_name == "remote_deleted_topic" and not f.plannable
    assert "not a topic of the controller's image" in f.reason and "COPY_SEGMENT_FINISHED" in f.reason
    assert "deletion time is unknown" in f.reason
    f = one(run_classify(evs, objects_of("orders", T, 0, SID), deleted_at={T: NOW - 2 * DAY}))
    assert f.plannable and f.garbage_since_ms == NOW - 2 * DAY
    f = one(run_classify(evs, objects_of("orders", T, 0, SID), deleted_at={T: NOW - GRACE // 2}))
    assert not f.plannable and "grace not elapsed" in f.reason


def test_state_decides_first_for_a_deleted_topic_and_the_reason_names_both() -> None:
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
                         objects_of("orders", T, 0, SID)))
    assert f.class_name == "remote_delete_incomplete" and f.plannable
    assert "DELETE_SEGMENT_STARTED" in f.reason and "not a topic of the controller's image" in f.reason


def test_absent_topic_of_an_incomplete_image_is_not_judged_deleted() -> None:
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED), objects_of("orders", T, 0, SID), complete=False,
                         deleted_at={T: OLD}))
    assert f.class_name == "remote_ok" and not f.plannable and "incomplete controller image" in f.reason


def background() -> list:
    """Metadata of another segment, so that partition 0 is read from offset 0."""
    return lifecycle(S.COPY_SEGMENT_FINISHED, sid=OTHER)


def test_untracked_is_report_only_by_default() -> None:
    f = one(run_classify(background(), objects_of("orders", T, 0, SID), live=LIVE))
    assert f.class_name == "remote_untracked" and not f.plannable
    assert "no metadata record names the segment" in f.reason and "plan_untracked is off" in f.reason
    assert f.state is None and f.garbage_since_ms == OLD


def test_untracked_plannable_only_with_plan_untracked_and_complete_metadata() -> None:
    objs = objects_of("orders", T, 0, SID)
    assert one(run_classify(background(), objs, live=LIVE, plan_untracked=True)).plannable
    finite = one(run_classify(background(), objs, live=LIVE, plan_untracked=True, retention_infinite=False))
    assert not finite.plannable and "may be unrecorded" in finite.reason and "retention" in finite.reason
    unknown_count = one(run_classify(background(), objs, live=LIVE, plan_untracked=True, num_partitions=None))
    assert not unknown_count.plannable and "partition count" in unknown_count.reason
    late = encode_metadata_segments(background(), base_offset=5)
    not_from_zero = one(run_classify([], objs, live=LIVE, plan_untracked=True, segments=late))
    assert not not_from_zero.plannable and "not 0" in not_from_zero.reason


def test_untracked_needs_a_replica_a_grace_newer_than_its_objects() -> None:
    """An object uploaded after the replica was last written has its COPY_SEGMENT_STARTED beyond the read."""
    objs = objects_of("orders", T, 0, SID, modified=NOW - 3 * DAY)
    stale = one(run_classify(background(), objs, live=LIVE, plan_untracked=True, as_of=NOW - 3 * DAY + GRACE // 2))
    assert not stale.plannable and "not a grace period newer" in stale.reason
    unknown = one(run_classify(background(), objs, live=LIVE, plan_untracked=True, as_of=None))
    assert not unknown.plannable and "time is unknown" in unknown.reason


def test_untracked_segment_of_a_deleted_topic() -> None:
    f = one(run_classify(background(), objects_of("gone", uid(7), 0, SID), deleted_at={uid(7): OLD}))
    assert f.class_name == "remote_deleted_topic" and not f.plannable
    assert "no metadata record names the segment" in f.reason and "plan_untracked is off" in f.reason
    assert one(run_classify(background(), objects_of("gone", uid(7), 0, SID), deleted_at={uid(7): OLD},
                            plan_untracked=True)).plannable


def test_copy_incomplete_with_a_hole_after_its_event_is_not_planned() -> None:
    """A hole after COPY_SEGMENT_STARTED may hide its COPY_SEGMENT_FINISHED: the segment may be live."""
    evs = [*lifecycle(), *background()]
    segs = encode_metadata_segments(evs, batch_records=1, segment_batches=1)
    holed = [s for s in segs if s[0] != 1]
    f = one(run_classify([], objects_of("orders", T, 0, SID), live=LIVE, segments=holed))
    assert f.class_name == "remote_copy_incomplete" and not f.plannable and "later event may be missing" in f.reason
    # a hole before its event as well as one after it: the one after still counts
    evs = [*background(), *lifecycle(), *lifecycle(S.COPY_SEGMENT_FINISHED, sid=uid(4))]
    segs = encode_metadata_segments(evs, batch_records=1, segment_batches=1)
    holed = [s for s in segs if s[0] not in (1, 3)]
    f = one(run_classify([], objects_of("orders", T, 0, SID), live=LIVE, segments=holed))
    assert not f.plannable and "later event may be missing" in f.reason
    # a hole before its event hides nothing that could make it live
    evs = [*background(), *lifecycle()]
    segs = encode_metadata_segments(evs, batch_records=1, segment_batches=1)
    holed = [s for s in segs if s[0] != 1]
    assert one(run_classify([], objects_of("orders", T, 0, SID), live=LIVE, segments=holed)).plannable


def test_copy_incomplete_needs_a_replica_a_grace_newer_than_its_event() -> None:
    """A replica last written shortly after COPY_SEGMENT_STARTED may not hold the COPY_SEGMENT_FINISHED yet."""
    f = one(run_classify(lifecycle(), objects_of("orders", T, 0, SID), live=LIVE, as_of=OLD + GRACE // 2))
    assert not f.plannable and "not a grace period newer than the event" in f.reason
    f = one(run_classify(lifecycle(), objects_of("orders", T, 0, SID), live=LIVE, as_of=None))
    assert not f.plannable and "time is unknown" in f.reason


def test_grace_counts_from_the_newest_object() -> None:
    objs = objects_of("orders", T, 0, SID, modified=NOW - GRACE // 2)
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED), objs, live=LIVE))
    assert not f.plannable and "grace not elapsed" in f.reason and f.garbage_since_ms == NOW - GRACE // 2


def test_grace_counts_from_the_latest_event() -> None:
    evs = lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, at=NOW - GRACE // 2)
    f = one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE))
    assert not f.plannable and "grace not elapsed" in f.reason


def test_outside_lineage_is_report_only() -> None:
    evs = lifecycle(S.COPY_SEGMENT_FINISHED)  # epochs ((0, 0),), end offset 99
    lineage = {(T, 0): Lineage({1: 0, 2: 500}, 1000)}
    f = one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE, lineages=lineage))
    assert f.class_name == "remote_outside_lineage" and not f.plannable and "report only" in f.reason
    inside = {(T, 0): Lineage({0: 0, 2: 500}, 1000)}
    assert one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE, lineages=inside)).class_name == \
        "remote_ok"


def test_disagreeing_witnesses_block_the_plan() -> None:
    evs = lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)
    renamed = one(run_classify(evs, objects_of("orders2", T, 0, SID), live=LIVE))
    assert renamed.class_name == "remote_delete_incomplete" and not renamed.plannable
    assert "metadata names topic" in renamed.reason
    moved = one(run_classify(evs, objects_of("orders", T, 0, SID, start=5), live=LIVE))
    assert not moved.plannable and "start offset" in moved.reason
    bad = {(T, 0, SID): "manifest is not JSON"}
    assert not one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE, manifests=bad)).plannable
    other = ManifestWitness(False, False, "orders", T, 0, OTHER, 0)
    f = one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE, manifests={(T, 0, SID): other}))
    assert not f.plannable and "manifest names another segment" in f.reason
    same = ManifestWitness(False, False, "orders", T, 0, SID, 0)
    assert one(run_classify(evs, objects_of("orders", T, 0, SID), live=LIVE, manifests={(T, 0, SID): same})).plannable


def test_bytes_come_from_the_listing_and_error_rows_are_skipped() -> None:
    from pipelines.remote_tier.listing import ListedObject

    objs = [*objects_of("orders", T, 0, SID, size=7), ListedObject("not/a/key", 10**9, OLD)]
    f = one(run_classify(lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED), objs, live=LIVE))
    assert f.bytes == 21 and f.objects == 3 and "not/a/key" not in f.keys


def test_grace_below_the_floor_is_refused() -> None:
    from pipelines.remote_tier.classify import ControllerTopics
    from pipelines.remote_tier.metadata_topic import MetadataCoverage
    from pipelines.remote_tier.replay import replay

    with pytest.raises(ValueError, match="floor"):
        classify_remote(replay([]), [], ControllerTopics(frozenset()), MetadataCoverage({}, 1, True), now_ms=NOW,
                        grace_ms=60_000)


def test_keys_of_one_segment_that_disagree_block_the_plan() -> None:
    evs = lifecycle(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)
    objs = objects_of("orders", T, 0, SID, kinds=("log",)) + objects_of("orders", T, 0, SID, start=7,
                                                                        kinds=("indexes",))
    f = one(run_classify(evs, objs, live=LIVE))
    assert not f.plannable and "keys disagree" in f.reason


def test_copy_incomplete_whose_events_are_in_another_metadata_partition_is_not_planned() -> None:
    """Events written to a partition other than the one Kafka's partitioner picks (the partition count changed):
    the partition Kafka now writes to was not searched for a COPY_SEGMENT_FINISHED."""
    f = one(run_classify(lifecycle(), objects_of("orders", T, 0, SID), live=LIVE, num_partitions=50))
    from pipelines.remote_tier.partitioner import metadata_partition

    assert metadata_partition(T, 0, 50) != 0  # the test writes partition 0
    assert not f.plannable and "not all in the metadata partition" in f.reason
