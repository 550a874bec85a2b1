"""A small model of the KRaft controller's log: records in batches at offsets and times, plus the state they build.

It only knows what the simulator writes, and applies it with Kafka's replay rules (facts sheet section 7) so that a
snapshot taken at any point is the FULL image in ``MetadataImage.write`` order: features (metadata.version first),
cluster (brokers, controllers), topics (each TopicRecord followed by its PartitionRecords), configs.

Field names are the snake_case names of ``pipelines.kafka.metadata_schema``; uuids are ``Uuid`` values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipelines.kafka.uuid import MIGRATING, Uuid

METADATA_VERSION = 21
"""metadata.version feature level 3.9-IV0: JBOD records (RegisterBrokerRecord v3, PartitionRecord v1), no ELR."""
PARTITION_RECORD_VERSION = 1
PARTITION_CHANGE_VERSION = 1
REGISTER_BROKER_VERSION = 3
BROKER_CHANGE_VERSION = 2
CONFIG_BROKER = 4
CONFIG_TOPIC = 2
MAX_RECORDS_PER_BATCH = 1000
"""KRaft caps a batch at 8 MiB; larger atomic changes go into a metadata transaction (Begin/End records)."""


@dataclass(frozen=True, slots=True)
class Rec:
    """One metadata record (or a control record when ``control`` is set) before encoding."""

    name: str
    version: int
    fields: Mapping[str, Any]
    control: bool = False


@dataclass(frozen=True, slots=True)
class Batch:
    base_offset: int
    timestamp_ms: int
    epoch: int
    records: tuple[Rec, ...]

    @property
    def is_control(self) -> bool:
        return self.records[0].control

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A full image as of ``end_offset`` (exclusive), in snapshot record order."""

    end_offset: int
    epoch: int
    last_timestamp_ms: int
    records: tuple[Rec, ...]


@dataclass(slots=True)
class _Topic:
    name: str
    topic_id: Uuid
    partitions: dict[int, dict[str, Any]] = field(default_factory=dict)


