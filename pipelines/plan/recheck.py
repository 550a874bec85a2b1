"""The second, independent classifier: plain Python over the ``MetadataImage``, applied to every plan item.

The Spark detector classifies by joining tables; this module classifies one directory at a time by looking it up
in the in-memory controller image, with none of the detector's code. ``emit_plan`` compares the two verdicts and
refuses to write a plan on any disagreement, so a wrong join (an inverted condition, swapped ids, a stale table)
cannot reach a reviewer.

Above every class rule sits one invariant (:func:`assigned_here`): a live, ``-future`` or ``-stray`` directory whose
topic id and partition the controller assigns to this broker (in ``replicas`` or ``adding_replicas``), in this log
dir or in no particular one, is never garbage. ``-delete`` directories are outside it: Kafka deletes every
``-delete`` directory on its own at the next startup (``LogManager.loadLog``), so they never hold a replica's data.

Not guaranteed: the grace period is not re-derived here (the image has no event history); ``emit_plan`` checks the
detector's ``garbage_since`` against the policy instead.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pipelines.config.models import DetectConfig
from pipelines.detect import classes as C
from pipelines.detect.params import (
    ASSIGNED_DELETE_REASON,
    NO_TOPIC_ID_REASON,
    PM_MISSING_STATUSES,
    PM_OK,
    RESERVED_DIRECTORY_IDS,
    protected_patterns,
)
from pipelines.kafka.uuid import METADATA_TOPIC_ID, Uuid
from pipelines.metadata.image import MetadataImage, PartitionImage, TopicDeletion, TopicImage
from pipelines.metadata.rows import file_delete_delay_ms

__all__ = [
    "ASSIGNED_REPLICA",
    "DirFacts",
    "LiveCopies",
    "assigned_here",
    "classify",
    "is_protected_dir",
    "lists_broker",
    "live_copies",
    "recheck_item",
]

ASSIGNED_REPLICA = "assigned_replica"
"""Re-check verdict (not a finding class): the controller assigns this directory's replica here; never plan it."""

LiveCopies = Mapping[tuple[int, str, int], frozenset[tuple[str, str | None]]]
"""(broker_id, topic_id, partition) → (log_dir, directory_id) of each log dir holding a live copy with that id."""


@dataclass(frozen=True, slots=True)
class DirFacts:
    """What the crawl saw of one partition directory; no controller-derived field."""

    broker_id: int
    log_dir: str
    dir_name: str
    kind: str
    topic: str | None
    partition: int | None
    topic_id: str | None
    partition_metadata_status: str | None
    directory_id: str | None
    dir_mtime: datetime | None

    @classmethod
    def from_finding(cls, row: Mapping[str, Any]) -> DirFacts:
        """From a ``findings`` row; the two disk facts the table has no column for come from ``evidence.disk``."""
        disk = _evidence(row).get("disk") or {}
        mtime_ms = disk.get("dir_mtime_ms")
        return cls(
            broker_id=int(row["broker_id"]),
            log_dir=row["log_dir"],
            dir_name=row["dir_name"],
            kind=row["kind"],
            topic=row.get("topic"),
            partition=row.get("partition"),
            topic_id=row.get("topic_id"),
            partition_metadata_status=disk.get("partition_metadata_status"),
            directory_id=row.get("directory_id"),
            dir_mtime=None if mtime_ms is None else datetime.fromtimestamp(mtime_ms / 1000, tz=timezone.utc),
        )

    @classmethod
    def from_partition_dir(cls, row: Mapping[str, Any], directory_id: str | None) -> DirFacts:
        """From a ``partition_dirs`` row plus its log dir's ``directory_id`` (from ``log_dirs``)."""
        return cls(
            broker_id=int(row["broker_id"]),
            log_dir=row["log_dir"],
            dir_name=row["dir_name"],
            kind=row["kind"],
            topic=row.get("topic"),
            partition=row.get("partition"),
            topic_id=row.get("topic_id"),
            partition_metadata_status=row.get("partition_metadata_status"),
            directory_id=directory_id,
            dir_mtime=row.get("dir_mtime"),
        )

    @property
    def has_topic_id(self) -> bool:
        return self.topic_id is not None and self.partition_metadata_status in (PM_OK, None)


