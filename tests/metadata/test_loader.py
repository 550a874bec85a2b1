"""MetadataLoader: transactions, and the property that where deltas are cut never changes the image."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from mdrecords import broker, broker_change, change, config, did, entries, named, partition, remove, tid, topic

from pipelines.metadata.image import TOPIC_RESOURCE
from pipelines.metadata.loader import MetadataLoader

T1, T2 = tid(1), tid(2)
BEGIN, END, ABORT = named("BeginTransactionRecord", name="t"), named("EndTransactionRecord"), named(
    "AbortTransactionRecord", reason="r")


def run(records, **kwargs):
    loader = MetadataLoader(**kwargs)
    loader.replay(entries(records))
    return loader, loader.finish()


def test_transaction_applied_as_one_unit_and_published_once() -> None:
    published = []
    _loader, image = run([topic("a", T1), BEGIN, topic("b", T2), partition(T2, 0, [1]), END],
                        publisher=lambda delta, img: published.append(set(img.topics.by_name)), max_delta_records=1)
    assert set(image.topics.by_name) == {"a", "b"} and image.last_offset == 4
    assert published == [{"a"}, {"a", "b"}]


def test_abort_discards_records_and_events_since_begin() -> None:
    loader, image = run([topic("a", T1), BEGIN, topic("b", T2), remove(T1), ABORT, partition(T1, 0, [1])])
    assert set(image.topics.by_name) == {"a"} and 0 in image.topics.by_name["a"].partitions
    assert [e.event for e in loader.events] == ["topic_created", "partition_added"]
    assert image.last_offset == 5 and not image.replay_errors


def test_misplaced_markers_are_reported() -> None:
    _loader, image = run([END, ABORT, BEGIN, topic("a", T1), BEGIN, END])
    assert [p.record for p in image.replay_errors] == [
        "EndTransactionRecord", "AbortTransactionRecord", "BeginTransactionRecord",
    ]
    assert [p.offset for p in image.replay_errors] == [0, 1, 4]
    assert "a" in image.topics.by_name  # the nested Begin was ignored, the End closed the transaction


def test_unfinished_transaction_is_not_applied() -> None:
    loader, image = run([topic("a", T1), BEGIN, topic("b", T2)])
    assert set(image.topics.by_name) == {"a"} and loader.open_transaction == 1 and image.last_offset == 0


# -- property: cutting deltas anywhere yields the same image and events -----------------------------------
def scenario(seed: int, length: int) -> list:
    """A valid random history: topics come and go, partitions move between brokers and directories."""
    rng = random.Random(seed)
    out: list = [broker(b, 1, log_dirs=[did(b)]) for b in (1, 2, 3)]
    live: dict = {}
    next_id = 1
    in_txn = False
    for _ in range(length):
        op = rng.random()
        if op < 0.2 or not live:
            t = tid(next_id)
            name = f"t{next_id % 4}"  # names get reused after removal
            if name in {n for n, _ in live.values()}:
                continue
            next_id += 1
            live[t] = (name, 0)
            out.append(topic(name, t))
        elif op < 0.45:
            t = rng.choice(list(live))
            name, count = live[t]
            reps = rng.sample([1, 2, 3], 2)
            out.append(partition(t, count, reps, dirs=[did(r) for r in reps] if rng.random() < 0.5 else ()))
            live[t] = (name, count + 1)
        elif op < 0.7:
            t = rng.choice(list(live))
            name, count = live[t]
            if count:
                fields = rng.choice([{"isr": [1]}, {"leader": -1}, {"leader": 2}, {},
                                     {"replicas": [1, 2, 3], "directories": [did(1), did(2), did(3)]}])
                out.append(change(t, rng.randrange(count), **fields))
        elif op < 0.8:
            t = rng.choice(list(live))
            del live[t]
            out.append(remove(t))
        elif op < 0.87:
            name = rng.choice([n for n, _ in live.values()])
            out.append(config(TOPIC_RESOURCE, name, "retention.ms", rng.choice(["1", "2", None])))
        elif op < 0.92:
            out.append(broker_change(rng.choice([1, 2, 3]), 1, fenced=rng.choice([-1, 0, 1])))
        elif op < 0.96 and not in_txn:
            out.append(named("BeginTransactionRecord", name="x"))
            in_txn = True
        elif in_txn:
            out.append(named("EndTransactionRecord"))
            in_txn = False
        else:
            out.append(named("NoOpRecord"))
    if in_txn:
        out.append(named("EndTransactionRecord"))
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), length=st.integers(0, 60), cuts=st.lists(st.integers(0, 80), max_size=20))
def test_any_delta_boundaries_yield_the_same_image(seed: int, length: int, cuts: list[int]) -> None:
    records = scenario(seed, length)
    reference_loader, reference = run(records, max_delta_records=10**9)
    assert not reference.replay_errors, reference.replay_errors
    loader = MetadataLoader(max_delta_records=1 + (seed % 7))
    cut_set = set(cuts)
    for i, entry in enumerate(entries(records)):
        loader.feed(entry)
        if i in cut_set:
            loader.flush()
    image = loader.finish()
    assert image == reference
    assert loader.events == reference_loader.events
