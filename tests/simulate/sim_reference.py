"""An independent reading of a generated cluster for the tests: decode the metadata files with the format layer,
replay them with a few plain rules, scan the log dirs with ``scan_log_dir`` and classify each dir.

Nothing here uses the simulator's own controller model, so agreement with ``truth.json`` checks the bytes on disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.detect import classes as c
from pipelines.kafka.logdir import PartitionDirInventory, scan_log_dir
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.snapshot_names import parse_snapshot_name
from pipelines.kafka.uuid import Uuid


@dataclass
class MiniImage:
    topics: dict[Uuid, tuple[str, dict[int, dict[str, Any]]]] = field(default_factory=dict)
    brokers: dict[int, dict[str, Any]] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)

    def by_name(self, name: str) -> Uuid | None:
        return next((tid for tid, (n, _) in self.topics.items() if n == name), None)

    def apply(self, name: str, f: Any) -> None:
        if name == "TopicRecord":
            self.topics[f["topic_id"]] = (f["name"], {})
        elif name == "PartitionRecord":
            self.topics[f["topic_id"]][1][f["partition_id"]] = dict(f)
        elif name == "PartitionChangeRecord":
            part = self.topics[f["topic_id"]][1][f["partition_id"]]
            for key in ("replicas", "isr", "adding_replicas", "removing_replicas", "directories"):
                if f[key] is not None:
                    part[key] = f[key]
        elif name == "RemoveTopicRecord":
            del self.topics[f["topic_id"]]
        elif name == "RegisterBrokerRecord":
            self.brokers[f["broker_id"]] = dict(f)
        elif name == "BrokerRegistrationChangeRecord":
            if f["fenced"]:
                self.brokers[f["broker_id"]]["fenced"] = f["fenced"] == 1
        elif name == "ConfigRecord":
            self.configs.setdefault((f["resource_type"], f["resource_name"]), {})[f["name"]] = f["value"]
        elif name == "FeatureLevelRecord":
            self.features[f["name"]] = f["feature_level"]


def replay(metadata_dir: Path) -> MiniImage:
    """Newest snapshot, then every log record from its end offset (no snapshot: the whole log)."""
    image = MiniImage()
    snapshots = sorted(metadata_dir.glob("*.checkpoint"), key=lambda p: parse_snapshot_name(p.name))
    start = 0
    if snapshots:
        start = parse_snapshot_name(snapshots[-1].name)[0]
        log = iter_metadata_log(snapshots[-1])
        for entry in log:
            if not entry.is_control:
                image.apply(entry.record.name, entry.record.fields)
        assert log.ok, log.errors
    for segment in sorted(metadata_dir.glob("*.log")):
        log = iter_metadata_log(segment)
        for entry in log:
            if entry.offset >= start and not entry.is_control:
                image.apply(entry.record.name, entry.record.fields)
        assert log.ok, log.errors
    return image


def classify(image: MiniImage, broker: int, log_dirs: list[str], dir_ids: list[str], index: int,
             d: PartitionDirInventory, copies: dict[tuple[int, str], list[int]], now_ms: int, delay_ms: int,
             margin_ms: int) -> str:
    if d.kind == "unparseable":
        return c.UNPARSEABLE_DIR
    if d.kind == "metadata":
        return c.METADATA_LOG
    if d.kind == "stray":
        return c.STRAY
    if d.kind == "delete":
        assert d.dir_mtime_ms is not None
        return c.PENDING_DELETE if now_ms - d.dir_mtime_ms < delay_ms + margin_ms else c.STUCK_DELETE
    if d.partition_metadata_status == "missing":
        return c.MISSING_PARTITION_METADATA
    if d.partition_metadata_status != "ok":
        return c.CORRUPT_PARTITION_METADATA
    topic_id = Uuid.from_string(d.topic_id or "")
    entry = image.topics.get(topic_id)
    if d.kind == "future":
        part = entry[1].get(d.partition or 0) if entry else None
        return c.FUTURE_IN_PROGRESS if part and broker in part["replicas"] else c.ABANDONED_FUTURE
    if entry is None:
        return c.RECREATED_TOPIC if image.by_name(d.topic or "") is not None else c.DELETED_TOPIC
    part = entry[1].get(d.partition or 0)
    if part is None:
        return c.PARTITION_OUT_OF_RANGE
    if broker not in part["replicas"] and broker not in part["adding_replicas"]:
        return c.NOT_A_REPLICA
    here = copies[(broker, d.name)]
    if len(here) > 1:
        assigned = str(part["directories"][list(part["replicas"]).index(broker)])
        if assigned == dir_ids[index]:
            return c.OK
        if assigned in dir_ids and dir_ids.index(assigned) in here:
            return c.WRONG_LOG_DIR
        return c.DUPLICATE_REPLICA
    return c.OK


def reference_classes(truth: Any, margin_ms: int) -> dict[tuple[str, str], str]:
    """(log dir, dir name) -> class, for every partition dir found on disk."""
    image = replay(Path(truth.metadata_dir))
    delay = int(image.configs[(4, "")]["log.segment.delete.delay.ms"])
    out: dict[tuple[str, str], str] = {}
    for b in truth.brokers:
        inventories = [scan_log_dir(ld) for ld in b.log_dirs]
        copies: dict[tuple[int, str], list[int]] = {}
        for i, inv in enumerate(inventories):
            for d in inv.partition_dirs:
                if d.kind == "live":
                    copies.setdefault((b.broker_id, d.name), []).append(i)
        for i, inv in enumerate(inventories):
            for d in inv.partition_dirs:
                out[(b.log_dirs[i], d.name)] = classify(image, b.broker_id, list(b.log_dirs),
                                                        list(b.directory_ids), i, d, copies, truth.now_ms, delay,
                                                        margin_ms)
    return out
