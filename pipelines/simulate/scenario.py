"""The simulated cluster's story: brokers, topics, a metadata history with every anomaly, and the resulting disks.

``build_scenario(spec)`` is deterministic in ``spec`` (seed and ``now_ms`` included) and does no I/O. The story:

- ``history_days`` ago the cluster was formatted (metadata.version 3.9-IV0), brokers registered with their log dir
  ids, ``log.segment.delete.delay.ms`` was set, ``__consumer_offsets`` and the regular topics were created;
- 8 days ago a scratch topic was deleted while one broker was restarting: that broker renamed its dirs ``-stray``;
- 6 days ago the highest-numbered broker ("the down broker") crashed and is still down (fenced);
- 5 days ago a topic on it was deleted (its dirs stay: ``deleted_topic``), and another topic was deleted whose
  ``-delete`` dirs elsewhere never went away (``stuck_delete``);
- 4 days ago a topic on it was deleted and recreated under the same name (``recreated_topic``);
- 3 days ago partitions were reassigned away from live brokers that kept a copy (``not_a_replica``) or an
  unfinished ``-future`` copy (``abandoned_future``);
- 2 days ago JBOD moves finished leaving the old copy (``wrong_log_dir``) and replica directories were reset to
  UNASSIGNED while two copies exist (``duplicate_replica``);
- in the last hour reassignments completed (their ``-delete`` dirs are ``pending_delete``), others started and
  are still in flight (``ok`` on the adding broker), alter-log-dirs moves are running (``future_in_progress``).
- Independently of the log: dirs without or with a corrupt ``partition.metadata``, unparseable dir names, and
  partitions beyond a topic's count (Kafka cannot shrink a topic; the disk simply has more than the image).
"""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from pipelines.detect import classes as c
from pipelines.kafka.uuid import METADATA_TOPIC_ID, UNASSIGNED, Uuid
from pipelines.simulate import spec as s
from pipelines.simulate.controller import (
    BROKER_CHANGE_VERSION,
    CONFIG_BROKER,
    CONFIG_TOPIC,
    METADATA_VERSION,
    PARTITION_CHANGE_VERSION,
    PARTITION_RECORD_VERSION,
    REGISTER_BROKER_VERSION,
    ControllerLog,
    Rec,
    Snapshot,
)

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = s.DAY_MS
CONSUMER_OFFSETS = "__consumer_offsets"
METADATA_DIR_NAME = "__cluster_metadata-0"
UNPARSEABLE_NAMES = ("lost+found", "backup", "orders-old", "tmp", "restore.2024-01")
REGULAR_PREFIXES = ("orders", "payments.v2", "click_stream", "inventory-events", "user.profile_updates", "audit",
                    "shipments", "metrics.cpu")  # fmt: skip
PmState = Literal["ok", "missing", "corrupt", "none"]


@dataclass(frozen=True, slots=True)
class LogDirPlan:
    broker_id: int
    index: int
    directory_id: Uuid

@dataclass(frozen=True, slots=True)
class BrokerPlan:
    broker_id: int
    log_dirs: tuple[LogDirPlan, ...]
    epoch: int
    incarnation_id: Uuid
    down: bool


@dataclass(frozen=True, slots=True)
class DirPlan:
    """One directory under a broker log dir, with its expected class.

    ``live`` dirs are current logs Kafka had loaded (listed in the root checkpoints). ``pm`` says what
    ``partition.metadata`` holds: the topic id, nothing (missing), garbage (corrupt), or no files at all.
    """

    broker_id: int
    log_dir: int
    name: str
    cls: str
    protected: bool
    topic: str | None
    partition: int | None
    topic_id: Uuid | None
    pm: PmState
    mtime_ms: int
    live: bool
    story: str


@dataclass(frozen=True, slots=True)
class Scenario:
    spec: s.ClusterSpec
    now_ms: int
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerPlan, ...]
    metadata_dir: LogDirPlan
    log: ControllerLog
    snapshot: Snapshot | None
    dirs: tuple[DirPlan, ...]
    topics: dict[str, Uuid]
    skipped: tuple[str, ...]


_PICKING = (c.NOT_A_REPLICA, c.ABANDONED_FUTURE, c.WRONG_LOG_DIR, c.DUPLICATE_REPLICA, c.PENDING_DELETE,
            c.FUTURE_IN_PROGRESS, c.MISSING_PARTITION_METADATA, c.CORRUPT_PARTITION_METADATA)
