"""``logdir-gc metadata show --json``: one JSON document, written as it is built.

The document is the one ``metadata show --json`` always printed (keys documented in docs/commands.md) plus ``summary``;
topics and events are encoded a chunk at a time and written out, so no whole-image document (nor its text)
is ever held in memory. Whitespace differs from the former indented output; the JSON is the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring_ascii as _esc
from typing import IO, Any

from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import MetadataImage, PartitionImage, TopicImage
from pipelines.metadata.metadata_log_source import ReplayResult
from pipelines.metadata.summary import MetadataSummary, TopicChange

_CHUNK = 2048
"""Events encoded per ``json.dumps`` call."""
_CHUNK_CHARS = 256 * 1024
"""Topics' text written per write."""


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


def _events(events: tuple[MetadataEvent, ...]) -> Iterator[str]:
    """``MetadataEvent.to_json_dict()`` of every event as JSON text, encoded ``_CHUNK`` events per call."""
    for start in range(0, len(events), _CHUNK):
        chunk = [
            {"offset": e.offset, "timestamp_ms": e.timestamp_ms, "event": e.event,
             "topic_id": None if e.topic_id is None else str(e.topic_id), "topic": e.topic,
             "partition": e.partition, "detail": e.detail if type(e.detail) is dict else dict(e.detail or {})}
            for e in events[start : start + _CHUNK]
        ]
        yield json.dumps(chunk)[1:-1]


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


def _array(write: Callable[[str], None], items: Iterable[Any], encode: Callable[[Any], str]) -> None:
    """``[...]`` of the JSON texts ``encode(item)``, written about ``_CHUNK_CHARS`` at a time."""
    write("[")
    chunk: list[str] = []
    size = 0
    first = True
    for item in items:
        text = encode(item)
        chunk.append(text)
        size += len(text)
        if size >= _CHUNK_CHARS:
            write(("" if first else ",\n") + ",\n".join(chunk))
            first = False
            chunk.clear()
            size = 0
    if chunk:
        write(("" if first else ",\n") + ",\n".join(chunk))
    write("]")


def write_show_json(out: IO[bytes], result: ReplayResult, summary: MetadataSummary) -> None:
    """Write the ``--json`` document of ``result`` to ``out``, topics and events streamed."""
    image = result.image

    def write(text: str) -> None:
        out.write(text.encode("ascii"))

    def field(key: str, value: Any, first: bool = False) -> None:
        write(("{" if first else ",\n") + json.dumps(key) + ": " + json.dumps(value))

    field("complete", image.complete, first=True)
    field("incomplete_reasons", list(image.incomplete_reasons))
    field("last_offset", image.last_offset)
    field("last_epoch", image.provenance.last_epoch)
    field("last_timestamp_ms", image.provenance.last_timestamp_ms)
    field("source", image.provenance.source)
    field("features", dict(image.features))
    write(',\n"topics": ')
    _array(write, sorted(image.topics.by_id.values(), key=lambda t: t.name), _topic)
    field("brokers", _brokers(image))
    field("configs", [{"resource_type": rtype, "resource_name": rname, "configs": dict(values)}
                      for (rtype, rname), values in sorted(image.configs.resources.items())])
    field("counts", image.misc.counts())
    write(',\n"events": [')
    for i, text in enumerate(_events(result.events)):
        write(text if i == 0 else ",\n" + text)
    write("]")
    field("errors", list(result.errors))
    field("notes", list(result.notes))
    field("files", [{"name": f.name, "kind": f.kind, "used": f.used, "records": f.records,
                     "first_offset": f.first_offset, "last_offset": f.last_offset, "note": f.note,
                     "first_timestamp_ms": f.first_timestamp_ms} for f in result.files])
    field("summary", summary_json(summary))
    write("}\n")
