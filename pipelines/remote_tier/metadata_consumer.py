"""``__remote_log_metadata`` read from a LIVE cluster (``remote_tier.metadata.bootstrap_servers``).

Two halves, so Spark can run one task per metadata partition:

* :func:`live_sources` (the driver, once): asks the cluster (kafka-python's admin client and consumer, with the
  ``kafka_client`` TLS/SASL settings) for the topic's partitions, its ``retention.ms``/``retention.bytes`` and,
  per partition, the earliest and the end offset. The end offsets are the snapshot: records produced after it are
  not waited for, and ``as_of_ms`` (the time just before the end offsets were asked for) is the time up to which a
  partition is known current. An unreachable cluster raises :class:`~pipelines.errors.SourceUnavailable` (exit 3),
  one line naming the servers and the cause. Read only: no consumer group, no commit, and metadata requests never
  ask the broker to auto-create a topic.
* :func:`read_live` (a task per partition): fetches the partition's raw record batches from the earliest to the
  end offset with Fetch requests and reads them with the SAME reader as a replica directory
  (:mod:`~pipelines.remote_tier.metadata_topic`: record batch v2, CRC-32C, the 64 MiB decompression bound, then
  :func:`~pipelines.remote_tier.metadata_codec.decode_remote_record`). kafka-python's own consumer is not used to
  read: it decompresses a batch without bound and is a second record decoder. A fetch returns at most
  ``FETCH_MAX_BYTES`` (or the one batch at the fetch offset when it is larger, up to the topic's
  ``max.message.bytes``), and only one fetch response is held at a time; a batch that expands past the bound, a
  bad CRC or a record that does not decode makes the partition unreliable from its offset, as on disk.

Coverage is told the way the directory path tells it (:class:`~pipelines.remote_tier.metadata_topic.MetadataCoverage`):
a partition whose earliest offset is not 0 is "read from offset N, not 0"; a topic whose retention is not infinite
makes every untracked segment possibly unrecorded (:func:`live_coverage_facts`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pipelines.config.kafka_client import kafka_python_options
from pipelines.errors import ConfigError, SourceUnavailable
from pipelines.kafka.record_batch import HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH
from pipelines.remote_tier.metadata_topic import METADATA_TOPIC, PartitionRead, PartitionReader

if TYPE_CHECKING:
    from pipelines.config.remote_tier import RemoteMetadataConfig

__all__ = ["FETCH_MAX_BYTES", "LiveSource", "live_coverage_facts", "live_sources", "read_live"]

FETCH_MAX_BYTES = 8 * 1024 * 1024
"""Bytes asked for per Fetch request (Kafka's ``max.message.bytes`` default is 1 MiB)."""
_PROLOGUE = struct.Struct(">qi")  # baseOffset, batchLength
_LAST_DELTA = struct.Struct(">i")  # lastOffsetDelta, at byte 23 of a batch
_WHERE = "remote_tier.metadata.kafka_client"
_UNKNOWN_TOPIC = 3  # UNKNOWN_TOPIC_OR_PARTITION: the cluster has no such topic


@dataclass(frozen=True)
class LiveSource:
    """One partition of the metadata topic on a live cluster, with the snapshot's offsets (``end_offset``
    exclusive) and the client options (secrets resolved on the driver; never printed: ``repr=False``)."""

    bootstrap_servers: str
    metadata_partition: int
    start_offset: int
    end_offset: int
    as_of_ms: int
    num_partitions: int
    retention_infinite: bool
    topic: str = METADATA_TOPIC
    client_options: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        """Where it was read, as the summary rows and notes name a replica (no credentials)."""
        return f"kafka://{self.bootstrap_servers}/{self.topic}-{self.metadata_partition}"


def _servers(servers: str) -> list[str]:
    return [s for s in servers.split(",") if s]


def _cause(exc: BaseException) -> str:
    """``Type: message`` on one line (kafka-python's messages already start with their type's name)."""
    text = str(exc)
    text = text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
    return " ".join(text.split())[:300]


def _unreachable(servers: str, exc: BaseException) -> SourceUnavailable:
    cause = _cause(exc)
    return SourceUnavailable(f"remote_tier.metadata.bootstrap_servers {servers}: cannot read {METADATA_TOPIC} from"
                             f" the cluster ({cause})")


def _infinite(configs: Any) -> bool:
    """``describe_configs`` answer for the topic -> both ``retention.ms`` and ``retention.bytes`` are -1."""
    entries = {}
    for resources in (configs or {}).values():
        for entries_of in (resources or {}).values():
            entries.update(entries_of or {})
    ms = (entries.get("retention.ms") or {}).get("value")
    size = (entries.get("retention.bytes") or {}).get("value")
    return str(ms) == "-1" and size in (None, "-1", -1)


def live_sources(config: RemoteMetadataConfig, *, topic: str = METADATA_TOPIC) -> tuple[list[LiveSource], list[str]]:
    """The topic's partitions on the live cluster as sources to read, and notes (a cluster without the topic).

    Raises:
        ConfigError: kafka-python is missing, rejects the ``kafka_client`` settings, or a ``*_env`` is unset.
        SourceUnavailable: the cluster cannot be reached, or does not answer (exit 3).
    """
    assert config.bootstrap_servers is not None
    servers = config.bootstrap_servers
    try:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
        from kafka.errors import KafkaConfigurationError, KafkaError, for_code
    except ImportError as exc:
        raise ConfigError("remote_tier.metadata.bootstrap_servers needs kafka-python: pip install"
                          " 'kafka-logdir-gc[admin]'") from exc
    options = kafka_python_options(config.kafka_client, _WHERE)
    admin = consumer = None
    try:
        admin = KafkaAdminClient(bootstrap_servers=_servers(servers), **options)
        described = admin.describe_topics([topic])
        refused = [t["error_code"] for t in described if t.get("error_code", 0) not in (0, _UNKNOWN_TOPIC)]
        if refused:  # e.g. TOPIC_AUTHORIZATION_FAILED: not "no topic"
            raise _unreachable(servers, for_code(refused[0])(f"describing {topic}"))
        partitions = sorted(p["partition_index"] for t in described if t.get("error_code", 0) == 0
                            for p in t.get("partitions") or ())
        if not partitions:
            return [], [f"no {topic} topic on the cluster at {servers}: every remote segment is untracked and may be"
                        " unrecorded"]
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        infinite = _infinite(configs)
        consumer = KafkaConsumer(bootstrap_servers=_servers(servers), group_id=None, enable_auto_commit=False,
                                 allow_auto_create_topics=False, **options)
        tps = [TopicPartition(topic, p) for p in partitions]
        earliest = consumer.beginning_offsets(tps)
        as_of_ms = int(time.time() * 1000)  # before the end offsets: what they hold was committed by then
        end = consumer.end_offsets(tps)
    except KafkaConfigurationError as exc:
        raise ConfigError(f"{_WHERE}: {exc}") from None
    except (KafkaError, OSError, ValueError) as exc:
        raise _unreachable(servers, exc) from None
    finally:
        for client in (consumer, admin):
            if client is not None:
                client.close()
    sources = [LiveSource(servers, tp.partition, earliest[tp], end[tp], as_of_ms, len(partitions), infinite, topic,
                          options) for tp in tps]
    return sources, []


def live_coverage_facts(sources: Sequence[Any]) -> tuple[int | None, bool] | None:
    """``(partition count, retention infinite)`` as the live cluster told them, or None when the sources are not
    live (the step then takes them from the controller image)."""
    live = [s for s in sources if isinstance(s, LiveSource)]
    if not live:
        return None
    return live[0].num_partitions, all(s.retention_infinite for s in live)


def _complete(data: memoryview) -> tuple[int, int | None]:
    """Bytes of the whole batches at the start of a fetch response (a fetch may end in a cut batch), and the offset
    after the last of them (from the headers: a corrupt batch is skipped by size, as the reader does)."""
    pos, after = 0, None
    while len(data) - pos >= HEADER_SIZE:
        base, length = _PROLOGUE.unpack_from(data, pos)
        if length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > len(data):
            break
        after = base + _LAST_DELTA.unpack_from(data, pos + 23)[0] + 1
        pos += LOG_OVERHEAD + length
    return pos, after


def _fetch(client: Any, leader: int, topic: str, partition: int, offset: int, max_bytes: int) -> Any:
    from kafka.protocol.consumer.fetch import FetchRequest

    part = FetchRequest.FetchTopic.FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                                  last_fetched_epoch=-1, log_start_offset=-1,
                                                  partition_max_bytes=max_bytes)
    request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0, session_id=0,
                           session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
                           forgotten_topics_data=[], rack_id="", min_version=4, max_version=12)
    response = client.send_and_receive(leader, request)
    (data,) = [p for t in response.responses for p in t.partitions if p.partition_index == partition]
    return data


