"""The controller check the executor makes before it acts: assignments, the names ids had, and event times.

Every question is asked with what the executor OBSERVED on disk (:class:`~pipelines.execute.observe.ObservedDir`):
the topic id from ``partition.metadata``, the topic and partition from the directory name. Nothing in a plan item
is consulted.

- **Assigned**: the image has the dir's topic id (or, with no readable id, the dir's topic name) with this broker in
  the partition's ``replicas`` or ``adding_replicas``. A topic unknown to an INCOMPLETE image is not proven garbage:
  it counts as assigned.
- **Garbage since** (the grace floor): the newest metadata event that can have made the dir garbage, from the
  replay the executor did itself: for an id the controller no longer has, its removal and the (re)creation of its
  name; for a partition out of range, the topic's newest event; for a replica moved away, the partition's newest
  event and the topic's own. The replay starts at the OLDEST snapshot on disk so it sees every record Kafka still
  keeps; an id with no event in it was removed before that snapshot, whose time is then the bound. A source that
  keeps no deletion history (ZooKeeper) is bounded by the first time THIS executor saw the id absent
  (:mod:`pipelines.execute.absence_log`): the first apply that meets it skips it and starts the clock. With none of
  these the age is unknown, and unknown is refused. ``-delete`` dirs are dated by their mtime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pipelines import native
from pipelines.config.models import MetadataConfig
from pipelines.errors import DecodeError, PipelinesError, PreconditionFailed
from pipelines.execute.observe import ObservedDir
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.events import TOPIC_CREATED, MetadataEvent
from pipelines.metadata.image import MetadataImage


def _newest(table: dict, key: object, ms: int) -> None:
    if ms > table.get(key, -1):
        table[key] = ms


@dataclass(frozen=True)
class ControllerCheck:
    """A controller image plus the event times the executor dates garbage by."""

    image: MetadataImage
    topic_level_ms: Mapping[Uuid, int] = field(default_factory=dict)
    """Newest topic-level event of each topic id (created, removed, restated by a snapshot)."""
    topic_any_ms: Mapping[Uuid, int] = field(default_factory=dict)
    """Newest event of each topic id at any level (its partitions' included)."""
    partition_event_ms: Mapping[tuple[Uuid, int], int] = field(default_factory=dict)
    """Newest event of each (topic id, partition)."""
    name_created_ms: Mapping[str, int] = field(default_factory=dict)
    """Newest ``topic_created`` of each topic name."""
    replay_start_ms: int | None = None
    """Time of the snapshot the replay started from; None when it started at offset 0 or from nothing."""
    first_absent_ms: Mapping[Uuid, int] = field(default_factory=dict)
    """When this executor first saw each topic id absent from a complete image (its absence log)."""
    noticed_absent: dict[Uuid, int] = field(default_factory=dict)
    """Ids seen absent for the first time by this run, for the absence log (filled by :meth:`garbage_since`)."""

    @classmethod
    def from_events(cls, image: MetadataImage, events: Iterable[MetadataEvent],
                    replay_start_ms: int | None = None, first_absent_ms: Mapping[Uuid, int] | None = None,
                    ) -> ControllerCheck:
        level: dict[Uuid, int] = {}
        any_level: dict[Uuid, int] = {}
        part: dict[tuple[Uuid, int], int] = {}
        created: dict[str, int] = {}
        for e in events:
            if e.topic_id is None:
                continue
            _newest(any_level, e.topic_id, e.timestamp_ms)
            if e.partition is None:
                _newest(level, e.topic_id, e.timestamp_ms)
            else:
                _newest(part, (e.topic_id, e.partition), e.timestamp_ms)
            if e.event == TOPIC_CREATED and e.topic is not None:
                _newest(created, e.topic, e.timestamp_ms)
        return cls(image, level, any_level, part, created, replay_start_ms, dict(first_absent_ms or {}))

    # -- assignment ----------------------------------------------------------------------------------------------

    def _topic_id(self, d: ObservedDir) -> Uuid | None:
        if d.topic_id is None:
            return None
        try:
            return Uuid.from_string(d.topic_id)
        except DecodeError:  # read_partition_metadata already validated it; kept as a fail-safe
            return None

    def assigned(self, d: ObservedDir, broker_id: int) -> str | None:
        """Why the controller (still) assigns this dir's replica to ``broker_id``, or None if it does not."""
        image = self.image
        tid = self._topic_id(d)
        if tid is not None:
            topic = image.topics.by_id.get(tid)
            if topic is None and not image.complete:
                return (f"topic id {d.topic_id} is unknown to an incomplete controller image "
                        f"({'; '.join(image.incomplete_reasons)}); not proven garbage")
        else:
            topic = image.topics.by_name.get(d.topic) if d.topic is not None else None
            if topic is None and not image.complete:
                return "no topic id on disk and the controller image is incomplete; not proven garbage"
        if d.topic is not None and d.topic in image.topics_without_id:
            return (f"the controller has topic {d.topic} without a topic id (ZooKeeper, created before Kafka 2.8): "
                    "which incarnation a dir belongs to cannot be told; never touched")
        if topic is None or d.partition is None:
            return None
        part = topic.partitions.get(d.partition)
        if part is not None and (broker_id in part.replicas or broker_id in part.adding_replicas):
            return (f"the controller assigns {topic.name}-{d.partition} (topic id {topic.topic_id}) to broker "
                    f"{broker_id}: live replica, never touched")
        return None

    def names_of(self, d: ObservedDir) -> set[str]:
        """The dir's topic name and the name the controller has for its topic id (protection is judged on both)."""
        names = {d.topic} if d.topic is not None else set()
        tid = self._topic_id(d)
        topic = None if tid is None else self.image.topics.by_id.get(tid)
        if topic is not None:
            names.add(topic.name)
        return names

    # -- grace ---------------------------------------------------------------------------------------------------

    def garbage_since(self, d: ObservedDir, now: datetime) -> tuple[datetime | None, str]:
        """The latest time this dir can have become garbage, and what dates it; (None, why) when unknown."""
        if d.kind == "delete":
            return d.mtime, "-delete dir mtime"
        tid = self._topic_id(d)
        if tid is None:
            return None, "no topic id on disk"
        times: list[int] = []
        what: list[str] = []

        def take(ms: int | None, why: str) -> None:
            if ms is not None:
                times.append(ms)
                what.append(why)

        topic = self.image.topics.by_id.get(tid)
        if topic is None:  # deleted or recreated: its removal, and the creation of whatever has the name now
            take(self.topic_any_ms.get(tid), "the topic id's newest event")
            if d.topic is not None:
                take(self.name_created_ms.get(d.topic), f"the creation of the current {d.topic!r}")
            if not times:  # removed before anything this source remembers
                bounds = [ms for ms in (self.replay_start_ms, self.first_absent_ms.get(tid)) if ms is not None]
                if not bounds:
                    self.noticed_absent.setdefault(tid, int(now.timestamp() * 1000))
                    return None, (f"topic id {d.topic_id} is absent from the controller and no event dates its "
                                  "removal; first seen absent by this executor now, the grace floor counts from here")
                take(min(bounds), "the oldest snapshot or this executor's first sight of its absence")
        elif d.partition is None or d.partition not in topic.partitions:
            take(self.topic_any_ms.get(tid), "the topic's newest event")
        else:
            take(self.topic_level_ms.get(tid), "the topic's newest topic-level event")
            take(self.partition_event_ms.get((tid, d.partition)), "the partition's newest event")
        if not times:
            return None, f"no metadata event dates topic id {d.topic_id}"
        return datetime.fromtimestamp(max(times) / 1000, tz=timezone.utc), " and ".join(what)


def load_controller_check(metadata: MetadataConfig, first_absent_ms: Mapping[Uuid, int] | None = None,
                          ) -> ControllerCheck:
    """Re-read the configured controller metadata now (``metadata_log`` or ``zookeeper``).

    Raises:
        PreconditionFailed: no source the executor can re-read, or it cannot be loaded (nothing may be applied).
    """
    if metadata.kind not in ("metadata_log", "zookeeper"):
        why = "is none" if metadata.kind == "none" else f"{metadata.kind} cannot be re-read by the executor"
        raise PreconditionFailed(f"[controller_recheck] metadata.kind {why}: the executor re-checks every item "
                                 "against the controller before acting; configure metadata_log or zookeeper")
    if metadata.kind == "zookeeper":  # read-only, live or a dump
        from pipelines.metadata.zookeeper_source import ZooKeeperSource

        try:
            view = ZooKeeperSource(metadata).load()
        except (OSError, PipelinesError) as exc:
            where = metadata.source or metadata.zookeeper_connect
            raise PreconditionFailed(f"[controller_recheck] cannot re-read controller metadata from ZooKeeper "
                                     f"{where}: {exc}") from None
        return ControllerCheck.from_events(view.image, view.events, None, first_absent_ms)
    if metadata.source is None:
        raise PreconditionFailed("[controller_recheck] metadata.kind metadata_log needs metadata.source")
    from pipelines.metadata import load_metadata

    try:
        with native.pure_python():  # the reference decoder: no compiled code shared with the planner's replay
            result = load_metadata(metadata.source, metadata.storage_options or None, snapshot="oldest")
    except (OSError, ValueError, PipelinesError) as exc:
        raise PreconditionFailed(f"[controller_recheck] cannot re-read controller metadata {metadata.source}: "
                                 f"{exc}") from None
    return ControllerCheck.from_events(result.image, result.events, result.snapshot_timestamp_ms, first_absent_ms)