"""Stories that each take one fresh regular partition."""


def slot(i: int, count: int, window_ms: int, step_ms: int) -> int:
    """Offset of case ``i`` of ``count`` spread over ``window_ms``, at most ``step_ms`` apart."""
    return i * max(1, min(step_ms, window_ms // max(count, 1)))


def random_uuid(rng: random.Random) -> Uuid:
    """Like ``Uuid.randomUuid``/``DirectoryId.random``: never reserved, never a leading ``-``."""
    while True:
        u = Uuid(rng.getrandbits(64), rng.getrandbits(64))
        if not u.is_reserved_directory_id and not str(u).startswith("-"):
            return u


def _regular_name(i: int) -> str:
    prefix = REGULAR_PREFIXES[i % len(REGULAR_PREFIXES)]
    return prefix if i < len(REGULAR_PREFIXES) else f"{prefix}.{i // len(REGULAR_PREFIXES)}"


@dataclass
class _Builder:
    spec: s.ClusterSpec
    now: int
    rng: random.Random
    log: ControllerLog = field(default_factory=ControllerLog)
    broker_ids: tuple[int, ...] = ()
    dir_ids: dict[int, tuple[Uuid, ...]] = field(default_factory=dict)
    epochs: dict[int, int] = field(default_factory=dict)
    placement: dict[tuple[int, Uuid, int], int] = field(default_factory=dict)
    counters: dict[int, int] = field(default_factory=dict)
    overrides: dict[tuple[int, Uuid, int], tuple[str, PmState, str]] = field(default_factory=dict)
    extra: list[DirPlan] = field(default_factory=list)
    used: set[tuple[Uuid, int]] = field(default_factory=set)
    regular: list[tuple[str, Uuid]] = field(default_factory=list)
    snapshot: Snapshot | None = None
    skipped: list[str] = field(default_factory=list)

    # -- helpers ------------------------------------------------------------------------------
    @property
    def down(self) -> int:
        return self.broker_ids[-1]

    def uid(self) -> Uuid:
        return random_uuid(self.rng)

    def unique_hex(self) -> str:
        return f"{self.rng.getrandbits(128):032x}"

    def place(self, broker: int, topic_id: Uuid, partition: int, index: int | None = None) -> int:
        """Choose (round robin) or force the log dir index that physically holds a replica."""
        if index is None:
            index = self.counters.get(broker, 0) % self.spec.jbod_dirs
            self.counters[broker] = self.counters.get(broker, 0) + 1
        self.placement[(broker, topic_id, partition)] = index
        return index

    def dir_of(self, broker: int, topic_id: Uuid, partition: int) -> Uuid:
        return self.dir_ids[broker][self.placement[(broker, topic_id, partition)]]

    def create_topic(self, name: str, partitions: int, rf: int, ts: int, *, exclude: tuple[int, ...] = (),
                     include: int | None = None, start: int | None = None) -> Uuid:
        topic_id = self.uid()
        candidates = [b for b in self.broker_ids if b not in exclude]
        rf = max(1, min(rf, len(candidates)))
        first = self.rng.randrange(len(candidates)) if start is None else start
        recs = [Rec("TopicRecord", 0, {"name": name, "topic_id": topic_id})]
        for p in range(partitions):
            replicas = [candidates[(first + p + j) % len(candidates)] for j in range(rf)]
            if include is not None and include not in replicas:
                replicas[-1] = include
            dirs = []
            for b in replicas:
                self.place(b, topic_id, p)
                dirs.append(self.dir_of(b, topic_id, p))
            recs.append(Rec("PartitionRecord", PARTITION_RECORD_VERSION, {
                "partition_id": p, "topic_id": topic_id, "replicas": tuple(replicas), "isr": tuple(replicas),
                "removing_replicas": (), "adding_replicas": (), "leader": replicas[0], "leader_epoch": 0,
                "partition_epoch": 0, "directories": tuple(dirs)}))
        self.log.append(recs, ts)
        return topic_id

    def change(self, topic_id: Uuid, partition: int, ts: int, **fields: Any) -> None:
        self.log.append([Rec("PartitionChangeRecord", PARTITION_CHANGE_VERSION,
                             {"partition_id": partition, "topic_id": topic_id, **fields})], ts)

    def pick(self, need_outsider: bool = False) -> tuple[str, Uuid, int, int, list[int]] | None:
        """A fresh regular partition with a live (not down) replica; returns (topic, id, p, that replica, replicas)."""
        starts = list(itertools.accumulate((len(self.log.topics[t].partitions) for _, t in self.regular), initial=0))
        total = starts[-1]
        for attempt in range(200):
            if not total:
                break
            k = self.rng.randrange(total)
            i = bisect.bisect_right(starts, k) - 1
            name, topic_id = self.regular[i]
            p = k - starts[i]
            if (topic_id, p) in self.used:
                continue
            replicas = list(self.log.partition(topic_id, p)["replicas"])
            live = [b for b in replicas if b != self.down]
            outsiders = [b for b in self.broker_ids if b not in replicas and b != self.down]
            if not live or (need_outsider and not outsiders) or (attempt < 100 and self.down in replicas):
                continue
            self.used.add((topic_id, p))
            return name, topic_id, p, self.rng.choice(live), replicas
        return None

    def add_dir(self, broker: int, index: int, name: str, cls: str, topic: str | None, partition: int | None,
                topic_id: Uuid | None, mtime: int, story: str, *, pm: PmState = "ok", live: bool = False) -> None:
        protected = c.is_protected(topic, topic_id)
        self.extra.append(DirPlan(broker, index, name, cls, protected, topic, partition, topic_id, pm, mtime, live,
                                  story))

    def other_index(self, index: int) -> int:
        return (index + 1) % self.spec.jbod_dirs


    # -- the story ----------------------------------------------------------------------------
    def bootstrap(self, t0: int, controller_id: int) -> None:
        self.log.append_control(Rec("LEADER_CHANGE", 0, {
            "version": 0, "leader_id": controller_id, "voters": ({"voter_id": controller_id},),
            "granting_voters": ({"voter_id": controller_id},)}, control=True), t0)
        self.log.append([Rec("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": METADATA_VERSION})],
                        t0)
        self.log.append([Rec("RegisterControllerRecord", 0, {
            "controller_id": controller_id, "incarnation_id": self.uid(), "zk_migration_ready": False,
            "end_points": ({"name": "CONTROLLER", "host": f"kafka-{controller_id}.sim", "port": 9093,
                            "security_protocol": 0},),
            "features": ({"name": "metadata.version", "min_supported_version": 1,
                          "max_supported_version": METADATA_VERSION},)})], t0 + MINUTE_MS)
        for i, b in enumerate(self.broker_ids):
            self.register(b, t0 + 2 * MINUTE_MS + i * 5000)
        self.log.append([Rec("ConfigRecord", 0, {
            "resource_type": CONFIG_BROKER, "resource_name": "", "name": "log.segment.delete.delay.ms",
            "value": str(self.spec.file_delete_delay_ms)})], t0 + HOUR_MS)

    def register(self, broker: int, ts: int) -> None:
        epoch = self.log.next_offset  # Kafka's broker epoch is the offset of the registration record
        self.epochs[broker] = epoch
        self.log.append([Rec("RegisterBrokerRecord", REGISTER_BROKER_VERSION, {
            "broker_id": broker, "is_migrating_zk_broker": False, "incarnation_id": self.uid(), "broker_epoch": epoch,
            "end_points": ({"name": "PLAINTEXT", "host": f"kafka-{broker}.sim", "port": 9092,
                            "security_protocol": 0},),
            "features": ({"name": "metadata.version", "min_supported_version": 1,
                          "max_supported_version": METADATA_VERSION},),
            "rack": None, "fenced": True, "in_controlled_shutdown": False, "log_dirs": self.dir_ids[broker]})], ts)
        self.broker_change(broker, ts + 2000, fenced=-1)

    def broker_change(self, broker: int, ts: int, **fields: Any) -> None:
        self.log.append([Rec("BrokerRegistrationChangeRecord", BROKER_CHANGE_VERSION, {
            "broker_id": broker, "broker_epoch": self.epochs[broker], **fields})], ts)


def _corrupt_pm_story() -> str:
    return "partition.metadata holds a dashed UUID (Kafka's Uuid.fromString rejects it)"


def build_scenario(spec: s.ClusterSpec, now_ms: int | None = None) -> Scenario:
    """Plan the whole cluster. ``now_ms`` overrides ``spec.now_ms``; one of them must be set."""
    now = now_ms if now_ms is not None else spec.now_ms
    if now is None:
        raise ValueError("build_scenario needs now_ms (or spec.now_ms)")
    rng = random.Random(spec.seed)
    b = _Builder(spec, now, rng)
    b.broker_ids = tuple(range(1, spec.brokers + 1))
    b.dir_ids = {bid: tuple(b.uid() for _ in range(spec.jbod_dirs)) for bid in b.broker_ids}
    cluster_id = str(b.uid())
    controller_id = spec.brokers + 1 if spec.separate_controller else 1
    metadata_dir = (LogDirPlan(controller_id, 0, b.uid()) if spec.separate_controller
                    else LogDirPlan(1, 0, b.dir_ids[1][0]))
    t0 = now - spec.history_days * DAY_MS
    b.bootstrap(t0, controller_id)
    rf = spec.effective_replication
    n = spec.count
    topics: dict[str, Uuid] = {}

    # -- creations ------------------------------------------------------------------------------
    if spec.internal_partitions:
        tid = b.create_topic(CONSUMER_OFFSETS, spec.internal_partitions, min(3, spec.brokers), t0 + 90 * MINUTE_MS)
        b.log.append([Rec("ConfigRecord", 0, {"resource_type": CONFIG_TOPIC, "resource_name": CONSUMER_OFFSETS,
                                              "name": "cleanup.policy", "value": "compact"})], t0 + 91 * MINUTE_MS)
        topics[CONSUMER_OFFSETS] = tid
    down = b.down
    story_topics = {
        "retired.audit-log": n(c.DELETED_TOPIC),
        "retired.payments-v1": n(c.STUCK_DELETE),
        "clickstream": n(c.RECREATED_TOPIC),
        "tmp.migration-test": n(c.STRAY),
    }
    first_story = t0 + 2 * HOUR_MS
    ids: dict[str, Uuid] = {}
    for i, (name, count) in enumerate(story_topics.items()):
        if count:
            ids[name] = b.create_topic(name, count, rf, first_story + i * MINUTE_MS,
                                       include=down if name in ("retired.audit-log", "clickstream") else None)
    k_flight = n(s.REASSIGNMENT_IN_FLIGHT)
    flight_id = None
    if k_flight and spec.brokers >= 3:
        flight_id = b.create_topic("orders.rebalancing", k_flight, min(rf, spec.brokers - 2),
                                   first_story + 5 * MINUTE_MS, exclude=(down,))
        topics["orders.rebalancing"] = flight_id
    elif k_flight:
        b.skipped.append(s.REASSIGNMENT_IN_FLIGHT)
    k_oor = n(c.PARTITION_OUT_OF_RANGE)
    if k_oor:
        ids["inventory.snapshots"] = b.create_topic("inventory.snapshots", 2, rf, first_story + 10 * MINUTE_MS)
    last_create = now - 8 * DAY_MS - HOUR_MS
    span = max(1, last_create - (first_story + HOUR_MS))
    for i in range(spec.topics):
        name = _regular_name(i)
        ts = first_story + HOUR_MS + (span * i) // max(1, spec.topics)
        tid = b.create_topic(name, spec.partitions_per_topic, rf, ts, start=i % spec.brokers)
        b.regular.append((name, tid))
        topics[name] = tid

    needed = sum(n(a) for a in _PICKING)
    if needed and spec.topics * spec.partitions_per_topic < 2 * needed:
        name = "ops.replay-buffer"  # too few regular partitions to host every story: add a topic for them
        tid = b.create_topic(name, 2 * needed, rf, last_create + MINUTE_MS)
        b.regular.append((name, tid))
        topics[name] = tid

    # The snapshot comes before every anomaly, so the tail log shows each one's event and timestamp.
    if spec.snapshot:
        b.snapshot = b.log.snapshot()

    # -- 8 days ago: scratch topic deleted while a broker restarted -> -stray on that broker ------
    if "tmp.migration-test" in ids:
        tid = ids["tmp.migration-test"]
        parts = b.log.topics[tid].partitions
        b.log.append([Rec("RemoveTopicRecord", 0, {"topic_id": tid})], now - 8 * DAY_MS)
        for p, reg in sorted(parts.items()):
            holder = next((r for r in reg["replicas"] if r != down), reg["replicas"][0])
            b.add_dir(holder, b.placement[(holder, tid, p)], f"tmp.migration-test-{p}.{b.unique_hex()}-stray",
                      c.STRAY, "tmp.migration-test", p, tid, now - 8 * DAY_MS + 20 * MINUTE_MS,
                      "topic deleted while this broker restarted; Kafka 3.7.1+ renamed its log -stray")

    # -- 6 days ago: the down broker crashes -------------------------------------------------------
    if any(spec.anomalies.values()):
        b.broker_change(down, now - 6 * DAY_MS, fenced=1)

    # -- 5 days ago: topic deletions ---------------------------------------------------------------
    t_del = now - 5 * DAY_MS
    if "retired.audit-log" in ids:
        tid = ids["retired.audit-log"]
        for p in sorted(b.log.topics[tid].partitions):
            b.add_dir(down, b.placement[(down, tid, p)], f"retired.audit-log-{p}", c.DELETED_TOPIC,
                      "retired.audit-log", p, tid, now - 6 * DAY_MS, "topic deleted while this broker was down",
                      live=True)
        b.log.append([Rec("RemoveTopicRecord", 0, {"topic_id": tid})], t_del)
    if "retired.payments-v1" in ids:
        tid = ids["retired.payments-v1"]
        parts = dict(b.log.topics[tid].partitions)
        b.log.append([Rec("RemoveTopicRecord", 0, {"topic_id": tid})], t_del + MINUTE_MS)
        for p, reg in sorted(parts.items()):
            holder = next((r for r in reg["replicas"] if r != down), reg["replicas"][0])
            b.add_dir(holder, b.placement[(holder, tid, p)], f"retired.payments-v1-{p}.{b.unique_hex()}-delete",
                      c.STUCK_DELETE, "retired.payments-v1", p, tid, t_del + MINUTE_MS,
                      "renamed -delete at topic deletion; the delete never happened")

    # -- 4 days ago: deleted and recreated under the same name -------------------------------------
    if "clickstream" in ids:
        old = ids["clickstream"]
        for p in sorted(b.log.topics[old].partitions):
            b.add_dir(down, b.placement[(down, old, p)], f"clickstream-{p}", c.RECREATED_TOPIC, "clickstream", p,
                      old, now - 6 * DAY_MS, "topic recreated under the same name while this broker was down",
                      live=True)
        t_re = now - 4 * DAY_MS
        b.log.append([Rec("RemoveTopicRecord", 0, {"topic_id": old})], t_re)
        topics["clickstream"] = b.create_topic("clickstream", n(c.RECREATED_TOPIC), rf, t_re + 2 * MINUTE_MS,
                                               exclude=(down,))
    if "inventory.snapshots" in ids:
        tid = ids["inventory.snapshots"]
        topics["inventory.snapshots"] = tid
        holder = _live_holder(b, tid)
        for j in range(k_oor):
            p = 2 + j
            b.add_dir(holder, b.place(holder, tid, p), f"inventory.snapshots-{p}", c.PARTITION_OUT_OF_RANGE,
                      "inventory.snapshots", p, tid, now - 7 * DAY_MS,
                      "partition index beyond the topic's partition count", live=True)

    # -- 3 days ago: reassignments away from a live broker -----------------------------------------
    _reassign_away(b, c.NOT_A_REPLICA, now - 3 * DAY_MS)
    _reassign_away(b, c.ABANDONED_FUTURE, now - 3 * DAY_MS + 3 * HOUR_MS)

    # -- 2 days ago: JBOD ----------------------------------------------------------------------------
    for i in range(n(c.WRONG_LOG_DIR)):
        got = b.pick()
        if got is None:
            b.skipped.append(c.WRONG_LOG_DIR)
            continue
        name, tid, p, x, replicas = got
        old_index = b.placement[(x, tid, p)]
        b.place(x, tid, p, b.other_index(old_index))
        dirs = tuple(b.dir_of(r, tid, p) for r in replicas)
        b.change(tid, p, now - 2 * DAY_MS + slot(i, n(c.WRONG_LOG_DIR), HOUR_MS, MINUTE_MS), directories=dirs)
        b.add_dir(x, old_index, f"{name}-{p}", c.WRONG_LOG_DIR, name, p, tid, now - 2 * DAY_MS,
                  "alter-log-dirs finished; the old copy in the previous dir stayed", live=True)
    for i in range(n(c.DUPLICATE_REPLICA)):
        got = b.pick()
        if got is None:
            b.skipped.append(c.DUPLICATE_REPLICA)
            continue
        name, tid, p, x, replicas = got
        index = b.placement[(x, tid, p)]
        dirs = tuple(UNASSIGNED if r == x else b.dir_of(r, tid, p) for r in replicas)
        b.change(tid, p, now - 2 * DAY_MS + HOUR_MS + slot(i, n(c.DUPLICATE_REPLICA), HOUR_MS, MINUTE_MS),
                 directories=dirs)
        b.overrides[(x, tid, p)] = (c.DUPLICATE_REPLICA, "ok", "two live copies; the controller has no directory")
        b.add_dir(x, b.other_index(index), f"{name}-{p}", c.DUPLICATE_REPLICA, name, p, tid, now - 2 * DAY_MS,
                  "two live copies; the controller has no directory", live=True)

    # -- the last hour -------------------------------------------------------------------------------
    _reassign_away(b, c.PENDING_DELETE, now - 3 * HOUR_MS)
    _in_flight(b, flight_id, now - 30 * MINUTE_MS)
    for _ in range(n(c.FUTURE_IN_PROGRESS)):
        got = b.pick()
        if got is None:
            b.skipped.append(c.FUTURE_IN_PROGRESS)
            continue
        name, tid, p, x, _ = got
        b.add_dir(x, b.other_index(b.placement[(x, tid, p)]), f"{name}-{p}.{b.unique_hex()}-future",
                  c.FUTURE_IN_PROGRESS, name, p, tid, now - 20 * MINUTE_MS, "alter-log-dirs copy in progress")

    # -- independent of the log ------------------------------------------------------------------------
    for cls, pm, story in ((c.MISSING_PARTITION_METADATA, "missing", "partition.metadata lost"),
                           (c.CORRUPT_PARTITION_METADATA, "corrupt", _corrupt_pm_story())):
        for _ in range(n(cls)):
            got = b.pick()
            if got is None:
                b.skipped.append(cls)
                continue
            _, tid, p, x, _ = got
            b.overrides[(x, tid, p)] = (cls, pm, story)
    for i in range(n(c.UNPARSEABLE_DIR)):
        broker = b.broker_ids[i % len(b.broker_ids)]
        name = UNPARSEABLE_NAMES[i % len(UNPARSEABLE_NAMES)] + ("" if i < len(UNPARSEABLE_NAMES) else f"{i}")
        b.add_dir(broker, i % spec.jbod_dirs, name, c.UNPARSEABLE_DIR, None, None, None, now - 10 * DAY_MS,
                  "not a partition directory name; Kafka refuses to start", pm="none")

    dirs = _live_dirs(b, spec) + b.extra
    if not spec.separate_controller:
        dirs.append(DirPlan(1, 0, METADATA_DIR_NAME, c.METADATA_LOG, True, "__cluster_metadata", 0,
                            METADATA_TOPIC_ID, "ok", now, False, "KRaft metadata log (combined mode)"))
    brokers = tuple(
        BrokerPlan(bid, tuple(LogDirPlan(bid, i, d) for i, d in enumerate(b.dir_ids[bid])), b.epochs[bid],
                   b.log.brokers[bid]["incarnation_id"], bid == down and bool(any(spec.anomalies.values())))
        for bid in b.broker_ids
    )
    for name, tid in ids.items():
        if tid in b.log.topics:
            topics.setdefault(name, tid)
    return Scenario(spec, now, cluster_id, controller_id, brokers, metadata_dir, b.log, b.snapshot,
                    tuple(sorted(dirs, key=lambda d: (d.broker_id, d.log_dir, d.name))), topics,
                    tuple(dict.fromkeys([*spec.skipped(), *b.skipped])))


def _live_holder(b: _Builder, topic_id: Uuid) -> int:
    """A live broker to hold a topic's extra dirs: its first live replica (partition order), else any live broker.

    With replication 1 every replica of the topic can be on the down broker; anomalies need >= 2 brokers
    (``ClusterSpec``), so a live broker always exists.
    """
    parts = b.log.topics[topic_id].partitions
    live = [r for p in sorted(parts) for r in parts[p]["replicas"] if r != b.down]
    return (live or [x for x in b.broker_ids if x != b.down])[0]


def _target_without(b: _Builder, replicas: list[int], leaving: int) -> list[int]:
    outsiders = [x for x in b.broker_ids if x not in replicas and x != b.down]
    target = [r for r in replicas if r != leaving]
    if outsiders:
        target.append(b.rng.choice(outsiders))
    return target


def _reassign_away(b: _Builder, cls: str, ts: int) -> None:
    """Move a replica off broker X (start + completion); X keeps a live copy, a -future copy, or a -delete dir.

    The cases are spread over two hours from ``ts``; each completes half a slot after it started.
    """
    count = b.spec.count(cls)
    step = max(2, min(15 * MINUTE_MS, 2 * HOUR_MS // max(count, 1)))
    for i in range(count):
        got = b.pick()
        if got is None:
            b.skipped.append(cls)
            continue
        name, tid, p, x, replicas = got
        target = _target_without(b, replicas, x)
        if not target:
            b.skipped.append(cls)
            continue
        t = ts + i * step
        added = [r for r in target if r not in replicas]
        for r in added:
            b.place(r, tid, p)
        full = [*target, x]
        # a new replica gets the broker's only dir, or UNASSIGNED when it has several (ClusterControlManager.defaultDir)
        b.change(tid, p, t, replicas=tuple(full), adding_replicas=tuple(added), removing_replicas=(x,),
                 directories=tuple(UNASSIGNED if r in added and b.spec.jbod_dirs > 1 else b.dir_of(r, tid, p)
                                   for r in full))
        old_index = b.placement[(x, tid, p)]
        reg = b.log.partition(tid, p)
        fields: dict[str, Any] = {
            "replicas": tuple(target), "isr": tuple(target), "adding_replicas": (), "removing_replicas": (),
            "directories": tuple(b.dir_of(r, tid, p) for r in target),
        }
        if reg["leader"] not in target:
            fields["leader"] = target[0]
        b.change(tid, p, t + step // 2, **fields)
        del b.placement[(x, tid, p)]
        if cls == c.NOT_A_REPLICA:
            b.add_dir(x, old_index, f"{name}-{p}", cls, name, p, tid, t, "reassigned away; the copy stayed",
                      live=True)
        elif cls == c.ABANDONED_FUTURE:
            b.add_dir(x, b.other_index(old_index), f"{name}-{p}.{b.unique_hex()}-future", cls, name, p, tid, t,
                      "an alter-log-dirs copy of a replica that was then reassigned away")
        else:
            b.add_dir(x, old_index, f"{name}-{p}.{b.unique_hex()}-delete", cls, name, p, tid, t + step // 2,
                      "reassigned away; Kafka renamed it -delete and will remove it after file.delete.delay.ms")


def _in_flight(b: _Builder, topic_id: Uuid | None, ts: int) -> None:
    """Start (and do not finish) a reassignment of each partition of ``topic_id``; the adding broker already holds
    a copy, which is ``ok``. The topic has replication <= brokers - 2 and avoids the down broker, so a live broker
    outside every replica set exists."""
    if topic_id is None:
        return
    parts = b.log.topics[topic_id].partitions
    for i, p in enumerate(sorted(parts)):
        replicas = list(parts[p]["replicas"])
        leaving = replicas[-1]
        z = b.rng.choice([x for x in b.broker_ids if x not in replicas and x != b.down])
        b.place(z, topic_id, p)
        full = [*[r for r in replicas if r != leaving], z, leaving]
        z_dir = b.dir_of(z, topic_id, p) if b.spec.jbod_dirs == 1 else UNASSIGNED
        b.change(topic_id, p, ts + slot(i, len(parts), 20 * MINUTE_MS, MINUTE_MS), replicas=tuple(full),
                 adding_replicas=(z,), removing_replicas=(leaving,),
                 directories=tuple(z_dir if r == z else b.dir_of(r, topic_id, p) for r in full))


def _live_dirs(b: _Builder, spec: s.ClusterSpec) -> list[DirPlan]:
    """A dir for every replica (adding replicas included) of every topic in the final image, where it physically is."""
    out: list[DirPlan] = []
    mtime = b.now - 10 * MINUTE_MS
    for topic in b.log.topics.values():
        protected = c.is_protected(topic.name, topic.topic_id)
        for p, reg in topic.partitions.items():
            for r in reg["replicas"]:
                if r not in b.dir_ids:
                    continue
                cls, pm, story = b.overrides.get((r, topic.topic_id, p), (c.OK, "ok", "live replica"))
                index = b.placement[(r, topic.topic_id, p)]
                out.append(DirPlan(r, index, f"{topic.name}-{p}", cls, protected, topic.name, p, topic.topic_id, pm,
                                   mtime, True, story))
    return out
