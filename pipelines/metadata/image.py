"""The controller metadata image: an immutable value, after Kafka's ``metadata/image``.

A ``MetadataImage`` is what a KRaft broker would hold after replaying the metadata log up to
``provenance.last_offset``. It is built only by applying a ``MetadataDelta`` (``pipelines.metadata.image_delta``) to a
base image, starting from ``EMPTY``; untouched parts are shared by reference between images.

Every mapping is a read-only ``MappingProxyType`` and every list a tuple, so an image cannot be changed after the
fact. ``complete`` is set by the loader: an image is complete only when nothing suggests that part of the log is
missing (see ``pipelines.metadata.completeness``). A topic id absent from an INCOMPLETE image is unknown, never
"deleted".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pipelines.kafka.uuid import Uuid

EMPTY_MAP: Mapping = MappingProxyType({})


def _empty() -> Mapping:
    return EMPTY_MAP

#: ConfigRecord resource types (``ConfigResource.Type``).
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


@dataclass(frozen=True, slots=True)
class MetadataProvenance:
    """Where an image came from: the source and the last offset/epoch/append time it contains.

    ``last_offset`` is -1 when nothing was replayed. For a snapshot alone it is the snapshot end offset - 1.
    """

    source: str = ""
    last_offset: int = -1
    last_epoch: int = -1
    last_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class ReplayProblem:
    """A record that could not be applied; the replay went on without it."""

    offset: int
    record: str
    message: str

    def __str__(self) -> str:
        return f"offset {self.offset}: {self.record}: {self.message}"


@dataclass(frozen=True, slots=True)
class PartitionImage:
    """One partition registration (Kafka's ``PartitionRegistration``).

    ``directories`` has one KIP-858 directory id per entry of ``replicas`` (same order); MIGRATING when unknown.
    ``leader`` is -1 without a leader. ``leader_recovery_state``: 0 RECOVERED, 1 RECOVERING.
    """

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[Uuid, ...]
    leader_recovery_state: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def directory_of(self, broker_id: int) -> Uuid | None:
        """The directory assigned to ``broker_id``'s replica, or None if the broker holds no replica."""
        for replica, directory in zip(self.replicas, self.directories, strict=False):
            if replica == broker_id:
                return directory
        return None

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """Replicas once a running reassignment completes (replicas minus removing)."""
        if not self.removing_replicas:
            return self.replicas
        removing = set(self.removing_replicas)
        return tuple(r for r in self.replicas if r not in removing)


@dataclass(frozen=True, slots=True)
class TopicImage:
    topic_id: Uuid
    name: str
    partitions: Mapping[int, PartitionImage] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    """Topics by id and by name; the two maps always hold the same ``TopicImage`` objects."""

    by_id: Mapping[Uuid, TopicImage] = field(default_factory=_empty)
    by_name: Mapping[str, TopicImage] = field(default_factory=_empty)

    def __len__(self) -> int:
        return len(self.by_id)

    def get(self, topic_id: Uuid) -> TopicImage | None:
        return self.by_id.get(topic_id)

    def partition(self, topic_id: Uuid, partition: int) -> PartitionImage | None:
        topic = self.by_id.get(topic_id)
        return None if topic is None else topic.partitions.get(partition)


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """A topic the controller was asked to delete and has not finished deleting (ZooKeeper mode:
    ``/admin/delete_topics/<topic>``; KRaft deletes at once and never has one). ``queued_ms``: when it was queued."""

    topic: str
    queued_ms: int


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerImage:
    """One broker registration. ``log_dirs`` are the online directory ids the broker registered (KIP-858)."""

    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: tuple[Uuid, ...] = ()
    rack: str | None = None
    incarnation_id: Uuid | None = None
    endpoints: tuple[Endpoint, ...] = ()
    is_migrating_zk_broker: bool = False


@dataclass(frozen=True, slots=True)
class ConfigsImage:
    """Dynamic configs by (resource type, resource name). Broker resource name "" is the cluster default."""

    resources: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=_empty)

    def get(self, resource_type: int, resource_name: str, key: str) -> str | None:
        return self.resources.get((resource_type, resource_name), EMPTY_MAP).get(key)

    def topic_config(self, topic: str, key: str) -> str | None:
        """A topic-level dynamic config value (no broker fallback: that depends on the broker)."""
        return self.get(TOPIC_RESOURCE, topic, key)

    def broker_config(self, broker_id: int | None, key: str) -> str | None:
        """The broker-specific dynamic value, else the cluster-wide default (resource name ""); None if neither."""
        if broker_id is not None:
            value = self.get(BROKER_RESOURCE, str(broker_id), key)
            if value is not None:
                return value
        return self.get(BROKER_RESOURCE, "", key)


