"""Rows for the ``controller_*`` and ``metadata_events`` Delta tables (``pipelines.tables.schemas``).

Built column by column into ``pyarrow.Table``s of the tables' declared schemas (:func:`image_tables`,
:func:`event_table`): a 100k-topic image has 633k partitions and 794k events, and a dict per row held more
memory than the image itself. :func:`image_rows` and :func:`event_rows` give the same rows as dicts (ids
base64url strings, timestamps tz-aware UTC ``datetime``s, ``detail`` a JSON string).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import BROKER_RESOURCE, MetadataImage

if TYPE_CHECKING:
    import pyarrow as pa

#: Broker-level name of the topic config ``file.delete.delay.ms`` (ServerTopicConfigSynonyms).
DELETE_DELAY_KEY = "log.segment.delete.delay.ms"


def _micros(ms: int | None) -> int | None:
    """Epoch milliseconds as the microseconds of a ``timestamp`` column (None for an unknown time)."""
    return None if ms is None or ms < 0 else ms * 1000


_KAFKA_LONG = re.compile(r"[+-]?[0-9]+")


def kafka_long(value: str | None) -> int | None:
    """``value`` read as Kafka reads a LONG config (``ConfigDef``: trimmed, then ``Long.parseLong``); None if it is
    not one. Detect, the plan's re-check and the tables all read broker configs through this one function."""
    if value is None:
        return None
    text = value.strip()
    if not _KAFKA_LONG.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def file_delete_delay_ms(image: MetadataImage, broker_id: int | None) -> int | None:
    """Effective dynamic ``log.segment.delete.delay.ms`` (broker, then cluster default); None when not set.

    The broker's own value is read whether or not the broker is registered: a ZooKeeper-mode broker that is stopped
    has no registration but keeps its dynamic configs."""
    return kafka_long(image.broker_config(broker_id, DELETE_DELAY_KEY))


class _Builder:
    """Rows of one table of the declared schemas, added column by column and turned into Arrow record batches
    every ``CHUNK`` rows, so the Python lists never hold more than one chunk."""

    CHUNK = 65_536

    def __init__(self, name: str, columns: Sequence[str], constants: dict[str, Any]) -> None:
        from pipelines.tables.schemas import ALL_TABLES

        self.schema = ALL_TABLES[name].to_arrow()
        self.constants = constants
        self.columns: dict[str, list[Any]] = {c: [] for c in columns}
        self.batches: list[pa.RecordBatch] = []
        self.pending = 0

    def row_added(self) -> None:
        self.pending += 1
        if self.pending >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        arrays = [pa.array(self.columns[f.name], type=f.type) if f.name in self.columns
                  else pa.repeat(pa.scalar(self.constants[f.name], type=f.type), self.pending)
                  for f in self.schema]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        for values in self.columns.values():
            values.clear()
        self.pending = 0

    def table(self) -> pa.Table:
        import pyarrow as pa

        if self.pending or not self.batches:
            self._flush()
        return pa.Table.from_batches(self.batches, schema=self.schema)


def _text(cache: dict[Any, str]) -> Callable[[Iterable[Any]], list[str]]:
    """Dir ids as strings, each distinct id converted once (a fleet has a few thousand, in millions of places)."""

    def convert(ids: Iterable[Any]) -> list[str]:
        out = []
        for d in ids:
            text = cache.get(d)
            if text is None:
                text = cache[d] = str(d)
            out.append(text)
        return out

    return convert


