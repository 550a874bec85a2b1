"""The run's limits on remote plans (owned prefix, incomplete listing), the quarantine never listed, and the split
the Spark path relies on: replaying each (topic id, partition) group alone gives the states of one replay of all."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from remote_builders import OLD, copy_started, objects_of, run_classify, uid, update

from pipelines.config.load import config_from_dict
from pipelines.remote_tier.events import PartitionDeleteEvent, SegmentEvent
from pipelines.remote_tier.metadata_sources import event_of_row, event_row, events_in_order
from pipelines.remote_tier.object_listing import list_location, open_location
from pipelines.remote_tier.replay import replay
from pipelines.remote_tier.run_limits import limit_findings

T = uid(1)


def _deleted_topic_findings() -> list:
    """Two segments of a deleted topic, both plannable on their own."""
    objects = objects_of("gone", T, 0, uid(2)) + objects_of("gone", T, 1, uid(3))
    events = [e for p, sid in ((0, uid(2)), (1, uid(3)))
              for e in (copy_started("gone", T, p, sid, OLD), update("gone", T, p, sid, 1, OLD + 1))]
    return run_classify(events, objects, deleted_at={T: OLD})


def test_the_segments_are_plannable_on_their_own() -> None:
    assert [f.plannable for f in _deleted_topic_findings()] == [True, True]


def test_without_owned_prefix_nothing_is_plannable() -> None:
    for unset in (None, ""):
        out = list(limit_findings(_deleted_topic_findings(), owned_prefix=unset))
        assert not any(f.plannable for f in out)
        assert all("not plannable: " in f.reason and "owned_prefix is unset" in f.reason for f in out)


def test_a_segment_with_a_key_outside_owned_prefix_is_not_plannable() -> None:
    out = list(limit_findings(_deleted_topic_findings(), owned_prefix=f"gone-{T}/1/"))
    assert [f.plannable for f in out] == [False, True]
    assert "outside remote_tier.owned_prefix" in out[0].reason


def test_an_incomplete_listing_plans_nothing() -> None:
    out = list(limit_findings(_deleted_topic_findings(), owned_prefix=f"gone-{T}/",
                              incomplete="1 folder could not be read"))
    assert not any(f.plannable for f in out) and all("listing is incomplete" in f.reason for f in out)


def test_the_quarantine_is_never_listed(tmp_path: Path) -> None:
    """Aiven without a key prefix: the default quarantine folder lies inside the tier's area."""
    tier = config_from_dict({"cluster": "c", "warehouse": "/w", "remote_tier": {
        "layout": "aiven", "location": f"file://{tmp_path}"}}).remote_tier
    for key in objects_of("gone", T, 0, uid(2)):
        for folder in ("", ".logdir-gc-quarantine/plan-1/"):
            path = tmp_path / (folder + key.key)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
    loc = open_location(tier.location)
    listed = [item.key for item in list_location(loc, "aiven", exclude=tier.relative_quarantine())]
    assert len(listed) == 3 and not any(k.startswith(".logdir-gc-quarantine/") for k in listed)


_ids = st.sampled_from([uid(1), uid(2)])
_event = st.one_of(
    st.builds(lambda tid, p, s, state, full, mp, at: SegmentEvent("t", tid, p, uid(10 + s), state, 1, at, full,
                                                                  start_offset=0 if full else None,
                                                                  end_offset=9 if full else None,
                                                                  metadata_partition=mp),
              _ids, st.integers(0, 1), st.integers(0, 3), st.integers(0, 4), st.booleans(), st.integers(0, 2),
              st.integers(0, 10**6)),
    st.builds(lambda tid, p, state, mp, at: PartitionDeleteEvent("t", tid, p, state, 1, at, mp),
              _ids, st.integers(0, 1), st.integers(0, 3), st.integers(0, 2), st.integers(0, 10**6)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_event, max_size=40))
def test_replaying_each_topic_partition_alone_equals_one_replay(events: list) -> None:
    """Events of a segment spread over metadata partitions, unknown states, full records in any state: the union of
    the per-(topic id, partition) replays equals the global replay (what the Spark co-group computes)."""
    rows = [event_row(e) | {"offset": i} for i, e in enumerate(events)]
    whole = replay(events_in_order(rows))
    groups: dict = {}
    for row in rows:
        groups.setdefault((row["topic_id"], row["partition"]), []).append(row)
    segments, deletes = {}, {}
    for group in groups.values():
        image = replay(events_in_order(group))
        segments.update(image.segments)
        deletes.update(image.partition_deletes)
    assert segments == dict(whole.segments) and deletes == dict(whole.partition_deletes)


@given(_event)
def test_an_event_row_round_trips(event) -> None:
    assert event_of_row(event_row(event)) == event

