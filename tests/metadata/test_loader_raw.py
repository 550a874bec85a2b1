"""``MetadataLoader.replay(MetadataLog)`` takes the log's raw iteration: it must replay exactly like entries do."""

from __future__ import annotations

import pytest
from mdrecords import broker, broker_change, change, config, did, encode_log, named, partition, remove, tid, topic

from pipelines.errors import ReplayError
from pipelines.kafka.metadata_codec import make_control_record
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.metadata.image import TOPIC_RESOURCE
from pipelines.metadata.image_delta import raise_on_fault
from pipelines.metadata.loader import MetadataLoader

T1, T2, T3 = tid(1), tid(2), tid(3)
BEGIN, END, ABORT = named("BeginTransactionRecord", name="t"), named("EndTransactionRecord"), named(
    "AbortTransactionRecord", reason="r")
NOOP = named("NoOpRecord")

RECORDS = [
    named("FeatureLevelRecord", name="metadata.version", feature_level=21),
    broker(1, 10, log_dirs=[did(1)], fenced=False), broker(2, 20, log_dirs=[did(2)], fenced=False),
    topic("a", T1), partition(T1, 0, [1, 2], dirs=[did(1), did(2)]), partition(T1, 1, [2, 1]),
    config(TOPIC_RESOURCE, "a", "retention.ms", "1000"), NOOP,
    change(T1, 0, isr=(1,)), change(T1, 0, leader=2), change(T1, 1, leader=-1), NOOP,
    change(T1, 0, replicas=(2, 1), directories=(did(2), did(1))),
    change(T2, 0, isr=(1,)),  # unknown topic: a replay problem
    make_control_record("LEADER_CHANGE", leader_id=1, voters=(), granting_voters=()),
    BEGIN, topic("b", T2), partition(T2, 0, [1]), change(T2, 0, leader=1), END,
    BEGIN, topic("c", T3), ABORT, END,  # END without BEGIN: a replay problem
    broker_change(2, 20, fenced=1), change(T1, 9, leader=1), remove(T1), NOOP,
    BEGIN, topic("d", T3), change(T3, 0, isr=(1,)),  # still open at the end
]


def _replay(source, **kwargs):
    published = []
    loader = MetadataLoader(source="s", publisher=lambda delta, image: published.append(image), **kwargs)
    loader.replay(source)
    image = loader.finish()
    return loader, image, published


@pytest.mark.parametrize("max_delta_records", [1, 3, 1000])
@pytest.mark.parametrize("truncate", [0, 7])
def test_raw_replay_of_a_log_equals_replay_of_its_entries(max_delta_records: int, truncate: int) -> None:
    data = encode_log(RECORDS, batch_size=4)
    data = data[: len(data) - truncate]
    log = iter_metadata_log(data)
    raw_loader, raw_image, raw_published = _replay(log, max_delta_records=max_delta_records)
    listed = iter_metadata_log(data)
    loader, image, published = _replay(list(listed), max_delta_records=max_delta_records)
    assert raw_image == image and raw_published == published
    assert raw_loader.events == loader.events and raw_loader.errors == loader.errors
    assert (raw_loader.records_seen, raw_loader.open_transaction) == (loader.records_seen, loader.open_transaction)
    assert (log.last_offset, log.records, log.trailing_invalid_bytes, log.errors) == (
        listed.last_offset, listed.records, listed.trailing_invalid_bytes, listed.errors)
    assert image.replay_errors and loader.events and "b" in image.topics.by_name  # the mix covers them
    if not truncate:
        assert loader.open_transaction is not None and not log.trailing_invalid_bytes
    else:
        assert log.trailing_invalid_bytes


def test_raw_replay_in_strict_mode_stops_at_the_same_record() -> None:
    data = encode_log(RECORDS, batch_size=4)
    outcomes = []
    for source in (iter_metadata_log(data), list(iter_metadata_log(data))):
        loader = MetadataLoader(fault_handler=raise_on_fault)
        with pytest.raises(ReplayError) as info:
            loader.replay(source)
        outcomes.append((str(info.value), loader.records_seen, loader.errors, loader.events))
    assert outcomes[0] == outcomes[1]
