"""``logdir-gc metadata show --records``: every record as one JSON line, like kafka-dump-log's
``--cluster-metadata-decoder``, streamed (nothing replayed, nothing kept but the current batch of lines).

A directory dumps its newest snapshot (``.checkpoint``), then every ``.log`` segment in offset order; a file
dumps that file. Lines are ``{"file", "offset", "baseOffset", "epoch", "timestamp", "isControl", "payload"}``.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from functools import partial
from json.encoder import encode_basestring_ascii
from typing import IO, Any

from pipelines.kafka.metadata_codec import control_to_json_dict
from pipelines.kafka.metadata_json import compiled_writers, record_json
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.segment_files import classify_file
from pipelines.kafka.uuid import Uuid

_FLUSH_LINES = 4096


def dump_files(fs: Any, root: str) -> list[str]:
    """What ``--records`` dumps for ``root``: itself, or a metadata dir's newest snapshot and its segments."""
    if not fs.isdir(root):
        return [root]
    snapshots: list[tuple[int, int, str]] = []
    logs: list[tuple[int, str]] = []
    for path in fs.ls(root, detail=False):
        name = posixpath.basename(path.rstrip("/"))
        info = classify_file(name)
        if info.kind == "raft_snapshot":
            snapshots.append((info.base_offset or 0, info.epoch or 0, name))
        elif info.kind == "segment" and not info.state and info.suffix == ".log" and info.base_offset is not None:
            logs.append((info.base_offset, name))
    names = [max(snapshots)[2]] if snapshots else []
    names += [name for _, name in sorted(logs)]
    return [posixpath.join(root, name) for name in names]


def _line(head: str, entry: Any) -> str:
    """One entry's line (no newline): the reference the compiled writer is held to."""
    record = entry.record
    if entry.is_control:
        payload = json.dumps({"type": record.type_name, "data": control_to_json_dict(record)}, default=str)
    else:
        payload = record_json(record)
    return (f'{head}{entry.offset}, "baseOffset": {entry.batch_base_offset}, "epoch": {entry.epoch}, '
            f'"timestamp": {entry.batch_timestamp_ms}, "isControl": {"true" if entry.is_control else "false"}, '
            f'"payload": {payload}}}')


def _head(name: str) -> str:
    return '{"file": ' + encode_basestring_ascii(name) + ', "offset": '


def _chunks(name: str, log: Any) -> Iterator[bytes]:
    """The lines of ``log``, newline-terminated, ``_FLUSH_LINES`` per chunk (compiled when built)."""
    head = _head(name)
    compiled = compiled_writers()
    batch: list[Any] = []
    if compiled is None:
        for entry in log:
            batch.append(_line(head, entry))
            if len(batch) >= _FLUSH_LINES:
                yield ("\n".join(batch) + "\n").encode("ascii")
                batch.clear()
        if batch:
            yield ("\n".join(batch) + "\n").encode("ascii")
        return
    module, writers = compiled
    head_bytes = head.encode("ascii")
    fallback = partial(_line, head)
    for entry in log:
        batch.append(entry)
        if len(batch) >= _FLUSH_LINES:
            yield module.lines(batch, head_bytes, writers, fallback, Uuid)
            batch.clear()
    if batch:
        yield module.lines(batch, head_bytes, writers, fallback, Uuid)


def dump_records(fs: Any, path: str, out: IO[bytes], local: bool) -> list[str]:
    """Write every record of ``path`` to ``out``; returns the problems found (one line each, file named)."""
    problems: list[str] = []
    for file_path in dump_files(fs, path):
        name = posixpath.basename(file_path)
        log = iter_metadata_log(file_path if local else fs.cat_file(file_path))
        for chunk in _chunks(name, log):
            out.write(chunk)
        problems += [f"{name}: offset {e.offset}, position {e.position}: {e.message}" for e in log.errors]
        if log.trailing_invalid_bytes:
            problems.append(f"{name}: {log.trailing_invalid_bytes} invalid bytes at the end")
    return problems
