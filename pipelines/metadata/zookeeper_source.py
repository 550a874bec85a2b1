"""``metadata.kind: zookeeper``: the controller image of a ZooKeeper-mode cluster (Kafka 2.8 to 3.9), read-only.

From the znodes (``zookeeper_znodes``; a live ensemble or a ``metadata dump-zk`` file):

- ``/brokers/topics/<t>``: topic id (KIP-516, ``topic_id`` since 2.8), assignment, ``adding_replicas`` and
  ``removing_replicas``; ``/brokers/topics/<t>/partitions/<p>/state``: leader, leader epoch, ISR (the state znode's
  version is the partition epoch, as in Kafka);
- ``/brokers/ids/<id>``: the registered (live) brokers, broker epoch = the znode's czxid, rack;
- ``/admin/delete_topics/<t>``: deletions queued and not finished (``image.topic_deletions``, queued at the znode's
  ctime); ``/admin/reassign_partitions``: a reassignment the controller may not have picked up yet, merged as
  adding/removing replicas (a target broker counts as assigned);
- ``/config/brokers/<id|<default>>`` and ``/config/topics/<t>``: dynamic configs, among them
  ``log.segment.delete.delay.ms`` (static ``server.properties`` values are not in ZooKeeper).

Events (``metadata_events``): ``topic_created`` at the topic znode's ctime (a recreated topic is a new znode),
``replicas_changed`` (topic level) at its mtime when it was ever rewritten (assignment, partition count or topic id
changed), ``topic_deletion_queued`` at the delete znode's ctime; each event's offset is the znode's zxid.
ZooKeeper keeps no history: a deleted topic's znodes are simply gone, so ``topic_removed`` is stamped by the run
that first sees a known topic missing (``source.removed_topic_events``).

Completeness: the image is incomplete when ``/brokers/topics`` or ``/brokers/ids`` is absent (a wrong chroot must
never read as "every topic deleted"), or a topic znode cannot be parsed. A topic without a topic id does not make
the whole image incomplete: it goes to ``image.topics_without_id`` and only its directories are ``unknown``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pipelines.config.models import MetadataConfig
from pipelines.errors import DecodeError, PipelinesError, PreconditionFailed
from pipelines.kafka.uuid import MIGRATING, ZERO, Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    BrokerImage,
    ConfigsImage,
    MetadataImage,
    MetadataProvenance,
    PartitionImage,
    TopicDeletion,
    TopicImage,
    TopicsImage,
)
from pipelines.metadata.shared_values import shared_table
from pipelines.metadata.source import ControllerSource, ControllerView
from pipelines.metadata.zookeeper_znodes import Znode, ZnodeSnapshot, load_dump, read_live

SOURCE_PREFIX = "zookeeper:"
DEFAULT_BROKER_CONFIG = "<default>"
"""Kafka's name for the cluster-wide dynamic broker config znode; the image's cluster default is resource ""."""


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise DecodeError(f"{what}: {value!r} is not a list of broker ids")
    return tuple(value)


def _per_partition(doc: Mapping[str, Any], key: str, path: str) -> dict[int, tuple[int, ...]]:
    raw = doc.get(key) or {}
    if not isinstance(raw, Mapping):
        raise DecodeError(f"{path}: {key} is not an object")
    try:
        return {int(p): _ints(r, f"{path} {key}[{p}]") for p, r in raw.items()}
    except ValueError:
        raise DecodeError(f"{path}: {key} has a partition that is not a number") from None


@dataclass
class _Build:
    snapshot: ZnodeSnapshot
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    events: list[MetadataEvent] = field(default_factory=list)

    def event(self, node: Znode, zxid: int, ms: int, kind: str, topic_id: Uuid | None, topic: str,
              detail: dict[str, Any]) -> None:
        self.events.append(MetadataEvent(zxid, ms, kind, topic_id, topic, None,
                                         {"zookeeper": node.path, **detail}))

    def reassignments(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """``/admin/reassign_partitions``: (topic, partition) → target replicas."""
        node = self.snapshot.get("/admin/reassign_partitions")
        if node is None or node.data is None:
            return {}
        try:
            entries = node.json().get("partitions") or []
            return {(str(e["topic"]), int(e["partition"])): _ints(e["replicas"], node.path) for e in entries}
        except (DecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            self.problems.append(f"{node.path}: unreadable ({exc}); a reassignment may be running unseen")
            return {}

    def partition(self, topic: str, p: int, replicas: tuple[int, ...], adding: tuple[int, ...],
                  removing: tuple[int, ...], target: tuple[int, ...] | None) -> PartitionImage:
        if target is not None and not adding and not removing:  # not picked up by the controller yet
            adding = tuple(b for b in target if b not in replicas)
            removing = tuple(b for b in replicas if b not in target)
            replicas = (*replicas, *adding)
        state_path = f"/brokers/topics/{topic}/partitions/{p}/state"
        state = self.snapshot.get(state_path)
        leader, leader_epoch, isr, epoch, recovery = -1, -1, (), 0, 0
        if state is None:
            self.notes.append(f"{state_path} absent: leader and ISR unknown")
        else:
            try:
                doc = state.json()
                leader, leader_epoch = int(doc.get("leader", -1)), int(doc.get("leader_epoch", -1))
                isr, epoch = _ints(doc.get("isr", []), state_path), state.version
                recovery = int(doc.get("leader_recovery_state", 0))
            except (DecodeError, TypeError, ValueError, AttributeError) as exc:
                self.notes.append(f"{state_path}: unreadable ({exc}): leader and ISR unknown")
        share = shared_table().setdefault  # one object per distinct replica list, ISR, leader and directory list
        dirs = (MIGRATING,) * len(replicas)
        return PartitionImage(p, share(replicas, replicas), share(isr, isr), removing, adding, share(leader, leader),
                              leader_epoch, epoch, share(dirs, dirs), recovery)

    def topic(self, name: str, targets: Mapping[tuple[str, int], tuple[int, ...]]) -> TopicImage | None:
        """The topic znode as a ``TopicImage`` (zero id when it has none); None, with a problem, if unreadable."""
        node = self.snapshot.get(f"/brokers/topics/{name}")
        if node is None:
            return None  # deleted while the tree was walked
        try:
            doc = node.json()
            if not isinstance(doc, Mapping):
                raise DecodeError(f"{node.path}: not an object")
            assignment = _per_partition(doc, "partitions", node.path)
            adding = _per_partition(doc, "adding_replicas", node.path)
            removing = _per_partition(doc, "removing_replicas", node.path)
            raw_id = doc.get("topic_id")
            topic_id = ZERO if raw_id is None else Uuid.from_string(str(raw_id))
        except (DecodeError, ValueError) as exc:
            self.problems.append(f"topic {name}: {exc}")
            return None
        if sorted(assignment) != list(range(len(assignment))):
            self.notes.append(f"topic {name}: partitions {sorted(assignment)} are not 0..{len(assignment) - 1}")
        partitions = {p: self.partition(name, p, r, adding.get(p, ()), removing.get(p, ()), targets.get((name, p)))
                      for p, r in sorted(assignment.items())}
        if topic_id != ZERO:
            self.event(node, node.czxid, node.ctime, ev.TOPIC_CREATED, topic_id, name,
                       {"partitions": len(partitions)})
            if node.mzxid != node.czxid:
                self.event(node, node.mzxid, node.mtime, ev.REPLICAS_CHANGED, topic_id, name,
                           {"what": "topic znode rewritten: assignment, partition count or topic id",
                            "replicas": {str(p): list(r) for p, r in sorted(assignment.items())}})
        return TopicImage(topic_id, name, MappingProxyType(partitions))

    def brokers(self) -> dict[int, BrokerImage]:
        out: dict[int, BrokerImage] = {}
        for child in self.snapshot.children("/brokers/ids") or ():
            node = self.snapshot.get(f"/brokers/ids/{child}")
            if node is None or not child.isdigit():
                continue  # went away while the tree was walked, or not a broker
            rack = None
            try:
                doc = node.json()
                rack = doc.get("rack") if isinstance(doc, Mapping) else None
            except DecodeError as exc:
                self.notes.append(f"{node.path}: unreadable registration ({exc})")
            out[int(child)] = BrokerImage(int(child), node.czxid, False, False, rack=rack)
        return out

    def configs(self, parent: str, resource_type: int) -> dict[tuple[int, str], Mapping[str, str]]:
        out: dict[tuple[int, str], Mapping[str, str]] = {}
        for child in self.snapshot.children(parent) or ():
            node = self.snapshot.get(f"{parent}/{child}")
            if node is None or node.data is None:
                continue
            try:
                values = node.json().get("config") or {}
                name = "" if resource_type == BROKER_RESOURCE and child == DEFAULT_BROKER_CONFIG else child
                out[(resource_type, name)] = MappingProxyType({str(k): str(v) for k, v in values.items()})
            except (DecodeError, AttributeError) as exc:
                self.notes.append(f"{node.path}: unreadable config ({exc})")
        return out

    def deletions(self, topics: Mapping[str, TopicImage]) -> dict[str, TopicDeletion]:
        out: dict[str, TopicDeletion] = {}
        for name in self.snapshot.children("/admin/delete_topics") or ():
            node = self.snapshot.get(f"/admin/delete_topics/{name}")
            if node is None:
                continue  # finished while the tree was walked
            queued = node.ctime if node.ctime >= 0 else max(self.snapshot.taken_at_ms, 0)  # a dump without stat
            out[name] = TopicDeletion(name, queued)
            topic = topics.get(name)
            topic_id = None if topic is None or topic.topic_id == ZERO else topic.topic_id
            self.event(node, node.czxid, node.ctime, ev.TOPIC_DELETION_QUEUED, topic_id, name, {})
        return out


def image_from_znodes(snapshot: ZnodeSnapshot) -> tuple[MetadataImage, tuple[MetadataEvent, ...], tuple[str, ...]]:
    """(image, events, notes) from the Kafka znodes of one cluster."""
    b = _Build(snapshot)
    topic_names = snapshot.children("/brokers/topics")
    if topic_names is None:
        b.problems.append("no /brokers/topics: not a Kafka cluster's ZooKeeper tree (check the chroot)")
    if snapshot.children("/brokers/ids") is None:
        b.problems.append("no /brokers/ids: not a Kafka cluster's ZooKeeper tree (check the chroot)")
    targets = b.reassignments()
    topics = [t for t in (b.topic(name, targets) for name in topic_names or ()) if t is not None]
    by_id: dict[Uuid, TopicImage] = {}
    for t in topics:
        if t.topic_id == ZERO:
            continue
        if t.topic_id in by_id:
            b.problems.append(f"topics {by_id[t.topic_id].name} and {t.name} share topic id {t.topic_id}")
        by_id[t.topic_id] = t
    cluster_id = snapshot.get("/cluster/id")
    if cluster_id is not None and cluster_id.data is not None:
        b.notes.append(f"/cluster/id: {cluster_id.data.decode('utf-8', 'replace')}")
    without_id = {t.name: t for t in topics if t.topic_id == ZERO}
    if without_id:
        b.notes.append(f"{len(without_id)} topic(s) without a topic id (created before Kafka 2.8): their "
                       f"directories cannot be judged: {', '.join(sorted(without_id)[:10])}")
    configs = {**b.configs("/config/brokers", BROKER_RESOURCE), **b.configs("/config/topics", TOPIC_RESOURCE)}
    named = {t.name: t for t in topics}
    image = MetadataImage(
        provenance=MetadataProvenance(SOURCE_PREFIX + snapshot.zookeeper_connect, snapshot.last_zxid, -1,
                                      snapshot.taken_at_ms),
        topics=TopicsImage(MappingProxyType(by_id), MappingProxyType({t.name: t for t in by_id.values()})),
        brokers=MappingProxyType(b.brokers()),
        configs=ConfigsImage(MappingProxyType(configs)),
        topic_deletions=MappingProxyType(b.deletions(named)),
        topics_without_id=MappingProxyType(without_id),
    ).with_completeness(not b.problems, tuple(b.problems))
    return image, tuple(b.events), tuple(b.problems + b.notes)


class ZooKeeperSource(ControllerSource):
    """A live ensemble (``metadata.zookeeper_connect``) or a dump file (``metadata.source``)."""

    kind = "zookeeper"

    def snapshot(self) -> ZnodeSnapshot:
        """Raises SourceUnavailable, ConfigError; for a dump also OSError and DecodeError."""
        if self.config.source:
            return load_dump(self.config.source, self.config.storage_options)
        return read_live(self.config)

    def load(self) -> ControllerView:
        snap = self.snapshot()
        image, events, notes = image_from_znodes(snap)
        if self.config.source:
            notes = (f"ZooKeeper dump {self.config.source} taken at {snap.taken_at_ms} ms", *notes)
        return ControllerView(image, events, image.provenance.source, notes, removals_seen_at_ms=snap.taken_at_ms)


def image_for_executor(config: MetadataConfig) -> MetadataImage:
    """The executor's re-read (read-only) before it acts. Raises PreconditionFailed when ZooKeeper (or the dump)
    cannot be read: the check is refused, never skipped."""
    try:
        return ZooKeeperSource(config).load().image
    except (OSError, PipelinesError) as exc:
        where = config.source or config.zookeeper_connect
        raise PreconditionFailed(f"cannot re-read controller metadata from ZooKeeper {where}: {exc}") from None