def read_live(source: LiveSource, *, max_bytes: int = FETCH_MAX_BYTES) -> PartitionRead:
    """Read one partition from ``start_offset`` up to ``end_offset`` (the snapshot) into a :class:`PartitionRead`.

    A fetch that fails part way leaves what was read and makes the rest unreliable, with the cause in
    ``problems``.

    Raises:
        OSError: the cluster cannot be reached at all (the partition is then a read error row).
    """
    from kafka import TopicPartition
    from kafka.errors import KafkaError, for_code
    from kafka.net.compat import KafkaNetClient

    reader = PartitionReader(source.metadata_partition, source.url)
    offset = source.start_offset
    try:
        client = KafkaNetClient(bootstrap_servers=_servers(source.bootstrap_servers), allow_auto_create_topics=False,
                                **dict(source.client_options))
    except (KafkaError, ValueError) as exc:
        raise OSError(f"cannot reach {source.bootstrap_servers}: {_cause(exc)}") from None
    try:
        tp = TopicPartition(source.topic, source.metadata_partition)
        timeout = int(source.client_options.get("request_timeout_ms", 30_000))
        client.poll(timeout_ms=timeout, future=client.cluster.set_topics([source.topic]))
        while offset < source.end_offset:
            leader = client.cluster.leader_for_partition(tp)
            if leader is None or leader < 0:
                reader.bad(offset, f"no leader for {source.topic}-{source.metadata_partition} at offset {offset}")
                break
            part = _fetch(client, leader, source.topic, source.metadata_partition, offset, max_bytes)
            if part.error_code != 0:
                reader.bad(offset, f"fetch at offset {offset}: {for_code(part.error_code).__name__}")
                break
            data = memoryview(part.records or b"")
            size, after = _complete(data)
            if after is None or after <= offset:
                reader.bad(offset, f"fetch at offset {offset} returned no whole batch ({len(data)} bytes)")
                break
            reader.batches(data[:size], f"fetch at offset {offset}", offset)
            offset = after
    except (KafkaError, OSError) as exc:
        reader.bad(offset, f"fetch at offset {offset} failed: {_cause(exc)}")
    finally:
        client.close()
    read = reader.result(source.as_of_ms)
    if source.start_offset == source.end_offset:  # an empty partition: its earliest offset is the broker's fact
        return replace(read, first_offset=source.start_offset)
    if read.first_offset is not None and read.first_offset < source.start_offset:
        return replace(read, first_offset=source.start_offset)  # a batch straddling the log start: not "from 0"
    return read
