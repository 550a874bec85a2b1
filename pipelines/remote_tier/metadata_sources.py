"""Where ``__remote_log_metadata`` replicas are, and reading one through fsspec (a Spark task reads one each).

Sources, in ``remote_tier.metadata``'s terms: ``source`` (a directory holding copied ``__remote_log_metadata-N``
replica directories, a path or an fsspec URL), ``bootstrap_servers`` (a live cluster, one
:class:`~pipelines.remote_tier.metadata_consumer.LiveSource` per partition), or by default the replicas the crawled
brokers hold in their log dirs. A replica is read whole, segment file by segment file (:func:`read_replica_at`); a
local one through :func:`~pipelines.remote_tier.metadata_topic.read_replica` (mmap), another through fsspec into
memory, one segment file at a time.

A replica is summed up as a :class:`~pipelines.remote_tier.metadata_topic.PartitionRead` without its events
(``events_read`` counts them), which is what :class:`~pipelines.remote_tier.metadata_topic.MetadataCoverage`
needs on the driver; the events themselves travel as rows (:func:`event_row`, :func:`event_of_row`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import PartitionDeleteEvent, SegmentEvent
from pipelines.remote_tier.metadata_consumer import LiveSource, read_live
from pipelines.remote_tier.metadata_topic import METADATA_TOPIC, PartitionRead, read_replica, read_replica_segments

__all__ = ["ReplicaSource", "event_of_row", "event_row", "events_in_order", "find_replicas", "read_replica_at",
           "summary_of_row", "summary_row"]

_DIR = re.compile(re.escape(METADATA_TOPIC) + r"-(0|[1-9]\d{0,9})")
_SEGMENT = re.compile(r"(\d{20})\.log")


@dataclass(frozen=True)
class ReplicaSource:
    """One ``__remote_log_metadata-N`` directory: its URL (or path) and the fsspec options to open it."""

    url: str
    metadata_partition: int
    storage_options: Mapping[str, Any] = field(default_factory=dict)


def _is_local(url: str) -> bool:
    return urlparse(url).scheme.lower() in ("", "file")


def _local_path(url: str) -> str:
    return urlparse(url).path if url.startswith("file://") else url


def find_replicas(root: str, storage_options: Mapping[str, Any] | None = None) -> list[ReplicaSource]:
    """The replica directories directly under ``root`` (a log dir, or a directory of copied replicas), by name.

    A missing ``root`` has none. Raises OSError when ``root`` cannot be listed.
    """
    import fsspec

    options = dict(storage_options or {})
    fs, path = fsspec.core.url_to_fs(root, **options)
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError:
        return []
    found = []
    for entry in entries:
        name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
        m = _DIR.fullmatch(name)
        if m is not None and entry.get("type") == "directory" and not entry.get("islink"):
            found.append(ReplicaSource(f"{root.rstrip('/')}/{name}", int(m.group(1)), options))
    return sorted(found, key=lambda s: s.url)


def read_replica_at(source: ReplicaSource | LiveSource) -> PartitionRead:
    """Read one replica (local: mmap'd files; elsewhere: one segment file in memory at a time), or one partition of
    a live cluster's topic (:func:`~pipelines.remote_tier.metadata_consumer.read_live`).

    Raises:
        OSError: the directory or a segment file cannot be read, or the live cluster cannot be reached.
    """
    if isinstance(source, LiveSource):
        return read_live(source)
    if _is_local(source.url):
        return read_replica(_local_path(source.url))
    import fsspec

    from pipelines.remote_tier.object_listing import modified_ms

    fs, path = fsspec.core.url_to_fs(source.url, **dict(source.storage_options))
    segments, newest = [], None
    for entry in fs.ls(path, detail=True):
        name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
        m = _SEGMENT.fullmatch(name)
        if m is None or entry.get("type") != "file":
            continue
        segments.append((int(m.group(1)), entry["name"]))
        mtime = modified_ms(entry)
        newest = mtime if newest is None or (mtime is not None and mtime > newest) else newest
    reads = []
    for base, name in sorted(segments):  # one file in memory at a time; the events are what is kept
        reads.append((base, fs.cat_file(name)))
    return read_replica_segments(source.metadata_partition, reads, source=source.url, as_of_ms=newest)


def summary_row(read: PartitionRead, read_error: str | None = None) -> dict[str, Any]:
    """The replica without its events, as a row (``problems`` as JSON)."""
    return {"source": read.source, "metadata_partition": read.metadata_partition, "first_offset": read.first_offset,
            "last_offset": read.last_offset, "unreliable_from": read.unreliable_from,
            "unreliable_last": read.unreliable_last, "as_of_ms": read.as_of_ms, "events_read": len(read.events),
            "problems": json.dumps(list(read.problems)), "read_error": read_error}


def summary_of_row(row: Mapping[str, Any]) -> PartitionRead:
    """:func:`summary_row` back to a :class:`PartitionRead` (no events; ``events_read`` kept)."""
    problems = tuple(json.loads(row["problems"] or "[]"))
    if row.get("read_error"):
        problems += (f"not read: {row['read_error']}",)
    return PartitionRead(row["metadata_partition"], row["source"], row["first_offset"], row["last_offset"], (),
                         row["unreliable_from"], row["unreliable_last"], problems, row["as_of_ms"],
                         events_read=row["events_read"] or 0)


def event_row(e: SegmentEvent | PartitionDeleteEvent) -> dict[str, Any]:
    """One event as a row (ids as Kafka's text)."""
    row: dict[str, Any] = {"topic": e.topic, "topic_id": str(e.topic_id), "partition": e.partition,
                           "state": e.state, "broker_id": e.broker_id, "event_ms": e.event_timestamp_ms,
                           "metadata_partition": e.metadata_partition, "offset": e.offset}
    if isinstance(e, PartitionDeleteEvent):
        return {**row, "segment_id": None, "full": None}
    return {**row, "segment_id": str(e.segment_id), "full": e.full, "start_offset": e.start_offset,
            "end_offset": e.end_offset, "size": e.size, "max_timestamp_ms": e.max_timestamp_ms,
            "leader_epochs": json.dumps([list(p) for p in e.leader_epochs]) if e.full else None}


def event_of_row(row: Mapping[str, Any], ids: dict[str, Uuid] | None = None) -> SegmentEvent | PartitionDeleteEvent:
    """:func:`event_row` back to the event (exactly: a round trip is the identity but for custom metadata).
    ``ids``: Uuids already parsed, by text (a group's events share their topic id, a segment's events its id)."""
    ids = {} if ids is None else ids

    def uuid(text: str) -> Uuid:
        if text not in ids:
            ids[text] = Uuid.from_string(text)
        return ids[text]

    topic_id = uuid(row["topic_id"])
    if row["segment_id"] is None:
        return PartitionDeleteEvent(row["topic"], topic_id, row["partition"], row["state"], row["broker_id"],
                                    row["event_ms"], row["metadata_partition"], row["offset"])
    epochs = tuple((e, o) for e, o in json.loads(row["leader_epochs"])) if row.get("leader_epochs") else ()
    return SegmentEvent(row["topic"], topic_id, row["partition"], uuid(row["segment_id"]), row["state"],
                        row["broker_id"], row["event_ms"], bool(row["full"]), start_offset=row.get("start_offset"),
                        end_offset=row.get("end_offset"), size=row.get("size"),
                        max_timestamp_ms=row.get("max_timestamp_ms"), leader_epochs=epochs,
                        metadata_partition=row["metadata_partition"], offset=row["offset"])


def events_in_order(rows: Iterable[Mapping[str, Any]]) -> Iterator[SegmentEvent | PartitionDeleteEvent]:
    """Events of rows in (metadata partition, offset) order: the order replay needs."""
    ids: dict[str, Uuid] = {}
    for row in sorted(rows, key=lambda r: (r["metadata_partition"], r["offset"])):
        yield event_of_row(row, ids)
