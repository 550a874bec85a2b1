"""Classify remote segments: one pure function over the replayed metadata, the listing and the controller's topics.

The classes (each a contract; see the issue's ``remote_findings``):

* ``remote_delete_leaked``: metadata says ``DELETE_SEGMENT_FINISHED`` and objects are still listed;
* ``remote_delete_incomplete``: ``DELETE_SEGMENT_STARTED`` and never finished;
* ``remote_copy_incomplete``: ``COPY_SEGMENT_STARTED`` and never finished;
* ``remote_deleted_topic``: the rest of the segments whose topic id is not a topic of the controller's image;
* ``remote_untracked``: no record names the segment (its topic is live);
* ``remote_outside_lineage``: finished, live topic, outside the partition leader's epoch lineage (report only);
  a segment whose last event is later than the lineage's time (less :data:`LINEAGE_CLOCK_MARGIN_MS`) is not judged;
* ``remote_ok``: finished, live topic (inside the lineage, when one is given; the reason says when none was).

A segment's state decides first; ``remote_deleted_topic`` takes what is left of a deleted topic, and a reason names
both facts when both hold. Only segments with at least one listed object get a row; bytes are the listing's.

Plannable needs the class to be garbage, no contradiction between the witnesses (key, metadata, manifest) and the
grace period elapsed on every clock that applies:

* ``garbage_since`` = the latest of the segment's last accepted event, its objects' newest last-modified time and,
  for a deleted topic, the topic's deletion time (without a known deletion time a deleted topic's segments are
  reported, not planned, as local deleted-topic items without a grace-clock start are);
* ``remote_copy_incomplete`` and ``remote_untracked`` could be made live by a record the read missed, so they also
  need their metadata partition read without a hole after the segment's last event (untracked: from offset 0, and
  infinite retention), and the grace to have elapsed *within* the replica's own time (``as_of``), so that a stale
  replica cannot hide a ``COPY_SEGMENT_FINISHED``;
* ``remote_untracked`` (and a deleted topic's untracked segment) is planned only with ``plan_untracked``.

A topic id absent from an image that is not complete is not judged deleted: its segments are classified as live
ones, with the reason saying so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pipelines.config.models import MIN_GRACE_FLOOR_MS
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.aiven_manifest import ManifestWitness, manifest_mismatch
from pipelines.remote_tier.events import SegmentKey, SegmentState
from pipelines.remote_tier.keys import RemoteObjectKey
from pipelines.remote_tier.lineage import within_lineage
from pipelines.remote_tier.listing import RemoteObjectRow
from pipelines.remote_tier.metadata_topic import MetadataCoverage
from pipelines.remote_tier.replay import RemoteMetadataImage, ReplayedSegment
from pipelines.terminal_text import escape

__all__ = [
    "ALL_REMOTE_CLASSES",
    "LINEAGE_CLOCK_MARGIN_MS",
    "PLANNABLE_REMOTE_CLASSES",
    "REMOTE_COPY_INCOMPLETE",
    "REMOTE_DELETED_TOPIC",
    "REMOTE_DELETE_INCOMPLETE",
    "REMOTE_DELETE_LEAKED",
    "REMOTE_OK",
    "REMOTE_OUTSIDE_LINEAGE",
    "REMOTE_UNTRACKED",
    "ControllerTopics",
    "Lineage",
    "RemoteFinding",
    "classify_remote",
]

REMOTE_DELETED_TOPIC = "remote_deleted_topic"
REMOTE_COPY_INCOMPLETE = "remote_copy_incomplete"
REMOTE_DELETE_INCOMPLETE = "remote_delete_incomplete"
REMOTE_DELETE_LEAKED = "remote_delete_leaked"
REMOTE_UNTRACKED = "remote_untracked"
REMOTE_OUTSIDE_LINEAGE = "remote_outside_lineage"
REMOTE_OK = "remote_ok"
ALL_REMOTE_CLASSES = (REMOTE_DELETED_TOPIC, REMOTE_COPY_INCOMPLETE, REMOTE_DELETE_INCOMPLETE, REMOTE_DELETE_LEAKED,
                      REMOTE_UNTRACKED, REMOTE_OUTSIDE_LINEAGE, REMOTE_OK)
PLANNABLE_REMOTE_CLASSES = frozenset({REMOTE_DELETED_TOPIC, REMOTE_COPY_INCOMPLETE, REMOTE_DELETE_INCOMPLETE,
                                      REMOTE_DELETE_LEAKED, REMOTE_UNTRACKED})
"""Classes that may be planned; ``remote_outside_lineage`` and ``remote_ok`` never are."""

_BY_STATE = {
    SegmentState.DELETE_SEGMENT_FINISHED: REMOTE_DELETE_LEAKED,
    SegmentState.DELETE_SEGMENT_STARTED: REMOTE_DELETE_INCOMPLETE,
    SegmentState.COPY_SEGMENT_STARTED: REMOTE_COPY_INCOMPLETE,
}


@dataclass(frozen=True)
class ControllerTopics:
    """The controller's current topics: ids, whether the image is complete, and known deletion times (epoch ms, e.g.
    from ``metadata_events`` ``topic_removed``)."""

    topic_ids: frozenset[Uuid]
    complete: bool = True
    deleted_at_ms: Mapping[Uuid, int] = field(default_factory=dict)


LINEAGE_CLOCK_MARGIN_MS = 10 * 60_000
"""A segment whose last event is later than the lineage's time less this margin (brokers' and crawlers' clocks
differ) may have been copied under a leader epoch the lineage does not have yet: it is not judged."""


@dataclass(frozen=True)
class Lineage:
    """A partition leader's epoch cache (epoch -> start offset), its log end offset (``None``: not known) and when it
    was read (``as_of_ms``, epoch ms; ``None``: current)."""

    epochs: Mapping[int, int]
    log_end_offset: int | None
    as_of_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RemoteFinding:
    """One ``remote_findings`` row (without cluster and run id). ``state`` is the replayed metadata state, if any."""

    topic: str
    topic_id: Uuid
    partition: int
    segment_id: Uuid
    start_offset: int
    class_name: str
    reason: str
    bytes: int
    objects: int
    plannable: bool
    garbage_since_ms: int | None
    state: str | None
    keys: tuple[str, ...]

    def as_row(self, cluster: str, run_id: str) -> dict[str, object]:
        """The ``remote_findings`` columns (ids as Kafka's text, ``garbage_since`` in epoch ms)."""
        return {"cluster": cluster, "run_id": run_id, "topic": self.topic, "topic_id": str(self.topic_id),
                "partition": self.partition, "segment_id": str(self.segment_id), "start_offset": self.start_offset,
                "class": self.class_name, "reason": self.reason, "bytes": self.bytes, "objects": self.objects,
                "plannable": self.plannable, "garbage_since": self.garbage_since_ms}


def _ts(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _state_text(seg: ReplayedSegment) -> str:
    text = f"{seg.state.name} at {_ts(seg.event_timestamp_ms)} by broker {seg.broker_id}"
    if seg.base_missing:
        text += " (its COPY_SEGMENT_STARTED record was not read)"
    return text


@dataclass
class _Group:
    key: RemoteObjectKey
    rows: list[RemoteObjectRow]


def classify_remote(
    image: RemoteMetadataImage,
    objects: Iterable[RemoteObjectRow],
    controller: ControllerTopics,
    coverage: MetadataCoverage,
    *,
    now_ms: int,
    grace_ms: int,
    plan_untracked: bool = False,
    manifests: Mapping[SegmentKey, ManifestWitness | str] | None = None,
    lineages: Mapping[tuple[Uuid, int], Lineage] | None = None,
) -> list[RemoteFinding]:
    """One finding per segment that has listed objects. Error rows of the listing are never planned; one whose key
    names a segment makes that segment not plannable (a key of it could not be listed as it is).

    ``manifests`` maps a segment to its parsed ``.rsm-manifest`` or to the error met reading it.

    Raises:
        ValueError: ``grace_ms`` below the project's floor.
    """
    if grace_ms < MIN_GRACE_FLOOR_MS:
        raise ValueError(f"grace must be at least {MIN_GRACE_FLOOR_MS // 60000} minutes (floor)")
    groups: dict[SegmentKey, list[RemoteObjectRow]] = {}
    unlisted: dict[SegmentKey, list[str]] = {}
    for row in objects:
        seg_key = row.named_segment
        if seg_key is None:
            continue
        if row.error is None:
            groups.setdefault(seg_key, []).append(row)
        else:
            unlisted.setdefault(seg_key, []).append(row.error)
    findings = [
        _classify_one(k, rows, image.segments.get(k), image, controller, coverage, now_ms, grace_ms, plan_untracked,
                      (manifests or {}).get(k), (lineages or {}).get(k[:2]), unlisted.get(k, ()))
        for k, rows in groups.items()
    ]
    findings.sort(key=lambda f: (f.topic, str(f.topic_id), f.partition, f.start_offset, str(f.segment_id)))
    return findings


def _classify_one(
    k: SegmentKey, rows: list[RemoteObjectRow], seg: ReplayedSegment | None, image: RemoteMetadataImage,
    controller: ControllerTopics, coverage: MetadataCoverage, now_ms: int, grace_ms: int, plan_untracked: bool,
    manifest: ManifestWitness | str | None, lineage: Lineage | None, unlisted: Iterable[str] = (),
) -> RemoteFinding:
    topic_id, partition, segment_id = k
    first = rows[0]
    topic = first.topic or ""
    start_offset = first.start_offset if first.start_offset is not None else -1
    n_bytes = sum(r.size for r in rows)
    newest = max(r.last_modified_ms for r in rows)
    facts: list[str] = []
    blockers: list[str] = []

    for problem in unlisted:
        blockers.append(f"a key of the segment is an error row of the listing: {escape(problem)}")
    if len({(r.topic, r.start_offset) for r in rows}) > 1:
        blockers.append("the segment's keys disagree on topic name or start offset")
    if seg is not None:
        if seg.topic != topic:
            blockers.append(f"metadata names topic {escape(seg.topic)!r}, the key {topic!r}")
        if not seg.base_missing and seg.start_offset != start_offset:
            blockers.append(f"metadata says start offset {seg.start_offset}, the key {start_offset}")
        if seg.dropped:
            facts.append(f"{seg.dropped} event(s) for it were dropped as Kafka drops them")
    if isinstance(manifest, str):
        blockers.append(f"its manifest is unreadable: {manifest}")
    elif manifest is not None:
        key_view = RemoteObjectKey(topic, topic_id, partition, segment_id, start_offset, "rsm-manifest")
        mismatch = manifest_mismatch(manifest, key_view)
        if mismatch:
            blockers.append(mismatch)

    live = topic_id in controller.topic_ids
    deleted = not live and controller.complete
    if not live and not controller.complete:
        facts.append(f"topic id {topic_id} is absent from an incomplete controller image: not judged deleted")
    deleted_fact = f"topic id {topic_id} is not a topic of the controller's image (deleted or never this cluster's)"

    if seg is not None and seg.state in _BY_STATE:
        cls = _BY_STATE[seg.state]
        facts.insert(0, _state_text(seg))
        if cls == REMOTE_DELETE_LEAKED:
            facts.insert(1, f"but {len(rows)} object(s) are still listed")
        if deleted:
            facts.append(deleted_fact)
    elif deleted:
        cls = REMOTE_DELETED_TOPIC
        facts.insert(0, deleted_fact)
        facts.append(_state_text(seg) if seg is not None else "no metadata record names the segment")
    elif seg is None:
        cls = REMOTE_UNTRACKED
        facts.insert(0, "no metadata record names the segment")
    else:
        cls = REMOTE_OK
        facts.insert(0, _state_text(seg))
        if lineage is None:
            facts.append("its leader-epoch lineage was not checked (no crawled replica of the current leader holds"
                         " its epoch)")
        elif seg.end_offset is not None:
            if lineage.as_of_ms is not None and seg.event_timestamp_ms > lineage.as_of_ms - LINEAGE_CLOCK_MARGIN_MS:
                facts.append(f"lineage not judged: copied after the leader's replica was crawled at"
                             f" {_ts(lineage.as_of_ms)}")
            elif not within_lineage(seg.leader_epochs, seg.end_offset, lineage.epochs, lineage.log_end_offset):
                cls = REMOTE_OUTSIDE_LINEAGE
                facts.append("outside the partition leader's epoch lineage: Kafka removes it through retention")
    pd = image.partition_deletes.get((topic_id, partition))
    if pd is not None:
        facts.append(f"partition delete {pd.state.name} at {_ts(pd.event_timestamp_ms)}")
    if isinstance(manifest, ManifestWitness) and cls == REMOTE_COPY_INCOMPLETE:
        facts.append("its manifest was uploaded (the copy ran to its end) but COPY_SEGMENT_FINISHED was never read")

    since = newest if seg is None else max(newest, seg.event_timestamp_ms)
    if cls not in PLANNABLE_REMOTE_CLASSES:
        blockers.append("report only")
    else:
        if deleted and cls == REMOTE_DELETED_TOPIC:
            deleted_at = controller.deleted_at_ms.get(topic_id)
            if deleted_at is None:
                blockers.append("the topic's deletion time is unknown (no grace-clock start)")
            else:
                since = max(since, deleted_at)
        if seg is None:
            _untracked_rules(blockers, coverage, topic_id, partition, newest, grace_ms, plan_untracked)
        elif cls == REMOTE_COPY_INCOMPLETE:
            _copy_incomplete_rules(blockers, coverage, seg, topic_id, partition, grace_ms)
        if now_ms - since < grace_ms:
            blockers.append(f"grace not elapsed (garbage since {_ts(since)})")
    reason = "; ".join(facts)
    if blockers:
        reason += "; not plannable: " + "; ".join(blockers)
    return RemoteFinding(
        topic, topic_id, partition, segment_id, start_offset, cls, reason, n_bytes, len(rows), not blockers,
        since if cls in PLANNABLE_REMOTE_CLASSES else None, None if seg is None else seg.state.name,
        tuple(sorted(r.key for r in rows)),
    )  # fmt: skip


def _untracked_rules(blockers: list[str], coverage: MetadataCoverage, topic_id: Uuid, partition: int, newest: int,
                     grace_ms: int, plan_untracked: bool) -> None:
    if not plan_untracked:
        blockers.append("remote_tier.plan_untracked is off")
    unrecorded = coverage.unrecorded_reason(topic_id, partition)
    if unrecorded is not None:
        blockers.append(f"may be unrecorded: {unrecorded}")
        return
    as_of = coverage.as_of_ms(coverage.partition_for(topic_id, partition))
    if as_of is None:
        blockers.append("the metadata replica's time is unknown")
    elif as_of - newest < grace_ms:
        blockers.append(f"the metadata replica (current up to {_ts(as_of)}) is not a grace period newer than the"
                        " objects")


def _copy_incomplete_rules(blockers: list[str], coverage: MetadataCoverage, seg: ReplayedSegment, topic_id: Uuid,
                           partition: int, grace_ms: int) -> None:
    later = coverage.later_events_reason(seg.metadata_partition, seg.offset)
    if later is not None:
        blockers.append(f"a later event may be missing: {later}")
    expected = coverage.partition_for(topic_id, partition)
    if len(seg.metadata_partitions) > 1 or (expected is not None and expected != seg.metadata_partition):
        blockers.append("its events are not all in the metadata partition Kafka writes them to")
    as_of = coverage.as_of_ms(seg.metadata_partition)
    if as_of is None:
        blockers.append("the metadata replica's time is unknown")
    elif as_of - seg.event_timestamp_ms < grace_ms:
        blockers.append(f"the metadata replica (current up to {_ts(as_of)}) is not a grace period newer than the"
                        " event")
