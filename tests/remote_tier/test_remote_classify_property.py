"""Random event sequences: the class is a function of Kafka's latest state, and a live segment of a live topic is
never plannable, whatever the history, the clocks and the switches."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from remote_builders import DAY, NOW, copy_started, objects_of, run_classify, uid, update

from pipelines.remote_tier.classify import PLANNABLE_REMOTE_CLASSES
from pipelines.remote_tier.events import SegmentState

S = SegmentState
T, SID = uid(1), uid(2)
ALLOWED = {(None, S.COPY_SEGMENT_STARTED), (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
           (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED), (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
           (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED)} | {(s, s) for s in S}


def reference_state(steps: list[tuple[bool, int]]) -> SegmentState | None:
    """Kafka's cache, written out plainly: full records only start a copy; updates follow the transition table,
    and an update with nothing before it is kept (the one documented difference)."""
    state: SegmentState | None = None
    for full, raw in steps:
        if raw not in S._value2member_map_:
            continue
        target = S(raw)
        if full:
            if target == S.COPY_SEGMENT_STARTED and state in (None, S.COPY_SEGMENT_STARTED,
                                                              S.DELETE_SEGMENT_FINISHED):
                state = target
        elif target == S.COPY_SEGMENT_STARTED:
            continue
        elif state is None or (state, target) in ALLOWED:
            state = target
    return state


EXPECTED = {
    S.DELETE_SEGMENT_FINISHED: "remote_delete_leaked",
    S.DELETE_SEGMENT_STARTED: "remote_delete_incomplete",
    S.COPY_SEGMENT_STARTED: "remote_copy_incomplete",
}


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.tuples(st.booleans(), st.integers(0, 4)), max_size=8),
    live=st.booleans(),
    complete=st.booleans(),
    deleted_age=st.none() | st.integers(0, 5 * DAY),
    event_age=st.integers(0, 5 * DAY),
    object_age=st.integers(-DAY, 5 * DAY),
    replica_lag=st.none() | st.integers(0, 5 * DAY),
    plan_untracked=st.booleans(),
    infinite=st.booleans(),
)
def test_class_is_a_function_of_the_latest_state(steps, live, complete, deleted_age, event_age, object_age,
                                                 replica_lag, plan_untracked, infinite) -> None:
    start = NOW - event_age
    events = [replace(copy_started("orders", T, 0, SID, start + i), state=raw) if full else
              update("orders", T, 0, SID, raw, start + i) for i, (full, raw) in enumerate(steps)]
    other = copy_started("orders", T, 1, uid(9), start)  # keeps partition 0 of the metadata topic non-empty
    findings = run_classify(
        [other, *events], objects_of("orders", T, 0, SID, modified=NOW - object_age),
        live=frozenset({T}) if live else frozenset(), complete=complete,
        deleted_at={} if deleted_age is None else {T: NOW - deleted_age},
        as_of=None if replica_lag is None else NOW - replica_lag, plan_untracked=plan_untracked,
        retention_infinite=infinite)
    assert len(findings) == 1
    f = findings[0]
    state = reference_state(steps)
    assert f.state == (None if state is None else state.name)
    deleted = not live and complete
    if state in EXPECTED:
        assert f.class_name == EXPECTED[state]
    elif deleted:
        assert f.class_name == "remote_deleted_topic"
    elif state is None:
        assert f.class_name == "remote_untracked"
    else:
        assert f.class_name == "remote_ok"
    if state == S.COPY_SEGMENT_FINISHED and not deleted:
        assert not f.plannable, "a live segment of a topic not proven deleted was planned"
    if f.plannable:
        assert f.class_name in PLANNABLE_REMOTE_CLASSES
        assert f.garbage_since_ms is not None and NOW - f.garbage_since_ms >= DAY
        assert NOW - (NOW - object_age) >= DAY
        if state is None:
            assert plan_untracked and infinite
