"""The classification vocabulary: one class per partition directory found on a broker.

Pure constants (no Spark, no I/O), shared by the Spark detector, the plain-Python re-check of a plan and the cluster
simulator's ``truth.json``. A class says what a directory IS relative to the controller image; whether it may be
planned for removal is ``GARBAGE_CLASSES`` minus anything ``protected``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipelines.kafka.uuid import METADATA_TOPIC_ID, Uuid

OK = "ok"
"""A live replica the controller assigns to this broker (and, under JBOD, to this log dir or to no particular one)."""

RECREATED_TOPIC = "recreated_topic"
"""The dir's topic name exists in the controller, but under another topic id: the old incarnation's leftover."""

DELETED_TOPIC = "deleted_topic"
"""The topic id is absent from a COMPLETE image and its name is not present (or the id was removed per events)."""

PARTITION_OUT_OF_RANGE = "partition_out_of_range"
"""Same topic id, but the partition index is >= the topic's current partition count."""

NOT_A_REPLICA = "not_a_replica"
"""Same topic id and the partition exists, but this broker is neither in replicas nor in adding_replicas."""

WRONG_LOG_DIR = "wrong_log_dir"
"""KIP-858: the controller assigns this replica to another registered dir of this broker, which also holds it."""

DUPLICATE_REPLICA = "duplicate_replica"
"""The same topic-partition is live in two log dirs of one broker (Kafka refuses to start); no assignment decides."""

PENDING_DELETE = "pending_delete"
"""A ``-delete`` dir younger (by mtime) than the broker's file.delete.delay.ms plus a margin: Kafka will remove it."""

STUCK_DELETE = "stuck_delete"
"""A ``-delete`` dir older than file.delete.delay.ms plus the margin: Kafka should have removed it already."""

PENDING_TOPIC_DELETION = "pending_topic_deletion"
"""ZooKeeper mode: the dir's topic is queued in ``/admin/delete_topics`` and Kafka's controller will finish the
deletion (it waits while a replica's broker is down or a reassignment runs)."""

STUCK_TOPIC_DELETION = "stuck_topic_deletion"
"""ZooKeeper mode: the dir's topic has been queued for deletion longer than ``detect.stuck_topic_deletion_ms``; the
reason names the brokers holding replicas that are not registered, and a reassignment in progress."""

STRAY = "stray"
"""A ``-stray`` dir: Kafka (3.7+) renamed a log it found no owner for and will never delete it itself."""

FUTURE_IN_PROGRESS = "future_in_progress"
"""A ``-future`` dir (alter-log-dirs) whose partition is still being moved into this log dir."""

ABANDONED_FUTURE = "abandoned_future"
"""A ``-future`` dir whose move is no longer wanted: the replica is gone from this broker or assigned elsewhere."""

MISSING_PARTITION_METADATA = "missing_partition_metadata"
"""A partition dir without ``partition.metadata``: no topic id to compare (Kafka 3.7.1+ marks it stray)."""

CORRUPT_PARTITION_METADATA = "corrupt_partition_metadata"
"""``partition.metadata`` exists but does not parse (Kafka fails the log dir or startup on it)."""

UNPARSEABLE_DIR = "unparseable_dir"
"""A directory name Kafka's LogManager cannot parse (``lost+found``): it stops broker startup."""

METADATA_LOG = "metadata_log"
"""``__cluster_metadata-0``: the KRaft metadata log, never a GC candidate."""

UNKNOWN = "unknown"
"""The image is incomplete or the id is not known: not enough evidence either way; never planned."""

ALL_CLASSES: tuple[str, ...] = (
    OK,
    RECREATED_TOPIC,
    DELETED_TOPIC,
    PARTITION_OUT_OF_RANGE,
    NOT_A_REPLICA,
    WRONG_LOG_DIR,
    DUPLICATE_REPLICA,
    PENDING_DELETE,
    STUCK_DELETE,
    PENDING_TOPIC_DELETION,
    STUCK_TOPIC_DELETION,
    STRAY,
    FUTURE_IN_PROGRESS,
    ABANDONED_FUTURE,
    MISSING_PARTITION_METADATA,
    CORRUPT_PARTITION_METADATA,
    UNPARSEABLE_DIR,
    METADATA_LOG,
    UNKNOWN,
)
"""Every class, in a stable order (reports and tests iterate it)."""

GARBAGE_CLASSES: frozenset[str] = frozenset(
    {RECREATED_TOPIC, DELETED_TOPIC, PARTITION_OUT_OF_RANGE, NOT_A_REPLICA, STUCK_DELETE, STRAY, ABANDONED_FUTURE}
)
"""Classes a GC plan may contain (unless the item is ``protected``)."""

NEVER_PLAN: frozenset[str] = frozenset(
    {OK, WRONG_LOG_DIR, DUPLICATE_REPLICA, PENDING_DELETE, PENDING_TOPIC_DELETION, STUCK_TOPIC_DELETION,
     FUTURE_IN_PROGRESS, MISSING_PARTITION_METADATA, CORRUPT_PARTITION_METADATA, UNPARSEABLE_DIR, METADATA_LOG, UNKNOWN}
)
"""Classes reported but never planned: live data, Kafka's own work in progress, or needing a human decision.

A topic deletion ZooKeeper still has queued is Kafka's work in progress even when stuck: the controller finishes it
once the missing broker returns or the reassignment ends; the finding says what it waits for.

``wrong_log_dir`` is here on purpose: the leftover copy belongs to a replica the controller assigns to this broker
with the same topic id, and the executor never touches such a replica (a broker with two live copies refuses to
start with "Duplicate log directories"; the operator resolves it by hand, the finding says which copy is stale).
"""

PROTECTED_INTERNAL_TOPICS: frozenset[str] = frozenset({"__consumer_offsets", "__transaction_state"})
"""Internal topics whose dirs are always ``protected``, whatever the configured patterns say."""

METADATA_TOPIC_NAMES: frozenset[str] = frozenset({"__cluster_metadata", "@metadata"})
"""The KRaft metadata topic (and the 2.8 preview's name); its sentinel id is ``METADATA_TOPIC_ID``."""



def is_protected(topic: str | None, topic_id: Uuid | None, patterns: Iterable[str] = ()) -> bool:
    """Internal topic, the metadata topic (by name or sentinel id), or a full match of a configured regex."""
    if topic_id is not None and topic_id == METADATA_TOPIC_ID:
        return True
    if topic is None:
        return False
    if topic in PROTECTED_INTERNAL_TOPICS or topic in METADATA_TOPIC_NAMES:
        return True
    return any(re.fullmatch(p, topic) for p in patterns)


def is_plannable(cls: str, protected: bool) -> bool:
    """True when a finding of class ``cls`` may go into a GC plan."""
    return cls in GARBAGE_CLASSES and not protected
