"""``logdir-gc metadata show --json``: one JSON document, written as it is built.

The document is the one ``metadata show --json`` always printed (keys documented in docs/commands.md) plus ``summary``;
topics and events are encoded a chunk at a time and written out, so no whole-image document (nor its text)
is ever held in memory. Whitespace differs from the former indented output; the JSON is the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii as _esc
from typing import IO, Any

from pipelines import native
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.events import AssignmentDetail, MetadataEvent
from pipelines.metadata.image import MetadataImage, PartitionImage, TopicImage
from pipelines.metadata.metadata_log_source import ReplayResult
from pipelines.metadata.summary import MetadataSummary, TopicChange

_dumps = json.dumps
_CHUNK = 2048
"""Events per written text."""
_TOPICS = 512
"""Topics per written text."""
_NATIVE = "pipelines.kafka._native_json"
"""The compiled twin of ``_topic`` and ``_event`` (``topics``, ``events``)."""


def _partition_key(p: PartitionImage) -> int:
    return p.partition


_ID_LISTS: dict[tuple[Any, ...], str] = {}


def _ids(values: tuple[Any, ...]) -> str:
    """JSON array of uuids' text; the few distinct directory tuples of a cluster are remembered."""
    text = _ID_LISTS.get(values)
    if text is None:
        if len(_ID_LISTS) > 65536:
            _ID_LISTS.clear()
        text = _ID_LISTS[values] = "[" + ", ".join(['"' + str(v) + '"' for v in values]) + "]"
    return text


def _topic(t: TopicImage) -> str:
    """``{"topic_id", "name", "partitions": [...]}`` as JSON text, built directly (the hot loop of ``--json``).

    ``str(list_of_ints)`` is already JSON (``[1, 2]``); empty arrays are the common case and skip it.
    """
    parts = [
        f'{{"partition": {p.partition}, "replicas": {list(p.replicas)}, "isr": {list(p.isr)}, '
        f'"leader": {p.leader}, "leader_epoch": {p.leader_epoch}, "partition_epoch": {p.partition_epoch}, '
        f'"directories": {_ids(p.directories)}, '
        f'"adding_replicas": {list(p.adding_replicas) if p.adding_replicas else "[]"}, '
        f'"removing_replicas": {list(p.removing_replicas) if p.removing_replicas else "[]"}, '
        f'"elr": {list(p.elr) if p.elr else "[]"}, '
        f'"last_known_elr": {list(p.last_known_elr) if p.last_known_elr else "[]"}}}'
        for p in sorted(t.partitions.values(), key=_partition_key)
    ]
    return f'{{"topic_id": "{t.topic_id}", "name": {_esc(t.name)}, "partitions": [{", ".join(parts)}]}}'


def _assignment(d: AssignmentDetail) -> str:
    """A ``partition_added`` detail as JSON text; keyed by the partition image's own (shared) tuples."""
    key = (d._replicas, d._directories, d._from_snapshot)  # the detail's own tuples: no lists made
    text = _ASSIGNMENTS.get(key)
    if text is None:
        if len(_ASSIGNMENTS) > 65536:
            _ASSIGNMENTS.clear()
        text = _ASSIGNMENTS[key] = _dumps(dict(d))
    return text


_ASSIGNMENTS: dict[tuple[Any, ...], str] = {}


def _event(e: MetadataEvent) -> str:
    """``json.dumps(e.to_json_dict())``, built directly when every field has its usual type."""
    offset, ts, partition, detail, topic, tid = e.offset, e.timestamp_ms, e.partition, e.detail, e.topic, e.topic_id
    if (type(offset) is not int or type(ts) is not int or (partition is not None and type(partition) is not int)
            or (topic is not None and type(topic) is not str) or type(e.event) is not str):
        return _dumps(e.to_json_dict())
    if type(detail) is AssignmentDetail:
        detail_text = _assignment(detail)
    else:
        detail_text = _dumps(detail if type(detail) is dict else dict(detail or {}))
    return (f'{{"offset": {offset}, "timestamp_ms": {ts}, "event": {_esc(e.event)}, '
            f'"topic_id": {"null" if tid is None else _esc(str(tid))}, '
            f'"topic": {"null" if topic is None else _esc(topic)}, '
            f'"partition": {"null" if partition is None else partition}, "detail": {detail_text}}}')


