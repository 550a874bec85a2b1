"""A listing error row of a segment's key keeps that segment out of plans; a key fitting no layout is never planned."""

from __future__ import annotations

from remote_builders import GRACE, NOW, OLD, aiven_key, copy_started, objects_of, uid, update

from pipelines.remote_tier.classify import ControllerTopics, classify_remote
from pipelines.remote_tier.events import SegmentState
from pipelines.remote_tier.metadata_topic import MetadataCoverage, read_replica_segments
from pipelines.remote_tier.metadata_writer import encode_metadata_segments
from pipelines.remote_tier.object_listing import ListingProblem, listing_rows
from pipelines.remote_tier.replay import replay

T, SID = uid(1), uid(2)


def _classify(items: list) -> list:
    events = [copy_started("orders", T, 0, SID, OLD), update("orders", T, 0, SID, SegmentState.COPY_SEGMENT_FINISHED,
                                                                OLD + 1)]
    read = read_replica_segments(0, encode_metadata_segments(events), as_of_ms=NOW, source="replica")
    coverage = MetadataCoverage.from_replicas([read], 1, True)
    controller = ControllerTopics(frozenset(), True, {T: OLD})  # the topic was deleted a month ago
    return classify_remote(replay(coverage.events()), listing_rows(items, "aiven"), controller, coverage,
                           now_ms=NOW, grace_ms=GRACE)


def test_a_segment_of_a_deleted_topic_is_plannable_when_every_key_was_listed() -> None:
    [f] = _classify(objects_of("orders", T, 0, SID))
    assert f.class_name == "remote_deleted_topic" and f.plannable


def test_an_unreadable_listing_entry_of_one_key_keeps_its_segment_out_of_plans() -> None:
    """The listing lies about one key (no last-modified time): the segment's other keys alone must not plan it."""
    good = objects_of("orders", T, 0, SID, kinds=("log", "rsm-manifest"))
    bad = ListingProblem(aiven_key("orders", T, 0, SID, 0, "indexes"), "the listing gives no last-modified time", 7)
    [f] = _classify([*good, bad])
    assert f.class_name == "remote_deleted_topic" and not f.plannable
    assert "error row of the listing" in f.reason and "last-modified" in f.reason
    rows = list(listing_rows([bad], "aiven"))
    assert rows[0].error and rows[0].named_segment == (T, 0, SID) and rows[0].segment is None


def test_a_key_that_fits_no_layout_is_an_error_row_and_never_a_finding() -> None:
    stray = ListingProblem("orders-not-a-topic-folder/x.log", "unreadable", 5)
    rows = list(listing_rows([stray], "aiven"))
    assert rows[0].error == "unreadable" and rows[0].named_segment is None
    assert _classify([stray]) == []
