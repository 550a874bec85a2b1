"""Build a ``MetadataImage`` from a LIVE cluster's admin API (kafka-python's ``KafkaAdminClient``).

The third controller source, beside the metadata log and ``kafka-topics --describe`` output. Three calls:

- ``describe_topics()`` (MetadataRequest for ALL topics, internal ones included): topic ids, partitions, replicas,
  ISR, leader and leader epoch;
- ``describe_cluster()``: broker ids, racks and fencing;
- ``describe_configs()`` for each broker's ``log.segment.delete.delay.ms``: the broker's EFFECTIVE value (static,
  dynamic or default), stored as a broker config so ``file_delete_delay_ms`` finds it.

The answers become metadata records replayed through ``MetadataDelta`` like any other source. What the admin API
does not give: partition epochs (0), KIP-858 directory assignments (MIGRATING), broker epochs (-1) and registered
log dir ids (none), adding/removing replicas, ELR. There is NO event history (the API only shows the present), so
nothing has a grace-clock start: deleted-topic garbage is reported, never planned, as with topics describe output.

The image is ``complete`` only when every call succeeded, every topic and partition came back without an error
that hides its replicas, and every topic has an id. The broker answers from its own metadata cache, which can lag
the controller by a moment, and silently leaves out topics the principal may not DESCRIBE: use a principal that
may describe every topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pipelines.config.kafka_client import kafka_python_options
from pipelines.errors import ConfigError, DecodeError
from pipelines.kafka.metadata_codec import make_record
from pipelines.kafka.uuid import ZERO, Uuid
from pipelines.metadata.image import BROKER_RESOURCE, MetadataImage, MetadataProvenance
from pipelines.metadata.image_delta import MetadataDelta
from pipelines.metadata.rows import DELETE_DELAY_KEY
from pipelines.metadata.source import ControllerSource, ControllerView

SOURCE_PREFIX = "admin:"

#: Partition errors that still come with the full replica list: LEADER_NOT_AVAILABLE (5), REPLICA_NOT_AVAILABLE (9).
_HARMLESS_PARTITION_ERRORS = frozenset({0, 5, 9})

T = TypeVar("T")


def _topic_id(value: Any) -> Uuid:
    """kafka-python gives a dashed string (3.x; None for the zero id) or a ``uuid.UUID``; base64url is accepted."""
    if value is None:
        return ZERO
    if isinstance(value, uuid.UUID):
        return Uuid.from_bytes(value.bytes)
    if isinstance(value, bytes):
        return Uuid.from_bytes(value)
    if isinstance(value, str) and len(value) == 36:
        return Uuid.from_bytes(uuid.UUID(value).bytes)
    if isinstance(value, str):
        return Uuid.from_string(value)
    raise ValueError(f"topic id of unexpected type {type(value).__name__}")


def _delete_delays(configs: Mapping[str, Any] | None) -> dict[str, str]:
    """``describe_configs`` answer → {broker id: effective log.segment.delete.delay.ms}."""
    out: dict[str, str] = {}
    for broker, entries in ((configs or {}).get("broker") or {}).items():
        value = (entries.get(DELETE_DELAY_KEY) or {}).get("value")
        if value is not None:
            out[str(broker)] = str(value)
    return out


def image_from_admin_responses(
    source: str,
    topics: Sequence[Mapping[str, Any]] | None,
    cluster: Mapping[str, Any] | None,
    configs: Mapping[str, Any] | None = None,
    failures: Iterable[str] = (),
) -> MetadataImage:
    """The image from what ``describe_topics()``, ``describe_cluster()`` and ``describe_configs()`` returned.

    ``None`` for a call that failed (its reason in ``failures``). Problems become ``incomplete_reasons``.
    """
    delta = MetadataDelta()
    problems = list(failures)
    if topics is None:
        problems.append("no topic listing")
    for n, topic in enumerate(topics or ()):
        name = topic.get("name")
        if topic.get("error_code", 0) != 0:
            problems.append(f"topic {name!r}: error code {topic.get('error_code')}")
            continue
        try:
            topic_id = _topic_id(topic.get("topic_id"))
        except (ValueError, DecodeError) as exc:
            problems.append(f"topic {name!r}: unusable topic id {topic.get('topic_id')!r} ({exc})")
            continue
        if topic_id == ZERO or not name:
            problems.append(f"topic {name!r}: no topic id (broker or kafka-python too old for KIP-516 ids)")
            continue
        delta.replay(make_record("TopicRecord", name=name, topic_id=topic_id), n)
        partitions = topic.get("partitions") or ()
        indexes = sorted(p["partition_index"] for p in partitions)
        if indexes != list(range(len(indexes))):
            problems.append(f"topic {name!r}: partitions {indexes} are not 0..{len(indexes) - 1}")
        for p in partitions:
            if p.get("error_code", 0) not in _HARMLESS_PARTITION_ERRORS:
                problems.append(f"topic {name!r} partition {p['partition_index']}: error code {p['error_code']}")
                continue
            delta.replay(make_record(
                "PartitionRecord", partition_id=p["partition_index"], topic_id=topic_id,
                replicas=tuple(p["replica_nodes"]), isr=tuple(p.get("isr_nodes") or ()),
                leader=p.get("leader_id", -1), leader_epoch=p.get("leader_epoch", -1), partition_epoch=0,
            ), n)
    if cluster is None:
        problems.append("no broker listing")
    for broker in (cluster or {}).get("brokers") or ():
        delta.replay(make_record("RegisterBrokerRecord", broker_id=broker["broker_id"], broker_epoch=-1,
                                 fenced=bool(broker.get("is_fenced", False)), rack=broker.get("rack"),
                                 incarnation_id=None), -1)
    for broker_id, value in sorted(_delete_delays(configs).items()):
        delta.replay(make_record("ConfigRecord", resource_type=BROKER_RESOURCE, resource_name=broker_id,
                                 name=DELETE_DELAY_KEY, value=value), -1)
    problems += [str(p) for p in delta.errors]
    image = delta.apply(MetadataProvenance(source))
    return image.with_completeness(not problems, tuple(problems))


def _call(what: str, failures: list[str], fn: Callable[[], T], errors: tuple[type[BaseException], ...]) -> T | None:
    try:
        return fn()
    except errors as exc:
        failures.append(f"{what} failed: {type(exc).__name__}: {exc}")
        return None


def image_from_admin(bootstrap_servers: str, **client_options: Any) -> MetadataImage:
    """Ask a live cluster (``KafkaAdminClient(bootstrap_servers=..., **client_options)``) for its current state.

    Never raises for an unreachable cluster or a failed call: those make the image incomplete with the reason.

    Raises:
        ConfigError: kafka-python is not installed (``pip install 'kafka-logdir-gc[admin]'``), or it rejects
            ``client_options``.
    """
    try:
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
        from kafka.errors import KafkaConfigurationError, KafkaError
    except ImportError as exc:
        raise ConfigError("metadata.kind admin needs kafka-python: pip install 'kafka-logdir-gc[admin]'") from exc
    source = SOURCE_PREFIX + bootstrap_servers
    errors = (KafkaError, OSError)
    failures: list[str] = []
    try:
        client = KafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_options)
    except KafkaConfigurationError as exc:  # a KafkaError, but the caller's mistake, not the cluster's state
        raise ConfigError(f"admin client options: {exc}") from exc
    except errors as exc:
        failures.append(f"connecting failed: {type(exc).__name__}: {exc}")
        return image_from_admin_responses(source, None, None, None, failures)
    try:
        topics = _call("describe_topics", failures, client.describe_topics, errors)
        cluster = _call("describe_cluster", failures, client.describe_cluster, errors)
        configs = None
        if cluster is not None and cluster.get("brokers"):
            resources = [ConfigResource(ConfigResourceType.BROKER, str(b["broker_id"]), {DELETE_DELAY_KEY: None})
                         for b in cluster["brokers"] if not b.get("is_fenced")]
            configs = _call("describe_configs", failures,
                            lambda: client.describe_configs(resources, config_filter="all"), errors)
    finally:
        client.close()
    return image_from_admin_responses(source, topics, cluster, configs, failures)


class AdminSource(ControllerSource):
    """``metadata.kind: admin``: a live cluster's admin API (``metadata.bootstrap_servers``)."""

    kind = "admin"

    def load(self) -> ControllerView:
        assert self.config.bootstrap_servers is not None
        client = self.config.kafka_client
        options = kafka_python_options(client, "metadata.kafka_client") if client is not None else {}
        image = image_from_admin(self.config.bootstrap_servers, **options)
        notes = ("admin API: current state only, no metadata events", *image.incomplete_reasons)
        return ControllerView(image, (), image.provenance.source, notes)
