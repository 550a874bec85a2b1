"""Partition changes folded per delta (``fold_change`` / ``settle_change``) give exactly the registrations that
``merge_partition_change`` gives record by record, whatever the mix of changes, where deltas are cut, and which other
records (PartitionRecord, ClearElrRecord, replica moves) read the pending state in between."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.partition_merge import clear_elr, merge_partition_change, partition_from_record
from tests.metadata.mdrecords import change, did, encode_log, entries, named, partition, tid, topic

T = tid(1)
INTS = st.lists(st.integers(0, 3), max_size=3, unique=True).map(tuple)
CHANGE = st.fixed_dictionaries({}, optional={
    "isr": st.one_of(st.none(), INTS),
    "leader": st.sampled_from([-2, -1, 0, 1, 2]),
    "leader_recovery_state": st.sampled_from([-1, 0, 1]),
    "eligible_leader_replicas": st.one_of(st.none(), INTS),
    "last_known_elr": st.one_of(st.none(), INTS),
})
OP = st.one_of(
    st.tuples(st.just("change"), st.integers(0, 2), CHANGE),
    st.tuples(st.just("move"), st.integers(0, 2), st.permutations([0, 1, 2])),
    st.tuples(st.just("clear_elr"), st.just(0), st.just(None)),
    st.tuples(st.just("recreate"), st.integers(0, 2), st.just(None)),
)


def _records_and_expected(ops: list) -> tuple[list, dict]:
    records = [topic("t", T)]
    expected = {}
    for p in range(3):
        rec = partition(T, p, [0, 1, 2], dirs=[did(0), did(1), did(2)], version=2)
        records.append(rec)
        expected[p] = partition_from_record(rec.fields)
    for kind, p, arg in ops:
        if kind == "change":
            rec = change(T, p, **arg)
            expected[p] = merge_partition_change(expected[p], rec.fields)
        elif kind == "move":
            rec = change(T, p, replicas=tuple(arg), directories=tuple(did(b) for b in arg))
            expected[p] = merge_partition_change(expected[p], rec.fields)
        elif kind == "clear_elr":
            rec = named("ClearElrRecord", topic_name="t")
            expected = {q: clear_elr(old) for q, old in expected.items()}
        else:
            rec = partition(T, p, [2, 0, 1], dirs=[did(2), did(0), did(1)], leader_epoch=7, partition_epoch=9)
            expected[p] = partition_from_record(rec.fields)
        records.append(rec)
    return records, expected


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(OP, max_size=40), max_delta=st.integers(1, 12), raw=st.booleans())
def test_folded_changes_equal_record_by_record_merges(ops: list, max_delta: int, raw: bool) -> None:
    records, expected = _records_and_expected(ops)
    loader = MetadataLoader(max_delta_records=max_delta)
    loader.replay(iter_metadata_log(encode_log(records, batch_size=3)) if raw else entries(records))
    image = loader.finish()
    assert not image.replay_errors
    assert dict(image.topics.by_id[T].partitions) == expected