def _evidence(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = row.get("evidence")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: evidence nested past the recursion limit
        return {}
    return value if isinstance(value, dict) else {}


def live_copies(facts: Iterable[DirFacts]) -> dict[tuple[int, str, int], frozenset[tuple[str, str | None]]]:
    """Index the live directories that carry a topic id, for the JBOD rules."""
    index: dict[tuple[int, str, int], set[tuple[str, str | None]]] = defaultdict(set)
    for f in facts:
        if f.kind == "live" and f.has_topic_id and f.partition is not None:
            index[(f.broker_id, f.topic_id, f.partition)].add((f.log_dir, f.directory_id))  # type: ignore[index]
    return {k: frozenset(v) for k, v in index.items()}


def _uuid(text: str | None) -> Uuid | None:
    if text is None:
        return None
    try:
        return Uuid.from_string(text)
    except ValueError:
        return None


def _deciding_dir(image: MetadataImage, part: PartitionImage, broker_id: int) -> str | None:
    """The assigned directory id when it names one of the broker's registered dirs, else None."""
    assigned = part.directory_of(broker_id)
    if assigned is None or str(assigned) in RESERVED_DIRECTORY_IDS:
        return None
    broker = image.brokers.get(broker_id)
    if broker is None or assigned not in broker.log_dirs:
        return None
    return str(assigned)


def lists_broker(part: PartitionImage | None, broker_id: int) -> bool:
    """The controller lists ``broker_id`` in the partition's ``replicas`` or ``adding_replicas`` (None: no such
    partition). The one membership rule of this module."""
    return part is not None and (broker_id in part.replicas or broker_id in part.adding_replicas)


def _partition_of(f: DirFacts, image: MetadataImage) -> PartitionImage | None:
    """The image's partition for this dir's (topic id, partition), if both parse and exist."""
    tid = _uuid(f.topic_id)
    return None if tid is None or f.partition is None else image.topics.partition(tid, f.partition)


def _partition_by_name(f: DirFacts, image: MetadataImage) -> PartitionImage | None:
    """The image's partition for this dir's topic NAME and partition (what the executor checks when a dir has no
    topic id)."""
    topic = image.topics.by_name.get(f.topic) if f.topic is not None else None
    return None if topic is None or f.partition is None else topic.partitions.get(f.partition)


def assigned_here(f: DirFacts, image: MetadataImage) -> str | None:
    """Why the controller assigns this directory's replica to its broker, or None if it does not.

    Broker-level on purpose, like the executor: a copy of an assigned replica is never garbage for a plan, even
    when KIP-858 places the replica in another of the broker's log dirs (that copy is reported as wrong_log_dir).
    """
    if f.kind not in ("live", "future", "stray", "delete"):
        return None
    part = _partition_of(f, image)
    if part is None or not lists_broker(part, f.broker_id):
        return None
    deciding = _deciding_dir(image, part, f.broker_id)
    where = "no particular log dir" if deciding is None else f"log dir {deciding}"
    return (f"controller assigns {f.topic_id}/{f.partition} to broker {f.broker_id} in {where} "
            f"(replicas {list(part.replicas)}, adding {list(part.adding_replicas)})")


def is_protected_dir(f: DirFacts, image: MetadataImage, config: DetectConfig) -> bool:
    """Protected by the parsed name, the controller's name for the id, or the metadata sentinel id."""
    tid = _uuid(f.topic_id)
    names = {f.topic}
    topic = None if tid is None else image.topics.by_id.get(tid)
    if topic is not None:
        names.add(topic.name)
    patterns = protected_patterns(config)
    return any(C.is_protected(n, tid, patterns) for n in names) or (tid == METADATA_TOPIC_ID)


def _delete_delay_ms(image: MetadataImage, broker_id: int, config: DetectConfig) -> int:
    delay = file_delete_delay_ms(image, broker_id)
    return config.file_delete_delay_ms if delay is None else delay


def _topic_deletion(image: MetadataImage, topic: TopicImage, deletion: TopicDeletion, config: DetectConfig,
                    now: datetime) -> tuple[str, str]:
    """A topic queued for deletion (ZooKeeper): pending, or stuck past the threshold, with what it waits for."""
    age_ms = int((now.timestamp() * 1000) - deletion.queued_ms)
    stuck = age_ms >= config.stuck_topic_deletion_ms
    holders = sorted({b for p in topic.partitions.values() for b in p.replicas})
    offline = [b for b in holders if b not in image.brokers]
    reassigning = any(p.adding_replicas or p.removing_replicas for p in topic.partitions.values())
    reason = (f"topic {topic.name} queued for deletion {age_ms} ms ago (stuck after {config.stuck_topic_deletion_ms}"
              f" ms); replicas on brokers [{','.join(map(str, holders))}], not registered: "
              f"[{','.join(map(str, offline))}]" + ("; reassignment in progress" if reassigning else ""))
    return (C.STUCK_TOPIC_DELETION if stuck else C.PENDING_TOPIC_DELETION), reason


def _by_kind(kind: str, base: str) -> str:
    return {"stray": C.STRAY, "future": C.ABANDONED_FUTURE}.get(kind, base)


def classify(
    f: DirFacts, image: MetadataImage, *, copies: LiveCopies, config: DetectConfig, now: datetime,
) -> tuple[str, str]:
    """Classify one directory against the image: ``(class, reason)``. Rules apply in order; first match wins."""
    if f.kind == "unparseable":
        return C.UNPARSEABLE_DIR, "name does not parse; Kafka would refuse to start"
    if f.kind == "metadata":
        return C.METADATA_LOG, "KRaft metadata log"
    if f.topic is not None and f.topic in image.topics_without_id:
        return C.UNKNOWN, NO_TOPIC_ID_REASON
    if f.kind == "delete":
        limit = _delete_delay_ms(image, f.broker_id, config) + config.delete_margin_ms
        if f.dir_mtime is None:
            return C.PENDING_DELETE, "dir mtime unknown; age cannot be judged"
        age_ms = (now - f.dir_mtime).total_seconds() * 1000
        if age_ms >= limit and lists_broker(_partition_of(f, image) if f.topic_id is not None
                                            else _partition_by_name(f, image), f.broker_id):
            return C.PENDING_DELETE, ASSIGNED_DELETE_REASON
        if age_ms >= limit:
            return C.STUCK_DELETE, f"-delete dir {int(age_ms)} ms old, limit {limit} ms"
        return C.PENDING_DELETE, f"-delete dir {int(age_ms)} ms old, limit {limit} ms"
    status = f.partition_metadata_status
    if f.topic_id is None and (status is None or status in PM_MISSING_STATUSES):
        return C.MISSING_PARTITION_METADATA, "no partition.metadata"
    tid = _uuid(f.topic_id)
    if tid is None or status not in (PM_OK, None):
        return C.CORRUPT_PARTITION_METADATA, f"partition.metadata status {status}"
    topic = image.topics.by_id.get(tid)
    if topic is None:
        if not image.complete:
            return C.UNKNOWN, "topic id not in an incomplete image: " + "; ".join(image.incomplete_reasons)
        named = image.topics.by_name.get(f.topic) if f.topic is not None else None
        if named is not None:
            return _by_kind(f.kind, C.RECREATED_TOPIC), f"name {f.topic} now has id {named.topic_id}"
        return _by_kind(f.kind, C.DELETED_TOPIC), f"topic id {f.topic_id} not in the image"
    deletion = image.topic_deletions.get(topic.name)
    if deletion is not None:
        return _topic_deletion(image, topic, deletion, config, now)
    part = topic.partitions.get(f.partition) if f.partition is not None else None
    if part is None:
        return _by_kind(f.kind, C.PARTITION_OUT_OF_RANGE), f"{topic.name} has {len(topic.partitions)} partitions"
    if not lists_broker(part, f.broker_id):
        if part.adding_replicas or part.removing_replicas:
            return C.UNKNOWN, "reassignment in flight"
        return _by_kind(f.kind, C.NOT_A_REPLICA), f"replicas {list(part.replicas)}"
    if f.kind == "stray":
        return C.UNKNOWN, "-stray copy of a replica the controller assigns to this broker"
    if f.kind == "future":
        return C.FUTURE_IN_PROGRESS, "replica assigned to this broker; a log-dir move may be running"
    here = copies.get((f.broker_id, f.topic_id, f.partition), frozenset())  # type: ignore[arg-type]
    if len(here) <= 1:
        return C.OK, "assigned replica"
    deciding = _deciding_dir(image, part, f.broker_id)
    if deciding is not None and deciding == f.directory_id:
        return C.OK, "assigned replica in its assigned log dir"
    if deciding is not None and f.directory_id is not None and any(d == deciding for _, d in here):
        return C.WRONG_LOG_DIR, f"assigned to log dir {deciding}, which holds a live copy"
    return C.DUPLICATE_REPLICA, f"live in {len(here)} log dirs; no directory assignment decides"


def recheck_item(
    item_row: Mapping[str, Any],
    image: MetadataImage,
    log_dir_directory_id: str | None,
    *,
    copies: LiveCopies,
    config: DetectConfig,
    now: datetime,
) -> tuple[str, str]:
    """Re-classify one candidate item (a ``findings`` row) from scratch: ``(class, reason)``.

    Returns ``ASSIGNED_REPLICA`` instead of a class whenever :func:`assigned_here` holds, whatever the rules say.
    """
    facts = DirFacts.from_finding({**item_row, "directory_id": log_dir_directory_id})
    why = assigned_here(facts, image)
    if why is not None:
        return ASSIGNED_REPLICA, why
    return classify(facts, image, copies=copies, config=config, now=now)
