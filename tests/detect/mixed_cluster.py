"""One small cluster with a directory of every class, and the classes a careful reader expects for it.

Brokers: 1 with JBOD dirs /d1 (id D1) and /d2 (id D2); 2 with /e (id E1). The expectation table is written by
hand from the story of each directory (see the comments), not computed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gc_cluster import DAY, NOW, Cluster, Part, uid

from pipelines.kafka.uuid import METADATA_TOPIC_ID, UNASSIGNED

D1, D2, E1 = uid(901), uid(902), uid(903)
ORD, C1, C2, G, H, M, J, U, CO = (uid(i) for i in range(1, 10))
HEX = "0123456789abcdef0123456789abcdef"
MIN = timedelta(minutes=1)


def mixed_cluster(*, complete: bool = True) -> Cluster:
    c = Cluster(complete=complete)
    c.broker(1, ("/d1", D1), ("/d2", D2)).broker(2, ("/e", E1))
    c.topic("orders", ORD, p0=Part((1, 2), directories=(D1, E1)), p1=Part((2,), directories=(E1,)))
    c.topic("clicks", C2, p0=Part((1, 2), directories=(D1, E1)))
    c.topic("moving", M, p0=Part((3, 1), adding=(3,), removing=(1,)))
    c.topic("jbod", J, p0=Part((1,), directories=(D2,)))
    c.topic("dup", U, p0=Part((1,), directories=(str(UNASSIGNED),)))
    c.topic("__consumer_offsets", CO, p0=Part((1,), directories=(D1,)))

    c.event(10, NOW - 30 * DAY, "topic_created", ORD, "orders")
    c.event(11, NOW - 20 * DAY, "topic_created", C1, "clicks")
    c.event(12, NOW - 20 * DAY, "topic_created", G, "gone")
    c.event(13, NOW - 10 * DAY, "topic_created", J, "jbod")
    c.event(20, NOW - 6 * DAY, "replicas_changed", J, "jbod", 0)
    c.event(21, NOW - 5 * DAY, "topic_removed", G, "gone")
    c.event(22, NOW - 4 * DAY, "topic_removed", C1, "clicks")
    c.event(23, NOW - 4 * DAY + MIN, "topic_created", C2, "clicks")
    c.event(24, NOW - 3 * DAY, "replicas_changed", ORD, "orders", 1)
    c.event(25, NOW - 2 * DAY, "directories_changed", J, "jbod", 0)

    c.dir(1, "/d1", "orders-0", topic_id=ORD)
    c.dir(2, "/e", "orders-0", topic_id=ORD)
    c.dir(1, "/d1", "orders-1", topic_id=ORD)                        # reassigned away 3 days ago
    c.dir(1, "/d2", "orders-5", topic_id=ORD)                        # beyond the 2 partitions
    c.dir(2, "/e", "clicks-0", topic_id=C1)                        # old incarnation
    c.dir(1, "/d1", "clicks-0", topic_id=C2)
    c.dir(1, "/d1", "gone-0", topic_id=G)                          # topic removed 5 days ago
    c.dir(2, "/e", "ghost-0", topic_id=H)                          # unknown id, no removal event
    c.dir(1, "/d1", f"gone-0.{HEX}-delete", kind="delete", topic_id=G, mtime=NOW - 2 * DAY)
    c.dir(2, "/e", f"orders-1.{HEX}-delete", kind="delete", topic_id=ORD, mtime=NOW - 10 * MIN)
    # an old -delete copy of a replica the controller still assigns to broker 1
    c.dir(1, "/d2", f"orders-0.{HEX}-delete", kind="delete", topic_id=ORD, mtime=NOW - 2 * DAY)
    c.dir(1, "/d2", f"gone-2.{HEX}-stray", kind="stray", topic_id=G)
    c.dir(1, "/d2", f"orders-0.{HEX}-future", kind="future", topic_id=ORD)
    c.dir(2, "/e", f"jbod-0.{HEX}-future", kind="future", topic_id=J)
    c.dir(1, "/d1", "nopm-0", pm="missing")
    c.dir(1, "/d1", "badpm-0", pm="malformed")
    c.dir(1, "/d1", "lost+found", kind="unparseable")
    c.dir(1, "/d1", "__cluster_metadata-0", kind="metadata", topic_id=str(METADATA_TOPIC_ID))
    c.dir(1, "/d1", "moving-0", topic_id=M)                        # leaving: still in replicas
    c.dir(2, "/e", "moving-0", topic_id=M)                         # not involved, reassignment running
    c.dir(1, "/d1", "jbod-0", topic_id=J)                          # controller says D2, which has it too
    c.dir(1, "/d2", "jbod-0", topic_id=J)
    c.dir(1, "/d1", "dup-0", topic_id=U)
    c.dir(1, "/d2", "dup-0", topic_id=U)
    c.dir(1, "/d1", "__consumer_offsets-0", topic_id=CO)
    c.dir(2, "/e", "__consumer_offsets-3", topic_id=CO)
    c.dir(2, "/e", f"orders-1.{HEX}-stray", kind="stray", topic_id=ORD)  # stray copy of an assigned replica
    return c


#: (broker, log_dir, dir_name) -> (class, protected, plannable at grace 1 day, garbage_since)
EXPECTED: dict[tuple[int, str, str], tuple[str, bool, bool, datetime | None]] = {
    (1, "/d1", "orders-0"): ("ok", False, False, None),
    (2, "/e", "orders-0"): ("ok", False, False, None),
    (1, "/d1", "orders-1"): ("not_a_replica", False, True, NOW - 3 * DAY),
    (1, "/d2", "orders-5"): ("partition_out_of_range", False, True, NOW - 3 * DAY),
    (2, "/e", "clicks-0"): ("recreated_topic", False, True, NOW - 4 * DAY + MIN),
    (1, "/d1", "clicks-0"): ("ok", False, False, None),
    (1, "/d1", "gone-0"): ("deleted_topic", False, True, NOW - 5 * DAY),
    (2, "/e", "ghost-0"): ("deleted_topic", False, False, None),
    (1, "/d1", f"gone-0.{HEX}-delete"): ("stuck_delete", False, True, NOW - 2 * DAY),
    (2, "/e", f"orders-1.{HEX}-delete"): ("pending_delete", False, False, None),
    (1, "/d2", f"orders-0.{HEX}-delete"): ("pending_delete", False, False, None),
    (1, "/d2", f"gone-2.{HEX}-stray"): ("stray", False, True, NOW - 5 * DAY),
    (1, "/d2", f"orders-0.{HEX}-future"): ("future_in_progress", False, False, None),
    (2, "/e", f"jbod-0.{HEX}-future"): ("abandoned_future", False, True, NOW - 2 * DAY),
    (1, "/d1", "nopm-0"): ("missing_partition_metadata", False, False, None),
    (1, "/d1", "badpm-0"): ("corrupt_partition_metadata", False, False, None),
    (1, "/d1", "lost+found"): ("unparseable_dir", False, False, None),
    (1, "/d1", "__cluster_metadata-0"): ("metadata_log", True, False, None),
    (1, "/d1", "moving-0"): ("ok", False, False, None),
    (2, "/e", "moving-0"): ("unknown", False, False, None),
    (1, "/d1", "jbod-0"): ("wrong_log_dir", False, False, NOW - 2 * DAY),
    (1, "/d2", "jbod-0"): ("ok", False, False, None),
    (1, "/d1", "dup-0"): ("duplicate_replica", False, False, None),
    (1, "/d2", "dup-0"): ("duplicate_replica", False, False, None),
    (1, "/d1", "__consumer_offsets-0"): ("ok", True, False, None),
    (2, "/e", "__consumer_offsets-3"): ("partition_out_of_range", True, False, None),
    (2, "/e", f"orders-1.{HEX}-stray"): ("unknown", False, False, None),
}


def delete_copies_cluster() -> tuple[Cluster, dict[tuple[int, str], str]]:
    """Old ``-delete`` copies (30 days, far past the delete delay) with and without a readable topic id, and the class
    each must get: a copy of a replica the controller assigns to its broker is never planned (the executor would
    refuse it), matched by topic id or, with no id on disk, by the topic name in the dir name; any other is stuck."""
    old = NOW - 30 * DAY
    c = Cluster()
    c.broker(1, ("/a", D1)).broker(2, ("/b", E1))
    c.topic("t", ORD, p0=Part((1,), directories=(D1,)))
    c.dir(1, "/a", "t-0", topic_id=ORD)
    c.dir(1, "/a", f"t-0.{'1' * 32}-delete", kind="delete", topic_id=ORD, mtime=old)       # id: assigned here
    c.dir(1, "/a", f"t-0.{'2' * 32}-delete", kind="delete", pm="missing", mtime=old)       # no id, name assigned
    c.dir(1, "/a", f"t-0.{'3' * 32}-delete", kind="delete", pm="invalid_id", mtime=old)    # unreadable id, same
    c.dir(1, "/a", f"gone-0.{'4' * 32}-delete", kind="delete", pm="missing", mtime=old)    # no such topic name
    c.dir(1, "/a", f"t-0.{'5' * 32}-delete", kind="delete", topic_id=G, mtime=old)        # another id: not t's copy
    c.dir(2, "/b", f"t-0.{'6' * 32}-delete", kind="delete", pm="missing", mtime=old)       # t-0 is not on broker 2
    expected = {
        (1, "t-0"): "ok",
        (1, f"t-0.{'1' * 32}-delete"): "pending_delete",
        (1, f"t-0.{'2' * 32}-delete"): "pending_delete",
        (1, f"t-0.{'3' * 32}-delete"): "pending_delete",
        (1, f"gone-0.{'4' * 32}-delete"): "stuck_delete",
        (1, f"t-0.{'5' * 32}-delete"): "stuck_delete",
        (2, f"t-0.{'6' * 32}-delete"): "stuck_delete",
    }
    return c, expected