def image_tables(image: MetadataImage, *, run_id: str, cluster: str, source: str) -> dict[str, pa.Table]:
    """``{"controller_topics": ..., "controller_partitions": ..., "controller_brokers": ...,
    "controller_broker_configs": ...}`` as Arrow tables.

    Topics by name, partitions by (topic, partition), brokers by id, broker configs by (broker id, name). Topics
    without a topic id (ZooKeeper mode) get rows with a null ``topic_id``.
    """
    constants = {"run_id": run_id, "cluster": cluster, "metadata_offset": image.last_offset,
                 "image_complete": image.complete, "source": source}
    with_id = [(str(t.topic_id), t) for t in image.topics.by_id.values()]
    without_id = [(None, t) for t in image.topics_without_id.values()]
    dir_text = _text({})
    topics = _Builder("controller_topics", ("topic_id", "topic", "partition_count", "deletion_queued_at"), constants)
    parts = _Builder("controller_partitions", (
        "topic_id", "topic", "partition", "replicas", "isr", "leader", "leader_epoch", "partition_epoch",
        "adding_replicas", "removing_replicas", "directories"), constants)
    t, p = topics.columns, parts.columns
    for topic_id, topic in sorted(with_id + without_id, key=lambda pair: pair[1].name):
        deletion = image.topic_deletions.get(topic.name)
        t["topic_id"].append(topic_id)
        t["topic"].append(topic.name)
        t["partition_count"].append(len(topic.partitions))
        t["deletion_queued_at"].append(None if deletion is None else _micros(deletion.queued_ms))
        topics.row_added()
        for partition in sorted(topic.partitions.values(), key=lambda x: x.partition):
            p["topic_id"].append(topic_id)
            p["topic"].append(topic.name)
            p["partition"].append(partition.partition)
            p["replicas"].append(partition.replicas)
            p["isr"].append(partition.isr)
            p["leader"].append(partition.leader)
            p["leader_epoch"].append(partition.leader_epoch)
            p["partition_epoch"].append(partition.partition_epoch)
            p["adding_replicas"].append(partition.adding_replicas)
            p["removing_replicas"].append(partition.removing_replicas)
            p["directories"].append(dir_text(partition.directories))
            parts.row_added()
    brokers = _Builder("controller_brokers", (
        "broker_id", "broker_epoch", "fenced", "in_controlled_shutdown", "log_dirs", "rack", "file_delete_delay_ms"),
        constants)
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        for name, value in (("broker_id", b.broker_id), ("broker_epoch", b.epoch), ("fenced", b.fenced),
                            ("in_controlled_shutdown", b.in_controlled_shutdown), ("log_dirs", dir_text(b.log_dirs)),
                            ("rack", b.rack), ("file_delete_delay_ms", file_delete_delay_ms(image, b.broker_id))):
            brokers.columns[name].append(value)
        brokers.row_added()
    configs = _Builder("controller_broker_configs", ("broker_id", "name", "value", "long_value"), constants)
    for (resource_type, name), values in sorted(image.configs.resources.items()):
        if resource_type != BROKER_RESOURCE or not (name == "" or (name.isascii() and name.isdigit())):
            continue
        for key, value in sorted(values.items()):
            for column, cell in (("broker_id", int(name) if name else None), ("name", key), ("value", value),
                                 ("long_value", kafka_long(value))):
                configs.columns[column].append(cell)
            configs.row_added()
    return {"controller_topics": topics.table(), "controller_partitions": parts.table(),
            "controller_brokers": brokers.table(), "controller_broker_configs": configs.table()}


def image_rows(image: MetadataImage, *, run_id: str, cluster: str, source: str) -> dict[str, list[dict[str, Any]]]:
    """:func:`image_tables` as lists of dicts."""
    tables = image_tables(image, run_id=run_id, cluster=cluster, source=source)
    return {name: table.to_pylist() for name, table in tables.items()}


def event_table(events: Iterable[MetadataEvent], *, cluster: str, source: str, run_id: str) -> pa.Table:
    """``metadata_events`` rows as an Arrow table, in the events' order."""
    out = _Builder("metadata_events", ("offset", "timestamp", "event", "topic_id", "topic", "partition", "detail"),
                   {"cluster": cluster, "source": source, "run_id": run_id})
    c = out.columns
    dumps = json.JSONEncoder(sort_keys=True).encode
    for e in events:
        c["offset"].append(e.offset)
        c["timestamp"].append(_micros(e.timestamp_ms))
        c["event"].append(e.event)
        c["topic_id"].append(None if e.topic_id is None else str(e.topic_id))
        c["topic"].append(e.topic)
        c["partition"].append(e.partition)
        c["detail"].append(dumps(dict(e.detail or {})))
        out.row_added()
    return out.table()


def event_rows(events: Iterable[MetadataEvent], *, cluster: str, source: str, run_id: str) -> list[dict[str, Any]]:
    """:func:`event_table` as a list of dicts."""
    return event_table(events, cluster=cluster, source=source, run_id=run_id).to_pylist()
