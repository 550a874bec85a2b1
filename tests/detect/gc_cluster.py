"""A tiny hand-built cluster for detection and re-check tests: table rows AND the equivalent ``MetadataImage``.

Both views are derived here from one description, so a Spark test and a re-check test see the same cluster.
Expected classes are never computed here: each test states them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

from pipelines.kafka.uuid import MIGRATING, Uuid
from pipelines.metadata.rows import kafka_long
from pipelines.tables.schemas import (
    CONTROLLER_BROKER_CONFIGS,
    CONTROLLER_BROKERS,
    CONTROLLER_PARTITIONS,
    CONTROLLER_TOPICS,
    LOG_DIRS,
    METADATA_EVENTS,
    PARTITION_DIRS,
    TableSchema,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)
RUN = "run-1"
CLUSTER = "c1"


def uid(n: int) -> str:
    """A deterministic, non-reserved id (base64url)."""
    return str(Uuid(0x1000 + n, 0x2000 + n))


def full_row(table: TableSchema, **values: Any) -> dict[str, Any]:
    unknown = set(values) - set(table.column_names)
    assert not unknown, f"{table.name}: unknown columns {unknown}"
    return {c: values.get(c) for c in table.column_names}


@dataclass
class Part:
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    directories: tuple[str, ...] | None = None


@dataclass
class Cluster:
    now: datetime = NOW
    complete: bool = True
    metadata_offset: int = 500
    topics: dict[str, tuple[str, dict[int, Part]]] = field(default_factory=dict)
    brokers: dict[int, dict[str, str | None]] = field(default_factory=dict)
    delete_delay_ms: dict[int, str] = field(default_factory=dict)  # a broker's own dynamic value, as Kafka stores it
    cluster_delete_delay_ms: str | None = None  # the cluster-wide dynamic default
    unregistered: set[int] = field(default_factory=set)  # brokers with dirs that the controller does not register
    registered_dirs: dict[int, tuple[str, ...]] = field(default_factory=dict)
    dirs: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    deletions: dict[str, datetime] = field(default_factory=dict)  # ZooKeeper mode: topic -> queued at

    # -- description --------------------------------------------------------------------------------------------
    def broker(self, broker_id: int, *log_dirs: tuple[str, str | None], registered: tuple[str, ...] | None = None,
               delete_delay_ms: int | str | None = None, running: bool = True) -> Cluster:
        """``running=False``: a stopped ZooKeeper-mode broker, not registered, whose dynamic configs remain."""
        self.brokers[broker_id] = dict(log_dirs)
        if not running:
            self.unregistered.add(broker_id)
        self.registered_dirs[broker_id] = registered if registered is not None else tuple(
            d for _, d in log_dirs if d is not None)
        if delete_delay_ms is not None:
            self.delete_delay_ms[broker_id] = str(delete_delay_ms)
        return self

    def topic(self, name: str, topic_id: str | None, **parts: Part) -> Cluster:
        """``topic_id`` None: a ZooKeeper-mode topic without an id."""
        self.topics[name] = (topic_id, {int(k[1:]): v for k, v in parts.items()})
        return self

    def queue_deletion(self, name: str, at: datetime) -> Cluster:
        """ZooKeeper mode: the topic is queued in ``/admin/delete_topics`` since ``at``."""
        self.deletions[name] = at
        return self

    def dir(self, broker_id: int, log_dir: str, dir_name: str, *, kind: str = "live", topic: str | None = None,
            partition: int | None = None, topic_id: str | None = None, pm: str = "ok",
            mtime: datetime | str | None = "default", size: int = 1000) -> Cluster:
        if topic is None and kind not in ("unparseable",):
            stem = dir_name.rsplit(".", 1)[0] if kind in ("delete", "future", "stray") else dir_name
            topic, _, p = stem.rpartition("-")
            partition = int(p) if partition is None else partition
        self.dirs.append(full_row(
            PARTITION_DIRS, run_id=RUN, cluster=CLUSTER, broker_id=broker_id, log_dir=log_dir, dir_name=dir_name,
            kind=kind, topic=topic, partition=partition, topic_id=topic_id if pm == "ok" else None,
            partition_metadata_status=pm, files=3, bytes=size,
            dir_mtime=self.now - 10 * DAY if mtime == "default" else mtime,
            fingerprint=f"sha256:{broker_id}:{log_dir}:{dir_name}", crawled_at=self.now,
        ))
        return self

    def event(self, offset: int, at: datetime, event: str, topic_id: str | None, topic: str | None = None,
              partition: int | None = None) -> Cluster:
        self.events.append(full_row(METADATA_EVENTS, cluster=CLUSTER, offset=offset, timestamp=at, event=event,
                                    topic_id=topic_id, topic=topic, partition=partition, detail="{}", source="t",
                                    run_id=RUN))
        return self

    # -- table rows ---------------------------------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return {"run_id": RUN, "cluster": CLUSTER, "metadata_offset": self.metadata_offset,
                "image_complete": self.complete, "source": "test"}

    def _dirs_of(self, part: Part) -> tuple[str, ...]:
        return part.directories or (str(MIGRATING),) * len(part.replicas)

    def log_dirs_rows(self) -> list[dict[str, Any]]:
        return [full_row(LOG_DIRS, run_id=RUN, cluster=CLUSTER, broker_id=b, log_dir=ld, directory_id=d)
                for b, dirs in self.brokers.items() for ld, d in dirs.items()]

    def topics_rows(self) -> list[dict[str, Any]]:
        return [full_row(CONTROLLER_TOPICS, topic_id=tid, topic=name, partition_count=len(parts), **self._meta(),
                         deletion_queued_at=self.deletions.get(name))
                for name, (tid, parts) in self.topics.items()]

    def partitions_rows(self) -> list[dict[str, Any]]:
        return [full_row(CONTROLLER_PARTITIONS, topic_id=tid, topic=name, partition=p, replicas=list(part.replicas),
                         isr=list(part.replicas), leader=part.replicas[0], leader_epoch=0, partition_epoch=0,
                         adding_replicas=list(part.adding), removing_replicas=list(part.removing),
                         directories=list(self._dirs_of(part)), **self._meta())
                for name, (tid, parts) in self.topics.items() for p, part in parts.items()]

    def brokers_rows(self) -> list[dict[str, Any]]:
        return [full_row(CONTROLLER_BROKERS, broker_id=b, broker_epoch=1, fenced=False, in_controlled_shutdown=False,
                         log_dirs=list(self.registered_dirs[b]),
                         file_delete_delay_ms=kafka_long(self.delete_delay_ms.get(b, self.cluster_delete_delay_ms)),
                         **self._meta())
                for b in self.brokers if b not in self.unregistered]

    def broker_configs_rows(self) -> list[dict[str, Any]]:
        values = [(b, v) for b, v in self.delete_delay_ms.items()]
        if self.cluster_delete_delay_ms is not None:
            values.append((None, self.cluster_delete_delay_ms))
        return [full_row(CONTROLLER_BROKER_CONFIGS, broker_id=b, name="log.segment.delete.delay.ms", value=v,
                         long_value=kafka_long(v), **self._meta()) for b, v in values]

    def dataframes(self, spark: Any) -> dict[str, Any]:
        def df(table: TableSchema, rows: list[dict[str, Any]]) -> Any:
            return spark.createDataFrame(rows, schema=table.to_spark())

        return {
            "partition_dirs": df(PARTITION_DIRS, self.dirs),
            "controller_topics": df(CONTROLLER_TOPICS, self.topics_rows()),
            "controller_partitions": df(CONTROLLER_PARTITIONS, self.partitions_rows()),
            "controller_brokers": df(CONTROLLER_BROKERS, self.brokers_rows()),
            "controller_broker_configs": df(CONTROLLER_BROKER_CONFIGS, self.broker_configs_rows()),
            "metadata_events": df(METADATA_EVENTS, self.events),
            "log_dirs": df(LOG_DIRS, self.log_dirs_rows()),
        }

    # -- the same cluster as an image ---------------------------------------------------------------------------
    def image(self) -> Any:
        """The ``MetadataImage`` of this cluster (imported here: detection tests need only the rows)."""
        from pipelines.metadata.image import (
            BROKER_RESOURCE,
            BrokerImage,
            ConfigsImage,
            MetadataImage,
            MetadataProvenance,
            PartitionImage,
            TopicDeletion,
            TopicImage,
            TopicsImage,
        )

        topics, without_id = {}, {}
        for name, (tid, parts) in self.topics.items():
            pimgs = {
                p: PartitionImage(p, part.replicas, part.replicas, part.removing, part.adding, part.replicas[0], 0, 0,
                                  tuple(Uuid.from_string(d) for d in self._dirs_of(part)))
                for p, part in parts.items()
            }
            if tid is None:
                without_id[name] = TopicImage(MIGRATING, name, MappingProxyType(pimgs))  # the zero id
            else:
                topics[name] = TopicImage(Uuid.from_string(tid), name, MappingProxyType(pimgs))
        brokers = {b: BrokerImage(b, 1, False, False, tuple(Uuid.from_string(d) for d in self.registered_dirs[b]))
                   for b in self.brokers if b not in self.unregistered}
        configs = {(BROKER_RESOURCE, str(b)): MappingProxyType({"log.segment.delete.delay.ms": v})
                   for b, v in self.delete_delay_ms.items()}
        if self.cluster_delete_delay_ms is not None:
            default = {"log.segment.delete.delay.ms": self.cluster_delete_delay_ms}
            configs[(BROKER_RESOURCE, "")] = MappingProxyType(default)
        return MetadataImage(
            provenance=MetadataProvenance("test", self.metadata_offset, 1, int(self.now.timestamp() * 1000)),
            topics=TopicsImage(MappingProxyType({t.topic_id: t for t in topics.values()}), MappingProxyType(topics)),
            brokers=MappingProxyType(brokers),
            configs=ConfigsImage(MappingProxyType(configs)),
            complete=self.complete,
            incomplete_reasons=() if self.complete else ("log tail missing",),
            topic_deletions=MappingProxyType({n: TopicDeletion(n, int(at.timestamp() * 1000))
                                              for n, at in self.deletions.items()}),
            topics_without_id=MappingProxyType(without_id),
        )