class ControllerLog:
    """Appends records at increasing offsets and keeps the state they replay to."""

    def __init__(self, epoch: int = 1, noop_interval_ms: int = 6 * 3_600_000) -> None:
        self.epoch = epoch
        self.noop_interval_ms = noop_interval_ms
        self.batches: list[Batch] = []
        self.next_offset = 0
        self.last_timestamp_ms = 0
        self.features: dict[str, int] = {}
        self.brokers: dict[int, dict[str, Any]] = {}
        self.controllers: dict[int, dict[str, Any]] = {}
        self.topics: dict[Uuid, _Topic] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}

    # -- writing ------------------------------------------------------------------------------
    def append(self, records: Sequence[Rec], timestamp_ms: int) -> int:
        """Append ``records`` as one atomic change; returns the offset of the first record.

        More than ``MAX_RECORDS_PER_BATCH`` records are split into batches inside a metadata transaction.
        """
        if timestamp_ms < self.last_timestamp_ms:
            raise ValueError("metadata log timestamps must not go backwards")
        self._noops_until(timestamp_ms)
        first = self.next_offset
        if len(records) > MAX_RECORDS_PER_BATCH:
            records = [Rec("BeginTransactionRecord", 0, {"name": "simulated bulk change"}), *records,
                       Rec("EndTransactionRecord", 0, {})]
        for start in range(0, len(records), MAX_RECORDS_PER_BATCH):
            chunk = tuple(records[start : start + MAX_RECORDS_PER_BATCH])
            self.batches.append(Batch(self.next_offset, timestamp_ms, self.epoch, chunk))
            self.next_offset += len(chunk)
        for rec in records:
            if not rec.control:
                self._replay(rec)
        self.last_timestamp_ms = timestamp_ms
        return first

    def _noops_until(self, timestamp_ms: int) -> None:
        """The active controller appends NoOpRecords while idle (MV 3.3+); we write one per interval tick."""
        if not self.batches or not self.noop_interval_ms:
            return
        tick = (self.last_timestamp_ms // self.noop_interval_ms + 1) * self.noop_interval_ms
        while tick < timestamp_ms:
            self.batches.append(Batch(self.next_offset, tick, self.epoch, (Rec("NoOpRecord", 0, {}),)))
            self.next_offset += 1
            self.last_timestamp_ms = tick
            tick += self.noop_interval_ms

    def append_control(self, record: Rec, timestamp_ms: int) -> None:
        self.batches.append(Batch(self.next_offset, timestamp_ms, self.epoch, (record,)))
        self.next_offset += 1
        self.last_timestamp_ms = max(self.last_timestamp_ms, timestamp_ms)

    # -- replay (Kafka's rules, restricted to what we write) ------------------------------------
    def _replay(self, rec: Rec) -> None:
        f = rec.fields
        name = rec.name
        if name == "FeatureLevelRecord":
            self.features[f["name"]] = f["feature_level"]
        elif name == "RegisterBrokerRecord":
            self.brokers[f["broker_id"]] = dict(f)
        elif name == "BrokerRegistrationChangeRecord":
            broker = self.brokers[f["broker_id"]]
            if broker["broker_epoch"] != f["broker_epoch"]:
                raise ValueError(f"broker {f['broker_id']} epoch mismatch")
            if f.get("fenced", 0):
                broker["fenced"] = f["fenced"] == 1
            if f.get("in_controlled_shutdown", 0) == 1:
                broker["in_controlled_shutdown"] = True
            if f.get("log_dirs"):
                broker["log_dirs"] = tuple(f["log_dirs"])
        elif name == "RegisterControllerRecord":
            self.controllers[f["controller_id"]] = dict(f)
        elif name == "TopicRecord":
            self.topics[f["topic_id"]] = _Topic(f["name"], f["topic_id"])
        elif name == "PartitionRecord":
            self.topics[f["topic_id"]].partitions[f["partition_id"]] = dict(f)
        elif name == "PartitionChangeRecord":
            self._change(f)
        elif name == "RemoveTopicRecord":
            topic = self.topics.pop(f["topic_id"])
            self.configs.pop((CONFIG_TOPIC, topic.name), None)
        elif name == "ConfigRecord":
            key = (f["resource_type"], f["resource_name"])
            if f["value"] is None:
                self.configs.get(key, {}).pop(f["name"], None)
            else:
                self.configs.setdefault(key, {})[f["name"]] = f["value"]

    def _change(self, f: Mapping[str, Any]) -> None:
        part = self.topics[f["topic_id"]].partitions[f["partition_id"]]
        for key in ("isr", "replicas", "removing_replicas", "adding_replicas"):
            if f.get(key) is not None:
                part[key] = tuple(f[key])
        if f.get("directories") is not None:
            part["directories"] = tuple(f["directories"])
        elif f.get("replicas") is not None and all(d == MIGRATING for d in part["directories"]):
            part["directories"] = (MIGRATING,) * len(part["replicas"])
        if f.get("leader", -2) != -2:
            part["leader"] = f["leader"]
            part["leader_epoch"] += 1
        part["partition_epoch"] += 1

    # -- reading ------------------------------------------------------------------------------
    def partition(self, topic_id: Uuid, partition: int) -> Mapping[str, Any]:
        return self.topics[topic_id].partitions[partition]

    def snapshot(self) -> Snapshot:
        """The current state as a full snapshot (``end_offset`` = the next offset)."""
        out: list[Rec] = []
        mv = self.features.get("metadata.version")
        if mv is not None:
            out.append(Rec("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": mv}))
        out += [Rec("FeatureLevelRecord", 0, {"name": n, "feature_level": v})
                for n, v in sorted(self.features.items()) if n != "metadata.version"]
        # copies: the state dicts keep changing after the snapshot is taken
        out += [Rec("RegisterBrokerRecord", REGISTER_BROKER_VERSION, dict(b)) for _, b in sorted(self.brokers.items())]
        out += [Rec("RegisterControllerRecord", 0, dict(c)) for _, c in sorted(self.controllers.items())]
        for topic in self.topics.values():
            out.append(Rec("TopicRecord", 0, {"name": topic.name, "topic_id": topic.topic_id}))
            out += [Rec("PartitionRecord", PARTITION_RECORD_VERSION, dict(p))
                    for _, p in sorted(topic.partitions.items())]
        for (rtype, rname), values in sorted(self.configs.items()):
            out += [Rec("ConfigRecord", 0, {"resource_type": rtype, "resource_name": rname, "name": k, "value": v})
                    for k, v in sorted(values.items())]
        return Snapshot(self.next_offset, self.epoch, self.last_timestamp_ms, tuple(out))