def _events(events: tuple[MetadataEvent, ...]) -> Iterator[str | bytes]:
    """``MetadataEvent.to_json_dict()`` of every event as JSON text, ``_CHUNK`` events per text (compiled if built)."""
    compiled = native.load(_NATIVE)
    for start in range(0, len(events), _CHUNK):
        chunk = events[start : start + _CHUNK]
        if compiled is None:
            yield ", ".join([_event(e) for e in chunk])
        else:
            yield compiled.events(list(chunk), _event, Uuid, AssignmentDetail)


def _topics(topics: list[TopicImage]) -> Iterator[str | bytes]:
    """The topics' JSON texts, ``_TOPICS`` per text joined by ``,\\n`` (compiled when built)."""
    compiled = native.load(_NATIVE)
    for start in range(0, len(topics), _TOPICS):
        chunk = topics[start : start + _TOPICS]
        yield ",\n".join([_topic(t) for t in chunk]) if compiled is None else compiled.topics(chunk, _topic, Uuid)


def _brokers(image: MetadataImage) -> list[dict[str, Any]]:
    return [
        {
            "broker_id": b.broker_id, "epoch": b.epoch, "fenced": b.fenced,
            "in_controlled_shutdown": b.in_controlled_shutdown, "log_dirs": [str(d) for d in b.log_dirs],
            "rack": b.rack, "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in b.endpoints],
        }
        for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
    ]


def _change(c: TopicChange) -> dict[str, Any]:
    return {"offset": c.offset, "timestamp_ms": c.timestamp_ms, "topic": c.topic, "topic_id": str(c.topic_id),
            "previous_topic_id": None if c.previous_id is None else str(c.previous_id),
            "from_snapshot": c.from_snapshot}


def summary_json(s: MetadataSummary) -> dict[str, Any]:
    return {
        "first_offset": s.first_offset, "last_offset": s.last_offset, "first_timestamp_ms": s.first_timestamp_ms,
        "last_timestamp_ms": s.last_timestamp_ms, "snapshot": s.snapshot, "segments": s.segments,
        "topics": s.topics, "partitions": s.partitions, "replicas": s.replicas,
        "under_replicated": s.under_replicated, "offline": s.offline, "reassigning": s.reassigning,
        "largest_topics": [{"topic": n, "partitions": p, "replication": rf} for n, p, rf in s.largest],
        "deletions": s.deletions, "recreations": s.recreations,
        "recent_deletions": [_change(c) for c in s.recent_deletions],
        "recent_recreations": [_change(c) for c in s.recent_recreations],
    }


def write_show_json(out: IO[bytes], result: ReplayResult, summary: MetadataSummary) -> None:
    """Write the ``--json`` document of ``result`` to ``out``, topics and events streamed."""
    image = result.image

    def write(text: str | bytes) -> None:
        out.write(text.encode("ascii") if isinstance(text, str) else text)

    def field(key: str, value: Any, first: bool = False) -> None:
        write(("{" if first else ",\n") + json.dumps(key) + ": " + json.dumps(value))

    field("complete", image.complete, first=True)
    field("incomplete_reasons", list(image.incomplete_reasons))
    field("last_offset", image.last_offset)
    field("last_epoch", image.provenance.last_epoch)
    field("last_timestamp_ms", image.provenance.last_timestamp_ms)
    field("source", image.provenance.source)
    field("features", dict(image.features))
    write(',\n"topics": [')
    for i, text in enumerate(_topics(sorted(image.topics.by_id.values(), key=lambda t: t.name))):
        if i:
            write(",\n")
        write(text)
    write("]")
    field("brokers", _brokers(image))
    field("configs", [{"resource_type": rtype, "resource_name": rname, "configs": dict(values)}
                      for (rtype, rname), values in sorted(image.configs.resources.items())])
    field("counts", image.misc.counts())
    write(',\n"events": [')
    for i, text in enumerate(_events(result.events)):
        if i:
            write(",\n")
        write(text)
    write("]")
    field("errors", list(result.errors))
    field("notes", list(result.notes))
    field("files", [{"name": f.name, "kind": f.kind, "used": f.used, "records": f.records,
                     "first_offset": f.first_offset, "last_offset": f.last_offset, "note": f.note,
                     "first_timestamp_ms": f.first_timestamp_ms} for f in result.files])
    field("summary", summary_json(summary))
    write("}\n")
