"""Text views of ``logdir-gc metadata show``: the one-screen summary and the full listings.

The listings (``--topics``, ``--partitions``, ``--events``) print one line per item, written in chunks so a
100k-partition image never becomes one string. Every name the log holds (topics, racks, directories, reasons) is
escaped and cut by ``terminal_text.shown``: a metadata log is written by whoever creates topics.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import IO, Any

from pipelines.kafka.uuid import DIRECTORY_ID_NAMES
from pipelines.metadata.metadata_log_source import ReplayResult
from pipelines.metadata.summary import MetadataSummary, TopicChange
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

BROKER_LINES = 12
"""Brokers listed by the summary; more are counted (``--json`` has them all)."""
_CHUNK = 4096


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _dir(d: Any) -> str:
    return DIRECTORY_ID_NAMES.get(d) or shown(d)


def _change(c: TopicChange, recreated: bool) -> str:
    what = f"{shown(c.topic)} {shown(c.topic_id)}" + (f" (was {shown(c.previous_id)})" if recreated else "")
    when = "in the snapshot" if c.from_snapshot else _time(c.timestamp_ms)
    return f"    offset {c.offset:>10}  {when}  {what}"


def render_summary(result: ReplayResult, s: MetadataSummary) -> str:
    image = result.image
    lines = [f"source:     {shown(redact_text(image.provenance.source), 1000)}",
             f"offsets:    {s.first_offset if s.first_offset is not None else '-'} .. {s.last_offset} "
             f"(epoch {image.provenance.last_epoch})",
             f"times:      {_time(s.first_timestamp_ms)} .. {_time(s.last_timestamp_ms)}",
             f"snapshot:   {s.snapshot or 'none'}; {s.segments} segment(s) replayed after it",
             f"metadata.version: {image.metadata_version}",
             "image:      " + ("COMPLETE" if image.complete else "INCOMPLETE")]
    lines += [f"  - {shown(r, 1000)}" for r in image.incomplete_reasons[:5]]
    if len(image.incomplete_reasons) > 5:
        lines.append(f"  - ... {len(image.incomplete_reasons) - 5} more reasons (--json)")
    brokers = sorted(image.brokers.values(), key=lambda b: b.broker_id)
    fenced = sum(1 for b in brokers if b.fenced)
    lines.append(f"brokers:    {len(brokers)} ({fenced} fenced)")
    for b in brokers[:BROKER_LINES]:
        state = "FENCED" if b.fenced else ("controlled shutdown" if b.in_controlled_shutdown else "unfenced")
        rack = f", rack {shown(b.rack)}" if b.rack else ""
        lines.append(f"  {b.broker_id}: {state}, epoch {b.epoch}{rack}, dirs {', '.join(_dir(d) for d in b.log_dirs)}")
    if len(brokers) > BROKER_LINES:
        lines.append(f"  ... {len(brokers) - BROKER_LINES} more brokers (--json)")
    lines.append(f"topics:     {s.topics:,} topics, {s.partitions:,} partitions, {s.replicas:,} replicas; "
                 f"{s.under_replicated:,} under-replicated, {s.offline:,} without leader, "
                 f"{s.reassigning:,} reassigning")
    if s.largest:
        lines.append("largest topics (partitions x replication):")
        largest = [(shown(name), n, rf) for name, n, rf in s.largest]
        width = max(len(name) for name, _, _ in largest)
        lines += [f"    {name:<{width}}  {n:>6} x {rf}" for name, n, rf in largest]
    lines.append(f"deletions:  {s.deletions:,} topic(s) deleted" + (", most recent:" if s.recent_deletions else ""))
    lines += [_change(c, False) for c in s.recent_deletions]
    lines.append(f"recreations: {s.recreations:,} topic name(s) recreated with a new id"
                 + (", most recent:" if s.recent_recreations else ""))
    lines += [_change(c, True) for c in s.recent_recreations]
    lines.append(f"events:     {result.event_count:,} (--events lists them)")
    for kind in ("errors", "notes"):
        items = getattr(result, kind)
        if items:
            lines.append(f"{kind} ({len(items)}):")
            lines += [f"  {shown(x, 1000)}" for x in items[:5]]
            if len(items) > 5:
                lines.append(f"  ... {len(items) - 5} more (--json)")
    return "\n".join(lines) + "\n"


def topic_lines(result: ReplayResult) -> Iterator[str]:
    topics = result.image.topics
    yield f"topics ({len(topics)}):"
    for t in sorted(topics.by_id.values(), key=lambda t: t.name):
        rf = max((len(p.replicas) for p in t.partitions.values()), default=0)
        yield f"  {shown(t.name)} ({shown(t.topic_id)}) partitions={len(t.partitions)} replication={rf}"


def partition_lines(result: ReplayResult) -> Iterator[str]:
    topics = result.image.topics
    yield f"partitions of {len(topics)} topics:"
    for t in sorted(topics.by_id.values(), key=lambda t: t.name):
        for p in sorted(t.partitions.values(), key=lambda x: x.partition):
            extra = ""
            if p.adding_replicas or p.removing_replicas:
                extra = f" adding={list(p.adding_replicas)} removing={list(p.removing_replicas)}"
            yield (f"  {shown(t.name)}-{p.partition} ({shown(t.topic_id)}): leader={p.leader} "
                   f"replicas={list(p.replicas)} "
                   f"isr={list(p.isr)} dirs={[_dir(d) for d in p.directories]}{extra}")


def event_lines(result: ReplayResult) -> Iterator[str]:
    yield f"events ({len(result.events)}):"
    for e in result.events:
        where = f"{shown(e.topic)}-{e.partition}" if e.partition is not None else shown(e.topic or "")
        detail = f" {shown(dict(e.detail), 1000)}" if e.detail else ""
        yield (f"  offset {e.offset} {_time(e.timestamp_ms)} {shown(e.event)} {where}"
               f"{f' ({shown(e.topic_id)})' if e.topic_id is not None else ''}{detail}")


def write_lines(out: IO[bytes], lines: Iterable[str]) -> None:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= _CHUNK:
            out.write(("\n".join(chunk) + "\n").encode())
            chunk.clear()
    if chunk:
        out.write(("\n".join(chunk) + "\n").encode())
