"""``remote_findings`` rows for the analytics tests, classified by the real classifier from metadata events and
listed objects (``tests/remote_tier/remote_builders``), then appended to a warehouse as the remote step would."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from zlib import crc32

from pipelines.remote_tier.classify import RemoteFinding
from pipelines.remote_tier.events import SegmentState
from pipelines.tables.rust_engine import RustTableStore
from tests.remote_tier.remote_builders import DAY, NOW, OLD, copy_started, objects_of, run_classify, uid, update


@dataclass(frozen=True)
class Segment:
    """One remote segment of ``topic`` whose three objects are ``object_size`` bytes each; a topic that is not
    ``live`` was deleted two days ago (its segments are ``remote_deleted_topic``, plannable)."""

    topic: str
    object_size: int
    live: bool = True


def classify(segments: list[Segment]) -> list[RemoteFinding]:
    """The classifier's findings for ``segments`` (one partition per topic, segments one after another)."""
    tids = {s.topic: uid(crc32(s.topic.encode()) % 100_000) for s in segments}
    events, objects = [], []
    for i, s in enumerate(segments):
        tid, sid = tids[s.topic], uid(200_000 + i)
        events += [copy_started(s.topic, tid, 0, sid, OLD, start=100 * i),
                   update(s.topic, tid, 0, sid, SegmentState.COPY_SEGMENT_FINISHED, OLD + 1)]
        objects += objects_of(s.topic, tid, 0, sid, start=100 * i, size=s.object_size)
    live = frozenset(tids[s.topic] for s in segments if s.live)
    deleted = {tids[s.topic]: NOW - 2 * DAY for s in segments if not s.live}
    return run_classify(events, objects, live=live, deleted_at=deleted)


def rows_of(findings: list[RemoteFinding], cluster: str, run_id: str) -> list[dict[str, object]]:
    rows = [f.as_row(cluster, run_id) for f in findings]
    for r in rows:
        ms = r["garbage_since"]
        r["garbage_since"] = None if ms is None else datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc)
    return rows


def add_remote_findings(warehouse: Path, cluster: str, run_id: str, segments: list[Segment]) -> list[RemoteFinding]:
    """Classify ``segments`` and append them as ``cluster``'s ``remote_findings`` of ``run_id``."""
    findings = classify(segments)
    RustTableStore(str(warehouse), allow_foreign_tables=True).append("remote_findings",
                                                                     rows_of(findings, cluster, run_id))
    return findings
