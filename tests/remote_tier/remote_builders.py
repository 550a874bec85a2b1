"""Shared builders for the remote-tier tests: ids, events and replica directories."""

from __future__ import annotations

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.events import SegmentEvent, SegmentState

HOUR = 3_600_000
DAY = 24 * HOUR


def uid(n: int) -> Uuid:
    return Uuid(0x1000 + n, 0x2000 + n)


def copy_started(topic: str, tid: Uuid, partition: int, sid: Uuid, at: int, start: int = 0, **kw) -> SegmentEvent:
    return SegmentEvent(topic, tid, partition, sid, SegmentState.COPY_SEGMENT_STARTED, 1, at, True, start_offset=start,
                        end_offset=start + 99, size=1000, max_timestamp_ms=at, leader_epochs=((0, start),), **kw)


def update(topic: str, tid: Uuid, partition: int, sid: Uuid, state: int, at: int, **kw) -> SegmentEvent:
    return SegmentEvent(topic, tid, partition, sid, state, 1, at, False, **kw)


NOW = 400 * DAY
GRACE = DAY
OLD = NOW - 30 * DAY


def aiven_key(topic: str, tid: Uuid, partition: int, sid: Uuid, start: int, kind: str) -> str:
    return f"{topic}-{tid}/{partition}/{start:020d}-{sid}.{kind}"


def objects_of(topic: str, tid: Uuid, partition: int, sid: Uuid, start: int = 0, modified: int = OLD,
               kinds: tuple[str, ...] = ("log", "indexes", "rsm-manifest"), size: int = 100) -> list:
    from pipelines.remote_tier.listing import ListedObject

    return [ListedObject(aiven_key(topic, tid, partition, sid, start, k), size, modified, f"etag-{k}") for k in kinds]


def run_classify(events: list, objects: list, *, live: frozenset = frozenset(), complete: bool = True,
                 deleted_at: dict | None = None, as_of: int | None = NOW, retention_infinite: bool = True,
                 plan_untracked: bool = False, manifests: dict | None = None, lineages: dict | None = None,
                 segments: list | None = None, num_partitions: int | None = 1, now: int = NOW) -> list:
    """Write ``events`` as metadata partition 0, read it back, replay, and classify the listed ``objects``."""
    from pipelines.remote_tier.classify import ControllerTopics, classify_remote
    from pipelines.remote_tier.listing import parse_listing
    from pipelines.remote_tier.metadata_topic import MetadataCoverage, read_replica_segments
    from pipelines.remote_tier.metadata_writer import encode_metadata_segments
    from pipelines.remote_tier.replay import replay

    segs = segments if segments is not None else encode_metadata_segments(events)
    read = read_replica_segments(0, segs, as_of_ms=as_of, source="replica")
    coverage = MetadataCoverage.from_replicas([read], num_partitions, retention_infinite)
    image = replay(coverage.events())
    rows = list(parse_listing(objects, "aiven"))
    controller = ControllerTopics(frozenset(live), complete, deleted_at or {})
    return classify_remote(image, rows, controller, coverage, now_ms=now, grace_ms=GRACE,
                           plan_untracked=plan_untracked, manifests=manifests, lineages=lineages)
