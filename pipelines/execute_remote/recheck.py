"""The remote executor's per-segment re-check: every fact from the store, the controller and the metadata topic as
they are NOW, the plan item only a claim compared with them. Each refusal is :class:`ItemSkipped` naming its rule.

In order: ``never_planned`` (not a remote item), ``owned_prefix`` (every key below the HOST's owned prefix, none in
its quarantine), ``inconsistent`` (every key parses, by the host's layout, to the item's topic, topic id, partition,
segment id and start offset; all in one folder), ``protected_topic`` (the item's topic and the controller's name for
its id), ``changed`` (the segment's keys re-listed: the same set, each with the listed size, ETag and last-modified
time; a key the journal says is already deleted must still be absent), ``live_topic`` / ``controller_recheck``
(a deleted topic's id still absent from a complete image), ``metadata_recheck`` (the re-read
``__remote_log_metadata`` still gives the state the class was judged from, with no event since the plan was made;
without a configured source only ``remote_deleted_topic`` items, proven by the controller, may go on) and
``min_grace`` (the host's grace floor from the newest of: the objects' last-modified times, the segment's last
event, the topic's removal).
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from pipelines.detect import classes as C
from pipelines.errors import ConfigError, DecodeError, PipelinesError, PreconditionFailed
from pipelines.execute.controller_check import ControllerCheck
from pipelines.execute.observe import ItemSkipped
from pipelines.execute.preconditions import HostRules
from pipelines.execute_remote.target import RemoteTarget
from pipelines.execute_remote.tier_store import ObjectInfo, TierStore
from pipelines.kafka.uuid import Uuid
from pipelines.plan.model import GcPlan, PlanItem, RemoteKey
from pipelines.remote_tier import classify as K
from pipelines.remote_tier.events import SegmentState
from pipelines.remote_tier.listing import parse_key
from pipelines.remote_tier.replay import RemoteMetadataImage

if TYPE_CHECKING:
    from pipelines.remote_tier.metadata_topic import PartitionRead

__all__ = ["VerifiedSegment", "load_remote_metadata", "planned", "verify_segment"]

#: The state the re-read metadata must still give for a class judged from a state (None: no record at all).
_STATE_OF = {K.REMOTE_DELETE_LEAKED: SegmentState.DELETE_SEGMENT_FINISHED,
             K.REMOTE_DELETE_INCOMPLETE: SegmentState.DELETE_SEGMENT_STARTED,
             K.REMOTE_COPY_INCOMPLETE: SegmentState.COPY_SEGMENT_STARTED,
             K.REMOTE_UNTRACKED: None}


@dataclass(frozen=True)
class VerifiedSegment:
    item: PlanItem
    now: dict[str, ObjectInfo]
    """Keys still present, as re-listed (equal to the plan's)."""


def planned(item: PlanItem) -> dict[str, RemoteKey]:
    return {k.key: k for k in item.keys or ()}


def load_remote_metadata(target: RemoteTarget) -> RemoteMetadataImage | None:
    """Re-read and replay the configured ``__remote_log_metadata`` (a local copy, or the live topic up to its end
    offsets now); None when neither is configured. Raises PreconditionFailed when it cannot be read (nothing is
    applied then)."""
    from pipelines.remote_tier.metadata_topic import MetadataCoverage, read_replicas_under
    from pipelines.remote_tier.replay import replay

    if target.metadata_live is not None:
        return replay(MetadataCoverage.from_replicas(_live_reads(target), None, True).events())
    if target.metadata_source is None:
        return None

    source = target.metadata_source
    if "://" in source and not source.startswith("file://"):
        raise PreconditionFailed(f"[metadata_recheck] remote_tier.metadata.source {source}: the remote executor "
                                 "re-reads a local copy only")
    try:
        reads = read_replicas_under(source.removeprefix("file://"))
    except (OSError, ValueError, PipelinesError) as exc:
        raise PreconditionFailed(f"[metadata_recheck] cannot re-read {source}: {exc}") from None
    if not reads:
        raise PreconditionFailed(f"[metadata_recheck] {source} holds no __remote_log_metadata-N replica")
    return replay(MetadataCoverage.from_replicas(reads, None, True).events())


def _live_reads(target: RemoteTarget) -> list[PartitionRead]:
    """Every partition of the live topic, read as the run reads it (the same reader and bounds)."""
    from pipelines.remote_tier.metadata_consumer import live_sources, read_live

    servers = target.metadata_live.bootstrap_servers
    try:
        sources, _ = live_sources(target.metadata_live)
        reads = [read_live(source) for source in sources]
    except ConfigError:
        raise
    except (OSError, ValueError, PipelinesError) as exc:
        raise PreconditionFailed(f"[metadata_recheck] cannot re-read __remote_log_metadata from {servers}: {exc}"
                                 ) from None
    if not reads:
        raise PreconditionFailed(f"[metadata_recheck] the cluster at {servers} has no __remote_log_metadata topic")
    return reads


def _stem(key: str) -> tuple[str, str]:
    folder, name = posixpath.split(key)
    return folder, name.split(".", 1)[0]


def _claims(item: PlanItem, target: RemoteTarget) -> tuple[Uuid, Uuid, str]:
    """The item's keys agree with each other and with its claims; returns (topic id, segment id, folder)."""
    folders = set()
    for key in planned(item):
        problem = target.key_problem(key)
        if problem is not None:
            raise ItemSkipped(problem, "owned_prefix")
        try:
            parsed = parse_key(key, target.layout, target.prefix)
        except (DecodeError, ValueError) as exc:
            raise ItemSkipped(f"key {key!r} does not fit layout {target.layout}: {exc}", "inconsistent") from None
        said = (item.topic, item.topic_id, item.partition, item.segment_id, item.start_offset)
        found = (parsed.topic, str(parsed.topic_id), parsed.partition, str(parsed.segment_id), parsed.start_offset)
        if said != found:
            raise ItemSkipped(f"key {key!r} is {found}, the item claims {said}", "inconsistent")
        folders.add(_stem(key))
    if len(folders) != 1:
        raise ItemSkipped(f"the item's keys lie in {len(folders)} folders or stems", "inconsistent")
    (folder, _), = folders
    return parsed.topic_id, parsed.segment_id, folder


def _relisted(item: PlanItem, store: TierStore, folder: str, gone: Collection[str]) -> dict[str, ObjectInfo]:
    want = planned(item)
    stem = _stem(next(iter(want)))[1]
    listed = {k: v for k, v in store.list_folder(folder).items() if _stem(k)[1] == stem}
    for key, info in listed.items():
        if key in gone:
            raise ItemSkipped(f"key {key!r} was deleted by this executor and exists again (a key reused after "
                              "delete)", "changed")
        if key not in want:
            raise ItemSkipped(f"key {key!r} of the segment was not listed by the crawl (a concurrent upload)",
                              "changed")
        k = want[key]
        if info is None:
            raise ItemSkipped(f"key {key!r}: the listing gives no size or time now", "changed")
        if (info.size, info.etag, info.last_modified_ms) != (k.size, k.etag, k.last_modified_ms):
            raise ItemSkipped(f"key {key!r} changed since the crawl: size {k.size} -> {info.size}, ETag {k.etag} -> "
                              f"{info.etag}, last-modified {k.last_modified_ms} -> {info.last_modified_ms}", "changed")
    missing = sorted(set(want) - set(listed) - set(gone))
    if missing:
        raise ItemSkipped(f"key {missing[0]!r} is no longer listed", "changed")
    return {k: v for k, v in listed.items() if v is not None}


def verify_segment(item: PlanItem, plan: GcPlan, target: RemoteTarget, store: TierStore,
                   controller: ControllerCheck, metadata: RemoteMetadataImage | None, host: HostRules,
                   gone: Collection[str] = ()) -> VerifiedSegment:
    """Every per-segment precondition (module doc); raises ItemSkipped naming the rule. ``gone``: keys this
    executor's journal says it already deleted (a resumed item)."""
    if not item.is_remote or not item.keys:
        raise ItemSkipped(f"item {item.item_id} is not a remote segment", "never_planned")
    tid, sid, folder = _claims(item, target)
    topic = controller.image.topics.by_id.get(tid)
    for name in sorted({item.topic, topic.name if topic else None} - {None}) or [None]:
        if C.is_protected(name, tid, host.protected_patterns):
            raise ItemSkipped(f"segment of protected topic {name or tid!r}", "protected_topic")
    now = _relisted(item, store, folder, gone)
    if item.class_ == K.REMOTE_DELETED_TOPIC:
        if topic is not None:
            raise ItemSkipped(f"topic id {tid} is in the controller's image again ({topic.name!r}): live topic",
                              "live_topic")
        if not controller.image.complete:
            raise ItemSkipped(f"topic id {tid} is unknown to an incomplete controller image; not proven deleted",
                              "controller_recheck")
    clocks = [k.last_modified_ms for k in planned(item).values()]
    clocks += [i.last_modified_ms for i in now.values()]
    created_ms = int(plan.created_at.timestamp() * 1000)
    if metadata is None:
        if item.class_ != K.REMOTE_DELETED_TOPIC:
            raise ItemSkipped(f"class {item.class_} is judged from __remote_log_metadata, and no "
                              "remote_tier.metadata.source is configured to re-read it", "metadata_recheck")
    else:
        seg = metadata.segments.get((tid, item.partition, sid))
        if item.class_ in _STATE_OF:
            want = _STATE_OF[item.class_]
            state = None if seg is None else SegmentState(seg.state)
            if state != want:
                raise ItemSkipped(f"the metadata now says {state.name if state else 'nothing'} for the segment; "
                                  f"{item.class_} was judged from {want.name if want else 'no record'}",
                                  "metadata_recheck")
        if seg is not None:
            if seg.event_timestamp_ms > created_ms:
                raise ItemSkipped(f"the segment has a metadata event after the plan was made "
                                  f"({seg.event_timestamp_ms} ms)", "metadata_recheck")
            clocks.append(seg.event_timestamp_ms)
    if item.class_ == K.REMOTE_DELETED_TOPIC:
        removed = controller.topic_any_ms.get(tid)
        if removed is None:
            removed = controller.replay_start_ms
        if removed is None:
            raise ItemSkipped(f"no controller event dates the removal of topic id {tid}; the grace floor cannot be "
                              "checked", "min_grace")
        clocks.append(removed)
    since = datetime.fromtimestamp(max(clocks) / 1000, tz=timezone.utc)
    if host.now - since < host.min_grace:
        raise ItemSkipped(f"segment garbage only since {since.isoformat()}; the host's grace floor is "
                          f"{host.min_grace}", "min_grace")
    return VerifiedSegment(item, now)
