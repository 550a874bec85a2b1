"""Row converters produce exactly the table columns, with the agreed value forms."""

from __future__ import annotations

import json
import pickle
from datetime import datetime, timedelta, timezone

import pyarrow as pa
from mdrecords import broker, config, did, entries, partition, tid, topic

from pipelines.metadata import rows as rows_module
from pipelines.metadata.events import marked_from_snapshot
from pipelines.metadata.image import BROKER_RESOURCE
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.rows import event_rows, image_rows
from pipelines.tables.schemas import ALL_TABLES

T1 = tid(1)


def _load():
    loader = MetadataLoader(source="test")
    loader.replay(entries([
        broker(1, 4, log_dirs=[did(1)]), broker(2, 4),
        config(BROKER_RESOURCE, "", "log.segment.delete.delay.ms", "90000"),
        config(BROKER_RESOURCE, "2", "log.segment.delete.delay.ms", "5"),
        topic("orders", T1), partition(T1, 0, [1, 2], dirs=[did(1), did(2)]), partition(T1, 1, [2, 1]),
    ]))
    return loader, loader.finish()


def test_image_rows_match_schemas_and_values() -> None:
    _, image = _load()
    rows = image_rows(image, run_id="r1", cluster="c", source="s")
    for table, table_rows in rows.items():
        schema = ALL_TABLES[table]
        assert all(list(r) == list(schema.column_names) for r in table_rows), table
        pa.Table.from_pylist(table_rows, schema=schema.to_arrow())  # types line up
    part0 = rows["controller_partitions"][0]
    assert part0["topic_id"] == str(T1) and part0["directories"] == [str(did(1)), str(did(2))]
    assert part0["metadata_offset"] == 6 and part0["image_complete"] is False
    assert {b["broker_id"]: b["file_delete_delay_ms"] for b in rows["controller_brokers"]} == {1: 90000, 2: 5}
    assert rows["controller_topics"][0]["partition_count"] == 2


def test_event_rows() -> None:
    loader, _ = _load()
    rows = event_rows(loader.events, cluster="c", source="s", run_id="r1")
    assert all(list(r) == list(ALL_TABLES["metadata_events"].column_names) for r in rows)
    created = next(r for r in rows if r["event"] == "topic_created")
    created_ms = next(e for e in loader.events if e.event == "topic_created").timestamp_ms
    assert created["timestamp"].utcoffset() == timedelta(0) and created["topic"] == "orders" and created["offset"] == 4
    assert created["timestamp"] == datetime.fromtimestamp(created_ms / 1000, tz=timezone.utc)
    added = json.loads(next(r for r in rows if r["event"] == "partition_added")["detail"])
    assert added == {"replicas": [1, 2], "directories": [str(did(1)), str(did(2))]}
    pa.Table.from_pylist(rows, schema=ALL_TABLES["metadata_events"].to_arrow())


def test_partition_added_detail_reads_as_the_dict_it_stands_for() -> None:
    loader, _ = _load()
    event = next(e for e in loader.events if e.event == "partition_added" and e.partition == 0)
    as_dict = {"replicas": [1, 2], "directories": [str(did(1)), str(did(2))]}
    assert event.detail == as_dict and as_dict == event.detail and dict(event.detail) == as_dict
    assert event.detail.get("from_snapshot") is None
    marked = marked_from_snapshot(event.detail)
    assert dict(marked) == {**as_dict, "from_snapshot": True} and marked.get("from_snapshot") is True
    assert pickle.loads(pickle.dumps(marked)) == marked


def test_rows_are_the_same_whatever_the_chunk_size(monkeypatch) -> None:
    loader, image = _load()
    whole = image_rows(image, run_id="r1", cluster="c", source="s"), event_rows(loader.events, cluster="c",
                                                                             source="s", run_id="r1")
    monkeypatch.setattr(rows_module._Builder, "CHUNK", 2)
    chunked = image_rows(image, run_id="r1", cluster="c", source="s"), event_rows(loader.events, cluster="c",
                                                                               source="s", run_id="r1")
    assert chunked == whole and len(whole[1]) > 2 and len(whole[0]["controller_partitions"]) == 2


def test_broker_configs_rows_hold_every_brokers_own_values_registered_or_not() -> None:
    loader = MetadataLoader(source="test")
    loader.replay(entries([
        broker(1, 4),
        config(BROKER_RESOURCE, "", "log.segment.delete.delay.ms", "90000"),
        config(BROKER_RESOURCE, "3", "log.segment.delete.delay.ms", " 86400000 "),  # broker 3 is not registered
        config(BROKER_RESOURCE, "3", "log.retention.ms", "oops"),
    ]))
    rows = image_rows(loader.finish(), run_id="r1", cluster="c", source="s")
    assert [b["broker_id"] for b in rows["controller_brokers"]] == [1]
    assert [(r["broker_id"], r["name"], r["value"], r["long_value"]) for r in rows["controller_broker_configs"]] == [
        (None, "log.segment.delete.delay.ms", "90000", 90_000),
        (3, "log.retention.ms", "oops", None),
        (3, "log.segment.delete.delay.ms", " 86400000 ", 86_400_000),
    ]