@dataclass(frozen=True, slots=True)
class MiscImage:
    """Parts this project only counts: controllers, producer ids, ACLs, SCRAM, delegation tokens, quotas."""

    controllers: Mapping[int, Uuid] = field(default_factory=_empty)
    next_producer_id: int = -1
    acls: Mapping[Uuid, tuple] = field(default_factory=_empty)
    scram: Mapping[tuple[str, int], int] = field(default_factory=_empty)
    delegation_tokens: Mapping[str, str] = field(default_factory=_empty)
    client_quotas: Mapping[tuple, float] = field(default_factory=_empty)
    zk_migration_state: int | None = None

    def counts(self) -> dict[str, int]:
        return {
            "controllers": len(self.controllers),
            "acls": len(self.acls),
            "scram_credentials": len(self.scram),
            "delegation_tokens": len(self.delegation_tokens),
            "client_quotas": len(self.client_quotas),
        }


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole controller image. Compare images with ``==``: they are values."""

    provenance: MetadataProvenance = MetadataProvenance()
    features: Mapping[str, int] = field(default_factory=_empty)
    topics: TopicsImage = TopicsImage()
    brokers: Mapping[int, BrokerImage] = field(default_factory=_empty)
    configs: ConfigsImage = ConfigsImage()
    misc: MiscImage = MiscImage()
    complete: bool = False
    incomplete_reasons: tuple[str, ...] = ("nothing loaded",)
    replay_errors: tuple[ReplayProblem, ...] = ()
    topic_deletions: Mapping[str, TopicDeletion] = field(default_factory=_empty)
    """Topics queued for deletion by name (ZooKeeper mode only); they are still in ``topics`` until deleted."""
    topics_without_id: Mapping[str, TopicImage] = field(default_factory=_empty)
    """Topics the controller has WITHOUT a topic id (ZooKeeper mode, created before Kafka 2.8 and never given one),
    by name, each with the zero id: the image cannot tell their directories' ids apart, so it is incomplete for
    them (their directories are ``unknown``), not for the others."""

    @property
    def metadata_version(self) -> int | None:
        """The ``metadata.version`` feature level, None if never set."""
        return self.features.get("metadata.version")

    @property
    def last_offset(self) -> int:
        return self.provenance.last_offset

    def topic_config(self, topic: str, key: str) -> str | None:
        return self.configs.topic_config(topic, key)

    def broker_config(self, broker_id: int | None, key: str) -> str | None:
        return self.configs.broker_config(broker_id, key)

    def with_completeness(self, complete: bool, reasons: tuple[str, ...]) -> MetadataImage:
        return replace(self, complete=complete, incomplete_reasons=() if complete else reasons)

    def same_state(self, other: MetadataImage) -> bool:
        """Equal content, ignoring provenance, completeness and replay errors."""
        return (self.features, self.topics, self.brokers, self.configs, self.misc, self.topic_deletions,
                self.topics_without_id) == (
            other.features, other.topics, other.brokers, other.configs, other.misc, other.topic_deletions,
            other.topics_without_id,
        )


EMPTY = MetadataImage()


